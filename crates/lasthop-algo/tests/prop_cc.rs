//! Property tests of the congestion controllers (NewReno, CUBIC with HyStart++, BBR, DCTCP,
//! Prague, and `AnyCc`): generated sequences of sender events (ACKs with and without rate
//! samples, RTT samples and CE-marked bytes (at most the bytes acknowledged), losses, ECN
//! reduction episodes, recovery exits, RTOs, idle restarts, slow-start exits, sends, time)
//! checked for: cwnd at least one SMSS after every event (two for Prague), ssthresh at least
//! one SMSS for the window-based controllers, a positive pacing rate for BBR (and for Prague
//! once it has seen an RTT; never before) and none for the others, a known state name for
//! BBR, α in [0, 1] and Prague's fractional window finite and positive, no panic (arithmetic
//! overflow included, as tests build with debug assertions), and determinism (same events,
//! same outputs).

use lasthop_algo::cc::{
    AckInfo, AnyCc, Bbr, BbrConfig, CcConfig, CongestionControl, Cubic, CubicConfig, Dctcp,
    DctcpConfig, NewReno, NewRenoConfig, Prague, PragueConfig, RateSample,
};
use lasthop_core::{Duration, Instant};
use proptest::prelude::*;

mod common;
use common::cases;

#[derive(Clone, Copy, Debug)]
enum Ev {
    /// An ACK: `acked` new bytes (0: duplicate), whether snd_una advanced, an RTT sample in
    /// µs, a delivery-rate sample (rate in bytes/s, app-limited, newly lost bytes), and the
    /// CE-marked bytes (capped at the bytes acknowledged).
    Ack { acked: u32, cum: bool, rtt_us: Option<u32>, rate: Option<(u64, bool, u32)>, ce: u32 },
    Sent(u16),
    Loss,
    /// The sender starts an ECN reduction episode (outside recovery and other episodes).
    EcnMark,
    RecoveryExit,
    Rto,
    IdleRestart(u32),
    ExitSlowStart,
    Advance(u64),
}

fn ev() -> impl Strategy<Value = Ev> {
    prop_oneof![
        10 => (
            prop_oneof![3 => Just(0u32), 7 => 1u32..200_000],
            any::<bool>(),
            // RTT samples up to 120 s (TCP's largest RTO); BBR's first pacing rate,
            // InitialCwnd·gain/SRTT in bytes/s, truncates to 0 only beyond ~1000 s.
            prop::option::of(prop_oneof![1u32..1_000_000, Just(0u32), Just(120_000_000u32)]),
            prop::option::of((prop_oneof![0u64..2_000_000_000, Just(u64::MAX)], any::<bool>(), 0u32..100_000)),
            prop_oneof![5 => Just(0u32), 3 => 0u32..200_000, 2 => Just(u32::MAX)],
        ).prop_map(|(acked, cum, rtt_us, rate, ce)| Ev::Ack { acked, cum, rtt_us, rate, ce }),
        3 => (0u16..=9000).prop_map(Ev::Sent),
        1 => Just(Ev::Loss),
        1 => Just(Ev::EcnMark),
        1 => Just(Ev::RecoveryExit),
        1 => Just(Ev::Rto),
        1 => (0u32..1_000_000).prop_map(Ev::IdleRestart),
        1 => Just(Ev::ExitSlowStart),
        3 => prop_oneof![9 => 0u64..50_000_000, 1 => 0u64..100_000_000_000].prop_map(Ev::Advance),
    ]
}

fn cubic_cfg() -> impl Strategy<Value = CubicConfig> {
    (0.01f64..4.0, 0.05f64..0.95, any::<bool>(), any::<bool>(), 0u32..8, any::<bool>(), any::<bool>(), 1u32..8, any::<bool>()).prop_map(
        |(c, beta, fast_convergence, reno_friendly, abc_l, hy, paced, num_connections, linux)| {
            let mut cfg = CubicConfig { c, beta, fast_convergence, reno_friendly, abc_l, num_connections, ..CubicConfig::default() };
            cfg.hystart.enabled = hy;
            cfg.hystart.paced = paced;
            if linux {
                cfg.hystart.variant = lasthop_algo::cc::cubic::HyStartVariant::Linux;
            }
            cfg
        },
    )
}

fn bbr_cfg() -> impl Strategy<Value = BbrConfig> {
    (1.0f64..3.0, 1.0f64..3.0, 1u64..20, any::<bool>(), any::<bool>(), 0u32..5, any::<u64>(), 1u32..6, 0u32..8).prop_map(
        |(high_gain, cwnd_gain, btlbw_filter_rounds, extra_acked, refresh, margin, seed, full_bw_rounds, quant)| BbrConfig {
            high_gain,
            cwnd_gain,
            btlbw_filter_rounds,
            extra_acked,
            rtprop_refresh_on_equal: refresh,
            pacing_margin_percent: margin,
            seed,
            full_bw_rounds,
            quantization_segments: quant,
            ..BbrConfig::default()
        },
    )
}

fn dctcp_cfg() -> impl Strategy<Value = DctcpConfig> {
    (0.001f64..=1.0, 0.0f64..=1.0, 0u32..8).prop_map(|(g, initial_alpha, abc_l)| DctcpConfig {
        g,
        initial_alpha,
        reno: NewRenoConfig { abc_l, ..NewRenoConfig::default() },
    })
}

fn prague_cfg() -> impl Strategy<Value = PragueConfig> {
    (0.001f64..=1.0, any::<bool>(), 0u64..200_000_000, 0u32..600, any::<bool>(), prop_oneof![Just(12_500u64), 0u64..10_000_000])
        .prop_map(|(g, rtt_scaling, target_ns, rtt_transition_rounds, halve_on_first_mark, min_rate)| PragueConfig {
            g,
            rtt_scaling,
            rtt_target: Duration(target_ns),
            rtt_transition_rounds,
            halve_on_first_mark,
            min_rate,
        })
}

fn cc_cfg() -> impl Strategy<Value = CcConfig> {
    prop_oneof![
        (0u32..8).prop_map(|abc_l| CcConfig::NewReno(NewRenoConfig { abc_l, ..NewRenoConfig::default() })),
        cubic_cfg().prop_map(CcConfig::Cubic),
        bbr_cfg().prop_map(CcConfig::Bbr),
        dctcp_cfg().prop_map(CcConfig::Dctcp),
        prague_cfg().prop_map(CcConfig::Prague),
    ]
}

/// Drive `cc` with `evs`, acting as a simple sender (in-flight, delivered, RTT estimates);
/// check the invariants after every event and return what the controller said.
/// What the controller said after one event: cwnd, ssthresh, pacing rate, state.
type Said = (u64, u64, Option<u64>, &'static str);

fn drive(cc: &mut AnyCc, mss: u32, evs: &[Ev]) -> Result<Vec<Said>, TestCaseError> {
    let mut now = Instant(1_000);
    let mut in_flight: u64 = 0;
    let mut delivered: u64 = 0;
    let mut min_rtt = Duration::MAX;
    let mut srtt = Duration::ZERO;
    let mut in_recovery = false;
    let mut in_cwr = false;
    let mut trace = Vec::with_capacity(evs.len());
    let is_bbr = matches!(cc, AnyCc::Bbr(_));
    let is_prague = matches!(cc, AnyCc::Prague(_));
    // Prague paces once an ACK has told it a non-zero smoothed RTT.
    let mut prague_knows_rtt = false;
    for e in evs {
        match *e {
            Ev::Ack { acked, cum, rtt_us, rate, ce } => {
                let acked = (acked as u64).min(in_flight);
                let prior = in_flight;
                in_flight -= acked;
                delivered += acked;
                let rtt = rtt_us.map(|u| Duration::from_micros(u as u64));
                if let Some(r) = rtt {
                    min_rtt = min_rtt.min(r);
                    srtt = if srtt.is_zero() { r } else { Duration((srtt.0 / 8).saturating_mul(7).saturating_add(r.0 / 8)) };
                }
                let rate = rate.map(|(delivery_rate, is_app_limited, lost)| RateSample {
                    delivery_rate,
                    interval: srtt,
                    delivered: acked,
                    prior_delivered: delivered.saturating_sub(acked.max(1) * 4),
                    is_app_limited,
                    rtt: rtt.unwrap_or(srtt),
                    tx_in_flight: prior,
                    newly_lost: lost as u64,
                });
                let a = AckInfo {
                    cwnd_limited: true,
                    now,
                    newly_acked: acked,
                    cum_acked: if cum { acked } else { 0 },
                    bytes_in_flight: in_flight,
                    prior_in_flight: prior,
                    rtt,
                    min_rtt: if min_rtt == Duration::MAX { Duration::ZERO } else { min_rtt },
                    srtt,
                    delivered,
                    rate,
                    in_recovery,
                    mss,
                    ce_acked: (ce as u64).min(acked),
                };
                prague_knows_rtt |= !srtt.is_zero();
                cc.on_ack(&a);
                let _ = cc.mark_app_limited();
            }
            Ev::Sent(b) => {
                in_flight += b as u64;
                cc.on_sent(now, b as u32, in_flight);
            }
            Ev::Loss => {
                if !in_recovery {
                    // A loss during an ECN episode turns it into a loss recovery.
                    in_recovery = true;
                    in_cwr = false;
                    cc.on_loss_event(now, in_flight, mss);
                }
            }
            Ev::EcnMark => {
                if !in_recovery && !in_cwr {
                    in_cwr = true;
                    cc.on_ecn_mark(now, in_flight, mss);
                }
            }
            Ev::RecoveryExit => {
                if in_recovery || in_cwr {
                    in_recovery = false;
                    in_cwr = false;
                    cc.on_recovery_exit(now);
                }
            }
            Ev::Rto => {
                in_recovery = false;
                in_cwr = false;
                cc.on_rto(now, in_flight, mss);
                in_flight = 0;
            }
            Ev::IdleRestart(w) => cc.on_idle_restart(now, w as u64),
            Ev::ExitSlowStart => cc.exit_slow_start(now),
            Ev::Advance(dt) => now = Instant(now.0.saturating_add(dt)),
        }
        let (cwnd, ssthresh, pacing, state) = (cc.cwnd(), cc.ssthresh(), cc.pacing_rate(), cc.state());
        prop_assert!(cwnd >= mss as u64, "cwnd {} below one SMSS ({}) after {:?}", cwnd, mss, e);
        match &*cc {
            AnyCc::Dctcp(c) => prop_assert!((0.0..=1.0).contains(&c.alpha()), "DCTCP α {}", c.alpha()),
            AnyCc::Prague(c) => {
                prop_assert!((0.0..=1.0).contains(&c.alpha()), "Prague α {}", c.alpha());
                prop_assert!(c.window().is_finite() && c.window() > 0.0, "Prague window {}", c.window());
                prop_assert!(cwnd >= 2 * mss as u64, "Prague cwnd {} below two SMSS", cwnd);
            }
            _ => {}
        }
        if is_bbr {
            prop_assert!(pacing.is_some_and(|r| r > 0), "BBR pacing rate {:?} after {:?}", pacing, e);
            prop_assert!(["startup", "drain", "probe_bw", "probe_rtt"].contains(&state), "state {}", state);
        } else {
            if is_prague && prague_knows_rtt {
                prop_assert!(pacing.is_some_and(|r| r > 0), "Prague pacing rate {:?} after {:?}", pacing, e);
            } else {
                prop_assert_eq!(pacing, None);
            }
            prop_assert!(ssthresh >= mss as u64, "ssthresh {} below one SMSS after {:?}", ssthresh, e);
            prop_assert_eq!(cc.in_slow_start(), cwnd < ssthresh, "in_slow_start disagrees with cwnd < ssthresh");
        }
        trace.push((cwnd, ssthresh, pacing, state));
    }
    Ok(trace)
}

fn case() -> impl Strategy<Value = (CcConfig, u32, u64, Vec<Ev>)> {
    (cc_cfg(), prop_oneof![Just(1448u32), Just(1200u32), 1u32..9000], 0u64..200_000, prop::collection::vec(ev(), 0..300))
}

proptest! {
    #![proptest_config(cases(256))]

    #[test]
    fn cc_invariants((cfg, mss, iw, evs) in case()) {
        let start = Instant(1_000);
        let a = drive(&mut cfg.build(start, mss, iw), mss, &evs)?;
        let b = drive(&mut cfg.build(start, mss, iw), mss, &evs)?;
        prop_assert_eq!(a, b, "same events, different outputs");
    }

    /// The concrete types behave as the enum does (dispatch adds nothing).
    #[test]
    fn concrete_equals_enum((cfg, mss, iw, evs) in case()) {
        let start = Instant(1_000);
        let via_enum = drive(&mut cfg.build(start, mss, iw), mss, &evs)?;
        let mut direct = match cfg {
            CcConfig::NewReno(c) => AnyCc::NewReno(NewReno::new(c, start, mss, iw)),
            CcConfig::Cubic(c) => AnyCc::Cubic(Cubic::new(c, start, mss, iw)),
            CcConfig::Bbr(c) => AnyCc::Bbr(Bbr::new(c, start, mss, iw)),
            CcConfig::Dctcp(c) => AnyCc::Dctcp(Dctcp::new(c, start, mss, iw)),
            CcConfig::Prague(c) => AnyCc::Prague(Prague::new(c, start, mss, iw)),
        };
        prop_assert_eq!(via_enum, drive(&mut direct, mss, &evs)?);
    }
}
