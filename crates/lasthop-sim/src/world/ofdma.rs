//! The AP's downlink OFDMA (`[mac.ofdma]`; IEEE 802.11ax-2021 §26.5.1): at a channel access
//! of its data EDCA function the AP picks the users of a DL MU PPDU (`lasthop_wifi::mac::mu`:
//! from its driver's service order, or ns-3's round-robin credits), gives each an RU, a rate
//! and an A-MPDU built as any other from its queues, times the HE MU PPDU
//! (`phy::he_mu_ppdu_duration`: every user padded to the longest) and, once it ends, the
//! acknowledgment (`mu::response_end`). The users then finish as any PPDU's do
//! (`frame_exchange.rs`), each charged its RU's share of the exchange's airtime.

use super::*;
use crate::spec::{MuAck as AckName, MuScheduler, OfdmaSpec};
use lasthop_wifi::mac::mu::{self, AckTiming, MuAck, RrCredits};
use lasthop_wifi::phy::RuSize;

/// When a DL MU PPDU's user receives its subframes: the PPDU's start and its common preamble
/// (HE-SIG-B included), after which the user's data symbols run on its RU.
#[derive(Clone, Copy, Debug)]
pub(super) struct MuClock {
    pub start: Instant,
    pub pre_ns: u32,
}

/// Counters for the result's `ofdma` section.
#[derive(Default, Clone, Debug)]
pub struct OfdmaStats {
    /// DL MU PPDUs sent, and single-user PPDUs the AP sent while OFDMA was on.
    pub mu_ppdus: u64,
    pub su_ppdus: u64,
    /// Users over all DL MU PPDUs.
    pub users: u64,
    /// User allocations by RU size (`RuSize::ALL` order).
    pub ru_hist: [u64; 7],
    /// DL MU PPDUs whose acknowledgment came back from at least one user.
    pub acked_ppdus: u64,
    /// Time of the DL MU exchanges (PPDU and acknowledgment), ns.
    pub mu_exchange_ns: u64,
}

/// The AP's DL MU state.
pub(super) struct DlMu {
    scheduler: MuScheduler,
    max_users: usize,
    ack: MuAck,
    width: u16,
    credits: Option<RrCredits>,
    cand: Vec<u32>,
    rus: Vec<RuSize>,
    lens: Vec<(TxVector, u32)>,
    pub stats: OfdmaStats,
}

/// ns-3's `MaxCredits` default (RrMultiUserScheduler): at most one second's worth.
const MAX_CREDITS: Duration = Duration::from_secs(1);

impl DlMu {
    /// The AP's DL OFDMA for `o` in a `width` MHz cell of `n_sta` stations; None when off.
    pub(super) fn new(o: &OfdmaSpec, width: u16, n_sta: u32) -> Option<Box<DlMu>> {
        if !o.dl {
            return None;
        }
        let credits = (o.scheduler == MuScheduler::RoundRobin).then(|| RrCredits::new(n_sta, MAX_CREDITS));
        let ack = match o.ack {
            AckName::MuBar => MuAck::MuBar,
            AckName::BarBa => MuAck::BarBa,
        };
        Some(Box::new(DlMu {
            scheduler: o.scheduler,
            max_users: o.max_users as usize,
            ack,
            width,
            credits,
            cand: Vec::new(),
            rus: Vec::new(),
            lens: Vec::new(),
            stats: OfdmaStats::default(),
        }))
    }
}

impl World {
    /// The AP's DL MU PPDU at this channel access of `ctd`, or None when it sends a
    /// single-user PPDU (one candidate under `scheduler = "txq"`, or OFDMA off).
    pub(super) fn build_dl_mu(&mut self, ctd: Ctd, now: Instant) -> Option<Tx> {
        let mut mu = self.ofdma.take()?;
        let tx = self.dl_mu_users(&mut mu, ctd, now);
        if tx.is_none() {
            mu.stats.su_ppdus += 1;
        }
        self.ofdma = Some(mu);
        tx
    }

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
    fn dl_mu_plan(&mut self, mu: &mut DlMu, k: usize, now: Instant) -> bool {
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

    fn dl_mu_users(&mut self, mu: &mut DlMu, ctd: Ctd, now: Instant) -> Option<Tx> {
        let k = self.ctd_slot(ctd);
        if !self.dl_mu_plan(mu, k, now) {
            return None;
        }
        // Each user's rate from its rate control, on its RU (1024-QAM only on RUs of 242
        // tones or more, IEEE 802.11ax-2021 §27.5).
        let mut users = self.scratch.tx_pool.pop().unwrap_or_default();
        let mut spare: Vec<Vec<(u32, PktRef, bool)>> = users.drain(..).map(|u| u.mpdus).collect();
        let mut max_nss = 1;
        let mut max_ns = Vec::with_capacity(mu.cand.len());
        for (i, &sta) in mu.cand.iter().enumerate() {
            let s = &mut self.stations[sta as usize];
            let snr = s.snr.at(now);
            let rc = &mut s.rc[Dir::Down as usize];
            rc.set_snr_db(snr);
            let rate = rc.select(now);
            let mut txv = rate;
            if mu.rus[i] < RuSize::Tones242 {
                txv.mcs = txv.mcs.min(9);
            }
            let txv = txv.with_ru(mu.rus[i]);
            max_nss = max_nss.max(txv.nss);
            let max_n = if rc.last_was_sample() { 1 } else { self.air.max_mpdus as usize };
            let mpdus = spare.pop().unwrap_or_default();
            max_ns.push(max_n);
            users.push(PpduUser { sta, dir: Dir::Down, ac: k as u8, txv, rate, snr, mpdus, acked: false, mu: None });
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
            let psdu = self.build_ampdu(sta, Dir::Down, k, now, max_n, max_psdu, &mut mpdus);
            if mpdus.is_empty() {
                // Nothing to send after all (its queue's discipline dropped what it held).
                let more = self.stations[sta as usize].ac[k].orig(Dir::Down).has_retx();
                self.with_driver(k, now, |d, mac| d.end_turn(mac, sta, more));
                spare.push(mpdus);
                continue;
            }
            self.note_ampdu(sta, Dir::Down, mpdus.len(), &txv, now);
            self.totals.mpdu_attempts += mpdus.len() as u64;
            mu.lens.push((txv, psdu + bar));
            users[i].mpdus = mpdus;
            users.swap(kept, i);
            kept += 1;
        }
        users.truncate(kept);
        if users.is_empty() {
            self.scratch.tx_pool.push(users);
            return None;
        }
        // The PPDU as sent: HE-SIG-B for the users that have frames.
        let max_nss = users.iter().map(|u| u.txv.nss).max().unwrap_or(1);
        let pre_ns = phy::he_mu_preamble_ns(mu.width, gi, max_nss, users.len() as u32, phy::sigb_mcs_for(&mu.lens)) as u32;
        let d = phy::he_mu_ppdu_duration(&mu.lens, self.air.band);
        let clock = MuClock { start: now, pre_ns };
        for u in users.iter_mut() {
            u.mu = Some(clock);
            mu.stats.ru_hist[RuSize::ALL.iter().position(|&r| Some(r) == u.txv.ru).unwrap_or(0)] += 1;
        }
        mu.stats.mu_ppdus += 1;
        mu.stats.users += users.len() as u64;
        if let Some(c) = mu.credits.as_mut() {
            let served: Vec<(u32, RuSize)> = users.iter().map(|u| (u.sta, u.txv.ru.expect("an RU"))).collect();
            c.on_dl_mu(d, &served);
        }
        Some(Tx { contender: ctd.id, kind: TxKind::Data, users, ppdu_end: now + d })
    }

    /// The recipients of DL MU PPDU `tx` (no collision): each user's MPDUs and Block Ack as
    /// `receive_user` decides them, then the acknowledgment's end (None when nobody answers).
    pub(super) fn receive_mu(&mut self, tx: &mut Tx) -> Option<Instant> {
        let mut responders = 0;
        for u in tx.users.iter_mut() {
            if self.receive_user(u, tx.ppdu_end).is_some() {
                responders += 1;
            }
            self.ext_announce(u, tx.ppdu_end);
        }
        let txvs: Vec<TxVector> = tx.users.iter().map(|u| u.txv).collect();
        let mu = self.ofdma.as_deref_mut().expect("DL OFDMA on");
        let t = AckTiming { sifs: self.air.timing.sifs, band: self.air.band, control_rate: self.air.control_rate, ba_len: self.air.response_len };
        let end = mu::response_end(mu.ack, &t, tx.ppdu_end, &txvs, responders);
        if responders > 0 {
            mu.stats.acked_ppdus += 1;
        }
        let start = tx.users[0].mu.expect("a DL MU user").start;
        mu.stats.mu_exchange_ns += (end.unwrap_or(tx.ppdu_end) - start).as_nanos();
        end
    }
}

impl World {
    /// The DL OFDMA counters, when OFDMA is on.
    pub fn ofdma_stats(&self) -> Option<&OfdmaStats> {
        self.ofdma.as_deref().map(|m| &m.stats)
    }
}

/// User `u`'s share of `airtime`: all of it for a single-user PPDU; in a DL MU PPDU its RU's
/// tones over all the users' (`tones`).
pub(super) fn user_airtime(airtime: Duration, u: &PpduUser, tones: u64) -> Duration {
    match (u.mu, u.txv.ru) {
        (Some(_), Some(ru)) if tones > 0 => Duration(airtime.0 * ru.tones() as u64 / tones),
        _ => airtime,
    }
}

/// The tones of a PPDU's users' RUs (0 for a single-user PPDU).
pub(super) fn users_tones(users: &[PpduUser]) -> u64 {
    users.iter().filter(|u| u.mu.is_some()).filter_map(|u| u.txv.ru).map(|r| r.tones() as u64).sum()
}
