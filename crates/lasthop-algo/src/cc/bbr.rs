//! BBR v1 congestion control, after draft-cardwell-iccrg-bbr-congestion-control-00 (July 2017),
//! with the ACK-aggregation ("extra_acked") estimator of Linux `tcp_bbr.c` (its design only;
//! this is an independent implementation), switchable by [`BbrConfig::extra_acked`].
//!
//! Section numbers below are the draft's:
//! * §4.1.1 BtlBw: windowed max of delivery-rate samples over `btlbw_filter_rounds` (10) round
//!   trips; rounds are counted with `RateSample::prior_delivered` against the `delivered` count
//!   at the start of the round (§4.1.1.3 BBRUpdateRound). Application-limited samples update the
//!   filter only if they are at least the current estimate (§4.1.1.4, §4.1.1.5); a sample that
//!   does not update the filter does not age it either (UpdateWindowedMaxFilter is called only
//!   for accepted samples). The filter is an exact sliding-window max (monotone deque); the
//!   draft only calls for a windowed max filter (§4.1.1.2), the 3-sample approximation being
//!   Linux's (`win_minmax`).
//! * §4.1.2 RTprop: windowed min over 10 s; a sample replaces it if lower, or if the estimate
//!   expired. **Deviation:** draft-00 also accepts an *equal* sample (`<=`), which on a
//!   deterministic simulated path refreshes RTprop forever and suppresses ProbeRTT; like Linux
//!   we require a strictly lower sample (`rtprop_refresh_on_equal = false`, switchable).
//! * §4.2.1 pacing rate = pacing_gain·BtlBw, never lowered before the pipe is full; reduced by
//!   Linux's 1 % margin (`pacing_margin_percent`) so the bottleneck queue drains over time.
//!   Initial rate (§4.2.1 BBRInitPacingRate): high_gain·InitialCwnd/(SRTT or 1 ms), redone once
//!   when the first SRTT is known.
//! * §4.2.3 cwnd: target (§4.2.3.2) = cwnd_gain·BtlBw·RTprop + 3·SMSS (quantization budget;
//!   the draft's 3·send_quantum with send_quantum = 1 SMSS, since the simulated sender has no
//!   TSO/GSO), plus the ACK-aggregation allowance (below). Once the pipe is full,
//!   cwnd = min(cwnd + acked, target); before, it grows by the acked bytes while below target
//!   (§4.2.3.6). Floor 4·SMSS (§4.2.3.3).
//! * §4.2.3.4 loss recovery: on entering fast recovery, save cwnd, set cwnd = in-flight +
//!   1 SMSS (the draft: packets_in_flight + max(packets_delivered, 1); the newly delivered
//!   count is not passed to `on_loss_event`), and apply packet conservation (cwnd at least
//!   in-flight plus newly acked) for one round trip; newly lost bytes reduce cwnd; on exit,
//!   restore the saved cwnd. On RTO, save cwnd and set cwnd = 1 SMSS, then grow per §4.2.3.6 (no
//!   conservation); restore at the end of recovery.
//! * §4.3 state machine: Startup (pacing and cwnd gain 2/ln 2) → Drain (pacing gain ln 2/2)
//!   when the pipe is full (§4.3.2.2: three rounds with < 25 % BtlBw growth, non-app-limited
//!   samples) → ProbeBW once in-flight ≤ 1·BDP (§4.3.3) → ProbeRTT when RTprop expired
//!   (§4.3.5: cwnd 4·SMSS for max(200 ms, one round) after in-flight reaches it) → ProbeBW (or
//!   Startup if the pipe was not yet full). ProbeBW (§4.3.4) cycles pacing gains
//!   [5/4, 3/4, 1, 1, 1, 1, 1, 1], each phase lasting about one RTprop (5/4 longer until
//!   in-flight reaches 5/4·BDP or a loss; 3/4 shorter once in-flight ≤ BDP), starting at a
//!   random phase other than 3/4, drawn from [`BbrConfig::seed`]; cwnd gain 2.
//!
//! ACK aggregation (Linux design): an epoch of ACK arrivals starts whenever the bytes acked
//! since the epoch start fall to or below what BtlBw would have delivered in the elapsed time;
//! `extra_acked` = acked since epoch start − BtlBw·epoch duration, capped at cwnd; its max is
//! kept in two slots that alternate every 5 round trips (so a 5–10 round window); the allowance
//! added to the target cwnd (once the pipe is full) is gain·max(slots), capped at 100 ms of
//! BtlBw.
//!
//! ProbeRTT samples are application-limited (§4.3.5 "Ignore low rate samples during ProbeRTT"):
//! `mark_app_limited` is true in ProbeRTT, and the TCP and QUIC senders then set C.app_limited :=
//! C.delivered + in-flight after the ACK, as the draft's BBRHandleProbeRTT does.
//!
//! Not implemented: idle restart (§4.3.4.4, `idle_restart`), the send quantum (§4.2.2, a
//! sender concern), Linux's long-term bandwidth (policer) estimator.

use super::{AckInfo, CongestionControl};
use alloc::collections::VecDeque;
use lasthop_core::{Duration, Instant, Rng};

/// 2/ln 2, the Startup gain (draft §4.3.2.1).
pub const BBR_HIGH_GAIN: f64 = 2.0 / core::f64::consts::LN_2;
/// ProbeBW pacing-gain cycle (draft §4.3.4.3).
pub const PACING_GAIN_CYCLE: [f64; 8] = [1.25, 0.75, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0];

/// Parameters (draft-00 and Linux defaults).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct BbrConfig {
    /// Startup pacing and cwnd gain; Drain pacing gain is its inverse. Default 2/ln 2 ≈ 2.885.
    pub high_gain: f64,
    /// ProbeBW cwnd gain. Default 2.
    pub cwnd_gain: f64,
    /// BtlBw filter window in round trips. Default 10.
    pub btlbw_filter_rounds: u64,
    /// RTprop filter window. Default 10 s.
    pub rtprop_filter_len: Duration,
    /// Minimum ProbeRTT duration. Default 200 ms.
    pub probe_rtt_duration: Duration,
    /// BBRMinPipeCwnd in SMSS. Default 4.
    pub min_pipe_cwnd_segments: u32,
    /// Quantization budget added to the target cwnd, in SMSS. Default 3.
    pub quantization_segments: u32,
    /// Full-pipe detection: BtlBw growth factor (default 1.25) ...
    pub full_bw_growth: f64,
    /// ... not reached for this many rounds (default 3).
    pub full_bw_rounds: u32,
    /// Pacing rate margin below pacing_gain·BtlBw, percent (Linux). Default 1.
    pub pacing_margin_percent: u32,
    /// Accept an RTT sample equal to RTprop as a refresh (draft-00's `<=`). Default false.
    pub rtprop_refresh_on_equal: bool,
    /// ACK-aggregation estimator on/off. Default true.
    pub extra_acked: bool,
    /// Gain on the aggregation allowance. Default 1.0.
    pub extra_acked_gain: f64,
    /// Round trips per aggregation slot. Default 5.
    pub extra_acked_win_rounds: u32,
    /// Cap of the allowance, as time at BtlBw. Default 100 ms.
    pub extra_acked_max: Duration,
    /// Seed of the random ProbeBW start phase.
    pub seed: u64,
}

impl Default for BbrConfig {
    fn default() -> Self {
        BbrConfig {
            high_gain: BBR_HIGH_GAIN,
            cwnd_gain: 2.0,
            btlbw_filter_rounds: 10,
            rtprop_filter_len: Duration::from_secs(10),
            probe_rtt_duration: Duration::from_millis(200),
            min_pipe_cwnd_segments: 4,
            quantization_segments: 3,
            full_bw_growth: 1.25,
            full_bw_rounds: 3,
            pacing_margin_percent: 1,
            rtprop_refresh_on_equal: false,
            extra_acked: true,
            extra_acked_gain: 1.0,
            extra_acked_win_rounds: 5,
            extra_acked_max: Duration::from_millis(100),
            seed: 0,
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BbrState {
    Startup,
    Drain,
    ProbeBw,
    ProbeRtt,
}

impl BbrState {
    pub fn name(self) -> &'static str {
        match self {
            BbrState::Startup => "startup",
            BbrState::Drain => "drain",
            BbrState::ProbeBw => "probe_bw",
            BbrState::ProbeRtt => "probe_rtt",
        }
    }
}

/// Snapshot for reports (never read by the control law).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct BbrStats {
    pub state: BbrState,
    /// Bytes per second.
    pub btlbw: u64,
    /// None until the first RTT sample.
    pub rtprop: Option<Duration>,
    pub pacing_gain: f64,
    pub cwnd_gain: f64,
    pub pacing_rate: u64,
    pub target_cwnd: u64,
    /// max of the two extra_acked slots, bytes (0 when the estimator is off).
    pub extra_acked: u64,
    /// Allowance currently added to the target cwnd, bytes.
    pub aggregation_cwnd: u64,
    pub round_count: u64,
    pub filled_pipe: bool,
    pub cycle_index: usize,
    pub probe_rtt_entries: u64,
    pub packet_conservation: bool,
    pub in_recovery: bool,
    pub prior_cwnd: u64,
}

/// BBR v1.
#[derive(Clone, Debug)]
pub struct Bbr {
    cfg: BbrConfig,
    // --- variables ---
    mss: u32,
    initial_cwnd: u64,
    state: BbrState,
    pacing_gain: f64,
    cwnd_gain: f64,
    cwnd: u64,
    prior_cwnd: u64,
    pacing_rate: u64,
    pacing_from_srtt: bool,
    target_cwnd: u64,
    /// (round, max delivery rate in that round), monotone decreasing in rate.
    btlbw_filter: VecDeque<(u64, u64)>,
    btlbw: u64,
    rtprop: Duration,
    rtprop_stamp: Instant,
    rtprop_expired: bool,
    delivered: u64,
    next_round_delivered: u64,
    round_count: u64,
    round_start: bool,
    filled_pipe: bool,
    full_bw: u64,
    full_bw_count: u32,
    cycle_index: usize,
    cycle_stamp: Instant,
    rng: Rng,
    probe_rtt_done_stamp: Option<Instant>,
    probe_rtt_round_done: bool,
    packet_conservation: bool,
    in_recovery: bool,
    /// After an RTO: recovery ends once `delivered` reaches this and a round has passed.
    rto_recovery_until: Option<u64>,
    rto_round_done: bool,
    extra_acked: [u64; 2],
    extra_acked_win_rounds: u32,
    extra_acked_idx: usize,
    ack_epoch_start: Instant,
    ack_epoch_acked: u64,
    // --- counters ---
    probe_rtt_entries: u64,
}

impl Bbr {
    pub fn new(cfg: BbrConfig, now: Instant, mss: u32, initial_cwnd: u64) -> Self {
        let mss = mss.max(1);
        let initial_cwnd = initial_cwnd.max(mss as u64);
        let mut b = Bbr {
            cfg,
            mss,
            initial_cwnd,
            state: BbrState::Startup,
            pacing_gain: cfg.high_gain,
            cwnd_gain: cfg.high_gain,
            cwnd: initial_cwnd,
            prior_cwnd: 0,
            pacing_rate: 0,
            pacing_from_srtt: false,
            target_cwnd: initial_cwnd,
            btlbw_filter: VecDeque::new(),
            btlbw: 0,
            rtprop: Duration::MAX,
            rtprop_stamp: now,
            rtprop_expired: false,
            delivered: 0,
            next_round_delivered: 0,
            round_count: 0,
            round_start: false,
            filled_pipe: false,
            full_bw: 0,
            full_bw_count: 0,
            cycle_index: 0,
            cycle_stamp: now,
            rng: Rng::from_seed(cfg.seed),
            probe_rtt_done_stamp: None,
            probe_rtt_round_done: false,
            packet_conservation: false,
            in_recovery: false,
            rto_recovery_until: None,
            rto_round_done: false,
            extra_acked: [0; 2],
            extra_acked_win_rounds: 0,
            extra_acked_idx: 0,
            ack_epoch_start: now,
            ack_epoch_acked: 0,
            probe_rtt_entries: 0,
        };
        // §4.2.1 BBRInitPacingRate with no SRTT yet: InitialCwnd / 1 ms.
        b.pacing_rate = b.with_margin(cfg.high_gain * initial_cwnd as f64 * 1e3);
        b
    }

    pub fn config(&self) -> &BbrConfig {
        &self.cfg
    }

    pub fn bbr_state(&self) -> BbrState {
        self.state
    }

    /// True in ProbeRTT, when `mark_app_limited` asks the sender to mark its delivery-rate
    /// samples app-limited (§4.3.5).
    pub fn in_probe_rtt(&self) -> bool {
        self.state == BbrState::ProbeRtt
    }

    pub fn btlbw(&self) -> u64 {
        self.btlbw
    }

    pub fn stats(&self) -> BbrStats {
        BbrStats {
            state: self.state,
            btlbw: self.btlbw,
            rtprop: (self.rtprop != Duration::MAX).then_some(self.rtprop),
            pacing_gain: self.pacing_gain,
            cwnd_gain: self.cwnd_gain,
            pacing_rate: self.pacing_rate,
            target_cwnd: self.target_cwnd,
            extra_acked: self.extra_acked[0].max(self.extra_acked[1]),
            aggregation_cwnd: self.aggregation_cwnd(),
            round_count: self.round_count,
            filled_pipe: self.filled_pipe,
            cycle_index: self.cycle_index,
            probe_rtt_entries: self.probe_rtt_entries,
            packet_conservation: self.packet_conservation,
            in_recovery: self.in_recovery,
            prior_cwnd: self.prior_cwnd,
        }
    }

    fn with_margin(&self, rate: f64) -> u64 {
        let m = 100u32.saturating_sub(self.cfg.pacing_margin_percent) as f64 / 100.0;
        (rate * m) as u64
    }

    fn min_pipe_cwnd(&self) -> u64 {
        self.cfg.min_pipe_cwnd_segments as u64 * self.mss as u64
    }

    /// BtlBw·RTprop in bytes.
    fn bdp(&self) -> u64 {
        ((self.btlbw as u128 * self.rtprop.as_nanos() as u128) / 1_000_000_000) as u64
    }

    /// §4.2.3.2 BBRInflight(gain).
    fn inflight(&self, gain: f64) -> u64 {
        if self.rtprop == Duration::MAX {
            return self.initial_cwnd;
        }
        // Saturating: a (bogus) rate sample near u64::MAX must not overflow the sum.
        ((gain * self.bdp() as f64) as u64)
            .saturating_add(self.cfg.quantization_segments as u64 * self.mss as u64)
    }

    /// The ACK-aggregation allowance added to the target cwnd.
    fn aggregation_cwnd(&self) -> u64 {
        if !self.cfg.extra_acked || !self.filled_pipe {
            return 0;
        }
        let max_aggr = ((self.btlbw as u128 * self.cfg.extra_acked_max.as_nanos() as u128)
            / 1_000_000_000) as u64;
        let aggr = (self.cfg.extra_acked_gain * self.extra_acked[0].max(self.extra_acked[1]) as f64)
            as u64;
        aggr.min(max_aggr)
    }

    // ---- model ----

    /// §4.1.1.3 BBRUpdateRound.
    fn update_round(&mut self, prior_delivered: Option<u64>) {
        self.round_start = false;
        if let Some(pd) = prior_delivered {
            if pd >= self.next_round_delivered {
                self.next_round_delivered = self.delivered;
                self.round_count += 1;
                self.round_start = true;
            }
        }
    }

    /// §4.1.1.5 BBRUpdateBtlBw (round already updated). The windowed max filter is updated —
    /// and so ages — only by samples that pass the test (the draft calls
    /// UpdateWindowedMaxFilter inside it): an application-limited stretch (ProbeRTT included)
    /// neither lowers the estimate nor lets it expire.
    fn update_btlbw(&mut self, rate: u64, app_limited: bool) {
        if rate > 0 && (rate >= self.btlbw || !app_limited) {
            let round = self.round_count;
            let win = self.cfg.btlbw_filter_rounds.max(1);
            while self.btlbw_filter.front().is_some_and(|&(r, _)| r + win <= round) {
                self.btlbw_filter.pop_front();
            }
            while self.btlbw_filter.back().is_some_and(|&(_, v)| v <= rate) {
                self.btlbw_filter.pop_back();
            }
            self.btlbw_filter.push_back((round, rate));
        }
        self.btlbw = self.btlbw_filter.front().map_or(0, |&(_, v)| v);
    }

    /// Linux-design ACK-aggregation estimator (see module docs).
    fn update_ack_aggregation(&mut self, now: Instant, acked: u64) {
        if acked == 0 {
            return;
        }
        if self.round_start {
            self.extra_acked_win_rounds = (self.extra_acked_win_rounds + 1).min(31);
            if self.extra_acked_win_rounds >= self.cfg.extra_acked_win_rounds {
                self.extra_acked_win_rounds = 0;
                self.extra_acked_idx ^= 1;
                self.extra_acked[self.extra_acked_idx] = 0;
            }
        }
        let elapsed = now - self.ack_epoch_start;
        let mut expected =
            ((self.btlbw as u128 * elapsed.as_nanos() as u128) / 1_000_000_000) as u64;
        // Restart the epoch when ACKs come no faster than BtlBw, or the epoch grew very old.
        let reset_thresh = (1u64 << 20) * self.mss as u64;
        if self.ack_epoch_acked <= expected || self.ack_epoch_acked + acked >= reset_thresh {
            self.ack_epoch_acked = 0;
            self.ack_epoch_start = now;
            expected = 0;
        }
        self.ack_epoch_acked += acked;
        let extra = (self.ack_epoch_acked - expected.min(self.ack_epoch_acked)).min(self.cwnd);
        let slot = &mut self.extra_acked[self.extra_acked_idx];
        *slot = (*slot).max(extra);
    }

    /// §4.1.2.3 BBRUpdateRTprop.
    fn update_rtprop(&mut self, now: Instant, rtt: Option<Duration>) {
        self.rtprop_expired = now > self.rtprop_stamp + self.cfg.rtprop_filter_len;
        if let Some(rtt) = rtt {
            let lower =
                rtt < self.rtprop || (self.cfg.rtprop_refresh_on_equal && rtt == self.rtprop);
            if lower || self.rtprop_expired {
                self.rtprop = rtt;
                self.rtprop_stamp = now;
            }
        }
    }

    // ---- state machine ----

    fn enter_startup(&mut self) {
        self.state = BbrState::Startup;
        self.pacing_gain = self.cfg.high_gain;
        self.cwnd_gain = self.cfg.high_gain;
    }

    fn enter_drain(&mut self) {
        self.state = BbrState::Drain;
        self.pacing_gain = 1.0 / self.cfg.high_gain;
        self.cwnd_gain = self.cfg.high_gain;
    }

    /// §4.3.4.2 (rule) / §4.3.4.3 (BBREnterProbeBW): random start phase in [0, 2..7]; never the
    /// 3/4 phase first.
    fn enter_probe_bw(&mut self, now: Instant) {
        self.state = BbrState::ProbeBw;
        self.pacing_gain = 1.0;
        self.cwnd_gain = self.cfg.cwnd_gain;
        let n = PACING_GAIN_CYCLE.len();
        self.cycle_index = n - 1 - self.rng.gen_range_inclusive(n as u64 - 2) as usize;
        self.advance_cycle_phase(now);
    }

    fn advance_cycle_phase(&mut self, now: Instant) {
        self.cycle_stamp = now;
        self.cycle_index = (self.cycle_index + 1) % PACING_GAIN_CYCLE.len();
        self.pacing_gain = PACING_GAIN_CYCLE[self.cycle_index];
    }

    /// §4.3.4.3 BBRIsNextCyclePhase.
    fn is_next_cycle_phase(&self, now: Instant, prior_in_flight: u64, losses: u64) -> bool {
        let full_length = now - self.cycle_stamp > self.rtprop;
        if self.pacing_gain > 1.0 {
            full_length && (losses > 0 || prior_in_flight >= self.inflight(self.pacing_gain))
        } else if self.pacing_gain < 1.0 {
            full_length || prior_in_flight <= self.inflight(1.0)
        } else {
            full_length
        }
    }

    /// §4.3.2.2 BBRCheckFullPipe.
    fn check_full_pipe(&mut self, app_limited: bool) {
        if self.filled_pipe || !self.round_start || app_limited {
            return;
        }
        if self.btlbw as f64 >= self.full_bw as f64 * self.cfg.full_bw_growth {
            self.full_bw = self.btlbw;
            self.full_bw_count = 0;
            return;
        }
        self.full_bw_count += 1;
        if self.full_bw_count >= self.cfg.full_bw_rounds {
            self.filled_pipe = true;
        }
    }

    /// §4.3.3 BBRCheckDrain.
    fn check_drain(&mut self, now: Instant, bytes_in_flight: u64) {
        if self.state == BbrState::Startup && self.filled_pipe {
            self.enter_drain();
        }
        if self.state == BbrState::Drain && bytes_in_flight <= self.inflight(1.0) {
            self.enter_probe_bw(now);
        }
    }

    /// §4.3.5 BBRCheckProbeRTT / BBRHandleProbeRTT.
    fn check_probe_rtt(&mut self, now: Instant, bytes_in_flight: u64) {
        if self.state != BbrState::ProbeRtt && self.rtprop_expired {
            self.state = BbrState::ProbeRtt;
            self.pacing_gain = 1.0;
            self.cwnd_gain = 1.0;
            self.prior_cwnd = self.save_cwnd();
            self.probe_rtt_done_stamp = None;
            self.probe_rtt_entries += 1;
        }
        if self.state != BbrState::ProbeRtt {
            return;
        }
        match self.probe_rtt_done_stamp {
            None => {
                if bytes_in_flight <= self.min_pipe_cwnd() {
                    self.probe_rtt_done_stamp = Some(now + self.cfg.probe_rtt_duration);
                    self.probe_rtt_round_done = false;
                    self.next_round_delivered = self.delivered;
                }
            }
            Some(done) => {
                if self.round_start {
                    self.probe_rtt_round_done = true;
                }
                if self.probe_rtt_round_done && now > done {
                    self.rtprop_stamp = now;
                    self.restore_cwnd();
                    if self.filled_pipe {
                        self.enter_probe_bw(now);
                    } else {
                        self.enter_startup();
                    }
                }
            }
        }
    }

    /// §4.2.3.4 BBRSaveCwnd.
    fn save_cwnd(&self) -> u64 {
        if !self.in_recovery && self.state != BbrState::ProbeRtt {
            self.cwnd
        } else {
            self.prior_cwnd.max(self.cwnd)
        }
    }

    /// §4.2.3.4 BBRRestoreCwnd.
    fn restore_cwnd(&mut self) {
        self.cwnd = self.cwnd.max(self.prior_cwnd);
    }

    // ---- control parameters ----

    /// §4.2.1 BBRSetPacingRate.
    fn set_pacing_rate(&mut self, srtt: Duration) {
        if !self.pacing_from_srtt && !srtt.is_zero() {
            self.pacing_from_srtt = true;
            if !self.filled_pipe {
                let nominal = self.initial_cwnd as f64 / srtt.as_secs_f64();
                self.pacing_rate = self.with_margin(self.cfg.high_gain * nominal);
            }
        }
        let rate = self.with_margin(self.pacing_gain * self.btlbw as f64);
        if self.filled_pipe || rate > self.pacing_rate {
            self.pacing_rate = rate;
        }
    }

    /// §4.2.3.6 BBRSetCwnd, with §4.2.3.4 recovery modulation and §4.2.3.5 ProbeRTT cap.
    fn set_cwnd(&mut self, acked: u64, lost: u64, bytes_in_flight: u64) {
        let mss = self.mss as u64;
        self.target_cwnd = self.inflight(self.cwnd_gain).saturating_add(self.aggregation_cwnd());
        if lost > 0 {
            self.cwnd = self.cwnd.saturating_sub(lost).max(mss);
        }
        if self.packet_conservation {
            self.cwnd = self.cwnd.max(bytes_in_flight + acked);
        } else {
            if self.filled_pipe {
                self.cwnd = (self.cwnd + acked).min(self.target_cwnd);
            } else if self.cwnd < self.target_cwnd || self.delivered < self.initial_cwnd {
                self.cwnd += acked;
            }
            self.cwnd = self.cwnd.max(self.min_pipe_cwnd());
        }
        if self.state == BbrState::ProbeRtt {
            self.cwnd = self.cwnd.min(self.min_pipe_cwnd());
        }
    }

    fn exit_recovery(&mut self) {
        self.in_recovery = false;
        self.packet_conservation = false;
        self.rto_recovery_until = None;
        self.restore_cwnd();
    }
}

impl CongestionControl for Bbr {
    fn on_ack(&mut self, a: &AckInfo) {
        if a.mss > 0 {
            self.mss = a.mss;
        }
        self.delivered = self.delivered.max(a.delivered);
        let rs = if a.newly_acked > 0 { a.rate } else { None };
        let lost = a.rate.map_or(0, |r| r.newly_lost);
        // §4.1.1: the model.
        self.update_round(rs.map(|r| r.prior_delivered));
        if let Some(until) = self.rto_recovery_until {
            // End of RTO recovery if the sender does not call on_recovery_exit: everything
            // outstanding at the RTO is delivered and a round trip has passed.
            self.rto_round_done |= self.round_start;
            if self.rto_round_done && self.delivered >= until {
                self.exit_recovery();
            }
        }
        if self.packet_conservation && self.round_start {
            // §4.2.3.4: conservation lasts the first round of recovery.
            self.packet_conservation = false;
        }
        let app_limited = rs.is_some_and(|r| r.is_app_limited);
        if let Some(r) = rs {
            self.update_btlbw(r.delivery_rate, r.is_app_limited);
        }
        if self.cfg.extra_acked {
            self.update_ack_aggregation(a.now, a.newly_acked);
        }
        if self.state == BbrState::ProbeBw
            && self.is_next_cycle_phase(a.now, a.prior_in_flight, lost)
        {
            self.advance_cycle_phase(a.now);
        }
        if rs.is_some() {
            self.check_full_pipe(app_limited);
        }
        self.check_drain(a.now, a.bytes_in_flight);
        let rtt = rs.map(|r| r.rtt).filter(|d| !d.is_zero()).or(a.rtt);
        self.update_rtprop(a.now, rtt);
        self.check_probe_rtt(a.now, a.bytes_in_flight);
        // §4.2: the control parameters.
        self.set_pacing_rate(a.srtt);
        self.set_cwnd(a.newly_acked, lost, a.bytes_in_flight);
    }

    fn on_loss_event(&mut self, _now: Instant, bytes_in_flight: u64, mss: u32) {
        if mss > 0 {
            self.mss = mss;
        }
        // §4.2.3.4, upon entering Fast Recovery.
        self.prior_cwnd = self.save_cwnd();
        self.in_recovery = true;
        self.cwnd = (bytes_in_flight + self.mss as u64).max(self.mss as u64);
        self.packet_conservation = true;
        // Start a round now so conservation lasts one round trip (as Linux).
        self.next_round_delivered = self.delivered;
    }

    fn on_recovery_exit(&mut self, _now: Instant) {
        self.exit_recovery();
    }

    fn on_rto(&mut self, _now: Instant, bytes_in_flight: u64, mss: u32) {
        if mss > 0 {
            self.mss = mss;
        }
        self.prior_cwnd = self.save_cwnd();
        self.in_recovery = true;
        self.packet_conservation = false;
        self.cwnd = self.mss as u64;
        self.rto_recovery_until = Some(self.delivered + bytes_in_flight);
        self.rto_round_done = false;
        self.next_round_delivered = self.delivered;
    }

    fn mark_app_limited(&self) -> bool {
        self.in_probe_rtt()
    }

    fn cwnd(&self) -> u64 {
        self.cwnd
    }

    fn ssthresh(&self) -> u64 {
        u64::MAX
    }

    fn pacing_rate(&self) -> Option<u64> {
        Some(self.pacing_rate)
    }

    fn in_slow_start(&self) -> bool {
        self.state == BbrState::Startup
    }

    fn state(&self) -> &'static str {
        self.state.name()
    }
}

#[cfg(test)]
mod tests;
