"""A progress bar on stderr for one simulation: percentage, simulated time, ETA.

The simulator calls back with the fraction of simulated time done (at most ~200 times per run).
On a terminal the bar redraws in place; otherwise (logs, CI) only a final line is printed.
`quiet` prints nothing at all. Wall time is read here, in Python, never in the model.
"""

from __future__ import annotations

import sys
import time
from typing import TextIO

from .units import format_duration

__all__ = ["Progress"]

BAR_WIDTH = 30


def _clock(seconds: float) -> str:
    seconds = max(0, int(round(seconds)))
    h, rem = divmod(seconds, 3600)
    m, s = divmod(rem, 60)
    return f"{h}:{m:02d}:{s:02d}" if h else f"{m}:{s:02d}"


def _sim(ns: float) -> str:
    return f"{ns / 1e9:.2f}s"


class Progress:
    """Callable progress sink: `progress(fraction)`; call `finish()` once when done."""

    def __init__(self, duration_ns: int, label: str = "", quiet: bool = False,
                 stream: TextIO | None = None) -> None:
        self.duration_ns = duration_ns
        self.label = label
        self.quiet = quiet
        self.stream = stream if stream is not None else sys.stderr
        self.tty = bool(getattr(self.stream, "isatty", lambda: False)())
        self.start = time.monotonic()
        self.fraction = 0.0
        self._last_draw = -1.0
        self._drawn = False

    def __call__(self, fraction: float) -> None:
        self.fraction = min(1.0, max(0.0, float(fraction)))
        if self.quiet or not self.tty:
            return
        now = time.monotonic()
        if now - self._last_draw < 0.1 and self.fraction < 1.0:
            return
        self._last_draw = now
        self._draw(now)

    def _draw(self, now: float) -> None:
        elapsed = now - self.start
        f = self.fraction
        filled = int(f * BAR_WIDTH)
        bar = "#" * filled + "." * (BAR_WIDTH - filled)
        eta = _clock(elapsed * (1 - f) / f) if f > 0 else "?"
        label = f"{self.label} " if self.label else ""
        line = (f"{label}[{bar}] {f * 100:5.1f}%  sim {_sim(f * self.duration_ns)}/"
                f"{format_duration(self.duration_ns)}  elapsed {_clock(elapsed)}  ETA {eta}")
        self.stream.write("\r" + line + "\x1b[K")
        self.stream.flush()
        self._drawn = True

    def elapsed(self) -> float:
        return time.monotonic() - self.start

    def finish(self, ok: bool = True) -> None:
        """End the bar: on a terminal finish the line; elsewhere print one summary line."""
        if self.quiet:
            return
        if self.tty and self._drawn:
            if ok:
                self.fraction = 1.0
                self._draw(time.monotonic())
            self.stream.write("\n")
        elif ok:
            label = f"{self.label}: " if self.label else ""
            self.stream.write(f"{label}simulated {format_duration(self.duration_ns)} in "
                              f"{self.elapsed():.2f}s wall\n")
        self.stream.flush()
