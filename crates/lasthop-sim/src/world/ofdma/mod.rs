//! The AP's 802.11ax OFDMA (`[mac.ofdma]`; IEEE 802.11ax-2021 §26.5): the downlink (`dl.rs`:
//! DL MU PPDUs) and the uplink (`ul.rs`: Basic and BSRP Trigger frames, HE TB PPDUs, the
//! Multi-STA BlockAck, MU EDCA), what both share — the schedulers' credits, the buffer status
//! the AP holds for each station, the choice between them at each of the AP's channel accesses
//! — and what a user of a multi-user PPDU is charged.

use super::*;
use crate::spec::{MuAck as AckName, MuScheduler, OfdmaSpec};
use lasthop_wifi::mac::mu::{MuAck, RrCredits};
use lasthop_wifi::phy::RuSize;

mod dl;
mod ul;

/// When a multi-user PPDU's user receives its subframes: the PPDU's start and its preamble
/// (an HE MU PPDU's HE-SIG-B included), after which the user's data symbols run on its RU.
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
    /// DL user allocations by RU size (`RuSize::ALL` order).
    pub ru_hist: [u64; 7],
    /// DL MU PPDUs whose acknowledgment came back from at least one user.
    pub acked_ppdus: u64,
    /// Time of the DL MU exchanges (PPDU and acknowledgment), ns.
    pub mu_exchange_ns: u64,
    /// Basic Trigger frames sent, the users they solicited and their RUs.
    pub triggers: u64,
    pub ul_users: u64,
    pub ul_ru_hist: [u64; 7],
    /// HE TB PPDUs with data (users that had frames) and those acknowledged.
    pub tb_ppdus: u64,
    pub tb_acked: u64,
    /// BSRP Trigger frames sent.
    pub bsrps: u64,
}

/// The AP's OFDMA state.
pub(super) struct Ofdma {
    dl: bool,
    ul: bool,
    scheduler: MuScheduler,
    max_users: usize,
    ack: MuAck,
    width: u16,
    credits: Option<RrCredits>,
    ul_credits: Option<RrCredits>,
    /// Per access category slot and station (`k * n + s`): the octets the station last
    /// reported queued (the Queue Size of its QoS Data frames, IEEE 802.11-2020 §9.2.4.5.6,
    /// or its answer to a BSRP Trigger frame).
    reported: Vec<u64>,
    n: usize,
    /// What the AP's next access does with the uplink on.
    next: Turn,
    /// Where the next uplink round starts (`scheduler = "txq"`).
    ul_cursor: u32,
    /// The MU EDCA parameter set and timer (None: off).
    mu_edca: Option<(lasthop_wifi::mac::edca::EdcaParams, Duration)>,
    /// Per station: when its MU EDCA timer expires, and the parameters (and slot) it returns
    /// to then.
    mu_edca_until: Vec<Instant>,
    mu_edca_saved: Vec<Option<(lasthop_wifi::mac::edca::EdcaParams, u8)>>,
    cand: Vec<u32>,
    rus: Vec<RuSize>,
    lens: Vec<(TxVector, u32)>,
    pub stats: OfdmaStats,
}

/// The AP's accesses with the uplink on take turns, as ns-3's RrMultiUserScheduler's do
/// (`SelectTxFormat`): the downlink, then a BSRP Trigger frame polling the buffer status of
/// the stations that have not reported queued frames (skipped when all have), then a Basic
/// Trigger frame for those that did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Turn {
    Dl,
    Bsrp,
    Basic,
}

/// ns-3's `MaxCredits` default (RrMultiUserScheduler): at most one second's worth.
const MAX_CREDITS: Duration = Duration::from_secs(1);

impl Ofdma {
    /// The AP's OFDMA for `o` in a `width` MHz cell of `n_sta` stations and `slots` access
    /// category slots.
    pub(super) fn new(o: &OfdmaSpec, width: u16, n_sta: u32, slots: usize) -> Box<Ofdma> {
        let rr = o.scheduler == MuScheduler::RoundRobin;
        let ack = match o.ack {
            AckName::MuBar => MuAck::MuBar,
            AckName::BarBa => MuAck::BarBa,
        };
        let mu_edca = (o.ul && o.mu_edca_timer_ns > 0).then(|| {
            let p = lasthop_wifi::mac::edca::EdcaParams { cw_min: o.mu_edca_cw_min, cw_max: o.mu_edca_cw_max, aifsn: o.mu_edca_aifsn };
            (p, Duration(o.mu_edca_timer_ns))
        });
        Box::new(Ofdma {
            dl: o.dl,
            ul: o.ul,
            scheduler: o.scheduler,
            max_users: o.max_users as usize,
            ack,
            width,
            credits: rr.then(|| RrCredits::new(n_sta, MAX_CREDITS)),
            ul_credits: (rr && o.ul).then(|| RrCredits::new(n_sta, MAX_CREDITS)),
            reported: vec![0; if o.ul { slots * n_sta as usize } else { 0 }],
            n: n_sta as usize,
            next: Turn::Dl,
            ul_cursor: 0,
            mu_edca,
            mu_edca_until: vec![Instant::ZERO; if mu_edca.is_some() { n_sta as usize } else { 0 }],
            mu_edca_saved: vec![None; if mu_edca.is_some() { n_sta as usize } else { 0 }],
            cand: Vec::new(),
            rus: Vec::new(),
            lens: Vec::new(),
            stats: OfdmaStats::default(),
        })
    }
}

impl World {
    /// The AP's multi-user exchange at this channel access of its data EDCA function `ctd`, or
    /// None when it sends a single-user PPDU: with the uplink on, the accesses take turns
    /// ([`Turn`]; without frames for the downlink the AP goes on with the uplink's); the
    /// downlink's turn sends a DL MU PPDU when the downlink is on and its scheduler finds users
    /// for one.
    pub(super) fn build_mu(&mut self, ctd: Ctd, now: Instant) -> Option<Tx> {
        let mut mu = self.ofdma.take()?;
        let k = self.ctd_slot(ctd);
        let mut tx = None;
        if mu.ul {
            let dl_frames = self.with_driver(k, now, |d, mac| d.has_frames(mac)) == Some(true);
            let mut turn = if !dl_frames && mu.next == Turn::Dl { Turn::Basic } else { mu.next };
            if turn == Turn::Bsrp && !self.bsrp_useful(&mu, k) {
                turn = Turn::Basic;
            }
            match turn {
                Turn::Dl => mu.next = Turn::Bsrp,
                Turn::Bsrp => {
                    tx = Some(self.build_bsrp(&mut mu, ctd, k, now));
                    mu.next = Turn::Basic;
                }
                Turn::Basic => {
                    tx = self.build_ul_mu(&mut mu, ctd, k, now);
                    mu.next = if tx.is_some() && dl_frames { Turn::Dl } else { Turn::Bsrp };
                    if tx.is_none() && !dl_frames {
                        // Nobody reported queued frames and the downlink has none: poll.
                        tx = Some(self.build_bsrp(&mut mu, ctd, k, now));
                        mu.next = Turn::Basic;
                    }
                }
            }
        }
        if tx.is_none() && mu.dl {
            tx = self.dl_mu_users(&mut mu, ctd, now);
        }
        if tx.is_none() {
            mu.stats.su_ppdus += 1;
        }
        self.ofdma = Some(mu);
        tx
    }

    /// The multi-user PPDU `tx` ended without a collision: its recipients (each user's MPDUs
    /// and Block Ack as `receive_user` decides them), then the end of its acknowledgment (None
    /// when nobody answers).
    pub(super) fn receive_mu(&mut self, tx: &mut Tx) -> Option<Instant> {
        let mut responders = 0;
        for u in tx.users.iter_mut() {
            if self.receive_user(u, tx.ppdu_end).is_some() {
                responders += 1;
            }
            self.ext_announce(u, tx.ppdu_end);
        }
        match tx.users[0].dir {
            Dir::Down => self.dl_mu_response(tx, responders),
            Dir::Up => self.ul_mu_response(tx, responders),
        }
    }

    /// After an exchange, with the uplink on: the AP's data EDCA function of each slot is
    /// ready while a station reported queued frames or its driver has some, and not otherwise.
    pub(super) fn ofdma_after_exchange(&mut self, now: Instant) {
        let Some(mu) = self.ofdma.as_deref() else { return };
        if !mu.ul {
            return;
        }
        let n = mu.n;
        for k in 0..self.ap_data.len() {
            let reported = self.ofdma.as_deref().expect("ofdma").reported[k * n..(k + 1) * n].iter().any(|&r| r > 0);
            let c = self.ap_data[k];
            if reported {
                self.make_ready(c, now);
            } else if self.with_driver(k, now, |d, mac| d.has_frames(mac)) != Some(true) {
                self.set_not_ready(c);
            }
        }
    }

    /// Station `sta`'s QoS Data frames of slot `k` just built tell the AP how much it still
    /// has queued (with the uplink on).
    pub(super) fn ofdma_report(&mut self, sta: u32, k: usize) {
        let Some(mu) = self.ofdma.as_deref() else { return };
        if !mu.ul || self.stations[sta as usize].parent.is_some() {
            return;
        }
        let q = self.station_queued_bytes(sta, k);
        let mu = self.ofdma.as_deref_mut().expect("ofdma");
        mu.reported[k * mu.n + sta as usize] = q;
    }

    /// User `sta` of a multi-user PPDU in `dir` on `ru`: its rate from its rate control (on
    /// the RU; 1024-QAM only on RUs of 242 tones or more, IEEE 802.11ax-2021 §27.5) and the
    /// most MPDUs its A-MPDU may hold (one for a rate-control probe). An uplink user's SNR is its
    /// link's plus its RU's power gain ([`ul_ru_gain_db`]).
    fn user_on_ru(&mut self, sta: u32, dir: Dir, k: usize, ru: RuSize, now: Instant, mpdus: Vec<(u32, PktRef, bool)>) -> (PpduUser, usize) {
        let gain = ul_ru_gain_db(dir, Some(ru), self.spec.phy.channel_width);
        let cap = self.sender_ampdu_limit(sta, dir);
        let s = &mut self.stations[sta as usize];
        let snr = s.snr.at(now) + gain;
        let rc = &mut s.rc[dir as usize];
        rc.set_snr_db(snr);
        let rate = rc.select(now);
        let mut txv = rate;
        if ru < RuSize::Tones242 {
            txv.mcs = txv.mcs.min(9);
        }
        let txv = txv.with_ru(ru);
        let max_n = if rc.last_was_sample() { 1 } else { self.air.max_mpdus.min(cap) as usize };
        (PpduUser { sta, dir, ac: k as u8, txv, rate, snr, mpdus, acked: false, mu: None }, max_n)
    }

    /// User `i` of `users` carries `mpdus`: counted in the run's statistics and moved into the
    /// front part of `users` that is kept (`*kept` users so far).
    fn keep_user(&mut self, users: &mut [PpduUser], i: usize, kept: &mut usize, mpdus: Vec<(u32, PktRef, bool)>, now: Instant) {
        let (sta, dir, txv) = (users[i].sta, users[i].dir, users[i].txv);
        self.note_ampdu(sta, dir, mpdus.len(), &txv, now);
        self.totals.mpdu_attempts += mpdus.len() as u64;
        users[i].mpdus = mpdus;
        users.swap(*kept, i);
        *kept += 1;
    }

    /// The first `kept` of `users`, or None (the list back to the pool) when no user had
    /// frames.
    fn kept_users(&mut self, mut users: Vec<PpduUser>, kept: usize) -> Option<Vec<PpduUser>> {
        users.truncate(kept);
        if users.is_empty() {
            self.scratch.tx_pool.push(users);
            return None;
        }
        Some(users)
    }

    /// Octets station `sta` holds for slot `k`: its queue, its stashed frame and the MPDUs
    /// awaiting retransmission (the Queue Size counts every buffered MSDU of the TID).
    fn station_queued_bytes(&self, sta: u32, k: usize) -> u64 {
        let a = &self.stations[sta as usize].ac[k];
        let retx: u64 = a.up_orig.retx_iter().map(|p| p.len as u64).sum();
        a.queue.len_bytes() + a.stash.map_or(0, |p| p.len as u64) + retx
    }

    /// The OFDMA counters, and whether the uplink is on, when OFDMA is on.
    pub fn ofdma_stats(&self) -> Option<(&OfdmaStats, bool)> {
        self.ofdma.as_deref().map(|m| (&m.stats, m.ul))
    }
}

/// The SNR an uplink user gains on `ru` in a channel of `width` MHz over the full band: a
/// station puts its whole transmit power into its RU's tones in an HE TB PPDU, so each tone
/// carries full-band tones / RU tones times the power against the same noise per tone
/// (26 tones in 20 MHz: 9.7 dB; 52 in 80 MHz: 12.8 dB). The stations send at their full power,
/// the Trigger's UL Target Receive Power at its maximum (IEEE 802.11ax-2021 §9.3.1.22.2: 127,
/// "transmit at maximum power"), as ns-3 sends them (its `HePpdu` spreads an HE TB PPDU's
/// power over the RU alone); power control toward a lower target is not modelled. 0 for a
/// downlink user (the AP spreads its power over the whole band) and for a single-user PPDU.
pub(super) fn ul_ru_gain_db(dir: Dir, ru: Option<RuSize>, width: u16) -> f64 {
    match (dir, ru) {
        (Dir::Up, Some(ru)) => {
            let full = RuSize::full_band(width).tones() as f64;
            (10.0 * (full / ru.tones() as f64).log10()).max(0.0)
        }
        _ => 0.0,
    }
}

/// User `u`'s share of `airtime`: all of it for a single-user PPDU; in a multi-user PPDU its
/// RU's tones over all the users' (`tones`).
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

/// ns-3's credits (if this scheduler keeps them) after `users` held the medium for `d`.
fn charge_credits(credits: Option<&mut RrCredits>, d: Duration, users: &[PpduUser]) {
    if let Some(c) = credits {
        let served: Vec<(u32, RuSize)> = users.iter().map(|u| (u.sta, u.txv.ru.expect("an RU"))).collect();
        c.on_dl_mu(d, &served);
    }
}

/// Index of an RU size in `RuSize::ALL` (the histograms' order).
fn ru_index(ru: Option<RuSize>) -> usize {
    RuSize::ALL.iter().position(|&r| Some(r) == ru).unwrap_or(0)
}
