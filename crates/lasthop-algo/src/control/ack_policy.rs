//! Receiver acknowledgement policies, sans-IO: when a QUIC (or TCP) receiver sends an ACK.
//!
//! The receiver consults one [`AckPolicy`] per packet-number space for every packet it
//! accepts (duplicates already discarded): [`AckPolicy::on_packet`] answers "ACK now", "an
//! ACK is pending on a timer at `t`" or "nothing pending". The host drives the timer with
//! [`AckPolicy::poll_timeout`] / [`AckPolicy::handle_timeout`] and reports every ACK it
//! actually sends (alone or piggybacked on data) with [`AckPolicy::on_ack_sent`], which
//! restarts the count. Three policies, one [`AckPolicyConfig`]:
//!
//! * [`TcpAcking`] — Chromium's `TCP_ACKING` mode as described in "Improving Performance of
//!   QUIC in WiFi" (Manzoor et al., WCNC 2019) §II-B.1, which is also the RFC 9000 default:
//!   an ACK after every second ack-eliciting packet (RFC 9000 §13.2.2, RFC 1122 §4.2.3.2),
//!   otherwise within `max_ack_delay` (RFC 9000 §13.2.1; 25 ms is the §18.2 default and
//!   Chromium's delayed-ACK time).
//! * [`AckDecimation`] — Chromium's `ACK_DECIMATION` mode, which the paper's Bursty QUIC
//!   (§III-A) makes the default: once more than `decimation_after_packets` (100) packets
//!   have been received, an ACK after every `decimation_ack_every` (10) ack-eliciting packets,
//!   otherwise after min(`max_ack_delay`, min_rtt / `decimation_min_rtt_divisor`), i.e.
//!   min(25 ms, minRTT/4) (§II-B.1). Before that it behaves as [`TcpAcking`] "to avoid
//!   interfering with slow start".
//! * [`AckFrequency`] — the receiver side of the QUIC ACK-frequency extension,
//!   draft-ietf-quic-ack-frequency-14: RFC 9000 behaviour until an ACK_FREQUENCY frame
//!   arrives (§6), then an ACK once more than Ack-Eliciting Threshold ack-eliciting packets are
//!   pending or Requested Max Ack Delay has passed (§6), immediate ACKs on reordering as
//!   governed by the Reordering Threshold (§6.2), obsolete frames ignored by Sequence Number
//!   (§4), and IMMEDIATE_ACK (§5).
//!
//! In every policy an ack-eliciting packet that arrives out of order or fills a gap is
//! acknowledged at once (RFC 9000 §13.2.1; the paper: "if an out-of-order packet or a
//! previously missing packet is received, the ACK is sent without any delay"); the host says
//! so with the `out_of_order_or_fills_gap` flag, because its received-range tracker already
//! knows. A packet that is not ack-eliciting never makes an ACK due (RFC 9000 §13.2.1: no
//! ACK-only packet in response to a non-ack-eliciting packet) but is counted.
//!
//! The delayed-ACK timer runs from the arrival of the first ack-eliciting packet not yet
//! acknowledged (RFC 9000 §13.2.1: acknowledged "within" `max_ack_delay`) and is not
//! restarted by later packets. Initial and Handshake packets, which RFC 9000 §13.2.1 requires
//! to be acknowledged immediately, are the host's business (or a policy with
//! `ack_every = 1`).

use alloc::collections::BTreeMap;
use lasthop_core::{Duration, Instant};

/// Largest valid `max_ack_delay`: values of 2^14 ms or more are invalid (RFC 9000 §18.2,
/// draft-ietf-quic-ack-frequency-14 §4).
pub const MAX_ACK_DELAY_LIMIT: Duration = Duration::from_millis(1 << 14);

/// What the receiver should do after a packet (or a frame) was processed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AckDecision {
    /// Send an ACK now (then call [`AckPolicy::on_ack_sent`]).
    AckNow,
    /// An ACK is pending; send it when the timer fires at this instant (the same instant
    /// [`AckPolicy::poll_timeout`] returns).
    ArmTimer(Instant),
    /// Nothing to acknowledge yet.
    Nothing,
}

/// Which policy an [`AckPolicyConfig`] builds.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum AckPolicyKind {
    /// Every second ack-eliciting packet, else after `max_ack_delay`.
    #[default]
    TcpAcking,
    /// Chromium's ACK decimation (Bursty QUIC's acknowledgement mode).
    AckDecimation,
    /// Sender-controlled through ACK_FREQUENCY frames (draft-ietf-quic-ack-frequency-14).
    AckFrequency,
}

impl AckPolicyKind {
    /// Name in specs and logs.
    pub fn name(self) -> &'static str {
        match self {
            AckPolicyKind::TcpAcking => "tcp_acking",
            AckPolicyKind::AckDecimation => "ack_decimation",
            AckPolicyKind::AckFrequency => "ack_frequency",
        }
    }
}

/// Parameters of every policy (each uses the fields it names).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct AckPolicyConfig {
    pub kind: AckPolicyKind,
    /// Longest an ACK is delayed (`max_ack_delay`, RFC 9000 §13.2.1; the transport parameter
    /// the receiver advertises, §18.2). Default 25 ms, the §18.2 default and Chromium's
    /// delayed-ACK time cited by the paper. Must be below 2^14 ms.
    pub max_ack_delay: Duration,
    /// ACK once this many ack-eliciting packets are pending. Default 2 (RFC 9000 §13.2.2,
    /// the paper's TCP_ACKING). Used by `TcpAcking`, by `AckDecimation` before decimation
    /// starts, and by `AckFrequency` before any ACK_FREQUENCY frame (threshold = this − 1).
    pub ack_every: u32,
    /// ACK_DECIMATION: ACK once this many ack-eliciting packets are pending. Default 10.
    pub decimation_ack_every: u32,
    /// ACK_DECIMATION starts once more than this many packets have been received. Default 100.
    pub decimation_after_packets: u64,
    /// ACK_DECIMATION delay is min(`max_ack_delay`, min_rtt / this). Default 4. While no
    /// min_rtt is known the delay is `max_ack_delay`.
    pub decimation_min_rtt_divisor: u32,
    /// ACK-frequency: the `min_ack_delay` transport parameter this receiver advertises
    /// (draft-ietf-quic-ack-frequency-14 §3); a Requested Max Ack Delay below it is invalid
    /// (§4). Default 1 ms (RFC 9002 kGranularity). Must not exceed `max_ack_delay`.
    pub min_ack_delay: Duration,
}

impl Default for AckPolicyConfig {
    fn default() -> Self {
        AckPolicyConfig {
            kind: AckPolicyKind::TcpAcking,
            max_ack_delay: Duration::from_millis(25),
            ack_every: 2,
            decimation_ack_every: 10,
            decimation_after_packets: 100,
            decimation_min_rtt_divisor: 4,
            min_ack_delay: Duration::from_millis(1),
        }
    }
}

/// A configuration value outside its allowed range (the field and what is allowed).
pub type AckPolicyConfigError = super::FieldError;

impl AckPolicyConfig {
    /// The defaults with another policy.
    pub fn with_kind(kind: AckPolicyKind) -> Self {
        AckPolicyConfig { kind, ..AckPolicyConfig::default() }
    }

    pub fn validate(&self) -> Result<(), AckPolicyConfigError> {
        let err = |field, allowed| Err(AckPolicyConfigError { field, allowed });
        if self.max_ack_delay >= MAX_ACK_DELAY_LIMIT {
            return err("max_ack_delay", "below 2^14 ms (RFC 9000 §18.2)");
        }
        if self.ack_every == 0 {
            return err("ack_every", ">= 1");
        }
        if self.decimation_ack_every == 0 {
            return err("decimation_ack_every", ">= 1");
        }
        if self.decimation_min_rtt_divisor == 0 {
            return err("decimation_min_rtt_divisor", ">= 1");
        }
        if self.min_ack_delay > self.max_ack_delay {
            return err("min_ack_delay", "<= max_ack_delay (draft-ietf-quic-ack-frequency-14 §3)");
        }
        Ok(())
    }

    /// Build the policy, after [`validate`](Self::validate).
    pub fn build(&self) -> Result<AckPolicy, AckPolicyConfigError> {
        self.validate()?;
        Ok(match self.kind {
            AckPolicyKind::TcpAcking => AckPolicy::TcpAcking(TcpAcking::new(*self)),
            AckPolicyKind::AckDecimation => AckPolicy::AckDecimation(AckDecimation::new(*self)),
            AckPolicyKind::AckFrequency => AckPolicy::AckFrequency(AckFrequency::new(*self)),
        })
    }
}

/// Monotone counters.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct AckPolicyStats {
    /// Packets seen (ack-eliciting or not).
    pub packets: u64,
    pub ack_eliciting: u64,
    /// ACKs the host reported sending.
    pub acks_sent: u64,
    /// ACKs made due at once by reordering, a gap or an IMMEDIATE_ACK frame.
    pub due_immediate: u64,
    /// ACKs made due by the ack-eliciting packet count.
    pub due_count: u64,
    /// ACKs made due by the delayed-ACK timer.
    pub due_timer: u64,
    /// ACK_FREQUENCY frames applied.
    pub frames_applied: u64,
    /// ACK_FREQUENCY frames ignored as obsolete.
    pub frames_stale: u64,
}

/// The pending-ACK state every policy shares.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
struct Pending {
    /// Ack-eliciting packets received since the last ACK was sent.
    eliciting: u64,
    /// Arrival of the first of them; the delayed-ACK timer runs from here.
    first_at: Option<Instant>,
    /// The delayed-ACK deadline, while an ACK is pending but not yet due.
    deadline: Option<Instant>,
    /// An ACK is due now.
    due: bool,
}

impl Pending {
    fn decision(&self) -> AckDecision {
        if self.due {
            AckDecision::AckNow
        } else if let Some(t) = self.deadline {
            AckDecision::ArmTimer(t)
        } else {
            AckDecision::Nothing
        }
    }

    fn make_due(&mut self) {
        self.due = true;
        self.deadline = None;
    }

    /// One ack-eliciting packet: ACK at once if `immediate`, when `every` are pending, else
    /// arm the timer `delay` after the first pending one.
    fn on_eliciting(
        &mut self,
        now: Instant,
        immediate: bool,
        every: u64,
        delay: Duration,
        stats: &mut AckPolicyStats,
    ) -> AckDecision {
        self.eliciting += 1;
        if self.first_at.is_none() {
            self.first_at = Some(now);
        }
        if !self.due {
            if immediate {
                self.make_due();
                stats.due_immediate += 1;
            } else if self.eliciting >= every {
                self.make_due();
                stats.due_count += 1;
            } else if self.deadline.is_none() {
                self.deadline = Some(now + delay);
            }
        }
        self.decision()
    }

    fn handle_timeout(&mut self, now: Instant, stats: &mut AckPolicyStats) -> bool {
        match self.deadline {
            Some(t) if !self.due && t <= now => {
                self.make_due();
                stats.due_timer += 1;
                true
            }
            _ => false,
        }
    }

    fn poll_timeout(&self) -> Option<Instant> {
        if self.due {
            None
        } else {
            self.deadline
        }
    }

    /// A new delay applies to the pending ACK: the deadline moves to `first_at + delay`.
    fn retime(&mut self, delay: Duration) {
        if let (Some(_), Some(first)) = (self.deadline, self.first_at) {
            self.deadline = Some(first + delay);
        }
    }

    fn invariants(&self) -> Result<(), &'static str> {
        if self.due && self.deadline.is_some() {
            return Err("ack policy: timer armed while an ACK is already due");
        }
        if self.deadline.is_some() && (self.eliciting == 0 || self.first_at.is_none()) {
            return Err("ack policy: timer armed with nothing pending");
        }
        if let (Some(t), Some(first)) = (self.deadline, self.first_at) {
            if t < first {
                return Err("ack policy: deadline before the first pending packet");
            }
        }
        Ok(())
    }
}

/// `TCP_ACKING`: every `ack_every` (2) ack-eliciting packets, else after `max_ack_delay`;
/// immediately on reordering (RFC 9000 §13.2.1–13.2.2).
#[derive(Clone, Debug)]
pub struct TcpAcking {
    cfg: AckPolicyConfig,
    pending: Pending,
    last_ack_sent: Option<Instant>,
    stats: AckPolicyStats,
}

impl TcpAcking {
    pub fn new(cfg: AckPolicyConfig) -> Self {
        debug_assert!(cfg.validate().is_ok());
        TcpAcking { cfg, pending: Pending::default(), last_ack_sent: None, stats: AckPolicyStats::default() }
    }

    pub fn on_packet(&mut self, now: Instant, _pn: u64, ack_eliciting: bool, reordered: bool) -> AckDecision {
        self.stats.packets += 1;
        if !ack_eliciting {
            return self.pending.decision();
        }
        self.stats.ack_eliciting += 1;
        let (every, delay) = (self.cfg.ack_every as u64, self.cfg.max_ack_delay);
        self.pending.on_eliciting(now, reordered, every, delay, &mut self.stats)
    }
}

/// `ACK_DECIMATION` (Manzoor et al. §II-B.1): after more than `decimation_after_packets`
/// packets, every `decimation_ack_every` ack-eliciting packets or after
/// min(`max_ack_delay`, min_rtt / `decimation_min_rtt_divisor`); `TcpAcking` before that.
#[derive(Clone, Debug)]
pub struct AckDecimation {
    cfg: AckPolicyConfig,
    pending: Pending,
    /// All packets received so far (the paper's "at least 100 packets have been received").
    received: u64,
    min_rtt: Option<Duration>,
    last_ack_sent: Option<Instant>,
    stats: AckPolicyStats,
}

impl AckDecimation {
    pub fn new(cfg: AckPolicyConfig) -> Self {
        debug_assert!(cfg.validate().is_ok());
        AckDecimation {
            cfg,
            pending: Pending::default(),
            received: 0,
            min_rtt: None,
            last_ack_sent: None,
            stats: AckPolicyStats::default(),
        }
    }

    /// Decimation is in force (more than `decimation_after_packets` packets received).
    pub fn decimating(&self) -> bool {
        self.received > self.cfg.decimation_after_packets
    }

    /// The decimation delay: min(`max_ack_delay`, min_rtt / divisor), or `max_ack_delay`
    /// while no min_rtt is known.
    pub fn decimation_delay(&self) -> Duration {
        match self.min_rtt {
            Some(r) => self.cfg.max_ack_delay.min(r / self.cfg.decimation_min_rtt_divisor as u64),
            None => self.cfg.max_ack_delay,
        }
    }

    pub fn on_packet(&mut self, now: Instant, _pn: u64, ack_eliciting: bool, reordered: bool) -> AckDecision {
        self.stats.packets += 1;
        self.received += 1;
        if !ack_eliciting {
            return self.pending.decision();
        }
        self.stats.ack_eliciting += 1;
        let (every, delay) = if self.decimating() {
            (self.cfg.decimation_ack_every as u64, self.decimation_delay())
        } else {
            (self.cfg.ack_every as u64, self.cfg.max_ack_delay)
        };
        self.pending.on_eliciting(now, reordered, every, delay, &mut self.stats)
    }
}

/// The parameters an ACK_FREQUENCY frame carries (draft-ietf-quic-ack-frequency-14 §4).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct AckFrequencyParams {
    /// Sequence Number of the frame these came from; `None` before any frame.
    pub sequence: Option<u64>,
    /// ACK once more than this many ack-eliciting packets are pending (0: every packet).
    pub ack_eliciting_threshold: u64,
    /// The receiver's max_ack_delay (Requested Max Ack Delay).
    pub max_ack_delay: Duration,
    /// Reordering that elicits an immediate ACK (§6.2): 0 never, 1 any (RFC 9000 §13.2.1),
    /// n > 1 only once the sender could declare a packet lost with packet threshold n.
    pub reordering_threshold: u64,
}

/// Why an ACK_FREQUENCY or IMMEDIATE_ACK frame was refused.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AckFrequencyError {
    /// This receiver does not run the extension (did not advertise `min_ack_delay`, §3).
    NotNegotiated,
    /// Requested Max Ack Delay of 2^14 ms or more, or below the advertised `min_ack_delay`:
    /// a PROTOCOL_VIOLATION (§4).
    InvalidMaxAckDelay,
}

/// What happened to an ACK_FREQUENCY frame.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AckFrequencyOutcome {
    Applied,
    /// Sequence Number not above the largest processed: ignored (§4).
    IgnoredStale,
}

/// Received packet numbers above the Largest Reported Missing, for the Reordering Threshold
/// test of draft-ietf-quic-ack-frequency-14 §6.2.
#[derive(Clone, Debug, Default)]
struct ReorderWindow {
    /// Disjoint, non-adjacent ranges [start, end) of received packet numbers, all >= `floor`.
    ranges: BTreeMap<u64, u64>,
    /// Largest Reported Missing + 1: smaller packet numbers are no longer "unreported".
    floor: u64,
    /// Largest Unacked: the largest ack-eliciting packet number received.
    largest_unacked: Option<u64>,
    largest_received: Option<u64>,
    /// Largest Acked: the Largest Acknowledged of the last ACK sent.
    largest_acked: Option<u64>,
}

impl ReorderWindow {
    fn insert(&mut self, pn: u64, ack_eliciting: bool) {
        self.largest_received = Some(self.largest_received.map_or(pn, |l| l.max(pn)));
        if ack_eliciting {
            self.largest_unacked = Some(self.largest_unacked.map_or(pn, |l| l.max(pn)));
        }
        if pn < self.floor {
            return;
        }
        let (mut s, mut e) = (pn, pn.saturating_add(1));
        if let Some((&ps, &pe)) = self.ranges.range(..=pn).next_back() {
            if pe > pn {
                return; // already held
            }
            if pe == pn {
                self.ranges.remove(&ps);
                s = ps;
            }
        }
        if let Some(ne) = self.ranges.remove(&e) {
            e = ne;
        }
        self.ranges.insert(s, e);
    }

    /// The smallest Unreported Missing packet number (below Largest Unacked), if any.
    fn smallest_unreported_missing(&self) -> Option<u64> {
        let lu = self.largest_unacked?;
        let mut m = self.floor;
        if let Some((_, &e)) = self.ranges.range(..=m).next_back() {
            m = m.max(e);
        }
        (m < lu).then_some(m)
    }

    /// §6.2: after ack-eliciting packet `pn`, an immediate ACK is due when the gap from the
    /// smallest Unreported Missing to Largest Unacked reaches `thr`, or when `pn` is at or
    /// below Largest Acked − `thr` (the sender may already have declared it lost).
    fn needs_immediate_ack(&self, pn: u64, thr: u64) -> bool {
        let gap = match (self.smallest_unreported_missing(), self.largest_unacked) {
            (Some(m), Some(lu)) => lu - m >= thr,
            _ => false,
        };
        let late = self.largest_acked.is_some_and(|la| la >= thr && pn <= la - thr);
        gap || late
    }

    /// An ACK reporting everything received so far went out.
    fn on_ack_sent(&mut self, thr: u64) {
        let Some(la) = self.largest_received else { return };
        self.largest_acked = Some(la);
        if la >= thr {
            // Largest Reported Missing = Largest Acked − Reordering Threshold.
            self.floor = self.floor.max((la - thr).saturating_add(1));
        }
        let mut keep = self.ranges.split_off(&self.floor);
        if let Some((_, &e)) = self.ranges.iter().next_back() {
            if e > self.floor {
                keep.insert(self.floor, e);
            }
        }
        self.ranges = keep;
    }

    fn invariants(&self) -> Result<(), &'static str> {
        let mut prev_end: Option<u64> = None;
        for (&s, &e) in &self.ranges {
            if s >= e || s < self.floor || prev_end.is_some_and(|p| s <= p) {
                return Err("ack frequency: received ranges not disjoint, ordered and above floor");
            }
            prev_end = Some(e);
        }
        if let (Some(lu), Some(lr)) = (self.largest_unacked, self.largest_received) {
            if lu > lr {
                return Err("ack frequency: largest unacked above largest received");
            }
        }
        Ok(())
    }
}

/// Receiver of the QUIC ACK-frequency extension (draft-ietf-quic-ack-frequency-14 §4–§6).
#[derive(Clone, Debug)]
pub struct AckFrequency {
    cfg: AckPolicyConfig,
    params: AckFrequencyParams,
    pending: Pending,
    window: ReorderWindow,
    last_ack_sent: Option<Instant>,
    stats: AckPolicyStats,
}

impl AckFrequency {
    pub fn new(cfg: AckPolicyConfig) -> Self {
        debug_assert!(cfg.validate().is_ok());
        // §6: until a frame arrives, RFC 9000 §13.2.1 (ACK every second packet, reordering
        // threshold 1) with the advertised max_ack_delay.
        let params = AckFrequencyParams {
            sequence: None,
            ack_eliciting_threshold: cfg.ack_every.saturating_sub(1) as u64,
            max_ack_delay: cfg.max_ack_delay,
            reordering_threshold: 1,
        };
        AckFrequency {
            cfg,
            params,
            pending: Pending::default(),
            window: ReorderWindow::default(),
            last_ack_sent: None,
            stats: AckPolicyStats::default(),
        }
    }

    /// The parameters in force.
    pub fn params(&self) -> &AckFrequencyParams {
        &self.params
    }

    pub fn on_packet(&mut self, now: Instant, pn: u64, ack_eliciting: bool, reordered: bool) -> AckDecision {
        self.stats.packets += 1;
        self.window.insert(pn, ack_eliciting);
        if !ack_eliciting {
            return self.pending.decision();
        }
        self.stats.ack_eliciting += 1;
        let p = self.params;
        let immediate = match p.reordering_threshold {
            0 => false,     // §6.2: rely on the threshold and the delay only
            1 => reordered, // RFC 9000 §13.2.1
            thr => self.window.needs_immediate_ack(pn, thr),
        };
        let every = p.ack_eliciting_threshold.saturating_add(1);
        self.pending.on_eliciting(now, immediate, every, p.max_ack_delay, &mut self.stats)
    }

    /// An ACK_FREQUENCY frame (§4). Frames whose Sequence Number is not above the largest
    /// processed are ignored; a valid frame replaces all three values and re-times a pending
    /// delayed ACK from its first packet.
    pub fn on_ack_frequency(
        &mut self,
        sequence: u64,
        ack_eliciting_threshold: u64,
        requested_max_ack_delay: Duration,
        reordering_threshold: u64,
    ) -> Result<AckFrequencyOutcome, AckFrequencyError> {
        if self.params.sequence.is_some_and(|s| sequence <= s) {
            self.stats.frames_stale += 1;
            return Ok(AckFrequencyOutcome::IgnoredStale);
        }
        if requested_max_ack_delay >= MAX_ACK_DELAY_LIMIT || requested_max_ack_delay < self.cfg.min_ack_delay {
            return Err(AckFrequencyError::InvalidMaxAckDelay);
        }
        self.params = AckFrequencyParams {
            sequence: Some(sequence),
            ack_eliciting_threshold,
            max_ack_delay: requested_max_ack_delay,
            reordering_threshold,
        };
        self.pending.retime(requested_max_ack_delay);
        self.stats.frames_applied += 1;
        Ok(AckFrequencyOutcome::Applied)
    }

    /// An IMMEDIATE_ACK frame (§5): send an ACK now. Call after `on_packet` for the packet
    /// that carried it.
    pub fn on_immediate_ack(&mut self) -> AckDecision {
        if !self.pending.due {
            self.pending.make_due();
            self.stats.due_immediate += 1;
        }
        AckDecision::AckNow
    }
}

/// The three policies behind one type (enum dispatch).
#[derive(Clone, Debug)]
pub enum AckPolicy {
    TcpAcking(TcpAcking),
    AckDecimation(AckDecimation),
    AckFrequency(AckFrequency),
}

macro_rules! each {
    ($self:expr, $p:ident => $e:expr) => {
        match $self {
            AckPolicy::TcpAcking($p) => $e,
            AckPolicy::AckDecimation($p) => $e,
            AckPolicy::AckFrequency($p) => $e,
        }
    };
}

impl AckPolicy {
    /// A packet was received (not a duplicate): `pn` its packet number, `ack_eliciting`
    /// whether it carries frames other than ACK/PADDING/CONNECTION_CLOSE, and
    /// `out_of_order_or_fills_gap` whether its number is below that of an ack-eliciting
    /// packet already received, or above the largest with packets missing in between
    /// (RFC 9000 §13.2.1). Returns the state of the pending ACK after it.
    pub fn on_packet(
        &mut self,
        now: Instant,
        pn: u64,
        ack_eliciting: bool,
        out_of_order_or_fills_gap: bool,
    ) -> AckDecision {
        let d = each!(self, p => p.on_packet(now, pn, ack_eliciting, out_of_order_or_fills_gap));
        debug_assert_eq!(self.invariants(), Ok(()));
        d
    }

    /// When the delayed-ACK timer fires, if an ACK is pending and not yet due.
    pub fn poll_timeout(&self) -> Option<Instant> {
        each!(self, p => p.pending.poll_timeout())
    }

    /// The host's clock reached a timeout. Returns true if this made an ACK due; an early or
    /// spurious call returns false and changes nothing.
    pub fn handle_timeout(&mut self, now: Instant) -> bool {
        let fired = each!(self, p => p.pending.handle_timeout(now, &mut p.stats));
        debug_assert_eq!(self.invariants(), Ok(()));
        fired
    }

    /// An ACK reporting every packet received so far was sent (alone or with data).
    pub fn on_ack_sent(&mut self, now: Instant) {
        each!(self, p => {
            p.pending = Pending::default();
            p.last_ack_sent = Some(now);
            p.stats.acks_sent += 1;
        });
        if let AckPolicy::AckFrequency(p) = self {
            p.window.on_ack_sent(p.params.reordering_threshold);
        }
        debug_assert_eq!(self.invariants(), Ok(()));
    }

    /// The connection's minimum RTT (RFC 9002 §5.2); ACK decimation derives its delay from it.
    pub fn set_min_rtt(&mut self, min_rtt: Duration) {
        if let AckPolicy::AckDecimation(p) = self {
            p.min_rtt = Some(min_rtt);
        }
    }

    /// An ACK_FREQUENCY frame arrived (draft-ietf-quic-ack-frequency-14 §4).
    pub fn on_ack_frequency(
        &mut self,
        sequence: u64,
        ack_eliciting_threshold: u64,
        requested_max_ack_delay: Duration,
        reordering_threshold: u64,
    ) -> Result<AckFrequencyOutcome, AckFrequencyError> {
        match self {
            AckPolicy::AckFrequency(p) => {
                p.on_ack_frequency(sequence, ack_eliciting_threshold, requested_max_ack_delay, reordering_threshold)
            }
            _ => Err(AckFrequencyError::NotNegotiated),
        }
    }

    /// An IMMEDIATE_ACK frame arrived (draft-ietf-quic-ack-frequency-14 §5).
    pub fn on_immediate_ack(&mut self) -> Result<AckDecision, AckFrequencyError> {
        match self {
            AckPolicy::AckFrequency(p) => Ok(p.on_immediate_ack()),
            _ => Err(AckFrequencyError::NotNegotiated),
        }
    }

    /// An ACK is due and not yet sent.
    pub fn ack_due(&self) -> bool {
        each!(self, p => p.pending.due)
    }

    /// Ack-eliciting packets received since the last ACK was sent.
    pub fn pending_ack_eliciting(&self) -> u64 {
        each!(self, p => p.pending.eliciting)
    }

    /// When the last ACK was sent.
    pub fn last_ack_sent(&self) -> Option<Instant> {
        each!(self, p => p.last_ack_sent)
    }

    pub fn config(&self) -> &AckPolicyConfig {
        each!(self, p => &p.cfg)
    }

    pub fn stats(&self) -> AckPolicyStats {
        each!(self, p => p.stats)
    }

    pub fn kind(&self) -> AckPolicyKind {
        self.config().kind
    }

    /// Internal consistency; checked under debug assertions after every input.
    pub fn invariants(&self) -> Result<(), &'static str> {
        each!(self, p => p.pending.invariants())?;
        let s = self.stats();
        if s.ack_eliciting > s.packets {
            return Err("ack policy: more ack-eliciting packets than packets");
        }
        if let AckPolicy::AckFrequency(p) = self {
            p.window.invariants()?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests;
