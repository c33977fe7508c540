//! `[ap]`: the AP's queues, driver, disciplines, ECN marking, ACK filter and its own EDCA, with
//! the defaults of the keys it leaves out, and the driver and PIE-estimator lists.

use super::names::{BufferSizer, Driver, FqAqm, Qdisc, Scheduler, WqmVariant};
use super::{is_true, yes, ACK_FILTERS, QDISC_SCOPES};
use serde::{Deserialize, Serialize};

#[derive(Clone, Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct ApSpec {
    pub queue_limit: u32,
    pub scheduler: Scheduler,
    /// Queue discipline of each station's queue at the AP: "fifo", "codel", "pie", "dualpi2"
    /// (RFC defaults: CoDel 5 ms / 100 ms, PIE 15 ms, DualPI2 as sch_dualpi2; one per station
    /// sharing `queue_limit` as txqueuelen) or "fq_codel" (mac80211's flow queue,
    /// `lasthop_algo::aqm::MacFq`, with `queue_limit` as its packet limit). See [`Qdisc`].
    #[serde(default = "super::default_qdisc")]
    pub qdisc: Qdisc,
    /// With qdisc = "fq_codel": the AQM of mac80211's flows, CoDel per flow (the default) or
    /// DualPI2's coupled AQM per station queue. Written only when it is not CoDel.
    #[serde(default = "default_fq_aqm", skip_serializing_if = "is_default_fq_aqm")]
    pub fq_aqm: FqAqm,
    /// "pull": aggregates are built from the station queues at channel access (ath9k since it
    /// pulls from mac80211's queues, no queue below them); "ath9k": the pre-4.10 ath9k, which
    /// takes up to 123 frames per access category from the queues into its own (`TxqSet`
    /// driver stage) and builds aggregates from those; "firmware": frames move from the station
    /// queues into per-station hardware/firmware queues (`hw_queue_limit` packets in total),
    /// from which aggregates are built, as ath10k's push path moves them, gated by the airtime
    /// queue limit when `aql` is on; "mt76": the same hardware queues, filled as mt76's tx
    /// worker fills them (`lasthop_wifi::mac::mt76`). See [`Driver`].
    #[serde(default = "default_driver")]
    pub driver: Driver,
    #[serde(default = "default_hw_queue_limit")]
    pub hw_queue_limit: u32,
    /// With driver = "ath9k": the frames per access category the driver takes from the queues
    /// before mac80211 stops them (ath9k's `ATH_MAX_QDEPTH`, [`ATH9K_QDEPTH`] with its stock
    /// `ATH_TXBUF` of 512). Written only when it differs from that.
    #[serde(default = "default_ath9k_qdepth", skip_serializing_if = "is_default_ath9k_qdepth")]
    pub ath9k_qdepth: u32,
    /// [`QDISC_SCOPES`]: one qdisc per next hop ("station") or one for the interface
    /// ("interface", with driver = "ath9k" and a FIFO, CoDel or PIE). Written only when it is
    /// "interface".
    #[serde(default = "default_qdisc_scope", skip_serializing_if = "is_default_qdisc_scope")]
    pub qdisc_scope: String,
    #[serde(default = "yes")]
    pub aql: bool,
    /// mac80211's AQL defaults: a station may queue more while its pending airtime is below
    /// the low limit, or below the high limit while the total is under the threshold.
    #[serde(default = "default_aql_low")]
    pub aql_limit_low_ns: u64,
    #[serde(default = "default_aql_high")]
    pub aql_limit_high_ns: u64,
    #[serde(default = "default_aql_threshold")]
    pub aql_threshold_ns: u64,
    /// "none" or "wqm": the interface queue's packet limit is set by the WQM buffer sizer
    /// (`lasthop_algo::aqm::wqm`) at the AP and at every relay (FIFO only).
    #[serde(default = "default_buffer_sizer")]
    pub buffer_sizer: BufferSizer,
    /// WQM `limit` (acceptable drain time) and measurement interval.
    #[serde(default = "default_wqm_limit")]
    pub wqm_limit_ns: u64,
    #[serde(default = "default_wqm_interval")]
    pub wqm_interval_ns: u64,
    /// "aimd" (the paper's), "aiad", "miad", "mimd".
    #[serde(default = "default_wqm_variant")]
    pub wqm_variant: WqmVariant,
    /// With qdisc = "pie": how it estimates the queueing delay, a name of [`PIE_ESTIMATORS`].
    #[serde(default = "default_pie_estimator")]
    pub pie_estimator: String,
    /// The host's transmit-path time per packet at the AP and every relay: a burst of frames
    /// the driver takes from the queues is dequeued this far apart, as the queue disciplines
    /// see it (`lasthop_wifi::mac::qdisc_run`); 0 = all at one instant. At most
    /// [`MAX_DEQUEUE_COST_NS`].
    #[serde(default)]
    pub dequeue_cost_ns: u64,
    /// Whether the AP's discipline marks ECN-capable packets instead of dropping them; None:
    /// as Linux sets it up (mac80211's flow queue and fq_codel on, codel and pie off).
    #[serde(default)]
    pub ecn: Option<bool>,
    /// CoDel's CE threshold in the AP's discipline (codel, fq_codel), 0 = off; with
    /// `ce_threshold_l4s_only`, for L4S packets only (fq_codel's `ce_threshold_selector`).
    #[serde(default)]
    pub ce_threshold_ns: u64,
    #[serde(default)]
    pub ce_threshold_l4s_only: bool,
    /// Marking at the air: an L4S packet whose time since it entered the AP's queues exceeds
    /// this when it is put into an aggregate is marked CE (0 = off). It sees what no qdisc
    /// can: the wait in the driver's and the firmware's queues.
    #[serde(default)]
    pub air_ce_threshold_ns: u64,
    /// TCP ACK filtering in the AP's flow queue (sch_cake's `ack-filter`), a name of
    /// [`ACK_FILTERS`]: "off", "conservative", "aggressive".
    #[serde(default = "default_ack_filter")]
    pub ack_filter: String,
    /// The AP's own EDCA parameters for `mac.access_category` (hostapd's `tx_queue_data*_cwmin`,
    /// `_cwmax`, `_aifs`); None: Table 9-155's AP values, as hostapd's defaults. They do not
    /// follow the set the AP advertises (`mac.cw_min` ...), which only the stations use.
    #[serde(default)]
    pub cw_min: Option<u32>,
    #[serde(default)]
    pub cw_max: Option<u32>,
    #[serde(default)]
    pub aifsn: Option<u32>,
    /// The AP's own TXOP limit for `mac.access_category` (hostapd's `tx_queue_data*_burst`);
    /// None: Table 9-155's (0 for BE: one frame exchange), whatever `mac.txop_limit_ns` says.
    #[serde(default)]
    pub txop_limit_ns: Option<u64>,
    /// The AP host's own TCP senders (the split proxy's WiFi side, `world/hosts/vwire.rs`)
    /// count their packets against TCP small queues until its MAC has sent them, as mac80211
    /// keeps an skb until its transmit status. `false`: its `wlan0` is a device that orphans
    /// each packet at once (a TUN device's `tun_net_xmit` → `skb_orphan`, as the emulator's AP
    /// host), so nothing below the socket holds them. As `stations[].tcp_small_queues` for a
    /// station's senders. Written only when false.
    #[serde(default = "yes", skip_serializing_if = "is_true")]
    pub tcp_small_queues: bool,
    /// Whether the AP's radio opens the exchange of its data PPDUs with an RTS/CTS, as
    /// `stations[].rts` for a station's (`RtsPolicy::NAMES`): "off" (mac80211's default, no RTS
    /// threshold), "ampdu" (before every A-MPDU, as Broadcom's AP drivers do by default:
    /// `ampdu_rts`) or "always". Written only when not "off".
    #[serde(default = "super::default_rts", skip_serializing_if = "super::is_default_rts")]
    pub rts: String,
}

/// `ap.dequeue_cost`'s bound: a host's per-packet transmit path takes microseconds, and the
/// model does not hold frames back for it (a host slower than the air is not modelled).
pub const MAX_DEQUEUE_COST_NS: u64 = 100_000;

/// The drivers with (`hw`) or without a hardware queue, as a message lists them: `"pull" or
/// "ath9k"`.
pub fn drivers_text(hw: bool) -> String {
    let names: Vec<String> = Driver::ALL.iter().filter(|d| d.hardware_queue() == hw).map(|d| format!("{:?}", d.as_str())).collect();
    names.join(" or ")
}

/// The drivers without a hardware queue, as a message lists them: `"pull" or "ath9k"`.
pub fn pull_drivers_text() -> String {
    drivers_text(false)
}

/// `ap.pie_estimator`: RFC 8033 §4.3's timestamps, or the departure rate of §5.2 as Linux 3.x's
/// sch_pie measured it (`lasthop_algo::aqm::pie::dq_rate`).
pub const PIE_ESTIMATORS: [(&str, lasthop_algo::aqm::PieEstimator); 2] = [
    ("timestamp", lasthop_algo::aqm::PieEstimator::Timestamp),
    ("dequeue_rate", lasthop_algo::aqm::PieEstimator::DequeueRate),
];

fn default_pie_estimator() -> String {
    "timestamp".into()
}

fn default_fq_aqm() -> FqAqm {
    FqAqm::Codel
}
fn is_default_fq_aqm(a: &FqAqm) -> bool {
    *a == FqAqm::Codel
}

fn default_buffer_sizer() -> BufferSizer {
    BufferSizer::Off
}
fn default_wqm_limit() -> u64 {
    2_500_000
}
fn default_wqm_interval() -> u64 {
    100_000_000
}
fn default_wqm_variant() -> WqmVariant {
    WqmVariant::Aimd
}

fn default_driver() -> Driver {
    Driver::Pull
}
/// `ap.ath9k_qdepth`'s default: ath9k's `ATH_MAX_QDEPTH` (`lasthop_wifi::mac::txq`).
pub const ATH9K_QDEPTH: u32 = lasthop_wifi::mac::txq::ATH_MAX_QDEPTH as u32;

fn default_ath9k_qdepth() -> u32 {
    ATH9K_QDEPTH
}
fn is_default_ath9k_qdepth(q: &u32) -> bool {
    *q == ATH9K_QDEPTH
}

fn default_hw_queue_limit() -> u32 {
    1024
}
fn default_aql_low() -> u64 {
    5_000_000
}
fn default_aql_high() -> u64 {
    12_000_000
}
fn default_aql_threshold() -> u64 {
    24_000_000
}

impl ApSpec {
    /// `qdisc_scope = "interface"`: one qdisc for the interface (per access category), not one
    /// per next hop.
    pub fn interface_qdisc(&self) -> bool {
        self.qdisc_scope == QDISC_SCOPES[1]
    }
}

fn default_qdisc_scope() -> String {
    QDISC_SCOPES[0].into()
}
fn is_default_qdisc_scope(s: &str) -> bool {
    s == QDISC_SCOPES[0]
}

fn default_ack_filter() -> String {
    ACK_FILTERS[0].into()
}
