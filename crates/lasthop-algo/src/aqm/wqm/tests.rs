//! Scripted tests of the WQM controller: "at this measurement instant, with these samples, the
//! limit becomes ...", the analysis equations against hand arithmetic, and a property test.

use super::*;
use alloc::vec::Vec;
use lasthop_core::Rng;

const MS: u64 = 1_000_000;

/// A minimal host: holds the clock, wakes the controller at its timeouts, collects outputs.
struct Host {
    w: Wqm,
    now: Instant,
}

impl Host {
    fn new(cfg: WqmConfig) -> Self {
        Host {
            w: Wqm::new(cfg, Instant::ZERO).unwrap(),
            now: Instant::ZERO,
        }
    }
    fn input(&mut self, i: WqmInput) {
        self.w.handle_input(self.now, i);
    }
    fn drain(&mut self) -> Vec<u32> {
        let mut out = Vec::new();
        while let Some(WqmOutput::SetLimit(b)) = self.w.poll_output() {
            out.push(b);
        }
        out
    }
    /// Advance to the next measurement instant, fire it, and return the outputs.
    fn tick(&mut self) -> Vec<u32> {
        self.now = self.w.poll_timeout().unwrap();
        self.w.handle_timeout(self.now);
        self.w.invariants().unwrap();
        self.drain()
    }
    /// One interval with this backlog (bytes) at the current rate.
    fn interval(&mut self, backlog: u64) -> Vec<u32> {
        self.input(WqmInput::BacklogBytes(Bytes(backlog)));
        self.tick()
    }
    fn limit(&self) -> u32 {
        self.w.limit().unwrap()
    }
}

/// 120 Mb/s, 4-subframe A-MPDUs: B_initial = 10 packets, B_min = 4, B_max = 94.
fn started(cfg: WqmConfig) -> Host {
    let mut h = Host::new(cfg);
    h.input(WqmInput::TxRate(BitRate::from_mbps(120)));
    h.input(WqmInput::AggregateLength(4));
    assert_eq!(h.tick(), [10]);
    assert_eq!((h.w.b_min(), h.w.b_max()), (4, 94));
    h
}

/// At 120 Mb/s with F = 1: 60 000 octets drain in 4 ms (> 2.5 ms), 0 octets in 0 ms.
const HIGH: u64 = 60_000;
const LOW: u64 = 0;

#[test]
fn equations_6_7_at_the_top_rate_match_hand_arithmetic() {
    // Defaults (802.11n, 5 GHz): T_BO = (16 − 1) · 9 µs / 2 = 67.5 µs, and the per-exchange
    // overhead T_BO + T_DIFS + 2·T_PHY + T_SIFS + T_BACK = 67.5 + 34 + 96 + 16 + 48 = 261.5 µs.
    let p = ArttParams::default();
    assert_eq!(t_bo(&p), Duration(67_500));
    // R = 600 Mb/s, K = 64, L_DATA = 1500:
    //   T_MAC = 8·34 / 600e6 = 453.3 ns → 454 ns;  T_DATA = 8·1500 / 600e6 = 20 000 ns
    //   (6) = 261 500 + 64 · (454 + 20 000) = 261 500 + 1 309 056 = 1 570 556 ns
    //   T_TCP-ACK = 8·40 / 600e6 = 533.3 ns → 534 ns
    //   (7) = 261 500 + 64/2 · (454 + 534) = 261 500 + 31 616 = 293 116 ns
    //   ARTT = 1 863 672 ns — the paper's "about 1.9 ms"
    //   B_max = ⌈600e6 · 1.863672e-3 / (8 · 1500)⌉ = ⌈93.18⌉ = 94 — the paper's "around 95"
    let r = BitRate::from_mbps(600);
    let l = Bytes(1500);
    assert_eq!(t_d_data(&p, r, 64, l), Duration(1_570_556));
    assert_eq!(t_d_ack(&p, r, 64), Duration(293_116));
    assert_eq!(artt(&p, r, 64, l), Duration(1_863_672));
    assert_eq!(b_max(&p, r, 64, l), 94);
    assert_eq!(WqmConfig::default().b_max_packets(), 94);
    // Within 2 % of the published 1.9 ms and 95 packets.
    assert!((1_862_000..=1_938_000).contains(&artt(&p, r, 64, l).as_nanos()));
    // A configured B_max overrides the derivation.
    assert_eq!(
        WqmConfig {
            b_max: Some(150),
            ..WqmConfig::default()
        }
        .b_max_packets(),
        150
    );
}

#[test]
fn limit_is_the_artt_of_one_frame_at_the_lowest_rate() {
    // R = 6.5 Mb/s, K = 1 (no aggregation at 6.5 Mb/s):
    //   T_MAC = 8·34 / 6.5e6 = 41 846.2 → 41 847 ns;  T_DATA = 8·1500 / 6.5e6 → 1 846 154 ns
    //   (6) = 261 500 + 41 847 + 1 846 154 = 2 149 501 ns
    //   T_TCP-ACK = 8·40 / 6.5e6 → 49 231 ns;  K/2 · (41 847 + 49 231) = ⌈91 078 / 2⌉ = 45 539
    //   (7) = 261 500 + 45 539 = 307 039 ns
    //   ARTT = 2 456 540 ns — the paper's "limit must be at least equal to 2.5 ms"
    let p = ArttParams::default();
    let r = BitRate(6_500_000);
    assert_eq!(t_d_data(&p, r, 1, Bytes(1500)), Duration(2_149_501));
    assert_eq!(t_d_ack(&p, r, 1), Duration(307_039));
    assert_eq!(artt(&p, r, 1, Bytes(1500)), Duration(2_456_540));
    assert_eq!(WqmConfig::default().limit, Duration::from_micros(2_500));
}

#[test]
fn initial_size_is_rate_times_artt() {
    // R = 130 Mb/s, K = 16:
    //   T_MAC → 2 093 ns, T_DATA = 12 000 / 130e6 → 92 308 ns, T_TCP-ACK → 2 462 ns
    //   (6) = 261 500 + 16 · 94 401 = 1 771 916;  (7) = 261 500 + 16 · 4 555 / 2 = 297 940
    //   ARTT = 2 069 856 ns;  R · ARTT = 269 081 bits = 22.4 packets → 23
    let p = ArttParams::default();
    let r = BitRate::from_mbps(130);
    assert_eq!(artt(&p, r, 16, Bytes(1500)), Duration(2_069_856));
    assert_eq!(b_initial(&p, r, 16, Bytes(1500)), 23);

    let mut h = Host::new(WqmConfig::default());
    // No rate yet: the instant is skipped and nothing is emitted.
    assert_eq!(h.tick(), []);
    assert_eq!((h.w.limit(), h.w.stats().skipped), (None, 1));
    h.input(WqmInput::TxRate(r));
    h.input(WqmInput::AggregateLength(16));
    assert_eq!(h.tick(), [23]);
    assert_eq!((h.w.b_min(), h.w.stats().intervals), (16, 0));

    // 6.5 Mb/s without aggregation: R · ARTT = 6.5e6 · 2.45654 ms = 1.33 packets → 2.
    let mut h = Host::new(WqmConfig::default());
    h.input(WqmInput::TxRate(BitRate(6_500_000)));
    assert_eq!(h.tick(), [2]);
    assert_eq!(h.w.b_min(), 1);
}

#[test]
fn alarms_need_two_consecutive_intervals() {
    let mut h = started(WqmConfig::default());
    // High then low: the second interval only switches the alarm.
    assert_eq!(h.interval(HIGH), []);
    assert!(h.w.vars().alarm_high);
    assert_eq!(h.interval(LOW), []);
    assert!(h.w.vars().alarm_low && !h.w.vars().alarm_high);
    assert_eq!(h.interval(HIGH), []);
    assert_eq!(h.limit(), 10);
    // Two high in a row: halve.
    assert_eq!(h.interval(HIGH), [5]);
    assert_eq!(h.w.vars().t_drain, Some(Duration(4 * MS)));
    // The alarm stays on, so a third high interval halves again, but not below B_min = 4.
    assert_eq!(h.interval(HIGH), [4]);
    // At B_min a high interval matches neither branch: nothing changes, alarms included.
    assert_eq!(h.interval(HIGH), []);
    assert!(h.w.vars().alarm_high);
    // Two low: +1.
    assert_eq!(h.interval(LOW), []);
    assert_eq!(h.interval(LOW), [5]);
    assert_eq!(h.interval(LOW), [6]);
    let s = h.w.stats();
    assert_eq!((s.intervals, s.decreases, s.increases), (9, 2, 2));
}

#[test]
fn drain_time_at_the_limit_changes_nothing() {
    let mut h = started(WqmConfig::default());
    // 25 packets · 1500 octets at 120 Mb/s = 2.5 ms exactly: neither above nor below limit.
    h.input(WqmInput::BacklogPackets(25));
    for _ in 0..3 {
        assert_eq!(h.tick(), []);
    }
    assert_eq!(h.w.vars().t_drain, Some(Duration::from_micros(2_500)));
    assert!(!h.w.vars().alarm_high && !h.w.vars().alarm_low);
    // One packet more is above it.
    h.input(WqmInput::BacklogPackets(26));
    assert_eq!(h.tick(), []);
    assert_eq!(h.tick(), [5]);
}

#[test]
fn drain_time_divides_by_the_free_channel_fraction() {
    let r = BitRate::from_mbps(120);
    let half = FreeFraction::from_channel_times(
        Duration::from_millis(100),
        Duration::from_millis(60),
        Duration::from_millis(10),
    )
    .unwrap();
    // Others hold the channel 60 − 10 = 50 ms of 100: F = 0.5.
    assert_eq!(half.ppm(), 500_000);
    // 30 000 octets at 120 Mb/s: 2 ms with F = 1, 4 ms with F = 0.5.
    assert_eq!(
        t_drain(Bytes(30_000), r, FreeFraction::ONE),
        Duration(2 * MS)
    );
    assert_eq!(t_drain(Bytes(30_000), r, half), Duration(4 * MS));
    assert_eq!(
        t_drain(
            Bytes(30_000),
            r,
            FreeFraction {
                free: Duration(0),
                total: Duration(1)
            }
        ),
        Duration::MAX
    );
    assert_eq!(t_drain(Bytes(0), r, half), Duration::ZERO);

    // Same backlog and rate: F = 1 grows the buffer, F = 0.5 shrinks it.
    let mut free = started(WqmConfig::default());
    let mut shared = started(WqmConfig::default());
    let busy = ChannelTimes {
        active: Duration::from_millis(100),
        busy: Duration::from_millis(60),
        tx: Duration::from_millis(10),
    };
    shared.input(WqmInput::ChannelInterval(busy));
    for h in [&mut free, &mut shared] {
        h.interval(30_000);
        h.interval(30_000);
    }
    assert_eq!(free.w.vars().t_drain, Some(Duration(2 * MS)));
    assert_eq!(shared.w.vars().t_drain, Some(Duration(4 * MS)));
    assert_eq!((free.limit(), shared.limit()), (11, 5));
}

#[test]
fn survey_counters_are_differenced_between_instants() {
    let mut h = started(WqmConfig::default());
    // Cumulative counters, starting from arbitrary values.
    let mut c = ChannelTimes {
        active: Duration::from_secs(50),
        busy: Duration::from_secs(20),
        tx: Duration::from_secs(5),
    };
    h.input(WqmInput::ChannelSurvey(c));
    // First snapshot: only a baseline, F stays 1, 30 000 octets drain in 2 ms (low).
    assert_eq!(h.interval(30_000), []);
    assert_eq!(h.w.vars().f.ppm(), 1_000_000);
    // Each interval: 100 ms active, 60 ms busy of which 10 ms our own: F = 0.5 → 4 ms (high).
    let step = |c: &mut ChannelTimes| {
        c.active += Duration::from_millis(100);
        c.busy += Duration::from_millis(60);
        c.tx += Duration::from_millis(10);
    };
    step(&mut c);
    h.input(WqmInput::ChannelSurvey(c));
    assert_eq!(h.interval(30_000), []);
    assert_eq!(h.w.vars().f.ppm(), 500_000);
    step(&mut c);
    h.input(WqmInput::ChannelSurvey(c));
    assert_eq!(h.interval(30_000), [5]);
    // A counter reset: new baseline, F kept at 0.5.
    let mut c = ChannelTimes {
        active: Duration::from_millis(100),
        busy: Duration::from_millis(0),
        tx: Duration::ZERO,
    };
    h.input(WqmInput::ChannelSurvey(c));
    h.tick();
    assert_eq!(h.w.vars().f.ppm(), 500_000);
    // Then an idle channel: F = 1.
    c.active += Duration::from_millis(100);
    h.input(WqmInput::ChannelSurvey(c));
    h.tick();
    assert_eq!(h.w.vars().f.ppm(), 1_000_000);
}

#[test]
fn each_variant_steps_as_fig_5_names_it() {
    // From B = 10 (B_min 4, B_max 94): two low intervals, then two high ones.
    let cases = [
        (WqmVariant::Aimd, 11, 5),
        (WqmVariant::Aiad, 11, 10),
        (WqmVariant::Miad, 20, 19),
        (WqmVariant::Mimd, 20, 10),
    ];
    for (variant, up, down) in cases {
        let mut h = started(WqmConfig {
            variant,
            ..WqmConfig::default()
        });
        h.interval(LOW);
        assert_eq!(h.interval(LOW), [up], "{variant:?} increase");
        h.interval(HIGH);
        assert_eq!(h.interval(HIGH), [down], "{variant:?} decrease");
    }
    // Multiplicative increase is clamped at B_max, additive decrease at B_min.
    let mut h = started(WqmConfig {
        variant: WqmVariant::Miad,
        ..WqmConfig::default()
    });
    h.interval(LOW);
    let ups: Vec<u32> = (0..4).flat_map(|_| h.interval(LOW)).collect();
    assert_eq!(ups, [20, 40, 80, 94]);
    assert_eq!(h.interval(LOW), []);
    let mut h = started(WqmConfig {
        variant: WqmVariant::Aiad,
        ..WqmConfig::default()
    });
    h.interval(HIGH);
    let downs: Vec<u32> = (0..8).flat_map(|_| h.interval(HIGH)).collect();
    assert_eq!(downs, [9, 8, 7, 6, 5, 4]);
}

#[test]
fn b_min_follows_the_aggregate_length() {
    let mut h = started(WqmConfig::default());
    // Longer aggregates in use: B is raised to the new B_min at the next instant.
    h.input(WqmInput::AggregateLength(32));
    h.input(WqmInput::BacklogBytes(Bytes(HIGH)));
    assert_eq!(h.tick(), [32]);
    assert_eq!(h.w.stats().raised_to_b_min, 1);
    // Halving stops at B_min = 32 (B was 32 already, so it cannot go lower).
    assert_eq!(h.interval(HIGH), []);
    assert_eq!(h.interval(HIGH), []);
    assert_eq!(h.limit(), 32);
    // A length beyond B_max is clamped to B_max.
    h.input(WqmInput::AggregateLength(500));
    assert_eq!(h.tick(), [94]);
    assert_eq!(h.w.b_min(), 94);
    // Aggregation off: B_min = 1, and halving can go all the way down.
    h.input(WqmInput::AggregateLength(1));
    let downs: Vec<u32> = (0..10).flat_map(|_| h.interval(HIGH)).collect();
    assert_eq!(downs, [47, 23, 11, 5, 2, 1]);
}

#[test]
fn outputs_only_on_change_and_early_timeouts_are_noops() {
    let mut h = Host::new(WqmConfig::default());
    h.input(WqmInput::TxRate(BitRate::from_mbps(120)));
    h.input(WqmInput::AggregateLength(4));
    assert_eq!(h.w.poll_timeout(), Some(Instant(100 * MS)));
    // Early and repeated wake-ups do nothing.
    for t in [0, 1, 50 * MS, 100 * MS - 1] {
        h.w.handle_timeout(Instant(t));
        assert_eq!(h.w.poll_output(), None);
        assert_eq!(h.w.poll_timeout(), Some(Instant(100 * MS)));
        assert_eq!(h.w.limit(), None);
    }
    h.w.handle_timeout(Instant(100 * MS));
    assert_eq!(h.w.poll_output(), Some(WqmOutput::SetLimit(10)));
    assert_eq!(h.w.poll_output(), None);
    h.now = Instant(100 * MS);
    let before = *h.w.vars();
    h.w.handle_timeout(Instant(100 * MS));
    h.w.handle_timeout(Instant(150 * MS));
    assert_eq!(*h.w.vars(), before);
    // An interval that only sets an alarm emits nothing.
    assert_eq!(h.interval(HIGH), []);
    assert_eq!(h.w.stats().outputs, 1);
    assert_eq!(h.interval(HIGH), [5]);
    // A late wake-up evaluates once and skips the missed instants, staying on the grid.
    let due = h.w.poll_timeout().unwrap();
    assert_eq!(due, Instant(400 * MS));
    h.input(WqmInput::BacklogBytes(Bytes(LOW)));
    h.w.handle_timeout(Instant(720 * MS));
    assert_eq!(h.w.stats().intervals, 3);
    assert_eq!(h.w.poll_timeout(), Some(Instant(800 * MS)));
    assert_eq!(h.w.poll_output(), None);
    h.w.handle_timeout(Instant(800 * MS));
    assert_eq!(h.w.poll_output(), Some(WqmOutput::SetLimit(6)));
    // Limit changes and returns between polls: no output.
    let mut h = started(WqmConfig::default());
    h.interval(HIGH);
    h.input(WqmInput::BacklogBytes(Bytes(HIGH)));
    h.now = h.w.poll_timeout().unwrap();
    h.w.handle_timeout(h.now); // 10 → 5, not polled
    h.input(WqmInput::AggregateLength(10));
    h.now = h.w.poll_timeout().unwrap();
    h.w.handle_timeout(h.now); // raised to B_min = 10
    assert_eq!(h.w.limit(), Some(10));
    assert_eq!(h.w.poll_output(), None);
}

#[test]
fn validate_names_the_field() {
    let d = WqmConfig::default();
    assert_eq!(d.validate(), Ok(()));
    let bad = [
        (
            WqmConfig {
                interval: Duration::ZERO,
                ..d
            },
            "wqm.interval",
        ),
        (
            WqmConfig {
                limit: Duration::ZERO,
                ..d
            },
            "wqm.limit",
        ),
        (
            WqmConfig {
                packet_size: Bytes(0),
                ..d
            },
            "wqm.packet_size",
        ),
        (WqmConfig { b_min: 0, ..d }, "wqm.b_min"),
        (WqmConfig { b_min: 95, ..d }, "wqm.b_min"),
        (
            WqmConfig {
                b_max: Some(0),
                ..d
            },
            "wqm.b_max",
        ),
        (
            WqmConfig {
                top_rate: BitRate(0),
                ..d
            },
            "wqm.top_rate",
        ),
        (WqmConfig { k_max: 0, ..d }, "wqm.k_max"),
        (
            WqmConfig {
                artt: ArttParams {
                    cw_min: 0,
                    ..d.artt
                },
                ..d
            },
            "wqm.artt.cw_min",
        ),
    ];
    for (cfg, field) in bad {
        let e = cfg.validate().unwrap_err();
        assert!(e.starts_with(field), "{e} should name {field}");
        assert!(Wqm::new(cfg, Instant::ZERO).is_err());
    }
    // With B_max given, the derivation parameters are not needed.
    assert_eq!(
        WqmConfig {
            b_max: Some(20),
            top_rate: BitRate(0),
            k_max: 0,
            ..d
        }
        .validate(),
        Ok(())
    );
}

/// Random inputs, random wake-ups: B stays in [B_min, B_max], every output differs from the
/// previous one, and the last output is the current limit.
#[test]
fn random_inputs_keep_the_bounds() {
    let mut rng = Rng::from_seed(7);
    let variants = [
        WqmVariant::Aimd,
        WqmVariant::Aiad,
        WqmVariant::Miad,
        WqmVariant::Mimd,
    ];
    let mut acted = 0;
    for case in 0..60 {
        let b_max = if case % 3 == 0 {
            None
        } else {
            Some(1 + rng.gen_range_inclusive(300) as u32)
        };
        let cfg = WqmConfig {
            variant: variants[case % 4],
            b_max,
            interval: Duration::from_millis(1 + rng.gen_range_inclusive(200)),
            ..WqmConfig::default()
        };
        let cfg = WqmConfig {
            b_min: 1 + rng.gen_range_inclusive(cfg.b_max_packets() as u64 - 1) as u32,
            ..cfg
        };
        let mut w = Wqm::new(cfg, Instant::ZERO).unwrap();
        let mut now = Instant::ZERO;
        let mut survey = ChannelTimes::default();
        let mut last: Option<u32> = None;
        for _ in 0..3000 {
            match rng.gen_range_inclusive(7) {
                0 => {
                    let r = if rng.bernoulli(0.05) {
                        0
                    } else {
                        6_500_000 + rng.gen_range_inclusive(600_000_000)
                    };
                    w.handle_input(now, WqmInput::TxRate(BitRate(r)));
                }
                1 => w.handle_input(
                    now,
                    WqmInput::BacklogBytes(Bytes(rng.gen_range_inclusive(2_000_000))),
                ),
                2 => w.handle_input(
                    now,
                    WqmInput::BacklogPackets(rng.gen_range_inclusive(1500) as u32),
                ),
                3 => w.handle_input(
                    now,
                    WqmInput::AggregateLength(rng.gen_range_inclusive(300) as u32),
                ),
                4 => {
                    let active = Duration(rng.gen_range_inclusive(200 * MS));
                    let busy = Duration(rng.gen_range_inclusive(active.as_nanos()));
                    let tx = Duration(rng.gen_range_inclusive(busy.as_nanos()));
                    let times = ChannelTimes { active, busy, tx };
                    if rng.bernoulli(0.5) {
                        w.handle_input(now, WqmInput::ChannelInterval(times));
                    } else {
                        if rng.bernoulli(0.02) {
                            survey = ChannelTimes::default(); // counter reset
                        }
                        survey.active += times.active;
                        survey.busy += times.busy;
                        survey.tx += times.tx;
                        w.handle_input(now, WqmInput::ChannelSurvey(survey));
                    }
                }
                _ => {
                    // Wake at, before or after the due instant.
                    let due = w.poll_timeout().unwrap();
                    let t = match rng.gen_range_inclusive(3) {
                        0 => Instant(now.0 + rng.gen_range_inclusive(due.0 - now.0)),
                        1 => due + Duration(rng.gen_range_inclusive(500 * MS)),
                        _ => due,
                    };
                    now = now.max(t);
                    w.handle_timeout(now);
                    assert!(w.poll_timeout().unwrap() > now);
                }
            }
            w.invariants().unwrap();
            if let Some(b) = w.limit() {
                assert!(w.b_min() <= b && b <= w.b_max());
                assert!(b <= cfg.b_max_packets());
            }
            while let Some(WqmOutput::SetLimit(b)) = w.poll_output() {
                assert_ne!(Some(b), last, "output without a change");
                last = Some(b);
            }
            assert_eq!(last, w.limit());
        }
        let s = w.stats();
        acted += (s.increases > 0 && s.decreases > 0) as u32;
        assert!(s.increases + s.decreases <= s.intervals);
    }
    // The sequences exercise both directions in most cases.
    assert!(acted >= 40, "only {acted} cases moved both ways");
}
