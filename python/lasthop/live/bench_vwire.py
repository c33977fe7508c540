"""`lasthop bench --live vwire`: the split proxy across the emulator's AP host, next to the
simulator on the same cells (TARGETS V1–V3; `lasthop reproduce vwire` is the simulated suite).

Cells are the suite's (reproduce/vwire.py: 802.11n 2.4 GHz 20 MHz SGI, two streams,
Minstrel-HT, path-loss exponent 4.5, receivers at 3 ft and 75 ft, server on 1 Gb/s with 10 ms
one way) with an AP host. Live, Python applications (live/apps.py) run the traffic — every
connection opened by the station — and `lasthop vwire` runs in the AP's namespace in the
"vwire" mode (classes and utilities from a rules file, as the suite sets `app_class` and
`utility`); the "e2e" mode is the same cell without the proxy. The simulator runs the suite's
own specs.

* V1: a 30 Mb/s paced video to a receiver walking 3 ft → 75 ft → 3 ft (30 s per leg) beside a
  greedy download to a receiver at 3 ft; share of 1 s bins with ≥ 29.4 Mb/s after 4 s.
* V2: a 1 Mb/s paced flow beside N = 0…3 greedy downloads to one receiver at 3 ft or 75 ft;
  the 1 Mb/s flow's router → device delay (3 seeds). Live: its messages' one-way delay minus
  the 10 ms wire (application to application: it includes the proxy's relay buffer), and the WiFi side's
  TCP RTT (split: the proxy's socket; end to end: the server's minus the 20 ms wire RTT).
  Simulated: its data packets' one-way delay (split: from the proxy's send).
* V3: one greedy download at 3 ft and 75 ft, wire loss 0/1/2/4 %: split (server BBR, proxy
  → station CUBIC) vs end-to-end CUBIC and BBR; goodput after 4 s.

Needs root. Writes DIR/live-vwire.json and prints a table.
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from ..reproduce import vwire as V
from . import write_report

WARM = 4
WIRE_MS = 10.0


def _toml(d: dict, prefix: str = "") -> str:
    """A TOML document for the simple dicts specs are (scalars, lists of scalars, tables,
    arrays of tables)."""
    def val(v: Any) -> str:
        if isinstance(v, bool):
            return "true" if v else "false"
        if isinstance(v, (int, float)):
            return repr(v)
        if isinstance(v, str):
            return json.dumps(v)
        if isinstance(v, list):
            return "[" + ", ".join(val(x) for x in v) + "]"
        raise TypeError(v)
    lines, tables = [], []
    for k, v in d.items():
        if isinstance(v, dict):
            tables.append((k, v))
        elif isinstance(v, list) and v and all(isinstance(x, dict) for x in v):
            tables.append((k, v))
        elif isinstance(v, list) and not v:
            continue
        else:
            lines.append(f"{k} = {val(v)}")
    out = "\n".join(lines) + "\n"
    for k, v in tables:
        name = f"{prefix}{k}"
        if isinstance(v, dict):
            out += f"\n[{name}]\n" + _toml(v, name + ".")
        else:
            for item in v:
                out += f"\n[[{name}]]\n" + _toml(item, name + ".")
    return out



def _live_cell(spec: dict, out: Path) -> Path:
    """The suite's spec as an emulator cell: no simulated flows, no split keys, an AP host."""
    s = {k: v for k, v in spec.items() if k not in ("flows", "vwire", "ap")}
    s["emu"] = {"ap_host": True}
    p = out / "cell.toml"
    p.write_text(_toml(s))
    return p


def _simulate(doc: dict, seed: int) -> dict:
    from ..native import native as _native
    from ..spec import normalize
    s = normalize(doc)
    return {"spec": s.normalized, "data": json.loads(_native().run(s.to_json(), seed, None))}


def _emulate(cell: Path, sc: dict, out: Path, seed: int) -> dict:
    sc = dict(sc, out=str(out))
    f = out / "scenario.json"
    f.write_text(json.dumps(sc))
    r = subprocess.run([sys.executable, "-m", "lasthop", "emu", "run", str(cell), "--name", "lhv", "--seed", str(seed),
                        "-o", str(out), "--stats", "0", "-q", "--", sys.executable, "-m", "lasthop.live.apps",
                        "scenario", str(f)], capture_output=True, text=True, timeout=sc["seconds"] + 180)
    if r.returncode != 0:
        raise RuntimeError(f"emu run: exit {r.returncode}: {r.stderr[-800:]}")
    return json.loads((out / "result.json").read_text())


def _rules(classes: list[tuple[int, str, str]], path: Path) -> Path:
    path.write_text("".join(f'[[flow]]\nserver_port = {port}\nclass = "{c}"\nutility = "{u}"\n\n'
                            for port, c, u in classes))
    return path


def _bins_after(bins: list[float], warm: int = WARM) -> list[float]:
    return bins[warm:-1] if len(bins) > warm + 1 else bins[warm:]


def _v1(tmp: Path, seed: int) -> dict:
    res: dict[str, Any] = {}
    for mode in ("e2e", "vwire"):
        spec = V._v1(mode)
        d = tmp / f"v1-{mode}"
        d.mkdir()
        cell = _live_cell(spec, d)
        flows = [{"station": 0, "port": 7600, "kind": "paced", "rate": V.VIDEO_BPS, "cc": "cubic"},
                 {"station": 1, "port": 7601, "kind": "greedy", "cc": "cubic"}]
        proxy = None
        if mode == "vwire":
            proxy = ["--utilities", str(_rules([(7600, "video_4k", "step:32Mbps:10"), (7601, "bulk", "log:0.1")],
                                               d / "rules.toml")), "--wired-cc", "cubic"]
        live = _emulate(cell, {"flows": flows, "seconds": 64, "warmup": WARM, "proxy": proxy}, d, seed)
        bins = _bins_after(live["flows"][0]["client"]["bins_bps"])
        share_live = sum(1 for b in bins if b >= V.VIDEO_BPS * (1 - V.BIN_TOL)) / max(1, len(bins))
        sim = _simulate(spec, seed)
        sb = V._bins(sim)
        share_sim = sum(1 for b in sb if b >= V.VIDEO_BPS * (1 - V.BIN_TOL)) / len(sb)
        res[mode] = {"live_share": share_live, "sim_share": share_sim,
                     "live_video_mbps": statistics.fmean(bins) / 1e6 if bins else 0.0,
                     "live_greedy_mbps": statistics.fmean(_bins_after(live["flows"][1]["client"]["bins_bps"])) / 1e6,
                     "sim_video_mbps": sim["data"]["flows"][0]["goodput_bps"] / 1e6,
                     "sim_greedy_mbps": sim["data"]["flows"][1]["goodput_bps"] / 1e6}
    return res


def _v2(tmp: Path, seeds: list[int], seconds: int) -> dict:
    """V2 with several seeds (whether one greedy CUBIC fills the far station's FIFO depends on
    its early losses, live and simulated alike): per seed and the mean."""
    per = [_v2_one(tmp / f"s{s}", s, seconds) for s in seeds]
    out: dict[str, Any] = {}
    for k in per[0]:
        vals = {m: [p[k][m] for p in per if p[k][m] is not None] for m in per[0][k]}
        out[k] = {m: (statistics.fmean(v) if v else None) for m, v in vals.items()}
        out[k]["per_seed"] = [p[k] for p in per]
    return out


def _v2_one(tmp: Path, seed: int, seconds: int) -> dict:
    tmp.mkdir()
    res: dict[str, Any] = {}
    for dist in (V.NEAR, V.FAR):
        for n in V.N_GREEDY:
            for mode in ("e2e", "vwire"):
                spec = V._v2(mode, n)
                spec["stations"][0]["distance_m"] = dist
                spec["sim"]["duration"] = f"{seconds}s"
                d = tmp / f"v2-{mode}-{dist}-{n}"
                d.mkdir()
                cell = _live_cell(spec, d)
                flows = [{"station": 0, "port": 7700, "kind": "paced", "rate": 1e6, "cc": "cubic"}]
                flows += [{"station": 0, "port": 7701 + k, "kind": "greedy", "cc": "cubic"} for k in range(n)]
                proxy = None
                if mode == "vwire":
                    proxy = ["--utilities", str(_rules([(7700, "voip", "step:1.2Mbps:10")] +
                                                       [(7701 + k, "bulk", "log:1") for k in range(n)], d / "rules.toml")),
                             "--wired-cc", "cubic"]
                live = _emulate(cell, {"flows": flows, "seconds": seconds, "warmup": WARM, "proxy": proxy}, d, seed)
                f0 = live["flows"][0]
                delays = f0["client"]["delays_ms"]
                app = statistics.fmean(delays) - WIRE_MS if delays else float("nan")
                if mode == "vwire":
                    recs = [json.loads(x) for x in (d / "vwire.jsonl").read_text().splitlines()]
                    rtt = [f["srtt_us"] / 1e3 for r in recs[WARM // 2:] for f in r["flows"]
                           if f["server"].endswith(":7700")]
                else:
                    rtt = [x / 1e3 - 2 * WIRE_MS for x in f0["server"]["rtt_us"][WARM * 10:]]
                sim = _simulate(spec, seed)
                res[f"{mode}/{dist}/{n}"] = {"live_app_delay_ms": app, "live_tcp_rtt_ms": statistics.fmean(rtt) if rtt else None,
                                             "sim_delay_ms": V._delay_ms(sim)}
    return res


def _v3(tmp: Path, seed: int, seconds: int) -> dict:
    res: dict[str, Any] = {}
    for dist in (V.NEAR, V.FAR):
        for loss in V.LOSSES:
            for mode in V.V3_MODES:
                spec = V._v3(mode)
                spec["stations"][0]["distance_m"] = dist
                spec["wired"]["loss"] = loss
                spec["sim"]["duration"] = f"{seconds}s"
                d = tmp / f"v3-{mode}-{dist}-{loss}"
                d.mkdir()
                cell = _live_cell(spec, d)
                cc = "bbr" if mode in ("e2e-bbr", "split") else "cubic"
                flows = [{"station": 0, "port": 7800, "kind": "greedy", "cc": cc}]
                proxy = ["--no-vwire", "--wifi-cc", "cubic", "--wired-cc", "bbr"] if mode == "split" else None
                live = _emulate(cell, {"flows": flows, "seconds": seconds, "warmup": WARM, "proxy": proxy}, d, seed)
                bins = _bins_after(live["flows"][0]["client"]["bins_bps"])
                sim = _simulate(spec, seed)
                res[f"{mode}/{dist}/{loss}"] = {"live_mbps": statistics.fmean(bins) / 1e6 if bins else 0.0,
                                                "sim_mbps": sim["data"]["flows"][0]["goodput_bps"] / 1e6}
    return res


def run_live_vwire(out_dir: str, seconds: int = 20, seed: int = 1, v2_seeds: int = 3) -> int:
    if os.geteuid() != 0:
        print("lasthop: error: bench --live vwire needs root", file=sys.stderr)
        return 2
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    report: dict[str, Any] = {"seconds": seconds, "warmup_s": WARM, "seed": seed, "v2_seeds": v2_seeds}
    with tempfile.TemporaryDirectory(prefix="lasthop-live-vwire-") as t:
        tmp = Path(t)
        print("lasthop bench --live vwire: V1 (64 s per mode) ...", file=sys.stderr, flush=True)
        report["v1"] = _v1(tmp, seed)
        print(f"lasthop bench --live vwire: V2 (16 runs x {v2_seeds} seeds) ...", file=sys.stderr, flush=True)
        report["v2"] = _v2(tmp, list(range(seed, seed + v2_seeds)), seconds)
        print("lasthop bench --live vwire: V3 (24 runs) ...", file=sys.stderr, flush=True)
        report["v3"] = _v3(tmp, seed, seconds)
    return write_report(out, "live-vwire.json", report, table(report))


def table(r: dict) -> str:
    lines = ["V1: 30 Mb/s video to a receiver walking 3 ft -> 75 ft -> 3 ft beside a greedy download "
             "(share of 1 s bins >= 29.4 Mb/s; mean video / greedy Mb/s)"]
    for m in ("e2e", "vwire"):
        x = r["v1"][m]
        lines.append(f"  {m:<6} live {x['live_share'] * 100:5.1f}% ({x['live_video_mbps']:.1f} / {x['live_greedy_mbps']:.1f})"
                     f"   sim {x['sim_share'] * 100:5.1f}% ({x['sim_video_mbps']:.1f} / {x['sim_greedy_mbps']:.1f})")
    lines.append(f"V2: 1 Mb/s flow beside N greedy downloads, router -> device delay ms, mean of {r.get('v2_seeds', 1)} "
                 "seeds (live: app one-way - 10 ms | WiFi-side TCP RTT; sim: packets' one-way)")
    for dist in (V.NEAR, V.FAR):
        for n in V.N_GREEDY:
            e, v = r["v2"][f"e2e/{dist}/{n}"], r["v2"][f"vwire/{dist}/{n}"]
            f = lambda x: "-" if x is None else f"{x:.1f}"  # noqa: E731
            lines.append(f"  {V.DIST_LABEL[dist]:>5} N={n}  e2e live {f(e['live_app_delay_ms'])} | {f(e['live_tcp_rtt_ms'])}"
                         f"  sim {f(e['sim_delay_ms'])}    vwire live {f(v['live_app_delay_ms'])} | {f(v['live_tcp_rtt_ms'])}"
                         f"  sim {f(v['sim_delay_ms'])}")
    lines.append("V3: one download, wire loss: goodput Mb/s live / sim (split BBR+CUBIC, e2e CUBIC, e2e BBR)")
    for dist in (V.NEAR, V.FAR):
        for loss in V.LOSSES:
            cells = [r["v3"][f"{m}/{dist}/{loss}"] for m in V.V3_MODES]
            lines.append(f"  {V.DIST_LABEL[dist]:>5} {loss * 100:3.0f}%  " + "   ".join(
                f"{m} {c['live_mbps']:5.1f} / {c['sim_mbps']:5.1f}" for m, c in zip(V.V3_MODES, cells)))
    return "\n".join(lines)
