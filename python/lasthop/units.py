"""Quantities with mandatory units, converted exactly to integer base units.

Durations (``"10s"``, ``"102.4ms"``, ``"5.484ms"``) become integer nanoseconds and rates
(``"100Mbps"``, ``"1.5Gbps"``) integer bit/s (docs/spec.md, "Quantities"). Parsing goes through
``fractions.Fraction`` so ``"5.484ms"`` is exactly 5_484_000 ns, never 5_483_999.
A value that is not a whole number of base units (``"0.5ns"``) is rejected rather than rounded.
"""

from __future__ import annotations

import re
from fractions import Fraction

__all__ = ["UnitError", "parse_duration", "parse_rate", "format_duration", "format_rate"]

DURATION_UNITS: dict[str, int] = {"ns": 1, "us": 1_000, "ms": 1_000_000, "s": 1_000_000_000}
RATE_UNITS: dict[str, int] = {
    "bps": 1,
    "kbps": 1_000,
    "Mbps": 1_000_000,
    "Gbps": 1_000_000_000,
}

# A plain decimal (no sign, no exponent) followed by a unit word. Whitespace between is allowed.
_QUANTITY = re.compile(r"^\s*(?P<num>\d+(?:\.\d*)?|\.\d+)\s*(?P<unit>[A-Za-z]+)\s*$")


# Longer numbers are refused before any arithmetic (and before Python's 4300-digit limit).
NUM_DIGITS_MAX = 40
U64_MAX = 2**64 - 1


class UnitError(ValueError):
    """A quantity string is malformed; the message says what is allowed."""


def _parse(text: object, units: dict[str, int], kind: str, example: str) -> int:
    allowed = f"a {kind} string with unit {'|'.join(units)}, e.g. {example}"
    if isinstance(text, bool) or isinstance(text, (int, float)):
        raise UnitError(f"units are mandatory: {allowed}")
    if not isinstance(text, str):
        raise UnitError(allowed)
    stripped = text.strip()
    if stripped.startswith("-"):
        raise UnitError(f"must not be negative; {allowed}")
    m = _QUANTITY.match(stripped)
    if m is None:
        if re.fullmatch(r"\+?\d+(\.\d*)?([eE][+-]?\d+)?", stripped):
            raise UnitError(f"units are mandatory: {allowed}")
        raise UnitError(allowed)
    unit = m.group("unit")
    if unit not in units:
        raise UnitError(f"unknown unit {unit!r}; {allowed}")
    num = m.group("num")
    if len(num) > NUM_DIGITS_MAX:
        raise UnitError(f"a number of {len(num)} characters; at most {NUM_DIGITS_MAX}: {allowed}")
    value = Fraction(num) * units[unit]
    if value.denominator != 1:
        raise UnitError(f"not a whole number of {min(units, key=units.__getitem__)}; {allowed}")
    if value > U64_MAX:
        base = min(units, key=units.__getitem__)
        raise UnitError(f"too large: at most {U64_MAX} {base} (what the simulator's 64-bit counters hold)")
    return int(value)


def parse_duration(text: object) -> int:
    """``"102.4ms"`` -> 102_400_000 (ns). Units: ns, us, ms, s."""
    return _parse(text, DURATION_UNITS, "duration", '"10s" or "102.4ms"')


def parse_rate(text: object) -> int:
    """``"1.5Gbps"`` -> 1_500_000_000 (bit/s). Units: bps, kbps, Mbps, Gbps."""
    return _parse(text, RATE_UNITS, "rate", '"100Mbps" or "1.5Gbps"')


def _format(value: int, units: dict[str, int]) -> str:
    for unit, scale in sorted(units.items(), key=lambda kv: -kv[1]):
        if value >= scale:
            q = Fraction(value, scale)
            if q.denominator == 1:
                return f"{q.numerator}{unit}"
            # Up to 3 decimals when exact, otherwise fall through to a smaller unit.
            if (q * 1000).denominator == 1:
                whole, milli = divmod(int(q * 1000), 1000)
                return f"{whole}.{milli:03d}".rstrip("0") + unit
    return f"{value}{min(units, key=units.__getitem__)}"


def format_duration(ns: int) -> str:
    """Inverse of :func:`parse_duration` for display: 5_484_000 -> ``"5.484ms"``."""
    return _format(ns, DURATION_UNITS)


def format_rate(bps: int) -> str:
    """Inverse of :func:`parse_rate` for display: 1_500_000_000 -> ``"1.5Gbps"``."""
    return _format(bps, RATE_UNITS)
