//! TCP sender, sans-IO.
//!
//! The connection is established at creation (no SYN/FIN, no handshake, no window scaling):
//! sequence numbers are u64 byte offsets of the application stream, starting at 0, never
//! wrapping. Until the first ACK the peer's receive window is taken as unlimited. Each
//! transmission is timestamped, as with the TCP timestamp option (RFC 7323), so every ACK
//! yields an unambiguous RTT sample. The standards followed, clause by clause:
//!
//! * **RFC 6675** (SACK-based loss recovery), via a per-segment scoreboard:
//!   - §2 DupAck: an ACK whose cumulative point equals HighACK (`snd_una`) while data is
//!     outstanding and whose SACK blocks cover previously unSACKed data; a cumulative advance
//!     resets the counter.
//!   - §4 IsLost(SeqNum): DupThresh SACKed segments above SeqNum, or more than
//!     (DupThresh − 1)·SMSS SACKed bytes above it. Evaluated incrementally ("lost" marks; the
//!     predicate is monotone while the receiver does not renege).
//!   - §4 SetPipe: pipe = Σ over unSACKed outstanding segments of (1 if not IsLost) + (1 if a
//!     retransmission is outstanding). Kept as counters: pipe = outstanding − SACKed − lost +
//!     retransmitted. It is used as "bytes in flight" in every state (also outside recovery,
//!     where it equals FlightSize minus SACKed bytes).
//!   - §4 NextSeg rules 1–4 (rule 1 lowest lost segment above HighRxt and below the highest
//!     SACKed octet, rule 2 new data within rwnd, rule 3 lowest unSACKed segment above
//!     HighRxt, rule 4 one rescue retransmission of the highest unSACKed segment per
//!     episode, RescueRxt := RecoveryPoint, HighRxt unchanged).
//!   - §5 entry when DupAcks ≥ DupThresh or IsLost(HighACK + 1), not before HighACK ≥ the
//!     previous RecoveryPoint; (4.1) RecoveryPoint := HighData; (4.2) the controller is told
//!     once (`on_loss_event`, with FlightSize); (4.3) the segment at HighACK is retransmitted
//!     at once (regardless of cwnd), HighRxt and RescueRxt := its end; (C) further segments
//!     are sent by NextSeg while cwnd − pipe ≥ one segment; exit when HighACK ≥
//!     RecoveryPoint (`on_recovery_exit`).
//!   - §5.1 retransmission timeout: RecoveryPoint := HighData, recovery terminated, no new
//!     recovery until HighACK ≥ RecoveryPoint. Every unSACKed outstanding segment is marked
//!     lost (as Linux does in CA_Loss); SACK marks are kept (no reneging is modelled); lost
//!     segments are then resent in order from `snd_una` (NextSeg rule 1 without 1.b), then
//!     new data.
//! * **RFC 8985** RACK (time-based loss detection), on top of the RFC 6675 scoreboard:
//!   - §6.2 step 2: on each ACK, RACK.xmit_ts / RACK.end_seq := the most recently sent
//!     newly delivered segment (RACK_sent_after: later send time, then higher end sequence),
//!     RACK.rtt := now − its send time. Karn-safe rule: retransmitted segments never advance
//!     RACK (our ACKs echo no timestamp, and the RFC's "RTT ≥ min_RTT" fallback lets the
//!     ACK of a queued original pass for a fast delivery of its retransmission — a cascade of
//!     spurious loss marks under bufferbloat); a lost retransmission is therefore detected
//!     once data first sent after it (new data, or another segment's first transmission) is
//!     delivered.
//!   - §6.2 step 3: RACK.fack, and RACK.reordering_seen when a never-retransmitted segment is
//!     delivered below the RACK.fack of before the ACK.
//!   - §6.2 step 4: RACK.reo_wnd = 0 while no reordering was seen and the sender is in
//!     recovery (fast or after RTO) or more than (DupThresh − 1)·SMSS are SACKed, else
//!     min(min_RTT/4, SRTT). Simplified: no D-SACK (our receiver sends none), so
//!     RACK.reo_wnd_mult stays 1 and reo_wnd_persist is not kept; reordering_seen is sticky.
//!   - §6.2 step 5 RACK_detect_loss, run on every ACK that advanced RACK: every unSACKed
//!     transmission sent before RACK.xmit_ts is lost once now ≥ its send time + RACK.rtt +
//!     reo_wnd (segments already marked lost and not resent are skipped: the RFC's
//!     xmit_ts := ∞). A lost original is marked lost (leaves pipe); a lost retransmission
//!     clears its "retransmission outstanding" mark (leaves pipe) and HighRxt is moved back
//!     to it, so NextSeg rule 1 resends it (rule 1's condition 1.b is dropped for RACK and
//!     RTO marks, which may lie above the highest SACKed octet).
//!   - §6.3 reordering timer: when segments sent before RACK.xmit_ts are not yet past their
//!     deadline the timer is armed at the latest deadline (the RFC's max of the remaining
//!     times); `poll_timeout` includes it, `handle_timeout` runs RACK_detect_loss; the
//!     retransmissions leave through the next `poll_transmit`.
//!   - Recovery entry: a RACK loss mark (like IsLost or DupThresh dupACKs) starts an RFC 6675
//!     episode under the same rules (one `on_loss_event` per episode, not during recovery or
//!     after an RTO, not before HighACK ≥ the previous RecoveryPoint); (4.3) then resends the
//!     lowest lost, not yet resent segment. During the post-RTO phase RACK marks feed the
//!     resend without any controller call. The RTO stays the last resort.
//!   - §7 Tail Loss Probe: see `sender/recovery.rs` (switch `tlp`).
//! * **RFC 3042** limited transmit: on each of the first DupThresh − 1 duplicate ACKs the
//!   newly SACKed segment leaves pipe, which releases one previously unsent segment (if rwnd
//!   allows) without touching cwnd; outstanding data thus stays ≤ cwnd + 2·SMSS (§2).
//! * **RFC 6298** RTO: (2.1) RTO := `rto_initial` before any sample; SRTT, the deviation and
//!   RTO as Linux computes them (`rtt.rs`: RTO = SRTT + max(deviation over the last window,
//!   `rto_min`), where (2.2)–(2.4) give max(SRTT + 4·RTTVAR, RTO_min)), (2.5) at most
//!   `rto_max`. Samples are taken on
//!   every ACK that newly acknowledges data (cumulatively or by SACK), from the send time of
//!   the most recently (re)sent newly acknowledged segment (§3, Karn-safe thanks to
//!   per-transmission timestamps, as RFC 7323 allows). Timer (5.1) started when data is sent
//!   and it is not running, (5.2) stopped when everything is acknowledged, (5.3) restarted
//!   when an ACK advances `snd_una`; on expiry (5.4) retransmit the earliest unacknowledged
//!   segment, (5.5) back off RTO ×2 (capped at `rto_max`), (5.6) restart the timer. The
//!   backoff is cleared by the next ACK that advances `snd_una` (5.7 / Linux). As Linux's
//!   `tcp_xmit_retransmit_queue`, resending the first unacknowledged segment in recovery also
//!   restarts the timer (unless RACK's reordering timer is pending), so a fast retransmission
//!   has a full RTO to be acknowledged.
//! * **RFC 6937** Proportional Rate Reduction decides how much is sent in fast recovery
//!   (switch `prr`, NewReno and CUBIC); without it, or with BBR, the sender keeps pipe ≤ cwnd
//!   (RFC 6675 (C)). **Restart after idle** (RFC 5681 §4.1, Linux's decay; switch
//!   `slow_start_after_idle`). Both, and TLP, are in `sender/recovery.rs`.
//! * **RFC 5681 / RFC 6582** are the controller's business (`crate::cc`); the sender tells it
//!   every ACK (`on_ack`, with `cum_acked` = how far `snd_una` advanced, so that loss-based
//!   controllers grow cwnd on forward progress only, RFC 5681 §3.2), each loss episode (`on_loss_event`), recovery exit and RTO.
//! * **draft-cheng-iccrg-delivery-rate-estimation** §3: per-segment snapshot at each
//!   (re)transmission of C.delivered, C.delivered_time, C.first_sent_time, C.app_limited and
//!   bytes in flight; C.first_sent_time and C.delivered_time reset when nothing is
//!   outstanding; on each ACK the newest (by send time, then end sequence) newly delivered
//!   segment yields the sample: interval = max(send_elapsed, ack_elapsed), delivered =
//!   C.delivered − P.delivered, invalid (rate 0, interval 0) if the interval is shorter than
//!   min_rtt; C.app_limited := (C.delivered + pipe) when the application has less than one
//!   segment to send, nothing awaits retransmission and cwnd is not full (§3.4), cleared once
//!   C.delivered passes it.
//! * **Pacing** (Linux `tcp_update_pacing_rate` + `sch_fq`): the controller's own rate if it
//!   has one (BBR, always paced), else with `pacing` on 2·cwnd/SRTT in slow start and
//!   1.2·cwnd/SRTT otherwise (no pacing before the first RTT sample). After each departure
//!   the next segment may leave at departure + payload/rate (no bursts, no credit). A rate
//!   of 0 means unpaced.
//! * **TCP small queues** (Linux `tcp_small_queue_check`): no transmission while the bytes of
//!   this connection queued below the socket are ≥ limit = max(2·MSS, sk_pacing_rate >>
//!   `pacing_shift`), where sk_pacing_rate is the rate above, computed as Linux's
//!   `tcp_update_pacing_rate` does whether or not the sender paces (unlimited before the first
//!   RTT sample); a sender that does not pace itself has the limit capped at `tsq_limit`
//!   (`tcp_limit_output_bytes`, applied only to `SK_PACING_NONE` sockets). The shift is 10
//!   (~1 ms of rate) by default; mac80211 lowers it to 7 (~8 ms) for sockets whose frames it
//!   transmits (`sk_pacing_shift_update` with `tx_sk_pacing_shift`), so a WiFi sender may keep
//!   one aggregate's worth queued. TSQ never holds back a sender with at most one segment
//!   unacknowledged ("always send skb if rtx queue is empty or has one skb"). Segments are
//!   MSS-sized (no TSO/GSO: 2·truesize is taken as 2·MSS). The host must call `poll_transmit`
//!   again when its queue drains (TSQ is not reflected in `poll_timeout`).
//!
//! * **ECN** (`ecn`; RFC 3168 §6.1.2 for classic, RFC 9768 for L4S's Accurate ECN): an ACK with
//!   ECE (classic) or with newly CE-marked bytes (`AckInfo::ce_acked`, from the AccECN
//!   counters) starts a window reduction when the sender is in neither loss recovery nor
//!   RTO recovery and `snd_una` has passed the end of the previous episode (at most one per
//!   round trip). The episode is Linux's CWR state: the controller is told once
//!   (`on_ecn_mark`), PRR paces what is sent as in fast recovery, only new data is sent (no
//!   NextSeg rules 1, 3, 4), no loss probe runs, and it ends like a recovery
//!   (`on_recovery_exit`) once data sent after its start is acknowledged (Linux holds CWR "until
//!   something *above* high_seq is ACKed for CWR bit to reach receiver", so the ECE echoed
//!   until the CWR segment arrives starts no second reduction). A loss detected during it turns it into fast recovery without a
//!   second reduction (Linux `tcp_enter_recovery` keeps an ongoing cwnd reduction). Classic
//!   senders set CWR on the next new segment.
//!
//! Not modelled: Nagle/autocorking (a partial segment is sent as soon as it may), zero-window
//! probing (our receiver never closes its window with nothing outstanding), D-SACK,
//! F-RTO/undo.

use super::{AckSegment, DataSegment, MAX_SACK_BLOCKS};
use super::rtt::RttEstimator;
use loss::sent_after;
use recovery::{Prr, Tlp};
use scoreboard::SackedRuns;
use tso::TsoSend;
use crate::cc::{AckInfo, AnyCc, CcConfig, CongestionControl, NewRenoConfig, RateSample};
use crate::ecn::{AccEcnSender, EcnMode};
use alloc::collections::VecDeque;
use lasthop_core::{mul_div, Duration, Instant};

/// Parameters of a [`TcpSender`].
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct TcpSenderConfig {
    /// Sender maximum segment size, payload bytes (1448).
    pub mss: u32,
    /// Initial window in segments (10, RFC 6928).
    pub initial_cwnd_segments: u32,
    pub cc: CcConfig,
    /// Pace with Linux's default rate even if the controller has no rate of its own.
    pub pacing: bool,
    /// Lower bound of RTO (200 ms, Linux `TCP_RTO_MIN`).
    pub rto_min: Duration,
    /// RTO before the first RTT sample (1 s, RFC 6298 (2.1)).
    pub rto_initial: Duration,
    /// Upper bound of RTO, also of the backed-off value (120 s, Linux `TCP_RTO_MAX`).
    pub rto_max: Duration,
    /// TCP small queues: cap of bytes queued below the socket for a sender that does not pace
    /// itself (1 MiB, `tcp_limit_output_bytes`).
    pub tsq_limit: u64,
    /// TCP small queues: `sk_pacing_shift`, the limit being sk_pacing_rate >> shift bytes
    /// (10 = ~1 ms, Linux's default; 7 = ~8 ms under mac80211, `tx_sk_pacing_shift`).
    pub pacing_shift: u8,
    /// DupThresh (3, RFC 6675).
    pub dup_thresh: u32,
    /// Tail Loss Probe, RFC 8985 §7 (on, as Linux's default `tcp_early_retrans` = 3).
    pub tlp: bool,
    /// TLP.max_ack_delay (RFC 8985 §7.2), added to the PTO when one segment is in flight
    /// (200 ms, Linux's `TCP_RTO_MIN` allowance for a delayed ACK).
    pub tlp_max_ack_delay: Duration,
    /// Proportional Rate Reduction in fast recovery, RFC 6937 (on, as Linux). Not used with
    /// BBR, which has its own recovery rule.
    pub prr: bool,
    /// PRR with the conservative reduction bound (PRR-CRB) instead of the slow-start
    /// reduction bound (PRR-SSRB; off, as Linux).
    pub prr_conservative: bool,
    /// Restart from at most the initial window after an idle period of more than one RTO
    /// (on, as Linux's `tcp_slow_start_after_idle` = 1). Not applied to BBR.
    pub slow_start_after_idle: bool,
    /// The ECN the connection negotiated (off by default).
    pub ecn: EcnMode,
    /// TSO/GSO bursts as Linux 3.12–3.18 sent them: skbs of the autosized goal, held back by
    /// `tcp_tso_should_defer` (`sender/tso.rs`; off: one MSS-sized segment whenever cwnd allows).
    pub tso_defer: bool,
}

impl Default for TcpSenderConfig {
    fn default() -> Self {
        TcpSenderConfig {
            mss: 1448,
            initial_cwnd_segments: 10,
            cc: CcConfig::NewReno(NewRenoConfig::default()),
            pacing: false,
            rto_min: Duration::from_millis(200),
            rto_initial: Duration::from_secs(1),
            rto_max: Duration::from_secs(120),
            tsq_limit: 1 << 20,
            pacing_shift: 10,
            dup_thresh: 3,
            tlp: true,
            tlp_max_ack_delay: Duration::from_millis(200),
            prr: true,
            prr_conservative: false,
            slow_start_after_idle: true,
            ecn: EcnMode::Off,
            tso_defer: false,
        }
    }
}

/// A snapshot of the sender's state and counters.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct SenderStats {
    pub cwnd: u64,
    /// u64::MAX while unset.
    pub ssthresh: u64,
    /// Zero before the first RTT sample (also `rttvar`, `min_rtt`).
    pub srtt: Duration,
    pub rttvar: Duration,
    pub min_rtt: Duration,
    /// The most recent RTT sample.
    pub latest_rtt: Option<Duration>,
    /// Current (backed-off) retransmission timeout.
    pub rto: Duration,
    /// RFC 6675 pipe.
    pub bytes_in_flight: u64,
    /// Bytes per second; 0 when not pacing.
    pub pacing_rate: u64,
    /// C.delivered: bytes cumulatively or selectively acknowledged.
    pub delivered: u64,
    /// Payload bytes put on the wire (including retransmissions).
    pub bytes_sent: u64,
    pub segments_sent: u64,
    /// Retransmitted segments.
    pub retransmits: u64,
    pub rto_count: u64,
    pub fast_recovery_count: u64,
    /// Transmissions (originals or retransmissions) that RACK (RFC 8985) declared lost.
    pub rack_lost: u64,
    /// RACK reordering timer expiries that marked something lost.
    pub rack_timeouts: u64,
    /// Tail loss probes sent (RFC 8985 §7.3).
    pub tlp_probes: u64,
    /// Losses repaired by a retransmitted probe, each answered by one window reduction
    /// (RFC 8985 §7.4.2).
    pub tlp_loss_repairs: u64,
    /// Window restarts after idle.
    pub idle_restarts: u64,
    /// The controller's state name.
    pub state: &'static str,
    /// Bytes cumulatively acknowledged (`snd_una`).
    pub app_bytes_acked: u64,
    pub done: bool,
    /// In RFC 6675 fast recovery.
    pub in_recovery: bool,
    /// After an RTO, until everything outstanding at the timeout is acknowledged.
    pub in_loss: bool,
    /// Window reductions for ECN (CWR episodes).
    pub ecn_reductions: u64,
    /// Bytes acknowledged that arrived CE-marked, as AccECN feedback reported them.
    pub ce_bytes_acked: u64,
}

/// One transmitted, not yet cumulatively acknowledged segment of the scoreboard.
#[derive(Clone, Copy, Debug)]
struct Seg {
    seq: u64,
    len: u32,
    sacked: bool,
    /// IsLost() (or marked lost by an RTO). Cleared when SACKed.
    lost: bool,
    /// A retransmission of it is outstanding (counts in pipe). Cleared when SACKed or by RTO.
    rtx: bool,
    /// Last (re)transmission time.
    tx_time: Instant,
    /// Sent more than once: an ACK for it cannot tell which transmission it answers, so it gives
    /// no RTT sample (Karn's algorithm, RFC 6298 §3; Linux takes no RTT from retransmitted data
    /// without timestamps either).
    retransmitted: bool,
    // Delivery-rate snapshot at the last (re)transmission (draft §3.2).
    delivered: u64,
    delivered_time: Instant,
    first_sent_time: Instant,
    app_limited: bool,
    tx_in_flight: u64,
}

impl Seg {
    fn end(&self) -> u64 {
        self.seq + self.len as u64
    }
}

/// What NextSeg decided.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Next {
    /// Retransmit `segs[idx]`; `kind` says which rule chose it.
    Rtx { idx: usize, kind: RtxKind },
    /// New data of this length.
    New(u32),
    /// Something to send but cwnd is full.
    CwndLimited,
    /// Nothing may be sent: `app` if the application has no data, else rwnd.
    Nothing { app: bool },
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum RtxKind {
    /// RFC 6675 (4.3), the first retransmission of an episode.
    Fast,
    /// NextSeg rule 1 (or the post-RTO resend).
    Lost,
    /// NextSeg rule 3.
    Rule3,
    /// NextSeg rule 4.
    Rescue,
    /// RFC 8985 §7.3 loss probe (the highest-sequence segment).
    Probe,
}

/// Per-ACK accumulator.
#[derive(Default)]
struct AckAcc {
    newly_acked: u64,
    newest: Option<Seg>,
    /// The newest newly delivered segment that was never retransmitted (RTT sample source).
    newest_clean: Option<Seg>,
    /// The newest newly delivered segment usable by RACK (RFC 8985 §6.2 step 2).
    rack: Option<Seg>,
    /// RACK.fack before this ACK (§6.2 step 3).
    fack_before: u64,
    /// Highest end of the segments newly delivered by this ACK.
    max_end: u64,
}

/// The sending end of a TCP connection.
#[derive(Clone, Debug)]
pub struct TcpSender {
    cfg: TcpSenderConfig,
    cc: AnyCc,

    // --- Sequence space.
    snd_una: u64,
    snd_nxt: u64,
    /// Total bytes the application has written (u64::MAX: infinite).
    app_written: u64,
    /// Peer's advertised window.
    rwnd: u64,

    // --- Scoreboard (RFC 6675).
    segs: VecDeque<Seg>,
    sacked_bytes: u64,
    /// Bytes of unSACKed segments marked lost.
    lost_bytes: u64,
    /// Bytes of unSACKed segments with an outstanding retransmission.
    rtx_bytes: u64,
    /// Highest octet (exclusive end) covered by any SACK block.
    high_sacked: u64,
    /// The SACK blocks of the last ACK, clipped to the data outstanding then: every segment
    /// fully inside one of them is SACKed (`apply_sack` skips them).
    sacked_blocks: [(u64, u64); MAX_SACK_BLOCKS],
    n_sacked_blocks: u8,
    /// Runs of SACKed segments (RACK's scan passes over them).
    sacked_runs: SackedRuns,
    /// Every unSACKed segment below this is marked lost.
    lost_marked_upto: u64,
    dupacks: u32,
    in_recovery: bool,
    /// After an RTO, until `snd_una` ≥ `recovery_point`.
    in_loss: bool,
    recovery_point: Option<u64>,
    /// End of the highest segment retransmitted by rules 1/3 (NextSeg's cursor).
    high_rxt: u64,
    /// Every segment from `high_rxt` up to this sequence is SACKed or has a retransmission
    /// outstanding (what NextSeg rules 1 and 3 skip; `first_unrepaired`). 0 when unknown.
    repaired_upto: u64,
    rescue_rxt: Option<u64>,
    fast_rtx_pending: bool,

    // --- RACK (RFC 8985).
    /// RACK.xmit_ts / RACK.end_seq: the most recently sent delivered segment (first
    /// transmissions only, see `on_delivered`).
    rack_xmit_ts: Option<Instant>,
    rack_end_seq: u64,
    /// RACK.rtt: now − send time of the newest such segment of the last ACK that had one.
    rack_rtt: Duration,
    /// RACK.fack: highest end sequence delivered (cumulatively or selectively).
    rack_fack: u64,
    /// RACK.reordering_seen.
    rack_reordering_seen: bool,
    /// The RACK reordering timer (§6.3).
    rack_deadline: Option<Instant>,

    // --- TLP (RFC 8985 §7), PRR (RFC 6937), restart after idle.
    tlp: Tlp,
    prr: Prr,
    /// Time of the last data transmission (Linux `lsndtime`).
    last_send: Option<Instant>,

    // --- RTT / RTO (RFC 6298, as Linux computes it).
    rtt: RttEstimator,
    min_rtt: Option<Duration>,
    latest_rtt: Option<Duration>,
    backoff: u32,
    rto_deadline: Option<Instant>,

    // --- Delivery rate (draft-cheng).
    delivered: u64,
    delivered_time: Instant,
    first_sent_time: Instant,
    /// C.app_limited: 0, or the `delivered` mark after which samples are no longer app-limited.
    app_limited_until: u64,
    last_rate_sample: Option<RateSample>,

    // --- Pacing.
    next_release: Option<Instant>,
    /// Set when the last `poll_transmit` was held back by pacing only.
    pacing_wait: Option<Instant>,
    /// The last `poll_transmit` was held back by TCP small queues.
    tsq_held: bool,
    /// TSO/GSO sending (`tso_defer`).
    tso: TsoSend,

    // --- Cwnd use (Linux `tcp_cwnd_validate`, `tcp_is_cwnd_limited`).
    /// The current round (`poll_transmit` calls up to a `None`) sent a segment.
    round_sent: bool,
    /// cwnd was the limit in the window being tracked (Linux `is_cwnd_limited`).
    is_cwnd_limited: bool,
    /// The largest flight (snd_nxt − snd_una, bytes) of that window (`max_packets_out`).
    max_flight: u64,
    /// The window's right edge (`cwnd_usage_seq`): tracking restarts once snd_una reaches it.
    cwnd_usage_seq: u64,

    // --- Counters.
    bytes_sent: u64,
    segments_sent: u64,
    retransmits: u64,
    rto_count: u64,
    fast_recovery_count: u64,
    rack_lost: u64,
    rack_timeouts: u64,
    idle_restarts: u64,

    // --- ECN.
    /// The recovery episode in progress is an ECN window reduction (no loss).
    pub(super) ecn_cwr: bool,
    /// Classic ECN: set CWR on the next new segment.
    pub(super) cwr_pending: bool,
    accecn: AccEcnSender,
    ecn_reductions: u64,
    ce_bytes_acked: u64,
}

impl TcpSender {
    pub fn new(cfg: TcpSenderConfig, now: Instant) -> Self {
        let mss = cfg.mss.max(1);
        let cfg = TcpSenderConfig { mss, dup_thresh: cfg.dup_thresh.max(1), ..cfg };
        let iw = mss as u64 * cfg.initial_cwnd_segments.max(1) as u64;
        TcpSender {
            cc: cfg.cc.build(now, mss, iw),
            cfg,
            snd_una: 0,
            snd_nxt: 0,
            app_written: 0,
            rwnd: u64::MAX,
            segs: VecDeque::new(),
            sacked_bytes: 0,
            lost_bytes: 0,
            rtx_bytes: 0,
            high_sacked: 0,
            sacked_blocks: [(0, 0); MAX_SACK_BLOCKS],
            n_sacked_blocks: 0,
            sacked_runs: SackedRuns::default(),
            lost_marked_upto: 0,
            dupacks: 0,
            in_recovery: false,
            in_loss: false,
            recovery_point: None,
            high_rxt: 0,
            repaired_upto: 0,
            rescue_rxt: None,
            fast_rtx_pending: false,
            rack_xmit_ts: None,
            rack_end_seq: 0,
            rack_rtt: Duration::ZERO,
            rack_fack: 0,
            rack_reordering_seen: false,
            rack_deadline: None,
            tlp: Tlp::default(),
            prr: Prr::default(),
            last_send: None,
            rtt: RttEstimator::new(cfg.rto_min),
            min_rtt: None,
            latest_rtt: None,
            backoff: 0,
            rto_deadline: None,
            delivered: 0,
            delivered_time: now,
            first_sent_time: now,
            app_limited_until: 0,
            last_rate_sample: None,
            next_release: None,
            pacing_wait: None,
            tsq_held: false,
            tso: TsoSend::default(),
            round_sent: false,
            is_cwnd_limited: false,
            max_flight: 0,
            cwnd_usage_seq: 0,
            bytes_sent: 0,
            segments_sent: 0,
            retransmits: 0,
            rto_count: 0,
            fast_recovery_count: 0,
            rack_lost: 0,
            rack_timeouts: 0,
            idle_restarts: 0,
            ecn_cwr: false,
            cwr_pending: false,
            accecn: AccEcnSender::default(),
            ecn_reductions: 0,
            ce_bytes_acked: 0,
        }
    }

    pub fn config(&self) -> &TcpSenderConfig {
        &self.cfg
    }

    /// The congestion controller (read-only).
    pub fn cc(&self) -> &AnyCc {
        &self.cc
    }

    /// More application data; `u64::MAX` makes the transfer infinite.
    pub fn app_write(&mut self, bytes: u64) {
        self.app_written = self.app_written.saturating_add(bytes);
    }

    /// Bytes the application has written (u64::MAX: endless).
    pub fn app_written(&self) -> u64 {
        self.app_written
    }

    /// Bytes written by the application and not yet cumulatively acknowledged (what Linux
    /// keeps in the socket's write and retransmit queues).
    pub fn unacked_written(&self) -> u64 {
        self.app_written.saturating_sub(self.snd_una)
    }

    /// The first byte not yet cumulatively acknowledged (`stats().app_bytes_acked`).
    #[inline]
    pub fn snd_una(&self) -> u64 {
        self.snd_una
    }

    /// Bytes sent and not yet cumulatively acknowledged (snd_nxt − snd_una).
    pub fn outstanding(&self) -> u64 {
        self.snd_nxt - self.snd_una
    }

    /// The rate sample handed to the controller with the last ACK that newly acked data.
    pub fn last_rate_sample(&self) -> Option<RateSample> {
        self.last_rate_sample
    }

    /// All written application bytes are cumulatively acknowledged (finite transfers with at
    /// least one byte written).
    pub fn is_done(&self) -> bool {
        self.app_written != 0 && self.app_written != u64::MAX && self.snd_una >= self.app_written
    }

    // ------------------------------------------------------------------ ACK processing

    pub fn handle_ack(&mut self, now: Instant, ack: &AckSegment) {
        if ack.cum_ack > self.snd_nxt {
            // Acknowledges data never sent: drop it (RFC 9293 §3.10.7.4).
            return;
        }
        self.rwnd = ack.rwnd;
        let prior_in_flight = self.pipe();
        let prior_flight_size = self.snd_nxt - self.snd_una;
        let mut acc = AckAcc { fack_before: self.rack_fack, ..AckAcc::default() };
        let prior_una = self.snd_una;

        // Scoreboard update from the SACK blocks (RFC 6675 §5 "update the scoreboard").
        let mut sack_new = false;
        for &(s, e) in ack.sack_blocks() {
            sack_new |= self.apply_sack(now, s, e, &mut acc);
        }
        self.remember_sack_blocks(ack);
        let cum_advanced = ack.cum_ack > self.snd_una;
        if cum_advanced {
            self.apply_cum(now, ack.cum_ack, &mut acc);
        }

        // RTT sample (RFC 6298 §2, §3), never from retransmitted data (Karn).
        let rtt = acc.newest_clean.map(|p| now.saturating_since(p.tx_time));
        if let Some(r) = rtt {
            self.rtt_sample(r);
        }

        // RACK (RFC 8985 §6.2 steps 2, 3): RACK.rtt, RACK.xmit_ts, RACK.end_seq from the most
        // recently sent Karn-safe delivered segment; RACK.fack.
        let rack_advanced = acc.rack.is_some();
        if let Some(p) = acc.rack {
            self.rack_rtt = now.saturating_since(p.tx_time);
            if self.rack_xmit_ts.is_none_or(|t| sent_after(p.tx_time, p.end(), t, self.rack_end_seq)) {
                self.rack_xmit_ts = Some(p.tx_time);
                self.rack_end_seq = p.end();
            }
        }
        self.rack_fack = self.rack_fack.max(acc.max_end);

        let outstanding = self.snd_una < self.snd_nxt;
        if cum_advanced {
            self.dupacks = 0;
            self.backoff = 0;
            // RFC 6298 (5.2), (5.3).
            self.rto_deadline = if outstanding { Some(now + self.rto()) } else { None };
        } else if sack_new && outstanding && ack.cum_ack == self.snd_una {
            self.dupacks += 1;
        }

        let mut newly_lost = if sack_new { self.mark_lost() } else { 0 };
        // RACK (§6.2 steps 4, 5; §6.3): detect losses by time, arm the reordering timer.
        if !outstanding {
            self.rack_deadline = None;
        } else if rack_advanced {
            newly_lost += self.rack_detect_loss(now);
        }

        // Recovery exit (RFC 6675 §5: HighACK ≥ RecoveryPoint), end of the post-RTO phase. An
        // ECN window reduction ends only once data above its point is acknowledged (Linux
        // `tcp_fastretrans_alert`: "CWR is to be held something *above* high_seq is ACKed for
        // CWR bit to reach receiver"), so the ECE still echoed until then starts no second one.
        if let Some(rp) = self.recovery_point {
            let cwr_only = self.ecn_cwr && !self.in_recovery;
            if self.snd_una >= rp && (!cwr_only || self.snd_una > rp) {
                if self.in_recovery || self.ecn_cwr {
                    self.in_recovery = false;
                    self.ecn_cwr = false;
                    self.fast_rtx_pending = false;
                    self.cc.on_recovery_exit(now);
                }
                self.in_loss = false;
            }
        }
        // Recovery entry (RFC 6675 §5 (a)/(b), RFC 8985 §6.2 step 5).
        self.maybe_enter_recovery(now);
        // ECN feedback: a window reduction, at most one per round trip.
        let ce_acked = self.ecn_feedback(now, ack, acc.newly_acked);
        // RFC 8985 §7.4.2 (after a recovery entry, which forgets the probe: one reduction).
        let pure_dupack = !cum_advanced && ack.n_sack == 0;
        self.tlp_on_ack(now, ack.cum_ack, pure_dupack, prior_flight_size);
        // RFC 6937: what this ACK allows to send in recovery.
        self.prr_on_ack(acc.newly_acked);
        // RFC 8985 §7.2: restart the PTO on forward progress; stop it outside its states.
        if cum_advanced {
            self.tlp_arm(now);
        } else {
            self.tlp_check();
        }

        // Delivery-rate sample (draft §3.3).
        if self.app_limited_until != 0 && self.delivered > self.app_limited_until {
            self.app_limited_until = 0;
        }
        let rate = acc.newest.map(|p| self.rate_sample(now, &p, newly_lost));
        if rate.is_some() {
            self.last_rate_sample = rate;
        }
        let info = AckInfo {
            now,
            newly_acked: acc.newly_acked,
            cum_acked: self.snd_una - prior_una,
            bytes_in_flight: self.pipe(),
            prior_in_flight,
            rtt,
            min_rtt: self.min_rtt.unwrap_or(Duration::ZERO),
            srtt: self.rtt.srtt().unwrap_or(Duration::ZERO),
            delivered: self.delivered,
            rate,
            in_recovery: self.in_recovery,
            mss: self.cfg.mss,
            ce_acked,
            cwnd_limited: self.is_cwnd_limited(),
        };
        self.cc.on_ack(&info);
        if self.cc.mark_app_limited() {
            self.app_limited_until = (self.delivered + self.pipe()).max(1);
        }
    }

    /// draft §3.3 UpdateRateSample for one newly delivered segment.
    fn on_delivered(&mut self, now: Instant, g: &Seg, acc: &mut AckAcc) {
        let len = g.len as u64;
        acc.newly_acked += len;
        self.delivered += len;
        self.delivered_time = now;
        let newer = match &acc.newest {
            None => true,
            Some(n) => g.tx_time > n.tx_time || (g.tx_time == n.tx_time && g.end() > n.end()),
        };
        if newer {
            acc.newest = Some(*g);
            self.first_sent_time = g.tx_time;
        }
        if !g.retransmitted && acc.newest_clean.is_none_or(|n| sent_after(g.tx_time, g.end(), n.tx_time, n.end())) {
            acc.newest_clean = Some(*g);
        }
        // RFC 8985 §6.2 step 2: a retransmitted segment counts only if this ACK cannot be for
        // an earlier transmission. Our ACKs echo no timestamp, and the RFC's fallback ("RTT <
        // min_RTT means the ACK is for an earlier transmission") is unsafe under bufferbloat:
        // after a spurious retransmission (an RTO with seconds of queue), the ACK of the queued
        // original looks like a fast delivery of the retransmission, RACK.xmit_ts jumps
        // forward with a tiny RACK.rtt, and every older retransmission is declared lost again
        // — a cascade (39 000 retransmissions for 10 000 segments on a 6.5 Mb/s, 1000-packet
        // FIFO). So, as Karn does for RTT samples, retransmitted data never advances RACK: lost
        // retransmissions are detected once data first sent after them is delivered.
        // The one exception is a retransmitted tail loss probe (RFC 8985 §7.4.1, see
        // `sender/recovery.rs`).
        let rack_ok = !g.retransmitted || self.tlp_rack_ok(g.seq, g.tx_time, now);
        if rack_ok && acc.rack.is_none_or(|n| sent_after(g.tx_time, g.end(), n.tx_time, n.end())) {
            acc.rack = Some(*g);
        }
        // §6.2 step 3: a never retransmitted segment delivered below RACK.fack (as it was
        // before this ACK) arrived out of order.
        if !g.retransmitted && g.end() < acc.fack_before {
            self.rack_reordering_seen = true;
        }
        acc.max_end = acc.max_end.max(g.end());
    }

    /// draft §3.3 GenerateRateSample from the newest newly delivered segment `p`.
    fn rate_sample(&self, now: Instant, p: &Seg, newly_lost: u64) -> RateSample {
        let send_elapsed = p.tx_time.saturating_since(p.first_sent_time);
        let ack_elapsed = self.delivered_time.saturating_since(p.delivered_time);
        let mut interval = send_elapsed.max(ack_elapsed);
        let delivered = self.delivered - p.delivered;
        let min_rtt = self.min_rtt.unwrap_or(Duration::ZERO);
        let delivery_rate = if interval.is_zero() || interval < min_rtt {
            interval = Duration::ZERO; // invalid sample (Linux: interval_us = -1)
            0
        } else {
            mul_div(delivered, 1_000_000_000, interval.as_nanos()) as u64
        };
        RateSample {
            delivery_rate,
            interval,
            delivered,
            prior_delivered: p.delivered,
            is_app_limited: p.app_limited,
            // Karn: no RTT from a retransmitted segment (zero = no sample).
            rtt: if p.retransmitted { Duration::ZERO } else { now.saturating_since(p.tx_time) },
            tx_in_flight: p.tx_in_flight,
            newly_lost,
        }
    }

    /// Recovery entry (RFC 6675 §5: DupAcks ≥ DupThresh or a segment IsLost; RFC 8985: or
    /// RACK marked a segment lost), at most once per episode: not during recovery or after an
    /// RTO, not before HighACK ≥ the previous RecoveryPoint.
    fn maybe_enter_recovery(&mut self, now: Instant) {
        if self.ecn_cwr && (self.dupacks >= self.cfg.dup_thresh || self.lost_bytes > 0) {
            self.cwr_to_recovery();
            return;
        }
        if !self.in_recovery
            && !self.in_loss
            && self.snd_una < self.snd_nxt
            && self.recovery_point.is_none_or(|rp| self.snd_una >= rp)
            && (self.dupacks >= self.cfg.dup_thresh || self.lost_bytes > 0)
        {
            self.enter_recovery(now);
        }
    }

    fn enter_recovery(&mut self, now: Instant) {
        self.begin_fast_recovery();
        self.prr = Prr::start(self.snd_nxt - self.snd_una); // RFC 6937 §3
        self.tlp_reset(); // RFC 8985 §7.1
        // (4.2): the controller sets ssthresh/cwnd from FlightSize.
        self.cc.on_loss_event(now, self.snd_nxt - self.snd_una, self.cfg.mss);
    }

    /// RFC 6675 §5 (4.1), (4.3): the recovery state of a fast retransmission, without the
    /// controller's reduction (a loss starts one; a loss inside an ECN reduction keeps it).
    pub(super) fn begin_fast_recovery(&mut self) {
        self.in_recovery = true;
        self.fast_recovery_count += 1;
        self.recovery_point = Some(self.snd_nxt); // (4.1) RecoveryPoint = HighData
        if let Some(f) = self.segs.front_mut() {
            if !f.lost && !f.sacked {
                f.lost = true;
                self.lost_bytes += f.len as u64;
            }
            self.lost_marked_upto = self.lost_marked_upto.max(f.end());
        }
        self.fast_rtx_pending = true; // (4.3)
        self.high_rxt = self.snd_una;
        self.reset_repaired();
        self.rescue_rxt = None;
    }

    // ------------------------------------------------------------------ RTT / RTO

    fn rtt_sample(&mut self, r: Duration) {
        self.latest_rtt = Some(r);
        self.min_rtt = Some(self.min_rtt.map_or(r, |m| m.min(r)));
        self.rtt.on_sample(r, self.snd_una, self.snd_nxt);
    }

    /// RTO without backoff: `rto_initial` before a sample, then Linux's SRTT + rttvar, at most
    /// `rto_max`.
    fn base_rto(&self) -> Duration {
        self.rtt.rto().map_or(self.cfg.rto_initial, |r| r.min(self.cfg.rto_max))
    }

    /// Current RTO, backed off (RFC 6298 (5.5)).
    fn rto(&self) -> Duration {
        let b = self.base_rto();
        let k = 1u64 << self.backoff.min(40);
        b.saturating_mul(k).min(self.cfg.rto_max)
    }

    // ------------------------------------------------------------------ timers

    /// min(RTO expiry, RACK reordering timer, TLP probe timeout, pacing release time when
    /// the last `poll_transmit` was held back by pacing only).
    pub fn poll_timeout(&self) -> Option<Instant> {
        let e = Instant::earliest;
        e(e(self.rto_deadline, self.rack_deadline), e(self.tlp.deadline, self.pacing_wait))
    }

    pub fn handle_timeout(&mut self, now: Instant) {
        if self.pacing_wait.is_some_and(|t| t <= now) {
            self.pacing_wait = None;
        }
        // RACK reordering timer (RFC 8985 §6.3): detect losses again, enter recovery if this
        // starts an episode; the retransmissions leave through the next `poll_transmit`.
        if self.rack_deadline.is_some_and(|t| t <= now) {
            self.rack_deadline = None;
            if self.snd_una < self.snd_nxt && self.rack_detect_loss(now) > 0 {
                self.rack_timeouts += 1;
                self.maybe_enter_recovery(now);
            }
        }
        // Tail loss probe (RFC 8985 §7.3): the probe leaves through the next `poll_transmit`;
        // the RTO timer is re-armed.
        self.tlp_on_timeout(now);
        let Some(deadline) = self.rto_deadline else { return };
        if now < deadline {
            return;
        }
        if self.snd_una == self.snd_nxt {
            self.rto_deadline = None;
            return;
        }
        // RFC 6298 (5.4)–(5.6), RFC 6675 §5.1.
        self.rto_count += 1;
        self.backoff = self.backoff.saturating_add(1);
        let mut newly_lost = 0;
        for g in self.segs.iter_mut() {
            if !g.sacked {
                if !g.lost {
                    g.lost = true;
                    newly_lost += g.len as u64;
                }
                g.rtx = false;
            }
        }
        self.lost_bytes += newly_lost;
        self.rtx_bytes = 0;
        self.lost_marked_upto = self.snd_nxt;
        self.high_rxt = self.snd_una;
        self.reset_repaired();
        self.in_recovery = false;
        self.ecn_cwr = false;
        self.fast_rtx_pending = false;
        self.in_loss = true;
        self.recovery_point = Some(self.snd_nxt);
        self.rescue_rxt = None;
        self.dupacks = 0;
        self.rack_deadline = None;
        self.next_release = None;
        self.tlp_reset(); // RFC 8985 §7.1
        self.cc.on_rto(now, self.snd_nxt - self.snd_una, self.cfg.mss);
        self.rto_deadline = Some(now + self.rto());
    }

    /// The congestion window, bytes (`stats().cwnd` without the rest).
    #[inline]
    pub fn cwnd(&self) -> u64 {
        self.cc.cwnd()
    }

    /// RFC 6675 pipe, bytes (`stats().bytes_in_flight`).
    #[inline]
    pub fn bytes_in_flight(&self) -> u64 {
        self.pipe()
    }

    /// The pacing rate in force, bytes per second, 0 when not pacing (`stats().pacing_rate`).
    #[inline]
    pub fn pacing_rate(&self) -> u64 {
        self.pacing_rate_now().unwrap_or(0)
    }

    /// The most recent RTT sample (`stats().latest_rtt`).
    #[inline]
    pub fn latest_rtt(&self) -> Option<Duration> {
        self.latest_rtt
    }

    /// Deferrals by `tcp_tso_should_defer` begun, each lasting until the sender sent
    /// (`tso_defer`; 0 without it).
    pub fn tso_deferrals(&self) -> u64 {
        self.tso.deferrals
    }

    pub fn stats(&self) -> SenderStats {
        SenderStats {
            cwnd: self.cwnd(),
            ssthresh: self.cc.ssthresh(),
            srtt: self.rtt.srtt().unwrap_or(Duration::ZERO),
            rttvar: self.rtt.mdev(),
            min_rtt: self.min_rtt.unwrap_or(Duration::ZERO),
            latest_rtt: self.latest_rtt(),
            rto: self.rto(),
            bytes_in_flight: self.bytes_in_flight(),
            pacing_rate: self.pacing_rate(),
            delivered: self.delivered,
            bytes_sent: self.bytes_sent,
            segments_sent: self.segments_sent,
            retransmits: self.retransmits,
            rto_count: self.rto_count,
            fast_recovery_count: self.fast_recovery_count,
            rack_lost: self.rack_lost,
            rack_timeouts: self.rack_timeouts,
            tlp_probes: self.tlp.probes,
            tlp_loss_repairs: self.tlp.loss_repairs,
            idle_restarts: self.idle_restarts,
            state: self.cc.state(),
            app_bytes_acked: self.snd_una,
            done: self.is_done(),
            in_recovery: self.in_recovery,
            in_loss: self.in_loss,
            ecn_reductions: self.ecn_reductions,
            ce_bytes_acked: self.ce_bytes_acked,
        }
    }

    /// Recompute pipe from the scoreboard, as RFC 6675 SetPipe does (test cross-check).
    #[cfg(test)]
    pub(crate) fn set_pipe_slow(&self) -> u64 {
        self.segs
            .iter()
            .filter(|g| !g.sacked)
            .map(|g| (!g.lost as u64 + g.rtx as u64) * g.len as u64)
            .sum()
    }
}

mod ecn;
mod loss;
mod recovery;
mod scoreboard;
mod transmit;
mod tso;

#[cfg(test)]
mod tests;
