//! A QUIC endpoint model, sans-IO: the timing-relevant parts of RFC 9000 (transport) and
//! RFC 9002 (loss detection and congestion control) as implemented by Chromium's QUIC, the
//! stack studied in "Improving Performance of QUIC in WiFi" (Manzoor et al., WCNC 2019).
//! No cryptography and no byte encoding: packets and frames are Rust data ([`packet`]) whose
//! lengths are the RFC 9000 encoded lengths, so datagram sizes are right.
//!
//! What is modelled:
//! * Handshake timing (RFC 9000 §7, RFC 9001 §4): the client's Initial (ClientHello, padded to
//!   1200 bytes, §14.1); the server's Initial (ServerHello) coalesced with its Handshake flight
//!   (`server_handshake_bytes` of certificate and friends), bounded by the 3× anti-amplification
//!   limit until the client's Handshake packet validates the address (§8.1); the client's
//!   Handshake Finished, after which the client is complete and sends 1-RTT data (1 RTT after
//!   start); the server completes and confirms on the Finished and sends HANDSHAKE_DONE, which
//!   confirms the client. The server sends 1-RTT (0.5-RTT) data right after its flight. With
//!   `zero_rtt` (a resumed session, both ends configured), the client sends stream data in
//!   0-RTT packets right after its Initial. Keys are discarded as RFC 9001 §4.9 says (Initial
//!   when the client first sends / the server first receives a Handshake packet, Handshake on
//!   confirmation). Three packet-number spaces with their own numbers, ACKs and loss state.
//!   Transport parameters (§18.2) travel in the first CRYPTO frame of the client's Initial and
//!   the server's Handshake flight; a 0-RTT client assumes the server's are its own (the
//!   remembered values of a resumed session).
//! * Sender (RFC 9002): per-space sent-packet records (inline, no heap per packet), ACK
//!   processing with ranges, RTT estimation (§5, [`rtt`]), packet- and time-threshold loss
//!   detection (§6.1: 3 packets, 9/8·max(srtt, latest_rtt), 1 ms granularity), PTO with
//!   exponential backoff sending up to two probes that carry the oldest outstanding data or a
//!   PING (§6.2), persistent congestion (§7.6), one congestion event per recovery period
//!   (§7.3.2), lost STREAM/CRYPTO data and lost control frames resent in new packets, no cwnd
//!   growth when not cwnd-limited (§7.8, Chromium's `IsCwndLimited`), delivery-rate samples
//!   (draft-cheng-iccrg-delivery-rate-estimation) for the controller.
//! * Congestion control: any [`crate::cc::CcConfig`] controller; by default CUBIC in bytes as
//!   Chromium configures it (two emulated connections, no HyStart++) with Chromium's delay-
//!   based slow-start exit ([`HybridSlowStartConfig`], see there). Pacing as Chromium's
//!   pacing sender: rate = cwnd/srtt × 2 in slow start, × 1.25 otherwise (× 1 in recovery),
//!   an unpaced burst of `initial_burst_packets` at start and after quiescence, one packet per
//!   gap or, in [`pacer::PacerMode::ChromiumV39`], the code's 1 ms lumps; off means sending as
//!   fast as cwnd allows (the paper's Bursty QUIC).
//! * Which Chromium behaviour each sender part follows: `RttStats::UpdateRtt` for the RTT
//!   state (min_rtt from raw samples; the latest sample less the peer's ACK delay when that
//!   stays at or above min_rtt, which is also the sample `HybridSlowStart::ShouldExitSlowStart`
//!   compares with min_rtt here, as `TcpCubicSenderBytes` hands it `latest_rtt`); the
//!   controller itself is given the raw sample (our CUBIC/BBR take their own RTT rules);
//!   `TcpCubicSenderBytes` for the window (two-connection CUBIC, `IsCwndLimited` growth
//!   gate); `PacingSender` for pacing ([`pacer`]); loss detection follows RFC 9002 rather than
//!   Chromium's `GeneralLossAlgorithm` (which uses the adjusted latest RTT in its time
//!   threshold).
//! * Receiver: received packet-number ranges per space; Initial and Handshake packets are
//!   acknowledged at once (RFC 9000 §13.2.1), 0-RTT/1-RTT packets as the configured
//!   [`AckPolicy`](crate::control::ack_policy::AckPolicy) decides (TCP_ACKING, ACK_DECIMATION,
//!   ACK-frequency). ACK frames carry the [`packet::MAX_ACK_RANGES`] highest ranges, the ACK
//!   delay of the largest packet, and ranges already acknowledged by the peer are dropped
//!   (§13.2.4). An ACK is piggybacked on every ack-eliciting packet when ack-eliciting packets
//!   await acknowledgement. A receiver that only sends ACKs makes every 20th ack-eliciting
//!   with a PING (Chromium), so it keeps an RTT estimate (needed by ACK_DECIMATION).
//! * Streams: bidirectional streams (client ids 0, 4, 8…, server ids 1, 5, 9…), written by
//!   the application, scheduled round-robin one stream per packet turn with each stream's
//!   retransmissions before its new data; reassembly tracked by ranges; data delivered (and
//!   consumed) as soon as it is in order. Flow control per stream and per connection (§4):
//!   the receiver sends MAX_STREAM_DATA / MAX_DATA when less than half the window remains.
//! * ECN (`ecn`, [`conn`]'s `ecn` module): every packet carries the mode's codepoint until
//!   validation fails; each packet-number space counts the codepoints it receives (§13.4.1)
//!   and ACK frames carry the counts (§19.3.2); the sender validates them (§13.4.2.1: counts
//!   never decrease, and the increase covers the newly acknowledged ECT packets) and an
//!   increased CE count is a congestion event (RFC 9002 §7.1, §B.7 `ProcessECN`) under the
//!   same one-per-recovery-period rule as a loss, reported to the controller as an ECN signal
//!   (`on_ecn_mark`) with the newly CE-marked bytes (`ce_acked`) for scalable controllers.
//! * Lifecycle: idle timeout (§10.1, the smaller of both ends, at least 3 PTO), explicit
//!   close with CONNECTION_CLOSE (the closing/draining periods are not modelled: both ends
//!   stop at once).
//!
//! Simplified or left out: packets that cannot be decrypted yet (1-RTT before the handshake
//! completes, after a lost Handshake packet) are dropped rather than buffered; no Retry,
//! version negotiation, connection migration, key update, stream limits (MAX_STREAMS), stream
//! resets, DATA_BLOCKED frames or the client's anti-deadlock PTO (§6.2.2.1); a STREAM
//! frame always carries its Length; persistent congestion sets cwnd to one packet (the
//! controller's RTO response) rather than kMinimumWindow = 2 packets.

pub mod conn;
pub mod pacer;
pub mod packet;
pub mod ranges;
pub mod rtt;
mod stream;

#[cfg(test)]
mod tests;

pub use conn::QuicConnection;
pub use packet::{AckFrame, Datagram, EcnCounts, Frame, Packet, PacketType, Space, TransportParams};
pub use rtt::RttEstimator;

use crate::cc::cubic::HyStartConfig;
use crate::cc::{CcConfig, CubicConfig};
use crate::control::ack_policy::AckPolicyConfig;
use lasthop_core::Duration;

/// Which end of the connection.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Role {
    Client,
    Server,
}

/// Chromium's delay-based slow-start exit ("HybridSlowStart", the delay half of HyStart as
/// Chromium keeps it, with RFC 9406's thresholds), written from its description in Manzoor et
/// al. §IV-B.1: "If the minimum delay of the first few packets of the current burst exceeds
/// the minimum delay during the session by a certain threshold, the slow start phase exits."
/// A round starts when a packet sent after the previous round started is acknowledged and
/// ends with the packet last sent at its start; the minimum of its first `n_samples` RTT
/// samples is compared with the session min_rtt + clamp(min_rtt / `divisor`, `min_thresh`,
/// `max_thresh`). Chromium only exits once cwnd ≥ `low_window_packets` (its
/// kHybridStartLowWindow = 16).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct HybridSlowStartConfig {
    /// RTT samples per round that are compared (8).
    pub n_samples: u32,
    /// Lower bound of the threshold (4 ms).
    pub min_thresh: Duration,
    /// Upper bound of the threshold (16 ms).
    pub max_thresh: Duration,
    /// The threshold is min_rtt / this, clamped (8).
    pub divisor: u32,
    /// No exit below this cwnd, in packets (16).
    pub low_window_packets: u32,
}

impl Default for HybridSlowStartConfig {
    fn default() -> Self {
        HybridSlowStartConfig {
            n_samples: 8,
            min_thresh: Duration::from_millis(4),
            max_thresh: Duration::from_millis(16),
            divisor: 8,
            low_window_packets: 16,
        }
    }
}

/// What the sender asks the peer with an ACK_FREQUENCY frame (draft-ietf-quic-ack-frequency-14
/// §4), sent once the handshake is confirmed if the peer advertised min_ack_delay.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct AckFrequencyRequest {
    /// Ack-Eliciting Threshold: ACK after more than this many ack-eliciting packets.
    pub threshold: u64,
    /// Requested Max Ack Delay.
    pub max_ack_delay: Duration,
    /// Reordering Threshold.
    pub reordering: u64,
}

/// Parameters of a [`QuicConnection`].
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct QuicConfig {
    pub role: Role,
    /// Largest UDP payload sent (1350, Chromium's default packet size). At least 1200.
    pub max_udp_payload: u32,
    /// Initial congestion window in packets of `max_udp_payload` (10, RFC 9002 §7.2; Chromium
    /// has used 32).
    pub initial_cwnd_packets: u32,
    /// Initial congestion window in bytes, overriding `initial_cwnd_packets` (e.g. from a
    /// history-based choice, `control::cwnd_history`).
    pub initial_cwnd_bytes: Option<u64>,
    /// Congestion controller. Default: CUBIC with two emulated connections, HyStart++ off.
    pub cc: CcConfig,
    /// Chromium's delay-based slow-start exit (on top of any window-based controller). Default on.
    pub hybrid_slow_start: Option<HybridSlowStartConfig>,
    /// Chromium-like pacing. Default on.
    pub pacing: bool,
    /// Packets sent unpaced at start and after quiescence (10, Chromium's initial burst).
    pub initial_burst_packets: u32,
    /// The pacer's schedule: one packet per gap (default) or Chromium's code of the QUIC v39
    /// era, with its 1 ms alarm granularity ([`pacer::PacerMode`]).
    pub pacer: pacer::PacerMode,
    /// Receiver ACK policy for 0-RTT/1-RTT packets; its `max_ack_delay` (25 ms) is also the
    /// transport parameter this endpoint advertises.
    pub ack_policy: AckPolicyConfig,
    /// ACK_FREQUENCY request to send to the peer, if any (needs the peer to use the
    /// AckFrequency policy). Default none.
    pub ack_frequency_request: Option<AckFrequencyRequest>,
    /// max_idle_timeout (30 s). Must be non-zero.
    pub idle_timeout: Duration,
    /// initial_max_data this endpoint grants (connection receive window, 15 MiB as Chromium).
    pub initial_max_data: u64,
    /// initial_max_stream_data_bidi_* this endpoint grants (stream receive window, 6 MiB).
    pub initial_max_stream_data: u64,
    /// 0-RTT: the client sends stream data right after its Initial; the server accepts it.
    pub zero_rtt: bool,
    /// Bytes of the server's Handshake flight (EncryptedExtensions, Certificate,
    /// CertificateVerify, Finished): 3000.
    pub server_handshake_bytes: u32,
    /// RFC 9002 kPacketThreshold (3).
    pub packet_threshold: u64,
    /// Persistent congestion (RFC 9002 §7.6). Default on.
    pub persistent_congestion: bool,
    /// ECN (RFC 9000 §13.4, RFC 9002 §7.1): the codepoint sent (classic ECT(0), L4S ECT(1)),
    /// ECN counts in ACK frames, validation of the path, and a congestion event on an
    /// increased CE count. Default off.
    pub ecn: crate::ecn::EcnMode,
}

/// Bytes of the ClientHello (with the session ticket when resuming).
pub const CLIENT_HELLO_BYTES: u32 = 300;
/// Bytes of the ServerHello.
pub const SERVER_HELLO_BYTES: u32 = 90;
/// Bytes of the client's Finished.
pub const CLIENT_FINISHED_BYTES: u32 = 36;

impl QuicConfig {
    /// Chromium-like defaults for one role.
    pub fn new(role: Role) -> Self {
        QuicConfig {
            role,
            max_udp_payload: 1350,
            initial_cwnd_packets: 10,
            initial_cwnd_bytes: None,
            cc: CcConfig::Cubic(CubicConfig {
                num_connections: 2,
                hystart: HyStartConfig { enabled: false, ..HyStartConfig::default() },
                initial_growth: false,
                ..CubicConfig::default()
            }),
            hybrid_slow_start: Some(HybridSlowStartConfig::default()),
            pacing: true,
            initial_burst_packets: 10,
            pacer: pacer::PacerMode::PerPacket,
            ack_policy: AckPolicyConfig::default(),
            ack_frequency_request: None,
            idle_timeout: Duration::from_secs(30),
            initial_max_data: 15 << 20,
            initial_max_stream_data: 6 << 20,
            zero_rtt: false,
            server_handshake_bytes: 3000,
            packet_threshold: 3,
            persistent_congestion: true,
            ecn: crate::ecn::EcnMode::Off,
        }
    }

    pub fn client() -> Self {
        Self::new(Role::Client)
    }

    pub fn server() -> Self {
        Self::new(Role::Server)
    }

    /// The paper's Bursty QUIC: ACK_DECIMATION and no pacing.
    pub fn bursty(role: Role) -> Self {
        QuicConfig {
            pacing: false,
            ack_policy: AckPolicyConfig::with_kind(crate::control::ack_policy::AckPolicyKind::AckDecimation),
            ..Self::new(role)
        }
    }

    pub fn validate(&self) -> Result<(), QuicConfigError> {
        let err = |field, allowed| Err(QuicConfigError { field, allowed });
        if !(1200..=65527).contains(&self.max_udp_payload) {
            return err("max_udp_payload", "1200..=65527 (RFC 9000 §14, §18.2)");
        }
        if self.initial_cwnd_packets == 0 {
            return err("initial_cwnd_packets", ">= 1");
        }
        if self.initial_cwnd_bytes == Some(0) {
            return err("initial_cwnd_bytes", "None or >= 1");
        }
        if let Some(h) = self.hybrid_slow_start {
            if h.n_samples == 0 {
                return err("hybrid_slow_start.n_samples", ">= 1");
            }
            if h.divisor == 0 {
                return err("hybrid_slow_start.divisor", ">= 1");
            }
            if h.min_thresh > h.max_thresh {
                return err("hybrid_slow_start.min_thresh", "<= max_thresh");
            }
        }
        if self.ack_policy.validate().is_err() {
            return err("ack_policy", "a valid AckPolicyConfig (see AckPolicyConfig::validate)");
        }
        if let Some(r) = self.ack_frequency_request {
            if r.max_ack_delay.is_zero() || r.max_ack_delay >= crate::control::ack_policy::MAX_ACK_DELAY_LIMIT {
                return err("ack_frequency_request.max_ack_delay", "1 µs ..< 2^14 ms");
            }
        }
        if self.idle_timeout.is_zero() {
            return err("idle_timeout", "> 0");
        }
        if self.initial_max_data == 0 {
            return err("initial_max_data", ">= 1");
        }
        if self.initial_max_stream_data == 0 {
            return err("initial_max_stream_data", ">= 1");
        }
        if self.server_handshake_bytes == 0 || self.server_handshake_bytes > 10_000 {
            return err("server_handshake_bytes", "1..=10000 (within the 3x anti-amplification budget or a few round trips)");
        }
        if self.packet_threshold < 3 {
            return err("packet_threshold", ">= 3 (RFC 9002 §6.1.1)");
        }
        Ok(())
    }

    /// Initial congestion window in bytes.
    pub fn initial_cwnd(&self) -> u64 {
        self.initial_cwnd_bytes.unwrap_or(self.initial_cwnd_packets as u64 * self.max_udp_payload as u64)
    }
}

/// A configuration value outside its allowed range (the field and what is allowed).
pub type QuicConfigError = crate::control::FieldError;

/// Why a connection closed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CloseReason {
    IdleTimeout,
    /// [`QuicConnection::close`] was called with this application error code.
    Local(u64),
    /// The peer sent CONNECTION_CLOSE with this code.
    Peer(u64),
}

/// What the connection tells its application.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Event {
    /// The TLS handshake completed at this end (RFC 9001 §4.1.1).
    HandshakeComplete,
    /// The handshake is confirmed (RFC 9001 §4.1.2).
    HandshakeConfirmed,
    /// The peer opened a stream.
    StreamOpened { id: u64 },
    /// `bytes` more bytes of the stream were delivered in order.
    StreamData { id: u64, bytes: u64 },
    /// The last byte of the stream was delivered in order.
    StreamFinished { id: u64 },
    Closed { reason: CloseReason },
}

/// Monotone counters.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct QuicStats {
    pub datagrams_sent: u64,
    pub datagrams_received: u64,
    pub packets_sent: u64,
    pub packets_received: u64,
    /// UDP payload bytes.
    pub bytes_sent: u64,
    pub bytes_received: u64,
    /// Ack-eliciting / in-flight packets acknowledged, declared lost.
    pub packets_acked: u64,
    pub packets_lost: u64,
    /// Lost packets acknowledged later (the loss was spurious).
    pub spurious_losses: u64,
    pub bytes_lost: u64,
    pub ack_only_packets_sent: u64,
    pub acks_sent: u64,
    pub pto_count: u64,
    pub probes_sent: u64,
    pub congestion_events: u64,
    /// Of those, started by an increased ECN-CE count (RFC 9002 §7.1).
    pub ecn_congestion_events: u64,
    /// CE-marked packets the peer reported (the increases of its ECN-CE counts).
    pub ecn_ce_reported: u64,
    /// ECN validation failed (RFC 9000 §13.4.2.1): the endpoint stopped marking.
    pub ecn_failed: bool,
    pub persistent_congestion: u64,
    /// Stream payload bytes sent the first time and again.
    pub stream_bytes_sent: u64,
    pub stream_bytes_retransmitted: u64,
    /// Stream payload bytes received again (already had them).
    pub stream_bytes_duplicate: u64,
    pub duplicate_packets: u64,
    /// Packets dropped because their keys are not available (yet or any more).
    pub undecryptable_packets: u64,
    /// Stream data beyond the advertised flow-control limit (a peer error; counted, kept).
    pub flow_control_violations: u64,
    /// Times the sender had data but was blocked by stream or connection flow control.
    pub flow_control_blocked: u64,
    /// Delay-based slow-start exits.
    pub slow_start_delay_exits: u64,
}
