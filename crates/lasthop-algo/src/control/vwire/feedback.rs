//! Measurements and feedback (§III-F): WiFi bottleneck detection from the send-buffer backlog,
//! and the periodic loop that turns measured goodput b̂_i and link rate L_i into an allocation.
//!
//! Bottleneck (§III-F): the router watches "the size-sum of the buffers of all sessions" on the
//! WiFi side (`ioctl(SIOCOUTQ)`); when WiFi is not the bottleneck "the packets in the buffers
//! will be cleared after a short time", when it is they are "backlogged". The paper gives no
//! numbers, so [`BottleneckDetector`] uses a hysteresis we chose: bottleneck once every sample
//! for `enter_after` (default 200 ms) is above `enter_bytes` (default 64 KiB); no longer once
//! every sample for `leave_after` (default 1 s) is at most `leave_bytes` (default 8 KiB).
//!
//! Loop (§III-F, §III-D): "these values are updated every 2 seconds and fed back to the
//! optimizer", and "the optimizer is triggered whenever input U, L_i or u_i(·) is changed".
//! [`VwireController::on_period`] takes the per-flow measurements, estimates
//! `U = Σ b̂_i / L_i`, re-solves only if an input changed (exactly — measured goodput rarely
//! repeats, so in practice every period), and returns the allocation; it wants to be called
//! again `period` later ([`VwireController::poll_timeout`]).

use super::optimizer::{solve_exact, solve_grid, Flow, GridConfig, OptimizeError, Problem};
use super::optimizer::{usable_airtime, SolverStats};
use super::utility::Utility;
use crate::control::FieldError;
use alloc::vec::Vec;
use lasthop_core::{Duration, Instant};

/// Parameters of a [`BottleneckDetector`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BottleneckConfig {
    /// Backlog (bytes, summed over WiFi-side send buffers) above which the link may be the
    /// bottleneck. Default 65 536.
    pub enter_bytes: u64,
    /// How long the backlog must stay above `enter_bytes`. Default 200 ms.
    pub enter_after: Duration,
    /// Backlog at or below which the buffers count as cleared. Default 8192.
    pub leave_bytes: u64,
    /// How long the buffers must stay cleared. Default 1 s.
    pub leave_after: Duration,
}

impl Default for BottleneckConfig {
    fn default() -> Self {
        BottleneckConfig {
            enter_bytes: 65_536,
            enter_after: Duration::from_millis(200),
            leave_bytes: 8_192,
            leave_after: Duration::from_secs(1),
        }
    }
}

impl BottleneckConfig {
    pub fn validate(&self) -> Result<(), FieldError> {
        if self.leave_bytes > self.enter_bytes {
            return Err(FieldError {
                field: "leave_bytes",
                allowed: "<= enter_bytes",
            });
        }
        Ok(())
    }
}

/// Is the WiFi side the bottleneck? Fed samples of the summed send-buffer backlog.
#[derive(Clone, Debug)]
pub struct BottleneckDetector {
    cfg: BottleneckConfig,
    bottleneck: bool,
    /// Start of the current run of samples on the "other" side of the hysteresis.
    run_since: Option<Instant>,
    transitions: u64,
}

impl BottleneckDetector {
    pub fn new(cfg: BottleneckConfig) -> Result<Self, FieldError> {
        cfg.validate()?;
        Ok(BottleneckDetector {
            cfg,
            bottleneck: false,
            run_since: None,
            transitions: 0,
        })
    }

    pub fn is_bottleneck(&self) -> bool {
        self.bottleneck
    }

    /// State changes so far.
    pub fn transitions(&self) -> u64 {
        self.transitions
    }

    /// A backlog sample; returns whether the WiFi link is now the bottleneck.
    pub fn on_sample(&mut self, now: Instant, backlog_bytes: u64) -> bool {
        let (toward, hold) = if self.bottleneck {
            (backlog_bytes <= self.cfg.leave_bytes, self.cfg.leave_after)
        } else {
            (backlog_bytes > self.cfg.enter_bytes, self.cfg.enter_after)
        };
        if !toward {
            self.run_since = None;
            return self.bottleneck;
        }
        let since = *self.run_since.get_or_insert(now);
        if now.saturating_since(since) >= hold {
            self.bottleneck = !self.bottleneck;
            self.transitions += 1;
            self.run_since = None;
        }
        self.bottleneck
    }
}

/// Which solver the loop uses.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum SolverChoice {
    /// [`solve_exact`] (default).
    Exact,
    /// The paper's grid + local search, [`solve_grid`].
    Grid(GridConfig),
}

/// Parameters of a [`VwireController`].
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ControllerConfig {
    /// Feedback period. Paper: 2 s (§III-F).
    pub period: Duration,
    /// Lower clamp on the measured U (the paper requires U > 0). Default 0.05.
    pub min_airtime: f64,
    pub solver: SolverChoice,
}

impl Default for ControllerConfig {
    fn default() -> Self {
        ControllerConfig {
            period: Duration::from_secs(2),
            min_airtime: 0.05,
            solver: SolverChoice::Exact,
        }
    }
}

impl ControllerConfig {
    pub fn validate(&self) -> Result<(), FieldError> {
        let err = |field, allowed| Err(FieldError { field, allowed });
        if self.period.is_zero() {
            return err("period", "> 0");
        }
        if !(self.min_airtime > 0.0 && self.min_airtime <= 1.0) {
            return err("min_airtime", "in (0, 1]");
        }
        if let SolverChoice::Grid(g) = &self.solver {
            g.validate()?;
        }
        Ok(())
    }
}

/// One flow's measurements over the last period.
#[derive(Clone, Copy, Debug)]
pub struct FlowMeasurement<'a> {
    /// The host's flow (or application-queue) id.
    pub id: u64,
    /// L_i, bit/s; a flow with L_i ≤ 0 (no link) is allocated nothing.
    pub link_rate_bps: f64,
    /// b̂_i, bit/s.
    pub goodput_bps: f64,
    /// u_i, from the flow's class.
    pub utility: &'a Utility,
}

/// One flow's share.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct FlowAllocation {
    pub id: u64,
    /// a_i.
    pub airtime: f64,
    /// b_i = a_i L_i, bit/s: the token rate for the scheduler.
    pub rate_bps: f64,
}

/// The loop's output for a period.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Allocation {
    /// U used.
    pub airtime_budget: f64,
    pub flows: Vec<FlowAllocation>,
    /// Σ u_i(b_i).
    pub utility: f64,
    pub solver: SolverStats,
}

impl Allocation {
    /// Sum the flow rates into per-class token rates for the scheduler.
    pub fn class_rates(&self, classes: usize, class_of: impl Fn(u64) -> usize) -> Vec<f64> {
        let mut r = alloc::vec![0.0; classes];
        for f in &self.flows {
            let c = class_of(f.id);
            if c < classes {
                r[c] += f.rate_bps;
            }
        }
        r
    }
}

/// Counters of a [`VwireController`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ControllerStats {
    pub periods: u64,
    /// Periods in which the optimizer ran.
    pub solves: u64,
    /// Periods whose inputs were unchanged, so the previous allocation was reused.
    pub reused: u64,
}

/// The 2 s feedback loop; see the module documentation.
#[derive(Clone, Debug)]
pub struct VwireController {
    cfg: ControllerConfig,
    next: Instant,
    /// (id, L, b̂, utility) of the last solve.
    last_input: Vec<(u64, f64, f64, Utility)>,
    last: Allocation,
    stats: ControllerStats,
}

impl VwireController {
    pub fn new(cfg: ControllerConfig) -> Result<Self, FieldError> {
        cfg.validate()?;
        Ok(VwireController {
            cfg,
            next: Instant::ZERO,
            last_input: Vec::new(),
            last: Allocation::default(),
            stats: ControllerStats::default(),
        })
    }

    pub fn stats(&self) -> ControllerStats {
        self.stats
    }

    /// When the next period is due.
    pub fn poll_timeout(&self) -> Option<Instant> {
        Some(self.next)
    }

    /// The latest allocation.
    pub fn allocation(&self) -> &Allocation {
        &self.last
    }

    /// Close a period: new allocation from the measurements.
    pub fn on_period(
        &mut self,
        now: Instant,
        measurements: &[FlowMeasurement<'_>],
    ) -> Result<&Allocation, OptimizeError> {
        self.stats.periods += 1;
        self.next = now + self.cfg.period;
        let unchanged = self.last_input.len() == measurements.len()
            && self.last_input.iter().zip(measurements).all(|(l, m)| {
                l.0 == m.id && l.1 == m.link_rate_bps && l.2 == m.goodput_bps && &l.3 == m.utility
            });
        if unchanged && !self.last_input.is_empty() {
            self.stats.reused += 1;
            return Ok(&self.last);
        }
        let usable: Vec<usize> = (0..measurements.len())
            .filter(|&i| measurements[i].link_rate_bps > 0.0)
            .collect();
        let flows: Vec<Flow<'_>> = usable
            .iter()
            .map(|&i| Flow {
                link_rate_bps: measurements[i].link_rate_bps,
                goodput_bps: measurements[i].goodput_bps,
                utility: measurements[i].utility,
            })
            .collect();
        let u = usable_airtime(&flows).clamp(self.cfg.min_airtime, 1.0);
        let problem = Problem { flows, airtime: u };
        let sol = match &self.cfg.solver {
            SolverChoice::Exact => solve_exact(&problem)?,
            SolverChoice::Grid(g) => solve_grid(&problem, g)?,
        };
        self.stats.solves += 1;
        let mut out: Vec<FlowAllocation> = measurements
            .iter()
            .map(|m| FlowAllocation {
                id: m.id,
                airtime: 0.0,
                rate_bps: 0.0,
            })
            .collect();
        for (k, &i) in usable.iter().enumerate() {
            out[i].airtime = sol.airtime[k];
            out[i].rate_bps = sol.rate_bps[k];
        }
        self.last = Allocation {
            airtime_budget: u,
            flows: out,
            utility: sol.utility,
            solver: sol.stats,
        };
        self.last_input = measurements
            .iter()
            .map(|m| (m.id, m.link_rate_bps, m.goodput_bps, m.utility.clone()))
            .collect();
        Ok(&self.last)
    }
}
