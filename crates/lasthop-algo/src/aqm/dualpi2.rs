//! DualPI2, the DualQ Coupled AQM of RFC 9332 ("Dual-Queue Coupled Active Queue Management
//! (AQM) for Low Latency, Low Loss, and Scalable Throughput (L4S)") with the PI2 base AQM of its
//! Appendix A, and the defaults of Linux's `sch_dualpi2` (net/sched/sch_dualpi2.c).
//!
//! Implements, from the RFC:
//! * §2.3 classification: a packet carrying the L4S identifier (ECT(1) or CE, RFC 9331 §4,
//!   [`Ecn::is_l4s`](crate::ecn::Ecn::is_l4s)) joins the L queue, any other (Not-ECT, ECT(0)) the
//!   C queue (Appendix A `dualpi2_enqueue`: "ecn(pkt) modulo 2 == 1"). Every packet is
//!   timestamped on arrival; queuing delay is measured as sojourn time.
//! * `dualpi2_enqueue`'s limit: an arrival to a full buffer is tail-dropped. The limit is Linux's
//!   packet count (`limit`, default 10 000) and, when `limit_bytes` is set, the RFC's own byte
//!   form `lq.byt() + cq.byt() + MTU > limit` (with the arriving packet's length when larger
//!   than the MTU, so the byte limit always holds).
//! * `dualpi2_update`, every `t_update` (§2.1 and Appendix A.1, A.2): the PI2 base probability
//!   `p' += alpha * (curq - target) + beta * (curq - prevq)` (alpha, beta in Hz, delays in
//!   seconds), `p'` clamped to [0, 1], then the coupling `p_CL = min(k * p', 1)` (§2.1, k = 2 as
//!   Appendix C recommends for equal RTTs) and the Classic probability `p_C = p'^2`. `curq` is
//!   A.2's `max(cq.time(), lq.time())`: the larger of the two head packets' sojourns, so that
//!   unresponsive L4S traffic alone still raises p' (Linux `calculate_probability` does the same).
//!   There is none of PIE's auto-tuning, burst allowance or decay: PI2 needs none.
//! * `laqm`, the native L4S AQM applied to the sojourn of the L packet leaving: Linux's step
//!   (every L4S packet whose sojourn exceeds `step_thresh`, 1 ms, is marked); with `ramp_range`
//!   set, the RFC's ramp instead: 0 up to `minTh` = `step_thresh`, `(qdelay - minTh) / range`
//!   above it, 1 from `maxTh = minTh + range` (the RFC's example uses 800 µs and 400 µs).
//!   A.2's `Th_len` ("suppress marking 1 pkt queue") is `th_len`: with `Some(bytes)` the native
//!   AQM applies only while the L queue, once the packet has left, holds more than that
//!   (`lq.len() > Th_len`, `lq.len()` being the backlog in bytes; the RFC's example is one
//!   packet, i.e. one MTU). Default `None`: always, as Linux's `min_qlen_step` 0.
//! * `dualpi2_dequeue` (A.1, with A.2's overload handling), decisions at dequeue:
//!   - L queue: `p_L = max(p'_L, p_CL)` (the native and the coupled probability); the packet is
//!     marked CE with probability p_L ([`mark_ce`]). Overload (§4.2.3, "drop on saturation"):
//!     once `p_CL >= p_Lmax` (= 1), the L packet is dropped with probability p_C (Classic drop),
//!     and the rest are marked with p_CL.
//!   - C queue: with probability p_C the packet is marked CE if ECN-capable, dropped if Not-ECT;
//!     above `p_Cmax = min(1/k^2, 1)` (overload) ECN is disabled and an ECN-capable packet is
//!     dropped too. Dropped packets go to `on_drop` and the scheduler picks again.
//! * Scheduler (`scheduler()` of A.1; §2.4 and §4.2.2: a conditional priority that lets L go
//!   first without starving C): the time-shifted FIFO. The L head leaves first unless the C
//!   head arrived more than `tshift` before it (equal times: L). Default `tshift` 30 ms,
//!   2 × `target`, as in ns-3's DualQ Coupled PI Square model.
//!
//! Linux's defaults, taken here: target 15 ms, `tupdate` 16 ms, alpha 0.16 Hz and beta 3.2 Hz
//! (Linux keeps 41/256 and 819/256 Hz in fixed point; the RFC's example derives 0.15 Hz and 3 Hz
//! from RTT_max = 100 ms with a 15 ms Tupdate), k = 2, a 1 ms step on sojourn time marking every
//! L4S packet above it, limit 10 000 packets, drop on overload, decisions at dequeue.
//!
//! Where Linux differs from the RFC pseudocode:
//! * scheduler: Linux serves the queues by a WRR on bytes ("classic protection", C weight 10 %,
//!   credit starting at `MTU * (wc - wl)`, reset when both queues are empty); offered as
//!   [`DualPi2Scheduler::Wrr`]. The default is the RFC's time-shifted FIFO.
//! * decisions: Linux rolls a random number per decision (p_C as two rolls of p'); the RFC's
//!   pseudocode uses `recur()`, a per-queue accumulator ("returns TRUE with a certain
//!   likelihood"). Default here: Bernoulli draws from the seeded [`Rng`] (the same probability);
//!   `derandomize` selects `recur()`.
//! * Linux never marks nor drops by the PI probability while less than 2 MTU are queued in both
//!   queues (`must_drop`); `min_backlog` (default 0, the RFC has no such rule) models it. The
//!   step AQM is not affected, as in Linux.
//! * `drop_on_overload = false` is Linux's `overflow` mode: p' is capped at 1/k so that p_CL
//!   never exceeds 1, no ECN-capable packet is dropped for overload, and the queue grows to
//!   its limit instead.
//! * Not modelled: `split_gso` (the host hands over single packets), `drop_enqueue` (decisions
//!   at enqueue), `any_ect` classification and tc filters, Linux's memory limit in truesize,
//!   its fixed-point arithmetic, and its timer starting at qdisc creation (here, as in
//!   [`Pie`](super::Pie), the update clock starts at the first packet).
//!
//! Sans-IO timer: the periodic update is exposed as [`DualPi2::poll_timeout`] /
//! [`DualPi2::handle_timeout`]; every enqueue and dequeue first runs the updates that fell due
//! (each evaluated at its own due instant). An update reads only the two head packets' arrival
//! times, which change only at enqueues and dequeues, so this lazy evaluation is exact.

use super::coupled::{CoupledAqm, DualPi2Config, DualPi2Counters, DualPi2Scheduler, DualPi2Vars, Which};
use super::{Qdisc, QdiscStats, QueuedPacket};
use crate::aqm::codel::Stamped;
use alloc::collections::VecDeque;
use lasthop_core::{Duration, Instant};



#[derive(Clone, Debug)]
struct Band<P> {
    q: VecDeque<Stamped<P>>,
    bytes: u64,
    stats: QdiscStats,
}

impl<P: QueuedPacket> Band<P> {
    fn new() -> Self {
        Band { q: VecDeque::new(), bytes: 0, stats: QdiscStats::default() }
    }
    fn head_sojourn(&self, t: Instant) -> Duration {
        self.q.front().map_or(Duration::ZERO, |s| t.saturating_since(s.t))
    }
    fn drop(&mut self, len: u64) {
        self.stats.dropped += 1;
        self.stats.dropped_bytes += len;
    }
}

/// The DualQ Coupled PI2 queue discipline.
#[derive(Clone, Debug)]
pub struct DualPi2<P> {
    aqm: CoupledAqm,
    l: Band<P>,
    c: Band<P>,
}

impl<P: QueuedPacket> DualPi2<P> {
    pub fn new(params: DualPi2Config) -> Self {
        let mut q = DualPi2 { aqm: CoupledAqm::new(params), l: Band::new(), c: Band::new() };
        q.aqm.vars.wrr_credit = q.wrr_init();
        q
    }
    pub fn params(&self) -> &DualPi2Config {
        &self.aqm.params
    }
    pub fn vars(&self) -> &DualPi2Vars {
        &self.aqm.vars
    }
    pub fn counters(&self) -> &DualPi2Counters {
        &self.aqm.counters
    }
    /// p', the base probability.
    pub fn base_prob(&self) -> f64 {
        self.aqm.vars.base_prob
    }
    /// p_C, the Classic drop/mark probability.
    pub fn p_c(&self) -> f64 {
        self.aqm.vars.p_c
    }
    /// p_CL, the coupled L4S marking probability.
    pub fn p_cl(&self) -> f64 {
        self.aqm.vars.p_cl
    }
    /// p_L of the last L packet that left (max of native and coupled).
    pub fn p_l(&self) -> f64 {
        self.aqm.vars.p_l
    }
    /// Queuing delay of the L queue at `now`: its head packet's sojourn (`lq.time()`).
    pub fn l_qdelay(&self, now: Instant) -> Duration {
        self.l.head_sojourn(now)
    }
    /// Queuing delay of the C queue at `now` (`cq.time()`).
    pub fn c_qdelay(&self, now: Instant) -> Duration {
        self.c.head_sojourn(now)
    }
    pub fn l_len_packets(&self) -> usize {
        self.l.q.len()
    }
    pub fn c_len_packets(&self) -> usize {
        self.c.q.len()
    }
    pub fn l_len_bytes(&self) -> u64 {
        self.l.bytes
    }
    pub fn c_len_bytes(&self) -> u64 {
        self.c.bytes
    }
    /// Counters of the L queue alone (arrivals, drops, departures).
    pub fn l_stats(&self) -> QdiscStats {
        self.l.stats
    }
    pub fn c_stats(&self) -> QdiscStats {
        self.c.stats
    }
    /// Number of periodic updates run so far.
    pub fn updates(&self) -> u64 {
        self.aqm.updates
    }

    /// When the next update is due (`None` until the first packet arrives).
    pub fn poll_timeout(&self) -> Option<Instant> {
        self.aqm.poll_timeout()
    }

    /// Run every update due at or before `now`; each reads the larger of the two head packets'
    /// sojourns at its due instant (A.2's `curq`).
    pub fn handle_timeout(&mut self, now: Instant) {
        let (l, c) = (&self.l, &self.c);
        let idle = l.q.is_empty() && c.q.is_empty();
        self.aqm.run_due(now, idle, |t| c.head_sojourn(t).max(l.head_sojourn(t)));
    }

    /// Start the update clock at the first event; catch up with due updates.
    fn catch_up(&mut self, now: Instant) {
        self.aqm.start_clock(now);
        self.handle_timeout(now);
    }

    fn wrr_init(&self) -> i64 {
        match self.aqm.params.scheduler {
            DualPi2Scheduler::TsFifo => 0,
            DualPi2Scheduler::Wrr { c_weight } => {
                let wc = c_weight.min(100) as i64;
                self.aqm.params.mtu as i64 * (wc - (100 - wc))
            }
        }
    }

    /// `scheduler()`: the queue whose head leaves next.
    fn schedule(&self) -> Option<Which> {
        match (self.l.q.front(), self.c.q.front()) {
            (None, None) => None,
            (Some(_), None) => Some(Which::L),
            (None, Some(_)) => Some(Which::C),
            (Some(l), Some(c)) => match self.aqm.params.scheduler {
                DualPi2Scheduler::TsFifo if l.t.saturating_since(c.t) > self.aqm.params.tshift => Some(Which::C),
                DualPi2Scheduler::TsFifo => Some(Which::L),
                DualPi2Scheduler::Wrr { .. } if self.aqm.vars.wrr_credit <= 0 => Some(Which::L),
                DualPi2Scheduler::Wrr { .. } => Some(Which::C),
            },
        }
    }

    /// The L branch of `dualpi2_dequeue` (`pkt` already out of the queue): `Err` hands back a
    /// packet to drop.
    fn l_aqm(&mut self, now: Instant, pkt: P, arrived: Instant) -> Result<P, P> {
        let guarded = self.l.bytes + self.c.bytes < self.aqm.params.min_backlog;
        let native = !matches!(self.aqm.params.th_len, Some(th) if self.l.bytes <= th);
        self.aqm.l_decide(now, pkt, arrived, guarded, native)
    }

    /// The C branch of `dualpi2_dequeue`: mark with p_C, drop Not-ECT, drop all above p_Cmax.
    fn c_aqm(&mut self, pkt: P) -> Result<P, P> {
        let guarded = self.l.bytes + self.c.bytes < self.aqm.params.min_backlog;
        self.aqm.c_decide(pkt, guarded)
    }

    #[cfg(test)]
    fn set_base_prob(&mut self, p: f64) {
        self.aqm.set_base_prob(p);
    }
}

impl<P: QueuedPacket> Qdisc<P> for DualPi2<P> {
    fn enqueue(&mut self, now: Instant, pkt: P) -> Result<(), P> {
        self.catch_up(now);
        let len = pkt.len_bytes() as u64;
        let c = &self.aqm.params;
        let full = self.l.q.len() + self.c.q.len() >= c.limit_packets
            || (c.limit_bytes != 0 && self.l.bytes + self.c.bytes + len.max(c.mtu as u64) > c.limit_bytes);
        let sub = if pkt.ecn().is_l4s() { &mut self.l } else { &mut self.c };
        sub.stats.arrived += 1;
        sub.stats.arrived_bytes += len;
        if full {
            sub.drop(len);
            self.aqm.counters.tail_drops += 1;
            return Err(pkt);
        }
        sub.bytes += len;
        sub.q.push_back(Stamped { pkt, t: now });
        Ok(())
    }

    fn dequeue<F: FnMut(P)>(&mut self, now: Instant, mut on_drop: F) -> Option<P> {
        self.catch_up(now);
        loop {
            let Some(which) = self.schedule() else {
                self.aqm.vars.wrr_credit = self.wrr_init();
                return None;
            };
            let (sub, other) = match which {
                Which::L => (&mut self.l, &self.c),
                Which::C => (&mut self.c, &self.l),
            };
            let s = sub.q.pop_front().expect("scheduled a non-empty queue");
            let len = s.pkt.len_bytes() as u64;
            sub.bytes -= len;
            // Linux's WRR credit moves only while the other queue is backlogged.
            let credit = match (self.aqm.params.scheduler, which, other.q.is_empty()) {
                (DualPi2Scheduler::Wrr { c_weight }, Which::L, false) => c_weight.min(100) as i64 * len as i64,
                (DualPi2Scheduler::Wrr { c_weight }, Which::C, false) => {
                    -((100 - c_weight.min(100)) as i64) * len as i64
                }
                _ => 0,
            };
            let verdict = match which {
                Which::L => self.l_aqm(now, s.pkt, s.t),
                Which::C => self.c_aqm(s.pkt),
            };
            let sub = if which == Which::L { &mut self.l } else { &mut self.c };
            match verdict {
                Ok(pkt) => {
                    sub.stats.dequeued += 1;
                    sub.stats.dequeued_bytes += len;
                    self.aqm.vars.wrr_credit += credit;
                    return Some(pkt);
                }
                Err(pkt) => {
                    sub.drop(len);
                    on_drop(pkt);
                }
            }
        }
    }

    fn peek(&self) -> Option<P> {
        match self.schedule()? {
            Which::L => self.l.q.front().map(|s| s.pkt),
            Which::C => self.c.q.front().map(|s| s.pkt),
        }
    }
    fn len_packets(&self) -> usize {
        self.l.q.len() + self.c.q.len()
    }
    fn len_bytes(&self) -> u64 {
        self.l.bytes + self.c.bytes
    }
    fn stats(&self) -> QdiscStats {
        let (l, c) = (self.l.stats, self.c.stats);
        QdiscStats {
            arrived: l.arrived + c.arrived,
            dropped: l.dropped + c.dropped,
            dequeued: l.dequeued + c.dequeued,
            arrived_bytes: l.arrived_bytes + c.arrived_bytes,
            dropped_bytes: l.dropped_bytes + c.dropped_bytes,
            dequeued_bytes: l.dequeued_bytes + c.dequeued_bytes,
        }
    }
    fn invariants(&self) -> Result<(), &'static str> {
        super::conservation(&self.l.stats, self.l.q.len(), self.l.bytes)
            .map_err(|_| "L queue: conservation violated")?;
        super::conservation(&self.c.stats, self.c.q.len(), self.c.bytes)
            .map_err(|_| "C queue: conservation violated")?;
        super::conservation(&self.stats(), self.len_packets(), self.len_bytes())?;
        if self.len_packets() > self.aqm.params.limit_packets {
            return Err("packet limit exceeded");
        }
        if self.aqm.params.limit_bytes != 0 && self.len_bytes() > self.aqm.params.limit_bytes {
            return Err("byte limit exceeded");
        }
        self.aqm.invariants()?;
        let c = &self.aqm.counters;
        let drops = c.early_drops + c.overload_drops + c.tail_drops;
        if drops != self.stats().dropped {
            return Err("drop counters disagree with the drops");
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use lasthop_core::Rng;
    use crate::aqm::test_util::{random_ops, TP};
    use crate::ecn::Ecn;
    use alloc::vec::Vec;

    const MS: u64 = 1_000_000;
    const US: u64 = 1_000;

    fn pk(id: u64, ecn: Ecn) -> TP {
        TP { len: 1000, flow: 0, id, ecn }
    }

    fn big(cfg: DualPi2Config) -> DualPi2<TP> {
        DualPi2::new(DualPi2Config { limit_packets: 1_000_000, ..cfg })
    }

    /// `hits` out of `n` trials of probability `p`, within four standard deviations.
    fn binomial(hits: u64, n: u64, p: f64) {
        let (mean, sd) = (n as f64 * p, libm::sqrt(n as f64 * p * (1.0 - p)));
        assert!((hits as f64 - mean).abs() < 4.0 * sd + 1e-9, "{hits} of {n}, expected {mean} ± {sd} (p = {p})");
    }

    /// Dequeue `n` packets at `now`; returns (sent, dropped).
    fn drain(q: &mut DualPi2<TP>, now: Instant, n: usize) -> (Vec<TP>, Vec<TP>) {
        let (mut sent, mut dropped) = (Vec::new(), Vec::new());
        while sent.len() < n {
            match q.dequeue(now, |d| dropped.push(d)) {
                Some(p) => sent.push(p),
                None => break,
            }
        }
        (sent, dropped)
    }

    /// (a) Classic traffic alone, a standing queue above target: p' rises by the PI2 law of
    /// `dualpi2_update` (hand-computed), p_C = p'^2, p_CL = k p', and the C packets are dropped
    /// (Not-ECT) or marked (ECT(0)) with probability p_C.
    #[test]
    fn classic_standing_queue_p_rises_and_p_c_is_square() {
        let mut q = big(DualPi2Config { seed: 3, ..Default::default() });
        for i in 0..60_000 {
            q.enqueue(Instant::ZERO, pk(i, if i % 2 == 0 { Ecn::NotEct } else { Ecn::Ect0 })).unwrap();
        }
        assert_eq!(q.poll_timeout(), Some(Instant(16 * MS)));
        // Update k at 16k ms sees curq = 16k ms (the head arrived at 0):
        // p' += 0.16 * (curq - 0.015) + 3.2 * (curq - prevq).
        let (mut want, mut prevq, mut t) = (0.0f64, 0.0f64, 0u64);
        while want < 0.3 {
            t += 16;
            let curq = t as f64 * 1e-3;
            want += 0.16 * (curq - 0.015) + 3.2 * (curq - prevq);
            prevq = curq;
            let before = q.base_prob();
            q.handle_timeout(Instant(t * MS));
            assert!((q.base_prob() - want).abs() < 1e-12, "at {t} ms: p' = {}, want {want}", q.base_prob());
            assert!(q.base_prob() > before);
            assert_eq!(q.p_c(), q.base_prob() * q.base_prob());
            assert_eq!(q.p_cl(), 2.0 * q.base_prob());
            assert_eq!(q.c_qdelay(Instant(t * MS)), Duration::from_millis(t));
        }
        assert_eq!(q.updates(), t / 16);
        // Below p_Cmax = 1/4, so no overload; measure at one instant (p fixed).
        assert!(q.p_c() < q.params().p_cmax());
        let (sent, dropped) = drain(&mut q, Instant(t * MS), 20_000);
        let marked = sent.iter().filter(|p| p.ecn == Ecn::Ce).count() as u64;
        assert!(sent.iter().all(|p| p.ecn != Ecn::Ce || p.id % 2 == 1), "a Not-ECT packet was marked");
        assert!(dropped.iter().all(|p| p.ecn == Ecn::NotEct), "an ECT(0) packet was dropped");
        let n = (sent.len() + dropped.len()) as u64;
        binomial(marked + dropped.len() as u64, n, q.p_c());
        let c = q.counters();
        assert_eq!((c.c_marks, c.early_drops, c.overload_drops), (marked, dropped.len() as u64, 0));
        assert_eq!(c.l_step_marks + c.l_coupled_marks, 0);
        q.invariants().unwrap();
    }

    /// (b) The native L4S step: every L packet whose sojourn exceeds 1 ms is marked; below it
    /// only the coupled probability k p' applies.
    #[test]
    fn l4s_step_marks_above_threshold_and_couples_below() {
        let mut q = big(DualPi2Config { seed: 11, ..Default::default() });
        q.catch_up(Instant::ZERO); // first update at 16 ms: everything below happens before it
        let mut id = 0;
        let mut batch = |q: &mut DualPi2<TP>, n: u64, t_in: u64, t_out: u64| {
            for _ in 0..n {
                q.enqueue(Instant(t_in), pk(id, Ecn::Ect1)).unwrap();
                id += 1;
            }
            let (sent, dropped) = drain(q, Instant(t_out), n as usize);
            assert!(dropped.is_empty() && sent.len() == n as usize);
            sent.iter().filter(|p| p.ecn == Ecn::Ce).count() as u64
        };
        // p' = 0: sojourn 2 ms, all marked; 0.5 ms, none; exactly 1 ms does not exceed.
        assert_eq!(batch(&mut q, 100, 0, 2 * MS), 100);
        assert_eq!(batch(&mut q, 100, 3 * MS, 3 * MS + 500 * US), 0);
        assert_eq!(batch(&mut q, 10, 4 * MS, 5 * MS), 0);
        assert_eq!(q.counters().l_step_marks, 100);
        // p' = 0.1, p_CL = 0.2: below the step a fraction 0.2, above it all.
        q.set_base_prob(0.1);
        let n = 20_000;
        let m = batch(&mut q, n, 6 * MS, 6 * MS + 500 * US);
        binomial(m, n, 0.2);
        assert_eq!(q.counters().l_coupled_marks, m);
        assert_eq!(q.p_l(), 0.2);
        assert_eq!(batch(&mut q, 1000, 7 * MS, 9 * MS), 1000);
        assert_eq!(q.counters().l_step_marks, 1100);
        assert_eq!(q.p_l(), 1.0);
        assert_eq!(q.updates(), 0);
    }

    /// RFC 9332 A.2: curq is the larger of the two head sojourns, so a standing L queue alone
    /// (unresponsive L4S traffic) raises p' while the C queue is empty.
    #[test]
    fn l_queue_alone_drives_base_probability() {
        let mut q = big(DualPi2Config::default());
        for i in 0..100 {
            q.enqueue(Instant::ZERO, pk(i, Ecn::Ect1)).unwrap();
        }
        q.handle_timeout(Instant(16 * MS));
        assert_eq!(
            (q.l_qdelay(Instant(16 * MS)), q.c_qdelay(Instant(16 * MS))),
            (Duration::from_millis(16), Duration::ZERO)
        );
        let want = 0.16 * (0.016 - 0.015) + 3.2 * 0.016;
        assert!((q.base_prob() - want).abs() < 1e-12, "{}", q.base_prob());
        assert_eq!(q.vars().prev_qdelay, Duration::from_millis(16));
    }

    /// Th_len (RFC 9332 A.2, one MTU): no native marking unless more than 1514 bytes stay in
    /// the L queue behind the leaving packet; the RFC's ramp rises linearly from minTh to
    /// minTh + range.
    #[test]
    fn th_len_and_ramp() {
        let mut q = big(DualPi2Config { th_len: Some(1514), ..Default::default() });
        q.enqueue(Instant::ZERO, pk(0, Ecn::Ect1)).unwrap();
        assert_eq!(q.dequeue(Instant(5 * MS), |_| {}).unwrap().ecn, Ecn::Ect1);
        for id in 1..4 {
            q.enqueue(Instant(5 * MS), pk(id, Ecn::Ect1)).unwrap();
        }
        let ecn: Vec<Ecn> = (0..3).map(|_| q.dequeue(Instant(10 * MS), |_| {}).unwrap().ecn).collect();
        assert_eq!(ecn, [Ecn::Ce, Ecn::Ect1, Ecn::Ect1], "2000, 1000 and 0 bytes behind");
        let r: DualPi2<TP> = DualPi2::new(DualPi2Config {
            step_thresh: Duration::from_micros(800),
            ramp_range: Duration::from_micros(400),
            ..Default::default()
        });
        let at = |us| r.aqm.laqm(Duration::from_micros(us));
        assert_eq!((at(0), at(800), at(1000), at(1200), at(5000)), (0.0, 0.0, 0.5, 1.0, 1.0));
    }

    /// (c) Coupling: a standing classic queue drives p', and L4S packets (sojourn 0, so the
    /// step is silent) are marked with probability k p'.
    #[test]
    fn l4s_marking_is_k_times_base_probability() {
        for (k, seed) in [(2.0, 21), (1.5, 22)] {
            let mut q =
                big(DualPi2Config { coupling: k, tshift: Duration::from_secs(1000), seed, ..Default::default() });
            for i in 0..1000 {
                q.enqueue(Instant::ZERO, pk(i, Ecn::Ect0)).unwrap();
            }
            let mut t = 0;
            while q.base_prob() < 0.1 {
                t += 16 * MS;
                q.handle_timeout(Instant(t));
                assert!(t < 200 * MS, "p' does not rise over a standing queue");
            }
            let p = q.base_prob();
            assert!(k * p < 1.0 && q.p_cl() == k * p, "{k}: p' {p}");
            let n = 20_000u64;
            for i in 0..n {
                q.enqueue(Instant(t), pk(10_000 + i, Ecn::Ect1)).unwrap();
            }
            let (sent, dropped) = drain(&mut q, Instant(t), n as usize);
            assert!(dropped.is_empty() && sent.iter().all(|p| p.id >= 10_000), "L first");
            let marked = sent.iter().filter(|p| p.ecn == Ecn::Ce).count() as u64;
            binomial(marked, n, k * p);
            assert_eq!((q.counters().l_coupled_marks, q.counters().l_step_marks), (marked, 0));
        }
    }

    /// (d) The time-shifted FIFO: L first unless the C head is older than the L head by more
    /// than tshift (30 ms); equal arrival times go to L. Linux's WRR gives C 10 % of the bytes.
    #[test]
    fn scheduler_time_shifted_fifo_and_wrr() {
        let cfg = DualPi2Config { alpha: 0.0, beta: 0.0, ..Default::default() };
        let mut q: DualPi2<TP> = DualPi2::new(cfg);
        let arrivals =
            [(0, 1, Ecn::Ect0), (20, 2, Ecn::Ect1), (40, 3, Ecn::Ect1), (45, 4, Ecn::Ect0), (45, 5, Ecn::Ect1)];
        for (ms, id, e) in arrivals {
            q.enqueue(Instant(ms * MS), pk(id, e)).unwrap();
        }
        // At 50 ms: L2 (C1 older by 20 ms), C1 (older than L3 by 40 ms), L3, L5 (tie with C4), C4.
        let mut order = Vec::new();
        while let Some(h) = q.peek() {
            let p = q.dequeue(Instant(50 * MS), |_| panic!("drop")).unwrap();
            assert_eq!(p.id, h.id, "peek is the next packet (marked or not)");
            order.push(p.id);
        }
        assert_eq!(order, [2, 1, 3, 5, 4]);

        let mut w: DualPi2<TP> =
            DualPi2::new(DualPi2Config { scheduler: DualPi2Scheduler::Wrr { c_weight: 10 }, ..cfg });
        for i in 0..2000 {
            w.enqueue(Instant::ZERO, pk(i, if i % 2 == 0 { Ecn::Ect0 } else { Ecn::Ect1 })).unwrap();
        }
        let (sent, _) = drain(&mut w, Instant::ZERO, 1000);
        let from_c = sent.iter().filter(|p| p.ecn == Ecn::Ect0).count();
        assert!((95..=105).contains(&from_c), "{from_c} of 1000 from C");
        assert!(sent[..13].iter().all(|p| p.ecn == Ecn::Ect1), "L first from the initial credit");
    }

    /// (e) Overload (RFC 9332 A.2, §4.2.3): above p_Cmax = 1/k^2 ECN-capable C packets are
    /// dropped, not marked, and L packets get the Classic drop p_C, the rest marked; below
    /// p_Cmax they are marked. Without drop on overload (Linux `overflow`) p' stays at 1/k and
    /// nothing ECN-capable is dropped.
    #[test]
    fn overload_drops_instead_of_marking() {
        for (p, seed) in [(0.6, 31), (0.4, 32)] {
            let mut q = big(DualPi2Config { seed, ..Default::default() });
            q.catch_up(Instant::ZERO);
            q.set_base_prob(p);
            let n = 10_000u64;
            for i in 0..2 * n {
                q.enqueue(Instant::ZERO, pk(i, if i < n { Ecn::Ect1 } else { Ecn::Ect0 })).unwrap();
            }
            let (sent, dropped) = drain(&mut q, Instant(MS / 2), 2 * n as usize);
            let (l_drops, c_drops) =
                (dropped.iter().filter(|d| d.id < n).count(), dropped.iter().filter(|d| d.id >= n).count());
            let c_marked = sent.iter().filter(|s| s.id >= n && s.ecn == Ecn::Ce).count() as u64;
            if p * p >= q.params().p_cmax() {
                binomial(c_drops as u64, n, p * p);
                binomial(l_drops as u64, n, p * p);
                assert_eq!(c_marked, 0, "a C packet was marked in overload");
                assert!(sent.iter().filter(|s| s.id < n).all(|s| s.ecn == Ecn::Ce), "p_CL = 1 marks the rest");
                assert_eq!(q.counters().overload_drops, dropped.len() as u64);
            } else {
                assert!(dropped.is_empty());
                binomial(c_marked, n, p * p);
                assert_eq!(q.counters().c_marks, c_marked);
            }
        }
        // A queue standing for a second: p' saturates; with overflow it stops at 1/k.
        for drop_on_overload in [true, false] {
            let mut q = big(DualPi2Config { drop_on_overload, seed: 33, ..Default::default() });
            for i in 0..3000 {
                q.enqueue(Instant::ZERO, pk(i, Ecn::Ect0)).unwrap();
            }
            q.handle_timeout(Instant(1000 * MS));
            let (sent, dropped) = drain(&mut q, Instant(1000 * MS), 1000);
            if drop_on_overload {
                assert_eq!((q.base_prob(), q.p_c(), sent.len(), dropped.len()), (1.0, 1.0, 0, 3000));
            } else {
                assert_eq!((q.base_prob(), q.p_cl()), (0.5, 1.0));
                assert!(dropped.is_empty() && sent.iter().filter(|s| s.ecn == Ecn::Ce).count() > 150);
            }
        }
    }

    /// (f) Same seed, same operations: same outputs; the host driving the timer or not gives
    /// the same state; another seed decides otherwise.
    #[test]
    fn deterministic_and_lazy_updates_match_timer() {
        let cfg = DualPi2Config { limit_packets: 400, target: Duration::from_millis(2), seed: 9, ..Default::default() };
        let run = |cfg: DualPi2Config, drive: bool| {
            let mut q = DualPi2::new(cfg);
            random_ops(&mut q, &mut Rng::from_seed(4), 6000, |q, now| {
                if drive {
                    while let Some(t) = q.poll_timeout().filter(|&t| t <= now) {
                        q.handle_timeout(t);
                    }
                }
            });
            (q.stats(), *q.counters(), *q.vars(), q.updates())
        };
        let a = run(cfg, false);
        assert_eq!(a, run(cfg, false));
        assert_eq!(a, run(cfg, true));
        assert!(a.1.c_marks + a.1.early_drops > 20 && a.1.l_coupled_marks > 20, "{:?}", a.1);
        assert_ne!(a.1, run(DualPi2Config { seed: 10, ..cfg }, false).1);
    }

    /// (g) Random operations keep conservation (per queue and overall), the limits and the ECN
    /// rules, with and without the host driving the timer, over varied parameters; every cause
    /// of marking and dropping occurs.
    #[test]
    fn random_ops_conserve() {
        let mut rng = Rng::from_seed(0xD0A1);
        let mut total = DualPi2Counters::default();
        for case in 0..60u64 {
            let cfg = DualPi2Config {
                limit_packets: 1 + (case as usize % 30) * 9,
                limit_bytes: if case % 5 == 0 { 20_000 + case * 1000 } else { 0 },
                target: Duration::from_millis(1 + case % 20),
                t_update: Duration::from_millis(1 + case % 16),
                coupling: [2.0, 1.0, 3.0, 0.5][case as usize % 4],
                ramp_range: Duration::from_micros(case % 3 * 400),
                th_len: [None, Some(1514), Some(0)][case as usize % 3],
                drop_on_overload: case % 7 != 3,
                tshift: Duration::from_millis(case % 40),
                scheduler: if case % 3 == 1 {
                    DualPi2Scheduler::Wrr { c_weight: (case * 7 % 101) as u8 }
                } else {
                    DualPi2Scheduler::TsFifo
                },
                min_backlog: if case % 6 == 5 { 3028 } else { 0 },
                derandomize: case % 4 == 2,
                seed: case,
                ..Default::default()
            };
            let mut q = DualPi2::new(cfg);
            let drive = case % 2 == 1;
            random_ops(&mut q, &mut rng, 3000, |q, now| {
                if drive {
                    q.handle_timeout(now);
                }
            });
            let c = q.counters();
            assert_eq!(q.l_stats().arrived + q.c_stats().arrived, q.stats().arrived);
            total.l_step_marks += c.l_step_marks;
            total.l_coupled_marks += c.l_coupled_marks;
            total.c_marks += c.c_marks;
            total.early_drops += c.early_drops;
            total.overload_drops += c.overload_drops;
            total.tail_drops += c.tail_drops;
        }
        let t = total;
        assert!(t.l_step_marks > 100 && t.l_coupled_marks > 100 && t.c_marks > 100, "{t:?}");
        assert!(t.early_drops > 100 && t.overload_drops > 10 && t.tail_drops > 100, "{t:?}");
    }
}
