//! One 802.11 cell: an AP, N stations and a server behind the AP on a wired link, simulated
//! event by event in virtual time.
//!
//! What happens to a packet: a traffic source creates it (at the server for downlink, at a
//! station for uplink); downlink packets cross the wired link and enter the AP's per-station
//! queue of their access category; the owner's EDCA function of that AC contends for the
//! medium (one per AC in use, `world/wmm.rs`); on winning, the transmitter builds
//! an A-MPDU (retransmissions first, then new MPDUs within the Block Ack window, the A-MPDU
//! length limit and the PPDU time limit), sends it, and — if any MPDU arrived — gets a Block
//! Ack a SIFS later. Each MPDU is lost independently per the link's error model. Received
//! MPDUs pass the recipient's reorder buffer before delivery; uplink packets then cross the
//! wired link to the server. Beacons are sent by the AP at every TBTT with PIFS priority.
//! Stations may be associated with an earlier station (a mesh relay), which forwards between
//! its hops through its own interface queue; each hop is on a channel (`Chan`), and hops on
//! different channels neither contend nor collide.
//!
//! The engine is batched per exchange: two events per PPDU (channel access, end of exchange),
//! plus one per packet for sources that are not saturated and one for the wired link (two with
//! a wired queue discipline: the departure and the arrival), one timer event per TCP/QUIC
//! flow, and one tick per forwarding node every `ap.wqm_interval`.
//!
//! Layout: this file keeps the event loop, the topology and the endpoints' hooks;
//! `world/arena.rs` holds the packets; `world/build.rs` builds the cell from its spec;
//! `world/ap_host.rs` takes packets into the AP's queues and `world/ap_driver.rs` is the AP's
//! driver at transmit time; `world/exchange/` drives the frame exchange (channel access,
//! reception, settlement), whose 802.11 rules are the sans-IO components of `lasthop_wifi::mac`
//! (`ampdu`, `scoreboard`, `exchange`), reached through the link adapter of `world/link/` (its
//! frames pulled in `pull.rs`, their fate heard in `fate.rs`).

use crate::capture::{Capture, CaptureRequest, MpduRec, Node, PhyRec, PpduKind};
use crate::engine::EventQueue;
use crate::metrics::FlowCounters;
use crate::spec::{Spec, StationSpec};
use lasthop_algo::aqm::wqm::{ArttParams, ChannelTimes, Wqm, WqmConfig, WqmInput, WqmOutput, WqmVariant};
use lasthop_algo::aqm::{AnyQdisc, MacFqConfig, Qdisc, QueuedPacket};
use lasthop_core::controller::Controller;
use lasthop_core::{rng::StreamKind, units::{BitRate, Bytes}, Duration, Instant, Rng};
use lasthop_wifi::mac::ampdu::{self, AmpduLimits, Take};
use lasthop_wifi::mac::blockack::{Originator, Recipient};
use lasthop_wifi::mac::edca::{AccessCategory, EdcaParams, Edcaf, SlotTiming};
use lasthop_wifi::mac::exchange::RtsPolicy;
use lasthop_wifi::mac::any_driver::AnyDriver;
use lasthop_wifi::mac::driver::{ApDriver, Mac80211};
use lasthop_wifi::mac::frame;
use lasthop_wifi::mac::medium::{ContenderId, Medium};
use lasthop_wifi::mac::rate::{rate_table, IdealRate, MinstrelHt, MinstrelParams, RateControl};
use lasthop_wifi::mac::scoreboard;
use lasthop_wifi::mac::txq::{TxqSchedule, TxqSet};
use lasthop_wifi::phy::channel::{LinkBudget, Mobility};
use lasthop_wifi::phy::fading::Fading;
use lasthop_wifi::phy::{self, Band, Standard, TxVector};
use crate::wired::{WiredLink, WiredOutcome};
use lasthop_algo::tcp::{AckSegment, DataSegment};
use lasthop_algo::ecn::Ecn;

mod hosts;
pub mod telemetry;
mod wmm;
mod link;
mod build;
mod exchange;
use exchange::Rts;
mod ap_host;
mod ap_driver;
mod arena;
mod relay;
mod ecn;
mod ack_filter;
mod traffic;
mod wired_host;
mod ofdma;
mod interference;
mod series;
use hosts::{aggctl, ext, quic, tcp, vwire};
pub use ext::{ExtEvent, ExtFate, ExtLeg};
pub use ack_filter::AckView;
pub use series::BinnedSeries;
use arena::Arena;
use link::LinkIo;
use wmm::{AcPlan, LinkAc, PerAc};

/// Handle of a packet in the arena; carries its IP length for queue accounting, its flow
/// (FQ-CoDel hashes flows into queues) and its ECN field as the queues see it: a discipline
/// that marks CE marks the handle, and the host copies the mark into the arena when the handle
/// leaves the queue (`World::ecn_left_queue`), the arena's field being the packet's.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PktRef {
    pub id: u32,
    pub len: u32,
    pub flow: u32,
    pub ecn: Ecn,
}

impl QueuedPacket for PktRef {
    #[inline]
    fn len_bytes(&self) -> u32 {
        self.len
    }
    #[inline]
    fn flow_hash(&self) -> u32 {
        // distinct flows → distinct hashes; FQ-CoDel perturbs and buckets them
        self.flow.wrapping_mul(0x9E37_79B1)
    }
    #[inline]
    fn ecn(&self) -> Ecn {
        self.ecn
    }
    #[inline]
    fn set_ecn(&mut self, ecn: Ecn) {
        self.ecn = ecn;
    }
}

#[derive(Clone, Copy, Debug)]
struct Pkt {
    flow: u32,
    created: Instant,
    retries: u16,
    /// A retransmission copy of an MPDU the recipient already holds.
    ghost: bool,
    /// What a TCP packet carries (None for UDP).
    tcp: TcpMeta,
    /// Echo request/reply of a ping flow.
    echo: Echo,
    /// Airtime (ns) charged to its station's airtime-queue-limit budget while the firmware
    /// holds it (0 in pull mode).
    aql: u32,
    /// A-MSDU: the next MSDU of the same MPDU (`NO_NEXT` if none) and its IP length; the
    /// first MSDU also holds the MPDU's length (0 when it carries one MSDU).
    next: u32,
    next_len: u32,
    mpdu: u32,
    /// The IP header's ECN field (RFC 3168 §5).
    ecn: Ecn,
}

const NO_NEXT: u32 = u32::MAX;

/// Octets of the MPDU whose first MSDU is `p`.
#[inline]
fn mpdu_bytes(pkts: &[Pkt], qos: bool, p: PktRef) -> u32 {
    match pkts[p.id as usize].mpdu {
        0 => frame::mpdu_len(p.len, qos),
        m => m,
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Echo {
    None,
    Request,
    Reply,
}

/// The transport content of a packet: a TCP segment or ACK (`rev` marks the request
/// connection of a request/response flow, client → server, the other direction of the flow's
/// main connection), or a QUIC datagram (its slot in `World::quic_dgrams`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum TcpMeta {
    None,
    Data { seg: DataSegment, rev: bool },
    Ack { ack: AckSegment, rev: bool },
    Quic { slot: u32, to_client: bool },
    /// An aggctl report on its way to the server (its slot in the aggctl host's slab).
    Aggctl { slot: u32 },
    /// A packet from outside the model (the emulator's TUN devices): `tag` names its bytes in
    /// the host's buffer (`world/hosts/ext.rs`).
    External { tag: u32 },
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Dir {
    Down,
    Up,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Pattern {
    Cbr,
    Poisson,
    Saturated,
    Tcp,
    Quic,
    /// Echo requests on a CBR schedule, answered at once by the far end; the delay recorded
    /// at the sender is the round-trip time.
    Ping,
    /// UDP paced at the rate of the aggctl allocator (`world/hosts/aggctl.rs`).
    Aggctl,
    /// Packets injected by a real-time host (`world/hosts/ext.rs`).
    External,
}

#[derive(Clone, Copy, Debug)]
enum Ev {
    /// Next packet of a flow (CBR/Poisson), or the start of a saturated flow.
    FlowNext(u32),
    /// A packet reaches the far end of the wired link.
    WiredArrive(PktRef, Dir),
    /// A channel access instant on a channel; stale if that channel's generation moved on.
    Access(u16, u64),
    /// The frame exchange in progress on a channel ends.
    ExchangeEnd(u16),
    /// The holder of the TXOP on a channel sends its next frame exchange, SIFS after the last.
    TxopNext(u16),
    /// Target beacon transmission time.
    Beacon,
    /// Report progress to the host.
    Progress,
    /// A TCP connection's timer (RTO, delayed ACK, pacing, queue drained): an engine timer,
    /// re-armed in place.
    TcpTimer(u32),
    /// A QUIC flow's timer (loss detection, PTO, ACK delay, pacing, idle): an engine timer,
    /// re-armed in place.
    QuicTimer(u32),
    /// The split proxy (`world/hosts/vwire.rs`): a tick, a paced application, or a flow's
    /// timer (an engine timer, re-armed in place).
    Vwire(u32),
    /// Measurement instant of a forwarding node's interface queue (the AP = 0, relay station
    /// `s` = 1 + s): samples it and runs its buffer sizer.
    NodeTick(u32),
    /// The wired link's serialiser finished a packet (links with a queue discipline).
    WiredTxDone(Dir),
    /// An aggctl timer (an engine timer, re-armed in place): flow `f`'s estimator, or the
    /// allocator's watchdog (`u32::MAX`).
    AggctlTimer(u32),
    /// Station `s` changes its number of spatial streams (`nss_change`).
    NssChange(u32),
    /// Station `s`'s MU EDCA timer may have expired (`world/ofdma/ul.rs`).
    MuEdcaEnd(u32),
}

struct Flow {
    station: u32,
    /// Cross traffic on the wired path only: consumed at the AP, never enters the cell.
    cross: bool,
    dir: Dir,
    pattern: Pattern,
    size: u32,
    rate_bps: u64,
    start: Instant,
    stop: Instant,
    /// Packets sent so far (CBR schedule index).
    k: u64,
    rng: Rng,
    /// Saturated flows: how many packets to keep queued.
    sat_target: usize,
    /// Its access category's slot (`World::ac_plan`).
    ac: u8,
}

#[derive(Clone, Copy, Debug)]
enum ErrModel {
    None,
    Fixed(f64),
    /// SNR → BER → PER for the MCS of each PPDU (`phy/error.rs`).
    Snr,
}

/// Where a station's SNR comes from.
enum SnrSource {
    Fixed(f64),
    /// Distance schedule through the channel's link budget (`phy/channel.rs`).
    Distance(Mobility, LinkBudget),
    /// Either of the above, faded (`[channel.fading]`, `phy/fading.rs`): the link's gain in dB
    /// added, the same in both directions.
    Faded(Box<(SnrSource, Fading)>),
}

impl SnrSource {
    fn at(&self, now: Instant) -> f64 {
        match self {
            SnrSource::Fixed(s) => *s,
            SnrSource::Distance(m, b) => b.snr_db(m.distance_at(now)),
            SnrSource::Faded(f) => f.0.at(now) + f.1.gain_db(now.as_nanos() as f64 * 1e-9),
        }
    }
}

/// One station and the two directions of its link with the AP.
struct Station {
    /// The configured rate (the only one with `rate_control = "fixed"`).
    tx: TxVector,
    /// A-MPDU length cap (bytes) before the PPDU time limit.
    psdu_cap: u32,
    /// The most MPDUs its radio puts in one A-MPDU (`stations[].ampdu_mpdus_tx`; `u32::MAX`:
    /// the cell's `mac.max_ampdu_mpdus` alone): its uplink, and its downlink to the stations
    /// behind it when it relays.
    ampdu_tx: u32,
    /// Whether its radio sends an RTS before its data PPDUs (`stations[].rts`): its uplink,
    /// and its downlink to the stations behind it when it relays.
    rts: RtsPolicy,
    err: ErrModel,
    snr: SnrSource,
    /// Cached (MPDU length, rate key, SNR bits) → success probability for the SNR model.
    succ_cache: (u32, u32, u64, f64),
    /// Cached (SNR bits) → probability that the Block Ack/Ack arrives.
    ba_cache: (u64, f64),
    err_rng: Rng,
    /// Rate control per direction: the AP's for the downlink, the station's for the uplink.
    rc: [RateControl; 2],
    /// Per access category slot (`World::ac_plan`): its EDCA function on the channel of its
    /// link to its parent, its own transmit queue and the link's Block Ack agreements.
    ac: PerAc<LinkAc>,
    /// The channel of its link to its parent.
    ch: u16,
    /// The relay station this one is associated with (None: the AP).
    parent: Option<u32>,
    /// Index in `World::relays` if stations are associated with this one.
    relay: Option<u32>,
    /// The entry of this link's downlink in its parent's queue set (the AP's: the station
    /// index; a relay's: 1 + child position).
    entry: u32,
    // metrics
    /// PPDUs sent per number of MPDUs (0..=`World::max_mpdus`), per direction; allocated at
    /// the first PPDU (empty: none yet).
    ampdu_hist: [Vec<u64>; 2],
    airtime: [Duration; 2],
    /// Sum of PHY rates (bit/s) and count of data PPDUs sent, per direction (after warm-up).
    rate_sum: [f64; 2],
    rate_n: [u64; 2],
    /// Whole-run link counters per direction (warm-up included), for live telemetry.
    link: [telemetry::LinkCounters; 2],
}

/// A station that stations are associated with: a mesh relay. It forwards between its hops
/// through one interface queue configured like the AP's (`[ap]` discipline, limit, buffer
/// sizer): entry 0 holds frames for its parent, entry 1 + k frames for its k-th child. Its one
/// contender serves the entries round-robin, one aggregate of whatever is queued for that next
/// hop per turn (ath9k-like: no waiting for a fuller aggregate).
struct Relay {
    sta: u32,
    txqs: TxqSet<PktRef>,
    /// The child link of entry 1 + k.
    children: Vec<u32>,
    /// Its radio on its children's channel when that differs from its own link's (entries
    /// 1 + k are then served by this one, entry 0 by the station's contender).
    down: Option<Ctd>,
}

/// The WQM buffer sizer of one forwarding node, with the channel counters at its previous
/// measurement instant.
struct WqmHost {
    ctl: Wqm,
    /// Per channel: the channel's busy time and this node's transmit time.
    last_busy_ns: Vec<u64>,
    last_tx_ns: Vec<u64>,
}

/// Index of a rate in `Station::psdu_by_rate`.
fn rate_key(tx: &TxVector) -> u32 {
    (tx.nss as u32 - 1) * 12 + tx.mcs as u32
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum TxKind {
    Beacon,
    /// A data PPDU: its payload is its users' (`Tx::users`).
    Data,
    /// A BSRP Trigger frame and the QoS Null frames it solicits (`world/ofdma/ul.rs`).
    Bsrp,
}

/// One user of a data PPDU: the station whose link it serves (the receiver of a downlink user,
/// the sender of an uplink one), its direction and access category slot, the TXVECTOR and SNR
/// of its part, its MPDUs and whether its Block Ack/Ack came back. A single-user PPDU has one
/// user; a multi-user PPDU (802.11ax DL OFDMA, an HE TB PPDU) would have one per resource unit.
struct PpduUser {
    sta: u32,
    dir: Dir,
    ac: u8,
    /// The vector its frames go at (on its RU in a DL MU PPDU).
    txv: TxVector,
    /// What its rate control chose (and hears back about): `txv` on the full band.
    rate: TxVector,
    /// In a DL MU PPDU: when its subframes are received (`world/ofdma.rs`).
    mu: Option<ofdma::MuClock>,
    snr: f64,
    /// (sequence number, packet, received correctly)
    mpdus: Vec<(u32, PktRef, bool)>,
    /// Its Block Ack/Ack reached the transmitter (only without a collision).
    acked: bool,
}

/// One transmitter's PPDU in an exchange: a beacon (no users) or data for one or more users.
struct Tx {
    contender: ContenderId,
    kind: TxKind,
    /// The users of a data PPDU, each with its own MPDUs; reused through `Scratch::tx_pool`.
    users: Vec<PpduUser>,
    ppdu_end: Instant,
    /// A data PPDU its sender protects (`world/exchange/protect.rs`, with `Tx::data_sent` and
    /// `Tx::air_end`): without a CTS (a collision, a lost RTS or CTS) the data PPDU is not sent.
    rts: Option<Rts>,
}

/// A contender (EDCA function) on one channel's medium.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Ctd {
    ch: u16,
    id: ContenderId,
}

/// One channel: its medium, the pending access event, the exchange in progress and the busy
/// time so far. Hops on different channels neither contend nor collide.
struct Chan {
    medium: Medium,
    access_gen: u64,
    pending_access: Option<Instant>,
    exchange: Option<Exchange>,
    /// The TXOP in progress on the channel, when its holder may send more than one exchange.
    txop: Option<Txop>,
    busy_ns: u64,
}

/// A TXOP whose holder may send several frame exchanges (`world/exchange/txop.rs`).
#[derive(Clone, Copy, Debug)]
struct Txop {
    holder: ContenderId,
    /// Its start plus the holder's TXOP limit.
    end: Instant,
}

/// Outcome of the exchange in progress (each user's Block Ack in `PpduUser::acked`).
struct Exchange {
    txs: Vec<Tx>,
    start: Instant,
    end: Instant,
    /// A response frame was sent (some MPDU arrived) — even if lost on the way back.
    response_sent: bool,
}

/// Counters for the `stats`/`channel` sections.
#[derive(Default, Debug, Clone)]
pub struct Totals {
    pub mpdus_delivered: u64,
    pub mpdu_attempts: u64,
    pub ppdus: u64,
    pub collisions: u64,
    pub beacons: u64,
    pub busy_ns: u64,
    /// EDCAFs that lost an internal collision to a higher-priority AC of their station.
    pub internal_collisions: u64,
}

/// The cell's PHY and MAC constants, fixed when it is built.
struct Air {
    standard: Standard,
    band: Band,
    timing: SlotTiming,
    aggregation: bool,
    max_mpdus: u32,
    /// PPDU time limit per AC slot: [the AP's, the stations'] (TXOP limits, `world/wmm.rs`).
    max_ppdu: Vec<[Duration; 2]>,
    /// TXOP limit per AC slot, [the AP's, the stations'] (zero: one frame exchange per TXOP;
    /// otherwise the holder sends frame exchanges until it is used, `world/exchange/txop.rs`).
    txop: Vec<[Duration; 2]>,
    /// The duration of the response to a data PPDU (Block Ack or Ack) at the control rate.
    response: Duration,
    retry_limit: u32,
    qos: bool,
    control_rate: u64,
    response_len: u32,
    ack_timeout: Duration,
    /// EIFS − AIFS: SIFS + the time of an Ack at the lowest rate (§10.3.2.3.7).
    eifs_extra: Duration,
    beacon_interval: Duration,
    eifs_after_collision: bool,
    /// A-MPDUs only above this PHY rate (0 = always).
    aggregation_min_rate: u64,
    /// Largest A-MSDU (frame body octets); 0 = one MSDU per MPDU.
    max_amsdu: u32,
    /// `mac.rx_delivery = "subframe"`: MPDUs go up at their subframe's end, else at the PPDU's.
    rx_per_subframe: bool,
    /// Whether the AP's radio protects its data PPDUs with an RTS/CTS (`ap.rts`).
    ap_rts: RtsPolicy,
}

/// Buffers the frame exchange reuses instead of allocating per PPDU.
#[derive(Default)]
struct Scratch {
    /// The MSDUs of one MPDU.
    chain: Vec<PktRef>,
    /// Users' lists of finished PPDUs, kept with their MPDU lists' capacity for the next ones.
    tx_pool: Vec<Vec<PpduUser>>,
    dup: Vec<PktRef>,
    emptied: Vec<(usize, u32)>,
    /// Reorder-buffer releases with their receive times (`complete_mpdus`).
    rx: Vec<(PktRef, Instant)>,
    /// Subframe receive times of one PPDU (`subframe_ends`).
    times: Vec<Instant>,
    /// Per MPDU of one PPDU: it overlaps a burst of interference (`exchange/receive.rs`).
    hits: Vec<bool>,
    /// The nodes (medium owners) transmitting at the channel access being built: a station
    /// sending its own PPDU does not hear a trigger sent at the same instant.
    transmitting: Vec<u32>,
    /// Saturated sources owed a fresh packet for one the AP's queues dropped on its way out
    /// while the AP's driver acted, refilled once it is done (`World::refill_owed`), and
    /// whether that refilling is under way.
    sat_owed: Vec<u32>,
    refilling: bool,
}

pub struct World {
    spec: Spec,
    seed: u64,
    q: EventQueue<Ev>,
    end: Instant,
    warmup: Instant,
    /// The cell's PHY and MAC constants.
    air: Air,
    /// Buffers reused from one exchange to the next.
    scratch: Scratch,
    chans: Vec<Chan>,
    beacon_pending: bool,
    /// The access categories in use and the nodes using them.
    ac_plan: AcPlan,
    /// The AP's data EDCAF and per-station queues per access category slot.
    ap_data: PerAc<Ctd>,
    ap_beacon: Ctd,
    txqs: PerAc<TxqSet<PktRef>>,
    /// The AP's driver below its station queues (`lasthop_wifi::mac::driver`: pull, or the
    /// firmware-queue driver and its firmware's per-station queues), which the frame exchange
    /// pulls from. Taken out while it acts on mac80211's queues (a wake that its pushing causes
    /// is then not acted on, as the driver holds its queue lock).
    driver: Option<AnyDriver<PktRef>>,
    /// The driver's `builds_from_mac80211()`, also while it is taken out.
    ap_pulls: bool,
    /// The last airtime estimate mac80211 charged (`ApHost::charge_airtime`): the MPDU's bits,
    /// the station's rate and the estimate, so that a run of equal frames at one rate divides once.
    airtime_est: (u64, u64, u32),
    stations: Vec<Station>,
    relays: Vec<Relay>,
    /// Buffer sizer per node (0 = the AP, 1 + s = station s), for forwarding nodes with
    /// `ap.buffer_sizer = "wqm"`.
    wqm: Vec<Option<Box<WqmHost>>>,
    /// Airtime each node spent transmitting (ns), for the free-channel fraction.
    node_tx_ns: Vec<u64>,
    node_tick: Duration,
    flows: Vec<Flow>,
    /// Saturated downlink flow per access category slot and station, if any (refilled as the
    /// AP dequeues); uplink likewise.
    /// Indexed by `k * stations + station` (`World::sat_idx`).
    sat_down: Vec<Option<u32>>,
    sat_up: Vec<Option<u32>>,
    wired_down: WiredLink<PktRef>,
    wired_up: WiredLink<PktRef>,
    /// The server's NIC (`wired.server_nic`): its rate, and when it is done with what the
    /// server has sent (TCP small queues' accounting for server-side senders).
    server_nic: BitRate,
    server_nic_free: Instant,
    pkts: Arena,
    /// TCP connections by flow index (None for other flows).
    tcp: Vec<Option<tcp::TcpConn>>,
    /// TCP flows whose queued bytes drained during the current exchange.
    tcp_dirty: Vec<u32>,
    /// TCP flows whose GRO receivers got segments in the current reception batch, each with
    /// its latest segment's reception time (`tcp_gro_flush`).
    gro_pending: Vec<(u32, Instant)>,
    /// QUIC connections by flow index, and the datagrams in flight (slab with a free list).
    quic: Vec<Option<Box<quic::QuicFlow>>>,
    quic_dgrams: Vec<Option<lasthop_algo::quic::Datagram>>,
    quic_free: Vec<u32>,
    /// aggctl flows and their shared allocator (None without aggctl flows or stream changes).
    aggctl: Option<Box<aggctl::AggctlHost>>,
    progress_step: Duration,
    /// Frame records of the requested capture (None: no capture, no cost).
    capture: Option<Box<Capture>>,
    /// The split proxy and paced applications (None: no flow is split or paced).
    vwire: Option<Box<vwire::Host>>,
    /// Traffic from outside the model (an emulator host); None in simulations.
    ext: Option<Box<ext::ExtHost>>,
    /// The AP's OFDMA (None: single-user PPDUs only).
    ofdma: Option<Box<ofdma::Ofdma>>,
    /// Interference from outside the cell (None: `[channel.interference]` absent).
    interference: Option<Box<interference::Interference>>,
    // metrics
    pub counters: Vec<FlowCounters>,
    /// Per flow: packets a queue discipline marked CE.
    pub ce_marked: Vec<u64>,
    /// `ap.air_ce_threshold`: marking at the air, if on.
    air_ce_threshold: Option<Duration>,
    /// With it: when each packet (by arena index) entered the AP's queues.
    at_ap: Vec<Instant>,
    /// `ap.ack_filter`, and the ACKs it took out of the AP's queues.
    ack_filter: ack_filter::AckFilter,
    pub ack_filtered: u64,
    pub totals: Totals,
    /// The run's time series, binned.
    pub ts: BinnedSeries,
}

/// aRxPHYStartDelay for OFDM PHYs (IEEE 802.11-2020 Table 17-21): part of the Ack timeout.
const RX_PHY_START_DELAY: Duration = Duration::from_micros(20);
/// aCCATime bound for OFDM PHYs (§17.4.6): a station cannot sense a transmission younger than
/// this, so EDCAFs reaching zero within it of each other collide.
const CCA_WINDOW: Duration = Duration::from_micros(4);
/// Beacons go at the lowest mandatory OFDM rate.
const BEACON_RATE: u64 = 6_000_000;

impl World {
    pub fn spec(&self) -> &Spec {
        &self.spec
    }
    pub fn events(&self) -> u64 {
        self.q.processed()
    }
    pub fn station_airtime(&self, i: usize) -> [Duration; 2] {
        self.stations[i].airtime
    }
    /// PPDUs per number of MPDUs, per direction: empty before the station's first PPDU in
    /// that direction, else [`World::ampdu_hist_len`] long.
    pub fn station_ampdu_hist(&self, i: usize) -> &[Vec<u64>; 2] {
        &self.stations[i].ampdu_hist
    }
    /// The length of an A-MPDU histogram: 0 ..= the most MPDUs an A-MPDU may hold.
    pub fn ampdu_hist_len(&self) -> usize {
        self.air.max_mpdus as usize + 1
    }
    /// Packets queued at the AP for station `i` (its first hop's queue), all ACs.
    pub fn ap_queue_len(&self, i: usize) -> usize {
        self.txqs.iter().map(|t| t.len(i as u32)).sum()
    }
    /// Data frames carry a QoS Control field (HT and later).
    pub fn qos(&self) -> bool {
        self.air.qos
    }
    pub fn station_tx(&self, i: usize) -> TxVector {
        self.stations[i].tx
    }
    /// Mean PHY rate (bit/s) of the data PPDUs sent after warm-up, [downlink, uplink].
    pub fn station_mean_rate(&self, i: usize) -> [f64; 2] {
        let s = &self.stations[i];
        [0, 1].map(|d| if s.rate_n[d] == 0 { 0.0 } else { s.rate_sum[d] / s.rate_n[d] as f64 })
    }
    /// The station's SNR (dB) at `t`.
    pub fn station_snr_at(&self, i: usize, t: Instant) -> f64 {
        self.stations[i].snr.at(t)
    }
    pub fn band(&self) -> Band {
        self.air.band
    }
    /// Node `n` (0 = the AP, 1 + s = station s) forwards: the AP, or a relay station.
    pub fn is_forwarding(&self, n: usize) -> bool {
        n == 0 || self.stations[n - 1].relay.is_some()
    }

    /// Record the PPDUs `req.node` sends or is the addressed receiver of (see `capture.rs`).
    /// Call before [`World::run`]; the node must exist.
    pub fn set_capture(&mut self, req: CaptureRequest) {
        if let Node::Station(i) = req.node {
            assert!((i as usize) < self.stations.len(), "capture node {i}: no such station");
        }
        let resp = phy::legacy_duration(self.air.control_rate, self.air.response_len, self.air.band);
        let nav_ns = (self.air.timing.sifs + resp).as_nanos();
        let ba_bitmap_octets = if self.air.response_len == frame::BLOCK_ACK_256 { 32 } else { 8 };
        self.capture = Some(Box::new(Capture::new(
            req,
            self.air.band,
            self.air.standard,
            self.air.qos,
            ba_bitmap_octets,
            nav_ns.div_ceil(1000).min(32767) as u16,
            self.air.beacon_interval.as_nanos(),
            self.flows.iter().map(|f| f.station).collect(),
        )));
        let tids = (0..self.flows.len() as u32).map(|f| self.flow_tid(f)).collect();
        self.capture.as_deref_mut().expect("just set").flow_tid = tids;
    }

    /// The capture's records (after [`World::run`]).
    pub fn take_capture(&mut self) -> Option<Capture> {
        self.capture.take().map(|c| *c)
    }

    /// Run to the end of the simulation, reporting progress in [0, 1].
    pub fn run(&mut self, progress: &mut dyn FnMut(f64)) {
        self.start();
        self.step_until(self.end, progress);
        progress(1.0);
    }

    /// Schedule what happens at time zero (flows, beacons, node ticks). Called once, by `run`
    /// or by a real-time host before it steps the world.
    fn start(&mut self) {
        for c in &mut self.chans {
            c.medium.set_idle(Instant::ZERO);
        }
        for f in 0..self.flows.len() {
            let start = self.flows[f].start;
            self.q.schedule(start, Ev::FlowNext(f as u32));
        }
        if !self.air.beacon_interval.is_zero() {
            self.q.schedule(Instant::ZERO, Ev::Beacon);
        }
        self.q.schedule(Instant::ZERO + self.progress_step, Ev::Progress);
        self.vwire_start();
        self.schedule_nss_changes();
        let forwarding: Vec<u32> = std::iter::once(0).chain(self.relays.iter().map(|r| r.sta + 1)).collect();
        for n in forwarding {
            // A sample at 0 too; the sizer itself acts at its measurement instants.
            self.q.schedule(Instant::ZERO, Ev::NodeTick(n));
        }
    }

    /// Handle every event up to `until` (and not beyond the end of the run).
    fn step_until(&mut self, until: Instant, progress: &mut dyn FnMut(f64)) {
        let until = until.min(self.end);
        while let Some(ev) = self.q.pop_until(until) {
            match ev {
                Ev::FlowNext(f) => self.on_flow_next(f),
                Ev::WiredArrive(p, d) => self.on_wired_arrive(p, d),
                Ev::Access(ch, g) => {
                    let c = &mut self.chans[ch as usize];
                    if g == c.access_gen {
                        c.pending_access = None;
                        self.on_access(ch);
                    }
                }
                Ev::ExchangeEnd(ch) => self.on_exchange_end(ch),
                Ev::TxopNext(ch) => self.on_txop_next(ch),
                Ev::MuEdcaEnd(s) => self.on_mu_edca_end(s),
                Ev::Beacon => self.on_beacon(),
                Ev::TcpTimer(f) => self.on_tcp_timer(f),
                Ev::QuicTimer(f) => self.on_quic_timer(f),
                Ev::NodeTick(n) => self.on_node_tick(n),
                Ev::Vwire(t) => self.on_vwire(t),
                Ev::WiredTxDone(d) => self.on_wired_tx_done(d),
                Ev::AggctlTimer(f) => self.on_aggctl_timer(f),
                Ev::NssChange(s) => self.on_nss_change(s),
                Ev::Progress => {
                    let now = self.q.now();
                    progress(now.as_nanos() as f64 / self.end.as_nanos() as f64);
                    self.q.schedule(now + self.progress_step, Ev::Progress);
                }
            }
        }
    }

    // ---------------------------------------------------------------- packets and traffic

    /// Packets created and not yet delivered or dropped (queued, in flight, held for reordering).
    pub fn packets_in_system(&self) -> u64 {
        self.pkts.in_system()
    }

    /// Drops and deliveries count when they happen inside the measurement window
    /// [warmup, end]; offered load counts packets created inside it.
    fn drop_pkt(&mut self, p: PktRef, why: DropWhy) {
        let pk = self.pkts[p.id as usize];
        // Flow counters follow the flow's payload: UDP packets, the main connection's data,
        // QUIC datagrams to the client.
        let counted = matches!(
            pk.tcp,
            TcpMeta::None | TcpMeta::External { .. } | TcpMeta::Data { rev: false, .. } | TcpMeta::Quic { to_client: true, .. }
        );
        if self.q.now() >= self.warmup && !pk.ghost && counted {
            let c = &mut self.counters[self.pkts[p.id as usize].flow as usize];
            match why {
                DropWhy::Queue => c.dropped_queue += 1,
                DropWhy::Retry => c.dropped_retry += 1,
                DropWhy::Wired => c.dropped_wired += 1,
            }
        }
        self.quic_drop(p);
        self.vwire_dropped(p, why);
        self.aggctl_drop(p);
        self.ext_drop(p);
        self.release(p);
    }

    /// The packet reached its destination node (the server, the AP for cross traffic, or a
    /// station) at `t`: TCP packets go to their endpoint, others to the application.
    fn arrive(&mut self, p: PktRef, t: Instant) {
        match self.pkts[p.id as usize].tcp {
            TcpMeta::None => {
                self.aggctl_rx(p, t);
                self.deliver(p, t)
            }
            TcpMeta::Quic { .. } => self.quic_arrive(p, t),
            TcpMeta::Aggctl { .. } => self.aggctl_report_arrive(p, t),
            TcpMeta::External { .. } => self.ext_arrive(p, t),
            _ => self.tcp_arrive(p, t),
        }
    }

    /// The packet reached its destination application at `t`.
    fn deliver(&mut self, p: PktRef, t: Instant) {
        let pk = self.pkts[p.id as usize];
        if pk.echo == Echo::Request {
            // The far end answers at once with a reply of the same size that keeps the
            // request's creation time, so the delay recorded on its arrival is the RTT.
            let pk = &mut self.pkts[p.id as usize];
            pk.echo = Echo::Reply;
            pk.retries = 0;
            let fl = &self.flows[pk.flow as usize];
            match fl.dir {
                Dir::Down => self.station_enqueue(fl.station, p, t),
                Dir::Up => self.wired_send(p, Dir::Down, t),
            }
            return;
        }
        if t >= self.warmup {
            let f = pk.flow as usize;
            let d = (t - pk.created).as_nanos();
            let c = &mut self.counters[f];
            c.delivered_packets += 1;
            c.delivered_bytes += p.len as u64;
            c.delay.record(d);
            self.ts.goodput.add(f, t.as_nanos(), p.len as f64 * 8.0);
            self.ts.delay_sum.add(f, t.as_nanos(), d as f64);
            self.ts.delay_n.add(f, t.as_nanos(), 1.0);
        }
        self.release(p);
    }

    /// Station `sta`'s next frame in slot `k`, if it `fits`: a FIFO is peeked first; a
    /// discipline is pulled (its AQM decides what it drops), and a frame that does not fit
    /// waits first in line.
    fn station_take(&mut self, sta: u32, k: usize, now: Instant, fits: &dyn Fn(u32) -> bool) -> Take<PktRef> {
        if matches!(self.stations[sta as usize].ac[k].queue, AnyQdisc::Fifo(_)) {
            let a = &mut self.stations[sta as usize].ac[k];
            let Some(p) = a.queue.peek() else { return Take::Empty };
            if !fits(p.len) {
                return Take::NoFit;
            }
            return Take::Got(a.queue.dequeue(now, |_| {}).expect("peeked"));
        }
        let Some(p) = self.station_pull(sta, k, now) else { return Take::Empty };
        if !fits(p.len) {
            self.stations[sta as usize].ac[k].stash = Some(p);
            return Take::NoFit;
        }
        Take::Got(p)
    }

    /// The next frame of leaf station `sta`'s own queue of slot `k` (a stashed one first);
    /// packets its discipline drops on the way are accounted as queue drops.
    fn station_pull(&mut self, sta: u32, k: usize, now: Instant) -> Option<PktRef> {
        let a = &mut self.stations[sta as usize].ac[k];
        if let Some(p) = a.stash.take() {
            return Some(p);
        }
        let mut drops = Vec::new();
        let p = a.queue.dequeue(now, |d| drops.push(d));
        for d in drops {
            self.tcp_station_sent(d);
            self.drop_pkt(d, DropWhy::Queue);
            self.refill_dropped(d, sta, now);
        }
        if let Some(p) = p {
            self.ecn_left_queue(p);
        }
        p
    }

    fn station_enqueue(&mut self, sta: u32, p: PktRef, now: Instant) {
        self.station_enqueue_since(sta, p, now, now);
    }

    /// A station's packet made at `made` ≤ `now` (a transport's answer to a delivery at `made`,
    /// handled when its exchange ended) enters its queue at `now`; channel access sees `made`.
    pub(super) fn station_enqueue_since(&mut self, sta: u32, p: PktRef, now: Instant, made: Instant) {
        if let Some(r) = self.stations[sta as usize].relay {
            self.relay_enqueue(r, 0, p, now);
            return;
        }
        let k = self.slot_of(p);
        let a = &mut self.stations[sta as usize].ac[k];
        match a.queue.enqueue(now, p) {
            Ok(()) => {
                let c = a.ctd.expect("an EDCAF for the AC of a flow of the station");
                self.formation_enqueued(sta, Dir::Up, k);
                self.make_ready_since(c, now, made);
            }
            Err(p) => {
                self.tcp_station_sent(p);
                self.drop_pkt(p, DropWhy::Queue);
            }
        }
    }

    // ---------------------------------------------------------------- channel access

    /// A contender has something to send: if the medium is idle and it would win earlier than
    /// the access already scheduled, move the access event.
    fn make_ready(&mut self, c: Ctd, now: Instant) {
        self.make_ready_since(c, now, now);
    }

    /// As `make_ready` for a frame that arrived at `arrived` ≤ `now` (`Medium::set_ready_since`).
    fn make_ready_since(&mut self, c: Ctd, now: Instant, arrived: Instant) {
        let chan = &mut self.chans[c.ch as usize];
        if !chan.medium.set_ready_since(c.id, now, arrived) || chan.medium.is_busy() {
            return;
        }
        if let Some(t) = chan.medium.access_time_of(c.id) {
            if chan.pending_access.is_none_or(|p| t < p) {
                self.schedule_access_at(c.ch, t);
            }
        }
    }

    fn set_not_ready(&mut self, c: Ctd) {
        self.chans[c.ch as usize].medium.set_not_ready(c.id);
    }

    fn schedule_access_at(&mut self, ch: u16, t: Instant) {
        let chan = &mut self.chans[ch as usize];
        chan.access_gen += 1;
        chan.pending_access = Some(t);
        let g = chan.access_gen;
        self.q.schedule(t, Ev::Access(ch, g));
    }

    fn schedule_next_access(&mut self, ch: u16) {
        match self.chans[ch as usize].medium.next_access() {
            Some(t) => self.schedule_access_at(ch, t),
            None => self.chans[ch as usize].pending_access = None,
        }
    }

    fn on_beacon(&mut self) {
        let now = self.q.now();
        self.q.schedule(now + self.air.beacon_interval, Ev::Beacon);
        if !self.beacon_pending {
            self.beacon_pending = true;
            self.make_ready(self.ap_beacon, now);
        }
    }

    /// The MSDUs of the MPDU whose first MSDU is `p`, in order, into `scratch.chain`.
    #[inline]
    fn msdus_into(&mut self, p: PktRef) {
        self.pkts.msdus_into(p, &mut self.scratch.chain);
    }

    /// A ghost copy of the MPDU headed by `p` for its retransmission (`Arena::ghost_copy`).
    fn ghost_copy(&mut self, p: PktRef) -> PktRef {
        self.pkts.ghost_copy(p, &mut self.scratch.chain)
    }
}

#[derive(Clone, Copy)]
enum DropWhy {
    Queue,
    Retry,
    Wired,
}

fn station_err(st: &StationSpec) -> ErrModel {
    match st.error_model {
        crate::spec::ErrorModel::Fixed => ErrModel::Fixed(st.per),
        crate::spec::ErrorModel::Snr => ErrModel::Snr,
        crate::spec::ErrorModel::Off => ErrModel::None,
    }
}

