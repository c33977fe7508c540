//! Tests of the TCP endpoints: a tiny deterministic harness connects a sender and a receiver
//! through a FIFO link of fixed rate and one-way delay (ACKs: delay only), dropping listed
//! transmissions, and drives `poll_transmit` / `poll_ack` / `poll_timeout` by hand.

use super::*;
use crate::ecn::{Ecn, EcnMode};
use crate::tcp::{data_ip_len, TcpReceiver, TcpReceiverConfig};
use alloc::collections::VecDeque;
use alloc::vec;
use alloc::vec::Vec;

const MSS: u32 = 1448;

#[derive(Clone, Copy, Debug)]
#[allow(clippy::large_enum_variant)]
enum Log {
    Sent { t: Instant, seg: DataSegment },
    AckRx { t: Instant, ack: AckSegment, cwnd_before: u64, stats: SenderStats },
    Rto { t: Instant },
}

struct Net {
    s: TcpSender,
    r: TcpReceiver,
    now: Instant,
    /// Link rate in bytes per second (IP bytes).
    rate: u64,
    delay: Duration,
    link_free: Instant,
    data_q: VecDeque<(Instant, DataSegment)>,
    ack_q: VecDeque<(Instant, AckSegment)>,
    /// Transmissions to drop: (seq, how many of its next transmissions).
    drops: Vec<(u64, u32)>,
    /// Random loss of every transmission with this probability (per million), drawn from a
    /// seeded xorshift generator.
    loss_ppm: u32,
    rng: u64,
    /// Extra one-way delay for the next transmission of a segment: (seq, delay) — reordering.
    delays: Vec<(u64, Duration)>,
    log: Vec<Log>,
    samples: Vec<(Instant, RateSample)>,
    delivered: u64,
    /// Step marking at the link (DCTCP's K as a sojourn time): an ECN-capable segment that
    /// waits longer than this for the link is marked CE; a Not-ECT one passes.
    mark_above: Option<Duration>,
    /// CE marks made by the link.
    marks: u64,
}

impl Net {
    fn new(scfg: TcpSenderConfig, rate_bps: u64, delay_ms: u64) -> Net {
        let rcfg = TcpReceiverConfig { mss: scfg.mss, ..TcpReceiverConfig::default() };
        Net {
            s: TcpSender::new(scfg, Instant::ZERO),
            r: TcpReceiver::new(rcfg),
            now: Instant::ZERO,
            rate: rate_bps / 8,
            delay: Duration::from_millis(delay_ms),
            link_free: Instant::ZERO,
            data_q: VecDeque::new(),
            ack_q: VecDeque::new(),
            drops: Vec::new(),
            loss_ppm: 0,
            rng: 0x9E37_79B9_7F4A_7C15,
            delays: Vec::new(),
            log: Vec::new(),
            samples: Vec::new(),
            delivered: 0,
            mark_above: None,
            marks: 0,
        }
    }

    fn newreno() -> TcpSenderConfig {
        TcpSenderConfig::default()
    }

    /// Drop the first `n` transmissions of the segment starting at segment index `k`.
    fn drop_seg(&mut self, k: u64, n: u32) {
        self.drops.push((k * MSS as u64, n));
    }

    fn pump(&mut self) {
        while let Some(mut seg) = self.s.poll_transmit(self.now, 0) {
            self.log.push(Log::Sent { t: self.now, seg });
            let ser = data_ip_len(seg.len) as u64 * 1_000_000_000 / self.rate;
            let start = self.link_free.max(self.now);
            if self.mark_above.is_some_and(|k| start.saturating_since(self.now) > k) && seg.ecn.set_ce() {
                self.marks += 1;
            }
            self.link_free = start + Duration::from_nanos(ser);
            let mut dropped = false;
            for d in self.drops.iter_mut() {
                if d.0 == seg.seq && d.1 > 0 {
                    d.1 -= 1;
                    dropped = true;
                    break;
                }
            }
            if !dropped && self.loss_ppm > 0 {
                self.rng ^= self.rng << 13;
                self.rng ^= self.rng >> 7;
                self.rng ^= self.rng << 17;
                dropped = self.rng % 1_000_000 < self.loss_ppm as u64;
            }
            if !dropped {
                let mut at = self.link_free + self.delay;
                if let Some(i) = self.delays.iter().position(|d| d.0 == seg.seq) {
                    at += self.delays.swap_remove(i).1;
                }
                // Keep the queue sorted by arrival time (FIFO among equal times).
                let pos = self.data_q.partition_point(|x| x.0 <= at);
                self.data_q.insert(pos, (at, seg));
            }
        }
        while let Some(a) = self.r.poll_ack(self.now) {
            self.ack_q.push_back((self.now + self.delay, a));
        }
    }

    /// Process one event. False when nothing is left to happen.
    fn step(&mut self) -> bool {
        self.pump();
        let cands = [
            self.data_q.front().map(|x| x.0),
            self.ack_q.front().map(|x| x.0),
            self.s.poll_timeout(),
            self.r.poll_timeout(),
        ];
        let Some(t) = cands.iter().flatten().min().copied() else { return false };
        self.now = self.now.max(t);
        if self.data_q.front().is_some_and(|x| x.0 <= self.now) {
            let (_, seg) = self.data_q.pop_front().unwrap();
            self.delivered += self.r.handle_segment(self.now, &seg);
        } else if self.ack_q.front().is_some_and(|x| x.0 <= self.now) {
            let (_, ack) = self.ack_q.pop_front().unwrap();
            let cwnd_before = self.s.stats().cwnd;
            let delivered = self.s.stats().delivered;
            self.s.handle_ack(self.now, &ack);
            if self.s.stats().delivered > delivered {
                // Every ACK that newly acknowledges data carries a rate sample.
                self.samples.push((self.now, self.s.last_rate_sample().expect("rate sample")));
            }
            self.log.push(Log::AckRx { t: self.now, ack, cwnd_before, stats: self.s.stats() });
        } else {
            let rtos = self.s.stats().rto_count;
            if self.s.poll_timeout().is_some_and(|x| x <= self.now) {
                self.s.handle_timeout(self.now);
            }
            if self.s.stats().rto_count > rtos {
                self.log.push(Log::Rto { t: self.now });
            }
            if self.r.poll_timeout().is_some_and(|x| x <= self.now) {
                self.r.handle_timeout(self.now);
            }
        }
        assert_eq!(self.s.pipe(), self.s.set_pipe_slow(), "pipe counters drift");
        true
    }

    fn run_until_done(&mut self, limit: Duration) {
        let end = Instant::ZERO + limit;
        while !self.s.is_done() && self.now < end {
            if !self.step() {
                break;
            }
        }
        assert!(self.s.is_done(), "transfer did not complete by {:?}: {:?}", self.now, self.s.stats());
    }

    fn run_for(&mut self, d: Duration) {
        let end = self.now + d;
        while self.now < end && self.step() {}
    }

    fn sent(&self) -> impl Iterator<Item = (Instant, DataSegment)> + '_ {
        self.log.iter().filter_map(|l| match l {
            Log::Sent { t, seg } => Some((*t, *seg)),
            _ => None,
        })
    }
}

fn segs(n: u64) -> u64 {
    n * MSS as u64
}

#[test]
fn lossless_bulk_transfer() {
    let mut net = Net::new(Net::newreno(), 10_000_000, 10);
    let n = 1000;
    net.s.app_write(segs(n));
    net.run_until_done(Duration::from_secs(10));
    let st = net.s.stats();
    assert_eq!(net.delivered, segs(n));
    assert_eq!(net.r.delivered(), segs(n));
    assert_eq!(st.retransmits, 0);
    assert_eq!(st.rto_count, 0);
    assert_eq!(st.fast_recovery_count, 0);
    assert_eq!(st.segments_sent, n);
    assert!(st.cwnd > 10 * MSS as u64, "cwnd grew: {}", st.cwnd);
    assert!(st.done && st.app_bytes_acked == segs(n) && st.bytes_in_flight == 0);
    assert!(net.s.poll_timeout().is_none(), "no timer once everything is acknowledged");
    // Quick-ack for the first 16 segments, then one ACK per two segments.
    let acks = net.r.acks_sent();
    let expect = 16 + (n - 16) / 2;
    assert!(acks >= expect && acks <= expect + 5, "acks {acks}, expected about {expect}");
    // 1000 segments of 1500 IP bytes at 10 Mbit/s take 1.2 s; slow start adds a few RTTs.
    assert!(net.now < Instant::ZERO + Duration::from_millis(1600), "took {:?}", net.now);
    // srtt and min_rtt are plausible: 20 ms propagation + 1.2 ms serialisation at least.
    assert!(st.min_rtt >= Duration::from_millis(21) && st.min_rtt < Duration::from_millis(23));
    assert!(st.srtt >= st.min_rtt);
}

/// Index of the Sent event of the first retransmission, and the dupACKs received before it.
fn dupacks_before_first_rtx(net: &Net, hole: u64) -> (usize, Vec<usize>) {
    let mut dups = Vec::new();
    for (i, l) in net.log.iter().enumerate() {
        match l {
            Log::AckRx { ack, .. } if ack.cum_ack == hole && ack.n_sack > 0 => dups.push(i),
            Log::Sent { seg, .. } if seg.retransmit => return (i, dups),
            _ => {}
        }
    }
    panic!("no retransmission");
}

#[test]
fn single_loss_fast_retransmit_and_limited_transmit() {
    let mut net = Net::new(Net::newreno(), 10_000_000, 10);
    let n = 400;
    net.s.app_write(segs(n));
    net.drop_seg(50, 1);
    net.run_until_done(Duration::from_secs(10));
    let st = net.s.stats();
    assert_eq!(st.retransmits, 1);
    assert_eq!(st.rto_count, 0);
    assert_eq!(st.fast_recovery_count, 1);
    assert!(!net.s.in_recovery && !net.s.in_loss, "recovery exited");
    assert_eq!(net.r.delivered(), segs(n));

    // Fast retransmit exactly on the third duplicate ACK.
    let (rtx, dups) = dupacks_before_first_rtx(&net, segs(50));
    assert_eq!(dups.len(), 3, "dupACKs before the retransmission");
    let Log::Sent { seg, .. } = net.log[rtx] else { unreachable!() };
    assert_eq!(seg.seq, segs(50));
    assert!(rtx > dups[2], "retransmitted in response to the third dupACK");
    for w in [dups[0], dups[1], dups[2]].windows(2) {
        assert!(w.iter().all(|&i| i < rtx));
    }
    // Limited transmit (RFC 3042): each of the first two dupACKs releases exactly one new
    // segment, and cwnd does not grow on duplicate ACKs (RFC 5681 §3.2).
    assert_limited_transmit(&net, &dups);
}

fn assert_limited_transmit(net: &Net, dups: &[usize]) {
    for k in 0..2 {
        let (i, j) = (dups[k], dups[k + 1]);
        let new: Vec<DataSegment> = net.log[i..j]
            .iter()
            .filter_map(|l| match l {
                Log::Sent { seg, .. } if !seg.retransmit => Some(*seg),
                _ => None,
            })
            .collect();
        let Log::AckRx { cwnd_before, stats, .. } = net.log[i] else { unreachable!() };
        assert_eq!(stats.cwnd, cwnd_before, "dupACK {}: cwnd grew", k + 1);
        assert_eq!(new.len(), 1, "dupACK {}: new segments {:?}", k + 1, new);
        assert!(new.iter().all(|s| s.seq >= segs(51)));
    }
}

/// Three holes in one window, with RFC 6675's own sending rule (pipe ≤ cwnd) and with PRR:
/// the holes are found by SACK and repaired within one RTT in both cases.
#[test]
fn three_losses_in_one_window_repaired_by_sack() {
    for prr in [false, true] {
        three_losses_in_one_window(prr);
    }
}

fn three_losses_in_one_window(prr: bool) {
    let mut net = Net::new(TcpSenderConfig { prr, ..Net::newreno() }, 10_000_000, 10);
    let n = 400;
    net.s.app_write(segs(n));
    for k in [50, 53, 56] {
        net.drop_seg(k, 1);
    }
    net.run_until_done(Duration::from_secs(10));
    let st = net.s.stats();
    assert_eq!(st.retransmits, 3);
    assert_eq!(st.rto_count, 0);
    assert_eq!(st.fast_recovery_count, 1, "one loss event");
    let rtx: Vec<(Instant, u64)> = net.sent().filter(|x| x.1.retransmit).map(|x| (x.0, x.1.seq)).collect();
    assert_eq!(rtx.iter().map(|x| x.1).collect::<Vec<_>>(), vec![segs(50), segs(53), segs(56)]);
    // Recovery RTT as measured around the loss.
    let rtt = net
        .log
        .iter()
        .find_map(|l| match l {
            Log::AckRx { ack, stats, .. } if ack.cum_ack == segs(50) => stats.latest_rtt,
            _ => None,
        })
        .unwrap();
    let t0 = rtx[0].0;
    // All three retransmissions leave within one RTT of entering recovery (holes found by
    // SACK, not one partial ACK per hole; RFC 6675 holds them until pipe < cwnd)...
    assert!(rtx[2].0 - t0 <= rtt + rtt / 10, "retransmissions spread over {:?}, rtt {:?}", rtx[2].0 - t0, rtt);
    if prr {
        // PRR sends on every other ACK from the start of recovery: the three retransmissions
        // leave within a few ACKs (about 6 ms here), behind the queue slow start built.
        assert!(rtx[2].0 - t0 < rtt / 4, "PRR: retransmissions spread over {:?}", rtx[2].0 - t0);
        return;
    }
    // ...and the ACK covering all holes comes one RTT after the last of them.
    let repaired = net
        .log
        .iter()
        .find_map(|l| match l {
            Log::AckRx { t, ack, .. } if ack.cum_ack >= segs(57) => Some(*t),
            _ => None,
        })
        .unwrap();
    // (No RTT sample comes from that ACK: it acknowledges retransmitted data — Karn.)
    let d = repaired - rtx[2].0;
    assert!(d >= rtt - rtt / 10 && d <= rtt + rtt / 10, "repaired {d:?} after the last retransmission, rtt {rtt:?}");
}

#[test]
fn tail_loss_recovered_by_rto() {
    let mut net = Net::new(TcpSenderConfig { tlp: false, ..Net::newreno() }, 10_000_000, 10);
    let n = 200;
    net.s.app_write(segs(n));
    for k in 170..n {
        net.drop_seg(k, 1);
    }
    net.run_until_done(Duration::from_secs(10));
    let st = net.s.stats();
    assert_eq!(st.rto_count, 1);
    assert_eq!(st.fast_recovery_count, 0);
    assert_eq!(st.retransmits, n - 170);
    assert_eq!(net.r.delivered(), segs(n));
    // The timer fired one RTO (Linux's SRTT + rttvar, no backoff yet) after the last ACK of
    // new data.
    let (t_last, s_last) = net
        .log
        .iter()
        .rev()
        .find_map(|l| match l {
            Log::AckRx { t, stats, ack, .. } if ack.cum_ack <= segs(170) => Some((*t, *stats)),
            _ => None,
        })
        
        .unwrap();
    let t_rto = net.log.iter().find_map(|l| if let Log::Rto { t } = l { Some(*t) } else { None }).unwrap();
    assert!(s_last.rto >= s_last.srtt + Duration::from_millis(200));
    assert_eq!(t_rto - t_last, s_last.rto);
    let first_rtx = net.sent().find(|x| x.1.retransmit).unwrap();
    assert_eq!(first_rtx.0, t_rto);
    assert_eq!(first_rtx.1.seq, segs(170), "retransmission starts at snd_una");
}

#[test]
fn rto_backoff_doubles() {
    let mut net = Net::new(TcpSenderConfig { tlp: false, ..Net::newreno() }, 10_000_000, 10);
    let n = 100;
    net.s.app_write(segs(n));
    net.drop_seg(n - 1, 5);
    net.run_until_done(Duration::from_secs(60));
    let st = net.s.stats();
    assert_eq!(st.rto_count, 5);
    let t: Vec<Instant> = net.log.iter().filter_map(|l| if let Log::Rto { t } = l { Some(*t) } else { None }).collect();
    let gaps: Vec<u64> = t.windows(2).map(|w| (w[1] - w[0]).as_nanos()).collect();
    for g in gaps.windows(2) {
        assert_eq!(g[1], 2 * g[0], "backoff doubles: {gaps:?}");
    }
    // The first gap is 2·RTO (the timer was already backed off once).
    assert!(gaps[0] >= 2 * 200_000_000);
    // The backoff is cleared by the ACK of the retransmission: RTO is SRTT + rttvar again,
    // at least SRTT + 200 ms and far below the last backed-off value.
    assert!(st.rto >= st.srtt + Duration::from_millis(200), "{st:?}");
    assert!(st.rto.as_nanos() < gaps[gaps.len() - 1] / 4, "{st:?}");
}

#[test]
fn delivery_rate_matches_link_rate() {
    let mut net = Net::new(Net::newreno(), 20_000_000, 5);
    net.s.app_write(u64::MAX);
    net.run_for(Duration::from_secs(2));
    let payload_rate = 20_000_000 / 8 * MSS as u64 / data_ip_len(MSS) as u64;
    let mut rates: Vec<u64> = net
        .samples
        .iter()
        .filter(|(t, r)| *t > Instant::ZERO + Duration::from_millis(500) && r.delivery_rate > 0)
        .map(|(_, r)| r.delivery_rate)
        .collect();
    assert!(rates.len() > 100);
    assert!(net.samples.iter().all(|(_, r)| !r.is_app_limited));
    rates.sort_unstable();
    let median = rates[rates.len() / 2];
    let err = (median as f64 - payload_rate as f64).abs() / payload_rate as f64;
    assert!(err < 0.02, "median delivery rate {median} vs link {payload_rate}");
    assert!(!net.s.is_done());
}

#[test]
fn app_limited_samples_are_marked() {
    let mut net = Net::new(Net::newreno(), 100_000_000, 5);
    net.s.app_write(segs(3));
    net.run_until_done(Duration::from_secs(2));
    assert!(net.s.app_limited_until != 0 || net.samples.iter().any(|(_, r)| r.is_app_limited));
    net.s.app_write(segs(3));
    let before = net.samples.len();
    net.run_until_done(Duration::from_secs(4));
    assert!(net.samples[before..].iter().all(|(_, r)| r.is_app_limited));
}

#[test]
fn pacing_spaces_segments() {
    let cfg = TcpSenderConfig { pacing: true, ..Net::newreno() };
    let mut net = Net::new(cfg, 10_000_000, 10);
    net.s.app_write(segs(300));
    net.run_until_done(Duration::from_secs(10));
    let first_ack = net.log.iter().position(|l| matches!(l, Log::AckRx { .. })).unwrap();
    // Before the first RTT sample: the initial window leaves as a burst.
    let burst = net.log[..first_ack].iter().filter(|l| matches!(l, Log::Sent { .. })).count();
    assert_eq!(burst, 10);
    // Afterwards no two segments leave at the same instant.
    let times: Vec<Instant> = net.log[first_ack..]
        .iter()
        .filter_map(|l| if let Log::Sent { t, .. } = l { Some(*t) } else { None })
        .collect();
    assert!(times.windows(2).all(|w| w[1] > w[0]), "paced departures");
    assert!(net.s.stats().pacing_rate > 0);
}

#[test]
fn pacing_wait_reported_by_poll_timeout() {
    let cfg = TcpSenderConfig { pacing: true, ..Net::newreno() };
    let mut s = TcpSender::new(cfg, Instant::ZERO);
    s.app_write(u64::MAX);
    let t0 = Instant::ZERO;
    for _ in 0..10 {
        assert!(s.poll_transmit(t0, 0).is_some());
    }
    assert!(s.poll_transmit(t0, 0).is_none(), "cwnd full");
    // ACK two segments after 50 ms: now an RTT sample exists and pacing starts.
    let t1 = t0 + Duration::from_millis(50);
    s.handle_ack(t1, &AckSegment { cum_ack: segs(2), rwnd: 1 << 30, ..AckSegment::default() });
    let a = s.poll_transmit(t1, 0).unwrap();
    assert_eq!(a.seq, segs(10));
    assert!(s.poll_transmit(t1, 0).is_none(), "held by pacing");
    let rate = s.stats().pacing_rate;
    let release = t1 + Duration::from_nanos(MSS as u64 * 1_000_000_000 / rate);
    assert_eq!(s.poll_timeout(), Some(release));
    s.handle_timeout(release - Duration::from_nanos(1)); // early: no-op
    assert_eq!(s.poll_timeout(), Some(release));
    s.handle_timeout(release);
    assert!(s.poll_transmit(release, 0).is_some());
}

#[test]
fn tsq_limits_queued_bytes() {
    // Before any RTT sample sk_pacing_rate is unlimited: an unpaced sender is held only by
    // tcp_limit_output_bytes, and never while at most one segment is unacknowledged.
    let mut s = TcpSender::new(Net::newreno(), Instant::ZERO);
    s.app_write(u64::MAX);
    let cap = s.config().tsq_limit;
    assert!(s.poll_transmit(Instant::ZERO, u64::MAX / 2).is_some(), "empty rtx queue: always send");
    assert!(s.poll_transmit(Instant::ZERO, u64::MAX / 2).is_some(), "one skb in the rtx queue: always send");
    assert!(s.poll_transmit(Instant::ZERO, cap).is_none());
    assert!(s.poll_transmit(Instant::ZERO, cap - 1).is_some());
    // After a sample: max(2 MSS, sk_pacing_rate >> shift), whether or not the sender paces.
    for (pacing, shift) in [(false, 10u8), (true, 10), (false, 7), (true, 7)] {
        let cfg = TcpSenderConfig { pacing, pacing_shift: shift, initial_cwnd_segments: 100, ..Net::newreno() };
        let mut s = TcpSender::new(cfg, Instant::ZERO);
        s.app_write(u64::MAX);
        for _ in 0..3 {
            assert!(s.poll_transmit(Instant::ZERO, 0).is_some());
        }
        let t = Instant::ZERO + Duration::from_millis(10);
        s.handle_ack(t, &AckSegment { cum_ack: segs(1), rwnd: 1 << 30, ..AckSegment::default() });
        // Slow start: rate = 2 · cwnd (100 MSS, +1 for the ACK) / 10 ms ≈ 29 MB/s; >> 10 ≈ 28 kB,
        // >> 7 ≈ 226 kB.
        let rate = 2 * 100 * MSS as u64 * 100;
        let want = (2 * MSS as u64).max(rate >> shift);
        let got = s.tsq_limit_now(None);
        assert!((got as f64 - want as f64).abs() < 0.03 * want as f64, "pacing {pacing} shift {shift}: {got} vs {want}");
        assert!(s.poll_transmit(t, got).is_none());
        if !pacing {
            assert!(s.poll_transmit(t, got - 1).is_some());
        }
    }
    // A paced sender is not capped by tcp_limit_output_bytes (SK_PACING_NONE only).
    let s = TcpSender::new(Net::newreno(), Instant::ZERO);
    let fast = (10 * cap) << 10;
    assert_eq!(s.tsq_limit_now(Some(fast)), u64::MAX, "one skb or less outstanding");
}

#[test]
fn respects_receiver_window() {
    let mut s = TcpSender::new(Net::newreno(), Instant::ZERO);
    s.app_write(u64::MAX);
    assert!(s.poll_transmit(Instant::ZERO, 0).is_some());
    let t = Instant::ZERO + Duration::from_millis(10);
    s.handle_ack(t, &AckSegment { cum_ack: segs(1), rwnd: segs(3), ..AckSegment::default() });
    let mut n = 0;
    while s.poll_transmit(t, 0).is_some() {
        n += 1;
    }
    assert_eq!(n, 3, "rwnd of three segments");
}

// ---------------------------------------------------------------- receiver alone

fn seg(k: u64) -> DataSegment {
    DataSegment { seq: segs(k), len: MSS, retransmit: false, ecn: Ecn::NotEct, cwr: false }
}

#[test]
fn delayed_ack_fires_after_40ms() {
    let mut r = TcpReceiver::new(TcpReceiverConfig::default());
    let mut t = Instant::ZERO;
    for k in 0..16 {
        assert_eq!(r.handle_segment(t, &seg(k)), MSS as u64);
        assert!(r.poll_ack(t).is_some(), "quick-ack mode");
        t += Duration::from_millis(1);
    }
    // A lone segment: no ACK until the delayed-ACK timer.
    r.handle_segment(t, &seg(16));
    assert!(r.poll_ack(t).is_none());
    let due = t + Duration::from_millis(40);
    assert_eq!(r.poll_timeout(), Some(due));
    r.handle_timeout(due - Duration::from_nanos(1)); // early: no-op
    assert!(r.poll_ack(due - Duration::from_nanos(1)).is_none());
    r.handle_timeout(due);
    let a = r.poll_ack(due).unwrap();
    assert_eq!(a.cum_ack, segs(17));
    assert_eq!(a.n_sack, 0);
    assert!(r.poll_timeout().is_none());
    // Two full segments: ACK at once.
    r.handle_segment(due, &seg(17));
    assert!(r.poll_ack(due).is_none());
    r.handle_segment(due, &seg(18));
    assert_eq!(r.poll_ack(due).unwrap().cum_ack, segs(19));
    assert!(r.poll_ack(due).is_none(), "one ACK per poll");
}

#[test]
fn gro_acks_once_per_merged_packet() {
    // 64 KiB merged packets: 45 segments of 1448 bytes fill one (45 · 1448 = 65,160 < 65,536
    // < 46 · 1448).
    let cfg = TcpReceiverConfig { quickack_segments: 0, gro_bytes: 65_536, ..TcpReceiverConfig::default() };
    let mut r = TcpReceiver::new(cfg);
    let t = Instant::ZERO;
    // A batch of 60 in-order segments (one A-MPDU): one ACK when the first merged packet is
    // full, one at the end of the batch for the rest.
    let mut acks = Vec::new();
    for k in 0..60 {
        r.handle_segment(t, &seg(k));
        acks.extend(r.poll_ack(t).map(|a| a.cum_ack));
    }
    assert_eq!(acks, vec![segs(45)], "the first merged packet, full at its 45th segment");
    r.end_batch();
    assert_eq!(r.poll_ack(t).map(|a| a.cum_ack), Some(segs(60)));
    // A batch of one segment: one full-sized segment unacknowledged, so the delayed-ACK timer.
    r.handle_segment(t, &seg(60));
    r.end_batch();
    assert!(r.poll_ack(t).is_none());
    assert_eq!(r.poll_timeout(), Some(t + Duration::from_millis(40)));
    // A gap ends the merge: the out-of-order segment is ACKed at once, with its SACK block.
    r.handle_segment(t, &seg(62));
    let a = r.poll_ack(t).expect("immediate ACK for out-of-order data");
    assert_eq!((a.cum_ack, a.sack_blocks()[0]), (segs(61), (segs(62), segs(63))));
    // Without GRO the same batch of 60 is ACKed every second segment.
    let mut r = TcpReceiver::new(TcpReceiverConfig { quickack_segments: 0, ..TcpReceiverConfig::default() });
    let n = (0..60).filter(|&k| {
        r.handle_segment(t, &seg(k));
        r.poll_ack(t).is_some()
    });
    assert_eq!(n.count(), 30);
    r.end_batch();
    assert!(r.poll_ack(t).is_none(), "end_batch is a no-op without GRO");
}

#[test]
fn sack_blocks_order_and_rwnd() {
    let cfg = TcpReceiverConfig { quickack_segments: 0, ..TcpReceiverConfig::default() };
    let mut r = TcpReceiver::new(cfg);
    let t = Instant::ZERO;
    r.handle_segment(t, &seg(0));
    assert!(r.poll_ack(t).is_none(), "in order, delayed");
    // Out-of-order arrivals: immediate ACKs, most recent block first.
    for k in [2, 4, 6, 8] {
        assert_eq!(r.handle_segment(t, &seg(k)), 0);
        let a = r.poll_ack(t).expect("immediate ACK for out-of-order data");
        assert_eq!(a.cum_ack, segs(1));
        assert_eq!(a.sack_blocks()[0], (segs(k), segs(k + 1)));
    }
    let a = r.build_ack();
    assert_eq!(a.sack_blocks(), &[(segs(8), segs(9)), (segs(6), segs(7)), (segs(4), segs(5))]);
    assert_eq!(a.rwnd, cfg.rwnd - segs(4));
    // Segment 5 joins blocks 4 and 6: that block first, then the most recent others.
    r.handle_segment(t, &seg(5));
    let a = r.poll_ack(t).unwrap();
    assert_eq!(a.sack_blocks(), &[(segs(4), segs(7)), (segs(8), segs(9)), (segs(2), segs(3))]);
    assert_eq!(a.rwnd, cfg.rwnd - segs(5));
    // Segment 1 fills the first hole: cumulative ACK moves, immediate ACK, block 2 is gone.
    assert_eq!(r.handle_segment(t, &seg(1)), segs(2));
    let a = r.poll_ack(t).unwrap();
    assert_eq!(a.cum_ack, segs(3));
    assert_eq!(a.sack_blocks(), &[(segs(4), segs(7)), (segs(8), segs(9))]);
    // Segment 3 delivers up to 7; 7 then closes the last hole.
    assert_eq!(r.handle_segment(t, &seg(3)), segs(4));
    assert_eq!(r.poll_ack(t).unwrap().sack_blocks(), &[(segs(8), segs(9))]);
    assert_eq!(r.handle_segment(t, &seg(7)), segs(2));
    let a = r.poll_ack(t).unwrap();
    assert_eq!((a.cum_ack, a.n_sack, a.rwnd), (segs(9), 0, cfg.rwnd));
    // A duplicate is acknowledged at once.
    assert_eq!(r.handle_segment(t, &seg(3)), 0);
    assert_eq!(r.poll_ack(t).unwrap().cum_ack, segs(9));
    assert_eq!(r.delivered(), segs(9));
}

#[test]
fn sack_scoreboard_marks_losses_per_rfc6675() {
    let mut s = TcpSender::new(Net::newreno(), Instant::ZERO);
    s.app_write(u64::MAX);
    let t0 = Instant::ZERO;
    while s.poll_transmit(t0, 0).is_some() {}
    assert_eq!(s.snd_nxt, segs(10));
    let t = t0 + Duration::from_millis(20);
    let sack = |blocks: &[(u64, u64)]| {
        let mut a = AckSegment { cum_ack: 0, rwnd: 1 << 30, ..AckSegment::default() };
        for (i, b) in blocks.iter().enumerate() {
            a.sack[i] = (segs(b.0), segs(b.1));
        }
        a.n_sack = blocks.len() as u8;
        a
    };
    // Two SACKed segments above 0: not yet lost (needs DupThresh = 3).
    s.handle_ack(t, &sack(&[(1, 3)]));
    assert!(!s.segs[0].lost && !s.in_recovery);
    assert_eq!(s.pipe(), segs(8));
    // A third: IsLost(0) → recovery, segment 0 retransmitted first, whatever cwnd says.
    s.handle_ack(t, &sack(&[(3, 4), (1, 3)]));
    assert!(s.segs[0].lost && s.in_recovery);
    assert_eq!(s.recovery_point, Some(segs(10)));
    let r = s.poll_transmit(t, 0).unwrap();
    assert!(r.retransmit && r.seq == 0);
    assert_eq!(s.pipe(), s.set_pipe_slow());
}


#[test]
fn cubic_and_bbr_complete_with_losses() {
    use crate::cc::{BbrConfig, CcConfig, CubicConfig};
    for cc in [CcConfig::Cubic(CubicConfig::default()), CcConfig::Bbr(BbrConfig::default())] {
        let mut net = Net::new(TcpSenderConfig { cc, ..Net::newreno() }, 20_000_000, 10);
        let n = 2000;
        net.s.app_write(segs(n));
        for k in [50, 53, 400, 1999] {
            net.drop_seg(k, 1);
        }
        net.run_until_done(Duration::from_secs(20));
        let st = net.s.stats();
        assert_eq!(net.r.delivered(), segs(n), "{cc:?}");
        assert!(st.retransmits >= 4, "{cc:?}: {st:?}");
        assert!(net.now < Instant::ZERO + Duration::from_secs(5), "{cc:?} took {:?}: {st:?}", net.now);
    }
}

/// Karn's algorithm: an ACK for data that was retransmitted gives no RTT sample, so the ACK of
/// the original transmission arriving just after an RTO retransmission cannot fake a tiny RTT
/// (which would, for instance, collapse BBR's RTprop and with it its window).
#[test]
fn no_rtt_sample_from_retransmitted_data() {
    let mut s = TcpSender::new(Net::newreno(), Instant::ZERO);
    s.app_write(1448);
    let first = s.poll_transmit(Instant::ZERO, 0).unwrap();
    assert!(!first.retransmit);
    let t_rto = s.poll_timeout().unwrap();
    s.handle_timeout(t_rto);
    let again = s.poll_transmit(t_rto, 0).unwrap();
    assert!(again.retransmit);
    let late = AckSegment { cum_ack: 1448, rwnd: 1 << 20, ..AckSegment::default() };
    s.handle_ack(t_rto + Duration::from_micros(50), &late);
    let st = s.stats();
    assert!(st.latest_rtt.is_none(), "sampled {:?}", st.latest_rtt);
    assert_eq!(st.min_rtt, Duration::ZERO, "no RTT sample at all yet");
    assert!(s.is_done());
}

/// RFC 3042 with every controller that grows cwnd by acknowledged bytes: one new segment per
/// each of the first two duplicate ACKs, no cwnd growth on them (also in CUBIC's slow start,
/// where SACKed bytes used to grow cwnd).
#[test]
fn limited_transmit_one_segment_per_dupack() {
    use crate::cc::{CcConfig, CubicConfig};
    for cc in [Net::newreno().cc, CcConfig::Cubic(CubicConfig::default())] {
        for drop_at in [50, 150] {
            let mut net = Net::new(TcpSenderConfig { cc, ..Net::newreno() }, 10_000_000, 10);
            net.s.app_write(segs(400));
            net.drop_seg(drop_at, 1);
            net.run_until_done(Duration::from_secs(10));
            assert_eq!(net.s.stats().rto_count, 0, "{cc:?}");
            let (_, dups) = dupacks_before_first_rtx(&net, segs(drop_at));
            assert!(dups.len() >= 2, "{cc:?}");
            for k in 0..2 {
                let (i, j) = (dups[k], dups[k + 1]);
                let new = net.log[i..j].iter().filter(|l| matches!(l, Log::Sent { seg, .. } if !seg.retransmit)).count();
                let Log::AckRx { cwnd_before, stats, .. } = net.log[i] else { unreachable!() };
                assert_eq!(stats.cwnd, cwnd_before, "{cc:?} drop {drop_at}: cwnd grew on dupACK {}", k + 1);
                assert_eq!(new, 1, "{cc:?} drop {drop_at}: dupACK {}", k + 1);
            }
        }
    }
}

/// RFC 8985: a lost fast retransmission is detected by RACK (a segment sent after it was
/// delivered, and its deadline passed) and retransmitted again, without waiting for the RTO.
#[test]
fn lost_retransmission_repaired_by_rack() {
    use crate::cc::{BbrConfig, CcConfig, CubicConfig};
    for cc in [Net::newreno().cc, CcConfig::Cubic(CubicConfig::default()), CcConfig::Bbr(BbrConfig::default())] {
        let mut net = Net::new(TcpSenderConfig { cc, ..Net::newreno() }, 10_000_000, 10);
        let n = 400;
        net.s.app_write(segs(n));
        net.drop_seg(50, 2);
        net.run_until_done(Duration::from_secs(10));
        let st = net.s.stats();
        assert_eq!(st.rto_count, 0, "{cc:?}: {st:?}");
        assert_eq!(st.fast_recovery_count, 1, "{cc:?}: one loss episode");
        assert!(st.rack_lost >= 1, "{cc:?}: {st:?}");
        assert_eq!(net.r.delivered(), segs(n));
        let rtx: Vec<Instant> = net.sent().filter(|x| x.1.retransmit && x.1.seq == segs(50)).map(|x| x.0).collect();
        assert_eq!(rtx.len(), 2, "{cc:?}: segment 50 sent three times in all");
        // Only segment 50 is retransmitted (no spurious retransmissions).
        assert_eq!(st.retransmits, 2, "{cc:?}: {st:?}");
        // The RTT at the time (slow start has built a queue): the last sample before the loss.
        let rtt = net
            .log
            .iter()
            .take_while(|l| !matches!(l, Log::Sent { t, .. } if *t >= rtx[0]))
            .filter_map(|l| match l {
                Log::AckRx { stats, .. } => stats.latest_rtt,
                _ => None,
            })
            .last()
            .unwrap();
        let d = rtx[1] - rtx[0];
        assert!(d <= rtt * 2, "{cc:?}: second retransmission {d:?} after the first, rtt {rtt:?}");
        assert!(d >= rtt, "{cc:?}: not before one RTT");
    }
}

/// 5 % random loss of every transmission (retransmissions included): RACK repairs lost
/// retransmissions, so timeouts stay rare and the transfer completes.
#[test]
fn random_loss_5pct_rarely_times_out() {
    use crate::cc::{BbrConfig, CcConfig, CubicConfig};
    for cc in [Net::newreno().cc, CcConfig::Cubic(CubicConfig::default()), CcConfig::Bbr(BbrConfig::default())] {
        for seed in [1u64, 2, 3] {
            let mut net = Net::new(TcpSenderConfig { cc, ..Net::newreno() }, 20_000_000, 10);
            net.loss_ppm = 50_000;
            net.rng ^= seed.wrapping_mul(0x2545_F491_4F6C_DD1D);
            let n = 3000;
            net.s.app_write(segs(n));
            net.run_until_done(Duration::from_secs(120));
            let st = net.s.stats();
            assert_eq!(net.r.delivered(), segs(n));
            assert!(st.rto_count <= 2, "{cc:?} seed {seed}: {st:?}");
            assert!(st.rack_lost > 0 && st.retransmits > 100, "{cc:?} seed {seed}: {st:?}");
        }
    }
}

/// Reordering within the reordering window (fewer than DupThresh segments overtaken, delay
/// below min_RTT/4): no retransmission, no recovery; RACK notes the reordering.
#[test]
fn reordering_within_reo_wnd_is_not_loss() {
    let mut net = Net::new(Net::newreno(), 10_000_000, 10);
    let n = 400;
    net.s.app_write(segs(n));
    // 1.2 ms per segment at 10 Mb/s: 3 ms lets two segments overtake; min_RTT/4 ≈ 5.5 ms.
    for k in [40, 120, 250] {
        net.delays.push((segs(k), Duration::from_millis(3)));
    }
    net.run_until_done(Duration::from_secs(10));
    let st = net.s.stats();
    assert_eq!(st.retransmits, 0, "{st:?}");
    assert_eq!(st.fast_recovery_count, 0);
    assert_eq!(st.rto_count, 0);
    assert_eq!(st.rack_lost, 0);
    assert!(net.s.rack_reordering_seen);
    assert_eq!(net.r.delivered(), segs(n));
}

/// The RACK reordering timer: a lone SACK (fewer than DupThresh dupACKs, no new data to send)
/// leaves the hole to RACK, which declares it lost at xmit_ts + RACK.rtt + reo_wnd through
/// `poll_timeout` / `handle_timeout`, long before the RTO.
#[test]
fn rack_timer_detects_loss_before_rto() {
    let mut net = Net::new(Net::newreno(), 10_000_000, 10);
    let n = 12;
    net.s.app_write(segs(n));
    net.drop_seg(n - 2, 1); // one segment after it: a single dupACK
    net.run_until_done(Duration::from_secs(10));
    let st = net.s.stats();
    assert_eq!(st.rto_count, 0, "{st:?}");
    assert_eq!(st.rack_timeouts, 1, "{st:?}");
    assert_eq!(st.retransmits, 1);
    assert_eq!(st.fast_recovery_count, 1);
    // The retransmission leaves reo_wnd = min_RTT/4 after the SACK arrived, roughly.
    let sack_at = net
        .log
        .iter()
        .find_map(|l| match l {
            Log::AckRx { t, ack, .. } if ack.n_sack > 0 => Some(*t),
            _ => None,
        })
        .unwrap();
    let rtx_at = net.sent().find(|x| x.1.retransmit).unwrap().0;
    let reo = st.min_rtt / 4;
    assert!(rtx_at > sack_at && rtx_at - sack_at <= reo + Duration::from_millis(2), "{:?} after the SACK", rtx_at - sack_at);
}

/// Linux `tcp_is_cwnd_limited` (`tcp_cwnd_validate` after each round): an application that
/// writes a few segments per round trip never fills cwnd, so NewReno and CUBIC (which runs
/// Linux's HyStart by default) keep the initial window; the same sender with a backlog fills
/// it and grows. In slow start cwnd may grow to twice the largest flight of the window.
#[test]
fn cwnd_grows_only_while_it_limits_the_sender() {
    use crate::cc::{CcConfig, CubicConfig};
    let iw = segs(TcpSenderConfig::default().initial_cwnd_segments as u64);
    for cc in [Net::newreno().cc, CcConfig::Cubic(CubicConfig::default())] {
        // Three segments every 50 ms over a 20 ms round trip: never more than 3 in flight.
        let mut net = Net::new(TcpSenderConfig { cc, ..Net::newreno() }, 100_000_000, 10);
        for _ in 0..40 {
            net.s.app_write(segs(3));
            net.run_for(Duration::from_millis(50));
        }
        net.run_for(Duration::from_millis(500)); // the last delayed ACK
        let st = net.s.stats();
        assert_eq!(st.app_bytes_acked, segs(120), "{cc:?}: {st:?}");
        assert_eq!(st.cwnd, iw, "{cc:?}: an application-limited sender keeps its window");
        // Six in flight: slow start may raise cwnd to twice that, and no further.
        let mut net = Net::new(TcpSenderConfig { cc, ..Net::newreno() }, 100_000_000, 10);
        for _ in 0..40 {
            net.s.app_write(segs(6));
            net.run_for(Duration::from_millis(50));
        }
        let st = net.s.stats();
        assert!(st.cwnd > iw && st.cwnd <= segs(12) + segs(6), "{cc:?}: cwnd {} after flights of 6", st.cwnd / MSS as u64);
        // A backlog fills cwnd: it grows.
        let mut net = Net::new(TcpSenderConfig { cc, ..Net::newreno() }, 100_000_000, 10);
        net.s.app_write(segs(120));
        net.run_until_done(Duration::from_secs(5));
        assert!(net.s.stats().cwnd > 4 * iw, "{cc:?}: a bulk sender grows ({})", net.s.stats().cwnd);
    }
}

/// Linux `tcp_cwnd_validate`: once a round fills cwnd, the sender counts as cwnd-limited for the
/// rest of that window (until snd_una reaches the snd_nxt of that round), even if a later round
/// in it stops short of cwnd (here held by TCP small queues); past the window, the next round
/// that sends decides again. In congestion avoidance, so that slow start's "cwnd below twice the
/// largest flight" does not answer instead.
#[test]
fn cwnd_limited_is_kept_for_the_window_that_filled_cwnd() {
    use crate::cc::{CcConfig, NewRenoConfig};
    let cc = CcConfig::NewReno(NewRenoConfig { initial_ssthresh: segs(2), ..NewRenoConfig::default() });
    let t0 = Instant::ZERO;
    let mut s = TcpSender::new(TcpSenderConfig { cc, ..Net::newreno() }, t0);
    s.app_write(u64::MAX);
    while s.poll_transmit(t0, 0).is_some() {}
    assert!(s.is_cwnd_limited(), "the initial window filled cwnd");
    let held = u64::MAX / 2; // bytes below the socket: TCP small queues hold the sender
    // Two segments acknowledged: one more is sent, then the round ends held by TSQ, short of cwnd.
    let t1 = t0 + Duration::from_millis(20);
    s.handle_ack(t1, &AckSegment { cum_ack: segs(2), rwnd: 1 << 30, ..AckSegment::default() });
    assert!(s.poll_transmit(t1, 0).is_some());
    assert!(s.poll_transmit(t1, held).is_none() && s.tsq_held());
    assert!(s.pipe() + (MSS as u64) <= s.cwnd(), "the round stopped short of cwnd");
    assert!(s.is_cwnd_limited(), "still the window that filled cwnd");
    // Everything acknowledged: past that window, a round held short of cwnd says it is not.
    let t2 = t1 + Duration::from_millis(20);
    s.handle_ack(t2, &AckSegment { cum_ack: s.snd_nxt, rwnd: 1 << 30, ..AckSegment::default() });
    // (With at most one segment outstanding TCP small queues let the next go, as Linux does.)
    assert!(s.poll_transmit(t2, 0).is_some() && s.poll_transmit(t2, 0).is_some());
    assert!(s.poll_transmit(t2, held).is_none() && s.tsq_held());
    assert!(!s.is_cwnd_limited(), "a new window, not filled");
}

mod ecn;
mod recovery;
mod tso;
