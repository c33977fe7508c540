"""`lasthop quic serve|get` (docs/live.md): bad input; downloads over loopback with both
profiles, byte-identical, ACKs as the profile's policy says; interoperability with aioquic
both ways; history-based windows raised, kept across a restart; and across the emulator the
RTT guard reverting while a competing bulk flow fills the AP's queue.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PEER = Path(__file__).resolve().parent / "peers" / "aioquic_peer.py"


def _bin() -> Path | None:
    for p in (ROOT / ".venv" / "bin" / "lasthop-live", ROOT / "target" / "release" / "lasthop-live"):
        if p.exists() and subprocess.run([str(p), "quic", "--help"], capture_output=True).returncode == 0:
            return p
    return None


BIN = _bin()
needs = pytest.mark.skipif(BIN is None, reason="lasthop-live with QUIC not built (make build)")


def _port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Server:
    def __init__(self, root: Path, *args: str, port: int | None = None, ns: list[str] | None = None) -> None:
        self.port = port or _port()
        cmd = [*(ns or []), str(BIN), "quic", "serve", str(root), "--listen", f"{'0.0.0.0' if ns else '127.0.0.1'}:{self.port}",
               "--stats", "0", *args]
        self.p = subprocess.Popen(cmd, stderr=subprocess.PIPE, text=True)
        line = self.p.stderr.readline()
        assert "quic serve:" in line, line + self.p.stderr.read()
        self.startup = line

    def stop(self) -> str:
        self.p.send_signal(signal.SIGTERM)
        err = self.p.communicate(timeout=20)[1]
        assert self.p.returncode == 0, err
        return err


def _get(url: str, *args: str, ns: list[str] | None = None, trust: tuple[str, ...] = ("--insecure",)) -> tuple[int, dict]:
    """`quic get`; the servers of these tests make a self-signed certificate at start, so by
    default the client is told not to verify it (`trust` replaces that)."""
    import tempfile
    with tempfile.TemporaryDirectory() as t:
        r = subprocess.run([*(ns or []), str(BIN), "quic", "get", url, "--result", f"{t}/r.json", "-q", *trust, *args],
                           capture_output=True, text=True, timeout=90)
        res = json.loads(Path(f"{t}/r.json").read_text()) if Path(f"{t}/r.json").exists() else {}
        res.setdefault("stderr", r.stderr)
    return r.returncode, res


def _pki(d: Path, leaves: dict[str, list[str]]) -> Path:
    """A CA (d/ca.pem) and, per entry of `leaves`, a server certificate it signs for those names
    (DNS names or IP addresses): d/<entry>.chain.pem and d/<entry>.key.pem."""
    import datetime
    import ipaddress
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    now = datetime.datetime.now(datetime.timezone.utc)
    valid = dict(not_valid_before=now - datetime.timedelta(days=1), not_valid_after=now + datetime.timedelta(days=2))
    pem = lambda c: c.public_bytes(serialization.Encoding.PEM)  # noqa: E731
    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca_name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "lasthop test CA")])
    ca = (x509.CertificateBuilder().subject_name(ca_name).issuer_name(ca_name).public_key(ca_key.public_key())
          .serial_number(x509.random_serial_number()).not_valid_before(valid["not_valid_before"])
          .not_valid_after(valid["not_valid_after"])
          .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
          .sign(ca_key, hashes.SHA256()))
    (d / "ca.pem").write_bytes(pem(ca))
    for entry, names in leaves.items():
        key = ec.generate_private_key(ec.SECP256R1())
        sans = []
        for n in names:
            try:
                sans.append(x509.IPAddress(ipaddress.ip_address(n)))
            except ValueError:
                sans.append(x509.DNSName(n))
        leaf = (x509.CertificateBuilder().subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, names[0])]))
                .issuer_name(ca_name).public_key(key.public_key()).serial_number(x509.random_serial_number())
                .not_valid_before(valid["not_valid_before"]).not_valid_after(valid["not_valid_after"])
                .add_extension(x509.SubjectAlternativeName(sans), critical=False).sign(ca_key, hashes.SHA256()))
        (d / f"{entry}.chain.pem").write_bytes(pem(leaf) + pem(ca))
        (d / f"{entry}.key.pem").write_bytes(key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                                               serialization.NoEncryption()))
    return d / "ca.pem"


@pytest.fixture
def site(tmp_path):
    d = tmp_path / "site"
    d.mkdir()
    (d / "big.bin").write_bytes(os.urandom(10_000_000))
    (d / "one.bin").write_bytes(os.urandom(1_000_000))
    (d / "index.html").write_text("<html>lasthop</html>\n")
    return d


@needs
def test_bad_input_is_one_line_exit_2_and_nothing_overwritten(tmp_path, site):
    def run(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([str(BIN), "quic", *args], capture_output=True, text=True, timeout=20)

    cases = [
        (["serve", str(tmp_path / "nope")], "not a readable directory"),
        (["serve", str(site), "--profile", "fast"], "--profile = \"fast\": one of quic, bquic"),
        (["serve", str(site), "--history-key", "/16"], "--history-key"),
        (["serve", str(site), "--pacer", "lumpy"], "--pacer = \"lumpy\": one of per-packet, chromium-v39"),
        (["serve", str(site), "--profile", "bquic", "--pacer", "chromium-v39"], "bquic does not pace"),
        (["get", "http://127.0.0.1:4433/x"], "not an https:// URL"),
        (["get"], "at least one URL"),
        (["get", "https://127.0.0.1:4433/", "--ca", str(tmp_path / "nope.pem")], "--ca = "),
        (["get", "https://127.0.0.1:4433/", "--ca", str(site / "index.html"), "--insecure"], "exclude each other"),
        (["fly"], "unknown command"),
    ]
    bad = tmp_path / "bad.pem"
    bad.write_text("not a certificate\n")
    cases.append((["serve", str(site), "--cert", str(bad), "--key", str(bad)], "--cert"))
    for args, says in cases:
        r = run(*args)
        assert r.returncode == 2 and r.stderr.count("\n") == 1 and says in r.stderr, (args, r.stderr)
    for content, says in [("garbage", "not JSON"), ('{"format": "something else"}', "not a history")]:
        h = tmp_path / "h.json"
        h.write_text(content)
        r = run("serve", str(site), "--history", str(h), "--listen", f"127.0.0.1:{_port()}")
        assert r.returncode == 2 and r.stderr.count("\n") == 1 and says in r.stderr, r.stderr
        assert h.read_text() == content
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        s.bind(("127.0.0.1", 0))
        r = run("serve", str(site), "--listen", f"127.0.0.1:{s.getsockname()[1]}")
        assert r.returncode == 2 and r.stderr.count("\n") == 1 and "in use" in r.stderr, r.stderr


@needs
def test_loopback_downloads_both_profiles(tmp_path, site):
    srv = Server(site)
    out = tmp_path / "out"
    out.mkdir()
    try:
        acks = {}
        for prof in ("quic", "bquic"):
            rc, res = _get(f"https://127.0.0.1:{srv.port}/big.bin", "--profile", prof, "-o", str(out))
            assert rc == 0 and res["ok"], res
            assert (out / "big.bin").read_bytes() == (site / "big.bin").read_bytes()
            a = res["acks"]
            acks[prof] = (a["acks_sent"] / a["packets"], a["due_count"] / a["packets"])
        # quic: an ACK every 2nd packet. bquic: by count, every 10th once past the first 100;
        # on loopback its timer, min(25 ms, minRTT/4), is a few µs and sends most of them.
        assert 0.45 < acks["quic"][0] < 0.55 and 0.45 < acks["quic"][1] < 0.55, acks
        assert acks["bquic"][1] <= 0.11, acks
        rc, res = _get(f"https://127.0.0.1:{srv.port}/nothing", "--profile", "quic")
        assert rc == 1 and "404" in res["error"], res
        rc, res = _get(f"https://127.0.0.1:{srv.port}/../../etc/passwd")
        assert rc == 1 and "404" in res["error"], res
        rc, res = _get(f"https://127.0.0.1:{srv.port}/index.html", f"https://127.0.0.1:{srv.port}/one.bin")
        assert rc == 0 and [o["bytes"] for o in res["objects"]] == [21, 1_000_000], res
    finally:
        srv.stop()
    # The same pacer code paced as Chromium's v39 PacingSender: the download completes intact.
    v39 = Server(site, "--pacer", "chromium-v39")
    try:
        (out / "big.bin").unlink()
        rc, res = _get(f"https://127.0.0.1:{v39.port}/big.bin", "-o", str(out))
        assert rc == 0 and res["ok"], res
        assert (out / "big.bin").read_bytes() == (site / "big.bin").read_bytes()
    finally:
        assert "chromium-v39 pacing" in v39.startup
        v39.stop()


@needs
def test_interoperates_with_aioquic_both_ways(tmp_path, site):
    pytest.importorskip("aioquic")
    port = _port()
    peer = subprocess.Popen([sys.executable, str(PEER), "serve", str(site), str(port)], stdout=subprocess.PIPE, text=True)
    try:
        assert peer.stdout.readline().strip() == "ready"
        out = tmp_path / "out"
        out.mkdir()
        rc, res = _get(f"https://127.0.0.1:{port}/one.bin", "-o", str(out))
        assert rc == 0, res
        assert (out / "one.bin").read_bytes() == (site / "one.bin").read_bytes()
    finally:
        peer.kill()
        peer.wait()
    srv = Server(site)
    try:
        got = tmp_path / "aioquic-got.bin"
        r = subprocess.run([sys.executable, str(PEER), "get", f"https://127.0.0.1:{srv.port}/one.bin", str(got)],
                           capture_output=True, text=True, timeout=60)
        assert r.returncode == 0, r.stderr
        assert got.read_bytes() == (site / "one.bin").read_bytes()
    finally:
        srv.stop()


def _two_big_downloads(site, h, rec, *extra: str) -> list[dict]:
    """Two downloads of big.bin, one after the other, from a server with --history h and
    --record rec; the records of their connections."""
    srv = Server(site, "--history", str(h), "--record", str(rec), *extra)
    try:
        for i in range(2):
            rc, res = _get(f"https://127.0.0.1:{srv.port}/big.bin")
            assert rc == 0, res
            # The server records a connection's window when it closes, which may come after
            # the client has its body: the next connection can use it only from then on.
            deadline = time.monotonic() + 20
            while (not rec.exists() or len(rec.read_text().splitlines()) <= i) and time.monotonic() < deadline:
                time.sleep(0.05)
        time.sleep(1.5)  # the history is saved at most once a second
    finally:
        srv.stop()
    return [json.loads(x) for x in rec.read_text().splitlines()]


@needs
def test_history_raises_the_window_and_survives_a_restart(tmp_path, site):
    h, rec = tmp_path / "history.json", tmp_path / "conns.jsonl"
    conns = _two_big_downloads(site, h, rec)
    assert [c["window_from"] for c in conns] == ["default", "history"], conns
    assert conns[0]["initial_window_packets"] == 10 and conns[1]["initial_window_packets"] > 10, conns
    assert conns[1]["initial_window_packets"] * 1350 >= conns[0]["cwnd_at_close"]
    doc = json.loads(h.read_text())
    assert doc["format"] == "lasthop-quic-history" and doc["entries"][0]["key"] == "127.0.0.1/32", doc
    assert doc["entries"][0]["samples"] == 2
    # A new server process reads it back: the first connection already gets the window.
    srv = Server(site, "--history", str(h), "--record", str(rec))
    try:
        rc, res = _get(f"https://127.0.0.1:{srv.port}/one.bin")
        assert rc == 0, res
        # The file turning bad while the server runs changes nothing: it is only read at
        # start, and the next save replaces it whole.
        h.write_text("garbage")
        rc, res = _get(f"https://127.0.0.1:{srv.port}/one.bin")
        assert rc == 0, res
    finally:
        srv.stop()
    conns = [json.loads(x) for x in rec.read_text().splitlines()]
    assert conns[2]["window_from"] == "history" and conns[2]["initial_window_packets"] > 10, conns[2]
    assert json.loads(h.read_text())["entries"][0]["samples"] == 4


@needs
def test_history_events_every_hello_records_at_the_handshake_too(tmp_path, site):
    """--history-events close_every_hello: each connection adds its window when its handshake
    completes (its initial window) as well as at close, so two connections leave four samples
    and the second starts at the mean of the first's initial and closing windows."""
    h, rec = tmp_path / "history.json", tmp_path / "conns.jsonl"
    conns = _two_big_downloads(site, h, rec, "--history-events", "close_every_hello")
    assert json.loads(h.read_text())["entries"][0]["samples"] == 4
    assert conns[0]["initial_window_packets"] == 10, conns
    # The first connection's two samples: its window at the handshake (its initial one, 10
    # packets of quiche's) and at close; the second starts at their mean, below the closing one.
    iw_bytes = conns[1]["initial_window_packets"] * 1350
    assert iw_bytes < conns[0]["cwnd_at_close"], conns
    assert iw_bytes >= (conns[0]["cwnd_at_close"] + 10 * 1350) // 2 - 1350, conns


def _emu_reason() -> str | None:
    from test_emu import REASON as EMU_REASON
    if EMU_REASON is not None:
        return EMU_REASON
    if shutil.which("iperf3") is None:
        return "no iperf3"
    return None


@needs
def test_history_and_rtt_guard_across_the_emulator(tmp_path):
    """802.11n cell, server 2 ms behind the AP: 1 MB downloads with --history --guard rtt. The
    first connection gets the default window, the next ones history's; a restarted server
    keeps it; while a CUBIC bulk flow fills the AP's FIFO the handshake RTT is far above the
    recorded one and the guard reverts to the default; after the flow, history again."""
    reason = _emu_reason()
    if reason:
        pytest.skip(reason)
    from lasthop.live import bench_quic as Q
    want = [("quiet", "default"), ("quiet", "history"), ("after restart", "history"), ("with bulk", "reverted"),
            ("after bulk", "history")]
    # Handshake RTTs are measured on the wall clock: a host stall of a few ms during a quiet
    # handshake makes the guard revert (its margin is 2 ms). One more run is allowed when the
    # first one's verdicts differ; the second must give every one.
    tried = []
    for attempt in range(2):
        r = Q.emulate("history", 2, tmp_path / f"h{attempt}")
        got = [(run["phase"], c["window_from"]) for run, c in zip(r["runs"], r["conns"])]
        tried.append((got, [c.get("handshake_rtt_us") for c in r["conns"]]))
        if got == want:
            break
    assert all(x["ok"] for x in r["runs"]), r["runs"]
    assert got == want, tried
    c = r["conns"]
    assert c[1]["initial_window_packets"] > 10 and c[3]["initial_window_packets"] == 10, c
    assert c[3]["handshake_rtt_us"] > 1.25 * min(x["handshake_rtt_us"] for x in c[:3]), c
    assert r["runs"][1]["download_ms"] < r["runs"][0]["download_ms"], r["runs"]


def test_chromium_v39_pacing_across_the_emulator(tmp_path):
    """10 MB downloads across the emulator from `quic serve` with each pacer and without pacing:
    every download completes; paced as Chromium's v39 PacingSender, most packets leave less than
    100 µs after the one before (lumps of up to 1 ms), where the per-packet schedule spaces them."""
    reason = _emu_reason()
    if reason:
        pytest.skip(reason)
    from lasthop.live import bench_quic as Q
    r = Q.emulate("bursty", 1, tmp_path / "b")
    by = {x["profile"]: x for x in r["runs"]}
    assert set(by) == set(Q.VARIANTS) and all(x["get"]["ok"] for x in r["runs"]), r["runs"]
    assert by["quic-v39"]["share_below_100us"] > by["quic"]["share_below_100us"] + 0.3, by


def test_bench_simulates_the_pages_on_the_cell_the_emulator_loads_them_on():
    """`bench --live quic` compares page-load times live and simulated: the simulator's spec is
    the emulated cell with the page's QUIC flow, not the reproduce suite's RP5 chain."""
    from lasthop.live import bench_quic as Q
    s = Q.page_spec("amazon", "bquic")
    assert {k: v for k, v in s.items() if k != "flows"} == Q.cell()
    q = s["flows"][0]
    assert (q["pattern"], q["page"], q["profile"], q["stations"]) == ("quic", "amazon", "bquic", 0) and "bytes" not in q


@needs
def test_service_unit_parses(tmp_path):
    """The example unit's command line parses: it gets as far as the directory it serves
    (absent here)."""
    import re
    import shlex
    text = (ROOT / "docs" / "examples" / "lasthop-quic.service").read_text()
    argv = shlex.split(re.search(r"(?m)^ExecStart=\S+ (.*)$", text).group(1))
    assert argv[:2] == ["quic", "serve"]
    r = subprocess.run([str(BIN), *argv], capture_output=True, text=True, timeout=20)
    assert r.returncode == 2 and r.stderr.count("\n") == 1 and "/srv/www: not a readable directory" in r.stderr, r.stderr


@needs
def test_table_ii_pages_match_the_simulator_and_load(tmp_path, site):
    """`get --page list` gives the simulator's object sizes (webpages.py); a page loads as its
    HTML, then its objects in parallel, every byte of them."""
    from lasthop.webpages import TABLE_II, page_objects
    r = subprocess.run([str(BIN), "quic", "get", "--page", "list"], capture_output=True, text=True, timeout=20)
    assert r.returncode == 0, r.stderr
    listed = {ln.split()[0]: [int(x) for x in ln.split()[-1].split(",")] for ln in r.stdout.splitlines()}
    assert listed == {name: page_objects(name) for name in TABLE_II}
    r = subprocess.run([str(BIN), "quic", "get", "--page", "altavista", "https://127.0.0.1:1/"], capture_output=True, text=True)
    assert r.returncode == 2 and r.stderr.count("\n") == 1 and "--page = \"altavista\": one of google" in r.stderr, r.stderr
    srv = Server(site, "--pages")
    try:
        for name in ("google", "wikipedia"):
            rc, res = _get(f"https://127.0.0.1:{srv.port}/", "--page", name)
            assert rc == 0, res
            assert [o["bytes"] for o in res["objects"]] == page_objects(name), res["objects"]
            assert res["page_load_ms"] >= max(o["done_ms"] for o in res["objects"][:1]), res
            first_done = res["objects"][0]["done_ms"]
            assert all(o["ttfb_ms"] >= first_done for o in res["objects"][1:]), "objects only after the HTML"
    finally:
        srv.stop()
    assert (site / "pages" / "google" / "index.html").stat().st_size == page_objects("google")[0]


@needs
def test_the_servers_certificate_is_verified_by_default(tmp_path, site):
    pytest.importorskip("cryptography")
    ca = _pki(tmp_path, {"good": ["localhost", "127.0.0.1"], "other": ["other.example"]})
    stranger = tmp_path / "stranger"
    stranger.mkdir()
    _pki(stranger, {"good": ["localhost", "127.0.0.1"]})
    cert = lambda d, e: ("--cert", str(d / f"{e}.chain.pem"), "--key", str(d / f"{e}.key.pem"))  # noqa: E731
    url = lambda srv, host="127.0.0.1": f"https://{host}:{srv.port}/one.bin"  # noqa: E731
    # Signed by the CA given, for the name or the address asked: downloaded.
    srv = Server(site, *cert(tmp_path, "good"))
    try:
        for host in ("127.0.0.1", "localhost"):
            rc, res = _get(url(srv, host), trust=("--ca", str(ca)))
            assert rc == 0 and res["ok"], (host, res)
    finally:
        srv.stop()
    # Issued by the CA for another name, or for the right names by another CA: refused with
    # one line, nothing downloaded.
    for d, entry in ((tmp_path, "other"), (stranger, "good")):
        srv = Server(site, *cert(d, entry))
        try:
            for host in ("127.0.0.1", "localhost"):
                rc, res = _get(url(srv, host), trust=("--ca", str(ca)))
                assert rc != 0 and not res["ok"] and "certificate was refused" in res["error"], (entry, host, res)
                assert res["stderr"].count("\n") == 1 and res["bytes"] == 0, res
        finally:
            srv.stop()
    # The server's own self-signed certificate: refused against the system's CAs (or, on a
    # machine without a CA bundle, a one-line error naming --ca and --insecure); accepted with
    # --insecure, as curl -k.
    srv = Server(site)
    try:
        rc, res = _get(url(srv), trust=())
        assert rc != 0 and not res.get("ok") and "--insecure" in res.get("error", res["stderr"]), res
        rc, res = _get(url(srv), trust=("--insecure",))
        assert rc == 0 and res["ok"], res
    finally:
        srv.stop()


@needs
def test_serve_keeps_to_its_directory(tmp_path, site):
    outside = tmp_path / "secret.txt"
    outside.write_text("outside the served directory\n")
    (site / "leak.txt").symlink_to(outside)
    (site / "alias.bin").symlink_to(site / "one.bin")
    for follow, leak_status in ((False, "404"), (True, "200")):
        srv = Server(site, *(["--follow-symlinks"] if follow else []))
        try:
            _, res = _get(f"https://127.0.0.1:{srv.port}/leak.txt")
            assert res["objects"][0]["status"] == leak_status, (follow, res)
            # A link that stays inside the directory is served either way.
            rc, res = _get(f"https://127.0.0.1:{srv.port}/alias.bin")
            assert rc == 0 and res["objects"][0]["bytes"] == 1_000_000, (follow, res)
        finally:
            srv.stop()


@needs
def test_a_stop_signal_to_lasthop_quic_serve_leaves_nothing_running(tmp_path, site):
    lasthop = Path(sys.executable).parent / "lasthop"
    if not lasthop.exists():
        pytest.skip("the lasthop command is not installed beside this interpreter")
    port = _port()
    p = subprocess.Popen([str(lasthop), "quic", "serve", str(site), "--listen", f"127.0.0.1:{port}", "--stats", "0"],
                         stderr=subprocess.PIPE, text=True)
    try:
        line = p.stderr.readline()
        assert "quic serve:" in line, line
        # The PID a shell or a script holds is the server itself (no child left behind).
        p.send_signal(signal.SIGTERM)
        assert p.wait(timeout=20) == 0
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
            s.bind(("127.0.0.1", port))
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()
