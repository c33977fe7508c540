"""An independent HTTP/3 peer for the interoperability tests, on aioquic (PyPI):

    python aioquic_peer.py serve DIR PORT      # serves DIR over HTTP/3 on 127.0.0.1:PORT
    python aioquic_peer.py get URL OUTFILE      # downloads URL into OUTFILE

Self-signed certificate made at start with `cryptography` (an aioquic dependency).
"""

from __future__ import annotations

import asyncio
import datetime
import os
import sys
import tempfile
from urllib.parse import urlparse

from aioquic.asyncio import connect, serve
from aioquic.asyncio.protocol import QuicConnectionProtocol
from aioquic.h3.connection import H3_ALPN, H3Connection
from aioquic.h3.events import DataReceived, HeadersReceived
from aioquic.quic.configuration import QuicConfiguration
from aioquic.quic.events import QuicEvent


def _cert(dir_: str) -> tuple[str, str]:
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "localhost")])
    now = datetime.datetime.now(datetime.timezone.utc)
    cert = (x509.CertificateBuilder().subject_name(name).issuer_name(name).public_key(key.public_key())
            .serial_number(x509.random_serial_number()).not_valid_before(now - datetime.timedelta(days=1))
            .not_valid_after(now + datetime.timedelta(days=30)).sign(key, hashes.SHA256()))
    c, k = os.path.join(dir_, "c.pem"), os.path.join(dir_, "k.pem")
    open(c, "wb").write(cert.public_bytes(serialization.Encoding.PEM))
    open(k, "wb").write(key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                          serialization.NoEncryption()))
    return c, k


class _Server(QuicConnectionProtocol):
    root = "."

    def __init__(self, *a, **kw) -> None:
        super().__init__(*a, **kw)
        self._h3 = H3Connection(self._quic)

    def quic_event_received(self, event: QuicEvent) -> None:
        for e in self._h3.handle_event(event):
            if isinstance(e, HeadersReceived):
                path = dict(e.headers).get(b":path", b"/").decode()
                f = os.path.join(self.root, os.path.basename(path))
                if os.path.isfile(f):
                    body = open(f, "rb").read()
                    self._h3.send_headers(e.stream_id, [(b":status", b"200"), (b"content-length", str(len(body)).encode())])
                    self._h3.send_data(e.stream_id, body, end_stream=True)
                else:
                    self._h3.send_headers(e.stream_id, [(b":status", b"404")], end_stream=True)
        self.transmit()


async def _serve(root: str, port: int) -> None:
    cfg = QuicConfiguration(is_client=False, alpn_protocols=H3_ALPN, max_datagram_frame_size=None)
    # The certificate is read into memory and its files removed at once: the server is stopped
    # by a signal, which would leave them behind.
    with tempfile.TemporaryDirectory() as t:
        cfg.load_cert_chain(*_cert(t))
    _Server.root = root
    await serve("127.0.0.1", port, configuration=cfg, create_protocol=_Server)
    print("ready", flush=True)
    await asyncio.Future()


class _Client(QuicConnectionProtocol):
    def __init__(self, *a, **kw) -> None:
        super().__init__(*a, **kw)
        self._h3 = H3Connection(self._quic)
        self.body = bytearray()
        self.status = None
        self.done = asyncio.get_event_loop().create_future()

    def quic_event_received(self, event: QuicEvent) -> None:
        for e in self._h3.handle_event(event):
            if isinstance(e, HeadersReceived):
                self.status = dict(e.headers).get(b":status")
                if e.stream_ended and not self.done.done():
                    self.done.set_result(None)
            elif isinstance(e, DataReceived):
                self.body += e.data
                if e.stream_ended and not self.done.done():
                    self.done.set_result(None)

    async def get(self, url: str) -> bytes:
        u = urlparse(url)
        sid = self._quic.get_next_available_stream_id()
        self._h3.send_headers(sid, [(b":method", b"GET"), (b":scheme", b"https"), (b":authority", u.netloc.encode()),
                                    (b":path", (u.path or "/").encode())], end_stream=True)
        self.transmit()
        await asyncio.wait_for(self.done, 60)
        return bytes(self.body)


async def _get(url: str, out: str) -> int:
    u = urlparse(url)
    cfg = QuicConfiguration(is_client=True, alpn_protocols=H3_ALPN, verify_mode=0)
    async with connect(u.hostname, u.port, configuration=cfg, create_protocol=_Client) as c:
        body = await c.get(url)  # type: ignore[attr-defined]
        status = c.status  # type: ignore[attr-defined]
    open(out, "wb").write(body)
    return 0 if status == b"200" else 1


def main() -> int:
    if sys.argv[1] == "serve":
        asyncio.run(_serve(sys.argv[2], int(sys.argv[3])))
        return 0
    return asyncio.run(_get(sys.argv[2], sys.argv[3]))


if __name__ == "__main__":
    sys.exit(main())
