"""Analysis from files: `lasthop table | plot | report`, lasthop.analysis / plots / report.

Fixtures are written here (synthetic result files, a summary.parquet with the documented
columns and a sweep manifest), so these tests need neither the simulator nor the sweep runner;
one test at the end runs the real simulator on a tiny spec.
"""

from __future__ import annotations

import csv
import io
import json
import math
import random
import subprocess
from pathlib import Path

import pytest
from helpers import run_cli

from lasthop import analysis, plots, report
from lasthop.errors import UserError
from lasthop.results import envelope, write_result

PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"
CHROMIUM = Path("/usr/bin/chromium")


# ---------------------------------------------------------------------------------------------
# Fixtures


def fake_doc(seed: int, ampdu: int, name: str = "fx", n_sta: int = 3) -> dict:
    """A plausible result document (docs/results.md) with deterministic pseudo-random data."""
    rnd = random.Random(seed * 1000 + ampdu)
    bins = 20
    bin_ns = 100_000_000
    spec = {"name": name, "sim": {"duration_ns": bins * bin_ns, "warmup_ns": 200_000_000,
                                  "seed": 1, "bin_ns": bin_ns},
            "mac": {"max_ampdu_mpdus": ampdu}, "phy": {"standard": "vht", "channel_width": 80},
            "stations": [{"mcs": 9 - 3 * i, "nss": 1} for i in range(n_sta)],
            "flows": [{"station": i, "direction": "down", "pattern": "cbr"}
                      for i in range(n_sta)] + [{"station": 0, "direction": "up",
                                                 "pattern": "poisson"}]}
    flows, stations = [], []
    for i, f in enumerate(spec["flows"]):
        good = (20e6 + 2e6 * math.log2(ampdu)) / (i + 1) * rnd.uniform(0.95, 1.05)
        mean = 3e6 * (i + 1) * rnd.uniform(0.9, 1.1)
        flows.append({"id": i, "station": f["station"], "direction": f["direction"],
                      "pattern": f["pattern"], "offered_packets": 1000,
                      "offered_bytes": int(good / 8 * 1.8 * 1.01), "delivered_packets": 990,
                      "delivered_bytes": int(good / 8 * 1.8), "dropped_queue": 10,
                      "dropped_retry": 0, "dropped_wired": 0, "goodput_bps": good,
                      "loss": 0.01 * rnd.random(),
                      "delay_ns": {"mean": mean, "p50": int(mean * 0.8), "p95": int(mean * 2),
                                   "p99": int(mean * 3), "max": int(mean * 4),
                                   "samples": 990}})
    for s in range(n_sta):
        hist = [0] * (ampdu + 1)
        for _ in range(200):
            hist[rnd.randint(1, ampdu)] += 1
        up = [0] * (ampdu + 1)
        if s == 0:
            up[1], up[2] = 50, 20
        stations.append({"id": s, "mcs": 9 - 3 * s, "nss": 1, "phy_rate_bps": 390_000_000 // (s + 1),
                         "airtime_tx_ns": 10_000_000 * (s + 1), "airtime_rx_ns": 200_000_000,
                         "ampdu_hist_down": hist, "ampdu_hist_up": up,
                         "mean_ampdu_down": sum(k * c for k, c in enumerate(hist)) / 200,
                         "mean_ampdu_up": (50 + 40) / 70 if s == 0 else 0.0})
    warm = 2
    ts = {"bin_ns": bin_ns, "t_ns": [b * bin_ns for b in range(bins)],
          "flow_goodput_bps": [[0.0 if b < warm else f["goodput_bps"] * rnd.uniform(0.7, 1.3)
                                for b in range(bins)] for f in flows],
          "flow_delay_mean_ns": [[0.0 if b < warm else f["delay_ns"]["mean"] * rnd.uniform(0.5, 2)
                                  for b in range(bins)] for f in flows],
          "station_mean_ampdu_down": [[0.0 if b < warm else rnd.uniform(1, ampdu)
                                       for b in range(bins)] for _ in stations],
          "station_airtime_frac": [[rnd.uniform(0.05, 0.3) for _ in range(bins)]
                                   for _ in stations]}
    data = {"stats": {"events": 1, "sim_time_ns": bins * bin_ns, "collisions": 3},
            "channel": {"busy_ns": 1_500_000_000, "busy_frac": 0.75, "tx_attempts": 100,
                        "collisions": 3 + seed},
            "flows": flows, "stations": stations, "timeseries": ts}
    return envelope(spec, seed, data, "0.1.0+test")


AMPDUS = [4, 16, 64]
SEEDS = [1, 2, 3]


def write_sweep(d: Path, old_layout: bool = False) -> Path:
    """A sweep directory as `lasthop sweep` writes it (docs/experiments.md); with
    `old_layout`, its summary as earlier versions wrote it (text `<KEY>`, `<KEY>#num`)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    (d / "runs").mkdir(parents=True)
    key = "mac.max_ampdu_mpdus"
    runs, rows = [], []
    for point, amp in enumerate(AMPDUS):
        for seed in SEEDS:
            doc = fake_doc(seed, amp)
            run = f"{point:02d}{seed:018d}"
            write_result(d / "runs" / f"{run}.json", doc)
            runs.append({"point": point, "seed": seed, "overrides": {key: amp}, "key": run,
                         "file": f"runs/{run}.json"})
            for r in analysis.rows_from_result(doc):
                if old_layout:
                    rows.append({"point": point, "seed": seed, "run": run, key: str(amp),
                                 f"{key}#num": float(amp), **r})
                else:
                    rows.append({"point": point, "seed": seed, "run": run, key: amp,
                                 f"{key}#text": str(amp), **r})
    manifest = {"format": "lasthop.sweep", "format_version": 1, "code_version": "0.1.0+test",
                "name": "fx", "spec": {"name": "fx"}, "vary": [[key, AMPDUS]], "seeds": SEEDS,
                "runs": runs}
    (d / "sweep.json").write_text(json.dumps(manifest))
    from lasthop.summary_schema import FLOW_COLUMNS

    types = {"point": pa.int64(), "seed": pa.int64(), "run": pa.string(),
             key: pa.string() if old_layout else pa.int64(), f"{key}#text": pa.string(),
             **{n: getattr(pa, t)() for n, t in FLOW_COLUMNS}}
    twin = f"{key}#num" if old_layout else f"{key}#text"
    cols = ["point", "seed", "run", key, twin] + analysis.BASE_COLUMNS[3:]
    schema = pa.schema([(c, types.get(c, pa.float64())) for c in cols])
    pq.write_table(pa.Table.from_pylist(rows, schema=schema), d / "summary.parquet")
    return d


@pytest.fixture(scope="module")
def sweep_dir(tmp_path_factory) -> Path:
    return write_sweep(tmp_path_factory.mktemp("sweep") / "fx-sweep")


@pytest.fixture
def result_file(tmp_path: Path) -> Path:
    return write_result(tmp_path / "fx-s1.json", fake_doc(1, 16))


@pytest.fixture
def results_dir(tmp_path: Path) -> Path:
    d = tmp_path / "many"
    d.mkdir()
    for amp in (8, 32):
        for seed in (1, 2):
            write_result(d / f"fx{amp}-s{seed}.json", fake_doc(seed, amp, name=f"fx{amp}"))
    return d


def png_checks(path: Path, min_w: int = 300, min_h: int = 200) -> None:
    import matplotlib.image as mpimg
    import numpy as np

    data = path.read_bytes()
    assert data[:8] == PNG_SIGNATURE, path
    img = mpimg.imread(str(path))
    h, w = img.shape[:2]
    assert w >= min_w and h >= min_h, (w, h)
    rgb = np.asarray(img)[..., :3]
    assert float(rgb.var()) > 1e-3, "single-colour image"
    assert len(np.unique(rgb.reshape(-1, 3), axis=0)) > 8


# ---------------------------------------------------------------------------------------------
# Statistics


@pytest.mark.parametrize("df,expected", [
    (1, 12.706204736), (2, 4.302652730), (3, 3.182446305), (4, 2.776445105),
    (5, 2.570581836), (9, 2.262157163), (10, 2.228138852), (20, 2.085963447),
    (30, 2.042272456), (120, 1.979930405), (100000, 1.959988),
])
def test_t_quantile_975(df, expected):
    assert analysis.t_quantile(0.975, df) == pytest.approx(expected, abs=2e-6)


def test_t_quantile_other_levels_and_symmetry():
    assert analysis.t_quantile(0.95, 5) == pytest.approx(2.015048373, abs=1e-6)
    assert analysis.t_quantile(0.995, 10) == pytest.approx(3.169272673, abs=1e-6)
    assert analysis.t_quantile(0.025, 7) == pytest.approx(-analysis.t_quantile(0.975, 7))
    assert analysis.t_quantile(0.5, 3) == 0.0
    assert analysis.t_cdf(analysis.t_quantile(0.9, 4.5), 4.5) == pytest.approx(0.9, abs=1e-10)


def test_aggregate_known_values():
    a = analysis.aggregate([1, 2, 3, 4, 5])
    assert a.n == 5 and a.mean == 3.0
    assert a.std == pytest.approx(math.sqrt(2.5))
    assert a.ci95 == pytest.approx(2.776445105 * math.sqrt(2.5) / math.sqrt(5), rel=1e-8)
    b = analysis.aggregate([10.0, 12.0])  # t(0.975, 1) * sqrt(2) / sqrt(2)
    assert b.ci95 == pytest.approx(12.706204736, rel=1e-8)
    one = analysis.aggregate([7.0, None, float("nan")])
    assert one.n == 1 and one.mean == 7.0 and math.isnan(one.ci95) and math.isnan(one.std)
    assert math.isnan(analysis.aggregate([]).mean)
    m, h = analysis.mean_ci([2.0, 4.0, 6.0])
    assert m == 4.0 and h == pytest.approx(4.302652730 * 2.0 / math.sqrt(3), rel=1e-8)


# ---------------------------------------------------------------------------------------------
# Loading and tables


def test_load_every_input_kind(sweep_dir: Path, result_file: Path, results_dir: Path):
    sw = analysis.load(sweep_dir)
    assert sw.kind == "sweep" and sw.varied == ["mac.max_ampdu_mpdus"]
    assert sw.spec_names == ["fx"] and sw.code_versions == ["0.1.0+test"]
    assert len(sw.rows) == len(AMPDUS) * len(SEEDS) * 4 and sw.seeds == SEEDS
    assert sw.has_run_files() and sw.first_run() == (0, 1)
    pq = analysis.load(sweep_dir / "summary.parquet")
    assert pq.kind == "parquet" and pq.rows == sw.rows
    one = analysis.load(result_file)
    assert one.kind == "result" and len(one.rows) == 4 and one.varied == []
    many = analysis.load(results_dir)
    assert many.kind == "results-dir" and len(many.runs) == 4
    assert "mac.max_ampdu_mpdus" in many.varied and many.numeric_keys()[0] == "mac.max_ampdu_mpdus"
    assert [r["mac.max_ampdu_mpdus"] for r in many.rows[::8]] == [8, 32]
    assert [r["mac.max_ampdu_mpdus#text"] for r in many.rows[::8]] == ["8", "32"]
    # The in-memory table from result files equals the parquet rows built from the same docs.
    runs_only = analysis.load(sweep_dir / "runs")
    key = "mac.max_ampdu_mpdus"
    for a, b in zip(runs_only.rows, sw.rows):
        assert {k: a[k] for k in analysis.BASE_COLUMNS if k != "run"} == \
            {k: b[k] for k in analysis.BASE_COLUMNS if k != "run"}
        assert a[key] == b[key] and a[f"{key}#text"] == b[f"{key}#text"]
    assert runs_only.to_arrow().num_rows == len(sw.rows)
    assert runs_only.to_arrow().schema.field(key).type == __import__("pyarrow").int64()


def test_load_summary_of_the_earlier_layout(sweep_dir: Path, tmp_path: Path):
    """A summary.parquet written before varied keys were typed reads as the typed layout."""
    old = analysis.load(write_sweep(tmp_path / "old", old_layout=True))
    new = analysis.load(sweep_dir)
    assert old.varied == new.varied == ["mac.max_ampdu_mpdus"]
    assert old.rows == new.rows and old.numeric_keys() == ["mac.max_ampdu_mpdus"]


@pytest.mark.parametrize("content,expect", [
    (None, "no such file"),
    ("not json", "not a readable JSON file"),
    ('{"format": "other"}', "not a lasthop result file"),
])
def test_load_bad_inputs(tmp_path: Path, content, expect):
    p = tmp_path / "r.json"
    if content is not None:
        p.write_text(content)
    with pytest.raises(UserError, match=expect):
        analysis.load(p)


def test_load_bad_parquet_and_empty_dir(tmp_path: Path):
    (tmp_path / "summary.parquet").write_bytes(b"PAR1 nonsense")
    with pytest.raises(UserError, match="not a readable parquet file"):
        analysis.load(tmp_path / "summary.parquet")
    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(UserError, match="no summary.parquet and no result files"):
        analysis.load(empty)


def test_table_csv_matches_aggregate(sweep_dir: Path):
    proc = run_cli("table", "-i", str(sweep_dir), "--by", "mac.max_ampdu_mpdus", "--by", "flow",
                   "--metric", "goodput_bps", "--format", "csv")
    assert proc.returncode == 0, proc.stderr
    rows = list(csv.DictReader(io.StringIO(proc.stdout)))
    assert len(rows) == len(AMPDUS) * 4
    assert [r["mac.max_ampdu_mpdus"] for r in rows[::4]] == [str(a) for a in AMPDUS]
    first = rows[0]
    vals = [r["goodput_bps"] for r in analysis.load(sweep_dir).rows
            if r["point"] == 0 and r["flow"] == 0]
    agg = analysis.aggregate(vals)
    assert first["n"] == "3" and first["goodput_bps_n"] == "3"
    assert float(first["goodput_bps_mean"]) == pytest.approx(agg.mean, rel=1e-12)
    assert float(first["goodput_bps_std"]) == pytest.approx(agg.std, rel=1e-12)
    assert float(first["goodput_bps_ci95"]) == pytest.approx(
        4.302652730 * agg.std / math.sqrt(3), rel=1e-8)


def test_table_text_and_markdown(sweep_dir: Path, result_file: Path):
    proc = run_cli("table", "-i", str(sweep_dir))
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert lines[0].split()[:3] == ["mac.max_ampdu_mpdus", "flow", "n"]
    assert "goodput Mb/s" in lines[0] and "±95%" in lines[0] and "p99 delay ms" in lines[0]
    assert len(lines) == 1 + len(AMPDUS) * 4
    md = run_cli("table", "-i", str(result_file), "--metric", "goodput_bps,loss",
                 "--format", "markdown")
    assert md.returncode == 0, md.stderr
    mlines = md.stdout.splitlines()
    assert mlines[0] == "| flow | n | goodput Mb/s | loss % |"  # one run: no spread columns
    assert mlines[1].startswith("|---|") and len(mlines) == 2 + 4
    by_station = run_cli("table", "-i", str(sweep_dir), "--by", "direction", "--format", "csv")
    assert [r["direction"] for r in csv.DictReader(io.StringIO(by_station.stdout))] == \
        ["down", "up"]


# ---------------------------------------------------------------------------------------------
# Plots

PLOT_CASES = [
    ("timeseries", "goodput", None), ("timeseries", "delay", None),
    ("timeseries", "ampdu", None), ("timeseries", "airtime_frac", None),
    ("cdf", None, None), ("cdf", "delay_p95_ms", None),
    ("bar", "goodput_bps", None), ("bar", "busy_frac", None), ("ampdu", None, None),
    ("xy", "delay_mean_ms", "mac.max_ampdu_mpdus"), ("xy", "goodput_bps", None),
]


@pytest.mark.parametrize("kind,metric,x", PLOT_CASES, ids=lambda v: str(v))
def test_plot_kinds_sweep(sweep_dir: Path, tmp_path: Path, kind, metric, x):
    out = tmp_path / "p.png"
    args = ["plot", "-i", str(sweep_dir), "--kind", kind, "-o", str(out)]
    args += ["--metric", metric] if metric else []
    args += ["--x", x] if x else []
    proc = run_cli(*args)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == f"plot: {out}"
    png_checks(out)


@pytest.mark.parametrize("kind", ["timeseries", "cdf", "bar", "ampdu"])
def test_plot_kinds_single_result(result_file: Path, kind):
    res = analysis.load(result_file)
    fig = plots.make_plot(res, kind)
    out = plots.save_png(fig, result_file.parent / f"{kind}.png")
    png_checks(out)


def test_plot_default_output_next_to_input(result_file: Path, sweep_dir: Path):
    proc = run_cli("plot", "-i", str(result_file))
    assert proc.returncode == 0, proc.stderr
    out = result_file.parent / "fx-s1-timeseries.png"
    assert proc.stdout.strip() == f"plot: {out}"
    png_checks(out)
    proc = run_cli("plot", "-i", str(sweep_dir), "--kind", "bar", "--metric", "loss")
    assert proc.returncode == 0, proc.stderr
    png_checks(sweep_dir / "bar-loss.png")


def test_plots_are_deterministic(results_dir: Path):
    res = analysis.load(results_dir)
    for kind in ("xy", "ampdu", "cdf"):
        a = plots.png_bytes(plots.make_plot(res, kind))
        b = plots.png_bytes(plots.make_plot(analysis.load(results_dir), kind))
        assert a == b, kind
        assert b"Software" not in a and b"matplotlib" not in a


# ---------------------------------------------------------------------------------------------
# Report


def test_report_sweep(sweep_dir: Path, tmp_path: Path):
    out = tmp_path / "sub" / "r.html"
    proc = run_cli("report", "-i", str(sweep_dir), "-o", str(out))
    assert proc.returncode == 0, proc.stderr
    html = out.read_text()
    n_plots = len(plots_expected := report.report_plots(analysis.load(sweep_dir)))
    assert proc.stdout.strip() == f"report: {out} ({n_plots} plots)"
    assert n_plots == len(plots_expected) >= 8
    assert html.startswith("<!DOCTYPE html>") and html.rstrip().endswith("</html>")
    assert html.count("<img") == n_plots == html.count('src="data:image/png;base64,')
    assert "<script" not in html and "http://" not in html and "https://" not in html
    assert "0.1.0+test" in html and "fx" in html and "1, 2, 3" in html
    assert html.count("<table") >= 2
    # deterministic: same input, same bytes
    again = tmp_path / "again.html"
    assert run_cli("report", "-i", str(sweep_dir), "-o", str(again)).returncode == 0
    assert again.read_bytes() == out.read_bytes()


def test_report_single_result_default_path(result_file: Path):
    proc = run_cli("report", "-i", str(result_file))
    assert proc.returncode == 0, proc.stderr
    out = result_file.parent / "fx-s1-report.html"
    html = out.read_text()
    n = len(report.report_plots(analysis.load(result_file)))
    assert proc.stdout.strip() == f"report: {out} ({n} plots)"
    assert html.count("<img") == n == 7
    assert "Stations" in html


def test_building_blocks(tmp_path: Path):
    t = report.html_table(["a<b", "verdict", "x"],
                          [["<script>", "holds", 1.5], ["&", "does not hold", None],
                           ["q\"", True, float("nan")]],
                          classes=[None, "verdict", lambda v: "hi" if v == 1.5 else None])
    assert "<script>" not in t and "&lt;script&gt;" in t and "a&lt;b" in t and "&amp;" in t
    assert 'class="verdict holds"' in t and 'class="verdict fails"' in t
    assert t.count('class="verdict holds"') == 2 and 'class="num hi"' in t
    assert t.count("–") == 2
    page = report.html_page("T <1>", t)
    assert "<title>T &lt;1&gt;</title>" in page and ".holds" in page and ".fails" in page
    import matplotlib.figure

    fig = matplotlib.figure.Figure(figsize=(2, 2))
    fig.add_subplot().plot([0, 1], [1, 0])
    b64 = report.figure_png_b64(fig)
    import base64

    assert base64.b64decode(b64)[:8] == PNG_SIGNATURE
    p = report.write_html(tmp_path / "x.html", page)
    assert p.read_text() == page and not list(tmp_path.glob(".*tmp"))


# ---------------------------------------------------------------------------------------------
# Bad arguments: one line, exit 2, nothing written


@pytest.mark.parametrize("args,expect", [
    (("table", "-i", "{sweep}", "--metric", "nope"), "--metric nope"),
    (("table", "-i", "{sweep}", "--by", "nokey"), "--by nokey"),
    (("table", "-i", "{sweep}", "--format", "xml"), "--format"),
    (("table",), "-i"),
    (("table", "-i", "{tmp}/missing"), "missing"),
    (("plot", "-i", "{sweep}", "--kind", "pie"), "--kind pie"),
    (("plot", "-i", "{sweep}", "--kind", "bar", "--metric", "nope"), "--metric nope"),
    (("plot", "-i", "{sweep}", "--kind", "timeseries", "--metric", "nope"), "--metric nope"),
    (("plot", "-i", "{sweep}", "--kind", "xy", "--x", "nokey"), "--x nokey"),
    (("plot", "-i", "{sweep}", "--kind", "bar", "-o", "{tmp}/out.jpg"), ".png, .svg, .pdf"),
    (("plot", "-i", "{tmp}/garbage.json"), "not a readable JSON file"),
    (("report", "-i", "{tmp}/garbage.json"), "not a readable JSON file"),
    (("report", "-i", "{sweep}", "-o", "{tmp}"), "must end with .html"),
])
def test_bad_arguments(sweep_dir: Path, tmp_path: Path, args, expect):
    (tmp_path / "garbage.json").write_text("{")
    before = sorted(p.name for p in tmp_path.iterdir())
    sweep_before = sorted(p.name for p in sweep_dir.iterdir())
    args = [a.format(sweep=sweep_dir, tmp=tmp_path) for a in args]
    proc = run_cli(*args)
    assert proc.returncode == 2, (proc.stdout, proc.stderr)
    assert "Traceback" not in proc.stderr
    lines = proc.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("lasthop: "), proc.stderr
    assert expect in lines[0], lines[0]
    assert proc.stdout == ""
    assert sorted(p.name for p in tmp_path.iterdir()) == before
    assert sorted(p.name for p in sweep_dir.iterdir()) == sweep_before


def test_xy_needs_numeric_key(result_file: Path):
    proc = run_cli("plot", "-i", str(result_file), "--kind", "xy")
    assert proc.returncode == 2 and "numeric varied key" in proc.stderr
    assert len(proc.stderr.splitlines()) == 1


# ---------------------------------------------------------------------------------------------
# The report in a real browser


def _chromium(profile: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [str(CHROMIUM), "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic",
         "--no-first-run", "--disable-background-networking", "--disable-component-update",
         "--disable-sync", f"--user-data-dir={profile}", *args],
        capture_output=True, text=True, timeout=120)


@pytest.mark.skipif(not CHROMIUM.exists(),
                    reason="/usr/bin/chromium is absent (apt-get install chromium; .ci/run does)")
def test_report_in_headless_chromium(sweep_dir: Path, tmp_path: Path):
    import matplotlib.image as mpimg
    import numpy as np

    page = tmp_path / "report.html"
    proc = run_cli("report", "-i", str(sweep_dir), "-o", str(page))
    assert proc.returncode == 0, proc.stderr
    n_img = page.read_text().count("<img")

    shot = tmp_path / "shot.png"
    r = _chromium(tmp_path / "profile1", f"--screenshot={shot}", "--window-size=1280,2400",
                  "--hide-scrollbars", page.as_uri())
    assert r.returncode == 0, r.stderr[-2000:]
    assert shot.is_file() and shot.read_bytes()[:8] == PNG_SIGNATURE
    img = np.asarray(mpimg.imread(str(shot)))[..., :3]
    assert img.shape[:2] == (2400, 1280)
    assert float(img.var()) > 1e-3, "blank screenshot"

    # A copy with a probe script: after load, record how many images decoded (naturalWidth > 0).
    probe = tmp_path / "probe.html"
    probe.write_text(page.read_text().replace(
        "</body>",
        "<script>window.addEventListener('load', () => {"
        " const imgs = Array.from(document.images);"
        " const ok = imgs.filter(i => i.complete && i.naturalWidth > 0).length;"
        " document.body.setAttribute('data-probe', `imgs=${imgs.length} ok=${ok}`); });"
        "</script></body>"))
    r = _chromium(tmp_path / "profile2", "--dump-dom", "--virtual-time-budget=10000",
                  "--enable-logging=stderr", "--v=0", probe.as_uri())
    assert r.returncode == 0, r.stderr[-2000:]
    assert f'data-probe="imgs={n_img} ok={n_img}"' in r.stdout, r.stdout[-500:]
    for bad in ("Failed to load resource", "net::ERR_", "Uncaught"):
        assert bad not in r.stderr, [ln for ln in r.stderr.splitlines() if bad in ln]


# ---------------------------------------------------------------------------------------------
# With the real simulator


def test_real_run_report(simulator, tiny_spec: Path, tmp_path: Path):
    out = tmp_path / "res"
    for seed in ("1", "2"):
        proc = run_cli("run", str(tiny_spec), "--seed", seed, "-o", str(out), "-q")
        assert proc.returncode == 0, proc.stderr
    res = analysis.load(out)
    assert len(res.runs) == 2 and res.varied == []
    proc = run_cli("report", "-i", str(out))
    assert proc.returncode == 0, proc.stderr
    html = (out / "report.html").read_text()
    assert html.count("<img") == len(report.report_plots(res))
    table = run_cli("table", "-i", str(out / "tiny-s1.json"), "--format", "csv")
    assert table.returncode == 0 and len(table.stdout.splitlines()) == 1 + len(res.rows) // 2
    proc = run_cli("plot", "-i", str(out / "tiny-s1.json"), "--kind", "ampdu")
    assert proc.returncode == 0, proc.stderr
    png_checks(out / "tiny-s1-ampdu.png")
