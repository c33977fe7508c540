"""The Python API, for scripts and notebooks (docs/python.md).

    import lasthop
    spec = lasthop.load_spec("experiments/demo.toml")       # or a dict with the TOML structure
    run = lasthop.run(spec, seed=1)                          # simulate; nothing is written
    run.flows, run.stations, run.queues                      # pandas DataFrames
    run.timeseries("flow_cwnd_bytes")                        # one stored series, wide
    summary = lasthop.sweep(spec, vary={"ap.qdisc": ["fifo", "fq_codel"]}, seeds=3)
    lasthop.load("results/demo/demo-s1.json")               # a result file → Run
    lasthop.load("results/demo-sweep")                      # a sweep directory → SweepRun

Every user error (a bad spec key, a missing file, a result that fails its checksum) is raised as
`lasthop.LasthopError` with the same one line the command line prints. Nothing here chooses a
matplotlib backend: `Run.plot` returns a Figure and the notebook or script shows or saves it.
"""
from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Union

if TYPE_CHECKING:  # pragma: no cover
    import pandas as pd
    from matplotlib.figure import Figure

    from .spec import Spec

__all__ = ["LasthopError", "Run", "SweepRun", "load", "load_spec", "run", "sweep"]

SpecLike = Union[str, Path, Mapping[str, Any], "Spec"]


class LasthopError(ValueError):
    """A user error: the message is one line naming what is wrong and what is allowed."""


def _pd() -> Any:
    try:
        import pandas
    except ImportError:  # pragma: no cover - pandas is a dependency of the package
        raise LasthopError("the Python API's frames need pandas: pip install pandas") from None
    return pandas


def _user_errors(fn: Any) -> Any:
    """Run `fn()`, turning the package's user errors into LasthopError."""
    from .errors import UserError
    from .results import ResultError
    from .spec import SpecError, SpecFileError

    try:
        return fn()
    except SpecError as e:
        # Every problem of the spec, one per line.
        raise LasthopError("\n".join(str(x) for x in e.all())) from None
    except (SpecFileError, UserError, ResultError) as e:
        raise LasthopError(str(e)) from None


def load_spec(src: SpecLike, name: str = "scenario") -> Spec:
    """A validated, normalized spec from a TOML file path, a dict with the TOML structure (as
    `tomllib.load` returns it), or a Spec (returned as is). `name` names a dict spec that has
    no `name` key."""
    from .spec import Spec, load_spec as _load_file, normalize

    if isinstance(src, Spec):
        return src
    if isinstance(src, Mapping):
        def from_dict() -> Spec:
            return normalize(json.loads(json.dumps(dict(src))), name, rules=True)
        return _user_errors(from_dict)
    if isinstance(src, (str, Path)):
        return _user_errors(lambda: _load_file(src))
    raise LasthopError(f"load_spec: {type(src).__name__}: a TOML path, a dict or a Spec")


def run(spec: SpecLike, seed: int | None = None, progress: bool = False) -> Run:
    """Simulate `spec` with `seed` (default: the spec's `sim.seed`) and return the result. The
    same spec and seed give the same result, byte for byte, as `lasthop run`."""
    from . import _native
    from .progress import Progress
    from .results import envelope

    s = load_spec(spec)
    if seed is None:
        seed = s.seed
    if isinstance(seed, bool) or not isinstance(seed, int) or not 0 <= seed < 2**64:
        raise LasthopError(f"seed = {seed!r}: an integer in 0..2^64-1")
    bar = Progress(s.duration_ns, label=s.name, quiet=not progress)
    try:
        data = json.loads(_native.run(s.to_json(), seed, bar))
    except RuntimeError as e:
        bar.finish(ok=False)
        raise RuntimeError(f"simulation failed: {e}") from None
    bar.finish()
    from .version import code_version

    return Run(envelope(s.normalized, seed, data, code_version()))


def sweep(spec: SpecLike | Mapping[str, Any], vary: Mapping[str, Sequence[Any]] | Sequence[tuple[str, Sequence[Any]]]
          = (), seeds: int = 1, out_dir: str | Path | None = None, jobs: int | None = None,
          cache: str | Path | None = None, progress: bool = False) -> pd.DataFrame:
    """Run every combination of `vary` (key → values, as `lasthop sweep --vary`) for `seeds`
    seeds each, in parallel worker processes, and return the summary frame (one row per flow
    per run; the columns of docs/results.md). Runs are files under `out_dir` (default
    `results/<name>-sweep`), so a repeated call reuses them; `SweepRun` via `load(out_dir)`
    reads them back. Safe to call from a plain script without an `if __name__ == "__main__"`
    guard, and from notebooks."""
    from .spec import Spec
    from .sweeps import Sweep, run_sweep

    base: Any
    if isinstance(spec, Spec):
        # The grid overrides TOML keys, so a sweep starts from the TOML the Spec was read from.
        if not spec.source or not Path(spec.source).is_file():
            raise LasthopError("sweep: pass the spec as a TOML path or a dict (the grid overrides TOML keys)")
        base = spec.source
    elif isinstance(spec, Mapping):
        base = json.loads(json.dumps(dict(spec)))
    else:
        base = spec
    if isinstance(seeds, bool) or not isinstance(seeds, int) or seeds < 1:
        raise LasthopError(f"seeds = {seeds!r}: an integer >= 1")
    vary_list = list(vary.items()) if isinstance(vary, Mapping) else list(vary)
    res = _user_errors(lambda: run_sweep(Sweep(base=base, vary=vary_list, seeds=seeds), out_dir, jobs=jobs,
                                         progress=progress, cache=cache))
    return res.summary.to_pandas()


def load(path: str | Path) -> Run | SweepRun:
    """A result file (`Run`) or a sweep directory (`SweepRun`), checked as `lasthop table`
    checks them (checksums, run files matching the manifest)."""
    from .results import load_result

    p = Path(path)
    if p.is_dir():
        if not (p / "sweep.json").is_file():
            raise LasthopError(f"{path}: a directory without sweep.json (not a sweep directory)")
        return SweepRun(p)
    return Run(_user_errors(lambda: load_result(p)), path=p)


# ---------------------------------------------------------------------------------------------


def _entity_labels(doc: dict[str, Any], series: str, n: int) -> list[str]:
    data = doc["data"]
    if series.startswith("flow_"):
        flows = data.get("flows") or []
        return [_flow_name(flows[i]) if i < len(flows) else f"flow {i}" for i in range(n)]
    if series.startswith("station_"):
        return [f"sta{(data.get('stations') or [{}] * n)[i].get('id', i)}" if i < len(data.get("stations") or [])
                else f"sta{i}" for i in range(n)]
    if series.startswith("node_"):
        return [_node_name(i) for i in range(n)]
    return [str(i) for i in range(n)]


def _node_name(i: int) -> str:
    """Node i of the per-node series: 0 is the AP, then the stations (docs/results.md)."""
    return "ap" if i == 0 else f"sta{i - 1}"


def _flow_name(f: dict[str, Any]) -> str:
    """`flow 0 (tcp down, sta0)`; cross traffic on the wired path says so."""
    fid = f.get("id")
    pattern = f.get("pattern", "?")
    d = f.get("direction", "")
    if d == "cross" or f.get("station") is None:
        return f"flow {fid} (cross traffic, {pattern})"
    return f"flow {fid} ({pattern} {d}, sta{f.get('station')})"


@dataclass
class Run:
    """One simulated run: the result document (docs/results.md) and frames over it."""

    doc: dict[str, Any]
    path: Path | None = None
    _cache: dict[str, Any] = field(default_factory=dict, repr=False)

    @property
    def name(self) -> str:
        return str(self.doc["spec"].get("name", ""))

    @property
    def seed(self) -> int:
        return int(self.doc["seed"])

    @property
    def spec(self) -> dict[str, Any]:
        """The normalized spec the run was made from (durations in ns, rates in bit/s)."""
        return self.doc["spec"]

    @property
    def code_version(self) -> str:
        return str(self.doc.get("code_version", ""))

    @property
    def flows(self) -> pd.DataFrame:
        """One row per flow: the summary.parquet metrics (goodput, delay percentiles, loss …),
        with the flow's pattern, direction, station, access category and congestion control."""
        if "flows" not in self._cache:
            from .analysis import rows_from_result

            rows = rows_from_result(self.doc)
            spec_flows = self.spec.get("flows") or []
            default_ac = (self.spec.get("mac") or {}).get("access_category", "BE")
            for r, f in zip(rows, self.doc["data"].get("flows") or []):
                sf = spec_flows[f.get("id", 0)] if f.get("id", 0) < len(spec_flows) else {}
                r["label"] = _flow_name(f)
                # The WMM access category of the flow's packets (none for wired cross traffic);
                # the congestion control of transport flows only.
                r.setdefault("ac", None if sf.get("direction") == "cross" else (sf.get("ac") or default_ac))
                r.setdefault("cc", sf.get("cc") if sf.get("pattern") in ("tcp", "quic") else None)
            self._cache["flows"] = _pd().DataFrame(rows)
        return self._cache["flows"]

    @property
    def stations(self) -> pd.DataFrame:
        """One row per station: MCS, streams, PHY rates, mean A-MPDU sizes, airtime."""
        if "stations" not in self._cache:
            rows = [{k: v for k, v in s.items() if not isinstance(v, (list, dict))}
                    for s in self.doc["data"].get("stations") or []]
            self._cache["stations"] = _pd().DataFrame(rows)
        return self._cache["stations"]

    @property
    def channel(self) -> dict[str, Any]:
        return dict(self.doc["data"].get("channel") or {})

    @property
    def series_names(self) -> list[str]:
        """The stored time series (flow_*, node_*, station_*), those with values only."""
        ts = self.doc["data"].get("timeseries") or {}
        return sorted(k for k, v in ts.items() if isinstance(v, list) and k != "t_ns"
                      and any(len(row) for row in v))

    def timeseries(self, name: str) -> pd.DataFrame:
        """One stored series, wide: index `t_s` (start of each bin, s), one column per flow, node or
        station (labelled as in `flows` and as `ap`, `sta0` …)."""
        ts = self.doc["data"].get("timeseries") or {}
        if name not in self.series_names:
            raise LasthopError(f"timeseries: {name!r} is not a stored series of this run; one of: "
                               f"{', '.join(self.series_names)}")
        rows = ts[name]
        t = [x / 1e9 for x in ts["t_ns"]]
        cols = _entity_labels(self.doc, name, len(rows))
        pd = _pd()
        # Entities without samples (a station that does not forward has no node series) are
        # left out.
        data = {c: [float(v) if v is not None else math.nan for v in row] + [math.nan] * (len(t) - len(row))
                for c, row in zip(cols, rows) if len(row)}
        return pd.DataFrame(data, index=pd.Index(t, name="t_s"))

    def timeseries_long(self) -> pd.DataFrame:
        """Every stored series in one long frame: t_s, series, entity, value."""
        parts = []
        for name in self.series_names:
            w = self.timeseries(name)
            long = w.reset_index().melt(id_vars="t_s", var_name="entity", value_name="value")
            long.insert(1, "series", name)
            parts.append(long)
        pd = _pd()
        return pd.concat(parts, ignore_index=True) if parts else pd.DataFrame(
            columns=["t_s", "series", "entity", "value"])

    @property
    def queues(self) -> pd.DataFrame:
        """Per forwarding node and bin: backlog (packets) and queue limit, long form."""
        pd = _pd()
        frames = []
        for name, col in (("node_backlog_packets", "backlog_packets"), ("node_queue_limit", "queue_limit")):
            if name in self.series_names:
                w = self.timeseries(name).reset_index().melt(id_vars="t_s", var_name="node", value_name=col)
                frames.append(w.set_index(["t_s", "node"]))
        if not frames:
            return pd.DataFrame(columns=["t_s", "node", "backlog_packets", "queue_limit"])
        return pd.concat(frames, axis=1).reset_index()

    def save(self, path: str | Path) -> Path:
        """Write the result file (atomically; the same bytes `lasthop run` writes)."""
        from .results import write_result

        return _user_errors(lambda: write_result(Path(path), self.doc))

    def plot(self, what: str = "all") -> Figure:
        """A figure of this run, drawn by `lasthop plot`'s own code (`lasthop.plots`): "all"
        (goodput and latency per flow over time, cwnd and the AP's backlog beneath), "cdf",
        "ampdu", or the name (or alias) of any stored series over time. The caller shows or
        saves it; no backend is chosen here."""
        from . import plots

        def draw() -> Figure:
            if what == "all":
                return plots.plot_all(self.doc)
            if what == "cdf":
                return plots.plot_cdf(self.doc)
            if what == "ampdu":
                return plots.plot_ampdu(plots.results_from_doc(self.doc, self.name or "result"))
            return plots.plot_timeseries(self.doc, what)
        return _user_errors(draw)


class SweepRun:
    """A sweep directory: the summary frame and every run in it."""

    def __init__(self, out_dir: Path) -> None:
        from .analysis import load as _load

        self.out_dir = Path(out_dir)
        self._results = _user_errors(lambda: _load(self.out_dir))
        self.manifest = json.loads((self.out_dir / "sweep.json").read_text())

    @property
    def summary(self) -> pd.DataFrame:
        """One row per flow per run (summary.parquet)."""
        import pyarrow.parquet as pq

        return pq.read_table(self.out_dir / "summary.parquet").to_pandas()

    @property
    def varied(self) -> list[str]:
        """The varied keys: typed columns of `summary`, each with a `<KEY>#text` twin."""
        return list(self._results.varied)

    @property
    def units(self) -> dict[str, str]:
        """Varied keys stored in a unit: "ns" for durations, "bit/s" for rates."""
        return dict(self._results.units)

    @property
    def runs(self) -> list[dict[str, Any]]:
        """The manifest's run records: point, seed, overrides, file."""
        return list(self.manifest["runs"])

    def run(self, point: int, seed: int) -> Run:
        """The `Run` of grid point `point` with `seed`."""
        from .results import load_result

        for rec in self.runs:
            if rec["point"] == point and rec["seed"] == seed:
                p = (self.out_dir / rec["file"]).resolve()
                return Run(_user_errors(lambda: load_result(p)), path=p)
        raise LasthopError(f"no run for point {point}, seed {seed} in {self.out_dir}")
