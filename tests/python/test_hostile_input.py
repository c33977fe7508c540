"""Hostile and careless input that used to get through (spec limits and the store):
each case is one line naming the key, exit 2, nothing written."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
BASE = """name = "{name}"
[sim]
duration = "{dur}"
[phy]
standard = "ht"
[[stations]]
count = 1
mcs = 7
[[flows]]
direction = "down"
pattern = "cbr"
rate = "{rate}"
"""


def _run(tmp: Path, *args: str, name: str = "ok", dur: str = "1s", rate: str = "10Mbps") -> subprocess.CompletedProcess[str]:
    f = tmp / "spec.toml"
    f.write_text(BASE.format(name=name, dur=dur, rate=rate))
    return subprocess.run([sys.executable, "-m", "lasthop", *args, str(f)], capture_output=True, text=True, cwd=tmp, timeout=120)


def test_huge_numbers_in_durations_and_rates_are_spec_errors(tmp_path):
    for dur, rate, key in [("1" + "0" * 5000 + "s", "10Mbps", "sim.duration"), ("1s", "9" * 5000 + "Mbps", "flows[0].rate"),
                           ("100000000000000000000000s", "10Mbps", "sim.duration")]:
        for args in (["validate"], ["run", "-o", "out"]):
            r = _run(tmp_path, *args, dur=dur, rate=rate)
            assert r.returncode == 2, r.stderr
            line = r.stderr.strip()
            assert line.count("\n") == 0 and key in line and "Traceback" not in line, line
            assert len(line) < 400, len(line)
    assert not (tmp_path / "out").exists()


def test_echoed_values_are_clipped(tmp_path):
    r = _run(tmp_path, "validate", rate="x" * 100_000)
    assert r.returncode == 2 and len(r.stderr) < 400 and "100000 characters" in r.stderr, r.stderr[:500]


def test_a_name_too_long_for_a_file_is_refused_before_simulating(tmp_path):
    r = _run(tmp_path, "run", "-o", "out", name="a" * 300)
    assert r.returncode == 2 and r.stderr.count("\n") == 1 and "name" in r.stderr and "at most 200" in r.stderr, r.stderr
    assert not (tmp_path / "out").exists()
    r = _run(tmp_path, "run", "-o", "out", name="a" * 200, dur="10ms")
    assert r.returncode == 0, r.stderr


def test_an_empty_output_directory_is_refused(tmp_path):
    r = _run(tmp_path, "run", "-o", "")
    assert r.returncode == 2 and r.stderr.count("\n") == 1 and "-o: the output directory is empty" in r.stderr, r.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == ["spec.toml"]


def _spec(tmp: Path, text: str) -> Path:
    f = tmp / "s.toml"
    f.write_text(text)
    return f


def _cli(tmp: Path, *args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "lasthop", *args], capture_output=True, text=True, cwd=tmp,
                          timeout=timeout)


def _one_line(r: subprocess.CompletedProcess[str], *words: str) -> None:
    line = r.stderr.strip()
    assert r.returncode == 2, (r.returncode, r.stderr)
    assert line.count("\n") == 0 and "Traceback" not in line and "internal error" not in line, line
    for w in words:
        assert w in line, line


def test_integers_beyond_the_simulators_types_name_their_key(tmp_path):
    base = BASE.format(name="ok", dur="1s", rate="10Mbps")
    tcp = "[[flows]]\nstations = 0\npattern = \"tcp\"\n"
    for extra, key, allowed in [
            (tcp + "bytes = 18446744073709551616\n", "flows[1].bytes = 18446744073709551616", "0..=18446744073709551615"),
            (tcp + "app = \"request_response\"\nresponse_bytes = 1000\nrequests = 99999999999999999999999\n",
             "flows[1].requests", "0..=18446744073709551615")]:
        f = _spec(tmp_path, base + extra)
        for args in (["validate", str(f)], ["run", str(f), "-o", "out"]):
            _one_line(_cli(tmp_path, *args), key, allowed)
    assert not (tmp_path / "out").exists()


def test_queue_limits_a_machine_cannot_hold_are_refused(tmp_path):
    base = BASE.format(name="ok", dur="1s", rate="10Mbps")
    for extra, key in [("[ap]\nqueue_limit = 4294967295\n", "ap.queue_limit = 4294967295"),
                       ("[ap]\ndriver = \"firmware\"\nhw_queue_limit = 99999999999\n", "ap.hw_queue_limit"),
                       ("[[stations]]\nmcs = 7\nqueue_limit = 99999999999\n", "stations[1].queue_limit"),
                       ("[wired]\nqueue_limit = 2000000\n", "wired.queue_limit")]:
        f = _spec(tmp_path, base + extra)
        _one_line(_cli(tmp_path, "validate", str(f)), key, "1..=1048576")


def test_deeply_nested_arrays_are_one_line(tmp_path):
    f = _spec(tmp_path, "x = " + "[" * 600 + "]" * 600 + "\n")
    _one_line(_cli(tmp_path, "validate", str(f)), "nested too deeply")


def test_beacon_interval_is_bounded_by_the_standard(tmp_path):
    base = BASE.format(name="ok", dur="1s", rate="10Mbps")
    for v in ("1ns", "1ms", "68s"):
        f = _spec(tmp_path, base + f'[mac]\nbeacon_interval = "{v}"\n')
        _one_line(_cli(tmp_path, "validate", str(f)), "mac.beacon_interval", "65535 TU")
    for v in ("0s", "1.024ms", "102.4ms", "67.10784s"):
        f = _spec(tmp_path, base + f'[mac]\nbeacon_interval = "{v}"\n')
        assert _cli(tmp_path, "validate", str(f)).returncode == 0, v


def test_an_output_directory_that_cannot_be_created_fails_before_simulating(tmp_path):
    f = _spec(tmp_path, BASE.format(name="ok", dur="1s", rate="10Mbps"))
    for out in ("/proc/lasthop-x", str(tmp_path / "file" / "sub")):
        (tmp_path / "file").write_text("")
        _one_line(_cli(tmp_path, "run", str(f), "-o", out), out)


def _long_run(tmp: Path, *args: str) -> subprocess.Popen[str]:
    f = _spec(tmp, "[sim]\nduration = \"100000s\"\n[[stations]]\nmcs = 9\n[[flows]]\npattern = \"saturated\"\n")
    return subprocess.Popen([sys.executable, "-m", "lasthop", "run", str(f), "-o", "out", *args], cwd=tmp,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def test_an_interrupted_run_says_so_and_writes_nothing(tmp_path):
    import signal
    import time
    for sig, code in ((signal.SIGINT, 130), (signal.SIGTERM, 143)):
        p = _long_run(tmp_path, "--quiet")
        time.sleep(2.0)
        p.send_signal(sig)
        out, err = p.communicate(timeout=20)
        assert p.returncode == code, (p.returncode, err)
        assert f"{signal.Signals(sig).name} while simulating" in err and "nothing was written" in err, err
        assert not (tmp_path / "out").exists()


SWEEP_SPEC = "[sim]\nduration = \"{d}\"\n[[stations]]\nmcs = 9\n[[flows]]\npattern = \"saturated\"\n"


def test_a_second_sweep_into_the_same_directory_is_refused(tmp_path):
    import time
    f = _spec(tmp_path, SWEEP_SPEC.format(d="400s"))
    first = subprocess.Popen([sys.executable, "-m", "lasthop", "sweep", str(f), "--vary", "stations[0].mcs=5,6,7",
                              "-o", "sw", "-j", "1", "-q"], cwd=tmp_path, stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True)
    deadline = time.time() + 30
    while not (tmp_path / "sw" / ".lock").exists() and time.time() < deadline:
        time.sleep(0.05)
    time.sleep(0.3)
    second = _cli(tmp_path, "sweep", str(f), "--vary", "stations[0].mcs=1,2", "-o", "sw", "-j", "1", "-q")
    _one_line(second, "another sweep", f"pid {first.pid}")
    first.communicate(timeout=300)
    assert first.returncode == 0
    # The finished sweep's manifest and summary are the first sweep's.
    import json
    m = json.loads((tmp_path / "sw" / "sweep.json").read_text())
    assert m["vary"] == [["stations[0].mcs", [5, 6, 7]]]


def test_run_files_are_checked_where_they_are_read(tmp_path):
    import json
    f = _spec(tmp_path, SWEEP_SPEC.format(d="2s"))
    args = ("sweep", str(f), "--vary", "stations[0].mcs=5,6", "-o", "sw", "-j", "1", "-q")
    assert _cli(tmp_path, *args).returncode == 0
    runs = sorted((tmp_path / "sw" / "runs").glob("*.json"))
    assert _cli(tmp_path, "table", "-i", "sw").returncode == 0
    # An edited number, sealed with the old checksum: readers refuse, a re-run recomputes it.
    d = json.loads(runs[0].read_text())
    d["data"]["flows"][0]["goodput_bps"] *= 2
    runs[0].write_text(json.dumps(d, sort_keys=True, separators=(",", ":")) + "\n")
    for cmd in (("table", "-i", "sw"), ("report", "-i", "sw", "-o", "r.html"), ("plot", "-i", "sw", "-o", "p.png")):
        _one_line(_cli(tmp_path, *cmd), runs[0].name, "changed after the sweep wrote it")
    r = _cli(tmp_path, *args[:-1])
    assert r.returncode == 0 and "1 cached" in r.stderr + r.stdout, r.stderr + r.stdout
    assert _cli(tmp_path, "table", "-i", "sw").returncode == 0
    # Truncated, emptied and missing run files.
    for damage in (lambda p: p.write_text(p.read_text()[:100]), lambda p: p.write_text("{}"), lambda p: p.unlink()):
        damage(runs[1])
        _one_line(_cli(tmp_path, "table", "-i", "sw"), runs[1].name)
        assert _cli(tmp_path, *args).returncode == 0
        assert _cli(tmp_path, "table", "-i", "sw").returncode == 0
    # A single result file with an edited number is refused by the readers too.
    one = _cli(tmp_path, "run", str(f), "-o", "one", "--quiet")
    assert one.returncode == 0
    p = Path(tmp_path / one.stdout.strip())
    d = json.loads(p.read_text())
    d["seed"] = 99
    p.write_text(json.dumps(d))
    _one_line(_cli(tmp_path, "table", "-i", str(p)), "changed after it was written")


def test_a_killed_sweeps_temporary_files_are_removed_on_resume(tmp_path):
    f = _spec(tmp_path, SWEEP_SPEC.format(d="2s"))
    args = ("sweep", str(f), "--vary", "stations[0].mcs=5,6", "-o", "sw", "-j", "1", "-q")
    assert _cli(tmp_path, *args).returncode == 0
    stale = tmp_path / "sw" / "runs" / ".0123abcd.json.k3j4.tmp"
    stale.write_text("{\"half")
    assert _cli(tmp_path, *args).returncode == 0
    assert not stale.exists()


def test_a_run_that_cannot_write_its_pcap_keeps_nothing(tmp_path):
    import os
    import pytest
    if os.geteuid() != 0:
        pytest.skip("mounting a small tmpfs needs root")
    disk = tmp_path / "disk"
    disk.mkdir()
    if subprocess.run(["mount", "-t", "tmpfs", "-o", "size=256k", "tmpfs", str(disk)]).returncode != 0:
        pytest.skip("tmpfs mount not available")
    try:
        f = _spec(tmp_path, BASE.format(name="ok", dur="2s", rate="50Mbps"))
        r = _cli(tmp_path, "run", str(f), "-o", str(disk), "--pcap", "ap", "--quiet")
        _one_line(r, "nothing was kept", "No space left")
        assert list(disk.iterdir()) == [], list(disk.iterdir())
    finally:
        subprocess.run(["umount", str(disk)])


def test_sigterm_to_a_sweep_ends_its_workers(tmp_path):
    import time
    f = _spec(tmp_path, SWEEP_SPEC.format(d="100000s"))
    p = subprocess.Popen([sys.executable, "-m", "lasthop", "sweep", str(f), "--vary", "stations[0].mcs=5,6,7,8",
                          "-o", "sw", "-j", "2", "-q"], cwd=tmp_path, stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True)
    time.sleep(4)  # workers started and simulating
    t0 = time.monotonic()
    p.terminate()
    out, err = p.communicate(timeout=30)  # returns only once every holder of the pipes is gone
    assert time.monotonic() - t0 < 5, err
    assert "leaked semaphore" not in err, err
    assert p.returncode != 0
