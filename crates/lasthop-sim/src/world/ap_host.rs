//! The AP's side of its queues as a packet enters them: into mac80211's station queue of its
//! first hop (`ap_enqueue`), the driver woken (`wake_tx_queue`), and the packets a queue drops on
//! the way in (or out) accounted.

use super::*;

impl World {
    /// A packet for station `dest` enters the AP's queue of its first hop.
    pub(super) fn ap_enqueue(&mut self, dest: u32, p: PktRef, now: Instant) {
        if self.air_ce_threshold.is_some() {
            let i = p.id as usize;
            if i >= self.at_ap.len() {
                self.at_ap.resize(i + 1, Instant::ZERO);
            }
            self.at_ap[i] = now;
        }
        let sta = self.next_hop(0, dest);
        let k = self.slot_of(p);
        // `scratch.dup` is empty here (whoever takes it drains what nested calls add).
        let kept = {
            let World { txqs, scratch, .. } = self;
            txqs[k].enqueue(now, sta, p, |d| scratch.dup.push(d))
        };
        if !self.scratch.dup.is_empty() {
            let emptied = self.ap_pulls && self.txqs[k].emptied().next().is_some();
            self.drop_scratch();
            if emptied {
                self.unschedule_emptied(k);
            }
        }
        if kept && self.ack_filter != ack_filter::AckFilter::Off {
            self.filter_acks(k, sta, p);
        }
        if kept {
            self.formation_enqueued(sta, Dir::Down, k);
            // mac80211 wakes the driver; a pull driver has the AP contend for its queues
            // (also while it is taking frames for an aggregate).
            let contend = self.with_driver(k, now, |d, mac| d.on_wake(mac)).unwrap_or(self.ap_pulls);
            if contend {
                self.make_ready(self.ap_data[k], now);
            }
        }
    }

    /// Stations (of any AC) whose queue the last enqueue into slot `k` emptied by dropping
    /// from the fattest flows of the shared flow queue leave the service list when nothing
    /// else waits for them (no retransmission), and an AC left with no station stops
    /// contending: mac80211's next turn would find nothing there, and the driver would have
    /// handed the hardware nothing to send.
    pub(super) fn unschedule_emptied(&mut self, k: usize) {
        let mut gone = std::mem::take(&mut self.scratch.emptied);
        gone.clear();
        gone.extend(self.txqs[k].emptied());
        for &(j, s) in &gone {
            if self.txqs[j].len(s) == 0 && !self.stations[s as usize].ac[j].orig(Dir::Down).has_retx() {
                self.txqs[j].return_txq(s, false);
                if !self.txqs[j].has_active() {
                    self.set_not_ready(self.ap_data[j]);
                }
            }
        }
        self.scratch.emptied = gone;
    }

    /// The packets an AP queue just dropped (in `scratch.dup`), accounted as queue drops.
    #[cold]
    pub(super) fn drop_scratch(&mut self) {
        let mut drops = std::mem::take(&mut self.scratch.dup);
        for d in drops.drain(..) {
            self.drop_pkt(d, DropWhy::Queue);
        }
        self.scratch.dup = drops;
    }
}
