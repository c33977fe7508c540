//! Engine throughput on the benchmark scenarios, without Python in the way:
//! `cargo run --release -p lasthop-sim --example bench`. A benchmark harness owns the wall
//! clock, so reading it here is allowed.
#![allow(clippy::disallowed_methods)]

use serde_json::{json, Value};
use std::time::Instant;

fn spec(n: u32, mcs: u32, nss: u32, secs: u64) -> Value {
    let dur = secs * 1_000_000_000;
    json!({
        "name": "bench", "description": "",
        "sim": {"duration_ns": dur, "warmup_ns": 0, "seed": 1, "bin_ns": 100_000_000u64},
        "phy": {"standard": "vht", "band": "5GHz", "channel_width": 80, "guard_interval": 800, "control_rate_bps": 24_000_000u64},
        "mac": {"aggregation": true, "max_ampdu_mpdus": 64, "max_ampdu_bytes": 0, "max_ppdu_time_ns": 5_484_000u64,
                "retry_limit": 7, "beacon_interval_ns": 102_400_000u64, "access_category": "BE", "cw_min": null, "cw_max": null, "aifsn": null},
        "ap": {"queue_limit": 1000, "scheduler": "round_robin"},
        "wired": {"rate_bps": 10_000_000_000u64, "delay_ns": 1_000_000u64, "queue_limit": 1000, "loss": 0.0},
        "stations": (0..n).map(|_| json!({"mcs": mcs, "nss": nss, "error_model": "none", "per": 0.0, "snr_db": 30.0, "queue_limit": 1000})).collect::<Vec<_>>(),
        "flows": (0..n).map(|i| json!({"station": i, "direction": "down", "pattern": "saturated", "rate_bps": 0, "packet_size": 1500, "start_ns": 0, "stop_ns": dur})).collect::<Vec<_>>(),
    })
}

fn main() {
    let secs: u64 = std::env::args().nth(1).and_then(|a| a.parse().ok()).unwrap_or(60);
    for (name, s) in [("1 station saturated VHT MCS9 NSS2", spec(1, 9, 2, secs)), ("20 stations saturated VHT MCS7 NSS1", spec(20, 7, 1, secs))] {
        let js = s.to_string();
        let t0 = Instant::now();
        let out = lasthop_sim::run_json(&js, 1, &mut |_| {}).unwrap();
        let wall = t0.elapsed().as_secs_f64();
        let d: Value = serde_json::from_str(&out).unwrap();
        let m = d["stats"]["mpdus_delivered"].as_f64().unwrap();
        let e = d["stats"]["events"].as_f64().unwrap();
        println!("{name}: {:.2} s wall for {secs} s simulated, {:.2} M MPDUs/s, {:.2} M events/s", wall, m / wall / 1e6, e / wall / 1e6);
    }
}
