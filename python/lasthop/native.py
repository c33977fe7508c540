"""The native simulator module (`lasthop._native`, built from the Rust workspace), loaded with
a clear message when it is not built, and the code version results are stamped with."""

from __future__ import annotations

TYPE_CHECKING = False  # typing's flag, without importing typing (a run's start-up)
if TYPE_CHECKING:
    from typing import Any


def native() -> Any:
    """`lasthop._native`, or a RuntimeError saying how to build it."""
    try:
        from . import _native as module
    except ImportError as e:
        raise RuntimeError(f"the native module is not built ({e}); run `make` first") from None
    return module


def code_version() -> str:
    """The code version (`version.code_version`), after checking the native module is there."""
    native()  # a clear message when the module is not built
    from .version import code_version as _cv

    return _cv()
