//! mac80211's transmit queues: one flow table shared by every station's queue, FQ-CoDel
//! scheduling inside each station's queue, and overflow dropped from the fattest flow of the
//! whole radio.
//!
//! Linux mac80211 (net/mac80211/tx.c, `ieee80211_txq_setup_flows`, `ieee80211_tx_dequeue`) runs
//! its per-station, per-TID queues ("tins") over the generic flow queue of include/net/fq.h and
//! fq_impl.h. This module follows that design (read, not copied):
//! * **Classify** (`fq_flow_classify`): a packet's flow hash, perturbed per radio and scaled to
//!   the table by multiply-and-shift (`reciprocal_scale`), selects one of `flows` entries (4096)
//!   of a table shared by all tins. An entry held by another tin's
//!   flow is not shared: the packet goes to its own tin's default flow (a collision).
//! * **Enqueue** (`fq_tin_enqueue`): the arrival is always appended. A flow that is in no list
//!   joins the tail of its tin's new list with a deficit of one `quantum` (300 bytes,
//!   `fq_init`). Then, while the radio holds more than `limit_packets` packets (8192 by
//!   default; `iw phy … set txq limit`) or more than `memory_limit` bytes (16 MiB, 4 MiB on
//!   hardware without VHT), one packet is dropped from the head of the flow with the largest
//!   byte backlog across all tins, counted as an overlimit drop of that flow's tin. mac80211
//!   keeps `fq->backlogs` sorted: among flows of equal backlog, one that just grew goes
//!   first and one that just shrank goes last; the rank kept per flow reproduces that order.
//! * **Dequeue** (`fq_tin_dequeue`): deficit round robin within the tin, new list before old
//!   list, as RFC 8290 §4.2, except that a new flow found empty moves to the old list only
//!   when the old list is not empty; otherwise (and for an empty old flow) it leaves the lists
//!   and releases its table entry.
//! * **CoDel per flow** (RFC 8289 with mac80211's `local->cparams`): target 20 ms, interval
//!   100 ms. mac80211 never sets `cparams.mtu`, so the "less than one MTU left" exemption
//!   (RFC 8289 §5.3) applies only to a dequeue that empties the flow (MTU 0). ECN on
//!   (`__sta_info_alloc`: `sta->cparams.ecn = true`): an ECN-capable packet is marked CE
//!   where CoDel would drop it; `ce_threshold` off (`CODEL_DISABLED_THRESHOLD`) unless set.
//!
//! * **Or DualPI2's coupled AQM per tin** ([`FlowAqm::DualPi2`], not in Linux: the L4S question
//!   of what mac80211's queues would do with RFC 9332's AQM instead of CoDel). The flows and
//!   their DRR stay as above; CoDel per flow gives way to one [`CoupledAqm`] per tin (a
//!   station's queue), which decides for each packet leaving any of the tin's flows as
//!   `dualpi2_dequeue` decides for the packet leaving its queue: an L4S packet (ECT(1), CE) is
//!   marked if its own sojourn exceeds the 1 ms step, or with the coupled p_CL = k·p'; a Classic
//!   one is marked (ECT(0)) or dropped (Not-ECT) with p_C = p'^2, and above p_Cmax dropped.
//!   Every `t_update` (16 ms) p' follows PI2 on the tin's queueing delay: the sojourn of its
//!   oldest head packet, the larger of the Classic and L4S heads as Appendix A.2 takes it, over
//!   all the tin's flows. FQ's flow isolation replaces DualPI2's own L/C scheduler, so the
//!   coupling balances windows within a tin (the scalable flows' marks follow the Classic
//!   flows' p'), not the share of the link, which DRR already splits. The updates run when the
//!   tin next enqueues or dequeues, each with the heads as they are then (exact but for a head
//!   the overlimit drops of another tin's arrival removed in between); the clock starts at the
//!   tin's first arrival. Linux's `must_drop` and A.2's Th_len guards are not applied (per-flow
//!   backlogs are small); the overlimit drops stay mac80211's (the fattest flow).
//!
//! Simplifications: memory is counted as frame octets (the kernel counts `skb->truesize`,
//! which depends on the NIC driver's buffers); the per-station CoDel
//! parameters older kernels chose for slow stations (`sta_update_codel_params`, 50 ms / 300 ms,
//! removed upstream in 2025) are not applied.

use super::codel::{CodelConfig, CodelVars, Marks, Stamped};
use super::coupled::CoupledAqm;
use super::coupled::DualPi2Config;
use super::{QdiscStats, QueuedPacket};
use alloc::collections::{BinaryHeap, VecDeque};
use alloc::vec::Vec;
use lasthop_core::{Duration, Instant};

/// Parameters of the radio's flow queue (mac80211's defaults).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct MacFqConfig {
    /// Entries of the shared flow table. Default 4096 (`ieee80211_txq_setup_flows`).
    pub flows: usize,
    /// DRR quantum in bytes. Default 300 (`fq_init`).
    pub quantum: u32,
    /// Packets held across all tins. Default 8192 (`fq_init`).
    pub limit_packets: usize,
    /// Bytes held across all tins. Default 16 MiB (`fq_init`).
    pub memory_limit: u64,
    /// CoDel target. Default 20 ms (`local->cparams`).
    pub target: Duration,
    /// CoDel interval. Default 100 ms.
    pub interval: Duration,
    /// Seed of the hash perturbation.
    pub seed: u64,
    /// CoDel marks ECN-capable packets instead of dropping them. Default on (mac80211).
    pub ecn: bool,
    /// CoDel's CE threshold on the sojourn time; None (the default): off.
    pub ce_threshold: Option<Duration>,
    /// The CE threshold applies only to L4S packets (ECT(1), CE).
    pub ce_threshold_l4s_only: bool,
    /// The AQM of each tin's flows: mac80211's CoDel per flow (default), or DualPI2's coupled
    /// AQM per tin (then `target`, `interval`, `ecn` and the CE threshold do not apply).
    pub aqm: FlowAqm,
}

/// The AQM inside mac80211's flow queue.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub enum FlowAqm {
    /// CoDel per flow, as mac80211 has it.
    #[default]
    Codel,
    /// DualPI2's coupled AQM per tin with these parameters (their queue limits and scheduler
    /// unused; the seed mixed with the tin's index).
    DualPi2(DualPi2Config),
}

impl MacFqConfig {
    /// mac80211's memory limit on hardware without VHT support: "4 Mbytes is 64 max-size
    /// aggregates in 802.11n".
    pub const MEMORY_LIMIT_NO_VHT: u64 = 4 << 20;
}

impl Default for MacFqConfig {
    fn default() -> Self {
        MacFqConfig {
            flows: 4096,
            quantum: 300,
            limit_packets: 8192,
            memory_limit: 16 << 20,
            target: Duration::from_millis(20),
            interval: Duration::from_millis(100),
            seed: 0,
            ecn: true,
            ce_threshold: None,
            ce_threshold_l4s_only: false,
            aqm: FlowAqm::Codel,
        }
    }
}

const NO_TIN: u32 = u32::MAX;
const ABSENT: u32 = u32::MAX;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum List {
    None,
    New,
    Old,
}

#[derive(Clone, Debug)]
struct Flow<P> {
    q: VecDeque<Stamped<P>>,
    backlog: u64,
    deficit: i64,
    /// The tin that holds this entry (`flow->tin`), `NO_TIN` when free.
    tin: u32,
    list: List,
    codel: CodelVars,
    /// Order among flows of equal backlog in `fq->backlogs` (higher first).
    rank: i64,
}

impl<P> Flow<P> {
    fn new() -> Self {
        Flow { q: VecDeque::new(), backlog: 0, deficit: 0, tin: NO_TIN, list: List::None, codel: CodelVars::default(), rank: 0 }
    }
}

/// Monotone counters of one tin (a station's queue), as `iw station dump` reports them.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct TinStats {
    pub arrived: u64,
    pub arrived_bytes: u64,
    pub dequeued: u64,
    pub dequeued_bytes: u64,
    /// Packets dropped from this tin's flows by the radio-wide limits.
    pub overlimit: u64,
    pub overlimit_bytes: u64,
    /// Packets dropped at dequeue by the flows' AQM (CoDel, or DualPI2 per tin).
    pub codel_drops: u64,
    pub codel_drop_bytes: u64,
    /// Packets the AQM marked CE (CoDel instead of a drop, or DualPI2's p_C, p_CL and step),
    /// and of those, by a sojourn threshold (CoDel's CE threshold, DualPI2's L4S step).
    pub ecn_marks: u64,
    pub ce_threshold_marks: u64,
    /// Arrivals whose table entry was held by another tin (sent to the default flow).
    pub collisions: u64,
    /// Times one of this tin's flows took a table entry (`tin->flows`).
    pub flows: u64,
}

#[derive(Clone, Debug, Default)]
struct Tin {
    new_flows: VecDeque<u32>,
    old_flows: VecDeque<u32>,
    packets: usize,
    bytes: u64,
    stats: TinStats,
    /// DualPI2's coupled AQM of this tin ([`FlowAqm::DualPi2`]).
    coupled: Option<CoupledAqm>,
}

/// Radio-wide totals and the set of flows with a backlog (for the fattest-flow search).
#[derive(Clone, Debug, Default)]
struct Totals {
    packets: usize,
    bytes: u64,
    seq: i64,
    backlogged: Vec<u32>,
    /// Position of each flow in `backlogged`, `ABSENT` when it holds no packet.
    pos: Vec<u32>,
    /// While many flows hold packets (a dense cell), `(backlog, rank, flow)` of every change,
    /// largest first: an entry is current while the flow still has that backlog and rank, and
    /// stale entries are skipped when the fattest flow is asked for. With few flows the scan
    /// of `backlogged` is cheaper and this is `None`. Either way the same flow is found.
    heap: Option<BinaryHeap<(u64, i64, u32)>>,
}

/// Flows holding packets above which the fattest is found through `Totals::heap`, and below
/// which it is dropped again (hysteresis: not rebuilt back and forth).
const HEAP_ON: usize = 256;
const HEAP_OFF: usize = 128;

impl Totals {
    #[inline]
    fn grew<P>(&mut self, id: u32, f: &mut Flow<P>) {
        self.seq += 1;
        f.rank = self.seq;
        if self.pos[id as usize] == ABSENT {
            self.pos[id as usize] = self.backlogged.len() as u32;
            self.backlogged.push(id);
        }
        if let Some(h) = &mut self.heap {
            h.push((f.backlog, f.rank, id));
            self.bound_heap();
        }
    }
    /// Stale entries pile up while nothing overflows: past a bound the heap is let go, and
    /// the next `fattest` builds it again from the flows as they are.
    fn bound_heap(&mut self) {
        if self.heap.as_ref().is_some_and(|h| h.len() > 8 * self.backlogged.len() + 4096) {
            self.heap = None;
        }
    }
    /// A packet left flow `id` (now holding `backlog` bytes); `empty` when it was the flow's
    /// last (zero-length packets leave a flow with packets and no bytes, so the set follows
    /// packets, not bytes).
    #[inline]
    fn shrank(&mut self, id: u32, backlog: u64, rank: &mut i64, empty: bool) {
        self.seq += 1;
        *rank = -self.seq;
        if empty {
            let at = self.pos[id as usize] as usize;
            self.pos[id as usize] = ABSENT;
            self.backlogged.swap_remove(at);
            if let Some(&moved) = self.backlogged.get(at) {
                self.pos[moved as usize] = at as u32;
            }
        } else if let Some(h) = &mut self.heap {
            h.push((backlog, *rank, id));
            self.bound_heap();
        }
    }
}

/// The radio's transmit queues: `tins` station queues over one flow table.
#[derive(Clone, Debug)]
pub struct MacFq<P> {
    params: MacFqConfig,
    codel: CodelConfig,
    perturb: u64,
    /// The shared table (`params.flows` entries), then one default flow per tin.
    flows: Vec<Flow<P>>,
    tins: Vec<Tin>,
    totals: Totals,
    stats: QdiscStats,
    overlimit: u64,
    overmemory: u64,
    collisions: u64,
    /// `HEAP_ON` / `HEAP_OFF` (tests set others: `set_fattest_heap`).
    heap_on: usize,
    heap_off: usize,
}

impl<P: QueuedPacket> MacFq<P> {
    pub fn new(params: MacFqConfig, tins: usize) -> Self {
        let n = params.flows.max(1);
        let mut sm = params.seed;
        let perturb = lasthop_core::rng::splitmix64(&mut sm);
        let total = n + tins;
        MacFq {
            params: MacFqConfig {
                flows: n,
                // DRR needs a positive quantum (a zero one would never top a deficit up).
                quantum: params.quantum.max(1),
                limit_packets: params.limit_packets.max(1),
                ..params
            },
            codel: CodelConfig {
                target: params.target,
                interval: params.interval,
                mtu: 0,
                limit_packets: usize::MAX,
                ecn: params.ecn,
                ce_threshold: params.ce_threshold,
                ce_threshold_l4s_only: params.ce_threshold_l4s_only,
            },
            perturb,
            flows: (0..total).map(|_| Flow::new()).collect(),
            tins: (0..tins)
                .map(|i| Tin {
                    coupled: match params.aqm {
                        FlowAqm::Codel => None,
                        FlowAqm::DualPi2(c) => {
                            let mut sm = params.seed ^ (i as u64 + 1).wrapping_mul(0x9E37_79B9_7F4A_7C15);
                            Some(CoupledAqm::new(DualPi2Config { seed: lasthop_core::rng::splitmix64(&mut sm), ..c }))
                        }
                    },
                    ..Tin::default()
                })
                .collect(),
            totals: Totals { pos: alloc::vec![ABSENT; total], ..Totals::default() },
            stats: QdiscStats::default(),
            overlimit: 0,
            overmemory: 0,
            collisions: 0,
            heap_on: HEAP_ON,
            heap_off: HEAP_OFF,
        }
    }

    pub fn params(&self) -> &MacFqConfig {
        &self.params
    }
    pub fn tins(&self) -> usize {
        self.tins.len()
    }
    /// The table entry a flow hash maps to.
    pub fn bucket_of(&self, flow_hash: u32) -> usize {
        let mut s = self.perturb ^ flow_hash as u64;
        // The perturbed 32-bit hash scaled to the table (`reciprocal_scale`, as fq_impl.h).
        let h = (lasthop_core::rng::splitmix64(&mut s) >> 32) as u32;
        ((h as u64 * self.params.flows as u64) >> 32) as usize
    }
    /// Change the packet limit (`iw phy … set txq limit`); it applies from the next arrival.
    pub fn set_limit(&mut self, limit: usize) {
        self.params.limit_packets = limit.max(1);
    }
    pub fn limit(&self) -> usize {
        self.params.limit_packets
    }
    pub fn len_packets(&self) -> usize {
        self.totals.packets
    }
    pub fn len_bytes(&self) -> u64 {
        self.totals.bytes
    }
    pub fn stats(&self) -> QdiscStats {
        self.stats
    }
    /// Drops by the packet or memory limit (`fq->overlimit`).
    pub fn overlimit(&self) -> u64 {
        self.overlimit
    }
    /// Of those, drops while over the memory limit (`fq->overmemory`).
    pub fn overmemory(&self) -> u64 {
        self.overmemory
    }
    pub fn collisions(&self) -> u64 {
        self.collisions
    }
    pub fn tin_packets(&self, tin: u32) -> usize {
        self.tins[tin as usize].packets
    }
    pub fn tin_bytes(&self, tin: u32) -> u64 {
        self.tins[tin as usize].bytes
    }
    pub fn tin_stats(&self, tin: u32) -> TinStats {
        self.tins[tin as usize].stats
    }
    /// Backlog (packets, bytes) of the flow that a packet of `flow_hash` for `tin` would join.
    pub fn flow_backlog(&self, tin: u32, flow_hash: u32) -> (usize, u64) {
        let f = &self.flows[self.flow_for(tin, flow_hash)];
        (f.q.len(), f.backlog)
    }

    /// The packets queued in the flow a packet of `flow_hash` for `tin` joins, oldest first.
    pub fn flow_packets(&self, tin: u32, flow_hash: u32) -> impl Iterator<Item = &P> + '_ {
        self.flows[self.flow_for(tin, flow_hash)].q.iter().map(|s| &s.pkt)
    }

    /// Take the `at`-th packet (oldest first) out of that flow, as sch_cake's ACK filter takes a
    /// redundant ACK out of its flow (`cake_ack_filter`): the backlogs shrink as for a packet
    /// dropped at the limit, and it counts as a drop of the discipline. The flow keeps its place
    /// in the scheduler (it still holds the packet that made the other redundant).
    pub fn remove_from_flow(&mut self, tin: u32, flow_hash: u32, at: usize) -> Option<P> {
        let fid = self.flow_for(tin, flow_hash);
        let Flow { q, backlog, rank, tin: ft, .. } = &mut self.flows[fid];
        let s = q.remove(at)?;
        let l = s.pkt.len_bytes() as u64;
        *backlog -= l;
        let ti = &mut self.tins[*ft as usize];
        ti.packets -= 1;
        ti.bytes -= l;
        self.totals.packets -= 1;
        self.totals.bytes -= l;
        self.totals.shrank(fid as u32, *backlog, rank, q.is_empty());
        self.stats.dropped += 1;
        self.stats.dropped_bytes += l;
        Some(s.pkt)
    }

    fn flow_for(&self, tin: u32, flow_hash: u32) -> usize {
        self.flow_at(tin, self.bucket_of(flow_hash))
    }

    /// The flow a packet of `tin` whose hash selects entry `idx` joins (`fq_flow_classify`).
    fn flow_at(&self, tin: u32, idx: usize) -> usize {
        let held = self.flows[idx].tin;
        if held != NO_TIN && held != tin {
            self.params.flows + tin as usize
        } else {
            idx
        }
    }

    /// `fq_tin_enqueue`: queue `pkt` for `tin`, then drop from the fattest flows while over a
    /// limit. Every dropped packet (which may be `pkt` itself, or another station's) goes to
    /// `on_drop`.
    #[inline]
    pub fn enqueue<F: FnMut(P)>(&mut self, now: Instant, tin: u32, pkt: P, mut on_drop: F) {
        self.enqueue_tins(now, tin, pkt, |_, p| on_drop(p));
    }

    /// As [`MacFq::enqueue`], each dropped packet given with the tin it was queued in.
    #[inline]
    pub fn enqueue_tins<F: FnMut(u32, P)>(&mut self, now: Instant, tin: u32, pkt: P, mut on_drop: F) {
        let len = pkt.len_bytes() as u64;
        self.stats.arrived += 1;
        self.stats.arrived_bytes += len;
        let idx = self.bucket_of(pkt.flow_hash());
        let fid = self.flow_at(tin, idx);
        let t = &mut self.tins[tin as usize];
        t.stats.arrived += 1;
        t.stats.arrived_bytes += len;
        if fid != idx {
            t.stats.collisions += 1;
            self.collisions += 1;
        }
        coupled_catch_up(&self.flows, t, now);
        let f = &mut self.flows[fid];
        if f.tin == NO_TIN {
            t.stats.flows += 1;
        }
        f.tin = tin;
        f.backlog += len;
        t.packets += 1;
        t.bytes += len;
        self.totals.packets += 1;
        self.totals.bytes += len;
        self.totals.grew(fid as u32, f);
        if f.list == List::None {
            f.list = List::New;
            f.deficit = self.params.quantum as i64;
            t.new_flows.push_back(fid as u32);
        }
        f.q.push_back(Stamped { pkt, t: now });
        let mut oom = self.totals.bytes > self.params.memory_limit;
        while self.totals.packets > self.params.limit_packets || oom {
            let Some(fat) = self.fattest() else { break };
            let Flow { q, backlog, rank, tin: ft, .. } = &mut self.flows[fat as usize];
            let Some(s) = q.pop_front() else { break };
            let l = s.pkt.len_bytes() as u64;
            *backlog -= l;
            let dropped_tin = *ft;
            let ti = &mut self.tins[*ft as usize];
            ti.packets -= 1;
            ti.bytes -= l;
            ti.stats.overlimit += 1;
            ti.stats.overlimit_bytes += l;
            self.totals.packets -= 1;
            self.totals.bytes -= l;
            self.totals.shrank(fat, *backlog, rank, q.is_empty());
            self.stats.dropped += 1;
            self.stats.dropped_bytes += l;
            self.overlimit += 1;
            if oom {
                self.overmemory += 1;
                oom = self.totals.bytes > self.params.memory_limit;
            }
            on_drop(dropped_tin, s.pkt);
        }
    }

    /// The flow at the head of mac80211's sorted `fq->backlogs`: the largest byte backlog,
    /// ties to the highest rank.
    /// Ranks are unique, so the largest `(backlog, rank)` is one flow, found by a scan of the
    /// flows holding packets or, with many, through the lazy heap (`Totals::heap`).
    fn fattest(&mut self) -> Option<u32> {
        let n = self.totals.backlogged.len();
        match &self.totals.heap {
            None if n > self.heap_on => self.rebuild_heap(),
            Some(_) if n < self.heap_off => self.totals.heap = None,
            _ => {}
        }
        let flows = &self.flows;
        let current = |&(b, r, id): &(u64, i64, u32)| {
            let f = &flows[id as usize];
            self.totals.pos[id as usize] != ABSENT && f.backlog == b && f.rank == r
        };
        if let Some(h) = &mut self.totals.heap {
            while let Some(top) = h.peek() {
                if current(top) {
                    return Some(top.2);
                }
                h.pop();
            }
            return None;
        }
        let mut best: Option<(u64, i64, u32)> = None;
        for &id in &self.totals.backlogged {
            let f = &self.flows[id as usize];
            let key = (f.backlog, f.rank, id);
            if best.is_none_or(|b| (key.0, key.1) > (b.0, b.1)) {
                best = Some(key);
            }
        }
        best.map(|b| b.2)
    }

    /// Find the fattest flow through the heap above `on` flows holding packets and by a scan
    /// below `off` (defaults 256 and 128). The same flow is found either way; tests use this
    /// to run one sequence both ways.
    #[doc(hidden)]
    pub fn set_fattest_heap(&mut self, on: usize, off: usize) {
        (self.heap_on, self.heap_off) = (on, off.min(on));
        self.totals.heap = None;
    }

    /// The heap of the flows holding packets, as they are now.
    fn rebuild_heap(&mut self) {
        let flows = &self.flows;
        let h: BinaryHeap<(u64, i64, u32)> =
            self.totals.backlogged.iter().map(|&id| (flows[id as usize].backlog, flows[id as usize].rank, id)).collect();
        self.totals.heap = Some(h);
    }

    /// `fq_tin_dequeue` with per-flow CoDel: the next packet of `tin`. Packets CoDel drops go
    /// to `on_drop` first.
    #[inline]
    pub fn dequeue<F: FnMut(P)>(&mut self, now: Instant, tin: u32, mut on_drop: F) -> Option<P> {
        let quantum = self.params.quantum as i64;
        let MacFq { codel, flows, tins, totals, stats, .. } = self;
        let t = &mut tins[tin as usize];
        coupled_catch_up(flows, t, now);
        loop {
            let (from_new, fid) = if let Some(&i) = t.new_flows.front() {
                (true, i)
            } else if let Some(&i) = t.old_flows.front() {
                (false, i)
            } else {
                return None;
            };
            let Flow { q, backlog, deficit, tin: ft, list, codel: cv, rank } = &mut flows[fid as usize];
            if *deficit <= 0 {
                if t.new_flows.len() + t.old_flows.len() == 1 {
                    // The only flow of the tin comes back to the head after each top-up: all
                    // the rotations at once (the smallest k with deficit + k·quantum > 0).
                    *deficit += (-*deficit / quantum + 1) * quantum;
                } else {
                    *deficit += quantum;
                }
                if from_new {
                    t.new_flows.pop_front();
                } else {
                    t.old_flows.pop_front();
                }
                t.old_flows.push_back(fid);
                *list = List::Old;
                continue;
            }
            let (tp, tb) = (&mut t.packets, &mut t.bytes);
            let pop = || {
                let s = q.pop_front()?;
                let l = s.pkt.len_bytes() as u64;
                *backlog -= l;
                *tp -= 1;
                *tb -= l;
                totals.packets -= 1;
                totals.bytes -= l;
                totals.shrank(fid, *backlog, rank, q.is_empty());
                Some((s, *backlog))
            };
            let (mut nd, mut ndb) = (0u64, 0u64);
            let drop = |p: P| {
                nd += 1;
                ndb += p.len_bytes() as u64;
                on_drop(p);
            };
            let got = match &mut t.coupled {
                None => {
                    let mut marks = Marks::default();
                    let got = cv.dequeue(codel, now, pop, drop, &mut marks);
                    t.stats.ecn_marks += marks.ecn;
                    t.stats.ce_threshold_marks += marks.ce_threshold;
                    got
                }
                Some(ca) => coupled_dequeue(ca, now, pop, drop, &mut t.stats),
            };
            t.stats.codel_drops += nd;
            t.stats.codel_drop_bytes += ndb;
            stats.dropped += nd;
            stats.dropped_bytes += ndb;
            match got {
                Some(p) => {
                    let l = p.len_bytes() as u64;
                    *deficit -= l as i64;
                    t.stats.dequeued += 1;
                    t.stats.dequeued_bytes += l;
                    stats.dequeued += 1;
                    stats.dequeued_bytes += l;
                    return Some(p);
                }
                None => {
                    // "Force a pass through old_flows to prevent starvation."
                    if from_new && !t.old_flows.is_empty() {
                        t.new_flows.pop_front();
                        t.old_flows.push_back(fid);
                        *list = List::Old;
                    } else {
                        if from_new {
                            t.new_flows.pop_front();
                        } else {
                            t.old_flows.pop_front();
                        }
                        *list = List::None;
                        *ft = NO_TIN;
                    }
                }
            }
        }
    }

    /// The coupled AQM of `tin` ([`FlowAqm::DualPi2`]), if it has one.
    pub fn coupled(&self, tin: u32) -> Option<&CoupledAqm> {
        self.tins[tin as usize].coupled.as_ref()
    }

    /// Conservation (radio-wide and per tin), list membership, table ownership, limits.
    pub fn invariants(&self) -> Result<(), &'static str> {
        super::conservation(&self.stats, self.totals.packets, self.totals.bytes)?;
        for t in &self.tins {
            if let Some(ca) = &t.coupled {
                ca.invariants()?;
            }
        }
        let (mut np, mut nb) = (0usize, 0u64);
        let mut per_tin = alloc::vec![(0usize, 0u64); self.tins.len()];
        for (id, f) in self.flows.iter().enumerate() {
            let b: u64 = f.q.iter().map(|s| s.pkt.len_bytes() as u64).sum();
            if b != f.backlog {
                return Err("flow backlog out of sync");
            }
            if (self.totals.pos[id] == ABSENT) != f.q.is_empty() {
                return Err("backlogged set out of sync");
            }
            np += f.q.len();
            nb += b;
            if !f.q.is_empty() {
                if f.tin == NO_TIN || f.list == List::None {
                    return Err("queued packets in a flow that no tin holds");
                }
                per_tin[f.tin as usize].0 += f.q.len();
                per_tin[f.tin as usize].1 += b;
            }
            if id >= self.params.flows && f.tin != NO_TIN && f.tin as usize != id - self.params.flows {
                return Err("default flow held by another tin");
            }
        }
        if np != self.totals.packets || nb != self.totals.bytes {
            return Err("totals out of sync with flows");
        }
        for (i, t) in self.tins.iter().enumerate() {
            if (t.packets, t.bytes) != per_tin[i] {
                return Err("tin backlog out of sync");
            }
            for (&id, want) in t.new_flows.iter().map(|x| (x, List::New)).chain(t.old_flows.iter().map(|x| (x, List::Old))) {
                let f = &self.flows[id as usize];
                if f.list != want || f.tin as usize != i {
                    return Err("flow listed in the wrong list or tin");
                }
            }
            let s = &t.stats;
            if s.arrived != s.dequeued + s.overlimit + s.codel_drops + t.packets as u64 {
                return Err("tin conservation violated");
            }
        }
        let listed: usize = self.tins.iter().map(|t| t.new_flows.len() + t.old_flows.len()).sum();
        if listed != self.flows.iter().filter(|f| f.list != List::None).count() {
            return Err("list membership out of sync");
        }
        Ok(())
    }
}

/// [`FlowAqm::DualPi2`]: start the tin's update clock and run the updates due by `now`, each
/// on the sojourn of the tin's oldest head packet at its due instant.
/// (Inlined to its test, which every packet of a tin without DualPI2 takes.)
#[inline]
fn coupled_catch_up<P>(flows: &[Flow<P>], t: &mut Tin, now: Instant) {
    if t.coupled.is_some() {
        coupled_run_due(flows, t, now);
    }
}

fn coupled_run_due<P>(flows: &[Flow<P>], t: &mut Tin, now: Instant) {
    let Tin { new_flows, old_flows, packets, coupled, .. } = t;
    let Some(ca) = coupled else { return };
    ca.start_clock(now);
    ca.run_due(now, *packets == 0, |due| {
        new_flows
            .iter()
            .chain(old_flows.iter())
            .filter_map(|&f| flows[f as usize].q.front())
            .map(|s| due.saturating_since(s.t))
            .max()
            .unwrap_or(Duration::ZERO)
    });
}

/// [`FlowAqm::DualPi2`]: the packets `pop` takes from the flow DRR chose, decided as
/// `dualpi2_dequeue` decides (L4S: step or coupled mark; Classic: p_C), until one leaves;
/// the dropped ones go to `drop`. Marks are counted in `stats` (the step's also as threshold
/// marks).
fn coupled_dequeue<P: QueuedPacket>(ca: &mut CoupledAqm, now: Instant, mut pop: impl FnMut() -> Option<(Stamped<P>, u64)>,
                                    mut drop: impl FnMut(P), stats: &mut TinStats) -> Option<P> {
    while let Some((s, _)) = pop() {
        let before = *ca.counters();
        let verdict = if s.pkt.ecn().is_l4s() { ca.l_decide(now, s.pkt, s.t, false, true) } else { ca.c_decide(s.pkt, false) };
        let after = ca.counters();
        let marks = |c: &super::DualPi2Counters| c.l_step_marks + c.l_coupled_marks + c.c_marks;
        stats.ecn_marks += marks(after) - marks(&before);
        stats.ce_threshold_marks += after.l_step_marks - before.l_step_marks;
        match verdict {
            Ok(p) => return Some(p),
            Err(p) => drop(p),
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::aqm::test_util::{p, TP};
    use crate::ecn::Ecn;
    use lasthop_core::Rng;

    /// Random enqueues to random tins, dequeues from random tins, time moving: conservation,
    /// invariants and packet identity hold, and every limit is respected after each arrival.
    #[test]
    fn random_ops_conserve() {
        let mut rng = Rng::from_seed(0x3AC);
        let (mut over, mut law, mut coll) = (0, 0, 0);
        for case in 0..40u64 {
            let tins = 1 + (case as usize % 7);
            let cfg = MacFqConfig {
                flows: 1 + (case as usize * 5) % 64,
                quantum: 100 + (case as u32 * 131) % 2000,
                limit_packets: 1 + (case as usize * 17) % 150,
                memory_limit: if case % 3 == 0 { 20_000 } else { 16 << 20 },
                target: Duration::from_micros(200 + 300 * case),
                interval: Duration::from_millis(2 + case % 30),
                seed: case,
                ecn: case % 2 == 0,
                ce_threshold: (case % 3 == 0).then(|| Duration::from_micros(700 * (1 + case % 4))),
                ce_threshold_l4s_only: case % 4 == 0,
                aqm: if case % 5 == 4 {
                    FlowAqm::DualPi2(DualPi2Config { target: Duration::from_micros(500 + 100 * case), ..Default::default() })
                } else {
                    FlowAqm::Codel
                },
            };
            let mut q: MacFq<TP> = MacFq::new(cfg, tins);
            let mut inside = alloc::collections::BTreeSet::new();
            let mut now = Instant::ZERO;
            let mut id = 0u64;
            for _ in 0..3000 {
                let r = rng.next_f64();
                if r < 0.55 {
                    let tin = rng.gen_range_inclusive(tins as u64 - 1) as u32;
                    let mut pk = p(rng.gen_range_inclusive(20) as u32, 60 + rng.gen_range_inclusive(1440) as u32, id);
                    if matches!(cfg.aqm, FlowAqm::DualPi2(_)) {
                        pk.ecn = [Ecn::NotEct, Ecn::Ect0, Ecn::Ect1, Ecn::Ce][rng.gen_range_inclusive(3) as usize];
                    }
                    id += 1;
                    inside.insert(pk.id);
                    q.enqueue(now, tin, pk, |d| assert!(inside.remove(&d.id), "dropped a packet not queued"));
                    assert!(q.len_packets() <= cfg.limit_packets);
                    assert!(q.len_bytes() <= cfg.memory_limit);
                } else if r < 0.95 {
                    let tin = rng.gen_range_inclusive(tins as u64 - 1) as u32;
                    let mut dropped = alloc::vec::Vec::new();
                    if let Some(x) = q.dequeue(now, tin, |d| dropped.push(d)) {
                        assert!(inside.remove(&x.id));
                    }
                    for d in dropped {
                        assert!(inside.remove(&d.id));
                    }
                } else {
                    now += Duration::from_micros(rng.gen_range_inclusive(20_000));
                }
                q.invariants().unwrap();
                assert_eq!(inside.len(), q.len_packets());
            }
            for t in 0..tins as u32 {
                while let Some(x) = q.dequeue(now, t, |d| assert!(inside.remove(&d.id))) {
                    assert!(inside.remove(&x.id));
                }
            }
            assert!(inside.is_empty() && q.len_packets() == 0);
            q.invariants().unwrap();
            over += q.overlimit();
            coll += q.collisions();
            law += (0..tins as u32).map(|t| q.tin_stats(t).codel_drops).sum::<u64>();
        }
        assert!(over > 100 && law > 10 && coll > 100, "overlimit {over} codel {law} collisions {coll}");
    }

    /// DualPI2 per tin (RFC 9332 Appendix A's decisions): an L4S packet that waited longer
    /// than the 1 ms step is marked, one that did not is not (p' still 0); in another tin a
    /// Classic flow standing above the 15 ms target raises that tin's p', whose square drops
    /// its Not-ECT packets and whose coupling k·p' marks the tin's L4S packets that waited less
    /// than the step; the first tin's p' stays 0.
    #[test]
    fn dualpi2_per_tin_steps_couples_and_drops() {
        let cfg = MacFqConfig { aqm: FlowAqm::DualPi2(DualPi2Config::default()), ..Default::default() };
        let mut q: MacFq<TP> = MacFq::new(cfg, 2);
        let at = |us: u64| Instant::ZERO + Duration::from_micros(us);
        let l4s = |flow: u32, id: u64| TP { ecn: Ecn::Ect1, ..p(flow, 1000, id) };
        q.enqueue(at(0), 0, l4s(1, 0), |_| panic!("under the limit"));
        q.enqueue(at(0), 0, l4s(1, 1), |_| panic!("under the limit"));
        assert_eq!(q.dequeue(at(500), 0, |_| panic!("no drop")).unwrap().ecn, Ecn::Ect1);
        assert_eq!(q.dequeue(at(2000), 0, |_| panic!("no drop")).unwrap().ecn, Ecn::Ce);
        assert_eq!((q.tin_stats(0).ecn_marks, q.tin_stats(0).ce_threshold_marks), (1, 1));
        let mut id = 10;
        for _ in 0..50 {
            q.enqueue(at(0), 1, p(2, 1000, id), |_| panic!("under the limit"));
            id += 1;
        }
        let (mut dropped, mut l4s_out, mut l4s_marked) = (0u64, 0u64, 0u64);
        for ms in 1..3000u64 {
            q.enqueue(at(ms * 1000), 1, p(2, 1000, id), |_| panic!("under the limit"));
            q.enqueue(at(ms * 1000), 1, l4s(3, id + 1), |_| panic!("under the limit"));
            id += 2;
            for _ in 0..2 {
                if let Some(x) = q.dequeue(at(ms * 1000 + 500), 1, |d| {
                    assert_eq!(d.ecn, Ecn::NotEct, "only Classic Not-ECT packets are dropped here");
                    dropped += 1;
                }) {
                    if x.flow == 3 {
                        l4s_out += 1;
                        l4s_marked += (x.ecn == Ecn::Ce) as u64;
                    }
                }
            }
            q.invariants().unwrap();
        }
        let ca = q.coupled(1).unwrap();
        assert!(ca.updates() > 150, "{:?}", ca.vars());
        assert!(dropped > 20, "Classic drops {dropped}");
        assert_eq!(ca.counters().early_drops + ca.counters().overload_drops, dropped);
        // The L4S packets left within 0.5 ms: every mark is a coupled one.
        assert!(l4s_marked > 20 && l4s_out > 1000, "{l4s_marked} of {l4s_out}");
        assert_eq!(ca.counters().l_coupled_marks, l4s_marked);
        assert_eq!(ca.counters().l_step_marks, 0);
        assert_eq!(q.tin_stats(1).codel_drops, dropped);
        assert_eq!(q.coupled(0).unwrap().vars().base_prob, 0.0);
    }

    /// The overflow drop comes from the fattest flow of the whole radio, not from the tin of
    /// the arrival: a light station's packets survive while a heavy one overloads the limit.
    #[test]
    fn overflow_drops_from_fattest_flow_across_tins() {
        let mut q: MacFq<TP> = MacFq::new(MacFqConfig { limit_packets: 10, ..Default::default() }, 2);
        let now = Instant::ZERO;
        for i in 0..10 {
            q.enqueue(now, 0, p(1, 1500, i), |_| panic!("under the limit"));
        }
        let mut dropped = alloc::vec::Vec::new();
        q.enqueue(now, 1, p(2, 100, 100), |d| dropped.push(d));
        assert_eq!(dropped, [p(1, 1500, 0)], "head of the heavy flow dropped");
        assert_eq!(q.tin_stats(0).overlimit, 1);
        assert_eq!(q.tin_stats(1).overlimit, 0);
        assert_eq!(q.tin_packets(1), 1);
    }

    /// A flow whose table entry is held by another tin goes to its own tin's default flow.
    #[test]
    fn collision_goes_to_default_flow() {
        let mut q: MacFq<TP> = MacFq::new(MacFqConfig { flows: 1, ..Default::default() }, 2);
        let now = Instant::ZERO;
        q.enqueue(now, 0, p(7, 500, 0), |_| unreachable!());
        q.enqueue(now, 1, p(7, 500, 1), |_| unreachable!());
        assert_eq!(q.collisions(), 1);
        assert_eq!(q.tin_stats(1).collisions, 1);
        q.invariants().unwrap();
        // Station 0 frees the entry; station 1's next packet takes it.
        assert_eq!(q.dequeue(now, 0, |_| {}).map(|x| x.id), Some(0));
        assert_eq!(q.dequeue(now, 0, |_| {}), None);
        q.enqueue(now, 1, p(7, 500, 2), |_| unreachable!());
        assert_eq!(q.collisions(), 1);
        assert_eq!(q.dequeue(now, 1, |_| {}).map(|x| x.id), Some(1));
        assert_eq!(q.dequeue(now, 1, |_| {}).map(|x| x.id), Some(2));
        q.invariants().unwrap();
    }

    /// DRR within a tin with the 300-byte quantum: two flows of 1500-byte packets alternate
    /// packet by packet once both are old (each turn costs 5 quanta of deficit).
    #[test]
    fn drr_within_a_tin() {
        let mut q: MacFq<TP> = MacFq::new(MacFqConfig::default(), 1);
        let now = Instant::ZERO;
        for i in 0..6 {
            q.enqueue(now, 0, p(1, 1500, i), |_| unreachable!());
        }
        for i in 0..6 {
            q.enqueue(now, 0, p(2, 1500, 10 + i), |_| unreachable!());
        }
        let order: alloc::vec::Vec<u64> = core::iter::from_fn(|| q.dequeue(now, 0, |_| {}).map(|x| x.id)).collect();
        assert_eq!(order.len(), 12);
        // Strict alternation after the first packet of each.
        for w in order.windows(2) {
            assert_ne!(w[0] / 10, w[1] / 10, "{order:?}");
        }
    }

    /// Ties at the same backlog: the flow that grew last is dropped first (sorted
    /// `fq->backlogs`), and a flow that shrank goes behind flows of equal backlog.
    #[test]
    fn fattest_ties_follow_the_sorted_backlog_list() {
        for heap in [false, true] {
            ties_case(heap);
        }
    }

    /// Ties resolved by rank, also through the lazy heap after a flow shrank and grew back to
    /// an equal backlog (its older entry then has the same backlog and a stale rank).
    #[test]
    fn fattest_through_the_heap_ignores_stale_ranks() {
        let mut q: MacFq<TP> = MacFq::new(MacFqConfig { limit_packets: 3, ..Default::default() }, 2);
        q.set_fattest_heap(0, 0);
        let now = Instant::ZERO;
        q.enqueue(now, 0, p(1, 1000, 0), |_| unreachable!());
        q.enqueue(now, 1, p(2, 1000, 1), |_| unreachable!());
        // Flow 1 (tin 0) leaves and comes back to 1000: newest grower, so first to drop.
        assert!(q.dequeue(now, 0, |_| unreachable!()).is_some());
        q.enqueue(now, 0, p(1, 1000, 2), |_| unreachable!());
        q.enqueue(now, 1, p(3, 500, 3), |_| unreachable!());
        let mut d = alloc::vec::Vec::new();
        q.enqueue(now, 1, p(4, 500, 4), |x| d.push(x.id));
        assert_eq!(d, [2], "flow 1 grew last among the 1000-byte flows");
    }

    fn ties_case(heap: bool) {
        let mut q: MacFq<TP> = MacFq::new(MacFqConfig { limit_packets: 4, ..Default::default() }, 1);
        if heap {
            q.set_fattest_heap(0, 0);
        }
        let now = Instant::ZERO;
        q.enqueue(now, 0, p(1, 1000, 0), |_| unreachable!());
        q.enqueue(now, 0, p(2, 1000, 1), |_| unreachable!());
        q.enqueue(now, 0, p(3, 1000, 2), |_| unreachable!());
        q.enqueue(now, 0, p(4, 1000, 3), |_| unreachable!());
        let mut d = alloc::vec::Vec::new();
        // Flow 5 grows to 1000 last of the equals: it is at the head and loses its packet.
        q.enqueue(now, 0, p(5, 1000, 4), |x| d.push(x.id));
        assert_eq!(d, [4]);
    }
}
