//! `lasthop quic get URL...`: an HTTP/3 client whose ACKs follow the simulator's receiver ACK
//! policy (`lasthop_algo::control::ack_policy`): quiche writes an ACK frame only when the
//! application calls `send()`, so after the handshake this host calls it only when the policy
//! says an ACK is due (or quiche's own loss-recovery timer fires, or a request goes out).
//! Each datagram received counts as one ack-eliciting packet in order: quiche does not tell
//! the application which frames a packet carried nor its number (a server's response packets
//! all carry STREAM frames; a reordered packet is then acknowledged with the next ACK instead
//! of at once — a difference from RFC 9000 §13.2.1 that the policies' own tests cover).

use super::{Profile, MAX_DATAGRAM};
use crate::tools::daemon::{Daemon, Parts, Service};
use lasthop_algo::control::ack_policy::{AckDecision, AckPolicy, AckPolicyConfig, AckPolicyKind};
use lasthop_core::{Duration as SimDuration, Instant as SimInstant};
use quiche::h3::NameValue;
use std::collections::BTreeMap;
use std::io::Write;
use std::net::{SocketAddr, ToSocketAddrs, UdpSocket};
use std::path::PathBuf;
use std::time::{Duration, Instant};

pub struct Url {
    pub host: String,
    pub addr: SocketAddr,
    pub path: String,
    pub text: String,
}

impl Url {
    pub fn parse(s: &str) -> Result<Url, String> {
        let rest = s.strip_prefix("https://").ok_or("not an https:// URL")?;
        let (auth, path) = match rest.find('/') {
            Some(i) => (&rest[..i], &rest[i..]),
            None => (rest, "/"),
        };
        if auth.is_empty() {
            return Err("no host".into());
        }
        let with_port = if auth.starts_with('[') {
            if auth.contains("]:") { auth.to_string() } else { format!("{auth}:443") }
        } else if auth.contains(':') {
            auth.to_string()
        } else {
            format!("{auth}:443")
        };
        let addr = with_port.to_socket_addrs().map_err(|e| format!("cannot resolve {auth}: {e}"))?.next().ok_or("no address")?;
        let host = with_port.rsplit_once(':').map_or(auth, |(h, _)| h).trim_matches(['[', ']']).to_string();
        Ok(Url { host, addr, path: path.to_string(), text: s.to_string() })
    }
}

pub struct GetOpts {
    /// Requested at once, on one connection.
    pub urls: Vec<Url>,
    /// Requested (at once) when every one of `urls` is complete: a page's objects after its HTML.
    pub later: Vec<Url>,
    pub page: Option<String>,
    pub profile: Profile,
    pub out_dir: Option<PathBuf>,
    pub result: Option<PathBuf>,
    pub timeout: Duration,
    pub stats_every: Option<Duration>,
    pub quiet: bool,
    /// How the server's certificate is checked.
    pub trust: Trust,
}

/// How `quic get` checks the server's certificate (as curl: verified by default).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Trust {
    /// Against the system's CA certificates (the first bundle of [`SYSTEM_CA_FILES`] that exists).
    System,
    /// Against the CA certificates (PEM) in this file only.
    CaFile(PathBuf),
    /// Not at all (`--insecure`, for lab servers with a self-signed certificate).
    Insecure,
}

/// Where distributions keep the system's CA bundle (Debian/Ubuntu, Fedora/RHEL, Alpine/OpenWrt).
pub const SYSTEM_CA_FILES: &[&str] = &["/etc/ssl/certs/ca-certificates.crt", "/etc/pki/tls/certs/ca-bundle.crt", "/etc/ssl/cert.pem"];

impl Trust {
    /// Configure quiche: the peer is verified (chain and name, from `quiche::connect`'s server
    /// name) unless `Insecure`.
    fn apply(&self, cfg: &mut quiche::Config) -> Result<(), String> {
        let file = match self {
            Trust::Insecure => {
                cfg.verify_peer(false);
                return Ok(());
            }
            Trust::CaFile(f) => f.clone(),
            Trust::System => match SYSTEM_CA_FILES.iter().map(PathBuf::from).find(|p| p.is_file()) {
                Some(f) => f,
                None => return Err(format!("no system CA certificates ({}): give --ca FILE, or --insecure for a lab server", SYSTEM_CA_FILES.join(", "))),
            },
        };
        cfg.verify_peer(true);
        let path = file.to_str().ok_or_else(|| format!("--ca = {}: not a UTF-8 path", file.display()))?;
        cfg.load_verify_locations_from_file(path).map_err(|e| format!("CA certificates {path}: {e}"))
    }
}

impl Trust {
    /// For a URL whose host is an IP address (not checked by the TLS stack, which matches DNS
    /// names): the verified certificate must name that address (RFC 2818 §3.1, RFC 6125
    /// §1.7.2: an iPAddress subjectAltName).
    fn check_ip_name(&self, host: &str, der: Option<&[u8]>) -> Result<(), String> {
        let Ok(ip) = host.parse::<std::net::IpAddr>() else { return Ok(()) };
        if *self == Trust::Insecure {
            return Ok(());
        }
        let want: Vec<u8> = match ip {
            std::net::IpAddr::V4(a) => a.octets().to_vec(),
            std::net::IpAddr::V6(a) => a.octets().to_vec(),
        };
        let names = der
            .and_then(|d| boring::x509::X509::from_der(d).ok())
            .and_then(|c| c.subject_alt_names())
            .map(|s| s.iter().filter_map(|n| n.ipaddress().map(<[u8]>::to_vec)).collect::<Vec<_>>())
            .unwrap_or_default();
        if names.contains(&want) {
            Ok(())
        } else {
            Err(format!("the server's certificate was refused: it does not name the address {host} (give a URL with a name it was issued for, or --insecure for a lab server)"))
        }
    }
}

/// The one-line reason of a handshake the client's TLS refused (a TLS alert it sent: RFC 9001
/// §4.8 carries alert A as the transport error 0x100 + A).
fn tls_refusal(host: &str, e: &quiche::ConnectionError, trust: &Trust) -> Option<String> {
    if e.is_app || !(0x100..0x200).contains(&e.error_code) {
        return None;
    }
    let alert = e.error_code - 0x100;
    let what = match alert {
        42 => "bad certificate",
        43 => "unsupported certificate",
        44 => "certificate revoked",
        45 => "certificate expired",
        46 => "certificate unknown",
        48 => "unknown CA",
        51 => "signature not verified",
        _ => return Some(format!("TLS handshake with {host} failed (alert {alert})")),
    };
    let hint = match trust {
        Trust::CaFile(f) => format!("not signed by a CA of {}, or not issued for {host}", f.display()),
        _ => format!("not verified against the system's CA certificates for {host}: give --ca FILE for a private CA, or --insecure for a lab server"),
    };
    Some(format!("the server's certificate was refused ({what}): {hint}"))
}

struct Obj {
    url: usize,
    status: Option<String>,
    bytes: u64,
    ttfb: Option<Duration>,
    done: Option<Duration>,
    file: Option<std::fs::File>,
}

fn sim(t0: Instant, t: Instant) -> SimInstant {
    SimInstant::from_nanos(t.saturating_duration_since(t0).as_nanos() as u64)
}

/// The running client: one connection, its requests and what has come back.
struct Client<'a> {
    o: &'a GetOpts,
    /// The URLs, those requested first and then `later`.
    all: Vec<&'a Url>,
    files: Vec<Option<std::fs::File>>,
    sock: UdpSocket,
    local: SocketAddr,
    peer: SocketAddr,
    conn: quiche::Connection,
    h3_config: quiche::h3::Config,
    h3: Option<quiche::h3::Connection>,
    policy: AckPolicy,
    objs: BTreeMap<u64, Obj>,
    requested: bool,
    requested_later: bool,
    handshake: Option<Duration>,
    buf: Vec<u8>,
    out: Vec<u8>,
    /// Datagrams received after the handshake (each counts as one packet to the ACK policy).
    pn: u64,
    /// Whether quiche should be asked to send now.
    flush: bool,
    rtt_series: Vec<(u64, u64)>,
    next_sample: Instant,
    next_stats: Option<Instant>,
    total: u64,
    failed: Option<String>,
    t0: Instant,
    deadline: Instant,
}

/// The files the bodies are saved in (`--out-dir`, by each URL's file name).
fn out_files(o: &GetOpts, all: &[&Url]) -> Result<Vec<Option<std::fs::File>>, String> {
    let mut files = Vec::new();
    for u in all {
        files.push(match &o.out_dir {
            Some(d) => {
                let name = u.path.rsplit('/').next().filter(|n| !n.is_empty() && !n.starts_with('.')).unwrap_or("index.html");
                let p = d.join(name);
                Some(std::fs::File::create(&p).map_err(|e| format!("{}: {e}", p.display()))?)
            }
            None => None,
        });
    }
    Ok(files)
}

/// quiche's configuration of the client: HTTP/3, its limits, how the server is verified.
fn client_config(o: &GetOpts) -> Result<quiche::Config, String> {
    let mut cfg = quiche::Config::new(quiche::PROTOCOL_VERSION).map_err(|e| e.to_string())?;
    o.trust.apply(&mut cfg)?;
    cfg.set_application_protos(quiche::h3::APPLICATION_PROTOCOL).map_err(|e| e.to_string())?;
    cfg.set_max_idle_timeout(10_000);
    cfg.set_max_recv_udp_payload_size(MAX_DATAGRAM);
    cfg.set_max_send_udp_payload_size(MAX_DATAGRAM);
    cfg.set_initial_max_data(100_000_000);
    cfg.set_initial_max_stream_data_bidi_local(50_000_000);
    cfg.set_initial_max_stream_data_bidi_remote(1_000_000);
    cfg.set_initial_max_stream_data_uni(1_000_000);
    cfg.set_initial_max_streams_bidi(200);
    cfg.set_initial_max_streams_uni(100);
    cfg.set_disable_active_migration(true);
    Ok(cfg)
}

pub fn run(o: &GetOpts) -> Result<i32, String> {
    let peer = o.urls[0].addr;
    let bind: SocketAddr = if peer.is_ipv4() { "0.0.0.0:0" } else { "[::]:0" }.parse().expect("literal");
    let sock = UdpSocket::bind(bind).map_err(|e| e.to_string())?;
    sock.connect(peer).map_err(|e| format!("{}: {e}", o.urls[0].text))?;
    sock.set_nonblocking(true).map_err(|e| e.to_string())?;
    let local = sock.local_addr().map_err(|e| e.to_string())?;
    let all: Vec<&Url> = o.urls.iter().chain(o.later.iter()).collect();
    let files = out_files(o, &all)?;
    let mut cfg = client_config(o)?;
    let kind = match o.profile {
        Profile::Quic => AckPolicyKind::TcpAcking,
        Profile::Bquic => AckPolicyKind::AckDecimation,
    };
    let policy: AckPolicy = AckPolicyConfig::with_kind(kind).build().map_err(|e| format!("ack policy: {e:?}"))?;
    let scid_bytes: [u8; quiche::MAX_CONN_ID_LEN] = {
        let mut b = [0u8; quiche::MAX_CONN_ID_LEN];
        // SAFETY: getrandom writes up to len bytes into `b`.
        unsafe { libc::getrandom(b.as_mut_ptr() as *mut libc::c_void, b.len(), 0) };
        b
    };
    let scid = quiche::ConnectionId::from_ref(&scid_bytes);
    let t0 = Instant::now();
    // A DNS name is sent (SNI) and verified by the TLS stack; an address literal is neither
    // (RFC 6066 §3), its match against the certificate's iPAddress names is checked below.
    let server_name = o.urls[0].host.parse::<std::net::IpAddr>().is_err().then_some(o.urls[0].host.as_str());
    let conn = quiche::connect(server_name, &scid, local, peer, &mut cfg).map_err(|e| e.to_string())?;
    let h3_config = quiche::h3::Config::new().map_err(|e| e.to_string())?;
    let mut c = Client {
        o, all, files, sock, local, peer, conn, h3_config, h3: None, policy, objs: BTreeMap::new(), requested: false, requested_later: false,
        handshake: None, buf: vec![0u8; 65535], out: vec![0u8; MAX_DATAGRAM], pn: 0, flush: true, rtt_series: Vec::new(),
        next_sample: t0, next_stats: o.stats_every.map(|d| t0 + d), total: 0, failed: None, t0, deadline: t0 + o.timeout,
    };
    let mut d = Daemon::start("quic get", o.quiet, Parts::default())?;
    d.run(&mut c)?;
    let code = c.finish(kind.name());
    d.finish();
    code
}

impl Client<'_> {
    /// The datagrams waiting; after the handshake each goes to the ACK policy, and an ACK it
    /// says is due leaves before the next datagram is read.
    fn receive(&mut self) {
        let t0 = self.t0;
        while let Ok(n) = self.sock.recv(&mut self.buf) {
            let now = Instant::now();
            if self.conn.recv(&mut self.buf[..n], quiche::RecvInfo { to: self.local, from: self.peer }).is_err() {
                continue;
            }
            if self.conn.is_established() && self.handshake.is_some() {
                self.pn += 1;
                if self.policy.on_packet(sim(t0, now), self.pn, true, false) == AckDecision::AckNow && send_all(&mut self.conn, &self.sock, &mut self.out) {
                    self.policy.on_ack_sent(sim(t0, Instant::now()));
                }
            } else {
                self.flush = true; // Initial and Handshake packets are acknowledged at once
            }
        }
    }

    /// Phase 1: the URLs given (a page's HTML); phase 2, once they are complete: the rest.
    fn request(&mut self) -> Result<(), String> {
        let n = self.o.urls.len();
        let phase1_done = self.requested && self.objs.values().filter(|x| x.url < n).all(|x| x.done.is_some());
        let want: Option<std::ops::Range<usize>> = if !self.requested {
            Some(0..n)
        } else if phase1_done && !self.requested_later && !self.o.later.is_empty() {
            Some(n..self.all.len())
        } else {
            None
        };
        if let (Some(h), Some(range)) = (self.h3.as_mut(), want) {
            for i in range {
                let u = self.all[i];
                let req = [
                    quiche::h3::Header::new(b":method", b"GET"),
                    quiche::h3::Header::new(b":scheme", b"https"),
                    quiche::h3::Header::new(b":authority", u.host.as_bytes()),
                    quiche::h3::Header::new(b":path", u.path.as_bytes()),
                    quiche::h3::Header::new(b"user-agent", b"lasthop"),
                ];
                let sid = h.send_request(&mut self.conn, &req, true).map_err(|e| format!("request {}: {e}", u.text))?;
                self.objs.insert(sid, Obj { url: i, status: None, bytes: 0, ttfb: None, done: None, file: self.files[i].take() });
            }
            if self.requested {
                self.requested_later = true;
            }
            self.requested = true;
            self.flush = true;
        }
        Ok(())
    }

    /// Responses: status, body bytes (saved), completion; the connection closes when all are
    /// complete.
    fn read_responses(&mut self, now: Instant) -> Result<(), String> {
        let Some(h) = self.h3.as_mut() else { return Ok(()) };
        let (conn, objs, t0) = (&mut self.conn, &mut self.objs, self.t0);
        loop {
            match h.poll(conn) {
                Ok((sid, quiche::h3::Event::Headers { list, .. })) => {
                    if let Some(ob) = objs.get_mut(&sid) {
                        ob.status = list.iter().find(|x| x.name() == b":status").map(|x| String::from_utf8_lossy(x.value()).into_owned());
                        ob.ttfb.get_or_insert(now - t0);
                    }
                }
                Ok((sid, quiche::h3::Event::Data)) => {
                    while let Ok(n) = h.recv_body(conn, sid, &mut self.buf) {
                        if let Some(ob) = objs.get_mut(&sid) {
                            ob.bytes += n as u64;
                            self.total += n as u64;
                            if let Some(f) = ob.file.as_mut() {
                                f.write_all(&self.buf[..n]).map_err(|e| format!("writing a body: {e}"))?;
                            }
                        }
                    }
                }
                Ok((sid, quiche::h3::Event::Finished)) => {
                    if let Some(ob) = objs.get_mut(&sid) {
                        ob.done = Some(Instant::now() - t0);
                    }
                }
                Ok((sid, quiche::h3::Event::Reset(e))) => {
                    self.failed.get_or_insert(format!("stream {sid} reset by the server ({e})"));
                }
                Ok(_) => {}
                Err(quiche::h3::Error::Done) => break,
                Err(e) => {
                    self.failed.get_or_insert(format!("HTTP/3: {e}"));
                    break;
                }
            }
        }
        if objs.len() == self.all.len() && objs.values().all(|x| x.done.is_some()) && !conn.is_closed() && !conn.is_draining() {
            let _ = conn.close(true, 0x100, b"done");
            self.flush = true;
        }
        Ok(())
    }

    /// quiche's own timers (loss detection, idle), then the ACK policy's; then what is to send.
    fn timers_and_send(&mut self, now: Instant) {
        let t0 = self.t0;
        if self.conn.timeout_instant().is_some_and(|t| t <= now) {
            self.conn.on_timeout();
            self.flush = true;
        }
        if self.policy.poll_timeout().is_some_and(|t| t <= sim(t0, now)) && self.policy.handle_timeout(sim(t0, now)) {
            self.flush = true;
        }
        if !self.conn.is_established() || self.conn.is_closed() || self.conn.is_draining() {
            self.flush = true;
        }
        if self.flush {
            let sent = send_all(&mut self.conn, &self.sock, &mut self.out);
            if sent && self.conn.is_established() {
                self.policy.on_ack_sent(sim(t0, Instant::now()));
            }
            self.flush = false;
        }
    }

    /// Sleep until a datagram, quiche's timer, the ACK policy's, the live view or the deadline.
    fn wait(&self, now: Instant) {
        let mut wake = self.deadline.min(now + Duration::from_millis(100));
        if let Some(t) = self.conn.timeout_instant() {
            wake = wake.min(t);
        }
        if let Some(t) = self.policy.poll_timeout() {
            wake = wake.min(self.t0 + Duration::from_nanos(t.as_nanos()));
        }
        if let Some(t) = self.next_stats {
            wake = wake.min(t);
        }
        let d = wake.saturating_duration_since(Instant::now());
        if !d.is_zero() {
            crate::sys::poll::wait_readable(&[&self.sock], d);
        }
    }

    /// Why the download failed, if it did; the result file; the summary line. The exit code.
    fn finish(mut self, policy_name: &str) -> Result<i32, String> {
        let (o, all) = (self.o, &self.all);
        let elapsed = Instant::now() - self.t0;
        let last = self.objs.values().filter_map(|x| x.done).max();
        let all_ok = self.objs.len() == all.len() && self.objs.values().all(|x| x.done.is_some() && x.status.as_deref() == Some("200"));
        if self.failed.is_none() && !all_ok {
            self.failed = self.conn.local_error().and_then(|e| tls_refusal(&o.urls[0].host, e, &o.trust));
        }
        if self.failed.is_none() && !all_ok {
            self.failed = Some(match self.conn.peer_error() {
                Some(e) => format!("the server closed the connection (error {:#x})", e.error_code),
                None => match self.objs.values().find(|x| x.status.as_deref().is_some_and(|s| s != "200")) {
                    Some(x) => format!("{}: HTTP status {}", all[x.url].text, x.status.as_deref().unwrap_or("?")),
                    None => "no complete response".into(),
                },
            });
        }
        let (failed, total, handshake) = (&self.failed, self.total, self.handshake);
        let mut list: Vec<&Obj> = self.objs.values().collect();
        list.sort_by_key(|x| x.url);
        let stats = self.conn.stats();
        let ap = self.policy.stats();
        let doc = serde_json::json!({
            "tool": "quic get", "version": env!("CARGO_PKG_VERSION"), "profile": o.profile.name(), "server": self.peer.to_string(),
            "ok": failed.is_none(), "error": failed,
            "handshake_ms": handshake.map(|d| d.as_secs_f64() * 1e3),
            "download_ms": last.map(|d| d.as_secs_f64() * 1e3), "seconds": elapsed.as_secs_f64(),
            "bytes": total, "throughput_bps": last.map(|d| total as f64 * 8.0 / d.as_secs_f64().max(1e-9)),
            "page": o.page, "page_load_ms": o.page.as_ref().and(last).map(|d| d.as_secs_f64() * 1e3),
            "objects": list.iter().map(|x| serde_json::json!({"url": all[x.url].text, "status": x.status, "bytes": x.bytes,
                "ttfb_ms": x.ttfb.map(|d| d.as_secs_f64() * 1e3), "done_ms": x.done.map(|d| d.as_secs_f64() * 1e3)})).collect::<Vec<_>>(),
            "acks": {"policy": policy_name, "packets": ap.packets, "acks_sent": ap.acks_sent, "due_count": ap.due_count, "due_timer": ap.due_timer},
            "client": {"sent_packets": stats.sent, "recv_packets": stats.recv, "lost_packets": stats.lost},
            "rtt_series": {"t_us": self.rtt_series.iter().map(|x| x.0).collect::<Vec<_>>(), "rtt_us": self.rtt_series.iter().map(|x| x.1).collect::<Vec<_>>()},
        });
        if let Some(p) = &o.result {
            crate::sys::fs::write_atomic(p, &(serde_json::to_string_pretty(&doc).map_err(|e| e.to_string())? + "\n"))?;
        }
        // A failure is one line even with --quiet, which silences the live view and the summary.
        match failed {
            None if !o.quiet => eprintln!("quic get: {} bytes in {:.1} ms ({:.1} Mb/s), handshake {:.1} ms, {} ACKs for {} packets",
                                          total, last.unwrap_or_default().as_secs_f64() * 1e3,
                                          total as f64 * 8.0 / last.unwrap_or(elapsed).as_secs_f64().max(1e-9) / 1e6,
                                          handshake.unwrap_or_default().as_secs_f64() * 1e3, ap.acks_sent, ap.packets),
            None => {}
            Some(e) => eprintln!("quic get: failed: {e}"),
        }
        Ok(if failed.is_none() { 0 } else { 1 })
    }
}

impl Service for Client<'_> {
    fn round(&mut self, _d: &mut Daemon) -> Result<bool, String> {
        let now = Instant::now();
        if now >= self.deadline && !self.conn.is_closed() && self.failed.is_none() {
            self.failed = Some(format!("timed out after {:?}", self.o.timeout));
            let _ = self.conn.close(true, 0x100, b"timeout");
        }
        self.receive();
        let now = Instant::now();
        if self.conn.is_established() && self.handshake.is_none() {
            self.handshake = Some(now - self.t0);
            if let Err(e) = self.o.trust.check_ip_name(&self.o.urls[0].host, self.conn.peer_cert()) {
                self.failed = Some(e);
                let _ = self.conn.close(false, 0x100 + 42, b"bad certificate");
                send_all(&mut self.conn, &self.sock, &mut self.out);
                return Ok(false);
            }
        }
        if let Some(p) = self.conn.path_stats().next() {
            if let Some(m) = p.min_rtt {
                self.policy.set_min_rtt(SimDuration::from_nanos(m.as_nanos() as u64));
            }
            if now >= self.next_sample {
                self.rtt_series.push((now.duration_since(self.t0).as_micros() as u64, p.rtt.as_micros() as u64));
                self.next_sample = now + Duration::from_millis(10);
            }
        }
        if self.conn.is_established() && self.h3.is_none() {
            self.h3 = Some(quiche::h3::Connection::with_transport(&mut self.conn, &self.h3_config).map_err(|e| format!("HTTP/3: {e}"))?);
        }
        self.request()?;
        self.read_responses(now)?;
        let now = Instant::now();
        self.timers_and_send(now);
        if self.conn.is_closed() {
            return Ok(false);
        }
        if let Some(t) = self.next_stats.filter(|&t| now >= t) {
            if !self.o.quiet {
                eprintln!("quic get: {:.1} s | {:.1} MB | ACKs sent {}", now.duration_since(self.t0).as_secs_f64(), self.total as f64 / 1e6, self.policy.stats().acks_sent);
            }
            self.next_stats = Some(t + self.o.stats_every.unwrap_or(Duration::from_secs(1)));
        }
        self.wait(now);
        Ok(true)
    }

    /// A stop signal: the download ends as interrupted, the connection is closed.
    fn on_stop(&mut self, _d: &mut Daemon) -> bool {
        self.failed = Some("interrupted".into());
        let _ = self.conn.close(true, 0x100, b"interrupted");
        true
    }
}

/// Everything quiche has to send now; whether anything left.
fn send_all(conn: &mut quiche::Connection, sock: &UdpSocket, out: &mut [u8]) -> bool {
    let mut sent = false;
    while let Ok((n, _)) = conn.send(out) {
        let _ = sock.send(&out[..n]);
        sent = true;
    }
    sent
}
