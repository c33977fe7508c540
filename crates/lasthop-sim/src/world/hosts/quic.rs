//! QUIC connections in the cell: the simulator as host of the sans-IO endpoints of
//! `lasthop_algo::quic`.
//!
//! A QUIC flow is one connection between a client at the station and a server behind the AP,
//! carried in UDP datagrams through the same wired link, AP queues and contended channel as
//! everything else (the client's ACK-only datagrams cost uplink airtime and are aggregated).
//! The client opens the connection at the flow's start (a full handshake, or 0-RTT with
//! `zero_rtt`), sends a request on a new stream and the server answers with `bytes` on that
//! stream (0 = an endless download). A web page (`objects`, sizes in bytes) loads like a
//! browser's first view: the first object (the HTML) alone, then one request stream per other
//! object, all at once, as soon as the HTML is complete; the page-load time is the last byte
//! of the last object. Profiles (Manzoor et al., WCNC 2019): "quic" = Chromium's
//! defaults (TCP_ACKING, pacing on); "bquic" = Bursty QUIC (ACK_DECIMATION, pacing off).
//!
//! Connection lifecycles (`connections` > 1): after a transfer's last byte the client waits
//! `idle` and opens a new connection (a new endpoint pair) for the next transfer. With `idle`
//! below the idle timeout the client closes the finished connection at once
//! (CONNECTION_CLOSE); otherwise the connection ends by the idle timeout. The server endpoint
//! of a new connection is created when its first datagram (the client hello) arrives: a 1-RTT
//! connection starts with the default window, or with the history-based window
//! `max(default, average)` when the flow keeps a history ("Access Latency Reduction in the QUIC
//! Protocol Based on Communication History", Algorithm 1; `control::cwnd_history`, one store
//! per flow keyed by the client's station). The server records its cwnd into the store when a
//! connection closes (idle timeout included) and, for a 0-RTT reconnect (`reconnect = "0rtt"`,
//! a resumed session whose client does not close), when the complete client hello arrives
//! while it still holds the previous connection — whose window the new connection then
//! continues with (the paper's Figure 6a). With `history_events = "close_every_hello"` it also
//! records its window when a 1-RTT handshake's second client flight arrives (the client's
//! Finished here; gQUIC's complete client hello after the reject), as Algorithm 1's "receive
//! complete client hello message" reads on proto-quic: the new connection's initial window. With `history_guard = "rtt"` a history-raised
//! window is replaced by the default before the first response byte if the handshake RTT
//! exceeds the smallest recorded RTT by more than 25 % (`cwnd_history::rtt_guard`). Each
//! datagram is tagged with its connection, so stragglers of an old connection are discarded.
//!
//! Datagrams live in a slab while they cross the network (`Pkt::tcp` holds `TcpMeta::Quic`
//! with the slot); the slot is freed when the original arrives or is dropped (a Block Ack
//! retransmission copy never owns it).

use crate::world::{PktRef, TcpMeta, World};
use crate::engine::TimerId;
use crate::metrics::LogHistogram;
use crate::spec::{FlowSpec, History, HistoryEvents, HistoryGuard, Profile, Reconnect};
use lasthop_algo::control::ack_policy::{AckPolicyConfig, AckPolicyKind};
use lasthop_algo::control::cwnd_history::{self, CwndHistory, CwndHistoryConfig, GuardVerdict, HistoryAverage, HistoryEvent};
use lasthop_algo::quic::{CloseReason, Datagram, Event, QuicConfig, QuicConnection, Role};
use lasthop_core::{Duration, Instant};
use std::collections::BTreeMap;

/// Bytes of the client's request (an HTTP/3 GET with headers).
pub(in crate::world) const REQUEST_BYTES: u64 = 300;

/// RTT growth over the recorded minimum beyond which the "rtt" guard reverts to the default
/// window: 25 %, a standing queue of a quarter of the base RTT.
const GUARD_TOLERANCE: f64 = 0.25;

/// One connection of a flow and its transfer.
struct Transfer {
    start: Instant,
    handshake: Option<Instant>,
    completed: Option<Instant>,
    zero_rtt: bool,
    initial_cwnd: u64,
    guard_reverted_from: Option<u64>,
    packets_sent: u64,
    packets_lost: u64,
    end: Option<&'static str>,
    end_cwnd: Option<u64>,
}

impl Transfer {
    fn new(start: Instant, zero_rtt: bool) -> Self {
        Transfer {
            start,
            handshake: None,
            completed: None,
            zero_rtt,
            initial_cwnd: 0,
            guard_reverted_from: None,
            packets_sent: 0,
            packets_lost: 0,
            end: None,
            end_cwnd: None,
        }
    }
}

/// One connection and its host-side bookkeeping.
pub(in crate::world) struct QuicFlow {
    pub client: QuicConnection,
    pub server: QuicConnection,
    pub profile: &'static str,
    /// Response size per object, in the order the client requests them (one object of 0 =
    /// endless); object k is requested on the client's k-th stream (id 4k).
    pub objects: Vec<u64>,
    pub total_bytes: u64,
    /// Objects whose last byte arrived.
    pub finished: usize,
    pub app_delivered: u64,
    pub completed_at: Option<Instant>,
    pub handshake_at: Option<Instant>,
    /// Time between consecutive datagrams the server sends (after warm-up).
    pub ipt: LogHistogram,
    last_server_send: Option<Instant>,
    /// Server RTT samples and lost packets already put in the time series.
    rtt_samples: u64,
    lost: u64,
    /// The server's cwnd when it left slow start, and when.
    pub ss_exit: Option<(u64, Instant)>,
    timer: TimerId,
    // --- connection lifecycle ---
    client_cfg: QuicConfig,
    server_cfg: QuicConfig,
    connections: u32,
    idle: Duration,
    reconnect_0rtt: bool,
    /// The client's current connection, and the one the server endpoint belongs to.
    conn: u32,
    server_conn: u32,
    next_start: Option<Instant>,
    transfers: Vec<Transfer>,
    /// Connection of each datagram in flight (only with more than one connection).
    slot_conn: BTreeMap<u32, u32>,
    /// The client's identity in the history: its station.
    peer: u32,
    history: Option<CwndHistory<u32>>,
    history_average: &'static str,
    guard: bool,
    /// Observe the window at the complete client hello of 1-RTT handshakes too
    /// (`history_events = "close_every_hello"`).
    every_hello: bool,
    guard_reverted: u64,
    /// Smallest RTT seen by the connections whose window was recorded.
    hist_min_rtt: Option<Duration>,
    /// A history-raised window the guard checks when the request arrives.
    guard_pending: Option<u64>,
}

fn config(f: &FlowSpec, role: Role) -> QuicConfig {
    let base = if f.profile == Profile::Bquic { QuicConfig::bursty(role) } else { QuicConfig::new(role) };
    let mut cfg = QuicConfig {
        max_udp_payload: f.packet_size - lasthop_algo::quic::packet::IP_UDP_OVERHEAD,
        initial_cwnd_packets: f.initial_cwnd,
        zero_rtt: f.zero_rtt,
        idle_timeout: Duration::from_nanos(f.idle_timeout_ns),
        ecn: f.ecn,
        ..base
    };
    if let Some(p) = f.pacing {
        cfg.pacing = p;
    }
    cfg.pacer = lasthop_algo::quic::pacer::PacerMode::from_name(&f.pacer).expect("a pacer of PACERS");
    // "cubic" keeps the model's Chromium CUBIC; another controller replaces it with its
    // defaults (Prague: L4S over QUIC).
    if f.cc != crate::spec::QUIC_CONGESTION_CONTROLS[0] {
        cfg.cc = f.cc.config();
    }
    if let Some(a) = &f.ack_policy {
        let kind = match a.as_str() {
            "ack_decimation" => AckPolicyKind::AckDecimation,
            "ack_frequency" => AckPolicyKind::AckFrequency,
            _ => AckPolicyKind::TcpAcking,
        };
        cfg.ack_policy = AckPolicyConfig::with_kind(kind);
    }
    cfg
}

/// Build the two endpoints of a QUIC flow from its spec (validated by `Spec::problems`).
pub(in crate::world) fn new_flow(f: &FlowSpec, timer: TimerId) -> QuicFlow {
    let now = Instant(f.start_ns);
    let (client_cfg, server_cfg) = (config(f, Role::Client), config(f, Role::Server));
    let client = QuicConnection::new(client_cfg, now).expect("QUIC parameters validated with the spec");
    let server = QuicConnection::new(server_cfg, now).expect("QUIC parameters validated with the spec");
    let average = if f.history == History::Ewma { HistoryAverage::Ewma } else { HistoryAverage::Mean };
    let history = (f.history != History::Off)
        .then(|| CwndHistoryConfig { average, ..CwndHistoryConfig::default() }.build().expect("default history parameters are valid"));
    let mut first = Transfer::new(now, f.zero_rtt);
    first.initial_cwnd = server_cfg.initial_cwnd();
    QuicFlow {
        client,
        server,
        profile: f.profile.as_str(),
        objects: if f.objects.is_empty() { vec![f.bytes] } else { f.objects.clone() },
        total_bytes: if f.objects.is_empty() { f.bytes } else { f.objects.iter().sum() },
        finished: 0,
        app_delivered: 0,
        completed_at: None,
        handshake_at: None,
        ipt: LogHistogram::new(),
        last_server_send: None,
        rtt_samples: 0,
        lost: 0,
        ss_exit: None,
        timer,
        client_cfg,
        server_cfg,
        connections: f.connections.max(1),
        idle: Duration::from_nanos(f.idle_ns),
        reconnect_0rtt: f.reconnect == Reconnect::ZeroRtt,
        conn: 0,
        server_conn: 0,
        next_start: None,
        transfers: vec![first],
        slot_conn: BTreeMap::new(),
        peer: f.station,
        history,
        history_average: if f.history == History::Ewma { "ewma" } else { "mean" },
        guard: f.history_guard == HistoryGuard::Rtt,
        every_hello: f.history_events == HistoryEvents::EveryHello,
        guard_reverted: 0,
        hist_min_rtt: None,
        guard_pending: None,
    }
}

impl QuicFlow {
    fn multi(&self) -> bool {
        self.connections > 1
    }

    /// The transfer of the current connection completed at `now`: plan the next connection
    /// and close this one unless it is left to the idle timeout (or kept for a 0-RTT resume).
    fn on_transfer_done(&mut self, now: Instant) {
        if !self.multi() {
            return;
        }
        if self.conn + 1 < self.connections {
            self.next_start = Some(now + self.idle);
        }
        if !self.reconnect_0rtt && self.idle < self.client_cfg.idle_timeout {
            self.client.close(now, 0);
        }
    }

    /// The client opens its next connection and sends the request.
    fn start_connection(&mut self, now: Instant) {
        self.next_start = None;
        self.conn += 1;
        let cfg = QuicConfig { zero_rtt: self.reconnect_0rtt, ..self.client_cfg };
        self.client = QuicConnection::new(cfg, now).expect("QUIC parameters validated with the spec");
        let id = self.client.open_stream();
        self.client.stream_write(id, REQUEST_BYTES, true).expect("a new stream takes data");
        self.finished = 0;
        self.transfers.push(Transfer::new(now, self.reconnect_0rtt));
    }

    /// The server's endpoint of its current connection ends (`how`); its window is recorded
    /// into the history at `event`, if given.
    fn end_server(&mut self, now: Instant, how: &'static str, event: Option<HistoryEvent>) {
        let t = &mut self.transfers[self.server_conn as usize];
        if t.end.is_some() {
            return;
        }
        let (cwnd, st) = (self.server.cwnd(), self.server.stats());
        t.end = Some(how);
        t.end_cwnd = Some(cwnd);
        t.packets_sent = st.packets_sent;
        t.packets_lost = st.packets_lost;
        if let (Some(ev), Some(h)) = (event, self.history.as_mut()) {
            h.record(now, &self.peer, ev, cwnd);
            if self.server.rtt().samples() > 0 {
                let r = self.server.min_rtt();
                self.hist_min_rtt = Some(self.hist_min_rtt.map_or(r, |m| m.min(r)));
            }
        }
    }

    /// The first datagram of connection `conn` (the client hello) reached the server at
    /// `now`: the server drops the previous connection's state and sets the new one up.
    fn accept_connection(&mut self, now: Instant, conn: u32) {
        let default = self.server_cfg.initial_cwnd();
        let old_open = !self.server.is_closed();
        let zero_rtt = self.transfers[conn as usize].zero_rtt;
        let iw = if zero_rtt {
            if old_open {
                // A complete client hello while the state is kept: observe the window (§4,
                // Figure 6a) and carry on with it.
                let w = self.server.cwnd();
                self.end_server(now, "replaced", None);
                if let Some(h) = self.history.as_mut() {
                    h.record(now, &self.peer, HistoryEvent::ZeroRttHandshake, w);
                }
                w
            } else {
                default
            }
        } else {
            if old_open {
                self.end_server(now, "replaced", Some(HistoryEvent::ConnectionClosed));
            }
            // An inchoate client hello: Max(cwnd_default, cwnd_average).
            match self.history.as_mut() {
                Some(h) => h.initial_window(now, &self.peer, default),
                None => default,
            }
        };
        self.guard_pending = (self.guard && !zero_rtt && iw > default).then_some(iw);
        let cfg = QuicConfig { zero_rtt, initial_cwnd_bytes: Some(iw), ..self.server_cfg };
        self.server = QuicConnection::new(cfg, now).expect("QUIC parameters validated with the spec");
        self.server_conn = conn;
        self.rtt_samples = 0;
        self.lost = 0;
        self.transfers[conn as usize].initial_cwnd = iw;
    }

    /// The request of a guarded connection arrived: check the history window against the
    /// handshake's RTT sample before the first response byte.
    fn apply_guard(&mut self, now: Instant) {
        let Some(w) = self.guard_pending.take() else { return };
        if self.server.rtt().samples() == 0 {
            return;
        }
        let default = self.server_cfg.initial_cwnd();
        let (win, verdict) = cwnd_history::rtt_guard(w, default, self.hist_min_rtt, self.server.min_rtt(), GUARD_TOLERANCE);
        if verdict == GuardVerdict::Reverted && self.server.set_initial_window(now, win) {
            let t = &mut self.transfers[self.server_conn as usize];
            t.guard_reverted_from = Some(w);
            t.initial_cwnd = win;
            self.guard_reverted += 1;
        }
    }
}

impl World {
    pub fn is_quic(&self, f: usize) -> bool {
        self.quic[f].is_some()
    }

    /// End-of-run summary of flow `f` if it is QUIC.
    pub fn quic_out(&self, f: usize) -> Option<crate::output::QuicOut> {
        let q = self.quic[f].as_deref()?;
        let start = self.flows[f].start;
        let s = q.server.stats();
        let c = q.client.stats();
        Some(crate::output::QuicOut {
            profile: q.profile.to_string(),
            bytes: q.total_bytes,
            completion_ns: q.completed_at.map(|t| (t - start).as_nanos()),
            handshake_ns: q.handshake_at.map(|t| (t - start).as_nanos()),
            app_bytes_delivered: q.app_delivered,
            packets_sent: s.packets_sent,
            packets_lost: s.packets_lost,
            spurious_losses: s.spurious_losses,
            pto_count: s.pto_count,
            slow_start_delay_exits: s.slow_start_delay_exits,
            client_acks_sent: c.acks_sent,
            client_datagrams_sent: c.datagrams_sent,
            cwnd_bytes: q.server.cwnd(),
            slow_start_exit_cwnd: q.ss_exit.map(|(c, _)| c),
            slow_start_exit_ns: q.ss_exit.map(|(_, t)| (t - start).as_nanos()),
            srtt_ns: q.server.srtt().as_nanos(),
            min_rtt_ns: q.server.min_rtt().as_nanos(),
            inter_packet_ns: q.ipt.summary(),
            transfers: if q.multi() { self.quic_transfers(q) } else { Vec::new() },
            history: q.history.as_ref().map(|h| {
                let st = h.stats();
                let kept = h.peek(self.q.now(), &q.peer);
                crate::output::HistoryOut {
                    average: q.history_average.to_string(),
                    guard: if q.guard { "rtt" } else { "none" }.to_string(),
                    records_zero_rtt: st.records_zero_rtt,
                    records_full_handshake: st.records_full_handshake,
                    records_close: st.records_close,
                    records_idle_timeout: st.records_idle_timeout,
                    hits: st.hits,
                    raised: st.raised,
                    guard_reverted: q.guard_reverted,
                    average_bytes: kept.map(|p| p.average(h.config().average)),
                    samples: kept.map_or(0, |p| p.samples()),
                }
            }),
            ecn: (self.spec.flows[f].ecn != lasthop_algo::ecn::EcnMode::Off).then(|| crate::output::QuicEcnOut {
                mode: crate::spec::names::ecn_name(self.spec.flows[f].ecn),
                ce_marked: self.ce_marked[f],
                ce_reported: s.ecn_ce_reported,
                congestion_events: s.ecn_congestion_events,
                validation_failed: s.ecn_failed,
            }),
        })
    }

    fn quic_transfers(&self, q: &QuicFlow) -> Vec<crate::output::TransferOut> {
        let start = q.transfers[0].start;
        let live = q.server.stats();
        q.transfers
            .iter()
            .enumerate()
            .map(|(k, t)| {
                let current = k as u32 == q.server_conn && t.end.is_none();
                crate::output::TransferOut {
                    start_ns: (t.start - start).as_nanos(),
                    completion_ns: t.completed.map(|c| (c - t.start).as_nanos()),
                    handshake_ns: t.handshake.map(|c| (c - t.start).as_nanos()),
                    zero_rtt: t.zero_rtt,
                    initial_cwnd_bytes: t.initial_cwnd,
                    guard_reverted_from: t.guard_reverted_from,
                    packets_sent: if current { live.packets_sent } else { t.packets_sent },
                    packets_lost: if current { live.packets_lost } else { t.packets_lost },
                    bytes: q.total_bytes,
                    end: t.end.map(str::to_string),
                    end_cwnd_bytes: t.end_cwnd,
                }
            })
            .collect()
    }

    /// Start a QUIC flow: the client sends its Initial (and, with 0-RTT, the request).
    pub(in crate::world) fn quic_start(&mut self, f: u32) {
        let now = self.q.now();
        let q = self.quic[f as usize].as_deref_mut().expect("quic flow");
        let id = q.client.open_stream();
        q.client.stream_write(id, REQUEST_BYTES, true).expect("a new stream takes data");
        self.quic_pump(f, now);
    }

    /// Let both endpoints of flow `f` act on their events, send what they may and re-arm
    /// their timer.
    fn quic_pump(&mut self, f: u32, now: Instant) {
        self.quic_pump_since(f, now, now);
    }

    /// As `quic_pump`, for endpoints that got what they answer at `made` ≤ `now`: the client's
    /// datagrams arrive at its station's MAC then (`station_enqueue_since`).
    fn quic_pump_since(&mut self, f: u32, now: Instant, made: Instant) {
        let fi = f as usize;
        let counted = now >= self.warmup;
        // Application events.
        loop {
            let q = self.quic[fi].as_deref_mut().expect("quic flow");
            if let Some(ev) = q.server.poll_event() {
                match ev {
                    Event::StreamFinished { id } => {
                        if id == 0 {
                            q.apply_guard(now);
                        }
                        // A whole request is in: answer it with its object.
                        if let Some(&size) = q.objects.get((id / 4) as usize) {
                            let (n, fin) = if size == 0 { (u64::MAX / 4, false) } else { (size, true) };
                            let _ = q.server.stream_write(id, n, fin);
                        }
                    }
                    Event::HandshakeComplete if q.every_hello && !q.transfers[q.server_conn as usize].zero_rtt => {
                        // The client's second flight of a 1-RTT handshake, where gQUIC's
                        // complete client hello arrives: Algorithm 1 observes the window.
                        let w = q.server.cwnd();
                        if let Some(h) = q.history.as_mut() {
                            h.record(now, &q.peer, HistoryEvent::FullHandshake, w);
                        }
                    }
                    Event::Closed { reason: CloseReason::IdleTimeout } => {
                        q.end_server(now, "idle_timeout", Some(HistoryEvent::IdleTimeout));
                    }
                    Event::Closed { .. } => q.end_server(now, "close", Some(HistoryEvent::ConnectionClosed)),
                    _ => {}
                }
                continue;
            }
            let Some(ev) = q.client.poll_event() else { break };
            match ev {
                Event::HandshakeComplete => {
                    if q.conn == 0 {
                        q.handshake_at = Some(now);
                    }
                    q.transfers[q.conn as usize].handshake = Some(now);
                }
                Event::StreamData { bytes, .. } => {
                    q.app_delivered += bytes;
                    if counted {
                        self.counters[fi].delivered_bytes += bytes;
                        self.ts.goodput.add(fi, now.as_nanos(), bytes as f64 * 8.0);
                    }
                }
                Event::StreamFinished { id } => {
                    q.finished += 1;
                    if id == 0 {
                        // The HTML is in: request every other object at once.
                        for _ in 1..q.objects.len() {
                            let s = q.client.open_stream();
                            let _ = q.client.stream_write(s, REQUEST_BYTES, true);
                        }
                    }
                    let k = q.conn as usize;
                    if q.finished == q.objects.len() && q.transfers[k].completed.is_none() {
                        q.transfers[k].completed = Some(now);
                        if k == 0 {
                            q.completed_at = Some(now);
                        }
                        q.on_transfer_done(now);
                    }
                }
                _ => {}
            }
        }
        // Datagrams: the server's into the wired link, the client's into the station's queue.
        if now < self.flows[fi].stop {
            let sta = self.flows[fi].station;
            loop {
                let q = self.quic[fi].as_deref_mut().expect("quic flow");
                let Some(dg) = q.server.poll_transmit(now) else { break };
                if counted {
                    if let Some(t) = q.last_server_send {
                        q.ipt.record((now - t).as_nanos());
                    }
                }
                q.last_server_send = Some(now);
                let p = self.quic_packet(f, dg, now, true);
                self.wired_send(p, crate::world::Dir::Down, now);
            }
            loop {
                let q = self.quic[fi].as_deref_mut().expect("quic flow");
                let Some(dg) = q.client.poll_transmit(now) else { break };
                let p = self.quic_packet(f, dg, now, false);
                self.station_enqueue_since(sta, p, now, made);
            }
        }
        self.quic_arm(f, now);
    }

    /// A packet carrying datagram `dg` of flow `f`; server datagrams count as offered load.
    fn quic_packet(&mut self, f: u32, dg: Datagram, now: Instant, to_client: bool) -> PktRef {
        let len = dg.ip_len();
        let slot = match self.quic_free.pop() {
            Some(s) => {
                self.quic_dgrams[s as usize] = Some(dg);
                s
            }
            None => {
                self.quic_dgrams.push(Some(dg));
                self.quic_dgrams.len() as u32 - 1
            }
        };
        let ecn = self.quic_dgrams[slot as usize].as_ref().map_or(Default::default(), |d| d.ecn);
        let mut p = if to_client { self.alloc(f, len, now) } else { self.alloc_control(f, len, now) };
        self.set_ecn(&mut p, ecn);
        self.pkts[p.id as usize].tcp = TcpMeta::Quic { slot, to_client };
        let q = self.quic[f as usize].as_deref_mut().expect("quic flow");
        if q.multi() {
            let conn = if to_client { q.server_conn } else { q.conn };
            q.slot_conn.insert(slot, conn);
        }
        p
    }

    /// Free the datagram of a packet that is dropped for good (not a retransmission copy).
    pub(in crate::world) fn quic_drop(&mut self, p: PktRef) {
        let pk = self.pkts[p.id as usize];
        if let TcpMeta::Quic { slot, .. } = pk.tcp {
            if !pk.ghost {
                if let Some(dg) = self.quic_dgrams[slot as usize].take() {
                    self.quic_free.push(slot);
                    if let Some(q) = self.quic[pk.flow as usize].as_deref_mut() {
                        q.slot_conn.remove(&slot);
                        q.client.recycle(dg);
                    }
                }
            }
        }
    }

    fn quic_arm(&mut self, f: u32, now: Instant) {
        let q = self.quic[f as usize].as_deref_mut().expect("quic flow");
        let Some(t) = [q.client.poll_timeout(), q.server.poll_timeout(), q.next_start].into_iter().flatten().min() else {
            return;
        };
        let timer = q.timer;
        self.q.set_timer(timer, t.max(now));
    }

    pub(in crate::world) fn on_quic_timer(&mut self, f: u32) {
        let now = self.q.now();
        {
            let q = self.quic[f as usize].as_deref_mut().expect("quic flow");
            q.client.handle_timeout(now);
            q.server.handle_timeout(now);
            if q.next_start.is_some_and(|t| t <= now) {
                q.start_connection(now);
            }
        }
        self.quic_pump(f, now);
    }

    /// A QUIC datagram reached its endpoint (the server, or the flow's station) at `t`.
    pub(in crate::world) fn quic_arrive(&mut self, p: PktRef, t: Instant) {
        let pk = self.pkts[p.id as usize];
        let TcpMeta::Quic { slot, to_client } = pk.tcp else { unreachable!("not a QUIC packet") };
        let f = pk.flow;
        let fi = f as usize;
        let mut dg = self.quic_dgrams[slot as usize].take().expect("datagram in flight");
        self.quic_free.push(slot);
        // The datagram as the network delivers it: its ECN field may now say CE.
        dg.ecn = pk.ecn;
        {
            // With several connections: a new connection's first datagram sets up the server's
            // endpoint; a datagram of an earlier connection finds no state and is discarded.
            let q = self.quic[fi].as_deref_mut().expect("quic flow");
            if q.multi() {
                let conn = q.slot_conn.remove(&slot).unwrap_or(0);
                if !to_client && conn > q.server_conn {
                    q.accept_connection(t, conn);
                }
                if conn != if to_client { q.conn } else { q.server_conn } {
                    q.client.recycle(dg);
                    self.release(p);
                    return;
                }
            }
        }
        if to_client && t >= self.warmup {
            let d = (t - pk.created).as_nanos();
            let c = &mut self.counters[fi];
            c.delivered_packets += 1;
            c.delay.record(d);
            self.ts.delay_sum.add(fi, t.as_nanos(), d as f64);
            self.ts.delay_n.add(fi, t.as_nanos(), 1.0);
        }
        {
            let q = self.quic[fi].as_deref_mut().expect("quic flow");
            if to_client {
                q.client.handle_datagram(t, &dg);
                q.client.recycle(dg);
            } else {
                q.server.handle_datagram(t, &dg);
                q.server.recycle(dg);
                let tn = t.as_nanos();
                let (cwnd, bif, pace) = (q.server.cwnd(), q.server.bytes_in_flight(), q.server.pacing_rate());
                let (samples, rtt) = (q.server.rtt().samples(), q.server.rtt().latest());
                let new_rtt = samples > q.rtt_samples;
                q.rtt_samples = samples;
                if q.ss_exit.is_none() && q.server_conn == 0 && !q.server.in_slow_start() {
                    q.ss_exit = Some((cwnd, t));
                }
                let lost = q.server.stats().packets_lost;
                let new_lost = lost - q.lost;
                q.lost = lost;
                self.ts.cwnd.set(fi, tn, cwnd as f64);
                self.ts.inflight.set(fi, tn, bif as f64);
                self.ts.pacing.set(fi, tn, pace as f64 * 8.0);
                if new_rtt {
                    self.ts.rtt_sum.add(fi, tn, rtt.as_nanos() as f64);
                    self.ts.rtt_n.add(fi, tn, 1.0);
                }
                if new_lost > 0 {
                    self.ts.retx.add(fi, tn, new_lost as f64);
                }
            }
        }
        self.release(p);
        let now = self.q.now();
        self.quic_pump_since(f, now.max(t), t.min(now));
    }
}
