//! vwire: the decision-making parts of "Virtual Wires: Rethinking WiFi networks" (Yang, Jiang,
//! Misra, Rubenstein) — a split proxy at the WiFi router that allocates airtime by application
//! utility. The session splitting itself belongs to the hosts; here are its deciders:
//!
//! * [`utility`] — u_i(b_i) per application class: step ladders (video, fixed-rate) and
//!   w·log(b) (greedy), §III-D.
//! * [`optimizer`] — max Σ u_i(a_i L_i) s.t. Σ a_i ≤ U, U = Σ b̂_i / L_i (§III-D): the paper's
//!   20-cell grid + local search, and an exact solver for the shipped utilities.
//! * [`scheduler`] — Algorithm 1: per-class token buckets, work-conserving (§III-E).
//! * [`feedback`] — bottleneck detection from the WiFi-side send-buffer backlog and the 2 s loop
//!   from measured goodput and link rate to a new allocation (§III-F).
//! * [`forest`] — the random-forest flow classifier (§III-C): per-flow features over a window and
//!   a compact forest evaluator for a model trained offline (`python/lasthop/vwire_train.py`).
//! * [`proxy`] — the split proxy's decisions put together (classify, measure, allocate, gate the
//!   writes into the WiFi-side sockets), as the simulator and the live proxy both run them.
//!
//! The Virtual Wires method is covered by Columbia University patents (US 10,687,341 B2 and
//! US 11,297,634).

pub mod features;
pub mod feedback;
pub mod forest;
pub mod optimizer;
pub mod proxy;
pub mod scheduler;
#[cfg(test)]
mod tests;
pub mod utility;

pub use features::{
    AppClass, DeviceType, FeatureConfig, FeatureWindow, FlowFeatures, FEATURE_NAMES, N_FEATURES,
};
pub use feedback::{
    Allocation, BottleneckConfig, BottleneckDetector, ControllerConfig, ControllerStats,
    FlowAllocation, FlowMeasurement, SolverChoice, VwireController,
};
pub use forest::{Forest, ForestError, ForestErrorKind, FOREST_FORMAT_VERSION, SHIPPED_MODEL};
pub use optimizer::{
    grid_points, solve_exact, solve_grid, usable_airtime, Flow, GridConfig, OptimizeError, Problem,
    Solution, SolverStats,
};
pub use proxy::{FlowIo, PeriodRecord, ProxyConfig, SlotPeriod, SplitProxy};
pub use scheduler::{SchedulerConfig, SchedulerStats, TokenScheduler};
pub use utility::{Step, Utility, UtilityError, STEP_RATE_SLACK};
