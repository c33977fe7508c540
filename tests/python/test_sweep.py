"""`lasthop sweep` and `lasthop.sweep` (docs/experiments.md, "Sweeps")."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from pathlib import Path

import pytest
from helpers import ROOT, lasthop_cmd, run_cli

from lasthop.spec import SpecError
from lasthop.summary_schema import value_number
from lasthop.sweeps import (
    Sweep,
    SweepError,
    apply_override,
    check_key,
    parse_value,
    parse_vary,
    plan_sweep,
    run_key,
    run_sweep,
    summary_columns,
    VariedType,
    value_label,
)

pa = pytest.importorskip("pyarrow")
pq = pytest.importorskip("pyarrow.parquet")

# 1-2 stations, 200 ms simulated: milliseconds per run.
SMALL_SPEC = """\
name = "small"
[sim]
duration = "200ms"
warmup = "20ms"
seed = 5
bin = "50ms"
[phy]
standard = "vht"
channel_width = 40
[[stations]]
mcs = 7
[[stations]]
mcs = 4
error_model = "fixed"
per = 0.02
[[flows]]
stations = "all"
pattern = "poisson"
rate = "20Mbps"
[[flows]]
stations = 1
direction = "up"
pattern = "cbr"
rate = "5Mbps"
packet_size = 1000
"""

# 25 points x 2 seeds = 50 runs.
GRID = [("mac.max_ampdu_mpdus", [1, 2, 4, 16, 64]),
        ("flows[0].rate", ["5Mbps", "10Mbps", "20Mbps", "40Mbps", "80Mbps"])]

# ~0.1-0.3 s of wall per run (contention between 10 uplink stations): slow enough to interrupt.
SLOW_SPEC = """\
name = "slow"
[sim]
duration = "20s"
bin = "1s"
[phy]
standard = "ofdm"
[[stations]]
count = 10
mcs = 7
[[flows]]
direction = "up"
pattern = "poisson"
rate = "2Mbps"
packet_size = 100
"""


def _files(d: Path) -> dict[str, bytes]:
    return {str(p.relative_to(d)): p.read_bytes() for p in sorted(d.rglob("*")) if p.is_file()}


@pytest.fixture
def small_spec(tmp_path: Path) -> Path:
    p = tmp_path / "specs" / "small.toml"
    p.parent.mkdir()
    p.write_text(SMALL_SPEC)
    return p


@pytest.fixture(scope="module")
def pool_sweep(tmp_path_factory, simulator) -> tuple[Path, object]:
    d = tmp_path_factory.mktemp("pool")
    spec = d / "small.toml"
    spec.write_text(SMALL_SPEC)
    result = run_sweep(Sweep(spec, GRID, seeds=2), d / "out", jobs=2, progress=False)
    return d / "out", result


# --- (d) keys and values ---------------------------------------------------------------------


@pytest.mark.parametrize("text, value", [
    ("8", 8), ("true", True), ("0.1", 0.1), ('"100Mbps"', "100Mbps"), ("100Mbps", "100Mbps"),
    ("all", "all"), ("[0, 1]", [0, 1]), (" 7 ", 7), ("'x'", "x"), ("1e3", 1000.0),
    ("1\nx = 2", "1\nx = 2"), ("1979-05-27", "1979-05-27"), ("-3", -3),
])
def test_parse_value(text, value):
    got = parse_value(text)
    assert got == value and type(got) is type(value)


def test_parse_vary_splits_outside_brackets_and_quotes():
    assert parse_vary("mac.max_ampdu_mpdus=1,8,64") == ("mac.max_ampdu_mpdus", [1, 8, 64])
    assert parse_vary("flows[0].stations=[0, 1],all,1") == ("flows[0].stations",
                                                           [[0, 1], "all", 1])
    assert parse_vary('flows[0].rate="1Mbps",2Mbps') == ("flows[0].rate", ["1Mbps", "2Mbps"])
    for bad in ("mac.retry_limit", "=1,2", "mac.retry_limit=", "mac.retry_limit=1,,2"):
        with pytest.raises(SweepError, match="--vary"):
            parse_vary(bad)


def test_check_key():
    doc = json.loads(json.dumps({"stations": [{"mcs": 1}, {"mcs": 2}], "flows": [{}]}))
    for good in ("mac.max_ampdu_mpdus", "sim.duration", "stations[1].mcs", "flows[0].rate",
                 "name", "phy.channel_width", "wired.loss", "mac.ofdma.max_users", "channel.interference.off"):
        check_key(good, doc)
    for bad, msg in [("mac.bogus", 'unknown key; of the 17 allowed here, those beginning with "b": beacon_interval'),
                     ("mac.max_ampdu_mpdu", 'did you mean "max_ampdu_mpdus"'),
                     ("flows[7].rate", "the spec has 1 [[flows]] table"),
                     ("stations[2].mcs", "the spec has 2 [[stations]] table"),
                     ("stations.mcs", "index the [[stations]] table"),
                     ("sim[0].duration", "not an array of tables"),
                     ("mac", "name one key of [mac]"),
                     ("mac.retry_limit.x", "is a value"),
                     ("name.x", "top-level string"),
                     ("bogus.x", "unknown key"),
                     ("flows[0].rate[1]", "is a value"),
                     ("mac..x", "not a key path"),
                     ("channel.interference.gap", "unknown key; allowed: on, off, inr_db"),
                     ("channel.interference.off.x", "is a value"),
                     ("mac.ofdma[0].dl", "is a value")]:
        with pytest.raises(SweepError) as e:
            check_key(bad, doc)
        assert str(e.value).startswith(f"--vary {bad}: ") and msg in str(e.value), str(e.value)


def test_apply_override_indexes_the_toml_tables():
    doc = {"sim": {"duration": "1s"}, "stations": [{"count": 3, "mcs": 1}, {"mcs": 2}],
           "flows": [{"rate": "1Mbps"}, {"rate": "2Mbps"}]}
    apply_override(doc, "stations[1].mcs", 9)
    apply_override(doc, "flows[0].rate", "5Mbps")
    apply_override(doc, "mac.aggregation", False)  # a section the file does not have
    apply_override(doc, "sim.duration", "2s")
    apply_override(doc, "name", "x")
    apply_override(doc, "channel.interference.off", "1s")  # a table within a table
    assert doc == {"sim": {"duration": "2s"}, "stations": [{"count": 3, "mcs": 1}, {"mcs": 9}],
                   "flows": [{"rate": "5Mbps"}, {"rate": "2Mbps"}], "mac": {"aggregation": False},
                   "name": "x", "channel": {"interference": {"off": "1s"}}}


def test_value_label_and_number():
    assert [value_label(v) for v in (8, True, 0.1, "100Mbps", [0, 1])] == \
        ["8", "true", "0.1", "100Mbps", "[0, 1]"]
    assert value_number(8) == 8.0 and value_number(0.5) == 0.5
    assert value_number("100Mbps") == 1e8 and value_number("1.5ms") == 1.5e6
    assert value_number(True) is None and value_number("all") is None
    assert value_number([0, 1]) is None


def test_varied_types():
    """Each varied key's column type follows all its values; anything mixed stays text."""
    of = VariedType.of
    assert of([True, False]) == VariedType("bool")
    assert of([1, 64]) == VariedType("int64")
    assert of([1, 0.5]) == VariedType("float64")
    assert of(["1ms", "1.5ms", "2s"]) == VariedType("int64", "ns")
    assert of(["10Mbps", "1.5Gbps"]) == VariedType("int64", "bit/s")
    assert of(["fifo", "fq_codel"]) == VariedType("string")
    assert of(["1ms", "10Mbps"]) == VariedType("string")      # a duration and a rate
    assert of([1, "1ms"]) == VariedType("string")
    assert of([True, 1]) == VariedType("string")
    assert of([[0, 1], [2]]) == VariedType("string")
    assert of([2 ** 63, 1]) == VariedType("float64")           # beyond int64: float
    assert of([float("nan"), 1.0]) == VariedType("string")
    assert of([None, 3]) == VariedType("int64")                # missing is null
    t = of(["1.5ms", "2s"])
    assert [t.value(v) for v in ("1.5ms", "2s", None)] == [1_500_000, 2_000_000_000, None]
    assert of([1, 0.5]).value(1) == 1.0 and isinstance(of([1, 0.5]).value(1), float)
    assert of([[0, 1], [2]]).value([0, 1]) == "[0, 1]"


def test_plan_grid_order_seeds_and_keys(simulator):
    doc = {"sim": {"duration": "100ms", "seed": 10}, "stations": [{"mcs": 3}],
           "flows": [{"rate": "1Mbps"}]}
    plan = plan_sweep(Sweep(doc, [("mac.retry_limit", [1, 2]), ("flows[0].rate",
                                                                 ["1Mbps", "2Mbps", "3Mbps"])],
                            seeds=2))
    assert [p["overrides"] for p in plan.points] == [
        {"mac.retry_limit": a, "flows[0].rate": b} for a in (1, 2)
        for b in ("1Mbps", "2Mbps", "3Mbps")]
    assert plan.seeds == [10, 11]
    assert [(r["point"], r["seed"]) for r in plan.runs] == [(p, s) for p in range(6)
                                                           for s in (10, 11)]
    assert plan.points[5]["spec"].normalized["flows"][0]["rate_bps"] == 3_000_000
    assert plan.points[5]["spec"].normalized["mac"]["retry_limit"] == 2
    r = plan.runs[0]
    assert r["key"] == run_key(plan.points[0]["spec"].normalized, 10, plan.code_version)
    assert len(r["key"]) == 20 and len({x["key"] for x in plan.runs}) == 12


def test_plan_errors_name_the_vary_key(simulator):
    doc = {"sim": {"duration": "100ms"}, "stations": [{"mcs": 3}]}
    with pytest.raises(SweepError, match=r"^--vary mac.max_ampdu_mpdus=65: "
                                         r"mac.max_ampdu_mpdus = 65: an integer in 1..=64"):
        plan_sweep(Sweep(doc, [("mac.max_ampdu_mpdus", [1, 65])]))
    # A combination that is invalid only together (VHT MCS 9 does not exist at 20 MHz NSS 1).
    doc["stations"][0]["mcs"] = 9
    with pytest.raises(SweepError, match=r"^--vary phy.channel_width=20: stations\[0\].mcs"):
        plan_sweep(Sweep(doc, {"phy.channel_width": [40, 20]}))
    # A spec that is wrong whatever is varied is reported as a plain spec error.
    doc["mac"] = {"retry_limit": 0}
    with pytest.raises(SpecError, match="mac.retry_limit"):
        plan_sweep(Sweep(doc, {"phy.channel_width": [40]}))
    with pytest.raises(SweepError, match="given twice"):
        plan_sweep(Sweep(doc, [("sim.duration", ["1s"]), ("sim.duration", ["2s"])]))


# --- (a) the pool, Ray, and the files --------------------------------------------------------


def test_pool_sweep_layout(pool_sweep):
    out, result = pool_sweep
    assert result.executed == 50 and result.cached == 0
    manifest = json.loads((out / "sweep.json").read_text())
    assert manifest["format"] == "lasthop.sweep" and manifest["format_version"] == 1
    assert manifest["vary"] == [list(x) for x in GRID]
    assert manifest["seeds"] == [5, 6]
    assert manifest["spec"]["name"] == "small" and len(manifest["runs"]) == 50
    assert manifest["runs"][7] == {
        "point": 3, "seed": 6, "key": manifest["runs"][7]["key"],
        "overrides": {"mac.max_ampdu_mpdus": 1, "flows[0].rate": "40Mbps"},
        "file": f"runs/{manifest['runs'][7]['key']}.json", "sha256": manifest["runs"][7]["sha256"]}
    run7 = out / manifest["runs"][7]["file"]
    assert manifest["runs"][7]["sha256"] == "sha256:" + __import__("hashlib").sha256(run7.read_bytes()).hexdigest()
    assert sorted(p.name for p in (out / "runs").iterdir()) == \
        sorted(f"{r['key']}.json" for r in manifest["runs"])
    assert sorted(p.name for p in out.iterdir()) == [".lock", "runs", "summary.parquet", "sweep.json"]

    t = pq.read_table(out / "summary.parquet")
    assert t.equals(result.summary)
    keys = [k for k, _ in GRID]
    types = {k: VariedType.of(vs) for k, vs in GRID}
    assert t.column_names == [n for n, _ in summary_columns(types)]
    assert t.schema.field("point").type == pa.int64()
    # Varied keys are typed columns: an integer key as int64, a rate as int64 bit/s with its
    # unit in the field's metadata; the text as written is the `#text` twin.
    assert t.schema.field("mac.max_ampdu_mpdus").type == pa.int64()
    assert t.schema.field("flows[0].rate").type == pa.int64()
    assert t.schema.field("flows[0].rate").metadata == {b"unit": b"bit/s"}
    assert t.schema.field("flows[0].rate#text").type == pa.string()
    assert t.schema.field("collisions").type == pa.int64()
    assert t.num_rows == 50 * 3  # three normalized flows per run
    rows = t.to_pylist()
    assert [(r["point"], r["seed"], r["flow"]) for r in rows] == sorted(
        (r["point"], r["seed"], r["flow"]) for r in rows)
    r = next(x for x in rows if x["point"] == 13 and x["seed"] == 6 and x["flow"] == 2)
    assert r["mac.max_ampdu_mpdus"] == 4 and r["mac.max_ampdu_mpdus#text"] == "4"
    assert r["flows[0].rate"] == 40_000_000 and r["flows[0].rate#text"] == "40Mbps"
    assert (r["station"], r["direction"], r["pattern"]) == (1, "up", "cbr")
    from lasthop import analysis
    loaded = analysis.load(out)
    assert loaded.units == {"flows[0].rate": "bit/s"} and loaded.rows == rows
    assert loaded.point_label(13) == "mac.max_ampdu_mpdus=4, flows[0].rate=40Mbps"

    doc = result.load(13, 6)
    assert doc["seed"] == 6 and doc["spec"]["mac"]["max_ampdu_mpdus"] == 4
    f = doc["data"]["flows"][2]
    assert r["goodput_bps"] == f["goodput_bps"]
    assert r["offered_bps"] == pytest.approx(f["offered_bytes"] * 8 / 0.18)
    assert r["delay_p95_ms"] == f["delay_ns"]["p95"] / 1e6
    sta = doc["data"]["stations"][1]
    assert r["mean_ampdu"] == sta["mean_ampdu_up"]
    assert r["airtime_frac"] == pytest.approx((sta["airtime_tx_ns"] + sta["airtime_rx_ns"]) / 180e6)
    assert r["collisions"] == doc["data"]["channel"]["collisions"]
    # Goodput grows with the offered rate of flow 0 (sanity: overrides reach the simulator).
    g = {x["point"]: x["goodput_bps"] for x in rows if x["flow"] == 0 and x["seed"] == 5}
    assert g[24] > g[20] * 4  # 80 vs 5 Mb/s offered, max_ampdu_mpdus = 64


def test_ray_local_is_byte_identical_to_the_pool(pool_sweep, tmp_path):
    try:
        import ray  # noqa: F401 - imported here: it takes seconds
    except Exception as e:  # noqa: BLE001
        pytest.skip(f"Ray cannot be imported ({type(e).__name__}: {e}); "
                    "install it with `pip install 'ray>=2.9,<3'` (the Makefile does)")
    out, _ = pool_sweep
    spec = tmp_path / "small.toml"
    spec.write_text(SMALL_SPEC)
    result = run_sweep(Sweep(spec, GRID, seeds=2), tmp_path / "ray", jobs=2, ray="local",
                       progress=False)
    assert result.executed == 50
    assert _files(tmp_path / "ray") == _files(out)


# --- (e) run files are what `lasthop run` writes ---------------------------------------------


def test_run_files_equal_lasthop_run(small_spec, tmp_path, simulator):
    out = tmp_path / "sw"
    proc = run_cli("sweep", str(small_spec), "--vary", "mac.max_ampdu_mpdus=64,8",
                   "--seeds", "2", "-j", "2", "-o", str(out), "--quiet")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == str(out / "summary.parquet")
    manifest = json.loads((out / "sweep.json").read_text())
    # mac.max_ampdu_mpdus = 64 is the default: point 0 is the spec file as it is.
    variant = tmp_path / "variant" / "small.toml"
    variant.parent.mkdir()
    variant.write_text(SMALL_SPEC.replace('[phy]', '[mac]\nmax_ampdu_mpdus = 8\n[phy]'))
    for point, spec in ((0, small_spec), (1, variant)):
        for seed in (5, 6):
            d = tmp_path / f"run-{point}-{seed}"
            proc = run_cli("run", str(spec), "--seed", str(seed), "-o", str(d), "--quiet")
            assert proc.returncode == 0, proc.stderr
            rec = next(r for r in manifest["runs"] if (r["point"], r["seed"]) == (point, seed))
            assert (out / rec["file"]).read_bytes() == (d / f"small-s{seed}.json").read_bytes()


# --- (b) interrupt and resume ----------------------------------------------------------------


def _last_line(text: str) -> str:
    lines = [x for x in text.splitlines() if x.strip()]
    return lines[-1] if lines else ""


def test_interrupt_then_resume(tmp_path, simulator):
    spec = tmp_path / "slow.toml"
    spec.write_text(SLOW_SPEC)
    out = tmp_path / "out"
    runs = out / "runs"
    total = 16
    env = dict(os.environ)
    env.pop("LASTHOP_DEBUG", None)
    proc = subprocess.Popen([*lasthop_cmd(), "sweep", str(spec), "--seeds", str(total),
                             "-j", "1", "-o", str(out)], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env=env)
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and proc.poll() is None:
        if runs.is_dir() and len(list(runs.glob("*.json"))) >= 3:
            break
        time.sleep(0.02)
    proc.send_signal(signal.SIGINT)
    stdout, stderr = proc.communicate(timeout=60)
    done = sorted(p.name for p in runs.iterdir())
    if proc.returncode == 0:
        pytest.skip("the sweep finished before it could be interrupted (machine too fast)")
    assert proc.returncode == 130, stderr
    assert "Traceback" not in stderr
    assert "sweep interrupted" in _last_line(stderr) and "run the same command again" in stderr
    assert 3 <= len(done) < total
    assert all(n.endswith(".json") and not n.startswith(".") for n in done)  # nothing partial
    assert not (out / "summary.parquet").exists()
    mtimes = {n: (runs / n).stat().st_mtime_ns for n in done}

    again = run_cli("sweep", str(spec), "--seeds", str(total), "-j", "2", "-o", str(out))
    assert again.returncode == 0, again.stderr
    assert f"{total - len(done)} done, {len(done)} cached" in again.stdout
    assert {n: (runs / n).stat().st_mtime_ns for n in done} == mtimes  # not run again

    whole = run_sweep(Sweep(spec, [], total), tmp_path / "whole", jobs=2, progress=False)
    assert whole.executed == total
    assert (out / "summary.parquet").read_bytes() == \
        (tmp_path / "whole" / "summary.parquet").read_bytes()
    assert _files(out / "runs") == _files(tmp_path / "whole" / "runs")


def test_cache_is_shared_and_duplicates_run_once(small_spec, tmp_path, simulator):
    cache = tmp_path / "cache"
    a = run_sweep(Sweep(small_spec, {"mac.retry_limit": [7, 7, 3]}), tmp_path / "a",
                  jobs=2, progress=False, cache=cache)
    assert (a.executed, a.cached) == (2, 0)  # retry_limit 7 twice: one run
    assert not (tmp_path / "a" / "runs").exists()
    assert a.runs[0]["file"] == f"../cache/{a.runs[0]['key']}.json"
    assert a.load(1, 5) == a.load(0, 5)
    b = run_sweep(Sweep(small_spec, {"mac.retry_limit": [3, 4]}), tmp_path / "b", jobs=2,
                  progress=False, cache=cache)
    assert (b.executed, b.cached) == (1, 1)
    assert len(list(cache.iterdir())) == 3


# --- (c) user errors: one line, exit 2, nothing written --------------------------------------


@pytest.mark.parametrize("args, expect", [
    (["--vary", "mac.bogus=1"], "lasthop: error: --vary mac.bogus: unknown key; of the 17 allowed here"),
    (["--vary", "flows[7].rate=1Mbps"], "lasthop: error: --vary flows[7].rate: no such table"),
    (["--vary", "stations.mcs=1,2"], "lasthop: error: --vary stations.mcs: index"),
    (["--vary", "mac.max_ampdu_mpdus=8,65"],
     "lasthop: error: --vary mac.max_ampdu_mpdus=65: mac.max_ampdu_mpdus = 65: "),
    (["--vary", "sim.duration=1"], "lasthop: error: --vary sim.duration=1: sim.duration = 1: "
                                   "units are mandatory"),
    (["--vary", "flows[0].rate=5Mbps,fast"], "lasthop: error: --vary flows[0].rate=fast: "),
    (["--vary", "phy.channel_width=40", "--vary", "stations[0].mcs=7,9,12"],
     "lasthop: error: --vary phy.channel_width=40 stations[0].mcs=12: stations[0].mcs = 12"),
    (["--vary", "mac.retry_limit"], "lasthop: error: --vary mac.retry_limit: expected KEY="),
    (["--seeds", "0"], "lasthop: error: argument --seeds"),
    (["-j", "0"], "lasthop: error: argument -j/--jobs"),
])
def test_bad_vary_exits_2_and_writes_nothing(small_spec, tmp_path, args, expect):
    work = tmp_path / "work"
    work.mkdir()
    proc = run_cli("sweep", str(small_spec), *args, "-o", str(work / "out"), cwd=work)
    assert proc.returncode == 2, proc.stderr
    assert "Traceback" not in proc.stderr and proc.stdout == ""
    assert len(proc.stderr.splitlines()) == 1, proc.stderr
    assert proc.stderr.startswith(expect), proc.stderr
    assert list(work.iterdir()) == []


@pytest.mark.parametrize("spec, expect", [
    ("bad_specs/per_gt_1.toml", "lasthop: spec error: stations[0].per = 1.5"),
    ("bad_specs/toml_syntax_error.toml", "lasthop: error: "),
    ("nope.toml", "lasthop: error: "),
])
def test_bad_spec_exits_2_and_writes_nothing(tmp_path, spec, expect):
    path = ROOT / "tests" / "python" / spec
    for extra in ([], ["--vary", "mac.retry_limit=1,2"]):
        proc = run_cli("sweep", str(path), *extra, cwd=tmp_path)
        assert proc.returncode == 2, proc.stderr
        assert "Traceback" not in proc.stderr
        assert len(proc.stderr.splitlines()) == 1 and proc.stderr.startswith(expect), proc.stderr
        assert list(tmp_path.iterdir()) == []


def test_cli_summary_output(small_spec, tmp_path, simulator):
    proc = run_cli("sweep", str(small_spec), "--vary", "flows[0].rate=5Mbps,10Mbps",
                   "--seeds", "2", "-j", "2", "-o", str(tmp_path / "o"))
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert lines[0].startswith("sweep small: 4 runs (4 distinct): 4 done, 0 cached, wall ")
    assert "flows[0].rate" in lines[2] and "goodput Mb/s" in lines[2] and "p95" in lines[2]
    assert lines[3].split()[:3] == ["0", "5Mbps", "2"]
    assert lines[-1] == f"summary: {tmp_path / 'o' / 'summary.parquet'}"
    assert "4/4 runs" in proc.stderr  # the progress line
