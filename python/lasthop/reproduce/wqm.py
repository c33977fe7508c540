"""wqm: "Battling Latency in Modern Wireless Networks" (Showail & Shihada, IEEE Access 2018).

WQM sizes a node's interface queue from its drain time T = (backlog / R) / F — R the current tx
rate, F the free-channel fraction — halving it after two measurement intervals above 2.5 ms and
adding a packet after two below, between B_min (the A-MPDU length in use) and B_max (the BDP at
the top rate, equations (5)–(7)). `lasthop_algo::aqm::wqm` implements Algorithm 1; here it runs
at the AP and at every relay of 802.11n chains and is compared with a 1000-packet FIFO (Linux's
txqueuelen), CoDel, PIE — and FQ-CoDel with airtime-fair scheduling, the mac80211 default the
paper did not have.

Setup (the paper's §V where it is specific, documented choices where it is not): 802.11n 5 GHz,
40 MHz, short guard interval, up to three streams (450 Mb/s), Minstrel-HT on every link, nodes
10 m apart on one shared channel (one collision domain: no hidden nodes; W1c puts each hop on
its own channel, relays with a radio per side), ath9k-like
aggregation (whatever is queued for the next hop, no waiting, 4 ms PPDU limit, single frames at
6.5 Mb/s), one TCP CUBIC bulk flow from a server behind the AP (0.1 ms wired) to the far end of
the chain, and a ping every 20 ms to the same node whose round-trip time is the latency
reported (the paper's RTT CDFs). Relays use the AP's queue configuration.
"""
from __future__ import annotations

import copy

from .framework import Claim, ClaimResult, Figure, SuiteRun, SweepDef
from .framework import mean as _mean

NAME = "wqm"
TITLE = "WQM: aggregation-aware buffer sizing on 802.11n chains"
SOURCE = "Showail & Shihada, \"Battling Latency in Modern Wireless Networks\", IEEE Access 6 (2018); TARGETS W1–W7"
DESCRIPTION = ("802.11n 40 MHz SGI, up to 3 streams, Minstrel-HT, nodes 10 m apart on one channel, ath9k-like "
               "aggregation (4 ms, none at 6.5 Mb/s); CUBIC bulk flows from a server behind the AP (0.1 ms "
               "wired) to the end of 1–3 hop chains, a 20 ms ping beside them. Every forwarding node (AP and "
               "relays) runs the compared scheme on its interface queue: FIFO-1000, CoDel, PIE, FQ-CoDel with "
               "airtime-fair scheduling, or a FIFO sized by WQM (limit 2.5 ms, 100 ms interval, AIMD).")

QDISCS = ["fifo", "codel", "pie", "fq_codel"]
SCHEMES = QDISCS + ["wqm"]
LABEL = {"fifo": "FIFO-1000", "codel": "CoDel", "pie": "PIE", "fq_codel": "FQ-CoDel+airtime", "wqm": "WQM"}
COLOR = {"fifo": "#999999", "codel": "#0072B2", "pie": "#E69F00", "fq_codel": "#009E73", "wqm": "#D55E00"}
HOPS = [1, 2, 3]
FLOWS = [1, 3, 5]
DISTANCES = [10, 20, 30]
SHORT_S = [5, 10, 15]
PING_MS = 20
VARIANTS = ["aimd", "aiad", "miad", "mimd"]


def _spec(name: str, hops: int = 1, flows_to: list[int] | None = None, n_flows: int = 1,
          aggregation: bool = True, secs: int = 60, separate: bool = False) -> dict:
    """A chain AP → s0 → … → s(hops−1); `n_flows` CUBIC downloads to each node in `flows_to`
    (default: the last), then one ping per such node."""
    stations = []
    for h in range(hops):
        st = {"count": 1, "nss": 3, "rate_control": "minstrel", "distance_m": 10}
        if h > 0:
            st["parent"] = h - 1
            if separate:
                st["hop_channel"] = h  # each hop on its own channel; relays have a radio per side
        stations.append(st)
    dests = flows_to if flows_to is not None else [hops - 1]
    flows = [{"stations": d, "direction": "down", "pattern": "tcp", "cc": "cubic"}
             for d in dests for _ in range(n_flows)]
    flows += [{"stations": d, "direction": "down", "pattern": "ping", "interval": f"{PING_MS}ms"} for d in dests]
    mac = {"aggregation": aggregation, "max_ampdu_mpdus": 64 if aggregation else 1, "max_ppdu_time": "4ms"}
    if aggregation:
        mac.update({"max_ampdu_bytes": 65535, "aggregation_min_rate": "6.5Mbps"})
    return {
        "name": f"wqm-{name}",
        "sim": {"duration": f"{secs}s", "warmup": "5s", "seed": 1, "bin": "100ms"},
        "phy": {"standard": "ht", "band": "5GHz", "channel_width": 40, "guard_interval": 400},
        "mac": mac,
        "ap": {"qdisc": "fifo", "scheduler": "round_robin", "queue_limit": 1000},
        "wired": {"rate": "10Gbps", "delay": "50us"},
        "stations": stations,
        "flows": flows,
    }


def _pair(name: str, base: dict, vary: list | None = None, seeds: int = 3, quick: dict | None = None) -> list[SweepDef]:
    """The four queue disciplines (one sweep over ap.qdisc) and WQM (a FIFO sized by it)."""
    vary = list(vary or [])
    aqm = copy.deepcopy(base)
    aqm["ap"]["scheduler"] = "airtime"  # matters for FQ-CoDel only (one next hop otherwise)
    wqm = copy.deepcopy(base)
    wqm["ap"]["buffer_sizer"] = "wqm"
    wqm["name"] += "-wqm"
    return [SweepDef(name, aqm, [("ap.qdisc", QDISCS)] + vary, seeds=seeds, quick_seeds=1, quick=quick),
            SweepDef(name + "-wqm", wqm, vary, seeds=seeds, quick_seeds=1, quick=quick)]


def sweeps(quick: bool) -> list[SweepDef]:
    q = {"sim": {"duration": "15s", "warmup": "3s"}}
    out: list[SweepDef] = []
    for h in HOPS:
        out += _pair(f"hops{h}", _spec(f"hops{h}", hops=h), quick=q)
        out += _pair(f"hops{h}-noagg", _spec(f"hops{h}-noagg", hops=h, aggregation=False), quick=q)
    out += _pair("hops3-sepch", _spec("hops3-sepch", hops=3, separate=True), quick=q)
    for n in FLOWS[1:]:
        out += _pair(f"flows{n}", _spec(f"flows{n}", n_flows=n), quick=q)
    out += _pair("parking", _spec("parking", hops=3, flows_to=[0, 1, 2]), quick=q)
    out += _pair("distance", _spec("distance"), vary=[("stations[0].distance_m", DISTANCES)], quick=q)
    short = _spec("short")
    short["sim"].update({"duration": "15s", "warmup": "0s"})
    out += _pair("short", short, vary=[("sim.duration", [f"{s}s" for s in SHORT_S])], seeds=5,
                 quick={"sim": {"warmup": "0s"}})
    # Fig. 5: the step rules, on the 3-hop chain.
    var = _spec("variants", hops=3)
    var["ap"]["buffer_sizer"] = "wqm"
    out.append(SweepDef("variants", var, [("ap.wqm_variant", VARIANTS)], seeds=3, quick_seeds=1, quick=q))
    # W6: bufferbloat on a 6.5 Mb/s link (HT 20 MHz MCS 0, long GI), FIFO-1000.
    slow = _spec("slow")
    slow["phy"].update({"channel_width": 20, "guard_interval": 800})
    slow["stations"] = [{"count": 1, "mcs": 0, "nss": 1}]
    slow["sim"].update({"duration": "40s", "warmup": "15s", "bin": "1s"})
    out.append(SweepDef("slow", slow, [("ap.qdisc", ["fifo"])], seeds=3, quick_seeds=1,
                        quick={"sim": {"duration": "30s"}}))
    return out


# ------------------------------------------------------------------ data



def _docs(run: SuiteRun, name: str, **match) -> dict[str, list[dict]]:
    """Result documents of sweep pair `name` per scheme, over seeds, where the other varied
    keys equal `match` (compared as text)."""
    def ok(o):
        return all(str(o.get(k)) == str(v) for k, v in match.items())
    out: dict[str, list[dict]] = {}
    for o, d in run.docs(name):
        if ok(o):
            out.setdefault(str(o["ap.qdisc"]), []).append(d)
    for o, d in run.docs(name + "-wqm"):
        if ok(o):
            out.setdefault("wqm", []).append(d)
    return out



def _n_tcp(doc: dict) -> int:
    return sum(1 for f in doc["data"]["flows"] if f["pattern"] == "tcp")


def _pings(doc: dict) -> list[dict]:
    return [f for f in doc["data"]["flows"] if f["pattern"] == "ping"]


def _rtt_ms(docs: list[dict], q: str = "p50", ping: int = 0) -> float:
    """Mean over seeds of a ping's RTT quantile `q` (ms)."""
    return _mean(_pings(d)[ping]["delay_ns"][q] / 1e6 for d in docs)


def _cdf_ms(docs: list[dict], ping: int = 0) -> list[float]:
    """The ping's RTT at each reported quantile, averaged over seeds (ms)."""
    rows = [_pings(d)[ping]["delay_ns"]["cdf_ns"] for d in docs]
    return [sum(c[i] for c in rows) / len(rows) / 1e6 for i in range(len(rows[0]))]


CDF_Q = [0.01, 0.05] + [i / 20 for i in range(2, 20)] + [0.99]


def _goodput(docs: list[dict], flows: list[int] | None = None) -> float:
    """Mean over seeds of the summed goodput of the TCP flows (or of `flows`), Mb/s."""
    def one(d):
        fl = d["data"]["flows"]
        idx = flows if flows is not None else range(_n_tcp(d))
        return sum(fl[i]["goodput_bps"] for i in idx) / 1e6
    return _mean(one(d) for d in docs)


def _jfi(docs: list[dict]) -> float:
    def one(d):
        g = [f["goodput_bps"] for f in d["data"]["flows"][:_n_tcp(d)]]
        return sum(g) ** 2 / (len(g) * sum(x * x for x in g)) if any(g) else 0.0
    return _mean(one(d) for d in docs)


def _fmt(v: dict[str, float], unit: str = "ms") -> str:
    return ", ".join(f"{LABEL[s]} {v[s]:.1f}" for s in SCHEMES if s in v) + f" {unit}"


# ------------------------------------------------------------------ claims


def _check_w1(run: SuiteRun) -> ClaimResult:
    parts, ok, detail = [], True, {}
    for h in HOPS:
        d = _docs(run, f"hops{h}")
        r = {s: _rtt_ms(d[s]) for s in SCHEMES}
        fifo, pie, codel = r["fifo"] / r["wqm"], r["pie"] / r["wqm"], r["codel"] / r["wqm"]
        ok &= fifo >= 4 and pie >= 4 and codel >= 1.5
        parts.append(f"{h} hop(s): WQM {r['wqm']:.1f} ms = {fifo:.1f}× below FIFO, {pie:.1f}× below PIE, "
                     f"{codel:.1f}× below CoDel (FQ-CoDel {r['fq_codel']:.1f} ms)")
        detail[h] = r
    why = "" if ok else ("WQM's buffer cannot go below B_min = the A-MPDU length in use, so at high rates its "
                         "queue is not much shorter than what CoDel/PIE keep; see the per-hop ratios")
    return ClaimResult("; ".join(parts), ok, why, {"p50_rtt_ms": detail})


def _check_w2(run: SuiteRun) -> ClaimResult:
    parts, ok, detail = [], True, {}
    for h in HOPS:
        d = _docs(run, f"hops{h}")
        g = {s: _goodput(d[s]) for s in SCHEMES}
        cost = 1 - g["wqm"] / g["fifo"]
        ok &= cost <= 0.08
        parts.append(f"{h} hop(s): {g['fifo']:.0f} → {g['wqm']:.0f} Mb/s ({cost * 100:+.1f}% cost)")
        detail[h] = g
    why = "" if ok else ("a buffer pinned near one A-MPDU leaves relays without a second aggregate queued while "
                         "one is in the air, so hops idle between TCP bursts")
    return ClaimResult("; ".join(parts), ok, why, {"goodput_mbps": detail})


def _check_w3(run: SuiteRun) -> ClaimResult:
    parts, ok, detail = [], True, {}
    for h in HOPS:
        d = _docs(run, f"hops{h}-noagg")
        r = {s: _rtt_ms(d[s]) for s in SCHEMES}
        fifo = r["fifo"] / r["wqm"]
        near = all(abs(r[s] / r["wqm"] - 1) <= 0.3 for s in ("codel", "pie"))
        ok &= fifo >= 4 and near
        parts.append(f"{h} hop(s): WQM {r['wqm']:.1f} ms, {fifo:.1f}× below FIFO; CoDel {r['codel']:.1f}, "
                     f"PIE {r['pie']:.1f} ms")
        detail[h] = r
    far = sorted({s for r in detail.values() for s in ("codel", "pie") if abs(r[s] / r["wqm"] - 1) > 0.3})
    why = "" if ok else ("without aggregation B_min is 1 packet and WQM keeps a queue of a few frames; CoDel and "
                         "PIE settle at their own sojourn targets (RFC defaults 5 ms and 15 ms per hop), so "
                         f"{' and '.join(LABEL[s] for s in far) or 'they'} end more than 30% away from WQM")
    return ClaimResult("; ".join(parts), ok, why, {"p50_rtt_ms": detail})


def _check_w4(run: SuiteRun) -> ClaimResult:
    parts, ok, detail = [], True, {}
    for n in FLOWS:
        d = _docs(run, "hops1" if n == 1 else f"flows{n}")
        r = {s: _rtt_ms(d[s]) for s in SCHEMES}
        g = {s: _goodput(d[s]) for s in SCHEMES}
        ratio = min(r["fifo"], r["pie"]) / r["wqm"]
        cost = 1 - g["wqm"] / g["fifo"]
        ok &= ratio >= 4 and cost <= 0.15
        line = f"{n} flow(s): RTT ≥ {ratio:.1f}× below FIFO and PIE at {cost * 100:+.1f}% goodput"
        if n == 3:
            j = {s: _jfi(d[s]) for s in SCHEMES}
            ok &= j["wqm"] >= 0.95 and j["wqm"] > j["fifo"] - 1e-9
            line += f"; JFI WQM {j['wqm']:.3f} vs FIFO {j['fifo']:.3f}"
            detail["jfi"] = j
        parts.append(line)
        detail[f"{n} flows"] = {"rtt": r, "goodput": g}
    why = "" if ok else ("our FIFO shares a 1000-packet queue among flows that all see the same loss, so "
                         "the unfairness the paper measured (JFI 0.7) needs desynchronised flows it does not "
                         "reproduce; see the per-case numbers")
    return ClaimResult("; ".join(parts), ok, why, detail)


def _check_w5(run: SuiteRun) -> ClaimResult:
    d = _docs(run, "parking")
    need = [5, 4, 3]
    parts, ok, detail = [], True, {}
    for i, h in enumerate(HOPS):
        r = {s: _rtt_ms(d[s], ping=i) for s in SCHEMES}
        ratio = r["fifo"] / r["wqm"]
        ok &= ratio >= need[i]
        parts.append(f"{h}-hop flow: {ratio:.1f}× ({r['fifo']:.0f} → {r['wqm']:.1f} ms)")
        detail[h] = r
    g = {s: _goodput(d[s]) for s in SCHEMES}
    why = "" if ok else "the longer flows' RTT is dominated by the shared channel's contention, not by queues"
    return ClaimResult("; ".join(parts) + f"; total goodput FIFO {g['fifo']:.0f}, WQM {g['wqm']:.0f} Mb/s", ok, why,
                       {"p50_rtt_ms": detail, "goodput_mbps": g})


def _tcp_rtt_ms(doc: dict) -> float:
    """Mean of the TCP flow's RTT samples after warm-up (what the paper's Fig. 1 plots), ms."""
    ts = doc["data"]["timeseries"]
    skip = doc["spec"]["sim"]["warmup_ns"] // ts["bin_ns"]
    vals = [v for v in ts["flow_rtt_ns"][0][skip:] if v > 0]
    return sum(vals) / len(vals) / 1e6 if vals else float("nan")


def _check_w6(run: SuiteRun) -> ClaimResult:
    docs = [d for _, d in run.docs("slow")]
    rtt = _mean(_tcp_rtt_ms(d) for d in docs)
    ok = rtt > 1500
    return ClaimResult(f"TCP RTT mean {rtt:.0f} ms (ping p50 {_rtt_ms(docs):.0f}, p95 {_rtt_ms(docs, 'p95'):.0f} ms)",
                       ok, "" if ok else "queue or rate model too fast", {"tcp_rtt_ms": rtt})


def _check_w7(run: SuiteRun) -> ClaimResult:
    parts, ok, detail = [], True, {}
    for s in SHORT_S:
        d = _docs(run, "short", **{"sim.duration": f"{s}s"})
        p95 = {k: _rtt_ms(d[k], "p95") for k in SCHEMES}
        g = {k: _goodput(d[k]) for k in SCHEMES}
        cost = 1 - g["wqm"] / g["fifo"]
        ok &= p95["wqm"] <= 150
        parts.append(f"{s} s: WQM p95 RTT {p95['wqm']:.0f} ms (FIFO {p95['fifo']:.0f}), goodput {cost * 100:+.1f}%")
        detail[s] = {"p95_rtt_ms": p95, "goodput_mbps": g}
    return ClaimResult("; ".join(parts), ok, "" if ok else "WQM's queue grew beyond 150 ms of RTT", detail)


def _check_separate(run: SuiteRun) -> ClaimResult:
    """Beyond the paper: the 3-hop chain with each hop on its own channel (two-radio relays)."""
    d = _docs(run, "hops3-sepch")
    r = {s: _rtt_ms(d[s]) for s in SCHEMES}
    g = {s: _goodput(d[s]) for s in SCHEMES}
    shared = _goodput(_docs(run, "hops3")["fifo"])
    ok = r["fifo"] / r["wqm"] >= 4 and r["pie"] / r["wqm"] >= 4 and r["codel"] / r["wqm"] >= 1.5
    return ClaimResult(f"{_fmt(r)}; goodput FIFO {g['fifo']:.0f} (one shared channel: {shared:.0f}), WQM "
                       f"{g['wqm']:.0f} Mb/s", ok, "" if ok else "with hops in parallel the relays' queues "
                       "behave like a single-hop bottleneck's; see the ratios", {"p50_rtt_ms": r, "goodput_mbps": g})


def _check_modern(run: SuiteRun) -> ClaimResult:
    """Beyond the paper: WQM against FQ-CoDel with airtime fairness, on every case, reported
    whichever wins (the claim holds when the comparison could be made)."""
    rows = []
    for name in [f"hops{h}" for h in HOPS] + ["flows3", "flows5"]:
        d = _docs(run, name)
        rows.append(f"{name}: RTT WQM {_rtt_ms(d['wqm']):.1f} vs FQ-CoDel {_rtt_ms(d['fq_codel']):.1f} ms, "
                    f"goodput {_goodput(d['wqm']):.0f} vs {_goodput(d['fq_codel']):.0f} Mb/s")
    return ClaimResult("; ".join(rows), True, "", {})


def claims() -> list[Claim]:
    return [
        Claim("W1", "Single flow over 1/2/3 hops: RTT of WQM vs FIFO-1000, PIE and CoDel",
              "≥ 5× lower than FIFO and PIE; ≥ 2× lower than CoDel; 3 hops 261.3 ms (PIE) → 49.5 ms",
              "≥ 4× vs FIFO and PIE; ≥ 1.5× vs CoDel", _check_w1),
        Claim("W2", "Goodput cost of W1", "≤ 5%", "≤ 8%", _check_w2),
        Claim("W3", "Aggregation disabled: WQM vs FIFO; vs CoDel/PIE", "up to 7×; about equal",
              "≥ 4×; within 30%", _check_w3),
        Claim("W4", "1/3/5 concurrent flows, one hop: RTT vs FIFO and PIE; Jain index with 3 flows",
              "≥ 5× at ≤ 13% goodput cost; JFI 0.99 vs 0.7 (FIFO)", "≥ 4×, ≤ 15%; JFI ≥ 0.95 and above FIFO's",
              _check_w4),
        Claim("W5", "Parking lot, flows of 1/2/3 hops: RTT vs FIFO", "8× / 6× / 4×", "≥ 5× / 4× / 3×", _check_w5),
        Claim("W6", "6.5 Mb/s link, 1000-packet FIFO: RTT under one bulk flow", "> 2 s",
              "> 1.5 s (sanity of the model)", _check_w6),
        Claim("W7", "Short flows (5/10/15 s): delay bounded", "≤ 150 ms, ≤ 8% goodput loss", "≤ 150 ms", _check_w7),
        Claim("W1c", "Beyond the paper: 3 hops, each on its own channel: RTT of WQM vs FIFO-1000, PIE, CoDel",
              "not in the paper", "the W1 band (≥ 4× FIFO and PIE, ≥ 1.5× CoDel)", _check_separate),
        Claim("W+", "Beyond the paper: WQM vs FQ-CoDel with airtime fairness (the mac80211 default)",
              "not in the paper", "reported whichever wins", _check_modern),
    ]


# ------------------------------------------------------------------ figures


def figures(run: SuiteRun) -> list[Figure]:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    def cdf_row(names: list[tuple[str, str, int]], title: str):
        fig, axes = plt.subplots(1, len(names), figsize=(4.0 * len(names), 3.4), sharey=True)
        axes = list(axes) if len(names) > 1 else [axes]
        for ax, (sweep, sub, ping) in zip(axes, names):
            d = _docs(run, sweep)
            for s in SCHEMES:
                ax.plot(_cdf_ms(d[s], ping), CDF_Q, color=COLOR[s], label=LABEL[s], lw=1.8)
            ax.set_xscale("log")
            ax.set_xlabel("RTT (ms)")
            ax.set_title(sub)
            ax.grid(alpha=0.3, which="both")
        axes[0].set_ylabel("CDF")
        axes[-1].legend(fontsize=8, loc="lower right")
        fig.suptitle(title)
        fig.tight_layout()
        return fig

    def bars(groups: list[tuple[str, dict[str, float]]], ylabel: str, title: str):
        fig, ax = plt.subplots(figsize=(7.0, 3.6))
        w = 0.8 / len(SCHEMES)
        for k, s in enumerate(SCHEMES):
            ax.bar([i + (k - 2) * w for i in range(len(groups))], [g[1][s] for g in groups], width=w,
                   color=COLOR[s], label=LABEL[s])
        ax.set_xticks(range(len(groups)), [g[0] for g in groups])
        ax.set_ylabel(ylabel)
        ax.set_title(title)
        ax.grid(alpha=0.3, axis="y")
        ax.legend(fontsize=8, ncol=3)
        fig.tight_layout()
        return fig

    out = []
    out.append(Figure("Single flow latency by hop count (Fig. 7)",
                      "CDF of the ping RTT beside one CUBIC download to the end of the chain (quantiles 1–99 %, "
                      "mean over seeds), log scale.",
                      cdf_row([(f"hops{h}", f"{h} hop{'s' if h > 1 else ''}", 0) for h in HOPS],
                              "RTT, one flow, 802.11n chains")))
    out.append(Figure("Single flow goodput by hop count (Fig. 8)", "CUBIC goodput, mean over seeds.",
                      bars([(f"{h} hop{'s' if h > 1 else ''}", {s: _goodput(_docs(run, f'hops{h}')[s]) for s in SCHEMES})
                            for h in HOPS], "goodput (Mb/s)", "Goodput, one flow")))
    out.append(Figure("Aggregation disabled (Figs. 9–10)", "The same chains without A-MPDU aggregation.",
                      cdf_row([(f"hops{h}-noagg", f"{h} hop{'s' if h > 1 else ''}, no A-MPDU", 0) for h in HOPS],
                              "RTT without aggregation")))
    groups = [("1 flow", "hops1"), ("3 flows", "flows3"), ("5 flows", "flows5")]
    out.append(Figure("Concurrent flows over one hop (Figs. 15–16)", "Ping RTT p50 beside 1, 3 and 5 CUBIC flows "
                      "to the same station.",
                      bars([(g, {s: _rtt_ms(_docs(run, n)[s]) for s in SCHEMES}) for g, n in groups],
                           "ping RTT p50 (ms)", "RTT with concurrent flows")))
    d = _docs(run, "parking")
    out.append(Figure("Parking lot (Figs. 19–20)", "Three CUBIC flows from the gateway to nodes 1, 2 and 3 hops "
                      "away on one channel; ping RTT p50 per flow.",
                      bars([(f"{h}-hop flow", {s: _rtt_ms(d[s], ping=i) for s in SCHEMES}) for i, h in enumerate(HOPS)],
                           "ping RTT p50 (ms)", "Parking lot")))
    groups = [(f"{m} m", {s: _rtt_ms(_docs(run, "distance", **{"stations[0].distance_m": m})[s]) for s in SCHEMES})
              for m in DISTANCES]
    out.append(Figure("Distance with Minstrel-HT (Figs. 11–12)", "One hop, station 10/20/30 m from the AP; "
                      "Minstrel-HT picks the rate; ping RTT p50.",
                      bars(groups, "ping RTT p50 (ms)", "RTT by distance")))
    groups = [(f"{t} s", {s: _rtt_ms(_docs(run, "short", **{"sim.duration": f"{t}s"})[s], "p95") for s in SCHEMES})
              for t in SHORT_S]
    out.append(Figure("Short flows (Figs. 13–14)", "CUBIC flows of 5, 10 and 15 s from a cold start (no warm-up); "
                      "ping RTT p95, mean over seeds.", bars(groups, "ping RTT p95 (ms)", "Short flows")))

    # Fig. 5: step rules.
    per = {v: [] for v in VARIANTS}
    for o, d in run.docs("variants"):
        per[str(o["ap.wqm_variant"])].append(d)
    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(8.0, 3.4))
    xs = range(len(VARIANTS))
    ax1.bar(xs, [_rtt_ms(per[v]) for v in VARIANTS], color="#D55E00")
    ax2.bar(xs, [_goodput(per[v]) for v in VARIANTS], color="#0072B2")
    for ax, yl in ((ax1, "ping RTT p50 (ms)"), (ax2, "goodput (Mb/s)")):
        ax.set_xticks(list(xs), [v.upper() for v in VARIANTS])
        ax.set_ylabel(yl)
        ax.grid(alpha=0.3, axis="y")
    fig.suptitle("WQM step rules, 3-hop chain")
    fig.tight_layout()
    out.append(Figure("Step rules (Fig. 5)", "WQM with additive/multiplicative increase and decrease (the paper "
                      "uses AIMD: +1 packet, halve), one CUBIC flow over three hops; mean over seeds.", fig))

    # Fig. 4: the buffer size WQM chooses over time, at each forwarding node of the 3-hop chain.
    doc = _docs(run, "hops3")["wqm"][0]
    ts = doc["data"]["timeseries"]
    t = [x / 1e9 for x in ts["t_ns"]]
    fig, ax = plt.subplots(figsize=(7.0, 3.4))
    names = ["AP"] + [f"relay s{i}" for i in range(len(ts["node_queue_limit"]) - 1)]
    for n, (lim, bl) in enumerate(zip(ts["node_queue_limit"], ts["node_backlog_packets"])):
        if not lim:
            continue
        c = ["#D55E00", "#0072B2", "#009E73", "#CC79A7"][n % 4]
        ax.plot(t[:len(lim)], lim, color=c, lw=1.8, label=f"{names[n]} limit")
        ax.plot(t[:len(bl)], bl, color=c, lw=0.8, ls=":", label=f"{names[n]} backlog")
    ax.set_xlabel("time (s)")
    ax.set_ylabel("packets")
    ax.set_title("WQM buffer size, 3-hop chain (one CUBIC flow)")
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8, ncol=2)
    fig.tight_layout()
    out.append(Figure("Buffer size over time (Fig. 4)", "The interface-queue limit WQM sets at the AP and the two "
                      "relays (solid) and their backlog (dotted), sampled every 100 ms, first seed.", fig))
    return out
