//! lasthop-sim: the discrete-event simulator, and the only owner of virtual time.
//!
//! * [`spec`]: the normalized scenario spec and its 802.11 rules.
//! * [`engine`]: the `(time, seq)`-ordered event queue.
//! * [`world`]: one 802.11 cell (AP, stations, wired server) and its event handlers.
//! * [`wired`]: the server ↔ AP link (rate, delay, queue, loss).
//! * [`metrics`]: latency histograms, counters, time series.
//! * [`capture`]: per-PPDU frame records of one node; [`pcap`] writes them as a pcap file.
//!
//! Entry points for hosts: [`validate_json`], [`run_json`] and [`run_json_with_capture`] (used
//! by the Python module), or [`run`] with a parsed [`spec::Spec`].

pub mod canonical;
pub mod capture;
pub mod engine;
pub mod metrics;
pub mod output;
pub mod pcap;
pub mod spec;
pub mod spec_in;
pub mod wired;
pub mod world;

pub use capture::{Capture, CaptureRequest, Node};
pub use output::RunData;
pub use spec::Spec;

/// One validation problem: (key path, offending value, what is allowed).
pub type SpecProblem = (String, String, String);

/// Check a normalized spec from any caller (docs/spec.md): each key's range, then the rules
/// across keys and the 802.11 rules.
pub fn validate_json(spec_json: &str) -> Vec<SpecProblem> {
    match Spec::from_json(spec_json) {
        Ok(s) => s.json_problems(),
        Err(e) => vec![("spec".into(), String::new(), e)],
    }
}

/// Run one simulation of a parsed, valid spec.
pub fn run(spec: Spec, seed: u64, progress: &mut dyn FnMut(f64)) -> RunData {
    let mut w = world::World::new(spec, seed);
    w.run(progress);
    output::collect(&w)
}

/// Run one simulation of a normalized spec; returns the `data` JSON of docs/results.md, in the
/// canonical form result files store (`canonical.rs`).
/// `progress` is called with the fraction of simulated time done, about 200 times.
pub fn run_json(spec_json: &str, seed: u64, progress: &mut dyn FnMut(f64)) -> Result<String, String> {
    run_json_with_capture(spec_json, seed, progress, None).map(|(data, _)| data)
}

/// Each station's PHY data rate (bit/s) at its spec's MCS and streams (the most a station under
/// rate control uses), from a normalized spec (JSON): what an operator reads as its link rate.
pub fn station_rates_json(spec_json: &str) -> Result<Vec<u64>, String> {
    let spec = Spec::from_json(spec_json)?;
    Ok(spec.stations.iter().map(|st| spec.tx_vector(st).data_rate_bps()).collect())
}

/// [`run_json`], and if `capture` is given, the frame records of that node (turn them into a
/// pcap file with [`pcap::write`]). The `data` JSON is the same with and without capture.
pub fn run_json_with_capture(
    spec_json: &str,
    seed: u64,
    progress: &mut dyn FnMut(f64),
    capture: Option<CaptureRequest>,
) -> Result<(String, Option<Capture>), String> {
    let spec = Spec::from_json(spec_json)?;
    let problems = spec.json_problems();
    if let Some((path, value, allowed)) = problems.first() {
        return Err(format!("{path} = {value}: {allowed}"));
    }
    if let Some(req) = capture {
        let n = spec.stations.len();
        let ok = match req.node {
            Node::Ap => true,
            Node::Station(i) => (i as usize) < n,
            Node::Broadcast => false,
        };
        if !ok {
            return Err(format!("capture node = {}: \"ap\" or a station index in 0..{n}", req.node.name()));
        }
    }
    let mut w = world::World::new(spec, seed);
    if let Some(req) = capture {
        w.set_capture(req);
    }
    w.run(progress);
    let data = output::collect(&w);
    let cap = w.take_capture();
    // The canonical text (`canonical.rs`): a host may store it as it is.
    let json = canonical::to_canonical(&data)?;
    Ok((json, cap))
}
