"""Hostile and careless input that used to get through (issue: spec limits and the store):
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
