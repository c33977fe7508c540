"""`lasthop plot` and lasthop.plots: every stored time series by name, PNG/SVG/PDF output, the
combined view (`--kind all`), box plots across runs, labels (RTT for ping flows, one-way delay
for data flows, cross traffic by name), and that no matplotlib backend is chosen.

One real run (< 1 s of simulated time) has a flow of every kind a series needs: TCP CUBIC down,
TCP BBR up (it paces) through a mesh relay, a ping, wired cross traffic and an aggctl flow, with
one station on the SNR error model. Multi-run inputs are synthetic result files.
"""

from __future__ import annotations

import json
import math
import os
import statistics
import subprocess
import sys
from pathlib import Path

import pytest
from helpers import lasthop_cmd, run_cli
from matplotlib.figure import Figure

from lasthop import analysis, plots, report
from lasthop.errors import UserError
from lasthop.results import envelope, write_result

ALL_SPEC = """\
name = "allseries"
[sim]
duration = "600ms"
warmup = "100ms"
seed = 1
bin = "50ms"
[phy]
standard = "vht"
channel_width = 40
[ap]
queue_limit = 200               # the CUBIC download overflows it (slow start to the first
                                # loss, no HyStart): retransmits
[[stations]]
mcs = 7
error_model = "snr"
snr_db = 30.0
[[stations]]
mcs = 5
parent = 0
[[stations]]
mcs = 4
[[flows]]
stations = 0
direction = "down"
pattern = "tcp"
hystart = "off"
[[flows]]
stations = 1
direction = "up"
pattern = "tcp"
cc = "bbr"
[[flows]]
stations = 1
pattern = "ping"
interval = "20ms"
[[flows]]
direction = "cross"
pattern = "cbr"
rate = "20Mbps"
[[flows]]
stations = 2
pattern = "aggctl"
"""
CROSS_FLOW, PING_FLOW = 3, 2

# Independent of lasthop.plots: the unit each series is shown in and the factor from the
# stored value.
UNITS = {
    "flow_goodput_bps": ("Mb/s", 1e-6), "flow_delay_mean_ns": ("ms", 1e-6),
    "flow_rtt_ns": ("ms", 1e-6), "flow_cwnd_bytes": ("kB", 1e-3),
    "flow_inflight_bytes": ("kB", 1e-3), "flow_pacing_rate_bps": ("Mb/s", 1e-6),
    "flow_retransmits": ("packets per bin", 1.0), "flow_aggctl_rate_bps": ("Mb/s", 1e-6),
    "flow_aggctl_est_ampdu": ("MPDUs", 1.0), "node_backlog_packets": ("packets", 1.0),
    "node_queue_limit": ("packets", 1.0), "station_snr_db": ("dB", 1.0),
    "station_phy_rate_down_bps": ("Mb/s", 1e-6), "station_mean_ampdu_down": ("MPDUs", 1.0),
    "station_airtime_frac": ("%", 100.0),
}
ALIASES = {
    "goodput": "flow_goodput_bps", "delay": "flow_delay_mean_ns", "rtt": "flow_rtt_ns",
    "cwnd": "flow_cwnd_bytes", "inflight": "flow_inflight_bytes",
    "pacing": "flow_pacing_rate_bps", "retransmits": "flow_retransmits",
    "aggctl_rate": "flow_aggctl_rate_bps", "aggctl_est": "flow_aggctl_est_ampdu",
    "backlog": "node_backlog_packets", "queue_limit": "node_queue_limit",
    "snr": "station_snr_db", "phy_rate": "station_phy_rate_down_bps",
    "ampdu": "station_mean_ampdu_down", "airtime": "station_airtime_frac",
}
MAGIC = {"png": b"\x89PNG\r\n\x1a\n", "svg": b"<?xml", "pdf": b"%PDF-"}


@pytest.fixture(scope="module")
def run_file(simulator, tmp_path_factory) -> Path:
    d = tmp_path_factory.mktemp("allseries")
    spec = d / "all.toml"
    spec.write_text(ALL_SPEC)
    proc = run_cli("run", str(spec), "-o", str(d), "-q")
    assert proc.returncode == 0, proc.stderr
    return d / "allseries-s1.json"


@pytest.fixture(scope="module")
def doc(run_file: Path) -> dict:
    return json.loads(run_file.read_text())


@pytest.fixture
def res(run_file: Path) -> analysis.Results:
    return analysis.load(run_file)


def _lines(ax) -> list:
    return [ln for ln in ax.get_lines() if not ln.get_label().startswith("_")]


def _texts(fig: Figure) -> str:
    """Every text of the figure: titles, axis labels, legend entries, notes."""
    out = [fig._suptitle.get_text() if fig._suptitle else ""]
    for ax in fig.axes:
        out += [ax.get_title(), ax.get_xlabel(), ax.get_ylabel()]
        out += [t.get_text() for t in ax.texts]
        leg = ax.get_legend()
        if leg is not None:
            out += [t.get_text() for t in leg.get_texts()]
    return "\n".join(out)


# ---------------------------------------------------------------------------------------------
# Every stored series by name


def test_the_run_stores_every_series_with_data(doc: dict):
    """The run behind the per-series tests has samples in every series the simulator stores,
    and each of them has a display entry (units, label) in lasthop.plots."""
    stored = plots.series_names(doc)
    assert set(stored) == set(UNITS) == set(plots.SERIES), stored
    ts = doc["data"]["timeseries"]
    for key in stored:
        assert any(any(v for v in row) for row in ts[key]), key


@pytest.mark.parametrize("key", sorted(UNITS))
def test_timeseries_every_series(res: analysis.Results, doc: dict, tmp_path: Path, key: str):
    fig = plots.make_plot(res, "timeseries", key)
    assert isinstance(fig, Figure)
    ax = fig.axes[0]
    unit, scale = UNITS[key]
    assert ax.get_ylabel().endswith(f"({unit})") or f"({unit})" in ax.get_ylabel()
    assert ax.get_xlabel() == "simulated time (s)"
    lines = _lines(ax)
    rows = doc["data"]["timeseries"][key]
    with_data = [row for row in rows if row]
    assert 1 <= len(lines) <= len(with_data), (len(lines), len(with_data))
    # Entities without samples (empty lists: a flow that is not TCP, a node that does not
    # forward) are skipped; what is drawn is the stored values in display units.
    stored = {round(v * scale, 9) for row in rows for v in row if v is not None}
    for ln in lines:
        ys = [y for y in ln.get_ydata() if not math.isnan(y)]
        assert ys, ln.get_label()
        assert all(round(y, 9) in stored for y in ys), (key, ln.get_label())
    assert "no samples" not in _texts(fig)
    out = plots.save_figure(fig, tmp_path / f"{key}.png")
    assert out.read_bytes()[:8] == MAGIC["png"]


@pytest.mark.parametrize("alias", sorted(ALIASES))
def test_timeseries_aliases(res: analysis.Results, alias: str):
    a = plots.make_plot(res, "timeseries", alias).axes[0]
    b = plots.make_plot(res, "timeseries", ALIASES[alias]).axes[0]
    assert a.get_ylabel() == b.get_ylabel() and a.get_title() == b.get_title()
    assert [ln.get_label() for ln in _lines(a)] == [ln.get_label() for ln in _lines(b)]


def test_series_entities_are_labelled(res: analysis.Results):
    def labels(name: str) -> list[str]:
        return [ln.get_label() for ln in _lines(plots.make_plot(res, "timeseries",
                                                                name).axes[0])]

    assert labels("cwnd") == ["flow 0 (sta 0, down, tcp cubic)", "flow 1 (sta 1, up, tcp bbr)"]
    assert labels("pacing") == ["flow 1 (sta 1, up, tcp bbr)"]  # CUBIC does not pace
    assert labels("aggctl_rate") == ["flow 4 (sta 2, down, aggctl)"]
    assert labels("backlog") == ["AP", "sta 0 (relay)"]
    assert labels("snr") == ["sta 0 (MCS 7)"]
    assert labels("phy_rate") == ["sta 0 (MCS 7)", "sta 1 (MCS 5, via sta 0)", "sta 2 (MCS 4)"]
    good = labels("goodput")
    assert good[CROSS_FLOW] == "flow 3: cross traffic (cbr)"
    assert good[PING_FLOW] == "flow 2 (sta 1, ping)"


def test_timeseries_cli_by_name(run_file: Path, tmp_path: Path):
    out = tmp_path / "cwnd.svg"
    proc = run_cli("plot", "-i", str(run_file), "--kind", "timeseries", "--metric",
                   "flow_cwnd_bytes", "-o", str(out))
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == f"plot: {out}"
    text = out.read_text()
    assert text.startswith("<?xml") and "<svg" in text
    proc = run_cli("plot", "-i", str(run_file), "--metric", "rtt")  # default kind, path
    assert proc.returncode == 0, proc.stderr
    assert (run_file.parent / "allseries-s1-timeseries-rtt.png").read_bytes()[:8] == MAGIC["png"]


def test_unknown_series_lists_the_input_names(run_file: Path, doc: dict, tmp_path: Path):
    before = sorted(p.name for p in run_file.parent.iterdir())
    proc = run_cli("plot", "-i", str(run_file), "--kind", "timeseries", "--metric", "cwnd_x",
                   "-o", str(tmp_path / "x.png"))
    assert proc.returncode == 2 and proc.stdout == ""
    lines = proc.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("lasthop: ") and "--metric cwnd_x" in lines[0]
    for name in plots.series_names(doc):
        assert name in lines[0]
    assert "cwnd" in lines[0] and "backlog" in lines[0]   # aliases too
    assert not list(tmp_path.iterdir())
    assert sorted(p.name for p in run_file.parent.iterdir()) == before


def test_series_not_stored_and_series_without_samples(tmp_path: Path):
    # An input without a series: the one-line error lists what it has.
    d = synthetic_doc(1, 8)
    res = plots.results_from_doc(d)
    with pytest.raises(UserError, match=r"--metric cwnd: .* it has flow_goodput_bps"):
        plots.validate_plot(res, "timeseries", "cwnd")
    # A stored series with no samples for any entity: drawn with a note saying who has it.
    d["data"]["timeseries"]["flow_cwnd_bytes"] = [[] for _ in d["data"]["flows"]]
    fig = plots.plot_timeseries(plots.results_from_doc(d), "cwnd")
    assert not _lines(fig.axes[0])
    assert "no samples of flow_cwnd_bytes" in _texts(fig) and "TCP and QUIC" in _texts(fig)


# ---------------------------------------------------------------------------------------------
# Output formats


@pytest.mark.parametrize("fmt", ["png", "svg", "pdf"])
def test_output_format_and_determinism(res: analysis.Results, run_file: Path, tmp_path: Path,
                                       fmt: str):
    out = tmp_path / f"sub/a.{fmt.upper() if fmt == 'pdf' else fmt}"
    proc = run_cli("plot", "-i", str(run_file), "--kind", "all", "-o", str(out))
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == f"plot: {out}"
    data = out.read_bytes()
    assert data.startswith(MAGIC[fmt]) and len(data) > 10_000
    # The same bytes from this process: nothing depends on the process (hash salt, ids, time).
    assert plots.figure_bytes(plots.make_plot(res, "all"), fmt) == data
    for stamp in (b"CreationDate", b"ModDate", b"<dc:date>", b"Software", b"Producer",
                  b"matplotlib version", b"Matplotlib v"):
        assert stamp not in data, stamp
    if fmt == "svg":
        assert b"<svg" in data and data.rstrip().endswith(b"</svg>")
    if fmt == "pdf":
        assert data.rstrip().endswith(b"%%EOF")
    assert not [p for p in tmp_path.rglob("*") if p.name.startswith(".")]  # no temp files


def test_figure_bytes_in_process(res: analysis.Results):
    for fmt in ("png", "svg", "pdf"):
        one = plots.figure_bytes(plots.make_plot(res, "timeseries", "backlog"), fmt)
        two = plots.figure_bytes(plots.make_plot(analysis.load(res.source), "timeseries",
                                                 "backlog"), fmt)
        assert one == two and one.startswith(MAGIC[fmt])
    with pytest.raises(UserError, match="must end with"):
        plots.save_figure(plots.make_plot(res, "ampdu"), "/nonexistent/x.eps")


@pytest.mark.parametrize("src,name", [("run", "out.jpg"), ("run", "out"),
                                      ("missing", "out.svgz")])
def test_bad_output_suffix_before_anything(run_file: Path, tmp_path: Path, src: str,
                                           name: str):
    out = tmp_path / "new" / name
    # The suffix is checked before the input is read: a missing input is not what fails.
    for src in ([str(run_file)] if src == "run" else [str(tmp_path / "missing.json")]):
        proc = run_cli("plot", "-i", src, "--kind", "all", "-o", str(out))
        assert proc.returncode == 2 and proc.stdout == ""
        lines = proc.stderr.splitlines()
        assert len(lines) == 1 and ".png, .svg, .pdf" in lines[0], proc.stderr
    assert not (tmp_path / "new").exists()


# ---------------------------------------------------------------------------------------------
# The combined view


def test_combined_view(res: analysis.Results, doc: dict):
    fig = plots.make_plot(res, "all")
    assert isinstance(fig, Figure)
    axes = fig.axes
    assert len(axes) == 4
    good, lat, cwnd, backlog = axes
    for ax in axes[1:]:
        assert ax.get_shared_x_axes().joined(good, ax)
    assert axes[-1].get_xlabel() == "simulated time (s)"
    assert [ax.get_ylabel() for ax in axes] == ["goodput (Mb/s)", "latency (ms)", "cwnd (kB)",
                                                 "backlog (packets)"]
    # Goodput: every flow but the ping; downlink solid, uplink dashed, cross traffic dotted.
    g = {ln.get_label(): ln for ln in _lines(good)}
    assert list(g) == ["flow 0 (sta 0, down, tcp cubic)", "flow 1 (sta 1, up, tcp bbr)",
                       "flow 3: cross traffic (cbr)", "flow 4 (sta 2, down, aggctl)"]
    assert g["flow 0 (sta 0, down, tcp cubic)"].get_linestyle() == "-"
    assert g["flow 1 (sta 1, up, tcp bbr)"].get_linestyle() == "--"
    assert g["flow 3: cross traffic (cbr)"].get_linestyle() == ":"
    # Latency: RTT for the ping, one-way delay for the others.
    labels = [ln.get_label() for ln in _lines(lat)]
    assert "flow 2 (sta 1, ping) — RTT" in labels
    assert "flow 0 (sta 0, down, tcp cubic) — one-way delay" in labels
    assert "flow 3: cross traffic (cbr) — one-way delay" in labels
    assert sum("RTT" in x for x in labels) == 1
    # Beneath: the cwnd of the TCP flows, the backlog of the AP and the relay.
    assert [ln.get_label() for ln in _lines(cwnd)] == ["flow 0 (sta 0, down, tcp cubic)",
                                                       "flow 1 (sta 1, up, tcp bbr)"]
    assert [ln.get_label() for ln in _lines(backlog)] == ["AP", "sta 0 (relay)"]
    # The AP's backlog: the queue samples (bins without one are skipped, not zeros).
    ap = _lines(backlog)[0]
    stored = doc["data"]["timeseries"]["node_backlog_packets"][0]
    limit = doc["data"]["timeseries"]["node_queue_limit"][0]
    assert list(ap.get_ydata()) == [v for v, lim in zip(stored, limit) if lim]
    assert "station 0" not in _texts(fig) and "sta 0, cross" not in _texts(fig)


def test_combined_view_without_tcp_or_queues(tmp_path: Path):
    """Runs without TCP/QUIC flows or queue samples: goodput and latency only."""
    d = synthetic_doc(1, 8)
    fig = plots.plot_all(d)   # a result document works as well as loaded results
    assert [ax.get_ylabel() for ax in fig.axes] == ["goodput (Mb/s)", "latency (ms)"]
    assert len(_lines(fig.axes[0])) == 3   # the ping is not a throughput
    plots.save_figure(fig, tmp_path / "x.pdf")


# ---------------------------------------------------------------------------------------------
# Across runs: box and CDF


def synthetic_doc(seed: int, ampdu: int, name: str = "syn") -> dict:
    """A small result document with a data flow down, one up, a ping and cross traffic."""
    spec = {"name": name, "sim": {"duration_ns": 1_000_000_000, "warmup_ns": 100_000_000,
                                  "seed": 1, "bin_ns": 100_000_000},
            "mac": {"max_ampdu_mpdus": ampdu},
            "stations": [{"mcs": 7}, {"mcs": 3}],
            "flows": [{"station": 0, "direction": "down", "pattern": "cbr"},
                      {"station": 1, "direction": "up", "pattern": "cbr"},
                      {"station": 0, "direction": "down", "pattern": "ping"},
                      {"station": 0, "direction": "cross", "pattern": "cbr"}]}
    flows = []
    for i, f in enumerate(spec["flows"]):
        base = (1.0 + i) * (1.0 + 0.1 * seed) * (64 / ampdu)
        flows.append({"id": i, **f, "offered_bytes": 100_000, "delivered_packets": 100,
                      "goodput_bps": 1e6 * (4 - i) * (1 + 0.05 * seed) * ampdu / 8,
                      "loss": 0.0,
                      "delay_ns": {"mean": base * 1e6, "p50": int(base * 0.9e6),
                                   "p95": int(base * 2e6), "p99": int(base * 3e6),
                                   "max": int(base * 4e6), "samples": 100}})
    stations = [{"id": s, "mcs": 7 - 4 * s, "nss": 1, "airtime_tx_ns": 1_000_000,
                 "airtime_rx_ns": 50_000_000, "ampdu_hist_down": [0, 10, 5],
                 "ampdu_hist_up": [0, 3], "mean_ampdu_down": 1.33, "mean_ampdu_up": 1.0}
                for s in range(2)]
    bins = 10
    ts = {"bin_ns": 100_000_000, "t_ns": [b * 100_000_000 for b in range(bins)],
          "flow_goodput_bps": [[0.0] + [f["goodput_bps"]] * (bins - 1) for f in flows],
          "flow_delay_mean_ns": [[0.0] + [f["delay_ns"]["mean"]] * (bins - 1) for f in flows],
          "station_mean_ampdu_down": [[1.33] * bins for _ in stations],
          "station_airtime_frac": [[0.1] * bins for _ in stations]}
    data = {"stats": {"sim_time_ns": 1_000_000_000}, "channel": {"busy_frac": 0.5,
                                                                 "collisions": seed},
            "flows": flows, "stations": stations, "timeseries": ts}
    return envelope(spec, seed, data, "0.1.0+test")


@pytest.fixture
def runs_dir(tmp_path: Path) -> Path:
    d = tmp_path / "runs"
    d.mkdir()
    for amp in (8, 32):
        for seed in (1, 2, 3):
            write_result(d / f"syn{amp}-s{seed}.json", synthetic_doc(seed, amp))
    return d


def test_box_across_runs(runs_dir: Path, tmp_path: Path):
    res = analysis.load(runs_dir)
    fig = plots.make_plot(res, "box", "delay_p99_ms")
    ax = fig.axes[0]
    legend = [t.get_text() for t in ax.get_legend().get_texts()]
    # one box per grid point and flow class; 3 seeds x (2 data flows | 1 ping | 1 cross)
    assert legend == ["data flows (one-way delay) (n=12)", "ping flows (RTT) (n=6)",
                      "cross traffic (one-way delay) (n=6)"]
    assert [t.get_text() for t in ax.get_xticklabels()] == ["8", "32"]
    assert ax.get_xlabel() == "mac.max_ampdu_mpdus"
    assert "RTT for ping flows" in ax.get_ylabel()
    # The medians drawn are the medians of the table values (data flows of point 0).
    want = statistics.median(r["delay_p99_ms"] for r in res.rows
                             if r["point"] == 0 and r["direction"] in ("down", "up")
                             and r["pattern"] != "ping")
    medians = [ln for ln in ax.get_lines() if len(ln.get_ydata()) == 2
               and ln.get_ydata()[0] == ln.get_ydata()[1] and ln.get_linewidth() == 2.0]
    assert any(math.isclose(ln.get_ydata()[0], want) for ln in medians)
    out = tmp_path / "box.pdf"
    proc = run_cli("plot", "-i", str(runs_dir), "--kind", "box", "-o", str(out))
    assert proc.returncode == 0, proc.stderr
    assert out.read_bytes()[:5] == MAGIC["pdf"]
    per_run = plots.make_plot(res, "box", "collisions").axes[0]
    assert [t.get_text() for t in per_run.get_legend().get_texts()] == ["per run (n=6)"]


def test_cdf_across_runs_keeps_flow_classes_apart(runs_dir: Path):
    ax = plots.make_plot(analysis.load(runs_dir), "cdf", "delay_mean_ms").axes[0]
    labels = [t.get_text() for t in ax.get_legend().get_texts()]
    assert len(labels) == 6   # 2 points x 3 classes
    assert "mac.max_ampdu_mpdus=8, ping flows (RTT) (n=3)" in labels
    assert "mac.max_ampdu_mpdus=32, cross traffic (one-way delay) (n=3)" in labels
    assert "mac.max_ampdu_mpdus=8, data flows (one-way delay) (n=6)" in labels


# ---------------------------------------------------------------------------------------------
# Labels


def test_cross_traffic_is_no_station(doc: dict, run_file: Path, tmp_path: Path):
    assert doc["data"]["flows"][CROSS_FLOW]["station"] == 0   # what the file says
    rows = analysis.rows_from_result(doc)
    cross = rows[CROSS_FLOW]
    assert cross["direction"] == "cross" and cross["station"] is None
    assert cross["mean_ampdu"] is None and cross["airtime_frac"] is None
    assert rows[0]["station"] == 0 and rows[0]["mean_ampdu"] is not None
    # `table --by station`: cross traffic is its own group, never pooled with station 0.
    proc = run_cli("table", "-i", str(run_file), "--by", "station", "--metric", "goodput_bps")
    assert proc.returncode == 0, proc.stderr
    groups = {ln.split("  ")[0].strip(): ln for ln in proc.stdout.splitlines()[1:]}
    assert set(groups) == {"0", "1", "2", "cross traffic"}
    assert groups["0"].split()[1] == "1"   # one flow at station 0: the TCP download
    # A summary.parquet that gives cross traffic station 0 and its A-MPDU size and airtime
    # reads the same.
    import pyarrow as pa
    import pyarrow.parquet as pq

    as_station_0 = [{"point": 0, "seed": 1, "run": "r", **r} for r in rows]
    as_station_0[CROSS_FLOW].update(station=0, mean_ampdu=rows[0]["mean_ampdu"],
                                    airtime_frac=rows[0]["airtime_frac"])
    pq.write_table(pa.Table.from_pylist(as_station_0), tmp_path / "summary.parquet")
    loaded = analysis.load(tmp_path / "summary.parquet")
    for got, want in zip(loaded.rows, rows):
        assert {k: got[k] for k in want} == want


def test_labels_in_every_kind(res: analysis.Results):
    for kind in ("timeseries", "all", "cdf", "bar", "box"):
        text = _texts(plots.make_plot(res, kind))
        if kind != "box":
            assert "flow 3: cross traffic (cbr)" in text, kind
        assert "sta 0, cross" not in text and "(sta 0, down, cbr)" not in text, kind
    delay = plots.make_plot(res, "timeseries", "delay").axes[0]
    assert delay.get_ylabel() == "mean delay (ms): one-way; RTT for ping flows"
    labels = [ln.get_label() for ln in _lines(delay)]
    assert "flow 2 (sta 1, ping) — RTT" in labels
    assert "flow 0 (sta 0, down, tcp cubic) — one-way delay" in labels
    cdf = plots.make_plot(res, "cdf").axes[0]
    assert cdf.get_xlabel() == "delay (ms): one-way; RTT for ping flows"
    assert "flow 2 (sta 1, ping) — RTT" in [t.get_text() for t in cdf.get_legend().get_texts()]
    box = _texts(plots.make_plot(res, "box", "delay_p99_ms"))
    assert "ping flows (RTT)" in box and "cross traffic (one-way delay)" in box


def test_labels_ping_only_and_data_only():
    d = synthetic_doc(1, 8)
    only_ping = json.loads(json.dumps(d))
    only_ping["data"]["flows"] = [only_ping["data"]["flows"][2]]
    ts = only_ping["data"]["timeseries"]
    for k in ("flow_goodput_bps", "flow_delay_mean_ns"):
        ts[k] = [ts[k][2]]
    assert plots.plot_timeseries(only_ping, "delay").axes[0].get_ylabel() == "mean RTT (ms)"
    assert plots.plot_all(only_ping).axes[1].get_ylabel() == "RTT (ms)"
    assert plots.plot_cdf(only_ping).axes[0].get_xlabel() == "RTT (ms)"
    no_ping = json.loads(json.dumps(d))
    ts = no_ping["data"]["timeseries"]
    ts["flow_delay_mean_ns"][2] = [0.0] * len(ts["t_ns"])
    ts["flow_goodput_bps"][2] = [0.0] * len(ts["t_ns"])
    assert plots.plot_timeseries(no_ping, "delay").axes[0].get_ylabel() == \
        "mean one-way delay (ms)"


# ---------------------------------------------------------------------------------------------
# Figures only: no backend, no pyplot


@pytest.mark.parametrize("fn,args", [
    ("plot_timeseries", ("cwnd",)), ("plot_all", ()), ("plot_cdf", ()), ("plot_box", ()),
    ("plot_bar", ()), ("plot_ampdu", ()),
])
def test_public_functions_return_figures(res: analysis.Results, doc: dict, fn: str, args):
    assert isinstance(getattr(plots, fn)(res, *args), Figure)
    assert isinstance(getattr(plots, fn)(doc, *args), Figure)   # a result document too


def test_plot_xy_returns_figure(runs_dir: Path):
    assert isinstance(plots.plot_xy(analysis.load(runs_dir), "goodput_bps"), Figure)


def _python(code: str, **env: str) -> subprocess.CompletedProcess:
    e = {k: v for k, v in os.environ.items()
         if k not in ("DISPLAY", "WAYLAND_DISPLAY", "MPLBACKEND")}
    e.update(env)
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          env=e, timeout=120)


def test_importing_plots_leaves_the_backend_alone(run_file: Path):
    # A backend chosen by the user (as a notebook's inline backend is) stays chosen.
    code = ("import matplotlib, sys\n"
            "matplotlib.use('svg')\n"
            "import lasthop, lasthop.plots, lasthop.report, lasthop.analysis_cli\n"
            "assert matplotlib.get_backend() == 'svg', matplotlib.get_backend()\n"
            "from lasthop import analysis, plots\n"
            f"res = analysis.load({str(run_file)!r})\n"
            "for kind in ('all', 'timeseries', 'box'):\n"
            "    plots.png_bytes(plots.make_plot(res, kind))\n"
            "assert matplotlib.get_backend() == 'svg', matplotlib.get_backend()\n"
            "assert 'matplotlib.pyplot' not in sys.modules\n")
    proc = _python(code)
    assert proc.returncode == 0, proc.stderr
    proc = _python("import matplotlib, lasthop.plots\n"
                   "assert matplotlib.get_backend().lower() == 'pdf'\n", MPLBACKEND="pdf")
    assert proc.returncode == 0, proc.stderr
    # Without a choice, importing resolves nothing (the automatic choice is still pending).
    proc = _python("import matplotlib\n"
                   "from matplotlib import rcsetup\n"
                   "import lasthop.plots, lasthop.report\n"
                   "assert matplotlib.rcParams._get('backend') is "
                   "rcsetup._auto_backend_sentinel\n")
    assert proc.returncode == 0, proc.stderr


def test_cli_renders_headless(run_file: Path, tmp_path: Path):
    """No display, and a GUI backend requested: `plot` and `report` render all the same.
    The report has the combined view and names cross traffic in its flow table."""
    env = {k: v for k, v in os.environ.items() if k not in ("DISPLAY", "WAYLAND_DISPLAY")}
    env["MPLBACKEND"] = "QtAgg"
    env.pop("LASTHOP_DEBUG", None)
    for args in (["plot", "-i", str(run_file), "--kind", "all", "-o", str(tmp_path / "a.png")],
                 ["report", "-i", str(run_file), "-o", str(tmp_path / "r.html")]):
        proc = subprocess.run([*lasthop_cmd(), *args], capture_output=True, text=True,
                              env=env, timeout=300)
        assert proc.returncode == 0, proc.stderr
    assert (tmp_path / "a.png").read_bytes()[:8] == MAGIC["png"]
    html = (tmp_path / "r.html").read_text()
    assert html.count('src="data:image/png;base64,') == \
        len(report.report_plots(analysis.load(run_file)))
    assert "<td>cross traffic</td>" in html and "Combined view" in html
