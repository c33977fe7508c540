//! `lasthop quic serve DIR`: an HTTP/3 file server (GET only) with the two mechanisms of the
//! module doc. One thread, one UDP socket, non-blocking; quiche does QUIC, TLS and HTTP/3.

use super::history::{self, Store};
use super::{Profile, MAX_DATAGRAM};
use crate::tools::daemon::{self, Daemon, Parts, Service};
use crate::tools::metrics::{render, Family};
use hmac::{Hmac, Mac};
use lasthop_algo::control::cwnd_history::{rtt_guard, GuardVerdict, HistoryEvent};
use lasthop_algo::quic::pacer::{PacerMode, PacingSender};
use lasthop_core::{Duration as SimDuration, Instant as SimInstant};
use quiche::h3::NameValue;
use sha2::Sha256;
use std::collections::BTreeMap;
use std::io::Read;
use std::net::{SocketAddr, UdpSocket};
use std::path::PathBuf;
use std::time::{Duration, Instant};

pub struct ServeOpts {
    pub dir: PathBuf,
    /// Serve files that a symbolic link inside `dir` leads to outside it.
    pub follow_symlinks: bool,
    pub listen: SocketAddr,
    pub profile: Profile,
    /// The paced profile's schedule (`--pacer`): one packet per gap, or Chromium's v39 lumps.
    pub pacer: PacerMode,
    pub history: Option<PathBuf>,
    pub prefix: u8,
    pub ewma: bool,
    pub size: usize,
    pub lifetime: Duration,
    /// Also record a connection's window when its handshake completes (`--history-events
    /// close_every_hello`).
    pub every_hello: bool,
    pub guard: bool,
    pub iw: usize,
    pub cert: Option<(String, String)>,
    pub record: Option<PathBuf>,
    pub metrics: Option<String>,
    pub stats_every: Option<Duration>,
    pub duration: Option<Duration>,
    pub quiet: bool,
}

/// The RTT guard's tolerance: 25 % above the recorded min RTT, and at least 2 ms — on a
/// path of a few ms, a host's scheduling jitter alone moves one RTT sample by a millisecond,
/// while a queue that matters adds more.
const GUARD_TOLERANCE: f64 = 0.25;
const GUARD_MIN_MARGIN_NS: f64 = 2e6;

fn guard_tolerance(recorded: Option<SimDuration>) -> f64 {
    match recorded.filter(|r| !r.is_zero()) {
        Some(r) => GUARD_TOLERANCE.max(GUARD_MIN_MARGIN_NS / r.as_nanos() as f64),
        None => GUARD_TOLERANCE,
    }
}
/// Chromium's unpaced burst at start and after quiescence (packets).
const INITIAL_BURST: u32 = 10;
const SAMPLE_EVERY: Duration = Duration::from_millis(10);
const MAX_SAMPLES: usize = 100_000;

struct Resp {
    headers: Option<Vec<quiche::h3::Header>>,
    file: Option<std::fs::File>,
    buf: Vec<u8>,
    off: usize,
    eof: bool,
}

struct Conn {
    conn: quiche::Connection,
    h3: Option<quiche::h3::Connection>,
    peer: SocketAddr,
    key: String,
    iw_packets: usize,
    verdict: &'static str,
    handshake_rtt_us: Option<u64>,
    started: Instant,
    resps: BTreeMap<u64, Resp>,
    requests: u64,
    body_bytes: u64,
    pacer: PacingSender,
    pace_until: Option<Instant>,
    last_sent: Instant,
    last_loss: Instant,
    lost_bytes: u64,
    series: Vec<[u64; 4]>,
    next_sample: Instant,
    /// Its window went to the history when its handshake completed.
    hello_recorded: bool,
}

#[derive(Default)]
struct Counters {
    accepted: u64,
    closed: u64,
    retries: u64,
    bad_tokens: u64,
    requests: u64,
    not_found: u64,
    body_bytes: u64,
    history_hits: u64,
    history_raised: u64,
    guard_reverts: u64,
    datagrams_in: u64,
    datagrams_out: u64,
}

type HmacSha256 = Hmac<Sha256>;

fn tag(key: &[u8], parts: &[&[u8]]) -> [u8; 32] {
    let mut m = <HmacSha256 as Mac>::new_from_slice(key).expect("any key length");
    for p in parts {
        m.update(p);
    }
    m.finalize().into_bytes().into()
}

fn random<const N: usize>() -> [u8; N] {
    let mut b = [0u8; N];
    // SAFETY: getrandom writes up to N bytes into `b`.
    unsafe { libc::getrandom(b.as_mut_ptr() as *mut libc::c_void, N, 0) };
    b
}

fn addr_bytes(a: &SocketAddr) -> Vec<u8> {
    let mut v = match a.ip() {
        std::net::IpAddr::V4(x) => x.octets().to_vec(),
        std::net::IpAddr::V6(x) => x.octets().to_vec(),
    };
    v.extend_from_slice(&a.port().to_be_bytes());
    v
}

/// A Retry token: issue time (our monotonic clock, ns), the original DCID, and an HMAC over
/// both and the client's address (RFC 9000 §8.1.2: the token must be bound to the address and
/// unforgeable).
fn mint_token(key: &[u8], t_ns: u64, odcid: &[u8], from: &SocketAddr) -> Vec<u8> {
    let mut t = Vec::with_capacity(9 + odcid.len() + 16);
    t.extend_from_slice(&t_ns.to_le_bytes());
    t.push(odcid.len() as u8);
    t.extend_from_slice(odcid);
    let m = tag(key, &[&t, &addr_bytes(from)]);
    t.extend_from_slice(&m[..16]);
    t
}

fn check_token(key: &[u8], token: &[u8], from: &SocketAddr) -> Option<(u64, Vec<u8>)> {
    if token.len() < 9 + 16 {
        return None;
    }
    let n = token[8] as usize;
    if token.len() != 9 + n + 16 {
        return None;
    }
    let m = tag(key, &[&token[..9 + n], &addr_bytes(from)]);
    if m[..16] != token[9 + n..] {
        return None;
    }
    Some((u64::from_le_bytes(token[..8].try_into().ok()?), token[9..9 + n].to_vec()))
}

/// The TLS context: the given certificate and key, or a self-signed P-256 certificate.
fn tls(cert: &Option<(String, String)>) -> Result<boring::ssl::SslContextBuilder, String> {
    use boring::ssl::{SslContextBuilder, SslFiletype, SslMethod};
    let mut b = SslContextBuilder::new(SslMethod::tls()).map_err(|e| e.to_string())?;
    match cert {
        Some((c, k)) => {
            b.set_certificate_chain_file(c).map_err(|e| format!("--cert = {c:?}: not a PEM certificate chain ({e})"))?;
            b.set_private_key_file(k, SslFiletype::PEM).map_err(|e| format!("--key = {k:?}: not a PEM private key ({e})"))?;
            b.check_private_key().map_err(|_| format!("--key = {k:?}: does not match --cert"))?;
        }
        None => {
            let (cert, key) = self_signed().map_err(|e| format!("self-signed certificate: {e}"))?;
            b.set_certificate(&cert).map_err(|e| e.to_string())?;
            b.set_private_key(&key).map_err(|e| e.to_string())?;
        }
    }
    Ok(b)
}

type CertKey = (boring::x509::X509, boring::pkey::PKey<boring::pkey::Private>);

fn self_signed() -> Result<CertKey, boring::error::ErrorStack> {
    use boring::{asn1::Asn1Time, bn::BigNum, ec, hash::MessageDigest, nid::Nid, pkey::PKey, x509};
    let group = ec::EcGroup::from_curve_name(Nid::X9_62_PRIME256V1)?;
    let key = PKey::from_ec_key(ec::EcKey::generate(&group)?)?;
    let mut name = x509::X509NameBuilder::new()?;
    name.append_entry_by_nid(Nid::COMMONNAME, "lasthop quic")?;
    let name = name.build();
    let mut b = x509::X509::builder()?;
    b.set_version(2)?;
    let serial = BigNum::from_slice(&random::<16>())?.to_asn1_integer()?;
    b.set_serial_number(&serial)?;
    b.set_subject_name(&name)?;
    b.set_issuer_name(&name)?;
    let (not_before, not_after) = (Asn1Time::days_from_now(0)?, Asn1Time::days_from_now(365)?);
    b.set_not_before(&not_before)?;
    b.set_not_after(&not_after)?;
    b.set_pubkey(&key)?;
    b.sign(&key, MessageDigest::sha256())?;
    Ok((b.build(), key))
}

fn config(o: &ServeOpts, iw_packets: usize) -> Result<quiche::Config, String> {
    let mut c = quiche::Config::with_boring_ssl_ctx_builder(quiche::PROTOCOL_VERSION, tls(&o.cert)?).map_err(|e| e.to_string())?;
    c.set_application_protos(quiche::h3::APPLICATION_PROTOCOL).map_err(|e| e.to_string())?;
    c.set_max_idle_timeout(10_000);
    c.set_max_recv_udp_payload_size(MAX_DATAGRAM);
    c.set_max_send_udp_payload_size(MAX_DATAGRAM);
    c.set_initial_max_data(100_000_000);
    c.set_initial_max_stream_data_bidi_local(10_000_000);
    c.set_initial_max_stream_data_bidi_remote(10_000_000);
    c.set_initial_max_stream_data_uni(1_000_000);
    c.set_initial_max_streams_bidi(200);
    c.set_initial_max_streams_uni(100);
    c.set_disable_active_migration(true);
    c.set_cc_algorithm_name("cubic").map_err(|e| e.to_string())?;
    c.set_initial_congestion_window_packets(iw_packets);
    // quiche 0.30 paces only its BBR ports; CUBIC's `SendInfo::at` is always now. The quic
    // profile is paced here, by the simulator's Chromium pacing sender.
    c.enable_pacing(false);
    c.enable_early_data();
    Ok(c)
}

fn sim(t0: Instant, t: Instant) -> SimInstant {
    SimInstant::from_nanos(t.saturating_duration_since(t0).as_nanos() as u64)
}

/// The running server.
struct Server<'a> {
    o: &'a ServeOpts,
    root: Docroot,
    sock: UdpSocket,
    local: SocketAddr,
    store: Store,
    t0: Instant,
    /// Derives our connection IDs from the client's first (so a retried Initial finds its
    /// connection), and keys the Retry tokens.
    seed: [u8; 32],
    token_key: [u8; 32],
    /// One quiche configuration per initial window in use.
    configs: BTreeMap<usize, quiche::Config>,
    h3_config: quiche::h3::Config,
    conns: BTreeMap<Vec<u8>, Conn>,
    k: Counters,
    buf: Vec<u8>,
    out: Vec<u8>,
    next_stats: Option<Instant>,
    next_save: Instant,
    next_metrics: Instant,
}

pub fn run(o: &ServeOpts) -> Result<i32, String> {
    // Everything that can be wrong with the input is checked before the socket is bound.
    tls(&o.cert)?;
    let root = Docroot::new(&o.dir, o.follow_symlinks).map_err(|e| format!("{}: {e}", o.dir.display()))?;
    let t0 = Instant::now();
    let mut store = Store::new(history::config(o.ewma, o.size, o.lifetime), o.prefix, o.history.clone());
    let loaded = store.load(sim(t0, t0))?;
    let sock = UdpSocket::bind(o.listen).map_err(|e| format!("--listen = {}: {e}", o.listen))?;
    sock.set_nonblocking(true).map_err(|e| e.to_string())?;
    let local = sock.local_addr().map_err(|e| e.to_string())?;
    let exporter = daemon::start_metrics(o.metrics.as_deref())?;
    let record = match &o.record {
        Some(p) => Some(std::fs::OpenOptions::new().create(true).append(true).open(p).map_err(|e| format!("--record = {}: {e}", p.display()))?),
        None => None,
    };
    let mut d = Daemon::start("quic serve", o.quiet, Parts { run_for: o.duration, exporter, record, state: None })?;
    let h3_config = quiche::h3::Config::new().map_err(|e| e.to_string())?;
    let mut s = Server {
        o, root, sock, local, store, t0, seed: random(), token_key: random(), configs: BTreeMap::new(), h3_config, conns: BTreeMap::new(),
        k: Counters::default(), buf: vec![0u8; 65535], out: vec![0u8; MAX_DATAGRAM],
        next_stats: o.stats_every.map(|d| t0 + d), next_save: t0 + Duration::from_secs(1), next_metrics: t0,
    };
    if !o.quiet {
        let pacer = if o.pacer == PacerMode::default() { String::new() } else { format!(", {} pacing", o.pacer.as_str()) };
        eprintln!("quic serve: {} on {local} ({}{pacer}, initial window {} packets{}{})", o.dir.display(), o.profile.name(), o.iw,
                  o.history.as_ref().map_or(String::new(), |p| format!(", history {} ({loaded} entries, /{} keys)", p.display(), o.prefix)),
                  if o.guard { ", RTT guard" } else { "" });
    }
    d.run(&mut s)?;
    s.finish();
    d.finish();
    Ok(0)
}

impl Server<'_> {
    /// One datagram: to its connection, or a new connection (after a Retry with the RTT
    /// guard); then the requests it completed are answered.
    fn on_datagram(&mut self, pkt: &mut [u8], from: SocketAddr) -> Result<(), String> {
        let Ok(hdr) = quiche::Header::from_slice(pkt, quiche::MAX_CONN_ID_LEN) else { return Ok(()) };
        let derived = tag(&self.seed, &[&hdr.dcid])[..quiche::MAX_CONN_ID_LEN].to_vec();
        let id = if self.conns.contains_key(hdr.dcid.as_ref()) {
            hdr.dcid.to_vec()
        } else if self.conns.contains_key(&derived) {
            derived
        } else {
            match self.accept(&hdr, derived, from)? {
                Some(id) => id,
                None => return Ok(()),
            }
        };
        let Some(c) = self.conns.get_mut(&id) else { return Ok(()) };
        if c.conn.recv(pkt, quiche::RecvInfo { to: self.local, from }).is_err() {
            return Ok(());
        }
        if (c.conn.is_in_early_data() || c.conn.is_established()) && c.h3.is_none() {
            match quiche::h3::Connection::with_transport(&mut c.conn, &self.h3_config) {
                Ok(h) => c.h3 = Some(h),
                Err(_) => {
                    let _ = c.conn.close(true, 0x101, b"h3");
                }
            }
        }
        serve_conn(c, &self.root, &mut self.k);
        Ok(())
    }

    /// A client's Initial for no connection of ours: version negotiation, or (RTT guard) a
    /// Retry or the check of its token, then the initial window and a new connection.
    fn accept(&mut self, hdr: &quiche::Header, derived: Vec<u8>, from: SocketAddr) -> Result<Option<Vec<u8>>, String> {
        let (o, t0, now, out) = (self.o, self.t0, Instant::now(), &mut self.out);
        if hdr.ty != quiche::Type::Initial {
            return Ok(None);
        }
        if !quiche::version_is_supported(hdr.version) {
            if let Ok(n) = quiche::negotiate_version(&hdr.scid, &hdr.dcid, out) {
                let _ = self.sock.send_to(&out[..n], from);
            }
            return Ok(None);
        }
        let token = hdr.token.clone().unwrap_or_default();
        let (odcid, rtt) = if o.guard {
            if token.is_empty() {
                let t_ns = now.duration_since(t0).as_nanos() as u64;
                let new_token = mint_token(&self.token_key, t_ns, &hdr.dcid, &from);
                let scid = quiche::ConnectionId::from_ref(&derived);
                if let Ok(n) = quiche::retry(&hdr.scid, &hdr.dcid, &scid, &new_token, hdr.version, out) {
                    let _ = self.sock.send_to(&out[..n], from);
                    self.k.retries += 1;
                }
                return Ok(None);
            }
            let Some((t_ns, odcid)) = check_token(&self.token_key, &token, &from) else {
                self.k.bad_tokens += 1;
                return Ok(None);
            };
            let rtt = (now.duration_since(t0).as_nanos() as u64).saturating_sub(t_ns);
            (Some(odcid), Some(rtt))
        } else {
            (None, None)
        };
        let key = self.store.key(from.ip());
        let (packets, verdict) = self.initial_window(now, &key, rtt);
        if let std::collections::btree_map::Entry::Vacant(e) = self.configs.entry(packets) {
            e.insert(config(o, packets)?);
        }
        let cfg = self.configs.get_mut(&packets).expect("just made");
        // With a Retry, the client now uses the DCID we chose (`derived` of its first).
        let scid_bytes = if o.guard { hdr.dcid.to_vec() } else { derived };
        let scid = quiche::ConnectionId::from_vec(scid_bytes.clone());
        let odcid = odcid.map(quiche::ConnectionId::from_vec);
        let Ok(conn) = quiche::accept(&scid, odcid.as_ref(), self.local, from, cfg) else { return Ok(None) };
        self.k.accepted += 1;
        self.conns.insert(scid_bytes.clone(), Conn {
            conn, h3: None, peer: from, key, iw_packets: packets, verdict, handshake_rtt_us: rtt.map(|r| r / 1000),
            started: now, resps: BTreeMap::new(), requests: 0, body_bytes: 0,
            pacer: PacingSender::new(INITIAL_BURST, MAX_DATAGRAM as u64, sim(t0, now)).with_mode(o.pacer), pace_until: None, last_sent: now,
            last_loss: now.checked_sub(Duration::from_secs(1)).unwrap_or(now), lost_bytes: 0,
            series: Vec::new(), next_sample: now, hello_recorded: false,
        });
        Ok(Some(scid_bytes))
    }

    /// A new connection's initial window in packets: history's max(default, average), then
    /// the RTT guard; and where it came from.
    #[allow(clippy::ptr_arg)] // the history's keys are Strings
    fn initial_window(&mut self, now: Instant, key: &String, rtt: Option<u64>) -> (usize, &'static str) {
        let (store, k, o, t0) = (&mut self.store, &mut self.k, self.o, self.t0);
        let default_bytes = (o.iw * MAX_DATAGRAM) as u64;
        let hist_w = store.hist.initial_window(sim(t0, now), key, default_bytes);
        if store.hist.peek(sim(t0, now), key).is_some() {
            k.history_hits += 1;
        }
        let (w, verdict) = match (o.history.is_some(), rtt) {
            (false, _) => (default_bytes, "default"),
            (true, Some(r)) => match rtt_guard(hist_w, default_bytes, store.min_rtt(key), SimDuration::from_nanos(r), guard_tolerance(store.min_rtt(key))) {
                (w, GuardVerdict::Reverted) => (w, "reverted"),
                (w, GuardVerdict::Kept) => (w, "history"),
                (w, GuardVerdict::NotRaised) => (w, if w > default_bytes { "history" } else { "default" }),
            },
            (true, None) => (hist_w, if hist_w > default_bytes { "history" } else { "default" }),
        };
        match verdict {
            "history" => k.history_raised += 1,
            "reverted" => k.guard_reverts += 1,
            _ => {}
        }
        ((w as usize).div_ceil(MAX_DATAGRAM).max(o.iw), verdict)
    }

    /// Timers, sends and samples of every connection.
    fn tend(&mut self, now: Instant) {
        let (o, t0) = (self.o, self.t0);
        for c in self.conns.values_mut() {
            if c.conn.timeout_instant().is_some_and(|t| t <= now) {
                c.conn.on_timeout();
            }
            if o.every_hello && o.history.is_some() && !c.hello_recorded && c.conn.is_established() {
                // The handshake completed (the client's Finished: gQUIC's complete client
                // hello): Algorithm 1 observes the window, before any response is sent.
                c.hello_recorded = true;
                if let Some(p) = c.conn.path_stats().next() {
                    self.store.record(sim(t0, now), &c.key, HistoryEvent::FullHandshake, p.cwnd as u64, None);
                }
            }
            serve_conn(c, &self.root, &mut self.k);
            send(c, o.profile, t0, now, &self.sock, &mut self.out, &mut self.k);
            if now >= c.next_sample && c.series.len() < MAX_SAMPLES && c.conn.is_established() {
                if let Some(p) = c.conn.path_stats().next() {
                    c.series.push([now.duration_since(c.started).as_micros() as u64, p.cwnd as u64, p.rtt.as_micros() as u64, p.sent_bytes]);
                }
                c.next_sample = now + SAMPLE_EVERY;
            }
        }
    }

    /// Closed connections: their cwnd to the history, a record line each.
    fn close_finished(&mut self, now: Instant, d: &mut Daemon) {
        let (o, t0) = (self.o, self.t0);
        let closed: Vec<Vec<u8>> = self.conns.iter().filter(|(_, c)| c.conn.is_closed()).map(|(i, _)| i.clone()).collect();
        for id in closed {
            let c = self.conns.remove(&id).expect("listed");
            self.k.closed += 1;
            let p = c.conn.path_stats().next();
            let cwnd = p.as_ref().map_or(0, |p| p.cwnd as u64);
            let min_rtt = p.as_ref().and_then(|p| p.min_rtt).map(|d| d.as_nanos() as u64);
            let event = if c.conn.is_timed_out() { HistoryEvent::IdleTimeout } else { HistoryEvent::ConnectionClosed };
            if o.history.is_some() && cwnd > 0 && c.body_bytes > 0 {
                // The guard compares like with like: a Retry-measured RTT against the smallest
                // Retry-measured RTT recorded (it includes the client's turnaround, which the
                // transport's min RTT does not); without the guard, the transport's.
                let base_rtt = c.handshake_rtt_us.map(|u| u * 1000).or(min_rtt);
                self.store.record(sim(t0, now), &c.key, event, cwnd, base_rtt);
            }
            let s = c.conn.stats();
            d.write_record(&serde_json::json!({
                "peer": c.peer.to_string(), "key": c.key, "profile": o.profile.name(), "initial_window_packets": c.iw_packets,
                "window_from": c.verdict, "handshake_rtt_us": c.handshake_rtt_us,
                "seconds": now.duration_since(c.started).as_secs_f64(), "requests": c.requests, "body_bytes": c.body_bytes,
                "sent_packets": s.sent, "lost_packets": s.lost, "retransmitted_packets": s.retrans,
                "cwnd_at_close": cwnd, "min_rtt_us": min_rtt.map(|r| r / 1000), "closed_by": if c.conn.is_timed_out() { "idle timeout" } else { "close" },
                "series": {"t_us": c.series.iter().map(|x| x[0]).collect::<Vec<_>>(), "cwnd": c.series.iter().map(|x| x[1]).collect::<Vec<_>>(),
                           "rtt_us": c.series.iter().map(|x| x[2]).collect::<Vec<_>>(), "sent_bytes": c.series.iter().map(|x| x[3]).collect::<Vec<_>>()},
            }));
        }
    }

    /// Every second the history file and the metrics; the live view when due.
    fn housekeeping(&mut self, now: Instant, d: &Daemon) {
        if now >= self.next_save {
            if let Some(e) = self.store.save(sim(self.t0, now)) {
                if !self.o.quiet {
                    eprintln!("quic serve: history not saved: {e}");
                }
            }
            self.next_save = now + Duration::from_secs(1);
        }
        if d.has_metrics() && now >= self.next_metrics {
            d.publish(|| metrics_text(&self.k, self.conns.len(), self.store.hist.len()));
            self.next_metrics = now + Duration::from_secs(1);
        }
        if let Some(t) = self.next_stats.filter(|&t| now >= t) {
            let k = &self.k;
            if !self.o.quiet {
                eprintln!("quic serve: {:.0} s | {} open, {} accepted, {} closed | {} requests, {:.1} MB | history {} hits, {} raised, {} reverted",
                          now.duration_since(self.t0).as_secs_f64(), self.conns.len(), k.accepted, k.closed, k.requests, k.body_bytes as f64 / 1e6,
                          k.history_hits, k.history_raised, k.guard_reverts);
            }
            self.next_stats = Some(t + self.o.stats_every.unwrap_or(Duration::from_secs(1)));
        }
    }

    /// Close what is open, give the closes a moment to leave, keep the history.
    fn finish(mut self) {
        for c in self.conns.values_mut() {
            let _ = c.conn.close(true, 0x100, b"server stopping");
            while let Ok((n, info)) = c.conn.send(&mut self.out) {
                let _ = self.sock.send_to(&self.out[..n], info.to);
            }
        }
        let now = Instant::now();
        for c in self.conns.values() {
            let p = c.conn.path_stats().next();
            if self.o.history.is_some() && c.body_bytes > 0 {
                if let Some(p) = p {
                    let base_rtt = c.handshake_rtt_us.map(|u| u * 1000).or(p.min_rtt.map(|d| d.as_nanos() as u64));
                    self.store.record(sim(self.t0, now), &c.key, HistoryEvent::ConnectionClosed, p.cwnd as u64, base_rtt);
                }
            }
        }
        if let Some(e) = self.store.save(sim(self.t0, now)) {
            eprintln!("quic serve: history not saved: {e}");
        }
        if !self.o.quiet {
            eprintln!("quic serve: stopped: {} connections, {} requests, {:.1} MB", self.k.accepted, self.k.requests, self.k.body_bytes as f64 / 1e6);
        }
    }
}

impl Service for Server<'_> {
    fn round(&mut self, d: &mut Daemon) -> Result<bool, String> {
        let mut buf = std::mem::take(&mut self.buf);
        let mut received = Ok(());
        while let Ok((len, from)) = self.sock.recv_from(&mut buf) {
            self.k.datagrams_in += 1;
            received = self.on_datagram(&mut buf[..len], from);
            if received.is_err() {
                break;
            }
        }
        self.buf = buf;
        received?;
        let now = Instant::now();
        self.tend(now);
        self.close_finished(now, d);
        self.housekeeping(now, d);
        // Sleep until a datagram, a connection's timer, a paced departure or housekeeping.
        let mut wake = now + Duration::from_millis(100);
        for c in self.conns.values() {
            if let Some(t) = c.conn.timeout_instant() {
                wake = wake.min(t);
            }
            if let Some(t) = c.pace_until {
                wake = wake.min(t);
            }
            if c.conn.is_established() {
                wake = wake.min(c.next_sample);
            }
        }
        let end = d.until_end().map(|r| now + r);
        for t in [self.next_stats, end, Some(self.next_save)].into_iter().flatten() {
            wake = wake.min(t);
        }
        let w = wake.saturating_duration_since(Instant::now());
        if !w.is_zero() {
            crate::sys::poll::wait_readable(&[&self.sock], w);
        }
        Ok(true)
    }
}

/// Send what `c` has: everything at once (bquic), or through Chromium's pacing sender (quic).
fn send(c: &mut Conn, profile: Profile, t0: Instant, now: Instant, sock: &UdpSocket, out: &mut [u8], k: &mut Counters) {
    loop {
        let (ready, rate, recovery, cwnd, quiescent) = match (profile, c.conn.path_stats().next()) {
            (Profile::Quic, Some(p)) => {
                let srtt = SimDuration::from_nanos(p.rtt.as_nanos() as u64);
                // quiche reports neither bytes in flight nor recovery: quiescence is
                // "nothing sent for an RTT", recovery "a loss within the last RTT".
                if p.lost_bytes > c.lost_bytes {
                    c.lost_bytes = p.lost_bytes;
                    c.last_loss = now;
                }
                let recovery = now.duration_since(c.last_loss) < p.rtt;
                let quiescent = now.duration_since(c.last_sent) >= p.rtt;
                let rate = c.pacer.mode().rate(p.cwnd as u64, Some(srtt), p.startup_exit.is_none(), recovery);
                let bif = if quiescent { 0 } else { 1 };
                (c.pacer.ready(sim(t0, now), bif, rate), rate, recovery, p.cwnd as u64, quiescent)
            }
            _ => (true, 0, false, 0, false),
        };
        if !ready {
            c.pace_until = Some(t0 + Duration::from_nanos(c.pacer.next_send_time().as_nanos()));
            break;
        }
        let (n, info) = match c.conn.send(out) {
            Ok(v) => v,
            Err(_) => break,
        };
        if sock.send_to(&out[..n], info.to).is_ok() {
            k.datagrams_out += 1;
        }
        if profile == Profile::Quic {
            c.pacer.on_sent(sim(t0, now), n as u32, if quiescent { 0 } else { 1 }, recovery, cwnd, rate);
        }
        c.last_sent = now;
        c.pace_until = None;
    }
}

/// Read requests and write responses as far as the connection's flow control allows.
fn serve_conn(c: &mut Conn, root: &Docroot, k: &mut Counters) {
    let Some(h3) = c.h3.as_mut() else { return };
    loop {
        match h3.poll(&mut c.conn) {
            Ok((sid, quiche::h3::Event::Headers { list, .. })) => {
                k.requests += 1;
                c.requests += 1;
                let _ = c.conn.stream_shutdown(sid, quiche::Shutdown::Read, 0);
                let r = respond(root, &list, k);
                c.resps.insert(sid, r);
            }
            Ok((sid, quiche::h3::Event::Reset(_))) => {
                c.resps.remove(&sid);
            }
            Ok(_) => {}
            Err(quiche::h3::Error::Done) => break,
            Err(_) => {
                let _ = c.conn.close(true, 0x101, b"h3 error");
                return;
            }
        }
    }
    let mut done = Vec::new();
    for (&sid, r) in c.resps.iter_mut() {
        if let Some(h) = r.headers.as_ref() {
            match h3.send_response(&mut c.conn, sid, h, false) {
                Ok(()) => r.headers = None,
                Err(quiche::h3::Error::StreamBlocked) => continue,
                Err(_) => {
                    done.push(sid);
                    continue;
                }
            }
        }
        loop {
            if r.off == r.buf.len() && !r.eof {
                r.buf.clear();
                r.off = 0;
                match r.file.as_mut() {
                    Some(f) => {
                        r.buf.resize(256 << 10, 0);
                        let n = f.read(&mut r.buf).unwrap_or(0);
                        r.buf.truncate(n);
                        r.eof = n == 0;
                    }
                    None => r.eof = true,
                }
            }
            let fin = r.eof && r.off == r.buf.len();
            match h3.send_body(&mut c.conn, sid, &r.buf[r.off..], fin) {
                Ok(n) => {
                    r.off += n;
                    c.body_bytes += n as u64;
                    k.body_bytes += n as u64;
                    if fin {
                        done.push(sid);
                        break;
                    }
                    if n == 0 && !(r.eof && r.off == r.buf.len()) {
                        break;
                    }
                }
                Err(quiche::h3::Error::Done) => break,
                Err(_) => {
                    done.push(sid);
                    break;
                }
            }
        }
    }
    for sid in done {
        c.resps.remove(&sid);
    }
}

/// The directory served: its real path (symbolic links resolved), and whether a file may
/// resolve outside it.
pub struct Docroot {
    pub real: PathBuf,
    pub follow_symlinks: bool,
}

impl Docroot {
    pub fn new(dir: &std::path::Path, follow_symlinks: bool) -> std::io::Result<Docroot> {
        Ok(Docroot { real: std::fs::canonicalize(dir)?, follow_symlinks })
    }

    /// Whether `file` (below the directory by its name) may be served: what it resolves to,
    /// through any symbolic link, must lie inside the directory, unless links are followed.
    fn admits(&self, file: &std::path::Path) -> bool {
        self.follow_symlinks || std::fs::canonicalize(file).is_ok_and(|r| r.starts_with(&self.real))
    }
}

fn respond(root: &Docroot, req: &[quiche::h3::Header], k: &mut Counters) -> Resp {
    let dir = root.real.as_path();
    let mut path = None;
    let mut method = None;
    for h in req {
        match h.name() {
            b":path" => path = std::str::from_utf8(h.value()).ok().map(str::to_string),
            b":method" => method = Some(h.value().to_vec()),
            _ => {}
        }
    }
    let hdr = |status: &str, len: u64| vec![
        quiche::h3::Header::new(b":status", status.as_bytes()),
        quiche::h3::Header::new(b"server", b"lasthop"),
        quiche::h3::Header::new(b"content-length", len.to_string().as_bytes()),
    ];
    let fail = |status: &str, k: &mut Counters| {
        k.not_found += 1;
        let body = format!("{status}\n").into_bytes();
        Resp { headers: Some(hdr(status, body.len() as u64)), file: None, buf: body, off: 0, eof: true }
    };
    if method.as_deref() != Some(b"GET") {
        return fail("405", k);
    }
    let Some(p) = path else { return fail("400", k) };
    let p = p.split(['?', '#']).next().unwrap_or("/");
    // Only plain components below DIR: no "..", no absolute jumps, no hidden files.
    let mut file = dir.to_path_buf();
    for comp in p.split('/').filter(|s| !s.is_empty()) {
        if comp == ".." || comp == "." || comp.starts_with('.') || comp.contains('\\') {
            return fail("404", k);
        }
        file.push(comp);
    }
    if file.is_dir() {
        file.push("index.html");
    }
    if !root.admits(&file) {
        return fail("404", k);
    }
    match std::fs::File::open(&file).and_then(|f| f.metadata().map(|m| (f, m))) {
        Ok((f, m)) if m.is_file() => Resp { headers: Some(hdr("200", m.len())), file: Some(f), buf: Vec::new(), off: 0, eof: false },
        _ => fail("404", k),
    }
}

fn metrics_text(k: &Counters, open: usize, hist: usize) -> String {
    let one = |v: f64| vec![(String::new(), v)];
    render(&[
        Family { name: "lasthop_quic_connections_open", help: "connections open", kind: "gauge", samples: one(open as f64) },
        Family { name: "lasthop_quic_connections_accepted_total", help: "connections accepted", kind: "counter", samples: one(k.accepted as f64) },
        Family { name: "lasthop_quic_requests_total", help: "HTTP/3 requests", kind: "counter", samples: one(k.requests as f64) },
        Family { name: "lasthop_quic_body_bytes_total", help: "response body bytes sent", kind: "counter", samples: one(k.body_bytes as f64) },
        Family { name: "lasthop_quic_history_entries", help: "clients in the history", kind: "gauge", samples: one(hist as f64) },
        Family { name: "lasthop_quic_history_hits_total", help: "new connections with a history entry", kind: "counter", samples: one(k.history_hits as f64) },
        Family { name: "lasthop_quic_history_raised_total", help: "new connections whose window history raised", kind: "counter", samples: one(k.history_raised as f64) },
        Family { name: "lasthop_quic_guard_reverts_total", help: "windows the RTT guard reverted to the default", kind: "counter", samples: one(k.guard_reverts as f64) },
        Family { name: "lasthop_quic_retries_total", help: "stateless retries sent (RTT guard)", kind: "counter", samples: one(k.retries as f64) },
    ])
}
