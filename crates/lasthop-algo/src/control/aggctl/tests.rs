//! Closed-loop checks: the allocator driving toy models of the AP, with and without the
//! estimator and the wire format in the loop.

use super::*;
use alloc::vec::Vec;
use lasthop_core::{BitRate, Controller, Duration, Instant};

const L_BITS: f64 = 12_000.0;
const DELTA_NS: u64 = 500_000_000;

fn rate_of(a: &mut RateAllocator, id: StationId, current: f64) -> f64 {
    let mut r = current;
    while let Some(u) = a.poll_output() {
        if u.station == id {
            r = u.rate.bps() as f64;
        }
    }
    r
}

/// Report μ with three decimals of precision (1000 frames).
fn report_of(seq: u32, mu: f64, rate: Option<BitRate>) -> AggReport {
    AggReport {
        seq,
        aggregates: 1000,
        packets: libm::round(mu * 1000.0) as u32,
        mean_rate: rate,
        mcs: None,
    }
}

/// Slots until |μ - N_ε| <= tol for good, or None.
fn settled_at(mus: &[f64], target: f64, tol: f64) -> Option<usize> {
    let last_bad = mus.iter().rposition(|m| (m - target).abs() > tol);
    match last_bad {
        None => Some(0),
        Some(i) if i + 1 < mus.len() => Some(i + 1),
        Some(_) => None,
    }
}

/// The toy plant: aggregation proportional to the send rate, saturating at N_max = 64.
fn linear_plant(x: f64, packets_per_bps: f64) -> f64 {
    (x * packets_per_bps).clamp(1.0, 64.0)
}

fn run_linear(initial: BitRate, slots: u32) -> Vec<f64> {
    run_linear_with(initial, slots, |_| 32.0 / 200e6).0 // N_ε reached at 200 Mb/s
}

/// One station on the linear plant whose packets-per-bit/s at update k is `c_at(k)`: the
/// aggregation of every update, and the rate at the end.
fn run_linear_with(initial: BitRate, slots: u32, c_at: impl Fn(u32) -> f64) -> (Vec<f64>, f64) {
    let cfg = AggctlConfig {
        initial_rate: initial,
        ..AggctlConfig::default()
    };
    let mut a = RateAllocator::new(cfg).unwrap();
    a.handle_input(
        Instant::ZERO,
        AllocatorInput::Join {
            station: 0,
            phy_rate: None,
        },
    );
    let mut x = rate_of(&mut a, 0, 0.0);
    let mut mus = Vec::new();
    for k in 0..slots {
        let mu = linear_plant(x, c_at(k));
        mus.push(mu);
        let now = Instant((k as u64 + 1) * DELTA_NS);
        a.handle_input(
            now,
            AllocatorInput::Report {
                station: 0,
                report: report_of(k, mu, None),
            },
        );
        x = rate_of(&mut a, 0, x);
        a.invariants().unwrap();
    }
    (mus, x)
}

#[test]
fn linear_plant_converges_from_below_and_from_saturation() {
    // From 10 Mb/s: error shrinks by 1 - K·c = 0.84 per Δ, within 0.5 after ~24 updates.
    let mus = run_linear(BitRate::from_mbps(10), 60);
    let k = settled_at(&mus, 32.0, 0.5).expect("converges from below");
    assert!(k <= 30, "settled after {k} updates: {mus:?}");
    // From 600 Mb/s the plant is saturated (μ = 64): -32 Mb/s per Δ until it is not.
    let mus = run_linear(BitRate::from_mbps(600), 60);
    assert_eq!(mus[0], 64.0);
    let k = settled_at(&mus, 32.0, 0.5).expect("converges from saturation");
    assert!(k <= 40, "settled after {k} updates: {mus:?}");
}

/// Round-robin AP with per-station queues: every round serves each station once with a
/// fixed overhead `o` (access, preamble, Block Ack) plus its payload airtime μ_i L / R_i, so
/// the round lasts T = n·o / (1 - Σ x_j/R_j) and station i's frames carry μ_i = x_i T / L.
fn round_robin_plant(x: &[f64], r: &[f64], o: f64) -> Vec<f64> {
    let load: f64 = x.iter().zip(r).map(|(x, r)| x / r).sum();
    if load >= 1.0 {
        return alloc::vec![64.0; x.len()];
    }
    let t = x.len() as f64 * o / (1.0 - load);
    x.iter()
        .map(|x| (x * t / L_BITS).clamp(1.0, 64.0))
        .collect()
}

#[test]
fn two_stations_converge_to_equal_airtime() {
    let r = [400e6, 200e6];
    let mut a = RateAllocator::new(AggctlConfig::default()).unwrap();
    for id in 0..2 {
        a.handle_input(
            Instant::ZERO,
            AllocatorInput::Join {
                station: id,
                phy_rate: None,
            },
        );
    }
    let mut x = [0.0; 2];
    for (id, xi) in x.iter_mut().enumerate() {
        *xi = a.station(id as StationId).unwrap().x;
    }
    let mut mus = Vec::new();
    for k in 0..40u32 {
        let mu = round_robin_plant(&x, &r, 150e-6);
        mus.push(mu[0]);
        let now = Instant((k as u64 + 1) * DELTA_NS);
        for id in 0..2 {
            let report = report_of(k, mu[id], Some(BitRate(r[id] as u64)));
            a.handle_input(
                now,
                AllocatorInput::Report {
                    station: id as StationId,
                    report,
                },
            );
        }
        while a.poll_output().is_some() {}
        for (id, xi) in x.iter_mut().enumerate() {
            *xi = a.station(id as StationId).unwrap().x;
        }
    }
    assert_eq!(a.reference_station(), Some(0));
    let k = settled_at(&mus, 32.0, 0.5).expect("i* converges to N_ε");
    assert!(k <= 20, "settled after {k} updates: {mus:?}");
    // rates 2:1 as the MCS rates, so equal airtime; the slower station sees half the
    // aggregation (μ_{N_i} = N_ε R_i / R_{i*})
    assert!((x[0] / x[1] - 2.0).abs() < 1e-9, "{x:?}");
    let mu = round_robin_plant(&x, &r, 150e-6);
    assert!((mu[1] - 16.0).abs() < 0.5, "{mu:?}");
    let t = [
        payload_airtime(mu[0], L_BITS, r[0]),
        payload_airtime(mu[1], L_BITS, r[1]),
    ];
    assert!((t[0] - t[1]).abs() < 1e-12, "{t:?}");
}

#[test]
fn capacity_halves_and_the_rate_follows() {
    // The Fig. 9 situation on the toy plant: at update 30 the channel halves its capacity
    // (2 → 1 spatial stream), so the same rate now yields twice the aggregation.
    let (mus, x) = run_linear_with(BitRate::from_mbps(200), 60, |k| {
        if k < 30 {
            32.0 / 200e6
        } else {
            32.0 / 100e6
        }
    });
    assert_eq!(mus[30], 64.0);
    let k = settled_at(&mus[30..], 32.0, 4.0).expect("re-converges");
    assert!(
        k <= 10,
        "back within 32 ± 4 after {k} updates (5 s): {:?}",
        &mus[30..]
    );
    assert!((x - 100e6).abs() < 2e6, "{x}");
}

/// One station, end to end: the plant turns the send rate into timestamped A-MPDU bursts, the
/// estimator measures them, the report crosses the wire format, the allocator answers.
#[test]
fn estimator_wire_and_allocator_in_the_loop() {
    let c = 32.0 / 200e6;
    let phy = BitRate::from_mbps(433);
    let mut est = AggregationEstimator::new(EstimatorConfig::default(), Instant::ZERO).unwrap();
    let mut a = RateAllocator::new(AggctlConfig::default()).unwrap();
    a.handle_input(
        Instant::ZERO,
        AllocatorInput::Join {
            station: 7,
            phy_rate: None,
        },
    );
    let mut x = rate_of(&mut a, 7, 0.0);
    let mut mus = Vec::new();
    let mut tf = 1_000u64; // next frame, ns
    let mut frames = 0u32;
    while mus.len() < 60 {
        frames += 1;
        assert!(frames < 100_000, "the loop must make progress");
        // deliver every report due before the next frame
        while let Some(to) = est.poll_timeout().filter(|to| *to <= Instant(tf)) {
            est.handle_timeout(to);
            while let Some(r) = est.poll_output() {
                let bytes = r.encode();
                let r = AggReport::decode(&bytes).unwrap();
                assert_eq!(r.mean_rate, Some(phy));
                mus.push(r.mean_mpdus().unwrap());
                a.handle_input(
                    to,
                    AllocatorInput::Report {
                        station: 7,
                        report: r,
                    },
                );
                x = rate_of(&mut a, 7, x);
            }
        }
        // one A-MPDU of n packets, handed up 1 µs apart
        let n = libm::round(linear_plant(x, c)) as u64;
        for j in 0..n {
            est.handle_input(
                Instant(tf + j * 1_000),
                RxPacket {
                    ampdu_ref: None,
                    rate: Some(phy),
                    mcs: Some(9),
                },
            );
        }
        est.invariants().unwrap();
        // the AP sends a frame once n packets have arrived at rate x
        tf += Duration::from_secs_f64(n as f64 * L_BITS / x).as_nanos();
    }
    assert_eq!(est.stats().reordered, 0);
    let k = settled_at(&mus, 32.0, 1.0).expect("converges");
    assert!(k <= 30, "settled after {k} reports: {mus:?}");
    assert!((x - 200e6).abs() < 10e6, "{x}");
}
