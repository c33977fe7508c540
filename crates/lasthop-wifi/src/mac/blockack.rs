//! HT-immediate Block Ack: the originator's transmit window and the recipient's reorder buffer
//! (IEEE 802.11-2020 §10.25.6 and §10.25.7).
//!
//! The originator may have MPDUs with sequence numbers in [WinStart, WinStart + WinSize)
//! outstanding; WinStart is the oldest unacknowledged MPDU. Failed MPDUs wait, in sequence
//! order, for retransmission ahead of new ones. The recipient releases MSDUs to the upper layer
//! in sequence order, holding those received after a gap until the gap is filled or the
//! originator gives up on it (modelled as the originator's Block Ack Request moving the
//! window, delivered without delay).
//!
//! Sequence numbers are kept as unbounded `u32` counters; the 12-bit modulo arithmetic of the
//! standard changes nothing while windows stay below 2048.

use std::collections::VecDeque;

/// Originator side of one Block Ack agreement (one transmitter → one receiver, one TID).
#[derive(Clone, Debug)]
pub struct Originator<P> {
    win_size: u32,
    next_seq: u32,
    /// MPDUs awaiting retransmission, sorted by sequence number.
    retx: VecDeque<(u32, P)>,
}

impl<P: Copy> Originator<P> {
    pub fn new(win_size: u32) -> Self {
        Originator { win_size, next_seq: 0, retx: VecDeque::new() }
    }

    /// The agreement's window (WinSizeO), MPDUs.
    #[inline]
    pub fn win_size(&self) -> u32 {
        self.win_size
    }

    /// WinStart while nothing is in flight: the oldest MPDU awaiting retransmission, else the
    /// next new sequence number.
    #[inline]
    pub fn win_start(&self) -> u32 {
        self.retx.front().map_or(self.next_seq, |&(s, _)| s)
    }

    #[inline]
    pub fn has_retx(&self) -> bool {
        !self.retx.is_empty()
    }
    pub fn retx_len(&self) -> usize {
        self.retx.len()
    }
    /// The MPDUs awaiting retransmission, in sequence order.
    pub fn retx_iter(&self) -> impl Iterator<Item = &P> + '_ {
        self.retx.iter().map(|(_, p)| p)
    }

    #[inline]
    pub fn peek_retx(&self) -> Option<(u32, P)> {
        self.retx.front().copied()
    }
    #[inline]
    pub fn pop_retx(&mut self) -> Option<(u32, P)> {
        self.retx.pop_front()
    }

    /// Whether a new MPDU may be given a sequence number, given the window start at the time
    /// the current A-MPDU began (`win_start`).
    #[inline]
    pub fn can_send_new(&self, win_start: u32) -> bool {
        self.next_seq < win_start + self.win_size
    }

    #[inline]
    pub fn assign_seq(&mut self) -> u32 {
        let s = self.next_seq;
        self.next_seq += 1;
        s
    }

    /// Queue a failed MPDU for retransmission (kept in sequence order).
    pub fn push_retx(&mut self, seq: u32, p: P) {
        match self.retx.back() {
            None => self.retx.push_back((seq, p)),
            Some(&(last, _)) if last < seq => self.retx.push_back((seq, p)),
            _ => {
                let i = self.retx.partition_point(|&(s, _)| s < seq);
                self.retx.insert(i, (seq, p));
            }
        }
    }

    /// Drop every MPDU awaiting retransmission (used when a station leaves).
    pub fn drain_retx(&mut self) -> impl Iterator<Item = (u32, P)> + '_ {
        self.retx.drain(..)
    }
}

/// Recipient reorder buffer of one Block Ack agreement.
#[derive(Clone, Debug)]
pub struct Recipient<P> {
    win_start: u32,
    win_size: u32,
    buf: VecDeque<Option<P>>,
}

impl<P: Copy> Recipient<P> {
    pub fn new(win_size: u32) -> Self {
        Recipient { win_start: 0, win_size, buf: VecDeque::new() }
    }

    pub fn win_start(&self) -> u32 {
        self.win_start
    }
    /// MPDUs held waiting for a gap to fill.
    pub fn held(&self) -> usize {
        self.buf.iter().filter(|x| x.is_some()).count()
    }

    /// An MPDU arrived. In-order MSDUs go to `deliver`; duplicates to `duplicate`.
    pub fn receive(&mut self, seq: u32, p: P, mut deliver: impl FnMut(P), mut duplicate: impl FnMut(P)) {
        if seq < self.win_start {
            duplicate(p);
            return;
        }
        if seq >= self.win_start + self.win_size {
            // §10.25.6.6: the window moves so that `seq` is its last position.
            self.advance_to(seq + 1 - self.win_size, &mut deliver);
        }
        let off = (seq - self.win_start) as usize;
        if off == 0 && self.buf.is_empty() {
            // In order with nothing held: straight through.
            self.win_start += 1;
            deliver(p);
            return;
        }
        while self.buf.len() <= off {
            self.buf.push_back(None);
        }
        if self.buf[off].is_some() {
            duplicate(p);
            return;
        }
        self.buf[off] = Some(p);
        self.release(&mut deliver);
    }

    /// The originator will not send anything below `new_start` again (Block Ack Request):
    /// release what is held below it, then whatever is contiguous.
    pub fn advance_to(&mut self, new_start: u32, mut deliver: impl FnMut(P)) {
        while self.win_start < new_start {
            match self.buf.pop_front() {
                Some(Some(p)) => deliver(p),
                Some(None) => {}
                None => {
                    self.win_start = new_start;
                    break;
                }
            }
            self.win_start += 1;
        }
        self.release(&mut deliver);
    }

    fn release(&mut self, deliver: &mut impl FnMut(P)) {
        while let Some(Some(p)) = self.buf.front() {
            let p = *p;
            self.buf.pop_front();
            self.win_start += 1;
            deliver(p);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn originator_window_and_retx_order() {
        let mut o = Originator::<u32>::new(4);
        let ws = o.win_start();
        let mut seqs = Vec::new();
        while o.can_send_new(ws) {
            seqs.push(o.assign_seq());
        }
        assert_eq!(seqs, vec![0, 1, 2, 3]);
        assert!(!o.can_send_new(ws));
        // 1 and 3 fail
        o.push_retx(3, 30);
        o.push_retx(1, 10);
        assert_eq!(o.win_start(), 1);
        assert!(o.can_send_new(o.win_start())); // 4 < 1 + 4
        assert_eq!(o.pop_retx(), Some((1, 10)));
        assert_eq!(o.pop_retx(), Some((3, 30)));
        assert_eq!(o.win_start(), 4);
    }

    #[test]
    fn recipient_reorders_and_skips() {
        let mut r = Recipient::<u32>::new(8);
        let mut out = Vec::new();
        let mut dups = Vec::new();
        r.receive(0, 100, |p| out.push(p), |p| dups.push(p));
        r.receive(2, 102, |p| out.push(p), |p| dups.push(p));
        r.receive(3, 103, |p| out.push(p), |p| dups.push(p));
        assert_eq!(out, vec![100]);
        r.receive(1, 101, |p| out.push(p), |p| dups.push(p));
        assert_eq!(out, vec![100, 101, 102, 103]);
        r.receive(2, 102, |p| out.push(p), |p| dups.push(p));
        assert_eq!(dups, vec![102]);
        // 4 lost for good; 5 held until the originator moves the window past 4
        r.receive(5, 105, |p| out.push(p), |p| dups.push(p));
        assert_eq!(out.len(), 4);
        r.advance_to(5, |p| out.push(p));
        assert_eq!(out, vec![100, 101, 102, 103, 105]);
        assert_eq!(r.win_start(), 6);
        // far beyond the window: it slides
        r.receive(20, 120, |p| out.push(p), |p| dups.push(p));
        assert_eq!(r.win_start(), 13);
        assert_eq!(r.held(), 1);
    }
}
