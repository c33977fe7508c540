//! CoDel, "Controlled Delay Active Queue Management", RFC 8289.
//!
//! Implements, from the RFC text:
//! * §3.1 / §5.4: every packet is timestamped on enqueue; the estimator is the sojourn time
//!   of the packet being dequeued.
//! * §3.3 / §5.6 (`control_law`): while in the dropping state the next drop is scheduled
//!   `interval / sqrt(count)` after the previous scheduled drop.
//! * §5.5 (`dequeue`) and §5.6 (`dodequeue`): the sojourn-time state machine:
//!   `first_above_time` is set one `interval` after the sojourn first exceeds `target`; a
//!   packet is "ok to drop" once the sojourn has stayed above target for a whole interval; the
//!   dropping state is left as soon as a packet's sojourn is below target; on re-entry soon
//!   after leaving, `count` restarts from the number of drops of the previous episode
//!   (`delta = count - lastcount`) rather than from 1, when `delta > 1` and
//!   `now - drop_next < 16 * interval`.
//! * §4.1 ("non-starvation") / §5.6: no drop while at most one MTU ("maxpacket") of bytes
//!   remains queued.
//! * A packet limit with tail drop on arrival (§5.4: packets arriving at a full buffer are
//!   dropped, and these drops do not count in CoDel's computations).
//!
//! * ECN (RFC 8289 §5.3 "packets are dropped or marked"): with `ecn`, a packet the control law
//!   picks is marked CE instead of dropped when it is ECN-capable, in the order of Linux's
//!   `codel_dequeue` (include/net/codel_impl.h): in the dropping state a mark ends the
//!   dequeue with the next drop scheduled by the control law; on entering it, a marked packet
//!   is sent and the state entered as after a drop.
//! * `ce_threshold` (Linux `codel_dequeue`'s last step, used by fq_codel and mac80211 for L4S):
//!   the packet sent is marked CE when its sojourn exceeds the threshold, optionally only when it
//!   carries the L4S identifier (fq_codel's `ce_threshold_selector 0x1/0x1`, RFC 9331 §4).
//!
//! The state machine lives in [`CodelVars`], which FQ-CoDel (RFC 8290 §4.2) reuses per flow.

use super::{mark_ce, Qdisc, QdiscStats, QueuedPacket};
use alloc::collections::VecDeque;
use lasthop_core::{Duration, Instant};

/// CoDel parameters (RFC 8289 §4.2, §4.3, §5.3).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CodelConfig {
    /// Acceptable standing sojourn time (TARGET, §4.3). Default 5 ms.
    pub target: Duration,
    /// Sliding window over which the minimum is judged (INTERVAL, §4.2). Default 100 ms.
    pub interval: Duration,
    /// MAXPACKET (§5.3): no drop while at most this many bytes remain queued. Default 1514.
    pub mtu: u32,
    /// Tail-drop packet limit. Default 1000 (as Linux `codel`).
    pub limit_packets: usize,
    /// Mark ECN-capable packets instead of dropping them (Linux `codel` default: off; fq_codel
    /// and mac80211's per-station CoDel: on).
    pub ecn: bool,
    /// Mark CE on every packet sent whose sojourn exceeds this (Linux `ce_threshold`); None:
    /// off, the default.
    pub ce_threshold: Option<Duration>,
    /// With `ce_threshold`: only packets carrying the L4S identifier (ECT(1) or CE).
    pub ce_threshold_l4s_only: bool,
}

impl Default for CodelConfig {
    fn default() -> Self {
        CodelConfig {
            target: Duration::from_millis(5),
            interval: Duration::from_millis(100),
            mtu: 1514,
            limit_packets: 1000,
            ecn: false,
            ce_threshold: None,
            ce_threshold_l4s_only: false,
        }
    }
}

/// Packets a dequeue marked: by the control law (instead of a drop) and by the CE threshold.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Marks {
    pub ecn: u64,
    pub ce_threshold: u64,
}

/// A queued packet with its enqueue time (RFC 8289 §5.4).
#[derive(Clone, Copy, Debug)]
pub(crate) struct Stamped<P> {
    pub pkt: P,
    pub t: Instant,
}

/// CoDel per-queue state (RFC 8289 §5.2).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CodelVars {
    /// Time at which sojourn will have been above target for a whole interval (`None` = 0 in
    /// the RFC's pseudocode: sojourn currently below target).
    pub first_above_time: Option<Instant>,
    /// Time of the next scheduled drop while dropping.
    pub drop_next: Instant,
    /// Drops since entering the dropping state (plus the reused count, §5.5).
    pub count: u32,
    /// `count` when the dropping state was last entered.
    pub lastcount: u32,
    /// In the dropping state.
    pub dropping: bool,
    /// Sojourn time of the last packet popped (Linux `ldelay`), for the CE threshold.
    pub ldelay: Duration,
}

/// `control_law` (RFC 8289 §5.6): `t + interval / sqrt(count)`.
pub fn control_law(t: Instant, interval: Duration, count: u32) -> Instant {
    let c = count.max(1) as f64;
    t + Duration((interval.as_nanos() as f64 / libm::sqrt(c) + 0.5) as u64)
}

impl CodelVars {
    /// `dodequeue` (RFC 8289 §5.6): pop the head and decide whether it is ok to drop.
    /// `pop` returns the head packet and the bytes still queued after removing it.
    fn dodequeue<P>(
        &mut self,
        c: &CodelConfig,
        now: Instant,
        pop: &mut impl FnMut() -> Option<(Stamped<P>, u64)>,
    ) -> (Option<P>, bool) {
        let Some((s, bytes_left)) = pop() else {
            // Queue empty: "first_above_time_ = 0".
            self.first_above_time = None;
            return (None, false);
        };
        let sojourn = now.saturating_since(s.t);
        self.ldelay = sojourn;
        let mut ok_to_drop = false;
        if sojourn < c.target || bytes_left <= c.mtu as u64 {
            // Below target, or less than a maxpacket left (§4.1 non-starvation): reset.
            self.first_above_time = None;
        } else {
            match self.first_above_time {
                // Just went above target: allow one interval before acting.
                None => self.first_above_time = Some(now + c.interval),
                Some(t) if now >= t => ok_to_drop = true,
                Some(_) => {}
            }
        }
        (Some(s.pkt), ok_to_drop)
    }

    /// `dequeue` (RFC 8289 §5.5). Dropped packets go to `drop`; returns the packet to send and
    /// adds the packets it marked to `marks`.
    pub(crate) fn dequeue<P: QueuedPacket>(
        &mut self,
        c: &CodelConfig,
        now: Instant,
        mut pop: impl FnMut() -> Option<(Stamped<P>, u64)>,
        mut drop: impl FnMut(P),
        marks: &mut Marks,
    ) -> Option<P> {
        let (mut p, ok_to_drop) = self.dodequeue(c, now, &mut pop);
        if p.is_none() {
            // "If queue is empty, we can't be in drop state."
            self.dropping = false;
            return None;
        }
        if self.dropping {
            if !ok_to_drop {
                // Sojourn went below target: leave the dropping state.
                self.dropping = false;
            }
            // Drop at every scheduled time that has passed, rescheduling by the control law.
            while self.dropping && now >= self.drop_next {
                self.count = self.count.saturating_add(1);
                if c.ecn && p.as_mut().is_some_and(mark_ce) {
                    // Marked, not dropped: send it; the next signal follows the control law.
                    marks.ecn += 1;
                    self.drop_next = control_law(self.drop_next, c.interval, self.count);
                    break;
                }
                if let Some(x) = p.take() {
                    drop(x);
                }
                let (np, ok) = self.dodequeue(c, now, &mut pop);
                p = np;
                if !ok {
                    self.dropping = false;
                } else {
                    self.drop_next = control_law(self.drop_next, c.interval, self.count);
                }
            }
        } else if ok_to_drop {
            // Enter the dropping state: drop (or mark) this packet and schedule the next drop.
            if c.ecn && p.as_mut().is_some_and(mark_ce) {
                marks.ecn += 1;
            } else {
                if let Some(x) = p.take() {
                    drop(x);
                }
                p = self.dodequeue(c, now, &mut pop).0;
            }
            self.dropping = true;
            // Count reuse: if we were dropping recently, start from the previous episode's
            // drop count so the rate picks up where it left off.
            let delta = self.count.saturating_sub(self.lastcount);
            self.count = 1;
            if delta > 1 && now.saturating_since(self.drop_next) < c.interval * 16 {
                self.count = delta;
            }
            self.drop_next = control_law(now, c.interval, self.count);
            self.lastcount = self.count;
        }
        if let (Some(x), Some(th)) = (p.as_mut(), c.ce_threshold) {
            if self.ldelay > th && (!c.ce_threshold_l4s_only || x.ecn().is_l4s()) && mark_ce(x) {
                marks.ce_threshold += 1;
            }
        }
        p
    }
}

/// A single CoDel queue.
#[derive(Clone, Debug)]
pub struct Codel<P> {
    params: CodelConfig,
    q: VecDeque<Stamped<P>>,
    bytes: u64,
    vars: CodelVars,
    stats: QdiscStats,
    /// Drops by the CoDel law at dequeue (subset of `stats.dropped`).
    codel_drops: u64,
    marks: Marks,
}

impl<P: QueuedPacket> Codel<P> {
    pub fn new(params: CodelConfig) -> Self {
        Codel {
            params,
            q: VecDeque::new(),
            bytes: 0,
            vars: CodelVars::default(),
            stats: QdiscStats::default(),
            codel_drops: 0,
            marks: Marks::default(),
        }
    }
    pub fn params(&self) -> &CodelConfig {
        &self.params
    }
    pub fn vars(&self) -> &CodelVars {
        &self.vars
    }
    /// Packets dropped by the control law at dequeue (the rest of `stats().dropped` are tail
    /// drops on arrival).
    pub fn codel_drops(&self) -> u64 {
        self.codel_drops
    }
    /// Packets marked CE instead of dropped, and by the CE threshold.
    pub fn marks(&self) -> Marks {
        self.marks
    }
    /// Sojourn time the head packet would have if dequeued at `now`.
    pub fn head_sojourn(&self, now: Instant) -> Option<Duration> {
        self.q.front().map(|s| now.saturating_since(s.t))
    }
}

impl<P: QueuedPacket> Qdisc<P> for Codel<P> {
    fn enqueue(&mut self, now: Instant, pkt: P) -> Result<(), P> {
        let len = pkt.len_bytes() as u64;
        self.stats.arrived += 1;
        self.stats.arrived_bytes += len;
        if self.q.len() >= self.params.limit_packets {
            self.stats.dropped += 1;
            self.stats.dropped_bytes += len;
            return Err(pkt);
        }
        self.bytes += len;
        self.q.push_back(Stamped { pkt, t: now });
        Ok(())
    }

    fn dequeue<F: FnMut(P)>(&mut self, now: Instant, mut on_drop: F) -> Option<P> {
        let Codel {
            params,
            q,
            bytes,
            vars,
            stats,
            codel_drops,
            marks,
        } = self;
        let pop = || {
            let s = q.pop_front()?;
            *bytes -= s.pkt.len_bytes() as u64;
            Some((s, *bytes))
        };
        let drop = |p: P| {
            stats.dropped += 1;
            stats.dropped_bytes += p.len_bytes() as u64;
            *codel_drops += 1;
            on_drop(p);
        };
        let out = vars.dequeue(params, now, pop, drop, marks);
        if let Some(p) = out {
            self.stats.dequeued += 1;
            self.stats.dequeued_bytes += p.len_bytes() as u64;
        }
        out
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
        if self.q.iter().map(|x| x.pkt.len_bytes() as u64).sum::<u64>() != self.bytes {
            return Err("byte count out of sync");
        }
        if self.q.len() > self.params.limit_packets {
            return Err("packet limit exceeded");
        }
        if self.codel_drops > self.stats.dropped {
            return Err("codel drops exceed drops");
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ecn::Ecn;
    use crate::aqm::test_util::{random_ops, TP};
    use alloc::vec::Vec;

    const MS: u64 = 1_000_000;

    /// Random operation sequences keep conservation, invariants and packet identity.
    #[test]
    fn random_ops_conserve() {
        let mut rng = lasthop_core::Rng::from_seed(0xC0DE1);
        let (mut law_drops, mut tail_drops, mut marks) = (0, 0, Marks::default());
        for case in 0..60 {
            let cfg = CodelConfig {
                limit_packets: 1 + case % 40 * 7,
                target: Duration::from_micros(500 + 300 * case as u64),
                interval: Duration::from_millis(5 + case as u64 % 30),
                mtu: if case % 4 == 0 { 0 } else { 1514 },
                ecn: case % 2 == 0,
                ce_threshold: (case % 3 == 0).then(|| Duration::from_micros(700 * (1 + case as u64 % 4))),
                ce_threshold_l4s_only: case % 4 == 0,
            };
            let mut q = Codel::new(cfg);
            random_ops(&mut q, &mut rng, 3000, |_, _| {});
            law_drops += q.codel_drops();
            tail_drops += q.stats().dropped - q.codel_drops();
            marks.ecn += q.marks().ecn;
            marks.ce_threshold += q.marks().ce_threshold;
        }
        // The sequences exercise both drop paths and both kinds of mark.
        assert!(
            law_drops > 100 && tail_drops > 100 && marks.ecn > 100 && marks.ce_threshold > 100,
            "{law_drops} {tail_drops} {marks:?}"
        );
    }

    /// Standing queue: a packet enqueued and one dequeued every `step`; `backlog` packets
    /// queued at the start. Returns the drop times and the queue.
    fn standing(step: u64, backlog: usize, until: u64) -> (Vec<u64>, Codel<TP>) {
        let mut q = Codel::new(CodelConfig {
            limit_packets: 100_000,
            ..Default::default()
        });
        let mut id = 0;
        for i in 0..backlog {
            let t = Instant(i as u64 * step);
            q.enqueue(
                t,
                TP {
                    len: 1000,
                    flow: 0,
                    id,
                    ecn: Ecn::NotEct,
                },
            )
            .unwrap();
            id += 1;
        }
        let start = backlog as u64 * step;
        let mut drops = Vec::new();
        let mut t = start;
        while t < until {
            q.enqueue(
                Instant(t),
                TP {
                    len: 1000,
                    flow: 0,
                    id,
                    ecn: Ecn::NotEct,
                },
            )
            .unwrap();
            id += 1;
            q.dequeue(Instant(t), |_| drops.push(t));
            t += step;
        }
        (drops, q)
    }

    /// RFC 8289 §3.3/§5.5–5.6: the first drop comes one interval after sojourn first exceeds
    /// target; then drops are spaced interval/sqrt(count): 100, 70.7, 57.7, 50, ... ms.
    #[test]
    fn control_law_spacing() {
        let step = 50_000; // 50 us
        let backlog = 1000; // 50 ms standing sojourn
        let start = backlog as u64 * step;
        let (drops, q) = standing(step, backlog, start + 1500 * MS);
        assert!(drops.len() > 12, "{}", drops.len());
        // First dequeue at `start` sees sojourn 50 ms > 5 ms; first drop one interval later.
        let first = drops[0] - start;
        assert!(
            (first as f64 - 100e6).abs() <= step as f64,
            "first drop after {first} ns"
        );
        for k in 1..12 {
            let gap = (drops[k] - drops[k - 1]) as f64;
            let want = 100e6 / libm::sqrt(k as f64);
            assert!((gap - want).abs() / want < 0.01, "gap {k}: {gap} vs {want}");
        }
        assert!(q.vars().dropping);
        q.invariants().unwrap();
    }

    /// Once sojourn falls below target, CoDel leaves the dropping state and stops dropping.
    #[test]
    fn stops_below_target() {
        let step = 50_000;
        let backlog = 1000;
        let start = backlog as u64 * step;
        let (_, mut q) = standing(step, backlog, start + 600 * MS);
        assert!(q.vars().dropping);
        // Phase 2: dequeue 5x faster than arrivals; the queue drains below target.
        let mut t = start + 600 * MS;
        let mut drops_after_below = 0;
        let mut seen_below = false;
        let mut id = 1 << 40;
        for i in 0..200_000u64 {
            if i % 5 == 0 {
                q.enqueue(
                    Instant(t),
                    TP {
                        len: 1000,
                        flow: 0,
                        id,
                        ecn: Ecn::NotEct,
                    },
                )
                .unwrap();
                id += 1;
            }
            let soj = q.head_sojourn(Instant(t));
            let mut d = 0;
            q.dequeue(Instant(t), |_| d += 1);
            if seen_below {
                drops_after_below += d;
            }
            if soj.is_some_and(|s| s < q.params().target) {
                seen_below = true;
                assert!(!q.vars().dropping);
            }
            t += 10_000;
        }
        assert!(seen_below);
        assert_eq!(drops_after_below, 0);
        assert!(!q.vars().dropping);
        q.invariants().unwrap();
    }

    /// Count reuse (RFC 8289 §5.5): re-entering the dropping state soon after leaving starts
    /// from the previous episode's drop count; re-entering much later starts from 1.
    #[test]
    fn count_reuse_on_quick_reentry() {
        for (gap_ms, expect_reuse) in [(0u64, true), (3000, false)] {
            let step = 50_000;
            let backlog = 1000;
            let start = backlog as u64 * step;
            let (_, mut q) = standing(step, backlog, start + 600 * MS);
            let c1 = q.vars().count;
            let last1 = q.vars().lastcount;
            assert!(c1 > 3, "count {c1}");
            assert_eq!(last1, 1);
            // Leave the dropping state: drain the queue at one instant (the draining may drop
            // a few more packets, growing `count`).
            let mut t = start + 600 * MS;
            while q.dequeue(Instant(t), |_| {}).is_some() {}
            assert!(!q.vars().dropping);
            let c_exit = q.vars().count;
            let delta = c_exit - last1;
            // Rebuild a 50 ms standing queue and let CoDel re-enter.
            t += gap_ms * MS;
            let mut id = 1 << 40;
            for i in 0..backlog as u64 {
                q.enqueue(
                    Instant(t + i * step),
                    TP {
                        len: 1000,
                        flow: 0,
                        id,
                        ecn: Ecn::NotEct,
                    },
                )
                .unwrap();
                id += 1;
            }
            t += backlog as u64 * step;
            let mut drops = Vec::new();
            while drops.len() < 2 {
                q.enqueue(
                    Instant(t),
                    TP {
                        len: 1000,
                        flow: 0,
                        id,
                        ecn: Ecn::NotEct,
                    },
                )
                .unwrap();
                id += 1;
                let was = q.vars().dropping;
                q.dequeue(Instant(t), |_| drops.push(t));
                if !was && q.vars().dropping {
                    let want = if expect_reuse { delta } else { 1 };
                    assert_eq!(q.vars().count, want, "re-entry count (exit count {c_exit})");
                    assert_eq!(q.vars().lastcount, want);
                }
                t += step;
            }
            let gap = (drops[1] - drops[0]) as f64;
            let c = if expect_reuse { delta } else { 1 } as f64;
            let want = 100e6 / libm::sqrt(c);
            assert!((gap - want).abs() / want < 0.01, "gap {gap} want {want}");
        }
    }

    /// §4.1 non-starvation: with at most one MTU queued, CoDel never drops.
    #[test]
    fn no_drop_below_one_mtu() {
        let mut q = Codel::new(CodelConfig::default());
        // One 1500-byte packet at a time, each sitting 50 ms: sojourn far above target.
        for i in 0..100u64 {
            q.enqueue(
                Instant(i * 50 * MS),
                TP {
                    len: 1500,
                    flow: 0,
                    id: i,
                    ecn: Ecn::NotEct,
                },
            )
            .unwrap();
            assert!(q
                .dequeue(Instant((i + 1) * 50 * MS), |_| panic!("dropped"))
                .is_some());
        }
        assert_eq!(q.codel_drops(), 0);
    }

    #[test]
    fn tail_drop_at_limit() {
        let mut q = Codel::new(CodelConfig {
            limit_packets: 2,
            ..Default::default()
        });
        let p = |id| TP {
            len: 100,
            flow: 0,
            id,
            ecn: Ecn::NotEct,
        };
        assert!(q.enqueue(Instant::ZERO, p(0)).is_ok());
        assert!(q.enqueue(Instant::ZERO, p(1)).is_ok());
        assert_eq!(q.enqueue(Instant::ZERO, p(2)), Err(p(2)));
        assert_eq!(q.peek(), Some(p(0)));
        q.invariants().unwrap();
    }
}
