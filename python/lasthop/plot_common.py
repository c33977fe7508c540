"""The shared parts of `lasthop.plots`: the plotting style and palette, the table of stored
time series (units, labels, aliases), flow and station labels, reading results into plot lines,
axis labels and output (PNG/SVG/PDF bytes, atomic files). `plots.py` draws the kinds of plot
with them and re-exports the public names; this module imports nothing of it.
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

from .analysis import Results, metric, rows_from_result
from .errors import UserError
from .results import write_atomic

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
