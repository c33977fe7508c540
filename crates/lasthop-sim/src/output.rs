//! The `data` section of a result file (docs/results.md), collected from a finished world.

use crate::metrics::DelaySummary;
use crate::spec::FlowSpec;
use crate::world::World;
use lasthop_core::Instant;
use serde::Serialize;

/// Fields in key order, as the result file has them (see `TimeSeries`).
#[derive(Serialize, Debug, Clone)]
pub struct RunData {
    pub channel: Channel,
    pub flows: Vec<FlowOut>,
    pub stations: Vec<StationOut>,
    pub stats: Stats,
    pub timeseries: TimeSeries,
    /// The split proxy at the AP, when a flow is split (`world/hosts/vwire.rs`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub vwire: Option<VwireOut>,
    /// The AP's DL OFDMA, when `[mac.ofdma]` is on (`world/ofdma.rs`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ofdma: Option<OfdmaOut>,
}

/// The AP's DL OFDMA over the whole run.
#[derive(Serialize, Debug, Clone)]
pub struct OfdmaOut {
    /// DL MU PPDUs, and the single-user PPDUs the AP sent instead (one candidate).
    pub mu_ppdus: u64,
    pub su_ppdus: u64,
    /// Mean users per DL MU PPDU.
    pub users_per_ppdu: f64,
    /// User allocations by RU size in tones ("26" … "2x996").
    pub ru_hist: std::collections::BTreeMap<String, u64>,
    /// Share of DL MU PPDUs acknowledged by at least one user.
    pub acked_frac: f64,
    /// Mean DL MU exchange (PPDU and acknowledgment), ns.
    pub mean_exchange_ns: f64,
    /// With the uplink on: Basic Trigger frames, mean users per trigger, their RUs, the share
    /// of HE TB PPDUs acknowledged, and BSRP Trigger frames.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ul: Option<OfdmaUlOut>,
}

#[derive(Serialize, Debug, Clone)]
pub struct OfdmaUlOut {
    pub triggers: u64,
    pub users_per_trigger: f64,
    pub ru_hist: std::collections::BTreeMap<String, u64>,
    pub tb_acked_frac: f64,
    pub bsrps: u64,
}

fn ru_hist(h: [u64; 7]) -> std::collections::BTreeMap<String, u64> {
    lasthop_wifi::phy::RuSize::ALL.iter().zip(h).filter(|(_, n)| *n > 0).map(|(r, n)| (r.name().to_string(), n)).collect()
}

fn ofdma_out(w: &World) -> Option<OfdmaOut> {
    let (s, ul) = w.ofdma_stats()?;
    let per = |x: f64, n: u64| if n == 0 { 0.0 } else { x / n as f64 };
    Some(OfdmaOut {
        mu_ppdus: s.mu_ppdus,
        su_ppdus: s.su_ppdus,
        users_per_ppdu: per(s.users as f64, s.mu_ppdus),
        ru_hist: ru_hist(s.ru_hist),
        acked_frac: per(s.acked_ppdus as f64, s.mu_ppdus),
        mean_exchange_ns: per(s.mu_exchange_ns as f64, s.mu_ppdus),
        ul: ul.then(|| OfdmaUlOut {
            triggers: s.triggers,
            users_per_trigger: per(s.ul_users as f64, s.triggers),
            ru_hist: ru_hist(s.ul_ru_hist),
            tb_acked_frac: per(s.tb_acked as f64, s.tb_ppdus),
            bsrps: s.bsrps,
        }),
    })
}

#[derive(Serialize, Debug, Clone)]
pub struct Stats {
    pub events: u64,
    pub sim_time_ns: u64,
    pub mpdus_delivered: u64,
    pub mpdu_attempts: u64,
    pub ppdus: u64,
    pub collisions: u64,
    pub beacons: u64,
    /// Packets still queued, in flight or held for reordering when the run ended.
    pub packets_in_system: u64,
    /// TCP ACKs the AP's ACK filter took out of its queues (`ap.ack_filter`; absent when 0).
    #[serde(skip_serializing_if = "is_zero")]
    pub ack_filtered: u64,
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

#[derive(Serialize, Debug, Clone)]
pub struct Channel {
    pub busy_ns: u64,
    pub busy_frac: f64,
    pub tx_attempts: u64,
    pub collisions: u64,
}

#[derive(Serialize, Debug, Clone)]
pub struct FlowOut {
    pub id: usize,
    pub station: u32,
    pub direction: crate::spec::Direction,
    pub pattern: crate::spec::Pattern,
    pub offered_packets: u64,
    pub offered_bytes: u64,
    pub delivered_packets: u64,
    pub delivered_bytes: u64,
    pub dropped_queue: u64,
    pub dropped_retry: u64,
    pub dropped_wired: u64,
    pub goodput_bps: f64,
    pub loss: f64,
    pub delay_ns: DelaySummary,
    /// TCP flows only.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tcp: Option<TcpOut>,
    /// QUIC flows only.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub quic: Option<QuicOut>,
    /// aggctl flows only.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub aggctl: Option<AggctlOut>,
    /// TCP flows split at the AP only: the two connections and the relay buffer.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub split: Option<SplitOut>,
    /// Emulator flows only: what the packets were (protocol and addresses).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub external: Option<String>,
}

/// A split flow (`split = true`): the server → AP connection (`wired`), the AP → station one
/// (`wifi`), the relay buffer between them, and the vwire loop's view of the flow per period.
/// The flow's `tcp` record describes the server's sender and the station's receiver.
#[derive(Serialize, Debug, Clone)]
pub struct SplitOut {
    pub wired: SplitSide,
    pub wifi: SplitSide,
    /// Class at the end of the run, and whether it came from the spec (`app_class`).
    pub class: String,
    pub class_fixed: bool,
    /// Relay buffer capacity; its backlog (received from the server, not yet acknowledged by
    /// the station) sampled every `vwire.sample` after warm-up: largest, mean; at the end.
    pub relay_buffer_bytes: u64,
    pub relay_backlog_max_bytes: u64,
    pub relay_backlog_mean_bytes: f64,
    pub relay_backlog_end_bytes: u64,
    /// Window updates the proxy sent the server as the relay buffer drained.
    pub window_updates: u64,
    /// RTT samples of the WiFi-side sender after warm-up (the router ↔ device RTT).
    pub wifi_rtt_ns: DelaySummary,
    pub periods: SplitPeriods,
}

/// End-of-run state of one side of a split flow (its sender).
#[derive(Serialize, Debug, Clone)]
pub struct SplitSide {
    pub cc: String,
    pub bytes_acked: u64,
    pub retransmits: u64,
    pub rto_count: u64,
    pub fast_recoveries: u64,
    pub cwnd_bytes: u64,
    pub srtt_ns: u64,
    pub min_rtt_ns: u64,
}

/// Per feedback period of a split flow (times in `RunData.vwire.t_ns`).
#[derive(Serialize, Debug, Clone, Default)]
pub struct SplitPeriods {
    /// Class used (the spec's, or the classifier's latest), and the classifier's prediction in
    /// the period (null: vwire off, or no packets in the window).
    pub class: Vec<String>,
    pub predicted: Vec<Option<String>>,
    /// b̂_i: WiFi-side goodput over the period; L_i; b̂_i / L_i.
    pub goodput_bps: Vec<f64>,
    pub link_rate_bps: Vec<f64>,
    pub airtime_used: Vec<f64>,
    /// The allocation for the next period: b_i = a_i·L_i and a_i (0 with vwire off).
    pub alloc_rate_bps: Vec<f64>,
    pub alloc_airtime: Vec<f64>,
    /// Relay backlog and WiFi-side socket backlog (SIOCOUTQ) at the period's end.
    pub relay_backlog_bytes: Vec<u64>,
    pub sndbuf_bytes: Vec<u64>,
}

/// The proxy's run-level record: one entry per feedback period.
#[derive(Serialize, Debug, Clone)]
pub struct VwireOut {
    pub enabled: bool,
    pub period_ns: u64,
    pub efficiency: f64,
    pub t_ns: Vec<u64>,
    /// The scheduler was managed (the WiFi side the bottleneck) at the period's end.
    pub managed: Vec<bool>,
    /// U and Σ u_i(b_i) of the allocation.
    pub airtime_budget: Vec<f64>,
    pub utility: Vec<f64>,
    pub bottleneck_transitions: u64,
    /// Scheduler writes (one MSS or less each): with tokens, beyond the allocation, unmanaged.
    pub token_sends: u64,
    pub excess_sends: u64,
    pub fifo_sends: u64,
}

/// End-of-run state of an aggctl flow (paced UDP download regulated by the receiver's
/// aggregation reports). Aggregation means are over the Δ-slots that started after warm-up:
/// `est_*` from the receiver's reports (receive timestamps only), `true_*` from the A-MPDUs
/// the simulator sent to the station in the same slots.
#[derive(Serialize, Debug, Clone)]
pub struct AggctlOut {
    /// The allocator's rate for the flow when the run ended (or when the flow left).
    pub final_rate_bps: u64,
    /// N_ε.
    pub target_aggregation: u32,
    /// Packets per frame as estimated (Σ packets / Σ frames of the reports).
    pub est_mean_ampdu: f64,
    /// MPDUs per A-MPDU as sent (Σ MPDUs / Σ A-MPDUs of the slots compared).
    pub true_mean_ampdu: f64,
    /// |estimated − true| slot mean, averaged and largest over the slots compared.
    pub slot_abs_error_mean: f64,
    pub slot_abs_error_max: f64,
    pub slots_compared: u64,
    /// Report packets the receiver sent, the server received, and the network dropped.
    pub reports_sent: u64,
    pub reports_received: u64,
    pub reports_lost: u64,
    /// The allocator's view of the flow's feedback at the end: "fresh", "held", "decaying",
    /// or "left" (the flow stopped).
    pub feedback: String,
    /// Allocator-wide counters (the same on every aggctl flow of a run): reports applied,
    /// stations held for lack of feedback, multiplicative decay steps.
    pub allocator_reports_applied: u64,
    pub allocator_holds: u64,
    pub allocator_decay_steps: u64,
}

/// End-of-run state of a QUIC flow (a download: client at the station, server behind the
/// AP). `delivered_bytes` and goodput count stream bytes delivered in order to the client;
/// `delivered_packets` and delays count the server's datagrams.
#[derive(Serialize, Debug, Clone)]
pub struct QuicOut {
    /// "quic" or "bquic".
    pub profile: String,
    /// Response size (0 = endless) and completion time (last byte at the client) from the
    /// flow's start, if done.
    pub bytes: u64,
    pub completion_ns: Option<u64>,
    /// The client's handshake completion from the flow's start.
    pub handshake_ns: Option<u64>,
    pub app_bytes_delivered: u64,
    /// Server: packets sent, declared lost, later found spurious; PTOs; delay-based
    /// slow-start exits.
    pub packets_sent: u64,
    pub packets_lost: u64,
    pub spurious_losses: u64,
    pub pto_count: u64,
    pub slow_start_delay_exits: u64,
    /// Client: ACK frames and datagrams sent (what the ACK policy costs on the uplink).
    pub client_acks_sent: u64,
    pub client_datagrams_sent: u64,
    pub cwnd_bytes: u64,
    /// The server's cwnd when it first left slow start (the delay-based exit or a loss), and
    /// when, from the flow's start.
    pub slow_start_exit_cwnd: Option<u64>,
    pub slow_start_exit_ns: Option<u64>,
    pub srtt_ns: u64,
    pub min_rtt_ns: u64,
    /// Time between consecutive datagrams the server sent after warm-up (Manzoor et al.'s
    /// inter-packet time).
    pub inter_packet_ns: DelaySummary,
    /// One record per connection when the flow opens more than one (`connections > 1`);
    /// absent otherwise. The fields above describe the first connection's transfer
    /// (`completion_ns`, `handshake_ns`, `slow_start_exit_*`) or the last server endpoint
    /// (counters, cwnd, RTTs).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub transfers: Vec<TransferOut>,
    /// The server's congestion-window history, when `history` is not "none".
    #[serde(skip_serializing_if = "Option::is_none")]
    pub history: Option<HistoryOut>,
    /// Flows with ECN: the server's view (RFC 9000 §13.4).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ecn: Option<QuicEcnOut>,
}

/// What ECN did on a QUIC flow's last server endpoint.
#[derive(Serialize, Debug, Clone)]
pub struct QuicEcnOut {
    pub mode: &'static str,
    /// The flow's packets that a queue or the air marked CE (all its connections).
    pub ce_marked: u64,
    /// CE-marked packets the client reported in its ACK frames' ECN counts.
    pub ce_reported: u64,
    /// Congestion events started by an increased CE count.
    pub congestion_events: u64,
    /// ECN validation failed and the server stopped marking.
    pub validation_failed: bool,
}

/// One connection of a QUIC flow and its transfer.
#[derive(Serialize, Debug, Clone)]
pub struct TransferOut {
    /// When the client started the connection, from the flow's start.
    pub start_ns: u64,
    /// Last byte at the client, and the client's handshake completion, from `start_ns`.
    pub completion_ns: Option<u64>,
    pub handshake_ns: Option<u64>,
    /// The client sent its request in 0-RTT.
    pub zero_rtt: bool,
    /// The server's initial congestion window (after the guard, if any), bytes.
    pub initial_cwnd_bytes: u64,
    /// The window history proposed before the guard reverted it to the default, if it did.
    pub guard_reverted_from: Option<u64>,
    /// Server: packets sent and declared lost on this connection; response bytes.
    pub packets_sent: u64,
    pub packets_lost: u64,
    pub bytes: u64,
    /// How the server's side ended: "close" (CONNECTION_CLOSE), "idle_timeout", "replaced"
    /// (the client came back before the server had closed it: recorded as a close, or for a
    /// 0-RTT reconnect carried on as the new connection's window), or null (open at the end).
    pub end: Option<String>,
    /// The server's cwnd when the connection ended (the value recorded into the history).
    pub end_cwnd_bytes: Option<u64>,
}

/// Counters of the server's congestion-window history (`cwnd_history::CwndHistoryStats`).
#[derive(Serialize, Debug, Clone)]
pub struct HistoryOut {
    /// "mean" or "ewma"; the guard ("none" or "rtt").
    pub average: String,
    pub guard: String,
    pub records_zero_rtt: u64,
    /// At the complete client hello of 1-RTT handshakes (`history_events =
    /// "close_every_hello"`; absent when 0).
    #[serde(skip_serializing_if = "is_zero")]
    pub records_full_handshake: u64,
    pub records_close: u64,
    pub records_idle_timeout: u64,
    /// Initial-window lookups that found history, and of those the ones where it raised the
    /// window above the default; the guard's reversions.
    pub hits: u64,
    pub raised: u64,
    pub guard_reverted: u64,
    /// The average (bytes) the history holds for the client at the end, if any.
    pub average_bytes: Option<u64>,
    pub samples: u64,
}

/// End-of-run state of a TCP connection. For TCP flows `delivered_bytes` and goodput count
/// application payload delivered in order; `delivered_packets` and delays count data segments
/// arriving at the receiver; offered counts every data segment sent, retransmissions included.
#[derive(Serialize, Debug, Clone)]
pub struct TcpOut {
    pub cc: String,
    pub state: String,
    /// Transfer size (0 = unlimited) and completion time from the flow's start, if done.
    pub bytes: u64,
    pub completion_ns: Option<u64>,
    pub app_bytes_delivered: u64,
    pub retransmits: u64,
    pub rto_count: u64,
    pub fast_recoveries: u64,
    pub cwnd_bytes: u64,
    pub srtt_ns: u64,
    pub min_rtt_ns: u64,
    /// Request/response flows: requests answered, and response times (request issued → last
    /// response byte delivered in order) of those answered in the measurement window.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub requests_completed: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub response_time_ns: Option<DelaySummary>,
    /// Flows with ECN (`ecn` other than "off").
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ecn: Option<EcnOut>,
    /// Flows with a socket send buffer (`send_buffer`): sk_sndbuf at the end, bytes of memory.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sndbuf_bytes: Option<u64>,
    /// Flows with TSO/GSO sending (`tso` other than "off"): the deferrals by
    /// `tcp_tso_should_defer` the sender began (each until it sent again).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tso_deferrals: Option<u64>,
}

/// What ECN did on a TCP flow over the whole run (warm-up included).
#[derive(Serialize, Debug, Clone)]
pub struct EcnOut {
    /// "classic" or "l4s".
    pub mode: String,
    /// The flow's packets that a queue or the air marked CE.
    pub ce_marked: u64,
    /// Data segments that arrived CE-marked at the receiver.
    pub ce_received: u64,
    /// The sender's window reductions for ECN (CWR episodes).
    pub reductions: u64,
    /// L4S: the CE-marked bytes the sender learnt of from the AccECN counters.
    pub ce_bytes_acked: u64,
}

#[derive(Serialize, Debug, Clone)]
pub struct StationOut {
    pub id: usize,
    pub mcs: u8,
    pub nss: u8,
    pub phy_rate_bps: u64,
    /// Airtime of exchanges the station sent (uplink) and received (downlink), after warmup.
    pub airtime_tx_ns: u64,
    pub airtime_rx_ns: u64,
    pub ampdu_hist_down: PaddedCounts,
    pub ampdu_hist_up: PaddedCounts,
    pub mean_ampdu_down: f64,
    pub mean_ampdu_up: f64,
    /// "fixed", "ideal" or "minstrel"; with rate control, `mcs`/`nss` above are the configured
    /// values and these means say what was used.
    pub rate_control: crate::spec::RateControl,
    /// Mean PHY rate of the data PPDUs sent after warm-up (0 if none).
    pub mean_phy_rate_down_bps: f64,
    pub mean_phy_rate_up_bps: f64,
    /// The relay station this one is associated with (null: the AP).
    pub parent: Option<u32>,
}

/// Fields in key order, as the result file has them: the canonical writer (`canonical.rs`)
/// then writes them as they come, with no reordering copy.
#[derive(Serialize, Debug, Clone)]
pub struct TimeSeries {
    pub bin_ns: u64,
    /// Per flow (empty lists for flows that are not aggctl): the receiver's last reported mean
    /// aggregation (`est_ampdu`) and the allocator's send rate (`rate_bps`), held from bin to
    /// bin (0 before the first value and after the flow's stop).
    pub flow_aggctl_est_ampdu: Vec<Vec<f64>>,
    pub flow_aggctl_rate_bps: Vec<Vec<f64>>,
    /// Per flow (empty lists for flows that are neither TCP nor QUIC; for QUIC the server side): last value in each bin.
    pub flow_cwnd_bytes: Vec<Vec<f64>>,
    pub flow_delay_mean_ns: Vec<Vec<f64>>,
    pub flow_goodput_bps: Vec<Vec<f64>>,
    pub flow_inflight_bytes: Vec<Vec<f64>>,
    pub flow_pacing_rate_bps: Vec<Vec<f64>>,
    /// Retransmitted segments in each bin.
    pub flow_retransmits: Vec<Vec<f64>>,
    /// Mean RTT sample in each bin (0 where none).
    pub flow_rtt_ns: Vec<Vec<f64>>,
    /// Per node (0 = the AP, 1 + s = station s; empty lists for nodes that do not forward):
    /// the interface queue's backlog and packet limit (WQM moves it), mean of the samples
    /// taken every `ap.wqm_interval` in each bin.
    pub node_backlog_packets: Vec<Vec<f64>>,
    pub node_queue_limit: Vec<Vec<f64>>,
    pub station_airtime_frac: Vec<Vec<f64>>,
    pub station_mean_ampdu_down: Vec<Vec<f64>>,
    /// Mean downlink PHY rate of the PPDUs started in each bin (0 where none).
    pub station_phy_rate_down_bps: Vec<Vec<f64>>,
    /// SNR at the middle of each bin (empty unless `error_model = "snr"`).
    pub station_snr_db: Vec<Vec<f64>>,
    pub t_ns: Vec<u64>,
}

/// Counts indexed 0..`len`, of which only the first `counts.len()` are stored (the rest are
/// zero): a station that never sent costs no list of zeros until it is written.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PaddedCounts {
    pub counts: Vec<u64>,
    pub len: usize,
}

impl PaddedCounts {
    /// All `len` counts.
    pub fn iter(&self) -> impl Iterator<Item = u64> + '_ {
        self.counts.iter().copied().chain(std::iter::repeat_n(0, self.len.saturating_sub(self.counts.len())))
    }
}

impl Serialize for PaddedCounts {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_seq(self.iter())
    }
}

fn hist_mean(h: &[u64]) -> f64 {
    let n: u64 = h.iter().sum();
    if n == 0 {
        return 0.0;
    }
    h.iter().enumerate().map(|(i, &c)| i as f64 * c as f64).sum::<f64>() / n as f64
}

pub fn collect(w: &World) -> RunData {
    let spec = w.spec();
    let dur = spec.sim.duration_ns;
    let window_s = (dur - spec.sim.warmup_ns) as f64 * 1e-9;
    let flows = spec.flows.iter().enumerate().map(|(i, f)| flow_out(w, i, f, window_s)).collect();
    let stations = (0..spec.stations.len()).map(|i| station_out(w, i)).collect();
    let ts = timeseries(w);
    let t = &w.totals;
    RunData {
        stats: Stats {
            events: w.events(),
            sim_time_ns: dur,
            mpdus_delivered: t.mpdus_delivered,
            mpdu_attempts: t.mpdu_attempts,
            ppdus: t.ppdus,
            collisions: t.collisions,
            beacons: t.beacons,
            packets_in_system: w.packets_in_system(),
            ack_filtered: w.ack_filtered,
        },
        channel: Channel {
            busy_ns: t.busy_ns,
            busy_frac: t.busy_ns as f64 / dur as f64,
            tx_attempts: t.ppdus,
            collisions: t.collisions,
        },
        flows,
        stations,
        timeseries: ts,
        vwire: w.vwire_out(),
        ofdma: ofdma_out(w),
    }
}

/// Flow `i` (spec `f`) over the measurement window of `window_s` seconds.
fn flow_out(w: &World, i: usize, f: &FlowSpec, window_s: f64) -> FlowOut {
    let c = &w.counters[i];
    let drops = c.dropped_queue + c.dropped_retry + c.dropped_wired;
    FlowOut {
        id: i,
        station: f.station,
        direction: f.direction,
        pattern: f.pattern,
        offered_packets: c.offered_packets,
        offered_bytes: c.offered_bytes,
        delivered_packets: c.delivered_packets,
        delivered_bytes: c.delivered_bytes,
        dropped_queue: c.dropped_queue,
        dropped_retry: c.dropped_retry,
        dropped_wired: c.dropped_wired,
        goodput_bps: c.delivered_bytes as f64 * 8.0 / window_s,
        loss: if drops + c.delivered_packets == 0 { 0.0 } else { drops as f64 / (drops + c.delivered_packets) as f64 },
        delay_ns: c.delay.summary(),
        tcp: w.tcp_out(i),
        quic: w.quic_out(i),
        aggctl: w.aggctl_out(i),
        split: w.split_out(i),
        external: w.external_label(i).map(str::to_string),
    }
}

/// Station `i`: its rate, airtime and aggregation.
fn station_out(w: &World, i: usize) -> StationOut {
    let spec = w.spec();
    let tx = w.station_tx(i);
    let h = w.station_ampdu_hist(i);
    let a = w.station_airtime(i);
    StationOut {
        id: i,
        mcs: tx.mcs,
        nss: tx.nss,
        phy_rate_bps: tx.data_rate_bps(),
        airtime_tx_ns: a[1].as_nanos(),
        airtime_rx_ns: a[0].as_nanos(),
        ampdu_hist_down: PaddedCounts { counts: h[0].clone(), len: w.ampdu_hist_len() },
        ampdu_hist_up: PaddedCounts { counts: h[1].clone(), len: w.ampdu_hist_len() },
        mean_ampdu_down: hist_mean(&h[0]),
        mean_ampdu_up: hist_mean(&h[1]),
        rate_control: spec.stations[i].rate_control,
        mean_phy_rate_down_bps: w.station_mean_rate(i)[0],
        mean_phy_rate_up_bps: w.station_mean_rate(i)[1],
        parent: spec.stations[i].parent,
    }
}

/// The world's binned series as the result's time series: rates, means per bin and samples.
fn timeseries(w: &World) -> TimeSeries {
    let spec = w.spec();
    let dur = spec.sim.duration_ns;
    let bins = w.ts.goodput.bins();
    let bin = spec.sim.bin_ns;
    // The last bin may be shorter than the others.
    let bin_len = |b: usize| ((b as u64 + 1) * bin).min(dur) - b as u64 * bin;
    let per_bin = |row: &[f64], f: &dyn Fn(usize, f64) -> f64| row.iter().enumerate().map(|(b, &v)| f(b, v)).collect::<Vec<f64>>();
    let n_flows = spec.flows.len();
    let tcp_rows = |s: &crate::metrics::Series| -> Vec<Vec<f64>> {
        (0..n_flows).map(|f| if w.is_tcp(f) || w.is_quic(f) { s.row(f).to_vec() } else { Vec::new() }).collect()
    };
    let n_sta = spec.stations.len();
    // Per-bin mean of row `i`: sum / count (0 where the count is 0).
    let mean_row = |sum: &crate::metrics::Series, n: &crate::metrics::Series, i: usize| {
        let n = n.row(i);
        per_bin(sum.row(i), &|b, v| if n[b] > 0.0 { v / n[b] } else { 0.0 })
    };
    TimeSeries {
        bin_ns: bin,
        t_ns: (0..bins as u64).map(|b| b * bin).collect(),
        flow_goodput_bps: (0..n_flows)
            .map(|f| per_bin(w.ts.goodput.row(f), &|b, v| v / (bin_len(b) as f64 * 1e-9)))
            .collect(),
        flow_delay_mean_ns: (0..n_flows).map(|f| mean_row(&w.ts.delay_sum, &w.ts.delay_n, f)).collect(),
        station_mean_ampdu_down: (0..n_sta).map(|s| mean_row(&w.ts.ampdu_mpdus, &w.ts.ampdu_n, s)).collect(),
        station_airtime_frac: (0..n_sta)
            .map(|s| per_bin(w.ts.airtime.row(s), &|b, v| v / bin_len(b) as f64))
            .collect(),
        station_phy_rate_down_bps: (0..n_sta).map(|s| mean_row(&w.ts.phy_rate, &w.ts.ampdu_n, s)).collect(),
        station_snr_db: (0..n_sta)
            .map(|s| {
                if spec.stations[s].error_model != crate::spec::ErrorModel::Snr {
                    return Vec::new();
                }
                (0..bins).map(|b| w.station_snr_at(s, Instant(b as u64 * bin + bin_len(b) / 2))).collect()
            })
            .collect(),
        flow_cwnd_bytes: tcp_rows(&w.ts.cwnd),
        flow_inflight_bytes: tcp_rows(&w.ts.inflight),
        flow_pacing_rate_bps: tcp_rows(&w.ts.pacing),
        flow_rtt_ns: (0..n_flows)
            .map(|f| if w.is_tcp(f) || w.is_quic(f) { mean_row(&w.ts.rtt_sum, &w.ts.rtt_n, f) } else { Vec::new() })
            .collect(),
        flow_retransmits: tcp_rows(&w.ts.retx),
        node_queue_limit: (0..=n_sta).map(|n| if w.is_forwarding(n) { mean_row(&w.ts.node_limit, &w.ts.node_n, n) } else { Vec::new() }).collect(),
        node_backlog_packets: (0..=n_sta).map(|n| if w.is_forwarding(n) { mean_row(&w.ts.node_backlog, &w.ts.node_n, n) } else { Vec::new() }).collect(),
        flow_aggctl_rate_bps: (0..n_flows).map(|f| w.aggctl_rows(f).0).collect(),
        flow_aggctl_est_ampdu: (0..n_flows).map(|f| w.aggctl_rows(f).1).collect(),
    }
}
