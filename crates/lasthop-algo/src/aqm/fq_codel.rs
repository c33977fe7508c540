//! FQ-CoDel, "The Flow Queue CoDel Packet Scheduler and Active Queue Management Algorithm",
//! RFC 8290.
//!
//! Implements, from the RFC text:
//! * §4.1 Enqueue: packets are hashed (the host's [`QueuedPacket::flow_hash`], mixed with a
//!   per-instance perturbation derived from `seed`) into one of `flows` queues and
//!   timestamped. A queue that is in neither list becomes active: it is appended to the list
//!   of new queues with its deficit set to `quantum`. When the total exceeds the packet limit,
//!   the packet at the head of the queue with the largest backlog in bytes ("the fattest
//!   flow") is dropped.
//! * §4.2 Dequeue: deficit round robin over the new list first, then the old list. A queue
//!   whose deficit is exhausted gets `quantum` more and moves to the tail of the old list.
//!   Otherwise CoDel (RFC 8289, with the shared `target` / `interval`, state kept per queue)
//!   dequeues from it; the returned packet's size is charged to the deficit. A queue found
//!   empty is moved from the new list to the tail of the old list (so a flow cannot keep new
//!   priority by emptying and refilling), or, if it was in the old list, removed (inactive).
//! * §5.2 parameters and defaults: interval 100 ms, target 5 ms, packet limit 10240, quantum
//!   1514, flows 1024.
//!
//! Simplifications: the limit is in packets only (no separate memory limit in bytes); an
//! overflow drops exactly one packet (the limit is exceeded by at most the arriving one); the
//! CoDel MTU ("maxpacket") rule looks at the flow's own backlog.
//!
//! ECN (§5.2.6, §5.2.7): with `ecn` (on by default, as Linux fq_codel) per-flow CoDel marks
//! ECN-capable packets instead of dropping them; `ce_threshold` marks every packet sent whose
//! sojourn exceeds it, with `ce_threshold_l4s_only` only those carrying the L4S identifier
//! (Linux's `ce_threshold_selector`/`ce_threshold_mask` set to ECT(1)), see [`super::codel`].

use super::codel::{CodelConfig, CodelVars, Marks, Stamped};
use super::{Qdisc, QdiscStats, QueuedPacket};
use alloc::collections::VecDeque;
use alloc::vec::Vec;
use lasthop_core::{Duration, Instant};

/// FQ-CoDel parameters (RFC 8290 §5.2).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FqCodelConfig {
    /// CoDel target, shared by every queue. Default 5 ms.
    pub target: Duration,
    /// CoDel interval, shared by every queue. Default 100 ms.
    pub interval: Duration,
    /// CoDel maxpacket (MTU). Default 1514.
    pub mtu: u32,
    /// DRR quantum in bytes. Default 1514.
    pub quantum: u32,
    /// Number of flow queues. Default 1024.
    pub flows: usize,
    /// Total packets held across all queues. Default 10240.
    pub limit_packets: usize,
    /// Seed of the hash perturbation (§4.1).
    pub seed: u64,
    /// Mark instead of drop for ECN-capable packets (§5.2.6). Default on.
    pub ecn: bool,
    /// CE threshold on the sojourn time (§5.2.7). Default off.
    pub ce_threshold: Option<Duration>,
    /// The CE threshold applies only to L4S packets (ECT(1), CE).
    pub ce_threshold_l4s_only: bool,
}

impl Default for FqCodelConfig {
    fn default() -> Self {
        FqCodelConfig {
            target: Duration::from_millis(5),
            interval: Duration::from_millis(100),
            mtu: 1514,
            quantum: 1514,
            flows: 1024,
            limit_packets: 10240,
            seed: 0,
            ecn: true,
            ce_threshold: None,
            ce_threshold_l4s_only: false,
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum List {
    None,
    New,
    Old,
}

#[derive(Clone, Debug)]
struct Flow<P> {
    q: VecDeque<Stamped<P>>,
    bytes: u64,
    deficit: i64,
    list: List,
    codel: CodelVars,
}

#[derive(Clone, Debug)]
pub struct FqCodel<P> {
    params: FqCodelConfig,
    codel: CodelConfig,
    perturb: u64,
    flows: Vec<Flow<P>>,
    new_flows: VecDeque<u32>,
    old_flows: VecDeque<u32>,
    packets: usize,
    bytes: u64,
    stats: QdiscStats,
    codel_drops: u64,
    marks: Marks,
    overflow_drops: u64,
    /// Times a queue became active (entered the new list).
    new_flow_count: u64,
}

/// Which list a flow queue is in, as reported by [`FqCodel::flow_state`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FlowState {
    Inactive,
    New,
    Old,
}

impl<P: QueuedPacket> FqCodel<P> {
    pub fn new(params: FqCodelConfig) -> Self {
        let n = params.flows.max(1);
        let mut sm = params.seed;
        let perturb = lasthop_core::rng::splitmix64(&mut sm);
        let flows = (0..n)
            .map(|_| Flow {
                q: VecDeque::new(),
                bytes: 0,
                deficit: 0,
                list: List::None,
                codel: CodelVars::default(),
            })
            .collect();
        FqCodel {
            // A zero quantum would never let a flow's deficit turn positive; treat it as 1 byte,
            // as `peek` does.
            params: FqCodelConfig { flows: n, quantum: params.quantum.max(1), ..params },
            codel: CodelConfig {
                target: params.target,
                interval: params.interval,
                mtu: params.mtu,
                limit_packets: usize::MAX,
                ecn: params.ecn,
                ce_threshold: params.ce_threshold,
                ce_threshold_l4s_only: params.ce_threshold_l4s_only,
            },
            perturb,
            flows,
            new_flows: VecDeque::new(),
            old_flows: VecDeque::new(),
            packets: 0,
            bytes: 0,
            stats: QdiscStats::default(),
            codel_drops: 0,
            marks: Marks::default(),
            overflow_drops: 0,
            new_flow_count: 0,
        }
    }
    pub fn params(&self) -> &FqCodelConfig {
        &self.params
    }
    /// The queue index a flow hash maps to (§4.1 hashing with perturbation).
    pub fn bucket_of(&self, flow_hash: u32) -> usize {
        let mut s = self.perturb ^ flow_hash as u64;
        (lasthop_core::rng::splitmix64(&mut s) % self.flows.len() as u64) as usize
    }
    /// Packets dropped by per-flow CoDel at dequeue.
    pub fn codel_drops(&self) -> u64 {
        self.codel_drops
    }
    /// Packets marked CE instead of dropped, and by the CE threshold.
    pub fn marks(&self) -> Marks {
        self.marks
    }
    /// Packets dropped by the overflow rule (from the fattest flow).
    pub fn overflow_drops(&self) -> u64 {
        self.overflow_drops
    }
    pub fn new_flow_count(&self) -> u64 {
        self.new_flow_count
    }
    /// Backlog (packets, bytes) of the queue a flow hash maps to.
    pub fn flow_backlog(&self, flow_hash: u32) -> (usize, u64) {
        let f = &self.flows[self.bucket_of(flow_hash)];
        (f.q.len(), f.bytes)
    }
    /// Which scheduling list the queue of `flow_hash` is in.
    pub fn flow_state(&self, flow_hash: u32) -> FlowState {
        match self.flows[self.bucket_of(flow_hash)].list {
            List::None => FlowState::Inactive,
            List::New => FlowState::New,
            List::Old => FlowState::Old,
        }
    }

    /// Index of the queue with the largest byte backlog (§4.1 "fattest flow").
    fn fattest(&self) -> usize {
        // Largest byte backlog, first index on ties; among zero-byte backlogs (zero-length
        // packets), one that holds packets. A flow with bytes always holds packets, so the
        // second key only decides between zero-byte flows.
        let key = |f: &Flow<P>| (f.bytes, !f.q.is_empty());
        let mut best = 0;
        for (i, f) in self.flows.iter().enumerate() {
            if key(f) > key(&self.flows[best]) {
                best = i;
            }
        }
        best
    }
}

impl<P: QueuedPacket> Qdisc<P> for FqCodel<P> {
    fn enqueue(&mut self, now: Instant, pkt: P) -> Result<(), P> {
        let len = pkt.len_bytes() as u64;
        self.stats.arrived += 1;
        self.stats.arrived_bytes += len;
        let idx = self.bucket_of(pkt.flow_hash());
        let quantum = self.params.quantum as i64;
        let f = &mut self.flows[idx];
        f.q.push_back(Stamped { pkt, t: now });
        f.bytes += len;
        self.packets += 1;
        self.bytes += len;
        if f.list == List::None {
            // §4.1: an inactive queue joins the tail of the new list with a full quantum.
            f.list = List::New;
            f.deficit = quantum;
            self.new_flows.push_back(idx as u32);
            self.new_flow_count += 1;
        }
        if self.packets > self.params.limit_packets {
            // §4.1 overflow: drop from the head of the queue with the largest byte backlog.
            let fat = self.fattest();
            let f = &mut self.flows[fat];
            let victim = f.q.pop_front().expect("fattest flow holds a packet").pkt;
            let vlen = victim.len_bytes() as u64;
            f.bytes -= vlen;
            self.packets -= 1;
            self.bytes -= vlen;
            self.stats.dropped += 1;
            self.stats.dropped_bytes += vlen;
            self.overflow_drops += 1;
            // An emptied queue stays in its list; dequeue retires it (§4.2).
            return Err(victim);
        }
        Ok(())
    }

    fn dequeue<F: FnMut(P)>(&mut self, now: Instant, mut on_drop: F) -> Option<P> {
        let FqCodel {
            params,
            codel,
            flows,
            new_flows,
            old_flows,
            packets,
            bytes,
            stats,
            codel_drops,
            marks,
            ..
        } = self;
        let quantum = params.quantum as i64;
        loop {
            // §4.2: serve the new list first, then the old list.
            let (from_new, idx) = if let Some(&i) = new_flows.front() {
                (true, i)
            } else if let Some(&i) = old_flows.front() {
                (false, i)
            } else {
                return None;
            };
            let Flow {
                q,
                bytes: fbytes,
                deficit,
                list,
                codel: cv,
            } = &mut flows[idx as usize];
            if *deficit <= 0 {
                // Deficit exhausted: top up and rotate to the tail of the old list.
                *deficit += quantum;
                if from_new {
                    new_flows.pop_front();
                } else {
                    old_flows.pop_front();
                }
                old_flows.push_back(idx);
                *list = List::Old;
                continue;
            }
            let pop = || {
                let s = q.pop_front()?;
                let l = s.pkt.len_bytes() as u64;
                *fbytes -= l;
                *packets -= 1;
                *bytes -= l;
                Some((s, *fbytes))
            };
            let drop = |p: P| {
                stats.dropped += 1;
                stats.dropped_bytes += p.len_bytes() as u64;
                *codel_drops += 1;
                on_drop(p);
            };
            match cv.dequeue(codel, now, pop, drop, marks) {
                Some(p) => {
                    *deficit -= p.len_bytes() as i64;
                    stats.dequeued += 1;
                    stats.dequeued_bytes += p.len_bytes() as u64;
                    return Some(p);
                }
                None => {
                    // Empty queue: new -> tail of old; old -> removed (inactive).
                    if from_new {
                        new_flows.pop_front();
                        old_flows.push_back(idx);
                        *list = List::Old;
                    } else {
                        old_flows.pop_front();
                        *list = List::None;
                    }
                }
            }
        }
    }

    /// The packet the scheduler would send next, ignoring CoDel drops: replays the DRR
    /// rotation (new list, then old list topped up round by round) without mutating.
    fn peek(&self) -> Option<P> {
        let q = self.params.quantum.max(1) as i64;
        for &i in &self.new_flows {
            let f = &self.flows[i as usize];
            if f.deficit > 0 {
                if let Some(s) = f.q.front() {
                    return Some(s.pkt);
                }
            }
        }
        // Old list, followed by the new-list queues that rotate onto it.
        let seq = self
            .old_flows
            .iter()
            .map(|&i| (i, self.flows[i as usize].deficit))
            .chain(self.new_flows.iter().map(|&i| {
                let d = self.flows[i as usize].deficit;
                (i, if d <= 0 { d + q } else { d })
            }));
        let mut best: Option<(i64, u32)> = None;
        for (i, d) in seq {
            if self.flows[i as usize].q.is_empty() {
                continue;
            }
            let rounds = if d > 0 { 0 } else { -d / q + 1 };
            if best.is_none_or(|(r, _)| rounds < r) {
                best = Some((rounds, i));
            }
        }
        best.and_then(|(_, i)| self.flows[i as usize].q.front().map(|s| s.pkt))
    }
    fn len_packets(&self) -> usize {
        self.packets
    }
    fn len_bytes(&self) -> u64 {
        self.bytes
    }
    fn stats(&self) -> QdiscStats {
        self.stats
    }
    fn invariants(&self) -> Result<(), &'static str> {
        super::conservation(&self.stats, self.packets, self.bytes)?;
        if self.packets > self.params.limit_packets {
            return Err("packet limit exceeded");
        }
        let (mut np, mut nb, mut n_new, mut n_old) = (0usize, 0u64, 0usize, 0usize);
        for f in &self.flows {
            np += f.q.len();
            let b: u64 = f.q.iter().map(|s| s.pkt.len_bytes() as u64).sum();
            if b != f.bytes {
                return Err("flow byte count out of sync");
            }
            nb += b;
            match f.list {
                List::None if !f.q.is_empty() => return Err("backlogged flow in no list"),
                List::New => n_new += 1,
                List::Old => n_old += 1,
                List::None => {}
            }
        }
        if np != self.packets || nb != self.bytes {
            return Err("totals out of sync with flows");
        }
        if n_new != self.new_flows.len() || n_old != self.old_flows.len() {
            return Err("list membership out of sync");
        }
        if self
            .new_flows
            .iter()
            .any(|&i| self.flows[i as usize].list != List::New)
            || self
                .old_flows
                .iter()
                .any(|&i| self.flows[i as usize].list != List::Old)
        {
            return Err("flow listed in the wrong list");
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::aqm::test_util::{p, random_ops, TP};

    #[test]
    fn random_ops_conserve() {
        let mut rng = lasthop_core::Rng::from_seed(0xF9);
        let (mut law, mut over) = (0, 0);
        for case in 0..60u64 {
            let cfg = FqCodelConfig {
                flows: 1 + (case as usize * 7) % 40,
                limit_packets: 1 + (case as usize * 13) % 200,
                quantum: 100 + (case as u32 * 311) % 3000,
                target: Duration::from_micros(300 + 500 * case),
                interval: Duration::from_millis(3 + case % 40),
                mtu: if case % 5 == 0 { 0 } else { 1514 },
                seed: case,
                ecn: case % 2 == 0,
                ce_threshold: (case % 3 == 0).then(|| Duration::from_micros(700 * (1 + case % 4))),
                ce_threshold_l4s_only: case % 4 == 0,
            };
            let mut q = FqCodel::new(cfg);
            random_ops(&mut q, &mut rng, 3000, |_, _| {});
            law += q.codel_drops();
            over += q.overflow_drops();
        }
        assert!(law > 100 && over > 100, "{law} {over}");
    }

    /// peek() agrees with the next dequeue when CoDel cannot drop (time frozen).
    #[test]
    fn peek_matches_dequeue() {
        let mut rng = lasthop_core::Rng::from_seed(12);
        let mut q = FqCodel::new(FqCodelConfig {
            flows: 8,
            quantum: 700,
            ..Default::default()
        });
        let now = Instant(1);
        for id in 0..20_000u64 {
            if rng.bernoulli(0.5) {
                let _ = q.enqueue(
                    now,
                    p(
                        rng.gen_range_inclusive(9) as u32,
                        40 + rng.gen_range_inclusive(1460) as u32,
                        id,
                    ),
                );
            } else {
                let want = q.peek();
                assert_eq!(
                    q.dequeue(now, |_| panic!("no drops with frozen time")),
                    want
                );
            }
        }
    }

    fn distinct(q: &FqCodel<TP>, a: u32, b: u32) {
        assert_ne!(
            q.bucket_of(a),
            q.bucket_of(b),
            "test flows collide; pick other hashes"
        );
    }

    /// §4.1–4.2 new-flow priority: a sparse flow's packet overtakes a bulk backlog.
    #[test]
    fn sparse_flow_goes_first() {
        let mut q = FqCodel::new(FqCodelConfig::default());
        distinct(&q, 1, 2);
        let t = Instant::ZERO;
        for i in 0..100 {
            q.enqueue(t, p(1, 1500, i)).unwrap();
        }
        // Serve two bulk packets: the bulk flow has spent its quantum (deficit 1514 - 3000).
        for _ in 0..2 {
            assert_eq!(q.dequeue(t, |_| {}).unwrap().flow, 1);
        }
        assert_eq!(q.flow_state(1), FlowState::New);
        q.enqueue(t, p(2, 200, 1000)).unwrap();
        assert_eq!(q.flow_state(2), FlowState::New);
        assert_eq!(q.peek().unwrap().id, 1000);
        let next = q.dequeue(t, |_| {}).unwrap();
        assert_eq!(
            next.id, 1000,
            "sparse packet should be dequeued before the bulk backlog"
        );
        assert_eq!(q.flow_backlog(1).0, 98);
        assert_eq!(q.flow_state(1), FlowState::Old);
        // The sparse queue is now empty: on the next visit it moves to the old list, not out.
        assert_eq!(q.dequeue(t, |_| {}).unwrap().flow, 1);
        assert_eq!(q.flow_state(2), FlowState::Old);
        // Refilling while still listed as old gives no new-flow priority (§4.2).
        q.enqueue(t, p(2, 200, 1001)).unwrap();
        assert_eq!(q.flow_state(2), FlowState::Old);
        q.invariants().unwrap();
    }

    /// An emptied queue visited from the old list is removed (inactive).
    #[test]
    fn empty_flow_retired() {
        let mut q = FqCodel::new(FqCodelConfig::default());
        let t = Instant::ZERO;
        q.enqueue(t, p(5, 300, 0)).unwrap();
        assert_eq!(q.dequeue(t, |_| {}).unwrap().id, 0);
        assert_eq!(q.flow_state(5), FlowState::New);
        assert_eq!(q.dequeue(t, |_| {}), None);
        assert_eq!(q.flow_state(5), FlowState::Inactive);
        q.enqueue(t, p(5, 300, 1)).unwrap();
        assert_eq!(q.flow_state(5), FlowState::New);
        assert_eq!(q.new_flow_count(), 2);
        q.invariants().unwrap();
    }

    /// DRR byte fairness between two always-backlogged flows of different packet sizes.
    #[test]
    fn drr_byte_fairness() {
        let mut q = FqCodel::new(FqCodelConfig::default());
        distinct(&q, 10, 20);
        let t = Instant::ZERO;
        let mut id = 0;
        let (mut b10, mut b20) = (0u64, 0u64);
        for _ in 0..20_000 {
            while q.flow_backlog(10).0 < 20 {
                q.enqueue(t, p(10, 1500, id)).unwrap();
                id += 1;
            }
            while q.flow_backlog(20).0 < 20 {
                q.enqueue(t, p(20, 300, id)).unwrap();
                id += 1;
            }
            let x = q
                .dequeue(t, |_| panic!("no codel drops at frozen time"))
                .unwrap();
            if x.flow == 10 {
                b10 += x.len as u64;
            } else {
                b20 += x.len as u64;
            }
        }
        let ratio = b10 as f64 / b20 as f64;
        assert!(
            (ratio - 1.0).abs() < 0.03,
            "byte ratio {ratio} ({b10} vs {b20})"
        );
    }

    /// §4.1 overflow: drop from the head of the flow with the largest byte backlog (not the
    /// one with the most packets, and not the arriving flow).
    #[test]
    fn overflow_hits_fattest_flow() {
        let mut q = FqCodel::new(FqCodelConfig {
            limit_packets: 20,
            ..Default::default()
        });
        distinct(&q, 1, 2);
        distinct(&q, 1, 3);
        distinct(&q, 2, 3);
        let t = Instant::ZERO;
        for i in 0..5 {
            q.enqueue(t, p(1, 1500, i)).unwrap(); // 7500 bytes in 5 packets
        }
        for i in 0..15 {
            q.enqueue(t, p(2, 100, 100 + i)).unwrap(); // 1500 bytes in 15 packets
        }
        assert_eq!(q.len_packets(), 20);
        let r = q.enqueue(t, p(2, 100, 999));
        assert_eq!(
            r,
            Err(p(1, 1500, 0)),
            "head of the fattest (byte) flow is dropped"
        );
        assert_eq!(q.flow_backlog(1), (4, 6000));
        assert_eq!(q.flow_backlog(2), (16, 1600));
        // A third flow arriving also pushes out flow 1's head.
        assert_eq!(q.enqueue(t, p(3, 64, 5000)), Err(p(1, 1500, 1)));
        assert_eq!(q.overflow_drops(), 2);
        assert_eq!(q.len_packets(), 20);
        q.invariants().unwrap();
    }

    /// Per-flow CoDel: a bulk flow with a standing queue gets CoDel drops (reported through
    /// on_drop) while a sparse flow sharing the link does not.
    #[test]
    fn per_flow_codel_drops_bulk_only() {
        let mut q = FqCodel::new(FqCodelConfig::default());
        distinct(&q, 1, 2);
        let step = 100_000u64; // 0.1 ms per dequeue
        let mut id = 0;
        let mut t = 0u64;
        let mut dropped = alloc::vec::Vec::new();
        for k in 0..30_000u64 {
            // Bulk: two arrivals per dequeue slot; sparse: one packet every 20 ms.
            for _ in 0..2 {
                let _ = q.enqueue(Instant(t), p(1, 1500, id));
                id += 1;
            }
            if k % 200 == 0 {
                // Overflow (if any) pushes out the fattest flow's head: always the bulk flow.
                if let Err(v) = q.enqueue(Instant(t), p(2, 100, id)) {
                    assert_eq!(v.flow, 1);
                }
                id += 1;
            }
            q.dequeue(Instant(t), |x| dropped.push(x));
            t += step;
        }
        assert!(q.codel_drops() > 10);
        assert_eq!(dropped.len() as u64, q.codel_drops());
        assert!(dropped.iter().all(|x| x.flow == 1));
        assert!(q.flow_backlog(2).0 <= 1);
        q.invariants().unwrap();
    }
}
