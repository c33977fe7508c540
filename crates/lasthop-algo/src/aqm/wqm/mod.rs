//! WQM, the wireless queue manager of "Battling Latency in Modern Wireless Networks" (Showail,
//! Shihada, IEEE Access 2018): a buffer sizer for the transmit queue of an AP or mesh relay,
//! as a sans-IO controller ([`lasthop_core::Controller`]).
//!
//! It follows Algorithm 1 and §IV:
//!
//! * Initial stage (§IV-A, equation (1)): `B_initial = R · ARTT`, in packets of
//!   [`WqmConfig::packet_size`] octets, with `ARTT` from equations (6)–(7) at the current rate
//!   `R` and the aggregate length in use.
//! * Adjustment stage, once per measurement interval (Algorithm 1 lines 4–21): the drain time
//!   `T_drain = (BL / R) / F` (equation (2)) is compared with `limit`:
//!   - `T_drain > limit` and `B > B_min`: if `alarm_high` is on, `B = max(dec(B), B_min)`;
//!     otherwise `alarm_high` is turned on and `alarm_low` off;
//!   - else `T_drain < limit` and `B < B_max`: if `alarm_low` is on, `B = min(inc(B), B_max)`;
//!     otherwise `alarm_low` is turned on and `alarm_high` off;
//!   - otherwise nothing changes, the alarms included.
//!
//!   So an action needs two consecutive intervals on the same side of `limit`; an alarm is only
//!   cleared by an interval on the other side, and while it stays on, every further interval
//!   on its side acts again (Fig. 4's staircase). `dec`/`inc` are the [`WqmVariant`] of Fig. 5:
//!   AIMD (`+1` packet, `÷2`, §V-A, the default) or the AIAD, MIAD and MIMD alternatives.
//! * Bounds (§IV-B): `B_min` is the maximum A-MPDU length in use (the host reports it; 1 when
//!   aggregation is off, §V-C); `B_max = λ · ARTT` (equation (5)) at the top rate `λ` with
//!   64-subframe A-MPDUs, or a configured value.
//!
//! Inputs are what a Linux AP exposes ([`WqmInput`]): the current transmit rate, the queue
//! backlog, channel busy times (per interval, or the cumulative counters of a channel survey,
//! which the controller differences between measurement instants) and the aggregate length.
//! The output is the queue limit in packets ([`WqmOutput::SetLimit`]), emitted only when it
//! changes; a host applies it, e.g., with [`crate::aqm::Fifo::set_limit_packets`] or as
//! `txqueuelen`.
//!
//! Measurements are sampled, not integrated: at each measurement instant the controller uses
//! the latest rate, backlog and aggregate length it was handed, and the channel times of the
//! interval just ended. The first instant at which a rate is known runs the initial stage; the
//! adjustment stage starts at the next one. A late wake-up evaluates once and skips the missed
//! instants (they brought no samples of their own); early or repeated wake-ups are no-ops.

pub mod analysis;
#[cfg(test)]
mod tests;

pub use analysis::{
    artt, b_initial, b_max, bdp_packets, t_bo, t_d_ack, t_d_data, t_drain, ArttParams, FreeFraction,
};

use lasthop_core::{BitRate, Bytes, Controller, Duration, Instant};

/// How the buffer size moves when an alarm fires (Fig. 5). The paper specifies AIMD — one
/// packet up, halve down (§V-A) — and compares it with AIAD, MIAD and MIMD; those reuse the
/// same step ([`Self::ADDITIVE_STEP`]) and factor ([`Self::MULTIPLICATIVE_FACTOR`]).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum WqmVariant {
    /// Additive increase (`B + 1`), multiplicative decrease (`⌊B / 2⌋`): the paper's choice.
    #[default]
    Aimd,
    /// Additive increase (`B + 1`), additive decrease (`B − 1`).
    Aiad,
    /// Multiplicative increase (`2·B`), additive decrease (`B − 1`).
    Miad,
    /// Multiplicative increase (`2·B`), multiplicative decrease (`⌊B / 2⌋`).
    Mimd,
}

impl WqmVariant {
    /// Additive step, in packets ("increases the buffer size by one packet", §V-A).
    pub const ADDITIVE_STEP: u32 = 1;
    /// Multiplicative factor ("decreases the buffer size by half", §V-A).
    pub const MULTIPLICATIVE_FACTOR: u32 = 2;

    /// The increased size before clamping to `B_max` (Algorithm 1 line 16).
    pub fn increase(self, b: u32) -> u32 {
        match self {
            WqmVariant::Aimd | WqmVariant::Aiad => b.saturating_add(Self::ADDITIVE_STEP),
            WqmVariant::Miad | WqmVariant::Mimd => b.saturating_mul(Self::MULTIPLICATIVE_FACTOR),
        }
    }

    /// The decreased size before clamping to `B_min` (Algorithm 1 line 10).
    pub fn decrease(self, b: u32) -> u32 {
        match self {
            WqmVariant::Aimd | WqmVariant::Mimd => b / Self::MULTIPLICATIVE_FACTOR,
            WqmVariant::Aiad | WqmVariant::Miad => b.saturating_sub(Self::ADDITIVE_STEP),
        }
    }
}

/// WQM parameters, with the paper's values as defaults.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct WqmConfig {
    /// The measurement interval of Algorithm 1. The paper synchronises it with Minstrel's
    /// statistics update ("look-around", §V-A), whose Linux default is 100 ms. Default 100 ms.
    pub interval: Duration,
    /// `limit`, the acceptable drain time: the ARTT of one frame at 6.5 Mb/s (§IV-B).
    /// Default 2.5 ms.
    pub limit: Duration,
    /// Step rule (Fig. 5). Default AIMD.
    pub variant: WqmVariant,
    /// `L_DATA`, the packet size: converts bytes to packets and gives `T_DATA` in (6). Default
    /// 1500 octets, the size behind §IV-B's "1.9 ms at 600 Mb/s, around 95 packets"
    /// (600 Mb/s · 1.9 ms / (8 · 1500) = 95).
    pub packet_size: Bytes,
    /// The system parameters of (6)–(7). Default: 802.11n, 5 GHz ([`ArttParams::default`]).
    pub artt: ArttParams,
    /// `λ`, the highest transmission rate, for `B_max`. Default 600 Mb/s (§IV-B).
    pub top_rate: BitRate,
    /// `K` at the top rate, for `B_max`: subframes per A-MPDU. Default 64 (§IV-B, the HT Block
    /// Ack window).
    pub k_max: u32,
    /// `B_max` in packets; `None` derives it from (5)–(7) at `top_rate` and `k_max` (94 packets
    /// with the defaults). Default `None`.
    pub b_max: Option<u32>,
    /// `B_min` in packets until the host reports an aggregate length. Default 1 (no
    /// aggregation, §V-C).
    pub b_min: u32,
}

impl Default for WqmConfig {
    fn default() -> Self {
        WqmConfig {
            interval: Duration::from_millis(100),
            limit: Duration::from_micros(2_500),
            variant: WqmVariant::Aimd,
            packet_size: Bytes(1500),
            artt: ArttParams::default(),
            top_rate: BitRate::from_mbps(600),
            k_max: 64,
            b_max: None,
            b_min: 1,
        }
    }
}

impl WqmConfig {
    /// Checks the parameters; the error names the field and what is allowed.
    pub fn validate(&self) -> Result<(), &'static str> {
        if self.interval.is_zero() {
            return Err("wqm.interval: must be > 0");
        }
        if self.limit.is_zero() {
            return Err("wqm.limit: must be > 0");
        }
        if self.packet_size.0 == 0 {
            return Err("wqm.packet_size: must be > 0 octets");
        }
        self.artt.validate()?;
        if self.b_min == 0 {
            return Err("wqm.b_min: must be at least 1 packet");
        }
        match self.b_max {
            Some(0) => return Err("wqm.b_max: must be at least 1 packet"),
            Some(_) => {}
            None => {
                if self.top_rate.bps() == 0 {
                    return Err("wqm.top_rate: must be > 0 to derive B_max");
                }
                if self.k_max == 0 {
                    return Err("wqm.k_max: must be at least 1 subframe to derive B_max");
                }
            }
        }
        if self.b_min > self.b_max_packets() {
            return Err("wqm.b_min: must not exceed B_max");
        }
        Ok(())
    }

    /// `B_max` in packets: the configured value or equation (5) at the top rate.
    pub fn b_max_packets(&self) -> u32 {
        self.b_max
            .unwrap_or_else(|| b_max(&self.artt, self.top_rate, self.k_max, self.packet_size))
    }
}

/// Channel times as a channel survey reports them (`iw dev … survey dump`: "channel active
/// time", "channel busy time", "channel transmit time").
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ChannelTimes {
    /// Time the radio spent on the channel.
    pub active: Duration,
    /// Time the medium was sensed busy (including this radio's own transmissions).
    pub busy: Duration,
    /// Time this radio spent transmitting. Zero if `busy` already excludes it.
    pub tx: Duration,
}

/// What a host hands the controller. Each input replaces the previous value of its kind; the
/// latest values are used at the next measurement instant.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WqmInput {
    /// `R`, the current transmission rate to the peer (e.g. the station's "tx bitrate").
    TxRate(BitRate),
    /// `BL`, the backlog of the managed queue in octets (Algorithm 1: "the number of bits in
    /// the buffer").
    BacklogBytes(Bytes),
    /// `BL` as a packet count (what `txqueuelen`-style queues report), converted with
    /// [`WqmConfig::packet_size`].
    BacklogPackets(u32),
    /// The maximum A-MPDU length in use, in MPDUs (1 when aggregation is off): `B_min` from the
    /// next measurement instant on (clamped to `[1, B_max]`).
    AggregateLength(u32),
    /// Channel times over the interval just ended; `F = 1 − (busy − tx) / active`.
    ChannelInterval(ChannelTimes),
    /// Cumulative channel-survey counters. The controller differences the latest snapshot at
    /// each measurement instant against the one at the previous instant; a counter that goes
    /// backwards (a reset) starts a new baseline and keeps the previous `F`.
    ChannelSurvey(ChannelTimes),
}

/// What the controller asks of its host.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WqmOutput {
    /// Set the queue limit to this many packets. Emitted only when the limit changes.
    SetLimit(u32),
}

/// Parameters fixed at build: the configuration and the `B_max` it implies.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct WqmParams {
    pub config: WqmConfig,
    /// `B_max` in packets.
    pub b_max: u32,
}

/// WQM state.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct WqmVars {
    /// `B`, the buffer size in packets; `None` until the initial stage has run.
    pub b: Option<u32>,
    /// `B_min` in packets.
    pub b_min: u32,
    /// `alarmhigh` of Algorithm 1.
    pub alarm_high: bool,
    /// `alarmlow` of Algorithm 1.
    pub alarm_low: bool,
    /// Latest `R` (0 until reported).
    pub rate: BitRate,
    /// Latest `BL` in octets.
    pub backlog: Bytes,
    /// Latest reported aggregate length, applied to `B_min` at the next measurement instant.
    pub aggregate_length: Option<u32>,
    /// Current `F` (1 until channel times are reported).
    pub f: FreeFraction,
    /// `T_drain` at the latest adjustment.
    pub t_drain: Option<Duration>,
    /// The next measurement instant.
    pub next_interval: Instant,
}

/// Monotone counters.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct WqmStats {
    /// Measurement intervals of the adjustment stage evaluated (Algorithm 1 loop bodies).
    pub intervals: u64,
    /// Buffer increases (Algorithm 1 line 16).
    pub increases: u64,
    /// Buffer decreases (Algorithm 1 line 10).
    pub decreases: u64,
    /// Measurement instants passed over because no rate was known yet.
    pub skipped: u64,
    /// Times `B` was raised because `B_min` grew above it.
    pub raised_to_b_min: u64,
    /// `SetLimit` outputs emitted.
    pub outputs: u64,
}

/// The WQM buffer sizer.
#[derive(Clone, Debug)]
pub struct Wqm {
    params: WqmParams,
    vars: WqmVars,
    stats: WqmStats,
    /// Latest cumulative survey snapshot handed in.
    survey_latest: Option<ChannelTimes>,
    /// The snapshot in use at the previous measurement instant.
    survey_base: Option<ChannelTimes>,
    /// The limit last handed to the host.
    emitted: Option<u32>,
}

impl Wqm {
    /// Builds the controller; the first measurement instant is `now + interval`.
    pub fn new(config: WqmConfig, now: Instant) -> Result<Self, &'static str> {
        config.validate()?;
        let b_max = config.b_max_packets();
        Ok(Wqm {
            params: WqmParams { config, b_max },
            vars: WqmVars {
                b: None,
                b_min: config.b_min,
                alarm_high: false,
                alarm_low: false,
                rate: BitRate(0),
                backlog: Bytes(0),
                aggregate_length: None,
                f: FreeFraction::ONE,
                t_drain: None,
                next_interval: now + config.interval,
            },
            stats: WqmStats::default(),
            survey_latest: None,
            survey_base: None,
            emitted: None,
        })
    }

    pub fn params(&self) -> &WqmParams {
        &self.params
    }
    pub fn vars(&self) -> &WqmVars {
        &self.vars
    }
    pub fn stats(&self) -> &WqmStats {
        &self.stats
    }
    /// The current queue limit `B` in packets (`None` before the initial stage).
    pub fn limit(&self) -> Option<u32> {
        self.vars.b
    }
    pub fn b_min(&self) -> u32 {
        self.vars.b_min
    }
    pub fn b_max(&self) -> u32 {
        self.params.b_max
    }

    /// `B_min ≤ B ≤ B_max`, `1 ≤ B_min ≤ B_max`, and the two alarms never both on.
    pub fn invariants(&self) -> Result<(), &'static str> {
        let v = &self.vars;
        if v.b_min == 0 || v.b_min > self.params.b_max {
            return Err("B_min outside [1, B_max]");
        }
        if let Some(b) = v.b {
            if b < v.b_min {
                return Err("B below B_min");
            }
            if b > self.params.b_max {
                return Err("B above B_max");
            }
        }
        if v.alarm_high && v.alarm_low {
            return Err("both alarms on");
        }
        if v.f.free > v.f.total || v.f.total.is_zero() {
            return Err("F outside (0, 1]");
        }
        Ok(())
    }

    /// The channel times of the interval that just ended, from the survey counters.
    fn difference_survey(&mut self) {
        let Some(latest) = self.survey_latest else {
            return;
        };
        if let Some(base) = self.survey_base {
            let monotone =
                latest.active >= base.active && latest.busy >= base.busy && latest.tx >= base.tx;
            if monotone {
                let f = FreeFraction::from_channel_times(
                    latest.active - base.active,
                    latest.busy - base.busy,
                    latest.tx - base.tx,
                );
                if let Some(f) = f {
                    self.vars.f = f;
                }
            }
        }
        self.survey_base = Some(latest);
    }

    /// One measurement instant: the initial stage (lines 1–3) or one pass of the loop
    /// (lines 5–20).
    fn on_interval(&mut self) {
        self.difference_survey();
        let b_max = self.params.b_max;
        let cfg = &self.params.config;
        let v = &mut self.vars;
        if let Some(k) = v.aggregate_length {
            v.b_min = k.clamp(1, b_max);
        }
        if let Some(b) = v.b {
            if b < v.b_min {
                v.b = Some(v.b_min);
                self.stats.raised_to_b_min += 1;
            }
        }
        if v.rate.bps() == 0 {
            self.stats.skipped += 1;
            return;
        }
        let Some(b) = v.b else {
            // Lines 2–3: B_initial = ARTT · R, with the aggregate length in use as K.
            let b0 = b_initial(&cfg.artt, v.rate, v.b_min, cfg.packet_size);
            v.b = Some(b0.clamp(v.b_min, b_max));
            return;
        };
        self.stats.intervals += 1;
        // Lines 5–6, equation (2).
        let t = t_drain(v.backlog, v.rate, v.f);
        v.t_drain = Some(t);
        if t > cfg.limit && b > v.b_min {
            if v.alarm_high {
                v.b = Some(cfg.variant.decrease(b).max(v.b_min));
                self.stats.decreases += 1;
            } else {
                v.alarm_high = true;
                v.alarm_low = false;
            }
        } else if t < cfg.limit && b < b_max {
            if v.alarm_low {
                v.b = Some(cfg.variant.increase(b).min(b_max));
                self.stats.increases += 1;
            } else {
                v.alarm_low = true;
                v.alarm_high = false;
            }
        }
    }
}

impl Controller for Wqm {
    type Input = WqmInput;
    type Output = WqmOutput;

    fn handle_input(&mut self, _now: Instant, input: WqmInput) {
        let v = &mut self.vars;
        match input {
            WqmInput::TxRate(r) => v.rate = r,
            WqmInput::BacklogBytes(bl) => v.backlog = bl,
            WqmInput::BacklogPackets(n) => {
                v.backlog = Bytes((n as u64).saturating_mul(self.params.config.packet_size.0))
            }
            WqmInput::AggregateLength(k) => v.aggregate_length = Some(k),
            WqmInput::ChannelInterval(c) => {
                if let Some(f) = FreeFraction::from_channel_times(c.active, c.busy, c.tx) {
                    v.f = f;
                }
            }
            WqmInput::ChannelSurvey(c) => self.survey_latest = Some(c),
        }
    }

    fn poll_output(&mut self) -> Option<WqmOutput> {
        let b = self.vars.b?;
        if self.emitted == Some(b) {
            return None;
        }
        self.emitted = Some(b);
        self.stats.outputs += 1;
        Some(WqmOutput::SetLimit(b))
    }

    fn poll_timeout(&self) -> Option<Instant> {
        Some(self.vars.next_interval)
    }

    fn handle_timeout(&mut self, now: Instant) {
        let due = self.vars.next_interval;
        if now < due {
            return;
        }
        self.on_interval();
        // The next instant on the grid strictly after `now`.
        let interval = self.params.config.interval.as_nanos();
        let missed = (now - due).as_nanos() / interval;
        self.vars.next_interval = due + Duration(interval.saturating_mul(missed + 1));
        debug_assert!(self.invariants().is_ok(), "{:?}", self.invariants());
    }
}
