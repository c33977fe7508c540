#!/usr/bin/env python3
"""Regenerate `closed_form.csv` and `bianchi.csv` from the analytic models in
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
    print((here / "closed_form.csv").read_text())
    print((here / "bianchi.csv").read_text())


if __name__ == "__main__":
    main()
