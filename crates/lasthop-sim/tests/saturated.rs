//! A saturated source keeps the queue at its entry to the MAC filled (docs/spec.md): a packet
//! that queue's discipline drops on its way out (CoDel, DualPI2) leaves it as a sent one does,
//! and a fresh one takes its place. An unresponsive source behind an AQM that drops a large
//! share still offers load to the end of the run, at the AP downlink (through a pull driver
//! and a firmware queue), in a station's own queue uplink, and in a relay's interface queue
//! for the relay's own uplink.

mod common;
use common::*;
use serde_json::{json, Value};

const SECS: u64 = 4;

/// One VHT80 MCS 9 ×2 station per entry of `stations`, running `SECS` seconds, with one
/// saturated flow from or to station 0 in `dir`.
fn cell(stations: Value, dir: &str) -> Value {
    let mut s = base("vht", 80, 800);
    s["sim"]["duration_ns"] = json!(SECS * 1_000_000_000);
    s["stations"] = stations;
    s["flows"] = json!([flow(0, dir, "saturated", 0, 1500, SECS * 1_000_000_000)]);
    s
}

/// The flow's counters and its goodput in each 100 ms bin: the discipline dropped, every
/// bin of the run carried traffic, and the packets still in the system at the end (offered,
/// less delivered and dropped) fill the queue to its limit, `target`: no drop left a hole.
fn check_filled(d: &Value, target: u64, what: &str) {
    let f = &d["flows"][0];
    let (offered, delivered, dropped) =
        (f["offered_packets"].as_u64().unwrap(), f["delivered_packets"].as_u64().unwrap(), f["dropped_queue"].as_u64().unwrap());
    let bins: Vec<f64> = d["timeseries"]["flow_goodput_bps"][0].as_array().unwrap().iter().map(|x| x.as_f64().unwrap()).collect();
    println!("{what}: offered {offered}, delivered {delivered}, dropped by the queue {dropped}; goodput per bin (Mb/s) {:?}",
             bins.iter().map(|g| (g / 1e6).round()).collect::<Vec<_>>());
    assert!(dropped > 100, "{what}: the discipline should drop this unresponsive load ({dropped})");
    assert!(offered >= delivered + dropped + target, "{what}: {offered} < {delivered} + {dropped} + {target} queued");
    assert_eq!(bins.len() as u64, SECS * 10);
    let idle: Vec<usize> = (0..bins.len()).filter(|&b| bins[b] < 50e6).collect();
    assert!(idle.is_empty(), "{what}: bins {idle:?} below 50 Mb/s: the source ran dry");
}

#[test]
fn saturated_downlink_keeps_the_aps_queue_filled_through_dualpi2() {
    for driver in ["pull", "firmware"] {
        let mut s = cell(json!([station(9, 2)]), "down");
        s["ap"] = json!({"queue_limit": 8192, "scheduler": "airtime", "qdisc": "fq_codel", "fq_aqm": "dualpi2",
                         "driver": driver});
        check_filled(&run(&s, 1), 8192, &format!("downlink, fq + DualPI2, {driver} driver"));
    }
}

#[test]
fn saturated_uplink_keeps_the_stations_queue_filled_through_its_aqm() {
    for qdisc in ["codel", "dualpi2"] {
        let mut sta = station(9, 2);
        sta["qdisc"] = json!(qdisc);
        let s = cell(json!([sta]), "up");
        check_filled(&run(&s, 1), 1000, &format!("uplink, station {qdisc}"));
    }
}

#[test]
fn saturated_uplink_of_a_relay_keeps_its_queue_filled() {
    // AP ← s0 ← s1: s0 relays s1's traffic and sends its own saturated uplink through the same
    // interface queue, whose discipline is the AP's kind (`ap.qdisc`).
    let mut s1 = station(9, 2);
    s1["parent"] = json!(0);
    let mut s = cell(json!([station(9, 2), s1]), "up");
    s["ap"]["qdisc"] = json!("dualpi2");
    check_filled(&run(&s, 1), 1000, "uplink of a relay, DualPI2");
}
