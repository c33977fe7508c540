//! The AP's DL MU PPDUs (IEEE 802.11ax-2021 §26.5.1): the users (`lasthop_wifi::mac::mu`:
//! from its driver's service order, or ns-3's round-robin credits), each with an RU, a rate and
//! an A-MPDU built as any other from its queues, the HE MU PPDU's duration
//! (`phy::he_mu_ppdu_duration`: every user padded to the longest) and, once it ends, the
//! acknowledgment (`mu::response_end`).

use super::*;
use lasthop_wifi::mac::mu::{self, AckTiming};

impl World {
    /// Whether the AP holds frames for `sta` in slot `k`: new ones in its queues or driver, or
    /// MPDUs awaiting retransmission.
    fn ap_holds(&mut self, sta: u32, k: usize, now: Instant) -> bool {
        if self.stations[sta as usize].parent.is_some() {
            return false;
        }
        self.stations[sta as usize].ac[k].orig(Dir::Down).has_retx() || self.with_driver(k, now, |d, mac| d.holds(mac, sta)) == Some(true)
    }

    /// The candidates and their RUs (`mu.cand`, `mu.rus`, same order); false for a
    /// single-user PPDU.
    fn dl_mu_plan(&mut self, mu: &mut Ofdma, k: usize, now: Instant) -> bool {
        let max = mu.max_users;
        let mut cand = std::mem::take(&mut mu.cand);
        match mu.scheduler {
            MuScheduler::Txq => {
                self.with_driver(k, now, |d, mac| d.mu_stations(mac, max, &mut cand));
                if cand.len() < 2 {
                    mu.cand = cand;
                    return false;
                }
                // The RU tree halved once per user; the larger RUs to the larger backlogs
                // (mac80211's queues, as its TXQs report them).
                mu::split_rus(mu.width, cand.len(), &mut mu.rus);
                let txq = &self.txqs[k];
                cand.sort_by_key(|&s| std::cmp::Reverse(txq.backlog(s)));
                cand.truncate(mu.rus.len());
            }
            MuScheduler::RoundRobin => {
                let credits = mu.credits.as_ref().expect("the round-robin credits");
                credits.candidates(max, |s| self.ap_holds(s, k, now), &mut cand);
                if cand.is_empty() {
                    mu.cand = cand;
                    return false;
                }
                let (ru, n) = mu::equal_rus(mu.width, cand.len());
                cand.truncate(n);
                mu.rus.clear();
                mu.rus.resize(cand.len(), ru);
            }
        }
        mu.cand = cand;
        true
    }

    /// A DL MU PPDU of `ctd`, or None when its scheduler picks one user or none.
    pub(super) fn dl_mu_users(&mut self, mu: &mut Ofdma, ctd: Ctd, now: Instant) -> Option<Tx> {
        let k = self.ctd_slot(ctd);
        if !self.dl_mu_plan(mu, k, now) {
            return None;
        }
        // Each user's rate from its rate control, on its RU.
        let mut users = self.scratch.tx_pool.pop().unwrap_or_default();
        let mut spare: Vec<Vec<(u32, PktRef, bool)>> = users.drain(..).map(|u| u.mpdus).collect();
        let mut max_nss = 1;
        let mut max_ns = Vec::with_capacity(mu.cand.len());
        for (i, &sta) in mu.cand.iter().enumerate() {
            let (u, max_n) = self.user_on_ru(sta, Dir::Down, k, mu.rus[i], now, spare.pop().unwrap_or_default());
            max_nss = max_nss.max(u.txv.nss);
            max_ns.push(max_n);
            users.push(u);
        }
        mu.lens.clear();
        mu.lens.extend(users.iter().map(|u| (u.txv, 0)));
        let gi = self.spec.phy.guard_interval;
        let pre_ns = phy::he_mu_preamble_ns(mu.width, gi, max_nss, users.len() as u32, phy::sigb_mcs_for(&mu.lens)) as u32;
        let limit = self.air.max_ppdu[k][0];
        let bar = if mu.ack == MuAck::MuBar { mu::mu_bar_subframe() } else { 0 };
        mu.lens.clear();
        let mut kept = 0;
        for i in 0..users.len() {
            let (sta, txv, max_n) = (users[i].sta, users[i].txv, max_ns[i]);
            // The user's PSDU within the PPDU time limit after the longer MU preamble, room
            // left for the MU-BAR's subframe.
            let extra = (pre_ns as u64).saturating_sub(phy::timing::preamble_ns(&txv));
            let cap = self.stations[sta as usize].psdu_cap;
            let one = frame::mpdu_len(1500, self.air.qos) + frame::MPDU_DELIMITER;
            let max_psdu = frame::max_psdu_for_time(&txv, self.air.band, Duration(limit.0.saturating_sub(extra)), cap).max(one + bar) - bar;
            let mut mpdus = std::mem::take(&mut users[i].mpdus);
            mpdus.clear();
            let psdu = self.build_ampdu_any(sta, Dir::Down, k, now, max_n, max_psdu, &mut mpdus);
            if mpdus.is_empty() {
                // Nothing to send after all (its queue's discipline dropped what it held).
                let more = self.stations[sta as usize].ac[k].orig(Dir::Down).has_retx();
                self.with_driver(k, now, |d, mac| d.end_turn(mac, sta, more));
                spare.push(mpdus);
                continue;
            }
            mu.lens.push((txv, psdu + bar));
            self.keep_user(&mut users, i, &mut kept, mpdus, now);
        }
        let mut users = self.kept_users(users, kept)?;
        // The PPDU as sent: HE-SIG-B for the users that have frames.
        let max_nss = users.iter().map(|u| u.txv.nss).max().unwrap_or(1);
        let pre_ns = phy::he_mu_preamble_ns(mu.width, gi, max_nss, users.len() as u32, phy::sigb_mcs_for(&mu.lens)) as u32;
        let d = phy::he_mu_ppdu_duration(&mu.lens, self.air.band);
        let clock = MuClock { start: now, pre_ns };
        for u in users.iter_mut() {
            u.mu = Some(clock);
            mu.stats.ru_hist[ru_index(u.txv.ru)] += 1;
        }
        mu.stats.mu_ppdus += 1;
        mu.stats.users += users.len() as u64;
        charge_credits(mu.credits.as_mut(), d, &users);
        Some(Tx { contender: ctd.id, kind: TxKind::Data, users, ppdu_end: now + d, rts: None })
    }

    /// The acknowledgment of DL MU PPDU `tx`, `responders` of whose users answer.
    pub(super) fn dl_mu_response(&mut self, tx: &Tx, responders: usize) -> Option<Instant> {
        let txvs: Vec<TxVector> = tx.users.iter().map(|u| u.txv).collect();
        let t = AckTiming { sifs: self.air.timing.sifs, band: self.air.band, control_rate: self.air.control_rate, ba_len: self.air.response_len };
        let mu = self.ofdma.as_deref_mut().expect("OFDMA on");
        let end = mu::response_end(mu.ack, &t, tx.ppdu_end, &txvs, responders);
        if responders > 0 {
            mu.stats.acked_ppdus += 1;
        }
        let start = tx.users[0].mu.expect("a DL MU user").start;
        mu.stats.mu_exchange_ns += (end.unwrap_or(tx.ppdu_end) - start).as_nanos();
        end
    }
}
