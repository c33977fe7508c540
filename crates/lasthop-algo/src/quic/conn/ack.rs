//! The ACK side of [`QuicConnection`]'s sender (RFC 9002): an ACK frame's newly acknowledged
//! packets (RTT sample, flight, delivery rate, recovery exit, ECN), Chromium's delay-based
//! slow-start exit, loss detection and its congestion events, and what acknowledged or lost
//! frames mean for the data they carried.

use super::*;

impl QuicConnection {
    /// RFC 9002 A.7 OnAckReceived: the ranges' newly acknowledged packets, the RTT sample,
    /// what the packets' acknowledgement means for flight and data, the delivery rate sample,
    /// the ECN counts, loss detection, then the congestion controller's response.
    pub(super) fn on_ack_frame(&mut self, now: Instant, sp: Space, ack: &AckFrame) {
        let si = sp.idx();
        let largest = ack.largest();
        if self.spaces[si].discarded || largest >= self.spaces[si].next_pn {
            return;
        }
        let prior_in_flight = self.bytes_in_flight;
        let mut acked = core::mem::take(&mut self.scratch);
        acked.clear();
        let newly = self.take_newly_acked(sp, ack, &mut acked);
        if acked.is_empty() {
            self.scratch = acked;
            return;
        }
        let rtt_sample = self.rtt_sample(now, sp, ack, &newly);
        // Chromium's HybridSlowStart is handed `RttStats::latest_rtt`, the sample less the
        // peer's ACK delay when that stays at or above min_rtt.
        let hss_sample = rtt_sample.map(|_| self.rtt.latest_adjusted());
        let (newly_acked_bytes, rs) = self.on_packets_acked(now, sp, &acked);
        self.scratch = acked;
        if self.app_limited_until > 0 && self.delivered > self.app_limited_until {
            self.app_limited_until = 0;
        }
        let rate = rs.map(|p| self.rate_sample(now, &p));
        // A.7: ECN counts (§B.7 ProcessECN), detect losses, then the controller hears about
        // acknowledged bytes.
        let acked_packets = self.scratch.iter().filter(|p| p.in_flight).count().max(1) as u64;
        let ce_packets = self.ecn_on_ack(now, sp, ack, newly.ect, newly.largest.map(|p| p.time_sent));
        let ce_acked = (ce_packets.min(acked_packets) * newly_acked_bytes) / acked_packets;
        let lost_bytes = self.detect_and_handle_lost(now, sp);
        if newly_acked_bytes > 0 {
            let rate = rate.map(|mut r| {
                r.newly_lost = lost_bytes;
                r
            });
            let info = self.ack_info(now, prior_in_flight, newly_acked_bytes, rtt_sample, rate, ce_acked);
            self.congestion_response(sp, largest, &info, hss_sample);
        }
        let s = &mut self.spaces[si];
        while s.sent.front().is_some_and(|p| p.state != SentState::Outstanding) {
            s.sent.pop_front();
        }
    }

    /// The packets of `sp` that `ack`'s ranges acknowledge for the first time, appended to
    /// `acked` (one declared lost before carries only its data: it is out of flight already).
    fn take_newly_acked(&mut self, sp: Space, ack: &AckFrame, acked: &mut Vec<SentPacket>) -> NewlyAcked {
        let largest = ack.largest();
        let mut newly = NewlyAcked::default();
        let s = &mut self.spaces[sp.idx()];
        s.largest_acked = Some(s.largest_acked.map_or(largest, |l| l.max(largest)));
        let (Some(front), Some(back)) = (s.sent.front().map(|p| p.pn), s.sent.back().map(|p| p.pn)) else {
            return newly;
        };
        for &(lo, hi) in ack.ranges() {
            if hi < front || lo > back {
                continue;
            }
            for pn in lo.max(front)..=hi.min(back) {
                let p = &mut s.sent[(pn - front) as usize];
                match p.state {
                    SentState::Acked => continue,
                    SentState::Lost => {
                        if p.in_flight {
                            self.stats.spurious_losses += 1;
                        }
                        p.state = SentState::Acked;
                        newly.ect += p.ect as u64;
                        // Only its data counts (already out of flight).
                        let mut c = *p;
                        c.in_flight = false;
                        c.ack_eliciting = false;
                        acked.push(c);
                    }
                    SentState::Outstanding => {
                        p.state = SentState::Acked;
                        newly.ect += p.ect as u64;
                        if p.ack_eliciting {
                            newly.any_eliciting = true;
                        }
                        if pn == largest {
                            newly.largest = Some(*p);
                        }
                        acked.push(*p);
                    }
                }
            }
        }
        newly
    }

    /// §5.1 RTT sample: the largest acknowledged is newly acknowledged and something
    /// ack-eliciting was newly acknowledged.
    fn rtt_sample(&mut self, now: Instant, sp: Space, ack: &AckFrame, newly: &NewlyAcked) -> Option<Duration> {
        let (Some(lp), true) = (newly.largest, newly.any_eliciting) else { return None };
        let latest = now - lp.time_sent;
        let ack_delay = match sp {
            Space::Initial => Duration::ZERO,
            _ if self.confirmed => ack.ack_delay.min(self.peer.max_ack_delay),
            _ => ack.ack_delay,
        };
        self.rtt.update(latest, ack_delay);
        if self.first_rtt_sample.is_none() {
            self.first_rtt_sample = Some(now);
        }
        self.ack_policy.set_min_rtt(self.rtt.min());
        Some(latest)
    }

    /// Newly acknowledged packets: flight, data, ack-of-ack, delivery, recovery exit. Returns
    /// the bytes newly acknowledged in flight and the packet whose snapshot makes the delivery
    /// rate sample.
    fn on_packets_acked(&mut self, now: Instant, sp: Space, acked: &[SentPacket]) -> (u64, Option<SentPacket>) {
        let si = sp.idx();
        let mut newly_acked_bytes = 0u64;
        let mut rs: Option<SentPacket> = None;
        for p in acked {
            if p.in_flight {
                self.bytes_in_flight -= p.size as u64;
                newly_acked_bytes += p.size as u64;
                self.stats.packets_acked += 1;
                let s = &mut self.spaces[si];
                if p.ack_eliciting {
                    s.eliciting_in_flight -= 1;
                }
                // draft-cheng §3.3: the newest acknowledged packet's snapshot makes the sample.
                self.delivered += p.size as u64;
                self.delivered_time = now;
                if rs.is_none_or(|r| p.delivered > r.delivered || (p.delivered == r.delivered && p.time_sent > r.time_sent)) {
                    rs = Some(*p);
                    self.first_sent_time = p.time_sent;
                }
                if self.in_recovery && self.recovery_start.is_some_and(|r| p.time_sent > r) {
                    // §7.3.2: a packet sent during recovery is acknowledged: recovery ends.
                    self.in_recovery = false;
                    self.cc.on_recovery_exit(now);
                }
            }
            for &r in &p.retx {
                self.on_retx_acked(sp, r);
            }
            if let Some(l) = p.ack_largest {
                // RFC 9000 §13.2.4: the peer has our ACK up to `l`: stop reporting below it.
                let s = &mut self.spaces[si];
                if l + 1 > s.ack_floor {
                    s.ack_floor = l + 1;
                    s.recv.remove_below(l + 1);
                }
            }
        }
        (newly_acked_bytes, rs)
    }

    /// draft-cheng §3.3: the delivery rate sample from packet `p`'s snapshot (losses not yet
    /// counted).
    fn rate_sample(&self, now: Instant, p: &SentPacket) -> RateSample {
        let send_elapsed = p.time_sent - p.first_sent_time;
        let ack_elapsed = self.delivered_time - p.delivered_time;
        let interval = send_elapsed.max(ack_elapsed);
        let delivered = self.delivered - p.delivered;
        let valid = !interval.is_zero() && interval >= self.rtt.min();
        RateSample {
            delivery_rate: if valid { lasthop_core::mul_div(delivered, 1_000_000_000, interval.as_nanos()) as u64 } else { 0 },
            interval: if valid { interval } else { Duration::ZERO },
            delivered,
            prior_delivered: p.delivered,
            is_app_limited: p.app_limited,
            rtt: now - p.time_sent,
            tx_in_flight: p.tx_in_flight,
            newly_lost: 0,
        }
    }

    /// What the congestion controller hears of an ACK that acknowledged `newly_acked` bytes.
    fn ack_info(&self, now: Instant, prior_in_flight: u64, newly_acked: u64, rtt: Option<Duration>, rate: Option<RateSample>, ce_acked: u64) -> AckInfo {
        let mss = self.cfg.max_udp_payload;
        let cwnd = self.cc.cwnd();
        // Chromium's IsCwndLimited / RFC 9002 §7.8: no growth when the window is not used.
        let cwnd_limited = prior_in_flight >= cwnd
            || (self.cc.in_slow_start() && prior_in_flight > cwnd / 2)
            || cwnd - prior_in_flight <= 3 * mss as u64;
        AckInfo {
            now,
            newly_acked,
            cum_acked: if cwnd_limited { newly_acked } else { 0 },
            bytes_in_flight: self.bytes_in_flight,
            prior_in_flight,
            rtt,
            min_rtt: self.rtt.min(),
            srtt: self.rtt.smoothed(),
            delivered: self.delivered,
            rate,
            in_recovery: self.in_recovery,
            mss,
            ce_acked,
            // Chromium's rule above gates growth through `cum_acked`; Linux TCP's does not apply.
            cwnd_limited: true,
        }
    }

    /// The controller's response to acknowledged bytes, the delay-based slow-start exit, and
    /// the PTO backoff reset.
    fn congestion_response(&mut self, sp: Space, largest: u64, info: &AckInfo, hss_sample: Option<Duration>) {
        self.cc.on_ack(info);
        if self.cc.mark_app_limited() {
            self.app_limited_until = (self.delivered + self.bytes_in_flight).max(1);
        }
        if sp == Space::AppData {
            self.hybrid_slow_start(info.now, largest, hss_sample);
        }
        // A.7: reset the PTO backoff (the client's address-validation condition is not
        // modelled separately).
        self.pto_count = 0;
    }

    /// Chromium's delay-based slow-start exit (see [`HybridSlowStartConfig`]).
    pub(super) fn hybrid_slow_start(&mut self, now: Instant, largest_acked: u64, rtt: Option<Duration>) {
        let Some(h) = self.cfg.hybrid_slow_start else { return };
        if !self.cc.in_slow_start() || self.in_recovery {
            return;
        }
        let last_sent = self.spaces[2].next_pn.saturating_sub(1);
        if !self.hss.started || largest_acked > self.hss.end_pn {
            self.hss = Hss { started: true, end_pn: last_sent, samples: 0, round_min: None };
        }
        let Some(rtt) = rtt else { return };
        self.hss.samples += 1;
        if self.hss.samples > h.n_samples {
            return;
        }
        let m = self.hss.round_min.map_or(rtt, |m| m.min(rtt));
        self.hss.round_min = Some(m);
        if self.hss.samples < h.n_samples {
            return;
        }
        let min_rtt = self.rtt.min();
        let thresh = (min_rtt / h.divisor as u64).clamp(h.min_thresh, h.max_thresh);
        let low = h.low_window_packets as u64 * self.cfg.max_udp_payload as u64;
        if self.cc.cwnd() >= low && m > min_rtt + thresh {
            self.cc.exit_slow_start(now);
            self.stats.slow_start_delay_exits += 1;
        }
    }

    /// RFC 9002 A.10 DetectAndRemoveLostPackets, then A.11 OnPacketsLost (congestion event
    /// once per recovery period, persistent congestion). Returns the bytes newly lost.
    pub(super) fn detect_and_handle_lost(&mut self, now: Instant, sp: Space) -> u64 {
        let si = sp.idx();
        let loss_delay = self.rtt.loss_delay();
        let lost_send_time = if now.as_nanos() >= loss_delay.as_nanos() { Some(now - loss_delay) } else { None };
        let thr = self.cfg.packet_threshold;
        let pc_duration = (self.rtt.pto_base() + self.peer.max_ack_delay) * 3;
        let mut lost = core::mem::take(&mut self.scratch);
        lost.clear();
        let mut persistent = false;
        {
            let s = &mut self.spaces[si];
            s.loss_time = None;
            let Some(largest) = s.largest_acked else {
                self.scratch = lost;
                return 0;
            };
            // Persistent congestion (§7.6.2): a run of lost ack-eliciting packets, none
            // acknowledged in between, spanning more than the duration, sent after the first
            // RTT sample. Checked within this space.
            let mut run_first: Option<Instant> = None;
            for p in s.sent.iter_mut() {
                if p.pn > largest {
                    break;
                }
                if p.state == SentState::Outstanding {
                    let by_time = lost_send_time.is_some_and(|t| p.time_sent <= t);
                    if by_time || largest >= p.pn + thr {
                        p.state = SentState::Lost;
                        lost.push(*p);
                    } else {
                        let t = p.time_sent + loss_delay;
                        s.loss_time = Some(s.loss_time.map_or(t, |x: Instant| x.min(t)));
                    }
                }
                match p.state {
                    SentState::Acked => run_first = None,
                    SentState::Lost if p.ack_eliciting && p.in_flight => {
                        let after_sample = self.first_rtt_sample.is_some_and(|f| p.time_sent > f);
                        if !after_sample {
                            run_first = None;
                        } else if let Some(f) = run_first {
                            if p.time_sent - f > pc_duration {
                                persistent = true;
                            }
                        } else {
                            run_first = Some(p.time_sent);
                        }
                    }
                    _ => {}
                }
            }
        }
        let mut lost_bytes = 0;
        let mut largest_lost_sent: Option<Instant> = None;
        for p in &lost {
            if p.in_flight {
                self.bytes_in_flight -= p.size as u64;
                lost_bytes += p.size as u64;
                self.stats.packets_lost += 1;
                self.stats.bytes_lost += p.size as u64;
                if p.ack_eliciting {
                    self.spaces[si].eliciting_in_flight -= 1;
                }
                largest_lost_sent = Some(largest_lost_sent.map_or(p.time_sent, |t| t.max(p.time_sent)));
            }
            for r in p.retx {
                self.on_retx_lost(sp, r);
            }
        }
        self.scratch = lost;
        if let Some(t) = largest_lost_sent {
            let mss = self.cfg.max_udp_payload;
            // §7.3.2: a new congestion event only for a packet sent after the last one began.
            if self.recovery_start.is_none_or(|r| t > r) {
                self.recovery_start = Some(now);
                self.in_recovery = true;
                self.stats.congestion_events += 1;
                self.cc.on_loss_event(now, self.bytes_in_flight, mss);
            }
            if persistent && self.cfg.persistent_congestion {
                self.stats.persistent_congestion += 1;
                self.cc.on_rto(now, self.bytes_in_flight, mss);
                self.in_recovery = false;
            }
        }
        let s = &mut self.spaces[si];
        while s.sent.front().is_some_and(|p| p.state != SentState::Outstanding) {
            s.sent.pop_front();
        }
        lost_bytes
    }

    pub(super) fn on_retx_acked(&mut self, sp: Space, r: Retx) {
        match r {
            Retx::Stream { id, offset, len, fin } => {
                if let Some(st) = self.streams.get_mut(&id) {
                    st.send.on_acked(offset, len, fin);
                }
            }
            Retx::Crypto { offset, len, end } => {
                self.spaces[sp.idx()].crypto_send.on_acked(offset, len, end);
            }
            _ => {}
        }
    }

    pub(super) fn on_retx_lost(&mut self, sp: Space, r: Retx) {
        match r {
            Retx::None => {}
            Retx::Stream { id, offset, len, fin } => {
                if let Some(st) = self.streams.get_mut(&id) {
                    st.send.on_lost(offset, len, fin);
                    if st.send.has_pending(0) {
                        self.enqueue(id);
                    }
                }
            }
            Retx::Crypto { offset, len, end } => {
                let s = &mut self.spaces[sp.idx()];
                if !s.discarded {
                    s.crypto_send.on_lost(offset, len, end);
                }
            }
            Retx::MaxData => self.max_data_pending = true,
            Retx::MaxStreamData { id } => {
                if let Some(st) = self.streams.get_mut(&id) {
                    if !st.msd_pending && st.recv.fin_at.is_none() {
                        st.msd_pending = true;
                        self.msd_queue.push(id);
                    }
                }
            }
            Retx::HandshakeDone => self.handshake_done_pending = true,
            Retx::AckFrequency => self.ack_freq_pending = true,
        }
    }

    /// A PTO probe resends a packet's content without declaring it lost.
    pub(super) fn requeue(&mut self, sp: Space, r: Retx) {
        match r {
            Retx::Stream { id, offset, len, fin } => {
                if let Some(st) = self.streams.get_mut(&id) {
                    st.send.requeue(offset, len, fin);
                    if st.send.has_pending(0) {
                        self.enqueue(id);
                    }
                }
            }
            other => self.on_retx_lost(sp, other),
        }
    }
}

/// What an ACK frame's ranges newly acknowledged, besides the packets themselves.
#[derive(Clone, Copy, Default)]
struct NewlyAcked {
    /// The frame's largest acknowledged packet, if newly acknowledged (and not lost before).
    largest: Option<SentPacket>,
    /// An ack-eliciting packet (not lost before) was newly acknowledged.
    any_eliciting: bool,
    /// Newly acknowledged packets sent ECN-capable.
    ect: u64,
}
