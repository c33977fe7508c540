"""`lasthop export --flent`: a run in flent's data file format, read back and drawn by flent
itself (flent from PyPI, installed in the venv by the Makefile; without it those tests skip)."""

from __future__ import annotations

import gzip
import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from helpers import run_cli

from lasthop.flent_export import FLENT_FORMAT_VERSION, choose_test, to_flent
from lasthop.results import load_result

# TCP downloads to two stations, a ping in BE and one in VO, cross traffic on the wired path.
SPEC = """\
name = "flent-tiny"
description = "two TCP downloads, two pings, cross traffic"
[sim]
duration = "400ms"
warmup = "100ms"
seed = 11
bin = "50ms"
[phy]
standard = "vht"
channel_width = 40
[wired]
delay = "2ms"
[[stations]]
count = 2
mcs = 7
[[flows]]
stations = "all"
pattern = "tcp"
[[flows]]
stations = 0
pattern = "ping"
interval = "10ms"
[[flows]]
stations = 1
pattern = "ping"
interval = "10ms"
ac = "VO"
[[flows]]
direction = "cross"
pattern = "cbr"
rate = "5Mbps"
"""

NEEDS_FLENT = pytest.mark.skipif(
    importlib.util.find_spec("flent") is None,
    reason="flent is not installed in this environment (the Makefile's venv installs it: "
           "pip install flent)")


@pytest.fixture(scope="module")
def exported(simulator: None, tmp_path_factory: pytest.TempPathFactory
             ) -> tuple[Path, dict[str, Any], Path]:
    """(result file, its document, the exported .flent.gz)."""
    d = tmp_path_factory.mktemp("flent")
    spec = d / "flent-tiny.toml"
    spec.write_text(SPEC)
    proc = run_cli("run", str(spec), "-o", str(d), "-q")
    assert proc.returncode == 0, proc.stderr
    run = Path(proc.stdout.strip())
    out = d / "export" / "tiny.flent.gz"
    proc = run_cli("export", "--flent", str(run), "-o", str(out))
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == str(out)
    return run, load_result(run), out


def _flent_doc(path: Path) -> dict[str, Any]:
    with gzip.open(path, "rt", encoding="ascii") as f:
        return json.load(f)


def expected_series(doc: dict[str, Any]) -> dict[str, list[float | None]]:
    """What the export must write per series name, from the result's own time series."""
    ts = doc["data"]["timeseries"]
    good, delay = ts["flow_goodput_bps"], ts["flow_delay_mean_ns"]
    ms = lambda row: [v / 1e6 if v > 0 else None for v in row]  # noqa: E731
    return {
        "TCP download::1": [v / 1e6 for v in good[0]],
        "TCP download::2": [v / 1e6 for v in good[1]],
        "Ping (ms) ICMP": ms(delay[2]),
        "Ping (ms) ICMP flow 3 station 1 VO (extra)": ms(delay[3]),
        "Cross traffic::flow 4 cbr": [v / 1e6 for v in good[4]],
        "wifi_stats_ap::avg_aggr_size::station 0":
            [v if v > 0 else None for v in ts["station_mean_ampdu_down"][0]],
    }


def test_file_layout_and_values(exported: tuple[Path, dict[str, Any], Path]):
    run, doc, out = exported
    f = _flent_doc(out)
    assert f["version"] == FLENT_FORMAT_VERSION == 4
    m = f["metadata"]
    assert m["NAME"] == "tcp_ndown"  # TCP downloads and pings: flent's N-download test
    assert m["TEST_PARAMETERS"]["download_streams"] == "2"
    assert m["TEST_PARAMETERS"]["ping_hosts"] == "flow 3 station 1 VO"
    assert m["DATA_FILENAME"] == out.name
    # What it is and where it came from.
    lh = m["LASTHOP"]
    assert (lh["code_version"], lh["spec_name"], lh["seed"]) == (doc["code_version"],
                                                                 "flent-tiny", 11)
    assert lh["source"] == run.name and lh["result_checksum"] == doc["checksum"]
    assert "flent-tiny" in m["TITLE"] and "seed 11" in m["TITLE"]
    assert doc["code_version"] in m["TITLE"]
    assert m["NOTE"] == "two TCP downloads, two pings, cross traffic"
    assert (m["STEP_SIZE"], m["TOTAL_LENGTH"], m["DELAY"]) == (0.05, 0.4, 0.1)
    bins = len(doc["data"]["timeseries"]["t_ns"])
    assert f["x_values"] == pytest.approx([0.025 + 0.05 * b for b in range(bins)], abs=1e-12)
    for name, values in expected_series(doc).items():
        assert f["results"][name] == values, name
        raw = [p["val"] for p in f["raw_values"][name] if "val" in p]
        assert raw == [v for v in values if v is not None], name
    # Units and labels: throughput in Mbit/s, latency in ms; a ping is RTT, data one-way delay.
    sm = m["SERIES_META"]
    assert sm["TCP download::1"]["UNITS"] == "Mbits/s" and sm["Ping (ms) ICMP"]["UNITS"] == "ms"
    assert "round-trip" in sm["Ping (ms) ICMP"]["LASTHOP_DESCRIPTION"]
    assert "one-way" in sm["TCP download::1"]["LASTHOP_DESCRIPTION"]
    assert sm["TCP download::1"]["MEAN_VALUE"] == doc["data"]["flows"][0]["goodput_bps"] / 1e6
    # Cross traffic by name, with no station.
    cross = sm["Cross traffic::flow 4 cbr"]
    assert cross["LASTHOP_STATION"] is None and "cross traffic" in cross["LASTHOP_DESCRIPTION"]
    assert "station" not in "Cross traffic::flow 4 cbr"
    # A data flow's delay is a one-way delay key, its TCP state flent's ss keys.
    ts = doc["data"]["timeseries"]
    raw0 = f["raw_values"]["TCP download::1"]
    owd = [p.get("owd_down") for p in raw0]
    assert owd == [v / 1e6 if v > 0 else None for v in ts["flow_delay_mean_ns"][0]]
    assert [p["tcp_cwnd"] * 1448 for p in raw0] == pytest.approx(ts["flow_cwnd_bytes"][0])
    assert [p.get("tcp_rtt") for p in raw0] == [v / 1e6 if v > 0 else None
                                                for v in ts["flow_rtt_ns"][0]]


def test_export_is_deterministic(exported: tuple[Path, dict[str, Any], Path], tmp_path: Path):
    run, _, out = exported
    again = tmp_path / out.name
    proc = run_cli("export", "--flent", str(run), "-o", str(again))
    assert proc.returncode == 0, proc.stderr
    assert again.read_bytes() == out.read_bytes()


def test_test_choice():
    tcp_down = {"id": 0, "station": 0, "direction": "down", "pattern": "tcp"}
    tcp_up = {"id": 1, "station": 0, "direction": "up", "pattern": "tcp"}
    ping = {"id": 2, "station": 0, "direction": "down", "pattern": "ping"}
    udp = {"id": 3, "station": 1, "direction": "down", "pattern": "cbr"}
    cross = {"id": 4, "station": None, "direction": "cross", "pattern": "cbr"}
    assert choose_test([tcp_down, ping, cross]) == "tcp_ndown"
    assert choose_test([tcp_up, ping]) == "tcp_nup"
    assert choose_test([tcp_down, tcp_up, ping]) == "rrul_be_nflows"
    assert choose_test([udp, ping, cross]) == "ping"


def test_bidirectional_names(exported: tuple[Path, dict[str, Any], Path]):
    """Downloads and uploads: flent's rrul_be_nflows names, counted per direction."""
    _, doc, _ = exported
    doc = json.loads(json.dumps(doc))
    doc["data"]["flows"][1]["direction"] = "up"
    f = to_flent(doc)
    assert f["metadata"]["NAME"] == "rrul_be_nflows"
    assert {"TCP download BE::1", "TCP upload BE::1"} <= set(f["results"])
    assert f["metadata"]["TEST_PARAMETERS"]["upload_streams"] == "1"


def test_bad_input_one_line_nothing_written(tmp_path: Path,
                                            exported: tuple[Path, dict[str, Any], Path]):
    run, doc, _ = exported
    out = tmp_path / "out"

    def check(args: list[str], expect: str) -> None:
        proc = run_cli("export", *args)
        assert proc.returncode == 2, proc.stderr
        lines = proc.stderr.splitlines()
        assert len(lines) == 1 and lines[0].startswith("lasthop: ") and expect in lines[0], \
            proc.stderr
        assert not out.exists()

    check([str(run), "-o", str(out / "a.flent.gz")], "--flent")
    check(["--flent", str(tmp_path / "nope.json"), "-o", str(out / "a.flent.gz")], "no such file")
    check(["--flent", str(run), "-o", str(out / "a.json")], ".flent.gz")
    no_ts = {k: v for k, v in doc.items() if k != "checksum"}
    no_ts["data"] = {**doc["data"], "timeseries": {}}
    bad = tmp_path / "no-ts.json"
    bad.write_text(json.dumps(no_ts))
    check(["--flent", str(bad), "-o", str(out / "a.flent.gz")], "no time series")
    short = json.loads(json.dumps(no_ts))
    short["data"]["timeseries"] = json.loads(json.dumps(doc["data"]["timeseries"]))
    short["data"]["timeseries"]["flow_goodput_bps"][1] = [1.0]
    bad.write_text(json.dumps(short))
    check(["--flent", str(bad), "-o", str(out / "a.flent.gz")], "flow_goodput_bps[1]")
    changed = json.loads(run.read_text())
    changed["seed"] = 12  # no longer matches its checksum
    bad.write_text(json.dumps(changed))
    check(["--flent", str(bad), "-o", str(out / "a.flent.gz")], "checksum")


def test_sweep_directory(simulator: None, tmp_path: Path):
    spec = tmp_path / "s.toml"
    spec.write_text(SPEC)
    proc = run_cli("sweep", str(spec), "--vary", "flows[3].rate=5Mbps,20Mbps", "-j", "1",
                   "-o", str(tmp_path / "sw"), "-q")
    assert proc.returncode == 0, proc.stderr
    proc = run_cli("export", "--flent", str(tmp_path / "sw"))
    assert proc.returncode == 2 and "-o DIR" in proc.stderr
    out = tmp_path / "flent"
    proc = run_cli("export", "--flent", str(tmp_path / "sw"), "-o", str(out))
    assert proc.returncode == 0, proc.stderr
    files = sorted(out.iterdir())
    assert [p.name for p in files] == ["flent-tiny-p0-s11.flent.gz", "flent-tiny-p1-s11.flent.gz"]
    m = _flent_doc(files[1])["metadata"]
    assert m["LASTHOP"]["point"] == 1
    assert m["LASTHOP"]["overrides"] == {"flows[3].rate": "20Mbps"}
    assert "flows[3].rate=20Mbps" in m["TITLE"]
    # A run file gone: one line, and nothing (more) written.
    manifest = json.loads((tmp_path / "sw" / "sweep.json").read_text())
    (tmp_path / "sw" / manifest["runs"][1]["file"]).unlink()
    out2 = tmp_path / "flent2"
    proc = run_cli("export", "--flent", str(tmp_path / "sw"), "-o", str(out2))
    assert proc.returncode == 2 and len(proc.stderr.splitlines()) == 1, proc.stderr
    assert not out2.exists() or list(out2.iterdir()) == []


# --- flent itself -----------------------------------------------------------------------------

@NEEDS_FLENT
def test_flent_reads_the_file(exported: tuple[Path, dict[str, Any], Path],
                              monkeypatch: pytest.MonkeyPatch, tmp_path: Path):
    """flent's own loader reads our series back unchanged, its test definition knows them (so
    its plots draw them) and it computes its aggregates from them."""
    from flent import resultset
    from flent.settings import load as flent_settings

    _, doc, out = exported
    monkeypatch.setenv("HOME", str(tmp_path))  # no ~/.flentrc
    r = resultset.load(str(out))
    assert r.meta("NAME") == "tcp_ndown"
    expected = expected_series(doc)
    for name, values in expected.items():
        assert r.series(name) == values, name
        points = list(r.raw_series(name))
        assert [v for _, v in points] == [v for v in values if v is not None], name
    rtt = [v for _, v in r.raw_series("TCP download::1", raw_key="tcp_rtt")]
    assert rtt == [v / 1e6 for v in doc["data"]["timeseries"]["flow_rtt_ns"][0] if v > 0]

    settings = flent_settings(["-i", str(out)])
    settings.update(r.meta())
    settings.load_test(informational=True)
    data_sets = settings.DATA_SETS
    drawn = [n for n in expected if not n.startswith("Cross traffic")]
    assert set(drawn) <= set(data_sets), set(drawn) - set(data_sets)
    assert "Cross traffic::flow 4 cbr" not in data_sets
    settings.compute_missing_results(r)
    total = [None if a is None and b is None else (a or 0.0) + (b or 0.0)
             for a, b in zip(expected["TCP download::1"], expected["TCP download::2"])]
    assert r.series("TCP download sum") == pytest.approx(total)


@NEEDS_FLENT
def test_flent_draws_a_plot(exported: tuple[Path, dict[str, Any], Path], tmp_path: Path):
    """flent's command line, headless, draws its "totals" plot (download sum and ping RTT) of
    the exported file."""
    _, _, out = exported
    png = tmp_path / "totals.png"
    env = {**os.environ, "HOME": str(tmp_path), "MPLBACKEND": "Agg"}
    env.pop("DISPLAY", None)
    proc = subprocess.run([sys.executable, "-m", "flent", "-i", str(out), "-p", "totals",
                           "-o", str(png)], capture_output=True, text=True, env=env,
                          timeout=300, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert "ERROR" not in proc.stderr and "Traceback" not in proc.stderr, proc.stderr
    assert png.is_file() and png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert png.stat().st_size > 10_000
    import matplotlib.image

    pixels = matplotlib.image.imread(str(png))
    colours = {tuple(p) for p in pixels.reshape(-1, pixels.shape[-1])[::7].tolist()}
    assert len(colours) > 20, "the plot is (nearly) blank"
