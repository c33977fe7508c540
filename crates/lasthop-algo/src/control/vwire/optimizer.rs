//! The airtime allocation problem of §III-D and two solvers for it.
//!
//! ```text
//! max Σ u_i(b_i)   s.t.  b_i = a_i · L_i,  0 ≤ a_i,  Σ a_i ≤ U
//! ```
//!
//! a_i is the airtime fraction of application (flow) i, L_i the physical link rate of its device
//! (bit/s, "measured directly from driver", §III-F), and U the measured WiFi utilisation, "the
//! total fraction of airtime that can be used to transfer data", estimated as
//! `U = Σ b̂_i / L_i` with b̂_i the measured goodput of flow i (§III-D). [`usable_airtime`]
//! computes exactly that sum; the paper states `0 < U ≤ 1`, so [`Problem::from_measurements`]
//! clamps it into `[min_airtime, 1]` — the lower clamp (a measurement of no traffic at all would
//! give U = 0) is our choice.
//!
//! * [`solve_grid`] — the paper's reference method (§III-D): when all utilities are concave, a
//!   local optimiser from a start point (the paper: scipy's L-BFGS-B); otherwise "divide [0, U]
//!   into 20 grids, and evaluate on all feasible combinations of grids", then a local optimiser
//!   "on the best grid point to find the local maximum near the grid", and, "to speed up the
//!   process, we add the condition Σ a_i = U when the utility functions are non-decreasing".
//!   Where the text is vague we chose: grid points are a_i = k_i·U/20 with integers k_i ≥ 0
//!   (Σ k_i = 20 with the equality condition, ≤ 20 without); the local optimiser is a
//!   derivative-free pairwise pattern search on the simplex (move δ of airtime from flow j to
//!   flow i while that raises Σ u, δ halving from one grid cell down to `min_step`·U) instead of
//!   L-BFGS-B — steps have zero gradient almost everywhere, L-BFGS-B only handles bounds (the
//!   paper does not say how Σ a_i = U was imposed), and there is no scipy in `no_std`; the
//!   concave-only start point is the equal split U/N (the paper gives none). Utility values at
//!   the 21 grid levels of each flow are computed once and looked up during the enumeration.
//! * [`solve_exact`] — exact for the shipped utilities (our addition). A step flow is only ever
//!   worth its airtime exactly at a step (a_i = rate_k / L_i; anything between two steps buys
//!   nothing), so each step flow has finitely many options: off, or one of its steps. A depth-first
//!   search enumerates the options of all step flows, dropping infeasible ones (Σ > U) and
//!   pruning by a bound (utility so far + best remaining step utilities + the concave optimum of
//!   the airtime left). The airtime left goes to the log flows by water-filling: KKT for
//!   `w_i ln(a_i L_i + f_i)` gives `w_i L_i / (a_i L_i + f_i) = λ`, i.e.
//!   `a_i = max(0, w_i/λ − f_i/L_i)` — proportional to w_i as the floor f_i → 0 — with λ set so
//!   the log flows spend all that is left. The best leaf is the optimum. With no log flow the
//!   airtime left over is not allocated (every allocation of it is equally optimal; the
//!   scheduler is work-conserving, so it is not wasted).
//!
//! Both return a [`SolverStats`] with the count of utility evaluations and candidates each
//! performed — the comparison of effort the tests report, with no timing.

use super::utility::Utility;
use crate::control::FieldError;
use alloc::vec;
use alloc::vec::Vec;

/// One flow (application) as the optimizer sees it.
#[derive(Clone, Copy, Debug)]
pub struct Flow<'a> {
    /// L_i: physical link rate of the flow's device, bit/s (> 0).
    pub link_rate_bps: f64,
    /// b̂_i: measured goodput, bit/s (≥ 0); only used to estimate U.
    pub goodput_bps: f64,
    /// u_i.
    pub utility: &'a Utility,
}

/// U = Σ b̂_i / L_i (§III-D), unclamped; flows with L_i ≤ 0 contribute nothing.
pub fn usable_airtime(flows: &[Flow<'_>]) -> f64 {
    flows
        .iter()
        .filter(|f| f.link_rate_bps > 0.0 && f.goodput_bps > 0.0)
        .map(|f| f.goodput_bps / f.link_rate_bps)
        .sum()
}

/// Why a problem cannot be solved.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OptimizeError {
    /// Flow `index` has an invalid field (link rate, goodput or utility).
    Flow { index: usize, error: FieldError },
    /// The airtime budget U is not in (0, 1].
    Airtime(FieldError),
    /// A grid configuration field is invalid.
    Grid(FieldError),
    /// The grid has more points than `GridConfig::max_candidates`.
    GridTooLarge { points: u64, limit: u64 },
}

/// A problem instance: the flows and the airtime budget U.
#[derive(Clone, Debug)]
pub struct Problem<'a> {
    pub flows: Vec<Flow<'a>>,
    /// U, in (0, 1].
    pub airtime: f64,
}

impl<'a> Problem<'a> {
    /// U from the measurements (§III-D), clamped into `[min_airtime, 1]`.
    pub fn from_measurements(flows: Vec<Flow<'a>>, min_airtime: f64) -> Self {
        let u = usable_airtime(&flows).clamp(min_airtime, 1.0);
        Problem { flows, airtime: u }
    }

    pub fn validate(&self) -> Result<(), OptimizeError> {
        if !(self.airtime > 0.0 && self.airtime <= 1.0) {
            return Err(OptimizeError::Airtime(FieldError {
                field: "airtime",
                allowed: "in (0, 1]",
            }));
        }
        for (index, f) in self.flows.iter().enumerate() {
            let ferr = |field, allowed| OptimizeError::Flow {
                index,
                error: FieldError { field, allowed },
            };
            if !(f.link_rate_bps.is_finite() && f.link_rate_bps > 0.0) {
                return Err(ferr("link_rate_bps", "finite and > 0"));
            }
            if !(f.goodput_bps.is_finite() && f.goodput_bps >= 0.0) {
                return Err(ferr("goodput_bps", "finite and >= 0"));
            }
            f.utility
                .validate()
                .map_err(|error| OptimizeError::Flow { index, error })?;
        }
        Ok(())
    }

    /// Σ u_i(a_i L_i).
    pub fn objective(&self, airtime: &[f64]) -> f64 {
        self.flows
            .iter()
            .zip(airtime)
            .map(|(f, &a)| f.utility.value(a * f.link_rate_bps))
            .sum()
    }

    fn value(&self, i: usize, a: f64, stats: &mut SolverStats) -> f64 {
        stats.utility_evals += 1;
        let f = &self.flows[i];
        f.utility.value(a * f.link_rate_bps)
    }
}

/// Effort a solver spent (no timing: counts only).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SolverStats {
    /// Calls of `Utility::value`.
    pub utility_evals: u64,
    /// Complete candidates scored: grid points (grid) or step-option combinations (exact).
    pub candidates: u64,
    /// Search nodes cut by infeasibility or the bound (exact only).
    pub pruned: u64,
    /// Accepted local-search moves (grid only).
    pub refine_moves: u64,
}

/// An allocation.
#[derive(Clone, Debug, PartialEq)]
pub struct Solution {
    /// a_i, airtime fractions; Σ a_i ≤ U.
    pub airtime: Vec<f64>,
    /// b_i = a_i L_i, bit/s.
    pub rate_bps: Vec<f64>,
    /// Σ u_i(b_i).
    pub utility: f64,
    pub stats: SolverStats,
}

fn finish(p: &Problem<'_>, mut a: Vec<f64>, mut stats: SolverStats) -> Solution {
    fit_to_budget(&mut a, p.airtime);
    stats.utility_evals += a.len() as u64;
    let utility = p.objective(&a);
    let rate_bps = a
        .iter()
        .zip(&p.flows)
        .map(|(a, f)| a * f.link_rate_bps)
        .collect();
    Solution {
        airtime: a,
        rate_bps,
        utility,
        stats,
    }
}

/// Scale down (by ulps) until Σ a ≤ budget exactly; negative entries become 0.
fn fit_to_budget(a: &mut [f64], budget: f64) {
    for x in a.iter_mut() {
        if x.is_nan() || *x < 0.0 {
            *x = 0.0;
        }
    }
    for _ in 0..64 {
        let s: f64 = a.iter().sum();
        if s <= budget {
            return;
        }
        let k = budget / s * (1.0 - 1e-15);
        for x in a.iter_mut() {
            *x *= k;
        }
    }
}

/// Parameters of the reference (grid + local search) solver.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct GridConfig {
    /// Grid cells per dimension over [0, U]. Paper: 20.
    pub cells: u32,
    /// Impose Σ a_i = U (the paper's speed-up for non-decreasing utilities). Default true.
    pub spend_all: bool,
    /// Run the local search from the best grid point. Default true.
    pub refine: bool,
    /// Smallest local-search move, as a fraction of U. Default 1e-6.
    pub min_step: f64,
    /// Most grid points evaluated before giving up. Default 5 000 000.
    pub max_candidates: u64,
}

impl Default for GridConfig {
    fn default() -> Self {
        GridConfig {
            cells: 20,
            spend_all: true,
            refine: true,
            min_step: 1e-6,
            max_candidates: 5_000_000,
        }
    }
}

impl GridConfig {
    pub fn validate(&self) -> Result<(), FieldError> {
        let err = |field, allowed| Err(FieldError { field, allowed });
        if self.cells == 0 || self.cells > 10_000 {
            return err("cells", "1 ..= 10000");
        }
        if !(self.min_step > 0.0 && self.min_step < 1.0) {
            return err("min_step", "in (0, 1)");
        }
        if self.max_candidates == 0 {
            return err("max_candidates", ">= 1");
        }
        Ok(())
    }
}

/// C(n, k), saturating.
fn binomial(n: u64, k: u64) -> u64 {
    let k = k.min(n - k.min(n));
    let mut r: u128 = 1;
    for i in 0..k {
        r = r * (n - i) as u128 / (i + 1) as u128;
        if r > u64::MAX as u128 {
            return u64::MAX;
        }
    }
    r as u64
}

/// Number of grid points: compositions of `cells` into `n` parts (spend all), or of at most
/// `cells`.
pub fn grid_points(n: usize, cells: u32, spend_all: bool) -> u64 {
    if n == 0 {
        return 1;
    }
    let (n, c) = (n as u64, cells as u64);
    if spend_all {
        binomial(c + n - 1, n - 1)
    } else {
        binomial(c + n, n)
    }
}

/// The paper's reference method (§III-D); see the module documentation.
pub fn solve_grid(p: &Problem<'_>, cfg: &GridConfig) -> Result<Solution, OptimizeError> {
    p.validate()?;
    cfg.validate().map_err(OptimizeError::Grid)?;
    let n = p.flows.len();
    let mut stats = SolverStats::default();
    if n == 0 {
        return Ok(finish(p, Vec::new(), stats));
    }
    let u = p.airtime;
    let cell = u / cfg.cells as f64;
    let all_concave = p.flows.iter().all(|f| f.utility.is_concave());
    let spend_all = cfg.spend_all && p.flows.iter().all(|f| f.utility.is_nondecreasing());
    let mut a: Vec<f64>;
    if all_concave {
        // The paper runs L-BFGS-B directly; we start the local search from the equal split.
        a = vec![u / n as f64; n];
        stats.candidates = 1;
    } else {
        let points = grid_points(n, cfg.cells, spend_all);
        if points > cfg.max_candidates {
            return Err(OptimizeError::GridTooLarge {
                points,
                limit: cfg.max_candidates,
            });
        }
        let levels = cfg.cells as usize + 1;
        let mut table = vec![0.0; n * levels];
        for i in 0..n {
            for k in 0..levels {
                table[i * levels + k] = p.value(i, k as f64 * cell, &mut stats);
            }
        }
        let mut ks = vec![0u32; n];
        let mut best_k = vec![0u32; n];
        let mut best = f64::NEG_INFINITY;
        enumerate(
            &table,
            levels,
            0,
            cfg.cells,
            spend_all,
            0.0,
            &mut ks,
            &mut best,
            &mut best_k,
            &mut stats,
        );
        a = best_k.iter().map(|&k| k as f64 * cell).collect();
    }
    if cfg.refine {
        refine(p, &mut a, cell, cfg.min_step * u, spend_all, &mut stats);
    }
    Ok(finish(p, a, stats))
}

#[allow(clippy::too_many_arguments)]
fn enumerate(
    table: &[f64],
    levels: usize,
    i: usize,
    left: u32,
    spend_all: bool,
    acc: f64,
    ks: &mut [u32],
    best: &mut f64,
    best_k: &mut [u32],
    stats: &mut SolverStats,
) {
    let n = ks.len();
    if i + 1 == n {
        let lo = if spend_all { left } else { 0 };
        for k in lo..=left {
            stats.candidates += 1;
            let v = acc + table[i * levels + k as usize];
            if v > *best {
                *best = v;
                ks[i] = k;
                best_k.copy_from_slice(ks);
            }
        }
        return;
    }
    for k in 0..=left {
        ks[i] = k;
        enumerate(
            table,
            levels,
            i + 1,
            left - k,
            spend_all,
            acc + table[i * levels + k as usize],
            ks,
            best,
            best_k,
            stats,
        );
    }
}

/// Pairwise pattern search on {a ≥ 0, Σ a ≤ U} (= U when `spend_all`): move δ of airtime from a
/// donor (a flow, or the unspent slack unless `spend_all`) to a receiver while Σ u rises, δ
/// halving from `start` to `min`.
fn refine(
    p: &Problem<'_>,
    a: &mut [f64],
    start: f64,
    min: f64,
    spend_all: bool,
    stats: &mut SolverStats,
) {
    let n = a.len();
    let mut vals: Vec<f64> = (0..n).map(|i| p.value(i, a[i], stats)).collect();
    let mut slack = (p.airtime - a.iter().sum::<f64>()).max(0.0);
    let donors = if spend_all { n } else { n + 1 };
    let mut delta = start;
    while delta >= min {
        for _pass in 0..200 {
            let mut improved = false;
            for i in 0..n {
                for j in 0..donors {
                    if i == j {
                        continue;
                    }
                    let from = if j == n { slack } else { a[j] };
                    let d = delta.min(from);
                    if d <= 0.0 {
                        continue;
                    }
                    let vi = p.value(i, a[i] + d, stats);
                    let vj = if j == n {
                        0.0
                    } else {
                        p.value(j, from - d, stats)
                    };
                    let old_j = if j == n { 0.0 } else { vals[j] };
                    let gain = (vi + vj) - (vals[i] + old_j);
                    if gain > 1e-13 * (1.0 + libm::fabs(vals[i]) + libm::fabs(old_j)) {
                        a[i] += d;
                        vals[i] = vi;
                        if j == n {
                            slack -= d;
                        } else {
                            a[j] = from - d;
                            vals[j] = vj;
                        }
                        stats.refine_moves += 1;
                        improved = true;
                    }
                }
            }
            if !improved {
                break;
            }
        }
        delta *= 0.5;
    }
}

/// One option of a step flow: airtime it costs and utility it buys.
#[derive(Clone, Copy, Debug)]
struct StepOption {
    airtime: f64,
    utility: f64,
}

/// The exact solver for step ladders + log utilities; see the module documentation.
pub fn solve_exact(p: &Problem<'_>) -> Result<Solution, OptimizeError> {
    p.validate()?;
    let n = p.flows.len();
    let mut stats = SolverStats::default();
    let u = p.airtime;
    let mut step_idx = Vec::new();
    let mut log_idx = Vec::new();
    for (i, f) in p.flows.iter().enumerate() {
        if f.utility.is_concave() {
            log_idx.push(i);
        } else {
            step_idx.push(i);
        }
    }
    // Options per step flow: off, then each step that is feasible alone and not dominated (a
    // step costing more airtime for no more utility than the previous kept option).
    let mut options: Vec<Vec<StepOption>> = Vec::with_capacity(step_idx.len());
    for &i in &step_idx {
        let f = &p.flows[i];
        let mut opts = vec![StepOption {
            airtime: 0.0,
            utility: 0.0,
        }];
        for s in f.utility.steps() {
            let airtime = s.rate_bps / f.link_rate_bps;
            if airtime > u {
                stats.pruned += 1;
                break;
            }
            if s.utility > opts.last().map_or(0.0, |o| o.utility) {
                opts.push(StepOption {
                    airtime,
                    utility: s.utility,
                });
            } else {
                stats.pruned += 1;
            }
        }
        options.push(opts);
    }
    // best_rest[k] = Σ over step flows k.. of their largest option utility (for the bound).
    let mut best_rest = vec![0.0; options.len() + 1];
    for k in (0..options.len()).rev() {
        best_rest[k] = best_rest[k + 1] + options[k].last().map_or(0.0, |o| o.utility);
    }
    let mut search = ExactSearch {
        p,
        log_idx: &log_idx,
        options: &options,
        best_rest: &best_rest,
        choice: vec![0; options.len()],
        best_choice: vec![0; options.len()],
        best: f64::NEG_INFINITY,
        stats: &mut stats,
    };
    search.dfs(0, 0.0, 0.0);
    let best_choice = search.best_choice.clone();
    let mut a = vec![0.0; n];
    let mut spent = 0.0;
    for (k, &i) in step_idx.iter().enumerate() {
        a[i] = options[k][best_choice[k]].airtime;
        spent += a[i];
    }
    let left = (u - spent).max(0.0);
    let shares = water_fill(p, &log_idx, left);
    for (&i, &s) in log_idx.iter().zip(&shares) {
        a[i] = s;
    }
    Ok(finish(p, a, stats))
}

struct ExactSearch<'p, 'a> {
    p: &'p Problem<'a>,
    log_idx: &'p [usize],
    options: &'p [Vec<StepOption>],
    best_rest: &'p [f64],
    choice: Vec<usize>,
    best_choice: Vec<usize>,
    best: f64,
    stats: &'p mut SolverStats,
}

impl ExactSearch<'_, '_> {
    fn concave_value(&mut self, left: f64) -> f64 {
        let shares = water_fill(self.p, self.log_idx, left);
        self.log_idx
            .iter()
            .zip(&shares)
            .map(|(&i, &a)| self.p.value(i, a, self.stats))
            .sum()
    }

    fn dfs(&mut self, k: usize, spent: f64, acc: f64) {
        let left = self.p.airtime - spent;
        let concave = self.concave_value(left);
        if k == self.options.len() {
            self.stats.candidates += 1;
            let v = acc + concave;
            if v > self.best {
                self.best = v;
                self.best_choice.copy_from_slice(&self.choice);
            }
            return;
        }
        // Spending more airtime on steps never raises the concave part, so this bounds every leaf
        // below this node.
        if acc + self.best_rest[k] + concave <= self.best {
            self.stats.pruned += 1;
            return;
        }
        // Highest option first: good leaves early make the bound bite.
        for o in (0..self.options[k].len()).rev() {
            let opt = self.options[k][o];
            if spent + opt.airtime > self.p.airtime * (1.0 + 1e-12) {
                self.stats.pruned += 1;
                continue;
            }
            self.choice[k] = o;
            self.dfs(k + 1, spent + opt.airtime, acc + opt.utility);
        }
    }
}

/// Split `left` airtime among the log flows `idx` at equal marginal utility per airtime:
/// a_i = max(0, ν w_i − f_i / L_i), Σ a_i = left.
fn water_fill(p: &Problem<'_>, idx: &[usize], left: f64) -> Vec<f64> {
    let m = idx.len();
    let mut out = vec![0.0; m];
    if m == 0 || left.is_nan() || left <= 0.0 {
        return out;
    }
    // (w_i, c_i = f_i / L_i), sorted by the ν at which flow i switches on: c_i / w_i.
    let mut wc: Vec<(usize, f64, f64)> = idx
        .iter()
        .enumerate()
        .map(|(k, &i)| {
            let f = &p.flows[i];
            match f.utility {
                Utility::Log { weight, floor_bps } => (k, *weight, floor_bps / f.link_rate_bps),
                Utility::Step(_) => (k, 0.0, 0.0),
            }
        })
        .collect();
    wc.sort_by(|x, y| (x.2 / x.1).total_cmp(&(y.2 / y.1)));
    let (mut sw, mut sc) = (0.0, 0.0);
    let mut nu = 0.0;
    for j in 0..m {
        sw += wc[j].1;
        sc += wc[j].2;
        nu = (left + sc) / sw;
        let next_on = if j + 1 < m {
            wc[j + 1].2 / wc[j + 1].1
        } else {
            f64::INFINITY
        };
        if nu <= next_on {
            break;
        }
    }
    for &(k, w, c) in &wc {
        out[k] = (nu * w - c).max(0.0);
    }
    out
}
