//! The A-MPDU builder's side of a link ([`PullSource`]): the PSDU limit at a rate, the frames
//! awaiting retransmission, and the next new frame from the link's source (a relay's port, the
//! AP's driver, the station's queue), chained into A-MSDUs in the arena.

use super::*;
use lasthop_wifi::mac::ampdu::PullSource;
use lasthop_wifi::mac::blockack::Originator;

impl PullSource<PktRef> for LinkIo<'_> {
    #[inline]
    fn originator(&mut self) -> &mut Originator<PktRef> {
        self.w.stations[self.sta as usize].ac[self.k].orig(self.dir)
    }
    #[inline]
    fn take(&mut self, fits: &dyn Fn(u32) -> bool) -> Take<PktRef> {
        self.w.take_new(self.sta, self.dir, self.k, self.port, self.now, fits)
    }
    #[inline]
    fn ip_len(&self, p: PktRef) -> u32 {
        p.len
    }
    #[inline]
    fn mpdu_len(&self, p: PktRef) -> u32 {
        mpdu_bytes(&self.w.pkts, self.w.air.qos, p)
    }
    #[inline]
    fn chain(&mut self, tail: PktRef, next: PktRef) {
        let t = &mut self.w.pkts[tail.id as usize];
        t.next = next.id;
        t.next_len = next.len;
    }
    #[inline]
    fn seal_amsdu(&mut self, head: PktRef, mpdu: u32) {
        self.w.pkts[head.id as usize].mpdu = mpdu;
    }
}

/// The PSDU octets of one full-size MPDU (a 1500-octet MSDU and its delimiter), at most `cap`.
#[inline]
pub(in crate::world) fn full_size_mpdu(qos: bool, cap: u32) -> u32 {
    (frame::mpdu_len(1500, qos) + frame::MPDU_DELIMITER).min(cap)
}

impl World {
    /// The largest PSDU on station `sta`'s link in `dir` and slot `k` at rate `txv`: the A-MPDU
    /// length cap, and the AC's PPDU time limit for the transmitter (the AP's for its own
    /// downlink, the stations' otherwise: a relay is a station) at that rate (computed once per
    /// rate and direction).
    pub(in crate::world) fn max_psdu(&mut self, sta: u32, dir: Dir, k: usize, txv: &TxVector) -> u32 {
        let s = &mut self.stations[sta as usize];
        let by_ap = dir == Dir::Down && s.parent.is_none();
        let limit = self.air.max_ppdu[k][!by_ap as usize];
        let (cap, a) = (s.psdu_cap, &mut s.ac[k]);
        let r = rate_key(txv) as usize + (dir == Dir::Up) as usize * 8 * 12;
        if a.psdu_by_rate.is_empty() {
            a.psdu_by_rate.resize(2 * 8 * 12, 0);
        }
        if a.psdu_by_rate[r] == 0 {
            // A TXOP limit shorter than one frame exchange still lets one MPDU go (the 802.11
            // exception for a single frame that exceeds the limit).
            let one = full_size_mpdu(self.air.qos, cap);
            a.psdu_by_rate[r] = frame::max_psdu_for_time(txv, self.air.band, limit, cap).max(one).max(1);
        }
        a.psdu_by_rate[r]
    }

    /// The next new frame for `sta` in `dir` and slot `k` from its source (a relay's queue
    /// entry, the firmware queue, the AP's station queue, or the station's own queue) if
    /// `fits(ip_len)`; a frame that does not fit stays first in line.
    fn take_new(&mut self, sta: u32, dir: Dir, k: usize, port: Option<(u32, u32)>, now: Instant, fits: &dyn Fn(u32) -> bool) -> Take<PktRef> {
        // A driver that formed this A-MPDU ahead left the frames behind it for the next.
        if !self.formation_may_take(sta, dir, k) {
            return Take::NoFit;
        }
        let taken = match (port, dir) {
            (Some((r, e)), _) => self.relay_take(r, e, now, fits),
            (None, Dir::Down) => self.ap_take(sta, k, now, fits),
            (None, Dir::Up) => self.station_take(sta, k, now, fits),
        };
        let Take::Got(p) = taken else { return taken };
        self.formation_took(sta, dir, k, p);
        // A saturated source puts a fresh packet behind the one that left.
        let sat = match dir {
            // A relay's own saturated uplink flow refills when one of its packets leaves.
            Dir::Up if port.is_some() => self.sat_up[self.sat_idx(k, sta)].filter(|&f| f == p.flow),
            // Relays forward; only the AP's queues are fed by saturated sources.
            Dir::Down if port.is_some() => None,
            // A driver that holds frames below mac80211 refilled the source when it took them.
            Dir::Down if !self.ap_pulls => None,
            Dir::Down => self.sat_down[self.sat_idx(k, sta)],
            Dir::Up => self.sat_up[self.sat_idx(k, sta)],
        };
        self.refill(sat, now);
        Take::Got(p)
    }

    /// Fill `out` with the MPDUs of one A-MPDU (or a single MPDU) for `sta` in `dir` and access
    /// category slot `k` (its Block Ack agreement and queues): retransmissions first, then new
    /// MPDUs, within the Block Ack window, `max_n` MPDUs, `max_psdu` octets and the PPDU time
    /// limits (`lasthop_wifi::mac::ampdu::build`). With `mac.max_amsdu_bytes` a new MPDU carries
    /// as many queued packets for the same next hop as fit in one A-MSDU (and in the A-MPDU).
    /// Returns the PSDU length. The link has a frame to send (the EDCA function that won the
    /// medium serves it).
    #[allow(clippy::too_many_arguments)]
    pub(in crate::world) fn build_ampdu(&mut self, sta: u32, dir: Dir, k: usize, now: Instant, max_n: usize, max_psdu: u32, out: &mut Vec<(u32, PktRef, bool)>) -> u32 {
        let psdu = self.build_ampdu_any(sta, dir, k, now, max_n, max_psdu, out);
        debug_assert!(!out.is_empty());
        psdu
    }

    /// [`World::build_ampdu`] for a user of a multi-user PPDU, which may find nothing to send
    /// (the scheduler picked it from what it knew: its queue discipline may have dropped its
    /// frames on the way out since): `out` is then empty.
    #[allow(clippy::too_many_arguments)]
    pub(in crate::world) fn build_ampdu_any(&mut self, sta: u32, dir: Dir, k: usize, now: Instant, max_n: usize, max_psdu: u32, out: &mut Vec<(u32, PktRef, bool)>) -> u32 {
        let lim = AmpduLimits {
            max_mpdus: max_n,
            max_psdu,
            max_amsdu: self.air.max_amsdu,
            qos: self.air.qos,
            ampdu_format: self.air.aggregation || matches!(self.air.standard, Standard::Vht | Standard::He),
        };
        let port = self.relay_port(sta, dir);
        ampdu::build(&mut LinkIo { w: self, sta, dir, k, port, now }, &lim, out)
    }
}
