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

use crate::capture::{Capture, MpduRec, Node, PhyRec, PpduKind, PpduRec, TcpRec};
use lasthop_wifi::mac::frame;
use lasthop_wifi::phy::{Band, Standard, TxVector};

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

// ------------------------------------------------------------------------------ radiotap

pub const RT_TSFT: u32 = 0;
pub const RT_FLAGS: u32 = 1;
pub const RT_RATE: u32 = 2;
pub const RT_CHANNEL: u32 = 3;
pub const RT_MCS: u32 = 19;
pub const RT_AMPDU: u32 = 20;
pub const RT_VHT: u32 = 21;
pub const RT_HE: u32 = 23;

const F_FCS: u8 = 0x10;
const F_BADFCS: u8 = 0x40;

/// A radiotap header under construction. Fields must be added in increasing bit order; each is
/// padded to its alignment, counted from the start of the header.
pub struct Radiotap {
    buf: Vec<u8>,
    present: u32,
}

impl Default for Radiotap {
    fn default() -> Self {
        Radiotap::new()
    }
}

impl Radiotap {
    pub fn new() -> Radiotap {
        Radiotap { buf: vec![0; 8], present: 0 }
    }
    pub fn field(&mut self, bit: u32, align: usize, bytes: &[u8]) -> &mut Self {
        debug_assert!(self.present >> bit == 0, "radiotap fields out of order");
        debug_assert!(align.is_power_of_two());
        while self.buf.len() & (align - 1) != 0 {
            self.buf.push(0);
        }
        self.buf.extend_from_slice(bytes);
        self.present |= 1 << bit;
        self
    }
    /// The finished header (version 0, length, present word).
    pub fn finish(mut self) -> Vec<u8> {
        let len = self.buf.len() as u16;
        self.buf[2..4].copy_from_slice(&len.to_le_bytes());
        self.buf[4..8].copy_from_slice(&self.present.to_le_bytes());
        self.buf
    }
}

/// (frequency MHz, channel flags): 2.4 GHz channel 6, 5 GHz channel 36, 6 GHz channel 1; OFDM.
fn channel(band: Band) -> (u16, u16) {
    match band {
        Band::Ghz2_4 => (2437, 0x0080 | 0x0040),
        Band::Ghz5 => (5180, 0x0100 | 0x0040),
        Band::Ghz6 => (5955, 0x0100 | 0x0040),
    }
}

/// Per-frame position in an A-MPDU: (reference, is last).
type AmpduPos = Option<(u32, bool)>;

/// The radiotap header of one frame.
pub fn radiotap(start_ns: u64, band: Band, phy: PhyRec, bad_fcs: bool, ampdu: AmpduPos) -> Vec<u8> {
    let mut rt = Radiotap::new();
    rt.field(RT_TSFT, 8, &(start_ns / 1000).to_le_bytes());
    rt.field(RT_FLAGS, 1, &[F_FCS | if bad_fcs { F_BADFCS } else { 0 }]);
    if let PhyRec::Legacy { rate_bps } = phy {
        rt.field(RT_RATE, 1, &[(rate_bps / 500_000) as u8]);
    }
    let (freq, cflags) = channel(band);
    let mut ch = [0u8; 4];
    ch[..2].copy_from_slice(&freq.to_le_bytes());
    ch[2..].copy_from_slice(&cflags.to_le_bytes());
    rt.field(RT_CHANNEL, 2, &ch);
    let (v, ru) = match phy {
        PhyRec::Mcs(v) => (Some(v), None),
        PhyRec::HeRu { v, index, tb } => (Some(v), Some((index, tb))),
        PhyRec::Legacy { .. } => (None, None),
    };
    if let Some(v) = v.filter(|v| v.standard == Standard::Ht) {
        // known: bandwidth, MCS index, GI, HT format, FEC type; flags: BW 20/40, SGI; BCC, mixed.
        let bw = if v.channel_width == 40 { 1 } else { 0 };
        let sgi = if v.guard_interval == 400 { 0x04 } else { 0 };
        rt.field(RT_MCS, 1, &[0x1f, bw | sgi, ht_mcs_index(&v)]);
    }
    if let Some((reference, last)) = ampdu {
        let mut a = [0u8; 8];
        a[..4].copy_from_slice(&reference.to_le_bytes());
        let flags: u16 = 0x0004 | if last { 0x0008 } else { 0 };
        a[4..6].copy_from_slice(&flags.to_le_bytes());
        rt.field(RT_AMPDU, 4, &a);
    }
    if let Some(v) = v.filter(|v| v.standard == Standard::Vht) {
        rt.field(RT_VHT, 2, &vht_field(&v));
    }
    if let Some(v) = v.filter(|v| v.standard == Standard::He) {
        rt.field(RT_HE, 2, &he_field(&v, ru));
    }
    rt.finish()
}

/// HT MCS index: mcs + 8·(nss − 1).
pub fn ht_mcs_index(v: &TxVector) -> u8 {
    v.mcs + 8 * (v.nss.max(1) - 1)
}

/// Radiotap VHT field (12 octets): known = GI + bandwidth, SGI flag, bandwidth code, user 0
/// MCS/NSS, BCC.
pub fn vht_field(v: &TxVector) -> [u8; 12] {
    let mut f = [0u8; 12];
    f[..2].copy_from_slice(&0x0044u16.to_le_bytes());
    f[2] = if v.guard_interval == 400 { 0x04 } else { 0 };
    f[3] = match v.channel_width {
        40 => 1,
        80 => 4,
        160 => 11,
        _ => 0,
    };
    f[4] = (v.mcs << 4) | (v.nss & 0x0f);
    f
}

/// Radiotap HE field (six little-endian u16): HE SU, MCS, coding (LDPC), bandwidth and GI
/// known; NSTS = nss. A user on an RU (`ru`: its index among the RUs of its size, and whether it
/// rode an HE TB PPDU) is marked HE_MU (data1 format 2) or HE_TRIG (3), with its RU size in place
/// of the bandwidth (data5 "data BW/RU allocation" 4..=10: 26- to 2×996-tone RU) and the index in
/// data2's RU allocation offset (bits 8–13, known bit 14) as mt76 writes it
/// (`mt76_connac3_mac_decode_he_radiotap_ru`: the RU's number within its size).
pub fn he_field(v: &TxVector, ru: Option<(u32, bool)>) -> [u8; 12] {
    let format: u16 = match ru {
        Some((_, true)) => 3,
        Some((_, false)) => 2,
        None if v.ru.is_some() => 2,
        None => 0,
    };
    let data1: u16 = format | 0x0020 | 0x0080 | 0x4000;
    let data2: u16 = match ru {
        Some((index, _)) if index < 64 => 0x0002 | 0x4000 | ((index as u16) << 8),
        _ => 0x0002,
    };
    let data3: u16 = ((v.mcs as u16 & 0x0f) << 8) | 0x2000;
    let data4: u16 = 0;
    let bw: u16 = match v.channel_width {
        40 => 1,
        80 => 2,
        160 => 3,
        _ => 0,
    };
    let gi: u16 = match v.guard_interval {
        1600 => 1,
        3200 => 2,
        _ => 0,
    };
    let bw = match v.ru {
        Some(ru) => 4 + lasthop_wifi::phy::RuSize::ALL.iter().position(|&r| r == ru).unwrap_or(0) as u16,
        None => bw,
    };
    let data5: u16 = bw | (gi << 4);
    let data6: u16 = v.nss as u16 & 0x0f;
    let mut f = [0u8; 12];
    for (i, d) in [data1, data2, data3, data4, data5, data6].into_iter().enumerate() {
        f[2 * i..2 * i + 2].copy_from_slice(&d.to_le_bytes());
    }
    f
}

// ------------------------------------------------------------------------------ 802.11 frames

fn push_fcs(f: &mut Vec<u8>) {
    let c = crc32(f);
    f.extend_from_slice(&c.to_le_bytes());
}

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

// ------------------------------------------------------------------------------ TCP

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
const TCP_ACK: u8 = 0x10;
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
fn set_ip_ecn(pkt: &mut [u8], ecn: u8) {
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

// ------------------------------------------------------------------------------ the file

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
mod tests {
    use super::*;
    use crate::capture::{CaptureRequest, DEFAULT_LIMIT};

    fn cap(standard: Standard, qos: bool, octets: u32) -> Capture {
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

    #[test]
    fn crc32_known_vector() {
        assert_eq!(crc32(b"123456789"), 0xCBF4_3926);
        assert_eq!(crc32(b""), 0);
    }

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

    fn fields_at(rt: &[u8]) -> (u16, u32) {
        (u16::from_le_bytes([rt[2], rt[3]]), u32::from_le_bytes([rt[4], rt[5], rt[6], rt[7]]))
    }

    #[test]
    fn radiotap_layouts() {
        // Legacy: hdr 8, TSFT 8..16, flags 16, rate 17, channel 18..22.
        let rt = radiotap(1_234_567, Band::Ghz5, PhyRec::Legacy { rate_bps: 24_000_000 }, false, None);
        assert_eq!(fields_at(&rt), (22, 0b1111));
        assert_eq!(rt[0], 0);
        assert_eq!(u64::from_le_bytes(rt[8..16].try_into().unwrap()), 1234);
        assert_eq!(rt[16], 0x10);
        assert_eq!(rt[17], 48);
        assert_eq!(u16::from_le_bytes([rt[18], rt[19]]), 5180);
        // HT in an A-MPDU: flags 16, channel 18..22 (1 pad byte at 17), MCS 22..25,
        // A-MPDU aligned to 4 → 28..36.
        let ht = TxVector::new(Standard::Ht, 7, 2, 40, 400);
        let rt = radiotap(0, Band::Ghz5, PhyRec::Mcs(ht), true, Some((9, true)));
        assert_eq!(fields_at(&rt), (36, 0b1011 | 1 << RT_MCS | 1 << RT_AMPDU));
        assert_eq!(rt[16], 0x50);
        assert_eq!(rt[17], 0, "pad");
        assert_eq!(&rt[22..25], &[0x1f, 0x05, 15]);
        assert_eq!(u32::from_le_bytes(rt[28..32].try_into().unwrap()), 9);
        assert_eq!(u16::from_le_bytes([rt[32], rt[33]]), 0x000c);
        // VHT in an A-MPDU: A-MPDU 24..32, VHT 32..44.
        let vht = TxVector::new(Standard::Vht, 9, 2, 80, 800);
        let rt = radiotap(0, Band::Ghz5, PhyRec::Mcs(vht), false, Some((1, false)));
        assert_eq!(fields_at(&rt), (44, 0b1011 | 1 << RT_AMPDU | 1 << RT_VHT));
        assert_eq!(u16::from_le_bytes([rt[28], rt[29]]), 0x0004);
        assert_eq!(u16::from_le_bytes([rt[32], rt[33]]), 0x0044);
        assert_eq!(rt[35], 4);
        assert_eq!(rt[36], 0x92);
        // HE without A-MPDU: channel 18..22, HE 22..34.
        let he = TxVector::new(Standard::He, 11, 2, 160, 3200);
        let rt = radiotap(0, Band::Ghz6, PhyRec::Mcs(he), false, None);
        assert_eq!(fields_at(&rt), (34, 0b1011 | 1 << RT_HE));
        assert_eq!(u16::from_le_bytes([rt[26], rt[27]]), 0x2b00);
        assert_eq!(u16::from_le_bytes([rt[30], rt[31]]), 0x0023);
        // An HE MU user on the 6th 106-tone RU: format 2, RU offset 5 known, data5's RU size 6;
        // the same RU in an HE TB PPDU: format 3.
        let user = TxVector::new(Standard::He, 7, 1, 80, 800).with_ru(lasthop_wifi::phy::RuSize::Tones106);
        let rt = radiotap(0, Band::Ghz5, PhyRec::HeRu { v: user, index: 5, tb: false }, false, None);
        assert_eq!(u16::from_le_bytes([rt[22], rt[23]]) & 0x0003, 2);
        assert_eq!(u16::from_le_bytes([rt[24], rt[25]]), 0x0002 | 0x4000 | 5 << 8);
        assert_eq!(u16::from_le_bytes([rt[30], rt[31]]) & 0x000f, 6);
        let rt = radiotap(0, Band::Ghz5, PhyRec::HeRu { v: user, index: 5, tb: true }, false, None);
        assert_eq!(u16::from_le_bytes([rt[22], rt[23]]) & 0x0003, 3);
        // Every present field's offset honours its alignment (TSFT 8, channel 2, A-MPDU 4).
        for (off, align) in [(8usize, 8usize), (18, 2), (24, 4), (32, 2)] {
            assert_eq!(off % align, 0);
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

    /// One's-complement sum over the IPv4 pseudo-header and the whole TCP segment of an IP
    /// packet: 0 when the TCP checksum is right.
    fn tcp_checksum_residue(ip: &[u8]) -> u16 {
        let mut v = Vec::new();
        v.extend_from_slice(&ip[12..20]);
        v.extend_from_slice(&[0, 6]);
        v.extend_from_slice(&((ip.len() - 20) as u16).to_be_bytes());
        v.extend_from_slice(&ip[20..]);
        ip_checksum(&v)
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

    #[test]
    fn addresses() {
        assert_eq!(station_mac(0), [2, 0, 0, 0, 0, 1]);
        assert_eq!(station_mac(300), [2, 0, 0, 0, 1, 45]);
        assert_eq!(station_ip(0), [10, 0, 1, 1]);
        assert_eq!(station_ip(254), [10, 0, 1, 255]);
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
