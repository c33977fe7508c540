"""`lasthop bench --ofdma-cells`: 802.11ax OFDMA against single-user PPDUs on the cells where
it should matter, with and without the airtime queue limit.

Cells: two RRUL-like cells of `lasthop bench --tune-cells` (4 and 8 HE 80 MHz stations at mixed
rates, each with a CUBIC download, a CUBIC upload and a ping every 50 ms, behind the AP people
run: mac80211's FQ-CoDel, airtime DRR, a firmware queue), and a dense cell of 50 HE stations at
HE-MCS 7 with small packets (a 300-octet CBR stream each way at 200 kb/s and a ping every 100 ms
per station). Modes: single-user PPDUs only (`su`), DL OFDMA (`dl`), DL and UL OFDMA (`dl+ul`),
both with `scheduler = "txq"` (the AP's queues decide who rides which RU) and MU EDCA as OpenWrt
sets it. Each with `ap.aql` on and off. Figures (means over the seeds): the worst ping's p99,
the pings' mean delay, the bulk goodput (RRUL) or the delivered share of the offered load
(dense), and the worst station-direction's share of an equal split. They go to
`DIR/ofdma-cells.json`; the table is printed.
"""
from __future__ import annotations

import json
import math
import statistics
import sys
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import Any

from ..spec import normalize
from ..tune import score
from .tune_cells import CELLS as TUNE_CELLS, cell_doc

MODES = ("su", "dl", "dl+ul")


def dense_doc(secs: int) -> dict[str, Any]:
    """50 HE stations with small packets both ways and a ping each."""
    return {
        "name": "he-50sta-small",
        "description": "50 HE 80 MHz stations at HE-MCS 7, 300-octet CBR both ways and a ping each",
        "sim": {"duration": f"{secs}s", "warmup": "2s", "seed": 1},
        "phy": {"standard": "he", "channel_width": 80},
        "ap": {"qdisc": "fq_codel", "scheduler": "airtime", "driver": "firmware"},
        "wired": {"rate": "1Gbps", "delay": "10ms"},
        "stations": [{"count": 50, "mcs": 7, "nss": 1}],
        "flows": [{"stations": "all", "direction": "down", "pattern": "cbr", "rate": "200kbps", "packet_size": 300},
                  {"stations": "all", "direction": "up", "pattern": "cbr", "rate": "200kbps", "packet_size": 300},
                  {"stations": "all", "pattern": "ping", "interval": "100ms"}],
    }


def cells(secs: int) -> list[dict[str, Any]]:
    pick = {"he-4sta-fifo", "he-8sta-fq"}
    out = [cell_doc(n, std, st, q, secs) for n, std, st, q in TUNE_CELLS if n in pick]
    return out + [dense_doc(secs)]


def variant(doc: dict[str, Any], mode: str, aql: bool) -> dict[str, Any]:
    d = json.loads(json.dumps(doc))
    d["name"] = f"{doc['name']}-{mode.replace('+', '-')}-{'aql' if aql else 'noaql'}"
    d["ap"]["aql"] = aql
    d.setdefault("mac", {})["max_ampdu_mpdus"] = 256
    if mode != "su":
        d["mac"]["ofdma"] = {"dl": True, "ul": mode == "dl+ul", "scheduler": "txq", "max_users": 8}
    return d


def _run(args: tuple[dict[str, Any], int]) -> dict[str, Any]:
    from .. import _native

    doc, seed = args
    spec = normalize(doc, doc["name"], rules=True)
    data = json.loads(_native.run(spec.to_json(), seed, None))
    res = {"data": data}
    fig = score(res)
    pings = [f for f in data["flows"] if f.get("pattern") == "ping" and f["delay_ns"].get("samples")]
    fig["ping_mean_ms"] = statistics.fmean(f["delay_ns"]["mean"] for f in pings) / 1e6 if pings else math.nan
    bulk = [f for f in data["flows"] if f.get("pattern") != "ping"]
    offered = sum(f["offered_bytes"] for f in bulk)
    fig["delivered_frac"] = sum(f["delivered_bytes"] for f in bulk) / offered if offered else math.nan
    o = data.get("ofdma") or {}
    fig["users_per_ppdu"] = o.get("users_per_ppdu", 0.0)
    fig["users_per_trigger"] = (o.get("ul") or {}).get("users_per_trigger", 0.0)
    return fig


def run_ofdma_cells(out_dir: str, quick: bool = False, jobs: int | None = None) -> int:
    secs, seeds = (5, 1) if quick else (10, 3)
    jobs_list = [(c, m, a) for c in cells(secs) for m in MODES for a in (True, False)]
    tasks = [(variant(c, m, a), s) for c, m, a in jobs_list for s in range(1, seeds + 1)]
    print(f"OFDMA cells ({secs} s simulated, {seeds} seed(s) each, {len(tasks)} runs)", flush=True)
    t0 = time.perf_counter()
    with ProcessPoolExecutor(max_workers=jobs) as ex:
        figs = []
        for i, f in enumerate(ex.map(_run, tasks), 1):
            figs.append(f)
            print(f"\r  {i}/{len(tasks)} runs", end="", file=sys.stderr, flush=True)
    print(file=sys.stderr)
    rows = []
    keys = ("latency_ms", "ping_mean_ms", "goodput_bps", "delivered_frac", "worst_share", "users_per_ppdu", "users_per_trigger")
    for i, (c, m, a) in enumerate(jobs_list):
        part = figs[i * seeds:(i + 1) * seeds]
        row = {"cell": c["name"], "mode": m, "aql": a}
        row.update({k: statistics.fmean(p[k] for p in part) for k in keys})
        rows.append(row)
    print(f"{'cell':<16} {'mode':<6} {'AQL':<4} {'ping p99 ms':>11} {'ping mean':>9} {'goodput Mb/s':>12} "
          f"{'delivered':>9} {'worst share':>11} {'users/PPDU':>10} {'users/TF':>8}")
    for r in rows:
        print(f"{r['cell']:<16} {r['mode']:<6} {'on' if r['aql'] else 'off':<4} {r['latency_ms']:>11.1f} "
              f"{r['ping_mean_ms']:>9.1f} {r['goodput_bps'] / 1e6:>12.1f} {r['delivered_frac']:>9.3f} "
              f"{r['worst_share']:>11.2f} {r['users_per_ppdu']:>10.2f} {r['users_per_trigger']:>8.2f}")
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    path = out / "ofdma-cells.json"
    tmp = path.with_suffix(".json.tmp")
    tmp.write_text(json.dumps({"seconds": secs, "seeds": seeds, "rows": rows,
                               "wall_s": time.perf_counter() - t0}, indent=1), encoding="utf-8")
    tmp.replace(path)
    print(f"wrote {path}")
    return 0
