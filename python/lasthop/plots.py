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
anything). Output: `figure_bytes(fig, fmt)` ("png", "svg" or "pdf"), `save_figure(fig, path)`
(format by the file suffix, written atomically), `png_bytes(fig)`, `save_png(fig, path)`.
"""

from __future__ import annotations

import io
import math
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterator, Sequence

import matplotlib
from matplotlib.figure import Figure
from matplotlib.ticker import FixedLocator, FuncFormatter, NullLocator

from .analysis import Results, _is_number, aggregate, metric, rows_from_result
from .errors import UserError
from .results import write_atomic

__all__ = ["KINDS", "SERIES", "SERIES_ALIASES", "FORMATS", "PALETTE", "DPI", "STYLE", "Series",
           "style", "make_plot", "validate_plot", "results_from_doc", "series_names",
           "resolve_series", "flow_kind", "flow_label", "plot_timeseries", "plot_all",
           "plot_cdf", "plot_box", "plot_bar", "plot_xy", "plot_ampdu", "figure_bytes",
           "save_figure", "png_bytes", "save_png", "series_style", "output_format"]

KINDS = ["timeseries", "all", "cdf", "box", "bar", "ampdu", "xy"]
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

# Output formats by file suffix, and the metadata that would otherwise carry the date or the
# software version (None drops the entry).
FORMATS = {".png": "png", ".svg": "svg", ".pdf": "pdf"}
_METADATA: dict[str, dict[str, Any]] = {
    "png": {"Software": None},
    "svg": {"Date": None, "Creator": None},
    "pdf": {"CreationDate": None, "ModDate": None, "Producer": None, "Creator": None},
}


@dataclass(frozen=True)
class Series:
    """How to show one stored time series (`data.timeseries[key]`)."""
    key: str
    entity: str          # "flow" | "station" | "node": what one row of the series describes
    label: str           # what is measured (axis label without unit)
    unit: str            # display unit
    scale: float         # display value = stored value * scale
    gaps: str = ""       # "" (every value is a sample) | "zero" (0 = no sample) |
                         # "delivery" (no delivery in the bin) | "node" (no queue sample)
    has: str = ""        # which entities have it, for the note on an empty plot
    nonneg: bool = True  # the y axis starts at 0
    alt_keys: tuple[str, ...] = ()  # older names of the same series

    def axis_label(self) -> str:
        return f"{self.label} ({self.unit})" if self.unit else self.label


SERIES: dict[str, Series] = {s.key: s for s in [
    Series("flow_goodput_bps", "flow", "goodput", "Mb/s", 1e-6),
    Series("flow_delay_mean_ns", "flow", "mean one-way delay", "ms", 1e-6, gaps="delivery",
           nonneg=False),
    Series("flow_rtt_ns", "flow", "sender's mean RTT sample", "ms", 1e-6, gaps="zero",
           has="TCP and QUIC flows only", nonneg=False),
    Series("flow_cwnd_bytes", "flow", "congestion window", "kB", 1e-3, gaps="zero",
           has="TCP and QUIC flows only"),
    Series("flow_inflight_bytes", "flow", "bytes in flight", "kB", 1e-3,
           has="TCP and QUIC flows only"),
    Series("flow_pacing_rate_bps", "flow", "pacing rate", "Mb/s", 1e-6, gaps="zero",
           has="TCP and QUIC flows that pace"),
    Series("flow_retransmits", "flow", "retransmitted segments", "packets per bin", 1.0,
           has="TCP and QUIC flows only"),
    Series("flow_aggctl_rate_bps", "flow", "aggctl allocator's send rate", "Mb/s", 1e-6,
           gaps="zero", has="aggctl flows only"),
    Series("flow_aggctl_est_ampdu", "flow", "aggctl receiver's reported mean A-MPDU size",
           "MPDUs", 1.0, gaps="zero", has="aggctl flows only"),
    Series("node_backlog_packets", "node", "queue backlog", "packets", 1.0, gaps="node",
           has="forwarding nodes only: the AP and relays"),
    Series("node_queue_limit", "node", "queue limit", "packets", 1.0, gaps="zero",
           has="forwarding nodes only: the AP and relays"),
    Series("station_snr_db", "station", "link SNR", "dB", 1.0,
           has="stations with error_model = \"snr\" only", nonneg=False),
    Series("station_phy_rate_down_bps", "station", "mean downlink PHY rate", "Mb/s", 1e-6,
           gaps="zero"),
    Series("station_mean_ampdu_down", "station", "mean downlink A-MPDU size", "MPDUs", 1.0,
           gaps="zero"),
    Series("station_airtime_frac", "station", "airtime share", "%", 100.0,
           alt_keys=("station_airtime_tx_frac",)),
]}
SERIES_ALIASES: dict[str, str] = {
    "goodput": "flow_goodput_bps", "goodput_bps": "flow_goodput_bps",
    "delay": "flow_delay_mean_ns", "delay_mean_ms": "flow_delay_mean_ns",
    "rtt": "flow_rtt_ns", "cwnd": "flow_cwnd_bytes", "inflight": "flow_inflight_bytes",
    "pacing": "flow_pacing_rate_bps", "retransmits": "flow_retransmits",
    "aggctl_rate": "flow_aggctl_rate_bps", "aggctl_est": "flow_aggctl_est_ampdu",
    "backlog": "node_backlog_packets", "queue_limit": "node_queue_limit",
    "snr": "station_snr_db", "phy_rate": "station_phy_rate_down_bps",
    "ampdu": "station_mean_ampdu_down", "mean_ampdu": "station_mean_ampdu_down",
    "airtime": "station_airtime_frac", "airtime_frac": "station_airtime_frac",
}
SUMMED = {"goodput_bps", "offered_bps"}          # aggregated over flows by sum, else mean
PER_RUN = {"busy_frac", "collisions"}            # the same for every flow of a run
DELAY_METRICS = {"delay_mean_ms", "delay_p50_ms", "delay_p95_ms", "delay_p99_ms",
                 "delay_max_ms"}


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

# ---------------------------------------------------------------------------------------------
# Output


def output_format(path: str | Path, option: str = "-o") -> str:
    """The output format ("png", "svg", "pdf") of `path` by its suffix; UserError otherwise."""
    suffix = Path(path).suffix.lower()
    if suffix not in FORMATS:
        raise UserError(f"{option} {path}: the file name must end with "
                        f"{', '.join(FORMATS)} (the output format)")
    return FORMATS[suffix]


def figure_bytes(fig: Figure, fmt: str = "png") -> bytes:
    """`fig` rendered as PNG, SVG or PDF, the same bytes for the same figure (no date or
    software version in the file). The figure's canvas is used off-screen; no backend is
    selected."""
    if fmt not in _METADATA:
        raise ValueError(f"format {fmt!r}: one of {', '.join(_METADATA)}")
    buf = io.BytesIO()
    with style():
        fig.savefig(buf, format=fmt, dpi=DPI, metadata=_METADATA[fmt])
    return buf.getvalue()


def png_bytes(fig: Figure) -> bytes:
    return figure_bytes(fig, "png")


def save_figure(fig: Figure, path: str | Path) -> Path:
    """Write `fig` to `path` in the format of its suffix (.png, .svg, .pdf), atomically, so the
    file is complete or absent."""
    return write_atomic(path, figure_bytes(fig, output_format(path)))


def save_png(fig: Figure, path: str | Path) -> Path:
    """Write `fig` as PNG to `path` atomically, so the file is complete or absent."""
    return write_atomic(path, png_bytes(fig))

# ---------------------------------------------------------------------------------------------
# Flows, stations, nodes and the stored series of one result document


def flow_kind(f: dict[str, Any]) -> str:
    """"cross" (cross traffic on the wired path), "ping" (its delay is an RTT) or "data"."""
    if f.get("direction") == "cross":
        return "cross"
    if f.get("pattern") == "ping":
        return "ping"
    return "data"


KIND_NAMES = {"data": "data flows", "ping": "ping flows", "cross": "cross traffic"}


def latency_name(kind: str) -> str:
    return "RTT" if kind == "ping" else "one-way delay"


def flow_label(f: dict[str, Any], i: int = 0) -> str:
    """`flow 0 (sta 1, down, tcp cubic)`, `flow 2 (sta 1, ping)`, `flow 3: cross traffic
    (cbr)`. `f` is a result file's flow entry (with the spec's `cc`, if known) or a table row."""
    fid = f.get("id", f.get("flow", i))
    pattern = f.get("pattern") or "?"
    kind = flow_kind(f)
    if kind == "cross":
        return f"flow {fid}: cross traffic ({pattern})"
    sta = f.get("station")
    sta_text = f"sta {sta}" if sta is not None else "no station"
    if kind == "ping":
        return f"flow {fid} ({sta_text}, ping)"
    proto = pattern
    if pattern == "tcp" and f.get("cc"):
        proto += f" {f['cc']}"
    elif pattern == "quic" and f.get("profile"):
        proto = str(f["profile"])
    return f"flow {fid} ({sta_text}, {f.get('direction', '?')}, {proto})"


def _flows(doc: dict[str, Any]) -> list[dict[str, Any]]:
    """The flow entries of a result document, with `cc`/`profile` from the spec."""
    spec_flows = (doc.get("spec") or {}).get("flows") or []
    out = []
    for i, f in enumerate((doc.get("data") or {}).get("flows") or []):
        g = dict(f)
        g.setdefault("id", i)
        sf = spec_flows[i] if i < len(spec_flows) and isinstance(spec_flows[i], dict) else {}
        if g.get("pattern") == "tcp" and sf.get("cc"):
            g["cc"] = sf["cc"]
        if g.get("pattern") == "quic" and sf.get("profile"):
            g["profile"] = sf["profile"]
        out.append(g)
    return out


def _station_label(s: dict[str, Any], i: int) -> str:
    extra = f", via sta {s['parent']}" if s.get("parent") is not None else ""
    return f"sta {s.get('id', i)} (MCS {s.get('mcs', '?')}{extra})"


def _node_label(n: int) -> str:
    return "AP" if n == 0 else f"sta {n - 1} (relay)"


def _guess_series(key: str) -> Series:
    """Display of a stored series this module has no entry for (by its name's suffix)."""
    entity = key.split("_", 1)[0] if key.split("_", 1)[0] in ("flow", "station", "node") \
        else "flow"
    name = key.split("_", 1)[1] if "_" in key else key
    for suffix, unit, scale in (("_bps", "Mb/s", 1e-6), ("_ns", "ms", 1e-6),
                                ("_bytes", "kB", 1e-3), ("_db", "dB", 1.0),
                                ("_frac", "%", 100.0), ("_packets", "packets", 1.0)):
        if name.endswith(suffix):
            return Series(key, entity, name[: -len(suffix)].replace("_", " "), unit, scale,
                          nonneg=unit != "dB")
    return Series(key, entity, name.replace("_", " "), "", 1.0, nonneg=False)


def _stored(ts: dict[str, Any]) -> list[str]:
    """Names of the per-entity series stored in a `timeseries` object, in file order."""
    return [k for k, v in ts.items()
            if isinstance(v, list) and (not v or isinstance(v[0], list))]


def series_names(doc: dict[str, Any]) -> list[str]:
    """The stored series of a result document (docs/results.md `data.timeseries`)."""
    return _stored((doc.get("data") or {}).get("timeseries") or {})


def resolve_series(doc: dict[str, Any], name: str | None, option: str = "--metric"
                   ) -> tuple[str, Series]:
    """(stored key, display) of series `name` (a stored name or an alias) in `doc`; a
    UserError listing the series the document has when it has no such series."""
    ts = (doc.get("data") or {}).get("timeseries") or {}
    stored = _stored(ts)
    want = SERIES_ALIASES.get(name or "goodput", name or "goodput")
    info = SERIES.get(want)
    for key in (want, *(info.alt_keys if info else ())):
        if key in stored:
            return key, info or _guess_series(key)
    if not stored:
        raise UserError(f"{option} {name}: the input stores no time series")
    aliases = [a for a, k in SERIES_ALIASES.items()
               if k in stored or any(k == s.key and set(s.alt_keys) & set(stored)
                                     for s in SERIES.values())]
    raise UserError(f"{option} {name}: not a time series of this input; it has "
                    f"{', '.join(stored)} (aliases: {', '.join(aliases)})")


@dataclass
class _Line:
    index: int          # flow id, station index or node index
    label: str
    kind: str           # flow kind ("data", "ping", "cross"); "" for stations and nodes
    direction: str
    values: list[float]  # display units, NaN = no sample
    connect: bool = False  # samples of a continuous state: join them across empty bins


class _Run:
    """One result document, prepared for drawing."""

    def __init__(self, doc: dict[str, Any], title: str) -> None:
        self.doc = doc
        self.title = title
        data = doc.get("data") or {}
        self.ts: dict[str, Any] = data.get("timeseries") or {}
        self.flows = _flows(doc)
        self.stations = data.get("stations") or []
        spec = doc.get("spec") or {}
        self.bin_ns = float(self.ts.get("bin_ns") or 0)
        self.t_ns = list(self.ts.get("t_ns") or [])
        self.t = [(v + self.bin_ns / 2) * 1e-9 for v in self.t_ns]
        self.t_end = (self.t_ns[-1] + self.bin_ns) * 1e-9 if self.t_ns else 1.0
        duration = (spec.get("sim") or {}).get("duration_ns")
        if isinstance(duration, (int, float)) and duration > 0 and self.t_ns:
            self.t_end = min(self.t_end, duration * 1e-9)
        self.warmup = ((spec.get("sim") or {}).get("warmup_ns") or 0) * 1e-9

    def _value(self, key: str, info: Series, row: int, b: int, y: Any) -> float:
        if y is None or (isinstance(y, float) and math.isnan(y)):
            return math.nan
        if info.gaps == "zero" and not y:
            return math.nan
        if info.gaps == "delivery":
            good = self.ts.get("flow_goodput_bps") or []
            if row < len(good) and b < len(good[row]):
                if not good[row][b]:
                    return math.nan   # no delivery in this bin: no delay sample
            elif not y:
                return math.nan
        if info.gaps == "node":
            lim = self.ts.get("node_queue_limit") or []
            if row < len(lim) and b < len(lim[row]) and not lim[row][b]:
                return math.nan       # no queue sample in this bin
        return float(y) * info.scale

    def lines(self, key: str, info: Series) -> list[_Line]:
        """One line per entity with at least one sample."""
        out = []
        for i, row in enumerate(self.ts.get(key) or []):
            if not isinstance(row, list) or not row:
                continue
            vals = [self._value(key, info, i, b, y) for b, y in enumerate(row)]
            if all(math.isnan(v) for v in vals):
                continue
            kind, direction = "", ""
            if info.entity == "flow":
                f = self.flows[i] if i < len(self.flows) else {"id": i}
                label, kind, direction = flow_label(f, i), flow_kind(f), f.get("direction", "")
            elif info.entity == "station":
                s = self.stations[i] if i < len(self.stations) else {"id": i}
                label = _station_label(s, i)
            else:
                label = _node_label(i)
            out.append(_Line(i, label, kind, direction, vals, connect=info.entity == "node"))
        return out

    def plot(self, ax: Any, ln: _Line, **kw: Any) -> None:
        """Draw `ln` over the bin centres: gaps stay gaps (joined only for sampled states),
        and a sample with gaps on both sides gets a marker so it is not lost."""
        xs, ys = self.t[:len(ln.values)], ln.values
        if ln.connect:
            pairs = [(x, y) for x, y in zip(xs, ys) if not math.isnan(y)]
            xs, ys = [x for x, _ in pairs], [y for _, y in pairs]
        isolated = any(not math.isnan(y) and (b == 0 or math.isnan(ys[b - 1]))
                       and (b == len(ys) - 1 or math.isnan(ys[b + 1]))
                       for b, y in enumerate(ys))
        if isolated and "marker" not in kw:
            kw.update(marker="o", markersize=3)
        ax.plot(xs, ys, **kw)

    def shade_warmup(self, ax: Any, label: bool = True) -> bool:
        if self.warmup > 0:
            ax.axvspan(0, self.warmup, color="#999999", alpha=0.15, lw=0,
                       label="warmup" if label else None)
            return True
        return False

# ---------------------------------------------------------------------------------------------
# Argument checks


def x_key(res: Results, x: str | None) -> str:
    numeric = res.numeric_keys()
    if x is None:
        if not numeric:
            raise UserError(f"{res.source}: an x–y plot needs a numeric varied key, and there "
                            "is none" + (f" (varied: {', '.join(res.varied)})" if res.varied
                                         else ""))
        return numeric[0]
    key = x[:-4] if x.endswith("#num") else x[:-5] if x.endswith("#text") else x
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


def results_from_doc(doc: dict[str, Any], name: str = "result") -> Results:
    """A one-run `Results` over a result document held in memory (e.g. `lasthop.run(...).doc`),
    for the plot functions."""
    seed = int(doc.get("seed", 0) or 0)
    rows = [{"point": 0, "seed": seed, "run": name, **r} for r in rows_from_result(doc)]
    spec_name = str((doc.get("spec") or {}).get("name", name))
    return Results(source=Path(name), kind="result", rows=rows, varied=[],
                   spec_names=[spec_name], code_versions=[str(doc.get("code_version", ""))],
                   docs={(0, seed): doc})


def _as_results(res: Results | dict[str, Any]) -> Results:
    return results_from_doc(res) if isinstance(res, dict) else res


# ---------------------------------------------------------------------------------------------
# Helpers


def _run_title(res: Results, point: int, seed: int) -> str:
    doc = res.load_run(point, seed)
    name = (doc.get("spec") or {}).get("name", "?")
    extra = f", {res.point_label(point)}" if res.varied and len(res.points) > 1 else ""
    return f"{name}, seed {seed}{extra}"


def _first_run(res: Results) -> _Run:
    point, seed = res.first_run()
    return _Run(res.load_run(point, seed), _run_title(res, point, seed))


def _flow_label_row(r: dict[str, Any]) -> str:
    return flow_label(r)


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
            return ", ".join(res.text(r, k) for k in res.varied)
    return str(point)


def _key_axis(res: Results, key: str) -> tuple[str, float]:
    """Axis label and scale for a numeric varied key (its unit, or bit/s and ns guessed from
    the key's name)."""
    unit = res.units.get(key)
    if unit == "bit/s":
        return f"{key} (Mb/s)", 1e-6
    if unit == "ns":
        return f"{key} (ms)", 1e-6
    texts = [res.text(r, key) for r in res.rows]
    low = key.lower()
    if any(t.endswith("bps") for t in texts) or low.endswith("_bps"):
        return f"{key} (Mb/s)", 1e-6
    if low.endswith("_ns") or (texts and all(t.endswith("s") and not t.endswith("bps")
                                            and any(ch.isdigit() for ch in t) for t in texts)):
        return f"{key} (ms)", 1e-6
    return key, 1.0


def _delay_axis(m_label: str, unit: str, kinds: set[str]) -> str:
    """Axis label of a delay metric over flows of `kinds` (RTT for ping, one-way otherwise)."""
    if kinds == {"ping"}:
        return f"{m_label.replace('delay', 'RTT')} ({unit})"
    if "ping" in kinds:
        return f"{m_label} ({unit}): one-way; RTT for ping flows"
    return f"{m_label.replace('delay', 'one-way delay')} ({unit})"


def _metric_axis(m: Any, kinds: set[str]) -> str:
    if m.name in DELAY_METRICS:
        return _delay_axis(m.label, m.unit, kinds)
    return m.axis_label()


def _row_class(r: dict[str, Any], m: str) -> str:
    return "run" if m in PER_RUN else flow_kind(r)


def _class_label(cls: str, m: str) -> str:
    if cls == "run":
        return "per run"
    name = KIND_NAMES[cls]
    if m in DELAY_METRICS:
        name += f" ({latency_name(cls)})"
    return name


# ---------------------------------------------------------------------------------------------
# Plots


def _no_samples(ax: Any, info: Series) -> None:
    why = f" ({info.has})" if info.has else ""
    ax.text(0.5, 0.5, f"no samples of {info.key} in this run{why}", ha="center", va="center",
            transform=ax.transAxes, color="#555555")


def _delay_labels(lines: list[_Line]) -> tuple[str, bool]:
    """The y label of the per-flow delay series and whether legend entries must say which
    delay each line is (a mix of ping RTTs and one-way delays)."""
    kinds = {ln.kind for ln in lines}
    if kinds == {"ping"}:
        return "mean RTT (ms)", False
    if "ping" in kinds:
        return "mean delay (ms): one-way; RTT for ping flows", True
    return "mean one-way delay (ms)", False


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
