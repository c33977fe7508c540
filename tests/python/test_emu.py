"""`lasthop emu`: the model in real time between network namespaces.

The tests that build namespaces need root, the `ip` command and a kernel with network
namespaces and TUN; they skip with the reason otherwise. Every emulator here has its own name,
so its namespaces (lh-<name>-*) and addresses (inside them only) never meet anything else.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from lasthop import cli

ROOT = Path(__file__).resolve().parents[2]
LASTHOP = [sys.executable, "-m", "lasthop"]


def _netns_reason() -> str | None:
    if os.geteuid() != 0:
        return "not root: network namespaces and TUN devices need CAP_NET_ADMIN"
    if shutil.which("ip") is None:
        return "no `ip` command (iproute2)"
    if not os.path.exists("/dev/net/tun"):
        return "no /dev/net/tun"
    probe = f"lh-probe{os.getpid()}"
    r = subprocess.run(["ip", "netns", "add", probe], capture_output=True, text=True)
    if r.returncode != 0:
        return f"cannot create a network namespace: {r.stderr.strip()}"
    subprocess.run(["ip", "netns", "del", probe], capture_output=True)
    return None


REASON = _netns_reason()
needs_netns = pytest.mark.skipif(REASON is not None, reason=REASON or "")


def _namespaces(name: str) -> list[str]:
    out = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout
    return [line.split()[0] for line in out.splitlines() if line.startswith(f"lh-{name}-")]


def _spec(tmp: Path, body: str, name: str = "cell") -> Path:
    p = tmp / f"{name}.toml"
    p.write_text(textwrap.dedent(body))
    return p


HT_CELL = """
    name = "cell"
    [sim]
    duration = "10s"
    [phy]
    standard = "ht"
    channel_width = 20
    [wired]
    rate = "1Gbps"
    delay = "2ms"
    [ap]
    qdisc = "{qdisc}"
    scheduler = "{sched}"
    [[stations]]
    count = {n}
    mcs = 7
    nss = 1
"""

# A TCP bulk transfer: receiver in the station's namespace, sender in the server's, through the
# emulated cell; prints the receiver's goodput in Mb/s. Python only (no iperf3 needed).
TRANSFER = r"""
import os, socket, subprocess, sys, time
emu = os.environ["LASTHOP_EMU"]
print("CPUS", *sorted(os.sched_getaffinity(0)), flush=True)
n_bytes = int(sys.argv[1])
rx = subprocess.Popen([sys.executable, "-m", "lasthop", "emu", "exec", "--name", emu, "sta0", "--",
    sys.executable, "-c", '''
import socket, time
s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("0.0.0.0", 5201)); s.listen(1); s.settimeout(30)
c, _ = s.accept(); n = 0; t0 = None
while True:
    b = c.recv(1 << 16)
    if not b: break
    if t0 is None: t0 = time.monotonic()
    n += len(b)
print(n, (n * 8 / (time.monotonic() - t0)) / 1e6, flush=True)
'''], stdout=subprocess.PIPE, text=True)
time.sleep(0.5)
tx = subprocess.run([sys.executable, "-m", "lasthop", "emu", "exec", "--name", emu, "server", "--",
    sys.executable, "-c", f'''
import socket, time
for _ in range(50):
    try:
        s = socket.create_connection(("10.77.1.1", 5201), timeout=5); break
    except OSError: time.sleep(0.1)
buf = b"x" * 65536; left = {n_bytes}
while left > 0:
    k = s.send(buf[:min(left, len(buf))]); left -= k
s.close()
'''], timeout=60)
out, _ = rx.communicate(timeout=60)
print("RESULT", out.strip(), flush=True)
sys.exit(tx.returncode or rx.returncode)
"""


def _emu_run(tmp: Path, spec: Path, name: str, *cmd: str, timeout: float = 90,
             extra: tuple[str, ...] = ()) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*LASTHOP, "emu", "run", str(spec), "--name", name, "-o", str(tmp),
                           "--stats", "0", *extra, "--", *cmd],
                          capture_output=True, text=True, timeout=timeout, cwd=ROOT)


def _transfer(tmp: Path, spec: Path, name: str, script_text: str, n_bytes: int,
              extra: tuple[str, ...] = ()) -> tuple[int, float, str]:
    """Run a transfer script (TRANSFER, UPLOAD) across the emulator: the bytes received, the
    receiver's goodput in Mb/s and the script's output."""
    script = tmp / "transfer.py"
    script.write_text(script_text)
    r = _emu_run(tmp, spec, name, sys.executable, str(script), str(n_bytes), extra=extra)
    assert r.returncode == 0, r.stderr[-2000:]
    line = next(x for x in r.stdout.splitlines() if x.startswith("RESULT"))
    n, mbps = line.split()[1:3]
    return int(n), float(mbps), r.stdout


def test_not_root_is_one_line_and_exit_2(monkeypatch, capsys):
    monkeypatch.setattr(os, "geteuid", lambda: 1000)
    for argv in (["emu", "down"], ["emu", "up", "experiments/emu-vht-1sta.toml"]):
        assert cli.main(argv) == 2
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and "needs root" in err, err


def test_bad_arguments_fail_early(tmp_path, capsys):
    if os.geteuid() != 0:
        pytest.skip("the root check comes first when not root")
    assert cli.main(["emu", "up", str(tmp_path / "missing.toml")]) == 2
    assert capsys.readouterr().err.count("\n") == 1
    spec = _spec(tmp_path, HT_CELL.format(qdisc="fifo", sched="round_robin", n=1))
    assert cli.main(["emu", "up", str(spec), "--name", "Bad_Name", "-o", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert "emu name" in err and err.count("\n") == 1, err
    assert cli.main(["emu", "run", str(spec), "--node", "sta7", "--", "true"]) == 2
    assert "--node" in capsys.readouterr().err
    for prio in ("0", "100"):
        assert cli.main(["emu", "up", str(spec), "--realtime", prio, "-o", str(tmp_path)]) == 2
        err = capsys.readouterr().err
        assert err == f"lasthop: error: --realtime = {prio}: a SCHED_FIFO priority, 1 to 99\n", err
    assert cli.main(["emu", "up", str(spec), "--io", "mmap", "-o", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert err == "lasthop: error: --io = mmap: one of syscalls, uring\n", err


@needs_netns
@pytest.mark.parametrize("io", ["syscalls", "uring"])
def test_tcp_download_is_shaped_by_the_cell(tmp_path, io):
    """A 6 MB TCP download over an HT MCS 7 (65 Mb/s PHY) cell, with either packet I/O: the
    goodput is what such a link carries (far below what veth/TUN alone allow), every packet
    crossed the model, and the result file has the run's flows with their 5-tuples."""
    name = f"t{os.getpid() % 100000}a"
    spec = _spec(tmp_path, HT_CELL.format(qdisc="fifo", sched="round_robin", n=1))
    n, mbps, out = _transfer(tmp_path, spec, name, TRANSFER, 6_000_000, ("--io", io))
    assert n == 6_000_000
    # TCP over one HT MCS 7 station with A-MPDUs: ~40–60 Mb/s in the simulator's own TCP model.
    assert 25 < mbps < 65, mbps
    doc = json.loads((tmp_path / "cell-emu-s1.json").read_text())
    flows = doc["data"]["flows"]
    down = [f for f in flows if f["direction"] == "down" and f.get("external", "").startswith("tcp 10.77.0.1:")]
    up = [f for f in flows if f["direction"] == "up" and f.get("external", "").startswith("tcp 10.77.1.1:")]
    assert down and up, [f.get("external") for f in flows]
    assert sum(f["delivered_bytes"] for f in down) > 6_000_000
    st = doc["data"]["stations"][0]
    assert st["mean_ampdu_down"] > 4, st
    emu = doc["data"]["emu"]
    assert emu["packets_written"] > 4000 and emu["tun_write_failures"] == 0
    assert emu["io"] == io or emu["io_fallback"], emu["io_fallback"]
    # With more than one CPU the model thread has one of its own and the command runs on the
    # others (and spins longer before a deadline); on one CPU both share it.
    cpus = [int(c) for c in next(x for x in out.splitlines() if x.startswith("CPUS")).split()[1:]]
    if emu["cpu"] is not None:
        assert emu["program_cpus"] == cpus and emu["cpu"] not in cpus, (emu["cpu"], cpus)
        assert emu["spin_ns"] == 150_000
    else:
        assert emu["program_cpus"] is None and emu["spin_ns"] == 20_000
    if emu["io"] == "uring":
        # A TUN is read only after a readiness completion, and each one follows a packet's
        # arrival: at most one read finds nothing per packet (plus each device's first).
        assert emu["reads_empty"] <= emu["packets_read"] + 8, emu
    else:
        # Every round reads every device until it has nothing.
        assert emu["reads_empty"] > emu["packets_read"], emu
    assert _namespaces(name) == []


HE_OFDMA_CELL = """
    name = "cell"
    [sim]
    duration = "10s"
    [phy]
    standard = "he"
    channel_width = 80
    [wired]
    rate = "1Gbps"
    delay = "2ms"
    [mac.ofdma]
    ul = true
    scheduler = "rr"
    [[stations]]
    count = 2
    mcs = 7
    nss = 1
"""


@needs_netns
def test_a_kernel_tcp_download_crosses_an_ofdma_cell(tmp_path):
    """The kernel's TCP across an 802.11ax cell with DL and UL OFDMA: its segments ride DL MU
    PPDUs (ns-3's round-robin scheduler sends one even to a single station, on the full band)
    and its ACKs go up in HE TB PPDUs the AP triggers."""
    name = f"t{os.getpid() % 100000}o"
    spec = _spec(tmp_path, HE_OFDMA_CELL)
    n, mbps, _ = _transfer(tmp_path, spec, name, TRANSFER, 6_000_000)
    assert n == 6_000_000 and mbps > 20, mbps
    o = json.loads((tmp_path / "cell-emu-s1.json").read_text())["data"]["ofdma"]
    assert o["mu_ppdus"] > 20 and o["ul"]["triggers"] > 5, o
    assert _namespaces(name) == []


@needs_netns
def test_sigterm_and_sigkill_leave_nothing_behind(tmp_path):
    spec = _spec(tmp_path, HT_CELL.format(qdisc="fifo", sched="round_robin", n=2))
    # SIGTERM: orderly stop, result written, namespaces gone.
    name = f"t{os.getpid() % 100000}b"
    p = subprocess.Popen([*LASTHOP, "emu", "up", str(spec), "--name", name, "-o", str(tmp_path),
                          "--stats", "0"], cwd=ROOT, stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True)
    _wait_for(lambda: len(_namespaces(name)) == 3, p)
    p.send_signal(signal.SIGTERM)
    _, err = p.communicate(timeout=20)
    assert p.returncode == 0, err
    assert _namespaces(name) == []
    assert (tmp_path / "cell-emu-s1.json").exists()
    # SIGKILL: the reaper removes the namespaces.
    name = f"t{os.getpid() % 100000}c"
    p = subprocess.Popen([*LASTHOP, "emu", "up", str(spec), "--name", name, "-o", str(tmp_path),
                          "--stats", "0"], cwd=ROOT, stdout=subprocess.DEVNULL,
                         stderr=subprocess.DEVNULL)
    _wait_for(lambda: len(_namespaces(name)) == 3, p)
    p.kill()
    p.wait()
    deadline = time.monotonic() + 5
    while _namespaces(name) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert _namespaces(name) == []
    # `emu down` after a crash that also took the reaper: leftovers are removed.
    subprocess.run(["ip", "netns", "add", f"lh-{name}-server"], check=True)
    r = subprocess.run([*LASTHOP, "emu", "down", "--name", name], capture_output=True, text=True,
                       cwd=ROOT)
    assert r.returncode == 0, r.stderr
    assert _namespaces(name) == []
    links = subprocess.run(["ip", "-o", "link"], capture_output=True, text=True).stdout
    assert f"lh{name}" not in links


def _wait_for(cond, proc, timeout: float = 20) -> None:
    deadline = time.monotonic() + timeout
    while not cond():
        if proc.poll() is not None:
            raise AssertionError(f"emulator exited early ({proc.returncode})")
        if time.monotonic() > deadline:
            proc.kill()
            raise AssertionError("emulator did not come up")
        time.sleep(0.1)


# The TCP transfer above from a CUBIC socket (`TCP_CONGESTION`: the host's default may be BBR,
# which ignores ECN) with the kernel's classic ECN asked for
# (`net.ipv4.tcp_ecn` = the script's second argument; the station's default 2 accepts it).
ECN_TRANSFER = TRANSFER.replace(
    'time.sleep(0.5)\n',
    'time.sleep(0.5)\n'
    'subprocess.run([sys.executable, "-m", "lasthop", "emu", "exec", "--name", emu, "server", "--",\n'
    '    sys.executable, "-c", "import sys; open(\'/proc/sys/net/ipv4/tcp_ecn\', \'w\').write(sys.argv[1])'
    '", sys.argv[2]], check=True)\n',
).replace('buf = b"x" * 65536', 's.setsockopt(socket.IPPROTO_TCP, socket.TCP_CONGESTION, b"cubic"); buf = b"x" * 65536')


# The transfer the other way: the sender in the station's namespace, the receiver in the
# server's, so the receiver's ACKs cross the AP's queue for the station.
UPLOAD = (TRANSFER.replace('"sta0", "--"', '"SENDER", "--"').replace('"server", "--"', '"sta0", "--"')
          .replace('"SENDER", "--"', '"server", "--"').replace("10.77.1.1", "10.77.0.1"))


@needs_netns
def test_kernel_acks_are_filtered_by_the_model(tmp_path):
    """A kernel TCP upload through the modelled AP with mac80211's FQ-CoDel and the ACK filter
    (`ap.ack_filter`): the receiver's real ACKs (timestamps and SACK options as Linux sends
    them) are read by the model's filter, which takes redundant ones out of the AP's queue for
    the station; the transfer completes whole, at a link's rate."""
    name = f"t{os.getpid() % 100000}k"
    body = HT_CELL.format(qdisc="fq_codel", sched="airtime", n=1).replace(
        'qdisc = "fq_codel"', 'qdisc = "fq_codel"\n    ack_filter = "conservative"')
    spec = _spec(tmp_path, body)
    n, mbps, _ = _transfer(tmp_path, spec, name, UPLOAD, 6_000_000)
    assert n == 6_000_000 and 15 < mbps < 65, mbps
    doc = json.loads((tmp_path / "cell-emu-s1.json").read_text())
    up = [f for f in doc["data"]["flows"] if f["direction"] == "up" and f["delivered_packets"] > 1000]
    down = [f for f in doc["data"]["flows"] if f["direction"] == "down" and f.get("external", "").startswith("tcp 10.77.0.1:5201")]
    assert up and down, [f.get("external") for f in doc["data"]["flows"]]
    filtered = doc["data"]["stats"].get("ack_filtered", 0)
    print(f"ACKs filtered {filtered}, ACKs delivered {down[0]['delivered_packets']}, "
          f"upload {mbps} Mb/s, dropped by the model {doc['data']['emu']['packets_dropped_by_model']}")
    assert filtered > 100, doc["data"]["stats"]
    assert _namespaces(name) == []


@needs_netns
def test_kernel_ecn_is_marked_by_the_model(tmp_path):
    """A kernel CUBIC download through the modelled AP's FQ-CoDel with a 5 ms CE threshold
    (mac80211's `ce_threshold`): with the kernel's classic ECN on, the model's marks are written
    into the real packets' IP headers and the real sender backs off on them, so the queue the
    download builds is far shorter than with ECN off, where nothing is marked (and the 20 ms
    CoDel target rarely bites)."""
    p50 = {}
    for ecn in ("1", "0"):
        name = f"t{os.getpid() % 100000}e{ecn}"
        out = tmp_path / ecn
        out.mkdir()
        # HT MCS 1 (13 Mb/s): the kernel's window is many times the 5 ms the threshold allows.
        body = HT_CELL.format(qdisc="fq_codel", sched="round_robin", n=1).replace("mcs = 7", "mcs = 1")
        spec = _spec(out, body.replace('scheduler = "round_robin"', 'scheduler = "round_robin"\n    ce_threshold = "5ms"'))
        script = out / "transfer.py"
        script.write_text(ECN_TRANSFER)
        r = _emu_run(out, spec, name, sys.executable, str(script), "3000000", ecn)
        assert r.returncode == 0, r.stderr[-2000:]
        doc = json.loads((out / "cell-emu-s1.json").read_text())
        emu = doc["data"]["emu"]
        down = [f for f in doc["data"]["flows"] if f["direction"] == "down" and f["delivered_packets"] > 1000]
        p50[ecn] = down[0]["delay_ns"]["p50"] / 1e6
        print(f"tcp_ecn={ecn}: CE-marked {emu['ce_marked']}, dropped {emu['packets_dropped_by_model']}, "
              f"one-way delay p50 {p50[ecn]:.1f} ms")
        if ecn == "1":
            assert emu["ce_marked"] > 10, emu
        else:
            assert emu["ce_marked"] == 0, emu
    assert p50["1"] < 0.6 * p50["0"], p50


def test_emu_bench_timing_table_reads_the_sweep():
    """`bench --emu`'s timing sweep as printed: the ceiling, then per rate the loss at the
    receiver, the packets the emulator dropped (the model's drops and failed TUN writes) and
    the write lateness percentiles."""
    from lasthop.live.emu_bench import timing_table

    row = {"rate_mbps": 500, "carried_mbps": 512.3, "receiver_lost_percent": 0.02, "lateness_p50_us": 12.4,
           "lateness_p99_us": 88.0, "lateness_p999_us": 310.0, "model_drops": 3, "tun_write_failures": 1}
    lines = timing_table([{"ap_host": False, "rows": [row], "ceiling_mbps": 1250},
                          {"ap_host": True, "rows": [{**row, "receiver_lost_percent": None}], "ceiling_mbps": None}])
    assert lines[0] == "timing: ceiling (< 0.1 % lost) 1250 Mb/s", lines
    assert lines[2].split() == ["500", "512", "0.02%", "4", "12us", "88us", "310us"], lines
    assert lines[3] == "timing with the AP host: ceiling (< 0.1 % lost) below the first rate", lines
    assert lines[5].split()[2] == "0.00%", lines


def test_emu_bench_ofdma_table_and_modes():
    """`bench --emu`'s OFDMA section: every mode's spec is a valid HE cell (single-user without
    [mac.ofdma], DL, DL + UL), and the table prints one row per mode."""
    from lasthop.live.emu_bench import EXPERIMENTS, OFDMA_MODES, ofdma_table
    from lasthop.spec import load_spec_text

    base = (EXPERIMENTS / "emu-he-4sta.toml").read_text()
    seen = []
    for mode, table in OFDMA_MODES:
        n = load_spec_text(base + table, mode).normalized
        o = n["mac"].get("ofdma")
        seen.append((mode, None if o is None else (o["dl"], o["ul"])))
    assert seen == [("su", None), ("dl", (True, False)), ("dl+ul", (True, True))], seen
    row = {"ofdma": "dl", "goodput_diff": -0.027,
           "emulator": {"goodput_mbps": 214.1, "ping_rtt_mean_ms": 73.6, "lateness_p50_us": 13.0,
                        "lateness_p99_us": 216.0, "lateness_p999_us": 2744.0},
           "simulator": {"goodput_mbps": 220.0, "ping_rtt_mean_ms": 33.6}}
    lines = ofdma_table([row])
    assert lines[2].split() == ["dl", "214.1", "220.0", "-2.7%", "73.6ms", "33.6ms", "13us", "216us", "2744us"], lines
    assert ofdma_table([]) == []
