"""`lasthop bench --live l4s`: the l4s suite's WiFi cell across the emulator with kernel TCP's
classic ECN or DCTCP, next to the simulator's same cell (docs/emu.md, "ECN").

The cell is `reproduce l4s`'s (two 802.11ac 80 MHz MCS 9 ×2 stations, 10 Gb/s wired at 10 ms one
way, mac80211's FQ-CoDel with airtime fairness; the pull driver or a firmware queue under AQL).
Station 0 downloads with classic ECN (RFC 3168: the kernel's CUBIC, ECT(0), ECE/CWR), station 1
without. The AP marks at the qdisc: CoDel's own ECN marking in mac80211's flow queue (CE at its
20 ms target instead of a drop), or a CE threshold on every ECN-capable packet (fq_codel's
`ce_threshold`; a kernel without Prague sends no ECT(1), so an L4S-only selector would mark
nothing). The simulator runs the same spec with its own CUBIC, `ecn = "classic"` beside `"off"`.

`--cc dctcp`: station 0's download uses the kernel's DCTCP instead (RFC 8257: ECT(0) at both ends,
the receiver's ECE following each CE state change, the window cut by α/2 once per window of
marks), needing a kernel with tcp_dctcp (loaded: `modprobe tcp_dctcp`); the simulator runs its
DCTCP (`cc = "dctcp"`, `ecn = "l4s"`: ECT(1) with Accurate ECN feedback, which the AP's CE threshold
marks as it marks ECT(0)). tests/python/test_l4s_vm.py runs it in the VM harness's Debian kernel.

Figures per point, on both hosts: the ECN flow's queueing delay (its one-way delay's p50 and
p99 above the path's base, the lower of the two downloads' 1st percentiles, as the l4s suite
measures it), both flows' goodput and their ratio, and the CE marks the AP made.

Needs root and iperf3. Writes DIR/live-bench-l4s.json and prints a table.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from ..children import die_with_parent
from ..reproduce.framework import mean
from ..reproduce.l4s import WIRED_MS, _wifi, base_ns_of
from ..tune import write_toml
from . import refuse, write_report

# The marking points: CoDel's own ECN marking (no threshold), then CE thresholds.
THRESHOLDS = ["off", "2ms", "5ms"]
# The cells: the l4s suite's (802.11ac 80 MHz MCS 9 ×2, 2 × 780 Mb/s), or one at 20 MHz MCS 4 ×1
# (2 × 39 Mb/s) that an emulated CPU keeps up with (a VM without hardware virtualisation).
CELLS = {"vht80": {"channel_width": 80, "mcs": 9, "nss": 2},
         "vht20": {"channel_width": 20, "mcs": 4, "nss": 1}}
# The ECN download's kernel controller -> the simulator's (cc, ecn) for the same flow.
KERNEL_CCS = {"cubic": ("cubic", "classic"), "dctcp": ("dctcp", "l4s")}
DRIVERS = ["pull", "firmware"]
WARMUP_S = 3

L4S = r"""#!/bin/bash
# l4s.sh SECONDS OUT CC: two kernel downloads opened by the stations (iperf3 -R), sta0's with
# controller CC (both ends: iperf3 hands -C to the server) asking for classic ECN (tcp_ecn = 1 in
# its namespace; the server's default 2 accepts; DCTCP asks for ECN itself), sta1's CUBIC without.
t=$1; out=$2; cc=${3:-cubic}
lasthop emu exec sta0 -- sysctl -q -w net.ipv4.tcp_ecn=1
lasthop emu exec sta1 -- sysctl -q -w net.ipv4.tcp_ecn=0
lasthop emu exec server -- iperf3 -s -1 -p 5201 >/dev/null 2>&1 &
lasthop emu exec server -- iperf3 -s -1 -p 5202 >/dev/null 2>&1 &
sleep 1
lasthop emu exec sta0 -- iperf3 -c 10.77.0.1 -p 5201 -t $t -R -C $cc -J > $out/ecn.json &
a=$!
lasthop emu exec sta1 -- iperf3 -c 10.77.0.1 -p 5202 -t $t -R -C cubic -J > $out/plain.json &
b=$!
wait $a $b
"""


def cell(driver: str, threshold: str, secs: int, cc: str = "cubic", which: str = "vht80") -> dict[str, Any]:
    """The l4s suite's WiFi cell at one marking point, with an ECN download to station 0 (the
    simulator's counterpart of kernel controller `cc`) beside a CUBIC one without ECN to
    station 1."""
    ap: dict[str, Any] = {"driver": driver}
    if threshold != "off":
        ap["ce_threshold"] = threshold
    doc = _wifi(f"l4s-live-{which}-{cc}-{driver}-{threshold}", **ap)
    c = CELLS[which]
    doc["phy"] = {**doc["phy"], "channel_width": c["channel_width"]}
    doc["stations"] = [{**g, "mcs": c["mcs"], "nss": c["nss"]} for g in doc["stations"]]
    model_cc, ecn = KERNEL_CCS[cc]
    doc["sim"] = {**doc["sim"], "duration": f"{secs}s", "warmup": f"{WARMUP_S}s"}
    doc["flows"] = [{"stations": 0, "direction": "down", "pattern": "tcp", "cc": model_cc, "ecn": ecn},
                    {"stations": 1, "direction": "down", "pattern": "tcp", "cc": "cubic"}]
    return doc


def figures(flows: list[dict[str, Any]], ce_marked: int) -> dict[str, Any]:
    """The point's figures from its two downloads' records (ECN first): queueing delay above
    the path's base (the lower 1st percentile of the two), goodput, their ratio."""
    base = base_ns_of(flows)
    ecn, plain = flows
    return {"ecn_p50_ms": (ecn["delay_ns"]["p50"] - base) / 1e6, "ecn_p99_ms": (ecn["delay_ns"]["p99"] - base) / 1e6,
            "plain_p99_ms": (plain["delay_ns"]["p99"] - base) / 1e6,
            "ecn_mbps": ecn["goodput_bps"] / 1e6, "plain_mbps": plain["goodput_bps"] / 1e6,
            "ratio": ecn["goodput_bps"] / plain["goodput_bps"] if plain["goodput_bps"] > 0 else float("inf"),
            "ce_marked": ce_marked}


def _simulate(doc: dict[str, Any], seeds: int) -> list[dict[str, Any]]:
    from ..api import run
    out = []
    for seed in range(1, seeds + 1):
        flows = run(doc, seed=seed).doc["data"]["flows"]
        out.append(figures(flows[:2], flows[0]["tcp"]["ecn"]["ce_marked"]))
    return out


def _emulate(doc: dict[str, Any], run: Path, script: Path, secs: int, cc: str = "cubic") -> dict[str, Any]:
    """The cell in the emulator (its [[flows]] left out: the traffic is the kernel's)."""
    spec = run / "emu.toml"
    spec.write_text(write_toml({k: v for k, v in doc.items() if k != "flows"}))
    env = dict(os.environ, PATH=f"{Path(sys.executable).parent}:{os.environ.get('PATH', '')}")
    r = subprocess.run([sys.executable, "-m", "lasthop", "emu", "run", str(spec), "--name", "lhl",
                        "-o", str(run), "--stats", "0", "-q", "--", str(script), str(secs), str(run), cc],
                       capture_output=True, text=True, env=env, preexec_fn=die_with_parent)
    if r.returncode != 0:
        raise RuntimeError(f"emu run: exit {r.returncode}: {r.stderr.strip()[-800:]}")
    data = json.loads(next(run.glob("*-emu-s*.json")).read_text())["data"]
    # The two downloads as the model carried them: from the server's ports 5201 (ECN) and
    # 5202, each the busiest flow from its port (iperf3's control connection is the other).
    down = [f for f in data["flows"] if f["direction"] == "down" and "external" in f]
    pick = [max((f for f in down if f["external"].split(" ")[1].endswith(f":{port}")),
                key=lambda f: f["delivered_packets"]) for port in (5201, 5202)]
    x = figures(pick, data["emu"].get("ce_marked", 0))
    # How late the emulator wrote packets against the model's instants (docs/emu.md).
    x["lateness_p99_us"] = data["emu"]["lateness_p99_ns"] / 1e3
    runs = {n: json.loads((run / f"{n}.json").read_text()) for n in ("ecn", "plain")}
    for n, r in runs.items():
        if "error" in r or "sum_received" not in r.get("end", {}):
            raise RuntimeError(f"iperf3 ({n} download): {r.get('error', 'no result')}")
    ends = [runs[n]["end"] for n in ("ecn", "plain")]
    x["iperf_mbps"] = [e["sum_received"]["bits_per_second"] / 1e6 for e in ends]
    # The controllers the kernel ran (iperf3's sender and receiver sockets of the ECN download).
    x["kernel_cc"] = [ends[0].get("sender_tcp_congestion"), ends[0].get("receiver_tcp_congestion")]
    return x


def kernel_cc_problem(cc: str) -> str | None:
    """Why this kernel cannot run `cc` (one line), or None."""
    try:
        have = Path("/proc/sys/net/ipv4/tcp_available_congestion_control").read_text().split()
    except OSError as e:
        return f"cannot read the kernel's congestion controls: {e}"
    if cc not in have:
        return (f"--cc {cc}: this kernel has no tcp_{cc} loaded (available: {' '.join(have)}); "
                f"`modprobe tcp_{cc}`, or a kernel built with it")
    return None


def run_live_l4s(out_dir: str, seconds: int = 15, seeds: int = 3, cc: str = "cubic",
                 which: str = "vht80") -> int:
    for flag, value, allowed in (("--cc", cc, KERNEL_CCS), ("--l4s-cell", which, CELLS)):
        if value not in allowed:
            print(f"lasthop bench --live l4s: {flag} = {value!r}: one of {', '.join(allowed)}", file=sys.stderr)
            return 2
    if refuse("bench --live l4s", ("iperf3", "ip", "sysctl")):
        return 2
    why = kernel_cc_problem(cc)
    if why is not None:
        print(f"lasthop bench --live l4s: {why}", file=sys.stderr)
        return 2
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    report: dict[str, Any] = {"seconds": seconds, "seeds": seeds, "wired_ms": WIRED_MS, "cc": cc,
                              "cell": which, "points": []}
    points = [(d, t) for d in DRIVERS for t in THRESHOLDS]
    with tempfile.TemporaryDirectory(prefix="lasthop-live-l4s-") as tmp_s:
        tmp = Path(tmp_s)
        script = tmp / "l4s.sh"
        script.write_text(L4S)
        script.chmod(0o755)
        for i, (driver, threshold) in enumerate(points):
            print(f"lasthop bench --live l4s: [{i + 1}/{len(points)}] {which}, {cc}, {driver}, CE threshold "
                  f"{threshold} ...", file=sys.stderr, flush=True)
            doc = cell(driver, threshold, seconds, cc, which)
            sim = _simulate(doc, seeds)
            run = tmp / f"{driver}-{threshold}"
            run.mkdir()
            emu = _emulate(doc, run, script, seconds, cc)
            report["points"].append({"driver": driver, "ce_threshold": threshold, "emulator": emu,
                                     "simulator": {k: mean(s[k] for s in sim) for k in sim[0]},
                                     "simulator_runs": sim})
    name = "-".join(["live-bench-l4s"] + [x for x in (cc, which) if x not in ("cubic", "vht80")]) + ".json"
    return write_report(out, name, report, table(report))


def table(r: dict[str, Any]) -> str:
    lines = [f"{'driver':9s} {'threshold':9s} {'host':10s} {'ECN p50':>8s} {'ECN p99':>8s} {'plain p99':>9s} "
             f"{'ECN':>7s} {'plain':>7s} {'ratio':>6s} {'CE':>7s}"]
    for p in r["points"]:
        for host in ("simulator", "emulator"):
            x = p[host]
            lines.append(f"{p['driver']:9s} {p['ce_threshold']:9s} {host:10s} {x['ecn_p50_ms']:6.1f}ms "
                         f"{x['ecn_p99_ms']:6.1f}ms {x['plain_p99_ms']:7.1f}ms {x['ecn_mbps']:7.1f} "
                         f"{x['plain_mbps']:7.1f} {x['ratio']:6.2f} {x['ce_marked']:7.0f}")
    return "\n".join(lines) + "\n(queueing delay above the path's base; goodput in Mb/s)"
