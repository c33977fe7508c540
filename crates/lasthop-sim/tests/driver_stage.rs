//! The pre-4.10 ath9k's stage below the qdisc (`ap.driver = "ath9k"`) and its depth
//! (`ap.ath9k_qdepth`): under a saturating download the frames wait in the qdisc and then in the
//! stage, so the one-way delay grows with the two together while the goodput does not move.
//! Figures are printed (`cargo test -p lasthop-sim --release --test driver_stage -- --nocapture`).

mod common;
use common::*;
use serde_json::{json, Value};

fn cell(qdepth: Option<u32>) -> Value {
    let stop = 3_000_000_000u64;
    let mut s = base("ht", 20, 800);
    s["sim"]["duration_ns"] = json!(stop);
    s["sim"]["warmup_ns"] = json!(1_000_000_000u64);
    s["ap"] = json!({"queue_limit": 1000, "scheduler": "round_robin", "qdisc": "fifo", "driver": "ath9k"});
    if let Some(q) = qdepth {
        s["ap"]["ath9k_qdepth"] = json!(q);
    }
    s["stations"] = json!([station(7, 1)]);
    s["flows"] = json!([flow(0, "down", "cbr", 100_000_000, 1500, stop)]);
    s
}

#[test]
fn the_stage_depth_adds_its_frames_to_the_delay() {
    let fig = |q: Option<u32>| {
        let d = run(&cell(q), 1);
        let f = &d["flows"][0];
        (f["goodput_bps"].as_f64().unwrap() / 1e6, f["delay_ns"]["mean"].as_f64().unwrap() / 1e6)
    };
    let (g123, d123) = fig(None);
    let (g500, d500) = fig(Some(500));
    eprintln!("ath9k_qdepth 123: {g123:.2} Mb/s, {d123:.1} ms; 500: {g500:.2} Mb/s, {d500:.1} ms");
    assert!((g500 / g123 - 1.0).abs() < 0.01, "goodput moved: {g123} vs {g500}");
    // FIFO-1000 full in both, plus the stage: (1000 + 500) / (1000 + 123) = 1.34.
    let r = d500 / d123;
    assert!((1.25..1.42).contains(&r), "delay ratio {r:.3} (123: {d123:.1} ms, 500: {d500:.1} ms)");
    // The default written explicitly is the default.
    assert_eq!(run(&cell(Some(123)), 1), run(&cell(None), 1));
}
