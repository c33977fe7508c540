//! The transmit path of mt76 (MediaTek MT76xx/MT79xx, drivers/net/wireless/mediatek/mt76 —
//! `tx.c`, and `mt7915/mac.c` for the 802.11ax chips) below mac80211's station queues, as a
//! sans-IO [`ApDriver`]. Like the firmware-queue driver ([`Firmware`], ath10k) it moves frames
//! from mac80211 into the hardware's hands, where the chip keeps them per station and builds
//! the aggregates; what differs is when it does so and how much it takes:
//!
//! * **The tx worker.** mac80211's `wake_tx_queue` (`mt76_wake_tx_queue`) only schedules the
//!   driver's tx worker, and every batch of transmit completions does too
//!   (`mt7915_mac_tx_free_done` → `mt76_worker_schedule`), with no threshold. The worker
//!   (`mt76_tx_worker_run` → `mt76_txq_schedule`) runs scheduling rounds
//!   (`ieee80211_txq_schedule_start` … `_end`) **until a round sends nothing**.
//! * **A round** (`mt76_txq_schedule_list`): every station mac80211's `ieee80211_next_txq`
//!   hands out (it passes over stations beyond their airtime queue limit) is given a burst
//!   unless the queue is stopped (`mt76_txq_stopped`), and returned with
//!   `ieee80211_return_txq`.
//! * **A burst** (`mt76_txq_send_burst`): frames of that station, one `ieee80211_tx_dequeue`
//!   at a time, until mac80211 has none (or the station reaches its AQL — mac80211's dequeue
//!   checks it per frame) or the queue stops. There is no per-station burst limit in this
//!   version (older mt76 stopped at 16 frames with aggregation).
//! * **The bound.** The queue stops when the frames the hardware holds reach
//!   `hw_queue_limit`: on MT7915 the tokens (`mt76_token_consume`; `token_size` less
//!   `MT76_TOKEN_FREE_THR`), on the DMA-ring chips `ndesc − MT_TXQ_FREE_THR` descriptors. With
//!   AQL off that bound is the driver's only one.
//!
//! The hardware's per-station queues and their service (round-robin, one aggregate per turn;
//! the MAC's scheduler is not public) are the firmware model's, shared through [`Firmware`].
//!
//! mt76 registers airtime fairness and AQL with mac80211 (`mt76_phy_init`), so a cell that runs
//! it as deployed uses `ap.scheduler = "airtime"`. Under a plain round-robin list the head of
//! the list is handed every refill (each completion frees a few slots, the first burst takes
//! them all, and a full round leaves the order as it was): the model then starves the
//! stations behind a saturating one, which is the worker's logic and not a deployed setup.

use crate::mac::ampdu::Take;
use crate::mac::driver::{ApDriver, Mac80211};
use crate::mac::firmware::{aql_ok, AqlLimits, Firmware, PushEnd};

/// mt76's transmit path over the hardware's per-station queues (see the module documentation).
#[derive(Clone, Debug)]
pub struct Mt76<P> {
    hw: Firmware<P>,
}

impl<P: Copy> Mt76<P> {
    /// `stations` stations; the hardware holds at most `limit` frames; `aql` = None: no
    /// airtime queue limit.
    pub fn new(stations: usize, limit: u32, aql: Option<AqlLimits>) -> Self {
        Mt76 { hw: Firmware::new(stations, limit, aql) }
    }

    /// Frames the hardware holds.
    pub fn len(&self) -> u32 {
        self.hw.len()
    }

    pub fn is_empty(&self) -> bool {
        self.hw.is_empty()
    }

    /// Frames of `sta` waiting in the hardware for their first transmission.
    pub fn queued(&self, sta: u32) -> usize {
        self.hw.queued(sta)
    }

    pub fn invariants(&self) -> Result<(), &'static str> {
        self.hw.invariants()
    }

    /// `mt76_txq_schedule`: rounds until one sends nothing. Returns whether any frame moved.
    fn schedule<M: Mac80211<P>>(&mut self, mac: &mut M) -> bool {
        let mut any = false;
        loop {
            if !self.hw.schedule_start(mac) {
                return any;
            }
            let mut sent = 0;
            loop {
                let (aql, pending, total) = self.hw.aql_state();
                let Some(sta) = mac.next_txq(|s| aql_ok(aql, pending, total, s)) else { break };
                if !self.hw.is_full() {
                    let (end, n) = self.hw.push_txq(mac, sta);
                    debug_assert!(end == PushEnd::Done || self.hw.is_full());
                    sent += n;
                }
                mac.return_txq(sta, false);
            }
            mac.schedule_end();
            any |= sent > 0;
            if sent == 0 {
                return any;
            }
        }
    }
}

impl<P: Copy> ApDriver<P> for Mt76<P> {
    #[inline]
    fn next_station<M: Mac80211<P>>(&mut self, mac: &mut M) -> Option<u32> {
        self.hw.next_station(mac)
    }

    fn mu_stations<M: Mac80211<P>>(&mut self, mac: &mut M, max: usize, out: &mut Vec<u32>) {
        self.hw.mu_stations(mac, max, out)
    }

    fn holds<M: Mac80211<P>>(&self, mac: &M, sta: u32) -> bool {
        self.hw.holds(mac, sta)
    }

    fn has_frames<M: Mac80211<P>>(&self, mac: &M) -> bool {
        self.hw.has_frames(mac)
    }

    #[inline]
    fn take<M: Mac80211<P>>(&mut self, mac: &mut M, sta: u32, fits: impl Fn(&P) -> bool) -> Take<P> {
        self.hw.take(mac, sta, fits)
    }

    #[inline]
    fn end_turn<M: Mac80211<P>>(&mut self, mac: &mut M, sta: u32, more: bool) -> bool {
        self.hw.end_turn(mac, sta, more)
    }

    /// `mt76_wake_tx_queue`: the tx worker runs.
    fn on_wake<M: Mac80211<P>>(&mut self, mac: &mut M) -> bool {
        self.schedule(mac)
    }

    /// `mt7915_mac_tx_free_done`: the tx worker runs, whatever the hardware still holds.
    fn on_tx_status<M: Mac80211<P>>(&mut self, mac: &mut M) -> bool {
        self.schedule(mac)
    }

    #[inline]
    fn release(&mut self, sta: u32, est: u64) {
        self.hw.release(sta, est);
    }

    fn builds_from_mac80211(&self) -> bool {
        false
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mac::test_host::{Host, P};

    /// A wake runs the tx worker over every station, not only the head of mac80211's list
    /// (ath10k's wake pushes one station): all three stations' frames reach the hardware.
    #[test]
    fn a_wake_serves_every_station() {
        let mut h = Host::new(3);
        let mut d: Mt76<P> = Mt76::new(3, 1000, None);
        h.put(0, 5);
        h.put(1, 7);
        h.put(2, 2);
        assert!(d.on_wake(&mut h));
        assert_eq!((d.queued(0), d.queued(1), d.queued(2)), (5, 7, 2));
        assert!(!d.on_wake(&mut h), "nothing left: a round that sends nothing ends the worker");
        d.invariants().unwrap();
    }

    /// A full hardware queue stops every burst; a transmit status refills it at once, with
    /// no half-empty threshold (ath10k pushes again only below half of its descriptors).
    #[test]
    fn completions_refill_without_a_threshold() {
        let mut h = Host::new(2);
        let mut d: Mt76<P> = Mt76::new(2, 10, None);
        h.put(0, 8);
        h.put(1, 8);
        d.on_wake(&mut h);
        assert_eq!(d.len(), 10);
        assert_eq!((d.queued(0), d.queued(1)), (8, 2), "station 0's burst first, then 1's until the queue stops");
        // One frame of station 0 leaves the hardware.
        let Take::Got(_) = d.take(&mut h, 0, |_| true) else { panic!("a frame") };
        d.release(0, 100_000);
        assert!(d.on_tx_status(&mut h), "one free slot is enough");
        assert_eq!((d.len(), d.queued(1)), (10, 3));
        d.invariants().unwrap();
    }

    /// With AQL each station stops at its own airtime limit, so one busy station cannot take
    /// the whole hardware queue: 5 ms low limit at 100 µs a frame = 50 frames while the
    /// radio's total is above the threshold.
    #[test]
    fn aql_bounds_each_burst() {
        let aql = AqlLimits { low: 5_000_000, high: 12_000_000, threshold: 1_000_000 };
        let mut h = Host::new(2);
        let mut d: Mt76<P> = Mt76::new(2, 10_000, Some(aql));
        h.put(0, 500);
        h.put(1, 500);
        d.on_wake(&mut h);
        assert_eq!((d.queued(0), d.queued(1)), (50, 50));
        d.invariants().unwrap();
    }
}
