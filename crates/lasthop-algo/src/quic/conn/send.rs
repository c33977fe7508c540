//! The send path of [`QuicConnection`]: what the next datagram carries (ACK, CRYPTO, stream
//! and control frames, retransmissions per RFC 9000 §13.3), when congestion control, pacing
//! (RFC 9002 §7.7) and the anti-amplification limit (RFC 9000 §8.1) let it go, and the record
//! kept of every packet sent (RFC 9002 Appendix A.5).

use super::*;

impl QuicConnection {

    /// The next datagram to send at `now`, if congestion control, pacing, the anti-
    /// amplification limit and the data allow.
    pub fn poll_transmit(&mut self, now: Instant) -> Option<Datagram> {
        self.pacing_wait = None;
        match self.state {
            State::Closed => return None,
            State::Closing(code) => return Some(self.send_close(now, code)),
            State::Open => {}
        }
        let mut budget = self.cfg.max_udp_payload as u64;
        if !self.address_validated {
            // §8.1: at most three times the bytes received before the address is validated.
            budget = budget.min((3 * self.stats.bytes_received).saturating_sub(self.stats.bytes_sent));
        }
        if budget < 64 {
            return None;
        }
        let mut dg = Datagram { packets: self.packet_pool.pop().unwrap_or_default(), len: 0, ecn: self.ecn_codepoint() };
        let mut built = [Built::default(); 3];
        for sp in Space::ALL {
            let room = (budget - dg.len as u64) as u32;
            if let Some((pkt, b)) = self.build_packet(now, sp, room) {
                dg.len += pkt.len;
                built[dg.packets.len()] = b;
                dg.packets.push(pkt);
            }
        }
        if dg.packets.is_empty() {
            // draft-cheng §3.4: nothing to send with room in cwnd: application-limited.
            if self.queue.is_empty() && self.bytes_in_flight < self.cc.cwnd() && self.pacing_wait.is_none() {
                self.app_limited_until = (self.delivered + self.bytes_in_flight).max(1);
            }
            self.recycle(dg);
            return None;
        }
        // RFC 9000 §14.1: datagrams with an ack-eliciting Initial are at least 1200 bytes.
        let pad_initial = dg.packets.iter().any(|p| p.ty == PacketType::Initial && p.ack_eliciting());
        if pad_initial && dg.len < MIN_INITIAL_DATAGRAM {
            let want = (MIN_INITIAL_DATAGRAM - dg.len).min((budget - dg.len as u64) as u32);
            let i = dg.packets.len() - 1;
            let (last, b) = (&mut dg.packets[i], &mut built[i]);
            let old = last.len;
            let mut pad = want;
            loop {
                let len = last.ty.header_len(b.pnl, b.payload + pad) + b.payload + pad + AEAD_TAG_LEN;
                if len - old <= want || pad == 0 {
                    last.len = len;
                    break;
                }
                pad -= 1;
            }
            b.payload += pad;
            last.frames.push(Frame::Padding { len: pad });
            dg.len += last.len - old;
        }
        for (i, p) in dg.packets.iter().enumerate() {
            self.on_packet_sent(now, p, built[i]);
        }
        self.stats.datagrams_sent += 1;
        self.stats.bytes_sent += dg.len as u64;
        debug_assert!(dg.len <= self.cfg.max_udp_payload);
        Some(dg)
    }

    fn send_close(&mut self, now: Instant, code: u64) -> Datagram {
        let ty = if self.one_rtt_send {
            PacketType::OneRtt
        } else if self.hs_keys && !self.spaces[1].discarded {
            PacketType::Handshake
        } else {
            PacketType::Initial
        };
        let s = &mut self.spaces[ty.space().idx()];
        let pn = s.next_pn;
        s.next_pn += 1;
        let pnl = pn_len(pn, s.largest_acked);
        let f = Frame::ConnectionClose { code };
        let payload = f.wire_len().max(4 - pnl.min(4));
        let mut frames = self.frame_pool.pop().unwrap_or_default();
        frames.push(f);
        let len = ty.header_len(pnl, payload) + payload + AEAD_TAG_LEN;
        let mut packets = self.packet_pool.pop().unwrap_or_default();
        packets.push(Packet { ty, pn, frames, len });
        self.state = State::Closed;
        self.stats.datagrams_sent += 1;
        self.stats.packets_sent += 1;
        self.stats.bytes_sent += len as u64;
        let _ = now;
        Datagram { packets, len, ecn: self.ecn_codepoint() }
    }

    fn pacer_ready(&mut self, now: Instant) -> bool {
        let rate = self.pacing_rate();
        !self.cfg.pacing || self.pacer.ready(now, self.bytes_in_flight, rate)
    }

    /// The space has ack-eliciting content to send (ignoring cwnd and pacing).
    fn has_eliciting(&self, sp: Space) -> bool {
        let s = &self.spaces[sp.idx()];
        match sp {
            Space::Initial | Space::Handshake => s.crypto_send.has_pending(u64::MAX),
            Space::AppData => {
                (self.one_rtt_send
                    && (self.handshake_done_pending || self.ack_freq_pending || self.max_data_pending || !self.msd_queue.is_empty()))
                    || !self.queue.is_empty()
            }
        }
    }

    /// The packet of space `sp` in at most `room` bytes, if it has anything to carry: the ACK
    /// when one is due, then, when congestion control and pacing allow or as a probe, the 1-RTT
    /// control frames, the CRYPTO or STREAM data and a PING where nothing else elicits an ACK.
    fn build_packet(&mut self, now: Instant, sp: Space, room: u32) -> Option<(Packet, Built)> {
        let si = sp.idx();
        if self.spaces[si].discarded {
            return None;
        }
        let ty = match sp {
            Space::Initial => PacketType::Initial,
            Space::Handshake if self.hs_keys => PacketType::Handshake,
            Space::Handshake => return None,
            Space::AppData if self.one_rtt_send => PacketType::OneRtt,
            Space::AppData if self.zero_rtt_send => PacketType::ZeroRtt,
            Space::AppData => return None,
        };
        let probe = self.probes > 0 && self.probe_space == sp;
        let has_data = self.has_eliciting(sp);
        let cc_ok = self.bytes_in_flight < self.cc.cwnd();
        // The pacer is asked only when the window lets the packet go (Chromium's
        // `TimeUntilSend` asks the controller first).
        let pace_ok = sp != Space::AppData || !(has_data && cc_ok) || self.pacer_ready(now);
        if has_data && cc_ok && !pace_ok {
            self.pacing_wait = Some(self.pacer.next_send_time());
        }
        let send_eliciting = probe || (has_data && cc_ok && pace_ok);
        let want_ack = ty != PacketType::ZeroRtt && self.ack_wanted(sp, send_eliciting);
        if !send_eliciting && !want_ack {
            return None;
        }
        let (pn, pnl) = {
            let s = &self.spaces[si];
            (s.next_pn, pn_len(s.next_pn, s.largest_acked))
        };
        let overhead = ty.header_len(pnl, room) + AEAD_TAG_LEN;
        if room < overhead + 24 {
            return None;
        }
        let mut b = Built { probe, pnl, ..Built::default() };
        let mut fill = Fill { frames: self.frame_pool.pop().unwrap_or_default(), payload: 0, max_payload: room - overhead, slots: 0, b: &mut b };
        if want_ack {
            self.push_ack(now, sp, &mut fill);
        }
        let mut eliciting = false;
        if send_eliciting {
            eliciting = self.push_eliciting(sp, ty, probe, &mut fill);
        }
        if !eliciting && sp == Space::AppData && ty == PacketType::OneRtt {
            self.ack_only_run += 1;
            if self.ack_only_run >= PING_EVERY_ACKS && cc_ok {
                fill.frames.push(Frame::Ping);
                fill.payload += 1;
                eliciting = true;
            }
        }
        if eliciting && sp == Space::AppData {
            self.ack_only_run = 0;
        }
        if fill.frames.is_empty() {
            self.frame_pool.push(fill.frames);
            return None;
        }
        self.spaces[si].next_pn += 1;
        Some((fill.into_packet(ty, pn), b))
    }

    /// An ACK is due in `sp`, or one can ride along with the ack-eliciting packet about to be sent.
    fn ack_wanted(&self, sp: Space, send_eliciting: bool) -> bool {
        match sp {
            Space::Initial | Space::Handshake => {
                let s = &self.spaces[sp.idx()];
                s.ack_now || (send_eliciting && s.unacked_eliciting)
            }
            Space::AppData => {
                self.one_rtt_recv
                    && (self.ack_policy.ack_due() || (send_eliciting && self.ack_policy.pending_ack_eliciting() > 0))
            }
        }
    }

    /// The ACK frame of `sp`, and the space's ACK state reset.
    fn push_ack(&mut self, now: Instant, sp: Space, fill: &mut Fill) {
        let a = self.build_ack(now, sp);
        fill.payload += a.wire_len();
        fill.b.ack_largest = Some(a.largest());
        fill.frames.push(Frame::Ack(a));
        self.stats.acks_sent += 1;
        match sp {
            Space::AppData => self.ack_policy.on_ack_sent(now),
            _ => {
                let s = &mut self.spaces[sp.idx()];
                s.ack_now = false;
                s.unacked_eliciting = false;
            }
        }
    }

    /// The ack-eliciting frames in priority order: the 1-RTT control frames, then the space's
    /// CRYPTO or STREAM data, then a PING if a probe has nothing else. Returns whether any was added.
    fn push_eliciting(&mut self, sp: Space, ty: PacketType, probe: bool, fill: &mut Fill) -> bool {
        let mut eliciting = false;
        if sp == Space::AppData && ty == PacketType::OneRtt && self.push_control(fill) {
            eliciting = true;
        }
        let data = match sp {
            Space::Initial | Space::Handshake => self.fill_crypto(sp, fill),
            Space::AppData => self.fill_streams(fill),
        };
        if data {
            eliciting = true;
        }
        if probe && !eliciting && fill.payload < fill.max_payload {
            fill.frames.push(Frame::Ping);
            fill.payload += 1;
            eliciting = true;
        }
        eliciting
    }

    /// The 1-RTT control frames waiting to go: HANDSHAKE_DONE, ACK_FREQUENCY, MAX_DATA, then
    /// MAX_STREAM_DATA. Returns whether any was added.
    fn push_control(&mut self, fill: &mut Fill) -> bool {
        let mut added = false;
        if self.handshake_done_pending && fill.push(Frame::HandshakeDone, Retx::HandshakeDone) {
            self.handshake_done_pending = false;
            added = true;
        }
        if self.ack_freq_pending {
            if let Some(r) = self.cfg.ack_frequency_request {
                let f = Frame::AckFrequency {
                    sequence: 0,
                    threshold: r.threshold,
                    max_ack_delay: r.max_ack_delay,
                    reordering: r.reordering,
                };
                if fill.push(f, Retx::AckFrequency) {
                    self.ack_freq_pending = false;
                    self.ack_freq_sent = true;
                    // The peer now delays ACKs by up to the requested time.
                    self.peer.max_ack_delay = r.max_ack_delay;
                    added = true;
                }
            }
        }
        if self.max_data_pending && fill.push(Frame::MaxData { max: self.max_data_adv }, Retx::MaxData) {
            self.max_data_pending = false;
            added = true;
        }
        while let Some(&id) = self.msd_queue.last() {
            let max = match self.streams.get(&id) {
                Some(st) if st.msd_pending => st.recv.max_adv,
                _ => {
                    self.msd_queue.pop();
                    continue;
                }
            };
            if !fill.push(Frame::MaxStreamData { id, max }, Retx::MaxStreamData { id }) {
                break;
            }
            self.msd_queue.pop();
            if let Some(st) = self.streams.get_mut(&id) {
                st.msd_pending = false;
            }
            added = true;
        }
        added
    }

    /// CRYPTO frames of `sp` (the transport parameters ride in the first one of the space that
    /// carries them). Returns whether any was added.
    fn fill_crypto(&mut self, sp: Space, fill: &mut Fill) -> bool {
        let carries_params = (self.cfg.role == Role::Client) == (sp == Space::Initial);
        let params = Self::own_params(&self.cfg);
        let mut added = false;
        while fill.slots < RETX_CAP {
            let left = fill.max_payload - fill.payload;
            let s = &mut self.spaces[sp.idx()];
            let off = s.crypto_send.retx.first().map_or(s.crypto_send.sent, |r| r.0);
            let oh = 1 + varint_len(off) + varint_len(left as u64);
            if left <= oh {
                break;
            }
            let Some(c) = s.crypto_send.next_chunk(left - oh, u64::MAX) else { break };
            let f = Frame::Crypto {
                offset: c.offset,
                len: c.len,
                end: c.fin,
                params: (carries_params && c.offset == 0).then_some(params),
            };
            fill.add(f, Retx::Crypto { offset: c.offset, len: c.len, end: c.fin });
            added = true;
        }
        added
    }

    /// Fill STREAM frames round-robin (one stream per packet turn). Returns whether any was added.
    fn fill_streams(&mut self, fill: &mut Fill) -> bool {
        let mut added = false;
        let mut used_front: Option<u64> = None;
        while fill.slots < RETX_CAP {
            let Some(&id) = self.queue.front() else { break };
            let conn_room = self.peer_max_data.saturating_sub(self.conn_sent_new);
            let Some(st) = self.streams.get_mut(&id) else {
                self.queue.pop_front();
                continue;
            };
            let limit = st.peer_max.min(st.send.sent + conn_room);
            if retire_if_idle(st, limit, &mut self.stats.flow_control_blocked) {
                self.queue.pop_front();
                continue;
            }
            let left = fill.max_payload - fill.payload;
            let off = st.send.retx.first().map_or(st.send.sent, |r| r.0);
            let oh = 1 + varint_len(id) + if off > 0 { varint_len(off) } else { 0 } + varint_len(left as u64);
            if left <= oh + 8 {
                break;
            }
            let Some(c) = st.send.next_chunk(left - oh, limit) else { break };
            let f = Frame::Stream { id, offset: c.offset, len: c.len, fin: c.fin };
            fill.add(f, Retx::Stream { id, offset: c.offset, len: c.len, fin: c.fin });
            added = true;
            if c.new {
                self.conn_sent_new += c.len as u64;
                self.stats.stream_bytes_sent += c.len as u64;
            } else {
                self.stats.stream_bytes_retransmitted += c.len as u64;
            }
            used_front = Some(id);
            let conn_room = self.peer_max_data.saturating_sub(self.conn_sent_new);
            let limit = st.peer_max.min(st.send.sent + conn_room);
            if retire_if_idle(st, limit, &mut self.stats.flow_control_blocked) {
                self.queue.pop_front();
                used_front = None;
            }
        }
        // Round robin: the stream that filled this packet goes to the back.
        if let Some(id) = used_front {
            if self.queue.front() == Some(&id) && self.queue.len() > 1 {
                self.queue.pop_front();
                self.queue.push_back(id);
            }
        }
        added
    }

    /// ACK frame for `sp` (RFC 9000 §19.3): the highest ranges, ACK Delay measured from the
    /// arrival of the largest packet (§13.2.5).
    fn build_ack(&self, now: Instant, sp: Space) -> AckFrame {
        let s = &self.spaces[sp.idx()];
        let delay = match (sp, s.largest_recv_time) {
            (Space::AppData, Some(t)) => now - t,
            _ => Duration::ZERO,
        };
        let mut ack = AckFrame::new(delay, s.recv.iter().rev().map(|(a, e)| (a, e - 1)));
        ack.ecn = self.ecn_counts(sp.idx());
        ack
    }

    fn on_packet_sent(&mut self, now: Instant, p: &Packet, b: Built) {
        let sp = p.space();
        let si = sp.idx();
        let ack_eliciting = p.ack_eliciting();
        let in_flight = ack_eliciting || p.frames.iter().any(|f| matches!(f, Frame::Padding { .. }));
        self.stats.packets_sent += 1;
        if !ack_eliciting {
            self.stats.ack_only_packets_sent += 1;
        }
        if in_flight {
            if self.bytes_in_flight == 0 {
                // draft-cheng §3.2: restart the send and delivery clocks after quiescence.
                self.first_sent_time = now;
                self.delivered_time = now;
            }
            if sp == Space::AppData && self.cfg.pacing && !b.probe {
                self.on_paced_send(now, p.len);
            }
            self.bytes_in_flight += p.len as u64;
            self.cc.on_sent(now, p.len, self.bytes_in_flight);
        }
        if ack_eliciting {
            if b.probe && self.probes > 0 {
                self.probes -= 1;
                self.stats.probes_sent += 1;
            }
            if !self.eliciting_sent_since_recv {
                self.last_activity = now;
                self.eliciting_sent_since_recv = true;
            }
        }
        // RFC 9001 §4.9.1: the client discards Initial keys when it first sends Handshake.
        if p.ty == PacketType::Handshake && self.cfg.role == Role::Client {
            self.discard_space(Space::Initial);
        }
        let sent = SentPacket {
            pn: p.pn,
            time_sent: now,
            size: p.len,
            ack_eliciting,
            in_flight,
            state: SentState::Outstanding,
            retx: b.retx,
            ack_largest: b.ack_largest,
            delivered: self.delivered,
            delivered_time: self.delivered_time,
            first_sent_time: self.first_sent_time,
            app_limited: self.app_limited_until > 0,
            tx_in_flight: self.bytes_in_flight,
            ect: self.ecn_codepoint() != crate::ecn::Ecn::NotEct,
        };
        let s = &mut self.spaces[si];
        if ack_eliciting {
            s.last_ack_eliciting_sent = Some(now);
            if in_flight {
                s.eliciting_in_flight += 1;
            }
        }
        s.sent.push_back(sent);
    }

    /// Chromium's pacing sender: an unpaced burst after quiescence, then one packet per
    /// len/rate on the schedule of the pacer's mode (`quic::pacer`).
    fn on_paced_send(&mut self, now: Instant, len: u32) {
        let (bif, rec, cwnd) = (self.bytes_in_flight, self.in_recovery, self.cc.cwnd());
        let rate = self.pacing_rate();
        self.pacer.on_sent(now, len, bif, rec, cwnd, rate);
    }
}

/// The packet being built: its frames, the payload they take out of `max_payload`, and what the
/// retransmittable ones carried (`b.retx`, `slots` of them).
struct Fill<'a> {
    frames: Vec<Frame>,
    payload: u32,
    max_payload: u32,
    slots: usize,
    b: &'a mut Built,
}

impl Fill<'_> {
    /// Adds `f`, which carries `r`, if it fits in the payload and in the record.
    #[inline]
    fn push(&mut self, f: Frame, r: Retx) -> bool {
        let l = f.wire_len();
        if self.payload + l > self.max_payload || self.slots >= RETX_CAP {
            return false;
        }
        self.payload += l;
        self.frames.push(f);
        self.b.retx[self.slots] = r;
        self.slots += 1;
        true
    }

    /// Adds `f`, which carries `r` (sized by the caller to fit).
    #[inline]
    fn add(&mut self, f: Frame, r: Retx) {
        self.payload += f.wire_len();
        self.frames.push(f);
        self.b.retx[self.slots] = r;
        self.slots += 1;
    }

    /// The packet numbered `pn`, padded to the header protection sample's four bytes.
    #[inline]
    fn into_packet(mut self, ty: PacketType, pn: u64) -> Packet {
        let pnl = self.b.pnl;
        // RFC 9001 §5.4.2: four bytes of packet number and payload for the header sample.
        if pnl + self.payload < 4 {
            let pad = 4 - pnl - self.payload;
            self.frames.push(Frame::Padding { len: pad });
            self.payload += pad;
        }
        self.b.payload = self.payload;
        let len = ty.header_len(pnl, self.payload) + self.payload + AEAD_TAG_LEN;
        Packet { ty, pn, frames: self.frames, len }
    }
}
