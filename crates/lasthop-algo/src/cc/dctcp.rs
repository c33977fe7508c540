//! DCTCP: Data Center TCP (RFC 8257), the sender's side, over NewReno ([`super::newreno`]).
//!
//! DCTCP reduces its window in proportion to the fraction of its bytes that met congestion,
//! estimated from the CE marks the receiver reports, instead of halving on any mark.
//!
//! * Congestion estimate (RFC 8257 §3.3, steps 1–8; Linux `dctcp_update_alpha`): every ACK adds
//!   its newly acknowledged bytes to `BytesAcked` and, of those, the bytes that arrived CE-marked
//!   ([`AckInfo::ce_acked`], Accurate ECN feedback, RFC 9768) to `BytesMarked`. The observation
//!   window ends on the first ACK whose `delivered` count reaches `WindowEnd`; then
//!   F = BytesMarked/BytesAcked, α ← (1 − g)·α + g·F, the counters restart and the next window
//!   ends at `delivered + prior_in_flight` of that ACK. RFC 8257 puts `WindowEnd` at SND.NXT
//!   and Linux compares `snd_una` with `next_seq` = `snd_nxt`: `delivered + prior_in_flight`
//!   counts the same bytes plus this ACK's own, so a window here is one ACK longer, still one
//!   round trip. A window that has acknowledged nothing observes nothing and stays open.
//! * g = 1/16 ([`DctcpConfig::g`]; Linux's `dctcp_shift_g` = 4, the DCTCP paper's value); α starts
//!   at 1 (RFC 8257 §3.3: "initialized to 1"; Linux's `dctcp_alpha_on_init` default 1024/1024),
//!   so the first reduction of a connection halves.
//! * Congestion signal ([`CongestionControl::on_ecn_mark`], called by the sender at most once per
//!   round trip; RFC 8257 §3.3 "cwnd = cwnd × (1 − DCTCP.Alpha / 2)"; Linux `dctcp_ssthresh`):
//!   ssthresh := max(cwnd·(1 − α/2), 2·SMSS), cwnd := min(cwnd, ssthresh). The sender runs the
//!   episode as a window reduction without retransmission (Linux's CWR state); cwnd does not grow
//!   until it ends ([`CongestionControl::on_recovery_exit`]), as Linux, which runs the reduction
//!   (`tcp_cwnd_reduction`) instead of `cong_avoid` while in CWR. α keeps being updated.
//! * Window growth (RFC 8257 §3.4: "in the same way as conventional TCP"): NewReno's slow start
//!   and congestion avoidance (RFC 5681 with RFC 3465 byte counting, growth on forward progress
//!   only) on every ACK, marked or not (Linux `tcp_reno_cong_avoid`).
//! * Loss (RFC 8257 §3.5: "the same as conventional TCP"): NewReno's response, ssthresh =
//!   max(FlightSize/2, 2·SMSS), cwnd = ssthresh, no growth until the recovery ends; an RTO sets
//!   cwnd to 1 SMSS. This follows the RFC; Linux agrees in substance since `dctcp_react_to_loss`
//!   (ssthresh = max(cwnd/2, 2) on entering Recovery and on an RTO) overrides `dctcp_ssthresh`,
//!   which older kernels also applied to losses (a reduction by α/2 only).
//!
//! Not modelled: the receiver's state machine for delayed ACKs with classic ECE feedback
//! (RFC 8257 §3.2; here the sender learns CE bytes from AccECN counters), Linux's fallback to
//! Reno when ECN is not negotiated (a DCTCP flow without ECN is a configuration error, see
//! [`super::CcConfig::reacts_to`]), and undo of spurious reductions (`dctcp_cwnd_undo`).

use super::newreno::{NewReno, NewRenoConfig, NewRenoStats};
use super::{AckInfo, CongestionControl};
use lasthop_core::Instant;

/// Parameters (immutable for the life of a connection).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct DctcpConfig {
    /// Estimation gain g, 0 < g ≤ 1 (RFC 8257 §3.3). Default 1/16 (Linux `dctcp_shift_g` = 4).
    pub g: f64,
    /// α at the start of the connection, in [0, 1]. Default 1 (RFC 8257 §3.3, Linux
    /// `dctcp_alpha_on_init` = 1024 of 1024).
    pub initial_alpha: f64,
    /// The NewReno growth and loss response underneath (RFC 8257 §3.4, §3.5).
    pub reno: NewRenoConfig,
}

impl Default for DctcpConfig {
    fn default() -> Self {
        DctcpConfig {
            g: 1.0 / 16.0,
            initial_alpha: 1.0,
            reno: NewRenoConfig::default(),
        }
    }
}

/// Counters and estimates, for reports only (never read by the control law).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct DctcpStats {
    /// The congestion estimate α.
    pub alpha: f64,
    /// F of the most recent completed observation window.
    pub last_fraction: f64,
    /// Observation windows completed.
    pub windows: u64,
    /// ECN reductions applied (`on_ecn_mark` calls).
    pub ecn_reductions: u64,
    /// cwnd just before the most recent ECN reduction.
    pub last_cwnd_at_mark: u64,
    /// The NewReno controller underneath (loss events, RTOs).
    pub reno: NewRenoStats,
}

/// RFC 8257 DCTCP.
#[derive(Clone, Debug)]
pub struct Dctcp {
    cfg: DctcpConfig,
    reno: NewReno,
    mss: u32,
    // --- RFC 8257 §3.3 variables ---
    alpha: f64,
    /// `DCTCP.WindowEnd`, as a `delivered` count.
    window_end: u64,
    bytes_acked: u64,
    bytes_marked: u64,
    /// Inside an ECN reduction episode (between `on_ecn_mark` and `on_recovery_exit`).
    in_cwr: bool,
    // --- counters ---
    last_fraction: f64,
    windows: u64,
    ecn_reductions: u64,
    last_cwnd_at_mark: u64,
}

impl Dctcp {
    pub fn new(cfg: DctcpConfig, now: Instant, mss: u32, initial_cwnd: u64) -> Self {
        Dctcp {
            cfg,
            reno: NewReno::new(cfg.reno, now, mss, initial_cwnd),
            mss: mss.max(1),
            alpha: clamp_unit(cfg.initial_alpha),
            window_end: 0,
            bytes_acked: 0,
            bytes_marked: 0,
            in_cwr: false,
            last_fraction: 0.0,
            windows: 0,
            ecn_reductions: 0,
            last_cwnd_at_mark: 0,
        }
    }

    pub fn config(&self) -> &DctcpConfig {
        &self.cfg
    }

    /// The congestion estimate α, in [0, 1].
    pub fn alpha(&self) -> f64 {
        self.alpha
    }

    pub fn stats(&self) -> DctcpStats {
        DctcpStats {
            alpha: self.alpha,
            last_fraction: self.last_fraction,
            windows: self.windows,
            ecn_reductions: self.ecn_reductions,
            last_cwnd_at_mark: self.last_cwnd_at_mark,
            reno: self.reno.stats(),
        }
    }

    /// RFC 8257 §3.3 steps 1–8 for one ACK (Linux `dctcp_update_alpha`).
    fn update_alpha(&mut self, a: &AckInfo) {
        // Steps 1–3: bytes acknowledged, and of them those that were CE-marked.
        self.bytes_acked = self.bytes_acked.saturating_add(a.newly_acked);
        self.bytes_marked = self.bytes_marked.saturating_add(a.ce_acked.min(a.newly_acked));
        // Step 4: the window has not ended (or has observed nothing yet).
        if a.delivered < self.window_end || self.bytes_acked == 0 {
            return;
        }
        // Steps 5–6: F and the EWMA.
        let f = (self.bytes_marked as f64 / self.bytes_acked as f64).min(1.0);
        let g = clamp_unit(self.cfg.g);
        self.alpha = clamp_unit((1.0 - g) * self.alpha + g * f);
        self.last_fraction = f;
        self.windows += 1;
        // Steps 7–8: the next window, counters reset.
        self.window_end = a.delivered.saturating_add(a.prior_in_flight);
        self.bytes_acked = 0;
        self.bytes_marked = 0;
    }
}

/// A finite value clamped to [0, 1] (NaN becomes 0).
fn clamp_unit(x: f64) -> f64 {
    if x.is_nan() {
        0.0
    } else {
        x.clamp(0.0, 1.0)
    }
}

impl CongestionControl for Dctcp {
    fn on_ack(&mut self, a: &AckInfo) {
        if a.mss > 0 {
            self.mss = a.mss;
        }
        self.update_alpha(a);
        // No growth while the ECN reduction episode runs (Linux: CWR state); NewReno handles
        // loss recovery and duplicate ACKs itself.
        if !self.in_cwr {
            self.reno.on_ack(a);
        }
    }

    fn on_ecn_mark(&mut self, _now: Instant, _bytes_in_flight: u64, mss: u32) {
        if mss > 0 {
            self.mss = mss;
        }
        // RFC 8257 §3.3: cwnd × (1 − α/2); Linux `dctcp_ssthresh`: at least 2 segments.
        let cwnd = self.reno.cwnd();
        let reduced = (cwnd as f64 * (1.0 - self.alpha / 2.0)) as u64;
        let ssthresh = reduced.max(2 * self.mss as u64);
        self.reno.set_window(cwnd.min(ssthresh), ssthresh);
        self.last_cwnd_at_mark = cwnd;
        self.ecn_reductions += 1;
        self.in_cwr = true;
    }

    fn on_loss_event(&mut self, now: Instant, bytes_in_flight: u64, mss: u32) {
        // RFC 8257 §3.5: as conventional TCP. A loss during an ECN episode turns it into a
        // loss recovery (Linux: CWR → Recovery).
        self.in_cwr = false;
        self.reno.on_loss_event(now, bytes_in_flight, mss);
    }

    fn on_recovery_exit(&mut self, now: Instant) {
        self.in_cwr = false;
        self.reno.on_recovery_exit(now);
    }

    fn on_rto(&mut self, now: Instant, bytes_in_flight: u64, mss: u32) {
        self.in_cwr = false;
        self.reno.on_rto(now, bytes_in_flight, mss);
    }

    fn on_idle_restart(&mut self, now: Instant, cwnd: u64) {
        self.reno.on_idle_restart(now, cwnd);
    }

    fn exit_slow_start(&mut self, now: Instant) {
        self.reno.exit_slow_start(now);
    }

    fn cwnd(&self) -> u64 {
        self.reno.cwnd()
    }

    fn ssthresh(&self) -> u64 {
        self.reno.ssthresh()
    }

    fn pacing_rate(&self) -> Option<u64> {
        None
    }

    fn in_slow_start(&self) -> bool {
        self.reno.in_slow_start()
    }

    fn state(&self) -> &'static str {
        if self.in_cwr {
            "cwr"
        } else {
            self.reno.state()
        }
    }
}

#[cfg(test)]
mod tests;
