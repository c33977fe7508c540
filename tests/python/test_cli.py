"""The `lasthop` command as a user runs it (subprocesses of the installed console script)."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from helpers import ROOT, run_cli

from lasthop.results import load_result
from lasthop.spec import load_spec

BAD_SPECS = sorted((ROOT / "tests" / "python" / "bad_specs").glob("*.toml"))


def expected_path(spec: Path) -> str:
    first = spec.read_text().splitlines()[0]
    m = re.match(r"#\s*expect:\s*(.+?)\s*$", first)
    assert m, f"{spec.name}: first line must be '# expect: <key path>'"
    return m.group(1)


def assert_one_line_user_error(proc, expect: str) -> None:
    assert proc.returncode == 2, proc.stderr
    assert "Traceback" not in proc.stderr
    lines = proc.stderr.splitlines()
    # One line per problem: a spec error lists every problem the validator found, each on its
    # own line; any other error is one line.
    if not all(ln.startswith("lasthop: spec error: ") for ln in lines):
        assert len(lines) == 1, proc.stderr
    assert lines[0].startswith("lasthop: ")
    assert expect in lines[0], lines[0]


def test_every_problem_is_listed(tmp_path: Path):
    """Independent problems each get their line, in the order the validator meets them; the
    first is the one a single-error validator would give. (A required key with a bad value
    ends the list: nothing can stand in for it.)"""
    spec = tmp_path / "three.toml"
    spec.write_text('[sim]\nduration = "1s"\nwarmup = "2s"\n[mac]\nretry_limt = 3\n'
                    '[[stations]]\nmcs = 3\nnss = 99\n[[flows]]\nrate = "5 parsecs"\n')
    proc = run_cli("validate", str(spec))
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    assert proc.stderr.splitlines() == [
        "lasthop: spec error: sim.warmup = \"2s\": must be < sim.duration",
        'lasthop: spec error: mac.retry_limt = 3: unknown key; did you mean "retry_limit"?',
        "lasthop: spec error: stations[0].nss = 99: an integer in 1..=8 for vht",
        "lasthop: spec error: flows[0].rate = \"5 parsecs\": unknown unit 'parsecs'; a rate string "
        "with unit bps|kbps|Mbps|Gbps, e.g. \"100Mbps\" or \"1.5Gbps\"",
    ]


def test_corpus_is_big_enough():
    assert len(BAD_SPECS) >= 15


@pytest.mark.parametrize("spec", BAD_SPECS, ids=lambda p: p.stem)
def test_bad_spec_validate(spec: Path):
    expect = expected_path(spec)
    proc = run_cli("validate", str(spec))
    assert_one_line_user_error(proc, expect)
    assert proc.stdout == ""
    if not expect.startswith("line "):
        assert proc.stderr.startswith(f"lasthop: spec error: {expect} = ")


@pytest.mark.parametrize("spec", BAD_SPECS, ids=lambda p: p.stem)
def test_bad_spec_run_writes_nothing(spec: Path, tmp_path: Path):
    out = tmp_path / "out"
    proc = run_cli("run", str(spec), "-o", str(out), cwd=tmp_path)
    assert_one_line_user_error(proc, expected_path(spec))
    assert list(tmp_path.iterdir()) == []


def test_missing_file(tmp_path: Path):
    proc = run_cli("run", str(tmp_path / "nope.toml"), "-o", str(tmp_path / "o"))
    assert_one_line_user_error(proc, "nope.toml")
    assert list(tmp_path.iterdir()) == []


def test_output_dir_is_a_file(tmp_path: Path):
    f = tmp_path / "file"
    f.write_text("x")
    proc = run_cli("run", str(ROOT / "experiments" / "demo.toml"), "-o", str(f))
    assert_one_line_user_error(proc, "not a directory")


@pytest.mark.parametrize("args,expect", [
    ((), "COMMAND"),
    (("run",), "SPEC"),
    (("frobnicate",), "frobnicate"),
    (("run", "x.toml", "--seed", "-1"), "--seed"),
    (("run", "x.toml", "--seed", "abc"), "--seed"),
])
def test_usage_errors(args, expect):
    proc = run_cli(*args)
    assert proc.returncode == 2
    assert "Traceback" not in proc.stderr
    assert expect in proc.stderr


def test_version():
    proc = run_cli("version")
    assert proc.returncode == 0
    # A clean git revision, or (dirty tree, no git) that plus a 12-digit source id.
    assert re.fullmatch(r"lasthop 0\.1\.0\+([0-9a-f]{4,}|([0-9a-f]{4,}-dirty|unknown)\.[0-9a-f]{12})\n",
                        proc.stdout), proc.stdout


def test_validate_ok():
    proc = run_cli("validate", str(ROOT / "experiments" / "demo.toml"))
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith("ok: demo:")
    proc = run_cli("validate", "--json", str(ROOT / "experiments" / "demo.toml"))
    assert json.loads(proc.stdout) == load_spec(ROOT / "experiments" / "demo.toml").normalized


# --- tests that need the real simulator (skipped while _native.run is the stub) -------------

DATA_KEYS = {"stats", "channel", "flows", "stations", "timeseries"}


def test_run_writes_valid_complete_result(simulator, tiny_spec: Path, tmp_path: Path):
    out = tmp_path / "res"
    proc = run_cli("run", str(tiny_spec), "-o", str(out))
    assert proc.returncode == 0, proc.stderr
    assert "Traceback" not in proc.stderr
    files = sorted(p.name for p in out.iterdir())
    assert files == ["tiny-s7.json"]  # no temporary files left behind
    doc = load_result(out / "tiny-s7.json")
    spec = load_spec(tiny_spec)
    assert doc["format"] == "lasthop.result" and doc["format_version"] == 1
    assert doc["seed"] == 7
    assert doc["spec"] == spec.normalized
    assert re.fullmatch(r"0\.1\.0\+.+", doc["code_version"])
    data = doc["data"]
    assert DATA_KEYS <= set(data)
    assert len(data["flows"]) == len(spec.normalized["flows"])
    assert len(data["stations"]) == len(spec.normalized["stations"])
    assert data["stats"]["sim_time_ns"] == spec.duration_ns
    for key in ("events", "mpdus_delivered", "ppdus", "collisions", "beacons"):
        assert isinstance(data["stats"][key], int)
    # The summary went to stdout and names the result file.
    assert "goodput" in proc.stdout and str(out / "tiny-s7.json") in proc.stdout
    # The file is in canonical form (sorted keys, compact, newline-terminated).
    text = (out / "tiny-s7.json").read_text()
    assert text == json.dumps(json.loads(text), sort_keys=True, separators=(",", ":")) + "\n"


def test_same_seed_is_byte_identical(simulator, tiny_spec: Path, tmp_path: Path):
    a, b = tmp_path / "a", tmp_path / "b"
    for d in (a, b):
        proc = run_cli("run", str(tiny_spec), "--seed", "3", "-o", str(d), "--quiet")
        assert proc.returncode == 0, proc.stderr
        assert proc.stdout.strip() == str(d / "tiny-s3.json")
    assert (a / "tiny-s3.json").read_bytes() == (b / "tiny-s3.json").read_bytes()


# What `lasthop run` may import of the package: the simulator's own command path (cli.py's
# `_CORE`). The sweep, tune, reproduce, analysis and live modules cost tens of milliseconds of
# imports (the sweep and tune modules alone about 20 ms), a third of a short cell's run.
RUN_MODULES = {"lasthop", "lasthop._native", "lasthop.capture", "lasthop.cli", "lasthop.commands",
               "lasthop.errors", "lasthop.native", "lasthop.progress", "lasthop.results",
               "lasthop.spec", "lasthop.units", "lasthop.version"}


def test_run_imports_only_the_simulators_command_path(simulator, tiny_spec: Path, tmp_path: Path):
    env = dict(os.environ, PYTHONPROFILEIMPORTTIME="1")
    env.pop("LASTHOP_DEBUG", None)
    proc = subprocess.run([sys.executable, "-m", "lasthop", "run", str(tiny_spec), "--quiet",
                           "-o", str(tmp_path / "out")], capture_output=True, text=True, env=env, timeout=300)
    assert proc.returncode == 0, proc.stderr
    loaded = set(re.findall(r"^import time:.*\|\s*(lasthop[\w.]*)$", proc.stderr, re.M))
    assert "lasthop.spec" in loaded, proc.stderr[-2000:]
    assert loaded <= RUN_MODULES, sorted(loaded - RUN_MODULES)


def test_different_seed_differs(simulator, tiny_spec: Path, tmp_path: Path):
    for seed in ("3", "4"):
        proc = run_cli("run", str(tiny_spec), "--seed", seed, "-o", str(tmp_path), "--quiet")
        assert proc.returncode == 0, proc.stderr
    a = load_result(tmp_path / "tiny-s3.json")
    b = load_result(tmp_path / "tiny-s4.json")
    assert a["spec"] == b["spec"]
    assert a["data"] != b["data"]


def test_run_default_seed_from_spec(simulator, tiny_spec: Path, tmp_path: Path):
    proc = run_cli("run", str(tiny_spec), "-q", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert (tmp_path / "results" / "tiny-s7.json").is_file()


def test_bench_quick(simulator):
    proc = run_cli("bench", "--quick", timeout=600)
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert lines[0].startswith("lasthop bench")
    for name in ("vht80-mcs9-nss2-1sta", "vht80-mcs7-20sta", "ofdm54-10sta-up"):
        row = next(line for line in lines if line.startswith(name))
        assert "failed" not in row
    # The TCP cells: every cell, with ns per event and MPDUs per second.
    from lasthop.bench.tcp_cells import CELLS

    for n, cc in CELLS:
        row = next(line.split() for line in lines if line.startswith(f"tcp-{n}sta-{cc} "))
        assert int(row[1].replace(",", "")) > 0 and float(row[3]) > 0 and float(row[4].replace(",", "")) > 0, row
    # The scale series: every point, with ns per event and (beyond the smallest) bytes per station.
    from lasthop.bench.scale import COUNTS, KINDS

    for kind in KINDS:
        for n in COUNTS:
            row = next(line.split() for line in lines if line.split()[:2] == [str(n), kind])
            assert float(row[4]) > 0, row  # ns/event
            assert row[-1] == "-" if n == COUNTS[0] else row[-1].replace(",", "").lstrip("-").isdigit()
    assert any(line.startswith("idle:") for line in lines) and any(line.startswith("loaded:") for line in lines)


def test_the_profile_guided_builds_training_runs_every_template_and_stops_on_a_bad_spec(simulator, tmp_path: Path):
    """The training set of `make build` (python/lasthop/bench/pgo.py): every template and the
    files given, each run once; a file that does not load stops it with one line and exit 2,
    before anything ran."""
    import io
    import subprocess
    import sys

    from lasthop.bench.pgo import train, training_specs
    from lasthop.new_cli import TEMPLATES

    given = sorted(p for p in (ROOT / "experiments").glob("*.toml") if not p.name.startswith("emu-"))
    paths = training_specs([str(p) for p in given])
    assert [p.stem for p in paths[:len(TEMPLATES)]] == list(TEMPLATES) and paths[len(TEMPLATES):] == given
    out = io.StringIO()
    assert train(paths[:2], out=out) == 0
    assert out.getvalue().splitlines()[-1].startswith("  2 specs in ")
    bad = tmp_path / "bad.toml"
    bad.write_text("[sim]\nduration = \"forever\"\n")
    proc = subprocess.run([sys.executable, "-m", "lasthop.bench.pgo", str(bad)], capture_output=True, text=True,
                          timeout=120)
    assert proc.returncode == 2
    err = proc.stderr.splitlines()
    assert len(err) == 1 and err[0].startswith(f"lasthop.bench.pgo: {bad}: "), err
    assert "trained on" not in proc.stdout


def test_the_standalone_binarys_training_runs_each_spec_through_the_binary(simulator, tmp_path: Path):
    """`make build` trains the standalone binary on the module's training set, each spec run by
    the binary itself (`--binary`): the binary accepts the command it is given, and a missing
    binary is one line and exit 2 before anything runs."""
    import io
    import subprocess
    import sys

    from lasthop.bench.pgo import main, train, training_specs
    from lasthop.live.cli import live_binary

    try:
        binary = live_binary()
    except RuntimeError as e:
        pytest.skip(str(e))
    paths = training_specs([])[:2]
    out = io.StringIO()
    assert train(paths, out=out, binary=binary) == 0
    lines = out.getvalue().splitlines()
    assert [ln.split()[2] for ln in lines[:2]] == [p.name for p in paths] and lines[-1].startswith("  2 specs in ")
    # A binary that refuses the command fails the training (run_group raises), not silently.
    refusing = tmp_path / "refusing"
    refusing.write_text("#!/bin/sh\nexit 3\n")
    refusing.chmod(0o755)
    with pytest.raises(subprocess.CalledProcessError):
        train(paths[:1], out=io.StringIO(), binary=refusing)
    for argv in (["--binary"], ["--binary", str(tmp_path / "none")]):
        proc = subprocess.run([sys.executable, "-m", "lasthop.bench.pgo", *argv], capture_output=True, text=True,
                              timeout=120)
        assert proc.returncode == 2 and "trained on" not in proc.stdout
        err = proc.stderr.splitlines()
        assert len(err) == 1 and err[0].startswith("lasthop.bench.pgo: --binary: "), err
    assert main(["--binary", str(tmp_path / "none")]) == 2


def test_simulator_failure_is_exit_1_and_writes_nothing(tmp_path: Path, monkeypatch, capsys):
    """A simulator error (e.g. the stub's) is one line, exit code 1, and no file."""
    from lasthop import _native, cli

    def failing_run(*_args, **_kwargs):
        raise RuntimeError("simulator not built yet")

    monkeypatch.setattr(_native, "run", failing_run)
    out = tmp_path / "out"
    rc = cli.main(["run", str(ROOT / "experiments" / "demo.toml"), "-o", str(out), "--quiet"])
    assert rc == 1
    err = capsys.readouterr().err.splitlines()
    assert err == ["lasthop: simulation failed: simulator not built yet"]
    assert list(tmp_path.iterdir()) == []


def test_bench_tcp_cells_without_ns3_say_why_and_run_lasthop(simulator, monkeypatch, tmp_path: Path):
    """`--compare-ns3` where ns-3 cannot run: one line saying why, then lasthop's side alone."""
    import io

    from lasthop.bench import tcp_cells

    monkeypatch.setattr(tcp_cells, "NS3_DIR", tmp_path / "nowhere")
    out = io.StringIO()
    rows = tcp_cells.run_tcp_cells(quick=True, compare_ns3=True, out=out, cells=((1, "cubic"),))
    text = out.getvalue()
    assert "--compare-ns3: no reference/ns3/tcp.cc here" in text
    assert rows[0]["ns3_s"] is None and rows[0]["events"] > 0 and "ns-3 s" not in text
    # What the process adds to the native run, by part: each part measured, none negative.
    parts = rows[0]["overhead_parts"]
    assert set(parts) == {"interpreter_ms", "imports_ms", "steps_ms"}
    assert parts["interpreter_ms"] > 0 and parts["imports_ms"] > 0 and parts["steps_ms"] > 0, parts
    assert "what lasthop run adds to the native run" in text
    # What the parts leave of the whole is printed, not hidden.
    rest = rows[0]["overhead_ms"] - sum(parts.values())
    assert rows[0]["overhead_rest_ms"] == rest
    assert f"and {rest:.1f} ms not taken apart" in text
    # The standalone binary it times says which build it is (profile-guided with `make build`).
    if tcp_cells._standalone() is not None:
        assert re.search(r"^standalone: lasthop-live \S+ \((profile-guided|release|debug) build\)$", text, re.M), text
    # The cell is the one compare_tcp.py runs: a valid spec with every station downloading.
    from lasthop.spec import load_spec_text

    spec = load_spec_text(tcp_cells.cell_toml(20, "bbr", 1.0), "cell")
    assert len(spec.normalized["stations"]) == 20 and spec.normalized["flows"][0]["cc"] == "bbr"


def test_bench_without_valgrind_says_why_and_still_times_the_cells(simulator, monkeypatch):
    """`--instructions` where valgrind is missing: one line saying why, then the timings alone."""
    import io
    import shutil

    from lasthop.bench import tcp_cells

    which = shutil.which
    monkeypatch.setattr(shutil, "which", lambda name, *a, **k: None if name == "valgrind" else which(name, *a, **k))
    out = io.StringIO()
    rows = tcp_cells.run_tcp_cells(quick=True, out=out, cells=((1, "cubic"),), instructions=True)
    text = out.getvalue()
    assert "--instructions: no valgrind (apt-get install valgrind); timings only" in text
    assert rows[0]["instructions_per_event"] is None and rows[0]["events"] > 0 and "instr/event" not in text


def test_bench_counts_the_native_runs_instructions_per_event(simulator, tmp_path: Path):
    """`--instructions`: the counted child runs the same simulation as the timed one (the same
    events), and what is left after the child's start is what a TCP cell's event costs (about
    2,600 instructions on this cell), not the interpreter's hundred million."""
    from lasthop import _native
    from lasthop.bench import tcp_cells
    from lasthop.bench.scale import child_env

    if tcp_cells.valgrind_missing():
        pytest.skip(tcp_cells.valgrind_missing())
    spec = tmp_path / "cell.toml"
    spec.write_text(tcp_cells.cell_toml(1, "cubic", 0.5), encoding="utf-8")
    instructions, events = tcp_cells.count_instructions(spec, child_env())
    loaded = load_spec(spec)
    assert events == json.loads(_native.run(loaded.to_json(), loaded.seed, None))["stats"]["events"]
    assert 500 < instructions / events < 20_000, instructions / events


def test_a_stop_signal_ends_the_bench_children(tmp_path: Path):
    """The bench's timed children (`scale._run_wait4`, ns-3 via `preexec_fn`) die with the
    process that started them: SIGTERM to it leaves no child running."""
    import signal
    import subprocess
    import sys
    import time

    code = ("import os, sys; from lasthop.bench.scale import _run_wait4; "
            "_run_wait4(['/bin/sleep', '60'], dict(os.environ))")
    parent = subprocess.Popen([sys.executable, "-c", code])
    children = Path(f"/proc/{parent.pid}/task/{parent.pid}/children")
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline and not children.read_text().split():
        time.sleep(0.05)
    (child,) = [int(c) for c in children.read_text().split()]
    parent.send_signal(signal.SIGTERM)
    parent.wait(timeout=10)
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline and Path(f"/proc/{child}").exists():
        state = Path(f"/proc/{child}/stat").read_text().split()[2] if Path(f"/proc/{child}/stat").exists() else "X"
        if state == "Z":
            break
        time.sleep(0.05)
    gone = not Path(f"/proc/{child}").exists() or Path(f"/proc/{child}/stat").read_text().split()[2] == "Z"
    assert gone, f"the bench's child {child} outlived its parent"
