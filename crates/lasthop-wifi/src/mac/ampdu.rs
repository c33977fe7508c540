//! Building one PPDU's MPDUs from a pull source, and when the recipient holds each of them.
//!
//! Sans-IO: the builder owns no queue and reads no clock. It asks a [`PullSource`] — whatever
//! holds the link's frames (an AP's per-station queue, a firmware queue, a relay port, a
//! station's own queue) — for retransmissions and new MSDUs, and applies the rules that decide
//! what one transmission opportunity carries:
//!
//! * retransmissions first, in sequence order, then new MPDUs while the Block Ack window allows
//!   (IEEE 802.11-2020 §10.25.6: sequence numbers in [WinStart, WinStart + WinSize), WinStart
//!   taken when the A-MPDU begins);
//! * at most `max_mpdus` MPDUs, and a PSDU of at most `max_psdu` octets counting delimiters and
//!   padding (§10.12, the A-MPDU length and PPDU time limits folded into one octet bound);
//! * with A-MSDU (`max_amsdu > 0`) a new MPDU carries as many queued MSDUs as fit in one A-MSDU
//!   and in the A-MPDU (§9.3.2.2.2);
//! * without aggregation a plain MPDU goes out, except that VHT and HE always use the A-MPDU
//!   format (a single-MPDU A-MPDU, §10.12.8).
//!
//! [`subframe_ends`] gives the instant the recipient holds each MPDU of an A-MPDU: the end of
//! the data symbol that carries the subframe's last octet.

use super::blockack::Originator;
use super::frame::{self, AmpduLen, AmsduLen};
use crate::phy::{self, Band, PrefixClock, TxVector};
use lasthop_core::Instant;

/// What a source gave when asked for a new MSDU.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Take<P> {
    Got(P),
    /// Its next MSDU does not fit (it stays first in line).
    NoFit,
    Empty,
}

/// The frames of one link (transmitter → receiver, one TID) as the builder sees them.
pub trait PullSource<P: Copy> {
    /// The link's Block Ack originator (sequence numbers, retransmissions).
    fn originator(&mut self) -> &mut Originator<P>;
    /// The next new MSDU if `fits(ip_octets)`; one that does not fit stays first in line.
    fn take(&mut self, fits: &dyn Fn(u32) -> bool) -> Take<P>;
    /// IP octets of MSDU `p`.
    fn ip_len(&self, p: P) -> u32;
    /// Octets of the MPDU headed by `p` as it was first built (for a retransmission).
    fn mpdu_len(&self, p: P) -> u32;
    /// MSDU `next` follows `tail` in the same A-MSDU.
    fn chain(&mut self, tail: P, next: P);
    /// The A-MSDU headed by `head` is complete: its MPDU is `mpdu` octets.
    fn seal_amsdu(&mut self, head: P, mpdu: u32);
}

/// The limits of one PPDU.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct AmpduLimits {
    /// MPDUs per PPDU (1: a single MPDU, e.g. a rate-control probe).
    pub max_mpdus: usize,
    /// Largest PSDU (octets, delimiters and padding included).
    pub max_psdu: u32,
    /// Largest A-MSDU frame body; 0 = one MSDU per MPDU.
    pub max_amsdu: u32,
    /// QoS Data frames (26-octet header) rather than Data (24).
    pub qos: bool,
    /// The PSDU is an A-MPDU (aggregation on, or VHT/HE which always use the format).
    pub ampdu_format: bool,
}

/// Fill `out` with the (sequence number, MPDU head, `false`) of one PPDU from `src` within
/// `lim`, and return the PSDU length. `out` is left empty when the source has nothing.
pub fn build<P: Copy, S: PullSource<P>>(src: &mut S, lim: &AmpduLimits, out: &mut Vec<(u32, P, bool)>) -> u32 {
    let max_psdu = lim.max_psdu;
    let mut len = AmpduLen::default();
    let fits = |len: &AmpduLen, mpdu: u32| len.is_empty() || len.with(mpdu) <= max_psdu;
    let win_start = src.originator().win_start();
    while out.len() < lim.max_mpdus {
        if let Some((seq, p)) = src.originator().peek_retx() {
            let m = src.mpdu_len(p);
            if !fits(&len, m) {
                break;
            }
            src.originator().pop_retx();
            len.push(m);
            out.push((seq, p, false));
            continue;
        }
        if !src.originator().can_send_new(win_start) {
            break;
        }
        let Take::Got(p) = src.take(&|ip| fits(&len, frame::mpdu_len(ip, lim.qos))) else { break };
        let mut mpdu = frame::mpdu_len(src.ip_len(p), lim.qos);
        if lim.max_amsdu > 0 {
            mpdu = amsdu(src, p, lim, &len).unwrap_or(mpdu);
        }
        let seq = src.originator().assign_seq();
        len.push(mpdu);
        out.push((seq, p, false));
    }
    match out.first() {
        None => 0,
        Some(&(_, p, _)) if !lim.ampdu_format => src.mpdu_len(p),
        Some(_) => len.len(),
    }
}

/// More MSDUs of the same source behind `head` in one A-MSDU, within the A-MSDU and A-MPDU
/// limits; the MPDU length if more than `head` went in.
fn amsdu<P: Copy, S: PullSource<P>>(src: &mut S, head: P, lim: &AmpduLimits, len: &AmpduLen) -> Option<u32> {
    let max_psdu = lim.max_psdu;
    let fits = |mpdu: u32| len.is_empty() || len.with(mpdu) <= max_psdu;
    let mut am = AmsduLen::default();
    am.push(src.ip_len(head));
    let mut tail = head;
    loop {
        let ok = |ip: u32| am.with(ip) <= lim.max_amsdu && fits(frame::QOS_DATA_HEADER + am.with(ip) + frame::FCS);
        let Take::Got(q) = src.take(&ok) else { break };
        am.push(src.ip_len(q));
        src.chain(tail, q);
        tail = q;
    }
    if am.count() > 1 {
        let mpdu = am.mpdu_len();
        src.seal_amsdu(head, mpdu);
        Some(mpdu)
    } else {
        None
    }
}

/// When the recipient of a PPDU ending at `ppdu_end` at `txv` holds each of its MPDUs (octets
/// `mpdu_lens`), into `out`: with `per_subframe` and more than one MPDU, the end of the data
/// symbol carrying the subframe's last octet (`phy::PrefixClock` over the A-MPDU layout of
/// §10.12: delimiter, MPDU, padding to 4 octets); otherwise, and always for the last MPDU, the
/// PPDU's end.
pub fn subframe_ends(txv: &TxVector, band: Band, mpdu_lens: impl ExactSizeIterator<Item = u32>, ppdu_end: Instant, per_subframe: bool, out: &mut Vec<Instant>) {
    out.clear();
    let n = mpdu_lens.len();
    if per_subframe && n > 1 {
        let mut len = AmpduLen::default();
        for b in mpdu_lens {
            out.push(Instant(len.with(b) as u64));
            len.push(b);
        }
        let start = ppdu_end - phy::ppdu_duration(txv, len.len(), band);
        let clock = PrefixClock::new(txv, band);
        for t in out.iter_mut() {
            *t = (start + clock.at(t.as_nanos() as u32)).min(ppdu_end);
        }
    }
    out.resize(n, ppdu_end);
    if let Some(t) = out.last_mut() {
        *t = ppdu_end;
    }
}

/// [`subframe_ends`] for one user of an HE MU PPDU that started at `start` with a common
/// preamble of `pre_ns` (HE-SIG-B included): its subframes are timed on its RU (`txv`) from
/// the end of that preamble; the last ends with the PPDU (users are padded to the longest).
#[allow(clippy::too_many_arguments)]
pub fn mu_subframe_ends(txv: &TxVector, band: Band, pre_ns: u32, start: Instant, mpdu_lens: impl ExactSizeIterator<Item = u32>, ppdu_end: Instant, per_subframe: bool, out: &mut Vec<Instant>) {
    out.clear();
    let n = mpdu_lens.len();
    if per_subframe && n > 1 {
        let mut len = AmpduLen::default();
        let clock = PrefixClock::with_preamble(txv, band, pre_ns as u64);
        for b in mpdu_lens {
            out.push((start + clock.at(len.with(b))).min(ppdu_end));
            len.push(b);
        }
    }
    out.resize(n, ppdu_end);
    if let Some(t) = out.last_mut() {
        *t = ppdu_end;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::phy::Standard;
    use std::collections::VecDeque;

    /// MSDUs are (id, IP octets); A-MSDU chains and sealed lengths are recorded.
    struct Queue {
        orig: Originator<u32>,
        q: VecDeque<u32>,
        ip: Vec<u32>,
        sealed: Vec<(u32, u32)>,
        chained: Vec<(u32, u32)>,
    }

    impl Queue {
        fn new(win: u32, ips: &[u32]) -> Queue {
            Queue { orig: Originator::new(win), q: (0..ips.len() as u32).collect(), ip: ips.to_vec(), sealed: vec![], chained: vec![] }
        }
    }

    impl PullSource<u32> for Queue {
        fn originator(&mut self) -> &mut Originator<u32> {
            &mut self.orig
        }
        fn take(&mut self, fits: &dyn Fn(u32) -> bool) -> Take<u32> {
            match self.q.front() {
                None => Take::Empty,
                Some(&p) if !fits(self.ip[p as usize]) => Take::NoFit,
                Some(_) => Take::Got(self.q.pop_front().expect("front")),
            }
        }
        fn ip_len(&self, p: u32) -> u32 {
            self.ip[p as usize]
        }
        fn mpdu_len(&self, p: u32) -> u32 {
            self.sealed.iter().find(|s| s.0 == p).map_or(frame::mpdu_len(self.ip[p as usize], true), |s| s.1)
        }
        fn chain(&mut self, tail: u32, next: u32) {
            self.chained.push((tail, next));
        }
        fn seal_amsdu(&mut self, head: u32, mpdu: u32) {
            self.sealed.push((head, mpdu));
        }
    }

    fn lim(max_mpdus: usize, max_psdu: u32, max_amsdu: u32) -> AmpduLimits {
        AmpduLimits { max_mpdus, max_psdu, max_amsdu, qos: true, ampdu_format: true }
    }

    #[test]
    fn fills_up_to_the_mpdu_count_with_padding_and_delimiters() {
        let mut src = Queue::new(64, &[1500; 10]);
        let mut out = vec![];
        let psdu = build(&mut src, &lim(4, 65_535, 0), &mut out);
        assert_eq!(out.iter().map(|m| (m.0, m.1)).collect::<Vec<_>>(), vec![(0, 0), (1, 1), (2, 2), (3, 3)]);
        let m = frame::mpdu_len(1500, true);
        assert_eq!(psdu, 3 * frame::subframe_len_padded(m) + frame::MPDU_DELIMITER + m);
        assert_eq!(src.q.len(), 6);
    }

    #[test]
    fn the_octet_limit_leaves_the_next_msdu_first_in_line() {
        let m = frame::mpdu_len(1500, true);
        let max = 2 * frame::subframe_len_padded(m) + frame::MPDU_DELIMITER + m;
        let mut src = Queue::new(64, &[1500; 10]);
        let mut out = vec![];
        assert_eq!(build(&mut src, &lim(64, max, 0), &mut out), max);
        assert_eq!(out.len(), 3);
        assert_eq!(src.q.front(), Some(&3));
        // A first MPDU always goes, even above the bound.
        let mut out = vec![];
        build(&mut src, &lim(64, 10, 0), &mut out);
        assert_eq!(out.len(), 1);
    }

    #[test]
    fn retransmissions_go_first_and_the_window_bounds_new_mpdus() {
        let mut src = Queue::new(4, &[100; 10]);
        let mut out = vec![];
        build(&mut src, &lim(64, 65_535, 0), &mut out);
        assert_eq!(out.len(), 4, "a window of 4");
        // MPDU 1 failed; WinStart is 1, so new MPDUs 4 only (1 + 4 = 5 excluded).
        src.orig.push_retx(1, 1);
        let mut out = vec![];
        build(&mut src, &lim(64, 65_535, 0), &mut out);
        assert_eq!(out.iter().map(|m| m.0).collect::<Vec<_>>(), vec![1, 4]);
    }

    #[test]
    fn a_msdus_pack_msdus_within_both_limits() {
        let mut src = Queue::new(64, &[500; 9]);
        let mut out = vec![];
        let max_amsdu = 1_600;
        build(&mut src, &lim(2, 65_535, max_amsdu), &mut out);
        assert_eq!(out.len(), 2);
        // 3 × (14 + 8 + 500) padded = 1,566 ≤ 1,600; a fourth would not fit.
        let mut am = AmsduLen::default();
        (0..3).for_each(|_| am.push(500));
        assert_eq!(src.sealed, vec![(0, am.mpdu_len()), (3, am.mpdu_len())]);
        assert_eq!(src.chained, vec![(0, 1), (1, 2), (3, 4), (4, 5)]);
        assert!(am.len() <= max_amsdu && am.with(500) > max_amsdu);
    }

    #[test]
    fn a_plain_mpdu_outside_the_a_mpdu_format() {
        let mut src = Queue::new(64, &[1500; 2]);
        let mut out = vec![];
        let l = AmpduLimits { ampdu_format: false, ..lim(1, 65_535, 0) };
        assert_eq!(build(&mut src, &l, &mut out), frame::mpdu_len(1500, true));
        let mut empty = Queue::new(64, &[]);
        let mut out = vec![];
        assert_eq!(build(&mut empty, &l, &mut out), 0);
        assert!(out.is_empty());
    }

    #[test]
    fn subframes_end_in_order_and_the_last_with_the_ppdu() {
        let txv = TxVector { standard: Standard::Vht, mcs: 7, nss: 1, channel_width: 80, guard_interval: 800, ru: None };
        let lens = [1_538u32; 8];
        let len = lens.iter().fold(AmpduLen::default(), |mut l, &b| {
            l.push(b);
            l
        });
        let end = Instant(10_000_000);
        let start = end - phy::ppdu_duration(&txv, len.len(), Band::Ghz5);
        let mut out = vec![];
        subframe_ends(&txv, Band::Ghz5, lens.iter().copied(), end, true, &mut out);
        assert_eq!(out.len(), 8);
        assert!(out.windows(2).all(|w| w[0] < w[1]), "{out:?}");
        assert!(out[0] > start);
        assert_eq!(out[7], end);
        subframe_ends(&txv, Band::Ghz5, lens.iter().copied(), end, false, &mut out);
        assert_eq!(out, vec![end; 8]);
    }
}
