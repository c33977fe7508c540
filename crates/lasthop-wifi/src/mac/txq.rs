//! Per-station transmit queues at the AP, served through the pull interface of Linux mac80211
//! (`ieee80211_next_txq`, `ieee80211_tx_dequeue`, `ieee80211_return_txq`,
//! `ieee80211_register_airtime`): the driver asks which station to serve next, pulls frames for
//! it while it builds an aggregate, hands the queue back, and reports the airtime the exchange
//! used.
//!
//! Scheduling is round-robin over stations with something to send, or airtime deficit
//! round-robin. Two queue structures sit behind it, as on a Linux AP:
//! * **FQ-CoDel** is mac80211's own: [`MacFq`], one flow table shared by every station, DRR++
//!   and CoDel within each station, and the radio-wide limit enforced by dropping from the
//!   fattest flow of any station (`fq_tin_enqueue`), so a station below its fair share loses
//!   nothing to another's overload. mac80211 keeps one such table per radio (`local->fq`) for
//!   the txqs of every TID: the sets of several access categories share one [`SharedFq`]
//!   (`TxqSet::on_shared_fq`), each owning a range of its tins, so the limit, the table and
//!   the fattest-flow drop span all ACs.
//! * **FIFO, CoDel, PIE** are qdiscs: each station's queue is the discipline, and the total
//!   limit models the interface's `txqueuelen` shared by all stations (an arrival beyond it is
//!   refused, whatever its station).
//!
//! Packets an AQM drops at dequeue are handed back to the caller. A frame pulled for an
//! aggregate that turned out not to fit is kept in a one-frame stash per station and served
//! first next time (as drivers keep such a frame at the head of the station's queue).
//!
//! The disciplines are dequeued on the host's clock ([`QdiscRun`]): with a transmit-path time
//! per packet set, the frames of a burst leave them that far apart (see
//! [`TxqSet::set_dequeue_cost`]).

use crate::mac::qdisc_run::QdiscRun;
use lasthop_algo::aqm::{AnyQdisc, AqmConfig, MacFq, MacFqConfig, Qdisc, QueuedPacket};
use lasthop_core::{Duration, Instant};
use std::cell::RefCell;
use std::collections::VecDeque;
use std::rc::Rc;

/// One radio's flow queue shared by the queue sets of its access categories (mac80211's
/// `local->fq`): each set serves its stations through a range of the table's tins.
pub type SharedFq<P> = Rc<RefCell<MacFq<P>>>;

/// Scheduler choice for the AP's station queues.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TxqSchedule {
    /// One turn (one aggregate) per station with traffic, in order.
    RoundRobin,
    /// Airtime fairness as in mac80211 (Høiland-Jørgensen et al., "Ending the Anomaly",
    /// USENIX ATC 2017): deficit round-robin over airtime. Each station's deficit is charged
    /// the airtime it actually used in both directions (`register_airtime`); `next_txq` gives a
    /// station at the head with a negative deficit `quantum` more and moves it to the back;
    /// `return_txq` puts a station back at the head, so it keeps its turn until its deficit is
    /// negative.
    Airtime { quantum: Duration },
}

impl TxqSchedule {
    /// mac80211's default station airtime weight, 256 µs per round.
    pub const AIRTIME_QUANTUM: Duration = Duration::from_micros(256);
}

/// The queue structure behind the scheduler.
#[derive(Clone, Debug)]
enum Queues<P> {
    /// One qdisc per station behind a shared `txqueuelen` (FIFO, CoDel, PIE).
    PerStation(Vec<AnyQdisc<P>>),
    /// mac80211's flow queue (FQ-CoDel): one tin per station over one flow table, possibly
    /// shared with other access categories' sets (this set's tins start at `base`).
    Fq { fq: SharedFq<P>, base: u32 },
    /// One qdisc for the whole interface (FIFO, CoDel, PIE), as Linux before mac80211's
    /// per-station queues: frames leave it in its own order, whatever their next hop, into the
    /// driver stage, which sorts them by station. `next_hop` holds each queued packet's
    /// station in the discipline's order (all three dequeue and drop at the head in arrival
    /// order); `per_sta` the packets and octets queued for each station; `drops` each
    /// station's packets the discipline dropped.
    Interface { q: Box<AnyQdisc<P>>, next_hop: VecDeque<u32>, per_sta: Vec<(usize, u64)>, drops: Vec<u64> },
}

#[derive(Clone, Debug)]
pub struct TxqSet<P> {
    schedule: TxqSchedule,
    /// Airtime deficit per station (ns), for `TxqSchedule::Airtime`.
    deficit: Vec<i64>,
    /// Each station's quantum (ns) where it is not the schedule's: mac80211's per-station
    /// `airtime_weight` (empty: every station at the schedule's `quantum`).
    quanta: Vec<i64>,
    queues: Queues<P>,
    stash: Vec<Option<P>>,
    stashed: usize,
    total_limit: usize,
    /// The limit the disciplines were built with: `set_total_limit` never goes above it.
    built_limit: usize,
    /// Packets above `total_limit` left queued when the limit was lowered (they drain; no new
    /// arrival is accepted until the count is below the limit).
    excess: usize,
    /// Packets in the per-station disciplines (not used with the flow queue, which counts).
    qlen: usize,
    /// Stations with something to send, in service order.
    active: VecDeque<u32>,
    in_active: Vec<bool>,
    /// Airtime charged to each station (both directions, as mac80211 accounts it).
    airtime: Vec<Duration>,
    dropped_total_limit: u64,
    /// The driver's own buffering below the queues (pre-4.10 ath9k), if modelled.
    stage: Option<Stage<P>>,
    /// Tins of the flow queue that the last enqueue's overlimit drops emptied (any set's).
    emptied: Vec<u32>,
    /// mac80211's scheduling round (`schedule_round[ac]`): while one is open (`in_round`),
    /// `next_txq` returns each station at most once. The pull driver opens none (it asks for
    /// one station per channel access).
    round: u32,
    in_round: bool,
    /// The round in which each station was last returned.
    served_round: Vec<u32>,
    /// The host's dequeue clock: when each dequeue happens, as the disciplines see it.
    run: QdiscRun,
}

/// The pre-4.10 ath9k driver's buffering below the qdisc (drivers/net/wireless/ath/ath9k,
/// `ath_tx_start` and xmit.c of Linux 3.x): frames leave the qdisc as soon as the driver has
/// room and wait in its per-TID software queues (and up to `ATH_AGGR_MIN_QDEPTH` = 2 aggregates
/// in the hardware queue); mac80211 stops the qdisc while more than `ATH_MAX_QDEPTH` =
/// ATH_TXBUF / 4 − ATH_TXBUF_RESERVE = 512 / 4 − 5 = 123 frames of the access category are
/// pending in the driver. Aggregates are built from the stage; a frame leaves it when it is
/// taken for transmission (the driver counts it until its completion, so this holds up to one
/// PPDU less than ath9k).
#[derive(Clone, Debug)]
struct Stage<P> {
    limit: usize,
    total: usize,
    q: Vec<VecDeque<P>>,
    /// Next station to take from the qdisc (round-robin; ath9k takes the qdisc's order).
    next: usize,
}

/// ath9k's `ATH_MAX_QDEPTH` = `ATH_TXBUF` / 4 − `ATH_TXBUF_RESERVE` = 512 / 4 − 5
/// (drivers/net/wireless/ath/ath9k/ath9k.h): the frames of one access category the driver holds
/// before `ath_tx_start` has mac80211 stop the queue; the stage's default limit.
pub const ATH_MAX_QDEPTH: usize = 512 / 4 - 5;

impl<P: QueuedPacket + PartialEq> TxqSet<P> {
    /// Per-station queues of discipline `aqm` behind a total packet limit, randomness seeded
    /// from `seed`. FQ-CoDel becomes mac80211's flow queue with its defaults and `total_limit`
    /// as its packet limit; the other disciplines get the total limit as their own (this set
    /// enforces it).
    pub fn new(stations: usize, total_limit: usize, aqm: AqmConfig, seed: u64, schedule: TxqSchedule) -> Self {
        Self::with_fq(stations, total_limit, aqm, seed, schedule, MacFqConfig::default())
    }

    /// As [`TxqSet::new`], with mac80211's flow-queue parameters given (`fq.limit_packets` and
    /// `fq.seed` are replaced by `total_limit` and `seed`), used when `aqm` is FQ-CoDel.
    pub fn with_fq(stations: usize, total_limit: usize, aqm: AqmConfig, seed: u64, schedule: TxqSchedule, fq: MacFqConfig) -> Self {
        let queues = match aqm {
            AqmConfig::FqCodel(_) => Queues::Fq { fq: Rc::new(RefCell::new(MacFq::new(MacFqConfig { limit_packets: total_limit, seed, ..fq }, stations))), base: 0 },
            _ => {
                let aqm = with_limit(aqm, total_limit);
                Queues::PerStation((0..stations).map(|i| aqm.build(seed.wrapping_add(i as u64))).collect())
            }
        };
        Self::with_queues(stations, total_limit, schedule, queues)
    }

    /// mac80211's flow queue for `ac_sets` access categories of `stations` stations each: one
    /// table of `ac_sets × stations` tins, `total_limit` packets (`fq->limit`) over all of them.
    /// Give it to [`TxqSet::on_shared_fq`] once per AC.
    pub fn shared_fq(stations: usize, ac_sets: usize, total_limit: usize, seed: u64, fq: MacFqConfig) -> SharedFq<P> {
        Rc::new(RefCell::new(MacFq::new(MacFqConfig { limit_packets: total_limit, seed, ..fq }, stations * ac_sets)))
    }

    /// The queue set of access category number `ac_set` over the radio's shared flow queue
    /// (tins `ac_set × stations ..`): its own scheduler (mac80211 schedules each AC's txqs
    /// separately, `ieee80211_next_txq(hw, ac)`), the table and the limit shared.
    pub fn on_shared_fq(stations: usize, ac_set: usize, fq: &SharedFq<P>, schedule: TxqSchedule) -> Self {
        let limit = fq.borrow().limit();
        assert!((ac_set + 1) * stations <= fq.borrow().tins(), "tins for this access category");
        Self::with_queues(stations, limit, schedule, Queues::Fq { fq: Rc::clone(fq), base: (ac_set * stations) as u32 })
    }

    /// One qdisc for the interface instead of one per station (`ap.qdisc_scope = "interface"`):
    /// the discipline station 0's queue would have had (its seed), shared by every station.
    /// Only for FIFO, CoDel and PIE, before any packet, and with a driver stage (which is what
    /// takes frames from it: [`TxqSet::add_ath9k_stage`]).
    pub fn one_qdisc_per_interface(&mut self) {
        let n = self.deficit.len();
        let Queues::PerStation(q) = &mut self.queues else { panic!("one qdisc per interface: FIFO, CoDel or PIE") };
        assert!(self.qlen == 0 && !q.is_empty(), "before any packet, with at least one station");
        let q = q.swap_remove(0);
        assert!(matches!(q, AnyQdisc::Fifo(_) | AnyQdisc::Codel(_) | AnyQdisc::Pie(_)), "FIFO, CoDel or PIE");
        self.queues = Queues::Interface { q: Box::new(q), next_hop: VecDeque::new(), per_sta: vec![(0, 0); n], drops: vec![0; n] };
    }

    fn with_queues(stations: usize, total_limit: usize, schedule: TxqSchedule, queues: Queues<P>) -> Self {
        TxqSet {
            schedule,
            deficit: vec![0; stations],
            quanta: Vec::new(),
            queues,
            stash: (0..stations).map(|_| None).collect(),
            stashed: 0,
            total_limit,
            built_limit: total_limit,
            excess: 0,
            qlen: 0,
            active: VecDeque::with_capacity(stations),
            in_active: vec![false; stations],
            airtime: vec![Duration::ZERO; stations],
            dropped_total_limit: 0,
            stage: None,
            emptied: Vec::new(),
            round: 0,
            in_round: false,
            served_round: vec![0; stations],
            run: QdiscRun::default(),
        }
    }

    /// Station `sta`'s airtime weight: the airtime its deficit gains per pass of the airtime
    /// scheduler, in place of the schedule's `quantum`. mac80211's `sta->airtime_weight`
    /// (`IEEE80211_DEFAULT_AIRTIME_WEIGHT` 256 µs; `ieee80211_next_txq` adds it to a station in
    /// deficit), which hostapd sets per station with `airtime_mode=1` and `airtime_sta_weight`
    /// (`airtime_policy_new_sta`) and `iw … station set … airtime_weight`: stations share the
    /// airtime in proportion to their weights. Nothing changes under round robin.
    pub fn set_airtime_weight(&mut self, sta: u32, weight: Duration) {
        let TxqSchedule::Airtime { quantum } = self.schedule else { return };
        if self.quanta.is_empty() {
            self.quanta = vec![quantum.as_nanos() as i64; self.deficit.len()];
        }
        self.quanta[sta as usize] = weight.as_nanos() as i64;
    }

    /// The host's transmit-path time per packet (default zero): each frame taken from the
    /// queues — into the driver stage, or into an aggregate without one — is dequeued at
    /// `max(now, previous dequeue + cost)`, so a burst of them is spread over the host's CPU
    /// time as the disciplines see it (their dequeue timestamps: PIE's departure-rate cycles,
    /// CoDel's sojourn times; see [`QdiscRun`]). Nothing else moves: the frame is in the
    /// driver's hands at once either way. With the ath9k stage a frame refilled in a burst
    /// waits behind the stage's other frames (the queues above only hold frames while the
    /// stage is full), which reach the air an aggregate or more later, well after the burst's
    /// few hundred µs; the pull driver's aggregate is built while the one before is on the
    /// air (ath9k keeps two in the hardware queue), so the host's time is hidden behind it.
    pub fn set_dequeue_cost(&mut self, cost: Duration) {
        self.run = QdiscRun::new(cost);
    }

    /// Model the pre-4.10 ath9k driver below these queues: up to [`ATH_MAX_QDEPTH`] (123) frames
    /// taken from them as soon as there is room, from which aggregates are built (see `Stage`).
    pub fn with_ath9k_stage(mut self) -> Self {
        self.add_ath9k_stage(ATH_MAX_QDEPTH);
        self
    }

    /// As [`TxqSet::with_ath9k_stage`], in place (before anything is queued), holding up to
    /// `limit` frames (ath9k's depth is a build constant; another `ATH_TXBUF`, or another
    /// stack's MAC queue below its qdisc, gives another).
    pub fn add_ath9k_stage(&mut self, limit: usize) {
        assert!(limit > 0, "a driver stage holds at least one frame");
        let n = self.deficit.len();
        self.stage = Some(Stage { limit, total: 0, q: (0..n).map(|_| VecDeque::new()).collect(), next: 0 });
    }

    /// Frames in the driver stage (0 without one).
    pub fn stage_len(&self) -> usize {
        self.stage.as_ref().map_or(0, |s| s.total)
    }

    /// Number of station queues.
    pub fn entries(&self) -> usize {
        self.deficit.len()
    }
    /// Packets queued for this set's stations (stashed frames included; not the driver stage).
    pub fn total_len(&self) -> usize {
        self.stashed
            + match &self.queues {
                Queues::PerStation(_) | Queues::Interface { .. } => self.qlen,
                Queues::Fq { .. } => self.over_tins(|f| f.len_packets(), |f, t| f.tin_packets(t)),
            }
    }
    /// A flow-queue figure of this set's tins: `whole` of the queue when the set has it to
    /// itself, else the sum of `per_tin` over its tins.
    fn over_tins<T: std::iter::Sum>(&self, whole: impl Fn(&MacFq<P>) -> T, per_tin: impl Fn(&MacFq<P>, u32) -> T) -> T {
        let Queues::Fq { fq, base } = &self.queues else { unreachable!("a flow-queue figure") };
        let f = fq.borrow();
        let n = self.deficit.len();
        if f.tins() == n {
            whole(&f)
        } else {
            (0..n as u32).map(|s| per_tin(&f, base + s)).sum()
        }
    }
    /// Packets counted against the limit: this set's, or under a shared flow queue the
    /// radio's.
    fn limit_len(&self) -> usize {
        match &self.queues {
            Queues::PerStation(_) | Queues::Interface { .. } => self.qlen + self.stashed,
            Queues::Fq { fq, .. } => fq.borrow().len_packets() + self.stashed,
        }
    }
    pub fn total_limit(&self) -> usize {
        self.total_limit
    }
    /// Frames `sta` can be served now: queued for it (its stashed frame included), or with a
    /// driver stage, the frames of it the stage holds.
    pub fn len(&self, sta: u32) -> usize {
        match &self.stage {
            Some(st) => st.q[sta as usize].len(),
            None => self.queued(sta) + self.stash[sta as usize].is_some() as usize,
        }
    }
    /// Frames waiting for `sta` anywhere at this node: queues, stash and driver stage.
    pub fn backlog(&self, sta: u32) -> usize {
        self.queued(sta) + self.stash[sta as usize].is_some() as usize + self.stage.as_ref().map_or(0, |st| st.q[sta as usize].len())
    }
    fn queued(&self, sta: u32) -> usize {
        match &self.queues {
            Queues::PerStation(q) => q[sta as usize].len_packets(),
            Queues::Fq { fq, base } => fq.borrow().tin_packets(base + sta),
            Queues::Interface { per_sta, .. } => per_sta[sta as usize].0,
        }
    }
    pub fn room(&self) -> usize {
        self.total_limit.saturating_sub(self.limit_len())
    }
    /// A filter over `sta`'s flow queue (sch_cake's ACK filter): `pick` is handed the packets of
    /// the flow `p` joined, oldest first, and names one to take out. Only with mac80211's flow
    /// queue; None otherwise, or when `pick` names none.
    pub fn take_from_flow_of(&mut self, sta: u32, p: &P, pick: impl FnOnce(&mut dyn Iterator<Item = &P>) -> Option<usize>) -> Option<P>
    where
        P: QueuedPacket,
    {
        let Queues::Fq { fq, base } = &self.queues else { return None };
        let (tin, hash) = (base + sta, p.flow_hash());
        let at = pick(&mut fq.borrow().flow_packets(tin, hash))?;
        fq.borrow_mut().remove_from_flow(tin, hash, at)
    }

    /// Whether the stations share mac80211's flow queue (FQ-CoDel).
    pub fn is_fq(&self) -> bool {
        matches!(self.queues, Queues::Fq { .. })
    }

    /// Change the shared packet limit, clamped to `1..=` the limit the set was built with. For
    /// a qdisc (a buffer sizer resizing `txqueuelen`) lowering it drops nothing: packets already
    /// queued above the new limit drain, and arrivals are refused until the count is below it.
    /// mac80211's flow queue (`iw phy … set txq limit`) drops from the fattest flows at the
    /// next arrival until it is within the new limit.
    pub fn set_total_limit(&mut self, limit: usize) {
        self.total_limit = limit.clamp(1, self.built_limit);
        match &mut self.queues {
            Queues::PerStation(_) | Queues::Interface { .. } => self.excess = self.limit_len().saturating_sub(self.total_limit),
            Queues::Fq { fq, .. } => fq.borrow_mut().set_limit(self.total_limit),
        }
    }

    /// Octets queued for this set's stations (stashed frames included).
    pub fn backlog_bytes(&self) -> u64 {
        let q: u64 = match &self.queues {
            Queues::PerStation(q) => q.iter().map(|q| q.len_bytes()).sum(),
            Queues::Fq { .. } => self.over_tins(|f| f.len_bytes(), |f, t| f.tin_bytes(t)),
            Queues::Interface { q, .. } => q.len_bytes(),
        };
        q + self.stash.iter().flatten().map(|p| p.len_bytes() as u64).sum::<u64>()
    }
    /// Octets queued for `sta` (stashed frame not included).
    pub fn sta_backlog_bytes(&self, sta: u32) -> u64 {
        match &self.queues {
            Queues::PerStation(q) => q[sta as usize].len_bytes(),
            Queues::Fq { fq, base } => fq.borrow().tin_bytes(base + sta),
            Queues::Interface { per_sta, .. } => per_sta[sta as usize].1,
        }
    }
    /// Packets of `sta` dropped by the queues: by its discipline (AQM or its own overflow
    /// rule), or under mac80211's flow queue by CoDel and by the radio-wide limits.
    pub fn sta_drops(&self, sta: u32) -> u64 {
        match &self.queues {
            Queues::PerStation(q) => q[sta as usize].stats().dropped,
            Queues::Interface { drops, .. } => drops[sta as usize],
            Queues::Fq { fq, base } => {
                let t = fq.borrow().tin_stats(base + sta);
                t.overlimit + t.codel_drops
            }
        }
    }
    /// Flows `sta`'s queue has seen become active (FQ-CoDel only; 0 for the others).
    pub fn sta_flows(&self, sta: u32) -> u64 {
        match &self.queues {
            Queues::PerStation(q) => match &q[sta as usize] {
                AnyQdisc::FqCodel(f) => f.new_flow_count(),
                _ => 0,
            },
            Queues::Fq { fq, base } => fq.borrow().tin_stats(base + sta).flows,
            Queues::Interface { .. } => 0,
        }
    }
    /// mac80211's flow queue, when the stations share one, and the first tin of this set.
    pub fn fq(&self) -> Option<(std::cell::Ref<'_, MacFq<P>>, u32)> {
        match &self.queues {
            Queues::Fq { fq, base } => Some((fq.borrow(), *base)),
            Queues::PerStation(_) | Queues::Interface { .. } => None,
        }
    }
    pub fn airtime(&self, sta: u32) -> Duration {
        self.airtime[sta as usize]
    }
    /// Packets dropped because of the shared limit: arrivals refused at `txqueuelen`, or
    /// mac80211's overlimit drops from the fattest flows (of this set's stations).
    pub fn dropped_total_limit(&self) -> u64 {
        match &self.queues {
            Queues::PerStation(_) | Queues::Interface { .. } => self.dropped_total_limit,
            Queues::Fq { .. } => self.over_tins(|f| f.overlimit(), |f, t| f.tin_stats(t).overlimit),
        }
    }

    /// Enqueue for `sta`. Every packet dropped because of this arrival goes to `on_drop`: the
    /// arrival itself (refused at the total limit, or dropped by its discipline), a queued
    /// packet of the same station (FQ-CoDel's overflow rule), or under mac80211's flow queue
    /// the heads of the fattest flows of any station. Returns whether the arrival was queued.
    #[inline]
    pub fn enqueue<F: FnMut(P)>(&mut self, now: Instant, sta: u32, p: P, mut on_drop: F) -> bool {
        let kept = self.enqueue_qdisc(now, sta, p, &mut on_drop);
        if self.stage.is_some() {
            self.fill(now, &mut on_drop);
        }
        kept
    }

    /// Station `sta` has frames to serve: with a driver stage only once the stage holds some.
    fn queued_for(&mut self, sta: u32) {
        if self.stage.is_none() {
            self.activate(sta);
        }
    }

    #[inline]
    fn enqueue_qdisc<F: FnMut(P)>(&mut self, now: Instant, sta: u32, p: P, mut on_drop: F) -> bool {
        match &mut self.queues {
            Queues::Fq { fq, base } => {
                // The drops may be any station's, of any access category sharing the table.
                let mut kept = true;
                let mut f = fq.borrow_mut();
                let emptied = &mut self.emptied;
                emptied.clear();
                f.enqueue_tins(now, *base + sta, p, |tin, d| {
                    kept &= d != p;
                    emptied.push(tin);
                    on_drop(d);
                });
                if !emptied.is_empty() {
                    emptied.retain(|&t| f.tin_packets(t) == 0);
                    emptied.dedup();
                }
                drop(f);
                if kept {
                    self.queued_for(sta);
                }
                kept
            }
            Queues::PerStation(q) => {
                if self.qlen + self.stashed >= self.total_limit {
                    self.dropped_total_limit += 1;
                    on_drop(p);
                    return false;
                }
                self.excess = 0;
                match q[sta as usize].enqueue(now, p) {
                    Ok(()) => {
                        self.qlen += 1;
                        self.queued_for(sta);
                        true
                    }
                    // The discipline dropped the arrival itself.
                    Err(d) if d == p => {
                        on_drop(d);
                        false
                    }
                    // It kept the arrival and dropped a queued packet instead (FQ-CoDel's
                    // overflow rule): the count is unchanged.
                    Err(d) => {
                        on_drop(d);
                        self.queued_for(sta);
                        true
                    }
                }
            }
            Queues::Interface { q, next_hop, per_sta, drops } => {
                if self.qlen + self.stashed >= self.total_limit {
                    self.dropped_total_limit += 1;
                    on_drop(p);
                    return false;
                }
                self.excess = 0;
                let bytes = p.len_bytes() as u64;
                match q.enqueue(now, p) {
                    Ok(()) => {
                        self.qlen += 1;
                        next_hop.push_back(sta);
                        let c = &mut per_sta[sta as usize];
                        c.0 += 1;
                        c.1 += bytes;
                        true
                    }
                    // FIFO, CoDel and PIE drop only the arrival on enqueue.
                    Err(d) => {
                        debug_assert!(d == p, "the interface's qdisc dropped a queued packet on enqueue");
                        drops[sta as usize] += 1;
                        on_drop(d);
                        false
                    }
                }
            }
        }
    }

    /// The queues the last [`TxqSet::enqueue`] emptied by dropping from the fattest flows of a
    /// shared flow queue, as (access-category set, station) in the numbering of
    /// [`TxqSet::on_shared_fq`]: mac80211 would find nothing there at its next turn, so the
    /// caller takes them off the service lists they are on (with nothing else to send).
    pub fn emptied(&self) -> impl Iterator<Item = (usize, u32)> + '_ {
        let n = self.deficit.len().max(1) as u32;
        self.emptied.iter().map(move |&t| ((t / n) as usize, t % n))
    }

    /// Put a station on the service list (it has frames waiting for retransmission, say).
    pub fn activate(&mut self, sta: u32) {
        if !self.in_active[sta as usize] {
            self.in_active[sta as usize] = true;
            self.active.push_back(sta);
        }
    }

    pub fn has_active(&self) -> bool {
        !self.active.is_empty()
    }

    /// Stations on the service list.
    pub fn active_len(&self) -> usize {
        self.active.len()
    }

    /// `ieee80211_txq_schedule_start`: a scheduling round opens; until
    /// [`TxqSet::schedule_end`], `next_txq` returns each station at most once.
    pub fn schedule_start(&mut self) {
        self.round = self.round.wrapping_add(1);
        self.in_round = true;
    }

    /// `ieee80211_txq_schedule_end`.
    pub fn schedule_end(&mut self) {
        self.in_round = false;
    }

    /// `ieee80211_next_txq`: the station to serve now.
    pub fn next_txq(&mut self) -> Option<u32> {
        self.next_txq_where(|_| true)
    }

    /// `ieee80211_next_txq` with an eligibility check (mac80211's airtime queue limit): a
    /// station that is not eligible is moved to the back of the list without being served
    /// (under airtime scheduling it still receives its quantum if in deficit, as mac80211 does
    /// when it passes over a station); `None` once a whole pass found no eligible station.
    pub fn next_txq_where<F: Fn(u32) -> bool>(&mut self, eligible: F) -> Option<u32> {
        let mut first_blocked: Option<u32> = None;
        while let Some(&sta) = self.active.front() {
            let ok = eligible(sta);
            if !ok {
                if first_blocked == Some(sta) {
                    return None;
                }
                first_blocked.get_or_insert(sta);
            }
            let mut in_deficit = false;
            if let TxqSchedule::Airtime { quantum } = self.schedule {
                let d = &mut self.deficit[sta as usize];
                if *d < 0 {
                    // Every pass adds a quantum to each station in deficit, so this ends.
                    *d += self.quanta.get(sta as usize).copied().unwrap_or(quantum.as_nanos() as i64);
                    in_deficit = true;
                }
            }
            if ok && !in_deficit {
                if self.in_round {
                    // A station already served in this round ends it (mac80211's
                    // `schedule_round` check in `ieee80211_next_txq`).
                    if self.served_round[sta as usize] == self.round {
                        return None;
                    }
                    self.served_round[sta as usize] = self.round;
                }
                return Some(sta);
            }
            if ok {
                // An eligible station in deficit: a new pass may serve a blocked one first.
                first_blocked = None;
            }
            self.active.rotate_left(1);
        }
        None
    }

    /// `ieee80211_tx_dequeue`: the next frame for `sta`. Packets the discipline drops on the
    /// way out go to `on_drop` first.
    #[inline]
    pub fn tx_dequeue<F: FnMut(P)>(&mut self, now: Instant, sta: u32, mut on_drop: F) -> Option<P> {
        if let Some(st) = self.stage.as_mut() {
            // The driver builds aggregates from what it holds; the room a frame frees is
            // filled from the queues at once.
            let p = st.q[sta as usize].pop_front()?;
            st.total -= 1;
            self.fill(now, &mut on_drop);
            return Some(p);
        }
        if let Some(p) = self.stash[sta as usize].take() {
            self.stashed -= 1;
            return Some(p);
        }
        self.qdisc_dequeue(now, sta, on_drop)
    }

    /// The next frame of `sta`'s queue (drops of its discipline to `on_drop`), dequeued when
    /// the host's transmit path gets to it (`run`).
    #[inline]
    fn qdisc_dequeue<F: FnMut(P)>(&mut self, now: Instant, sta: u32, mut on_drop: F) -> Option<P> {
        let t = self.run.dequeue_at(now);
        let mut dropped = 0;
        let count = |d| {
            dropped += 1;
            on_drop(d)
        };
        let p = match &mut self.queues {
            Queues::PerStation(q) => {
                let p = q[sta as usize].dequeue(t, count);
                self.qlen -= dropped + p.is_some() as usize;
                p
            }
            Queues::Fq { fq, base } => fq.borrow_mut().dequeue(t, *base + sta, count),
            Queues::Interface { .. } => unreachable!("the interface's qdisc is dequeued by the driver stage"),
        };
        if p.is_some() {
            self.run.on_dequeue(t);
        }
        p
    }

    /// The interface qdisc's next frame and its station (drops of the discipline to
    /// `on_drop`), dequeued when the host's transmit path gets to it (`run`).
    fn interface_dequeue<F: FnMut(P)>(&mut self, now: Instant, on_drop: &mut F) -> Option<(u32, P)> {
        let Queues::Interface { q, next_hop, per_sta, drops } = &mut self.queues else { unreachable!("an interface qdisc") };
        let t = self.run.dequeue_at(now);
        let qlen = &mut self.qlen;
        let mut leave = |p: &P| {
            let sta = next_hop.pop_front().expect("a station for every queued packet");
            let c = &mut per_sta[sta as usize];
            c.0 -= 1;
            c.1 -= p.len_bytes() as u64;
            *qlen -= 1;
            sta
        };
        let p = q.dequeue(t, |d| {
            let sta = leave(&d);
            drops[sta as usize] += 1;
            on_drop(d);
        })?;
        let sta = leave(&p);
        self.run.on_dequeue(t);
        Some((sta, p))
    }

    /// Take frames from the queues into the driver stage while it has room, stations in turn
    /// (from one interface qdisc: in its order).
    fn fill<F: FnMut(P)>(&mut self, now: Instant, on_drop: &mut F) {
        if matches!(self.queues, Queues::Interface { .. }) {
            while self.stage.as_ref().is_some_and(|st| st.total < st.limit) {
                let Some((sta, p)) = self.interface_dequeue(now, on_drop) else { return };
                let st = self.stage.as_mut().expect("stage");
                st.q[sta as usize].push_back(p);
                st.total += 1;
                self.activate(sta);
            }
            return;
        }
        let n = self.deficit.len();
        loop {
            let Some(st) = self.stage.as_ref() else { return };
            if st.total >= st.limit || n == 0 {
                return;
            }
            let start = st.next;
            let Some(sta) = (0..n).map(|i| ((start + i) % n) as u32).find(|&s| self.queued(s) > 0) else { return };
            if let Some(p) = self.qdisc_dequeue(now, sta, &mut *on_drop) {
                let st = self.stage.as_mut().expect("stage");
                st.q[sta as usize].push_back(p);
                st.total += 1;
                st.next = (sta as usize + 1) % n;
                self.activate(sta);
            }
        }
    }

    /// Keep a frame pulled by `tx_dequeue` that could not be sent now; it is served first.
    pub fn stash(&mut self, sta: u32, p: P) {
        if let Some(st) = self.stage.as_mut() {
            st.q[sta as usize].push_front(p);
            st.total += 1;
            return;
        }
        debug_assert!(self.stash[sta as usize].is_none(), "one stashed frame per station");
        self.stash[sta as usize] = Some(p);
        self.stashed += 1;
    }

    /// `ieee80211_return_txq`: done with `sta` for this round. `more` says whether it still has
    /// frames (queued or awaiting retransmission); if so it goes to the back of the list.
    pub fn return_txq(&mut self, sta: u32, more: bool) {
        if self.active.front() == Some(&sta) {
            self.active.pop_front();
        } else if let Some(i) = self.active.iter().position(|&s| s == sta) {
            self.active.remove(i);
        } else {
            return;
        }
        if more || self.len(sta) > 0 {
            match self.schedule {
                // DRR: back to the head; `next_txq` moves it on once its deficit is negative.
                TxqSchedule::Airtime { .. } => self.active.push_front(sta),
                TxqSchedule::RoundRobin => self.active.push_back(sta),
            }
        } else {
            self.in_active[sta as usize] = false;
        }
    }

    /// `ieee80211_register_airtime`: charge `sta` for airtime it used (either direction).
    pub fn register_airtime(&mut self, sta: u32, airtime: Duration) {
        self.airtime[sta as usize] += airtime;
        self.deficit[sta as usize] -= airtime.as_nanos() as i64;
    }

    pub fn invariants(&self) -> Result<(), &'static str> {
        if let Some(st) = &self.stage {
            // A frame put back after it did not fit an aggregate may overfill it by one per station.
            if st.q.iter().map(|q| q.len()).sum::<usize>() != st.total || st.total > st.limit + st.q.len() {
                return Err("driver stage out of sync or over its limit");
            }
        }
        let stashed = self.stash.iter().filter(|s| s.is_some()).count();
        match &self.queues {
            Queues::PerStation(q) => {
                if q.iter().map(|q| q.len_packets()).sum::<usize>() != self.qlen || stashed != self.stashed {
                    return Err("total length out of sync");
                }
                if self.qlen + self.stashed > self.total_limit + self.excess {
                    return Err("total limit exceeded");
                }
                for q in q {
                    q.invariants()?;
                }
            }
            Queues::Fq { fq, .. } => {
                if stashed != self.stashed {
                    return Err("stash count out of sync");
                }
                fq.borrow().invariants()?;
            }
            Queues::Interface { q, next_hop, per_sta, .. } => {
                if q.len_packets() != self.qlen || next_hop.len() != self.qlen || stashed != self.stashed {
                    return Err("total length out of sync");
                }
                if per_sta.iter().map(|c| c.0).sum::<usize>() != self.qlen
                    || per_sta.iter().map(|c| c.1).sum::<u64>() != q.len_bytes()
                    || per_sta.iter().enumerate().any(|(i, c)| next_hop.iter().filter(|&&s| s as usize == i).count() != c.0)
                {
                    return Err("per-station counts out of sync");
                }
                if self.qlen + self.stashed > self.total_limit + self.excess {
                    return Err("total limit exceeded");
                }
                q.invariants()?;
            }
        }
        Ok(())
    }
}

/// The same discipline with its own packet limit set to `limit`.
fn with_limit(aqm: AqmConfig, limit: usize) -> AqmConfig {
    match aqm {
        AqmConfig::Fifo(mut c) => {
            c.limit_packets = limit;
            AqmConfig::Fifo(c)
        }
        AqmConfig::Codel(mut c) => {
            c.limit_packets = limit;
            AqmConfig::Codel(c)
        }
        AqmConfig::Pie(mut c) => {
            c.limit_packets = limit;
            AqmConfig::Pie(c)
        }
        AqmConfig::FqCodel(mut c) => {
            c.limit_packets = limit;
            AqmConfig::FqCodel(c)
        }
        AqmConfig::DualPi2(mut c) => {
            c.limit_packets = limit;
            AqmConfig::DualPi2(c)
        }
    }
}

#[cfg(test)]
mod tests;
