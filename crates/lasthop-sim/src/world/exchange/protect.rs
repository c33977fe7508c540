//! RTS/CTS protection of a data PPDU (IEEE 802.11-2020 §10.3.2.9): a station or an AP whose
//! radio protects what it sends (`stations[].rts`, `ap.rts`) opens the exchange that a channel
//! access starts with an RTS at the control rate; its recipient answers with a CTS after SIFS,
//! and the data PPDU follows SIFS after that. In a collision only the RTSs collide; without a CTS (a
//! collision, or the RTS or the CTS lost to the link's errors) no data is sent, and the sender
//! invokes backoff when its CTSTimeout (aSIFSTime + aSlotTime + aRxPHYStartDelay, the Ack
//! timeout's value) expires after the RTS.
//!
//! What an RTS failure costs the MPDUs follows Broadcom's driver, whose firmware protects every
//! A-MPDU (`ampdu_rts`, set TRUE by `wlc_ampdu_attach`; `wlc_d11n_hdrs` sets `use_rts` for
//! each A-MPDU, whatever its length): its transmit status cannot tell a missing CTS from a
//! missing Block Ack, so `wlc_ampdu_dotxstatus_complete` counts one more attempt for each MPDU
//! and requeues it. Rate control hears the failed attempt as well, as Minstrel-HT hears an
//! ath9k rate series' RTS failures, and the A-MPDU stays in the sender's A-MPDU statistics (as
//! in Broadcom's `txampdu` counter). Not modelled: a TXOP's later exchanges (`txop.rs`) go
//! unprotected, the TXOP's first PPDU is not shortened by the RTS/CTS's time, bursts of
//! `[channel.interference]` do not reach the RTS and CTS, and no node hears the CTS without the
//! RTS (every node of a channel here hears every other).

use super::*;
use lasthop_wifi::mac::exchange::rts_cts;

/// The RTS/CTS exchange before a protected data PPDU: the RTS's end, the data PPDU's start
/// (after SIFS, the CTS and SIFS), and whether the CTS came back.
#[derive(Clone, Copy, Debug)]
pub(in crate::world) struct Rts {
    pub(in crate::world) end: Instant,
    pub(in crate::world) data: Instant,
    pub(in crate::world) cts: bool,
}

impl Tx {
    /// Whether the data PPDU went on the air: not when its RTS drew no CTS.
    #[inline]
    pub(in crate::world) fn data_sent(&self) -> bool {
        self.rts.is_none_or(|r| r.cts)
    }

    /// When what it put on the air ends: its PPDU, or its RTS alone.
    #[inline]
    pub(in crate::world) fn air_end(&self) -> Instant {
        match self.rts {
            Some(r) if !r.cts => r.end,
            _ => self.ppdu_end,
        }
    }
}

impl World {
    /// What station `sta`'s link in `dir` is sent with: its own radio's RTS policy on the
    /// uplink; on the downlink its parent's: a relay's, or the AP's (`ap.rts`).
    #[inline]
    pub(in crate::world) fn sender_rts(&self, sta: u32, dir: Dir) -> RtsPolicy {
        self.sender_radio(sta, dir, self.air.ap_rts, |s| s.rts)
    }

    /// Protect `tx`, a single-user data PPDU built at `now` by a channel access, if its
    /// sender's policy covers it (`aggregate`: it was built as an A-MPDU): the data PPDU then
    /// starts after the RTS, SIFS, the CTS and SIFS.
    pub(in crate::world) fn protect(&self, tx: &mut Tx, aggregate: bool, now: Instant) {
        let [u] = tx.users.as_slice() else { return };
        if !self.sender_rts(u.sta, u.dir).protects(aggregate) {
            return;
        }
        let (rts, lead) = rts_cts(self.air.timing.sifs, self.air.control_rate, self.air.band);
        tx.ppdu_end += lead;
        tx.rts = Some(Rts { end: now + rts, data: now + lead, cts: true });
    }

    /// Whether a lone protected PPDU's CTS comes back: the RTS and then the CTS, each at the
    /// control rate, survive the link's errors (its SNR model; no errors otherwise, as for the
    /// Block Ack).
    pub(in crate::world) fn cts_back(&mut self, tx: &Tx) -> bool {
        let u = &tx.users[0];
        let (rate, snr) = (self.air.control_rate, u.snr);
        let s = &mut self.stations[u.sta as usize];
        if !matches!(s.err, ErrModel::Snr) {
            return true;
        }
        let p = phy::legacy_success_prob(rate, snr, frame::RTS) * phy::legacy_success_prob(rate, snr, frame::CTS);
        p >= 1.0 || s.err_rng.bernoulli(p)
    }
}
