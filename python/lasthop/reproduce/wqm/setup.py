"""The wqm suite's setup: the testbed's constants (the package's docstring gives their sources),
the specs of its cases (`_spec`, `_parking`, `_ofdma_spec`) and its sweeps (`sweeps`): every case
runs the compared queue disciplines and WQM on the same seeds (`_pair`)."""
from __future__ import annotations

import copy

from ..framework import SweepDef


QDISCS = ["fifo", "codel", "pie", "fq_codel"]


SCHEMES = QDISCS + ["wqm"]


# "pie" is the paper's PIE (the dequeue-rate estimate, its own sweep per case); "pie_ts", PIE with
# timestamps, runs on the hop-count cases only, beyond the paper.
LABEL = {"fifo": "FIFO-1000", "codel": "CoDel", "pie": "PIE", "fq_codel": "FQ-CoDel+airtime", "wqm": "WQM",
         "pie_ts": "PIE (timestamps)"}


COLOR = {"fifo": "#999999", "codel": "#0072B2", "pie": "#E69F00", "fq_codel": "#009E73", "wqm": "#D55E00"}


PIE_ESTIMATOR = "dequeue_rate"  # Linux 3.17's sch_pie (see the module docstring)


PIE_SOURCE = "Linux 3.17.7's sch_pie (net/sched/sch_pie.c: pie_process_dequeue, calculate_probability)"


# The hosts' transmit-path time per packet (see the module docstring): every value from 10 ns to
# 5 µs gives the same runs; 2 µs is inside that range, near what a Core 2 Duo's path through
# mac80211 and ath9k plausibly takes.
DEQUEUE_COST = "2us"


DEQUEUE_FLAT = "10 ns to 5 µs"


HOPS = [1, 2, 3]


FLOWS = [1, 3, 5]


DISTANCES = [10, 20, 30]


SHORT_S = [5, 10, 15]


PING_MS = 20


VARIANTS = ["aimd", "aiad", "miad", "mimd"]


DRIVER = "ath9k"  # the testbed's driver (see the module docstring)


# Linux 3.17 had no per-station queues in mac80211: every node's frames, whatever their next hop,
# go through its interface's one qdisc per access category before ath9k sorts them by station, so
# a relay's data for its child and the ACKs and ping replies for its parent share one queue.
QDISC_SCOPE = "interface"


ATH9K_QDEPTH = 123  # frames it holds per access category below the qdisc (ATH_MAX_QDEPTH)


SECS = 100  # netperf ran 100 s (§V-B)


SEEDS = 5  # "averaged over at least three runs" (§V-C.1)


HOP1_SEEDS = 100


QUICK_SEEDS = 3


# Fig. 20's link rates (§V-C.2): Minstrel, or every link "manually fixed to one of the following
# rate: 6.5, 13, 65 or 144.4 Mb/s". Those are HT 20 MHz rates only (IEEE 802.11-2020 §19.5: no
# 40 MHz MCS gives any of them): MCS 0, 1 and 7 with the 800 ns guard interval, MCS 15 (two
# streams) with 400 ns. 13 Mb/s is also MCS 8 (two streams); MCS 1 is taken, one stream like MCS 0
# and 7. Per setting: (the spec's per-stream MCS, streams — HT MCS 15 is MCS 7 on two —, guard
# interval in ns, control response rate). A Block Ack goes at the highest basic rate (5 GHz: 6,
# 12, 24 Mb/s) not above the data MCS's non-HT reference rate (IEEE 802.11-2012 §9.7.6.5, §9.7.9).
PARKING_FIXED = {"6.5": (0, 1, 800, "6Mbps"), "13": (1, 1, 800, "12Mbps"), "65": (7, 1, 800, "24Mbps"),
                 "144.4": (7, 2, 400, "24Mbps")}


PARKING_SETTINGS = ["minstrel"] + list(PARKING_FIXED)


PAPER_SCHEMES = ["fifo", "codel", "pie", "wqm"]


# W4's ablation: the three flows' senders send with TSO/GSO as Linux 3.17 did (`flows[].tso`:
# skbs of half a millisecond of the pacing rate, held back by tcp_tso_should_defer), FIFO-1000 and
# WQM, the same seeds as the flows3 runs.
TSO = "linux-3.17"
# W3's ablation (`_scope_ablation`): seeds per hop count and scheme; it explains a miss, the
# verdict rests on the 40 seeds of the hops{h}-noagg pairs.
SCOPE_SEEDS = 10


JFI_FIFO_BAND = (0.65, 0.75)  # §V-C.2: "the JFI … for the static buffering scheme is 0.7" (one decimal)


def _spec(name: str, hops: int = 1, flows_to: list[int] | None = None, n_flows: int = 1,
          aggregation: bool = True, secs: int = SECS, separate: bool = False) -> dict:
    """A chain AP → s0 → … → s(hops−1); `n_flows` CUBIC downloads to each node in `flows_to`
    (default: the last), then one ping per such node."""
    stations = []
    for h in range(hops):
        st = {"count": 1, "nss": 3, "rate_control": "minstrel", "distance_m": 10}
        if h > 0:
            st["parent"] = h - 1
            if separate:
                st["hop_channel"] = h  # each hop on its own channel; relays have a radio per side
        stations.append(st)
    dests = flows_to if flows_to is not None else [hops - 1]
    flows = [{"stations": d, "direction": "down", "pattern": "tcp", "cc": "cubic"}
             for d in dests for _ in range(n_flows)]
    flows += [{"stations": d, "direction": "down", "pattern": "ping", "interval": f"{PING_MS}ms"} for d in dests]
    mac = {"aggregation": aggregation, "max_ampdu_mpdus": 64 if aggregation else 1, "max_ppdu_time": "4ms"}
    if aggregation:
        mac.update({"max_ampdu_bytes": 65535, "aggregation_min_rate": "6.5Mbps"})
    return {
        "name": f"wqm-{name}",
        "sim": {"duration": f"{secs}s", "warmup": "5s", "seed": 1, "bin": "100ms"},
        "phy": {"standard": "ht", "band": "5GHz", "channel_width": 40, "guard_interval": 400},
        "mac": mac,
        "ap": {"qdisc": "fifo", "scheduler": "round_robin", "queue_limit": 1000,
               "driver": "pull" if separate else DRIVER, "dequeue_cost": DEQUEUE_COST,
               **({} if separate else {"qdisc_scope": QDISC_SCOPE})},
        "wired": {"rate": "10Gbps", "delay": "50us"},
        "stations": stations,
        "flows": flows,
    }


# Beyond the paper (W+2): an 802.11ax AP, 80 MHz, four stations at HE-MCS 9/7/4/2 (one stream),
# a CUBIC download and a ping to each, single-user PPDUs or DL OFDMA (the AP's queues decide who
# rides which RU), so that WQM sizes a queue drained by several RUs at once.
OFDMA_MCS = [9, 7, 4, 2]


OFDMA_MODES = ["su", "dl"]


def _ofdma_spec(mode: str) -> dict:
    spec = _spec(f"he-{mode}", flows_to=[0, 1, 2, 3])
    spec["phy"] = {"standard": "he", "band": "5GHz", "channel_width": 80, "guard_interval": 800}
    spec["mac"] = {"max_ampdu_mpdus": 256}
    if mode == "dl":
        spec["mac"]["ofdma"] = {"dl": True, "scheduler": "txq", "max_users": 4}
    spec["ap"]["driver"] = "pull"
    spec["ap"].pop("qdisc_scope")
    spec["stations"] = [{"count": 1, "mcs": m, "nss": 1} for m in OFDMA_MCS]
    return spec


def _pair(name: str, base: dict, vary: list | None = None, seeds: int = SEEDS, quick: dict | None = None,
          quick_seeds: int = QUICK_SEEDS, pie_ts: bool = False, fq_codel: bool = True) -> list[SweepDef]:
    """The queue disciplines (one sweep over ap.qdisc; PIE with timestamps among them only if
    `pie_ts`, FQ-CoDel unless `fq_codel` is false), the paper's PIE (its own sweep:
    `ap.pie_estimator` needs qdisc = "pie") and WQM (a FIFO sized by it), all with the same seeds."""
    vary = list(vary or [])
    aqm = copy.deepcopy(base)
    aqm["ap"]["scheduler"] = "airtime"  # matters for FQ-CoDel only (one next hop otherwise)
    pie = copy.deepcopy(aqm)
    pie["ap"].update({"qdisc": "pie", "pie_estimator": PIE_ESTIMATOR})
    pie["name"] += "-pie"
    wqm = copy.deepcopy(base)
    wqm["ap"]["buffer_sizer"] = "wqm"
    wqm["name"] += "-wqm"
    qdiscs = [q for q in QDISCS if (q != "pie" or pie_ts) and (q != "fq_codel" or fq_codel)]
    out = []
    if "qdisc_scope" in aqm["ap"] and "fq_codel" in qdiscs:
        # FQ-CoDel is mac80211's per-station flow queue (beyond the paper): its own sweep.
        qdiscs.remove("fq_codel")
        fq = copy.deepcopy(aqm)
        del fq["ap"]["qdisc_scope"]
        fq["name"] += "-fq"
        out.append(SweepDef(name + "-fq", fq, [("ap.qdisc", ["fq_codel"])] + vary, seeds=seeds,
                            quick_seeds=quick_seeds, quick=quick))
    return [SweepDef(name, aqm, [("ap.qdisc", qdiscs)] + vary, seeds=seeds, quick_seeds=quick_seeds, quick=quick),
            SweepDef(name + "-pie", pie, vary, seeds=seeds, quick_seeds=quick_seeds, quick=quick),
            SweepDef(name + "-wqm", wqm, vary, seeds=seeds, quick_seeds=quick_seeds, quick=quick)] + out


def sweeps(quick: bool) -> list[SweepDef]:
    q = {"sim": {"duration": "15s", "warmup": "3s"}}
    out: list[SweepDef] = []
    for h in HOPS:
        # W1's 1-hop CoDel / WQM sits on its edge (2.01× ± 0.03 with 5 seeds, ≈ 100 to decide).
        out += _pair(f"hops{h}", _spec(f"hops{h}", hops=h), quick=q, pie_ts=True,
                     seeds=HOP1_SEEDS if h == 1 else SEEDS)
        # W3's ratios without aggregation vary most from seed to seed: with 5 seeds the 1-hop
        # ratio and PIE / WQM straddled their band edges (≈ 35 seeds to decide), so every hop
        # count runs 40.
        out += _pair(f"hops{h}-noagg", _spec(f"hops{h}-noagg", hops=h, aggregation=False), quick=q, seeds=40)
    out += _scope_ablation(q)
    # Reported only (W1c): fewer seeds.
    out += _pair("hops3-sepch", _spec("hops3-sepch", hops=3, separate=True), seeds=3, quick=q, quick_seeds=1)
    for n in FLOWS[1:]:
        out += _pair(f"flows{n}", _spec(f"flows{n}", n_flows=n), quick=q)
    out += _tso_ablation(q)
    # Fig. 20: the parking lot with Minstrel and with every link at each fixed rate (the paper's
    # four schemes; FQ-CoDel, beyond the paper, with Minstrel only). At 6.5 and 13 Mb/s CUBIC
    # takes some 25 s (RTTs of seconds) to fill FIFO-1000, so quick mode keeps their full length:
    # at those rates a 100 s run simulates in well under a second.
    for setting in PARKING_SETTINGS:
        out += _pair(_parking_name(setting), _parking(setting), quick=None if setting in ("6.5", "13") else q,
                     fq_codel=setting == "minstrel")
    # Figures only (Figs. 11–12): fewer seeds.
    out += _pair("distance", _spec("distance"), vary=[("stations[0].distance_m", DISTANCES)], seeds=3, quick=q,
                 quick_seeds=1)
    short = _spec("short")
    short["sim"].update({"duration": "15s", "warmup": "0s"})
    # §V-C.1: "every experiment is repeated around 10 times".
    out += _pair("short", short, vary=[("sim.duration", [f"{s}s" for s in SHORT_S])], seeds=10,
                 quick={"sim": {"warmup": "0s"}})
    # W+2, beyond the paper (reported): fewer seeds.
    for mode in OFDMA_MODES:
        out += _pair(f"he-{mode}", _ofdma_spec(mode), seeds=3, quick=q, quick_seeds=2)
    # Fig. 5: the step rules, on the 3-hop chain (figure only).
    var = _spec("variants", hops=3)
    var["ap"]["buffer_sizer"] = "wqm"
    out.append(SweepDef("variants", var, [("ap.wqm_variant", VARIANTS)], seeds=3, quick_seeds=1, quick=q))
    # W6: bufferbloat on a 6.5 Mb/s link (HT 20 MHz MCS 0, long GI), FIFO-1000.
    slow = _spec("slow")
    slow["phy"].update({"channel_width": 20, "guard_interval": 800})
    slow["stations"] = [{"count": 1, "mcs": 0, "nss": 1}]
    slow["sim"].update({"duration": "40s", "warmup": "15s"})
    out.append(SweepDef("slow", slow, [("ap.qdisc", ["fifo"])], seeds=SEEDS, quick_seeds=QUICK_SEEDS,
                        quick={"sim": {"duration": "30s"}}))
    return out


def _scope_name(hops: int) -> str:
    """The sweep of W3's ablation at `hops` hops (its WQM twin adds "-wqm")."""
    return f"hops{hops}-noagg-station"


def _scope_ablation(quick: dict) -> list[SweepDef]:
    """W3's ablation: the chains without aggregation beyond one hop with a qdisc per next hop
    (`ap.qdisc_scope = "station"`, mac80211's per-station queues since Linux 4.10) instead of
    one per interface, FIFO-1000 (a sweep over ap.qdisc of one value, as the pairs) and WQM, on
    the first SCOPE_SEEDS seeds of the hops{h}-noagg runs. At one hop the AP has one next hop
    and the station forwards nothing, so the two scopes run alike there."""
    out = []
    for h in HOPS[1:]:
        base = _spec(_scope_name(h), hops=h, aggregation=False)
        base["ap"]["qdisc_scope"] = "station"
        wqm = copy.deepcopy(base)
        wqm["ap"]["buffer_sizer"] = "wqm"
        wqm["name"] += "-wqm"
        out += [SweepDef(_scope_name(h), base, [("ap.qdisc", ["fifo"])], seeds=SCOPE_SEEDS, quick_seeds=1,
                         quick=quick),
                SweepDef(_scope_name(h) + "-wqm", wqm, [], seeds=SCOPE_SEEDS, quick_seeds=1, quick=quick)]
    return out


def _tso_ablation(quick: dict) -> list[SweepDef]:
    """W4's ablation: the 3-flow case with the senders' TSO/GSO bursts (`TSO`), FIFO-1000 (a
    sweep over ap.qdisc of one value, as the pairs) and WQM."""
    base = _spec("flows3-tso", n_flows=3)
    for f in base["flows"]:
        if f["pattern"] == "tcp":
            f["tso"] = TSO
    wqm = copy.deepcopy(base)
    wqm["ap"]["buffer_sizer"] = "wqm"
    wqm["name"] += "-wqm"
    return [SweepDef("flows3-tso", base, [("ap.qdisc", ["fifo"])], seeds=SEEDS, quick_seeds=QUICK_SEEDS, quick=quick),
            SweepDef("flows3-tso-wqm", wqm, [], seeds=SEEDS, quick_seeds=QUICK_SEEDS, quick=quick)]


def _parking_name(setting: str) -> str:
    """The sweep pair of a parking-lot rate setting ("minstrel" or a key of PARKING_FIXED)."""
    return "parking" if setting == "minstrel" else f"parking-{setting}mbps"


def _parking(setting: str) -> dict:
    """The parking lot of Fig. 19 (three flows from the gateway to the nodes 1, 2 and 3 hops
    away), with Minstrel-HT as the other cases or every link fixed at one of Fig. 20's rates: the
    HT 20 MHz MCS and guard interval giving that rate (PARKING_FIXED), aggregation as ath9k does
    it at that rate (none at 6.5 Mb/s, `mac.aggregation_min_rate`; at most 4 ms otherwise)."""
    spec = _spec(_parking_name(setting), hops=3, flows_to=[0, 1, 2])
    if setting == "minstrel":
        return spec
    mcs, nss, gi, control = PARKING_FIXED[setting]
    spec["phy"].update({"channel_width": 20, "guard_interval": gi, "control_rate": control})
    for st in spec["stations"]:
        st.update({"rate_control": "fixed", "mcs": mcs, "nss": nss})
    return spec

