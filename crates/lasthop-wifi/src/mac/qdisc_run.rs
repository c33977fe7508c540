//! The host's transmit path as a queue discipline sees it: one packet at a time, each taking the
//! CPU a while. Linux runs a qdisc with `__qdisc_run` (net/sched/sch_generic.c, Linux 3.x),
//! which loops over `qdisc_restart`: dequeue one packet, hand it to the driver
//! (`sch_direct_xmit` → `dev_hard_start_xmit`; for a WiFi interface mac80211's
//! `ieee80211_subif_start_xmit` and the driver's transmit op, the pre-4.10 ath9k's
//! `ath_tx_start` into its per-TID queues), and only then dequeue the next — until the driver
//! stops the queue (ath9k: `ieee80211_stop_queue` once `ATH_MAX_QDEPTH` frames are pending) or
//! the loop's quota is spent. So the frames of a burst leave the qdisc a transmit-path time
//! apart, not at one instant: the k-th dequeue of a burst that starts at `now` happens at
//! `t_k = max(now, t_{k−1} + cost)`.
//!
//! [`QdiscRun`] keeps that clock for one queue set (the AP's set of one access category, a
//! relay's set): the instant a dequeue asked for at `now` happens, handed to the discipline as
//! its `now` — what its dequeue timestamps read (PIE's departure-rate cycles, CoDel's sojourn
//! times) — and nothing else: the frame is in the driver's hands at once either way (see
//! `TxqSet::set_dequeue_cost`). A `cost` of zero gives `now` itself.

use lasthop_core::{Duration, Instant};

/// The host's dequeue clock (see the module documentation).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct QdiscRun {
    /// The host's transmit-path time per packet.
    cost: Duration,
    /// The instant of the last dequeue that returned a packet.
    last: Option<Instant>,
}

impl QdiscRun {
    pub fn new(cost: Duration) -> Self {
        QdiscRun { cost, last: None }
    }

    /// The transmit-path time per packet.
    pub fn cost(&self) -> Duration {
        self.cost
    }

    /// The instant a dequeue asked for at `now` happens: `now`, or once the packet before it
    /// has gone through the transmit path, whichever is later.
    #[inline]
    pub fn dequeue_at(&self, now: Instant) -> Instant {
        match self.last {
            Some(t) if !self.cost.is_zero() => now.max(t + self.cost),
            _ => now,
        }
    }

    /// A dequeue at `t` (from [`QdiscRun::dequeue_at`]) returned a packet: the next one waits
    /// for its transmit path. (A dequeue that finds nothing ends the loop and costs nothing.)
    #[inline]
    pub fn on_dequeue(&mut self, t: Instant) {
        if !self.cost.is_zero() {
            self.last = Some(t);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A burst asked for at one instant is spread `cost` apart; a later request after the host
    /// went idle starts at its own instant; an empty dequeue does not move the clock.
    #[test]
    fn a_burst_is_spread_over_the_transmit_path() {
        let us = Duration::from_micros;
        let mut run = QdiscRun::new(us(2));
        let now = Instant::ZERO + us(100);
        let mut got = Vec::new();
        for _ in 0..4 {
            let t = run.dequeue_at(now);
            run.on_dequeue(t);
            got.push(t);
        }
        assert_eq!(got, [now, now + us(2), now + us(4), now + us(6)]);
        // Asked again 1 µs later: still behind the burst.
        assert_eq!(run.dequeue_at(now + us(1)), now + us(8));
        // An empty dequeue (no `on_dequeue`) leaves the clock where it was.
        assert_eq!(run.dequeue_at(now + us(1)), now + us(8));
        // Idle since: the next burst starts when it is asked for.
        assert_eq!(run.dequeue_at(now + us(50)), now + us(50));
    }

    /// Without a cost every dequeue happens when it is asked for.
    #[test]
    fn zero_cost_is_now() {
        let mut run = QdiscRun::default();
        let now = Instant::ZERO + Duration::from_micros(5);
        for _ in 0..3 {
            let t = run.dequeue_at(now);
            assert_eq!(t, now);
            run.on_dequeue(t);
        }
        assert_eq!(run.dequeue_at(Instant::ZERO), Instant::ZERO);
    }
}
