//! NewReno congestion control: RFC 5681 (TCP Congestion Control) with the RFC 6582 NewReno
//! modification, as used together with the sender's RFC 6675 SACK loss recovery.
//!
//! * Growth only on forward progress (RFC 5681 §3.1: cwnd grows per ACK that cumulatively
//!   acknowledges new data; §3.2 step 1 / RFC 3042: the first two duplicate ACKs leave cwnd
//!   unchanged): an ACK grows cwnd only if it advances `snd_una` ([`AckInfo::cum_acked`] > 0),
//!   and then by all the bytes it newly acknowledges (`newly_acked`, SACKed bytes included);
//!   duplicate ACKs never grow cwnd, so the bytes they SACK are not credited (as in Linux,
//!   `tcp_may_raise_cwnd`).
//! * Slow start (RFC 5681 §3.1) with Appropriate Byte Counting (RFC 3465 §2.2): each ACK
//!   grows cwnd by min(bytes newly acked, L·SMSS), L = 2 by default ([`NewRenoConfig::abc_l`]).
//! * Congestion avoidance (RFC 5681 §3.1, the byte-counting method it RECOMMENDS, with eq. 3 as
//!   the per-ACK alternative; RFC 3465 §2.1): acknowledged bytes accumulate in `bytes_acked`;
//!   each time they reach cwnd, cwnd grows by one SMSS — i.e. +SMSS·SMSS/cwnd per acknowledged
//!   SMSS, +1 SMSS per RTT.
//! * Loss event (fast retransmit, RFC 5681 §3.2 step 2 / RFC 6582 §3.2 step 2, with RFC 6675
//!   §5 step 4.2): ssthresh = max(FlightSize/2, 2·SMSS) (eq. 4), cwnd = ssthresh. No growth while
//!   in recovery: RFC 6675 governs transmission by `pipe` (in place of RFC 5681 §3.2 steps 3-4,
//!   cwnd = ssthresh + 3·SMSS inflated per duplicate ACK), and RFC 6582's "partial ACK deflation"
//!   is not needed with a pipe-based sender.
//! * Recovery exit (RFC 6582 §3.2 step 3, "full acknowledgment"): cwnd stays at ssthresh
//!   (option (2) of RFC 6582 step 3; option (1) is min(ssthresh, max(FlightSize, SMSS) + SMSS);
//!   the sender is responsible for burst avoidance).
//! * Retransmission timeout (RFC 5681 §3.1, eq. 4 and the loss window LW = 1 SMSS): ssthresh
//!   as on a loss event, cwnd = 1 SMSS, then slow start.
//! * Restart after idle (RFC 5681 §4.1, window chosen by the sender): cwnd = min(cwnd, the
//!   restart window), ssthresh = max(ssthresh, ¾·cwnd before), as Linux.
//!
//! The duplicate-ACK counting, the `recover` variable of RFC 6582 and the "ssthresh held after
//! repeated RTO of the same segment" rule (RFC 5681 §3.1, the paragraph after eq. 4) belong
//! to the sender (`crate::tcp`), which decides when to call [`CongestionControl::on_loss_event`]
//! and [`CongestionControl::on_rto`].

use super::{AckInfo, CongestionControl};
use lasthop_core::Instant;

/// Parameters (immutable for the life of a connection).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct NewRenoConfig {
    /// RFC 3465 §2.2 limit L on the per-ACK slow-start increase, in SMSS. Default 2 (the RFC's
    /// recommended value). 0 means no limit.
    pub abc_l: u32,
    /// Initial ssthresh in bytes (RFC 5681 §3.1: "arbitrarily high"). Default `u64::MAX`.
    pub initial_ssthresh: u64,
}

impl Default for NewRenoConfig {
    fn default() -> Self {
        NewRenoConfig {
            abc_l: 2,
            initial_ssthresh: u64::MAX,
        }
    }
}

/// Counters, for reports only (never read by the control law).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct NewRenoStats {
    pub loss_events: u64,
    pub rtos: u64,
    /// cwnd just before the most recent loss event or RTO.
    pub last_cwnd_at_loss: u64,
}

/// RFC 5681 / RFC 6582 NewReno.
#[derive(Clone, Debug)]
pub struct NewReno {
    cfg: NewRenoConfig,
    // --- variables ---
    mss: u32,
    cwnd: u64,
    ssthresh: u64,
    /// RFC 3465 §2.1 byte counter for congestion avoidance.
    bytes_acked: u64,
    in_recovery: bool,
    stats: NewRenoStats,
}

impl NewReno {
    pub fn new(cfg: NewRenoConfig, _now: Instant, mss: u32, initial_cwnd: u64) -> Self {
        NewReno {
            cfg,
            mss: mss.max(1),
            cwnd: initial_cwnd.max(mss as u64),
            ssthresh: cfg.initial_ssthresh,
            bytes_acked: 0,
            in_recovery: false,
            stats: NewRenoStats::default(),
        }
    }

    pub fn config(&self) -> &NewRenoConfig {
        &self.cfg
    }

    pub fn stats(&self) -> NewRenoStats {
        self.stats
    }

    pub fn in_recovery(&self) -> bool {
        self.in_recovery
    }

    /// Set the window after a reduction decided elsewhere (DCTCP's ECN response, which grows
    /// and reacts to loss as NewReno does): ssthresh := `ssthresh`, cwnd := `cwnd`, and the
    /// congestion-avoidance byte counter restarts.
    pub(super) fn set_window(&mut self, cwnd: u64, ssthresh: u64) {
        self.ssthresh = ssthresh.max(self.mss as u64);
        self.cwnd = cwnd.max(self.mss as u64);
        self.bytes_acked = 0;
    }

    /// RFC 5681 eq. 4: ssthresh = max(FlightSize / 2, 2·SMSS).
    fn reduced_ssthresh(&self, bytes_in_flight: u64) -> u64 {
        (bytes_in_flight / 2).max(2 * self.mss as u64)
    }
}

impl CongestionControl for NewReno {
    fn on_ack(&mut self, a: &AckInfo) {
        if a.mss > 0 {
            self.mss = a.mss;
        }
        let mss = self.mss as u64;
        // RFC 6675 / RFC 6582: no window growth during fast recovery. RFC 5681 §3.1 and §3.2
        // step 1, RFC 3042: no growth on duplicate ACKs either, SACK or not — cwnd grows only when
        // snd_una advances (as Linux's tcp_may_raise_cwnd), and then by every byte this ACK newly
        // delivered (cumulatively or by SACK). Bytes SACKed by earlier duplicate ACKs are not
        // credited later (Linux behaves the same way).
        // Linux `tcp_reno_cong_avoid`: no growth unless the sender was cwnd-limited.
        if a.newly_acked == 0 || !a.may_raise_cwnd() || a.in_recovery || self.in_recovery {
            return;
        }
        let mut acked = a.newly_acked;
        if self.cwnd < self.ssthresh {
            // RFC 5681 §3.1 slow start with RFC 3465 §2.2 ABC: cwnd += min(N, L·SMSS).
            let limit = if self.cfg.abc_l == 0 {
                u64::MAX
            } else {
                self.cfg.abc_l as u64 * mss
            };
            let inc = acked.min(limit);
            let room = self.ssthresh - self.cwnd;
            if inc <= room {
                self.cwnd += inc;
                return;
            }
            // Reaching ssthresh: the rest of this ACK counts toward congestion avoidance.
            self.cwnd = self.ssthresh;
            acked = inc - room;
        }
        // RFC 5681 §3.1 congestion avoidance, byte counting (RFC 3465 §2.1):
        // +1 SMSS each time a full cwnd of bytes has been acknowledged.
        self.bytes_acked += acked;
        while self.bytes_acked >= self.cwnd {
            self.bytes_acked -= self.cwnd;
            self.cwnd += mss;
        }
    }

    fn on_loss_event(&mut self, _now: Instant, bytes_in_flight: u64, mss: u32) {
        if mss > 0 {
            self.mss = mss;
        }
        self.stats.loss_events += 1;
        self.stats.last_cwnd_at_loss = self.cwnd;
        // RFC 5681 §3.2 step 2 (eq. 4), RFC 6675 §5 step 4.2: cwnd = ssthresh.
        self.ssthresh = self.reduced_ssthresh(bytes_in_flight);
        self.cwnd = self.ssthresh;
        self.bytes_acked = 0;
        self.in_recovery = true;
    }

    fn on_recovery_exit(&mut self, _now: Instant) {
        // RFC 6582 §3.2 step 3, option (2): cwnd = ssthresh (already the case).
        self.in_recovery = false;
        self.cwnd = self.cwnd.min(self.ssthresh.max(self.mss as u64));
    }

    fn on_rto(&mut self, _now: Instant, bytes_in_flight: u64, mss: u32) {
        if mss > 0 {
            self.mss = mss;
        }
        self.stats.rtos += 1;
        self.stats.last_cwnd_at_loss = self.cwnd;
        // RFC 5681 §3.1: ssthresh per eq. 4, cwnd = LW = 1 SMSS.
        self.ssthresh = self.reduced_ssthresh(bytes_in_flight);
        self.cwnd = self.mss as u64;
        self.bytes_acked = 0;
        self.in_recovery = false;
    }

    fn on_idle_restart(&mut self, _now: Instant, cwnd: u64) {
        let before = self.cwnd;
        self.ssthresh = super::idle_restart_ssthresh(self.ssthresh, before);
        self.cwnd = cwnd.min(before).max(self.mss as u64);
        self.bytes_acked = 0;
    }

    fn cwnd(&self) -> u64 {
        self.cwnd
    }

    fn ssthresh(&self) -> u64 {
        self.ssthresh
    }

    fn pacing_rate(&self) -> Option<u64> {
        None
    }

    fn exit_slow_start(&mut self, _now: Instant) {
        if self.cwnd < self.ssthresh {
            self.ssthresh = self.cwnd;
        }
    }

    fn in_slow_start(&self) -> bool {
        self.cwnd < self.ssthresh
    }

    fn state(&self) -> &'static str {
        if self.in_recovery {
            "recovery"
        } else if self.cwnd < self.ssthresh {
            "slow_start"
        } else {
            "avoidance"
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use lasthop_core::Duration;

    const MSS: u32 = 1000;

    fn ack(now: Instant, n: u64, in_recovery: bool) -> AckInfo {
        AckInfo {
            cwnd_limited: true,
            now,
            newly_acked: n,
            cum_acked: n,
            in_recovery,
            mss: MSS,
            srtt: Duration::from_millis(50),
            ..AckInfo::default()
        }
    }

    /// One round trip of ACK clocking: cwnd/MSS ACKs of one MSS each.
    fn round(cc: &mut NewReno, now: &mut Instant) {
        let n = cc.cwnd() / MSS as u64;
        for _ in 0..n {
            *now += Duration::from_micros(100);
            cc.on_ack(&ack(*now, MSS as u64, false));
        }
    }

    #[test]
    fn slow_start_doubles_and_abc_limits() {
        let mut cc = NewReno::new(
            NewRenoConfig::default(),
            Instant::ZERO,
            MSS,
            10 * MSS as u64,
        );
        let mut now = Instant::ZERO;
        round(&mut cc, &mut now);
        assert_eq!(cc.cwnd(), 20 * MSS as u64);
        // One stretch ACK of 5 MSS grows by at most L = 2 MSS (RFC 3465 §2.2).
        cc.on_ack(&ack(now, 5 * MSS as u64, false));
        assert_eq!(cc.cwnd(), 22 * MSS as u64);
        assert_eq!(cc.state(), "slow_start");
    }

    #[test]
    fn halves_on_loss_event_and_no_growth_in_recovery() {
        let mut cc = NewReno::new(
            NewRenoConfig::default(),
            Instant::ZERO,
            MSS,
            40 * MSS as u64,
        );
        cc.on_loss_event(Instant::ZERO, 40 * MSS as u64, MSS);
        assert_eq!(cc.cwnd(), 20 * MSS as u64);
        assert_eq!(cc.ssthresh(), 20 * MSS as u64);
        assert_eq!(cc.state(), "recovery");
        for _ in 0..100 {
            cc.on_ack(&ack(Instant::ZERO, MSS as u64, true));
        }
        assert_eq!(cc.cwnd(), 20 * MSS as u64);
        cc.on_recovery_exit(Instant::ZERO);
        assert_eq!(cc.state(), "avoidance");
        // Floor of 2 MSS (eq. 4).
        cc.on_loss_event(Instant::ZERO, MSS as u64, MSS);
        assert_eq!(cc.cwnd(), 2 * MSS as u64);
    }

    #[test]
    fn one_mss_after_rto_then_slow_start() {
        let mut cc = NewReno::new(
            NewRenoConfig::default(),
            Instant::ZERO,
            MSS,
            40 * MSS as u64,
        );
        cc.on_rto(Instant::ZERO, 30 * MSS as u64, MSS);
        assert_eq!(cc.cwnd(), MSS as u64);
        assert_eq!(cc.ssthresh(), 15 * MSS as u64);
        assert!(cc.in_slow_start());
        let mut now = Instant::ZERO;
        for _ in 0..4 {
            round(&mut cc, &mut now);
        }
        // 1 -> 2 -> 4 -> 8 -> 15 (capped at ssthresh, remainder into CA).
        assert_eq!(cc.cwnd(), 15 * MSS as u64);
        assert_eq!(cc.state(), "avoidance");
    }

    #[test]
    fn avoidance_adds_one_mss_per_rtt() {
        let mut cc = NewReno::new(
            NewRenoConfig::default(),
            Instant::ZERO,
            MSS,
            40 * MSS as u64,
        );
        cc.on_loss_event(Instant::ZERO, 40 * MSS as u64, MSS);
        cc.on_recovery_exit(Instant::ZERO);
        let mut now = Instant::ZERO;
        for i in 1..=10u64 {
            round(&mut cc, &mut now);
            assert_eq!(cc.cwnd(), (20 + i) * MSS as u64);
        }
    }
}
