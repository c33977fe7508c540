//! Sender-side rate allocator: paced downlink rates per station, regulated so that each
//! station's measured aggregation level stays at a target, after "Regulating Aggregation Level
//! For Low Latency in 802.11ac" (Hassani, Gringoli, Leith).
//!
//! What follows the paper:
//! * §III.A, Algorithm 1: on each report μ_{N_i}(k) from station i, its transmit rate is
//!   updated by the integral step `x_i ← x_i − K(μ_{N_i} − N_ε)` ([`integral_step`]) — the
//!   rate rises while frames carry fewer than N_ε packets and falls while they carry more.
//!   K = K0/n, n the number of client stations ([`gain`]); typical values Δ = 500 ms, K0 = 1,
//!   N_ε = 32.
//! * §III.B, equal airtime: the payload airtime of a frame is T_i = μ_{N_i} L / μ_{R_i}
//!   ([`payload_airtime`]). The station i* with the highest MCS rate μ_{R_i} gets the update of
//!   eq. (1), `x_{i*}(k+1) = x_{i*}(k) − K(μ_{N_{i*}}(k) − N_ε)`, and every other station the
//!   rate of eq. (2), `x_i(k+1) = x_{i*}(k+1) μ_{R_i} / μ_{R_{i*}}` ([`equal_airtime_rate`]).
//!
//! Readings and choices where the paper is silent:
//! * Units. x is "the transmit rate"; the paper quotes rates in Mb/s and gives K0 = 1 without a
//!   unit. We keep x in bit/s and K0 in bit/s per packet of aggregation error, default 10^6,
//!   i.e. K0 = 1 with x in Mb/s: with one station the rate moves by at most
//!   N_max − N_ε = 32 Mb/s per update, the same order as Fig. 9, where recovering from
//!   saturation takes about four updates. The pacing interval handed to the host is L / x.
//! * Eq. (1) is written with μ_{N_i}(k); we use the aggregation level of i* itself, the
//!   station whose rate it updates (with rates ∝ μ_{R_i}, i* sees the largest aggregation,
//!   μ_{N_i} = N_ε μ_{R_i}/μ_{R_{i*}}).
//! * The update runs when i*'s report arrives; reports from other stations only refresh their
//!   μ_{R_i}, which eq. (2) uses at i*'s next update. A station whose reports carry no rate
//!   (the host cannot see the MCS), or every station under [`Allocation::PerStation`], follows
//!   Algorithm 1 on its own rate. n counts every joined station.
//! * Joining. The paper gives no initial rate; a station starts at
//!   [`AggctlConfig::initial_rate`] (default 10 Mb/s, a rate at which Fig. 2(a) shows no
//!   aggregation, so nothing queues), or, if the host knows its PHY rate at join, directly at
//!   its eq. (2) share. After a station leaves, eq. (2) is re-applied from the (new) i*.
//! * Rates are clamped to [min_rate, max_rate] ([`AggctlConfig::min_rate`],
//!   [`AggctlConfig::max_rate`]); the clamp on x itself is the integrator's anti-windup.
//! * Feedback watchdog (our addition, not in the paper): a station without an applied report
//!   for [`AggctlConfig::hold_time`] (default 2Δ) is *held* — its rate frozen and it leaves the
//!   equal-airtime group, so neither eq. (2) nor the choice of i* uses stale data — and after
//!   [`AggctlConfig::decay_after`] (default 4Δ) its rate is multiplied by
//!   [`AggctlConfig::decay_factor`] (default 1/2) every Δ down to `min_rate`. Its next report
//!   makes it fresh again. Reports of an empty slot carry no measurement and neither update
//!   the rate nor feed the watchdog; a repeat of the last applied `seq` is ignored.
//!
//! Sans-IO: rates change only in `handle_input` / `handle_timeout`; the watchdog is caught up
//! at every input, so the result does not depend on how often the host drives the timer.

use super::report::AggReport;
use super::ConfigError;
use alloc::collections::{BTreeMap, VecDeque};
use lasthop_core::{BitRate, Bytes, Controller, Duration, Instant};

/// Host-chosen identifier of a client station (or of the flow to it).
pub type StationId = u32;

/// How rates are shared between stations.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Allocation {
    /// Eqs. (1)–(2): equal airtime, the highest-rate station regulated (§III.B). Stations
    /// whose MCS rate is unknown fall back to Algorithm 1.
    EqualAirtime,
    /// Algorithm 1 for every station independently (§III.A).
    PerStation,
}

/// Parameters of the rate allocator.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct AggctlConfig {
    /// N_ε, target packets per frame. Default 32 (§III.A, §IV.C). At most `block_ack_window`.
    pub target_aggregation: u32,
    /// N_max, the most MPDUs per A-MPDU the MAC allows (Block Ack window). Default 64
    /// (HT/VHT; §III: "for the data shown N_max = 64").
    pub block_ack_window: u32,
    /// Δ, the slot length (§III.A: 500 ms). Paces the watchdog's decay steps; the control
    /// updates themselves are driven by the reports, which arrive every Δ.
    pub interval: Duration,
    /// K0 in bit/s per packet of aggregation error; K = K0/n. Default 1e6 (K0 = 1 with the
    /// rate in Mb/s, §III.A).
    pub k0: f64,
    /// Packet size L (§III.B), for the pacing interval L / x. Default 1500 bytes.
    pub packet_size: Bytes,
    /// Rate of a station when it joins without a known PHY rate. Default 10 Mb/s.
    pub initial_rate: BitRate,
    /// Floor of every rate (keeps feedback flowing). Default 1 Mb/s.
    pub min_rate: BitRate,
    /// Cap of every rate. Default 10 Gb/s, above any single 802.11ax station's PHY rate.
    pub max_rate: BitRate,
    /// Equal airtime (default) or independent per-station control.
    pub allocation: Allocation,
    /// Without an applied report for this long, a station is held. Default 2Δ = 1 s.
    pub hold_time: Duration,
    /// Without an applied report for this long, a held station's rate starts to decay.
    /// Default 4Δ = 2 s.
    pub decay_after: Duration,
    /// Multiplier applied every Δ while decaying, in (0, 1). Default 0.5.
    pub decay_factor: f64,
}

impl Default for AggctlConfig {
    fn default() -> Self {
        AggctlConfig {
            target_aggregation: 32,
            block_ack_window: 64,
            interval: Duration::from_millis(500),
            k0: 1e6,
            packet_size: Bytes(1500),
            initial_rate: BitRate::from_mbps(10),
            min_rate: BitRate::from_mbps(1),
            max_rate: BitRate::from_mbps(10_000),
            allocation: Allocation::EqualAirtime,
            hold_time: Duration::from_secs(1),
            decay_after: Duration::from_secs(2),
            decay_factor: 0.5,
        }
    }
}

impl AggctlConfig {
    /// Check every field; the error names the first field out of range and what is allowed.
    pub fn validate(&self) -> Result<(), ConfigError> {
        use alloc::format;
        let c = self;
        if !(1..=1024).contains(&c.block_ack_window) {
            return Err(ConfigError::new(
                "block_ack_window",
                c.block_ack_window,
                "1 ..= 1024",
            ));
        }
        if !(1..=c.block_ack_window).contains(&c.target_aggregation) {
            return Err(ConfigError::new(
                "target_aggregation",
                c.target_aggregation,
                format!("1 ..= block_ack_window ({})", c.block_ack_window),
            ));
        }
        if c.interval < Duration::from_millis(1) || c.interval > Duration::from_secs(60) {
            return Err(ConfigError::new("interval", c.interval, "1 ms ..= 60 s"));
        }
        if !(c.k0.is_finite() && c.k0 > 0.0 && c.k0 <= 1e9) {
            return Err(ConfigError::new(
                "k0",
                c.k0,
                "0 < k0 <= 1e9 bit/s per packet",
            ));
        }
        if !(1..=65_535).contains(&c.packet_size.0) {
            return Err(ConfigError::new(
                "packet_size",
                c.packet_size.0,
                "1 ..= 65535 bytes",
            ));
        }
        if !(1..=1_000_000_000_000).contains(&c.max_rate.0) {
            return Err(ConfigError::new(
                "max_rate",
                c.max_rate.0,
                "1 ..= 1e12 bit/s",
            ));
        }
        if !(1..=c.max_rate.0).contains(&c.min_rate.0) {
            return Err(ConfigError::new(
                "min_rate",
                c.min_rate.0,
                format!("1 ..= max_rate ({}) bit/s", c.max_rate.0),
            ));
        }
        if !(c.min_rate.0..=c.max_rate.0).contains(&c.initial_rate.0) {
            return Err(ConfigError::new(
                "initial_rate",
                c.initial_rate.0,
                format!(
                    "min_rate ..= max_rate ({} ..= {}) bit/s",
                    c.min_rate.0, c.max_rate.0
                ),
            ));
        }
        if c.hold_time < c.interval || c.hold_time > Duration::from_secs(3600) {
            return Err(ConfigError::new(
                "hold_time",
                c.hold_time,
                format!("interval ({:?}) ..= 3600 s", c.interval),
            ));
        }
        if c.decay_after < c.hold_time || c.decay_after > Duration::from_secs(3600) {
            return Err(ConfigError::new(
                "decay_after",
                c.decay_after,
                format!("hold_time ({:?}) ..= 3600 s", c.hold_time),
            ));
        }
        if !(c.decay_factor > 0.0 && c.decay_factor < 1.0) {
            return Err(ConfigError::new(
                "decay_factor",
                c.decay_factor,
                "0 < decay_factor < 1",
            ));
        }
        Ok(())
    }
}

/// K = K0/n (§III.A), n the number of client stations (at least 1).
pub fn gain(k0: f64, n: usize) -> f64 {
    k0 / n.max(1) as f64
}

/// Algorithm 1, line 3, and eq. (1): `x ← x − K(μ_N − N_ε)`.
pub fn integral_step(x: f64, k: f64, mu_n: f64, n_e: f64) -> f64 {
    x - k * (mu_n - n_e)
}

/// Eq. (2): `x_i = x_{i*} μ_{R_i} / μ_{R_{i*}}`.
pub fn equal_airtime_rate(x_istar: f64, mu_r_i: f64, mu_r_istar: f64) -> f64 {
    x_istar * mu_r_i / mu_r_istar
}

/// §III.B: payload airtime of a frame, `T_i = μ_{N_i} L / μ_{R_i}` (seconds, with L in bits and
/// μ_{R_i} in bit/s).
pub fn payload_airtime(mu_n: f64, l_bits: f64, mu_r: f64) -> f64 {
    mu_n * l_bits / mu_r
}

/// The allocator's inputs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AllocatorInput {
    /// A station starts receiving; `phy_rate` is its MCS rate if the host already knows it.
    Join {
        station: StationId,
        phy_rate: Option<BitRate>,
    },
    /// A station stops receiving.
    Leave { station: StationId },
    /// A report from a station's receiver (decoded from its feedback packet).
    Report {
        station: StationId,
        report: AggReport,
    },
}

/// A new send rate for a station, and the matching pacing interval L / x.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RateUpdate {
    pub station: StationId,
    pub rate: BitRate,
    pub pacing_interval: Duration,
}

/// State of a station's feedback (see the watchdog in the module doc).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Feedback {
    /// A report was applied within `hold_time`.
    Fresh,
    /// No report for `hold_time`: rate frozen, out of the equal-airtime group.
    Held,
    /// No report for `decay_after`: rate decaying every Δ.
    Decaying,
}

/// A read-only view of one station.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct StationView {
    /// x_i, the rate as the control law holds it (bit/s).
    pub x: f64,
    /// x_i rounded, as last handed to the host.
    pub rate: BitRate,
    /// Last reported μ_{N_i}.
    pub mu_n: Option<f64>,
    /// Last known μ_{R_i} (bit/s).
    pub mu_r: Option<f64>,
    pub feedback: Feedback,
    /// When the last report was applied (or the station joined).
    pub last_feedback: Instant,
}

/// Monotone counters.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct AllocatorStats {
    pub joins: u64,
    pub leaves: u64,
    /// Every report handed in: `applied + empty + unknown + duplicate`.
    pub reports: u64,
    pub reports_applied: u64,
    /// Reports of a slot without frames (no measurement).
    pub reports_empty: u64,
    /// Reports for a station that has not joined.
    pub reports_unknown: u64,
    /// Reports repeating the last applied `seq`.
    pub reports_duplicate: u64,
    /// Eq. (1) updates of i* (each followed by eq. (2)).
    pub reference_updates: u64,
    /// Algorithm 1 updates of stations outside the equal-airtime group.
    pub station_updates: u64,
    /// Stations that became held.
    pub holds: u64,
    /// Multiplicative decay steps.
    pub decay_steps: u64,
    /// `RateUpdate`s produced.
    pub rate_changes: u64,
}

#[derive(Clone, Copy, Debug)]
struct Station {
    x: f64,
    /// Last rate handed out (0 before the first).
    rate: BitRate,
    mu_n: Option<f64>,
    mu_r: Option<f64>,
    last_feedback: Instant,
    last_seq: Option<u32>,
    feedback: Feedback,
    /// Next decay step while held or decaying.
    next_decay: Instant,
}

/// Per-station send rates regulated by aggregation feedback (see the module doc).
#[derive(Clone, Debug)]
pub struct RateAllocator {
    params: AggctlConfig,
    stations: BTreeMap<StationId, Station>,
    out: VecDeque<RateUpdate>,
    stats: AllocatorStats,
}

impl RateAllocator {
    pub fn new(params: AggctlConfig) -> Result<Self, ConfigError> {
        params.validate()?;
        Ok(RateAllocator {
            params,
            stations: BTreeMap::new(),
            out: VecDeque::new(),
            stats: AllocatorStats::default(),
        })
    }

    pub fn params(&self) -> &AggctlConfig {
        &self.params
    }
    pub fn stats(&self) -> AllocatorStats {
        self.stats
    }
    /// n, the number of joined stations.
    pub fn len(&self) -> usize {
        self.stations.len()
    }
    pub fn is_empty(&self) -> bool {
        self.stations.is_empty()
    }
    /// The joined stations, in id order.
    pub fn station_ids(&self) -> impl Iterator<Item = StationId> + '_ {
        self.stations.keys().copied()
    }
    /// The current gain K = K0/n.
    pub fn gain(&self) -> f64 {
        gain(self.params.k0, self.stations.len())
    }
    /// The rate last handed out for `station`.
    pub fn rate(&self, station: StationId) -> Option<BitRate> {
        self.stations.get(&station).map(|s| s.rate)
    }
    pub fn station(&self, station: StationId) -> Option<StationView> {
        self.stations.get(&station).map(|s| StationView {
            x: s.x,
            rate: s.rate,
            mu_n: s.mu_n,
            mu_r: s.mu_r,
            feedback: s.feedback,
            last_feedback: s.last_feedback,
        })
    }

    fn grouped(&self, s: &Station) -> bool {
        self.params.allocation == Allocation::EqualAirtime
            && s.feedback == Feedback::Fresh
            && s.mu_r.is_some()
    }

    /// i*, the fresh station with the highest known MCS rate (lowest id on ties); `None` under
    /// [`Allocation::PerStation`] or when no fresh station has reported a rate.
    pub fn reference_station(&self) -> Option<StationId> {
        let mut best: Option<(StationId, f64)> = None;
        for (&id, s) in &self.stations {
            if let (true, Some(r)) = (self.grouped(s), s.mu_r) {
                if best.is_none_or(|(_, b)| r > b) {
                    best = Some((id, r));
                }
            }
        }
        best.map(|(id, _)| id)
    }

    fn clamp(&self, x: f64) -> f64 {
        x.clamp(self.params.min_rate.0 as f64, self.params.max_rate.0 as f64)
    }

    /// Eq. (2) for every fresh grouped station other than i*.
    fn share_by_eq2(&mut self, istar: StationId) {
        let s = self.stations[&istar];
        let (x_star, Some(r_star)) = (s.x, s.mu_r) else {
            return;
        };
        let ids: alloc::vec::Vec<StationId> = self
            .stations
            .iter()
            .filter(|(&id, s)| id != istar && self.grouped(s))
            .map(|(&id, _)| id)
            .collect();
        for id in ids {
            let r_i = self.stations[&id].mu_r.unwrap_or(r_star);
            let x = self.clamp(equal_airtime_rate(x_star, r_i, r_star));
            if let Some(s) = self.stations.get_mut(&id) {
                s.x = x;
            }
        }
    }

    /// Hand the host every rate that changed since it last heard.
    fn flush(&mut self) {
        let l = self.params.packet_size;
        for (&id, s) in self.stations.iter_mut() {
            let r = BitRate(libm::round(s.x) as u64);
            if r != s.rate {
                s.rate = r;
                self.out.push_back(RateUpdate {
                    station: id,
                    rate: r,
                    pacing_interval: r.tx_time(l),
                });
                self.stats.rate_changes += 1;
            }
        }
    }

    fn on_join(&mut self, now: Instant, id: StationId, phy_rate: Option<BitRate>) {
        if self.stations.contains_key(&id) {
            return;
        }
        self.stats.joins += 1;
        let mu_r = phy_rate.filter(|r| r.0 > 0).map(|r| r.0 as f64);
        let mut x = self.params.initial_rate.0 as f64;
        if let (Some(istar), Some(r), Allocation::EqualAirtime) =
            (self.reference_station(), mu_r, self.params.allocation)
        {
            let s = &self.stations[&istar];
            if let Some(r_star) = s.mu_r {
                x = equal_airtime_rate(s.x, r, r_star);
            }
        }
        let x = self.clamp(x);
        self.stations.insert(
            id,
            Station {
                x,
                rate: BitRate(0),
                mu_n: None,
                mu_r,
                last_feedback: now,
                last_seq: None,
                feedback: Feedback::Fresh,
                next_decay: now + self.params.decay_after,
            },
        );
    }

    fn on_leave(&mut self, id: StationId) {
        if self.stations.remove(&id).is_none() {
            return;
        }
        self.stats.leaves += 1;
        if let Some(istar) = self.reference_station() {
            self.share_by_eq2(istar);
        }
    }

    fn on_report(&mut self, now: Instant, id: StationId, rep: AggReport) {
        self.stats.reports += 1;
        let Some(s) = self.stations.get_mut(&id) else {
            self.stats.reports_unknown += 1;
            return;
        };
        let Some(mu_n) = rep.mean_mpdus() else {
            self.stats.reports_empty += 1;
            return;
        };
        if s.last_seq == Some(rep.seq) {
            self.stats.reports_duplicate += 1;
            return;
        }
        s.last_seq = Some(rep.seq);
        s.last_feedback = now;
        s.feedback = Feedback::Fresh;
        s.mu_n = Some(mu_n);
        if let Some(r) = rep.mean_rate.filter(|r| r.0 > 0) {
            s.mu_r = Some(r.0 as f64);
        }
        self.stats.reports_applied += 1;

        let k = self.gain();
        let n_e = self.params.target_aggregation as f64;
        let s = self.stations[&id];
        if self.grouped(&s) {
            // Eq. (1) for i*, then eq. (2); other members wait for i*'s next update.
            if self.reference_station() == Some(id) {
                let x = self.clamp(integral_step(s.x, k, mu_n, n_e));
                if let Some(st) = self.stations.get_mut(&id) {
                    st.x = x;
                }
                self.share_by_eq2(id);
                self.stats.reference_updates += 1;
            }
        } else {
            // Algorithm 1 on this station's own rate.
            let x = self.clamp(integral_step(s.x, k, mu_n, n_e));
            if let Some(st) = self.stations.get_mut(&id) {
                st.x = x;
            }
            self.stats.station_updates += 1;
        }
    }

    /// The feedback watchdog: hold, then decay, stations without recent reports.
    fn watchdog(&mut self, now: Instant) {
        let p = self.params;
        let floor = p.min_rate.0 as f64;
        for s in self.stations.values_mut() {
            if s.feedback == Feedback::Fresh && now >= s.last_feedback + p.hold_time {
                s.feedback = Feedback::Held;
                s.next_decay = s.last_feedback + p.decay_after;
                self.stats.holds += 1;
            }
            if s.feedback != Feedback::Fresh {
                while now >= s.next_decay && s.x > floor {
                    s.x = (s.x * p.decay_factor).max(floor);
                    s.next_decay += p.interval;
                    s.feedback = Feedback::Decaying;
                    self.stats.decay_steps += 1;
                }
            }
        }
    }

    /// Take the next rate change, oldest first.
    pub fn poll_update(&mut self) -> Option<RateUpdate> {
        self.out.pop_front()
    }

    /// Check the allocator's state: rates finite and within bounds, handed-out rates current,
    /// counters consistent.
    pub fn invariants(&self) -> Result<(), &'static str> {
        let (lo, hi) = (self.params.min_rate.0 as f64, self.params.max_rate.0 as f64);
        for s in self.stations.values() {
            if !s.x.is_finite() || s.x < lo || s.x > hi {
                return Err("rate outside [min_rate, max_rate]");
            }
            if s.rate != BitRate(libm::round(s.x) as u64) {
                return Err("handed-out rate differs from the control state");
            }
            if s.feedback != Feedback::Fresh
                && s.next_decay < s.last_feedback + self.params.decay_after
            {
                return Err("decay scheduled before decay_after");
            }
            if s.mu_r.is_some_and(|r| !(r.is_finite() && r > 0.0)) {
                return Err("non-positive MCS rate");
            }
        }
        let st = &self.stats;
        if st.reports
            != st.reports_applied + st.reports_empty + st.reports_unknown + st.reports_duplicate
        {
            return Err("report counters do not add up");
        }
        if st.joins - st.leaves != self.stations.len() as u64 {
            return Err("joins - leaves != stations");
        }
        Ok(())
    }
}

impl Controller for RateAllocator {
    type Input = AllocatorInput;
    type Output = RateUpdate;

    fn handle_input(&mut self, now: Instant, input: AllocatorInput) {
        self.watchdog(now);
        match input {
            AllocatorInput::Join { station, phy_rate } => self.on_join(now, station, phy_rate),
            AllocatorInput::Leave { station } => self.on_leave(station),
            AllocatorInput::Report { station, report } => self.on_report(now, station, report),
        }
        self.flush();
        debug_assert!(self.invariants().is_ok(), "{:?}", self.invariants());
    }

    fn poll_output(&mut self) -> Option<RateUpdate> {
        self.poll_update()
    }

    /// The earliest hold or decay step due; `None` when no station has joined, or every
    /// station is held at its floor.
    fn poll_timeout(&self) -> Option<Instant> {
        let floor = self.params.min_rate.0 as f64;
        self.stations
            .values()
            .filter_map(|s| match s.feedback {
                Feedback::Fresh => Some(s.last_feedback + self.params.hold_time),
                _ if s.x > floor => Some(s.next_decay),
                _ => None,
            })
            .min()
    }

    fn handle_timeout(&mut self, now: Instant) {
        self.watchdog(now);
        self.flush();
        debug_assert!(self.invariants().is_ok(), "{:?}", self.invariants());
    }
}

#[cfg(test)]
mod tests;
