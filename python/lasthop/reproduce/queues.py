"""queues: the AP queue disciplines and airtime fairness that every mechanism is compared with.

- latency under load: one bulk CUBIC download over an 802.11n link (HT 40 MHz, MCS 7, 2 streams)
  with a sparse probe flow to the same station, behind FIFO-1000, PIE, CoDel and FQ-CoDel with
  airtime-fair scheduling (the mac80211 configuration studied by Høiland-Jørgensen et al.,
  "Ending the Anomaly", USENIX ATC 2017);
- the rate anomaly (Heusse et al., INFOCOM 2003): two fast stations and one slow one, saturated
  downlink, round-robin vs airtime-fair scheduling.

The probe is a 100 kb/s stream of 100-byte UDP packets; its delay is one-way (server → station,
5 ms of it on the wired path). AQL is not modelled: frames leave the station queues only when
an aggregate is built, so there is no separate hardware queue for it to bound.
"""
from __future__ import annotations

from .framework import Claim, ClaimResult, Figure, SuiteRun, SweepDef

NAME = "queues"
TITLE = "AP queue management and airtime fairness"
SOURCE = ("baselines: FIFO (txqueuelen 1000), CoDel (RFC 8289), PIE (RFC 8033), FQ-CoDel (RFC 8290), "
          "mac80211 airtime fairness (Høiland-Jørgensen et al., USENIX ATC 2017); rate anomaly "
          "(Heusse et al., INFOCOM 2003)")
DESCRIPTION = ("Latency under load: HT 40 MHz MCS 7 ×2 (270 Mb/s), 10 ms base RTT, one CUBIC download and a "
               "sparse 100-byte UDP probe to the same station, airtime-fair scheduling. Rate anomaly: VHT "
               "80 MHz, two stations at MCS 9 ×2 and one at MCS 0 ×1, saturated downlink to each.")

QDISCS = ["fifo", "pie", "codel", "fq_codel"]


def sweeps(quick: bool) -> list[SweepDef]:
    return [
        SweepDef("latency", {
            "name": "queues-latency",
            "sim": {"duration": "15s", "warmup": "3s", "seed": 1, "bin": "100ms"},
            "phy": {"standard": "ht", "band": "5GHz", "channel_width": 40, "guard_interval": 800},
            "mac": {"aggregation": True, "max_ampdu_mpdus": 64, "max_ampdu_bytes": 65535},
            "ap": {"qdisc": "fifo", "scheduler": "airtime"},
            "wired": {"rate": "10Gbps", "delay": "5ms"},
            "stations": [{"count": 1, "mcs": 7, "nss": 2}],
            "flows": [{"stations": 0, "direction": "down", "pattern": "tcp", "cc": "cubic"},
                      {"stations": 0, "direction": "down", "pattern": "cbr", "rate": "100kbps",
                       "packet_size": 100}],
        }, [("ap.qdisc", QDISCS)], seeds=3, quick_seeds=1, quick={"sim": {"duration": "8s"}}),
        SweepDef("anomaly", {
            "name": "queues-anomaly",
            "sim": {"duration": "6s", "warmup": "1s", "seed": 1, "bin": "100ms"},
            "phy": {"standard": "vht", "band": "5GHz", "channel_width": 80, "guard_interval": 800},
            "mac": {"aggregation": True, "max_ampdu_mpdus": 64, "beacon_interval": "102.4ms"},
            "stations": [{"count": 2, "mcs": 9, "nss": 2}, {"count": 1, "mcs": 0, "nss": 1}],
            "flows": [{"stations": "all", "direction": "down", "pattern": "saturated"}],
        }, [("ap.scheduler", ["round_robin", "airtime"])], seeds=3, quick_seeds=1,
            quick={"sim": {"duration": "3s"}}),
    ]


def _probe(run: SuiteRun):
    """Per qdisc: mean over seeds of the probe's p50 and p95 one-way delay (ms), and of the
    bulk flow's goodput (Mb/s)."""
    p50 = run.by_point("latency", "delay_p50_ms", ["ap.qdisc"], flows="first", where=lambda r: r["flow"] == 1)
    p95 = run.by_point("latency", "delay_p95_ms", ["ap.qdisc"], flows="first", where=lambda r: r["flow"] == 1)
    gp = run.by_point("latency", "goodput_bps", ["ap.qdisc"], flows="first", where=lambda r: r["flow"] == 0)
    return {q: (p50[(q,)][0], p95[(q,)][0], gp[(q,)][0] / 1e6) for q in QDISCS}


def _check_ranking(run: SuiteRun) -> ClaimResult:
    v = _probe(run)
    d = {q: v[q][0] for q in QDISCS}
    ok = d["fifo"] > 2 * d["pie"] and d["pie"] > d["codel"] and d["codel"] >= 0.8 * d["fq_codel"]
    txt = ", ".join(f"{q} {d[q]:.1f}" for q in QDISCS)
    return ClaimResult(f"probe p50 ms: {txt}", ok, "" if ok else "ranking differs", {"p50_ms": d})


def _check_fq(run: SuiteRun) -> ClaimResult:
    v = _probe(run)
    fq, fifo = v["fq_codel"], v["fifo"]
    ratio = fifo[1] / fq[1]
    ok = fq[1] < 30.0 and ratio >= 4.0
    return ClaimResult(f"FQ-CoDel probe p95 {fq[1]:.1f} ms vs FIFO {fifo[1]:.1f} ms ({ratio:.1f}× lower); "
                       f"bulk {fq[2]:.0f} vs {fifo[2]:.0f} Mb/s", ok,
                       "" if ok else ("a one-way probe on a 270 Mb/s link: FIFO-1000 adds ~45 ms here, not the "
                                      "hundreds of ms of a slower link, so the ratio is smaller than published"),
                       {"fq": fq, "fifo": fifo})


def _anomaly(run: SuiteRun):
    out = {}
    for sched in ("round_robin", "airtime"):
        rows = [r for r in run.rows("anomaly") if r["ap.scheduler"] == sched]
        seeds = sorted({r["seed"] for r in rows})
        per = {}
        for r in rows:
            per.setdefault(r["station"], []).append((r["goodput_bps"], r["airtime_frac"]))
        out[sched] = {s: (sum(g for g, _ in v) / len(seeds) / 1e6, sum(a for _, a in v) / len(seeds))
                      for s, v in sorted(per.items())}
    return out


def _check_anomaly(run: SuiteRun) -> ClaimResult:
    a = _anomaly(run)
    tot = {k: sum(g for g, _ in v.values()) for k, v in a.items()}
    shares = [x for _, x in a["airtime"].values()]
    equal = max(shares) / max(min(shares), 1e-9) < 1.25
    ok = tot["airtime"] > tot["round_robin"] and equal
    txt = "; ".join(f"{k}: " + ", ".join(f"sta{s} {g:.0f} Mb/s/{x * 100:.0f}%" for s, (g, x) in v.items())
                    for k, v in a.items())
    return ClaimResult(f"total {tot['round_robin']:.0f} → {tot['airtime']:.0f} Mb/s ({txt})", ok,
                       "" if ok else "airtime shares not equal or total not higher", {"per_station": a})


def claims() -> list[Claim]:
    return [
        Claim("Q1", "Latency under one bulk CUBIC flow over 802.11n, by AP queue discipline",
              "FIFO-1000 ≫ PIE > CoDel ≳ FQ-CoDel (queue issue)",
              "probe p50: FIFO > 2× PIE; PIE > CoDel; CoDel ≥ 0.8× FQ-CoDel", _check_ranking),
        Claim("Q2", "FQ-CoDel + airtime fairness: delay of a competing sparse flow",
              "within a few tens of ms; order of magnitude below FIFO (mac80211 result)",
              "p95 < 30 ms and ≥ 4× below FIFO-1000", _check_fq),
        Claim("Q3", "Rate anomaly, two fast + one slow station: airtime-fair vs round-robin",
              "total throughput up; equal airtime (Høiland-Jørgensen et al.)",
              "total higher; airtime shares within 25% of each other", _check_anomaly),
    ]


def figures(run: SuiteRun) -> list[Figure]:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    out = []
    v = _probe(run)
    fig, ax = plt.subplots(figsize=(6.4, 4.0))
    x = range(len(QDISCS))
    ax.bar([i - 0.2 for i in x], [v[q][0] for q in QDISCS], width=0.4, color="#0072B2", label="probe p50")
    ax.bar([i + 0.2 for i in x], [v[q][1] for q in QDISCS], width=0.4, color="#D55E00", label="probe p95")
    names = {"fifo": "FIFO-1000", "pie": "PIE", "codel": "CoDel", "fq_codel": "FQ-CoDel"}
    ax.set_xticks(list(x), [names[q] for q in QDISCS])
    ax.set_ylabel("one-way delay (ms)")
    ax.set_title("Sparse flow beside a CUBIC download, 802.11n")
    ax.grid(alpha=0.3, axis="y")
    ax.legend()
    fig.tight_layout()
    out.append(Figure("Latency under load by queue discipline", "100-byte UDP probe at 100 kb/s to the station "
                      "receiving a CUBIC download; includes 5 ms of wired delay; mean over seeds.", fig))

    a = _anomaly(run)
    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(8.0, 3.6))
    stas = sorted(a["round_robin"])
    for i, (sched, color) in enumerate((("round_robin", "#999999"), ("airtime", "#009E73"))):
        xs = [s + (i - 0.5) * 0.4 for s in stas]
        ax1.bar(xs, [a[sched][s][0] for s in stas], width=0.4, color=color, label=sched.replace("_", "-"))
        ax2.bar(xs, [a[sched][s][1] * 100 for s in stas], width=0.4, color=color, label=sched.replace("_", "-"))
    labels = [f"sta{s}\n{'MCS 0' if s == stas[-1] else 'MCS 9 ×2'}" for s in stas]
    for ax, yl in ((ax1, "goodput (Mb/s)"), (ax2, "airtime (%)")):
        ax.set_xticks(stas, labels)
        ax.set_ylabel(yl)
        ax.grid(alpha=0.3, axis="y")
    ax1.legend()
    fig.suptitle("Rate anomaly: round-robin vs airtime fairness")
    fig.tight_layout()
    out.append(Figure("Per-station goodput and airtime", "Saturated downlink to two fast stations and one slow "
                      "one; airtime counts both directions of each station's exchanges.", fig))
    return out
