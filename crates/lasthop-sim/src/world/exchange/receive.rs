//! The recipient's side of a PPDU that did not collide: the link's error model (none, a fixed
//! PER, or the PER of the PPDU's MCS at the link's SNR, `lasthop_wifi::phy::error`) says which
//! MPDUs arrive, and whether their Block Ack/Ack, sent at the control rate, gets back. With
//! `[channel.interference]` the SNR of what a burst overlaps is lowered (`world/interference.rs`).

use super::*;
use lasthop_wifi::mac::exchange;

impl World {
    /// The recipient's side of user `u` of a PPDU that ended at `ppdu_end` without a
    /// collision: which MPDUs arrive (the link's error model), and if any did, whether its
    /// Block Ack/Ack gets back (`u.acked`). Returns the end of that response, if one is sent.
    /// (Several users respond together, as stations answer a DL MU PPDU in one HE TB PPDU.)
    pub(in crate::world) fn receive_user(&mut self, u: &mut PpduUser, ppdu_end: Instant) -> Option<Instant> {
        let loss_db = self.interference_hits(u, ppdu_end);
        let s = &mut self.stations[u.sta as usize];
        let (txv, snr) = (u.txv, u.snr);
        let mut any = false;
        for (i, m) in u.mpdus.iter_mut().enumerate() {
            let snr = match loss_db {
                Some(l) if self.scratch.hits[i] => snr - l,
                _ => snr,
            };
            let ok = mpdu_ok(s, mpdu_bytes(&self.pkts, self.air.qos, m.1), &txv, snr);
            m.2 = ok;
            any |= ok;
        }
        if !any {
            return None;
        }
        let end = exchange::response_end(ppdu_end, self.air.timing.sifs, self.air.control_rate, self.air.response_len, self.air.band);
        // The response crosses the full band: the link's SNR, without an uplink RU's gain.
        let mut snr = snr - crate::world::ofdma::ul_ru_gain_db(u.dir, txv.ru, self.spec.phy.channel_width);
        if let (Some(l), Some(i)) = (loss_db, self.interference.as_deref_mut()) {
            if i.overlaps(ppdu_end, end) {
                snr -= l;
            }
        }
        let p = match s.err {
            ErrModel::Snr => {
                let bits = snr.to_bits();
                if s.ba_cache.0 != bits {
                    s.ba_cache = (bits, phy::legacy_success_prob(self.air.control_rate, snr, self.air.response_len));
                }
                s.ba_cache.1
            }
            _ => 1.0,
        };
        u.acked = p >= 1.0 || s.err_rng.bernoulli(p);
        Some(end)
    }

    /// With `[channel.interference]`, on a link whose errors follow its SNR: which of user
    /// `u`'s MPDUs overlap a burst (into `scratch.hits`; the first counted from the PPDU's
    /// start, which is now), and what a burst takes off their SNR. None otherwise.
    fn interference_hits(&mut self, u: &PpduUser, ppdu_end: Instant) -> Option<f64> {
        if self.interference.is_none() || !matches!(self.stations[u.sta as usize].err, ErrModel::Snr) {
            return None;
        }
        let mut times = std::mem::take(&mut self.scratch.times);
        self.subframe_ends_of(&u.txv, u.mu, &u.mpdus, ppdu_end, true, &mut times);
        let inter = self.interference.as_deref_mut().expect("checked above");
        let hits = &mut self.scratch.hits;
        hits.clear();
        let mut from = self.q.now();
        for &t in &times {
            hits.push(inter.overlaps(from, t));
            from = t;
        }
        self.scratch.times = times;
        Some(inter.loss_db)
    }
}

/// Draw whether one MPDU of `m` octets, sent at `txv` with SNR `snr`, arrives intact.
#[inline]
fn mpdu_ok(s: &mut Station, m: u32, txv: &TxVector, snr: f64) -> bool {
    match s.err {
        ErrModel::None => true,
        ErrModel::Fixed(per) => !s.err_rng.bernoulli(per),
        ErrModel::Snr => {
            let (k, bits) = (rate_key(txv), snr.to_bits());
            if s.succ_cache.0 != m || s.succ_cache.1 != k || s.succ_cache.2 != bits {
                s.succ_cache = (m, k, bits, phy::mpdu_success_prob(txv, snr, m));
            }
            s.err_rng.bernoulli(s.succ_cache.3)
        }
    }
}
