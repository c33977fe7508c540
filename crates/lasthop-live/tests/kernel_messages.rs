//! The netlink codec against messages a real kernel sent: captures recorded with nlmon in a
//! VM running Debian's 6.12 kernel with mac80211_hwsim, hostapd and a station
//! (`reference/nl80211/`, produced by `tests/vm/hwsim_vm.py record-nl80211`). Each value
//! checked here is the one `iw`/`tc`/`ip` printed in the same session (the `.txt` files).

use lasthop_live::nl::nl80211::{self as n, InterfaceInfo, RateKind, Request, StationInfo, SurveyInfo, WiphyInfo};
use lasthop_live::nl::rtnl::{self, Link, Qdisc};
use lasthop_live::nl::{genl, parse_msgs, Msg, NLM_F_REQUEST};
use std::path::PathBuf;

const NL80211_FAMILY: u16 = 0x23;

fn dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../reference/nl80211")
}

/// Every netlink message in an nlmon pcap (LINKTYPE_NETLINK: a 16-octet cooked header, then
/// one or more messages per record), with whether it was a request.
fn messages(file: &str) -> Vec<Msg> {
    let b = std::fs::read(dir().join(file)).unwrap_or_else(|e| panic!("{file}: {e}"));
    assert_eq!(u32::from_le_bytes(b[0..4].try_into().unwrap()), 0xa1b2c3d4, "{file}: classic pcap, little-endian");
    assert_eq!(u32::from_le_bytes(b[20..24].try_into().unwrap()), 253, "{file}: LINKTYPE_NETLINK");
    let mut off = 24;
    let mut out = Vec::new();
    while off + 16 <= b.len() {
        let incl = u32::from_le_bytes(b[off + 8..off + 12].try_into().unwrap()) as usize;
        let rec = &b[off + 16..off + 16 + incl];
        out.extend(parse_msgs(&rec[16..]).unwrap_or_else(|e| panic!("{file}: {e}")));
        off += 16 + incl;
    }
    out
}

fn replies(msgs: &[Msg], cmd: u8) -> Vec<&Msg> {
    msgs.iter().filter(|m| m.ty == NL80211_FAMILY && m.flags & NLM_F_REQUEST == 0 && m.payload.first() == Some(&cmd)).collect()
}

#[test]
fn family_lookup() {
    let msgs = messages("interface.pcap");
    let req = msgs.iter().find(|m| m.ty == genl::GENL_ID_CTRL && m.flags & NLM_F_REQUEST != 0).unwrap();
    assert_eq!(genl::requested_family(req).unwrap(), "nl80211");
    let ans = msgs.iter().find(|m| m.ty == genl::GENL_ID_CTRL && m.flags & NLM_F_REQUEST == 0).unwrap();
    assert_eq!(genl::family_id(ans).unwrap(), NL80211_FAMILY);
    // Our request carries the same attributes as iw's (the family header's version aside).
    assert_eq!(genl::get_family("nl80211", 0).payload[4..], req.payload[4..]);
}

#[test]
fn station_dump_from_the_kernel() {
    let msgs = messages("station-dump.pcap");
    let st = replies(&msgs, n::CMD_NEW_STATION);
    assert_eq!(st.len(), 2, "two dumps of one station");
    // The second dump is the one `iw ... station dump -v` printed with its TID table.
    let s = StationInfo::decode(st[1]).unwrap();
    assert_eq!(n::mac_text(&s.mac), "02:00:00:00:01:00");
    assert_eq!(s.inactive_ms, Some(960));
    assert_eq!((s.rx_bytes, s.tx_bytes), (Some(878_938), Some(878_220)));
    assert_eq!((s.rx_packets, s.tx_packets), (Some(621), Some(611)));
    assert_eq!((s.tx_retries, s.tx_failed), (Some(0), Some(0)));
    assert_eq!((s.signal_dbm, s.signal_avg_dbm), (Some(-27), Some(-27)));
    // iw prints it as value * 1000 / 1024 "Mbps" (station.c): 9937 -> "9.704Mbps".
    assert_eq!(s.expected_throughput_kbps, Some(9_937));
    assert_eq!(9_937 * 1000 / 1024, 9_704);
    assert_eq!(s.connected_s, Some(8));
    assert_eq!(s.tx_duration_us, Some(0));
    let tx = s.tx_bitrate.unwrap();
    assert_eq!(tx.bitrate_100kbps, 130, "13.0 MBit/s");
    assert!(matches!(tx.kind, RateKind::Vht { mcs: 0, nss: 2, .. }), "{tx:?}");
    let rx = s.rx_bitrate.unwrap();
    assert!(matches!(rx.kind, RateKind::Vht { mcs: 1, nss: 1, .. }), "{rx:?}");
    // The PHY tables agree with the kernel's bit rate (VHT MCS 0 x2 at 20 MHz: 13 Mb/s).
    assert_eq!(tx.to_txvector().unwrap().data_rate_bps(), 13_000_000);
    // TIDs: 0 carried the traffic (rx 614, tx 607), 16 (non-QoS) tx 4.
    let t0 = s.tids.iter().find(|t| t.tid == 0).unwrap();
    assert_eq!((t0.rx_msdu, t0.tx_msdu, t0.tx_msdu_retries, t0.tx_msdu_failed), (Some(614), Some(607), Some(0), Some(0)));
    let q = t0.txq.unwrap();
    assert_eq!((q.backlog_bytes, q.backlog_packets, q.flows, q.drops), (Some(0), Some(0), Some(607), Some(0)));
    assert_eq!((q.tx_bytes, q.tx_packets), (Some(877_970), Some(607)));
    assert_eq!(s.tids.iter().find(|t| t.tid == 16).unwrap().tx_msdu, Some(4));
    assert_eq!(s.txq_total().unwrap().backlog_packets, Some(0));
    // What the codec writes for it decodes to the same station.
    let again = StationInfo::decode(&s.encode(st[1], NL80211_FAMILY)).unwrap();
    assert_eq!(again, s);
    // iw's request is a dump of ifindex 2; ours is byte for byte the same.
    let req = msgs.iter().find(|m| m.ty == NL80211_FAMILY && m.flags & NLM_F_REQUEST != 0).unwrap();
    assert_eq!(Request::parse(req).unwrap(), Request::GetStation { ifindex: Some(2), mac: None, dump: true });
    assert_eq!(n::dump_stations(NL80211_FAMILY, 2, 0).payload, req.payload);
}

#[test]
fn survey_dump_from_the_kernel() {
    let msgs = messages("survey-dump.pcap");
    let sv: Vec<SurveyInfo> = replies(&msgs, n::CMD_NEW_SURVEY_RESULTS).iter().map(|m| SurveyInfo::decode(m).unwrap()).collect();
    assert_eq!(sv.iter().map(|s| s.freq_mhz).collect::<Vec<_>>(), [2412, 5180, 5200]);
    assert!(sv.iter().all(|s| s.noise_dbm == Some(-92) && s.ifindex == 2));
    let c36 = sv[1];
    assert_eq!((c36.time_ms, c36.busy_ms), (Some(112), Some(14)));
    assert_eq!((sv[2].time_ms, sv[2].busy_ms), (Some(124), Some(15)));
    // hwsim reports no transmit time and marks no channel in use (documented in the README).
    assert_eq!(c36.tx_ms, None);
    let req = msgs.iter().find(|m| m.ty == NL80211_FAMILY && m.flags & NLM_F_REQUEST != 0).unwrap();
    assert_eq!(Request::parse(req).unwrap(), Request::GetSurvey { ifindex: Some(2) });
    assert_eq!(n::dump_survey(NL80211_FAMILY, 2, 0).payload, req.payload);
}

#[test]
fn wiphy_txq_limit_from_the_kernel() {
    let msgs = messages("txq-limit.pcap");
    // iw's SET_WIPHY: phy 0, TXQ limit 1234 — the same bytes as ours.
    let set = msgs.iter().find(|m| m.ty == NL80211_FAMILY && m.payload.first() == Some(&n::CMD_SET_WIPHY)).unwrap();
    assert_eq!(Request::parse(set).unwrap(), Request::SetWiphy { wiphy: Some(0), ifindex: None, txq_limit: Some(1234), others: vec![] });
    assert_eq!(n::set_txq_limit(NL80211_FAMILY, 0, 1234, 0).payload, set.payload);
    // The split dump after it: 190 parts of phy0, merged.
    let parts = replies(&msgs, n::CMD_NEW_WIPHY);
    assert_eq!(parts.len(), 190);
    let mut w = WiphyInfo::default();
    for p in &parts {
        assert_eq!(WiphyInfo::index_of(p).unwrap(), Some(0));
        w.merge(p).unwrap();
    }
    assert_eq!(w.name, "phy0");
    assert_eq!((w.txq_limit, w.txq_memory_limit, w.txq_quantum), (Some(1234), Some(16_777_216), Some(300)));
    assert!(w.has_ext_feature(n::EXT_FEATURE_TXQS));
    let st = w.txq_stats.unwrap();
    assert_eq!(st.backlog_packets, Some(0));
    // Before the change (wiphy.pcap) the limit was mac80211's default, 8192.
    let mut before = WiphyInfo::default();
    for p in replies(&messages("wiphy.pcap"), n::CMD_NEW_WIPHY) {
        before.merge(p).unwrap();
    }
    assert_eq!(before.txq_limit, Some(8192));
}

#[test]
fn interface_from_the_kernel() {
    let msgs = messages("interface.pcap");
    let i = InterfaceInfo::decode(replies(&msgs, n::CMD_NEW_INTERFACE)[0]).unwrap();
    assert_eq!((i.ifindex, i.ifname.as_str(), i.wiphy, i.iftype), (2, "wlan0", 0, n::IFTYPE_AP));
    assert_eq!((i.wdev, i.mac, i.freq_mhz), (Some(1), Some([2, 0, 0, 0, 0, 0]), Some(5180)));
    let req = msgs.iter().find(|m| m.ty == NL80211_FAMILY && m.flags & NLM_F_REQUEST != 0).unwrap();
    assert_eq!(Request::parse(req).unwrap(), Request::GetInterface { ifindex: Some(2), dump: false });
}

#[test]
fn rtnetlink_from_the_kernel() {
    let q: Vec<Qdisc> = messages("rtnetlink-qdisc.pcap")
        .iter()
        .filter(|m| m.ty == rtnl::RTM_NEWQDISC && m.flags & NLM_F_REQUEST == 0)
        .map(|m| Qdisc::decode(m).unwrap())
        .filter(|q| q.is_root())
        .collect();
    let fq = q.iter().find(|q| q.kind == "fq_codel").unwrap();
    assert_eq!((fq.limit, fq.qlen, fq.backlog_bytes, fq.drops), (Some(1500), Some(0), Some(0), Some(0)));
    assert_eq!(fq.handle, 0x8001_0000);
    let pf = q.iter().find(|q| q.kind == "pfifo").unwrap();
    assert_eq!((pf.limit, pf.handle), (Some(300), 0x8002_0000));
    // Our change request for that pfifo reads back as the same qdisc with the new limit.
    let mut ch = rtnl::change_limit(pf, 77, 0).unwrap();
    ch.flags = 0;
    assert_eq!(Qdisc::decode(&ch).unwrap().limit, Some(77));
    let links: Vec<Link> = messages("rtnetlink-link.pcap")
        .iter()
        .filter(|m| m.ty == rtnl::RTM_NEWLINK && m.flags & NLM_F_REQUEST == 0)
        .map(|m| Link::decode(m).unwrap())
        .collect();
    let w = links.iter().rev().find(|l| l.name == "wlan0").unwrap();
    assert_eq!((w.txqlen, w.mtu), (Some(777), Some(1500)));
    // ip's txqueuelen change carries IFLA_TXQLEN 777 like ours.
    let set = messages("rtnetlink-link.pcap").into_iter().find(|m| m.ty == rtnl::RTM_NEWLINK && m.flags & NLM_F_REQUEST != 0 && Link::decode(&Msg { flags: 0, ..m.clone() }).ok().and_then(|l| l.txqlen) == Some(777));
    assert!(set.is_some(), "ip link set ... txqueuelen 777 in the capture");
}
