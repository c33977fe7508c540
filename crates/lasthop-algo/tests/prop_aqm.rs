//! Property tests of the queue disciplines (Fifo, CoDel, PIE, FQ-CoDel, DualPI2, AnyQdisc,
//! mac80211's flow queue) and of the WQM buffer sizer: generated operation sequences checked
//! against the invariants every discipline promises (module doc of `lasthop_algo::aqm`):
//!
//! * conservation, in packets and bytes: arrived = dropped + dequeued + queued, and the
//!   discipline's counters equal what the host saw;
//! * identity: every packet handed back (rejected, dropped, dequeued) was queued, exactly once;
//!   after a drain nothing is left;
//! * limits: the packet (and byte) limits hold after every operation;
//! * monotone counters; FIFO order where the discipline promises it (per flow for the flow
//!   queues, per ECN class for DualPI2's two queues); spurious timer calls are no-ops; no
//!   panic; determinism (same operations, same outputs).

use lasthop_algo::ecn::Ecn;
use lasthop_algo::aqm::{
    AnyQdisc, AqmConfig, Codel, CodelConfig, DualPi2, DualPi2Config, DualPi2Scheduler, Fifo,
    FifoConfig, FlowAqm, FqCodel, FqCodelConfig, MacFq, MacFqConfig, Pie, PieConfig, PieEstimator, Qdisc,
    QdiscStats, Wqm, WqmConfig, WqmInput, WqmOutput, WqmVariant,
};
use lasthop_core::{BitRate, Bytes, Controller, Duration, Instant};
use proptest::prelude::*;

use std::collections::BTreeMap;

mod common;
use common::{cases, TP};

/// One host action on a single-queue discipline.
#[derive(Clone, Copy, Debug)]
enum Op {
    Enqueue { flow: u8, len: u16 },
    Dequeue,
    /// Time moves on by this many nanoseconds; due timers run.
    Advance(u64),
    /// A timer call that may be early (must then change nothing).
    SpuriousTimeout,
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        6 => (0u8..8, 0u16..=2000).prop_map(|(flow, len)| Op::Enqueue { flow, len }),
        4 => Just(Op::Dequeue),
        2 => prop_oneof![
            9 => 0u64..=3_000_000,
            1 => 0u64..=3_000_000_000,
        ].prop_map(Op::Advance),
        1 => Just(Op::SpuriousTimeout),
    ]
}

/// What the host observed: one entry per packet handed back, in order.
#[derive(Clone, Debug, PartialEq, Eq)]
enum Out {
    Rejected(u64),
    Dropped(u64),
    Sent(u64),
}

/// What the driver must know about a discipline beyond the `Qdisc` trait.
trait Under: Qdisc<TP> {
    /// Run timers due at `now`.
    fn timers(&mut self, _now: Instant) {}
    /// A timer call at `now`; implementations check that an early call changes nothing.
    fn spurious(&mut self, _now: Instant) {}
    /// Limits the discipline promises to keep (checked after every operation).
    fn limits_ok(&self) -> Result<(), String>;
    /// Whether arrivals dropped at enqueue are always the arriving packet and all packets
    /// leave in arrival order (single FIFO queue), or only per flow.
    fn single_fifo(&self) -> bool;
    /// With `single_fifo` false: packets leave in arrival order within each ECN class (L4S
    /// identifier or not, as sent) rather than within each flow, and an arrival dropped at
    /// enqueue is always the arriving packet (two FIFO queues).
    fn fifo_per_ecn_class(&self) -> bool {
        false
    }
}

impl Under for Fifo<TP> {
    fn limits_ok(&self) -> Result<(), String> {
        let p = self.params();
        if self.len_packets() > p.limit_packets {
            return Err(format!("fifo holds {} > {}", self.len_packets(), p.limit_packets));
        }
        if p.limit_bytes != 0 && self.len_bytes() > p.limit_bytes {
            return Err(format!("fifo holds {} B > {}", self.len_bytes(), p.limit_bytes));
        }
        Ok(())
    }
    fn single_fifo(&self) -> bool {
        true
    }
}

impl Under for Codel<TP> {
    fn limits_ok(&self) -> Result<(), String> {
        if self.len_packets() > self.params().limit_packets {
            return Err("codel over its packet limit".into());
        }
        let v = self.vars();
        if v.dropping && v.count == 0 {
            return Err("codel dropping with count 0".into());
        }
        Ok(())
    }
    fn single_fifo(&self) -> bool {
        true
    }
}

impl Under for Pie<TP> {
    fn timers(&mut self, now: Instant) {
        while let Some(t) = self.poll_timeout().filter(|&t| t <= now) {
            self.handle_timeout(t);
        }
    }
    fn spurious(&mut self, now: Instant) {
        if self.poll_timeout().is_none_or(|t| t > now) {
            let before = *self.vars();
            self.handle_timeout(now);
            assert_eq!(before, *self.vars(), "early PIE timeout changed state");
        } else {
            self.handle_timeout(now);
        }
    }
    fn limits_ok(&self) -> Result<(), String> {
        if self.len_packets() > self.params().limit_packets {
            return Err("pie over its packet limit".into());
        }
        let p = self.drop_prob();
        if !(0.0..=1.0).contains(&p) {
            return Err(format!("pie drop_prob {p} outside [0, 1]"));
        }
        if !self.vars().accu_prob.is_finite() {
            return Err("pie accu_prob not finite".into());
        }
        Ok(())
    }
    fn single_fifo(&self) -> bool {
        true
    }
}

impl Under for DualPi2<TP> {
    fn timers(&mut self, now: Instant) {
        while let Some(t) = self.poll_timeout().filter(|&t| t <= now) {
            self.handle_timeout(t);
        }
    }
    fn spurious(&mut self, now: Instant) {
        if self.poll_timeout().is_none_or(|t| t > now) {
            let before = *self.vars();
            self.handle_timeout(now);
            assert_eq!(before, *self.vars(), "early DualPI2 timeout changed state");
        } else {
            self.handle_timeout(now);
        }
    }
    fn limits_ok(&self) -> Result<(), String> {
        let c = self.params();
        if self.len_packets() > c.limit_packets {
            return Err("dualpi2 over its packet limit".into());
        }
        if c.limit_bytes != 0 && self.len_bytes() > c.limit_bytes {
            return Err("dualpi2 over its byte limit".into());
        }
        for p in [self.base_prob(), self.p_c(), self.p_cl(), self.p_l()] {
            if !(0.0..=1.0).contains(&p) {
                return Err(format!("dualpi2 probability {p} outside [0, 1]"));
            }
        }
        if self.l_len_packets() + self.c_len_packets() != self.len_packets() {
            return Err("dualpi2 queue lengths do not add up".into());
        }
        Ok(())
    }
    fn single_fifo(&self) -> bool {
        false
    }
    fn fifo_per_ecn_class(&self) -> bool {
        true
    }
}

impl Under for FqCodel<TP> {
    fn limits_ok(&self) -> Result<(), String> {
        if self.len_packets() > self.params().limit_packets {
            return Err("fq_codel over its packet limit".into());
        }
        Ok(())
    }
    fn single_fifo(&self) -> bool {
        false
    }
}

impl Under for AnyQdisc<TP> {
    fn timers(&mut self, now: Instant) {
        while let Some(t) = self.poll_timeout().filter(|&t| t <= now) {
            self.handle_timeout(t);
        }
    }
    fn spurious(&mut self, now: Instant) {
        match self {
            AnyQdisc::Pie(q) => q.spurious(now),
            AnyQdisc::DualPi2(q) => q.spurious(now),
            _ => {
                assert_eq!(self.poll_timeout(), None);
                self.handle_timeout(now);
            }
        }
    }
    fn limits_ok(&self) -> Result<(), String> {
        match self {
            AnyQdisc::Fifo(q) => q.limits_ok(),
            AnyQdisc::Codel(q) => q.limits_ok(),
            AnyQdisc::Pie(q) => q.limits_ok(),
            AnyQdisc::FqCodel(q) => q.limits_ok(),
            AnyQdisc::DualPi2(q) => q.limits_ok(),
        }
    }
    fn single_fifo(&self) -> bool {
        !matches!(self, AnyQdisc::FqCodel(_) | AnyQdisc::DualPi2(_))
    }
    fn fifo_per_ecn_class(&self) -> bool {
        matches!(self, AnyQdisc::DualPi2(_))
    }
}

fn monotone(a: &QdiscStats, b: &QdiscStats) -> bool {
    b.arrived >= a.arrived
        && b.dropped >= a.dropped
        && b.dequeued >= a.dequeued
        && b.arrived_bytes >= a.arrived_bytes
        && b.dropped_bytes >= a.dropped_bytes
        && b.dequeued_bytes >= a.dequeued_bytes
}

/// Drive `q` through `ops`, then drain it; check every invariant after every step. Returns the
/// outputs (for determinism checks).
fn drive<Q: Under>(q: &mut Q, ops: &[Op]) -> Result<(Vec<Out>, QdiscStats), TestCaseError> {
    let mut now = Instant::ZERO;
    let mut inside: BTreeMap<u64, TP> = BTreeMap::new();
    let mut model = QdiscStats::default();
    let mut next_id = 0u64;
    let mut outs = Vec::new();
    // Last id to leave, per flow (or overall for a single FIFO).
    let mut last_out: BTreeMap<u32, u64> = BTreeMap::new();
    let fifo = q.single_fifo();
    let per_class = q.fifo_per_ecn_class();
    let leave = |p: TP, last_out: &mut BTreeMap<u32, u64>| -> Result<(), TestCaseError> {
        // The class of a packet is that of its ECN field as sent (a queue may have marked it CE).
        let key = if fifo { 0 } else if per_class { ecn_of(p.len).is_l4s() as u32 } else { p.flow };
        if let Some(&prev) = last_out.get(&key) {
            prop_assert!(p.id > prev, "out of order: {} after {} (flow {})", p.id, prev, p.flow);
        }
        last_out.insert(key, p.id);
        Ok(())
    };
    let mut prev = q.stats();
    for op in ops {
        match *op {
            Op::Enqueue { flow, len } => {
                let pkt = TP { len: len as u32, flow: flow as u32, id: next_id, ecn: ecn_of(len as u32) };
                next_id += 1;
                model.arrived += 1;
                model.arrived_bytes += pkt.len as u64;
                inside.insert(pkt.id, pkt);
                if let Err(v) = q.enqueue(now, pkt) {
                    prop_assert!(inside.remove(&v.id).is_some(), "rejected unknown packet {v:?}");
                    if fifo || per_class {
                        prop_assert_eq!(v.id, pkt.id, "a FIFO discipline dropped a queued packet");
                    } else {
                        leave(v, &mut last_out)?;
                    }
                    model.dropped += 1;
                    model.dropped_bytes += v.len as u64;
                    outs.push(Out::Rejected(v.id));
                }
            }
            Op::Dequeue => dequeue_one(q, now, &mut inside, &mut model, &mut outs, &mut |p| leave(p, &mut last_out))?,
            Op::Advance(dt) => {
                now = Instant(now.0.saturating_add(dt));
                q.timers(now);
            }
            Op::SpuriousTimeout => q.spurious(now),
        }
        check(q, &inside, &model, &prev)?;
        prev = q.stats();
    }
    // Drain: every packet leaves (sent or dropped), in bounded work.
    let mut guard = 0usize;
    while !q.is_empty() {
        guard += 1;
        prop_assert!(guard <= 100_000, "drain does not terminate");
        let before = q.len_packets();
        dequeue_one(q, now, &mut inside, &mut model, &mut outs, &mut |p| leave(p, &mut last_out))?;
        prop_assert!(q.len_packets() < before, "a dequeue of a non-empty queue took nothing");
        check(q, &inside, &model, &prev)?;
        prev = q.stats();
    }
    prop_assert!(inside.is_empty(), "packets lost: {:?}", inside.keys().collect::<Vec<_>>());
    prop_assert_eq!(q.len_bytes(), 0);
    prop_assert_eq!(q.peek(), None);
    prop_assert!(q.dequeue(now, |_| panic!("drop from an empty queue")).is_none());
    Ok((outs, q.stats()))
}

/// A packet's ECN field, from its drawn length (every codepoint occurs).
fn ecn_of(len: u32) -> Ecn {
    Ecn::from_bits((len % 4) as u8)
}

/// RFC 3168 §5 / RFC 8311: a queue turns an ECN-capable packet into CE or leaves it alone; it
/// never clears CE, never makes ECT out of Not-ECT or the reverse.
fn ecn_kept(sent: Ecn, out: Ecn) -> Result<(), TestCaseError> {
    prop_assert!(out == sent || (sent.is_capable() && out == Ecn::Ce), "ECN field {sent:?} left as {out:?}");
    Ok(())
}

fn dequeue_one<Q: Under>(
    q: &mut Q,
    now: Instant,
    inside: &mut BTreeMap<u64, TP>,
    model: &mut QdiscStats,
    outs: &mut Vec<Out>,
    leave: &mut dyn FnMut(TP) -> Result<(), TestCaseError>,
) -> Result<(), TestCaseError> {
    let head = q.peek();
    let mut dropped = Vec::new();
    let got = q.dequeue(now, |p| dropped.push(p));
    for d in dropped {
        prop_assert!(inside.remove(&d.id).is_some(), "dropped unknown packet {d:?}");
        model.dropped += 1;
        model.dropped_bytes += d.len as u64;
        leave(d)?;
        outs.push(Out::Dropped(d.id));
    }
    if let Some(p) = got {
        let sent = inside.remove(&p.id);
        prop_assert!(sent.is_some(), "dequeued unknown packet {p:?}");
        ecn_kept(sent.unwrap().ecn, p.ecn)?;
        model.dequeued += 1;
        model.dequeued_bytes += p.len as u64;
        leave(p)?;
        outs.push(Out::Sent(p.id));
    } else {
        prop_assert!(q.is_empty(), "dequeue returned nothing but the queue holds packets");
        prop_assert!(head.is_none() || outs.last().is_some_and(|o| matches!(o, Out::Dropped(_))));
    }
    Ok(())
}

fn check<Q: Under>(
    q: &Q,
    inside: &BTreeMap<u64, TP>,
    model: &QdiscStats,
    prev: &QdiscStats,
) -> Result<(), TestCaseError> {
    if let Err(e) = q.invariants() {
        return Err(TestCaseError::fail(format!("invariants: {e}")));
    }
    if let Err(e) = q.limits_ok() {
        return Err(TestCaseError::fail(e));
    }
    let s = q.stats();
    prop_assert_eq!(&s, model, "counters differ from what the host saw");
    prop_assert!(monotone(prev, &s), "a counter went backwards: {:?} -> {:?}", prev, s);
    prop_assert_eq!(q.len_packets(), inside.len());
    prop_assert_eq!(q.len_bytes(), inside.values().map(|p| p.len as u64).sum::<u64>());
    prop_assert_eq!(q.is_empty(), inside.is_empty());
    if let Some(h) = q.peek() {
        prop_assert!(inside.contains_key(&h.id), "peek shows an unknown packet");
        if q.single_fifo() {
            prop_assert_eq!(Some(&h.id), inside.keys().next(), "head is not the oldest packet");
        }
    }
    Ok(())
}

fn dur_ns(lo: u64, hi: u64) -> impl Strategy<Value = Duration> {
    (lo..=hi).prop_map(Duration)
}

fn fifo_cfg() -> impl Strategy<Value = FifoConfig> {
    (0usize..64, prop_oneof![Just(0u64), 1u64..20_000])
        .prop_map(|(limit_packets, limit_bytes)| FifoConfig { limit_packets, limit_bytes })
}

fn codel_cfg() -> impl Strategy<Value = CodelConfig> {
    (dur_ns(0, 30_000_000), dur_ns(1, 200_000_000), 0u32..3000, 0usize..64).prop_map(
        |(target, interval, mtu, limit_packets)| CodelConfig { target, interval, mtu, limit_packets, ..Default::default() },
    )
    .prop_flat_map(|c| (Just(c), any::<bool>(), prop::option::of(dur_ns(0, 30_000_000)), any::<bool>()))
    .prop_map(|(c, ecn, ce_threshold, ce_threshold_l4s_only)| CodelConfig { ecn, ce_threshold, ce_threshold_l4s_only, ..c })
}

fn pie_cfg() -> impl Strategy<Value = PieConfig> {
    (
        dur_ns(0, 40_000_000),
        dur_ns(0, 60_000_000),
        0.0f64..1.0,
        0.0f64..10.0,
        dur_ns(0, 200_000_000),
        0u32..3000,
        0usize..64,
        any::<bool>(),
        any::<u64>(),
        prop_oneof![Just(PieEstimator::Timestamp), Just(PieEstimator::DequeueRate)],
    )
        .prop_map(
            |(target, t_update, alpha, beta, max_burst, mean_pkt_size, limit_packets, derandomize, seed, estimator)| {
                PieConfig {
                    target,
                    t_update,
                    alpha,
                    beta,
                    max_burst,
                    mean_pkt_size,
                    limit_packets,
                    derandomize,
                    seed,
                    estimator,
                    ecn: seed % 2 == 0,
                    ..Default::default()
                }
            },
        )
}

fn fq_codel_cfg() -> impl Strategy<Value = FqCodelConfig> {
    (dur_ns(0, 30_000_000), dur_ns(1, 200_000_000), 0u32..3000, 0u32..3000, 0usize..16, 0usize..64, any::<u64>())
        .prop_map(|(target, interval, mtu, quantum, flows, limit_packets, seed)| FqCodelConfig {
            target,
            interval,
            mtu,
            quantum,
            flows,
            limit_packets,
            seed,
            ..Default::default()
        })
        .prop_flat_map(|c| (Just(c), any::<bool>(), prop::option::of(dur_ns(0, 30_000_000)), any::<bool>()))
        .prop_map(|(c, ecn, ce_threshold, ce_threshold_l4s_only)| FqCodelConfig { ecn, ce_threshold, ce_threshold_l4s_only, ..c })
}

fn dualpi2_cfg() -> impl Strategy<Value = DualPi2Config> {
    (
        (0usize..64, prop_oneof![Just(0u64), 1u64..20_000], dur_ns(0, 40_000_000), dur_ns(100_000, 60_000_000)),
        (0.0f64..2.0, 0.0f64..10.0, 0.0f64..4.0),
        (dur_ns(0, 3_000_000), prop_oneof![Just(Duration::ZERO), dur_ns(1, 2_000_000)], prop::option::of(0u64..4000)),
        (any::<bool>(), dur_ns(0, 100_000_000), prop_oneof![Just(None), (0u8..=100).prop_map(Some)]),
        (prop_oneof![Just(0u64), 0u64..6000], any::<bool>(), any::<u64>()),
    )
        .prop_map(|(limits, gains, l4s, sched, misc)| {
            let ((limit_packets, limit_bytes, target, t_update), (alpha, beta, coupling)) = (limits, gains);
            let ((step_thresh, ramp_range, th_len), (drop_on_overload, tshift, wrr)) = (l4s, sched);
            let (min_backlog, derandomize, seed) = misc;
            DualPi2Config {
                limit_packets,
                limit_bytes,
                target,
                t_update,
                alpha,
                beta,
                coupling,
                step_thresh,
                ramp_range,
                th_len,
                drop_on_overload,
                tshift,
                scheduler: wrr.map_or(DualPi2Scheduler::TsFifo, |c_weight| DualPi2Scheduler::Wrr { c_weight }),
                min_backlog,
                derandomize,
                seed,
                ..Default::default()
            }
        })
}

fn aqm_cfg() -> impl Strategy<Value = AqmConfig> {
    prop_oneof![
        fifo_cfg().prop_map(AqmConfig::Fifo),
        codel_cfg().prop_map(AqmConfig::Codel),
        pie_cfg().prop_map(AqmConfig::Pie),
        fq_codel_cfg().prop_map(AqmConfig::FqCodel),
        dualpi2_cfg().prop_map(AqmConfig::DualPi2),
    ]
}

fn ops(max: usize) -> impl Strategy<Value = Vec<Op>> {
    prop::collection::vec(op(), 0..max)
}

/// Run twice from scratch; the outputs must be identical.
fn deterministic<Q: Under>(make: impl Fn() -> Q, ops: &[Op]) -> Result<(), TestCaseError> {
    let a = drive(&mut make(), ops)?;
    let b = drive(&mut make(), ops)?;
    prop_assert_eq!(a, b, "same operations, different outputs");
    Ok(())
}

proptest! {
    #![proptest_config(cases(256))]

    #[test]
    fn fifo_invariants(cfg in fifo_cfg(), ops in ops(300)) {
        deterministic(|| Fifo::new(cfg), &ops)?;
    }

    #[test]
    fn fifo_peek_is_next(cfg in fifo_cfg(), ops in ops(200)) {
        // Tail drop never drops on the way out: the head seen by `peek` is what leaves next.
        let mut q = Fifo::new(cfg);
        for (i, op) in ops.iter().enumerate() {
            match *op {
                Op::Enqueue { flow, len } => { let _ = q.enqueue(Instant::ZERO, TP { len: len as u32, flow: flow as u32, id: i as u64, ecn: Ecn::NotEct }); }
                _ => { let h = q.peek(); prop_assert_eq!(q.dequeue(Instant::ZERO, |_| panic!("fifo drop on dequeue")), h); }
            }
        }
    }

    #[test]
    fn codel_invariants(cfg in codel_cfg(), ops in ops(300)) {
        deterministic(|| Codel::new(cfg), &ops)?;
    }

    #[test]
    fn pie_invariants(cfg in pie_cfg(), ops in ops(300)) {
        deterministic(|| Pie::new(cfg), &ops)?;
    }

    #[test]
    fn fq_codel_invariants(cfg in fq_codel_cfg(), ops in ops(300)) {
        deterministic(|| FqCodel::new(cfg), &ops)?;
    }

    #[test]
    fn dualpi2_invariants(cfg in dualpi2_cfg(), ops in ops(300)) {
        deterministic(|| DualPi2::new(cfg), &ops)?;
    }

    #[test]
    fn any_qdisc_invariants(cfg in aqm_cfg(), seed in any::<u64>(), ops in ops(300)) {
        deterministic(|| cfg.build::<TP>(seed), &ops)?;
        prop_assert_eq!(cfg.build::<TP>(seed).name(), cfg.name());
    }
}

// ---------------------------------------------------------------------------------------------
// mac80211's flow queue: several tins over one table.

#[derive(Clone, Copy, Debug)]
enum MacOp {
    Enqueue { tin: u8, flow: u8, len: u16 },
    Dequeue { tin: u8 },
    Advance(u64),
    SetLimit(u16),
}

fn mac_op(tins: u8) -> impl Strategy<Value = MacOp> {
    prop_oneof![
        6 => (0..tins, 0u8..12, 0u16..=2000).prop_map(|(tin, flow, len)| MacOp::Enqueue { tin, flow, len }),
        4 => (0..tins).prop_map(|tin| MacOp::Dequeue { tin }),
        2 => prop_oneof![9 => 0u64..=3_000_000, 1 => 0u64..=3_000_000_000].prop_map(MacOp::Advance),
        1 => (0u16..80).prop_map(MacOp::SetLimit),
    ]
}

fn mac_fq_cfg() -> impl Strategy<Value = MacFqConfig> {
    (0usize..16, 0u32..1600, 0usize..64, 0u64..40_000, dur_ns(0, 30_000_000), dur_ns(1, 200_000_000), any::<u64>())
        .prop_map(|(flows, quantum, limit_packets, memory_limit, target, interval, seed)| MacFqConfig {
            flows,
            quantum,
            limit_packets,
            memory_limit,
            target,
            interval,
            seed,
            ..Default::default()
        })
        .prop_flat_map(|c| (Just(c), any::<bool>(), prop::option::of(dur_ns(0, 30_000_000)), any::<bool>(), 0u8..4))
        .prop_map(|(c, ecn, ce_threshold, ce_threshold_l4s_only, aqm)| MacFqConfig {
            ecn,
            ce_threshold,
            ce_threshold_l4s_only,
            // One case in four: DualPI2's coupled AQM per tin in place of CoDel per flow.
            aqm: if aqm == 0 { FlowAqm::DualPi2(DualPi2Config { target: c.target, ..Default::default() }) } else { FlowAqm::Codel },
            ..c
        })
}

fn mac_case() -> impl Strategy<Value = (MacFqConfig, u8, Vec<MacOp>)> {
    (mac_fq_cfg(), 1u8..5).prop_flat_map(|(c, tins)| (Just(c), Just(tins), prop::collection::vec(mac_op(tins), 0..300)))
}

fn mac_drive(cfg: MacFqConfig, tins: u8, ops: &[MacOp], heap: Option<(usize, usize)>) -> Result<Vec<Out>, TestCaseError> {
    let mut q: MacFq<TP> = MacFq::new(cfg, tins as usize);
    if let Some((on, off)) = heap {
        q.set_fattest_heap(on, off);
    }
    let mut now = Instant::ZERO;
    let mut inside: BTreeMap<u64, (u8, TP)> = BTreeMap::new();
    let mut outs = Vec::new();
    let mut prev = q.stats();
    let mut next_id = 0;
    let deq = |q: &mut MacFq<TP>, tin: u8, now, inside: &mut BTreeMap<u64, (u8, TP)>, outs: &mut Vec<Out>| -> Result<(), TestCaseError> {
        let mut dropped = Vec::new();
        let got = q.dequeue(now, tin as u32, |p| dropped.push(p));
        for d in dropped {
            let e = inside.remove(&d.id);
            prop_assert!(e.is_some_and(|(t, _)| t == tin), "CoDel dropped a packet not of this tin");
            outs.push(Out::Dropped(d.id));
        }
        if let Some(p) = got {
            let e = inside.remove(&p.id);
            prop_assert!(e.is_some_and(|(t, _)| t == tin), "dequeued a packet not of this tin");
            ecn_kept(e.unwrap().1.ecn, p.ecn)?;
            outs.push(Out::Sent(p.id));
        } else {
            prop_assert_eq!(q.tin_packets(tin as u32), 0, "dequeue of a backlogged tin gave nothing");
        }
        Ok(())
    };
    for op in ops {
        match *op {
            MacOp::Enqueue { tin, flow, len } => {
                let pkt = TP { len: len as u32, flow: flow as u32, id: next_id, ecn: ecn_of(len as u32) };
                next_id += 1;
                inside.insert(pkt.id, (tin, pkt));
                let mut dropped = Vec::new();
                q.enqueue(now, tin as u32, pkt, |p| dropped.push(p));
                prop_assert!(dropped.len() <= 1 || q.len_bytes() <= q.params().memory_limit);
                for d in dropped {
                    prop_assert!(inside.remove(&d.id).is_some(), "overlimit drop of an unknown packet");
                    outs.push(Out::Rejected(d.id));
                }
                prop_assert!(q.len_packets() <= q.limit(), "over the packet limit");
                prop_assert!(q.len_bytes() <= q.params().memory_limit, "over the memory limit");
            }
            MacOp::Dequeue { tin } => deq(&mut q, tin, now, &mut inside, &mut outs)?,
            MacOp::Advance(dt) => now = Instant(now.0.saturating_add(dt)),
            MacOp::SetLimit(l) => {
                q.set_limit(l as usize);
                prop_assert!(q.limit() >= 1);
            }
        }
        mac_check(&q, tins, &inside, &prev)?;
        prev = q.stats();
    }
    for tin in 0..tins {
        let mut guard = 0;
        while q.tin_packets(tin as u32) > 0 {
            guard += 1;
            prop_assert!(guard <= 100_000, "drain does not terminate");
            deq(&mut q, tin, now, &mut inside, &mut outs)?;
            mac_check(&q, tins, &inside, &prev)?;
            prev = q.stats();
        }
        prop_assert!(q.dequeue(now, tin as u32, |_| panic!("drop from an empty tin")).is_none());
    }
    prop_assert!(inside.is_empty());
    prop_assert_eq!(q.len_packets(), 0);
    Ok(outs)
}

fn mac_check(q: &MacFq<TP>, tins: u8, inside: &BTreeMap<u64, (u8, TP)>, prev: &QdiscStats) -> Result<(), TestCaseError> {
    if let Err(e) = q.invariants() {
        return Err(TestCaseError::fail(format!("invariants: {e}")));
    }
    let s = q.stats();
    prop_assert!(monotone(prev, &s));
    prop_assert_eq!(q.len_packets(), inside.len());
    prop_assert_eq!(q.len_bytes(), inside.values().map(|(_, p)| p.len as u64).sum::<u64>());
    let mut sum = QdiscStats::default();
    for t in 0..tins {
        let ts = q.tin_stats(t as u32);
        let held = inside.values().filter(|(x, _)| *x == t);
        let (hp, hb) = held.fold((0u64, 0u64), |(n, b), (_, p)| (n + 1, b + p.len as u64));
        prop_assert_eq!(q.tin_packets(t as u32) as u64, hp);
        prop_assert_eq!(q.tin_bytes(t as u32), hb);
        // Per-tin conservation: arrived = dequeued + overlimit + CoDel drops + queued.
        prop_assert_eq!(ts.arrived, ts.dequeued + ts.overlimit + ts.codel_drops + hp, "tin {} packets", t);
        prop_assert_eq!(ts.arrived_bytes, ts.dequeued_bytes + ts.overlimit_bytes + ts.codel_drop_bytes + hb, "tin {} bytes", t);
        sum.arrived += ts.arrived;
        sum.dequeued += ts.dequeued;
        sum.dropped += ts.overlimit + ts.codel_drops;
    }
    prop_assert_eq!((sum.arrived, sum.dequeued, sum.dropped), (s.arrived, s.dequeued, s.dropped));
    prop_assert!(q.overmemory() <= q.overlimit());
    Ok(())
}

proptest! {
    #![proptest_config(cases(256))]

    #[test]
    fn mac_fq_invariants((cfg, tins, ops) in mac_case()) {
        let a = mac_drive(cfg, tins, &ops, None)?;
        let b = mac_drive(cfg, tins, &ops, None)?;
        prop_assert_eq!(&a, &b);
        // The fattest flow found through the lazy heap (always on, or switching at 2 / 1
        // flows holding packets) is the one the scan finds: the same drops, the same order.
        let c = mac_drive(cfg, tins, &ops, Some((0, 0)))?;
        prop_assert_eq!(&a, &c);
        let d = mac_drive(cfg, tins, &ops, Some((2, 1)))?;
        prop_assert_eq!(&a, &d);
    }
}

// ---------------------------------------------------------------------------------------------
// WQM, the buffer sizer, as a sans-IO controller.

#[derive(Clone, Copy, Debug)]
enum WqmOp {
    Input(WqmInput),
    Advance(u64),
    Spurious,
}

fn channel() -> impl Strategy<Value = lasthop_algo::aqm::wqm::ChannelTimes> {
    (0u64..200_000_000, 0u64..200_000_000, 0u64..200_000_000).prop_map(|(a, b, t)| lasthop_algo::aqm::wqm::ChannelTimes {
        active: Duration(a),
        busy: Duration(b),
        tx: Duration(t),
    })
}

fn wqm_op() -> impl Strategy<Value = WqmOp> {
    prop_oneof![
        2 => prop_oneof![Just(0u64), 1u64..2_000_000_000, Just(u64::MAX)].prop_map(|r| WqmOp::Input(WqmInput::TxRate(BitRate(r)))),
        2 => prop_oneof![0u64..5_000_000, Just(u64::MAX)].prop_map(|b| WqmOp::Input(WqmInput::BacklogBytes(Bytes(b)))),
        1 => any::<u32>().prop_map(|b| WqmOp::Input(WqmInput::BacklogPackets(b))),
        1 => prop_oneof![0u32..300, Just(u32::MAX)].prop_map(|a| WqmOp::Input(WqmInput::AggregateLength(a))),
        1 => channel().prop_map(|c| WqmOp::Input(WqmInput::ChannelInterval(c))),
        1 => channel().prop_map(|c| WqmOp::Input(WqmInput::ChannelSurvey(c))),
        3 => prop_oneof![9 => 0u64..300_000_000, 1 => 0u64..100_000_000_000].prop_map(WqmOp::Advance),
        1 => Just(WqmOp::Spurious),
    ]
}

fn wqm_cfg() -> impl Strategy<Value = WqmConfig> {
    (
        dur_ns(1, 500_000_000),
        dur_ns(1, 50_000_000),
        prop_oneof![Just(WqmVariant::Aimd), Just(WqmVariant::Aiad), Just(WqmVariant::Miad), Just(WqmVariant::Mimd)],
        1u64..9000,
        prop_oneof![Just(None), (1u32..5000).prop_map(Some)],
        1u32..64,
        1u64..10_000,
        1u32..256,
    )
        .prop_map(|(interval, limit, variant, ps, b_max, b_min, top_mbps, k_max)| WqmConfig {
            interval,
            limit,
            variant,
            packet_size: Bytes(ps),
            b_max,
            b_min,
            top_rate: BitRate::from_mbps(top_mbps),
            k_max,
            ..WqmConfig::default()
        })
        .prop_filter("valid config", |c| c.validate().is_ok())
}

fn wqm_drive(cfg: WqmConfig, ops: &[WqmOp]) -> Result<Vec<(u64, u32)>, TestCaseError> {
    let mut now = Instant::ZERO;
    let mut w = Wqm::new(cfg, now).map_err(|e| TestCaseError::fail(format!("valid config rejected: {e}")))?;
    let b_max = w.params().b_max;
    let mut outs = Vec::new();
    let mut last: Option<u32> = None;
    let mut prev = *w.stats();
    for op in ops {
        match *op {
            WqmOp::Input(i) => w.handle_input(now, i),
            WqmOp::Advance(dt) => {
                now = Instant(now.0.saturating_add(dt));
                let mut guard = 0;
                // A late wake-up evaluates once and skips the missed instants.
                while w.poll_timeout().is_some_and(|t| t <= now) {
                    guard += 1;
                    prop_assert!(guard < 3, "timer does not move past now");
                    w.handle_timeout(now);
                }
            }
            WqmOp::Spurious => {
                if w.poll_timeout().is_none_or(|t| t > now) {
                    let (v, s) = (*w.vars(), *w.stats());
                    w.handle_timeout(now);
                    prop_assert_eq!(v, *w.vars(), "early timeout changed state");
                    prop_assert_eq!(s, *w.stats());
                }
            }
        }
        while let Some(WqmOutput::SetLimit(b)) = w.poll_output() {
            prop_assert!(b >= 1 && b <= b_max, "limit {} outside [1, {}]", b, b_max);
            prop_assert!(last != Some(b), "repeated limit {}", b);
            last = Some(b);
            outs.push((now.0, b));
        }
        if let Err(e) = w.invariants() {
            return Err(TestCaseError::fail(format!("invariants: {e}")));
        }
        prop_assert_eq!(w.limit(), last, "limit() differs from the last output");
        let s = *w.stats();
        prop_assert!(
            s.intervals >= prev.intervals && s.increases >= prev.increases && s.decreases >= prev.decreases
                && s.skipped >= prev.skipped && s.raised_to_b_min >= prev.raised_to_b_min && s.outputs >= prev.outputs
        );
        prop_assert_eq!(s.outputs, outs.len() as u64);
        prev = s;
    }
    Ok(outs)
}

proptest! {
    #![proptest_config(cases(256))]

    #[test]
    fn wqm_invariants(cfg in wqm_cfg(), ops in prop::collection::vec(wqm_op(), 0..200)) {
        let a = wqm_drive(cfg, &ops)?;
        let b = wqm_drive(cfg, &ops)?;
        prop_assert_eq!(a, b);
    }
}
