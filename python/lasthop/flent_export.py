"""Export lasthop results to flent's data file format (`lasthop export --flent`).

flent (https://flent.org) keeps one test run in a `.flent.gz` file: gzip-compressed JSON of
**data file format version 4** (what flent 2.x writes; tested with flent 2.3):

    {"version": 4,
     "metadata": {"NAME": <flent test>, "TITLE", "NOTE", "TIME", "T0", "HOST", "HOSTS",
                  "LOCAL_HOST", "LENGTH", "TOTAL_LENGTH", "STEP_SIZE", "TEST_PARAMETERS",
                  "SERIES_META": {<series>: {"UNITS", "MEAN_VALUE", ...}}, ...},
     "x_values": [seconds since T0, one per data point],
     "results": {<series>: [one value or null per x value]},
     "raw_values": {<series>: [{"t": absolute seconds, "val": value, <more keys>}, ...]}}

flent draws a file with the plots of the test named in `metadata.NAME`, and a plot finds its
series by the names that test's definition builds from `TEST_PARAMETERS` (its "data sets"), so
the series names below are the ones those tests use. The test is chosen from the run's flows:

    TCP downloads only             tcp_ndown       (download_streams = their number)
    TCP uploads only               tcp_nup         (upload_streams)
    TCP downloads and uploads      rrul_be_nflows  (download_streams, upload_streams)
    no TCP flow                    ping

Series (one data point per time-series bin, at the bin's middle; T0 is the simulation's
instant 0, written as 1970-01-01T00:00:00Z as in lasthop's pcaps):

    lasthop                                 flent series                     units
    TCP download k (flow order, from 1)     "TCP download::k"                Mbits/s
                                            ("TCP download BE::k" in rrul_be_nflows)
    TCP upload k                            "TCP upload::k" / "TCP upload BE::k"
      val      = flow_goodput_bps                                            Mbits/s
      raw keys: owd_down / owd_up = flow_delay_mean_ns (one-way delay)       ms
                tcp_rtt = flow_rtt_ns (the sender's RTT samples)             ms
                tcp_cwnd = flow_cwnd_bytes / MSS                             segments
                tcp_pacing_rate = flow_pacing_rate_bps (paced flows)        Mbits/s
    first ping flow                         "Ping (ms) ICMP"                 ms
    other ping flows                        "Ping (ms) ICMP <tag> (extra)"   ms
                                            (TEST_PARAMETERS ping_hosts = the tags)
      val      = flow_delay_mean_ns: a ping's delay is its round-trip time
    other flows (UDP, QUIC, aggctl)         "UDP download::<tag>", "QUIC download::<tag>", ...
    cross traffic (wired path only)         "Cross traffic::flow N <pattern>"
      val      = flow_goodput_bps, raw owd_*: one-way delay; flent's tests have no data set
      for them, so its plots do not draw them, but they are in the file
    station s                               (TEST_PARAMETERS wifi_stats_hosts = "ap",
                                            wifi_stats_stations = "station 0", ...)
      station_airtime_frac x bin            "wifi_stats_ap::airtime_total::station s"   us
      station_mean_ampdu_down               "wifi_stats_ap::avg_aggr_size::station s"   packets
      sum over stations of the airtime      "wifi_stats_ap::airtime_sum"                us

<tag> is "flow N station S AC" (AC: the flow's access category). A bin without a sample
(no delivery, no RTT sample, no A-MPDU) has no value (null; no raw point, or no raw key).
SERIES_META says per series which lasthop flow it is (LASTHOP_FLOW, LASTHOP_STATION: null for
cross traffic, LASTHOP_DIRECTION, LASTHOP_PATTERN, LASTHOP_AC, LASTHOP_DESCRIPTION: what the
values measure) and MEAN_VALUE, the flow's figure over the measurement window (goodput, or a
ping's mean RTT), which flent's bar and box plots across files use. flent computes the sums,
averages and fairness indices of its tests ("TCP download sum", "Ping (ms) avg", ...) itself
when it loads the file. metadata.LASTHOP holds the provenance: code version, spec name, seed,
source file and its checksum, sweep point and overrides. flent's CDF and box plots leave out
DELAY seconds at both ends of the run: DELAY is the run's warm-up.

Series a chosen test defines but the run has no data for stay empty in flent's plots (a
legend entry without a line): its "Ping (ms) ICMP" without a ping flow, rrul_be_nflows's
"Ping (ms) UDP BE", the per-station airtime_rx/airtime_tx (lasthop records their sum).

Not exported (flent has no series for them): per-node backlog and queue limit (flent's qdisc
plots are in bytes), PHY rates, SNR, in-flight bytes, retransmits per bin, the aggctl series.
"""

from __future__ import annotations

import argparse
import gzip
import json
import math
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Sequence

__all__ = ["FLENT_FORMAT_VERSION", "SUFFIX", "FlentExportError", "choose_test", "to_flent",
           "flent_bytes", "export_run", "export_sweep", "add_parser", "cmd_export"]

FLENT_FORMAT_VERSION = 4
SUFFIX = ".flent.gz"
EPOCH = "1970-01-01T00:00:00.000000Z"
WIFI_HOST = "ap"
WIFI_INTERFACE = "sim"
MBIT = 1e6
MS = 1e6  # ns per ms
TCP_HEADERS = 52  # IP + TCP with timestamps: MSS = packet_size - 52 (docs/spec.md)

# Per flent test: the series name format of the k-th TCP stream (k from 1) in each direction.
TESTS: dict[str, dict[str, str]] = {
    "tcp_ndown": {"down": "TCP download::{k}"},
    "tcp_nup": {"up": "TCP upload::{k}"},
    "rrul_be_nflows": {"down": "TCP download BE::{k}", "up": "TCP upload BE::{k}"},
    "ping": {},
}
STREAM_PARAMS = {"down": "download_streams", "up": "upload_streams"}
DIRECTION_WORD = {"down": "download", "up": "upload"}
OWD_KEY = {"down": "owd_down", "up": "owd_up", "cross": "owd_down"}


class FlentExportError(Exception):
    """The input cannot be exported (the message is one line naming the file)."""


@dataclass
class _Series:
    name: str
    units: str
    values: list[float | None]
    raw_keys: dict[str, list[float | None]] = field(default_factory=dict)
    meta: dict[str, Any] = field(default_factory=dict)


# --- the mapping ----------------------------------------------------------------------------

def _flow_kind(flow: dict[str, Any]) -> str:
    """'tcp' (a TCP data flow), 'ping', 'cross' or 'other'."""
    if flow.get("direction") == "cross" or flow.get("station") is None:
        return "cross"
    pattern = flow.get("pattern")
    if pattern == "ping":
        return "ping"
    if pattern == "tcp" or (pattern == "external" and _external_proto(flow) == "tcp"):
        return "tcp" if flow.get("direction") in ("down", "up") else "other"
    return "other"


def _external_proto(flow: dict[str, Any]) -> str:
    label = flow.get("external")
    return label.split()[0].lower() if isinstance(label, str) and label.split() else ""


def choose_test(flows: Sequence[dict[str, Any]]) -> str:
    """The flent test whose plots fit `flows` (entries of data.flows)."""
    dirs = {f.get("direction") for f in flows if _flow_kind(f) == "tcp"}
    if dirs == {"down"}:
        return "tcp_ndown"
    if dirs == {"up"}:
        return "tcp_nup"
    if dirs:
        return "rrul_be_nflows"
    return "ping"


def _where(path: str) -> str:
    return f"{path}: " if path else ""


def _rows(ts: dict[str, Any], key: str, n: int, bins: int, where: str, required: bool = False
          ) -> list[list[float]]:
    """`ts[key]`: n rows of `bins` numbers, or of none (a series the row does not have)."""
    rows = ts.get(key)
    if rows is None and not required:
        return [[] for _ in range(n)]
    if not isinstance(rows, list) or len(rows) != n:
        raise FlentExportError(f"{where}data.timeseries.{key}: expected {n} rows")
    for i, row in enumerate(rows):
        if not isinstance(row, list) or (row and len(row) != bins):
            raise FlentExportError(f"{where}data.timeseries.{key}[{i}]: expected {bins} "
                                   "values, one per bin of t_ns")
        if not all(isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)
                   for v in row):
            raise FlentExportError(f"{where}data.timeseries.{key}[{i}]: not all numbers")
    return rows


def _positive(v: float, scale: float) -> float | None:
    """v / scale, or None for 0 (a bin without a sample)."""
    return v / scale if v > 0 else None


def _ac(spec_flow: dict[str, Any] | None, spec: dict[str, Any]) -> str:
    ac = (spec_flow or {}).get("ac") or (spec.get("mac") or {}).get("access_category")
    return str(ac) if ac else "BE"


def _describe(flow: dict[str, Any], spec_flow: dict[str, Any] | None, kind: str, ac: str) -> str:
    fid = flow["id"]
    pattern = flow.get("pattern")
    if kind == "cross":
        return (f"flow {fid}: cross traffic ({pattern}), server -> AP over the wired link; "
                "val: goodput (Mbit/s) per bin; owd_down: mean one-way delay (ms)")
    sta = flow.get("station")
    if kind == "ping":
        return (f"flow {fid}: ping between the server and station {sta} ({ac}); val: mean "
                "round-trip time (ms) of the replies received in the bin")
    way = {"down": f"server -> station {sta}", "up": f"station {sta} -> server"}.get(
        str(flow.get("direction")), f"station {sta}")
    proto = "TCP" if kind == "tcp" else _proto_word(flow)
    cc = (spec_flow or {}).get("cc") if pattern == "tcp" else None
    what = f"{proto} {cc}" if cc else proto
    app = (spec_flow or {}).get("app") if pattern == "tcp" else None
    kind_of = f" ({app})" if app and app != "bulk" else "" if pattern == "tcp" else f" ({pattern})"
    text = (f"flow {fid}: {what} {DIRECTION_WORD.get(str(flow.get('direction')), 'flow')}"
            f"{kind_of}, {way} ({ac}); val: goodput (Mbit/s) per bin; "
            f"{OWD_KEY.get(str(flow.get('direction')), 'owd_down')}: mean one-way delay (ms)")
    if flow.get("external"):
        text += f"; captured as {flow['external']}"
    return text


def _proto_word(flow: dict[str, Any]) -> str:
    pattern = flow.get("pattern")
    if pattern == "quic":
        return "QUIC"
    if pattern == "external":
        return _external_proto(flow).upper() or "External"
    return "UDP"


def to_flent(doc: dict[str, Any], *, source: str = "", data_filename: str = "run" + SUFFIX,
             extra: dict[str, Any] | None = None) -> dict[str, Any]:
    """The flent document (format version 4) of lasthop result document `doc`.

    `source` names the result file (in errors and in metadata.LASTHOP), `data_filename` is the
    name of the file the document goes to, `extra` more provenance for metadata.LASTHOP (a
    sweep's point and overrides). Raises FlentExportError for a result without usable time
    series."""
    where = _where(source)
    spec = doc.get("spec") or {}
    data = doc.get("data") or {}
    ts, flows = _timeseries_and_flows(data, where)
    t_ns = ts["t_ns"]
    bin_ns = ts["bin_ns"]
    bins = len(t_ns)
    sim = spec.get("sim") or {}
    duration_ns = int((data.get("stats") or {}).get("sim_time_ns")
                      or sim.get("duration_ns") or t_ns[-1] + bin_ns)
    warmup_ns = int(sim.get("warmup_ns") or 0)
    # Each bin's value at the bin's middle (the last bin may be shorter).
    ends = [min(t + bin_ns, duration_ns) if duration_ns > t else t + bin_ns for t in t_ns]
    x = [(t + end) / 2 / 1e9 for t, end in zip(t_ns, ends)]

    test = choose_test(flows)
    series, flow_map, params = _flow_series(ts, flows, spec, TESTS[test], bins, where)
    series += _station_series(ts, data, bins, t_ns, ends, where, params)

    names = [s.name for s in series]
    if len(set(names)) != len(names):
        raise FlentExportError(f"{where}two flows map to the same flent series")
    code_version = str(doc.get("code_version", ""))
    name = str(spec.get("name") or "run")
    seed = doc.get("seed")
    lasthop = {
        "format": "lasthop.flent", "code_version": code_version, "spec_name": name,
        "seed": seed, "source": os.path.basename(source) if source else None,
        "result_checksum": doc.get("checksum"), "flows": flow_map, **(extra or {}),
    }
    title = name
    if extra and extra.get("overrides"):
        title += " [" + ", ".join(f"{k}={_value_text(v)}"
                                  for k, v in extra["overrides"].items()) + "]"
    title += f" seed {seed}, simulated by lasthop {code_version}"
    metadata: dict[str, Any] = {
        "NAME": test, "TITLE": title, "NOTE": spec.get("description") or None,
        "TIME": EPOCH, "T0": EPOCH, "HOST": "server", "HOSTS": ["server"],
        "LOCAL_HOST": "lasthop", "LENGTH": (duration_ns - warmup_ns) / 1e9,
        "TOTAL_LENGTH": duration_ns / 1e9, "STEP_SIZE": bin_ns / 1e9,
        "DELAY": warmup_ns / 1e9, "TEST_PARAMETERS": params, "IP_VERSION": 4,
        "FLENT_VERSION": None, "BATCH_NAME": None, "BATCH_TIME": None, "BATCH_TITLE": None,
        "BATCH_UUID": None, "DATA_FILENAME": data_filename, "LASTHOP": lasthop,
        "SERIES_META": {s.name: {"UNITS": s.units, "RUNNER": "lasthop", **s.meta}
                        for s in series},
    }
    results = {s.name: s.values for s in series}
    raw_values = {s.name: _raw(s, x) for s in series}
    return {"version": FLENT_FORMAT_VERSION, "metadata": metadata, "x_values": x,
            "results": results, "raw_values": raw_values}


def _timeseries_and_flows(data: dict[str, Any], where: str
                          ) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """`data.timeseries` with its bins (t_ns, bin_ns) and `data.flows`, checked."""
    ts = data.get("timeseries")
    flows = data.get("flows")
    if not isinstance(ts, dict) or not isinstance(ts.get("t_ns"), list) or not ts["t_ns"]:
        raise FlentExportError(f"{where}no time series to export (data.timeseries.t_ns)")
    if not isinstance(flows, list) or not all(isinstance(f, dict) and isinstance(f.get("id"), int)
                                              for f in flows):
        raise FlentExportError(f"{where}data.flows is not a list of flows")
    t_ns = ts["t_ns"]
    bin_ns = ts.get("bin_ns")
    if not isinstance(bin_ns, int) or bin_ns <= 0 or not all(isinstance(t, int) for t in t_ns):
        raise FlentExportError(f"{where}data.timeseries: bin_ns and t_ns must be integers")
    return ts, flows


def _flow_series(ts: dict[str, Any], flows: list[dict[str, Any]], spec: dict[str, Any],
                 formats: dict[str, str], bins: int, where: str
                 ) -> tuple[list[_Series], list[dict[str, Any]], dict[str, str]]:
    """One series per flow (a ping's RTT, or goodput with the one-way delay and TCP's keys),
    each flow's series for metadata.LASTHOP, and the test's parameters (streams per direction
    as `formats` names them, the extra ping hosts)."""
    n_flows = len(flows)
    goodput = _rows(ts, "flow_goodput_bps", n_flows, bins, where, required=True)
    delay = _rows(ts, "flow_delay_mean_ns", n_flows, bins, where, required=True)
    rtt = _rows(ts, "flow_rtt_ns", n_flows, bins, where)
    cwnd = _rows(ts, "flow_cwnd_bytes", n_flows, bins, where)
    pacing = _rows(ts, "flow_pacing_rate_bps", n_flows, bins, where)
    spec_flows = spec.get("flows") if isinstance(spec.get("flows"), list) else []
    counts = {"down": 0, "up": 0}
    series: list[_Series] = []
    ping_tags: list[str] = []
    first_ping_done = False
    flow_map: list[dict[str, Any]] = []
    for i, flow in enumerate(flows):
        fid = flow["id"]
        spec_flow = (spec_flows[fid] if flow.get("pattern") != "external"
                     and 0 <= fid < len(spec_flows) else None)
        kind = _flow_kind(flow)
        ac = _ac(spec_flow, spec)
        direction = str(flow.get("direction"))
        station = None if kind == "cross" else flow.get("station")
        tag = (f"flow {fid} cross traffic" if kind == "cross"
               else f"flow {fid} station {station} {ac}")
        meta: dict[str, Any] = {
            "LASTHOP_FLOW": fid, "LASTHOP_STATION": station, "LASTHOP_DIRECTION": direction,
            "LASTHOP_PATTERN": flow.get("pattern"), "LASTHOP_AC": None if kind == "cross" else ac,
            "LASTHOP_DESCRIPTION": _describe(flow, spec_flow, kind, ac),
        }
        if kind == "ping":
            if not first_ping_done:
                name = "Ping (ms) ICMP"
                first_ping_done = True
            else:
                name = f"Ping (ms) ICMP {tag} (extra)"
                ping_tags.append(tag)
            mean = (flow.get("delay_ns") or {}).get("mean")
            samples = (flow.get("delay_ns") or {}).get("samples")
            meta["MEAN_VALUE"] = mean / MS if samples and isinstance(mean, (int, float)) else None
            s = _Series(name, "ms", [_positive(v, MS) for v in delay[i]], meta=meta)
        else:
            if kind == "tcp":
                counts[direction] += 1
                name = formats[direction].format(k=counts[direction])
            elif kind == "cross":
                name = f"Cross traffic::flow {fid} {flow.get('pattern')}"
            else:
                word = DIRECTION_WORD.get(direction, direction)
                name = f"{_proto_word(flow)} {word}::{tag}"
            g = flow.get("goodput_bps")
            meta["MEAN_VALUE"] = g / MBIT if isinstance(g, (int, float)) else None
            s = _Series(name, "Mbits/s", [v / MBIT for v in goodput[i]], meta=meta)
            s.raw_keys[OWD_KEY.get(direction, "owd_down")] = [_positive(v, MS) for v in delay[i]]
            if kind == "tcp":
                _tcp_keys(s, flow, spec_flow, rtt[i], cwnd[i], pacing[i])
        series.append(s)
        flow_map.append({"flow": fid, "series": s.name})
    params: dict[str, str] = {STREAM_PARAMS[d]: str(counts[d]) for d in formats}
    if ping_tags:
        params["ping_hosts"] = ",".join(ping_tags)
    return series, flow_map, params


def _tcp_keys(s: _Series, flow: dict[str, Any], spec_flow: dict[str, Any] | None,
              rtt: list[float], cwnd: list[float], pacing: list[float]) -> None:
    if rtt:
        s.raw_keys["tcp_rtt"] = [_positive(v, MS) for v in rtt]
    size = (spec_flow or {}).get("packet_size")
    if cwnd and isinstance(size, int) and size > TCP_HEADERS:
        mss = size - TCP_HEADERS
        s.raw_keys["tcp_cwnd"] = [v / mss for v in cwnd]
        s.meta["TCP_MSS"] = mss
    if pacing and any(v > 0 for v in pacing):
        s.raw_keys["tcp_pacing_rate"] = [v / MBIT for v in pacing]
    tcp = flow.get("tcp") or {}
    if tcp.get("cc") or (spec_flow or {}).get("cc"):
        s.meta["CONG_CONTROL"] = tcp.get("cc") or (spec_flow or {}).get("cc")
    if isinstance(tcp.get("retransmits"), int):
        s.meta["TCP_RETRANSMIT"] = tcp["retransmits"]


def _station_series(ts: dict[str, Any], data: dict[str, Any], bins: int, t_ns: list[int],
                    ends: list[int], where: str, params: dict[str, str]) -> list[_Series]:
    stations = data.get("stations")
    n = len(stations) if isinstance(stations, list) else 0
    if n == 0:
        return []
    airtime = _rows(ts, "station_airtime_frac", n, bins, where)
    ampdu = _rows(ts, "station_mean_ampdu_down", n, bins, where)
    lengths_us = [(end - t) / 1e3 for t, end in zip(t_ns, ends)]
    names = [f"station {i}" for i in range(n)]
    out: list[_Series] = []
    sums: list[float] = [0.0] * bins
    have_airtime = False
    for i in range(n):
        meta = {"LASTHOP_STATION": i}
        if airtime[i]:
            have_airtime = True
            vals = [f * us for f, us in zip(airtime[i], lengths_us)]
            sums = [a + b for a, b in zip(sums, vals)]
            out.append(_Series(f"wifi_stats_{WIFI_HOST}::airtime_total::{names[i]}", "us", vals,
                               meta={**meta, "LASTHOP_DESCRIPTION": f"station {i}: airtime of "
                                     "its data exchanges, both directions, after warm-up "
                                     "(us per bin)"}))
        if ampdu[i]:
            out.append(_Series(f"wifi_stats_{WIFI_HOST}::avg_aggr_size::{names[i]}", "packets",
                               [_positive(v, 1.0) for v in ampdu[i]],
                               meta={**meta, "LASTHOP_DESCRIPTION": f"station {i}: mean MPDUs "
                                     "per downlink A-MPDU started in the bin"}))
    if not out:
        return []
    if have_airtime:
        out.append(_Series(f"wifi_stats_{WIFI_HOST}::airtime_sum", "us", sums,
                           meta={"LASTHOP_DESCRIPTION": "airtime of all stations (us per bin)"}))
    params["wifi_stats_hosts"] = WIFI_HOST
    params["wifi_stats_interfaces"] = WIFI_INTERFACE
    params["wifi_stats_stations"] = ",".join(names)
    return out


def _raw(s: _Series, x: list[float]) -> list[dict[str, float]]:
    """flent's raw points of series `s`: one per bin that has a value or a raw key."""
    out = []
    for b, t in enumerate(x):
        point: dict[str, float] = {}
        if s.values[b] is not None:
            point["val"] = s.values[b]  # type: ignore[assignment]
        for key, vals in s.raw_keys.items():
            if vals[b] is not None:
                point[key] = vals[b]  # type: ignore[assignment]
        if point:
            out.append({"t": t, **point})
    return out


def _value_text(v: Any) -> str:
    return v if isinstance(v, str) else json.dumps(v, sort_keys=True, separators=(",", ":"))


def flent_bytes(flent_doc: dict[str, Any]) -> bytes:
    """The `.flent.gz` file content: deterministic (sorted keys, gzip without a time stamp)."""
    text = json.dumps(flent_doc, sort_keys=True, separators=(",", ":"), ensure_ascii=True,
                      allow_nan=False)
    return gzip.compress(text.encode("ascii"), compresslevel=9, mtime=0)


# --- files ----------------------------------------------------------------------------------

def _load(path: Path) -> dict[str, Any]:
    from .results import ResultError, load_result

    try:
        return load_result(path)
    except ResultError as e:
        raise FlentExportError(str(e)) from None


def default_out(run: Path) -> Path:
    """RUN.json -> RUN.flent.gz beside it."""
    stem = run.name[:-5] if run.name.endswith(".json") else run.name
    return run.with_name(stem + SUFFIX)


def _write(items: list[tuple[Path, bytes]]) -> list[Path]:
    """Write every (path, content) atomically; on failure remove what this call wrote."""
    from .results import write_atomic

    written: list[Path] = []
    try:
        for path, content in items:
            path.parent.mkdir(parents=True, exist_ok=True)
            write_atomic(path, content)
            written.append(path)
    except OSError as e:
        for p in written:
            p.unlink(missing_ok=True)
        what = e.filename or (items[len(written)][0] if len(written) < len(items) else "")
        raise FlentExportError(f"cannot write {str(what)!r}: {e.strerror or e}; "
                               "nothing was kept") from None
    return written


def export_run(run: str | Path, out: str | Path | None = None) -> Path:
    """Write the flent file of result file `run` to `out` (default: RUN.flent.gz beside it; an
    existing directory: that name in it). Returns the path written."""
    run = Path(run)
    if run.is_dir():
        raise FlentExportError(f"{run}: a directory without sweep.json (give a result file or "
                               "a sweep directory)")
    target = default_out(run) if out is None else Path(out)
    if out is not None and target.is_dir():
        target = target / default_out(run).name
    elif not target.name.endswith(SUFFIX):
        raise FlentExportError(f"-o {target}: the file name must end with {SUFFIX}")
    _check_parent(target)
    doc = _load(run)
    content = flent_bytes(to_flent(doc, source=str(run), data_filename=target.name))
    return _write([(target, content)])[0]


def _check_parent(target: Path) -> None:
    from .results import unwritable_dir

    problem = unwritable_dir(target.absolute().parent)
    if problem:
        raise FlentExportError(f"-o {target}: {problem}")


def export_sweep(sweep_dir: str | Path, out_dir: str | Path) -> list[Path]:
    """Write one flent file per run of sweep directory `sweep_dir` into `out_dir`, named
    `<sweep name>-p<point>-s<seed>.flent.gz`. Every run is converted before anything is
    written. Returns the paths written."""
    from .results import file_sha256, unwritable_dir

    sweep_dir, out_dir = Path(sweep_dir), Path(out_dir)
    manifest_path = sweep_dir / "sweep.json"
    try:
        manifest = json.loads(manifest_path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as e:
        raise FlentExportError(f"{manifest_path}: not a readable sweep manifest ({e})") from None
    if not isinstance(manifest, dict) or manifest.get("format") != "lasthop.sweep" \
            or not isinstance(manifest.get("runs"), list):
        raise FlentExportError(f"{manifest_path}: not a lasthop sweep manifest")
    runs = manifest["runs"]
    if not runs:
        raise FlentExportError(f"{manifest_path}: the sweep has no runs")
    if out_dir.exists() and not out_dir.is_dir():
        raise FlentExportError(f"-o {out_dir}: exists and is not a directory")
    problem = unwritable_dir(out_dir)
    if problem:
        raise FlentExportError(f"-o: {problem}")
    name = str(manifest.get("name") or "sweep")
    items: list[tuple[Path, bytes]] = []
    for rec in sorted(runs, key=lambda r: (r.get("point", 0), r.get("seed", 0))):
        try:
            point, seed, file = int(rec["point"]), int(rec["seed"]), str(rec["file"])
        except (KeyError, TypeError, ValueError):
            raise FlentExportError(f"{manifest_path}: a run record without point, seed and "
                                   "file (the sweep has not started its runs?)") from None
        path = Path(file) if Path(file).is_absolute() else sweep_dir / file
        if not path.is_file():
            raise FlentExportError(f"{path}: run file missing (has the sweep finished?)")
        want = rec.get("sha256")
        if want is not None and file_sha256(path) != want:
            raise FlentExportError(f"{path}: changed after the sweep wrote it")
        target = out_dir / f"{name}-p{point}-s{seed}{SUFFIX}"
        extra = {"sweep": name, "point": point, "overrides": rec.get("overrides") or {}}
        doc = _load(path)
        items.append((target, flent_bytes(to_flent(doc, source=str(path),
                                                   data_filename=target.name, extra=extra))))
    return _write(items)


# --- command line ---------------------------------------------------------------------------

def add_parser(sub: Any) -> None:
    e = sub.add_parser("export", help="export results to another tool's format (--flent)")
    e.add_argument("input", metavar="RESULTS", help="a result file (RUN.json) or a sweep directory")
    e.add_argument("--flent", action="store_true",
                   help="flent's data file format (.flent.gz; open it with `flent -i FILE`)")
    e.add_argument("-o", "--out", default=None, metavar="OUT",
                   help="a result file: FILE.flent.gz (default: beside RUN.json); a sweep: the "
                        "directory for one .flent.gz per run (required)")


def cmd_export(args: argparse.Namespace) -> int:
    from .errors import EXIT_OK, UserError

    if not args.flent:
        raise UserError("export: name the format: --flent")
    src = Path(args.input)
    try:
        if src.is_dir() and (src / "sweep.json").is_file():
            if args.out is None or not str(args.out).strip():
                raise FlentExportError(f"{src}: a sweep directory needs -o DIR for its "
                                       ".flent.gz files")
            paths = export_sweep(src, args.out)
        else:
            if args.out is not None and not str(args.out).strip():
                raise FlentExportError("-o: empty file name")
            paths = [export_run(src, args.out)]
    except FlentExportError as e:
        raise UserError(str(e)) from None
    for p in paths:
        print(p)
    return EXIT_OK
