#!/usr/bin/env python3
"""Cross-check lasthop's 802.11ax OFDMA against ns-3: downlink (and uplink) OFDMA in one HE cell,
beside single-user transmission in the same cell.

Needs the Debian packages libns3-dev, libgsl-dev and libsqlite3-dev (ns-3.37) and, for the
lasthop columns, a built lasthop. Run from the repository root:

    .venv/bin/python reference/ns3/compare_ofdma.py                 # writes reference/ns3/ofdma.csv
    .venv/bin/python reference/ns3/compare_ofdma.py --lasthop-only  # ns-3's columns kept, lasthop again
    .venv/bin/python reference/ns3/compare_ofdma.py --ns3-only      # no lasthop columns
    .venv/bin/python reference/ns3/compare_ofdma.py --groups udp-down --cells 4,9 --seeds 1,2
                                        # (rows of other groups, cells or seeds in the CSV are kept)
    .venv/bin/python reference/ns3/compare_ofdma.py --groups tcp-up --only "BA at MCS 7" --seeds 1,2,3

ns-3 is used only as an external program (reference/ns3/ofdma.cc links against it); lasthop
contains no ns-3 code. Both sides: one HE AP and 4, 9 or 18 stations, 5 GHz, 80 MHz, HE MCS 7
with one stream, 800 ns guard interval, no channel errors, no RTS/CTS, Block Ack windows of 256
and A-MPDUs of up to 256 MPDUs within the PPDU's 5.484 ms, 1500-byte IP packets, measured from
3 s to 6 s. Rows (`group`):
* udp-down: saturated UDP to every station; "su" without a multi-user scheduler, "dl" with
  ns-3's RrMultiUserScheduler (NStations = the number of stations, so that every station can
  ride one PPDU) and lasthop's `mac.ofdma` (scheduler "rr", max_users likewise), acknowledged
  by a MU-BAR Trigger Frame aggregated to every user's A-MPDU ("mu-bar": ns-3's
  DL_MU_AGGREGATE_TF) or by a BlockAckReq/BlockAck exchange per user after the first one's
  immediate Block Ack ("bar-ba": DL_MU_BAR_BA_SEQUENCE, ns-3.37's default). "9 sta, mu-bar,
  BA at MCS 7": ns-3 again with WifiDefaultAckManager MaxBlockAckMcs 7 (default 5), so that the
  Block Acks fit one HE TB symbol: ns-3.37 sets the MU-BAR's UL Length for symbols of the DL
  PPDU's 800 ns GI (13.6 us) while the stations answer with 1.6 us GI (14.4 us symbols); where
  the Block Ack takes 2 symbols (8 x 106-tone RUs at MCS 5) the station's TB PPDU then carries
  another L-SIG length, the AP filters every one and falls back to a BlockAckReq per user
  (README). With 16 x 52-tone RUs the MCS-5 Block Ack takes 3 symbols, which survive the
  rounding, and MCS 7 would take 2: that variant runs at 9 stations only. Its lasthop columns
  repeat the "mu-bar" run.
* udp-up: saturated UDP from every station; "su" plain EDCA ("su up, as Linux": ns-3 again
  without its MSDU lifetime, its BlockAckReq after a missed Block Ack and its device-wide retry
  limit, which mac80211 does not have; its lasthop columns repeat the "su up" run), "ul" with
  the scheduler's UL OFDMA (Basic Trigger Frames, no BSRP; the AP asks for access every
  10 us; stations report their queue size in every QoS data frame; an MU EDCA Parameter Set
  with AIFSN 0 for 100 x 8.192 ms keeps served stations off EDCA, so the uplink goes in HE TB
  PPDUs) and lasthop's `mac.ofdma.ul`.
* tcp-down: one CUBIC bulk download per station from the AP (ns-3: BulkSend at the AP itself,
  from 1 s, the stations joining 20 ms apart; lasthop: its server behind a 10 Gb/s, 1 us wire),
  "su" and "dl" (mu-bar). The TCP ACKs go up by EDCA on both sides.
* tcp-up: one CUBIC bulk upload per station to the AP (ns-3: PacketSink at the AP), "su" (and
  "su, as Linux", as in udp-up) and "ul" (the udp-up row's UL OFDMA; ns-3's scheduler then alternates a Basic Trigger with a DL MU
  PPDU of the AP's TCP ACKs, so lasthop's row has `dl` and `ul` both; at 9 and 18 stations
  again with MaxBlockAckMcs 7, "BA at MCS 7", as the ACKs' MU PPDUs ride 106- and 52-tone RUs).
  The stations' TCP has no TCP small queues on either side (ns-3's TCP has none;
  `tcp_small_queues = false`).

Queues: ns-3's AP (and stations) run Debian's default traffic control, an mq root with one
FqCoDelQueueDisc (10240 packets, CoDel 5 ms / 100 ms) per access category, above a 500-packet
WifiMacQueue per AC with flow control (its MaxSize default; the device queue stops while it is
full, so the FqCoDel hands a frame down as soon as there is room). lasthop's AP runs
`ap.qdisc = "fq_codel"` (mac80211's) with `queue_limit = 10240` above a driver stage of 500
frames per AC (`ap.driver = "ath9k"`, `ap.ath9k_qdepth = 500`: frames leave the flow queue
while the stage has room and every station's frames in it are open to the scheduler, as ns-3's
sees its WifiMacQueue; lasthop's firmware-queue driver holds the frames of the few stations it
last pushed, which leaves a DL MU PPDU one or two users). Uplink, each station's one flow meets
ns-3's FqCoDel as a tail-drop queue: the flow's CoDel child gets the FqCoDel's own MaxSize
(FqCoDelQueueDisc::InitializeParams) and refuses a packet that would exceed it
(CoDelQueueDisc::DoEnqueue), so the parent's head drop from the fattest flow (FqCoDelDrop,
called only above MaxSize) never runs with a single flow, and the WifiMacQueue below drops the
newest (its default DropPolicy) -- where Linux's fq_codel has no per-flow limit and drops from
the head of the fattest flow (fq_codel_enqueue, fq_codel_drop). lasthop's stations therefore
run one FIFO of the two queues' 10240 + 500 packets (`stations.qdisc = "fifo"`,
`queue_limit = 10740`); with fq_codel (head drops) their delays were 67-88 % below ns-3's.
The UDP sources are CBR at ns-3's clients' rate (1500-octet packets every 5·n µs each). Delays
under saturation follow these queues (and CoDel's control law) more than the MAC: without the
stage (`driver = "pull"`) lasthop's downlink delays are 20-26 % below ns-3's.

lasthop reads the OFDMA table `mac.ofdma` (dl, ul, scheduler, max_users, ack, MU EDCA); while
lasthop refuses that key, the script says so once, leaves the lasthop columns of those rows empty
(`lasthop_status` "refused") and still writes ns-3's. Columns: goodput (IP), the smallest and
largest station's, Jain's index, mean one-way delay of the packets delivered in the window
(UDP), users per MU PPDU (ns-3: PSDUs per HE MU PPDU downlink, HE TB PPDUs per trigger
uplink; lasthop: `ofdma.users_per_ppdu` of the result), the RU histogram ("tones:user
allocations;..."; ns-3: of the HE MU PPDUs' users downlink, of the TB PPDUs carrying data
uplink; lasthop: `ofdma.ru_hist`), MPDUs per user PSDU (ns-3: QoS data MPDUs per user of a MU
PPDU, per TB PPDU or per SU data PPDU; lasthop: the mean of the stations' A-MPDU histograms in
the row's direction); ns-3 only: its PPDU counts by kind over the window, mean MU and TB PPDU
durations, and the stations that did not answer a MU-BAR or Basic Trigger Frame.
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
BIN = Path("/tmp/lasthop-ns3-ofdma")
DURATION_S, WARMUP_S = 6, 3
MCS, NSS, WIDTH = 7, 1, 80
CELLS = (4, 9, 18)
# ns-3's WifiMacQueue MaxSize default (packets per AC), below its FqCoDel.
NS3_MAC_QUEUE = 500
# ns-3's uplink OFDMA set-up (see the docstring): no BSRP, access requested every 10 us, queue
# sizes in every QoS data frame, EDCA off for 100 x 8.192 ms after a station is served.
UL_ARGS = {"bsrp": 0, "accessReq": 10, "queueSize": 1, "muEdcaTimer": 100}
BA_MCS7 = {"ns3::WifiDefaultAckManager::MaxBlockAckMcs": 7}
# Three ns-3.37 behaviours Linux's mac80211 does not have, lifted for the "as Linux" uplink rows:
# the MSDU lifetime (WifiMacQueue MaxDelay 500 ms, the standard's dot11EDCATableMSDULifetime of
# 500 TU: an MPDU queued longer is dropped, and a BlockAckReq moves the recipient's window past
# it), a BlockAckReq after every missed Block Ack (QosTxop UseExplicitBarAfterMissedBlockAck),
# and one short retry counter per device whose 7th missed Block Ack discards the A-MPDU
# (WifiRemoteStationManager MaxSsrc; the cell's RtsCtsThreshold keeps every PSDU below it). See
# the README.
AS_LINUX = {"ns3::WifiMacQueue::MaxDelay": "20s", "ns3::QosTxop::UseExplicitBarAfterMissedBlockAck": "false",
            "ns3::WifiRemoteStationManager::MaxSsrc": 1000}
# TCP: the stations join 20 ms apart (as tcp.cc) and the downloads start at 1 s, once all have
# associated (a SYN to a station not yet associated is dropped at ns-3's AP).
TCP_ARGS = {"tcp": 1, "assocStagger": 0.02}


GROUPS = ("udp-down", "udp-up", "tcp-down", "tcp-up")


def scenarios(groups: set[str], cells: tuple[int, ...]) -> list[tuple]:
    """(group, label, n, ns-3 arguments, lasthop parameters)."""
    out = []
    for n in cells:
        if "udp-down" in groups:
            out += [
                ("udp-down", f"{n} sta, su", n, {"mode": "su", "down": 1}, {"dir": "down", "ofdma": None}),
                ("udp-down", f"{n} sta, dl, mu-bar", n, {"mode": "dl", "ack": "mu-bar"},
                 {"dir": "down", "ofdma": "dl", "ack": "mu-bar"}),
            ]
            if n == 9:
                out.append(("udp-down", f"{n} sta, dl, mu-bar, BA at MCS 7", n, {"mode": "dl", "ack": "mu-bar", **BA_MCS7},
                            {"dir": "down", "ofdma": "dl", "ack": "mu-bar"}))
            out += [
                ("udp-down", f"{n} sta, dl, bar-ba", n, {"mode": "dl", "ack": "bar-ba"},
                 {"dir": "down", "ofdma": "dl", "ack": "bar-ba"}),
            ]
        if "udp-up" in groups:
            out += [
                ("udp-up", f"{n} sta, su up", n, {"mode": "su", "down": 0}, {"dir": "up", "ofdma": None}),
                ("udp-up", f"{n} sta, su up, as Linux", n, {"mode": "su", "down": 0, **AS_LINUX},
                 {"dir": "up", "ofdma": None}),
                ("udp-up", f"{n} sta, ul", n, {"mode": "ul", **UL_ARGS}, {"dir": "up", "ofdma": "ul", "ack": "mu-bar"}),
            ]
        if "tcp-down" in groups:
            out += [
                ("tcp-down", f"{n} sta, tcp, su", n, {"mode": "su", **TCP_ARGS}, {"dir": "down", "tcp": True, "ofdma": None}),
                ("tcp-down", f"{n} sta, tcp, dl, mu-bar", n, {"mode": "dl", "ack": "mu-bar", **TCP_ARGS},
                 {"dir": "down", "tcp": True, "ofdma": "dl", "ack": "mu-bar"}),
            ]
        if "tcp-up" in groups:
            out += [
                ("tcp-up", f"{n} sta, tcp, su up", n, {"mode": "su", "down": 0, **TCP_ARGS},
                 {"dir": "up", "tcp": True, "ofdma": None}),
                ("tcp-up", f"{n} sta, tcp, su up, as Linux", n, {"mode": "su", "down": 0, **TCP_ARGS, **AS_LINUX},
                 {"dir": "up", "tcp": True, "ofdma": None}),
                # ns-3's scheduler with UL OFDMA alternates a Basic Trigger with a DL MU PPDU of
                # the AP's TCP ACKs (`SelectTxFormat`): lasthop's `dl` and `ul` both.
                ("tcp-up", f"{n} sta, tcp, ul", n, {"mode": "ul", **UL_ARGS, **TCP_ARGS},
                 {"dir": "up", "tcp": True, "ofdma": "dl+ul", "ack": "mu-bar"}),
            ]
            if n > 4:
                # The ACKs' DL MU PPDUs on 106- or 52-tone RUs meet ns-3's MU-BAR length (README).
                out.append(("tcp-up", f"{n} sta, tcp, ul, BA at MCS 7", n, {"mode": "ul", **UL_ARGS, **TCP_ARGS, **BA_MCS7},
                            {"dir": "up", "tcp": True, "ofdma": "dl+ul", "ack": "mu-bar"}))
    return out


def build_ns3() -> None:
    libs = "ns3-wifi ns3-applications ns3-internet ns3-mobility ns3-network ns3-core ns3-spectrum ns3-propagation"
    flags = subprocess.run(["pkg-config", "--cflags", "--libs", *libs.split()], check=True,
                           capture_output=True, text=True).stdout.split()
    subprocess.run(["g++", "-O2", "-std=c++17", str(HERE / "ofdma.cc"), "-o", str(BIN), *flags], check=True)


def hist_text(h: dict) -> str:
    """An RU histogram as "tones:count;..." in increasing RU size."""
    return ";".join(f"{int(k)}:{int(v)}" for k, v in sorted(((int(k), v) for k, v in h.items())))


def jain(xs: list[float]) -> float:
    s2 = sum(x * x for x in xs)
    return sum(xs) ** 2 / (len(xs) * s2) if s2 > 0 else 0.0


def run_ns3(n: int, args: dict, seed: int) -> dict:
    cmd = [str(BIN), f"--n={n}", f"--mcs={MCS}", f"--nss={NSS}", f"--width={WIDTH}", f"--time={DURATION_S}",
           f"--warmup={WARMUP_S}", f"--seed={seed}"] + [f"--{k}={v}" for k, v in args.items()]
    t0 = time.monotonic()
    d = json.loads(subprocess.run(cmd, check=True, capture_output=True, text=True).stdout)
    wall = time.monotonic() - t0
    sta = d["sta_goodput_mbps"]
    ul = d["mode"] == "ul"
    # The data's direction: uplink, the TB PPDUs (a TCP upload's ACKs ride DL MU PPDUs).
    if ul and d["tb_events"]:
        users, ru, mpdus = d["tb_ppdus"] / d["tb_events"], hist_text(d["tb_ru_hist"]), d["mpdus_per_tb_data"]
    elif d["mu_ppdus"]:
        users, ru, mpdus = d["users_per_mu_ppdu"], hist_text(d["ru_hist"]), d["mpdus_per_mu_user"]
    else:
        users, ru, mpdus = (1.0 if d["su_data_ppdus"] else None), "", d["mpdus_per_su_data"]
    return {
        "wall_s": wall,
        "goodput_mbps": d["goodput_mbps"],
        "min_sta_mbps": min(sta),
        "max_sta_mbps": max(sta),
        "jain": jain(sta),
        "mean_delay_ms": d["mean_delay_ms"],
        "users_per_ppdu": users,
        "ru_hist": ru,
        "mpdus_per_user": mpdus,
        "mu_ppdus": d["mu_ppdus"],
        "tb_ppdus": d["tb_ppdus"],
        "tb_ba": d["tb_ba"],
        "tb_data": d["tb_data"],
        "triggers": d["triggers_mu_bar"] + d["triggers_basic"] + d["triggers_bsrp"],
        "mu_bar_in_mu": d["mu_bar_in_mu"],
        "bars": d["bars"],
        "bas": d["bas"],
        "multi_sta_bas": d["multi_sta_bas"],
        "su_data_ppdus": d["su_data_ppdus"],
        "mu_ppdu_us": d["dur_us"].get("mu"),
        "tb_ppdu_us": d["dur_us"].get("tb"),
        "no_answer": d["ap_map_missing"],
        "associated": d["associated"],
    }


def lasthop_toml(n: int, o: dict) -> str:
    """The lasthop spec of a row: the same cell, the same traffic, the row's `mac.ofdma`."""
    tcp = o.get("tcp", False)
    up = o["dir"] == "up"
    ofdma = ""
    if o["ofdma"]:
        ofdma = f"""
[mac.ofdma]
dl = {"true" if "dl" in o["ofdma"] else "false"}
ul = {"true" if "ul" in o["ofdma"] else "false"}
scheduler = "rr"
max_users = {n}
ack = "{o["ack"]}"
"""
    if o["ofdma"] and "ul" in o["ofdma"]:
        # ns-3's MU EDCA Parameter Set here: AIFSN 0 (no EDCA until the timer expires) and
        # HeConfiguration's CWmin 15, CWmax 1023.
        ofdma += ('mu_edca_aifsn = 0\nmu_edca_cw_min = 15\nmu_edca_cw_max = 1023\n'
                  f'mu_edca_timer = "{UL_ARGS["muEdcaTimer"] * 8.192:g}ms"\n')
    # ns-3's station: one flow in its FqCoDel (10240, tail drop) above its WifiMacQueue (500);
    # ns-3's TCP has no TCP small queues (only the device queue's flow control holds it).
    station_queue = f'\nqueue_limit = {10240 + NS3_MAC_QUEUE}\nqdisc = "fifo"' if up else ""
    if up and tcp:
        station_queue += "\ntcp_small_queues = false"
    # ns-3's UdpClients send a 1500-octet IP packet every 5·n us each (2.4 Gb/s offered in all).
    udp_rate = f"{1500 * 8 / (5 * n):g}Mbps"
    flow = 'pattern = "tcp"\ncc = "cubic"' if tcp else f'pattern = "cbr"\nrate = "{udp_rate}"\npacket_size = 1500'
    return f"""name = "ns3-ofdma"

[sim]
duration = "{DURATION_S}s"
warmup = "{WARMUP_S}s"
bin = "1s"

[phy]
standard = "he"
band = "5GHz"
channel_width = {WIDTH}
guard_interval = 800
control_rate = "24Mbps"

[mac]
aggregation = true
max_ampdu_mpdus = 256
max_ampdu_bytes = 0
max_ppdu_time = "5.484ms"
beacon_interval = "102.4ms"
{ofdma}
[ap]
qdisc = "fq_codel"
queue_limit = 10240
driver = "ath9k"
ath9k_qdepth = {NS3_MAC_QUEUE}

[wired]
rate = "10Gbps"
delay = "{"1us" if tcp else "0s"}"
queue_limit = 1048576

[[stations]]
count = {n}
mcs = {MCS}
nss = {NSS}
error_model = "none"{station_queue}

[[flows]]
stations = "all"
direction = "{o["dir"]}"
{flow}
"""


class Refused(Exception):
    """lasthop refuses the spec's `mac.ofdma` (the key is not implemented yet)."""


def run_lasthop(n: int, o: dict, seed: int) -> dict:
    from lasthop import _native, spec
    try:
        js = spec.load_spec_text(lasthop_toml(n, o), "compare_ofdma").to_json()
    except Exception as e:  # noqa: BLE001 -- the spec layer's own error types vary by version
        if o["ofdma"] and "ofdma" in str(e):
            raise Refused(str(e).strip().splitlines()[0]) from None
        raise
    t0 = time.monotonic()
    d = json.loads(_native.run(js, seed, None))
    wall = time.monotonic() - t0
    flows = d["flows"]
    sta = [f["goodput_bps"] / 1e6 for f in flows]
    samples = sum(f["delay_ns"]["samples"] for f in flows)
    delay = (sum(f["delay_ns"]["mean"] * f["delay_ns"]["samples"] for f in flows) / samples / 1e6
             if samples and not o.get("tcp") else None)
    key = "ampdu_hist_up" if o["dir"] == "up" else "ampdu_hist_down"
    num = den = 0
    for s in d["stations"]:
        for k, c in enumerate(s[key]):
            num += k * c
            den += c
    ofdma = d.get("ofdma") or d.get("stats", {}).get("ofdma") or {}
    ru = ofdma.get("ru_hist")
    if isinstance(ru, dict):
        ru = hist_text(ru)
    elif isinstance(ru, list):  # [[tones, count], ...]
        ru = hist_text({k: v for k, v in ru})
    else:
        ru = ""
    users = ofdma.get("users_per_ppdu")
    if o["ofdma"] and "ul" in o["ofdma"]:
        ul = ofdma.get("ul") or {}
        users = ul.get("users_per_trigger")
        ru = hist_text(ul.get("ru_hist") or {})
    if users is None and not o["ofdma"]:
        users = 1.0
    return {
        "wall_s": wall,
        "goodput_mbps": sum(sta),
        "min_sta_mbps": min(sta),
        "max_sta_mbps": max(sta),
        "jain": jain(sta),
        "mean_delay_ms": delay,
        "users_per_ppdu": users,
        "ru_hist": ru,
        "mpdus_per_user": num / den if den else None,
    }


NS3_COLS = ["goodput_mbps", "min_sta_mbps", "max_sta_mbps", "jain", "mean_delay_ms", "users_per_ppdu", "ru_hist",
            "mpdus_per_user", "mu_ppdus", "tb_ppdus", "tb_ba", "tb_data", "triggers", "mu_bar_in_mu", "bars", "bas",
            "multi_sta_bas", "su_data_ppdus", "mu_ppdu_us", "tb_ppdu_us", "no_answer", "associated", "wall_s"]
LASTHOP_COLS = ["goodput_mbps", "min_sta_mbps", "max_sta_mbps", "jain", "mean_delay_ms", "users_per_ppdu", "ru_hist",
                "mpdus_per_user", "wall_s"]
HEAD = ["group", "scenario", "stations", "seed"]


def fmt(v) -> str:
    if v is None:
        return ""
    if isinstance(v, str):
        return v
    if isinstance(v, int):
        return str(v)
    return f"{v:.4f}"


def lasthop_cells(n: int, o: dict, seed: int, state: dict) -> list[str]:
    """The lasthop columns of one row (status first), or empty ones when refused."""
    if state.get("missing"):
        return ["not run"] + [""] * len(LASTHOP_COLS)
    if o["ofdma"] and state.get("refused"):
        return ["refused"] + [""] * len(LASTHOP_COLS)
    key = (n, json.dumps(o, sort_keys=True), seed)
    if key not in state["done"]:
        try:
            state["done"][key] = run_lasthop(n, o, seed)
        except Refused as e:
            state["refused"] = str(e)
            print(f"lasthop refuses mac.ofdma ({e}): the lasthop columns of the OFDMA rows are left empty, "
                  "ns-3's are written", file=sys.stderr, flush=True)
            return ["refused"] + [""] * len(LASTHOP_COLS)
    b = state["done"][key]
    return ["ok"] + [fmt(b[c]) for c in LASTHOP_COLS]


def lasthop_state(skip: bool) -> dict:
    state: dict = {"done": {}}
    if skip:
        state["missing"] = True
        return state
    try:
        from lasthop import _native
        state["version"] = _native.version()
    except ImportError:
        print("lasthop is not built (make build): only ns-3's columns are written", file=sys.stderr)
        state["missing"] = True
    return state


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--groups", default=",".join(GROUPS), help="comma-separated row groups")
    ap.add_argument("--cells", default=",".join(map(str, CELLS)), help="comma-separated station counts")
    ap.add_argument("--seeds", default="1", help="comma-separated seeds")
    ap.add_argument("--only", default="", help="run only the rows whose label contains this text (other rows kept)")
    ap.add_argument("--out", default=str(HERE / "ofdma.csv"))
    ap.add_argument("--ns3-only", action="store_true", help="leave the lasthop columns empty")
    ap.add_argument("--lasthop-only", action="store_true",
                    help="keep the ns-3 columns of --out and run lasthop's side again")
    args = ap.parse_args()
    out = Path(args.out)
    state = lasthop_state(args.ns3_only)
    version = state.get("version", "")
    if args.lasthop_only:
        return refresh_lasthop(out, state, version)
    if shutil.which("pkg-config") is None or subprocess.run(["pkg-config", "--exists", "ns3-wifi"]).returncode:
        print("ns-3 not found: apt-get install libns3-dev libgsl-dev libsqlite3-dev", file=sys.stderr)
        return 2
    build_ns3()
    groups = set(args.groups.split(","))
    cells = tuple(int(x) for x in args.cells.split(","))
    seeds = [int(x) for x in args.seeds.split(",")]
    rows = []
    for group, label, n, ns3_args, ours in scenarios(groups, cells):
        if args.only not in label:
            continue
        for seed in seeds:
            try:
                a = run_ns3(n, ns3_args, seed)
            except subprocess.CalledProcessError as e:
                # ns-3.37 asserts on some runs (e.g. 18 stations' UL OFDMA, seed 2: "STA-ID
                # should be correctly set for MU", wifi-tx-vector.cc): the row is left out.
                why = (e.stderr or "").strip().splitlines()[:1] or [f"exit {e.returncode}"]
                print(f"{label:34s} seed {seed}  ns-3 aborted ({why[0][:160]}): row left out", flush=True)
                continue
            b = lasthop_cells(n, ours, seed, state)
            rows.append([group, label, n, seed] + [fmt(a[c]) for c in NS3_COLS] + b + [version])
            line = (f"{label:34s} seed {seed}  ns-3 {a['goodput_mbps']:7.1f} Mb/s, {fmt(a['users_per_ppdu']) or '-'} "
                    f"users/PPDU, RUs {a['ru_hist'] or '-'}, delay {fmt(a['mean_delay_ms']) or '-'} ms "
                    f"({a['wall_s']:.0f} s)")
            if b[0] == "ok":
                line += f"   lasthop {float(b[1]):7.1f} Mb/s"
            print(line, flush=True)
    write(out, merge(out, rows, groups, cells, seeds, args.only))
    return 0


def merge(out: Path, rows: list[list], groups: set[str], cells: tuple[int, ...], seeds: list[int],
          only: str = "") -> list[list]:
    """`rows`, with the rows of an existing `out` this run did not produce kept (a run of some
    groups, cells, seeds or labels replaces only those), in the grid's order."""
    if not out.exists():
        return rows
    with open(out, newline="") as fh:
        old = list(csv.reader(fh))
    if not old or old[0] != header():
        return rows
    new = {(r[0], r[1], str(r[3])): r for r in rows}
    kept = {(r[0], r[1], r[3]): r for r in old[1:]
            if not (r[0] in groups and int(r[2]) in cells and int(r[3]) in seeds and only in r[1])}
    every = {**kept, **new}
    order = {(g, label): i for i, (g, label, *_) in enumerate(scenarios(set(GROUPS), CELLS))}
    return sorted(every.values(), key=lambda r: (order.get((r[0], r[1]), len(order)), int(r[3])))


def header() -> list[str]:
    return (HEAD + [f"ns3_{c}" for c in NS3_COLS] + ["lasthop_status"] + [f"lasthop_{c}" for c in LASTHOP_COLS]
            + ["lasthop_version"])


def write(out: Path, rows: list[list]) -> None:
    tmp = out.with_suffix(".csv.tmp")
    with open(tmp, "w", newline="") as fh:
        w = csv.writer(fh, lineterminator="\n")
        w.writerow(header())
        w.writerows(rows)
    tmp.replace(out)


def refresh_lasthop(out: Path, state: dict, version: str) -> int:
    """Run lasthop's side of every row already in `out` again; ns-3's columns stay."""
    if state.get("missing"):
        return 2
    with open(out, newline="") as fh:
        rows = list(csv.reader(fh))
    head, body = rows[0], rows[1:]
    first = head.index("lasthop_status")
    every = {(g, label): (n, ours) for g, label, n, _, ours in scenarios(set(GROUPS), CELLS)}
    for row in body:
        n, ours = every[(row[0], row[1])]
        cells = lasthop_cells(n, ours, int(row[3]), state)
        row[first:first + len(cells)] = cells
        row[-1] = version
        print(f"{row[1]:34s} seed {row[3]}  lasthop {cells[0]} {cells[1]}", flush=True)
    write(out, body)
    return 0


if __name__ == "__main__":
    sys.exit(main())
