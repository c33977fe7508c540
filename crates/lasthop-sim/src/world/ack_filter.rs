//! TCP ACK filtering in the AP's flow queue (`ap.ack_filter`), as sch_cake does it
//! (`cake_ack_filter` in net/sched/sch_cake.c, Linux 4.19+; RFC 3449 §5.2.1): when a pure ACK
//! joins a flow, an older pure ACK of the same connection in that flow that the new one makes
//! redundant is taken out, so the aggregates the AP sends a station carry fewer ACKs of its
//! uploads.
//!
//! The rules, in the order `cake_ack_filter` applies them to the packets queued ahead of the
//! new ACK (oldest first), of the same connection and direction only:
//! * a change of the ECN flags (ECE, CWR; under AccECN the two low bits of the ACE field they
//!   carry) from the first eligible ACK found makes that one ineligible again;
//! * an ACK that acknowledges more than the new one (a higher cumulative ACK) is kept;
//! * its SACK blocks must all lie within the new one's and start at or above the new
//!   cumulative ACK (`cake_tcph_sack_compare` < 0 keeps it), and with an equal cumulative ACK
//!   the new one must SACK more;
//! * conservative mode takes out the first eligible ACK once a second one is found; aggressive
//!   mode also takes out a single eligible ACK when it sits right ahead of the new one with the
//!   same ECN flags.
//!
//! The model's ACKs carry no timestamps or other options, so cake's timestamp and option checks
//! (`cake_tcph_may_drop`) always pass. The filter works only in mac80211's flow queue (the spec
//! allows it with `ap.qdisc = "fq_codel"`): it looks at what waits in the flow, not at frames
//! already handed to a driver stage or firmware.

use super::*;
use lasthop_algo::tcp::AckSegment;

/// `ap.ack_filter`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum AckFilter {
    Off,
    Conservative,
    Aggressive,
}

impl AckFilter {
    pub(crate) fn named(name: &str) -> Self {
        match crate::spec::ACK_FILTERS.iter().position(|n| *n == name) {
            Some(1) => AckFilter::Conservative,
            Some(2) => AckFilter::Aggressive,
            _ => AckFilter::Off,
        }
    }
}

/// The ECN flags cake compares (ECE and CWR in the TCP header).
fn ecn_flags(a: &AckSegment) -> (bool, u8) {
    (a.ece, a.accecn.map_or(0, |f| f.ace & 0b011))
}

/// `cake_tcph_sack_compare(old, new)`: −1 if `old` SACKs anything `new` does not (or a block
/// below `new`'s cumulative ACK, a D-SACK), else 1 if `new` SACKs more bytes, else 0.
fn sack_compare(old: &AckSegment, new: &AckSegment) -> i8 {
    fn blocks(a: &AckSegment) -> &[(u64, u64)] {
        &a.sack[..(a.n_sack as usize).min(a.sack.len())]
    }
    let (a, b) = (blocks(old), blocks(new));
    let bytes = |v: &[(u64, u64)]| v.iter().map(|(s, e)| e - s).sum::<u64>();
    for &(s, e) in a {
        if s < new.cum_ack || !b.iter().any(|&(bs, be)| bs <= s && be >= e) {
            return -1;
        }
    }
    if bytes(b) > bytes(a) { 1 } else { 0 }
}

/// Which of `queue` (a flow's packets, oldest first, ending with `trigger`) to take out.
fn pick(queue: &mut dyn Iterator<Item = &PktRef>, trigger: PktRef, pkts: &[Pkt], aggressive: bool) -> Option<usize> {
    let t = pkts[trigger.id as usize];
    let TcpMeta::Ack { ack: new, rev } = t.tcp else { return None };
    let mut elig: Option<(usize, (bool, u8))> = None;
    let mut found = 0u32;
    let mut at_trigger = None;
    for (i, r) in queue.enumerate() {
        if r.id == trigger.id {
            at_trigger = Some(i);
            break;
        }
        let pk = &pkts[r.id as usize];
        let TcpMeta::Ack { ack: old, rev: old_rev } = pk.tcp else { continue };
        if pk.flow != t.flow || old_rev != rev {
            continue;
        }
        if elig.is_some_and(|(_, f)| f != ecn_flags(&old)) {
            elig = None;
            found -= 1;
        }
        if old.cum_ack > new.cum_ack {
            continue;
        }
        let c = sack_compare(&old, &new);
        if c < 0 || (old.cum_ack == new.cum_ack && c == 0) {
            continue;
        }
        if elig.is_none() {
            elig = Some((i, ecn_flags(&old)));
        }
        found += 1;
        if found > 1 {
            return elig.map(|e| e.0);
        }
    }
    // The new ACK must be the flow's last packet (a driver stage may have taken it already).
    let t_at = at_trigger?;
    match elig {
        Some((i, f)) if aggressive && i + 1 == t_at && f == ecn_flags(&new) => Some(i),
        _ => None,
    }
}

impl World {
    /// After `p` joined station `sta`'s queue of slot `k`: take out an ACK it makes redundant.
    pub(super) fn filter_acks(&mut self, k: usize, sta: u32, p: PktRef) {
        if !matches!(self.pkts[p.id as usize].tcp, TcpMeta::Ack { .. }) {
            return;
        }
        let aggressive = self.ack_filter == AckFilter::Aggressive;
        let World { txqs, pkts, .. } = self;
        let taken = txqs[k].take_from_flow_of(sta, &p, |q| pick(q, p, pkts, aggressive));
        if let Some(old) = taken {
            self.ack_filtered += 1;
            self.drop_pkt(old, DropWhy::Queue);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ack(cum: u64, sack: &[(u64, u64)]) -> AckSegment {
        let mut a = AckSegment { cum_ack: cum, ..AckSegment::default() };
        for (i, b) in sack.iter().enumerate() {
            a.sack[i] = *b;
        }
        a.n_sack = sack.len() as u8;
        a
    }

    /// A flow's queue of ACKs of one connection (cumulative ACKs given), as arena and refs.
    fn queue(cums: &[u64]) -> (Vec<Pkt>, Vec<PktRef>) {
        let pkts: Vec<Pkt> = cums
            .iter()
            .map(|&c| Pkt::fresh(0, Instant::ZERO, TcpMeta::Ack { ack: ack(c, &[]), rev: false }))
            .collect();
        let refs = (0..cums.len() as u32).map(|id| PktRef { id, len: 52, flow: 0, ecn: Ecn::NotEct }).collect();
        (pkts, refs)
    }

    fn choose(cums: &[u64], aggressive: bool) -> Option<usize> {
        let (pkts, refs) = queue(cums);
        pick(&mut refs.iter(), *refs.last().unwrap(), &pkts, aggressive)
    }

    #[test]
    fn conservative_needs_two_eligible_acks_aggressive_one() {
        // One older ACK: only the aggressive filter takes it (it is right ahead of the new one).
        assert_eq!(choose(&[10, 20], false), None);
        assert_eq!(choose(&[10, 20], true), Some(0));
        // Two: both take the oldest.
        assert_eq!(choose(&[10, 15, 20], false), Some(0));
        assert_eq!(choose(&[10, 15, 20], true), Some(0));
        // An older ACK acknowledging more than the new one (reordered) is kept.
        assert_eq!(choose(&[30, 20], true), None);
        // An equal cumulative ACK without more SACK information is not redundant.
        assert_eq!(choose(&[20, 20], true), None);
    }

    #[test]
    fn a_change_of_ecn_flags_keeps_the_ack() {
        let (mut pkts, refs) = queue(&[10, 15, 20]);
        // The first older ACK echoes ECE, the second does not: the first is no longer
        // eligible, and the second alone is not enough for the conservative filter.
        if let TcpMeta::Ack { ack, .. } = &mut pkts[0].tcp {
            ack.ece = true;
        }
        assert_eq!(pick(&mut refs.iter(), refs[2], &pkts, false), None);
        assert_eq!(pick(&mut refs.iter(), refs[2], &pkts, true), Some(1));
    }

    #[test]
    fn sack_comparison_follows_cake() {
        // No SACK on either side: equal.
        assert_eq!(sack_compare(&ack(10, &[]), &ack(20, &[])), 0);
        // The new ACK SACKs more, covering the old blocks.
        assert_eq!(sack_compare(&ack(10, &[(30, 40)]), &ack(10, &[(30, 50)])), 1);
        // The old ACK SACKs a range the new one does not: keep it.
        assert_eq!(sack_compare(&ack(10, &[(30, 40), (60, 70)]), &ack(10, &[(30, 40)])), -1);
        // A block below the new cumulative ACK (now acknowledged, or a D-SACK): keep it.
        assert_eq!(sack_compare(&ack(10, &[(30, 40)]), &ack(50, &[])), -1);
    }
}
