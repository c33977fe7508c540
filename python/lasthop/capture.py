"""Packet capture of one node (`lasthop run SPEC --pcap NODE`): docs/results.md, "Packet capture".

The simulator records every PPDU the node sends or is the addressed receiver of and writes them
as a classic pcap file (radiotap + 802.11, nanosecond timestamps); this module names, checks and
writes that file next to the result file.
"""

from __future__ import annotations

from pathlib import Path
TYPE_CHECKING = False  # typing's flag, without importing typing (a run's start-up)
if TYPE_CHECKING:
    from typing import Any, Callable, Optional
from .results import write_atomic

DEFAULT_LIMIT = 100_000

__all__ = ["DEFAULT_LIMIT", "CaptureError", "parse_node", "pcap_path", "write_pcap",
           "simulate_capture"]


class CaptureError(ValueError):
    """A bad capture node or limit (a user error)."""


def parse_node(text: str, n_stations: int) -> str:
    """The canonical capture node: "ap" or a station index in 0..n_stations."""
    t = text.strip().lower()
    if t == "ap":
        return "ap"
    if t.isdigit() and int(t) < n_stations:
        return str(int(t))
    raise CaptureError(f"--pcap = {text!r}: 'ap' or a station index in 0..{n_stations - 1}")


def parse_limit(text: str) -> int:
    try:
        value = int(text, 10)
    except ValueError:
        value = 0
    if value < 1:
        raise CaptureError(f"--pcap-limit = {text!r}: a positive integer (records)")
    return value


def pcap_path(out_dir: str | Path, name: str, seed: int, node: str) -> Path:
    return Path(out_dir) / f"{name}-s{seed}-{node}.pcap"


def write_pcap(path: str | Path, data: bytes) -> Path:
    """Write `data` to `path` atomically (temporary file in the same directory, then rename)."""
    return write_atomic(path, data)

def simulate_capture(spec_json: str, seed: int, node: str, progress: Optional[Callable[[float], Any]] = None,
                     limit: int = DEFAULT_LIMIT, records: bool = False
                     ) -> tuple[str, bytes, Optional[str], tuple[int, bool]]:
    """Run the native simulator with a capture of `node`: (data JSON, pcap bytes, records JSON
    or None, (records kept, truncated)). `truncated` says the capture stopped at `limit`
    records while the run went on. The data JSON is identical to a run without capture."""
    from . import _native

    return _native.run_capture(spec_json, seed, node, progress, limit, records)
