"""`lasthop bench --emu`: the emulator measured against the simulator (docs/emu.md).

Runs real programs (iperf3, ping; Debian packages) through `lasthop emu run` on the checked-in
emulator cells and the simulator's own TCP model on the same cells with the same traffic:

1. TCP goodput, kernel CUBIC and BBR, one and four stations (experiments/emu-vht-*.toml),
   with a ping beside the bulk flows: emulator vs simulator.
2. Latency under load: a CUBIC download and a ping over HT MCS 7 (experiments/emu-ht-bloat.toml)
   with the AP's FIFO and with FQ-CoDel + airtime fairness: emulator vs simulator.
3. Capacity: UDP at `--emu-rate` through HE 160 MHz MCS 11 NSS 4 (experiments/emu-he-fast.toml):
   what the emulator carried and how late it wrote packets (p50, p99).
4. Timing: the same cell with 1400-byte UDP at 100 Mb/s, 500 Mb/s and 1 Gb/s, then up in 25 %
   steps to the ceiling (the highest rate carried with < 0.1 % loss at the receiver), with and
   without the AP host: write lateness p50, p99, p99.9 and the loss at each rate.
5. OFDMA: four kernel CUBIC downloads and a ping over an 802.11ax cell (experiments/emu-he-4sta.toml)
   with single-user PPDUs, DL OFDMA, and DL + UL OFDMA (`OFDMA_MODES`): goodput and ping,
   emulator vs simulator, and the write lateness of the multi-user PPDUs' subframes.

Needs root, iperf3 and ping. Writes the figures to DIR/emu-bench.json and prints a table.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from . import refuse, write_report

ROOT = Path(__file__).resolve().parents[3]
EXPERIMENTS = ROOT / "experiments"


def _lasthop(*args: str, **kw: Any) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "lasthop", *args], capture_output=True,
                          text=True, **kw)


IPERF = r"""#!/bin/bash
# iperf.sh CC SECONDS NSTA OUT: one iperf3 download per station and a ping from sta0
cc=$1; t=$2; n=$3; out=$4
for i in $(seq 0 $((n-1))); do
  lasthop emu exec sta$i -- iperf3 -s -1 -p $((5201+i)) >/dev/null 2>&1 &
done
sleep 0.5
for i in $(seq 0 $((n-1))); do
  lasthop emu exec server -- iperf3 -c 10.77.1.$((i+1)) -p $((5201+i)) -t $t -C $cc -J \
    > $out/iperf-$i.json &
done
lasthop emu exec sta0 -- ping -i 0.2 -c $((t*5)) 10.77.0.1 > $out/ping.txt &
wait
"""

UDP = r"""#!/bin/bash
# udp.sh RATE SECONDS OUT
lasthop emu exec sta0 -- iperf3 -s -1 >/dev/null 2>&1 &
sleep 0.5
lasthop emu exec server -- iperf3 -c 10.77.1.1 -u -b $1 -l 1400 -w 4M -t $2 -J > $3/udp.json
wait
"""


def _sim_spec(base: Path, out: Path, name: str, secs: int, cc: str, ping_dir: str) -> Path:
    text = base.read_text()
    text = re.sub(r'(?m)^name = .*$', f'name = "{name}"', text)
    text = re.sub(r'(?m)^duration = .*$', f'duration = "{secs}s"', text)
    text += f"""
[[flows]]
stations = "all"
direction = "down"
pattern = "tcp"
cc = "{cc}"

[[flows]]
stations = 0
direction = "{ping_dir}"
pattern = "ping"
interval = "200ms"
"""
    p = out / f"{name}.toml"
    p.write_text(text)
    return p


def _simulate(spec: Path, out: Path) -> dict[str, Any]:
    r = _lasthop("run", str(spec), "-o", str(out), "-q")
    if r.returncode != 0:
        raise RuntimeError(f"lasthop run {spec.name}: {r.stderr.strip()}")
    d = json.loads(Path(r.stdout.strip()).read_text())["data"]
    tcp = [f for f in d["flows"] if f["pattern"] == "tcp"]
    ping = [f for f in d["flows"] if f["pattern"] == "ping"][0]
    return {"goodput_mbps": sum(f["goodput_bps"] for f in tcp) / 1e6,
            "per_flow_mbps": [f["goodput_bps"] / 1e6 for f in tcp],
            "ping_rtt_mean_ms": ping["delay_ns"]["mean"] / 1e6,
            "ping_rtt_p99_ms": ping["delay_ns"]["p99"] / 1e6}


def _emulate(spec: Path, out: Path, script: Path, *args: str) -> dict[str, Any]:
    env = dict(os.environ, PATH=f"{Path(sys.executable).parent}:{os.environ.get('PATH', '')}")
    r = subprocess.run([sys.executable, "-m", "lasthop", "emu", "run", str(spec), "--name", "lhb",
                        "-o", str(out), "--stats", "0", "-q", "--", str(script), *args],
                       capture_output=True, text=True, env=env)
    if r.returncode != 0:
        raise RuntimeError(f"emu run {spec.name}: exit {r.returncode}: {r.stderr.strip()[-500:]}")
    doc = json.loads(next(out.glob("*-emu-s*.json")).read_text())
    return doc["data"]


def capacity_figures(data: dict[str, Any], udp_json: Path) -> dict[str, Any]:
    """What a UDP capacity run (the UDP script) carried: iperf3's offered rate and receiver
    loss, the model's delivered rate while the transfer ran (the UDP flow's goodput bins, the
    first and last, partial, ones left out), and the emulator's own figures."""
    emu = data["emu"]
    u = json.loads(udp_json.read_text())["end"]["sum"]
    bins = max((row for row in data["timeseries"]["flow_goodput_bps"]), key=sum)
    busy = [b for b in bins if b > 0][1:-1] or [0.0]
    return {
        "offered_mbps": u.get("bits_per_second", 0) / 1e6,
        "carried_mbps": sum(busy) / len(busy) / 1e6,
        "packets_per_s": sum(busy) / len(busy) / 8 / 1428,
        "receiver_lost_percent": u.get("lost_percent"),
        "model_drops": emu["packets_dropped_by_model"],
        "tun_write_failures": emu["tun_write_failures"],
        "lateness_p50_us": emu["lateness_p50_ns"] / 1e3,
        "lateness_p99_us": emu["lateness_p99_ns"] / 1e3,
        "lateness_p999_us": emu["lateness_p999_ns"] / 1e3,
        "wakeups_per_s": emu["wakeups"] / emu["wall_ns"] * 1e9,
    }


# The timing sweep's fixed rates (Mb/s of UDP payload), then 25 % steps until the loss passes
# the ceiling's 0.1 %, at most CEILING_STEPS of them.
TIMING_RATES = (100, 500, 1000)
CEILING_LOSS = 0.1
CEILING_STEPS = 5


def timing_sweep(tmp: Path, udp: Path, seconds: int, ap_host: bool) -> dict[str, Any]:
    """Write lateness and loss of UDP through the HE 160 MHz cell at the fixed rates and up to
    the ceiling, with or without the AP host."""
    spec = tmp / f"timing-{'ap' if ap_host else 'direct'}.toml"
    spec.write_text((EXPERIMENTS / "emu-he-fast.toml").read_text() + ("\n[emu]\nap_host = true\n" if ap_host else ""))
    rows: list[dict[str, Any]] = []

    def at(rate: int) -> dict[str, Any]:
        run = tmp / f"timing-{'ap' if ap_host else 'direct'}-{rate}"
        run.mkdir()
        print(f"  timing{' (AP host)' if ap_host else ''}: UDP at {rate} Mb/s ...", file=sys.stderr, flush=True)
        row = {"rate_mbps": rate, **capacity_figures(_emulate(spec, run, udp, f"{rate}M", str(seconds), str(run)),
                                                      run / "udp.json")}
        rows.append(row)
        return row

    for rate in TIMING_RATES:
        at(rate)
    ok = [r["rate_mbps"] for r in rows if (r["receiver_lost_percent"] or 0) < CEILING_LOSS]
    rate = TIMING_RATES[-1]
    if rate in ok:
        for _ in range(CEILING_STEPS):
            rate = int(rate * 1.25)
            if (at(rate)["receiver_lost_percent"] or 0) >= CEILING_LOSS:
                break
            ok.append(rate)
    return {"ap_host": ap_host, "rows": rows, "ceiling_mbps": max(ok, default=None)}


# The OFDMA section's modes: the [mac.ofdma] table each adds to experiments/emu-he-4sta.toml
# (none: single-user PPDUs).
OFDMA_MODES = (("su", ""), ("dl", "\n[mac.ofdma]\ndl = true\n"), ("dl+ul", "\n[mac.ofdma]\ndl = true\nul = true\n"))


def _ping(path: Path) -> dict[str, float]:
    m = re.search(r"= ([\d.]+)/([\d.]+)/([\d.]+)/", path.read_text())
    if not m:
        return {}
    return {"ping_rtt_min_ms": float(m.group(1)), "ping_rtt_mean_ms": float(m.group(2)),
            "ping_rtt_max_ms": float(m.group(3))}


def run_emu_bench(out_dir: str, seconds: int = 10, udp_rate: str = "1100M") -> int:
    if refuse("bench --emu"):
        return 2
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    report: dict[str, Any] = {"seconds": seconds, "tcp": [], "latency": [], "capacity": {}, "timing": []}
    with tempfile.TemporaryDirectory(prefix="lasthop-emu-bench-") as tmp_s:
        tmp = Path(tmp_s)
        iperf = tmp / "iperf.sh"
        iperf.write_text(IPERF)
        udp = tmp / "udp.sh"
        udp.write_text(UDP)
        for s in (iperf, udp):
            s.chmod(0o755)

        def one(base: Path, cc: str, n: int, label: str, ping_dir: str) -> dict[str, Any]:
            run = tmp / f"{label}-{cc}-{n}"
            run.mkdir()
            print(f"  {label}: {cc}, {n} station(s): emulator ...", file=sys.stderr, flush=True)
            emu = _emulate(base, run, iperf, cc, str(seconds), str(n), str(run))["emu"]
            rates = []
            for i in range(n):
                e = json.loads((run / f"iperf-{i}.json").read_text())["end"]
                rates.append(e["sum_received"]["bits_per_second"] / 1e6)
            print(f"  {label}: {cc}, {n} station(s): simulator ...", file=sys.stderr, flush=True)
            sim = _simulate(_sim_spec(base, run, f"sim-{label}-{cc}-{n}", seconds, cc, ping_dir),
                            run)
            em = {"goodput_mbps": sum(rates), "per_flow_mbps": rates, **_ping(run / "ping.txt"),
                  "lateness_p50_us": emu["lateness_p50_ns"] / 1e3,
                  "lateness_p99_us": emu["lateness_p99_ns"] / 1e3,
                  "lateness_p999_us": emu["lateness_p999_ns"] / 1e3}
            return {"spec": base.name, "cc": cc, "stations": n, "emulator": em, "simulator": sim,
                    "goodput_diff": em["goodput_mbps"] / sim["goodput_mbps"] - 1}

        print("lasthop bench --emu: TCP goodput (iperf3 vs the simulator's TCP)", file=sys.stderr)
        for cc in ("cubic", "bbr"):
            for n in (1, 4):
                base = EXPERIMENTS / ("emu-vht-1sta.toml" if n == 1 else "emu-vht-4sta.toml")
                report["tcp"].append(one(base, cc, n, "tcp", "up"))
        print("lasthop bench --emu: ping beside a CUBIC download, FIFO vs FQ-CoDel + airtime",
              file=sys.stderr)
        fifo = EXPERIMENTS / "emu-ht-bloat.toml"
        fq = tmp / "emu-ht-fq.toml"
        fq.write_text(fifo.read_text().replace('qdisc = "fifo"',
                                               'qdisc = "fq_codel"\nscheduler = "airtime"'))
        for label, base in (("fifo", fifo), ("fq_codel+airtime", fq)):
            r = one(base, "cubic", 1, label.replace("+", "-"), "up")
            r["ap"] = label
            report["latency"].append(r)
        print(f"lasthop bench --emu: capacity, UDP at {udp_rate} over HE 160 MHz",
              file=sys.stderr)
        run = tmp / "capacity"
        run.mkdir()
        data = _emulate(EXPERIMENTS / "emu-he-fast.toml", run, udp, udp_rate, str(seconds),
                        str(run))
        report["capacity"] = capacity_figures(data, run / "udp.json")
        print("lasthop bench --emu: timing, UDP at 100 Mb/s to the ceiling, without and with the AP host",
              file=sys.stderr)
        report["timing"] = [timing_sweep(tmp, udp, seconds, ap) for ap in (False, True)]
        print("lasthop bench --emu: OFDMA, four CUBIC downloads over HE 80 MHz: SU, DL, DL + UL",
              file=sys.stderr)
        report["ofdma"] = ofdma_rows(tmp, one)
    return write_report(out, "emu-bench.json", report, _table(report))


def ofdma_rows(tmp: Path, one: Any) -> list[dict[str, Any]]:
    """Four kernel CUBIC downloads and a ping across experiments/emu-he-4sta.toml in each of
    `OFDMA_MODES`, next to the simulator (`one` runs both)."""
    rows = []
    base = (EXPERIMENTS / "emu-he-4sta.toml").read_text()
    for mode, table in OFDMA_MODES:
        tag = mode.replace("+", "-")
        spec = tmp / f"emu-he-4sta-{tag}.toml"
        spec.write_text(base + table)
        r = one(spec, "cubic", 4, f"ofdma-{tag}", "up")
        r["ofdma"] = mode
        rows.append(r)
    return rows


def _table(r: dict[str, Any]) -> str:
    lines = ["TCP download, goodput Mb/s (emulator: iperf3 + kernel; simulator: its TCP model)",
             f"  {'cell':<18} {'cc':<6} {'sta':>3} {'emulator':>9} {'simulator':>9} {'diff':>7}"
             f" {'ping emu':>9} {'ping sim':>9}"]
    for x in r["tcp"] + r["latency"]:
        e, s = x["emulator"], x["simulator"]
        cell = x.get("ap", x["spec"].removesuffix(".toml"))
        lines.append(f"  {cell:<18} {x['cc']:<6} {x['stations']:>3} {e['goodput_mbps']:>9.1f} "
                     f"{s['goodput_mbps']:>9.1f} {x['goodput_diff'] * 100:>+6.1f}% "
                     f"{e.get('ping_rtt_mean_ms', float('nan')):>7.1f}ms "
                     f"{s['ping_rtt_mean_ms']:>7.1f}ms")
    c = r["capacity"]
    lines.append(f"capacity: offered {c['offered_mbps']:.0f} Mb/s (UDP payload), carried "
                 f"{c['carried_mbps']:.0f} Mb/s (IP) ({c['packets_per_s']:.0f} packets/s), model drops {c['model_drops']}, "
                 f"receiver lost {c['receiver_lost_percent']:.1f}%; write lateness p50 "
                 f"{c['lateness_p50_us']:.0f} us, p99 {c['lateness_p99_us']:.0f} us, p99.9 "
                 f"{c['lateness_p999_us']:.0f} us")
    lines.extend(timing_table(r.get("timing", [])))
    lines.extend(ofdma_table(r.get("ofdma", [])))
    return "\n".join(lines)


def ofdma_table(rows: list[dict[str, Any]]) -> list[str]:
    """The OFDMA section: goodput and ping, emulator vs simulator, and the write lateness."""
    if not rows:
        return []
    lines = ["OFDMA, four CUBIC downloads over HE 80 MHz MCS 7 (emulator: iperf3 + kernel; simulator: its TCP model)",
             f"  {'mode':<6} {'emulator':>9} {'simulator':>9} {'diff':>7} {'ping emu':>9} {'ping sim':>9}"
             f" {'late p50':>9} {'p99':>7} {'p99.9':>7}"]
    for x in rows:
        e, s = x["emulator"], x["simulator"]
        lines.append(f"  {x['ofdma']:<6} {e['goodput_mbps']:>9.1f} {s['goodput_mbps']:>9.1f} {x['goodput_diff'] * 100:>+6.1f}% "
                     f"{e.get('ping_rtt_mean_ms', float('nan')):>7.1f}ms {s['ping_rtt_mean_ms']:>7.1f}ms "
                     f"{e['lateness_p50_us']:>7.0f}us {e['lateness_p99_us']:>5.0f}us {e.get('lateness_p999_us', float('nan')):>5.0f}us")
    return lines


def timing_table(sweeps: list[dict[str, Any]]) -> list[str]:
    """The timing sweep's rows: per rate, the loss and the write lateness percentiles."""
    lines = []
    for t in sweeps:
        ceiling = f"{t['ceiling_mbps']} Mb/s" if t["ceiling_mbps"] else "below the first rate"
        lines.append(f"timing{' with the AP host' if t['ap_host'] else ''}: ceiling (< {CEILING_LOSS} % lost) {ceiling}")
        lines.append(f"  {'offered':>8} {'carried':>8} {'lost':>7} {'emu drops':>9} {'late p50':>9} {'p99':>8} {'p99.9':>8}")
        for x in t["rows"]:
            drops = x["model_drops"] + x.get("tun_write_failures", 0)
            lines.append(f"  {x['rate_mbps']:>8} {x['carried_mbps']:>8.0f} {x['receiver_lost_percent'] or 0:>6.2f}% "
                         f"{drops:>9} {x['lateness_p50_us']:>7.0f}us {x['lateness_p99_us']:>6.0f}us {x['lateness_p999_us']:>6.0f}us")
    return lines
