#!/usr/bin/env python3
"""Cross-check lasthop's cell against ns-3 under given loads: delay below saturation, the AP's
shared queue under overload, and dense saturated cells.

Needs the Debian packages libns3-dev, libgsl-dev and libsqlite3-dev (ns-3.37) and a built
lasthop. Run from the repository root (about 5 to 8 minutes on two cores):

    .venv/bin/python reference/ns3/compare_load.py      # writes reference/ns3/load.csv
    .venv/bin/python reference/ns3/compare_load.py --lasthop-only   # ns-3's columns kept, a minute

ns-3 is used only as an external program (reference/ns3/load.cc links against it); lasthop
contains no ns-3 code. Both sides: VHT 80 MHz MCS 9 with 2 streams (or as given), no channel
errors, no RTS/CTS, CBR UDP downlinks of 1500-byte IP packets, measured after the warm-up
(ns-3: packets sent between the warm-up and 0.5 s before the end), one-way delay from the sender's UDP socket (ns-3)
or the packet's creation at the server (lasthop; the wired link is 10 Gb/s with no delay).
ns-3's AP runs its traffic-control qdisc (FqCoDelQueueDisc or FifoQueueDisc, `limit` packets)
over a 500-packet WifiMacQueue per AC; lasthop's runs `ap.qdisc` with `ap.queue_limit`, through
the pull driver, and again (the "firmware" rows, same ns-3 run) through the firmware-queue driver
with 500 frames below mac80211 (`ap.driver = "firmware"`, `hw_queue_limit = 500`), without and
with the airtime queue limit, and (the "macq" rows) with ns-3's MAC queue itself below the
qdisc: a 500-frame driver stage the qdisc hands frames down to while it has room, from which the
scheduler builds every station's aggregates (`ap.driver = "ath9k"`, `ath9k_qdepth = 500`).
Station 0's load is Poisson in the "poisson" rows (lasthop only; ns-3's is CBR there too).
"""
from __future__ import annotations

import csv
import json
import shutil
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
BIN = Path("/tmp/lasthop-ns3-load")
DURATION_S, WARMUP_S = 6, 2

# The firmware-queue driver of the "firmware" rows: 500 frames below mac80211 (ns-3's
# WifiMacQueue), without and with mac80211's airtime queue limit.
FIRMWARE = {"driver": "firmware", "hw_queue_limit": 500, "aql": False}
FIRMWARE_AQL = {**FIRMWARE, "aql": True}
# ... with mac80211's airtime fairness (the DRR of `ieee80211_next_txq`, on where the driver
# reports airtime: ath10k sets NL80211_EXT_FEATURE_AIRTIME_FAIRNESS with
# WMI_SERVICE_REPORT_AIRTIME); the other rows schedule round-robin, as ns-3 has no airtime DRR.
FIRMWARE_AIRTIME = {**FIRMWARE, "scheduler": "airtime"}

# ns-3's WifiMacQueue (500 packets per AC, MaxSize's default) as a driver stage below the qdisc.
MAC_QUEUE = {"driver": "ath9k", "ath9k_qdepth": 500}

# (group, label, n, rate0 Mb/s, rate Mb/s, qdisc, lasthop's AP driver keys, station 0 Poisson)
SCENARIOS = (
    [("delay-1sta", f"1 sta {r} Mb/s", 1, r, r, "fq_codel", {}, False) for r in (100, 200, 300, 400, 500, 600)]
    + [("delay-10sta", f"10 sta x {r // 10} Mb/s", 10, r // 10, r // 10, "fq_codel", {}, False) for r in (100, 300, 500)]
    + [("overload", f"10 sta, 700 + 9 x 10 Mb/s, {q}", 10, 700, 10, q, {}, False) for q in ("fq_codel", "fifo")]
    + [("overload-20", f"20 sta x 100 Mb/s, {q}", 20, 100, 100, q, {}, False) for q in ("fq_codel", "fifo")]
    + [("dense", f"{n} sta saturated", n, 2000 // n, 2000 // n, "fq_codel", {}, False) for n in (50, 100)]
    + [("firmware", f"10 sta, 700 + 9 x 10 Mb/s, FQ-CoDel, firmware 500{a}{p}", 10, 700, 10, "fq_codel", fw, poisson)
       for fw, a in ((FIRMWARE, ""), (FIRMWARE_AQL, " + AQL")) for poisson, p in ((False, ""), (True, ", poisson"))]
    + [("firmware", f"20 sta x 100 Mb/s, FQ-CoDel, firmware 500{a}", 20, 100, 100, "fq_codel", fw, False)
       for fw, a in ((FIRMWARE, ""), (FIRMWARE_AQL, " + AQL"), (FIRMWARE_AIRTIME, ", airtime DRR"))]
    + [("macq", f"10 sta, 700 + 9 x 10 Mb/s, {q}, MAC queue 500", 10, 700, 10, q, MAC_QUEUE, False)
       for q in ("fq_codel", "fifo")]
    + [("macq", f"20 sta x 100 Mb/s, {q}, MAC queue 500", 20, 100, 100, q, MAC_QUEUE, False) for q in ("fq_codel", "fifo")]
)


def build_ns3() -> None:
    libs = "ns3-wifi ns3-applications ns3-internet ns3-mobility ns3-network ns3-core ns3-traffic-control"
    flags = subprocess.run(["pkg-config", "--cflags", "--libs", *libs.split()], check=True,
                           capture_output=True, text=True).stdout.split()
    subprocess.run(["g++", "-O2", "-std=c++17", str(HERE / "load.cc"), "-o", str(BIN), *flags], check=True)


def run_ns3(n: int, rate0: int, rate: int, qdisc: str) -> dict:
    cmd = [str(BIN), f"--time={DURATION_S}", f"--warmup={WARMUP_S}", f"--n={n}", f"--rate0={rate0}",
           f"--rate={rate}", f"--qdisc={qdisc}", "--limit=1000"]
    out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
    sta, ampdu = [], 0.0
    for line in out.splitlines():
        w = line.split()
        if w[0] == "sta":
            sta.append({"goodput": float(w[3]), "loss": float(w[5]), "mean": float(w[7]), "p99": float(w[9])})
        elif w[0] == "ampdu_mean":
            ampdu = float(w[1])
    return {"sta": sta, "ampdu": ampdu}


def start_ns(i: int) -> int:
    """Station i's flow starts when load.cc starts its UdpClient: 0.1 s + i ms. Started at the
    same instant, twenty equal CBR flows would bring their packets to the AP in the same order at
    every period, locked in phase with the driver's wake-ups (see README, the firmware rows)."""
    return 100_000_000 + i * 1_000_000


def lasthop_spec(n: int, rate0: int, rate: int, qdisc: str, driver: dict | None = None,
                 poisson0: bool = False) -> dict:
    dur = DURATION_S * 10**9
    return {
        "name": "ns3-load", "description": "",
        "sim": {"duration_ns": dur, "warmup_ns": WARMUP_S * 10**9, "seed": 1, "bin_ns": 10**9},
        "phy": {"standard": "vht", "band": "5GHz", "channel_width": 80, "guard_interval": 800,
                "control_rate_bps": 24_000_000},
        "mac": {"aggregation": True, "max_ampdu_mpdus": 64, "max_ampdu_bytes": 0,
                "max_ppdu_time_ns": 5_484_000, "retry_limit": 7, "beacon_interval_ns": 102_400_000,
                "access_category": "BE", "cw_min": None, "cw_max": None, "aifsn": None},
        "ap": {"queue_limit": 1000, "scheduler": "round_robin", "qdisc": qdisc, **(driver or {})},
        "wired": {"rate_bps": 10_000_000_000, "delay_ns": 0, "queue_limit": 1000, "loss": 0.0},
        "stations": [{"mcs": 9, "nss": 2, "error_model": "none", "per": 0.0, "snr_db": 30.0,
                      "queue_limit": 1000} for _ in range(n)],
        "flows": [{"station": i, "direction": "down", "pattern": "poisson" if poisson0 and i == 0 else "cbr",
                   "rate_bps": (rate0 if i == 0 else rate) * 1_000_000, "packet_size": 1500,
                   "start_ns": start_ns(i), "stop_ns": dur} for i in range(n)],
    }


def run_lasthop(n: int, rate0: int, rate: int, qdisc: str, driver: dict | None = None,
                poisson0: bool = False, seed: int = 1) -> dict:
    from lasthop import _native
    d = json.loads(_native.run(json.dumps(lasthop_spec(n, rate0, rate, qdisc, driver, poisson0)), seed, None))
    sta = [{"goodput": f["goodput_bps"], "loss": f["loss"], "mean": f["delay_ns"]["mean"] / 1e9, "p99": f["delay_ns"]["p99"] / 1e9}
           for f in d["flows"]]
    num = den = 0
    for s in d["stations"]:
        for k, c in enumerate(s["ampdu_hist_down"]):
            num += k * c
            den += c
    return {"sta": sta, "ampdu": num / den if den else 0.0}


def summary(r: dict) -> dict:
    s = r["sta"]
    light = s[1:] or s
    return {
        "goodput_mbps": sum(x["goodput"] for x in s) / 1e6,
        "sta0_goodput_mbps": s[0]["goodput"] / 1e6,
        "others_goodput_mbps": sum(x["goodput"] for x in light) / len(light) / 1e6,
        "others_loss_pct": 100 * sum(x["loss"] for x in light) / len(light),
        "others_p99_ms": 1e3 * max(x["p99"] for x in light),
        "mean_delay_ms": 1e3 * sum(x["mean"] for x in s) / len(s),
        "p99_spread": max(x["p99"] for x in s) / max(min(x["p99"] for x in s), 1e-9),
        "jain": sum(x["goodput"] for x in s) ** 2 / (len(s) * sum(x["goodput"] ** 2 for x in s) or 1.0),
        "ampdu_mean": r["ampdu"],
    }


def ns3_columns(cols: list[str]) -> dict[tuple, dict]:
    """ns-3's columns of the current load.csv, by scenario key (for --lasthop-only)."""
    out: dict[tuple, dict] = {}
    with open(HERE / "load.csv", newline="") as fh:
        rows = {r["scenario"]: r for r in csv.DictReader(fh)}
    for _, label, n, rate0, rate, qdisc, _, _ in SCENARIOS:
        r = rows.get(label)
        if r is not None:
            out[(n, rate0, rate, qdisc)] = {c: float(r[f"ns3_{c}"]) for c in cols}
    return out


def main() -> int:
    lasthop_only = "--lasthop-only" in sys.argv[1:]
    if lasthop_only:
        return write_rows(lasthop_only=True)
    if shutil.which("pkg-config") is None or subprocess.run(["pkg-config", "--exists", "ns3-wifi"]).returncode:
        print("ns-3 not found: apt-get install libns3-dev libgsl-dev libsqlite3-dev", file=sys.stderr)
        return 2
    build_ns3()
    return write_rows(lasthop_only=False)


def write_rows(lasthop_only: bool) -> int:
    cols = ["goodput_mbps", "sta0_goodput_mbps", "others_goodput_mbps", "others_loss_pct", "others_p99_ms", "mean_delay_ms",
            "p99_spread", "jain", "ampdu_mean"]
    rows = []
    ns3: dict[tuple, dict] = ns3_columns(cols) if lasthop_only else {}
    for group, label, n, rate0, rate, qdisc, driver, poisson0 in SCENARIOS:
        key = (n, rate0, rate, qdisc)
        if key not in ns3:
            ns3[key] = summary(run_ns3(*key))
        a = ns3[key]
        b = summary(run_lasthop(n, rate0, rate, qdisc, driver, poisson0))
        rows.append([group, label] + [f"{a[c]:.3f}" for c in cols] + [f"{b[c]:.3f}" for c in cols])
        print(f"{label:34s} " + "  ".join(f"{c} {a[c]:.2f}/{b[c]:.2f}" for c in cols), flush=True)
    with open(HERE / "load.csv", "w", newline="") as fh:
        w = csv.writer(fh, lineterminator="\n")
        w.writerow(["group", "scenario"] + [f"ns3_{c}" for c in cols] + [f"lasthop_{c}" for c in cols])
        w.writerows(rows)
    return 0


if __name__ == "__main__":
    sys.exit(main())
