#!/usr/bin/env python3
"""Cross-check lasthop's cell model against ns-3 on the same scenarios.

Needs the Debian packages libns3-dev, libgsl-dev and libsqlite3-dev (ns-3.37) and a built
lasthop (`make demo` or `make test` creates .venv). Run from the repository root:

    .venv/bin/python reference/ns3/compare.py            # writes reference/ns3/comparison.csv

ns-3 is used only as an external program (reference/ns3/cell.cc links against it); lasthop
contains no ns-3 code. Both sides run saturated UDP with 1500-byte IP packets, constant MCS, no
channel errors, beacons every 102.4 ms, no RTS/CTS, and measure IP goodput after a warm-up.
"""
from __future__ import annotations

import csv
import json
import shutil
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
BIN = Path("/tmp/lasthop-ns3-cell")

# (label, ns-3 args, lasthop overrides)
SCENARIOS = [
    ("vht80 mcs9x2 1 sta down, no aggregation", dict(standard="ac", mcs=9, nss=2, width=80, maxMpdus=1, n=1, down=1),
     dict(std="vht", width=80, mcs=9, nss=2, mpdus=1, n=1, dir="down")),
    ("vht80 mcs9x2 1 sta down, A-MPDU 8", dict(standard="ac", mcs=9, nss=2, width=80, maxMpdus=8, n=1, down=1),
     dict(std="vht", width=80, mcs=9, nss=2, mpdus=8, n=1, dir="down")),
    ("vht80 mcs9x2 1 sta down, A-MPDU 32", dict(standard="ac", mcs=9, nss=2, width=80, maxMpdus=32, n=1, down=1),
     dict(std="vht", width=80, mcs=9, nss=2, mpdus=32, n=1, dir="down")),
    ("vht80 mcs9x2 1 sta down, A-MPDU 64", dict(standard="ac", mcs=9, nss=2, width=80, maxMpdus=64, n=1, down=1),
     dict(std="vht", width=80, mcs=9, nss=2, mpdus=64, n=1, dir="down")),
    ("vht80 mcs7x1 4 sta down, A-MPDU 32", dict(standard="ac", mcs=7, nss=1, width=80, maxMpdus=32, n=4, down=1),
     dict(std="vht", width=80, mcs=7, nss=1, mpdus=32, n=4, dir="down")),
    ("vht80 mcs7x1 4 sta up, A-MPDU 32", dict(standard="ac", mcs=7, nss=1, width=80, maxMpdus=32, n=4, down=0),
     dict(std="vht", width=80, mcs=7, nss=1, mpdus=32, n=4, dir="up")),
    ("ht20 mcs7x1 1 sta down, A-MPDU 16", dict(standard="n", mcs=7, nss=1, width=20, maxMpdus=16, n=1, down=1),
     dict(std="ht", width=20, mcs=7, nss=1, mpdus=16, n=1, dir="down")),
    ("11a 54M 1 sta down", dict(standard="a", mcs=7, n=1, down=1), dict(std="ofdm", width=20, mcs=7, nss=1, mpdus=1, n=1, dir="down")),
    ("11a 54M 5 sta up", dict(standard="a", mcs=7, n=5, down=0), dict(std="ofdm", width=20, mcs=7, nss=1, mpdus=1, n=5, dir="up")),
    ("11a 54M 10 sta up", dict(standard="a", mcs=7, n=10, down=0), dict(std="ofdm", width=20, mcs=7, nss=1, mpdus=1, n=10, dir="up")),
    ("11a 54M 20 sta up", dict(standard="a", mcs=7, n=20, down=0), dict(std="ofdm", width=20, mcs=7, nss=1, mpdus=1, n=20, dir="up")),
]

DURATION_S, WARMUP_S = 8, 3


def build_ns3() -> None:
    libs = "ns3-wifi ns3-applications ns3-internet ns3-mobility ns3-network ns3-core"
    flags = subprocess.run(["pkg-config", "--cflags", "--libs", *libs.split()], check=True,
                           capture_output=True, text=True).stdout.split()
    subprocess.run(["g++", "-O2", "-std=c++17", str(HERE / "cell.cc"), "-o", str(BIN), *flags], check=True)


def run_ns3(args: dict) -> float:
    cmd = [str(BIN), f"--time={DURATION_S}", f"--warmup={WARMUP_S}"] + [f"--{k}={v}" for k, v in args.items()]
    out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
    return float(out.split()[-1])


def lasthop_spec(o: dict) -> dict:
    dur = DURATION_S * 10**9
    agg = o["mpdus"] > 1
    return {
        "name": "ns3-compare", "description": "",
        "sim": {"duration_ns": dur, "warmup_ns": WARMUP_S * 10**9, "seed": 1, "bin_ns": 10**9},
        "phy": {"standard": o["std"], "band": "5GHz", "channel_width": o["width"], "guard_interval": 800,
                "control_rate_bps": 24_000_000},
        "mac": {"aggregation": agg, "max_ampdu_mpdus": o["mpdus"], "max_ampdu_bytes": 0,
                "max_ppdu_time_ns": 5_484_000, "retry_limit": 7, "beacon_interval_ns": 102_400_000,
                "access_category": "BE", "cw_min": None, "cw_max": None, "aifsn": None},
        "ap": {"queue_limit": 1000, "scheduler": "round_robin"},
        "wired": {"rate_bps": 10_000_000_000, "delay_ns": 0, "queue_limit": 1000, "loss": 0.0},
        "stations": [{"mcs": o["mcs"], "nss": o["nss"], "error_model": "none", "per": 0.0, "snr_db": 30.0,
                      "queue_limit": 1000} for _ in range(o["n"])],
        "flows": [{"station": i, "direction": o["dir"], "pattern": "saturated", "rate_bps": 0, "packet_size": 1500,
                   "start_ns": 0, "stop_ns": dur} for i in range(o["n"])],
    }


def run_lasthop(o: dict) -> float:
    from lasthop import _native
    data = json.loads(_native.run(json.dumps(lasthop_spec(o)), 1, None))
    return sum(f["goodput_bps"] for f in data["flows"])


def main() -> int:
    if shutil.which("pkg-config") is None or subprocess.run(["pkg-config", "--exists", "ns3-wifi"]).returncode:
        print("ns-3 not found: apt-get install libns3-dev libgsl-dev libsqlite3-dev", file=sys.stderr)
        return 2
    build_ns3()
    rows = []
    for label, ns3_args, ours in SCENARIOS:
        a = run_ns3(ns3_args)
        b = run_lasthop(ours)
        rows.append([label, f"{a / 1e6:.2f}", f"{b / 1e6:.2f}", f"{(b / a - 1) * 100:+.1f}"])
        print(f"{label:42s} ns-3 {a / 1e6:8.2f}  lasthop {b / 1e6:8.2f} Mb/s  ({(b / a - 1) * 100:+.1f}%)", flush=True)
    with open(HERE / "comparison.csv", "w", newline="") as fh:
        w = csv.writer(fh, lineterminator="\n")
        w.writerow(["scenario", "ns3_goodput_mbps", "lasthop_goodput_mbps", "difference_pct"])
        w.writerows(rows)
    return 0


if __name__ == "__main__":
    sys.exit(main())
