//! Regression tests for defects the property tests (`prop_*.rs`) found, each the shrunk case
//! as a plain test.

use lasthop_algo::ecn::Ecn;
use lasthop_algo::aqm::wqm::analysis::{t_drain, FreeFraction};
use lasthop_algo::aqm::{FqCodel, FqCodelConfig, MacFq, MacFqConfig, Qdisc};
use lasthop_algo::cc::{AckInfo, Bbr, BbrConfig, CongestionControl, RateSample};
use lasthop_core::{BitRate, Bytes, Duration, Instant};

mod common;
use common::TP;

/// mac80211's flow queue tracked the flows with a backlog by their byte count, so a flow
/// holding only zero-length packets fell out of the set while it still held packets, and the
/// second zero-length packet to leave indexed the set with `ABSENT` (panic).
#[test]
fn mac_fq_zero_length_packets() {
    let mut q: MacFq<TP> = MacFq::new(MacFqConfig::default(), 1);
    let t = Instant::ZERO;
    q.enqueue(t, 0, TP { len: 0, flow: 4, id: 0, ecn: Ecn::NotEct }, |_| panic!("no drop"));
    q.invariants().unwrap();
    q.enqueue(t, 0, TP { len: 0, flow: 4, id: 1, ecn: Ecn::NotEct }, |_| panic!("no drop"));
    q.invariants().unwrap();
    assert_eq!(q.dequeue(t, 0, |_| {}).map(|p| p.id), Some(0));
    q.invariants().unwrap();
    assert_eq!(q.dequeue(t, 0, |_| {}).map(|p| p.id), Some(1));
    q.invariants().unwrap();
    assert_eq!(q.len_packets(), 0);
}

/// Over the packet limit, zero-length packets are dropped as any other (the fattest-flow search
/// sees flows with packets, whatever their bytes).
#[test]
fn mac_fq_zero_length_overlimit() {
    let mut q: MacFq<TP> = MacFq::new(MacFqConfig { limit_packets: 1, ..MacFqConfig::default() }, 2);
    let mut dropped = Vec::new();
    q.enqueue(Instant::ZERO, 0, TP { len: 0, flow: 1, id: 0, ecn: Ecn::NotEct }, |p| dropped.push(p.id));
    q.enqueue(Instant::ZERO, 1, TP { len: 0, flow: 2, id: 1, ecn: Ecn::NotEct }, |p| dropped.push(p.id));
    q.invariants().unwrap();
    assert_eq!(dropped.len(), 1);
    assert_eq!(q.len_packets(), 1);
}

/// A zero DRR quantum never let a flow's deficit turn positive: FQ-CoDel's dequeue looped
/// forever (its `peek` already read 0 as 1).
#[test]
fn fq_codel_zero_quantum() {
    let mut q: FqCodel<TP> = FqCodel::new(FqCodelConfig { quantum: 0, ..FqCodelConfig::default() });
    let t = Instant::ZERO;
    q.enqueue(t, TP { len: 1500, flow: 1, id: 0, ecn: Ecn::NotEct }).unwrap();
    q.enqueue(t, TP { len: 1500, flow: 2, id: 1, ecn: Ecn::NotEct }).unwrap();
    assert_eq!(q.peek().map(|p| p.id), Some(0));
    assert_eq!(q.dequeue(t, |_| {}).map(|p| p.id), Some(0));
    assert_eq!(q.dequeue(t, |_| {}).map(|p| p.id), Some(1));
    assert_eq!(q.params().quantum, 1);
    q.invariants().unwrap();
}

/// FQ-CoDel's overflow drop picked the flow with the largest byte backlog, the first one on
/// ties: with only zero-length packets queued that could be an empty flow (panic "fattest flow
/// holds a packet").
#[test]
fn fq_codel_zero_length_overflow() {
    let cfg = FqCodelConfig { flows: 2, limit_packets: 0, seed: 1357481389970146086, ..FqCodelConfig::default() };
    let mut q: FqCodel<TP> = FqCodel::new(cfg);
    let p = TP { len: 0, flow: 0, id: 0, ecn: Ecn::NotEct };
    assert_eq!(q.enqueue(Instant::ZERO, p), Err(p));
    q.invariants().unwrap();
    assert!(q.is_empty());
}

/// The same for mac80211's flow queue, where the only flow of a tin divided by the quantum
/// (division by zero).
#[test]
fn mac_fq_zero_quantum() {
    let mut q: MacFq<TP> = MacFq::new(MacFqConfig { quantum: 0, ..MacFqConfig::default() }, 1);
    let t = Instant::ZERO;
    q.enqueue(t, 0, TP { len: 1500, flow: 1, id: 0, ecn: Ecn::NotEct }, |_| panic!("no drop"));
    q.enqueue(t, 0, TP { len: 1500, flow: 1, id: 1, ecn: Ecn::NotEct }, |_| panic!("no drop"));
    assert_eq!(q.dequeue(t, 0, |_| {}).map(|p| p.id), Some(0));
    assert_eq!(q.dequeue(t, 0, |_| {}).map(|p| p.id), Some(1));
    q.invariants().unwrap();
}

/// WQM's drain time converted the backlog to bits in u64 first (`Bytes::bits`), which overflows
/// above 2^61 octets (a panic under debug assertions, a wrapped, far too short drain time
/// otherwise).
#[test]
fn wqm_drain_time_huge_backlog() {
    let f = FreeFraction { free: Duration::from_millis(100), total: Duration::from_millis(100) };
    let d = t_drain(Bytes(u64::MAX), BitRate::from_mbps(100), f);
    assert_eq!(d, Duration::MAX);
    let d = t_drain(Bytes(1 << 62), BitRate(u64::MAX), f);
    assert!(d > Duration::from_secs(1));
    // An observation window near u64::MAX ns does not overflow the u128 product.
    let f = FreeFraction { free: Duration(1), total: Duration(u64::MAX) };
    assert_eq!(t_drain(Bytes(u64::MAX), BitRate(1), f), Duration::MAX);
}

/// BBR's BBRInflight added the quantization allowance to a bandwidth-delay product that a
/// (bogus) rate sample near u64::MAX bytes/s had saturated: overflow.
#[test]
fn bbr_huge_rate_sample() {
    let mss = 1448;
    let mut b = Bbr::new(BbrConfig::default(), Instant(1_000), mss, 10 * mss as u64);
    for (i, now) in [3_000_000_000u64, 6_000_000_000, 9_000_000_000].into_iter().enumerate() {
        // BtlBw near u64::MAX times an RTprop of 2 s saturates the bandwidth-delay product.
        let rtt = Duration::from_secs(2);
        b.on_ack(&AckInfo {
            cwnd_limited: true,
            now: Instant(now),
            newly_acked: 1448,
            cum_acked: 1448,
            bytes_in_flight: 0,
            prior_in_flight: 1448,
            rtt: Some(rtt),
            min_rtt: rtt,
            srtt: rtt,
            delivered: 1448 * (i as u64 + 1),
            rate: Some(RateSample {
                delivery_rate: u64::MAX,
                interval: rtt,
                delivered: 1448,
                prior_delivered: 0,
                is_app_limited: false,
                rtt,
                tx_in_flight: 1448,
                newly_lost: 0,
            }),
            in_recovery: false,
            mss,
            ce_acked: 0,
        });
        assert!(b.cwnd() >= mss as u64);
        assert!(b.pacing_rate().is_some_and(|r| r > 0));
    }
}

/// The same saturated BBRInflight plus the ACK-aggregation allowance (target cwnd, BBR
/// §4.2.3.6 with Linux's extra_acked): overflow. The shrunk case of `prop_cc::cc_invariants`.
#[test]
fn bbr_huge_rate_sample_with_aggregation() {
    let mss = 1448u32;
    let cfg = BbrConfig { high_gain: 1.0, cwnd_gain: 2.454842877547393, btlbw_filter_rounds: 2, quantization_segments: 0,
        full_bw_rounds: 1, pacing_margin_percent: 0, extra_acked: true, ..BbrConfig::default() };
    let mut b = Bbr::new(cfg, Instant(1_000), mss, 0);
    let ack = |now: u64, acked: u64, prior: u64, delivered: u64, rtt: Option<Duration>, rate: Option<u64>| {
        let srtt = rtt.unwrap_or(Duration::ZERO);
        AckInfo {
            cwnd_limited: true,
            now: Instant(now),
            newly_acked: acked,
            cum_acked: 0,
            bytes_in_flight: prior - acked,
            prior_in_flight: prior,
            rtt,
            min_rtt: srtt,
            srtt,
            delivered,
            rate: rate.map(|r| RateSample {
                delivery_rate: r,
                interval: srtt,
                delivered: acked,
                prior_delivered: delivered.saturating_sub(acked.max(1) * 4),
                is_app_limited: false,
                rtt: srtt,
                tx_in_flight: prior,
                newly_lost: 0,
            }),
            in_recovery: false,
            mss,
            ce_acked: 0,
        }
    };
    let mut now = 1_000;
    b.on_sent(Instant(now), 1, 1);
    b.on_ack(&ack(now, 1, 1, 1, None, Some(u64::MAX)));
    now += 10_000_000_001;
    b.on_ack(&ack(now, 0, 0, 1, None, None));
    b.on_sent(Instant(now), 300, 300);
    b.on_ack(&ack(now, 300, 300, 301, None, None));
    now += 200_000_001;
    b.on_sent(Instant(now), 1, 1);
    b.on_ack(&ack(now, 1, 1, 302, Some(Duration::from_micros(407_359)), Some(0)));
    assert!(b.cwnd() >= mss as u64);
}
