//! Shared helpers for scenario tests: a normalized spec with sensible defaults, modified per
//! test through serde_json values.
#![allow(dead_code)]

use serde_json::{json, Value};

pub fn base(standard: &str, width: u32, gi: u32) -> Value {
    json!({
        "name": "test", "description": "",
        "sim": {"duration_ns": 2_000_000_000u64, "warmup_ns": 0, "seed": 1, "bin_ns": 100_000_000u64},
        "phy": {"standard": standard, "band": "5GHz", "channel_width": width, "guard_interval": gi,
                "control_rate_bps": 24_000_000u64},
        "mac": {"aggregation": standard != "ofdm", "max_ampdu_mpdus": if standard == "ofdm" {1} else {64},
                "max_ampdu_bytes": 0, "max_ppdu_time_ns": 5_484_000u64, "retry_limit": 7,
                "beacon_interval_ns": 0, "access_category": "BE", "cw_min": null, "cw_max": null, "aifsn": null},
        "ap": {"queue_limit": 1000, "scheduler": "round_robin"},
        "wired": {"rate_bps": 10_000_000_000u64, "delay_ns": 1_000_000u64, "queue_limit": 1000, "loss": 0.0},
        "stations": [],
        "flows": []
    })
}

pub fn station(mcs: u32, nss: u32) -> Value {
    json!({"mcs": mcs, "nss": nss, "error_model": "none", "per": 0.0, "snr_db": 30.0, "queue_limit": 1000})
}

pub fn flow(sta: u32, dir: &str, pattern: &str, rate_bps: u64, size: u32, stop_ns: u64) -> Value {
    json!({"station": sta, "direction": dir, "pattern": pattern, "rate_bps": rate_bps,
           "packet_size": size, "start_ns": 0, "stop_ns": stop_ns})
}

pub fn run(spec: &Value, seed: u64) -> Value {
    let s = spec.to_string();
    let problems = lasthop_sim::validate_json(&s);
    assert!(problems.is_empty(), "{problems:?}");
    let out = lasthop_sim::run_json(&s, seed, &mut |_| {}).expect("run");
    serde_json::from_str(&out).unwrap()
}

/// `spec` reads, and `Spec::problems` finds exactly one problem in it: at `path`, its "allowed"
/// text containing `needle`.
pub fn assert_one_problem(spec: &Value, path: &str, needle: &str) {
    let spec = lasthop_sim::Spec::from_json(&spec.to_string()).expect("reads");
    let p = spec.problems();
    assert_eq!(p.len(), 1, "{p:?}");
    assert_eq!(p[0].0, path);
    assert!(p[0].2.contains(needle), "{p:?}");
}
