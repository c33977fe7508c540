//! The hardware/firmware queue of an ath10k/mt76-like AP below mac80211's station queues,
//! with mac80211's airtime queue limit (Linux 5.5+, `ieee80211_txq_airtime_check`).
//!
//! The fill order follows the drivers' push loops (read in their sources): ath10k's
//! `ath10k_mac_schedule_txq` and mt76's `mt76_txq_schedule_list` take stations in mac80211's
//! order (`ieee80211_next_txq`) and push frames of one station while the driver has room
//! (`ath10k_mac_tx_can_push`: the HTT pending count; `mt76_txq_send_burst` until
//! `mt76_txq_stopped`, the ring less `MT_TXQ_FREE_THR`) and while the station is within its
//! airtime queue limit, which both `ath10k_mac_tx_can_push` and `ieee80211_tx_dequeue` check
//! per frame; then `ieee80211_return_txq`. mt76's per-station cap `MT_MAX_NON_AQL_PKT` applies
//! only to frames without an airtime estimate, which every data frame here has.

use super::PktRef;
use std::collections::VecDeque;

/// The hardware/firmware queues of an ath10k/mt76-like AP: the driver moves frames from the
/// mac80211 station queues (`TxqSet`) into them while there is room and the airtime queue
/// limit allows (mac80211's AQL: a station may queue more while its pending airtime is below
/// `low`, or below `high` while the total pending airtime is under `threshold`); the firmware
/// serves the stations that hold frames round-robin, one aggregate per turn, and releases a
/// frame (and its airtime) when it is acknowledged or dropped.
pub(super) struct Firmware {
    limit: u32,
    /// Frames held: queued here, in flight or awaiting retransmission.
    total: u32,
    pub(super) queue: Vec<VecDeque<PktRef>>,
    /// (low, high, threshold) in ns; None = no airtime queue limit.
    aql: Option<(u64, u64, u64)>,
    pending: Vec<u64>,
    pending_total: u64,
    /// Stations with frames in the firmware, in service order.
    pub(super) rr: VecDeque<u32>,
    in_rr: Vec<bool>,
    /// A fill is running (an enqueue it triggers must not start another).
    pub(super) filling: bool,
}

impl Firmware {
    /// `n_sta` stations, `limit` frames in total; `aql` = (low, high, threshold) ns or None.
    pub(super) fn new(n_sta: usize, limit: u32, aql: Option<(u64, u64, u64)>) -> Firmware {
        Firmware {
            limit,
            total: 0,
            queue: (0..n_sta).map(|_| VecDeque::new()).collect(),
            aql,
            pending: vec![0; n_sta],
            pending_total: 0,
            rr: VecDeque::new(),
            in_rr: vec![false; n_sta],
            filling: false,
        }
    }

    pub(super) fn has_room(&self) -> bool {
        self.total < self.limit
    }

    /// Take frame `p` of `sta`, charging `est` ns of airtime to its budget.
    pub(super) fn push(&mut self, sta: u32, p: PktRef, est: u64) {
        let i = sta as usize;
        self.pending[i] += est;
        self.pending_total += est;
        self.queue[i].push_back(p);
        self.total += 1;
        if !self.in_rr[i] {
            self.in_rr[i] = true;
            self.rr.push_back(sta);
        }
    }

    /// Done with a frame of `sta` that was charged `est` ns.
    pub(super) fn release(&mut self, sta: u32, est: u64) {
        let i = sta as usize;
        self.total -= 1;
        self.pending[i] -= est;
        self.pending_total -= est;
    }

    /// `sta`'s turn ends; it goes to the back if it still holds frames (`more`: awaiting
    /// retransmission). Returns whether any station still has something to send.
    pub(super) fn end_turn(&mut self, sta: u32, more: bool) -> bool {
        let i = sta as usize;
        if self.rr.front() == Some(&sta) {
            self.rr.pop_front();
        }
        if more || !self.queue[i].is_empty() {
            self.rr.push_back(sta);
        } else {
            self.in_rr[i] = false;
        }
        !self.rr.is_empty()
    }

    pub(super) fn aql_ok(&self, sta: u32) -> bool {
        match self.aql {
            None => true,
            Some((low, high, threshold)) => {
                let p = self.pending[sta as usize];
                p < low || (self.pending_total < threshold && p < high)
            }
        }
    }
}

