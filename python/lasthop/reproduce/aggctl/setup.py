"""The aggctl suite's setup: the paper's constants, the specs of its sweeps (`sweeps`), and the
closed-form goodput of GP theory (`gp_theory`; the derivation is in the package's docstring)."""
from __future__ import annotations

import math
import random

from ... import analytic as an
from ..framework import SweepDef


UDP_PAYLOAD = 1472


PACKET_BITS = 1500 * 8


def udp_payload(ip_bps: float) -> float:
    """An aggctl flow's goodput, which counts IP octets, as UDP payload (UDP_PAYLOAD of each
    1500-octet packet): the rate its sender reports and the closed form counts."""
    return ip_bps * UDP_PAYLOAD / (PACKET_BITS // 8)


WIRED_DELAY_MS = 1.0


N_MAX, N_E = 64, 32


RATES_1 = [100, 200, 300, 400, 450, 500, 525, 550, 575, 600, 625, 650, 675, 700]


RATES_1_QUICK = [100, 300, 450, 525, 575, 600, 625, 650, 700]


RATES_10 = [10, 20, 30, 40, 45, 50, 55, 60, 65, 70]


RATES_10_QUICK = [10, 30, 45, 55, 60, 65, 70]


NE = [8, 16, 24, 32, 40, 48, 56, 64]


NE_QUICK = [16, 32, 40, 48, 64]


RECEIVERS = [1, 2, 5, 10, 15, 20]


RECEIVERS_QUICK = [1, 5, 20]


DELTAS = ["100ms", "250ms", "500ms", "1s"]


DELTAS_QUICK = ["100ms", "500ms"]


# The paper's K (Algorithm 1; Mb/s per packet of aggregation error, per update).
KS = [0.5, 1.0, 2.0, 4.0, 8.0, 16.0]


KS_QUICK = [1.0, 4.0, 16.0]


PLACEMENTS = 3


RATE_CONFIGS = [("rate-1sta", "1 station"), ("rate-10sta", "10 stations (flow 0)"),
                ("rate-uplink", "1 station + uplink flow")]


# Fig. 9 (§IV.E.3): A-MPDUs at 64 for Δt1 = 2.24 s after the change, the rate settled Δt2 =
# 1.26 s later.
FIG9_DT1, FIG9_DT2 = 2.24, 1.26


T_CHANGE = 20.0


# NS-3.29's defaults for the random placements (YansWifiChannelHelper::Default, YansWifiPhy).
NS3_CHANNEL = {"exponent": 3.0, "tx_power_dbm": 16.0206, "noise_figure_db": 7.0}


# The testbed of Fig. 10: "almost always three spatial streams", MCS 9 (§IV.A, Fig. 6a).
TESTBED_NSS = 3


# Its AP's FIFO (packets): not given; Linux's default txqueuelen (see the module docstring).
TESTBED_AP_QUEUE = 1000


# Its radios protect each A-MPDU with an RTS/CTS, Broadcom's default on both sides (see the
# module docstring): the AP's `ap.rts` and the clients' `stations[].rts`.
TESTBED_RTS = "ampdu"


# The senders of Fig. 10 (§IV.F): a bulk writer behind Linux's socket send buffer; BBR before
# Linux 5.1's ACK-aggregation estimator (see the module docstring).
TESTBED_FLOWS = {
    "cubic": {"direction": "down", "pattern": "tcp", "cc": "cubic", "send_buffer": "linux"},
    "bbr": {"direction": "down", "pattern": "tcp", "cc": "bbr", "send_buffer": "linux", "extra_acked": False},
}


PAPER_CUBIC_DELAY_MS = 50.0


def _spec_k0(k: float, n: int) -> float:
    """The simulator's `aggctl.k0` (K0, Mb/s per packet; it applies K = K0/n per report) for the
    paper's gain K with n aggctl flows."""
    return k * n


def _base(name: str, duration: str = "30s", warmup: str = "15s", bin_: str = "100ms") -> dict:
    return {
        "name": name,
        "sim": {"duration": duration, "warmup": warmup, "seed": 1, "bin": bin_},
        "phy": {"standard": "vht", "band": "5GHz", "channel_width": 80, "guard_interval": 800},
        # The paper's receivers saw the packets of one aggregate with the same timestamp
        # (§II.B): their NIC handed each A-MPDU up at once, which its estimator relies on.
        "mac": {"aggregation": True, "max_ampdu_mpdus": N_MAX, "max_amsdu_bytes": 0, "rx_delivery": "ppdu"},
        "wired": {"rate": "10Gbps", "delay": f"{WIRED_DELAY_MS:g}ms"},
        "stations": [{"count": 1, "mcs": 9, "nss": 2}],
        "flows": [{"direction": "down", "pattern": "aggctl"}],
        "aggctl": {"target_aggregation": N_E, "interval": "500ms", "k0": _spec_k0(1.0, 1)},
    }


def _cbr(name: str, stations: int, uplink: bool) -> dict:
    s = _base(name, "6s", "1s")
    s["stations"] = [{"count": stations, "mcs": 9, "nss": 2}]
    s["flows"] = [{"direction": "down", "pattern": "cbr", "rate": "100Mbps", "stations": list(range(stations))}]
    if uplink:
        s["stations"].append({"count": 1, "mcs": 9, "nss": 2})
        s["flows"].append({"direction": "up", "pattern": "cbr", "rate": "100Mbps", "stations": 1})
    del s["aggctl"]
    return s


def _placement(k: int) -> list[dict]:
    """8 stations uniform in a 40 m square around the AP (placement k, fixed by k)."""
    rng = random.Random(1000 + k)
    out = []
    for _ in range(8):
        x, y = rng.uniform(-20, 20), rng.uniform(-20, 20)
        out.append({"count": 1, "nss": 1, "rate_control": "minstrel", "distance_m": round(max(1.0, math.hypot(x, y)), 2)})
    return out


def sweeps(quick: bool) -> list[SweepDef]:
    out = []
    r = [f"{x}Mbps" for x in RATES_1]
    rq = [f"{x}Mbps" for x in RATES_1_QUICK]
    q = {"sim": {"duration": "3s", "warmup": "0.5s"}}
    out.append(SweepDef("rate-1sta", _cbr("aggctl-rate-1sta", 1, False), [("flows[0].rate", r)], 5, 3, q,
                        [("flows[0].rate", rq)]))
    out.append(SweepDef("rate-10sta", _cbr("aggctl-rate-10sta", 10, False),
                        [("flows[0].rate", [f"{x}Mbps" for x in RATES_10])], 5, 3, q,
                        [("flows[0].rate", [f"{x}Mbps" for x in RATES_10_QUICK])]))
    out.append(SweepDef("rate-uplink", _cbr("aggctl-rate-uplink", 1, True), [("flows[0].rate", r)], 5, 3, q,
                        [("flows[0].rate", rq)]))
    sat = _base("aggctl-saturated", "6s", "1s")
    sat["flows"] = [{"direction": "down", "pattern": "saturated"}]
    del sat["aggctl"]
    out.append(SweepDef("saturated", sat, [], 5, 3, {"sim": {"duration": "3s", "warmup": "0.5s"}}))
    ne = _base("aggctl-ne", "50s", "20s")
    ne["aggctl"]["initial_rate"] = "300Mbps"
    out.append(SweepDef("ne", ne, [("aggctl.target_aggregation", NE)], 5, 3,
                        {"sim": {"duration": "25s", "warmup": "12s"}}, [("aggctl.target_aggregation", NE_QUICK)]))
    rc = _base("aggctl-receivers", "50s", "30s")
    out.append(SweepDef("receivers", rc, [("stations[0].count", RECEIVERS)], 5, 3,
                        {"sim": {"duration": "32s", "warmup": "22s"}}, [("stations[0].count", RECEIVERS_QUICK)]))
    gp1 = _base("aggctl-gp-nss1", "40s", "20s")
    gp1["stations"][0]["nss"] = 1
    gp1["aggctl"]["initial_rate"] = "200Mbps"
    out.append(SweepDef("gp-nss1", gp1, [], 5, 3, {"sim": {"duration": "25s", "warmup": "12s"}}))
    for k in range(PLACEMENTS):
        rnd = _base(f"aggctl-random{k}", "50s", "25s")
        rnd["stations"] = _placement(k)
        rnd["channel"] = dict(NS3_CHANNEL)
        if k == 0 or not quick:
            out.append(SweepDef(f"random{k}", rnd, [], 5, 3, {"sim": {"duration": "32s", "warmup": "20s"}}))
    nss = _base("aggctl-nss", "35s", "10s")
    nss["stations"][0]["nss_change"] = [f"{T_CHANGE:g}s", 1]
    nss["aggctl"]["initial_rate"] = "300Mbps"
    out.append(SweepDef("nss", nss, [], 8, 3, {"sim": {"duration": "30s"}}))
    cmp_a = _base("aggctl-cmp", "40s", "15s")
    cmp_a["stations"][0].update(nss=TESTBED_NSS, rts=TESTBED_RTS)
    cmp_a["ap"] = {"queue_limit": TESTBED_AP_QUEUE, "rts": TESTBED_RTS}
    cmp_a["aggctl"]["initial_rate"] = "300Mbps"
    out.append(SweepDef("cmp-aggctl", cmp_a, [], 5, 3, {"sim": {"duration": "20s", "warmup": "8s"}}))
    for cc, flow in TESTBED_FLOWS.items():
        cmp_t = _base(f"aggctl-cmp-{cc}", "40s", "15s")
        cmp_t["stations"][0].update(nss=TESTBED_NSS, rts=TESTBED_RTS)
        cmp_t["ap"] = {"queue_limit": TESTBED_AP_QUEUE, "rts": TESTBED_RTS}
        cmp_t["flows"] = [dict(flow)]
        del cmp_t["aggctl"]
        out.append(SweepDef(f"cmp-{cc}", cmp_t, [], 5, 3, {"sim": {"duration": "12s", "warmup": "4s"}}))
    st = _base("aggctl-stability", "45s", "25s")
    st["aggctl"]["initial_rate"] = "300Mbps"
    out.append(SweepDef("stability", st, [("aggctl.interval", DELTAS), ("aggctl.k0", [_spec_k0(k, 1) for k in KS])],
                        2, 1, {"sim": {"duration": "30s", "warmup": "15s"}},
                        [("aggctl.interval", DELTAS_QUICK), ("aggctl.k0", [_spec_k0(k, 1) for k in KS_QUICK])]))
    for name in ("ap-fifo", "ap-modern"):
        m = _modern_cell(f"aggctl-{name}")
        if name == "ap-fifo":
            del m["ap"]
        out.append(SweepDef(name, m, [], 3, 1, {"sim": {"duration": "32s", "warmup": "22s"}}))
    # A+3, beyond the paper: the same cell at an 802.11ax AP, single-user PPDUs or DL OFDMA.
    for mode in ("su", "dl"):
        m = _modern_cell(f"aggctl-he-{mode}")
        m["phy"] = {"standard": "he", "band": "5GHz", "channel_width": 80, "guard_interval": 800}
        if mode == "dl":
            m["mac"]["ofdma"] = {"dl": True, "scheduler": "txq", "max_users": 4}
        out.append(SweepDef(f"he-{mode}", m, [], 3, 1, {"sim": {"duration": "32s", "warmup": "22s"}}))
    return out


def _modern_cell(name: str) -> dict:
    """Three aggctl stations (MCS 9/7/4, two streams) and a CUBIC download beside them, behind
    FQ-CoDel, airtime fairness and a firmware queue under AQL."""
    m = _base(name, "50s", "30s")
    m["stations"] = [{"count": 1, "mcs": 9, "nss": 2}, {"count": 1, "mcs": 7, "nss": 2},
                     {"count": 1, "mcs": 4, "nss": 2}, {"count": 1, "mcs": 9, "nss": 2}]
    m["flows"] = [{"direction": "down", "pattern": "aggctl", "stations": [0, 1, 2]},
                  {"direction": "down", "pattern": "tcp", "cc": "cubic", "stations": 3}]
    m["ap"] = {"qdisc": "fq_codel", "scheduler": "airtime", "driver": "firmware", "aql": True}
    return m


def _vht_txtime(nss: int, mcs: int, nbytes: int) -> int:
    """VHT 80 MHz, 800 ns GI PPDU duration (ns), N_ES as the simulator's PHY model chooses it."""
    ndbps = {9: 1560, 8: 1404, 7: 1170, 4: 702}[mcs] * nss
    ncbps = 234 * 8 * nss if mcs >= 8 else {7: 234 * 6, 4: 234 * 4}[mcs] * nss
    nes = max(1, -(-ndbps // 2160))
    while nes < ndbps and (ndbps % nes or ncbps % nes):
        nes += 1
    return an.vht_txtime(ndbps, nss, nbytes, nes)


def gp_theory(n: int, nss: int = 2, mcs: int = 9, n_e: int = 32, ip: int = 1500,
              feedback_per_s: float = 10.0, beacons_per_s: float = 10.0) -> float:
    """Upper-limit sum goodput (bit/s of UDP payload) of n receivers held at n_e (see module doc)."""
    aifs = an.SIFS + 3 * an.SLOT
    backoff = 15 / 2 * an.SLOT
    t_ba = an.legacy_txtime(24, an.BA_BYTES)
    t_data = aifs + backoff + _vht_txtime(nss, mcs, an.psdu_len(n_e, ip)) + an.SIFS + t_ba
    t_fb = aifs + backoff + _vht_txtime(nss, mcs, an.psdu_len(1, 56)) + an.SIFS + t_ba
    t_beacon = an.SIFS + an.SLOT + an.legacy_txtime(6, 300)
    free = 1 - (beacons_per_s * t_beacon + feedback_per_s * n * t_fb) / 1e9
    return free * n_e * 8 * (ip - 28) / (t_data / 1e9)
