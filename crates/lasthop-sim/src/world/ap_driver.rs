//! The AP's driver at transmit time: the frames an aggregate takes through it (`ap_take`, from
//! mac80211's queues, where the AQM decides drops, or from the firmware's), the hardware's
//! transmit status, and `ApHost`, mac80211's interface as the driver sees it
//! (`lasthop_wifi::mac::driver::Mac80211`).

use super::*;

impl World {
    /// The AP's next frame for station `sta` in slot `k`, if it `fits`, through its driver:
    /// from mac80211's queues (the AQM decides there what it drops) or from the firmware's;
    /// marked CE at the air if that is on.
    pub(super) fn ap_take(&mut self, sta: u32, k: usize, now: Instant, fits: &dyn Fn(u32) -> bool) -> Take<PktRef> {
        match self.with_driver(k, now, |d, mac| d.take(mac, sta, |p: &PktRef| fits(p.len))).expect("the AP's driver") {
            Take::Got(p) => Take::Got(self.air_mark(p, now)),
            other => other,
        }
    }

    /// Run one action of the AP's driver on mac80211's queues of access category slot `k`;
    /// `None` while the driver is already acting.
    #[inline]
    pub(super) fn with_driver<R>(&mut self, k: usize, now: Instant, act: impl FnOnce(&mut AnyDriver<PktRef>, &mut ApHost<'_>) -> R) -> Option<R> {
        let mut d = self.driver.take()?;
        let r = act(&mut d, &mut ApHost { w: self, k, now, rate: None });
        self.driver = Some(d);
        if !self.scratch.sat_owed.is_empty() {
            self.refill_owed(now);
        }
        Some(r)
    }

    /// The next frame of `sta`'s AP queue in slot `k`; packets its discipline drops on the way
    /// are accounted as queue drops, and a saturated source is owed one for each of its own
    /// (refilled when the driver is done, `with_driver`).
    pub(super) fn ap_pull(&mut self, sta: u32, k: usize, now: Instant) -> Option<PktRef> {
        let p = {
            let World { txqs, scratch, .. } = self;
            txqs[k].tx_dequeue(now, sta, |d| scratch.dup.push(d))
        };
        if !self.scratch.dup.is_empty() {
            for i in 0..self.scratch.dup.len() {
                let f = self.scratch.dup[i].flow;
                if self.feeds(f, None) {
                    self.scratch.sat_owed.push(f);
                }
            }
            self.drop_scratch();
        }
        if let Some(p) = p {
            self.ecn_left_queue(p);
        }
        p
    }

    /// The hardware reported the end of an exchange (the driver's `on_tx_status`): if that
    /// moved frames below mac80211, the AP contends.
    pub(super) fn ap_tx_status(&mut self, now: Instant) {
        // One AC with the firmware model (spec rules); a pull driver does nothing here.
        let k = self.ac_plan.main as usize;
        if self.with_driver(k, now, |d, mac| d.on_tx_status(mac)) == Some(true) {
            self.make_ready(self.ap_data[k], now);
        }
    }
}

/// mac80211's queues of access category slot `k`, as the AP's driver calls them
/// (`lasthop_wifi::mac::driver::Mac80211`).
pub(super) struct ApHost<'a> {
    w: &'a mut World,
    k: usize,
    now: Instant,
    /// The station whose rate the airtime estimates use, and that rate (read once per station
    /// turn).
    rate: Option<(u32, u64)>,
}

impl Mac80211<PktRef> for ApHost<'_> {
    #[inline]
    fn next_txq<F: Fn(u32) -> bool>(&mut self, eligible: F) -> Option<u32> {
        self.w.txqs[self.k].next_txq_where(eligible)
    }

    #[inline]
    fn tx_dequeue(&mut self, sta: u32) -> Option<PktRef> {
        self.w.ap_pull(sta, self.k, self.now)
    }

    #[inline]
    fn stash(&mut self, sta: u32, p: PktRef) {
        self.w.txqs[self.k].stash(sta, p);
    }

    #[inline]
    fn dequeued(&mut self, sta: u32) {
        // A saturated source puts a fresh packet behind the one that left.
        let w = &mut *self.w;
        let sat = w.sat_down[w.sat_idx(self.k, sta)];
        w.refill(sat, self.now);
    }

    fn charge_airtime(&mut self, sta: u32, p: &PktRef) -> u32 {
        let w = &mut *self.w;
        let rate = match self.rate {
            Some((s, r)) if s == sta => r,
            _ => {
                let r = w.stations[sta as usize].rc[0].current().data_rate_bps().max(1);
                self.rate = Some((sta, r));
                r
            }
        };
        // mac80211's estimate at the station's current rate (payload bits over the PHY rate;
        // per-aggregate overheads are not charged).
        let bits = (frame::mpdu_len(p.len, w.air.qos) as u64 + 4) * 8;
        let est = match w.airtime_est {
            (b, r, e) if b == bits && r == rate => e,
            _ => {
                let e = (bits * 1_000_000_000 / rate).min(u32::MAX as u64) as u32;
                w.airtime_est = (bits, rate, e);
                e
            }
        };
        w.pkts[p.id as usize].aql = est;
        est
    }

    #[inline]
    fn return_txq(&mut self, sta: u32, more: bool) {
        self.w.txqs[self.k].return_txq(sta, more);
        self.rate = None;
    }

    #[inline]
    fn has_active(&self) -> bool {
        self.w.txqs[self.k].has_active()
    }

    fn queued(&self, sta: u32) -> bool {
        self.w.txqs[self.k].len(sta) > 0
    }

    fn active_stations(&self) -> usize {
        self.w.txqs[self.k].active_len()
    }

    fn schedule_start(&mut self) {
        self.w.txqs[self.k].schedule_start();
    }

    fn schedule_end(&mut self) {
        self.w.txqs[self.k].schedule_end();
    }
}
