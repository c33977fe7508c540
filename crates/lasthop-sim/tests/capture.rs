//! Packet capture: recording never changes results, records are consistent with the pcap file.

mod common;

use common::{base, flow, station};
use lasthop_sim::capture::{CaptureRequest, Node, PpduKind, DEFAULT_LIMIT};
use serde_json::Value;

fn spec(standard: &str, width: u32, gi: u32, aggregation: bool) -> Value {
    let mut s = base(standard, width, gi);
    s["sim"]["duration_ns"] = 300_000_000u64.into();
    s["mac"]["beacon_interval_ns"] = 102_400_000u64.into();
    if !aggregation {
        s["mac"]["aggregation"] = false.into();
        s["mac"]["max_ampdu_mpdus"] = 1.into();
    }
    let mut lossy = station(if standard == "ofdm" { 7 } else { 5 }, 1);
    lossy["error_model"] = "fixed".into();
    lossy["per"] = 0.1.into();
    s["stations"] = vec![lossy, station(if standard == "ofdm" { 4 } else { 3 }, 1)].into();
    s["flows"] = vec![
        flow(0, "down", "poisson", 30_000_000, 1500, 300_000_000),
        flow(0, "up", "cbr", 5_000_000, 1000, 300_000_000),
        flow(1, "down", "saturated", 0, 1200, 300_000_000),
        flow(1, "up", "cbr", 2_000_000, 24, 300_000_000),
    ]
    .into();
    s
}

fn capture(spec: &Value, node: Node, limit: usize) -> (String, lasthop_sim::Capture) {
    let (data, cap) = lasthop_sim::run_json_with_capture(
        &spec.to_string(),
        3,
        &mut |_| {},
        Some(CaptureRequest { node, limit }),
    )
    .expect("run");
    (data, cap.expect("capture"))
}

#[test]
fn capture_does_not_change_results() {
    for (std, w, gi, agg) in [("vht", 80, 800, true), ("ht", 40, 400, true), ("he", 80, 800, true), ("ofdm", 20, 800, false), ("vht", 20, 800, false)] {
        let s = spec(std, w, gi, agg);
        let plain = lasthop_sim::run_json(&s.to_string(), 3, &mut |_| {}).unwrap();
        for node in [Node::Ap, Node::Station(0), Node::Station(1)] {
            let (data, cap) = capture(&s, node, DEFAULT_LIMIT);
            assert_eq!(plain, data, "{std}: capture at {node:?} changed the results");
            assert!(!cap.truncated);
            let pcap = cap.to_pcap();
            assert_eq!(&pcap[..4], &0xa1b2_3c4du32.to_le_bytes());
            // Record count and time order.
            let mut off = 24;
            let mut n = 0;
            let mut last = 0u64;
            while off < pcap.len() {
                let sec = u32::from_le_bytes(pcap[off..off + 4].try_into().unwrap()) as u64;
                let ns = u32::from_le_bytes(pcap[off + 4..off + 8].try_into().unwrap()) as u64;
                let t = sec * 1_000_000_000 + ns;
                assert!(t >= last, "records out of time order");
                last = t;
                let len = u32::from_le_bytes(pcap[off + 8..off + 12].try_into().unwrap()) as usize;
                off += 16 + len;
                n += 1;
            }
            assert_eq!(off, pcap.len());
            assert_eq!(n, cap.records);
            assert!(cap.ppdus.iter().any(|p| matches!(p.kind, PpduKind::Beacon { .. })));
            assert!(cap.mpdus.iter().any(|m| m.retry), "{std}: no retransmissions recorded");
            if let Node::Station(i) = node {
                for p in cap.ppdus.iter().filter(|p| matches!(p.kind, PpduKind::Data)) {
                    assert!(p.tx == Node::Station(i) || p.rx == Node::Station(i));
                }
            }
            let aggregated = agg || std == "vht" || std == "he";
            let data_ppdus = cap.ppdus.iter().filter(|p| matches!(p.kind, PpduKind::Data));
            for (k, p) in data_ppdus.enumerate() {
                assert_eq!(p.ampdu_ref, aggregated.then_some(k as u32));
            }
        }
    }
}

#[test]
fn capture_limit_truncates() {
    let s = spec("vht", 80, 800, true);
    let (_, full) = capture(&s, Node::Ap, DEFAULT_LIMIT);
    let (_, cut) = capture(&s, Node::Ap, 100);
    assert!(cut.truncated && cut.records <= 100 && cut.records > 50);
    assert_eq!(cut.ppdus.len(), full.ppdus.iter().take(cut.ppdus.len()).count());
    assert_eq!(cut.mpdus[..], full.mpdus[..cut.mpdus.len()]);
}

#[test]
fn capture_node_is_checked() {
    let s = spec("vht", 80, 800, true).to_string();
    let req = Some(CaptureRequest { node: Node::Station(2), limit: 10 });
    let err = lasthop_sim::run_json_with_capture(&s, 1, &mut |_| {}, req).unwrap_err();
    assert!(err.contains("capture node = 2"), "{err}");
}
