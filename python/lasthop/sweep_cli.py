"""`lasthop sweep` and `lasthop bench --sweep`: the command line over `lasthop.sweeps`
(docs/experiments.md, "Sweeps")."""
from __future__ import annotations

import copy
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Callable, Sequence

from .spec import parse_toml
from .sweeps import (
    Sweep,
    SweepError,
    SweepInterrupted,
    _code_version,
    _execute,
    _native_version,
    _validate,
    parse_vary,
    run_sweep,
)

__all__ = ["add_parser", "bench_sweep", "cmd_sweep", "point_table"]


def add_parser(sub: Any) -> None:
    s = sub.add_parser("sweep", help="run a spec over a grid of parameter values and seeds")
    s.add_argument("spec", metavar="SPEC", help="base scenario spec (TOML, docs/spec.md)")
    s.add_argument("--vary", action="append", default=[], metavar="KEY=V1,V2,...",
                   help="a spec key and its values, e.g. mac.max_ampdu_mpdus=1,8,64 or "
                        "flows[0].rate=10Mbps,50Mbps (repeatable; the grid is the product)")
    s.add_argument("--seeds", type=_positive("--seeds"), default=1, metavar="K",
                   help="seeds per grid point: sim.seed .. sim.seed+K-1 (default 1)")
    s.add_argument("-j", "--jobs", type=_positive("-j"), default=None, metavar="N",
                   help="parallel runs (default: number of CPUs)")
    s.add_argument("--ray", default=None, metavar="ADDRESS",
                   help="run as Ray tasks on the cluster at ADDRESS, or 'local' to start Ray "
                        "in this process")
    s.add_argument("-o", "--out", default=None, metavar="DIR",
                   help="output directory (default: results/<spec name>-sweep)")
    s.add_argument("--cache", default=None, metavar="DIR",
                   help="keep run files in DIR instead of OUT/runs (shared between sweeps)")
    s.add_argument("-q", "--quiet", action="store_true",
                   help="no progress bar and no summary; print only the summary path")


def _positive(flag: str) -> Callable[[str], int]:
    import argparse

    def parse(text: str) -> int:
        try:
            v = int(text, 10)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{flag} {text!r}: an integer >= 1") from None
        if v < 1:
            raise argparse.ArgumentTypeError(f"{flag} {text}: an integer >= 1")
        return v

    return parse


def point_table(table: Any, keys: Sequence[str], limit: int = 40) -> list[str]:
    """Per grid point: the varied values, runs, mean total goodput (Mb/s) and mean p95 delay
    (ms) across seeds."""
    cols = table.to_pydict()
    per: dict[int, dict[str, Any]] = {}
    for i, point in enumerate(cols["point"]):
        p = per.setdefault(point, {"labels": [cols[f"{k}#text"][i] for k in keys], "runs": {},
                                   "p95": []})
        run = cols["run"][i], cols["seed"][i]
        p["runs"][run] = p["runs"].get(run, 0.0) + (cols["goodput_bps"][i] or 0.0)
        if cols["delay_p95_ms"][i] is not None:
            p["p95"].append(cols["delay_p95_ms"][i])
    header = ["point", *keys, "seeds", "goodput Mb/s", "p95 delay ms"]
    rows = []
    for point in sorted(per):
        p = per[point]
        good = sum(p["runs"].values()) / len(p["runs"]) / 1e6
        p95 = f"{sum(p['p95']) / len(p['p95']):.3f}" if p["p95"] else "-"
        rows.append([str(point), *p["labels"], str(len(p["runs"])), f"{good:.2f}", p95])
    shown = rows[:limit]
    widths = [max(len(h), *(len(r[i]) for r in shown)) if shown else len(h)
              for i, h in enumerate(header)]
    lines = ["  " + "  ".join(h.rjust(w) for h, w in zip(header, widths))]
    lines += ["  " + "  ".join(c.rjust(w) for c, w in zip(r, widths)) for r in shown]
    if len(rows) > limit:
        lines.append(f"  ... {len(rows) - limit} more points (see the summary)")
    return lines


def cmd_sweep(args: Any) -> int:
    from .errors import UserError

    try:
        vary = [parse_vary(text) for text in args.vary]
        result = run_sweep(Sweep(args.spec, vary, args.seeds), args.out, jobs=args.jobs,
                           ray=args.ray, progress=not args.quiet, cache=args.cache)
    except SweepError as e:
        raise UserError(str(e)) from None
    except SweepInterrupted as e:
        print(f"lasthop: {e}", file=sys.stderr)
        return 130
    except RuntimeError as e:
        print(f"lasthop: simulation failed: {e}", file=sys.stderr)
        return 1
    if args.quiet:
        print(result.summary_path)
        return 0
    total = len({r["key"] for r in result.runs})
    print(f"sweep {result.manifest['name']}: {len(result.runs)} runs "
          f"({total} distinct): {result.executed} done, {result.cached} cached, "
          f"wall {result.wall_s:.2f} s")
    print("per point, mean over seeds (goodput: sum over flows; p95 delay: mean over flows)")
    for line in point_table(result.summary, [k for k, _ in result.manifest["vary"]]):
        print(line)
    print(f"summary: {result.summary_path}")
    return 0


# --- benchmark ------------------------------------------------------------------------------

BENCH_SPEC = """\
name = "bench-sweep"
[sim]
duration = "10s"
bin = "1s"
seed = 1
[phy]
standard = "ofdm"
[[stations]]
count = 10
mcs = 7
[[flows]]
direction = "up"
pattern = "poisson"
rate = "2Mbps"
packet_size = 100
"""


def bench_sweep(runs: int = 24, target_s: float = 1.0, out: Any = None) -> int:
    """Time `runs` runs of ~`target_s` wall each at -j 1 and at -j 2; print runs/s and the
    speedup. Not a test: timings are reported, never asserted."""
    import shutil

    out = out or sys.stdout
    doc = parse_toml(BENCH_SPEC, "bench-sweep")
    spec = _validate(copy.deepcopy(doc), "bench-sweep")
    t = time.perf_counter()
    _execute(spec.to_json(), 1, _code_version(), _native_version())
    per_sim_s = (time.perf_counter() - t) / (spec.duration_ns / 1e9)
    sim_s = max(0.1, round(target_s / max(per_sim_s, 1e-6), 1))
    doc["sim"]["duration"] = f"{sim_s:g}s"
    print(f"lasthop bench --sweep ({_code_version()}): {runs} runs of {doc['name']} "
          f"({sim_s:g} s simulated, ~{sim_s * per_sim_s:.2f} s wall each), "
          f"{os.cpu_count()} CPU(s)", file=out)
    rates = {}
    tmp = Path(tempfile.mkdtemp(prefix="lasthop-bench-sweep-"))
    try:
        for jobs in (1, 2):
            d = tmp / f"j{jobs}"
            t = time.perf_counter()
            res = run_sweep(Sweep(doc, [], runs), d, jobs=jobs, progress=False)
            wall = time.perf_counter() - t
            rates[jobs] = res.executed / wall
            print(f"  -j {jobs}: {res.executed} runs in {wall:6.2f} s = {rates[jobs]:.2f} runs/s",
                  file=out)
            out.flush()
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    print(f"  speedup -j 2 / -j 1: {rates[2] / rates[1]:.2f}x", file=out)
    return 0
