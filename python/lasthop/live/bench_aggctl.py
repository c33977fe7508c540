"""`lasthop bench --live aggctl`: `lasthop aggctl send|recv` across the emulator, next to the
simulator on the same cell (TARGETS A2/A3 setup: 802.11ac 80 MHz, MCS 9, NSS 2, N_max 64,
N_e 32, Δ 500 ms, K0 1, wired 10 Gb/s 1 ms).

* Estimator accuracy: each receiver's per-Δ report against the emulator's own count of the
  downlink A-MPDUs it sent that station in the same wall-clock interval (`emu.ampdu_samples`).
* The loop: aggregation, one-way delay, loss and rate per receiver with the control loop, next
  to a constant-rate sender at the loop's mean rate and to `lasthop run` of the same spec.
* Attacks and the watchdog (``faults``): forged, replayed and unknown-source reports are
  injected at station 0; the last receiver is killed halfway and must be dropped.
* Pacing precision: the sender alone at 600 Mb/s between two namespaces (veth).

Needs root. Writes DIR/live-aggctl.json and prints a table.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import statistics
import struct
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[3]
PORT = 7450
SEND_PORT = 7451


def binary() -> Path:
    from .cli import live_binary
    return live_binary()


def cell(n: int, seconds: float) -> dict:
    from ..reproduce.aggctl.setup import _base
    s = _base("aggctl-live", f"{seconds}s", "0s", "500ms")
    s["stations"] = [{"count": n, "mcs": 9, "nss": 2}]
    s["flows"] = [{"direction": "down", "pattern": "aggctl", "stations": list(range(n))}] if n > 1 else s["flows"]
    return s


def sta_addr(i: int) -> str:
    return f"10.77.1.{1 + i}"


# ---------------------------------------------------------------------- inside `emu run`

def scenario(path: str) -> int:
    """Run inside `lasthop emu run` (LASTHOP_EMU set): receivers in each station, the sender
    in the server; JSON file: n, seconds, out, mode ("loop"|"fixed"), rate_bps, faults."""
    sc = json.loads(Path(path).read_text())
    emu = os.environ["LASTHOP_EMU"]
    out = Path(sc["out"])
    b = str(binary())
    py = sys.executable

    def ex(node: str, *cmd: str) -> list[str]:
        return [py, "-m", "lasthop", "emu", "exec", "--name", emu, node, "--", *cmd]

    master = out / "master.key"
    master.write_text(subprocess.run([b, "aggctl", "key", "--new"], capture_output=True, text=True, check=True).stdout)
    n, secs = sc["n"], sc["seconds"]
    recv = []
    for i in range(n):
        k = out / f"r{i}.key"
        k.write_text(subprocess.run([b, "aggctl", "key", "--master", str(master), "--for", f"{sta_addr(i)}:{PORT}"],
                                    capture_output=True, text=True, check=True).stdout)
        recv.append(subprocess.Popen(ex(f"sta{i}", b, "aggctl", "recv", "--listen", f"{sta_addr(i)}:{PORT}", "--key", str(k),
                                        "--out", str(out / f"recv{i}.json"), "--duration", f"{secs + 3}s", "-q")))
    time.sleep(0.5)
    cmd = [b, "aggctl", "send", "--bind", f"10.77.0.1:{SEND_PORT}", "--key", str(master), "--duration", f"{secs}s",
           "--out", str(out / "send.json"), "--spin", "0", "--drop-after", "2s", "-q"]
    for i in range(n):
        cmd += ["--to", f"{sta_addr(i)}:{PORT}"]
    if sc.get("mode") == "fixed":
        cmd += ["--rate", str(int(sc["rate_bps"]))]
    if sc.get("initial_rate"):
        cmd += ["--initial-rate", sc["initial_rate"]]
    sender = subprocess.Popen(ex("server", *cmd))
    attacker = None
    if sc.get("faults"):
        attacker = subprocess.Popen(ex("sta0", py, "-m", "lasthop.live.bench_aggctl", "attack", sta_addr(0)),
                                    stdout=subprocess.PIPE, text=True)
        time.sleep(secs / 2)
        recv[-1].send_signal(signal.SIGKILL)
    sender.wait(timeout=secs + 60)
    for r in recv:
        r.wait(timeout=30)
    att = json.loads(attacker.communicate(timeout=30)[0].strip().splitlines()[-1]) if attacker else None
    (out / "scenario-result.json").write_text(json.dumps({"sender_exit": sender.returncode, "attack": att}))
    return 0


def _checksum(b: bytes) -> int:
    if len(b) % 2:
        b += b"\0"
    s = sum(struct.unpack(f"!{len(b) // 2}H", b))
    while s >> 16:
        s = (s & 0xFFFF) + (s >> 16)
    return ~s & 0xFFFF


def _ip_udp(src: str, sport: int, dst: str, dport: int, payload: bytes) -> bytes:
    udp = struct.pack("!HHHH", sport, dport, 8 + len(payload), 0) + payload
    hdr = struct.pack("!BBHHHBBH4s4s", 0x45, 0, 20 + len(udp), 0, 0, 64, 17, 0, socket.inet_aton(src), socket.inet_aton(dst))
    return hdr[:10] + struct.pack("!H", _checksum(hdr)) + hdr[12:] + udp


def _only_udp_from(sock: socket.socket, port: int) -> None:
    """A classic BPF filter on a packet socket (network header first): UDP from `port` only."""
    import ctypes
    prog = [(0x30, 0, 0, 9), (0x15, 0, 4, 17), (0xB1, 0, 0, 0), (0x48, 0, 0, 0), (0x15, 0, 1, port),
            (0x06, 0, 0, 0xFFFF), (0x06, 0, 0, 0)]
    buf = ctypes.create_string_buffer(b"".join(struct.pack("HBBI", *i) for i in prog))
    fprog = struct.pack("HL", len(prog), ctypes.addressof(buf))
    sock.setsockopt(socket.SOL_SOCKET, 26, fprog)  # SO_ATTACH_FILTER (the kernel copies it)


def attack(me: str) -> int:
    """In station 0's namespace: capture one of its receiver's reports, then send it again
    (replay), a copy with one bit changed (forged) and a copy from another port (unknown
    source) — 5 of each, 0.2 s apart. Prints what it sent."""
    cap = socket.socket(socket.AF_PACKET, socket.SOCK_DGRAM, socket.htons(0x0003))
    _only_udp_from(cap, PORT)  # the receiver's data flood would crowd out its reports
    cap.settimeout(10)
    report = None
    t = time.monotonic()
    while report is None and time.monotonic() - t < 10:
        try:
            pkt = cap.recv(4096)
        except socket.timeout:
            break
        if len(pkt) >= 28 and pkt[9] == 17 and socket.inet_ntoa(pkt[12:16]) == me:
            ihl = (pkt[0] & 15) * 4
            sport, dport = struct.unpack("!HH", pkt[ihl:ihl + 4])
            payload = pkt[ihl + 8:]
            if sport == PORT and dport == SEND_PORT and payload[:2] == b"AR":
                report = (socket.inet_ntoa(pkt[16:20]), payload)
    cap.close()
    if report is None:
        print(json.dumps({"captured": False}))
        return 1
    dst, payload = report
    raw = socket.socket(socket.AF_INET, socket.SOCK_RAW, socket.IPPROTO_RAW)
    forged = bytearray(payload)
    forged[20] ^= 0x01  # the report's aggregates field: a larger or smaller aggregation
    sent = {"replayed": 0, "forged": 0, "unknown": 0}
    time.sleep(1.0)  # the real receiver has sent newer reports by now
    for _ in range(5):
        raw.sendto(_ip_udp(me, PORT, dst, SEND_PORT, payload), (dst, 0))
        sent["replayed"] += 1
        raw.sendto(_ip_udp(me, PORT, dst, SEND_PORT, bytes(forged)), (dst, 0))
        sent["forged"] += 1
        raw.sendto(_ip_udp(me, PORT + 100, dst, SEND_PORT, payload), (dst, 0))
        sent["unknown"] += 1
        time.sleep(0.2)
    print(json.dumps({"captured": True, **sent}))
    return 0


# ---------------------------------------------------------------------- outside

def emulate(n: int, seconds: float, tmp: Path, seed: int = 1, mode: str = "loop", rate_bps: float = 0.0,
            faults: bool = False, initial_rate: str | None = None, realtime: int | None = None) -> dict:
    """One emulator run; returns {"send", "recv": [...], "emu": the emulator's result, "scenario"}.
    `realtime`: the emulator's model thread under SCHED_FIFO at this priority (`--realtime`)."""
    tmp.mkdir(parents=True, exist_ok=True)
    spec = cell(n, seconds)
    spec = {k: v for k, v in spec.items() if k not in ("flows", "aggctl")}
    from .bench_vwire import _toml
    cf = tmp / "cell.toml"
    cf.write_text(_toml(spec))
    sc = {"n": n, "seconds": seconds, "out": str(tmp), "mode": mode, "rate_bps": rate_bps, "faults": faults,
          "initial_rate": initial_rate}
    (tmp / "scenario.json").write_text(json.dumps(sc))
    r = subprocess.run([sys.executable, "-m", "lasthop", "emu", "run", str(cf), "--name", "lha", "--seed", str(seed),
                        "-o", str(tmp), "--stats", "0", "-q",
                        *(["--realtime", str(realtime)] if realtime is not None else []), "--", sys.executable, "-m", "lasthop.live.bench_aggctl",
                        "scenario", str(tmp / "scenario.json")], capture_output=True, text=True, timeout=seconds + 180, cwd=ROOT)
    if r.returncode != 0:
        raise RuntimeError(f"emu run: exit {r.returncode}: {r.stderr[-1500:]}")
    res = json.loads(next(tmp.glob("aggctl-live-emu-s*.json")).read_text())
    return {"send": json.loads((tmp / "send.json").read_text()),
            "recv": [json.loads(p.read_text()) if (p := tmp / f"recv{i}.json").exists() else None for i in range(n)],
            "emu": res["data"]["emu"], "scenario": json.loads((tmp / "scenario-result.json").read_text())}


def estimate_errors(run: dict, skip_slots: int = 1) -> list[dict]:
    """Per receiver and reported slot: its mean MPDUs per aggregate against the emulator's
    count for that station over the same wall-clock interval."""
    emu = run["emu"]
    s = emu["ampdu_samples"]
    t = [emu["epoch_ns"] + x for x in s["t_ns"]]
    import bisect
    out = []
    for i, rec in enumerate(run["recv"]):
        if rec is None:
            continue
        delta = rec["interval_ns"]
        for sl in rec["slots"][skip_slots:]:
            if not sl["aggregates"]:
                continue
            a, b = sl["start_ns"], sl["start_ns"] + delta
            ia, ib = bisect.bisect_left(t, a), bisect.bisect_left(t, b)
            if ia == 0 or ib >= len(t):
                continue
            ia, ib = ia - 1 if a - t[ia - 1] < t[ia] - a else ia, ib - 1 if b - t[ib - 1] < t[ib] - b else ib
            pp = s["ppdus"][i][ib] - s["ppdus"][i][ia]
            mp = s["mpdus"][i][ib] - s["mpdus"][i][ia]
            if pp == 0:
                continue
            truth = mp / pp
            out.append({"receiver": i, "k": sl["k"], "estimate": sl["mean_mpdus"], "truth": truth,
                        "error": sl["mean_mpdus"] - truth})
    return out


def summary(run: dict, warm_s: float) -> dict:
    """Per receiver, after `warm_s`: mean aggregation reported, mean rate, one-way delay, loss."""
    rows = []
    for i, (sr, rr) in enumerate(zip(run["send"]["receivers"], run["recv"])):
        ser = [x for x in sr["series"] if x["t_s"] >= warm_s]
        slots = [x for x in (rr or {}).get("slots", []) if x["start_ns"] >= run["send"]["start_ns"] + warm_s * 1e9]
        agg = [x["mean_mpdus"] for x in slots if x["mean_mpdus"]]
        owd = [x["owd_mean_ns"] / 1e6 for x in slots if x["aggregates"]]
        rows.append({"receiver": i, "rate_mbps": statistics.fmean([x["rate_bps"] for x in ser]) / 1e6 if ser else 0.0,
                     "agg_mean": statistics.fmean(agg) if agg else None, "owd_ms": statistics.fmean(owd) if owd else None,
                     "owd_p99_ms": (rr or {}).get("owd_ns", {}).get("p99", 0) / 1e6, "lost": (rr or {}).get("lost"),
                     "received": (rr or {}).get("received"), "sent": sr["sent_packets"]})
    return {"receivers": rows, "sum_rate_mbps": sum(r["rate_mbps"] for r in rows)}


def jain(xs: list[float]) -> float:
    return sum(xs) ** 2 / (len(xs) * sum(x * x for x in xs)) if xs and any(xs) else 0.0


def simulate(n: int, seconds: float, warm: float, seed: int = 1) -> dict:
    from ..native import native as _native
    from ..spec import normalize
    spec = cell(n, seconds)
    spec["sim"]["warmup"] = f"{warm}s"
    s = normalize(spec)
    d = json.loads(_native().run(s.to_json(), seed, None))
    fl = d["flows"]
    return {"sum_goodput_mbps": sum(f["goodput_bps"] for f in fl) / 1e6,
            "agg_mean": statistics.fmean(st["mean_ampdu_down"] for st in d["stations"]),
            "delay_mean_ms": statistics.fmean(f["delay_ns"]["mean"] for f in fl) / 1e6,
            "delay_p99_ms": max(f["delay_ns"]["p99"] for f in fl) / 1e6,
            "lost": sum(f["dropped_queue"] + f["dropped_retry"] + f["dropped_wired"] for f in fl)}


def pacing(seconds: float = 5.0, rate: str = "600Mbps") -> dict:
    """The sender at a fixed `rate` between two namespaces joined by veth."""
    a, bns = f"lhpa{os.getpid() % 10000}", f"lhpb{os.getpid() % 10000}"
    for ns in (a, bns):
        subprocess.run(["ip", "netns", "del", ns], capture_output=True)
        subprocess.run(["ip", "netns", "add", ns], check=True)
    try:
        sh = f"""ip link add p0 netns {a} type veth peer name p1 netns {bns}
        ip -n {a} addr add 10.9.7.1/24 dev p0; ip -n {a} link set p0 up
        ip -n {bns} addr add 10.9.7.2/24 dev p1; ip -n {bns} link set p1 up"""
        subprocess.run(["bash", "-ec", sh], check=True, capture_output=True)
        with tempfile.TemporaryDirectory() as t:
            b = str(binary())
            rv = subprocess.Popen(["ip", "netns", "exec", bns, b, "aggctl", "recv", "--listen", f"10.9.7.2:{PORT}",
                                   "--duration", f"{seconds + 2}s", "--out", f"{t}/r.json", "-q"])
            time.sleep(0.3)
            subprocess.run(["ip", "netns", "exec", a, b, "aggctl", "send", "--to", f"10.9.7.2:{PORT}", "--bind",
                            f"10.9.7.1:{SEND_PORT}", "--rate", rate, "--duration", f"{seconds}s", "--cpu", "0",
                            "--out", f"{t}/s.json", "-q"], check=True)
            rv.wait(timeout=30)
            s = json.loads(Path(f"{t}/s.json").read_text())
            r = json.loads(Path(f"{t}/r.json").read_text())
    finally:
        for ns in (a, bns):
            subprocess.run(["ip", "netns", "del", ns], capture_output=True)
    p = s["pacing"]
    return {"rate": rate, "seconds": s["seconds"], "sent_mbps": s["receivers"][0]["goodput_bps"] / 1e6,
            "departure_error_ns": p["departure_error_ns"], "late_resets": p["late_resets"],
            "received": r["received"], "lost": r["lost"]}


def run_live_aggctl(out_dir: str, seconds: float = 30.0) -> int:
    if os.geteuid() != 0:
        print("lasthop: error: bench --live aggctl needs root", file=sys.stderr)
        return 2
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    rep: dict[str, Any] = {"seconds": seconds}
    warm = seconds / 2
    with tempfile.TemporaryDirectory(prefix="lasthop-live-aggctl-") as t:
        for n in (1, 5):
            print(f"lasthop bench --live aggctl: {n} receiver(s), control loop ...", file=sys.stderr, flush=True)
            loop = emulate(n, seconds, Path(t) / f"loop{n}")
            sm = summary(loop, warm)
            err = estimate_errors(loop)
            print(f"lasthop bench --live aggctl: {n} receiver(s), constant rate {sm['sum_rate_mbps']:.0f} Mb/s ...",
                  file=sys.stderr, flush=True)
            fixed = emulate(n, seconds, Path(t) / f"fixed{n}", mode="fixed", rate_bps=sm["sum_rate_mbps"] * 1e6 / n)
            rep[f"n{n}"] = {"loop": sm, "fixed": summary(fixed, warm),
                            "estimate": {"slots": len(err), "mean_abs_error": statistics.fmean(abs(e["error"]) for e in err) if err else None,
                                         "mean_error": statistics.fmean(e["error"] for e in err) if err else None,
                                         "worst_error": max((abs(e["error"]) for e in err), default=None),
                                         "fixed_mean_abs_error": statistics.fmean(abs(e["error"]) for e in estimate_errors(fixed)) if estimate_errors(fixed) else None},
                            "jain_rates": jain([r["rate_mbps"] for r in sm["receivers"]]),
                            "emu_lateness_p99_us": loop["emu"]["lateness_p99_ns"] / 1e3,
                            "sim": simulate(n, seconds, warm)}
        print("lasthop bench --live aggctl: pacing at 600 Mb/s ...", file=sys.stderr, flush=True)
        rep["pacing"] = pacing()
    from . import write_report
    return write_report(out, "live-aggctl.json", rep, table(rep))


def table(r: dict) -> str:
    f = lambda x, p=1: "-" if x is None else f"{x:.{p}f}"  # noqa: E731
    lines = ["aggctl across the emulator (VHT 80 MHz MCS 9 NSS 2, N_e 32, Δ 500 ms), second half of each run"]
    for n in (1, 5):
        x = r[f"n{n}"]
        lp, fx, sm, e = x["loop"], x["fixed"], x["sim"], x["estimate"]
        aggs = [y["agg_mean"] for y in lp["receivers"] if y["agg_mean"]]
        owd = [y["owd_ms"] for y in lp["receivers"] if y["owd_ms"] is not None]
        faggs = [y["agg_mean"] for y in fx["receivers"] if y["agg_mean"]]
        fowd = [y["owd_ms"] for y in fx["receivers"] if y["owd_ms"] is not None]
        lines.append(f"  {n} receiver(s): loop {lp['sum_rate_mbps']:.0f} Mb/s, aggregation {f(statistics.fmean(aggs) if aggs else None)}, "
                     f"owd {f(statistics.fmean(owd) if owd else None, 2)} ms, lost {sum(y['lost'] or 0 for y in lp['receivers'])}, "
                     f"Jain {x['jain_rates']:.3f}")
        lines.append(f"      constant rate: {fx['sum_rate_mbps']:.0f} Mb/s, aggregation {f(statistics.fmean(faggs) if faggs else None)}, "
                     f"owd {f(statistics.fmean(fowd) if fowd else None, 2)} ms, lost {sum(y['lost'] or 0 for y in fx['receivers'])}")
        lines.append(f"      simulator: {sm['sum_goodput_mbps']:.0f} Mb/s, aggregation {f(sm['agg_mean'])}, delay {f(sm['delay_mean_ms'], 2)} ms "
                     f"(p99 {f(sm['delay_p99_ms'], 2)}), lost {sm['lost']}")
        lines.append(f"      estimate vs the emulator's count per Δ: {e['slots']} slots, mean |error| {f(e['mean_abs_error'], 2)}, "
                     f"mean {f(e['mean_error'], 2)}, worst {f(e['worst_error'], 2)} MPDUs")
    p = r["pacing"]
    d = p["departure_error_ns"]
    lines.append(f"pacing at {p['rate']} (veth, pinned): sent {p['sent_mbps']:.0f} Mb/s, departure error p50 {d['p50'] / 1e3:.1f} µs, "
                 f"p99 {d['p99'] / 1e3:.1f} µs, max {d['max'] / 1e3:.0f} µs, late restarts {p['late_resets']}; received {p['received']}, lost {p['lost']}")
    return "\n".join(lines)


def main(argv: list[str]) -> int:
    if argv and argv[0] == "scenario":
        return scenario(argv[1])
    if argv and argv[0] == "attack":
        return attack(argv[1])
    print("usage: python -m lasthop.live.bench_aggctl scenario FILE | attack ADDR", file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
