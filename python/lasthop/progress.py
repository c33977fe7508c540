"""A progress bar on stderr for one simulation: percentage, simulated time, ETA.

The simulator calls back with the fraction of simulated time done (at most ~200 times per run).
On a terminal the bar redraws in place; otherwise (logs, CI) only a final line is printed.
`quiet` prints nothing at all. Wall time is read here, in Python, never in the model.
"""

from __future__ import annotations

import sys
import time
TYPE_CHECKING = False  # typing's flag, without importing typing (a run's start-up)
if TYPE_CHECKING:
    from typing import TextIO

from .units import format_duration

__all__ = ["Progress", "SweepProgress"]

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


class SweepProgress:
    """Progress of a sweep on stderr: runs done/total, how many were cached, elapsed, ETA.

    `update(executed)` after each completed (not cached) run; `finish()` once. On a terminal the
    line redraws in place (at most 10 times a second); elsewhere a line is printed at every
    further 10 % and a final one. `quiet` prints nothing.
    """

    def __init__(self, total: int, cached: int = 0, label: str = "", quiet: bool = False,
                 stream: TextIO | None = None) -> None:
        self.total = total
        self.cached = cached
        self.label = label
        self.quiet = quiet
        self.stream = stream if stream is not None else sys.stderr
        self.tty = bool(getattr(self.stream, "isatty", lambda: False)())
        self.start = time.monotonic()
        self.executed = 0
        self._last_draw = -1.0
        self._last_decile = (10 * cached // total) if total else 10
        self._drawn = False
        if not quiet and self.tty and total:
            self._draw(self.start)

    def elapsed(self) -> float:
        return time.monotonic() - self.start

    def line(self, now: float | None = None) -> str:
        now = time.monotonic() if now is None else now
        elapsed = now - self.start
        done = self.cached + self.executed
        todo = self.total - done
        f = done / self.total if self.total else 1.0
        filled = int(f * BAR_WIDTH)
        bar = "#" * filled + "." * (BAR_WIDTH - filled)
        if todo == 0:
            eta = "0:00"
        elif self.executed:
            eta = _clock(elapsed / self.executed * todo)
        else:
            eta = "?"
        label = f"{self.label} " if self.label else ""
        return (f"{label}[{bar}] {done}/{self.total} runs ({self.cached} cached)  "
                f"elapsed {_clock(elapsed)}  ETA {eta}")

    def _draw(self, now: float) -> None:
        self.stream.write("\r" + self.line(now) + "\x1b[K")
        self.stream.flush()
        self._drawn = True
        self._last_draw = now

    def update(self, executed: int) -> None:
        self.executed = executed
        if self.quiet or not self.total:
            return
        now = time.monotonic()
        if self.tty:
            if now - self._last_draw >= 0.1 or self.cached + executed >= self.total:
                self._draw(now)
            return
        decile = 10 * (self.cached + executed) // self.total
        if decile > self._last_decile and decile < 10 and now - self._last_draw >= 2.0:
            self._last_decile = decile
            self._last_draw = now
            self.stream.write(self.line(now) + "\n")
            self.stream.flush()

    def finish(self, ok: bool = True) -> None:
        if self.quiet:
            return
        if self.tty:
            if self._drawn:
                self._draw(time.monotonic())
                self.stream.write("\n")
        elif self.total:
            self.stream.write(self.line() + ("" if ok else "  (stopped)") + "\n")
        self.stream.flush()
