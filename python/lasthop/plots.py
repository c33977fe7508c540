"""Plots of results (docs/experiments.md, "Analysis from files"), drawn into
`matplotlib.figure.Figure` objects (no pyplot state, no backend chosen: importing this module
leaves matplotlib's backend as it was, so figures show inline in a notebook), deterministically:
fixed DPI, fixed fonts and style, `svg.hashsalt` set, no software/date metadata in PNG, SVG or
PDF output.

Kinds (`make_plot(res, kind, metric=None, x=None)`; every public plot function returns a Figure):

- `timeseries`: one stored time series (`data.timeseries` of a result file, docs/results.md)
  of ONE run (the first run of a multi-run input), one line per flow, station or node that has
  samples. `metric` is a series name (`flow_cwnd_bytes`, `node_backlog_packets`, ...) or an
  alias (`SERIES_ALIASES`: `goodput`, `delay`, `rtt`, `cwnd`, `inflight`, `pacing`,
  `retransmits`, `aggctl_rate`, `aggctl_est`, `backlog`, `queue_limit`, `snr`, `phy_rate`,
  `ampdu`, `airtime`; the table names `goodput_bps`, `delay_mean_ms`, `mean_ampdu`,
  `airtime_frac` too). Values are shown in display units (Mb/s, ms, kB, packets, dB, %).
  Bins without a sample (no delivery for a delay, no PPDU for an A-MPDU size or PHY rate, no
  RTT sample, no queue sample, an aggctl flow not running, a flow that does not pace) are gaps,
  not zeros. The warmup is shaded. A series name the input does not store is a UserError
  listing the names it does.
- `all`: the combined view of ONE run on a shared time axis: goodput per flow (downlink solid,
  uplink dashed, cross traffic dotted), latency per flow (RTT for ping flows, one-way delay for
  the others, labelled as such), and beneath them the congestion window of TCP/QUIC flows and
  the backlog of the AP's (and any relay's) queue, when the run has them.
- `cdf`: delay distribution. Result files keep only p50, p95, p99 and max of each flow's
  per-packet delay (the full histogram is not stored), so without `--metric` and for one run
  the plot shows exactly those four points of each flow's CDF on a "nines" probability axis,
  joined by dotted lines only to guide the eye; nothing between them is drawn as data. With
  several runs, or with `--metric M`, it is the empirical CDF of M (default `delay_p99_ms`)
  across flows and seeds, one step curve per grid point (and flow class, see below).
- `box`: box plots of a table metric (default `goodput_bps`) per grid point, over seeds and
  flows (box: quartiles and median; whiskers: 1.5 IQR; dots: the values).
- `bar`: a table metric per grid point (and per flow, up to 10 flows; otherwise the total over
  flows for goodput/offered load and the mean over flows for the rest), mean across seeds with
  95 % Student-t CI error bars.
- `xy`: a table metric against a numeric varied key `--x KEY` (default: the first numeric
  one), mean across seeds as lines with markers and a shaded 95 % CI band; one line per flow
  (and per value of any other varied key), aggregated over flows when that would be more than
  10 lines.
- `ampdu`: A-MPDU size histograms (share of PPDUs carrying n MPDUs) per station and direction,
  of ONE run.

Labels say what is measured: a ping flow's delay is its round-trip time ("RTT"), every other
flow's is one-way; cross traffic on the wired path (`direction = "cross"`) is named "cross
traffic", never by a station. `cdf` across runs and `box` keep data flows, ping flows and
cross traffic apart (flow classes) instead of pooling them.

Colours are the Okabe-Ito colour-blind-safe palette; beyond 8 series the line style changes.
`validate_plot(...)` checks the arguments without drawing (so the CLI fails before writing
anything). The shared parts — style, the table of series, labels, output — are in
`plot_common.py`; the names above are all importable from here. Output: `figure_bytes(fig, fmt)` ("png", "svg" or "pdf"), `save_figure(fig, path)`
(format by the file suffix, written atomically), `png_bytes(fig)`, `save_png(fig, path)`.
"""

from __future__ import annotations

import math
from typing import Any

import matplotlib
from matplotlib.figure import Figure
from matplotlib.ticker import FixedLocator, FuncFormatter, NullLocator

from .analysis import Results, _is_number, aggregate, metric
from .errors import UserError
from .plot_common import (DPI, FORMATS, KINDS, MAX_SERIES, PALETTE, PER_RUN, SERIES,
                          SERIES_ALIASES, STYLE, Series, _Line, _as_results, _class_label,
                          _delay_labels, _figure, _first_run, _flow_label_row, _flows_split,
                          _key_axis, _legend, _metric_axis, _no_samples, _over_flows,
                          _per_run_values, _point_values, _row_class, _run_title, _seeds_note,
                          _station_label, figure_bytes, flow_kind, flow_label, latency_name,
                          output_format, png_bytes, resolve_series, results_from_doc, save_figure,
                          save_png, series_names, series_style, style, x_key)

__all__ = ["KINDS", "SERIES", "SERIES_ALIASES", "FORMATS", "PALETTE", "DPI", "STYLE", "Series",
           "style", "make_plot", "validate_plot", "results_from_doc", "series_names",
           "resolve_series", "flow_kind", "flow_label", "plot_timeseries", "plot_all",
           "plot_cdf", "plot_box", "plot_bar", "plot_xy", "plot_ampdu", "figure_bytes",
           "save_figure", "png_bytes", "save_png", "series_style", "output_format"]


def validate_plot(res: Results, kind: str, metric_name: str | None = None,
                  x: str | None = None) -> None:
    """Raise UserError if the plot cannot be drawn from `res`; draw nothing."""
    if kind not in KINDS:
        raise UserError(f"--kind {kind}: one of {', '.join(KINDS)}")
    if x is not None and kind != "xy":
        raise UserError("--x is only for --kind xy")
    if kind in ("timeseries", "ampdu", "all"):
        if kind != "timeseries" and metric_name is not None:
            raise UserError(f"--metric does not apply to --kind {kind}")
        point, seed = res.first_run()
        doc = res.load_run(point, seed)
        if kind != "ampdu" and not (doc.get("data") or {}).get("timeseries"):
            raise UserError(f"{res.files.get((point, seed), res.source)}: no time series")
        if kind == "timeseries":
            resolve_series(doc, metric_name)
        return
    if metric_name is not None:
        metric(metric_name)
    if kind == "xy":
        x_key(res, x)
    if not res.rows:
        raise UserError(f"{res.source}: no flows to plot")


def make_plot(res: Results, kind: str, metric_name: str | None = None, x: str | None = None
              ) -> Figure:
    validate_plot(res, kind, metric_name, x)
    if kind == "timeseries":
        return plot_timeseries(res, metric_name)
    if kind == "all":
        return plot_all(res)
    if kind == "cdf":
        return plot_cdf(res, metric_name)
    if kind == "box":
        return plot_box(res, metric_name or "goodput_bps")
    if kind == "bar":
        return plot_bar(res, metric_name or "goodput_bps")
    if kind == "xy":
        return plot_xy(res, metric_name or "goodput_bps", x)
    return plot_ampdu(res)


def plot_timeseries(res: Results | dict[str, Any], metric_name: str | None = None) -> Figure:
    """One stored time series (name or alias, default goodput) of the first run of `res` (or
    of a result document), one line per flow, station or node with samples."""
    res = _as_results(res)
    run = _first_run(res)
    key, info = resolve_series(run.doc, metric_name)
    lines = run.lines(key, info)
    ylabel, mark = info.axis_label(), False
    if key == "flow_delay_mean_ns" and lines:
        ylabel, mark = _delay_labels(lines)
    with style():
        fig = _figure()
        ax = fig.add_subplot()
        warm = run.shade_warmup(ax)
        for n, ln in enumerate(lines):
            label = ln.label + (f" — {latency_name(ln.kind)}" if mark else "")
            run.plot(ax, ln, label=label, **series_style(n))
        if not lines:
            _no_samples(ax, info)
        ax.set_xlabel("simulated time (s)")
        ax.set_ylabel(ylabel)
        ax.set_xlim(0, run.t_end)
        if info.nonneg and lines:
            ax.set_ylim(bottom=0)
        what = ylabel.split(" (")[0] if key == "flow_delay_mean_ns" else info.label
        ax.set_title(f"{what[0].upper()}{what[1:]} per {info.entity}, "
                     f"{run.bin_ns * 1e-6:g} ms bins — {run.title}")
        _legend(ax, len(lines) + (1 if warm and lines else 0))
    return fig


DIRECTION_STYLE = {"down": "-", "up": "--", "cross": ":"}


def _flow_style(ln: _Line) -> dict[str, Any]:
    st: dict[str, Any] = {"color": PALETTE[ln.index % len(PALETTE)],
                          "linestyle": DIRECTION_STYLE.get(ln.direction, "-")}
    if ln.index >= len(PALETTE):
        st.update(marker="os^v"[(ln.index // len(PALETTE) - 1) % 4], markersize=3.5,
                  markevery=max(1, len(ln.values) // 12))
    return st


def plot_all(res: Results | dict[str, Any]) -> Figure:
    """The combined view of the first run of `res` (or of a result document), on one time
    axis: goodput per flow (downlink solid, uplink dashed, cross traffic dotted), latency per
    flow (RTT for ping flows, one-way delay for the others), then, when the run has them, the
    congestion window of TCP/QUIC flows and the backlog of the AP's and relays' queues."""
    res = _as_results(res)
    run = _first_run(res)
    ts = run.ts
    good = run.lines("flow_goodput_bps", SERIES["flow_goodput_bps"])
    good = [ln for ln in good if ln.kind != "ping"]   # a ping's bytes are not a throughput
    lat = run.lines("flow_delay_mean_ns", SERIES["flow_delay_mean_ns"])
    panels: list[tuple[str, list[_Line]]] = [("goodput", good), ("latency", lat)]
    cwnd = run.lines("flow_cwnd_bytes", SERIES["flow_cwnd_bytes"]) if "flow_cwnd_bytes" in ts \
        else []
    if cwnd:
        panels.append(("cwnd", cwnd))
    backlog = run.lines("node_backlog_packets", SERIES["node_backlog_packets"]) \
        if "node_backlog_packets" in ts else []
    if backlog:
        panels.append(("backlog", backlog))
    limits = {ln.index: ln for ln in run.lines("node_queue_limit", SERIES["node_queue_limit"])
              } if "node_queue_limit" in ts else {}
    heights = [1.25, 1.25] + [1.0] * (len(panels) - 2)
    with style():
        fig = _figure(10.0, 0.9 + sum(2.2 * h for h in heights))
        axes = fig.subplots(len(panels), 1, sharex=True, squeeze=False,
                            gridspec_kw={"height_ratios": heights})[:, 0]
        for p, (ax, (what, lines)) in enumerate(zip(axes, panels)):
            run.shade_warmup(ax, label=p == 0)
            n = 0
            for ln in lines:
                st = _flow_style(ln) if what != "backlog" else series_style(ln.index)
                label = ln.label
                if what == "latency":
                    label += f" — {latency_name(ln.kind)}"
                    if ln.kind == "ping":
                        st.update(marker="o", markersize=3.5, linestyle="-", linewidth=1.0,
                                  markevery=max(1, len(ln.values) // 25))
                run.plot(ax, ln, label=label, **st)
                n += 1
                lim = limits.get(ln.index) if what == "backlog" else None
                if lim is not None:
                    finite = {v for v in lim.values if not math.isnan(v)}
                    if len(finite) > 1:   # only a moving limit (a buffer sizer) is worth a line
                        run.plot(ax, lim, color=st["color"], linestyle=":", linewidth=1.0,
                                 label=f"{ln.label} limit")
                        n += 1
            if what == "goodput":
                ax.set_ylabel("goodput (Mb/s)")
                present = {ln.direction for ln in lines}
                keys = [f"{name}: {d}" for name, d, d_ in (
                    ("solid", "downlink", "down"), ("dashed", "uplink", "up"),
                    ("dotted", "cross traffic", "cross")) if d_ in present]
                ax.set_title("Goodput per flow" + (f" ({', '.join(keys)})" if len(keys) > 1
                                                   else ""), fontsize=10)
            elif what == "latency":
                kinds = {ln.kind for ln in lines}
                ax.set_ylabel("RTT (ms)" if kinds == {"ping"} else "one-way delay (ms)"
                              if "ping" not in kinds else "latency (ms)")
                ax.set_title("Latency per flow: " + (
                    "RTT of ping flows, one-way delay of the others" if "ping" in kinds
                    and kinds != {"ping"} else "RTT (ping)" if kinds == {"ping"}
                    else "one-way delay") + " (mean per bin)", fontsize=10)
            elif what == "cwnd":
                ax.set_ylabel("cwnd (kB)")
                ax.set_title("Congestion window of TCP/QUIC flows (end of each bin)",
                             fontsize=10)
            else:
                ax.set_ylabel("backlog (packets)")
                ax.set_title("Queue backlog (mean of the samples in each bin)", fontsize=10)
            if not lines:
                ax.text(0.5, 0.5, "no samples", ha="center", va="center",
                        transform=ax.transAxes, color="#555555")
            else:
                ax.set_ylim(bottom=0)
            ax.set_xlim(0, run.t_end)
            if n:
                ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize=8,
                          ncol=1 if n <= 12 else 2)
        axes[-1].set_xlabel("simulated time (s)")
        fig.align_ylabels(list(axes))
        fig.suptitle(f"{run.title} — {run.bin_ns * 1e-6:g} ms bins"
                     + (", warmup shaded" if run.warmup > 0 else ""), fontweight="bold",
                     fontsize=11)
    return fig


NINES = [(0.5, "p50"), (0.95, "p95"), (0.99, "p99")]


def _nines(q: float) -> float:
    return -math.log10(1.0 - q)


def _classes_of(res: Results, m: str) -> list[str]:
    present = {_row_class(r, m) for r in res.rows}
    return [c for c in ("data", "ping", "cross", "run") if c in present]


def _finite_value(r: dict[str, Any], m: str) -> float | None:
    v = r.get(m)
    if v is None or isinstance(v, bool) or (isinstance(v, float) and math.isnan(v)):
        return None
    return float(v)


def _class_values(res: Results, m: str) -> dict[tuple[int, str], list[float]]:
    """Values of table metric `m` per (grid point, flow class): one per flow and run (one per
    run for the per-run metrics)."""
    out: dict[tuple[int, str], list[float]] = {}
    seen: set[tuple[int, int]] = set()
    for r in res.rows:
        v = _finite_value(r, m)
        if v is None:
            continue
        if m in PER_RUN:
            run = (int(r["point"]), int(r["seed"]))
            if run in seen:
                continue
            seen.add(run)
        out.setdefault((int(r["point"]), _row_class(r, m)), []).append(v)
    return out


CLASS_STYLE = {"data": "-", "ping": "--", "cross": ":"}


def plot_cdf(res: Results | dict[str, Any], metric_name: str | None = None) -> Figure:
    res = _as_results(res)
    if metric_name is None and len(res.runs) == 1:
        return _plot_quantiles(res)
    m = metric(metric_name or "delay_p99_ms")
    groups = _class_values(res, m.name)
    classes = _classes_of(res, m.name)
    with style():
        fig = _figure()
        ax = fig.add_subplot()
        all_vals = [v * m.scale for vs in groups.values() for v in vs]
        for i, ((point, cls), raw) in enumerate(sorted(
                groups.items(), key=lambda kv: (kv[0][0], classes.index(kv[0][1])))):
            vals = sorted(v * m.scale for v in raw)
            n = len(vals)
            xs = [vals[0]] + vals
            ys = [0.0] + [(k + 1) / n for k in range(n)]
            parts = [res.point_label(point)] if len(res.points) > 1 else []
            if len(classes) > 1 or not parts:
                parts.append(_class_label(cls, m.name))
            if len(classes) > 1:   # colour: grid point; line style: flow class
                st = {"color": PALETTE[res.points.index(point) % len(PALETTE)],
                      "linestyle": CLASS_STYLE.get(cls, "-")}
            else:
                st = series_style(i)
            ax.step(xs, ys, where="post", label=f"{', '.join(parts)} (n={n})", **st)
        if all_vals and min(all_vals) > 0 and max(all_vals) / min(all_vals) > 50:
            ax.set_xscale("log")
        ax.set_ylim(0, 1.02)
        ax.set_xlabel(_metric_axis(m, set(classes)))
        ax.set_ylabel("fraction of runs" if m.name in PER_RUN else "fraction of flows × runs")
        ax.set_title(f"CDF of {m.label} across " + ("seeds" if m.name in PER_RUN
                                                    else "flows and seeds"))
        _legend(ax, len(groups))
    return fig


def _plot_quantiles(res: Results) -> Figure:
    point, seed = res.runs[0]
    rows = [r for r in res.rows if r["point"] == point and r["seed"] == seed]
    with style():
        fig = _figure()
        ax = fig.add_subplot()
        y_max = _nines(0.99) + 0.7
        ys = [_nines(q) for q, _ in NINES] + [y_max]
        all_x = []
        kinds = set()
        drawn = []
        for r in rows:
            xs = [r.get(f"delay_{k}_ms") for k in ("p50", "p95", "p99", "max")]
            if any(v is None for v in xs):
                continue
            drawn.append((r, xs))
            kinds.add(flow_kind(r))
        mark = "ping" in kinds and len(kinds - {"ping"}) > 0
        for i, (r, xs) in enumerate(drawn):
            all_x += xs
            st = series_style(i)
            label = _flow_label_row(r) + (f" — {latency_name(flow_kind(r))}" if mark else "")
            ax.plot(xs, ys, linestyle=":", color=st["color"], linewidth=1.2)
            ax.plot(xs, ys, linestyle="none", marker="o", color=st["color"], label=label)
        ax.yaxis.set_major_locator(FixedLocator(ys))
        ax.yaxis.set_minor_locator(NullLocator())
        ax.yaxis.set_major_formatter(FuncFormatter(
            lambda v, _pos: {round(y, 6): lab for y, lab in zip(ys, ["50 %", "95 %", "99 %",
                                                                       "100 % (max)"])}
            .get(round(v, 6), "")))
        ax.set_ylim(0, y_max + 0.25)
        if all_x and min(all_x) > 0 and max(all_x) / min(all_x) > 20:
            ax.set_xscale("log")
        if kinds == {"ping"}:
            what, xlabel = "RTT", "RTT (ms)"
        elif "ping" in kinds:
            what, xlabel = "Delay", "delay (ms): one-way; RTT for ping flows"
        else:
            what, xlabel = "One-way delay", "one-way delay (ms)"
        ax.set_xlabel(xlabel)
        ax.set_ylabel("fraction of packets with delay ≤ x")
        ax.set_title(f"{what} distribution per flow — {_run_title(res, point, seed)}")
        ax.text(0.99, 0.02, "points: the stored quantiles p50/p95/p99/max; dotted lines only "
                "guide the eye", transform=ax.transAxes, ha="right", va="bottom", fontsize=7.5,
                color="#555555")
        _legend(ax, len(drawn))
    return fig


def _strip_offsets(n: int, width: float) -> list[float]:
    """Deterministic horizontal offsets for `n` dots inside a box of `width`."""
    if n <= 1:
        return [0.0] * n
    half = width * 0.35
    # A low-discrepancy sequence (golden ratio) spreads the dots evenly without randomness.
    return [((k * 0.6180339887498949) % 1.0 * 2.0 - 1.0) * half for k in range(n)]


def plot_box(res: Results | dict[str, Any], metric_name: str = "goodput_bps") -> Figure:
    """Box plots of table metric `metric_name` per grid point over seeds and flows (one box per
    flow class present: data flows, ping flows, cross traffic), with every value as a dot."""
    res = _as_results(res)
    m = metric(metric_name)
    groups = _class_values(res, m.name)
    classes = _classes_of(res, m.name)
    points = res.points
    labels = [_point_values(res, p) for p in points] if res.varied else ["all runs"]
    k = max(1, len(classes))
    group_w = 0.8
    box_w = group_w / k
    width_in = min(16.0, max(7.0, 1.5 + 0.45 * len(points) * k))
    with style():
        fig = _figure(width_in, 4.8)
        ax = fig.add_subplot()
        for j, cls in enumerate(classes):
            color = PALETTE[j % len(PALETTE)]
            data, pos = [], []
            for i, p in enumerate(points):
                vals = [v * m.scale for v in groups.get((p, cls), [])]
                if not vals:
                    continue
                data.append(vals)
                pos.append(i - group_w / 2 + box_w * (j + 0.5))
            if not data:
                continue
            ax.boxplot(data, positions=pos, widths=box_w * 0.75, patch_artist=True,
                       manage_ticks=False, showfliers=False,
                       boxprops={"facecolor": color, "alpha": 0.35, "edgecolor": color},
                       medianprops={"color": color, "linewidth": 2.0},
                       whiskerprops={"color": color}, capprops={"color": color})
            for x0, vals in zip(pos, data):
                offs = _strip_offsets(len(vals), box_w * 0.75)
                ax.plot([x0 + o for o in offs], vals, linestyle="none", marker="o",
                        markersize=3, color=color, alpha=0.8)
            n = sum(len(v) for v in data)
            ax.plot([], [], linestyle="none", marker="s", markersize=8, color=color,
                    alpha=0.6, label=f"{_class_label(cls, m.name)} (n={n})")
        ax.set_xticks(range(len(points)))
        rot = 0 if max(len(s) for s in labels) * len(points) < 80 else 30
        ax.set_xticklabels(labels, rotation=rot, ha="right" if rot else "center")
        ax.set_xlim(-0.6, len(points) - 0.4)
        if res.varied:
            ax.set_xlabel(", ".join(res.varied))
        ax.grid(axis="x", visible=False)
        ax.set_ylabel(_metric_axis(m, set(classes)))
        over = "seeds" if m.name in PER_RUN else "seeds and flows"
        ax.set_title(f"{m.label[0].upper()}{m.label[1:]} per grid point across {over} "
                     f"({len(res.seeds)} seed{'s' if len(res.seeds) != 1 else ''})")
        ax.text(0.99, 0.99, "box: quartiles and median; whiskers: 1.5 IQR; dots: values",
                transform=ax.transAxes, ha="right", va="top", fontsize=7.5, color="#555555")
        ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0))
    return fig


def plot_bar(res: Results | dict[str, Any], metric_name: str = "goodput_bps") -> Figure:
    res = _as_results(res)
    m = metric(metric_name)
    split = _flows_split(res, m.name)
    points = res.points
    labels = [_point_values(res, p) for p in points]
    flows = sorted({r["flow"] for r in res.rows}) if split else [None]
    rows_by: dict[tuple[int, Any], list[dict[str, Any]]] = {}
    for r in res.rows:
        rows_by.setdefault((r["point"], r["flow"] if split else None), []).append(r)
    width_in = min(16.0, max(7.0, 0.5 + 0.28 * len(points) * len(flows) + 0.3 * len(points)))
    with style():
        fig = _figure(width_in, 4.8)
        ax = fig.add_subplot()
        group_w = 0.8
        bar_w = group_w / len(flows)
        for j, flow in enumerate(flows):
            xs, means, errs = [], [], []
            for i, p in enumerate(points):
                per_seed = _per_run_values(rows_by.get((p, flow), []), m.name, by_flow=split)
                a = aggregate(v for vs in per_seed.values() for v in vs)
                xs.append(i - group_w / 2 + bar_w * (j + 0.5))
                means.append(a.mean * m.scale if a.n else math.nan)
                errs.append(a.ci95 * m.scale if a.n > 1 else 0.0)
            if split:
                sample = next((r for r in res.rows if r["flow"] == flow), None)
                lab = _flow_label_row(sample) if sample else f"flow {flow}"
            else:
                lab = _over_flows(m.name) if m.name not in PER_RUN else None
            ax.bar(xs, means, bar_w * 0.92, yerr=errs, capsize=3 if bar_w > 0.1 else 1,
                   label=lab, color=PALETTE[j % len(PALETTE)],
                   error_kw={"elinewidth": 1.0, "ecolor": "#333333"})
        ax.set_xticks(range(len(points)))
        if res.varied:
            rot = 0 if max(len(s) for s in labels) * len(points) < 80 else 30
            ax.set_xticklabels(labels, rotation=rot, ha="right" if rot else "center")
            ax.set_xlabel(", ".join(res.varied))
        else:
            ax.set_xticklabels(["" for _ in points])
            ax.tick_params(axis="x", length=0)
        ax.grid(axis="x", visible=False)
        ax.set_ylabel(_metric_axis(m, {flow_kind(r) for r in res.rows}))
        ax.set_title(f"{m.label[0].upper()}{m.label[1:]} ({_seeds_note(res)})")
        if split or m.name not in PER_RUN:
            _legend(ax, len(flows))
    return fig


def plot_xy(res: Results | dict[str, Any], metric_name: str = "goodput_bps",
            x: str | None = None) -> Figure:
    res = _as_results(res)
    m = metric(metric_name)
    key = x_key(res, x)
    xlabel, xscale = _key_axis(res, key)
    # Other varied keys that take several values at one x value make separate lines.
    others = []
    for k in res.varied:
        if k == key:
            continue
        per_x: dict[Any, set] = {}
        for r in res.rows:
            per_x.setdefault(r[key], set()).add(r[k])
        if any(len(v) > 1 for v in per_x.values()):
            others.append(k)
    combo_order: dict[tuple, tuple] = {}
    for r in res.rows:
        combo_order.setdefault(tuple(r[k] for k in others), tuple(
            (0, float(r[k]), "") if _is_number(r[k]) else (1, 0.0, res.text(r, k))
            for k in others))
    combos = sorted(combo_order, key=lambda c: combo_order[c])
    flows: list[Any] = sorted({r["flow"] for r in res.rows})
    split = _flows_split(res, m.name) and len(combos) * len(flows) <= MAX_SERIES
    if not split:
        flows = [None]
    series = [(c, f) for c in combos for f in flows]
    with style():
        fig = _figure()
        ax = fig.add_subplot()
        all_x: list[float] = []
        for i, (combo, flow) in enumerate(series):
            rows = [r for r in res.rows if tuple(r[k] for k in others) == combo
                    and (flow is None or r["flow"] == flow)]
            by_x: dict[float, list[dict[str, Any]]] = {}
            for r in rows:
                by_x.setdefault(float(r[key]), []).append(r)
            xs, mean, lo, hi = [], [], [], []
            for xv in sorted(by_x):
                per_seed = _per_run_values(by_x[xv], m.name, by_flow=flow is not None)
                a = aggregate(v for vs in per_seed.values() for v in vs)
                if not a.n:
                    continue
                ci = a.ci95 if a.n > 1 else 0.0
                xs.append(xv * xscale)
                mean.append(a.mean * m.scale)
                lo.append((a.mean - ci) * m.scale)
                hi.append((a.mean + ci) * m.scale)
            all_x += xs
            parts = [f"{k}={res.text(rows[0], k) if rows else v}" for k, v in zip(others, combo)]
            if flow is not None:
                parts.append(_flow_label_row(rows[0]) if rows else f"flow {flow}")
            elif m.name not in PER_RUN:
                parts.append(_over_flows(m.name))
            st = series_style(i)
            ax.plot(xs, mean, marker="o", markersize=4, label=", ".join(parts) or None, **st)
            ax.fill_between(xs, lo, hi, color=st["color"], alpha=0.18, lw=0)
        pos = sorted(set(all_x))
        if pos and pos[0] > 0 and pos[-1] / pos[0] >= 16:
            ax.set_xscale("log", base=2 if all(float(v).is_integer() for v in pos) else 10)
            if len(pos) <= 12:
                ax.xaxis.set_major_locator(FixedLocator(pos))
                ax.xaxis.set_minor_locator(NullLocator())
                ax.xaxis.set_major_formatter(FuncFormatter(lambda v, _p: f"{v:g}"))
        ax.set_xlabel(xlabel)
        ax.set_ylabel(_metric_axis(m, {flow_kind(r) for r in res.rows}))
        ax.set_title(f"{m.label[0].upper()}{m.label[1:]} vs {key} ({_seeds_note(res)})")
        _legend(ax, len([h for h in ax.get_lines() if not h.get_label().startswith("_")]))
    return fig


def plot_ampdu(res: Results | dict[str, Any], max_stations: int = 16) -> Figure:
    res = _as_results(res)
    point, seed = res.first_run()
    doc = res.load_run(point, seed)
    stations = [s for s in (doc.get("data") or {}).get("stations") or []
                if sum(s.get("ampdu_hist_down") or []) + sum(s.get("ampdu_hist_up") or []) > 0]
    shown = stations[:max_stations]
    n = max(1, len(shown))
    cols = min(4, n)
    rows = math.ceil(n / cols)
    with style():
        fig = _figure(max(7.0, 3.2 * cols), 2.6 * rows + 0.8)
        title = f"A-MPDU sizes per station — {_run_title(res, point, seed)}"
        if len(stations) > len(shown):
            title += f" (first {len(shown)} of {len(stations)} stations)"
        fig.suptitle(title, fontweight="bold", fontsize=11)
        if not shown:
            ax = fig.add_subplot()
            ax.text(0.5, 0.5, "no PPDU after warmup", ha="center", va="center")
            ax.set_axis_off()
            return fig
        axes = fig.subplots(rows, cols, squeeze=False)
        for idx, ax in enumerate(axes.flat):
            if idx >= len(shown):
                ax.set_axis_off()
                continue
            s = shown[idx]
            top = 1
            for d, (direction, off) in enumerate([("down", -0.2), ("up", 0.2)]):
                h = s.get(f"ampdu_hist_{direction}") or []
                total = sum(h)
                if not total:
                    continue
                xs = [k for k in range(1, len(h)) if h[k]]
                top = max(top, max(xs))
                mean = s.get(f"mean_ampdu_{direction}")
                lab = f"{direction}: {total} PPDUs" + (f", mean {mean:.1f}"
                                                       if isinstance(mean, float) else "")
                ax.bar([k + off for k in xs], [100.0 * h[k] / total for k in xs], 0.4,
                       color=PALETTE[d], label=lab)
            ax.set_xlim(0.3, top + 0.7)
            ax.set_title(_station_label(s, idx), fontsize=10)
            ax.set_xlabel("MPDUs per A-MPDU")
            ax.set_ylabel("share of PPDUs (%)")
            ax.grid(axis="x", visible=False)
            ax.legend(loc="upper right", fontsize=7.5)
    return fig
