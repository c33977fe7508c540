//! Packet capture: recording never changes results, records are consistent with the pcap file.

mod common;

use common::{base, flow, station};
use lasthop_sim::capture::{CaptureRequest, Node, PpduKind, DEFAULT_LIMIT};
use lasthop_wifi::phy::RuSize;
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
            let pcap = lasthop_sim::pcap::write(&cap);
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

fn tcp_flow(sta: u32, dir: &str, stop_ns: u64) -> Value {
    serde_json::json!({"station": sta, "direction": dir, "pattern": "tcp", "rate_bps": 0, "packet_size": 1500,
           "start_ns": 0, "stop_ns": stop_ns, "cc": "cubic", "bytes": 0, "pacing": null,
           "hystart": true, "extra_acked": true})
}

/// A TCP cell: station 0 downloads (CUBIC) and uploads, station 1 runs request/response
/// (requests on the reverse connection); plus a UDP flow.
fn tcp_spec() -> Value {
    let mut s = base("ht", 40, 400);
    s["sim"]["duration_ns"] = 300_000_000u64.into();
    s["mac"]["beacon_interval_ns"] = 102_400_000u64.into();
    // MAC retries hide the PER from TCP; wired losses make SACK blocks.
    s["wired"]["loss"] = 0.01.into();
    let mut lossy = station(7, 1);
    lossy["error_model"] = "fixed".into();
    lossy["per"] = 0.05.into();
    s["stations"] = vec![lossy, station(5, 1)].into();
    let mut rr = tcp_flow(1, "down", 300_000_000);
    rr["app"] = "request_response".into();
    rr["request_bytes"] = 3000.into();
    rr["response_bytes"] = 50_000.into();
    rr["think_time_ns"] = 1_000_000u64.into();
    s["flows"] = vec![
        tcp_flow(0, "down", 300_000_000),
        tcp_flow(0, "up", 300_000_000),
        flow(0, "up", "cbr", 2_000_000, 500, 300_000_000),
        rr,
    ]
    .into();
    s
}

/// The IP packets of the data MPDUs of a pcap file (QoS Data: 26-octet header + LLC/SNAP).
fn ip_packets(pcap: &[u8]) -> Vec<Vec<u8>> {
    let mut off = 24;
    let mut out = Vec::new();
    while off < pcap.len() {
        let len = u32::from_le_bytes(pcap[off + 8..off + 12].try_into().unwrap()) as usize;
        let rec = &pcap[off + 16..off + 16 + len];
        off += 16 + len;
        let rt_len = u16::from_le_bytes([rec[2], rec[3]]) as usize;
        let f = &rec[rt_len..];
        if f[0] == 0x88 {
            out.push(f[34..f.len() - 4].to_vec());
        }
    }
    out
}

#[test]
fn tcp_segments_in_the_capture() {
    use lasthop_algo::tcp::{ack_ip_len, data_ip_len};
    use lasthop_sim::capture::TcpRec;
    use lasthop_sim::pcap::ip_checksum;
    let s = tcp_spec();
    let plain = lasthop_sim::run_json(&s.to_string(), 3, &mut |_| {}).unwrap();
    for node in [Node::Station(0), Node::Station(1), Node::Ap] {
        let (data, cap) = capture(&s, node, DEFAULT_LIMIT);
        assert_eq!(plain, data, "capture at {node:?} changed the results");
        let pkts = ip_packets(&lasthop_sim::pcap::write(&cap));
        assert_eq!(pkts.len(), cap.mpdus.len());
        let (mut n_data, mut n_sack, mut n_rev) = (0, 0, 0);
        for (ip, m) in pkts.iter().zip(&cap.mpdus) {
            assert_eq!(ip.len() as u32, m.ip_len);
            assert_eq!(ip_checksum(&ip[..20]), 0);
            match m.tcp {
                TcpRec::None => {
                    assert_eq!(ip[9], 17);
                    continue;
                }
                TcpRec::Data { len, rev, .. } => {
                    assert_eq!(m.ip_len, data_ip_len(len));
                    n_data += 1;
                    n_rev += rev as u32;
                }
                TcpRec::Ack { n_sack: n, .. } => {
                    assert_eq!(m.ip_len, ack_ip_len(n));
                    n_sack += (n > 0) as u32;
                }
            }
            assert_eq!(ip[9], 6);
            let mut v = ip[12..20].to_vec();
            v.extend_from_slice(&[0, 6]);
            v.extend_from_slice(&((ip.len() - 20) as u16).to_be_bytes());
            v.extend_from_slice(&ip[20..]);
            assert_eq!(ip_checksum(&v), 0, "TCP checksum");
        }
        assert!(n_data > 100 && n_sack > 0, "{node:?}: {n_data} data segments, {n_sack} ACKs with SACK");
        if node != Node::Station(0) {
            assert!(n_rev > 0, "{node:?}: request segments");
        }
    }
}

/// The users of a DL MU PPDU, and the stations answering a Basic Trigger, are recorded on RUs
/// that do not overlap, each marked with its RU size and its number within that size.
#[test]
fn ofdma_users_are_captured_on_separate_rus() {
    let mut s = base("he", 80, 800);
    s["sim"]["duration_ns"] = 300_000_000u64.into();
    s["mac"]["max_ampdu_mpdus"] = 256.into();
    s["mac"]["ofdma"] = serde_json::json!({"dl": true, "ul": true, "scheduler": "txq", "max_users": 4, "ack": "mu-bar",
        "mu_edca_aifsn": 8, "mu_edca_cw_min": 511, "mu_edca_cw_max": 1023, "mu_edca_timer_ns": 0});
    s["stations"] = (0..3).map(|_| station(7, 1)).collect::<Vec<_>>().into();
    s["flows"] = (0..3)
        .flat_map(|i| [flow(i, "down", "cbr", 60_000_000, 1500, 300_000_000), flow(i, "up", "cbr", 60_000_000, 1500, 300_000_000)])
        .collect::<Vec<_>>()
        .into();
    let (_, cap) = capture(&s, Node::Ap, DEFAULT_LIMIT);
    let js: Value = serde_json::from_str(&cap.to_json()).unwrap();
    // Users by PPDU start and direction: (tones, index, tb).
    let mut by_ppdu: std::collections::BTreeMap<(u64, bool), Vec<(u64, u64)>> = Default::default();
    for p in js["ppdus"].as_array().unwrap() {
        let ru = &p["phy"]["ru"];
        if p["kind"] != "data" || ru.is_null() {
            continue;
        }
        let tb = ru[2].as_bool().unwrap();
        assert_eq!(tb, p["tx"] != "ap", "HE TB PPDUs are the stations' answers");
        by_ppdu.entry((p["t_ns"].as_u64().unwrap(), tb)).or_default().push((ru[0].as_u64().unwrap(), ru[1].as_u64().unwrap()));
    }
    let (mut dl, mut ul) = (0, 0);
    for ((_, tb), users) in &by_ppdu {
        if users.len() < 2 {
            continue;
        }
        if *tb { ul += 1 } else { dl += 1 }
        let spans: Vec<(u32, u32)> = users
            .iter()
            .map(|&(tones, k)| RuSize::from_tones(tones as u16).unwrap().span(k as u32, 80))
            .collect();
        for (i, a) in spans.iter().enumerate() {
            for b in &spans[i + 1..] {
                assert!(a.1 <= b.0 || b.1 <= a.0, "overlapping RUs {users:?}");
            }
        }
    }
    assert!(dl > 5 && ul > 5, "{dl} DL MU PPDUs, {ul} triggered uplinks with several users");
}
