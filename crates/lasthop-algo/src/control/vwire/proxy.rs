//! The split proxy's decisions, sans-IO: what the simulator's AP (`lasthop-sim`
//! `world/hosts/vwire.rs`) and the live proxy (`lasthop-live` `tools/vwire/`) both run, so a flow is
//! classified, measured, allocated and gated by the same code in both hosts.
//!
//! A host opens a **slot** per split flow ([`SplitProxy::open`]; a slot is a scheduler class —
//! one flow per class, as the paper's per-class queues with one application each) and then:
//!
//! * reports each segment the WiFi-side sender transmits ([`SplitProxy::on_segment`]) — the
//!   classifier's packets;
//! * every sample interval (10 ms) hands the summed WiFi-side socket backlog (SIOCOUTQ) to the
//!   bottleneck detector ([`SplitProxy::on_sample`]), which switches the token scheduler
//!   between managed and FIFO (§III-F);
//! * every period (2 s) hands each slot's link rate L_i and the bytes its station has
//!   acknowledged ([`SplitProxy::on_period`]): each flow is classified by the forest (unless its
//!   class is fixed), gets its class's utility (unless fixed), its goodput over the period is
//!   measured, and the controller's allocation b_i = a_i·L_i becomes the scheduler's rates;
//! * whenever relay bytes could be written into the WiFi-side sockets, asks
//!   [`SplitProxy::plan_writes`] how many bytes of which flow to write, in order: unmanaged,
//!   everything each socket has room for; managed, one MSS at a time in the token scheduler's
//!   order, a flow without tokens served only when no flow holding tokens is held back by the
//!   WiFi (work conservation, our rule — the paper gives none: more than two segments in its
//!   socket that its sender cannot send yet, or relay data and a full socket).
//!
//! The Virtual Wires method is covered by Columbia University patents (US 10,687,341 B2 and
//! US 11,297,634).

use super::features::{AppClass, DeviceType, FeatureConfig, FeatureWindow};
use super::feedback::{
    BottleneckConfig, BottleneckDetector, ControllerConfig, FlowMeasurement, VwireController,
};
use super::forest::Forest;
use super::scheduler::{SchedulerConfig, TokenScheduler};
use super::utility::Utility;
use crate::control::FieldError;
use alloc::vec;
use alloc::vec::Vec;
use lasthop_core::Instant;

/// Parameters of a [`SplitProxy`].
#[derive(Clone, Debug)]
pub struct ProxyConfig {
    /// Slots (= scheduler classes): the most split flows at once. The simulator uses one per
    /// split flow of the spec. Default 256.
    pub slots: usize,
    /// Run the Virtual Wires loop (classifier → optimizer → token scheduler); false = the proxy
    /// only splits (every write unmanaged). Default true.
    pub enabled: bool,
    pub controller: ControllerConfig,
    pub detector: BottleneckConfig,
    pub features: FeatureConfig,
    /// Serve beyond the allocation when no flow with tokens waits (work conservation).
    pub work_conserving: bool,
}

impl Default for ProxyConfig {
    fn default() -> Self {
        ProxyConfig {
            slots: 256,
            enabled: true,
            controller: ControllerConfig::default(),
            detector: BottleneckConfig::default(),
            features: FeatureConfig::default(),
            work_conserving: true,
        }
    }
}

/// One split flow's decider state.
#[derive(Clone, Debug)]
struct Slot {
    feat: FeatureWindow,
    device: DeviceType,
    fixed_class: Option<AppClass>,
    fixed_utility: Option<Utility>,
    class: AppClass,
    utility: Utility,
    /// Station-acknowledged bytes at the start of the current period.
    acked_mark: u64,
}

/// What a host knows about one slot's sockets when it asks [`SplitProxy::plan_writes`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct FlowIo {
    pub slot: usize,
    /// Relay bytes in the proxy, not yet written into the WiFi-side socket.
    pub unread: u64,
    /// Written into the WiFi-side socket and not acknowledged (SIOCOUTQ).
    pub outq: u64,
    /// Of those, in flight (sent and not acknowledged); `outq − in_flight` is unsent.
    pub in_flight: u64,
    /// The socket's send buffer (what `outq` may reach).
    pub sndbuf: u64,
    /// Bytes per managed write (the WiFi side's MSS).
    pub mss: u64,
}

impl FlowIo {
    fn room(&self) -> u64 {
        self.sndbuf.saturating_sub(self.outq)
    }
    fn waits_on_wifi(&self) -> bool {
        let unsent = self.outq.saturating_sub(self.in_flight);
        unsent > 2 * self.mss || (self.unread > 0 && self.room() == 0)
    }
}

/// One slot's figures for a period.
#[derive(Clone, Debug, PartialEq)]
pub struct SlotPeriod {
    pub slot: usize,
    /// The class in force after this period's prediction.
    pub class: AppClass,
    /// The forest's prediction this period (None: no packets in the window, or vwire off).
    pub predicted: Option<AppClass>,
    pub goodput_bps: f64,
    pub link_rate_bps: f64,
    /// b_i and a_i allocated (0 with vwire off or when the optimizer failed).
    pub alloc_rate_bps: f64,
    pub alloc_airtime: f64,
}

/// A period's outcome.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct PeriodRecord {
    pub slots: Vec<SlotPeriod>,
    /// Whether the scheduler is managed (the WiFi side is the bottleneck).
    pub managed: bool,
    /// U used and Σ u_i(b_i) of the allocation (0 without one).
    pub airtime_budget: f64,
    pub utility: f64,
}

/// The Virtual Wires deciders for a split proxy; see the module documentation.
#[derive(Clone, Debug)]
pub struct SplitProxy {
    cfg: ProxyConfig,
    slots: Vec<Option<Slot>>,
    ctl: VwireController,
    sched: TokenScheduler,
    detector: BottleneckDetector,
    forest: Forest,
    /// Scratch for `plan_writes`.
    backlog: Vec<u64>,
}

impl SplitProxy {
    pub fn new(cfg: ProxyConfig, forest: Forest) -> Result<Self, FieldError> {
        let sched = TokenScheduler::new(SchedulerConfig {
            classes: cfg.slots,
            work_conserving: cfg.work_conserving,
            ..SchedulerConfig::default()
        })?;
        cfg.features.validate()?;
        Ok(SplitProxy {
            slots: vec![None; cfg.slots],
            ctl: VwireController::new(cfg.controller)?,
            sched,
            detector: BottleneckDetector::new(cfg.detector)?,
            forest,
            backlog: vec![0; cfg.slots],
            cfg,
        })
    }

    pub fn config(&self) -> &ProxyConfig {
        &self.cfg
    }
    pub fn scheduler(&self) -> &TokenScheduler {
        &self.sched
    }
    pub fn detector(&self) -> &BottleneckDetector {
        &self.detector
    }
    pub fn controller(&self) -> &VwireController {
        &self.ctl
    }
    pub fn is_managed(&self) -> bool {
        self.cfg.enabled && self.sched.is_managed()
    }

    /// A new split flow; `None` when every slot is taken (the host then forwards the flow
    /// unmanaged). Its class is `fixed_class`, else bulk until the forest says otherwise; its
    /// utility `fixed_utility`, else its class's.
    pub fn open(&mut self, device: DeviceType, fixed_class: Option<AppClass>, fixed_utility: Option<Utility>) -> Option<usize> {
        let slot = self.slots.iter().position(Option::is_none)?;
        let class = fixed_class.unwrap_or(AppClass::Bulk);
        self.slots[slot] = Some(Slot {
            feat: FeatureWindow::new(self.cfg.features).expect("features validated at build"),
            device,
            utility: fixed_utility.clone().unwrap_or_else(|| class.default_utility()),
            fixed_class,
            fixed_utility,
            class,
            acked_mark: 0,
        });
        Some(slot)
    }

    /// The flow in `slot` is gone; the slot (and its scheduler class) is free again.
    pub fn close(&mut self, slot: usize) {
        if let Some(s) = self.slots.get_mut(slot) {
            *s = None;
        }
    }

    pub fn is_open(&self, slot: usize) -> bool {
        self.slots.get(slot).is_some_and(Option::is_some)
    }

    /// The class and utility in force for `slot`.
    pub fn class_of(&self, slot: usize) -> Option<(AppClass, &Utility)> {
        self.slots.get(slot)?.as_ref().map(|s| (s.class, &s.utility))
    }

    /// The WiFi-side sender of `slot` transmitted a segment of `ip_len` octets at `now`.
    pub fn on_segment(&mut self, slot: usize, now: Instant, ip_len: u32) {
        if let Some(Some(s)) = self.slots.get_mut(slot) {
            s.feat.on_packet(now, ip_len);
        }
    }

    /// A sample of Σ SIOCOUTQ over the WiFi-side sockets: the detector decides whether the WiFi
    /// is the bottleneck, and the scheduler follows. Returns whether it is managed now.
    pub fn on_sample(&mut self, now: Instant, outq_sum: u64) -> bool {
        if !self.cfg.enabled {
            return false;
        }
        let bottleneck = self.detector.on_sample(now, outq_sum);
        if bottleneck != self.sched.is_managed() {
            self.sched.set_managed(now, bottleneck);
        }
        self.sched.is_managed()
    }

    /// Close a period at `now` of length `secs`: `inputs` is (slot, L_i in bit/s, bytes the
    /// station has acknowledged so far) for every open slot, in the host's order.
    pub fn on_period(&mut self, now: Instant, secs: f64, inputs: &[(usize, f64, u64)]) -> PeriodRecord {
        let mut rec = PeriodRecord::default();
        let mut goodput = Vec::with_capacity(inputs.len());
        for &(slot, rate, acked) in inputs {
            let s = self.slots[slot].as_mut().expect("an open slot");
            let predicted = if self.cfg.enabled {
                let x = s.feat.features(now, s.device).to_array();
                let k = if s.feat.is_empty() { None } else { AppClass::from_index(self.forest.predict(&x)) };
                if let Some(k) = k {
                    if s.fixed_class.is_none() {
                        s.class = k;
                    }
                }
                k
            } else {
                None
            };
            if s.fixed_utility.is_none() {
                s.utility = s.class.default_utility();
            }
            let g = acked.saturating_sub(s.acked_mark) as f64 * 8.0 / secs;
            s.acked_mark = acked;
            goodput.push(g);
            rec.slots.push(SlotPeriod { slot, class: s.class, predicted, goodput_bps: g, link_rate_bps: rate, alloc_rate_bps: 0.0, alloc_airtime: 0.0 });
        }
        if self.cfg.enabled {
            let ms: Vec<FlowMeasurement<'_>> = inputs
                .iter()
                .zip(&goodput)
                .map(|(&(slot, rate, _), &g)| FlowMeasurement { id: slot as u64, link_rate_bps: rate, goodput_bps: g, utility: &self.slots[slot].as_ref().expect("open").utility })
                .collect();
            let mut rates = vec![0.0; self.cfg.slots];
            if let Ok(a) = self.ctl.on_period(now, &ms) {
                for (fa, r) in a.flows.iter().zip(rec.slots.iter_mut()) {
                    r.alloc_rate_bps = fa.rate_bps;
                    r.alloc_airtime = fa.airtime;
                    rates[fa.id as usize] = fa.rate_bps;
                }
                rec.airtime_budget = a.airtime_budget;
                rec.utility = a.utility;
            }
            self.sched.set_rates(now, &rates);
            rec.managed = self.sched.is_managed();
        }
        rec
    }

    /// The writes into the WiFi-side sockets to make now, in order, as (slot, bytes), appended
    /// to `out`; `io` describes each open slot that has a socket (see the module doc). The
    /// scheduler is charged for every planned write, so the host must make them.
    pub fn plan_writes(&mut self, now: Instant, io: &mut [FlowIo], out: &mut Vec<(usize, u64)>) {
        if !self.is_managed() {
            for f in io.iter_mut() {
                let k = f.unread.min(f.room());
                if k > 0 {
                    f.unread -= k;
                    f.outq += k;
                    out.push((f.slot, k));
                    if self.cfg.enabled {
                        self.sched.on_sent(now, f.slot, k);
                    }
                }
            }
            return;
        }
        loop {
            for b in self.backlog.iter_mut() {
                *b = 0;
            }
            for f in io.iter() {
                self.backlog[f.slot] = if f.room() > 0 { f.unread } else { 0 };
            }
            let Some(c) = self.sched.next_class(now, &self.backlog) else { break };
            if self.sched.tokens(c) <= 0.0 {
                // Beyond the allocation: only if no flow holding tokens waits on the WiFi.
                let waits = io.iter().any(|f| self.sched.tokens(f.slot) > 0.0 && f.waits_on_wifi());
                if waits {
                    break;
                }
            }
            let f = io.iter_mut().find(|f| f.slot == c).expect("a planned slot has io");
            let k = f.mss.min(f.unread).min(f.room());
            f.unread -= k;
            f.outq += k;
            out.push((c, k));
            self.sched.on_sent(now, c, k);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use lasthop_core::Duration;

    fn proxy(slots: usize) -> SplitProxy {
        SplitProxy::new(ProxyConfig { slots, ..ProxyConfig::default() }, Forest::shipped()).unwrap()
    }

    fn io(slot: usize, unread: u64, outq: u64) -> FlowIo {
        FlowIo { slot, unread, outq, in_flight: outq, sndbuf: 100_000, mss: 1448 }
    }

    #[test]
    fn slots_are_reused_and_bounded() {
        let mut p = proxy(2);
        let a = p.open(DeviceType::Unknown, None, None).unwrap();
        let b = p.open(DeviceType::Tv, Some(AppClass::Video4k), None).unwrap();
        assert_eq!((a, b), (0, 1));
        assert!(p.open(DeviceType::Unknown, None, None).is_none());
        assert_eq!(p.class_of(b).unwrap().0, AppClass::Video4k);
        p.close(a);
        assert!(!p.is_open(a));
        assert_eq!(p.open(DeviceType::Unknown, None, None), Some(0));
    }

    #[test]
    fn unmanaged_writes_fill_each_socket() {
        let mut p = proxy(3);
        for _ in 0..2 {
            p.open(DeviceType::Unknown, None, None);
        }
        let mut v = vec![io(0, 500_000, 0), io(1, 10_000, 95_000)];
        let mut out = Vec::new();
        p.plan_writes(Instant::ZERO, &mut v, &mut out);
        assert_eq!(out, vec![(0, 100_000), (1, 5_000)]);
        assert_eq!(v[0].unread, 400_000);
    }

    #[test]
    fn managed_writes_follow_tokens_and_conserve_work_only_when_nobody_waits() {
        let mut p = proxy(2);
        let a = p.open(DeviceType::Unknown, None, Some(Utility::log(1.0))).unwrap();
        let b = p.open(DeviceType::Unknown, None, Some(Utility::log(1.0))).unwrap();
        // The WiFi backlog stays above 64 KiB for 200 ms: managed.
        let mut t = Instant::ZERO;
        while !p.on_sample(t, 1 << 20) {
            t += Duration::from_millis(10);
        }
        assert!(t >= Instant::ZERO + Duration::from_millis(200));
        // a has no link (L = 0): nothing allocated; b gets the airtime.
        let rec = p.on_period(t, 2.0, &[(a, 0.0, 0), (b, 50e6, 25_000_000)]);
        assert!(rec.managed);
        assert_eq!(rec.slots[0].alloc_rate_bps, 0.0);
        assert!(rec.slots[1].alloc_rate_bps > 0.0);
        let a_io = |unread| FlowIo { slot: a, unread, outq: 0, in_flight: 0, sndbuf: 1 << 20, mss: 1448 };
        // b has nothing new to write but 20 segments in its socket it cannot send yet: it
        // holds tokens and waits on the WiFi.
        let b_waits = FlowIo { slot: b, unread: 0, outq: 20 * 1448, in_flight: 0, sndbuf: 1 << 20, mss: 1448 };
        // a spends the bucket it was given when management began (3028 bytes: three segments
        // take it below zero), then nothing more while b waits.
        let mut out = Vec::new();
        p.plan_writes(t, &mut [a_io(10 << 20), b_waits], &mut out);
        assert_eq!(out, vec![(a, 1448); 3]);
        for ms in 1..50u64 {
            out.clear();
            p.plan_writes(t + Duration::from_millis(ms), &mut [a_io(10 << 20), b_waits], &mut out);
            assert!(out.is_empty(), "{out:?}");
        }
        // b no longer waits: a is served beyond its allocation (work conservation).
        out.clear();
        let b_idle = FlowIo { outq: 0, ..b_waits };
        p.plan_writes(t + Duration::from_millis(60), &mut [a_io(4 * 1448), b_idle], &mut out);
        assert_eq!(out, vec![(a, 1448); 4]);
        assert!(p.scheduler().stats().excess_sends >= 4);
    }

    #[test]
    fn goodput_and_classes_per_period() {
        let mut p = proxy(1);
        let s = p.open(DeviceType::Unknown, None, None).unwrap();
        let rec = p.on_period(Instant::ZERO + Duration::from_secs(2), 2.0, &[(s, 100e6, 2_500_000)]);
        assert_eq!(rec.slots[0].goodput_bps, 10e6);
        assert_eq!(rec.slots[0].predicted, None, "no packets yet");
        assert_eq!(rec.slots[0].class, AppClass::Bulk);
        // Full-size segments every 100 µs for 2 s: a saturating transfer.
        for k in 0..20_000u64 {
            p.on_segment(s, Instant(2_000_000_000 + k * 100_000), 1500);
        }
        let rec = p.on_period(Instant(4_000_000_000), 2.0, &[(s, 100e6, 5_000_000)]);
        assert_eq!(rec.slots[0].goodput_bps, 10e6);
        assert!(rec.slots[0].predicted.is_some());
    }
}
