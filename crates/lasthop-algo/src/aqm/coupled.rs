//! DualPI2's coupled AQM without its queues: the PI2 base probability, its coupling and the
//! per-packet decisions of RFC 9332's `dualpi2_dequeue` (Appendix A), with the defaults of
//! Linux's `sch_dualpi2` ([`DualPi2Config`]), and the parameters, state and counters
//! DualPI2 shares with it. [`DualPi2`](super::DualPi2) keeps its two queues
//! around one; mac80211's flow queue keeps one per station queue with
//! [`FlowAqm::DualPi2`](super::FlowAqm::DualPi2). See `dualpi2.rs` for the algorithm's sources.

use super::{mark_ce, QueuedPacket};
use lasthop_core::{Duration, Instant, Rng};

/// p_Lmax, RFC 9332 Appendix A.2's maximum L4S marking probability: at it the L queue is
/// overloaded.
pub const P_LMAX: f64 = 1.0;

/// Which packet leaves when both queues hold packets.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DualPi2Scheduler {
    /// RFC 9332's time-shifted FIFO: L first unless the C head is older than the L head by
    /// more than `DualPi2Config::tshift`.
    TsFifo,
    /// Linux's WRR "classic protection": the C queue gets `c_weight` percent of the bytes
    /// while both are backlogged (Linux default 10).
    Wrr { c_weight: u8 },
}

/// DualPI2 parameters (defaults: Linux `dualpi2_reset_default`, RFC 9332 Appendix A).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct DualPi2Config {
    /// Tail-drop limit on the packets in both queues. Default 10 000.
    pub limit_packets: usize,
    /// The RFC's byte limit on both queues (`lq.byt() + cq.byt() + MTU > limit`); 0: none.
    pub limit_bytes: u64,
    /// MTU in bytes, for the byte limit and the WRR credit. Default 1514.
    pub mtu: u32,
    /// PI2 target queuing delay. Default 15 ms.
    pub target: Duration,
    /// Tupdate, the period of `dualpi2_update`. Default 16 ms.
    pub t_update: Duration,
    /// Integral gain in Hz. Default 0.16.
    pub alpha: f64,
    /// Proportional gain in Hz. Default 3.2.
    pub beta: f64,
    /// Coupling factor k. Default 2.
    pub coupling: f64,
    /// The L4S step threshold on sojourn time (the ramp's minTh). Default 1 ms.
    pub step_thresh: Duration,
    /// The RFC's ramp range above `step_thresh`; zero (default) makes the native AQM a step.
    pub ramp_range: Duration,
    /// Th_len in bytes: no native L4S marking unless the L queue holds more once the packet has
    /// left. Default `None` (always; the RFC's example is one MTU).
    pub th_len: Option<u64>,
    /// Drop instead of mark above p_Cmax / p_Lmax (§4.2.3); false: Linux's `overflow`. Default
    /// true.
    pub drop_on_overload: bool,
    /// The time shift of the TS-FIFO scheduler. Default 30 ms.
    pub tshift: Duration,
    /// Default [`DualPi2Scheduler::TsFifo`].
    pub scheduler: DualPi2Scheduler,
    /// No PI-driven mark or drop while fewer bytes are queued in both queues (Linux: 2 MTU).
    /// Default 0.
    pub min_backlog: u64,
    /// Use the RFC pseudocode's `recur()` instead of random draws. Default false.
    pub derandomize: bool,
    /// Seed of the random mark/drop stream.
    pub seed: u64,
}

impl Default for DualPi2Config {
    fn default() -> Self {
        DualPi2Config {
            limit_packets: 10_000,
            limit_bytes: 0,
            mtu: 1514,
            target: Duration::from_millis(15),
            t_update: Duration::from_millis(16),
            alpha: 0.16,
            beta: 3.2,
            coupling: 2.0,
            step_thresh: Duration::from_millis(1),
            ramp_range: Duration::ZERO,
            th_len: None,
            drop_on_overload: true,
            tshift: Duration::from_millis(30),
            scheduler: DualPi2Scheduler::TsFifo,
            min_backlog: 0,
            derandomize: false,
            seed: 0,
        }
    }
}

impl DualPi2Config {
    /// p_Cmax = min(1/k^2, 1): above it the C queue drops ECN-capable packets too.
    pub fn p_cmax(&self) -> f64 {
        let k2 = self.coupling * self.coupling;
        if k2 > 1.0 {
            1.0 / k2
        } else {
            1.0
        }
    }
}

/// DualPI2 state (the RFC pseudocode's variables).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct DualPi2Vars {
    /// p', the PI2 base probability.
    pub base_prob: f64,
    /// p_C = p'^2.
    pub p_c: f64,
    /// p_CL = min(k * p', 1).
    pub p_cl: f64,
    /// p_L of the last L packet decided.
    pub p_l: f64,
    /// prevq: curq at the last update.
    pub prev_qdelay: Duration,
    /// Due time of the next update (`None` before the first event).
    pub next_update: Option<Instant>,
    /// WRR credit in bytes × weight (Linux `c_protection_credit`); C goes next when positive.
    pub wrr_credit: i64,
    /// `recur()` accumulators of the L and C queues.
    pub recur_l: f64,
    pub recur_c: f64,
}

/// Marks and drops by cause (monotone).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct DualPi2Counters {
    /// L packets marked with the native (step or ramp) probability driving p_L.
    pub l_step_marks: u64,
    /// L packets marked with the coupled probability p_CL driving p_L.
    pub l_coupled_marks: u64,
    /// C packets marked with p_C.
    pub c_marks: u64,
    /// Not-ECT packets dropped where they would have been marked.
    pub early_drops: u64,
    /// ECN-capable packets dropped because of overload (p_C >= p_Cmax, p_CL >= p_Lmax).
    pub overload_drops: u64,
    /// Arrivals to a full buffer.
    pub tail_drops: u64,
}

/// Which of DualPI2's queues a decision is for (each has its own `recur()` accumulator).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Which {
    L,
    C,
}

/// DualPI2's coupled AQM without its queues (RFC 9332 §2.1 and Appendix A): the PI2 base
/// probability p' with its coupling (p_CL = k·p', p_C = p'^2), the native L4S step, and the
/// per-packet decisions of `dualpi2_dequeue`. [`DualPi2`] keeps its two queues around one;
/// mac80211's flow queue with [`FlowAqm::DualPi2`](super::FlowAqm::DualPi2) keeps one per
/// station queue (tin) in place of CoDel per flow. The queue that holds it supplies the queueing
/// delay each update reads and the backlog guards; the decisions and their random draws are here.
#[derive(Clone, Debug)]
pub struct CoupledAqm {
    pub(super) params: DualPi2Config,
    pub(super) vars: DualPi2Vars,
    pub(super) counters: DualPi2Counters,
    rng: Rng,
    pub(super) updates: u64,
}

impl CoupledAqm {
    pub fn new(params: DualPi2Config) -> Self {
        CoupledAqm {
            params,
            vars: DualPi2Vars::default(),
            counters: DualPi2Counters::default(),
            rng: Rng::from_seed(params.seed),
            updates: 0,
        }
    }
    pub fn params(&self) -> &DualPi2Config {
        &self.params
    }
    pub fn vars(&self) -> &DualPi2Vars {
        &self.vars
    }
    pub fn counters(&self) -> &DualPi2Counters {
        &self.counters
    }
    /// Number of periodic updates run so far.
    pub fn updates(&self) -> u64 {
        self.updates
    }

    /// When the next update is due (`None` before the clock started).
    pub fn poll_timeout(&self) -> Option<Instant> {
        self.vars.next_update
    }

    /// Run every update due at or before `now`, each with `curq(due)`, the queueing delay at its
    /// own due instant (Appendix A.2's `max(cq.time(), lq.time())` for DualPI2). `idle`: the
    /// queues are empty, so that once p' and prevq are 0 they stay so (curq = 0 gives
    /// p' - alpha * target, clamped to 0) and the remaining updates are skipped at once.
    pub fn run_due(&mut self, now: Instant, idle: bool, mut curq: impl FnMut(Instant) -> Duration) {
        let t_update = self.params.t_update.max(Duration(1));
        let Some(mut due) = self.vars.next_update else {
            return;
        };
        while due <= now {
            let v = &self.vars;
            if idle
                && v.base_prob == 0.0
                && v.prev_qdelay.is_zero()
                && self.params.alpha * self.params.target.as_secs_f64() >= 0.0
            {
                let k = (now - due).as_nanos() / t_update.as_nanos() + 1;
                self.updates += k;
                due += t_update * k;
                break;
            }
            self.update(curq(due));
            due += t_update;
        }
        self.vars.next_update = Some(due);
    }

    /// Start the update clock at the first event (a no-op once started).
    pub fn start_clock(&mut self, now: Instant) {
        if self.vars.next_update.is_none() {
            self.vars.next_update = Some(now + self.params.t_update.max(Duration(1)));
        }
    }

    /// `dualpi2_update` with queueing delay `curq`.
    fn update(&mut self, curq: Duration) {
        self.updates += 1;
        let c = &self.params;
        let v = &mut self.vars;
        let (cur, prev) = (curq.as_secs_f64(), v.prev_qdelay.as_secs_f64());
        let p = v.base_prob + c.alpha * (cur - c.target.as_secs_f64()) + c.beta * (cur - prev);
        // Linux `overflow`: keep p_CL at most 1.
        let cap = if c.drop_on_overload || c.coupling <= 1.0 { 1.0 } else { 1.0 / c.coupling };
        let p = p.max(0.0).min(cap);
        v.base_prob = p;
        v.p_cl = (c.coupling * p).min(1.0);
        v.p_c = p * p;
        v.prev_qdelay = curq;
    }

    /// The native L4S AQM (`laqm`): step, or the RFC's ramp, on the sojourn `qdelay`.
    pub(super) fn laqm(&self, qdelay: Duration) -> f64 {
        let (min_th, range) = (self.params.step_thresh, self.params.ramp_range);
        if range.is_zero() {
            return if qdelay > min_th { 1.0 } else { 0.0 };
        }
        if qdelay >= min_th + range {
            1.0
        } else if qdelay > min_th {
            (qdelay - min_th).as_secs_f64() / range.as_secs_f64()
        } else {
            0.0
        }
    }

    /// A decision with the given likelihood: a random draw, or the queue's `recur()`.
    fn roll(&mut self, which: Which, likelihood: f64) -> bool {
        if !self.params.derandomize {
            return self.rng.bernoulli(likelihood);
        }
        let count = match which {
            Which::L => &mut self.vars.recur_l,
            Which::C => &mut self.vars.recur_c,
        };
        *count += likelihood;
        if *count > 1.0 {
            *count -= 1.0;
            true
        } else {
            false
        }
    }

    /// Mark `pkt` (counted by the caller) or, if it is Not-ECT, report it for dropping.
    fn mark_or_drop<P: QueuedPacket>(&mut self, pkt: &mut P) -> bool {
        if mark_ce(pkt) {
            true
        } else {
            self.counters.early_drops += 1;
            false
        }
    }

    /// The L branch of `dualpi2_dequeue` for an L4S packet (`pkt` already out of its queue,
    /// there since `arrived`): `Err` hands back a packet to drop. `guarded`: too little queued
    /// for PI-driven decisions (Linux's `must_drop`); `native`: the step applies (A.2's
    /// `Th_len`).
    pub fn l_decide<P: QueuedPacket>(&mut self, now: Instant, mut pkt: P, arrived: Instant, guarded: bool,
                                     native: bool) -> Result<P, P> {
        let (p_cl, p_c) = if guarded { (0.0, 0.0) } else { (self.vars.p_cl, self.vars.p_c) };
        if self.params.drop_on_overload && p_cl >= P_LMAX {
            // Overload saturation: Classic drop, then linear marking of the rest.
            self.vars.p_l = p_cl;
            if self.roll(Which::L, p_c) {
                self.counters.overload_drops += 1;
                return Err(pkt);
            }
            if self.roll(Which::L, p_cl) {
                if !self.mark_or_drop(&mut pkt) {
                    return Err(pkt);
                }
                self.counters.l_coupled_marks += 1;
            }
            return Ok(pkt);
        }
        let native = if native { self.laqm(now.saturating_since(arrived)) } else { 0.0 };
        let p_l = native.max(p_cl);
        self.vars.p_l = p_l;
        if self.roll(Which::L, p_l) {
            if !self.mark_or_drop(&mut pkt) {
                return Err(pkt);
            }
            if native > p_cl {
                self.counters.l_step_marks += 1;
            } else {
                self.counters.l_coupled_marks += 1;
            }
        }
        Ok(pkt)
    }

    /// The C branch of `dualpi2_dequeue` for a Classic packet: mark with p_C, drop Not-ECT,
    /// drop all above p_Cmax.
    pub fn c_decide<P: QueuedPacket>(&mut self, mut pkt: P, guarded: bool) -> Result<P, P> {
        if guarded {
            return Ok(pkt);
        }
        let p_c = self.vars.p_c;
        if !self.roll(Which::C, p_c) {
            return Ok(pkt);
        }
        if self.params.drop_on_overload && p_c >= self.params.p_cmax() && pkt.ecn().is_capable() {
            self.counters.overload_drops += 1;
            return Err(pkt);
        }
        if !self.mark_or_drop(&mut pkt) {
            return Err(pkt);
        }
        self.counters.c_marks += 1;
        Ok(pkt)
    }

    /// Probabilities in range and coupled to p'.
    pub fn invariants(&self) -> Result<(), &'static str> {
        let v = &self.vars;
        if !(0.0..=1.0).contains(&v.base_prob) || !(0.0..=1.0).contains(&v.p_l) {
            return Err("probability outside [0, 1]");
        }
        if v.p_c != v.base_prob * v.base_prob || v.p_cl != (self.params.coupling * v.base_prob).min(1.0) {
            return Err("p_C or p_CL not coupled to p'");
        }
        Ok(())
    }

    #[cfg(test)]
    pub(crate) fn set_base_prob(&mut self, p: f64) {
        self.vars.base_prob = p;
        self.vars.p_cl = (self.params.coupling * p).min(1.0);
        self.vars.p_c = p * p;
    }
}
