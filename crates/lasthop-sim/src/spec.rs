//! The normalized scenario spec (docs/spec.md), as the spec reader builds it (`spec_in`, which
//! checks structure, types, units, each key's range and the rules between keys and fills
//! defaults) and as its canonical JSON reads back (`Spec::from_json`; `spec_in::normalize::
//! spec_json` writes it), and the rules across keys it must satisfy
//! ([`Spec::problems`]: the 802.11 rules that need the PHY tables and the rules between
//! sections), so no invalid world is ever built. A normalized spec that did not come through
//! the reader is checked key by key first (`spec/ranges.rs`, [`Spec::json_problems`]).

use lasthop_wifi::mac::edca::AccessCategory;
use lasthop_wifi::mac::exchange::RtsPolicy;
use lasthop_wifi::phy::{self, Band, Standard, TxVector};
use serde::{Deserialize, Serialize};

mod aggctl;
mod ap;
mod choices;
mod flow;
pub mod names;
pub mod ranges;
mod rules;
pub use rules::utility_of;
use rules::{ac_problem, vwire_flow_problems, vwire_problems};
pub use choices::{ecn_mismatch, ecn_mismatch_in, hystart_variant, ACK_FILTERS, QDISC_SCOPES, HYSTARTS, PACERS, SEND_BUFFERS, TSOS, AIFSN_MIN_AP, AIFSN_MIN_STA, QUIC_CONGESTION_CONTROLS, TXOP_MAX_NS, TXOP_UNIT_NS};
use choices::{edca_key_problems, edca_problems};
pub use names::{AmpduFormation, App, BufferSizer, Cc, Direction, Driver, ErrorModel, FadingModel, FqAqm, History, HistoryEvents, HistoryGuard, MuAck, MuScheduler, PathLoss, Pattern, Profile, Qdisc, RateControl, Reconnect, RxDelivery, Scheduler, WqmVariant};
use lasthop_algo::ecn::EcnMode;
pub use aggctl::AggctlSpec;
pub use flow::FlowSpec;
use flow::{quic_flow_problems, tcp_flow_problems};
pub use ap::{drivers_text, pull_drivers_text, ApSpec, ATH9K_QDEPTH, MAX_DEQUEUE_COST_NS, PIE_ESTIMATORS};

#[derive(Clone, Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct Spec {
    #[serde(default)]
    pub name: String,
    #[serde(default)]
    pub description: String,
    pub sim: SimSpec,
    pub phy: PhySpec,
    pub mac: MacSpec,
    pub ap: ApSpec,
    pub wired: WiredSpec,
    pub stations: Vec<StationSpec>,
    #[serde(default)]
    pub flows: Vec<FlowSpec>,
    #[serde(default)]
    pub channel: ChannelSpec,
    /// The aggctl rate allocator and receivers shared by every `pattern = "aggctl"` flow.
    #[serde(default)]
    pub aggctl: AggctlSpec,
    /// The Virtual Wires proxy at the AP (`world/hosts/vwire.rs`); None (no `[vwire]`): its
    /// defaults, off ([`Spec::vwire`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub vwire: Option<VwireSpec>,
    /// How the emulator lays the cell out (`lasthop emu`); ignored by the simulator. None (no
    /// `[emu]`): its defaults.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub emu: Option<EmuSpec>,
}

/// `[emu]`: the emulator's topology options (docs/emu.md).
#[derive(Clone, Debug, Default, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct EmuSpec {
    /// A namespace for the AP between the wired link and the cell, routing between its `eth0`
    /// and `wlan0`, so real AP software sees every packet (docs/emu.md, "AP host").
    #[serde(default)]
    pub ap_host: bool,
}

/// `[vwire]`: the split proxy's buffers and the Virtual Wires allocation loop (docs/spec.md).
#[derive(Clone, Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct VwireSpec {
    /// Classifier → optimizer → token scheduler on the split flows; false = split only.
    pub enabled: bool,
    /// Feedback period (the paper's 2 s).
    pub period_ns: u64,
    /// L_i = the station's current downlink PHY rate × this.
    pub efficiency: f64,
    /// Relay buffer per split flow: bytes received in order from the server and not yet
    /// acknowledged by the station (the wired-side receive window closes when it is full).
    pub relay_buffer_bytes: u64,
    /// WiFi-side socket send buffer (unacknowledged + unsent), part of the relay buffer.
    pub sndbuf_bytes: u64,
    /// TCP small queues of the WiFi-side sender: `tcp_limit_output_bytes`, the cap of its
    /// rate-based limit (bytes in the AP's queues and MAC) when it does not pace itself.
    pub tsq_bytes: u64,
    /// Send-buffer backlog sampling interval of the bottleneck detector.
    pub sample_ns: u64,
    /// Serve flows beyond their allocation when no flow holding tokens waits.
    pub work_conserving: bool,
    /// The proxy's `TCP_WINDOW_CLAMP` (bytes; 0 = none): the most the WiFi-side socket of a split
    /// upload advertises to the station, whatever room its buffer has. Written only when set.
    #[serde(default, skip_serializing_if = "is_zero_u64")]
    pub window_clamp_bytes: u64,
}

fn is_zero_u64(v: &u64) -> bool {
    *v == 0
}

impl Default for VwireSpec {
    fn default() -> Self {
        VwireSpec {
            enabled: false,
            period_ns: 2_000_000_000,
            efficiency: 0.75,
            relay_buffer_bytes: 4 << 20,
            sndbuf_bytes: 256 << 10,
            tsq_bytes: 1 << 20,
            sample_ns: 10_000_000,
            work_conserving: true,
            window_clamp_bytes: 0,
        }
    }
}

/// A utility function of goodput for the vwire optimizer (normalized JSON:
/// `{"step": [[rate_bps, utility], ...]}` or `{"log": weight}`).
#[derive(Clone, Debug, Deserialize, Serialize, PartialEq)]
#[serde(rename_all = "lowercase")]
pub enum UtilitySpec {
    Step(Vec<(f64, f64)>),
    Log(f64),
}

/// The large-scale channel used by stations placed at a distance (`lasthop_wifi::phy::channel`).
#[derive(Clone, Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct ChannelSpec {
    /// "log_distance" (single slope `exponent`) or "tgn_a" … "tgn_f" (TGn dual slope).
    pub path_loss: PathLoss,
    pub exponent: f64,
    pub tx_power_dbm: f64,
    pub noise_figure_db: f64,
    /// Bursts of interference from outside the cell (`[channel.interference]`); none when absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub interference: Option<InterferenceSpec>,
    /// Small-scale fading on every link whose errors follow its SNR (`[channel.fading]`); none
    /// when absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fading: Option<FadingSpec>,
}

/// `[channel.fading]`: each link whose errors follow its SNR fades around that SNR, Rayleigh
/// (Clarke's model) or Rician, at Doppler spread `doppler_hz` (`lasthop_wifi::phy::fading`).
#[derive(Clone, Debug, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct FadingSpec {
    pub model: names::FadingModel,
    /// Maximum Doppler shift, Hz (the coherence time is about 0.423 / f_d).
    pub doppler_hz: f64,
    /// Rician K-factor, dB (line-of-sight power over scattered power); Rician only.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub k_db: Option<f64>,
}

impl FadingSpec {
    /// The PHY's fading model (a Rician spec without its K-factor is refused before a run).
    pub fn phy_model(&self) -> lasthop_wifi::phy::fading::FadingModel {
        use lasthop_wifi::phy::fading::FadingModel as M;
        match (self.model, self.k_db) {
            (names::FadingModel::Rician, Some(k)) => M::Rician { k: 10f64.powf(k / 10.0) },
            _ => M::Rayleigh,
        }
    }
}

/// `[channel.interference]`: an interferer the cell's nodes do not sense (a hidden or
/// non-802.11 transmitter), on for bursts and off between them, each duration exponential
/// with its mean; during a burst every receiver of the cell sees interference `inr_db` above
/// its noise floor, so a frame that overlaps one is received at SINR = SNR − 10·log10(1 +
/// 10^(INR/10)) (`world/interference.rs`).
#[derive(Clone, Debug, Deserialize, Serialize, PartialEq)]
pub struct InterferenceSpec {
    /// Mean burst length, ns.
    pub on_ns: u64,
    /// Mean gap between bursts, ns.
    pub off_ns: u64,
    /// Interference-to-noise ratio at a receiver during a burst, dB.
    pub inr_db: f64,
}

impl Default for ChannelSpec {
    fn default() -> Self {
        use lasthop_wifi::phy::channel::*;
        ChannelSpec {
            path_loss: names::PathLoss::LogDistance,
            exponent: DEFAULT_EXPONENT,
            tx_power_dbm: DEFAULT_TX_POWER_DBM,
            noise_figure_db: DEFAULT_NOISE_FIGURE_DB,
            interference: None,
            fading: None,
        }
    }
}

#[derive(Clone, Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct SimSpec {
    pub duration_ns: u64,
    pub warmup_ns: u64,
    pub seed: u64,
    pub bin_ns: u64,
}

#[derive(Clone, Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct PhySpec {
    #[serde(with = "names::standard")]
    pub standard: Standard,
    #[serde(with = "names::band")]
    pub band: Band,
    pub channel_width: u16,
    pub guard_interval: u16,
    pub control_rate_bps: u64,
}

#[derive(Clone, Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct MacSpec {
    pub aggregation: bool,
    pub max_ampdu_mpdus: u32,
    pub max_ampdu_bytes: u32,
    pub max_ppdu_time_ns: u64,
    pub retry_limit: u32,
    pub beacon_interval_ns: u64,
    #[serde(with = "names::access_category")]
    pub access_category: AccessCategory,
    pub cw_min: Option<u32>,
    pub cw_max: Option<u32>,
    pub aifsn: Option<u32>,
    /// Bystanders defer EIFS after a collision (as if they had locked onto one of the colliding
    /// preambles). Off by default: equal-power colliders leave a SINR near 0 dB, below
    /// preamble detection, so there is no PHY-RXSTART and the EIFS rule (§10.3.2.3.7) does not
    /// apply; the medium is then only energy-busy and DIFS/AIFS follows.
    #[serde(default)]
    pub eifs_after_collision: bool,
    /// A-MPDU aggregation only at PHY rates above this (bit/s); below or at it every frame
    /// goes alone. 0 = no threshold. ath9k sends single frames at 6.5 Mb/s (WQM paper §IV-B).
    #[serde(default)]
    pub aggregation_min_rate_bps: u64,
    /// Largest A-MSDU (frame body octets) an MPDU carries; 0 = one MSDU per MPDU.
    #[serde(default)]
    pub max_amsdu_bytes: u32,
    /// When a receiver hands the MPDUs of an A-MPDU up: "subframe" (each at the end of the
    /// symbol carrying its last octet, once its FCS checks, as ns-3's PHY does) or "ppdu" (all
    /// at the end of the PPDU, as a NIC that raises one receive interrupt per A-MPDU).
    #[serde(default = "default_rx_delivery")]
    pub rx_delivery: RxDelivery,
    /// When an A-MPDU's new frames are chosen ([`AmpduFormation`]): at channel access, or as
    /// ath9k forms them, when handed to the hardware (every radio of the cell). Written only
    /// when not "access".
    #[serde(default = "default_ampdu_formation", skip_serializing_if = "is_default_ampdu_formation")]
    pub ampdu_formation: AmpduFormation,
    /// The TXOP limit of `mac.access_category` in the EDCA Parameter Set the AP advertises
    /// (hostapd's `wmm_ac_*_txop_limit`, units of 32 µs); None: Table 9-155's (0 for BE and
    /// BK: one frame exchange per TXOP).
    #[serde(default)]
    pub txop_limit_ns: Option<u64>,
    /// 802.11ax downlink OFDMA (`[mac.ofdma]`); None: every PPDU carries one receiver's frames.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ofdma: Option<OfdmaSpec>,
}

/// `[mac.ofdma]`: the AP sends DL MU PPDUs (IEEE 802.11ax-2021 §26.5, HE only).
#[derive(Clone, Copy, Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct OfdmaSpec {
    pub dl: bool,
    /// UL OFDMA: Basic Trigger frames, HE TB PPDUs, Multi-STA Block Ack.
    pub ul: bool,
    pub scheduler: MuScheduler,
    /// Most stations in one DL MU PPDU or one trigger (ns-3's `NStations`).
    pub max_users: u32,
    pub ack: MuAck,
    /// The MU EDCA parameters of `mac.access_category` a triggered station uses until its MU
    /// EDCA timer expires (timer 0: not used); AIFSN 0 disables its EDCA access meanwhile
    /// (§9.4.2.245), so it sends only in HE TB PPDUs.
    pub mu_edca_aifsn: u32,
    pub mu_edca_cw_min: u32,
    pub mu_edca_cw_max: u32,
    pub mu_edca_timer_ns: u64,
}

fn default_qdisc() -> Qdisc {
    Qdisc::Fifo
}

fn default_rx_delivery() -> RxDelivery {
    RxDelivery::Subframe
}

fn default_ampdu_formation() -> AmpduFormation {
    AmpduFormation::Access
}

fn is_default_ampdu_formation(f: &AmpduFormation) -> bool {
    *f == AmpduFormation::Access
}

#[derive(Clone, Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct WiredSpec {
    pub rate_bps: u64,
    pub delay_ns: u64,
    /// Packets that may wait behind the one being serialised (the discipline's packet limit).
    pub queue_limit: u32,
    pub loss: f64,
    /// Random loss of the uplink direction (station → server) if different from `loss`.
    #[serde(default)]
    pub loss_up: Option<f64>,
    /// Queue discipline in front of the serialiser, per direction: "fifo" (tail drop, departures
    /// computed at arrival), "codel", "pie", "fq_codel" (RFC defaults, as `ap.qdisc`).
    #[serde(default = "default_qdisc")]
    pub qdisc: Qdisc,
    /// The server's NIC rate in bit/s (`wired.server_nic`); None: [`WiredSpec::server_nic_bps`]'s
    /// default. A server-side TCP sender's bytes count against TCP small queues until this NIC
    /// has sent them; the wired link's queue is the path's, not the server's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub server_nic_bps: Option<u64>,
}

/// The server's NIC when a spec does not name one: a 10 Gb/s interface, or the wired link's
/// rate where that is faster.
pub const DEFAULT_SERVER_NIC_BPS: u64 = 10_000_000_000;

impl WiredSpec {
    /// The rate of the server's NIC in bit/s.
    pub fn server_nic_bps(&self) -> u64 {
        self.server_nic_bps.unwrap_or(self.rate_bps.max(DEFAULT_SERVER_NIC_BPS))
    }
}

#[derive(Clone, Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct StationSpec {
    pub mcs: u8,
    pub nss: u8,
    pub error_model: ErrorModel,
    pub per: f64,
    pub snr_db: f64,
    pub queue_limit: u32,
    /// Discipline of the station's own transmit queue (uplink): "fifo", "codel", "pie",
    /// "fq_codel", with `queue_limit` as its packet limit. A relay queues as `[ap]` says.
    #[serde(default = "default_qdisc")]
    pub qdisc: Qdisc,
    /// "fixed" (`mcs`, `nss`), "ideal" (best rate for the current SNR) or "minstrel"
    /// (Minstrel-HT-like sampling); for the last two `nss` is the most streams used.
    #[serde(default = "default_rate_control")]
    pub rate_control: RateControl,
    /// Distance schedule `(ns, metres)`: the SNR follows from the channel's link budget.
    /// Empty: the fixed `snr_db` (with `error_model = "snr"`).
    #[serde(default)]
    pub waypoints: Vec<(u64, f64)>,
    /// The schedule repeats with period last − first waypoint time.
    #[serde(default)]
    pub repeat: bool,
    /// The station that relays for this one (a lower index); None = associated with the AP.
    /// A station with stations behind it forwards between its hops (a mesh relay).
    #[serde(default)]
    pub parent: Option<u32>,
    /// The channel of the link to the parent (0 = the AP's). Links on different channels
    /// neither contend nor collide; a relay whose children use another channel than its own
    /// link has a second radio for them.
    #[serde(default)]
    pub hop_channel: u32,
    /// `(ns, n)`: from that time on the station's rate control (or fixed MCS) uses at most `n`
    /// spatial streams, in both directions.
    #[serde(default)]
    pub nss_change: Option<(u64, u8)>,
    /// Device type for the vwire classifier: "unknown", "phone", "laptop", "tv" (written only
    /// when not "unknown").
    #[serde(default = "default_device", skip_serializing_if = "is_default_device")]
    pub device: String,
    /// The station's driver hands its receptions to Linux GRO: its TCP receivers ACK once per
    /// merged packet of a PPDU's in-order segments (`TcpReceiverConfig::gro_bytes`). Written
    /// only when set.
    #[serde(default, skip_serializing_if = "is_false")]
    pub gro: bool,
    /// The station's TCP senders count their packets against TCP small queues until its MAC
    /// has sent them, as mac80211 keeps an skb until its transmit status. `false`: the host
    /// hands its packets to a device that orphans them at once (a TUN device's
    /// `tun_net_xmit` → `skb_orphan`, as across the emulator), so nothing below the socket
    /// holds its senders. Written only when false.
    #[serde(default = "yes", skip_serializing_if = "is_true")]
    pub tcp_small_queues: bool,
    /// mac80211's airtime weight of this station at the AP, in µs: what its airtime deficit
    /// gains per pass of the airtime scheduler (`sta->airtime_weight`, default 256; hostapd's
    /// `airtime_mode=1` with `airtime_sta_weight`). Backlogged stations share the AP's airtime
    /// in proportion to their weights. Written only when not the default.
    #[serde(default = "default_airtime_weight", skip_serializing_if = "is_default_airtime_weight")]
    pub airtime_weight: u32,
    /// The most MPDUs the station's own radio puts in an A-MPDU (its chip's aggregation
    /// limit, e.g. Broadcom's `AMPDU_NUM_MPDU`); 0: the cell's `mac.max_ampdu_mpdus`.
    /// Written only when set.
    #[serde(default, skip_serializing_if = "is_zero_u32")]
    pub ampdu_mpdus_tx: u32,
    /// The Block Ack buffer size the station grants in its ADDBA Response (IEEE 802.11
    /// ADDBA Response's Buffer Size field; Broadcom's `AMPDU_RX_BA_DEF_WSIZE`): the A-MPDUs
    /// sent to it carry at most this many MPDUs; 0: the cell's `mac.max_ampdu_mpdus`.
    /// Written only when set.
    #[serde(default, skip_serializing_if = "is_zero_u32")]
    pub ba_window_rx: u32,
    /// Whether the station's radio precedes its data PPDUs with an RTS/CTS exchange
    /// (`RtsPolicy::NAMES`): "off" (Linux's default), "ampdu" (before every A-MPDU, as
    /// Broadcom's firmware does by default) or "always". It applies to what the station sends:
    /// its uplink, and its hops to its children when it relays. Written only when not "off".
    #[serde(default = "default_rts", skip_serializing_if = "is_default_rts")]
    pub rts: String,
}

pub(crate) fn default_rts() -> String {
    RtsPolicy::NAMES[0].into()
}

pub(crate) fn is_default_rts(r: &str) -> bool {
    r == RtsPolicy::NAMES[0]
}

/// mac80211's default station airtime weight (`IEEE80211_DEFAULT_AIRTIME_WEIGHT`), µs.
pub const DEFAULT_AIRTIME_WEIGHT: u32 = 256;

fn default_airtime_weight() -> u32 {
    DEFAULT_AIRTIME_WEIGHT
}

fn is_default_airtime_weight(w: &u32) -> bool {
    *w == DEFAULT_AIRTIME_WEIGHT
}

fn default_device() -> String {
    "unknown".into()
}

fn is_default_device(d: &str) -> bool {
    d == "unknown"
}

fn is_zero_u32(v: &u32) -> bool {
    *v == 0
}

fn is_false(b: &bool) -> bool {
    !*b
}

fn is_true(b: &bool) -> bool {
    *b
}

fn default_rate_control() -> RateControl {
    RateControl::Fixed
}

fn yes() -> bool {
    true
}

/// Discipline `q` (RFC defaults) holding at most `limit` packets.
pub fn qdisc_config(q: names::Qdisc, limit: usize) -> lasthop_algo::aqm::AqmConfig {
    use lasthop_algo::aqm::*;
    match q {
        names::Qdisc::Codel => AqmConfig::Codel(CodelConfig { limit_packets: limit, ..Default::default() }),
        names::Qdisc::Pie => AqmConfig::Pie(PieConfig { limit_packets: limit, ..Default::default() }),
        names::Qdisc::FqCodel => AqmConfig::FqCodel(FqCodelConfig { limit_packets: limit, ..Default::default() }),
        names::Qdisc::DualPi2 => AqmConfig::DualPi2(DualPi2Config { limit_packets: limit, ..Default::default() }),
        names::Qdisc::Fifo => AqmConfig::Fifo(FifoConfig { limit_packets: limit, limit_bytes: 0 }),
    }
}

/// (key path, value, what is allowed)
pub type Problem = (String, String, String);


impl Spec {
    pub fn from_json(s: &str) -> Result<Spec, String> {
        serde_json::from_str(s).map_err(|e| format!("normalized spec does not parse: {e}"))
    }

    /// `[vwire]`, or its defaults (off) for a spec without one.
    pub fn vwire_or_default(&self) -> VwireSpec {
        self.vwire.clone().unwrap_or_default()
    }

    /// `[emu]`, or its defaults for a spec without one.
    pub fn emu_or_default(&self) -> EmuSpec {
        self.emu.clone().unwrap_or_default()
    }

    pub fn standard(&self) -> Standard {
        self.phy.standard
    }
    pub fn band(&self) -> Band {
        self.phy.band
    }
    /// The AP's per-station queue discipline.
    pub fn aqm_config(&self) -> lasthop_algo::aqm::AqmConfig {
        use lasthop_algo::aqm::*;
        let ce_threshold = (self.ap.ce_threshold_ns > 0).then_some(lasthop_core::Duration(self.ap.ce_threshold_ns));
        let l4s_only = self.ap.ce_threshold_l4s_only;
        match self.ap.qdisc {
            names::Qdisc::Codel => {
                let d = CodelConfig::default();
                AqmConfig::Codel(CodelConfig { ecn: self.ap.ecn.unwrap_or(d.ecn), ce_threshold, ce_threshold_l4s_only: l4s_only, ..d })
            }
            names::Qdisc::Pie => {
                let d = PieConfig::default();
                AqmConfig::Pie(PieConfig { estimator: self.pie_estimator(), ecn: self.ap.ecn.unwrap_or(d.ecn), ..d })
            }
            names::Qdisc::FqCodel => {
                let d = FqCodelConfig::default();
                AqmConfig::FqCodel(FqCodelConfig { ecn: self.ap.ecn.unwrap_or(d.ecn), ce_threshold, ce_threshold_l4s_only: l4s_only, ..d })
            }
            names::Qdisc::DualPi2 => AqmConfig::DualPi2(DualPi2Config::default()),
            names::Qdisc::Fifo => AqmConfig::Fifo(FifoConfig::default()),
        }
    }

    /// mac80211's flow queue at the AP (`ap.qdisc = "fq_codel"`), with the ECN settings of
    /// `[ap]`; `memory_limit` as the hardware's band support sets it.
    pub fn mac_fq_config(&self, memory_limit: u64) -> lasthop_algo::aqm::MacFqConfig {
        let d = lasthop_algo::aqm::MacFqConfig::default();
        lasthop_algo::aqm::MacFqConfig {
            memory_limit,
            ecn: self.ap.ecn.unwrap_or(d.ecn),
            ce_threshold: (self.ap.ce_threshold_ns > 0).then_some(lasthop_core::Duration(self.ap.ce_threshold_ns)),
            ce_threshold_l4s_only: self.ap.ce_threshold_l4s_only,
            aqm: match self.ap.fq_aqm {
                FqAqm::Codel => lasthop_algo::aqm::FlowAqm::Codel,
                FqAqm::DualPi2 => lasthop_algo::aqm::FlowAqm::DualPi2(lasthop_algo::aqm::DualPi2Config::default()),
            },
            ..d
        }
    }

    /// `ap.pie_estimator` (timestamps if it does not parse; `problems` reports that).
    pub fn pie_estimator(&self) -> lasthop_algo::aqm::PieEstimator {
        PIE_ESTIMATORS.iter().find(|(n, _)| *n == self.ap.pie_estimator).map_or(Default::default(), |(_, e)| *e)
    }

    /// The discipline of the wired link's queue (one instance per direction).
    pub fn wired_aqm_config(&self) -> lasthop_algo::aqm::AqmConfig {
        qdisc_config(self.wired.qdisc, self.wired.queue_limit as usize)
    }

    /// The discipline of station `st`'s own transmit queue.
    pub fn station_aqm_config(st: &StationSpec) -> lasthop_algo::aqm::AqmConfig {
        qdisc_config(st.qdisc, st.queue_limit as usize)
    }

    /// The link budget stations placed at a distance use.
    pub fn link_budget(&self) -> lasthop_wifi::phy::channel::LinkBudget {
        use lasthop_wifi::phy::channel::*;
        let band = self.band();
        let c = &self.channel;
        let path_loss = match c.path_loss {
            names::PathLoss::TgnA => PathLoss::tgn(band, TgnModel::A),
            names::PathLoss::TgnB => PathLoss::tgn(band, TgnModel::B),
            names::PathLoss::TgnC => PathLoss::tgn(band, TgnModel::C),
            names::PathLoss::TgnD => PathLoss::tgn(band, TgnModel::D),
            names::PathLoss::TgnE => PathLoss::tgn(band, TgnModel::E),
            names::PathLoss::TgnF => PathLoss::tgn(band, TgnModel::F),
            names::PathLoss::LogDistance => PathLoss { exponent: c.exponent, exponent_after: c.exponent, ..PathLoss::log_distance(band) },
        };
        LinkBudget { path_loss, tx_power_dbm: c.tx_power_dbm, noise_figure_db: c.noise_figure_db, channel_width_mhz: self.phy.channel_width }
    }

    /// `mac.access_category`.
    pub fn main_ac(&self) -> AccessCategory {
        self.mac.access_category
    }

    /// The access category of flow `f`'s packets: its `ac`, else `mac.access_category`.
    pub fn flow_ac(&self, f: &FlowSpec) -> AccessCategory {
        f.ac.unwrap_or(self.mac.access_category)
    }

    pub fn tx_vector(&self, st: &StationSpec) -> TxVector {
        TxVector {
            standard: self.standard(),
            mcs: st.mcs,
            nss: st.nss,
            channel_width: self.phy.channel_width,
            guard_interval: self.phy.guard_interval,
            ru: None,
        }
    }

    /// Every rule across keys the spec breaks (802.11's, and between sections), in the order
    /// of its sections. Each key's own range is the reader's ([`Spec::key_problems`] for a spec
    /// from elsewhere).
    pub fn problems(&self) -> Vec<Problem> {
        let mut p: Vec<Problem> = Vec::new();
        let mut bad = |path: &str, value: String, allowed: String| p.push((path.to_string(), value, allowed));
        let Some(std) = self.sim_phy_problems(&mut bad) else { return p };
        self.mac_problems(std, &mut bad);
        self.ap_wired_problems(&mut bad);
        self.station_problems(&mut bad);
        self.flow_problems(&mut bad);
        for (path, value, allowed) in vwire_problems(self) {
            bad(&path, value, allowed);
        }
        p.extend(self.aggctl_problems());
        p
    }

    /// `sim` and `phy`; the standard, if it is one.
    fn sim_phy_problems(&self, bad: &mut dyn FnMut(&str, String, String)) -> Option<Standard> {

        if self.sim.bin_ns == 0 || self.sim.bin_ns > self.sim.duration_ns.max(1) {
            bad("sim.bin", format!("{}ns", self.sim.bin_ns), "0 < bin <= sim.duration".into());
        }
        if self.sim.warmup_ns >= self.sim.duration_ns {
            bad("sim.warmup", format!("{}ns", self.sim.warmup_ns), "warmup < sim.duration".into());
        }
        let std = self.phy.standard;
        match self.phy.band {
            Band::Ghz6 if std != Standard::He => {
                bad("phy.band", "\"6GHz\"".into(), "6GHz only with standard \"he\"".into())
            }
            Band::Ghz2_4 if std == Standard::Vht => {
                bad("phy.band", "\"2.4GHz\"".into(), "VHT operates in 5GHz only".into())
            }
            _ => {}
        }
        if !phy::valid_widths(std).contains(&self.phy.channel_width) {
            bad("phy.channel_width", self.phy.channel_width.to_string(), format!("one of {:?} MHz for {}", phy::valid_widths(std), std.name()));
        }
        if !phy::valid_guard_intervals(std).contains(&self.phy.guard_interval) {
            bad("phy.guard_interval", self.phy.guard_interval.to_string(), format!("one of {:?} ns for {}", phy::valid_guard_intervals(std), std.name()));
        }

        Some(std)
    }

    /// `mac`: aggregation, A-MSDU, PPDU time, retries, beacons, EDCA overrides.
    fn mac_problems(&self, std: Standard, bad: &mut dyn FnMut(&str, String, String)) {
        let m = &self.mac;
        let win = phy::ba_window(std) as u32;
        if std == Standard::Ofdm && m.aggregation {
            bad("mac.aggregation", "true".into(), "false for standard \"ofdm\" (802.11a/g has no A-MPDU)".into());
        }
        if m.aggregation && (m.max_ampdu_mpdus == 0 || m.max_ampdu_mpdus > win) {
            bad("mac.max_ampdu_mpdus", m.max_ampdu_mpdus.to_string(), format!("1..={win} (the Block Ack window of {})", std.name()));
        }
        let max_bytes = phy::max_ampdu_bytes(std);
        if m.aggregation && m.max_ampdu_bytes > max_bytes {
            bad("mac.max_ampdu_bytes", m.max_ampdu_bytes.to_string(), format!("0 (standard maximum) or <= {max_bytes}"));
        }
        let amsdu_max = match std {
            Standard::Ofdm => 0,
            Standard::Ht => lasthop_wifi::mac::frame::MAX_AMSDU_HT,
            _ => lasthop_wifi::mac::frame::MAX_AMSDU_VHT,
        };
        if m.max_amsdu_bytes > amsdu_max || (m.max_amsdu_bytes > 0 && m.max_amsdu_bytes < lasthop_wifi::mac::frame::MAX_AMSDU_HT_MIN) {
            let allowed = if amsdu_max == 0 { "0 for standard \"ofdm\"".to_string() } else { format!("0 (off) or {}..={amsdu_max} for {}", lasthop_wifi::mac::frame::MAX_AMSDU_HT_MIN, std.name()) };
            bad("mac.max_amsdu_bytes", m.max_amsdu_bytes.to_string(), allowed);
        }
        let max_t = phy::max_ppdu_time(std).as_nanos();
        if m.max_ppdu_time_ns == 0 || m.max_ppdu_time_ns > max_t {
            bad("mac.max_ppdu_time", format!("{}ns", m.max_ppdu_time_ns), format!("0 < t <= {}ns (aPPDUMaxTime of {})", max_t, std.name()));
        }
        edca_problems("mac", (m.cw_min, m.cw_max, m.aifsn, m.txop_limit_ns), bad);
        if m.ampdu_formation != AmpduFormation::Access {
            let f = format!("{:?}", m.ampdu_formation.as_str());
            if !m.aggregation {
                bad("mac.ampdu_formation", f.clone(), "\"access\" without aggregation (no A-MPDU to form)".into());
            }
            if self.ap.driver.hardware_queue() {
                bad("mac.ampdu_formation", f.clone(), format!("only with ap.driver = {} (the others have their own hardware queue)", pull_drivers_text()));
            }
            if m.ofdma.is_some() {
                bad("mac.ampdu_formation", f, "not with [mac.ofdma] (single-user PPDUs only)".into());
            }
        }
    }

    /// `ap` and `wired`.
    fn ap_wired_problems(&self, bad: &mut dyn FnMut(&str, String, String)) {
        let a = &self.ap;
        edca_problems("ap", (a.cw_min, a.cw_max, a.aifsn, a.txop_limit_ns), bad);
        if self.ap.aql_limit_low_ns == 0 || self.ap.aql_limit_low_ns > self.ap.aql_limit_high_ns {
            bad("ap.aql_limit_low", format!("{}ns", self.ap.aql_limit_low_ns), "0 < low <= aql_limit_high".into());
        }
        if self.ap.buffer_sizer == BufferSizer::Wqm {
            if self.ap.qdisc != Qdisc::Fifo {
                bad("ap.buffer_sizer", "\"wqm\"".into(), "only with qdisc = \"fifo\" (WQM sizes a tail-drop buffer)".into());
            }
            if self.ap.driver.hardware_queue() {
                bad("ap.buffer_sizer", "\"wqm\"".into(), format!("only with driver = {}", pull_drivers_text()));
            }
        }
        if self.ap.fq_aqm != FqAqm::Codel {
            if self.ap.qdisc != Qdisc::FqCodel {
                bad("ap.fq_aqm", format!("{:?}", self.ap.fq_aqm.as_str()), "only with qdisc = \"fq_codel\"".into());
            }
            if self.ap.ecn.is_some() || self.ap.ce_threshold_ns > 0 {
                bad("ap.fq_aqm", format!("{:?}", self.ap.fq_aqm.as_str()), "not with ap.ecn or ap.ce_threshold (DualPI2 always marks, at its own step)".into());
            }
        }
        let known = PIE_ESTIMATORS.iter().any(|(n, _)| *n == self.ap.pie_estimator);
        if known && self.ap.pie_estimator != "timestamp" && self.ap.qdisc != Qdisc::Pie {
            bad("ap.pie_estimator", format!("{:?}", self.ap.pie_estimator), "only with qdisc = \"pie\"".into());
        }
    }

    /// `stations`: rates, placement, mobility; and the interference their SNR must carry.
    fn station_problems(&self, bad: &mut dyn FnMut(&str, String, String)) {
        if !self.stations.iter().any(|st| st.error_model == ErrorModel::Snr) {
            let c = &self.channel;
            for (given, key, why) in [(c.interference.is_some(), "channel.interference", ranges::INTERFERENCE_NEEDS_SNR),
                                      (c.fading.is_some(), "channel.fading", ranges::FADING_NEEDS_SNR)] {
                if given {
                    bad(key, "{...}".into(), why.into());
                }
            }
        }
        for (i, st) in self.stations.iter().enumerate() {
            let tx = self.tx_vector(st);
            if let Err(e) = tx.validate() {
                let v = match e.field {
                    "mcs" => st.mcs.to_string(),
                    "nss" => st.nss.to_string(),
                    "channel_width" => self.phy.channel_width.to_string(),
                    "guard_interval" => self.phy.guard_interval.to_string(),
                    _ => String::new(),
                };
                let path = match e.field {
                    "mcs" | "nss" => format!("stations[{i}].{}", e.field),
                    f => format!("phy.{f}"),
                };
                bad(&path, v, e.allowed);
            }
            if st.qdisc != Qdisc::Fifo && self.stations.iter().any(|c| c.parent == Some(i as u32)) {
                bad(&format!("stations[{i}].qdisc"), format!("{:?}", st.qdisc.as_str()), "\"fifo\" for a relay (its interface queue is configured by [ap])".into());
            }
            match st.parent {
                None if st.hop_channel != 0 => {
                    bad(&format!("stations[{i}].hop_channel"), st.hop_channel.to_string(), "0 for a station associated with the AP (the AP has one radio, on channel 0)".into());
                }
                Some(par) if (par as usize) < i && self.ap.driver == Driver::Ath9k && self.stations[par as usize].hop_channel != st.hop_channel => {
                    bad(&format!("stations[{i}].hop_channel"), st.hop_channel.to_string(), format!("{} (its parent's) with ap.driver = \"ath9k\": a relay has one driver stage, so one radio", self.stations[par as usize].hop_channel));
                }
                Some(par) if (par as usize) < i => {
                    // All children of one relay share its second radio's channel.
                    if let Some(first) = self.stations[..i].iter().find(|o| o.parent == Some(par)) {
                        if first.hop_channel != st.hop_channel {
                            bad(&format!("stations[{i}].hop_channel"), st.hop_channel.to_string(), format!("{} like the other stations behind station {par} (one radio per side of a relay)", first.hop_channel));
                        }
                    }
                }
                _ => {}
            }
            if let Some(par) = st.parent {
                if par as usize >= i {
                    bad(&format!("stations[{i}].parent"), par.to_string(), format!("the index of an earlier station (0..{i})"));
                } else if self.ap.driver.hardware_queue() {
                    bad(&format!("stations[{i}].parent"), par.to_string(), format!("only with ap.driver = {} (relays are ath9k nodes)", pull_drivers_text()));
                }
            }
            if st.rate_control != RateControl::Fixed && st.error_model != ErrorModel::Snr {
                bad(&format!("stations[{i}].rate_control"), format!("{:?}", st.rate_control.as_str()), "needs error_model = \"snr\" (a distance or snr_db)".into());
            }
            if !st.waypoints.is_empty() && st.error_model != ErrorModel::Snr {
                bad(&format!("stations[{i}].error_model"), format!("{:?}", st.error_model.as_str()), "\"snr\" for a station placed at a distance".into());
            }
            if st.repeat && st.waypoints.first().map(|w| w.0) == st.waypoints.last().map(|w| w.0) {
                bad(&format!("stations[{i}].repeat"), "true".into(), "a schedule whose last waypoint is later than its first".into());
            }
            // A station's A-MPDU limits lie within the cell's (their own range is the keys').
            for (key, v) in [("ampdu_mpdus_tx", st.ampdu_mpdus_tx), ("ba_window_rx", st.ba_window_rx)] {
                if v != 0 && v <= ranges::largest_ba_window() {
                    if !self.mac.aggregation {
                        bad(&format!("stations[{i}].{key}"), v.to_string(), "0 unless mac.aggregation = true".into());
                    } else if v > self.mac.max_ampdu_mpdus {
                        bad(&format!("stations[{i}].{key}"), v.to_string(), format!("at most mac.max_ampdu_mpdus ({}), or 0", self.mac.max_ampdu_mpdus));
                    }
                }
            }
            // (A weight out of its range is the key's own problem.)
            if st.airtime_weight != DEFAULT_AIRTIME_WEIGHT && ranges::AIRTIME_WEIGHTS.contains(&st.airtime_weight) {
                if self.ap.scheduler != Scheduler::Airtime {
                    bad(&format!("stations[{i}].airtime_weight"), st.airtime_weight.to_string(), format!("{DEFAULT_AIRTIME_WEIGHT} (the default) unless ap.scheduler = \"airtime\": weights are the airtime scheduler's"));
                } else if st.parent.is_some() {
                    bad(&format!("stations[{i}].airtime_weight"), st.airtime_weight.to_string(), format!("{DEFAULT_AIRTIME_WEIGHT} (the default) for a station behind a relay: the weight is the AP's"));
                }
            }
        }
    }

    /// `flows`: each flow's station, direction and pattern, the pattern's own keys, then its
    /// size, times, access category and split proxy.
    fn flow_problems(&self, bad: &mut dyn FnMut(&str, String, String)) {
        for (i, f) in self.flows.iter().enumerate() {
            if f.station as usize >= self.stations.len() {
                bad(&format!("flows[{i}].stations"), f.station.to_string(), format!("a station index 0..{}", self.stations.len()));
            }
            match f.pattern {
                Pattern::Cbr | Pattern::Poisson | Pattern::Saturated | Pattern::Aggctl | Pattern::External => {}
                Pattern::Ping => {
                    if f.direction == Direction::Cross {
                        bad(&format!("flows[{i}].pattern"), "\"ping\"".into(), "cbr or poisson for cross traffic".into());
                    }
                }
                Pattern::Tcp => tcp_flow_problems(i, f, bad),
                Pattern::Quic => quic_flow_problems(i, f, bad),
            }
            if f.direction == Direction::Cross && f.pattern == Pattern::Saturated {
                bad(&format!("flows[{i}].pattern"), "\"saturated\"".into(), "cbr or poisson for cross traffic".into());
            }
            if f.start_ns >= f.stop_ns || f.stop_ns > self.sim.duration_ns {
                bad(&format!("flows[{i}].start"), format!("{}ns", f.start_ns), "start < stop <= sim.duration".into());
            }
            if let Some((value, allowed)) = ac_problem(self, f) {
                bad(&format!("flows[{i}].ac"), value, allowed);
            }
            for (path, value, allowed) in vwire_flow_problems(self, f) {
                bad(&format!("flows[{i}].{path}"), value, allowed);
            }
        }
    }

}
