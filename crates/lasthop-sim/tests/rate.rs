//! Rate control in the cell: Minstrel-HT-like sampling against the SNR oracle ("ideal"), at a
//! static SNR and along a mobility schedule (the SNR from distance through the link budget).

mod common;
use common::*;
use serde_json::{json, Value};

fn rc_station(rc: &str, nss: u32) -> Value {
    json!({"mcs": 0, "nss": nss, "error_model": "snr", "per": 0.0, "snr_db": 30.0, "queue_limit": 1000,
           "rate_control": rc})
}

fn run_one(rc: &str, secs: u64, set: &dyn Fn(&mut Value)) -> Value {
    let mut s = base("vht", 80, 800);
    s["sim"]["duration_ns"] = json!(secs * 1_000_000_000);
    s["sim"]["bin_ns"] = json!(100_000_000u64);
    s["stations"] = json!([rc_station(rc, 2)]);
    s["flows"] = json!([flow(0, "down", "saturated", 0, 1500, secs * 1_000_000_000)]);
    set(&mut s);
    run(&s, 1)
}

fn series(d: &Value, key: &str) -> Vec<f64> {
    d["timeseries"][key][0].as_array().unwrap().iter().map(|v| v.as_f64().unwrap()).collect()
}

#[test]
fn minstrel_converges_to_the_ideal_rate_at_a_static_snr() {
    for snr in [12.0, 22.0, 32.0] {
        let set = |s: &mut Value| s["stations"][0]["snr_db"] = json!(snr);
        let ideal = run_one("ideal", 3, &set);
        let minstrel = run_one("minstrel", 3, &set);
        let ideal_rate = series(&ideal, "station_phy_rate_down_bps")[10];
        let m = series(&minstrel, "station_phy_rate_down_bps");
        // After 500 ms most PPDUs go at the ideal rate (samples, 10 %, go elsewhere).
        let settled = m[5..].iter().filter(|&&r| (r - ideal_rate).abs() / ideal_rate < 0.3).count();
        let gi = ideal["flows"][0]["goodput_bps"].as_f64().unwrap();
        let gm = minstrel["flows"][0]["goodput_bps"].as_f64().unwrap();
        eprintln!("SNR {snr} dB: ideal rate {:.0} Mb/s goodput {:.1} Mb/s; minstrel goodput {:.1} Mb/s ({:.1} %), \
                   bins near ideal rate {settled}/{}", ideal_rate / 1e6, gi / 1e6, gm / 1e6, 100.0 * gm / gi, m.len() - 5);
        let g_i = series(&ideal, "flow_goodput_bps");
        let g_m = series(&minstrel, "flow_goodput_bps");
        let late = |g: &[f64]| g[10..].iter().sum::<f64>() / (g.len() - 10) as f64;
        let first = m.iter().position(|&r| (r - ideal_rate).abs() / ideal_rate < 0.3);
        eprintln!("   after 1 s: minstrel/ideal goodput {:.1} %; first bin near ideal {first:?}", 100.0 * late(&g_m) / late(&g_i));
        // Cold start at the lowest rate: probes of faster rates every 20 ms (3 INC : 2 JUMP :
        // 1 SLOW) climb to the ideal rate within three 100 ms windows at every SNR (before the
        // 2021-style probing it took ~1 s at 12 dB).
        let limit = 3;
        assert!(first.is_some_and(|b| b <= limit), "SNR {snr}: minstrel bins {m:?} vs ideal {ideal_rate}");
        assert!(settled as f64 >= 0.6 * (m.len() - 5) as f64, "SNR {snr}: {m:?}");
        assert!(late(&g_m) >= 0.9 * late(&g_i), "SNR {snr}: converged minstrel {gm} vs ideal {gi}");
        // The ideal rate really depends on the SNR: the three cases differ.
        assert!(ideal_rate > 0.0);
    }
}

#[test]
fn rate_follows_a_walk_out_to_40_metres_and_back() {
    let secs = 20;
    // Walk 1 m → 40 m → 1 m at 3.9 m/s; the link budget's default log-distance model.
    let set = |s: &mut Value| {
        s["stations"][0]["waypoints"] = json!([[0, 1.0], [10_000_000_000u64, 40.0], [20_000_000_000u64, 1.0]]);
    };
    let ideal = run_one("ideal", secs, &set);
    let minstrel = run_one("minstrel", secs, &set);
    let snr = series(&ideal, "station_snr_db");
    let ri = series(&ideal, "station_phy_rate_down_bps");
    let rm = series(&minstrel, "station_phy_rate_down_bps");
    assert!(snr[0] > snr[99] + 20.0, "SNR falls with distance: {snr:?}");
    // Rate falls and recovers with the walk.
    assert!(ri[2] > 2.0 * ri[99] && ri[197] > 2.0 * ri[99], "ideal: {ri:?}");
    assert!(rm[2] > 2.0 * rm[99] && rm[197] > 2.0 * rm[99], "minstrel: {rm:?}");
    let gi = ideal["flows"][0]["goodput_bps"].as_f64().unwrap();
    let gm = minstrel["flows"][0]["goodput_bps"].as_f64().unwrap();
    let close = rm.iter().zip(&ri).filter(|(m, i)| (*m - *i).abs() / *i < 0.35).count();
    eprintln!("walk: ideal {:.1} Mb/s, minstrel {:.1} Mb/s ({:.1} %), bins within 35 % of ideal rate {close}/{}",
        gi / 1e6, gm / 1e6, 100.0 * gm / gi, rm.len());
    assert!(gm >= 0.7 * gi, "minstrel {gm} vs ideal {gi}");
    assert!(close as f64 >= 0.5 * rm.len() as f64);
}

#[test]
fn same_spec_same_seed_same_bytes_with_minstrel_and_mobility() {
    let mut s = base("ht", 40, 400);
    s["phy"]["band"] = json!("2.4GHz");
    s["sim"]["duration_ns"] = json!(1_000_000_000u64);
    let mut st = rc_station("minstrel", 2);
    st["waypoints"] = json!([[0, 3.0], [1_000_000_000u64, 20.0]]);
    s["stations"] = json!([st, station(7, 2)]);
    s["flows"] = json!([flow(0, "down", "saturated", 0, 1500, 1_000_000_000), flow(1, "up", "saturated", 0, 1500, 1_000_000_000)]);
    let a = lasthop_sim::run_json(&s.to_string(), 3, &mut |_| {}).unwrap();
    let b = lasthop_sim::run_json(&s.to_string(), 3, &mut |_| {}).unwrap();
    assert_eq!(a, b);
    let c = lasthop_sim::run_json(&s.to_string(), 4, &mut |_| {}).unwrap();
    assert_ne!(a, c, "the seed reaches Minstrel's sampling");
}
