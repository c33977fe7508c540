"""`lasthop-live run SPEC`: the result file `lasthop run` writes, without Python.

The standalone binary reads the spec with the simulator's reader and rules and writes the same
envelope: the same bytes once the code version is the same (a build from a clean tree writes
`<version>+<git>` on both sides; otherwise each side appends the identifier of its own build).
"""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from lasthop.live.cli import live_binary
from lasthop.results import dumps, load_result

SPEC = """name = "standalone"

[sim]
duration = "300ms"
seed = 5

[phy]
standard = "vht"
channel_width = 80

[[stations]]
count = 2
mcs = 7

[[flows]]
stations = "all"
direction = "down"
pattern = "tcp"
"""


@pytest.fixture(scope="module")
def binary() -> Path:
    try:
        return live_binary()
    except RuntimeError as e:
        pytest.skip(str(e))


def _standalone(binary: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(binary), "run", *args], capture_output=True, text=True, timeout=120)


def _lasthop(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "lasthop", "run", *args], capture_output=True, text=True,
                          timeout=120)


def test_the_standalone_run_writes_lasthop_runs_file(binary: Path, tmp_path: Path) -> None:
    spec = tmp_path / "cell.toml"
    spec.write_text(SPEC, encoding="utf-8")
    for seed in ("5", "11"):
        py = _lasthop(str(spec), "--seed", seed, "-q", "-o", str(tmp_path / "py"))
        sa = _standalone(binary, str(spec), "--seed", seed, "-q", "-o", str(tmp_path / "sa"))
        assert py.returncode == 0, py.stderr
        assert sa.returncode == 0, sa.stderr
        assert sa.stdout.strip() == str(tmp_path / "sa" / f"standalone-s{seed}.json")
        py_file, sa_file = Path(py.stdout.strip()), Path(sa.stdout.strip())
        sa_doc = load_result(sa_file)  # its checksum verified
        py_doc = load_result(py_file)
        assert sa_doc["seed"] == int(seed)
        # The same bytes under the standalone's code version: the envelope, the spec's and the
        # data's canonical text and the checksum all as Python writes them.
        assert dumps({**py_doc, "code_version": sa_doc["code_version"]}).encode() == sa_file.read_bytes()
        if py_doc["code_version"] == sa_doc["code_version"]:
            assert py_file.read_bytes() == sa_file.read_bytes()
    # Without --seed, the spec's own (sim.seed = 5) and the default directory name.
    sa = subprocess.run([str(binary), "run", str(spec), "-q"], capture_output=True, text=True, cwd=tmp_path,
                        timeout=120)
    assert sa.returncode == 0, sa.stderr
    assert (tmp_path / "results" / "standalone-s5.json").is_file()


def test_a_bad_spec_fails_early_one_line_per_problem(binary: Path, tmp_path: Path) -> None:
    spec = tmp_path / "bad.toml"
    spec.write_text('[sim]\nduration = "1s"\nfoo = 1\n[phy]\nstandard = "zz"\n', encoding="utf-8")
    r = _standalone(binary, str(spec), "-o", str(tmp_path / "out"))
    assert r.returncode == 2
    lines = r.stderr.splitlines()
    assert lines == [
        "lasthop-live: spec error: sim.foo = 1: unknown key; allowed: duration, warmup, seed, bin",
        'lasthop-live: spec error: phy.standard = "zz": one of "ofdm"|"ht"|"vht"|"he"',
        "lasthop-live: spec error: stations = (missing): at least one [[stations]] table is required",
    ]
    assert not (tmp_path / "out").exists()

    spec.write_text('name = "x"\n[sim\n', encoding="utf-8")
    r = _standalone(binary, str(spec))
    assert r.returncode == 2
    assert len(r.stderr.splitlines()) == 1
    assert "invalid TOML" in r.stderr and "(at line 2, column 5)" in r.stderr

    for args, says in [((str(tmp_path / "none.toml"),), "no such file"),
                       ((str(tmp_path),), "is a directory"),
                       (("--seed", "-1", str(spec)), "--seed"),
                       (("--seed", str(2**64), str(spec)), "an integer in 0..=2^64-1"),
                       ((str(spec), "-o", ""), "output directory is empty"),
                       ((str(spec), "--pcap", "ap"), "unknown option --pcap"),
                       ((), "name the spec file")]:
        r = _standalone(binary, *args)
        assert r.returncode == 2, args
        assert len(r.stderr.splitlines()) == 1 and says in r.stderr, (args, r.stderr)


def test_an_output_directory_it_cannot_write_is_refused_before_the_run(binary: Path, tmp_path: Path) -> None:
    spec = tmp_path / "cell.toml"
    spec.write_text(SPEC, encoding="utf-8")
    (tmp_path / "file").write_text("x")
    r = _standalone(binary, str(spec), "-o", str(tmp_path / "file"))
    assert r.returncode == 2
    assert r.stderr.strip().endswith("exists and is not a directory")
    (tmp_path / "out" / "standalone-s5.json").mkdir(parents=True)
    r = _standalone(binary, str(spec), "-o", str(tmp_path / "out"))
    assert r.returncode == 2 and "is a directory" in r.stderr


def test_a_stop_signal_during_the_run_leaves_nothing(binary: Path, tmp_path: Path) -> None:
    spec = tmp_path / "long.toml"
    spec.write_text(SPEC.replace('duration = "300ms"', 'duration = "600s"'), encoding="utf-8")
    out = tmp_path / "out"
    p = subprocess.Popen([str(binary), "run", str(spec), "-q", "-o", str(out)], stderr=subprocess.PIPE)
    time.sleep(0.5)
    assert p.poll() is None
    os.kill(p.pid, signal.SIGTERM)
    assert p.wait(timeout=10) == -signal.SIGTERM
    assert not out.exists() or not any(out.iterdir())


def test_the_help_names_the_options(binary: Path) -> None:
    r = _standalone(binary, "--help")
    assert r.returncode == 0
    for opt in ("--seed", "--out", "--quiet"):
        assert opt in r.stdout
    top = subprocess.run([str(binary), "--help"], capture_output=True, text=True, timeout=30)
    assert "run " in top.stdout
    # `run` is not a live tool: `lasthop run` stays Python's command.
    from lasthop.live.cli import TOOLS
    assert "run" not in TOOLS
