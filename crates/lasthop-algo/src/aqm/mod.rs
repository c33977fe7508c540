//! Queue disciplines, sans-IO: `enqueue(now, pkt)` and `dequeue(now)`; the host owns the
//! packets' storage and hands the discipline small copyable handles.
//!
//! Every discipline keeps params (fixed at build), vars (state) and stats (monotone counters)
//! and satisfies conservation: `arrived = dropped + dequeued + queued`.
//!
//! Disciplines: [`Fifo`] (tail drop), [`Codel`] (RFC 8289), [`Pie`] (RFC 8033), [`FqCodel`]
//! (RFC 8290), [`DualPi2`] (the DualQ Coupled AQM of RFC 9332 for L4S, with Linux
//! `sch_dualpi2`'s defaults), [`MacFq`] (mac80211's per-station queues over one flow table), and
//! [`AnyQdisc`] / [`AqmConfig`] to pick one at run time.
//!
//! Buffer sizer: [`Wqm`] ("Battling Latency in Modern Wireless Networks"), a sans-IO controller
//! that sets a queue's packet limit from the drain time it estimates.

pub mod any;
pub mod codel;
pub mod coupled;
pub mod dualpi2;
pub mod fifo;
pub mod fq_codel;
pub mod mac_fq;
pub mod pie;
pub mod wqm;
#[cfg(test)]
pub(crate) mod test_util;

pub use any::{AnyQdisc, AqmConfig};
pub use codel::{Codel, CodelConfig};
pub use coupled::{CoupledAqm, DualPi2Config, DualPi2Counters, DualPi2Scheduler, DualPi2Vars};
pub use dualpi2::DualPi2;
pub use fifo::{Fifo, FifoConfig};
pub use fq_codel::{FqCodel, FqCodelConfig};
pub use mac_fq::{FlowAqm, MacFq, MacFqConfig, TinStats};
pub use pie::{Pie, PieConfig, PieEstimator};
pub use wqm::{Wqm, WqmConfig, WqmInput, WqmOutput, WqmVariant};

use crate::ecn::Ecn;
use lasthop_core::Instant;

/// What a queue needs to know about a packet handle.
pub trait QueuedPacket: Copy {
    /// Size on the wire in bytes (for byte limits and AQM rates).
    fn len_bytes(&self) -> u32;
    /// Flow identifier hash (e.g. of the 5-tuple) for flow-queueing disciplines such as
    /// FQ-CoDel. The default puts every packet in one flow.
    fn flow_hash(&self) -> u32 {
        0
    }
    /// The ECN field of the packet's IP header. The default: Not-ECT (the host carries no ECN).
    fn ecn(&self) -> Ecn {
        Ecn::NotEct
    }
    /// Write the ECN field; a discipline only ever turns an ECN-capable packet into CE
    /// ([`mark_ce`]). The host reads the field back from the handle a discipline returns.
    fn set_ecn(&mut self, _ecn: Ecn) {}
}

/// Mark `p` congestion experienced if it is ECN-capable (Linux `INET_ECN_set_ce`); false for a
/// Not-ECT packet, which the caller drops instead.
pub fn mark_ce<P: QueuedPacket>(p: &mut P) -> bool {
    let mut e = p.ecn();
    let marked = e.set_ce();
    if marked {
        p.set_ecn(e);
    }
    marked
}

/// Monotone counters common to every discipline.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct QdiscStats {
    pub arrived: u64,
    pub dropped: u64,
    pub dequeued: u64,
    pub arrived_bytes: u64,
    pub dropped_bytes: u64,
    pub dequeued_bytes: u64,
}

/// The narrow interface every queue discipline implements.
pub trait Qdisc<P: QueuedPacket> {
    /// Offer a packet. `Err(p)` hands back the packet dropped because of this arrival: usually
    /// `pkt` itself (tail drop, PIE early drop), but FQ-CoDel's overflow rule (RFC 8290 §4.1)
    /// may instead drop a queued packet from the fattest flow and queue `pkt`. Either way the
    /// host frees exactly the handle it gets back; at most one packet is dropped per arrival.
    fn enqueue(&mut self, now: Instant, pkt: P) -> Result<(), P>;
    /// Take the next packet to send. Packets an AQM drops on the way out are passed to
    /// `on_drop` before the packet that is returned.
    fn dequeue<F: FnMut(P)>(&mut self, now: Instant, on_drop: F) -> Option<P>;
    /// Look at the head without removing it.
    fn peek(&self) -> Option<P>;
    fn len_packets(&self) -> usize;
    fn len_bytes(&self) -> u64;
    fn stats(&self) -> QdiscStats;
    fn is_empty(&self) -> bool {
        self.len_packets() == 0
    }
    /// Check internal invariants (conservation and limits); called under debug assertions.
    fn invariants(&self) -> Result<(), &'static str> {
        conservation(&self.stats(), self.len_packets(), self.len_bytes())
    }
}

/// The conservation identity every discipline keeps, in packets and in bytes:
/// arrived = dropped + dequeued + queued. Disciplines that check more call this first.
pub fn conservation(s: &QdiscStats, queued_packets: usize, queued_bytes: u64) -> Result<(), &'static str> {
    if s.arrived != s.dropped + s.dequeued + queued_packets as u64 {
        return Err("conservation: arrived != dropped + dequeued + queued");
    }
    if s.arrived_bytes != s.dropped_bytes + s.dequeued_bytes + queued_bytes {
        return Err("byte conservation violated");
    }
    Ok(())
}
