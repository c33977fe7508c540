//! Mesh relays: chains and the parking lot (WQM paper §V, Fig. 19), forwarding through each
//! relay's interface queue, and the WQM buffer sizer hosted at every forwarding node.
mod common;
use common::*;
use serde_json::{json, Value};

/// An 802.11n chain of `hops` links (AP → s0 → s1 → …) at a fixed MCS, all on one channel.
fn chain(hops: u32, mcs: u32, nss: u32, secs: u64) -> Value {
    let mut s = base("ht", 40, 400);
    s["sim"]["duration_ns"] = json!(secs * 1_000_000_000);
    s["sim"]["warmup_ns"] = json!(2_000_000_000u64.min(secs * 500_000_000));
    s["mac"]["max_ppdu_time_ns"] = json!(4_000_000u64);
    s["wired"]["delay_ns"] = json!(100_000u64);
    for h in 0..hops {
        let mut st = station(mcs, nss);
        if h > 0 {
            st["parent"] = json!(h - 1);
        }
        s["stations"].as_array_mut().unwrap().push(st);
    }
    s
}

fn tcp_flow(sta: u32, stop_ns: u64) -> Value {
    let mut f = flow(sta, "down", "tcp", 0, 1500, stop_ns);
    f["cc"] = json!("cubic");
    f
}

fn ping(sta: u32, stop_ns: u64) -> Value {
    let mut f = flow(sta, "down", "ping", 84 * 8 * 10, 84, stop_ns);
    f["start_ns"] = json!(0);
    f
}

fn goodput(out: &Value, f: usize) -> f64 {
    out["flows"][f]["goodput_bps"].as_f64().unwrap()
}

fn delay_p50_ms(out: &Value, f: usize) -> f64 {
    out["flows"][f]["delay_ns"]["p50"].as_f64().unwrap() / 1e6
}

#[test]
fn udp_crosses_every_hop_and_each_hop_costs_airtime() {
    // Saturated UDP to the end of 1-, 2- and 3-hop chains on one channel: every hop
    // retransmits each packet on the shared medium, so goodput falls roughly as 1/hops.
    let mut g = Vec::new();
    for hops in 1..=3u32 {
        let mut s = chain(hops, 7, 2, 3);
        s["flows"] = json!([flow(hops - 1, "down", "saturated", 0, 1500, 3_000_000_000u64)]);
        let out = run(&s, 1);
        let d = &out["flows"][0];
        assert!(d["delivered_packets"].as_u64().unwrap() > 1000, "{hops} hops: {d}");
        g.push(goodput(&out, 0));
        // Relays forward: the last hop's station received everything delivered.
        let st = &out["stations"];
        assert_eq!(st[hops as usize - 1]["parent"], if hops == 1 { Value::Null } else { json!(hops - 2) });
    }
    eprintln!("UDP goodput 1/2/3 hops: {:.1} {:.1} {:.1} Mb/s", g[0] / 1e6, g[1] / 1e6, g[2] / 1e6);
    assert!(g[1] < 0.62 * g[0] && g[1] > 0.4 * g[0], "{g:?}");
    assert!(g[2] < 0.42 * g[0] && g[2] > 0.25 * g[0], "{g:?}");
}

#[test]
fn tcp_over_three_hops_fifo_vs_wqm() {
    let secs = 12;
    let stop = secs * 1_000_000_000;
    let mut res = Vec::new();
    for sizer in ["none", "wqm"] {
        let mut s = chain(3, 7, 2, secs);
        s["ap"]["buffer_sizer"] = json!(sizer);
        s["flows"] = json!([tcp_flow(2, stop), ping(2, stop)]);
        let out = run(&s, 1);
        let lim = &out["timeseries"]["node_queue_limit"];
        eprintln!(
            "{sizer}: goodput {:.1} Mb/s, ping p50 {:.1} ms, TCP rtt {:?}, limits AP {:?} relay1 {:?}",
            goodput(&out, 0) / 1e6,
            delay_p50_ms(&out, 1),
            out["flows"][0]["tcp"]["srtt_ns"],
            lim[0].as_array().unwrap().iter().rev().take(3).collect::<Vec<_>>(),
            lim[1].as_array().unwrap().iter().rev().take(3).collect::<Vec<_>>()
        );
        assert!(lim[3].as_array().unwrap().is_empty(), "the last station does not forward");
        res.push((goodput(&out, 0), delay_p50_ms(&out, 1)));
    }
    let (fifo, wqm) = (res[0], res[1]);
    assert!(fifo.0 > 10e6, "{res:?}");
    assert!(wqm.1 * 4.0 < fifo.1, "WQM cuts the RTT: {res:?}");
    assert!(wqm.0 > 0.85 * fifo.0, "at a small goodput cost: {res:?}");
}

#[test]
fn parking_lot_flows_end_at_each_hop_and_runs_repeat_exactly() {
    // Fig. 19: three flows from the gateway to nodes one, two and three hops away.
    let stop = 6_000_000_000u64;
    let mut s = chain(3, 7, 2, 6);
    s["ap"]["buffer_sizer"] = json!("wqm");
    s["mac"]["aggregation_min_rate_bps"] = json!(6_500_000u64);
    s["flows"] = json!([tcp_flow(0, stop), tcp_flow(1, stop), tcp_flow(2, stop), flow(2, "up", "cbr", 1_000_000, 1000, stop)]);
    let a = lasthop_sim::run_json(&s.to_string(), 3, &mut |_| {}).unwrap();
    let b = lasthop_sim::run_json(&s.to_string(), 3, &mut |_| {}).unwrap();
    assert_eq!(a, b, "same spec and seed, same bytes");
    let out: Value = serde_json::from_str(&a).unwrap();
    let g: Vec<f64> = (0..3).map(|f| goodput(&out, f)).collect();
    eprintln!("parking lot goodput {:?} Mb/s", g.iter().map(|x| x / 1e6).collect::<Vec<_>>());
    // Every flow gets through; the one-hop flow, which costs the channel least, gets the most.
    assert!(g.iter().all(|&x| x > 1e6), "{g:?}");
    assert!(g[0] > g[2], "{g:?}");
    // The uplink flow from the far end crosses both relays and the AP.
    let up = &out["flows"][3];
    assert!(up["delivered_packets"].as_u64().unwrap() as f64 > 0.9 * up["offered_packets"].as_u64().unwrap() as f64, "{up}");
    // WQM's limit at every forwarding node stays within [1, B_max] and moved from its start.
    let lim = &out["timeseries"]["node_queue_limit"];
    for n in 0..3 {
        let v: Vec<f64> = lim[n].as_array().unwrap().iter().map(|x| x.as_f64().unwrap()).collect();
        assert!(v.iter().all(|&x| (1.0..=200.0).contains(&x)), "node {n}: {v:?}");
        assert!(v.iter().any(|&x| x != v[0]), "node {n}: {v:?}");
    }
}

#[test]
fn no_aggregation_at_or_below_the_threshold_rate() {
    // HT 20 MHz MCS 0 (6.5 Mb/s): with the ath9k-like threshold every PPDU carries one MPDU;
    // at MCS 1 (13 Mb/s) aggregation resumes.
    let mut agg = Vec::new();
    for mcs in [0u32, 1] {
        let mut s = base("ht", 20, 800);
        s["mac"]["aggregation_min_rate_bps"] = json!(6_500_000u64);
        s["stations"] = json!([station(mcs, 1)]);
        s["flows"] = json!([flow(0, "down", "saturated", 0, 1500, 2_000_000_000u64)]);
        let out = run(&s, 1);
        agg.push(out["stations"][0]["mean_ampdu_down"].as_f64().unwrap());
    }
    assert_eq!(agg[0], 1.0, "{agg:?}");
    assert!(agg[1] > 1.5, "{agg:?}");
}

#[test]
fn hops_on_separate_channels_do_not_share_airtime() {
    // Saturated UDP to the end of a 3-hop chain: on one channel every hop takes its turn
    // (≈ 1/3 of one hop's goodput); with channels 0/1/0 the first and last hop contend (≈ 1/2);
    // with 0/1/2 the hops run in parallel (relays have a radio per side), close to one hop.
    let one = {
        let mut s = chain(1, 7, 2, 3);
        s["flows"] = json!([flow(0, "down", "saturated", 0, 1500, 3_000_000_000u64)]);
        run(&s, 1)["flows"][0]["goodput_bps"].as_f64().unwrap()
    };
    let mut g = Vec::new();
    for chans in [[0u32, 0, 0], [0, 1, 0], [0, 1, 2]] {
        let mut s = chain(3, 7, 2, 3);
        for (i, c) in chans.iter().enumerate() {
            s["stations"][i]["hop_channel"] = json!(c);
        }
        s["flows"] = json!([flow(2, "down", "saturated", 0, 1500, 3_000_000_000u64)]);
        g.push(run(&s, 1)["flows"][0]["goodput_bps"].as_f64().unwrap() / one);
    }
    eprintln!("3-hop goodput / 1-hop: shared {:.2}, 0/1/0 {:.2}, 0/1/2 {:.2}", g[0], g[1], g[2]);
    assert!(g[0] > 0.25 && g[0] < 0.42, "{g:?}");
    assert!(g[1] > 0.4 && g[1] < 0.62, "{g:?}");
    assert!(g[2] > 0.85 && g[2] <= 1.01, "{g:?}");
}

#[test]
fn amsdu_over_lossy_relays_conserves_packets() {
    // A-MSDUs through a relay with lost MPDUs, lost Block Acks (retransmission copies) and
    // drops at the retry limit: every packet is delivered once, dropped once, or still in the
    // system at the end.
    let mut s = chain(2, 7, 2, 3);
    s["sim"]["warmup_ns"] = json!(0);
    s["mac"]["max_amsdu_bytes"] = json!(7935);
    s["mac"]["retry_limit"] = json!(2);
    for i in 0..2 {
        s["stations"][i]["error_model"] = json!("fixed");
        s["stations"][i]["per"] = json!(0.3);
    }
    let stop = 3_000_000_000u64;
    s["flows"] = json!([flow(1, "down", "cbr", 80_000_000, 1500, stop), flow(1, "up", "cbr", 20_000_000, 300, stop),
                        flow(0, "down", "cbr", 30_000_000, 700, stop)]);
    let out = run(&s, 2);
    let mut balance = 0i64;
    for f in out["flows"].as_array().unwrap() {
        let g = |k: &str| f[k].as_i64().unwrap();
        assert!(g("delivered_packets") > 1000 && g("dropped_retry") > 0, "{f}");
        balance += g("offered_packets") - g("delivered_packets") - g("dropped_queue") - g("dropped_retry") - g("dropped_wired");
    }
    assert_eq!(balance, out["stats"]["packets_in_system"].as_i64().unwrap(), "{}", out["stats"]);
    // A-MSDU was in use: more packets than MPDUs delivered.
    let delivered: i64 = out["flows"].as_array().unwrap().iter().map(|f| f["delivered_packets"].as_i64().unwrap()).sum();
    assert!((out["stats"]["mpdus_delivered"].as_i64().unwrap()) < delivered, "{}", out["stats"]);
}
