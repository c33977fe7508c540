//! Property tests of the Virtual Wires deciders in `lasthop_algo::control::vwire`, through
//! their public API: the airtime optimizer (both solvers), the token-bucket scheduler, the
//! bottleneck detector, the flow-feature window and the forest model parser. Checked: budgets
//! (Σ a_i ≤ U, a_i ≥ 0), the reported utility equals the objective of the allocation, the exact
//! solver is never worse than the grid, tokens within ±depth, work conservation, finite
//! features, no panic on any model text, and determinism.

use lasthop_algo::control::vwire::{
    solve_exact, solve_grid, BottleneckConfig, BottleneckDetector, DeviceType, FeatureConfig,
    FeatureWindow, Flow, Forest, GridConfig, Problem, SchedulerConfig, TokenScheduler, Utility,
};
use lasthop_core::{Duration, Instant};
use proptest::prelude::*;

mod common;
use common::cases;

fn utility() -> impl Strategy<Value = Utility> {
    prop_oneof![
        prop::collection::vec((1e5f64..1e8, 0.1f64..20.0), 1..4).prop_map(|mut v| {
            // A ladder: rates and utilities increasing.
            v.sort_by(|a, b| a.0.total_cmp(&b.0));
            let mut acc = 0.0;
            let mut last_rate = 0.0;
            let steps: Vec<(f64, f64)> = v
                .into_iter()
                .filter_map(|(r, u)| {
                    if r <= last_rate {
                        return None;
                    }
                    last_rate = r;
                    acc += u;
                    Some((r, acc))
                })
                .collect();
            Utility::ladder(&steps)
        }),
        (0.01f64..5.0).prop_map(Utility::log),
        (1e5f64..5e7, 0.0f64..0.5, 0.1f64..20.0).prop_map(|(r, h, u)| Utility::fixed_rate(r, h, u)),
    ]
}

fn problem_parts() -> impl Strategy<Value = (Vec<(f64, f64, Utility)>, f64)> {
    (prop::collection::vec((1e6f64..1e9, 0.0f64..5e8, utility()), 1..5), 0.01f64..=1.0)
}

proptest! {
    #![proptest_config(cases(128))]

    #[test]
    fn optimizer_budget_and_optimality((parts, airtime) in problem_parts()) {
        let flows: Vec<Flow<'_>> = parts.iter().map(|(l, g, u)| Flow { link_rate_bps: *l, goodput_bps: *g, utility: u }).collect();
        let p = Problem { flows, airtime };
        if p.validate().is_err() {
            return Ok(());
        }
        let exact = solve_exact(&p).map_err(|e| TestCaseError::fail(format!("{e:?}")))?;
        let grid = solve_grid(&p, &GridConfig::default());
        for s in std::iter::once(&exact).chain(grid.as_ref().ok()) {
            prop_assert_eq!(s.airtime.len(), p.flows.len());
            prop_assert!(s.airtime.iter().all(|a| a.is_finite() && *a >= 0.0), "airtime {:?}", s.airtime);
            let sum: f64 = s.airtime.iter().sum();
            prop_assert!(sum <= p.airtime, "Σ a = {} > U = {}", sum, p.airtime);
            prop_assert!(s.utility.is_finite());
            prop_assert!((s.utility - p.objective(&s.airtime)).abs() <= 1e-9 * s.utility.abs().max(1.0));
            for (i, f) in p.flows.iter().enumerate() {
                prop_assert!((s.rate_bps[i] - s.airtime[i] * f.link_rate_bps).abs() <= 1e-6 * s.rate_bps[i].abs().max(1.0));
            }
        }
        if let Ok(g) = &grid {
            prop_assert!(exact.utility >= g.utility - 1e-6 * g.utility.abs().max(1.0),
                "exact {} worse than grid {}", exact.utility, g.utility);
        }
        // Determinism.
        prop_assert_eq!(&solve_exact(&p).unwrap(), &exact);
    }
}

#[derive(Clone, Debug)]
enum SOp {
    SetRates(Vec<f64>),
    SetManaged(bool),
    Next(Vec<u64>),
    Sent { class: u8, bytes: u32 },
    MaySend(u8),
    Advance(u64),
}

fn s_op(classes: usize) -> impl Strategy<Value = SOp> {
    let c = classes as u8;
    prop_oneof![
        1 => prop::collection::vec(prop_oneof![0.0f64..1e9, Just(-1.0), Just(f64::NAN), Just(f64::INFINITY)], 0..=classes + 1).prop_map(SOp::SetRates),
        1 => any::<bool>().prop_map(SOp::SetManaged),
        4 => prop::collection::vec(prop_oneof![Just(0u64), 1u64..100_000], 0..=classes + 1).prop_map(SOp::Next),
        4 => (0..c, 0u32..65_000).prop_map(|(class, bytes)| SOp::Sent { class, bytes }),
        1 => (0..c).prop_map(SOp::MaySend),
        2 => prop_oneof![0u64..10_000_000, Just(100_000_000_000u64)].prop_map(SOp::Advance),
    ]
}

fn s_case() -> impl Strategy<Value = (SchedulerConfig, Vec<SOp>)> {
    (1usize..6, 1u64..500_000_000, 1u64..100_000, any::<bool>()).prop_flat_map(|(classes, d, m, wc)| {
        let cfg = SchedulerConfig { classes, depth: Duration(d), min_depth_bytes: m, work_conserving: wc };
        (Just(cfg), prop::collection::vec(s_op(classes), 0..200))
    })
}

fn s_drive(cfg: SchedulerConfig, ops: &[SOp]) -> Result<Vec<Option<usize>>, TestCaseError> {
    let mut s = TokenScheduler::new(cfg).map_err(|e| TestCaseError::fail(e.to_string()))?;
    let mut now = Instant(0);
    let mut out = Vec::new();
    let mut sends = 0u64;
    for op in ops {
        match op {
            SOp::SetRates(r) => s.set_rates(now, r),
            SOp::SetManaged(m) => s.set_managed(now, *m),
            SOp::Next(b) => {
                let c = s.next_class(now, b);
                let n = cfg.classes.min(b.len());
                if let Some(c) = c {
                    prop_assert!(c < n && b[c] > 0, "picked class {} without backlog", c);
                } else if cfg.work_conserving || !s.is_managed() {
                    prop_assert!(b.iter().take(n).all(|&x| x == 0), "work-conserving scheduler idles with backlog");
                }
                out.push(c);
            }
            SOp::Sent { class, bytes } => {
                s.on_sent(now, *class as usize, *bytes as u64);
                sends += 1;
            }
            SOp::MaySend(c) => {
                let m = s.may_send(now, *c as usize);
                prop_assert_eq!(m, !s.is_managed() || s.tokens(*c as usize) > 0.0);
                if let Some(t) = s.tokens_at(*c as usize) {
                    prop_assert!(t > s.clock(), "tokens_at not in the future");
                }
            }
            SOp::Advance(dt) => now = Instant(now.0 + dt),
        }
        if let Err(e) = s.invariants() {
            return Err(TestCaseError::fail(format!("invariants: {e}")));
        }
        let st = s.stats();
        prop_assert_eq!(st.token_sends + st.excess_sends + st.fifo_sends, sends);
    }
    Ok(out)
}

proptest! {
    #![proptest_config(cases(256))]

    #[test]
    fn scheduler_invariants((cfg, ops) in s_case()) {
        let a = s_drive(cfg, &ops)?;
        prop_assert_eq!(a, s_drive(cfg, &ops)?);
    }

    #[test]
    fn bottleneck_and_features(samples in prop::collection::vec((0u64..2_000_000_000, prop_oneof![0u64..1_000_000, Just(u64::MAX)], 0u32..70_000), 0..200)) {
        let mut d = BottleneckDetector::new(BottleneckConfig::default()).unwrap();
        let mut w = FeatureWindow::new(FeatureConfig::default()).unwrap();
        let mut now = Instant(0);
        let mut last_tr = 0;
        for (dt, backlog, size) in samples {
            now = Instant(now.0 + dt / 100);
            let b = d.on_sample(now, backlog);
            prop_assert_eq!(b, d.is_bottleneck());
            prop_assert!(d.transitions() >= last_tr);
            last_tr = d.transitions();
            w.on_packet(now, size);
            if dt % 7 == 0 {
                w.expire(now);
                let f = w.features(now, DeviceType::default());
                prop_assert!(f.to_array().iter().all(|x| x.is_finite()), "features {:?}", f);
            }
        }
    }

    /// Any text is either a forest or an error, never a panic; a parsed forest predicts a
    /// class it names for any input.
    #[test]
    fn forest_parse_total(text in "[ -~\n]{0,400}", x in prop::collection::vec(-1e6f32..1e6, 0..20)) {
        if let Ok(f) = Forest::parse(&text) {
            if x.len() == f.n_features() {
                prop_assert!(f.predict(&x) < f.classes().len());
            }
        }
    }

    #[test]
    fn forest_parse_mutated_shipped(edits in prop::collection::vec((any::<prop::sample::Index>(), "[ -~\n]{0,3}"), 1..4)) {
        let mut text = lasthop_algo::control::vwire::SHIPPED_MODEL.to_string();
        for (i, s) in edits {
            let at = i.index(text.len() + 1);
            let at = (0..=at).rev().find(|&k| text.is_char_boundary(k)).unwrap_or(0);
            let end = (at + s.len()).min(text.len());
            let end = (end..=text.len()).find(|&k| text.is_char_boundary(k)).unwrap_or(text.len());
            text.replace_range(at..end, &s);
        }
        if let Ok(f) = Forest::parse(&text) {
            let x = vec![0.5f32; f.n_features()];
            prop_assert!(f.predict(&x) < f.classes().len());
        }
    }
}
