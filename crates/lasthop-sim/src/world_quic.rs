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
//! Datagrams live in a slab while they cross the network (`Pkt::tcp` holds `TcpMeta::Quic`
//! with the slot); the slot is freed when the original arrives or is dropped (a Block Ack
//! retransmission copy never owns it).

use super::{Ev, PktRef, TcpMeta, World};
use crate::metrics::LogHistogram;
use crate::spec::FlowSpec;
use lasthop_algo::control::ack_policy::{AckPolicyConfig, AckPolicyKind};
use lasthop_algo::quic::{Datagram, Event, QuicConfig, QuicConnection, Role};
use lasthop_core::Instant;

/// Bytes of the client's request (an HTTP/3 GET with headers).
pub(super) const REQUEST_BYTES: u64 = 300;

/// One connection and its host-side bookkeeping.
pub(super) struct QuicFlow {
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
    timer: super::EndpointTimer,
}

fn config(f: &FlowSpec, role: Role) -> QuicConfig {
    let base = if f.profile == "bquic" { QuicConfig::bursty(role) } else { QuicConfig::new(role) };
    let mut cfg = QuicConfig {
        max_udp_payload: f.packet_size - lasthop_algo::quic::packet::IP_UDP_OVERHEAD,
        initial_cwnd_packets: f.initial_cwnd,
        zero_rtt: f.zero_rtt,
        ..base
    };
    if let Some(p) = f.pacing {
        cfg.pacing = p;
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
pub(super) fn new_flow(f: &FlowSpec) -> QuicFlow {
    let now = Instant(f.start_ns);
    let client = QuicConnection::new(config(f, Role::Client), now).expect("QUIC parameters validated with the spec");
    let server = QuicConnection::new(config(f, Role::Server), now).expect("QUIC parameters validated with the spec");
    QuicFlow {
        client,
        server,
        profile: if f.profile == "bquic" { "bquic" } else { "quic" },
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
        timer: super::EndpointTimer::default(),
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
        })
    }

    /// Start a QUIC flow: the client sends its Initial (and, with 0-RTT, the request).
    pub(super) fn quic_start(&mut self, f: u32) {
        let now = self.q.now();
        let q = self.quic[f as usize].as_deref_mut().expect("quic flow");
        let id = q.client.open_stream();
        q.client.stream_write(id, REQUEST_BYTES, true).expect("a new stream takes data");
        self.quic_pump(f, now);
    }

    /// Let both endpoints of flow `f` act on their events, send what they may and re-arm
    /// their timer.
    fn quic_pump(&mut self, f: u32, now: Instant) {
        let fi = f as usize;
        let counted = now >= self.warmup;
        // Application events.
        loop {
            let q = self.quic[fi].as_deref_mut().expect("quic flow");
            if let Some(ev) = q.server.poll_event() {
                if let Event::StreamFinished { id } = ev {
                    // A whole request is in: answer it with its object.
                    if let Some(&size) = q.objects.get((id / 4) as usize) {
                        let (n, fin) = if size == 0 { (u64::MAX / 4, false) } else { (size, true) };
                        let _ = q.server.stream_write(id, n, fin);
                    }
                }
                continue;
            }
            let Some(ev) = q.client.poll_event() else { break };
            match ev {
                Event::HandshakeComplete => q.handshake_at = Some(now),
                Event::StreamData { bytes, .. } => {
                    q.app_delivered += bytes;
                    if counted {
                        self.counters[fi].delivered_bytes += bytes;
                        self.ts_goodput.add(fi, now.as_nanos(), bytes as f64 * 8.0);
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
                    if q.finished == q.objects.len() && q.completed_at.is_none() {
                        q.completed_at = Some(now);
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
                self.wired_send(p, super::Dir::Down, now);
            }
            loop {
                let q = self.quic[fi].as_deref_mut().expect("quic flow");
                let Some(dg) = q.client.poll_transmit(now) else { break };
                let p = self.quic_packet(f, dg, now, false);
                self.station_enqueue(sta, p, now);
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
        let p = if to_client { self.alloc(f, len, now) } else { self.alloc_control(f, len, now) };
        self.pkts[p.id as usize].tcp = TcpMeta::Quic { slot, to_client };
        p
    }

    /// Free the datagram of a packet that is dropped for good (not a retransmission copy).
    pub(super) fn quic_drop(&mut self, p: PktRef) {
        let pk = self.pkts[p.id as usize];
        if let TcpMeta::Quic { slot, .. } = pk.tcp {
            if !pk.ghost {
                if let Some(dg) = self.quic_dgrams[slot as usize].take() {
                    self.quic_free.push(slot);
                    if let Some(q) = self.quic[pk.flow as usize].as_deref_mut() {
                        q.client.recycle(dg);
                    }
                }
            }
        }
    }

    fn quic_arm(&mut self, f: u32, now: Instant) {
        let q = self.quic[f as usize].as_deref_mut().expect("quic flow");
        let Some(t) = [q.client.poll_timeout(), q.server.poll_timeout()].into_iter().flatten().min() else { return };
        let t = t.max(now);
        if let Some(g) = q.timer.arm(t) {
            self.q.schedule(t, Ev::QuicTimer(f, g));
        }
    }

    pub(super) fn on_quic_timer(&mut self, f: u32, gen: u64) {
        let now = self.q.now();
        {
            let q = self.quic[f as usize].as_deref_mut().expect("quic flow");
            if !q.timer.fire(gen) {
                return;
            }
            q.client.handle_timeout(now);
            q.server.handle_timeout(now);
        }
        self.quic_pump(f, now);
    }

    /// A QUIC datagram reached its endpoint (the server, or the flow's station) at `t`.
    pub(super) fn quic_arrive(&mut self, p: PktRef, t: Instant) {
        let pk = self.pkts[p.id as usize];
        let TcpMeta::Quic { slot, to_client } = pk.tcp else { unreachable!("not a QUIC packet") };
        let f = pk.flow;
        let fi = f as usize;
        let dg = self.quic_dgrams[slot as usize].take().expect("datagram in flight");
        self.quic_free.push(slot);
        if to_client && t >= self.warmup {
            let d = (t - pk.created).as_nanos();
            let c = &mut self.counters[fi];
            c.delivered_packets += 1;
            c.delay.record(d);
            self.ts_delay_sum.add(fi, t.as_nanos(), d as f64);
            self.ts_delay_n.add(fi, t.as_nanos(), 1.0);
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
                if q.ss_exit.is_none() && !q.server.in_slow_start() {
                    q.ss_exit = Some((cwnd, t));
                }
                let lost = q.server.stats().packets_lost;
                let new_lost = lost - q.lost;
                q.lost = lost;
                self.ts_cwnd.set(fi, tn, cwnd as f64);
                self.ts_inflight.set(fi, tn, bif as f64);
                self.ts_pacing.set(fi, tn, pace as f64 * 8.0);
                if new_rtt {
                    self.ts_rtt_sum.add(fi, tn, rtt.as_nanos() as f64);
                    self.ts_rtt_n.add(fi, tn, 1.0);
                }
                if new_lost > 0 {
                    self.ts_retx.add(fi, tn, new_lost as f64);
                }
            }
        }
        self.release(p);
        let now = self.q.now();
        self.quic_pump(f, now.max(t));
    }
}
