"""Plots of results (docs/experiments.md, "Analysis from files"), drawn with matplotlib's Agg
backend into `matplotlib.figure.Figure` objects (no pyplot state), deterministically: fixed DPI,
fixed fonts and style, `svg.hashsalt` set, no software/date metadata in the PNG.

Kinds (`make_plot(res, kind, metric=None, x=None)`):

- `timeseries`: one metric per time bin of ONE run (the first run of a multi-run input):
  `goodput` (per flow, Mb/s), `delay` (per-bin mean one-way delay per flow, ms; bins with no
  delivery are gaps, not zeros), `ampdu` (mean MPDUs per downlink A-MPDU per station; bins
  without a PPDU are gaps) or `airtime` (share of each bin per station, %). The warmup is
  shaded. The table metric names `goodput_bps`, `delay_mean_ms`, `mean_ampdu`,
  `airtime_frac` are accepted too.
- `cdf`: delay distribution. Result files keep only p50, p95, p99 and max of each flow's
  per-packet delay (the full histogram is not stored), so without `--metric` and for one run
  the plot shows exactly those four points of each flow's CDF on a "nines" probability axis,
  joined by dotted lines only to guide the eye; nothing between them is drawn as data. With
  several runs, or with `--metric M`, it is the empirical CDF of M (default `delay_p99_ms`)
  across flows and seeds, one step curve per grid point.
- `bar`: a table metric per grid point (and per flow, up to 10 flows; otherwise the total over
  flows for goodput/offered load and the mean over flows for the rest), mean across seeds with
  95 % Student-t CI error bars.
- `xy`: a table metric against a numeric varied key `--x KEY` (default: the first numeric
  one), mean across seeds as lines with markers and a shaded 95 % CI band; one line per flow
  (and per value of any other varied key), aggregated over flows when that would be more than
  10 lines.
- `ampdu`: A-MPDU size histograms (share of PPDUs carrying n MPDUs) per station and direction,
  of ONE run.

Colours are the Okabe-Ito colour-blind-safe palette; beyond 8 series the line style changes.
`validate_plot(...)` checks the arguments without drawing (so the CLI fails before writing
anything); `save_png(fig, path)` writes atomically; `png_bytes(fig)` returns the PNG.
"""

from __future__ import annotations

import io
import math
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Iterator, Sequence

import matplotlib

matplotlib.use("Agg", force=False)

from matplotlib.figure import Figure  # noqa: E402
from matplotlib.ticker import FixedLocator, FuncFormatter, NullLocator  # noqa: E402

from .analysis import METRICS, Results, aggregate, metric  # noqa: E402
from .cli import UserError  # noqa: E402
from .results import write_atomic

__all__ = ["KINDS", "TS_METRICS", "PALETTE", "DPI", "STYLE", "style", "make_plot",
           "validate_plot", "plot_timeseries", "plot_cdf", "plot_bar", "plot_xy", "plot_ampdu",
           "png_bytes", "save_png", "series_style"]

KINDS = ["timeseries", "cdf", "bar", "ampdu", "xy"]
DPI = 100
MAX_SERIES = 10

# Okabe & Ito (2008), colour-blind safe; yellow last (low contrast on white).
PALETTE = ["#0072B2", "#E69F00", "#009E73", "#D55E00", "#CC79A7", "#56B4E9", "#000000",
           "#F0E442"]
LINESTYLES = ["-", "--", ":", "-."]

STYLE: dict[str, Any] = {
    "svg.hashsalt": "lasthop",
    "figure.dpi": DPI,
    "savefig.dpi": DPI,
    "font.family": "DejaVu Sans",
    "font.size": 10,
    "axes.titlesize": 11,
    "axes.titleweight": "bold",
    "axes.labelsize": 10,
    "axes.grid": True,
    "grid.alpha": 0.35,
    "grid.linewidth": 0.6,
    "axes.spines.top": False,
    "axes.spines.right": False,
    "axes.prop_cycle": matplotlib.cycler(color=PALETTE),
    "legend.fontsize": 8.5,
    "legend.frameon": False,
    "lines.linewidth": 1.6,
    "figure.facecolor": "white",
    "savefig.facecolor": "white",
    "path.simplify": True,
}

# name -> (timeseries key(s), per "flow"|"station", label, unit, scale)
TS_METRICS: dict[str, tuple[tuple[str, ...], str, str, str, float]] = {
    "goodput": (("flow_goodput_bps",), "flow", "goodput", "Mb/s", 1e-6),
    "delay": (("flow_delay_mean_ns",), "flow", "mean one-way delay", "ms", 1e-6),
    "ampdu": (("station_mean_ampdu_down",), "station", "mean downlink A-MPDU size", "MPDUs",
              1.0),
    "airtime": (("station_airtime_frac", "station_airtime_tx_frac"), "station",
                "airtime share", "%", 100.0),
}
TS_ALIASES = {"goodput_bps": "goodput", "delay_mean_ms": "delay", "mean_ampdu": "ampdu",
              "airtime_frac": "airtime"}
SUMMED = {"goodput_bps", "offered_bps"}          # aggregated over flows by sum, else mean
PER_RUN = {"busy_frac", "collisions"}            # the same for every flow of a run


@contextmanager
def style() -> Iterator[None]:
    with matplotlib.rc_context(STYLE):
        yield


def series_style(i: int) -> dict[str, Any]:
    return {"color": PALETTE[i % len(PALETTE)],
            "linestyle": LINESTYLES[(i // len(PALETTE)) % len(LINESTYLES)]}


def _figure(width: float = 8.0, height: float = 4.5) -> Figure:
    return Figure(figsize=(width, height), dpi=DPI, layout="constrained")


def _legend(ax: Any, n: int, title: str | None = None) -> None:
    if n == 0:
        return
    if n <= 4:
        ax.legend(title=title, loc="best")
    else:
        ax.legend(title=title, loc="upper left", bbox_to_anchor=(1.01, 1.0),
                  ncol=1 if n <= 16 else 2)


def png_bytes(fig: Figure) -> bytes:
    buf = io.BytesIO()
    with style():
        fig.savefig(buf, format="png", dpi=DPI, metadata={"Software": None})
    return buf.getvalue()


def save_png(fig: Figure, path: str | Path) -> Path:
    """Write `fig` as PNG to `path` atomically, so the file is complete or absent."""
    return write_atomic(path, png_bytes(fig))

# ---------------------------------------------------------------------------------------------
# Argument checks


def ts_metric(name: str | None) -> str:
    name = name or "goodput"
    name = TS_ALIASES.get(name, name)
    if name not in TS_METRICS:
        raise UserError(f"--metric {name}: not a time series; one of "
                        f"{', '.join(TS_METRICS)} (or {', '.join(TS_ALIASES)})")
    return name


def x_key(res: Results, x: str | None) -> str:
    numeric = res.numeric_keys()
    if x is None:
        if not numeric:
            raise UserError(f"{res.source}: an x–y plot needs a numeric varied key, and there "
                            "is none" + (f" (varied: {', '.join(res.varied)})" if res.varied
                                         else ""))
        return numeric[0]
    key = x[:-4] if x.endswith("#num") else x
    if key not in res.varied:
        raise UserError(f"--x {x}: not a varied key; "
                        + (f"one of {', '.join(res.varied)}" if res.varied
                           else "these results vary no key"))
    if key not in numeric:
        raise UserError(f"--x {x}: values are not all numeric")
    return key


def validate_plot(res: Results, kind: str, metric_name: str | None = None,
                  x: str | None = None) -> None:
    """Raise UserError if the plot cannot be drawn from `res`; draw nothing."""
    if kind not in KINDS:
        raise UserError(f"--kind {kind}: one of {', '.join(KINDS)}")
    if x is not None and kind != "xy":
        raise UserError(f"--x is only for --kind xy")
    if kind in ("timeseries", "ampdu"):
        if kind == "timeseries":
            ts_metric(metric_name)
        elif metric_name is not None:
            raise UserError("--metric does not apply to --kind ampdu")
        point, seed = res.first_run()
        doc = res.load_run(point, seed)
        if kind == "timeseries" and not (doc.get("data") or {}).get("timeseries"):
            raise UserError(f"{res.files.get((point, seed), res.source)}: no time series")
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
    if kind == "cdf":
        return plot_cdf(res, metric_name)
    if kind == "bar":
        return plot_bar(res, metric_name or "goodput_bps")
    if kind == "xy":
        return plot_xy(res, metric_name or "goodput_bps", x)
    return plot_ampdu(res)


# ---------------------------------------------------------------------------------------------
# Helpers


def _run_title(res: Results, point: int, seed: int) -> str:
    doc = res.load_run(point, seed)
    name = (doc.get("spec") or {}).get("name", "?")
    extra = f", {res.point_label(point)}" if res.varied and len(res.points) > 1 else ""
    return f"{name}, seed {seed}{extra}"


def _flow_label(f: dict[str, Any], i: int) -> str:
    return (f"flow {f.get('id', i)} (sta {f.get('station', '?')}, {f.get('direction', '?')}, "
            f"{f.get('pattern', '?')})")


def _flow_label_row(r: dict[str, Any]) -> str:
    return f"flow {r['flow']} (sta {r['station']}, {r['direction']})"


def _per_run_values(rows: Sequence[dict[str, Any]], m: str, by_flow: bool
                    ) -> dict[Any, list[float]]:
    """Values of metric `m` per seed (one per run; flows summed/averaged unless by_flow)."""
    per_seed: dict[int, list[float]] = {}
    for r in rows:
        v = r.get(m)
        if v is None or (isinstance(v, float) and math.isnan(v)):
            continue
        per_seed.setdefault(int(r["seed"]), []).append(float(v))
    out = {}
    for s, xs in per_seed.items():
        if by_flow or m in PER_RUN:
            out[s] = [xs[0]] if m in PER_RUN else xs
        elif m in SUMMED:
            out[s] = [math.fsum(xs)]
        else:
            out[s] = [math.fsum(xs) / len(xs)]
    return out


def _flows_split(res: Results, m: str) -> bool:
    """Whether plots show one series per flow for metric `m`."""
    n_flows = len({r["flow"] for r in res.rows})
    return m not in PER_RUN and n_flows <= MAX_SERIES


def _over_flows(m: str) -> str:
    return "total over flows" if m in SUMMED else "mean over flows"


def _seeds_note(res: Results) -> str:
    n = len(res.seeds)
    return f"mean ± 95 % CI over {n} seeds" if n > 1 else "1 seed: no confidence interval"


def _point_values(res: Results, point: int) -> str:
    for r in res.rows:
        if r["point"] == point:
            return ", ".join(str(r[k]) for k in res.varied)
    return str(point)


def _key_axis(res: Results, key: str) -> tuple[str, float]:
    """Axis label and scale for a numeric varied key (guessing bit/s and ns units)."""
    texts = [str(r.get(key, "")) for r in res.rows]
    low = key.lower()
    if any(t.endswith("bps") for t in texts) or low.endswith("_bps"):
        return f"{key} (Mb/s)", 1e-6
    if low.endswith("_ns") or (texts and all(t.endswith("s") and not t.endswith("bps")
                                            and any(ch.isdigit() for ch in t) for t in texts)):
        return f"{key} (ms)", 1e-6
    return key, 1.0


# ---------------------------------------------------------------------------------------------
# Plots


def plot_timeseries(res: Results, metric_name: str | None = None) -> Figure:
    name = ts_metric(metric_name)
    keys, per, label, unit, scale = TS_METRICS[name]
    point, seed = res.first_run()
    doc = res.load_run(point, seed)
    data = doc.get("data") or {}
    ts = data.get("timeseries") or {}
    spec = doc.get("spec") or {}
    series = next((ts[k] for k in keys if k in ts), None)
    if series is None:
        raise UserError(f"{res.files.get((point, seed), res.source)}: no {keys[0]} time series")
    bin_ns = float(ts.get("bin_ns") or 0)
    t_ns = ts.get("t_ns") or []
    t = [(v + bin_ns / 2) * 1e-9 for v in t_ns]
    goodput = ts.get("flow_goodput_bps") or []
    if per == "flow":
        items = data.get("flows") or []
        labels = [_flow_label(f, i) for i, f in enumerate(items)]
    else:
        items = data.get("stations") or []
        labels = [f"sta {s.get('id', i)} (MCS {s.get('mcs', '?')})" for i, s in enumerate(items)]
    with style():
        fig = _figure()
        ax = fig.add_subplot()
        warm = ((spec.get("sim") or {}).get("warmup_ns") or 0) * 1e-9
        if warm > 0:
            ax.axvspan(0, warm, color="#999999", alpha=0.15, lw=0, label="warmup")
        for i, ys in enumerate(series):
            vals = []
            for b, y in enumerate(ys):
                if y is None:
                    vals.append(math.nan)
                elif name == "delay" and i < len(goodput) and b < len(goodput[i]) \
                        and not goodput[i][b]:
                    vals.append(math.nan)  # no delivery in this bin: no delay sample
                elif name == "ampdu" and not y:
                    vals.append(math.nan)  # no PPDU in this bin
                else:
                    vals.append(float(y) * scale)
            lab = labels[i] if i < len(labels) else f"{per} {i}"
            ax.plot(t[:len(vals)], vals, label=lab, **series_style(i))
        ax.set_xlabel("simulated time (s)")
        ax.set_ylabel(f"{label} ({unit})")
        ax.set_xlim(0, (t_ns[-1] + bin_ns) * 1e-9 if t_ns else 1)
        if name != "delay":
            ax.set_ylim(bottom=0)
        ax.set_title(f"{label[0].upper()}{label[1:]} per {per}, {bin_ns * 1e-6:g} ms bins "
                     f"— {_run_title(res, point, seed)}")
        _legend(ax, len(series) + (1 if warm > 0 else 0))
    return fig


NINES = [(0.5, "p50"), (0.95, "p95"), (0.99, "p99")]


def _nines(q: float) -> float:
    return -math.log10(1.0 - q)


def plot_cdf(res: Results, metric_name: str | None = None) -> Figure:
    if metric_name is None and len(res.runs) == 1:
        return _plot_quantiles(res)
    m = metric(metric_name or "delay_p99_ms")
    with style():
        fig = _figure()
        ax = fig.add_subplot()
        groups: dict[int, list[float]] = {}
        for r in res.rows:
            v = r.get(m.name)
            if v is not None and not (isinstance(v, float) and math.isnan(v)):
                groups.setdefault(int(r["point"]), []).append(float(v) * m.scale)
        all_vals = [v for vs in groups.values() for v in vs]
        for i, (point, vals) in enumerate(sorted(groups.items())):
            vals.sort()
            n = len(vals)
            xs = [vals[0]] + vals
            ys = [0.0] + [(k + 1) / n for k in range(n)]
            lab = res.point_label(point) if len(groups) > 1 else f"{n} flows × runs"
            ax.step(xs, ys, where="post", label=f"{lab} (n={n})", **series_style(i))
        if all_vals and min(all_vals) > 0 and max(all_vals) / min(all_vals) > 50:
            ax.set_xscale("log")
        ax.set_ylim(0, 1.02)
        ax.set_xlabel(m.axis_label())
        ax.set_ylabel("fraction of flows (all runs)")
        ax.set_title(f"CDF of {m.label} across flows and seeds")
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
        n = 0
        for i, r in enumerate(rows):
            xs = [r.get(f"delay_{k}_ms") for k in ("p50", "p95", "p99", "max")]
            if any(v is None for v in xs):
                continue
            all_x += xs
            st = series_style(i)
            ax.plot(xs, ys, linestyle=":", color=st["color"], linewidth=1.2)
            ax.plot(xs, ys, linestyle="none", marker="o", color=st["color"],
                    label=_flow_label_row(r))
            n += 1
        ax.yaxis.set_major_locator(FixedLocator(ys))
        ax.yaxis.set_minor_locator(NullLocator())
        ax.yaxis.set_major_formatter(FuncFormatter(
            lambda v, _pos: {round(y, 6): lab for y, lab in zip(ys, ["50 %", "95 %", "99 %",
                                                                       "100 % (max)"])}
            .get(round(v, 6), "")))
        ax.set_ylim(0, y_max + 0.25)
        if all_x and min(all_x) > 0 and max(all_x) / min(all_x) > 20:
            ax.set_xscale("log")
        ax.set_xlabel("one-way delay (ms)")
        ax.set_ylabel("fraction of packets with delay ≤ x")
        ax.set_title(f"Delay distribution per flow — {_run_title(res, point, seed)}")
        ax.text(0.99, 0.02, "points: the stored quantiles p50/p95/p99/max; dotted lines only "
                "guide the eye", transform=ax.transAxes, ha="right", va="bottom", fontsize=7.5,
                color="#555555")
        _legend(ax, n)
    return fig


def plot_bar(res: Results, metric_name: str = "goodput_bps") -> Figure:
    m = metric(metric_name)
    split = _flows_split(res, m.name)
    points = res.points
    labels = [_point_values(res, p) for p in points]
    flows = sorted({r["flow"] for r in res.rows}) if split else [None]
    rows_by = {}
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
        ax.set_ylabel(m.axis_label())
        ax.set_title(f"{m.label[0].upper()}{m.label[1:]} ({_seeds_note(res)})")
        if split or m.name not in PER_RUN:
            _legend(ax, len(flows))
    return fig


def plot_xy(res: Results, metric_name: str = "goodput_bps", x: str | None = None) -> Figure:
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
            per_x.setdefault(r[f"{key}#num"], set()).add(r[k])
        if any(len(v) > 1 for v in per_x.values()):
            others.append(k)
    combo_order: dict[tuple, tuple] = {}
    for r in res.rows:
        combo_order.setdefault(tuple(r[k] for k in others), tuple(
            (0, r[f"{k}#num"], "") if r.get(f"{k}#num") is not None else (1, 0.0, str(r[k]))
            for k in others))
    combos = sorted(combo_order, key=lambda c: combo_order[c])
    flows = sorted({r["flow"] for r in res.rows})
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
                by_x.setdefault(float(r[f"{key}#num"]), []).append(r)
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
            parts = [f"{k}={v}" for k, v in zip(others, combo)]
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
        ax.set_ylabel(m.axis_label())
        ax.set_title(f"{m.label[0].upper()}{m.label[1:]} vs {key} ({_seeds_note(res)})")
        _legend(ax, len([h for h in ax.get_lines() if not h.get_label().startswith("_")]))
    return fig


def plot_ampdu(res: Results, max_stations: int = 16) -> Figure:
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
            ax.set_title(f"sta {s.get('id', idx)} (MCS {s.get('mcs', '?')})", fontsize=10)
            ax.set_xlabel("MPDUs per A-MPDU")
            ax.set_ylabel("share of PPDUs (%)")
            ax.grid(axis="x", visible=False)
            ax.legend(loc="upper right", fontsize=7.5)
    return fig
