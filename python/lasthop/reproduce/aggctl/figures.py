"""The aggctl suite's figures: the paper's Figs. 3, 6b, 7, 8, 9 and 10 redrawn from the runs, and
the stability map and modern-AP comparison beyond the paper."""
from __future__ import annotations

from ..framework import Figure, SuiteRun
from .setup import DELTAS, RATE_CONFIGS, TESTBED_FLOWS, udp_payload
from .runs import _delay_ms, _docs, _flows, _hist_quantile, _loss, _mean, _random_rows, _rate_curve, _receivers, _sat_goodput, _stability


def figures(run: SuiteRun) -> list[Figure]:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return [_fig3(plt, run), _fig6b(plt, run), _fig7(plt, run), _fig8(plt, run), _fig9(plt, run),
            _fig10(plt, run), _fig_stability(plt, run), _fig_modern_ap(plt, run)]


_COLORS = ["#0072B2", "#D55E00", "#009E73", "#CC79A7"]


def _fig3(plt, run: SuiteRun) -> Figure:
    """Fig. 3: aggregation, delay and loss vs send rate."""
    fig, axs = plt.subplots(1, 3, figsize=(11, 3.4))
    for (sweep, label), col in zip(RATE_CONFIGS, _COLORS):
        c = _rate_curve(run, sweep)
        xs = [r * (10 if sweep == "rate-10sta" else 1) for r, *_ in c]
        axs[0].plot(xs, [a for _, a, _, _ in c], "o-", color=col, label=label, ms=3)
        axs[1].plot(xs, [max(d, 1e-3) for _, _, d, _ in c], "o-", color=col, ms=3)
        axs[2].plot(xs, [l * 100 for *_, l in c], "o-", color=col, ms=3)
    axs[0].axhline(56, color="#999", ls=":", lw=1)
    axs[0].set_ylabel("mean MPDUs per A-MPDU")
    axs[1].set_ylabel("mean one-way delay (ms)")
    axs[1].set_yscale("log")
    axs[2].set_ylabel("loss (%)")
    for ax in axs:
        ax.set_xlabel("total send rate (Mb/s)")
        ax.grid(alpha=0.3)
    axs[0].legend(fontsize=7)
    fig.tight_layout()
    return Figure("Aggregation, delay and loss vs send rate (Fig. 3)", "Fixed-rate UDP to one station, to each "
                  "of 10 stations (flow 0 shown, x = total rate), and to one station beside a 100 Mb/s uplink "
                  "flow; mean over seeds. Dotted: 56 MPDUs.", fig)


def _fig6b(plt, run: SuiteRun) -> Figure:
    """Fig. 6b: goodput, delay and loss over the N_e sweep."""
    d = _docs(run, "ne", "aggctl.target_aggregation")
    nes = sorted(d)
    fig, axs = plt.subplots(1, 3, figsize=(11, 3.2))
    axs[0].plot(nes, [_mean(_flows(x)[0]["goodput_bps"] for x in d[n]) / 1e6 for n in nes], "o-")
    axs[0].axhline(_sat_goodput(run) / 1e6, color="#999", ls=":", lw=1)
    axs[1].plot(nes, [_mean(_delay_ms(_flows(x)[0]) for x in d[n]) for n in nes], "o-")
    axs[2].plot(nes, [_mean(_loss(_flows(x)[0]) for x in d[n]) * 100 for n in nes], "o-")
    for ax, yl in zip(axs, ["goodput (Mb/s)", "mean delay (ms)", "loss (%)"]):
        ax.set_xlabel("target aggregation N_e")
        ax.set_ylabel(yl)
        ax.grid(alpha=0.3)
    fig.tight_layout()
    return Figure("Goodput, delay and loss vs N_e (Fig. 6b)", "One station, aggctl held at N_e; dotted: "
                  "saturated UDP goodput.", fig)


def _fig7(plt, run: SuiteRun) -> Figure:
    """Fig. 7: 1 to 20 receivers."""
    r = _receivers(run)
    ns = sorted(r)
    fig, axs = plt.subplots(1, 2, figsize=(10, 3.4))
    axs[0].plot(ns, [udp_payload(r[n]["goodput"]) / 1e6 for n in ns], "o-", label="simulated (UDP payload)")
    axs[0].plot(ns, [r[n]["theory"] / 1e6 for n in ns], "k--", label="GP theory")
    ax2 = axs[0].twinx()
    ax2.plot(ns, [r[n]["delay_ms"] for n in ns], "s-", color="#D55E00", label="delay")
    ax2.set_ylabel("mean delay (ms)", color="#D55E00")
    axs[0].set_xlabel("receivers")
    axs[0].set_ylabel("sum goodput (Mb/s)")
    axs[0].legend(fontsize=7, loc="lower left")
    stats = [{"med": _hist_quantile(r[n]["hist"], 0.5), "q1": r[n]["q25"], "q3": r[n]["q75"],
              "whislo": _hist_quantile(r[n]["hist"], 0.05), "whishi": _hist_quantile(r[n]["hist"], 0.95),
              "label": str(n)} for n in ns]
    axs[1].bxp(stats, showfliers=False)
    axs[1].axhline(32, color="#999", ls=":", lw=1)
    axs[1].set_xlabel("receivers")
    axs[1].set_ylabel("MPDUs per A-MPDU (5/25/50/75/95%)")
    for ax in axs:
        ax.grid(alpha=0.3)
    fig.tight_layout()
    return Figure("1–20 receivers (Fig. 7)", "Sum goodput against GP theory (module doc), mean delay, and the "
                  "distribution of A-MPDU sizes over all stations.", fig)


def _fig8(plt, run: SuiteRun) -> Figure:
    """Fig. 8: random placement, the first run."""
    rows = _random_rows(run)
    fig, ax = plt.subplots(figsize=(6.5, 3.4))
    if rows:
        rw = rows[0]
        order = sorted(range(len(rw["rates"])), key=lambda i: -rw["rates"][i])
        istar = order[0]
        eq = [rw["alloc"][istar] * rw["rates"][i] / rw["rates"][istar] for i in order]
        ax.bar(range(len(order)), [rw["alloc"][i] / 1e6 for i in order], color="#0072B2", label="allocated rate")
        ax.plot(range(len(order)), [e / 1e6 for e in eq], "ko", mfc="none", ms=8, label="equal airtime (eq. 2)")
        ax.set_xticks(range(len(order)), [f"{rw['rates'][i] / 1e6:.0f}" for i in order], fontsize=7)
    ax.set_xlabel("station (mean PHY rate, Mb/s)")
    ax.set_ylabel("send rate at the end (Mb/s)")
    ax.grid(alpha=0.3, axis="y")
    ax.legend(fontsize=7)
    fig.tight_layout()
    return Figure("Random placement with Minstrel-HT (Fig. 8)", "8 stations in a 40 m square, NSS 1, placement "
                  "0, first seed: the allocator's final rates against eq. (2) from the fastest station.", fig)


def _fig9(plt, run: SuiteRun) -> Figure:
    """Fig. 9: the NSS change."""
    doc = _docs(run, "nss")[None][0]
    ts = doc["data"]["timeseries"]
    t = [x / 1e9 for x in ts["t_ns"]]
    fig, (a1, a2) = plt.subplots(2, 1, figsize=(7, 4.6), sharex=True)
    a1.plot(t, [v / 1e6 for v in ts["flow_aggctl_rate_bps"][0]], color="#0072B2")
    a1.set_ylabel("send rate (Mb/s)")
    a2.plot(t, ts["flow_aggctl_est_ampdu"][0], color="#D55E00", label="reported (estimator)")
    a2.plot(t, ts["station_mean_ampdu_down"][0], color="#999", lw=0.8, label="true, per 100 ms bin")
    a2.axhline(32, color="k", ls=":", lw=1)
    a2.set_ylabel("MPDUs per A-MPDU")
    a2.set_xlabel("time (s)")
    a2.legend(fontsize=7)
    for ax in (a1, a2):
        ax.axvline(20, color="#999", ls="--", lw=1)
        ax.grid(alpha=0.3)
    fig.tight_layout()
    return Figure("NSS 2 → 1 at 20 s (Fig. 9)", "One station, MCS 9; the allocator's rate and the aggregation "
                  "the receiver reports every Δ (true aggregation counted after warm-up).", fig)


def _fig10(plt, run: SuiteRun) -> Figure:
    """Fig. 10: aggctl vs CUBIC vs BBR over time."""
    fig, (a1, a2) = plt.subplots(2, 1, figsize=(7, 4.6), sharex=True)
    series = [(name, _docs(run, f"cmp-{name}")[None][0]) for name in ("aggctl", *TESTBED_FLOWS)]
    for (label, doc), col in zip(series, _COLORS):
        ts = doc["data"]["timeseries"]
        t = [x / 1e9 for x in ts["t_ns"]]
        a1.plot(t, [v / 1e6 for v in ts["flow_goodput_bps"][0]], color=col, label=label, lw=1)
        a2.plot(t, [max(v / 1e6, 1e-2) for v in ts["flow_delay_mean_ns"][0]], color=col, lw=1)
    a1.set_ylabel("receive rate (Mb/s)")
    a2.set_ylabel("one-way delay (ms)")
    a2.set_yscale("log")
    a2.set_xlabel("time (s)")
    a1.legend(fontsize=7)
    for ax in (a1, a2):
        ax.grid(alpha=0.3)
    fig.tight_layout()
    return Figure("aggctl vs TCP CUBIC and BBR (Fig. 10)", "One station, MCS 9 NSS 3 (the testbed's link), first seed; 100 ms bins "
                  "(goodput counts delivered packets after warm-up only).", fig)


def _fig_stability(plt, run: SuiteRun) -> Figure:
    """The stability map over Δ and K."""
    s = _stability(run)
    ds = [x for x in DELTAS if any(k[0] == x for k in s)]
    ks = sorted({k for _, k in s})
    fig, ax = plt.subplots(figsize=(6, 3.2))
    grid = [[s.get((dd, k), (float("nan"), 0))[0] for k in ks] for dd in ds]
    im = ax.imshow(grid, cmap="viridis", aspect="auto", origin="lower")
    ax.set_xticks(range(len(ks)), [f"{k:g}" for k in ks])
    ax.set_yticks(range(len(ds)), ds)
    for i in range(len(ds)):
        for j in range(len(ks)):
            ax.text(j, i, f"{grid[i][j]:.1f}", ha="center", va="center", color="w", fontsize=7)
    ax.set_xlabel("K (Mb/s per packet of aggregation error, per update)")
    ax.set_ylabel("Δ")
    fig.colorbar(im, ax=ax, label="σ of reported aggregation")
    fig.tight_layout()
    return Figure("Stability map over Δ and K (beyond the paper)", "Std-dev of the reported aggregation in the "
                  "measurement window, one station, N_e 32.", fig)


def _fig_modern_ap(plt, run: SuiteRun) -> Figure:
    """aggctl behind a modern AP."""
    fig, axs = plt.subplots(1, 2, figsize=(9, 3.2))
    names = [("ap-fifo", "FIFO"), ("ap-modern", "FQ-CoDel+airtime+AQL")]
    for k, (name, label) in enumerate(names):
        docs = _docs(run, name)[None]
        gp = [_mean(_flows(d)[i]["goodput_bps"] for d in docs) / 1e6 for i in range(4)]
        dl = [max(_mean(_delay_ms(_flows(d)[i], "p95") for d in docs), 1e-2) for i in range(4)]
        xs = [i + (k - 0.5) * 0.38 for i in range(4)]
        axs[0].bar(xs, gp, width=0.38, color=_COLORS[k], label=label)
        axs[1].bar(xs, dl, width=0.38, color=_COLORS[k])
    for ax, yl in zip(axs, ["goodput (Mb/s)", "p95 delay (ms)"]):
        ax.set_xticks(range(4), ["aggctl\nMCS 9", "aggctl\nMCS 7", "aggctl\nMCS 4", "CUBIC\nMCS 9"])
        ax.set_ylabel(yl)
        ax.grid(alpha=0.3, axis="y")
    axs[1].set_yscale("log")
    axs[0].legend(fontsize=7)
    fig.tight_layout()
    return Figure("aggctl behind a modern AP (beyond the paper)", "Three aggctl stations at MCS 9/7/4 (NSS 2) "
                  "and a TCP CUBIC download to a fourth (MCS 9), behind a FIFO or FQ-CoDel + airtime + AQL; mean "
                  "over seeds.", fig)
