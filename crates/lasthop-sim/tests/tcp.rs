//! TCP over the cell: the behaviours a transport model must show, end to end through the
//! wired link, the AP queue and the contended WiFi channel. Figures are printed
//! (`cargo test -p lasthop-sim --release --test tcp -- --nocapture`).

mod common;
use common::*;
use serde_json::{json, Value};

fn tcp_flow(sta: u32, dir: &str, cc: &str, stop_ns: u64) -> Value {
    json!({"station": sta, "direction": dir, "pattern": "tcp", "rate_bps": 0, "packet_size": 1500,
           "start_ns": 0, "stop_ns": stop_ns, "cc": cc, "bytes": 0, "pacing": null,
           "hystart": true, "extra_acked": true})
}

fn vht_cell(secs: u64) -> Value {
    let mut s = base("vht", 80, 800);
    s["sim"]["duration_ns"] = json!(secs * 1_000_000_000);
    s["sim"]["warmup_ns"] = json!(2_000_000_000u64);
    s["mac"]["beacon_interval_ns"] = json!(102_400_000u64);
    s["wired"]["delay_ns"] = json!(5_000_000u64); // 10 ms base RTT
    s["stations"] = json!([station(9, 2)]);
    s
}

fn goodput(d: &Value, f: usize) -> f64 {
    d["flows"][f]["goodput_bps"].as_f64().unwrap()
}

fn mean_rtt_ms(d: &Value, f: usize, from_bin: usize) -> f64 {
    let r: Vec<f64> = d["timeseries"]["flow_rtt_ns"][f].as_array().unwrap()[from_bin..]
        .iter().map(|v| v.as_f64().unwrap()).filter(|&v| v > 0.0).collect();
    r.iter().sum::<f64>() / r.len().max(1) as f64 / 1e6
}

/// One CUBIC download over VHT MCS 9 NSS 2 with a 1000-packet AP FIFO fills the link and the
/// buffer: the RTT grows to about base + buffer / rate.
///
/// Goodput: every 64-MPDU downlink A-MPDU (~1.22 ms of exchange) is followed by one uplink
/// exchange carrying the ACKs (AIFS + backoff + PPDU + Block Ack ≈ 0.23 ms), so TCP gets at most
/// ~64·1448·8 bits per ~1.45 ms ≈ 82 % of the UDP goodput (IP bytes) on this link; the
/// project's 90 % target (T1) is not reached (A-MSDU does not close the gap either, see
/// `amsdu_carries_more_per_ampdu`). The test holds
/// TCP to 78 % of UDP: within a few percent of that bound.
#[test]
fn cubic_fills_the_link_and_the_buffer() {
    let secs = 12;
    let mut udp = vht_cell(secs);
    udp["flows"] = json!([flow(0, "down", "saturated", 0, 1500, secs * 1_000_000_000)]);
    let u = run(&udp, 1);
    let mut t = vht_cell(secs);
    t["flows"] = json!([tcp_flow(0, "down", "cubic", secs * 1_000_000_000)]);
    let d = run(&t, 1);
    let (gu, gt) = (goodput(&u, 0), goodput(&d, 0));
    let rtt = mean_rtt_ms(&d, 0, 50);
    // buffer/rate: 1000 packets of 1500 B at the UDP goodput
    let expect_rtt = 10.0 + 1000.0 * 1500.0 * 8.0 / gu * 1e3;
    eprintln!("UDP {:.1} Mb/s, CUBIC {:.1} Mb/s ({:.1}%), mean RTT {rtt:.1} ms (base + buffer/rate = {expect_rtt:.1} ms), tcp: {}",
        gu / 1e6, gt / 1e6, gt / gu * 100.0, d["flows"][0]["tcp"]);
    // Where the airtime goes (after warm-up): downlink exchanges, the uplink ACK exchanges,
    // and the rest (AIFS + backoff before each exchange, collisions, beacons).
    let span = (secs * 1_000_000_000 - 2_000_000_000) as f64;
    let st = &d["stations"][0];
    let (dl, ul) = (st["airtime_rx_ns"].as_f64().unwrap() / span, st["airtime_tx_ns"].as_f64().unwrap() / span);
    let ust = &u["stations"][0];
    eprintln!("airtime: TCP downlink {:.1}%, uplink (ACKs) {:.1}%, other {:.1}% ({} collisions; mean A-MPDU down {:.1}, up {:.1}); \
               UDP downlink {:.1}%",
        dl * 100.0, ul * 100.0, (1.0 - dl - ul) * 100.0, d["channel"]["collisions"],
        st["mean_ampdu_down"].as_f64().unwrap(), st["mean_ampdu_up"].as_f64().unwrap(),
        ust["airtime_rx_ns"].as_f64().unwrap() / span * 100.0);
    assert!(gt >= 0.78 * gu, "CUBIC goodput {gt} < 78% of UDP {gu}");
    assert!(rtt > 0.5 * expect_rtt && rtt < 1.5 * expect_rtt, "RTT {rtt} ms vs {expect_rtt} ms");
}

/// TARGETS W6: a 6.5 Mb/s link (HT MCS 0, no aggregation) behind a 1000-packet FIFO: one bulk
/// CUBIC flow drives the RTT above 1.5 s (bufferbloat).
#[test]
fn bufferbloat_on_a_slow_link() {
    let secs = 30;
    let mut s = base("ht", 20, 800);
    s["mac"]["aggregation"] = json!(false);
    s["mac"]["max_ampdu_mpdus"] = json!(1);
    s["sim"]["duration_ns"] = json!(secs * 1_000_000_000);
    s["sim"]["bin_ns"] = json!(1_000_000_000u64);
    s["stations"] = json!([station(0, 1)]);
    s["flows"] = json!([tcp_flow(0, "down", "cubic", secs * 1_000_000_000)]);
    let d = run(&s, 1);
    let rtt = mean_rtt_ms(&d, 0, 15);
    eprintln!("6.5 Mb/s: goodput {:.2} Mb/s, mean RTT after 15 s {rtt:.0} ms", goodput(&d, 0) / 1e6);
    assert!(rtt > 1500.0, "RTT {rtt} ms");
}

/// TARGETS V4: BBR over a WiFi bottleneck with the aggregation estimator off gets about
/// B·r/R (B: link rate, r: min RTT, R: mean RTT); with it on, most of the gap closes.
#[test]
fn bbr_and_the_aggregation_estimator() {
    let secs = 12;
    let mut udp = vht_cell(secs);
    udp["wired"]["delay_ns"] = json!(1_000_000u64);
    udp["flows"] = json!([flow(0, "down", "saturated", 0, 1500, secs * 1_000_000_000)]);
    let b = goodput(&run(&udp, 1), 0);
    let mut res = Vec::new();
    for extra in [false, true] {
        let mut s = vht_cell(secs);
        s["wired"]["delay_ns"] = json!(1_000_000u64);
        let mut f = tcp_flow(0, "down", "bbr", secs * 1_000_000_000);
        f["extra_acked"] = json!(extra);
        s["flows"] = json!([f]);
        let d = run(&s, 1);
        let g = goodput(&d, 0);
        let r = d["flows"][0]["tcp"]["min_rtt_ns"].as_f64().unwrap() / 1e6;
        let big_r = mean_rtt_ms(&d, 0, 20);
        let model = b * r / big_r;
        eprintln!("BBR extra_acked={extra}: {:.1} Mb/s of B = {:.1} Mb/s; r = {r:.2} ms, R = {big_r:.2} ms, B·r/R = {:.1} Mb/s",
            g / 1e6, b / 1e6, model / 1e6);
        res.push(g);
    }
    assert!(res[1] > res[0], "the estimator should help: {res:?}");
    assert!(res[1] > 0.7 * b, "BBR with extra_acked far below the link rate: {res:?} vs {b}");
}

/// Wired loss 0 … 5 %: CUBIC's goodput collapses (loss-based), BBR keeps most of its rate
/// (model-based; it ignores random loss except for packet conservation in recovery — and needs
/// RACK to find lost retransmissions without waiting for the RTO).
#[test]
fn wired_loss_hurts_cubic_not_bbr() {
    let secs = 10;
    let mut g = Vec::new();
    for loss in [0.0, 0.01, 0.05] {
        let mut row = Vec::new();
        for cc in ["cubic", "bbr"] {
            let mut s = vht_cell(secs);
            s["wired"]["loss"] = json!(loss);
            s["flows"] = json!([tcp_flow(0, "down", cc, secs * 1_000_000_000)]);
            row.push(goodput(&run(&s, 2), 0));
        }
        eprintln!("wired loss {:.0}%: CUBIC {:.1} Mb/s, BBR {:.1} Mb/s", loss * 100.0, row[0] / 1e6, row[1] / 1e6);
        g.push(row);
    }
    assert!(g[1][0] < 0.2 * g[0][0] && g[2][0] < g[1][0], "CUBIC should fall with loss: {g:?}");
    for row in &g[1..] {
        assert!(row[1] > 0.7 * g[0][1], "BBR should keep most of its rate under loss: {g:?}");
    }
    for row in &g[1..] {
        assert!(row[1] > 5.0 * row[0], "BBR should hold far better than CUBIC: {g:?}");
    }
}

/// Four CUBIC downloads to four stations: fair shares, and the uplink ACKs cost airtime.
#[test]
fn four_flows_fairness_and_ack_airtime() {
    let secs = 12;
    let mut s = vht_cell(secs);
    s["stations"] = json!([station(9, 2), station(9, 2), station(9, 2), station(9, 2)]);
    s["flows"] = json!((0..4).map(|i| tcp_flow(i, "down", "cubic", secs * 1_000_000_000)).collect::<Vec<_>>());
    let d = run(&s, 3);
    let g: Vec<f64> = (0..4).map(|i| goodput(&d, i)).collect();
    let jfi = g.iter().sum::<f64>().powi(2) / (4.0 * g.iter().map(|x| x * x).sum::<f64>());
    let ack_air: Vec<f64> = (0..4).map(|i| d["stations"][i]["airtime_tx_ns"].as_f64().unwrap()).collect();
    eprintln!("goodputs {:?} Mb/s, JFI {jfi:.3}, uplink (ACK) airtime {:?} ms",
        g.iter().map(|x| (x / 1e5).round() / 10.0).collect::<Vec<_>>(), ack_air.iter().map(|x| (x / 1e5).round() / 10.0).collect::<Vec<_>>());
    assert!(jfi > 0.9, "JFI {jfi}");
    assert!(ack_air.iter().all(|&a| a > 0.0));
}

/// An uplink transfer of a fixed size completes, and its completion time is reported.
#[test]
fn finite_uplink_transfer_completes() {
    let mut s = vht_cell(6);
    s["sim"]["warmup_ns"] = json!(0);
    let mut f = tcp_flow(0, "up", "newreno", 6_000_000_000);
    f["bytes"] = json!(10_000_000u64);
    s["flows"] = json!([f]);
    let d = run(&s, 1);
    let t = &d["flows"][0]["tcp"];
    eprintln!("10 MB up: {}", t);
    assert_eq!(t["app_bytes_delivered"].as_u64().unwrap(), 10_000_000);
    assert!(t["completion_ns"].as_u64().is_some());
}

/// Request/response over TCP: the client asks, the server answers once the whole request is
/// in, the client thinks and asks again; every request is answered and response times are at
/// least the handshake-free minimum of one RTT plus the response's transfer time.
#[test]
fn request_response_completes_every_request() {
    let mut s = vht_cell(4);
    s["sim"]["warmup_ns"] = json!(0);
    let mut f = tcp_flow(0, "down", "cubic", 4_000_000_000);
    f["app"] = json!("request_response");
    f["request_bytes"] = json!(300);
    f["response_bytes"] = json!(200_000);
    f["think_time_ns"] = json!(50_000_000u64);
    f["requests"] = json!(20);
    s["flows"] = json!([f]);
    let d = run(&s, 1);
    let t = &d["flows"][0]["tcp"];
    eprintln!("request/response: {t}");
    assert_eq!(t["requests_completed"].as_u64().unwrap(), 20);
    let rt = &t["response_time_ns"];
    assert_eq!(rt["samples"].as_u64().unwrap(), 20);
    // base RTT 10 ms; 200 kB can't arrive in less than one RTT after the request is sent.
    assert!(rt["p50"].as_f64().unwrap() > 10e6, "{rt}");
    assert!(rt["max"].as_f64().unwrap() < 500e6, "{rt}");
    assert_eq!(t["app_bytes_delivered"].as_u64().unwrap(), 20 * 200_000);
}

/// The AP's per-station queue discipline: with CoDel the standing queue of a CUBIC download
/// (and with it the RTT) shrinks below the 1000-packet FIFO's, at a small goodput cost; PIE
/// holds it at most at its 15 ms target. mac80211's FQ-CoDel holds it near its own 20 ms CoDel target (close to what the FIFO
/// builds at this rate) but keeps a sparse flow to the same station out of the bulk queue.
#[test]
fn aqm_at_the_ap_cuts_the_standing_queue() {
    let secs = 12;
    let mut res = Vec::new();
    for q in ["fifo", "codel", "pie", "fq_codel"] {
        let mut s = vht_cell(secs);
        s["ap"]["qdisc"] = json!(q);
        s["flows"] = json!([
            tcp_flow(0, "down", "cubic", secs * 1_000_000_000),
            flow(0, "down", "cbr", 1_000_000, 200, secs * 1_000_000_000),
        ]);
        let d = run(&s, 1);
        let g = goodput(&d, 0);
        let rtt = mean_rtt_ms(&d, 0, 30);
        let sparse = d["flows"][1]["delay_ns"]["p95"].as_f64().unwrap() / 1e6;
        eprintln!("{q:9}: CUBIC {:.0} Mb/s, mean RTT {rtt:.1} ms; sparse flow p95 one-way delay {sparse:.2} ms", g / 1e6);
        res.push((g, rtt, sparse));
    }
    let (fifo, codel, pie, fq) = (res[0], res[1], res[2], res[3]);
    // Queueing above the 10 ms base RTT plus ~1.5 ms of WiFi exchange: CoDel holds it near its
    // 5 ms target, PIE near its 15 ms target, mac80211's FQ-CoDel near its 20 ms target (a
    // 1000-packet FIFO builds ~14 ms at 500 Mb/s).
    let q = |r: (f64, f64, f64)| r.1 - 11.5;
    assert!(q(codel) < 0.5 * q(fifo), "{res:?}");
    assert!(q(codel) < 10.0, "CoDel target 5 ms: {res:?}");
    assert!(q(fq) < 25.0, "mac80211 CoDel target 20 ms: {res:?}");
    // The FIFO's ~13 ms is below PIE's 15 ms target, so PIE may never drop here.
    assert!(q(pie) <= q(fifo) && q(pie) < 1.2 * 15.0, "PIE target 15 ms: {res:?}");
    for r in &res[1..] {
        assert!(r.0 > 0.8 * fifo.0, "AQM goodput cost too high: {res:?}");
    }
    assert!(fq.2 < 0.5 * fifo.2, "FQ-CoDel should isolate the sparse flow: {res:?}");
}

/// A-MSDU (`mac.max_amsdu_bytes`): several packets per MPDU raise what one A-MPDU carries
/// within the Block Ack window, for UDP and TCP alike; the TCP/UDP ratio against the
/// project's 90 % target (T1) is printed (it stays in the low 80s: TCP's uplink exchanges and the
/// 1000-packet queue, only about three A-MPDUs deep with A-MSDU, keep it there).
#[test]
fn amsdu_carries_more_per_ampdu() {
    let secs = 8;
    let mut res = Vec::new();
    for amsdu in [0u32, 7935] {
        let mut udp = vht_cell(secs);
        udp["mac"]["max_amsdu_bytes"] = json!(amsdu);
        udp["flows"] = json!([flow(0, "down", "saturated", 0, 1500, secs * 1_000_000_000)]);
        let u = run(&udp, 1);
        let mut t = vht_cell(secs);
        t["mac"]["max_amsdu_bytes"] = json!(amsdu);
        t["flows"] = json!([tcp_flow(0, "down", "cubic", secs * 1_000_000_000)]);
        let d = run(&t, 1);
        let (gu, gt) = (goodput(&u, 0), goodput(&d, 0));
        eprintln!("A-MSDU {amsdu}: UDP {:.1} Mb/s, CUBIC {:.1} Mb/s = {:.1}% of UDP (IP bytes), {:.1}% of UDP payload",
            gu / 1e6, gt / 1e6, gt / gu * 100.0, gt / (gu * 1472.0 / 1500.0) * 100.0);
        // Every packet arrives once: delivered = offered − in flight at the end.
        assert_eq!(u["flows"][0]["dropped_retry"], json!(0));
        res.push((gu, gt));
    }
    assert!(res[1].0 > 1.1 * res[0].0, "A-MSDU raises UDP goodput: {res:?}");
    assert!(res[1].1 > 1.05 * res[0].1, "and TCP goodput: {res:?}");
}

/// A CUBIC download behind the AP's 1000-packet FIFO at HT MCS 7 (~52 Mb/s, 20 ms base RTT;
/// experiments/emu-ht-bloat.toml): at each overflow the fast retransmission waits behind the
/// ~230 ms backlog. Linux gives it a full RTO from its sending (`tcp_xmit_retransmit_queue`)
/// and its RTO is SRTT + at least 200 ms (`tcp_set_rto`), so recovery ends without a timeout
/// and the window falls once, to β = 0.7 of its peak. RFC 6298's max(SRTT + 4·RTTVAR, 200 ms)
/// counted from the last cumulative ACK fired ~250 ms after it, before the retransmission's
/// ACK, and restarted from one segment at every overflow.
#[test]
fn a_fifo_overflow_is_repaired_without_a_timeout() {
    let secs = 30;
    let mut s = base("ht", 20, 800);
    s["sim"]["duration_ns"] = json!(secs * 1_000_000_000);
    s["sim"]["bin_ns"] = json!(100_000_000u64);
    s["wired"] = json!({"rate_bps": 1_000_000_000u64, "delay_ns": 10_000_000u64, "queue_limit": 1000, "loss": 0.0});
    s["stations"] = json!([station(7, 1)]);
    s["flows"] = json!([tcp_flow(0, "down", "cubic", secs * 1_000_000_000)]);
    let d = run(&s, 1);
    let cwnd: Vec<f64> = d["timeseries"]["flow_cwnd_bytes"][0].as_array().unwrap().iter()
        .map(|v| v.as_f64().unwrap()).filter(|&v| v > 0.0).collect();
    let (lo, hi) = cwnd[20..].iter().fold((f64::MAX, 0f64), |(lo, hi), &c| (lo.min(c), hi.max(c)));
    let rtt = mean_rtt_ms(&d, 0, 50);
    eprintln!("HT MCS 7, FIFO 1000: goodput {:.1} Mb/s, cwnd {:.0}..{:.0} segments, mean RTT after 5 s {rtt:.0} ms",
              goodput(&d, 0) / 1e6, lo / 1448.0, hi / 1448.0);
    // After slow start (~520 segments) the window only moves between the peak and 0.7 of it.
    assert!(lo > 0.4 * hi && lo > 400.0 * 1448.0, "the window collapsed ({lo} of {hi} bytes): an RTO");
    assert!(rtt > 150.0, "RTT {rtt} ms");
}

/// A station's upload counts its packets against TCP small queues until its MAC sends them
/// (mac80211): at VHT-MCS 1 its FIFO holds ~8 ms of the upload's pacing rate (`sk_pacing_shift`
/// 7; one-way 23 ms on the 5 ms wire). With `tcp_small_queues = false` (a TUN device orphans the
/// packets) nothing below the socket holds the sender, and CUBIC fills the station's
/// 1000-packet FIFO until it drops (196 ms), at the same goodput.
#[test]
fn a_station_without_tcp_small_queues_fills_its_queue() {
    let mut s = vht_cell(6);
    s["stations"] = json!([station(1, 1)]);
    s["stations"][0]["qdisc"] = json!("fifo");
    s["flows"] = json!([tcp_flow(0, "up", "cubic", 6_000_000_000)]);
    let held = run(&s, 1);
    s["stations"][0]["tcp_small_queues"] = json!(false);
    let free = run(&s, 1);
    let delay = |d: &Value| d["flows"][0]["delay_ns"]["mean"].as_f64().unwrap() / 1e6;
    let drops = |d: &Value| d["flows"][0]["dropped_queue"].as_u64().unwrap();
    println!("upload one-way delay {:.1} ms, {} queue drops, {:.0} Mb/s with TCP small queues; {:.1} ms, {} drops, {:.0} Mb/s without",
             delay(&held), drops(&held), goodput(&held, 0) / 1e6, delay(&free), drops(&free), goodput(&free, 0) / 1e6);
    assert!(delay(&held) < 30.0 && drops(&held) == 0, "{} ms, {} drops", delay(&held), drops(&held));
    assert!(delay(&free) > 3.0 * delay(&held) && drops(&free) > 0, "{} ms, {} drops", delay(&free), drops(&free));
    assert!((goodput(&free, 0) / goodput(&held, 0) - 1.0).abs() < 0.1);
}

/// A station whose driver hands its receptions to GRO (`gro = true`) ACKs a download once per
/// merged packet of a PPDU's segments: its uplink carries a few ACKs per A-MPDU received where
/// per-segment delivery carries one for every second segment, and the download keeps its rate.
#[test]
fn gro_at_the_station_thins_the_acks() {
    let mut s = vht_cell(4);
    s["flows"] = json!([tcp_flow(0, "down", "cubic", 4_000_000_000)]);
    let plain = run(&s, 1);
    s["stations"][0]["gro"] = json!(true);
    let gro = run(&s, 1);
    let acks_per_txop = |d: &Value| d["stations"][0]["mean_ampdu_up"].as_f64().unwrap();
    let (a, b) = (acks_per_txop(&plain), acks_per_txop(&gro));
    println!("uplink A-MPDU (ACKs): {a:.1} per segment delivery, {b:.1} with GRO; goodput {:.0} vs {:.0} Mb/s",
             goodput(&plain, 0) / 1e6, goodput(&gro, 0) / 1e6);
    // Without GRO one ACK per second segment piles up between the station's TXOPs; with it, one
    // per merged packet (a 64-MPDU A-MPDU makes two).
    assert!(a > 20.0 && b < 4.0, "{a} {b}");
    assert!((goodput(&gro, 0) / goodput(&plain, 0) - 1.0).abs() < 0.1);
}

/// A 1-station VHT cell with one CUBIC download for `secs`, run as it is and with `key = value`
/// on the download: (its result, the changed spec, the changed spec's result).
fn download_and_with(secs: u64, key: &str, value: Value) -> (Value, Value, Value) {
    let mut plain = vht_cell(secs);
    plain["flows"] = json!([tcp_flow(0, "down", "cubic", secs * 1_000_000_000)]);
    let mut changed = plain.clone();
    changed["flows"][0][key] = value;
    let (p, c) = (run(&plain, 1), run(&changed, 1));
    (p, changed, c)
}

/// A bulk writer behind Linux's socket send buffer (`send_buffer = "linux"`): the buffer grows
/// to tcp_wmem's 4 MiB ceiling, the writer keeps it between two thirds and all of it full, so
/// a byte's delay from its write is about that content over the rate — far above the delay of
/// the same download counted from each segment's departure, at the same goodput.
#[test]
fn a_socket_send_buffer_holds_bytes_for_its_content_over_the_rate() {
    let (p, _, b) = download_and_with(10, "send_buffer", json!("linux"));
    let (gp, gb) = (goodput(&p, 0), goodput(&b, 0));
    let delay_ms = |d: &Value| d["flows"][0]["delay_ns"]["mean"].as_f64().unwrap() / 1e6;
    let (dp, db) = (delay_ms(&p), delay_ms(&b));
    let sndbuf = b["flows"][0]["tcp"]["sndbuf_bytes"].as_u64().unwrap();
    assert!(p["flows"][0]["tcp"].get("sndbuf_bytes").is_none(), "no send buffer, no figure");
    // Payload in a full buffer: 4 MiB less the skbs' overhead (896 bytes per 63,712).
    let full = 4_194_304.0 * 63_712.0 / (63_712.0 + 896.0);
    let (lo, hi) = (full * 2.0 / 3.0 * 8.0 / gb * 1e3, full * 8.0 / gb * 1e3);
    eprintln!("no buffer: {:.0} Mb/s, {dp:.1} ms; Linux's buffer ({sndbuf} B): {:.0} Mb/s, {db:.1} ms \
               (the buffer's content over the rate: {lo:.1}–{hi:.1} ms, plus the path's)", gp / 1e6, gb / 1e6);
    assert_eq!(sndbuf, 4_194_304, "autotuned to tcp_wmem[2]");
    assert!(gb > 0.95 * gp && gb < 1.05 * gp, "same goodput: {gb} vs {gp}");
    assert!(db > lo && db < hi + dp, "delay {db} ms outside {lo}..{} ms", hi + dp);
}

/// A finite transfer behind the send buffer still completes, every byte written once.
#[test]
fn a_finite_transfer_through_the_send_buffer_completes() {
    let mut s = vht_cell(4);
    s["sim"]["warmup_ns"] = json!(0);
    let mut f = tcp_flow(0, "up", "cubic", 4_000_000_000);
    f["bytes"] = json!(20_000_000u64);
    f["send_buffer"] = json!("linux");
    s["flows"] = json!([f]);
    let d = run(&s, 1);
    let t = &d["flows"][0]["tcp"];
    assert_eq!(t["app_bytes_delivered"].as_u64().unwrap(), 20_000_000, "{t}");
    assert!(t["completion_ns"].as_u64().is_some(), "{t}");
}

/// TSO/GSO sending as Linux 3.17 did it (`tso = "linux-3.17"`) reaches the sender through the
/// spec: the download defers (its count is reported, and absent without TSO), carries about the
/// same goodput, and the run is deterministic.
#[test]
fn tso_sending_defers_and_keeps_the_goodput() {
    let (p, tso, t) = download_and_with(6, "tso", json!("linux-3.17"));
    assert!(p["flows"][0]["tcp"].get("tso_deferrals").is_none(), "no TSO, no figure");
    let deferrals = t["flows"][0]["tcp"]["tso_deferrals"].as_u64().unwrap();
    let (gp, gt) = (goodput(&p, 0), goodput(&t, 0));
    eprintln!("MSS-sized: {:.0} Mb/s; TSO: {:.0} Mb/s, {deferrals} deferrals", gp / 1e6, gt / 1e6);
    assert!(deferrals > 100, "the sender deferred: {deferrals}");
    assert!(gt > 0.9 * gp && gt < 1.1 * gp, "about the same goodput: {gt} vs {gp}");
    assert_eq!(t, run(&tso, 1), "deterministic");
}
