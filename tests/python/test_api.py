"""The Python API (docs/python.md): load_spec, run, sweep, load, from a plain script and in
process; results identical to the command line's; user errors as one-line LasthopError."""
from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest

from helpers import ROOT, TINY_SPEC, run_cli

import lasthop


def _spec_file(tmp_path):
    p = tmp_path / "tiny.toml"
    p.write_text(TINY_SPEC)
    return p


def test_run_gives_the_command_lines_bytes_and_frames(tmp_path):
    spec = _spec_file(tmp_path)
    r = lasthop.run(lasthop.load_spec(spec), seed=5)
    cli = run_cli("run", str(spec), "--seed", "5", "-o", str(tmp_path / "cli"), "-q")
    assert cli.returncode == 0, cli.stderr
    ours = r.save(tmp_path / "api.json")
    assert ours.read_bytes() == (tmp_path / "cli" / "tiny-s5.json").read_bytes()
    # Same spec and seed, same result.
    assert lasthop.run(spec, seed=5).doc == r.doc
    f = r.flows
    nflows = len(r.doc["data"]["flows"])
    assert len(f) == nflows and {"goodput_bps", "label", "cc", "ac", "direction"} <= set(f.columns)
    assert f["label"].iloc[0].startswith("flow 0 (poisson down, sta0")
    assert f["ac"].iloc[0] == "BE" and f["cc"].iloc[0] is None
    assert len(r.stations) == 3 and "mcs" in r.stations.columns
    assert "flow_goodput_bps" in r.series_names
    ts = r.timeseries("flow_goodput_bps")
    assert ts.index.name == "t_s" and ts.shape[1] == nflows and ts.index[1] == pytest.approx(0.05)
    assert set(r.queues.columns) >= {"t_s", "node", "backlog_packets", "queue_limit"}
    assert set(r.timeseries_long()["series"]) == set(r.series_names)


def test_load_reads_result_files_and_sweep_dirs(tmp_path):
    spec = _spec_file(tmp_path)
    summary = lasthop.sweep(str(spec), vary={"ap.qdisc": ["fifo", "codel"]}, seeds=2, out_dir=tmp_path / "sw",
                            jobs=2)
    nflows = len(lasthop.load_spec(spec).normalized["flows"])
    assert len(summary) == 2 * 2 * nflows and {"ap.qdisc", "seed", "goodput_bps"} <= set(summary.columns)
    sw = lasthop.load(tmp_path / "sw")
    assert isinstance(sw, lasthop.SweepRun) and len(sw.runs) == 4
    assert sw.summary.equals(summary)
    one = sw.run(sw.runs[0]["point"], sw.runs[0]["seed"])
    assert isinstance(one, lasthop.Run) and one.spec["ap"]["qdisc"] in ("fifo", "codel")
    assert lasthop.load(one.path).doc == one.doc


def test_user_errors_are_one_line_lasthop_errors(tmp_path):
    with pytest.raises(lasthop.LasthopError) as e:
        lasthop.load_spec({"name": "x", "sim": {"duration": "1s"}, "ap": {"queue_limit": -4}})
    # One line per problem of the spec.
    assert str(e.value).splitlines() == ["ap.queue_limit = -4: an integer in 1..=1048576",
                                         "stations = (missing): at least one [[stations]] table is required"]
    with pytest.raises(lasthop.LasthopError, match="no such file"):
        lasthop.load_spec(tmp_path / "missing.toml")
    r = lasthop.run(_spec_file(tmp_path), seed=1)
    with pytest.raises(lasthop.LasthopError, match="not a stored series"):
        r.timeseries("flow_nothing")
    with pytest.raises(lasthop.LasthopError, match="seed"):
        lasthop.run(_spec_file(tmp_path), seed=-1)
    bad = tmp_path / "bad.json"
    bad.write_text("{}")
    with pytest.raises(lasthop.LasthopError):
        lasthop.load(bad)


def test_a_plain_script_without_a_main_guard_can_sweep(tmp_path):
    """Spawned workers do not run the calling script again (no BrokenProcessPool)."""
    spec = _spec_file(tmp_path)
    script = tmp_path / "plain.py"
    script.write_text(textwrap.dedent(f"""
        import lasthop
        print("script body ran")
        df = lasthop.sweep({str(spec)!r}, vary={{"ap.qdisc": ["fifo", "pie"]}}, seeds=2,
                           out_dir={str(tmp_path / 'sw')!r}, jobs=2)
        print("rows", len(df))
    """))
    r = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=300, cwd=ROOT)
    assert r.returncode == 0, r.stderr
    nflows = len(lasthop.load_spec(spec).normalized["flows"])
    assert r.stdout.count("script body ran") == 1 and f"rows {2 * 2 * nflows}" in r.stdout


def test_plots_return_figures_and_leave_the_backend_alone(tmp_path):
    code = textwrap.dedent(f"""
        import matplotlib
        before = matplotlib.get_backend()
        import lasthop
        r = lasthop.run({str(_spec_file(tmp_path))!r}, seed=2)
        fig = r.plot("all")
        assert isinstance(r.plot("flow_goodput_bps"), type(fig))
        from matplotlib.figure import Figure
        assert isinstance(fig, Figure)
        fig.savefig({str(tmp_path / 'p.png')!r})
        assert matplotlib.get_backend() == before, (before, matplotlib.get_backend())
        print("ok")
    """)
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120,
                       env={"MPLBACKEND": "svg", "PATH": "/usr/bin:/bin"})
    assert r.returncode == 0 and "ok" in r.stdout, r.stderr
    assert (tmp_path / "p.png").stat().st_size > 5000


def test_the_package_ships_type_information():
    assert (ROOT / "python" / "lasthop" / "py.typed").is_file()
