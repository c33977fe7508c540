//! Run one normalized spec (JSON, as `Spec.to_json()` writes it) a number of times, for
//! profiling without Python in the way: `cargo run --release -p lasthop-sim --example run_spec
//! -- SPEC.json [REPEATS]`. Prints events and ns per event of each run. The environment variable
//! `SEED` sets the seed (default 1) and `OUT=FILE` writes the last run's result text there. A
//! benchmark harness owns the wall clock, so reading it here is allowed.
#![allow(clippy::disallowed_methods)]

use std::time::Instant;

fn main() {
    let mut args = std::env::args().skip(1);
    let path = args.next().expect("usage: run_spec SPEC.json [REPEATS]");
    let repeats: u32 = args.next().and_then(|a| a.parse().ok()).unwrap_or(1);
    let js = std::fs::read_to_string(&path).expect("readable spec");
    let seed: u64 = std::env::var("SEED").ok().map(|s| s.parse().expect("SEED: an integer")).unwrap_or(1);
    for _ in 0..repeats {
        let t0 = Instant::now();
        let out = lasthop_sim::run_json(&js, seed, &mut |_| {}).expect("spec runs");
        let wall = t0.elapsed().as_secs_f64();
        if let Ok(o) = std::env::var("OUT") {
            std::fs::write(&o, &out).expect("OUT: a writable file");
        }
        // `"stats":{"events":N,…` leads the result; read N without parsing the rest.
        let events: u64 = out
            .split_once("\"events\":")
            .and_then(|(_, rest)| rest.split(|c: char| !c.is_ascii_digit()).next())
            .and_then(|n| n.parse().ok())
            .unwrap_or(0);
        println!("{events} events, {wall:.3} s, {:.0} ns/event, {} bytes of result", wall * 1e9 / events.max(1) as f64, out.len());
    }
}
