"""`lasthop bench`: time the simulator on a fixed set of scenarios.

The scenarios are the TOML files in this package directory (package data). Each is run once
through `_native.run` with `time.perf_counter()` around the call (Python owns the wall clock
here), and we print simulated seconds, wall seconds, delivered MPDUs per wall second, events per
wall second and the peak RSS of the process so far. Timings are reported, never asserted.
`--quick` shortens every scenario's simulated duration to QUICK_DURATION. Then the TCP cells
(`tcp_cells.py`: 1, 10 and 20 stations of CUBIC and BBR downloads, with `--compare-ns3` beside
ns-3's `reference/ns3/tcp.cc` and with `--instructions` their instructions per event under
cachegrind), then the scale series
(`scale.py`): one cell at 10 … 2,007 stations, idle and loaded, with ns per event and bytes per
station, so that growth with the station count shows in every run.
"""

from __future__ import annotations

import contextlib
import json
import resource
import signal
import subprocess
import sys
import time
from importlib import resources
from typing import Any, Iterator

from ..spec import SpecError, normalize, parse_toml

__all__ = ["SCENARIOS", "QUICK_DURATION", "run_bench", "load_scenario"]

SCENARIOS = ("vht80-mcs9-nss2-1sta", "vht80-mcs7-20sta", "ofdm54-10sta-up", "vht80-tcp-cubic", "vht80-20sta-fqcodel-air",
             "he80-18sta-su", "he80-18sta-ofdma")
QUICK_DURATION = "1s"


def load_scenario(name: str, quick: bool = False) -> Any:
    text = resources.files(__name__).joinpath(f"{name}.toml").read_text(encoding="utf-8")
    doc = parse_toml(text, f"bench/{name}.toml")
    if quick:
        doc.setdefault("sim", {})["duration"] = QUICK_DURATION
        doc["sim"].pop("bin", None)
        doc["sim"].pop("warmup", None)
    return normalize(doc, name, rules=True)


def _peak_rss_mib() -> float:
    kib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss  # KiB on Linux, bytes on macOS
    return kib / (1024 * 1024) if sys.platform == "darwin" else kib / 1024


@contextlib.contextmanager
def _default_sigint() -> Iterator[None]:
    """Ctrl-C ends the process at once while a timed native run is in progress (the call stays
    on this thread, so nothing is added to what is measured)."""
    old = None
    try:
        old = signal.signal(signal.SIGINT, signal.SIG_DFL)
    except ValueError:  # not the main thread
        pass
    try:
        yield
    finally:
        if old is not None:
            signal.signal(signal.SIGINT, old)


def run_bench(quick: bool = False, out: Any = None, scale: bool = True, compare_ns3: bool = False,
              instructions: bool = False) -> int:
    from .. import _native

    out = out or sys.stdout
    specs = []
    for name in SCENARIOS:
        try:
            specs.append((name, load_scenario(name, quick)))
        except SpecError as e:
            print(f"lasthop: internal error: bench scenario {name}: spec error: {e}",
                  file=sys.stderr)
            return 1
    header = (f"{'scenario':<24} {'sim s':>7} {'wall s':>8} {'MPDUs/wall s':>13} "
              f"{'events/s':>12} {'peak RSS MiB':>13}")
    print(f"lasthop bench ({_native.version()}, {_native.build_kind()} build){' --quick' if quick else ''}", file=out)
    print(header, file=out)
    failed = 0
    for name, spec in specs:
        spec_json = spec.to_json()
        t0 = time.perf_counter()
        try:
            with _default_sigint():
                data_json = _native.run(spec_json, spec.seed, None)
        except RuntimeError as e:
            print(f"{name:<24} failed: {e}", file=out)
            failed += 1
            continue
        wall = time.perf_counter() - t0
        stats = json.loads(data_json).get("stats", {})
        sim_s = stats.get("sim_time_ns", spec.duration_ns) / 1e9
        mpdus = stats.get("mpdus_delivered", 0)
        events = stats.get("events", 0)
        rate = (lambda n: f"{n / wall:,.0f}" if wall > 0 else "-")
        print(f"{name:<24} {sim_s:>7.2f} {wall:>8.3f} {rate(mpdus):>13} {rate(events):>12} "
              f"{_peak_rss_mib():>13.1f}", file=out)
        out.flush()
    from .tcp_cells import run_tcp_cells

    print(file=out)
    try:
        run_tcp_cells(quick=quick, compare_ns3=compare_ns3, out=out, instructions=instructions)
    except (RuntimeError, OSError, subprocess.CalledProcessError) as e:
        print(f"TCP cells failed: {e}", file=out)
        failed += 1
    if scale:
        from .scale import run_scale

        print(file=out)
        try:
            run_scale(quick=quick, out=out)
        except RuntimeError as e:
            print(f"scale series failed: {e}", file=out)
            failed += 1
    return 1 if failed else 0
