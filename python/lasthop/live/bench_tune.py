"""`lasthop bench --live tune`: the configuration `lasthop tune` picks, across the emulator with
kernel TCP, next to the simulator's figures and to the default's (docs/tune.md).

1. `lasthop tune` on a household cell (four 802.11ac stations at MCS 9 ×2, 7 ×2, 4 ×1, 1 ×1,
   each with a download, an upload and a ping; FQ-CoDel in the stations; the AP with mac80211's
   FQ-CoDel, airtime fairness and a firmware queue under AQL), or on one of the cells of
   `lasthop bench --tune-cells` (`--tune-cell NAME`: `bench/tune_cells.py` CELLS, e.g. the
   802.11ax ones), as the emulator runs it: its kernels' TCP senders, the stations' and the
   split proxy's in the AP host, hand their packets to TUN devices, which orphan them, so TCP
   small queues never hold them (`tcp_small_queues = false` at every station and at the AP).
2. The emulator on the same cell (its [[flows]] removed: the traffic is real), once as written
   (the default) and once with the chosen configuration (the EDCA values, TXOP limits and AQL
   limits act in the model): per station an iperf3 CUBIC download and upload and a ping every
   50 ms from the server.
3. The worst ping p99, the total goodput (downloads and uploads) and the worst station's
   download and upload over an equal share of the cell's, and its download over an equal share
   of the downloads' ("of downs"; `tune.shares`, tune's floors), beside the
   simulator's for the same specs as the emulator runs them ("sim (TUN)", the search's own
   figures) and as written (TCP small queues held, as on hardware: what the same choice does
   on a real AP).

Needs root, iperf3 and ping. Writes DIR/live-bench-tune.json and prints a table.
"""
from __future__ import annotations

import copy
import json
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from ..children import die_with_parent
from ..tune import FIGURES, SHARE_FLOOR, Search, apply, shares, tune, write_toml
from . import refuse, write_report

HOUSE = """\
name = "house"
description = "four stations at MCS 9x2, 7x2, 4x1, 1x1; download, upload and ping each"
[sim]
duration = "{secs}s"
warmup = "3s"
[phy]
standard = "vht"
channel_width = 80
[ap]
qdisc = "fq_codel"
scheduler = "airtime"
driver = "firmware"
[wired]
rate = "1Gbps"
delay = "10ms"
[[stations]]
mcs = 9
nss = 2
qdisc = "fq_codel"
[[stations]]
mcs = 7
nss = 2
qdisc = "fq_codel"
[[stations]]
mcs = 4
nss = 1
qdisc = "fq_codel"
[[stations]]
mcs = 1
nss = 1
qdisc = "fq_codel"
[[flows]]
stations = "all"
direction = "down"
pattern = "tcp"
[[flows]]
stations = "all"
direction = "up"
pattern = "tcp"
[[flows]]
stations = "all"
pattern = "ping"
interval = "50ms"
"""

RRUL = r"""#!/bin/bash
# rrul.sh NSTA SECONDS OUT [PROXY ARGS...]: per station an iperf3 CUBIC download and upload and a
# 50 ms ping; each station opens its connections (the download with -R: the server sends), as
# a split proxy at the AP intercepts only what stations open. With PROXY ARGS, `lasthop vwire`
# runs in the AP host first.
n=$1; t=$2; out=$3; shift 3
if [ $# -gt 0 ]; then
  lasthop emu exec ap -- lasthop vwire --stats 0 -q --record $out/vwire.jsonl "$@" 2> $out/vwire.log &
  proxy=$!
  sleep 1.5
fi
for i in $(seq 0 $((n-1))); do
  lasthop emu exec server -- iperf3 -s -1 -p $((5201+i)) >/dev/null 2>&1 &
  lasthop emu exec server -- iperf3 -s -1 -p $((6201+i)) >/dev/null 2>&1 &
done
sleep 1
pids=""
for i in $(seq 0 $((n-1))); do
  lasthop emu exec sta$i -- iperf3 -c 10.77.0.1 -p $((5201+i)) -t $t -R -C cubic -J > $out/down-$i.json &
  pids="$pids $!"
  lasthop emu exec sta$i -- iperf3 -c 10.77.0.1 -p $((6201+i)) -t $t -C cubic -J > $out/up-$i.json &
  pids="$pids $!"
  lasthop emu exec server -- ping -i 0.05 -w $t 10.77.1.$((i+1)) > $out/ping-$i.txt &
  pids="$pids $!"
done
wait $pids
if [ -n "$proxy" ]; then kill -TERM $proxy; wait $proxy; fi
"""

WARMUP_S = 3
# Levers `lasthop tune` searches that this bench cannot apply across the emulator (WQM needs an
# AP whose FIFO it sizes over a driver without a hardware queue; this cell has neither).
NOT_IN_EMULATOR = ("ap.buffer_sizer",)


def _rtts(path: Path) -> list[float]:
    """The RTTs (ms) of a ping log, after the warm-up."""
    out = []
    for line in path.read_text().splitlines():
        m = re.search(r"icmp_seq=(\d+) .*time=([\d.]+) ms", line)
        if m and int(m.group(1)) * 0.05 >= WARMUP_S:
            out.append(float(m.group(2)))
    return out


def _p99(xs: list[float]) -> float:
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(0.99 * len(xs)))] if xs else float("nan")


def _emulate(doc: dict[str, Any], out: Path, script: Path, n: int, secs: int) -> dict[str, Any]:
    """The cell in the emulator with the RRUL script; its figures. Its [[flows]] are left out
    (the traffic is real) and with them the split keys; the AP host is always there, so that
    runs with and without the split proxy cross the same path; when the spec splits its
    downloads or uploads, `lasthop vwire` runs in it (`--no-vwire` for splitting only), taking
    the connections to those servers' ports, with the spec's window clamp."""
    flows = doc.get("flows") or []
    split = {d: any(f.get("split") and f.get("direction", "down") == d for f in flows) for d in ("down", "up")}
    vwire = bool((doc.get("vwire") or {}).get("enabled"))
    clamp = (doc.get("vwire") or {}).get("window_clamp")
    cell = {k: v for k, v in doc.items() if k not in ("flows", "vwire")}
    cell["emu"] = {**cell.get("emu", {}), "ap_host": True}
    spec = out / "emu.toml"
    spec.write_text(write_toml(cell))
    # The downloads' server ports are 5201.., the uploads' 6201..: the proxy takes what the
    # model splits.
    ports = ([f"5201-{5200 + n}"] if split["down"] else []) + ([f"6201-{6200 + n}"] if split["up"] else [])
    proxy = (["--server-ports", ",".join(ports)] + ([] if vwire else ["--no-vwire"])
             + ([f"--window-clamp={clamp}"] if clamp else [])) if ports else []
    env = dict(os.environ, PATH=f"{Path(sys.executable).parent}:{os.environ.get('PATH', '')}")
    # The emulator ends with this process (its reaper removes the namespaces after a SIGKILL).
    r = subprocess.run([sys.executable, "-m", "lasthop", "emu", "run", str(spec), "--name", "lht",
                        "-o", str(out), "--stats", "0", "-q", "--", str(script), str(n), str(secs), str(out), *proxy],
                       capture_output=True, text=True, env=env, preexec_fn=die_with_parent)
    if r.returncode != 0:
        raise RuntimeError(f"emu run: exit {r.returncode}: {r.stderr.strip()[-800:]}")
    down = [json.loads((out / f"down-{i}.json").read_text())["end"]["sum_received"]["bits_per_second"] for i in range(n)]
    up = [json.loads((out / f"up-{i}.json").read_text())["end"]["sum_received"]["bits_per_second"] for i in range(n)]
    p99 = [_p99(_rtts(out / f"ping-{i}.txt")) for i in range(n)]
    emu = json.loads(next(out.glob("*-emu-s*.json")).read_text())["data"]["emu"]
    return {"latency_ms": max(p99), "ping_p99_ms": p99, "goodput_bps": sum(down) + sum(up), "proxy": proxy,
            "down_bps": sum(down), "up_bps": sum(up), "station_down_bps": down, "station_up_bps": up,
            **shares(down, up),
            "lateness_p99_us": emu["lateness_p99_ns"] / 1e3, "model_drops": emu["packets_dropped_by_model"]}


# The cells this bench runs: the household cell, or one of `bench --tune-cells`'.
HOUSE_CELL = "house"


def cell_names() -> list[str]:
    """`--tune-cell`'s choices: the household cell, then the tune-cells matrix's."""
    from ..bench.tune_cells import CELLS

    return [HOUSE_CELL] + [c[0] for c in CELLS]


def cell_text(name: str, seconds: int) -> str:
    """The spec of cell `name` (`cell_names`), `seconds` long."""
    if name == HOUSE_CELL:
        return HOUSE.format(secs=seconds)
    from ..bench.tune_cells import CELLS, cell_doc

    row = next(c for c in CELLS if c[0] == name)
    return write_toml(cell_doc(*row, seconds))


# tune's budget here: with the AP's TXOP limit among the levers a search of 32 candidates found
# no choice that keeps the target on the household cell, one of 96 to 128 does (docs/tune.md).
BUDGET = 96


def run_live_tune(out_dir: str, seconds: int = 20, budget: int = BUDGET, cell_name: str = HOUSE_CELL,
                  runs: int = 1, up_floor: float | None = None) -> int:
    """tune on the cell in the simulator, then the default and the choice across the emulator,
    `runs` times each, in pairs whose order alternates (default first in the odd pairs), so that
    a drift of the machine over the bench falls on both alike. `up_floor`: the search's floor
    for the uploads (`lasthop tune --upload-floor`; None: the downloads')."""
    if cell_name not in cell_names():
        print(f"lasthop bench --live tune: --tune-cell = {cell_name!r}: one of {', '.join(cell_names())}", file=sys.stderr)
        return 2
    if refuse("bench --live tune"):
        return 2
    from ..spec import parse_toml

    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    text = cell_text(cell_name, seconds)
    cell = out / f"{cell_name}.toml"
    cell.write_text(text)
    base_doc = parse_toml(text, str(cell))
    # The search runs on the cell as the emulator runs it: its kernels hand their packets to TUN
    # devices, which orphan each one (tun_net_xmit → skb_orphan), so neither the stations' TCP
    # small queues nor those of the split proxy in the AP host see the model's queues
    # (`tcp_small_queues = false` at every station and at the AP; docs/tune.md).
    as_tun = out / f"{cell_name}-as-tun.toml"
    as_tun.write_text(write_toml(_as_tun(base_doc)))
    print(f"lasthop bench --live tune: lasthop tune (budget {budget}, 3 seeds) ...", file=sys.stderr, flush=True)
    # The levers the emulator applies: in its model (EDCA, TXOP limits, AQL, the scheduler and its
    # airtime weights, the ACK filter) and, for the split proxy, `lasthop vwire` in its AP host.
    rep = tune(as_tun, out / "tune", budget, 3, progress=None, exclude=NOT_IN_EMULATOR, up_floor=up_floor)
    n = sum(st.get("count", 1) for st in base_doc["stations"])
    chosen_doc = apply(base_doc, rep["chosen"]["values"])
    report: dict[str, Any] = {"cell": cell_name, "seconds": seconds, "chosen": rep["chosen"]["values"],
                              "upload_floor": rep["upload_floor"],
                              "simulator_tun": {"default": rep["baseline"], "chosen": {k: rep["chosen"][k] for k in FIGURES}}}
    # The simulator again with the cell as written, as hardware sends (mac80211 keeps each skb
    # until its transmit status, so TCP small queues hold the senders): what the same choice
    # does on a real AP with real stations.
    written = Search(cell=base_doc, seeds=3, out=out / "tune-as-written")
    report["simulator"] = {label: written.candidate(values).figures()
                           for label, values in (("default", {}), ("chosen", rep["chosen"]["values"]))}
    with tempfile.TemporaryDirectory(prefix="lasthop-live-tune-") as tmp_s:
        tmp = Path(tmp_s)
        script = tmp / "rrul.sh"
        script.write_text(RRUL)
        script.chmod(0o755)
        pairs: list[dict[str, Any]] = []
        for i in range(runs):
            pair = {}
            order = (("default", base_doc), ("chosen", chosen_doc))
            for label, doc in order if i % 2 == 0 else order[::-1]:
                run = tmp / f"{label}-{i + 1}"
                run.mkdir()
                print(f"lasthop bench --live tune: the emulator, {label} (run {i + 1} of {runs}) ...",
                      file=sys.stderr, flush=True)
                pair[label] = _emulate(doc, run, script, n, seconds)
            pairs.append(pair)
    report["emulator_runs"] = pairs
    report["emulator"] = {label: _median_run([p[label] for p in pairs]) for label in ("default", "chosen")}
    report["emulator_choice_lower"] = sum(p["chosen"]["latency_ms"] < p["default"]["latency_ms"] for p in pairs)
    return write_report(out, "live-bench-tune.json", report, _table(report))


def _median_run(runs: list[dict[str, Any]]) -> dict[str, Any]:
    """The run whose worst ping p99 is the median of `runs` (the lower middle one of an even
    number): its figures stand for the configuration across the emulator."""
    return sorted(runs, key=lambda r: r["latency_ms"])[(len(runs) - 1) // 2]


def _as_tun(doc: dict[str, Any]) -> dict[str, Any]:
    """`doc` as the emulator's kernels send: every station's TCP senders and the AP host's (the
    split proxy's WiFi side) unheld by the queues below them, as a TUN device leaves them."""
    out = copy.deepcopy(doc)
    for st in out.get("stations") or []:
        st["tcp_small_queues"] = False
    out.setdefault("ap", {})["tcp_small_queues"] = False
    return out


def _table(r: dict[str, Any]) -> str:
    up = r.get("upload_floor")
    held = "" if up is None or up == SHARE_FLOOR else f" (the search's uploads' floor {up:.0%})"
    lines = [f"cell: {r.get('cell', HOUSE_CELL)}; chosen{held}: {', '.join(f'{k}={v}' for k, v in r['chosen'].items()) or '(the default)'}",
             f"{'':10s} {'':9s} {'ping p99':>10s} {'goodput':>10s} {'down':>8s} {'up':>8s} "
             f"{'worst down':>11s} {'worst up':>9s} {'of downs':>9s}"]
    for host in ("simulator", "simulator_tun", "emulator"):
        if host not in r:
            continue
        for label in ("default", "chosen"):
            x = r[host][label]
            name = {"simulator_tun": "sim (TUN)"}.get(host, host)
            lines.append(f"{name:10s} {label:9s} {x['latency_ms']:8.1f}ms {x['goodput_bps'] / 1e6:7.1f}Mb/s "
                         f"{x['down_bps'] / 1e6:8.1f} {x['up_bps'] / 1e6:8.1f} "
                         f"{x['worst_down_share'] * 100:9.1f} % {x['worst_up_share'] * 100:7.1f} % "
                         f"{x['worst_down_own_share'] * 100:7.1f} %")
    pairs = r.get("emulator_runs") or []
    if len(pairs) > 1:
        lines[-2] += "   (the median run)"
        lines[-1] += "   (the median run)"
        lines.append(f"emulator runs, worst ping p99 default -> chosen: "
                     + ", ".join(f"{p['default']['latency_ms']:.0f} -> {p['chosen']['latency_ms']:.0f} ms" for p in pairs)
                     + f"; the choice lower in {r['emulator_choice_lower']} of {len(pairs)}")
    return "\n".join(lines)
