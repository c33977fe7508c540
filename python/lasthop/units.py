"""Quantities with mandatory units, converted exactly to integer base units.

Durations (``"10s"``, ``"102.4ms"``, ``"5.484ms"``) become integer nanoseconds and rates
(``"100Mbps"``, ``"1.5Gbps"``) integer bit/s (docs/spec.md, "Quantities"). The parser is the
spec validator's own (``crates/lasthop-sim/src/spec_in/raw.rs``): exact decimal arithmetic, so
``"5.484ms"`` is exactly 5_484_000 ns, never 5_483_999, and a value that is not a whole number
of base units (``"0.5ns"``) is rejected rather than rounded. `share_fraction` reads the command
line's fractions of an equal share (``"0.2"`` or ``"20%"``).
"""

from __future__ import annotations

import math

from . import _native

__all__ = ["UnitError", "parse_duration", "parse_rate", "format_duration", "format_rate", "share_fraction"]


class UnitError(ValueError):
    """A quantity string is malformed; the message says what is allowed."""


def parse_duration(text: object) -> int:
    """``"102.4ms"`` -> 102_400_000 (ns). Units: ns, us, ms, s."""
    try:
        return _native.parse_duration(text)
    except ValueError as e:
        raise UnitError(str(e)) from None


def parse_rate(text: object) -> int:
    """``"1.5Gbps"`` -> 1_500_000_000 (bit/s). Units: bps, kbps, Mbps, Gbps."""
    try:
        return _native.parse_rate(text)
    except ValueError as e:
        raise UnitError(str(e)) from None


_U64_MAX = 2**64 - 1


def format_duration(ns: int) -> str:
    """Inverse of :func:`parse_duration` for display: 5_484_000 -> ``"5.484ms"`` (a value no
    spec can hold, as read from a damaged file, in plain ns)."""
    return _native.format_duration(ns) if 0 <= ns <= _U64_MAX else f"{ns}ns"


def format_rate(bps: int) -> str:
    """Inverse of :func:`parse_rate` for display: 1_500_000_000 -> ``"1.5Gbps"`` (a value no
    spec can hold in plain bit/s)."""
    return _native.format_rate(bps) if 0 <= bps <= _U64_MAX else f"{bps}bps"


def share_fraction(text: str) -> float:
    """A fraction in 0..1 (`--upload-floor`), as a number or a percentage."""
    import argparse
    try:
        x = float(text[:-1]) / 100 if text.endswith("%") else float(text)
    except ValueError:
        x = math.nan
    if not 0.0 <= x <= 1.0:
        raise argparse.ArgumentTypeError(f"{text!r}: a fraction of an equal share in 0..1 (e.g. 0.2 or 20%)")
    return x
