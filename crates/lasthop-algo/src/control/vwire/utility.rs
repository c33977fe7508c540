//! Application utilities u_i(b_i) (§III-D): the value an application draws from goodput b_i.
//!
//! The paper names two shapes and this module ships exactly those:
//!
//! * [`Utility::Step`] — "a YouTube video application can map to a simple step function that
//!   increases at where b_i equals to the bitrates of each quality levels" (§III-D). A ladder of
//!   `(rate_bps, utility)` steps; the value is the utility of the highest step whose rate is met
//!   and 0 below the first step. §IV-1 uses one step, `u(b) = 10 if b ≥ 32 Mb/s`
//!   ([`Utility::step`]`(32e6, 10.0)`). The paper also gives the fixed-rate (interactive / VoIP)
//!   flow of §IV-2 a step: "we use a step function for the utility of the fixed-rate flow to
//!   make optimizer assign bandwidth slightly more than its send rate" — so interactive traffic
//!   is a one-step ladder too ([`Utility::fixed_rate`]); no third shape is needed.
//! * [`Utility::Log`] — "for web, or other bandwidth-greedy applications, we can use
//!   w_i log(b_i) to achieve proportional fairness weighted by w_i" (§III-D); §IV-1 uses
//!   `0.1 log(b)`.
//!
//! Units and b → 0 (our choices; the paper gives neither). `b` is handed in bit/s everywhere; the
//! log utility is evaluated as `w · ln((b + floor_bps) / 1 Mb/s)`, i.e. with b in Mb/s. The unit
//! only adds the constant `w · ln(unit)` to the objective, so it never changes an allocation, only
//! the printed utility. `floor_bps > 0` (default 1 kb/s) keeps the value finite at b = 0 and the
//! function concave on all of [0, ∞): the derivative is `w / (b + floor_bps)` (per bit/s), so the
//! optimum may leave a greedy flow at exactly zero, and the water-filling of the exact solver is
//! exact rather than "proportional to w_i" (which it approaches as floor/L_i → 0).
//!
//! Step thresholds are compared with a relative slack of [`STEP_RATE_SLACK`] (10⁻⁹): an airtime
//! fraction a = r/L does not always round-trip to a·L ≥ r in floating point, and a rate one part in
//! 10⁹ short of a step is, for any measured rate, the step.

use alloc::vec::Vec;

/// Relative slack on a step threshold: `b ≥ rate · (1 − STEP_RATE_SLACK)` meets the step.
pub const STEP_RATE_SLACK: f64 = 1e-9;

/// The unit in which the log utility reads b: 1 Mb/s.
pub const LOG_UNIT_BPS: f64 = 1e6;

/// Default additive floor of the log utility, bit/s.
pub const DEFAULT_LOG_FLOOR_BPS: f64 = 1e3;

/// One step of a ladder: meeting `rate_bps` is worth `utility`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Step {
    /// Goodput needed, bit/s (> 0).
    pub rate_bps: f64,
    /// Utility once the rate is met (≥ 0).
    pub utility: f64,
}

/// A utility function of goodput (bit/s).
#[derive(Clone, Debug, PartialEq)]
pub enum Utility {
    /// Step ladder, rates strictly increasing, utilities non-decreasing (see [`Utility::validate`]).
    Step(Vec<Step>),
    /// `weight · ln((b + floor_bps) / 1 Mb/s)`.
    Log {
        /// w_i > 0.
        weight: f64,
        /// Additive floor, bit/s (> 0).
        floor_bps: f64,
    },
}

/// Why a utility is not usable.
pub type UtilityError = super::super::FieldError;

impl Utility {
    /// One step: `utility` once `rate_bps` is met (the §IV-1 4K flow: `step(32e6, 10.0)`).
    pub fn step(rate_bps: f64, utility: f64) -> Self {
        Utility::Step(alloc::vec![Step { rate_bps, utility }])
    }

    /// A ladder from `(rate_bps, utility)` pairs.
    pub fn ladder(steps: &[(f64, f64)]) -> Self {
        Utility::Step(
            steps
                .iter()
                .map(|&(rate_bps, utility)| Step { rate_bps, utility })
                .collect(),
        )
    }

    /// `weight · ln(b / 1 Mb/s)` with the default floor (the §IV-1 greedy flow: `log(0.1)`).
    pub fn log(weight: f64) -> Self {
        Utility::Log {
            weight,
            floor_bps: DEFAULT_LOG_FLOOR_BPS,
        }
    }

    /// The §IV-2 fixed-rate flow: one step at `send_rate_bps · (1 + headroom)` worth `utility`.
    pub fn fixed_rate(send_rate_bps: f64, headroom: f64, utility: f64) -> Self {
        Utility::step(send_rate_bps * (1.0 + headroom), utility)
    }

    pub fn validate(&self) -> Result<(), UtilityError> {
        let err = |field, allowed| Err(UtilityError { field, allowed });
        match self {
            Utility::Step(steps) => {
                if steps.is_empty() {
                    return err("steps", "at least one step");
                }
                let mut prev: Option<&Step> = None;
                for s in steps {
                    if !(s.rate_bps.is_finite() && s.rate_bps > 0.0) {
                        return err("steps.rate_bps", "finite and > 0");
                    }
                    if !(s.utility.is_finite() && s.utility >= 0.0) {
                        return err("steps.utility", "finite and >= 0");
                    }
                    if let Some(p) = prev {
                        if s.rate_bps <= p.rate_bps {
                            return err("steps.rate_bps", "strictly increasing along the ladder");
                        }
                        if s.utility < p.utility {
                            return err("steps.utility", "non-decreasing along the ladder");
                        }
                    }
                    prev = Some(s);
                }
                Ok(())
            }
            Utility::Log { weight, floor_bps } => {
                if !(weight.is_finite() && *weight > 0.0) {
                    return err("weight", "finite and > 0");
                }
                if !(floor_bps.is_finite() && *floor_bps > 0.0) {
                    return err("floor_bps", "finite and > 0");
                }
                Ok(())
            }
        }
    }

    /// u(b), b in bit/s (negative b is read as 0).
    pub fn value(&self, b_bps: f64) -> f64 {
        let b = if b_bps > 0.0 { b_bps } else { 0.0 };
        match self {
            Utility::Step(steps) => steps
                .iter()
                .rev()
                .find(|s| b >= s.rate_bps * (1.0 - STEP_RATE_SLACK))
                .map_or(0.0, |s| s.utility),
            Utility::Log { weight, floor_bps } => {
                weight * libm::log((b + floor_bps) / LOG_UNIT_BPS)
            }
        }
    }

    /// True for the concave shapes (the log); false for step ladders.
    pub fn is_concave(&self) -> bool {
        matches!(self, Utility::Log { .. })
    }

    /// Non-decreasing in b (both shipped shapes are; the optimizer then spends all of U, §III-D).
    pub fn is_nondecreasing(&self) -> bool {
        true
    }

    /// u'(b) per bit/s where u is concave; `None` for step ladders (zero almost everywhere,
    /// undefined at the steps).
    pub fn derivative(&self, b_bps: f64) -> Option<f64> {
        match self {
            Utility::Step(_) => None,
            Utility::Log { weight, floor_bps } => Some(weight / (b_bps.max(0.0) + floor_bps)),
        }
    }

    /// The inverse of the derivative: the b ≥ 0 at which u'(b) = `slope` (per bit/s), clamped to 0
    /// when even b = 0 has a smaller slope; `None` for step ladders or a non-positive slope.
    pub fn inverse_derivative(&self, slope: f64) -> Option<f64> {
        match self {
            Utility::Step(_) => None,
            Utility::Log { weight, floor_bps } => {
                if slope > 0.0 {
                    Some((weight / slope - floor_bps).max(0.0))
                } else {
                    None
                }
            }
        }
    }

    /// The steps of a ladder (empty for the log).
    pub fn steps(&self) -> &[Step] {
        match self {
            Utility::Step(s) => s,
            Utility::Log { .. } => &[],
        }
    }
}
