//! Completion of one PPDU under an HT-immediate Block Ack agreement (IEEE 802.11-2020
//! §10.25.6–§10.25.7): which MPDUs the recipient takes into its reorder buffer, which the
//! originator learns were received, which it sends again and which it abandons at the retry
//! limit.
//!
//! Sans-IO: [`complete`] is handed the PPDU's outcome (per MPDU whether it was received, and
//! whether the Block Ack came back) and tells a [`CompletionSink`] — the holder of the frames —
//! what became of each; MSDUs the recipient releases in order come back with the instant it
//! received them. The rules:
//!
//! * a received MPDU enters the recipient's reorder buffer; what becomes contiguous is released,
//!   a sequence number already held or below WinStart is a duplicate;
//! * with the Block Ack back, the originator is done with every received MPDU;
//! * a received MPDU whose Block Ack was lost is still held by the originator, which sends it
//!   again (the recipient will discard that copy as a duplicate);
//! * every MPDU not acknowledged counts one more attempt; at `retry_limit` attempts it is
//!   abandoned, else queued for retransmission in sequence order;
//! * everything below the originator's window start is then acknowledged or abandoned, so the
//!   recipient's window follows it (the Block Ack Request after an abandoned MPDU, modelled as
//!   delivered at the PPDU's end).

use super::blockack::{Originator, Recipient};
use lasthop_core::Instant;

/// The holder of one link's frames, told what became of each MPDU of a PPDU.
pub trait CompletionSink<P: Copy> {
    /// The link's agreement: its originator and its recipient.
    fn agreement(&mut self) -> (&mut Originator<P>, &mut Recipient<P>);
    /// The recipient received MPDU `p` (whether or not the originator learns it).
    fn received(&mut self, p: P);
    /// The originator learned that `p` was received: it is done with it.
    fn acked(&mut self, p: P);
    /// A copy of `p` for the originator to send again (the recipient keeps `p`).
    fn resend_copy(&mut self, p: P) -> P;
    /// One more failed attempt of `p`; the attempts so far.
    fn failed_attempt(&mut self, p: P) -> u32;
    /// `p` reached the retry limit: the originator gives it up.
    fn abandon(&mut self, p: P);
}

/// Complete one PPDU of `mpdus` (sequence number, MPDU, received) whose recipient held MPDU i
/// at `rx_times[i]`, with its Block Ack back if `acked`. MPDUs the recipient releases go to
/// `released` with their receive instants, duplicates to `dups`.
#[allow(clippy::too_many_arguments)]
pub fn complete<P: Copy, S: CompletionSink<P>>(
    sink: &mut S,
    mpdus: &[(u32, P, bool)],
    acked: bool,
    rx_times: &[Instant],
    ppdu_end: Instant,
    retry_limit: u32,
    released: &mut Vec<(P, Instant)>,
    dups: &mut Vec<P>,
) {
    debug_assert_eq!(mpdus.len(), rx_times.len());
    for (&(seq, p, ok), &t) in mpdus.iter().zip(rx_times) {
        let mut p = p;
        if ok {
            let (_, rcpt) = sink.agreement();
            rcpt.receive(seq, p, |x| released.push((x, t)), |x| dups.push(x));
            sink.received(p);
            if acked {
                sink.acked(p);
                continue;
            }
            p = sink.resend_copy(p);
        }
        if sink.failed_attempt(p) >= retry_limit {
            sink.abandon(p);
        } else {
            sink.agreement().0.push_retx(seq, p);
        }
    }
    let (orig, rcpt) = sink.agreement();
    let ws = orig.win_start();
    rcpt.advance_to(ws, |x| released.push((x, ppdu_end)));
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Frames are ids; copies get ids from 1,000 up. Records what it was told.
    #[derive(Default)]
    struct Log {
        orig: Option<Originator<u32>>,
        rcpt: Option<Recipient<u32>>,
        attempts: std::collections::BTreeMap<u32, u32>,
        received: Vec<u32>,
        acked: Vec<u32>,
        abandoned: Vec<u32>,
        copies: u32,
    }

    impl Log {
        fn new(win: u32) -> Log {
            Log { orig: Some(Originator::new(win)), rcpt: Some(Recipient::new(win)), ..Log::default() }
        }
        /// Send `n` new MPDUs: (seq, id = seq).
        fn send(&mut self, n: u32) -> Vec<(u32, u32, bool)> {
            let o = self.orig.as_mut().expect("orig");
            (0..n).map(|_| o.assign_seq()).map(|s| (s, s, false)).collect()
        }
    }

    impl CompletionSink<u32> for Log {
        fn agreement(&mut self) -> (&mut Originator<u32>, &mut Recipient<u32>) {
            (self.orig.as_mut().expect("orig"), self.rcpt.as_mut().expect("rcpt"))
        }
        fn received(&mut self, p: u32) {
            self.received.push(p);
        }
        fn acked(&mut self, p: u32) {
            self.acked.push(p);
        }
        fn resend_copy(&mut self, p: u32) -> u32 {
            self.copies += 1;
            let c = 1_000 + self.copies;
            let a = self.attempts.get(&p).copied().unwrap_or(0);
            self.attempts.insert(c, a);
            c
        }
        fn failed_attempt(&mut self, p: u32) -> u32 {
            let a = self.attempts.entry(p).or_insert(0);
            *a += 1;
            *a
        }
        fn abandon(&mut self, p: u32) {
            self.abandoned.push(p);
        }
    }

    fn run(log: &mut Log, mpdus: &[(u32, u32, bool)], acked: bool, limit: u32) -> (Vec<(u32, Instant)>, Vec<u32>) {
        let times: Vec<Instant> = (0..mpdus.len() as u64).map(|i| Instant(100 + i)).collect();
        let (mut rel, mut dups) = (vec![], vec![]);
        complete(log, mpdus, acked, &times, Instant(1_000), limit, &mut rel, &mut dups);
        (rel, dups)
    }

    #[test]
    fn an_acknowledged_ppdu_releases_in_order_at_the_subframe_instants() {
        let mut log = Log::new(64);
        let mut m = log.send(3);
        m.iter_mut().for_each(|x| x.2 = true);
        let (rel, dups) = run(&mut log, &m, true, 7);
        assert_eq!(rel, vec![(0, Instant(100)), (1, Instant(101)), (2, Instant(102))]);
        assert!(dups.is_empty());
        assert_eq!(log.acked, vec![0, 1, 2]);
        assert!(!log.orig.as_ref().expect("orig").has_retx());
    }

    #[test]
    fn a_gap_holds_later_mpdus_until_the_retransmission_fills_it() {
        let mut log = Log::new(64);
        let mut m = log.send(3);
        (m[0].2, m[2].2) = (true, true);
        let (rel, _) = run(&mut log, &m, true, 7);
        assert_eq!(rel, vec![(0, Instant(100))], "2 waits behind 1");
        assert_eq!(log.orig.as_ref().expect("orig").peek_retx(), Some((1, 1)));
        let retx = vec![(1, 1, true)];
        let (rel, _) = run(&mut log, &retx, true, 7);
        assert_eq!(rel, vec![(1, Instant(100)), (2, Instant(100))]);
    }

    #[test]
    fn a_lost_block_ack_resends_a_copy_the_recipient_discards() {
        let mut log = Log::new(64);
        let mut m = log.send(1);
        m[0].2 = true;
        let (rel, _) = run(&mut log, &m, false, 7);
        assert_eq!(rel, vec![(0, Instant(100))], "the recipient has it");
        assert_eq!(log.received, vec![0]);
        let (seq, copy) = log.orig.as_ref().expect("orig").peek_retx().expect("a copy to resend");
        assert_eq!((seq, copy), (0, 1_001));
        log.orig.as_mut().expect("orig").pop_retx();
        let (rel, dups) = run(&mut log, &[(0, copy, true)], true, 7);
        assert!(rel.is_empty());
        assert_eq!(dups, vec![copy]);
    }

    #[test]
    fn the_retry_limit_abandons_and_moves_the_recipients_window() {
        let mut log = Log::new(64);
        let mut m = log.send(2);
        m[1].2 = true;
        // MPDU 0 fails twice with a limit of 2: abandoned; 1, held behind it, is released at
        // the PPDU's end when the window moves past 0.
        let (rel, _) = run(&mut log, &m, true, 2);
        assert!(rel.is_empty());
        log.orig.as_mut().expect("orig").pop_retx();
        let (rel, _) = run(&mut log, &[(0, 0, false)], false, 2);
        assert_eq!(log.abandoned, vec![0]);
        assert_eq!(rel, vec![(1, Instant(1_000))]);
        assert_eq!(log.rcpt.as_ref().expect("rcpt").win_start(), 2);
    }
}
