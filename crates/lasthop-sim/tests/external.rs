//! Packets from outside the model (the emulator's hook, `world_ext.rs`): they cross the cell
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
    let delivered = fates.iter().filter(|x| x.fate == ExtFate::Delivered).count() as u64;
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
    // A-MPDUs were built from the injected packets.
    assert!(e["stations"][0]["mean_ampdu_down"].as_f64().unwrap() > 2.0);
    // Delivery instants never go backwards and lie after the wired delay.
    let mut last = Instant::ZERO;
    for x in fates.iter().filter(|x| x.fate == ExtFate::Delivered) {
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
    for x in &out {
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
    assert_eq!(a.len(), 3_000);
    assert_eq!(a, once());
}
