//! TCP endpoints, sans-IO: a sender (SACK loss recovery per RFC 6675 with RACK-TLP per
//! RFC 8985, Proportional Rate Reduction per RFC 6937, RTO per RFC 6298, limited transmit per
//! RFC 3042, restart after idle, delivery-rate sampling, pacing, a TCP-small-queues limit) and
//! a receiver (receive window, delayed ACK, quick ACK at start, immediate ACK on reordering,
//! SACK blocks per RFC 2018). Sequence numbers are byte offsets from 0 (u64, no wrap).
//!
//! Hosts (the simulator, later live tools) carry [`DataSegment`]s and [`AckSegment`]s between
//! the two and move time; the endpoints never read a clock.
//!
//! ECN (`ecn` in both configs, [`EcnMode`]): the sender puts the codepoint on new data (classic:
//! ECT(0) on new data only, RFC 3168 §6.1.5; L4S: ECT(1) on all data, RFC 9768 §3.1.5 allows
//! it on retransmissions), the host carries the IP ECN field as the network leaves it in
//! `DataSegment::ecn`, and the receiver feeds it back: classic ECE until the sender's CWR
//! (RFC 3168 §6.1.3), or the Accurate ECN counters on every ACK (RFC 9768 §3.2).

use crate::ecn::{AccEcnFeedback, Ecn};

pub mod receiver;
pub mod rtt;
pub mod sender;
pub mod sndbuf;

pub use receiver::{TcpReceiver, TcpReceiverConfig};
pub use sender::{SenderStats, TcpSender, TcpSenderConfig};
pub use sndbuf::SendBuffer;

/// Maximum SACK blocks carried in one ACK (with the timestamp option: 3, RFC 2018 §3).
pub const MAX_SACK_BLOCKS: usize = 3;

/// A data segment: bytes [seq, seq + len).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DataSegment {
    pub seq: u64,
    pub len: u32,
    /// A retransmission (for statistics and traces only; the receiver does not need it).
    pub retransmit: bool,
    /// The IP header's ECN field: as the sender sets it, then as the network delivers it.
    pub ecn: Ecn,
    /// The TCP header's CWR flag (RFC 3168 §6.1.2: the sender reduced its window).
    pub cwr: bool,
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
    /// The ECE flag (classic ECN feedback, RFC 3168 §6.1.3).
    pub ece: bool,
    /// Accurate ECN feedback (RFC 9768): the ACE field and the AccECN option's ECEB field.
    pub accecn: Option<AccEcnFeedback>,
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

/// The AccECN option as this model sends it (RFC 9768 §3.2.3): kind, length, EE0B and ECEB
/// (the order of the AccECN0 option puts EE0B before ECEB), 8 octets.
pub const ACCECN_OPTION_LEN: u32 = 8;

/// SACK blocks an ACK carrying the AccECN option has room for: 40 option octets hold the
/// timestamp option (12), two SACK blocks (20) and the AccECN option (8).
pub const MAX_SACK_BLOCKS_ACCECN: usize = 2;

impl AckSegment {
    /// IP length of this ACK on the wire.
    pub fn ip_len(&self) -> u32 {
        ack_ip_len(self.n_sack) + if self.accecn.is_some() { ACCECN_OPTION_LEN } else { 0 }
    }
}
