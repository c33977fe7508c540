mod common;
use common::*;

#[test]
fn smoke_vht_saturated() {
    let mut s = base("vht", 80, 800);
    s["stations"] = serde_json::json!([station(9, 2)]);
    s["flows"] = serde_json::json!([flow(0, "down", "saturated", 0, 1500, 2_000_000_000)]);
    let d = run(&s, 1);
    let f = &d["flows"][0];
    eprintln!("goodput {} Mb/s, mean ampdu {}, events {}, mpdus {}", f["goodput_bps"].as_f64().unwrap() / 1e6,
        d["stations"][0]["mean_ampdu_down"], d["stats"]["events"], d["stats"]["mpdus_delivered"]);
    eprintln!("{}", serde_json::to_string_pretty(&d["stats"]).unwrap()); eprintln!("{:?}", &d["stations"][0]["ampdu_hist_down"]);
    assert!(f["goodput_bps"].as_f64().unwrap() > 100e6);
}
