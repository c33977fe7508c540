"""The live side: the emulator's command line and benches, the live tools' command line
(`lasthop <tool>` runs the standalone `lasthop-live`), their benches across the emulator, the
applications they run in namespaces, the proxy load generator and the soak (docs/live.md,
docs/emu.md)."""

from __future__ import annotations

from pathlib import Path


def refuse(command: str, tools: tuple[str, ...] = ("iperf3", "ping", "ip")) -> bool:
    """Whether `command` (`bench --live l4s`) cannot run here: not root, or a program it runs
    is missing. If so, says why in one line on stderr."""
    import os
    import shutil
    import sys

    missing = [p for p in tools if shutil.which(p) is None]
    if os.geteuid() == 0 and not missing:
        return False
    why = "needs root" if os.geteuid() != 0 else f"needs {', '.join(missing)} (Debian packages)"
    print(f"lasthop: error: {command} {why}", file=sys.stderr)
    return True


def write_report(out: Path, name: str, rep: dict, text: str) -> int:
    """A bench's figures as DIR/NAME (sorted, indented JSON; whole or not at all) and its table
    on stdout; exit code 0."""
    import json

    from ..results import write_atomic

    path = write_atomic(out / name, (json.dumps(rep, indent=2, sort_keys=True) + "\n").encode())
    print(text)
    print(f"figures: {path}")
    return 0
