//! Multiple frame exchanges in one EDCA TXOP (IEEE 802.11-2020 §10.23.2.8; §10.22.2.7 in
//! 802.11-2016): an EDCAF whose TXOP limit is not zero keeps the medium after a successful
//! exchange and starts the next one SIFS later — to the same recipient or another — while
//! the rest of its TXOP holds it: the PPDU, SIFS and the response (§10.23.2.9, TXOP limits).
//! Every other EDCAF defers: SIFS is shorter than any AIFS, so none counts a slot in the gap.
//!
//! The deployed drivers do this with the hardware queue's burst time: ath9k's `ath9k_conf_tx`
//! sets the queue's `tqi_burstTime` to mac80211's `txop` (units of 32 µs) and caps each
//! aggregate to fit it (`ath_update_max_aggr_framelen`); the queue then sends the aggregates
//! it holds, for whichever stations, within the burst. An AP's limit is hostapd's
//! `tx_queue_data*_burst` (`ap.txop_limit`), a station's the one its AP advertises
//! (`mac.txop_limit`); Table 9-155's otherwise (AC_VI 4.096 ms, AC_VO 2.080 ms; AC_BE and
//! AC_BK 0: one exchange per TXOP).
//!
//! Here a TXOP starts at a channel access that did not collide (`on_access`); after each
//! exchange whose response came back, with time left and frames still queued for the holder,
//! the next PPDU is built for the remaining time (`on_txop_next`): the AP's driver picks the
//! station as at an access, rate control the rate, and the A-MPDU holds what fits. A PPDU that
//! could not carry one full-size MPDU at its rate ends the TXOP unsent. The TXOP ends at a
//! failed exchange too (the holder invokes backoff with its CW doubled, as after any failure,
//! rather than recover at PIFS); each success within the TXOP returns the EDCAF's CW to CWmin,
//! and its new backoff is drawn once, when its TXOP ends. Not modelled: bursts by relays (mesh nodes) and by cells
//! with OFDMA (an HE AP's MU cascades), which send one exchange per TXOP with their A-MPDUs
//! capped to the limit as before.

use super::*;

impl World {
    /// The TXOP limit of contender `ctd` if it may send more than one exchange per TXOP.
    pub(in crate::world) fn txop_limit(&self, ctd: Ctd) -> Option<Duration> {
        if self.ofdma.is_some() || ctd == self.ap_beacon {
            return None;
        }
        let owner = self.chans[ctd.ch as usize].medium.get(ctd.id).owner;
        if owner > 0 && self.stations[owner as usize - 1].relay.is_some() {
            return None;
        }
        let l = self.air.txop[self.ctd_slot(ctd)][(owner != 0) as usize];
        (!l.is_zero()).then_some(l)
    }

    /// Whether the TXOP on `ch` goes on after the exchange `ex`, which ends at `ex.end`: a lone
    /// data PPDU of its holder whose response came back, with time left for another exchange.
    /// Clears the TXOP otherwise.
    pub(in crate::world) fn txop_goes_on(&mut self, ch: u16, ex: &Exchange) -> bool {
        let chan = &mut self.chans[ch as usize];
        let Some(t) = chan.txop else { return false };
        let goes_on = match ex.txs.as_slice() {
            [tx] => {
                tx.contender == t.holder
                    && tx.kind == TxKind::Data
                    && tx.users.iter().all(|u| u.acked)
                    && ex.end + self.air.timing.sifs * 2 + self.air.response < t.end
            }
            _ => false,
        };
        if !goes_on {
            chan.txop = None;
        }
        goes_on
    }

    /// After the settled exchange that ended at `end`, the holder of the TXOP on `ch` sends
    /// again SIFS later if it has frames; otherwise its TXOP ends there. Returns whether it
    /// goes on.
    pub(in crate::world) fn txop_after_exchange(&mut self, ch: u16, end: Instant) -> bool {
        let holder = self.chans[ch as usize].txop.expect("a TXOP that goes on").holder;
        if self.chans[ch as usize].medium.get(holder).is_ready() {
            self.q.schedule(end + self.air.timing.sifs, Ev::TxopNext(ch));
            return true;
        }
        self.end_txop(ch, end);
        false
    }

    /// The TXOP on `ch` ends with its last exchange at `end`, a success: the medium is idle
    /// from there and the holder's EDCAF invokes backoff from CWmin.
    fn end_txop(&mut self, ch: u16, end: Instant) {
        let chan = &mut self.chans[ch as usize];
        let holder = chan.txop.take().expect("a TXOP in progress").holder;
        chan.medium.set_idle(end);
        chan.medium.edcaf_mut(holder).on_success();
    }

    /// SIFS after an exchange of a TXOP that goes on: its holder's next PPDU, for the time left.
    pub(in crate::world) fn on_txop_next(&mut self, ch: u16) {
        let now = self.q.now();
        let t = self.chans[ch as usize].txop.expect("a TXOP that goes on");
        let ctd = Ctd { ch, id: t.holder };
        let k = self.ctd_slot(ctd);
        let side = (self.chans[ch as usize].medium.get(t.holder).owner != 0) as usize;
        let budget = (t.end - (now + self.air.timing.sifs + self.air.response)).min(self.air.max_ppdu[k][side]);
        let (sta, dir) = self.next_link(ctd, k, now);
        match self.build_su(ctd, sta, dir, k, now, Some(budget)) {
            Some(tx) => self.run_exchange(ch, now, vec![tx]),
            None => {
                // Nothing fits the rest of the TXOP: the link's turn ends unsent.
                if dir == Dir::Down {
                    let more = self.stations[sta as usize].ac[k].orig(dir).has_retx();
                    if self.with_driver(k, now, |d, mac| d.end_turn(mac, sta, more)) == Some(false) {
                        self.set_not_ready(self.ap_data[k]);
                    }
                }
                self.end_txop(ch, now - self.air.timing.sifs);
                self.schedule_next_access(ch);
            }
        }
    }

    /// The largest PSDU for `sta` at `txv` whose PPDU lasts at most `budget`, if that holds one
    /// full-size MPDU (1500-octet MSDU).
    pub(in crate::world) fn burst_psdu(&self, sta: u32, txv: &TxVector, budget: Duration) -> Option<u32> {
        let cap = self.stations[sta as usize].psdu_cap;
        let p = frame::max_psdu_for_time(txv, self.air.band, budget, cap);
        (p >= link::full_size_mpdu(self.air.qos, cap)).then_some(p)
    }
}
