"""Parameter sweeps (docs/experiments.md, "Sweeps").

A sweep is a base spec (a TOML file or a dict with the TOML structure), a list of
`(KEY, [values])` to vary and a number of seeds. The grid is the Cartesian product of the value
lists in the order given (the first key varies slowest); each grid point runs with the seeds
`sim.seed .. sim.seed + K - 1`.

    from lasthop.sweeps import Sweep, run_sweep
    sw = Sweep(base="experiments/demo.toml", vary=[("mac.max_ampdu_mpdus", [1, 8, 64])], seeds=3)
    result = run_sweep(sw, "results/demo-sweep", jobs=None, ray=None, progress=True)
    result.summary            # pyarrow.Table, the content of summary.parquet
    result.runs               # the manifest's run records
    result.load(point, seed)  # one result file (dict)

Overrides are applied to the raw TOML document (`stations[1].mcs` is the second `[[stations]]`
table of the file), then every point is validated and normalized by `lasthop.spec` (and the
simulator's own checks) before anything is written or run, so a bad key or value is one error
naming `--vary KEY`.

Output (DIR = out_dir):

    DIR/sweep.json          manifest, written first
    DIR/runs/<key>.json     one result file per run (or CACHE/<key>.json with `cache`)
    DIR/summary.parquet     one row per (run, flow), written last

Every file is written atomically (temporary file in the same directory, then rename). The run
key is content-addressed (normalized spec, seed, code version), so a run whose file exists and
parses is not run again: interrupted sweeps resume, and sweeps sharing a cache share runs.

Runs execute in worker processes (`concurrent.futures.ProcessPoolExecutor`, forkserver start
method on Linux) or as Ray tasks (`ray="local"` or a cluster address). Workers only compute the
result text (`results.dumps(results.envelope(...))`, exactly what `lasthop run` writes); the
driver writes every file, so the layout and bytes are identical whatever executes the runs.
"""

from __future__ import annotations

import contextlib
import copy
import hashlib
import itertools
import json
import os
import re
import signal
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterable, Iterator, Sequence

from .children import die_with_parent
from .results import FORMAT as RESULT_FORMAT
from .results import ResultError, dumps, envelope, file_sha256, load_result, result_text
from .spec import (
    SECTIONS,
    Spec,
    SpecError,
    SpecFileError,
    _unknown_key,
    normalize,
    parse_toml,
    read_spec_file,
    toml_reader,
)
from .summary_schema import (
    VariedType,
    flow_rows,
    summary_columns,
    value_label,
)
from .results import unwritable_dir, write_atomic

__all__ = [
    "MANIFEST_FORMAT",
    "MANIFEST_VERSION",
    "Sweep",
    "SweepError",
    "SweepInterrupted",
    "SweepPlan",
    "SweepResult",
    "apply_override",
    "check_key",
    "parse_value",
    "parse_vary",
    "plan_sweep",
    "run_key",
    "run_sweep",
    "summary_columns",
    "value_label",
    "VariedType",
]

MANIFEST_FORMAT = "lasthop.sweep"
MANIFEST_VERSION = 1
KEY_HEX_DIGITS = 20

# Tables that are arrays of tables in the TOML (indexed as `stations[i]`), and plain tables.
ARRAY_TABLES = ("stations", "flows")
TOP_SCALARS = ("name", "description")


class SweepError(Exception):
    """A problem with the sweep the user can fix (bad --vary key or value, bad output dir)."""


class SweepInterrupted(KeyboardInterrupt):
    """The sweep was stopped (Ctrl-C); completed run files are kept, nothing partial is left."""

    def __init__(self, done: int, cached: int, total: int) -> None:
        super().__init__(done, cached, total)
        self.done = done
        self.cached = cached
        self.total = total

    def __str__(self) -> str:
        return (f"sweep interrupted: {self.done + self.cached}/{self.total} runs complete "
                f"({self.cached} cached); run the same command again to resume")


# --- keys and values -------------------------------------------------------------------------

_PART = re.compile(r"^([A-Za-z_][A-Za-z0-9_-]*)(?:\[(\d+)\])?$")


def _split_key(key: str) -> list[tuple[str, int | None]]:
    parts = []
    for text in key.split("."):
        m = _PART.match(text)
        if not m:
            raise SweepError(f"--vary {key}: not a key path; write e.g. mac.max_ampdu_mpdus, "
                             f"flows[0].rate, stations[1].mcs")
        parts.append((m.group(1), None if m.group(2) is None else int(m.group(2))))
    return parts


def check_key(key: str, doc: dict[str, Any]) -> list[tuple[str, int | None]]:
    """Check that `key` names a setting of the spec schema (and, for `stations[i]` /
    `flows[i]`, a table that exists in `doc`); return its parsed parts or raise SweepError."""
    parts = _split_key(key)
    name, index = parts[0]
    where = f"--vary {key}"
    if name not in SECTIONS[""]:
        raise SweepError(f"{where}: {_unknown_key(name, SECTIONS[''])}")
    if name in TOP_SCALARS:
        if index is not None or len(parts) > 1:
            raise SweepError(f"{where}: {name} is a top-level string; it has no index or keys")
        return parts
    allowed = SECTIONS[name]
    if name in ARRAY_TABLES:
        tables = doc.get(name, [])
        n = len(tables) if isinstance(tables, list) else 0
        span = f"{name}[0]..{name}[{n - 1}]" if n else "none"
        if index is None:
            raise SweepError(f"{where}: index the [[{name}]] table, e.g. {name}[0].KEY "
                             f"(the spec has {n}: {span})")
        if index >= n:
            raise SweepError(f"{where}: no such table: the spec has {n} [[{name}]] table(s)"
                             + (f" ({span})" if n else ""))
    elif index is not None:
        raise SweepError(f"{where}: [{name}] is a table, not an array of tables; "
                         f"write {name}.KEY")
    if len(parts) < 2:
        raise SweepError(f"{where}: name one key of [{name}]: " + ", ".join(allowed))
    sub, sub_index = parts[1]
    if sub not in allowed:
        raise SweepError(f"{where}: {_unknown_key(sub, allowed)}")
    head = name if index is None else f"{name}[{index}]"
    nested = f"{name}.{sub}"
    if nested in SECTIONS and sub_index is None and len(parts) > 2:
        # A table within a table ([mac.ofdma], [channel.interference]): one key of it.
        key3, index3 = parts[2]
        if key3 not in SECTIONS[nested]:
            raise SweepError(f"{where}: {_unknown_key(key3, SECTIONS[nested])}")
        if index3 is not None or len(parts) > 3:
            raise SweepError(f"{where}: {head}.{sub}.{key3} is a value; it has no index or sub-keys")
        return parts
    if sub_index is not None or len(parts) > 2:
        raise SweepError(f"{where}: {head}.{sub} is a value; it has no index or sub-keys")
    return parts


def apply_override(doc: dict[str, Any], key: str, value: Any) -> None:
    """Set `key` (e.g. `flows[0].rate`, `mac.aggregation`) to `value` in the raw TOML `doc`,
    in place. The key must have passed `check_key(key, doc)`."""
    parts = _split_key(key)
    node: Any = doc
    for i, (name, index) in enumerate(parts):
        last = i == len(parts) - 1
        if not isinstance(node, dict):
            raise SweepError(f"--vary {key}: the spec's {'.'.join(p for p, _ in parts[:i])} "
                             f"is not a table")
        if index is not None:
            tables = node.get(name)
            if not isinstance(tables, list) or index >= len(tables):
                raise SweepError(f"--vary {key}: no such table {name}[{index}]")
            if last:
                tables[index] = value
            else:
                node = tables[index]
        elif last:
            node[name] = value
        else:
            node = node.setdefault(name, {})


def parse_value(text: str) -> Any:
    """A --vary value: a TOML literal (`8`, `true`, `0.1`, `"100Mbps"`, `[0, 1]`), else the
    text as a string (so `100Mbps` works)."""
    stripped = text.strip()
    tomllib = toml_reader()
    try:
        parsed = tomllib.loads(f"v = {stripped}")
    except (tomllib.TOMLDecodeError, ValueError, RecursionError):
        return stripped
    if set(parsed) != {"v"} or not _json_able(parsed["v"]):
        return stripped  # e.g. a date-time literal, or text smuggling in another key
    return parsed["v"]


def _json_able(v: Any) -> bool:
    if isinstance(v, (bool, int, float, str)):
        return True
    if isinstance(v, list):
        return all(_json_able(x) for x in v)
    if isinstance(v, dict):
        return all(_json_able(x) for x in v.values())
    return False


def _split_values(text: str) -> list[str]:
    """Split `V1,V2,...` on commas outside quotes and brackets (`[0, 1],all` is two values)."""
    out, cur, depth, quote = [], [], 0, ""
    for ch in text:
        if quote:
            cur.append(ch)
            if ch == quote:
                quote = ""
        elif ch in "\"'":
            quote = ch
            cur.append(ch)
        elif ch in "[{":
            depth += 1
            cur.append(ch)
        elif ch in "]}":
            depth -= 1
            cur.append(ch)
        elif ch == "," and depth <= 0:
            out.append("".join(cur))
            cur = []
        else:
            cur.append(ch)
    out.append("".join(cur))
    return out


def parse_vary(text: str) -> tuple[str, list[Any]]:
    """`KEY=V1,V2,...` -> (KEY, [parsed values])."""
    key, sep, values = text.partition("=")
    key = key.strip()
    if not sep or not key:
        raise SweepError(f"--vary {text}: expected KEY=V1,V2,... (e.g. mac.max_ampdu_mpdus=1,8,64)")
    items = _split_values(values)
    if any(not item.strip() for item in items):
        raise SweepError(f"--vary {key}: empty value in {values!r}; expected KEY=V1,V2,...")
    return key, [parse_value(item) for item in items]


def _canonical(obj: Any) -> str:
    return json.dumps(obj, sort_keys=True, separators=(",", ":"))


def run_key(normalized: dict[str, Any], seed: int, code_version: str) -> str:
    """Content address of one run: 20 hex digits of sha256 of the canonical JSON."""
    text = _canonical({"spec": normalized, "seed": seed, "code_version": code_version})
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:KEY_HEX_DIGITS]


# --- the plan -------------------------------------------------------------------------------


@dataclass
class Sweep:
    """What to run: `base` (TOML path or dict with the TOML structure), `vary` (a list of
    `(KEY, [values])`, or a dict), `seeds` (how many seeds per grid point)."""

    base: str | Path | dict[str, Any]
    vary: Sequence[tuple[str, Sequence[Any]]] | dict[str, Sequence[Any]] = field(
        default_factory=list)
    seeds: int = 1


@dataclass
class SweepPlan:
    """A validated sweep: every grid point normalized, every run keyed."""

    name: str
    code_version: str
    base: dict[str, Any] | None  # the normalized base spec (None if only the points are valid)
    vary: list[tuple[str, list[Any]]]
    seeds: list[int]
    points: list[dict[str, Any]]  # {"point", "overrides", "spec": Spec}
    runs: list[dict[str, Any]]  # manifest run records (without "file")


def _vary_list(vary: Any) -> list[tuple[str, list[Any]]]:
    items = list(vary.items()) if isinstance(vary, dict) else list(vary)
    out = []
    for item in items:
        try:
            key, values = item
        except (TypeError, ValueError):
            raise SweepError(f"vary: expected (KEY, [values]) pairs, got {item!r}") from None
        if isinstance(values, (str, bytes)) or not isinstance(values, Iterable):
            raise SweepError(f"--vary {key}: expected a list of values, got {values!r}")
        values = list(values)
        if not values:
            raise SweepError(f"--vary {key}: no values")
        for v in values:
            if not _json_able(v):
                raise SweepError(f"--vary {key}: {v!r} is not a TOML value")
        out.append((str(key), values))
    seen = set()
    for key, _ in out:
        if key in seen:
            raise SweepError(f"--vary {key}: given twice; list all its values in one --vary")
        seen.add(key)
    return out


def _load_base(base: Any) -> tuple[dict[str, Any], str]:
    if isinstance(base, dict):
        return copy.deepcopy(base), "scenario"
    text, default_name = read_spec_file(base)
    return parse_toml(text, str(base)), default_name


def _validate(doc: dict[str, Any], default_name: str) -> Spec:
    return normalize(doc, default_name, rules=True)


def _code_version() -> str:
    from .version import code_version

    return code_version()


def _native_version() -> str:
    from . import _native

    return str(_native.version())


def plan_sweep(sweep: Sweep, code_version: str | None = None) -> SweepPlan:
    """Validate every grid point; raise SweepError/SpecError/SpecFileError on the first problem.
    Nothing is written."""
    if isinstance(sweep.seeds, bool) or not isinstance(sweep.seeds, int) or sweep.seeds < 1:
        raise SweepError(f"--seeds {sweep.seeds!r}: an integer >= 1")
    vary = _vary_list(sweep.vary)
    raw, default_name = _load_base(sweep.base)
    for key, _ in vary:
        check_key(key, raw)
    version = code_version or _code_version()

    base_spec: Spec | None = None
    base_error: SpecError | None = None
    try:
        base_spec = _validate(copy.deepcopy(raw), default_name)
    except SpecError as e:
        base_error = e
    if base_error is not None and not vary:
        raise base_error

    points: list[dict[str, Any]] = []
    for index, combo in enumerate(itertools.product(*(values for _, values in vary))):
        overrides = {key: value for (key, _), value in zip(vary, combo)}
        doc = copy.deepcopy(raw)
        for key, value in overrides.items():
            apply_override(doc, key, copy.deepcopy(value))
        try:
            spec = _validate(doc, default_name)
        except SpecError as e:
            if base_error is not None and (e.path, e.value, e.allowed) == (
                    base_error.path, base_error.value, base_error.allowed):
                raise base_error from None  # the spec itself is wrong, whatever is varied
            given = " ".join(f"{k}={value_label(v)}" for k, v in overrides.items())
            raise SweepError(f"--vary {given}: {e}") from None
        points.append({"point": index, "overrides": overrides, "spec": spec})

    first = points[0]["spec"]
    base_seed = (base_spec or first).seed
    seeds = [base_seed + i for i in range(sweep.seeds)]
    if seeds[-1] >= 2**64:
        raise SweepError(f"--seeds {sweep.seeds}: sim.seed + seeds - 1 must be < 2^64")
    runs = []
    for p in points:
        for seed in seeds:
            runs.append({"point": p["point"], "seed": seed, "overrides": p["overrides"],
                         "key": run_key(p["spec"].normalized, seed, version)})
    return SweepPlan(name=(base_spec or first).name, code_version=version,
                     base=base_spec.normalized if base_spec else None, vary=vary, seeds=seeds,
                     points=points, runs=runs)


# --- files --------------------------------------------------------------------------------


def _check_writable_dir(d: Path, what: str) -> None:
    problem = unwritable_dir(d, what)
    if problem:
        raise SweepError(problem)


def _manifest(plan: SweepPlan, runs: list[dict[str, Any]]) -> dict[str, Any]:
    return {
        "format": MANIFEST_FORMAT,
        "format_version": MANIFEST_VERSION,
        "code_version": plan.code_version,
        "name": plan.name,
        "spec": plan.base,
        "vary": [[key, values] for key, values in plan.vary],
        "seeds": plan.seeds,
        "runs": runs,
    }


def _write_manifest(out: Path, manifest: dict[str, Any]) -> None:
    write_atomic(out / "sweep.json", (json.dumps(manifest, sort_keys=True, indent=1, ensure_ascii=True,
                                                  allow_nan=False) + "\n").encode("ascii"))


def _cached_doc(path: Path, spec: dict[str, Any], seed: int, version: str
                ) -> dict[str, Any] | None:
    """The result document at `path` if it exists, parses and is this run's; else None."""
    if not path.is_file():
        return None
    try:
        doc = load_result(path)
    except ResultError:
        return None
    if "checksum" not in doc:
        return None  # not sealed (written by hand or by an older lasthop): simulate it again
    if doc["seed"] != seed or doc["code_version"] != version or doc["spec"] != spec:
        return None
    return doc

# --- summary.parquet ------------------------------------------------------------------------


def build_summary(plan: SweepPlan, runs: list[dict[str, Any]],
                  rows_by_key: dict[str, list[dict[str, Any]]]) -> Any:
    """The summary as a pyarrow Table, rows sorted by (point, seed, flow)."""
    import pyarrow as pa

    keys = [k for k, _ in plan.vary]
    types = {k: VariedType.of(vs) for k, vs in plan.vary}
    columns = summary_columns(types)
    cols: dict[str, list[Any]] = {name: [] for name, _ in columns}
    for rec in sorted(runs, key=lambda r: (r["point"], r["seed"])):
        typed = {k: types[k].value(rec["overrides"][k]) for k in keys}
        texts = {f"{k}#text": value_label(rec["overrides"][k]) for k in keys}
        for row in sorted(rows_by_key[rec["key"]], key=lambda r: (r["flow"] is None, r["flow"])):
            full = {"point": rec["point"], "seed": rec["seed"], "run": rec["key"], **typed,
                    **texts, **row}
            for name, _ in columns:
                cols[name].append(full[name])
    fields = [types[name].field(name) if name in types
              else pa.field(name, {"bool": pa.bool_()}.get(t) or getattr(pa, t)())
              for name, t in columns]
    return pa.Table.from_pydict(cols, schema=pa.schema(fields))


def _parquet_bytes(table: Any) -> bytes:
    import pyarrow as pa
    import pyarrow.parquet as pq

    sink = pa.BufferOutputStream()
    pq.write_table(table, sink, compression="zstd", store_schema=True)
    return sink.getvalue().to_pybytes()


# --- execution ----------------------------------------------------------------------------


def _execute(spec_json: str, seed: int, code_version: str, native_version: str) -> str:
    """One run, in a worker: the text of its result file (what `lasthop run` would write),
    stamped with the driver's `code_version`. The worker's native module must be the driver's
    (`native_version`): the simulation is all in it. (A Python source edited after the driver
    started changes the source id a new worker would compute, not what it simulates.)"""
    from . import _native

    here = str(_native.version())
    if here != native_version:
        raise RuntimeError(f"worker runs lasthop {here}, the driver {native_version}")
    data_text = _native.run(spec_json, seed, None)
    if not data_text.startswith("{"):
        raise RuntimeError("simulator returned something other than a JSON object")
    # Both texts are canonical (`Spec.to_json`, the simulator's): stored as they are.
    return result_text(spec_json, seed, data_text, code_version)


def _worker_init(driver_pid: int | None = None) -> None:
    # Ctrl-C and SIGTERM are the driver's to handle: it stops the workers itself, and only it
    # writes files.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    die_with_parent()
    if driver_pid is not None:
        # A worker blocks on its task queue forever if the driver is killed (SIGKILL, OOM):
        # watch the driver and leave with it.
        threading.Thread(target=_watch_driver, args=(driver_pid,), daemon=True).start()


def _driver_gone(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except (ProcessLookupError, PermissionError):  # gone, or its pid reused by another user
        return True
    try:  # a killed driver that its own parent has not reaped yet is a zombie, not alive
        with open(f"/proc/{pid}/stat", "rb") as f:
            return f.read().rsplit(b")", 1)[1].split()[0] == b"Z"
    except (OSError, IndexError):
        return False


def _watch_driver(pid: int) -> None:
    while True:
        time.sleep(0.5)
        if _driver_gone(pid):
            os._exit(1)


class _StopFlag:
    """SIGINT or SIGTERM sets a flag (checked by the driver loop between writes), so the pool is
    shut down and its workers ended before the driver leaves; a second signal raises."""

    def __init__(self) -> None:
        self.stop = False
        self.old: dict[int, Any] = {}

    def __enter__(self) -> _StopFlag:
        if threading.current_thread() is threading.main_thread():
            for s in (signal.SIGINT, signal.SIGTERM):
                self.old[s] = signal.signal(s, self._handle)
        return self

    def _handle(self, signum: int, frame: Any) -> None:
        if self.stop:
            raise KeyboardInterrupt
        self.stop = True

    def __exit__(self, *exc: object) -> None:
        for s, h in self.old.items():
            signal.signal(s, h)


Task = tuple[str, str, int]  # (run key, spec JSON, seed)
OnDone = Callable[[str, str], None]  # (run key, result text)


@contextlib.contextmanager
def _main_not_reimported() -> Iterator[None]:
    """While the pool starts its workers: a spawn or forkserver worker imports the main module
    again (multiprocessing's `get_preparation_data` names it by `__spec__` or `__file__`), so a
    plain script that starts a sweep without an `if __name__ == "__main__"` guard would start
    it again in every worker and break the pool. The workers need only lasthop, so the main
    module is not named to them; it is restored at once."""
    main = sys.modules.get("__main__")
    saved = {a: main.__dict__[a] for a in ("__file__", "__spec__") if main is not None and a in main.__dict__}
    try:
        if main is not None:
            main.__dict__.pop("__file__", None)
            if "__spec__" in saved:
                main.__dict__["__spec__"] = None
        yield
    finally:
        if main is not None:
            main.__dict__.update(saved)


def _run_pool(tasks: list[Task], jobs: int, version: str, on_done: OnDone,
              stop: _StopFlag) -> bool:
    """Run `tasks` on a local process pool; False if stopped early."""
    import multiprocessing
    from concurrent.futures import FIRST_COMPLETED, ProcessPoolExecutor, wait

    method = "forkserver" if sys.platform.startswith("linux") else "spawn"
    ctx = multiprocessing.get_context(method)
    if method == "forkserver":
        ctx.set_forkserver_preload(["lasthop.sweeps", "lasthop._native"])
    ex = ProcessPoolExecutor(max_workers=max(1, min(jobs, len(tasks))), mp_context=ctx,
                             initializer=_worker_init, initargs=(os.getpid(),))
    finished = False
    try:
        with _main_not_reimported():
            pending = {ex.submit(_execute, spec_json, seed, version, _native_version()): key
                       for key, spec_json, seed in tasks}
        while pending and not stop.stop:
            done, _ = wait(pending, timeout=0.2, return_when=FIRST_COMPLETED)
            for fut in done:
                key = pending.pop(fut)
                on_done(key, fut.result())
                if stop.stop:
                    break
        finished = not pending
        return finished
    finally:
        if finished:
            ex.shutdown(wait=True)
        else:
            # The workers, taken before shutdown() forgets them: a worker stays in its native
            # run until it ends, so it is terminated, not waited for.
            procs = list((getattr(ex, "_processes", None) or {}).values())
            for p in procs:
                if p.is_alive():
                    p.terminate()
            for p in procs:
                p.join(timeout=5)
            ex.shutdown(wait=False, cancel_futures=True)


def _run_ray(tasks: list[Task], jobs: int, address: str, version: str, on_done: OnDone,
             stop: _StopFlag) -> bool:
    """Run `tasks` as Ray tasks (`address` = "local" starts Ray in this process)."""
    import logging

    try:
        import ray
    except ImportError as e:
        raise SweepError(f"--ray: Ray is not installed ({e}); pip install 'ray>=2,<3'") from None

    started = False
    if not ray.is_initialized():
        if address == "local":
            ray.init(num_cpus=jobs, include_dashboard=False, log_to_driver=False,
                     logging_level=logging.ERROR)
        else:
            ray.init(address=address, log_to_driver=False, logging_level=logging.ERROR)
        started = True
    finished = False
    refs: dict[Any, str] = {}
    try:
        remote = ray.remote(num_cpus=1)(_execute)
        refs = {remote.remote(spec_json, seed, version, _native_version()): key
                for key, spec_json, seed in tasks}
        while refs and not stop.stop:
            ready, _ = ray.wait(list(refs), num_returns=1, timeout=0.2)
            if ready:
                more, _ = ray.wait(list(refs), num_returns=len(refs), timeout=0)
                ready = list(dict.fromkeys([*ready, *more]))
            for ref in ready:
                key = refs.pop(ref)
                on_done(key, ray.get(ref))
                if stop.stop:
                    break
        finished = not refs
        return finished
    finally:
        if not finished:
            for ref in refs:
                try:
                    ray.cancel(ref, force=True)
                except Exception:  # noqa: BLE001 - best effort on the way out
                    pass
        if started:
            ray.shutdown()


# --- results ------------------------------------------------------------------------------


@dataclass
class SweepResult:
    out_dir: Path
    manifest: dict[str, Any]
    summary: Any  # pyarrow.Table
    executed: int
    cached: int
    wall_s: float

    @property
    def runs(self) -> list[dict[str, Any]]:
        return self.manifest["runs"]

    @property
    def summary_path(self) -> Path:
        return self.out_dir / "summary.parquet"

    def run_path(self, point: int, seed: int) -> Path:
        for rec in self.runs:
            if rec["point"] == point and rec["seed"] == seed:
                return (self.out_dir / rec["file"]).resolve()
        raise KeyError(f"no run for point {point}, seed {seed}")

    def load(self, point: int, seed: int) -> dict[str, Any]:
        """The result document of grid point `point` with `seed`."""
        return load_result(self.run_path(point, seed))


def run_sweep(sweep: Sweep, out_dir: str | Path | None = None, jobs: int | None = None,
              ray: str | None = None, progress: bool = True, cache: str | Path | None = None,
              ) -> SweepResult:
    """Validate, then run every (point, seed) not already on disk; write the manifest, the run
    files and summary.parquet. Raises SweepError/SpecError/SpecFileError before writing
    anything; SweepInterrupted on Ctrl-C (completed runs are kept); RuntimeError if a run fails.
    `out_dir` defaults to `results/<spec name>-sweep`; `cache` keeps the run files in that
    directory instead of `out_dir/runs`. `jobs` is the pool size (default: CPUs; with
    `ray="local"` the CPUs Ray may use). `ray` is "local" or a cluster address; if Ray is already
    initialized in this process it is used as it is and left running, else it is started for
    this sweep and shut down after it."""
    t0 = time.monotonic()
    plan = plan_sweep(sweep)
    if jobs is not None and (isinstance(jobs, bool) or not isinstance(jobs, int) or jobs < 1):
        raise SweepError(f"-j {jobs!r}: an integer >= 1")
    jobs = jobs or os.cpu_count() or 1
    out = Path(out_dir) if out_dir is not None else Path("results") / f"{plan.name}-sweep"
    runs_dir = Path(cache) if cache is not None else out / "runs"
    _check_writable_dir(out, "output directory")
    if cache is not None:
        _check_writable_dir(runs_dir, "cache directory")
    if ray is not None:
        if not isinstance(ray, str) or not ray:
            raise SweepError("--ray: an address (host:port, ray://...) or 'local'")
        try:
            import ray as _ray  # noqa: F401 - checked before anything is written
        except ImportError as e:
            raise SweepError(f"--ray: Ray is not installed ({e})") from None

    out.mkdir(parents=True, exist_ok=True)
    with _DirLock(out):
        return _run_locked(plan, out, runs_dir, cache, jobs, ray, progress, t0)


def _run_locked(plan: SweepPlan, out: Path, runs_dir: Path, cache: str | Path | None, jobs: int,
                ray: str | None, progress: bool, t0: float) -> SweepResult:
    """`run_sweep` once `out` is this process's: the manifest, the runs, the summary."""
    from .progress import SweepProgress

    _remove_stale_tmp(runs_dir, shared=cache is not None)
    runs_dir.mkdir(parents=True, exist_ok=True)
    records = []
    for rec in plan.runs:
        path = runs_dir / f"{rec['key']}.json"
        file = f"runs/{rec['key']}.json" if cache is None else os.path.relpath(path, out)
        records.append({**rec, "file": file})
    manifest = _manifest(plan, records)
    _write_manifest(out, manifest)

    # One task per distinct run key (two grid points may normalize to the same spec).
    specs: dict[str, tuple[dict[str, Any], int]] = {}
    for rec, p in zip(plan.runs, _points_of(plan)):
        specs.setdefault(rec["key"], (p["spec"].normalized, rec["seed"]))
    rows_by_key: dict[str, list[dict[str, Any]]] = {}
    tasks: list[Task] = []
    for key, (spec, seed) in specs.items():
        doc = _cached_doc(runs_dir / f"{key}.json", spec, seed, plan.code_version)
        if doc is not None:
            rows_by_key[key] = flow_rows(doc)
        else:
            tasks.append((key, _canonical(spec), seed))
    n_cached = len(specs) - len(tasks)

    bar = SweepProgress(len(specs), cached=n_cached, label=plan.name, quiet=not progress)
    executed = 0

    def on_done(key: str, text: str) -> None:
        nonlocal executed
        doc = json.loads(text)
        if not isinstance(doc, dict) or doc.get("format") != RESULT_FORMAT:
            raise RuntimeError(f"run {key}: worker returned something other than a result")
        write_atomic(runs_dir / f"{key}.json", text.encode("ascii"))
        rows_by_key[key] = flow_rows(doc)
        executed += 1
        bar.update(executed)

    finished = True
    if tasks:
        with _StopFlag() as stop:
            try:
                if ray is not None:
                    finished = _run_ray(tasks, jobs, ray, plan.code_version, on_done, stop)
                else:
                    finished = _run_pool(tasks, jobs, plan.code_version, on_done, stop)
            except BaseException:
                bar.finish(ok=False)
                raise
    if not finished:
        bar.finish(ok=False)
        raise SweepInterrupted(executed, n_cached, len(specs))
    bar.finish()

    table = build_summary(plan, records, rows_by_key)
    # The manifest again, now with the hash of every run file, so that readers can tell a run
    # file that changed after the sweep from the one it summarized.
    digests = {key: file_sha256(runs_dir / f"{key}.json") for key in specs}
    records = [{**r, "sha256": digests[r["key"]]} for r in records]
    manifest = _manifest(plan, records)
    _write_manifest(out, manifest)
    write_atomic(out / "summary.parquet", _parquet_bytes(table))
    return SweepResult(out_dir=out, manifest=manifest, summary=table, executed=executed,
                       cached=n_cached, wall_s=time.monotonic() - t0)


class _DirLock:
    """An exclusive lock on a sweep's output directory (`.lock`, flock): a second sweep into the
    same directory stops with one line instead of mixing its manifest and summary with ours.
    The kernel drops the lock when the process dies, however it dies."""

    def __init__(self, d: Path) -> None:
        self.path = d / ".lock"
        self.fd: int | None = None

    def __enter__(self) -> "_DirLock":
        import fcntl

        fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            try:
                holder = os.pread(fd, 32, 0).decode("ascii", "replace").strip() or "?"
            finally:
                os.close(fd)
            raise SweepError(f"{self.path.parent}: another sweep (pid {holder}) is writing into this "
                             "directory; wait for it or choose another -o") from None
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"{os.getpid()}\n".encode("ascii"), 0)
        self.fd = fd
        return self

    def __exit__(self, *exc: object) -> None:
        if self.fd is not None:
            os.close(self.fd)  # releases the lock; the file stays (removing it would race)
            self.fd = None


def _remove_stale_tmp(runs_dir: Path, shared: bool) -> None:
    """Temporary run files an earlier sweep into this directory left when it was killed (the
    directory lock says no other writer is active; a shared --cache may have one, so only
    files older than an hour are taken there)."""
    now = time.time()
    for p in runs_dir.glob(".*.json.*.tmp"):
        try:
            if not shared or now - p.stat().st_mtime > 3600:
                p.unlink()
        except OSError:
            pass


def _points_of(plan: SweepPlan) -> list[dict[str, Any]]:
    by_index = {p["point"]: p for p in plan.points}
    return [by_index[rec["point"]] for rec in plan.runs]
