//! ECN end to end: the codepoint a TCP sender sets crosses the wired link, the AP's queues and
//! the air; the AP's discipline marks instead of dropping; the receiver echoes; the sender
//! reduces. Figures are printed (`cargo test -p lasthop-sim --release --test ecn -- --nocapture`).

mod common;
use common::*;
use serde_json::{json, Value};

fn tcp_flow(sta: u32, cc: &str, ecn: &str) -> Value {
    json!({"station": sta, "direction": "down", "pattern": "tcp", "rate_bps": 0, "packet_size": 1500,
           "start_ns": 0, "stop_ns": 8_000_000_000u64, "cc": cc, "ecn": ecn, "bytes": 0, "pacing": null,
           "hystart": true, "extra_acked": true})
}

/// Two CUBIC downloads to two stations over mac80211's FQ-CoDel (ECN on, as mac80211 sets it):
/// the classic ECN flow is marked, never loses a packet to CoDel, and reduces once per marked
/// round trip; the other flow is dropped instead.
fn cell(qdisc: &str, ecn0: &str) -> Value {
    let mut s = base("vht", 80, 800);
    s["sim"]["duration_ns"] = json!(8_000_000_000u64);
    s["sim"]["warmup_ns"] = json!(2_000_000_000u64);
    s["wired"]["delay_ns"] = json!(10_000_000u64);
    s["ap"]["qdisc"] = json!(qdisc);
    s["ap"]["queue_limit"] = json!(8192);
    s["stations"] = json!([station(9, 2), station(9, 2)]);
    s["flows"] = json!([tcp_flow(0, "cubic", ecn0), tcp_flow(1, "cubic", "off")]);
    s
}

/// The same cell with a Prague download (L4S: ECT(1), Accurate ECN) to station 0 and the AP's
/// `driver`.
fn prague_cell(driver: &str) -> Value {
    let mut s = cell("fq_codel", "off");
    s["flows"][0]["cc"] = json!("prague");
    s["flows"][0]["ecn"] = json!("l4s");
    s["ap"]["driver"] = json!(driver);
    s
}

#[test]
fn classic_ecn_is_marked_not_dropped() {
    let d = run(&cell("fq_codel", "classic"), 1);
    let e = &d["flows"][0]["tcp"]["ecn"];
    println!("ecn flow: {e}, retransmits {} vs {}", d["flows"][0]["tcp"]["retransmits"], d["flows"][1]["tcp"]["retransmits"]);
    assert_eq!(e["mode"], "classic");
    let marked = e["ce_marked"].as_u64().unwrap();
    assert!(marked > 0, "CoDel marked the ECN flow");
    // Every mark reached the receiver (nothing is lost on this channel after the AP).
    assert_eq!(e["ce_received"].as_u64().unwrap(), marked);
    assert!(e["reductions"].as_u64().unwrap() >= 1 && e["reductions"].as_u64().unwrap() <= marked);
    assert_eq!(d["flows"][0]["tcp"]["retransmits"], 0, "CoDel marks the ECN flow instead of dropping it");
    assert!(d["flows"][1]["tcp"]["retransmits"].as_u64().unwrap() > 0, "and drops the other one");
    assert!(d["flows"][1]["tcp"].get("ecn").is_none());
}

/// With ECN off at the AP (`ap.ecn = false`) the same flow is dropped like the other.
#[test]
fn ap_ecn_off_drops() {
    let mut s = cell("fq_codel", "classic");
    s["ap"]["ecn"] = json!(false);
    let d = run(&s, 1);
    assert_eq!(d["flows"][0]["tcp"]["ecn"]["ce_marked"], 0);
    assert!(d["flows"][0]["tcp"]["retransmits"].as_u64().unwrap() > 0);
}

/// The marking point at the air sees the wait below mac80211 (the firmware's queue, AQL): an
/// ECN-capable L4S packet is marked there although the qdisc never sees a standing queue. (A
/// classic flow's ECT(0) packets are left alone by the L4S threshold.)
#[test]
fn air_threshold_marks_only_l4s() {
    let mut s = cell("fq_codel", "classic");
    s["ap"]["driver"] = json!("firmware");
    s["ap"]["air_ce_threshold_ns"] = json!(1_000_000u64);
    s["ap"]["ecn"] = json!(false);
    let d = run(&s, 1);
    assert_eq!(d["flows"][0]["tcp"]["ecn"]["ce_marked"], 0, "ECT(0) is not L4S");
}

#[test]
fn bad_ecn_is_one_problem_naming_the_key() {
    for (cc, ecn, want) in [("cubic", "l4s", "react"), ("bbr", "classic", "does not react")] {
        let mut s = cell("fq_codel", "off");
        s["flows"][0]["cc"] = json!(cc);
        s["flows"][0]["ecn"] = json!(ecn);
        let p = lasthop_sim::validate_json(&s.to_string());
        assert_eq!(p.len(), 1, "{p:?}");
        assert!(p[0].0 == "flows[0].ecn" && p[0].2.contains(want), "{p:?}");
    }
    // A mode that is not one does not read as a spec at all.
    let mut s = cell("fq_codel", "off");
    s["flows"][0]["ecn"] = json!("on");
    let p = lasthop_sim::validate_json(&s.to_string());
    assert!(p.len() == 1 && p[0].0 == "spec" && p[0].2.contains("\"on\""), "{p:?}");
}

/// An L4S Prague flow beside a classic CUBIC flow, each to its own station, over mac80211's
/// FQ-CoDel with a 5 ms CE threshold for L4S packets (fq_codel's `ce_threshold` with the ECT(1)
/// selector): Prague's packets wait a few milliseconds where CUBIC's wait for CoDel's 20 ms,
/// and Prague keeps a fair part of the rate; every mark comes back through the AccECN counters.
/// (With a 1 ms threshold Prague starves in this cell: a station's frames wait longer than
/// that for their turn on the medium whatever the window, so every packet is marked.)
#[test]
fn prague_keeps_its_queue_short_under_a_ce_threshold() {
    let mut s = prague_cell("pull");
    s["ap"]["ce_threshold_ns"] = json!(5_000_000u64);
    s["ap"]["ce_threshold_l4s_only"] = json!(true);
    let d = run(&s, 1);
    let e = &d["flows"][0]["tcp"]["ecn"];
    let p99 = |f: usize| d["flows"][f]["delay_ns"]["p99"].as_f64().unwrap() / 1e6;
    println!("prague {e}; one-way p99 prague {:.1} ms, cubic {:.1} ms; goodput {:.0} / {:.0} Mb/s",
             p99(0), p99(1), d["flows"][0]["goodput_bps"].as_f64().unwrap() / 1e6, d["flows"][1]["goodput_bps"].as_f64().unwrap() / 1e6);
    let (marked, got) = (e["ce_marked"].as_u64().unwrap(), e["ce_received"].as_u64().unwrap());
    // Nothing is lost after the AP; the marks of the packets still queued or on the air when
    // the run ends (at most the 5 ms threshold's worth and an aggregate) are not received yet.
    assert!(marked > 100 && got <= marked && marked - got <= 200, "{e}");
    // The counters' bytes: every CE segment carried 1448 payload bytes; those of the last window
    // may be unacknowledged when the run ends.
    let bytes = e["ce_bytes_acked"].as_u64().unwrap();
    let window = d["flows"][0]["tcp"]["cwnd_bytes"].as_u64().unwrap();
    assert!(bytes <= got * 1448 && bytes + window >= got * 1448, "{bytes} vs {got}, window {window}");
    assert_eq!(d["flows"][0]["tcp"]["retransmits"], 0);
    // 10 ms of wired delay each way: Prague's one-way delay stays within ~10 ms of it.
    assert!(p99(0) < 20.0 && p99(0) < p99(1) - 10.0, "{} vs {}", p99(0), p99(1));
    let g = |f: usize| d["flows"][f]["goodput_bps"].as_f64().unwrap();
    assert!(g(0) > 0.5 * g(1), "{} vs {}", g(0), g(1));
}

/// DualPI2's coupled AQM inside mac80211's flow queue (`ap.fq_aqm = "dualpi2"`): behind a
/// firmware queue, Prague's packets are marked (its 1 ms step, the coupled p_CL) and its
/// queue stays far shorter than the CUBIC flow's beside it, which PI2 holds without a drop of
/// Prague's; with CoDel per flow (no CE threshold) Prague's queue is CoDel's classic one.
#[test]
fn dualpi2_in_the_flow_queue_marks_prague_at_its_step() {
    let mut s = prague_cell("firmware");
    let codel = run(&s, 1);
    s["ap"]["fq_aqm"] = json!("dualpi2");
    let d = run(&s, 1);
    let e = &d["flows"][0]["tcp"]["ecn"];
    let p99 = |d: &Value, f: usize| d["flows"][f]["delay_ns"]["p99"].as_f64().unwrap() / 1e6;
    let g = |d: &Value, f: usize| d["flows"][f]["goodput_bps"].as_f64().unwrap() / 1e6;
    println!("fq dualpi2: prague {e}; p99 {:.1} / {:.1} ms, {:.0} / {:.0} Mb/s; codel per flow: p99 {:.1} / {:.1} ms",
             p99(&d, 0), p99(&d, 1), g(&d, 0), g(&d, 1), p99(&codel, 0), p99(&codel, 1));
    assert!(e["ce_marked"].as_u64().unwrap() > 100, "{e}");
    assert_eq!(d["flows"][0]["tcp"]["retransmits"], 0);
    assert!(p99(&d, 0) < 0.6 * p99(&d, 1) && p99(&d, 0) < 0.5 * p99(&codel, 0), "{} {} {}", p99(&d, 0), p99(&d, 1), p99(&codel, 0));
    assert!(g(&d, 0) > 0.2 * g(&d, 1), "{} vs {}", g(&d, 0), g(&d, 1));
}

/// Marking at the air sees the firmware's queue and the wait for the medium, which no qdisc
/// sees: with ECN off in the qdisc and no CE threshold there, L4S packets are still marked.
#[test]
fn air_threshold_marks_l4s_packets_below_the_qdisc() {
    let mut s = prague_cell("firmware");
    s["ap"]["ecn"] = json!(false);
    s["ap"]["air_ce_threshold_ns"] = json!(5_000_000u64);
    let d = run(&s, 1);
    let e = &d["flows"][0]["tcp"]["ecn"];
    println!("air marking, 5 ms: {e}");
    assert!(e["ce_marked"].as_u64().unwrap() > 0 && e["reductions"].as_u64().unwrap() > 0, "{e}");
}

/// QUIC with classic ECN (RFC 9000 §13.4): the AP's CE threshold marks the server's datagrams,
/// the client's ACK frames count them, validation holds, and the server's congestion events
/// follow the marks.
#[test]
fn quic_ecn_counts_reach_the_server() {
    let mut s = cell("fq_codel", "off");
    s["ap"]["ce_threshold_ns"] = json!(5_000_000u64);
    s["flows"] = json!([{"station": 0, "direction": "down", "pattern": "quic", "rate_bps": 0, "packet_size": 1378,
                         "start_ns": 0, "stop_ns": 8_000_000_000u64, "ecn": "classic"}]);
    let d = run(&s, 1);
    let e = &d["flows"][0]["quic"]["ecn"];
    println!("quic ecn: {e}");
    assert_eq!(e["validation_failed"], false, "{e}");
    let (marked, reported) = (e["ce_marked"].as_u64().unwrap(), e["ce_reported"].as_u64().unwrap());
    assert!(marked > 0 && reported <= marked && reported + 10 >= marked, "{e}");
    assert!(e["congestion_events"].as_u64().unwrap() > 0, "{e}");
}

/// L4S over QUIC: a Prague QUIC download (ECT(1)) beside a classic QUIC download (Chromium's
/// CUBIC, no ECN) to two stations, mac80211's FQ-CoDel marking L4S packets at a 5 ms sojourn
/// (`ce_threshold` with its ECT(1) selector). The Prague flow is marked, validates ECN, reacts
/// to the marks and keeps its delay above the path's far below the classic flow's; and it fares as TCP
/// Prague does in the same cell beside TCP CUBIC (at a 1 ms threshold both starve: the other
/// station's aggregates alone keep the L4S packets' sojourn above it).
#[test]
fn prague_over_quic_in_the_cell_fares_as_tcp_prague() {
    let mut s = cell("fq_codel", "off");
    s["ap"]["ce_threshold_ns"] = json!(5_000_000u64);
    s["ap"]["ce_threshold_l4s_only"] = json!(true);
    let quic = |sta: u32, cc: &str, ecn: &str| {
        json!({"station": sta, "direction": "down", "pattern": "quic", "rate_bps": 0, "packet_size": 1378,
               "start_ns": 0, "stop_ns": 8_000_000_000u64, "cc": cc, "ecn": ecn})
    };
    s["flows"] = json!([quic(0, "prague", "l4s"), quic(1, "cubic", "off")]);
    let d = run(&s, 1);
    s["flows"] = json!([tcp_flow(0, "prague", "l4s"), tcp_flow(1, "cubic", "off")]);
    let t = run(&s, 1);
    let p50 = |d: &Value, f: usize| d["flows"][f]["delay_ns"]["p50"].as_f64().unwrap() / 1e6;
    let mbps = |d: &Value, f: usize| d["flows"][f]["goodput_bps"].as_f64().unwrap() / 1e6;
    let e = &d["flows"][0]["quic"]["ecn"];
    println!("prague/quic: {e}; one-way delay p50 {:.2} ms at {:.0} Mb/s beside cubic/quic {:.2} ms at {:.0} Mb/s; \
              prague/tcp {:.2} ms at {:.0} Mb/s", p50(&d, 0), mbps(&d, 0), p50(&d, 1), mbps(&d, 1), p50(&t, 0), mbps(&t, 0));
    assert_eq!(e["validation_failed"], false, "{e}");
    assert!(e["ce_marked"].as_u64().unwrap() > 0 && e["congestion_events"].as_u64().unwrap() > 0, "{e}");
    // Above the wired link's 10 ms one way: the queueing and the air.
    let (lq, cq) = (p50(&d, 0) - 10.0, p50(&d, 1) - 10.0);
    assert!(lq < 0.3 * cq, "prague {lq} ms, cubic {cq} ms above the wired delay");
    assert!((p50(&d, 0) - p50(&t, 0)).abs() < 1.0, "quic {} ms, tcp {} ms", p50(&d, 0), p50(&t, 0));
    assert!((mbps(&d, 0) / mbps(&t, 0) - 1.0).abs() < 0.25, "quic {} Mb/s, tcp {} Mb/s", mbps(&d, 0), mbps(&t, 0));
}
