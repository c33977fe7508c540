"""Children of `lasthop` end with it: a stop signal unwinds `run_group`, which kills the whole
process group of the program it runs (a compiler driver's own children included)."""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
import uuid


def _alive(marker: str) -> list[int]:
    pids = []
    for d in os.listdir("/proc"):
        if d.isdigit():
            try:
                with open(f"/proc/{d}/cmdline", "rb") as f:
                    if marker.encode() in f.read():
                        pids.append(int(d))
            except OSError:
                pass
    return pids


def test_a_stop_signal_kills_the_grandchildren_of_run_group():
    # Two sleeps forked by a shell, as cc1plus is by g++: the shell's pdeathsig does not reach them.
    marker = f"97.{uuid.uuid4().int % 10**8:08d}"
    code = ("from lasthop.children import run_group, stop_unwinds\n"
            "with stop_unwinds():\n"
            f"    run_group(['sh', '-c', 'sleep {marker} & sleep {marker} & wait'])\n")
    p = subprocess.Popen([sys.executable, "-c", code])
    try:
        deadline = time.monotonic() + 20
        while len(_alive(f"sleep\0{marker}")) < 2 and time.monotonic() < deadline:
            time.sleep(0.05)
        assert len(_alive(f"sleep\0{marker}")) == 2, "the grandchildren did not start"
        p.send_signal(signal.SIGTERM)
        assert p.wait(timeout=20) == 128 + signal.SIGTERM
        deadline = time.monotonic() + 5
        while _alive(f"sleep\0{marker}") and time.monotonic() < deadline:
            time.sleep(0.05)
        assert _alive(f"sleep\0{marker}") == []
    finally:
        p.kill()
        for pid in _alive(f"sleep\0{marker}"):
            os.kill(pid, signal.SIGKILL)


def test_run_group_reports_a_failure():
    import pytest

    from lasthop.children import run_group

    with pytest.raises(subprocess.CalledProcessError) as e:
        run_group(["sh", "-c", "echo bad >&2; exit 3"])
    assert e.value.returncode == 3 and e.value.stderr == b"bad\n"
