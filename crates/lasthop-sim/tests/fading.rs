//! `[channel.fading]`: each link whose errors follow its SNR fades around it (`phy/fading.rs`).

mod common;
use common::*;
use serde_json::{json, Value};

fn cell(snr_db: f64, rate_control: &str, fading: Option<Value>) -> Value {
    let mut s = base("ht", 20, 400);
    s["sim"]["duration_ns"] = json!(4_000_000_000u64);
    s["sim"]["bin_ns"] = json!(50_000_000u64);
    // The normalized spec carries an MCS for every station; only "fixed" uses it.
    s["stations"] = json!([{"mcs": 4, "nss": 1, "error_model": "snr", "per": 0.0, "snr_db": snr_db,
                            "queue_limit": 1000, "rate_control": rate_control}]);
    s["flows"] = json!([flow(0, "down", "saturated", 0, 1500, 4_000_000_000u64)]);
    if let Some(f) = fading {
        s["channel"] = json!({"path_loss": "log_distance", "exponent": 3.5, "tx_power_dbm": 20.0,
                              "noise_figure_db": 7.0, "fading": f});
    }
    s
}

fn goodput(d: &Value) -> f64 {
    d["flows"][0]["goodput_bps"].as_f64().unwrap()
}

/// The relative std-dev of the flow's goodput over its 50 ms bins after the first second.
fn variation(d: &Value) -> f64 {
    let g: Vec<f64> = d["timeseries"]["flow_goodput_bps"][0].as_array().unwrap().iter().skip(20)
        .map(|x| x.as_f64().unwrap()).collect();
    let m = g.iter().sum::<f64>() / g.len() as f64;
    (g.iter().map(|x| (x - m).powi(2)).sum::<f64>() / g.len() as f64).sqrt() / m
}

#[test]
fn fading_varies_the_snr_and_the_goodput_around_the_links_own() {
    let rayleigh = json!({"model": "rayleigh", "doppler_hz": 5.0});
    let still = run(&cell(25.0, "minstrel", None), 1);
    let faded = run(&cell(25.0, "minstrel", Some(rayleigh.clone())), 1);
    // The SNR series moves around 25 dB (a unit-mean power gain: its dB mean sits below).
    let snr: Vec<f64> = faded["timeseries"]["station_snr_db"][0].as_array().unwrap().iter()
        .map(|x| x.as_f64().unwrap()).collect();
    let (lo, hi) = snr.iter().fold((f64::MAX, f64::MIN), |(a, b), &x| (a.min(x), b.max(x)));
    assert!(lo < 15.0 && hi > 27.0, "SNR {lo:.1} … {hi:.1} dB");
    assert!(still["timeseries"]["station_snr_db"][0].as_array().unwrap().iter().all(|x| x.as_f64() == Some(25.0)));
    // Deep fades cost goodput, and the 50 ms bins vary far more than on the still link.
    assert!(goodput(&faded) < 0.9 * goodput(&still), "{} vs {}", goodput(&faded), goodput(&still));
    assert!(variation(&faded) > 2.0 * variation(&still), "{} vs {}", variation(&faded), variation(&still));
    // A strong line of sight (Rician K 20 dB) fades little.
    let rician = json!({"model": "rician", "doppler_hz": 5.0, "k_db": 20.0});
    let los = run(&cell(25.0, "minstrel", Some(rician)), 1);
    assert!(goodput(&los) > goodput(&faded), "{} vs {}", goodput(&los), goodput(&faded));
    // Same spec and seed, same bytes; another seed, another fading.
    assert_eq!(faded, run(&cell(25.0, "minstrel", Some(rayleigh.clone())), 1));
    assert_ne!(goodput(&faded), goodput(&run(&cell(25.0, "minstrel", Some(rayleigh)), 2)));
}

#[test]
fn fading_without_a_station_on_the_snr_model_is_refused_in_one_line() {
    let mut s = cell(25.0, "fixed", Some(json!({"model": "rayleigh", "doppler_hz": 5.0})));
    s["stations"][0]["error_model"] = json!("none");
    assert_one_problem(&s, "channel.fading", "error_model = \"snr\"");
}
