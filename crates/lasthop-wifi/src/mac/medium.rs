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
//! Cost: finding the next access instant is one pass over the ready contenders; the simulator
//! keeps a single pending event for it, not one per station.

use super::edca::{Edcaf, SlotTiming};
use lasthop_core::{Duration, Instant};

/// Index of a contender in the medium.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct ContenderId(pub u32);

#[derive(Clone, Debug)]
pub struct Contender {
    pub edcaf: Edcaf,
    /// The station (AP or non-AP) this EDCAF belongs to.
    pub owner: u32,
    /// Priority among EDCAFs of the same owner (higher wins an internal collision).
    pub priority: u8,
    ready: bool,
    ready_since: Instant,
}

impl Contender {
    pub fn is_ready(&self) -> bool {
        self.ready
    }
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
}

impl Medium {
    pub fn new(timing: SlotTiming, cca_window: Duration) -> Self {
        Medium { timing, cca_window, contenders: Vec::new(), busy: false }
    }

    pub fn add(&mut self, edcaf: Edcaf, owner: u32, priority: u8) -> ContenderId {
        self.contenders.push(Contender { edcaf, owner, priority, ready: false, ready_since: Instant::ZERO });
        ContenderId(self.contenders.len() as u32 - 1)
    }

    #[inline]
    pub fn get(&self, id: ContenderId) -> &Contender {
        &self.contenders[id.0 as usize]
    }
    #[inline]
    pub fn get_mut(&mut self, id: ContenderId) -> &mut Contender {
        &mut self.contenders[id.0 as usize]
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

    /// The contender has a frame to send from `now` on. Returns true if it was not ready before.
    #[inline]
    pub fn set_ready(&mut self, id: ContenderId, now: Instant) -> bool {
        let c = &mut self.contenders[id.0 as usize];
        if c.ready {
            return false;
        }
        c.ready = true;
        c.ready_since = now;
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
        (c.ready && !self.busy).then(|| c.edcaf.access_time(&self.timing, c.ready_since))
    }

    /// The earliest access instant over all ready contenders, if the medium is idle.
    pub fn next_access(&self) -> Option<Instant> {
        if self.busy {
            return None;
        }
        self.contenders
            .iter()
            .filter(|c| c.ready)
            .map(|c| c.edcaf.access_time(&self.timing, c.ready_since))
            .min()
    }

    /// The medium turns busy at `now` (the earliest access instant). Decides who transmits,
    /// resolves internal collisions and freezes every other counter.
    pub fn start_access(&mut self, now: Instant) -> AccessOutcome {
        debug_assert!(!self.busy);
        let horizon = now + self.cca_window;
        let mut out = AccessOutcome::default();
        for (i, c) in self.contenders.iter().enumerate() {
            if c.ready && c.edcaf.access_time(&self.timing, c.ready_since) < horizon {
                out.transmitters.push(ContenderId(i as u32));
            }
        }
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
        for (i, c) in self.contenders.iter_mut().enumerate() {
            let id = ContenderId(i as u32);
            if !out.transmitters.contains(&id) && !out.internal_losers.contains(&id) {
                c.edcaf.freeze(&self.timing, now);
            }
        }
        self.busy = true;
        out
    }

    /// The medium is idle again from `t` for every contender; callers then adjust the
    /// reference of individual contenders (EIFS, Ack timeout) with [`Medium::set_ref`].
    pub fn set_idle(&mut self, t: Instant) {
        self.busy = false;
        for c in &mut self.contenders {
            c.edcaf.set_ref(t);
        }
    }

    #[inline]
    pub fn set_ref(&mut self, id: ContenderId, t: Instant) {
        self.contenders[id.0 as usize].edcaf.set_ref(t);
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

    #[test]
    fn earliest_wins_and_others_freeze() {
        let mut m = medium();
        let a = m.add(Edcaf::new(EdcaParams::dcf(), Rng::from_seed(1)), 0, 0);
        let b = m.add(Edcaf::new(EdcaParams::dcf(), Rng::from_seed(2)), 1, 0);
        m.set_idle(Instant::ZERO);
        m.set_ready(a, Instant::ZERO);
        m.set_ready(b, Instant::ZERO);
        let (ba, bb) = (m.get(a).edcaf.backoff(), m.get(b).edcaf.backoff());
        let t = m.next_access().unwrap();
        assert_eq!(t, Instant(34_000 + 9_000 * ba.min(bb) as u64));
        let out = m.start_access(t);
        if ba == bb {
            assert_eq!(out.transmitters.len(), 2);
        } else {
            assert_eq!(out.transmitters.len(), 1);
            let loser = if ba < bb { b } else { a };
            assert_eq!(m.get(loser).edcaf.backoff(), ba.max(bb) - ba.min(bb));
        }
        assert!(m.next_access().is_none());
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
        assert_eq!(m.get(sta).edcaf.backoff(), 1);
        // The caller's part: the loser backs off as after an external collision.
        assert_eq!(m.get(be).edcaf.cw(), 15);
        m.get_mut(be).edcaf.on_failure(7);
        assert_eq!(m.get(be).edcaf.cw(), 31, "CW doubled");
        assert_eq!(m.get(be).edcaf.failures(), 1);
        m.get_mut(vo).edcaf.on_success();
        m.set_not_ready(vo);
        // The VO exchange ends; BE still holds its frame and contends again.
        let end = slot_end + Duration::from_micros(300);
        m.set_idle(end);
        assert!(m.get(be).is_ready(), "the losing AC keeps its frame");
        m.get_mut(be).edcaf.set_backoff(0);
        let next = m.next_access().unwrap();
        let out = m.start_access(next);
        assert_eq!(out.transmitters, vec![be]);
        assert!(out.internal_losers.is_empty());
        m.get_mut(be).edcaf.on_success();
        assert_eq!((m.get(be).edcaf.cw(), m.get(be).edcaf.failures()), (15, 0));
    }
}
