"""`lasthop vwire` (docs/live.md): the split proxy on the AP, transparent through TPROXY.

Most tests build their own three namespaces joined by veth pairs — a station (`c`), the AP
(`p`, whose `wlan0` faces the station) and a server (`s`) — with addresses only inside them,
and run the standalone binary in the AP's namespace. The last one runs the proxy in the
emulator's AP host, where station rates come from its nl80211 telemetry. Needs root, `ip`,
`nft` and TPROXY; skips with the reason otherwise.
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

import pytest

from test_emu import HT_CELL, ROOT, _namespaces, _spec
from test_emu import REASON as EMU_REASON
from lasthop.live.bench_proxy import ProxyTopo

PY = sys.executable
_cands = [p for p in (ROOT / ".venv" / "bin" / "lasthop-live", ROOT / "target" / "release" / "lasthop-live",
                      ROOT / "target" / "debug" / "lasthop-live") if p.exists()]
BINARY = max(_cands, key=lambda p: p.stat().st_mtime) if _cands else None


def _reason() -> str | None:
    if os.geteuid() != 0:
        return "not root"
    for tool in ("ip", "nft"):
        if shutil.which(tool) is None:
            return f"no `{tool}`"
    if BINARY is None:
        return "lasthop-live not built"
    return None


REASON = _reason()
needs = pytest.mark.skipif(REASON is not None, reason=REASON or "")


class Topo(ProxyTopo):
    """The bench's three namespaces, with the proxy's helpers."""

    def __init__(self, tag: str) -> None:
        super().__init__(f"lhv{tag}")

    def proxy(self, *args: str, **kw) -> subprocess.Popen:
        return subprocess.Popen(["ip", "netns", "exec", self.p, str(BINARY), "vwire", *args],
                                stderr=subprocess.PIPE, text=True, **kw)

    def run_proxy(self, *args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(["ip", "netns", "exec", self.p, str(BINARY), "vwire", *args],
                              capture_output=True, text=True, timeout=30)

    def in_ns(self, ns: str, *cmd: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(["ip", "netns", "exec", ns, *cmd], capture_output=True, text=True)

    def installed(self) -> dict[str, bool]:
        """Which of the proxy's pieces are in the AP namespace."""
        table = self.in_ns(self.p, "nft", "list", "table", "ip", "lasthop_vwire").returncode == 0
        rule = "0x4c48" in self.in_ns(self.p, "ip", "rule").stdout
        route = self.in_ns(self.p, "ip", "route", "show", "table", "19528").stdout.strip() != ""
        return {"table": table, "rule": rule, "route": route}


@pytest.fixture
def topo(request):
    t = Topo(request.node.name[-6:].replace("_", "")[:3])
    yield t
    t.close()


def _wait(pred, secs: float = 5.0) -> bool:
    t = time.monotonic()
    while time.monotonic() - t < secs:
        if pred():
            return True
        time.sleep(0.05)
    return pred()


def _fds(pid: int) -> int:
    # `ip netns exec` execs the binary: the pid is the proxy's.
    return len(os.listdir(f"/proc/{pid}/fd"))


def _rss_kb(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    return 0


@needs
def test_nothing_lost_through_the_proxy_with_churn_resets_and_half_closes(topo):
    """Two 60 MB downloads (one with an upload and a half-close) beside 400 short connections
    (a quarter each: plain, half-closed, reset by the server mid-way, reset by the station
    mid-way): every byte checked in order, resets and half-closes seen on the far side, the
    server sees the station's own address, and descriptors and memory come back."""
    p = topo.proxy("--no-vwire", "--stats", "0")
    try:
        assert _wait(lambda: all(topo.installed().values())), topo.installed()
        time.sleep(0.2)
        base_fds = _fds(p.pid)
        srv = subprocess.Popen(["ip", "netns", "exec", topo.s, PY, "-m", "lasthop.live.proxy_load", "server",
                                "--bind", "10.9.2.2"], stdout=subprocess.PIPE, text=True, cwd=ROOT)
        assert srv.stdout.readline().strip() == "ready"
        cl = subprocess.run(["ip", "netns", "exec", topo.c, PY, "-m", "lasthop.live.proxy_load", "client",
                             "--to", "10.9.2.2", "--long", "2", "--long-mb", "60", "--short", "400"],
                            capture_output=True, text=True, timeout=120, cwd=ROOT)
        res = json.loads(cl.stdout.strip().splitlines()[-1])
        assert cl.returncode == 0, res
        assert res["ok"] == res["expected_ok"] == 402 and res["mismatches"] == 0, res
        assert res["server_resets_seen"] == 100 and res["client_resets_sent"] == 100, res
        srv.send_signal(signal.SIGTERM)
        s = json.loads(srv.communicate(timeout=10)[0].strip().splitlines()[-1])
        assert s["connections"] == 402 and s["uploads_ok"] == 402 and s["client_resets_seen"] == 100, s
        assert s["errors"] == 0, s
        assert _wait(lambda: _fds(p.pid) == base_fds), (_fds(p.pid), base_fds)
        assert _rss_kb(p.pid) < 64_000, _rss_kb(p.pid)
        # Transparent: the server's view of a connection is the station's address.
        srv2 = subprocess.Popen(["ip", "netns", "exec", topo.s, PY, "-c",
                                 "import socket; s=socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1); "
                                 "s.bind(('10.9.2.2', 7401)); s.listen(1); print('ready', flush=True); c, a = s.accept(); print(a[0], a[1])"],
                                stdout=subprocess.PIPE, text=True)
        assert srv2.stdout.readline().strip() == "ready"
        port = topo.in_ns(topo.c, PY, "-c", "import socket; s=socket.create_connection(('10.9.2.2', 7401)); print(s.getsockname()[1])").stdout.strip()
        assert srv2.communicate(timeout=10)[0].split() == ["10.9.1.2", port]
    finally:
        p.send_signal(signal.SIGTERM)
        err = p.communicate(timeout=20)[1]
    assert p.returncode == 0, err
    assert "removed the nftables table ip lasthop_vwire" in err, err
    assert topo.installed() == {"table": False, "rule": False, "route": False}


@needs
def test_a_killed_proxy_is_cleaned_up_at_its_next_start(topo):
    p = topo.proxy("--no-vwire", "--stats", "0", "-q")
    assert _wait(lambda: all(topo.installed().values()))
    p.kill()
    p.wait()
    assert all(topo.installed().values()), "SIGKILL leaves the rules"
    r = topo.run_proxy("--no-vwire", "--stats", "0", "--duration", "0.3s")
    assert r.returncode == 0, r.stderr
    assert "removed the nftables table ip lasthop_vwire left by a vwire that did not exit cleanly" in r.stderr, r.stderr
    assert topo.installed() == {"table": False, "rule": False, "route": False}


_UPLOAD = """
import re, socket, subprocess, time
s = socket.create_connection(("10.9.2.2", 7403))
s.sendall(b"x" * (8 << 20))
time.sleep(0.3)
out = subprocess.run(["ss", "-tin", "dst", "10.9.2.2:7403"], capture_output=True, text=True).stdout
print(re.search(r"snd_wnd:(\\d+)", out).group(1), flush=True)
s.close()
"""


@needs
def test_the_window_clamp_bounds_what_a_stations_upload_may_send(topo):
    """`--window-clamp`: the window a station's upload sees through the proxy (its `snd_wnd`,
    as `ss` reads it from the station's socket) never exceeds TCP_WINDOW_CLAMP; without it the
    proxy's window grows past it. The upload arrives whole either way."""
    def upload(*args: str) -> tuple[int, int]:
        p = topo.proxy("--no-vwire", "--stats", "0", "-q", *args)
        try:
            assert _wait(lambda: all(topo.installed().values())), topo.installed()
            srv = subprocess.Popen(["ip", "netns", "exec", topo.s, PY, "-c",
                                    "import socket; s=socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1); "
                                    "s.bind(('10.9.2.2', 7403)); s.listen(1); print('ready', flush=True); c, a = s.accept(); n = 0\n"
                                    "while (b := c.recv(1 << 16)): n += len(b)\nprint(n)"],
                                   stdout=subprocess.PIPE, text=True)
            assert srv.stdout.readline().strip() == "ready"
            cl = topo.in_ns(topo.c, PY, "-c", _UPLOAD)
            assert cl.returncode == 0, cl.stderr
            return int(cl.stdout.strip()), int(srv.communicate(timeout=20)[0].strip())
        finally:
            p.send_signal(signal.SIGTERM)
            p.communicate(timeout=20)

    wnd, got = upload("--window-clamp", "16384")
    assert got == 8 << 20 and 0 < wnd <= 16384, (wnd, got)
    wnd, got = upload()
    assert got == 8 << 20 and wnd > 16384, (wnd, got)


@needs
def test_bad_input_is_one_line_exit_2_and_installs_nothing(topo, tmp_path):
    bad = tmp_path / "u.toml"
    bad.write_text('[[flow]]\nclass = "movie"\n')
    cases = [
        (["--wifi-iface", "wlan9"], "no such interface"),
        (["--utilities", str(bad)], 'flow[0].class = "movie"'),
        (["--utilities", str(tmp_path / "none.toml")], "--utilities"),
        (["--wired-cc", "warp"], "congestion control \"warp\" is not available"),
        (["--efficiency", "2"], "--efficiency"),
        ([], "no station rates for wlan0"),
        (["--frobnicate"], "unknown option --frobnicate"),
        (["--window-clamp", "100"], "--window-clamp"),
    ]
    for args, want in cases:
        r = topo.run_proxy(*args)
        assert r.returncode == 2 and r.stderr.count("\n") == 1 and want in r.stderr, (args, r.stderr)
        assert topo.installed() == {"table": False, "rule": False, "route": False}, args
    # Port in use.
    blocker = subprocess.Popen(["ip", "netns", "exec", topo.p, PY, "-c",
                                "import socket,time; s=socket.socket(); s.bind(('0.0.0.0', 19528)); s.listen(1); print('ready', flush=True); time.sleep(30)"],
                               stdout=subprocess.PIPE, text=True)
    try:
        assert blocker.stdout.readline().strip() == "ready"
        r = topo.run_proxy("--no-vwire")
        assert r.returncode == 2 and "--port = 19528" in r.stderr and r.stderr.count("\n") == 1, r.stderr
    finally:
        blocker.kill()
        blocker.wait()
    # Rules already there that no proxy owns: refused, and left alone.
    topo.in_ns(topo.p, "nft", "add", "table", "ip", "lasthop_vwire")
    r = topo.run_proxy("--no-vwire")
    assert r.returncode == 2 and "already there" in r.stderr and r.stderr.count("\n") == 1, r.stderr
    assert topo.installed()["table"] and not topo.installed()["rule"]


# -------------------------------------------------------------------------- in the emulator

VW_CELL = """
    name = "vw"
    [sim]
    duration = "10s"
    [phy]
    standard = "ht"
    band = "2.4GHz"
    channel_width = 20
    guard_interval = 400
    [channel]
    exponent = 4.5
    [wired]
    rate = "1Gbps"
    delay = "10ms"
    [[stations]]
    nss = 2
    rate_control = "minstrel"
    error_model = "snr"
    distance_m = 0.9
    [[stations]]
    nss = 2
    rate_control = "minstrel"
    error_model = "snr"
    distance_m = 22.9
    [emu]
    ap_host = true
"""

UTIL = """
[[flow]]
server_port = 7501
class = "bulk"
utility = "log:0.1"
[[flow]]
server_port = 7502
class = "video_4k"
utility = "step:20Mbps:10"
"""

# Inside `lasthop emu run`: the proxy in the AP host, a greedy download to the near station
# and one to the far station (port 7502: the video class), Python on both ends.
EMU_SCRIPT = r"""
import os, signal, subprocess, sys, time
EMU = os.environ["LASTHOP_EMU"]; PY = sys.executable; OUT = os.environ["OUT"]
ex = lambda node, *c: [PY, "-m", "lasthop", "emu", "exec", "--name", EMU, node, "--", *c]
proxy = subprocess.Popen(ex("ap", PY, "-m", "lasthop", "vwire", "--utilities", OUT + "/util.toml",
                            "--record", OUT + "/rec.jsonl", "--stats", "0"), stderr=open(OUT + "/vwire.log", "w"))
time.sleep(1.5)
SRV = '''
import socket, sys, threading, time
def serve(port):
    l = socket.socket(); l.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1); l.bind(("10.77.0.1", port)); l.listen(4)
    c, _ = l.accept(); b = bytes(1 << 16); t = time.monotonic()
    while time.monotonic() - t < float(sys.argv[1]):
        c.sendall(b)
    c.close()
ts = [threading.Thread(target=serve, args=(p,)) for p in (7501, 7502)]
[t.start() for t in ts]; print("ready", flush=True); [t.join() for t in ts]
'''
CLI = '''
import socket, sys, time
s = socket.create_connection(("10.77.0.1", int(sys.argv[1]))); n = 0; t0 = time.monotonic()
while True:
    b = s.recv(1 << 16)
    if not b: break
    n += len(b)
print(n * 8 / (time.monotonic() - t0) / 1e6)
'''
srv = subprocess.Popen(ex("server", PY, "-c", SRV, "9"), stdout=subprocess.PIPE, text=True)
assert srv.stdout.readline().strip() == "ready"
near = subprocess.Popen(ex("sta0", PY, "-c", CLI, "7501"), stdout=subprocess.PIPE, text=True)
far = subprocess.Popen(ex("sta1", PY, "-c", CLI, "7502"), stdout=subprocess.PIPE, text=True)
print("RESULT", near.communicate()[0].strip(), far.communicate()[0].strip(), flush=True)
srv.wait()
proxy.send_signal(signal.SIGTERM); proxy.wait()
print("PROXY", proxy.returncode, flush=True)
"""


@pytest.mark.skipif(EMU_REASON is not None or REASON is not None, reason=(EMU_REASON or REASON or ""))
def test_vwire_in_the_emulated_ap_gives_the_video_its_rate(tmp_path):
    """Greedy downloads to a near and a far station through the proxy in the emulator's AP
    host; the far one is the video class (step utility 10 at 20 Mb/s). The proxy reads the
    stations' rates from the AP's nl80211 telemetry, allocates the video its 20 Mb/s, and
    the token scheduler holds the near download back while the WiFi is the bottleneck."""
    name = f"v{os.getpid() % 100000}e"
    spec = _spec(tmp_path, VW_CELL)
    (tmp_path / "util.toml").write_text(UTIL)
    script = tmp_path / "run.py"
    script.write_text(EMU_SCRIPT)
    r = subprocess.run([PY, "-m", "lasthop", "emu", "run", str(spec), "--name", name, "-o", str(tmp_path),
                        "--stats", "0", "--", PY, str(script)], capture_output=True, text=True, timeout=120,
                       cwd=ROOT, env=dict(os.environ, OUT=str(tmp_path)))
    log = (tmp_path / "vwire.log").read_text() if (tmp_path / "vwire.log").exists() else ""
    assert r.returncode == 0, r.stderr[-2000:] + log
    near, far = (float(x) for x in next(x for x in r.stdout.splitlines() if x.startswith("RESULT")).split()[1:])
    assert "PROXY 0" in r.stdout, log
    recs = [json.loads(x) for x in (tmp_path / "rec.jsonl").read_text().splitlines()]
    flows = [f for rec in recs for f in rec["flows"]]
    assert {f["class"] for f in flows} == {"bulk", "video_4k"}, flows
    video = [(rec["managed"], f) for rec in recs[1:] for f in rec["flows"] if f["class"] == "video_4k"]
    assert any(m for m, _ in video), recs
    allocs = [f["alloc_rate_bps"] for m, f in video if m]
    assert sum(abs(a - 20e6) < 1e6 for a in allocs) >= len(allocs) - 1, allocs
    video = [f for _, f in video]
    # Over the managed periods the far station's download gets close to its 20 Mb/s (its link
    # carries ~43 Mb/s of PHY rate); without the proxy it would get far less than the near
    # one (airtime fairness does not exist on this FIFO AP: the near station's frames win).
    got = [f["goodput_bps"] for f in video[1:]]
    assert got and sum(got) / len(got) > 15e6, (got, near, far)
    assert _namespaces(name) == []
