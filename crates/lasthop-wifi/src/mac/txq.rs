//! Per-station transmit queues at the AP, behind a total packet limit, served through the pull
//! interface of Linux mac80211 (`ieee80211_next_txq`, `ieee80211_tx_dequeue`,
//! `ieee80211_return_txq`, `ieee80211_register_airtime`): the driver asks which station to
//! serve next, pulls frames for it while it builds an aggregate, hands the queue back, and
//! reports the airtime the exchange used.
//!
//! Scheduling is round-robin over stations with something to send. Each station's queue is a
//! queue discipline from `lasthop_algo::aqm` (FIFO tail-drop here); the total limit models the
//! interface's `txqueuelen` shared by all stations.

use lasthop_algo::aqm::{Fifo, FifoConfig, Qdisc, QueuedPacket};
use lasthop_core::{Duration, Instant};
use std::collections::VecDeque;

/// Scheduler choice for the AP's station queues.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TxqSchedule {
    RoundRobin,
}

#[derive(Clone, Debug)]
pub struct TxqSet<P> {
    queues: Vec<Fifo<P>>,
    total_limit: usize,
    total_len: usize,
    /// Stations with something to send, in service order.
    active: VecDeque<u32>,
    in_active: Vec<bool>,
    /// Airtime charged to each station (both directions, as mac80211 accounts it).
    airtime: Vec<Duration>,
    dropped_total_limit: u64,
}

impl<P: QueuedPacket> TxqSet<P> {
    pub fn new(stations: usize, total_limit: usize) -> Self {
        let cfg = FifoConfig { limit_packets: total_limit, limit_bytes: 0 };
        TxqSet {
            queues: (0..stations).map(|_| Fifo::new(cfg)).collect(),
            total_limit,
            total_len: 0,
            active: VecDeque::with_capacity(stations),
            in_active: vec![false; stations],
            airtime: vec![Duration::ZERO; stations],
            dropped_total_limit: 0,
        }
    }

    pub fn total_len(&self) -> usize {
        self.total_len
    }
    pub fn total_limit(&self) -> usize {
        self.total_limit
    }
    pub fn len(&self, sta: u32) -> usize {
        self.queues[sta as usize].len_packets()
    }
    pub fn room(&self) -> usize {
        self.total_limit - self.total_len
    }
    pub fn airtime(&self, sta: u32) -> Duration {
        self.airtime[sta as usize]
    }
    pub fn dropped_total_limit(&self) -> u64 {
        self.dropped_total_limit
    }
    pub fn queue(&self, sta: u32) -> &Fifo<P> {
        &self.queues[sta as usize]
    }

    /// Enqueue for `sta`; `Err` hands back a packet dropped at the total limit.
    pub fn enqueue(&mut self, now: Instant, sta: u32, p: P) -> Result<(), P> {
        if self.total_len >= self.total_limit {
            self.dropped_total_limit += 1;
            return Err(p);
        }
        self.queues[sta as usize].enqueue(now, p)?;
        self.total_len += 1;
        self.activate(sta);
        Ok(())
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

    /// `ieee80211_next_txq`: the station to serve now.
    pub fn next_txq(&self) -> Option<u32> {
        self.active.front().copied()
    }

    /// `ieee80211_tx_dequeue`: the next frame for `sta`.
    pub fn tx_dequeue(&mut self, now: Instant, sta: u32) -> Option<P> {
        let p = self.queues[sta as usize].dequeue(now, |_| {})?;
        self.total_len -= 1;
        Some(p)
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
        if more || !self.queues[sta as usize].is_empty() {
            self.active.push_back(sta);
        } else {
            self.in_active[sta as usize] = false;
        }
    }

    /// `ieee80211_register_airtime`.
    pub fn register_airtime(&mut self, sta: u32, airtime: Duration) {
        self.airtime[sta as usize] += airtime;
    }

    pub fn invariants(&self) -> Result<(), &'static str> {
        let sum: usize = self.queues.iter().map(|q| q.len_packets()).sum();
        if sum != self.total_len {
            return Err("total length out of sync");
        }
        if self.total_len > self.total_limit {
            return Err("total limit exceeded");
        }
        for q in &self.queues {
            q.invariants()?;
        }
        Ok(())
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

    #[test]
    fn round_robin_and_total_limit() {
        let mut t = TxqSet::new(3, 4);
        let now = Instant::ZERO;
        t.enqueue(now, 2, P(20)).unwrap();
        t.enqueue(now, 0, P(0)).unwrap();
        t.enqueue(now, 0, P(1)).unwrap();
        t.enqueue(now, 1, P(10)).unwrap();
        assert_eq!(t.enqueue(now, 1, P(11)), Err(P(11)));
        let mut order = Vec::new();
        while let Some(s) = t.next_txq() {
            let p = t.tx_dequeue(now, s);
            order.push((s, p));
            t.return_txq(s, false);
            t.invariants().unwrap();
        }
        assert_eq!(order, vec![(2, Some(P(20))), (0, Some(P(0))), (1, Some(P(10))), (0, Some(P(1)))]);
        assert_eq!(t.total_len(), 0);
    }
}
