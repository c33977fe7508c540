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
//! `world/arena.rs` holds the packets; `world/build.rs` builds the cell from its spec, `world/frame_exchange.rs` drives the frame
//! exchange, whose 802.11 rules are the sans-IO components of `lasthop_wifi::mac` (`ampdu`,
//! `scoreboard`, `exchange`), reached through the link adapter of `world/link.rs`.

use crate::capture::{Capture, CaptureRequest, MpduRec, Node, PhyRec, PpduKind};
use crate::engine::EventQueue;
use crate::metrics::{FlowCounters, Series};
use crate::spec::{Spec, StationSpec};
use lasthop_algo::aqm::wqm::{ArttParams, ChannelTimes, Wqm, WqmConfig, WqmInput, WqmOutput, WqmVariant};
use lasthop_algo::aqm::{AnyQdisc, MacFqConfig, Qdisc, QueuedPacket};
use lasthop_core::controller::Controller;
use lasthop_core::units::{BitRate, Bytes};
use lasthop_core::rng::StreamKind;
use lasthop_core::{Duration, Instant, Rng};
use lasthop_wifi::mac::ampdu::{self, AmpduLimits, Take};
use lasthop_wifi::mac::blockack::{Originator, Recipient};
use lasthop_wifi::mac::edca::{AccessCategory, EdcaParams, Edcaf, SlotTiming};
use lasthop_wifi::mac::exchange;
use lasthop_wifi::mac::any_driver::AnyDriver;
use lasthop_wifi::mac::driver::{ApDriver, Mac80211};
use lasthop_wifi::mac::frame;
use lasthop_wifi::mac::medium::{ContenderId, Medium};
use lasthop_wifi::mac::rate::{rate_table, IdealRate, MinstrelHt, MinstrelParams, RateControl};
use lasthop_wifi::mac::scoreboard;
use lasthop_wifi::mac::txq::{TxqSchedule, TxqSet};
use lasthop_wifi::phy::channel::{LinkBudget, Mobility};
use lasthop_wifi::phy::{self, Band, Standard, TxVector};
use crate::wired::{WiredLink, WiredOutcome};
use lasthop_algo::tcp::{AckSegment, DataSegment};

mod hosts;
pub mod telemetry;
mod wmm;
mod link;
mod build;
mod frame_exchange;
mod arena;
use hosts::{aggctl, ext, quic, tcp, vwire};
pub use ext::{ExtEvent, ExtFate, ExtLeg};
use arena::Arena;
use link::LinkIo;
use wmm::{AcPlan, LinkAc, PerAc};

/// Handle of a packet in the arena; carries its IP length for queue accounting and its flow
/// (FQ-CoDel hashes flows into queues).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PktRef {
    pub id: u32,
    pub len: u32,
    pub flow: u32,
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
    /// Target beacon transmission time.
    Beacon,
    /// Report progress to the host.
    Progress,
    /// A TCP connection's timer (RTO, delayed ACK, pacing, queue drained); stale if the
    /// generation moved on.
    TcpTimer(u32, u64),
    /// A QUIC flow's timer (loss detection, PTO, ACK delay, pacing, idle); stale if the
    /// generation moved on.
    QuicTimer(u32, u64),
    /// The split proxy (`world/hosts/vwire.rs`): a tick, a paced application, or a flow's timer.
    Vwire(u32, u64),
    /// Measurement instant of a forwarding node's interface queue (the AP = 0, relay station
    /// `s` = 1 + s): samples it and runs its buffer sizer.
    NodeTick(u32),
    /// The wired link's serialiser finished a packet (links with a queue discipline).
    WiredTxDone(Dir),
    /// An aggctl timer: flow `f`'s estimator, or the allocator's watchdog (`u32::MAX`); stale
    /// if the generation moved on.
    AggctlTimer(u32, u64),
    /// Station `s` changes its number of spatial streams (`nss_change`).
    NssChange(u32),
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
}

impl SnrSource {
    fn at(&self, now: Instant) -> f64 {
        match self {
            SnrSource::Fixed(s) => *s,
            SnrSource::Distance(m, b) => b.snr_db(m.distance_at(now)),
        }
    }
}

/// One station and the two directions of its link with the AP.
struct Station {
    /// The configured rate (the only one with `rate_control = "fixed"`).
    tx: TxVector,
    /// A-MPDU length cap (bytes) before the PPDU time limit.
    psdu_cap: u32,
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

#[derive(Clone, Copy, Debug, PartialEq)]
enum TxKind {
    Beacon,
    /// A data PPDU to or from station `sta` in access category slot `ac`, sent at `txv` and
    /// received at `snr` dB.
    Data { sta: u32, dir: Dir, ac: u8, txv: TxVector, snr: f64 },
}

struct Tx {
    contender: ContenderId,
    kind: TxKind,
    /// (sequence number, packet, received correctly)
    mpdus: Vec<(u32, PktRef, bool)>,
    ppdu_end: Instant,
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
    busy_ns: u64,
}

/// Outcome of the exchange in progress.
struct Exchange {
    txs: Vec<Tx>,
    start: Instant,
    end: Instant,
    /// A single data transmitter whose Block Ack/Ack came back.
    acked: bool,
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

pub struct World {
    spec: Spec,
    seed: u64,
    q: EventQueue<Ev>,
    end: Instant,
    warmup: Instant,
    standard: Standard,
    band: Band,
    timing: SlotTiming,
    chans: Vec<Chan>,
    aggregation: bool,
    max_mpdus: u32,
    /// PPDU time limit of an A-MPDU, per access category slot (TXOP limits of VI and VO).
    max_ppdu: Vec<Duration>,
    retry_limit: u32,
    qos: bool,
    control_rate: u64,
    response_len: u32,
    ack_timeout: Duration,
    /// EIFS − AIFS: SIFS + the time of an Ack at the lowest rate (§10.3.2.3.7).
    eifs_extra: Duration,
    beacon_interval: Duration,
    eifs_after_collision: bool,
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
    stations: Vec<Station>,
    relays: Vec<Relay>,
    /// Buffer sizer per node (0 = the AP, 1 + s = station s), for forwarding nodes with
    /// `ap.buffer_sizer = "wqm"`.
    wqm: Vec<Option<Box<WqmHost>>>,
    /// Airtime each node spent transmitting (ns), for the free-channel fraction.
    node_tx_ns: Vec<u64>,
    node_tick: Duration,
    /// A-MPDUs only above this PHY rate (0 = always).
    aggregation_min_rate: u64,
    /// Largest A-MSDU (frame body octets); 0 = one MSDU per MPDU.
    max_amsdu: u32,
    /// Scratch: the MSDUs of one MPDU.
    chain_buf: Vec<PktRef>,
    flows: Vec<Flow>,
    /// Saturated downlink flow per access category slot and station, if any (refilled as the
    /// AP dequeues); uplink likewise.
    /// Indexed by `k * stations + station` (`World::sat_idx`).
    sat_down: Vec<Option<u32>>,
    sat_up: Vec<Option<u32>>,
    wired_down: WiredLink<PktRef>,
    wired_up: WiredLink<PktRef>,
    pkts: Arena,
    tx_pool: Vec<Vec<(u32, PktRef, bool)>>,
    scratch_dup: Vec<PktRef>,
    scratch_emptied: Vec<(usize, u32)>,
    /// `mac.rx_delivery = "subframe"`: MPDUs go up at their subframe's end, else at the PPDU's.
    rx_per_subframe: bool,
    /// Reorder-buffer releases with their receive times (`complete_mpdus`).
    scratch_rx: Vec<(PktRef, Instant)>,
    /// Subframe receive times of one PPDU (`subframe_ends`).
    scratch_times: Vec<Instant>,
    /// TCP connections by flow index (None for other flows).
    tcp: Vec<Option<tcp::TcpConn>>,
    /// TCP flows whose queued bytes drained during the current exchange.
    tcp_dirty: Vec<u32>,
    /// QUIC connections by flow index, and the datagrams in flight (slab with a free list).
    quic: Vec<Option<Box<quic::QuicFlow>>>,
    quic_dgrams: Vec<Option<lasthop_algo::quic::Datagram>>,
    quic_free: Vec<u32>,
    /// aggctl flows and their shared allocator (None without aggctl flows or stream changes).
    aggctl: Option<Box<aggctl::AggctlHost>>,
    wired_delay: Duration,
    progress_step: Duration,
    /// Frame records of the requested capture (None: no capture, no cost).
    capture: Option<Box<Capture>>,
    /// The split proxy and paced applications (None: no flow is split or paced).
    vwire: Option<Box<vwire::Host>>,
    /// Traffic from outside the model (an emulator host); None in simulations.
    ext: Option<Box<ext::ExtHost>>,
    // metrics
    pub counters: Vec<FlowCounters>,
    pub totals: Totals,
    pub ts_goodput: Series,
    pub ts_delay_sum: Series,
    pub ts_delay_n: Series,
    pub ts_ampdu_mpdus: Series,
    pub ts_ampdu_n: Series,
    pub ts_airtime: Series,
    /// Sum of downlink PHY rates per station per bin (÷ `ts_ampdu_n` = mean rate).
    pub ts_phy_rate: Series,
    pub ts_cwnd: Series,
    pub ts_inflight: Series,
    pub ts_pacing: Series,
    pub ts_rtt_sum: Series,
    pub ts_rtt_n: Series,
    pub ts_retx: Series,
    /// Per node, sampled at each node tick: interface-queue limit and backlog (packets), and
    /// the number of samples per bin.
    pub ts_node_limit: Series,
    pub ts_node_backlog: Series,
    pub ts_node_n: Series,
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
        self.max_mpdus as usize + 1
    }
    /// Packets queued at the AP for station `i` (its first hop's queue), all ACs.
    pub fn ap_queue_len(&self, i: usize) -> usize {
        self.txqs.iter().map(|t| t.len(i as u32)).sum()
    }
    /// Data frames carry a QoS Control field (HT and later).
    pub fn qos(&self) -> bool {
        self.qos
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
        self.band
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
        let resp = phy::legacy_duration(self.control_rate, self.response_len, self.band);
        let nav_ns = (self.timing.sifs + resp).as_nanos();
        let ba_bitmap_octets = if self.response_len == frame::BLOCK_ACK_256 { 32 } else { 8 };
        self.capture = Some(Box::new(Capture::new(
            req,
            self.band,
            self.standard,
            self.qos,
            ba_bitmap_octets,
            nav_ns.div_ceil(1000).min(32767) as u16,
            self.beacon_interval.as_nanos(),
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
        if !self.beacon_interval.is_zero() {
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
                Ev::Beacon => self.on_beacon(),
                Ev::TcpTimer(f, g) => self.on_tcp_timer(f, g),
                Ev::QuicTimer(f, g) => self.on_quic_timer(f, g),
                Ev::NodeTick(n) => self.on_node_tick(n),
                Ev::Vwire(t, g) => self.on_vwire(t, g),
                Ev::WiredTxDone(d) => self.on_wired_tx_done(d),
                Ev::AggctlTimer(f, g) => self.on_aggctl_timer(f, g),
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

    #[inline]
    fn alloc(&mut self, flow: u32, len: u32, now: Instant) -> PktRef {
        let p = self.alloc_control(flow, len, now);
        if now >= self.warmup {
            let c = &mut self.counters[flow as usize];
            c.offered_packets += 1;
            c.offered_bytes += len as u64;
        }
        p
    }

    /// A packet that does not count as offered load (TCP ACKs).
    #[inline]
    fn alloc_control(&mut self, flow: u32, len: u32, now: Instant) -> PktRef {
        let id = self.pkts.put(Pkt {
            flow,
            created: now,
            retries: 0,
            ghost: false,
            tcp: TcpMeta::None,
            echo: Echo::None,
            aql: 0,
            next: NO_NEXT,
            next_len: 0,
            mpdu: 0,
        });
        PktRef { id, len, flow }
    }

    #[inline]
    fn release(&mut self, p: PktRef) {
        self.pkts.release(p);
    }

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
            self.ts_goodput.add(f, t.as_nanos(), p.len as f64 * 8.0);
            self.ts_delay_sum.add(f, t.as_nanos(), d as f64);
            self.ts_delay_n.add(f, t.as_nanos(), 1.0);
        }
        self.release(p);
    }

    fn on_flow_next(&mut self, f: u32) {
        let now = self.q.now();
        let fl = &self.flows[f as usize];
        if fl.pattern == Pattern::Aggctl {
            self.aggctl_on_send(f);
            return;
        }
        if now >= fl.stop {
            return;
        }
        if fl.pattern == Pattern::Saturated {
            self.fill_saturated(f, now);
            return;
        }
        if fl.pattern == Pattern::Tcp {
            self.tcp_start(f);
            return;
        }
        if fl.pattern == Pattern::Quic {
            self.quic_start(f);
            return;
        }
        let (size, dir, sta, ping) = (fl.size, fl.dir, fl.station, fl.pattern == Pattern::Ping);
        let p = self.alloc(f, size, now);
        if ping {
            self.pkts[p.id as usize].echo = Echo::Request;
        }
        match dir {
            Dir::Down => self.wired_send(p, Dir::Down, now),
            Dir::Up => self.station_enqueue(sta, p, now),
        }
        // Next departure: CBR on an exact schedule (no drift), Poisson exponential gaps.
        let fl = &mut self.flows[f as usize];
        fl.k += 1;
        let next = match fl.pattern {
            Pattern::Cbr | Pattern::Ping => {
                let ns = (fl.k as u128 * fl.size as u128 * 8 * 1_000_000_000 / fl.rate_bps as u128) as u64;
                fl.start + Duration(ns)
            }
            _ => {
                let mean = fl.size as f64 * 8.0 / fl.rate_bps as f64;
                now + Duration::from_secs_f64(fl.rng.exponential(mean)).max(Duration(1))
            }
        };
        if next < fl.stop {
            self.q.schedule(next, Ev::FlowNext(f));
        }
    }

    /// A saturated flow keeps its entry queue filled to its target.
    fn fill_saturated(&mut self, f: u32, now: Instant) {
        let (sta, dir, size, target, k) = {
            let fl = &self.flows[f as usize];
            (fl.station, fl.dir, fl.size, fl.sat_target, fl.ac as usize)
        };
        for _ in 0..target {
            let full = match dir {
                Dir::Down => self.txqs[k].room() == 0,
                Dir::Up => match self.stations[sta as usize].relay {
                    Some(r) => self.relays[r as usize].txqs.room() == 0,
                    None => {
                        let a = &self.stations[sta as usize].ac[k];
                        a.queue.len_packets() + a.stash.is_some() as usize >= self.spec.stations[sta as usize].queue_limit as usize
                    }
                },
            };
            if full {
                break;
            }
            let p = self.alloc(f, size, now);
            match dir {
                Dir::Down => self.ap_enqueue(sta, p, now),
                Dir::Up => self.station_enqueue(sta, p, now),
            }
        }
    }

    /// One packet of a saturated flow left its queue: put a fresh one behind it.
    #[inline]
    fn refill(&mut self, flow: Option<u32>, now: Instant) {
        if let Some(f) = flow {
            let fl = &self.flows[f as usize];
            if now < fl.stop && now >= fl.start {
                let (sta, dir, size) = (fl.station, fl.dir, fl.size);
                let p = self.alloc(f, size, now);
                match dir {
                    Dir::Down => self.ap_enqueue(sta, p, now),
                    Dir::Up => self.station_enqueue(sta, p, now),
                }
            }
        }
    }

    fn wired_send(&mut self, p: PktRef, dir: Dir, at: Instant) {
        let link = match dir {
            Dir::Down => &mut self.wired_down,
            Dir::Up => &mut self.wired_up,
        };
        match link.send(at, p) {
            WiredOutcome::Arrives(t) => self.q.schedule(t.max(self.q.now()), Ev::WiredArrive(p, dir)),
            WiredOutcome::Queued => self.wired_pump(dir, at),
            WiredOutcome::DroppedQueue(d) => {
                self.wired_dropped(d, dir);
                if d != p {
                    // FQ-CoDel queued the arrival and dropped from the fattest flow.
                    self.wired_pump(dir, at);
                }
            }
            WiredOutcome::Lost => self.wired_dropped(p, dir),
        }
    }

    /// A wired link with a queue discipline: start its serialiser if idle and a packet waits.
    fn wired_pump(&mut self, dir: Dir, at: Instant) {
        let link = match dir {
            Dir::Down => &mut self.wired_down,
            Dir::Up => &mut self.wired_up,
        };
        let mut drops = Vec::new();
        let end = link.start_tx(at, |d| drops.push(d));
        for d in drops {
            self.wired_dropped(d, dir);
        }
        if let Some(end) = end {
            self.q.schedule(end.max(self.q.now()), Ev::WiredTxDone(dir));
        }
    }

    /// A wired link with a queue discipline finished serialising a packet: it propagates, and
    /// the next one starts.
    fn on_wired_tx_done(&mut self, dir: Dir) {
        let now = self.q.now();
        let link = match dir {
            Dir::Down => &mut self.wired_down,
            Dir::Up => &mut self.wired_up,
        };
        let Some((p, arrive)) = link.tx_done() else { return };
        self.q.schedule(arrive.max(now), Ev::WiredArrive(p, dir));
        if dir == Dir::Down {
            self.tcp_server_sent(p);
        }
        self.wired_pump(dir, now);
        self.tcp_pump_dirty(now);
    }

    /// The wired link dropped `p` (queue or random loss).
    fn wired_dropped(&mut self, p: PktRef, dir: Dir) {
        if dir == Dir::Down {
            self.tcp_server_sent(p);
        }
        self.drop_pkt(p, DropWhy::Wired);
    }

    fn on_wired_arrive(&mut self, p: PktRef, dir: Dir) {
        let now = self.q.now();
        match dir {
            Dir::Down => {
                let fl = &self.flows[self.pkts[p.id as usize].flow as usize];
                if self.ext_ends_at_ap(p, Dir::Down) {
                    self.ext_arrive(p, now);
                } else if self.is_split(p.flow) {
                    self.vwire_wired_data(p, now);
                } else if fl.cross {
                    self.deliver(p, now);
                } else {
                    let sta = fl.station;
                    self.ap_enqueue(sta, p, now);
                }
            }
            Dir::Up => self.arrive(p, now),
        }
    }

    /// A packet for station `dest` enters the AP's queue of its first hop.
    fn ap_enqueue(&mut self, dest: u32, p: PktRef, now: Instant) {
        let sta = self.next_hop(0, dest);
        let k = self.slot_of(p);
        // `scratch_dup` is empty here (whoever takes it drains what nested calls add).
        let kept = {
            let World { txqs, scratch_dup, .. } = self;
            txqs[k].enqueue(now, sta, p, |d| scratch_dup.push(d))
        };
        if !self.scratch_dup.is_empty() {
            let emptied = self.ap_pulls && self.txqs[k].emptied().next().is_some();
            self.drop_scratch();
            if emptied {
                self.unschedule_emptied(k);
            }
        }
        if kept {
            // mac80211 wakes the driver; a pull driver has the AP contend for its queues
            // (also while it is taking frames for an aggregate).
            let contend = self.with_driver(k, now, |d, mac| d.on_wake(mac)).unwrap_or(self.ap_pulls);
            if contend {
                self.make_ready(self.ap_data[k], now);
            }
        }
    }

    /// Stations (of any AC) whose queue the last enqueue into slot `k` emptied by dropping
    /// from the fattest flows of the shared flow queue leave the service list when nothing
    /// else waits for them (no retransmission), and an AC left with no station stops
    /// contending: mac80211's next turn would find nothing there, and the driver would have
    /// handed the hardware nothing to send.
    fn unschedule_emptied(&mut self, k: usize) {
        let mut gone = std::mem::take(&mut self.scratch_emptied);
        gone.clear();
        gone.extend(self.txqs[k].emptied());
        for &(j, s) in &gone {
            if self.txqs[j].len(s) == 0 && !self.stations[s as usize].ac[j].orig(Dir::Down).has_retx() {
                self.txqs[j].return_txq(s, false);
                if !self.txqs[j].has_active() {
                    self.set_not_ready(self.ap_data[j]);
                }
            }
        }
        self.scratch_emptied = gone;
    }

    /// The hardware reported the end of an exchange (the driver's `on_tx_status`): if that
    /// moved frames below mac80211, the AP contends.
    pub(super) fn ap_tx_status(&mut self, now: Instant) {
        // One AC with the firmware model (spec rules); a pull driver does nothing here.
        let k = self.ac_plan.main as usize;
        if self.with_driver(k, now, |d, mac| d.on_tx_status(mac)) == Some(true) {
            self.make_ready(self.ap_data[k], now);
        }
    }

    /// Run one action of the AP's driver on mac80211's queues of access category slot `k`;
    /// `None` while the driver is already acting.
    #[inline]
    pub(super) fn with_driver<R>(&mut self, k: usize, now: Instant, act: impl FnOnce(&mut AnyDriver<PktRef>, &mut ApHost<'_>) -> R) -> Option<R> {
        let mut d = self.driver.take()?;
        let r = act(&mut d, &mut ApHost { w: self, k, now, rate: None });
        self.driver = Some(d);
        Some(r)
    }

    /// The firmware is done with a frame of `sta` (acknowledged or dropped).
    #[inline]
    fn fw_release(&mut self, sta: u32, p: PktRef) {
        let aql = self.pkts[p.id as usize].aql as u64;
        if let Some(d) = self.driver.as_mut() {
            d.release(sta, aql);
        }
        self.vwire_tx_done(p);
    }

    /// The next frame of `sta`'s AP queue in slot `k`; packets its discipline drops on the way
    /// are accounted as queue drops.
    fn ap_pull(&mut self, sta: u32, k: usize, now: Instant) -> Option<PktRef> {
        let p = {
            let World { txqs, scratch_dup, .. } = self;
            txqs[k].tx_dequeue(now, sta, |d| scratch_dup.push(d))
        };
        if !self.scratch_dup.is_empty() {
            self.drop_scratch();
        }
        p
    }

    /// The packets an AP queue just dropped (in `scratch_dup`), accounted as queue drops.
    #[cold]
    fn drop_scratch(&mut self) {
        let mut drops = std::mem::take(&mut self.scratch_dup);
        for d in drops.drain(..) {
            self.drop_pkt(d, DropWhy::Queue);
        }
        self.scratch_dup = drops;
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
        }
        p
    }

    fn station_enqueue(&mut self, sta: u32, p: PktRef, now: Instant) {
        self.station_enqueue_since(sta, p, now, now);
    }

    /// A station's packet made at `made` ≤ `now` (a transport's answer to a packet delivered
    /// at `made`, handled when the delivering exchange ended) enters its queue at `now`; for
    /// channel access it arrived at `made`.
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
                self.make_ready_since(c, now, made);
            }
            Err(p) => {
                self.tcp_station_sent(p);
                self.drop_pkt(p, DropWhy::Queue);
            }
        }
    }

    // ---------------------------------------------------------------- mesh relays

    /// The node sending on the downlink of `link`: 0 = the AP, 1 + s = relay station s.
    #[inline]
    fn parent_node(&self, link: u32) -> u32 {
        self.stations[link as usize].parent.map_or(0, |p| p + 1)
    }

    /// The node transmitting on `link` in `dir`.
    #[inline]
    fn tx_node(&self, link: u32, dir: Dir) -> u32 {
        match dir {
            Dir::Down => self.parent_node(link),
            Dir::Up => link + 1,
        }
    }

    /// The link by which `node` reaches station `dest` (which must be below it).
    fn next_hop(&self, node: u32, dest: u32) -> u32 {
        let mut s = dest;
        loop {
            let par = self.parent_node(s);
            if par == node {
                return s;
            }
            assert!(par != 0, "station {dest} is not below node {node}");
            s = par - 1;
        }
    }

    /// The relay queue set and entry that feed `link` in `dir`; None where the AP's queues
    /// (downlink from the AP) or a leaf station's own queue (its uplink) do.
    #[inline]
    fn relay_port(&self, link: u32, dir: Dir) -> Option<(u32, u32)> {
        let s = &self.stations[link as usize];
        match dir {
            Dir::Down => {
                let par = s.parent?;
                Some((self.stations[par as usize].relay.expect("parent is a relay"), s.entry))
            }
            Dir::Up => s.relay.map(|r| (r, 0)),
        }
    }

    /// Whether a two-radio relay's children side (`down`) or parent side has frames queued or
    /// awaiting retransmission.
    fn relay_has_work(&self, r: u32, down: bool) -> bool {
        let rl = &self.relays[r as usize];
        let m = self.ac_plan.main as usize;
        if !down {
            return rl.txqs.len(0) > 0 || self.stations[rl.sta as usize].ac[m].up_orig.has_retx();
        }
        rl.children
            .iter()
            .enumerate()
            .any(|(k, &c)| rl.txqs.len(1 + k as u32) > 0 || self.stations[c as usize].ac[m].down_orig.has_retx())
    }

    fn relay_enqueue(&mut self, r: u32, entry: u32, p: PktRef, now: Instant) {
        let rl = &mut self.relays[r as usize];
        let sta = rl.sta;
        let mut drops = std::mem::take(&mut self.scratch_dup);
        let kept = rl.txqs.enqueue(now, entry, p, |d| drops.push(d));
        let down = rl.down;
        for d in drops.drain(..) {
            self.tcp_sent_from(sta, d);
            self.drop_pkt(d, DropWhy::Queue);
        }
        self.scratch_dup = drops;
        if kept {
            // The radio that serves this entry.
            let c = match down {
                Some(d) if entry != 0 => d,
                _ => self.sta_ctd(sta, self.ac_plan.main as usize),
            };
            self.make_ready(c, now);
        }
    }

    /// The next frame of a relay's queue entry (drops of its discipline accounted).
    fn relay_pull(&mut self, r: u32, entry: u32, now: Instant) -> Option<PktRef> {
        let mut drops = std::mem::take(&mut self.scratch_dup);
        let sta = self.relays[r as usize].sta;
        let p = self.relays[r as usize].txqs.tx_dequeue(now, entry, |d| drops.push(d));
        for d in drops.drain(..) {
            self.tcp_sent_from(sta, d);
            self.drop_pkt(d, DropWhy::Queue);
        }
        self.scratch_dup = drops;
        p
    }

    /// A packet left station `sta` for good (delivered to the next hop or dropped): if the
    /// station's own TCP sender queued it, its bytes below the socket shrink. Packets a relay
    /// forwards for others do not count.
    #[inline]
    fn tcp_sent_from(&mut self, sta: u32, p: PktRef) {
        if self.flows[p.flow as usize].station == sta {
            self.tcp_station_sent(p);
        }
    }

    /// Station `link` received `p` on its downlink: its own, or forwarded towards its
    /// destination.
    fn down_arrive(&mut self, link: u32, p: PktRef, t: Instant) {
        let dest = self.flows[p.flow as usize].station;
        if dest == link {
            self.arrive(p, t);
            return;
        }
        let r = self.stations[link as usize].relay.expect("a packet for a station below a relay");
        let hop = self.next_hop(link + 1, dest);
        let entry = self.stations[hop as usize].entry;
        let now = self.q.now();
        // A new hop: its own transmission attempts.
        self.pkts[p.id as usize].retries = 0;
        self.relay_enqueue(r, entry, p, now);
    }

    /// The parent of station `link` received `p` on the uplink: the AP sends it on the wired
    /// link, a relay forwards it to its own parent.
    fn up_arrive(&mut self, link: u32, p: PktRef, t: Instant) {
        match self.stations[link as usize].parent {
            None if self.ext_ends_at_ap(p, Dir::Up) => self.ext_arrive(p, t),
            None if self.is_split(p.flow) => self.vwire_wifi_ack(p, t),
            None => self.wired_send(p, Dir::Up, t),
            Some(par) => {
                let r = self.stations[par as usize].relay.expect("parent is a relay");
                let now = self.q.now();
                self.pkts[p.id as usize].retries = 0;
                self.relay_enqueue(r, 0, p, now);
            }
        }
    }

    /// The queue set of forwarding node `n` (the AP's of the main AC, or a relay's).
    fn node_txqs(&self, n: u32) -> &TxqSet<PktRef> {
        if n == 0 {
            &self.txqs[self.ac_plan.main as usize]
        } else {
            &self.relays[self.stations[n as usize - 1].relay.expect("a forwarding node") as usize].txqs
        }
    }

    fn node_txqs_mut(&mut self, n: u32) -> &mut TxqSet<PktRef> {
        if n == 0 {
            &mut self.txqs[self.ac_plan.main as usize]
        } else {
            let r = self.stations[n as usize - 1].relay.expect("a forwarding node") as usize;
            &mut self.relays[r].txqs
        }
    }

    /// The (link, direction) of entry `e` of node `n`'s queue set.
    fn node_entry_link(&self, n: u32, e: u32) -> (u32, Dir) {
        if n == 0 {
            (e, Dir::Down)
        } else if e == 0 {
            (n - 1, Dir::Up)
        } else {
            let r = self.stations[n as usize - 1].relay.expect("a forwarding node") as usize;
            (self.relays[r].children[e as usize - 1], Dir::Down)
        }
    }

    /// Most MPDUs one A-MPDU of full-size (1500-octet) packets can hold at `txv` on `link`.
    fn ampdu_capacity(&mut self, link: u32, txv: &TxVector) -> u32 {
        if !self.aggregation || txv.data_rate_bps() <= self.aggregation_min_rate {
            return 1;
        }
        frame::full_size_mpdus(self.max_psdu(link, self.ac_plan.main as usize, txv), self.qos, self.max_mpdus)
    }

    /// A forwarding node's measurement instant: sample its interface queue and, with WQM, hand
    /// the buffer sizer what a Linux node exposes — the current tx rate and the A-MPDU length
    /// it allows (of the next hop with the longest queue), the backlog, and channel busy and
    /// transmit time (a survey) — then apply the limit it asks for.
    fn on_node_tick(&mut self, n: u32) {
        let now = self.q.now();
        self.q.schedule(now + self.node_tick, Ev::NodeTick(n));
        if self.wqm[n as usize].is_some() {
            let (entries, backlog) = {
                let t = self.node_txqs(n);
                (t.entries(), t.backlog_bytes())
            };
            let e = (0..entries as u32).max_by_key(|&e| (self.node_txqs(n).len(e), std::cmp::Reverse(e))).unwrap_or(0);
            let (link, dir) = self.node_entry_link(n, e);
            let txv = self.stations[link as usize].rc[dir as usize].current();
            let k = self.ampdu_capacity(link, &txv);
            // The survey of the channel that next hop is on.
            let n_ch = self.chans.len();
            let ch = self.stations[link as usize].ch as usize;
            let h = self.wqm[n as usize].as_deref_mut().expect("WQM host");
            let (mut d_busy, mut d_tx) = (0, 0);
            for c in 0..n_ch {
                let (busy, tx) = (self.chans[c].busy_ns, self.node_tx_ns[n as usize * n_ch + c]);
                if c == ch {
                    d_tx = tx - h.last_tx_ns[c];
                    // Busy time is booked when an exchange starts, own airtime when it ends.
                    d_busy = (busy - h.last_busy_ns[c]).max(d_tx);
                }
                h.last_busy_ns[c] = busy;
                h.last_tx_ns[c] = tx;
            }
            let times = ChannelTimes { active: self.node_tick, busy: Duration(d_busy), tx: Duration(d_tx) };
            h.ctl.handle_input(now, WqmInput::TxRate(BitRate(txv.data_rate_bps())));
            h.ctl.handle_input(now, WqmInput::BacklogBytes(Bytes(backlog)));
            h.ctl.handle_input(now, WqmInput::AggregateLength(k));
            h.ctl.handle_input(now, WqmInput::ChannelInterval(times));
            h.ctl.handle_timeout(now);
            if let Some(WqmOutput::SetLimit(b)) = h.ctl.poll_output() {
                self.node_txqs_mut(n).set_total_limit(b as usize);
            }
        }
        // Sampled from the start, warm-up included, so the sizer's initial stage shows. The AP's
        // backlog is over all its ACs' queue sets.
        let t = self.node_txqs(n);
        let limit = t.total_limit() as f64;
        let len = if n == 0 { self.txqs.iter().map(|t| t.total_len()).sum::<usize>() } else { t.total_len() } as f64;
        self.ts_node_limit.add(n as usize, now.as_nanos(), limit);
        self.ts_node_backlog.add(n as usize, now.as_nanos(), len);
        self.ts_node_n.add(n as usize, now.as_nanos(), 1.0);
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
        self.q.schedule(now + self.beacon_interval, Ev::Beacon);
        if !self.beacon_pending {
            self.beacon_pending = true;
            self.make_ready(self.ap_beacon, now);
        }
    }

    /// The MSDUs of the MPDU whose first MSDU is `p`, in order, into `chain_buf`.
    #[inline]
    fn msdus_into(&mut self, p: PktRef) {
        self.pkts.msdus_into(p, &mut self.chain_buf);
    }

    /// A ghost copy of the MPDU headed by `p` for its retransmission (`Arena::ghost_copy`).
    fn ghost_copy(&mut self, p: PktRef) -> PktRef {
        self.pkts.ghost_copy(p, &mut self.chain_buf)
    }
}

/// The host-side timer of an endpoint pair (a TCP or QUIC flow): one pending event, moved only
/// when the wanted instant changes; an event whose generation is not the latest is stale.
#[derive(Default)]
struct EndpointTimer {
    at: Option<Instant>,
    gen: u64,
}

impl EndpointTimer {
    /// The generation of a new event to schedule at `t`, or None if one for `t` is pending.
    fn arm(&mut self, t: Instant) -> Option<u64> {
        if self.at == Some(t) {
            return None;
        }
        self.at = Some(t);
        self.gen += 1;
        Some(self.gen)
    }

    /// Whether an event of generation `gen` is the pending one (it is then consumed).
    fn fire(&mut self, gen: u64) -> bool {
        if self.gen != gen {
            return false;
        }
        self.at = None;
        true
    }
}

#[derive(Clone, Copy)]
enum DropWhy {
    Queue,
    Retry,
    Wired,
}

fn station_err(st: &StationSpec) -> ErrModel {
    match st.error_model.as_str() {
        "fixed" => ErrModel::Fixed(st.per),
        "snr" => ErrModel::Snr,
        _ => ErrModel::None,
    }
}

/// Draw whether one MPDU of `m` octets, sent at `txv` with SNR `snr`, arrives intact.
#[inline]
fn mpdu_ok(s: &mut Station, m: u32, txv: &TxVector, snr: f64) -> bool {
    match s.err {
        ErrModel::None => true,
        ErrModel::Fixed(per) => !s.err_rng.bernoulli(per),
        ErrModel::Snr => {
            let (k, bits) = (rate_key(txv), snr.to_bits());
            if s.succ_cache.0 != m || s.succ_cache.1 != k || s.succ_cache.2 != bits {
                s.succ_cache = (m, k, bits, phy::mpdu_success_prob(txv, snr, m));
            }
            s.err_rng.bernoulli(s.succ_cache.3)
        }
    }
}

/// mac80211's queues of access category slot `k`, as the AP's driver calls them
/// (`lasthop_wifi::mac::driver::Mac80211`).
pub(super) struct ApHost<'a> {
    w: &'a mut World,
    k: usize,
    now: Instant,
    /// The station whose rate the airtime estimates use, and that rate (read once per station
    /// turn).
    rate: Option<(u32, u64)>,
}

impl Mac80211<PktRef> for ApHost<'_> {
    #[inline]
    fn next_txq<F: Fn(u32) -> bool>(&mut self, eligible: F) -> Option<u32> {
        self.w.txqs[self.k].next_txq_where(eligible)
    }

    #[inline]
    fn tx_dequeue(&mut self, sta: u32) -> Option<PktRef> {
        self.w.ap_pull(sta, self.k, self.now)
    }

    #[inline]
    fn stash(&mut self, sta: u32, p: PktRef) {
        self.w.txqs[self.k].stash(sta, p);
    }

    #[inline]
    fn dequeued(&mut self, sta: u32) {
        // A saturated source puts a fresh packet behind the one that left.
        let w = &mut *self.w;
        let sat = w.sat_down[w.sat_idx(self.k, sta)];
        w.refill(sat, self.now);
    }

    fn charge_airtime(&mut self, sta: u32, p: &PktRef) -> u32 {
        let w = &mut *self.w;
        let rate = match self.rate {
            Some((s, r)) if s == sta => r,
            _ => {
                let r = w.stations[sta as usize].rc[0].current().data_rate_bps().max(1);
                self.rate = Some((sta, r));
                r
            }
        };
        // mac80211's estimate at the station's current rate (payload bits over the PHY rate;
        // per-aggregate overheads are not charged).
        let bits = (frame::mpdu_len(p.len, w.qos) as u64 + 4) * 8;
        let est = (bits * 1_000_000_000 / rate).min(u32::MAX as u64) as u32;
        w.pkts[p.id as usize].aql = est;
        est
    }

    #[inline]
    fn return_txq(&mut self, sta: u32, more: bool) {
        self.w.txqs[self.k].return_txq(sta, more);
        self.rate = None;
    }

    #[inline]
    fn has_active(&self) -> bool {
        self.w.txqs[self.k].has_active()
    }

    fn active_stations(&self) -> usize {
        self.w.txqs[self.k].active_len()
    }

    fn schedule_start(&mut self) {
        self.w.txqs[self.k].schedule_start();
    }

    fn schedule_end(&mut self) {
        self.w.txqs[self.k].schedule_end();
    }
}
