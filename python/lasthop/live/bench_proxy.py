"""`lasthop bench --live proxy`: the split proxy's data path between namespaces (no WiFi).

Three namespaces joined by veth pairs — station, AP, server — as tests/python/test_vwire.py
builds them; `lasthop-live vwire --no-vwire` in the AP's (split only: the data path without
the allocator, which needs station rates).

1. Speed: an iperf3 download (the station opens it, `-R`), 10 s, through kernel forwarding
   alone and through the proxy: throughput, and the CPU seconds the proxy used per Gb carried
   (from /proc/<pid>/stat).
2. Nothing lost: `python -m lasthop.live.proxy_load` with two 1 GB downloads (one with an upload
   and a half-close) beside 2 000 short connections (plain, half-closed, reset by the server,
   reset by the station): every byte checked; descriptors and resident memory of the proxy
   before, at the peak and after.

Needs root, iperf3, nft. Writes DIR/live-proxy.json and prints the figures.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[3]


def _binary() -> Path:
    from .cli import live_binary
    return live_binary()


class ProxyTopo:
    """Station 10.9.1.2 — (wlan0 10.9.1.1) AP (eth0 10.9.2.1) — server 10.9.2.2: three
    namespaces named `<prefix>{c,p,s}<pid>` joined by veth pairs (also the proxy tests')."""

    def __init__(self, prefix: str = "lhbp") -> None:
        self.c, self.p, self.s = (f"{prefix}{x}{os.getpid() % 10000}" for x in "cps")
        for n in (self.c, self.p, self.s):
            subprocess.run(["ip", "netns", "del", n], capture_output=True)
            subprocess.run(["ip", "netns", "add", n], check=True)
        sh = f"""
        ip link add c0 netns {self.c} type veth peer name wlan0 netns {self.p}
        ip link add s0 netns {self.s} type veth peer name eth0 netns {self.p}
        ip -n {self.c} addr add 10.9.1.2/24 dev c0; ip -n {self.c} link set c0 up; ip -n {self.c} link set lo up
        ip -n {self.p} addr add 10.9.1.1/24 dev wlan0; ip -n {self.p} link set wlan0 up
        ip -n {self.p} addr add 10.9.2.1/24 dev eth0; ip -n {self.p} link set eth0 up; ip -n {self.p} link set lo up
        ip -n {self.s} addr add 10.9.2.2/24 dev s0; ip -n {self.s} link set s0 up; ip -n {self.s} link set lo up
        ip -n {self.c} route add default via 10.9.1.1
        ip -n {self.s} route add default via 10.9.2.1
        ip netns exec {self.p} sysctl -qw net.ipv4.ip_forward=1
        """
        subprocess.run(["bash", "-ec", sh], check=True, capture_output=True)

    def close(self) -> None:
        for n in (self.c, self.p, self.s):
            subprocess.run(["ip", "netns", "del", n], capture_output=True)

    def ex(self, ns: str, *cmd: str) -> list[str]:
        return ["ip", "netns", "exec", ns, *cmd]


def _cpu_s(pid: int) -> float:
    f = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(f[11]) + int(f[12])) / os.sysconf("SC_CLK_TCK")


def _proc(pid: int) -> dict[str, int]:
    rss = next(int(x.split()[1]) for x in Path(f"/proc/{pid}/status").read_text().splitlines() if x.startswith("VmRSS:"))
    return {"fds": len(os.listdir(f"/proc/{pid}/fd")), "rss_kb": rss}


def _iperf(t: ProxyTopo, secs: int) -> float:
    srv = subprocess.Popen(t.ex(t.s, "iperf3", "-s", "-1", "-B", "10.9.2.2"), stdout=subprocess.DEVNULL)
    time.sleep(0.5)
    r = subprocess.run(t.ex(t.c, "iperf3", "-c", "10.9.2.2", "-R", "-t", str(secs), "-J"), capture_output=True, text=True)
    srv.wait(timeout=20)
    return json.loads(r.stdout)["end"]["sum_received"]["bits_per_second"]


def run_live_proxy(out_dir: str, secs: int = 10, long_mb: float = 1000, short: int = 2000) -> int:
    missing = [x for x in ("iperf3", "nft", "ip") if shutil.which(x) is None]
    if os.geteuid() != 0 or missing:
        print(f"lasthop: error: bench --live proxy needs {'root' if os.geteuid() else ', '.join(missing)}", file=sys.stderr)
        return 2
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    t = ProxyTopo()
    rep: dict[str, Any] = {}
    try:
        print("  kernel forwarding alone ...", file=sys.stderr, flush=True)
        rep["forwarding_gbps"] = _iperf(t, secs) / 1e9
        p = subprocess.Popen(t.ex(t.p, str(_binary()), "vwire", "--no-vwire", "--stats", "0", "-q"))
        time.sleep(1)
        rep["proxy_idle"] = _proc(p.pid)
        print("  through the proxy ...", file=sys.stderr, flush=True)
        c0 = _cpu_s(p.pid)
        gbps = _iperf(t, secs) / 1e9
        cpu = _cpu_s(p.pid) - c0
        rep["proxy_gbps"] = gbps
        rep["proxy_cpu_s_per_gb"] = cpu / (gbps * secs / 8)
        rep["proxy_cpu_share"] = cpu / secs
        print(f"  checked load: 2 x {long_mb:g} MB + {short} short connections ...", file=sys.stderr, flush=True)
        srv = subprocess.Popen(t.ex(t.s, sys.executable, "-m", "lasthop.live.proxy_load", "server", "--bind", "10.9.2.2"),
                               stdout=subprocess.PIPE, text=True, cwd=ROOT)
        assert srv.stdout.readline().strip() == "ready"
        before = _proc(p.pid)
        peak = dict(before)
        cl = subprocess.Popen(t.ex(t.c, sys.executable, "-m", "lasthop.live.proxy_load", "client", "--to", "10.9.2.2",
                                   "--long", "2", "--long-mb", str(long_mb), "--short", str(short)),
                              stdout=subprocess.PIPE, text=True, cwd=ROOT)
        while cl.poll() is None:
            x = _proc(p.pid)
            peak = {k: max(peak[k], x[k]) for k in peak}
            time.sleep(0.2)
        res = json.loads(cl.stdout.read().strip().splitlines()[-1])
        srv.send_signal(signal.SIGTERM)
        sres = json.loads(srv.communicate(timeout=20)[0].strip().splitlines()[-1])
        time.sleep(1)
        rep["load"] = {"client": res, "server": sres, "proxy_before": before, "proxy_peak": peak, "proxy_after": _proc(p.pid)}
        p.send_signal(signal.SIGTERM)
        p.wait(timeout=30)
    finally:
        t.close()
    path = out / "live-proxy.json"
    path.write_text(json.dumps(rep, indent=2, sort_keys=True) + "\n")
    ld = rep["load"]
    c = ld["client"]
    print(f"iperf3 download: kernel forwarding {rep['forwarding_gbps']:.2f} Gb/s; through the proxy {rep['proxy_gbps']:.2f} Gb/s, "
          f"{rep['proxy_cpu_s_per_gb']:.2f} CPU s per GB ({rep['proxy_cpu_share'] * 100:.0f}% of a core)")
    print(f"checked load: {c['ok']}/{c['expected_ok']} connections ok, {c['bytes_checked'] / 1e9:.2f} GB checked, "
          f"{c['mismatches']} mismatches, {c['errors']} errors, resets {c['server_resets_seen']} (server) / "
          f"{c['client_resets_sent']} (station), {c['seconds']:.1f} s; proxy fds {ld['proxy_before']['fds']} -> peak "
          f"{ld['proxy_peak']['fds']} -> {ld['proxy_after']['fds']}, RSS {ld['proxy_before']['rss_kb'] / 1024:.1f} -> peak "
          f"{ld['proxy_peak']['rss_kb'] / 1024:.1f} -> {ld['proxy_after']['rss_kb'] / 1024:.1f} MiB")
    print(f"figures: {path}")
    return 0 if c["ok"] == c["expected_ok"] and c["errors"] == 0 else 1
