//! Congestion controllers, sans-IO, behind one trait with enum dispatch ([`AnyCc`]).
//!
//! The TCP sender (`crate::tcp::TcpSender`) owns loss detection, RTT estimation and delivery
//! rate sampling (draft-cheng-iccrg-delivery-rate-estimation) and feeds a controller with:
//! every ACK ([`AckInfo`], carrying a [`RateSample`]), the start of each loss-recovery episode,
//! its end, retransmission timeouts and window restarts after idle. The controller answers
//! with a congestion window and, optionally, a pacing rate. All quantities are bytes, bytes
//! per second and [`Duration`]s; floats only inside control laws.
//!
//! * [`newreno`]: RFC 5681 / RFC 6582.
//! * [`cubic`]: RFC 9438, with HyStart++ (RFC 9406).
//! * [`bbr`]: BBR v1 (draft-cardwell-iccrg-bbr-congestion-control-00), with the Linux
//!   ACK-aggregation ("extra_acked") estimator, switchable.
//! * [`dctcp`]: DCTCP (RFC 8257) over NewReno: the window reduced by α/2, α the moving average
//!   of the fraction of CE-marked bytes.
//! * [`prague`]: TCP Prague (draft-briscoe-iccrg-prague-congestion-control, Linux
//!   `tcp_prague.c`), the L4S scalable controller: DCTCP's α on a fractional window, increase
//!   on unmarked bytes only, RTT independence below a 25 ms virtual RTT, its own pacing rate.
//!
//! DCTCP and Prague need the per-byte CE feedback of Accurate ECN ([`AckInfo::ce_acked`]) and
//! react to ECN only in [`EcnMode::L4s`]; the others react to classic ECN as to a loss.

pub mod bbr;
pub mod cubic;
pub mod dctcp;
pub mod newreno;
pub mod prague;

pub use bbr::{Bbr, BbrConfig};
pub use cubic::{Cubic, CubicConfig};
pub use dctcp::{Dctcp, DctcpConfig};
pub use newreno::{NewReno, NewRenoConfig};
pub use prague::{Prague, PragueConfig};

use crate::ecn::EcnMode;
use lasthop_core::{Duration, Instant};

/// A delivery-rate sample, computed by the sender for each ACK that newly acknowledges data
/// (draft-cheng-iccrg-delivery-rate-estimation §3.3).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct RateSample {
    /// Bytes per second; 0 if the sample is invalid.
    pub delivery_rate: u64,
    /// max(send elapsed, ack elapsed) of the sample.
    pub interval: Duration,
    /// Bytes delivered during `interval`.
    pub delivered: u64,
    /// The sender's `delivered` when the most recently sent, newly acked packet was sent.
    pub prior_delivered: u64,
    /// The sample was taken while the sender was application-limited.
    pub is_app_limited: bool,
    /// RTT of the most recently sent, newly acked packet.
    pub rtt: Duration,
    /// Bytes in flight when that packet was sent.
    pub tx_in_flight: u64,
    /// Bytes newly marked lost by this ACK.
    pub newly_lost: u64,
}

/// What the sender tells its controller about one ACK.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct AckInfo {
    pub now: Instant,
    /// Bytes newly acknowledged (cumulatively or selectively) by this ACK.
    pub newly_acked: u64,
    /// Bytes by which this ACK advanced the cumulative acknowledgement point (`snd_una`); 0 for
    /// a duplicate ACK, even one that SACKs new data. Loss-based controllers grow cwnd only
    /// when this is positive (RFC 5681 §3.1: growth per ACK that cumulatively acknowledges new
    /// data; §3.2 step 1 / RFC 3042: cwnd unchanged on the first two duplicate ACKs).
    pub cum_acked: u64,
    /// Bytes in flight after processing the ACK (RFC 6675 "pipe").
    pub bytes_in_flight: u64,
    /// Bytes in flight before processing the ACK.
    pub prior_in_flight: u64,
    /// RTT sample from this ACK, if it produced one.
    pub rtt: Option<Duration>,
    pub min_rtt: Duration,
    pub srtt: Duration,
    /// Total bytes delivered since the connection started (C.delivered).
    pub delivered: u64,
    pub rate: Option<RateSample>,
    /// The sender is in fast recovery (RFC 6675) after a loss event.
    pub in_recovery: bool,
    pub mss: u32,
    /// Of `newly_acked`, the bytes that arrived CE-marked, as Accurate ECN feedback tells the
    /// sender (RFC 9768 §3.2.2.5, the increase of the echoed CE byte counter); 0 without
    /// AccECN feedback.
    pub ce_acked: u64,
    /// The sender used its cwnd in the window this ACK belongs to (Linux's
    /// `tcp_is_cwnd_limited`). Loss-based controllers grow cwnd only when it did (Linux
    /// `tcp_reno_cong_avoid`, `cubictcp_cong_avoid`; RFC 7661 §4.3's concern): a sender held
    /// back by pacing, TCP small queues, rwnd or its application keeps its window.
    pub cwnd_limited: bool,
}

impl AckInfo {
    /// Whether a loss-based controller may grow cwnd on this ACK: it advanced the cumulative
    /// point (Linux `tcp_may_raise_cwnd`'s forward progress) and the sender was cwnd-limited.
    pub fn may_raise_cwnd(&self) -> bool {
        self.cum_acked > 0 && self.cwnd_limited
    }
}

/// The narrow interface every congestion controller implements.
pub trait CongestionControl {
    /// Every ACK that arrives (also duplicate ACKs: `newly_acked` is then 0).
    fn on_ack(&mut self, a: &AckInfo);
    /// A loss-recovery episode starts (fast retransmit). Called once per episode.
    fn on_loss_event(&mut self, now: Instant, bytes_in_flight: u64, mss: u32);
    /// The episode ended (everything outstanding at its start is acknowledged).
    fn on_recovery_exit(&mut self, now: Instant);
    /// An ECN congestion signal: an ACK with ECE (RFC 3168 §6.1.2) or newly CE-marked bytes
    /// (AccECN). The sender gates it to at most once per round trip, outside loss recovery, and
    /// runs the episode as a window reduction without retransmission (Linux's CWR state), ended
    /// by [`CongestionControl::on_recovery_exit`]. The default reacts as to a loss (RFC 3168
    /// §6.1.2: "the same as the congestion control algorithm for a dropped packet"); DCTCP and
    /// Prague reduce by the fraction of marked bytes instead.
    fn on_ecn_mark(&mut self, now: Instant, bytes_in_flight: u64, mss: u32) {
        self.on_loss_event(now, bytes_in_flight, mss);
    }
    /// The retransmission timer fired.
    fn on_rto(&mut self, now: Instant, bytes_in_flight: u64, mss: u32);
    /// A segment left the sender (new data or retransmission).
    fn on_sent(&mut self, _now: Instant, _bytes: u32, _bytes_in_flight: u64) {}
    /// The sender restarts after an idle period (RFC 5681 §4.1; Linux
    /// `tcp_slow_start_after_idle`): cwnd := min(cwnd, `cwnd`) (the sender's decayed restart
    /// window), ssthresh kept ≥ ¾ of the window before the restart. BBR keeps this default,
    /// which does nothing (Linux applies the restart to window-based controllers only).
    fn on_idle_restart(&mut self, _now: Instant, _cwnd: u64) {}
    /// A delay-based detector outside the controller (QUIC's hybrid slow start,
    /// `crate::quic`) asks to leave slow start now: window-based controllers set
    /// ssthresh := cwnd. BBR keeps this default, which does nothing.
    fn exit_slow_start(&mut self, _now: Instant) {}
    /// Whether the sender should mark what it has in flight now as application-limited, so
    /// the rate samples it yields do not lower a bandwidth estimate (BBR in ProbeRTT: draft
    /// §4.3.5 BBRHandleProbeRTT, "Ignore low rate samples during ProbeRTT": C.app_limited :=
    /// C.delivered + packets_in_flight). Asked after every `on_ack`.
    fn mark_app_limited(&self) -> bool {
        false
    }
    /// Congestion window in bytes.
    fn cwnd(&self) -> u64;
    /// Slow-start threshold in bytes (u64::MAX while unset).
    fn ssthresh(&self) -> u64;
    /// The controller's own pacing rate in bytes/s, if it has one (BBR; Prague once it knows an
    /// RTT). Others return None and the sender derives one from cwnd/srtt when pacing is on.
    fn pacing_rate(&self) -> Option<u64>;
    fn in_slow_start(&self) -> bool;
    /// Short name of the current state for time series ("slow_start", "avoidance",
    /// "recovery", "cwr" (an ECN reduction episode), "startup", "drain", "probe_bw",
    /// "probe_rtt", ...).
    fn state(&self) -> &'static str;
}

/// Choice of controller and its parameters (a name in a spec maps to a variant here).
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum CcConfig {
    NewReno(NewRenoConfig),
    Cubic(CubicConfig),
    Bbr(BbrConfig),
    Dctcp(DctcpConfig),
    Prague(PragueConfig),
}

impl CcConfig {
    /// How many windows of segments the socket's send buffer is provisioned for (Linux's
    /// `tcp_congestion_ops.sndbuf_expand`, read by `tcp_sndbuf_expand`): 3 for BBR
    /// (`bbr_sndbuf_expand`: "BBR may slow-start even during recovery"), else Linux's default 2.
    pub fn sndbuf_expand(&self) -> u32 {
        match self {
            CcConfig::Bbr(_) => 3,
            _ => 2,
        }
    }

    /// Whether the controller reacts to the ECN feedback of `mode` (a flow whose packets are
    /// ECN-capable must have a controller that slows down on marks, or marking AQMs would
    /// never signal it): loss-based controllers to RFC 3168's; DCTCP and Prague to L4S's only
    /// (they need Accurate ECN's count of marked bytes, and without ECN at all they are a
    /// configuration error here); BBR v1 ignores ECN.
    pub fn reacts_to(&self, mode: EcnMode) -> bool {
        matches!(
            (self, mode),
            (CcConfig::NewReno(_) | CcConfig::Cubic(_) | CcConfig::Bbr(_), EcnMode::Off)
                | (CcConfig::NewReno(_) | CcConfig::Cubic(_), EcnMode::Classic)
                | (CcConfig::Dctcp(_) | CcConfig::Prague(_), EcnMode::L4s)
        )
    }
    pub fn build(&self, now: Instant, mss: u32, initial_cwnd: u64) -> AnyCc {
        match self {
            CcConfig::NewReno(c) => AnyCc::NewReno(NewReno::new(*c, now, mss, initial_cwnd)),
            CcConfig::Cubic(c) => AnyCc::Cubic(Cubic::new(*c, now, mss, initial_cwnd)),
            CcConfig::Bbr(c) => AnyCc::Bbr(Bbr::new(*c, now, mss, initial_cwnd)),
            CcConfig::Dctcp(c) => AnyCc::Dctcp(Dctcp::new(*c, now, mss, initial_cwnd)),
            CcConfig::Prague(c) => AnyCc::Prague(Prague::new(*c, now, mss, initial_cwnd)),
        }
    }
}

/// Enum dispatch over the controllers (no boxes in the hot loop).
#[derive(Clone, Debug)]
pub enum AnyCc {
    NewReno(NewReno),
    Cubic(Cubic),
    Bbr(Bbr),
    Dctcp(Dctcp),
    Prague(Prague),
}

macro_rules! dispatch {
    ($self:ident, $c:ident => $e:expr) => {
        match $self {
            AnyCc::NewReno($c) => $e,
            AnyCc::Cubic($c) => $e,
            AnyCc::Bbr($c) => $e,
            AnyCc::Dctcp($c) => $e,
            AnyCc::Prague($c) => $e,
        }
    };
}

impl CongestionControl for AnyCc {
    fn on_ack(&mut self, a: &AckInfo) {
        dispatch!(self, c => c.on_ack(a))
    }
    fn on_loss_event(&mut self, now: Instant, bif: u64, mss: u32) {
        dispatch!(self, c => c.on_loss_event(now, bif, mss))
    }
    fn on_recovery_exit(&mut self, now: Instant) {
        dispatch!(self, c => c.on_recovery_exit(now))
    }
    fn on_ecn_mark(&mut self, now: Instant, bif: u64, mss: u32) {
        dispatch!(self, c => c.on_ecn_mark(now, bif, mss))
    }
    fn on_rto(&mut self, now: Instant, bif: u64, mss: u32) {
        dispatch!(self, c => c.on_rto(now, bif, mss))
    }
    fn on_sent(&mut self, now: Instant, bytes: u32, bif: u64) {
        dispatch!(self, c => c.on_sent(now, bytes, bif))
    }
    fn on_idle_restart(&mut self, now: Instant, cwnd: u64) {
        dispatch!(self, c => c.on_idle_restart(now, cwnd))
    }
    fn exit_slow_start(&mut self, now: Instant) {
        dispatch!(self, c => c.exit_slow_start(now))
    }
    fn mark_app_limited(&self) -> bool {
        dispatch!(self, c => c.mark_app_limited())
    }
    fn cwnd(&self) -> u64 {
        dispatch!(self, c => c.cwnd())
    }
    fn ssthresh(&self) -> u64 {
        dispatch!(self, c => c.ssthresh())
    }
    fn pacing_rate(&self) -> Option<u64> {
        dispatch!(self, c => c.pacing_rate())
    }
    fn in_slow_start(&self) -> bool {
        dispatch!(self, c => c.in_slow_start())
    }
    fn state(&self) -> &'static str {
        dispatch!(self, c => c.state())
    }
}

/// ssthresh after a restart from idle: kept at least ¾ of the window before the restart
/// (Linux `tcp_cwnd_restart`), shared by the window-based controllers.
pub(crate) fn idle_restart_ssthresh(ssthresh: u64, cwnd_before: u64) -> u64 {
    ssthresh.max(cwnd_before / 2 + cwnd_before / 4)
}
