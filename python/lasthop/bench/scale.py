"""The bench's scale series: what a cell costs as the station count grows.

One VHT 80 MHz cell (MCS 9, 2 streams), FQ-CoDel at the AP, 800 Mb/s of downlink CBR
(1500-byte packets), at 10, 100, 1,000 and 2,007 stations (2,007 association IDs is the most
802.11 allows, §9.4.1.8):
- `loaded`: the 800 Mb/s split evenly over every station;
- `idle`: the same 800 Mb/s over stations 0–9 only, the rest associated and silent.

Each point runs twice in a fresh process, so that memory is that run's alone:
- the native run alone (`_native.run`, timed around the call, the best of `REPEATS`): its
  wall time and events give ns per event;
- `lasthop run --quiet` as a user runs it: process wall (imports, spec, simulation, result
  written) and peak RSS (`wait4`).
Bytes per station are (RSS(N) − RSS(10)) / (N − 10) within one series. Nothing is asserted;
the figures are printed, and `--json` keeps them.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from ..children import die_with_parent

__all__ = ["COUNTS", "KINDS", "scale_toml", "run_scale"]

COUNTS = (10, 100, 1000, 2007)
KINDS = ("idle", "loaded")
TOTAL_MBPS = 800
ACTIVE_IDLE = 10
REPEATS = 3


def scale_toml(n: int, kind: str, duration: str = "5s") -> str:
    """The TOML of one scale point."""
    if kind == "loaded":
        stations = '"all"'
        rate = TOTAL_MBPS * 1000 / n  # kb/s per station
    elif kind == "idle":
        stations = "[" + ", ".join(str(i) for i in range(min(ACTIVE_IDLE, n))) + "]"
        rate = TOTAL_MBPS * 1000 / min(ACTIVE_IDLE, n)
    else:
        raise ValueError(f"kind {kind!r}: idle or loaded")
    return f"""name = "scale-{n}-{kind}"

[sim]
duration = "{duration}"

[phy]
standard = "vht"
channel_width = 80

[ap]
qdisc = "fq_codel"

[[stations]]
count = {n}
mcs = 9
nss = 2

[[flows]]
stations = {stations}
direction = "down"
pattern = "cbr"
rate = "{rate:.3f}kbps"
packet_size = 1500
"""


_NATIVE = """
import json, sys, time
from lasthop.spec import load_spec
from lasthop import _native
spec = load_spec(sys.argv[1])
text = spec.to_json()
best = data = None
for _ in range(int(sys.argv[2])):
    t = time.perf_counter()
    data = _native.run(text, spec.seed, None)
    wall = time.perf_counter() - t
    best = wall if best is None else min(best, wall)
if data is not None:
    stats = json.loads(data)["stats"]
    print(json.dumps({"native_s": best, "events": stats["events"], "mpdus": stats["mpdus_delivered"]}))
"""


def _run_wait4(argv: list[str], env: dict[str, str]) -> tuple[float, float, str]:
    """(wall s, peak RSS MiB, stdout) of one child, its rusage from wait4."""
    r, w = os.pipe()
    t = time.perf_counter()
    pid = os.fork()
    if pid == 0:  # child
        try:
            die_with_parent()
            os.close(r)
            os.dup2(w, 1)
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, 2)
            os.execve(argv[0], argv, env)
        finally:
            os._exit(127)
    os.close(w)
    chunks = []
    while True:
        b = os.read(r, 65536)
        if not b:
            break
        chunks.append(b)
    os.close(r)
    _, status, ru = os.wait4(pid, 0)
    wall = time.perf_counter() - t
    code = os.waitstatus_to_exitcode(status)
    if code != 0:
        raise RuntimeError(f"{' '.join(argv[1:4])}…: exit {code}")
    return wall, ru.ru_maxrss / 1024, b"".join(chunks).decode()


def child_env() -> dict[str, str]:
    """The environment of a timed child: this package first on its path."""
    env = dict(os.environ)
    pkg_root = str(Path(__file__).resolve().parents[2])
    env["PYTHONPATH"] = pkg_root + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    return env


def run_scale(quick: bool = False, out: Any = None, counts: tuple[int, ...] = COUNTS
              ) -> list[dict[str, Any]]:
    """Run the scale series; print one line per point; return the figures."""
    out = out or sys.stdout
    env = child_env()
    duration = "1s" if quick else "5s"
    print(f"scale series ({duration} simulated; VHT80 MCS9 NSS2, FQ-CoDel, {TOTAL_MBPS} Mb/s down)",
          file=out)
    print(f"{'stations':>8} {'kind':<7} {'events':>9} {'native s':>9} {'ns/event':>9} "
          f"{'process s':>10} {'peak RSS MiB':>13} {'B/station':>10}", file=out)
    rows: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory(prefix="lasthop-scale-") as tmp:
        for kind in KINDS:
            base: dict[str, Any] | None = None
            for n in counts:
                spec = Path(tmp) / f"scale-{n}-{kind}.toml"
                spec.write_text(scale_toml(n, kind, duration), encoding="utf-8")
                repeats = 1 if quick else REPEATS
                _, _, text = _run_wait4([sys.executable, "-c", _NATIVE, str(spec), str(repeats)], env)
                native = json.loads(text)
                wall, rss, _ = _run_wait4([sys.executable, "-m", "lasthop", "run", str(spec), "--quiet",
                                           "-o", str(Path(tmp) / "out")], env)
                row = {"stations": n, "kind": kind, "events": native["events"],
                       "native_s": native["native_s"],
                       "ns_per_event": native["native_s"] * 1e9 / max(native["events"], 1),
                       "process_s": wall, "peak_rss_mib": rss, "bytes_per_station": None}
                if base is None:
                    base = row
                elif n > base["stations"]:
                    row["bytes_per_station"] = ((rss - base["peak_rss_mib"]) * 1024 * 1024
                                                / (n - base["stations"]))
                bps = "-" if row["bytes_per_station"] is None else f"{row['bytes_per_station']:,.0f}"
                print(f"{n:>8} {kind:<7} {row['events']:>9,} {row['native_s']:>9.3f} "
                      f"{row['ns_per_event']:>9.0f} {wall:>10.3f} {rss:>13.1f} {bps:>10}", file=out)
                out.flush()
                rows.append(row)
    for line in summary_lines(rows):
        print(line, file=out)
    return rows


def summary_lines(rows: list[dict[str, Any]]) -> list[str]:
    """The growth in a few figures: the largest cell against the smallest, per series."""
    by = {(r["kind"], r["stations"]): r for r in rows}
    lo, hi = min(r["stations"] for r in rows), max(r["stations"] for r in rows)
    lines = []
    idle_lo, idle_hi = by.get(("idle", lo)), by.get(("idle", hi))
    if idle_lo and idle_hi and hi > lo:
        lines.append(f"idle:   {hi} stations (10 active) take {idle_hi['native_s'] / idle_lo['native_s']:.2f}x "
                     f"the native time of {lo}; {idle_hi['bytes_per_station'] or 0:,.0f} B per idle station")
    ld_lo, ld_hi = by.get(("loaded", lo)), by.get(("loaded", hi))
    if ld_lo and ld_hi and hi > lo:
        lines.append(f"loaded: {hi} stations cost {ld_hi['ns_per_event'] / ld_lo['ns_per_event']:.2f}x the ns per "
                     f"event of {lo}; process wall {ld_hi['process_s']:.3f} s")
    return lines
