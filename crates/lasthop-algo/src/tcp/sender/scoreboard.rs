//! The scoreboard's updates from an ACK (RFC 6675 §5 "update the scoreboard"): SACK blocks
//! mark segments SACKed, the cumulative point removes what it covers. Two records keep the
//! ACK-by-ACK scans short: the previous ACK's blocks (a block that grew is applied from where
//! it ended) and the runs of SACKed segments (`SackedRuns`, which RACK passes over).

use super::{AckAcc, TcpSender};
use crate::tcp::AckSegment;
use alloc::vec::Vec;
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
            self.sacked_runs.insert(self.segs[lo].seq, self.segs[hi - 1].end());
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
                    self.sacked_runs.clear();
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
        self.sacked_runs.drop_below(cum);
    }
}

/// The SACKed parts of the sequence space: sorted, disjoint ranges, each the extent of a run
/// of consecutive SACKed segments, so that a segment starting inside one is SACKed (SACK marks
/// are never undone; a segment leaves only when cumulatively acknowledged).
#[derive(Clone, Debug, Default)]
pub(super) struct SackedRuns(Vec<(u64, u64)>);

impl SackedRuns {
    /// The segments covering [s, e) were just SACKed: add it, merged with the runs it overlaps
    /// or touches.
    pub(super) fn insert(&mut self, s: u64, e: u64) {
        let v = &mut self.0;
        let i = v.partition_point(|r| r.1 < s);
        let mut j = i;
        let (mut a, mut b) = (s, e);
        while j < v.len() && v[j].0 <= e {
            a = a.min(v[j].0);
            b = b.max(v[j].1);
            j += 1;
        }
        if i == j {
            v.insert(i, (a, b));
        } else {
            v[i] = (a, b);
            v.drain(i + 1..j);
        }
    }

    /// Forget the runs wholly below `cum` (their segments are gone).
    pub(super) fn drop_below(&mut self, cum: u64) {
        let n = self.0.partition_point(|r| r.1 <= cum);
        if n > 0 {
            self.0.drain(..n);
        }
    }

    /// Forget every run (a segment was trimmed: the runs may no longer follow segment bounds).
    pub(super) fn clear(&mut self) {
        self.0.clear();
    }

    /// The runs, in sequence order.
    pub(super) fn runs(&self) -> &[(u64, u64)] {
        &self.0
    }
}

#[cfg(test)]
mod tests {
    use super::SackedRuns;

    #[test]
    fn runs_merge_when_they_touch_and_leave_below_the_cumulative_point() {
        let mut r = SackedRuns::default();
        r.insert(10, 20);
        r.insert(40, 50);
        r.insert(60, 70);
        assert_eq!(r.runs(), &[(10, 20), (40, 50), (60, 70)]);
        r.insert(20, 30); // touches the first
        r.insert(45, 65); // bridges the second and third
        assert_eq!(r.runs(), &[(10, 30), (40, 70)]);
        r.insert(0, 5);
        assert_eq!(r.runs(), &[(0, 5), (10, 30), (40, 70)]);
        r.drop_below(30);
        assert_eq!(r.runs(), &[(40, 70)]);
        r.drop_below(50); // a run across the cumulative point stays
        assert_eq!(r.runs(), &[(40, 70)]);
        r.clear();
        assert!(r.runs().is_empty());
    }
}
