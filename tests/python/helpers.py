"""Helpers shared by the Python tests."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
STUB_MESSAGE = "simulator not built yet"

# A small, fast scenario with randomness in it (Poisson arrivals, contention between stations).
TINY_SPEC = """\
name = "tiny"
[sim]
duration = "300ms"
warmup = "50ms"
seed = 7
bin = "50ms"
[phy]
standard = "vht"
channel_width = 40
[[stations]]
count = 2
mcs = 7
[[stations]]
mcs = 3
error_model = "fixed"
per = 0.05
[[flows]]
stations = "all"
direction = "down"
pattern = "poisson"
rate = "20Mbps"
[[flows]]
stations = [1, 2]
direction = "up"
pattern = "cbr"
rate = "5Mbps"
packet_size = 1000
[[flows]]
stations = 0
pattern = "saturated"
start = "100ms"
"""


def lasthop_cmd() -> list[str]:
    """The installed `lasthop` console script next to this interpreter, else `python -m`."""
    script = Path(sys.executable).parent / "lasthop"
    if script.exists():
        return [str(script)]
    return [sys.executable, "-m", "lasthop"]


def run_cli(*args: str, cwd: Path | None = None, timeout: float = 300) -> subprocess.CompletedProcess:
    env = dict(os.environ)
    env.pop("LASTHOP_DEBUG", None)
    return subprocess.run([*lasthop_cmd(), *args], capture_output=True, text=True, cwd=cwd,
                          timeout=timeout, env=env)
