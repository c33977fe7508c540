#!/usr/bin/env python3
"""Regenerate `closed_form.csv`, `bianchi.csv` and `bianchi_ampdu.csv` from the analytic models in
`python/lasthop/analytic.py` (standard library only; no build needed):

    python3 reference/cell/models.py
"""
from __future__ import annotations

import csv
import importlib.util
from pathlib import Path

HERE = Path(__file__).resolve().parent
_spec = importlib.util.spec_from_file_location("analytic", HERE.parents[1] / "python" / "lasthop" / "analytic.py")
analytic = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(analytic)
CONFIGS, US, psdu_len = analytic.CONFIGS, analytic.US, analytic.psdu_len
closed_form_goodput, bianchi = analytic.closed_form_goodput, analytic.bianchi
bianchi_ampdu, he_su_txtime = analytic.bianchi_ampdu, analytic.he_su_txtime

# HE 80 MHz, HE-MCS 7, one stream, 800 ns GI: 980 data subcarriers x 6 bits x 5/6 = N_DBPS 4900
# (IEEE 802.11ax-2021 Table 27-111).
HE80_MCS7_NSS1 = ("he80-mcs7-nss1", lambda b: he_su_txtime(4900, 1, b))


def main() -> None:
    here = HERE
    with open(here / "closed_form.csv", "w", newline="") as fh:
        w = csv.writer(fh, lineterminator="\n")
        w.writerow(["config", "n_mpdus", "ip_bytes", "psdu_bytes", "ppdu_ns", "goodput_bps"])
        for cfg, (txtime, _rate) in CONFIGS.items():
            for n in (1, 8, 16, 32, 64):
                # keep to aPPDUMaxTime of VHT (5.484 ms) and the HT A-MPDU limit
                if txtime(psdu_len(n, 1500)) > 5484 * US or (cfg.startswith("ht") and psdu_len(n, 1500) > 65535):
                    continue
                g = closed_form_goodput(txtime, n, 1500)
                w.writerow([cfg, n, 1500, psdu_len(n, 1500), txtime(psdu_len(n, 1500)), f"{g:.1f}"])
    with open(here / "bianchi.csv", "w", newline="") as fh:
        w = csv.writer(fh, lineterminator="\n")
        w.writerow(["n_stations", "rate_mbps", "ip_bytes", "tau", "p", "throughput_bps", "throughput_eifs_bps"])
        for n in (1, 5, 10, 20):
            s, tau, p = bianchi(n, 1500)
            s_eifs, _, _ = bianchi(n, 1500, eifs=True)
            w.writerow([n, 54, 1500, f"{tau:.6f}", f"{p:.6f}", f"{s:.1f}", f"{s_eifs:.1f}"])
    with open(here / "bianchi_ampdu.csv", "w", newline="") as fh:
        w = csv.writer(fh, lineterminator="\n")
        w.writerow(["config", "n_stations", "n_mpdus", "ip_bytes", "ppdu_ns", "tau", "p", "goodput_bps"])
        cfg, txtime = HE80_MCS7_NSS1
        # the most MPDUs (Block Ack window 256) whose PPDU keeps to aPPDUMaxTime, 5.484 ms
        n_mpdus = max(k for k in range(1, 257) if txtime(psdu_len(k, 1500)) <= 5484 * US)
        for n in (4, 9, 18):
            s, tau, p = bianchi_ampdu(n, n_mpdus, 1500, txtime)
            w.writerow([cfg, n, n_mpdus, 1500, txtime(psdu_len(n_mpdus, 1500)), f"{tau:.6f}", f"{p:.6f}", f"{s:.1f}"])
    for name in ("closed_form.csv", "bianchi.csv", "bianchi_ampdu.csv"):
        print((here / name).read_text())


if __name__ == "__main__":
    main()
