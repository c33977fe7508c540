//! ECN in the QUIC model: RFC 9000 §13.4 (reporting and validation) and RFC 9002 §7.1 with its
//! Appendix B.7 (`ProcessECN`: an increased ECN-CE count is a congestion event).
//!
//! * Sending: every datagram carries the mode's codepoint (ECT(0) classic, ECT(1) L4S) until
//!   validation fails, then Not-ECT for the rest of the connection (§13.4.2). The testing
//!   period of §13.4.2 (marking only the first packets until one is acknowledged) and the
//!   "all ECT packets lost" failure are not modelled.
//! * Receiving (§13.4.1): each packet-number space counts the codepoints of the packets it
//!   processes (duplicates and undecryptable packets are not counted); its ACK frames carry
//!   the counts (type 0x03, §19.3.2).
//! * Validation (§13.4.2.1), on an ACK frame that newly acknowledges packets and raises the
//!   space's largest acknowledged (older, reordered ACK frames are skipped, as the section
//!   allows): it fails when ECN counts are missing while ECT packets are newly acknowledged,
//!   when a count decreases, or when the increase of the sent codepoint's count and the CE
//!   count is less than the newly acknowledged packets sent with that codepoint.
//! * Reaction (RFC 9002 §B.7): an increased CE count starts a congestion event for the sent
//!   time of the largest acknowledged packet, under the one-per-recovery-period rule of
//!   §7.3.2 shared with losses; the controller hears it as an ECN signal (`on_ecn_mark`).

use super::*;
use crate::ecn::{Ecn, EcnMode};

impl QuicConnection {
    /// The codepoint the next datagram carries.
    pub(super) fn ecn_codepoint(&self) -> Ecn {
        if self.stats.ecn_failed {
            Ecn::NotEct
        } else {
            self.cfg.ecn.codepoint()
        }
    }

    /// §13.4.1: a packet of space `si` was processed; it arrived with `ecn`.
    pub(super) fn ecn_received(&mut self, si: usize, ecn: Ecn) {
        if self.cfg.ecn != EcnMode::Off {
            self.spaces[si].ecn_recv.count(ecn);
        }
    }

    /// The ECN counts an ACK frame of space `si` reports (when this endpoint uses ECN).
    pub(super) fn ecn_counts(&self, si: usize) -> Option<EcnCounts> {
        (self.cfg.ecn != EcnMode::Off).then_some(self.spaces[si].ecn_recv)
    }

    /// Validation and `ProcessECN` for an ACK frame of `sp` that newly acknowledged
    /// `newly_ect` packets sent with an ECT codepoint; `largest_sent` is the send time of its
    /// largest acknowledged packet if newly acknowledged. Returns the newly CE-marked packets.
    pub(super) fn ecn_on_ack(&mut self, now: Instant, sp: Space, ack: &AckFrame, newly_ect: u64, largest_sent: Option<Instant>) -> u64 {
        if self.cfg.ecn == EcnMode::Off || self.stats.ecn_failed {
            return 0;
        }
        let si = sp.idx();
        if self.spaces[si].ecn_largest.is_some_and(|l| ack.largest() <= l) {
            return 0;
        }
        self.spaces[si].ecn_largest = Some(ack.largest());
        let Some(c) = ack.ecn else {
            if newly_ect > 0 {
                self.stats.ecn_failed = true;
            }
            return 0;
        };
        let prev = self.spaces[si].ecn_peer;
        let sent = |e: &EcnCounts| if self.cfg.ecn == EcnMode::L4s { e.ect1 } else { e.ect0 };
        if c.ect0 < prev.ect0 || c.ect1 < prev.ect1 || c.ce < prev.ce || (sent(&c) - sent(&prev)) + (c.ce - prev.ce) < newly_ect {
            self.stats.ecn_failed = true;
            return 0;
        }
        self.spaces[si].ecn_peer = c;
        let d_ce = c.ce - prev.ce;
        if d_ce == 0 {
            return 0;
        }
        self.stats.ecn_ce_reported += d_ce;
        // RFC 9002 §B.7 / §7.3.2: a new congestion event unless the packet was sent before the
        // current recovery period began.
        if largest_sent.is_some_and(|t| self.recovery_start.is_none_or(|r| t > r)) {
            self.recovery_start = Some(now);
            self.in_recovery = true;
            self.stats.congestion_events += 1;
            self.stats.ecn_congestion_events += 1;
            self.cc.on_ecn_mark(now, self.bytes_in_flight, self.cfg.max_udp_payload);
        }
        d_ce
    }
}
