//! The IP packet inside each data frame: IPv4 with UDP (UDP flows) or TCP (TCP flows) headers,
//! correct checksums, zeros for the payload (the module above says which fields and why).

use super::{ip_checksum, UDP_BASE_PORT};
use crate::capture::{MpduRec, TcpRec};

/// The IPv4 + UDP headers of a packet of `ip_len` octets (zero payload follows). Packets too
/// short for a UDP header (20..=27 octets) carry IP protocol 253 (experimentation).
pub fn ip_udp_header(ip_len: u32, id: u16, src: [u8; 4], dst: [u8; 4], sport: u16, dport: u16) -> Vec<u8> {
    let udp = ip_len >= 28;
    let mut h = ip_header(ip_len, id, if udp { 17 } else { 253 }, src, dst);
    if udp {
        h.extend_from_slice(&sport.to_be_bytes());
        h.extend_from_slice(&dport.to_be_bytes());
        h.extend_from_slice(&((ip_len - 20) as u16).to_be_bytes());
        h.extend_from_slice(&[0, 0]); // no checksum (IPv4)
    }
    h
}


/// TCP port of the IP server's end of a TCP flow's main connection.
pub const TCP_SERVER_PORT: u16 = 80;
/// TCP port of the IP server's end of a request/response flow's request connection (a second
/// connection, so a port of its own; the station's end is 40000 + flow index for both).
pub const TCP_REQUEST_PORT: u16 = 81;
/// Window scale shift assumed for the window field (as Linux typically negotiates; the SYNs
/// that would carry it are not in the capture).
pub const TCP_WSCALE: u32 = 7;
/// Receive window advertised by the data sender of a connection (it receives no data): the
/// receiver's default buffer, 6 MiB.
pub const TCP_SENDER_RWND: u64 = 6 << 20;
pub(super) const TCP_ACK: u8 = 0x10;
const TCP_ECE: u8 = 0x40;
const TCP_CWR: u8 = 0x80;
/// The AccECN option, AccECN0 order (RFC 9768 §3.2.3): kind 172, EE0B then ECEB.
const ACCECN0: u8 = 172;

/// Initial sequence number of one end of a TCP connection of `flow` (`rev`: the request
/// connection): deterministic, spread over the 32-bit space. The SYN (not captured) takes the
/// ISN, so byte offset 0 of the data is ISN + 1, and the pure ACKs of the receiving end carry
/// sequence number ISN + 1 of that end.
pub fn tcp_isn(flow: u32, rev: bool, data_sender: bool) -> u32 {
    let k = flow as u64 * 4 + 2 * rev as u64 + data_sender as u64 + 1;
    ((k.wrapping_mul(0x9e37_79b9_7f4a_7c15) >> 32) as u32).max(1)
}

/// A TCP segment header to write (the payload is zeros).
#[derive(Clone, Copy, Debug, Default)]
pub struct TcpHdr {
    pub sport: u16,
    pub dport: u16,
    pub seq: u32,
    pub ack: u32,
    pub flags: u8,
    /// Window field (already shifted right by [`TCP_WSCALE`]).
    pub window: u16,
    pub tsval: u32,
    pub tsecr: u32,
    /// SACK blocks [left edge, right edge), wire sequence numbers: `sack[..n_sack]`.
    pub sack: [(u32, u32); 3],
    pub n_sack: u8,
    /// The AE flag (RFC 9768 §3.2.2: the ACE field's top bit, in the header's reserved bits).
    pub ae: bool,
    /// The AccECN option's ECEB field, when the segment carries the option.
    pub eceb: Option<u32>,
    /// The IP header's ECN field.
    pub ip_ecn: u8,
}

impl TcpHdr {
    pub fn sack_blocks(&self) -> &[(u32, u32)] {
        &self.sack[..self.n_sack as usize]
    }
}

/// TCP options: NOP, NOP, timestamp (kind 8, 10 octets) — 12 octets — then, with SACK blocks,
/// NOP, NOP, SACK (kind 5, 2 + 8·n octets): 4 + 8·n more. Always a multiple of 4.
pub fn tcp_options(tsval: u32, tsecr: u32, sack: &[(u32, u32)]) -> Vec<u8> {
    let mut o = Vec::with_capacity(40);
    o.extend_from_slice(&[1, 1, 8, 10]);
    o.extend_from_slice(&tsval.to_be_bytes());
    o.extend_from_slice(&tsecr.to_be_bytes());
    if !sack.is_empty() {
        o.extend_from_slice(&[1, 1, 5, (2 + 8 * sack.len()) as u8]);
        for &(l, r) in sack {
            o.extend_from_slice(&l.to_be_bytes());
            o.extend_from_slice(&r.to_be_bytes());
        }
    }
    debug_assert_eq!(o.len() % 4, 0);
    o
}

/// The options of `h`: [`tcp_options`], then the AccECN option when it carries one (kind 172,
/// length 8: EE0B = 0, ECEB; RFC 9768 §3.2.3).
fn tcp_options_of(h: &TcpHdr) -> Vec<u8> {
    let mut o = tcp_options(h.tsval, h.tsecr, h.sack_blocks());
    if let Some(eceb) = h.eceb {
        o.extend_from_slice(&[ACCECN0, 8, 0, 0, 0]);
        o.extend_from_slice(&eceb.to_be_bytes()[1..]);
    }
    o
}

/// The TCP header (with options and a correct checksum over the IPv4 pseudo-header, the header
/// and `payload_len` zero octets of payload).
pub fn tcp_header(src: [u8; 4], dst: [u8; 4], h: &TcpHdr, payload_len: u32) -> Vec<u8> {
    let opts = tcp_options_of(h);
    let hlen = 20 + opts.len();
    let mut t = Vec::with_capacity(12 + hlen);
    // Pseudo-header first (stripped below): source, destination, zero, protocol, TCP length.
    t.extend_from_slice(&src);
    t.extend_from_slice(&dst);
    t.extend_from_slice(&[0, 6]);
    t.extend_from_slice(&((hlen as u32 + payload_len) as u16).to_be_bytes());
    t.extend_from_slice(&h.sport.to_be_bytes());
    t.extend_from_slice(&h.dport.to_be_bytes());
    t.extend_from_slice(&h.seq.to_be_bytes());
    t.extend_from_slice(&h.ack.to_be_bytes());
    t.push((((hlen / 4) as u8) << 4) | h.ae as u8);
    t.push(h.flags);
    t.extend_from_slice(&h.window.to_be_bytes());
    t.extend_from_slice(&[0, 0, 0, 0]); // checksum, urgent pointer
    t.extend_from_slice(&opts);
    // The zero payload adds nothing to the one's-complement sum (the header is 4-aligned).
    let c = ip_checksum(&t);
    t[12 + 16..12 + 18].copy_from_slice(&c.to_be_bytes());
    t.drain(..12);
    t
}

/// The IPv4 header (protocol 6) and TCP header of a segment whose IP packet is `ip_len`
/// octets (payload: zeros up to `ip_len`). None if `ip_len` is too short for the headers.
pub fn ip_tcp_header(ip_len: u32, id: u16, src: [u8; 4], dst: [u8; 4], h: &TcpHdr) -> Option<Vec<u8>> {
    let thlen = 20 + tcp_options_of(h).len() as u32;
    let payload = ip_len.checked_sub(20 + thlen)?;
    let mut v = ip_header(ip_len, id, 6, src, dst);
    set_ip_ecn(&mut v, h.ip_ecn);
    v.extend_from_slice(&tcp_header(src, dst, h, payload));
    Some(v)
}

/// Write the ECN field `ecn` into the IPv4 header at the start of `pkt` (the TOS octet's low
/// bits, RFC 3168 §5) and recompute its checksum.
pub(super) fn set_ip_ecn(pkt: &mut [u8], ecn: u8) {
    if ecn & 3 == 0 {
        return;
    }
    pkt[1] = (pkt[1] & !3) | (ecn & 3);
    pkt[10..12].copy_from_slice(&[0, 0]);
    let c = ip_checksum(&pkt[..20]);
    pkt[10..12].copy_from_slice(&c.to_be_bytes());
}

/// The IPv4 header (DF, TTL 64, valid checksum) of a packet of `ip_len` octets.
fn ip_header(ip_len: u32, id: u16, proto: u8, src: [u8; 4], dst: [u8; 4]) -> Vec<u8> {
    let mut h = Vec::with_capacity(60);
    h.extend_from_slice(&[0x45, 0]);
    h.extend_from_slice(&(ip_len as u16).to_be_bytes());
    h.extend_from_slice(&id.to_be_bytes());
    h.extend_from_slice(&0x4000u16.to_be_bytes()); // DF
    h.push(64);
    h.push(proto);
    h.extend_from_slice(&[0, 0]);
    h.extend_from_slice(&src);
    h.extend_from_slice(&dst);
    let c = ip_checksum(&h);
    h[10..12].copy_from_slice(&c.to_be_bytes());
    h
}

/// The TCP header fields of the segment an MPDU carries (None for UDP). `uplink`: the frame
/// goes station → AP (so the segment station → server).
pub fn tcp_fields(m: &MpduRec, uplink: bool) -> Option<TcpHdr> {
    let station_port = (UDP_BASE_PORT + m.flow).min(65_535) as u16;
    let rev = match m.tcp {
        TcpRec::None => return None,
        TcpRec::Data { rev, .. } | TcpRec::Ack { rev, .. } => rev,
    };
    let server_port = if rev { TCP_REQUEST_PORT } else { TCP_SERVER_PORT };
    let (sport, dport) = if uplink { (station_port, server_port) } else { (server_port, station_port) };
    let snd = tcp_isn(m.flow, rev, true).wrapping_add(1);
    let rcv = tcp_isn(m.flow, rev, false).wrapping_add(1);
    let mut h = TcpHdr { sport, dport, flags: TCP_ACK, tsval: m.sent_ms, tsecr: 0, ip_ecn: m.ecn, ..TcpHdr::default() };
    let window = match m.tcp {
        TcpRec::Data { seq, cwr, .. } => {
            (h.seq, h.ack) = (snd.wrapping_add(seq), rcv);
            if cwr {
                h.flags |= TCP_CWR;
            }
            TCP_SENDER_RWND >> TCP_WSCALE
        }
        TcpRec::Ack { ack, rwnd, ece, accecn, .. } => {
            (h.seq, h.ack) = (rcv, snd.wrapping_add(ack));
            for (b, &(l, r)) in h.sack.iter_mut().zip(m.tcp.sack_blocks()) {
                *b = (snd.wrapping_add(l), snd.wrapping_add(r));
                h.n_sack += 1;
            }
            if ece {
                h.flags |= TCP_ECE;
            }
            if let Some((ace, eceb)) = accecn {
                // RFC 9768 §3.2.2: ACE = AE, CWR, ECE (most significant first).
                h.ae = ace & 4 != 0;
                h.flags |= if ace & 2 != 0 { TCP_CWR } else { 0 } | if ace & 1 != 0 { TCP_ECE } else { 0 };
                h.eceb = Some(eceb);
            }
            rwnd as u64 >> TCP_WSCALE
        }
        TcpRec::None => return None,
    };
    h.window = window.min(65_535) as u16;
    Some(h)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pcap::test_support::tcp_checksum_residue;
    use crate::pcap::{station_ip, SERVER_IP};

    #[test]
    fn ip_checksum_known_header() {
        // RFC 1071 style example: a header whose checksum field is zero.
        let h = [
            0x45, 0x00, 0x00, 0x73, 0x00, 0x00, 0x40, 0x00, 0x40, 0x11, 0x00, 0x00, 0xc0, 0xa8, 0x00, 0x01, 0xc0, 0xa8,
            0x00, 0xc7,
        ];
        assert_eq!(ip_checksum(&h), 0xb861);
        let hdr = ip_udp_header(1500, 7, SERVER_IP, station_ip(0), 40_000, 40_000);
        assert_eq!(hdr.len(), 28);
        assert_eq!(ip_checksum(&hdr[..20]), 0, "a header with its checksum sums to 0xffff");
        assert_eq!(&hdr[16..20], &[10, 0, 1, 1]);
        assert_eq!(u16::from_be_bytes([hdr[24], hdr[25]]), 1480);
        assert_eq!(ip_udp_header(24, 0, SERVER_IP, station_ip(0), 1, 1).len(), 20);
    }

    #[test]
    fn tcp_headers_match_the_model_and_checksum() {
        use lasthop_algo::tcp::{ack_ip_len, data_ip_len, IP_TCP_HEADERS, MAX_SACK_BLOCKS};
        assert_eq!(tcp_options(1, 0, &[]).len() as u32 + 40, IP_TCP_HEADERS);
        // Data segment of 1448 bytes: 52 octets of headers, zero payload.
        let h = TcpHdr { sport: 80, dport: 40_001, seq: 0xffff_fff0, ack: 77, flags: TCP_ACK, window: 49_152, tsval: 1234, ..TcpHdr::default() };
        let ip_len = data_ip_len(1448);
        let mut pkt = ip_tcp_header(ip_len, 3, SERVER_IP, station_ip(0), &h).unwrap();
        assert_eq!(pkt.len() as u32, IP_TCP_HEADERS);
        assert_eq!(pkt[9], 6, "IP protocol TCP");
        assert_eq!(ip_checksum(&pkt[..20]), 0);
        assert_eq!(pkt[20 + 12] >> 4, 8, "data offset 32 octets");
        assert_eq!(&pkt[40..44], &[1, 1, 8, 10]);
        assert_eq!(u32::from_be_bytes(pkt[44..48].try_into().unwrap()), 1234);
        pkt.resize(ip_len as usize, 0);
        assert_eq!(tcp_checksum_residue(&pkt), 0, "TCP checksum over pseudo-header + segment");
        // A corrupted octet is detected.
        pkt[30] ^= 1;
        assert_ne!(tcp_checksum_residue(&pkt), 0);
        // ACKs with 0..3 SACK blocks: exactly ack_ip_len(n) octets, no payload.
        for n in 0..=MAX_SACK_BLOCKS {
            let mut a = TcpHdr { seq: 5, ack: 9, flags: TCP_ACK, window: 1, tsval: 7, n_sack: n as u8, ..TcpHdr::default() };
            for (k, b) in a.sack.iter_mut().enumerate() {
                *b = (1000 * k as u32 + 100, 1000 * k as u32 + 200);
            }
            assert_eq!(20 + 20 + tcp_options(7, 0, a.sack_blocks()).len() as u32, ack_ip_len(n as u8));
            let pkt = ip_tcp_header(ack_ip_len(n as u8), 1, station_ip(0), SERVER_IP, &a).unwrap();
            assert_eq!(pkt.len() as u32, ack_ip_len(n as u8));
            assert_eq!((pkt[32] >> 4) as u32 * 4, ack_ip_len(n as u8) - 20, "data offset includes the options");
            assert_eq!(tcp_checksum_residue(&pkt), 0, "{n} SACK blocks");
            if n > 0 {
                assert_eq!(&pkt[52..56], &[1, 1, 5, 2 + 8 * n as u8]);
                assert_eq!(u32::from_be_bytes(pkt[56..60].try_into().unwrap()), 100);
            }
        }
        assert!(ip_tcp_header(51, 0, SERVER_IP, station_ip(0), &h).is_none());
    }
}
