//! Transport-level controllers: decision-makers that shape when and how much an endpoint
//! sends — acknowledgement policies, the choice of initial congestion window, sender rate
//! regulation from receiver feedback, and the utility-driven airtime allocation of Virtual
//! Wires (`vwire`: flow classifier, optimizer, token-bucket scheduler) — as opposed to the
//! queue disciplines of `aqm` and the congestion controllers of `cc`. Each module names the
//! paper or specification it follows.
//! All are sans-IO and `no_std + alloc`: handed `now` and inputs, they return decisions and
//! timeouts (the [`lasthop_core::Controller`] shape where they have timers), keep params / vars /
//! stats and check their state with `invariants()`.

pub mod ack_policy;
pub mod aggctl;
pub mod cwnd_history;
pub mod vwire;

/// A configuration value outside its allowed range: the field and what is allowed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FieldError {
    /// The offending field.
    pub field: &'static str,
    /// What is allowed.
    pub allowed: &'static str,
}

impl core::fmt::Display for FieldError {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        write!(f, "invalid {}: allowed {}", self.field, self.allowed)
    }
}
