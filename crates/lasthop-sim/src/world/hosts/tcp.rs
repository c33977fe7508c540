//! TCP connections in the cell: the simulator as host of the sans-IO endpoints of
//! `lasthop_algo::tcp`.
//!
//! A TCP flow is one connection between the server and a station. Data segments travel in the
//! flow's direction, ACKs the other way, as real packets through the same wired link, AP queues
//! and contended WiFi channel as everything else (uplink ACKs cost airtime and are aggregated).
//! The host's duties: hand arriving segments and ACKs to the endpoints, pull what they want to
//! send (`poll_transmit`, `poll_ack`), wake them at `poll_timeout`, and tell the sender how many
//! of its bytes are still queued in its own host (TCP small queues): until the server's NIC has
//! sent them for a server-side sender, in the station's MAC queue until the Block Ack for a
//! station.
//!
//! Applications: bulk transfer (unlimited, or N bytes with a completion time), and
//! request/response: the client (the main connection's receiver) sends `request_bytes`, the
//! server answers with `response_bytes` once the whole request is in, the client waits
//! `think_time` after the whole response and asks again. Requests travel on a second
//! connection in the opposite direction (two unidirectional connections, ACKs not piggybacked
//! on data — a simplification of one bidirectional HTTP/1.1-style connection). The response
//! time of each request (request issued → last response byte in order) is recorded.

use crate::world::{PktRef, TcpMeta, World};
use crate::engine::TimerId;
use crate::spec::FlowSpec;
use lasthop_algo::cc::cubic::HyStartConfig;
use lasthop_algo::cc::{BbrConfig, CcConfig, CubicConfig};
use lasthop_algo::tcp::{
    ack_ip_len, data_ip_len, SendBuffer, TcpReceiver, TcpReceiverConfig, TcpSender, TcpSenderConfig,
};
use crate::metrics::LogHistogram;
use lasthop_core::{Duration, Instant};
use std::collections::VecDeque;

/// One connection and its host-side bookkeeping.
pub(in crate::world) struct TcpConn {
    pub sender: TcpSender,
    pub receiver: TcpReceiver,
    pub sender_at_server: bool,
    pub cc_name: &'static str,
    /// Bytes of this connection queued below the sender's socket.
    pub queued_below: u64,
    /// Whether those bytes count against TCP small queues: always at the server; at a station
    /// unless its host hands packets to a device that orphans them (`tcp_small_queues = false`).
    pub counts_below: bool,
    /// Server-side sender: (the server's NIC done with it, bytes) of its packets still counted.
    departures: VecDeque<(Instant, u32)>,
    /// The connection's one timer: the earliest of its endpoints' deadlines.
    timer: TimerId,
    /// Finite transfers: application bytes to deliver, and when the last one arrived.
    pub total_bytes: u64,
    pub completed_at: Option<Instant>,
    pub app_delivered: u64,
    pub rr: Option<Box<ReqResp>>,
    /// `send_buffer = "linux"`: the socket's send buffer, which the bulk application keeps
    /// full; the bytes it has still to write (u64::MAX: endless); what it wrote when (the end
    /// of each write and its instant, those not yet cumulatively acknowledged); and whether
    /// the last ACK freed buffer space.
    pub send_buffer: Option<Box<AppWriter>>,
}

/// The bulk application writing into a socket send buffer (`flows[].send_buffer`).
pub(in crate::world) struct AppWriter {
    pub buffer: SendBuffer,
    pub left: u64,
    pub writes: VecDeque<(u64, Instant)>,
    pub freed: bool,
}

/// The request side of a request/response flow.
pub(in crate::world) struct ReqResp {
    pub req_bytes: u64,
    pub resp_bytes: u64,
    pub think: Duration,
    /// Requests to issue; 0 = until the flow stops.
    pub max_requests: u64,
    /// Client → server connection carrying the requests (its sender sits with the main
    /// connection's receiver). No TCP small-queues accounting: requests are small.
    pub sender: TcpSender,
    pub receiver: TcpReceiver,
    pub issued: u64,
    pub completed: u64,
    /// Request bytes the server has received in order, and responses it has written.
    pub req_received: u64,
    pub responses_written: u64,
    /// When the client issues its next request (after the think time).
    pub next_issue: Option<Instant>,
    /// Issue times of the requests not yet answered.
    pub outstanding: VecDeque<Instant>,
    pub response_time: LogHistogram,
}

/// The congestion controller a TCP flow's spec asks for (`cc`, `hystart`, `extra_acked`),
/// its name, and whether it paces by default (BBR, and Prague, which sets its own rate).
pub(in crate::world) fn cc_config(f: &FlowSpec, seed: u64) -> (CcConfig, &'static str, bool) {
    let name = f.cc.as_str();
    match f.cc.config() {
        CcConfig::Bbr(d) => (CcConfig::Bbr(BbrConfig { extra_acked: f.extra_acked, seed, ..d }), name, true),
        CcConfig::Cubic(d) => {
            let variant = crate::spec::hystart_variant(&f.hystart);
            let hystart = HyStartConfig {
                enabled: variant.is_some(),
                variant: variant.unwrap_or_default(),
                paced: f.pacing.unwrap_or(false),
                ..d.hystart
            };
            (CcConfig::Cubic(CubicConfig { hystart, ..d }), name, false)
        }
        CcConfig::Prague(d) => (CcConfig::Prague(d), name, true),
        other => (other, name, false),
    }
}

/// `sk_pacing_shift` of sockets whose frames mac80211 transmits (`ieee80211_alloc_hw_nm` sets
/// `hw.tx_sk_pacing_shift = 7`; `ieee80211_xmit_fast` applies it with `sk_pacing_shift_update`).
pub(in crate::world) const MAC80211_PACING_SHIFT: u8 = 7;

/// GRO's largest merged packet (Linux `GRO_LEGACY_MAX_SIZE`).
pub(in crate::world) const GRO_MAX_BYTES: u64 = 65_536;

/// Build the endpoints of a TCP flow from its spec. The sender sits at the server for a
/// downlink flow, at the station for an uplink flow; `gro`: the receiver's host merges its
/// receptions (a station with `gro = true` receiving a downlink flow); `counts_below`: the
/// sender's bytes below its socket count against TCP small queues ([`TcpConn::counts_below`]).
pub(in crate::world) fn new_conn(f: &FlowSpec, sender_at_server: bool, gro: bool, counts_below: bool, seed: u64, timer: TimerId) -> TcpConn {
    let rr = (f.app == crate::spec::App::RequestResponse).then(|| {
        let mss = f.packet_size.saturating_sub(lasthop_algo::tcp::IP_TCP_HEADERS).max(64);
        let scfg = TcpSenderConfig { mss, ..TcpSenderConfig::default() };
        Box::new(ReqResp {
            req_bytes: f.request_bytes,
            resp_bytes: f.response_bytes,
            think: Duration(f.think_time_ns),
            max_requests: f.requests,
            sender: TcpSender::new(scfg, Instant(f.start_ns)),
            receiver: TcpReceiver::new(TcpReceiverConfig { mss, ..TcpReceiverConfig::default() }),
            issued: 0,
            completed: 0,
            req_received: 0,
            responses_written: 0,
            next_issue: Some(Instant(f.start_ns)),
            outstanding: VecDeque::new(),
            response_time: LogHistogram::new(),
        })
    });
    let now = Instant(f.start_ns);
    let mss = f.packet_size.saturating_sub(lasthop_algo::tcp::IP_TCP_HEADERS).max(64);
    let (ccfg, name, pace_default) = cc_config(f, seed);
    // TCP small queues: a station's socket sends through mac80211, which lowers its pacing
    // shift to 7 (`tx_sk_pacing_shift`); the server's keeps Linux's 10.
    let pacing_shift = if sender_at_server { 10 } else { MAC80211_PACING_SHIFT };
    let ecn = f.ecn;
    let tso_defer = f.tso != crate::spec::TSOS[0];
    let scfg =
        TcpSenderConfig { mss, cc: ccfg, pacing: f.pacing.unwrap_or(pace_default), pacing_shift, ecn, tso_defer, ..TcpSenderConfig::default() };
    let gro_bytes = if gro { GRO_MAX_BYTES } else { 0 };
    let rcfg = TcpReceiverConfig { mss, ecn, gro_bytes, ..TcpReceiverConfig::default() };
    let mut sender = TcpSender::new(scfg, now);
    let to_write = if f.bytes == 0 { u64::MAX } else { f.bytes };
    let send_buffer = (f.send_buffer != crate::spec::SEND_BUFFERS[0]).then(|| {
        let buffer = SendBuffer::linux(mss, scfg.initial_cwnd_segments, ccfg.sndbuf_expand());
        Box::new(AppWriter { buffer, left: to_write, writes: VecDeque::new(), freed: false })
    });
    if rr.is_none() && f.app_rate_bps == 0 && send_buffer.is_none() {
        sender.app_write(to_write);
    }
    TcpConn {
        sender,
        receiver: TcpReceiver::new(rcfg),
        sender_at_server,
        cc_name: name,
        queued_below: 0,
        counts_below,
        departures: VecDeque::new(),
        timer,
        total_bytes: f.bytes,
        completed_at: None,
        app_delivered: 0,
        rr,
        send_buffer,
    }
}

impl TcpConn {
    /// Whether the sender is asked what it may send when a data segment reaches the receiver
    /// (`tcp_pump_since`'s `sender`). A sender is woken by what it depends on: ACKs (they reach
    /// it), its pacing and a server's NIC departures (its timer, `tcp_arm`), a station's MAC or
    /// queue done with its packets (`tcp_station_sent`, then `tcp_pump_dirty` at the end of the
    /// exchange, or at its start for a queue's drops while the PPDUs were built), the
    /// application (`app_fill`); a data segment at the receiver changed none of them, so the
    /// call is skipped, with the same segments at the same instants. Still asked: a sender that
    /// defers TSO bursts (`tcp_tso_should_defer`), which decides again whenever it is asked and
    /// has no timer of its own.
    fn polled_on_data(&self) -> bool {
        self.sender.config().tso_defer
    }

    /// The bulk application's turn at its socket (`send_buffer`): after an ACK that freed
    /// space the buffer may grow (`tcp_check_space`), then the writer writes what it may. Whether it
    /// wrote anything. (Inlined to its test: a connection without a send buffer, an application
    /// that wrote all it has up front, takes it on every event.)
    #[inline]
    fn app_fill(&mut self, now: Instant) -> bool {
        self.send_buffer.is_some() && self.app_fill_buffer(now)
    }

    fn app_fill_buffer(&mut self, now: Instant) -> bool {
        let Some(w) = self.send_buffer.as_mut() else { return false };
        if std::mem::take(&mut w.freed) {
            w.buffer.handle_ack(self.sender.outstanding(), self.sender.cwnd());
        }
        let n = w.buffer.poll_write(self.sender.unacked_written(), w.left);
        if n == 0 {
            return false;
        }
        self.sender.app_write(n);
        if w.left != u64::MAX {
            w.left -= n;
        }
        w.writes.push_back((self.sender.app_written(), now));
        true
    }

    /// When the application wrote the byte at `seq` (`send_buffer`), or None without a send
    /// buffer. Writes wholly acknowledged are forgotten first.
    fn written_at(&mut self, seq: u64) -> Option<Instant> {
        let w = self.send_buffer.as_mut()?;
        let acked = self.sender.snd_una();
        while w.writes.len() > 1 && w.writes.front().is_some_and(|&(end, _)| end <= acked) {
            w.writes.pop_front();
        }
        w.writes.iter().find(|&&(end, _)| end > seq).or(w.writes.back()).map(|&(_, t)| t)
    }
}

impl World {
    pub fn is_tcp(&self, f: usize) -> bool {
        self.tcp[f].is_some()
    }

    /// End-of-run summary of flow `f` if it is TCP.
    pub fn tcp_out(&self, f: usize) -> Option<crate::output::TcpOut> {
        let c = self.tcp[f].as_ref()?;
        let s = c.sender.stats();
        let start = self.flows[f].start;
        Some(crate::output::TcpOut {
            cc: c.cc_name.to_string(),
            state: s.state.to_string(),
            bytes: c.total_bytes,
            completion_ns: c.completed_at.map(|t| (t - start).as_nanos()),
            app_bytes_delivered: c.app_delivered,
            retransmits: s.retransmits,
            rto_count: s.rto_count,
            fast_recoveries: s.fast_recovery_count,
            cwnd_bytes: s.cwnd,
            srtt_ns: s.srtt.as_nanos(),
            min_rtt_ns: s.min_rtt.as_nanos(),
            requests_completed: c.rr.as_ref().map(|r| r.completed),
            response_time_ns: c.rr.as_ref().map(|r| r.response_time.summary()),
            ecn: (c.sender.config().ecn != lasthop_algo::ecn::EcnMode::Off).then(|| crate::output::EcnOut {
                mode: self.flows_ecn_name(f).to_string(),
                ce_marked: self.ce_marked[f],
                ce_received: c.receiver.ce_segments(),
                reductions: s.ecn_reductions,
                ce_bytes_acked: s.ce_bytes_acked,
            }),
            sndbuf_bytes: c.send_buffer.as_ref().map(|w| w.buffer.size()),
            tso_deferrals: c.sender.config().tso_defer.then(|| c.sender.tso_deferrals()),
        })
    }

    /// The name of flow `f`'s ECN mode, as a spec writes it.
    fn flows_ecn_name(&self, f: usize) -> &'static str {
        let mode = self.tcp[f].as_ref().map(|c| c.sender.config().ecn).unwrap_or_default();
        lasthop_algo::ecn::EcnMode::NAMES.iter().find(|n| n.1 == mode).map_or("off", |n| n.0)
    }

    /// Start a TCP flow: the sender sends its first window.
    pub(in crate::world) fn tcp_start(&mut self, f: u32) {
        let now = self.q.now();
        // An application writing into a socket buffer writes its first bytes now.
        self.tcp[f as usize].as_mut().expect("tcp flow").app_fill(now);
        self.tcp_pump(f, now);
    }

    /// Let both endpoints of flow `f` act: send what they may, and re-arm their timer.
    pub(in crate::world) fn tcp_pump(&mut self, f: u32, now: Instant) {
        self.tcp_pump_since(f, now, now, true);
    }

    /// As `tcp_pump`, for an endpoint that got what it answers at `made` ≤ `now`: a station's
    /// segments arrive at its MAC then (`station_enqueue_since`). `sender`: whether to ask the
    /// main connection's sender what it may send (`TcpConn::polled_on_data`).
    fn tcp_pump_since(&mut self, f: u32, now: Instant, made: Instant, sender: bool) {
        let stop = self.flows[f as usize].stop;
        if sender {
            self.tcp_send_data(f, now, made, stop);
        }
        // Then the application behind a send buffer, woken by the space the ACKs freed (Linux:
        // `tcp_data_snd_check`, then `tcp_check_space`), and what it wrote.
        if self.tcp[f as usize].as_mut().expect("tcp flow").app_fill(now) {
            self.tcp_send_data(f, now, made, stop);
        }
        // ACKs.
        loop {
            let conn = self.tcp[f as usize].as_mut().expect("tcp flow");
            let Some(ack) = conn.receiver.poll_ack(now) else { break };
            let receiver_at_server = !conn.sender_at_server;
            let p = self.alloc_control(f, ack.ip_len(), now);
            self.pkts[p.id as usize].tcp = TcpMeta::Ack { ack, rev: false };
            if receiver_at_server {
                self.wired_send(p, crate::world::Dir::Down, now);
            } else {
                let sta = self.flows[f as usize].station;
                self.station_enqueue_since(sta, p, now, made);
            }
        }
        if self.tcp[f as usize].as_ref().unwrap().rr.is_some() {
            self.tcp_pump_requests(f, now, stop);
        }
        self.tcp_arm(f, now);
    }

    /// The data segments flow `f`'s sender may send now. With a send buffer a segment's
    /// creation is when the application wrote its first byte (its delay is the application's).
    fn tcp_send_data(&mut self, f: u32, now: Instant, made: Instant, stop: Instant) {
        loop {
            let conn = self.tcp[f as usize].as_mut().expect("tcp flow");
            if conn.sender_at_server {
                while conn.departures.front().is_some_and(|&(t, _)| t <= now) {
                    let (_, b) = conn.departures.pop_front().unwrap();
                    conn.queued_below -= b as u64;
                }
            }
            if now >= stop {
                break;
            }
            let Some(seg) = conn.sender.poll_transmit(now, conn.queued_below) else { break };
            let len = data_ip_len(seg.len);
            let at_server = conn.sender_at_server;
            if conn.counts_below {
                conn.queued_below += len as u64;
            }
            let written = conn.written_at(seg.seq);
            let mut p = self.alloc(f, len, now);
            if let Some(t) = written {
                self.pkts[p.id as usize].created = t;
            }
            self.set_ecn(&mut p, seg.ecn);
            self.pkts[p.id as usize].tcp = TcpMeta::Data { seg, rev: false };
            if seg.retransmit && now >= self.warmup {
                self.ts.retx.add(f as usize, now.as_nanos(), 1.0);
            }
            if at_server {
                self.tcp_server_send(f, p, now);
            } else {
                let sta = self.flows[f as usize].station;
                self.station_enqueue_since(sta, p, now, made);
            }
        }
    }

    /// The request connection of a request/response flow: issue the next request when its
    /// think time is over, then send request segments (client) and the ACKs of requests (server).
    fn tcp_pump_requests(&mut self, f: u32, now: Instant, stop: Instant) {
        let sta = self.flows[f as usize].station;
        let conn = self.tcp[f as usize].as_mut().unwrap();
        // The client sits where the main connection's receiver is.
        let client_at_server = !conn.sender_at_server;
        let rr = conn.rr.as_mut().unwrap();
        if rr.next_issue.is_some_and(|t| t <= now) && now < stop {
            rr.next_issue = None;
            rr.issued += 1;
            rr.outstanding.push_back(now);
            rr.sender.app_write(rr.req_bytes);
        }
        loop {
            let rr = self.tcp[f as usize].as_mut().unwrap().rr.as_mut().unwrap();
            let Some(seg) = rr.sender.poll_transmit(now, 0) else { break };
            let p = self.alloc_control(f, data_ip_len(seg.len), now);
            self.pkts[p.id as usize].tcp = TcpMeta::Data { seg, rev: true };
            if client_at_server {
                self.wired_send(p, crate::world::Dir::Down, now);
            } else {
                self.station_enqueue(sta, p, now);
            }
        }
        loop {
            let rr = self.tcp[f as usize].as_mut().unwrap().rr.as_mut().unwrap();
            let Some(ack) = rr.receiver.poll_ack(now) else { break };
            let p = self.alloc_control(f, ack_ip_len(ack.n_sack), now);
            self.pkts[p.id as usize].tcp = TcpMeta::Ack { ack, rev: true };
            // The request receiver (server side of the exchange) is where the main sender is.
            if client_at_server {
                self.station_enqueue(sta, p, now);
            } else {
                self.wired_send(p, crate::world::Dir::Down, now);
            }
        }
    }

    /// A server-side data segment leaves through the server's NIC into the wired link;
    /// remember when the NIC is done with it, when its bytes stop counting against TCP small
    /// queues (Linux: `tcp_wfree` at the skb's transmit completion).
    fn tcp_server_send(&mut self, f: u32, p: PktRef, now: Instant) {
        let len = p.len;
        self.wired_send(p, crate::world::Dir::Down, now);
        // The NIC's clock, as this packet left it (nothing else is sent meanwhile).
        let done = self.server_nic_free;
        self.tcp[f as usize].as_mut().unwrap().departures.push_back((done, len));
    }

    /// Re-arm the connection's timer at the earliest of the endpoints' timeouts and, for a
    /// server-side sender held back by its queued bytes, the server's NIC done with its next one.
    fn tcp_arm(&mut self, f: u32, now: Instant) {
        let conn = self.tcp[f as usize].as_mut().unwrap();
        let e = Instant::earliest;
        let mut t = e(conn.sender.poll_timeout(), conn.receiver.poll_timeout());
        if let Some(rr) = conn.rr.as_ref() {
            t = e(t, e(e(rr.sender.poll_timeout(), rr.receiver.poll_timeout()), rr.next_issue));
        }
        // A server-side sender held back by TCP small queues sends again when the link's queue
        // lets its next packet go (Linux: `tcp_wfree` → `tcp_tsq_handler`). The timer holds one
        // deadline, so this is re-armed on every call, not remembered.
        if conn.sender_at_server && conn.sender.tsq_held() && !conn.sender.is_done() {
            if let Some(&(d, _)) = conn.departures.front() {
                t = Some(t.map_or(d, |x| x.min(d)));
            }
        }
        let Some(t) = t else { return };
        let timer = conn.timer;
        self.q.set_timer(timer, t.max(now));
    }

    pub(in crate::world) fn on_tcp_timer(&mut self, f: u32) {
        let now = self.q.now();
        {
            let conn = self.tcp[f as usize].as_mut().unwrap();
            conn.sender.handle_timeout(now);
            conn.receiver.handle_timeout(now);
            if let Some(rr) = conn.rr.as_mut() {
                rr.sender.handle_timeout(now);
                rr.receiver.handle_timeout(now);
            }
        }
        self.tcp_pump(f, now);
    }

    /// A TCP packet of flow `f` arrived at its endpoint (the server, or the flow's station).
    /// One delivered packet's one-way delay `d` (ns) in flow `fi`'s figures.
    pub(in crate::world) fn record_delay(&mut self, fi: usize, t: Instant, d: u64) {
        self.counters[fi].delay.record(d);
        self.ts.delay_sum.add(fi, t.as_nanos(), d as f64);
        self.ts.delay_n.add(fi, t.as_nanos(), 1.0);
    }

    pub(in crate::world) fn tcp_arrive(&mut self, p: PktRef, t: Instant) {
        let pk = self.pkts[p.id as usize];
        let f = pk.flow;
        let fi = f as usize;
        match pk.tcp {
            TcpMeta::Data { mut seg, rev: false } => {
                // The segment as the network delivers it: its ECN field may now say CE.
                seg.ecn = pk.ecn;
                let conn = self.tcp[fi].as_mut().unwrap();
                let newly = conn.receiver.handle_segment(t, &seg);
                if conn.receiver.config().gro_bytes > 0 {
                    // The merged packet reaches TCP at the end of this reception's batch: the
                    // flow once per batch, at its latest segment's reception.
                    match self.gro_pending.iter_mut().find(|e| e.0 == f) {
                        Some(e) => e.1 = e.1.max(t),
                        None => self.gro_pending.push((f, t)),
                    }
                }
                if t >= self.warmup {
                    let c = &mut self.counters[fi];
                    c.delivered_packets += 1;
                    c.delivered_bytes += newly;
                    self.ts.goodput.add(fi, t.as_nanos(), newly as f64 * 8.0);
                    // A split upload's delay is its WiFi leg's, taken at the proxy.
                    if !self.is_split_upload(f) {
                        self.record_delay(fi, t, (t - pk.created).as_nanos());
                    }
                }
                let counted = t >= self.warmup;
                let conn = self.tcp[fi].as_mut().unwrap();
                conn.app_delivered += newly;
                if conn.total_bytes > 0 && conn.completed_at.is_none() && conn.app_delivered >= conn.total_bytes {
                    conn.completed_at = Some(t);
                }
                // Request/response: whole responses complete requests.
                if let Some(rr) = conn.rr.as_mut() {
                    while rr.resp_bytes > 0 && conn.app_delivered >= (rr.completed + 1) * rr.resp_bytes {
                        rr.completed += 1;
                        let issued = rr.outstanding.pop_front().unwrap_or(t);
                        if counted {
                            rr.response_time.record((t - issued).as_nanos());
                        }
                        if rr.max_requests == 0 || rr.issued < rr.max_requests {
                            rr.next_issue = Some(t + rr.think);
                        }
                    }
                }
            }
            TcpMeta::Data { seg, rev: true } => {
                // A request segment at the server: answer every whole request.
                let conn = self.tcp[fi].as_mut().unwrap();
                let rr = conn.rr.as_mut().unwrap();
                rr.req_received += rr.receiver.handle_segment(t, &seg);
                // (request_bytes > 0 is a spec rule)
                let whole = rr.req_received.checked_div(rr.req_bytes).unwrap_or(rr.issued);
                while rr.responses_written < whole {
                    rr.responses_written += 1;
                    conn.sender.app_write(rr.resp_bytes);
                }
            }
            TcpMeta::Ack { ack, rev: false } => {
                let conn = self.tcp[fi].as_mut().unwrap();
                let una = conn.sender.snd_una();
                conn.sender.handle_ack(t, &ack);
                if let Some(w) = conn.send_buffer.as_mut() {
                    // SOCK_QUEUE_SHRUNK: acknowledged bytes left the retransmit queue.
                    w.freed |= conn.sender.snd_una() > una;
                }
                let s = &conn.sender;
                let tn = t.as_nanos();
                self.ts.cwnd.set(fi, tn, s.cwnd() as f64);
                self.ts.inflight.set(fi, tn, s.bytes_in_flight() as f64);
                self.ts.pacing.set(fi, tn, s.pacing_rate() as f64 * 8.0);
                if let Some(r) = s.latest_rtt() {
                    self.ts.rtt_sum.add(fi, tn, r.as_nanos() as f64);
                    self.ts.rtt_n.add(fi, tn, 1.0);
                }
            }
            TcpMeta::Ack { ack, rev: true } => {
                let rr = self.tcp[fi].as_mut().unwrap().rr.as_mut().unwrap();
                rr.sender.handle_ack(t, &ack);
            }
            TcpMeta::None | TcpMeta::Quic { .. } | TcpMeta::Aggctl { .. } | TcpMeta::External { .. } => unreachable!("non-TCP packet on a TCP flow"),
        }
        let sender = !matches!(pk.tcp, TcpMeta::Data { rev: false, .. }) || self.tcp[fi].as_ref().unwrap().polled_on_data();
        self.release(p);
        let now = self.q.now();
        self.tcp_pump_since(f, now.max(t), t.min(now), sender);
    }

    /// A station-side sender's segment left the station's MAC (Block Ack received or dropped):
    /// its bytes no longer count against TCP small queues.
    pub(in crate::world) fn tcp_station_sent(&mut self, p: PktRef) {
        let pk = self.pkts[p.id as usize];
        if let (TcpMeta::Data { rev: false, .. }, Some(conn)) = (pk.tcp, self.tcp[pk.flow as usize].as_mut()) {
            if !conn.sender_at_server && !pk.ghost {
                conn.queued_below = conn.queued_below.saturating_sub(p.len as u64);
                self.tcp_dirty.push(pk.flow);
            }
        }
    }

    /// The end of a reception batch (one PPDU's MPDUs delivered at a station): every receiver
    /// that merged segments with GRO in it hands the merged packet to TCP and may ACK; the ACK
    /// is made at the batch's last segment's reception.
    pub(in crate::world) fn tcp_gro_flush(&mut self, now: Instant) {
        if self.gro_pending.is_empty() {
            return;
        }
        let mut pending = std::mem::take(&mut self.gro_pending);
        for &(f, t) in &pending {
            let conn = self.tcp[f as usize].as_mut().unwrap();
            conn.receiver.end_batch();
            let sender = conn.polled_on_data();
            self.tcp_pump_since(f, now.max(t), t.min(now), sender);
        }
        pending.clear();
        self.gro_pending = pending;
    }

    /// Pump the connections whose queued bytes drained during an exchange.
    pub(in crate::world) fn tcp_pump_dirty(&mut self, now: Instant) {
        self.vwire_pump_dirty(now);
        if self.tcp_dirty.is_empty() {
            return;
        }
        // Pumping may mark flows again (a segment dropped on entry to its station's queue frees
        // its bytes at once): repeat until nothing is left.
        let mut dirty = std::mem::take(&mut self.tcp_dirty);
        while !dirty.is_empty() {
            dirty.sort_unstable();
            dirty.dedup();
            for &f in &dirty {
                self.tcp_pump(f, now);
            }
            dirty.clear();
            std::mem::swap(&mut dirty, &mut self.tcp_dirty);
        }
        self.tcp_dirty = dirty;
    }
}
