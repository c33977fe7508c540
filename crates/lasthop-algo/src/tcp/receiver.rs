//! TCP receiver, sans-IO.
//!
//! The connection is established at creation (no SYN/FIN); sequence numbers are u64 byte
//! offsets from 0. The application reads everything delivered in order at once, so the
//! advertised window is the configured buffer minus the out-of-order bytes held (this may
//! shrink the right edge, which RFC 9293 discourages but real stacks with a fixed receive
//! buffer do when out-of-order data consumes it). Clauses followed:
//!
//! * **RFC 9293 §3.10.7.4** / RFC 5681 §4.2: in-order data advances RCV.NXT and is delivered;
//!   out-of-order data is held (as merged byte ranges) until the hole fills.
//! * **RFC 5681 §4.2** ACK generation: an ACK SHOULD be generated for at least every second
//!   full-sized segment (here: once ≥ `ack_every`·MSS bytes are unacknowledged) and within
//!   the delayed-ACK timeout (`delayed_ack`, 40 ms as Linux's minimum); an immediate ACK is
//!   sent for an out-of-order segment, for a segment that fills (part of) a hole, and for a
//!   duplicate (already received) segment. Linux's quick-ack mode is modelled by ACKing each
//!   of the first `quickack_segments` segments immediately.
//! * **RFC 2018 §4** SACK blocks: every ACK sent while out-of-order data is held carries up
//!   to [`MAX_SACK_BLOCKS`] blocks; the first block covers the segment that triggered the ACK
//!   (unless that segment advanced the cumulative ACK), the others the most recently reported
//!   blocks, most recent first, never repeating a block. No D-SACK (RFC 2883).
//!
//! * **ECN feedback** (`ecn`): classic (RFC 3168 §6.1.3): a CE-marked segment sets ECE on every
//!   ACK until a segment with CWR arrives (CWR is processed before the segment's own CE), and
//!   the first CE of an episode is ACKed at once (Linux `tcp_ecn_check_ce` enters quick-ack so
//!   that a sender with a small window hears it). L4S: the Accurate ECN counters (RFC 9768
//!   §3.2, [`AccEcnReceiver`]) on every ACK, for every data packet received, duplicates
//!   included; an ACK is sent at once when a segment's CE state differs from the previous
//!   segment's (RFC 8257 §3.2's two-state ACK machine, RFC 9768 §3.2.2.5.1 change-triggered
//!   ACKs); the AccECN option leaves room for [`MAX_SACK_BLOCKS_ACCECN`] SACK blocks.
//!
//! * **GRO** (`gro_bytes` > 0): the receiving host's driver hands the frames of one reception
//!   (a PPDU's MPDUs) to Linux's generic receive offload, which merges in-order segments of a
//!   flow into one packet of up to `gro_bytes` (64 KiB, `GRO_LEGACY_MAX_SIZE`) and flushes it at
//!   the end of the NAPI poll; mac80211 does so when the driver gives it its NAPI context
//!   (`ieee80211_deliver_skb_to_local_stack`: `napi_gro_receive`). TCP then sees one segment
//!   per merged packet, and `__tcp_ack_snd_check` ACKs at once when more than one full-sized
//!   segment is unacknowledged: one ACK per merged packet (when it fills, or at the batch's end,
//!   [`TcpReceiver::end_batch`]), where per-segment delivery ACKs every second segment. An
//!   out-of-order segment ends the merge (`tcp_gro_receive` flushes on a sequence gap) and is
//!   ACKed at once as without GRO.
//!
//! `poll_ack` returns at most one ACK for everything received so far: the host calls it after
//! every `handle_segment` (so each out-of-order segment yields its own duplicate ACK), and, with
//! GRO, after `end_batch`.

use super::{AckSegment, DataSegment, MAX_SACK_BLOCKS, MAX_SACK_BLOCKS_ACCECN};
use crate::ecn::{AccEcnReceiver, Ecn, EcnMode};
use alloc::collections::BTreeMap;
use alloc::vec::Vec;
use lasthop_core::{Duration, Instant};

/// Parameters of a [`TcpReceiver`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TcpReceiverConfig {
    /// Receiver MSS, to recognise full-sized segments (1448).
    pub mss: u32,
    /// Receive buffer / window in bytes (6 MiB, Linux's default `tcp_rmem` max).
    pub rwnd: u64,
    /// Delayed-ACK timeout (40 ms, Linux `TCP_DELACK_MIN`).
    pub delayed_ack: Duration,
    /// ACK at least every this many full-sized segments (2, RFC 5681 §4.2).
    pub ack_every: u32,
    /// Quick-ack mode at the start: ACK each of the first this many segments (16, Linux
    /// `TCP_MAX_QUICKACKS`).
    pub quickack_segments: u32,
    /// The ECN feedback the connection negotiated (off by default).
    pub ecn: EcnMode,
    /// GRO at the receiving host: the largest merged packet in bytes (0: off, segments are
    /// handled one by one; Linux's `GRO_LEGACY_MAX_SIZE` is 65536).
    pub gro_bytes: u64,
}

impl Default for TcpReceiverConfig {
    fn default() -> Self {
        TcpReceiverConfig {
            mss: 1448,
            rwnd: 6 << 20,
            delayed_ack: Duration::from_millis(40),
            ack_every: 2,
            quickack_segments: 16,
            ecn: EcnMode::Off,
            gro_bytes: 0,
        }
    }
}

/// The receiving end of a TCP connection.
#[derive(Clone, Debug)]
pub struct TcpReceiver {
    cfg: TcpReceiverConfig,
    /// RCV.NXT: everything below is delivered.
    rcv_nxt: u64,
    /// Out-of-order ranges held: start → end (disjoint, non-adjacent, all > rcv_nxt).
    ooo: BTreeMap<u64, u64>,
    ooo_bytes: u64,
    /// Starts of the SACK blocks by recency of change, most recent first (RFC 2018 §4).
    recent: Vec<u64>,
    /// The segment that triggered the pending ACK, when it was out of order.
    trigger: Option<u64>,
    /// Bytes received since the last ACK.
    unacked_bytes: u64,
    ack_now: bool,
    delack_deadline: Option<Instant>,
    segments_received: u64,
    acks_sent: u64,
    /// Classic ECN: a CE arrived and no CWR since (RFC 3168 §6.1.3).
    ece: bool,
    /// Accurate ECN counters (RFC 9768 §3.2.1).
    accecn: AccEcnReceiver,
    /// CE-marked segments received.
    ce_segments: u64,
}

impl TcpReceiver {
    pub fn new(cfg: TcpReceiverConfig) -> Self {
        TcpReceiver {
            cfg,
            rcv_nxt: 0,
            ooo: BTreeMap::new(),
            ooo_bytes: 0,
            recent: Vec::new(),
            trigger: None,
            unacked_bytes: 0,
            ack_now: false,
            delack_deadline: None,
            segments_received: 0,
            acks_sent: 0,
            ece: false,
            accecn: AccEcnReceiver::default(),
            ce_segments: 0,
        }
    }

    /// The receiver's parameters.
    pub fn config(&self) -> &TcpReceiverConfig {
        &self.cfg
    }

    /// CE-marked segments received.
    pub fn ce_segments(&self) -> u64 {
        self.ce_segments
    }

    /// The ECN field of an arriving segment (before its data is looked at: duplicates count too).
    fn ecn_in(&mut self, seg: &DataSegment) {
        let ce = seg.ecn == Ecn::Ce;
        self.ce_segments += ce as u64;
        match self.cfg.ecn {
            EcnMode::Off => {}
            EcnMode::Classic => {
                if seg.cwr {
                    self.ece = false;
                }
                if ce && !self.ece {
                    self.ece = true;
                    self.ack_now = true;
                }
            }
            EcnMode::L4s => {
                if self.accecn.on_data(seg.ecn, seg.len) {
                    self.ack_now = true;
                }
            }
        }
    }

    /// Bytes delivered in order to the application (RCV.NXT).
    pub fn delivered(&self) -> u64 {
        self.rcv_nxt
    }

    /// Out-of-order bytes held.
    pub fn ooo_bytes(&self) -> u64 {
        self.ooo_bytes
    }

    pub fn acks_sent(&self) -> u64 {
        self.acks_sent
    }

    /// Advertised window: the buffer minus out-of-order bytes held.
    pub fn rwnd(&self) -> u64 {
        self.cfg.rwnd.saturating_sub(self.ooo_bytes)
    }

    /// A data segment arrived. Returns the bytes newly delivered in order to the application.
    pub fn handle_segment(&mut self, now: Instant, seg: &DataSegment) -> u64 {
        self.segments_received += 1;
        self.ecn_in(seg);
        let quick = self.segments_received <= self.cfg.quickack_segments as u64;
        let end = seg.seq + seg.len as u64;
        if seg.len == 0 || end <= self.rcv_nxt {
            // Duplicate: ACK at once (RFC 5681 §4.2, RFC 9293).
            self.ack_now = true;
            return 0;
        }
        self.unacked_bytes += seg.len as u64;
        let had_holes = !self.ooo.is_empty();
        let mut delivered = 0;
        if seg.seq <= self.rcv_nxt {
            let old = self.rcv_nxt;
            self.rcv_nxt = end;
            // Pull in held ranges that are now contiguous.
            while let Some((&s, &e)) = self.ooo.first_key_value() {
                if s > self.rcv_nxt {
                    break;
                }
                self.ooo.pop_first();
                self.ooo_bytes -= e - s;
                self.rcv_nxt = self.rcv_nxt.max(e);
            }
            delivered = self.rcv_nxt - old;
            self.trigger = None;
            if had_holes {
                self.ack_now = true; // filled (part of) a hole
            }
        } else {
            let start = self.insert_ooo(seg.seq, end);
            self.touch_recent(start);
            self.trigger = Some(start);
            self.ack_now = true; // out of order
        }
        self.recent.retain(|&s| s > self.rcv_nxt);
        if self.cfg.gro_bytes > 0 {
            // A merged packet reaches TCP when no further full-sized segment fits in it (the
            // next one starts another), or at the end of the batch.
            if self.unacked_bytes + self.cfg.mss as u64 > self.cfg.gro_bytes {
                self.ack_now = true;
            }
        } else if quick || self.unacked_bytes >= self.cfg.ack_every as u64 * self.cfg.mss as u64 {
            self.ack_now = true;
        }
        if !self.ack_now && self.delack_deadline.is_none() {
            self.delack_deadline = Some(now + self.cfg.delayed_ack);
        }
        delivered
    }

    /// Insert [s, e) into the held ranges, merging overlapping or adjacent ones. Returns the
    /// start of the merged range containing it.
    fn insert_ooo(&mut self, s: u64, e: u64) -> u64 {
        let (mut ns, mut ne) = (s, e);
        // A range starting at or before s that reaches s.
        if let Some((&ps, &pe)) = self.ooo.range(..=s).next_back() {
            if pe >= s {
                ns = ps;
                ne = ne.max(pe);
                self.ooo.remove(&ps);
                self.ooo_bytes -= pe - ps;
                self.forget_recent(ps, ns);
            }
        }
        // Ranges starting within (s, ne].
        while let Some((&rs, &re)) = self.ooo.range(ns..=ne).next() {
            ne = ne.max(re);
            self.ooo.remove(&rs);
            self.ooo_bytes -= re - rs;
            self.forget_recent(rs, ns);
        }
        self.ooo.insert(ns, ne);
        self.ooo_bytes += ne - ns;
        ns
    }

    /// A block that started at `old` now belongs to the block starting at `new`.
    fn forget_recent(&mut self, old: u64, new: u64) {
        for r in self.recent.iter_mut() {
            if *r == old {
                *r = new;
            }
        }
    }

    /// Move block `start` to the front of the recency list, dropping duplicates.
    fn touch_recent(&mut self, start: u64) {
        let mut seen = Vec::with_capacity(self.recent.len() + 1);
        seen.push(start);
        for &r in &self.recent {
            if !seen.contains(&r) && self.ooo.contains_key(&r) {
                seen.push(r);
            }
        }
        self.recent = seen;
    }

    /// With GRO: the end of a batch of receptions (the NAPI poll's GRO flush). The merged packet
    /// reaches TCP: an ACK is due when more than one full-sized segment is unacknowledged, or in
    /// quick-ack mode; otherwise the delayed-ACK timer runs. Without GRO: nothing.
    pub fn end_batch(&mut self) {
        if self.cfg.gro_bytes == 0 || self.unacked_bytes == 0 {
            return;
        }
        let quick = self.segments_received <= self.cfg.quickack_segments as u64;
        if quick || self.unacked_bytes > self.cfg.mss as u64 {
            self.ack_now = true;
        }
    }

    /// An ACK to send now, if one is due.
    pub fn poll_ack(&mut self, now: Instant) -> Option<AckSegment> {
        if self.delack_deadline.is_some_and(|t| t <= now) {
            self.ack_now = true;
        }
        if !self.ack_now {
            return None;
        }
        self.ack_now = false;
        self.delack_deadline = None;
        self.unacked_bytes = 0;
        self.trigger = None;
        self.acks_sent += 1;
        Some(self.build_ack())
    }

    /// The ACK describing the current state (RFC 2018 §4 block order).
    pub fn build_ack(&self) -> AckSegment {
        let mut ack = AckSegment { cum_ack: self.rcv_nxt, rwnd: self.rwnd(), ..AckSegment::default() };
        let room = match self.cfg.ecn {
            EcnMode::Classic => {
                ack.ece = self.ece;
                MAX_SACK_BLOCKS
            }
            EcnMode::L4s => {
                ack.accecn = Some(self.accecn.feedback());
                MAX_SACK_BLOCKS_ACCECN
            }
            EcnMode::Off => MAX_SACK_BLOCKS,
        };
        let mut n = 0;
        let mut push = |s: u64, ack: &mut AckSegment| {
            if n >= room {
                return;
            }
            if let Some(&e) = self.ooo.get(&s) {
                if ack.sack[..n].iter().all(|b| b.0 != s) {
                    ack.sack[n] = (s, e);
                    n += 1;
                }
            }
        };
        if let Some(t) = self.trigger {
            push(t, &mut ack);
        }
        for &s in &self.recent {
            push(s, &mut ack);
        }
        // Blocks never reported (cannot happen with `recent` kept up to date; safety net).
        for &s in self.ooo.keys() {
            push(s, &mut ack);
        }
        ack.n_sack = n as u8;
        ack
    }

    /// The delayed-ACK timer.
    pub fn poll_timeout(&self) -> Option<Instant> {
        if self.ack_now {
            return None;
        }
        self.delack_deadline
    }

    pub fn handle_timeout(&mut self, now: Instant) {
        if self.delack_deadline.is_some_and(|t| t <= now) {
            self.delack_deadline = None;
            self.ack_now = true;
        }
    }
}
