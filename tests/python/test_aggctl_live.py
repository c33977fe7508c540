"""`lasthop aggctl send|recv` (docs/live.md): bad input, and the loop across the emulator —
the receivers' estimates against the emulator's own A-MPDU counts, forged/replayed/unknown
reports refused and counted, a vanished receiver dropped by the watchdog.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
from pathlib import Path

import pytest

from test_emu import REASON as EMU_REASON

ROOT = Path(__file__).resolve().parents[2]


def _bin() -> Path | None:
    c = [p for p in (ROOT / "target" / "debug" / "lasthop-live", ROOT / ".venv" / "bin" / "lasthop-live") if p.exists()]
    return max(c, key=lambda p: p.stat().st_mtime) if c else None


BIN = _bin()
needs_bin = pytest.mark.skipif(BIN is None, reason="lasthop-live not built")


def _run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(BIN), "aggctl", *args], capture_output=True, text=True, timeout=20)


@needs_bin
@pytest.mark.parametrize("args, says", [
    (["send"], "at least one receiver"),
    (["send", "--to", "10.1.2.3"], "--to = \"10.1.2.3\": an IPv4 address and port"),
    (["send", "--to", "127.0.0.1:7450", "--key", "/nonexistent/k"], "--key = \"/nonexistent/k\": cannot read it"),
    (["send", "--to", "127.0.0.1:7450", "--target", "70"], "--target = \"70\": 1 to the Block Ack window (64)"),
    (["send", "--to", "127.0.0.1:7450", "--k0", "-1"], "--k0 = \"-1\""),
    (["send", "--to", "127.0.0.1:7450", "--to", "127.0.0.1:7450"], "each receiver once"),
    (["recv", "--listen", "nowhere:1"], "--listen = \"nowhere:1\""),
    (["recv", "--gap", "5ms"], "--gap"),
    (["fly"], "unknown command"),
])
def test_bad_input_is_one_line_and_exit_2(args, says, tmp_path):
    r = _run(*args)
    assert r.returncode == 2, r
    assert r.stderr.count("\n") == 1 and says in r.stderr, r.stderr
    assert r.stdout == ""


@needs_bin
def test_bad_key_file_unreachable_receiver_and_port_in_use(tmp_path):
    k = tmp_path / "k"
    k.write_text("not a key\n")
    r = _run("send", "--to", "127.0.0.1:7450", "--key", str(k))
    assert r.returncode == 2 and r.stderr.count("\n") == 1 and "not hex" in r.stderr, r.stderr
    k.write_text("0011\n")
    r = _run("recv", "--key", str(k))
    assert r.returncode == 2 and "2 bytes: a key has 16 to 64 bytes" in r.stderr, r.stderr
    # A receiver no route reaches (a network namespace without one would be the real thing;
    # this process may have a default route, so use an address family it cannot reach).
    r = subprocess.run(["unshare", "-n", str(BIN), "aggctl", "send", "--to", "10.1.2.3:7450", "--bind", "0.0.0.0:0",
                        "--duration", "1s"], capture_output=True, text=True, timeout=20) if os.geteuid() == 0 else None
    if r is not None:
        assert r.returncode == 2 and r.stderr.count("\n") == 1 and "--to = \"10.1.2.3:7450\"" in r.stderr \
            and "unreachable" in r.stderr, r.stderr
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
        r = _run("recv", "--listen", f"127.0.0.1:{port}", "--duration", "1s")
        assert r.returncode == 2 and r.stderr.count("\n") == 1 and "in use" in r.stderr, r.stderr
        r = _run("send", "--to", "127.0.0.1:7450", "--bind", f"127.0.0.1:{port}", "--duration", "1s")
        assert r.returncode == 2 and r.stderr.count("\n") == 1 and "in use" in r.stderr, r.stderr


@needs_bin
def test_derived_keys_differ_per_receiver(tmp_path):
    m = tmp_path / "m"
    m.write_text(_run("key", "--new").stdout)
    a = _run("key", "--master", str(m), "--for", "10.0.0.2:7450").stdout.strip()
    b = _run("key", "--master", str(m), "--for", "10.0.0.3:7450").stdout.strip()
    assert len(a) == 64 and len(b) == 64 and a != b


@pytest.mark.skipif(EMU_REASON is not None or BIN is None, reason=EMU_REASON or "lasthop-live not built")
def test_loop_across_the_emulator_with_attacks_and_a_vanished_receiver(tmp_path):
    """Three receivers on the VHT 80 MHz MCS 9 NSS 2 cell for 14 s, starting at 150 Mb/s each;
    station 0's namespace replays, forges and re-sends from another port 5 reports each; the
    last receiver is killed at 7 s."""
    from lasthop.live import bench_aggctl as A

    def mean_error(run: dict) -> float:
        err = A.estimate_errors(run)
        return sum(abs(e["error"]) for e in err) / max(len(err), 1)

    def within_one(run: dict) -> float:
        err = A.estimate_errors(run)
        return sum(abs(e["error"]) < 1.0 for e in err) / max(len(err), 1)

    def lossless(run: dict) -> bool:
        return all(r is not None and r["lost"] == 0 for r in run["recv"][:2])

    # The estimates are measured on the wall clock: a busy process that preempts the
    # emulator's model thread between the writes of one A-MPDU splits it on its way to the
    # receiver. The model thread runs under SCHED_FIFO (`--realtime`, docs/emu.md) so that the
    # tools' own processes cannot; a stall of the VM itself still can, and a receiver starved
    # of CPU overflows its socket buffer. Up to two more runs are allowed when a run's
    # estimates are off or a receiver lost packets; the last must pass every check.
    runs = []
    for attempt in range(3):
        runs.append(A.emulate(3, 14, tmp_path / f"run{attempt}", faults=True, initial_rate="150Mbps", realtime=10))
        if mean_error(runs[-1]) < 1.5 and within_one(runs[-1]) >= 0.7 and lossless(runs[-1]):
            break
    run = runs[-1]
    snd, rcv = run["send"], run["recv"]
    att = run["scenario"]["attack"]
    assert att["captured"], att
    r0 = snd["receivers"][0]
    assert r0["rejected"]["replayed"] == att["replayed"] == 5, r0
    assert r0["rejected"]["forged"] == att["forged"] == 5, r0
    assert snd["rejected_unknown_source"] == att["unknown"] == 5, snd
    # The estimates agree with the emulator's own A-MPDU counts for the same intervals.
    err = A.estimate_errors(run)
    # (Slots where this 2-core host stalls the emulator's writes split aggregates: the worst
    # slot is several MPDUs off; docs/live-bench.md.)
    assert len(err) >= 20, err
    assert sum(abs(e["error"]) for e in err) / len(err) < 1.5, \
        ([round(mean_error(x), 2) for x in runs], [x["emu"].get("lateness_p99_ns") for x in runs], err)
    assert sum(abs(e["error"]) < 1.0 for e in err) >= 0.7 * len(err), \
        ([round(within_one(x), 2) for x in runs], [x["emu"].get("lateness_p99_ns") for x in runs], err)
    # The killed receiver left the allocation; the others' rates rose after it did.
    gone = snd["receivers"][2]
    assert gone["leaves"] >= 1 and rcv[2] is None, gone
    for r in snd["receivers"][:2]:
        before = [x["rate_bps"] for x in r["series"] if 4.0 <= x["t_s"] < 7.0]
        after = [x["rate_bps"] for x in r["series"] if x["t_s"] >= 11.0]
        assert before and after and min(after) > max(before), (before, after)
    # No loss, delay of a few ms for the receivers that stayed.
    for rr in rcv[:2]:
        assert rr["lost"] == 0 and rr["received"] > 10_000, rr
        assert rr["owd_ns"]["p50"] < 10e6, rr["owd_ns"]
    assert all(x["emu"]["realtime"] == 10 for x in runs)
    assert shutil.which("ip")


@needs_bin
def test_service_units_parse(tmp_path):
    """The example units' command lines parse: they get as far as reading the key file they
    name (absent here)."""
    import re
    import shlex
    for unit in ("lasthop-aggctl-send.service", "lasthop-aggctl-recv.service"):
        text = (ROOT / "docs" / "examples" / unit).read_text()
        argv = shlex.split(re.search(r"(?m)^ExecStart=\S+ (.*)$", text).group(1))
        assert argv[0] == "aggctl"
        r = subprocess.run([str(BIN), *argv], capture_output=True, text=True, timeout=20)
        assert r.returncode == 2 and r.stderr.count("\n") == 1 and "--key = \"/etc/lasthop/" in r.stderr, r.stderr
