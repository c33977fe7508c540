//! The shared medium as every EDCA function sees it.
//!
//! IEEE 802.11-2020 §10.23.2.4 (EDCA backoff) and §10.3.2.3.7 (EIFS): each EDCAF counts AIFS
//! and then backoff slots from its own reference instant; the medium turning busy freezes every
//! counter. The earliest EDCAF to reach zero transmits. EDCAFs whose access instants fall within
//! the carrier-sense detection window of the first one (`cca_window`, aCCATime: a station cannot
//! detect a transmission that started less than that long ago) transmit too: a collision.
//! Two EDCAFs of the same station that reach zero together are an *internal* collision
//! (§10.23.2.4): the higher-priority one (a contender's `priority`: the rank of its access
//! category) transmits; the other is reported in `AccessOutcome::internal_losers`, is not
//! frozen, and the caller backs it off as though an external collision occurred
//! (`Edcaf::on_failure`: CW doubles, a new counter is drawn). It stays ready, so its frame
//! goes out at a later access: nothing is lost.
//!
//! Cost: a transmission costs O(ready), not O(contenders). Contenders that have nothing to send
//! and whose reference instant is the medium's own (the end of the last busy period, or that plus
//! EIFS for every bystander) are *lazy*: their countdown is not touched per busy period.
//! Instead the medium keeps, per AIFS value, the cumulative count of idle slots such a
//! contender would have counted down (`Class::idle_slots`), and brings a lazy contender up to
//! date when it is read, changed or becomes ready: `backoff − min(backoff, slots since)`, which
//! equals the per-busy-period freezes applied one by one, since each of those subtracts
//! `min(slots, remaining)`. The rest (*eager*: ready, or given a reference of their own such as
//! an Ack timeout or the EIFS exemption of a transmitter's sibling ACs) are kept as before and
//! return to lazy when the medium next turns idle. Results are the same as counting every
//! contender at every busy period, bit for bit.

use super::edca::{Edcaf, SlotTiming};
use lasthop_core::{Duration, Instant};

/// Index of a contender in the medium.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct ContenderId(pub u32);

#[derive(Clone, Debug)]
pub struct Contender {
    edcaf: Edcaf,
    /// The station (AP or non-AP) this EDCAF belongs to.
    pub owner: u32,
    /// Priority among EDCAFs of the same owner (higher wins an internal collision).
    pub priority: u8,
    ready: bool,
    ready_since: Instant,
    /// Lazy: `edcaf`'s backoff is as of `base` idle slots of its class and its reference is the
    /// medium's `lazy_ref`. Eager: `edcaf` is exact.
    lazy: bool,
    class: u8,
    base: u64,
}

impl Contender {
    pub fn is_ready(&self) -> bool {
        self.ready
    }
    /// When this contender would take an idle medium: None unless it has a frame and its EDCA
    /// is enabled (an MU EDCA set with AIFSN 0 disables it, [`Edcaf::disabled`]).
    #[inline]
    fn access_time(&self, t: &SlotTiming) -> Option<Instant> {
        (self.ready && !self.edcaf.disabled()).then(|| self.edcaf.access_time(t, self.ready_since))
    }
    /// The contention window (not touched by the countdown, so exact for lazy contenders too).
    pub fn cw(&self) -> u32 {
        self.edcaf.cw()
    }
}

/// Contenders sharing one AIFS: the idle slots counted so far by a lazy one.
#[derive(Clone, Debug)]
struct Class {
    aifs: Duration,
    idle_slots: u64,
}

/// Who takes the medium at an access instant.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct AccessOutcome {
    /// EDCAFs that start transmitting now (more than one: collision).
    pub transmitters: Vec<ContenderId>,
    /// EDCAFs that lost an internal collision.
    pub internal_losers: Vec<ContenderId>,
}

#[derive(Clone, Debug)]
pub struct Medium {
    pub timing: SlotTiming,
    pub cca_window: Duration,
    contenders: Vec<Contender>,
    busy: bool,
    /// When the medium last turned idle.
    idle_since: Instant,
    /// The reference instant of every lazy contender.
    lazy_ref: Instant,
    classes: Vec<Class>,
    /// Every eager contender (unordered).
    eager: Vec<ContenderId>,
    /// Contenders by owner, in the order they were added.
    by_owner: Vec<Vec<ContenderId>>,
}

impl Medium {
    pub fn new(timing: SlotTiming, cca_window: Duration) -> Self {
        Medium {
            timing,
            cca_window,
            contenders: Vec::new(),
            busy: false,
            idle_since: Instant::ZERO,
            lazy_ref: Instant::ZERO,
            classes: Vec::new(),
            eager: Vec::new(),
            by_owner: Vec::new(),
        }
    }

    pub fn add(&mut self, edcaf: Edcaf, owner: u32, priority: u8) -> ContenderId {
        let aifs = edcaf.aifs(&self.timing);
        let class = match self.classes.iter().position(|c| c.aifs == aifs) {
            Some(i) => i,
            None => {
                self.classes.push(Class { aifs, idle_slots: 0 });
                self.classes.len() - 1
            }
        };
        let id = ContenderId(self.contenders.len() as u32);
        // Lazy from the start if it counts from the medium's own reference.
        let lazy = !self.busy && edcaf.ref_time() == self.lazy_ref;
        let base = self.classes[class].idle_slots;
        self.contenders.push(Contender {
            edcaf,
            owner,
            priority,
            ready: false,
            ready_since: Instant::ZERO,
            lazy,
            class: class as u8,
            base,
        });
        if !lazy {
            self.eager.push(id);
        }
        let o = owner as usize;
        if self.by_owner.len() <= o {
            self.by_owner.resize_with(o + 1, Vec::new);
        }
        self.by_owner[o].push(id);
        id
    }

    /// Bring a lazy contender up to date and make it eager (until the medium next turns idle).
    #[inline]
    fn touch(&mut self, id: ContenderId) -> &mut Contender {
        let c = &mut self.contenders[id.0 as usize];
        if c.lazy {
            let slots = self.classes[c.class as usize].idle_slots - c.base;
            c.edcaf.count_down(slots);
            c.edcaf.set_ref(self.lazy_ref);
            c.lazy = false;
            self.eager.push(id);
        }
        c
    }

    #[inline]
    pub fn get(&self, id: ContenderId) -> &Contender {
        &self.contenders[id.0 as usize]
    }
    /// The contender's EDCAF, brought up to date, to change (CW, a new backoff).
    #[inline]
    pub fn edcaf_mut(&mut self, id: ContenderId) -> &mut Edcaf {
        &mut self.touch(id).edcaf
    }
    /// The contender's remaining backoff slots, as of the last time the medium turned busy.
    pub fn backoff(&self, id: ContenderId) -> u32 {
        let c = &self.contenders[id.0 as usize];
        let b = c.edcaf.backoff();
        if c.lazy {
            let slots = self.classes[c.class as usize].idle_slots - c.base;
            b - slots.min(b as u64) as u32
        } else {
            b
        }
    }
    /// The instant from which the contender counts AIFS.
    pub fn ref_time(&self, id: ContenderId) -> Instant {
        let c = &self.contenders[id.0 as usize];
        if c.lazy {
            self.lazy_ref
        } else {
            c.edcaf.ref_time()
        }
    }
    pub fn len(&self) -> usize {
        self.contenders.len()
    }
    pub fn is_empty(&self) -> bool {
        self.contenders.is_empty()
    }
    pub fn is_busy(&self) -> bool {
        self.busy
    }
    /// The contenders of one owner, in the order they were added.
    pub fn owned_by(&self, owner: u32) -> &[ContenderId] {
        self.by_owner.get(owner as usize).map_or(&[], |v| v.as_slice())
    }
    /// How many contenders are kept exactly now (ready or with a reference of their own).
    pub fn eager_len(&self) -> usize {
        self.eager.len()
    }

    /// The contender has a frame to send from `now` on. Returns true if it was not ready before.
    /// A contender that becomes ready while the medium is busy with a zero counter draws a
    /// backoff (§10.23.2.2 a)): it does not take the medium right after AIFS.
    #[inline]
    pub fn set_ready(&mut self, id: ContenderId, now: Instant) -> bool {
        self.set_ready_since(id, now, now)
    }

    /// As [`Medium::set_ready`] for a frame that arrived at `arrived` ≤ `now` (the host learns
    /// of it only at `now`: a frame made when a received MPDU was delivered, whose PPDU's
    /// exchange ends at `now`): it arrived while the medium was busy if the medium has turned
    /// idle since.
    #[inline]
    pub fn set_ready_since(&mut self, id: ContenderId, now: Instant, arrived: Instant) -> bool {
        if self.contenders[id.0 as usize].ready {
            return false;
        }
        let busy = self.busy || arrived < self.idle_since;
        let c = self.touch(id);
        c.ready = true;
        c.ready_since = now;
        if busy {
            c.edcaf.on_ready_while_busy();
        }
        true
    }

    #[inline]
    pub fn set_not_ready(&mut self, id: ContenderId) {
        self.contenders[id.0 as usize].ready = false;
    }

    /// The access instant of one contender, if it is ready and the medium is idle.
    #[inline]
    pub fn access_time_of(&self, id: ContenderId) -> Option<Instant> {
        let c = &self.contenders[id.0 as usize];
        if self.busy {
            return None;
        }
        c.access_time(&self.timing)
    }

    /// The earliest access instant over all ready contenders, if the medium is idle.
    pub fn next_access(&self) -> Option<Instant> {
        if self.busy {
            return None;
        }
        self.eager
            .iter()
            .map(|&id| &self.contenders[id.0 as usize])
            .filter_map(|c| c.access_time(&self.timing))
            .min()
    }

    /// The medium turns busy at `now` (the earliest access instant). Decides who transmits,
    /// resolves internal collisions and freezes every other counter.
    pub fn start_access(&mut self, now: Instant) -> AccessOutcome {
        debug_assert!(!self.busy);
        let horizon = now + self.cca_window;
        let mut out = AccessOutcome::default();
        for &id in &self.eager {
            let c = &self.contenders[id.0 as usize];
            if c.access_time(&self.timing).is_some_and(|t| t < horizon) {
                out.transmitters.push(id);
            }
        }
        out.transmitters.sort_unstable();
        // Internal collisions: per owner keep the highest priority.
        if out.transmitters.len() > 1 {
            let mut keep = Vec::with_capacity(out.transmitters.len());
            for &id in &out.transmitters {
                let c = &self.contenders[id.0 as usize];
                let beaten = out.transmitters.iter().any(|&o| {
                    let oc = &self.contenders[o.0 as usize];
                    o != id && oc.owner == c.owner && (oc.priority > c.priority || (oc.priority == c.priority && o < id))
                });
                if beaten {
                    out.internal_losers.push(id);
                } else {
                    keep.push(id);
                }
            }
            out.transmitters = keep;
        }
        for &id in &self.eager {
            if !out.transmitters.contains(&id) && !out.internal_losers.contains(&id) {
                self.contenders[id.0 as usize].edcaf.freeze(&self.timing, now);
            }
        }
        // Every lazy contender counted the idle slots of its class (`Edcaf::freeze`).
        let slot = self.timing.slot.as_nanos().max(1);
        for cl in &mut self.classes {
            let start = self.lazy_ref + cl.aifs;
            if now > start {
                cl.idle_slots += (now - start).as_nanos() / slot;
            }
        }
        self.busy = true;
        out
    }

    /// The medium is idle again from `t` for every contender; callers then adjust the
    /// reference of individual contenders (EIFS, Ack timeout) with [`Medium::set_ref`] and
    /// [`Medium::defer_bystanders`].
    pub fn set_idle(&mut self, t: Instant) {
        self.busy = false;
        self.idle_since = t;
        self.lazy_ref = t;
        let (contenders, classes, timing) = (&mut self.contenders, &self.classes, &self.timing);
        self.eager.retain(|&id| {
            let c = &mut contenders[id.0 as usize];
            c.edcaf.set_ref(t);
            // A contender whose parameters changed since it was added (MU EDCA) no longer
            // counts with its class's AIFS (or, disabled, not at all): it stays exact.
            if c.ready || c.edcaf.aifs(timing) != classes[c.class as usize].aifs {
                true
            } else {
                c.lazy = true;
                c.base = classes[c.class as usize].idle_slots;
                false
            }
        });
    }

    #[inline]
    pub fn set_ref(&mut self, id: ContenderId, t: Instant) {
        self.touch(id).edcaf.set_ref(t);
    }

    /// Every contender except those in `exempt` counts from `r` (EIFS after an undecodable
    /// PPDU, §10.3.2.3.7). Called while the medium is idle, before other per-contender
    /// references are set in this idle period.
    pub fn defer_bystanders(&mut self, r: Instant, exempt: &[ContenderId]) {
        for &id in exempt {
            self.touch(id);
        }
        self.lazy_ref = r;
        for &id in &self.eager {
            if !exempt.contains(&id) {
                self.contenders[id.0 as usize].edcaf.set_ref(r);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mac::edca::EdcaParams;
    use lasthop_core::Rng;

    fn medium() -> Medium {
        Medium::new(
            SlotTiming { slot: Duration::from_micros(9), sifs: Duration::from_micros(16) },
            Duration::from_micros(4),
        )
    }

    /// An EDCAF (CW 1023, AIFSN 2) whose backoff counter is already zero.
    fn zero_counter(seed: u64) -> Edcaf {
        let mut e = Edcaf::new(EdcaParams { cw_min: 1023, cw_max: 1023, aifsn: 2 }, Rng::from_seed(seed));
        e.set_backoff(0);
        e
    }

    #[test]
    fn earliest_wins_and_others_freeze() {
        let mut m = medium();
        let a = m.add(Edcaf::new(EdcaParams::dcf(), Rng::from_seed(1)), 0, 0);
        let b = m.add(Edcaf::new(EdcaParams::dcf(), Rng::from_seed(2)), 1, 0);
        m.set_idle(Instant::ZERO);
        m.set_ready(a, Instant::ZERO);
        m.set_ready(b, Instant::ZERO);
        let (ba, bb) = (m.backoff(a), m.backoff(b));
        let t = m.next_access().unwrap();
        assert_eq!(t, Instant(34_000 + 9_000 * ba.min(bb) as u64));
        let out = m.start_access(t);
        if ba == bb {
            assert_eq!(out.transmitters.len(), 2);
        } else {
            assert_eq!(out.transmitters.len(), 1);
            let loser = if ba < bb { b } else { a };
            assert_eq!(m.backoff(loser), ba.max(bb) - ba.min(bb));
        }
        assert!(m.next_access().is_none());
    }

    /// §10.23.2.2 a): a frame that arrives at an EDCAF with a zero counter while the medium is
    /// busy invokes the backoff procedure; one that arrives on an idle medium goes after AIFS.
    #[test]
    fn a_frame_arriving_on_a_busy_medium_draws_a_backoff() {
        let mut m = medium();
        let mk = zero_counter;
        let a = m.add(mk(1), 0, 0);
        let b = m.add(mk(2), 1, 0);
        m.set_idle(Instant::ZERO);
        // Idle medium, zero counter: AIFS (34 µs) after the arrival.
        m.set_ready(a, Instant(100_000));
        assert_eq!(m.backoff(a), 0);
        assert_eq!(m.next_access(), Some(Instant(100_000)));
        // `a` takes the medium; `b`'s frame arrives during the transmission.
        m.start_access(Instant(100_000));
        m.set_ready(b, Instant(200_000));
        let drawn = m.backoff(b);
        m.set_idle(Instant(300_000));
        m.set_not_ready(a);
        assert!(drawn > 0, "a counter in [0, 1023] drawn on arrival");
        assert_eq!(m.next_access(), Some(Instant(300_000 + 34_000 + 9_000 * drawn as u64)));
    }

    /// A frame the host learns of when the medium has turned idle, but that arrived while it was
    /// busy (a TCP ACK made at an MPDU's delivery inside the PPDU), draws the backoff it would
    /// have drawn on arrival; one that arrived after the medium turned idle goes after AIFS.
    #[test]
    fn a_frame_entered_late_counts_from_when_it_arrived() {
        let mut m = medium();
        let mk = zero_counter;
        let a = m.add(mk(1), 0, 0);
        let b = m.add(mk(2), 1, 0);
        let c = m.add(mk(3), 2, 0);
        m.set_idle(Instant::ZERO);
        m.set_ready(a, Instant(100_000));
        m.start_access(Instant(100_000));
        m.set_idle(Instant(300_000));
        m.set_not_ready(a);
        // `b`'s frame arrived at 200 µs, during `a`'s transmission; its host enters it at 300 µs.
        m.set_ready_since(b, Instant(300_000), Instant(200_000));
        let drawn = m.backoff(b);
        assert!(drawn > 0, "a counter in [0, 1023] drawn as on a busy medium");
        // `c`'s arrived at 300 µs itself, on the idle medium: no backoff, AIFS after it.
        m.set_ready_since(c, Instant(300_000), Instant(300_000));
        assert_eq!(m.backoff(c), 0);
        assert_eq!(m.next_access(), Some(Instant(334_000)));
    }

    #[test]
    fn same_slot_is_a_collision_and_internal_collision_resolves_by_priority() {
        let mut m = medium();
        let mk = |seed| {
            let mut e = Edcaf::new(EdcaParams { cw_min: 0, cw_max: 0, aifsn: 2 }, Rng::from_seed(seed));
            e.set_ref(Instant::ZERO);
            e
        };
        let a = m.add(mk(1), 0, 0);
        let b = m.add(mk(2), 1, 0);
        let c = m.add(mk(3), 0, 1);
        for id in [a, b, c] {
            m.set_ready(id, Instant::ZERO);
        }
        let out = m.start_access(m.next_access().unwrap());
        assert_eq!(out.transmitters, vec![b, c]);
        assert_eq!(out.internal_losers, vec![a]);
    }

    /// Scripted WMM internal collision at the AP (dot11QAPEDCATable): AC_BE (AIFSN 3, backoff 1)
    /// and AC_VO (AIFSN 1, backoff 3) both reach zero at SIFS + 4 slots; a station's AC_BE
    /// function is one slot later. VO transmits alone (no collision on the air), BE doubles its
    /// CW as after a collision and sends its frame at the next access.
    #[test]
    fn internal_collision_goes_to_the_higher_ac_and_loses_nothing() {
        use crate::mac::edca::AccessCategory as Ac;
        let mut m = medium();
        let t = m.timing;
        let ap = |ac: Ac, seed: u64, backoff: u32| {
            let mut e = Edcaf::new(EdcaParams::default_for(ac, true), Rng::from_seed(seed));
            e.set_backoff(backoff);
            e
        };
        let be = m.add(ap(Ac::Be, 1, 1), 0, Ac::Be.rank());
        let vo = m.add(ap(Ac::Vo, 2, 3), 0, Ac::Vo.rank());
        let mut e = Edcaf::new(EdcaParams::default_for(Ac::Be, false), Rng::from_seed(3));
        e.set_backoff(2);
        let sta = m.add(e, 1, Ac::Be.rank());
        m.set_idle(Instant::ZERO);
        for id in [be, vo, sta] {
            m.set_ready(id, Instant::ZERO);
        }
        let slot_end = Instant::ZERO + t.sifs + t.slot * 4;
        assert_eq!(m.access_time_of(be), Some(slot_end));
        assert_eq!(m.access_time_of(vo), Some(slot_end));
        assert_eq!(m.next_access(), Some(slot_end));
        let out = m.start_access(slot_end);
        assert_eq!(out.transmitters, vec![vo], "one transmitter: no collision on the air");
        assert_eq!(out.internal_losers, vec![be]);
        // The station's counter froze with one slot left (AIFS 3 + 1 of its 2 slots elapsed).
        assert_eq!(m.backoff(sta), 1);
        // The caller's part: the loser backs off as after an external collision.
        assert_eq!(m.get(be).cw(), 15);
        m.edcaf_mut(be).on_failure(7);
        assert_eq!(m.get(be).cw(), 31, "CW doubled");
        assert_eq!(m.edcaf_mut(be).failures(), 1);
        m.edcaf_mut(vo).on_success();
        m.set_not_ready(vo);
        // The VO exchange ends; BE still holds its frame and contends again.
        let end = slot_end + Duration::from_micros(300);
        m.set_idle(end);
        assert!(m.get(be).is_ready(), "the losing AC keeps its frame");
        m.edcaf_mut(be).set_backoff(0);
        let next = m.next_access().unwrap();
        let out = m.start_access(next);
        assert_eq!(out.transmitters, vec![be]);
        assert!(out.internal_losers.is_empty());
        m.edcaf_mut(be).on_success();
        assert_eq!((m.get(be).cw(), m.edcaf_mut(be).failures()), (15, 0));
    }

    /// MU EDCA with AIFSN 0 (§9.4.2.245): a disabled EDCAF neither contends nor counts down,
    /// ready or not, while the others go on; with its parameters set back it resumes from the
    /// counter it had.
    #[test]
    fn a_disabled_edcaf_neither_contends_nor_counts_down() {
        let mut m = medium();
        let a = m.add(Edcaf::new(EdcaParams { cw_min: 15, cw_max: 15, aifsn: 2 }, Rng::from_seed(1)), 0, 0);
        let b = m.add(Edcaf::new(EdcaParams { cw_min: 15, cw_max: 15, aifsn: 2 }, Rng::from_seed(2)), 1, 0);
        m.set_idle(Instant::ZERO);
        let saved = m.get(a).edcaf.params;
        m.edcaf_mut(a).set_backoff(5);
        m.edcaf_mut(a).set_params(EdcaParams { cw_min: 15, cw_max: 15, aifsn: 0 });
        m.set_ready(a, Instant::ZERO);
        assert_eq!(m.access_time_of(a), None);
        // Alone and ready, it never takes the medium.
        assert_eq!(m.next_access(), None);
        // `b` contends and wins; `a`'s counter does not move through the idle slots before.
        m.set_ready(b, Instant::ZERO);
        let t = m.next_access().unwrap();
        let out = m.start_access(t);
        assert_eq!(out.transmitters, vec![b]);
        assert_eq!(m.backoff(a), 5);
        m.set_idle(t + Duration::from_micros(500));
        m.set_not_ready(b);
        m.set_not_ready(a);
        // Not ready through an idle period it stays exact (no lazy counting from its class).
        m.start_access(t + Duration::from_micros(5_000));
        m.set_idle(t + Duration::from_micros(5_500));
        assert_eq!(m.backoff(a), 5);
        // Its parameters back: it contends with the counter it kept.
        m.edcaf_mut(a).set_params(saved);
        let idle = t + Duration::from_micros(5_500);
        m.set_ready(a, idle);
        assert_eq!(m.next_access(), Some(idle + Duration::from_micros(16 + 2 * 9 + 5 * 9)));
    }
}
