use super::*;
use alloc::vec::Vec;

fn ms(x: u64) -> Duration {
    Duration::from_millis(x)
}
fn at_us(x: u64) -> Instant {
    Instant::from_nanos(x * 1_000)
}
fn policy(kind: AckPolicyKind) -> AckPolicy {
    AckPolicyConfig::with_kind(kind).build().unwrap()
}

/// A packet in a script: arrival time (µs), packet number, ack-eliciting, reordered.
type Pkt = (u64, u64, bool, bool);

/// Drive `p` through `pkts` like a host: fire due timers before each arrival, send every
/// ACK as soon as it is due, then run timers until `end_us`. Returns (time, largest packet
/// number received) for every ACK sent.
fn run(p: &mut AckPolicy, pkts: &[Pkt], end_us: u64) -> Vec<(Instant, u64)> {
    let mut acks = Vec::new();
    let mut largest = 0;
    let fire = |p: &mut AckPolicy, until: Instant, largest: u64, acks: &mut Vec<(Instant, u64)>| {
        while let Some(t) = p.poll_timeout().filter(|&t| t <= until) {
            assert!(p.handle_timeout(t));
            p.on_ack_sent(t);
            acks.push((t, largest));
        }
    };
    for &(t, pn, eliciting, reordered) in pkts {
        let now = at_us(t);
        fire(p, now, largest, &mut acks);
        largest = largest.max(pn);
        if p.on_packet(now, pn, eliciting, reordered) == AckDecision::AckNow {
            p.on_ack_sent(now);
            acks.push((now, largest));
        }
        p.invariants().unwrap();
    }
    fire(p, at_us(end_us), largest, &mut acks);
    acks
}

fn in_order(n: u64, spacing_us: u64) -> Vec<Pkt> {
    (0..n).map(|pn| (pn * spacing_us, pn, true, false)).collect()
}

fn acked_pns(acks: &[(Instant, u64)]) -> Vec<u64> {
    acks.iter().map(|a| a.1).collect()
}

#[test]
fn defaults_validate() {
    for kind in [AckPolicyKind::TcpAcking, AckPolicyKind::AckDecimation, AckPolicyKind::AckFrequency] {
        let c = AckPolicyConfig::with_kind(kind);
        assert_eq!(c.validate(), Ok(()));
        assert_eq!(c.build().unwrap().kind(), kind);
    }
    let bad = |c: AckPolicyConfig, field: &str| assert_eq!(c.validate().unwrap_err().field, field);
    let d = AckPolicyConfig::default();
    bad(AckPolicyConfig { ack_every: 0, ..d }, "ack_every");
    bad(AckPolicyConfig { decimation_ack_every: 0, ..d }, "decimation_ack_every");
    bad(AckPolicyConfig { decimation_min_rtt_divisor: 0, ..d }, "decimation_min_rtt_divisor");
    bad(AckPolicyConfig { max_ack_delay: MAX_ACK_DELAY_LIMIT, ..d }, "max_ack_delay");
    bad(AckPolicyConfig { min_ack_delay: ms(30), ..d }, "min_ack_delay");
    assert!(AckPolicyConfig { ack_every: 0, ..d }.build().is_err());
}

#[test]
fn tcp_acking_acks_every_second_packet() {
    let mut p = policy(AckPolicyKind::TcpAcking);
    let acks = run(&mut p, &in_order(10, 1_000), 10_000);
    assert_eq!(acked_pns(&acks), [1, 3, 5, 7, 9]);
    // Each ACK leaves with the second packet, not on a timer.
    for (t, pn) in acks {
        assert_eq!(t, at_us(pn * 1_000));
    }
    let s = p.stats();
    assert_eq!((s.due_count, s.due_timer, s.due_immediate, s.acks_sent), (5, 0, 0, 5));
}

#[test]
fn tcp_acking_delays_a_lone_packet_by_max_ack_delay() {
    let mut p = policy(AckPolicyKind::TcpAcking);
    assert_eq!(p.poll_timeout(), None);
    assert_eq!(p.on_packet(at_us(0), 0, true, false), AckDecision::ArmTimer(at_us(25_000)));
    // A later packet that does not elicit an ACK neither restarts nor cancels the timer.
    assert_eq!(p.on_packet(at_us(10_000), 1, false, false), AckDecision::ArmTimer(at_us(25_000)));
    // Early and spurious timeouts are no-ops.
    let before = p.stats();
    assert!(!p.handle_timeout(at_us(24_999)));
    assert_eq!(p.poll_timeout(), Some(at_us(25_000)));
    assert!(!p.ack_due());
    assert_eq!(p.stats(), before);
    assert!(p.handle_timeout(at_us(25_000)));
    assert!(p.ack_due());
    assert_eq!(p.poll_timeout(), None);
    assert!(!p.handle_timeout(at_us(26_000)));
    assert_eq!(p.stats().due_timer, 1);
    p.on_ack_sent(at_us(25_000));
    assert!(!p.ack_due());
    assert_eq!(p.pending_ack_eliciting(), 0);
    assert_eq!(p.last_ack_sent(), Some(at_us(25_000)));
    assert!(!p.handle_timeout(at_us(50_000)));
    // Scripted: a single packet at 100 ms is acknowledged at 125 ms.
    let acks = run(&mut p, &[(100_000, 2, true, false)], 200_000);
    assert_eq!(acks, [(at_us(125_000), 2)]);
}

#[test]
fn non_ack_eliciting_packets_never_make_an_ack_due() {
    for kind in [AckPolicyKind::TcpAcking, AckPolicyKind::AckDecimation, AckPolicyKind::AckFrequency] {
        let mut p = policy(kind);
        for pn in 0..20 {
            // Even with a gap: no ACK-only packet in response (RFC 9000 §13.2.1).
            assert_eq!(p.on_packet(at_us(pn), pn * 2, false, pn > 0), AckDecision::Nothing);
        }
        assert_eq!(p.poll_timeout(), None);
        assert_eq!(p.stats().packets, 20);
        assert_eq!(p.stats().ack_eliciting, 0);
    }
}

#[test]
fn immediate_ack_on_a_gap_or_a_late_packet() {
    for kind in [AckPolicyKind::TcpAcking, AckPolicyKind::AckDecimation, AckPolicyKind::AckFrequency] {
        let mut p = policy(kind);
        assert_eq!(p.on_packet(at_us(0), 0, true, false), AckDecision::ArmTimer(at_us(25_000)));
        // Packet 1 is missing: packet 2 opens a gap.
        assert_eq!(p.on_packet(at_us(100), 2, true, true), AckDecision::AckNow);
        p.on_ack_sent(at_us(100));
        // Packet 1 arrives late and fills it.
        assert_eq!(p.on_packet(at_us(200), 1, true, true), AckDecision::AckNow);
        p.on_ack_sent(at_us(200));
        assert_eq!(p.stats().due_immediate, 2, "{kind:?}");
    }
}

#[test]
fn decimation_acks_every_tenth_packet_only_after_packet_100() {
    let mut p = policy(AckPolicyKind::AckDecimation);
    let acks = run(&mut p, &in_order(130, 100), 13_000);
    let mut expected: Vec<u64> = (0..50).map(|i| 2 * i + 1).collect(); // packets 1..=100
    expected.extend([109, 119, 129]);
    assert_eq!(acked_pns(&acks), expected);
    assert_eq!(p.stats().due_timer, 0);
    if let AckPolicy::AckDecimation(d) = &p {
        assert!(d.decimating());
    }
}

#[test]
fn decimation_still_acks_reordering_at_once() {
    let mut p = policy(AckPolicyKind::AckDecimation);
    run(&mut p, &in_order(100, 100), 10_000);
    assert_eq!(p.on_packet(at_us(20_000), 100, true, false), AckDecision::ArmTimer(at_us(45_000)));
    assert_eq!(p.on_packet(at_us(20_100), 102, true, true), AckDecision::AckNow);
}

#[test]
fn decimation_delay_is_min_of_max_ack_delay_and_quarter_min_rtt() {
    let mut p = policy(AckPolicyKind::AckDecimation);
    p.set_min_rtt(ms(40));
    // Before decimation starts: TCP_ACKING's 25 ms, whatever the RTT.
    assert_eq!(p.on_packet(at_us(0), 0, true, false), AckDecision::ArmTimer(at_us(25_000)));
    p.on_ack_sent(at_us(0));
    run(&mut p, &(1..100).map(|pn| (pn, pn, true, false)).collect::<Vec<_>>(), 100);
    p.on_ack_sent(at_us(100));
    // Packet 101 onwards: min(25 ms, 40 ms / 4) = 10 ms.
    let acks = run(&mut p, &[(1_000, 100, true, false)], 50_000);
    assert_eq!(acks, [(at_us(11_000), 100)]);
    // minRTT/4 above 25 ms: 25 ms wins.
    p.set_min_rtt(ms(200));
    assert_eq!(p.on_packet(at_us(60_000), 101, true, false), AckDecision::ArmTimer(at_us(85_000)));
    // Unknown min_rtt: max_ack_delay.
    let mut q = policy(AckPolicyKind::AckDecimation);
    run(&mut q, &in_order(100, 1), 100);
    assert_eq!(q.on_packet(at_us(1_000), 100, true, false), AckDecision::ArmTimer(at_us(26_000)));
}

#[test]
fn decimation_parameters_are_parameters() {
    let cfg = AckPolicyConfig {
        decimation_ack_every: 4,
        decimation_after_packets: 10,
        decimation_min_rtt_divisor: 8,
        ..AckPolicyConfig::with_kind(AckPolicyKind::AckDecimation)
    };
    let mut p = cfg.build().unwrap();
    p.set_min_rtt(ms(40));
    let acks = run(&mut p, &in_order(18, 10), 200);
    assert_eq!(acked_pns(&acks), [1, 3, 5, 7, 9, 13, 17]);
    assert_eq!(p.on_packet(at_us(1_000), 18, true, false), AckDecision::ArmTimer(at_us(6_000)));
}

#[test]
fn ack_frequency_defaults_to_rfc9000_then_follows_frames() {
    let mut p = policy(AckPolicyKind::AckFrequency);
    assert_eq!(acked_pns(&run(&mut p, &in_order(4, 10), 100)), [1, 3]);
    // Ack-Eliciting Threshold 9: an ACK after more than 9, i.e. every 10th packet.
    assert_eq!(p.on_ack_frequency(5, 9, ms(10), 1), Ok(AckFrequencyOutcome::Applied));
    let pkts: Vec<Pkt> = (4..24).map(|pn| (1_000 + pn, pn, true, false)).collect();
    assert_eq!(acked_pns(&run(&mut p, &pkts, 2_000)), [13, 23]);
    // Requested Max Ack Delay 10 ms.
    assert_eq!(p.on_packet(at_us(5_000), 24, true, false), AckDecision::ArmTimer(at_us(15_000)));
    assert!(p.handle_timeout(at_us(15_000)));
    p.on_ack_sent(at_us(15_000));
    // Obsolete frames (same or lower Sequence Number) are ignored.
    assert_eq!(p.on_ack_frequency(5, 0, ms(1), 0), Ok(AckFrequencyOutcome::IgnoredStale));
    assert_eq!(p.on_ack_frequency(3, 0, ms(1), 0), Ok(AckFrequencyOutcome::IgnoredStale));
    if let AckPolicy::AckFrequency(a) = &p {
        let want = AckFrequencyParams {
            sequence: Some(5),
            ack_eliciting_threshold: 9,
            max_ack_delay: ms(10),
            reordering_threshold: 1,
        };
        assert_eq!(*a.params(), want);
    }
    assert_eq!(p.on_packet(at_us(20_000), 25, true, false), AckDecision::ArmTimer(at_us(30_000)));
    // A newer frame with threshold 0: every ack-eliciting packet at once.
    assert_eq!(p.on_ack_frequency(6, 0, ms(5), 1), Ok(AckFrequencyOutcome::Applied));
    assert_eq!(p.on_packet(at_us(20_100), 26, true, false), AckDecision::AckNow);
    let s = p.stats();
    assert_eq!((s.frames_applied, s.frames_stale), (2, 2));
}

#[test]
fn ack_frequency_rejects_invalid_delays_and_unnegotiated_frames() {
    let mut p = policy(AckPolicyKind::AckFrequency);
    let e = Err(AckFrequencyError::InvalidMaxAckDelay);
    assert_eq!(p.on_ack_frequency(0, 1, Duration::from_micros(999), 1), e);
    assert_eq!(p.on_ack_frequency(0, 1, MAX_ACK_DELAY_LIMIT, 1), e);
    // The invalid frames were not processed: sequence 0 is still fresh.
    assert_eq!(p.on_ack_frequency(0, 1, ms(1), 1), Ok(AckFrequencyOutcome::Applied));
    for kind in [AckPolicyKind::TcpAcking, AckPolicyKind::AckDecimation] {
        let mut q = policy(kind);
        assert_eq!(q.on_ack_frequency(0, 1, ms(5), 1), Err(AckFrequencyError::NotNegotiated));
        assert_eq!(q.on_immediate_ack(), Err(AckFrequencyError::NotNegotiated));
    }
}

#[test]
fn ack_frequency_update_retimes_a_pending_ack() {
    let mut p = policy(AckPolicyKind::AckFrequency);
    assert_eq!(p.on_packet(at_us(1_000), 0, true, false), AckDecision::ArmTimer(at_us(26_000)));
    p.on_ack_frequency(0, 10, ms(5), 1).unwrap();
    assert_eq!(p.poll_timeout(), Some(at_us(6_000)));
}

#[test]
fn immediate_ack_frame_acks_now() {
    let mut p = policy(AckPolicyKind::AckFrequency);
    p.on_ack_frequency(0, 100, ms(100), 0).unwrap();
    assert_eq!(p.on_packet(at_us(0), 0, true, false), AckDecision::ArmTimer(at_us(100_000)));
    assert_eq!(p.on_immediate_ack(), Ok(AckDecision::AckNow));
    assert_eq!(p.poll_timeout(), None);
    assert!(p.ack_due());
    p.on_ack_sent(at_us(0));
    assert_eq!(p.stats().due_immediate, 1);
}

/// Only reordering makes ACKs due: a huge threshold and delay.
fn reorder_only(thr: u64) -> AckPolicy {
    let mut p = policy(AckPolicyKind::AckFrequency);
    p.on_ack_frequency(0, 1_000, ms(1_000), thr).unwrap();
    p
}

fn arrivals(pns: &[u64]) -> Vec<Pkt> {
    // The flag says "reordered" whenever a packet skips a number, as RFC 9000 would; with
    // a Reordering Threshold above 1 the policy must not follow it.
    let mut largest: Option<u64> = None;
    pns.iter()
        .enumerate()
        .map(|(i, &pn)| {
            let reordered = largest.is_some_and(|l| pn != l + 1);
            largest = Some(largest.map_or(pn, |l| l.max(pn)));
            (i as u64, pn, true, reordered)
        })
        .collect()
}

#[test]
fn reordering_threshold_3_follows_draft_table_1() {
    let mut p = reorder_only(3);
    let acks = run(&mut p, &arrivals(&[0, 1, 3, 4, 5, 8, 9, 10]), 100);
    assert_eq!(acked_pns(&acks), [5, 9, 10]);
}

#[test]
fn reordering_threshold_5_follows_draft_table_2() {
    let mut p = reorder_only(5);
    let acks = run(&mut p, &arrivals(&[0, 1, 3, 5, 6, 7, 8, 9]), 100);
    assert_eq!(acked_pns(&acks), [7, 9]);
}

#[test]
fn reordering_threshold_acks_a_packet_the_sender_may_have_declared_lost() {
    let mut p = reorder_only(3);
    assert_eq!(acked_pns(&run(&mut p, &arrivals(&[0, 1, 3, 4, 5]), 10)), [5]);
    // Packet 2 <= Largest Acked (5) - 3: report it at once.
    assert_eq!(p.on_packet(at_us(20), 2, true, true), AckDecision::AckNow);
    p.on_ack_sent(at_us(20));
    // Within the window (after an ACK at 9, Largest Reported Missing is 6): packet 7 late
    // does not elicit an immediate ACK.
    let mut q = reorder_only(3);
    assert_eq!(acked_pns(&run(&mut q, &arrivals(&[0, 1, 2, 3, 4, 5, 6, 8, 9]), 10)), []);
    q.on_ack_sent(at_us(20));
    assert_eq!(q.on_packet(at_us(30), 7, true, true), AckDecision::ArmTimer(at_us(1_000_030)));
}

#[test]
fn random_operations_keep_invariants() {
    let mut rng = lasthop_core::Rng::from_seed(0xAC);
    for kind in [AckPolicyKind::TcpAcking, AckPolicyKind::AckDecimation, AckPolicyKind::AckFrequency] {
        let mut p = policy(kind);
        let (mut now, mut next_pn, mut seq) = (Instant::ZERO, 0u64, 0u64);
        for _ in 0..20_000 {
            now += Duration::from_micros(rng.gen_range_inclusive(3_000));
            match rng.gen_range_inclusive(9) {
                0..=5 => {
                    // Mostly in order, sometimes a skip or a late packet.
                    let pn = match rng.gen_range_inclusive(9) {
                        0 => next_pn.saturating_sub(rng.gen_range_inclusive(8)),
                        1 => next_pn + rng.gen_range_inclusive(4),
                        _ => next_pn,
                    };
                    next_pn = next_pn.max(pn + 1);
                    let d = p.on_packet(now, pn, rng.bernoulli(0.9), pn + 1 != next_pn);
                    if d == AckDecision::AckNow {
                        p.on_ack_sent(now);
                    }
                }
                6 => {
                    let before = p.poll_timeout();
                    let fired = p.handle_timeout(now);
                    assert_eq!(fired, before.is_some_and(|t| t <= now));
                    if fired {
                        p.on_ack_sent(now);
                    }
                }
                7 => p.set_min_rtt(Duration::from_micros(1 + rng.gen_range_inclusive(100_000))),
                8 => {
                    seq += rng.gen_range_inclusive(2);
                    let thr = rng.gen_range_inclusive(20);
                    let delay = Duration::from_micros(1_000 + rng.gen_range_inclusive(50_000));
                    let _ = p.on_ack_frequency(seq, thr, delay, rng.gen_range_inclusive(6));
                }
                _ => {
                    let _ = p.on_immediate_ack();
                }
            }
            p.invariants().unwrap();
        }
        let st = p.stats();
        assert!(st.acks_sent > 0 && st.acks_sent <= st.due_immediate + st.due_count + st.due_timer);
    }
}

#[test]
fn reordering_threshold_0_ignores_reordering() {
    let mut p = reorder_only(0);
    let acks = run(&mut p, &arrivals(&[0, 5, 2, 9, 1, 20]), 100);
    assert!(acks.is_empty());
    assert_eq!(p.stats().due_immediate, 0);
}
