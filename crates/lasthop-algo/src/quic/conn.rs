//! [`QuicConnection`]: one QUIC endpoint, sans-IO (see the module docs of [`crate::quic`]).
//!
//! The host hands it datagrams ([`QuicConnection::handle_datagram`]) and the time, takes
//! datagrams from [`QuicConnection::poll_transmit`] until it returns `None`, sleeps until
//! [`QuicConnection::poll_timeout`] (which includes the pacing release time when the pacer
//! holds data back) and then calls [`QuicConnection::handle_timeout`]; the application writes
//! streams and reads [`Event`]s. Clause references are to RFC 9000 (transport) and RFC 9002
//! (recovery, Appendix A pseudocode) unless said otherwise.

use super::packet::*;
use super::ranges::RangeSet;
use super::rtt::RttEstimator;
use super::stream::{RecvBuf, SendBuf};
use super::*;
use crate::cc::{AckInfo, AnyCc, CongestionControl, RateSample};
use crate::control::ack_policy::{AckPolicy, AckPolicyStats};
use alloc::collections::{BTreeMap, VecDeque};
use alloc::vec::Vec;
use lasthop_core::{Duration, Instant};

/// The send path: packet building, pacing and the bookkeeping of what was sent.
mod ack;
mod ecn;
mod send;

/// Retransmittable frames one packet may carry (their records are kept inline per packet).
const RETX_CAP: usize = 4;
/// Received packet-number ranges kept per space (older ones are forgotten: later copies of
/// those packets are treated as duplicates).
const MAX_RECV_RANGES: usize = 64;
/// An ACK-only sender makes every this-many-th ACK packet ack-eliciting with a PING
/// (Chromium's kMaxConsecutiveNonRetransmittablePackets + 1; RFC 9000 §13.2.4).
const PING_EVERY_ACKS: u32 = 20;
/// Recycled vectors kept.
const POOL_CAP: usize = 256;

/// What must be resent if a packet is lost (RFC 9000 §13.3).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
enum Retx {
    #[default]
    None,
    Stream { id: u64, offset: u64, len: u32, fin: bool },
    Crypto { offset: u64, len: u32, end: bool },
    MaxData,
    MaxStreamData { id: u64 },
    HandshakeDone,
    AckFrequency,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum SentState {
    Outstanding,
    Acked,
    Lost,
}

/// RFC 9002 Appendix A.1.1 sent-packet fields, plus the delivery-rate snapshot.
#[derive(Clone, Copy, Debug)]
struct SentPacket {
    pn: u64,
    time_sent: Instant,
    size: u32,
    ack_eliciting: bool,
    in_flight: bool,
    state: SentState,
    retx: [Retx; RETX_CAP],
    /// Largest packet number of the ACK frame it carried (RFC 9000 §13.2.4).
    ack_largest: Option<u64>,
    delivered: u64,
    delivered_time: Instant,
    first_sent_time: Instant,
    app_limited: bool,
    tx_in_flight: u64,
    /// Sent with an ECT codepoint (for ECN validation).
    ect: bool,
}

/// One packet-number space: sender and receiver state and the CRYPTO stream.
#[derive(Clone, Debug, Default)]
struct SpaceState {
    discarded: bool,
    next_pn: u64,
    /// Sent packets by increasing number, the first one outstanding.
    sent: VecDeque<SentPacket>,
    largest_acked: Option<u64>,
    loss_time: Option<Instant>,
    last_ack_eliciting_sent: Option<Instant>,
    eliciting_in_flight: u64,
    recv: RangeSet,
    largest_recv: Option<u64>,
    largest_recv_time: Option<Instant>,
    /// Packet numbers below this are no longer tracked (duplicates by assumption).
    ack_floor: u64,
    /// Initial/Handshake: an ack-eliciting packet awaits its immediate ACK.
    ack_now: bool,
    /// Initial/Handshake: ack-eliciting packets received since the last ACK.
    unacked_eliciting: bool,
    crypto_send: SendBuf,
    crypto_recv: RecvBuf,
    crypto_done: bool,
    /// ECN counts of the packets received in this space (RFC 9000 §13.4.1).
    ecn_recv: EcnCounts,
    /// The peer's ECN counts in the last ACK frame processed, and its largest acknowledged.
    ecn_peer: EcnCounts,
    ecn_largest: Option<u64>,
}

#[derive(Clone, Debug, Default)]
struct Stream {
    send: SendBuf,
    recv: RecvBuf,
    /// The peer's MAX_STREAM_DATA for this stream.
    peer_max: u64,
    /// In the send queue.
    queued: bool,
    /// A MAX_STREAM_DATA frame is to be sent.
    msd_pending: bool,
}

#[derive(Clone, Copy, Debug, Default)]
struct Built {
    retx: [Retx; RETX_CAP],
    ack_largest: Option<u64>,
    probe: bool,
    pnl: u32,
    payload: u32,
}

/// The delay-based slow-start detector's round state.
#[derive(Clone, Copy, Debug, Default)]
struct Hss {
    started: bool,
    end_pn: u64,
    samples: u32,
    round_min: Option<Duration>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum State {
    Open,
    /// close() called, CONNECTION_CLOSE not sent yet.
    Closing(u64),
    Closed,
}

/// One QUIC endpoint.
#[derive(Clone, Debug)]
pub struct QuicConnection {
    cfg: QuicConfig,
    state: State,
    spaces: [SpaceState; 3],
    // --- handshake ---
    hs_keys: bool,
    one_rtt_send: bool,
    one_rtt_recv: bool,
    zero_rtt_send: bool,
    zero_rtt_recv: bool,
    complete: bool,
    confirmed: bool,
    address_validated: bool,
    peer: TransportParams,
    handshake_done_pending: bool,
    ack_freq_pending: bool,
    ack_freq_sent: bool,
    // --- recovery and congestion control ---
    rtt: RttEstimator,
    first_rtt_sample: Option<Instant>,
    cc: AnyCc,
    bytes_in_flight: u64,
    pto_count: u32,
    probes: u32,
    probe_space: Space,
    recovery_start: Option<Instant>,
    in_recovery: bool,
    hss: Hss,
    // --- pacing ---
    pacer: super::pacer::PacingSender,
    pacing_wait: Option<Instant>,
    // --- delivery rate ---
    delivered: u64,
    delivered_time: Instant,
    first_sent_time: Instant,
    app_limited_until: u64,
    // --- receiver ---
    ack_policy: AckPolicy,
    ack_only_run: u32,
    // --- streams and flow control ---
    streams: BTreeMap<u64, Stream>,
    queue: VecDeque<u64>,
    next_stream: u64,
    peer_max_data: u64,
    conn_sent_new: u64,
    max_data_adv: u64,
    conn_recv_highest: u64,
    conn_delivered: u64,
    max_data_pending: bool,
    msd_queue: Vec<u64>,
    // --- lifecycle ---
    last_activity: Instant,
    eliciting_sent_since_recv: bool,
    events: VecDeque<Event>,
    stats: QuicStats,
    // --- scratch and pools ---
    scratch: Vec<SentPacket>,
    frame_pool: Vec<Vec<Frame>>,
    packet_pool: Vec<Vec<Packet>>,
}

impl QuicConnection {
    /// A new endpoint at `now`. A client starts its handshake with the first `poll_transmit`.
    pub fn new(cfg: QuicConfig, now: Instant) -> Result<Self, QuicConfigError> {
        cfg.validate()?;
        let ack_policy = cfg.ack_policy.build()?;
        let mss = cfg.max_udp_payload;
        let own = Self::own_params(&cfg);
        let mut c = QuicConnection {
            cfg,
            state: State::Open,
            spaces: Default::default(),
            hs_keys: false,
            one_rtt_send: false,
            one_rtt_recv: false,
            zero_rtt_send: false,
            zero_rtt_recv: false,
            complete: false,
            confirmed: false,
            address_validated: cfg.role == Role::Client,
            // Until the peer's parameters arrive: our own (a 0-RTT client's remembered ones).
            peer: own,
            handshake_done_pending: false,
            ack_freq_pending: false,
            ack_freq_sent: false,
            rtt: RttEstimator::new(),
            first_rtt_sample: None,
            cc: cfg.cc.build(now, mss, cfg.initial_cwnd()),
            bytes_in_flight: 0,
            pto_count: 0,
            probes: 0,
            probe_space: Space::Initial,
            recovery_start: None,
            in_recovery: false,
            hss: Hss::default(),
            pacer: super::pacer::PacingSender::new(cfg.initial_burst_packets, cfg.max_udp_payload as u64, now)
                .with_mode(cfg.pacer),
            pacing_wait: None,
            delivered: 0,
            delivered_time: now,
            first_sent_time: now,
            app_limited_until: 0,
            ack_policy,
            ack_only_run: 0,
            streams: BTreeMap::new(),
            queue: VecDeque::new(),
            next_stream: if cfg.role == Role::Client { 0 } else { 1 },
            peer_max_data: own.initial_max_data,
            conn_sent_new: 0,
            max_data_adv: cfg.initial_max_data,
            conn_recv_highest: 0,
            conn_delivered: 0,
            max_data_pending: false,
            msd_queue: Vec::new(),
            last_activity: now,
            eliciting_sent_since_recv: false,
            events: VecDeque::new(),
            stats: QuicStats::default(),
            scratch: Vec::new(),
            frame_pool: Vec::new(),
            packet_pool: Vec::new(),
        };
        if cfg.role == Role::Client {
            let init = &mut c.spaces[Space::Initial.idx()].crypto_send;
            init.write(CLIENT_HELLO_BYTES as u64, true);
            c.zero_rtt_send = cfg.zero_rtt;
        }
        Ok(c)
    }

    /// An endpoint as after a completed, confirmed handshake (Initial and Handshake spaces
    /// discarded, the peer's transport parameters equal to ours): for experiments that leave
    /// the handshake out.
    pub fn new_established(cfg: QuicConfig, now: Instant) -> Result<Self, QuicConfigError> {
        let mut c = Self::new(cfg, now)?;
        for sp in [Space::Initial, Space::Handshake] {
            c.spaces[sp.idx()] = SpaceState { discarded: true, ..SpaceState::default() };
        }
        c.hs_keys = true;
        c.one_rtt_send = true;
        c.one_rtt_recv = true;
        c.zero_rtt_send = false;
        c.complete = true;
        c.confirmed = true;
        c.address_validated = true;
        c.on_confirmed_common();
        Ok(c)
    }

    fn own_params(cfg: &QuicConfig) -> TransportParams {
        TransportParams {
            initial_max_data: cfg.initial_max_data,
            initial_max_stream_data: cfg.initial_max_stream_data,
            max_ack_delay: cfg.ack_policy.max_ack_delay,
            max_idle_timeout: cfg.idle_timeout,
            min_ack_delay: (cfg.ack_policy.kind == crate::control::ack_policy::AckPolicyKind::AckFrequency)
                .then_some(cfg.ack_policy.min_ack_delay),
        }
    }

    // ------------------------------------------------------------------ accessors

    pub fn config(&self) -> &QuicConfig {
        &self.cfg
    }
    pub fn role(&self) -> Role {
        self.cfg.role
    }
    pub fn cwnd(&self) -> u64 {
        self.cc.cwnd()
    }
    pub fn ssthresh(&self) -> u64 {
        self.cc.ssthresh()
    }
    pub fn srtt(&self) -> Duration {
        self.rtt.smoothed()
    }
    /// min_rtt (zero before the first sample).
    pub fn min_rtt(&self) -> Duration {
        self.rtt.min()
    }
    pub fn rtt(&self) -> &RttEstimator {
        &self.rtt
    }
    pub fn bytes_in_flight(&self) -> u64 {
        self.bytes_in_flight
    }
    pub fn in_slow_start(&self) -> bool {
        self.cc.in_slow_start()
    }
    /// The controller's state name ("slow_start", "recovery", ...).
    pub fn cc_state(&self) -> &'static str {
        self.cc.state()
    }
    pub fn stats(&self) -> QuicStats {
        self.stats
    }
    pub fn ack_policy_stats(&self) -> AckPolicyStats {
        self.ack_policy.stats()
    }
    /// Current PTO backoff exponent.
    pub fn pto_count(&self) -> u32 {
        self.pto_count
    }
    pub fn is_handshake_complete(&self) -> bool {
        self.complete
    }
    pub fn is_handshake_confirmed(&self) -> bool {
        self.confirmed
    }
    pub fn is_closed(&self) -> bool {
        self.state == State::Closed
    }
    /// Stream data can be sent now (1-RTT keys, or 0-RTT on a client).
    pub fn can_send_stream_data(&self) -> bool {
        self.one_rtt_send || self.zero_rtt_send
    }
    /// All data written to stream `id` (and its FIN) was acknowledged.
    pub fn stream_send_complete(&self, id: u64) -> bool {
        self.streams.get(&id).is_some_and(|s| s.send.all_acked())
    }

    /// Pacing rate in bytes/s (0: unpaced). The controller's own rate (BBR) if it has one;
    /// else, with pacing on, Chromium's cwnd/srtt × 2 in slow start, × 1.25 otherwise (× 1 in
    /// recovery, and unpaced before an RTT sample, as the pacer's mode says:
    /// [`PacerMode::rate`](super::pacer::PacerMode::rate)).
    pub fn pacing_rate(&self) -> u64 {
        if let Some(r) = self.cc.pacing_rate() {
            return r;
        }
        if !self.cfg.pacing {
            return 0;
        }
        let srtt = self.rtt.has_sample().then(|| Duration::from_nanos(self.rtt.smoothed().as_nanos().max(1)));
        self.cfg.pacer.rate(self.cc.cwnd(), srtt, self.cc.in_slow_start(), self.in_recovery)
    }

    pub fn poll_event(&mut self) -> Option<Event> {
        self.events.pop_front()
    }

    /// Give back a datagram's vectors for reuse (optional; saves allocations).
    pub fn recycle(&mut self, mut dg: Datagram) {
        for mut p in dg.packets.drain(..) {
            if self.frame_pool.len() < POOL_CAP {
                p.frames.clear();
                self.frame_pool.push(p.frames);
            }
        }
        if self.packet_pool.len() < POOL_CAP {
            self.packet_pool.push(dg.packets);
        }
    }

    // ------------------------------------------------------------------ application API

    /// Open a bidirectional stream; returns its id (client 0, 4, 8…; server 1, 5, 9…).
    pub fn open_stream(&mut self) -> u64 {
        let id = self.next_stream;
        self.next_stream += 4;
        let peer_max = self.peer.initial_max_stream_data;
        let adv = self.cfg.initial_max_stream_data;
        self.streams.insert(id, Stream { peer_max, recv: RecvBuf { max_adv: adv, ..RecvBuf::default() }, ..Stream::default() });
        id
    }

    /// Append `bytes` to stream `id`, with `fin` after them.
    pub fn stream_write(&mut self, id: u64, bytes: u64, fin: bool) -> Result<(), &'static str> {
        if self.state != State::Open {
            return Err("connection closed");
        }
        let st = self.streams.get_mut(&id).ok_or("unknown stream")?;
        if st.send.fin {
            return Err("stream already finished");
        }
        st.send.write(bytes, fin);
        self.enqueue(id);
        Ok(())
    }

    /// Close the connection with an application error code: CONNECTION_CLOSE is sent by the
    /// next `poll_transmit`, then the connection is closed (no closing period).
    pub fn close(&mut self, _now: Instant, code: u64) {
        if self.state == State::Open {
            self.state = State::Closing(code);
            self.events.push_back(Event::Closed { reason: CloseReason::Local(code) });
        }
    }

    /// Replace the initial congestion window while no stream data has been sent yet: for a
    /// host that settles the window after the handshake's RTT sample (a guarded
    /// history-based window, `control::cwnd_history::rtt_guard`). The controller starts
    /// afresh with `bytes`. Returns whether the window was replaced (not once stream data
    /// has left, nor for 0 bytes).
    pub fn set_initial_window(&mut self, now: Instant, bytes: u64) -> bool {
        if bytes == 0 || self.stats.stream_bytes_sent > 0 || self.state != State::Open {
            return false;
        }
        self.cfg.initial_cwnd_bytes = Some(bytes);
        self.cc = self.cfg.cc.build(now, self.cfg.max_udp_payload, bytes);
        true
    }

    fn enqueue(&mut self, id: u64) {
        if let Some(st) = self.streams.get_mut(&id) {
            if !st.queued {
                st.queued = true;
                self.queue.push_back(id);
            }
        }
    }

    // ------------------------------------------------------------------ timers

    /// The earliest instant at which `handle_timeout` has work: loss detection / PTO, the
    /// delayed-ACK timer, the pacing release time (when the pacer holds data back), the idle
    /// timeout.
    pub fn poll_timeout(&self) -> Option<Instant> {
        if self.state == State::Closed {
            return None;
        }
        let mut t = Some(self.idle_deadline());
        let mut take = |x: Option<Instant>| {
            if let Some(x) = x {
                t = Some(t.map_or(x, |y: Instant| y.min(x)));
            }
        };
        take(self.loss_detection_timer().map(|(t, _)| t));
        if self.one_rtt_recv || self.zero_rtt_recv {
            take(self.ack_policy.poll_timeout());
        }
        take(self.pacing_wait);
        t
    }

    pub fn handle_timeout(&mut self, now: Instant) {
        if self.state == State::Closed {
            return;
        }
        if now >= self.idle_deadline() {
            self.state = State::Closed;
            self.events.push_back(Event::Closed { reason: CloseReason::IdleTimeout });
            return;
        }
        if self.ack_policy.poll_timeout().is_some_and(|t| t <= now) {
            self.ack_policy.handle_timeout(now);
        }
        if let Some((t, sp)) = self.loss_detection_timer() {
            if t <= now {
                self.on_loss_detection_timeout(now, sp);
            }
        }
        if self.pacing_wait.is_some_and(|t| t <= now) {
            self.pacing_wait = None;
        }
    }

    /// §10.1: the smaller of both idle timeouts, at least three PTOs, from the last activity.
    fn idle_deadline(&self) -> Instant {
        let idle = self.cfg.idle_timeout.min(self.peer.max_idle_timeout);
        let pto = self.rtt.pto_base() + self.peer.max_ack_delay;
        self.last_activity + idle.max(pto * 3)
    }

    /// RFC 9002 A.8 SetLossDetectionTimer: earliest loss time, else the PTO.
    fn loss_detection_timer(&self) -> Option<(Instant, Space)> {
        let mut best: Option<(Instant, Space)> = None;
        for sp in Space::ALL {
            if let Some(t) = self.spaces[sp.idx()].loss_time {
                if best.is_none_or(|(b, _)| t < b) {
                    best = Some((t, sp));
                }
            }
        }
        if best.is_some() {
            return best;
        }
        if self.at_amplification_limit() {
            return None;
        }
        self.pto_time_and_space()
    }

    /// RFC 9002 A.8 GetPtoTimeAndSpace (without the client's anti-deadlock timer).
    fn pto_time_and_space(&self) -> Option<(Instant, Space)> {
        let backoff = 1u64 << self.pto_count.min(16);
        let duration = self.rtt.pto_base() * backoff;
        let mut best: Option<(Instant, Space)> = None;
        for sp in Space::ALL {
            let s = &self.spaces[sp.idx()];
            if s.discarded || s.eliciting_in_flight == 0 {
                continue;
            }
            let mut d = duration;
            if sp == Space::AppData {
                if !self.confirmed {
                    continue;
                }
                d += self.peer.max_ack_delay * backoff;
            }
            if let Some(last) = s.last_ack_eliciting_sent {
                let t = last + d;
                if best.is_none_or(|(b, _)| t < b) {
                    best = Some((t, sp));
                }
            }
        }
        best
    }

    fn at_amplification_limit(&self) -> bool {
        !self.address_validated && self.stats.bytes_sent >= 3 * self.stats.bytes_received
    }

    /// RFC 9002 A.9 OnLossDetectionTimeout.
    fn on_loss_detection_timeout(&mut self, now: Instant, sp: Space) {
        if self.spaces[sp.idx()].loss_time.is_some() {
            self.detect_and_handle_lost(now, sp);
            return;
        }
        // PTO: up to two probes in that space, carrying the oldest outstanding data (§6.2.4).
        self.stats.pto_count += 1;
        self.pto_count += 1;
        self.probes = 2;
        self.probe_space = sp;
        let oldest = self.spaces[sp.idx()]
            .sent
            .iter()
            .find(|p| p.state == SentState::Outstanding && p.ack_eliciting)
            .map(|p| p.retx);
        if let Some(retx) = oldest {
            for r in retx {
                self.requeue(sp, r);
            }
        }
    }

    // ------------------------------------------------------------------ receiving

    /// One datagram from the peer.
    pub fn handle_datagram(&mut self, now: Instant, dg: &Datagram) {
        if self.state == State::Closed {
            return;
        }
        self.stats.datagrams_received += 1;
        self.stats.bytes_received += dg.len as u64;
        for p in &dg.packets {
            if self.state == State::Closed {
                return;
            }
            self.handle_packet(now, p, dg.ecn);
        }
    }

    fn keys_for(&self, ty: PacketType) -> bool {
        match ty {
            PacketType::Initial => !self.spaces[0].discarded,
            PacketType::Handshake => self.hs_keys && !self.spaces[1].discarded,
            PacketType::ZeroRtt => self.zero_rtt_recv,
            PacketType::OneRtt => self.one_rtt_recv,
        }
    }

    fn handle_packet(&mut self, now: Instant, p: &Packet, ecn: crate::ecn::Ecn) {
        let sp = p.space();
        let si = sp.idx();
        if !self.keys_for(p.ty) {
            self.stats.undecryptable_packets += 1;
            return;
        }
        if p.ty == PacketType::ZeroRtt {
            // A resuming client presents the NEW_TOKEN token of its previous connection, which
            // validates its address (§8.1.3): the model lets 0-RTT stand for it.
            self.address_validated = true;
        }
        {
            let s = &mut self.spaces[si];
            if p.pn < s.ack_floor || s.recv.contains(p.pn) {
                self.stats.duplicate_packets += 1;
                return;
            }
        }
        self.stats.packets_received += 1;
        self.ecn_received(si, ecn);
        // §10.1: any processed packet restarts the idle timer.
        self.last_activity = now;
        self.eliciting_sent_since_recv = false;
        // §8.1: a Handshake packet from the client validates its address; RFC 9001 §4.9.1:
        // the server discards Initial keys when it first processes a Handshake packet.
        if p.ty == PacketType::Handshake && self.cfg.role == Role::Server {
            self.address_validated = true;
            self.discard_space(Space::Initial);
        }
        let eliciting = p.ack_eliciting();
        let reordered;
        {
            let s = &mut self.spaces[si];
            reordered = s.largest_recv.is_some_and(|l| p.pn != l + 1);
            s.recv.insert(p.pn, p.pn + 1);
            if s.recv.len() > MAX_RECV_RANGES {
                s.recv.truncate_low(MAX_RECV_RANGES);
                s.ack_floor = s.recv.first().map_or(s.ack_floor, |r| r.0);
            }
            if s.largest_recv.is_none_or(|l| p.pn > l) {
                s.largest_recv = Some(p.pn);
                s.largest_recv_time = Some(now);
            }
        }
        for f in &p.frames {
            if self.state == State::Closed {
                return;
            }
            self.handle_frame(now, sp, f);
        }
        if self.spaces[si].discarded {
            return;
        }
        match sp {
            Space::Initial | Space::Handshake => {
                // RFC 9000 §13.2.1: Initial and Handshake packets are acknowledged at once.
                if eliciting {
                    self.spaces[si].ack_now = true;
                    self.spaces[si].unacked_eliciting = true;
                }
            }
            Space::AppData => {
                self.ack_policy.on_packet(now, p.pn, eliciting, reordered);
            }
        }
    }

    fn handle_frame(&mut self, now: Instant, sp: Space, f: &Frame) {
        match *f {
            Frame::Padding { .. } | Frame::Ping => {}
            Frame::Ack(ref a) => self.on_ack_frame(now, sp, a),
            Frame::Crypto { offset, len, end, params } => {
                if let Some(p) = params {
                    self.on_peer_params(p);
                }
                let s = &mut self.spaces[sp.idx()];
                s.crypto_recv.on_frame(offset, len, end);
                if !s.crypto_done && s.crypto_recv.finished {
                    s.crypto_done = true;
                    self.on_crypto_complete(now, sp);
                }
            }
            Frame::Stream { id, offset, len, fin } => self.on_stream_frame(id, offset, len, fin),
            Frame::MaxData { max } => {
                if max > self.peer_max_data {
                    self.peer_max_data = max;
                    let ids: Vec<u64> = self.streams.iter().filter(|(_, s)| s.send.sent < s.send.written).map(|(&i, _)| i).collect();
                    for id in ids {
                        self.enqueue(id);
                    }
                }
            }
            Frame::MaxStreamData { id, max } => {
                if let Some(st) = self.streams.get_mut(&id) {
                    if max > st.peer_max {
                        st.peer_max = max;
                        self.enqueue(id);
                    }
                }
            }
            Frame::HandshakeDone => {
                if self.cfg.role == Role::Client && !self.confirmed {
                    self.confirmed = true;
                    self.events.push_back(Event::HandshakeConfirmed);
                    self.discard_space(Space::Handshake);
                    self.on_confirmed_common();
                }
            }
            Frame::AckFrequency { sequence, threshold, max_ack_delay, reordering } => {
                let _ = self.ack_policy.on_ack_frequency(sequence, threshold, max_ack_delay, reordering);
            }
            Frame::ConnectionClose { code } => {
                self.state = State::Closed;
                self.events.push_back(Event::Closed { reason: CloseReason::Peer(code) });
            }
        }
    }

    fn on_peer_params(&mut self, p: TransportParams) {
        self.peer = p;
        self.peer_max_data = self.peer_max_data.max(p.initial_max_data);
        for st in self.streams.values_mut() {
            st.peer_max = st.peer_max.max(p.initial_max_stream_data);
        }
    }

    /// The handshake flight of `sp` arrived completely.
    fn on_crypto_complete(&mut self, now: Instant, sp: Space) {
        match (self.cfg.role, sp) {
            (Role::Server, Space::Initial) => {
                // ClientHello: answer with ServerHello (Initial) and the Handshake flight;
                // 1-RTT keys for sending (0.5-RTT data) and 0-RTT keys if accepted.
                self.spaces[0].crypto_send.write(SERVER_HELLO_BYTES as u64, true);
                self.spaces[1].crypto_send.write(self.cfg.server_handshake_bytes as u64, true);
                self.hs_keys = true;
                self.one_rtt_send = true;
                self.zero_rtt_recv = self.cfg.zero_rtt;
            }
            (Role::Client, Space::Initial) => {
                self.hs_keys = true;
            }
            (Role::Client, Space::Handshake) => {
                // Server Finished: the handshake is complete at the client, which sends its
                // Finished and may send 1-RTT data.
                self.spaces[1].crypto_send.write(CLIENT_FINISHED_BYTES as u64, true);
                self.complete = true;
                self.one_rtt_send = true;
                self.one_rtt_recv = true;
                self.zero_rtt_send = false;
                self.events.push_back(Event::HandshakeComplete);
            }
            (Role::Server, Space::Handshake) => {
                // Client Finished: complete and confirmed at the server (RFC 9001 §4.1.2).
                self.complete = true;
                self.confirmed = true;
                self.one_rtt_recv = true;
                self.handshake_done_pending = true;
                self.events.push_back(Event::HandshakeComplete);
                self.events.push_back(Event::HandshakeConfirmed);
                self.discard_space(Space::Handshake);
                self.on_confirmed_common();
            }
            (_, Space::AppData) => {}
        }
        let _ = now;
    }

    fn on_confirmed_common(&mut self) {
        if self.cfg.ack_frequency_request.is_some() && self.peer.min_ack_delay.is_some() && !self.ack_freq_sent {
            self.ack_freq_pending = true;
        }
    }

    /// RFC 9002 §6.4: discarding keys removes the space's packets from flight.
    fn discard_space(&mut self, sp: Space) {
        let s = &mut self.spaces[sp.idx()];
        if s.discarded {
            return;
        }
        let mut freed = 0;
        for p in &s.sent {
            if p.state == SentState::Outstanding && p.in_flight {
                freed += p.size as u64;
            }
        }
        *s = SpaceState { discarded: true, ..SpaceState::default() };
        self.bytes_in_flight -= freed;
        self.pto_count = 0;
        if self.probe_space == sp {
            self.probes = 0;
        }
    }

    fn on_stream_frame(&mut self, id: u64, offset: u64, len: u32, fin: bool) {
        let local = (id & 1) == (self.cfg.role == Role::Server) as u64;
        if !self.streams.contains_key(&id) {
            if local {
                return; // a closed or never-opened local stream
            }
            let st = Stream {
                peer_max: self.peer.initial_max_stream_data,
                recv: RecvBuf { max_adv: self.cfg.initial_max_stream_data, ..RecvBuf::default() },
                ..Stream::default()
            };
            self.streams.insert(id, st);
            self.events.push_back(Event::StreamOpened { id });
        }
        let window = self.cfg.initial_max_stream_data;
        let Some(st) = self.streams.get_mut(&id) else { return };
        let before_highest = st.recv.highest;
        let end = offset + len as u64;
        if end > st.recv.max_adv {
            self.stats.flow_control_violations += 1;
        }
        let (dup, newly, finished) = st.recv.on_frame(offset, len, fin);
        self.stats.stream_bytes_duplicate += dup;
        self.conn_recv_highest += st.recv.highest - before_highest;
        if self.conn_recv_highest > self.max_data_adv {
            self.stats.flow_control_violations += 1;
        }
        if newly > 0 {
            // Delivered in order, consumed at once: §4.2 credit when half the window is used.
            self.conn_delivered += newly;
            if st.recv.max_adv - st.recv.delivered < window / 2 && !st.recv.finished && st.recv.fin_at.is_none() {
                st.recv.max_adv = st.recv.delivered + window;
                if !st.msd_pending {
                    st.msd_pending = true;
                    self.msd_queue.push(id);
                }
            }
            let cwin = self.cfg.initial_max_data;
            if self.max_data_adv - self.conn_delivered < cwin / 2 {
                self.max_data_adv = self.conn_delivered + cwin;
                self.max_data_pending = true;
            }
            self.events.push_back(Event::StreamData { id, bytes: newly });
        }
        if finished {
            self.events.push_back(Event::StreamFinished { id });
        }
    }

    // ------------------------------------------------------------------ checks

    pub fn invariants(&self) -> Result<(), &'static str> {
        let mut bif = 0u64;
        for s in &self.spaces {
            let mut elic = 0;
            let mut prev: Option<u64> = None;
            for p in &s.sent {
                if prev.is_some_and(|q| p.pn != q + 1) {
                    return Err("quic: sent packets not consecutive");
                }
                prev = Some(p.pn);
                if p.state == SentState::Outstanding && p.in_flight {
                    bif += p.size as u64;
                    if p.ack_eliciting {
                        elic += 1;
                    }
                }
            }
            if s.sent.front().is_some_and(|p| p.state != SentState::Outstanding) {
                return Err("quic: sent map front is not outstanding");
            }
            if s.sent.back().is_some_and(|p| p.pn >= s.next_pn) {
                return Err("quic: sent packet number beyond next_pn");
            }
            if elic != s.eliciting_in_flight {
                return Err("quic: ack-eliciting in-flight count wrong");
            }
            s.recv.invariants()?;
            s.crypto_send.invariants()?;
            if s.discarded && (!s.sent.is_empty() || s.loss_time.is_some()) {
                return Err("quic: discarded space holds state");
            }
        }
        if bif != self.bytes_in_flight {
            return Err("quic: bytes_in_flight differs from the outstanding packets");
        }
        if self.conn_sent_new > self.peer_max_data {
            return Err("quic: connection flow control exceeded");
        }
        for st in self.streams.values() {
            st.send.invariants()?;
            if st.send.sent > st.peer_max {
                return Err("quic: stream flow control exceeded");
            }
            if st.recv.delivered > st.recv.highest {
                return Err("quic: delivered beyond received");
            }
        }
        if self.conn_delivered > self.conn_recv_highest {
            return Err("quic: connection delivered beyond received");
        }
        self.ack_policy.invariants()?;
        Ok(())
    }
}

/// A stream with nothing it may send under `limit` (flow control) leaves the send queue:
/// marks it unqueued, counts a flow-control block if data is waiting; true if so.
fn retire_if_idle(st: &mut Stream, limit: u64, blocked: &mut u64) -> bool {
    if st.send.has_pending(limit) {
        return false;
    }
    if st.send.blocked(limit) {
        *blocked += 1;
    }
    st.queued = false;
    true
}
