//! `[[flows]]` as the normalized spec holds them (`FlowSpec`: pattern, transport and its keys,
//! the split proxy's), their defaults, and the rules of the TCP and QUIC patterns.

use super::*;

#[derive(Clone, Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct FlowSpec {
    pub station: u32,
    /// "down", "up", or "cross" (wired path only, consumed at the AP).
    pub direction: Direction,
    pub pattern: Pattern,
    pub rate_bps: u64,
    pub packet_size: u32,
    pub start_ns: u64,
    pub stop_ns: u64,
    /// TCP: congestion controller, one of [`Cc`]; QUIC: of [`QUIC_CONGESTION_CONTROLS`].
    #[serde(default = "default_cc")]
    pub cc: Cc,
    /// TCP: the ECN the connection uses, a name of `lasthop_algo::ecn::EcnMode::NAMES`
    /// ("off", "classic", "l4s").
    #[serde(default, with = "names::ecn")]
    pub ecn: EcnMode,
    /// TCP: application bytes to transfer; 0 = unlimited bulk transfer.
    #[serde(default)]
    pub bytes: u64,
    /// TCP: pacing at the sender (default: on for BBR, off otherwise).
    #[serde(default)]
    pub pacing: Option<bool>,
    /// TCP CUBIC: the slow-start exit, a name of [`HYSTARTS`] ("linux", "hystart++", "off").
    #[serde(default = "default_hystart", deserialize_with = "choices::hystart_name")]
    pub hystart: String,
    /// TCP BBR: the ACK-aggregation (extra_acked) estimator.
    #[serde(default = "yes")]
    pub extra_acked: bool,
    /// TCP application: "bulk" or "request_response".
    #[serde(default = "default_app")]
    pub app: App,
    /// request_response: bytes per request (client → server) and per response.
    #[serde(default)]
    pub request_bytes: u64,
    #[serde(default)]
    pub response_bytes: u64,
    /// request_response: pause between a response and the next request.
    #[serde(default)]
    pub think_time_ns: u64,
    /// request_response: requests to issue (0 = until the flow stops).
    #[serde(default)]
    pub requests: u64,
    /// QUIC: "quic" (TCP_ACKING, pacing) or "bquic" (ACK_DECIMATION, no pacing: Bursty QUIC).
    #[serde(default = "default_profile")]
    pub profile: Profile,
    /// QUIC: receiver ACK policy overriding the profile's ("tcp_acking", "ack_decimation",
    /// "ack_frequency").
    #[serde(default)]
    pub ack_policy: Option<String>,
    /// QUIC: a resumed connection whose client sends its request in 0-RTT.
    #[serde(default)]
    pub zero_rtt: bool,
    /// QUIC: initial congestion window in packets.
    #[serde(default = "default_initial_cwnd")]
    pub initial_cwnd: u32,
    /// QUIC: a web page's objects (bytes each, the HTML first); empty = one response of
    /// `bytes`.
    #[serde(default)]
    pub objects: Vec<u64>,
    /// QUIC: connections opened one after another, each a new endpoint pair downloading
    /// `bytes` (or the page); 1 = one connection (the flow's historic behaviour).
    #[serde(default = "one")]
    pub connections: u32,
    /// QUIC: pause between a transfer's last byte and the next connection's start.
    #[serde(default)]
    pub idle_ns: u64,
    /// QUIC: max_idle_timeout of both ends. With `idle_ns` below it the client closes a
    /// connection right after its transfer (CONNECTION_CLOSE); otherwise it is left to the
    /// idle timeout.
    #[serde(default = "default_idle_timeout")]
    pub idle_timeout_ns: u64,
    /// QUIC: how connections after the first start: "1rtt" (full handshake) or "0rtt"
    /// (resumed: the request rides in 0-RTT and the server continues with the window it still
    /// holds for the client).
    #[serde(default = "default_reconnect")]
    pub reconnect: Reconnect,
    /// QUIC: the server's congestion-window history (`lasthop_algo::control::cwnd_history`):
    /// "none", "mean" or "ewma".
    #[serde(default = "default_history")]
    pub history: History,
    /// QUIC: guard on the history-based window: "none" or "rtt" (`cwnd_history::rtt_guard`).
    #[serde(default = "default_history_guard")]
    pub history_guard: HistoryGuard,
    /// QUIC: where the server observes its window for the history: "close_0rtt" or
    /// "close_every_hello" (`cwnd_history::HistoryEvent::FullHandshake` as well).
    #[serde(default = "default_history_events", skip_serializing_if = "is_default_history_events")]
    pub history_events: HistoryEvents,
    /// TCP download or upload: split at the AP's proxy (`world/hosts/vwire.rs`, `vwire/upload.rs`);
    /// the wired-side connection runs `split_wired_cc`, the WiFi-side one `cc` (the AP's sender
    /// for a download, the station's for an upload).
    #[serde(default)]
    pub split: bool,
    #[serde(default = "default_wired_cc")]
    pub split_wired_cc: Cc,
    /// TCP: the server application writes at this rate (bit/s, every 10 ms); 0 = bulk.
    #[serde(default)]
    pub app_rate_bps: u64,
    /// TCP bulk: the sender's socket send buffer, a name of [`SEND_BUFFERS`] ("none", "linux");
    /// written only when not "none".
    #[serde(default = "default_send_buffer", skip_serializing_if = "is_default_send_buffer")]
    pub send_buffer: String,
    /// TCP: the sender's TSO/GSO sending, a name of [`TSOS`] ("off", "linux-3.17"); written
    /// only when not "off".
    #[serde(default = "default_tso", skip_serializing_if = "is_default_tso")]
    pub tso: String,
    /// QUIC that paces: the pacer's schedule, a name of [`PACERS`] ("per-packet",
    /// "chromium-v39"); written only when not "per-packet".
    #[serde(default = "default_pacer", skip_serializing_if = "is_default_pacer")]
    pub pacer: String,
    /// vwire: the flow's class, bypassing the classifier (`AppClass` names).
    #[serde(default)]
    pub app_class: Option<String>,
    /// vwire: the flow's utility, overriding its class's default.
    #[serde(default)]
    pub utility: Option<UtilitySpec>,
    /// WMM access category of the flow's packets, both directions ("BK", "BE", "VI", "VO");
    /// None = `mac.access_category` (`world/wmm.rs`).
    #[serde(default, with = "names::access_category_opt", skip_serializing_if = "Option::is_none")]
    pub ac: Option<AccessCategory>,
}

impl FlowSpec {
    /// The keys only a TCP flow's normalized form carries (the split proxy's and the paced
    /// application's); a flow of another pattern is written without them.
    pub const TCP_ONLY: [&'static str; 5] = ["split", "split_wired_cc", "app_rate_bps", "app_class", "utility"];

    /// The flow as the normalized spec writes it.
    pub fn to_value(&self) -> serde_json::Value {
        let mut v = serde_json::to_value(self).expect("a flow serializes");
        if self.pattern != Pattern::Tcp {
            let m = v.as_object_mut().expect("an object");
            for k in Self::TCP_ONLY {
                m.remove(k);
            }
        }
        v
    }
}

fn default_wired_cc() -> Cc {
    Cc::Bbr
}

fn one() -> u32 {
    1
}
fn default_idle_timeout() -> u64 {
    30_000_000_000
}
fn default_reconnect() -> Reconnect {
    Reconnect::OneRtt
}
fn default_history() -> History {
    History::Off
}
fn default_history_guard() -> HistoryGuard {
    HistoryGuard::Off
}

fn default_history_events() -> HistoryEvents {
    HistoryEvents::Close0Rtt
}

fn is_default_history_events(e: &HistoryEvents) -> bool {
    *e == HistoryEvents::Close0Rtt
}

fn default_profile() -> Profile {
    Profile::Quic
}
fn default_initial_cwnd() -> u32 {
    10
}

fn default_app() -> App {
    App::Bulk
}
fn default_send_buffer() -> String {
    SEND_BUFFERS[0].into()
}

fn is_default_send_buffer(s: &String) -> bool {
    s == SEND_BUFFERS[0]
}

fn default_tso() -> String {
    TSOS[0].into()
}

fn is_default_tso(s: &String) -> bool {
    s == TSOS[0]
}

fn default_pacer() -> String {
    PACERS[0].into()
}

fn is_default_pacer(s: &String) -> bool {
    s == PACERS[0]
}

fn default_hystart() -> String {
    HYSTARTS[0].into()
}
fn default_cc() -> Cc {
    Cc::Cubic
}

/// `flows[i]` with `pattern = "tcp"`.
pub(super) fn tcp_flow_problems(i: usize, f: &FlowSpec, bad: &mut dyn FnMut(&str, String, String)) {
    if f.direction == Direction::Cross {
        bad(&format!("flows[{i}].pattern"), "\"tcp\"".into(), "cbr, poisson or saturated for cross traffic".into());
    }
    if let Some(why) = ecn_mismatch(f.cc, f.ecn) {
        bad(&format!("flows[{i}].ecn"), format!("{:?}", names::ecn_name(f.ecn)), why);
    }
    if f.app == App::RequestResponse && (f.request_bytes == 0 || f.response_bytes == 0) {
        bad(&format!("flows[{i}].response_bytes"), f.response_bytes.to_string(), "request_bytes and response_bytes > 0".into());
    }
    if f.packet_size < 120 {
        bad(&format!("flows[{i}].packet_size"), f.packet_size.to_string(), "at least 120 bytes for TCP (52 bytes of headers)".into());
    }
}

/// `flows[i]` with `pattern = "quic"`.
pub(super) fn quic_flow_problems(i: usize, f: &FlowSpec, bad: &mut dyn FnMut(&str, String, String)) {
    if f.direction != Direction::Down {
        bad(&format!("flows[{i}].direction"), format!("{:?}", f.direction.as_str()), "\"down\" for QUIC (a download from the server)".into());
    }
    if !QUIC_CONGESTION_CONTROLS.contains(&f.cc) {
        let names: Vec<String> = QUIC_CONGESTION_CONTROLS.iter().map(|n| format!("{:?}", n.as_str())).collect();
        bad(&format!("flows[{i}].cc"), format!("{:?}", f.cc.as_str()), format!("one of {} for QUIC", names.join(", ")));
    } else if let Some(why) = ecn_mismatch_in(f.cc, f.ecn, &QUIC_CONGESTION_CONTROLS) {
        bad(&format!("flows[{i}].ecn"), format!("{:?}", names::ecn_name(f.ecn)), why);
    }
    if !f.objects.is_empty() && f.bytes != 0 {
        bad(&format!("flows[{i}].bytes"), f.bytes.to_string(), "not with a page (objects)".into());
    }
    if f.connections > 1 && f.bytes == 0 && f.objects.is_empty() {
        bad(&format!("flows[{i}].connections"), f.connections.to_string(), "1 for an endless download (bytes = 0); later connections need a finite transfer".into());
    }
    if f.history_guard != HistoryGuard::Off && f.history == History::Off {
        bad(&format!("flows[{i}].history_guard"), format!("{:?}", f.history_guard.as_str()), "\"none\" unless history is \"mean\" or \"ewma\"".into());
    }
    if f.packet_size < 1228 {
        bad(&format!("flows[{i}].packet_size"), f.packet_size.to_string(), "at least 1228 bytes for QUIC (1200-byte UDP payloads, RFC 9000 §14)".into());
    }
}
