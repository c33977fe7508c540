//! Queue disciplines on the wired bottleneck and in stations' own transmit queues.
//! Figures are printed (`cargo test -p lasthop-sim --release --test wired_qdisc -- --nocapture`).

mod common;
use common::*;
use serde_json::{json, Value};

fn tcp_flow(sta: u32, dir: &str, cc: &str, stop_ns: u64) -> Value {
    json!({"station": sta, "direction": dir, "pattern": "tcp", "rate_bps": 0, "packet_size": 1500,
           "start_ns": 0, "stop_ns": stop_ns, "cc": cc, "bytes": 0, "pacing": null,
           "hystart": true, "extra_acked": true})
}

/// A mixed scenario without the new keys: a CUBIC download through a 50 Mb/s wired bottleneck
/// with a short queue (wired drops), a CUBIC upload from a station with a short queue (station
/// queue drops), a lossy wired link and a ping.
fn golden_spec() -> Value {
    let secs = 3;
    let stop = secs * 1_000_000_000u64;
    let mut s = base("vht", 80, 800);
    s["sim"]["duration_ns"] = json!(stop);
    s["sim"]["warmup_ns"] = json!(500_000_000u64);
    s["wired"] = json!({"rate_bps": 50_000_000u64, "delay_ns": 10_000_000u64, "queue_limit": 30, "loss": 0.001});
    let mut up = station(2, 1);
    up["queue_limit"] = json!(40);
    s["stations"] = json!([station(9, 2), up]);
    s["flows"] = json!([
        tcp_flow(0, "down", "cubic", stop),
        tcp_flow(1, "up", "cubic", stop),
        {"station": 0, "direction": "down", "pattern": "ping", "rate_bps": 84 * 8 * 20,
         "packet_size": 84, "start_ns": 0, "stop_ns": stop},
        flow(1, "up", "cbr", 60_000_000, 1000, stop),
    ]);
    s
}

fn fingerprint(d: &Value) -> Vec<String> {
    let mut v = vec![format!("events {}", d["stats"]["events"])];
    for f in d["flows"].as_array().unwrap() {
        v.push(format!(
            "{} {} {} {} {} {} {} {}",
            f["goodput_bps"], f["delivered_packets"], f["dropped_queue"], f["dropped_retry"], f["dropped_wired"],
            f["delay_ns"]["mean"], f["delay_ns"]["p50"], f["delay_ns"]["p99"]
        ));
    }
    v
}

/// Recorded with the code before wired/station disciplines existed: specs without the new keys
/// must give exactly the same results.
#[test]
fn fifo_results_unchanged() {
    let expect = [
        "events 57911",
        "13029683.2 2812 0 0 7 13400082.076813657 12484608 27983872",
        "227046.4 50 0 0 26 16670541.44 16285696 19988480",
        "9139.2 34 0 0 16 27392937.647058822 25886720 48365568",
        "48358400.0 15112 7 0 3641 16387042.765021175 16023552 21037056",
    ];
    assert_eq!(fingerprint(&run(&golden_spec(), 7)), expect);
}

#[test]
fn tmp_dump() {
    let tag = std::env::var("DUMP_TAG").unwrap_or_default();
    if tag.is_empty() { return; }
    let mut a = golden_spec();
    a["ap"]["qdisc"] = json!("fq_codel");
    a["stations"][1]["parent"] = json!(0);
    let mut b = golden_spec();
    b["wired"]["queue_limit"] = json!(1000);
    b["flows"][0]["cc"] = json!("bbr");
    for (i, s) in [golden_spec(), a, b].iter().enumerate() {
        let out = lasthop_sim::run_json(&s.to_string(), 3, &mut |_| {}).unwrap();
        std::fs::write(format!("/tmp/wiredq/{tag}_{i}.json"), out).unwrap();
    }
}
