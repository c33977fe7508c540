//! The sender's transmission side: pipe (RFC 6675 §4), pacing and TCP small queues, the
//! segment to send next (RFC 6675 §5 NextSeg's rules) and `poll_transmit`.

use crate::ecn::{Ecn, EcnMode};
use super::*;

impl TcpSender {
    // ------------------------------------------------------------------ transmission

    /// RFC 6675 pipe (SetPipe), in bytes.
    pub(super) fn pipe(&self) -> u64 {
        (self.snd_nxt - self.snd_una) - self.sacked_bytes - self.lost_bytes + self.rtx_bytes
    }

    /// The pacing rate in force, bytes/s.
    pub(super) fn pacing_rate_now(&self) -> Option<u64> {
        if self.cc.pacing_rate().is_none() && !self.cfg.pacing {
            return None;
        }
        self.sk_pacing_rate()
    }

    /// Linux's `sk_pacing_rate` (bytes/s): the controller's own rate, else 2·cwnd/SRTT in slow
    /// start and 1.2·cwnd/SRTT otherwise, kept whether or not the sender paces; `None` (no
    /// limit) before the first RTT sample.
    pub(super) fn sk_pacing_rate(&self) -> Option<u64> {
        if let Some(r) = self.cc.pacing_rate() {
            return (r > 0).then_some(r);
        }
        let srtt = self.rtt.srtt()?.as_nanos().max(1);
        let ratio: u64 = if self.cc.in_slow_start() { 200 } else { 120 };
        // In 64 bits while the product fits (a window below 9.2 GB): no 128-bit division per
        // segment (`mul_div`).
        let r = mul_div(self.cc.cwnd(), ratio * 10_000_000, srtt).min(u64::MAX as u128) as u64;
        Some(r.max(1))
    }

    /// Whether the last `poll_transmit` held a segment back for TCP small queues: the host
    /// must call it again when its queue below the socket drains (Linux's `tcp_wfree` →
    /// `tcp_tsq_handler`).
    pub fn tsq_held(&self) -> bool {
        self.tsq_held
    }

    /// TCP small queues (`tcp_small_queue_check`): bytes this connection may have queued below
    /// the socket before it waits. `paced` is the rate the sender paces at, if it does.
    pub fn tsq_limit_now(&self, paced: Option<u64>) -> u64 {
        if self.segs.len() <= 1 {
            return u64::MAX;
        }
        let limit = match paced.or_else(|| self.sk_pacing_rate()) {
            Some(r) => (2 * self.cfg.mss as u64).max(r >> self.cfg.pacing_shift),
            None => u64::MAX,
        };
        if paced.is_some() {
            limit
        } else {
            limit.min(self.cfg.tsq_limit)
        }
    }

    /// Bytes of new data the next segment would carry (0 if none), and whether rwnd blocks it.
    pub(super) fn new_data_len(&self) -> (u32, bool) {
        if self.snd_nxt >= self.app_written {
            return (0, false);
        }
        let len = (self.app_written - self.snd_nxt).min(self.cfg.mss as u64) as u32;
        let right = self.snd_una.saturating_add(self.rwnd);
        if self.snd_nxt + len as u64 > right {
            return (0, true);
        }
        (len, false)
    }

    /// The lowest segment at or above HighRxt that is neither SACKed nor has a retransmission
    /// outstanding: where NextSeg rules 1 and 3 stop. The segments skipped are remembered
    /// (`repaired_upto`), so that the next call starts past them rather than at HighRxt.
    fn first_unrepaired(&mut self) -> Option<usize> {
        let from = self.high_rxt.max(self.repaired_upto);
        let mut i = self.segs.partition_point(|g| g.seq < from);
        while let Some(g) = self.segs.get(i) {
            if g.sacked || g.rtx {
                i += 1;
                continue;
            }
            self.repaired_upto = g.seq;
            return Some(i);
        }
        self.repaired_upto = self.snd_nxt;
        None
    }

    /// Forget the segments `first_unrepaired` skipped: HighRxt moved back, or a segment at or
    /// above it lost its outstanding retransmission.
    pub(super) fn reset_repaired(&mut self) {
        self.repaired_upto = 0;
    }

    /// NextSeg rule 1: lowest lost, unSACKed, not yet retransmitted (or whose retransmission
    /// RACK declared lost) segment at or above HighRxt. Condition 1.b (below the highest SACKed
    /// octet) holds by construction for IsLost marks; it is dropped for the marks of an RTO and
    /// of RACK, which may lie above it (a tail sent before a delivered retransmission).
    pub(super) fn rule1(&mut self) -> Option<usize> {
        let i = self.first_unrepaired()?;
        self.segs[i].lost.then_some(i)
    }

    /// NextSeg rule 3: lowest unSACKed, not retransmitted segment above HighRxt and below the
    /// highest SACKed octet.
    pub(super) fn rule3(&mut self) -> Option<usize> {
        let i = self.first_unrepaired()?;
        (self.segs[i].seq < self.high_sacked).then_some(i)
    }

    /// NextSeg rule 4: the highest unSACKed segment, once per episode.
    pub(super) fn rule4(&self) -> Option<usize> {
        if self.rescue_rxt.is_some_and(|r| self.snd_una <= r) {
            return None;
        }
        let i = self.segs.iter().rposition(|g| !g.sacked)?;
        (!self.segs[i].rtx).then_some(i)
    }

    pub(super) fn next_seg(&mut self) -> Next {
        if self.in_recovery && self.fast_rtx_pending {
            // (4.3): the first segment not yet repaired (normally the one at HighACK).
            let mut i = 0;
            while let Some(g) = self.segs.get(i) {
                if g.sacked || g.rtx {
                    i += 1;
                    continue;
                }
                if g.lost {
                    return Next::Rtx { idx: i, kind: RtxKind::Fast };
                }
                break;
            }
        }
        let (new_len, rwnd_blocked) = self.new_data_len();
        let pick = if self.in_recovery || self.in_loss {
            if let Some(i) = self.rule1() {
                Some(Next::Rtx { idx: i, kind: RtxKind::Lost })
            } else if new_len > 0 {
                Some(Next::New(new_len))
            } else if !self.in_recovery {
                None
            } else if let Some(i) = self.rule3() {
                Some(Next::Rtx { idx: i, kind: RtxKind::Rule3 })
            } else {
                self.rule4().map(|i| Next::Rtx { idx: i, kind: RtxKind::Rescue })
            }
        } else {
            (new_len > 0).then_some(Next::New(new_len))
        };
        let Some(next) = pick else {
            return Next::Nothing { app: !rwnd_blocked };
        };
        let len = match next {
            Next::Rtx { idx, .. } => self.segs[idx].len,
            Next::New(l) => l,
            _ => unreachable!(),
        };
        // RFC 6937: in recovery, while PRR's sndcnt is positive. Otherwise RFC 6675 (C) /
        // RFC 5681: while pipe + segment ≤ cwnd. Always one segment when nothing is in
        // flight, so that a tiny window cannot stall the connection.
        let pipe = self.pipe();
        let allowed = if self.prr_active() {
            self.prr.sndcnt > 0
        } else {
            pipe + len as u64 <= self.cc.cwnd()
        };
        if pipe == 0 || allowed {
            next
        } else {
            Next::CwndLimited
        }
    }

    /// Next segment to put on the wire now, if cwnd, rwnd, pacing and TSQ allow.
    /// `queued_below` = bytes of this connection still queued in the host below the socket.
    /// The host calls it until it returns `None`, which ends the round (Linux's
    /// `tcp_write_xmit`): the round's cwnd use is then recorded (`cwnd_validate`).
    pub fn poll_transmit(&mut self, now: Instant, queued_below: u64) -> Option<DataSegment> {
        let seg = self.next_transmission(now, queued_below);
        if seg.is_some() {
            self.round_sent = true;
        } else {
            self.cwnd_validate();
        }
        seg
    }

    /// The end of a round of transmissions, as Linux's `tcp_write_xmit` ends one: the sender
    /// was cwnd-limited if a full segment no longer fits in cwnd (`tcp_packets_in_flight ≥
    /// snd_cwnd`), and `tcp_cwnd_validate` remembers it for the window in flight, or else the
    /// largest flight of that window, when the round sent something or was cwnd-limited.
    fn cwnd_validate(&mut self) {
        let limited = self.pipe() + self.cfg.mss as u64 > self.cc.cwnd();
        if !self.round_sent && !limited {
            return;
        }
        self.round_sent = false;
        let out = self.snd_nxt - self.snd_una;
        if self.snd_una >= self.cwnd_usage_seq || limited || (!self.is_cwnd_limited && out > self.max_flight) {
            self.is_cwnd_limited = limited;
            self.max_flight = out;
            self.cwnd_usage_seq = self.snd_nxt;
        }
    }

    /// Linux's `tcp_is_cwnd_limited`: cwnd was the limit in the window in flight, or, in slow
    /// start, cwnd is below twice that window's largest flight. Loss-based controllers grow
    /// cwnd only then (`AckInfo::cwnd_limited`), so a sender held back by TCP small queues,
    /// pacing, rwnd or its application does not inflate a window it does not use.
    pub(super) fn is_cwnd_limited(&self) -> bool {
        if self.is_cwnd_limited {
            return true;
        }
        self.cc.in_slow_start() && self.cc.cwnd() < 2 * self.max_flight
    }

    fn next_transmission(&mut self, now: Instant, queued_below: u64) -> Option<DataSegment> {
        self.pacing_wait = None;
        self.tsq_held = false;
        self.restart_after_idle(now);
        // A due loss probe leaves whatever cwnd and pacing say (RFC 8985 §7.3).
        let probe = self.tlp_probe();
        let next = probe.unwrap_or_else(|| self.next_seg());
        match next {
            Next::Rtx { .. } | Next::New(_) => {}
            Next::CwndLimited => return None,
            Next::Nothing { app } => {
                if app {
                    self.check_app_limited();
                }
                return None;
            }
        }
        if self.cfg.tso_defer && probe.is_none() && matches!(next, Next::New(_)) && self.tso_hold(now) {
            return None;
        }
        let rate = self.pacing_rate_now();
        if queued_below >= self.tsq_limit_now(rate) {
            self.tsq_held = true;
            return None;
        }
        if rate.is_some() && probe.is_none() {
            if let Some(t) = self.next_release {
                if now < t {
                    self.pacing_wait = Some(t);
                    return None;
                }
            }
        }
        let seg = self.transmit(now, next, rate);
        if probe.is_some() {
            self.tlp_sent(seg.seq, seg.retransmit);
        } else if !seg.retransmit {
            self.tlp_arm(now); // RFC 8985 §7.2: after new data
        }
        Some(seg)
    }

    /// `tcp_tso_should_defer` for the new data at the head (`sender/tso.rs`), asked as Linux's
    /// `tcp_write_xmit` asks it: after the cwnd and receive-window tests, before TCP small queues.
    pub(super) fn tso_hold(&mut self, now: Instant) -> bool {
        let mss = self.cfg.mss as u64;
        let cwnd = self.cc.cwnd();
        // Linux 3.12–3.18's sk_pacing_rate: 200 % of cwnd/SRTT in every state.
        let pacing_rate = self.rtt.srtt().map(|s| {
            mul_div(cwnd, 2_000_000_000, s.as_nanos().max(1)).min(u64::MAX as u128) as u64
        });
        let open = self.no_recovery_nothing_sacked() && self.dupacks == 0;
        let w = tso::Window {
            snd_nxt: self.snd_nxt,
            app_written: self.app_written,
            rwnd: self.rwnd,
            send_win: self.snd_una.saturating_add(self.rwnd).saturating_sub(self.snd_nxt),
            cong_win: cwnd.saturating_sub(self.pipe()),
            cwnd,
            pacing_rate,
            open,
        };
        self.tso.hold(now, mss, w)
    }

    /// draft §3.4 CheckIfApplicationLimited.
    pub(super) fn check_app_limited(&mut self) {
        let pipe = self.pipe();
        let unsent = self.app_written.saturating_sub(self.snd_nxt);
        let pending_rtx = (self.in_recovery || self.in_loss) && self.rule1().is_some();
        if unsent < self.cfg.mss as u64 && !pending_rtx && pipe < self.cc.cwnd() {
            self.app_limited_until = (self.delivered + pipe).max(1);
        }
    }

    pub(super) fn transmit(&mut self, now: Instant, next: Next, rate: Option<u64>) -> DataSegment {
        let pipe_before = self.pipe();
        if self.snd_nxt == self.snd_una {
            // draft §3.2: start of a new flight.
            self.first_sent_time = now;
            self.delivered_time = now;
        }
        let (seq, len, retransmit, idx) = match next {
            Next::New(len) => {
                let seq = self.snd_nxt;
                self.segs.push_back(Seg {
                    seq,
                    len,
                    sacked: false,
                    lost: false,
                    rtx: false,
                    tx_time: now,
                    retransmitted: false,
                    delivered: 0,
                    delivered_time: now,
                    first_sent_time: now,
                    app_limited: false,
                    tx_in_flight: 0,
                });
                self.snd_nxt += len as u64;
                (seq, len, false, self.segs.len() - 1)
            }
            Next::Rtx { idx, kind } => {
                let g = &mut self.segs[idx];
                g.retransmitted = true;
                if !g.rtx {
                    g.rtx = true;
                    self.rtx_bytes += g.len as u64;
                }
                let (seq, len, end) = (g.seq, g.len, g.end());
                match kind {
                    RtxKind::Fast => {
                        self.fast_rtx_pending = false;
                        if end < self.high_rxt {
                            self.reset_repaired();
                        }
                        self.high_rxt = end;
                        self.rescue_rxt = Some(end);
                    }
                    RtxKind::Lost | RtxKind::Rule3 => self.high_rxt = self.high_rxt.max(end),
                    RtxKind::Rescue => self.rescue_rxt = self.recovery_point,
                    RtxKind::Probe => {}
                }
                // Linux's `tcp_xmit_retransmit_queue`: resending the head of the retransmit
                // queue restarts the RTO, unless RACK's reordering timer is pending.
                if idx == 0 && kind != RtxKind::Probe && self.rack_deadline.is_none() {
                    self.rto_deadline = Some(now + self.rto());
                }
                self.retransmits += 1;
                (seq, len, true, idx)
            }
            _ => unreachable!(),
        };
        let in_flight = self.pipe();
        // The segment just sent: the one pushed, or the one `next` named (segments are kept in
        // sequence order, one per sequence number).
        let g = &mut self.segs[idx];
        debug_assert_eq!(g.seq, seq);
        g.tx_time = now;
        g.delivered = self.delivered;
        g.delivered_time = self.delivered_time;
        g.first_sent_time = self.first_sent_time;
        g.app_limited = self.app_limited_until != 0;
        g.tx_in_flight = pipe_before + len as u64;
        self.bytes_sent += len as u64;
        self.segments_sent += 1;
        self.last_send = Some(now);
        if self.in_recovery || self.ecn_cwr {
            self.prr.on_sent(len as u64); // RFC 6937: prr_out += data sent
        }
        // RFC 6298 (5.1).
        if self.rto_deadline.is_none() {
            self.rto_deadline = Some(now + self.rto());
        }
        if let Some(r) = rate {
            let gap = mul_div(len as u64, 1_000_000_000, r).min(u64::MAX as u128) as u64;
            self.next_release = Some(now + Duration::from_nanos(gap));
        }
        self.cc.on_sent(now, len, in_flight);
        // ECN (RFC 3168 §6.1.5: classic senders mark new data only; L4S all data). CWR rides
        // on the next new segment after a reduction (§6.1.2).
        let ecn = match self.cfg.ecn {
            EcnMode::Classic if retransmit => Ecn::NotEct,
            m => m.codepoint(),
        };
        let cwr = !retransmit && core::mem::take(&mut self.cwr_pending);
        DataSegment { seq, len, retransmit, ecn, cwr }
    }
}
