//! Packets from outside the model (the emulator's hook, `world/hosts/ext.rs`): they cross the cell
//! like simulated packets, every one is accounted for exactly once, and the same injections
//! give the same fates.

mod common;
use common::*;
use lasthop_core::{Duration, Instant};
use lasthop_sim::world::{Dir, ExtEvent, ExtFate, World};
use lasthop_sim::Spec;
use serde_json::{json, Value};

fn world(spec: &Value) -> World {
    let s = spec.to_string();
    assert!(lasthop_sim::validate_json(&s).is_empty());
    World::new_realtime(Spec::from_json(&s).unwrap(), 1)
}

/// Inject `n` packets of `len` octets on `flow`, one every `gap`, stepping the world to each
/// injection instant, then run on to `until`; returns every fate.
fn drive(w: &mut World, flow: u32, n: u32, len: u32, gap: Duration, until: Instant) -> Vec<ExtEvent> {
    let mut out = Vec::new();
    for k in 0..n {
        w.step_to(Instant::ZERO + gap * k as u64);
        w.inject(flow, len, k);
        w.drain_external(&mut out);
    }
    w.step_to(until);
    w.drain_external(&mut out);
    out
}

/// The same CBR load as a simulated flow and as injected packets: the same deliveries and
/// the same delays (the injected packets take exactly the simulated path).
#[test]
fn injected_packets_cross_the_model_like_simulated_ones() {
    let stop = 1_000_000_000u64;
    let mut spec = base("vht", 80, 800);
    spec["sim"]["duration_ns"] = json!(stop);
    spec["stations"] = json!([station(7, 2), station(3, 1)]);
    // 1500-byte packets every 100 µs = 120 Mb/s for station 0 (its link carries ~300).
    let mut sim = spec.clone();
    sim["flows"] = json!([flow(0, "down", "cbr", 120_000_000, 1500, stop)]);
    let d = run(&sim, 1);
    let f = &d["flows"][0];

    let mut w = world(&spec);
    let ext = w.add_external_flow(0, Dir::Down, "udp test".into());
    assert_eq!(ext, 0);
    let fates = drive(&mut w, ext, 10_000, 1500, Duration::from_micros(100), Instant(stop));
    w.finish_at(Instant(stop));
    let e = serde_json::to_value(lasthop_sim::output::collect(&w)).unwrap();
    let g = &e["flows"][0];
    assert_eq!(g["pattern"], "external");
    assert_eq!(g["external"], "udp test");
    // A packet of a PPDU under way is reported `Received` at its subframe's end and `Released`
    // at the exchange's end, when the model counts it.
    let delivered = fates.iter().filter(|x| matches!(x.fate, ExtFate::Delivered | ExtFate::Released)).count() as u64;
    let received = fates.iter().filter(|x| x.fate == ExtFate::Received).count() as u64;
    assert!(received > 0 && received >= delivered - fates.iter().filter(|x| x.fate == ExtFate::Delivered).count() as u64);
    assert_eq!(delivered, g["delivered_packets"].as_u64().unwrap());
    println!(
        "simulated: {} pkts, delay mean {} p99 {}; injected: {} pkts, delay mean {} p99 {}",
        f["delivered_packets"], f["delay_ns"]["mean"], f["delay_ns"]["p99"], g["delivered_packets"], g["delay_ns"]["mean"],
        g["delay_ns"]["p99"]
    );
    let (a, b) = (f["delivered_packets"].as_f64().unwrap(), g["delivered_packets"].as_f64().unwrap());
    assert_eq!(a, b, "delivered");
    let (a, b) = (f["delay_ns"]["mean"].as_f64().unwrap(), g["delay_ns"]["mean"].as_f64().unwrap());
    assert_eq!(a, b, "mean delay");
    // Each packet reported ahead (at its subframe's end) is released once, at or after that
    // instant, and later in the order of the reports.
    for (i, x) in fates.iter().enumerate().filter(|(_, x)| x.fate == ExtFate::Received) {
        let rel: Vec<_> = fates.iter().enumerate().filter(|(_, y)| y.tag == x.tag && y.fate == ExtFate::Released).collect();
        assert!(rel.len() <= 1 && rel.iter().all(|&(j, y)| j > i && y.at >= x.at), "tag {}", x.tag);
    }
    // A-MPDUs were built from the injected packets.
    assert!(e["stations"][0]["mean_ampdu_down"].as_f64().unwrap() > 2.0);
    // Delivery instants never go backwards and lie after the wired delay.
    let mut last = Instant::ZERO;
    for x in fates.iter().filter(|x| matches!(x.fate, ExtFate::Delivered | ExtFate::Received)) {
        assert!(x.at >= last && x.at >= Instant(1_000_000));
        last = x.at;
    }
}

/// Uplink into a short station queue: some packets are dropped, and every tag comes back
/// exactly once, delivered or dropped.
#[test]
fn every_injected_packet_is_delivered_or_dropped_once() {
    let mut spec = base("ht", 20, 800);
    let mut st = station(0, 1);
    st["queue_limit"] = json!(20);
    spec["stations"] = json!([station(7, 1), st]);
    let mut w = world(&spec);
    let up = w.add_external_flow(1, Dir::Up, "up".into());
    let down = w.add_external_flow(0, Dir::Down, "down".into());
    let mut out = Vec::new();
    // 2 000 packets at 30 Mb/s up a 6.5 Mb/s link, and a light downlink beside them.
    for k in 0..2_000u32 {
        w.step_to(Instant(k as u64 * 400_000));
        w.inject(up, 1500, k);
        if k % 10 == 0 {
            w.inject(down, 200, 100_000 + k);
        }
        w.drain_external(&mut out);
    }
    w.step_to(Instant(5_000_000_000));
    w.drain_external(&mut out);
    let mut seen = vec![0u8; 102_000];
    for x in out.iter().filter(|x| x.fate != ExtFate::Received) {
        seen[x.tag as usize] += 1;
        assert_eq!(x.flow, if x.tag >= 100_000 { down } else { up });
    }
    let injected = (0..2_000).chain((0..2_000).step_by(10).map(|k| 100_000 + k));
    for t in injected {
        assert_eq!(seen[t as usize], 1, "tag {t} reported {} times", seen[t as usize]);
    }
    let dropped = out.iter().filter(|x| x.fate == ExtFate::Dropped).count();
    assert!(dropped > 500, "{dropped} drops");
    assert_eq!(w.packets_in_system(), 0);
}

/// Same injections, same fates (determinism of the emulator's model side).
#[test]
fn same_injections_same_fates() {
    let mut spec = base("vht", 80, 800);
    spec["stations"] = json!([station(9, 2), station(4, 1), station(8, 2)]);
    spec["stations"][1]["error_model"] = json!("fixed");
    spec["stations"][1]["per"] = json!(0.1);
    let once = || {
        let mut w = world(&spec);
        let fl: Vec<u32> = (0..3).map(|s| w.add_external_flow(s, if s == 2 { Dir::Up } else { Dir::Down }, format!("f{s}"))).collect();
        let mut out = Vec::new();
        for k in 0..3_000u32 {
            w.step_to(Instant(k as u64 * 50_000));
            w.inject(fl[(k % 3) as usize], 1500 - (k % 7) * 100, k);
            w.drain_external(&mut out);
        }
        w.step_to(Instant(1_000_000_000));
        w.drain_external(&mut out);
        out
    };
    let a = once();
    assert_eq!(a.iter().filter(|x| x.fate != ExtFate::Received).count(), 3_000);
    assert_eq!(a, once());
}

/// The AP host's legs: a wired-leg packet is delivered at the AP end of the wired link (after
/// the wired delay, without entering the AP's queues); a WiFi-leg packet goes from the AP's
/// queue over the air (downlink) or ends when the AP receives it (uplink); a wired-leg uplink
/// packet starts at the AP and crosses the wired link only.
#[test]
fn legs_split_the_path_at_the_ap() {
    use lasthop_sim::world::ExtLeg;
    let mut spec = base("vht", 80, 800);
    spec["stations"] = json!([station(7, 2)]);
    spec["wired"]["delay_ns"] = json!(3_000_000u64);
    let mut w = world(&spec);
    let wd = w.add_external_flow_on(0, Dir::Down, ExtLeg::Wired, "wired down".into());
    let fd = w.add_external_flow_on(0, Dir::Down, ExtLeg::Wifi, "wifi down".into());
    let fu = w.add_external_flow_on(0, Dir::Up, ExtLeg::Wifi, "wifi up".into());
    let wu = w.add_external_flow_on(0, Dir::Up, ExtLeg::Wired, "wired up".into());
    assert_eq!(w.external_leg(wd), ExtLeg::Wired);
    assert_eq!(w.external_leg(fu), ExtLeg::Wifi);
    let mut out = Vec::new();
    for (tag, f) in [(1u32, wd), (2, fd), (3, fu), (4, wu)] {
        w.inject(f, 1000, tag);
    }
    // Nothing is queued at the AP for the wired-leg packet.
    assert_eq!(w.ap_queue_len(0), 1);
    w.step_to(Instant(20_000_000));
    w.drain_external(&mut out);
    let at = |tag: u32| out.iter().find(|e| e.tag == tag).map(|e| (e.fate, e.at)).unwrap();
    let (f1, t1) = at(1);
    let (f4, t4) = at(4);
    assert_eq!((f1, f4), (ExtFate::Delivered, ExtFate::Delivered));
    // 3 ms of wire plus 8 µs of serialisation at the wired rate, and nothing else.
    assert!(t1 >= Instant(3_000_000) && t1 < Instant(3_100_000), "{t1:?}");
    assert!(t4 >= Instant(3_000_000) && t4 < Instant(3_100_000), "{t4:?}");
    // The WiFi legs never touch the wire: they arrive within a frame exchange.
    let (f2, t2) = at(2);
    let (f3, t3) = at(3);
    // (Reported at their subframe's end, ahead of the exchange's end, which releases them.)
    assert_eq!((f2, f3), (ExtFate::Received, ExtFate::Received));
    assert!([2, 3].iter().all(|&t| out.iter().any(|e| e.tag == t && e.fate == ExtFate::Released)));
    assert!(t2 < Instant(1_000_000) && t3 < Instant(1_000_000), "{t2:?} {t3:?}");
    assert_eq!(w.packets_in_system(), 0);
    // Through-path flows are untouched by the legs beside them.
    let th = w.add_external_flow(0, Dir::Down, "through".into());
    w.inject(th, 1000, 9);
    w.step_to(Instant(40_000_000));
    out.clear();
    w.drain_external(&mut out);
    assert!(out[0].tag == 9 && out[0].at > Instant(23_000_000));
}

/// The AP's telemetry snapshot counts what crossed the air and follows the TXQ limit knob.
#[test]
fn telemetry_reports_the_ap_and_the_txq_limit_is_a_knob() {
    use lasthop_sim::world::telemetry::TelemetryCursor;
    use lasthop_sim::world::ExtLeg;
    let mut spec = base("ht", 20, 800);
    spec["stations"] = json!([station(7, 1), station(2, 1)]);
    spec["ap"]["queue_limit"] = json!(500);
    let mut w = world(&spec);
    let f = w.add_external_flow_on(0, Dir::Down, ExtLeg::Wifi, "bulk".into());
    let mut cur = TelemetryCursor::default();
    let t0 = w.ap_telemetry(&mut cur);
    assert_eq!(t0.txq.limit, 500);
    assert_eq!(t0.stations.len(), 2);
    assert_eq!(t0.stations[0].tx_rate.mcs, 7);
    // 65 Mb/s for 5.484 ms (the PPDU limit here) holds 28 full-size MPDUs.
    assert_eq!(t0.stations[0].ampdu_capacity, 28);
    assert_eq!(w.set_ap_txq_limit(50), 50);
    assert_eq!(w.set_ap_txq_limit(100_000), 500, "clamped to the queues' size");
    w.set_ap_txq_limit(50);
    // 400 packets at once into a 50-packet limit: the rest are refused.
    let mut out = Vec::new();
    for k in 0..400 {
        w.inject(f, 1500, k);
    }
    let t1 = w.ap_telemetry(&mut cur);
    assert_eq!(t1.txq.limit, 50);
    assert_eq!(t1.stations[0].backlog_packets, 50);
    assert_eq!(t1.txq.overlimit, 350);
    w.step_to(Instant(1_000_000_000));
    w.drain_external(&mut out);
    let t2 = w.ap_telemetry(&mut cur);
    let s = &t2.stations[0];
    assert_eq!(s.tx.mpdus_acked, 50);
    assert_eq!(s.tx.bytes_acked, 50 * 1500);
    assert!(s.tx.airtime_ns > 0 && s.tx.ppdus >= 2);
    assert!(s.ampdu_mean > 1.0 && s.ampdu_mean <= 42.0, "{}", s.ampdu_mean);
    assert!(t2.survey.busy_ns >= t2.survey.tx_ns && t2.survey.tx_ns >= s.tx.airtime_ns / 2);
    assert_eq!(t2.survey.active_ns, 1_000_000_000);
    assert!(t2.stations[1].tx.ppdus == 0 && t2.stations[1].ampdu_mean == 0.0);
    // Between snapshots without PPDUs, the mean is the last one seen.
    let t3 = w.ap_telemetry(&mut cur);
    assert_eq!(t3.stations[0].ampdu_mean, s.ampdu_mean);
}

/// A flow added at run time beside a split one: the split proxy's host knows it as a flow it
/// does not split (its packets cross the cell as any external flow's).
#[test]
fn an_external_flow_beside_a_split_one_crosses_the_cell() {
    let stop = 1_000_000_000u64;
    let mut spec = base("vht", 80, 800);
    spec["sim"]["duration_ns"] = json!(stop);
    spec["stations"] = json!([station(7, 2), station(7, 2)]);
    let mut split = flow(1, "up", "tcp", 0, 1500, stop);
    split["split"] = json!(true);
    spec["flows"] = json!([split]);
    let mut w = world(&spec);
    let down = w.add_external_flow(0, Dir::Down, "down".into());
    let up = w.add_external_flow(0, Dir::Up, "up".into());
    let mut fates = drive(&mut w, down, 100, 1500, Duration::from_micros(500), Instant(stop / 2));
    fates.extend(drive(&mut w, up, 100, 1500, Duration::from_micros(500), Instant(stop)));
    let delivered = |f: u32| fates.iter().filter(|x| x.flow == f && matches!(x.fate, ExtFate::Delivered | ExtFate::Released)).count();
    assert_eq!((delivered(down), delivered(up)), (100, 100));
}
