//! Refinements of the sender's loss recovery and window management, each switchable in
//! [`TcpSenderConfig`](super::TcpSenderConfig):
//!
//! * **RFC 8985 §7 Tail Loss Probe** (`tlp`):
//!   - §7.1: TLP.end_seq := None, TLP.is_retrans := false at the start, on entering fast
//!     recovery and on an RTO.
//!   - §7.2: the PTO timer is (re)started after sending new data that is not itself a probe,
//!     and on an ACK that advances `snd_una`, unless the sender is in fast recovery, in RTO
//!     recovery, or holds SACKed data (then it is cancelled). PTO = 2·SRTT, plus
//!     TLP.max_ack_delay when FlightSize is one segment; 1 s without an RTT sample; never
//!     later than the RTO expiry.
//!   - §7.3: on expiry, if no probe is outstanding (TLP.end_seq is None), one probe leaves
//!     through the next `poll_transmit`, whatever cwnd and pacing say: a new segment if there
//!     is one and rwnd allows it, else a retransmission of the highest-sequence segment sent
//!     (TLP.is_retrans := true); TLP.end_seq := SND.NXT. Whether or not a probe is sent, the
//!     RTO timer is re-armed (now + RTO) while data is outstanding. When a PTO and the RTO
//!     fall due together, the PTO is served first (the RTO timer is re-armed by it).
//!   - §7.4.1: the ACK of a retransmitted probe lets RACK detect the losses before it. The
//!     sender's RACK ignores retransmitted segments (Karn-safe, see the sender's notes); the
//!     probe is the one exception, admitted under the RFC's §6.2 step 2 rule: its delivery
//!     counts when it comes at least min_RTT after the probe was sent (an earlier ACK must be
//!     for the original transmission).
//!   - §7.4.2 TLP_process_ack: once the cumulative ACK reaches TLP.end_seq, a probe of new data
//!     is done; a retransmitted probe is spurious if a pure duplicate ACK (no SACK, no advance)
//!     follows (our receiver sends no D-SACK, so that is the only evidence); if instead the
//!     cumulative ACK passes beyond TLP.end_seq first, the probe repaired a loss: the
//!     controller is told of a loss event and its end at once (`on_loss_event` with the
//!     FlightSize before the ACK, then `on_recovery_exit`: cwnd := ssthresh, as Linux's CWR
//!     state ends). BBR is not told (Linux leaves the window of a controller with its own
//!     control function alone at the end of a window reduction).
//! * **RFC 6937 Proportional Rate Reduction** (`prr`), for NewReno and CUBIC (BBR keeps its own
//!   packet conservation in recovery, as in Linux where a controller with its own control
//!   function bypasses PRR; so does Prague, for the same reason): §3 at the start of recovery prr_delivered := 0, prr_out := 0,
//!   RecoverFS := snd.nxt − snd.una; on each ACK in recovery that delivers data
//!   (DeliveredData = change in snd.una + change in SACKed bytes, > 0; the ACK that starts
//!   recovery included) prr_delivered += DeliveredData and, with pipe per RFC 6675 and
//!   ssthresh from the controller: if pipe > ssthresh, sndcnt = ⌈prr_delivered·ssthresh /
//!   RecoverFS⌉ − prr_out; else sndcnt = min(ssthresh − pipe, limit) with limit =
//!   max(prr_delivered − prr_out, DeliveredData) + MSS (PRR-SSRB, default) or
//!   prr_delivered − prr_out (PRR-CRB, `prr_conservative`). Every transmission in recovery
//!   (the fast retransmission included, which leaves regardless) adds to prr_out and uses up
//!   sndcnt. sndcnt is in bytes; a segment leaves while it is positive, so with full-sized
//!   segments the count per ACK is that of the formulas evaluated in segments (as Linux counts
//!   packets). An ACK that delivers nothing leaves the remaining sndcnt as it is (Linux). At
//!   the end of recovery cwnd = ssthresh (the controller's). Differences from Linux:
//!   RecoverFS is the RFC's FlightSize (Linux: cwnd before the reduction), and SSRB's + MSS is
//!   unconditional as in RFC 6937.
//! * **Restart after idle** (`slow_start_after_idle`; RFC 5681 §4.1 with Linux's
//!   `tcp_slow_start_after_idle` = 1 decay): when data is about to be sent with nothing in
//!   flight and the last transmission is more than one RTO ago, the restart window is
//!   RW = min(IW, cwnd) and cwnd is halved once for every further full RTO that elapsed
//!   (k halvings when k·RTO < idle ≤ (k+1)·RTO), never below RW; the controller also keeps
//!   ssthresh ≥ ¾ of the window before the idle period. Not applied with BBR: Linux skips it
//!   for controllers with their own control function, BBR restarting from idle in its own
//!   state machine (not modelled by `crate::cc::bbr`, whose window is left as it was).

use super::{Next, RtxKind, TcpSender};
use crate::cc::{AnyCc, CongestionControl};
use lasthop_core::{Duration, Instant};

/// PTO without an RTT sample (RFC 8985 §7.2).
const PTO_NO_SRTT: Duration = Duration::from_secs(1);

/// Tail Loss Probe state (RFC 8985 §5.3 TLP.* and the PTO timer).
#[derive(Clone, Copy, Debug, Default)]
pub(super) struct Tlp {
    /// The PTO timer.
    pub deadline: Option<Instant>,
    /// The PTO fired with no probe outstanding: the next `poll_transmit` sends the probe.
    pub pending: bool,
    /// TLP.end_seq: SND.NXT when the outstanding probe was sent.
    pub end_seq: Option<u64>,
    /// TLP.is_retrans.
    pub is_retrans: bool,
    /// Start of the segment the outstanding probe retransmitted.
    pub rtx_seq: Option<u64>,
    /// Probes sent.
    pub probes: u64,
    /// Losses repaired by a retransmitted probe (§7.4.2).
    pub loss_repairs: u64,
}

/// Proportional Rate Reduction state for one fast-recovery episode (RFC 6937 §3).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(super) struct Prr {
    /// prr_delivered, bytes.
    pub delivered: u64,
    /// prr_out, bytes.
    pub out: u64,
    /// RecoverFS, bytes.
    pub recover_fs: u64,
    /// What the last delivering ACK allowed and is not yet sent, bytes.
    pub sndcnt: u64,
}

impl Prr {
    /// RFC 6937 §3, at the start of recovery.
    pub fn start(flight_size: u64) -> Prr {
        Prr { delivered: 0, out: 0, recover_fs: flight_size, sndcnt: 0 }
    }

    /// RFC 6937 §3, on an ACK during recovery that delivered `delivered_data` > 0 bytes;
    /// `pipe` is RFC 6675's after the ACK. Returns (and keeps) sndcnt.
    pub fn on_ack(&mut self, delivered_data: u64, pipe: u64, ssthresh: u64, mss: u64, conservative: bool) -> u64 {
        self.delivered += delivered_data;
        self.sndcnt = if pipe > ssthresh {
            // Proportional Rate Reduction: ⌈prr_delivered·ssthresh/RecoverFS⌉ − prr_out.
            let num = self.delivered as u128 * ssthresh as u128;
            let fs = self.recover_fs.max(1) as u128;
            let target = num.div_ceil(fs).min(u64::MAX as u128) as u64;
            target.saturating_sub(self.out)
        } else {
            // Reduction bound. prr_delivered − prr_out may be negative: 0 is equivalent
            // here (SSRB takes its max with DeliveredData ≥ 0; CRB's min then gives ≤ 0).
            let banked = self.delivered.saturating_sub(self.out);
            let limit = if conservative { banked } else { banked.max(delivered_data) + mss };
            (ssthresh - pipe).min(limit)
        };
        self.sndcnt
    }

    /// A transmission of `len` bytes during recovery.
    pub fn on_sent(&mut self, len: u64) {
        self.out += len;
        self.sndcnt = self.sndcnt.saturating_sub(len);
    }
}

impl TcpSender {
    /// A controller with its own control function (Linux's `cong_control` hook: BBR and
    /// tcp_prague's `prague_cong_control`), which Linux's stack leaves its window to: no PRR,
    /// no window reduction at the end of a TLP repair, no restart after idle.
    fn own_control(&self) -> bool {
        matches!(self.cc, AnyCc::Bbr(_) | AnyCc::Prague(_))
    }

    // ------------------------------------------------------------------ PRR

    /// Sending in this recovery episode is governed by PRR.
    pub(super) fn prr_active(&self) -> bool {
        (self.in_recovery || self.ecn_cwr) && self.cfg.prr && !self.own_control()
    }

    /// RFC 6937 §3 per-ACK step (`delivered_data` = this ACK's DeliveredData).
    #[inline]
    pub(super) fn prr_on_ack(&mut self, delivered_data: u64) {
        if !self.prr_active() || delivered_data == 0 {
            return;
        }
        let (pipe, ssthresh) = (self.pipe(), self.cc.ssthresh());
        self.prr.on_ack(delivered_data, pipe, ssthresh, self.cfg.mss as u64, self.cfg.prr_conservative);
    }

    // ------------------------------------------------------------------ TLP

    /// RFC 8985 §7.2: a PTO may run (not in fast or RTO recovery, nothing SACKed, data
    /// outstanding).
    fn tlp_eligible(&self) -> bool {
        self.cfg.tlp && self.no_recovery_nothing_sacked() && self.snd_una < self.snd_nxt
    }

    /// No fast, RTO or ECN recovery runs and nothing is SACKed: Linux's TCP_CA_Open but for
    /// duplicate ACKs (TLP's condition; TSO deferral adds `dupacks == 0`).
    pub(super) fn no_recovery_nothing_sacked(&self) -> bool {
        !self.in_recovery && !self.ecn_cwr && !self.in_loss && self.sacked_bytes == 0
    }

    /// RFC 8985 §7.2 TLP_calc_PTO, as an expiry time.
    fn tlp_expiry(&self, now: Instant) -> Instant {
        let pto = match self.rtt.srtt() {
            Some(s) => {
                let mut p = s * 2;
                if self.snd_nxt - self.snd_una <= self.cfg.mss as u64 {
                    p += self.cfg.tlp_max_ack_delay;
                }
                p
            }
            None => PTO_NO_SRTT,
        };
        let t = now + pto;
        self.rto_deadline.map_or(t, |r| t.min(r.max(now)))
    }

    /// (Re)start the PTO timer if §7.2 allows it, else cancel it.
    pub(super) fn tlp_arm(&mut self, now: Instant) {
        self.tlp.deadline = self.tlp_eligible().then(|| self.tlp_expiry(now));
    }

    /// Cancel the PTO timer if the sender left the state where it may run.
    pub(super) fn tlp_check(&mut self) {
        if !self.tlp_eligible() {
            self.tlp.deadline = None;
            self.tlp.pending = false;
        }
    }

    /// §7.1: a new episode (fast recovery or RTO) forgets the probe.
    pub(super) fn tlp_reset(&mut self) {
        self.tlp.deadline = None;
        self.tlp.pending = false;
        self.tlp.end_seq = None;
        self.tlp.is_retrans = false;
        self.tlp.rtx_seq = None;
    }

    /// §7.3: the PTO timer fired.
    pub(super) fn tlp_on_timeout(&mut self, now: Instant) {
        if self.tlp.deadline.is_none_or(|t| t > now) {
            return;
        }
        self.tlp.deadline = None;
        if !self.tlp_eligible() {
            return;
        }
        if self.tlp.end_seq.is_none() {
            self.tlp.pending = true;
        }
        // "Regardless of whether a loss probe was sent, the sender MUST re-arm the RTO timer,
        // not the PTO timer, if FlightSize is not zero."
        self.rto_deadline = Some(now + self.rto());
    }

    /// §7.3: the probe to send now, if one is due: the next new segment if rwnd allows it,
    /// else the highest-sequence segment sent.
    pub(super) fn tlp_probe(&mut self) -> Option<Next> {
        if !self.tlp.pending {
            return None;
        }
        if !self.tlp_eligible() || self.tlp.end_seq.is_some() {
            self.tlp.pending = false;
            return None;
        }
        let (len, _) = self.new_data_len();
        if len > 0 {
            return Some(Next::New(len));
        }
        // Nothing is SACKed (eligibility), so the last segment is unSACKed.
        let idx = self.segs.len().checked_sub(1)?;
        Some(Next::Rtx { idx, kind: RtxKind::Probe })
    }

    /// §7.3: bookkeeping once the probe has left.
    pub(super) fn tlp_sent(&mut self, seq: u64, retransmit: bool) {
        self.tlp.pending = false;
        self.tlp.end_seq = Some(self.snd_nxt);
        self.tlp.is_retrans = retransmit;
        self.tlp.rtx_seq = retransmit.then_some(seq);
        self.tlp.probes += 1;
    }

    /// §7.4.1: whether the delivery of retransmitted segment `(seq, tx_time)` may advance RACK
    /// (only the probe, and only when the ACK cannot be for its original transmission).
    pub(super) fn tlp_rack_ok(&self, seq: u64, tx_time: Instant, now: Instant) -> bool {
        self.tlp.rtx_seq == Some(seq) && now.saturating_since(tx_time) >= self.min_rtt.unwrap_or(Duration::ZERO)
    }

    /// §7.4.2 TLP_process_ack. `pure_dupack`: the ACK neither advanced `snd_una` nor carried
    /// SACK blocks. `prior_flight`: FlightSize before the ACK.
    #[inline]
    pub(super) fn tlp_on_ack(&mut self, now: Instant, cum_ack: u64, pure_dupack: bool, prior_flight: u64) {
        let Some(end) = self.tlp.end_seq else { return };
        if cum_ack < end {
            return;
        }
        if !self.tlp.is_retrans {
            // The probe carried new data and it was delivered.
            self.tlp.end_seq = None;
        } else if cum_ack > end {
            // Only one of the original and the probe arrived: the probe repaired a loss.
            self.tlp.end_seq = None;
            self.tlp.loss_repairs += 1;
            if !self.own_control() {
                self.cc.on_loss_event(now, prior_flight, self.cfg.mss);
                self.cc.on_recovery_exit(now);
            }
        } else if pure_dupack {
            // Both arrived (the duplicate drew an immediate pure duplicate ACK): no loss.
            self.tlp.end_seq = None;
        } else {
            return;
        }
        self.tlp.rtx_seq = None;
    }

    // ------------------------------------------------------------------ idle restart

    /// Linux-style restart after idle, before data leaves with nothing in flight.
    pub(super) fn restart_after_idle(&mut self, now: Instant) {
        if !self.cfg.slow_start_after_idle
            || self.own_control()
            || self.snd_una != self.snd_nxt
            || self.app_written <= self.snd_nxt
        {
            return;
        }
        let Some(last) = self.last_send else { return };
        let rto = self.rto();
        let mut idle = now.saturating_since(last);
        if idle <= rto {
            return;
        }
        let cwnd = self.cc.cwnd();
        let iw = self.cfg.mss as u64 * self.cfg.initial_cwnd_segments.max(1) as u64;
        let restart = iw.min(cwnd);
        let mut w = cwnd;
        // One halving per RTO elapsed beyond the first, down to the restart window.
        while idle > rto && w > restart {
            idle -= rto;
            w /= 2;
        }
        let w = w.max(restart);
        self.cc.on_idle_restart(now, w);
        self.idle_restarts += 1;
        // The window is restarted once per idle period.
        self.last_send = Some(now);
    }
}
