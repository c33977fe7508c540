//! `lasthop wqm`: the WQM buffer sizer ("Battling Latency in Modern Wireless Networks",
//! `lasthop_algo::aqm::wqm` — the controller the simulator runs at every forwarding node) as a
//! daemon on a Linux AP, driven by the wall clock.
//!
//! At each measurement instant (every `--interval`) it reads what the AP reports and hands the
//! controller the same inputs the simulator's host does (`World::on_node_tick`):
//!
//! * `R`: the tx bitrate of the station with the longest TXQ backlog (station dump);
//! * `BL`: the backlog of every station's TXQs in octets (station dump, per-TID TXQ stats);
//! * `B_min`: the most full-size MPDUs an A-MPDU at `R` holds — from the emulator's
//!   aggregation extension when offered, otherwise from `R` through the PHY tables
//!   (`lasthop_wifi::mac::frame::max_psdu_for_time`);
//! * the channel survey's cumulative active, busy and transmit time (the controller
//!   differences them into `F`).
//!
//! The limit it asks for goes to the phy-wide TXQ limit (`NL80211_ATTR_TXQ_LIMIT`, mac80211
//! drivers with intermediate TX queues); on an interface without them (a relay's radio, a
//! wired egress) to the root qdisc's packet limit or `txqueuelen` through rtnetlink, with the
//! backlog from the qdisc's statistics and the rate from nl80211 or `--rate`. Until the
//! first measurement the limit is `B_max`, as in the simulator.
//!
//! What it changes is recorded (`statefile.rs`) and restored on SIGINT/SIGTERM/SIGHUP and,
//! after a crash, at its next start.

use super::args::{fmt_duration, Args, UsageError};
use super::daemon::{self, Daemon, Parts, Service};
use super::host::{self, Change, Nl80211, Rtnl};
use super::metrics::{render, Family};
use super::statefile::StateFile;
use crate::nl::nl80211::{self as n, StationInfo, WiphyInfo};
use crate::nl::rtnl::Qdisc;
use crate::nl::socket::{Endpoint, NlError};
use lasthop_algo::aqm::wqm::{ArttParams, ChannelTimes, Wqm, WqmConfig, WqmInput, WqmOutput, WqmVariant};
use lasthop_core::controller::Controller;
use lasthop_core::units::{BitRate, Bytes};
use lasthop_core::{Duration as SimDuration, Instant as SimInstant};
use lasthop_wifi::mac::frame;
use lasthop_wifi::phy::{self, Band, TxVector};
use std::time::{Duration, Instant};

pub const HELP: &str = "\
lasthop wqm: size an AP's transmit queue with WQM (drain time vs a limit, AIMD)

usage: lasthop wqm (--phy PHY | --iface IF) [options]

  --phy PHY            a mac80211 phy with TX queues (phy0, or its index): sets its TXQ limit
  --iface IF           an interface: its phy's TXQ limit if it has TX queues, else its root
                       qdisc's packet limit or txqueuelen (relays, wired egress)
  --spec FILE          take --limit, --interval, --variant and --max-ampdu-time from a
                       scenario spec's [ap] wqm_* and [mac] max_ppdu_time (options given
                       here win)
  --limit DUR          acceptable drain time (default 2.5ms)
  --interval DUR       measurement interval (default 100ms)
  --variant V          aimd (default), aiad, miad, mimd
  --top-rate RATE      the highest rate, for B_max (default 600Mbps, the paper's)
  --b-max N            B_max in packets instead of deriving it from --top-rate
  --packet-size N      octets per packet in the drain-time and ARTT formulas (default 1500)
  --rate RATE          a wired interface's rate (default: its link speed)
  --max-ampdu-time DUR PPDU time limit for deriving B_min from the tx bitrate
                       (default: the standard's aPPDUMaxTime)
  --nl80211 PATH       an emulator AP host's telemetry socket (default: found by itself)
  --metrics ADDR:PORT  serve Prometheus metrics at http://ADDR:PORT/metrics
  --record FILE        append one JSON line per measurement interval
  --duration DUR       stop after DUR (default: until SIGINT/SIGTERM)
  --dry-run            print decisions, change nothing
  --show               print what the AP reports (the limit now, stations, channel) as JSON
                       and exit, changing nothing
  -q, --quiet          no line per decision
";

/// Where the limit goes.
enum Actuator {
    Txq { nl: Nl80211, wiphy: u32 },
    Qdisc { rt: Rtnl, q: Qdisc },
    Txqlen { rt: Rtnl, ifindex: u32 },
}

impl Actuator {
    fn set(&mut self, limit: u32) -> Result<(), NlError> {
        match self {
            Actuator::Txq { nl, wiphy } => nl.set_txq_limit(*wiphy, limit),
            Actuator::Qdisc { rt, q } => rt.set_qdisc_limit(q, limit),
            Actuator::Txqlen { rt, ifindex } => rt.set_txqlen(*ifindex, limit),
        }
    }
}

/// Where the measurements come from.
struct Sensors {
    /// nl80211, and the wireless interfaces whose stations and survey count.
    nl: Option<Nl80211>,
    ifaces: Vec<u32>,
    /// rtnetlink mode: the interface whose root qdisc holds the backlog.
    qdisc_of: Option<(Rtnl, u32)>,
    /// A wired interface's rate.
    fixed_rate: Option<u64>,
    max_ampdu_time: Option<Duration>,
    /// Whether the aggregation extension answered (asked once; real drivers do not).
    aggregation_ext: Option<bool>,
    /// Per station: tx bytes at the previous sample (rtnetlink mode picks the busiest).
    last_tx: Vec<([u8; 6], u64)>,
}

#[derive(Default, Clone, Debug)]
struct Sample {
    rate_bps: u64,
    backlog_bytes: u64,
    backlog_packets: u64,
    drops: u64,
    aggregate: Option<u32>,
    survey: Option<ChannelTimes>,
    station: Option<String>,
    stations: usize,
}

fn band_of(freq_mhz: u32) -> Band {
    if freq_mhz >= 5925 {
        Band::Ghz6
    } else if freq_mhz >= 4900 {
        Band::Ghz5
    } else {
        Band::Ghz2_4
    }
}

/// Most full-size MPDUs one A-MPDU at `tx` holds (1 without aggregation).
fn capacity(tx: &TxVector, band: Band, max_time: Option<Duration>) -> u32 {
    let std = tx.standard;
    let cap = phy::max_ampdu_bytes(std);
    if cap == 0 {
        return 1;
    }
    let t = max_time.map_or(phy::max_ppdu_time(std), |d| SimDuration(d.as_nanos() as u64));
    frame::full_size_mpdus(frame::max_psdu_for_time(tx, band, t, cap), true, phy::ba_window(std) as u32)
}

fn rate_of(s: &StationInfo) -> Option<(u64, Option<TxVector>)> {
    let r = s.tx_bitrate?;
    let tx = r.to_txvector();
    let bps = tx.map_or(r.bitrate_100kbps as u64 * 100_000, |t| t.data_rate_bps());
    (bps > 0).then_some((bps, tx))
}

impl Sensors {
    fn sample(&mut self) -> Result<Sample, String> {
        let mut out = Sample::default();
        let mut band = Band::Ghz5;
        let mut best: Option<(StationInfo, u64)> = None;
        if let Some(nl) = self.nl.as_mut() {
            for &ifi in &self.ifaces {
                if let Some(sv) = nl.survey(ifi).map_err(|e| format!("survey dump: {e}"))? {
                    band = band_of(sv.freq_mhz);
                    if out.survey.is_none() {
                        if let (Some(t), Some(b)) = (sv.time_ms, sv.busy_ms) {
                            let ms = |v: u64| SimDuration(v.saturating_mul(1_000_000));
                            out.survey = Some(ChannelTimes { active: ms(t), busy: ms(b), tx: ms(sv.tx_ms.unwrap_or(0)) });
                        }
                    }
                }
                let stations = nl.stations(ifi).map_err(|e| format!("station dump: {e}"))?;
                out.stations += stations.len();
                for s in stations {
                    let q = s.txq_total().unwrap_or_default();
                    out.backlog_bytes += q.backlog_bytes.unwrap_or(0) as u64;
                    out.backlog_packets += q.backlog_packets.unwrap_or(0) as u64;
                    out.drops += q.drops.unwrap_or(0) as u64 + q.overlimit.unwrap_or(0) as u64;
                    // TXQ mode: the longest backlog; qdisc mode (no per-station queues): the
                    // station that took the most bytes since the last sample.
                    let key = if self.qdisc_of.is_some() {
                        let tx = s.tx_bytes.unwrap_or(0);
                        let prev = self.last_tx.iter().find(|(m, _)| *m == s.mac).map_or(0, |x| x.1);
                        match self.last_tx.iter_mut().find(|(m, _)| *m == s.mac) {
                            Some(e) => e.1 = tx,
                            None => self.last_tx.push((s.mac, tx)),
                        }
                        tx.saturating_sub(prev)
                    } else {
                        q.backlog_packets.unwrap_or(0) as u64
                    };
                    if rate_of(&s).is_some() && best.as_ref().is_none_or(|(_, k)| key > *k) {
                        best = Some((s, key));
                    }
                }
            }
        }
        if let Some((rt, ifi)) = self.qdisc_of.as_mut() {
            let q = rt.root_qdisc(*ifi).map_err(|e| format!("qdisc statistics: {e}"))?.ok_or("the root qdisc is gone")?;
            out.backlog_bytes = q.backlog_bytes.unwrap_or(0) as u64;
            out.backlog_packets = q.qlen.unwrap_or(0) as u64;
            out.drops = q.drops.unwrap_or(0) as u64;
        }
        if let Some((s, _)) = best {
            let (bps, tx) = rate_of(&s).expect("a rate");
            out.rate_bps = bps;
            out.station = Some(n::mac_text(&s.mac));
            // The emulator's extension first (asked until it says it has none).
            if self.aggregation_ext != Some(false) {
                let ifi = self.ifaces[0];
                let a = self.nl.as_mut().expect("nl80211").aggregation(ifi).map_err(|e| format!("aggregation: {e}"))?;
                self.aggregation_ext = Some(a.is_some());
                out.aggregate = a.and_then(|a| a.stations.iter().find(|x| x.mac == s.mac).map(|x| x.capacity));
            }
            if out.aggregate.is_none() {
                out.aggregate = tx.map(|t| capacity(&t, band, self.max_ampdu_time));
            }
        } else if let Some(r) = self.fixed_rate {
            out.rate_bps = r;
            out.aggregate = Some(1);
        }
        Ok(out)
    }
}

/// One line to print and exit 2 for a user error; Err(other) for failures while running.
enum Fail {
    Usage(String),
    Run(String),
}

impl From<UsageError> for Fail {
    fn from(e: UsageError) -> Fail {
        Fail::Usage(e.0)
    }
}

fn usage(s: impl Into<String>) -> Fail {
    Fail::Usage(format!("wqm: {}", s.into()))
}

fn nl_usage(e: NlError, what: &str) -> Fail {
    match e.errno() {
        Some(libc::EPERM) | Some(libc::EACCES) => usage(format!("{what}: not permitted (needs CAP_NET_ADMIN; run as root)")),
        _ => usage(format!("{what}: {e}")),
    }
}

struct Setup {
    actuator: Actuator,
    sensors: Sensors,
    change: Change,
    target: String,
}

/// Find what `--phy`/`--iface` name and how to sense and act on it. Changes nothing.
fn resolve(phy: Option<String>, iface: Option<String>, nl_path: Option<String>, rate: Option<u64>, max_ampdu_time: Option<Duration>) -> Result<Setup, Fail> {
    let endpoint = host::nl80211_endpoint(nl_path.as_deref().map(std::path::Path::new));
    if let (Some(p), Endpoint::Unix(_)) = (&nl_path, &endpoint) {
        if !std::path::Path::new(p).exists() {
            return Err(usage(format!("--nl80211 = {p:?}: no such socket")));
        }
    }
    let nl = Nl80211::open(&endpoint).map_err(usage)?;
    let socket = match &endpoint {
        Endpoint::Unix(p) => Some(p.clone()),
        Endpoint::Kernel(_) => None,
    };
    let mut sensors = Sensors { nl: None, ifaces: Vec::new(), qdisc_of: None, fixed_rate: rate, max_ampdu_time, aggregation_ext: None, last_tx: Vec::new() };
    let txq_mode = |mut nl: Nl80211, w: WiphyInfo, mut sensors: Sensors| -> Result<Setup, Fail> {
        let ifaces: Vec<u32> = nl.interfaces().map_err(|e| nl_usage(e, "interface dump"))?.into_iter().filter(|i| i.wiphy == w.index && matches!(i.iftype, n::IFTYPE_AP | n::IFTYPE_MESH_POINT)).map(|i| i.ifindex).collect();
        if ifaces.is_empty() {
            return Err(usage(format!("{} has no AP or mesh interface to read stations from", w.name)));
        }
        let original = w.txq_limit.ok_or_else(|| usage(format!("{} reports no TXQ limit", w.name)))?;
        let nl_act = Nl80211::open(nl.endpoint()).map_err(usage)?.expect("nl80211 answered before");
        sensors.ifaces = ifaces;
        sensors.nl = Some(nl);
        Ok(Setup {
            actuator: Actuator::Txq { nl: nl_act, wiphy: w.index },
            change: Change::TxqLimit { socket: socket.clone(), wiphy: w.index, phy: w.name.clone(), original },
            target: w.name.clone(),
            sensors,
        })
    };
    match (phy, iface) {
        (Some(_), Some(_)) => Err(usage("--phy and --iface: give one")),
        (None, None) => Err(usage("which queue? give --phy PHY or --iface IF")),
        (Some(p), None) => {
            let Some(mut nl) = nl else {
                return Err(usage(format!("--phy = {p:?}: no wireless here (the kernel has no nl80211) and no emulator AP-host telemetry")));
            };
            let phys = nl.wiphys().map_err(|e| nl_usage(e, "wiphy dump"))?;
            let Some(w) = phys.iter().find(|w| w.name == p || w.index.to_string() == p).cloned() else {
                let names: Vec<&str> = phys.iter().map(|w| w.name.as_str()).collect();
                return Err(usage(format!("--phy = {p:?}: no such phy (phys: {})", if names.is_empty() { "none".into() } else { names.join(", ") })));
            };
            if !w.has_ext_feature(n::EXT_FEATURE_TXQS) {
                return Err(usage(format!("--phy = {p:?}: its driver has no mac80211 TX queues; size its interface's qdisc with --iface IF")));
            }
            txq_mode(nl, w, sensors)
        }
        (None, Some(ifname)) => {
            let Some(ifi) = host::ifindex(&ifname) else {
                return Err(usage(format!("--iface = {ifname:?}: no such interface")));
            };
            let mut wireless = None;
            if let Some(mut nl) = nl {
                match nl.interface(ifi) {
                    Ok(i) => {
                        let w = nl.wiphy(i.wiphy).map_err(|e| nl_usage(e, "wiphy dump"))?;
                        wireless = Some((nl, i, w));
                    }
                    Err(e) if matches!(e.errno(), Some(libc::ENODEV) | Some(libc::EINVAL) | Some(libc::EOPNOTSUPP)) => {}
                    Err(e) => return Err(nl_usage(e, "interface lookup")),
                }
            }
            if let Some((nl, i, w)) = wireless {
                if w.has_ext_feature(n::EXT_FEATURE_TXQS) && i.iftype != n::IFTYPE_STATION {
                    return txq_mode(nl, w, sensors);
                }
                sensors.nl = Some(nl);
                sensors.ifaces = vec![ifi];
            } else if rate.is_none() {
                let speed = std::fs::read_to_string(format!("/sys/class/net/{ifname}/speed")).ok().and_then(|s| s.trim().parse::<i64>().ok()).filter(|&s| s > 0);
                match speed {
                    Some(mbps) => sensors.fixed_rate = Some(mbps as u64 * 1_000_000),
                    None => return Err(usage(format!("--iface = {ifname:?}: not wireless and no link speed; give its rate with --rate"))),
                }
            }
            let mut rt = Rtnl::open().map_err(usage)?;
            let link = rt.link(&ifname).map_err(|e| nl_usage(e, "link lookup"))?;
            let root = rt.root_qdisc(ifi).map_err(|e| nl_usage(e, "qdisc dump"))?;
            let (actuator, change) = match root {
                Some(q) if Qdisc::limit_kind(&q.kind) => {
                    let original = q.limit.ok_or_else(|| usage(format!("the {} qdisc of {ifname} reports no limit", q.kind)))?;
                    let c = Change::QdiscLimit { ifname: ifname.clone(), ifindex: ifi, qdisc: q.kind.clone(), handle: q.handle, original };
                    (Actuator::Qdisc { rt: Rtnl::open().map_err(usage)?, q }, c)
                }
                Some(q) if q.kind != "pfifo_fast" => {
                    return Err(usage(format!("--iface = {ifname:?}: its root qdisc {} has no single packet limit (pfifo, fq_codel, codel, pie, fq or pfifo_fast can be sized)", q.kind)));
                }
                _ => {
                    let original = link.txqlen.ok_or_else(|| usage(format!("{ifname} reports no txqueuelen")))?;
                    (Actuator::Txqlen { rt: Rtnl::open().map_err(usage)?, ifindex: ifi }, Change::Txqlen { ifname: ifname.clone(), ifindex: ifi, original })
                }
            };
            sensors.qdisc_of = Some((rt, ifi));
            Ok(Setup { actuator, sensors, change, target: ifname })
        }
    }
}

pub fn main(argv: &[String]) -> i32 {
    match run(argv) {
        Ok(code) => code,
        Err(Fail::Usage(e)) => {
            eprintln!("lasthop {e}");
            2
        }
        Err(Fail::Run(e)) => {
            eprintln!("lasthop wqm: {e}");
            1
        }
    }
}

/// The options, read and checked.
struct Opts {
    quiet: bool,
    dry: bool,
    show: bool,
    phy: Option<String>,
    iface: Option<String>,
    limit: Duration,
    interval: Duration,
    rate: Option<u64>,
    max_ampdu_time: Option<Duration>,
    nl_path: Option<String>,
    metrics: Option<String>,
    record: Option<String>,
    run_for: Option<Duration>,
    cfg: WqmConfig,
}

/// Read the options (None: `--help` was printed).
fn parse(argv: &[String]) -> Result<Option<Opts>, Fail> {
    let mut a = Args::parse(
        "wqm",
        argv,
        &["dry-run", "quiet", "show"],
        &["phy", "iface", "spec", "limit", "interval", "variant", "top-rate", "b-max", "packet-size", "rate", "max-ampdu-time", "nl80211", "metrics", "record", "duration"],
    )?;
    if a.help() {
        print!("{HELP}");
        return Ok(None);
    }
    if let Some(path) = a.value("spec") {
        super::spec_opts::wqm(&mut a, &path)?;
    }
    let quiet = a.flag("quiet");
    let dry = a.flag("dry-run");
    let show = a.flag("show");
    let phy = a.value("phy");
    let iface = a.value("iface");
    let limit = a.duration("limit", Duration::from_micros(2500), Duration::from_micros(100), Duration::from_secs(1))?;
    let interval = a.duration("interval", Duration::from_millis(100), Duration::from_millis(10), Duration::from_secs(10))?;
    let variant = match a.choice("variant", "aimd", &["aimd", "aiad", "miad", "mimd"])?.as_str() {
        "aiad" => WqmVariant::Aiad,
        "miad" => WqmVariant::Miad,
        "mimd" => WqmVariant::Mimd,
        _ => WqmVariant::Aimd,
    };
    let top_rate = a.rate_bps("top-rate", 1_000_000, 100_000_000_000)?;
    let b_max = a.uint("b-max", 1, 1 << 20)?;
    let packet_size = a.uint("packet-size", 64, 65_535)?.unwrap_or(1500);
    let rate = a.rate_bps("rate", 100_000, 1_000_000_000_000)?;
    let max_ampdu_time = a.duration_opt("max-ampdu-time", Duration::from_micros(100), Duration::from_millis(10))?;
    let nl_path = a.value("nl80211");
    let metrics = a.value("metrics");
    let record = a.value("record");
    let run_for = daemon::duration_option(&mut a)?;
    a.finish(0)?;
    let mut cfg = WqmConfig { interval: SimDuration(interval.as_nanos() as u64), limit: SimDuration(limit.as_nanos() as u64), variant, packet_size: Bytes(packet_size), b_max: b_max.map(|b| b as u32), ..WqmConfig::default() };
    if let Some(r) = top_rate {
        cfg.top_rate = BitRate(r);
    }
    cfg.validate().map_err(|e| usage(e.to_string()))?;
    Ok(Some(Opts { quiet, dry, show, phy, iface, limit, interval, rate, max_ampdu_time, nl_path, metrics, record, run_for, cfg }))
}

fn run(argv: &[String]) -> Result<i32, Fail> {
    let Some(o) = parse(argv)? else { return Ok(0) };
    // Everything that can fail for a user's reason fails here, before any change.
    let exporter = daemon::start_metrics(o.metrics.as_deref()).map_err(usage)?;
    let record = o.record.as_deref().map(daemon::open_record).transpose().map_err(usage)?;
    let mut setup = resolve(o.phy.clone(), o.iface.clone(), o.nl_path.clone(), o.rate, o.max_ampdu_time)?;
    if o.show {
        return show(&mut setup).map(|()| 0);
    }
    // Equations (6)–(7) with this band's SIFS and the BE parameters, as the simulator's host.
    let first = setup.sensors.sample().map_err(usage)?;
    let sensors = &mut setup.sensors;
    let band = sensors.nl.as_mut().and_then(|nl| sensors.ifaces.first().and_then(|&i| nl.survey(i).ok().flatten())).map_or(Band::Ghz5, |s| band_of(s.freq_mhz));
    let t = phy::mac_timing(phy::Standard::Ht, band);
    let mut cfg = o.cfg;
    cfg.artt = ArttParams { t_slot: t.slot, cw_min: 16, t_difs: t.sifs + t.slot * 3, t_sifs: t.sifs, ..ArttParams::default() };
    cfg.validate().map_err(|e| usage(e.to_string()))?;
    let state = if o.dry { None } else { Some(take_over(&o, &mut setup)?) };
    let ctl = Wqm::new(cfg, SimInstant::ZERO).map_err(|e| usage(e.to_string()))?;
    let mut d = Daemon::start("wqm", o.quiet, Parts { run_for: o.run_for, exporter, record, state }).map_err(Fail::Run)?;
    let Setup { actuator, sensors, target, .. } = setup;
    let mut sizer = Sizer { ctl, actuator, sensors, target, limit: o.limit, dry: o.dry, applied: None, t0: Instant::now(), warned: false, n_ok: 0, n_fail: 0 };
    if !o.quiet {
        sizer.announce(o.interval, first.stations);
    }
    // Until its initial stage has a rate to work with, the buffer is the largest the sizer
    // would choose (as in the simulator).
    let b_max = sizer.ctl.b_max();
    let result = sizer.apply(b_max).and_then(|()| {
        sizer.t0 = Instant::now();
        d.run(&mut sizer)
    });
    let mut code = 0;
    if let Err(e) = &result {
        eprintln!("lasthop wqm: {e}");
        code = 1;
    }
    if !d.finish() {
        code = 1;
    }
    if !o.quiet {
        let st = sizer.ctl.stats();
        eprintln!("wqm: {} intervals ({} increases, {} decreases), {} samples, {} failed reads", st.intervals, st.increases, st.decreases, sizer.n_ok, sizer.n_fail);
    }
    Ok(code)
}

/// `--show`: what the AP reports, as JSON, changing nothing.
fn show(setup: &mut Setup) -> Result<(), Fail> {
    let s = setup.sensors.sample().map_err(usage)?;
    let change = &setup.change;
    let doc = serde_json::json!({
        "target": setup.target,
        "via": setup.sensors.nl.as_ref().map_or("rtnetlink".to_string(), |nl| host::endpoint_text(nl.endpoint())),
        "limit": change.original(),
        "what": change.describe(),
        "stations": s.stations,
        "busiest_station": s.station,
        "rate_bps": s.rate_bps,
        "backlog_bytes": s.backlog_bytes,
        "backlog_packets": s.backlog_packets,
        "drops": s.drops,
        "aggregate": s.aggregate,
        "survey_ms": s.survey.map(|c| serde_json::json!({
            "active": c.active.as_nanos() / 1_000_000, "busy": c.busy.as_nanos() / 1_000_000, "tx": c.tx.as_nanos() / 1_000_000})),
    });
    println!("{doc}");
    Ok(())
}

/// Claim the restore record (putting back what a crashed wqm left, and then looking again:
/// what is there now is the original), check permission and support by writing the value
/// that is there, and record the change before any other is made.
fn take_over(o: &Opts, setup: &mut Setup) -> Result<StateFile, Fail> {
    let (mut sf, restored) = daemon::claim("wqm", &setup.target).map_err(usage)?;
    if restored {
        match resolve(o.phy.clone(), o.iface.clone(), o.nl_path.clone(), o.rate, o.max_ampdu_time) {
            Ok(s) => (setup.actuator, setup.sensors, setup.change) = (s.actuator, s.sensors, s.change),
            Err(e) => {
                sf.release();
                return Err(e);
            }
        }
    }
    if let Err(e) = setup.actuator.set(setup.change.original()) {
        sf.release();
        return Err(nl_usage(e, &format!("set {}", setup.change.describe())));
    }
    sf.add(setup.change.clone()).map_err(Fail::Run)?;
    Ok(sf)
}

/// The running sizer: the controller, where it reads and where it acts.
struct Sizer {
    ctl: Wqm,
    actuator: Actuator,
    sensors: Sensors,
    target: String,
    limit: Duration,
    dry: bool,
    /// The limit in force (as far as this tool set it).
    applied: Option<u32>,
    t0: Instant,
    warned: bool,
    n_ok: u64,
    n_fail: u64,
}

impl Sizer {
    fn announce(&self, interval: Duration, stations: usize) {
        let target = &self.target;
        let what = match &self.actuator {
            Actuator::Txq { .. } => format!("the TXQ limit of {target}"),
            Actuator::Qdisc { q, .. } => format!("the {} limit of {target}", q.kind),
            Actuator::Txqlen { .. } => format!("txqueuelen of {target}"),
        };
        eprintln!(
            "wqm: sizing {what} via {}{}: limit {}, interval {}, B_max {} packets, {} station(s); Ctrl-C restores it",
            self.sensors.nl.as_ref().map_or("rtnetlink".to_string(), |nl| host::endpoint_text(nl.endpoint())),
            if self.dry { " (dry run)" } else { "" },
            fmt_duration(self.limit),
            fmt_duration(interval),
            self.ctl.b_max(),
            stations
        );
    }

    /// Set the limit to `b` unless it is in force already (a dry run only notes it).
    fn apply(&mut self, b: u32) -> Result<(), String> {
        if self.applied == Some(b) {
            return Ok(());
        }
        if !self.dry {
            self.actuator.set(b).map_err(|e| format!("set the limit to {b}: {e}"))?;
        }
        self.applied = Some(b);
        Ok(())
    }

    /// Hand the controller one sample, the inputs the simulator's host hands it, and apply
    /// what it decides.
    fn decide(&mut self, now: SimInstant, s: &Sample) -> Result<(), String> {
        let ctl = &mut self.ctl;
        if s.rate_bps > 0 {
            ctl.handle_input(now, WqmInput::TxRate(BitRate(s.rate_bps)));
        }
        ctl.handle_input(now, WqmInput::BacklogBytes(Bytes(s.backlog_bytes)));
        if let Some(k) = s.aggregate {
            ctl.handle_input(now, WqmInput::AggregateLength(k));
        }
        if let Some(c) = s.survey {
            ctl.handle_input(now, WqmInput::ChannelSurvey(c));
        }
        ctl.handle_timeout(now);
        while let Some(WqmOutput::SetLimit(b)) = self.ctl.poll_output() {
            self.apply(b)?;
        }
        Ok(())
    }

    /// One interval's decision line (when the limit moved), record line and metrics.
    fn report(&self, d: &mut Daemon, now: SimInstant, s: &Sample, before: Option<u32>) {
        let v = *self.ctl.vars();
        let t_s = now.as_nanos() as f64 / 1e9;
        let drain_ms = v.t_drain.map(|d| d.as_nanos() as f64 / 1e6);
        let free = v.f.free.as_nanos() as f64 / v.f.total.as_nanos().max(1) as f64;
        if !d.quiet() && self.applied != before {
            eprintln!(
                "wqm: t={t_s:.1}s limit {} -> {} packets (T_drain {} vs {}; R {:.1} Mb/s, backlog {} B, F {:.2}, B_min {}{})",
                before.map_or("-".into(), |b| b.to_string()),
                self.applied.unwrap_or(0),
                drain_ms.map_or("-".into(), |d| format!("{d:.2} ms")),
                fmt_duration(self.limit),
                s.rate_bps as f64 / 1e6,
                s.backlog_bytes,
                free,
                v.b_min,
                s.station.as_ref().map_or(String::new(), |m| format!(", station {m}")),
            );
        }
        d.write_record(&serde_json::json!({
            "t_s": t_s, "limit": self.applied, "b": v.b, "b_min": v.b_min, "rate_bps": s.rate_bps,
            "backlog_bytes": s.backlog_bytes, "backlog_packets": s.backlog_packets,
            "free_fraction": free,
            "t_drain_ms": drain_ms, "station": s.station, "drops": s.drops,
        }));
        d.publish(|| metrics_text(&self.ctl, s, self.applied, &self.target));
    }
}

impl Service for Sizer {
    /// Sleep until the controller's next measurement instant, then sample, decide and apply.
    fn round(&mut self, d: &mut Daemon) -> Result<bool, String> {
        let due = self.ctl.poll_timeout().expect("WQM always has a next instant");
        let now = SimInstant(self.t0.elapsed().as_nanos() as u64);
        if now < due {
            std::thread::sleep(Duration::from_nanos((due - now).as_nanos()).min(Duration::from_millis(50)));
            return Ok(true);
        }
        let s = match self.sensors.sample() {
            Ok(s) => s,
            Err(e) => {
                self.n_fail += 1;
                if !self.warned {
                    eprintln!("wqm: reading the AP failed, retrying: {e}");
                    self.warned = true;
                }
                std::thread::sleep(Duration::from_millis(20));
                return Ok(true);
            }
        };
        self.n_ok += 1;
        let before = self.applied;
        let decided = self.decide(now, &s);
        self.report(d, now, &s, before);
        decided.map(|()| true)
    }
}

fn metrics_text(ctl: &Wqm, s: &Sample, applied: Option<u32>, target: &str) -> String {
    let v = ctl.vars();
    let st = ctl.stats();
    let l = format!("target=\"{target}\"");
    let g = |name, help, val: f64| Family { name, help, kind: "gauge", samples: vec![(l.clone(), val)] };
    let c = |name, help, val: f64| Family { name, help, kind: "counter", samples: vec![(l.clone(), val)] };
    render(&[
        g("lasthop_wqm_limit_packets", "The queue limit in force.", applied.unwrap_or(0) as f64),
        g("lasthop_wqm_b_min_packets", "B_min: the A-MPDU length in use.", v.b_min as f64),
        g("lasthop_wqm_b_max_packets", "B_max from the top rate.", ctl.b_max() as f64),
        g("lasthop_wqm_drain_time_seconds", "T_drain at the last interval.", v.t_drain.map_or(f64::NAN, |d| d.as_nanos() as f64 / 1e9)),
        g("lasthop_wqm_backlog_bytes", "Bytes queued at the last sample.", s.backlog_bytes as f64),
        g("lasthop_wqm_backlog_packets", "Packets queued at the last sample.", s.backlog_packets as f64),
        g("lasthop_wqm_tx_rate_bps", "R: the tx bitrate used.", s.rate_bps as f64),
        g("lasthop_wqm_free_fraction", "F: the channel's free fraction.", v.f.free.as_nanos() as f64 / v.f.total.as_nanos().max(1) as f64),
        c("lasthop_wqm_drops_total", "Packets the queues dropped (as reported).", s.drops as f64),
        c("lasthop_wqm_intervals_total", "Measurement intervals evaluated.", st.intervals as f64),
        c("lasthop_wqm_increases_total", "Limit increases.", st.increases as f64),
        c("lasthop_wqm_decreases_total", "Limit decreases.", st.decreases as f64),
    ])
}

#[cfg(test)]
mod tests {
    use super::*;
    use lasthop_wifi::phy::Standard;

    #[test]
    fn capacity_from_a_rate_matches_the_simulators_rule() {
        // HT MCS 7 at 20 MHz, 10 ms PPDU limit, 65535-octet A-MPDUs: 42 full-size MPDUs
        // (65535 / (1538 + 4) = 42.5), below the 64-MPDU window.
        let tx = TxVector::new(Standard::Ht, 7, 1, 20, 800);
        assert_eq!(capacity(&tx, Band::Ghz5, None), 42);
        // At 6.5 Mb/s the 10 ms limit allows 5 MPDUs.
        assert_eq!(capacity(&TxVector::new(Standard::Ht, 0, 1, 20, 800), Band::Ghz5, None), 5);
        assert_eq!(capacity(&TxVector::ofdm(7), Band::Ghz5, None), 1);
    }
}
