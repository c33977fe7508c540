//! The spec's value lists, each an enum with one name table: the spec reader takes its choices
//! and writes its "allowed" messages from the table, the normalized spec carries the names
//! (serde reads and writes them), the world matches on the variants, and Python reads the
//! tables (`_native.spec_names`). The standard, band, access category and ECN mode are the
//! model crates' own enums, named here by their tables.

use lasthop_algo::ecn::EcnMode;
use lasthop_wifi::mac::edca::AccessCategory;
use lasthop_wifi::phy::{Band, Standard};

/// An enum whose variants are written by name in specs: `Kind::NAMES[v as usize]` is variant
/// `v`'s name, `Kind::ALL` the variants in the same order.
macro_rules! named {
    ($(#[$m:meta])* pub enum $e:ident { $($(#[$vm:meta])* $v:ident = $n:literal),+ $(,)? }) => {
        $(#[$m])*
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
        pub enum $e { $($(#[$vm])* $v),+ }

        impl $e {
            pub const ALL: &'static [$e] = &[$($e::$v),+];
            pub const NAMES: &'static [&'static str] = &[$($n),+];
            pub const fn as_str(self) -> &'static str {
                Self::NAMES[self as usize]
            }
            pub fn from_name(s: &str) -> Option<Self> {
                Self::NAMES.iter().position(|n| *n == s).map(|i| Self::ALL[i])
            }
        }

        impl Named for $e {
            const ALL: &'static [$e] = $e::ALL;
            const NAMES: &'static [&'static str] = $e::NAMES;
        }

        impl std::fmt::Display for $e {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str(self.as_str())
            }
        }

        impl serde::Serialize for $e {
            fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                s.serialize_str(self.as_str())
            }
        }

        impl<'de> serde::Deserialize<'de> for $e {
            fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
                d.deserialize_str(ByName(Self::from_name, Self::NAMES))
            }
        }
    };
}

/// A value list: its variants and their names, in the same order.
pub trait Named: Copy + PartialEq + 'static {
    const ALL: &'static [Self];
    const NAMES: &'static [&'static str];
}

/// A serde visitor of one name of `names`, read by `from`.
struct ByName<T>(fn(&str) -> Option<T>, &'static [&'static str]);

impl<T> serde::de::Visitor<'_> for ByName<T> {
    type Value = T;
    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "one of {:?}", self.1)
    }
    fn visit_str<E: serde::de::Error>(self, s: &str) -> Result<T, E> {
        (self.0)(s).ok_or_else(|| E::unknown_variant(s, self.1))
    }
}

named! {
    /// `ap.qdisc`, `wired.qdisc`, `stations[].qdisc`: the queue disciplines.
    pub enum Qdisc { Fifo = "fifo", Codel = "codel", Pie = "pie", FqCodel = "fq_codel", DualPi2 = "dualpi2" }
}

named! {
    /// `ap.driver`: "pull" and "ath9k" build aggregates from the station queues (ath9k with
    /// its own stage of up to 123 frames per access category); "firmware" and "mt76" move
    /// frames into per-station hardware queues first ([`Driver::hardware_queue`]).
    pub enum Driver { Pull = "pull", Ath9k = "ath9k", Firmware = "firmware", Mt76 = "mt76" }
}

impl Driver {
    /// Whether frames wait in the hardware below mac80211's station queues (`hw_queue_limit`,
    /// AQL; aggregates built from the hardware's per-station queues).
    pub const fn hardware_queue(self) -> bool {
        matches!(self, Driver::Firmware | Driver::Mt76)
    }
}

named! {
    /// `ap.scheduler`: how the AP's station queues take turns.
    pub enum Scheduler { RoundRobin = "round_robin", Airtime = "airtime" }
}

named! {
    /// `ap.fq_aqm`: the AQM inside mac80211's flow queue (`qdisc = "fq_codel"`): CoDel per flow,
    /// as mac80211 has it, or DualPI2's coupled AQM per station queue
    /// (`lasthop_algo::aqm::FlowAqm`).
    pub enum FqAqm { Codel = "codel", DualPi2 = "dualpi2" }
}

named! {
    /// `ap.buffer_sizer`: none, or WQM sizing the interface queue.
    pub enum BufferSizer { Off = "none", Wqm = "wqm" }
}

named! {
    /// `ap.wqm_variant`: the WQM paper's AIMD and its variants.
    pub enum WqmVariant { Aimd = "aimd", Aiad = "aiad", Miad = "miad", Mimd = "mimd" }
}

named! {
    /// `mac.rx_delivery`: when a receiver hands up an A-MPDU's MPDUs.
    pub enum RxDelivery { Subframe = "subframe", Ppdu = "ppdu" }
}

named! {
    /// `mac.ampdu_formation`: when an A-MPDU's new frames are chosen — at channel access from
    /// everything queued (ns-3's), or when the driver hands the A-MPDU to its hardware queue,
    /// at most two ahead, as ath9k (`lasthop_wifi::mac::formation`).
    pub enum AmpduFormation { Access = "access", Ath9k = "ath9k" }
}

named! {
    /// `mac.ofdma.scheduler`: who shares a DL MU PPDU and on which resource units — the AP's
    /// queues in their service order ("txq", mac80211's airtime and AQL through the driver), or
    /// ns-3's RrMultiUserScheduler ("rr": credits, equal RUs), for validation.
    pub enum MuScheduler { Txq = "txq", RoundRobin = "rr" }
}

named! {
    /// `mac.ofdma.ack`: how a DL MU PPDU's Block Acks come back — a MU-BAR Trigger frame in each
    /// user's A-MPDU and the Block Acks together in an HE TB PPDU ("mu-bar"), or one Block Ack
    /// after SIFS and a BlockAckReq/BlockAck exchange for each further user ("bar-ba").
    pub enum MuAck { MuBar = "mu-bar", BarBa = "bar-ba" }
}

named! {
    /// `stations[].error_model`.
    pub enum ErrorModel { Off = "none", Fixed = "fixed", Snr = "snr" }
}

named! {
    /// `stations[].rate_control`.
    pub enum RateControl { Fixed = "fixed", Ideal = "ideal", Minstrel = "minstrel" }
}

named! {
    /// `channel.path_loss`: a single slope, or a TGn dual-slope model.
    pub enum PathLoss {
        LogDistance = "log_distance", TgnA = "tgn_a", TgnB = "tgn_b", TgnC = "tgn_c", TgnD = "tgn_d", TgnE = "tgn_e",
        TgnF = "tgn_f",
    }
}

named! {
    /// `channel.fading.model`: Clarke's Rayleigh fading, or Rician with a line of sight
    /// (`lasthop_wifi::phy::fading`).
    pub enum FadingModel { Rayleigh = "rayleigh", Rician = "rician" }
}

named! {
    /// `flows[].direction`: "cross" is traffic on the wired path only, consumed at the AP.
    pub enum Direction { Down = "down", Up = "up", Cross = "cross" }
}

named! {
    /// `flows[].pattern`; `External` (last) is a real-time host's flow (`world/hosts/ext.rs`),
    /// never written in a spec.
    pub enum Pattern {
        Cbr = "cbr", Poisson = "poisson", Saturated = "saturated", Tcp = "tcp", Ping = "ping", Quic = "quic",
        Aggctl = "aggctl", External = "external",
    }
}

impl Pattern {
    /// The patterns a spec may ask for: all but `External`.
    pub fn spec_names() -> &'static [&'static str] {
        &Self::NAMES[..Self::NAMES.len() - 1]
    }
}

named! {
    /// `flows[].cc`, `flows[].split_wired_cc`: the TCP congestion controllers.
    pub enum Cc { NewReno = "newreno", Cubic = "cubic", Bbr = "bbr", Dctcp = "dctcp", Prague = "prague" }
}

impl Cc {
    /// The controller with its defaults.
    pub fn config(self) -> lasthop_algo::cc::CcConfig {
        use lasthop_algo::cc::*;
        match self {
            Cc::NewReno => CcConfig::NewReno(NewRenoConfig::default()),
            Cc::Cubic => CcConfig::Cubic(CubicConfig::default()),
            Cc::Bbr => CcConfig::Bbr(BbrConfig::default()),
            Cc::Dctcp => CcConfig::Dctcp(DctcpConfig::default()),
            Cc::Prague => CcConfig::Prague(PragueConfig::default()),
        }
    }
}

named! {
    /// `flows[].app` (TCP).
    pub enum App { Bulk = "bulk", RequestResponse = "request_response" }
}

named! {
    /// `flows[].profile` (QUIC): TCP_ACKING with pacing, or Bursty QUIC.
    pub enum Profile { Quic = "quic", Bquic = "bquic" }
}

named! {
    /// `flows[].reconnect` (QUIC): a full handshake, or a resumed connection.
    pub enum Reconnect { OneRtt = "1rtt", ZeroRtt = "0rtt" }
}

named! {
    /// `flows[].history` (QUIC): the server's congestion-window history.
    pub enum History { Off = "none", Mean = "mean", Ewma = "ewma" }
}

named! {
    /// `flows[].history_guard` (QUIC).
    pub enum HistoryGuard { Off = "none", Rtt = "rtt" }
}

named! {
    /// `flows[].history_events` (QUIC): where the server observes its window. "close_0rtt": at
    /// close and at a 0-RTT client hello (§4's prose); "close_every_hello": also at the
    /// complete client hello of every 1-RTT handshake (Algorithm 1 as proto-quic calls it).
    pub enum HistoryEvents { Close0Rtt = "close_0rtt", EveryHello = "close_every_hello" }
}

/// The names of the model crates' enums the spec uses, each from that enum's own table.
pub fn standard_names() -> Vec<&'static str> {
    Standard::ALL.iter().map(|s| s.name()).collect()
}

/// A band as specs write it: "2.4GHz", "5GHz", "6GHz".
pub fn band_name(b: Band) -> String {
    format!("{}GHz", b.name())
}

/// Inverse of [`band_name`].
pub fn band_from_name(s: &str) -> Option<Band> {
    Band::from_name(s.strip_suffix("GHz")?)
}

pub fn ecn_name(m: EcnMode) -> &'static str {
    EcnMode::NAMES.iter().find(|n| n.1 == m).map_or("off", |n| n.0)
}

pub fn ecn_names() -> Vec<&'static str> {
    EcnMode::NAMES.iter().map(|n| n.0).collect()
}

/// serde of the model crates' enums by their names (`#[serde(with = "names::standard")]`).
macro_rules! by_name {
    ($m:ident, $t:ty, $name:expr, $from:expr, $what:literal) => {
        pub mod $m {
            use super::*;
            pub fn serialize<S: serde::Serializer>(v: &$t, s: S) -> Result<S::Ok, S::Error> {
                s.serialize_str(&$name(*v))
            }
            pub fn deserialize<'de, D: serde::Deserializer<'de>>(d: D) -> Result<$t, D::Error> {
                let s = <std::borrow::Cow<'de, str> as serde::Deserialize>::deserialize(d)?;
                $from(&s).ok_or_else(|| serde::de::Error::custom(format!(concat!("unknown ", $what, " {:?}"), s)))
            }
        }
    };
}

by_name!(standard, Standard, Standard::name, Standard::from_name, "standard");
by_name!(band, Band, band_name, band_from_name, "band");
by_name!(access_category, AccessCategory, AccessCategory::name, AccessCategory::parse, "access category");
by_name!(ecn, EcnMode, ecn_name, EcnMode::from_name, "ECN mode");

/// `Option<AccessCategory>` by name (`flows[].ac`).
pub mod access_category_opt {
    use super::*;
    pub fn serialize<S: serde::Serializer>(v: &Option<AccessCategory>, s: S) -> Result<S::Ok, S::Error> {
        match v {
            Some(ac) => s.serialize_str(ac.name()),
            None => s.serialize_none(),
        }
    }
    pub fn deserialize<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<AccessCategory>, D::Error> {
        let s = <Option<std::borrow::Cow<'de, str>> as serde::Deserialize>::deserialize(d)?;
        s.map(|s| AccessCategory::parse(&s).ok_or_else(|| serde::de::Error::custom(format!("unknown access category {s:?}"))))
            .transpose()
    }
}

/// Every value list by its key, as `_native.spec_names` hands them to Python.
pub fn tables() -> Vec<(&'static str, Vec<String>)> {
    let ac: Vec<&str> = AccessCategory::ALL.iter().map(|a| a.name()).collect();
    let bands = Band::ALL.iter().map(|&b| band_name(b)).collect();
    let lists: Vec<(&str, Vec<&str>)> = vec![
        ("phy.standard", standard_names()),
        ("mac.access_category", ac),
        ("mac.rx_delivery", RxDelivery::NAMES.to_vec()),
        ("mac.ampdu_formation", AmpduFormation::NAMES.to_vec()),
        ("mac.ofdma.scheduler", MuScheduler::NAMES.to_vec()),
        ("mac.ofdma.ack", MuAck::NAMES.to_vec()),
        ("ap.scheduler", Scheduler::NAMES.to_vec()),
        ("ap.qdisc", Qdisc::NAMES.to_vec()),
        ("ap.driver", Driver::NAMES.to_vec()),
        ("ap.fq_aqm", FqAqm::NAMES.to_vec()),
        ("ap.buffer_sizer", BufferSizer::NAMES.to_vec()),
        ("ap.wqm_variant", WqmVariant::NAMES.to_vec()),
        ("ap.pie_estimator", super::PIE_ESTIMATORS.iter().map(|e| e.0).collect()),
        ("ap.ack_filter", super::ACK_FILTERS.to_vec()),
        ("ap.qdisc_scope", super::QDISC_SCOPES.to_vec()),
        ("ap.rts", lasthop_wifi::mac::exchange::RtsPolicy::NAMES.to_vec()),
        ("channel.path_loss", PathLoss::NAMES.to_vec()),
        ("stations.error_model", ErrorModel::NAMES.to_vec()),
        ("stations.rate_control", RateControl::NAMES.to_vec()),
        ("stations.rts", lasthop_wifi::mac::exchange::RtsPolicy::NAMES.to_vec()),
        ("flows.direction", Direction::NAMES.to_vec()),
        ("flows.pattern", Pattern::spec_names().to_vec()),
        ("flows.cc", Cc::NAMES.to_vec()),
        ("flows.ecn", ecn_names()),
        ("flows.hystart", super::HYSTARTS.to_vec()),
        ("flows.app", App::NAMES.to_vec()),
        ("flows.profile", Profile::NAMES.to_vec()),
        ("flows.reconnect", Reconnect::NAMES.to_vec()),
        ("flows.history", History::NAMES.to_vec()),
        ("flows.history_guard", HistoryGuard::NAMES.to_vec()),
        ("flows.history_events", HistoryEvents::NAMES.to_vec()),
    ];
    let mut out: Vec<(&str, Vec<String>)> = lists.into_iter().map(|(k, v)| (k, v.into_iter().map(str::to_owned).collect())).collect();
    out.insert(1, ("phy.band", bands));
    out
}
