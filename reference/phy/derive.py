#!/usr/bin/env python3
"""Derive the PHY reference vectors (rates.csv, durations.csv) for lasthop-wifi.

Independent of the Rust code: written directly from the IEEE 802.11-2020 / 802.11ax-2021
formulas, stdlib only, exact arithmetic with fractions.Fraction (times in microseconds,
converted to integer nanoseconds at the end and asserted to be exact).

Usage:  python3 reference/phy/derive.py        (writes the CSVs next to this script)
        python3 reference/phy/derive.py --check (exits 1 if the CSVs on disk differ)
"""
import csv
import io
import math
import os
import sys
from fractions import Fraction as Fr

HERE = os.path.dirname(os.path.abspath(__file__))

# ---------------------------------------------------------------------------------------------
# Modulation and coding (Table 17-4 for non-HT; HT/VHT/HE MCS tables of §19.5, §21.5, §27.5)
# ---------------------------------------------------------------------------------------------
BPSK, QPSK, QAM16, QAM64, QAM256, QAM1024 = 1, 2, 4, 6, 8, 10
R12, R23, R34, R56 = Fr(1, 2), Fr(2, 3), Fr(3, 4), Fr(5, 6)

# non-HT: rate in Mb/s -> (bits per subcarrier, code rate)
NONHT = [(6, BPSK, R12), (9, BPSK, R34), (12, QPSK, R12), (18, QPSK, R34),
         (24, QAM16, R12), (36, QAM16, R34), (48, QAM64, R23), (54, QAM64, R34)]

# HT/VHT/HE MCS index -> (bits per subcarrier, code rate)
MCS = {0: (BPSK, R12), 1: (QPSK, R12), 2: (QPSK, R34), 3: (QAM16, R12), 4: (QAM16, R34),
       5: (QAM64, R23), 6: (QAM64, R34), 7: (QAM64, R56), 8: (QAM256, R34), 9: (QAM256, R56),
       10: (QAM1024, R34), 11: (QAM1024, R56)}

# data subcarriers per stream
N_SD = {
    "ofdm": {20: 48},
    "ht": {20: 52, 40: 108},
    "vht": {20: 52, 40: 108, 80: 234, 160: 468},
    # HE full-band RU: 242-, 484-, 996-, 2x996-tone
    "he": {20: 234, 40: 468, 80: 980, 160: 1960},
}

# Data symbol duration (incl. GI) in microseconds.
def t_sym(std, gi_ns):
    gi = Fr(gi_ns, 1000)
    if std == "ofdm":
        return Fr(4)
    if std in ("ht", "vht"):
        return Fr(32, 10) + gi      # 3.2 us FFT period + GI
    return Fr(128, 10) + gi         # HE: 12.8 us + GI


def ncbps_ndbps(std, mcs, nss, width):
    """(N_CBPS, N_DBPS as an exact Fraction) over all streams."""
    if std == "ofdm":
        _, bpsc, r = NONHT[mcs]
        ncbps = N_SD["ofdm"][20] * bpsc
        return ncbps, ncbps * r
    bpscs, r = MCS[mcs]
    ncbps = N_SD[std][width] * bpscs * nss
    return ncbps, ncbps * r


# VHT combinations marked "not valid" in the §21.5 MCS tables.
def vht_valid(mcs, nss, width):
    if width == 20 and mcs == 9 and nss in (1, 2, 4, 5, 7, 8):
        return False
    if width == 80 and mcs == 6 and nss in (3, 7):
        return False
    if width == 80 and mcs == 9 and nss == 6:
        return False
    if width == 160 and mcs == 9 and nss == 3:
        return False
    return True


def n_es(std, mcs, nss, width):
    """Number of BCC encoders."""
    ncbps, ndbps = ncbps_ndbps(std, mcs, nss, width)
    if std in ("ofdm", "he"):
        return 1
    # Rate of this MCS with the 400 ns GI (3.6 us symbol), in Mb/s.
    sgi_rate = ndbps / Fr(36, 10)
    if std == "ht":
        return 2 if sgi_rate > 300 else 1
    # VHT: one encoder per 600 Mb/s at short GI, then the smallest count that splits both
    # N_DBPS and N_CBPS evenly between encoders.
    e = max(1, math.ceil(sgi_rate / 600))
    while ndbps % e != 0 or ncbps % e != 0:
        e += 1
    return e


def int_ndbps(std, mcs, nss, width):
    _, ndbps = ncbps_ndbps(std, mcs, nss, width)
    return math.floor(ndbps)


def data_rate(std, mcs, nss, width, gi):
    """Exact data rate in bit/s."""
    _, ndbps = ncbps_ndbps(std, mcs, nss, width)
    return ndbps / (t_sym(std, gi) / 1_000_000)


# ---------------------------------------------------------------------------------------------
# TXTIME
# ---------------------------------------------------------------------------------------------
def ltf_count(nss):
    return {1: 1, 2: 2, 3: 4, 4: 4, 5: 6, 6: 6, 7: 8, 8: 8}[nss]


def sig_ext(band):
    return Fr(6) if band == "2.4" else Fr(0)


def txtime_us(std, mcs, nss, width, gi, band, length):
    ndbps = int_ndbps(std, mcs, nss, width)
    if std == "ofdm":
        # Clause 17 / 18: preamble 16 + SIGNAL 4 + 4 us per symbol (+6 us ERP signal ext.)
        nsym = math.ceil(Fr(16 + 8 * length + 6, ndbps))
        return Fr(16) + Fr(4) + 4 * nsym + sig_ext(band)

    if std == "ht":
        # L-STF 8, L-LTF 8, L-SIG 4, HT-SIG 8, HT-STF 4, HT-LTF 4 each
        pre = Fr(8 + 8 + 4 + 8 + 4 + 4 * ltf_count(nss))
    elif std == "vht":
        # L-STF 8, L-LTF 8, L-SIG 4, VHT-SIG-A 8, VHT-STF 4, VHT-LTF 4 each, VHT-SIG-B 4
        pre = Fr(8 + 8 + 4 + 8 + 4 + 4 * ltf_count(nss) + 4)
    else:
        # L-STF 8, L-LTF 8, L-SIG 4, RL-SIG 4, HE-SIG-A 8, HE-STF 4, HE-LTFs
        ltf_sym = Fr(64, 10) + Fr(gi, 1000) if gi in (800, 1600) else Fr(128, 10) + Fr(32, 10)
        pre = Fr(8 + 8 + 4 + 4 + 8 + 4) + ltf_count(nss) * ltf_sym

    if length == 0:                      # NDP: no Data field
        return pre + sig_ext(band)

    if std == "he":
        # LDPC: no tail bits; simplified N_SYM (no a-factor / LDPC extra symbol), T_PE = 0
        nsym = math.ceil(Fr(8 * length + 16, ndbps))
        return pre + nsym * t_sym("he", gi) + sig_ext(band)

    nsym = math.ceil(Fr(8 * length + 16 + 6 * n_es(std, mcs, nss, width), ndbps))
    if gi == 400:
        # T_SYML * ceil(T_SYMS * N_SYM / T_SYML)
        data = Fr(4) * math.ceil(Fr(36, 10) * nsym / Fr(4))
    else:
        data = Fr(4) * nsym
    return pre + data + sig_ext(band)


def to_ns(us):
    ns = us * 1000
    assert ns.denominator == 1, us
    return int(ns)


# ---------------------------------------------------------------------------------------------
# Row sets
# ---------------------------------------------------------------------------------------------
def rate_rows():
    rows = []
    for m in range(8):
        rows.append(("ofdm", m, 1, 20, 800))
    for mcs in range(8):
        for nss in (1, 2, 3, 4):
            for w in (20, 40):
                for gi in (800, 400):
                    rows.append(("ht", mcs, nss, w, gi))
    for mcs in range(10):
        for nss in range(1, 9):
            for w in (20, 40, 80, 160):
                for gi in (800, 400):
                    if vht_valid(mcs, nss, w):
                        rows.append(("vht", mcs, nss, w, gi))
    for mcs in range(12):
        for nss in (1, 2, 3, 4, 8):
            for w in (20, 40, 80, 160):
                for gi in (800, 1600, 3200):
                    rows.append(("he", mcs, nss, w, gi))
    out = []
    for (s, m, n, w, g) in rows:
        rate = data_rate(s, m, n, w, g)
        out.append((s, m, n, w, g, int_ndbps(s, m, n, w), math.floor(rate)))
    return out


def duration_rows():
    cases = []
    lens = (0, 14, 32, 40, 100, 1500, 1538, 3839, 7935, 65535)
    for band in ("5", "2.4"):
        for m in range(8):
            for L in (14, 20, 32, 1500):
                cases.append(("ofdm", m, 1, 20, 800, band, L))
    cases.append(("ofdm", 0, 1, 20, 800, "5", 4095))
    for (m, n, w, g) in [(0, 1, 20, 800), (7, 1, 20, 800), (7, 1, 20, 400), (7, 3, 40, 400),
                         (7, 4, 40, 400), (5, 2, 40, 800), (4, 3, 20, 400)]:
        for band in ("5", "2.4"):
            for L in lens:
                cases.append(("ht", m, n, w, g, band, L))
    for (m, n, w, g) in [(0, 1, 20, 800), (9, 1, 80, 400), (9, 2, 80, 800), (9, 3, 20, 400),
                         (8, 4, 160, 400), (2, 7, 80, 800), (7, 8, 160, 400), (9, 7, 160, 800),
                         (5, 5, 40, 400)]:
        for L in lens + (1_048_575,):
            cases.append(("vht", m, n, w, g, "5", L))
    for (m, n, w, g) in [(0, 1, 20, 800), (11, 1, 80, 800), (11, 2, 80, 800), (9, 2, 160, 1600),
                         (7, 4, 40, 3200), (11, 8, 160, 800), (3, 3, 20, 1600)]:
        for band in ("5", "6", "2.4"):
            for L in lens + (6_500_631,):
                cases.append(("he", m, n, w, g, band, L))
    return [c + (to_ns(txtime_us(*c)),) for c in cases]


def render(header, rows):
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(header)
    for r in rows:
        w.writerow(r)
    return buf.getvalue()


def self_check():
    """Hand-checked anchors (see README.md)."""
    def mbps(s, m, n, w, g):
        return data_rate(s, m, n, w, g) / 1_000_000
    assert mbps("ht", 7, 1, 20, 800) == 65
    assert mbps("ht", 7, 3, 40, 400) == 450
    assert math.floor(data_rate("vht", 9, 1, 80, 400)) == 433_333_333
    assert mbps("vht", 9, 2, 80, 800) == 780
    assert math.floor(data_rate("he", 11, 1, 80, 800)) == 600_490_196
    assert round(mbps("he", 11, 2, 80, 800)) == 1201
    assert to_ns(txtime_us("ofdm", 4, 1, 20, 800, "5", 14)) == 28_000     # Ack at 24 Mb/s
    assert to_ns(txtime_us("ofdm", 4, 1, 20, 800, "5", 32)) == 32_000     # compressed BA
    assert to_ns(txtime_us("ofdm", 0, 1, 20, 800, "5", 4095)) == 5_484_000
    assert n_es("vht", 2, 7, 80) == 3 and n_es("vht", 9, 7, 160) == 12
    assert n_es("vht", 9, 1, 80) == 1 and n_es("ht", 7, 3, 40) == 2


def main():
    self_check()
    files = {
        "rates.csv": render(("standard", "mcs", "nss", "width", "gi", "n_dbps", "rate_bps"),
                            rate_rows()),
        "durations.csv": render(("standard", "mcs", "nss", "width", "gi", "band", "psdu_bytes",
                                 "txtime_ns"), duration_rows()),
    }
    check = "--check" in sys.argv
    bad = False
    for name, text in files.items():
        path = os.path.join(HERE, name)
        if check:
            with open(path) as f:
                if f.read() != text:
                    print(f"{name} differs from derive.py output")
                    bad = True
        else:
            with open(path, "w") as f:
                f.write(text)
            print(f"wrote {path} ({text.count(chr(10)) - 1} rows)")
    sys.exit(1 if bad else 0)


if __name__ == "__main__":
    main()
