//! The ECN field of the cell's packets: a mark a queue discipline put on a handle becomes the
//! packet's when the handle leaves the queue, a new packet gets its field, and the marking at
//! the air (`ap.air_ce_threshold`) marks L4S packets as they are put into an aggregate.

use super::*;

impl World {
    /// A packet handle left a queue discipline: a CE mark it got there becomes the packet's
    /// (a discipline only ever turns ECT into CE), counted for its flow.
    #[inline]
    pub(super) fn ecn_left_queue(&mut self, p: PktRef) {
        // Only a CE handle can carry a new mark (and most packets carry no ECN at all).
        if p.ecn != Ecn::Ce {
            return;
        }
        let pk = &mut self.pkts[p.id as usize];
        if p.ecn != pk.ecn {
            debug_assert!(p.ecn == Ecn::Ce && pk.ecn.is_capable(), "{:?} -> {:?}", pk.ecn, p.ecn);
            pk.ecn = p.ecn;
            self.ce_marked[p.flow as usize] += 1;
        }
    }

    /// Give a new packet its ECN field (the handle and the arena's copy).
    #[inline]
    pub(in crate::world) fn set_ecn(&mut self, p: &mut PktRef, ecn: Ecn) {
        p.ecn = ecn;
        self.pkts[p.id as usize].ecn = ecn;
    }

    /// Marking at the air (`ap.air_ce_threshold`): an L4S packet of the AP that waited longer
    /// than the threshold since it entered the AP's queues is marked CE as it is put into an
    /// aggregate. Returns the packet's handle, marked or not.
    #[inline]
    pub(super) fn air_mark(&mut self, mut p: PktRef, now: Instant) -> PktRef {
        if let Some(th) = self.air_ce_threshold {
            let since = self.at_ap.get(p.id as usize).copied().unwrap_or(Instant::ZERO);
            let pk = &mut self.pkts[p.id as usize];
            if pk.ecn == Ecn::Ect1 && now.saturating_since(since) > th {
                pk.ecn = Ecn::Ce;
                p.ecn = Ecn::Ce;
                self.ce_marked[p.flow as usize] += 1;
            }
        }
        p
    }
}
