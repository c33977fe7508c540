//! Loss detection on the sender's scoreboard: RFC 6675's IsLost (DupThresh SACKed segments
//! above a hole) and RACK (RFC 8985 §6.2, §6.3: time-based, with the reordering window and its
//! timer).

use super::TcpSender;
use lasthop_core::{Duration, Instant};

impl TcpSender {
    /// RFC 6675 IsLost, applied to the scoreboard: marks newly lost segments, returns their
    /// bytes.
    pub(super) fn mark_lost(&mut self) -> u64 {
        if self.sacked_bytes == 0 {
            return 0;
        }
        let thresh_segs = self.cfg.dup_thresh as u64;
        let thresh_bytes = (self.cfg.dup_thresh as u64 - 1) * self.cfg.mss as u64;
        let mut lo = self.segs.partition_point(|g| g.seq < self.lost_marked_upto);
        let hi = self.segs.partition_point(|g| g.seq < self.high_sacked);
        // SACKed segments at the bottom of the range can neither be marked nor end the scan
        // below: the next calls start above them (SACK marks are never undone).
        while lo < hi && self.segs[lo].sacked {
            lo += 1;
        }
        if let Some(g) = self.segs.get(lo) {
            self.lost_marked_upto = self.lost_marked_upto.max(g.seq);
        } else if let Some(g) = self.segs.back() {
            self.lost_marked_upto = self.lost_marked_upto.max(g.end());
        }
        let (mut cnt, mut bytes) = (0u64, 0u64);
        let mut boundary = None;
        for j in (lo..hi).rev() {
            let g = &self.segs[j];
            if g.sacked {
                cnt += 1;
                bytes += g.len as u64;
            } else if cnt >= thresh_segs || bytes > thresh_bytes {
                boundary = Some(j);
                break;
            }
        }
        let Some(b) = boundary else { return 0 };
        let mut newly = 0;
        for j in lo..=b {
            let g = &mut self.segs[j];
            if !g.sacked && !g.lost {
                g.lost = true;
                newly += g.len as u64;
            }
        }
        self.lost_bytes += newly;
        self.lost_marked_upto = self.segs[b].end();
        newly
    }

    /// RACK.reo_wnd (RFC 8985 §6.2 step 4, without the D-SACK adaptation: our receiver sends
    /// no D-SACK, so RACK.reo_wnd_mult stays 1): 0 while no reordering has been seen and the
    /// sender is in recovery (fast or RTO) or more than (DupThresh − 1)·SMSS are SACKed, else
    /// min(min_RTT/4, SRTT).
    pub(super) fn rack_reo_wnd(&self) -> Duration {
        let dup_sacked = self.sacked_bytes > (self.cfg.dup_thresh as u64 - 1) * self.cfg.mss as u64;
        if !self.rack_reordering_seen && (self.in_recovery || self.in_loss || dup_sacked) {
            return Duration::ZERO;
        }
        let q = self.min_rtt.unwrap_or(Duration::ZERO) / 4;
        q.min(self.rtt.srtt().unwrap_or(Duration::ZERO))
    }

    /// RACK_detect_loss (RFC 8985 §6.2 step 5) and the reordering timer (§6.3): every
    /// unacknowledged transmission sent before RACK.xmit_ts/RACK.end_seq is lost once now ≥
    /// its xmit_ts + RACK.rtt + RACK.reo_wnd; for the others the timer is armed at the latest
    /// such deadline (the RFC's max of the remaining times). Segments already marked lost and
    /// not retransmitted since are skipped (the RFC's xmit_ts := ∞). A lost retransmission
    /// stops counting in pipe and becomes eligible for NextSeg rule 1 again (HighRxt is moved
    /// back to it). Returns the bytes newly declared lost.
    pub(super) fn rack_detect_loss(&mut self, now: Instant) -> u64 {
        let Some(xts) = self.rack_xmit_ts else { return 0 };
        let (end_seq, reo) = (self.rack_end_seq, self.rack_reo_wnd());
        let wait = self.rack_rtt + reo;
        let (mut newly, mut count, mut timeout) = (0u64, 0u64, None::<Instant>);
        let mut lowest_rtx: Option<u64> = None;
        let (mut lost_add, mut rtx_sub) = (0u64, 0u64);
        let (mut i, mut k) = (0, 0);
        while i < self.segs.len() {
            // SACKed segments that end below RACK.end_seq are passed over: a never retransmitted
            // one was first sent no later than the segment ending at RACK.end_seq (first
            // transmissions go in sequence order), so before RACK.xmit_ts, and would not end the
            // scan; a SACKed one is skipped in any case.
            let seq = self.segs[i].seq;
            let runs = self.sacked_runs.runs();
            while k < runs.len() && runs[k].1 <= seq {
                k += 1;
            }
            if let Some(&(_, run_end)) = runs.get(k).filter(|r| r.0 <= seq) {
                k += 1;
                let j = self.segs.partition_point(|g| g.seq < run_end && g.end() < end_seq);
                if j > i {
                    i = j;
                    continue;
                }
            }
            let g = &mut self.segs[i];
            i += 1;
            if !sent_after(xts, end_seq, g.tx_time, g.end()) {
                // Segments never retransmitted are in send order: none further can qualify
                // (a later retransmitted one was resent after its own first transmission).
                if !g.retransmitted {
                    break;
                }
                continue;
            }
            if g.sacked || (g.lost && !g.rtx) {
                continue;
            }
            let deadline = g.tx_time + wait;
            if now >= deadline {
                let len = g.len as u64;
                if !g.lost {
                    g.lost = true;
                    lost_add += len;
                }
                if g.rtx {
                    g.rtx = false;
                    rtx_sub += len;
                    lowest_rtx.get_or_insert(g.seq);
                }
                newly += len;
                count += 1;
            } else {
                timeout = Some(timeout.map_or(deadline, |t| t.max(deadline)));
            }
        }
        self.lost_bytes += lost_add;
        self.rtx_bytes -= rtx_sub;
        self.rack_lost += count;
        if let Some(s) = lowest_rtx {
            self.high_rxt = self.high_rxt.min(s).max(self.snd_una);
            self.reset_repaired();
        }
        self.rack_deadline = timeout;
        newly
    }
}

/// RACK_sent_after (RFC 8985 §6.2): (t1, seq1) was sent after (t2, seq2).
pub(super) fn sent_after(t1: Instant, seq1: u64, t2: Instant, seq2: u64) -> bool {
    t1 > t2 || (t1 == t2 && seq1 > seq2)
}
