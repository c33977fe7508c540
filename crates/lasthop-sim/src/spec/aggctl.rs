//! The `[aggctl]` section of the normalized spec (docs/spec.md): parameters of the aggctl rate
//! allocator at the server and of the aggregation estimators at the receiving stations
//! (`lasthop_algo::control::aggctl`), and the rules `pattern = "aggctl"` flows and
//! `stations[].nss_change` must satisfy.

use super::{Direction, Pattern, Problem, RateControl, Spec};
use lasthop_algo::control::aggctl::{AggctlConfig, Allocation, ConfigError, EstimatorConfig};
use lasthop_core::{BitRate, Bytes, Duration};
use lasthop_wifi::phy;
use serde::{Deserialize, Serialize};

/// Defaults are the paper's (N_ε 32, Δ 500 ms, K0 1 with rates in Mb/s) and the algorithm
/// crate's documented ones; Python fills every key, these serve specs written by hand.
#[derive(Clone, Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields, default)]
pub struct AggctlSpec {
    /// N_ε, packets per A-MPDU the loop regulates to.
    pub target_aggregation: u32,
    /// Δ, the report interval and slot length.
    pub interval_ns: u64,
    /// K0 in Mb/s per packet of aggregation error (K = K0/n, n = aggctl flows running).
    pub k0: f64,
    pub initial_rate_bps: u64,
    pub min_rate_bps: u64,
    pub max_rate_bps: u64,
    /// "equal_airtime" (eqs. (1)–(2)) or "per_station" (Algorithm 1 per flow).
    pub allocation: String,
    /// Feedback watchdog: hold a flow's rate after this long without a report, halve it every
    /// Δ (by `decay_factor`) after `decay_after`.
    pub hold_time_ns: u64,
    pub decay_after_ns: u64,
    pub decay_factor: f64,
    /// The estimator's frame-splitting gap: receive timestamps closer than this are one frame.
    pub gap_threshold_ns: u64,
    /// The receiver's timestamp clock: resolution (timestamps are floored to a multiple) and
    /// the largest random delay added per packet before flooring (uniform in [0, jitter]).
    pub clock_resolution_ns: u64,
    pub clock_jitter_ns: u64,
    /// Receivers see the PHY rate of each frame (a radiotap header) and report it; without it
    /// the allocator cannot apply eq. (2) and runs Algorithm 1 per flow.
    pub report_rate: bool,
    /// A lossy feedback path: each report is lost on its way to the server with this
    /// probability, and every report arriving inside `report_blackout_ns` `[from, until)` is
    /// lost (after it crossed the cell, so it still costs uplink airtime).
    pub report_loss: f64,
    pub report_blackout_ns: Option<(u64, u64)>,
}

impl Default for AggctlSpec {
    fn default() -> Self {
        let a = AggctlConfig::default();
        let e = EstimatorConfig::default();
        AggctlSpec {
            target_aggregation: a.target_aggregation,
            interval_ns: a.interval.as_nanos(),
            k0: a.k0 / 1e6,
            initial_rate_bps: a.initial_rate.0,
            min_rate_bps: a.min_rate.0,
            max_rate_bps: a.max_rate.0,
            allocation: "equal_airtime".into(),
            hold_time_ns: a.hold_time.as_nanos(),
            decay_after_ns: a.decay_after.as_nanos(),
            decay_factor: a.decay_factor,
            gap_threshold_ns: e.gap_threshold.as_nanos(),
            clock_resolution_ns: 1_000,
            clock_jitter_ns: 0,
            report_rate: true,
            report_loss: 0.0,
            report_blackout_ns: None,
        }
    }
}

/// The spec key of a config field.
fn key(field: &str) -> &'static str {
    match field {
        "target_aggregation" => "aggctl.target_aggregation",
        "interval" => "aggctl.interval",
        "k0" => "aggctl.k0",
        "initial_rate" => "aggctl.initial_rate",
        "min_rate" => "aggctl.min_rate",
        "max_rate" => "aggctl.max_rate",
        "hold_time" => "aggctl.hold_time",
        "decay_after" => "aggctl.decay_after",
        "decay_factor" => "aggctl.decay_factor",
        "gap_threshold" => "aggctl.gap_threshold",
        "packet_size" => "flows[].packet_size",
        "block_ack_window" => "mac.max_ampdu_mpdus",
        _ => "aggctl",
    }
}

fn problem(e: ConfigError) -> Problem {
    (key(e.field).to_string(), e.value, e.allowed)
}

impl AggctlSpec {
    /// The allocator's configuration; `n_max` is N_max (the MAC's MPDUs per A-MPDU), `packet`
    /// the aggctl flows' packet size.
    pub fn allocator_config(&self, n_max: u32, packet: u32) -> AggctlConfig {
        AggctlConfig {
            target_aggregation: self.target_aggregation,
            block_ack_window: n_max,
            interval: Duration(self.interval_ns),
            k0: self.k0 * 1e6,
            packet_size: Bytes(packet as u64),
            initial_rate: BitRate(self.initial_rate_bps),
            min_rate: BitRate(self.min_rate_bps),
            max_rate: BitRate(self.max_rate_bps),
            allocation: if self.allocation == "per_station" { Allocation::PerStation } else { Allocation::EqualAirtime },
            hold_time: Duration(self.hold_time_ns),
            decay_after: Duration(self.decay_after_ns),
            decay_factor: self.decay_factor,
        }
    }

    pub fn estimator_config(&self) -> EstimatorConfig {
        EstimatorConfig {
            interval: Duration(self.interval_ns),
            gap_threshold: Duration(self.gap_threshold_ns),
            ..EstimatorConfig::default()
        }
    }
}

impl Spec {
    /// N_max: the most MPDUs the MAC puts in one A-MPDU.
    pub fn aggctl_n_max(&self) -> u32 {
        let win = phy::ba_window(self.phy.standard) as u32;
        if self.mac.aggregation { self.mac.max_ampdu_mpdus.min(win) } else { 1 }
    }

    /// The rules of `[aggctl]`, of `pattern = "aggctl"` flows and of `nss_change`.
    pub(super) fn aggctl_problems(&self) -> Vec<Problem> {
        let mut p: Vec<Problem> = Vec::new();
        let a = &self.aggctl;
        let flows: Vec<(usize, &super::FlowSpec)> = self.flows.iter().enumerate().filter(|(_, f)| f.pattern == Pattern::Aggctl).collect();
        for &(i, f) in &flows {
            if f.direction != Direction::Down {
                p.push((format!("flows[{i}].direction"), format!("{:?}", f.direction.as_str()), "\"down\" for aggctl (a paced download from the server)".into()));
            }
            if let Some(&(j, _)) = flows.iter().find(|(j, g)| *j < i && g.station == f.station) {
                p.push((format!("flows[{i}].stations"), f.station.to_string(), format!("one aggctl flow per station (flow {j} already goes there)")));
            }
            if f.packet_size != flows[0].1.packet_size {
                p.push((format!("flows[{i}].packet_size"), f.packet_size.to_string(), format!("the same for every aggctl flow ({})", flows[0].1.packet_size)));
            }
        }
        let packet = flows.first().map_or(1500, |(_, f)| f.packet_size);
        let n_max = self.aggctl_n_max();
        if flows.is_empty() {
            // No allocator runs; N_ε is checked against the MAC only where it is used.
        } else if a.target_aggregation > n_max {
            p.push(("aggctl.target_aggregation".into(), a.target_aggregation.to_string(), format!("1..={n_max} (N_max: mac.max_ampdu_mpdus within the Block Ack window)")));
        } else if let Err(e) = self.aggctl.allocator_config(n_max, packet).validate() {
            p.push(problem(e));
        }
        if let Err(e) = a.estimator_config().validate() {
            p.push(problem(e));
        }
        // N_ε must fit in the A-MPDUs an aggctl receiver's Block Ack window lets it be sent.
        for &(_, f) in &flows {
            let Some(st) = self.stations.get(f.station as usize) else { continue };
            if st.ba_window_rx != 0 && st.ba_window_rx < a.target_aggregation && a.target_aggregation <= n_max {
                p.push((
                    format!("stations[{}].ba_window_rx", f.station),
                    st.ba_window_rx.to_string(),
                    format!("0, or at least aggctl.target_aggregation ({}) for a station an aggctl flow goes to", a.target_aggregation),
                ));
            }
        }
        for (i, st) in self.stations.iter().enumerate() {
            let Some((t, n)) = st.nss_change else { continue };
            let path = format!("stations[{i}].nss_change");
            if t > self.sim.duration_ns {
                p.push((path.clone(), format!("{t}ns"), "a time <= sim.duration".into()));
            }
            if n == 0 || n > st.nss {
                p.push((path, n.to_string(), format!("1..={} streams (at most the station's nss)", st.nss)));
            } else if st.rate_control == RateControl::Fixed {
                let tx = phy::TxVector { nss: n, ..self.tx_vector(st) };
                if let Err(e) = tx.validate() {
                    p.push((path, n.to_string(), format!("a stream count valid with mcs {}: {}", st.mcs, e.allowed)));
                }
            }
        }
        p
    }
}

