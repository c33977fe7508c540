//! mac80211's side of the driver interface for the drivers' unit tests: a FIFO per station,
//! round-robin, every frame 1500 bytes and `est` ns of airtime (100 µs).

use crate::mac::driver::Mac80211;
use crate::mac::txq::{TxqSchedule, TxqSet};
use lasthop_algo::aqm::{AqmConfig, QueuedPacket};
use lasthop_core::Instant;

#[derive(Clone, Copy, Debug, PartialEq)]
pub struct P(pub u32);
impl QueuedPacket for P {
    fn len_bytes(&self) -> u32 {
        1500
    }
}

/// mac80211's queues (a FIFO per station, round-robin) with a fixed airtime estimate.
pub struct Host {
    pub q: TxqSet<P>,
    pub est: u32,
    next: u32,
}

impl Host {
    pub fn new(stations: usize) -> Self {
        Host { q: TxqSet::new(stations, 10_000, AqmConfig::default(), 1, TxqSchedule::RoundRobin), est: 100_000, next: 0 }
    }
    /// `n` frames for `sta` (the host would wake the driver after each).
    pub fn put(&mut self, sta: u32, n: u32) {
        for _ in 0..n {
            self.next += 1;
            assert!(self.q.enqueue(Instant::ZERO, sta, P(sta * 1_000_000 + self.next), |_| panic!("drop")));
        }
    }
}

impl Mac80211<P> for Host {
    fn next_txq<F: Fn(u32) -> bool>(&mut self, eligible: F) -> Option<u32> {
        self.q.next_txq_where(eligible)
    }
    fn tx_dequeue(&mut self, sta: u32) -> Option<P> {
        self.q.tx_dequeue(Instant::ZERO, sta, |_| panic!("drop"))
    }
    fn stash(&mut self, sta: u32, p: P) {
        self.q.stash(sta, p);
    }
    fn dequeued(&mut self, _sta: u32) {}
    fn charge_airtime(&mut self, _sta: u32, _p: &P) -> u32 {
        self.est
    }
    fn return_txq(&mut self, sta: u32, more: bool) {
        self.q.return_txq(sta, more);
    }
    fn has_active(&self) -> bool {
        self.q.has_active()
    }
    fn queued(&self, sta: u32) -> bool {
        self.q.len(sta) > 0
    }

    fn active_stations(&self) -> usize {
        self.q.active_len()
    }
    fn schedule_start(&mut self) {
        self.q.schedule_start();
    }
    fn schedule_end(&mut self) {
        self.q.schedule_end();
    }
}
