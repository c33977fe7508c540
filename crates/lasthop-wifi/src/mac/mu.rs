//! 802.11ax downlink multi-user transmission (DL OFDMA; IEEE 802.11ax-2021 §26.5.1, the RUs of
//! §27.3.2.2) as the AP decides it, sans-IO: which stations share a DL MU PPDU, the resource
//! unit (RU) each one rides, and how long the acknowledgment that follows takes.
//!
//! * RU plans. [`equal_rus`] is ns-3 3.37's `RrMultiUserScheduler` rule
//!   (`HeRu::GetEqualSizedRusForStations`): the smallest RU size whose number in the channel
//!   does not exceed the candidates; that many candidates are served, each on an RU of that
//!   size (9 candidates at 80 MHz ride 8 × 106 tones; 3 ride 2 × 484). [`split_rus`] walks the
//!   RU tree of §27.3.2.2 from the full band instead, halving the largest RU until there is
//!   one per user (a 242-tone RU splits into two 106-tone RUs around its centre 26-tone RU,
//!   which stays unused; 106 → 2 × 52; 52 → 2 × 26), so every user gets an RU and the larger
//!   ones go to the users with most queued. The standard leaves the choice to the AP; no
//!   public firmware (mt76's MCU, ath11k's) documents its own, so that is what `split` stands
//!   for: the allocation a scheduler fed by mac80211's queues can make, no more.
//! * [`RrCredits`]: how ns-3's RrMultiUserScheduler orders its stations (`UpdateCredits`):
//!   after a DL MU PPDU of duration T every station gains T/N µs (capped at the maximum), each
//!   served station pays T times its RU's share of the bandwidth used, and the list is sorted
//!   by credits, highest first, keeping the order of equals.
//! * The uplink (§26.5.2): a Basic Trigger frame asks the users for HE TB PPDUs of one length
//!   ([`tb_time_within`], [`tb_capacity`]: what each user's RU carries in it), answered by a
//!   Multi-STA BlockAck; a BSRP Trigger frame asks for QoS Null frames carrying the users'
//!   buffer status ([`bsrp_len`], [`QOS_NULL_PSDU`]).
//! * [`MuAck`] and [`response_end`]: the acknowledgment of a DL MU PPDU (§26.4.4.4 / §26.5.1):
//!   a MU-BAR Trigger frame (§9.3.1.22.4) aggregated in each user's A-MPDU solicits every
//!   user's Block Ack in one HE TB PPDU SIFS after the PPDU; or the first user answers with its
//!   Block Ack SIFS after the PPDU (immediate acknowledgment) and each further user after a
//!   BlockAckReq of its own, each frame SIFS after the last, at the control rate.

use crate::mac::frame;
use crate::phy::{self, Band, RuSize, TxVector};
use lasthop_core::{Duration, Instant};

/// How a DL MU PPDU's Block Acks come back (see the module documentation).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum MuAck {
    /// A MU-BAR Trigger frame in each A-MPDU; the Block Acks together in an HE TB PPDU.
    MuBar,
    /// One Block Ack after SIFS, then a BlockAckReq/BlockAck exchange per further user.
    BarBa,
}

/// How the band is divided among the users of a DL MU PPDU.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum RuPlan {
    /// [`equal_rus`]: ns-3's equal RUs (fewer users than candidates when they do not divide
    /// the channel).
    Equal,
    /// [`split_rus`]: the RU tree halved until every user has one.
    Split,
}

/// ns-3's equal RUs for `candidates` stations in a `width` MHz channel: the RU size and how
/// many stations are served (at least one, on the full band, when there is one candidate).
pub fn equal_rus(width: u16, candidates: usize) -> (RuSize, usize) {
    for ru in RuSize::ALL {
        let c = ru.count(width) as usize;
        if c > 0 && c <= candidates {
            return (ru, c);
        }
    }
    (RuSize::full_band(width), 1)
}

/// The smaller RU a split of `ru` gives two of (None for the 26-tone RU).
fn half(ru: RuSize) -> Option<RuSize> {
    match ru {
        RuSize::Tones26 => None,
        RuSize::Tones52 => Some(RuSize::Tones26),
        RuSize::Tones106 => Some(RuSize::Tones52),
        RuSize::Tones242 => Some(RuSize::Tones106),
        RuSize::Tones484 => Some(RuSize::Tones242),
        RuSize::Tones996 => Some(RuSize::Tones484),
        RuSize::Tones2x996 => Some(RuSize::Tones996),
    }
}

/// The RU tree of a `width` MHz channel halved, largest RU first, until it has `users` RUs (or
/// nothing is left to split): `out` gets the RUs, largest first.
pub fn split_rus(width: u16, users: usize, out: &mut Vec<RuSize>) {
    out.clear();
    out.push(RuSize::full_band(width));
    while out.len() < users.max(1) {
        // The largest RU (the first of its size, so the split is balanced) is halved.
        let (i, &ru) = out.iter().enumerate().max_by(|a, b| a.1.cmp(b.1).then(b.0.cmp(&a.0))).expect("an RU");
        let Some(h) = half(ru) else { break };
        out[i] = h;
        out.insert(i + 1, h);
    }
    out.sort_by(|a, b| b.cmp(a));
}

/// An RU's bandwidth in MHz as ns-3's credits count it (`HeRu::GetBandwidth`: 2, 4, 8, 20, 40,
/// 80, 160).
pub fn ru_bandwidth_mhz(ru: RuSize) -> f64 {
    match ru {
        RuSize::Tones26 => 2.0,
        RuSize::Tones52 => 4.0,
        RuSize::Tones106 => 8.0,
        RuSize::Tones242 => 20.0,
        RuSize::Tones484 => 40.0,
        RuSize::Tones996 => 80.0,
        RuSize::Tones2x996 => 160.0,
    }
}

/// ns-3's RrMultiUserScheduler station order (see the module documentation).
#[derive(Clone, Debug)]
pub struct RrCredits {
    /// Stations, highest credits first.
    order: Vec<u32>,
    /// Credits by station, in µs.
    credits: Vec<f64>,
    max_credits_us: f64,
}

impl RrCredits {
    /// Stations `0..n` in association order, no credits yet; `max_credits` caps them
    /// (ns-3's `MaxCredits`).
    pub fn new(n: u32, max_credits: Duration) -> Self {
        RrCredits { order: (0..n).collect(), credits: vec![0.0; n as usize], max_credits_us: max_credits.as_nanos() as f64 / 1e3 }
    }

    /// The stations, highest credits first, that `has_frames`, at most `max`.
    pub fn candidates(&self, max: usize, mut has_frames: impl FnMut(u32) -> bool, out: &mut Vec<u32>) {
        out.clear();
        for &s in &self.order {
            if out.len() >= max {
                break;
            }
            if has_frames(s) {
                out.push(s);
            }
        }
    }

    /// A DL MU PPDU of `tx_duration` went to `users` (station, RU).
    pub fn on_dl_mu(&mut self, tx_duration: Duration, users: &[(u32, RuSize)]) {
        if self.order.is_empty() || users.is_empty() {
            return;
        }
        let t_us = tx_duration.as_nanos() as f64 / 1e3;
        let per_sta = t_us / self.order.len() as f64;
        let total_mhz: f64 = users.iter().map(|u| ru_bandwidth_mhz(u.1)).sum();
        let debit_per_mhz = t_us / total_mhz;
        for c in self.credits.iter_mut() {
            *c = (*c + per_sta).min(self.max_credits_us);
        }
        for &(s, ru) in users {
            self.credits[s as usize] -= debit_per_mhz * ru_bandwidth_mhz(ru);
        }
        let credits = &self.credits;
        // A stable sort, as std::list::sort.
        self.order.sort_by(|a, b| credits[*b as usize].total_cmp(&credits[*a as usize]));
    }

    /// A station's credits in µs.
    pub fn credits(&self, sta: u32) -> f64 {
        self.credits[sta as usize]
    }
}

/// A MU-BAR Trigger frame soliciting one user's Block Ack (§9.3.1.22): Frame Control 2,
/// Duration 2, RA 6, TA 6, Common Info 8, one User Info field of 5 octets with its Trigger
/// Dependent User Info (BAR Control 2, BAR Information 2), FCS 4.
pub const MU_BAR_ONE_USER: u32 = 2 + 2 + 6 + 6 + 8 + 5 + 4 + 4;

/// A compressed BlockAckReq (§9.3.1.7): Frame Control 2, Duration 2, RA 6, TA 6, BAR Control
/// 2, Starting Sequence Control 2, FCS 4.
pub const BLOCK_ACK_REQ: u32 = 24;

/// The A-MPDU subframe a MU-BAR Trigger frame adds to a user's PSDU (delimiter, frame, padding
/// to four octets).
pub fn mu_bar_subframe() -> u32 {
    frame::subframe_len_padded(MU_BAR_ONE_USER)
}

/// What the acknowledgment of a DL MU PPDU depends on: the MAC timing and the responses.
#[derive(Clone, Copy, Debug)]
pub struct AckTiming {
    pub sifs: Duration,
    pub band: Band,
    /// Non-HT rate of BlockAckReq and Block Ack frames sent alone (bit/s).
    pub control_rate: u64,
    /// A Block Ack frame's length (octets).
    pub ba_len: u32,
}

/// The end of the acknowledgment of a DL MU PPDU that ended at `ppdu_end`, carried to `users`
/// (each user's data vector, on its RU): `responders` is how many of them answer (a user whose
/// frames all failed sends nothing, but under [`MuAck::BarBa`] the AP still asks it).
pub fn response_end(ack: MuAck, t: &AckTiming, ppdu_end: Instant, users: &[TxVector], responders: usize) -> Option<Instant> {
    match ack {
        MuAck::MuBar => {
            if responders == 0 {
                return None;
            }
            Some(ppdu_end + t.sifs + tb_response(t, users))
        }
        MuAck::BarBa => {
            let ba = phy::legacy_duration(t.control_rate, t.ba_len, t.band);
            let bar = phy::legacy_duration(t.control_rate, BLOCK_ACK_REQ, t.band);
            let n = users.len().max(1) as u64;
            Some(ppdu_end + t.sifs + ba + Duration((t.sifs.0 * 2 + bar.0 + ba.0) * (n - 1)))
        }
    }
}

/// The HE TB PPDU that carries the users' Block Acks after a MU-BAR: each user on its own RU at
/// its data MCS, a Block Ack in a one-MPDU A-MPDU, the length the trigger asks for so that the
/// longest fits (`phy::he_tb_ppdu_duration`, at a TB PPDU's guard interval).
pub fn tb_response(t: &AckTiming, users: &[TxVector]) -> Duration {
    let psdu = frame::subframe_len_padded(t.ba_len);
    let v: Vec<(TxVector, u32)> = users.iter().map(|u| (*u, psdu)).collect();
    phy::he_tb_ppdu_duration(&v, t.band)
}

/// A Trigger frame (§9.3.1.22) of `users` User Info fields, each with `dep` octets of Trigger
/// Dependent User Info: Frame Control 2, Duration 2, RA 6, TA 6, Common Info 8, 5 + `dep`
/// octets per user, FCS 4 (no padding).
pub const fn trigger_len(users: u32, dep: u32) -> u32 {
    2 + 2 + 6 + 6 + 8 + users * (5 + dep) + 4
}

/// A Basic Trigger frame for `users` (one octet of Trigger Dependent User Info each).
pub const fn basic_trigger_len(users: u32) -> u32 {
    trigger_len(users, 1)
}

/// A BSRP Trigger frame for `users` (no Trigger Dependent User Info).
pub const fn bsrp_len(users: u32) -> u32 {
    trigger_len(users, 0)
}

/// A Multi-STA BlockAck (§9.3.1.8.7) to `users`, each with a Block Ack bitmap of `bitmap`
/// octets: Frame Control 2, Duration 2, RA 6, TA 6, BA Control 2, per user AID TID Info 2,
/// Starting Sequence Control 2 and the bitmap, FCS 4.
pub const fn multi_sta_ba_len(users: u32, bitmap: u32) -> u32 {
    2 + 2 + 6 + 6 + 2 + users * (2 + 2 + bitmap) + 4
}

/// The PSDU of a QoS Null frame in an A-MPDU (a BSRP's answer, which carries the buffer
/// status): QoS Null header 26 and FCS 4, delimited and padded.
pub const QOS_NULL_PSDU: u32 = frame::subframe_len_padded(26 + 4);

/// The longest TXTIME on the L-SIG grid (20 µs + 4 µs·k + signal extension) that does not
/// exceed `max`: the longest HE TB PPDU a trigger can ask for within `max`.
pub fn tb_time_within(max: Duration, band: Band) -> Duration {
    let grid = phy::lsig_round(max, band);
    if grid <= max {
        grid
    } else {
        Duration(grid.0 - 4_000)
    }
}

/// The longest PSDU `txv` (on its RU) carries in an HE TB PPDU of `tb` whose preamble has
/// `max_nss` streams' HE-LTFs: the data symbols that fit, less SERVICE (LDPC, no tail).
pub fn tb_capacity(txv: &TxVector, tb: Duration, max_nss: u8, band: Band) -> u32 {
    let gi = phy::tb_guard_interval(txv.guard_interval);
    let pre = phy::he_tb_preamble_ns(txv.guard_interval, max_nss);
    let se = phy::timing::signal_extension(band);
    let sym = 12_800 + gi as u64;
    let nsym = tb.0.saturating_sub(pre + se) / sym;
    let bits = (nsym * txv.n_dbps() as u64).saturating_sub(16);
    (bits / 8).min(u32::MAX as u64) as u32
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn equal_rus_follow_ns3s_rule() {
        assert_eq!(equal_rus(80, 4), (RuSize::Tones242, 4));
        assert_eq!(equal_rus(80, 3), (RuSize::Tones484, 2));
        assert_eq!(equal_rus(80, 9), (RuSize::Tones106, 8));
        assert_eq!(equal_rus(80, 18), (RuSize::Tones52, 16));
        assert_eq!(equal_rus(80, 37), (RuSize::Tones26, 37));
        assert_eq!(equal_rus(80, 1), (RuSize::Tones996, 1));
        assert_eq!(equal_rus(20, 2), (RuSize::Tones106, 2));
    }

    #[test]
    fn split_gives_every_user_an_ru_within_the_band() {
        let mut out = Vec::new();
        split_rus(80, 3, &mut out);
        assert_eq!(out, vec![RuSize::Tones484, RuSize::Tones242, RuSize::Tones242]);
        for n in 1..=32 {
            split_rus(80, n, &mut out);
            assert_eq!(out.len(), n);
            let tones: u32 = out.iter().map(|r| r.tones() as u32).sum();
            assert!(tones <= 996, "{n}: {tones} tones");
            assert!(out.windows(2).all(|w| w[0] >= w[1]));
        }
        // 32 26-tone RUs is as far as the tree goes at 80 MHz (the centre 26-tone RUs stay out).
        split_rus(80, 37, &mut out);
        assert_eq!(out.len(), 32);
    }

    #[test]
    fn credits_favour_the_stations_not_served() {
        let mut c = RrCredits::new(4, Duration::from_secs(1));
        let mut cand = Vec::new();
        c.candidates(2, |_| true, &mut cand);
        assert_eq!(cand, vec![0, 1]);
        c.on_dl_mu(Duration::from_micros(4000), &[(0, RuSize::Tones484), (1, RuSize::Tones484)]);
        // Each gains 1000 µs; the served ones pay 2000 µs each.
        assert!((c.credits(0) + 1000.0).abs() < 1e-9 && (c.credits(2) - 1000.0).abs() < 1e-9);
        c.candidates(2, |_| true, &mut cand);
        assert_eq!(cand, vec![2, 3]);
        c.candidates(2, |s| s != 2, &mut cand);
        assert_eq!(cand, vec![3, 0]);
    }

    #[test]
    fn trigger_frames_and_tb_capacity() {
        assert_eq!(basic_trigger_len(4), 28 + 24);
        assert_eq!(bsrp_len(4), 28 + 20);
        assert_eq!(multi_sta_ba_len(2, 32), 22 + 72);
        let band = Band::Ghz5;
        // The longest TB PPDU within 5.484 ms sits on the 4 µs grid after the 20 µs legacy part.
        let t = tb_time_within(Duration::from_micros(5_484), band);
        assert!(t <= Duration::from_micros(5_484) && (t.0 - 20_000).is_multiple_of(4_000) && t.0 + 4_000 > 5_484_000);
        // What a user's RU carries in it fits it, and one octet more would not.
        let tx = TxVector::new(phy::Standard::He, 7, 1, 80, 800).with_ru(RuSize::Tones106);
        let cap = tb_capacity(&tx, t, 1, band);
        assert!(phy::he_tb_ppdu_duration(&[(tx, cap)], band) <= t);
        assert!(phy::he_tb_ppdu_duration(&[(tx, cap + 1)], band) > t);
    }

    #[test]
    fn bar_ba_costs_an_exchange_per_further_user() {
        let t = AckTiming { sifs: Duration::from_micros(16), band: Band::Ghz5, control_rate: 24_000_000, ba_len: 32 };
        let end = Instant(0);
        let tx = TxVector::new(phy::Standard::He, 7, 1, 80, 800);
        let one = response_end(MuAck::BarBa, &t, end, &[tx], 1).unwrap();
        assert_eq!(one, end + Duration::from_micros(16 + 32));
        let four = response_end(MuAck::BarBa, &t, end, &[tx; 4], 4).unwrap();
        // BAR 24 octets at 24 Mb/s: 20 µs + 3 symbols.
        assert_eq!(four - one, Duration::from_micros(3 * (16 + 32 + 16 + 32)));
    }
}
