use super::*;

fn req() -> Msg {
    Msg::new(0x1c, NLM_F_REQUEST | NLM_F_DUMP, 9, vec![])
}

#[test]
fn rates_map_to_and_from_txvectors() {
    for tx in [
        TxVector::new(Standard::Ht, 7, 3, 40, 400),
        TxVector::new(Standard::Vht, 9, 2, 80, 800),
        TxVector::new(Standard::He, 11, 4, 160, 800),
        TxVector::new(Standard::He, 5, 1, 20, 3200),
        TxVector::ofdm(7),
    ] {
        let r = RateInfo::from_txvector(&tx);
        let mut w = AttrWriter::new();
        r.encode(&mut w, 8);
        let buf = w.finish();
        let a = Attrs::new(&buf).next().unwrap().unwrap();
        let back = RateInfo::decode(&a).unwrap();
        assert_eq!(back, r);
        assert_eq!(back.to_txvector(), Some(tx), "{tx:?}");
    }
    // 802.11n MCS 15 at 40 MHz short GI is 300 Mb/s: 3000 units of 100 kbit/s.
    assert_eq!(RateInfo::from_txvector(&TxVector::new(Standard::Ht, 7, 2, 40, 400)).bitrate_100kbps, 3000);
}

#[test]
fn station_round_trip() {
    let s = StationInfo {
        ifindex: 4,
        mac: [2, 0, 0, 0, 1, 0],
        generation: Some(3),
        inactive_ms: Some(12),
        connected_s: Some(5),
        rx_bytes: Some(5_000_000_000),
        tx_bytes: Some(123),
        rx_packets: Some(10),
        tx_packets: Some(11),
        tx_retries: Some(2),
        tx_failed: Some(1),
        signal_dbm: Some(-45),
        signal_avg_dbm: Some(-46),
        tx_bitrate: Some(RateInfo::from_txvector(&TxVector::new(Standard::Vht, 9, 2, 80, 400))),
        rx_bitrate: Some(RateInfo::from_txvector(&TxVector::new(Standard::Vht, 8, 2, 80, 400))),
        expected_throughput_kbps: Some(600_000),
        tx_duration_us: Some(1 << 35),
        rx_duration_us: Some(77),
        tids: vec![TidStats { tid: 0, tx_msdu: Some(9), txq: Some(TxqStats { backlog_packets: Some(40), backlog_bytes: Some(60_000), drops: Some(3), ..Default::default() }), ..Default::default() }],
    };
    let m = s.encode(&req(), 0x1c);
    let back = StationInfo::decode(&super::super::parse_msgs(&m.encode()).unwrap()[0]).unwrap();
    assert_eq!(back, s);
    assert_eq!(back.txq_total().unwrap().backlog_packets, Some(40));
}

#[test]
fn survey_wiphy_interface_vendor_round_trip() {
    let sv = SurveyInfo { ifindex: 4, freq_mhz: 5180, noise_dbm: Some(-92), in_use: true, time_ms: Some(1000), busy_ms: Some(400), tx_ms: Some(300), rx_ms: Some(50), ..Default::default() };
    assert_eq!(SurveyInfo::decode(&sv.encode(&req(), 0x1c)).unwrap(), sv);
    let mut feats = vec![0u8; 8];
    feats[(EXT_FEATURE_TXQS / 8) as usize] |= 1 << (EXT_FEATURE_TXQS % 8);
    let wi = WiphyInfo { index: 0, name: "phy0".into(), txq_limit: Some(1000), txq_memory_limit: Some(4 << 20), txq_quantum: Some(300), txq_stats: Some(TxqStats { backlog_packets: Some(5), ..Default::default() }), ext_features: feats };
    let mut back = WiphyInfo::default();
    back.merge(&wi.encode(&req(), 0x1c, true)).unwrap();
    assert_eq!(back, wi);
    assert!(back.has_ext_feature(EXT_FEATURE_TXQS));
    assert!(!back.has_ext_feature(EXT_FEATURE_AQL));
    let ii = InterfaceInfo { ifindex: 4, ifname: "wlan0".into(), wiphy: 0, iftype: IFTYPE_AP, mac: Some([2, 0, 0, 0, 0, 0]), wdev: Some(1), freq_mhz: Some(5180) };
    assert_eq!(InterfaceInfo::decode(&ii.encode(&req(), 0x1c, false)).unwrap(), ii);
    let ag = Aggregation { stations: vec![AggStation { mac: [2, 0, 0, 0, 1, 0], mean: 31.5, capacity: 42, ppdus: 1000, ipv4: Some("10.77.1.1".parse().unwrap()) }] };
    assert_eq!(Aggregation::decode(&ag.encode(&req(), 0x1c, 0)).unwrap(), ag);
}

#[test]
fn requests_parse() {
    let m = set_txq_limit(0x1c, 0, 321, 4);
    assert_eq!(Request::parse(&m).unwrap(), Request::SetWiphy { wiphy: Some(0), ifindex: None, txq_limit: Some(321), others: vec![] });
    assert_eq!(Request::parse(&dump_stations(0x1c, 7, 1)).unwrap(), Request::GetStation { ifindex: Some(7), mac: None, dump: true });
    assert_eq!(Request::parse(&dump_wiphy(0x1c, Some(0), 1)).unwrap(), Request::GetWiphy { wiphy: Some(0), ifindex: None, dump: true });
    assert_eq!(Request::parse(&vendor_aggregation(0x1c, 7, 1)).unwrap(), Request::Vendor { ifindex: Some(7), wiphy: None, vendor_id: LASTHOP_VENDOR_ID, subcmd: 1 });
}
