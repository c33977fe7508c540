"""Applications for live experiments across the emulator (`lasthop bench --live vwire`).

    python -m lasthop.live.apps server --bind A --port P --kind paced|greedy [--rate BPS]
                                       [--cc CC] [--seconds S]
    python -m lasthop.live.apps client --to A --port P --seconds S [--warmup W]
    python -m lasthop.live.apps scenario FILE.json     (inside `lasthop emu run`)

The station opens each connection (a download, as a browser or a video player would), so a
split proxy at the AP intercepts it. A *paced* server writes `rate × 10 ms` every 10 ms as
messages `[8-byte send time (CLOCK_MONOTONIC ns)][4-byte length][payload]` — a video at a
constant bit rate, no player buffer; the client takes each message's one-way delay (the
namespaces share one kernel, so one clock). A *greedy* server writes as fast as TCP lets it.
The server samples its socket's TCP RTT (TCP_INFO) every 100 ms. Each side prints one JSON
line: per-second goodput bins, message delays (paced), RTT samples (server).
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import socket
import struct
import subprocess
import sys
import threading
import time

HDR = struct.Struct("!qI")
TICK = 0.010


def _tcp_rtt_us(s: socket.socket) -> int | None:
    try:
        b = s.getsockopt(socket.IPPROTO_TCP, socket.TCP_INFO, 104)
    except OSError:
        return None
    # struct tcp_info: tcpi_rtt is the u32 at offset 68 (after 8 u8/u32 fields ... see linux/tcp.h)
    return struct.unpack_from("I", b, 68)[0]


def serve(a: argparse.Namespace) -> int:
    l = socket.socket()
    l.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    l.bind((a.bind, a.port))
    l.listen(4)
    print("ready", flush=True)
    c, _ = l.accept()
    # No Nagle: a paced message goes out when written (the simulator's TCP has no Nagle
    # either; with it, 1 Mb/s of 1250-byte messages waits for ACKs and delayed ACKs).
    c.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    if a.cc:
        c.setsockopt(socket.IPPROTO_TCP, socket.TCP_CONGESTION, a.cc.encode())
    rtts: list[int] = []
    stop = threading.Event()

    def sample() -> None:
        while not stop.wait(0.1):
            r = _tcp_rtt_us(c)
            if r:
                rtts.append(r)
    threading.Thread(target=sample, daemon=True).start()
    t0 = time.monotonic()
    sent = 0
    try:
        if a.kind == "greedy":
            buf = bytes(1 << 16)
            while time.monotonic() - t0 < a.seconds:
                c.sendall(buf)
                sent += len(buf)
        else:
            per_tick = a.rate / 8 * TICK
            carry = 0.0
            k = 0
            while True:
                due = t0 + k * TICK
                now = time.monotonic()
                if now - t0 >= a.seconds:
                    break
                if due > now:
                    time.sleep(due - now)
                want = per_tick + carry
                n = int(want)
                carry = want - n
                n = max(n, HDR.size)
                msg = HDR.pack(time.monotonic_ns(), n - HDR.size) + bytes(n - HDR.size)
                c.sendall(msg)
                sent += n
                k += 1
    except OSError:
        pass
    stop.set()
    try:
        c.shutdown(socket.SHUT_WR)
        c.settimeout(5)
        while c.recv(1 << 16):
            pass
    except OSError:
        pass
    c.close()
    print(json.dumps({"sent": sent, "rtt_us": rtts}), flush=True)
    return 0


def client(a: argparse.Namespace) -> int:
    s = socket.create_connection((a.to, a.port), timeout=30)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4 << 20)
    t0 = time.monotonic()
    bins: list[int] = []
    delays: list[float] = []
    buf = bytearray()
    n = 0
    while True:
        try:
            b = s.recv(1 << 16)
        except OSError:
            break
        if not b:
            break
        now = time.monotonic()
        i = int(now - t0)
        while len(bins) <= i:
            bins.append(0)
        bins[i] += len(b)
        n += len(b)
        if a.parse:
            buf += b
            now_ns = time.monotonic_ns()
            while len(buf) >= HDR.size:
                ts, ln = HDR.unpack_from(buf)
                if len(buf) < HDR.size + ln:
                    break
                if now - t0 >= a.warmup:
                    delays.append((now_ns - ts) / 1e6)
                del buf[:HDR.size + ln]
    s.close()
    goodput = [x * 8 for x in bins]
    print(json.dumps({"bytes": n, "bins_bps": goodput, "delays_ms": delays[:200000]}), flush=True)
    return 0


# ------------------------------------------------------------------------ scenario driver

def scenario(path: str) -> int:
    """Run one scenario inside `lasthop emu run` (LASTHOP_EMU set). The JSON file has
    `flows` [{station, port, kind, rate, cc}], `seconds`, `warmup`, `proxy` (null or the
    vwire arguments) and `out` (a directory). Writes out/result.json."""
    sc = json.loads(open(path).read())
    emu = os.environ["LASTHOP_EMU"]
    py = sys.executable

    def ex(node: str, *cmd: str) -> list[str]:
        return [py, "-m", "lasthop", "emu", "exec", "--name", emu, node, "--", *cmd]

    out = sc["out"]
    proxy = None
    if sc.get("proxy") is not None:
        proxy = subprocess.Popen(ex("ap", py, "-m", "lasthop", "vwire", "--record", f"{out}/vwire.jsonl",
                                    "--stats", "0", *sc["proxy"]), stderr=open(f"{out}/vwire.log", "w"))
        time.sleep(1.5)
    secs, warm = sc["seconds"], sc["warmup"]
    servers = []
    for f in sc["flows"]:
        cmd = [py, "-m", "lasthop.live.apps", "server", "--bind", "10.77.0.1", "--port", str(f["port"]),
               "--kind", f["kind"], "--rate", str(f.get("rate", 0)), "--seconds", str(secs)]
        if f.get("cc"):
            cmd += ["--cc", f["cc"]]
        p = subprocess.Popen(ex("server", *cmd), stdout=subprocess.PIPE, text=True)
        assert p.stdout.readline().strip() == "ready"
        servers.append(p)
    clients = []
    for f in sc["flows"]:
        cmd = [py, "-m", "lasthop.live.apps", "client", "--to", "10.77.0.1", "--port", str(f["port"]),
               "--warmup", str(warm)] + (["--parse"] if f["kind"] == "paced" else [])
        clients.append(subprocess.Popen(ex(f"sta{f['station']}", *cmd), stdout=subprocess.PIPE, text=True))
    res = []
    for f, s, c in zip(sc["flows"], servers, clients):
        cr = json.loads(c.communicate(timeout=secs + 60)[0].strip().splitlines()[-1])
        sr = json.loads(s.communicate(timeout=30)[0].strip().splitlines()[-1])
        res.append({"flow": f, "client": cr, "server": sr})
    if proxy is not None:
        proxy.send_signal(signal.SIGTERM)
        proxy.wait(timeout=30)
    json.dump({"flows": res, "proxy_exit": None if proxy is None else proxy.returncode},
              open(f"{out}/result.json", "w"))
    return 0


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m lasthop.live.apps")
    sub = p.add_subparsers(dest="role", required=True)
    s = sub.add_parser("server")
    s.add_argument("--bind", default="0.0.0.0")
    s.add_argument("--port", type=int, required=True)
    s.add_argument("--kind", choices=("paced", "greedy"), required=True)
    s.add_argument("--rate", type=float, default=0.0)
    s.add_argument("--cc", default=None)
    s.add_argument("--seconds", type=float, default=20.0)
    c = sub.add_parser("client")
    c.add_argument("--to", required=True)
    c.add_argument("--port", type=int, required=True)
    c.add_argument("--seconds", type=float, default=20.0)
    c.add_argument("--warmup", type=float, default=0.0)
    c.add_argument("--parse", action="store_true")
    sc = sub.add_parser("scenario")
    sc.add_argument("file")
    a = p.parse_args(argv)
    if a.role == "server":
        return serve(a)
    if a.role == "client":
        return client(a)
    return scenario(a.file)


if __name__ == "__main__":
    sys.exit(main())
