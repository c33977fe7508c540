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
    data_json, pcap_bytes, records_json = simulate_capture(spec.to_json(), 5, "0", records=True)
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

    for args in (["--pcap", "2"], ["--pcap", "sta1"], ["--pcap", "-1"],
                 ["--pcap", "ap", "--pcap-limit", "0"], ["--pcap-limit", "5"]):
        bad_out = tmp_path / "bad"
        r = run_cli("run", str(pcap_spec), *args, "-o", str(bad_out), "-q")
        assert r.returncode == 2, (args, r.stderr)
        assert len(r.stderr.strip().splitlines()) == 1, r.stderr
        assert not bad_out.exists(), "nothing is written on a user error"
