"""Child processes that end with the `lasthop` process that started them."""
from __future__ import annotations

import os
import signal
import sys
from contextlib import contextmanager
from typing import Iterator


def die_with_parent() -> None:
    """Linux: SIGKILL the calling process when the process that started it exits
    (`prctl(PR_SET_PDEATHSIG)`, kept across `execve`), so a stop signal to `lasthop` leaves no
    child running. Call it in the child, after `fork` (a `preexec_fn`, or before `execve`)."""
    if not sys.platform.startswith("linux"):
        return
    try:
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(1, signal.SIGKILL, 0, 0, 0)  # PR_SET_PDEATHSIG = 1
        if os.getppid() == 1:  # the parent already left before the call
            os._exit(1)
    except (OSError, AttributeError):
        pass


@contextmanager
def stop_unwinds() -> Iterator[None]:
    """While active, SIGTERM and SIGHUP raise SystemExit(128 + signum) in the main thread, as
    SIGINT raises KeyboardInterrupt: `subprocess.run` then kills and reaps its child, and `with`
    blocks (temporary directories) clean up, before the process ends."""
    def unwind(signum: int, _frame: object) -> None:
        raise SystemExit(128 + signum)

    old = {s: signal.signal(s, unwind) for s in (signal.SIGTERM, signal.SIGHUP)}
    try:
        yield
    finally:
        for s, h in old.items():
            signal.signal(s, h)


def run_group(argv: list[str]) -> None:
    """Run `argv` to completion (output captured, an error if it fails) in a process group of its
    own, killed whole if the wait is interrupted (a stop signal unwound by `stop_unwinds`, or
    Ctrl-C): a program's own children, such as `cc1plus` under `g++`, end with it."""
    import subprocess

    p = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True,
                         preexec_fn=die_with_parent)
    try:
        out, err = p.communicate()
    except BaseException:
        try:
            os.killpg(p.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        p.wait()
        raise
    if p.returncode != 0:
        raise subprocess.CalledProcessError(p.returncode, argv, out, err)
