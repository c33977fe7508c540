"""bquic: "Improving Performance of QUIC in WiFi" (Manzoor, Schmitt et al., WCNC 2019).

Bursty QUIC = Chromium's QUIC with ACK decimation (an ACK every 10 packets or min(25 ms,
min_rtt/4), after 100 packets) and without pacing, against Chromium's defaults (an ACK every
2 packets, pacing). Both run Chromium-like CUBIC in bytes (two emulated connections) with the
delay-based slow-start exit (`lasthop_algo::quic`), hosted in the cell by `world_quic.rs`.

Setup (the paper's §IV where it is specific, documented choices where not): 802.11n 20 MHz,
short guard interval, one spatial stream (the paper's Raspberry Pi client; 72.2 Mb/s top rate),
Minstrel-HT, station 5 m from the AP; the server sits behind the AP with 2 ms one-way wired
delay (the paper's server "at the AP" with 6–10 ms RTT under load); a 10 MB download per run,
many seeds. Mesh: chains of 1–5 hops on one channel with fixed, different per-hop rates.
"""
from __future__ import annotations

import copy

from ..webpages import TABLE_II
from .framework import Claim, ClaimResult, Figure, SuiteRun, SweepDef
from .framework import mean as _mean

NAME = "bquic"
TITLE = "Bursty QUIC over 802.11n"
SOURCE = "Manzoor et al., \"Improving Performance of QUIC in WiFi\", IEEE WCNC 2019; TARGETS B1–B6"
DESCRIPTION = ("802.11n 20 MHz SGI, one stream, Minstrel-HT, station 5 m from the AP, server behind the AP "
               "(2 ms one-way), 10 MB QUIC downloads: profile quic (TCP_ACKING + pacing) vs bquic "
               "(ACK_DECIMATION, no pacing), Chromium-like CUBIC with the delay-based slow-start exit. Mesh: "
               "1–5 hop chains on one channel, per-hop MCS 7, 5, 3, 4, 2.")

PROFILES = ["quic", "bquic"]
LABEL = {"quic": "QUIC (ack/2 + pacing)", "bquic": "BQUIC (decimation, no pacing)"}
COLOR = {"quic": "#0072B2", "bquic": "#D55E00"}
HOPS = [1, 2, 3, 4, 5]
HOP_MCS = [7, 5, 3, 4, 2]
BYTES = 10_000_000
CDF_Q = [0.01, 0.05] + [i / 20 for i in range(2, 20)] + [0.99]


def _lab() -> dict:
    return {
        "name": "bquic-lab",
        "sim": {"duration": "8s", "warmup": "0s", "seed": 1, "bin": "50ms"},
        "phy": {"standard": "ht", "band": "5GHz", "channel_width": 20, "guard_interval": 400},
        "mac": {"aggregation": True, "max_ampdu_mpdus": 64, "max_ampdu_bytes": 65535},
        "wired": {"rate": "10Gbps", "delay": "2ms"},
        "stations": [{"count": 1, "nss": 1, "rate_control": "minstrel", "distance_m": 5}],
        "flows": [{"stations": 0, "direction": "down", "pattern": "quic", "profile": "quic", "bytes": BYTES}],
    }


def _mesh(hops: int) -> dict:
    s = _lab()
    s["name"] = f"bquic-mesh{hops}"
    s["sim"]["duration"] = "40s"
    s["stations"] = []
    for h in range(hops):
        st = {"count": 1, "nss": 1, "mcs": HOP_MCS[h]}
        if h:
            st["parent"] = h - 1
        s["stations"].append(st)
    s["flows"][0]["stations"] = hops - 1
    return s


PAGES = sorted(TABLE_II, key=lambda n: TABLE_II[n][-1])


def _pages() -> dict:
    s = _lab()
    s["name"] = "bquic-pages"
    s["sim"]["duration"] = "6s"
    s["flows"] = [{"stations": 0, "direction": "down", "pattern": "quic", "profile": "quic", "page": "google"}]
    return s


def sweeps(quick: bool) -> list[SweepDef]:
    out = [SweepDef("lab", _lab(), [("flows[0].profile", PROFILES)], seeds=20, quick_seeds=4),
           SweepDef("pages", _pages(), [("flows[0].page", PAGES), ("flows[0].profile", PROFILES)],
                    seeds=10, quick_seeds=2)]
    for h in HOPS:
        out.append(SweepDef(f"mesh{h}", _mesh(h), [("flows[0].profile", PROFILES)], seeds=5, quick_seeds=2))
    # Beyond the paper: TCP on the same download, and QUIC/BQUIC behind a modern AP (FQ-CoDel,
    # airtime fairness, firmware queue with AQL).
    tcp = _lab()
    tcp["name"] = "bquic-tcp"
    tcp["flows"] = [{"stations": 0, "direction": "down", "pattern": "tcp", "cc": "cubic", "bytes": BYTES}]
    out.append(SweepDef("tcp", tcp, [("flows[0].cc", ["cubic", "bbr"])], seeds=20, quick_seeds=4))
    modern = _lab()
    modern["name"] = "bquic-modern-ap"
    modern["ap"] = {"qdisc": "fq_codel", "scheduler": "airtime", "driver": "firmware", "aql": True}
    out.append(SweepDef("modern-ap", modern, [("flows[0].profile", PROFILES)], seeds=20, quick_seeds=4))
    return out


# ------------------------------------------------------------------ data


def _docs(run: SuiteRun, sweep: str) -> dict[str, list[dict]]:
    out: dict[str, list[dict]] = {}
    for o, d in run.docs(sweep):
        out.setdefault(str(o["flows[0].profile"]), []).append(d)
    return out



def _q(doc: dict) -> dict:
    return doc["data"]["flows"][0]["quic"]


def _throughput(doc: dict) -> float:
    """Download throughput, Mb/s: bytes over completion time (NaN if it did not complete)."""
    q = _q(doc)
    return q["bytes"] * 8 / q["completion_ns"] * 1e3 if q["completion_ns"] else float("nan")


def _loss(doc: dict) -> float:
    q = _q(doc)
    return q["packets_lost"] / max(q["packets_sent"], 1)


def _share_below(cdf_ns: list[int], limit_ns: float) -> float:
    """Fraction of samples below `limit_ns`, interpolated between the reported quantiles."""
    pts = list(zip(cdf_ns, CDF_Q))
    if limit_ns < pts[0][0]:
        return 0.0
    for (x0, q0), (x1, q1) in zip(pts, pts[1:]):
        if x0 <= limit_ns < x1:
            return q0 + (q1 - q0) * (limit_ns - x0) / (x1 - x0)
    return 1.0 if limit_ns >= pts[-1][0] else pts[-1][1]


def _bins_std(doc: dict) -> float:
    """Std-dev of the 50 ms throughput bins while the download runs (Mb/s)."""
    ts = doc["data"]["timeseries"]
    n = int((_q(doc)["completion_ns"] or doc["spec"]["sim"]["duration_ns"]) // ts["bin_ns"])
    xs = [v / 1e6 for v in ts["flow_goodput_bps"][0][:max(n, 1)]]
    m = _mean(xs)
    return (sum((x - m) ** 2 for x in xs) / max(len(xs) - 1, 1)) ** 0.5


# ------------------------------------------------------------------ claims


def _check_b1(run: SuiteRun) -> ClaimResult:
    d = _docs(run, "lab")
    t = {p: _mean(_throughput(x) for x in d[p]) for p in PROFILES}
    gain = t["bquic"] / t["quic"] - 1
    ok = 0.15 <= gain <= 0.35
    e = {p: _mean(_q(x)["slow_start_exit_cwnd"] or 0 for x in d[p]) / 1e3 for p in PROFILES}
    why = "" if ok else (f"in the model both profiles fill the link once CUBIC has grown: the AP queue stays "
                         f"backlogged, so paced datagrams are aggregated nearly as well as bursts, and the two leave "
                         f"slow start at similar windows (exit cwnd {e['bquic']:.0f} vs {e['quic']:.0f} kB, see B5); "
                         f"what remains of the gain is the uplink airtime ACK decimation saves")
    return ClaimResult(f"{t['quic']:.1f} → {t['bquic']:.1f} Mb/s ({gain * 100:+.1f}%), {len(d['quic'])} seeds", ok, why,
                       {"throughput_mbps": t})


def _check_b2(run: SuiteRun) -> ClaimResult:
    parts, ok, detail = [], True, {}
    for h in HOPS:
        d = _docs(run, f"mesh{h}")
        t = {p: _mean(_throughput(x) for x in d[p]) for p in PROFILES}
        loss = max(_mean(_loss(x) for x in d[p]) for p in PROFILES)
        gain = t["bquic"] / t["quic"] - 1
        ok &= gain >= 0.10
        parts.append(f"{h} hop(s): {t['quic']:.1f} → {t['bquic']:.1f} Mb/s ({gain * 100:+.0f}%, loss ≤ {loss * 100:.2f}%)")
        detail[h] = t
    why = "" if ok else "see B1: the model shows no aggregation penalty for paced QUIC once the queue is backlogged"
    return ClaimResult("; ".join(parts), ok, why, {"throughput_mbps": detail})


def _plt(run: SuiteRun) -> dict[str, dict[str, float]]:
    """Mean page-load time (ms) per page and profile."""
    acc: dict[tuple[str, str], list[float]] = {}
    for o, d in run.docs("pages"):
        c = _q(d)["completion_ns"]
        acc.setdefault((str(o["flows[0].page"]), str(o["flows[0].profile"])), []).append(
            c / 1e6 if c else float("nan"))
    return {pg: {p: _mean(acc[(pg, p)]) for p in PROFILES} for pg in PAGES}


def _check_b3(run: SuiteRun) -> ClaimResult:
    plt_ = _plt(run)
    red = {pg: 1 - v["bquic"] / v["quic"] for pg, v in plt_.items()}
    # Spearman rank correlation between page size and PLT reduction (pages are sorted by size).
    ranks = sorted(range(len(PAGES)), key=lambda i: red[PAGES[i]])
    r_of = {i: k for k, i in enumerate(ranks)}
    n = len(PAGES)
    rho = 1 - 6 * sum((i - r_of[i]) ** 2 for i in range(n)) / (n * (n * n - 1))
    small = max(red["google"], red["live"])
    large = min(red["facebook"], red["amazon"])
    ok = rho > 0.5 and small <= 0.10 and large >= 0.15
    txt = ", ".join(f"{pg} {-red[pg] * 100:+.0f}%" for pg in PAGES)
    trend = ("the reduction grows with page size as published" if rho > 0.5 else
             "the reduction does not grow with page size")
    why = "" if ok else (f"{trend}, but stays small (largest {max(red.values()) * 100:.0f}%): the model's paced "
                         "QUIC loses little aggregation once the AP queue is backlogged (see B1)")
    return ClaimResult(f"PLT change BQUIC vs QUIC by page (small → large): {txt}; rank correlation with size {rho:.2f}", ok,
                       why, {"plt_ms": plt_, "reduction": red, "spearman": rho})


def _check_b4(run: SuiteRun) -> ClaimResult:
    d = _docs(run, "lab")
    share = {p: _mean(_share_below(_q(x)["inter_packet_ns"]["cdf_ns"], 100_000) for x in d[p]) for p in PROFILES}
    ok = share["bquic"] >= 0.70 and share["quic"] <= 0.40
    return ClaimResult(f"inter-packet time < 100 µs: BQUIC {share['bquic'] * 100:.0f}%, QUIC {share['quic'] * 100:.0f}%",
                       ok, "" if ok else "pacing gaps at this rate fall on the other side of 100 µs", {"share": share})


def _check_b5(run: SuiteRun) -> ClaimResult:
    d = _docs(run, "lab")
    e = {p: _mean(_q(x)["slow_start_exit_cwnd"] or 0 for x in d[p]) for p in PROFILES}
    ratio = e["bquic"] / e["quic"]
    ok = ratio >= 1.5
    why = "" if ok else ("Bursty QUIC sends each window as one burst, so the AP queue — and the RTT of the first "
                         "packets of the next round — rises at once, and its decimated ACKs sample the RTT of "
                         "packets deep in a burst; paced QUIC's datagrams are still aggregated because the AP "
                         "queue is backlogged in slow start, so the delay-based exit fires at similar windows")
    return ClaimResult(f"cwnd at slow-start exit: BQUIC {e['bquic'] / 1e3:.0f} kB vs QUIC {e['quic'] / 1e3:.0f} kB "
                       f"({ratio:.2f}×)", ok, why, {"exit_cwnd_bytes": e})


def _check_b6(run: SuiteRun) -> ClaimResult:
    d = _docs(run, "lab")
    s = {p: _mean(_bins_std(x) for x in d[p]) for p in PROFILES}
    change = s["bquic"] / s["quic"] - 1
    ok = change <= 0.25
    return ClaimResult(f"std-dev of 50 ms throughput bins: QUIC {s['quic']:.1f} → BQUIC {s['bquic']:.1f} Mb/s "
                       f"({change * 100:+.0f}%)", ok, "" if ok else "bursts make the 50 ms throughput much burstier",
                       {"std_mbps": s})


def _check_beyond(run: SuiteRun) -> ClaimResult:
    """TCP CUBIC and BBR on the same 10 MB download, and QUIC/BQUIC behind FQ-CoDel + airtime +
    AQL: reported whichever wins (holds when evaluated)."""
    tcp: dict[str, list[float]] = {}
    for o, d in run.docs("tcp"):
        c = d["data"]["flows"][0]["tcp"]["completion_ns"]
        tcp.setdefault(str(o["flows[0].cc"]), []).append(BYTES * 8 / c * 1e3 if c else float("nan"))
    t = {k: _mean(v) for k, v in tcp.items()}
    fifo = {p: _mean(_throughput(x) for x in _docs(run, "lab")[p]) for p in PROFILES}
    modern = {p: _mean(_throughput(x) for x in _docs(run, "modern-ap")[p]) for p in PROFILES}
    gain = modern["bquic"] / modern["quic"] - 1
    return ClaimResult(f"10 MB download: TCP CUBIC {t['cubic']:.1f}, BBR {t['bbr']:.1f}, QUIC {fifo['quic']:.1f}, "
                       f"BQUIC {fifo['bquic']:.1f} Mb/s (AP FIFO); behind FQ-CoDel + airtime + AQL: QUIC "
                       f"{modern['quic']:.1f} → BQUIC {modern['bquic']:.1f} Mb/s ({gain * 100:+.1f}%)", True, "",
                       {"tcp_mbps": t, "fifo_mbps": fifo, "modern_ap_mbps": modern})


def claims() -> list[Claim]:
    return [
        Claim("B1", "BQUIC vs QUIC bulk throughput gain, lab (10 MB download)",
              "+23% (RPi, 42.4→52.3 Mb/s), +26% (phone)", "+15% … +35%", _check_b1),
        Claim("B2", "The same gain over a mesh of 1–5 hops", "+20% … +31%, loss < 1.3%",
              "every hop count gains ≥ +10%", _check_b2),
        Claim("B3", "Page-load-time reduction grows with page size (Table II pages)",
              "−5% (Google, Live) … −25% (Amazon, Facebook)", "monotone; small ≤ −10%, large ≥ −15%", _check_b3),
        Claim("B4", "Share of packets sent with inter-packet time < 100 µs", "BQUIC 89%, QUIC 18%",
              "BQUIC ≥ 70%, QUIC ≤ 40%", _check_b4),
        Claim("B5", "QUIC leaves slow start earlier than BQUIC", "qualitative (Fig. 3)",
              "BQUIC's cwnd at slow-start exit ≥ 1.5× QUIC's", _check_b5),
        Claim("B6", "Throughput std-dev over 50 ms bins grows only slightly", "8.5 → 9.1 (+7%)", "≤ +25%", _check_b6),
        Claim("B+", "Beyond the paper: TCP CUBIC/BBR on the same download; BQUIC's gain behind FQ-CoDel + airtime "
              "+ AQL", "not in the paper", "reported whichever wins", _check_beyond),
    ]


# ------------------------------------------------------------------ figures


def figures(run: SuiteRun) -> list[Figure]:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    out = []
    # Throughput: lab and mesh hops.
    fig, ax = plt.subplots(figsize=(7.0, 3.6))
    groups = [("lab", "lab")] + [(f"mesh{h}", f"{h} hop{'s' if h > 1 else ''}") for h in HOPS]
    for k, p in enumerate(PROFILES):
        ys = [_mean(_throughput(x) for x in _docs(run, sw)[p]) for sw, _ in groups]
        ax.bar([i + (k - 0.5) * 0.38 for i in range(len(groups))], ys, width=0.38, color=COLOR[p], label=LABEL[p])
    ax.set_xticks(range(len(groups)), [g[1] for g in groups])
    ax.set_ylabel("download throughput (Mb/s)")
    ax.set_title("10 MB QUIC downloads over 802.11n")
    ax.grid(alpha=0.3, axis="y")
    ax.legend(fontsize=8)
    fig.tight_layout()
    out.append(Figure("Throughput, lab and mesh (Figs. 2, 5)", "10 MB over completion time, mean over seeds; mesh "
                      "chains on one channel with per-hop MCS 7, 5, 3, 4, 2.", fig))

    # PLT per page.
    p = _plt(run)
    fig, ax = plt.subplots(figsize=(8.0, 3.6))
    for k, prof in enumerate(PROFILES):
        ax.bar([i + (k - 0.5) * 0.38 for i in range(len(PAGES))], [p[pg][prof] for pg in PAGES], width=0.38,
               color=COLOR[prof], label=LABEL[prof])
    ax.set_xticks(range(len(PAGES)), [f"{pg}\n{TABLE_II[pg][-1]} kB" for pg in PAGES], fontsize=7)
    ax.set_ylabel("page-load time (ms)")
    ax.set_title("Page loads of Table II over 802.11n")
    ax.grid(alpha=0.3, axis="y")
    ax.legend(fontsize=8)
    fig.tight_layout()
    out.append(Figure("Page-load time per site (Fig. 2)", "HTML first, then every other object at once over one "
                      "connection (sizes split by type weights, `webpages.py`); a new connection with a full "
                      "handshake per load; mean over seeds.", fig))

    d = _docs(run, "lab")
    # IPT ECDF.
    fig, ax = plt.subplots(figsize=(6.0, 3.6))
    for p in PROFILES:
        rows = [_q(x)["inter_packet_ns"]["cdf_ns"] for x in d[p]]
        xs = [max(sum(r[i] for r in rows) / len(rows) / 1e3, 0.1) for i in range(len(CDF_Q))]
        ax.plot(xs, CDF_Q, color=COLOR[p], label=LABEL[p], lw=1.8)
    ax.axvline(100, color="#999999", ls=":", lw=1)
    ax.set_xscale("log")
    ax.set_xlabel("inter-packet time at the server (µs)")
    ax.set_ylabel("ECDF")
    ax.grid(alpha=0.3, which="both")
    ax.legend(fontsize=8)
    fig.tight_layout()
    out.append(Figure("Inter-packet time (Fig. 4)", "Time between consecutive datagrams the server sends, quantiles "
                      "averaged over seeds (0 shown at 0.1 µs); the dotted line is 100 µs.", fig))

    # cwnd and 50 ms throughput over time, first seed.
    fig, (ax1, ax2) = plt.subplots(2, 1, figsize=(7.0, 5.2), sharex=True)
    for p in PROFILES:
        doc = d[p][0]
        ts = doc["data"]["timeseries"]
        t = [x / 1e9 for x in ts["t_ns"]]
        n = int((_q(doc)["completion_ns"] or doc["spec"]["sim"]["duration_ns"]) // ts["bin_ns"]) + 1
        ax1.plot(t[:n], [v / 1e3 for v in ts["flow_cwnd_bytes"][0][:n]], color=COLOR[p], label=LABEL[p], lw=1.5)
        ax2.plot(t[:n], [v / 1e6 for v in ts["flow_goodput_bps"][0][:n]], color=COLOR[p], lw=1.2)
    ax1.set_ylabel("cwnd (kB)")
    ax2.set_ylabel("throughput (Mb/s, 50 ms)")
    ax2.set_xlabel("time (s)")
    for ax in (ax1, ax2):
        ax.grid(alpha=0.3)
    ax1.legend(fontsize=8)
    fig.suptitle("One 10 MB download (first seed)")
    fig.tight_layout()
    out.append(Figure("Congestion window and throughput over time (Figs. 3, 6)", "Server cwnd (last value per 50 ms "
                      "bin) and delivered throughput in 50 ms bins.", fig))
    return out
