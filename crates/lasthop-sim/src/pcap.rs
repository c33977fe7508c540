//! Writes a [`Capture`] as a classic pcap file: nanosecond timestamps (magic 0xa1b23c4d),
//! link type 127 (IEEE 802.11 + radiotap), one record per MPDU, Block Ack, Ack or beacon.
//!
//! Radiotap (radiotap.org): TSFT, Flags (FCS at end; Bad FCS for an MPDU or control frame that
//! was not received correctly, which includes every frame of a collision), Rate (non-HT
//! frames), Channel, then MCS (HT), A-MPDU status, VHT or HE. Each field is aligned to its
//! natural size from the start of the radiotap header.
//!
//! 802.11 frames: QoS Data (Data for `ofdm`) with ToDS (uplink) or FromDS (downlink), the Retry bit
//! on retransmissions, the TID of the flow's access category (BE 0, BK 1, VI 5, VO 6; also in the
//! Block Ack that answers them), LLC/SNAP, an IPv4 + UDP (UDP flows) or TCP (TCP flows) header and
//! zero payload up to the packet's IP length, and a correct FCS. Addresses: AP (BSSID)
//! 02:00:00:00:00:00, station i 02:00:00:00:00:(i+1), the server behind the AP 02:00:00:ff:00:01
//! (SA downlink, DA uplink); IP: server 10.0.0.1, station i 10.0.1.(i+1); UDP ports 40000 + flow
//! index on both ends. Compressed Block Acks carry a bitmap of the MPDUs of the answered A-MPDU
//! that arrived (starting at its lowest sequence number); beacons carry SSID "lasthop", the OFDM
//! rates, the DS parameter set and a vendor element padding them to the simulated 300 octets.
//!
//! TCP segments (IP protocol 6), so captures of TCP runs work with Wireshark's TCP analysis,
//! tcptrace or Stevens graphs:
//! - Ports: the IP server's end is 80 ([`TCP_SERVER_PORT`]) for the flow's main connection and
//!   81 ([`TCP_REQUEST_PORT`]) for the request connection of a request/response flow (the
//!   simulator runs requests on a second, opposite-direction connection; it gets its own port
//!   so the two are separate TCP streams); the station's end is 40000 + flow index. Data of
//!   the main connection goes in the flow's direction, its ACKs the other way; the request
//!   connection the reverse.
//! - Sequence numbers: each end of each connection has a fixed initial sequence number
//!   ([`tcp_isn`], from the flow index). The SYN is not captured; it takes the ISN, so the data
//!   byte at the simulator's offset `s` has sequence number ISN + 1 + s (mod 2^32), and the
//!   pure ACKs of the receiving end carry its ISN + 1. Every segment has the ACK flag (no PSH,
//!   FIN, SYN); data segments acknowledge the receiver's ISN + 1, ACKs the sender's ISN + 1 +
//!   the cumulative ACK.
//! - Options: NOP, NOP, timestamp (TSval = when the endpoint sent the packet, in ms, so MAC
//!   retries repeat it and TCP retransmissions get a new one; TSecr = 0: the simulator's
//!   endpoints keep no timestamp state to echo), and on ACKs with SACK blocks NOP, NOP, SACK
//!   (kind 5, the blocks with the same ISN offset). 20 + 12 octets of TCP header, + 4 + 8·n
//!   with n SACK blocks: exactly the simulator's `IP_TCP_HEADERS` / `ack_ip_len(n)`, so frame
//!   lengths are the ones the simulation used.
//! - Window: the receive window shifted right by [`TCP_WSCALE`] = 7 (window scaling as Linux
//!   typically negotiates; the SYNs that would announce it are not captured, so tools show
//!   the raw field unless told the factor). Data senders advertise [`TCP_SENDER_RWND`].
//! - A correct TCP checksum over the IPv4 pseudo-header; payload: zeros of the segment length.
//! - ECN: the IP header's ECN field as the packet went on the air (CE where a queue marked
//!   it); CWR on data segments and ECE on ACKs (RFC 3168 §6.1); with Accurate ECN the ACE field
//!   in AE, CWR, ECE and the AccECN option (kind 172, EE0B and ECEB, 8 octets, RFC 9768 §3.2)
//!   after the SACK option, as the simulator counts it in the ACK's length.

mod frames;
mod packet;
mod radiotap;

pub use frames::*;
pub use packet::*;
pub use radiotap::*;

use crate::capture::{Capture, Node, PpduKind, PpduRec};

/// pcap magic for nanosecond timestamps.
pub const MAGIC_NS: u32 = 0xa1b2_3c4d;
/// LINKTYPE_IEEE802_11_RADIOTAP.
pub const LINKTYPE_RADIOTAP: u32 = 127;
const SNAPLEN: u32 = 65_535;

pub const AP_MAC: [u8; 6] = [2, 0, 0, 0, 0, 0];
pub const SERVER_MAC: [u8; 6] = [2, 0, 0, 0xff, 0, 1];
pub const BROADCAST_MAC: [u8; 6] = [0xff; 6];
pub const SERVER_IP: [u8; 4] = [10, 0, 0, 1];
pub const SSID: &[u8] = b"lasthop";
const UDP_BASE_PORT: u32 = 40_000;

/// MAC address of station `i`: 02:00:00:00:hi:lo with hi:lo = i + 1.
pub fn station_mac(i: u32) -> [u8; 6] {
    let n = i + 1;
    [2, 0, 0, (n >> 16) as u8 & 0x7f, (n >> 8) as u8, n as u8]
}

/// IPv4 address of station `i`: 10.0.x.y with x.y = 256 + i + 1 (10.0.1.(i+1) for i < 255).
pub fn station_ip(i: u32) -> [u8; 4] {
    let n = 256 + i + 1;
    [10, (n >> 16) as u8, (n >> 8) as u8, n as u8]
}

fn node_mac(n: Node) -> [u8; 6] {
    match n {
        Node::Ap => AP_MAC,
        Node::Station(i) => station_mac(i),
        Node::Broadcast => BROADCAST_MAC,
    }
}

// ------------------------------------------------------------------------------ checksums

const fn crc32_table() -> [u32; 256] {
    let mut t = [0u32; 256];
    let mut i = 0;
    while i < 256 {
        let mut c = i as u32;
        let mut k = 0;
        while k < 8 {
            c = if c & 1 != 0 { 0xedb8_8320 ^ (c >> 1) } else { c >> 1 };
            k += 1;
        }
        t[i] = c;
        i += 1;
    }
    t
}

static CRC32_TABLE: [u32; 256] = crc32_table();

/// CRC-32 (IEEE 802.3, the 802.11 FCS).
pub fn crc32(data: &[u8]) -> u32 {
    let mut c = 0xffff_ffffu32;
    for &b in data {
        c = CRC32_TABLE[((c ^ b as u32) & 0xff) as usize] ^ (c >> 8);
    }
    !c
}

/// Internet checksum (RFC 1071) of `data`.
pub fn ip_checksum(data: &[u8]) -> u16 {
    let mut sum = 0u32;
    for ch in data.chunks(2) {
        let w = if ch.len() == 2 { u16::from_be_bytes([ch[0], ch[1]]) } else { u16::from_be_bytes([ch[0], 0]) };
        sum += w as u32;
    }
    while sum > 0xffff {
        sum = (sum & 0xffff) + (sum >> 16);
    }
    !(sum as u16)
}



/// One pcap record: `t_ns` since the epoch of the file, radiotap header, frame.
pub fn push_record(out: &mut Vec<u8>, t_ns: u64, rt: &[u8], frame: &[u8]) {
    let len = (rt.len() + frame.len()) as u32;
    out.extend_from_slice(&((t_ns / 1_000_000_000) as u32).to_le_bytes());
    out.extend_from_slice(&((t_ns % 1_000_000_000) as u32).to_le_bytes());
    out.extend_from_slice(&len.to_le_bytes());
    out.extend_from_slice(&len.to_le_bytes());
    out.extend_from_slice(rt);
    out.extend_from_slice(frame);
}

/// The pcap global header.
pub fn file_header() -> Vec<u8> {
    let mut h = Vec::with_capacity(24);
    h.extend_from_slice(&MAGIC_NS.to_le_bytes());
    h.extend_from_slice(&2u16.to_le_bytes());
    h.extend_from_slice(&4u16.to_le_bytes());
    h.extend_from_slice(&0i32.to_le_bytes());
    h.extend_from_slice(&0u32.to_le_bytes());
    h.extend_from_slice(&SNAPLEN.to_le_bytes());
    h.extend_from_slice(&LINKTYPE_RADIOTAP.to_le_bytes());
    h
}

/// The whole pcap file of a capture.
pub fn write(cap: &Capture) -> Vec<u8> {
    let mut out = file_header();
    for p in &cap.ppdus {
        write_ppdu(&mut out, cap, p);
    }
    out
}

fn write_ppdu(out: &mut Vec<u8>, cap: &Capture, p: &PpduRec) {
    let t = p.start_ns;
    match p.kind {
        PpduKind::Data => {
            let mpdus = cap.mpdus_of(p);
            let n = mpdus.len();
            for (k, m) in mpdus.iter().enumerate() {
                let ampdu = p.ampdu_ref.map(|r| (r, k + 1 == n));
                let rt = radiotap(t, cap.band, p.phy, !m.ok, ampdu);
                push_record(out, t, &rt, &data_frame(cap, p.tx, p.rx, m));
            }
        }
        PpduKind::BlockAck { data } => {
            let d = &cap.ppdus[data as usize];
            let rt = radiotap(t, cap.band, p.phy, !p.received, None);
            push_record(out, t, &rt, &block_ack_frame(cap, p.tx, p.rx, cap.mpdus_of(d)));
        }
        PpduKind::Ack { .. } => {
            let rt = radiotap(t, cap.band, p.phy, !p.received, None);
            push_record(out, t, &rt, &ack_frame(p.rx));
        }
        PpduKind::Beacon { seq } => {
            let rt = radiotap(t, cap.band, p.phy, !p.received, None);
            push_record(out, t, &rt, &beacon_frame(cap, t, seq));
        }
        PpduKind::Rts => {
            let rt = radiotap(t, cap.band, p.phy, !p.received, None);
            push_record(out, t, &rt, &rts_frame(p.tx, p.rx));
        }
        PpduKind::Cts { .. } => {
            let rt = radiotap(t, cap.band, p.phy, !p.received, None);
            push_record(out, t, &rt, &cts_frame(p.rx));
        }
    }
}


#[cfg(test)]
mod test_support {
    use super::*;
    use crate::capture::{CaptureRequest, DEFAULT_LIMIT};
    use lasthop_wifi::phy::{Band, Standard};

    pub(super) fn cap(standard: Standard, qos: bool, octets: u32) -> Capture {
        Capture::new(
            CaptureRequest { node: Node::Ap, limit: DEFAULT_LIMIT },
            Band::Ghz5,
            standard,
            qos,
            octets,
            44,
            102_400_000,
            vec![0, 1],
        )
    }

    /// One's-complement sum over the IPv4 pseudo-header and the whole TCP segment of an IP
    /// packet: 0 when the TCP checksum is right.
    pub(super) fn tcp_checksum_residue(ip: &[u8]) -> u16 {
        let mut v = Vec::new();
        v.extend_from_slice(&ip[12..20]);
        v.extend_from_slice(&[0, 6]);
        v.extend_from_slice(&((ip.len() - 20) as u16).to_be_bytes());
        v.extend_from_slice(&ip[20..]);
        ip_checksum(&v)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn crc32_known_vector() {
        assert_eq!(crc32(b"123456789"), 0xCBF4_3926);
        assert_eq!(crc32(b""), 0);
    }

    #[test]
    fn addresses() {
        assert_eq!(station_mac(0), [2, 0, 0, 0, 0, 1]);
        assert_eq!(station_mac(300), [2, 0, 0, 0, 1, 45]);
        assert_eq!(station_ip(0), [10, 0, 1, 1]);
        assert_eq!(station_ip(254), [10, 0, 1, 255]);
    }
}
