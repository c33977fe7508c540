//! FIFO tail-drop, with Linux `txqueuelen` semantics: a packet arriving when the queue already
//! holds `limit_packets` packets (or would exceed `limit_bytes`, when set) is dropped.

use super::{QdiscStats, Qdisc, QueuedPacket};
use alloc::collections::VecDeque;
use lasthop_core::Instant;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FifoConfig {
    /// Maximum packets held (txqueuelen). Default 1000, as on Linux.
    pub limit_packets: usize,
    /// Optional byte limit; 0 means none.
    pub limit_bytes: u64,
}

impl Default for FifoConfig {
    fn default() -> Self {
        FifoConfig { limit_packets: 1000, limit_bytes: 0 }
    }
}

#[derive(Clone, Debug)]
pub struct Fifo<P> {
    params: FifoConfig,
    q: VecDeque<P>,
    bytes: u64,
    stats: QdiscStats,
}

impl<P: QueuedPacket> Fifo<P> {
    pub fn new(params: FifoConfig) -> Self {
        Fifo { params, q: VecDeque::new(), bytes: 0, stats: QdiscStats::default() }
    }
    pub fn params(&self) -> &FifoConfig {
        &self.params
    }
    /// Change the packet limit at run time (buffer sizers do this). Packets already queued
    /// beyond a lowered limit stay; new arrivals are dropped until the queue drains below it.
    pub fn set_limit_packets(&mut self, limit: usize) {
        self.params.limit_packets = limit;
    }
    /// Put a packet back at the head (a MAC returning a frame it could not send).
    pub fn requeue_front(&mut self, pkt: P) {
        self.bytes += pkt.len_bytes() as u64;
        self.q.push_front(pkt);
        // The packet was counted as dequeued; undo that so conservation holds.
        self.stats.dequeued -= 1;
        self.stats.dequeued_bytes -= pkt.len_bytes() as u64;
    }
}

impl<P: QueuedPacket> Qdisc<P> for Fifo<P> {
    fn enqueue(&mut self, _now: Instant, pkt: P) -> Result<(), P> {
        let len = pkt.len_bytes() as u64;
        self.stats.arrived += 1;
        self.stats.arrived_bytes += len;
        let over_bytes = self.params.limit_bytes != 0 && self.bytes + len > self.params.limit_bytes;
        if self.q.len() >= self.params.limit_packets || over_bytes {
            self.stats.dropped += 1;
            self.stats.dropped_bytes += len;
            return Err(pkt);
        }
        self.bytes += len;
        self.q.push_back(pkt);
        Ok(())
    }

    fn dequeue<F: FnMut(P)>(&mut self, _now: Instant, _on_drop: F) -> Option<P> {
        let p = self.q.pop_front()?;
        let len = p.len_bytes() as u64;
        self.bytes -= len;
        self.stats.dequeued += 1;
        self.stats.dequeued_bytes += len;
        Some(p)
    }

    fn peek(&self) -> Option<P> {
        self.q.front().copied()
    }
    fn len_packets(&self) -> usize {
        self.q.len()
    }
    fn len_bytes(&self) -> u64 {
        self.bytes
    }
    fn stats(&self) -> QdiscStats {
        self.stats
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Clone, Copy, Debug, PartialEq)]
    struct P(u32);
    impl QueuedPacket for P {
        fn len_bytes(&self) -> u32 {
            self.0
        }
    }

    #[test]
    fn tail_drop_at_limit() {
        let mut f = Fifo::new(FifoConfig { limit_packets: 2, limit_bytes: 0 });
        let t = Instant::ZERO;
        assert!(f.enqueue(t, P(10)).is_ok());
        assert!(f.enqueue(t, P(20)).is_ok());
        assert_eq!(f.enqueue(t, P(30)), Err(P(30)));
        assert_eq!(f.dequeue(t, |_| {}), Some(P(10)));
        assert!(f.enqueue(t, P(40)).is_ok());
        assert_eq!(f.len_bytes(), 60);
        f.invariants().unwrap();
        let p = f.dequeue(t, |_| {}).unwrap();
        f.requeue_front(p);
        assert_eq!(f.peek(), Some(P(20)));
        f.invariants().unwrap();
    }

    #[test]
    fn byte_limit() {
        let mut f = Fifo::new(FifoConfig { limit_packets: 100, limit_bytes: 25 });
        assert!(f.enqueue(Instant::ZERO, P(20)).is_ok());
        assert!(f.enqueue(Instant::ZERO, P(10)).is_err());
        assert!(f.enqueue(Instant::ZERO, P(5)).is_ok());
        f.invariants().unwrap();
    }

    /// Random operation sequences keep conservation (a small deterministic property test).
    #[test]
    fn random_ops_conserve() {
        let mut rng = lasthop_core::Rng::from_seed(3);
        for case in 0..50 {
            let mut f = Fifo::new(FifoConfig { limit_packets: 1 + case % 17, limit_bytes: if case % 3 == 0 { 5000 } else { 0 } });
            for step in 0..2000u64 {
                let now = Instant(step * 1000);
                if rng.bernoulli(0.55) {
                    let _ = f.enqueue(now, P(40 + rng.gen_range_inclusive(1460) as u32));
                } else {
                    let _ = f.dequeue(now, |_| {});
                }
                f.invariants().unwrap();
                assert!(f.len_packets() <= f.params().limit_packets);
            }
        }
    }
}
