//! The emulator's AP host answers nl80211 as a mac80211 AP's kernel would: a program in the AP
//! namespace (the WQM daemon, the split proxy) sends the requests it sends to a real kernel
//! — over the telemetry socket instead of a netlink socket — and gets the same messages back,
//! filled from the model's AP (`World::ap_telemetry`, `lasthop-sim/src/world/telemetry.rs`).
//!
//! One phy (`phy0`, index 0) with one AP interface (`wlan0`, the AP host's TUN device's index),
//! its stations (MAC 02:4c:48:xx:xx:xx, xx = station index + 1) and one channel. The phy's
//! TXQ limit maps to the model's AP queue limit (`World::set_ap_txq_limit`); nothing else can
//! be changed. The lasthop vendor command reports the A-MPDU length in use
//! (`nl::nl80211` module doc).
//!
//! The socket is `/run/lasthop/emu/nl80211-<inode>.sock`, where `<inode>` is the inode of the
//! AP namespace (`stat -L -c %i /run/netns/lh-<name>-ap`, or `/proc/self/ns/net` from inside
//! it), so a daemon in that namespace finds it without being told.

use crate::nl::nl80211::{self as n, AggStation, Aggregation, InterfaceInfo, RateInfo, Request, StationInfo, SurveyInfo, TidStats, TxqStats, WiphyInfo};
use crate::nl::{genl, Msg, NLM_F_ACK};
use lasthop_sim::world::telemetry::{ApTelemetry, TelemetryCursor};
use lasthop_sim::world::World;

/// The message type the emulator gives nl80211 (a kernel assigns one dynamically).
pub const FAMILY_ID: u16 = 28;

/// A MAC address for station `i` (`None`: the AP).
pub fn mac_of(i: Option<u32>) -> [u8; 6] {
    let v = i.map_or(0, |i| i + 1);
    [0x02, 0x4c, 0x48, (v >> 16) as u8, (v >> 8) as u8, v as u8]
}

/// Answers requests about the model's AP.
pub struct Responder {
    pub ifindex: u32,
    pub ifname: String,
    /// TID of the access category the cell's traffic uses.
    pub tid: u8,
    /// Extended features to announce (TXQS always; airtime fairness and AQL as configured).
    pub features: Vec<u32>,
    cursor: TelemetryCursor,
    /// Requests answered, for the emulator's figures.
    pub requests: u64,
    /// Each station's IPv4 address (for the aggregation extension).
    pub station_addrs: Vec<std::net::Ipv4Addr>,
}

impl Responder {
    pub fn new(ifindex: u32, ifname: &str, tid: u8, airtime: bool, aql: bool) -> Responder {
        let mut features = vec![n::EXT_FEATURE_TXQS];
        if airtime {
            features.push(n::EXT_FEATURE_AIRTIME_FAIRNESS);
        }
        if aql {
            features.push(n::EXT_FEATURE_AQL);
        }
        Responder { ifindex, ifname: ifname.into(), tid, features, cursor: TelemetryCursor::default(), requests: 0, station_addrs: Vec::new() }
    }

    fn wiphy(&self, t: &ApTelemetry) -> WiphyInfo {
        let mut ext = vec![0u8; 8];
        for &f in &self.features {
            ext[(f / 8) as usize] |= 1 << (f % 8);
        }
        WiphyInfo {
            index: 0,
            name: "phy0".into(),
            txq_limit: Some(t.txq.limit.min(u32::MAX as u64) as u32),
            txq_memory_limit: None,
            txq_quantum: None,
            txq_stats: Some(TxqStats {
                backlog_bytes: Some(t.txq.backlog_bytes.min(u32::MAX as u64) as u32),
                backlog_packets: Some(t.txq.backlog_packets as u32),
                drops: Some(t.txq.drops as u32),
                overlimit: Some(t.txq.overlimit as u32),
                ..TxqStats::default()
            }),
            ext_features: ext,
        }
    }

    fn interface(&self, t: &ApTelemetry) -> InterfaceInfo {
        InterfaceInfo { ifindex: self.ifindex, ifname: self.ifname.clone(), wiphy: 0, iftype: n::IFTYPE_AP, mac: Some(mac_of(None)), wdev: Some(1), freq_mhz: Some(t.survey.freq_mhz) }
    }

    fn station(&self, t: &ApTelemetry, i: usize) -> StationInfo {
        let s = &t.stations[i];
        let c32 = |v: u64| v.min(u32::MAX as u64) as u32;
        StationInfo {
            ifindex: self.ifindex,
            mac: mac_of(Some(s.station)),
            generation: Some(1),
            inactive_ms: None,
            connected_s: Some((t.now_ns / 1_000_000_000) as u32),
            rx_bytes: Some(s.rx.bytes_acked),
            tx_bytes: Some(s.tx.bytes_acked),
            rx_packets: Some(c32(s.rx.mpdus_acked)),
            tx_packets: Some(c32(s.tx.mpdus_acked)),
            tx_retries: Some(c32(s.tx.retries())),
            tx_failed: Some(c32(s.tx.failed)),
            signal_dbm: Some(s.signal_dbm.round().clamp(-128.0, 127.0) as i8),
            signal_avg_dbm: None,
            tx_bitrate: Some(RateInfo::from_txvector(&s.tx_rate)),
            rx_bitrate: Some(RateInfo::from_txvector(&s.rx_rate)),
            expected_throughput_kbps: Some(c32(s.expected_throughput_bps / 1000)),
            tx_duration_us: Some(s.tx.airtime_ns / 1000),
            rx_duration_us: Some(s.rx.airtime_ns / 1000),
            tids: vec![TidStats {
                tid: self.tid,
                rx_msdu: Some(s.rx.mpdus_acked),
                tx_msdu: Some(s.tx.mpdus_acked),
                tx_msdu_retries: Some(s.tx.retries()),
                tx_msdu_failed: Some(s.tx.failed),
                txq: Some(TxqStats {
                    backlog_bytes: Some(c32(s.backlog_bytes)),
                    backlog_packets: Some(c32(s.backlog_packets)),
                    flows: Some(s.flows),
                    drops: Some(c32(s.qdisc_drops)),
                    tx_bytes: Some(c32(s.tx.bytes_acked)),
                    tx_packets: Some(c32(s.tx.mpdus_acked)),
                    ..TxqStats::default()
                }),
            }],
        }
    }

    fn survey(&self, t: &ApTelemetry) -> SurveyInfo {
        let ms = |ns: u64| Some(ns / 1_000_000);
        SurveyInfo {
            ifindex: self.ifindex,
            freq_mhz: t.survey.freq_mhz,
            noise_dbm: Some(t.survey.noise_dbm.round().clamp(-128.0, 127.0) as i8),
            in_use: true,
            time_ms: ms(t.survey.active_ns),
            busy_ms: ms(t.survey.busy_ns),
            ext_busy_ms: None,
            rx_ms: ms(t.survey.rx_ns),
            tx_ms: ms(t.survey.tx_ns),
            scan_ms: None,
            bss_rx_ms: None,
        }
    }

    /// The answer to one request, as a kernel gives it (replies, then `NLMSG_DONE` for a dump
    /// or an acknowledgement when asked for; errors as `NLMSG_ERROR`).
    pub fn handle(&mut self, world: &mut World, req: &Msg) -> Vec<Msg> {
        self.requests += 1;
        let err = |e: i32, text: &str| vec![Msg::error_for(req, e, text)];
        if req.ty == genl::GENL_ID_CTRL {
            return match genl::requested_family(req) {
                Ok(f) if f == n::FAMILY => vec![genl::new_family(req, n::FAMILY, FAMILY_ID, 1, n::ATTR_MAX_ANNOUNCED)],
                Ok(_) => err(libc::ENOENT, "the emulator's AP host answers nl80211 only"),
                Err(e) => err(libc::EINVAL, &e),
            };
        }
        if req.ty != FAMILY_ID {
            return err(libc::EOPNOTSUPP, "unknown netlink family");
        }
        let r = match Request::parse(req) {
            Ok(r) => r,
            Err(e) => return err(libc::EINVAL, &e),
        };
        let t = world.ap_telemetry(&mut self.cursor);
        let ack = req.flags & NLM_F_ACK != 0;
        let single = |m: Msg| if ack { vec![m, Msg::error_for(req, 0, "")] } else { vec![m] };
        let dump = |mut v: Vec<Msg>| {
            v.push(Msg::done_for(req));
            v
        };
        let our_if = |i: Option<u32>| i.is_none_or(|i| i == self.ifindex);
        match r {
            Request::GetInterface { ifindex, dump: true } if our_if(ifindex) => dump(vec![self.interface(&t).encode(req, FAMILY_ID, true)]),
            Request::GetInterface { ifindex: Some(i), dump: false } if i == self.ifindex => single(self.interface(&t).encode(req, FAMILY_ID, false)),
            Request::GetInterface { .. } => err(libc::ENODEV, "no such wireless interface"),
            Request::GetWiphy { wiphy, ifindex, dump: d } => {
                if wiphy.is_some_and(|w| w != 0) || !our_if(ifindex) {
                    return err(libc::ENODEV, "no such phy");
                }
                if d {
                    dump(vec![self.wiphy(&t).encode(req, FAMILY_ID, true)])
                } else {
                    single(self.wiphy(&t).encode(req, FAMILY_ID, false))
                }
            }
            Request::SetWiphy { wiphy, ifindex, txq_limit, others } => {
                if wiphy.is_some_and(|w| w != 0) || !our_if(ifindex) || (wiphy.is_none() && ifindex.is_none()) {
                    return err(libc::ENODEV, "no such phy");
                }
                if !others.is_empty() {
                    return err(libc::EOPNOTSUPP, "the emulator's AP host changes only the TXQ limit");
                }
                match txq_limit {
                    Some(0) => err(libc::EINVAL, "TXQ limit 0"),
                    Some(l) => {
                        world.set_ap_txq_limit(l as u64);
                        vec![Msg::error_for(req, 0, "")]
                    }
                    None => vec![Msg::error_for(req, 0, "")],
                }
            }
            Request::GetStation { ifindex, mac, dump: d } => {
                if !our_if(ifindex) || ifindex.is_none() {
                    return err(libc::ENODEV, "no such interface");
                }
                if d {
                    dump((0..t.stations.len()).map(|i| self.station(&t, i).encode(req, FAMILY_ID)).collect())
                } else {
                    let found = mac.and_then(|m| (0..t.stations.len()).find(|&i| mac_of(Some(t.stations[i].station)) == m));
                    match found {
                        Some(i) => {
                            let mut m = self.station(&t, i).encode(req, FAMILY_ID);
                            m.flags = 0;
                            single(m)
                        }
                        None => err(libc::ENOENT, "no such station"),
                    }
                }
            }
            Request::GetSurvey { ifindex } => {
                if !our_if(ifindex) || ifindex.is_none() {
                    return err(libc::ENODEV, "no such interface");
                }
                dump(vec![self.survey(&t).encode(req, FAMILY_ID)])
            }
            Request::Vendor { vendor_id, subcmd, ifindex, .. } => {
                if !our_if(ifindex) {
                    return err(libc::ENODEV, "no such interface");
                }
                if vendor_id != n::LASTHOP_VENDOR_ID || subcmd != n::VENDOR_SUBCMD_AGGREGATION {
                    return err(libc::EOPNOTSUPP, "unknown vendor command");
                }
                let a = Aggregation {
                    stations: t.stations.iter().map(|s| AggStation { mac: mac_of(Some(s.station)), mean: s.ampdu_mean, capacity: s.ampdu_capacity, ppdus: s.tx.ppdus, ipv4: self.station_addrs.get(s.station as usize).copied() }).collect(),
                };
                single(a.encode(req, FAMILY_ID, 0))
            }
            Request::Other { cmd } => err(libc::EOPNOTSUPP, &format!("nl80211 command {cmd} is not emulated")),
        }
    }
}
