//! QUIC packets and frames as data, with their RFC 9000 encoded sizes (no bytes are produced).
//!
//! Sizes follow RFC 9000 §16 (variable-length integers), §17.2 (long header: first byte,
//! version, DCID and SCID with their lengths, token length for Initial, Length, packet number)
//! and §17.3 (short header: first byte, DCID, packet number), plus the 16-byte AEAD tag
//! (RFC 9001 §5.3, AES-GCM). Connection IDs are [`CID_LEN`] bytes. Frame sizes follow §19.
//! Header protection needs 4 bytes of packet number plus payload (RFC 9001 §5.4.2): shorter
//! packets are padded.

use alloc::vec::Vec;
use lasthop_core::Duration;

/// Connection ID length (both directions), bytes.
pub const CID_LEN: u32 = 8;
/// AEAD authentication tag, bytes (RFC 9001 §5.3).
pub const AEAD_TAG_LEN: u32 = 16;
/// IPv4 (20) + UDP (8) header bytes a host adds around a datagram's UDP payload.
pub const IP_UDP_OVERHEAD: u32 = 28;
/// Smallest UDP payload of a datagram carrying an ack-eliciting Initial packet (RFC 9000 §14.1).
pub const MIN_INITIAL_DATAGRAM: u32 = 1200;
/// Most ranges carried in one ACK frame (the most recent ones; older ranges were reported in
/// earlier ACKs, RFC 9000 §13.2.3 allows limiting them).
pub const MAX_ACK_RANGES: usize = 8;
/// ACK delay exponent (RFC 9000 §18.2 default 3: ACK Delay in units of 8 µs).
pub const ACK_DELAY_EXPONENT: u32 = 3;

/// Length of a variable-length integer (RFC 9000 §16).
pub const fn varint_len(v: u64) -> u32 {
    if v < 1 << 6 {
        1
    } else if v < 1 << 14 {
        2
    } else if v < 1 << 30 {
        4
    } else {
        8
    }
}

/// Packet number length for `pn` when the peer has acknowledged up to `largest_acked`
/// (RFC 9000 §17.1 and Appendix A.2: twice the unacknowledged span must fit).
pub fn pn_len(pn: u64, largest_acked: Option<u64>) -> u32 {
    let unacked = match largest_acked {
        Some(l) => pn.saturating_sub(l),
        None => pn + 1,
    };
    let span = unacked.saturating_mul(2);
    if span < 1 << 8 {
        1
    } else if span < 1 << 16 {
        2
    } else if span < 1 << 24 {
        3
    } else {
        4
    }
}

/// Packet-number space (RFC 9000 §12.3). 0-RTT and 1-RTT packets share `AppData`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Space {
    Initial = 0,
    Handshake = 1,
    AppData = 2,
}

impl Space {
    pub const ALL: [Space; 3] = [Space::Initial, Space::Handshake, Space::AppData];
    pub fn idx(self) -> usize {
        self as usize
    }
}

/// Packet type (header form and keys).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PacketType {
    Initial,
    ZeroRtt,
    Handshake,
    /// Short header.
    OneRtt,
}

impl PacketType {
    pub fn space(self) -> Space {
        match self {
            PacketType::Initial => Space::Initial,
            PacketType::Handshake => Space::Handshake,
            PacketType::ZeroRtt | PacketType::OneRtt => Space::AppData,
        }
    }

    /// Header bytes before the payload, for a payload (frames) of `payload` bytes: the long
    /// header's Length field covers packet number, payload and tag.
    pub fn header_len(self, pn_len: u32, payload: u32) -> u32 {
        match self {
            PacketType::OneRtt => 1 + CID_LEN + pn_len,
            _ => {
                let token = if self == PacketType::Initial { 1 } else { 0 };
                let length = varint_len((pn_len + payload + AEAD_TAG_LEN) as u64);
                1 + 4 + 1 + CID_LEN + 1 + CID_LEN + token + length + pn_len
            }
        }
    }
}

/// The transport parameters that matter here (RFC 9000 §18.2), carried inside the first
/// CRYPTO frame of the client's Initial and the server's Handshake flight.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TransportParams {
    pub initial_max_data: u64,
    pub initial_max_stream_data: u64,
    pub max_ack_delay: Duration,
    pub max_idle_timeout: Duration,
    /// draft-ietf-quic-ack-frequency-14 §3: present iff the endpoint accepts ACK_FREQUENCY.
    pub min_ack_delay: Option<Duration>,
}

/// An ACK frame (RFC 9000 §19.3): up to [`MAX_ACK_RANGES`] inclusive ranges (smallest,
/// largest) of packet numbers, highest first, kept inline (no heap).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct AckFrame {
    /// ACK Delay as encoded (a multiple of 2^[`ACK_DELAY_EXPONENT`] µs).
    pub ack_delay: Duration,
    n: u8,
    ranges: [(u64, u64); MAX_ACK_RANGES],
    /// The ECN counts (frame type 0x03, §19.3.2), when the endpoint reports them.
    pub ecn: Option<EcnCounts>,
}

/// ECN Counts of an ACK frame (RFC 9000 §19.3.2): packets of the space received with each
/// ECN codepoint (§13.4.1).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct EcnCounts {
    pub ect0: u64,
    pub ect1: u64,
    pub ce: u64,
}

impl EcnCounts {
    /// Count one packet received with `ecn` (Not-ECT is not counted).
    pub fn count(&mut self, ecn: crate::ecn::Ecn) {
        use crate::ecn::Ecn;
        match ecn {
            Ecn::Ect0 => self.ect0 += 1,
            Ecn::Ect1 => self.ect1 += 1,
            Ecn::Ce => self.ce += 1,
            Ecn::NotEct => {}
        }
    }
    pub fn total(&self) -> u64 {
        self.ect0 + self.ect1 + self.ce
    }
}

impl AckFrame {
    /// From inclusive ranges, highest first (at most [`MAX_ACK_RANGES`] are kept).
    pub fn new(ack_delay: Duration, ranges: impl IntoIterator<Item = (u64, u64)>) -> Self {
        let unit = 1_000u64 << ACK_DELAY_EXPONENT;
        let mut f = AckFrame {
            ack_delay: Duration::from_nanos(ack_delay.as_nanos() / unit * unit),
            n: 0,
            ranges: [(0, 0); MAX_ACK_RANGES],
            ecn: None,
        };
        for r in ranges.into_iter().take(MAX_ACK_RANGES) {
            debug_assert!(r.0 <= r.1);
            f.ranges[f.n as usize] = r;
            f.n += 1;
        }
        f
    }

    /// Inclusive (smallest, largest) ranges, highest first.
    pub fn ranges(&self) -> &[(u64, u64)] {
        &self.ranges[..self.n as usize]
    }

    pub fn largest(&self) -> u64 {
        self.ranges().first().map_or(0, |r| r.1)
    }

    pub fn smallest(&self) -> u64 {
        self.ranges().last().map_or(0, |r| r.0)
    }

    pub fn acks(&self, pn: u64) -> bool {
        self.ranges().iter().any(|&(s, l)| s <= pn && pn <= l)
    }

    /// Encoded size (§19.3): type, Largest Acknowledged, ACK Delay, ACK Range Count, First
    /// ACK Range, then Gap and ACK Range Length per further range.
    pub fn wire_len(&self) -> u32 {
        let r = self.ranges();
        let Some(&(s0, l0)) = r.first() else {
            return 0;
        };
        let delay = self.ack_delay.as_nanos() / (1_000u64 << ACK_DELAY_EXPONENT);
        let mut len = 1 + varint_len(l0) + varint_len(delay) + varint_len(r.len() as u64 - 1) + varint_len(l0 - s0);
        let mut prev_smallest = s0;
        for &(s, l) in &r[1..] {
            len += varint_len(prev_smallest - l - 2) + varint_len(l - s);
            prev_smallest = s;
        }
        if let Some(e) = self.ecn {
            len += varint_len(e.ect0) + varint_len(e.ect1) + varint_len(e.ce);
        }
        len
    }
}

/// Frames (RFC 9000 §19; ACK_FREQUENCY from draft-ietf-quic-ack-frequency-14 §4). Data is
/// represented by offsets and lengths only.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Frame {
    /// `len` PADDING bytes.
    Padding { len: u32 },
    Ping,
    Ack(AckFrame),
    /// Handshake bytes [offset, offset + len). `end` marks the last byte of this space's
    /// handshake flight (stands in for the TLS message framing the model does not encode);
    /// `params` travels with the frame at offset 0 of the flight that carries them.
    Crypto { offset: u64, len: u32, end: bool, params: Option<TransportParams> },
    Stream { id: u64, offset: u64, len: u32, fin: bool },
    MaxData { max: u64 },
    MaxStreamData { id: u64, max: u64 },
    HandshakeDone,
    AckFrequency { sequence: u64, threshold: u64, max_ack_delay: Duration, reordering: u64 },
    ConnectionClose { code: u64 },
}

impl Frame {
    /// Encoded size in bytes (RFC 9000 §19).
    pub fn wire_len(&self) -> u32 {
        match *self {
            Frame::Padding { len } => len,
            Frame::Ping | Frame::HandshakeDone => 1,
            Frame::Ack(ref a) => a.wire_len(),
            Frame::Crypto { offset, len, .. } => 1 + varint_len(offset) + varint_len(len as u64) + len,
            Frame::Stream { id, offset, len, .. } => {
                // OFF bit set only for a non-zero offset; LEN bit always set.
                let off = if offset > 0 { varint_len(offset) } else { 0 };
                1 + varint_len(id) + off + varint_len(len as u64) + len
            }
            Frame::MaxData { max } => 1 + varint_len(max),
            Frame::MaxStreamData { id, max } => 1 + varint_len(id) + varint_len(max),
            Frame::AckFrequency { sequence, threshold, max_ack_delay, reordering } => {
                varint_len(0xaf)
                    + varint_len(sequence)
                    + varint_len(threshold)
                    + varint_len(max_ack_delay.as_nanos() / 1_000)
                    + varint_len(reordering)
            }
            // Error code, Frame Type, empty Reason Phrase.
            Frame::ConnectionClose { code } => 1 + varint_len(code) + 1 + 1,
        }
    }

    /// Everything but ACK, PADDING and CONNECTION_CLOSE elicits an ACK (RFC 9002 §2).
    pub fn ack_eliciting(&self) -> bool {
        !matches!(self, Frame::Ack(_) | Frame::Padding { .. } | Frame::ConnectionClose { .. })
    }
}

/// One QUIC packet.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Packet {
    pub ty: PacketType,
    pub pn: u64,
    pub frames: Vec<Frame>,
    /// Encoded length: header, frames, AEAD tag.
    pub len: u32,
}

impl Packet {
    pub fn space(&self) -> Space {
        self.ty.space()
    }

    pub fn ack_eliciting(&self) -> bool {
        self.frames.iter().any(Frame::ack_eliciting)
    }

    pub fn ack(&self) -> Option<&AckFrame> {
        self.frames.iter().find_map(|f| match f {
            Frame::Ack(a) => Some(a),
            _ => None,
        })
    }
}

/// One UDP datagram: coalesced packets (RFC 9000 §12.2). `len` is the UDP payload; the IP
/// packet is `len` + [`IP_UDP_OVERHEAD`].
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Datagram {
    pub packets: Vec<Packet>,
    pub len: u32,
    /// The IP header's ECN field: as the sender sets it, then as the network delivers it.
    pub ecn: crate::ecn::Ecn,
}

impl Datagram {
    /// IPv4 packet length.
    pub fn ip_len(&self) -> u32 {
        self.len + IP_UDP_OVERHEAD
    }

    pub fn ack_eliciting(&self) -> bool {
        self.packets.iter().any(Packet::ack_eliciting)
    }

    /// Stream payload bytes carried (for goodput accounting by hosts).
    pub fn stream_bytes(&self) -> u64 {
        self.packets
            .iter()
            .flat_map(|p| p.frames.iter())
            .map(|f| match f {
                Frame::Stream { len, .. } => *len as u64,
                _ => 0,
            })
            .sum()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn varints_and_packet_numbers() {
        assert_eq!([varint_len(63), varint_len(64), varint_len(16383), varint_len(16384)], [1, 2, 2, 4]);
        assert_eq!(varint_len(1 << 30), 8);
        assert_eq!(pn_len(0, None), 1);
        assert_eq!(pn_len(200, Some(100)), 1);
        assert_eq!(pn_len(300, Some(100)), 2);
        assert_eq!(pn_len(1 << 20, Some(0)), 3);
    }

    #[test]
    fn frame_and_header_sizes() {
        // Short header: 1 + 8 + pn; long Initial: 1+4+1+8+1+8+1(token len)+2(Length)+pn.
        assert_eq!(PacketType::OneRtt.header_len(1, 1000), 10);
        assert_eq!(PacketType::Initial.header_len(1, 1000), 27);
        assert_eq!(PacketType::Handshake.header_len(2, 30), 26);
        let s = Frame::Stream { id: 0, offset: 0, len: 1000, fin: false };
        assert_eq!(s.wire_len(), 1 + 1 + 2 + 1000);
        let s = Frame::Stream { id: 4, offset: 100_000, len: 10, fin: true };
        assert_eq!(s.wire_len(), 1 + 1 + 4 + 1 + 10);
        // Two ranges: 90..=100 and 80..=85: gap = 90 - 85 - 2 = 3.
        let a = AckFrame::new(Duration::from_micros(1_000), [(90, 100), (80, 85)]);
        assert_eq!(a.ack_delay, Duration::from_micros(1_000));
        assert_eq!(a.wire_len(), 1 + 2 + 2 + 1 + 1 + 1 + 1);
        assert_eq!(AckFrame::new(Duration::from_micros(1_001), [(0, 0)]).ack_delay, Duration::from_micros(1_000));
        assert!(a.acks(80) && a.acks(100) && !a.acks(86) && !a.acks(101));
    }
}
