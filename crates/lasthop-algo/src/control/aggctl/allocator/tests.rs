use super::*;
use alloc::vec::Vec;

const MBPS: f64 = 1e6;
const MS: u64 = 1_000_000;

fn t(ms: u64) -> Instant {
    Instant(ms * MS)
}

fn cfg() -> AggctlConfig {
    AggctlConfig {
        initial_rate: BitRate::from_mbps(100),
        ..AggctlConfig::default()
    }
}

/// A report of `aggregates` frames carrying `packets` packets in total.
fn rep(seq: u32, aggregates: u32, packets: u32, rate_mbps: Option<u64>) -> AggReport {
    AggReport {
        seq,
        aggregates,
        packets,
        mean_rate: rate_mbps.map(BitRate::from_mbps),
        mcs: None,
    }
}

fn join(a: &mut RateAllocator, now: Instant, station: StationId, phy: Option<u64>) {
    a.handle_input(
        now,
        AllocatorInput::Join {
            station,
            phy_rate: phy.map(BitRate::from_mbps),
        },
    );
}

fn report(a: &mut RateAllocator, now: Instant, station: StationId, report: AggReport) {
    a.handle_input(now, AllocatorInput::Report { station, report });
}

fn drain(a: &mut RateAllocator) -> Vec<RateUpdate> {
    core::iter::from_fn(|| a.poll_output()).collect()
}

fn x(a: &RateAllocator, id: StationId) -> f64 {
    a.station(id).unwrap().x
}

#[test]
fn integral_step_moves_by_k_times_error() {
    let mut a = RateAllocator::new(cfg()).unwrap();
    join(&mut a, t(0), 1, None);
    let u = drain(&mut a);
    assert_eq!(
        u,
        [RateUpdate {
            station: 1,
            rate: BitRate::from_mbps(100),
            pacing_interval: Duration(120_000)
        }]
    );
    assert_eq!(a.gain(), 1e6);

    // μ = 80/2 = 40 > N_ε = 32: rate falls by K(40 - 32) = 8 Mb/s.
    report(&mut a, t(500), 1, rep(0, 2, 80, None));
    assert_eq!(x(&a, 1), 92.0 * MBPS);
    let u = drain(&mut a);
    assert_eq!(u.len(), 1);
    assert_eq!(u[0].rate, BitRate::from_mbps(92));
    // L / x = 12000 bit / 92 Mb/s = 130434.78 ns, rounded up
    assert_eq!(u[0].pacing_interval, Duration(130_435));

    // μ = 60/3 = 20 < 32: rises by 12 Mb/s.
    report(&mut a, t(1000), 1, rep(1, 3, 60, None));
    assert_eq!(x(&a, 1), 104.0 * MBPS);
    // μ = 32 exactly: no change, no output
    report(&mut a, t(1500), 1, rep(2, 2, 64, None));
    assert_eq!(x(&a, 1), 104.0 * MBPS);
    assert_eq!(drain(&mut a).len(), 1);
    assert_eq!(a.stats().station_updates, 3);
    a.invariants().unwrap();
}

#[test]
fn gain_is_k0_over_n() {
    let mut a = RateAllocator::new(AggctlConfig {
        allocation: Allocation::PerStation,
        ..cfg()
    })
    .unwrap();
    for id in 1..=4 {
        join(&mut a, t(0), id, Some(400));
    }
    assert_eq!(a.gain(), 0.25e6);
    report(&mut a, t(500), 3, rep(0, 1, 40, Some(400)));
    assert_eq!(x(&a, 3), 100.0 * MBPS - 0.25e6 * 8.0);
    // per-station mode: the others are untouched
    assert_eq!(x(&a, 1), 100.0 * MBPS);
    a.handle_input(t(600), AllocatorInput::Leave { station: 1 });
    a.handle_input(t(600), AllocatorInput::Leave { station: 2 });
    assert_eq!(a.gain(), 0.5e6);
    report(&mut a, t(1000), 4, rep(0, 1, 40, Some(400)));
    assert_eq!(x(&a, 4), 100.0 * MBPS - 0.5e6 * 8.0);
    assert_eq!(gain(1.0, 0), 1.0);
}

#[test]
fn equal_airtime_two_to_one() {
    let mut a = RateAllocator::new(cfg()).unwrap();
    join(&mut a, t(0), 1, None);
    join(&mut a, t(0), 2, None);
    // station 2 (R = 200 Mb/s) reports first: alone in the group, it is i* for now.
    report(&mut a, t(400), 2, rep(0, 4, 80, Some(200)));
    assert_eq!(a.reference_station(), Some(2));
    // station 1 (R = 400 Mb/s) takes over as i*: eq. (1) on x_1 with K = K0/2 ...
    report(&mut a, t(500), 1, rep(0, 2, 80, Some(400)));
    assert_eq!(a.reference_station(), Some(1));
    assert_eq!(x(&a, 1), 100.0 * MBPS - 0.5e6 * (40.0 - 32.0));
    // ... then eq. (2): x_2 = x_1 · 200/400
    assert_eq!(x(&a, 2), x(&a, 1) / 2.0);
    assert_eq!(a.rate(1), Some(BitRate(96_000_000)));
    assert_eq!(a.rate(2), Some(BitRate(48_000_000)));
    // equal airtime: the payload airtime per second x_i / R_i is the same ...
    assert_eq!(x(&a, 1) / 400e6, x(&a, 2) / 200e6);
    // ... and with μ_{N_i} = N_ε R_i / R_{i*} the frames' payload airtimes T_i are equal
    let (t1, t2) = (
        payload_airtime(32.0, 12_000.0, 400e6),
        payload_airtime(16.0, 12_000.0, 200e6),
    );
    assert_eq!(t1, t2);
    assert_eq!(t1, 960e-6);
    // a report from the non-reference station changes nothing until i*'s next update
    report(&mut a, t(900), 2, rep(1, 1, 10, Some(100)));
    assert_eq!(x(&a, 2), 48.0 * MBPS);
    report(&mut a, t(1000), 1, rep(1, 1, 32, Some(400)));
    assert_eq!(x(&a, 2), x(&a, 1) / 4.0);
    assert_eq!(a.stats().reference_updates, 3);
    a.invariants().unwrap();
}

#[test]
fn join_and_leave_renormalise() {
    let mut a = RateAllocator::new(cfg()).unwrap();
    join(&mut a, t(0), 1, Some(400));
    join(&mut a, t(0), 2, Some(200));
    // both fresh with known rates: 2 joined straight at its eq. (2) share of x_1
    assert_eq!(x(&a, 2), 50.0 * MBPS);
    report(&mut a, t(500), 1, rep(0, 1, 36, Some(400)));
    assert_eq!(x(&a, 1), 98.0 * MBPS);
    assert_eq!(x(&a, 2), 49.0 * MBPS);
    drain(&mut a);
    // a faster station joins: it becomes i*, at the rate that keeps x_i / R_i common
    join(&mut a, t(600), 3, Some(800));
    assert_eq!(a.reference_station(), Some(3));
    assert_eq!(x(&a, 3), 196.0 * MBPS);
    assert_eq!(a.gain(), 1e6 / 3.0);
    let u = drain(&mut a);
    assert_eq!(u.len(), 1);
    assert_eq!((u[0].station, u[0].rate), (3, BitRate::from_mbps(196)));
    // station 2's MCS doubles; the leave of i* re-applies eq. (2) from the new i*
    report(&mut a, t(700), 2, rep(1, 1, 20, Some(400)));
    a.handle_input(t(800), AllocatorInput::Leave { station: 3 });
    assert_eq!(a.reference_station(), Some(1));
    assert_eq!(x(&a, 1), 98.0 * MBPS);
    assert_eq!(x(&a, 2), 98.0 * MBPS);
    assert_eq!(a.gain(), 0.5e6);
    // unknown station reports are counted and ignored; a second join is a no-op
    report(&mut a, t(900), 9, rep(0, 1, 1, None));
    join(&mut a, t(900), 1, Some(1));
    assert_eq!(a.stats().reports_unknown, 1);
    assert_eq!(a.len(), 2);
    a.invariants().unwrap();
}

#[test]
fn watchdog_holds_then_decays() {
    let mut a = RateAllocator::new(cfg()).unwrap();
    join(&mut a, t(0), 1, None);
    drain(&mut a);
    report(&mut a, t(500), 1, rep(0, 1, 32, None));
    assert_eq!(a.poll_timeout(), Some(t(1500)));
    a.handle_timeout(t(1400)); // early: no-op
    assert_eq!(a.station(1).unwrap().feedback, Feedback::Fresh);
    a.handle_timeout(t(1500));
    assert_eq!(a.station(1).unwrap().feedback, Feedback::Held);
    assert!(drain(&mut a).is_empty(), "held: rate unchanged");
    assert_eq!(a.poll_timeout(), Some(t(2500)));
    a.handle_timeout(t(2499));
    assert!(drain(&mut a).is_empty());
    a.handle_timeout(t(2500));
    assert_eq!(a.station(1).unwrap().feedback, Feedback::Decaying);
    assert_eq!(drain(&mut a)[0].rate, BitRate::from_mbps(50));
    assert_eq!(a.poll_timeout(), Some(t(3000)));
    // a late timer catches up on every step that fell due (3000 and 3500)
    a.handle_timeout(t(3600));
    assert_eq!(a.rate(1), Some(BitRate(12_500_000)));
    assert_eq!(a.stats().decay_steps, 3);
    // a report revives it: Algorithm 1 from the decayed rate
    report(&mut a, t(3700), 1, rep(1, 1, 22, None));
    assert_eq!(x(&a, 1), 22.5 * MBPS);
    assert_eq!(a.station(1).unwrap().feedback, Feedback::Fresh);
    // decay stops at the floor and so does the timer
    a.handle_timeout(t(100_000));
    assert_eq!(a.rate(1), Some(BitRate::from_mbps(1)));
    assert_eq!(a.poll_timeout(), None);
    a.invariants().unwrap();
}

#[test]
fn watchdog_catches_up_before_a_late_report() {
    // The host never drives the timer: the report at 2.6 s still sees the decay step due
    // at 2.5 s, exactly as if the timer had fired.
    let mut a = RateAllocator::new(cfg()).unwrap();
    join(&mut a, t(0), 1, None);
    report(&mut a, t(500), 1, rep(0, 1, 32, None));
    report(&mut a, t(2600), 1, rep(1, 1, 32, None));
    assert_eq!(x(&a, 1), 50.0 * MBPS);
}

#[test]
fn held_station_leaves_the_group() {
    let mut a = RateAllocator::new(cfg()).unwrap();
    join(&mut a, t(0), 1, Some(400));
    join(&mut a, t(0), 2, Some(200));
    report(&mut a, t(500), 1, rep(0, 1, 32, Some(400)));
    report(&mut a, t(500), 2, rep(0, 1, 16, Some(200)));
    // station 2 falls silent; 1 keeps reporting and is pushed down
    for k in 1..=3u32 {
        report(&mut a, t(500 + 500 * k as u64), 1, rep(k, 1, 42, Some(400)));
    }
    // at 1.5 s station 2 was held at x_1 / 2 as of the 1.0 s update (95 Mb/s / 2)
    assert_eq!(a.station(2).unwrap().feedback, Feedback::Held);
    assert_eq!(x(&a, 2), 47.5 * MBPS);
    assert_eq!(x(&a, 1), 85.0 * MBPS);
    // with 2 silent, station 1 stays i*
    assert_eq!(a.reference_station(), Some(1));
    // when the faster station falls silent, the slower becomes i*
    let mut b = RateAllocator::new(cfg()).unwrap();
    join(&mut b, t(0), 1, Some(400));
    join(&mut b, t(0), 2, Some(200));
    report(&mut b, t(1200), 2, rep(0, 1, 20, Some(200)));
    assert_eq!(b.reference_station(), Some(2));
    assert_eq!(x(&b, 2), 50.0 * MBPS + 0.5e6 * 12.0);
    assert_eq!(x(&b, 1), 100.0 * MBPS, "held station keeps its rate");
}

#[test]
fn rates_stay_within_floor_and_cap() {
    let c = AggctlConfig {
        max_rate: BitRate::from_mbps(300),
        k0: 1e8,
        ..cfg()
    };
    let mut a = RateAllocator::new(c).unwrap();
    join(&mut a, t(0), 1, Some(400));
    join(&mut a, t(0), 2, Some(100));
    for k in 0..10u32 {
        report(&mut a, t(500 * (k as u64 + 1)), 2, rep(k, 1, 8, Some(100)));
        report(
            &mut a,
            t(500 * (k as u64 + 1)),
            1,
            rep(k, 10, 10, Some(400)),
        );
        assert!(a.rate(1).unwrap() <= BitRate::from_mbps(300));
    }
    assert_eq!(a.rate(1), Some(BitRate::from_mbps(300)));
    assert_eq!(a.rate(2), Some(BitRate::from_mbps(75)));
    for k in 10..20u32 {
        report(&mut a, t(500 * (k as u64 + 1)), 2, rep(k, 1, 8, Some(100)));
        report(&mut a, t(500 * (k as u64 + 1)), 1, rep(k, 1, 64, Some(400)));
        assert!(a.station(1).unwrap().x > 0.0);
    }
    assert_eq!(a.rate(1), Some(BitRate::from_mbps(1)));
    assert_eq!(
        a.rate(2),
        Some(BitRate::from_mbps(1)),
        "eq. (2) share clamped to the floor"
    );
    a.invariants().unwrap();
}

#[test]
fn empty_and_duplicate_reports_are_ignored() {
    let mut a = RateAllocator::new(cfg()).unwrap();
    join(&mut a, t(0), 1, None);
    report(&mut a, t(500), 1, rep(0, 0, 0, None));
    report(&mut a, t(600), 1, rep(1, 1, 40, None));
    report(&mut a, t(700), 1, rep(1, 1, 40, None));
    assert_eq!(x(&a, 1), 92.0 * MBPS);
    let s = a.stats();
    assert_eq!(
        (
            s.reports,
            s.reports_empty,
            s.reports_duplicate,
            s.reports_applied
        ),
        (3, 1, 1, 1)
    );
    // the empty report did not feed the watchdog: held at 0.6 + 1 s
    assert_eq!(a.poll_timeout(), Some(t(1600)));
}

#[test]
fn validation_names_field_and_range() {
    let d = AggctlConfig::default();
    assert!(d.validate().is_ok());
    let e = AggctlConfig {
        target_aggregation: 65,
        ..d
    }
    .validate()
    .unwrap_err();
    assert_eq!(e.field, "target_aggregation");
    assert_eq!(
        alloc::format!("{e}"),
        "target_aggregation = 65: allowed 1 ..= block_ack_window (64)"
    );
    assert!(AggctlConfig {
        target_aggregation: 200,
        block_ack_window: 256,
        ..d
    }
    .validate()
    .is_ok());
    let bad = |c: AggctlConfig| c.validate().unwrap_err().field;
    assert_eq!(
        bad(AggctlConfig {
            target_aggregation: 0,
            ..d
        }),
        "target_aggregation"
    );
    assert_eq!(
        bad(AggctlConfig {
            block_ack_window: 0,
            ..d
        }),
        "block_ack_window"
    );
    assert_eq!(
        bad(AggctlConfig {
            interval: Duration::ZERO,
            ..d
        }),
        "interval"
    );
    assert_eq!(bad(AggctlConfig { k0: f64::NAN, ..d }), "k0");
    assert_eq!(bad(AggctlConfig { k0: -1.0, ..d }), "k0");
    assert_eq!(
        bad(AggctlConfig {
            packet_size: Bytes(0),
            ..d
        }),
        "packet_size"
    );
    assert_eq!(
        bad(AggctlConfig {
            max_rate: BitRate(0),
            ..d
        }),
        "max_rate"
    );
    assert_eq!(
        bad(AggctlConfig {
            min_rate: BitRate::from_mbps(20_000),
            ..d
        }),
        "min_rate"
    );
    assert_eq!(
        bad(AggctlConfig {
            initial_rate: BitRate(5),
            ..d
        }),
        "initial_rate"
    );
    assert_eq!(
        bad(AggctlConfig {
            hold_time: Duration::from_millis(100),
            ..d
        }),
        "hold_time"
    );
    assert_eq!(
        bad(AggctlConfig {
            decay_after: Duration::from_millis(900),
            ..d
        }),
        "decay_after"
    );
    assert_eq!(
        bad(AggctlConfig {
            decay_factor: 1.0,
            ..d
        }),
        "decay_factor"
    );
    assert!(RateAllocator::new(AggctlConfig {
        target_aggregation: 65,
        ..d
    })
    .is_err());
}

/// Random input sequences keep every invariant, and rates within bounds.
#[test]
fn random_inputs_keep_invariants() {
    let mut rng = lasthop_core::Rng::from_seed(11);
    for allocation in [Allocation::EqualAirtime, Allocation::PerStation] {
        let mut a = RateAllocator::new(AggctlConfig {
            allocation,
            ..cfg()
        })
        .unwrap();
        let mut now = 0u64;
        for seq in 0..5000u32 {
            now += rng.gen_range_inclusive(400 * MS);
            let id = rng.gen_range_inclusive(5) as StationId;
            let input = match rng.gen_range_inclusive(9) {
                0 => AllocatorInput::Join {
                    station: id,
                    phy_rate: Some(BitRate::from_mbps(1 + rng.gen_range_inclusive(800))),
                },
                1 => AllocatorInput::Leave { station: id },
                _ => {
                    let aggregates = rng.gen_range_inclusive(50) as u32;
                    let packets = aggregates * (1 + rng.gen_range_inclusive(63) as u32);
                    let rate = (rng.gen_range_inclusive(2) > 0)
                        .then(|| BitRate::from_mbps(1 + rng.gen_range_inclusive(1700)));
                    AllocatorInput::Report {
                        station: id,
                        report: AggReport {
                            seq,
                            aggregates,
                            packets,
                            mean_rate: rate,
                            mcs: None,
                        },
                    }
                }
            };
            if rng.gen_range_inclusive(3) == 0 {
                a.handle_timeout(Instant(now));
            }
            a.handle_input(Instant(now), input);
            a.invariants().unwrap();
            for u in drain(&mut a) {
                assert!(u.rate >= a.params().min_rate && u.rate <= a.params().max_rate);
            }
        }
    }
}
