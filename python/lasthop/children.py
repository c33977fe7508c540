"""Child processes that end with the `lasthop` process that started them."""
from __future__ import annotations

import os
import signal
import sys


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
