"""`lasthop tune`: the search over the AP's levers, its outputs, resume and bad input."""
from __future__ import annotations

import json
import math

import pytest
from helpers import run_cli

CELL = """\
name = "house"
[sim]
duration = "3s"
warmup = "1s"
[phy]
standard = "vht"
channel_width = 80
[ap]
qdisc = "fq_codel"
scheduler = "airtime"
driver = "firmware"
[[stations]]
mcs = 9
nss = 2
qdisc = "fq_codel"
[[stations]]
mcs = 2
nss = 1
qdisc = "fq_codel"
[[flows]]
stations = "all"
direction = "down"
pattern = "tcp"
[[flows]]
stations = "all"
direction = "up"
pattern = "tcp"
[[flows]]
stations = "all"
pattern = "ping"
interval = "50ms"
"""


def test_tune_writes_the_choice_and_resumes(tmp_path):
    spec = tmp_path / "house.toml"
    spec.write_text(CELL)
    out = tmp_path / "t"
    r = run_cli("tune", str(spec), "--budget", "3", "--seeds", "1", "-o", str(out), timeout=300)
    assert r.returncode == 0, r.stderr
    rep = json.loads((out / "tune.json").read_text())
    cands = rep["candidates"]
    # The baseline, the three drawn candidates, then any the refinement tried.
    assert len(cands) >= 4 and cands[0]["values"] == {}
    assert rep["chosen"]["meets_constraints"] or len(cands) == 4
    assert all(math.isfinite(c["latency_ms"]) and c["goodput_bps"] > 0 for c in cands)
    # The Pareto set: no member is dominated by another candidate.
    front = [c for c in cands if c["pareto"]]
    assert front
    for c in front:
        assert not any(o["latency_ms"] <= c["latency_ms"] and o["goodput_bps"] >= c["goodput_bps"]
                       and o["worst_share"] >= c["worst_share"] and o is not c
                       and (o["latency_ms"], o["goodput_bps"], o["worst_share"])
                       != (c["latency_ms"], c["goodput_bps"], c["worst_share"]) for o in cands)
    chosen = rep["chosen"]
    assert chosen["values"] in [c["values"] for c in front]
    assert len(rep["ablation"]) == len(chosen["values"])
    # What an operator applies, and a spec anyone can rerun.
    assert (out / "tune.png").stat().st_size > 10_000
    assert "hostapd.conf" in (out / "chosen.txt").read_text()
    v = run_cli("validate", str(out / "chosen.toml"))
    assert v.returncode == 0, v.stderr
    # Running again resumes: every run is already on disk.
    runs = sorted(p.name for p in (out / "runs").iterdir())
    r2 = run_cli("tune", str(spec), "--budget", "3", "--seeds", "1", "-o", str(out), "-q", timeout=300)
    assert r2.returncode == 0, r2.stderr
    assert sorted(p.name for p in (out / "runs").iterdir()) == runs
    assert json.loads((out / "tune.json").read_text())["chosen"] == chosen


def test_tune_bad_input_is_one_line(tmp_path):
    empty = tmp_path / "empty.toml"
    empty.write_text(CELL.split("[[flows]]")[0])
    for args, want in ((["tune", str(empty)], "no traffic"),
                       (["tune", str(empty), "--budget", "0"], "--budget"),
                       (["tune", str(tmp_path / "missing.toml")], "no such file")):
        r = run_cli(*args, "-o", str(tmp_path / "o"))
        assert r.returncode == 2, (args, r.stderr)
        assert r.stderr.count("\n") == 1 and want in r.stderr, r.stderr
    assert not (tmp_path / "o").exists()


def test_bench_tune_cells_reports_gain_floors_and_the_key_lever(tmp_path, monkeypatch, capsys):
    from lasthop.bench import tune_cells

    monkeypatch.setattr(tune_cells, "CELLS", tune_cells.CELLS[:1])
    assert tune_cells.run_tune_cells(str(tmp_path), quick=True) == 0
    rep = json.loads((tmp_path / "tune-cells.json").read_text())
    (row,) = rep["cells"]
    assert row["cell"] == "vht-2sta-fq"
    assert row["gain"] == pytest.approx(row["baseline"]["latency_ms"] / row["chosen"]["latency_ms"])
    assert row["target_met"] == (row["meets_floors"] and row["gain"] >= tune_cells.TARGET_GAIN)
    tuned = json.loads((tmp_path / "tune-cells" / "vht-2sta-fq" / "tune.json").read_text())
    if tuned["ablation"]:
        assert row["key_lever"] in tuned["chosen"]["values"]
    out = capsys.readouterr().out
    assert "vht-2sta-fq" in out and "of 1 cells" in out
    assert (tmp_path / "tune-cells" / "vht-2sta-fq" / "chosen.toml").exists()
