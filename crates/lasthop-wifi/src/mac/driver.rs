//! The AP's driver between mac80211's station queues and the air, as the frame exchange pulls
//! from it: which station the hardware serves at a channel access, the frames of its aggregate,
//! the end of its turn, and what the driver does when mac80211 queues a frame or the hardware
//! reports a transmission. Sans-IO: mac80211's side is the host's [`Mac80211`].
//!
//! * [`PullDriver`]: ath9k since Linux 4.10 (`ath_txq_schedule` → `ieee80211_next_txq`,
//!   `ieee80211_tx_dequeue` while it builds the aggregate, `ieee80211_return_txq`): nothing is
//!   held below mac80211, the aggregate is built from its queues at channel access. (The
//!   pre-4.10 ath9k's frames below the qdisc are `TxqSet`'s driver stage, behind the same calls.)
//! * `Firmware` (`firmware.rs`): a firmware-queue driver (ath10k's push path) and its
//!   firmware's per-station queues, gated by the airtime queue limit.
//!
//! A further driver (a multi-user firmware that builds one PPDU for several stations, say) is
//! another implementation of [`ApDriver`] and a variant of `AnyDriver` (`any_driver.rs`), which
//! dispatches to them; the drivers depend on this module, never on each other.

use crate::mac::ampdu::Take;

/// mac80211's side of the driver interface for one access category, as a driver calls it.
pub trait Mac80211<P> {
    /// `ieee80211_next_txq`: the next station (of the open round, if one is open) that
    /// `eligible` accepts, or `None`.
    fn next_txq<F: Fn(u32) -> bool>(&mut self, eligible: F) -> Option<u32>;
    /// `ieee80211_tx_dequeue`: the next frame for `sta` (the host accounts what the queue
    /// discipline drops on the way).
    fn tx_dequeue(&mut self, sta: u32) -> Option<P>;
    /// A frame taken by `tx_dequeue` that the driver could not use now goes back first in line.
    fn stash(&mut self, sta: u32, p: P);
    /// A frame of `sta` has left mac80211's queue for good (a saturated source refills).
    fn dequeued(&mut self, sta: u32);
    /// mac80211's airtime estimate of `p` for `sta` (ns), recorded with the frame so that its
    /// release returns the same amount (AQL, `ieee80211_calc_expected_tx_airtime`).
    fn charge_airtime(&mut self, sta: u32, p: &P) -> u32;
    /// `ieee80211_return_txq`; `more`: `sta` still has frames awaiting retransmission.
    fn return_txq(&mut self, sta: u32, more: bool);
    /// Whether any station has frames for this access category (mac80211's active list).
    fn has_active(&self) -> bool;
    /// Stations on mac80211's active list.
    fn active_stations(&self) -> usize;
    /// Whether mac80211 holds frames for `sta` (its queue or a stashed frame).
    fn queued(&self, sta: u32) -> bool;
    /// `ieee80211_txq_schedule_start` / `_end`: a scheduling round opens or closes.
    fn schedule_start(&mut self);
    fn schedule_end(&mut self);
}

/// An AP driver, as the frame exchange pulls from it (see the module documentation).
pub trait ApDriver<P> {
    /// The station whose frames the hardware sends at this channel access.
    fn next_station<M: Mac80211<P>>(&mut self, mac: &mut M) -> Option<u32>;
    /// The stations the hardware can serve together at this channel access (a DL MU PPDU's
    /// candidates), in its service order, at most `max`, into `out`. Each one's turn ends with
    /// [`ApDriver::end_turn`].
    fn mu_stations<M: Mac80211<P>>(&mut self, mac: &mut M, max: usize, out: &mut Vec<u32>);
    /// Whether new frames for `sta` wait in the driver (or, below a pull driver, in mac80211).
    fn holds<M: Mac80211<P>>(&self, mac: &M, sta: u32) -> bool;
    /// Whether the driver has any station to serve now (a channel access would find one).
    fn has_frames<M: Mac80211<P>>(&self, mac: &M) -> bool;
    /// The next new frame of `sta`'s aggregate if `fits(frame)`; one that does not fit stays
    /// first in line.
    fn take<M: Mac80211<P>>(&mut self, mac: &mut M, sta: u32, fits: impl Fn(&P) -> bool) -> Take<P>;
    /// `sta`'s turn ends (`more`: frames await retransmission). Returns whether the AP still
    /// has something to send.
    fn end_turn<M: Mac80211<P>>(&mut self, mac: &mut M, sta: u32, more: bool) -> bool;
    /// mac80211 queued a frame (`wake_tx_queue`). Returns whether the AP has something to
    /// send because of it.
    fn on_wake<M: Mac80211<P>>(&mut self, mac: &mut M) -> bool;
    /// The hardware reported the end of an exchange. Returns whether the AP has something new
    /// to send because of it.
    fn on_tx_status<M: Mac80211<P>>(&mut self, mac: &mut M) -> bool;
    /// A frame of `sta` the driver was charged `est` ns for is done (acknowledged or dropped).
    fn release(&mut self, sta: u32, est: u64);
    /// Whether aggregates are built straight from mac80211's queues at channel access: then a
    /// frame leaves mac80211's queue when an aggregate takes it (`take` does not report it
    /// through [`Mac80211::dequeued`]; the caller does, for a frame it got), and a station
    /// queue that drops emptied leaves the service list at once (nothing below mac80211 would
    /// send for it).
    fn builds_from_mac80211(&self) -> bool;
}

/// ath9k since Linux 4.10: aggregates built from mac80211's queues at channel access.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PullDriver;

impl<P> ApDriver<P> for PullDriver {
    #[inline]
    fn next_station<M: Mac80211<P>>(&mut self, mac: &mut M) -> Option<u32> {
        mac.next_txq(|_| true)
    }

    /// mac80211's next stations in turn (`ieee80211_next_txq` takes a queue off the schedule
    /// until `ieee80211_return_txq`, so each call gives another one).
    fn mu_stations<M: Mac80211<P>>(&mut self, mac: &mut M, max: usize, out: &mut Vec<u32>) {
        out.clear();
        while out.len() < max {
            let picked = &*out;
            match mac.next_txq(|s| !picked.contains(&s)) {
                Some(s) => out.push(s),
                None => break,
            }
        }
    }

    fn holds<M: Mac80211<P>>(&self, mac: &M, sta: u32) -> bool {
        mac.queued(sta)
    }

    fn has_frames<M: Mac80211<P>>(&self, mac: &M) -> bool {
        mac.has_active()
    }

    #[inline]
    fn take<M: Mac80211<P>>(&mut self, mac: &mut M, sta: u32, fits: impl Fn(&P) -> bool) -> Take<P> {
        // Pull (the AQM decides here what it drops), then check the fit; a frame that does not
        // fit waits at the head of the station's queue.
        let Some(p) = mac.tx_dequeue(sta) else { return Take::Empty };
        if !fits(&p) {
            mac.stash(sta, p);
            return Take::NoFit;
        }
        Take::Got(p)
    }

    #[inline]
    fn end_turn<M: Mac80211<P>>(&mut self, mac: &mut M, sta: u32, more: bool) -> bool {
        mac.return_txq(sta, more);
        mac.has_active()
    }

    #[inline]
    fn on_wake<M: Mac80211<P>>(&mut self, _mac: &mut M) -> bool {
        true
    }

    #[inline]
    fn on_tx_status<M: Mac80211<P>>(&mut self, _mac: &mut M) -> bool {
        false
    }

    #[inline]
    fn release(&mut self, _sta: u32, _est: u64) {}

    fn builds_from_mac80211(&self) -> bool {
        true
    }
}
