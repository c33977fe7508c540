"""`lasthop run --pcap NODE`: the pcap file decodes cleanly in tshark and agrees, frame by frame,
with the simulator's own per-PPDU records of the same run."""

from __future__ import annotations

import json
import shutil
import struct
import subprocess
from pathlib import Path

import pytest
from helpers import run_cli

PCAP_SPEC = """\
name = "cap"
[sim]
duration = "300ms"
warmup = "0ms"
seed = 5
[phy]
standard = "vht"
channel_width = 40
[[stations]]
mcs = 5
error_model = "fixed"
per = 0.1
[[stations]]
mcs = 7
error_model = "fixed"
per = 0.05
[[flows]]
stations = "all"
direction = "down"
pattern = "poisson"
rate = "40Mbps"
[[flows]]
stations = "all"
direction = "up"
pattern = "cbr"
rate = "8Mbps"
packet_size = 1000
"""

TSHARK = shutil.which("tshark")
needs_tshark = pytest.mark.skipif(
    TSHARK is None, reason="tshark is not installed (apt-get install tshark) - cannot check pcap")

FIELDS = ["frame.number", "frame.time_epoch", "frame.len", "radiotap.ampdu.reference",
          "radiotap.ampdu.flags.last", "radiotap.flags.badfcs", "wlan.fc.type_subtype",
          "wlan.seq", "wlan.fc.retry", "wlan.ta", "wlan.ra", "wlan.fcs.status", "ip.len",
          "ip.src", "ip.dst", "udp.srcport", "udp.dstport", "radiotap.vht.mcs.0",
          "radiotap.vht.nss.0", "radiotap.vht.bw", "_ws.col.Protocol"]

QOS_DATA, BLOCK_ACK, ACK, BEACON = 0x28, 0x19, 0x1D, 0x08


def _mac(node: str) -> str:
    if node == "ap":
        return "02:00:00:00:00:00"
    if node == "broadcast":
        return "ff:ff:ff:ff:ff:ff"
    return f"02:00:00:00:00:{int(node) + 1:02x}"


def _pcap_records(data: bytes) -> list[tuple[int, int]]:
    """(timestamp ns, length) of each record of a classic pcap file (ns magic)."""
    magic, _, _, _, _, _, linktype = struct.unpack_from("<IHHiIII", data, 0)
    assert magic == 0xA1B23C4D and linktype == 127
    off, out = 24, []
    while off < len(data):
        sec, ns, incl, orig = struct.unpack_from("<IIII", data, off)
        assert incl == orig
        out.append((sec * 1_000_000_000 + ns, incl))
        off += 16 + incl
    assert off == len(data)
    return out


def _expected_frames(records: dict) -> list[dict]:
    """What tshark should show for each pcap record, from our per-PPDU records."""
    frames = []
    for p in records["ppdus"]:
        bad = not p["received"]
        if p["kind"] == "data":
            n = len(p["mpdus"])
            for k, m in enumerate(p["mpdus"]):
                frames.append({"t": p["t_ns"], "type": QOS_DATA, "seq": m["seq"] % 4096,
                               "retry": m["retry"], "bad": not m["ok"], "ref": p["ampdu_ref"],
                               "last": k == n - 1, "ta": _mac(p["tx"]), "ra": _mac(p["rx"]),
                               "ip_len": m["ip_len"], "port": 40000 + m["flow"],
                               "phy": p["phy"]})
        else:
            kind = {"block_ack": BLOCK_ACK, "ack": ACK, "beacon": BEACON}[p["kind"]]
            frames.append({"t": p["t_ns"], "type": kind, "bad": bad, "ref": None,
                           "ta": _mac(p["tx"]), "ra": _mac(p["rx"])})
    return frames


def _tshark(path: Path) -> tuple[list[dict], str]:
    args = [TSHARK, "-r", str(path), "-n", "-o", "wlan.check_checksum:TRUE", "-T", "fields",
            "-E", "separator=\t", "-E", "occurrence=f"]
    for f in FIELDS:
        args += ["-e", f]
    proc = subprocess.run(args, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    # tshark warns about running as root; that says nothing about the file.
    stderr = "\n".join(line for line in proc.stderr.splitlines()
                       if line.strip() and "Running as user" not in line)
    rows = [dict(zip(FIELDS, line.split("\t"))) for line in proc.stdout.splitlines()]
    return rows, stderr


@pytest.fixture
def pcap_spec(tmp_path: Path) -> Path:
    p = tmp_path / "cap.toml"
    p.write_text(PCAP_SPEC)
    return p


@needs_tshark
def test_pcap_decodes_and_matches_records(simulator: None, pcap_spec: Path, tmp_path: Path
                                          ) -> None:
    from lasthop import _native
    from lasthop.capture import simulate_capture
    from lasthop.spec import load_spec

    out = tmp_path / "out"
    r = run_cli("run", str(pcap_spec), "--pcap", "0", "-o", str(out), "-q")
    assert r.returncode == 0, r.stderr
    pcap = out / "cap-s5-0.pcap"
    assert pcap.is_file() and (out / "cap-s5.json").is_file()
    assert sorted(p.name for p in out.iterdir()) == ["cap-s5-0.pcap", "cap-s5.json"]

    # The same run through the native module: identical pcap bytes, identical data to a run
    # without capture, and the per-PPDU records to compare with.
    spec = load_spec(pcap_spec)
    data_json, pcap_bytes, records_json, _ = simulate_capture(spec.to_json(), 5, "0", records=True)
    assert pcap_bytes == pcap.read_bytes()
    assert data_json == _native.run(spec.to_json(), 5, None)
    result = json.loads((out / "cap-s5.json").read_text())
    assert result["data"] == json.loads(data_json)
    records = json.loads(records_json)
    assert records["node"] == "0" and not records["truncated"]

    rows, stderr = _tshark(pcap)
    assert stderr == "", f"tshark complained: {stderr}"
    for bad in ("malformed", "cut short", "Malformed", "Expert"):
        assert bad not in stderr

    expected = _expected_frames(records)
    assert len(rows) == len(expected) == records["records"] == len(_pcap_records(pcap_bytes))

    # A-MPDUs: the same reference numbers, and the same MPDUs per reference.
    ours: dict[int, int] = {}
    for p in records["ppdus"]:
        if p["kind"] == "data":
            assert p["ampdu_ref"] is not None  # VHT: every data PPDU is an A-MPDU
            ours[p["ampdu_ref"]] = len(p["mpdus"])
    theirs: dict[int, int] = {}
    for row in rows:
        if row["radiotap.ampdu.reference"]:
            ref = int(row["radiotap.ampdu.reference"])
            theirs[ref] = theirs.get(ref, 0) + 1
    assert theirs == ours
    assert len(ours) > 50 and max(ours.values()) > 1, "expected real aggregation"

    # Frame by frame.
    n_retry = n_bad = 0
    for row, exp in zip(rows, expected):
        where = f"frame {row['frame.number']}"
        assert abs(round(float(row["frame.time_epoch"]) * 1e9) - exp["t"]) <= 1, where
        assert int(row["wlan.fc.type_subtype"], 0) == exp["type"], where
        assert row["wlan.ra"] == exp["ra"], where
        if exp["type"] != ACK:
            assert row["wlan.ta"] == exp["ta"], where
        assert row["wlan.fcs.status"] == "1", f"{where}: FCS not good"
        assert (row["radiotap.flags.badfcs"] in ("1", "True")) == exp["bad"], where
        if exp["type"] != QOS_DATA:
            assert row["radiotap.ampdu.reference"] == "", where
            continue
        assert int(row["radiotap.ampdu.reference"]) == exp["ref"], where
        assert (row["radiotap.ampdu.flags.last"] in ("1", "True")) == exp["last"], where
        assert int(row["wlan.seq"]) == exp["seq"], where
        retry = row["wlan.fc.retry"] in ("1", "True")
        assert retry == exp["retry"], where
        n_retry += retry
        n_bad += exp["bad"]
        # 802.11 QoS Data carrying IPv4/UDP between the server and station 0.
        assert row["_ws.col.Protocol"] == "UDP", where
        assert int(row["ip.len"]) == exp["ip_len"], where
        assert {row["ip.src"], row["ip.dst"]} == {"10.0.0.1", "10.0.1.1"}, where
        assert int(row["udp.srcport"]) == int(row["udp.dstport"]) == exp["port"], where
        assert int(row["frame.len"]) > exp["ip_len"] + 38, where
        assert int(row["radiotap.vht.mcs.0"]) == 5 and int(row["radiotap.vht.nss.0"]) == 1, where
    assert n_retry > 10, "expected retransmissions with PER 0.1"
    assert n_bad > 10, "expected MPDUs received in error"
    types = {int(r["wlan.fc.type_subtype"], 0) for r in rows}
    assert {QOS_DATA, BLOCK_ACK, BEACON} <= types
    # Both directions of station 0's link.
    assert {r["wlan.ta"] for r in rows if int(r["wlan.fc.type_subtype"], 0) == QOS_DATA} == {
        _mac("0"), _mac("ap")}


def test_pcap_limit_and_bad_nodes(simulator: None, pcap_spec: Path, tmp_path: Path) -> None:
    out = tmp_path / "out"
    r = run_cli("run", str(pcap_spec), "--pcap", "ap", "--pcap-limit", "100", "-o", str(out), "-q")
    assert r.returncode == 0, r.stderr
    recs = _pcap_records((out / "cap-s5-ap.pcap").read_bytes())
    assert 50 < len(recs) <= 100
    assert [t for t, _ in recs] == sorted(t for t, _ in recs)
    # A capture cut short by the limit says so (one line on stderr); a complete one does not.
    assert "warning: the pcap stopped at --pcap-limit = 100 records" in r.stderr
    assert len(r.stderr.strip().splitlines()) == 1
    full = run_cli("run", str(pcap_spec), "--pcap", "ap", "-o", str(tmp_path / "full"), "-q")
    assert full.returncode == 0 and "warning" not in full.stderr, full.stderr

    for args in (["--pcap", "2"], ["--pcap", "sta1"], ["--pcap", "-1"],
                 ["--pcap", "ap", "--pcap-limit", "0"], ["--pcap-limit", "5"]):
        bad_out = tmp_path / "bad"
        r = run_cli("run", str(pcap_spec), *args, "-o", str(bad_out), "-q")
        assert r.returncode == 2, (args, r.stderr)
        assert len(r.stderr.strip().splitlines()) == 1, r.stderr
        assert not bad_out.exists(), "nothing is written on a user error"


# TCP: a CUBIC download and an upload at station 0 (plus a UDP flow), HT with aggregation, a
# fixed PER (MAC retries) and wired losses (TCP retransmissions, SACK blocks).
TCP_SPEC = """\
name = "tcpcap"
[sim]
duration = "300ms"
warmup = "0ms"
seed = 3
[phy]
standard = "ht"
channel_width = 40
[wired]
loss = 0.01
[[stations]]
mcs = 7
error_model = "fixed"
per = 0.1
[[flows]]
stations = 0
direction = "down"
pattern = "tcp"
cc = "cubic"
[[flows]]
stations = 0
direction = "up"
pattern = "tcp"
cc = "cubic"
[[flows]]
stations = 0
direction = "up"
pattern = "cbr"
rate = "2Mbps"
packet_size = 500
"""

TCP_FIELDS = ["frame.number", "wlan.fc.type_subtype", "wlan.fc.retry", "wlan.ta",
              "radiotap.ampdu.reference", "ip.proto", "ip.len", "ip.src", "ip.dst",
              "tcp.srcport", "tcp.dstport", "tcp.stream", "tcp.seq_raw", "tcp.ack_raw", "tcp.len",
              "tcp.hdr_len", "tcp.flags", "tcp.window_size_value", "tcp.options.timestamp.tsval",
              "tcp.options.sack_le", "tcp.options.sack_re", "tcp.checksum.status",
              "tcp.analysis.retransmission", "tcp.analysis.fast_retransmission",
              "tcp.analysis.spurious_retransmission", "tcp.analysis.out_of_order",
              "udp.srcport"]


def _tshark_tcp(path: Path) -> tuple[list[dict], str]:
    # Raw sequence numbers everywhere (SACK edges included) and checksum validation on.
    args = [TSHARK, "-r", str(path), "-n", "-o", "tcp.check_checksum:TRUE",
            "-o", "tcp.relative_sequence_numbers:FALSE", "-o", "wlan.check_checksum:TRUE",
            "-T", "fields", "-E", "separator=\t", "-E", "occurrence=a", "-E", "aggregator=,"]
    for f in TCP_FIELDS:
        args += ["-e", f]
    proc = subprocess.run(args, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    stderr = "\n".join(line for line in proc.stderr.splitlines()
                       if line.strip() and "Running as user" not in line)
    rows = [dict(zip(TCP_FIELDS, line.split("\t"))) for line in proc.stdout.splitlines()]
    return rows, stderr


@needs_tshark
def test_pcap_tcp_segments(simulator: None, tmp_path: Path) -> None:
    from lasthop import _native
    from lasthop.capture import simulate_capture
    from lasthop.spec import load_spec

    spec_path = tmp_path / "tcpcap.toml"
    spec_path.write_text(TCP_SPEC)
    out = tmp_path / "out"
    r = run_cli("run", str(spec_path), "--pcap", "0", "-o", str(out), "-q")
    assert r.returncode == 0, r.stderr
    pcap = out / "tcpcap-s3-0.pcap"
    spec = load_spec(spec_path)
    data_json, pcap_bytes, records_json, _ = simulate_capture(spec.to_json(), 3, "0", records=True)
    assert pcap_bytes == pcap.read_bytes()
    # Capturing changes nothing in the results.
    assert data_json == _native.run(spec.to_json(), 3, None)
    assert json.loads((out / "tcpcap-s3.json").read_text())["data"] == json.loads(data_json)
    records = json.loads(records_json)
    assert not records["truncated"]

    rows, stderr = _tshark_tcp(pcap)
    assert stderr == "", f"tshark complained: {stderr}"
    frames = []  # (ppdu, mpdu) of every pcap record
    for p in records["ppdus"]:
        frames += [(p, m) for m in p["mpdus"]] if p["kind"] == "data" else [(p, None)]
    assert len(rows) == len(frames) == records["records"]

    # A-MPDUs: the same reference numbers and MPDUs per reference as our records.
    ours: dict[int, int] = {}
    for p in records["ppdus"]:
        if p["kind"] == "data" and p["ampdu_ref"] is not None:
            ours[p["ampdu_ref"]] = len(p["mpdus"])
    theirs: dict[int, int] = {}
    for row in rows:
        if row["radiotap.ampdu.reference"]:
            ref = int(row["radiotap.ampdu.reference"])
            theirs[ref] = theirs.get(ref, 0) + 1
    assert theirs == ours and max(ours.values()) > 1, "expected real aggregation"

    flow_down = {0: True, 1: False}  # TCP flows: index -> data goes downlink
    offsets: dict[tuple, int] = {}  # (flow, rev, data-sender end?) -> raw seq - our offset
    last_seq: dict[int, int] = {}  # tcp.stream -> highest data sequence number so far
    n_data = n_sack = n_udp = n_nonincreasing = n_tcp_retx = 0

    def same_offset(key: tuple, raw: int, rel: int, where: str) -> None:
        off = (raw - rel) % 2**32
        assert offsets.setdefault(key, off) == off, f"{where}: {key} offset {off}"

    for row, (p, m) in zip(rows, frames):
        where = f"frame {row['frame.number']}"
        if m is None:
            assert row["ip.proto"] == "", where
            continue
        assert int(row["ip.len"]) == m["ip_len"], where
        tcp = m["tcp"]
        if tcp is None:
            assert row["ip.proto"] == "17" and int(row["udp.srcport"]) == 40000 + m["flow"], where
            n_udp += 1
            continue
        assert row["ip.proto"] == "6", where
        assert row["tcp.checksum.status"] == "1", f"{where}: TCP checksum not good"
        assert int(row["tcp.flags"], 0) == 0x10, where  # ACK
        assert row["tcp.options.timestamp.tsval"] != "", where
        assert int(row["tcp.hdr_len"]) + 20 + int(row["tcp.len"]) == m["ip_len"], where
        uplink = p["tx"] != "ap"
        down = flow_down[m["flow"]]
        station_port, server_port = 40000 + m["flow"], 80
        ports = (station_port, server_port) if uplink else (server_port, station_port)
        assert (int(row["tcp.srcport"]), int(row["tcp.dstport"])) == ports, where
        assert (row["ip.src"] == "10.0.1.1") == uplink, where
        seq, ack = int(row["tcp.seq_raw"]), int(row["tcp.ack_raw"])
        assert not tcp["rev"], where
        if tcp["kind"] == "data":
            # Data goes in the flow's direction, with its own sequence space.
            assert uplink != down, where
            assert int(row["tcp.len"]) == tcp["len"] > 0, where
            same_offset((m["flow"], True), seq, tcp["seq"], where)
            same_offset((m["flow"], False), ack, 0, where)
            n_data += 1
            stream = int(row["tcp.stream"])
            flagged = any(row[f] for f in ("tcp.analysis.retransmission",
                                           "tcp.analysis.fast_retransmission",
                                           "tcp.analysis.spurious_retransmission",
                                           "tcp.analysis.out_of_order"))
            prev = last_seq.get(stream)
            if prev is not None and (seq - prev) % 2**32 >= 2**31:
                # Not increasing: a MAC retry or a TCP retransmission, and tshark says so.
                n_nonincreasing += 1
                assert m["retry"] or tcp["retransmit"], where
                assert flagged, f"{where}: tshark did not flag a repeated segment"
            else:
                last_seq[stream] = seq
            n_tcp_retx += tcp["retransmit"]
        else:
            assert uplink == down, where
            assert int(row["tcp.len"]) == 0, where
            same_offset((m["flow"], False), seq, 0, where)
            same_offset((m["flow"], True), ack, tcp["ack"], where)
            assert int(row["tcp.window_size_value"]) == min(tcp["rwnd"] >> 7, 65535), where
            les = [int(x) for x in row["tcp.options.sack_le"].split(",") if x]
            res = [int(x) for x in row["tcp.options.sack_re"].split(",") if x]
            assert len(les) == len(res) == len(tcp["sack"]), where
            for le, re_, (s, e) in zip(les, res, tcp["sack"]):
                same_offset((m["flow"], True), le, s, where)
                same_offset((m["flow"], True), re_, e, where)
            n_sack += bool(tcp["sack"])
    # Every data segment of our records is a TCP segment with payload in tshark.
    assert n_data == sum(1 for row in rows if row["tcp.len"] not in ("", "0"))
    assert n_data == sum(1 for _, m in frames if m and m["tcp"] and m["tcp"]["kind"] == "data")
    assert n_data > 500 and n_udp > 10, (n_data, n_udp)
    assert n_sack > 0, "expected ACKs with SACK blocks"
    assert n_nonincreasing > 0 and n_tcp_retx > 0, (n_nonincreasing, n_tcp_retx)
    # Per-connection initial sequence numbers: not 0, different for each end.
    assert len(set(offsets.values())) == len(offsets) == 4
