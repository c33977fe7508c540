//! Frame records for packet capture: what one node of the cell sent and was the addressed
//! receiver of, PPDU by PPDU, in time order. [`crate::pcap`] turns them into a pcap file.
//!
//! The world records only when a capture was requested (`World::set_capture`): one `Option`
//! test per exchange, no draw from any random stream, so results are identical with and without
//! a capture. Recording stops (and [`Capture::truncated`] is set) before the number of pcap
//! records (one per MPDU, Block Ack, Ack or beacon) would exceed the requested limit.

use lasthop_wifi::mac::frame;
use lasthop_wifi::phy::{Band, Standard, TxVector};
use serde::Serialize;

/// A node of the cell.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Node {
    Ap,
    /// Station index (normalized spec order).
    Station(u32),
    /// Broadcast receiver (beacons).
    Broadcast,
}

impl Node {
    /// "ap", the station index, or "broadcast".
    pub fn name(self) -> String {
        match self {
            Node::Ap => "ap".into(),
            Node::Station(i) => i.to_string(),
            Node::Broadcast => "broadcast".into(),
        }
    }
    /// Parse a capture node: "ap" or a station index (range checked by the caller).
    pub fn parse(s: &str) -> Option<Node> {
        match s {
            "ap" => Some(Node::Ap),
            _ => s.parse::<u32>().ok().map(Node::Station),
        }
    }
}

/// Default maximum number of pcap records of a capture.
pub const DEFAULT_LIMIT: usize = 1_000_000;

/// What to capture: the node whose PPDUs are recorded, and the maximum number of records.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CaptureRequest {
    /// [`Node::Ap`] or [`Node::Station`].
    pub node: Node,
    /// Maximum number of pcap records (MPDUs + control frames + beacons).
    pub limit: usize,
}

/// PHY parameters of a recorded PPDU.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PhyRec {
    /// Non-HT OFDM at `rate_bps` (control responses, beacons, `ofdm` data).
    Legacy { rate_bps: u64 },
    /// HT/VHT/HE at the station's TXVECTOR.
    Mcs(TxVector),
    /// One user of an HE MU PPDU (`tb` false) or of the HE TB PPDUs answering a trigger (`tb`
    /// true) on the RU `v.ru`, number `index` among the RUs of its size
    /// ([`lasthop_wifi::phy::ru::place`]).
    HeRu { v: TxVector, index: u32, tb: bool },
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PpduKind {
    /// QoS Data (Data for `ofdm`) MPDUs, aggregated or not.
    Data,
    /// Compressed Block Ack answering the data PPDU at index `data` of [`Capture::ppdus`].
    BlockAck { data: u32 },
    /// Ack answering the data PPDU at index `data`.
    Ack { data: u32 },
    /// Beacon number `seq` (counted from 1 over the whole run).
    Beacon { seq: u64 },
    /// RTS opening the exchange of a protected data PPDU (`stations[].rts`).
    Rts,
    /// CTS answering the RTS at index `rts`.
    Cts { rts: u32 },
}

/// One recorded PPDU.
#[derive(Clone, Copy, Debug)]
pub struct PpduRec {
    pub start_ns: u64,
    pub kind: PpduKind,
    pub tx: Node,
    pub rx: Node,
    pub phy: PhyRec,
    /// A-MPDU reference number (per capture, from 0) if sent in the A-MPDU format.
    pub ampdu_ref: Option<u32>,
    /// Sent at the same time as another PPDU: nothing of it was received.
    pub collision: bool,
    /// Control frames and beacons: received correctly (data: see the MPDUs).
    pub received: bool,
    /// Data: the MPDUs are `mpdus[first_mpdu .. first_mpdu + n_mpdus]`.
    pub first_mpdu: u32,
    pub n_mpdus: u32,
}

/// The TCP segment an MPDU carries. Sequence numbers are the simulator's byte offsets of the
/// connection (from 0) truncated to 32 bits, as on the wire; [`crate::pcap`] adds each
/// connection's initial sequence number. `rev` marks the request connection of a
/// request/response flow (client → server, the opposite direction of the main connection).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum TcpRec {
    /// Not TCP (a UDP flow).
    #[default]
    None,
    /// A data segment: bytes [seq, seq + len) of its connection; `retransmit`: sent again by
    /// TCP (not a MAC retry); `cwr`: the CWR flag (RFC 3168).
    Data { seq: u32, len: u32, rev: bool, retransmit: bool, cwr: bool },
    /// A pure ACK: cumulative ACK, up to 3 SACK blocks [start, end), receive window in bytes;
    /// `ece`: the ECE flag (classic ECN); `accecn`: the ACE field and the AccECN option's ECEB
    /// (RFC 9768).
    Ack {
        ack: u32,
        sack: [(u32, u32); lasthop_algo::tcp::MAX_SACK_BLOCKS],
        n_sack: u8,
        rwnd: u32,
        rev: bool,
        ece: bool,
        accecn: Option<(u8, u32)>,
    },
}

impl TcpRec {
    /// The SACK blocks of an ACK (empty otherwise).
    pub fn sack_blocks(&self) -> &[(u32, u32)] {
        match self {
            TcpRec::Ack { sack, n_sack, .. } => &sack[..*n_sack as usize],
            _ => &[],
        }
    }
}

/// One MPDU of a recorded data PPDU.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MpduRec {
    /// Sequence number (unbounded counter; the frame carries it modulo 4096).
    pub seq: u32,
    pub flow: u32,
    /// IP packet length carried.
    pub ip_len: u32,
    /// A retransmission.
    pub retry: bool,
    /// Received correctly by the addressed receiver.
    pub ok: bool,
    /// When the packet's endpoint sent it, in ms (truncated to 32 bits: the TCP timestamp
    /// clock).
    pub sent_ms: u32,
    /// The TCP segment carried, if any.
    pub tcp: TcpRec,
    /// The IP header's ECN field as the packet went on the air (RFC 3168 §5).
    pub ecn: u8,
}

/// The records of one capture, and the cell parameters needed to write them out.
#[derive(Clone, Debug)]
pub struct Capture {
    pub node: Node,
    pub limit: usize,
    /// Recording stopped at the limit.
    pub truncated: bool,
    pub records: usize,
    pub ppdus: Vec<PpduRec>,
    pub mpdus: Vec<MpduRec>,
    next_ampdu_ref: u32,
    pub band: Band,
    pub standard: Standard,
    /// QoS Data frames (all but `ofdm`).
    pub qos: bool,
    /// Block Ack bitmap length in octets (8 or 32).
    pub ba_bitmap_octets: u32,
    /// Duration/ID of data frames: SIFS + the response, µs.
    pub data_nav_us: u16,
    pub beacon_interval_ns: u64,
    /// Flow index → station, for the IP addresses of data frames.
    pub flow_station: Vec<u32>,
    /// Flow index → the TID of its QoS Data frames and Block Acks (its access category's,
    /// `AccessCategory::tid`); a flow not listed uses TID 0.
    pub flow_tid: Vec<u8>,
}

impl Capture {
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn new(
        req: CaptureRequest,
        band: Band,
        standard: Standard,
        qos: bool,
        ba_bitmap_octets: u32,
        data_nav_us: u16,
        beacon_interval_ns: u64,
        flow_station: Vec<u32>,
    ) -> Capture {
        Capture {
            node: req.node,
            limit: req.limit,
            truncated: false,
            records: 0,
            ppdus: Vec::new(),
            mpdus: Vec::new(),
            next_ampdu_ref: 0,
            band,
            standard,
            qos,
            ba_bitmap_octets,
            data_nav_us,
            beacon_interval_ns,
            flow_station,
            flow_tid: Vec::new(),
        }
    }

    /// Whether the captured node sends or is the addressed receiver of a data PPDU of `sta`.
    #[inline]
    pub(crate) fn involves(&self, sta: u32) -> bool {
        match self.node {
            Node::Station(i) => i == sta,
            _ => true,
        }
    }

    /// Reserve `n` records; false (and recording stops) if that would exceed the limit.
    fn reserve(&mut self, n: usize) -> bool {
        if self.truncated || self.records + n > self.limit {
            self.truncated = true;
            return false;
        }
        self.records += n;
        true
    }

    /// Record a data PPDU; returns its index, or None once the limit is reached.
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn data(
        &mut self,
        start_ns: u64,
        tx: Node,
        rx: Node,
        phy: PhyRec,
        ampdu: bool,
        collision: bool,
        mpdus: impl ExactSizeIterator<Item = MpduRec>,
    ) -> Option<u32> {
        let n = mpdus.len();
        if !self.reserve(n) {
            return None;
        }
        let first = self.mpdus.len() as u32;
        self.mpdus.extend(mpdus);
        let ampdu_ref = if ampdu {
            self.next_ampdu_ref += 1;
            Some(self.next_ampdu_ref - 1)
        } else {
            None
        };
        self.ppdus.push(PpduRec {
            start_ns,
            kind: PpduKind::Data,
            tx,
            rx,
            phy,
            ampdu_ref,
            collision,
            received: !collision,
            first_mpdu: first,
            n_mpdus: n as u32,
        });
        Some(self.ppdus.len() as u32 - 1)
    }

    /// Record a control frame or beacon (one record).
    #[allow(clippy::too_many_arguments)]
    /// Record a control frame or beacon; returns its index, or None once the limit is reached.
    pub(crate) fn single(&mut self, start_ns: u64, kind: PpduKind, tx: Node, rx: Node, phy: PhyRec, collision: bool, received: bool) -> Option<u32> {
        if !self.reserve(1) {
            return None;
        }
        self.ppdus.push(PpduRec {
            start_ns,
            kind,
            tx,
            rx,
            phy,
            ampdu_ref: None,
            collision,
            received,
            first_mpdu: self.mpdus.len() as u32,
            n_mpdus: 0,
        });
        Some(self.ppdus.len() as u32 - 1)
    }

    /// The MPDUs of a recorded PPDU.
    pub fn mpdus_of(&self, p: &PpduRec) -> &[MpduRec] {
        &self.mpdus[p.first_mpdu as usize..(p.first_mpdu + p.n_mpdus) as usize]
    }

    /// The records as JSON (for tests and debugging): `{"node", "truncated", "records",
    /// "ppdus": [{"t_ns", "kind", "tx", "rx", "phy" (with "ru": [tones, number, tb] for a user on
    /// an RU), "ampdu_ref", "collision", "received",
    /// "mpdus": [{"len", "seq", "retry", "flow", "ip_len", "ok", "tcp"}]}]}` where "tcp" is
    /// null (UDP) or `{"kind": "data"|"ack", "rev", "seq", "len", "retransmit", "ack",
    /// "sack": [[s, e]..], "rwnd"}` (sequence numbers relative to the connection's start, mod
    /// 2^32; data: seq/len/retransmit, ACKs: ack/sack/rwnd; the other fields null).
    pub fn to_json(&self) -> String {
        let ppdus: Vec<PpduOut> = self
            .ppdus
            .iter()
            .map(|p| {
                let (kind, response_to) = match p.kind {
                    PpduKind::Data => ("data", None),
                    PpduKind::BlockAck { data } => ("block_ack", Some(data)),
                    PpduKind::Ack { data } => ("ack", Some(data)),
                    PpduKind::Beacon { .. } => ("beacon", None),
                    PpduKind::Rts => ("rts", None),
                    PpduKind::Cts { rts } => ("cts", Some(rts)),
                };
                let phy = match p.phy {
                    PhyRec::Legacy { rate_bps } => {
                        PhyOut { standard: "legacy", rate_bps: Some(rate_bps), mcs: None, nss: None, width: 20, gi: 800, ru: None }
                    }
                    PhyRec::Mcs(t) => PhyOut::of(t, None),
                    PhyRec::HeRu { v, index, tb } => PhyOut::of(v, v.ru.map(|r| (r.tones(), index, tb))),
                };
                PpduOut {
                    t_ns: p.start_ns,
                    kind,
                    response_to,
                    tx: p.tx.name(),
                    rx: p.rx.name(),
                    phy,
                    ampdu_ref: p.ampdu_ref,
                    collision: p.collision,
                    received: p.received,
                    mpdus: self
                        .mpdus_of(p)
                        .iter()
                        .map(|m| MpduOut {
                            len: frame::mpdu_len(m.ip_len, self.qos),
                            seq: m.seq,
                            retry: m.retry,
                            flow: m.flow,
                            ip_len: m.ip_len,
                            ok: m.ok,
                            tcp: TcpOut::of(&m.tcp),
                        })
                        .collect(),
                }
            })
            .collect();
        let out = CaptureOut { node: self.node.name(), truncated: self.truncated, records: self.records, ppdus };
        serde_json::to_string(&out).expect("serializable")
    }
}

#[derive(Serialize)]
struct CaptureOut {
    node: String,
    truncated: bool,
    records: usize,
    ppdus: Vec<PpduOut>,
}

#[derive(Serialize)]
struct PpduOut {
    t_ns: u64,
    kind: &'static str,
    /// Index of the data PPDU a Block Ack/Ack answers.
    response_to: Option<u32>,
    tx: String,
    rx: String,
    phy: PhyOut,
    ampdu_ref: Option<u32>,
    collision: bool,
    received: bool,
    mpdus: Vec<MpduOut>,
}

#[derive(Serialize)]
struct PhyOut {
    standard: &'static str,
    rate_bps: Option<u64>,
    mcs: Option<u8>,
    nss: Option<u8>,
    width: u16,
    gi: u16,
    /// A user on an RU: its size in tones, its number among the RUs of that size, and whether
    /// it rode an HE TB PPDU.
    #[serde(skip_serializing_if = "Option::is_none")]
    ru: Option<(u16, u32, bool)>,
}

impl PhyOut {
    fn of(t: TxVector, ru: Option<(u16, u32, bool)>) -> PhyOut {
        PhyOut {
            standard: t.standard.name(),
            rate_bps: None,
            mcs: Some(t.mcs),
            nss: Some(t.nss),
            width: t.channel_width,
            gi: t.guard_interval,
            ru,
        }
    }
}

#[derive(Serialize)]
struct MpduOut {
    len: u32,
    seq: u32,
    retry: bool,
    flow: u32,
    ip_len: u32,
    ok: bool,
    tcp: Option<TcpOut>,
}

#[derive(Serialize)]
struct TcpOut {
    kind: &'static str,
    rev: bool,
    seq: Option<u32>,
    len: Option<u32>,
    retransmit: Option<bool>,
    ack: Option<u32>,
    sack: Option<Vec<(u32, u32)>>,
    rwnd: Option<u32>,
}

impl TcpOut {
    fn of(t: &TcpRec) -> Option<TcpOut> {
        match *t {
            TcpRec::None => None,
            TcpRec::Data { seq, len, rev, retransmit, .. } => Some(TcpOut {
                kind: "data",
                rev,
                seq: Some(seq),
                len: Some(len),
                retransmit: Some(retransmit),
                ack: None,
                sack: None,
                rwnd: None,
            }),
            TcpRec::Ack { ack, rwnd, rev, .. } => Some(TcpOut {
                kind: "ack",
                rev,
                seq: None,
                len: None,
                retransmit: None,
                ack: Some(ack),
                sack: Some(t.sack_blocks().to_vec()),
                rwnd: Some(rwnd),
            }),
        }
    }
}
