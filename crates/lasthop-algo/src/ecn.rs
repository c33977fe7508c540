//! Explicit Congestion Notification: the IP header's ECN field (RFC 3168 §5) and the Accurate
//! ECN feedback counters of TCP (RFC 9768).
//!
//! * [`Ecn`]: the four codepoints. A network element may only turn ECT(0) or ECT(1) into CE
//!   ([`Ecn::set_ce`], as Linux's `INET_ECN_set_ce`): Not-ECT is never marked (the packet is
//!   dropped instead) and CE is never cleared.
//! * [`L4S_ID`]: RFC 9331 §4: ECT(1) and CE identify a packet for the low-latency queue.
//! * [`AccEcnReceiver`] / [`AccEcnSender`]: RFC 9768 §3.2. The data receiver counts CE-marked
//!   packets (`r.cep`, initialised to 5, §3.2.1) and CE-marked bytes (`r.ceb`); every ACK carries
//!   the three least significant bits of `r.cep` in the ACE field and, with the AccECN option,
//!   the 24 least significant bits of `r.ceb` (ECEB). The data sender recovers the increase of
//!   each counter from the field's wrap (§3.2.2.5 and Appendix A.2's "safety" rule: when more
//!   bytes were newly acknowledged than eight packets can carry, the ACE field may have wrapped
//!   and the byte counter decides).

/// The ECN field of an IP packet (RFC 3168 §5), with its two-bit value.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
#[repr(u8)]
pub enum Ecn {
    /// 0b00: the transport does not support ECN.
    #[default]
    NotEct = 0,
    /// 0b01: ECN-capable, L4S (RFC 9331).
    Ect1 = 1,
    /// 0b10: ECN-capable, classic (RFC 3168).
    Ect0 = 2,
    /// 0b11: congestion experienced.
    Ce = 3,
}

impl Ecn {
    /// The codepoint of the two ECN bits of an IPv4 TOS / IPv6 traffic class octet.
    pub const fn from_bits(b: u8) -> Ecn {
        match b & 3 {
            0 => Ecn::NotEct,
            1 => Ecn::Ect1,
            2 => Ecn::Ect0,
            _ => Ecn::Ce,
        }
    }
    pub const fn bits(self) -> u8 {
        self as u8
    }
    /// ECN-capable transport: ECT(0), ECT(1) or already CE.
    pub const fn is_capable(self) -> bool {
        !matches!(self, Ecn::NotEct)
    }
    /// RFC 9331 §4: the L4S identifier (ECT(1) or CE) classifies a packet into the low-latency
    /// queue of a DualQ AQM (RFC 9332 §2.5.1.1).
    pub const fn is_l4s(self) -> bool {
        matches!(self, Ecn::Ect1 | Ecn::Ce)
    }
    /// Mark congestion experienced if the transport is ECN-capable; returns whether the packet
    /// now carries CE (true also for a packet already marked), as Linux's `INET_ECN_set_ce`. A
    /// caller that gets false drops the packet instead.
    pub fn set_ce(&mut self) -> bool {
        if self.is_capable() {
            *self = Ecn::Ce;
            true
        } else {
            false
        }
    }
}

/// A transport's use of ECN: none; classic (RFC 3168: ECT(0), one ECE per round trip, a
/// loss-like reduction); or L4S (RFC 9330/9331: ECT(1), Accurate ECN feedback of every mark
/// (RFC 9768), a reduction by the fraction of marks, as DCTCP and Prague).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
pub enum EcnMode {
    #[default]
    Off,
    Classic,
    L4s,
}

impl EcnMode {
    /// The codepoint the sender puts on its data packets.
    pub const fn codepoint(self) -> Ecn {
        match self {
            EcnMode::Off => Ecn::NotEct,
            EcnMode::Classic => Ecn::Ect0,
            EcnMode::L4s => Ecn::Ect1,
        }
    }
    /// Names as specs write them, in one place.
    pub const NAMES: [(&'static str, EcnMode); 3] = [("off", EcnMode::Off), ("classic", EcnMode::Classic), ("l4s", EcnMode::L4s)];
    pub fn from_name(s: &str) -> Option<EcnMode> {
        Self::NAMES.iter().find(|(n, _)| *n == s).map(|&(_, m)| m)
    }
}

/// RFC 9768 §3.2.1: the initial value of the CE packet counter (so that a zeroed ACE field is
/// distinguishable from a counter that never moved).
pub const ACE_INIT: u32 = 5;
/// Bits of the ACE field (§3.2.2) and of the option's byte counters (§3.2.3).
pub const ACE_BITS: u32 = 3;
pub const ECEB_BITS: u32 = 24;

/// The data receiver's AccECN counters (RFC 9768 §3.2.1): packets and payload bytes that
/// arrived CE-marked. Counters wrap; only their low bits go on the wire.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct AccEcnReceiver {
    /// r.cep: CE-marked packets (starting at [`ACE_INIT`]).
    pub cep: u32,
    /// r.ceb: payload bytes of CE-marked packets.
    pub ceb: u32,
    /// The ECN field of the last data packet, for change-triggered ACKs (§3.2.2.5.1).
    pub last: Ecn,
}

impl Default for AccEcnReceiver {
    fn default() -> Self {
        AccEcnReceiver { cep: ACE_INIT, ceb: 0, last: Ecn::NotEct }
    }
}

impl AccEcnReceiver {
    /// Count one arriving data packet of `payload` bytes. Returns true when the packet's CE
    /// state differs from the previous packet's: RFC 9768 §3.2.2.5.1 asks for an immediate ACK
    /// then ("change-triggered ACK"), as DCTCP's receiver does (RFC 8257 §3.2).
    pub fn on_data(&mut self, ecn: Ecn, payload: u32) -> bool {
        let ce = ecn == Ecn::Ce;
        if ce {
            self.cep = self.cep.wrapping_add(1);
            self.ceb = self.ceb.wrapping_add(payload);
        }
        let changed = ce != (self.last == Ecn::Ce);
        self.last = ecn;
        changed
    }
    /// The feedback an ACK carries now: the ACE field and the option's ECEB field.
    pub fn feedback(&self) -> AccEcnFeedback {
        AccEcnFeedback {
            ace: (self.cep & ((1 << ACE_BITS) - 1)) as u8,
            eceb: self.ceb & ((1 << ECEB_BITS) - 1),
        }
    }
}

/// What one ACK carries of the AccECN counters (RFC 9768 §3.2.2, §3.2.3).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct AccEcnFeedback {
    /// The ACE field: r.cep mod 8.
    pub ace: u8,
    /// The AccECN option's ECEB field: r.ceb mod 2^24.
    pub eceb: u32,
}

/// The data sender's copies of the receiver's counters (RFC 9768 §3.2.2.5, "s.cep", "s.ceb").
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct AccEcnSender {
    pub cep: u32,
    pub ceb: u32,
}

impl Default for AccEcnSender {
    fn default() -> Self {
        AccEcnSender { cep: ACE_INIT, ceb: 0 }
    }
}

impl AccEcnSender {
    /// Process one ACK's feedback; `newly_acked` bytes it acknowledged, `mss` the sender's
    /// segment size. Returns the newly CE-marked (packets, bytes).
    ///
    /// The byte counter is authoritative while the option is present (§3.2.3.3: the data sender
    /// uses the byte counters when it has them). ECEB wraps at 2^24, more than any window this
    /// model keeps in flight, so its difference modulo 2^24 is exact. The packet count from ACE
    /// is the difference modulo 8, raised by multiples of 8 when the ACK covers enough packets
    /// to have hidden a wrap (Appendix A.2).
    pub fn on_ack(&mut self, fb: AccEcnFeedback, newly_acked: u64, mss: u32) -> (u32, u64) {
        let b = (1u32 << ECEB_BITS) - 1;
        let d_ceb = fb.eceb.wrapping_sub(self.ceb) & b;
        self.ceb = self.ceb.wrapping_add(d_ceb);
        let m = 1u32 << ACE_BITS;
        let mut d_cep = (fb.ace as u32).wrapping_sub(self.cep) & (m - 1);
        // Appendix A.2: an ACK covering at least 2^3 packets may hide wraps of ACE; the byte
        // counter tells how many (the multiple of 8 that brings the packets nearest to its
        // count in full segments).
        let mss = mss.max(1) as u64;
        if newly_acked.div_ceil(mss) >= m as u64 {
            let by_bytes = (d_ceb as u64).div_ceil(mss) as u32;
            if by_bytes > d_cep {
                d_cep += (by_bytes - d_cep + m / 2) / m * m;
            }
        }
        self.cep = self.cep.wrapping_add(d_cep);
        (d_cep, d_ceb as u64)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use lasthop_core::Rng;

    #[test]
    fn set_ce_never_marks_not_ect_and_never_clears_ce() {
        for b in 0..4u8 {
            let mut e = Ecn::from_bits(b);
            assert_eq!(e.bits(), b);
            let was = e;
            let marked = e.set_ce();
            assert_eq!(marked, was != Ecn::NotEct, "{was:?}");
            assert_eq!(e, if marked { Ecn::Ce } else { Ecn::NotEct });
        }
        assert!(Ecn::Ect1.is_l4s() && Ecn::Ce.is_l4s() && !Ecn::Ect0.is_l4s() && !Ecn::NotEct.is_l4s());
    }

    /// The sender's copies follow the receiver's counters through any number of wraps of the
    /// 3-bit ACE field and the 24-bit ECEB field, whatever the ACK spacing (every ACK covers at
    /// most the bytes it acknowledges, as on the wire).
    #[test]
    fn counters_survive_wraps() {
        let mut rng = Rng::from_seed(0xACE);
        for case in 0..200 {
            let mss = 1448;
            let mut r = AccEcnReceiver::default();
            let mut s = AccEcnSender::default();
            let (mut true_pkts, mut true_bytes) = (0u64, 0u64);
            let (mut got_pkts, mut got_bytes) = (0u64, 0u64);
            let p_mark = (case % 10) as f64 / 10.0;
            for _ack in 0..1500 {
                // An ACK every 1..40 segments (stretch ACKs, losses of ACKs).
                let n = 1 + rng.gen_range_inclusive(39);
                let mut acked = 0u64;
                for _ in 0..n {
                    let ce = rng.bernoulli(p_mark);
                    r.on_data(if ce { Ecn::Ce } else { Ecn::Ect1 }, mss);
                    acked += mss as u64;
                    if ce {
                        true_pkts += 1;
                        true_bytes += mss as u64;
                    }
                }
                let (dp, db) = s.on_ack(r.feedback(), acked, mss);
                got_pkts += dp as u64;
                got_bytes += db;
            }
            assert_eq!(got_bytes, true_bytes, "case {case}");
            assert_eq!(got_pkts, true_pkts, "case {case}");
            assert!(true_bytes > 1 << ECEB_BITS || p_mark < 0.4, "the test wraps ECEB: {true_bytes}");
        }
    }

    #[test]
    fn change_triggered_acks() {
        let mut r = AccEcnReceiver::default();
        assert!(!r.on_data(Ecn::Ect1, 100));
        assert!(r.on_data(Ecn::Ce, 100));
        assert!(!r.on_data(Ecn::Ce, 100));
        assert!(r.on_data(Ecn::Ect1, 100));
        assert_eq!(r.cep, ACE_INIT + 2);
        assert_eq!(r.feedback().ace as u32, (ACE_INIT + 2) % 8);
    }
}
