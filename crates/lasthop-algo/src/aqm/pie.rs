//! PIE, "Proportional Integral Controller Enhanced", RFC 8033.
//!
//! Implements, from the RFC text:
//! * §4.1 Random Dropping: on arrival a packet is dropped with probability `p`, except that
//!   there is no early drop while burst allowance remains (§4.4), when `qdelay_old < target/2`
//!   and `p < 20 %`, or when at most two mean-sized packets (`2 * mean_pkt_size` bytes) are
//!   queued. Arrivals to a full queue (`limit_packets`) are tail-dropped.
//! * §4.2 Drop Probability Calculation, every `t_update`:
//!   `p += alpha * (qdelay - target) + beta * (qdelay - qdelay_old)` (alpha, beta in Hz, delays
//!   in seconds), with the adjustment scaled by the auto-tuning table (÷2048 when p < 0.0001 %,
//!   ÷512 < 0.001 %, ÷128 < 0.01 %, ÷32 < 0.1 %, ÷8 < 1 %, ÷2 < 10 %, else ×1), the decay
//!   `p *= 0.98` when both `qdelay` and `qdelay_old` are zero, and p clamped to [0, 1].
//! * §5.5 Cap Drop Adjustment: once `p >= 10 %` a single increase is capped at 2 %.
//! * §4.3 Latency Calculation, one of its two options ([`PieEstimator`]):
//!   - timestamps (the default): `qdelay` at an update is the sojourn so far of the packet at
//!     the head of the queue (0 when empty), i.e. the delay the queue is currently imposing;
//!   - the departure rate (§5.2, Little's law): `qdelay = backlog / average dequeue rate`,
//!     measured as Linux 3.x net/sched/sch_pie.c did (`pie_process_dequeue` /
//!     `calculate_probability`, sch_pie's only estimator from Linux 3.14 until 5.5; module
//!     [`dq_rate`]).
//!     With it the other parts of that code that hang on the estimate apply too: the burst
//!     allowance is spent by the length of each completed measurement cycle rather than by
//!     `t_update` per update; the calm-queue reset below also forgets the rate estimate, and
//!     only happens once there is one; and the decay is skipped while the estimate reads zero
//!     over a non-empty queue (no rate measured yet, or less than a clock tick's worth queued).
//! * §4.4 Burst Tolerance: `burst_allowance` starts at `max_burst`, shrinks by `t_update` per
//!   update, and is reset to `max_burst` when `p == 0` and both `qdelay` and `qdelay_old` are
//!   below `target / 2`. No early drop while it is positive.
//! * §5.4 De-randomization: optional, off by default (`derandomize`); when on, the
//!   accumulated probability gates drops (`< 0.85`: never, `>= 8.5`: always).
//!
//! * §5.1 ECN: with `ecn` (off by default, as Linux `pie`), an ECN-capable packet that early
//!   drop picks is marked CE and queued instead while the drop probability is at most
//!   `mark_ecn_th` (10 %); above it, or for a Not-ECT packet, it is dropped (Linux
//!   `pie_qdisc_enqueue`).
//!
//! Not implemented: §5.3 turning PIE active/inactive (PIE is always active). Where Linux 3.x's control law differs from the RFC's
//! it is not modelled (the departure-rate option changes the estimate, not the law): a
//! three-step scale (÷8 below p = 1 %, ÷2 below 10 %) instead of the table above, with alpha and
//! beta kept as integer steps of p per 64 ns tick (16·alpha · ⌊(2^32 − 1) / 15 625 000⌋ shifted
//! right by 7, 5 or 4: alpha = 1/8 acts as 0.93, 0.99 and 0.99 of itself); an extra 2 % per update
//! while `qdelay` exceeds 250 ms; `backlog < 2 × MTU` for the small-queue check; the first update
//! 500 ms after the qdisc is set up; and the defaults target 20 ms, `t_update` 30 ms, burst
//! allowance 100 ms.
//!
//! Sans-IO timer: the periodic update is exposed as [`Pie::poll_timeout`] /
//! [`Pie::handle_timeout`]; every enqueue and dequeue first runs any updates that fell due
//! (each evaluated at its own due instant), so a host that never drives the timer gets the
//! same behaviour. Both estimates depend only on the queue's contents (the head packet, the
//! backlog) and on what happened at enqueues and dequeues, so this lazy evaluation is exact.

pub mod dq_rate;

use super::{mark_ce, Qdisc, QdiscStats, QueuedPacket};
use crate::aqm::codel::Stamped;
use alloc::collections::VecDeque;
use dq_rate::DqRate;
use lasthop_core::{Duration, Instant, Rng};

/// How PIE estimates the queueing delay (RFC 8033 §4.3).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum PieEstimator {
    /// The head packet's sojourn so far (timestamps).
    #[default]
    Timestamp,
    /// Backlog over the measured departure rate (§5.2), as Linux 3.x's sch_pie ([`dq_rate`]).
    DequeueRate,
}

/// PIE parameters (defaults from RFC 8033 §4.2 and §4.4).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct PieConfig {
    /// QDELAY_REF, the target queueing delay. Default 15 ms.
    pub target: Duration,
    /// T_UPDATE, the drop-probability update period. Default 15 ms.
    pub t_update: Duration,
    /// alpha in Hz. Default 1/8.
    pub alpha: f64,
    /// beta in Hz. Default 1.25.
    pub beta: f64,
    /// MAX_BURST. Default 150 ms.
    pub max_burst: Duration,
    /// MEAN_PKTSIZE for the "fewer than two packets" safeguard of §4.1. Default 1500.
    pub mean_pkt_size: u32,
    /// Tail-drop packet limit. Default 1000.
    pub limit_packets: usize,
    /// §5.4 de-randomization (optional). Default off.
    pub derandomize: bool,
    /// Seed of the random early drop stream.
    pub seed: u64,
    /// §4.3 queueing-delay estimate. Default timestamps.
    pub estimator: PieEstimator,
    /// §5.1: mark ECN-capable packets instead of early-dropping them. Default off.
    pub ecn: bool,
    /// §5.1 `mark_ecn_th`: the drop probability above which ECN-capable packets are dropped too.
    /// Default 0.1.
    pub mark_ecn_th: f64,
}

impl Default for PieConfig {
    fn default() -> Self {
        PieConfig {
            target: Duration::from_millis(15),
            t_update: Duration::from_millis(15),
            alpha: 0.125,
            beta: 1.25,
            max_burst: Duration::from_millis(150),
            mean_pkt_size: 1500,
            limit_packets: 1000,
            derandomize: false,
            seed: 0,
            estimator: PieEstimator::Timestamp,
            ecn: false,
            mark_ecn_th: 0.1,
        }
    }
}

/// PIE state (RFC 8033 Appendix A variables).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct PieVars {
    /// Drop probability p.
    pub drop_prob: f64,
    /// Delay estimate at the previous update.
    pub qdelay_old: Duration,
    /// Delay estimate at the latest update.
    pub qdelay: Duration,
    pub burst_allowance: Duration,
    /// §5.4 accumulated probability.
    pub accu_prob: f64,
    /// Due time of the next periodic update (`None` before the first event).
    pub next_update: Option<Instant>,
    /// The departure-rate estimator's state (unused with timestamps).
    pub dq_rate: DqRate,
}

#[derive(Clone, Debug)]
pub struct Pie<P> {
    params: PieConfig,
    q: VecDeque<Stamped<P>>,
    bytes: u64,
    vars: PieVars,
    rng: Rng,
    stats: QdiscStats,
    early_drops: u64,
    /// Early drops turned into CE marks (§5.1).
    ecn_marks: u64,
    updates: u64,
}

/// §4.2 auto-tuning: the divisor applied to the adjustment for the current p.
pub fn autotune_divisor(p: f64) -> f64 {
    if p < 0.000001 {
        2048.0
    } else if p < 0.00001 {
        512.0
    } else if p < 0.0001 {
        128.0
    } else if p < 0.001 {
        32.0
    } else if p < 0.01 {
        8.0
    } else if p < 0.1 {
        2.0
    } else {
        1.0
    }
}

impl<P: QueuedPacket> Pie<P> {
    pub fn new(params: PieConfig) -> Self {
        Pie {
            params,
            q: VecDeque::new(),
            bytes: 0,
            vars: PieVars {
                drop_prob: 0.0,
                qdelay_old: Duration::ZERO,
                qdelay: Duration::ZERO,
                burst_allowance: params.max_burst,
                accu_prob: 0.0,
                next_update: None,
                dq_rate: DqRate::default(),
            },
            rng: Rng::from_seed(params.seed),
            stats: QdiscStats::default(),
            early_drops: 0,
            ecn_marks: 0,
            updates: 0,
        }
    }
    pub fn params(&self) -> &PieConfig {
        &self.params
    }
    pub fn vars(&self) -> &PieVars {
        &self.vars
    }
    pub fn drop_prob(&self) -> f64 {
        self.vars.drop_prob
    }
    /// Random early drops (subset of `stats().dropped`; the rest are tail drops).
    pub fn early_drops(&self) -> u64 {
        self.early_drops
    }
    /// Packets marked CE instead of early-dropped (§5.1).
    pub fn ecn_marks(&self) -> u64 {
        self.ecn_marks
    }
    /// Number of periodic updates run so far.
    pub fn updates(&self) -> u64 {
        self.updates
    }

    /// When the next periodic update is due (`None` until the first packet arrives).
    pub fn poll_timeout(&self) -> Option<Instant> {
        self.vars.next_update
    }

    /// Run every periodic update due at or before `now`.
    pub fn handle_timeout(&mut self, now: Instant) {
        let t_update = self.params.t_update.max(Duration(1));
        let Some(mut due) = self.vars.next_update else {
            return;
        };
        while due <= now {
            // Idle fixed point: nothing would change, so skip the remaining updates at once.
            // (With the rate estimator updates spend no burst allowance, and the next calm
            // update would forget an estimate.)
            let v = &self.vars;
            let settled = match self.params.estimator {
                PieEstimator::Timestamp => v.burst_allowance == self.params.max_burst,
                PieEstimator::DequeueRate => !v.dq_rate.has_estimate(),
            };
            if self.q.is_empty() && v.drop_prob == 0.0 && v.qdelay_old.is_zero() && settled {
                let k = (now - due).as_nanos() / t_update.as_nanos() + 1;
                self.updates += k;
                due += t_update * k;
                break;
            }
            self.update(due);
            due += t_update;
        }
        self.vars.next_update = Some(due);
    }

    /// Start the update clock at the first event; catch up with due updates.
    fn catch_up(&mut self, now: Instant) {
        if self.vars.next_update.is_none() {
            self.vars.next_update = Some(now + self.params.t_update.max(Duration(1)));
        }
        self.handle_timeout(now);
    }

    /// One periodic update at instant `t` (RFC 8033 §4.2, §4.4, §5.5).
    fn update(&mut self, t: Instant) {
        self.updates += 1;
        let c = &self.params;
        let v = &mut self.vars;
        let by_rate = c.estimator == PieEstimator::DequeueRate;
        // §4.3: the head packet's sojourn at `t`, or the backlog over the departure rate.
        let qdelay = if by_rate {
            v.dq_rate.qdelay(self.bytes)
        } else {
            self.q.front().map_or(Duration::ZERO, |s| t.saturating_since(s.t))
        };
        let cur = qdelay.as_secs_f64();
        let old = v.qdelay_old.as_secs_f64();
        let tgt = c.target.as_secs_f64();
        // §4.2 control law, with the auto-tuning scale chosen by the current p.
        let mut adj = c.alpha * (cur - tgt) + c.beta * (cur - old);
        adj /= autotune_divisor(v.drop_prob);
        // §5.5: cap a single increase at 2 % once p >= 10 %.
        if v.drop_prob >= 0.1 && adj > 0.02 {
            adj = 0.02;
        }
        let mut p = v.drop_prob + adj;
        // §4.2: exponential decay when the queue has been idle for two updates (Linux's rate
        // estimate reading zero over a backlog is not idle: `update_prob`).
        let unmeasured = by_rate && qdelay.is_zero() && self.bytes != 0;
        if qdelay.is_zero() && v.qdelay_old.is_zero() && !unmeasured {
            p *= 0.98;
        }
        v.drop_prob = p.clamp(0.0, 1.0);
        // §4.4 burst allowance: shrink by t_update (by the rate's measurement cycles instead,
        // in `dequeue`), reset when the queue is calm; Linux's reset forgets the rate too,
        // once it has one (`pie_vars_init`).
        let calm = v.drop_prob == 0.0 && qdelay < c.target / 2 && v.qdelay_old < c.target / 2;
        if !by_rate {
            v.burst_allowance -= c.t_update; // saturates at 0
            if calm {
                v.burst_allowance = c.max_burst;
            }
        } else if calm && v.dq_rate.has_estimate() {
            v.dq_rate.reset();
            v.burst_allowance = c.max_burst;
        }
        v.qdelay_old = qdelay;
        v.qdelay = qdelay;
    }

    /// §4.1 `drop_early`: decide whether the arriving packet is randomly dropped.
    fn drop_early(&mut self) -> bool {
        let c = &self.params;
        let v = &mut self.vars;
        if !v.burst_allowance.is_zero() {
            return false;
        }
        // Work-conserving safeguards.
        if (v.qdelay_old < c.target / 2 && v.drop_prob < 0.2)
            || self.bytes <= 2 * c.mean_pkt_size as u64
        {
            return false;
        }
        if c.derandomize {
            // §5.4: accumulate p between drops; bound the spacing of drops.
            if v.drop_prob == 0.0 {
                v.accu_prob = 0.0;
            }
            v.accu_prob += v.drop_prob;
            if v.accu_prob < 0.85 {
                return false;
            }
            if v.accu_prob >= 8.5 {
                v.accu_prob = 0.0;
                return true;
            }
        }
        let drop = self.rng.bernoulli(v.drop_prob);
        if drop {
            v.accu_prob = 0.0;
        }
        drop
    }
}

impl<P: QueuedPacket> Qdisc<P> for Pie<P> {
    fn enqueue(&mut self, now: Instant, mut pkt: P) -> Result<(), P> {
        self.catch_up(now);
        let len = pkt.len_bytes() as u64;
        self.stats.arrived += 1;
        self.stats.arrived_bytes += len;
        let mut early = self.drop_early();
        if early
            && self.params.ecn
            && self.vars.drop_prob <= self.params.mark_ecn_th
            && self.q.len() < self.params.limit_packets
            && mark_ce(&mut pkt)
        {
            early = false;
            self.ecn_marks += 1;
        }
        if early || self.q.len() >= self.params.limit_packets {
            if early {
                self.early_drops += 1;
            }
            self.stats.dropped += 1;
            self.stats.dropped_bytes += len;
            return Err(pkt);
        }
        self.bytes += len;
        self.q.push_back(Stamped { pkt, t: now });
        Ok(())
    }

    fn dequeue<F: FnMut(P)>(&mut self, now: Instant, _on_drop: F) -> Option<P> {
        self.catch_up(now);
        let s = self.q.pop_front()?;
        let len = s.pkt.len_bytes() as u64;
        self.bytes -= len;
        self.stats.dequeued += 1;
        self.stats.dequeued_bytes += len;
        if self.params.estimator == PieEstimator::DequeueRate {
            // Linux spends the burst allowance by each completed measurement cycle.
            if let Some(cycle) = self.vars.dq_rate.on_dequeue(now, s.pkt.len_bytes(), self.bytes) {
                self.vars.burst_allowance -= cycle;
            }
        }
        Some(s.pkt)
    }

    fn peek(&self) -> Option<P> {
        self.q.front().map(|s| s.pkt)
    }
    fn len_packets(&self) -> usize {
        self.q.len()
    }
    fn len_bytes(&self) -> u64 {
        self.bytes
    }
    fn stats(&self) -> QdiscStats {
        self.stats
    }
    fn invariants(&self) -> Result<(), &'static str> {
        super::conservation(&self.stats, self.q.len(), self.bytes)?;
        if self.q.len() > self.params.limit_packets {
            return Err("packet limit exceeded");
        }
        if !(0.0..=1.0).contains(&self.vars.drop_prob) {
            return Err("drop probability outside [0, 1]");
        }
        if self.vars.burst_allowance > self.params.max_burst {
            return Err("burst allowance above max_burst");
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ecn::Ecn;
    use crate::aqm::test_util::{random_ops, TP};

    const MS: u64 = 1_000_000;

    fn pkt(id: u64) -> TP {
        TP {
            len: 1000,
            flow: 0,
            id,
            ecn: Ecn::NotEct,
        }
    }

    #[test]
    fn random_ops_conserve() {
        let mut rng = Rng::from_seed(0x91E);
        let (mut early, mut tail, mut marks) = (0, 0, 0);
        for case in 0..60u64 {
            let cfg = PieConfig {
                ecn: case % 4 < 2,
                mark_ecn_th: if case % 4 == 0 { 1.0 } else { 0.1 },
                limit_packets: 1 + (case as usize % 30) * 9,
                target: Duration::from_millis(1 + case % 20),
                t_update: Duration::from_millis(1 + case % 16),
                max_burst: Duration::from_millis(case % 3 * 50),
                derandomize: case % 2 == 0,
                seed: case,
                estimator: if case % 3 == 0 { PieEstimator::DequeueRate } else { PieEstimator::Timestamp },
                ..Default::default()
            };
            let mut q = Pie::new(cfg);
            // Half the cases drive the timer, half rely on lazy updates only.
            let drive = case % 2 == 1;
            random_ops(&mut q, &mut rng, 3000, |q, now| {
                if drive {
                    q.handle_timeout(now);
                }
            });
            early += q.early_drops();
            tail += q.stats().dropped - q.early_drops();
            marks += q.ecn_marks();
        }
        assert!(marks > 100, "{marks}");
        assert!(early > 100 && tail > 100, "{early} {tail}");
    }

    /// A standing queue that grows (no dequeues): p rises per §4.2 with the auto-tuning scale.
    /// Expected values computed by hand: qdelay at update k is 15k ms (head enqueued at 0).
    #[test]
    fn update_equation_with_autotuning() {
        let mut q = Pie::new(PieConfig {
            limit_packets: 10_000,
            ..Default::default()
        });
        for i in 0..100 {
            q.enqueue(Instant::ZERO, pkt(i)).unwrap();
        }
        assert_eq!(q.poll_timeout(), Some(Instant(15 * MS)));
        // (qdelay, qdelay_old) in seconds and the table divisor for the p before the update:
        //  1: (0.015, 0)     adj = 0.125*0     + 1.25*0.015 = 0.01875   p=0        -> /2048
        //  2: (0.030, 0.015) adj = 0.125*0.015 + 0.01875    = 0.020625  p=9.16e-6  -> /512
        //  3: (0.045, 0.030) adj = 0.125*0.030 + 0.01875    = 0.0225    p=4.94e-5  -> /128
        //  4: (0.060, 0.045) adj = 0.125*0.045 + 0.01875    = 0.024375  p=2.25e-4  -> /32
        //  5: (0.075, 0.060) adj = 0.125*0.060 + 0.01875    = 0.02625   p=9.87e-4  -> /32
        //  6: (0.090, 0.075) adj = 0.125*0.075 + 0.01875    = 0.028125  p=1.81e-3  -> /8
        let steps = [
            (0.01875, 2048.0),
            (0.020625, 512.0),
            (0.0225, 128.0),
            (0.024375, 32.0),
            (0.02625, 32.0),
            (0.028125, 8.0),
        ];
        let mut p = 0.0f64;
        let hand: [f64; 6] = [
            9.155_273_437_5e-6,
            4.943_847_656_25e-5,
            2.252_197_265_625e-4,
            9.869_384_765_625e-4,
            1.807_250_976_562_5e-3,
            5.322_875_976_562_5e-3,
        ];
        for (k, &(adj, div)) in steps.iter().enumerate() {
            p += adj / div;
            assert!((p - hand[k]).abs() < 1e-15, "hand arithmetic {k}: {p}");
            q.handle_timeout(Instant((k as u64 + 1) * 15 * MS));
            let got = q.drop_prob();
            assert!(
                (got - hand[k]).abs() <= 1e-12 * hand[k].max(1e-9),
                "update {}: p={got}, want {}",
                k + 1,
                hand[k]
            );
        }
        assert_eq!(q.updates(), 6);
        // 6 updates consumed 90 ms of the 150 ms burst allowance.
        assert_eq!(q.vars().burst_allowance, Duration::from_millis(60));
    }

    /// Lazy updates (no timer) give exactly the same p as driving the timer.
    #[test]
    fn lazy_updates_match_timer() {
        for estimator in [PieEstimator::Timestamp, PieEstimator::DequeueRate] {
            let cfg = PieConfig {
                limit_packets: 10_000,
                seed: 5,
                estimator,
                ..Default::default()
            };
            let (mut a, mut b) = (Pie::new(cfg), Pie::new(cfg));
            let mut id = 0;
            for ms in 0..2000u64 {
                let now = Instant(ms * MS);
                while a.poll_timeout().is_some_and(|t| t <= now) {
                    let t = a.poll_timeout().unwrap();
                    a.handle_timeout(t);
                }
                for _ in 0..2 {
                    let ra = a.enqueue(now, pkt(id)).is_ok();
                    let rb = b.enqueue(now, pkt(id)).is_ok();
                    assert_eq!(ra, rb);
                    id += 1;
                }
                assert_eq!(a.dequeue(now, |_| {}), b.dequeue(now, |_| {}));
                assert_eq!(a.vars(), b.vars());
            }
            assert!(a.early_drops() > 0, "{estimator:?}");
        }
    }

    /// p decays once the queue empties: the §4.2 equation with qdelay = 0 plus the 0.98 decay.
    #[test]
    fn p_decays_when_queue_empties() {
        let mut q = Pie::new(PieConfig {
            limit_packets: 10_000,
            ..Default::default()
        });
        for i in 0..1000 {
            q.enqueue(Instant::ZERO, pkt(i)).unwrap();
        }
        q.handle_timeout(Instant(300 * MS)); // 20 updates of a growing queue
        let p0 = q.drop_prob();
        assert!(p0 > 0.05, "{p0}");
        // Empty the queue at 300 ms.
        while q.dequeue(Instant(300 * MS), |_| {}).is_some() {}
        let mut prev = p0;
        let mut prev_old = q.vars().qdelay_old.as_secs_f64();
        let mut t = 300 * MS;
        for k in 0..400 {
            t += 15 * MS;
            q.handle_timeout(Instant(t));
            let p = q.drop_prob();
            assert!(p < prev || prev == 0.0, "step {k}: {p} !< {prev}");
            // Hand check of the equation: qdelay = 0.
            let mut want =
                prev + (0.125 * (0.0 - 0.015) + 1.25 * (0.0 - prev_old)) / autotune_divisor(prev);
            if prev_old == 0.0 {
                want *= 0.98;
            }
            let want = want.clamp(0.0, 1.0);
            assert!((p - want).abs() < 1e-12, "step {k}: {p} vs {want}");
            prev = p;
            prev_old = 0.0;
        }
        assert_eq!(q.drop_prob(), 0.0);
        // Calm queue with p = 0: burst allowance restored.
        assert_eq!(q.vars().burst_allowance, q.params().max_burst);
    }

    /// Overload from t = 0: no early drop while the initial 150 ms burst allowance lasts.
    #[test]
    fn no_drops_during_burst_allowance() {
        let mut q = Pie::new(PieConfig {
            limit_packets: 100_000,
            seed: 9,
            ..Default::default()
        });
        let mut id = 0;
        let mut first_drop = None;
        for ms in 0..2000u64 {
            let now = Instant(ms * MS);
            for _ in 0..3 {
                if q.enqueue(now, pkt(id)).is_err() && first_drop.is_none() {
                    first_drop = Some(ms);
                }
                id += 1;
            }
            q.dequeue(now, |_| {});
        }
        let fd = first_drop.expect("PIE never dropped under overload");
        assert!(fd >= 150, "dropped at {fd} ms, inside the burst allowance");
        assert!(q.early_drops() > 100);
        assert_eq!(q.stats().dropped, q.early_drops());
    }

    /// Under load, arrivals are dropped with probability ~p (fixed seed, binomial bound).
    #[test]
    fn drops_with_probability_p() {
        let mut q = Pie::new(PieConfig {
            limit_packets: 1_000_000,
            seed: 77,
            ..Default::default()
        });
        let mut id = 0;
        // Build a standing queue until p is around 10-30 %.
        let mut ms = 0u64;
        while q.drop_prob() < 0.1 {
            let now = Instant(ms * MS);
            for _ in 0..3 {
                let _ = q.enqueue(now, pkt(id));
                id += 1;
            }
            q.dequeue(now, |_| {});
            ms += 1;
            assert!(ms < 100_000);
        }
        // Offer many packets at one instant (no update in between: p is fixed).
        let now = Instant(ms * MS);
        q.handle_timeout(now);
        let p = q.drop_prob();
        let before = q.early_drops();
        let n = 40_000u64;
        for _ in 0..n {
            let _ = q.enqueue(now, pkt(id));
            id += 1;
        }
        let drops = (q.early_drops() - before) as f64;
        let mean = n as f64 * p;
        let sd = libm::sqrt(n as f64 * p * (1.0 - p));
        assert!(
            (drops - mean).abs() < 4.0 * sd,
            "drops {drops}, expected {mean} ± {sd} (p={p})"
        );
    }

    /// §4.1 safeguard: no early drop with at most two mean-sized packets queued.
    #[test]
    fn no_drop_with_tiny_queue() {
        let mut q = Pie::new(PieConfig {
            max_burst: Duration::ZERO,
            ..Default::default()
        });
        q.vars.drop_prob = 0.9;
        q.vars.qdelay_old = Duration::from_millis(100);
        for i in 0..3 {
            q.enqueue(Instant::ZERO, pkt(i)).unwrap();
        }
        assert_eq!(q.early_drops(), 0);
    }

    // --- the departure-rate estimator (Linux 3.x sch_pie) ---

    const US: u64 = 1_000;

    fn by_rate(cfg: PieConfig) -> Pie<TP> {
        Pie::new(PieConfig { estimator: PieEstimator::DequeueRate, limit_packets: 100_000, ..cfg })
    }

    /// A standing queue of 1000 packets of 1000 bytes drained at 125 MB/s (one every 8 µs, a
    /// new one arriving for each): Little's law gives 8 ms, which is also the head packet's
    /// sojourn, so both estimators read 8 ms at the updates.
    #[test]
    fn dequeue_rate_qdelay_is_backlog_over_rate() {
        let mk = |estimator| {
            Pie::new(PieConfig { estimator, limit_packets: 100_000, max_burst: Duration::from_secs(10), ..Default::default() })
        };
        let (mut rate, mut stamp) = (mk(PieEstimator::DequeueRate), mk(PieEstimator::Timestamp));
        for q in [&mut rate, &mut stamp] {
            for i in 0..1000 {
                q.enqueue(Instant::ZERO, pkt(i)).unwrap();
            }
            for k in 1..=40_000u64 {
                let now = Instant(k * 8 * US);
                q.dequeue(now, |_| {}).unwrap();
                q.enqueue(now, pkt(1000 + k)).unwrap();
            }
        }
        assert_eq!(rate.updates(), stamp.updates());
        let want = 8e-3;
        let got = rate.vars().qdelay.as_secs_f64();
        // The average rate sits within Linux's 1/8-step truncation (0.4 %) above 125 MB/s.
        assert!(got <= want && got > want * 0.996, "rate estimate {got}");
        assert_eq!(rate.vars().qdelay, rate.vars().dq_rate.qdelay(1_000_000));
        let got = stamp.vars().qdelay.as_secs_f64();
        assert!((got - want).abs() < 8e-6, "timestamp estimate {got}");
    }

    /// Below QUEUE_THRESHOLD bytes there is no rate and so no delay: however long nine
    /// packets wait, p does not move, nor does the burst allowance; with timestamps it does.
    #[test]
    fn dequeue_rate_no_estimate_below_the_threshold() {
        let mut q = by_rate(PieConfig::default());
        let mut t = Pie::new(PieConfig { limit_packets: 100_000, ..Default::default() });
        for i in 0..9 {
            q.enqueue(Instant::ZERO, pkt(i)).unwrap();
            t.enqueue(Instant::ZERO, pkt(i)).unwrap();
        }
        q.handle_timeout(Instant(3_000 * MS));
        t.handle_timeout(Instant(3_000 * MS));
        assert_eq!((q.drop_prob(), q.vars().qdelay), (0.0, Duration::ZERO));
        assert_eq!(q.vars().burst_allowance, q.params().max_burst);
        assert!(!q.vars().dq_rate.has_estimate());
        assert!(t.drop_prob() > 0.1);
        assert_eq!(t.vars().burst_allowance, Duration::ZERO);
    }

    /// Linux's `update_prob`: while the estimate reads zero over a non-empty queue the control
    /// law still lowers p, but the 0.98 decay of an idle queue does not apply.
    #[test]
    fn dequeue_rate_no_decay_over_an_unmeasured_backlog() {
        let mut q = by_rate(PieConfig::default());
        q.enqueue(Instant::ZERO, pkt(0)).unwrap();
        q.vars.drop_prob = 0.5;
        q.handle_timeout(Instant(15 * MS));
        // p + alpha * (0 - target) + beta * (0 - 0), ×1 at p >= 10 %, no decay.
        let want = 0.5 + 0.125 * (0.0 - 0.015);
        assert!((q.drop_prob() - want).abs() < 1e-15, "{}", q.drop_prob());
        // The same with an empty queue decays.
        let mut e = by_rate(PieConfig::default());
        e.catch_up(Instant::ZERO);
        e.vars.drop_prob = 0.5;
        e.handle_timeout(Instant(15 * MS));
        assert!((e.drop_prob() - want * 0.98).abs() < 1e-15, "{}", e.drop_prob());
    }

    /// The burst allowance is spent by the length of each completed measurement cycle, not by
    /// t_update per update: 300 packets leaving one per ms close cycles at 9 ms (the first
    /// counts the departure that opened it) and every 10 ms after.
    #[test]
    fn dequeue_rate_burst_allowance_spent_by_cycles() {
        let mut q = by_rate(PieConfig::default());
        for i in 0..300 {
            q.enqueue(Instant::ZERO, pkt(i)).unwrap();
        }
        for k in 0..50u64 {
            q.dequeue(Instant(k * MS), |_| {}).unwrap();
        }
        // Cycles closed at 9, 19, 29, 39 and 49 ms: 49 ms spent of 150 (three updates ran).
        assert_eq!(q.updates(), 3);
        assert_eq!(q.vars().burst_allowance, Duration::from_millis(150 - 49));
        // 1000 bytes per ms: the first sample 10 000 B / 9 ms, then 10 000 B / 10 ms, in
        // Linux's unit (bytes per 64 ns × 256, truncated; 16.384 for 1 MB/s).
        let r = q.vars().dq_rate.rate_bytes_per_sec();
        assert!((0.95e6..1.2e6).contains(&r), "{r}");
    }

    /// A calm update (p = 0, both delays under target/2) restores the burst allowance and
    /// forgets the rate, which the next cycle measures afresh.
    #[test]
    fn dequeue_rate_calm_queue_forgets_the_rate() {
        let mut q = by_rate(PieConfig::default());
        for i in 0..20 {
            q.enqueue(Instant::ZERO, pkt(i)).unwrap();
        }
        for k in 1..=20u64 {
            q.dequeue(Instant(k * 8 * US), |_| {}).unwrap();
        }
        assert!(q.vars().dq_rate.has_estimate());
        assert!(q.vars().burst_allowance < q.params().max_burst);
        // The first update (15 ms) sees an empty queue: qdelay 0, p stays 0: calm.
        q.handle_timeout(Instant(15 * MS));
        assert_eq!(q.drop_prob(), 0.0);
        assert!(!q.vars().dq_rate.has_estimate());
        assert_eq!(q.vars().burst_allowance, q.params().max_burst);
        // Idle from here on: the fixed point skips the remaining updates.
        q.handle_timeout(Instant(1_000_000 * MS));
        assert_eq!(q.updates(), 1_000_000 / 15);
    }
}
