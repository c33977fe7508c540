//! The packet arena: every packet alive in the cell, by index, with a free list. A packet's
//! handle (`PktRef`) is its index, its IP length and its flow; queues and the MAC hold handles
//! only. An MPDU carrying an A-MSDU is a chain of packets (`Pkt::next`), and a retransmission of
//! an MPDU the recipient already holds is a ghost copy of that chain, which never counts in a
//! flow's statistics.

use super::{Echo, Pkt, PktRef, TcpMeta, World, NO_NEXT};
use lasthop_algo::ecn::Ecn;
use lasthop_core::Instant;
use std::ops::{Deref, DerefMut};

pub(super) struct Arena {
    pkts: Vec<Pkt>,
    free: Vec<u32>,
    /// Ghost copies alive (`ghost_copy`), not counted as packets in the system.
    live_ghosts: u64,
}

impl Arena {
    pub fn with_capacity(n: usize) -> Arena {
        Arena { pkts: Vec::with_capacity(n), free: Vec::new(), live_ghosts: 0 }
    }

    /// Store a packet in a free slot (the most recently freed) or a new one; its index.
    #[inline]
    pub fn put(&mut self, p: Pkt) -> u32 {
        match self.free.pop() {
            Some(id) => {
                self.pkts[id as usize] = p;
                id
            }
            None => {
                self.pkts.push(p);
                self.pkts.len() as u32 - 1
            }
        }
    }

    #[inline]
    pub fn release(&mut self, p: PktRef) {
        if self.pkts[p.id as usize].ghost {
            self.live_ghosts -= 1;
        }
        self.free.push(p.id);
    }

    /// Packets created and not yet delivered or dropped (queued, in flight, held for
    /// reordering); ghost copies are not packets of their own.
    pub fn in_system(&self) -> u64 {
        (self.pkts.len() - self.free.len()) as u64 - self.live_ghosts
    }

    /// The MSDUs of the MPDU whose first MSDU is `p`, in order, into `out`.
    #[inline]
    pub fn msdus_into(&self, p: PktRef, out: &mut Vec<PktRef>) {
        out.clear();
        let mut cur = p;
        loop {
            out.push(cur);
            let pk = &self.pkts[cur.id as usize];
            if pk.next == NO_NEXT {
                break;
            }
            let n = &self.pkts[pk.next as usize];
            cur = PktRef { id: pk.next, len: pk.next_len, flow: n.flow, ecn: n.ecn };
        }
    }

    /// A second handle to the same MPDU contents (every MSDU of it), for a retransmission of an
    /// MPDU the recipient already has; `chain` is scratch (left holding the original MSDUs).
    pub fn ghost_copy(&mut self, p: PktRef, chain: &mut Vec<PktRef>) -> PktRef {
        self.msdus_into(p, chain);
        let mut next: Option<PktRef> = None;
        for &q in chain.iter().rev() {
            let mut pk = self.pkts[q.id as usize];
            pk.ghost = true;
            (pk.next, pk.next_len) = next.map_or((NO_NEXT, 0), |n| (n.id, n.len));
            self.live_ghosts += 1;
            next = Some(PktRef { id: self.put(pk), len: q.len, flow: q.flow, ecn: pk.ecn });
        }
        next.expect("an MPDU has an MSDU")
    }
}

impl Deref for Arena {
    type Target = [Pkt];
    #[inline]
    fn deref(&self) -> &[Pkt] {
        &self.pkts
    }
}

impl DerefMut for Arena {
    #[inline]
    fn deref_mut(&mut self) -> &mut [Pkt] {
        &mut self.pkts
    }
}

impl Pkt {
    /// A packet of `flow` made at `created`, not yet sent, alone in its MPDU, Not-ECT.
    pub(super) fn fresh(flow: u32, created: Instant, tcp: TcpMeta) -> Pkt {
        Pkt {
            flow,
            created,
            retries: 0,
            ghost: false,
            tcp,
            echo: Echo::None,
            aql: 0,
            next: NO_NEXT,
            next_len: 0,
            mpdu: 0,
            ecn: Ecn::NotEct,
        }
    }
}

/// A packet's birth and end in the arena: its slot, and the flow's offered counters.
impl World {
    #[inline]
    pub(in crate::world) fn alloc(&mut self, flow: u32, len: u32, now: Instant) -> PktRef {
        let p = self.alloc_control(flow, len, now);
        if now >= self.warmup {
            let c = &mut self.counters[flow as usize];
            c.offered_packets += 1;
            c.offered_bytes += len as u64;
        }
        p
    }

    /// A packet that does not count as offered load (TCP ACKs).
    #[inline]
    pub(in crate::world) fn alloc_control(&mut self, flow: u32, len: u32, now: Instant) -> PktRef {
        let id = self.pkts.put(Pkt::fresh(flow, now, TcpMeta::None));
        PktRef { id, len, flow, ecn: Ecn::NotEct }
    }

    #[inline]
    pub(in crate::world) fn release(&mut self, p: PktRef) {
        self.pkts.release(p);
    }
}
