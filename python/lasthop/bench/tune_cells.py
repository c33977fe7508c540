"""`lasthop bench --tune-cells`: `lasthop tune` on a matrix of RRUL-like cells, each against the
AP people run (mac80211's FQ-CoDel, airtime fairness, a firmware queue under AQL).

Each cell has 2, 4 or 8 stations at rates from MCS 1 to the top of the standard (802.11ac 80 MHz
or 802.11ax 80 MHz), each station with a CUBIC download, a CUBIC upload and a ping every 50 ms
(flent's RRUL shape, per station), and FQ-CoDel or a FIFO as the stations' own qdisc; 1 Gb/s
wired at 10 ms one way. For each, the table shows the baseline and the configuration tune
picks (worst ping p99, total goodput, the uploads' part of it, the worst share: the worst
station's download or upload over an equal share of the cell's, or its download over an equal
share of the downloads', whichever is less), the latency gain, whether the choice keeps tune's
floors (≥ 95 % of the goodput, that worst share ≥ 25 %), and the lever whose removal costs the
most latency (the ablation). The search's four best candidates run again
over 6 seeds and the choice is the best of them there; the baseline and the choice then run on 6
held-out seeds (`--quick`: 3 and 3), and the target is judged there. The
target: a gain of at least 2× with the floors kept. A cell that misses it is searched again with
the target's floor alone (`lasthop tune --upload-floor 0`: every download at 25 % of either equal
share, the uploads' floor left out) over the same run cache, into `<cell>/target-floor/`, and
reported on a line of its own. Figures go to `DIR/tune-cells.json`, every cell's tune output to
`DIR/tune-cells/<cell>/` (runs cached there: a rerun resumes).
"""
from __future__ import annotations

import json
import math
import sys
import time
from pathlib import Path
from typing import Any

from ..tune import GOODPUT_KEEP, SHARE_FLOOR, tune, write_toml
from ..tune_cli import FINALISTS

# (name, standard, [(mcs, nss) per station], the stations' qdisc)
CELLS: list[tuple[str, str, list[tuple[int, int]], str]] = [
    ("vht-2sta-fq", "vht", [(9, 2), (1, 1)], "fq_codel"),
    ("vht-2sta-equal-fifo", "vht", [(7, 2), (7, 2)], "fifo"),
    ("vht-4sta-fq", "vht", [(9, 2), (7, 2), (4, 1), (1, 1)], "fq_codel"),
    ("vht-4sta-fifo", "vht", [(9, 2), (7, 2), (4, 1), (1, 1)], "fifo"),
    ("vht-8sta-fq", "vht", [(9, 2), (8, 2), (7, 2), (5, 1), (4, 1), (3, 1), (2, 1), (1, 1)], "fq_codel"),
    ("he-2sta-fq", "he", [(11, 2), (2, 1)], "fq_codel"),
    ("he-4sta-fifo", "he", [(11, 2), (9, 2), (5, 1), (1, 1)], "fifo"),
    ("he-8sta-fq", "he", [(11, 2), (10, 2), (9, 2), (7, 1), (5, 1), (4, 1), (2, 1), (1, 1)], "fq_codel"),
]
TARGET_GAIN = 2.0


def cell_doc(name: str, standard: str, stations: list[tuple[int, int]], sta_qdisc: str, secs: int) -> dict[str, Any]:
    """One RRUL-like cell behind the default AP (mac80211's FQ-CoDel, airtime DRR, firmware
    queue under AQL: `ap.aql` is on by default with that driver)."""
    return {
        "name": name,
        "description": f"{len(stations)} {standard} stations at MCS " + ", ".join(f"{m}x{n}" for m, n in stations)
                       + f"; {sta_qdisc} in the stations; download, upload and ping each",
        "sim": {"duration": f"{secs}s", "warmup": "3s", "seed": 1},
        "phy": {"standard": standard, "channel_width": 80},
        "ap": {"qdisc": "fq_codel", "scheduler": "airtime", "driver": "firmware"},
        "wired": {"rate": "1Gbps", "delay": "10ms"},
        "stations": [{"mcs": m, "nss": n, "qdisc": sta_qdisc} for m, n in stations],
        "flows": [{"stations": "all", "direction": "down", "pattern": "tcp"},
                  {"stations": "all", "direction": "up", "pattern": "tcp"},
                  {"stations": "all", "pattern": "ping", "interval": "50ms"}],
    }


def _row(name: str, rep: dict[str, Any]) -> dict[str, Any]:
    """One cell's line; the target is judged on the confirmation's seeds when there is one (the
    search's own figures favour its choice)."""
    b, c = rep["baseline"], rep["chosen"]
    worst = max(rep["ablation"], key=lambda r: r["latency_ms"], default=None)
    gain = b["latency_ms"] / c["latency_ms"]
    k = rep.get("confirmed")
    judged_meets = k["meets_constraints"] if k else c["meets_constraints"]
    jb, jc, judged_gain = _judged(rep)
    # The target's floor as operators state it: every download at 25 % of an equal share of the
    # downloads, the uploads' floor left out (tune's own floors count both; `target_met`).
    downloads_only = (judged_gain >= TARGET_GAIN and jc["goodput_bps"] >= GOODPUT_KEEP * jb["goodput_bps"]
                      and jc["worst_down_own_share"] >= SHARE_FLOOR)
    return {"cell": name, "baseline": b, "chosen": c, "gain": gain, "meets_floors": c["meets_constraints"],
            "ablation": rep["ablation"], "target_met_downloads_only": downloads_only,
            "confirmed": k, "target_met": judged_meets and judged_gain >= TARGET_GAIN,
            "key_lever": worst["without"] if worst else None,
            "key_lever_latency_ms": worst["latency_ms"] if worst else None}


def _run_doc(spec: Path) -> dict[str, Any]:
    """The result document of `spec` at seed 1."""
    from ..api import run

    return run(str(spec), seed=1).doc


def breakdown(doc: dict[str, Any]) -> dict[str, Any]:
    """Where the worst ping's time goes under the chosen configuration (`doc`: its result at
    seed 1): the station
    whose ping has the largest p99, that p99, and its own upload's one-way p99 and goodput. The
    ping's reply waits in the station's transmit queue and for the station's access to the
    medium as the upload's packets do, so the upload's one-way delay is about the reply's half;
    what the RTT has beyond it is the request's way down: the AP's queues and the AP's access."""
    flows = doc["data"]["flows"]
    pings = [f for f in flows if f.get("pattern") == "ping" and f["delay_ns"].get("samples")]
    worst = max(pings, key=lambda f: f["delay_ns"]["p99"])
    k = worst["station"]
    up = next((f for f in flows if f.get("pattern") == "tcp" and f.get("direction") == "up" and f["station"] == k), None)
    sta = doc["spec"]["stations"][k]
    return {"station": k, "mcs": sta.get("mcs"), "nss": sta.get("nss"), "station_qdisc": sta.get("qdisc"),
            "ping_p99_ms": worst["delay_ns"]["p99"] / 1e6,
            "upload_p99_ms": up["delay_ns"]["p99"] / 1e6 if up and up["delay_ns"].get("samples") else None,
            "upload_bps": up["goodput_bps"] if up else None}


def airtime_need(docs: list[dict[str, Any]], base_goodput_bps: float) -> dict[str, Any]:
    """Airtime arithmetic for tune's floors: the fraction of the air that every station's download
    and upload at its floor (25 % of an equal share of 95 % of the baseline's goodput), and the
    rest of that goodput on the most efficient flow, need at the best efficiency each flow has in
    `docs` (result documents of one cell: its goodput per second of the airtime of its direction,
    `airtime_rx_ns` down, `airtime_tx_ns` up, which also carries the station's ACKs of its
    download). The air the channel has is the largest busy fraction of `docs` (the rest goes to
    AIFS and backoff). Above it, no configuration could keep the floors; below, the floors are out
    of the levers' reach, not the channel's."""
    # Every station's download and upload with bulk flows (tune's shares count these), at its
    # best efficiency over `docs`.
    best: dict[tuple[int, str], float] = {}
    busy = max(doc["data"]["channel"]["busy_frac"] for doc in docs)
    for doc in docs:
        sim = doc["spec"]["sim"]
        window_s = (sim["duration_ns"] - sim["warmup_ns"]) / 1e9
        goodput_by: dict[tuple[int, str], float] = {}
        for f in doc["data"]["flows"]:
            if f.get("pattern") != "ping" and f.get("direction") in ("down", "up"):
                k = (f["station"], f["direction"])
                goodput_by[k] = goodput_by.get(k, 0.0) + f["goodput_bps"]
        air = {(st["id"], d): ns / 1e9 for st in doc["data"]["stations"]
               for d, ns in (("down", st["airtime_rx_ns"]), ("up", st["airtime_tx_ns"]))}
        for k, g in goodput_by.items():
            e = g * window_s / air[k] if air.get(k) else 0.0
            best[k] = max(best.get(k, 0.0), e)
    goodput = GOODPUT_KEEP * base_goodput_bps
    floor = SHARE_FLOOR * goodput / len(best)
    # A flow that carried nothing in any run: no airtime known to carry its floor.
    floors = sum(floor / e if e > 0 else math.inf for e in best.values())
    top = max(best.values())
    rest = max(goodput - floor * len(best), 0.0) / top
    return {"floor_bps": floor, "floors_air": floors, "rest_air": rest, "total_air": floors + rest, "busy_frac": busy,
            "slowest_bps_per_air_s": min(best.values()), "fastest_bps_per_air_s": top}


def _why(r: dict[str, Any]) -> str:
    b = r["breakdown"]
    if b.get("upload_p99_ms") is None:
        up = "it has no upload"
    else:
        up = f"its own upload's packets take {b['upload_p99_ms']:.0f} ms (p99, one way, at {b['upload_bps'] / 1e6:.1f} Mb/s)"
        # Behind its own upload only where that upload's wait is a good part of the ping's (a split
        # upload's delay is its WiFi leg's, the station's queue included).
        behind = b["station_qdisc"] == "fifo" and b["upload_p99_ms"] >= 0.5 * b["ping_p99_ms"]
        up += (": the reply waits behind them in the station's FIFO, which the AP reaches only through the airtime "
               "it leaves that station" if behind else ": the rest is elsewhere, in the AP's queues or waiting for "
               "the medium")
    a = r["airtime"]
    air = (f"\n    airtime: the floors ({a['floor_bps'] / 1e6:.1f} Mb/s per flow) need {a['floors_air']:.2f} of the air at "
           f"the best efficiency each flow has under the default or the choice (seed 1; {a['slowest_bps_per_air_s'] / 1e6:.0f}"
           f"-{a['fastest_bps_per_air_s'] / 1e6:.0f} Mb/s per second of its airtime), the rest of "
           f"{GOODPUT_KEEP * 100:.0f} % of the goodput "
           f"{a['rest_air']:.2f}: {a['total_air']:.2f} in all, against the channel's {a['busy_frac']:.2f} busy: "
           + ("an airtime bound, no configuration keeps the floors" if a["total_air"] >= a["busy_frac"] else
              "no airtime bound, the floors are out of the levers' reach"))
    return (f"  {r['cell']}: worst ping station {b['station']} (MCS {b['mcs']}x{b['nss']}, {b['station_qdisc']}): "
            f"RTT p99 {b['ping_p99_ms']:.0f} ms; {up}" + air)


def _judged(r: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any], float]:
    """The figures a cell (tune's report or its row) is judged on: the held-out seeds' when there
    are some, else the search's: the baseline's, the choice's and the gain."""
    k = r.get("confirmed")
    if k:
        return k["baseline"], k["chosen"], k["latency_gain"]
    b, c = r["baseline"], r["chosen"]
    return b, c, b["latency_ms"] / c["latency_ms"]


def _own(r: dict[str, Any]) -> float:
    """The worst download over an equal share of the downloads, on the judged seeds."""
    return float(_judged(r)[1]["worst_down_own_share"])


def _fmt(r: dict[str, Any]) -> str:
    b, c = r["baseline"], r["chosen"]
    share = lambda x: f"{x * 100:.0f}%" if math.isfinite(x) else "-"  # noqa: E731
    lever = f"{r['key_lever']} ({r['key_lever_latency_ms']:.0f} ms without)" if r["key_lever"] else "-"
    k = r.get("confirmed")
    conf = f"{k['latency_gain']:4.1f}x{'' if k['meets_constraints'] else '*'}" if k else "   - "
    return (f"  {r['cell']:<20} {b['latency_ms']:7.0f} {c['latency_ms']:7.0f} {r['gain']:5.1f}x {conf:>6} "
            f"{b['goodput_bps'] / 1e6:6.0f} {c['goodput_bps'] / 1e6:6.0f} {b['up_bps'] / 1e6:5.0f} "
            f"{c['up_bps'] / 1e6:5.0f} {share(b['worst_share']):>5} "
            f"{share(c['worst_share']):>5}  {'yes' if r['target_met'] else 'no ':<4} {lever}")


def _target_floor(r: dict[str, Any], confirm: int) -> str:
    """One cell's choice searched with the target's floor alone (`_row` of that search), judged as
    the table's rows are (the held-out seeds when there are some)."""
    jb, jc, gain = _judged(r)
    seeds = f"on {confirm} held-out seeds" if r["confirmed"] else "on the search's seeds"
    return (f"  {r['cell']}: {jb['latency_ms']:.0f} -> {jc['latency_ms']:.0f} ms {seeds} ({gain:.1f}x), goodput "
            f"{jc['goodput_bps'] / jb['goodput_bps']:.0%} of the default's, worst download {jc['worst_down_own_share']:.0%} "
            f"of the downloads' equal share ({jc['worst_down_share']:.0%} of the cell's), worst upload "
            f"{jc['worst_up_share']:.0%} of the cell's: {'met' if r['target_met'] else 'missed'}; "
            + ", ".join(f"{k_}={v}" for k_, v in sorted(r["chosen"]["values"].items())))


def _ablation(r: dict[str, Any]) -> str:
    """Which lever buys what in one cell: the choice, then the choice without each of its levers
    (the search's seeds): worst ping p99, total goodput, worst share."""
    def fig(x: dict[str, Any]) -> str:
        share = f"{x['worst_share'] * 100:.0f}%" if math.isfinite(x["worst_share"]) else "-"
        return f"{x['latency_ms']:.0f} ms, {x['goodput_bps'] / 1e6:.0f} Mb/s, {share}"

    parts = [f"without {a['without']} {fig(a)}" for a in sorted(r["ablation"], key=lambda a: -a["latency_ms"])]
    return f"  {r['cell']}: chosen {fig(r['chosen'])}" + ("; " + "; ".join(parts) if parts else " (the default)")


def run_tune_cells(out_dir: str, quick: bool = False, jobs: int | None = None) -> int:
    """Run the matrix (interrupt and rerun: every cell's runs are cached); print the table."""
    from ..sweeps import SweepInterrupted

    try:
        return _run(Path(out_dir), quick, jobs)
    except SweepInterrupted:
        print(f"lasthop: bench --tune-cells interrupted; run it again to resume ({out_dir})", file=sys.stderr)
        return 130


def _run(out: Path, quick: bool, jobs: int | None) -> int:
    base = out / "tune-cells"
    base.mkdir(parents=True, exist_ok=True)
    secs, budget, seeds, confirm = (8, 8, 1, 3) if quick else (15, 192, 2, 6)
    print(f"lasthop tune on {len(CELLS)} RRUL-like cells (budget {budget}, {seeds} seed(s), {secs} s runs)",
          file=sys.stderr)
    rows = []
    t0 = time.perf_counter()
    tty = sys.stderr.isatty()
    for i, (name, std, stas, q) in enumerate(CELLS):
        d = base / name
        d.mkdir(parents=True, exist_ok=True)
        spec = d / "cell.toml"
        spec.write_text(write_toml(cell_doc(name, std, stas, q, secs)))

        def progress(k: int, n: int, c: Any, phase: str = "", i: int = i, name: str = name) -> None:
            if tty:
                print(f"\r[cell {i + 1}/{len(CELLS)} {name}] {phase} {k}/{n}  p99 {c.latency_ms:7.1f} ms" + " " * 8,
                      end="", file=sys.stderr, flush=True)

        rep = tune(spec, d, budget, seeds, jobs=jobs, progress=progress, confirm=confirm, finalists=FINALISTS)
        row = _row(name, rep)
        if not row["target_met"]:
            chosen = _run_doc(d / "chosen.toml")
            row["breakdown"] = breakdown(chosen)
            row["airtime"] = airtime_need([_run_doc(spec), chosen], rep["baseline"]["goodput_bps"])
            # The target's floor alone (`lasthop tune --upload-floor 0`): every download at 25 % of
            # either equal share, the uploads free; searched again over the same run cache.
            row["target_floor"] = _row(name, tune(spec, d / "target-floor", budget, seeds, jobs=jobs, progress=progress,
                                                  confirm=confirm, finalists=FINALISTS, up_floor=0.0,
                                                  cache=d / "runs"))
        rows.append(row)
        print(f"{chr(13) if tty else ''}[cell {i + 1}/{len(CELLS)}] {name}: done, {time.perf_counter() - t0:.0f} s"
              + " " * 20, file=sys.stderr)
    print(f"  cell                  p99 ms (base -> chosen)  gain  on {confirm} seeds  goodput Mb/s  uploads  "
          "worst share  2x+floors  lever that buys most")
    for r in rows:
        print(_fmt(r))
    print("  which lever buys what: the choice, and without each of its levers (search seeds; worst ping p99, "
          "goodput, worst share):")
    for r in rows:
        print(_ablation(r))
    missed = [r for r in rows if not r["target_met"]]
    if missed:
        print("  where the target is missed, the worst ping under the choice (seed 1):")
        for r in missed:
            print(_why(r))
    met = sum(r["target_met"] for r in rows)
    print(f"  {met} of {len(rows)} cells: tune's choice at least {TARGET_GAIN:g}x below the default's p99 with the floors "
          f"kept, on {confirm} held-out seeds (* there: a floor missed)")
    own = [r for r in rows if r["target_met_downloads_only"]]
    print(f"  {len(own)} of {len(rows)} with the downloads' floor alone (every download at least {SHARE_FLOOR:.0%} of an "
          "equal share of the downloads, the uploads' floor left out): "
          + ", ".join(f"{r['cell']} {_own(r):.0%}" for r in rows))
    again = [r for r in rows if "target_floor" in r]
    if again:
        print("  searched again with the target's floor alone where tune's are missed (lasthop tune --upload-floor 0: "
              f"every download at least {SHARE_FLOOR:.0%} of either equal share, the uploads' floor left out):")
        for r in again:
            print(_target_floor(r["target_floor"], confirm))
    floor = sum(r.get("target_floor", r)["target_met"] for r in rows)
    print(f"  {floor} of {len(rows)} with the target's floor: tune's choice, searched again with --upload-floor 0 where "
          "its own floors are missed")
    (out / "tune-cells.json").write_text(json.dumps({"budget": budget, "seeds": seeds, "secs": secs, "confirm": confirm, "cells": rows},
                                                    indent=1, sort_keys=True) + "\n")
    return 0
