"""The wqm suite's figures: the paper's Figs. 4, 5, 7–16 and 20 redrawn from the runs."""
from __future__ import annotations

import math

from ..framework import Figure, SuiteRun
from ..framework import mean as _mean
from .setup import (COLOR, DISTANCES, HOPS, LABEL, PAPER_SCHEMES, PARKING_SETTINGS, SCHEMES, SHORT_S, VARIANTS,
                    _parking_name, _scope_name)
from .runs import CDF_Q, _cdf_ms, _docs, _goodput, _gp_one, _ping_q, _rtt_ms, _seeded, _setting_text


def figures(run: SuiteRun) -> list[Figure]:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib import ticker

    def cdf_row(names: list[tuple[str, str, int]], title: str, station: dict[str, str] | None = None):
        """One CDF panel per (sweep, subtitle, ping); `station` maps a sweep to its ablation with
        a qdisc per next hop, whose FIFO-1000 is drawn dashed beside it."""
        fig, axes = plt.subplots(1, len(names), figsize=(4.0 * len(names), 3.4), sharey=True)
        axes = list(axes) if len(names) > 1 else [axes]
        for ax, (sweep, sub, ping) in zip(axes, names):
            d = _docs(run, sweep)
            for s in SCHEMES:
                ax.plot(_cdf_ms(d[s], ping), CDF_Q, color=COLOR[s], label=LABEL[s], lw=1.8)
            if station and sweep in station:
                # The ablation's sweep runs FIFO-1000 alone (its WQM twin is not drawn).
                fifo = [d for _, d in run.docs(station[sweep])]
                ax.plot(_cdf_ms(fifo, ping), CDF_Q, color=COLOR["fifo"], ls="--",
                        lw=1.4, label=f"{LABEL['fifo']}, a qdisc per next hop")
            ax.set_xscale("log")
            # Plain milliseconds at 1, 2 and 5 of each decade (a panel often spans less than one).
            ax.xaxis.set_major_formatter(ticker.FuncFormatter(lambda v, _: f"{v:g}"))
            ax.xaxis.set_minor_formatter(ticker.FuncFormatter(
                lambda v, _: f"{v:g}" if round(v / 10 ** math.floor(math.log10(v))) in (2, 5) else ""))
            ax.set_xlabel("RTT (ms)")
            ax.set_title(sub)
            ax.grid(alpha=0.3, which="both")
        axes[0].set_ylabel("CDF")
        handles, labels = axes[-1].get_legend_handles_labels()
        fig.legend(handles, labels, fontsize=8, loc="lower center", ncol=len(labels), frameon=False)
        fig.suptitle(title)
        fig.tight_layout(rect=(0, 0.07, 1, 1))
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
    out.append(Figure("Aggregation disabled (Figs. 9–10)", "The same chains without A-MPDU aggregation; dashed: "
                      "FIFO-1000 with a qdisc per next hop instead of one per interface (W3's ablation, its seeds).",
                      cdf_row([(f"hops{h}-noagg", f"{h} hop{'s' if h > 1 else ''}, no A-MPDU", 0) for h in HOPS],
                              "RTT without aggregation", {f"hops{h}-noagg": _scope_name(h) for h in HOPS[1:]})))
    groups = [("1 flow", "hops1"), ("3 flows", "flows3"), ("5 flows", "flows5")]
    out.append(Figure("Concurrent flows over one hop (Figs. 15–16)", "Ping RTT p50 beside 1, 3 and 5 CUBIC flows "
                      "to the same station.",
                      bars([(g, {s: _rtt_ms(_docs(run, n)[s]) for s in SCHEMES}) for g, n in groups],
                           "ping RTT p50 (ms)", "RTT with concurrent flows")))
    out.append(Figure("Parking lot (Figs. 19–20)", "Three CUBIC flows from the gateway to nodes 1, 2 and 3 hops "
                      "away on one channel, with Minstrel-HT or every link fixed at 6.5, 13, 65 or 144.4 Mb/s (HT "
                      "20 MHz); (a)–(c) ping RTT p50 per flow (log scale), (d) total goodput; mean over seeds, "
                      "bars from the lowest to the highest seed as in the paper.", _fig20(plt, run)))
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


def _fig20(plt, run: SuiteRun):
    """Fig. 20: per rate setting, each flow's ping RTT p50 and the total goodput per scheme."""
    fig, axes = plt.subplots(1, 4, figsize=(15.0, 3.6))
    w = 0.8 / len(PAPER_SCHEMES)
    xs = range(len(PARKING_SETTINGS))
    panels = [(f"({'abc'[i]}) {h}-hop flow", _ping_q(ping=i)) for i, h in enumerate(HOPS)]
    panels.append(("(d) total goodput", _gp_one))
    for ax, (title, fn) in zip(axes, panels):
        for k, s in enumerate(PAPER_SCHEMES):
            vals = [list(_seeded(run, _parking_name(st), fn)[s].values()) for st in PARKING_SETTINGS]
            m = [_mean(v) for v in vals]
            err = [[a - min(v) for a, v in zip(m, vals)], [max(v) - a for a, v in zip(m, vals)]]
            ax.bar([x + (k - 1.5) * w for x in xs], m, width=w, yerr=err, capsize=2, color=COLOR[s],
                   label=LABEL[s])
        ax.set_xticks(list(xs), [_setting_text(st).replace(" Mb/s", "") for st in PARKING_SETTINGS], fontsize=8)
        ax.set_xlabel("link rate (Mb/s)")
        ax.set_title(title)
        ax.grid(alpha=0.3, axis="y", which="both")
        if fn is _gp_one:
            ax.set_ylabel("goodput (Mb/s)")
        else:
            ax.set_yscale("log")
            ax.set_ylabel("ping RTT p50 (ms)")
    axes[0].legend(fontsize=8)
    fig.suptitle("Parking lot: Minstrel and fixed link rates")
    fig.tight_layout()
    return fig

