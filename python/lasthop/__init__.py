"""lasthop: a fast, deterministic simulator of the 802.11 (WiFi) last hop.

The command line is `lasthop` (see `lasthop.cli`); specs are TOML (docs/spec.md) and results
are JSON files (docs/results.md). The simulation itself runs in the native module
`lasthop._native`, built from the Rust workspace.

From Python (docs/python.md): `lasthop.load_spec`, `lasthop.run` (→ `Run` with pandas frames of
flows, stations, queues and every stored time series), `lasthop.sweep` (→ the summary frame)
and `lasthop.load` (a result file or a sweep directory). User errors raise `LasthopError`.
"""

from __future__ import annotations

__version__ = "0.1.0"  # keep equal to [workspace.package] version in Cargo.toml

TYPE_CHECKING = False  # typing's flag, without importing typing (a run's start-up)
if TYPE_CHECKING:
    from typing import Any

    from .api import LasthopError, Run, SweepRun, load, load_spec, run, sweep

__all__ = ["__version__", "LasthopError", "Run", "SweepRun", "load", "load_spec", "run", "sweep"]


def __getattr__(name: str) -> Any:
    # Imported on first use: the command line (`python -m lasthop run …`) needs none of this,
    # and a process pays only for what it uses.
    if name in __all__:
        from . import api

        return getattr(api, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
