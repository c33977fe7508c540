//! The scoreboard's updates from an ACK (RFC 6675 §5 "update the scoreboard"): SACK blocks
//! mark segments SACKed, the cumulative point removes what it covers. The previous ACK's blocks
//! are kept, so that a block that grew is applied from where it ended.

use super::{AckAcc, TcpSender};
use crate::tcp::AckSegment;
use lasthop_core::Instant;

impl TcpSender {
    /// Mark the segments fully inside [s, e) SACKed. Returns whether anything was new.
    pub(super) fn apply_sack(&mut self, now: Instant, s: u64, e: u64, acc: &mut AckAcc) -> bool {
        let s = s.max(self.snd_una);
        let e = e.min(self.snd_nxt);
        if s >= e {
            return false;
        }
        let lo = self.segs.partition_point(|g| g.seq < s);
        // (A block inside one segment covers none: `hi` < `lo` is an empty range.)
        let hi = self.segs.partition_point(|g| g.end() <= e).max(lo);
        // The segments of the block that the previous ACK's blocks already SACKed (most of a
        // block that grew) are skipped: nothing in them changes.
        let (skip_lo, skip_hi) = self.sacked_before(s, e, lo, hi);
        let mut any = false;
        for i in (lo..skip_lo).chain(skip_hi..hi) {
            let g = &mut self.segs[i];
            if !g.sacked {
                g.sacked = true;
                let len = g.len as u64;
                self.sacked_bytes += len;
                if g.lost {
                    g.lost = false;
                    self.lost_bytes -= len;
                }
                if g.rtx {
                    g.rtx = false;
                    self.rtx_bytes -= len;
                }
                let g = *g;
                self.on_delivered(now, &g, acc);
                any = true;
            }
        }
        if any {
            self.high_sacked = self.high_sacked.max(e);
        }
        any
    }

    /// The index range, within the block's segments `lo..hi` (those fully inside [s, e)), of
    /// the segments fully inside the previous ACK's block that overlaps [s, e) most: all of
    /// them are SACKed already (SACK marks are never undone). Empty if none overlaps.
    fn sacked_before(&self, s: u64, e: u64, lo: usize, hi: usize) -> (usize, usize) {
        let mut best = (0u64, 0u64);
        for &(ps, pe) in &self.sacked_blocks[..self.n_sacked_blocks as usize] {
            let (a, b) = (ps.max(s), pe.min(e));
            if b > a && b - a > best.1 - best.0 {
                best = (a, b);
            }
        }
        if best.1 <= best.0 {
            return (lo, lo);
        }
        let a = self.segs.partition_point(|g| g.seq < best.0).clamp(lo, hi);
        let b = self.segs.partition_point(|g| g.end() <= best.1).clamp(a, hi);
        (a, b)
    }

    /// Remember the SACK blocks just applied (clipped to the outstanding data), for the next
    /// ACK's `sacked_before`.
    pub(super) fn remember_sack_blocks(&mut self, ack: &AckSegment) {
        let mut n = 0;
        for &(s, e) in ack.sack_blocks() {
            let (s, e) = (s.max(self.snd_una), e.min(self.snd_nxt));
            if s < e {
                self.sacked_blocks[n] = (s, e);
                n += 1;
            }
        }
        self.n_sacked_blocks = n as u8;
    }

    /// Remove everything below `cum` from the scoreboard.
    pub(super) fn apply_cum(&mut self, now: Instant, cum: u64, acc: &mut AckAcc) {
        while let Some(g) = self.segs.front().copied() {
            if g.end() <= cum {
                self.segs.pop_front();
                let len = g.len as u64;
                if g.sacked {
                    self.sacked_bytes -= len;
                } else {
                    if g.lost {
                        self.lost_bytes -= len;
                    }
                    if g.rtx {
                        self.rtx_bytes -= len;
                    }
                    self.on_delivered(now, &g, acc);
                }
            } else {
                if g.seq < cum && !g.sacked {
                    // Cumulative ACK inside a segment (not produced by our receiver): trim.
                    let cut = cum - g.seq;
                    self.reset_repaired();
                    self.n_sacked_blocks = 0;
                    let f = self.segs.front_mut().unwrap();
                    f.seq = cum;
                    f.len -= cut as u32;
                    if f.lost {
                        self.lost_bytes -= cut;
                    }
                    if f.rtx {
                        self.rtx_bytes -= cut;
                    }
                    self.delivered += cut;
                    self.delivered_time = now;
                    acc.newly_acked += cut;
                }
                break;
            }
        }
        self.snd_una = cum;
        self.high_rxt = self.high_rxt.max(cum);
    }
}
