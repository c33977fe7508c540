"""The bench's TCP cells: the cells researchers sweep most, timed as they are run and, with
`--compare-ns3`, beside ns-3 on the same cell.

One bulk download per station (CUBIC or BBR) from a server behind the AP to 1, 10 or 20
stations, in the cell of `reference/ns3/tcp.cc`: VHT 80 MHz MCS 9 with 2 streams, A-MPDUs of up
to 64 MPDUs, FQ-CoDel with a 10240-packet limit above a 500-frame firmware queue without AQL,
a 10 Gb/s wire with 1 µs of delay, 11 s simulated with the downloads from 6 s, as in ns-3's cell
(2 s with `--quick`, the downloads from 0). Per cell, each in a fresh process as the scale
series does (`scale.py`):
- the native run alone (`_native.run`, the best of `REPEATS`): its events, wall time, ns per
  event and delivered MPDUs per wall second;
- `lasthop run --quiet` as a user runs it, the best of `REPEATS` processes: its wall time, and
  what it adds to the native run (`over ms`: the interpreter's start, the imports, loading the
  spec and writing the result). For the first cell it is taken apart (`overhead_parts`, each
  the best of `REPEATS` fresh children): the interpreter's start (`python -c pass`), the imports
  the run adds to it (`-X importtime`'s top-level cumulative times, less those of `python -c
  pass`; the instrumented import is a little slower), and the run's own steps (the spec read,
  the code version's first call, the result written and fsynced), timed in place;
- `lasthop-live run --quiet` (`standalone s`), the standalone binary writing the same result
  file without starting Python (where it is built), the best of `REPEATS` processes.
With `--compare-ns3` (a checkout with `reference/ns3/` and ns-3.37 from Debian's libns3-dev),
`tcp.cc` runs the CUBIC cells as `reference/ns3/compare_tcp.py` does (the stations associate
first, downloads from 6 s), the best of `REPEATS` runs as on lasthop's side (one with `--quick`),
and the ratios of its wall time to lasthop's native, process and standalone times are printed. Both sides simulate the same 5 s of downloads: lasthop's stations
are associated from the start and idle until 6 s as ns-3's are while they associate (ns-3's
first 6 s alone take 0.03 s of its wall time at 1 station, 0.11 s at 20). `tcp.cc` has no BBR: those cells run on lasthop's side only.
With `--instructions` (valgrind installed), each cell's native run is also counted in
instructions under cachegrind (`--cache-sim=no`): the child that loads the spec and runs it,
less the same child stopped before the run, over the run's events. The count does not depend on
what else the machine does (the 1-station CUBIC cell of 2 s, counted twice: 464,214,805 and
464,232,255 instructions, 0.004 % apart, 2,562 per event), so it decides an A/B of two builds where the wall clock on a
shared two-core machine does not (the same build there reads 220 to 417 ns per event); it counts
work, not time (cache misses and branch mispredictions are not in it).
Nothing is asserted; the figures are printed.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from ..children import die_with_parent, run_group
from .scale import _NATIVE, _run_wait4, child_env

__all__ = ["AP_FIRMWARE", "CELLS", "cell_toml", "count_instructions", "overhead_parts", "run_tcp_cells",
           "valgrind_missing"]

CELLS = ((1, "cubic"), (10, "cubic"), (20, "cubic"), (1, "bbr"), (10, "bbr"), (20, "bbr"))
DURATION_S = 11.0
QUICK_DURATION_S = 2.0
REPEATS = 3
# ns-3's side (reference/ns3/compare_tcp.py): downloads start once every station has associated.
NS3_APP_START_S = 6.0
NS3_MEASURE_FROM_S = 6.5
NS3_DIR = Path(__file__).resolve().parents[3] / "reference" / "ns3"
NS3_LIBS = ("ns3-wifi ns3-applications ns3-internet ns3-mobility ns3-network ns3-core "
            "ns3-traffic-control ns3-point-to-point").split()


# The cell's AP: FQ-CoDel above 500 frames of firmware queue (ath10k's push), no AQL.
AP_FIRMWARE = 'qdisc = "fq_codel"\nqueue_limit = 10240\ndriver = "firmware"\nhw_queue_limit = 500\naql = false'


def cell_toml(n: int, cc: str, end_s: float, warmup_s: float = 0.0, name: str = "tcp-cell",
              ap: str = AP_FIRMWARE, start_s: float = 0.0) -> str:
    """The TOML of the TCP cell with `n` stations and congestion control `cc`, its downloads
    from `start_s`; `ap` is the body of its [ap] table."""
    return f"""name = "{name}"

[sim]
duration = "{round(end_s * 1000)}ms"
warmup = "{round(warmup_s * 1000)}ms"

[phy]
standard = "vht"
channel_width = 80

[mac]
aggregation = true
max_ampdu_mpdus = 64

[ap]
{ap}

[wired]
rate = "10Gbps"
delay = "1us"
queue_limit = 1048576

[[stations]]
count = {n}
mcs = 9
nss = 2

[[flows]]
stations = "all"
direction = "down"
pattern = "tcp"
cc = "{cc}"
start = "{round(start_s * 1000)}ms"
"""


def valgrind_missing() -> str | None:
    """Why instructions cannot be counted here (one line), or None."""
    if shutil.which("valgrind") is None:
        return "no valgrind (apt-get install valgrind)"
    return None


def _cachegrind(spec: Path, runs: int, env: dict[str, str], tmp: Path) -> tuple[int, str]:
    """(instructions, stdout) of the timed child (`scale._NATIVE`) with `runs` runs (0: it loads
    the spec and stops) under cachegrind."""
    out = tmp / f"cachegrind-{runs}.out"
    proc = subprocess.run(["valgrind", "--tool=cachegrind", "--cache-sim=no", f"--cachegrind-out-file={out}",
                           sys.executable, "-c", _NATIVE, str(spec), str(runs)],
                          env=env, check=True, capture_output=True, text=True, preexec_fn=die_with_parent)
    for line in out.read_text(encoding="utf-8").splitlines():
        if line.startswith("summary:"):
            return int(line.split()[1]), proc.stdout
    raise RuntimeError(f"cachegrind wrote no summary for {spec.name}")


def count_instructions(spec: Path, env: dict[str, str]) -> tuple[int, int]:
    """(instructions, events) of the native run of `spec`: the timed child running it once, less
    the same child with no run (the interpreter, the imports and the spec's loading). Python's
    hash seed is fixed so that both children do the same work up to the run."""
    env = {**env, "PYTHONHASHSEED": "0"}
    with tempfile.TemporaryDirectory(prefix="lasthop-count-") as tmp:
        before, _ = _cachegrind(spec, 0, env, Path(tmp))
        total, text = _cachegrind(spec, 1, env, Path(tmp))
    return total - before, json.loads(text)["events"]


def ns3_missing() -> str | None:
    """Why ns-3 cannot run here (one line), or None."""
    if not (NS3_DIR / "tcp.cc").is_file():
        return "no reference/ns3/tcp.cc here (a checkout of the repository has it)"
    if shutil.which("pkg-config") is None or shutil.which("g++") is None:
        return "pkg-config or g++ missing"
    if subprocess.run(["pkg-config", "--exists", *NS3_LIBS]).returncode != 0:
        return "ns-3 not found: apt-get install libns3-dev libgsl-dev libsqlite3-dev"
    return None


def _build_ns3(tmp: Path) -> Path:
    flags = subprocess.run(["pkg-config", "--cflags", "--libs", *NS3_LIBS], check=True,
                           capture_output=True, text=True).stdout.split()
    binary = tmp / "ns3-tcp"
    run_group(["g++", "-O2", "-std=c++17", str(NS3_DIR / "tcp.cc"), "-o", str(binary), *flags])
    return binary


def _run_ns3(binary: Path, n: int, end_s: float, repeats: int) -> float:
    """Wall seconds of an ns-3 run of the cell (seed 1): the best of `repeats`, the statistic
    lasthop's native time is."""
    cmd = [str(binary), f"--n={n}", f"--time={end_s}", f"--appStart={NS3_APP_START_S}",
           f"--measureFrom={NS3_MEASURE_FROM_S}", "--seed=1", "--cc=cubic", "--qdisc=fq_codel",
           "--limit=10240", "--airtime"]
    best = float("inf")
    for _ in range(repeats):
        t = time.perf_counter()
        subprocess.run(cmd, check=True, capture_output=True, preexec_fn=die_with_parent)
        best = min(best, time.perf_counter() - t)
    return best


def run_tcp_cells(quick: bool = False, compare_ns3: bool = False, out: Any = None,
                  cells: tuple[tuple[int, str], ...] = CELLS, instructions: bool = False) -> list[dict[str, Any]]:
    """Time every cell (and count its instructions with `instructions`); print one line per
    cell; return the figures."""
    out = out or sys.stdout
    env = child_env()
    why_not = ns3_missing() if compare_ns3 else None
    if compare_ns3 and why_not:
        print(f"--compare-ns3: {why_not}; lasthop's side only", file=out)
    ns3 = compare_ns3 and why_not is None
    no_count = valgrind_missing() if instructions else None
    if instructions and no_count:
        print(f"--instructions: {no_count}; timings only", file=out)
    count = instructions and no_count is None
    # Against ns-3 both sides simulate the same 11 s, also with --quick.
    end_s = QUICK_DURATION_S if quick and not ns3 else DURATION_S
    start_s = NS3_APP_START_S if end_s == DURATION_S else 0.0
    repeats = 1 if quick else REPEATS
    print(f"TCP cells ({end_s:g} s simulated, bulk downloads from {start_s:g} s; VHT80 MCS9 NSS2, "
          f"FQ-CoDel over a 500-frame firmware queue)", file=out)
    standalone = _standalone()
    if standalone is None:
        print("no standalone binary (make build): `lasthop-live run` not timed", file=out)
    else:  # which build of it: profile-guided as the module (make build) or plain
        said = subprocess.run([str(standalone), "version"], capture_output=True, text=True, check=True,
                              preexec_fn=die_with_parent).stdout.strip()
        print(f"standalone: {said}", file=out)
    print(f"{'cell':<16} {'events':>10} {'native s':>9} {'ns/event':>9} {'MPDUs/s':>12} {'process s':>10}"
          f" {'over ms':>8}" + (f" {'standalone s':>12}" if standalone else "")
          + (f" {'instr/event':>11}" if count else "")
          + (f" {'ns-3 s':>8} {'x native':>9} {'x process':>10}" if ns3 else "")
          + (f" {'x standalone':>12}" if ns3 and standalone else ""), file=out)
    rows: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory(prefix="lasthop-tcp-cells-") as tmp:
        binary = _build_ns3(Path(tmp)) if ns3 else None
        for n, cc in cells:
            name = f"tcp-{n}sta-{cc}"
            spec = Path(tmp) / f"{name}.toml"
            spec.write_text(cell_toml(n, cc, end_s, name=name, start_s=start_s), encoding="utf-8")
            _, _, text = _run_wait4([sys.executable, "-c", _NATIVE, str(spec), str(repeats)], env)
            native = json.loads(text)
            wall = min(_run_wait4([sys.executable, "-m", "lasthop", "run", str(spec), "--quiet",
                                   "-o", str(Path(tmp) / "out")], env)[0] for _ in range(repeats))
            row = {"cell": name, "events": native["events"], "native_s": native["native_s"],
                   "ns_per_event": native["native_s"] * 1e9 / max(native["events"], 1),
                   "mpdus_per_s": native["mpdus"] / native["native_s"] if native["native_s"] > 0 else 0.0,
                   "process_s": wall, "overhead_ms": (wall - native["native_s"]) * 1e3, "ns3_s": None,
                   "instructions_per_event": None, "standalone_s": None}
            line = (f"{name:<16} {row['events']:>10,} {row['native_s']:>9.3f} {row['ns_per_event']:>9.0f} "
                    f"{row['mpdus_per_s']:>12,.0f} {wall:>10.3f} {row['overhead_ms']:>8.0f}")
            if standalone is not None:
                row["standalone_s"] = min(_run_wait4([str(standalone), "run", str(spec), "--quiet", "-o",
                                                      str(Path(tmp) / "out-standalone")], env)[0]
                                          for _ in range(repeats))
                line += f" {row['standalone_s']:>12.3f}"
            if count:
                instr, events = count_instructions(spec, env)
                row["instructions_per_event"] = instr / max(events, 1)
                line += f" {row['instructions_per_event']:>11,.0f}"
            if binary is not None and cc == "cubic":
                row["ns3_s"] = _run_ns3(binary, n, end_s, repeats)
                line += (f" {row['ns3_s']:>8.1f} {row['ns3_s'] / row['native_s']:>8.0f}x"
                         f" {row['ns3_s'] / wall:>9.0f}x")
                if row["standalone_s"]:
                    line += f" {row['ns3_s'] / row['standalone_s']:>11.0f}x"
            print(line, file=out)
            out.flush()
            rows.append(row)
        if rows:
            first = Path(tmp) / f"{rows[0]['cell']}.toml"
            parts = overhead_parts(first, env, repeats, Path(tmp) / "out")
            rows[0]["overhead_parts"] = parts
            # The parts come from children of their own; what they leave of the process's overhead
            # (its parsers, its exit, its first native run) is not taken apart, and may read
            # negative on a noisy machine.
            rest = rows[0]["overhead_ms"] - sum(parts.values())
            rows[0]["overhead_rest_ms"] = rest
            print(f"{rows[0]['cell']}, what lasthop run adds to the native run ({rows[0]['overhead_ms']:.0f} ms): "
                  f"the interpreter's start {parts['interpreter_ms']:.1f} ms, the run's imports "
                  f"{parts['imports_ms']:.1f} ms, the spec, code version and result {parts['steps_ms']:.1f} ms, "
                  f"and {rest:.1f} ms not taken apart", file=out)
    return rows


def _standalone() -> Path | None:
    """The standalone binary whose `run` writes `lasthop run`'s result without Python, or None."""
    from ..live.cli import live_binary

    try:
        return live_binary()
    except RuntimeError:
        return None


def _top_level_imports_ms(stderr: str) -> float:
    """The sum of `-X importtime`'s cumulative times (ms) of the modules imported at top level
    (the lines whose name is not indented)."""
    total = 0
    for line in stderr.splitlines():
        if not line.startswith("import time:"):
            continue
        fields = line.split("|")
        if len(fields) == 3 and fields[1].strip().isdigit() and not fields[2].startswith("  "):
            total += int(fields[1])
    return total / 1000


# The run's own steps around the native run, timed in a fresh child as `commands.cmd_run` takes
# them: the spec read and the code version (its first call), then the result written.
_REST = """
import json, sys, time
from pathlib import Path
t0 = time.perf_counter()
from lasthop.spec import load_spec
from lasthop.native import code_version
from lasthop.results import result_path, write_result_text
from lasthop import _native
t1 = time.perf_counter()
spec = load_spec(sys.argv[1])
text = spec.checked_json or spec.to_json()
version = code_version()
t2 = time.perf_counter()
data = _native.run(text, spec.seed, None)
t3 = time.perf_counter()
write_result_text(result_path(Path(sys.argv[2]), spec.name, spec.seed), text, spec.seed, data, version)
t4 = time.perf_counter()
print(json.dumps({"rest_s": (t2 - t1) + (t4 - t3)}))
"""


def overhead_parts(spec: Path, env: dict[str, str], repeats: int, out_dir: Path) -> dict[str, float]:
    """What `lasthop run SPEC` adds to its native run, by part: the interpreter's start, the
    imports the run adds to it, and its own steps (the spec, the code version, the result)."""
    interpreter = min(_run_wait4([sys.executable, "-c", "pass"], env)[0] for _ in range(repeats)) * 1e3

    def imports(argv: list[str]) -> float:
        proc = subprocess.run([sys.executable, "-X", "importtime", *argv], env=env, capture_output=True,
                              text=True, check=True, preexec_fn=die_with_parent)
        return _top_level_imports_ms(proc.stderr)

    base = min(imports(["-c", "pass"]) for _ in range(repeats))
    run = min(imports(["-m", "lasthop", "run", str(spec), "--quiet", "-o", str(out_dir)]) for _ in range(repeats))
    out_dir.mkdir(parents=True, exist_ok=True)
    rest = min(json.loads(_run_wait4([sys.executable, "-c", _REST, str(spec), str(out_dir)], env)[2])["rest_s"]
               for _ in range(repeats)) * 1e3
    return {"interpreter_ms": interpreter, "imports_ms": run - base, "steps_ms": rest}
