//! The ECN field of a real IP packet, as the emulator reads it when a packet enters the model
//! and writes it when the model marked the packet: the two low bits of the IPv4 TOS octet
//! (RFC 3168 §5; RFC 791's header checksum then updated incrementally, RFC 1624 eqn. 3) or of
//! the IPv6 Traffic Class (RFC 8200 §7, no header checksum).

use lasthop_algo::ecn::Ecn;

/// The ECN field of `pkt` (Not-ECT for anything that is not a well-formed IPv4/IPv6 header).
pub fn read(pkt: &[u8]) -> Ecn {
    match pkt.first().map(|b| b >> 4) {
        Some(4) if pkt.len() >= 20 => Ecn::from_bits(pkt[1]),
        Some(6) if pkt.len() >= 40 => Ecn::from_bits(pkt[1] >> 4),
        _ => Ecn::NotEct,
    }
}

/// Write CE into `pkt` if it is ECN-capable (as a router does, RFC 3168 §5): true if the
/// packet now carries CE. A Not-ECT packet is left alone.
pub fn set_ce(pkt: &mut [u8]) -> bool {
    let mut e = read(pkt);
    if !e.set_ce() {
        return false;
    }
    match pkt[0] >> 4 {
        4 => {
            let old = u16::from_be_bytes([pkt[0], pkt[1]]);
            pkt[1] |= 0b11;
            let new = u16::from_be_bytes([pkt[0], pkt[1]]);
            // RFC 1624 eqn. 3: HC' = ~(~HC + ~m + m').
            let hc = u16::from_be_bytes([pkt[10], pkt[11]]);
            let mut sum = (!hc as u32) + (!old as u32) + new as u32;
            while sum > 0xffff {
                sum = (sum & 0xffff) + (sum >> 16);
            }
            let hc = !(sum as u16);
            pkt[10..12].copy_from_slice(&hc.to_be_bytes());
        }
        _ => pkt[1] |= 0b11 << 4,
    }
    true
}

#[cfg(test)]
mod tests {
    use super::*;

    /// RFC 791 header checksum, computed from scratch.
    fn checksum(h: &[u8]) -> u16 {
        let mut sum: u32 = 0;
        for (i, w) in h.chunks(2).enumerate() {
            if i == 5 {
                continue;
            }
            sum += u16::from_be_bytes([w[0], w[1]]) as u32;
        }
        while sum > 0xffff {
            sum = (sum & 0xffff) + (sum >> 16);
        }
        !(sum as u16)
    }

    fn v4(tos: u8, seed: u16) -> Vec<u8> {
        let mut h = vec![0x45, tos, 0, 60, (seed >> 8) as u8, seed as u8, 0x40, 0, 64, 6, 0, 0, 10, 0, 0, 1, 10, 0, 1, 2];
        let c = checksum(&h);
        h[10..12].copy_from_slice(&c.to_be_bytes());
        h.extend_from_slice(&[0u8; 40]);
        h
    }

    #[test]
    fn ipv4_ce_keeps_the_checksum_valid() {
        for dscp in [0u8, 0x28, 0xb8, 0xfc] {
            for ecn in 0..4u8 {
                for seed in [0u16, 1, 0x7fff, 0xfffe, 0xffff] {
                    let mut p = v4(dscp | ecn, seed);
                    assert_eq!(read(&p), Ecn::from_bits(ecn));
                    let marked = set_ce(&mut p);
                    assert_eq!(marked, ecn != 0);
                    assert_eq!(read(&p), if ecn == 0 { Ecn::NotEct } else { Ecn::Ce });
                    assert_eq!(p[1] & !3, dscp, "the DSCP is kept");
                    assert_eq!(u16::from_be_bytes([p[10], p[11]]), checksum(&p[..20]), "tos {dscp:#x}|{ecn} id {seed}");
                }
            }
        }
    }

    #[test]
    fn ipv6_traffic_class() {
        for ecn in 0..4u8 {
            let tc = 0xb8 | ecn;
            let mut p = vec![0u8; 60];
            p[0] = 0x60 | (tc >> 4);
            p[1] = (tc << 4) | 0x5;
            assert_eq!(read(&p), Ecn::from_bits(ecn));
            assert_eq!(set_ce(&mut p), ecn != 0);
            let tc2 = (p[0] << 4) | (p[1] >> 4);
            assert_eq!(tc2 & !3, 0xb8);
            assert_eq!(p[1] & 0x0f, 0x5, "the flow label is kept");
            assert_eq!(read(&p), if ecn == 0 { Ecn::NotEct } else { Ecn::Ce });
        }
    }

    #[test]
    fn not_ip_is_not_ect() {
        assert_eq!(read(&[]), Ecn::NotEct);
        assert_eq!(read(&[0x45, 3]), Ecn::NotEct);
        let mut junk = vec![0x13u8; 50];
        assert!(!set_ce(&mut junk));
    }
}
