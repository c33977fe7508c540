//! The netlink codec against messages a real kernel sent: captures recorded with nlmon in a
//! VM running Debian's 6.12 kernel with mac80211_hwsim, hostapd and a station
//! (`reference/nl80211/`, produced by `tests/vm/hwsim_vm.py record-nl80211`). The values
//! checked are read from what `iw`/`tc`/`ip` printed for the same messages in the same session
//! (the `.txt` files), so a new recording needs no edit here.

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

/// What a tool printed for `$ COMMAND` in a capture's `.txt` (up to its `[exit N]`).
fn printed(file: &str, command: &str) -> String {
    let t = std::fs::read_to_string(dir().join(file)).unwrap();
    let head = format!("$ {command}\n");
    let i = t.find(&head).unwrap_or_else(|| panic!("{file}: no `{command}`")) + head.len();
    t[i..i + t[i..].find("[exit").unwrap()].to_string()
}

/// The number after `label` on its line ("rx bytes:\t878938" -> 878938; "-27 dBm" -> -27).
fn number(text: &str, label: &str) -> i64 {
    let line = text.lines().find(|l| l.trim_start().starts_with(label)).unwrap_or_else(|| panic!("no {label:?} in {text}"));
    let rest = line.trim_start()[label.len()..].trim();
    rest.split(|c: char| !(c.is_ascii_digit() || c == '-')).find(|x| !x.is_empty()).unwrap().parse().unwrap()
}

/// The rows of a tab-separated table under `heading` (lines of numbers, until the first
/// line that is not).
fn table(text: &str, heading: &str) -> Vec<Vec<u64>> {
    let mut rows = Vec::new();
    let mut lines = text.lines().skip_while(|l| l.trim() != heading).skip(2);
    for l in lines.by_ref() {
        let cells: Result<Vec<u64>, _> = l.split_whitespace().map(str::parse).collect();
        match cells {
            Ok(c) if !c.is_empty() => rows.push(c),
            _ => break,
        }
    }
    rows
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
    // The second dump is the one `iw ... station dump -v` printed with its TID tables.
    let iw = printed("station-dump.txt", "iw dev wlan0 station dump -v");
    let s = StationInfo::decode(st[1]).unwrap();
    assert!(iw.starts_with(&format!("Station {} (on wlan0)", n::mac_text(&s.mac))), "{iw}");
    assert_eq!(s.inactive_ms, Some(number(&iw, "inactive time:") as u32));
    assert_eq!(s.rx_bytes, Some(number(&iw, "rx bytes:") as u64));
    assert_eq!(s.tx_bytes, Some(number(&iw, "tx bytes:") as u64));
    assert_eq!(s.rx_packets, Some(number(&iw, "rx packets:") as u32));
    assert_eq!(s.tx_packets, Some(number(&iw, "tx packets:") as u32));
    assert_eq!(s.tx_retries, Some(number(&iw, "tx retries:") as u32));
    assert_eq!(s.tx_failed, Some(number(&iw, "tx failed:") as u32));
    assert_eq!(s.signal_dbm, Some(number(&iw, "signal:") as i8));
    assert_eq!(s.signal_avg_dbm, Some(number(&iw, "signal avg:") as i8));
    assert_eq!(s.connected_s, Some(number(&iw, "connected time:") as u32));
    assert_eq!(s.tx_duration_us, Some(number(&iw, "tx duration:") as u64));
    // iw prints expected throughput as value * 1000 / 1024 "Mbps" (station.c).
    let thr = s.expected_throughput_kbps.unwrap() as u64 * 1000 / 1024;
    assert!(iw.contains(&format!("expected throughput:\t{}.{}Mbps", thr / 1000, thr % 1000)), "{thr}");
    let tx = s.tx_bitrate.unwrap();
    let rx = s.rx_bitrate.unwrap();
    let RateKind::Vht { mcs, nss, .. } = tx.kind else { panic!("{tx:?}") };
    assert!(iw.contains(&format!("tx bitrate:\t{}.{} MBit/s VHT-MCS {mcs} VHT-NSS {nss}", tx.bitrate_100kbps / 10, tx.bitrate_100kbps % 10)), "{tx:?}");
    let RateKind::Vht { mcs, nss, .. } = rx.kind else { panic!("{rx:?}") };
    assert!(iw.contains(&format!("rx bitrate:\t{}.{} MBit/s VHT-MCS {mcs} VHT-NSS {nss}", rx.bitrate_100kbps / 10, rx.bitrate_100kbps % 10)), "{rx:?}");
    // The PHY tables agree with the kernel's bit rate.
    assert_eq!(tx.to_txvector().unwrap().data_rate_bps(), tx.bitrate_100kbps as u64 * 100_000);
    // TIDs: iw's MSDU table (TID, rx, tx, tx retries, tx failed) and TXQ table (TID,
    // backlog bytes, backlog packets, flows, drops, marks, overlimit, collisions, tx bytes,
    // tx packets).
    let msdu = table(&iw, "MSDU:");
    assert_eq!(msdu.len(), 17);
    for row in &msdu {
        let t = s.tids.iter().find(|t| t.tid as u64 == row[0]).unwrap();
        assert_eq!([t.rx_msdu, t.tx_msdu, t.tx_msdu_retries, t.tx_msdu_failed], [row[1], row[2], row[3], row[4]].map(Some), "TID {}", row[0]);
    }
    let txqs = table(&iw, "TXQs:");
    assert_eq!(txqs.len(), 16);
    for row in &txqs {
        let q = s.tids.iter().find(|t| t.tid as u64 == row[0]).unwrap().txq.unwrap();
        let got = [q.backlog_bytes, q.backlog_packets, q.flows, q.drops, q.ecn_marks, q.overlimit, q.collisions, q.tx_bytes, q.tx_packets].map(|v| v.map(u64::from));
        assert_eq!(got, [row[1], row[2], row[3], row[4], row[5], row[6], row[7], row[8], row[9]].map(Some), "TXQ of TID {}", row[0]);
    }
    assert!(txqs[0][9] > 100, "traffic went through TID 0's TXQ");
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
    let iw = printed("survey-dump.txt", "iw dev wlan0 survey dump");
    let blocks: Vec<&str> = iw.split("Survey data from wlan0").skip(1).collect();
    assert_eq!(blocks.len(), sv.len());
    for (b, s) in blocks.iter().zip(&sv) {
        assert_eq!(s.freq_mhz as i64, number(b, "frequency:"));
        assert_eq!(s.noise_dbm.map(i64::from), Some(number(b, "noise:")));
        assert_eq!(s.time_ms.map(|v| v as i64), Some(number(b, "channel active time:")));
        assert_eq!(s.busy_ms.map(|v| v as i64), Some(number(b, "channel busy time:")));
        assert_eq!(s.ifindex, 2);
        // hwsim reports no transmit time and marks no channel in use (README).
        assert_eq!((s.tx_ms, s.in_use), (None, false));
    }
    assert!(sv.iter().any(|s| s.freq_mhz == 5180 && s.time_ms > Some(0)));
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
    let iw = printed("txq-limit.txt", "iw phy phy0 get txq    # run after the capture stopped: not in txq-limit.pcap");
    assert_eq!(number(&iw, "Packet limit:"), 1234);
    assert_eq!(w.txq_limit, Some(1234));
    assert_eq!(w.txq_memory_limit.map(i64::from), Some(number(&iw, "Memory limit:")));
    assert_eq!(w.txq_quantum.map(i64::from), Some(number(&iw, "Quantum:")));
    assert!(w.has_ext_feature(n::EXT_FEATURE_TXQS));
    let st = w.txq_stats.unwrap();
    assert_eq!(st.backlog_packets, Some(0));
    // Before the change (wiphy.pcap) the limit was mac80211's default, 8192.
    let mut before = WiphyInfo::default();
    for p in replies(&messages("wiphy.pcap"), n::CMD_NEW_WIPHY) {
        before.merge(p).unwrap();
    }
    let iw = printed("wiphy.txt", "iw phy phy0 get txq    # run after the capture stopped: not in wiphy.pcap");
    assert_eq!(before.txq_limit.map(i64::from), Some(number(&iw, "Packet limit:")));
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
