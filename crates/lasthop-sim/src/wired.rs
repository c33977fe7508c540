//! The wired link between the server and the AP, one instance per direction: a tail-drop FIFO
//! of `queue_limit` packets in front of a serialiser of rate R, then a propagation delay, with
//! optional random loss on entry (the behaviour of Linux `tbf` + `netem delay/loss`).
//!
//! No event per queue step: a FIFO with a deterministic service time has each packet's
//! departure fixed at arrival, so the link keeps the departure instants of the packets it holds
//! and answers "when does this one arrive at the far end" at once.

use lasthop_core::{BitRate, Bytes, Duration, Instant, Rng};
use std::collections::VecDeque;

pub enum WiredOutcome {
    Arrives(Instant),
    DroppedQueue,
    Lost,
}

pub struct WiredLink {
    rate: BitRate,
    delay: Duration,
    limit: usize,
    loss: f64,
    busy_until: Instant,
    /// Serialisation end of every packet still in the queue or being sent.
    departures: VecDeque<Instant>,
    rng: Rng,
}

impl WiredLink {
    pub fn new(rate_bps: u64, delay_ns: u64, limit: usize, loss: f64, rng: Rng) -> Self {
        WiredLink {
            rate: BitRate(rate_bps),
            delay: Duration(delay_ns),
            limit,
            loss,
            busy_until: Instant::ZERO,
            departures: VecDeque::new(),
            rng,
        }
    }

    /// A packet of `bytes` enters the link at `now` (calls must come in time order).
    pub fn send(&mut self, now: Instant, bytes: u32) -> WiredOutcome {
        if self.loss > 0.0 && self.rng.bernoulli(self.loss) {
            return WiredOutcome::Lost;
        }
        while self.departures.front().is_some_and(|&d| d <= now) {
            self.departures.pop_front();
        }
        // `limit` packets may wait behind the one being serialised.
        if self.departures.len() > self.limit {
            return WiredOutcome::DroppedQueue;
        }
        let start = if self.busy_until > now { self.busy_until } else { now };
        let end = start + self.rate.tx_time(Bytes(bytes as u64));
        self.busy_until = end;
        self.departures.push_back(end);
        WiredOutcome::Arrives(end + self.delay)
    }

    pub fn queued(&self) -> usize {
        self.departures.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    #[test]
    fn serialises_queues_and_drops() {
        let mut l = WiredLink::new(12_000_000, 1_000_000, 1, 0.0, Rng::from_seed(1));
        // 1500 B at 12 Mb/s = 1 ms
        let a = |o| match o {
            WiredOutcome::Arrives(t) => Some(t),
            _ => None,
        };
        assert_eq!(a(l.send(Instant::ZERO, 1500)), Some(Instant(2_000_000)));
        assert_eq!(a(l.send(Instant::ZERO, 1500)), Some(Instant(3_000_000)));
        assert!(matches!(l.send(Instant::ZERO, 1500), WiredOutcome::DroppedQueue));
        assert_eq!(a(l.send(Instant(1_000_000), 1500)), Some(Instant(4_000_000)));
    }
}
