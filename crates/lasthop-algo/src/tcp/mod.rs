//! TCP endpoints, sans-IO: a sender (SACK loss recovery per RFC 6675 with RACK-TLP per
//! RFC 8985, Proportional Rate Reduction per RFC 6937, RTO per RFC 6298, limited transmit per
//! RFC 3042, restart after idle, delivery-rate sampling, pacing, a TCP-small-queues limit) and
//! a receiver (receive window, delayed ACK, quick ACK at start, immediate ACK on reordering,
//! SACK blocks per RFC 2018). Sequence numbers are byte offsets from 0 (u64, no wrap).
//!
//! Hosts (the simulator, later live tools) carry [`DataSegment`]s and [`AckSegment`]s between
//! the two and move time; the endpoints never read a clock.

pub mod receiver;
pub mod rtt;
pub mod sender;

pub use receiver::{TcpReceiver, TcpReceiverConfig};
pub use sender::{SenderStats, TcpSender, TcpSenderConfig};

/// Maximum SACK blocks carried in one ACK (with the timestamp option: 3, RFC 2018 §3).
pub const MAX_SACK_BLOCKS: usize = 3;

/// A data segment: bytes [seq, seq + len).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DataSegment {
    pub seq: u64,
    pub len: u32,
    /// A retransmission (for statistics and traces only; the receiver does not need it).
    pub retransmit: bool,
}

/// An acknowledgement: everything below `cum_ack` received, plus up to three SACK blocks
/// [start, end), most recently changed first (RFC 2018 §4).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct AckSegment {
    pub cum_ack: u64,
    pub sack: [(u64, u64); MAX_SACK_BLOCKS],
    pub n_sack: u8,
    /// Receive window in bytes.
    pub rwnd: u64,
}

impl AckSegment {
    pub fn sack_blocks(&self) -> &[(u64, u64)] {
        &self.sack[..self.n_sack as usize]
    }
}

/// IP packet sizes on the wire: IPv4 (20) + TCP (20) + timestamp option (12) = 52 octets of
/// headers, and 10 octets for a SACK option header plus 8 per block (padded to 4).
pub const IP_TCP_HEADERS: u32 = 52;

/// IP length of a data segment of `len` payload bytes.
pub const fn data_ip_len(len: u32) -> u32 {
    IP_TCP_HEADERS + len
}

/// IP length of an ACK with `n_sack` SACK blocks.
pub const fn ack_ip_len(n_sack: u8) -> u32 {
    if n_sack == 0 {
        IP_TCP_HEADERS
    } else {
        IP_TCP_HEADERS + ((2 + 8 * n_sack as u32 + 3) & !3)
    }
}
