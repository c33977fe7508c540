//! The split proxy at the AP and the Virtual Wires loop (`world/hosts/vwire.rs`): a split connection
//! delivers every byte once and in order with its wired side on the wired RTT; the relay buffer
//! is bounded (backpressure reaches the server); with vwire a step-utility flow gets its rate
//! while a greedy flow takes the rest; determinism; a split upload delivers every byte and its
//! window clamp bounds what waits in the station's own queue.

mod common;
use common::*;
use serde_json::{json, Value};

/// An 802.11n 2.4 GHz cell, 20 MHz, SGI; `stations` fixed-rate stations (MCS, NSS).
fn cell(secs: u64, stations: &[(u32, u32)]) -> Value {
    let mut s = base("ht", 20, 400);
    s["phy"]["band"] = json!("2.4GHz");
    s["sim"]["duration_ns"] = json!(secs * 1_000_000_000);
    s["wired"]["delay_ns"] = json!(10_000_000u64);
    s["wired"]["rate_bps"] = json!(1_000_000_000u64);
    s["stations"] = Value::Array(stations.iter().map(|&(m, n)| station(m, n)).collect());
    s
}

fn tcp(sta: u32, cc: &str, stop_ns: u64) -> Value {
    let mut f = flow(sta, "down", "tcp", 0, 1500, stop_ns);
    f["cc"] = json!(cc);
    f
}

fn split(sta: u32, stop_ns: u64) -> Value {
    let mut f = tcp(sta, "cubic", stop_ns);
    f["split"] = json!(true);
    f
}

#[test]
fn split_delivers_every_byte_once_in_order_and_the_wired_side_sees_the_wired_rtt() {
    let mut s = cell(6, &[(7, 2)]);
    let mut f = split(0, 6_000_000_000);
    f["bytes"] = json!(8_000_000u64);
    s["flows"] = json!([f]);
    let d = run(&s, 1);
    let fl = &d["flows"][0];
    let t = &fl["tcp"];
    assert_eq!(t["app_bytes_delivered"], json!(8_000_000u64), "{t}");
    assert!(t["completion_ns"].is_u64(), "{t}");
    let sp = &fl["split"];
    assert_eq!(sp["wired"]["cc"], json!("bbr"));
    assert_eq!(sp["wifi"]["cc"], json!("cubic"));
    assert_eq!(sp["wired"]["bytes_acked"], json!(8_000_000u64), "{sp}");
    assert_eq!(sp["wifi"]["bytes_acked"], json!(8_000_000u64), "{sp}");
    // The server's connection ends at the AP: its minimum RTT is the wired round trip
    // (2 × 10 ms), not the WiFi hop's on top.
    let wired_min = sp["wired"]["min_rtt_ns"].as_u64().unwrap() as f64 / 1e6;
    assert!((20.0..20.5).contains(&wired_min), "wired min RTT {wired_min} ms");
    let wifi_min = sp["wifi"]["min_rtt_ns"].as_u64().unwrap() as f64 / 1e6;
    assert!(wifi_min < 5.0, "WiFi-side min RTT {wifi_min} ms");
    assert_eq!(sp["relay_backlog_end_bytes"], json!(0));
}

#[test]
fn relay_buffer_is_bounded_and_backpressure_reaches_the_server() {
    // A slow WiFi link (MCS 0, 6.5 Mb/s... 7.2 with SGI) behind a fast wire: the relay fills,
    // and the server's window closes on it.
    let mut s = cell(8, &[(0, 1)]);
    s["vwire"] = json!({"enabled": false, "period_ns": 2_000_000_000u64, "efficiency": 0.65,
                        "relay_buffer_bytes": 262_144u64, "sndbuf_bytes": 65_536u64, "tsq_bytes": 131_072u64,
                        "sample_ns": 10_000_000u64, "work_conserving": true});
    s["flows"] = json!([split(0, 8_000_000_000)]);
    let d = run(&s, 1);
    let sp = &d["flows"][0]["split"];
    let max = sp["relay_backlog_max_bytes"].as_u64().unwrap();
    assert!(max <= 262_144 + 3 * 1448, "relay backlog {max}");
    assert!(max >= 200_000, "relay buffer never filled: {max}");
    assert!(sp["window_updates"].as_u64().unwrap() > 0, "{sp}");
    // The server is held to the WiFi rate: it has not sent far beyond what the station got.
    let wired = sp["wired"]["bytes_acked"].as_u64().unwrap();
    let wifi = sp["wifi"]["bytes_acked"].as_u64().unwrap();
    assert!(wired <= wifi + 262_144 + 3 * 1448, "wired {wired} wifi {wifi}");
    let g = d["flows"][0]["goodput_bps"].as_f64().unwrap();
    assert!(g > 3e6, "goodput {g}");
    assert_eq!(d["flows"][0]["dropped_wired"], json!(0));
}

fn vwire_on(s: &mut Value) {
    s["vwire"] = json!({"enabled": true, "period_ns": 2_000_000_000u64, "efficiency": 0.65,
                        "relay_buffer_bytes": 4_194_304u64, "sndbuf_bytes": 1_048_576u64, "tsq_bytes": 131_072u64,
                        "sample_ns": 10_000_000u64, "work_conserving": true});
}

/// Two stations: a far one (MCS 2) receiving a step-utility flow paced at `video_bps`, a near
/// one (MCS 7) receiving a greedy flow.
fn step_vs_greedy(vwire: bool, video_bps: u64) -> Value {
    let mut s = cell(20, &[(2, 2), (7, 2)]);
    s["sim"]["warmup_ns"] = json!(6_000_000_000u64);
    s["sim"]["bin_ns"] = json!(1_000_000_000u64);
    let mut v = split(0, 20_000_000_000);
    v["app_rate_bps"] = json!(video_bps);
    v["app_class"] = json!("video_4k");
    v["utility"] = json!({"step": [[video_bps as f64 * 1.07, 10.0]]});
    let mut g = split(1, 20_000_000_000);
    g["app_class"] = json!("bulk");
    g["utility"] = json!({"log": 0.1});
    if !vwire {
        for f in [&mut v, &mut g] {
            f.as_object_mut().unwrap().remove("app_class");
            f.as_object_mut().unwrap().remove("utility");
            f["split"] = json!(false);
        }
    }
    s["flows"] = json!([v, g]);
    if vwire {
        vwire_on(&mut s);
    }
    run(&s, 1)
}

#[test]
fn vwire_gives_a_step_flow_its_rate_and_the_greedy_flow_the_rest() {
    let video = 24_000_000u64;
    let off = step_vs_greedy(false, video);
    let on = step_vs_greedy(true, video);
    let g = |d: &Value, f: usize| d["flows"][f]["goodput_bps"].as_f64().unwrap();
    eprintln!("without: video {:.1} greedy {:.1}; with: video {:.1} greedy {:.1}",
              g(&off, 0) / 1e6, g(&off, 1) / 1e6, g(&on, 0) / 1e6, g(&on, 1) / 1e6);
    eprintln!("{}", on["vwire"]);
    eprintln!("{}", on["flows"][0]["split"]["periods"]);
    eprintln!("{}", on["flows"][1]["split"]["periods"]);
    assert!(g(&off, 0) < 0.9 * video as f64, "without vwire the far flow should fall short");
    assert!(g(&on, 0) > 0.97 * video as f64, "with vwire the far flow gets its rate: {}", g(&on, 0));
    assert!(g(&on, 1) > 10e6, "the greedy flow takes the rest: {}", g(&on, 1));
    let periods = &on["flows"][0]["split"]["periods"];
    let alloc = periods["alloc_rate_bps"].as_array().unwrap();
    assert!(alloc.iter().skip(2).all(|a| a.as_f64().unwrap() >= video as f64), "{alloc:?}");
}

#[test]
fn same_spec_and_seed_give_identical_results() {
    let mut s = cell(3, &[(4, 2), (7, 2)]);
    vwire_on(&mut s);
    s["vwire"]["period_ns"] = json!(500_000_000u64);
    let mut v = split(0, 3_000_000_000);
    v["app_rate_bps"] = json!(10_000_000u64);
    s["flows"] = json!([v, split(1, 3_000_000_000)]);
    let a = lasthop_sim::run_json(&s.to_string(), 7, &mut |_| {}).unwrap();
    let b = lasthop_sim::run_json(&s.to_string(), 7, &mut |_| {}).unwrap();
    assert_eq!(a, b);
    let d: Value = serde_json::from_str(&a).unwrap();
    // The classifier ran on both flows.
    let per = &d["flows"][1]["split"]["periods"]["predicted"];
    assert!(per.as_array().unwrap().iter().any(|p| p.is_string()), "{per}");
}

/// The split proxy's WiFi-side sender counts its bytes in the AP's queues and MAC against TCP
/// small queues (mac80211 keeps the skb until its transmit status): with a send buffer that
/// does not hold it first, the AP's 1000-packet FIFO for the station holds a few milliseconds
/// of it, and a ping beside the download crosses it quickly. With `ap.tcp_small_queues = false`
/// (an AP host whose wlan0 is a TUN device, as the emulator's) nothing below the socket holds
/// the sender, CUBIC fills the FIFO until it drops, and the ping waits behind it, at the same
/// goodput.
#[test]
fn an_ap_without_tcp_small_queues_lets_the_proxy_fill_its_queue() {
    let secs = 8;
    let mut s = cell(secs, &[(7, 2)]);
    // A socket send buffer far above the FIFO's 1.5 MB, so that only TCP small queues can
    // hold the sender below it.
    s["vwire"] = json!({"enabled": false, "period_ns": 2_000_000_000u64, "efficiency": 0.75,
                        "relay_buffer_bytes": 8_388_608u64, "sndbuf_bytes": 4_194_304u64, "tsq_bytes": 1_048_576u64,
                        "sample_ns": 10_000_000u64, "work_conserving": true});
    // One echo request every 20 ms (the normalized rate: 84 bytes per interval).
    let ping = flow(0, "down", "ping", 84 * 8 * 50, 84, secs * 1_000_000_000);
    s["flows"] = json!([split(0, secs * 1_000_000_000), ping]);
    let goodput = |d: &Value, f: usize| d["flows"][f]["goodput_bps"].as_f64().unwrap();
    let held = run(&s, 1);
    s["ap"]["tcp_small_queues"] = json!(false);
    let free = run(&s, 1);
    // The ping's wait beyond the wire's 20 ms round trip.
    let rtt = |d: &Value| d["flows"][1]["delay_ns"]["p50"].as_f64().unwrap() / 1e6 - 20.0;
    let drops = |d: &Value| d["flows"][0]["dropped_queue"].as_u64().unwrap();
    println!("ping p50 beyond the wire {:.1} ms, {} queue drops, {:.1} Mb/s with the proxy's TCP small queues; {:.1} ms, {} drops, {:.1} Mb/s without",
             rtt(&held), drops(&held), goodput(&held, 0) / 1e6, rtt(&free), drops(&free), goodput(&free, 0) / 1e6);
    assert!(rtt(&held) < 30.0 && drops(&held) == 0, "{} ms, {} drops", rtt(&held), drops(&held));
    assert!(rtt(&free) > 3.0 * rtt(&held) && drops(&free) > 0, "{} ms, {} drops", rtt(&free), drops(&free));
    assert!((goodput(&free, 0) / goodput(&held, 0) - 1.0).abs() < 0.1);
}

/// A split upload (`world/hosts/vwire/upload.rs`): every byte reaches the server once and in
/// order, through the AP's two connections. Its station holds its packets in a FIFO of 1000
/// (the station's own queue, which TCP small queues under mac80211 keep to about 4 ms of the
/// pacing rate): with the proxy's window clamp of 32 KiB at most that is in flight, so the
/// WiFi leg's one-way delay (the flow's, for a split upload) stays near 32 KiB's airtime, and a
/// ping from the station waits behind no more; with the relay buffer's 4 MiB as its window the
/// upload's backlog waits in the station instead. Same spec and seed, same bytes.
#[test]
fn a_split_upload_delivers_every_byte_and_its_window_clamp_bounds_the_stations_queue() {
    let secs = 6;
    let mut s = cell(secs, &[(7, 2)]);
    s["stations"][0]["qdisc"] = json!("fifo");
    let mut up = flow(0, "up", "tcp", 0, 1500, secs * 1_000_000_000);
    up["cc"] = json!("cubic");
    up["split"] = json!(true);
    up["bytes"] = json!(20_000_000u64);
    let ping = flow(0, "up", "ping", 84 * 8 * 50, 84, secs * 1_000_000_000);
    s["flows"] = json!([up, ping]);
    let vw = |clamp: u64| json!({"enabled": false, "period_ns": 2_000_000_000u64, "efficiency": 0.75,
                                  "relay_buffer_bytes": 4_194_304u64, "sndbuf_bytes": 262_144u64, "tsq_bytes": 1_048_576u64,
                                  "sample_ns": 10_000_000u64, "work_conserving": true, "window_clamp_bytes": clamp});
    s["vwire"] = vw(0);
    let open = run(&s, 1);
    s["vwire"] = vw(32_768);
    let a = lasthop_sim::run_json(&s.to_string(), 1, &mut |_| {}).unwrap();
    assert_eq!(a, lasthop_sim::run_json(&s.to_string(), 1, &mut |_| {}).unwrap());
    let clamped: Value = serde_json::from_str(&a).unwrap();
    for d in [&open, &clamped] {
        let t = &d["flows"][0]["tcp"];
        assert_eq!(t["app_bytes_delivered"], json!(20_000_000u64), "{t}");
    }
    let p99 = |d: &Value, f: usize| d["flows"][f]["delay_ns"]["p99"].as_f64().unwrap() / 1e6;
    println!("split upload: WiFi leg p99 {:.1} ms, ping RTT p99 {:.1} ms with the relay buffer's window; {:.1} / {:.1} ms with a 32 KiB clamp",
             p99(&open, 0), p99(&open, 1), p99(&clamped, 0), p99(&clamped, 1));
    // 32 KiB at MCS 7 x2, 20 MHz, short GI (144.4 Mb/s) is 1.8 ms of airtime.
    assert!(p99(&clamped, 0) < 10.0, "{} ms", p99(&clamped, 0));
    assert!(p99(&open, 0) > 3.0 * p99(&clamped, 0), "{} vs {} ms", p99(&open, 0), p99(&clamped, 0));
    assert!(p99(&open, 1) > 2.0 * p99(&clamped, 1), "{} vs {} ms", p99(&open, 1), p99(&clamped, 1));
}
