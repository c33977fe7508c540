"""`lasthop bench --live`: the live tools across the emulator, next to the simulator.

1. WQM (TARGETS W1/W2 live): on experiments/emu-wqm-ht.toml (the WQM paper's single-hop
   802.11n cell with an AP host), a kernel CUBIC download (iperf3) and a ping every 20 ms from
   the server to the station, with the AP's FIFO-1000 alone and with `lasthop wqm` running in
   the AP's namespace on the emulator's nl80211 telemetry; `runs` runs each. Next to it, the
   simulator on the same cell with its own CUBIC and ping (`ap.buffer_sizer` "none" / "wqm"),
   the same number of seeds. Ping RTT and goodput are taken after the same warm-up in both.
2. The AP host's cost: UDP through experiments/emu-he-fast.toml with and without the AP host
   (the packets cross the model twice and the AP's kernel once more): carried rate and write
   lateness.

Needs root, iperf3 and ping. Writes DIR/live-bench.json and prints a table.
"""

from __future__ import annotations

import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from .emu_bench import UDP, _emulate, capacity_figures
from . import refuse, write_report

ROOT = Path(__file__).resolve().parents[3]
EXPERIMENTS = ROOT / "experiments"
WARMUP_S = 5
PING_MS = 20

LIVE = r"""#!/bin/bash
# live.sh MODE SECONDS OUT TOPRATE: iperf3 CUBIC server -> sta0 and a 20 ms ping beside it,
# with (MODE=wqm) or without (MODE=fifo) the WQM daemon in the AP's namespace.
mode=$1; t=$2; out=$3; top=$4
lasthop emu exec sta0 -- iperf3 -s -1 >/dev/null 2>&1 &
if [ "$mode" = wqm ]; then
  lasthop emu exec ap -- lasthop wqm --phy phy0 --top-rate "$top" --record "$out/wqm.jsonl" \
    2> "$out/wqm.log" &
  wpid=$!
fi
sleep 1
lasthop emu exec server -- ping -D -i 0.02 -w $((t + 1)) 10.77.1.1 > "$out/ping.txt" &
ppid=$!
lasthop emu exec server -- iperf3 -c 10.77.1.1 -t "$t" -O 5 -C cubic -J > "$out/iperf.json"
wait $ppid
if [ -n "$wpid" ]; then kill -TERM $wpid; wait $wpid; fi
wait
"""


def _sim_top_rate_bps(spec: Path) -> int:
    """The top rate the simulator's WQM host derives for this cell (its `B_max` input): the
    fastest rate of the station's rate table (Minstrel) or its fixed rate."""
    from ..spec import load_spec
    s = load_spec(spec).normalized
    st = s["stations"][0]
    std, width, gi = s["phy"]["standard"], s["phy"]["channel_width"], s["phy"]["guard_interval"]
    if std != "ht":
        raise ValueError("live bench: the WQM cell is an 802.11n cell")
    # HT data rates per stream at MCS 7: 65 / 135 Mb/s at 20 / 40 MHz (long GI), x10/9 short GI.
    per_stream = {20: 65_000_000, 40: 135_000_000}[width]
    if st["rate_control"] == "fixed":
        raise ValueError("live bench: the WQM cell uses Minstrel")
    rate = per_stream * st["nss"]
    return rate * 10 // 9 if gi == 400 else rate


def _sim(spec: Path, out: Path, sizer: str, secs: int, seed: int) -> dict[str, Any]:
    """The simulator on `spec` with its own CUBIC download and ping; `sizer` is "none", "wqm"
    or "fifoN" (a fixed N-packet FIFO)."""
    text = spec.read_text()
    if sizer.startswith("fifo"):
        text = text.replace("queue_limit = 1000", f"queue_limit = {sizer[4:]}", 1)
        sizer = "none"
    text = re.sub(r'(?m)^name = .*$', f'name = "sim-{sizer}-{seed}"', text)
    text = re.sub(r'(?m)^duration = .*$', f'duration = "{secs + WARMUP_S}s"', text)
    text = re.sub(r'(?m)^warmup = .*$', f'warmup = "{WARMUP_S}s"', text)
    text = re.sub(r'(?m)^\[emu\]\s*\nap_host = true\s*$', "", text)
    text = text.replace('queue_limit = 1000', f'queue_limit = 1000\nbuffer_sizer = "{sizer}"', 1)
    text += f"""
[[flows]]
stations = 0
direction = "down"
pattern = "tcp"
cc = "cubic"

[[flows]]
stations = 0
direction = "down"
pattern = "ping"
interval = "{PING_MS}ms"
"""
    p = out / f"sim-{sizer}-{seed}.toml"
    p.write_text(text)
    r = subprocess.run([sys.executable, "-m", "lasthop", "run", str(p), "-o", str(out), "-q",
                        "--seed", str(seed)], capture_output=True, text=True)
    if r.returncode != 0:
        raise RuntimeError(f"lasthop run {p.name}: {r.stderr.strip()}")
    d = json.loads(Path(r.stdout.strip()).read_text())["data"]
    tcp = next(f for f in d["flows"] if f["pattern"] == "tcp")
    ping = next(f for f in d["flows"] if f["pattern"] == "ping")
    ts = d["timeseries"]
    after = [i for i, t in enumerate(ts["t_ns"]) if t >= WARMUP_S * 1e9]
    lim = [ts["node_queue_limit"][0][i] for i in after if ts["node_queue_limit"][0][i] is not None]
    extra = {"wqm_limit_mean": statistics.fmean(lim)} if sizer == "wqm" and lim else {}
    extra["channel_busy"] = d["channel"]["busy_frac"]
    extra["mean_ampdu_down"] = d["stations"][0]["mean_ampdu_down"]
    return {**extra, "goodput_mbps": tcp["goodput_bps"] / 1e6,
            "rtt_mean_ms": ping["delay_ns"]["mean"] / 1e6,
            "rtt_p50_ms": ping["delay_ns"]["p50"] / 1e6,
            "rtt_p95_ms": ping["delay_ns"]["p95"] / 1e6,
            "rtt_p99_ms": ping["delay_ns"]["p99"] / 1e6}


def _pct(xs: list[float], q: float) -> float:
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(q * len(xs)))]


def _live_one(spec: Path, out: Path, script: Path, mode: str, secs: int, top: int,
              seed: int) -> dict[str, Any]:
    """One emulator run: mode "fifo" (the AP's FIFO-1000), "wqm" (the daemon sizes it) or
    "fifoN" (a fixed N-packet FIFO, no daemon)."""
    env = dict(os.environ, PATH=f"{Path(sys.executable).parent}:{os.environ.get('PATH', '')}")
    if mode.startswith("fifo") and mode != "fifo":
        small = out / f"{spec.stem}-{mode}.toml"
        small.write_text(spec.read_text().replace("queue_limit = 1000", f"queue_limit = {mode[4:]}", 1))
        spec, mode = small, "fifo"
    r = subprocess.run([sys.executable, "-m", "lasthop", "emu", "run", str(spec), "--name", "lhl",
                        "--seed", str(seed), "-o", str(out), "--stats", "0", "-q", "--",
                        str(script), mode, str(secs), str(out), str(top)],
                       capture_output=True, text=True, env=env)
    if r.returncode != 0:
        raise RuntimeError(f"emu run {spec.name} ({mode}): exit {r.returncode}: {r.stderr.strip()[-800:]}")
    data = json.loads(next(out.glob("*-emu-s*.json")).read_text())["data"]
    emu = data["emu"]
    iperf = json.loads((out / "iperf.json").read_text())["end"]
    rtts = []
    t0 = None
    for line in (out / "ping.txt").read_text().splitlines():
        m = re.match(r"\[([\d.]+)\].*time=([\d.]+) ms", line)
        if m:
            t = float(m.group(1))
            t0 = t if t0 is None else t0
            if t - t0 >= WARMUP_S:
                rtts.append(float(m.group(2)))
    sent = len(re.findall(r"icmp_seq=", (out / "ping.txt").read_text()))
    res = {"goodput_mbps": iperf["sum_received"]["bits_per_second"] / 1e6,
           "retransmits": iperf["sum_sent"].get("retransmits"),
           "rtt_mean_ms": statistics.fmean(rtts) if rtts else float("nan"),
           "rtt_p50_ms": _pct(rtts, 0.5) if rtts else float("nan"),
           "rtt_p95_ms": _pct(rtts, 0.95) if rtts else float("nan"),
           "rtt_p99_ms": _pct(rtts, 0.99) if rtts else float("nan"),
           "ping_replies": sent,
           "lateness_p99_us": emu["lateness_p99_ns"] / 1e3,
           "telemetry_requests": emu["telemetry_requests"],
           "channel_busy": data["channel"]["busy_frac"],
           "mean_ampdu_down": data["stations"][0]["mean_ampdu_down"]}
    if mode == "wqm":
        rec = [json.loads(x) for x in (out / "wqm.jsonl").read_text().splitlines()]
        lim = [x["limit"] for x in rec if x["limit"] is not None and x["t_s"] >= 1 + WARMUP_S]
        res["wqm_limit_mean"] = statistics.fmean(lim) if lim else None
        res["wqm_b_min_mean"] = statistics.fmean(x["b_min"] for x in rec[-50:]) if rec else None
        res["wqm_intervals"] = len(rec)
    return res


def _summary(runs: list[dict[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {"runs": len(runs)}
    for k in runs[0]:
        vals = [r[k] for r in runs if isinstance(r.get(k), (int, float))]
        if vals:
            out[k] = statistics.fmean(vals)
            out[k + "_sd"] = statistics.stdev(vals) if len(vals) > 1 else 0.0
    return out


def run_live_bench(out_dir: str, runs: int = 5, seconds: int = 20) -> int:
    if refuse("bench --live"):
        return 2
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    spec = EXPERIMENTS / "emu-wqm-ht.toml"
    top = _sim_top_rate_bps(spec)
    report: dict[str, Any] = {"spec": spec.name, "seconds": seconds, "warmup_s": WARMUP_S,
                              "runs": runs, "top_rate_bps": top, "wqm": {}, "ap_host_cost": {}}
    with tempfile.TemporaryDirectory(prefix="lasthop-live-bench-") as tmp_s:
        tmp = Path(tmp_s)
        script = tmp / "live.sh"
        script.write_text(LIVE)
        script.chmod(0o755)
        modes = [("fifo", "none"), ("wqm", "wqm"), ("fifo-small", "")]
        for mode, sizer in modes:
            if mode == "fifo-small":
                # The control: a fixed FIFO as long as the limit WQM chose (live mean), so a
                # difference between live and simulated WQM can be told from one between
                # the kernel's and the simulator's TCP over a shallow queue.
                n = round(report["wqm"]["wqm"]["emulator"]["wqm_limit_mean"])
                report["fifo_small_limit"] = n
                mode = sizer = f"fifo{n}"
            live, sim = [], []
            for k in range(runs):
                print(f"  wqm cell, {mode}: run {k + 1}/{runs}: emulator ...", file=sys.stderr,
                      flush=True)
                d = tmp / f"{mode}-{k}"
                d.mkdir()
                live.append(_live_one(spec, d, script, mode, seconds, top, seed=k + 1))
                print(f"  wqm cell, {mode}: run {k + 1}/{runs}: simulator ...", file=sys.stderr,
                      flush=True)
                sim.append(_sim(spec, d, sizer, seconds, seed=k + 1))
            key = "fifo_small" if mode.startswith("fifo") and mode != "fifo" else mode
            report["wqm"][key] = {"emulator": _summary(live), "simulator": _summary(sim),
                                   "emulator_runs": live, "simulator_runs": sim}
        udp = tmp / "udp.sh"
        udp.write_text(UDP)
        udp.chmod(0o755)
        he = EXPERIMENTS / "emu-he-fast.toml"
        he_ap = tmp / "emu-he-fast-ap.toml"
        he_ap.write_text(he.read_text() + "\n[emu]\nap_host = true\n")
        for label, sp in (("off", he), ("on", he_ap)):
            for rate in ("400M", "800M"):
                print(f"  AP host {label}: UDP at {rate}b/s ...", file=sys.stderr, flush=True)
                d = tmp / f"cap-{label}-{rate}"
                d.mkdir()
                data = _emulate(sp, d, udp, rate, "10", str(d))
                report["ap_host_cost"][f"{label}-{rate}"] = capacity_figures(data, d / "udp.json")
    return write_report(out, "live-bench.json", report, _table(report))


def _table(r: dict[str, Any]) -> str:
    lines = [f"WQM on {r['spec']} ({r['runs']} runs x {r['seconds']} s after {r['warmup_s']} s, "
             f"mean ± sd over runs): kernel CUBIC + ping 20 ms through the AP host vs the "
             f"simulator's CUBIC + ping",
             f"  {'AP queue':<10} {'':<9} {'goodput Mb/s':>14} {'RTT mean ms':>13} "
             f"{'RTT p50':>8} {'RTT p95':>8} {'RTT p99':>8} {'limit':>6} {'busy':>6} {'A-MPDU':>6}"]
    names = {"fifo": "FIFO-1000", "wqm": "WQM", "fifo_small": f"FIFO-{r.get('fifo_small_limit')}"}
    for mode in ("fifo", "wqm", "fifo_small"):
        for who in ("emulator", "simulator"):
            s = r["wqm"][mode][who]
            lim = s.get("wqm_limit_mean")
            lines.append(
                f"  {names[mode]:<10} {who:<9} "
                f"{s['goodput_mbps']:>7.1f} ± {s['goodput_mbps_sd']:<4.1f} "
                f"{s['rtt_mean_ms']:>6.2f} ± {s['rtt_mean_ms_sd']:<4.2f} {s['rtt_p50_ms']:>8.2f} "
                f"{s['rtt_p95_ms']:>8.2f} {s['rtt_p99_ms']:>8.2f} "
                f"{'' if lim is None else f'{lim:.0f}':>6} {s['channel_busy'] * 100:>5.0f}% "
                f"{s['mean_ampdu_down']:>5.1f}")
    for who in ("emulator", "simulator"):
        f, w = r["wqm"]["fifo"][who], r["wqm"]["wqm"][who]
        lines.append(f"  {who}: WQM RTT {f['rtt_mean_ms'] / w['rtt_mean_ms']:.1f}x lower than "
                     f"FIFO (W1 band >= 4x), goodput {w['goodput_mbps'] / f['goodput_mbps'] - 1:+.1%} "
                     f"(W2 band >= -8%)")
    lines.append("AP host cost, UDP through HE 160 MHz MCS 11 x4 (carried Mb/s, lateness p50/p99 us):")
    for k, c in r["ap_host_cost"].items():
        lines.append(f"  AP host {k:<8} offered {c['offered_mbps']:>6.0f} carried {c['carried_mbps']:>6.0f}"
                     f"  lost {c['receiver_lost_percent']:.1f}%  model drops {c['model_drops']}"
                     f"  lateness {c['lateness_p50_us']:.0f}/{c['lateness_p99_us']:.0f}")
    return "\n".join(lines)
