//! aggctl: sender rate regulated by the receiver's measured aggregation level, after Hassani,
//! Gringoli and Leith, "Regulating Aggregation Level For Low Latency in 802.11ac".
//!
//! The paper's observation (§III, Fig. 3): as the downlink send rate to a station rises, the
//! mean number of MPDUs per A-MPDU rises monotonically up to the Block Ack limit N_max = 64,
//! and the delay knee and the onset of queue-overflow loss coincide with aggregation reaching
//! N_max. Holding the aggregation level at a target N_ε well below N_max (32) keeps the AP
//! queue short while the rate stays near capacity.
//!
//! Two halves, one on each end of the path:
//!
//! * [`estimator`] — runs at the receiver. [`AggregationEstimator`] groups received packets
//!   into aggregates (by the radiotap A-MPDU reference when the host has it, otherwise by
//!   receive timestamps, §II.B) and reports every Δ the counts from which the slot mean
//!   μ_{N_i}(k) (§III.A) follows, plus the mean PHY rate μ_{R_i}(k) when known (§III.B).
//! * [`report`] — the [`AggReport`] a receiver sends back "as the payload of a UDP packet"
//!   (§IV.B), with a fixed little-endian byte layout ([`AggReport::encode`] /
//!   [`AggReport::decode`]).
//! * [`allocator`] — runs at the sender. [`RateAllocator`] applies Algorithm 1 / eq. (1) to
//!   the rate x_i of each station (or of the highest-rate station i*) with gain K = K0/n, and
//!   shares the rates for equal airtime by eq. (2). A feedback watchdog (hold, then
//!   multiplicative decay) is our addition.

pub mod allocator;
pub mod estimator;
pub mod report;
#[cfg(test)]
mod tests;

pub use allocator::{
    equal_airtime_rate, gain, integral_step, payload_airtime, AggctlConfig, Allocation,
    AllocatorInput, AllocatorStats, Feedback, RateAllocator, RateUpdate, StationId, StationView,
};
pub use estimator::{AggregationEstimator, EstimatorConfig, EstimatorStats, RxPacket};
pub use report::{AggReport, DecodeError, REPORT_LEN, REPORT_MAGIC, REPORT_VERSION};

use alloc::string::String;
use core::fmt;

/// A configuration value outside its allowed range: which field, the value given, and what is
/// allowed (so a host can print one line naming all three).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ConfigError {
    /// Field name as in the config struct, e.g. `"target_aggregation"`.
    pub field: &'static str,
    /// The rejected value, formatted.
    pub value: String,
    /// The allowed range, e.g. `"1 ..= block_ack_window (64)"`.
    pub allowed: String,
}

impl fmt::Display for ConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} = {}: allowed {}",
            self.field, self.value, self.allowed
        )
    }
}

impl ConfigError {
    pub(crate) fn new(
        field: &'static str,
        value: impl fmt::Debug,
        allowed: impl Into<String>,
    ) -> Self {
        ConfigError {
            field,
            value: alloc::format!("{value:?}"),
            allowed: allowed.into(),
        }
    }
}
