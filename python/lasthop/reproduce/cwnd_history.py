"""cwnd-history: "Access Latency Reduction in the QUIC Protocol Based on Communication History"
(Electronics 2019).

The server records its congestion window when a connection closes (the idle timeout included)
and when a 0-RTT client hello arrives, and starts every new 1-RTT connection with
max(default, average) (`lasthop_algo::control::cwnd_history`, hosted by `world_quic.rs`). Each
run is one flow of `CONNECTIONS` QUIC connections from one client, one after another with
200 ms between a transfer's last byte and the next connection (the client closes each one:
CONNECTION_CLOSE); the first connection knows no history, so every later one is measured.
"default" = the same flow without history.

Topologies. "Simple": one QUIC flow from a server over a 100 Mb/s wired bottleneck (the paper's
NetEm router: rate, one-way delay, random loss on the data direction, a 300-packet queue ≈ one BDP
of the good path) to a station behind a fast 802.11ac AP (80 MHz, MCS 9, two streams: 867 Mb/s
PHY, so the wire is the bottleneck). "Dumbbell": the same plus 1…N TCP CUBIC bulk downloads to
other stations of the AP through the same wired bottleneck (the paper's iperf3 background),
started 1 s before the first QUIC connection.

Paths (the paper's Table 1 lost its values; per papers/README.md they follow Langley et al.,
"The QUIC Transport Protocol: Design and Internet-Scale Deployment", SIGCOMM 2017, the table of
network characteristics of selected countries: mean minimum RTT and mean TCP retransmission
rate; the paper: "good" = lowest RTT and retransmission, "average" = global average, "bad" =
highest): good = South Korea, 38 ms RTT, 1 % loss; average = USA, 50 ms, 2 %; bad = India,
188 ms, 8 %. The retransmission rate is used as the random loss rate of the wired link's data
direction (server → station); ACKs are not dropped at random (`wired.loss_up = 0`). Bandwidth 100 Mb/s as in the paper (§5). Fixed for every sweep below.

Beyond the paper: the same transfers with the WiFi link as the bottleneck (wired 1 Gb/s,
average-path delay, no wired loss; the station at 802.11ac 40 MHz MCS 7, one stream: 150 Mb/s
PHY) for QUIC and Bursty QUIC; and the safety analysis the paper lacks: the history is recorded
on an empty good path, then the path gets worse before the next connection — a TCP CUBIC flow
appears, or a 50 Mb/s non-responsive cross flow takes half the bottleneck — and the cost of the
history window is measured, with and without the RTT guard (`history_guard = "rtt"`: the
default window if the handshake RTT exceeds the smallest recorded RTT by more than 25 %).
"""
from __future__ import annotations

import math

from .framework import Claim, ClaimResult, Figure, SuiteRun, SweepDef, mean

NAME = "cwnd-history"
TITLE = "History-based initial congestion window for QUIC"
SOURCE = ("\"Access Latency Reduction in the QUIC Protocol Based on Communication History\", Electronics 2019; "
          "TARGETS H1–H7")
DESCRIPTION = ("QUIC flows of several connections from one client; the server starts each new 1-RTT connection with "
               "max(default, mean of the windows recorded at close). Simple topology: 100 Mb/s wired bottleneck to "
               "a station behind an 802.11ac AP (867 Mb/s PHY, so the wire is the bottleneck); dumbbell: plus 1…N "
               "TCP CUBIC bulk downloads to other stations over the same wire. Paths from Langley et al. (SIGCOMM "
               "2017): good 38 ms / 1 %, average 50 ms / 2 %, bad 188 ms / 8 % (RTT / random loss of the data direction). "
               "Beyond the paper: WiFi as the bottleneck (QUIC and BQUIC), and a path that got worse since the "
               "history was recorded, with and without an RTT guard.")

# name -> (one-way delay, random loss of the data direction, source)
PATHS = {
    "good": ("19ms", 0.01, "Langley et al. 2017: South Korea, 38 ms mean min RTT, 1 % TCP retransmissions"),
    "average": ("25ms", 0.02, "Langley et al. 2017: USA, 50 ms, 2 %"),
    "bad": ("94ms", 0.08, "Langley et al. 2017: India, 188 ms, 8 %"),
}
PATH_NAMES = list(PATHS)
SIZES = {"1MB": 1_000_000, "10MB": 10_000_000}
HISTORIES = ["none", "mean"]
LABEL = {"none": "default", "mean": "history (mean)"}
COLOR = {"none": "#0072B2", "mean": "#D55E00", "rtt": "#009E73"}
CONNECTIONS = {True: 3, False: 6}  # quick, full: the first connection is not measured
SEEDS = {True: 3, False: 10}       # full: 5 measured connections × 10 seeds = the paper's 50
BG_FLOWS = {True: [1, 2, 4], False: [1, 2, 3, 4, 5]}
IDLE = "200ms"
BG_LEAD_S = 1.0


def _duration_s(path: str, size: str, connections: int, lead: float) -> float:
    """Simulated time that covers every transfer (generous for the lossy paths)."""
    per = {("good", "1MB"): 6.0, ("average", "1MB"): 10.0, ("bad", "1MB"): 80.0,
           ("good", "10MB"): 40.0, ("average", "10MB"): 80.0, ("bad", "10MB"): 500.0}[(path, size)]
    return lead + connections * (per + 0.2) + 1.0


def _spec(name: str, path: str, size: str, connections: int, n_bg: int = 0) -> dict:
    delay, loss, _ = PATHS[path]
    lead = BG_LEAD_S if n_bg else 0.0
    dur = _duration_s(path, size, connections, lead)
    quic = {"stations": 0, "direction": "down", "pattern": "quic", "bytes": SIZES[size],
            "connections": connections, "idle": IDLE, "history": "none", "start": f"{lead}s"}
    flows = [quic]
    if n_bg:
        flows.append({"stations": list(range(1, 1 + n_bg)), "direction": "down", "pattern": "tcp", "cc": "cubic"})
    return {
        "name": name,
        "sim": {"duration": f"{dur:.1f}s", "warmup": "0s", "seed": 1, "bin": "100ms"},
        "phy": {"standard": "vht", "band": "5GHz", "channel_width": 80, "guard_interval": 400},
        "mac": {"aggregation": True, "max_ampdu_mpdus": 64},
        "wired": {"rate": "100Mbps", "delay": delay, "loss": loss, "loss_up": 0.0, "queue_limit": 300},
        "stations": [{"count": 1 + n_bg, "mcs": 9, "nss": 2}],
        "flows": flows,
    }


def _wifi(connections: int) -> dict:
    s = _spec("cwnd-history-wifi", "average", "1MB", connections)
    s["phy"]["channel_width"] = 40
    s["wired"] = {"rate": "1Gbps", "delay": PATHS["average"][0], "loss": 0.0, "queue_limit": 1000}
    s["stations"] = [{"count": 1, "mcs": 7, "nss": 1}]
    s["flows"][0]["profile"] = "quic"
    return s


WORSE = ["tcp", "halved"]
WORSE_TEXT = {"tcp": "a TCP CUBIC flow appears", "halved": "a 50 Mb/s cross flow halves the bottleneck"}


def _worse(kind: str) -> dict:
    """Two 1 MB connections on the good path without random loss, 2 s apart: the first records
    the history on an empty path; 1 s before the second, the path gets worse."""
    s = _spec(f"cwnd-history-worse-{kind}", "good", "1MB", 2)
    s["wired"]["loss"] = 0.0
    s["sim"]["duration"] = "5s"
    s["flows"][0]["idle"] = "2s"
    s["flows"][0]["idle_timeout"] = "30s"
    if kind == "tcp":
        s["stations"][0]["count"] = 2
        s["flows"].append({"stations": 1, "direction": "down", "pattern": "tcp", "cc": "cubic", "start": "1.4s"})
    else:
        s["flows"].append({"direction": "cross", "pattern": "cbr", "rate": "50Mbps", "start": "1.4s"})
    return s


def sweeps(quick: bool) -> list[SweepDef]:
    # Quick and full differ in connections per run and seeds; `resolve` keeps `base` for full.
    out = []
    k_full, k_quick = CONNECTIONS[False], CONNECTIONS[True]

    def sd(name: str, full: dict, quickspec: dict, vary: list) -> SweepDef:
        return SweepDef(name, full, vary, seeds=SEEDS[False], quick_seeds=SEEDS[True], quick=quickspec)

    hv = [("flows[0].history", HISTORIES)]
    for topo, n_bg in (("simple", 0), ("dumbbell", 1)):
        for path in PATH_NAMES:
            for size in SIZES:
                name = f"{topo}-{path}-{size}"
                full = _spec(f"cwnd-history-{name}", path, size, k_full, n_bg)
                q = _spec(f"cwnd-history-{name}", path, size, k_quick, n_bg)
                out.append(sd(name, full, q, hv))
    for n in BG_FLOWS[quick]:
        name = f"bg{n}"
        out.append(sd(name, _spec(f"cwnd-history-{name}", "good", "1MB", k_full, n),
                      _spec(f"cwnd-history-{name}", "good", "1MB", k_quick, n), hv))
    out.append(sd("wifi", _wifi(k_full), _wifi(k_quick), [("flows[0].profile", ["quic", "bquic"])] + hv))
    for kind in WORSE:
        out.append(SweepDef(f"worse-{kind}", _worse(kind), hv, seeds=SEEDS[False], quick_seeds=SEEDS[True]))
        g = _worse(kind)
        g["flows"][0]["history"] = "mean"
        out.append(SweepDef(f"worse-{kind}-guard", g, [("flows[0].history_guard", ["rtt"])], seeds=SEEDS[False],
                            quick_seeds=SEEDS[True]))
    return out


# ------------------------------------------------------------------ data


def _mean(xs) -> float:
    return mean(xs, skip_missing=True)


def _std(xs) -> float:
    xs = [x for x in xs if not math.isnan(x)]
    if len(xs) < 2:
        return float("nan")
    m = sum(xs) / len(xs)
    return (sum((x - m) ** 2 for x in xs) / (len(xs) - 1)) ** 0.5


def _ci(xs) -> float:
    """95 % Student-t CI half-width of the mean of the values that are not NaN."""
    from ..analysis import mean_ci
    return mean_ci(x for x in xs if not math.isnan(x))[1]


class Cell:
    """The measured transfers (connections after the first) of one sweep point."""

    def __init__(self):
        self.lat: list[float] = []        # seconds, every measured transfer
        self.per_seed: list[float] = []   # mean latency per seed
        self.sent = 0
        self.lost = 0
        self.iw: list[int] = []
        self.incomplete = 0
        self.reverted = 0

    @property
    def mean(self) -> float:
        return _mean(self.per_seed)

    @property
    def ci(self) -> float:
        return _ci(self.per_seed)

    @property
    def std(self) -> float:
        return _std(self.lat)

    @property
    def loss(self) -> float:
        return self.lost / self.sent if self.sent else float("nan")


def _cells(run: SuiteRun, sweep: str, key: str = "flows[0].history", only: dict | None = None) -> dict[str, Cell]:
    out: dict[str, Cell] = {}
    for o, d in run.docs(sweep):
        if only and any(str(o.get(k)) != v for k, v in only.items()):
            continue
        c = out.setdefault(str(o[key]), Cell())
        q = d["data"]["flows"][0]["quic"]
        lats = []
        for t in q["transfers"][1:]:
            if t["completion_ns"] is None:
                c.incomplete += 1
                continue
            lats.append(t["completion_ns"] / 1e9)
            c.sent += t["packets_sent"]
            c.lost += t["packets_lost"]
            c.iw.append(t["initial_cwnd_bytes"])
            c.reverted += t["guard_reverted_from"] is not None
        c.lat += lats
        c.per_seed.append(_mean(lats))
    return out


def _change(c: dict[str, Cell], new: str = "mean", old: str = "none") -> float:
    return c[new].mean / c[old].mean - 1


def _fmt(c: Cell) -> str:
    return f"{c.mean * 1e3:.0f} ± {c.ci * 1e3:.0f} ms"


def _why_not(c: dict[str, Cell], lo: float, hi: float) -> str:
    """Explanation from the model for a change outside [lo, hi]."""
    ch = _change(c)
    iw_h = _mean(c["mean"].iw) / 1e3
    if ch > hi:
        return (f"history raised the window to {iw_h:.0f} kB on average but gained less than published: the loss "
                f"ratio is {c['mean'].loss * 100:.1f}% with history vs {c['none'].loss * 100:.1f}% without; random "
                "loss ends slow start early in both, so little of the transfer is left to speed up")
    return (f"history raised the window to {iw_h:.0f} kB (default 13.5 kB): at these sizes a large share of the "
            "default's time is slow start, which the remembered window skips almost entirely, so the reduction "
            "exceeds the published one")


# ------------------------------------------------------------------ claims


def _pair(run: SuiteRun, topo: str, size: str, lo: float, hi: float) -> ClaimResult:
    parts, ok, detail, why = [], True, {}, []
    for path in ("good", "average"):
        c = _cells(run, f"{topo}-{path}-{size}")
        ch = _change(c)
        good = lo <= ch <= hi
        ok &= good
        parts.append(f"{path}: {_fmt(c['none'])} → {_fmt(c['mean'])} ({ch * 100:+.0f}%)")
        detail[path] = {"default_s": c["none"].mean, "history_s": c["mean"].mean, "change": ch,
                        "iw_bytes": _mean(c["mean"].iw)}
        if not good:
            why.append(f"{path}: " + _why_not(c, lo, hi))
    return ClaimResult("; ".join(parts), ok, "; ".join(why), detail)


def _check_h1(run):
    return _pair(run, "simple", "1MB", -0.45, -0.20)


def _check_h2(run):
    return _pair(run, "simple", "10MB", -0.20, -0.05)


def _check_h3(run: SuiteRun) -> ClaimResult:
    parts, ok, detail, why = [], True, {}, []
    for topo in ("simple", "dumbbell"):
        for size in SIZES:
            c = _cells(run, f"{topo}-bad-{size}")
            ch = _change(c)
            raised = sum(w > 13_500 for w in c["mean"].iw)
            good = abs(ch) <= 0.05
            ok &= good
            parts.append(f"{topo} {size}: {_fmt(c['none'])} → {_fmt(c['mean'])} ({ch * 100:+.0f}%), "
                         f"history raised {raised}/{len(c['mean'].iw)} windows")
            detail[f"{topo}-{size}"] = {"change": ch, "raised": raised, "incomplete": c["mean"].incomplete}
            if not good:
                why.append(f"{topo} {size}: history raised {raised} of {len(c['mean'].iw)} windows above the "
                           "default (a 10 MB transfer at 8 % loss sometimes ends with a window above 10 packets) "
                           "and the runs differ from there on")
    return ClaimResult("; ".join(parts), ok, "; ".join(why), detail)


def _check_h4(run):
    return _pair(run, "dumbbell", "1MB", -0.40, -0.12)


def _check_h5(run):
    return _pair(run, "dumbbell", "10MB", -0.20, -0.05)


def _check_h6(run: SuiteRun) -> ClaimResult:
    parts, ok, detail = [], True, {}
    ns = [int(k[2:]) for k in run.results if k.startswith("bg")]
    for n in sorted(ns):
        c = _cells(run, f"bg{n}")
        ch = _change(c)
        ok &= ch <= -0.10
        parts.append(f"N={n}: {c['none'].mean * 1e3:.0f} → {c['mean'].mean * 1e3:.0f} ms ({ch * 100:+.0f}%)")
        detail[n] = ch
    why = "" if ok else ("with more TCP flows the recorded windows shrink towards the fair share and the standing "
                         "queue adds the same delay to both, so the saving falls below 10 % for some N")
    return ClaimResult("; ".join(parts), ok, why, detail)


def _check_h7(run: SuiteRun) -> ClaimResult:
    std_ok, loss_ok, parts, detail = True, True, [], {}
    std_bad, loss_bad = [], []
    for topo in ("simple", "dumbbell"):
        for path in ("good", "average"):
            for size in SIZES:
                c = _cells(run, f"{topo}-{path}-{size}")
                s_ok = c["mean"].std <= c["none"].std * 1.05
                std_ok &= s_ok
                if not s_ok:
                    std_bad.append(f"{topo} {path} {size} ({c['none'].std:.2f} → {c['mean'].std:.2f} s)")
                if size == "1MB":
                    loss_ok &= c["mean"].loss >= c["none"].loss
                    if c["mean"].loss < c["none"].loss:
                        loss_bad.append(f"{topo} {path}")
                    parts.append(f"{topo} {path} 1MB: std {c['none'].std * 1e3:.0f} → {c['mean'].std * 1e3:.0f} ms, "
                                 f"loss {c['none'].loss * 100:.1f} → {c['mean'].loss * 100:.1f}%")
                detail[f"{topo}-{path}-{size}"] = {"std_default_s": c["none"].std, "std_history_s": c["mean"].std,
                                                   "loss_default": c["none"].loss, "loss_history": c["mean"].loss}
    ok = std_ok and loss_ok
    why = []
    if not std_ok:
        why.append("the latency std-dev with history is above the default's for " + ", ".join(std_bad) + ": with "
                   "random loss the spread comes from when losses hit, which the initial window does not remove")
    if not loss_ok:
        why.append("the 1 MB loss ratio with history is not higher for " + ", ".join(loss_bad) + ": the random "
                   "loss (1–2 % of the data packets) dominates, and a history window of a few tens of kB does not "
                   "overflow the 300-packet queue")
    return ClaimResult("; ".join(parts), ok, "; ".join(why), detail)


def _check_wifi(run: SuiteRun) -> ClaimResult:
    parts, detail = [], {}
    for prof in ("quic", "bquic"):
        c = _cells(run, "wifi", only={"flows[0].profile": prof})
        ch = _change(c)
        parts.append(f"{prof.upper()}: {_fmt(c['none'])} → {_fmt(c['mean'])} ({ch * 100:+.0f}%), loss "
                     f"{c['none'].loss * 100:.1f} → {c['mean'].loss * 100:.1f}%")
        detail[prof] = {"change": ch, "default_s": c["none"].mean, "history_s": c["mean"].mean}
    return ClaimResult("; ".join(parts), True, "", detail)


def _worse_cells(run: SuiteRun, kind: str) -> dict[str, Cell]:
    c = _cells(run, f"worse-{kind}")
    c["rtt"] = _cells(run, f"worse-{kind}-guard", key="flows[0].history_guard")["rtt"]
    return c


def _check_safety(run: SuiteRun) -> ClaimResult:
    parts, detail = [], {}
    for kind in WORSE:
        c = _worse_cells(run, kind)
        parts.append(f"{WORSE_TEXT[kind]}: default {c['none'].mean * 1e3:.0f} ms / loss {c['none'].loss * 100:.1f}%, "
                     f"history {c['mean'].mean * 1e3:.0f} ms / {c['mean'].loss * 100:.1f}%, guarded "
                     f"{c['rtt'].mean * 1e3:.0f} ms / {c['rtt'].loss * 100:.1f}% (guard reverted "
                     f"{c['rtt'].reverted}/{len(c['rtt'].lat)})")
        detail[kind] = {v: {"latency_s": c[v].mean, "loss": c[v].loss, "iw_bytes": _mean(c[v].iw)}
                        for v in ("none", "mean", "rtt")}
    return ClaimResult("; ".join(parts), True, "", detail)


def claims() -> list[Claim]:
    return [
        Claim("H1", "1 MB transfer latency with history vs default, simple topology",
              "−31% good; −38% average (0.52 → 0.31 s)", "−20% … −45%", _check_h1),
        Claim("H2", "10 MB transfer latency, simple topology", "−13% good (3.43 → 2.98 s); −9% average",
              "−5% … −20%", _check_h2),
        Claim("H3", "\"bad\" path: the average stays below the default, the default is used", "≈ 0%",
              "no window raised; within ±5%", _check_h3),
        Claim("H4", "dumbbell with a TCP background flow, 1 MB", "−22% good (288 → 225 ms); −31% average (467 → 323 ms)",
              "−12% … −40%", _check_h4),
        Claim("H5", "dumbbell, 10 MB", "−12% good; −11% average", "−5% … −20%", _check_h5),
        Claim("H6", "1 … N background TCP flows, 1 MB, good path", "−18% … −24% regardless of N", "every N ≤ −10%",
              _check_h6),
        Claim("H7", "latency std-dev with history lower or equal; 1 MB loss ratio higher", "qualitative",
              "both directions hold (std within +5%)", _check_h7),
        Claim("H+", "Beyond the paper: 1 MB over a WiFi bottleneck (802.11ac 40 MHz MCS 7), QUIC and BQUIC",
              "not in the paper", "reported whichever wins", _check_wifi),
        Claim("HS", "Safety: the path got worse after the history was recorded (1 MB, good path without random "
              "loss); history vs default vs history + RTT guard", "not in the paper", "reported whichever wins",
              _check_safety),
    ]


# ------------------------------------------------------------------ figures


def _bars(ax, groups: list[tuple[str, dict[str, Cell]]], variants: list[str], labels: dict[str, str], attr: str,
          scale: float):
    w = 0.8 / len(variants)
    for k, v in enumerate(variants):
        xs = [i + (k - (len(variants) - 1) / 2) * w for i in range(len(groups))]
        ys = [getattr(c[v], attr) * scale for _, c in groups]
        err = [c[v].ci * scale for _, c in groups] if attr == "mean" else None
        ax.bar(xs, ys, width=w, color=COLOR[v], label=labels[v], yerr=err, capsize=3)
    ax.set_xticks(range(len(groups)), [g for g, _ in groups], fontsize=8)
    ax.grid(alpha=0.3, axis="y")
    ax.legend(fontsize=8)


def figures(run: SuiteRun) -> list[Figure]:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    out = []
    for topo, fig_no in (("simple", "9, 10"), ("dumbbell", "12, 13")):
        fig, axes = plt.subplots(2, 2, figsize=(9.0, 6.0))
        for j, size in enumerate(SIZES):
            groups = [(p, _cells(run, f"{topo}-{p}-{size}")) for p in PATH_NAMES]
            _bars(axes[0][j], groups, HISTORIES, LABEL, "mean", 1.0)
            axes[0][j].set_ylabel("latency (s)")
            axes[0][j].set_yscale("log")
            axes[0][j].set_title(f"{size}: mean ± 95% CI over seeds", fontsize=9)
            _bars(axes[1][j], groups, HISTORIES, LABEL, "std", 1e3)
            axes[1][j].set_ylabel("latency std-dev (ms)")
            axes[1][j].set_yscale("log")
        fig.suptitle(f"{topo.capitalize()} topology: transfer latency and its std-dev")
        fig.tight_layout()
        out.append(Figure(f"{topo.capitalize()} topology latency (Figs. {fig_no})",
                          "Transfers after the first connection of each run; bars: mean over seeds ± 95% CI (top), "
                          "std-dev over every transfer (bottom); log scale.", fig))

    fig, ax = plt.subplots(figsize=(8.0, 3.6))
    groups = [(f"{t[:4]} {p}", _cells(run, f"{t}-{p}-1MB")) for t in ("simple", "dumbbell") for p in PATH_NAMES]
    _bars(ax, groups, HISTORIES, LABEL, "loss", 100.0)
    ax.set_ylabel("loss ratio, 1 MB (%)")
    fig.tight_layout()
    out.append(Figure("Packet loss ratio, 1 MB (Fig. 14a)", "Server packets declared lost over packets sent, "
                      "measured transfers, every seed.", fig))

    ns = sorted(int(k[2:]) for k in run.results if k.startswith("bg"))
    fig, ax = plt.subplots(figsize=(6.0, 3.6))
    for v in HISTORIES:
        cs = [_cells(run, f"bg{n}")[v] for n in ns]
        ax.errorbar(ns, [c.mean * 1e3 for c in cs], yerr=[c.ci * 1e3 for c in cs], color=COLOR[v], label=LABEL[v],
                    marker="o", capsize=3)
    ax.set_xlabel("background TCP flows")
    ax.set_ylabel("1 MB latency (ms)")
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    out.append(Figure("Latency with 1…N background flows (Fig. 15a)", "Good path, dumbbell; mean ± 95% CI.", fig))

    fig, (a1, a2) = plt.subplots(1, 2, figsize=(9.0, 3.6))
    labels = {"none": "default", "mean": "history", "rtt": "history + RTT guard"}
    groups = [(WORSE_TEXT[k].replace(" appears", "").replace(" halves the bottleneck", ""), _worse_cells(run, k))
              for k in WORSE]
    _bars(a1, groups, ["none", "mean", "rtt"], labels, "mean", 1e3)
    a1.set_ylabel("1 MB latency (ms)")
    _bars(a2, groups, ["none", "mean", "rtt"], labels, "loss", 100.0)
    a2.set_ylabel("loss ratio (%)")
    fig.suptitle("Path worse than when the history was recorded")
    fig.tight_layout()
    out.append(Figure("Safety: the path got worse (beyond the paper)", "History recorded on the empty good path; then "
                      "a TCP CUBIC flow starts, or a 50 Mb/s CBR cross flow takes half the wire; second connection.",
                      fig))
    return out
