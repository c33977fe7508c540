//! `[channel.interference]`: bursts the cell does not sense lower the SINR of the frames they
//! overlap (`world/interference.rs`). A weak link loses what they cover, in proportion to the
//! time they are on; a strong link's margin absorbs them; the run stays deterministic.

mod common;
use common::*;
use serde_json::{json, Value};

fn cell(snr_db: f64, interference: Option<Value>) -> Value {
    let mut s = base("vht", 80, 800);
    s["sim"]["duration_ns"] = json!(3_000_000_000u64);
    s["stations"] = json!([{"mcs": 4, "nss": 1, "error_model": "snr", "per": 0.0, "snr_db": snr_db,
                            "queue_limit": 1000, "rate_control": "fixed"}]);
    s["flows"] = json!([flow(0, "down", "saturated", 0, 1500, 3_000_000_000)]);
    if let Some(i) = interference {
        s["channel"] = json!({"path_loss": "log_distance", "exponent": 3.5, "tx_power_dbm": 20.0,
                              "noise_figure_db": 7.0, "interference": i});
    }
    s
}

fn goodput(d: &Value) -> f64 {
    d["flows"][0]["goodput_bps"].as_f64().unwrap()
}

#[test]
fn bursts_take_a_weak_links_frames_for_the_time_they_are_on_and_spare_a_strong_one() {
    // 5 ms on, 45 ms off: on a tenth of the time. At 20 dB INR the weak link (25 dB, MCS 4
    // clean) is at about 5 dB during a burst, where MCS 4 loses every MPDU.
    let burst = json!({"on_ns": 5_000_000u64, "off_ns": 45_000_000u64, "inr_db": 20.0});
    let weak = goodput(&run(&cell(25.0, None), 1));
    let weak_hit = goodput(&run(&cell(25.0, Some(burst.clone())), 1));
    let share = 1.0 - weak_hit / weak;
    // MPDUs that overlap a burst even in part are lost, and their retransmissions wait: a bit
    // more than the tenth of the time the bursts are on.
    assert!((0.08..0.25).contains(&share), "weak link: {weak} -> {weak_hit} b/s ({share:.3} lost)");
    let strong = goodput(&run(&cell(60.0, None), 1));
    let strong_hit = goodput(&run(&cell(60.0, Some(burst.clone())), 1));
    assert_eq!(strong, strong_hit, "a 60 dB link keeps 40 dB through a 20 dB burst");
    // Same spec and seed, same bytes; another seed, other bursts.
    let a = run(&cell(25.0, Some(burst.clone())), 1);
    assert_eq!(a, run(&cell(25.0, Some(burst.clone())), 1));
    assert_ne!(goodput(&a), goodput(&run(&cell(25.0, Some(burst)), 2)));
}

#[test]
fn interference_without_a_station_on_the_snr_model_is_refused_in_one_line() {
    let mut s = cell(25.0, Some(json!({"on_ns": 1_000_000u64, "off_ns": 1_000_000u64, "inr_db": 10.0})));
    s["stations"][0]["error_model"] = json!("none");
    assert_one_problem(&s, "channel.interference", "error_model = \"snr\"");
}
