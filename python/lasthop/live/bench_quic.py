"""`lasthop bench --live quic`: `lasthop quic serve|get` across the emulator next to the
simulator on the same cell (`lasthop reproduce bquic`'s lab: 802.11n 20 MHz SGI, one stream,
Minstrel-HT, station 5 m from the AP, server behind it with 2 ms one way).

* Bursty QUIC (TARGETS B1, B4): 10 MB downloads, quic vs bquic, and quic paced as Chromium's
  PacingSender of the QUIC v39 era (`quic serve --pacer chromium-v39`, the simulator's
  `flows[].pacer`); the download throughput, and the share of the server's packets sent
  < 100 µs after the previous one (kernel timestamps of the datagrams leaving the server's
  namespace, AF_PACKET), live and simulated.
* History (H-claims' mechanism): 1 MB downloads, the first connection against later ones;
  then the RTT guard while a competing TCP bulk flow (iperf3) fills the AP's queue.

Needs root and iperf3 (for the guard). Writes DIR/live-quic.json and prints a table.
"""

from __future__ import annotations

import json
import os
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

from . import refuse

ROOT = Path(__file__).resolve().parents[3]
SERVER = "10.77.0.1"
PORT = 4433
# The bursty downloads' variants: name -> (the profile of server and client, the server's other
# arguments, the simulated flow's other keys).
VARIANTS: dict[str, tuple[str, list[str], dict[str, str]]] = {
    "quic": ("quic", [], {}),
    "quic-v39": ("quic", ["--pacer", "chromium-v39"], {"pacer": "chromium-v39"}),
    "bquic": ("bquic", [], {}),
}


def binary() -> str:
    from .cli import quic_binary
    for p in (quic_binary(), str(ROOT / "target" / "release" / "lasthop-live")):
        if p and os.path.exists(p) and subprocess.run([p, "quic", "--help"], capture_output=True).returncode == 0:
            return p
    raise RuntimeError("lasthop-live with QUIC not built (make build)")


def lab(seconds: float = 8.0) -> dict:
    from ..reproduce.bquic import _lab
    s = _lab()
    s["sim"]["duration"] = f"{seconds}s"
    return s


def cell() -> dict:
    return {k: v for k, v in lab().items() if k != "flows"}


def cell_text() -> str:
    """The emulated cell in a few words, from its spec."""
    c = cell()
    ph, st, w = c["phy"], c["stations"][0], c["wired"]
    limits = ""
    if st.get("ampdu_mpdus_tx") or st.get("ba_window_rx"):
        limits = f", client A-MPDUs of ≤ {st.get('ampdu_mpdus_tx') or '-'} MPDUs, window {st.get('ba_window_rx') or '-'}"
    if st.get("rts", "off") != "off":
        limits += f", client RTS/CTS ({st['rts']})"
    gi = "SGI" if ph["guard_interval"] == 400 else f"{ph['guard_interval']} ns GI"
    return (f"802.11n {ph['band'].removesuffix('GHz')} GHz {ph['channel_width']} MHz {gi} {st['nss']} stream{limits}, "
            f"server {w['delay']} behind the AP")


# ---------------------------------------------------------------------- inside `emu run`

def _sniff(out: str, secs: float) -> int:
    """Kernel timestamps of UDP datagrams leaving from port PORT, written as JSON."""
    from .bench_aggctl import _only_udp_from
    s = socket.socket(socket.AF_PACKET, socket.SOCK_DGRAM, socket.htons(0x0003))
    _only_udp_from(s, PORT)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 16 << 20)
    s.setsockopt(socket.SOL_SOCKET, 35, 1)  # SO_TIMESTAMPNS
    s.settimeout(0.2)
    ts: list[int] = []
    end = time.monotonic() + secs
    print("ready", flush=True)
    while time.monotonic() < end:
        try:
            _, anc, _, addr = s.recvmsg(64, 256)
        except socket.timeout:
            continue
        if addr[2] != 4:  # PACKET_OUTGOING
            continue
        for lvl, typ, data in anc:
            if lvl == socket.SOL_SOCKET and typ == 35:
                sec, nsec = struct.unpack("qq", data[:16])
                ts.append(sec * 1_000_000_000 + nsec)
    Path(out).write_text(json.dumps(ts))
    return 0


def scenario(path: str) -> int:
    """Inside `lasthop emu run`: `kind` "bursty" (one 10 MB download per run and profile, the
    server's departures sniffed) or "history" (1 MB downloads with --history, then the guard
    with a competing iperf3 bulk flow)."""
    sc = json.loads(Path(path).read_text())
    emu = os.environ["LASTHOP_EMU"]
    out = Path(sc["out"])
    b = binary()
    py = sys.executable

    def ex(node: str, *cmd: str) -> list[str]:
        return [py, "-m", "lasthop", "emu", "exec", "--name", emu, node, "--", *cmd]

    site = out / "site"
    site.mkdir(exist_ok=True)
    (site / "big.bin").write_bytes(os.urandom(10_000_000))
    (site / "one.bin").write_bytes(os.urandom(1_000_000))
    res: dict[str, Any] = {"runs": []}

    def serve(*args: str) -> subprocess.Popen:
        p = subprocess.Popen(ex("server", b, "quic", "serve", str(site), "--listen", f"{SERVER}:{PORT}", "--stats", "0",
                                "--record", str(out / "conns.jsonl"), *args), stderr=subprocess.PIPE, text=True)
        assert "quic serve:" in p.stderr.readline()
        return p

    def get(path: str, prof: str) -> dict:
        f = out / "get.json"
        f.unlink(missing_ok=True)
        subprocess.run(ex("sta0", b, "quic", "get", "--insecure", f"https://{SERVER}:{PORT}/{path}", "--profile", prof, "--result", str(f),
                          "-q"), timeout=120)
        return json.loads(f.read_text()) if f.exists() else {"ok": False}

    if sc["kind"] == "bursty":
        for var, (prof, args, _) in VARIANTS.items():
            srv = serve("--profile", prof, *args)
            for i in range(sc["runs"]):
                ts_file = out / f"ts-{var}-{i}.json"
                sn = subprocess.Popen(ex("server", py, "-m", "lasthop.live.bench_quic", "sniff", str(ts_file), "6"),
                                      stdout=subprocess.PIPE, text=True)
                assert sn.stdout.readline().strip() == "ready"
                g = get("big.bin", prof)
                sn.wait(timeout=30)
                ts = json.loads(ts_file.read_text())
                gaps = [b2 - a for a, b2 in zip(ts, ts[1:])]
                res["runs"].append({"profile": var, "get": {k: g.get(k) for k in ("ok", "download_ms", "throughput_bps", "acks")},
                                    "packets": len(ts), "share_below_100us": sum(1 for x in gaps if x < 100_000) / max(1, len(gaps))})
            srv.send_signal(signal.SIGTERM)
            srv.wait(timeout=20)
    elif sc["kind"] == "pages":
        for prof in ("quic", "bquic"):
            srv = serve("--profile", prof, "--pages")
            for page in sc["pages"]:
                for i in range(sc["runs"]):
                    f = out / "page.json"
                    f.unlink(missing_ok=True)
                    subprocess.run(ex("sta0", b, "quic", "get", "--insecure", "--page", page, f"https://{SERVER}:{PORT}/", "--profile", prof,
                                      "--result", str(f), "-q"), timeout=120)
                    g = json.loads(f.read_text()) if f.exists() else {"ok": False}
                    res["runs"].append({"profile": prof, "page": page, "ok": g.get("ok"), "plt_ms": g.get("page_load_ms")})
            srv.send_signal(signal.SIGTERM)
            srv.wait(timeout=20)
    else:
        hist = out / "history.json"
        srv = serve("--history", str(hist), "--guard", "rtt")
        for i in range(sc["runs"]):
            g = get("one.bin", "quic")
            res["runs"].append({"phase": "quiet", "download_ms": g.get("download_ms"), "ok": g.get("ok")})
        # Restart: the history is in the file.
        srv.send_signal(signal.SIGTERM)
        srv.wait(timeout=20)
        srv = serve("--history", str(hist), "--guard", "rtt")
        g = get("one.bin", "quic")
        res["runs"].append({"phase": "after restart", "download_ms": g.get("download_ms"), "ok": g.get("ok")})
        # A competing bulk TCP download to the same station fills the AP's FIFO.
        ip = subprocess.Popen(ex("sta0", "iperf3", "-s", "-1", "-B", "10.77.1.1"), stdout=subprocess.DEVNULL)
        time.sleep(0.5)
        bulk = subprocess.Popen(ex("server", "iperf3", "-c", "10.77.1.1", "-t", "8", "-C", "cubic"), stdout=subprocess.DEVNULL)
        time.sleep(3)
        g = get("one.bin", "quic")
        res["runs"].append({"phase": "with bulk", "download_ms": g.get("download_ms"), "ok": g.get("ok")})
        bulk.wait(timeout=30)
        ip.wait(timeout=30)
        time.sleep(1)
        g = get("one.bin", "quic")
        res["runs"].append({"phase": "after bulk", "download_ms": g.get("download_ms"), "ok": g.get("ok")})
        srv.send_signal(signal.SIGTERM)
        srv.wait(timeout=20)
    conns = [json.loads(x) for x in (out / "conns.jsonl").read_text().splitlines()] if (out / "conns.jsonl").exists() else []
    res["conns"] = [{k: c[k] for k in ("window_from", "initial_window_packets", "handshake_rtt_us", "cwnd_at_close", "min_rtt_us",
                                       "seconds", "body_bytes", "lost_packets")} for c in conns]
    (out / "scenario-result.json").write_text(json.dumps(res))
    return 0


# ---------------------------------------------------------------------- outside

def emulate(kind: str, runs: int, tmp: Path, seed: int = 1, pages: list[str] | None = None) -> dict:
    from .bench_vwire import _toml
    tmp.mkdir(parents=True, exist_ok=True)
    cf = tmp / "cell.toml"
    cf.write_text(_toml(cell()))
    (tmp / "scenario.json").write_text(json.dumps({"kind": kind, "runs": runs, "out": str(tmp), "pages": pages or []}))
    r = subprocess.run([sys.executable, "-m", "lasthop", "emu", "run", str(cf), "--name", "lhq", "--seed", str(seed), "-o", str(tmp),
                        "--stats", "0", "-q", "--", sys.executable, "-m", "lasthop.live.bench_quic", "scenario",
                        str(tmp / "scenario.json")], capture_output=True, text=True, timeout=runs * 60 + 240, cwd=ROOT)
    if r.returncode != 0:
        raise RuntimeError(f"emu run: exit {r.returncode}: {r.stderr[-1500:]}")
    return json.loads((tmp / "scenario-result.json").read_text())


def simulate(runs: int) -> dict:
    from ..native import native as _native
    from ..reproduce.bquic import _share_below, _throughput
    from ..spec import normalize
    out: dict[str, Any] = {}
    for var, (prof, _, keys) in VARIANTS.items():
        tp, share = [], []
        for seed in range(1, runs + 1):
            s = lab()
            s["flows"][0].update(profile=prof, **keys)
            n = normalize(s)
            d = {"data": json.loads(_native().run(n.to_json(), seed, None))}
            tp.append(_throughput(d))
            share.append(_share_below(d["data"]["flows"][0]["quic"]["inter_packet_ns"]["cdf_ns"], 100_000))
        out[var] = {"throughput_mbps": statistics.fmean(tp), "share_below_100us": statistics.fmean(share)}
    return out


def loopback(size_mb: int = 200, runs: int = 3) -> dict:
    """Our server and client over loopback, each profile: throughput, and CPU seconds per GB
    of each process (user + system, from /proc and the child's rusage)."""
    import resource
    b = binary()
    out: dict[str, Any] = {}
    with tempfile.TemporaryDirectory() as t:
        f = Path(t) / "big.bin"
        with open(f, "wb") as fh:
            for _ in range(size_mb):
                fh.write(os.urandom(1 << 20))
        for prof in ("quic", "bquic"):
            with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
                s.bind(("127.0.0.1", 0))
                port = s.getsockname()[1]
            srv = subprocess.Popen([b, "quic", "serve", t, "--listen", f"127.0.0.1:{port}", "--profile", prof, "--stats", "0"],
                                   stderr=subprocess.PIPE, text=True)
            srv.stderr.readline()
            tick = os.sysconf("SC_CLK_TCK")

            def cpu(pid: int) -> float:
                x = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
                return (int(x[11]) + int(x[12])) / tick
            tps, scpu, ccpu = [], 0.0, 0.0
            for _ in range(runs):
                c0 = cpu(srv.pid)
                r0 = resource.getrusage(resource.RUSAGE_CHILDREN)
                subprocess.run([b, "quic", "get", "--insecure", f"https://127.0.0.1:{port}/big.bin", "--profile", prof, "--result", f"{t}/r.json", "-q"],
                               check=True, timeout=300)
                r1 = resource.getrusage(resource.RUSAGE_CHILDREN)
                scpu += cpu(srv.pid) - c0
                ccpu += (r1.ru_utime - r0.ru_utime) + (r1.ru_stime - r0.ru_stime)
                tps.append(json.loads(Path(f"{t}/r.json").read_text())["throughput_bps"] / 1e6)
            srv.send_signal(signal.SIGTERM)
            srv.wait(timeout=20)
            gb = size_mb * runs * (1 << 20) / 1e9
            out[prof] = {"throughput_mbps": statistics.fmean(tps), "server_cpu_s_per_gb": scpu / gb, "client_cpu_s_per_gb": ccpu / gb}
    return out


PAGES = ["google", "wikipedia", "amazon"]


def page_spec(page: str, profile: str) -> dict:
    """A page load in the simulator, on the cell the emulator loads pages on (`cell()`: the lab,
    not the suite's RP5 chain): the lab's QUIC flow loading `page` with `profile`."""
    s = lab()
    q = s["flows"][0]
    q.pop("bytes", None)
    q["page"] = page
    q["profile"] = profile
    return s


def simulate_pages(runs: int) -> dict:
    from ..native import native as _native
    from ..spec import normalize
    out: dict[str, Any] = {}
    for page in PAGES:
        for prof in ("quic", "bquic"):
            v = []
            for seed in range(1, runs + 1):
                s = page_spec(page, prof)
                d = json.loads(_native().run(normalize(s).to_json(), seed, None))
                q = d["flows"][0]["quic"]
                if q.get("completion_ns"):
                    v.append(q["completion_ns"] / 1e6)
            out[f"{page}/{prof}"] = statistics.fmean(v) if v else None
    return out


def run_live_quic(out_dir: str, runs: int = 10) -> int:
    # iperf3: the RTT guard's rows need a competing bulk flow.
    if refuse("bench --live quic", ("iperf3", "ip")):
        return 2
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    rep: dict[str, Any] = {"runs": runs}
    with tempfile.TemporaryDirectory(prefix="lasthop-live-quic-") as t:
        print(f"lasthop bench --live quic: {runs} x 10 MB per profile across the emulator ...", file=sys.stderr, flush=True)
        b = emulate("bursty", runs, Path(t) / "bursty")
        live = {}
        for var in VARIANTS:
            rs = [r for r in b["runs"] if r["profile"] == var and r["get"]["ok"]]
            live[var] = {"completed": len(rs), "throughput_mbps": statistics.fmean(r["get"]["throughput_bps"] for r in rs) / 1e6 if rs else None,
                          "throughput_sd": statistics.stdev(r["get"]["throughput_bps"] / 1e6 for r in rs) if len(rs) > 1 else None,
                          "share_below_100us": statistics.fmean(r["share_below_100us"] for r in rs) if rs else None,
                          "ack_ratio": statistics.fmean(r["get"]["acks"]["acks_sent"] / r["get"]["acks"]["packets"] for r in rs) if rs else None}
        rep["bursty"] = {"live": live, "sim": simulate(runs)}
        print("lasthop bench --live quic: Table II page loads ...", file=sys.stderr, flush=True)
        pg = emulate("pages", max(2, runs // 2), Path(t) / "pages", pages=PAGES)
        sim_pg = simulate_pages(max(2, runs // 2))
        rep["pages"] = {f"{page}/{prof}": {"live_plt_ms": statistics.fmean(x["plt_ms"] for x in pg["runs"]
                                                                              if x["page"] == page and x["profile"] == prof and x["ok"]),
                                            "sim_plt_ms": sim_pg[f"{page}/{prof}"]}
                        for page in PAGES for prof in ("quic", "bquic")}
        print("lasthop bench --live quic: history and the RTT guard ...", file=sys.stderr, flush=True)
        rep["history"] = emulate("history", 4, Path(t) / "history")
    print("lasthop bench --live quic: loopback speed ...", file=sys.stderr, flush=True)
    rep["loopback"] = loopback()
    from . import write_report
    return write_report(out, "live-quic.json", rep, table(rep))


def table(r: dict) -> str:
    f = lambda x, p=1: "-" if x is None else f"{x:.{p}f}"  # noqa: E731
    lines = [f"Bursty QUIC, 10 MB downloads, {r['runs']} runs per profile ({cell_text()})"]
    for var in VARIANTS:
        if var not in r["bursty"]["live"]:
            continue
        lv, sm = r["bursty"]["live"][var], r["bursty"]["sim"][var]
        lines.append(f"  {var:<8} live {f(lv['throughput_mbps'])} ± {f(lv['throughput_sd'])} Mb/s, < 100 µs apart "
                     f"{f(lv['share_below_100us'] and lv['share_below_100us'] * 100, 0)}%, ACKs/packet {f(lv['ack_ratio'], 2)}, "
                     f"{lv['completed']} completed | sim {sm['throughput_mbps']:.1f} Mb/s, < 100 µs apart {sm['share_below_100us'] * 100:.0f}%")
    if r.get("pages"):
        lines.append("Table II page loads, mean page-load time ms (live | sim), quic -> bquic:")
        for page in PAGES:
            q, b = r["pages"][f"{page}/quic"], r["pages"][f"{page}/bquic"]
            lines.append(f"  {page:<10} live {q['live_plt_ms']:.0f} -> {b['live_plt_ms']:.0f} ({(b['live_plt_ms'] / q['live_plt_ms'] - 1) * 100:+.0f}%)"
                         f" | sim {f(q['sim_plt_ms'], 0)} -> {f(b['sim_plt_ms'], 0)}"
                         + (f" ({(b['sim_plt_ms'] / q['sim_plt_ms'] - 1) * 100:+.0f}%)" if q["sim_plt_ms"] and b["sim_plt_ms"] else ""))
    lines.append("History (1 MB downloads, --history --guard rtt): phase, window from, initial window, handshake RTT, download")
    h = r["history"]
    for run, c in zip(h["runs"], h["conns"]):
        lines.append(f"  {run.get('phase', ''):<14} {c['window_from']:<9} {c['initial_window_packets']:>4} packets, "
                     f"RTT {f(c['handshake_rtt_us'] and c['handshake_rtt_us'] / 1e3, 1)} ms, {f(run['download_ms'])} ms")
    lp = r.get("loopback")
    if lp:
        lines.append("Loopback, 200 MB downloads (our server and client on this machine):")
        for prof in ("quic", "bquic"):
            x = lp[prof]
            lines.append(f"  {prof:<6} {x['throughput_mbps']:.0f} Mb/s; CPU s per GB: server {x['server_cpu_s_per_gb']:.2f}, "
                         f"client {x['client_cpu_s_per_gb']:.2f}")
    return "\n".join(lines)


def main(argv: list[str]) -> int:
    if argv and argv[0] == "scenario":
        return scenario(argv[1])
    if argv and argv[0] == "sniff":
        return _sniff(argv[1], float(argv[2]))
    print("usage: python -m lasthop.live.bench_quic scenario FILE | sniff OUT SECONDS", file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
