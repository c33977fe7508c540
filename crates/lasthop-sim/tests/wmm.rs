//! WMM access categories (IEEE 802.11-2020 §10.2.3.2, §10.23.2; `world/wmm.rs`): per-AC EDCA
//! functions and queues at the AP and the stations, internal collisions, TXOP limits, and the
//! classic result that a ping marked AC_VO skips the bloated best-effort queue of a bulk TCP
//! download.

mod common;
use common::*;
use lasthop_sim::world::World;
use lasthop_sim::{capture, CaptureRequest, Node, Spec};
use lasthop_wifi::mac::edca::AccessCategory as Ac;
use lasthop_wifi::mac::frame::{self, AmpduLen};
use lasthop_wifi::phy::{self, Band, Standard, TxVector};
use serde_json::{json, Value};

const SEC: u64 = 1_000_000_000;

/// 802.11n HT20 MCS 7 (65 Mb/s), the AP's 1000-packet FIFO, beacons off.
fn ht20(secs: u64) -> Value {
    let mut s = base("ht", 20, 800);
    s["sim"]["duration_ns"] = json!(secs * SEC);
    s
}

fn with_ac(mut f: Value, ac: &str) -> Value {
    f["ac"] = json!(ac);
    f
}

fn world(spec: &Value, seed: u64) -> World {
    let s = Spec::from_json(&spec.to_string()).unwrap();
    assert!(s.problems().is_empty(), "{:?}", s.problems());
    let mut w = World::new(s, seed);
    w.run(&mut |_| {});
    w
}

fn ms(d: &Value, f: usize, q: &str) -> f64 {
    d["flows"][f]["delay_ns"][q].as_f64().unwrap() / 1e6
}

/// A node gets one EDCAF per AC some flow through it uses; with one AC, one per node as
/// before.
#[test]
fn edcafs_per_node_follow_the_flows() {
    let mut s = ht20(1);
    s["stations"] = json!([station(7, 1), station(7, 1), station(7, 1)]);
    s["flows"] = json!([flow(0, "down", "cbr", 1_000_000, 1500, SEC), flow(1, "up", "cbr", 1_000_000, 1500, SEC)]);
    let w = world(&s, 1);
    assert_eq!(w.access_categories(), &[Ac::Be]);
    assert_eq!((0..4).map(|n| w.node_edcafs(n)).collect::<Vec<_>>(), vec![1, 1, 1, 1]);
    // Every flow in VO (mac.access_category stays BE): still one EDCAF per node, of VO.
    s["flows"] = json!([with_ac(flow(0, "down", "cbr", 1_000_000, 1500, SEC), "VO"), with_ac(flow(1, "up", "cbr", 1_000_000, 1500, SEC), "VO")]);
    let w = world(&s, 1);
    assert_eq!(w.access_categories(), &[Ac::Vo]);
    assert_eq!((0..4).map(|n| w.node_edcafs(n)).collect::<Vec<_>>(), vec![1, 1, 1, 1]);
    assert_eq!(w.edcaf_cw(1, Ac::Vo), Some(3), "a station's VO EDCAF starts at its CWmin (Table 9-155)");
    // Two ACs: the AP and station 0 get two, station 1 one (VI), station 2 (no flow) one.
    s["flows"] = json!([
        flow(0, "down", "cbr", 1_000_000, 1500, SEC),
        with_ac(flow(0, "up", "cbr", 1_000_000, 1500, SEC), "VI"),
        with_ac(flow(1, "down", "cbr", 1_000_000, 1500, SEC), "VI"),
    ]);
    let w = world(&s, 1);
    assert_eq!(w.access_categories(), &[Ac::Be, Ac::Vi]);
    assert_eq!((0..4).map(|n| w.node_edcafs(n)).collect::<Vec<_>>(), vec![2, 2, 1, 1]);
    assert_eq!(w.edcaf_cw(2, Ac::Be), None);
}

/// The AP's VO and BE functions both have traffic all the time: they often reach zero in the
/// same slot. The VO one transmits, BE backs off as after a collision — and no frame is lost:
/// no collision on the air, no retry drop, everything offered arrives.
#[test]
fn internal_collisions_lose_nothing() {
    let mut s = ht20(4);
    s["stations"] = json!([station(7, 1)]);
    s["flows"] = json!([
        with_ac(flow(0, "down", "cbr", 20_000_000, 1500, 4 * SEC), "VO"),
        flow(0, "down", "cbr", 30_000_000, 1500, 4 * SEC),
    ]);
    let w = world(&s, 3);
    let d = serde_json::to_value(lasthop_sim::output::collect(&w)).unwrap();
    let (ic, coll) = (w.internal_collisions(), d["stats"]["collisions"].as_u64().unwrap());
    eprintln!("internal collisions {ic}, collisions on the air {coll}");
    assert!(ic > 10, "{ic}");
    assert_eq!(coll, 0);
    for f in 0..2 {
        let fl = &d["flows"][f];
        assert_eq!(fl["dropped_retry"], 0);
        assert_eq!(fl["dropped_queue"], 0);
        let (off, del) = (fl["offered_packets"].as_u64().unwrap(), fl["delivered_packets"].as_u64().unwrap());
        // All but the few in flight at the end arrived.
        assert!(off - del < 100, "flow {f}: offered {off}, delivered {del}");
    }
}

/// The ping-under-load picture of WMM: a bulk CUBIC download fills the AP's 1000-packet FIFO
/// (best effort); a ping in the same queue waits behind it (tens of ms or more), a ping marked
/// AC_VO has its own queue and EDCAF at both ends and sees a few ms.
#[test]
fn vo_ping_skips_the_bulk_queue() {
    let secs = 10;
    let run_with = |ac: &str| {
        let mut s = ht20(secs);
        s["sim"]["warmup_ns"] = json!(3 * SEC);
        s["stations"] = json!([station(7, 1)]);
        let tcp = json!({"station": 0, "direction": "down", "pattern": "tcp", "rate_bps": 0, "packet_size": 1500,
                         "start_ns": 0, "stop_ns": secs * SEC, "cc": "cubic"});
        // 84-byte echo requests every 10 ms (100/s); the far end replies in the same AC.
        let ping = json!({"station": 0, "direction": "down", "pattern": "ping", "rate_bps": 84 * 8 * 100,
                          "packet_size": 84, "start_ns": 0, "stop_ns": secs * SEC, "ac": ac});
        s["flows"] = json!([tcp, ping]);
        run(&s, 1)
    };
    let (be, vo) = (run_with("BE"), run_with("VO"));
    let g = |d: &Value| d["flows"][0]["goodput_bps"].as_f64().unwrap() / 1e6;
    for (name, d) in [("BE", &be), ("VO", &vo)] {
        eprintln!(
            "ping in {name}: RTT p50 {:7.2} ms, p95 {:7.2} ms, max {:7.2} ms; bulk CUBIC {:5.1} Mb/s",
            ms(d, 1, "p50"),
            ms(d, 1, "p95"),
            ms(d, 1, "max"),
            g(d)
        );
    }
    // BE: the FIFO's queueing delay, tens to hundreds of ms (CUBIC keeps it between ~40 and
    // 200 ms at this rate). VO: the 2 ms wired round trip plus a few ms of channel access
    // behind the bulk aggregates.
    assert!(ms(&be, 1, "p50") > 50.0, "BE ping p50 {}", ms(&be, 1, "p50"));
    assert!(ms(&vo, 1, "p50") < 15.0, "VO ping p50 {}", ms(&vo, 1, "p50"));
    assert!(ms(&vo, 1, "p95") < 25.0, "VO ping p95 {}", ms(&vo, 1, "p95"));
    assert!(ms(&be, 1, "p50") > 10.0 * ms(&vo, 1, "p50"));
    // Every ping got through, and the bulk flow kept most of its throughput.
    assert_eq!(vo["flows"][1]["dropped_queue"], 0);
    assert!(g(&vo) > 0.8 * g(&be), "bulk {} vs {} Mb/s", g(&vo), g(&be));
}

/// Saturating VO (or VI) against BE: the higher AC's smaller AIFSN and CW win it most channel
/// accesses, so it takes the larger share of airtime — although its A-MPDUs are shorter (its
/// TXOP limit). Between stations (uplink) and inside the AP (downlink, internal contention).
#[test]
fn higher_ac_takes_the_larger_airtime_share() {
    let secs = 4;
    for (hi, dir) in [("VO", "up"), ("VI", "up"), ("VO", "down"), ("VI", "down")] {
        let mut s = ht20(secs);
        s["sim"]["warmup_ns"] = json!(SEC);
        s["stations"] = json!([station(7, 1), station(7, 1)]);
        s["flows"] = json!([with_ac(flow(0, dir, "saturated", 0, 1500, secs * SEC), hi), flow(1, dir, "saturated", 0, 1500, secs * SEC)]);
        let d = run(&s, 1);
        let key = if dir == "up" { "airtime_tx_ns" } else { "airtime_rx_ns" };
        let air = |i: usize| d["stations"][i][key].as_f64().unwrap();
        let share = air(0) / (air(0) + air(1));
        let gp = |f: usize| d["flows"][f]["goodput_bps"].as_f64().unwrap() / 1e6;
        eprintln!(
            "{dir:4}: {hi} airtime share {:5.1} % ({:6.1} Mb/s), BE {:5.1} % ({:6.1} Mb/s); collisions {}",
            100.0 * share,
            gp(0),
            100.0 * (1.0 - share),
            gp(1),
            d["stats"]["collisions"]
        );
        assert!(share > 0.6, "{hi} {dir}: share {share}");
        assert!(gp(0) > gp(1), "{hi} {dir}");
    }
}

/// A VO A-MPDU's exchange (PPDU, SIFS, Block Ack) fits its 2.080 ms TXOP limit, VI's its
/// 4.096 ms; BE keeps the 5.484 ms PPDU limit.
#[test]
fn ampdus_respect_the_txop_limit_of_their_ac() {
    let secs = 1;
    let txv = TxVector::new(Standard::Ht, 7, 1, 20, 800);
    let sifs = phy::mac_timing(Standard::Ht, Band::Ghz5).sifs;
    let ba = phy::legacy_duration(24_000_000, frame::BLOCK_ACK_64, Band::Ghz5);
    let ppdu = |n: usize| {
        let mut l = AmpduLen::default();
        for _ in 0..n {
            l.push(frame::mpdu_len(1500, true));
        }
        phy::ppdu_duration(&txv, l.len(), Band::Ghz5)
    };
    // The largest A-MPDU a saturated downlink flow of each AC sends (alone in the cell).
    let largest = |ac: &str| {
        let mut s = ht20(secs);
        s["stations"] = json!([station(7, 1)]);
        s["flows"] = json!([with_ac(flow(0, "down", "saturated", 0, 1500, secs * SEC), ac)]);
        let d = run(&s, 1);
        let h = d["stations"][0]["ampdu_hist_down"].as_array().unwrap().clone();
        h.iter().rposition(|c| c.as_u64().unwrap() > 0).unwrap()
    };
    let (vo, vi, be) = (largest("VO"), largest("VI"), largest("BE"));
    let ex = |n: usize| (ppdu(n) + sifs + ba).as_nanos();
    eprintln!("largest A-MPDU: VO {vo} MPDUs (exchange {} us), VI {vi} ({} us), BE {be} (PPDU {} us)", ex(vo) / 1000, ex(vi) / 1000, ppdu(be).as_nanos() / 1000);
    assert!(ex(vo) <= 2_080_000 && ex(vo + 1) > 2_080_000);
    assert!(ex(vi) <= 4_096_000 && ex(vi + 1) > 4_096_000);
    assert!(ppdu(be).as_nanos() <= 5_484_000 && ppdu(be + 1).as_nanos() > 5_484_000);
}

fn mixed() -> Value {
    let secs = 3;
    let mut s = ht20(secs);
    s["stations"] = json!([station(7, 1), station(5, 1)]);
    s["flows"] = json!([
        {"station": 0, "direction": "down", "pattern": "tcp", "rate_bps": 0, "packet_size": 1500,
         "start_ns": 0, "stop_ns": secs * SEC, "cc": "cubic"},
        {"station": 0, "direction": "down", "pattern": "ping", "rate_bps": 84 * 8 * 100, "packet_size": 84,
         "start_ns": 0, "stop_ns": secs * SEC, "ac": "VO"},
        with_ac(flow(1, "up", "saturated", 0, 1500, secs * SEC), "VI"),
        with_ac(flow(1, "down", "poisson", 5_000_000, 1000, secs * SEC), "BK"),
    ]);
    s
}

/// Same spec and seed, byte-identical results with four ACs in use; another seed differs.
#[test]
fn multi_ac_runs_are_deterministic() {
    let s = mixed().to_string();
    let a = lasthop_sim::run_json(&s, 7, &mut |_| {}).unwrap();
    let b = lasthop_sim::run_json(&s, 7, &mut |_| {}).unwrap();
    let c = lasthop_sim::run_json(&s, 8, &mut |_| {}).unwrap();
    assert_eq!(a, b);
    assert_ne!(a, c);
}

/// The capture labels each QoS Data frame, and the Block Ack answering it, with the TID of
/// its flow's AC.
#[test]
fn capture_carries_the_tid_of_the_flow() {
    let s = mixed().to_string();
    let req = CaptureRequest { node: Node::Ap, limit: 200_000 };
    let (data, cap) = lasthop_sim::run_json_with_capture(&s, 1, &mut |_| {}, Some(req)).unwrap();
    assert_eq!(data, lasthop_sim::run_json(&s, 1, &mut |_| {}).unwrap(), "capture is an observer");
    let pcap = lasthop_sim::pcap::write(&cap.unwrap());
    let tid_of_flow = [0u8, 6, 5, 1];
    let (mut i, mut seen) = (24, [0u32; 8]);
    let mut last_tid = None;
    while i + 16 <= pcap.len() {
        let incl = u32::from_le_bytes(pcap[i + 8..i + 12].try_into().unwrap()) as usize;
        let rec = &pcap[i + 16..i + 16 + incl];
        let rt = u16::from_le_bytes([rec[2], rec[3]]) as usize;
        let f = &rec[rt..];
        match f[0] {
            0x88 => {
                let tid = f[24] & 0x0f;
                // LLC/SNAP (8) after the QoS Control field, then IPv4; the UDP/TCP source port
                // of the station's end is 40000 + flow.
                let ip = 26 + 8;
                let ports = [u16::from_be_bytes([f[ip + 20], f[ip + 21]]), u16::from_be_bytes([f[ip + 22], f[ip + 23]])];
                let flow = ports.iter().find(|&&p| (40_000..40_004).contains(&p)).map(|p| (p - 40_000) as usize).unwrap();
                assert_eq!(tid, tid_of_flow[flow], "flow {flow}");
                seen[tid as usize] += 1;
                last_tid = Some(tid);
            }
            0x94 => {
                let tid = (u16::from_le_bytes([f[16], f[17]]) >> 12) as u8;
                assert_eq!(Some(tid), last_tid, "a Block Ack carries the TID of the data it answers");
            }
            _ => {}
        }
        i += 16 + incl;
    }
    eprintln!("QoS Data frames by TID: {seen:?}");
    assert!(seen[0] > 0 && seen[6] > 0 && seen[5] > 0 && seen[1] > 0, "{seen:?}");
}

/// Nodes with one queue carry only `mac.access_category`: the spec rules name `flows[i].ac`.
#[test]
fn single_queue_nodes_reject_other_acs() {
    let problem = |s: &Value| lasthop_sim::validate_json(&s.to_string());
    let mut s = ht20(1);
    s["stations"] = json!([station(7, 1), station(7, 1)]);
    s["flows"] = json!([with_ac(flow(0, "down", "cbr", 1_000_000, 1500, SEC), "XX")]);
    let p = problem(&s);
    assert_eq!(p[0].0, "spec", "an access category that is not one does not read: {p:?}");
    assert!(p[0].2.contains("\"XX\""), "{p:?}");
    s["flows"] = json!([flow(0, "down", "cbr", 1_000_000, 1500, SEC), with_ac(flow(1, "down", "cbr", 1_000_000, 1500, SEC), "VO")]);
    assert!(problem(&s).is_empty());
    // A relay's flows.
    s["stations"][1]["parent"] = json!(0);
    let p = problem(&s);
    assert_eq!((p[0].0.as_str(), p[0].1.as_str()), ("flows[1].ac", "\"VO\""));
    assert!(p[0].2.contains("mesh relay"), "{p:?}");
    // The firmware driver and the WQM buffer sizer.
    s["stations"][1]["parent"] = Value::Null;
    s["ap"]["driver"] = json!("firmware");
    assert!(problem(&s)[0].2.contains("firmware"));
    s["ap"]["driver"] = json!("pull");
    s["ap"]["buffer_sizer"] = json!("wqm");
    assert!(problem(&s)[0].2.contains("wqm"));
    // Non-QoS OFDM.
    let mut o = base("ofdm", 20, 800);
    o["stations"] = json!([station(7, 1)]);
    o["flows"] = json!([with_ac(flow(0, "down", "cbr", 1_000_000, 1500, SEC), "VO")]);
    assert!(problem(&o)[0].2.contains("ofdm"));
    // Explicitly the default AC is fine anywhere.
    o["flows"][0]["ac"] = json!("BE");
    assert!(problem(&o).is_empty());
}

/// A mesh cell with a VO flow to a station of the AP and best-effort traffic through a relay:
/// the relay works in BE only, the AP in both.
#[test]
fn relays_in_the_main_ac_beside_a_vo_station() {
    let secs = 3;
    let mut s = ht20(secs);
    let mut child = station(7, 1);
    child["parent"] = json!(1);
    s["stations"] = json!([station(7, 1), station(7, 1), child]);
    s["flows"] = json!([
        {"station": 0, "direction": "down", "pattern": "ping", "rate_bps": 84 * 8 * 100, "packet_size": 84,
         "start_ns": 0, "stop_ns": secs * SEC, "ac": "VO"},
        {"station": 2, "direction": "down", "pattern": "tcp", "rate_bps": 0, "packet_size": 1500,
         "start_ns": 0, "stop_ns": secs * SEC, "cc": "cubic"},
    ]);
    let w = world(&s, 1);
    assert_eq!((0..4).map(|n| w.node_edcafs(n)).collect::<Vec<_>>(), vec![2, 1, 1, 1]);
    let d = serde_json::to_value(lasthop_sim::output::collect(&w)).unwrap();
    eprintln!("VO ping via the AP: p50 {:.2} ms; TCP through the relay {:.1} Mb/s", ms(&d, 0, "p50"), d["flows"][1]["goodput_bps"].as_f64().unwrap() / 1e6);
    assert!(d["flows"][0]["delivered_packets"].as_u64().unwrap() > 250);
    assert!(d["flows"][1]["goodput_bps"].as_f64().unwrap() > 5e6);
}

/// `ac` on cross traffic (which never enters the cell) is an error, not ignored.
#[test]
fn cross_traffic_has_no_access_category() {
    let mut s = ht20(1);
    s["stations"] = json!([station(7, 1)]);
    s["flows"] = json!([with_ac(flow(0, "cross", "cbr", 1_000_000, 1500, SEC), "BE")]);
    let p = lasthop_sim::validate_json(&s.to_string());
    assert_eq!(p[0].0, "flows[0].ac");
    assert!(p[0].2.contains("cross"), "{p:?}");
}

/// mac80211 keeps one flow queue per radio (`local->fq`) for the txqs of every TID: under
/// FQ-CoDel the AP's access categories share one table and one packet limit, and overflow is
/// dropped from the fattest flow of any station and AC (`fq_tin_enqueue`). Two ACs overloaded
/// (BE and VI, 60 Mb/s each into a 65 Mb/s cell) hold the limit between them, not twice over,
/// and a VO flow far below its share loses nothing. With a limit per AC (one table each), the
/// AP held ~2 × 300 packets.
#[test]
fn access_categories_share_the_radios_flow_queue() {
    let secs = 3;
    let mut s = ht20(secs);
    s["ap"]["qdisc"] = json!("fq_codel");
    s["ap"]["queue_limit"] = json!(300);
    s["stations"] = json!([station(7, 1), station(7, 1), station(7, 1)]);
    s["flows"] = json!([
        flow(0, "down", "cbr", 60_000_000, 1500, secs * SEC),
        with_ac(flow(1, "down", "cbr", 60_000_000, 1500, secs * SEC), "VI"),
        with_ac(flow(2, "down", "cbr", 500_000, 200, secs * SEC), "VO"),
    ]);
    let w = world(&s, 2);
    let d = serde_json::to_value(lasthop_sim::output::collect(&w)).unwrap();
    let held: usize = (0..3).map(|i| w.ap_queue_len(i)).sum();
    eprintln!("AP holds {held} packets at the end; per station {:?}", (0..3).map(|i| w.ap_queue_len(i)).collect::<Vec<_>>());
    // The limit, plus at most one frame per station put back after it did not fit an aggregate.
    assert!(held <= 300 + 3, "the ACs share one 300-packet limit: {held}");
    assert!(held >= 250, "both overloaded ACs keep the limit full: {held}");
    assert!(w.ap_queue_len(0) > 50 && w.ap_queue_len(1) > 50, "both heavy flows hold packets");
    for f in [0, 1] {
        assert!(d["flows"][f]["dropped_queue"].as_u64().unwrap() > 100, "flow {f} overflows: {}", d["flows"][f]);
    }
    assert_eq!(d["flows"][2]["dropped_queue"], 0, "the VO flow is below its share: {}", d["flows"][2]);
    assert!(d["flows"][2]["delivered_packets"].as_u64().unwrap() > 800);
}

/// A queue emptied by a drop from another AC's arrival leaves the service list: when VI's one
/// 1500-byte frame is the fattest flow of the radio (40 BE flows hold ~100 bytes each), it is
/// dropped, and VI stops contending until its next frame — no empty PPDU is ever sent.
#[test]
fn a_queue_emptied_by_another_acs_overflow_stops_contending() {
    let secs = 2;
    let mut s = ht20(secs);
    s["ap"]["qdisc"] = json!("fq_codel");
    s["ap"]["queue_limit"] = json!(40);
    s["stations"] = json!([station(7, 1), station(7, 1)]);
    let mut flows: Vec<Value> = (0..40).map(|_| flow(0, "down", "cbr", 2_000_000, 100, secs * SEC)).collect();
    flows.push(with_ac(flow(1, "down", "cbr", 3_000_000, 1500, secs * SEC), "VI"));
    s["flows"] = json!(flows);
    let w = world(&s, 4);
    let d = serde_json::to_value(lasthop_sim::output::collect(&w)).unwrap();
    let vi = &d["flows"][40];
    eprintln!("VI: {} delivered, {} dropped at the queue", vi["delivered_packets"], vi["dropped_queue"]);
    assert!(vi["dropped_queue"].as_u64().unwrap() > 0, "VI's frame is the fattest flow at times: {vi}");
    assert!(vi["delivered_packets"].as_u64().unwrap() > 0);
    for sta in 0..2 {
        assert_eq!(w.station_ampdu_hist(sta)[0].first().copied().unwrap_or(0), 0, "station {sta}: a PPDU without MPDUs");
    }
}

/// VHT 80 MHz MCS 9 ×2 with one saturated downlink and one saturated uplink station.
fn up_down(secs: u64) -> Value {
    let mut s = base("vht", 80, 800);
    s["sim"]["duration_ns"] = json!(secs * SEC);
    s["stations"] = json!([station(9, 2), station(9, 2)]);
    s["flows"] = json!([flow(0, "down", "saturated", 0, 1500, secs * SEC), flow(1, "up", "saturated", 0, 1500, secs * SEC)]);
    s
}

/// `mac.txop_limit` (the TXOP limit the AP advertises in its EDCA Parameter Set, hostapd's
/// `wmm_ac_be_txop_limit`) shortens the stations' A-MPDUs until their exchange fits it; the AP
/// keeps its own (hostapd's `tx_queue_data2_burst`, 0 by default: one exchange, no limit beyond
/// `mac.max_ppdu_time`).
#[test]
fn advertised_txop_limit_shortens_the_stations_ampdus_only() {
    let d = run(&up_down(2), 1);
    let (down0, up0) = (d["stations"][0]["mean_ampdu_down"].as_f64().unwrap(), d["stations"][1]["mean_ampdu_up"].as_f64().unwrap());
    let mut s = up_down(2);
    s["mac"]["txop_limit_ns"] = json!(1_024_000u64);
    let d = run(&s, 1);
    let (down1, up1) = (d["stations"][0]["mean_ampdu_down"].as_f64().unwrap(), d["stations"][1]["mean_ampdu_up"].as_f64().unwrap());
    // 1.024 ms less SIFS and the Block Ack at 24 Mb/s leaves ~0.97 ms of PPDU: 58 MPDUs of
    // 1500 octets at 780 Mb/s (preamble included), against 64 without the limit.
    let txv = TxVector { standard: Standard::Vht, mcs: 9, nss: 2, channel_width: 80, guard_interval: 800, ru: None };
    let psdu = frame::max_psdu_for_time(&txv, Band::Ghz5, lasthop_core::Duration::from_micros(1024 - 16 - 32), u32::MAX);
    let cap = frame::full_size_mpdus(psdu, true, 64) as f64;
    println!("A-MPDU up {up0:.1} -> {up1:.1} (cap {cap}), down {down0:.1} -> {down1:.1}");
    assert!(up0 > 60.0 && up1 <= cap + 0.5 && up1 > cap - 6.0, "{up0} {up1} {cap}");
    assert!((down1 - down0).abs() < 1.0, "the AP's own A-MPDUs keep their length: {down0} {down1}");
}

/// The AP's share of the airtime in `up_down(2)`: its downlink against the station's uplink.
fn ap_share(d: &Value) -> f64 {
    let s = &d["stations"];
    let down = s[0]["airtime_rx_ns"].as_f64().unwrap();
    down / (down + s[1]["airtime_tx_ns"].as_f64().unwrap())
}

/// The AP's own EDCA (`ap.cw_min`, `ap.aifsn`, hostapd's tx_queue_data*) against the set its
/// stations use: a smaller window and AIFSN 1 win the AP more TXOPs, so its downlink gains
/// airtime over the saturated uplink.
#[test]
fn ap_edca_gives_the_ap_more_txops() {
    let base = ap_share(&run(&up_down(2), 1));
    let mut s = up_down(2);
    s["ap"]["cw_min"] = json!(3);
    s["ap"]["aifsn"] = json!(1);
    let fast = ap_share(&run(&s, 1));
    println!("AP's share of the airtime: {base:.3} -> {fast:.3}");
    assert!((0.4..0.6).contains(&base) && fast > base + 0.15, "{base} {fast}");
}

/// The EDCA Parameter Set the AP advertises (`mac.cw_min`, `mac.aifsn`: hostapd's `wmm_ac_*`)
/// is the stations' only: the AP keeps its own (hostapd's `tx_queue_data*`, Table 9-155's by
/// default), so a larger window and AIFSN advertised to the stations win the AP more TXOPs —
/// as much as giving the AP a smaller window and AIFSN would.
#[test]
fn advertised_edca_holds_back_the_stations_not_the_ap() {
    let base = ap_share(&run(&up_down(2), 1));
    let mut s = up_down(2);
    s["mac"]["cw_min"] = json!(63);
    s["mac"]["aifsn"] = json!(7);
    let held = ap_share(&run(&s, 1));
    println!("AP's share of the airtime: {base:.3} -> {held:.3} with the stations held back");
    assert!((0.4..0.6).contains(&base) && held > base + 0.15, "{base} {held}");
}

#[test]
fn edca_values_outside_802_11_are_one_problem_each() {
    for (sec, key, v) in [("mac", "aifsn", json!(1)), ("ap", "aifsn", json!(0)), ("mac", "txop_limit_ns", json!(1_000_000u64)), ("ap", "cw_min", json!(8)), ("ap", "txop_limit_ns", json!(9_000_000u64))] {
        let mut s = up_down(1);
        s[sec][key] = v.clone();
        let p = lasthop_sim::validate_json(&s.to_string());
        assert_eq!(p.len(), 1, "{sec}.{key} = {v}: {p:?}");
        assert_eq!(p[0].0, format!("{sec}.{}", key.trim_end_matches("_ns")), "{p:?}");
    }
}

/// Three VHT stations: saturated downloads to 0 (MCS 9 ×2) and 1 (MCS `mcs1` ×1), a saturated
/// upload from 2; the AP's own TXOP limit `ap_txop` (ns) if given.
fn burst_cell(mcs1: u32, ap_txop: Option<u64>) -> Value {
    let secs = 1;
    let mut s = up_down(secs);
    s["stations"] = json!([station(9, 2), station(mcs1, 1), station(9, 2)]);
    s["flows"] = json!([
        flow(0, "down", "saturated", 0, 1500, secs * SEC),
        flow(1, "down", "saturated", 0, 1500, secs * SEC),
        flow(2, "up", "saturated", 0, 1500, secs * SEC)
    ]);
    if let Some(t) = ap_txop {
        s["ap"]["txop_limit_ns"] = json!(t);
    }
    s
}

/// The AP's TXOPs in a capture at the AP: per TXOP, its data PPDUs' receivers and the time
/// from its first PPDU's start to its last Block Ack's end. A data PPDU of the AP starts a
/// TXOP unless it follows the Block Ack of the AP's previous one by exactly SIFS (§10.23.2.8).
fn ap_txops(spec: &Value) -> Vec<(Vec<Node>, u64)> {
    let req = CaptureRequest { node: Node::Ap, limit: 400_000 };
    let s = spec.to_string();
    let (data, cap) = lasthop_sim::run_json_with_capture(&s, 1, &mut |_| {}, Some(req)).unwrap();
    assert_eq!(data, lasthop_sim::run_json(&s, 1, &mut |_| {}).unwrap(), "capture is an observer");
    let cap = cap.unwrap();
    let sifs = phy::mac_timing(Standard::Vht, Band::Ghz5).sifs.as_nanos();
    let ba = phy::legacy_duration(24_000_000, frame::BLOCK_ACK_64, Band::Ghz5).as_nanos();
    let mut txops: Vec<(Vec<Node>, u64)> = Vec::new();
    let (mut start, mut last_ba_end) = (0u64, None::<u64>);
    for (i, p) in cap.ppdus.iter().enumerate() {
        match p.kind {
            capture::PpduKind::Data if p.tx == Node::Ap => {
                if last_ba_end.is_some_and(|e| p.start_ns == e + sifs) {
                    txops.last_mut().unwrap().0.push(p.rx);
                } else {
                    start = p.start_ns;
                    txops.push((vec![p.rx], 0));
                }
                last_ba_end = None;
            }
            capture::PpduKind::BlockAck { data } if cap.ppdus[data as usize].tx == Node::Ap && data as usize + 1 == i => {
                last_ba_end = Some(p.start_ns + ba);
                txops.last_mut().unwrap().1 = p.start_ns + ba - start;
            }
            _ => last_ba_end = None,
        }
    }
    txops
}

/// The AP's TXOP limit (`ap.txop_limit`, hostapd's `tx_queue_data2_burst`) lets it send frame
/// exchanges back to back, SIFS apart, to different stations, within the limit; with Table
/// 9-155's limit for AC_BE (0) every TXOP is one exchange.
#[test]
fn an_ap_txop_limit_holds_several_exchanges_to_several_stations() {
    let one = ap_txops(&burst_cell(3, None));
    assert!(one.iter().all(|t| t.0.len() == 1), "one exchange per TXOP without a limit");
    let limit = 4_096_000u64;
    let txops = ap_txops(&burst_cell(3, Some(limit)));
    let multi: Vec<_> = txops.iter().filter(|t| t.0.len() > 1).collect();
    let mixed = multi.iter().filter(|t| t.0.iter().any(|&r| r != t.0[0])).count();
    let longest = txops.iter().map(|t| t.1).max().unwrap();
    eprintln!("{} TXOPs, {} of them with more than one exchange, {mixed} to more than one station; the longest {longest} ns", txops.len(), multi.len());
    assert!(multi.len() * 2 > txops.len(), "most TXOPs carry several exchanges: {} of {}", multi.len(), txops.len());
    assert!(mixed > 0, "a TXOP serves more than one station");
    assert!(longest <= limit, "every TXOP within its limit: {longest}");
}

/// More exchanges per access give the AP's downlink more of the air against a saturated
/// upload, as the AP's own EDCA does.
#[test]
fn an_ap_txop_limit_gives_the_downlink_more_air() {
    let share = |d: &Value| {
        let s = &d["stations"];
        let down = s[0]["airtime_rx_ns"].as_f64().unwrap() + s[1]["airtime_rx_ns"].as_f64().unwrap();
        down / (down + s[2]["airtime_tx_ns"].as_f64().unwrap())
    };
    let (base, burst) = (share(&run(&burst_cell(9, None), 1)), share(&run(&burst_cell(9, Some(4_096_000)), 1)));
    eprintln!("the AP's share of the airtime: {base:.3} -> {burst:.3}");
    assert!(burst > base + 0.1, "{base} {burst}");
}
