"""tcp-baselines: TCP NewReno/CUBIC/BBR over the WiFi model, the behaviours every paper's
comparison depends on.

- CUBIC fills one 802.11ac link and its 1000-packet AP FIFO (goodput vs UDP, RTT ≈ base +
  buffer/rate);
- bufferbloat on a 6.5 Mb/s link (TARGETS W6: RTT above 1.5 s);
- BBR over a WiFi bottleneck gets about B·r/R without the ACK-aggregation estimator (TARGETS
  V4, from Yang et al., "Virtual Wires", §III-B) and more with it;
- random loss on the wired path: CUBIC collapses, BBR holds (the baseline of TARGETS V3);
- four downloads to four stations share fairly and their ACKs cost uplink airtime.
"""
from __future__ import annotations

from .framework import Claim, ClaimResult, Figure, SuiteRun, SweepDef
from .framework import mean as _mean

NAME = "tcp-baselines"
TITLE = "TCP baselines over 802.11"
SOURCE = ("transport baselines for the papers: RFC 9438 CUBIC with RFC 9406 HyStart++, BBR v1 with the "
          "Linux ACK-aggregation estimator, RFC 6675 SACK recovery; targets W6 and V4 of TARGETS.md")
DESCRIPTION = ("One AP, 802.11ac 80 MHz MCS 9 NSS 2 stations unless stated, server behind a 10 Gb/s wired "
               "link with 5 ms one-way delay (10 ms base RTT), 1000-packet AP FIFO, bulk downloads with "
               "1448-byte segments. TCP goodput counts application payload; UDP goodput IP bytes.")

SECS = 12


def _cell(**over) -> dict:
    spec = {
        "sim": {"duration": f"{SECS}s", "warmup": "2s", "seed": 1, "bin": "100ms"},
        "phy": {"standard": "vht", "band": "5GHz", "channel_width": 80, "guard_interval": 800},
        "mac": {"aggregation": True, "max_ampdu_mpdus": 64},
        "wired": {"rate": "10Gbps", "delay": "5ms"},
        "stations": [{"count": 1, "mcs": 9, "nss": 2}],
        "flows": [{"stations": 0, "direction": "down", "pattern": "tcp", "cc": "cubic"}],
    }
    spec.update(over)
    return spec


def sweeps(quick: bool) -> list[SweepDef]:
    q = {"sim": {"duration": "8s"}}
    return [
        SweepDef("link", {**_cell(), "name": "tcp-link",
                          "flows": [{"stations": 0, "direction": "down", "pattern": "tcp"}]},  # cc: cubic (default)
                 [("flows[0].pattern", ["saturated", "tcp"])],
                 seeds=3, quick_seeds=1, quick=q),
        # The same with A-MSDU (7935-octet A-MSDUs, as mac80211 builds for VHT stations).
        SweepDef("link-amsdu", {**_cell(), "name": "tcp-link-amsdu",
                                "mac": {"aggregation": True, "max_ampdu_mpdus": 64, "max_amsdu_bytes": 7935},
                                "flows": [{"stations": 0, "direction": "down", "pattern": "tcp"}]},
                 [("flows[0].pattern", ["saturated", "tcp"])],
                 seeds=3, quick_seeds=1, quick=q),
        SweepDef("bufferbloat", {
            **_cell(), "name": "tcp-bufferbloat",
            "sim": {"duration": "30s", "warmup": "10s", "seed": 1, "bin": "1s"},
            "phy": {"standard": "ht", "band": "5GHz", "channel_width": 20, "guard_interval": 800},
            "mac": {"aggregation": False, "max_ampdu_mpdus": 1},
            "stations": [{"count": 1, "mcs": 0, "nss": 1}],
        }, [("flows[0].cc", ["cubic"])], seeds=3, quick_seeds=1),
        SweepDef("bbr", {**_cell(), "name": "tcp-bbr", "wired": {"rate": "10Gbps", "delay": "1ms"},
                         "flows": [{"stations": 0, "direction": "down", "pattern": "tcp", "cc": "bbr"}]},
                 [("flows[0].extra_acked", [False, True])], seeds=3, quick_seeds=1, quick=q),
        SweepDef("bbr-udp", {**_cell(), "name": "tcp-bbr-udp", "wired": {"rate": "10Gbps", "delay": "1ms"},
                             "flows": [{"stations": 0, "direction": "down", "pattern": "saturated"}]},
                 [("flows[0].pattern", ["saturated"])], seeds=1, quick_seeds=1, quick=q),
        SweepDef("wired-loss", {**_cell(), "name": "tcp-wired-loss"},
                 [("wired.loss", [0.0, 0.01, 0.02, 0.05]), ("flows[0].cc", ["cubic", "bbr"])],
                 seeds=3, quick_seeds=1, quick=q),
        SweepDef("four-flows", {**_cell(), "name": "tcp-four-flows",
                                "stations": [{"count": 4, "mcs": 9, "nss": 2}],
                                "flows": [{"stations": "all", "direction": "down", "pattern": "tcp", "cc": "cubic"}]},
                 [("flows[0].cc", ["cubic"])], seeds=3, quick_seeds=1, quick=q),
    ]


# ------------------------------------------------------------------ helpers over run files


def _mean_rtt_ms(doc: dict, flow: int = 0, skip_s: float = 2.0) -> float:
    ts = doc["data"]["timeseries"]
    skip = int(skip_s * 1e9 // ts["bin_ns"])
    vals = [v for v in ts["flow_rtt_ns"][flow][skip:] if v > 0]
    return sum(vals) / len(vals) / 1e6 if vals else float("nan")



def _goodputs(run: SuiteRun, sweep: str, **match):
    def ok(o):
        return all(str(o.get(k)).lower() == str(v).lower() for k, v in match.items())
    return [sum(f["goodput_bps"] for f in d["data"]["flows"]) for _, d in run.docs(sweep, ok)]


# ------------------------------------------------------------------ claims

def _check_link_goodput(run: SuiteRun) -> ClaimResult:
    udp = _mean(_goodputs(run, "link", **{"flows[0].pattern": "saturated"}))
    tcp = _mean(_goodputs(run, "link", **{"flows[0].pattern": "tcp"}))
    ratio = tcp / udp
    a_udp = _mean(_goodputs(run, "link-amsdu", **{"flows[0].pattern": "saturated"}))
    a_tcp = _mean(_goodputs(run, "link-amsdu", **{"flows[0].pattern": "tcp"}))
    return ClaimResult(f"CUBIC {tcp / 1e6:.0f} of UDP {udp / 1e6:.0f} Mb/s = {ratio * 100:.1f}%; with A-MSDU (7935) "
                       f"{a_tcp / 1e6:.0f} of {a_udp / 1e6:.0f} Mb/s = {a_tcp / a_udp * 100:.1f}%", ratio >= 0.9,
                       "" if ratio >= 0.9 else
                       "each 64-MPDU downlink A-MPDU is followed by an uplink ACK exchange (~0.23 ms of ~1.45 ms), "
                       "a bound of ~82% (TCP payload vs UDP IP bytes); A-MSDU raises both rates about alike, and the "
                       "1000-packet queue is then only ~3 A-MPDUs deep, so TCP's sawtooth leaves it short at times",
                       {"udp_bps": udp, "tcp_bps": tcp, "amsdu_udp_bps": a_udp, "amsdu_tcp_bps": a_tcp})


def _check_link_rtt(run: SuiteRun) -> ClaimResult:
    udp = _mean(_goodputs(run, "link", **{"flows[0].pattern": "saturated"}))
    rtts = [_mean_rtt_ms(d) for _, d in run.docs("link", lambda o: o["flows[0].pattern"] == "tcp")]
    rtt = _mean(rtts)
    expect = 10.0 + 1000 * 1500 * 8 / udp * 1e3
    ok = 0.5 * expect <= rtt <= 1.5 * expect
    return ClaimResult(f"{rtt:.1f} ms vs {expect:.1f} ms", ok, "" if ok else "the queue does not fill as expected",
                       {"rtt_ms": rtt, "expected_ms": expect})


def _check_bufferbloat(run: SuiteRun) -> ClaimResult:
    rtts = [_mean_rtt_ms(d, skip_s=15) for _, d in run.docs("bufferbloat")]
    rtt = _mean(rtts)
    return ClaimResult(f"mean RTT {rtt:.0f} ms", rtt > 1500, "" if rtt > 1500 else "queue or rate model too fast",
                       {"rtt_ms": rtts})


def _bbr_numbers(run: SuiteRun):
    b = _mean(_goodputs(run, "bbr-udp"))
    out = {}
    for extra in (False, True):
        docs = [d for _, d in run.docs("bbr", lambda o, e=extra: str(o["flows[0].extra_acked"]).lower() == str(e).lower())]
        g = _mean(sum(f["goodput_bps"] for f in d["data"]["flows"]) for d in docs)
        r = _mean(d["data"]["flows"][0]["tcp"]["min_rtt_ns"] / 1e6 for d in docs)
        big_r = _mean(_mean_rtt_ms(d) for d in docs)
        out[extra] = (g, r, big_r)
    return b, out


def _check_bbr_v4(run: SuiteRun) -> ClaimResult:
    b, out = _bbr_numbers(run)
    g, r, big_r = out[False]
    model = b * r / big_r
    err = g / model - 1
    ok = abs(err) <= 0.25
    return ClaimResult(f"{g / 1e6:.0f} Mb/s vs B·r/R = {b / 1e6:.0f}·{r:.2f}/{big_r:.2f} = {model / 1e6:.0f} Mb/s "
                       f"({err * 100:+.0f}%)", ok,
                       "" if ok else "BBR's cwnd gain of 2 lets it exceed B·r/R when R < 2r",
                       {"B_bps": b, "r_ms": r, "R_ms": big_r, "goodput_bps": g})


def _check_bbr_extra_acked(run: SuiteRun) -> ClaimResult:
    """The gap the estimator should close is the one between BBR without it and what TCP can get
    on this link at all (CUBIC's goodput in T1: the uplink-ACK bound), not the UDP rate."""
    b, out = _bbr_numbers(run)
    off, on = out[False][0], out[True][0]
    best_tcp = _mean(_goodputs(run, "link", **{"flows[0].pattern": "tcp"}))
    of_tcp_gap = (on - off) / (best_tcp - off) if best_tcp > off else float("nan")
    of_udp_gap = (on - off) / (b - off) if b > off else float("nan")
    ok = of_tcp_gap >= 0.5
    return ClaimResult(f"off {off / 1e6:.0f}, on {on / 1e6:.0f} Mb/s: {of_tcp_gap * 100:.0f}% of the gap to the TCP "
                       f"rate of the link ({best_tcp / 1e6:.0f}), {of_udp_gap * 100:.0f}% of the gap to UDP ({b / 1e6:.0f})",
                       ok, "" if ok else "the estimator does not add enough window for the ACK-aggregated path",
                       {"off_bps": off, "on_bps": on, "B_bps": b, "tcp_bps": best_tcp})


def _check_loss(run: SuiteRun) -> ClaimResult:
    g = {}
    for o, d in run.docs("wired-loss"):
        g.setdefault((float(o["wired.loss"]), o["flows[0].cc"]), []).append(d["data"]["flows"][0]["goodput_bps"])
    m = {k: _mean(v) for k, v in g.items()}
    losses = sorted({k[0] for k in m})
    cubic = [m[(x, "cubic")] for x in losses]
    bbr = [m[(x, "bbr")] for x in losses]
    ok = cubic[1] < 0.2 * cubic[0] and all(b > 0.75 * bbr[0] and b > 5 * c for b, c in zip(bbr[1:], cubic[1:]))
    txt = ", ".join(f"{x * 100:g}%: {c / 1e6:.0f}/{b / 1e6:.0f}" for x, c, b in zip(losses, cubic, bbr))
    return ClaimResult(f"CUBIC/BBR Mb/s at loss {txt}", ok,
                       "" if ok else "BBR loses rate to retransmission timeouts",
                       {"loss": losses, "cubic_bps": cubic, "bbr_bps": bbr})


def _check_fairness(run: SuiteRun) -> ClaimResult:
    jfis, acks = [], []
    for _, d in run.docs("four-flows"):
        g = [f["goodput_bps"] for f in d["data"]["flows"]]
        jfis.append(sum(g) ** 2 / (len(g) * sum(x * x for x in g)))
        acks.append(min(s["airtime_tx_ns"] for s in d["data"]["stations"]))
    jfi = _mean(jfis)
    ok = jfi >= 0.9 and min(acks) > 0
    return ClaimResult(f"JFI {jfi:.3f}; uplink (ACK) airtime ≥ {min(acks) / 1e6:.0f} ms per station", ok,
                       "" if ok else "unfair sharing", {"jfi": jfis})


def claims() -> list[Claim]:
    return [
        Claim("T1", "One CUBIC download vs saturated UDP on the same 802.11ac link",
              "≥ 90% of UDP goodput (transport issue)", "≥ 90%", _check_link_goodput),
        Claim("T2", "CUBIC fills the 1000-packet AP FIFO", "RTT ≈ base + buffer/rate",
              "within ±50% of 10 ms + 1000·1500 B / UDP rate", _check_link_rtt),
        Claim("W6", "6.5 Mb/s link, 1000-packet FIFO, one bulk CUBIC flow: RTT", "> 2 s (Showail & Shihada)",
              "> 1.5 s", _check_bufferbloat),
        Claim("V4", "End-to-end BBR over a WiFi bottleneck, aggregation estimator off",
              "≈ B·r/R (Yang et al., §III-B)", "within 25% of B·r/R with its own r and R", _check_bbr_v4),
        Claim("T3", "BBR's ACK-aggregation estimator on vs off", "recovers most of the gap (transport issue)",
              "≥ 50% of the gap between BBR-off and CUBIC's rate on the link", _check_bbr_extra_acked),
        Claim("T4", "Wired random loss 0–5%: CUBIC vs BBR", "CUBIC falls, BBR holds (baseline of V3)",
              "CUBIC < 20% of lossless at 1%; BBR > 75% of lossless and > 5× CUBIC at every loss", _check_loss),
        Claim("T5", "Four CUBIC downloads to four stations", "fair shares; ACKs cost uplink airtime",
              "Jain index ≥ 0.9; uplink airtime > 0 for every station", _check_fairness),
    ]


# ------------------------------------------------------------------ figures

def figures(run: SuiteRun) -> list[Figure]:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    out = []
    # cwnd and RTT over time of the single CUBIC flow
    doc = next(d for r, d in run.docs("link", lambda o: o["flows[0].pattern"] == "tcp"))
    ts = doc["data"]["timeseries"]
    t = [x / 1e9 for x in ts["t_ns"]]
    fig, ax1 = plt.subplots(figsize=(6.4, 4.0))
    ax1.plot(t, [c / 1448 for c in ts["flow_cwnd_bytes"][0]], color="#0072B2", label="cwnd (segments)")
    ax1.set_xlabel("time (s)")
    ax1.set_ylabel("cwnd (segments)", color="#0072B2")
    ax2 = ax1.twinx()
    ax2.plot(t, [r / 1e6 if r > 0 else float("nan") for r in ts["flow_rtt_ns"][0]], color="#D55E00", label="RTT")
    ax2.set_ylabel("RTT (ms)", color="#D55E00")
    ax1.set_title("One CUBIC download, 802.11ac MCS 9 ×2, 1000-packet AP FIFO")
    ax1.grid(alpha=0.3)
    fig.tight_layout()
    out.append(Figure("CUBIC window and RTT", "Congestion window (last value per 100 ms) and mean RTT sample; "
                      "HyStart++ ends slow start, then CUBIC's cubic growth fills the FIFO until it drops.", fig))

    # loss sweep
    g = {}
    for o, d in run.docs("wired-loss"):
        g.setdefault((float(o["wired.loss"]), o["flows[0].cc"]), []).append(d["data"]["flows"][0]["goodput_bps"] / 1e6)
    losses = sorted({k[0] for k in g})
    fig, ax = plt.subplots(figsize=(6.4, 4.0))
    for cc, color in (("cubic", "#0072B2"), ("bbr", "#D55E00")):
        ax.plot([x * 100 for x in losses], [_mean(g[(x, cc)]) for x in losses], "o-", color=color, label=cc.upper())
    ax.set_xlabel("random loss on the wired path (%)")
    ax.set_ylabel("goodput (Mb/s)")
    ax.set_title("Wired loss: loss-based vs model-based congestion control")
    ax.grid(alpha=0.3)
    ax.legend()
    fig.tight_layout()
    out.append(Figure("Goodput vs wired loss", "One download over the 802.11ac link with random loss on the "
                      "10 ms wired path; mean over seeds.", fig))

    # BBR with and without the aggregation estimator, next to the link rate
    b, nums = _bbr_numbers(run)
    fig, ax = plt.subplots(figsize=(6.4, 4.0))
    labels = ["UDP (B)", "BBR, estimator off", "BBR, estimator on", "B·r/R (off)"]
    vals = [b / 1e6, nums[False][0] / 1e6, nums[True][0] / 1e6, b * nums[False][1] / nums[False][2] / 1e6]
    ax.bar(labels, vals, color=["#999999", "#0072B2", "#009E73", "#E69F00"])
    ax.set_ylabel("goodput (Mb/s)")
    ax.set_title("BBR over a WiFi bottleneck")
    ax.grid(alpha=0.3, axis="y")
    fig.tight_layout()
    out.append(Figure("BBR and ACK aggregation", "1 ms wired delay; B is the saturated UDP goodput, r BBR's minimum "
                      "RTT and R its mean RTT.", fig))
    return out
