//! RTS/CTS protection (`stations[].rts`, `ap.rts`, IEEE 802.11-2020 §10.3.2.9): what it costs
//! a sender's PPDUs, and what it saves in collisions.

mod common;
use common::*;
use serde_json::{json, Value};

/// `n` stations at VHT80 MCS 9 ×2, each with a saturated uplink, every station's radio with
/// RTS policy `rts`: the run's result.
fn uplinks(n: usize, rts: &str, seed: u64) -> Value {
    let mut s = base("vht", 80, 800);
    let mut st = station(9, 2);
    st["rts"] = json!(rts);
    s["stations"] = json!((0..n).map(|_| st.clone()).collect::<Vec<_>>());
    s["flows"] = json!((0..n as u32).map(|i| flow(i, "up", "saturated", 0, 1500, 2_000_000_000)).collect::<Vec<_>>());
    run(&s, seed)
}

fn goodput(d: &Value) -> f64 {
    d["flows"].as_array().unwrap().iter().map(|f| f["goodput_bps"].as_f64().unwrap()).sum::<f64>() / 1e6
}

/// Station `i`'s mean airtime per A-MPDU it sent (µs).
fn airtime_per_ampdu(d: &Value, i: usize) -> f64 {
    let st = &d["stations"][i];
    let n: u64 = st["ampdu_hist_up"].as_array().unwrap().iter().map(|c| c.as_u64().unwrap()).sum();
    st["airtime_tx_ns"].as_f64().unwrap() / n as f64 / 1e3
}

#[test]
fn a_protected_ppdu_takes_the_rts_cts_exchange_longer() {
    let (off, on) = (uplinks(1, "off", 1), uplinks(1, "ampdu", 1));
    // RTS (20 octets) and CTS (14) at 24 Mb/s in 5 GHz: 28 µs each, with a SIFS of 16 µs after
    // each: 88 µs more per exchange.
    let extra = airtime_per_ampdu(&on, 0) - airtime_per_ampdu(&off, 0);
    assert!((extra - 88.0).abs() < 1.0, "{extra} µs");
    assert!(goodput(&on) < goodput(&off), "a lone sender only pays: {} vs {}", goodput(&on), goodput(&off));
    assert_eq!(on["stats"]["collisions"], 0);
}

/// One station at VHT80 MCS 9 ×2 with a saturated downlink, the AP's radio with RTS policy
/// `rts`: the run's result.
fn downlink(rts: &str) -> Value {
    let mut s = base("vht", 80, 800);
    s["ap"]["rts"] = json!(rts);
    s["stations"] = json!([station(9, 2)]);
    s["flows"] = json!([flow(0, "down", "saturated", 0, 1500, 2_000_000_000)]);
    run(&s, 1)
}

#[test]
fn the_aps_policy_protects_its_downlink_a_mpdus() {
    let (off, on) = (downlink("off"), downlink("ampdu"));
    let per_ampdu = |d: &Value| {
        let st = &d["stations"][0];
        let n: u64 = st["ampdu_hist_down"].as_array().unwrap().iter().map(|c| c.as_u64().unwrap()).sum();
        st["airtime_rx_ns"].as_f64().unwrap() / n as f64 / 1e3
    };
    // The same 88 µs of RTS, SIFS, CTS and SIFS as a station's (above), before each A-MPDU.
    let extra = per_ampdu(&on) - per_ampdu(&off);
    assert!((extra - 88.0).abs() < 1.0, "{extra} µs");
    assert!(goodput(&on) < goodput(&off), "{} vs {}", goodput(&on), goodput(&off));
}

#[test]
fn with_many_contenders_collisions_cost_only_rts_frames() {
    // Eight saturated senders of ~5 ms A-MPDUs: a collision wastes the longest colliding PPDU
    // without protection, two RTS frames and a CTS timeout with it (Bianchi's RTS/CTS access).
    let (mut g_off, mut g_on, mut busy_off, mut busy_on, mut c_off, mut c_on) = (0.0, 0.0, 0.0, 0.0, 0u64, 0u64);
    for seed in 1..=3 {
        let (off, on) = (uplinks(8, "off", seed), uplinks(8, "always", seed));
        (g_off, g_on) = (g_off + goodput(&off), g_on + goodput(&on));
        c_off += off["stats"]["collisions"].as_u64().unwrap();
        c_on += on["stats"]["collisions"].as_u64().unwrap();
        busy_off += off["channel"]["busy_ns"].as_f64().unwrap();
        busy_on += on["channel"]["busy_ns"].as_f64().unwrap();
    }
    assert!(c_off > 30 && c_on > 30, "contention collides: {c_off}, {c_on}");
    assert!(g_on > 1.05 * g_off, "protection pays with eight contenders: {g_on} vs {g_off} Mb/s");
    // Per access, a protected cell spends less of its time on collisions: more, shorter ones
    // (its CTS timeouts come sooner than the PPDUs would have ended).
    assert!(c_on as f64 / busy_on > c_off as f64 / busy_off, "collisions per busy second: {c_on} vs {c_off}");
}

#[test]
fn an_unknown_policy_is_refused_with_its_choices() {
    let mut s = base("vht", 80, 800);
    let mut st = station(9, 2);
    st["rts"] = json!("on");
    s["stations"] = json!([st]);
    let p = lasthop_sim::validate_json(&s.to_string());
    assert_eq!(p.len(), 1, "{p:?}");
    assert_eq!(p[0].0, "stations[0].rts");
    assert!(p[0].2.contains("\"off\", \"ampdu\", \"always\""), "{p:?}");
}

#[test]
fn an_unknown_ap_policy_is_refused_with_its_choices() {
    let mut s = base("vht", 80, 800);
    s["ap"]["rts"] = json!("sometimes");
    s["stations"] = json!([station(9, 2)]);
    let p = lasthop_sim::validate_json(&s.to_string());
    assert_eq!(p.len(), 1, "{p:?}");
    assert_eq!(p[0].0, "ap.rts");
    assert!(p[0].2.contains("\"off\", \"ampdu\", \"always\""), "{p:?}");
}

#[test]
fn the_capture_shows_rts_cts_and_then_the_data() {
    use lasthop_sim::capture::{CaptureRequest, Node, PpduKind};
    let mut s = base("vht", 80, 800);
    let mut st = station(9, 2);
    st["rts"] = json!("ampdu");
    s["stations"] = json!([st.clone(), st]);
    s["flows"] = json!([flow(0, "up", "saturated", 0, 1500, 300_000_000), flow(1, "up", "saturated", 0, 1500, 300_000_000)]);
    s["sim"]["duration_ns"] = json!(300_000_000u64);
    let s = s.to_string();
    let req = CaptureRequest { node: Node::Ap, limit: 100_000 };
    let (data, cap) = lasthop_sim::run_json_with_capture(&s, 1, &mut |_| {}, Some(req)).unwrap();
    assert_eq!(data, lasthop_sim::run_json(&s, 1, &mut |_| {}).unwrap(), "capture is an observer");
    let cap = cap.unwrap();
    let (sifs, ctl) = (16_000u64, 28_000u64);
    let (mut answered, mut unanswered) = (0, 0);
    for (i, p) in cap.ppdus.iter().enumerate() {
        if p.kind != PpduKind::Rts {
            continue;
        }
        match cap.ppdus.get(i + 1).map(|q| (q.kind, q)) {
            Some((PpduKind::Cts { rts }, c)) => {
                assert_eq!(rts as usize, i);
                assert!(p.received && (c.tx, c.rx) == (p.rx, p.tx));
                assert_eq!(c.start_ns, p.start_ns + ctl + sifs, "CTS SIFS after the RTS");
                let d = &cap.ppdus[i + 2];
                assert!(d.kind == PpduKind::Data && d.tx == p.tx);
                assert_eq!(d.start_ns, c.start_ns + ctl + sifs, "data SIFS after the CTS");
                answered += 1;
            }
            _ => {
                assert!(!p.received && p.collision, "only a collision leaves an RTS unanswered here");
                unanswered += 1;
            }
        }
    }
    assert!(answered > 50 && unanswered > 0, "{answered} answered, {unanswered} collided");
    // Every data PPDU of the stations followed its CTS.
    let data = cap.ppdus.iter().filter(|p| p.kind == PpduKind::Data && p.tx != Node::Ap).count();
    assert_eq!(data, answered);
}
