//! Queue disciplines on the wired bottleneck and in stations' own transmit queues.
//! Figures are printed (`cargo test -p lasthop-sim --release --test wired_qdisc -- --nocapture`).

mod common;
use common::*;
use serde_json::{json, Value};

fn tcp_flow(sta: u32, dir: &str, cc: &str, stop_ns: u64) -> Value {
    json!({"station": sta, "direction": dir, "pattern": "tcp", "rate_bps": 0, "packet_size": 1500,
           "start_ns": 0, "stop_ns": stop_ns, "cc": cc, "bytes": 0, "pacing": null,
           "hystart": true, "extra_acked": true})
}

/// A mixed scenario without the new keys: a CUBIC download through a 50 Mb/s wired bottleneck
/// with a short queue (wired drops), a CUBIC upload from a station with a short queue (station
/// queue drops), a lossy wired link and a ping.
fn golden_spec() -> Value {
    let secs = 3;
    let stop = secs * 1_000_000_000u64;
    let mut s = base("vht", 80, 800);
    s["sim"]["duration_ns"] = json!(stop);
    s["sim"]["warmup_ns"] = json!(500_000_000u64);
    s["wired"] = json!({"rate_bps": 50_000_000u64, "delay_ns": 10_000_000u64, "queue_limit": 30, "loss": 0.001});
    let mut up = station(2, 1);
    up["queue_limit"] = json!(40);
    s["stations"] = json!([station(9, 2), up]);
    s["flows"] = json!([
        tcp_flow(0, "down", "cubic", stop),
        tcp_flow(1, "up", "cubic", stop),
        {"station": 0, "direction": "down", "pattern": "ping", "rate_bps": 84 * 8 * 20,
         "packet_size": 84, "start_ns": 0, "stop_ns": stop},
        flow(1, "up", "cbr", 60_000_000, 1000, stop),
    ]);
    s
}

fn fingerprint(d: &Value) -> Vec<String> {
    let mut v = vec![format!("events {}", d["stats"]["events"])];
    for f in d["flows"].as_array().unwrap() {
        v.push(format!(
            "{} {} {} {} {} {} {} {}",
            f["goodput_bps"], f["delivered_packets"], f["dropped_queue"], f["dropped_retry"], f["dropped_wired"],
            f["delay_ns"]["mean"], f["delay_ns"]["p50"], f["delay_ns"]["p99"]
        ));
    }
    v
}

/// Recorded with the code before wired/station disciplines existed (specs without the new keys
/// must give exactly the same results), and again when MPDUs began to be delivered at the end
/// of their own subframe and TCP small queues followed Linux's rate-based limit, and when the
/// RTO followed Linux's estimator (SRTT + max(deviation, 200 ms)) and restarted on resending
/// the first unacknowledged segment, and when an EDCAF that becomes ready on a busy medium with
/// a zero counter drew a backoff (§10.23.2.2 a)), and again when a station's transport answer to
/// a delivered MPDU counted as arriving at its MAC at the delivery, during the PPDU, and when
/// TCP CUBIC's slow start followed Linux's HyStart. The event count alone moved when endpoint
/// timers began to be re-armed in place (no stale timer events run). Recorded again when
/// loss-based controllers grew cwnd only while it limited the sender (Linux's
/// `tcp_is_cwnd_limited`) and the server's TCP small queues counted its own NIC, not the wired
/// link's queue: the download, behind random loss on a 50 Mb/s link, now carries what its
/// losses allow (10.6 Mb/s) instead of a window inflated while TCP small queues held it.
#[test]
fn fifo_results_unchanged() {
    let expect = [
        "events 53126",
        "10620211.2 2292 0 0 6 14202230.855148342 13336576 27197440",
        "1315942.4 286 2 0 24 16624461.433566434 16416768 18546688",
        "9945.6 37 0 0 13 28639843.243243244 27590656 38918960",
        "48400000.0 15125 31 0 3596 16443424.91861157 16220160 19464192",
    ];
    assert_eq!(fingerprint(&run(&golden_spec(), 7)), expect);
}

fn goodput(d: &Value, f: usize) -> f64 {
    d["flows"][f]["goodput_bps"].as_f64().unwrap()
}

/// Mean of the per-bin mean TCP RTT samples from bin `from_bin` on (ms).
fn mean_rtt_ms(d: &Value, f: usize, from_bin: usize) -> f64 {
    let sum: f64 = d["timeseries"]["flow_rtt_ns"][f].as_array().unwrap()[from_bin..]
        .iter().map(|v| v.as_f64().unwrap()).filter(|&v| v > 0.0).sum();
    let n = d["timeseries"]["flow_rtt_ns"][f].as_array().unwrap()[from_bin..]
        .iter().filter(|v| v.as_f64().unwrap() > 0.0).count();
    sum / n.max(1) as f64 / 1e6
}

const SECS: u64 = 15;

/// A CUBIC upload through a 50 Mb/s wired bottleneck with 20 ms one-way delay (base RTT
/// 40 ms plus well under 1 ms of WiFi: VHT MCS 9 NSS 2 at 80 MHz carries ~600 Mb/s), and a
/// ping alongside. The upload's bottleneck queue is a router's (the AP's egress).
fn wired_bottleneck(qdisc: &str) -> Value {
    let stop = SECS * 1_000_000_000;
    let mut s = base("vht", 80, 800);
    s["sim"]["duration_ns"] = json!(stop);
    s["sim"]["warmup_ns"] = json!(5_000_000_000u64);
    s["wired"] = json!({"rate_bps": 50_000_000u64, "delay_ns": 20_000_000u64, "queue_limit": 1000, "loss": 0.0, "qdisc": qdisc});
    s["stations"] = json!([station(9, 2)]);
    s["flows"] = json!([
        tcp_flow(0, "up", "cubic", stop),
        {"station": 0, "direction": "down", "pattern": "ping", "rate_bps": 84 * 8 * 10,
         "packet_size": 84, "start_ns": 0, "stop_ns": stop},
    ]);
    s
}

#[test]
fn aqm_on_the_wired_bottleneck() {
    let mut r = Vec::new();
    for q in ["fifo", "codel", "pie", "fq_codel"] {
        let d = run(&wired_bottleneck(q), 1);
        let (g, rtt) = (goodput(&d, 0) / 1e6, mean_rtt_ms(&d, 0, 50));
        let ping = d["flows"][1]["delay_ns"]["mean"].as_f64().unwrap() / 1e6;
        let f = &d["flows"][0];
        eprintln!("wired {q:8}: CUBIC {g:5.1} Mb/s, mean TCP RTT {rtt:6.1} ms, ping mean/p99 {ping:6.1}/{:6.1} ms, \
                   wired drops {}, retransmits {}",
                  d["flows"][1]["delay_ns"]["p99"].as_f64().unwrap() / 1e6, f["dropped_wired"], f["tcp"]["retransmits"]);
        r.push((g, rtt, ping));
    }
    let (fifo, codel, pie, fq) = (r[0], r[1], r[2], r[3]);
    // FIFO-1000 at 50 Mb/s: up to 240 ms of queue, held by CUBIC near full.
    assert!(fifo.1 > 100.0, "{r:?}");
    // CoDel keeps the standing queue near its 5 ms target; FQ-CoDel too, and the ping gets
    // its own queue.
    assert!(codel.1 < 40.0 + 15.0, "{r:?}");
    assert!(fq.1 < 40.0 + 15.0, "{r:?}");
    assert!(fq.2 < 40.0 + 5.0, "{r:?}");
    // PIE (15 ms reference) in between.
    assert!(pie.1 > codel.1 && pie.1 < fifo.1, "{r:?}");
    // At little cost in goodput.
    for x in [codel, pie, fq] {
        assert!(x.0 >= 0.9 * fifo.0, "{r:?}");
    }
}

/// A CUBIC download through the same 50 Mb/s bottleneck, FIFO. By default the wired link's
/// queue is a router's on the path and the server sends through a 10 Gb/s NIC: TCP small queues
/// do not reach the bottleneck, cwnd fills the queue (as the upload does above). With
/// `wired.server_nic` at the wired rate the bottleneck is the server's own interface: TCP small
/// queues (pacing rate >> 10, Linux's `tcp_small_queue_check`) keep the server's backlog to
/// about a millisecond of its rate, cwnd stops growing once it no longer limits the sender
/// (`tcp_is_cwnd_limited`), and the link stays full.
#[test]
fn tcp_small_queues_count_the_servers_own_nic() {
    let down = |nic: Option<u64>| {
        let mut s = wired_bottleneck("fifo");
        s["flows"][0] = tcp_flow(0, "down", "cubic", SECS * 1_000_000_000);
        if let Some(bps) = nic {
            s["wired"]["server_nic_bps"] = json!(bps);
        }
        let d = run(&s, 1);
        let f = &d["flows"][0];
        let (g, rtt) = (goodput(&d, 0) / 1e6, mean_rtt_ms(&d, 0, 50));
        eprintln!("server NIC {nic:?}: CUBIC down {g:5.1} Mb/s, mean TCP RTT {rtt:6.1} ms, cwnd {} kB, wired drops {}",
                  f["tcp"]["cwnd_bytes"].as_u64().unwrap() / 1000, f["dropped_wired"]);
        (g, rtt)
    };
    let (path, own) = (down(None), down(Some(50_000_000)));
    assert!(path.1 > 100.0, "the path's queue fills: {path:?}");
    assert!(own.1 < 40.0 + 10.0, "the server's own queue stays short: {own:?}");
    assert!(own.0 > 0.9 * 50.0 * 1448.0 / 1500.0 && path.0 > 0.9 * 50.0 * 1448.0 / 1500.0, "{path:?} {own:?}");
}

/// An upload from a slow station (VHT MCS 0, ~30 Mb/s at 80 MHz) over a fast wired link: the
/// station's own queue is the bottleneck. A ping from the station shares that queue.
fn uplink(qdisc: &str) -> Value {
    let stop = SECS * 1_000_000_000;
    let mut s = base("vht", 80, 800);
    s["sim"]["duration_ns"] = json!(stop);
    s["sim"]["warmup_ns"] = json!(5_000_000_000u64);
    s["wired"]["delay_ns"] = json!(10_000_000u64);
    let mut st = station(0, 1);
    st["qdisc"] = json!(qdisc);
    s["stations"] = json!([st]);
    s["flows"] = json!([
        tcp_flow(0, "up", "cubic", stop),
        {"station": 0, "direction": "up", "pattern": "ping", "rate_bps": 84 * 8 * 10,
         "packet_size": 84, "start_ns": 0, "stop_ns": stop},
    ]);
    s
}

#[test]
fn aqm_in_the_station_queue() {
    let (mut r, mut min_rtt) = (Vec::new(), 0.0);
    for q in ["fifo", "codel", "pie", "fq_codel"] {
        let d = run(&uplink(q), 1);
        let (g, rtt) = (goodput(&d, 0) / 1e6, mean_rtt_ms(&d, 0, 50));
        let f = &d["flows"][0];
        let ping = d["flows"][1]["delay_ns"]["p50"].as_f64().unwrap() / 1e6;
        eprintln!("station {q:8}: CUBIC up {g:5.1} Mb/s, mean TCP RTT {rtt:6.1} ms, ping p50 {ping:6.1} ms, \
                   queue drops {}, retransmits {}", f["dropped_queue"], f["tcp"]["retransmits"]);
        min_rtt = f["tcp"]["min_rtt_ns"].as_f64().unwrap() / 1e6;
        r.push((g, rtt, ping));
    }
    let (fifo, codel, fq) = (r[0], r[1], r[3]);
    // A lone CUBIC upload does not fill the station's FIFO (1000 packets, half a second at this
    // rate): TCP small queues bounds its backlog to pacing rate >> 7 (mac80211's pacing shift),
    // ~10 ms of its rate (1.2·cwnd/SRTT; cwnd grows only while it limits the sender), counted
    // until the Block Ack, so an aggregate in the air adds to it.
    assert!(fifo.1 < min_rtt + 30.0, "{r:?}, min RTT {min_rtt} ms");
    assert!(codel.1 < fifo.1, "{r:?}");
    assert!(codel.0 >= 0.85 * fifo.0, "{r:?}");
    // The ping shares the station's queue: behind the FIFO it waits for that backlog; CoDel
    // trims it, and FQ-CoDel also gives the ping its own queue.
    assert!(codel.2 < fifo.2 && fq.2 < 0.8 * fifo.2, "{r:?}");
    assert!(fq.2 <= codel.2 + 1.0, "{r:?}");
}

/// Same spec and seed → identical results, with disciplines on the wired link and stations.
#[test]
fn deterministic_with_disciplines() {
    for (wq, sq) in [("codel", "pie"), ("fq_codel", "fq_codel"), ("pie", "codel")] {
        let mut s = golden_spec();
        s["wired"]["qdisc"] = json!(wq);
        s["stations"][1]["qdisc"] = json!(sq);
        let a = lasthop_sim::run_json(&s.to_string(), 5, &mut |_| {}).unwrap();
        let b = lasthop_sim::run_json(&s.to_string(), 5, &mut |_| {}).unwrap();
        assert_eq!(a, b);
        let d: Value = serde_json::from_str(&a).unwrap();
        // Conservation of the run: nothing vanished or duplicated.
        assert!(d["flows"][0]["delivered_packets"].as_u64().unwrap() > 0);
    }
}
