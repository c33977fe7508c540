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
}

#[derive(Clone, Debug)]
pub struct TxqSet<P> {
    schedule: TxqSchedule,
    /// Airtime deficit per station (ns), for `TxqSchedule::Airtime`.
    deficit: Vec<i64>,
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

impl<P> Stage<P> {
    /// ath9k's `ATH_MAX_QDEPTH`.
    const ATH_MAX_QDEPTH: usize = 512 / 4 - 5;
}

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

    fn with_queues(stations: usize, total_limit: usize, schedule: TxqSchedule, queues: Queues<P>) -> Self {
        TxqSet {
            schedule,
            deficit: vec![0; stations],
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

    /// Model the pre-4.10 ath9k driver below these queues: up to `ATH_MAX_QDEPTH` (123) frames
    /// taken from them as soon as there is room, from which aggregates are built (see `Stage`).
    pub fn with_ath9k_stage(mut self) -> Self {
        self.add_ath9k_stage();
        self
    }

    /// As [`TxqSet::with_ath9k_stage`], in place (before anything is queued).
    pub fn add_ath9k_stage(&mut self) {
        let n = self.deficit.len();
        self.stage = Some(Stage { limit: Stage::<P>::ATH_MAX_QDEPTH, total: 0, q: (0..n).map(|_| VecDeque::new()).collect(), next: 0 });
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
                Queues::PerStation(_) => self.qlen,
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
            Queues::PerStation(_) => self.qlen + self.stashed,
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
        }
    }
    pub fn room(&self) -> usize {
        self.total_limit.saturating_sub(self.limit_len())
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
            Queues::PerStation(_) => self.excess = self.limit_len().saturating_sub(self.total_limit),
            Queues::Fq { fq, .. } => fq.borrow_mut().set_limit(self.total_limit),
        }
    }

    /// Octets queued for this set's stations (stashed frames included).
    pub fn backlog_bytes(&self) -> u64 {
        let q: u64 = match &self.queues {
            Queues::PerStation(q) => q.iter().map(|q| q.len_bytes()).sum(),
            Queues::Fq { .. } => self.over_tins(|f| f.len_bytes(), |f, t| f.tin_bytes(t)),
        };
        q + self.stash.iter().flatten().map(|p| p.len_bytes() as u64).sum::<u64>()
    }
    /// Octets queued for `sta` (stashed frame not included).
    pub fn sta_backlog_bytes(&self, sta: u32) -> u64 {
        match &self.queues {
            Queues::PerStation(q) => q[sta as usize].len_bytes(),
            Queues::Fq { fq, base } => fq.borrow().tin_bytes(base + sta),
        }
    }
    /// Packets of `sta` dropped by the queues: by its discipline (AQM or its own overflow
    /// rule), or under mac80211's flow queue by CoDel and by the radio-wide limits.
    pub fn sta_drops(&self, sta: u32) -> u64 {
        match &self.queues {
            Queues::PerStation(q) => q[sta as usize].stats().dropped,
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
        }
    }
    /// mac80211's flow queue, when the stations share one, and the first tin of this set.
    pub fn fq(&self) -> Option<(std::cell::Ref<'_, MacFq<P>>, u32)> {
        match &self.queues {
            Queues::Fq { fq, base } => Some((fq.borrow(), *base)),
            Queues::PerStation(_) => None,
        }
    }
    pub fn airtime(&self, sta: u32) -> Duration {
        self.airtime[sta as usize]
    }
    /// Packets dropped because of the shared limit: arrivals refused at `txqueuelen`, or
    /// mac80211's overlimit drops from the fattest flows (of this set's stations).
    pub fn dropped_total_limit(&self) -> u64 {
        match &self.queues {
            Queues::PerStation(_) => self.dropped_total_limit,
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
                    *d += quantum.as_nanos() as i64;
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
        };
        if p.is_some() {
            self.run.on_dequeue(t);
        }
        p
    }

    /// Take frames from the queues into the driver stage while it has room, stations in turn.
    fn fill<F: FnMut(P)>(&mut self, now: Instant, on_drop: &mut F) {
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
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Clone, Copy, Debug, PartialEq)]
    struct P(u32);
    impl QueuedPacket for P {
        fn len_bytes(&self) -> u32 {
            1500
        }
    }

    fn put(t: &mut TxqSet<P>, now: Instant, sta: u32, p: P) {
        assert!(t.enqueue(now, sta, p, |d| panic!("{d:?} dropped")));
    }

    #[test]
    fn round_robin_and_total_limit() {
        let mut t = TxqSet::new(3, 4, AqmConfig::default(), 1, TxqSchedule::RoundRobin);
        let now = Instant::ZERO;
        put(&mut t, now, 2, P(20));
        put(&mut t, now, 0, P(0));
        put(&mut t, now, 0, P(1));
        put(&mut t, now, 1, P(10));
        let mut d = Vec::new();
        assert!(!t.enqueue(now, 1, P(11), |x| d.push(x)));
        assert_eq!(d, [P(11)], "FIFO: the arrival is refused at the total limit");
        let mut order = Vec::new();
        while let Some(s) = t.next_txq() {
            let p = t.tx_dequeue(now, s, |_| unreachable!("FIFO drops on arrival only"));
            order.push((s, p));
            t.return_txq(s, false);
            t.invariants().unwrap();
        }
        assert_eq!(order, vec![(2, Some(P(20))), (0, Some(P(0))), (1, Some(P(10))), (0, Some(P(1)))]);
        assert_eq!(t.total_len(), 0);
    }

    /// Airtime DRR: a station that used more airtime waits until the others caught up.
    #[test]
    fn ineligible_stations_are_passed_over() {
        for schedule in [TxqSchedule::RoundRobin, TxqSchedule::Airtime { quantum: TxqSchedule::AIRTIME_QUANTUM }] {
            let mut t = TxqSet::new(3, 100, AqmConfig::default(), 1, schedule);
            let now = Instant::ZERO;
            for s in 0..3 {
                put(&mut t, now, s, P(s));
            }
            // Station 0 is blocked (say by its airtime queue limit): 1 is served, and 0 moves back.
            assert_eq!(t.next_txq_where(|s| s != 0), Some(1));
            assert_eq!(t.next_txq_where(|s| s != 0), Some(1), "the served station keeps the head");
            t.register_airtime(1, Duration::from_millis(1));
            // Nobody eligible: a full pass, then None (not a loop).
            assert_eq!(t.next_txq_where(|_| false), None);
            // 2 is next among the eligible; 1 is in deficit under airtime scheduling.
            let n = t.next_txq_where(|s| s != 0);
            match schedule {
                TxqSchedule::RoundRobin => assert_eq!(n, Some(1)),
                TxqSchedule::Airtime { .. } => assert_eq!(n, Some(2)),
            }
            assert_eq!(t.next_txq_where(|_| true).map(|s| s < 3), Some(true));
        }
    }

    #[test]
    fn airtime_deficit_round_robin() {
        let q = TxqSchedule::AIRTIME_QUANTUM;
        let mut t = TxqSet::new(2, 1000, AqmConfig::default(), 1, TxqSchedule::Airtime { quantum: q });
        let now = Instant::ZERO;
        for i in 0..400 {
            put(&mut t, now, 0, P(i));
            put(&mut t, now, 1, P(100 + i));
        }
        // Station 0 sends long frames (4 quanta each), station 1 short ones (1/4 quantum).
        let mut air = [Duration::ZERO; 2];
        for _ in 0..400 {
            let s = t.next_txq().unwrap();
            t.tx_dequeue(now, s, |_| {});
            let used = if s == 0 { q * 4 } else { q / 4 };
            t.register_airtime(s, used);
            air[s as usize] += used;
            t.return_txq(s, false);
            t.invariants().unwrap();
        }
        let (a, b) = (air[0].as_nanos() as f64, air[1].as_nanos() as f64);
        // Equal airtime within one long frame, although station 1 needed 16 turns per turn of
        // station 0 (round-robin would give station 0 16 times the airtime).
        assert!((a - b).abs() <= (q * 4).as_nanos() as f64, "airtime {air:?}");
    }

    /// A packet handle of a given size and flow, for the shared-limit property.
    #[derive(Clone, Copy, Debug, PartialEq)]
    struct Q {
        id: u64,
        len: u32,
        flow: u32,
    }
    impl QueuedPacket for Q {
        fn len_bytes(&self) -> u32 {
            self.len
        }
        fn flow_hash(&self) -> u32 {
            self.flow
        }
    }

    /// Access categories over one radio's flow queue (mac80211's `local->fq`): one limit for
    /// all of them, the fattest flow of any AC dropped, and a queue emptied that way reported
    /// so the caller can take its station off the other AC's service list.
    #[test]
    fn access_categories_share_one_flow_queue() {
        let now = Instant::ZERO;
        let fq = TxqSet::<Q>::shared_fq(2, 2, 10, 7, MacFqConfig::default());
        let mut be = TxqSet::on_shared_fq(2, 0, &fq, TxqSchedule::RoundRobin);
        let mut vi = TxqSet::on_shared_fq(2, 1, &fq, TxqSchedule::RoundRobin);
        // VI: one 1500-byte frame for station 1; BE: small frames of many flows for station 0.
        assert!(vi.enqueue(now, 1, Q { id: 0, len: 1500, flow: 99 }, |d| panic!("{d:?}")));
        assert!(vi.has_active() && vi.len(1) == 1 && vi.total_len() == 1);
        let mut drops = Vec::new();
        for i in 1..=10 {
            assert!(be.enqueue(now, 0, Q { id: i, len: 100, flow: 1000 + i as u32 * 7919 }, |d| drops.push(d.id)));
            if i < 10 {
                assert!(be.emptied().next().is_none());
            }
        }
        // The eleventh packet is over the shared limit of 10: the fattest flow is VI's.
        assert_eq!(drops, [0], "the fattest flow of any AC is dropped");
        assert_eq!(be.emptied().collect::<Vec<_>>(), [(1, 1)], "VI's station 1 is now empty");
        assert_eq!((be.total_len(), vi.total_len(), vi.len(1)), (10, 0, 0));
        assert_eq!((be.room(), vi.room()), (0, 0), "one limit for both");
        assert_eq!((be.dropped_total_limit(), vi.dropped_total_limit()), (0, 1), "counted in the dropped flow's set");
        assert_eq!(vi.sta_drops(1), 1);
        be.invariants().unwrap();
        vi.invariants().unwrap();
        // mac80211 finds nothing at VI's next turn and unschedules the txq.
        vi.return_txq(1, false);
        assert!(!vi.has_active());
        // One set alone over a table of its own is the same as before.
        let mut own = TxqSet::<Q>::new(2, 10, AqmConfig::FqCodel(Default::default()), 7, TxqSchedule::RoundRobin);
        for i in 0..12 {
            own.enqueue(now, 0, Q { id: i, len: 100, flow: i as u32 }, |_| {});
        }
        assert_eq!(own.total_len(), 10);
        own.invariants().unwrap();
    }

    /// Under mac80211's FQ-CoDel, a station sending below its fair share loses nothing to the
    /// AP-wide limit while another station overloads it: the overflow is taken from the
    /// fattest flow. Random station counts, limits, packet sizes, offered loads and service
    /// orders; a FIFO `txqueuelen` (the same limit, tail drop) fails the same property.
    #[test]
    fn light_stations_lose_nothing_to_the_shared_limit() {
        let mut rng = lasthop_core::Rng::from_seed(0x24);
        let mut fifo_light_losses = 0u64;
        for case in 0..200u64 {
            let n = 2 + rng.gen_range_inclusive(10) as usize;
            let light = n - 1;
            let limit = light + 2 + rng.gen_range_inclusive(200) as usize;
            let burst = 2 + rng.gen_range_inclusive(40);
            let sched = if case % 2 == 0 { TxqSchedule::RoundRobin } else { TxqSchedule::Airtime { quantum: TxqSchedule::AIRTIME_QUANTUM } };
            for fq in [true, false] {
                let aqm = if fq { AqmConfig::FqCodel(Default::default()) } else { AqmConfig::default() };
                let mut t: TxqSet<Q> = TxqSet::new(n, limit, aqm, case, sched);
                let mut id = 0;
                let mut light_lost = 0;
                let mut heavy_lost = 0;
                let now = Instant::ZERO; // CoDel never drops: only the limit can
                for _ in 0..400 {
                    // The heavy station (0) offers a burst of full-size packets per turn.
                    for _ in 0..burst {
                        id += 1;
                        t.enqueue(now, 0, Q { id, len: 1500, flow: 1 }, |d| if d.flow == 1 { heavy_lost += 1 } else { light_lost += 1 });
                    }
                    // Each light station offers at most one packet when its queue is empty:
                    // below its share of one aggregate per turn.
                    for s in 1..n as u32 {
                        if t.len(s) == 0 && rng.bernoulli(0.7) {
                            id += 1;
                            let len = 60 + rng.gen_range_inclusive(1440) as u32;
                            t.enqueue(now, s, Q { id, len, flow: 100 + s }, |d| if d.flow == 1 { heavy_lost += 1 } else { light_lost += 1 });
                        }
                    }
                    // One station turn of service, up to 4 frames.
                    if let Some(s) = t.next_txq() {
                        for _ in 0..4 {
                            if t.tx_dequeue(now, s, |_| {}).is_none() {
                                break;
                            }
                        }
                        t.register_airtime(s, Duration::from_micros(100 + rng.gen_range_inclusive(900)));
                        t.return_txq(s, false);
                    }
                    t.invariants().unwrap();
                }
                assert!(heavy_lost > 0, "case {case}: the heavy station must overload the limit");
                if fq {
                    assert_eq!(light_lost, 0, "case {case}: n={n} limit={limit} burst={burst}");
                } else {
                    fifo_light_losses += light_lost;
                }
            }
        }
        assert!(fifo_light_losses > 0, "the old tail-drop limit would fail this property");
    }

    /// The pre-4.10 ath9k stage: the queues above hold what the driver has no room for (123
    /// frames), so a txqueuelen of 1 still leaves 123 frames queued; frames keep their order
    /// per station and every arrival is accounted.
    #[test]
    fn ath9k_stage_holds_max_qdepth_frames_below_the_queues() {
        let now = Instant::ZERO;
        let mut t: TxqSet<P> = TxqSet::new(2, 1000, AqmConfig::default(), 1, TxqSchedule::RoundRobin).with_ath9k_stage();
        for i in 0..300 {
            put(&mut t, now, i % 2, P(i));
        }
        assert_eq!(t.stage_len(), 123);
        assert_eq!(t.total_len(), 300 - 123, "the qdisc holds the rest");
        assert_eq!(t.backlog(0) + t.backlog(1), 300);
        t.invariants().unwrap();
        // A buffer sizer shrinks the qdisc to one packet: the driver still holds 123 frames.
        t.set_total_limit(1);
        let mut out = Vec::new();
        while let Some(s) = t.next_txq() {
            while let Some(p) = t.tx_dequeue(now, s, |_| unreachable!("FIFO")) {
                out.push(p.0);
                if out.len() % 7 == 0 {
                    break;
                }
            }
            t.return_txq(s, false);
            t.invariants().unwrap();
            if out.len() >= 300 {
                break;
            }
        }
        assert_eq!(out.len(), 300);
        for sta in 0..2 {
            let mine: Vec<u32> = out.iter().copied().filter(|x| x % 2 == sta).collect();
            assert!(mine.windows(2).all(|w| w[0] < w[1]), "per-station order kept");
        }
        assert_eq!(t.stage_len() + t.total_len(), 0);
        // Arrivals are refused at the qdisc's limit, never at the stage's.
        let mut t: TxqSet<P> = TxqSet::new(1, 1, AqmConfig::default(), 1, TxqSchedule::RoundRobin).with_ath9k_stage();
        for i in 0..124 {
            put(&mut t, now, 0, P(i));
        }
        assert_eq!((t.stage_len(), t.total_len()), (123, 1));
        let mut d = Vec::new();
        assert!(!t.enqueue(now, 0, P(999), |x| d.push(x)));
        assert_eq!(d, [P(999)]);
    }

    /// PIE's departure-rate state after the ath9k stage's refill burst: 300 frames arrive at 0
    /// (the stage takes 123, one dequeue per arrival), then an aggregate takes 40 frames from
    /// the stage at 1 ms and the stage refills 40 from the qdisc.
    fn pie_after_refill_burst(cost: Duration) -> lasthop_algo::aqm::pie::dq_rate::DqRate {
        use lasthop_algo::aqm::{PieConfig, PieEstimator};
        let pie = AqmConfig::Pie(PieConfig { estimator: PieEstimator::DequeueRate, ..Default::default() });
        let mut t: TxqSet<P> = TxqSet::new(1, 1000, pie, 1, TxqSchedule::RoundRobin).with_ath9k_stage();
        t.set_dequeue_cost(cost);
        for i in 0..300 {
            put(&mut t, Instant::ZERO, 0, P(i));
        }
        let now = Instant::ZERO + Duration::from_millis(1);
        for i in 0..40 {
            assert_eq!(t.tx_dequeue(now, 0, |_| unreachable!("no early drop at dequeue")), Some(P(i)));
        }
        t.invariants().unwrap();
        let Queues::PerStation(q) = &t.queues else { unreachable!() };
        let AnyQdisc::Pie(p) = &q[0] else { unreachable!() };
        p.vars().dq_rate
    }

    /// The host's transmit path: the frames a burst takes from a discipline leave it `cost`
    /// apart — PIE's departure-rate estimator saw exactly the instants 1 ms + k · 2 µs, so its
    /// 10 000-byte cycles close inside the burst and measure the host's pace — while
    /// without a cost the whole burst leaves at 1 ms and no cycle can close.
    #[test]
    fn a_refill_burst_is_dequeued_a_transmit_path_time_apart() {
        use lasthop_algo::aqm::pie::dq_rate::DqRate;
        let d = Duration::from_micros(2);
        let at_1ms = Instant::ZERO + Duration::from_millis(1);
        // The arrivals at 0 were dequeued 0, 2, …, 244 µs, with at most one frame queued (no
        // cycle opens); 177 frames stayed queued, and the burst takes 40 of them.
        let expect = |gap: Duration| {
            let mut e = DqRate::default();
            for k in 0..40u64 {
                e.on_dequeue(at_1ms + gap * k, 1500, (176 - k) * 1500);
            }
            e
        };
        let spaced = pie_after_refill_burst(d);
        assert_eq!(spaced, expect(d));
        // 1500 bytes per 2 µs is 750 MB/s; the first cycle counts the departure that opened it
        // (7 frames over 6 gaps, 875 MB/s), and the average has moved 1/8 of the way per cycle
        // since.
        let rate = spaced.rate_bytes_per_sec();
        assert!((740e6..880e6).contains(&rate), "measured {rate:.3e} B/s");
        let at_once = pie_after_refill_burst(Duration::ZERO);
        assert_eq!(at_once, expect(Duration::ZERO));
        assert!(!at_once.has_estimate(), "a burst at one instant closes no cycle");
    }

    /// A zero transmit-path time changes nothing: random arrivals, aggregates and limits over
    /// CoDel and PIE (both estimates), with and without the ath9k stage, give the same frames,
    /// drops and discipline state as a set that was never given a cost.
    #[test]
    fn zero_dequeue_cost_changes_nothing() {
        use lasthop_algo::aqm::{CodelConfig, PieConfig, PieEstimator};
        let mut rng = lasthop_core::Rng::from_seed(0xdc);
        let aqms = [
            AqmConfig::Codel(CodelConfig::default()),
            AqmConfig::Pie(PieConfig::default()),
            AqmConfig::Pie(PieConfig { estimator: PieEstimator::DequeueRate, ..Default::default() }),
        ];
        for case in 0..24u64 {
            let aqm = aqms[case as usize % 3];
            let stage = case % 2 == 0;
            let make = |zero: bool| {
                let mut t: TxqSet<Q> = TxqSet::new(3, 200, aqm, case, TxqSchedule::RoundRobin);
                if stage {
                    t.add_ath9k_stage();
                }
                if zero {
                    t.set_dequeue_cost(Duration::ZERO);
                }
                t
            };
            let (mut a, mut b) = (make(false), make(true));
            let (mut log_a, mut log_b) = (Vec::new(), Vec::new());
            let mut now = Instant::ZERO;
            let mut id = 0;
            for _ in 0..3000 {
                now += Duration::from_micros(rng.gen_range_inclusive(400));
                if rng.bernoulli(0.6) {
                    id += 1;
                    let p = Q { id, len: 1500, flow: id as u32 % 3 };
                    let sta = rng.gen_range_inclusive(2) as u32;
                    let ka = a.enqueue(now, sta, p, |d| log_a.push(d.id));
                    let kb = b.enqueue(now, sta, p, |d| log_b.push(d.id));
                    assert_eq!(ka, kb);
                } else {
                    let sta = a.next_txq();
                    assert_eq!(sta, b.next_txq());
                    let Some(sta) = sta else { continue };
                    for _ in 0..rng.gen_range_inclusive(40) {
                        let pa = a.tx_dequeue(now, sta, |d| log_a.push(d.id));
                        let pb = b.tx_dequeue(now, sta, |d| log_b.push(d.id));
                        assert_eq!(pa, pb);
                        log_a.extend(pa.map(|p| p.id));
                        log_b.extend(pb.map(|p| p.id));
                    }
                    a.return_txq(sta, false);
                    b.return_txq(sta, false);
                }
            }
            assert_eq!(log_a, log_b, "case {case}");
            let (Queues::PerStation(qa), Queues::PerStation(qb)) = (&a.queues, &b.queues) else { unreachable!() };
            for (x, y) in qa.iter().zip(qb) {
                match (x, y) {
                    (AnyQdisc::Pie(x), AnyQdisc::Pie(y)) => assert_eq!(x.vars(), y.vars()),
                    (AnyQdisc::Codel(x), AnyQdisc::Codel(y)) => assert_eq!(x.vars(), y.vars()),
                    _ => unreachable!(),
                }
                assert_eq!(x.stats(), y.stats());
            }
        }
    }
}
