//! The 802.11 frames of each record: data MPDUs (QoS Data or Data, with the packet of
//! `packet.rs`), Block Acks, Acks, RTS/CTS and beacons, each with a correct FCS.

use super::packet::{ip_tcp_header, ip_udp_header, set_ip_ecn, tcp_fields};
use super::radiotap::channel;
use super::{crc32, node_mac, station_ip, station_mac, AP_MAC, BROADCAST_MAC, SERVER_IP, SERVER_MAC, SSID, UDP_BASE_PORT};
use crate::capture::{Capture, MpduRec, Node, TcpRec};
use lasthop_wifi::mac::frame;
use lasthop_wifi::phy::Band;

fn push_fcs(f: &mut Vec<u8>) {
    let c = crc32(f);
    f.extend_from_slice(&c.to_le_bytes());
}

/// A QoS Data (or Data) MPDU with FCS, of length `frame::mpdu_len(m.ip_len, qos)`.
pub fn data_frame(cap: &Capture, tx: Node, rx: Node, m: &MpduRec) -> Vec<u8> {
    let qos = cap.qos;
    let len = frame::mpdu_len(m.ip_len, qos) as usize;
    let mut f = Vec::with_capacity(len);
    let (uplink, sta) = match (tx, rx) {
        (Node::Station(i), _) => (true, i),
        (_, Node::Station(i)) => (false, i),
        _ => (false, 0),
    };
    push_data_header(&mut f, uplink, sta, m.retry, cap.data_nav_us, m.seq, qos, flow_tid(cap, m.flow));
    let st = cap.flow_station.get(m.flow as usize).copied().unwrap_or(sta);
    let port = (UDP_BASE_PORT + m.flow).min(65_535) as u16;
    let (src, dst) = if uplink { (station_ip(st), SERVER_IP) } else { (SERVER_IP, station_ip(st)) };
    let tcp = tcp_fields(m, uplink).and_then(|h| ip_tcp_header(m.ip_len, m.seq as u16, src, dst, &h));
    debug_assert!(m.tcp == TcpRec::None || tcp.is_some(), "TCP packet too short for its headers");
    match tcp {
        Some(h) => f.extend_from_slice(&h),
        None => {
            let start = f.len();
            f.extend_from_slice(&ip_udp_header(m.ip_len, m.seq as u16, src, dst, port, port));
            set_ip_ecn(&mut f[start..], m.ecn);
        }
    }
    f.resize(len - 4, 0);
    push_fcs(&mut f);
    debug_assert_eq!(f.len(), len);
    f
}

/// The TID of flow `flow`'s frames.
fn flow_tid(cap: &Capture, flow: u32) -> u8 {
    cap.flow_tid.get(flow as usize).copied().unwrap_or(0)
}

/// Compressed Block Ack from `tx` to `rx` for the MPDUs of `data`.
pub fn block_ack_frame(cap: &Capture, tx: Node, rx: Node, data: &[MpduRec]) -> Vec<u8> {
    let octets = cap.ba_bitmap_octets as usize;
    let ssn = data.iter().map(|m| m.seq).min().unwrap_or(0);
    let mut bitmap = vec![0u8; octets];
    for m in data.iter().filter(|m| m.ok) {
        let off = (m.seq - ssn) as usize;
        if off < octets * 8 {
            bitmap[off / 8] |= 1 << (off % 8);
        }
    }
    let mut f = Vec::with_capacity(24 + octets);
    f.extend_from_slice(&[0x94, 0x00, 0, 0]);
    f.extend_from_slice(&node_mac(rx));
    f.extend_from_slice(&node_mac(tx));
    // BA Control: compressed bitmap (B2), TID_INFO in B12–B15 (§9.3.1.8.1).
    let tid = data.first().map_or(0, |m| flow_tid(cap, m.flow));
    f.extend_from_slice(&(0x0004u16 | (tid as u16) << 12).to_le_bytes());
    // Fragment Number subfield B1–B2 = 2 signals a 256-bit bitmap (802.11ax §9.3.1.8.2).
    let frag: u16 = if octets == 32 { 0x4 } else { 0 };
    f.extend_from_slice(&((((ssn % 4096) as u16) << 4) | frag).to_le_bytes());
    f.extend_from_slice(&bitmap);
    push_fcs(&mut f);
    f
}

/// Ack to `rx`.
pub fn ack_frame(rx: Node) -> Vec<u8> {
    control_frame(0xd4, rx)
}

/// A CTS frame to `rx` (§9.3.1.3): the Ack's layout with its own subtype.
pub fn cts_frame(rx: Node) -> Vec<u8> {
    control_frame(0xc4, rx)
}

/// A control frame of Frame Control `fc`, Duration 0 and one address, `rx` (Ack, CTS).
fn control_frame(fc: u8, rx: Node) -> Vec<u8> {
    let mut f = vec![fc, 0x00, 0, 0];
    f.extend_from_slice(&node_mac(rx));
    push_fcs(&mut f);
    f
}

/// An RTS frame from `tx` to `rx` (§9.3.1.2), Duration 0.
pub fn rts_frame(tx: Node, rx: Node) -> Vec<u8> {
    let mut f = vec![0xb4, 0x00, 0, 0];
    f.extend_from_slice(&node_mac(rx));
    f.extend_from_slice(&node_mac(tx));
    push_fcs(&mut f);
    f
}

/// A beacon of [`frame::BEACON`] octets.
pub fn beacon_frame(cap: &Capture, start_ns: u64, seq: u64) -> Vec<u8> {
    let total = frame::BEACON as usize;
    let mut f = Vec::with_capacity(total);
    f.extend_from_slice(&[0x80, 0x00, 0, 0]);
    f.extend_from_slice(&BROADCAST_MAC);
    f.extend_from_slice(&AP_MAC);
    f.extend_from_slice(&AP_MAC);
    f.extend_from_slice(&(((seq % 4096) as u16) << 4).to_le_bytes());
    f.extend_from_slice(&(start_ns / 1000).to_le_bytes()); // timestamp (TSF, µs)
    let tu = (cap.beacon_interval_ns / 1_024_000).clamp(1, 65_535) as u16;
    f.extend_from_slice(&tu.to_le_bytes());
    let short_slot = if cap.band == Band::Ghz2_4 { 0x0400 } else { 0 };
    f.extend_from_slice(&(0x0001u16 | short_slot).to_le_bytes()); // ESS
    f.extend_from_slice(&[0, SSID.len() as u8]);
    f.extend_from_slice(SSID);
    f.extend_from_slice(&[1, 8, 0x8c, 0x12, 0x98, 0x24, 0xb0, 0x48, 0x60, 0x6c]);
    let (freq, _) = channel(cap.band);
    let chan = match cap.band {
        Band::Ghz2_4 => (freq - 2407) / 5,
        Band::Ghz5 => (freq - 5000) / 5,
        Band::Ghz6 => (freq - 5950) / 5,
    };
    f.extend_from_slice(&[3, 1, chan as u8]);
    // Vendor-specific elements (locally administered OUI) up to the simulated size.
    while total - 4 - f.len() >= 6 {
        let body = (total - 4 - f.len() - 2).min(255);
        f.extend_from_slice(&[221, body as u8, 0x02, 0x00, 0x00, 0x00]);
        f.resize(f.len() + body - 4, 0);
    }
    f.resize(total - 4, 0);
    push_fcs(&mut f);
    f
}

/// The MAC header of a data frame between the AP and station `sta` (`uplink`: To DS, station →
/// AP; else From DS), the server as the third address, then the LLC/SNAP header for IPv4.
#[allow(clippy::too_many_arguments)]
fn push_data_header(f: &mut Vec<u8>, uplink: bool, sta: u32, retry: bool, nav_us: u16, seq: u32, qos: bool, tid: u8) {
    f.push(if qos { 0x88 } else { 0x08 });
    f.push(if uplink { 0x01 } else { 0x02 } | if retry { 0x08 } else { 0 });
    f.extend_from_slice(&nav_us.to_le_bytes());
    let (a1, a2) = if uplink { (AP_MAC, station_mac(sta)) } else { (station_mac(sta), AP_MAC) };
    f.extend_from_slice(&a1);
    f.extend_from_slice(&a2);
    f.extend_from_slice(&SERVER_MAC);
    f.extend_from_slice(&(((seq % 4096) as u16) << 4).to_le_bytes());
    if qos {
        f.extend_from_slice(&[tid & 0x0f, 0]); // QoS Control: TID, normal ack
    }
    f.extend_from_slice(&[0xaa, 0xaa, 0x03, 0, 0, 0, 0x08, 0x00]);
}

/// A data frame carrying a real IP packet (the emulator's capture of what crossed the cell):
/// QoS data header between the AP and station `sta` (`uplink`: station → AP), LLC/SNAP, the
/// packet's own bytes, FCS; `tid` as the flow's access category gives it
/// (`World::flow_tid`).
pub fn real_data_frame(uplink: bool, sta: u32, seq: u32, qos: bool, tid: u8, ip: &[u8]) -> Vec<u8> {
    let mut f = Vec::with_capacity(ip.len() + 40);
    // Duration 0: not modelled per frame here.
    push_data_header(&mut f, uplink, sta, false, 0, seq, qos, tid);
    f.extend_from_slice(ip);
    push_fcs(&mut f);
    f
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pcap::packet::{tcp_isn, TCP_ACK, TCP_REQUEST_PORT, TCP_SERVER_PORT, TCP_WSCALE};
    use crate::pcap::test_support::{cap, tcp_checksum_residue};
    use crate::pcap::ip_checksum;
    use lasthop_wifi::phy::Standard;

    /// A 1000-byte data segment of flow 1, MPDU 5, sent at 42 ms.
    fn segment_1000() -> MpduRec {
        MpduRec {
            seq: 5,
            flow: 1,
            ip_len: lasthop_algo::tcp::data_ip_len(1000),
            retry: false,
            ok: true,
            sent_ms: 42,
            tcp: TcpRec::Data { seq: 0, len: 1000, rev: false, retransmit: false, cwr: false },
            ecn: 0,
        }
    }

    #[test]
    fn frame_sizes_match_the_model() {
        let c = cap(Standard::Vht, true, 8);
        let m = MpduRec { seq: 4097, flow: 1, ip_len: 1500, retry: true, ok: true, sent_ms: 0, tcp: TcpRec::None, ecn: 0 };
        let f = data_frame(&c, Node::Station(1), Node::Ap, &m);
        assert_eq!(f.len() as u32, frame::mpdu_len(1500, true));
        assert_eq!(&f[..2], &[0x88, 0x09]);
        assert_eq!(u16::from_le_bytes([f[22], f[23]]), 1 << 4);
        assert_eq!(crc32(&f[..f.len() - 4]).to_le_bytes(), f[f.len() - 4..]);
        let c0 = cap(Standard::Ofdm, false, 8);
        let f = data_frame(&c0, Node::Ap, Node::Station(0), &MpduRec { ip_len: 20, ..m });
        assert_eq!(f.len() as u32, frame::mpdu_len(20, false));
        assert_eq!(&f[..2], &[0x08, 0x0a]);
        let ms = [
            MpduRec { seq: 10, ok: true, ..m },
            MpduRec { seq: 11, ok: false, ..m },
            MpduRec { seq: 12, ok: true, ..m },
        ];
        let ba = block_ack_frame(&c, Node::Ap, Node::Station(0), &ms);
        assert_eq!(ba.len() as u32, frame::BLOCK_ACK_64);
        assert_eq!(ba[20], 0b101);
        let c256 = cap(Standard::He, true, 32);
        assert_eq!(block_ack_frame(&c256, Node::Ap, Node::Station(0), &ms).len() as u32, frame::BLOCK_ACK_256);
        assert_eq!(ack_frame(Node::Ap).len() as u32, frame::ACK);
        let b = beacon_frame(&c, 0, 1);
        assert_eq!(b.len() as u32, frame::BEACON);
        assert_eq!(crc32(&b[..b.len() - 4]).to_le_bytes(), b[b.len() - 4..]);
    }

    #[test]
    fn tcp_mpdus() {
        use lasthop_algo::tcp::ack_ip_len;
        let c = cap(Standard::Vht, true, 8);
        let isn_d = tcp_isn(1, false, true).wrapping_add(1);
        let isn_a = tcp_isn(1, false, false).wrapping_add(1);
        assert_ne!(isn_d, isn_a);
        assert_ne!(tcp_isn(1, true, true), isn_d.wrapping_sub(1));
        // Downlink data segment of the main connection: server:80 → station:40001.
        let m = MpduRec { tcp: TcpRec::Data { seq: 3000, len: 1000, rev: false, retransmit: false, cwr: false }, ..segment_1000() };
        let f = data_frame(&c, Node::Ap, Node::Station(1), &m);
        assert_eq!(f.len() as u32, frame::mpdu_len(m.ip_len, true));
        let ip = &f[34..f.len() - 4];
        assert_eq!(ip.len() as u32, m.ip_len);
        assert_eq!(tcp_checksum_residue(ip), 0);
        assert_eq!(&ip[12..16], &SERVER_IP);
        assert_eq!(u16::from_be_bytes([ip[20], ip[21]]), TCP_SERVER_PORT);
        assert_eq!(u16::from_be_bytes([ip[22], ip[23]]), 40_001);
        assert_eq!(u32::from_be_bytes(ip[24..28].try_into().unwrap()), isn_d.wrapping_add(3000));
        assert_eq!(u32::from_be_bytes(ip[28..32].try_into().unwrap()), isn_a);
        assert_eq!(ip[33], TCP_ACK);
        // Its ACK, uplink, with two SACK blocks and a 1 MiB window.
        let a = MpduRec {
            ip_len: ack_ip_len(2),
            sent_ms: 43,
            tcp: TcpRec::Ack { ack: 3000, sack: [(5000, 6000), (7000, 8000), (0, 0)], n_sack: 2, rwnd: 1 << 20, rev: false, ece: false, accecn: None },
            ..m
        };
        let f = data_frame(&c, Node::Station(1), Node::Ap, &a);
        assert_eq!(f.len() as u32, frame::mpdu_len(a.ip_len, true));
        let ip = &f[34..f.len() - 4];
        assert_eq!(tcp_checksum_residue(ip), 0);
        assert_eq!(&ip[16..20], &SERVER_IP);
        assert_eq!(u16::from_be_bytes([ip[20], ip[21]]), 40_001);
        assert_eq!(u16::from_be_bytes([ip[22], ip[23]]), TCP_SERVER_PORT);
        assert_eq!(u32::from_be_bytes(ip[24..28].try_into().unwrap()), isn_a);
        assert_eq!(u32::from_be_bytes(ip[28..32].try_into().unwrap()), isn_d.wrapping_add(3000));
        assert_eq!(u16::from_be_bytes([ip[34], ip[35]]) as u32, (1u32 << 20) >> TCP_WSCALE);
        assert_eq!(u32::from_be_bytes(ip[56..60].try_into().unwrap()), isn_d.wrapping_add(5000));
        assert_eq!(u32::from_be_bytes(ip[68..72].try_into().unwrap()), isn_d.wrapping_add(8000));
        // The request connection uses server port 81.
        let r = MpduRec { tcp: TcpRec::Data { seq: 0, len: 1000, rev: true, retransmit: false, cwr: false }, ..m };
        let f = data_frame(&c, Node::Station(1), Node::Ap, &r);
        let ip = &f[34..f.len() - 4];
        assert_eq!(u16::from_be_bytes([ip[22], ip[23]]), TCP_REQUEST_PORT);
        assert_eq!(u32::from_be_bytes(ip[24..28].try_into().unwrap()), tcp_isn(1, true, true).wrapping_add(1));
    }

    /// ECN in the written packets: the IP ECN field (checksum still valid), CWR on a data
    /// segment, ECE on an ACK, and with AccECN the ACE field in AE/CWR/ECE and the AccECN option
    /// filling exactly the 8 octets the simulator counts in the ACK's length.
    #[test]
    fn ecn_fields() {
        use lasthop_algo::tcp::{ACCECN_OPTION_LEN, IP_TCP_HEADERS};
        let c = cap(Standard::Vht, true, 8);
        let d = MpduRec { tcp: TcpRec::Data { seq: 0, len: 1000, rev: false, retransmit: false, cwr: true }, ecn: 3, ..segment_1000() };
        let f = data_frame(&c, Node::Ap, Node::Station(1), &d);
        let ip = &f[34..f.len() - 4];
        assert_eq!(ip[1] & 3, 3, "CE");
        assert_eq!(ip_checksum(&ip[..20]), 0, "the IPv4 checksum holds");
        assert_eq!(tcp_checksum_residue(ip), 0);
        assert_eq!(ip[33] & 0xc0, 0x80, "CWR, no ECE");
        for ace in 0..8u8 {
            let a = MpduRec {
                ip_len: IP_TCP_HEADERS + ACCECN_OPTION_LEN,
                tcp: TcpRec::Ack { ack: 0, sack: [(0, 0); 3], n_sack: 0, rwnd: 1 << 20, rev: false, ece: false, accecn: Some((ace, 0x12_3456)) },
                ecn: 0,
                ..d
            };
            let f = data_frame(&c, Node::Station(1), Node::Ap, &a);
            let ip = &f[34..f.len() - 4];
            assert_eq!(ip.len() as u32, a.ip_len);
            let (ae, cwr, ece) = (ip[32] & 1, ip[33] >> 7 & 1, ip[33] >> 6 & 1);
            assert_eq!(ae << 2 | cwr << 1 | ece, ace);
            assert_eq!((ip[32] >> 4) as u32 * 4, a.ip_len - 20, "the option is in the header");
            assert_eq!(&ip[52..60], &[172, 8, 0, 0, 0, 0x12, 0x34, 0x56]);
            assert_eq!(tcp_checksum_residue(ip), 0);
        }
    }
}
