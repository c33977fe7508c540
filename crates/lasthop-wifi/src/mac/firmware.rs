//! The transmit path of a firmware-queue AP driver (ath10k-like) below mac80211's station
//! queues, with mac80211's airtime queue limit (AQL), as a sans-IO [`ApDriver`]: the host hands
//! it the moments the driver acts on — a frame queued in mac80211 (`on_wake`), a transmission's
//! status reported (`on_tx_status`) — and it pulls frames through [`Mac80211`], mac80211's
//! interface as a driver sees it.
//!
//! What it follows, read in the Linux sources (drivers/net/wireless/ath/ath10k/mac.c, htt_tx.c;
//! net/mac80211/tx.c, sta_info.c), in push mode (`HTT_TX_MODE_SWITCH_PUSH`, QCA988x firmware):
//!
//! * **Wake.** mac80211 calls the driver's `wake_tx_queue` for every frame it queues
//!   (`ieee80211_queue_skb` → `schedule_and_wake_txq`). `ath10k_mac_op_wake_tx_queue` then
//!   opens a scheduling round, takes the station at the head of mac80211's list
//!   (`ieee80211_next_txq`, which passes over stations beyond their airtime queue limit), and
//!   pushes its frames while `ath10k_mac_tx_can_push` allows (the station within its AQL) and
//!   `ath10k_htt_tx_inc_pending` has a descriptor (`num_pending_tx < max_num_pending_tx`,
//!   else `-EBUSY`), until mac80211 has nothing more for it (`-ENOENT`); then
//!   `ieee80211_return_txq` puts it at the back of the list. The station served is the head of
//!   the list, not necessarily the one whose frame arrived, and the head moves on at every wake,
//!   also when the firmware is full and nothing could be pushed.
//! * **Transmit status.** After the firmware reports completions, `ath10k_mac_tx_push_pending`
//!   runs only once fewer than half of the descriptors are pending
//!   (`num_pending_tx < max_num_pending_tx / 2`); it then serves one whole round of stations
//!   (`ath10k_mac_schedule_txq`: every station once, each pushed as above), stopping at the
//!   first `-EBUSY`.
//! * **AQL** (Linux 5.5+; `ieee80211_txq_airtime_check`): a station may queue more while its
//!   pending airtime is below `low`, or below `high` while the radio's total is below
//!   `threshold`; checked by `ieee80211_next_txq` and, per frame, by `ath10k_mac_tx_can_push`.
//!   Since Linux 6.0 ("mac80211: add a per-PHY AQL limit to improve fairness")
//!   `ieee80211_txq_schedule_start` also refuses a round while the access category's pending
//!   airtime is at or above `high + (n − 1) · low / 2` for `n` stations with frames
//!   (`ieee80211_txq_schedule_airtime_check`). A frame's airtime estimate is charged when it
//!   is handed to the firmware and released when it is acknowledged or dropped.
//! * **The firmware** keeps the frames per station and serves the stations that hold frames
//!   round-robin, one aggregate per turn (its scheduler is not public; per-TID round-robin is
//!   what its host interface exposes).
//!
//! The 10.4 firmware's push-pull mode (fetch requests per TID, `ath10k_htt_rx_tx_fetch_ind`)
//! decides inside the firmware when to pull; it is not modelled.

use crate::mac::ampdu::Take;
use crate::mac::driver::{ApDriver, Mac80211};
use std::collections::VecDeque;

/// mac80211's airtime queue limits, in nanoseconds of estimated airtime.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct AqlLimits {
    /// A station may always queue more below this (`aql_txq_limit_low`, 5 ms).
    pub low: u64,
    /// ... and below this while the radio's total is under `threshold` (12 ms).
    pub high: u64,
    /// The radio-wide pending airtime under which `high` applies (`aql_threshold`, 24 ms).
    pub threshold: u64,
}

/// Why a station's push ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum PushEnd {
    /// mac80211 had nothing more for it (`-ENOENT`), or its AQL was reached.
    Done,
    /// No descriptor left (`-EBUSY`).
    Full,
}

/// The firmware's frames and the driver's bookkeeping (see the module documentation).
#[derive(Clone, Debug)]
pub struct Firmware<P> {
    /// `max_num_pending_tx`: frames the firmware may hold (queued, in flight, or awaiting
    /// retransmission).
    limit: u32,
    total: u32,
    queue: Vec<VecDeque<P>>,
    aql: Option<AqlLimits>,
    pending: Vec<u64>,
    pending_total: u64,
    /// Stations holding frames in the firmware, in its service order.
    rr: VecDeque<u32>,
    in_rr: Vec<bool>,
}

impl<P: Copy> Firmware<P> {
    /// `stations` stations, `limit` frames in all; `aql` = None: no airtime queue limit.
    pub fn new(stations: usize, limit: u32, aql: Option<AqlLimits>) -> Self {
        Firmware {
            limit,
            total: 0,
            queue: (0..stations).map(|_| VecDeque::new()).collect(),
            aql,
            pending: vec![0; stations],
            pending_total: 0,
            rr: VecDeque::new(),
            in_rr: vec![false; stations],
        }
    }

    /// Frames the firmware holds.
    pub fn len(&self) -> u32 {
        self.total
    }

    /// Whether every descriptor is taken (`num_pending_tx` at `max_num_pending_tx`).
    pub fn is_full(&self) -> bool {
        self.total >= self.limit
    }

    /// The airtime queue limits and the pending airtime (all stations, the total), for an
    /// eligibility test that does not borrow the firmware.
    pub(crate) fn aql_state(&self) -> (Option<AqlLimits>, &[u64], u64) {
        (self.aql, &self.pending, self.pending_total)
    }

    pub fn is_empty(&self) -> bool {
        self.total == 0
    }

    /// Frames of `sta` waiting in the firmware for their first transmission.
    pub fn queued(&self, sta: u32) -> usize {
        self.queue[sta as usize].len()
    }

    /// `ieee80211_txq_airtime_check` for `sta`.
    pub fn aql_ok(&self, sta: u32) -> bool {
        aql_ok(self.aql, &self.pending, self.pending_total, sta)
    }

    /// `ieee80211_txq_schedule_start`, refused while the per-PHY AQL limit is reached.
    pub(crate) fn schedule_start<M: Mac80211<P>>(&self, mac: &mut M) -> bool {
        if let Some(a) = self.aql {
            let n = mac.active_stations().max(1) as u64;
            if self.pending_total >= a.high + (n - 1) * a.low / 2 {
                return false;
            }
        }
        mac.schedule_start();
        true
    }

    /// Push `sta`'s frames while it is within its AQL and a descriptor is free.
    pub(crate) fn push_txq<M: Mac80211<P>>(&mut self, mac: &mut M, sta: u32) -> (PushEnd, u32) {
        let mut n = 0;
        loop {
            if !self.aql_ok(sta) {
                return (PushEnd::Done, n);
            }
            if self.total >= self.limit {
                return (PushEnd::Full, n);
            }
            let Some(p) = mac.tx_dequeue(sta) else { return (PushEnd::Done, n) };
            let est = mac.charge_airtime(sta, &p);
            mac.dequeued(sta);
            self.push(sta, p, est as u64);
            n += 1;
        }
    }

    /// Take frame `p` of `sta`, charging `est` ns of airtime to its budget.
    fn push(&mut self, sta: u32, p: P, est: u64) {
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

    pub fn invariants(&self) -> Result<(), &'static str> {
        if self.queue.iter().map(|q| q.len() as u32).sum::<u32>() > self.total {
            return Err("firmware queues hold more than its count");
        }
        if self.pending.iter().sum::<u64>() != self.pending_total {
            return Err("pending airtime out of sync");
        }
        if self.total > self.limit {
            return Err("firmware over its limit");
        }
        Ok(())
    }
}

impl<P: Copy> ApDriver<P> for Firmware<P> {
    /// The station the firmware serves at this channel access.
    #[inline]
    fn next_station<M: Mac80211<P>>(&mut self, _mac: &mut M) -> Option<u32> {
        self.rr.front().copied()
    }

    /// The firmware's next stations in its order.
    fn mu_stations<M: Mac80211<P>>(&mut self, _mac: &mut M, max: usize, out: &mut Vec<u32>) {
        out.clear();
        out.extend(self.rr.iter().take(max).copied());
    }

    fn holds<M: Mac80211<P>>(&self, _mac: &M, sta: u32) -> bool {
        !self.queue[sta as usize].is_empty()
    }

    fn has_frames<M: Mac80211<P>>(&self, _mac: &M) -> bool {
        !self.rr.is_empty()
    }

    /// The next new frame of `sta`'s aggregate from its firmware queue.
    #[inline]
    fn take<M: Mac80211<P>>(&mut self, _mac: &mut M, sta: u32, fits: impl Fn(&P) -> bool) -> Take<P> {
        let q = &mut self.queue[sta as usize];
        let Some(p) = q.front() else { return Take::Empty };
        if !fits(p) {
            return Take::NoFit;
        }
        Take::Got(q.pop_front().expect("front"))
    }

    /// `sta` goes to the back of the firmware's order if it still holds frames.
    #[inline]
    fn end_turn<M: Mac80211<P>>(&mut self, _mac: &mut M, sta: u32, more: bool) -> bool {
        let i = sta as usize;
        if self.rr.front() == Some(&sta) {
            self.rr.pop_front();
        } else if let Some(j) = self.rr.iter().position(|&s| s == sta) {
            // A further user of a DL MU PPDU.
            self.rr.remove(j);
        }
        if more || !self.queue[i].is_empty() {
            self.rr.push_back(sta);
        } else {
            self.in_rr[i] = false;
        }
        !self.rr.is_empty()
    }

    /// `ath10k_mac_op_wake_tx_queue`: the head station of a new round is pushed. Returns
    /// whether anything reached the firmware.
    fn on_wake<M: Mac80211<P>>(&mut self, mac: &mut M) -> bool {
        if !self.schedule_start(mac) {
            return false;
        }
        let mut pushed = false;
        let (aql, pending, total) = (self.aql, &self.pending, self.pending_total);
        if let Some(sta) = mac.next_txq(|s| aql_ok(aql, pending, total, s)) {
            pushed = self.push_txq(mac, sta).1 > 0;
            mac.return_txq(sta, false);
        }
        mac.schedule_end();
        pushed
    }

    /// `ath10k_mac_tx_push_pending`: below half of the descriptors, one round over every
    /// station. Returns whether anything was pushed.
    fn on_tx_status<M: Mac80211<P>>(&mut self, mac: &mut M) -> bool {
        if self.total >= self.limit / 2 || !self.schedule_start(mac) {
            return false;
        }
        let mut pushed = false;
        loop {
            let (aql, pending, total) = (self.aql, &self.pending, self.pending_total);
            let Some(sta) = mac.next_txq(|s| aql_ok(aql, pending, total, s)) else { break };
            let (end, n) = self.push_txq(mac, sta);
            pushed |= n > 0;
            mac.return_txq(sta, false);
            if end == PushEnd::Full {
                break;
            }
        }
        mac.schedule_end();
        pushed
    }

    #[inline]
    fn release(&mut self, sta: u32, est: u64) {
        let i = sta as usize;
        self.total -= 1;
        self.pending[i] -= est;
        self.pending_total -= est;
    }

    /// Aggregates come from the firmware's queues, filled by pushes.
    fn builds_from_mac80211(&self) -> bool {
        false
    }
}

pub(crate) fn aql_ok(aql: Option<AqlLimits>, pending: &[u64], total: u64, sta: u32) -> bool {
    match aql {
        None => true,
        Some(a) => {
            let p = pending[sta as usize];
            p < a.low || (total < a.threshold && p < a.high)
        }
    }
}


#[cfg(test)]
mod tests {
    use super::*;
    use crate::mac::test_host::{Host, P};

    /// The firmware transmits `sta`'s queued frames and acknowledges them.
    fn transmit(fw: &mut Firmware<P>, h: &mut Host, sta: u32, est: u64) -> usize {
        let mut n = 0;
        while let Take::Got(_) = fw.take(h, sta, |_| true) {
            fw.release(sta, est);
            n += 1;
        }
        fw.end_turn(h, sta, false);
        n
    }

    #[test]
    fn a_wake_pushes_the_head_station_until_the_firmware_is_full() {
        let mut h = Host::new(3);
        let mut fw = Firmware::new(3, 10, None);
        h.put(1, 6);
        h.put(0, 6);
        // Station 1 queued first, so it heads mac80211's list, whoever's frame woke the driver.
        assert!(fw.on_wake(&mut h));
        assert_eq!((fw.queued(1), fw.queued(0), fw.len()), (6, 0, 6));
        // The next wake serves the next station, until the descriptors run out.
        assert!(fw.on_wake(&mut h));
        assert_eq!((fw.queued(0), fw.len()), (4, 10));
        assert_eq!(fw.next_station(&mut h), Some(1));
        fw.invariants().unwrap();
    }

    #[test]
    fn a_wake_on_a_full_firmware_still_moves_the_head_on() {
        let mut h = Host::new(3);
        let mut fw = Firmware::new(3, 4, None);
        h.put(0, 10);
        assert!(fw.on_wake(&mut h));
        assert_eq!(fw.len(), 4);
        h.put(1, 1);
        h.put(2, 1);
        // Full: the wakes push nothing, but each one takes the head and returns it to the back.
        assert!(!fw.on_wake(&mut h)); // station 0 (head) to the back: 1, 2, 0
        assert_eq!(transmit(&mut fw, &mut h, 0, 0), 4);
        // Room again: the head is now station 1, then 2; station 0 waits for its turn.
        assert!(fw.on_wake(&mut h));
        assert_eq!((fw.queued(1), fw.queued(0)), (1, 0));
        assert!(fw.on_wake(&mut h));
        assert_eq!((fw.queued(2), fw.queued(0)), (1, 0));
        assert!(fw.on_wake(&mut h));
        assert_eq!(fw.queued(0), 2);
    }

    #[test]
    fn transmit_status_pushes_a_whole_round_only_below_half_the_descriptors() {
        let mut h = Host::new(3);
        let mut fw = Firmware::new(3, 8, None);
        h.put(0, 6);
        assert!(fw.on_wake(&mut h));
        assert_eq!(fw.len(), 6);
        h.put(1, 3);
        assert!(fw.on_wake(&mut h));
        h.put(2, 3);
        // Full: station 1, the head, is taken and returned behind station 2.
        assert!(!fw.on_wake(&mut h));
        assert_eq!((fw.queued(1), fw.queued(2), fw.len()), (2, 0, 8));
        // Two frames done: 6 of 8 pending, not below half, so the status pushes nothing.
        assert_eq!(transmit(&mut fw, &mut h, 1, 0), 2);
        assert!(!fw.on_tx_status(&mut h));
        // Below half (3 pending): one round, each station with frames once, until full.
        for _ in 0..3 {
            fw.take(&mut h, 0, |_| true);
            fw.release(0, 0);
        }
        assert!(fw.on_tx_status(&mut h));
        assert_eq!((fw.queued(1), fw.queued(2), fw.len()), (1, 3, 7));
        fw.invariants().unwrap();
    }

    #[test]
    fn a_round_returns_each_station_once() {
        let mut h = Host::new(2);
        h.put(0, 3);
        h.put(1, 3);
        h.q.schedule_start();
        assert_eq!(h.q.next_txq(), Some(0));
        h.q.return_txq(0, true);
        assert_eq!(h.q.next_txq(), Some(1));
        h.q.return_txq(1, true);
        assert_eq!(h.q.next_txq(), None);
        h.q.schedule_end();
        assert_eq!(h.q.next_txq(), Some(0));
    }

    #[test]
    fn the_airtime_queue_limit_stops_a_station_and_refuses_rounds() {
        let aql = AqlLimits { low: 450_000, high: 1_000_000, threshold: 2_000_000 };
        let mut h = Host::new(3);
        let mut fw = Firmware::new(3, 1000, Some(aql));
        h.put(0, 50);
        h.put(1, 50);
        // 100 µs a frame: a station may queue up to `high` (10 frames) while the radio's
        // total is under the threshold.
        assert!(fw.on_wake(&mut h));
        assert_eq!(fw.queued(0), 10);
        assert!(fw.on_wake(&mut h));
        assert_eq!(fw.queued(1), 10);
        // The per-PHY limit: two stations with frames allow high + low / 2 = 1.225 ms in all,
        // so no round opens at 2 ms.
        assert!(!fw.on_wake(&mut h));
        // Station 0's frames are done: its budget and the radio's are free again.
        transmit(&mut fw, &mut h, 0, 100_000);
        assert!(fw.aql_ok(0));
        assert!(fw.on_wake(&mut h));
        assert_eq!(fw.queued(0), 10);
        fw.invariants().unwrap();
    }

    #[test]
    fn a_light_station_gets_room_while_a_heavy_one_keeps_the_firmware_full() {
        // The wake path hands freed room to mac80211's head station, which moves on at every
        // wake: a station with one frame now and then is served within a round of wakes
        // although another station could fill every free descriptor.
        let mut h = Host::new(2);
        let mut fw = Firmware::new(2, 64, None);
        let mut light_sent = 0;
        for round in 0..200u32 {
            h.put(0, 64);
            fw.on_wake(&mut h);
            if round % 3 == 0 {
                h.put(1, 1);
                fw.on_wake(&mut h);
            }
            // The firmware serves the stations holding frames in turn.
            while let Some(s) = fw.next_station(&mut h) {
                let n = transmit(&mut fw, &mut h, s, 100_000);
                if s == 1 {
                    light_sent += n;
                }
                fw.on_tx_status(&mut h);
                if s == 0 {
                    break;
                }
            }
        }
        assert!(light_sent >= 66, "light station sent {light_sent} of 67");
        fw.invariants().unwrap();
    }
}
