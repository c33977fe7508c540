//! The emulator: the simulator's 802.11 cell (`lasthop_sim::world::World`, the same EDCA,
//! A-MPDU, Block Ack, queue-discipline and wired-link code as `lasthop run`) driven by the wall
//! clock between the TUN devices of a namespace topology (`netns.rs`).
//!
//! One thread (pinned to a CPU, timer slack 1 ns, SCHED_FIFO with `Options::realtime`) owns
//! the world. Each round it
//! 1. steps the world to the wall-clock instant `now` (every event up to `now` happens at its
//!    own virtual instant, so a late wake-up delays writes but never changes the model),
//! 2. reads every waiting packet from every TUN (up to `BATCH` per device per round) into a
//!    preallocated slot pool and injects it at `now` as a packet of its flow: server → station
//!    packets enter the wired link (downlink), station → server packets the station's queue
//!    (uplink), so TCP ACKs and pings contend for the medium like simulated ones,
//! 3. writes every packet the model delivered by now to its destination's TUN and frees the
//!    slots of those it dropped, recording how late each write is relative to the instant the
//!    model delivered it (`lateness`),
//! 4. sleeps in `ppoll` until the next model event (or busy-polls when it is closer than
//!    `spin`).
//!
//! With `Io::Syscalls` (the default) every round reads each TUN until EAGAIN and each packet is
//! one `write`, the thread sleeping on the TUNs themselves. With `Io::Uring` (`sys/uring.rs`)
//! a TUN is read only after the ring reported it readable, so a round that polls for work
//! costs no syscall, and the packets due in a round are written with one `io_uring_enter`; the
//! thread sleeps on the ring's descriptor.
//!
//! Packets keep their real bytes; the model sees their IP length and flow. A flow is a 5-tuple
//! (protocol, addresses, ports), so FQ-CoDel separates a ping from a bulk transfer as it would
//! on a Linux AP. No allocation happens per packet once the pool and flow table are warm.
//!
//! With an AP host (`[emu] ap_host = true`) each packet crosses the model in two legs with the
//! AP namespace's kernel between them: server → wired link → the AP's `eth0`; the AP routes it
//! to its `wlan0` → the AP's queues and the cell → the station (and the reverse uplink). The
//! AP host's `wlan0` also answers nl80211 on a telemetry socket (`emu_nl.rs`).

use crate::emu_nl::Responder;
use crate::netns::Built;
use crate::nl::socket::{self as nlsock, Listener};
use crate::sys::sched::{affinity, pin_and_tighten, set_affinity, set_realtime};
use lasthop_core::Instant as SimInstant;
use lasthop_sim::metrics::LogHistogram;
use lasthop_sim::pcap;
use lasthop_sim::world::{Dir, ExtEvent, ExtFate, ExtLeg, World};
use lasthop_sim::Spec;
use std::collections::BTreeMap;
use std::io::Write;
use std::net::Ipv4Addr;
use std::time::{Duration, Instant};

/// Packets read per TUN device per round before the others get their turn.
const BATCH: usize = 64;
/// Bytes per pool slot: enough for any MTU the topology allows.
pub const SLOT: usize = 2048;
/// External flows tracked one by one; later 5-tuples share their station's catch-all flow.
const MAX_FLOWS: usize = 512;
/// Longest sleep, so stop requests and live statistics are seen in time.
const MAX_SLEEP: Duration = Duration::from_millis(10);

/// How packets move between the model and the TUN devices (`lasthop emu --io`). Both measure
/// the same lateness and CPU on a 2-core host (docs/emu.md), so the default is the simpler.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Io {
    /// A `read` per device per round until EAGAIN, a `write` per packet.
    #[default]
    Syscalls,
    /// Readiness and batched writes through one io_uring; `Syscalls` where the kernel refuses it.
    Uring,
}

impl Io {
    /// The choices, and their names in the same order (the first is the default).
    const ALL: [Io; 2] = [Io::Syscalls, Io::Uring];
    pub const NAMES: [&'static str; 2] = ["syscalls", "uring"];

    pub fn name(self) -> &'static str {
        Io::NAMES[self as usize]
    }

    pub fn parse(s: &str) -> Result<Io, String> {
        let i = Io::NAMES.iter().position(|n| *n == s).ok_or_else(|| format!("--io {s}: one of {}", Io::NAMES.join(", ")))?;
        Ok(Io::ALL[i])
    }
}

pub struct Options {
    pub seed: u64,
    /// Print per-station statistics to stderr this often.
    pub stats_every: Option<Duration>,
    /// Write a radiotap pcap of every packet the cell delivered here.
    pub pcap: Option<std::path::PathBuf>,
    /// Stop after this long (None: until `stop` says so).
    pub run_for: Option<Duration>,
    /// Busy-poll instead of sleeping when the next event is closer than this (None: the
    /// default of [`default_spin`]).
    pub spin: Option<Duration>,
    /// Pin the model thread to this CPU.
    pub cpu: Option<usize>,
    /// Run the model thread under SCHED_FIFO at this priority (1–99; needs root or
    /// CAP_SYS_NICE), so that busy processes on its CPU cannot preempt it between the writes of
    /// one A-MPDU. The kernel's real-time throttling (`sched_rt_runtime_us`, 95 % by default)
    /// still leaves the CPU's other tasks their share.
    pub realtime: Option<i32>,
    /// How packets move between the model and the TUNs.
    pub io: Io,
    /// Start `emu run`'s command on [`program_cpus`] (when the model thread is pinned).
    pub place_programs: bool,
}

/// What the emulator measured about itself.
#[derive(Default, Debug, Clone, serde::Serialize)]
pub struct EmuStats {
    pub wall_ns: u64,
    pub packets_read: u64,
    pub bytes_read: u64,
    pub packets_written: u64,
    pub bytes_written: u64,
    pub packets_dropped_by_model: u64,
    /// Packets written out with CE that the model marked (their IP header rewritten).
    pub ce_marked: u64,
    /// Not IPv4 between the server and a station (station ↔ station, IPv6, other addresses).
    pub packets_unroutable: u64,
    pub tun_write_failures: u64,
    pub flows: u64,
    pub wakeups: u64,
    /// The packet I/O used (`Io::name`), and why io_uring was not, when it was asked for.
    pub io: &'static str,
    pub io_fallback: Option<String>,
    /// The CPUs `emu run`'s command was started on (None: wherever the scheduler put it).
    pub program_cpus: Option<Vec<usize>>,
    /// The model thread's busy-poll before a deadline (ns).
    pub spin_ns: u64,
    /// TUN reads that found no packet (EAGAIN), and rounds that wrote packets.
    pub reads_empty: u64,
    pub write_rounds: u64,
    /// How late each delivered packet was written, relative to its delivery instant in the
    /// model (ns).
    pub lateness_p50_ns: u64,
    pub lateness_p99_ns: u64,
    pub lateness_p999_ns: u64,
    pub lateness_max_ns: u64,
    pub lateness_mean_ns: f64,
    pub pool_slots: u64,
    pub cpu: Option<usize>,
    /// The SCHED_FIFO priority the model thread ran at (None: the normal scheduler).
    pub realtime: Option<i32>,
    /// With an AP host: packets the AP's kernel forwarded between its interfaces (read back
    /// from them), and nl80211 requests its telemetry socket answered.
    pub ap_host: bool,
    pub ap_packets_forwarded: u64,
    pub telemetry_requests: u64,
    /// CLOCK_REALTIME (ns) of the model's instant 0: model time t is wall time epoch_ns + t.
    pub epoch_ns: u64,
    /// The model's own count of downlink A-MPDUs (PPDUs) and the MPDUs in them per station,
    /// cumulative, sampled every [`AMPDU_SAMPLE_NS`] of wall time (at most
    /// [`AMPDU_SAMPLES_MAX`] samples, then `truncated`): the aggregation a receiver in station
    /// s saw between two instants is the difference of the samples around them.
    pub ampdu_samples: AmpduSamples,
}

pub const AMPDU_SAMPLE_NS: u64 = 10_000_000;
pub const AMPDU_SAMPLES_MAX: usize = 1 << 16;

#[derive(Default, Debug, Clone, serde::Serialize)]
pub struct AmpduSamples {
    /// Model (= wall since epoch_ns) time of each sample, ns.
    pub t_ns: Vec<u64>,
    /// Per station, per sample: downlink PPDUs so far.
    pub ppdus: Vec<Vec<u64>>,
    /// Per station, per sample: MPDUs in them so far.
    pub mpdus: Vec<Vec<u64>>,
    pub truncated: bool,
}

impl AmpduSamples {
    fn sample(&mut self, world: &World, n: usize, t_ns: u64) {
        if self.t_ns.len() >= AMPDU_SAMPLES_MAX {
            self.truncated = true;
            return;
        }
        if self.ppdus.len() < n {
            self.ppdus.resize(n, Vec::new());
            self.mpdus.resize(n, Vec::new());
        }
        self.t_ns.push(t_ns);
        for s in 0..n {
            let h = &world.station_ampdu_hist(s)[0];
            let (m, p) = h.iter().enumerate().fold((0u64, 0u64), |(m, p), (k, &c)| (m + k as u64 * c, p + c));
            self.ppdus[s].push(p);
            self.mpdus[s].push(m);
        }
    }
}

/// Fixed-size packet buffers; a slot index is the tag the world carries.
struct Pool {
    buf: Vec<u8>,
    len: Vec<u16>,
    free: Vec<u32>,
}

impl Pool {
    fn new(slots: usize) -> Pool {
        Pool { buf: vec![0; slots * SLOT], len: vec![0; slots], free: (0..slots as u32).rev().collect() }
    }
    fn alloc(&mut self) -> u32 {
        if let Some(t) = self.free.pop() {
            return t;
        }
        // Grow by doubling (rare: only when more packets are inside the model than ever).
        let n = self.len.len();
        self.buf.resize(2 * n * SLOT, 0);
        self.len.resize(2 * n, 0);
        self.free.extend((n as u32 + 1..2 * n as u32).rev());
        n as u32
    }
    fn slot_mut(&mut self, t: u32) -> &mut [u8] {
        &mut self.buf[t as usize * SLOT..(t as usize + 1) * SLOT]
    }
    fn packet(&self, t: u32) -> &[u8] {
        let s = t as usize * SLOT;
        &self.buf[s..s + self.len[t as usize] as usize]
    }
    fn packet_mut(&mut self, t: u32) -> &mut [u8] {
        let s = t as usize * SLOT;
        &mut self.buf[s..s + self.len[t as usize] as usize]
    }
    fn release(&mut self, t: u32) {
        self.free.push(t);
    }
}

/// Flow key: sending TUN, protocol, addresses, ports (0 for protocols without them).
type FlowKey = (u16, u8, u32, u32, u16, u16);

/// Which TUN is which: 0 the server, 1..=n the stations, then (AP host) the AP's eth0, wlan0.
#[derive(Clone, Copy)]
struct Layout {
    n_sta: usize,
    /// (eth0, wlan0) TUN indices of the AP host.
    ap: Option<(usize, usize)>,
}

impl Layout {
    fn of(built: &Built) -> Layout {
        let n_sta = built.topo.nodes.len() - 1;
        Layout { n_sta, ap: built.topo.ap.as_ref().map(|_| (n_sta + 1, n_sta + 2)) }
    }

    fn tuns(&self) -> usize {
        self.n_sta + 1 + if self.ap.is_some() { 2 } else { 0 }
    }

    /// The TUN a delivered packet of a flow (station, direction, leg) is written to.
    fn dest(&self, sta: u32, dir: Dir, leg: ExtLeg) -> usize {
        match (dir, leg, self.ap) {
            (Dir::Down, ExtLeg::Wired, Some((eth, _))) => eth,
            (Dir::Up, ExtLeg::Wifi, Some((_, wlan))) => wlan,
            (Dir::Down, _, _) => sta as usize + 1,
            (Dir::Up, _, _) => 0,
        }
    }
}

/// Where an IPv4 packet read from TUN `from` goes: (station, direction, leg) and its flow key.
/// Without an AP host the model forwards server ↔ station itself. With one, the server's
/// packets (to a station or to the AP) cross the wired leg to the AP's eth0, the AP's eth0
/// sends only to the server, its wlan0 only to stations, and a station's packets all go to
/// the AP's wlan0 (the AP's kernel routes them on, station-to-station ones included).
fn route(built: &Built, lay: &Layout, from: usize, pkt: &[u8]) -> Option<(u32, Dir, ExtLeg, FlowKey)> {
    if pkt.len() < 20 || pkt[0] >> 4 != 4 {
        return None;
    }
    let ihl = (pkt[0] & 0x0f) as usize * 4;
    let proto = pkt[9];
    let src = u32::from_be_bytes([pkt[12], pkt[13], pkt[14], pkt[15]]);
    let dst = u32::from_be_bytes([pkt[16], pkt[17], pkt[18], pkt[19]]);
    let first_fragment = u16::from_be_bytes([pkt[6], pkt[7]]) & 0x1fff == 0;
    let (sport, dport) = if matches!(proto, 6 | 17) && first_fragment && pkt.len() >= ihl + 4 {
        (u16::from_be_bytes([pkt[ihl], pkt[ihl + 1]]), u16::from_be_bytes([pkt[ihl + 2], pkt[ihl + 3]]))
    } else {
        (0, 0)
    };
    let key = (from as u16, proto, src, dst, sport, dport);
    let topo = &built.topo;
    let node_of = |a: u32| topo.node_index_of_addr(Ipv4Addr::from(a));
    let Some((eth, wlan)) = lay.ap else {
        return match (from, node_of(dst)?) {
            (0, t) if t > 0 => Some((t as u32 - 1, Dir::Down, ExtLeg::Through, key)),
            (f, 0) if f > 0 => Some((f as u32 - 1, Dir::Up, ExtLeg::Through, key)),
            _ => None,
        };
    };
    // A station attributes wired-leg flows in the results; flows of the AP itself go to 0.
    let sta_of = |a: u32| node_of(a).filter(|&t| t > 0).map_or(0, |t| t as u32 - 1);
    match from {
        0 => (node_of(dst).is_some_and(|t| t > 0) || topo.is_ap_addr(Ipv4Addr::from(dst))).then(|| (sta_of(dst), Dir::Down, ExtLeg::Wired, key)),
        f if f == eth => (node_of(dst) == Some(0)).then(|| (sta_of(src), Dir::Up, ExtLeg::Wired, key)),
        f if f == wlan => node_of(dst).filter(|&t| t > 0).map(|t| (t as u32 - 1, Dir::Down, ExtLeg::Wifi, key)),
        f if f <= lay.n_sta => Some((f as u32 - 1, Dir::Up, ExtLeg::Wifi, key)),
        _ => None,
    }
}

fn label(k: &FlowKey, leg: ExtLeg) -> String {
    let proto = match k.1 {
        6 => "tcp".to_string(),
        17 => "udp".to_string(),
        1 => "icmp".to_string(),
        p => format!("ip proto {p}"),
    };
    let (s, d) = (Ipv4Addr::from(k.2), Ipv4Addr::from(k.3));
    let leg = match leg {
        ExtLeg::Through => "",
        ExtLeg::Wired => " [wired leg]",
        ExtLeg::Wifi => " [wifi leg]",
    };
    if matches!(k.1, 6 | 17) {
        format!("{proto} {s}:{} > {d}:{}{leg}", k.4, k.5)
    } else {
        format!("{proto} {s} > {d}{leg}")
    }
}

/// Record one write's lateness (ns) in the run's histogram and the live statistics'.
fn record_late(all: &mut LogHistogram, live: Option<&mut LogHistogram>, late: u64) {
    all.record(late);
    if let Some(l) = live {
        l.record(late);
    }
}

fn ns_since(t0: Instant) -> u64 {
    t0.elapsed().as_nanos() as u64
}

/// What the model loop changed about its thread, put back when dropped.
struct ThreadSched {
    affinity: Option<libc::cpu_set_t>,
    pinned: bool,
    /// The policy and priority before SCHED_FIFO.
    scheduler: Option<(i32, i32)>,
}

impl Drop for ThreadSched {
    fn drop(&mut self) {
        if let Some(set) = self.affinity.as_ref().filter(|_| self.pinned) {
            set_affinity(set);
        }
        if let Some((policy, priority)) = self.scheduler {
            // SAFETY: as in `set_realtime`.
            unsafe {
                libc::sched_setscheduler(0, policy, &libc::sched_param { sched_priority: priority });
            }
        }
    }
}

/// Per-station counters at the previous live-statistics line.
struct LiveStats {
    last_ns: u64,
    bytes: Vec<[u64; 2]>,
    air: Vec<u64>,
    ampdu: Vec<[u64; 2]>,
    /// Write lateness since the previous line (the soak watches it for growth).
    late: LogHistogram,
}

impl LiveStats {
    #[allow(clippy::needless_range_loop)] // one index over several per-station tables
    fn print(&mut self, w: &World, now_ns: u64) {
        let n = w.spec().stations.len();
        let dt = (now_ns - self.last_ns).max(1) as f64 * 1e-9;
        let mut bytes = vec![[0u64; 2]; n];
        for f in 0..w.n_flows() {
            let (s, d) = w.flow_route(f as u32);
            bytes[s as usize][(d == Dir::Up) as usize] += w.counters[f].delivered_bytes;
        }
        let mut line = format!("emu t={:.1}s", now_ns as f64 * 1e-9);
        for s in 0..n {
            let a = w.station_airtime(s);
            let air = (a[0] + a[1]).as_nanos();
            let h = &w.station_ampdu_hist(s)[0];
            let (mpdus, ppdus) = h.iter().enumerate().fold((0u64, 0u64), |(m, p), (k, &c)| (m + k as u64 * c, p + c));
            let gp = |d: usize| (bytes[s][d] - self.bytes[s][d]) as f64 * 8.0 / dt / 1e6;
            let agg = if ppdus > self.ampdu[s][1] {
                (mpdus - self.ampdu[s][0]) as f64 / (ppdus - self.ampdu[s][1]) as f64
            } else {
                0.0
            };
            line += &format!(
                " | sta{s} down {:.1} up {:.1} Mb/s q {} ampdu {:.1} air {:.0}%",
                gp(0),
                gp(1),
                w.ap_queue_len(s),
                agg,
                (air - self.air[s]) as f64 / (dt * 1e9) * 100.0
            );
            self.air[s] = air;
            self.ampdu[s] = [mpdus, ppdus];
        }
        // Write lateness over the interval (what the run's summary reports for the whole run).
        line += &format!(
            " | late p50 {} p99 {} max {} us n {}",
            self.late.quantile(0.5) / 1000,
            self.late.quantile(0.99) / 1000,
            self.late.max() / 1000,
            self.late.count()
        );
        self.late.clear();
        self.bytes = bytes;
        self.last_ns = now_ns;
        eprintln!("{line}");
    }
}

/// The AP host's nl80211 telemetry (emu_nl.rs): the socket a daemon in the AP namespace finds
/// by the namespace's inode, and the responder that answers from the model's AP.
fn telemetry(built: &Built, spec: &Spec) -> Result<Option<(Listener, Responder)>, String> {
    let Some(ap) = &built.topo.ap else { return Ok(None) };
    let inode = crate::sys::nsfs::netns_inode(&std::path::Path::new("/run/netns").join(&ap.netns)).map_err(|e| format!("AP namespace {}: {e}", ap.netns))?;
    let path = nlsock::telemetry_path(inode);
    let l = Listener::bind(&path).map_err(|e| format!("telemetry socket {}: {e}", path.display()))?;
    let ac = spec.mac.access_category;
    let airtime = spec.ap.scheduler == lasthop_sim::spec::Scheduler::Airtime;
    let mut r = Responder::new(built.ap_wifi_ifindex, &ap.wifi.ifname, ac.tid(), airtime, spec.ap.driver == lasthop_sim::spec::Driver::Firmware && spec.ap.aql);
    r.station_addrs = built.topo.nodes[1..].iter().map(|n| n.addr).collect();
    Ok(Some((l, r)))
}

/// The radiotap pcap of `opts.pcap`, its file header written.
fn open_pcap(opts: &Options) -> Result<Option<std::io::BufWriter<std::fs::File>>, String> {
    let Some(p) = &opts.pcap else { return Ok(None) };
    let f = std::fs::File::create(p).map_err(|e| format!("pcap {}: {e}", p.display()))?;
    let mut w = std::io::BufWriter::with_capacity(1 << 20, f);
    w.write_all(&pcap::file_header()).map_err(|e| e.to_string())?;
    Ok(Some(w))
}

/// The model's external flows by 5-tuple, and per (station, direction, leg) the catch-all flow
/// of the 5-tuples past `MAX_FLOWS`.
#[derive(Default)]
struct Flows {
    by_key: BTreeMap<FlowKey, u32>,
    catch_all: BTreeMap<(u32, bool, u8), u32>,
}

impl Flows {
    fn of(&mut self, world: &mut World, key: FlowKey, sta: u32, dir: Dir, leg: ExtLeg) -> u32 {
        match self.by_key.get(&key) {
            Some(&f) => f,
            None if self.by_key.len() < MAX_FLOWS => {
                let f = world.add_external_flow_on(sta, dir, leg, label(&key, leg));
                self.by_key.insert(key, f);
                f
            }
            None => *self.catch_all.entry((sta, dir == Dir::Up, leg as u8)).or_insert_with(|| {
                let what = match leg {
                    ExtLeg::Through => "",
                    ExtLeg::Wired => " [wired leg]",
                    ExtLeg::Wifi => " [wifi leg]",
                };
                world.add_external_flow_on(sta, dir, leg, format!("other flows of station {sta} {}{what}", if dir == Dir::Up { "up" } else { "down" }))
            }),
        }
    }

    fn len(&self) -> usize {
        self.by_key.len() + self.catch_all.len()
    }
}

/// The running cell: the world and the packets in it, and what the loop measures.
struct Cell<'a> {
    built: &'a Built,
    lay: Layout,
    world: World,
    pool: Pool,
    flows: Flows,
    fates: Vec<ExtEvent>,
    /// With `Io::Uring`: the ring (the round's writes queued in it until `write` flushes them)
    /// and the instants of those writes.
    ring: Option<crate::sys::uring::Ring>,
    batch_at: Vec<u64>,
    /// The wall-clock instant of model time 0.
    t0: Instant,
    /// Deliveries the model reported ahead of their instant (a subframe that ends later in a
    /// PPDU under way), in the order of their instants: written when it comes.
    held: std::collections::VecDeque<ExtEvent>,
    /// With the AP's ACK filter on, each packet's TCP header goes into the model with it.
    read_tcp: bool,
    band: lasthop_wifi::phy::Band,
    lateness: LogHistogram,
    st: EmuStats,
    pcap_out: Option<std::io::BufWriter<std::fs::File>>,
    pcap_seq: Vec<u32>,
    epoch_ns: u64,
}

impl Cell<'_> {
    /// Read what the namespaces sent (up to `BATCH` per TUN) and inject it at the present.
    fn read(&mut self) -> Result<(), String> {
        let (built, lay, pool, st) = (self.built, self.lay, &mut self.pool, &mut self.st);
        if let Some(r) = self.ring.as_mut() {
            r.reap().map_err(|e| format!("io_uring: {e}"))?;
        }
        for (i, tun) in built.tuns.iter().enumerate() {
            if self.ring.as_ref().is_some_and(|r| !r.is_ready(i)) {
                continue;
            }
            for _ in 0..BATCH {
                let tag = pool.alloc();
                let n = match tun.recv(pool.slot_mut(tag)) {
                    Ok(Some(n)) => n,
                    Ok(None) => {
                        pool.release(tag);
                        st.reads_empty += 1;
                        if let Some(r) = self.ring.as_mut() {
                            r.idle(i);
                        }
                        break;
                    }
                    Err(e) => {
                        pool.release(tag);
                        return Err(format!("reading {}: {e}", tun.name()));
                    }
                };
                pool.len[tag as usize] = n as u16;
                st.packets_read += 1;
                st.bytes_read += n as u64;
                let Some((sta, dir, leg, key)) = route(built, &lay, i, pool.packet(tag)) else {
                    st.packets_unroutable += 1;
                    pool.release(tag);
                    continue;
                };
                if lay.ap.is_some_and(|(e, w)| i == e || i == w) {
                    st.ap_packets_forwarded += 1;
                }
                let flow = self.flows.of(&mut self.world, key, sta, dir, leg);
                let bytes = pool.packet(tag);
                let tcp = if self.read_tcp { lasthop_sim::world::AckView::parse(bytes) } else { None };
                self.world.inject_tcp(flow, n as u32, tag, crate::ip_ecn::read(bytes), tcp);
            }
        }
        Ok(())
    }

    /// Take the fates the cell reported: a delivery whose instant is still ahead is held until
    /// then (kept in the order of the instants), the rest is written at once, with the held
    /// deliveries that are due by `wnow` (with io_uring, all of them in one submission).
    ///
    /// A write's lateness is taken when it has returned (with io_uring, when the round's
    /// submission has), against the packet's instant in the model.
    fn write(&mut self, wnow: u64, mut live: Option<&mut LogHistogram>) -> Result<(), String> {
        for e in self.fates.drain(..) {
            let at = e.at;
            let i = self.held.partition_point(|x| x.at <= at);
            self.held.insert(i, e);
        }
        let mut any = false;
        while let Some(e) = self.held.front().copied().filter(|e| e.at.as_nanos() <= wnow) {
            self.held.pop_front();
            any = true;
            if let Some(at) = self.emit(e)? {
                if self.ring.is_some() {
                    self.batch_at.push(at);
                } else {
                    record_late(&mut self.lateness, live.as_deref_mut(), ns_since(self.t0).saturating_sub(at));
                }
            }
        }
        if let Some(r) = self.ring.as_mut().filter(|_| any) {
            // The slots released by `emit` keep their bytes until the next `read` allocates
            // them again, after this flush.
            let st = &mut self.st;
            for &res in r.flush().map_err(|e| format!("io_uring: {e}"))? {
                if res >= 0 {
                    st.packets_written += 1;
                    st.bytes_written += res as u64;
                } else {
                    st.tun_write_failures += 1;
                }
            }
            r.clear();
            // Every write of the round has completed by now.
            let now = ns_since(self.t0);
            for at in self.batch_at.drain(..) {
                record_late(&mut self.lateness, live.as_deref_mut(), now.saturating_sub(at));
            }
        }
        self.st.write_rounds += u64::from(any);
        Ok(())
    }

    /// The instant (ns since the start) of the next held delivery, if any.
    fn next_write(&self) -> Option<u64> {
        self.held.front().map(|e| e.at.as_nanos())
    }

    /// Write one delivered packet (CE marks into the header; a pcap record) or forget a dropped
    /// one; the instant (ns) of a packet written (with io_uring, queued).
    fn emit(&mut self, e: ExtEvent) -> Result<Option<u64>, String> {
        let mut written = None;
        let (world, pool, st) = (&mut self.world, &mut self.pool, &mut self.st);
        {
            match e.fate {
                ExtFate::Delivered | ExtFate::Received => {
                    let (sta, dir) = world.flow_route(e.flow);
                    let leg = world.external_leg(e.flow);
                    let dest = self.lay.dest(sta, dir, leg);
                    if e.ce && crate::ip_ecn::read(pool.packet(e.tag)) != lasthop_algo::ecn::Ecn::Ce && crate::ip_ecn::set_ce(pool.packet_mut(e.tag)) {
                        st.ce_marked += 1;
                    }
                    let bytes = pool.packet(e.tag);
                    if let Some(r) = self.ring.as_mut() {
                        // SAFETY: the slot is not allocated again before `write` flushes the
                        // ring (only `read` allocates), so its bytes stay as they are.
                        unsafe { r.queue_write(self.built.tuns[dest].fd(), bytes) }.map_err(|e| format!("io_uring: {e}"))?;
                    } else {
                        match self.built.tuns[dest].send(bytes) {
                            Ok(true) => {
                                st.packets_written += 1;
                                st.bytes_written += bytes.len() as u64;
                            }
                            _ => st.tun_write_failures += 1,
                        }
                    }
                    written = Some(e.at.as_nanos());
                    if let Some(out) = self.pcap_out.as_mut().filter(|_| leg != ExtLeg::Wired) {
                        let txv = world.station_tx(sta as usize);
                        let rt = pcap::radiotap(e.at.as_nanos(), self.band, lasthop_sim::capture::PhyRec::Mcs(txv), false, None);
                        let seq = &mut self.pcap_seq[sta as usize];
                        let frame = pcap::real_data_frame(dir == Dir::Up, sta, *seq, world.qos(), world.flow_tid(e.flow), bytes);
                        *seq = seq.wrapping_add(1);
                        let mut rec = Vec::with_capacity(rt.len() + frame.len() + 16);
                        pcap::push_record(&mut rec, self.epoch_ns + e.at.as_nanos(), &rt, &frame);
                        out.write_all(&rec).map_err(|e| format!("pcap: {e}"))?;
                    }
                }
                ExtFate::Dropped => st.packets_dropped_by_model += 1,
                ExtFate::Released => {}
            }
            // A packet written ahead of the exchange's end stays the model's until `Released`.
            if e.fate != ExtFate::Received {
                pool.release(e.tag);
            }
        }
        Ok(written)
    }

    /// The end of the run at `end`: the model finished there, the pcap flushed, the figures.
    fn finish(mut self, end: u64, telemetry: Option<(Listener, Responder)>) -> Result<(serde_json::Value, EmuStats), String> {
        let n_sta = self.lay.n_sta;
        self.world.step_to(SimInstant(end));
        self.st.ampdu_samples.sample(&self.world, n_sta, end);
        self.world.finish_at(SimInstant(end));
        if let Some(mut out) = self.pcap_out.take() {
            out.flush().map_err(|e| format!("pcap: {e}"))?;
        }
        let (st, lateness) = (&mut self.st, &self.lateness);
        st.wall_ns = end;
        st.flows = self.flows.len() as u64;
        st.lateness_p50_ns = lateness.quantile(0.5);
        st.lateness_p99_ns = lateness.quantile(0.99);
        st.lateness_p999_ns = lateness.quantile(0.999);
        st.lateness_max_ns = lateness.max();
        st.lateness_mean_ns = lateness.mean();
        st.pool_slots = self.pool.len.len() as u64;
        st.telemetry_requests = telemetry.as_ref().map_or(0, |(_, r)| r.requests);
        drop(telemetry);
        let data = serde_json::to_value(lasthop_sim::output::collect(&self.world)).map_err(|e| e.to_string())?;
        Ok((data, self.st))
    }
}

/// Run the cell of `spec` in real time between the TUN devices of `built` until `stop`
/// returns true (checked every few ms) or `opts.run_for` passes. Returns the run's `data`
/// (the simulator's result format, with its flows the 5-tuples seen) and the emulator's own
/// figures.
pub fn run(spec: Spec, built: &Built, opts: &Options, stop: &mut dyn FnMut() -> bool) -> Result<(serde_json::Value, EmuStats), String> {
    let n_sta = spec.stations.len();
    let lay = Layout::of(built);
    let placed = opts.place_programs && opts.cpu.is_some();
    let spin = opts.spin.unwrap_or_else(|| default_spin(placed, lay.ap.is_some(), opts.realtime.is_some()));
    if lay.n_sta != n_sta || built.tuns.len() != lay.tuns() {
        return Err(format!("topology has {} devices for {} stations", built.tuns.len(), n_sta));
    }
    let band = spec.band();
    let mut telemetry = telemetry(built, &spec)?;
    let read_tcp = spec.ap.ack_filter != lasthop_sim::spec::ACK_FILTERS[0];
    let world = World::new_realtime(spec, opts.seed);
    let st = EmuStats { pool_slots: 0, ap_host: lay.ap.is_some(), ..EmuStats::default() };
    let tun_fds: Vec<i32> = built.tuns.iter().map(|t| t.fd()).collect();
    let (ring, io_fallback) = match opts.io {
        Io::Uring => match crate::sys::uring::Ring::new(&tun_fds) {
            Ok(r) => (Some(r), None),
            Err(e) => (None, Some(format!("io_uring: {e}"))),
        },
        Io::Syscalls => (None, None),
    };
    // The thread sleeps on the ring (its completions say which TUN is readable) or on the TUNs.
    let sleep_fds = ring.as_ref().map_or(tun_fds, |r| vec![r.fd()]);
    let mut fds: Vec<libc::pollfd> = sleep_fds.iter().map(|&fd| libc::pollfd { fd, events: libc::POLLIN, revents: 0 }).collect();
    let n_tun_fds = fds.len();
    let io = if ring.is_some() { Io::Uring } else { Io::Syscalls };
    let st = EmuStats { io: io.name(), io_fallback, spin_ns: spin.as_nanos() as u64, ..st };
    let mut c = Cell { built, lay, world, pool: Pool::new(4096), flows: Flows::default(), fates: Vec::with_capacity(4096), ring, batch_at: Vec::with_capacity(1024), t0: Instant::now(), held: std::collections::VecDeque::with_capacity(4096), read_tcp, band, lateness: LogHistogram::new(), st, pcap_out: None, pcap_seq: vec![0u32; n_sta], epoch_ns: 0 };
    // The model thread's CPU and scheduler, restored when the run ends (or fails).
    let mut sched = ThreadSched { affinity: affinity(), pinned: pin_and_tighten(opts.cpu), scheduler: None };
    c.st.cpu = if sched.pinned { opts.cpu } else { None };
    if let Some(prio) = opts.realtime {
        sched.scheduler = Some(set_realtime(prio).map_err(|e| format!("SCHED_FIFO priority {prio}: {e}"))?);
    }
    c.st.realtime = opts.realtime;
    c.pcap_out = open_pcap(opts)?;
    #[allow(clippy::disallowed_methods)] // the emulator's pcap carries wall-clock timestamps
    let epoch_ns = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_nanos() as u64);
    c.epoch_ns = epoch_ns;
    let mut live = LiveStats { last_ns: 0, bytes: vec![[0; 2]; n_sta], air: vec![0; n_sta], ampdu: vec![[0; 2]; n_sta], late: LogHistogram::new() };
    let mut next_stats = opts.stats_every.map(|d| d.as_nanos() as u64);
    let mut next_stop_check = 0u64;
    let end_ns = opts.run_for.map(|d| d.as_nanos() as u64);
    let t0 = Instant::now();
    c.t0 = t0;
    c.st.epoch_ns = epoch_ns;
    let mut next_sample = 0u64;
    loop {
        let now = ns_since(t0);
        c.world.step_to(SimInstant(now));
        if now >= next_sample {
            c.st.ampdu_samples.sample(&c.world, n_sta, now);
            next_sample = now + AMPDU_SAMPLE_NS;
        }
        // Answer the AP host's nl80211 requests (at `now`, like a kernel reading its counters).
        if let Some((l, r)) = telemetry.as_mut() {
            l.serve(&mut |m| r.handle(&mut c.world, m));
            fds.truncate(n_tun_fds);
            fds.extend(l.poll_fds().map(|fd| libc::pollfd { fd, events: libc::POLLIN, revents: 0 }));
        }
        c.read()?;
        c.world.drain_external(&mut c.fates);
        if !c.fates.is_empty() || c.next_write().is_some_and(|t| t <= ns_since(t0)) {
            c.write(ns_since(t0), next_stats.is_some().then_some(&mut live.late))?;
        }
        let wnow = ns_since(t0);
        if let Some(t) = next_stats.filter(|&t| wnow >= t) {
            live.print(&c.world, wnow);
            next_stats = Some(t + opts.stats_every.map_or(0, |d| d.as_nanos() as u64));
        }
        if wnow >= next_stop_check {
            next_stop_check = wnow + 5_000_000;
            if stop() || end_ns.is_some_and(|e| wnow >= e) {
                break;
            }
        }
        // Sleep until the next model event, a packet, or the next housekeeping instant.
        let next = c.world.next_event_at().map_or(u64::MAX, |t| t.as_nanos()).min(c.next_write().unwrap_or(u64::MAX));
        let until = next.min(next_stop_check).min(next_stats.unwrap_or(u64::MAX)).min(next_sample);
        let gap = Duration::from_nanos(until.saturating_sub(ns_since(t0))).min(MAX_SLEEP);
        if gap > spin {
            c.st.wakeups += 1;
            crate::sys::poll::wait(&mut fds, gap - spin);
        }
    }
    let end = ns_since(t0);
    drop(sched);
    c.finish(end, telemetry)
}

/// What `lasthop emu up|run` asks for.
pub struct UpRequest<'a> {
    pub spec_json: &'a str,
    pub name: &'a str,
    pub opts: Options,
    /// `emu run`: the program to run, and the node whose namespace it runs in (None: the
    /// caller's namespace, with `LASTHOP_EMU=name` in its environment).
    pub command: Option<(Vec<String>, Option<String>)>,
}

pub struct UpOutcome {
    pub data: serde_json::Value,
    pub stats: EmuStats,
    /// `emu run`: the command's exit code (128 + signal if a signal ended it).
    pub exit_code: Option<i32>,
}

pub enum UpError {
    /// Found before anything was built: bad spec, bad name, not root, already up.
    User(String),
    Internal(String),
}

/// Build the topology of a spec, run the cell in real time until stopped (a signal, the
/// command's exit, `run_for`), tear everything down, and return the results.
pub fn up(req: UpRequest) -> Result<UpOutcome, UpError> {
    use std::os::unix::process::ExitStatusExt;
    let spec = Spec::from_json(req.spec_json).map_err(UpError::User)?;
    if let Some((path, value, allowed)) = spec.json_problems().first() {
        return Err(UpError::User(format!("{path} = {value}: {allowed}")));
    }
    if !crate::sys::process::is_root() {
        return Err(UpError::User("lasthop emu needs root (CAP_NET_ADMIN)".into()));
    }
    let mut topo = crate::netns::plan(req.name, spec.stations.len(), 1500).map_err(UpError::User)?;
    if spec.emu_or_default().ap_host {
        topo = topo.with_ap_host();
    }
    let signals = crate::sys::signals::StopSignals::install().map_err(|e| UpError::Internal(format!("signal handlers: {e}")))?;
    let mut built = crate::netns::build(topo).map_err(UpError::User)?;
    for n in &built.topo.nodes {
        eprintln!("emu {}: {} {} ({} in netns {})", req.name, n.node, n.addr, n.ifname, n.netns);
    }
    if let Some(ap) = &built.topo.ap {
        eprintln!(
            "emu {}: ap {} ({}) and {} ({}) in netns {}, routing; nl80211 telemetry for {}",
            req.name, ap.wired.addr, ap.wired.ifname, ap.wifi.addr, ap.wifi.ifname, ap.netns, ap.wifi.ifname
        );
    }
    let mut child = None;
    let placed = program_cpus().filter(|_| req.opts.cpu.is_some() && req.opts.place_programs && req.command.is_some());
    if let Some((argv, node)) = &req.command {
        let mut c = match node {
            Some(node) => {
                let Some(ns) = built.topo.netns_of(node) else {
                    built.teardown();
                    return Err(UpError::User(format!("--node = {node:?}: not a node of this cell")));
                };
                let mut c = std::process::Command::new("ip");
                c.args(["netns", "exec", ns]).args(argv);
                c
            }
            None => {
                let mut c = std::process::Command::new(&argv[0]);
                c.args(&argv[1..]);
                c
            }
        };
        c.env("LASTHOP_EMU", req.name);
        if let Some(cpus) = placed.as_deref() {
            use std::os::unix::process::CommandExt;
            let set = crate::sys::sched::cpu_set(cpus);
            // SAFETY: the closure makes one async-signal-safe syscall on the child's own copy.
            unsafe {
                c.pre_exec(move || {
                    crate::sys::sched::set_affinity(&set);
                    Ok(())
                });
            }
        }
        match c.spawn() {
            Ok(ch) => child = Some(ch),
            Err(e) => {
                built.teardown();
                return Err(UpError::User(format!("command {:?}: {e}", argv[0])));
            }
        }
    } else {
        eprintln!("emu {}: running; `lasthop emu exec --name {} NODE -- CMD` to use it, Ctrl-C or `lasthop emu down --name {}` to stop", req.name, req.name, req.name);
    }
    let mut exit_code = None;
    let result = {
        let mut stop = || {
            if signals.stop_requested() {
                return true;
            }
            if let Some(ch) = child.as_mut() {
                if let Ok(Some(status)) = ch.try_wait() {
                    exit_code = Some(status.code().unwrap_or_else(|| 128 + status.signal().unwrap_or(0)));
                    return true;
                }
            }
            false
        };
        run(spec, &built, &req.opts, &mut stop)
    };
    if let Some(mut ch) = child {
        if exit_code.is_none() {
            // Stopped by a signal or the time limit: the command does not outlive the cell.
            // SAFETY: kill(2) with the child's pid, which has not been reaped yet.
            unsafe {
                libc::kill(ch.id() as libc::pid_t, libc::SIGTERM);
            }
            if let Ok(status) = ch.wait() {
                exit_code = Some(status.code().unwrap_or_else(|| 128 + status.signal().unwrap_or(0)));
            }
        }
    }
    built.teardown();
    drop(signals);
    let (data, mut stats) = result.map_err(UpError::Internal)?;
    stats.program_cpus = placed;
    Ok(UpOutcome { data, stats, exit_code })
}

fn cpus_of(set: &libc::cpu_set_t) -> Vec<usize> {
    // SAFETY: CPU_ISSET reads within the set for indices below CPU_SETSIZE.
    (0..libc::CPU_SETSIZE as usize).filter(|&c| unsafe { libc::CPU_ISSET(c, set) }).collect()
}

/// The CPU the model thread is pinned to: the last one the process may run on (the first
/// usually takes interrupts and the programs under test start there), None on one CPU.
pub fn model_cpu() -> Option<usize> {
    let cpus = cpus_of(&affinity()?);
    (cpus.len() > 1).then(|| *cpus.last().expect("non-empty"))
}

/// Busy-polling before a deadline when the programs run off the model's CPU: long enough to
/// cover this host's late `ppoll` wake-ups (up to ~0.1 ms), and it takes no CPU from them.
pub const SPIN_PLACED: Duration = Duration::from_micros(150);
/// Busy-polling when the programs may share the model's CPU (one CPU, `--share-cpu`): short,
/// since every µs spun is taken from a program that could run there.
pub const SPIN_SHARED: Duration = Duration::from_micros(20);

/// The spin when none is given: [`SPIN_PLACED`] when the programs are placed off the model
/// thread's CPU, there is no AP host and the thread is not real-time, else [`SPIN_SHARED`].
/// With the AP host, or under SCHED_FIFO, the longer spin measured worse (docs/emu.md, "On
/// time at 2 Gb/s").
pub fn default_spin(placed: bool, ap_host: bool, realtime: bool) -> Duration {
    if placed && !ap_host && !realtime {
        SPIN_PLACED
    } else {
        SPIN_SHARED
    }
}

/// The CPUs the programs in the namespaces run on (`emu run`'s command, `emu exec`): every CPU
/// the process may use but the model's, so that neither takes the other's CPU at the instant a
/// packet is due (docs/emu.md, "CPU placement"). None on one CPU.
pub fn program_cpus() -> Option<Vec<usize>> {
    let mut cpus = cpus_of(&affinity()?);
    // The model's is the last ([`model_cpu`]); none is left for it on one CPU.
    (cpus.len() > 1).then(|| {
        cpus.pop();
        cpus
    })
}
