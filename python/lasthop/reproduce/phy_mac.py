"""phy-mac: validation of the 802.11 model against analytic results.

Three checks, each a sweep of the simulator compared with a closed-form or analytic model that
is written independently of it (`lasthop.analytic`):

1. one saturated downlink station with A-MPDUs of exactly N MPDUs vs the closed form
   AIFS + mean backoff + PPDU + SIFS + Block Ack;
2. legacy 802.11a DCF with n saturated stations vs Bianchi's model (IEEE JSAC 2000) with the
   standard's retry limit, with DIFS (Bianchi's own) and with EIFS after collisions;
3. an offered-load sweep of one 802.11ac station (80 MHz, MCS 9, NSS 2): the mean A-MPDU size
   rises monotonically to the 64-MPDU limit and the one-way delay has a knee there — the shape
   of Fig. 3 in Hassani, Gringoli, Leith, "Regulating Aggregation Level For Low Latency in
   802.11ac".
"""
from __future__ import annotations

from .. import analytic
from .framework import Check, Claim, ClaimResult, Figure, SuiteRun, SweepDef, fmt_pct

NAME = "phy-mac"
TITLE = "PHY/MAC model validation"
SOURCE = ("model validation: closed-form A-MPDU goodput; G. Bianchi, 'Performance analysis of the IEEE "
          "802.11 distributed coordination function', IEEE JSAC 18(3), 2000; Fig. 3 of Hassani et al., "
          "'Regulating Aggregation Level For Low Latency in 802.11ac'")
DESCRIPTION = ("Saturated UDP with 1500-byte IP packets, no channel errors, no beacons unless stated. "
               "Closed form: VHT 80 MHz MCS 9 NSS 2 (800 ns GI), A-MPDUs of exactly N MPDUs. Bianchi: "
               "802.11a at 54 Mb/s, n uplink stations, Ack at 24 Mb/s, retry limit 7. Offered load: "
               "VHT 80 MHz MCS 9 NSS 2, CBR downlink through a 10 Gb/s, 1 ms wired link, 1000-packet AP queue.")

N_MPDUS = [1, 8, 16, 32, 64]
N_STATIONS = [1, 5, 10, 20]
LOADS_MBPS = [50, 150, 250, 350, 450, 500, 540, 580, 600, 620, 640, 660, 700, 750]


def _cell(**over) -> dict:
    spec = {
        "sim": {"duration": "2s", "warmup": "0s", "seed": 1, "bin": "100ms"},
        "phy": {"standard": "vht", "band": "5GHz", "channel_width": 80, "guard_interval": 800},
        "mac": {"aggregation": True, "max_ampdu_mpdus": 64, "beacon_interval": "0s"},
        "stations": [{"count": 1, "mcs": 9, "nss": 2}],
        "flows": [{"stations": "all", "direction": "down", "pattern": "saturated"}],
    }
    for k, v in over.items():
        spec[k] = v
    return spec


def sweeps(quick: bool) -> list[SweepDef]:
    return [
        SweepDef("closed-form", {**_cell(), "name": "pm-closed-form"}, [("mac.max_ampdu_mpdus", N_MPDUS)],
                 seeds=5, quick_seeds=3, quick={"sim": {"duration": "1s"}}),
        SweepDef("bianchi", {
            "name": "pm-bianchi",
            "sim": {"duration": "10s", "warmup": "500ms", "seed": 1, "bin": "500ms"},
            "phy": {"standard": "ofdm", "band": "5GHz", "channel_width": 20, "guard_interval": 800},
            "mac": {"aggregation": False, "max_ampdu_mpdus": 1, "beacon_interval": "0s"},
            "stations": [{"count": 5, "mcs": 7, "nss": 1}],
            "flows": [{"stations": "all", "direction": "up", "pattern": "saturated"}],
        }, [("stations[0].count", N_STATIONS), ("mac.eifs_after_collision", [False, True])],
            seeds=10, quick_seeds=5, quick={"sim": {"duration": "3s"}}),
        SweepDef("offered-load", {
            **_cell(), "name": "pm-offered-load",
            "sim": {"duration": "3s", "warmup": "1s", "seed": 1, "bin": "100ms"},
            "wired": {"rate": "10Gbps", "delay": "1ms"},
            "flows": [{"stations": "all", "direction": "down", "pattern": "cbr", "rate": "100Mbps"}],
        }, [("flows[0].rate", [f"{r}Mbps" for r in LOADS_MBPS])],
            seeds=3, quick_seeds=3, quick={"sim": {"duration": "2s", "warmup": "500ms"}}),
    ]


# ----------------------------------------------------------------- claims
#
# The bands are the project's own (model validation: how close the simulator must come to a
# closed form it does not share code with); every quantity is measured once per seed and the
# verdict needs its 95 % CI over seeds inside the band. The closed forms themselves are exact.

def _closed_form_expected(n: int) -> float:
    txtime, _ = analytic.CONFIGS["vht80-mcs9-nss2"]
    return analytic.closed_form_goodput(txtime, n, 1500)


def _rel_checks(pts: dict, expected, label: str, tol: float) -> tuple[list[Check], dict, tuple]:
    """One check per point: the simulated goodput over the analytic one, minus 1, per seed."""
    checks, detail, worst = [], {}, None
    for key, seeds in pts:
        exp = expected(key)
        errs = [v / exp - 1 for v in seeds.values()]
        c = Check(f"{label}={key}: sim / model − 1", errs, lo=-tol, hi=tol, unit="%", scale=100)
        checks.append(c)
        detail[f"{label}={key}"] = {"sim_mbps": [v / 1e6 for v in seeds.values()], "model_mbps": exp / 1e6,
                                    "error": errs}
        if worst is None or abs(c.mean) > abs(worst[1]):
            worst = (key, c.mean, exp)
    return checks, detail, worst


def _check_closed_form(run: SuiteRun) -> ClaimResult:
    pts = sorted(((int(k[0]), v) for k, v in run.point_values("closed-form", "goodput_bps",
                                                               ["mac.max_ampdu_mpdus"]).items()))
    checks, detail, worst = _rel_checks(pts, _closed_form_expected, "N", 0.02)
    bad = [c.label.split(":")[0] for c in checks if c.status() == "out"]
    return ClaimResult(f"worst mean error {fmt_pct(worst[1])} at N={worst[0]} (closed form "
                       f"{worst[2] / 1e6:.1f} Mb/s)", checks,
                       f"at {', '.join(bad) or 'some N'} the simulated cycle differs from AIFS + mean backoff + "
                       "PPDU + SIFS + Block Ack by more than 2%: the MAC's timing departs from the standard's "
                       "durations the closed form adds up", detail)


def _check_bianchi(eifs: bool):
    def check(run: SuiteRun) -> ClaimResult:
        raw = run.point_values("bianchi", "goodput_bps", ["stations[0].count", "mac.eifs_after_collision"])
        pts = sorted((int(n), v) for (n, e), v in raw.items() if (str(e).lower() == "true") == eifs)
        checks, detail, worst = _rel_checks(pts, lambda n: analytic.bianchi(n, 1500, eifs=eifs)[0], "n", 0.03)
        bad = [c.label.split(":")[0] for c in checks if c.status() == "out"]
        return ClaimResult(f"worst mean error {fmt_pct(worst[1])} at n={worst[0]} (Bianchi "
                           f"{worst[2] / 1e6:.2f} Mb/s)", checks,
                           f"at {', '.join(bad) or 'some n'} the simulated DCF's saturation throughput is more "
                           "than 3% from Bianchi's: its collision resolution (backoff freezing, retry limit, "
                           f"{'EIFS' if eifs else 'DIFS'} after collisions) departs from the model's assumptions",
                           detail)
    return check


def _load_curves(run: SuiteRun):
    """Mean over seeds of the A-MPDU size and the median delay per offered load."""
    agg = run.by_point("offered-load", "mean_ampdu", ["flows[0].rate"], flows="first")
    p50 = run.by_point("offered-load", "delay_p50_ms", ["flows[0].rate"], flows="first")
    rates = sorted(k[0] for k in agg)
    return rates, [agg[(r,)][0] for r in rates], [p50[(r,)][0] for r in rates]


def _seed_curves(run: SuiteRun) -> tuple[list[float], dict[int, list[float]], dict[int, list[float]]]:
    """Per seed: the mean A-MPDU size and the median delay at each offered load (sorted)."""
    agg = run.point_values("offered-load", "mean_ampdu", ["flows[0].rate"], flows="first")
    p50 = run.point_values("offered-load", "delay_p50_ms", ["flows[0].rate"], flows="first")
    rates = sorted(k[0] for k in agg)
    seeds = sorted(set.intersection(*(set(agg[(r,)]) for r in rates)))
    return (rates, {s: [agg[(r,)][s] for r in rates] for s in seeds},
            {s: [p50[(r,)][s] for r in rates] for s in seeds})


def _check_monotone(run: SuiteRun) -> ClaimResult:
    rates, agg, _ = _seed_curves(run)
    steps = {s: min(a[i + 1] - a[i] for i in range(len(a) - 1)) for s, a in agg.items()}
    where = {s: rates[min(range(len(a) - 1), key=lambda i: a[i + 1] - a[i]) + 1] for s, a in agg.items()}
    top = {s: max(a) for s, a in agg.items()}
    checks = [Check("smallest step of the per-seed curve", list(steps.values()), lo=-0.5, unit=" MPDUs"),
              Check("largest mean A-MPDU of a seed", list(top.values()), lo=63.0, unit=" MPDUs")]
    worst = min(steps, key=steps.get)
    _, mean_agg, _ = _load_curves(run)
    return ClaimResult(f"{mean_agg[0]:.1f} → {max(mean_agg):.1f} MPDUs (mean over seeds); smallest step "
                       f"{steps[worst]:+.2f} MPDUs at {where[worst] / 1e6:.0f} Mb/s (seed {worst})", checks,
                       f"the A-MPDU size falls by {-steps[worst]:.1f} MPDUs at {where[worst] / 1e6:.0f} Mb/s "
                       f"(seed {worst}) or peaks at {min(top.values()):.1f} of 64: aggregation does not grow with "
                       "the backlog as an aggregate-what-is-queued scheduler should",
                       {"rates_mbps": [r / 1e6 for r in rates], "mean_ampdu": mean_agg,
                        "per_seed": {s: a for s, a in agg.items()}})


def _knee(rates: list[float], agg: list[float], p50: list[float]) -> tuple[float | None, float | None]:
    """(first load where the mean A-MPDU exceeds 56, first load where the median delay exceeds
    twice its value at the lowest load plus 1 ms)."""
    first56 = next((r for r, a in zip(rates, agg) if a > 56), None)
    knee = next((r for r, d in zip(rates, p50) if d > 2 * p50[0] + 1.0), None)
    return first56, knee


def _check_knee(run: SuiteRun) -> ClaimResult:
    rates, agg, p50 = _seed_curves(run)
    offs, found, per = [], [], {}
    for s in agg:
        first56, knee = _knee(rates, agg[s], p50[s])
        found.append(1.0 if first56 is not None and knee is not None else 0.0)
        if found[-1]:
            offs.append(knee / first56 - 1)
        per[s] = {"first56_mbps": first56 and first56 / 1e6, "knee_mbps": knee and knee / 1e6}
    checks = [Check("seeds with both a knee and aggregation > 56", found, lo=1.0, unit=" (fraction)"),
              Check("knee / load at aggregation > 56 − 1", offs, lo=-0.10, hi=0.10, unit="%", scale=100)]
    _, mean_agg, mean_p50 = _load_curves(run)
    m56, mknee = _knee(rates, mean_agg, mean_p50)
    value = (f"mean curves: knee at {mknee / 1e6:.0f} Mb/s, aggregation > 56 at {m56 / 1e6:.0f} Mb/s"
             if m56 and mknee else "no knee in the mean curves")
    return ClaimResult(value, checks, "the median-delay knee is not where aggregation saturates: "
                       + "; ".join(f"seed {s}: knee {v['knee_mbps']} Mb/s, > 56 at {v['first56_mbps']} Mb/s"
                                   for s, v in per.items()),
                       {"rates_mbps": [r / 1e6 for r in rates], "p50_ms": mean_p50, "mean_ampdu": mean_agg,
                        "per_seed": per})


CLASS = "model gap"  # a validation miss is a part of the MAC model that departs from the standard


def claims() -> list[Claim]:
    return [
        Claim("PM1", "Saturated one-station goodput vs the closed form, N = 1…64 MPDUs per A-MPDU",
              "closed form (lasthop.analytic)", "within ±2% for every N", _check_closed_form, CLASS,
              "project band: the closed form has no tolerance; ±2% allows for the finite run's backoff draws"),
        Claim("PM2", "802.11a DCF saturation throughput, n = 1, 5, 10, 20 stations, DIFS after collisions",
              "Bianchi's model, T_c = T_DATA + DIFS", "within ±3% for every n", _check_bianchi(False), CLASS,
              "project band: Bianchi's model is a mean-field approximation (independent collisions per "
              "attempt), known to be within a few per cent of the DCF; ±3%"),
        Claim("PM3", "Same, bystanders defer EIFS after collisions (mac.eifs_after_collision)",
              "Bianchi's model, T_c = T_DATA + EIFS", "within ±3% for every n", _check_bianchi(True), CLASS,
              "project band, as PM2"),
        Claim("PM4", "Mean A-MPDU size vs offered load (one VHT station)",
              "monotone up to the limit (aggctl paper, Fig. 3)",
              "per seed: smallest step ≥ −0.5 MPDUs; largest mean A-MPDU ≥ 63 of 64", _check_monotone, CLASS,
              "project band on the shape of Fig. 3 of the aggctl paper; −0.5 MPDUs absorbs the noise of a "
              "mean over one 2 s run"),
        Claim("PM5", "Delay knee coincides with aggregation reaching the limit",
              "knee where aggregation → 64 (aggctl paper, Fig. 3)",
              "per seed: median-delay knee within ±10% of the load where mean A-MPDU first exceeds 56",
              _check_knee, CLASS, "project band on the shape of Fig. 3 of the aggctl paper; the loads step by "
              "20–50 Mb/s near the knee, ±10% is about one step"),
    ]


# ----------------------------------------------------------------- figures

def figures(run: SuiteRun) -> list[Figure]:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    out = []
    # 1. goodput vs N with the closed form
    pts = run.by_point("closed-form", "goodput_bps", ["mac.max_ampdu_mpdus"])
    ns = sorted(int(k[0]) for k in pts)
    fig, ax = plt.subplots(figsize=(6.4, 4.0))
    fine = list(range(1, 65))
    ax.plot(fine, [_closed_form_expected(n) / 1e6 for n in fine], color="#555555", lw=1.2, label="closed form")
    ax.errorbar(ns, [pts[(n,)][0] / 1e6 for n in ns], yerr=[pts[(n,)][1] / 1e6 for n in ns],
                fmt="o", color="#0072B2", capsize=3, label="lasthop (mean, 95% CI)")
    ax.set_xlabel("MPDUs per A-MPDU")
    ax.set_ylabel("goodput (Mb/s)")
    ax.set_title("One saturated VHT station: goodput vs aggregation")
    ax.grid(alpha=0.3)
    ax.legend()
    fig.tight_layout()
    out.append(Figure("Goodput vs A-MPDU size", "VHT 80 MHz MCS 9 NSS 2, 1500-byte packets; line: AIFS + mean "
                      "backoff + PPDU + SIFS + Block Ack.", fig))

    # 2. Bianchi
    pts = run.by_point("bianchi", "goodput_bps", ["stations[0].count", "mac.eifs_after_collision"])
    fig, ax = plt.subplots(figsize=(6.4, 4.0))
    nfine = list(range(1, 31))
    for eifs, color, label in [(False, "#0072B2", "DIFS after collision"), (True, "#D55E00", "EIFS after collision")]:
        ax.plot(nfine, [analytic.bianchi(n, 1500, eifs=eifs)[0] / 1e6 for n in nfine], color=color, lw=1.2,
                label=f"Bianchi, {label}")
        keys = sorted((k for k in pts if (str(k[1]).lower() == "true") == eifs), key=lambda k: int(k[0]))
        ax.errorbar([int(k[0]) for k in keys], [pts[k][0] / 1e6 for k in keys], yerr=[pts[k][1] / 1e6 for k in keys],
                    fmt="o", color=color, capsize=3, label=f"lasthop, {label}")
    ax.set_xlabel("saturated stations n")
    ax.set_ylabel("aggregate throughput (Mb/s)")
    ax.set_title("802.11a DCF at 54 Mb/s: saturation throughput")
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    out.append(Figure("DCF saturation throughput vs Bianchi", "Lines: Bianchi's model with the retry limit; "
                      "points: simulation, mean and 95% CI across seeds.", fig))

    # 3. offered load (Fig. 3 shape)
    rates, agg, p50 = _load_curves(run)
    p95 = run.by_point("offered-load", "delay_p95_ms", ["flows[0].rate"], flows="first")
    fig, ax1 = plt.subplots(figsize=(6.4, 4.0))
    x = [r / 1e6 for r in rates]
    ax1.plot(x, agg, "o-", color="#0072B2", label="mean A-MPDU size")
    ax1.set_xlabel("offered load (Mb/s)")
    ax1.set_ylabel("MPDUs per A-MPDU", color="#0072B2")
    ax1.set_ylim(0, 70)
    ax2 = ax1.twinx()
    ax2.semilogy(x, p50, "s-", color="#D55E00", label="median delay")
    ax2.semilogy(x, [p95[(r,)][0] for r in rates], "^--", color="#D55E00", alpha=0.6, label="p95 delay")
    ax2.set_ylabel("one-way delay (ms)", color="#D55E00")
    ax1.grid(alpha=0.3)
    lines = ax1.get_legend_handles_labels()
    lines2 = ax2.get_legend_handles_labels()
    ax1.legend(lines[0] + lines2[0], lines[1] + lines2[1], loc="upper left", fontsize=8)
    ax1.set_title("One VHT station: aggregation and delay vs offered load")
    fig.tight_layout()
    out.append(Figure("Aggregation and delay vs offered load", "VHT 80 MHz MCS 9 NSS 2, CBR downlink via a 1 ms "
                      "wired link; compare Fig. 3 of the aggctl paper.", fig))
    return out
