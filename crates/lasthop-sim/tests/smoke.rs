//! Every PHY standard and band runs end to end and delivers what its rate allows.
mod common;
use common::*;
use serde_json::json;

#[test]
fn every_standard_and_band_runs() {
    // (standard, band, width, gi, mcs, nss, max_ampdu)
    let cases = [
        ("ofdm", "5GHz", 20, 800, 7, 1, 1),
        ("ofdm", "2.4GHz", 20, 800, 7, 1, 1),
        ("ht", "2.4GHz", 20, 800, 7, 2, 32),
        ("ht", "5GHz", 40, 400, 7, 3, 64),
        ("vht", "5GHz", 160, 400, 9, 2, 64),
        ("he", "5GHz", 80, 800, 11, 2, 256),
        ("he", "6GHz", 160, 3200, 7, 1, 128),
        ("he", "2.4GHz", 40, 1600, 9, 1, 64),
    ];
    for (std, band, width, gi, mcs, nss, n) in cases {
        let mut s = base(std, width, gi);
        s["phy"]["band"] = json!(band);
        s["mac"]["max_ampdu_mpdus"] = json!(n);
        s["mac"]["aggregation"] = json!(n > 1);
        s["mac"]["beacon_interval_ns"] = json!(102_400_000u64);
        if std == "ht" {
            s["mac"]["max_ampdu_bytes"] = json!(65_535);
        }
        s["stations"] = json!([station(mcs, nss), station(mcs, nss)]);
        s["flows"] = json!([
            flow(0, "down", "saturated", 0, 1500, 2_000_000_000),
            flow(1, "up", "saturated", 0, 1500, 2_000_000_000),
        ]);
        let d = run(&s, 1);
        let phy = d["stations"][0]["phy_rate_bps"].as_f64().unwrap();
        let total: f64 = d["flows"].as_array().unwrap().iter().map(|f| f["goodput_bps"].as_f64().unwrap()).sum();
        let eff = total / phy;
        eprintln!("{std} {band} {width} MHz MCS {mcs} x{nss}: PHY {:.1} Mb/s, goodput {:.1} Mb/s ({:.0}%), collisions {}",
            phy / 1e6, total / 1e6, eff * 100.0, d["stats"]["collisions"]);
        assert!(eff > 0.3 && eff < 1.0, "{std}: efficiency {eff}");
        assert!(d["stats"]["beacons"].as_u64().unwrap() >= 19);
    }
}
