"""The emulator's AP host and the live tools across it (docs/live.md, docs/emu.md).

Needs root, `ip` and TUN (like test_emu.py); skips with the reason otherwise. Every emulator
has its own name, so its namespaces (lh-<name>-*) never meet anything else.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from test_emu import HT_CELL, REASON, ROOT, _emu_run, _namespaces, _spec

needs_netns = pytest.mark.skipif(REASON is not None, reason=REASON or "")
LASTHOP = [sys.executable, "-m", "lasthop"]

# Two HT MCS 7 stations behind an AP host (the emulator cell of test_emu.py, FIFO-1000).
AP_CELL = HT_CELL.format(qdisc="fifo", sched="round_robin", n=2) + """
    [emu]
    ap_host = true
"""

# Runs inside `lasthop emu run` (LASTHOP_EMU is set): helpers to run programs in the nodes.
PRELUDE = r"""
import hashlib, json, os, signal, subprocess, sys, time
EMU = os.environ["LASTHOP_EMU"]
PY = sys.executable
def ex(node, *cmd, **kw):
    return [PY, "-m", "lasthop", "emu", "exec", "--name", EMU, node, "--", *cmd]
def py_in(node, code, **kw):
    return subprocess.Popen(ex(node, PY, "-c", code), **kw)
"""

CHECKED = PRELUDE + r"""
N, SIZE = 4000, 1200
RECV = '''
import socket, struct, sys
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.setsockopt(socket.IPPROTO_IP, 12, 1)  # IP_RECVTTL
# Room for every datagram (SO_RCVBUFFORCE, as root): a receiver descheduled on a busy machine
# must not lose what the path delivered, which is what is checked.
s.setsockopt(socket.SOL_SOCKET, 33, 16 << 20)
# The idle timeout only ends a run whose datagrams were lost: on a loaded machine the emulator
# may stall for seconds and then deliver them, which is what is checked, so it is generous.
s.bind((sys.argv[1], 7000)); s.settimeout(20); print("ready", flush=True)
seqs, ttls = [], set()
try:
    while len(seqs) < int(sys.argv[2]):
        d, anc, _, _ = s.recvmsg(2048, 64)
        seqs.append(struct.unpack("!I", d[:4])[0])
        for lvl, typ, data in anc:
            ttls.add(int.from_bytes(data[:4], sys.byteorder))
except socket.timeout:
    pass
print(json.dumps({"n": len(seqs), "in_order": seqs == sorted(seqs), "distinct": len(set(seqs)), "ttl": sorted(ttls)}))
'''.replace("import socket, struct, sys", "import json, socket, struct, sys")
SEND = '''
import socket, struct, sys, time
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
pad = bytes(%d - 4)
for k in range(int(sys.argv[2])):
    s.sendto(struct.pack("!I", k) + pad, (sys.argv[1], 7000))
    if k %% 20 == 19:
        time.sleep(0.004)
''' % SIZE
out = {}
for tag, rx_node, rx_addr, tx_node in (("down", "sta0", "10.77.1.1", "server"), ("up", "server", "10.77.0.1", "sta1")):
    rx = subprocess.Popen(ex(rx_node, PY, "-c", RECV, rx_addr, str(N)), stdout=subprocess.PIPE, text=True)
    assert rx.stdout.readline().strip() == "ready"
    subprocess.run(ex(tx_node, PY, "-c", SEND, rx_addr, str(N)), check=True)
    out[tag] = json.loads(rx.communicate(timeout=60)[0])
# TCP: 8 MB server -> sta1 through the AP's kernel, checksummed at both ends.
SINK = '''
import hashlib, socket
s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("10.77.1.2", 7001)); s.listen(1); print("ready", flush=True)
c, _ = s.accept(); h = hashlib.sha256(); n = 0
while True:
    b = c.recv(1 << 16)
    if not b: break
    h.update(b); n += len(b)
print(n, h.hexdigest())
'''
SOURCE = '''
import hashlib, random, socket
data = random.Random(7).randbytes(8_000_000)
s = socket.create_connection(("10.77.1.2", 7001), timeout=10); s.sendall(data); s.close()
print(len(data), hashlib.sha256(data).hexdigest())
'''
rx = subprocess.Popen(ex("sta1", PY, "-c", SINK), stdout=subprocess.PIPE, text=True)
assert rx.stdout.readline().strip() == "ready"
sent = subprocess.run(ex("server", PY, "-c", SOURCE), capture_output=True, text=True, check=True).stdout.split()
got = rx.communicate(timeout=60)[0].split()
out["tcp"] = {"sent": sent, "got": got}
print("RESULT", json.dumps(out), flush=True)
"""


@needs_netns
def test_ap_host_adds_no_loss_or_reordering(tmp_path):
    """Datagrams with sequence numbers both ways and a checksummed TCP transfer through the AP
    host: every datagram arrives once and in order with one routed hop (TTL 63), the TCP
    bytes are identical, and the model dropped nothing (so the AP host dropped nothing)."""
    name = f"l{os.getpid() % 100000}a"
    spec = _spec(tmp_path, AP_CELL)
    script = tmp_path / "checked.py"
    script.write_text(CHECKED)
    r = _emu_run(tmp_path, spec, name, sys.executable, str(script), timeout=150)
    assert r.returncode == 0, r.stderr[-3000:]
    res = json.loads(next(x for x in r.stdout.splitlines() if x.startswith("RESULT"))[7:])
    doc = json.loads((tmp_path / "cell-emu-s1.json").read_text())
    emu = doc["data"]["emu"]
    for d in ("down", "up"):
        # (with the emulator's own counts: a loss the model made shows in them)
        assert res[d] == {"n": 4000, "in_order": True, "distinct": 4000, "ttl": [63]}, (res, emu)
    assert res["tcp"]["sent"] == res["tcp"]["got"], res["tcp"]
    assert emu["ap_host"] is True
    assert emu["packets_dropped_by_model"] == 0 and emu["packets_unroutable"] == 0, emu
    assert emu["tun_write_failures"] == 0
    # Every packet crossed the model twice (wired leg, then WiFi leg, or the reverse).
    assert emu["ap_packets_forwarded"] * 2 >= emu["packets_read"] - 10, emu
    legs = {f["external"].rsplit("[", 1)[-1] for f in doc["data"]["flows"] if f.get("external")}
    assert legs == {"wired leg]", "wifi leg]"}, legs
    assert _namespaces(name) == []


WQM = PRELUDE + r"""
def show():
    r = subprocess.run(ex("ap", PY, "-m", "lasthop", "wqm", "--phy", "phy0", "--show"), capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout)
def wait_limit(pred, what):
    t = time.monotonic()
    while time.monotonic() - t < 10:
        s = show()
        if pred(s["limit"]):
            return s["limit"]
        time.sleep(0.1)
    raise SystemExit(f"limit never {what}: {s}")
def daemon(*extra):
    return subprocess.Popen(ex("ap", PY, "-m", "lasthop", "wqm", "--phy", "phy0", "--interval", "20ms", *extra),
                            stderr=subprocess.PIPE, text=True)
out = {"before": show()}
# A bulk download keeps the AP's queue busy while the daemon runs.
sink = py_in("sta0", "import socket\ns=socket.socket();s.bind(('10.77.1.1',7002));s.listen(1)\nc,_=s.accept()\nwhile c.recv(1<<16): pass")
time.sleep(0.5)
src = py_in("server", "import socket,time\ns=socket.create_connection(('10.77.1.1',7002));b=bytes(1<<16);t=time.monotonic()\nwhile time.monotonic()-t<8: s.sendall(b)")
d = daemon("--record", os.environ["REC"])
out["sized"] = wait_limit(lambda l: l < 1000, "sized")
time.sleep(1.0)
d.send_signal(signal.SIGTERM)
out["term_stderr"] = d.communicate(timeout=10)[1]
out["term_code"] = d.returncode
out["after_term"] = show()["limit"]
d = daemon("-q")
wait_limit(lambda l: l < 1000, "sized again")
d.kill(); d.wait()
out["after_kill"] = show()["limit"]
d = daemon()
time.sleep(1.0)
d.send_signal(signal.SIGTERM)
out["restart_stderr"] = d.communicate(timeout=10)[1]
out["after_restart"] = show()["limit"]
bad = subprocess.run(ex("ap", PY, "-m", "lasthop", "wqm", "--phy", "phy3"), capture_output=True, text=True)
out["bad"] = [bad.returncode, bad.stderr]
src.wait(timeout=30); sink.wait(timeout=30)
print("RESULT", json.dumps(out), flush=True)
"""


@needs_netns
def test_wqm_daemon_sizes_the_emulated_aps_txq_limit_and_restores_it(tmp_path):
    """`lasthop wqm` in the AP host finds the emulator's nl80211 telemetry by itself, sizes
    the phy's TXQ limit while a download runs, restores it on SIGTERM, leaves it after a
    SIGKILL and restores it at its next start; a wrong phy is one line and exit 2."""
    name = f"l{os.getpid() % 100000}b"
    spec = _spec(tmp_path, AP_CELL)
    script = tmp_path / "wqm.py"
    script.write_text(WQM)
    rec = tmp_path / "wqm.jsonl"
    env = dict(os.environ, REC=str(rec))
    r = subprocess.run([*LASTHOP, "emu", "run", str(spec), "--name", name, "-o", str(tmp_path),
                        "--stats", "0", "--", sys.executable, str(script)],
                       capture_output=True, text=True, timeout=150, cwd=ROOT, env=env)
    assert r.returncode == 0, r.stderr[-3000:]
    res = json.loads(next(x for x in r.stdout.splitlines() if x.startswith("RESULT"))[7:])
    before = res["before"]
    assert before["limit"] == 1000 and before["stations"] == 2, before
    assert "emulator's AP-host telemetry" in before["via"], before
    assert before["aggregate"] is not None
    assert res["sized"] < 1000
    assert res["term_code"] == 0, res["term_stderr"]
    assert "restored the TXQ limit of phy0 (1000 packets)" in res["term_stderr"], res["term_stderr"]
    assert res["after_term"] == 1000
    assert res["after_kill"] < 1000, "SIGKILL leaves the sized limit"
    assert "restored the TXQ limit of phy0 (1000 packets) left by a wqm that did not exit cleanly" in res["restart_stderr"]
    assert res["after_restart"] == 1000
    code, err = res["bad"]
    assert code == 2 and err.count("\n") == 1 and 'no such phy (phys: phy0)' in err, err
    # The record: the download drove the backlog and the rate the daemon saw.
    lines = [json.loads(x) for x in rec.read_text().splitlines()]
    assert len(lines) > 20
    assert max(x["backlog_bytes"] for x in lines) > 10_000
    assert {x["rate_bps"] for x in lines} == {65_000_000}
    assert all(x["limit"] is None or x["b_min"] <= x["limit"] for x in lines)
    assert _namespaces(name) == []


def test_live_tool_bad_input_without_root(capfd):
    """Options are checked before anything is touched; no emulator or root needed."""
    from lasthop import cli
    for argv, want in ((["wqm", "--limit", "2.5"], "--limit = \"2.5\""),
                       (["wqm", "--phy", "phy0", "--metrics", "256.0.0.1:1"], "--metrics"),
                       (["wqm"], "give --phy PHY or --iface IF"),
                       (["wqm", "--frobnicate"], "unknown option --frobnicate")):
        assert cli.main(argv) == 2, argv
        err = capfd.readouterr().err
        assert err.count("\n") == 1 and want in err, (argv, err)
    assert cli.main(["wqm", "--help"]) == 0
    assert "usage: lasthop wqm" in capfd.readouterr().out


def test_service_files_start_the_tool_with_valid_options(capfd):
    """The systemd unit's and the OpenWrt init script's command lines parse: on this host (no
    wireless) they get as far as looking for the phy."""
    import re
    import shlex
    from lasthop import cli
    docs = ROOT / "docs" / "examples"
    unit = (docs / "lasthop-wqm.service").read_text()
    exec_start = re.search(r"(?m)^ExecStart=(\S+) (.*)$", unit)
    init = (docs / "lasthop-wqm.init").read_text()
    procd = re.search(r'procd_set_param command "\$PROG" (.*)$', init, re.M)
    assert exec_start and procd
    for argv in (shlex.split(exec_start.group(2)), shlex.split(procd.group(1))):
        assert argv[0] == "wqm"
        assert cli.main(argv) == 2
        err = capfd.readouterr().err
        assert err.count("\n") == 1 and "no wireless here" in err, err
    assert "KillSignal=SIGTERM" in unit and "procd_set_param term_timeout" in init


def test_vwire_service_files_have_valid_options(capfd):
    """The vwire unit's and init script's command lines parse: they get as far as reading the
    rules file those examples name (absent here)."""
    import re
    import shlex
    from lasthop import cli
    if os.geteuid() != 0:
        pytest.skip("vwire checks root before its options' files")
    docs = ROOT / "docs" / "examples"
    unit = (docs / "lasthop-vwire.service").read_text()
    init = (docs / "lasthop-vwire.init").read_text()
    argvs = [shlex.split(re.search(r"(?m)^ExecStart=\S+ (.*)$", unit).group(1)),
             shlex.split(re.search(r'procd_set_param command "\$PROG" (.*)$', init, re.M).group(1))]
    for argv in argvs:
        assert argv[0] == "vwire"
        assert cli.main(argv) == 2
        err = capfd.readouterr().err
        assert err.count("\n") == 1 and "--utilities = \"/etc/lasthop/vwire.toml\"" in err, err
