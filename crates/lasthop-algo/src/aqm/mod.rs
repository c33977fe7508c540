//! Queue disciplines, sans-IO: `enqueue(now, pkt)` and `dequeue(now)`; the host owns the
//! packets' storage and hands the discipline small copyable handles.
//!
//! Every discipline keeps params (fixed at build), vars (state) and stats (monotone counters)
//! and satisfies conservation: `arrived = dropped + dequeued + queued`.

pub mod fifo;

pub use fifo::{Fifo, FifoConfig};

use lasthop_core::Instant;

/// What a queue needs to know about a packet handle.
pub trait QueuedPacket: Copy {
    /// Size on the wire in bytes (for byte limits and AQM rates).
    fn len_bytes(&self) -> u32;
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
    /// Offer a packet. `Err(pkt)` hands back a packet dropped on arrival.
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
        let s = self.stats();
        if s.arrived != s.dropped + s.dequeued + self.len_packets() as u64 {
            return Err("conservation: arrived != dropped + dequeued + queued");
        }
        if s.arrived_bytes != s.dropped_bytes + s.dequeued_bytes + self.len_bytes() {
            return Err("byte conservation violated");
        }
        Ok(())
    }
}
