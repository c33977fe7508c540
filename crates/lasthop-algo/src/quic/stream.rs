//! Send and receive halves of a byte stream (also used for each space's CRYPTO data).

use super::ranges::RangeSet;

/// Send side: bytes [0, `written`) written by the application; the first transmission of
/// [0, `sent`) happened; `retx` holds lost ranges to send again; `acked` what the peer has.
#[derive(Clone, Debug, Default)]
pub(crate) struct SendBuf {
    pub written: u64,
    /// The application has written its last byte.
    pub fin: bool,
    pub sent: u64,
    pub fin_sent: bool,
    pub fin_acked: bool,
    /// The FIN must be sent again.
    pub fin_retx: bool,
    pub acked: RangeSet,
    pub retx: RangeSet,
}

/// One chunk to put in a frame.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Chunk {
    pub offset: u64,
    pub len: u32,
    pub fin: bool,
    /// New data (counts against flow control), rather than a retransmission.
    pub new: bool,
}

impl SendBuf {
    pub fn write(&mut self, bytes: u64, fin: bool) {
        debug_assert!(!self.fin || bytes == 0);
        self.written += bytes;
        self.fin |= fin;
    }

    /// Something is waiting: retransmissions, or new data below `limit` (flow control), or a FIN.
    pub fn has_pending(&self, limit: u64) -> bool {
        !self.retx.is_empty() || self.fin_retx || (self.sent < self.written.min(limit)) || self.fin_unsent()
    }

    fn fin_unsent(&self) -> bool {
        self.fin && !self.fin_sent && self.sent == self.written
    }

    /// New data exists but flow control (`limit`) holds it back.
    pub fn blocked(&self, limit: u64) -> bool {
        self.sent < self.written && self.sent >= limit
    }

    /// All data and the FIN (if any) acknowledged.
    pub fn all_acked(&self) -> bool {
        self.acked.covers(0, self.written) && (!self.fin || self.fin_acked)
    }

    /// Next chunk of at most `max` bytes, retransmissions first, new data up to `limit`.
    pub fn next_chunk(&mut self, max: u32, limit: u64) -> Option<Chunk> {
        if let Some((s, e)) = self.retx.first() {
            let len = (e - s).min(max as u64);
            if len == 0 {
                return None;
            }
            self.retx.remove(s, s + len);
            let fin = self.fin && s + len == self.written && !self.fin_acked;
            if fin {
                self.fin_retx = false;
            }
            return Some(Chunk { offset: s, len: len as u32, fin, new: false });
        }
        if self.fin_retx {
            self.fin_retx = false;
            return Some(Chunk { offset: self.written, len: 0, fin: true, new: false });
        }
        let lim = self.written.min(limit);
        if self.sent < lim {
            let len = (lim - self.sent).min(max as u64);
            if len == 0 {
                return None;
            }
            let offset = self.sent;
            self.sent += len;
            let fin = self.fin && self.sent == self.written;
            self.fin_sent |= fin;
            return Some(Chunk { offset, len: len as u32, fin, new: true });
        }
        if self.fin_unsent() {
            self.fin_sent = true;
            return Some(Chunk { offset: self.written, len: 0, fin: true, new: false });
        }
        None
    }

    pub fn on_acked(&mut self, offset: u64, len: u32, fin: bool) {
        let end = offset + len as u64;
        self.acked.insert(offset, end);
        // A pending retransmission of data the peer now has is dropped.
        self.retx.remove(offset, end);
        if fin {
            self.fin_acked = true;
            self.fin_retx = false;
        }
    }

    /// The frame was lost: its bytes not acknowledged by other copies are sent again.
    pub fn on_lost(&mut self, offset: u64, len: u32, fin: bool) {
        let end = offset + len as u64;
        if end > offset {
            self.retx.insert(offset, end);
            // Remove the parts acknowledged through other copies.
            for (a, b) in self.acked.iter() {
                if a < end && b > offset {
                    self.retx.remove(a.max(offset), b.min(end));
                }
            }
        }
        if fin && !self.fin_acked {
            self.fin_retx = true;
        }
    }

    /// Ensure the bytes of a PTO probe are sent again without declaring them lost.
    pub fn requeue(&mut self, offset: u64, len: u32, fin: bool) {
        self.on_lost(offset, len, fin);
    }

    pub fn invariants(&self) -> Result<(), &'static str> {
        self.acked.invariants()?;
        self.retx.invariants()?;
        if self.sent > self.written {
            return Err("send buffer: sent beyond written");
        }
        if self.retx.last().is_some_and(|(_, e)| e > self.sent) {
            return Err("send buffer: retransmission of unsent bytes");
        }
        Ok(())
    }
}

/// Receive side: received byte ranges, the in-order delivery point and the final size.
#[derive(Clone, Debug, Default)]
pub(crate) struct RecvBuf {
    pub received: RangeSet,
    /// Bytes [0, delivered) handed to the application.
    pub delivered: u64,
    pub fin_at: Option<u64>,
    pub finished: bool,
    /// Highest offset received (for connection flow control).
    pub highest: u64,
    /// MAX_STREAM_DATA value advertised.
    pub max_adv: u64,
}

impl RecvBuf {
    /// Frame [offset, offset + len) (+ fin). Returns (duplicate bytes, newly in-order bytes,
    /// finished now).
    pub fn on_frame(&mut self, offset: u64, len: u32, fin: bool) -> (u64, u64, bool) {
        let end = offset + len as u64;
        if fin {
            self.fin_at = Some(end);
        }
        let fresh = self.received.insert(offset, end);
        let dup = len as u64 - fresh;
        self.highest = self.highest.max(end);
        let before = self.delivered;
        if let Some((s, e)) = self.received.first() {
            if s == 0 {
                self.delivered = e;
            }
        }
        let newly = self.delivered - before;
        let mut finished_now = false;
        if !self.finished && self.fin_at == Some(self.delivered) {
            self.finished = true;
            finished_now = true;
        }
        (dup, newly, finished_now)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn send_buf_retransmits_only_unacked_bytes() {
        let mut b = SendBuf::default();
        b.write(3000, true);
        let c1 = b.next_chunk(1000, u64::MAX).unwrap();
        let c2 = b.next_chunk(1000, u64::MAX).unwrap();
        let c3 = b.next_chunk(1000, u64::MAX).unwrap();
        assert_eq!((c1.offset, c2.offset, c3.offset, c3.fin), (0, 1000, 2000, true));
        assert_eq!(b.next_chunk(1000, u64::MAX), None);
        b.on_acked(1500, 200, false);
        b.on_lost(1000, 1000, false);
        assert_eq!(b.retx.iter().collect::<alloc::vec::Vec<_>>(), [(1000, 1500), (1700, 2000)]);
        let r = b.next_chunk(400, u64::MAX).unwrap();
        assert_eq!((r.offset, r.len, r.new), (1000, 400, false));
        b.on_lost(2000, 1000, true);
        b.invariants().unwrap();
        assert!(b.fin_retx);
        // Flow control: nothing new beyond the limit.
        let mut f = SendBuf::default();
        f.write(5000, false);
        assert_eq!(f.next_chunk(1000, 500).unwrap().len, 500);
        assert!(f.blocked(500) && !f.has_pending(500));
    }
}
