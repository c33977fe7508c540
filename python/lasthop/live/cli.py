"""The live tools (`lasthop wqm ...`, docs/live.md): each is the Rust entry point
`lasthop_live::tools::main`, the same one the standalone `lasthop-live` binary runs, so the
options, messages, exit codes and behaviour are identical with and without Python.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any


def _tools() -> dict[str, str]:
    from ..native import native
    return {name: f"{about} (docs/live.md)" for name, about in native().live_tools()}


# tool -> one-line description for `lasthop --help`, from the one list the Rust side keeps
# (`lasthop_live::tools::TOOLS`).
TOOLS = _tools()


def add_parsers(sub: Any) -> None:
    """List the tools in `lasthop --help`; their arguments never reach argparse."""
    for name, text in TOOLS.items():
        sub.add_parser(name, help=text, add_help=False)


def live_binary() -> Path:
    """The newest standalone `lasthop-live` of a checkout: .venv/bin (make build), or Cargo's
    release or debug build."""
    root = Path(__file__).resolve().parents[3]
    c = [p for p in (root / ".venv" / "bin" / "lasthop-live", root / "target" / "release" / "lasthop-live",
                     root / "target" / "debug" / "lasthop-live") if p.exists()]
    if not c:
        raise RuntimeError("lasthop-live not built (make build)")
    return max(c, key=lambda p: p.stat().st_mtime)


def quic_binary() -> str | None:
    """The standalone binary built with QUIC (the Python module links no TLS library):
    beside this interpreter (`make build` installs it there), else on PATH."""
    import os
    import shutil
    here = os.path.join(os.path.dirname(sys.executable), "lasthop-live")
    return here if os.access(here, os.X_OK) else shutil.which("lasthop-live")


def run(argv: list[str]) -> int:
    from ..native import native as _native
    sys.stdout.flush()
    sys.stderr.flush()
    if argv[0] == "quic":
        import os
        b = quic_binary()
        if b is None:
            print("lasthop quic: needs the standalone binary lasthop-live built with QUIC (make build)", file=sys.stderr)
            return 2
        # The binary replaces this process: a stop signal to the `lasthop` PID reaches the
        # server itself, and no child is left holding its port.
        try:
            os.execv(b, [b, *argv])
        except OSError as e:
            print(f"lasthop quic: {b}: {e.strerror}", file=sys.stderr)
            return 2
    return int(_native().live_main(argv))
