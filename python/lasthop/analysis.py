"""Analysis from files (docs/experiments.md, "Analysis from files"): load results, aggregate
across seeds.

`load(path) -> Results` accepts any of

- a sweep directory (`sweep.json` + `summary.parquet` + `runs/`),
- a `summary.parquet` (its `sweep.json`, if next to it, is read too),
- one result file (docs/results.md),
- a directory of result files (`*.json`, not recursive; a `runs/` subdirectory is used when the
  directory itself holds none).

Whatever the input, `Results.rows` is the per-flow table of `summary.parquet` (one dict per
run × flow, the documented columns, sorted by `point`, `seed`, `flow`). For result files it is
built in memory the same way: runs whose normalized specs differ (ignoring `sim.seed` and
`description`) are different grid points; every leaf of the normalized spec that differs between
points becomes a varied key column (`flows[1].rate_bps`, `mac.max_ampdu_mpdus`, ...), typed by
its values as in summary.parquet (`sweep.VariedType`: bool, int64, float64, durations in ns and
rates in bit/s as int64 with the unit in `Results.units`, else string), with its `<KEY>#text`
twin. A summary.parquet of the earlier layout (string `<KEY>` and a float `<KEY>#num`) is read
into the same form. Cross traffic (`direction` "cross", on the wired path only) has `station`,
`mean_ampdu` and `airtime_frac` None in these rows, whatever the file says, so it is never
counted as a station's flow.
`Results.load_run(point, seed)` returns one result document when the result
files are at hand (needed for time series and A-MPDU histograms).

Unreadable or invalid input raises `lasthop.errors.UserError` with one line naming the file.

Statistics: `aggregate(values) -> Agg(mean, std, n, ci95)` with the sample standard deviation
and the half-width of the two-sided 95 % Student-t confidence interval of the mean
(`t_{0.975, n-1} * std / sqrt(n)`); `mean_ci(values) -> (mean, ci95)`; `t_quantile(p, df)`
is computed from the regularized incomplete beta function (no scipy). With n < 2 the spread is
NaN; with n = 0 the mean is NaN too. NaN and None values are ignored.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterable, Sequence

from .errors import UserError
from .results import ResultError, load_result
from .results import number as _num

__all__ = [
    "METRICS", "BASE_COLUMNS", "Metric", "Results", "Agg", "load", "rows_from_result",
    "aggregate", "mean_ci", "t_quantile", "t_cdf", "group_rows", "table_rows", "format_table",
]

# ---------------------------------------------------------------------------------------------
# Metrics (the numeric per-flow columns of summary.parquet) and how to show them


@dataclass(frozen=True)
class Metric:
    name: str      # column name
    label: str     # human label
    unit: str      # display unit ("" for none)
    scale: float   # display value = column value * scale
    digits: int    # decimals in text tables

    def axis_label(self) -> str:
        return f"{self.label} ({self.unit})" if self.unit else self.label

    def header(self) -> str:
        return f"{self.label} {self.unit}".strip()


METRICS: dict[str, Metric] = {m.name: m for m in [
    Metric("goodput_bps", "goodput", "Mb/s", 1e-6, 2),
    Metric("offered_bps", "offered load", "Mb/s", 1e-6, 2),
    Metric("delay_mean_ms", "mean delay", "ms", 1.0, 3),
    Metric("delay_p50_ms", "p50 delay", "ms", 1.0, 3),
    Metric("delay_p95_ms", "p95 delay", "ms", 1.0, 3),
    Metric("delay_p99_ms", "p99 delay", "ms", 1.0, 3),
    Metric("delay_max_ms", "max delay", "ms", 1.0, 3),
    Metric("loss", "loss", "%", 100.0, 2),
    Metric("mean_ampdu", "mean A-MPDU", "MPDUs", 1.0, 2),
    Metric("airtime_frac", "airtime", "%", 100.0, 2),
    Metric("busy_frac", "channel busy", "%", 100.0, 2),
    Metric("collisions", "collisions", "", 1.0, 1),
    Metric("retransmits", "retransmits", "", 1.0, 1),
    Metric("timeouts", "timeouts (RTO/PTO)", "", 1.0, 1),
    Metric("srtt_ms", "smoothed RTT", "ms", 1.0, 3),
    Metric("min_rtt_ms", "min RTT", "ms", 1.0, 3),
    Metric("cwnd_bytes", "cwnd at the end", "kB", 1e-3, 1),
    Metric("completion_ms", "completion time", "ms", 1.0, 2),
    Metric("handshake_ms", "handshake time", "ms", 1.0, 3),
]}

DEFAULT_TABLE_METRICS = ["goodput_bps", "delay_mean_ms", "delay_p99_ms", "loss"]

# Columns of summary.parquet other than the varied keys, in order.
def _flow_column_names() -> list[str]:
    from .summary_schema import FLOW_COLUMNS

    return [name for name, _ in FLOW_COLUMNS]


BASE_COLUMNS = ["point", "seed", "run"] + _flow_column_names()
# Keys a table can be grouped by besides the varied keys.
GROUP_COLUMNS = ["point", "seed", "run", "flow", "station", "direction", "pattern", "ac", "cc"]


def metric(name: str, option: str = "--metric") -> Metric:
    try:
        return METRICS[name]
    except KeyError:
        raise UserError(f"{option} {name}: unknown metric; one of {', '.join(METRICS)}") from None


# ---------------------------------------------------------------------------------------------
# Student t and aggregation


def _betacf(a: float, b: float, x: float) -> float:
    """Continued fraction of the incomplete beta function (modified Lentz)."""
    tiny = 1e-300
    qab, qap, qam = a + b, a + 1.0, a - 1.0
    c, d = 1.0, 1.0 - qab * x / qap
    d = 1.0 / (d if abs(d) > tiny else tiny)
    h = d
    for m in range(1, 400):
        m2 = 2 * m
        aa = m * (b - m) * x / ((qam + m2) * (a + m2))
        d = 1.0 + aa * d
        d = 1.0 / (d if abs(d) > tiny else tiny)
        c = 1.0 + aa / c
        c = c if abs(c) > tiny else tiny
        h *= d * c
        aa = -(a + m) * (qab + m) * x / ((a + m2) * (qap + m2))
        d = 1.0 + aa * d
        d = 1.0 / (d if abs(d) > tiny else tiny)
        c = 1.0 + aa / c
        c = c if abs(c) > tiny else tiny
        delta = d * c
        h *= delta
        if abs(delta - 1.0) < 1e-15:
            break
    return h


def _betainc(a: float, b: float, x: float) -> float:
    """Regularized incomplete beta I_x(a, b)."""
    if x <= 0.0:
        return 0.0
    if x >= 1.0:
        return 1.0
    ln = (math.lgamma(a + b) - math.lgamma(a) - math.lgamma(b)
          + a * math.log(x) + b * math.log1p(-x))
    front = math.exp(ln)
    if x < (a + 1.0) / (a + b + 2.0):
        return front * _betacf(a, b, x) / a
    return 1.0 - front * _betacf(b, a, 1.0 - x) / b


def t_cdf(t: float, df: float) -> float:
    """P(T <= t) for Student's t with `df` degrees of freedom."""
    if df <= 0:
        raise ValueError("df must be positive")
    x = df / (df + t * t)
    tail = 0.5 * _betainc(df / 2.0, 0.5, x)
    return 1.0 - tail if t > 0 else tail


def t_quantile(p: float, df: float) -> float:
    """The p-quantile of Student's t with `df` degrees of freedom (0 < p < 1), to ~1e-12."""
    if not 0.0 < p < 1.0:
        raise ValueError("p must be in (0, 1)")
    if df <= 0:
        raise ValueError("df must be positive")
    if p == 0.5:
        return 0.0
    if p < 0.5:
        return -t_quantile(1.0 - p, df)
    lo, hi = 0.0, 1.0
    while t_cdf(hi, df) < p:
        lo, hi = hi, hi * 2.0
        if hi > 1e300:
            return math.inf
    for _ in range(200):  # bisection: t_cdf is monotone; 200 halvings exhaust float precision
        mid = 0.5 * (lo + hi)
        if mid in (lo, hi):
            break
        if t_cdf(mid, df) < p:
            lo = mid
        else:
            hi = mid
    return 0.5 * (lo + hi)


@dataclass(frozen=True)
class Agg:
    mean: float
    std: float    # sample standard deviation (n - 1); NaN for n < 2
    n: int
    ci95: float   # half-width of the 95 % Student-t CI of the mean; NaN for n < 2


def _finite(values: Iterable[Any]) -> list[float]:
    out = []
    for v in values:
        x = _num(v)
        if x is not None:
            out.append(x)
    return out


def aggregate(values: Iterable[Any], confidence: float = 0.95) -> Agg:
    xs = _finite(values)
    n = len(xs)
    if n == 0:
        return Agg(math.nan, math.nan, 0, math.nan)
    try:
        mean = math.fsum(xs) / n
    except OverflowError:  # values near the float limit: their sum is not a float
        mean = math.fsum(x / n for x in xs)
    if n < 2:
        return Agg(mean, math.nan, 1, math.nan)
    try:
        var = math.fsum((x - mean) ** 2 for x in xs) / (n - 1)
    except OverflowError:  # a spread beyond the float range
        var = math.inf
    std = math.sqrt(var)
    half = t_quantile(0.5 + confidence / 2.0, n - 1) * std / math.sqrt(n)
    return Agg(mean, std, n, half)


def mean_ci(values: Iterable[Any], confidence: float = 0.95) -> tuple[float, float]:
    """(mean, CI half-width) of `values`; the half-width is NaN for fewer than 2 values."""
    a = aggregate(values, confidence)
    return a.mean, a.ci95


# ---------------------------------------------------------------------------------------------
# Per-flow rows from result documents




def rows_from_result(doc: dict[str, Any]) -> list[dict[str, Any]]:
    """The per-flow rows of one result document, with the summary.parquet metric columns
    (without `point`, `seed`, `run` and varied keys): the rows a sweep writes
    (`lasthop.summary_schema.flow_rows`). Cross traffic stays on the wired path: it has no station, nor
    a station's A-MPDU sizes or airtime."""
    from .summary_schema import flow_rows

    return flow_rows(doc)


def _leaves(obj: Any, prefix: str = "") -> dict[str, Any]:
    out: dict[str, Any] = {}
    if isinstance(obj, dict):
        for k, v in obj.items():
            out.update(_leaves(v, f"{prefix}.{k}" if prefix else str(k)))
    elif isinstance(obj, list):
        for i, v in enumerate(obj):
            out.update(_leaves(v, f"{prefix}[{i}]"))
        if not obj:
            out[prefix] = []
    else:
        out[prefix] = obj
    return out


def _value_text(v: Any) -> str:
    if isinstance(v, str):
        return v
    if v is _MISSING:
        return ""
    return json.dumps(v, sort_keys=True)


def _value_num(v: Any) -> float | None:
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        if isinstance(v, str):
            from .units import UnitError, parse_duration, parse_rate
            for parse in (parse_rate, parse_duration):
                try:
                    return float(parse(v))
                except UnitError:
                    pass
            try:
                return float(v)
            except ValueError:
                return None
        return None
    return float(v)


_MISSING = object()


def _is_number(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def _column_type(res: "Results", key: str) -> Any:
    """The `sweep.VariedType` of a varied key's column in `res`, from its values."""
    from .summary_schema import VariedType

    vals = [r.get(key) for r in res.rows]
    t = VariedType.of(vals)
    if key in res.units and t.arrow == "int64":
        t = VariedType("int64", res.units[key])
    elif t.unit:  # strings that parse as units but are stored as text here
        t = VariedType("string")
    return t
_IGNORED_SPEC_KEYS = {"sim.seed", "description"}


# ---------------------------------------------------------------------------------------------
# Loading


@dataclass
class Results:
    """A per-flow table (rows as dicts) and what is known about where it came from."""
    source: Path
    kind: str                          # "sweep" | "parquet" | "result" | "results-dir"
    rows: list[dict[str, Any]]
    varied: list[str]                  # varied keys (typed columns; `<KEY>#text` next to them)
    manifest: dict[str, Any] | None = None
    spec_names: list[str] = field(default_factory=list)
    code_versions: list[str] = field(default_factory=list)
    files: dict[tuple[int, int], Path] = field(default_factory=dict)  # (point, seed) -> file
    docs: dict[tuple[int, int], dict[str, Any]] = field(default_factory=dict)  # loaded files
    units: dict[str, str] = field(default_factory=dict)  # varied key -> "ns" | "bit/s"

    @property
    def columns(self) -> list[str]:
        return (["point", "seed", "run"] + list(self.varied) + [f"{k}#text" for k in self.varied]
                + BASE_COLUMNS[3:])

    @property
    def seeds(self) -> list[int]:
        return sorted({int(r["seed"]) for r in self.rows})

    @property
    def points(self) -> list[int]:
        return sorted({int(r["point"]) for r in self.rows})

    @property
    def runs(self) -> list[tuple[int, int]]:
        return sorted({(int(r["point"]), int(r["seed"])) for r in self.rows})

    def numeric_keys(self) -> list[str]:
        """Varied keys whose values are all numbers (none null)."""
        return [k for k in self.varied
                if self.rows and all(_is_number(r.get(k)) for r in self.rows)]

    def text(self, row: dict[str, Any], key: str) -> str:
        """A varied key's value in `row` as written (`<KEY>#text`)."""
        t = row.get(f"{key}#text")
        return str(row.get(key)) if t is None else str(t)

    def has_run_files(self) -> bool:
        return bool(self.docs) or any(p.is_file() for p in self.files.values())

    def load_run(self, point: int, seed: int) -> dict[str, Any]:
        key = (point, seed)
        if key in self.docs:
            return self.docs[key]
        path = self.files.get(key)
        if path is None:
            raise UserError(f"{self.source}: no result file for point {point} seed {seed}")
        try:
            doc = load_result(path)
        except ResultError as e:
            raise UserError(str(e)) from None
        self.docs[key] = doc
        return doc

    def first_run(self) -> tuple[int, int]:
        """(point, seed) of the first run that has a result file."""
        for key in self.runs:
            if key in self.docs or (key in self.files and self.files[key].is_file()):
                return key
        raise UserError(f"{self.source}: needs the run result files (time series, A-MPDU "
                        "histograms), and none was found")

    def point_label(self, point: int, keys: Sequence[str] | None = None) -> str:
        keys = self.varied if keys is None else keys
        for r in self.rows:
            if r["point"] == point:
                return ", ".join(f"{k}={self.text(r, k)}" for k in keys) or f"point {point}"
        return f"point {point}"

    def to_arrow(self) -> Any:
        """The table as a pyarrow.Table with the summary.parquet column types."""
        import pyarrow as pa

        from .summary_schema import FLOW_COLUMNS

        types = {"point": pa.int64(), "seed": pa.int64(), "run": pa.string(),
                 **{name: getattr(pa, t)() for name, t in FLOW_COLUMNS}}
        fields = []
        for c in self.columns:
            if c in self.varied:
                fields.append(_column_type(self, c).field(c))
            elif c in types:
                fields.append(pa.field(c, types[c]))
            else:
                fields.append(pa.field(c, pa.string() if c.endswith("#text") else pa.float64()))
        schema = pa.schema(fields)
        return pa.Table.from_pylist([{c: r.get(c) for c in self.columns} for r in self.rows],
                                    schema=schema)


def _read_json(path: Path) -> Any:
    try:
        with open(path, encoding="utf-8") as f:
            return json.load(f)
    except FileNotFoundError:
        raise UserError(f"{path}: no such file") from None
    except (OSError, ValueError) as e:
        raise UserError(f"{path}: not a readable JSON file: {str(e).splitlines()[0]}") from None


def _load_parquet(path: Path) -> Results:
    try:
        import pyarrow.parquet as pq
    except ImportError:
        raise UserError(f"{path}: reading parquet needs pyarrow (pip install pyarrow)") from None
    try:
        table = pq.read_table(path)
    except Exception as e:  # pyarrow raises several types for bad files
        msg = str(e).splitlines()[0] if str(e) else type(e).__name__
        raise UserError(f"{path}: not a readable parquet file: {msg}") from None
    names = table.column_names
    missing = [c for c in ("point", "seed", "flow", "goodput_bps") if c not in names]
    if missing:
        raise UserError(f"{path}: not a lasthop summary.parquet (no column {missing[0]!r})")
    varied = [c[:-5] for c in names if c.endswith("#text") and c[:-5] in names]
    units = {}
    for k in varied:
        meta = table.schema.field(k).metadata or {}
        if b"unit" in meta:
            units[k] = meta[b"unit"].decode("utf-8", "replace")
    old = [c[:-4] for c in names if c.endswith("#num") and c[:-4] in names]
    rows = table.to_pylist()
    if old and not varied:
        # The earlier layout: `<KEY>` the text, `<KEY>#num` its number where it parsed as one.
        varied = old
        for k in old:
            numeric = all(r.get(f"{k}#num") is not None for r in rows)
            for r in rows:
                text, num = r.get(k), r.pop(f"{k}#num", None)
                r[f"{k}#text"] = text
                if numeric:
                    r[k] = int(num) if float(num).is_integer() and abs(num) < 2 ** 63 else num
    for r in rows:
        for c in BASE_COLUMNS:
            r.setdefault(c, None)
        if r.get("direction") == "cross":
            # Cross traffic belongs to no station, nor its A-MPDU sizes or airtime (as in
            # rows_from_result), whatever the summary says.
            r["station"] = r["mean_ampdu"] = r["airtime_frac"] = None
    rows.sort(key=lambda r: (r["point"], r["seed"], r["flow"]))

    res = Results(source=path, kind="parquet", rows=rows, varied=varied, units=units)
    manifest_path = path.parent / "sweep.json"
    if manifest_path.is_file():
        manifest = _read_json(manifest_path)
        if not isinstance(manifest, dict) or manifest.get("format") != "lasthop.sweep":
            raise UserError(f"{manifest_path}: not a lasthop sweep manifest")
        res.manifest = manifest
        if manifest.get("code_version"):
            res.code_versions = [str(manifest["code_version"])]
        base = manifest.get("spec") or manifest.get("base") or {}
        name = manifest.get("name") or (base.get("name") if isinstance(base, dict) else None)
        if name:
            res.spec_names = [str(name)]
        bad: list[str] = []
        for run in manifest.get("runs") or []:
            try:
                p = Path(run["file"])
                f = p if p.is_absolute() else path.parent / p
                res.files[(int(run["point"]), int(run["seed"]))] = f
            except (KeyError, TypeError, ValueError):
                continue
            want = run.get("sha256")
            if want is not None:
                problem = _run_file_problem(f, want)
                if problem:
                    bad.append(f"{run['file']}: {problem}")
        if bad:
            more = f" (and {len(bad) - 1} more)" if len(bad) > 1 else ""
            raise UserError(f"{path.parent}: run file {bad[0]}{more}; the summary no longer "
                            "describes the runs beside it: run the sweep again to recompute them")
    return res


def _run_file_problem(f: Path, want: str) -> str | None:
    """Why run file `f` is not the one the sweep summarized (its hash is `want`), or None."""
    from .results import file_sha256

    try:
        got = file_sha256(f)
    except FileNotFoundError:
        return "missing"
    except OSError as e:
        return f"unreadable ({e.strerror})"
    return None if got == want else "changed after the sweep wrote it"


def _load_result_files(paths: list[Path], source: Path, kind: str) -> Results:
    docs = []
    for p in paths:
        try:
            docs.append((p, load_result(p)))
        except ResultError as e:
            raise UserError(str(e)) from None
    # Grid points: distinct normalized specs (sim.seed and description ignored).
    points: dict[str, dict[str, Any]] = {}
    for p, doc in docs:
        leaves = {k: v for k, v in _leaves(doc["spec"]).items() if k not in _IGNORED_SPEC_KEYS}
        points.setdefault(json.dumps(leaves, sort_keys=True), leaves)
    all_keys: list[str] = []
    for leaves in points.values():
        all_keys += [k for k in leaves if k not in all_keys]
    varied = [k for k in all_keys
              if len({json.dumps(lv.get(k, None), sort_keys=True) for lv in points.values()}) > 1]

    def sort_key(item: tuple[str, dict[str, Any]]) -> tuple:
        out = []
        for k in varied:
            v = item[1].get(k, _MISSING)
            n = _value_num(v) if v is not _MISSING else None
            out.append((0, n, "") if n is not None else (1, 0.0, _value_text(v)))
        return tuple(out)

    ordered = sorted(points.items(), key=sort_key)
    index = {k: i for i, (k, _) in enumerate(ordered)}
    from .summary_schema import VariedType

    types = {k: VariedType.of(None if v is _MISSING else v
                              for v in (lv.get(k, _MISSING) for lv in points.values()))
             for k in varied}
    res = Results(source=source, kind=kind, rows=[], varied=varied,
                  units={k: t.unit for k, t in types.items() if t.unit})
    seen: dict[tuple[int, int], Path] = {}
    for p, doc in docs:
        leaves = {k: v for k, v in _leaves(doc["spec"]).items() if k not in _IGNORED_SPEC_KEYS}
        point = index[json.dumps(leaves, sort_keys=True)]
        try:
            seed = int(doc["seed"])
        except (TypeError, ValueError):
            raise UserError(f"{p}: seed {doc['seed']!r} is not an integer") from None
        if (point, seed) in seen:
            raise UserError(f"{p}: same spec and seed as {seen[(point, seed)]}")
        seen[(point, seed)] = p
        res.files[(point, seed)] = p
        res.docs[(point, seed)] = doc
        name = str(doc["spec"].get("name", p.stem)) if isinstance(doc["spec"], dict) else p.stem
        if name not in res.spec_names:
            res.spec_names.append(name)
        if str(doc["code_version"]) not in res.code_versions:
            res.code_versions.append(str(doc["code_version"]))
        base = {"point": point, "seed": seed, "run": p.stem}
        for k in varied:
            v = leaves.get(k, _MISSING)
            base[k] = types[k].value(None if v is _MISSING else v, _value_text)
            base[f"{k}#text"] = _value_text(v)
        for r in rows_from_result(doc):
            res.rows.append({**base, **r})
    res.rows.sort(key=lambda r: (r["point"], r["seed"], r["flow"]))
    return res


def load(path: str | Path) -> Results:
    """Load RESULTS (see the module docstring); raise UserError for anything unusable."""
    path = Path(path)
    if not path.exists():
        raise UserError(f"{path}: no such file or directory")
    if path.is_dir():
        parquet = path / "summary.parquet"
        if parquet.is_file():
            res = _load_parquet(parquet)
            res.source, res.kind = path, "sweep"
            return res
        if (path / "sweep.json").is_file():
            raise UserError(f"{path}: sweep directory without summary.parquet "
                            "(the sweep has not finished)")
        files = sorted(p for p in path.glob("*.json") if p.is_file())
        if not files and (path / "runs").is_dir():
            files = sorted(p for p in (path / "runs").glob("*.json") if p.is_file())
        if not files:
            raise UserError(f"{path}: no summary.parquet and no result files (*.json)")
        return _load_result_files(files, path, "results-dir")
    if path.suffix == ".parquet":
        return _load_parquet(path)
    return _load_result_files([path], path, "result")


# ---------------------------------------------------------------------------------------------
# Grouping and tables


def _column_order_key(res: Results, key: str) -> Callable[[Any, dict[str, Any]], tuple]:
    def k(value: Any, row: dict[str, Any]) -> tuple:
        if key in res.varied:
            return (0, float(value), "") if _is_number(value) else (1, 0.0, res.text(row, key))
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            return (0, float(value), "")
        return (1, 0.0, "" if value is None else str(value))
    return k


def check_keys(res: Results, keys: Sequence[str], option: str = "--by") -> None:
    allowed = res.varied + GROUP_COLUMNS
    for k in keys:
        if k not in allowed:
            raise UserError(f"{option} {k}: unknown key; one of {', '.join(allowed)}")


def default_by(res: Results) -> list[str]:
    return [*res.varied, "flow"]


def group_rows(res: Results, by: Sequence[str], rows: Iterable[dict[str, Any]] | None = None
               ) -> list[tuple[tuple, list[dict[str, Any]]]]:
    """Rows grouped by the values of `by`, groups in a natural order (numbers ascending)."""
    check_keys(res, by)
    groups: dict[tuple, list[dict[str, Any]]] = {}
    sort_keys: dict[tuple, tuple] = {}
    orders = [_column_order_key(res, k) for k in by]
    for r in res.rows if rows is None else rows:
        key = tuple(r.get(k) for k in by)
        if key not in groups:
            groups[key] = []
            sort_keys[key] = tuple(o(v, r) for o, v in zip(orders, key))
        groups[key].append(r)
    return sorted(groups.items(), key=lambda kv: sort_keys[kv[0]])


def table_rows(res: Results, by: Sequence[str], metrics: Sequence[str]
               ) -> list[tuple[tuple, int, list[Agg]]]:
    """(group key, rows in group, one Agg per metric) for each group."""
    for m in metrics:
        metric(m)
    out = []
    for key, rows in group_rows(res, by):
        out.append((key, len(rows), [aggregate(r.get(m) for r in rows) for m in metrics]))
    return out


def _fmt(x: float, digits: int) -> str:
    return "-" if x is None or math.isnan(x) else f"{x:.{digits}f}"


def _raw(x: Any) -> str:
    if x is None or (isinstance(x, float) and math.isnan(x)):
        return ""
    if isinstance(x, bool):
        return "true" if x else "false"
    return repr(float(x)) if isinstance(x, float) else str(x)


def format_table(res: Results, by: Sequence[str], metrics: Sequence[str], fmt: str = "text"
                 ) -> str:
    """The aggregated table as text (aligned columns), csv (raw units, one column per
    statistic) or markdown (display units)."""
    if fmt not in ("text", "csv", "markdown"):
        raise UserError(f"--format {fmt}: one of text, csv, markdown")
    data = table_rows(res, by, metrics)
    if fmt == "csv":
        import csv
        import io

        buf = io.StringIO()
        w = csv.writer(buf, lineterminator="\n")
        head = list(by) + ["n"]
        for m in metrics:
            head += [f"{m}_mean", f"{m}_std", f"{m}_n", f"{m}_ci95"]
        w.writerow(head)
        for key, n, aggs in data:
            row = [_raw(v) for v in key] + [str(n)]
            for a in aggs:
                row += [_raw(a.mean), _raw(a.std), str(a.n), _raw(a.ci95)]
            w.writerow(row)
        return buf.getvalue().rstrip("\n")

    # With one value per group (a single run, or --by seed) there is no spread to show.
    spread = any(a.n > 1 for _, _, aggs in data for a in aggs)
    head = list(by) + ["n"]
    for m in metrics:
        info = METRICS[m]
        head += [info.header(), "±95%", "sd"] if spread else [info.header()]
    # Varied keys are shown as written ("40Mbps", not 40000000).
    labels = {(k, r.get(k)): res.text(r, k) for r in res.rows for k in by if k in res.varied}
    rows = []
    for key, n, aggs in data:
        row = [("cross traffic" if k == "station" else "-") if v is None
               else labels.get((k, v), str(v)) for k, v in zip(by, key)] + [str(n)]
        for m, a in zip(metrics, aggs):
            info = METRICS[m]
            row.append(_fmt(a.mean * info.scale, info.digits))
            if spread:
                row += [_fmt(a.ci95 * info.scale, info.digits),
                        _fmt(a.std * info.scale, info.digits)]
        rows.append(row)
    if fmt == "markdown":
        def cell(s: str) -> str:
            return s.replace("|", "\\|")
        lines = ["| " + " | ".join(cell(h) for h in head) + " |",
                 "|" + "|".join("---" if i < len(by) else "---:" for i in range(len(head))) + "|"]
        lines += ["| " + " | ".join(cell(c) for c in r) + " |" for r in rows]
        return "\n".join(lines)
    widths = [max(len(h), *(len(r[i]) for r in rows)) if rows else len(h)
              for i, h in enumerate(head)]
    lines = ["  ".join(h.rjust(w) if i >= len(by) else h.ljust(w)
                       for i, (h, w) in enumerate(zip(head, widths))).rstrip()]
    for r in rows:
        lines.append("  ".join(c.rjust(w) if i >= len(by) else c.ljust(w)
                               for i, (c, w) in enumerate(zip(r, widths))).rstrip())
    return "\n".join(lines)
