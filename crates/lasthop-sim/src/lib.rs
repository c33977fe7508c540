//! lasthop-sim: the discrete-event simulator, and the only owner of virtual time.
//!
//! * [`spec`]: the normalized scenario spec and its 802.11 rules.
//! * [`engine`]: the `(time, seq)`-ordered event queue.
//! * [`world`]: one 802.11 cell (AP, stations, wired server) and its event handlers.
//! * [`wired`]: the server ↔ AP link (rate, delay, queue, loss).
//! * [`metrics`]: latency histograms, counters, time series.
//!
//! Entry points for hosts: [`validate_json`] and [`run_json`] (used by the Python module), or
//! [`run`] with a parsed [`spec::Spec`].

pub mod engine;
pub mod metrics;
pub mod output;
pub mod spec;
pub mod wired;
pub mod world;

pub use output::RunData;
pub use spec::Spec;

/// One validation problem: (key path, offending value, what is allowed).
pub type SpecProblem = (String, String, String);

/// Check the 802.11-specific rules of a normalized spec (docs/spec.md).
pub fn validate_json(spec_json: &str) -> Vec<SpecProblem> {
    match Spec::from_json(spec_json) {
        Ok(s) => s.problems(),
        Err(e) => vec![("spec".into(), String::new(), e)],
    }
}

/// Run one simulation of a parsed, valid spec.
pub fn run(spec: Spec, seed: u64, progress: &mut dyn FnMut(f64)) -> RunData {
    let mut w = world::World::new(spec, seed);
    w.run(progress);
    output::collect(&w)
}

/// Run one simulation of a normalized spec; returns the `data` JSON of docs/results.md.
/// `progress` is called with the fraction of simulated time done, about 200 times.
pub fn run_json(spec_json: &str, seed: u64, progress: &mut dyn FnMut(f64)) -> Result<String, String> {
    let spec = Spec::from_json(spec_json)?;
    let problems = spec.problems();
    if let Some((path, value, allowed)) = problems.first() {
        return Err(format!("{path} = {value}: {allowed}"));
    }
    let data = run(spec, seed, progress);
    serde_json::to_string(&data).map_err(|e| e.to_string())
}
