//! TCP Prague: the scalable congestion control of the L4S architecture (RFC 9330, RFC 9331),
//! per draft-briscoe-iccrg-prague-congestion-control-04 ("the draft") and the L4S team's Linux
//! `net/ipv4/tcp_prague.c` (module version 0.7 of the L4S team's tree; "Linux" below), in its
//! fractional-window mode.
//!
//! State: a fractional window `w` in bytes (f64; Linux `frac_cwnd`, 2⁻²⁰ segment units), the
//! congestion estimate α, a round counter, and ssthresh.
//!
//! * Rounds and α (draft §2.3.2 "Moving Average of ECN Feedback"; Linux `prague_update_alpha`,
//!   `prague_new_round`, `prague_should_update_ewma`): a round ends on the first ACK whose
//!   `delivered` reaches `delivered + prior_in_flight` recorded when it started (Linux's
//!   `snd_una` passing `next_seq` = `snd_nxt`; see [`super::dctcp`] on the extra ACK) and,
//!   once the flow is RTT-independent (below), at least `rtt_target` after the previous update.
//!   Then F = CE-marked bytes / bytes acknowledged in the round ([`AckInfo::ce_acked`]) and
//!   α ← (1 − g)·α + g·F, g = 1/16 (`PRAGUE_SHIFT_G` = 4). α is not updated before the first CE
//!   mark of the connection (Linux: "no proof that there's an AQM on the path").
//! * Slow start exits on the first mark (Linux `prague_alpha_mode` = 0, the default: α starts at
//!   0 and the first ACK reporting CE halves `w`, in `prague_update_cwnd`; with
//!   [`PragueConfig::halve_on_first_mark`] off, α starts at 1 and the first reduction halves, as
//!   `prague_alpha_mode` = 1 and earlier versions). Either way ssthresh := cwnd: Linux sets
//!   `snd_ssthresh = snd_cwnd` whenever it lowers `snd_cwnd` towards the fractional window.
//! * Reduction on a congestion signal ([`CongestionControl::on_ecn_mark`], at most once per
//!   round trip by the sender; draft's multiplicative decrease; Linux `prague_enter_cwr`):
//!   w ← w − α·w/2, ssthresh := cwnd. Once the flow is RTT-independent, a signal less than
//!   `rtt_target` after the previous reduction is ignored (Linux's `cwr_stamp` test).
//! * Additive increase (Linux `prague_update_cwnd`, `prague_ai_ack_increase`): only the bytes
//!   acknowledged without CE count ("unsaturated marking": an ACK of N bytes of which C were
//!   marked grows by N − C), on every ACK, inside a CWR episode too ("it is expected to spend
//!   most of its time in TCP_CA_CWR"), not during loss recovery. In slow start w grows by those
//!   bytes up to ssthresh (Linux `tcp_slow_start`); in congestion avoidance by
//!   acked·ai·SMSS/w, i.e. ai SMSS per round, at most the bytes acknowledged (see below).
//! * RTT independence (draft §2.4.4 "Reduced RTT-Dependence"; Linux's default and since 0.7
//!   only heuristic, formerly `RTT_CONTROL_RATE`, `prague_rate_scaled_ai_ack_increase`, target
//!   `prague_rtt_target` = 25 ms): after `rtt_transition_rounds` rounds out of slow start
//!   (`DEFAULT_RTT_TRANSITION` = 4), ai = (srtt/rtt_target)² while srtt < rtt_target, 1
//!   otherwise (and 1 beyond `MAX_SCALED_RTT` = 100 ms or without an RTT sample). A flow of
//!   RTT R < T then gains (R/T)² SMSS per R, i.e. its rate w/R gains SMSS/T² per second, the
//!   same as a flow of RTT T gaining 1 SMSS per T: the window behaves as if the RTT were
//!   max(R, T) (the draft's virtual RTT). α updates and reductions are spaced by T likewise.
//! * Loss (the draft's classic fallback; Linux `prague_enter_loss` on entering Recovery):
//!   w ← w/2, ssthresh := cwnd, no increase until the recovery ends (`prague_ca_open`).
//!   tcp_prague halves its own fractional window (not FlightSize), and its `ssthresh` hook
//!   (`prague_ssthresh`) leaves ssthresh as it is; ssthresh follows the window down.
//! * RTO (Linux `CA_EVENT_LOSS` → `prague_enter_loss`, then `tcp_enter_loss` restarts from one
//!   segment and steps back up one segment per ACK): ssthresh := max(w/2, 2·SMSS), w := 1 SMSS,
//!   then slow start (RFC 5681's loss window, which the per-ACK step-up approximates).
//! * Window floor (the draft's fractional windows: the window may fall below 2 segments, the
//!   rate then being held by pacing; Linux `MIN_CWND_RTT` = 2, `MINIMUM_RATE` = 100 kbit/s): `w` may fall below 2 SMSS,
//!   down to `min_rate`·srtt (the fractional window of Linux's rate floor, 12 500 B/s; 1 byte
//!   before an RTT is known), while [`CongestionControl::cwnd`] reports max(⌈w⌉, 2·SMSS), the
//!   window that blocks transmission (2 segments keep delayed ACKs flowing); the pacing rate,
//!   which follows `w`, holds the flow below 2 SMSS per RTT. Per ACK, congestion avoidance adds
//!   at most the bytes acknowledged (a bound that only binds for w < SMSS, where Linux by
//!   default switches to its rate-based mode, below).
//! * Pacing (Linux `prague_update_pacing_rate`; Prague sets `sk_pacing_rate` itself, so
//!   Linux's generic 200 %/120 % of `tcp_update_pacing_rate` do not apply): w/srtt, doubled
//!   (200 %) while cwnd < ssthresh/2 (slow start), 100 % otherwise, at least `min_rate`.
//!   [`CongestionControl::pacing_rate`] is None until an RTT is known.
//!
//! Not modelled: classic-ECN AQM detection and fallback (`prague_classic_ecn_detection` in
//! earlier versions, off by default, `prague_ecn_fallback` = 0; gone in 0.7); the draft's and
//! earlier Linux's other RTT-independence heuristics (`RTT_CONTROL_SCALABLE`: growth floor of
//! ⅛ SMSS per round; `RTT_CONTROL_ADDITIVE`: target = srtt + 25 ms; `RTT_CONTROL_NONE` is
//! [`PragueConfig::rtt_scaling`] off); Linux 0.7's rate-based mode below 4 MTUs
//! (`prague_cwnd_mode` 2) with its ±3 % pacing modulation per half RTT and its segment-size
//! reduction below 1 Mbit/s; the scaling of the increase by 1500 B/MTU (growth here is one
//! SMSS per round); `snd_cwnd`'s one-segment-per-ACK steps towards `w` (the window here is
//! `w` at once, the sender runs reductions as its CWR episode); the `tcp_is_cwnd_limited`
//! condition on growth; pacing at the flight size when it exceeds `w`; TSO burst sizing;
//! undo of spurious reductions (`prague_cwnd_undo`); Linux's fallback to Reno without ECN (a
//! Prague flow without AccECN is a configuration error, see [`super::CcConfig::reacts_to`]).

use super::{AckInfo, CongestionControl};
use lasthop_core::{Duration, Instant};

/// Linux `MAX_SCALED_RTT`: no RTT scaling of the increase beyond this smoothed RTT.
const MAX_SCALED_RTT: Duration = Duration::from_millis(100);

/// Parameters (immutable for the life of a connection); defaults are Linux's.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct PragueConfig {
    /// EWMA gain g of α. Default 1/16 (`PRAGUE_SHIFT_G` = 4).
    pub g: f64,
    /// RTT independence (draft §2.4.4). Default true (Linux's rate-scaling heuristic); false is
    /// `RTT_CONTROL_NONE`: one SMSS per round at any RTT, α and reductions once per round.
    pub rtt_scaling: bool,
    /// The virtual RTT T below which growth is scaled. Default 25 ms (`prague_rtt_target`).
    pub rtt_target: Duration,
    /// Rounds of congestion avoidance before the flow becomes RTT-independent. Default 4
    /// (`DEFAULT_RTT_TRANSITION` in 0.7; 500 in earlier versions).
    pub rtt_transition_rounds: u32,
    /// Halve the window on the first CE mark, α starting at 0 (true, `prague_alpha_mode` = 0,
    /// the default), or start α at 1 (false, `prague_alpha_mode` = 1).
    pub halve_on_first_mark: bool,
    /// Floor of the pacing rate, bytes/s, and (times srtt) of the fractional window. Default
    /// 12 500 (`MINIMUM_RATE`, 100 kbit/s).
    pub min_rate: u64,
}

impl Default for PragueConfig {
    fn default() -> Self {
        PragueConfig {
            g: 1.0 / 16.0,
            rtt_scaling: true,
            rtt_target: Duration::from_millis(25),
            rtt_transition_rounds: 4,
            halve_on_first_mark: true,
            min_rate: 12_500,
        }
    }
}

/// Estimates and counters, for reports only (never read by the control law).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct PragueStats {
    /// The congestion estimate α.
    pub alpha: f64,
    /// The fractional window, bytes.
    pub window: f64,
    /// The additive increase now in force, SMSS per round.
    pub ai_per_round: f64,
    /// Rounds ended outside slow start (Linux `round`).
    pub rounds: u64,
    /// Whether the RTT-independence rules are in force.
    pub rtt_independent: bool,
    /// A CE mark has been seen.
    pub saw_ce: bool,
    /// Reductions applied on `on_ecn_mark`, and signals ignored by the `rtt_target` spacing.
    pub ecn_reductions: u64,
    pub ecn_signals_skipped: u64,
    pub loss_events: u64,
    pub rtos: u64,
}

/// TCP Prague.
#[derive(Clone, Debug)]
pub struct Prague {
    cfg: PragueConfig,
    mss: u32,
    /// Fractional window, bytes (> 0, finite).
    w: f64,
    ssthresh: u64,
    alpha: f64,
    saw_ce: bool,
    /// End of the current round, as a `delivered` count, and its byte counters.
    round_end: u64,
    round_acked: u64,
    round_marked: u64,
    rounds: u64,
    alpha_stamp: Instant,
    cwr_stamp: Option<Instant>,
    /// Loss recovery (no increase), and the ECN reduction episode (for `state` only).
    in_loss: bool,
    in_cwr: bool,
    /// Most recent non-zero smoothed RTT the sender reported.
    srtt: Duration,
    // --- counters ---
    ecn_reductions: u64,
    ecn_signals_skipped: u64,
    loss_events: u64,
    rtos: u64,
}

impl Prague {
    pub fn new(cfg: PragueConfig, now: Instant, mss: u32, initial_cwnd: u64) -> Self {
        let mss = mss.max(1);
        Prague {
            cfg,
            mss,
            w: initial_cwnd.max(mss as u64) as f64,
            ssthresh: u64::MAX,
            alpha: if cfg.halve_on_first_mark { 0.0 } else { 1.0 },
            saw_ce: false,
            round_end: 0,
            round_acked: 0,
            round_marked: 0,
            rounds: 0,
            alpha_stamp: now,
            cwr_stamp: None,
            in_loss: false,
            in_cwr: false,
            srtt: Duration::ZERO,
            ecn_reductions: 0,
            ecn_signals_skipped: 0,
            loss_events: 0,
            rtos: 0,
        }
    }

    pub fn config(&self) -> &PragueConfig {
        &self.cfg
    }

    /// The congestion estimate α, in [0, 1].
    pub fn alpha(&self) -> f64 {
        self.alpha
    }

    /// The fractional window in bytes (may be below 2 SMSS; see the module docs).
    pub fn window(&self) -> f64 {
        self.w
    }

    pub fn stats(&self) -> PragueStats {
        PragueStats {
            alpha: self.alpha,
            window: self.w,
            ai_per_round: self.ai_per_round(),
            rounds: self.rounds,
            rtt_independent: self.rtt_independent(),
            saw_ce: self.saw_ce,
            ecn_reductions: self.ecn_reductions,
            ecn_signals_skipped: self.ecn_signals_skipped,
            loss_events: self.loss_events,
            rtos: self.rtos,
        }
    }

    /// Linux `prague_is_rtt_indep`: out of slow start for `rtt_transition_rounds` rounds.
    fn rtt_independent(&self) -> bool {
        self.cfg.rtt_scaling && !self.in_slow_start() && self.rounds >= self.cfg.rtt_transition_rounds as u64
    }

    /// Additive increase in SMSS per round (Linux `prague_ai_ack_increase` with
    /// `prague_rate_scaled_ai_ack_increase`): (srtt/T)² below the target, else 1.
    fn ai_per_round(&self) -> f64 {
        let t = self.cfg.rtt_target;
        let r = self.srtt;
        if !self.cfg.rtt_scaling
            || self.rounds < self.cfg.rtt_transition_rounds as u64
            || r.is_zero()
            || r > MAX_SCALED_RTT
            || r >= t
        {
            return 1.0;
        }
        let q = r.as_secs_f64() / t.as_secs_f64();
        q * q
    }

    /// The lowest fractional window: `min_rate`·srtt (Linux's rate floor), at least 1 byte.
    fn w_floor(&self) -> f64 {
        (self.cfg.min_rate as f64 * self.srtt.as_secs_f64()).max(1.0)
    }

    fn set_w(&mut self, w: f64) {
        let w = if w.is_finite() { w } else { self.w };
        self.w = w.max(self.w_floor());
    }

    /// A reduction lowered the window: ssthresh follows it (Linux sets `snd_ssthresh =
    /// snd_cwnd` on each decrement of `snd_cwnd`), which also ends slow start.
    fn ssthresh_follows(&mut self) {
        self.ssthresh = self.cwnd();
    }

    /// Linux `prague_update_cwnd` (fractional-window mode) for one ACK; `ce` ≤ newly acked.
    fn update_window(&mut self, a: &AckInfo, ce: u64) {
        if ce > 0 {
            if !self.saw_ce && self.cfg.halve_on_first_mark {
                self.set_w(self.w / 2.0);
                self.ssthresh_follows();
            }
            self.saw_ce = true;
        }
        let unmarked = a.newly_acked - ce;
        if unmarked == 0 || self.in_loss || a.in_recovery {
            return;
        }
        let mut acked = unmarked as f64;
        if self.in_slow_start() {
            // Linux `tcp_slow_start`: grow by the acknowledged bytes up to ssthresh; the rest
            // counts towards congestion avoidance.
            let grown = (self.w + acked).min(self.ssthresh as f64).max(self.w);
            acked -= grown - self.w;
            self.set_w(grown);
            if acked <= 0.0 {
                return;
            }
        }
        let inc = acked * self.ai_per_round() * self.mss as f64 / self.w;
        self.set_w(self.w + inc.min(acked));
    }

    /// End of a round (Linux `prague_update_alpha`, then `prague_new_round`).
    fn end_round(&mut self, a: &AckInfo) {
        if self.saw_ce {
            let f = (self.round_marked as f64 / self.round_acked as f64).min(1.0);
            let g = self.cfg.g.clamp(0.0, 1.0);
            self.alpha = ((1.0 - g) * self.alpha + g * f).clamp(0.0, 1.0);
            self.alpha_stamp = a.now;
        }
        self.round_end = a.delivered.saturating_add(a.prior_in_flight);
        self.round_acked = 0;
        self.round_marked = 0;
        if !self.in_slow_start() {
            self.rounds += 1;
        }
    }
}

impl CongestionControl for Prague {
    fn on_ack(&mut self, a: &AckInfo) {
        if a.mss > 0 {
            self.mss = a.mss;
        }
        if !a.srtt.is_zero() {
            self.srtt = a.srtt;
        }
        let ce = a.ce_acked.min(a.newly_acked);
        self.update_window(a, ce);
        self.round_acked = self.round_acked.saturating_add(a.newly_acked);
        self.round_marked = self.round_marked.saturating_add(ce);
        // Linux `prague_should_update_ewma`: the round trip has elapsed and, once
        // RTT-independent, so has the target RTT since the last update. A round that
        // acknowledged nothing observed nothing and stays open.
        let elapsed = a.delivered >= self.round_end && self.round_acked > 0;
        if elapsed && (!self.rtt_independent() || a.now.saturating_since(self.alpha_stamp) >= self.cfg.rtt_target) {
            self.end_round(a);
        }
    }

    fn on_ecn_mark(&mut self, now: Instant, _bytes_in_flight: u64, mss: u32) {
        if mss > 0 {
            self.mss = mss;
        }
        self.in_cwr = true;
        // Linux `prague_enter_cwr`: at most one reduction per target RTT once RTT-independent.
        if self.rtt_independent() && self.cwr_stamp.is_some_and(|t| now.saturating_since(t) < self.cfg.rtt_target) {
            self.ecn_signals_skipped += 1;
            return;
        }
        self.cwr_stamp = Some(now);
        self.set_w(self.w - self.alpha * self.w / 2.0);
        self.ssthresh_follows();
        self.ecn_reductions += 1;
    }

    fn on_loss_event(&mut self, _now: Instant, _bytes_in_flight: u64, mss: u32) {
        if mss > 0 {
            self.mss = mss;
        }
        // Linux `prague_enter_loss`: halve the fractional window; no increase until Open.
        self.loss_events += 1;
        self.set_w(self.w / 2.0);
        self.ssthresh_follows();
        self.in_loss = true;
        self.in_cwr = false;
    }

    fn on_recovery_exit(&mut self, _now: Instant) {
        // Linux `prague_ca_open`.
        self.in_loss = false;
        self.in_cwr = false;
    }

    fn on_rto(&mut self, _now: Instant, _bytes_in_flight: u64, mss: u32) {
        if mss > 0 {
            self.mss = mss;
        }
        self.rtos += 1;
        let mss = self.mss as u64;
        self.ssthresh = ((self.w / 2.0) as u64).max(2 * mss);
        self.set_w(mss as f64);
        self.in_loss = false;
        self.in_cwr = false;
    }

    fn on_idle_restart(&mut self, _now: Instant, cwnd: u64) {
        let before = self.cwnd();
        self.ssthresh = super::idle_restart_ssthresh(self.ssthresh, before);
        self.set_w(self.w.min(cwnd.max(self.mss as u64) as f64));
    }

    fn exit_slow_start(&mut self, _now: Instant) {
        if self.in_slow_start() {
            self.ssthresh = self.cwnd();
        }
    }

    fn cwnd(&self) -> u64 {
        // Linux `prague_frac_cwnd_to_snd_cwnd`: rounded up, at least 2 segments.
        (libm::ceil(self.w) as u64).max(2 * self.mss as u64)
    }

    fn ssthresh(&self) -> u64 {
        self.ssthresh
    }

    fn pacing_rate(&self) -> Option<u64> {
        if self.srtt.is_zero() {
            return None;
        }
        // Linux `prague_update_pacing_rate`: 200 % while cwnd < ssthresh/2, else 100 %.
        let ratio = if self.cwnd() < self.ssthresh / 2 { 2.0 } else { 1.0 };
        let rate = ratio * self.w / self.srtt.as_secs_f64();
        Some((rate as u64).max(self.cfg.min_rate).max(1))
    }

    fn in_slow_start(&self) -> bool {
        self.cwnd() < self.ssthresh
    }

    fn state(&self) -> &'static str {
        if self.in_loss {
            "recovery"
        } else if self.in_cwr {
            "cwr"
        } else if self.in_slow_start() {
            "slow_start"
        } else {
            "avoidance"
        }
    }
}

#[cfg(test)]
mod tests;
