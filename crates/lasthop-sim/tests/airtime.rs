//! The rate anomaly and airtime fairness (Heusse et al., INFOCOM 2003; Høiland-Jørgensen et
//! al., "Ending the Anomaly", USENIX ATC 2017): with per-station round-robin, a slow station
//! takes most of the airtime and drags the fast one down to its throughput; airtime-fair
//! scheduling at the AP gives both the same airtime, and the fast station its speed back.

mod common;
use common::*;
use serde_json::json;

#[test]
fn airtime_fairness_ends_the_rate_anomaly() {
    let secs = 6;
    let mut out = Vec::new();
    for sched in ["round_robin", "airtime"] {
        let mut s = base("vht", 80, 800);
        s["sim"]["duration_ns"] = json!(secs * 1_000_000_000);
        s["sim"]["warmup_ns"] = json!(1_000_000_000u64);
        s["ap"]["scheduler"] = json!(sched);
        s["stations"] = json!([station(9, 2), station(0, 1)]);
        s["flows"] = json!([
            flow(0, "down", "saturated", 0, 1500, secs * 1_000_000_000),
            flow(1, "down", "saturated", 0, 1500, secs * 1_000_000_000),
        ]);
        let d = run(&s, 1);
        let g: Vec<f64> = (0..2).map(|i| d["flows"][i]["goodput_bps"].as_f64().unwrap()).collect();
        let air: Vec<f64> = (0..2).map(|i| d["stations"][i]["airtime_rx_ns"].as_f64().unwrap()).collect();
        let share = air[0] / (air[0] + air[1]);
        eprintln!("{sched:11}: fast {:.1} Mb/s, slow {:.1} Mb/s, fast station's airtime share {:.1}%",
            g[0] / 1e6, g[1] / 1e6, share * 100.0);
        out.push((g, share));
    }
    let (rr, af) = (&out[0], &out[1]);
    assert!(rr.1 < 0.35, "round-robin: the slow station should dominate airtime: {out:?}");
    assert!((af.1 - 0.5).abs() < 0.05, "airtime fairness: equal airtime: {out:?}");
    assert!(af.0[0] > 1.5 * rr.0[0], "the fast station should gain: {out:?}");
}
