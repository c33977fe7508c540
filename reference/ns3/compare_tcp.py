#!/usr/bin/env python3
"""Cross-check lasthop's cell against ns-3 with TCP: one CUBIC bulk download per station, the
cell's goodput, fairness, aggregation (data down, TCP ACKs up) and collisions.

Needs the Debian packages libns3-dev, libgsl-dev and libsqlite3-dev (ns-3.37) and a built
lasthop. Run from the repository root (about 28 minutes on two cores, 18 of them the five
100-station ns-3 runs; about 8 with `--no-variants`, which runs ns-3 only as configured by
default; `--cells=1,10` runs only those cells; `--lasthop-only` keeps the ns-3 columns of the
CSV and runs lasthop's side again, in about a minute, after a change to the model):

    .venv/bin/python reference/ns3/compare_tcp.py      # writes reference/ns3/tcp.csv

ns-3 is used only as an external program (reference/ns3/tcp.cc links against it); lasthop
contains no ns-3 code. Both sides: VHT 80 MHz MCS 9 with 2 streams, A-MPDUs of up to 64 MPDUs,
no channel errors, no RTS/CTS, a server wired to the AP at 10 Gb/s with 1 us of delay, TCP with
MSS 1448 (1500-byte IP packets), SACK, an ACK every second segment, initial window 10. The AP
runs FQ-CoDel with a 10240-packet limit above 500 frames of MAC queue (ns-3: its WifiMacQueue,
from which the MAC builds each aggregate at channel access; lasthop: a 500-frame driver stage
the qdisc hands frames down to while it has room, `ap.driver = "ath9k"`, `ath9k_qdepth = 500`).
With `--firmware` lasthop's AP is instead the cell `lasthop bench` times (`AP_FIRMWARE` of
python/lasthop/bench/tcp_cells.py): 500 frames of firmware queue filled as ath10k pushes them
(`ap.driver = "firmware"`, `hw_queue_limit = 500`, no AQL), which ns-3 does not have.

ns-3's downloads start at `APP_START_S` (after association, ARP pre-filled; the stations join
20 ms apart and wait up to 20 ms for an ADDBA Response, see tcp.cc) and are measured from 0.5 s
later to the end. lasthop's flows start at 0 with the stations associated; its
warm-up is set to the same window start, so both windows have the same length (lasthop's
flows have run longer when it opens). lasthop's per-run counters (collisions, PPDUs, MPDUs,
busy time) cover the whole run; the window's share is the difference from a second run that
ends where the window starts (runs are deterministic, so the shorter one is a prefix of the
longer). Per-flow drop counts are lasthop's own (packets created in the window).

Each cell's first row is ns-3 as configured by default (`ns3_variant` "default"); at 20 and
100 stations further rows ("variants") run ns-3 again with one more of its behaviours set to
what Linux and lasthop do (the lasthop columns repeat the same lasthop run):
* "bar_off": `ns3::QosTxop::UseExplicitBarAfterMissedBlockAck` false. ns-3 otherwise follows
  every missed Block Ack with a Block Ack Request exchange; without it the unacknowledged MPDUs
  go again in the next A-MPDU, as mac80211 drivers (and lasthop) do.
* "bar_off_ssrc": that, and ns-3's retry limit for A-MPDUs lifted
  (`ns3::WifiRemoteStationManager::MaxSsrc` 1000). Without BARs, ns-3.37 decides whether to
  send an A-MPDU again from one short retry counter per access category of the device
  (WifiRemoteStationManager m_ssrc: HtFrameExchangeManager::BlockAckTimeout counts every
  missed Block Ack there, a received Block Ack never resets it): at the 7th missed Block Ack
  since the last reset, whatever the receiver, the whole A-MPDU is discarded (MissedBlockAck,
  NeedRetransmission false). Linux and lasthop count attempts per MPDU.
* "bar_off_fq", "bar_off_ssrc_fq": those two, and the AP's FqCoDelQueueDisc at mac80211's
  flow-queue parameters (`MAC80211_FQ`: CoDel target 20 ms and interval 100 ms, 4096 flows, a
  300-byte quantum, at most 32 packets dropped per overflow; ns-3's defaults are 5 ms, 100 ms,
  1024, the device MTU and 64).

Columns (ns3_* and lasthop_*; tcp.cc says how ns-3's are traced): goodput (payload) and Jain's
index over the stations, MPDUs per data PSDU down and up (up: the TCP ACKs), data PSDUs and
MPDUs sent, collisions (ns-3: groups of transmissions overlapping in time; lasthop: accesses
in which two or more transmitters start in the same slot; ns-3 only: those of them with a
transmission of the AP's), ns-3's PSDUs left without their
(Block) Ack and Block Ack Requests, AP queue drops (ns-3: also those of them at its queue disc's
limit, the rest being CoDel's) and retry-limit drops (MPDUs), TCP timeouts and fast recoveries,
and the fraction of the window the medium was busy: on air plus the SIFS inside exchanges
(lasthop counts an exchange from its PPDU's start to its (Block) Ack's end; ns-3's is its
transmissions' union plus air_sifs); ns-3 only: airtime by kind and the AP PHY's states.
"""
from __future__ import annotations

import argparse
import csv
import json
import shutil
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
BIN = Path("/tmp/lasthop-ns3-tcp")
APP_START_S = 6.0
MEASURE_FROM_S = 6.5

# (stations, end of the run in s, seeds)
CELLS = [(1, 11.0, (1, 2)), (10, 11.0, (1, 2)), (20, 11.0, (1, 2)), (100, 16.0, (1,))]

# mac80211's flow queue (net/mac80211/tx.c ieee80211_txq_setup_flows; include/net/fq_impl.h
# fq_init, fq_flow_drop: at most 32 packets, half the flow) in ns-3's FqCoDelQueueDisc terms.
MAC80211_FQ = ["--fqTarget=20ms", "--fqInterval=100ms", "--fqFlows=4096", "--fqQuantum=300", "--fqDropBatch=32"]
# ns-3's retry limit for A-MPDUs out of the way (see "bar_off_ssrc" above).
NO_SSRC_LIMIT = ["--ns3::WifiRemoteStationManager::MaxSsrc=1000"]
# ns-3 variants (tcp.cc's options) and the (stations, seeds) they run at.
VARIANTS = {
    "bar_off": ["--explicitBar=0"],
    "bar_off_ssrc": ["--explicitBar=0", *NO_SSRC_LIMIT],
    "bar_off_fq": ["--explicitBar=0", *MAC80211_FQ],
    "bar_off_ssrc_fq": ["--explicitBar=0", *NO_SSRC_LIMIT, *MAC80211_FQ],
}
VARIANT_CELLS = {20: (1, 2), 100: (1,)}

AIR = ["air_down", "air_up", "air_ctrl", "air_mgmt", "air_collision", "air_idle", "air_sifs",
       "ap_state_tx", "ap_state_rx", "ap_state_cca_busy", "ap_state_idle"]


def build_ns3() -> None:
    libs = ("ns3-wifi ns3-applications ns3-internet ns3-mobility ns3-network ns3-core ns3-traffic-control "
            "ns3-point-to-point")
    flags = subprocess.run(["pkg-config", "--cflags", "--libs", *libs.split()], check=True,
                           capture_output=True, text=True).stdout.split()
    subprocess.run(["g++", "-O2", "-std=c++17", str(HERE / "tcp.cc"), "-o", str(BIN), *flags], check=True)


def run_ns3(n: int, end: float, seed: int, extra: list[str] = ()) -> dict:
    cmd = [str(BIN), f"--n={n}", f"--time={end}", f"--appStart={APP_START_S}",
           f"--measureFrom={MEASURE_FROM_S}", f"--seed={seed}", "--cc=cubic", "--qdisc=fq_codel",
           "--limit=10240", "--airtime", *extra]
    out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
    r: dict = {"sta": [], "rx_drop_ap": {}, "mac_drop_ap": {}, "mac_drop_sta": {}, "qdisc_drop_ap": {},
               "collision_spread_us": {}}
    for line in out.splitlines():
        w = line.split()
        if w[0] == "sta":
            r["sta"].append(float(w[3]))
        elif w[0] == "after_sta_ba":
            continue
        elif w[0] in ("rx_drop_ap", "mac_drop_ap", "mac_drop_sta", "qdisc_drop_ap", "collision_spread_us"):
            r[w[0]][w[1]] = int(w[2])
        else:
            r[w[0]] = float(w[1])
    retry = "2"  # WIFI_MAC_DROP_REACHED_RETRY_LIMIT
    return {
        "goodput_mbps": r["goodput_bps"] / 1e6,
        "jain": r["jain"],
        "min_sta_mbps": min(r["sta"]) / 1e6,
        "ampdu_down": r["ampdu_mean_down"],
        "ampdu_up": r["ampdu_mean_up"],
        "psdus_down": int(r["psdus_down"]),
        "psdus_up": int(r["psdus_up"]),
        "mpdus": int(r["mpdus_down"] + r["mpdus_up"]),
        "collisions": int(r["collisions"]),
        "collisions_ap": int(r["collisions_ap"]),
        "failed_psdus": int(r["timeouts_ap"] + r["timeouts_sta"]),
        "bars": int(r["bars"]),
        "qdisc_drops": int(r["qdisc_drops_ap"]),
        "qdisc_overlimit_drops": sum(c for k, c in r["qdisc_drop_ap"].items() if "Overlimit" in k),
        "retry_drops": r["mac_drop_ap"].get(retry, 0) + r["mac_drop_sta"].get(retry, 0),
        "tcp_rto": int(r["tcp_rto"]),
        "tcp_recoveries": int(r["tcp_recoveries"]),
        "associated": int(r["associated"]),
        "busy_frac": 1.0 - r["air_idle"] + r["air_sifs"],
        **{k: r[k] for k in AIR},
    }


# ns-3's 500-packet WifiMacQueue (MaxSize's default) below its FqCoDel, as a driver stage: the
# [ap] table of lasthop's side unless `--firmware` asks for the bench cell's.
AP_MAC_QUEUE = 'qdisc = "fq_codel"\nqueue_limit = 10240\ndriver = "ath9k"\nath9k_qdepth = 500'


def lasthop_toml(n: int, end: float, warmup: float, ap: str) -> str:
    # The cell `lasthop bench` times against ns-3 (python/lasthop/bench/tcp_cells.py), with `ap`.
    from lasthop.bench.tcp_cells import cell_toml
    return cell_toml(n, "cubic", end, warmup, name="ns3-tcp", ap=ap)


def _lasthop(n: int, end: float, warmup: float, seed: int, ap: str) -> dict:
    from lasthop import _native, spec
    js = spec.load_spec_text(lasthop_toml(n, end, warmup, ap), "compare_tcp").to_json()
    return json.loads(_native.run(js, seed, None))


def run_lasthop(n: int, end: float, seed: int, ap: str = AP_MAC_QUEUE) -> dict:
    # The window in lasthop's time: as long as ns-3's, opening at the same time.
    start, stop = MEASURE_FROM_S, end
    d = _lasthop(n, stop, start, seed, ap)
    before = _lasthop(n, start, 0.0, seed, ap)
    g = [f["goodput_bps"] for f in d["flows"]]
    hist = {}
    for key in ("ampdu_hist_down", "ampdu_hist_up"):
        psdus = mpdus = 0
        for s in d["stations"]:
            for k, c in enumerate(s[key]):
                psdus += c
                mpdus += k * c
        hist[key] = (psdus, mpdus)
    st, st0 = d["stats"], before["stats"]
    busy = d["channel"]["busy_ns"] - before["channel"]["busy_ns"]

    def flows(get) -> int:
        return sum(get(f) for f in d["flows"]) - sum(get(f) for f in before["flows"])
    return {
        "goodput_mbps": sum(g) / 1e6,
        "jain": sum(g) ** 2 / (len(g) * sum(x * x for x in g)) if any(g) else 0.0,
        "min_sta_mbps": min(g) / 1e6,
        "ampdu_down": hist["ampdu_hist_down"][1] / max(hist["ampdu_hist_down"][0], 1),
        "ampdu_up": hist["ampdu_hist_up"][1] / max(hist["ampdu_hist_up"][0], 1),
        "psdus_down": hist["ampdu_hist_down"][0],
        "psdus_up": hist["ampdu_hist_up"][0],
        "mpdus": st["mpdu_attempts"] - st0["mpdu_attempts"],
        "collisions": st["collisions"] - st0["collisions"],
        "collisions_ap": None,
        "failed_psdus": None,
        "bars": None,
        "qdisc_drops": sum(f["dropped_queue"] for f in d["flows"]),
        "qdisc_overlimit_drops": None,
        "retry_drops": sum(f["dropped_retry"] for f in d["flows"]),
        "tcp_rto": flows(lambda f: f["tcp"]["rto_count"]),
        "tcp_recoveries": flows(lambda f: f["tcp"]["fast_recoveries"]),
        "associated": n,
        "busy_frac": busy / ((stop - start) * 1e9),
        **{k: None for k in AIR},
    }


COLS = ["goodput_mbps", "jain", "min_sta_mbps", "ampdu_down", "ampdu_up", "psdus_down", "psdus_up", "mpdus",
        "collisions", "collisions_ap", "failed_psdus", "bars", "qdisc_drops", "qdisc_overlimit_drops", "retry_drops", "tcp_rto", "tcp_recoveries", "associated",
        "busy_frac"] + AIR


def fmt(v) -> str:
    if v is None:
        return ""
    return str(v) if isinstance(v, int) else f"{v:.4f}"


def refresh_lasthop(out: Path, ap: str) -> int:
    """Rerun lasthop's side of every row already in `out`; ns-3's columns stay as they are."""
    from lasthop import _native
    version = _native.version()
    with open(out, newline="") as fh:
        rows = list(csv.reader(fh))
    head, body = rows[0], rows[1:]
    first = head.index(f"lasthop_{COLS[0]}")
    cells = {n: end for n, end, _ in CELLS}
    done: dict = {}
    for row in body:
        n, seed = int(row[0]), int(row[1])
        if (n, seed) not in done:
            t0 = time.monotonic()
            done[n, seed] = run_lasthop(n, cells[n], seed, ap)
            print(f"{n} stations, seed {seed}, lasthop ({time.monotonic() - t0:.0f} s): "
                  f"{fmt(done[n, seed]['goodput_mbps'])} Mb/s", flush=True)
        row[first:first + len(COLS)] = [fmt(done[n, seed][c]) for c in COLS]
        row[-1] = version
    tmp = out.with_suffix(".csv.tmp")
    with open(tmp, "w", newline="") as fh:
        csv.writer(fh, lineterminator="\n").writerows([head, *body])
    tmp.replace(out)
    return 0


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--cells", default="", help="comma-separated station counts to run (default: all)")
    ap.add_argument("--no-variants", action="store_true", help="run ns-3 only as configured by default")
    ap.add_argument("--out", default=str(HERE / "tcp.csv"))
    ap.add_argument("--lasthop-only", action="store_true",
                    help="keep the ns-3 columns of --out and run only lasthop again (after a model change)")
    ap.add_argument("--firmware", action="store_true",
                    help="lasthop's AP with the bench cell's firmware queue instead of ns-3's MAC queue")
    args = ap.parse_args()
    ap = AP_MAC_QUEUE
    if args.firmware:
        from lasthop.bench.tcp_cells import AP_FIRMWARE
        ap = AP_FIRMWARE
    if args.lasthop_only:
        return refresh_lasthop(Path(args.out), ap)
    if shutil.which("pkg-config") is None or subprocess.run(["pkg-config", "--exists", "ns3-wifi"]).returncode:
        print("ns-3 not found: apt-get install libns3-dev libgsl-dev libsqlite3-dev", file=sys.stderr)
        return 2
    only = {int(x) for x in args.cells.split(",") if x}
    from lasthop import _native
    version = _native.version()
    print(f"lasthop {version}", flush=True)
    build_ns3()
    rows = []
    for n, end, seeds in CELLS:
        if only and n not in only:
            continue
        for seed in seeds:
            t0 = time.monotonic()
            b = run_lasthop(n, end, seed, ap)
            print(f"{n} stations, seed {seed}, lasthop ({time.monotonic() - t0:.0f} s)", flush=True)
            variants = {"default": []}
            if not args.no_variants and seed in VARIANT_CELLS.get(n, ()):
                variants.update(VARIANTS)
            for name, extra in variants.items():
                t0 = time.monotonic()
                a = run_ns3(n, end, seed, extra)
                rows.append([n, seed, name, MEASURE_FROM_S, end] + [fmt(a[c]) for c in COLS]
                            + [fmt(b[c]) for c in COLS] + [version])
                print(f"{n} stations, seed {seed}, ns-3 {name} ({time.monotonic() - t0:.0f} s), "
                      f"window {MEASURE_FROM_S}-{end} s   (ns-3 / lasthop)", flush=True)
                for c in COLS:
                    if b[c] is None:
                        print(f"  {c:22s} {fmt(a[c]):>12s}", flush=True)
                    else:
                        print(f"  {c:22s} {fmt(a[c]):>12s} {fmt(b[c]):>12s}", flush=True)
    with open(args.out, "w", newline="") as fh:
        w = csv.writer(fh, lineterminator="\n")
        w.writerow(["stations", "seed", "ns3_variant", "window_start_s", "window_end_s"] + [f"ns3_{c}" for c in COLS]
                   + [f"lasthop_{c}" for c in COLS] + ["lasthop_version"])
        w.writerows(rows)
    return 0


if __name__ == "__main__":
    sys.exit(main())
