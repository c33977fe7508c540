//! nl80211 (the UAPI header `linux/nl80211.h`, ISC licence) as far as an AP's buffer sizer
//! and airtime allocator need it: requests a daemon sends and the answers a kernel (or the
//! emulator's AP host) gives, both directions of each.
//!
//! | request | answer | what |
//! |---|---|---|
//! | `GET_INTERFACE` (ifindex) / dump | `NEW_INTERFACE` | interface → phy index, type, MAC |
//! | `GET_WIPHY` dump (`SPLIT_WIPHY_DUMP`) | `NEW_WIPHY` (several parts) | TXQ limit, memory limit, quantum, TXQ statistics, extended features |
//! | `SET_WIPHY` (`TXQ_LIMIT`) | ack | the phy-wide TXQ packet limit (`iw phy phy0 set txq limit N`) |
//! | `GET_STATION` dump (ifindex) | `NEW_STATION` per station | tx/rx bitrate, bytes, packets, retries, failures, signal, expected throughput, tx/rx airtime, per-TID TXQ statistics |
//! | `GET_SURVEY` dump (ifindex) | `NEW_SURVEY_RESULTS` per channel | frequency, noise, in use, channel active/busy/rx/tx time (ms) |
//! | `VENDOR` (lasthop id) | `VENDOR` | the A-MPDU length in use per station (extension, below) |
//!
//! Attribute layouts follow the kernel's `nl80211_send_station`, `nl80211_put_sta_rate`,
//! `nl80211_put_txq_stats`, `nl80211_send_survey` and `nl80211_send_wiphy` as the header
//! documents them: nests without `NLA_F_NESTED`, 64-bit counters padded to 8 octets with the
//! family's PAD attribute, TXQ statistics as u32, bit rates in units of 100 kbit/s, survey
//! times in milliseconds, station airtime in microseconds.
//!
//! **Extension: aggregation.** nl80211 has no attribute for the A-MPDU length a link uses.
//! The emulator's AP host answers `NL80211_CMD_VENDOR` with vendor id [`LASTHOP_VENDOR_ID`]
//! (a locally administered 24-bit identifier no hardware vendor holds) and sub-command
//! [`VENDOR_SUBCMD_AGGREGATION`]: `VENDOR_DATA` holds one [`AGG_STATION`] nest per station
//! with its MAC, the mean MPDUs per A-MPDU since the previous query (in thousandths), the
//! most full-size MPDUs an A-MPDU at the current rate holds, PPDUs sent, and the station's
//! IPv4 address. A real driver answers
//! `EOPNOTSUPP`; a daemon then derives the capacity from the tx bitrate.

use super::genl::{self, GenlHdr};
use super::{Attr, AttrWriter, Attrs, Msg, NLM_F_ACK, NLM_F_DUMP, NLM_F_MULTI, NLM_F_REQUEST};
use lasthop_wifi::phy::{Standard, TxVector};

pub const FAMILY: &str = "nl80211";

pub const CMD_GET_WIPHY: u8 = 1;
pub const CMD_SET_WIPHY: u8 = 2;
pub const CMD_NEW_WIPHY: u8 = 3;
pub const CMD_GET_INTERFACE: u8 = 5;
pub const CMD_NEW_INTERFACE: u8 = 7;
pub const CMD_GET_STATION: u8 = 17;
pub const CMD_NEW_STATION: u8 = 19;
pub const CMD_GET_SURVEY: u8 = 50;
pub const CMD_NEW_SURVEY_RESULTS: u8 = 51;
pub const CMD_VENDOR: u8 = 103;

pub const ATTR_WIPHY: u16 = 1;
pub const ATTR_WIPHY_NAME: u16 = 2;
pub const ATTR_IFINDEX: u16 = 3;
pub const ATTR_IFNAME: u16 = 4;
pub const ATTR_IFTYPE: u16 = 5;
pub const ATTR_MAC: u16 = 6;
pub const ATTR_STA_INFO: u16 = 21;
pub const ATTR_WIPHY_FREQ: u16 = 38;
pub const ATTR_GENERATION: u16 = 46;
pub const ATTR_SSID: u16 = 52;
pub const ATTR_SURVEY_INFO: u16 = 84;
pub const ATTR_WDEV: u16 = 153;
pub const ATTR_CHANNEL_WIDTH: u16 = 159;
pub const ATTR_SPLIT_WIPHY_DUMP: u16 = 174;
pub const ATTR_VENDOR_ID: u16 = 195;
pub const ATTR_VENDOR_SUBCMD: u16 = 196;
pub const ATTR_VENDOR_DATA: u16 = 197;
pub const ATTR_EXT_FEATURES: u16 = 217;
pub const ATTR_PAD: u16 = 229;
pub const ATTR_TXQ_STATS: u16 = 265;
pub const ATTR_TXQ_LIMIT: u16 = 266;
pub const ATTR_TXQ_MEMORY_LIMIT: u16 = 267;
pub const ATTR_TXQ_QUANTUM: u16 = 268;
/// The highest attribute the emulator announces (the 6.1 kernel's `NL80211_ATTR_MAX` region).
pub const ATTR_MAX_ANNOUNCED: u32 = 320;

pub const IFTYPE_STATION: u32 = 2;
pub const IFTYPE_AP: u32 = 3;
pub const IFTYPE_MESH_POINT: u32 = 7;

/// `NL80211_EXT_FEATURE_TXQS`: the driver uses mac80211's intermediate TX queues (the TXQ
/// limit is settable).
pub const EXT_FEATURE_TXQS: u32 = 28;
pub const EXT_FEATURE_AIRTIME_FAIRNESS: u32 = 33;
pub const EXT_FEATURE_AQL: u32 = 40;

const STA_INFO_INACTIVE_TIME: u16 = 1;
const STA_INFO_RX_BYTES: u16 = 2;
const STA_INFO_TX_BYTES: u16 = 3;
const STA_INFO_SIGNAL: u16 = 7;
const STA_INFO_TX_BITRATE: u16 = 8;
const STA_INFO_RX_PACKETS: u16 = 9;
const STA_INFO_TX_PACKETS: u16 = 10;
const STA_INFO_TX_RETRIES: u16 = 11;
const STA_INFO_TX_FAILED: u16 = 12;
const STA_INFO_SIGNAL_AVG: u16 = 13;
const STA_INFO_RX_BITRATE: u16 = 14;
const STA_INFO_CONNECTED_TIME: u16 = 16;
const STA_INFO_RX_BYTES64: u16 = 23;
const STA_INFO_TX_BYTES64: u16 = 24;
const STA_INFO_EXPECTED_THROUGHPUT: u16 = 27;
const STA_INFO_TID_STATS: u16 = 31;
const STA_INFO_RX_DURATION: u16 = 32;
const STA_INFO_PAD: u16 = 33;
const STA_INFO_TX_DURATION: u16 = 39;

const TID_STATS_RX_MSDU: u16 = 1;
const TID_STATS_TX_MSDU: u16 = 2;
const TID_STATS_TX_MSDU_RETRIES: u16 = 3;
const TID_STATS_TX_MSDU_FAILED: u16 = 4;
const TID_STATS_PAD: u16 = 5;
const TID_STATS_TXQ_STATS: u16 = 6;

const TXQ_STATS_BACKLOG_BYTES: u16 = 1;
const TXQ_STATS_BACKLOG_PACKETS: u16 = 2;
const TXQ_STATS_FLOWS: u16 = 3;
const TXQ_STATS_DROPS: u16 = 4;
const TXQ_STATS_ECN_MARKS: u16 = 5;
const TXQ_STATS_OVERLIMIT: u16 = 6;
const TXQ_STATS_OVERMEMORY: u16 = 7;
const TXQ_STATS_COLLISIONS: u16 = 8;
const TXQ_STATS_TX_BYTES: u16 = 9;
const TXQ_STATS_TX_PACKETS: u16 = 10;
const TXQ_STATS_MAX_FLOWS: u16 = 11;

const RATE_INFO_BITRATE: u16 = 1;
const RATE_INFO_MCS: u16 = 2;
const RATE_INFO_40_MHZ_WIDTH: u16 = 3;
const RATE_INFO_SHORT_GI: u16 = 4;
const RATE_INFO_BITRATE32: u16 = 5;
const RATE_INFO_VHT_MCS: u16 = 6;
const RATE_INFO_VHT_NSS: u16 = 7;
const RATE_INFO_80_MHZ_WIDTH: u16 = 8;
const RATE_INFO_80P80_MHZ_WIDTH: u16 = 9;
const RATE_INFO_160_MHZ_WIDTH: u16 = 10;
const RATE_INFO_HE_MCS: u16 = 13;
const RATE_INFO_HE_NSS: u16 = 14;
const RATE_INFO_HE_GI: u16 = 15;
const RATE_INFO_HE_DCM: u16 = 16;

const SURVEY_INFO_FREQUENCY: u16 = 1;
const SURVEY_INFO_NOISE: u16 = 2;
const SURVEY_INFO_IN_USE: u16 = 3;
const SURVEY_INFO_TIME: u16 = 4;
const SURVEY_INFO_TIME_BUSY: u16 = 5;
const SURVEY_INFO_TIME_EXT_BUSY: u16 = 6;
const SURVEY_INFO_TIME_RX: u16 = 7;
const SURVEY_INFO_TIME_TX: u16 = 8;
const SURVEY_INFO_TIME_SCAN: u16 = 9;
const SURVEY_INFO_PAD: u16 = 10;
const SURVEY_INFO_TIME_BSS_RX: u16 = 11;

/// The lasthop vendor identifier (see the module doc): 0x0A4C48, a locally administered
/// (bit 1 of the first octet set) identifier.
pub const LASTHOP_VENDOR_ID: u32 = 0x0A_4C_48;
pub const VENDOR_SUBCMD_AGGREGATION: u32 = 1;
/// In `VENDOR_DATA`: one nest per station.
pub const AGG_STATION: u16 = 1;
const AGG_MAC: u16 = 1;
const AGG_MEAN_MILLI: u16 = 2;
const AGG_CAPACITY: u16 = 3;
const AGG_PPDUS: u16 = 4;
const AGG_PAD: u16 = 5;
const AGG_IPV4: u16 = 6;

/// The number of TIDs mac80211 reports per station: 16 plus one for non-QoS frames.
pub const NUM_TIDS: u8 = 17;

/// A transmit or receive rate as `struct rate_info` reports it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RateInfo {
    /// Units of 100 kbit/s (`BITRATE32`, else the 16-bit `BITRATE`).
    pub bitrate_100kbps: u32,
    pub kind: RateKind,
}

/// What kind of rate, with the fields nl80211 gives for it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RateKind {
    /// Non-HT (only the bit rate).
    Legacy,
    /// HT: the MCS index 0..=31 (streams × 8 + per-stream MCS).
    Ht { mcs: u8, width: u16, short_gi: bool },
    Vht { mcs: u8, nss: u8, width: u16, short_gi: bool },
    /// HE: `gi` 0, 1, 2 = 0.8, 1.6, 3.2 µs.
    He { mcs: u8, nss: u8, width: u16, gi: u8, dcm: bool },
}

impl RateInfo {
    /// The rate of a model TxVector, as mac80211 would report it.
    pub fn from_txvector(tx: &TxVector) -> RateInfo {
        let bitrate_100kbps = (tx.data_rate_bps() / 100_000) as u32;
        let sgi = tx.guard_interval == 400;
        let kind = match tx.standard {
            Standard::Ofdm => RateKind::Legacy,
            Standard::Ht => RateKind::Ht { mcs: (tx.nss - 1) * 8 + tx.mcs, width: tx.channel_width, short_gi: sgi },
            Standard::Vht => RateKind::Vht { mcs: tx.mcs, nss: tx.nss, width: tx.channel_width, short_gi: sgi },
            Standard::He => RateKind::He {
                mcs: tx.mcs,
                nss: tx.nss,
                width: tx.channel_width,
                gi: match tx.guard_interval {
                    1600 => 1,
                    3200 => 2,
                    _ => 0,
                },
                dcm: false,
            },
        };
        RateInfo { bitrate_100kbps, kind }
    }

    /// The TxVector this rate describes (None for legacy rates that are not OFDM rates, and
    /// for combinations the PHY tables do not have).
    pub fn to_txvector(&self) -> Option<TxVector> {
        let tx = match self.kind {
            RateKind::Legacy => {
                const OFDM_100KBPS: [u32; 8] = [60, 90, 120, 180, 240, 360, 480, 540];
                let i = OFDM_100KBPS.iter().position(|&r| r == self.bitrate_100kbps)?;
                TxVector::ofdm(i as u8)
            }
            RateKind::Ht { mcs, width, short_gi } => TxVector::new(Standard::Ht, mcs % 8, mcs / 8 + 1, width, if short_gi { 400 } else { 800 }),
            RateKind::Vht { mcs, nss, width, short_gi } => TxVector::new(Standard::Vht, mcs, nss, width, if short_gi { 400 } else { 800 }),
            RateKind::He { mcs, nss, width, gi, .. } => TxVector::new(
                Standard::He,
                mcs,
                nss,
                width,
                match gi {
                    1 => 1600,
                    2 => 3200,
                    _ => 800,
                },
            ),
        };
        tx.validate().ok().map(|_| tx)
    }

    fn encode(&self, w: &mut AttrWriter, ty: u16) {
        w.begin(ty, false);
        if self.bitrate_100kbps > 0 {
            w.u32(RATE_INFO_BITRATE32, self.bitrate_100kbps);
        }
        if self.bitrate_100kbps > 0 && self.bitrate_100kbps < 1 << 16 {
            w.u16(RATE_INFO_BITRATE, self.bitrate_100kbps as u16);
        }
        let width = match self.kind {
            RateKind::Legacy => 20,
            RateKind::Ht { mcs, width, short_gi } => {
                w.u8(RATE_INFO_MCS, mcs);
                if short_gi {
                    w.flag(RATE_INFO_SHORT_GI);
                }
                width
            }
            RateKind::Vht { mcs, nss, width, short_gi } => {
                w.u8(RATE_INFO_VHT_MCS, mcs).u8(RATE_INFO_VHT_NSS, nss);
                if short_gi {
                    w.flag(RATE_INFO_SHORT_GI);
                }
                width
            }
            RateKind::He { mcs, nss, width, gi, dcm } => {
                w.u8(RATE_INFO_HE_MCS, mcs).u8(RATE_INFO_HE_NSS, nss).u8(RATE_INFO_HE_GI, gi).u8(RATE_INFO_HE_DCM, dcm as u8);
                width
            }
        };
        match width {
            40 => {
                w.flag(RATE_INFO_40_MHZ_WIDTH);
            }
            80 => {
                w.flag(RATE_INFO_80_MHZ_WIDTH);
            }
            160 => {
                w.flag(RATE_INFO_160_MHZ_WIDTH);
            }
            _ => {}
        }
        w.end();
    }

    fn decode(a: &Attr) -> Result<RateInfo, String> {
        let (mut br16, mut br32) = (None, None);
        let (mut ht, mut vht_mcs, mut vht_nss, mut he_mcs, mut he_nss, mut he_gi, mut dcm) = (None, None, None, None, None, 0, false);
        let (mut sgi, mut width) = (false, 20);
        for x in a.nested() {
            let x = x?;
            match x.ty {
                RATE_INFO_BITRATE => br16 = Some(x.u16()? as u32),
                RATE_INFO_BITRATE32 => br32 = Some(x.u32()?),
                RATE_INFO_MCS => ht = Some(x.u8()?),
                RATE_INFO_VHT_MCS => vht_mcs = Some(x.u8()?),
                RATE_INFO_VHT_NSS => vht_nss = Some(x.u8()?),
                RATE_INFO_HE_MCS => he_mcs = Some(x.u8()?),
                RATE_INFO_HE_NSS => he_nss = Some(x.u8()?),
                RATE_INFO_HE_GI => he_gi = x.u8()?,
                RATE_INFO_HE_DCM => dcm = x.u8()? != 0,
                RATE_INFO_SHORT_GI => sgi = true,
                RATE_INFO_40_MHZ_WIDTH => width = 40,
                RATE_INFO_80_MHZ_WIDTH => width = 80,
                RATE_INFO_80P80_MHZ_WIDTH | RATE_INFO_160_MHZ_WIDTH => width = 160,
                _ => {}
            }
        }
        let kind = if let Some(mcs) = he_mcs {
            RateKind::He { mcs, nss: he_nss.unwrap_or(1), width, gi: he_gi, dcm }
        } else if let Some(mcs) = vht_mcs {
            RateKind::Vht { mcs, nss: vht_nss.unwrap_or(1), width, short_gi: sgi }
        } else if let Some(mcs) = ht {
            RateKind::Ht { mcs, width, short_gi: sgi }
        } else {
            RateKind::Legacy
        };
        Ok(RateInfo { bitrate_100kbps: br32.or(br16).unwrap_or(0), kind })
    }
}

/// `nl80211_put_txq_stats`: each field is present only if the driver filled it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct TxqStats {
    pub backlog_bytes: Option<u32>,
    pub backlog_packets: Option<u32>,
    pub flows: Option<u32>,
    pub drops: Option<u32>,
    pub ecn_marks: Option<u32>,
    pub overlimit: Option<u32>,
    pub overmemory: Option<u32>,
    pub collisions: Option<u32>,
    pub tx_bytes: Option<u32>,
    pub tx_packets: Option<u32>,
    pub max_flows: Option<u32>,
}

impl TxqStats {
    fn fields(&self) -> [(u16, Option<u32>); 11] {
        [
            (TXQ_STATS_BACKLOG_BYTES, self.backlog_bytes),
            (TXQ_STATS_BACKLOG_PACKETS, self.backlog_packets),
            (TXQ_STATS_FLOWS, self.flows),
            (TXQ_STATS_DROPS, self.drops),
            (TXQ_STATS_ECN_MARKS, self.ecn_marks),
            (TXQ_STATS_OVERLIMIT, self.overlimit),
            (TXQ_STATS_OVERMEMORY, self.overmemory),
            (TXQ_STATS_COLLISIONS, self.collisions),
            (TXQ_STATS_TX_BYTES, self.tx_bytes),
            (TXQ_STATS_TX_PACKETS, self.tx_packets),
            (TXQ_STATS_MAX_FLOWS, self.max_flows),
        ]
    }

    fn encode(&self, w: &mut AttrWriter, ty: u16) {
        w.begin(ty, false);
        for (t, v) in self.fields() {
            if let Some(v) = v {
                w.u32(t, v);
            }
        }
        w.end();
    }

    fn decode(a: &Attr) -> Result<TxqStats, String> {
        let mut s = TxqStats::default();
        for x in a.nested() {
            let x = x?;
            let v = Some(x.u32()?);
            match x.ty {
                TXQ_STATS_BACKLOG_BYTES => s.backlog_bytes = v,
                TXQ_STATS_BACKLOG_PACKETS => s.backlog_packets = v,
                TXQ_STATS_FLOWS => s.flows = v,
                TXQ_STATS_DROPS => s.drops = v,
                TXQ_STATS_ECN_MARKS => s.ecn_marks = v,
                TXQ_STATS_OVERLIMIT => s.overlimit = v,
                TXQ_STATS_OVERMEMORY => s.overmemory = v,
                TXQ_STATS_COLLISIONS => s.collisions = v,
                TXQ_STATS_TX_BYTES => s.tx_bytes = v,
                TXQ_STATS_TX_PACKETS => s.tx_packets = v,
                TXQ_STATS_MAX_FLOWS => s.max_flows = v,
                _ => {}
            }
        }
        Ok(s)
    }
}

/// One TID's counters in a station dump (`NL80211_STA_INFO_TID_STATS`, nest index tid + 1).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct TidStats {
    /// 0..=15, or 16 for non-QoS frames.
    pub tid: u8,
    pub rx_msdu: Option<u64>,
    pub tx_msdu: Option<u64>,
    pub tx_msdu_retries: Option<u64>,
    pub tx_msdu_failed: Option<u64>,
    pub txq: Option<TxqStats>,
}

/// One station in a station dump (`NL80211_CMD_NEW_STATION`).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct StationInfo {
    pub ifindex: u32,
    pub mac: [u8; 6],
    pub generation: Option<u32>,
    pub inactive_ms: Option<u32>,
    pub connected_s: Option<u32>,
    pub rx_bytes: Option<u64>,
    pub tx_bytes: Option<u64>,
    pub rx_packets: Option<u32>,
    pub tx_packets: Option<u32>,
    pub tx_retries: Option<u32>,
    pub tx_failed: Option<u32>,
    pub signal_dbm: Option<i8>,
    pub signal_avg_dbm: Option<i8>,
    pub tx_bitrate: Option<RateInfo>,
    pub rx_bitrate: Option<RateInfo>,
    pub expected_throughput_kbps: Option<u32>,
    pub tx_duration_us: Option<u64>,
    pub rx_duration_us: Option<u64>,
    pub tids: Vec<TidStats>,
}

impl StationInfo {
    /// The TXQ statistics summed over the station's TIDs (None if no TID carries any).
    pub fn txq_total(&self) -> Option<TxqStats> {
        let mut any = false;
        let mut t = TxqStats::default();
        let add = |a: &mut Option<u32>, b: Option<u32>| {
            if let Some(b) = b {
                *a = Some(a.unwrap_or(0).saturating_add(b));
            }
        };
        for q in self.tids.iter().filter_map(|x| x.txq) {
            any = true;
            add(&mut t.backlog_bytes, q.backlog_bytes);
            add(&mut t.backlog_packets, q.backlog_packets);
            add(&mut t.flows, q.flows);
            add(&mut t.drops, q.drops);
            add(&mut t.overlimit, q.overlimit);
            add(&mut t.overmemory, q.overmemory);
            add(&mut t.tx_bytes, q.tx_bytes);
            add(&mut t.tx_packets, q.tx_packets);
        }
        any.then_some(t)
    }

    pub fn encode(&self, req: &Msg, family: u16) -> Msg {
        let mut w = genl::writer(CMD_NEW_STATION, 1);
        w.u32(ATTR_IFINDEX, self.ifindex).bytes(ATTR_MAC, &self.mac);
        if let Some(g) = self.generation {
            w.u32(ATTR_GENERATION, g);
        }
        w.begin(ATTR_STA_INFO, false);
        if let Some(v) = self.inactive_ms {
            w.u32(STA_INFO_INACTIVE_TIME, v);
        }
        if let Some(v) = self.rx_bytes {
            w.u32(STA_INFO_RX_BYTES, v.min(u32::MAX as u64) as u32);
        }
        if let Some(v) = self.tx_bytes {
            w.u32(STA_INFO_TX_BYTES, v.min(u32::MAX as u64) as u32);
        }
        if let Some(v) = self.rx_bytes {
            w.u64_aligned(STA_INFO_RX_BYTES64, v, STA_INFO_PAD);
        }
        if let Some(v) = self.tx_bytes {
            w.u64_aligned(STA_INFO_TX_BYTES64, v, STA_INFO_PAD);
        }
        if let Some(v) = self.signal_dbm {
            w.i8(STA_INFO_SIGNAL, v);
        }
        if let Some(v) = self.signal_avg_dbm {
            w.i8(STA_INFO_SIGNAL_AVG, v);
        }
        if let Some(r) = &self.tx_bitrate {
            r.encode(&mut w, STA_INFO_TX_BITRATE);
        }
        if let Some(r) = &self.rx_bitrate {
            r.encode(&mut w, STA_INFO_RX_BITRATE);
        }
        for (t, v) in [(STA_INFO_RX_PACKETS, self.rx_packets), (STA_INFO_TX_PACKETS, self.tx_packets), (STA_INFO_TX_RETRIES, self.tx_retries), (STA_INFO_TX_FAILED, self.tx_failed), (STA_INFO_CONNECTED_TIME, self.connected_s), (STA_INFO_EXPECTED_THROUGHPUT, self.expected_throughput_kbps)] {
            if let Some(v) = v {
                w.u32(t, v);
            }
        }
        if let Some(v) = self.rx_duration_us {
            w.u64_aligned(STA_INFO_RX_DURATION, v, STA_INFO_PAD);
        }
        if let Some(v) = self.tx_duration_us {
            w.u64_aligned(STA_INFO_TX_DURATION, v, STA_INFO_PAD);
        }
        if !self.tids.is_empty() {
            w.begin(STA_INFO_TID_STATS, false);
            for t in &self.tids {
                w.begin(t.tid as u16 + 1, false);
                for (ty, v) in [(TID_STATS_RX_MSDU, t.rx_msdu), (TID_STATS_TX_MSDU, t.tx_msdu), (TID_STATS_TX_MSDU_RETRIES, t.tx_msdu_retries), (TID_STATS_TX_MSDU_FAILED, t.tx_msdu_failed)] {
                    if let Some(v) = v {
                        w.u64_aligned(ty, v, TID_STATS_PAD);
                    }
                }
                if let Some(q) = &t.txq {
                    q.encode(&mut w, TID_STATS_TXQ_STATS);
                }
                w.end();
            }
            w.end();
        }
        w.end();
        Msg { ty: family, flags: NLM_F_MULTI, seq: req.seq, pid: req.pid, payload: w.finish() }
    }

    pub fn decode(m: &Msg) -> Result<StationInfo, String> {
        let (h, attrs) = genl::split(m)?;
        if h.cmd != CMD_NEW_STATION {
            return Err(format!("nl80211 command {} where NEW_STATION was expected", h.cmd));
        }
        let mut s = StationInfo::default();
        let (mut rx32, mut tx32, mut rx64, mut tx64) = (None, None, None, None);
        for a in attrs {
            let a = a?;
            match a.ty {
                ATTR_IFINDEX => s.ifindex = a.u32()?,
                ATTR_MAC => s.mac = mac(&a)?,
                ATTR_GENERATION => s.generation = Some(a.u32()?),
                ATTR_STA_INFO => {
                    for x in a.nested() {
                        let x = x?;
                        match x.ty {
                            STA_INFO_INACTIVE_TIME => s.inactive_ms = Some(x.u32()?),
                            STA_INFO_CONNECTED_TIME => s.connected_s = Some(x.u32()?),
                            STA_INFO_RX_BYTES => rx32 = Some(x.u32()? as u64),
                            STA_INFO_TX_BYTES => tx32 = Some(x.u32()? as u64),
                            STA_INFO_RX_BYTES64 => rx64 = Some(x.u64()?),
                            STA_INFO_TX_BYTES64 => tx64 = Some(x.u64()?),
                            STA_INFO_SIGNAL => s.signal_dbm = Some(x.i8()?),
                            STA_INFO_SIGNAL_AVG => s.signal_avg_dbm = Some(x.i8()?),
                            STA_INFO_TX_BITRATE => s.tx_bitrate = Some(RateInfo::decode(&x)?),
                            STA_INFO_RX_BITRATE => s.rx_bitrate = Some(RateInfo::decode(&x)?),
                            STA_INFO_RX_PACKETS => s.rx_packets = Some(x.u32()?),
                            STA_INFO_TX_PACKETS => s.tx_packets = Some(x.u32()?),
                            STA_INFO_TX_RETRIES => s.tx_retries = Some(x.u32()?),
                            STA_INFO_TX_FAILED => s.tx_failed = Some(x.u32()?),
                            STA_INFO_EXPECTED_THROUGHPUT => s.expected_throughput_kbps = Some(x.u32()?),
                            STA_INFO_TX_DURATION => s.tx_duration_us = Some(x.u64()?),
                            STA_INFO_RX_DURATION => s.rx_duration_us = Some(x.u64()?),
                            STA_INFO_TID_STATS => {
                                for t in x.nested() {
                                    let t = t?;
                                    if t.ty == 0 || t.ty > NUM_TIDS as u16 {
                                        continue;
                                    }
                                    let mut ts = TidStats { tid: (t.ty - 1) as u8, ..TidStats::default() };
                                    for y in t.nested() {
                                        let y = y?;
                                        match y.ty {
                                            TID_STATS_RX_MSDU => ts.rx_msdu = Some(y.u64()?),
                                            TID_STATS_TX_MSDU => ts.tx_msdu = Some(y.u64()?),
                                            TID_STATS_TX_MSDU_RETRIES => ts.tx_msdu_retries = Some(y.u64()?),
                                            TID_STATS_TX_MSDU_FAILED => ts.tx_msdu_failed = Some(y.u64()?),
                                            TID_STATS_TXQ_STATS => ts.txq = Some(TxqStats::decode(&y)?),
                                            _ => {}
                                        }
                                    }
                                    s.tids.push(ts);
                                }
                            }
                            _ => {}
                        }
                    }
                }
                _ => {}
            }
        }
        s.rx_bytes = rx64.or(rx32);
        s.tx_bytes = tx64.or(tx32);
        Ok(s)
    }
}

fn mac(a: &Attr) -> Result<[u8; 6], String> {
    a.data.get(..6).and_then(|d| d.try_into().ok()).ok_or_else(|| format!("MAC attribute of {} octets", a.data.len()))
}

/// A MAC address as text.
pub fn mac_text(m: &[u8; 6]) -> String {
    m.iter().map(|b| format!("{b:02x}")).collect::<Vec<_>>().join(":")
}

/// One channel of a survey dump (`NL80211_CMD_NEW_SURVEY_RESULTS`). Times in milliseconds.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SurveyInfo {
    pub ifindex: u32,
    pub freq_mhz: u32,
    pub noise_dbm: Option<i8>,
    pub in_use: bool,
    pub time_ms: Option<u64>,
    pub busy_ms: Option<u64>,
    pub ext_busy_ms: Option<u64>,
    pub rx_ms: Option<u64>,
    pub tx_ms: Option<u64>,
    pub scan_ms: Option<u64>,
    pub bss_rx_ms: Option<u64>,
}

impl SurveyInfo {
    pub fn encode(&self, req: &Msg, family: u16) -> Msg {
        let mut w = genl::writer(CMD_NEW_SURVEY_RESULTS, 1);
        w.u32(ATTR_IFINDEX, self.ifindex);
        w.begin(ATTR_SURVEY_INFO, false);
        w.u32(SURVEY_INFO_FREQUENCY, self.freq_mhz);
        if let Some(n) = self.noise_dbm {
            w.i8(SURVEY_INFO_NOISE, n);
        }
        if self.in_use {
            w.flag(SURVEY_INFO_IN_USE);
        }
        for (t, v) in [
            (SURVEY_INFO_TIME, self.time_ms),
            (SURVEY_INFO_TIME_BUSY, self.busy_ms),
            (SURVEY_INFO_TIME_EXT_BUSY, self.ext_busy_ms),
            (SURVEY_INFO_TIME_RX, self.rx_ms),
            (SURVEY_INFO_TIME_TX, self.tx_ms),
            (SURVEY_INFO_TIME_SCAN, self.scan_ms),
            (SURVEY_INFO_TIME_BSS_RX, self.bss_rx_ms),
        ] {
            if let Some(v) = v {
                w.u64_aligned(t, v, SURVEY_INFO_PAD);
            }
        }
        w.end();
        Msg { ty: family, flags: NLM_F_MULTI, seq: req.seq, pid: req.pid, payload: w.finish() }
    }

    pub fn decode(m: &Msg) -> Result<SurveyInfo, String> {
        let (h, attrs) = genl::split(m)?;
        if h.cmd != CMD_NEW_SURVEY_RESULTS {
            return Err(format!("nl80211 command {} where NEW_SURVEY_RESULTS was expected", h.cmd));
        }
        let mut s = SurveyInfo::default();
        for a in attrs {
            let a = a?;
            match a.ty {
                ATTR_IFINDEX => s.ifindex = a.u32()?,
                ATTR_SURVEY_INFO => {
                    for x in a.nested() {
                        let x = x?;
                        match x.ty {
                            SURVEY_INFO_FREQUENCY => s.freq_mhz = x.u32()?,
                            SURVEY_INFO_NOISE => s.noise_dbm = Some(x.i8()?),
                            SURVEY_INFO_IN_USE => s.in_use = true,
                            SURVEY_INFO_TIME => s.time_ms = Some(x.u64()?),
                            SURVEY_INFO_TIME_BUSY => s.busy_ms = Some(x.u64()?),
                            SURVEY_INFO_TIME_EXT_BUSY => s.ext_busy_ms = Some(x.u64()?),
                            SURVEY_INFO_TIME_RX => s.rx_ms = Some(x.u64()?),
                            SURVEY_INFO_TIME_TX => s.tx_ms = Some(x.u64()?),
                            SURVEY_INFO_TIME_SCAN => s.scan_ms = Some(x.u64()?),
                            SURVEY_INFO_TIME_BSS_RX => s.bss_rx_ms = Some(x.u64()?),
                            _ => {}
                        }
                    }
                }
                _ => {}
            }
        }
        Ok(s)
    }
}

/// What a wiphy dump says about the phy's TX queues (merged over the dump's parts).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct WiphyInfo {
    pub index: u32,
    pub name: String,
    pub txq_limit: Option<u32>,
    pub txq_memory_limit: Option<u32>,
    pub txq_quantum: Option<u32>,
    pub txq_stats: Option<TxqStats>,
    pub ext_features: Vec<u8>,
}

impl WiphyInfo {
    pub fn has_ext_feature(&self, bit: u32) -> bool {
        self.ext_features.get(bit as usize / 8).is_some_and(|b| b & (1 << (bit % 8)) != 0)
    }

    /// One `NEW_WIPHY` message with everything (a kernel may split it; a reader merges).
    pub fn encode(&self, req: &Msg, family: u16, multi: bool) -> Msg {
        let mut w = genl::writer(CMD_NEW_WIPHY, 1);
        w.u32(ATTR_WIPHY, self.index).str(ATTR_WIPHY_NAME, &self.name).u32(ATTR_GENERATION, 1);
        if !self.ext_features.is_empty() {
            w.bytes(ATTR_EXT_FEATURES, &self.ext_features);
        }
        if let Some(s) = &self.txq_stats {
            s.encode(&mut w, ATTR_TXQ_STATS);
        }
        for (t, v) in [(ATTR_TXQ_LIMIT, self.txq_limit), (ATTR_TXQ_MEMORY_LIMIT, self.txq_memory_limit), (ATTR_TXQ_QUANTUM, self.txq_quantum)] {
            if let Some(v) = v {
                w.u32(t, v);
            }
        }
        Msg { ty: family, flags: if multi { NLM_F_MULTI } else { 0 }, seq: req.seq, pid: req.pid, payload: w.finish() }
    }

    /// Merge one part of a `NEW_WIPHY` dump into `self` (parts of one phy share its index).
    pub fn merge(&mut self, m: &Msg) -> Result<(), String> {
        let (h, attrs) = genl::split(m)?;
        if h.cmd != CMD_NEW_WIPHY {
            return Err(format!("nl80211 command {} where NEW_WIPHY was expected", h.cmd));
        }
        for a in attrs {
            let a = a?;
            match a.ty {
                ATTR_WIPHY => self.index = a.u32()?,
                ATTR_WIPHY_NAME => self.name = a.str()?.to_string(),
                ATTR_EXT_FEATURES => self.ext_features = a.data.to_vec(),
                ATTR_TXQ_STATS => self.txq_stats = Some(TxqStats::decode(&a)?),
                ATTR_TXQ_LIMIT => self.txq_limit = Some(a.u32()?),
                ATTR_TXQ_MEMORY_LIMIT => self.txq_memory_limit = Some(a.u32()?),
                ATTR_TXQ_QUANTUM => self.txq_quantum = Some(a.u32()?),
                _ => {}
            }
        }
        Ok(())
    }

    /// The phy index of a `NEW_WIPHY` part.
    pub fn index_of(m: &Msg) -> Result<Option<u32>, String> {
        let (_, attrs) = genl::split(m)?;
        attrs.find(ATTR_WIPHY)?.map(|a| a.u32()).transpose()
    }
}

/// An interface (`NL80211_CMD_NEW_INTERFACE`).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct InterfaceInfo {
    pub ifindex: u32,
    pub ifname: String,
    pub wiphy: u32,
    pub iftype: u32,
    pub mac: Option<[u8; 6]>,
    pub wdev: Option<u64>,
    pub freq_mhz: Option<u32>,
}

impl InterfaceInfo {
    pub fn encode(&self, req: &Msg, family: u16, multi: bool) -> Msg {
        let mut w = genl::writer(CMD_NEW_INTERFACE, 1);
        w.u32(ATTR_IFINDEX, self.ifindex).str(ATTR_IFNAME, &self.ifname).u32(ATTR_WIPHY, self.wiphy).u32(ATTR_IFTYPE, self.iftype);
        if let Some(wd) = self.wdev {
            w.u64_aligned(ATTR_WDEV, wd, ATTR_PAD);
        }
        if let Some(m) = &self.mac {
            w.bytes(ATTR_MAC, m);
        }
        w.u32(ATTR_GENERATION, 1);
        if let Some(f) = self.freq_mhz {
            w.u32(ATTR_WIPHY_FREQ, f);
        }
        Msg { ty: family, flags: if multi { NLM_F_MULTI } else { 0 }, seq: req.seq, pid: req.pid, payload: w.finish() }
    }

    pub fn decode(m: &Msg) -> Result<InterfaceInfo, String> {
        let (h, attrs) = genl::split(m)?;
        if h.cmd != CMD_NEW_INTERFACE {
            return Err(format!("nl80211 command {} where NEW_INTERFACE was expected", h.cmd));
        }
        let mut i = InterfaceInfo::default();
        for a in attrs {
            let a = a?;
            match a.ty {
                ATTR_IFINDEX => i.ifindex = a.u32()?,
                ATTR_IFNAME => i.ifname = a.str()?.to_string(),
                ATTR_WIPHY => i.wiphy = a.u32()?,
                ATTR_IFTYPE => i.iftype = a.u32()?,
                ATTR_MAC => i.mac = Some(mac(&a)?),
                ATTR_WDEV => i.wdev = Some(a.u64()?),
                ATTR_WIPHY_FREQ => i.freq_mhz = Some(a.u32()?),
                _ => {}
            }
        }
        Ok(i)
    }
}

/// The aggregation extension's answer: per station, (MAC, mean MPDUs per A-MPDU, capacity).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Aggregation {
    pub stations: Vec<AggStation>,
}

#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct AggStation {
    pub mac: [u8; 6],
    /// Mean MPDUs per A-MPDU since the previous query.
    pub mean: f64,
    /// Most full-size MPDUs one A-MPDU at the current rate holds.
    pub capacity: u32,
    pub ppdus: u64,
    /// The station's IPv4 address where the AP knows it (the emulator does; a real AP's
    /// neighbour table says it instead).
    pub ipv4: Option<std::net::Ipv4Addr>,
}

impl Aggregation {
    pub fn encode(&self, req: &Msg, family: u16, wiphy: u32) -> Msg {
        let mut w = genl::writer(CMD_VENDOR, 1);
        w.u32(ATTR_WIPHY, wiphy);
        w.begin(ATTR_VENDOR_DATA, false);
        for s in &self.stations {
            w.begin(AGG_STATION, false);
            w.bytes(AGG_MAC, &s.mac).u32(AGG_MEAN_MILLI, (s.mean * 1000.0).round().clamp(0.0, u32::MAX as f64) as u32).u32(AGG_CAPACITY, s.capacity).u64_aligned(AGG_PPDUS, s.ppdus, AGG_PAD);
            if let Some(a) = s.ipv4 {
                w.bytes(AGG_IPV4, &a.octets());
            }
            w.end();
        }
        w.end();
        Msg { ty: family, flags: 0, seq: req.seq, pid: req.pid, payload: w.finish() }
    }

    pub fn decode(m: &Msg) -> Result<Aggregation, String> {
        let (h, attrs) = genl::split(m)?;
        if h.cmd != CMD_VENDOR {
            return Err(format!("nl80211 command {} where VENDOR was expected", h.cmd));
        }
        let mut out = Aggregation::default();
        let Some(data) = attrs.find(ATTR_VENDOR_DATA)? else { return Ok(out) };
        for st in data.nested() {
            let st = st?;
            if st.ty != AGG_STATION {
                continue;
            }
            let mut s = AggStation::default();
            for x in st.nested() {
                let x = x?;
                match x.ty {
                    AGG_MAC => s.mac = mac(&x)?,
                    AGG_MEAN_MILLI => s.mean = x.u32()? as f64 / 1000.0,
                    AGG_CAPACITY => s.capacity = x.u32()?,
                    AGG_PPDUS => s.ppdus = x.u64()?,
                    AGG_IPV4 => s.ipv4 = Some(std::net::Ipv4Addr::from(x.u32()?.to_ne_bytes())),
                    _ => {}
                }
            }
            out.stations.push(s);
        }
        Ok(out)
    }
}

// ------------------------------------------------------------------ requests (daemon side)

fn request(family: u16, cmd: u8, dump: bool, seq: u32, attrs: impl FnOnce(&mut AttrWriter)) -> Msg {
    let mut w = genl::writer(cmd, 0);
    attrs(&mut w);
    let flags = NLM_F_REQUEST | if dump { NLM_F_DUMP } else { NLM_F_ACK };
    Msg::new(family, flags, seq, w.finish())
}

pub fn get_interface(family: u16, ifindex: u32, seq: u32) -> Msg {
    request(family, CMD_GET_INTERFACE, false, seq, |w| {
        w.u32(ATTR_IFINDEX, ifindex);
    })
}
pub fn dump_interfaces(family: u16, seq: u32) -> Msg {
    request(family, CMD_GET_INTERFACE, true, seq, |_| {})
}
/// A split wiphy dump, of one phy if `wiphy` is given.
pub fn dump_wiphy(family: u16, wiphy: Option<u32>, seq: u32) -> Msg {
    request(family, CMD_GET_WIPHY, true, seq, |w| {
        w.flag(ATTR_SPLIT_WIPHY_DUMP);
        if let Some(p) = wiphy {
            w.u32(ATTR_WIPHY, p);
        }
    })
}
pub fn dump_stations(family: u16, ifindex: u32, seq: u32) -> Msg {
    request(family, CMD_GET_STATION, true, seq, |w| {
        w.u32(ATTR_IFINDEX, ifindex);
    })
}
pub fn dump_survey(family: u16, ifindex: u32, seq: u32) -> Msg {
    request(family, CMD_GET_SURVEY, true, seq, |w| {
        w.u32(ATTR_IFINDEX, ifindex);
    })
}
pub fn set_txq_limit(family: u16, wiphy: u32, limit: u32, seq: u32) -> Msg {
    request(family, CMD_SET_WIPHY, false, seq, |w| {
        w.u32(ATTR_WIPHY, wiphy).u32(ATTR_TXQ_LIMIT, limit);
    })
}
pub fn vendor_aggregation(family: u16, ifindex: u32, seq: u32) -> Msg {
    request(family, CMD_VENDOR, false, seq, |w| {
        w.u32(ATTR_IFINDEX, ifindex).u32(ATTR_VENDOR_ID, LASTHOP_VENDOR_ID).u32(ATTR_VENDOR_SUBCMD, VENDOR_SUBCMD_AGGREGATION);
    })
}

// ------------------------------------------------------------------ requests (kernel side)

/// A request as the emulator's AP host understands it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Request {
    GetInterface { ifindex: Option<u32>, dump: bool },
    GetWiphy { wiphy: Option<u32>, ifindex: Option<u32>, dump: bool },
    /// `SET_WIPHY`: the TXQ limit if given; `others` lists any other attribute types present
    /// (the emulator changes nothing else and refuses them).
    SetWiphy { wiphy: Option<u32>, ifindex: Option<u32>, txq_limit: Option<u32>, others: Vec<u16> },
    GetStation { ifindex: Option<u32>, mac: Option<[u8; 6]>, dump: bool },
    GetSurvey { ifindex: Option<u32> },
    Vendor { ifindex: Option<u32>, wiphy: Option<u32>, vendor_id: u32, subcmd: u32 },
    Other { cmd: u8 },
}

impl Request {
    pub fn parse(m: &Msg) -> Result<Request, String> {
        let (GenlHdr { cmd, .. }, attrs) = genl::split(m)?;
        let dump = m.flags & NLM_F_DUMP == NLM_F_DUMP;
        let u32_of = |ty| -> Result<Option<u32>, String> { attrs.find(ty)?.map(|a| a.u32()).transpose() };
        Ok(match cmd {
            CMD_GET_INTERFACE => Request::GetInterface { ifindex: u32_of(ATTR_IFINDEX)?, dump },
            CMD_GET_WIPHY => Request::GetWiphy { wiphy: u32_of(ATTR_WIPHY)?, ifindex: u32_of(ATTR_IFINDEX)?, dump },
            CMD_SET_WIPHY => {
                let mut others = Vec::new();
                for a in attrs.clone() {
                    let a = a?;
                    if !matches!(a.ty, ATTR_WIPHY | ATTR_IFINDEX | ATTR_TXQ_LIMIT) {
                        others.push(a.ty);
                    }
                }
                Request::SetWiphy { wiphy: u32_of(ATTR_WIPHY)?, ifindex: u32_of(ATTR_IFINDEX)?, txq_limit: u32_of(ATTR_TXQ_LIMIT)?, others }
            }
            CMD_GET_STATION => Request::GetStation { ifindex: u32_of(ATTR_IFINDEX)?, mac: attrs.find(ATTR_MAC)?.map(|a| mac(&a)).transpose()?, dump },
            CMD_GET_SURVEY => Request::GetSurvey { ifindex: u32_of(ATTR_IFINDEX)? },
            CMD_VENDOR => Request::Vendor {
                ifindex: u32_of(ATTR_IFINDEX)?,
                wiphy: u32_of(ATTR_WIPHY)?,
                vendor_id: u32_of(ATTR_VENDOR_ID)?.unwrap_or(0),
                subcmd: u32_of(ATTR_VENDOR_SUBCMD)?.unwrap_or(0),
            },
            cmd => Request::Other { cmd },
        })
    }
}

/// Attributes of a message, for tests and tools that print what they saw.
pub fn attrs_of(m: &Msg) -> Result<Attrs<'_>, String> {
    Ok(genl::split(m)?.1)
}

#[cfg(test)]
mod tests;
