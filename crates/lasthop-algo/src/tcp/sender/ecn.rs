//! The sender's ECN feedback (see the sender's notes, "ECN"): a CWR episode on ECE (RFC 3168
//! §6.1.2) or on newly CE-marked bytes (AccECN, RFC 9768), and a loss inside one.

use super::{AckSegment, Prr, TcpSender};
use crate::cc::CongestionControl;
use crate::ecn::EcnMode;
use lasthop_core::Instant;

impl TcpSender {
    /// A loss during an ECN window reduction: fast recovery from here, keeping the reduction
    /// in progress (no second `on_loss_event`, as Linux's `tcp_enter_recovery` in CWR).
    pub(super) fn cwr_to_recovery(&mut self) {
        self.ecn_cwr = false;
        self.begin_fast_recovery();
    }

    /// The ECN feedback of `ack` (which newly acknowledged `newly_acked` bytes): starts a CWR
    /// episode on ECE or newly CE-marked bytes. Returns the CE-marked bytes AccECN reports.
    pub(super) fn ecn_feedback(&mut self, now: Instant, ack: &AckSegment, newly_acked: u64) -> u64 {
        let (signal, ce_bytes) = match (self.cfg.ecn, ack.accecn) {
            (EcnMode::Classic, _) => (ack.ece, 0),
            (EcnMode::L4s, Some(fb)) => {
                let (_, b) = self.accecn.on_ack(fb, newly_acked, self.cfg.mss);
                (b > 0, b)
            }
            _ => (false, 0),
        };
        self.ce_bytes_acked += ce_bytes;
        if signal
            && !self.in_recovery
            && !self.ecn_cwr
            && !self.in_loss
            && self.snd_una < self.snd_nxt
            && self.recovery_point.is_none_or(|rp| self.snd_una >= rp)
        {
            self.ecn_cwr = true;
            self.ecn_reductions += 1;
            self.recovery_point = Some(self.snd_nxt);
            self.prr = Prr::start(self.snd_nxt - self.snd_una);
            self.tlp_reset();
            self.cwr_pending = self.cfg.ecn == EcnMode::Classic;
            self.cc.on_ecn_mark(now, self.snd_nxt - self.snd_una, self.cfg.mss);
        }
        ce_bytes
    }
}
