//! End-to-end tests over a tiny in-test link (one-way delay, optional rate, scripted and
//! random drops), and direct tests driving one endpoint with synthetic ACKs.

use super::*;
use crate::control::ack_policy::{AckPolicyConfig, AckPolicyKind};
use alloc::collections::VecDeque;
use alloc::vec;
use alloc::vec::Vec;
use lasthop_core::{Duration, Instant, Rng};

fn ms(x: u64) -> Duration {
    Duration::from_millis(x)
}
fn at_ms(x: u64) -> Instant {
    Instant::ZERO + ms(x)
}
fn at_us(x: u64) -> Instant {
    Instant::ZERO + Duration::from_micros(x)
}

/// One direction: FIFO, serialization at `rate_bps` (None: infinite), then `delay`.
struct Link {
    delay: Duration,
    rate_bps: Option<u64>,
    busy_until: Instant,
    drops: Vec<u64>,
    loss: f64,
    rng: Rng,
    count: u64,
    q: VecDeque<(Instant, Datagram)>,
    /// Step marking: an ECN-capable datagram that waits longer than this is marked CE.
    mark_above: Option<Duration>,
    marks: u64,
    /// The path clears the ECN field (an ECN-bleaching middlebox).
    bleach: bool,
}

impl Link {
    fn new(delay: Duration) -> Self {
        Link {
            delay,
            rate_bps: None,
            busy_until: Instant::ZERO,
            drops: vec![],
            loss: 0.0,
            rng: Rng::from_seed(7),
            count: 0,
            q: VecDeque::new(),
            mark_above: None,
            marks: 0,
            bleach: false,
        }
    }
    fn send(&mut self, now: Instant, mut dg: Datagram) {
        let i = self.count;
        self.count += 1;
        let lost = self.drops.contains(&i) || (self.loss > 0.0 && self.rng.bernoulli(self.loss));
        let start = self.busy_until.max(now);
        if self.bleach {
            dg.ecn = crate::ecn::Ecn::NotEct;
        }
        if !lost && self.mark_above.is_some_and(|k| start.saturating_since(now) > k) && dg.ecn.set_ce() {
            self.marks += 1;
        }
        let tx = self.rate_bps.map_or(Duration::ZERO, |r| Duration::from_nanos(dg.ip_len() as u64 * 8 * 1_000_000_000 / r));
        self.busy_until = start + tx;
        if !lost {
            let at = (self.busy_until + self.delay).max(self.q.back().map_or(Instant::ZERO, |b| b.0));
            self.q.push_back((at, dg));
        }
    }
    fn next(&self) -> Option<Instant> {
        self.q.front().map(|x| x.0)
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Dir {
    C2S,
    S2C,
}

struct Sent {
    t: Instant,
    dir: Dir,
    dg: Datagram,
    pacing_rate: u64,
}

struct Harness {
    t: Instant,
    c: QuicConnection,
    s: QuicConnection,
    c2s: Link,
    s2c: Link,
    log: Vec<Sent>,
    c_events: Vec<(Instant, Event)>,
    s_events: Vec<(Instant, Event)>,
    /// The server answers each finished client stream with this many bytes.
    response: u64,
    /// Received in-order bytes per side.
    c_bytes: u64,
    s_bytes: u64,
}

impl Harness {
    fn new(c: QuicConnection, s: QuicConnection, one_way: Duration) -> Self {
        Harness {
            t: Instant::ZERO,
            c,
            s,
            c2s: Link::new(one_way),
            s2c: Link::new(one_way),
            log: vec![],
            c_events: vec![],
            s_events: vec![],
            response: 0,
            c_bytes: 0,
            s_bytes: 0,
        }
    }

    fn handshake(cc: QuicConfig, sc: QuicConfig, one_way: Duration) -> Self {
        Self::new(QuicConnection::new(cc, Instant::ZERO).unwrap(), QuicConnection::new(sc, Instant::ZERO).unwrap(), one_way)
    }

    fn established(cc: QuicConfig, sc: QuicConfig, one_way: Duration) -> Self {
        Self::new(
            QuicConnection::new_established(cc, Instant::ZERO).unwrap(),
            QuicConnection::new_established(sc, Instant::ZERO).unwrap(),
            one_way,
        )
    }

    fn flush(&mut self) {
        loop {
            let mut any = false;
            while let Some(e) = self.c.poll_event() {
                if let Event::StreamData { bytes, .. } = e {
                    self.c_bytes += bytes;
                }
                self.c_events.push((self.t, e));
            }
            while let Some(e) = self.s.poll_event() {
                match e {
                    Event::StreamData { bytes, .. } => self.s_bytes += bytes,
                    Event::StreamFinished { id } if self.response > 0 => {
                        self.s.stream_write(id, self.response, true).unwrap();
                    }
                    _ => {}
                }
                self.s_events.push((self.t, e));
            }
            while let Some(d) = self.c.poll_transmit(self.t) {
                any = true;
                self.log.push(Sent { t: self.t, dir: Dir::C2S, dg: d.clone(), pacing_rate: self.c.pacing_rate() });
                self.c2s.send(self.t, d);
            }
            while let Some(d) = self.s.poll_transmit(self.t) {
                any = true;
                self.log.push(Sent { t: self.t, dir: Dir::S2C, dg: d.clone(), pacing_rate: self.s.pacing_rate() });
                self.s2c.send(self.t, d);
            }
            if !any {
                break;
            }
        }
        self.c.invariants().unwrap();
        self.s.invariants().unwrap();
    }

    /// One event time; false when nothing is left to happen before `limit`.
    fn step(&mut self, limit: Instant) -> bool {
        self.flush();
        let next = [self.c2s.next(), self.s2c.next(), self.c.poll_timeout(), self.s.poll_timeout()].into_iter().flatten().min();
        let Some(next) = next else { return false };
        if next > limit {
            return false;
        }
        self.t = next.max(self.t);
        // One datagram at a time, each followed by the endpoints' transmissions.
        while self.c2s.next().is_some_and(|x| x <= self.t) {
            let (_, d) = self.c2s.q.pop_front().unwrap();
            self.s.handle_datagram(self.t, &d);
            self.flush();
        }
        while self.s2c.next().is_some_and(|x| x <= self.t) {
            let (_, d) = self.s2c.q.pop_front().unwrap();
            self.c.handle_datagram(self.t, &d);
            self.flush();
        }
        if self.c.poll_timeout().is_some_and(|x| x <= self.t) {
            self.c.handle_timeout(self.t);
        }
        if self.s.poll_timeout().is_some_and(|x| x <= self.t) {
            self.s.handle_timeout(self.t);
        }
        true
    }

    fn run_until(&mut self, limit: Instant, mut done: impl FnMut(&Harness) -> bool) -> bool {
        loop {
            self.flush();
            if done(self) {
                return true;
            }
            if !self.step(limit) {
                self.flush();
                return done(self);
            }
        }
    }

    fn c_event_time(&self, f: impl Fn(&Event) -> bool) -> Option<Instant> {
        self.c_events.iter().find(|(_, e)| f(e)).map(|x| x.0)
    }
    fn s_event_time(&self, f: impl Fn(&Event) -> bool) -> Option<Instant> {
        self.s_events.iter().find(|(_, e)| f(e)).map(|x| x.0)
    }
}

fn has_stream(d: &Datagram) -> bool {
    d.stream_bytes() > 0
}

fn quiet(role: Role) -> QuicConfig {
    QuicConfig { pacing: false, hybrid_slow_start: None, ..QuicConfig::new(role) }
}

// ---------------------------------------------------------------- handshake

fn request_response(zero_rtt: bool) -> Harness {
    let cc = QuicConfig { zero_rtt, ..QuicConfig::client() };
    let sc = QuicConfig { zero_rtt, ..QuicConfig::server() };
    let mut h = Harness::handshake(cc, sc, ms(10));
    h.response = 8_000;
    let id = h.c.open_stream();
    h.c.stream_write(id, 200, true).unwrap();
    assert!(h.run_until(at_ms(1_000), |h| h.c_events.iter().any(|e| e.1 == Event::StreamFinished { id: 0 })));
    h
}

#[test]
fn handshake_one_rtt_then_request_response_in_two_rtt() {
    let h = request_response(false);
    // Client Initial padded to 1200 bytes (RFC 9000 §14.1).
    let first = &h.log[0];
    assert_eq!((first.t, first.dir, first.dg.len), (Instant::ZERO, Dir::C2S, 1200));
    assert_eq!(first.dg.packets[0].ty, PacketType::Initial);
    // Server: ServerHello + Handshake flight in 3 datagrams, within 3x of 1200 bytes.
    let flight: Vec<&Sent> = h.log.iter().filter(|s| s.dir == Dir::S2C && s.t == at_ms(10)).collect();
    assert_eq!(flight.len(), 3);
    let bytes: u32 = flight.iter().map(|s| s.dg.len).sum();
    assert!(bytes <= 3 * 1200 && bytes > 3000, "{bytes}");
    // Client complete after exactly 1 RTT, and its first stream data leaves then.
    assert_eq!(h.c_event_time(|e| *e == Event::HandshakeComplete), Some(at_ms(20)));
    let first_data = h.log.iter().find(|s| s.dir == Dir::C2S && has_stream(&s.dg)).unwrap();
    assert_eq!(first_data.t, at_ms(20));
    assert!(first_data.dg.packets.iter().any(|p| p.ty == PacketType::OneRtt));
    assert_eq!(h.s_event_time(|e| *e == Event::HandshakeConfirmed), Some(at_ms(30)));
    assert_eq!(h.c_event_time(|e| *e == Event::HandshakeConfirmed), Some(at_ms(40)));
    // Response complete after 2 RTT (no serialization on this link).
    assert_eq!(h.c_event_time(|e| *e == Event::StreamFinished { id: 0 }), Some(at_ms(40)));
    assert_eq!(h.c_bytes, 8_000);
}

#[test]
fn zero_rtt_saves_one_round_trip() {
    let h = request_response(true);
    let first_data = h.log.iter().find(|s| s.dir == Dir::C2S && has_stream(&s.dg)).unwrap();
    assert_eq!(first_data.t, Instant::ZERO);
    assert!(first_data.dg.packets.iter().any(|p| p.ty == PacketType::ZeroRtt));
    assert_eq!(h.c_event_time(|e| *e == Event::StreamFinished { id: 0 }), Some(at_ms(20)));
    assert_eq!(h.c_bytes, 8_000);
}

#[test]
fn response_time_includes_transfer_time_on_a_rate_limited_link() {
    let mut h = Harness::handshake(QuicConfig::client(), QuicConfig::server(), ms(10));
    h.c2s.rate_bps = Some(10_000_000);
    h.s2c.rate_bps = Some(10_000_000);
    h.response = 8_000;
    let id = h.c.open_stream();
    h.c.stream_write(id, 200, true).unwrap();
    assert!(h.run_until(at_ms(1_000), |h| h.c_events.iter().any(|e| e.1 == Event::StreamFinished { id: 0 })));
    let t = h.c_event_time(|e| *e == Event::StreamFinished { id: 0 }).unwrap();
    // Server bytes on the wire up to the response's end, at 10 Mb/s, plus 2 RTT and the
    // client's request/Finished serialization: within a few ms of that.
    let s_bytes: u64 = h.log.iter().filter(|s| s.dir == Dir::S2C && s.t < t).map(|s| s.dg.ip_len() as u64).sum();
    let transfer = Duration::from_nanos(s_bytes * 8 * 100);
    assert!(t >= at_ms(40) + transfer, "{t:?} {transfer:?}");
    assert!(t <= at_ms(40) + transfer + ms(5), "{t:?} {transfer:?}");
}

// ---------------------------------------------------------------- ACK frames

fn est(cfg: QuicConfig) -> QuicConnection {
    QuicConnection::new_established(cfg, Instant::ZERO).unwrap()
}

fn drain(c: &mut QuicConnection, now: Instant) -> Vec<Datagram> {
    let mut v = vec![];
    while let Some(d) = c.poll_transmit(now) {
        v.push(d);
    }
    v
}

fn acks_in(dgs: &[Datagram]) -> Vec<AckFrame> {
    dgs.iter().flat_map(|d| d.packets.iter()).filter_map(|p| p.ack().copied()).collect()
}

#[test]
fn ack_frame_ranges_after_gaps_and_ack_delay() {
    let mut c = est(quiet(Role::Client));
    let mut s = est(quiet(Role::Server));
    let id = c.open_stream();
    c.stream_write(id, 100_000, false).unwrap();
    let dgs = drain(&mut c, Instant::ZERO);
    assert_eq!(dgs.len(), 10);
    assert!(dgs.iter().all(|d| d.len == 1350), "{:?}", dgs.iter().map(|d| d.len).collect::<Vec<_>>());
    let mut last_ack = None;
    for (i, d) in dgs.iter().enumerate() {
        if [3, 6, 7].contains(&i) {
            continue;
        }
        s.handle_datagram(at_us(10_000 + i as u64), d);
        if let Some(a) = acks_in(&drain(&mut s, at_us(10_000 + i as u64))).last() {
            last_ack = Some(*a);
        }
    }
    assert_eq!(last_ack.unwrap().ranges(), &[(8, 8), (4, 5), (0, 2)]);
    // Packet 9 (in order, alone) is acknowledged when the delayed-ACK timer fires.
    let t = s.poll_timeout().unwrap();
    assert_eq!(t, at_us(10_009) + ms(25));
    s.handle_timeout(t);
    let a = *acks_in(&drain(&mut s, t)).last().unwrap();
    assert_eq!(a.ranges(), &[(8, 9), (4, 5), (0, 2)]);
    // Size: type, largest, delay (25 ms / 8 µs = 3125: 2 bytes), count, first range,
    // 2 x (gap, length).
    assert_eq!(a.ack_delay, ms(25));
    assert_eq!(a.wire_len(), 1 + 1 + 2 + 1 + 1 + 4);
    // A lone packet is acknowledged after max_ack_delay, and the delay is reported.
    let mut c = est(quiet(Role::Client));
    let mut s = est(quiet(Role::Server));
    let id = c.open_stream();
    c.stream_write(id, 500, true).unwrap();
    let d = drain(&mut c, Instant::ZERO);
    s.handle_datagram(at_ms(10), &d[0]);
    assert!(drain(&mut s, at_ms(10)).is_empty());
    assert_eq!(s.poll_timeout(), Some(at_ms(35)));
    s.handle_timeout(at_ms(35));
    let a = acks_in(&drain(&mut s, at_ms(35)));
    assert_eq!(a.len(), 1);
    assert_eq!((a[0].ranges(), a[0].ack_delay), (&[(0u64, 0u64)][..], ms(25)));
}

// ---------------------------------------------------------------- loss detection

/// A synthetic ACK datagram from the peer (1-RTT).
fn ack_dg(pn: u64, ranges: &[(u64, u64)], delay: Duration) -> Datagram {
    let a = AckFrame::new(delay, ranges.iter().copied());
    let frames = vec![Frame::Ack(a)];
    let len = 50;
    Datagram { packets: vec![Packet { ty: PacketType::OneRtt, pn, frames, len }], len, ecn: crate::ecn::Ecn::NotEct }
}

fn sender_with_10_packets() -> QuicConnection {
    let mut c = est(quiet(Role::Client));
    let id = c.open_stream();
    c.stream_write(id, 100_000, false).unwrap();
    assert_eq!(drain(&mut c, Instant::ZERO).len(), 10);
    c
}

#[test]
fn packet_threshold_loss_on_the_third_later_packet() {
    let mut c = sender_with_10_packets();
    c.handle_datagram(at_ms(20), &ack_dg(0, &[(4, 5), (0, 2)], Duration::ZERO));
    assert_eq!(c.stats().packets_lost, 0);
    assert_eq!(c.srtt(), ms(20));
    c.handle_datagram(at_ms(20), &ack_dg(1, &[(4, 6), (0, 2)], Duration::ZERO));
    assert_eq!(c.stats().packets_lost, 1);
    assert_eq!(c.stats().congestion_events, 1);
    c.invariants().unwrap();
    // The lost bytes leave in a new packet number (10 and on).
    let d = drain(&mut c, at_ms(20));
    let p = &d[0].packets[0];
    assert!(p.pn >= 10);
    assert!(p.frames.iter().any(|f| matches!(f, Frame::Stream { offset, .. } if *offset > 0 && *offset < 5_000)));
}

#[test]
fn time_threshold_loss_after_nine_eighths_rtt() {
    let mut c = sender_with_10_packets();
    c.handle_datagram(at_ms(20), &ack_dg(0, &[(4, 4), (0, 2)], Duration::ZERO));
    // loss_delay = 9/8 x 20 ms = 22.5 ms from the send time of packet 3 (t = 0).
    assert_eq!(c.poll_timeout(), Some(at_us(22_500)));
    c.handle_timeout(at_us(22_499));
    assert_eq!(c.stats().packets_lost, 0);
    c.handle_timeout(at_us(22_500));
    assert_eq!(c.stats().packets_lost, 1);
    c.invariants().unwrap();
}

#[test]
fn pto_fires_on_tail_loss_with_exponential_backoff() {
    let mut c = est(quiet(Role::Client));
    let id = c.open_stream();
    c.stream_write(id, 3_000, true).unwrap();
    assert_eq!(drain(&mut c, Instant::ZERO).len(), 3);
    c.handle_datagram(at_ms(20), &ack_dg(0, &[(0, 0)], Duration::ZERO));
    // PTO = srtt + 4 rttvar + max_ack_delay = 20 + 40 + 25 ms after the last send (t = 0).
    assert_eq!(c.poll_timeout(), Some(at_ms(85)));
    c.handle_timeout(at_ms(85));
    assert_eq!(c.pto_count(), 1);
    let probes = drain(&mut c, at_ms(85));
    assert_eq!(probes.len(), 2);
    assert!(probes.iter().all(|d| d.packets[0].pn >= 3 && d.ack_eliciting()));
    assert!(probes.iter().any(|d| d.stream_bytes() > 0));
    // Backed off: (20 + 40) x 2 + 25 x 2 after the probes.
    assert_eq!(c.poll_timeout(), Some(at_ms(85 + 170)));
    c.handle_timeout(at_ms(255));
    assert_eq!(c.pto_count(), 2);
    assert_eq!(drain(&mut c, at_ms(255)).len(), 2);
    assert_eq!(c.poll_timeout(), Some(at_ms(255 + 340)));
    assert_eq!(c.stats().pto_count, 2);
    assert_eq!(c.stats().congestion_events, 0);
    c.invariants().unwrap();
}

#[test]
fn lost_data_including_the_tail_is_retransmitted_and_delivered_exactly() {
    let mut h = Harness::established(QuicConfig::client(), QuicConfig::server(), ms(10));
    h.c2s.drops = vec![2, 5, 6, 13, 40, 41];
    h.s2c.drops = vec![1, 3];
    let total = 200_000u64;
    let id = h.c.open_stream();
    h.c.stream_write(id, total, true).unwrap();
    // The last data datagrams are lost too: the client's PTO must recover them.
    let n_data = (total / 1300) + 1;
    h.c2s.drops.extend([n_data + 5, n_data + 6, n_data + 7]);
    assert!(h.run_until(at_ms(10_000), |h| h.s_events.iter().any(|e| e.1 == Event::StreamFinished { id })));
    assert_eq!(h.s_bytes, total);
    assert!(h.c.stats().packets_lost >= 6, "{:?}", h.c.stats());
    assert!(h.c.stats().stream_bytes_retransmitted > 0);
    assert!(h.run_until(at_ms(10_000), |h| h.c.stream_send_complete(id)));
    // No packet number was ever used twice.
    let mut pns: Vec<u64> = h.log.iter().filter(|s| s.dir == Dir::C2S).flat_map(|s| s.dg.packets.iter().map(|p| p.pn)).collect();
    let n = pns.len();
    pns.dedup();
    assert_eq!(pns.len(), n);
}

// ---------------------------------------------------------------- RTT estimator

#[test]
fn rtt_estimator_matches_rfc9002_hand_computation() {
    let mut r = RttEstimator::new();
    assert_eq!((r.smoothed(), r.var()), (ms(333), Duration::from_micros(166_500)));
    r.update(ms(100), Duration::ZERO);
    assert_eq!((r.min(), r.smoothed(), r.var()), (ms(100), ms(100), ms(50)));
    // 160 ms with 20 ms ACK delay: adjusted 140; rttvar = 3/4·50 + 1/4·40; srtt = 7/8·100 + 1/8·140.
    r.update(ms(160), ms(20));
    assert_eq!((r.min(), r.smoothed(), r.var()), (ms(100), ms(105), Duration::from_micros(47_500)));
    // 110 ms with 30 ms delay: 110 < min + delay, so not adjusted.
    r.update(ms(110), ms(30));
    assert_eq!((r.smoothed(), r.var()), (Duration::from_micros(105_625), Duration::from_micros(36_875)));
    r.update(ms(90), Duration::ZERO);
    assert_eq!((r.min(), r.smoothed(), r.var()), (ms(90), Duration::from_nanos(103_671_875), Duration::from_nanos(31_562_500)));
    assert_eq!(r.latest(), ms(90));
    assert_eq!(r.pto_base(), Duration::from_nanos(103_671_875) + Duration::from_micros(126_250));
}

#[test]
fn ack_delay_is_capped_by_max_ack_delay_after_confirmation() {
    let mut c = sender_with_10_packets();
    c.handle_datagram(at_ms(100), &ack_dg(0, &[(0, 0)], ms(10)));
    assert_eq!(c.srtt(), ms(100));
    // Second sample 200 ms with a claimed 100 ms delay: only 25 ms may be subtracted.
    c.handle_datagram(at_ms(200), &ack_dg(1, &[(0, 1)], ms(100)));
    assert_eq!(c.srtt(), Duration::from_nanos((7 * 100_000_000 + 175_000_000) / 8));
}

// ---------------------------------------------------------------- congestion control

#[test]
fn slow_start_doubles_cwnd_every_round_trip() {
    let mut h = Harness::established(quiet(Role::Client), quiet(Role::Server), ms(10));
    let id = h.c.open_stream();
    h.c.stream_write(id, 5_000_000, true).unwrap();
    let mut cw = vec![h.c.cwnd()];
    for k in 1..=4 {
        h.run_until(at_ms(20 * k + 1), |_| false);
        cw.push(h.c.cwnd());
    }
    for k in 1..cw.len() {
        assert_eq!(cw[k], 2 * cw[k - 1], "{cw:?}");
    }
    assert!(h.c.in_slow_start());
}

#[test]
fn one_cwnd_reduction_per_recovery_period() {
    let mut h = Harness::established(quiet(Role::Client), quiet(Role::Server), ms(10));
    // Three losses in the same window (packets of round 3), then one much later.
    h.c2s.drops = vec![40, 45, 50];
    let id = h.c.open_stream();
    h.c.stream_write(id, 3_000_000, true).unwrap();
    // Round 3 (packets 30..69) is acknowledged from 60 ms on; the first gap is seen a few
    // ACKs later.
    h.run_until(at_ms(59), |_| false);
    let before = h.c.cwnd();
    assert_eq!(h.c.stats().congestion_events, 0);
    h.run_until(at_ms(115), |_| false);
    let st = h.c.stats();
    assert_eq!((st.packets_lost, st.congestion_events), (3, 1), "{st:?}");
    // Chromium's CUBIC (two emulated connections): beta_eff = 0.85, once.
    assert!(!h.c.in_slow_start());
    let after = h.c.ssthresh() as f64;
    // (cwnd grew by up to 14 packets of round 3 before the gap was seen; a second reduction
    // would leave 0.72.)
    assert!(after >= 0.85 * before as f64 && after <= 0.85 * (before + 15 * 1350) as f64, "{before} {after}");
    let n = h.c2s.count;
    h.c2s.drops.push(n + 100);
    h.run_until(at_ms(400), |_| false);
    assert_eq!(h.c.stats().congestion_events, 2);
}

fn hss_run(rise: bool) -> QuicConnection {
    let cfg = QuicConfig { pacing: false, ..QuicConfig::client() };
    let mut h = Harness::established(cfg, quiet(Role::Server), ms(10));
    let id = h.c.open_stream();
    h.c.stream_write(id, 5_000_000, true).unwrap();
    // Round trips 1-2 at 20 ms; from round 3 on the queue adds 6 ms (threshold: max(4 ms, 20/8 ms)).
    h.run_until(at_ms(45), |_| false);
    assert!(h.c.in_slow_start());
    if rise {
        h.c2s.delay = ms(16);
    }
    h.run_until(at_ms(150), |_| false);
    h.c
}

#[test]
fn delay_based_slow_start_exit_triggers_only_on_rtt_rise() {
    let c = hss_run(true);
    assert_eq!(c.stats().slow_start_delay_exits, 1);
    assert!(!c.in_slow_start());
    assert_eq!(c.stats().packets_lost, 0);
    let c = hss_run(false);
    assert_eq!(c.stats().slow_start_delay_exits, 0);
    assert!(c.in_slow_start());
    assert!(c.cwnd() >= 16 * 1350);
}

/// Chromium's `HybridSlowStart` compares min_rtt with `RttStats::latest_rtt`, the sample less
/// the peer's ACK delay: a sample that is long only because the peer held its ACK back does
/// not end slow start; the same rise without that ACK delay does.
#[test]
fn delay_exit_uses_the_sample_less_the_ack_delay() {
    for (delay, exits) in [(ms(9), 0), (ms(0), 1)] {
        let hss = HybridSlowStartConfig { n_samples: 1, low_window_packets: 0, ..HybridSlowStartConfig::default() };
        let mut c = est(QuicConfig { hybrid_slow_start: Some(hss), ..quiet(Role::Client) });
        let id = c.open_stream();
        c.stream_write(id, 1_000_000, false).unwrap();
        assert_eq!(drain(&mut c, Instant::ZERO).len(), 10);
        // Round 1: pn 0 acknowledged after 20 ms, no ACK delay: min_rtt = 20 ms.
        c.handle_datagram(at_ms(20), &ack_dg(0, &[(0, 0)], Duration::ZERO));
        assert!(!drain(&mut c, at_ms(20)).is_empty());
        // Round 2: pn 10 (sent at 20 ms) acknowledged at 50 ms: 30 ms raw, above min_rtt + 4 ms.
        c.handle_datagram(at_ms(50), &ack_dg(1, &[(0, 10)], delay));
        assert_eq!(c.stats().slow_start_delay_exits, exits, "ACK delay {delay:?}");
    }
}

#[test]
fn delay_exit_waits_for_the_low_window() {
    // Same rise, but a low window above what slow start reaches by then.
    let hss = HybridSlowStartConfig { low_window_packets: 100_000, ..HybridSlowStartConfig::default() };
    let cfg = QuicConfig { pacing: false, hybrid_slow_start: Some(hss), ..QuicConfig::client() };
    let mut h = Harness::established(cfg, quiet(Role::Server), ms(10));
    let id = h.c.open_stream();
    h.c.stream_write(id, 5_000_000, true).unwrap();
    h.run_until(at_ms(45), |_| false);
    h.c2s.delay = ms(16);
    h.run_until(at_ms(150), |_| false);
    assert_eq!(h.c.stats().slow_start_delay_exits, 0);
}

// ---------------------------------------------------------------- pacing

fn data_sends(h: &Harness) -> Vec<&Sent> {
    h.log.iter().filter(|s| s.dir == Dir::C2S && has_stream(&s.dg)).collect()
}

#[test]
fn pacing_spaces_packets_after_the_initial_burst() {
    let cfg = QuicConfig { hybrid_slow_start: None, ..QuicConfig::client() };
    let mut h = Harness::established(cfg, quiet(Role::Server), ms(10));
    let id = h.c.open_stream();
    h.c.stream_write(id, 2_000_000, true).unwrap();
    h.run_until(at_ms(60), |_| false);
    let sends = data_sends(&h);
    // Initial burst: 10 packets at t = 0.
    assert_eq!(sends.iter().filter(|s| s.t == Instant::ZERO).count(), 10);
    // Later: consecutive departures len / rate apart (rate taken at the earlier send; the
    // release is never early and at most one delivery event late).
    let later: Vec<&&Sent> = sends.iter().filter(|s| s.t > at_ms(21)).collect();
    assert!(later.len() > 20);
    let mut checked = 0;
    for w in later.windows(2) {
        let gap = (w[1].t - w[0].t).as_nanos() as f64;
        let want = w[0].dg.len as f64 * 1e9 / w[0].pacing_rate as f64;
        assert!(gap >= want * 0.99, "gap {gap} want {want}");
        if gap <= want * 1.05 {
            checked += 1;
        }
    }
    assert!(checked * 10 >= later.len() * 8, "{checked} of {}", later.len());
}

#[test]
fn chromium_v39_pacing_sends_lumps_within_the_alarm_granularity() {
    use super::pacer::{PacerMode, ALARM_GRANULARITY};
    let per = QuicConfig { hybrid_slow_start: None, ..QuicConfig::client() };
    let v39 = QuicConfig { pacer: PacerMode::ChromiumV39, ..per };
    let mut lumps = Vec::new();
    for cfg in [per, v39] {
        let mut h = Harness::established(cfg, quiet(Role::Server), ms(10));
        let id = h.c.open_stream();
        h.c.stream_write(id, 2_000_000, true).unwrap();
        h.run_until(at_ms(60), |_| false);
        let later: Vec<&Sent> = data_sends(&h).into_iter().filter(|s| s.t > at_ms(21)).collect();
        assert!(later.len() > 20);
        // Chromium's pacer never lets a packet leave more than the granularity before its time
        // at the rate it was paced at: over the run, the sends stay within 1 ms of a schedule.
        let (first, last) = (later[0], later[later.len() - 1]);
        let bytes: u64 = later[..later.len() - 1].iter().map(|s| s.dg.len as u64).sum();
        let min_rate = later.iter().map(|s| s.pacing_rate).min().unwrap();
        let max_rate = later.iter().map(|s| s.pacing_rate).max().unwrap();
        let fastest = Duration::from_nanos((bytes as u128 * 1_000_000_000 / max_rate as u128) as u64);
        assert!(last.t - first.t + ALARM_GRANULARITY >= fastest, "{:?} for {bytes} B", last.t - first.t);
        assert!(min_rate > 0);
        let mut instants: Vec<Instant> = later.iter().map(|s| s.t).collect();
        let n = instants.len();
        instants.dedup();
        lumps.push(n as f64 / instants.len() as f64);
    }
    // Per packet: one packet per instant; Chromium's: several per instant.
    assert!(lumps[0] < 1.1, "{lumps:?}");
    assert!(lumps[1] > 2.0, "{lumps:?}");
}

#[test]
fn without_pacing_packets_leave_back_to_back() {
    let mut h = Harness::established(quiet(Role::Client), quiet(Role::Server), ms(10));
    let id = h.c.open_stream();
    h.c.stream_write(id, 2_000_000, true).unwrap();
    h.run_until(at_ms(60), |_| false);
    let sends = data_sends(&h);
    // Every departure coincides with an ACK arrival: at most a few distinct instants per
    // round, and several packets per instant.
    let mut instants: Vec<Instant> = sends.iter().map(|s| s.t).collect();
    let n = instants.len();
    instants.dedup();
    assert!(n >= 3 * instants.len(), "{n} packets at {} instants", instants.len());
    assert_eq!(h.c.pacing_rate(), 0);
}

// ---------------------------------------------------------------- flow control

#[test]
fn small_stream_window_blocks_until_max_stream_data() {
    let sc = QuicConfig { initial_max_stream_data: 10_000, ..quiet(Role::Server) };
    let cc = QuicConfig { initial_max_stream_data: 10_000, ..quiet(Role::Client) };
    let mut h = Harness::established(cc, sc, ms(10));
    let id = h.c.open_stream();
    h.c.stream_write(id, 50_000, true).unwrap();
    assert!(h.run_until(at_ms(2_000), |h| h.s_events.iter().any(|e| e.1 == Event::StreamFinished { id })));
    assert_eq!(h.s_bytes, 50_000);
    let first_msd = h
        .log
        .iter()
        .find(|s| s.dir == Dir::S2C && s.dg.packets.iter().any(|p| p.frames.iter().any(|f| matches!(f, Frame::MaxStreamData { .. }))))
        .map(|s| s.t + ms(10))
        .unwrap();
    let sent_before: u64 = data_sends(&h).iter().filter(|s| s.t < first_msd).map(|s| s.dg.stream_bytes()).sum();
    assert_eq!(sent_before, 10_000);
    assert!(h.c.stats().flow_control_blocked > 0);
    // And the sender resumed when the credit arrived.
    assert!(data_sends(&h).iter().any(|s| s.t == first_msd));
}

// ---------------------------------------------------------------- ACK policies

fn ack_ratio(kind: AckPolicyKind) -> (f64, f64) {
    let sc = QuicConfig { ack_policy: AckPolicyConfig::with_kind(kind), ..quiet(Role::Server) };
    let mut h = Harness::established(quiet(Role::Client), sc, ms(10));
    // Serialization spaces the arrivals.
    h.c2s.rate_bps = Some(100_000_000);
    let id = h.c.open_stream();
    h.c.stream_write(id, 1_000_000, true).unwrap();
    // ACKs per ack-eliciting packet received, up to packet 100 and after.
    assert!(h.run_until(at_ms(5_000), |h| h.s.ack_policy_stats().ack_eliciting >= 100));
    let e = h.s.ack_policy_stats();
    assert!(h.run_until(at_ms(5_000), |h| h.s_bytes == 1_000_000));
    let l = h.s.ack_policy_stats();
    // Cross-check with the ACK frames on the wire.
    let wire = h.log.iter().filter(|s| s.dir == Dir::S2C && s.dg.packets.iter().any(|p| p.ack().is_some())).count() as u64;
    assert_eq!(wire, l.acks_sent);
    (e.acks_sent as f64 / e.ack_eliciting as f64, (l.acks_sent - e.acks_sent) as f64 / (l.ack_eliciting - e.ack_eliciting) as f64)
}

#[test]
fn tcp_acking_acks_every_second_packet() {
    let (early, late) = ack_ratio(AckPolicyKind::TcpAcking);
    assert!((0.45..=0.56).contains(&early) && (0.45..=0.56).contains(&late), "{early} {late}");
}

#[test]
fn ack_decimation_acks_every_tenth_packet_after_100() {
    let (early, late) = ack_ratio(AckPolicyKind::AckDecimation);
    assert!((0.45..=0.56).contains(&early), "{early}");
    assert!((0.08..=0.13).contains(&late), "{late}");
}

#[test]
fn ack_frequency_request_is_honoured_by_the_peer() {
    let req = AckFrequencyRequest { threshold: 4, max_ack_delay: ms(5), reordering: 1 };
    let cc = QuicConfig { ack_frequency_request: Some(req), ..quiet(Role::Client) };
    let sc = QuicConfig { ack_policy: AckPolicyConfig::with_kind(AckPolicyKind::AckFrequency), ..quiet(Role::Server) };
    let mut h = Harness::handshake(cc, sc, ms(10));
    let id = h.c.open_stream();
    h.c.stream_write(id, 1_000_000, true).unwrap();
    assert!(h.run_until(at_ms(5_000), |h| h.s_bytes == 1_000_000));
    assert!(h.log.iter().any(|s| s.dir == Dir::C2S
        && s.dg.packets.iter().any(|p| p.frames.iter().any(|f| matches!(f, Frame::AckFrequency { threshold: 4, .. })))));
    let st = h.s.ack_policy_stats();
    assert_eq!(st.frames_applied, 1);
    let ratio = st.acks_sent as f64 / st.ack_eliciting as f64;
    assert!((0.17..=0.25).contains(&ratio), "{ratio}");
}

// ---------------------------------------------------------------- bulk transfer

#[test]
fn ten_megabytes_over_a_lossy_50mbps_link() {
    let mut h = Harness::established(QuicConfig::client(), QuicConfig::server(), ms(5));
    for l in [&mut h.c2s, &mut h.s2c] {
        l.rate_bps = Some(50_000_000);
        l.loss = 0.005;
    }
    h.s2c.rng = Rng::from_seed(99);
    let total = 10_000_000u64;
    let id = h.c.open_stream();
    h.c.stream_write(id, total, true).unwrap();
    assert!(h.run_until(at_ms(60_000), |h| h.s_events.iter().any(|e| e.1 == Event::StreamFinished { id })));
    let t = h.s_event_time(|e| *e == Event::StreamFinished { id }).unwrap();
    assert_eq!(h.s_bytes, total);
    let finished = h.s_events.iter().filter(|e| matches!(e.1, Event::StreamFinished { .. })).count();
    assert_eq!(finished, 1);
    let goodput = total as f64 * 8.0 / (t - Instant::ZERO).as_secs_f64();
    let st = h.c.stats();
    assert!(st.packets_lost > 20, "{st:?}");
    assert!(goodput > 0.6 * 50e6, "goodput {goodput} {st:?}");
}

// ---------------------------------------------------------------- lifecycle

#[test]
fn idle_timeout_closes_both_sides() {
    let mut cc = QuicConfig::client();
    cc.idle_timeout = Duration::from_secs(5);
    let mut h = Harness::handshake(cc, QuicConfig::server(), ms(10));
    assert!(h.run_until(at_ms(100), |h| h.c.is_handshake_confirmed()));
    h.run_until(at_ms(60_000), |_| false);
    assert!(h.c.is_closed() && h.s.is_closed());
    let tc = h.c_event_time(|e| *e == Event::Closed { reason: CloseReason::IdleTimeout }).unwrap();
    let ts = h.s_event_time(|e| *e == Event::Closed { reason: CloseReason::IdleTimeout }).unwrap();
    // The smaller timeout (5 s) from the last packet each side processed.
    assert!(tc >= at_ms(5_000) && tc <= at_ms(5_100), "{tc:?}");
    assert!(ts >= at_ms(5_000) && ts <= at_ms(5_100), "{ts:?}");
}

#[test]
fn explicit_close_reaches_the_peer() {
    let mut h = Harness::handshake(QuicConfig::client(), QuicConfig::server(), ms(10));
    assert!(h.run_until(at_ms(100), |h| h.c.is_handshake_confirmed()));
    h.c.close(h.t, 7);
    h.run_until(at_ms(1_000), |h| h.s.is_closed());
    assert!(h.c.is_closed() && h.s.is_closed());
    assert!(h.s_events.iter().any(|e| e.1 == Event::Closed { reason: CloseReason::Peer(7) }));
    assert!(h.c_events.iter().any(|e| e.1 == Event::Closed { reason: CloseReason::Local(7) }));
}

#[test]
fn config_validation_names_the_field() {
    let bad = |c: QuicConfig, f: &str| assert_eq!(c.validate().unwrap_err().field, f);
    let d = QuicConfig::client();
    assert_eq!(d.validate(), Ok(()));
    bad(QuicConfig { max_udp_payload: 1000, ..d }, "max_udp_payload");
    bad(QuicConfig { initial_cwnd_packets: 0, ..d }, "initial_cwnd_packets");
    bad(QuicConfig { idle_timeout: Duration::ZERO, ..d }, "idle_timeout");
    bad(QuicConfig { packet_threshold: 2, ..d }, "packet_threshold");
    bad(QuicConfig { initial_max_stream_data: 0, ..d }, "initial_max_stream_data");
    assert_eq!(QuicConfig { initial_cwnd_bytes: Some(40_000), ..d }.initial_cwnd(), 40_000);
    assert_eq!(d.initial_cwnd(), 13_500);
}

mod ecn;
