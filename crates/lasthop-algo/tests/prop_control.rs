//! Property tests of the mechanism controllers in `lasthop_algo::control`: aggctl's
//! aggregation estimator, its report codec and its rate allocator, the history-based initial
//! window (`cwnd_history`) and the receiver ACK policies. Generated operation sequences are
//! checked for each controller's `invariants()`, packet conservation (every received packet is
//! reported once), rates within `[min_rate, max_rate]`, monotone counters, timers that never
//! move backwards, spurious timeouts that change nothing, no panic, and determinism.

use lasthop_algo::control::ack_policy::{AckDecision, AckPolicyConfig, AckPolicyKind, AckPolicyStats};
use lasthop_algo::control::aggctl::{
    AggReport, AggctlConfig, AggregationEstimator, Allocation, AllocatorInput, AllocatorStats,
    EstimatorConfig, RateAllocator, RateUpdate, RxPacket, REPORT_LEN,
};
use lasthop_algo::control::cwnd_history::{CwndHistoryConfig, HistoryAverage, HistoryEvent};
use lasthop_core::{BitRate, Controller, Duration, Instant};
use proptest::prelude::*;

mod common;
use common::cases;

// ---------------------------------------------------------------------------------------------
// aggctl report codec

proptest! {
    #![proptest_config(cases(1024))]

    /// Arbitrary bytes never panic the decoder; whatever it accepts re-encodes to the same
    /// bytes (the layout is canonical).
    #[test]
    fn report_decode_canonical(bytes in prop::collection::vec(any::<u8>(), 0..40)) {
        if let Ok(r) = AggReport::decode(&bytes) {
            prop_assert_eq!(&r.encode()[..], &bytes[..]);
            prop_assert!(r.packets >= r.aggregates);
        }
    }

    /// Near-valid reports (a valid one with a few bytes changed) exercise the field checks.
    #[test]
    fn report_mutations(seq in any::<u32>(), agg in 0u32..100, extra in 0u32..1000, rate in 0u64..2_000_000_000,
                        mcs in prop::option::of(0u8..12), flips in prop::collection::vec((0usize..REPORT_LEN, any::<u8>()), 0..3)) {
        let r = AggReport { seq, aggregates: agg, packets: agg + if agg > 0 { extra } else { 0 },
                            mean_rate: if agg > 0 && rate > 0 { Some(BitRate(rate)) } else { None },
                            mcs: if agg > 0 { mcs } else { None } };
        let mut b = r.encode();
        prop_assert_eq!(AggReport::decode(&b), Ok(r));
        for (i, v) in flips { b[i] = v; }
        if let Ok(d) = AggReport::decode(&b) {
            prop_assert_eq!(d.encode(), b);
        }
    }
}

// ---------------------------------------------------------------------------------------------
// aggctl estimator (receiver)

#[derive(Clone, Copy, Debug)]
enum RxOp {
    /// A packet `dt` ns after the previous event (negative: reordered timestamps).
    Packet { dt: i64, ampdu: Option<u8>, rate: Option<u64>, mcs: Option<u8> },
    Advance(u64),
    Spurious,
}

fn rx_op() -> impl Strategy<Value = RxOp> {
    prop_oneof![
        8 => (prop_oneof![8 => 0i64..60_000, 1 => -100_000i64..0, 1 => 0i64..2_000_000_000],
              prop::option::of(0u8..4), prop::option::of(prop_oneof![Just(0u64), 1u64..2_000_000_000]), prop::option::of(0u8..12))
            .prop_map(|(dt, ampdu, rate, mcs)| RxOp::Packet { dt, ampdu, rate, mcs }),
        1 => prop_oneof![0u64..1_000_000_000, Just(100_000_000_000u64)].prop_map(RxOp::Advance),
        1 => Just(RxOp::Spurious),
    ]
}

fn est_cfg() -> impl Strategy<Value = EstimatorConfig> {
    (1_000_000u64..2_000_000_000, 1u64..200_000, 1u32..300)
        .prop_map(|(i, g, m)| EstimatorConfig { interval: Duration(i), gap_threshold: Duration(g), max_aggregate: m })
        .prop_filter("valid", |c| c.validate().is_ok())
}

fn est_drive(cfg: EstimatorConfig, ops: &[RxOp]) -> Result<Vec<AggReport>, TestCaseError> {
    let start = Instant(5_000);
    let mut e = AggregationEstimator::new(cfg, start).map_err(|x| TestCaseError::fail(x.to_string()))?;
    let mut now = start;
    let mut reports = Vec::new();
    let mut last_seq: Option<u32> = None;
    let mut prev = e.stats();
    let mut handed = 0u64;
    for op in ops {
        match *op {
            RxOp::Packet { dt, ampdu, rate, mcs } => {
                let t = if dt >= 0 { Instant(now.0.saturating_add(dt as u64)) } else { Instant(now.0.saturating_sub(dt.unsigned_abs()).max(start.0)) };
                now = Instant(now.0.max(t.0));
                let pkt = RxPacket { ampdu_ref: ampdu.map(u32::from), rate: rate.map(BitRate), mcs };
                // The host's clock never goes back; a reordered timestamp is handed with it.
                e.handle_input(t, pkt);
                handed += 1;
            }
            RxOp::Advance(dt) => {
                now = Instant(now.0.saturating_add(dt));
                while let Some(t) = e.poll_timeout().filter(|&t| t <= now) {
                    e.handle_timeout(t);
                    prop_assert!(e.poll_timeout().is_none_or(|n| n > t), "timer did not move past {:?}", t);
                }
            }
            RxOp::Spurious => {
                // An early timeout emits nothing (it may close a frame whose gap ran out:
                // that bookkeeping is lazy and changes no report).
                if e.poll_timeout().is_none_or(|t| t > now) {
                    let (reports, t) = (e.stats().reports, e.poll_timeout());
                    e.handle_timeout(now);
                    prop_assert_eq!(reports, e.stats().reports, "early timeout emitted a report");
                    prop_assert_eq!(t, e.poll_timeout(), "early timeout moved the timer");
                }
            }
        }
        while let Some(r) = e.poll_output() {
            prop_assert!(r.packets >= r.aggregates, "report with fewer packets than frames");
            prop_assert!(r.aggregates > 0 || (r.mean_rate.is_none() && r.mcs.is_none()));
            prop_assert!(last_seq.is_none_or(|s| r.seq > s), "report seq not increasing");
            last_seq = Some(r.seq);
            prop_assert_eq!(AggReport::decode(&r.encode()).map(|d| d.encode()), Ok(r.encode()));
            reports.push(r);
        }
        if let Err(x) = e.invariants() {
            return Err(TestCaseError::fail(format!("invariants: {x}")));
        }
        let s = e.stats();
        prop_assert_eq!(s.packets, handed);
        prop_assert!(s.aggregates >= prev.aggregates && s.reports >= prev.reports && s.reordered >= prev.reordered);
        prev = s;
    }
    // Far in the future every packet has been reported exactly once.
    let end = Instant(now.0.saturating_add(cfg.interval.0.saturating_mul(4)));
    while let Some(t) = e.poll_timeout().filter(|&t| t <= end) {
        e.handle_timeout(t);
    }
    while let Some(r) = e.poll_output() {
        reports.push(r);
    }
    let reported: u64 = reports.iter().map(|r| r.packets as u64).sum();
    prop_assert_eq!(reported, handed, "packets not all reported once");
    Ok(reports)
}

proptest! {
    #![proptest_config(cases(256))]

    #[test]
    fn estimator_invariants(cfg in est_cfg(), ops in prop::collection::vec(rx_op(), 0..300)) {
        let a = est_drive(cfg, &ops)?;
        let b = est_drive(cfg, &ops)?;
        prop_assert_eq!(a, b);
    }
}

// ---------------------------------------------------------------------------------------------
// aggctl allocator (sender)

#[derive(Clone, Copy, Debug)]
enum AlOp {
    Join { st: u8, phy: Option<u64> },
    Leave(u8),
    Report { st: u8, seq: u8, agg: u32, extra: u32, rate: Option<u64> },
    Advance(u64),
}

fn al_op() -> impl Strategy<Value = AlOp> {
    prop_oneof![
        2 => (0u8..5, prop::option::of(prop_oneof![Just(0u64), 1u64..5_000_000_000])).prop_map(|(st, phy)| AlOp::Join { st, phy }),
        1 => (0u8..5).prop_map(AlOp::Leave),
        6 => (0u8..6, 0u8..8, 0u32..200, 0u32..20_000, prop::option::of(prop_oneof![Just(0u64), 1u64..5_000_000_000, Just(u64::MAX)]))
            .prop_map(|(st, seq, agg, extra, rate)| AlOp::Report { st, seq, agg, extra, rate }),
        2 => prop_oneof![0u64..1_000_000_000, Just(60_000_000_000u64)].prop_map(AlOp::Advance),
    ]
}

fn al_cfg() -> impl Strategy<Value = AggctlConfig> {
    (1u32..256, 1u32..256, 1_000_000u64..2_000_000_000, 0.0f64..1e8, 1u64..10_000, 1u64..100, 1u64..20_000, any::<bool>(), 0.01f64..0.99)
        .prop_map(|(n_e, ba, iv, k0, init_mbps, min_mbps, max_mbps, eq, decay)| AggctlConfig {
            target_aggregation: n_e,
            block_ack_window: ba,
            interval: Duration(iv),
            k0,
            initial_rate: BitRate::from_mbps(init_mbps),
            min_rate: BitRate::from_mbps(min_mbps),
            max_rate: BitRate::from_mbps(max_mbps),
            allocation: if eq { Allocation::EqualAirtime } else { Allocation::PerStation },
            hold_time: Duration(iv * 2),
            decay_after: Duration(iv * 4),
            decay_factor: decay,
            ..AggctlConfig::default()
        })
        .prop_filter("valid", |c| c.validate().is_ok())
}

fn stats_monotone(a: &AllocatorStats, b: &AllocatorStats) -> bool {
    let f = |s: &AllocatorStats| [s.joins, s.leaves, s.reports, s.reports_applied, s.reports_empty, s.reports_unknown,
        s.reports_duplicate, s.reference_updates, s.station_updates, s.holds, s.decay_steps, s.rate_changes];
    f(a).iter().zip(f(b).iter()).all(|(x, y)| y >= x)
}

fn al_drive(cfg: AggctlConfig, ops: &[AlOp]) -> Result<Vec<(u64, RateUpdate)>, TestCaseError> {
    let mut a = RateAllocator::new(cfg).map_err(|x| TestCaseError::fail(x.to_string()))?;
    let mut now = Instant(1);
    let mut out = Vec::new();
    let mut prev = a.stats();
    for op in ops {
        match *op {
            AlOp::Join { st, phy } => a.handle_input(now, AllocatorInput::Join { station: st as u32, phy_rate: phy.map(BitRate) }),
            AlOp::Leave(st) => a.handle_input(now, AllocatorInput::Leave { station: st as u32 }),
            AlOp::Report { st, seq, agg, extra, rate } => {
                let report = AggReport {
                    seq: seq as u32,
                    aggregates: agg,
                    packets: agg.saturating_add(if agg > 0 { extra } else { 0 }),
                    mean_rate: if agg > 0 { rate.map(BitRate) } else { None },
                    mcs: None,
                };
                a.handle_input(now, AllocatorInput::Report { station: st as u32, report });
            }
            AlOp::Advance(dt) => {
                now = Instant(now.0.saturating_add(dt));
                let mut guard = 0;
                while let Some(t) = a.poll_timeout().filter(|&t| t <= now) {
                    guard += 1;
                    prop_assert!(guard < 100_000, "allocator timer does not move on");
                    a.handle_timeout(t);
                    prop_assert!(a.poll_timeout().is_none_or(|n| n > t), "timer did not move past {:?}", t);
                }
            }
        }
        let mut latest = std::collections::BTreeMap::new();
        while let Some(u) = a.poll_output() {
            prop_assert!(u.rate >= cfg.min_rate && u.rate <= cfg.max_rate, "rate {:?} out of bounds", u.rate);
            prop_assert_eq!(u.pacing_interval, u.rate.tx_time(cfg.packet_size));
            latest.insert(u.station, u.rate);
            out.push((now.0, u));
        }
        // The last update handed out for a station is its current rate (a station that left
        // has none).
        for (st, r) in latest {
            prop_assert!(a.rate(st).is_none_or(|x| x == r), "update {:?} is not station {}'s rate", r, st);
        }
        if let Err(x) = a.invariants() {
            return Err(TestCaseError::fail(format!("invariants: {x}")));
        }
        for id in a.station_ids().collect::<Vec<_>>() {
            let v = a.station(id).unwrap();
            prop_assert!(v.x.is_finite() && v.mu_n.is_none_or(f64::is_finite));
        }
        let s = a.stats();
        prop_assert!(stats_monotone(&prev, &s), "a counter went backwards");
        prev = s;
    }
    Ok(out)
}

proptest! {
    #![proptest_config(cases(256))]

    #[test]
    fn allocator_invariants(cfg in al_cfg(), ops in prop::collection::vec(al_op(), 0..200)) {
        let a = al_drive(cfg, &ops)?;
        let b = al_drive(cfg, &ops)?;
        prop_assert_eq!(a, b);
    }
}

// ---------------------------------------------------------------------------------------------
// cwnd_history

#[derive(Clone, Copy, Debug)]
enum HOp {
    Record { peer: u8, ev: u8, cwnd: u64 },
    Initial { peer: u8, default: u64 },
    Purge,
    ExportImport,
    Advance(u64),
}

fn h_op() -> impl Strategy<Value = HOp> {
    prop_oneof![
        4 => (0u8..12, 0u8..3, prop_oneof![0u64..10_000_000, Just(u64::MAX)]).prop_map(|(peer, ev, cwnd)| HOp::Record { peer, ev, cwnd }),
        3 => (0u8..12, 0u64..200_000).prop_map(|(peer, default)| HOp::Initial { peer, default }),
        1 => Just(HOp::Purge),
        1 => Just(HOp::ExportImport),
        2 => prop_oneof![0u64..10_000_000_000, Just(10_000_000_000_000u64)].prop_map(HOp::Advance),
    ]
}

fn h_cfg() -> impl Strategy<Value = CwndHistoryConfig> {
    (any::<bool>(), 0.001f64..=1.0, 1usize..8, 1u64..20_000_000_000, prop::option::of(1u64..1_000_000)).prop_map(|(m, g, c, l, cap)| CwndHistoryConfig {
        average: if m { HistoryAverage::Mean } else { HistoryAverage::Ewma },
        ewma_gain: g,
        capacity: c,
        lifetime: Duration(l),
        max_initial_window: cap,
    })
}

fn h_drive(cfg: CwndHistoryConfig, ops: &[HOp]) -> Result<Vec<u64>, TestCaseError> {
    let mut h = cfg.build::<u8>().map_err(|e| TestCaseError::fail(e.to_string()))?;
    let mut now = Instant(0);
    let mut out = Vec::new();
    for op in ops {
        match *op {
            HOp::Record { peer, ev, cwnd } => {
                let ev = [HistoryEvent::ZeroRttHandshake, HistoryEvent::ConnectionClosed, HistoryEvent::IdleTimeout][ev as usize];
                h.record(now, &peer, ev, cwnd);
            }
            HOp::Initial { peer, default } => {
                let had = h.peek(now, &peer).map(|p| p.average(cfg.average));
                let w = h.initial_window(now, &peer, default);
                prop_assert!(w >= default, "initial window below the default");
                match (had, cfg.max_initial_window) {
                    (None, _) => prop_assert_eq!(w, default),
                    (Some(avg), Some(cap)) => prop_assert_eq!(w, default.max(avg.min(cap))),
                    (Some(avg), None) => prop_assert_eq!(w, default.max(avg)),
                }
                out.push(w);
            }
            HOp::Purge => {
                let before = h.len();
                let n = h.purge(now);
                prop_assert_eq!(h.len() + n, before);
            }
            HOp::ExportImport => {
                let rec = h.export(now);
                let mut fresh = cfg.build::<u8>().unwrap();
                let n = fresh.import(now, rec.clone());
                prop_assert!(n <= rec.len());
                prop_assert_eq!(fresh.export(now), rec, "export/import does not round-trip");
            }
            HOp::Advance(dt) => now = Instant(now.0.saturating_add(dt)),
        }
        if let Err(e) = h.invariants() {
            return Err(TestCaseError::fail(format!("invariants: {e}")));
        }
        prop_assert!(h.len() <= cfg.capacity, "over capacity");
    }
    Ok(out)
}

proptest! {
    #![proptest_config(cases(256))]

    #[test]
    fn cwnd_history_invariants(cfg in h_cfg(), ops in prop::collection::vec(h_op(), 0..200)) {
        let a = h_drive(cfg, &ops)?;
        prop_assert_eq!(a, h_drive(cfg, &ops)?);
    }
}

// ---------------------------------------------------------------------------------------------
// ACK policies

#[derive(Clone, Copy, Debug)]
enum AOp {
    Packet { eliciting: bool, reordered: bool, skip: u8 },
    AckSent,
    MinRtt(u64),
    AckFrequency { seq: u8, thresh: u64, delay: u64, reorder: u64 },
    ImmediateAck,
    Advance(u64),
    Spurious,
}

fn a_op() -> impl Strategy<Value = AOp> {
    prop_oneof![
        8 => (any::<bool>(), prop::bool::weighted(0.1), prop_oneof![9 => Just(0u8), 1 => 1u8..5]).prop_map(|(eliciting, reordered, skip)| AOp::Packet { eliciting, reordered, skip }),
        2 => Just(AOp::AckSent),
        1 => (0u64..500_000_000).prop_map(AOp::MinRtt),
        1 => (0u8..6, prop_oneof![0u64..20, Just(u64::MAX)], prop_oneof![0u64..100_000_000, Just(u64::MAX)], prop_oneof![0u64..5, Just(u64::MAX)])
            .prop_map(|(seq, thresh, delay, reorder)| AOp::AckFrequency { seq, thresh, delay, reorder }),
        1 => Just(AOp::ImmediateAck),
        3 => prop_oneof![0u64..50_000_000, Just(10_000_000_000u64)].prop_map(AOp::Advance),
        1 => Just(AOp::Spurious),
    ]
}

fn a_cfg() -> impl Strategy<Value = AckPolicyConfig> {
    (0u8..3, 1u64..200_000_000, 1u32..20, 1u32..40, 0u64..300, 1u32..10, 1u64..50_000_000).prop_map(|(k, mad, every, dec, after, div, min)| AckPolicyConfig {
        kind: [AckPolicyKind::TcpAcking, AckPolicyKind::AckDecimation, AckPolicyKind::AckFrequency][k as usize],
        max_ack_delay: Duration(mad),
        ack_every: every,
        decimation_ack_every: dec,
        decimation_after_packets: after,
        decimation_min_rtt_divisor: div,
        min_ack_delay: Duration(min),
    }).prop_filter("valid", |c| c.validate().is_ok())
}

fn ack_monotone(a: &AckPolicyStats, b: &AckPolicyStats) -> bool {
    b.packets >= a.packets && b.ack_eliciting >= a.ack_eliciting && b.acks_sent >= a.acks_sent
        && b.due_immediate >= a.due_immediate && b.due_count >= a.due_count && b.due_timer >= a.due_timer
        && b.frames_applied >= a.frames_applied && b.frames_stale >= a.frames_stale
}

fn a_drive(cfg: AckPolicyConfig, ops: &[AOp]) -> Result<Vec<String>, TestCaseError> {
    let mut p = cfg.build().map_err(|e| TestCaseError::fail(e.to_string()))?;
    let mut now = Instant(0);
    let mut pn = 0u64;
    let mut out = Vec::new();
    let mut prev = p.stats();
    for op in ops {
        match *op {
            AOp::Packet { eliciting, reordered, skip } => {
                pn += 1 + skip as u64;
                let d = p.on_packet(now, pn, eliciting, reordered || skip > 0);
                if let AckDecision::ArmTimer(t) = d {
                    prop_assert_eq!(p.poll_timeout(), Some(t));
                    // A deadline already passed (after ACK_FREQUENCY shortened the delay, the
                    // timer still runs from the first pending packet) fires at once.
                    if t <= now {
                        prop_assert!(p.handle_timeout(now) && p.ack_due());
                    }
                }
                out.push(format!("{d:?}"));
            }
            AOp::AckSent => {
                p.on_ack_sent(now);
                prop_assert!(!p.ack_due() && p.pending_ack_eliciting() == 0 && p.poll_timeout().is_none());
                prop_assert_eq!(p.last_ack_sent(), Some(now));
            }
            AOp::MinRtt(r) => p.set_min_rtt(Duration(r)),
            AOp::AckFrequency { seq, thresh, delay, reorder } => {
                let r = p.on_ack_frequency(seq as u64, thresh, Duration(delay), reorder);
                prop_assert_eq!(r.is_err() && cfg.kind != AckPolicyKind::AckFrequency, cfg.kind != AckPolicyKind::AckFrequency);
                out.push(format!("{r:?}"));
            }
            AOp::ImmediateAck => {
                let r = p.on_immediate_ack();
                prop_assert_eq!(r.is_ok(), cfg.kind == AckPolicyKind::AckFrequency);
                out.push(format!("{r:?}"));
            }
            AOp::Advance(dt) => {
                now = Instant(now.0.saturating_add(dt));
                if let Some(t) = p.poll_timeout().filter(|&t| t <= now) {
                    prop_assert!(p.handle_timeout(now), "a due timer did not fire");
                    prop_assert!(p.ack_due(), "fired timer left no ACK due");
                    let _ = t;
                }
            }
            AOp::Spurious => {
                if p.poll_timeout().is_none_or(|t| t > now) {
                    let (s, due, pend) = (p.stats(), p.ack_due(), p.poll_timeout());
                    prop_assert!(!p.handle_timeout(now), "an early timeout fired");
                    prop_assert_eq!((s, due, pend), (p.stats(), p.ack_due(), p.poll_timeout()));
                }
            }
        }
        if let Err(e) = p.invariants() {
            return Err(TestCaseError::fail(format!("invariants: {e}")));
        }
        let s = p.stats();
        prop_assert!(ack_monotone(&prev, &s), "a counter went backwards");
        prop_assert!(p.pending_ack_eliciting() <= s.ack_eliciting);
        prev = s;
    }
    Ok(out)
}

proptest! {
    #![proptest_config(cases(256))]

    #[test]
    fn ack_policy_invariants(cfg in a_cfg(), ops in prop::collection::vec(a_op(), 0..300)) {
        let a = a_drive(cfg, &ops)?;
        prop_assert_eq!(a, a_drive(cfg, &ops)?);
    }
}
