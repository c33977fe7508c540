//! TCP ACK filtering in the AP's flow queue (`ap.ack_filter`), as sch_cake does it
//! (`cake_ack_filter` in net/sched/sch_cake.c, Linux 4.19+; RFC 3449 §5.2.1): when a pure ACK
//! joins a flow, an older pure ACK of the same connection in that flow that the new one makes
//! redundant is taken out, so the aggregates the AP sends a station carry fewer ACKs of its
//! uploads.
//!
//! The rules, in the order `cake_ack_filter` applies them to the packets queued ahead of the
//! new ACK (oldest first), of the same connection and direction only:
//! * the new packet must have ACK set and SYN clear (it may carry data);
//! * a change of the ECN flags (ECE, CWR; under AccECN the two low bits of the ACE field they
//!   carry) from the first eligible ACK found makes that one ineligible again;
//! * only a pure ACK may go (`cake_tcph_may_drop`): no data, no flag but ACK (and ECE/CWR), no
//!   option but NOP/EOL, MD5, SACK of whole blocks and timestamps no later than the new one's;
//! * an ACK that acknowledges more than the new one (a later cumulative ACK, in serial-number
//!   arithmetic) is kept;
//! * its SACK blocks must all lie within the new one's, and none may lie below its own
//!   cumulative ACK (a D-SACK; `cake_tcph_sack_compare` < 0 keeps it); with an equal cumulative
//!   ACK the new one must SACK more;
//! * conservative mode takes out the first eligible ACK once a second one is found; aggressive
//!   mode also takes out a single eligible ACK when it sits right ahead of the new one with the
//!   same ECN flags.
//!
//! The filter reads an [`AckView`]: of the model's own ACKs (which carry no options but SACK),
//! or of a real packet's TCP header, parsed by [`AckView::parse`] when the emulator hands the
//! packet in ([`World::inject_tcp`]). The filter works only in mac80211's flow queue (the spec
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

/// What the filter reads of a TCP ACK: a model ACK ([`AckView::of_model`]) or a real packet's
/// TCP header ([`AckView::parse`], the emulator's packets). Sequence numbers are the header's 32
/// bits, compared in serial-number arithmetic as cake does (`before`/`after`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct AckView {
    /// The cumulative ACK (`ack_seq`).
    pub ack: u32,
    /// The SACK blocks, `n_sack` of them (a SACK option holds at most four).
    pub sack: [(u32, u32); 4],
    pub n_sack: u8,
    /// The ECN flags cake compares: ECE (bit 0) and CWR (bit 1) of the TCP header, which under
    /// AccECN are the two low bits of the ACE field; bit 2 is the model's classic ECE echo.
    pub ecn_flags: u8,
    /// The ACK flag set and SYN clear: it may trigger the filter (cake's test of the new packet).
    pub may_trigger: bool,
    /// A pure ACK whose flags and options cake may drop (`cake_tcph_may_drop` without its
    /// timestamp test, and no payload): only the ACK flag among URG/PSH/RST/SYN/FIN and the
    /// reserved bits, options only NOP/EOL, MD5, SACK (of whole blocks) and timestamps.
    pub pure: bool,
    /// The timestamps option (TSval, TSecr), if it has one.
    pub ts: Option<(u32, u32)>,
}

/// `before(a, b)` of Linux's TCP: `a` is earlier than `b` in sequence space.
fn before(a: u32, b: u32) -> bool {
    (a.wrapping_sub(b) as i32) < 0
}

fn after(a: u32, b: u32) -> bool {
    before(b, a)
}

impl AckView {
    /// A model ACK (no options but SACK; always pure).
    pub fn of_model(a: &AckSegment) -> AckView {
        let mut sack = [(0u32, 0u32); 4];
        let n = (a.n_sack as usize).min(a.sack.len());
        for (d, s) in sack.iter_mut().zip(&a.sack[..n]) {
            *d = (s.0 as u32, s.1 as u32);
        }
        let ace = a.accecn.map_or(0, |f| f.ace & 0b011);
        AckView { ack: a.cum_ack as u32, sack, n_sack: n as u8, ecn_flags: ace | (u8::from(a.ece) << 2), may_trigger: true, pure: true, ts: None }
    }

    /// The TCP header of an IP packet (IPv4, or IPv6 with TCP as its next header, as cake reads
    /// them: `cake_get_tcphdr`), or None if it is not one or is cut short. Options are read as
    /// `cake_get_tcpopt` / `cake_tcph_may_drop` read them (`tcp_parse_options` of Linux).
    pub fn parse(ip: &[u8]) -> Option<AckView> {
        let (l4, ip_payload) = match ip.first()? >> 4 {
            4 => {
                let ihl = ((ip[0] & 0x0f) as usize) * 4;
                if ip.len() < 20 || ihl < 20 || ip[9] != 6 {
                    return None;
                }
                let total = u16::from_be_bytes([ip[2], ip[3]]) as usize;
                (ihl, total.checked_sub(ihl)?)
            }
            6 => {
                if ip.len() < 40 || ip[6] != 6 {
                    return None;
                }
                (40, u16::from_be_bytes([ip[4], ip[5]]) as usize)
            }
            _ => return None,
        };
        let t = ip.get(l4..)?;
        if t.len() < 20 {
            return None;
        }
        let doff = ((t[12] >> 4) as usize) * 4;
        if doff < 20 || t.len() < doff {
            return None;
        }
        let ack = u32::from_be_bytes([t[8], t[9], t[10], t[11]]);
        // The flag word's low 12 bits: reserved (3), AE, CWR, ECE, URG, ACK, PSH, RST, SYN, FIN.
        let flags = u16::from_be_bytes([t[12], t[13]]) & 0x0fff;
        const ACK: u16 = 0x010;
        const SYN: u16 = 0x002;
        const ECE_CWR: u16 = 0x0c0;
        let mut v = AckView {
            ack,
            sack: [(0, 0); 4],
            n_sack: 0,
            ecn_flags: ((flags & ECE_CWR) >> 6) as u8,
            may_trigger: flags & (ACK | SYN) == ACK,
            // 0x0F3F0000 of the flag word: every flag but ECE/CWR (and the data offset).
            pure: flags & !ECE_CWR == ACK && ip_payload == doff,
            ts: None,
        };
        let mut opt = &t[20..doff];
        while let Some(&code) = opt.first() {
            match code {
                0 => break,
                1 => {
                    opt = &opt[1..];
                    continue;
                }
                _ => {}
            }
            let Some(&size) = opt.get(1) else { break };
            let size = size as usize;
            if size < 2 || size > opt.len() {
                break;
            }
            let body = &opt[2..size];
            match code {
                19 => {} // MD5 signature: does not change the state
                5 => {
                    // SACK: whole 8-octet blocks only.
                    if size % 8 != 2 {
                        v.pure = false;
                    }
                    for (i, b) in body.chunks_exact(8).take(4).enumerate() {
                        v.sack[i] = (u32::from_be_bytes([b[0], b[1], b[2], b[3]]), u32::from_be_bytes([b[4], b[5], b[6], b[7]]));
                        v.n_sack = i as u8 + 1;
                    }
                }
                8 if size == 10 => {
                    v.ts = Some((u32::from_be_bytes([body[0], body[1], body[2], body[3]]), u32::from_be_bytes([body[4], body[5], body[6], body[7]])));
                }
                // A timestamp option of another size, MSS, window scale, SACK-permitted, Fast
                // Open, experimental or unknown options: not to be dropped.
                _ => v.pure = false,
            }
            opt = &opt[size..];
        }
        Some(v)
    }

    fn blocks(&self) -> &[(u32, u32)] {
        &self.sack[..self.n_sack as usize]
    }
}

/// `cake_tcph_sack_compare(old, new)`: −1 if `old` SACKs anything `new` does not, or has a
/// block below its own cumulative ACK (a D-SACK); else 1 if `new` SACKs more bytes, else 0.
fn sack_compare(old: &AckView, new: &AckView) -> i8 {
    let (a, b) = (old.blocks(), new.blocks());
    match (a.is_empty(), b.is_empty()) {
        (false, true) => return -1,
        (true, false) => return 1,
        (true, true) => return 0,
        _ => {}
    }
    let bytes = |v: &[(u32, u32)]| v.iter().fold(0u32, |n, (s, e)| n.wrapping_add(e.wrapping_sub(*s)));
    for &(s, e) in a {
        if before(s, old.ack) || !b.iter().any(|&(bs, be)| !after(bs, s) && !before(be, e)) {
            return -1;
        }
    }
    if bytes(b) > bytes(a) { 1 } else { 0 }
}

/// A packet's ACK as the filter reads it, with its connection (the model's flow and direction:
/// one 5-tuple each way).
type Viewed = (u32, bool, AckView);

/// Which of `queue` (a flow's packets, oldest first, ending with `trigger`, whose view is
/// `t`) to take out. `view` gives the other packets' views (None for a packet that is not TCP).
fn pick(queue: &mut dyn Iterator<Item = &PktRef>, trigger: PktRef, t: Viewed, view: &dyn Fn(PktRef) -> Option<Viewed>, aggressive: bool) -> Option<usize> {
    let (conn, rev, new) = t;
    if !new.may_trigger {
        return None;
    }
    let (ts_new, tsecr_new) = new.ts.unwrap_or((0, 0));
    let mut elig: Option<(usize, u8)> = None;
    let mut found = 0u32;
    let mut at_trigger = None;
    for (i, r) in queue.enumerate() {
        if r.id == trigger.id {
            at_trigger = Some(i);
            break;
        }
        let Some((c, old_rev, old)) = view(*r) else { continue };
        if c != conn || old_rev != rev {
            continue;
        }
        if elig.is_some_and(|(_, f)| f != old.ecn_flags) {
            elig = None;
            found -= 1;
        }
        let ts_ok = old.ts.is_none_or(|(tv, te)| !after(tv, ts_new) && !after(te, tsecr_new));
        if !old.pure || !ts_ok || after(old.ack, new.ack) {
            continue;
        }
        let c = sack_compare(&old, &new);
        if c < 0 || (old.ack == new.ack && c == 0) {
            continue;
        }
        if elig.is_none() {
            elig = Some((i, old.ecn_flags));
        }
        found += 1;
        if found > 1 {
            return elig.map(|e| e.0);
        }
    }
    // The new ACK must be the flow's last packet (a driver stage may have taken it already).
    let t_at = at_trigger?;
    match elig {
        Some((i, f)) if aggressive && i + 1 == t_at && f == new.ecn_flags => Some(i),
        _ => None,
    }
}

/// What the filter reads of packet `p`: a model ACK, or the TCP header of a real packet the
/// host handed in with it ([`World::inject_tcp`]); with its connection (flow) and direction.
fn view_of(pkts: &[Pkt], ext: Option<&ext::ExtHost>, p: PktRef) -> Option<Viewed> {
    let pk = &pkts[p.id as usize];
    match pk.tcp {
        TcpMeta::Ack { ack, rev } => Some((pk.flow, rev, AckView::of_model(&ack))),
        TcpMeta::External { tag } => ext?.tcp_view(tag).map(|v| (pk.flow, false, v)),
        _ => None,
    }
}

impl World {
    /// After `p` joined station `sta`'s queue of slot `k`: take out an ACK it makes redundant.
    pub(super) fn filter_acks(&mut self, k: usize, sta: u32, p: PktRef) {
        let World { txqs, pkts, ext, .. } = self;
        let ext = ext.as_deref();
        let Some(t) = view_of(pkts, ext, p) else { return };
        let aggressive = self.ack_filter == AckFilter::Aggressive;
        let view = |r: PktRef| view_of(pkts, ext, r);
        let taken = txqs[k].take_from_flow_of(sta, &p, |q| pick(q, p, t, &view, aggressive));
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

    fn pick_model(refs: &[PktRef], trigger: PktRef, pkts: &[Pkt], aggressive: bool) -> Option<usize> {
        let view = |r| view_of(pkts, None, r);
        pick(&mut refs.iter(), trigger, view(trigger)?, &view, aggressive)
    }

    fn choose(cums: &[u64], aggressive: bool) -> Option<usize> {
        let (pkts, refs) = queue(cums);
        pick_model(&refs, *refs.last().unwrap(), &pkts, aggressive)
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
        assert_eq!(pick_model(&refs, refs[2], &pkts, false), None);
        assert_eq!(pick_model(&refs, refs[2], &pkts, true), Some(1));
    }

    #[test]
    fn sack_comparison_follows_cake() {
        let v = |cum, sack: &[(u64, u64)]| AckView::of_model(&ack(cum, sack));
        // No SACK on either side: equal.
        assert_eq!(sack_compare(&v(10, &[]), &v(20, &[])), 0);
        // The new ACK SACKs more, covering the old blocks.
        assert_eq!(sack_compare(&v(10, &[(30, 40)]), &v(10, &[(30, 50)])), 1);
        // The old ACK SACKs a range the new one does not: keep it.
        assert_eq!(sack_compare(&v(10, &[(30, 40), (60, 70)]), &v(10, &[(30, 40)])), -1);
        // The old ACK SACKs, the new one does not (its cumulative ACK passed the block): keep it.
        assert_eq!(sack_compare(&v(10, &[(30, 40)]), &v(50, &[])), -1);
        // A D-SACK in the old ACK (a block below its own cumulative ACK): keep it.
        assert_eq!(sack_compare(&v(50, &[(30, 40)]), &v(50, &[(20, 60)])), -1);
        // Sequence numbers wrap: a block just past 2^32 still lies within the new one.
        let (lo, hi) = (u32::MAX as u64 - 100, u32::MAX as u64 + 500);
        assert_eq!(sack_compare(&v(lo - 1000, &[(lo, hi)]), &v(lo - 1000, &[(lo - 10, hi + 10)])), 1);
    }

    /// An IP packet carrying a TCP segment: `flags` the header's low 12 flag bits, `opts` the
    /// option bytes (padded here to whole words), `payload` octets of data.
    fn segment(v6: bool, flags: u16, ack: u32, opts: &[u8], payload: usize) -> Vec<u8> {
        let mut o = opts.to_vec();
        while !o.len().is_multiple_of(4) {
            o.push(0);
        }
        let tcp_len = 20 + o.len();
        let mut t = vec![0u8; tcp_len + payload];
        t[0..2].copy_from_slice(&40000u16.to_be_bytes());
        t[2..4].copy_from_slice(&5201u16.to_be_bytes());
        t[8..12].copy_from_slice(&ack.to_be_bytes());
        t[12..14].copy_from_slice(&((((tcp_len / 4) as u16) << 12) | flags).to_be_bytes());
        t[20..tcp_len].copy_from_slice(&o);
        let mut ip = if v6 {
            let mut h = vec![0u8; 40];
            h[0] = 0x60;
            h[4..6].copy_from_slice(&(t.len() as u16).to_be_bytes());
            h[6] = 6;
            h
        } else {
            let mut h = vec![0u8; 20];
            h[0] = 0x45;
            h[2..4].copy_from_slice(&((20 + t.len()) as u16).to_be_bytes());
            h[9] = 6;
            h
        };
        ip.extend_from_slice(&t);
        ip
    }

    const ACK: u16 = 0x010;
    fn ts(v: u32, e: u32) -> Vec<u8> {
        let mut o = vec![1, 1, 8, 10];
        o.extend_from_slice(&v.to_be_bytes());
        o.extend_from_slice(&e.to_be_bytes());
        o
    }

    #[test]
    fn a_real_headers_ack_is_read_as_cake_reads_it() {
        // A pure ACK with timestamps (Linux's usual ACK), IPv4 and IPv6.
        for v6 in [false, true] {
            let a = AckView::parse(&segment(v6, ACK, 1000, &ts(7, 9), 0)).unwrap();
            assert_eq!((a.ack, a.pure, a.may_trigger, a.ts, a.n_sack, a.ecn_flags), (1000, true, true, Some((7, 9)), 0, 0));
        }
        // SACK blocks (NOP, NOP, kind 5, length 18: two blocks).
        let mut o = vec![1, 1, 5, 18];
        for x in [3000u32, 4000, 5000, 6000] {
            o.extend_from_slice(&x.to_be_bytes());
        }
        let a = AckView::parse(&segment(false, ACK, 1000, &o, 0)).unwrap();
        assert_eq!((a.n_sack, a.sack[0], a.sack[1], a.pure), (2, (3000, 4000), (5000, 6000), true));
        // A SACK option of a partial block: not to be dropped.
        let a = AckView::parse(&segment(false, ACK, 1000, &[5, 12, 0, 0, 0, 1, 0, 0, 0, 2], 0)).unwrap();
        assert!(!a.pure);
        // Data, PSH, SYN, FIN, an MSS option: may trigger or not, never dropped.
        assert!(!AckView::parse(&segment(false, ACK, 1, &[], 100)).unwrap().pure);
        assert!(AckView::parse(&segment(false, ACK, 1, &[], 100)).unwrap().may_trigger);
        assert!(!AckView::parse(&segment(false, ACK | 0x008, 1, &[], 0)).unwrap().pure);
        let syn_ack = AckView::parse(&segment(false, ACK | 0x002, 1, &[], 0)).unwrap();
        assert!(!syn_ack.pure && !syn_ack.may_trigger);
        assert!(!AckView::parse(&segment(false, ACK | 0x001, 1, &[], 0)).unwrap().pure);
        assert!(!AckView::parse(&segment(false, ACK, 1, &[2, 4, 5, 180], 0)).unwrap().pure);
        // ECE and CWR are read, not held against it.
        let a = AckView::parse(&segment(false, ACK | 0x040, 1, &[], 0)).unwrap();
        assert_eq!((a.ecn_flags, a.pure), (1, true));
        assert_eq!(AckView::parse(&segment(false, ACK | 0x080, 1, &[], 0)).unwrap().ecn_flags, 2);
        // Not TCP, or cut short: nothing.
        let mut udp = segment(false, ACK, 1, &[], 0);
        udp[9] = 17;
        assert_eq!(AckView::parse(&udp), None);
        let whole = segment(false, ACK, 1, &ts(1, 2), 0);
        for n in [0, 1, 19, 20, 39] {
            assert_eq!(AckView::parse(&whole[..n]), None, "{n} octets");
        }
        // An option running past the header ends the options, as in Linux.
        let a = AckView::parse(&segment(false, ACK, 1, &[8, 40, 0, 0], 0)).unwrap();
        assert_eq!((a.pure, a.ts), (true, None));
    }

    /// Real ACKs through `pick`: cake's timestamp rule keeps an older ACK whose timestamps are
    /// ahead of the new one's, and an older ACK carrying data or a SYN is never taken.
    #[test]
    fn real_acks_follow_cakes_rules() {
        let choose = |views: &[AckView], aggressive: bool| {
            let refs: Vec<PktRef> = (0..views.len() as u32).map(|id| PktRef { id, len: 52, flow: 0, ecn: Ecn::NotEct }).collect();
            let last = *refs.last().unwrap();
            pick(&mut refs.iter(), last, (0, false, views[last.id as usize]), &|r| Some((0, false, views[r.id as usize])), aggressive)
        };
        let acks = |spec: &[(u32, u32, usize)]| -> Vec<AckView> {
            spec.iter().map(|&(ack, tsv, data)| AckView::parse(&segment(false, ACK, ack, &ts(tsv, 5), data)).unwrap()).collect()
        };
        assert_eq!(choose(&acks(&[(10, 1, 0), (15, 2, 0), (20, 3, 0)]), false), Some(0));
        // The first older ACK's TSval is ahead of the new one's: it is kept; one is left.
        assert_eq!(choose(&acks(&[(10, 9, 0), (15, 2, 0), (20, 3, 0)]), false), None);
        assert_eq!(choose(&acks(&[(10, 9, 0), (15, 2, 0), (20, 3, 0)]), true), Some(1));
        // Data in the older segments: nothing to take.
        assert_eq!(choose(&acks(&[(10, 1, 100), (15, 2, 100), (20, 3, 0)]), true), None);
        // A new ACK past 2^32: older ones just below it are behind it.
        assert_eq!(choose(&acks(&[(u32::MAX - 20, 1, 0), (u32::MAX - 10, 2, 0), (5, 3, 0)]), false), Some(0));
        // A new segment with a SYN does not trigger the filter.
        let mut v = acks(&[(10, 1, 0), (15, 2, 0), (20, 3, 0)]);
        v[2].may_trigger = false;
        assert_eq!(choose(&v, true), None);
    }
}
