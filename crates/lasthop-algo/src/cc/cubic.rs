//! CUBIC congestion control (RFC 9438) with HyStart++ slow start (RFC 9406) or Linux's HyStart.
//!
//! CUBIC (RFC 9438 §4):
//! * §4.2 window increase function W_cubic(t) = C·(t − K)³ + W_max, in SMSS units, with
//!   K = ∛((W_max − cwnd_epoch)/C); t is the time since the start of the current congestion
//!   avoidance stage (the epoch, started by the first ACK in congestion avoidance after slow
//!   start or a congestion event). The target is W_cubic(t + RTT) (RTT = smoothed RTT) clamped
//!   to [cwnd, 1.5·cwnd]; in the concave (§4.4) and convex (§4.5) regions cwnd grows by
//!   (target − cwnd)/cwnd per acknowledged SMSS.
//! * §4.3 Reno-friendly region: W_est starts at cwnd_epoch and grows by
//!   α_cubic·segments_acked/cwnd, α_cubic = 3(1 − β)/(1 + β), switching to α = 1 once
//!   W_est ≥ cwnd_prior; if W_cubic(t) < W_est, cwnd = W_est.
//! * §4.6 multiplicative decrease: ssthresh = max(cwnd·β_cubic, 2·SMSS), cwnd = ssthresh. The
//!   RFC's equation uses flight_size·β_cubic; §4.6 also allows cwnd·β_cubic, provided other
//!   measures keep cwnd from growing while less than cwnd is in flight.
//! * §4.7 fast convergence: W_max = cwnd·(1 + β)/2 if cwnd < W_max, else W_max = cwnd.
//! * §4.8 timeout: ssthresh as in §4.6, cwnd = 1 SMSS (RFC 5681), and in the first congestion
//!   avoidance stage after the timeout K = 0 and W_max = cwnd_epoch.
//! * §4.10 slow start: HyStart++ (below) or standard slow start (RFC 5681 with RFC 3465 ABC);
//!   when HyStart++ leaves slow start without a loss, W_max is undefined: K = 0 and
//!   W_max = cwnd_epoch for that stage.
//!
//! HyStart++ (RFC 9406 §4.2), used only in the initial slow start (RFC 9406 §4.3: later slow
//! starts, after an RTO, are bounded by ssthresh and use standard slow start):
//! * Rounds: RFC 9406 delimits a round by windowEnd = SND.NXT at its start. Equivalently here,
//!   a round ends when an ACK's [`RateSample::prior_delivered`](super::RateSample) reaches the
//!   connection's `delivered` count recorded at the start of the round (the same round counting
//!   BBR uses). ACKs without a rate sample do not advance rounds.
//! * Per round: lastRoundMinRTT ← currentRoundMinRTT, currentRoundMinRTT ← ∞, rttSampleCount ← 0.
//! * Slow start: cwnd += min(N, L·SMSS); after N_RTT_SAMPLE samples, if currentRoundMinRTT ≥
//!   lastRoundMinRTT + clamp(lastRoundMinRTT/MIN_RTT_DIVISOR, MIN_RTT_THRESH, MAX_RTT_THRESH),
//!   enter Conservative Slow Start (CSS) with cssBaselineMinRtt = currentRoundMinRTT.
//! * CSS: cwnd += min(N, L·SMSS)/CSS_GROWTH_DIVISOR; after N_RTT_SAMPLE samples in a round, if
//!   currentRoundMinRTT < cssBaselineMinRtt, resume slow start; after CSS_ROUNDS rounds in CSS,
//!   enter congestion avoidance with ssthresh = cwnd. A loss in slow start or CSS ends
//!   HyStart++ (normal loss response).
//!
//! Linux's HyStart ([`HyStartVariant::Linux`]; `hystart_update`, `bictcp_hystart_reset` and
//! `cubictcp_acked` in net/ipv4/tcp_cubic.c, Linux 5.7 and later, after Ha and Rhee, "Taming the
//! Elephants: New TCP Slow Start", 2011): Linux never adopted HyStart++; its CUBIC leaves slow
//! start for congestion avoidance at once, with ssthresh = cwnd, when either detector fires.
//! * Rounds as above (Linux: snd_una passing `end_seq`, snd_nxt at the round's start); a round
//!   start records its time (`round_start`, `last_ack`) and clears `curr_rtt` and `sample_cnt`.
//! * Only ACKs with an RTT sample are seen (`sample->rtt_us < 0` returns), only in slow start,
//!   and only from cwnd ≥ `hystart_low_window` (16 segments).
//! * Delay: `curr_rtt` is the round's minimum RTT; from the ninth sample of a round on
//!   (`HYSTART_MIN_SAMPLES` = 8), exit if curr_rtt > delay_min + clamp(delay_min/8, 4 ms, 16 ms).
//!   `delay_min` is CUBIC's own minimum RTT, from every ACK except those within 1 s (HZ) of a
//!   congestion-avoidance epoch's start, forgotten at an RTO (`bictcp_reset`).
//! * ACK train: an ACK within `hystart_ack_delta_us` (2 ms) of the train's last one extends
//!   the train (a longer gap ends it for the round); exit once the train spans more than
//!   delay_min + ack_delay from the round's start, halved for a sender that does not pace
//!   (`SK_PACING_NONE`), where ack_delay = min(1 ms, 4 · 65 536 B / pacing rate)
//!   (`hystart_ack_delay`, `sk_gso_max_size` 65 536) and the pacing rate is Linux's slow-start
//!   one, 2 · cwnd / srtt (`tcp_update_pacing_rate`, `tcp_pacing_ss_ratio` 200 %).
//! * Growth in slow start is Linux's `tcp_slow_start`: cwnd += acknowledged, no RFC 3465 limit,
//!   capped at ssthresh. An RTO (`cubictcp_state` to TCP_CA_Loss) arms HyStart again.
//!
//! Growth happens only on ACKs that advance snd_una ([`AckInfo::cum_acked`] > 0; RFC 5681 §3.1
//! grows cwnd per ACK that cumulatively acknowledges new data, and §3.2 step 1 / RFC 3042 leave
//! cwnd unchanged on the first two duplicate ACKs), by `newly_acked` (SACKed bytes included).
//!
//! Restart after idle (RFC 5681 §4.1, window chosen by the sender): cwnd = min(cwnd, the
//! restart window), ssthresh = max(ssthresh, ¾·cwnd before) as Linux, and the next congestion
//! avoidance stage starts a new epoch (§4.2).
//!
//! Chromium emulation (`num_connections` = N > 1, Chromium's `CubicBytes` default is 2): the
//! multiplicative decrease uses β_eff = (N − 1 + β)/N and the Reno-friendly slope
//! α = 3N²(1 − β_eff)/(1 + β_eff), as Chromium's CUBIC emulates N TCP flows; N = 1 is RFC 9438.
//!
//! Linux's initial growth (`bictcp_update` in net/ipv4/tcp_cubic.c: "The initial growth of
//! cubic function may be too conservative when the available bandwidth is still unknown"):
//! until the first congestion event of the connection, and again after an RTO (Linux's
//! `last_max_cwnd` is 0 then: `bictcp_reset` on entering Loss), cwnd grows by at least one
//! SMSS per 20 acknowledged (5 % per RTT) in the concave and convex regions, so a window that
//! left HyStart++ early still finds a deep buffer in seconds, not in the ~∛(W/C) of the cubic
//! alone. Switch `initial_growth`; off for Chromium's QUIC, whose CubicBytes has no such floor.
//!
//! Not implemented: idle-period exclusion of t (§4.2 and §5.8, an application-limited sender
//! question), spurious-congestion undo (§4.9), the flight_size form of §4.6, ECN.

use super::{AckInfo, CongestionControl};
use lasthop_core::{Duration, Instant};

/// Which slow-start exit runs (see the module documentation).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum HyStartVariant {
    /// HyStart++ (RFC 9406): Conservative Slow Start, then congestion avoidance.
    #[default]
    Rfc9406,
    /// Linux's HyStart (net/ipv4/tcp_cubic.c): straight to congestion avoidance.
    Linux,
}

impl HyStartVariant {
    /// The spec's names, in the order of the variants.
    pub const NAMES: [&'static str; 2] = ["hystart++", "linux"];

    pub fn name(self) -> &'static str {
        match self {
            HyStartVariant::Rfc9406 => Self::NAMES[0],
            HyStartVariant::Linux => Self::NAMES[1],
        }
    }

    pub fn from_name(name: &str) -> Option<Self> {
        match name {
            n if n == Self::NAMES[0] => Some(HyStartVariant::Rfc9406),
            n if n == Self::NAMES[1] => Some(HyStartVariant::Linux),
            _ => None,
        }
    }
}

/// HyStart parameters: RFC 9406 §4.3's recommended values as defaults; Linux's HyStart reads
/// `min_rtt_thresh`, `max_rtt_thresh`, `min_rtt_divisor` and `n_rtt_sample` too (its
/// `HYSTART_DELAY_MIN`, `HYSTART_DELAY_MAX`, the shift by 3 and `HYSTART_MIN_SAMPLES` have the
/// same values), and `paced`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct HyStartConfig {
    /// Use HyStart in slow start. Default true.
    pub enabled: bool,
    /// HyStart++ or Linux's HyStart. Default HyStart++.
    pub variant: HyStartVariant,
    /// Linux: `hystart_low_window`, in SMSS. Default 16.
    pub low_window: u32,
    /// Linux: `hystart_ack_delta_us`. Default 2 ms.
    pub ack_delta: Duration,
    /// The sender paces: L = infinity (RFC 9406 §4.3). Default false (L = `l_non_paced`).
    pub paced: bool,
    /// L for a non-paced sender, in SMSS. Default 8.
    pub l_non_paced: u32,
    /// MIN_RTT_THRESH, default 4 ms.
    pub min_rtt_thresh: Duration,
    /// MAX_RTT_THRESH, default 16 ms.
    pub max_rtt_thresh: Duration,
    /// MIN_RTT_DIVISOR, default 8.
    pub min_rtt_divisor: u32,
    /// N_RTT_SAMPLE, default 8.
    pub n_rtt_sample: u32,
    /// CSS_GROWTH_DIVISOR, default 4.
    pub css_growth_divisor: u32,
    /// CSS_ROUNDS, default 5.
    pub css_rounds: u32,
}

impl Default for HyStartConfig {
    fn default() -> Self {
        HyStartConfig {
            enabled: true,
            variant: HyStartVariant::Rfc9406,
            low_window: 16,
            ack_delta: Duration::from_millis(2),
            paced: false,
            l_non_paced: 8,
            min_rtt_thresh: Duration::from_millis(4),
            max_rtt_thresh: Duration::from_millis(16),
            min_rtt_divisor: 8,
            n_rtt_sample: 8,
            css_growth_divisor: 4,
            css_rounds: 5,
        }
    }
}

/// CUBIC parameters (RFC 9438 defaults: β_cubic §4.6, C §5.1).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct CubicConfig {
    /// C, in SMSS/s³. Default 0.4 (RFC 9438 §5.1).
    pub c: f64,
    /// β_cubic. Default 0.7 (RFC 9438 §4.6).
    pub beta: f64,
    /// Fast convergence (RFC 9438 §4.7). Default true.
    pub fast_convergence: bool,
    /// Reno-friendly region (RFC 9438 §4.3). Default true.
    pub reno_friendly: bool,
    /// RFC 3465 limit L (in SMSS) for standard slow start, used when HyStart++ is off or after
    /// the initial slow start. Default 2. 0 means no limit.
    pub abc_l: u32,
    pub hystart: HyStartConfig,
    /// Number of emulated connections N (see the module docs). Default 1 (RFC 9438).
    pub num_connections: u32,
    /// Linux's growth floor of 5 % per RTT while no congestion event defines W_max (see the
    /// module docs). Default true.
    pub initial_growth: bool,
}

impl Default for CubicConfig {
    fn default() -> Self {
        CubicConfig {
            c: 0.4,
            beta: 0.7,
            fast_convergence: true,
            reno_friendly: true,
            abc_l: 2,
            hystart: HyStartConfig::default(),
            num_connections: 1,
            initial_growth: true,
        }
    }
}

/// Which part of the control law set cwnd on the most recent ACK.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum CubicRegion {
    #[default]
    SlowStart,
    /// HyStart++ Conservative Slow Start.
    Css,
    /// RFC 9438 §4.3.
    RenoFriendly,
    /// RFC 9438 §4.4 (cwnd below W_max).
    Concave,
    /// RFC 9438 §4.5 (cwnd at or above W_max).
    Convex,
    Recovery,
}

/// How the initial slow start ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SlowStartExit {
    /// HyStart++ finished CSS_ROUNDS of CSS (RFC 9406 §4.2), or Linux's HyStart fired.
    HyStart,
    Loss,
    Rto,
    /// cwnd reached a configured ssthresh.
    Ssthresh,
    /// An external delay-based detector asked to leave ([`CongestionControl::exit_slow_start`]).
    Delay,
}

/// Snapshot for reports (assembled from the variables; never read by the control law).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct CubicStats {
    pub region: CubicRegion,
    /// W_max in bytes (None before the first congestion event / CA stage).
    pub w_max: Option<u64>,
    /// K in seconds for the current epoch.
    pub k_secs: f64,
    /// Start of the current congestion-avoidance epoch.
    pub epoch_start: Option<Instant>,
    /// cwnd at the epoch start, bytes.
    pub cwnd_epoch: u64,
    /// W_est, bytes (RFC 9438 §4.3).
    pub w_est: u64,
    pub loss_events: u64,
    pub rtos: u64,
    /// Number of times HyStart++ entered CSS, and resumed slow start from CSS.
    pub hystart_css_entries: u32,
    pub hystart_css_resumes: u32,
    /// When HyStart++ last entered CSS.
    pub hystart_css_at: Option<Instant>,
    /// When and how the initial slow start ended.
    pub slow_start_exit: Option<(Instant, SlowStartExit)>,
    /// HyStart++ round counter (rounds seen during the initial slow start).
    pub hystart_rounds: u64,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum HyPhase {
    SlowStart,
    Css,
    /// Not (or no longer) in the initial slow start, or disabled.
    Off,
}

#[derive(Clone, Debug)]
struct HyStart {
    phase: HyPhase,
    round_end_delivered: u64,
    rounds: u64,
    last_round_min_rtt: Option<Duration>,
    current_round_min_rtt: Option<Duration>,
    rtt_sample_count: u32,
    css_baseline_min_rtt: Option<Duration>,
    css_rounds_done: u32,
    /// Linux: `found`, the start of the round and the ACK train's last ACK, CUBIC's
    /// `delay_min`.
    found: bool,
    round_start: Instant,
    last_ack: Instant,
    delay_min: Option<Duration>,
}

/// RFC 9438 CUBIC.
#[derive(Clone, Debug)]
pub struct Cubic {
    cfg: CubicConfig,
    // --- variables (RFC 9438 §4.1.2) ---
    mss: u32,
    cwnd: u64,
    /// Fractional bytes of cwnd growth not yet applied.
    cwnd_frac: f64,
    ssthresh: u64,
    in_recovery: bool,
    /// Bytes. None until the first congestion event or CA stage.
    w_max: Option<f64>,
    cwnd_prior: f64,
    k: f64,
    t_epoch: Option<Instant>,
    cwnd_epoch: f64,
    w_est: f64,
    /// The next CA stage is the first after an RTO (§4.8).
    after_rto: bool,
    /// A congestion event has set W_max since the start or the last RTO (Linux's
    /// `last_max_cwnd` ≠ 0).
    loss_w_max: bool,
    region: CubicRegion,
    hy: HyStart,
    // --- counters ---
    loss_events: u64,
    rtos: u64,
    css_entries: u32,
    css_resumes: u32,
    css_at: Option<Instant>,
    ss_exit: Option<(Instant, SlowStartExit)>,
}

impl Cubic {
    pub fn new(cfg: CubicConfig, _now: Instant, mss: u32, initial_cwnd: u64) -> Self {
        let mss = mss.max(1);
        Cubic {
            cfg,
            mss,
            cwnd: initial_cwnd.max(mss as u64),
            cwnd_frac: 0.0,
            ssthresh: u64::MAX,
            in_recovery: false,
            w_max: None,
            cwnd_prior: 0.0,
            k: 0.0,
            t_epoch: None,
            cwnd_epoch: 0.0,
            w_est: 0.0,
            after_rto: false,
            loss_w_max: false,
            region: CubicRegion::SlowStart,
            hy: HyStart {
                phase: if cfg.hystart.enabled {
                    HyPhase::SlowStart
                } else {
                    HyPhase::Off
                },
                round_end_delivered: 0,
                rounds: 0,
                last_round_min_rtt: None,
                current_round_min_rtt: None,
                rtt_sample_count: 0,
                css_baseline_min_rtt: None,
                css_rounds_done: 0,
                found: !cfg.hystart.enabled,
                round_start: Instant::ZERO,
                last_ack: Instant::ZERO,
                delay_min: None,
            },
            loss_events: 0,
            rtos: 0,
            css_entries: 0,
            css_resumes: 0,
            css_at: None,
            ss_exit: None,
        }
    }

    pub fn config(&self) -> &CubicConfig {
        &self.cfg
    }

    pub fn stats(&self) -> CubicStats {
        CubicStats {
            region: self.region,
            w_max: self.w_max.map(|w| w as u64),
            k_secs: self.k,
            epoch_start: self.t_epoch,
            cwnd_epoch: self.cwnd_epoch as u64,
            w_est: self.w_est as u64,
            loss_events: self.loss_events,
            rtos: self.rtos,
            hystart_css_entries: self.css_entries,
            hystart_css_resumes: self.css_resumes,
            hystart_css_at: self.css_at,
            slow_start_exit: self.ss_exit,
            hystart_rounds: self.hy.rounds,
        }
    }

    /// β_eff = (N − 1 + β)/N for N emulated connections (β for N = 1).
    fn beta(&self) -> f64 {
        let n = self.cfg.num_connections.max(1) as f64;
        (n - 1.0 + self.cfg.beta) / n
    }

    /// W_cubic(t) in bytes (RFC 9438 §4.2, Figure 1; C is in SMSS/s³).
    pub fn w_cubic(&self, t_secs: f64) -> f64 {
        let d = t_secs - self.k;
        self.cfg.c * d * d * d * self.mss as f64 + self.w_max.unwrap_or(self.cwnd_epoch)
    }

    fn add_bytes(&mut self, inc: f64) {
        let total = self.cwnd_frac + inc;
        if total <= 0.0 {
            self.cwnd_frac = total.max(-(self.cwnd as f64));
            return;
        }
        let whole = libm::floor(total);
        self.cwnd = self.cwnd.saturating_add(whole as u64);
        self.cwnd_frac = total - whole;
    }

    fn set_cwnd_f(&mut self, w: f64) {
        let w = w.max(self.mss as f64);
        let whole = libm::floor(w);
        self.cwnd = whole as u64;
        self.cwnd_frac = w - whole;
    }

    /// Common start of a loss event and an RTO: adopt the sender's MSS and leave slow start
    /// (or HyStart++'s CSS) for `why`.
    fn on_congestion_signal(&mut self, now: Instant, mss: u32, why: SlowStartExit) {
        if mss > 0 {
            self.mss = mss;
        }
        if self.hy.phase != HyPhase::Off || self.ss_exit.is_none() {
            self.end_slow_start(now, why);
        }
    }

    fn end_slow_start(&mut self, now: Instant, why: SlowStartExit) {
        if self.ss_exit.is_none() {
            self.ss_exit = Some((now, why));
        }
        self.hy.phase = HyPhase::Off;
    }

    /// HyStart++ (RFC 9406 §4.2) for one ACK of the initial slow start.
    fn hystart_on_ack(&mut self, a: &AckInfo) {
        let h = self.cfg.hystart;
        let mss = self.mss as u64;
        // Round boundaries (windowEnd equivalent, see module docs).
        if let Some(rs) = a.rate {
            if rs.prior_delivered >= self.hy.round_end_delivered {
                self.hy.round_end_delivered = a.delivered;
                self.hy.rounds += 1;
                self.hy.last_round_min_rtt = self.hy.current_round_min_rtt;
                self.hy.current_round_min_rtt = None;
                self.hy.rtt_sample_count = 0;
                if self.hy.phase == HyPhase::Css {
                    self.hy.css_rounds_done += 1;
                    if self.hy.css_rounds_done >= h.css_rounds {
                        // "If CSS_ROUNDS rounds are complete, enter congestion avoidance by
                        // setting the ssthresh to the current cwnd."
                        self.ssthresh = self.cwnd;
                        self.end_slow_start(a.now, SlowStartExit::HyStart);
                        return;
                    }
                }
            }
        }
        // cwnd increase, limited to L·SMSS per ACK.
        let l = if h.paced {
            u64::MAX
        } else {
            h.l_non_paced.max(1) as u64 * mss
        };
        // No growth on duplicate ACKs (see `on_ack`); rounds and RTT samples still count.
        let n = if a.cum_acked > 0 { a.newly_acked.min(l) } else { 0 };
        if self.hy.phase == HyPhase::Css {
            self.region = CubicRegion::Css;
            if n > 0 {
                self.add_bytes(n as f64 / h.css_growth_divisor.max(1) as f64);
            }
        } else {
            self.region = CubicRegion::SlowStart;
            if n > 0 {
                self.add_bytes(n as f64);
            }
        }
        // Track the round's minimum RTT.
        if let Some(rtt) = a.rtt {
            let cur = self.hy.current_round_min_rtt.map_or(rtt, |m| m.min(rtt));
            self.hy.current_round_min_rtt = Some(cur);
            self.hy.rtt_sample_count += 1;
        }
        if self.hy.rtt_sample_count < h.n_rtt_sample {
            return;
        }
        let Some(cur) = self.hy.current_round_min_rtt else {
            return;
        };
        match self.hy.phase {
            HyPhase::SlowStart => {
                let Some(last) = self.hy.last_round_min_rtt else {
                    return;
                };
                let eta = (last / h.min_rtt_divisor.max(1) as u64)
                    .min(h.max_rtt_thresh)
                    .max(h.min_rtt_thresh);
                if cur >= last + eta {
                    self.hy.css_baseline_min_rtt = Some(cur);
                    self.hy.phase = HyPhase::Css;
                    self.hy.css_rounds_done = 0;
                    self.css_entries += 1;
                    self.css_at = Some(a.now);
                }
            }
            HyPhase::Css => {
                if self.hy.css_baseline_min_rtt.is_some_and(|b| cur < b) {
                    // The RTT increase was spurious: resume slow start.
                    self.hy.css_baseline_min_rtt = None;
                    self.hy.phase = HyPhase::SlowStart;
                    self.css_resumes += 1;
                }
            }
            HyPhase::Off => {}
        }
    }

    fn linux(&self) -> bool {
        self.cfg.hystart.variant == HyStartVariant::Linux
    }

    /// Linux's `cubictcp_acked`: CUBIC's `delay_min` from every ACK with an RTT sample, except
    /// in the first second of a congestion-avoidance epoch.
    fn linux_delay_sample(&mut self, a: &AckInfo) {
        let Some(rtt) = a.rtt else { return };
        if self.t_epoch.is_some_and(|t| a.now - t < Duration::from_secs(1)) {
            return;
        }
        let rtt = rtt.max(Duration::from_micros(1));
        if self.hy.delay_min.is_none_or(|d| rtt < d) {
            self.hy.delay_min = Some(rtt);
        }
    }

    /// Linux's `hystart_update` for one ACK in slow start (see the module documentation).
    /// Returns whether it left slow start (ssthresh = cwnd).
    fn linux_hystart_on_ack(&mut self, a: &AckInfo) -> bool {
        let h = self.cfg.hystart;
        let Some(rtt) = a.rtt else { return false };
        // `cubictcp_acked` drops the samples of an epoch's first second before HyStart too.
        if self.t_epoch.is_some_and(|t| a.now - t < Duration::from_secs(1)) {
            return false;
        }
        let Some(delay_min) = self.hy.delay_min else { return false };
        if let Some(rs) = a.rate {
            if rs.prior_delivered >= self.hy.round_end_delivered {
                // `bictcp_hystart_reset`.
                self.hy.round_end_delivered = a.delivered;
                self.hy.rounds += 1;
                self.hy.round_start = a.now;
                self.hy.last_ack = a.now;
                self.hy.current_round_min_rtt = None;
                self.hy.rtt_sample_count = 0;
            }
        }
        if self.cwnd < h.low_window as u64 * self.mss as u64 {
            return false;
        }
        let mut found = false;
        // ACK-train detection.
        if a.now - self.hy.last_ack <= h.ack_delta {
            self.hy.last_ack = a.now;
            let rate = if a.srtt.is_zero() { 0.0 } else { 2.0 * self.cwnd as f64 / a.srtt.as_secs_f64() };
            let ack_delay = if rate > 0.0 {
                Duration::from_secs_f64((4.0 * 65_536.0 / rate).min(1e-3))
            } else {
                Duration::ZERO
            };
            let mut threshold = delay_min + ack_delay;
            if !h.paced {
                threshold = threshold / 2;
            }
            found |= a.now - self.hy.round_start > threshold;
        }
        // Delay detection.
        let cur = self.hy.current_round_min_rtt.map_or(rtt, |m| m.min(rtt));
        self.hy.current_round_min_rtt = Some(cur);
        if self.hy.rtt_sample_count < h.n_rtt_sample {
            self.hy.rtt_sample_count += 1;
        } else {
            let eta = (delay_min / h.min_rtt_divisor.max(1) as u64).clamp(h.min_rtt_thresh, h.max_rtt_thresh);
            found |= cur > delay_min + eta;
        }
        if found {
            self.hy.found = true;
            self.ssthresh = self.cwnd;
            self.end_slow_start(a.now, SlowStartExit::HyStart);
        }
        found
    }

    /// One ACK of slow start under Linux's HyStart: detection, then `tcp_slow_start`'s growth,
    /// or congestion avoidance's if HyStart just fired.
    fn linux_slow_start(&mut self, a: &AckInfo) {
        if !self.hy.found && self.linux_hystart_on_ack(a) {
            if a.may_raise_cwnd() {
                self.congestion_avoidance(a);
            }
            return;
        }
        if !a.may_raise_cwnd() {
            return;
        }
        self.region = CubicRegion::SlowStart;
        self.cwnd = self.cwnd.saturating_add(a.newly_acked).min(self.ssthresh);
        if self.cwnd >= self.ssthresh {
            self.end_slow_start(a.now, SlowStartExit::Ssthresh);
        }
    }

    /// Start of a congestion-avoidance epoch (RFC 9438 §4.2, §4.8, §4.10).
    fn start_epoch(&mut self, now: Instant) {
        let cwnd = self.cwnd as f64 + self.cwnd_frac;
        self.t_epoch = Some(now);
        self.cwnd_epoch = cwnd;
        self.w_est = cwnd;
        match self.w_max {
            Some(w) if !self.after_rto => {
                // K = ∛((W_max − cwnd_epoch)/C), in SMSS; negative if cwnd_epoch > W_max,
                // which makes W_cubic(0) = cwnd_epoch.
                self.k = libm::cbrt((w - cwnd) / self.mss as f64 / self.cfg.c);
            }
            _ => {
                // §4.8 (first CA after RTO) and §4.10 (HyStart++ exit without loss).
                self.w_max = Some(cwnd);
                self.k = 0.0;
                if self.cwnd_prior <= 0.0 {
                    self.cwnd_prior = cwnd;
                }
            }
        }
        self.after_rto = false;
    }

    fn congestion_avoidance(&mut self, a: &AckInfo) {
        if self.t_epoch.is_none() {
            self.start_epoch(a.now);
        }
        let t_epoch = self.t_epoch.unwrap_or(a.now);
        let rtt = if !a.srtt.is_zero() {
            a.srtt
        } else {
            a.rtt.unwrap_or(a.min_rtt)
        };
        let t = (a.now - t_epoch).as_secs_f64();
        let cwnd = self.cwnd as f64 + self.cwnd_frac;
        let acked = a.newly_acked as f64;
        let mss = self.mss as f64;
        // §4.2: target = clamp(W_cubic(t + RTT), cwnd, 1.5·cwnd).
        let w_t = self.w_cubic(t);
        let target = self.w_cubic(t + rtt.as_secs_f64()).clamp(cwnd, 1.5 * cwnd);
        // §4.3: W_est += α·segments_acked/cwnd, α = 1 once W_est ≥ cwnd_prior.
        let beta = self.beta();
        let n = self.cfg.num_connections.max(1) as f64;
        let alpha = if self.w_est >= self.cwnd_prior {
            1.0
        } else {
            3.0 * n * n * (1.0 - beta) / (1.0 + beta)
        };
        self.w_est += alpha * acked * mss / cwnd;
        if self.cfg.reno_friendly && w_t < self.w_est {
            // Reno-friendly region: cwnd = W_est (Linux takes the faster of the two rules, so
            // its initial-growth floor applies here too).
            self.region = CubicRegion::RenoFriendly;
            let floor = if self.cfg.initial_growth && !self.loss_w_max { cwnd + acked / 20.0 } else { cwnd };
            let w = self.w_est.max(floor);
            if w > cwnd {
                self.set_cwnd_f(w);
            }
        } else {
            // §4.4 concave / §4.5 convex: cwnd += (target − cwnd)/cwnd per SMSS acked.
            self.region = if cwnd < self.w_max.unwrap_or(0.0) {
                CubicRegion::Concave
            } else {
                CubicRegion::Convex
            };
            let mut inc = (target - cwnd) * acked / cwnd;
            if self.cfg.initial_growth && !self.loss_w_max {
                // Linux: `ca->cnt` at most 20 while `last_max_cwnd` is 0.
                inc = inc.max(acked / 20.0);
            }
            self.add_bytes(inc);
        }
    }

    /// §4.6 ssthresh and §4.7 W_max on a congestion event.
    fn reduce(&mut self, update_w_max: bool) {
        let cwnd = self.cwnd as f64 + self.cwnd_frac;
        if update_w_max {
            self.loss_w_max = true;
            self.w_max = Some(match self.w_max {
                Some(w) if self.cfg.fast_convergence && cwnd < w => {
                    cwnd * (1.0 + self.beta()) / 2.0
                }
                _ => cwnd,
            });
        }
        self.cwnd_prior = cwnd;
        self.ssthresh = ((cwnd * self.beta()) as u64).max(2 * self.mss as u64);
        self.t_epoch = None;
    }
}

impl CongestionControl for Cubic {
    fn on_ack(&mut self, a: &AckInfo) {
        if a.mss > 0 {
            self.mss = a.mss;
        }
        if self.linux() {
            self.linux_delay_sample(a);
        }
        if a.in_recovery || self.in_recovery {
            self.region = CubicRegion::Recovery;
            return;
        }
        // Growth only on forward progress (RFC 5681 §3.1 and §3.2 step 1, RFC 3042; Linux
        // `tcp_may_raise_cwnd`): a duplicate ACK (`cum_acked` = 0) never grows cwnd, whatever it
        // SACKs; an ACK that advances snd_una grows it by everything it newly acknowledges
        // (`newly_acked`, SACKed bytes included). HyStart++ still sees every ACK for its round
        // and RTT bookkeeping.
        if a.newly_acked == 0 {
            return;
        }
        if self.cwnd < self.ssthresh {
            if self.linux() {
                // HyStart's samples are taken whether or not cwnd may grow (Linux
                // `cubictcp_acked`); `linux_slow_start` gates the growth itself.
                self.linux_slow_start(a);
                return;
            }
            // Linux `cubictcp_cong_avoid`: no growth unless the sender was cwnd-limited.
            if !a.cwnd_limited {
                return;
            }
            if self.hy.phase != HyPhase::Off {
                self.hystart_on_ack(a);
                return;
            }
            if a.cum_acked == 0 {
                return;
            }
            // Standard slow start (RFC 5681 §3.1, RFC 3465 §2.2), capped at ssthresh.
            let l = if self.cfg.abc_l == 0 {
                u64::MAX
            } else {
                self.cfg.abc_l as u64 * self.mss as u64
            };
            self.region = CubicRegion::SlowStart;
            self.cwnd = (self.cwnd + a.newly_acked.min(l)).min(self.ssthresh);
            if self.cwnd >= self.ssthresh {
                self.end_slow_start(a.now, SlowStartExit::Ssthresh);
            }
            return;
        }
        if !a.may_raise_cwnd() {
            return;
        }
        self.congestion_avoidance(a);
    }

    fn on_loss_event(&mut self, now: Instant, _bytes_in_flight: u64, mss: u32) {
        self.loss_events += 1;
        self.on_congestion_signal(now, mss, SlowStartExit::Loss);
        // §4.6, §4.7; cwnd = ssthresh.
        self.reduce(true);
        self.set_cwnd_f(self.ssthresh as f64);
        self.in_recovery = true;
        self.region = CubicRegion::Recovery;
    }

    fn on_recovery_exit(&mut self, _now: Instant) {
        self.in_recovery = false;
    }

    fn on_rto(&mut self, now: Instant, _bytes_in_flight: u64, mss: u32) {
        self.rtos += 1;
        self.on_congestion_signal(now, mss, SlowStartExit::Rto);
        // §4.8: ssthresh per §4.6, cwnd = 1 SMSS; next CA stage uses K = 0, W_max = cwnd_epoch.
        self.reduce(false);
        self.set_cwnd_f(self.mss as f64);
        self.after_rto = true;
        self.loss_w_max = false;
        if self.linux() && self.cfg.hystart.enabled {
            // `cubictcp_state(TCP_CA_Loss)`: `bictcp_reset` (found, delay_min) and
            // `bictcp_hystart_reset`; the next ACK with a rate sample starts a round.
            self.hy.found = false;
            self.hy.delay_min = None;
            self.hy.round_end_delivered = 0;
        }
        self.in_recovery = false;
        self.region = CubicRegion::SlowStart;
    }

    fn on_idle_restart(&mut self, _now: Instant, cwnd: u64) {
        let before = self.cwnd;
        self.ssthresh = super::idle_restart_ssthresh(self.ssthresh, before);
        self.set_cwnd_f(cwnd.min(before) as f64);
        self.t_epoch = None;
    }

    fn exit_slow_start(&mut self, now: Instant) {
        if self.cwnd < self.ssthresh && !self.in_recovery {
            self.ssthresh = self.cwnd;
            self.end_slow_start(now, SlowStartExit::Delay);
        }
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

    fn in_slow_start(&self) -> bool {
        self.cwnd < self.ssthresh
    }

    fn state(&self) -> &'static str {
        if self.in_recovery {
            "recovery"
        } else if self.cwnd < self.ssthresh {
            if self.hy.phase == HyPhase::Css {
                "css"
            } else {
                "slow_start"
            }
        } else {
            "avoidance"
        }
    }
}

#[cfg(test)]
mod tests;
