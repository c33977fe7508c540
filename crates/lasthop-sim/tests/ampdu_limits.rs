//! A station's own A-MPDU limits (`stations[].ampdu_mpdus_tx`: the most MPDUs its radio puts in
//! an A-MPDU; `stations[].ba_window_rx`: the Block Ack buffer size it grants in its ADDBA
//! Response, IEEE 802.11-2020 §10.25.2), beside the cell's `mac.max_ampdu_mpdus`.

mod common;
use common::*;
use serde_json::{json, Value};

/// The largest A-MPDU (MPDUs) station `st` sent (`"up"`) or was sent (`"down"`) in a result.
fn largest(d: &Value, st: usize, dir: &str) -> usize {
    let h = d["stations"][st][format!("ampdu_hist_{dir}")].as_array().unwrap();
    h.iter().rposition(|c| c.as_u64().unwrap() > 0).unwrap()
}

/// AP -> relay (station 0, with `key` = `value`) -> station 1 on a second channel, HT20 MCS 7,
/// saturated UDP to station 1 in `dirs`: the run's result.
fn relay_cell(key: &str, value: u32, dirs: &[&str]) -> Value {
    let mut s = base("ht", 20, 400);
    let mut relay = station(7, 1);
    relay[key] = json!(value);
    let mut leaf = station(7, 1);
    leaf["parent"] = json!(0);
    leaf["hop_channel"] = json!(1);
    s["stations"] = json!([relay, leaf]);
    s["flows"] = json!(dirs.iter().map(|d| flow(1, d, "saturated", 0, 1500, 2_000_000_000)).collect::<Vec<_>>());
    run(&s, 1)
}

/// One station at VHT80 MCS 9 with saturated UDP both ways: the largest A-MPDU it sent and the
/// largest it received, and the goodput each way (Mb/s).
fn both_ways(limits: &[(&str, u32)]) -> (usize, usize, f64, f64) {
    let mut s = base("vht", 80, 800);
    let mut st = station(9, 2);
    for &(k, v) in limits {
        st[k] = json!(v);
    }
    s["stations"] = json!([st]);
    s["flows"] = json!([flow(0, "down", "saturated", 0, 1500, 2_000_000_000), flow(0, "up", "saturated", 0, 1500, 2_000_000_000)]);
    let d = run(&s, 1);
    let g = |f: usize| d["flows"][f]["goodput_bps"].as_f64().unwrap() / 1e6;
    (largest(&d, 0, "up"), largest(&d, 0, "down"), g(0), g(1))
}

#[test]
fn a_station_sends_and_receives_within_its_own_limits() {
    let (up, down, g_down, g_up) = both_ways(&[]);
    assert!(up > 32 && down > 32, "the cell's 64 alone: up {up}, down {down}");
    let (up8, down8, g_down8, g_up8) = both_ways(&[("ampdu_mpdus_tx", 8)]);
    assert_eq!(up8, 8, "its radio's limit binds its uplink");
    assert!(down8 > 32, "and not its downlink: {down8}");
    assert!(g_up8 < 0.8 * g_up, "eight MPDUs a channel access carry less: {g_up8} vs {g_up} Mb/s");
    assert!(g_down8 > g_down, "the AP wins the air the station's short uplink leaves: {g_down8} vs {g_down} Mb/s");
    let (up32, down16, ..) = both_ways(&[("ba_window_rx", 16)]);
    assert_eq!(down16, 16, "the window it grants bounds the A-MPDUs sent to it");
    assert!(up32 > 32, "and not its own: {up32}");
}

#[test]
fn a_relay_sends_its_children_within_its_radios_limit() {
    // AP -> relay (station 0) -> station 1: the relay's limit binds the hop it sends on.
    let d = relay_cell("ampdu_mpdus_tx", 10, &["down"]);
    assert!(largest(&d, 0, "down") > 10, "the AP's hop: the cell's limit ({})", largest(&d, 0, "down"));
    assert_eq!(largest(&d, 1, "down"), 10, "the relay's hop: its radio's");
}

#[test]
fn limits_outside_the_cells_are_refused() {
    let mut s = base("vht", 80, 800);
    let mut st = station(9, 2);
    st["ba_window_rx"] = json!(65);
    st["ampdu_mpdus_tx"] = json!(300);
    s["stations"] = json!([st]);
    let p = lasthop_sim::validate_json(&s.to_string());
    let paths: Vec<&str> = p.iter().map(|x| x.0.as_str()).collect();
    assert!(paths.contains(&"stations[0].ba_window_rx") && paths.contains(&"stations[0].ampdu_mpdus_tx"), "{p:?}");
    s["mac"]["aggregation"] = json!(false);
    s["stations"][0]["ampdu_mpdus_tx"] = json!(8);
    s["stations"][0]["ba_window_rx"] = json!(0);
    let p = lasthop_sim::validate_json(&s.to_string());
    assert!(p.iter().any(|x| x.0 == "stations[0].ampdu_mpdus_tx" && x.2.contains("mac.aggregation")), "{p:?}");
}

#[test]
fn a_relay_grants_its_children_its_own_window() {
    // AP -> relay (station 0, granting 12) -> station 1: the child's uplink A-MPDUs to the relay
    // stay within the relay's window; the relay's own downlink from the AP within its grant too.
    let d = relay_cell("ba_window_rx", 12, &["up", "down"]);
    assert_eq!(largest(&d, 1, "up"), 12, "the child's uplink: the relay's grant");
    assert_eq!(largest(&d, 0, "down"), 12, "the relay's downlink from the AP: its grant");
    assert!(largest(&d, 1, "down") > 12, "the relay's hop to the child: the child's (the cell's) window ({})", largest(&d, 1, "down"));
}

#[test]
fn an_aggctl_receiver_must_grant_room_for_the_target() {
    let mut s = base("vht", 80, 800);
    let mut st = station(9, 2);
    st["ba_window_rx"] = json!(16);
    s["stations"] = json!([st]);
    s["flows"] = json!([{"station": 0, "direction": "down", "pattern": "aggctl", "rate_bps": 0, "packet_size": 1500, "start_ns": 0, "stop_ns": 1_000_000_000u64}]);
    let p = lasthop_sim::validate_json(&s.to_string());
    assert!(p.iter().any(|x| x.0 == "stations[0].ba_window_rx" && x.2.contains("target_aggregation")), "{p:?}");
}
