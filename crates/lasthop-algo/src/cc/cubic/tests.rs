use super::super::RateSample;
use super::*;
use alloc::vec::Vec;

const MSS: u32 = 1000;
const M: u64 = MSS as u64;

fn no_hystart() -> CubicConfig {
    CubicConfig {
        hystart: HyStartConfig {
            enabled: false,
            ..HyStartConfig::default()
        },
        ..CubicConfig::default()
    }
}

/// Put a CUBIC in congestion avoidance right after a loss at `w_max` bytes.
fn after_loss(cfg: CubicConfig, w_max: u64, now: Instant) -> Cubic {
    let mut cc = Cubic::new(cfg, Instant::ZERO, MSS, w_max);
    cc.on_loss_event(now, w_max, MSS);
    cc.on_recovery_exit(now);
    cc
}

/// Smooth ACK clocking at constant RTT: each round, cwnd/MSS ACKs evenly spread over `rtt`.
/// Returns (time, cwnd) after every ACK.
fn clock(
    cc: &mut Cubic,
    now: &mut Instant,
    until: Instant,
    rtt: Duration,
) -> Vec<(Instant, u64)> {
    let mut out = Vec::new();
    while *now < until {
        let n = (cc.cwnd() / M).max(1);
        for _ in 0..n {
            *now += rtt / n;
            cc.on_ack(&AckInfo {
                cwnd_limited: true,
                now: *now,
                newly_acked: M,
                cum_acked: M,
                rtt: Some(rtt),
                srtt: rtt,
                min_rtt: rtt,
                mss: MSS,
                ..AckInfo::default()
            });
            out.push((*now, cc.cwnd()));
        }
    }
    out
}

fn cwnd_at(trace: &[(Instant, u64)], t: Instant) -> u64 {
    trace
        .iter()
        .rev()
        .find(|(at, _)| *at <= t)
        .map(|x| x.1)
        .unwrap()
}

/// Linux's initial growth: after a slow start that ended without a loss, cwnd grows by at
/// least 5 % per RTT (`ca->cnt` ≤ 20 while `last_max_cwnd` is 0); after a loss the cubic
/// function alone, which stays near W_max for K seconds.
#[test]
fn five_percent_per_rtt_until_the_first_loss() {
    let rtt = Duration::from_millis(100);
    let mut now = Instant::ZERO;
    let mut fresh = Cubic::new(no_hystart(), now, MSS, 500 * M);
    fresh.exit_slow_start(now);
    let trace = clock(&mut fresh, &mut now, Instant::ZERO + Duration::from_secs(2), rtt);
    // 20 RTTs at ≥ 5 % each: at least 500·1.05^20 ≈ 1327 segments (the cubic alone: ~503).
    let w = trace.last().unwrap().1 / M;
    assert!(w >= 1300, "{w}");
    let mut now = Instant::ZERO;
    let mut lost = after_loss(no_hystart(), 714 * M, now);
    let start = lost.cwnd() / M;
    let trace = clock(&mut lost, &mut now, Instant::ZERO + Duration::from_secs(2), rtt);
    let w = trace.last().unwrap().1 / M;
    assert!(w < start * 13 / 10, "{start} -> {w}"); // 5 % per RTT would give ×2.6
    // Chromium's CubicBytes has no such floor.
    let mut now = Instant::ZERO;
    let mut quic = Cubic::new(CubicConfig { initial_growth: false, ..no_hystart() }, now, MSS, 500 * M);
    quic.exit_slow_start(now);
    let trace = clock(&mut quic, &mut now, Instant::ZERO + Duration::from_secs(2), rtt);
    assert!(trace.last().unwrap().1 / M < 600);
}

#[test]
fn window_follows_cubic_function() {
    let w_max = 200 * M;
    let t0 = Instant::from_nanos(1_000_000_000);
    let mut cc = after_loss(no_hystart(), w_max, t0);
    assert_eq!(cc.cwnd(), 140 * M);
    assert_eq!(cc.ssthresh(), 140 * M);
    let mut now = t0;
    let trace = clock(
        &mut cc,
        &mut now,
        t0 + Duration::from_secs(9),
        Duration::from_millis(100),
    );
    let st = cc.stats();
    let epoch = st.epoch_start.unwrap();
    let k = st.k_secs;
    // K = ∛(W_max(1 − β)/C) = ∛(200·0.3/0.4) = ∛150 s.
    assert!((k - libm::cbrt(150.0)).abs() < 1e-9, "K = {k}");
    assert_eq!(st.w_max, Some(w_max));
    let w = |t: f64| 0.4 * (t - k) * (t - k) * (t - k) * M as f64 + w_max as f64;
    for t in [0.5, 1.0, 2.0, 3.0, 4.0, k, 6.0, 7.0, 8.0] {
        let at = epoch + Duration::from_secs_f64(t);
        let got = cwnd_at(&trace, at) as f64;
        assert!(
            (got - w(t)).abs() <= M as f64,
            "t={t}: cwnd {got} vs W(t) {}",
            w(t)
        );
    }
    // At t = K, W ≈ W_max; concave before, convex after.
    let at_k = cwnd_at(&trace, epoch + Duration::from_secs_f64(k));
    assert!(at_k.abs_diff(w_max) <= M);
    assert_eq!(cc.stats().region, CubicRegion::Convex);
}

#[test]
fn concave_region_before_k() {
    let t0 = Instant::from_nanos(1);
    let mut cc = after_loss(no_hystart(), 200 * M, t0);
    let mut now = t0;
    clock(
        &mut cc,
        &mut now,
        t0 + Duration::from_secs(2),
        Duration::from_millis(100),
    );
    assert_eq!(cc.stats().region, CubicRegion::Concave);
    assert_eq!(cc.state(), "avoidance");
}

#[test]
fn fast_convergence_lowers_w_max() {
    for fc in [true, false] {
        let cfg = CubicConfig {
            fast_convergence: fc,
            ..no_hystart()
        };
        let t0 = Instant::from_nanos(1);
        let mut cc = after_loss(cfg, 100 * M, t0);
        let mut now = t0;
        clock(
            &mut cc,
            &mut now,
            t0 + Duration::from_secs(1),
            Duration::from_millis(100),
        );
        let c1 = cc.cwnd();
        assert!(c1 < 100 * M);
        cc.on_loss_event(now, c1, MSS);
        let w_max = cc.stats().w_max.unwrap();
        if fc {
            // W_max = cwnd·(1 + β)/2 (RFC 9438 §4.7).
            assert!(
                w_max.abs_diff((c1 as f64 * 0.85) as u64) <= 1,
                "{w_max} vs {c1}"
            );
        } else {
            assert_eq!(w_max, c1);
        }
        assert!(cc.ssthresh().abs_diff((c1 as f64 * 0.7) as u64) <= 1);
        assert_eq!(cc.cwnd(), cc.ssthresh());
    }
}

#[test]
fn reno_friendly_region_dominates_at_small_rtt() {
    let t0 = Instant::from_nanos(1);
    let mut cc = after_loss(no_hystart(), 20 * M, t0);
    let mut now = t0;
    clock(
        &mut cc,
        &mut now,
        t0 + Duration::from_millis(200),
        Duration::from_millis(1),
    );
    let st = cc.stats();
    assert_eq!(st.region, CubicRegion::RenoFriendly);
    let t = (now - st.epoch_start.unwrap()).as_secs_f64();
    assert!((cc.cwnd() as f64) > cc.w_cubic(t) * 5.0);
    // ~0.53 SMSS/RTT until W_est reaches cwnd_prior (≈ 11 RTTs), then 1 SMSS/RTT.
    assert!(
        cc.cwnd() > 150 * M && cc.cwnd() < 220 * M,
        "cwnd {}",
        cc.cwnd() / M
    );
    // Without the Reno-friendly region, the cubic function alone governs.
    let cfg = CubicConfig {
        reno_friendly: false,
        ..no_hystart()
    };
    let mut cc2 = after_loss(cfg, 20 * M, t0);
    let mut now = t0;
    clock(
        &mut cc2,
        &mut now,
        t0 + Duration::from_millis(200),
        Duration::from_millis(1),
    );
    assert!(cc2.cwnd() < 20 * M);
}

#[test]
fn rto_one_mss_then_k_zero_epoch() {
    let t0 = Instant::from_nanos(1);
    let mut cc = after_loss(no_hystart(), 100 * M, t0);
    cc.on_rto(t0, 70 * M, MSS);
    assert_eq!(cc.cwnd(), M);
    assert_eq!(cc.ssthresh(), 49 * M);
    let mut now = t0;
    clock(
        &mut cc,
        &mut now,
        t0 + Duration::from_secs(1),
        Duration::from_millis(100),
    );
    let st = cc.stats();
    assert_eq!(st.k_secs, 0.0);
    assert_eq!(st.w_max, Some(st.cwnd_epoch));
    assert!(st.cwnd_epoch >= 49 * M);
}

// ---- HyStart++ ----

struct Rounds {
    now: Instant,
    delivered: u64,
}

/// One round: cwnd/MSS ACKs spread over the round, RTT samples from `rtt(i, n)`.
/// All packets of the round were sent when `delivered` had its value at the round start.
fn hy_round(cc: &mut Cubic, r: &mut Rounds, rtt: impl Fn(u64, u64) -> Duration) {
    let n = (cc.cwnd() / M).max(1);
    let prior = r.delivered;
    for i in 0..n {
        let s = rtt(i, n);
        r.now += s / n;
        r.delivered += M;
        cc.on_ack(&AckInfo {
            cwnd_limited: true,
            now: r.now,
            newly_acked: M,
            cum_acked: M,
            rtt: Some(s),
            srtt: s,
            min_rtt: s,
            delivered: r.delivered,
            rate: Some(RateSample {
                prior_delivered: prior,
                rtt: s,
                ..RateSample::default()
            }),
            mss: MSS,
            ..AckInfo::default()
        });
    }
}

fn ms(x: u64) -> Duration {
    Duration::from_millis(x)
}

#[test]
fn hystart_flat_rtt_does_not_exit() {
    let mut cc = Cubic::new(CubicConfig::default(), Instant::ZERO, MSS, 10 * M);
    let mut r = Rounds {
        now: Instant::ZERO,
        delivered: 0,
    };
    for _ in 0..10 {
        let before = cc.cwnd();
        hy_round(&mut cc, &mut r, |_, _| ms(100));
        assert_eq!(cc.cwnd(), 2 * before);
    }
    assert_eq!(cc.state(), "slow_start");
    assert_eq!(cc.stats().hystart_css_entries, 0);
    assert_eq!(cc.stats().slow_start_exit, None);
}

#[test]
fn hystart_rtt_rise_enters_css_then_avoidance() {
    let mut cc = Cubic::new(CubicConfig::default(), Instant::ZERO, MSS, 10 * M);
    let mut r = Rounds {
        now: Instant::ZERO,
        delivered: 0,
    };
    for _ in 0..3 {
        hy_round(&mut cc, &mut r, |_, _| ms(100));
    }
    assert_eq!(cc.cwnd(), 80 * M);
    // RTTs rising within the round by more than eta = max(4, min(100/8, 16)) = 12.5 ms:
    // 100 → 130 ms; the min over the first 8 samples (≥ 113 ms) exceeds 112.5 ms.
    hy_round(&mut cc, &mut r, |i, n| ms(113) + ms(17) * i / n);
    assert_eq!(cc.state(), "css");
    let st = cc.stats();
    assert_eq!(st.hystart_css_entries, 1);
    assert!(st.hystart_css_at.is_some());
    // 8 ACKs of slow start, then 72 of CSS at 1/4 growth.
    assert_eq!(cc.cwnd(), 80 * M + 8 * M + 72 * M / 4);
    // CSS rounds: growth is a quarter of slow start's (cwnd × 1.25 per round).
    let mut k = 1;
    while cc.state() == "css" {
        let before = cc.cwnd();
        hy_round(&mut cc, &mut r, |_, _| ms(130));
        if cc.state() == "css" {
            // One ACK per whole SMSS of the round's cwnd, each adding SMSS/4.
            assert_eq!(cc.cwnd(), before + (before / M) * M / 4);
        }
        k += 1;
        assert!(k <= 6);
    }
    // Entered CA at the start of the 5th round after the entry round.
    assert_eq!(k, 6);
    assert_eq!(cc.state(), "avoidance");
    let (at, why) = cc.stats().slow_start_exit.unwrap();
    assert_eq!(why, SlowStartExit::HyStart);
    assert!(at > st.hystart_css_at.unwrap());
    assert!(cc.ssthresh() <= cc.cwnd());
}

#[test]
fn hystart_rtt_drop_in_css_resumes_slow_start() {
    let mut cc = Cubic::new(CubicConfig::default(), Instant::ZERO, MSS, 10 * M);
    let mut r = Rounds {
        now: Instant::ZERO,
        delivered: 0,
    };
    for _ in 0..3 {
        hy_round(&mut cc, &mut r, |_, _| ms(100));
    }
    hy_round(&mut cc, &mut r, |_, _| ms(120));
    assert_eq!(cc.state(), "css");
    // The next round's RTT falls below the CSS baseline (120 ms): back to slow start.
    hy_round(&mut cc, &mut r, |_, _| ms(105));
    assert_eq!(cc.state(), "slow_start");
    assert_eq!(cc.stats().hystart_css_resumes, 1);
    let before = cc.cwnd();
    hy_round(&mut cc, &mut r, |_, _| ms(105));
    assert_eq!(cc.cwnd(), 2 * before);
    assert_eq!(cc.state(), "slow_start");
}

#[test]
fn hystart_off_is_standard_slow_start() {
    let mut cc = Cubic::new(no_hystart(), Instant::ZERO, MSS, 10 * M);
    let mut r = Rounds {
        now: Instant::ZERO,
        delivered: 0,
    };
    for _ in 0..3 {
        hy_round(&mut cc, &mut r, |_, _| ms(100));
    }
    hy_round(&mut cc, &mut r, |_, _| ms(150));
    assert_eq!(cc.state(), "slow_start");
    assert_eq!(cc.cwnd(), 160 * M);
}

#[test]
fn loss_in_slow_start_ends_hystart() {
    let mut cc = Cubic::new(CubicConfig::default(), Instant::ZERO, MSS, 10 * M);
    let mut r = Rounds {
        now: Instant::ZERO,
        delivered: 0,
    };
    hy_round(&mut cc, &mut r, |_, _| ms(100));
    cc.on_loss_event(r.now, 20 * M, MSS);
    assert_eq!(cc.cwnd(), 14 * M);
    assert_eq!(cc.stats().slow_start_exit.unwrap().1, SlowStartExit::Loss);
    assert_eq!(cc.stats().w_max, Some(20 * M));
}

// ---- Linux's HyStart ----

fn linux(paced: bool) -> CubicConfig {
    CubicConfig {
        hystart: HyStartConfig { variant: HyStartVariant::Linux, paced, ..HyStartConfig::default() },
        ..CubicConfig::default()
    }
}

fn rounds() -> Rounds {
    Rounds { now: Instant::ZERO, delivered: 0 }
}

#[test]
fn linux_hystart_names_round_trip() {
    for v in [HyStartVariant::Rfc9406, HyStartVariant::Linux] {
        assert_eq!(HyStartVariant::from_name(v.name()), Some(v));
    }
    assert_eq!(HyStartVariant::from_name("hystart"), None);
}

#[test]
fn linux_hystart_delay_goes_straight_to_avoidance() {
    // ACKs 100 ms / cwnd apart (over 2 ms from 16 segments on): no ACK train.
    let mut cc = Cubic::new(linux(false), Instant::ZERO, MSS, 10 * M);
    let mut r = rounds();
    for _ in 0..3 {
        let before = cc.cwnd();
        hy_round(&mut cc, &mut r, |_, _| ms(100));
        assert_eq!(cc.cwnd(), 2 * before, "no limit on slow start's growth per ACK");
    }
    assert_eq!(cc.cwnd(), 80 * M);
    // 100 → 130 ms within the round: from the ninth sample on, the round's minimum (≥ 113 ms)
    // exceeds delay_min + clamp(100/8, 4, 16) = 112.5 ms.
    hy_round(&mut cc, &mut r, |i, n| ms(113) + ms(17) * i / n);
    assert_eq!(cc.state(), "avoidance");
    let st = cc.stats();
    assert_eq!(st.slow_start_exit.unwrap().1, SlowStartExit::HyStart);
    assert_eq!(st.hystart_css_entries, 0);
    // Eight ACKs of slow start; the ninth sample fired (ssthresh = cwnd = 88), the rest of the
    // round grew in avoidance.
    assert_eq!(cc.ssthresh(), 88 * M);
    assert!(cc.cwnd() > 88 * M && cc.cwnd() < 95 * M, "{}", cc.cwnd());
}

#[test]
fn linux_hystart_ignores_a_rise_below_its_threshold_and_small_windows() {
    let mut cc = Cubic::new(linux(false), Instant::ZERO, MSS, 10 * M);
    let mut r = rounds();
    hy_round(&mut cc, &mut r, |_, _| ms(100));
    // Below hystart_low_window (16 segments) nothing is detected, whatever the delay.
    let mut cc2 = cc.clone();
    let mut r2 = Rounds { now: r.now, delivered: r.delivered };
    assert_eq!(cc2.cwnd(), 20 * M);
    hy_round(&mut cc, &mut r, |_, _| ms(112));
    assert_eq!(cc.state(), "slow_start");
    assert_eq!(cc.cwnd(), 40 * M);
    let mut small = Cubic::new(linux(false), Instant::ZERO, MSS, 4 * M);
    let mut r3 = rounds();
    hy_round(&mut small, &mut r3, |_, _| ms(100));
    hy_round(&mut small, &mut r3, |_, _| ms(200));
    assert_eq!((small.state(), small.cwnd()), ("slow_start", 16 * M));
    hy_round(&mut cc2, &mut r2, |_, _| ms(113));
    assert_eq!(cc2.state(), "avoidance");
}

#[test]
fn linux_hystart_ack_train_halved_without_pacing() {
    // 20 ms RTT, ACKs spread over the whole round (the bottleneck sets their spacing): from
    // 16 segments on they are under 2 ms apart, and the train passes
    // (delay_min + ack_delay) / 2 ≈ 10.5 ms within the round.
    let mut cc = Cubic::new(linux(false), Instant::ZERO, MSS, 10 * M);
    let mut r = rounds();
    hy_round(&mut cc, &mut r, |_, _| ms(20));
    assert_eq!(cc.state(), "slow_start");
    hy_round(&mut cc, &mut r, |_, _| ms(20));
    assert_eq!(cc.state(), "avoidance");
    // 20 ACKs 1 ms apart from cwnd 20: the 12th is past 10.5 ms from the round's start.
    assert_eq!(cc.ssthresh(), 31 * M);
    // A pacing sender waits for the whole delay_min + ack_delay (21 ms): ACKs spread over a
    // flat 20 ms never span it.
    let mut p = Cubic::new(linux(true), Instant::ZERO, MSS, 10 * M);
    let mut rp = rounds();
    for _ in 0..3 {
        hy_round(&mut p, &mut rp, |_, _| ms(20));
    }
    assert_eq!((p.state(), p.cwnd()), ("slow_start", 80 * M));
    // 23.5 ms: below the delay detector's 20 + 4 ms, but the train now spans over 21 ms.
    hy_round(&mut p, &mut rp, |_, _| Duration::from_micros(23_500));
    assert_eq!(p.state(), "avoidance");
    assert!(p.ssthresh() > 150 * M, "{}", p.ssthresh());
}

#[test]
fn linux_hystart_is_armed_again_by_an_rto() {
    let mut cc = Cubic::new(linux(false), Instant::ZERO, MSS, 10 * M);
    let mut r = rounds();
    for _ in 0..3 {
        hy_round(&mut cc, &mut r, |_, _| ms(100));
    }
    hy_round(&mut cc, &mut r, |_, _| ms(130));
    assert_eq!(cc.state(), "avoidance");
    cc.on_rto(r.now, 0, MSS);
    assert_eq!(cc.cwnd(), M);
    // Slow start again towards ssthresh, HyStart armed: delay_min is learnt anew (200 ms), and
    // a rise past 200 + 16 ms ends it before ssthresh.
    let ssthresh = cc.ssthresh();
    for _ in 0..5 {
        hy_round(&mut cc, &mut r, |_, _| ms(200));
    }
    assert_eq!((cc.state(), cc.cwnd()), ("slow_start", 32 * M));
    assert!(ssthresh > 32 * M);
    hy_round(&mut cc, &mut r, |_, _| ms(220));
    assert_eq!(cc.state(), "avoidance");
    assert!(cc.ssthresh() < ssthresh);
}
