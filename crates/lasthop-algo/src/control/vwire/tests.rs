//! Checks of the vwire deciders: utilities, both solvers, the scheduler, the loop, the forest.

use super::*;
extern crate std;
use alloc::string::String;
use alloc::vec;
use alloc::vec::Vec;
use lasthop_core::{Duration, Instant, Rng};

const MB: f64 = 1e6;

// ---------------------------------------------------------------- utilities

#[test]
fn step_ladder_values_at_and_between_steps() {
    let u = Utility::ladder(&[(2.5 * MB, 4.0), (8.0 * MB, 7.0), (32.0 * MB, 10.0)]);
    u.validate().unwrap();
    assert_eq!(u.value(0.0), 0.0);
    assert_eq!(u.value(2.4 * MB), 0.0);
    assert_eq!(u.value(2.5 * MB), 4.0);
    assert_eq!(u.value(5.0 * MB), 4.0);
    assert_eq!(u.value(8.0 * MB), 7.0);
    assert_eq!(u.value(31.9 * MB), 7.0);
    assert_eq!(u.value(32.0 * MB), 10.0);
    assert_eq!(u.value(1e9), 10.0);
    // A rate one part in 10^12 short (floating-point round trip) meets the step.
    assert_eq!(u.value(32.0 * MB * (1.0 - 1e-12)), 10.0);
    assert_eq!(u.value(32.0 * MB * (1.0 - 1e-6)), 7.0);
    assert!(!u.is_concave());
    assert_eq!(u.derivative(1.0), None);
    // The paper's 4K flow (§IV-1).
    let k4 = Utility::step(32.0 * MB, 10.0);
    assert_eq!(k4.value(31.0 * MB), 0.0);
    assert_eq!(k4.value(33.0 * MB), 10.0);
    // The §IV-2 fixed-rate flow: a step slightly above its send rate.
    let voip = Utility::fixed_rate(1.0 * MB, 0.1, 1.0);
    assert_eq!(voip.value(1.05 * MB), 0.0);
    assert_eq!(voip.value(1.1 * MB), 1.0);
}

#[test]
fn log_utility_is_monotone_concave_and_finite_at_zero() {
    let u = Utility::log(0.1);
    u.validate().unwrap();
    assert!(u.is_concave());
    assert!(u.value(0.0).is_finite());
    // 0.1·ln(b in Mb/s): 0.1·ln(10) at 10 Mb/s (up to the 1 kb/s floor).
    assert!((u.value(10.0 * MB) - 0.1 * libm::log(10.001)).abs() < 1e-12);
    let xs: Vec<f64> = (0..200).map(|k| k as f64 * 0.5 * MB).collect();
    for w in xs.windows(3) {
        let (a, b, c) = (u.value(w[0]), u.value(w[1]), u.value(w[2]));
        assert!(b > a && c > b, "not increasing at {}", w[1]);
        // Midpoint concavity: u(x1) ≥ (u(x0) + u(x2)) / 2.
        assert!(b >= (a + c) / 2.0 - 1e-15, "not concave at {}", w[1]);
    }
    // The derivative and its inverse agree.
    for &b in &[0.0, 1e3, 1e6, 5e7] {
        let d = u.derivative(b).unwrap();
        let back = u.inverse_derivative(d).unwrap();
        assert!((back - b).abs() <= 1e-6 * (1.0 + b), "{b} -> {back}");
    }
    assert_eq!(u.inverse_derivative(1.0), Some(0.0));
}

#[test]
fn utility_validation_names_the_field() {
    let bad = [
        (Utility::Step(vec![]), "steps"),
        (Utility::ladder(&[(2.0, 1.0), (1.0, 2.0)]), "steps.rate_bps"),
        (Utility::ladder(&[(1.0, 2.0), (2.0, 1.0)]), "steps.utility"),
        (Utility::ladder(&[(0.0, 2.0)]), "steps.rate_bps"),
        (Utility::log(0.0), "weight"),
        (
            Utility::Log {
                weight: 1.0,
                floor_bps: 0.0,
            },
            "floor_bps",
        ),
    ];
    for (u, field) in bad {
        assert_eq!(u.validate().unwrap_err().field, field);
    }
}

// ---------------------------------------------------------------- optimizer

fn flow(l_mbps: f64, u: &Utility) -> Flow<'_> {
    Flow {
        link_rate_bps: l_mbps * MB,
        goodput_bps: 0.0,
        utility: u,
    }
}

fn both(p: &Problem<'_>) -> (Solution, Solution) {
    let e = solve_exact(p).unwrap();
    let g = solve_grid(p, &GridConfig::default()).unwrap();
    (e, g)
}

#[test]
fn usable_airtime_is_the_sum_of_goodput_over_link_rate() {
    let u = Utility::log(1.0);
    let flows = vec![
        Flow {
            link_rate_bps: 100.0 * MB,
            goodput_bps: 30.0 * MB,
            utility: &u,
        },
        Flow {
            link_rate_bps: 40.0 * MB,
            goodput_bps: 10.0 * MB,
            utility: &u,
        },
    ];
    assert!((usable_airtime(&flows) - 0.55).abs() < 1e-12);
    let p = Problem::from_measurements(flows.clone(), 0.05);
    assert!((p.airtime - 0.55).abs() < 1e-12);
    // Clamped into [min, 1].
    let mut idle = flows.clone();
    for f in &mut idle {
        f.goodput_bps = 0.0;
    }
    assert_eq!(Problem::from_measurements(idle, 0.05).airtime, 0.05);
}

#[test]
fn video_step_met_when_airtime_allows() {
    let video = Utility::step(32.0 * MB, 10.0);
    let greedy = Utility::log(0.1);
    let p = Problem {
        flows: vec![flow(64.0, &video), flow(100.0, &greedy)],
        airtime: 0.9,
    };
    let (e, g) = both(&p);
    assert!((e.airtime[0] - 0.5).abs() < 1e-12, "{:?}", e.airtime);
    assert!((e.airtime[1] - 0.4).abs() < 1e-9, "{:?}", e.airtime);
    assert_eq!(video.value(e.rate_bps[0]), 10.0);
    assert!((g.airtime[0] - 0.5).abs() < 1e-5, "{:?}", g.airtime);
    assert!((g.airtime[1] - 0.4).abs() < 1e-5, "{:?}", g.airtime);
    assert!(e.utility >= g.utility - 1e-12);
}

#[test]
fn video_step_dropped_when_airtime_does_not_allow() {
    let video = Utility::step(32.0 * MB, 10.0);
    let greedy = Utility::log(0.1);
    // At 75 ft the video link is slow: 32 Mb/s needs the whole channel, U = 0.9.
    let p = Problem {
        flows: vec![flow(32.0, &video), flow(100.0, &greedy)],
        airtime: 0.9,
    };
    let (e, g) = both(&p);
    assert_eq!(e.airtime[0], 0.0);
    assert!((e.airtime[1] - 0.9).abs() < 1e-12);
    assert!(g.airtime[0] < 1e-5 && (g.airtime[1] - 0.9).abs() < 1e-5);
}

#[test]
fn two_log_flows_share_airtime_by_weight() {
    let u1 = Utility::log(1.0);
    let u3 = Utility::log(3.0);
    let p = Problem {
        flows: vec![flow(50.0, &u1), flow(100.0, &u3)],
        airtime: 0.8,
    };
    let (e, g) = both(&p);
    // a_i ∝ w_i up to the 1 kb/s floor: 0.2 and 0.6.
    assert!((e.airtime[0] - 0.2).abs() < 1e-4, "{:?}", e.airtime);
    assert!((e.airtime[1] - 0.6).abs() < 1e-4, "{:?}", e.airtime);
    assert!(
        (g.airtime[0] - e.airtime[0]).abs() < 1e-5,
        "{:?}",
        g.airtime
    );
    // With a vanishing floor the split is exactly proportional.
    let v1 = Utility::Log {
        weight: 1.0,
        floor_bps: 1e-9,
    };
    let v3 = Utility::Log {
        weight: 3.0,
        floor_bps: 1e-9,
    };
    let p = Problem {
        flows: vec![flow(50.0, &v1), flow(100.0, &v3)],
        airtime: 0.8,
    };
    let e = solve_exact(&p).unwrap();
    assert!((e.airtime[0] - 0.2).abs() < 1e-12 && (e.airtime[1] - 0.6).abs() < 1e-12);
    // A large floor on one flow makes it a true water-fill: a_i = max(0, ν w_i − f_i / L_i).
    let big = Utility::Log {
        weight: 1.0,
        floor_bps: 10.0 * MB,
    };
    let tiny = Utility::Log {
        weight: 1.0,
        floor_bps: 1e-9,
    };
    for (u, want) in [(0.5, [0.2, 0.3]), (0.05, [0.0, 0.05])] {
        let p = Problem {
            flows: vec![flow(100.0, &big), flow(100.0, &tiny)],
            airtime: u,
        };
        let (e, g) = both(&p);
        for (k, w) in want.iter().enumerate() {
            assert!((e.airtime[k] - w).abs() < 1e-12, "U {u}: {:?}", e.airtime);
            assert!((g.airtime[k] - w).abs() < 1e-5, "U {u}: {:?}", g.airtime);
        }
    }
}

#[test]
fn ladder_flow_takes_the_best_step_it_can_afford() {
    let video = Utility::ladder(&[(2.5 * MB, 4.0), (8.0 * MB, 7.0), (32.0 * MB, 10.0)]);
    let greedy = Utility::log(0.1);
    // L = 20 Mb/s: 32 Mb/s is out of reach, 8 Mb/s costs 0.4 of the channel.
    let p = Problem {
        flows: vec![flow(20.0, &video), flow(100.0, &greedy)],
        airtime: 0.9,
    };
    let (e, g) = both(&p);
    assert!((e.airtime[0] - 0.4).abs() < 1e-12, "{:?}", e.airtime);
    assert!((e.utility - g.utility).abs() < 1e-4);
}

fn random_utility(r: &mut Rng) -> Utility {
    if r.bernoulli(0.5) {
        let steps = 1 + r.gen_range_inclusive(2) as usize;
        let mut rate = 0.0;
        let mut util = 0.0;
        let mut v = Vec::new();
        for _ in 0..steps {
            rate += (1.0 + 15.0 * r.next_f64()) * MB;
            util += 1.0 + 4.0 * r.next_f64();
            v.push((rate, util));
        }
        Utility::ladder(&v)
    } else {
        Utility::log(0.05 + r.next_f64())
    }
}

/// Random instances: 2–4 flows, half step ladders (1–3 steps up to ~48 Mb/s), half logs.
fn random_instances(count: usize, seed: u64) -> Vec<(Vec<Utility>, Vec<f64>, f64)> {
    let mut r = Rng::from_seed(seed);
    (0..count)
        .map(|_| {
            let n = 2 + r.gen_range_inclusive(2) as usize;
            let us: Vec<Utility> = (0..n).map(|_| random_utility(&mut r)).collect();
            let ls: Vec<f64> = (0..n).map(|_| 6.5 + 143.5 * r.next_f64()).collect();
            let u = 0.3 + 0.7 * r.next_f64();
            (us, ls, u)
        })
        .collect()
}

#[test]
fn exact_never_below_grid_and_mostly_equal_on_random_instances() {
    let cases = random_instances(200, 7);
    let (mut close, mut evals_e, mut evals_g, mut cand_e, mut cand_g) = (0, 0, 0, 0, 0);
    let mut worst: f64 = 0.0;
    for (k, (us, ls, u)) in cases.iter().enumerate() {
        let p = Problem {
            flows: us.iter().zip(ls).map(|(u, &l)| flow(l, u)).collect(),
            airtime: *u,
        };
        let (e, g) = both(&p);
        for s in [&e, &g] {
            let total: f64 = s.airtime.iter().sum();
            assert!(
                total <= p.airtime,
                "case {k}: Σa = {total} > U = {}",
                p.airtime
            );
            assert!(s.airtime.iter().all(|&a| a >= 0.0));
            assert!((s.utility - p.objective(&s.airtime)).abs() < 1e-12);
        }
        assert!(
            e.utility >= g.utility - 1e-9,
            "case {k}: exact {} < grid {}",
            e.utility,
            g.utility
        );
        let gap = (e.utility - g.utility) / e.utility.abs().max(1.0);
        worst = worst.max(gap);
        if gap <= 0.01 {
            close += 1;
        } else if std::env::var("VWIRE_SHOW").is_ok() {
            std::println!(
                "case {k}: U {u:.3} L {ls:.1?} exact {:?} {:.4} grid {:?} {:.4}",
                e.airtime,
                e.utility,
                g.airtime,
                g.utility
            );
            for u in us {
                std::println!("   {u:?}");
            }
        }
        evals_e += e.stats.utility_evals;
        evals_g += g.stats.utility_evals;
        cand_e += e.stats.candidates;
        cand_g += g.stats.candidates;
    }
    std::println!(
        "vwire solvers on 200 random instances: within 1%: {close}/200, worst gap {:.4}; \
         utility evals exact {evals_e} vs grid {evals_g}; candidates exact {cand_e} vs grid {cand_g}",
        worst
    );
    // Measured: 189/200. The misses are grid-resolution misses (a tight combination of steps that
    // no point of the 20-cell grid reaches, which a local search cannot cross to).
    assert!(close >= 180, "only {close}/200 within 1%");
}

#[test]
fn grid_without_refinement_is_never_better() {
    for (us, ls, u) in random_instances(50, 11) {
        let p = Problem {
            flows: us.iter().zip(&ls).map(|(u, &l)| flow(l, u)).collect(),
            airtime: u,
        };
        let coarse = GridConfig {
            refine: false,
            ..GridConfig::default()
        };
        let c = solve_grid(&p, &coarse).unwrap();
        let f = solve_grid(&p, &GridConfig::default()).unwrap();
        assert!(f.utility >= c.utility - 1e-12);
        assert_eq!(c.stats.refine_moves, 0);
        if us.iter().any(|u| !u.is_concave()) {
            assert_eq!(c.stats.candidates, grid_points(us.len(), 20, true));
        }
    }
}

#[test]
fn optimizer_rejects_bad_input_and_oversized_grids() {
    let u = Utility::log(1.0);
    let p = Problem {
        flows: vec![flow(0.0, &u)],
        airtime: 0.5,
    };
    assert!(matches!(
        solve_exact(&p),
        Err(OptimizeError::Flow { index: 0, error }) if error.field == "link_rate_bps"
    ));
    let p = Problem {
        flows: vec![flow(10.0, &u)],
        airtime: 1.5,
    };
    assert!(matches!(
        solve_grid(&p, &GridConfig::default()),
        Err(OptimizeError::Airtime(_))
    ));
    let v = Utility::step(1.0 * MB, 1.0);
    let many: Vec<Flow<'_>> = (0..12).map(|_| flow(10.0, &v)).collect();
    let p = Problem {
        flows: many,
        airtime: 1.0,
    };
    assert!(matches!(
        solve_grid(&p, &GridConfig::default()),
        Err(OptimizeError::GridTooLarge { .. })
    ));
    // The exact solver handles it: 10 of the 12 fit (each needs 0.1).
    let e = solve_exact(&p).unwrap();
    assert!((e.utility - 10.0).abs() < 1e-12, "{}", e.utility);
    assert_eq!(grid_points(2, 20, true), 21);
    assert_eq!(grid_points(3, 20, true), 231);
}

// ---------------------------------------------------------------- scheduler

/// Drive the scheduler as a link of `link_bps` serving 1500-byte packets from always-backlogged
/// classes `active`, for `secs`; returns bytes sent per class.
fn run_link(s: &mut TokenScheduler, link_bps: f64, active: &[bool], secs: f64) -> Vec<u64> {
    let before = s.stats().bytes.clone();
    let backlog: Vec<u64> = active
        .iter()
        .map(|&a| if a { 1_000_000 } else { 0 })
        .collect();
    let pkt = 1500u64;
    let tx = Duration::from_secs_f64(pkt as f64 * 8.0 / link_bps);
    // Each run continues from the scheduler's last clock reading.
    let mut now = s.clock();
    let end = now + Duration::from_secs_f64(secs);
    while now < end {
        match s.next_class(now, &backlog) {
            Some(c) => {
                s.on_sent(now, c, pkt);
                now += tx;
            }
            None => {
                // Not work-conserving and nobody has tokens: wait for the first that will.
                let next = (0..active.len())
                    .filter(|&c| active[c])
                    .filter_map(|c| s.tokens_at(c))
                    .min()
                    .unwrap_or(end);
                now = next.max(now + Duration::from_nanos(1));
            }
        }
        s.invariants().unwrap();
    }
    s.stats()
        .bytes
        .iter()
        .zip(&before)
        .map(|(a, b)| a - b)
        .collect()
}

fn managed(classes: usize, rates: &[f64], wc: bool) -> TokenScheduler {
    let cfg = SchedulerConfig {
        classes,
        work_conserving: wc,
        ..SchedulerConfig::default()
    };
    let mut s = TokenScheduler::new(cfg).unwrap();
    s.set_rates(Instant::ZERO, rates);
    s.set_managed(Instant::ZERO, true);
    s
}

#[test]
fn served_bytes_follow_allocated_rates() {
    // The link equal to, faster than, and slower than the allocation.
    for link in [8.0 * MB, 16.0 * MB, 4.0 * MB] {
        let mut s = managed(2, &[6.0 * MB, 2.0 * MB], true);
        let b = run_link(&mut s, link, &[true, true], 20.0);
        let ratio = b[0] as f64 / b[1] as f64;
        assert!((ratio - 3.0).abs() < 0.05, "link {link}: ratio {ratio}");
        let total = (b[0] + b[1]) as f64 * 8.0 / 20.0;
        assert!(
            (total - link).abs() < 0.01 * link,
            "not work-conserving: {total}"
        );
    }
}

#[test]
fn work_conserving_when_one_class_is_idle() {
    let mut s = managed(2, &[1.0 * MB, 7.0 * MB], true);
    let b = run_link(&mut s, 10.0 * MB, &[true, false], 10.0);
    let got = b[0] as f64 * 8.0 / 10.0;
    assert!(got > 9.9 * MB, "class 0 got {got} of an idle 10 Mb/s link");
    assert!(s.stats().excess_sends > 0);
    // Without work conservation the class is held to its allocation.
    let mut s = managed(2, &[1.0 * MB, 7.0 * MB], false);
    let b = run_link(&mut s, 10.0 * MB, &[true, false], 10.0);
    let got = b[0] as f64 * 8.0 / 10.0;
    assert!((got - 1.0 * MB).abs() < 0.02 * MB, "held to {got}");
    // Back from idle, class 1 gets its share at once (no catch-up starvation of class 0).
    let mut s = managed(2, &[1.0 * MB, 1.0 * MB], true);
    run_link(&mut s, 10.0 * MB, &[true, false], 5.0);
    let b = run_link(&mut s, 10.0 * MB, &[true, true], 2.0);
    let ratio = b[0] as f64 / b[1] as f64;
    assert!((ratio - 1.0).abs() < 0.05, "after idle: {ratio}");
}

#[test]
fn bucket_depth_caps_bursts() {
    // 8 Mb/s, 50 ms deep: 50 000 bytes. After 10 s idle, at one instant, a class may send until
    // its tokens run out: ceil(50 000 / 1500) = 34 packets (the last one into debt, Algorithm 1).
    let mut s = managed(1, &[8.0 * MB], false);
    let t = Instant::from_nanos(10_000_000_000);
    assert_eq!(s.depth_bytes(0), 50_000.0);
    let mut sent = 0;
    while s.next_class(t, &[1]).is_some() {
        s.on_sent(t, 0, 1500);
        sent += 1;
        assert!(sent < 1000);
    }
    assert_eq!(sent, 34);
    assert!(!s.may_send(t, 0));
    // Tokens come back at the rate: 1500 bytes' debt-plus-one-byte in ~1.5 ms.
    let back = s.tokens_at(0).unwrap();
    assert!(s.may_send(back, 0));
    // Unmanaged: everything goes.
    s.set_managed(back, false);
    assert!(s.may_send(back, 0));
    assert_eq!(s.next_class(back, &[1]), Some(0));
}

#[test]
fn scheduler_config_is_validated() {
    let bad = SchedulerConfig {
        classes: 0,
        ..SchedulerConfig::default()
    };
    assert_eq!(TokenScheduler::new(bad).unwrap_err().field, "classes");
}

// ---------------------------------------------------------------- feedback

#[test]
fn bottleneck_needs_a_sustained_backlog_and_clears_with_hysteresis() {
    let mut d = BottleneckDetector::new(BottleneckConfig::default()).unwrap();
    let ms = |m: u64| Instant::from_nanos(m * 1_000_000);
    // A short spike is not a bottleneck.
    for m in 0..10 {
        assert!(!d.on_sample(ms(m * 10), 200_000));
    }
    assert!(!d.on_sample(ms(100), 0));
    // 200 ms above the threshold is.
    let mut at = None;
    for m in 11..60 {
        if d.on_sample(ms(m * 10), 100_000) && at.is_none() {
            at = Some(m * 10);
        }
    }
    assert_eq!(at, Some(310));
    // A dip into the middle band keeps it; 1 s below the low threshold clears it.
    assert!(d.on_sample(ms(600), 30_000));
    let mut cleared = None;
    for m in 61..200 {
        if !d.on_sample(ms(m * 10), 1_000) && cleared.is_none() {
            cleared = Some(m * 10);
        }
    }
    assert_eq!(cleared, Some(1610));
    assert_eq!(d.transitions(), 2);
}

#[test]
fn control_loop_sustains_the_4k_flow_while_its_link_allows() {
    let video = Utility::step(32.0 * MB, 10.0);
    let greedy = Utility::log(0.1);
    let mut c = VwireController::new(ControllerConfig::default()).unwrap();
    let meas = |lv: f64, gv: f64, lg: f64, gg: f64| {
        [
            FlowMeasurement {
                id: 1,
                link_rate_bps: lv * MB,
                goodput_bps: gv * MB,
                utility: &video,
            },
            FlowMeasurement {
                id: 2,
                link_rate_bps: lg * MB,
                goodput_bps: gg * MB,
                utility: &greedy,
            },
        ]
    };
    // 3 ft: both links fast; U = 20/65 + 45/130 ≈ 0.65.
    let m = meas(65.0, 20.0, 130.0, 45.0);
    let a = c.on_period(Instant::ZERO, &m).unwrap().clone();
    assert!((a.flows[0].rate_bps - 32.0 * MB).abs() < 1.0, "{a:?}");
    assert!(a.flows[1].rate_bps > 20.0 * MB, "{a:?}");
    assert_eq!(c.poll_timeout(), Some(Instant::from_nanos(2_000_000_000)));
    // Same inputs: reused.
    c.on_period(Instant::from_nanos(2_000_000_000), &m).unwrap();
    assert_eq!(c.stats().reused, 1);
    // 75 ft: the video link drops to 40 Mb/s; it still fits in U = 25/40 + 30/130.
    let m = meas(40.0, 25.0, 130.0, 30.0);
    let a = c
        .on_period(Instant::from_nanos(4_000_000_000), &m)
        .unwrap()
        .clone();
    assert!((a.flows[0].airtime - 0.8).abs() < 1e-9, "{a:?}");
    assert!(a.airtime_budget <= 1.0);
    let rates = a.class_rates(2, |id| (id - 1) as usize);
    assert_eq!(rates[0], a.flows[0].rate_bps);
    // A link too slow for 32 Mb/s: all airtime to the greedy flow.
    let m = meas(30.0, 20.0, 130.0, 40.0);
    let a = c.on_period(Instant::from_nanos(6_000_000_000), &m).unwrap();
    assert_eq!(a.flows[0].rate_bps, 0.0);
    // The grid solver agrees.
    let mut g = VwireController::new(ControllerConfig {
        solver: SolverChoice::Grid(GridConfig::default()),
        ..ControllerConfig::default()
    })
    .unwrap();
    let m = meas(40.0, 25.0, 130.0, 30.0);
    let b = g.on_period(Instant::ZERO, &m).unwrap();
    assert!((b.flows[0].airtime - 0.8).abs() < 1e-5, "{b:?}");
}

// ---------------------------------------------------------------- forest and features

/// Two trees over 2 features and 3 classes, small enough to evaluate by hand.
const TWO_TREES: &str = "\
# hand-built
lasthop-forest 1
features 2
classes 3 a b c
trees 2
tree 5
s 0 0.5 1 2
l 1 0 0
s 1 10 3 4
l 0 1 0
l 0 0.25 0.75
tree 3
s 1 3.5 1 2
l 0.5 0.5 0
l 0 0 1
end
";

#[test]
fn hand_built_forest_evaluates_by_hand() {
    let f = Forest::parse(TWO_TREES).unwrap();
    assert_eq!((f.n_features(), f.n_trees(), f.n_nodes()), (2, 2, 8));
    assert_eq!(f.classes(), ["a", "b", "c"]);
    // x = (0.2, 1): tree 1 → a (1,0,0), tree 2 → (0.5,0.5,0): mean (0.75,0.25,0) → a.
    assert_eq!(f.predict_proba(&[0.2, 1.0]), vec![0.75, 0.25, 0.0]);
    assert_eq!(f.predict(&[0.2, 1.0]), 0);
    // x = (0.5, 3.5): 0.5 <= 0.5 goes left (a); 3.5 <= 3.5 left: (0.5, 0.5, 0) → a.
    assert_eq!(f.predict(&[0.5, 3.5]), 0);
    // x = (0.9, 12): tree 1 → (0, .25, .75), tree 2 → c: mean (0, .125, .875) → c.
    assert_eq!(f.predict_proba(&[0.9, 12.0]), vec![0.0, 0.125, 0.875]);
    assert_eq!(f.predict(&[0.9, 12.0]), 2);
    // x = (0.9, 5): tree 1 → b, tree 2 → c: mean (0, .5, .5), a tie → the first, b.
    assert_eq!(f.predict(&[0.9, 5.0]), 1);
    assert_eq!(f.vote(&[0.9, 5.0]), 1);
    assert_eq!(f.vote(&[0.2, 5.0]), 0);
}

fn parse_err(text: &str) -> ForestError {
    Forest::parse(text).unwrap_err()
}

#[test]
fn bad_models_are_clean_errors() {
    use ForestErrorKind as K;
    let cases: Vec<(String, usize, K)> = vec![
        (String::new(), 0, K::UnexpectedEnd),
        ("hello 1\n".into(), 1, K::BadMagic),
        (
            TWO_TREES.replace("lasthop-forest 1", "lasthop-forest 2"),
            2,
            K::UnsupportedVersion(2),
        ),
        (
            TWO_TREES.replace("features 2", "features x"),
            3,
            K::BadField {
                field: "features",
                allowed: "1 ..= 65535",
            },
        ),
        (
            TWO_TREES.replace("classes 3 a b c", "classes 3 a b"),
            4,
            K::FieldCount {
                expected: 5,
                got: 4,
            },
        ),
        (
            TWO_TREES.replace("s 0 0.5 1 2", "s 2 0.5 1 2"),
            7,
            K::FeatureOutOfRange {
                feature: 2,
                features: 2,
            },
        ),
        (
            TWO_TREES.replace("s 0 0.5 1 2", "s 0 0.5 1 5"),
            7,
            K::ChildOutOfRange { child: 5, nodes: 5 },
        ),
        (
            TWO_TREES.replace("s 1 10 3 4", "s 1 10 3 2"),
            9,
            K::ChildOutOfRange { child: 2, nodes: 5 },
        ),
        (
            TWO_TREES.replace("s 0 0.5 1 2", "s 0 NaN 1 2"),
            7,
            K::BadField {
                field: "threshold",
                allowed: "a finite number",
            },
        ),
        (
            TWO_TREES.replace("l 1 0 0", "l 1 0"),
            8,
            K::FieldCount {
                expected: 4,
                got: 3,
            },
        ),
        (
            TWO_TREES.replace("l 1 0 0", "l 1 -1 0"),
            8,
            K::BadField {
                field: "leaf fraction",
                allowed: "finite and >= 0",
            },
        ),
        (
            TWO_TREES.replace("l 1 0 0", "x 1 0 0"),
            8,
            K::Expected("s` or `l"),
        ),
        (
            TWO_TREES.replace("trees 2", "trees 3"),
            16,
            K::Expected("tree"),
        ),
        (TWO_TREES.replace("end\n", ""), 0, K::UnexpectedEnd),
        (alloc::format!("{TWO_TREES}l 1 0 0\n"), 17, K::TrailingData),
    ];
    for (text, line, kind) in cases {
        let e = parse_err(&text);
        assert_eq!((e.line, &e.kind), (line, &kind), "{e}");
        // The message names the line.
        assert!(alloc::format!("{e}").contains("line"));
    }
    // Truncating the shipped model anywhere gives an error, never a panic.
    for cut in (0..SHIPPED_MODEL.len()).step_by(997) {
        assert!(Forest::parse(&SHIPPED_MODEL[..cut]).is_err());
    }
}

/// (label, device, now_ns, packets (t_ns, size), features computed by the trainer).
type Trace = (usize, u8, u64, Vec<(u64, u32)>, [f64; N_FEATURES]);

struct Fixture {
    /// (label, scikit-learn prediction, features as f32).
    rows: Vec<(usize, usize, [f32; N_FEATURES])>,
    traces: Vec<Trace>,
}

fn fixture() -> Fixture {
    let text = include_str!("model/fixture-v1.txt");
    let mut fx = Fixture {
        rows: Vec::new(),
        traces: Vec::new(),
    };
    let mut lines = text.lines().filter(|l| !l.starts_with('#'));
    let num = |s: &str| s.parse::<f64>().unwrap();
    while let Some(l) = lines.next() {
        let f: Vec<&str> = l.split_whitespace().collect();
        match f[0] {
            "features" => assert_eq!(f[1..], FEATURE_NAMES),
            "row" => {
                let mut x = [0f32; N_FEATURES];
                for (k, s) in f[3..].iter().enumerate() {
                    x[k] = num(s) as f32;
                }
                fx.rows
                    .push((f[1].parse().unwrap(), f[2].parse().unwrap(), x));
            }
            "trace" => {
                let n: usize = f[4].parse().unwrap();
                let pk = (0..n)
                    .map(|_| {
                        let p: Vec<&str> = lines.next().unwrap().split_whitespace().collect();
                        (p[0].parse().unwrap(), p[1].parse().unwrap())
                    })
                    .collect();
                let feat: Vec<f64> = lines
                    .next()
                    .unwrap()
                    .split_whitespace()
                    .skip(1)
                    .map(num)
                    .collect();
                fx.traces.push((
                    f[1].parse().unwrap(),
                    f[2].parse().unwrap(),
                    f[3].parse().unwrap(),
                    pk,
                    feat.try_into().unwrap(),
                ));
            }
            other => panic!("fixture: unknown line {other}"),
        }
    }
    fx
}

#[test]
fn shipped_model_classifies_the_fixture_like_sklearn() {
    let f = Forest::shipped();
    assert_eq!(f.n_features(), N_FEATURES);
    let names: Vec<&str> = AppClass::ALL.iter().map(|c| c.name()).collect();
    assert_eq!(f.classes(), names.as_slice());
    let fx = fixture();
    assert!(fx.rows.len() >= 200);
    let (mut correct, mut agree) = (0, 0);
    for (label, sk, x) in &fx.rows {
        let p = f.predict(x);
        correct += (p == *label) as usize;
        agree += (p == *sk) as usize;
    }
    let acc = correct as f64 / fx.rows.len() as f64;
    std::println!(
        "vwire shipped forest: {}/{} correct ({acc:.3}), {agree} agree with scikit-learn",
        correct,
        fx.rows.len()
    );
    assert_eq!(
        agree,
        fx.rows.len(),
        "Rust and scikit-learn predictions differ"
    );
    assert!(acc >= 0.95, "accuracy {acc}");
}

#[test]
fn feature_window_reproduces_the_trainer_features() {
    let fx = fixture();
    assert!(fx.traces.len() >= 3);
    let f = Forest::shipped();
    for (label, device, now, pk, want) in &fx.traces {
        let mut w = FeatureWindow::new(FeatureConfig::default()).unwrap();
        // A packet before the window and one after `now` must not count.
        w.on_packet(Instant::from_nanos(now - 10_000_000_000), 1500);
        for &(t, s) in pk {
            w.on_packet(Instant::from_nanos(t), s);
        }
        let dev = match device {
            0 => DeviceType::Unknown,
            1 => DeviceType::Phone,
            2 => DeviceType::Laptop,
            _ => DeviceType::Tv,
        };
        let got = w.features(Instant::from_nanos(*now), dev);
        let arr = [
            got.size_mean,
            got.size_std,
            got.iat_mean,
            got.iat_std,
            got.rate_bps,
            got.burstiness,
            got.idle_fraction,
            got.small_fraction,
            got.large_fraction,
            got.device as u8 as f64,
        ];
        for k in 0..N_FEATURES {
            assert!(
                (arr[k] - want[k]).abs() <= 1e-12 * want[k].abs().max(1e-9),
                "class {label} feature {}: {} vs {}",
                FEATURE_NAMES[k],
                arr[k],
                want[k]
            );
        }
        assert_eq!(w.len(), pk.len());
        assert!(f.predict(&got.to_array()) < AppClass::ALL.len());
    }
}

#[test]
fn feature_window_basics() {
    let mut w = FeatureWindow::new(FeatureConfig::default()).unwrap();
    let empty = w.features(Instant::from_nanos(20_000_000_000), DeviceType::Tv);
    assert_eq!(empty.idle_fraction, 1.0);
    assert_eq!(empty.to_array()[9], 3.0);
    // 100-byte packets every 20 ms for 10 s: 40 kb/s, no variation, no idle bins.
    for k in 1..=500u64 {
        w.on_packet(Instant::from_nanos(10_000_000_000 + k * 20_000_000), 100);
    }
    let f = w.features(Instant::from_nanos(20_000_000_000), DeviceType::Phone);
    assert_eq!(f.size_mean, 100.0);
    assert_eq!(f.size_std, 0.0);
    assert!((f.iat_mean - 0.02).abs() < 1e-12 && f.iat_std < 1e-12);
    assert!((f.rate_bps - 40_000.0).abs() < 1e-6);
    // Bins hold 5 packets each except the first (4) and the last (6): (now − W, now] is cut
    // at bin boundaries.
    assert!(f.burstiness < 0.05 && f.idle_fraction == 0.0, "{f:?}");
    assert_eq!((f.small_fraction, f.large_fraction), (1.0, 0.0));
    // 5 s later half the packets have left the window.
    let g = w.features(Instant::from_nanos(25_000_000_000), DeviceType::Phone);
    assert_eq!(w.len(), 250);
    // Packets in (15 s, 20 s] fill bins 0..=50 (the one at 20 s opens bin 50): 49 idle.
    assert!((g.idle_fraction - 0.49).abs() < 1e-12, "{g:?}");
    let bad = FeatureConfig {
        bin: Duration::from_millis(300),
        ..FeatureConfig::default()
    };
    assert_eq!(FeatureWindow::new(bad).unwrap_err().field, "window");
    // Default utilities per class are valid; the 4K ladder tops out at the paper's 32 Mb/s → 10.
    for c in AppClass::ALL {
        c.default_utility().validate().unwrap();
        assert_eq!(AppClass::from_index(c as usize), Some(c));
    }
    assert_eq!(AppClass::Video4k.default_utility().value(32e6), 10.0);
}
