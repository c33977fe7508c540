//! The AP's uplink OFDMA (IEEE 802.11ax-2021 §26.5.2): a Basic Trigger frame (§9.3.1.22, at
//! the control rate) asks the stations that reported queued frames for HE TB PPDUs, SIFS
//! later, each on its RU and all of the length the trigger's UL Length gives — the longest
//! reported backlog's time on its RU, at most the AP's PPDU limit, as ns-3's
//! RrMultiUserScheduler sizes it (`TrySendingBasicTf`) — and a Multi-STA BlockAck answers them
//! SIFS after. When the AP has nothing at all to send, a BSRP Trigger frame asks stations for
//! their buffer status (QoS Null frames in HE TB PPDUs). A triggered station then contends
//! with the MU EDCA parameters until its MU EDCA timer expires (§26.2.7).
//!
//! What the AP knows of a station's queue is what the station last told it (the Queue Size of
//! its QoS Data frames, or its BSRP answer); a station that has emptied its queue since is not
//! triggered (the model does not spend a trigger on a QoS Null answer, which only a station's
//! own queue discipline dropping its frames could cause). The UL MCS each user is given is the
//! one its own rate control would pick (an AP bases it on what it receives from that station).

use super::*;
use lasthop_wifi::mac::mu;

impl World {
    /// Candidates for an uplink round in slot `k`: stations that reported queued frames and
    /// still hold some, in the scheduler's order, at most `mu.max_users`, into `mu.cand`.
    fn ul_candidates(&mut self, mu: &mut Ofdma, k: usize) {
        let (n, base, max) = (mu.n, k * mu.n, mu.max_users);
        let mut cand = std::mem::take(&mut mu.cand);
        cand.clear();
        // A station sending its own PPDU at this instant does not hear the trigger.
        let eligible = |w: &World, s: u32| {
            let st = &w.stations[s as usize];
            mu.reported[base + s as usize] > 0 && st.parent.is_none() && st.ac[k].ctd.is_some() && !st.ac[k].up_idle()
                && !w.scratch.transmitting.contains(&(s + 1))
        };
        match mu.ul_credits.as_ref() {
            Some(c) => c.candidates(max, |s| eligible(self, s), &mut cand),
            None => {
                for i in 0..n as u32 {
                    let s = (mu.ul_cursor + i) % n as u32;
                    if cand.len() < max && eligible(self, s) {
                        cand.push(s);
                    }
                }
                if let Some(&last) = cand.last() {
                    mu.ul_cursor = (last + 1) % n as u32;
                }
            }
        }
        mu.cand = cand;
    }

    /// The RUs of `mu.cand` (same order, `mu.rus`): ns-3's equal RUs, or the RU tree halved
    /// once per user with the larger RUs to the larger reported backlogs.
    fn ul_rus(&mut self, mu: &mut Ofdma, k: usize) {
        if mu.ul_credits.is_some() {
            let (ru, n) = mu::equal_rus(mu.width, mu.cand.len());
            mu.cand.truncate(n);
            mu.rus.clear();
            mu.rus.resize(n, ru);
        } else {
            mu::split_rus(mu.width, mu.cand.len(), &mut mu.rus);
            let (rep, base) = (&mu.reported, k * mu.n);
            mu.cand.sort_by_key(|&s| std::cmp::Reverse(rep[base + s as usize]));
            mu.cand.truncate(mu.rus.len());
        }
    }

    /// A Basic Trigger frame and the HE TB PPDUs it solicits, or None when no station
    /// reported queued frames.
    pub(super) fn build_ul_mu(&mut self, mu: &mut Ofdma, ctd: Ctd, k: usize, now: Instant) -> Option<Tx> {
        self.ul_candidates(mu, k);
        if mu.cand.is_empty() {
            return None;
        }
        self.ul_rus(mu, k);
        let band = self.air.band;
        let mut users = self.scratch.tx_pool.pop().unwrap_or_default();
        let mut spare: Vec<Vec<(u32, PktRef, bool)>> = users.drain(..).map(|u| u.mpdus).collect();
        let mut max_ns = Vec::with_capacity(mu.cand.len());
        for i in 0..mu.cand.len() {
            let (u, max_n) = self.user_on_ru(mu.cand[i], Dir::Up, k, mu.rus[i], now, spare.pop().unwrap_or_default());
            users.push(u);
            max_ns.push(max_n);
        }
        let max_nss = users.iter().map(|u| u.txv.nss).max().unwrap_or(1);
        // The TB PPDU's length: the longest reported backlog's time on its user's RU, within
        // the AP's PPDU limit, and at least one full-size MPDU for every user that fits one.
        let tb_max = mu::tb_time_within(self.air.max_ppdu[k][0], band);
        let base = k * mu.n;
        let buffer = users.iter().map(|u| mu.reported[base + u.sta as usize]).max().unwrap_or(0).min(u32::MAX as u64) as u32;
        let one = frame::mpdu_len(1500, self.air.qos) + frame::MPDU_DELIMITER;
        let need = |u: &PpduUser| phy::he_tb_ppdu_duration(&[(u.txv, buffer.max(one))], band);
        let tb = users.iter().map(need).max().unwrap_or_default().min(tb_max);
        users.retain(|u| mu::tb_capacity(&u.txv, tb, max_nss, band) >= one.min(self.stations[u.sta as usize].psdu_cap));
        let pre_ns = phy::he_tb_preamble_ns(self.spec.phy.guard_interval, max_nss) as u32;
        let trigger = phy::legacy_duration(self.air.control_rate, mu::basic_trigger_len(users.len() as u32), band);
        let tb_start = now + trigger + self.air.timing.sifs;
        let mut kept = 0;
        for i in 0..users.len() {
            let (sta, txv) = (users[i].sta, users[i].txv);
            let cap = mu::tb_capacity(&txv, tb, max_nss, band).min(self.stations[sta as usize].psdu_cap);
            let mut mpdus = std::mem::take(&mut users[i].mpdus);
            mpdus.clear();
            let max_n = max_ns[mu.cand.iter().position(|&s| s == sta).expect("a candidate")];
            self.build_ampdu_any(sta, Dir::Up, k, now, max_n, cap, &mut mpdus);
            // Its QoS Data frames tell the AP what is left.
            self.ofdma_report_in(mu, sta, k);
            if mpdus.is_empty() {
                continue;
            }
            users[i].mu = Some(MuClock { start: tb_start, pre_ns });
            self.keep_user(&mut users, i, &mut kept, mpdus, now);
        }
        let users = self.kept_users(users, kept)?;
        let ppdu_end = tb_start + tb;
        for u in &users {
            mu.stats.ul_ru_hist[ru_index(u.txv.ru)] += 1;
        }
        mu.stats.triggers += 1;
        mu.stats.ul_users += users.len() as u64;
        charge_credits(mu.ul_credits.as_mut(), tb, &users);
        self.mu_edca_start(mu, &users, k, ppdu_end);
        Some(Tx { contender: ctd.id, kind: TxKind::Data, users, ppdu_end, rts: None })
    }

    /// The Multi-STA BlockAck after HE TB PPDUs `tx`, `responders` of whose users' frames
    /// arrived (None when none did).
    pub(super) fn ul_mu_response(&mut self, tx: &Tx, responders: usize) -> Option<Instant> {
        let bitmap = if self.air.response_len > frame::BLOCK_ACK_64 { 32 } else { 8 };
        let ba = phy::legacy_duration(self.air.control_rate, mu::multi_sta_ba_len(responders as u32, bitmap), self.air.band);
        let end = (responders > 0).then(|| tx.ppdu_end + self.air.timing.sifs + ba);
        let mu = self.ofdma.as_deref_mut().expect("OFDMA on");
        mu.stats.tb_ppdus += tx.users.len() as u64;
        mu.stats.tb_acked += tx.users.iter().filter(|u| u.acked).count() as u64;
        end
    }

    /// Whether a BSRP Trigger frame would learn anything: some station of slot `k` has not
    /// reported queued frames (a station that did reports again in each QoS Data frame).
    pub(super) fn bsrp_useful(&self, mu: &Ofdma, k: usize) -> bool {
        (0..mu.n).any(|s| self.pollable(mu, s as u32, k))
    }

    fn pollable(&self, mu: &Ofdma, s: u32, k: usize) -> bool {
        let st = &self.stations[s as usize];
        mu.reported[k * mu.n + s as usize] == 0 && st.parent.is_none() && st.ac[k].ctd.is_some()
    }

    /// A BSRP Trigger frame to up to `mu.max_users` stations of slot `k` that have not reported
    /// queued frames (from the round's cursor), whose QoS Null answers in HE TB PPDUs tell the
    /// AP their queues.
    pub(super) fn build_bsrp(&mut self, mu: &mut Ofdma, ctd: Ctd, k: usize, now: Instant) -> Tx {
        let n = mu.n as u32;
        let mut polled = std::mem::take(&mut mu.cand);
        polled.clear();
        for i in 0..n {
            let s = (mu.ul_cursor + i) % n;
            if polled.len() < mu.max_users && self.pollable(mu, s, k) {
                polled.push(s);
            }
        }
        // Every polled station answers on an RU of the RU tree halved once per station (the
        // next poll starts after the last one polled, so all are polled in turn).
        mu::split_rus(mu.width, polled.len(), &mut mu.rus);
        polled.truncate(mu.rus.len());
        if let Some(&last) = polled.last() {
            mu.ul_cursor = (last + 1) % n;
        }
        let band = self.air.band;
        let mut lens = Vec::with_capacity(polled.len());
        for (i, &s) in polled.iter().enumerate() {
            let rate = self.stations[s as usize].rc[Dir::Up as usize].current();
            let mut txv = rate;
            if mu.rus[i] < RuSize::Tones242 {
                txv.mcs = txv.mcs.min(9);
            }
            lens.push((txv.with_ru(mu.rus[i]), mu::QOS_NULL_PSDU));
            self.ofdma_report_in(mu, s, k);
        }
        let trigger = phy::legacy_duration(self.air.control_rate, mu::bsrp_len(polled.len() as u32), band);
        let tb = phy::he_tb_ppdu_duration(&lens, band);
        mu.cand = polled;
        mu.stats.bsrps += 1;
        let end = if lens.is_empty() { now + trigger } else { now + trigger + self.air.timing.sifs + tb };
        Tx { contender: ctd.id, kind: TxKind::Bsrp, users: Vec::new(), ppdu_end: end, rts: None }
    }

    /// `ofdma_report` with the OFDMA state taken out.
    fn ofdma_report_in(&self, mu: &mut Ofdma, sta: u32, k: usize) {
        mu.reported[k * mu.n + sta as usize] = self.station_queued_bytes(sta, k);
    }

    /// The triggered `users` contend with the MU EDCA parameters from `end` until their MU
    /// EDCA timer expires (§26.2.7); a later trigger restarts the timer.
    fn mu_edca_start(&mut self, mu: &mut Ofdma, users: &[PpduUser], k: usize, end: Instant) {
        let Some((params, timer)) = mu.mu_edca else { return };
        for u in users {
            let s = u.sta as usize;
            let c = self.stations[s].ac[k].ctd.expect("a triggered station's EDCAF");
            let e = self.chans[c.ch as usize].medium.edcaf_mut(c.id);
            if mu.mu_edca_saved[s].is_none() {
                mu.mu_edca_saved[s] = Some((e.params, k as u8));
                e.set_params(params);
            }
            mu.mu_edca_until[s] = end + timer;
            self.q.schedule(end + timer, Ev::MuEdcaEnd(u.sta));
        }
    }

    /// Station `sta`'s MU EDCA timer may have expired: back to its EDCA parameters, and the
    /// medium's next access recomputed.
    pub(in crate::world) fn on_mu_edca_end(&mut self, sta: u32) {
        let now = self.q.now();
        let Some(mu) = self.ofdma.as_deref_mut() else { return };
        let s = sta as usize;
        if mu.mu_edca_until[s] > now {
            return;
        }
        let Some((params, k)) = mu.mu_edca_saved[s].take() else { return };
        let c = self.stations[s].ac[k as usize].ctd.expect("a triggered station's EDCAF");
        self.chans[c.ch as usize].medium.edcaf_mut(c.id).set_params(params);
        if self.chans[c.ch as usize].exchange.is_none() {
            self.schedule_next_access(c.ch);
        }
    }
}
