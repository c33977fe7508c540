"""A checked load for a TCP proxy: every byte verified, resets and half-closes exercised.

    python -m lasthop.live.proxy_load server --bind ADDR --port P
    python -m lasthop.live.proxy_load client --to ADDR --port P --long N --long-mb MB --short N ...

The client opens connections to the server (through whatever proxy sits between them) and
asks for a download with a one-line request: `<bytes> <seed> <mode> <upload>`. The server
first reads `upload` bytes from the client (which sends them and half-closes only when
`mode` is "half"), answers with the SHA-256 prefix of what it got, then sends `bytes` bytes
of a stream determined by `seed`. Modes:

* `normal`: the whole download, then the server closes;
* `half`: the client uploads, shuts down its sending side, and still receives all of it;
* `server-reset`: the server resets the connection (RST) after half of the bytes; the client
  must see the reset after receiving exactly an unaltered prefix;
* `client-reset`: the client resets after half; the server must see the reset.

The client checks every received byte against the seeded stream (not a digest: the first
wrong offset is reported) and prints one JSON line with its counts; the server prints its
own counts when it gets SIGTERM. Nothing here measures speed finely: it is a correctness
load.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import random
import signal
import socket
import struct
import sys
import threading
import time

BLOCK = 1 << 20
_blocks: dict[int, bytes] = {}


def stream_block(seed: int) -> bytes:
    """The repeating 1 MiB block of a seed's stream (the stream is the block, over and over,
    starting at offset seed % BLOCK)."""
    b = _blocks.get(seed % 64)
    if b is None:
        b = random.Random(seed % 64).randbytes(BLOCK)
        _blocks[seed % 64] = b
    return b


def stream_at(seed: int, offset: int, n: int) -> bytes:
    b = stream_block(seed)
    start = (seed + offset) % BLOCK
    out = bytearray()
    while len(out) < n:
        take = min(n - len(out), BLOCK - start)
        out += b[start:start + take]
        start = 0
    return bytes(out)


def _line(s: socket.socket, chunk: int, missing: str) -> tuple[bytes, bytes]:
    """Read up to the first newline: (the line, what came after it)."""
    f = b""
    while b"\n" not in f:
        d = s.recv(chunk)
        if not d:
            raise ConnectionError(missing)
        f += d
    line, rest = f.split(b"\n", 1)
    return line, rest


def _rst(s: socket.socket) -> None:
    s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    s.close()


# ---------------------------------------------------------------------------------- server

class Server:
    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.stats = {"connections": 0, "sent_bytes": 0, "uploads_ok": 0, "uploads_bad": 0,
                      "client_resets_seen": 0, "errors": 0}

    def bump(self, k: str, n: int = 1) -> None:
        with self.lock:
            self.stats[k] += n

    def handle(self, c: socket.socket) -> None:
        try:
            line, rest = _line(c, 256, "no request")
            n, seed, mode, up = line.decode().split()
            n, seed, up = int(n), int(seed), int(up)
            h = hashlib.sha256(rest)
            got = len(rest)
            while got < up:
                d = c.recv(1 << 16)
                if not d:
                    break
                h.update(d)
                got += len(d)
            want = hashlib.sha256(stream_at(seed + 1, 0, up)).hexdigest()[:16]
            ok = got == up and h.hexdigest()[:16] == want
            self.bump("uploads_ok" if ok else "uploads_bad")
            c.sendall((h.hexdigest()[:16] + "\n").encode())
            limit = n // 2 if mode == "server-reset" else n
            sent = 0
            while sent < limit:
                k = min(1 << 18, limit - sent)
                try:
                    c.sendall(stream_at(seed, sent, k))
                except (ConnectionResetError, BrokenPipeError):
                    if mode == "client-reset":
                        self.bump("client_resets_seen")
                        return
                    raise
                sent += k
            self.bump("sent_bytes", sent)
            if mode == "server-reset":
                time.sleep(0.05)
                _rst(c)
                return
            if mode == "client-reset":
                # The client resets after half; wait for it.
                c.settimeout(10)
                try:
                    while c.recv(1 << 16):
                        pass
                except ConnectionResetError:
                    self.bump("client_resets_seen")
                return
            c.shutdown(socket.SHUT_WR)
            c.settimeout(10)
            while c.recv(1 << 16):
                pass
        except ConnectionResetError:
            if "mode" in locals() and mode == "client-reset":
                self.bump("client_resets_seen")
            else:
                self.bump("errors")
        except Exception:  # noqa: BLE001 — counted, reported at the end
            self.bump("errors")
        finally:
            try:
                c.close()
            except OSError:
                pass


def serve(bind: str, port: int) -> None:
    srv = Server()
    l = socket.socket()
    l.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    l.bind((bind, port))
    l.listen(1024)
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    l.settimeout(0.2)
    print("ready", flush=True)
    while not stop.is_set():
        try:
            c, _ = l.accept()
        except socket.timeout:
            continue
        srv.bump("connections")
        threading.Thread(target=srv.handle, args=(c,), daemon=True).start()
    time.sleep(0.5)
    print(json.dumps(srv.stats), flush=True)


# ---------------------------------------------------------------------------------- client

class Client:
    def __init__(self, to: str, port: int) -> None:
        self.to, self.port = to, port
        self.lock = threading.Lock()
        self.stats = {"connections": 0, "ok": 0, "bytes_checked": 0, "mismatches": 0,
                      "short": 0, "server_resets_seen": 0, "client_resets_sent": 0,
                      "upload_checks_failed": 0, "connect_failures": 0, "errors": 0,
                      "first_error": None}

    def bump(self, k: str, n: int = 1) -> None:
        with self.lock:
            self.stats[k] += n

    def err(self, what: str) -> None:
        with self.lock:
            self.stats["errors"] += 1
            if self.stats["first_error"] is None:
                self.stats["first_error"] = what

    def one(self, n: int, seed: int, mode: str, up: int) -> None:
        self.bump("connections")
        try:
            s = socket.create_connection((self.to, self.port), timeout=30)
        except OSError as e:
            self.bump("connect_failures")
            self.err(f"connect: {e}")
            return
        try:
            s.sendall(f"{n} {seed} {mode} {up}\n".encode())
            s.sendall(stream_at(seed + 1, 0, up)) if up else None
            if mode == "half":
                s.shutdown(socket.SHUT_WR)
            digest, rest = _line(s, 64, "no upload check")
            if digest.decode() != hashlib.sha256(stream_at(seed + 1, 0, up)).hexdigest()[:16]:
                self.bump("upload_checks_failed")
            got = 0
            buf = bytearray(1 << 18)
            view = memoryview(buf)
            pending = rest
            half = n // 2
            while True:
                if pending:
                    d, pending = pending, b""
                    k = len(d)
                    chunk = d
                else:
                    try:
                        k = s.recv_into(view)
                    except ConnectionResetError:
                        if mode == "server-reset" and got == half:
                            self.bump("server_resets_seen")
                            self.bump("ok")
                        elif mode == "server-reset":
                            self.bump("short")
                            self.err(f"reset after {got} of {half} bytes")
                        else:
                            self.err("unexpected reset")
                        return
                    chunk = view[:k]
                if k == 0:
                    break
                if bytes(chunk) != stream_at(seed, got, k):
                    self.bump("mismatches")
                    self.err(f"mismatch at offset {got} of connection seed {seed}")
                    return
                got += k
                self.bump("bytes_checked", k)
                if mode == "client-reset" and got >= half:
                    _rst(s)
                    self.bump("client_resets_sent")
                    self.bump("ok")
                    return
            if mode == "server-reset":
                self.bump("short")
                self.err(f"no reset; EOF after {got} of {half} bytes")
            elif got != n:
                self.bump("short")
                self.err(f"EOF after {got} of {n} bytes")
            else:
                self.bump("ok")
        except Exception as e:  # noqa: BLE001 — counted, reported at the end
            self.err(f"{type(e).__name__}: {e}")
        finally:
            try:
                s.close()
            except OSError:
                pass


def run_client(a: argparse.Namespace) -> int:
    cl = Client(a.to, a.port)
    rnd = random.Random(a.seed)
    jobs: list[tuple[int, int, str, int]] = []
    for i in range(a.long):
        jobs.append((int(a.long_mb * 1e6), rnd.randrange(1 << 30), "normal" if i % 2 == 0 else "half",
                     0 if i % 2 == 0 else 200_000))
    modes = ["normal", "half", "server-reset", "client-reset"]
    for i in range(a.short):
        jobs.append((rnd.randrange(1, a.short_kb * 1000), rnd.randrange(1 << 30), modes[i % 4],
                     rnd.randrange(0, 20_000)))
    longs, shorts = jobs[:a.long], jobs[a.long:]
    t0 = time.monotonic()
    threads = [threading.Thread(target=cl.one, args=j) for j in longs]
    for t in threads:
        t.start()
    # Short connections churn beside the long ones, `parallel` at a time.
    sem = threading.Semaphore(a.parallel)

    def short(j: tuple[int, int, str, int]) -> None:
        try:
            cl.one(*j)
        finally:
            sem.release()
    st = []
    for j in shorts:
        sem.acquire()
        t = threading.Thread(target=short, args=(j,))
        t.start()
        st.append(t)
    for t in threads + st:
        t.join()
    cl.stats["seconds"] = round(time.monotonic() - t0, 3)
    cl.stats["expected_ok"] = len(jobs)
    print(json.dumps(cl.stats), flush=True)
    return 0 if cl.stats["ok"] == len(jobs) and cl.stats["errors"] == 0 else 1


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m lasthop.live.proxy_load")
    sub = p.add_subparsers(dest="role", required=True)
    s = sub.add_parser("server")
    s.add_argument("--bind", default="0.0.0.0")
    s.add_argument("--port", type=int, default=7400)
    c = sub.add_parser("client")
    c.add_argument("--to", required=True)
    c.add_argument("--port", type=int, default=7400)
    c.add_argument("--long", type=int, default=2, help="long connections (each --long-mb)")
    c.add_argument("--long-mb", type=float, default=50.0)
    c.add_argument("--short", type=int, default=200, help="short connections (up to --short-kb)")
    c.add_argument("--short-kb", type=int, default=200)
    c.add_argument("--parallel", type=int, default=16)
    c.add_argument("--seed", type=int, default=1)
    a = p.parse_args(argv)
    if a.role == "server":
        serve(a.bind, a.port)
        return 0
    return run_client(a)


if __name__ == "__main__":
    sys.exit(main())
