"""Analytic references for the 802.11 cell model, written independently of the simulator.

Used by `reference/cell/models.py` (which writes the CSVs the Rust validation tests read) and by
the `phy-mac` suite of `lasthop reproduce`. Only the standard library is used; PHY durations are computed here from the standard's
formulas (IEEE 802.11-2020 §17.4.3 for non-HT OFDM, §19.4.3 for HT, §21.4.3 for VHT), with
N_DBPS taken from the MCS tables.

1. Closed-form A-MPDU goodput (one saturated downlink station, no collisions, no errors,
   no beacons): every cycle is AIFS + backoff + PPDU + SIFS + Block Ack, with the backoff
   uniform on [0, CWmin] slots, so
        T_cycle = AIFS + (CWmin / 2)·slot + T_PPDU(PSDU(N)) + SIFS + T_BA
        goodput = N · 8 · L_ip / T_cycle
   where PSDU(N) = (N − 1)·pad4(4 + L_mpdu) + 4 + L_mpdu and L_mpdu = 26 + 8 + L_ip + 4.

2. Bianchi's saturation model (G. Bianchi, "Performance analysis of the IEEE 802.11
   distributed coordination function", IEEE JSAC 18(3), 2000), with the finite retry limit of
   the standard (stages 0..R−1; after the R-th failed attempt the frame is dropped and the
   station returns to stage 0; cf. Wu et al., INFOCOM 2002):
        τ = Σ_{i<R} p^i / Σ_{i<R} p^i (W_i + 1)/2,   W_i = min(2^i (CWmin+1), CWmax+1)
        p = 1 − (1 − τ)^(n−1)
        S = P_s P_tr · 8·L_ip / ((1 − P_tr) σ + P_tr P_s T_s + P_tr (1 − P_s) T_c)
   with T_s = T_DATA + SIFS + T_ACK + DIFS and T_c = T_DATA + EIFS, EIFS = SIFS + T_ACK(6 Mb/s)
   + DIFS (stations that did not transmit see an undecodable frame, §10.3.2.3.7).

3. The same model for EDCA stations sending A-MPDUs (`bianchi_ampdu`): every attempt is one
   PPDU of N MPDUs, a success carries N·8·L_ip bits, T_s = T_PPDU + SIFS + T_BA + AIFS and
   T_c = T_PPDU + AIFS (+ the EIFS difference where bystanders defer EIFS); with a Block Ack
   window of 256 the Block Ack is the compressed one with a 32-octet bitmap (56 octets,
   IEEE 802.11-2020 §9.3.1.8). HE SU PPDU durations follow IEEE 802.11ax-2021 §27.4.3.
"""
from __future__ import annotations

import math
from fractions import Fraction

US = 1000  # ns

# ---------------------------------------------------------------- PHY durations (ns)

LEGACY_NDBPS = {6: 24, 9: 36, 12: 48, 18: 72, 24: 96, 36: 144, 48: 192, 54: 216}


def legacy_txtime(rate_mbps: int, nbytes: int) -> int:
    """§17.4.3: 16 µs preamble + 4 µs SIGNAL + 4 µs × ceil((16 + 8L + 6) / N_DBPS)."""
    nsym = math.ceil((16 + 8 * nbytes + 6) / LEGACY_NDBPS[rate_mbps])
    return 20 * US + 4 * US * nsym


def ht_txtime(ndbps: int, nss: int, nbytes: int, n_es: int = 1) -> int:
    """§19.3.13 / §19.4.3, HT-mixed, 800 ns GI: L-STF+L-LTF+L-SIG 20, HT-SIG 8, HT-STF 4,
    N_LTF × 4 µs, data symbols of 4 µs."""
    n_ltf = {1: 1, 2: 2, 3: 4, 4: 4}[nss]
    nsym = math.ceil((8 * nbytes + 16 + 6 * n_es) / ndbps)
    return (20 + 8 + 4 + 4 * n_ltf) * US + 4 * US * nsym


def vht_txtime(ndbps: int, nss: int, nbytes: int, n_es: int, short_gi: bool = False) -> int:
    """§21.4.3: L-STF 8 + L-LTF 8 + L-SIG 4 + VHT-SIG-A 8 + VHT-STF 4 + N_VHTLTF × 4 +
    VHT-SIG-B 4, then data; BCC: N_SYM = ceil((8L + 16 + 6 N_ES) / N_DBPS)."""
    n_ltf = {1: 1, 2: 2, 3: 4, 4: 4, 5: 6, 6: 6, 7: 8, 8: 8}[nss]
    pre = (8 + 8 + 4 + 8 + 4 + 4 * n_ltf + 4) * US
    nsym = math.ceil((8 * nbytes + 16 + 6 * n_es) / ndbps)
    if short_gi:
        return pre + 4 * US * math.ceil(Fraction(3600 * nsym, 4000))
    return pre + 4 * US * nsym


def he_su_txtime(ndbps: int, nss: int, nbytes: int, n_es: int = 1, gi_ns: int = 800) -> int:
    """IEEE 802.11ax-2021 §27.4.3, HE SU PPDU: L-STF 8 + L-LTF 8 + L-SIG 4 + RL-SIG 4 +
    HE-SIG-A 8 + HE-STF 4 µs, N_HE-LTF 2× HE-LTF symbols (6.4 µs + GI), then N_SYM data
    symbols of 12.8 µs + GI with N_SYM = ceil((8L + 16 + 6 N_ES) / N_DBPS) (the BCC count; no
    LDPC extra symbol, no packet extension). `ndbps` is the whole PPDU's, over all streams."""
    n_ltf = {1: 1, 2: 2, 3: 4, 4: 4, 5: 6, 6: 6, 7: 8, 8: 8}[nss]
    pre = (8 + 8 + 4 + 4 + 8 + 4) * US + n_ltf * (6400 + gi_ns)
    nsym = math.ceil((8 * nbytes + 16 + 6 * n_es) / ndbps)
    return pre + nsym * (12800 + gi_ns)


# ---------------------------------------------------------------- MAC constants

SLOT = 9 * US
SIFS = 16 * US
QOS_HDR, DATA_HDR, LLC, FCS, DELIM = 26, 24, 8, 4, 4
BA_BYTES, ACK_BYTES = 32, 14
BA256_BYTES = 56  # compressed Block Ack with a 256-bit bitmap (HE)


def pad4(x: int) -> int:
    return (x + 3) & ~3


def psdu_len(n: int, ip: int) -> int:
    mpdu = QOS_HDR + LLC + ip + FCS
    return (n - 1) * pad4(DELIM + mpdu) + DELIM + mpdu


# ---------------------------------------------------------------- 1. closed form

# (label, txtime(psdu) function, phy rate for the record)
CONFIGS = {
    # VHT 80 MHz, MCS 9, NSS 2, 800 ns GI: N_DBPS = 3120 (2 × 1560); N_ES = 3 per the VHT MCS
    # table for 80 MHz, NSS 2 (see reference/phy/rates.csv).
    "vht80-mcs9-nss2": (lambda b: vht_txtime(3120, 2, b, 3), 780.0),
    # VHT 80 MHz, MCS 7, NSS 1, 800 ns GI: N_DBPS = 1170, N_ES = 1
    "vht80-mcs7-nss1": (lambda b: vht_txtime(1170, 1, b, 1), 292.5),
    # HT 20 MHz, MCS 7, 1 stream, 800 ns GI: N_DBPS = 260
    "ht20-mcs7-nss1": (lambda b: ht_txtime(260, 1, b), 65.0),
}


def closed_form_goodput(txtime, n: int, ip: int, aifsn: int = 3, cw_min: int = 15, control_mbps: int = 24) -> float:
    t_ba = legacy_txtime(control_mbps, BA_BYTES)
    aifs = SIFS + aifsn * SLOT
    cycle_ns = aifs + Fraction(cw_min, 2) * SLOT + txtime(psdu_len(n, ip)) + SIFS + t_ba
    return float(Fraction(n * 8 * ip * 10**9) / cycle_ns)


# ---------------------------------------------------------------- 2. Bianchi


def bianchi(n: int, ip: int, rate_mbps: int = 54, control_mbps: int = 24, cw_min: int = 15,
            cw_max: int = 1023, retry_limit: int = 7, difs_aifsn: int = 2,
            eifs: bool = False) -> tuple[float, float, float]:
    """Saturation throughput (bit/s), τ and p for n stations, basic access."""
    difs = SIFS + difs_aifsn * SLOT
    t_data = legacy_txtime(rate_mbps, DATA_HDR + LLC + ip + FCS)
    t_ack = legacy_txtime(control_mbps, ACK_BYTES)
    eifs_time = SIFS + legacy_txtime(6, ACK_BYTES) + difs
    ts = t_data + SIFS + t_ack + difs
    tc = t_data + (eifs_time if eifs else difs)
    return saturation(n, ts, tc, 8 * ip, cw_min, cw_max, retry_limit)


def bianchi_ampdu(n: int, n_mpdus: int, ip: int, txtime, aifsn: int = 3, control_mbps: int = 24,
                  ba_bytes: int = BA256_BYTES, cw_min: int = 15, cw_max: int = 1023,
                  retry_limit: int = 7, eifs: bool = False) -> tuple[float, float, float]:
    """Saturation goodput (IP bit/s), τ and p for n EDCA stations each sending A-MPDUs of
    `n_mpdus` MPDUs of `ip`-octet IP packets, `txtime(psdu_octets)` their PPDU's duration in ns.
    A success: PPDU + SIFS + Block Ack + AIFS; a collision: PPDU + AIFS, or + EIFS − DIFS + AIFS
    (§10.3.2.3.7) where bystanders defer EIFS."""
    aifs = SIFS + aifsn * SLOT
    t_ppdu = txtime(psdu_len(n_mpdus, ip))
    t_ba = legacy_txtime(control_mbps, ba_bytes)
    eifs_extra = SIFS + legacy_txtime(6, ACK_BYTES) if eifs else 0
    ts = t_ppdu + SIFS + t_ba + aifs
    tc = t_ppdu + aifs + eifs_extra
    return saturation(n, ts, tc, n_mpdus * 8 * ip, cw_min, cw_max, retry_limit)


def saturation(n: int, ts: float, tc: float, bits: int, cw_min: int = 15, cw_max: int = 1023,
               retry_limit: int = 7) -> tuple[float, float, float]:
    """Bianchi's fixed point and throughput: `bits` delivered per success, a success holding
    the channel `ts` ns and a collision `tc` ns."""
    W = [min((cw_min + 1) << i, cw_max + 1) for i in range(retry_limit)]

    def tau_of(p: float) -> float:
        num = sum(p**i for i in range(retry_limit))
        den = sum(p**i * (W[i] + 1) / 2 for i in range(retry_limit))
        return num / den

    # p = 1 - (1 - τ(p))^(n-1) by bisection (the right side rises with p... solve f(p)=0)
    lo, hi = 0.0, 1.0
    for _ in range(200):
        mid = (lo + hi) / 2
        f = 1 - (1 - tau_of(mid)) ** (n - 1) - mid
        if f > 0:
            lo = mid
        else:
            hi = mid
    p = (lo + hi) / 2
    tau = tau_of(p)
    ptr = 1 - (1 - tau) ** n
    ps = n * tau * (1 - tau) ** (n - 1) / ptr
    s = ps * ptr * bits / ((1 - ptr) * SLOT + ptr * ps * ts + ptr * (1 - ps) * tc) * 1e9
    return s, tau, p
