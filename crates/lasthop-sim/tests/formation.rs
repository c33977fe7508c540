//! A-MPDUs formed ahead of the air (`mac.ampdu_formation = "ath9k"`): ath9k fixes an A-MPDU's
//! frames when it hands it to the hardware, at most two ahead (`ATH_AGGR_MIN_QDEPTH`), where
//! the default builds it at channel access from everything queued.

mod common;
use common::*;
use serde_json::{json, Value};

/// One station at HT20 MCS 7 with a downlink `pattern` at `rate_bps` (1500-octet packets) for
/// 2 s, its A-MPDUs formed by `formation`, or through a relay (a 2-hop chain) if `relay`.
fn cell(formation: &str, pattern: &str, rate_bps: u64, relay: bool) -> Value {
    let mut s = base("ht", 20, 800);
    s["mac"]["ampdu_formation"] = json!(formation);
    let mut sts = vec![station(7, 1)];
    if relay {
        let mut leaf = station(7, 1);
        leaf["parent"] = json!(0);
        sts.push(leaf);
    }
    let dest = sts.len() as u32 - 1;
    s["stations"] = json!(sts);
    s["flows"] = json!([flow(dest, "down", pattern, rate_bps, 1500, 2_000_000_000)]);
    run(&s, 1)
}

fn goodput(d: &Value) -> f64 {
    d["flows"][0]["goodput_bps"].as_f64().unwrap() / 1e6
}

/// Station `i`'s downlink A-MPDUs: (how many, the share of them with one MPDU, MPDUs per A-MPDU).
fn ampdus(d: &Value, i: usize) -> (u64, f64, f64) {
    let h: Vec<u64> = d["stations"][i]["ampdu_hist_down"].as_array().unwrap().iter().map(|c| c.as_u64().unwrap()).collect();
    let n: u64 = h.iter().sum();
    let mpdus: u64 = h.iter().enumerate().map(|(k, c)| k as u64 * c).sum();
    (n, h[1] as f64 / n as f64, mpdus as f64 / n as f64)
}

/// Station `i`'s downlink A-MPDU histogram (index: MPDUs).
fn hist(d: &Value, i: usize) -> Vec<u64> {
    d["stations"][i]["ampdu_hist_down"].as_array().unwrap().iter().map(|c| c.as_u64().unwrap()).collect()
}

#[test]
fn a_saturated_queue_fills_every_formed_a_mpdu() {
    // With a standing queue each formation takes as many frames as one A-MPDU holds, and the
    // next is formed while it is on the air: as full as at channel access, and as fast.
    let (access, ath9k) = (cell("access", "saturated", 0, false), cell("ath9k", "saturated", 0, false));
    let (ga, g9) = (goodput(&access), goodput(&ath9k));
    assert!((g9 / ga - 1.0).abs() < 0.01, "{g9} vs {ga} Mb/s");
    assert!(ampdus(&ath9k, 0).2 > 0.98 * ampdus(&access, 0).2);
}

/// One station at HT20 MCS 7 receiving `bursts` bursts of ten 1500-octet packets, each
/// arriving back to back from the 10 Gb/s wire, 20 ms apart.
fn bursts(formation: &str, bursts: u64) -> Value {
    let mut s = base("ht", 20, 800);
    s["mac"]["ampdu_formation"] = json!(formation);
    s["stations"] = json!([station(7, 1)]);
    s["flows"] = json!((0..bursts)
        .map(|b| {
            // 1 Gb/s for 120 µs: ten packets, 12 µs apart.
            let mut f = flow(0, "down", "cbr", 1_000_000_000, 1500, 0);
            f["start_ns"] = json!(b * 20_000_000);
            f["stop_ns"] = json!(b * 20_000_000 + 120_000);
            f
        })
        .collect::<Vec<_>>());
    run(&s, 1)
}

#[test]
fn a_burst_reaching_an_idle_link_sends_its_first_two_frames_alone() {
    let n = 50;
    let (access, ath9k) = (bursts("access", n), bursts("ath9k", n));
    let (ha, h9) = (hist(&access, 0), hist(&ath9k, 0));
    // The first frame is handed to the hardware at once and goes at once (the medium was idle),
    // the second is formed while the first is on the air, alone; the eight behind them wait
    // for the first one's transmit status.
    assert_eq!((h9[1], h9[8], h9.iter().sum::<u64>()), (2 * n, n, 3 * n), "{h9:?}");
    // At channel access the builder takes the nine that arrived while the first was on the air.
    assert_eq!((ha[1], ha[9], ha.iter().sum::<u64>()), (n, n, 2 * n), "{ha:?}");
}

#[test]
fn a_relay_forwards_the_start_of_each_arriving_a_mpdu_alone() {
    // The AP's A-MPDUs reach the relay as bursts: while the relay's hardware queue has room,
    // their first frames are formed on their own, which costs the shared channel airtime.
    let (access, ath9k) = (cell("access", "saturated", 0, true), cell("ath9k", "saturated", 0, true));
    let (ha, h9) = (hist(&access, 1), hist(&ath9k, 1));
    assert!(h9[1] > ha[1] + 10, "relay's single-MPDU A-MPDUs {} vs {}", h9[1], ha[1]);
    assert!(goodput(&ath9k) < goodput(&access), "{} vs {}", goodput(&ath9k), goodput(&access));
}

#[test]
fn the_default_formation_is_not_written_and_a_bad_one_is_one_problem() {
    let mut s = base("ht", 20, 800);
    s["stations"] = json!([station(7, 1)]);
    s["flows"] = json!([flow(0, "down", "saturated", 0, 1500, 2_000_000_000)]);
    let plain = run(&s, 1);
    s["mac"]["ampdu_formation"] = json!("access");
    assert_eq!(run(&s, 1), plain, "\"access\" is the model without the key");
    s["mac"]["ampdu_formation"] = json!("ath9k");
    s["ap"]["driver"] = json!("firmware");
    assert_one_problem(&s, "mac.ampdu_formation", "ap.driver");
}
