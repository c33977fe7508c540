//! `lasthop vwire`: the Virtual Wires split proxy ("Virtual Wires: Rethinking WiFi networks",
//! Yang, Jiang, Misra, Rubenstein) on a Linux AP — transparent TCP splitting with TPROXY
//! (`rules.rs`), a relay per connection (`relay.rs`), and the deciders the simulator runs
//! (`lasthop_algo::control::vwire::SplitProxy`): every period (2 s) each flow is classified
//! from its segments, measured (its station's acknowledged bytes), and given a rate from the
//! utility-maximising airtime allocation over its station's link rate (nl80211 tx bitrate ×
//! efficiency); while the WiFi side is the bottleneck (the summed WiFi-side socket backlog,
//! sampled every 10 ms) the writes into the WiFi-side sockets follow the token scheduler.
//!
//! The Virtual Wires method is covered by Columbia University patents (US 10,687,341 B2 and
//! US 11,297,634).

pub mod policy;
pub mod relay;
pub mod rules;

use super::args::{fmt_duration, Args, UsageError};
use super::daemon::{self, Daemon, Parts, Service};
use super::host::{self, Nl80211, Rtnl};
use super::metrics::{render, Family};
use super::statefile::StateFile;
use lasthop_algo::control::vwire::{ControllerConfig, Forest, ProxyConfig, SplitProxy};
use lasthop_core::{Duration as SimDuration, Instant as SimInstant};
use policy::Policy;
use relay::{Relay, RelayConfig};
use std::collections::BTreeMap;
use std::net::Ipv4Addr;
use std::time::{Duration, Instant};

pub const HELP: &str = "\
lasthop vwire: the Virtual Wires split proxy for a Linux AP (TPROXY)

usage: lasthop vwire [options]

  --wifi-iface IF       the AP's WiFi interface: connections stations open through it are
                        split (default wlan0)
  --spec FILE           take --period, --efficiency, --relay-buffer, --sndbuf,
                        --window-clamp, --no-vwire from a scenario spec's [vwire] and
                        --wired-cc from its split flows
                        (options given here win)
  --wired-cc CC         congestion control towards the servers (default bbr)
  --wifi-cc CC          congestion control towards the stations (default cubic)
  --utilities FILE      per-flow classes, utilities and device types (TOML [[flow]] rules)
  --period DUR          feedback period (default 2s)
  --efficiency F        L_i = the station's tx bitrate x F (default 0.75)
  --no-vwire            split only: no classifier, optimizer or token scheduler
  --server-ports LIST   split only connections to these ports (e.g. 80,443,5201-5210)
  --port N              the transparent listener's port (default 19528)
  --relay-buffer BYTES  relay buffer per flow (default 4194304)
  --sndbuf BYTES        what a WiFi-side socket may hold unacknowledged (default 262144)
  --window-clamp BYTES  the most a station's upload may have in flight, so the most it
                        holds in the station's own queue (4096..=relay buffer; default
                        none): TCP_WINDOW_CLAMP and SO_RCVBUF of that size on the
                        WiFi-side sockets
  --max-flows N         flows the allocator manages at once (default 256; later ones are
                        relayed unmanaged)
  --max-conns N         connections at once (default 10000)
  --nl80211 PATH        an emulator AP host's telemetry socket (default: found by itself)
  --stats SECONDS       live view on stderr every SECONDS (default 2; 0 off)
  --metrics ADDR:PORT   serve Prometheus metrics at http://ADDR:PORT/metrics
  --record FILE         append one JSON line per period
  --duration DUR        stop after DUR
  --drain DUR           on stop, let open connections finish this long (default 5s)
  -q, --quiet           no live view
";

fn usage(s: impl Into<String>) -> UsageError {
    UsageError(format!("vwire: {}", s.into()))
}

/// Where link rates come from: the stations of the WiFi interface (nl80211) and how to map a
/// client address to one.
struct Stations {
    nl: Option<Nl80211>,
    ifindex: u32,
    rt: Option<Rtnl>,
    /// Client address → (MAC, tx bitrate bit/s), refreshed every period.
    rate_of: BTreeMap<Ipv4Addr, ([u8; 6], u64)>,
    mean_rate: u64,
}

impl Stations {
    fn refresh(&mut self) -> Result<(), String> {
        let Some(nl) = self.nl.as_mut() else { return Ok(()) };
        let st = nl.stations(self.ifindex).map_err(|e| format!("station dump: {e}"))?;
        let mut by_mac: BTreeMap<[u8; 6], u64> = BTreeMap::new();
        for s in &st {
            if let Some(r) = s.tx_bitrate {
                let bps = r.to_txvector().map_or(r.bitrate_100kbps as u64 * 100_000, |t| t.data_rate_bps());
                by_mac.insert(s.mac, bps);
            }
        }
        self.mean_rate = if by_mac.is_empty() { 0 } else { by_mac.values().sum::<u64>() / by_mac.len() as u64 };
        self.rate_of.clear();
        // The emulator tells each station's address; a real AP's neighbour table does.
        if let Some(agg) = nl.aggregation(self.ifindex).map_err(|e| format!("aggregation: {e}"))? {
            for a in agg.stations {
                if let (Some(ip), Some(&r)) = (a.ipv4, by_mac.get(&a.mac)) {
                    self.rate_of.insert(ip, (a.mac, r));
                }
            }
        }
        if let Some(rt) = self.rt.as_mut() {
            for nb in rt.neighbours(self.ifindex).unwrap_or_default() {
                if let Ok(mac) = <[u8; 6]>::try_from(nb.lladdr.as_slice()) {
                    if let Some(&r) = by_mac.get(&mac) {
                        self.rate_of.entry(nb.ipv4).or_insert((mac, r));
                    }
                }
            }
        }
        Ok(())
    }

    /// The tx bitrate towards `client`; the mean over stations when its station is unknown.
    fn rate(&self, client: Ipv4Addr) -> u64 {
        self.rate_of.get(&client).map_or(self.mean_rate, |x| x.1)
    }
}

struct Opts {
    wifi_iface: String,
    wired_cc: String,
    wifi_cc: String,
    policy: Policy,
    period: Duration,
    efficiency: f64,
    enabled: bool,
    server_ports: Vec<(u16, u16)>,
    port: u16,
    relay_buffer: usize,
    sndbuf: u64,
    window_clamp: Option<u32>,
    max_flows: usize,
    max_conns: usize,
    nl_path: Option<String>,
    stats_every: Option<Duration>,
    metrics: Option<String>,
    record: Option<String>,
    duration: Option<Duration>,
    drain: Duration,
    quiet: bool,
}

fn parse(argv: &[String]) -> Result<Option<Opts>, UsageError> {
    let mut a = Args::parse(
        "vwire",
        argv,
        &["no-vwire", "quiet"],
        &["spec", "wifi-iface", "wired-cc", "wifi-cc", "utilities", "period", "efficiency", "server-ports", "port", "relay-buffer", "sndbuf", "window-clamp", "max-flows", "max-conns", "nl80211", "stats", "metrics", "record", "duration", "drain"],
    )?;
    if a.help() {
        print!("{HELP}");
        return Ok(None);
    }
    if let Some(path) = a.value("spec") {
        crate::tools::spec_opts::vwire(&mut a, &path)?;
    }
    let quiet = a.flag("quiet");
    let enabled = !a.flag("no-vwire");
    let wifi_iface = a.value("wifi-iface").unwrap_or_else(|| "wlan0".into());
    let wired_cc = a.value("wired-cc").unwrap_or_else(|| "bbr".into());
    let wifi_cc = a.value("wifi-cc").unwrap_or_else(|| "cubic".into());
    let policy = match a.value("utilities") {
        Some(p) => {
            let text = std::fs::read_to_string(&p).map_err(|e| usage(format!("--utilities = {p:?}: {e}")))?;
            Policy::parse(&text).map_err(|e| usage(format!("--utilities {p}: {e}")))?
        }
        None => Policy::default(),
    };
    let period = a.duration("period", Duration::from_secs(2), Duration::from_millis(100), Duration::from_secs(60))?;
    let efficiency = match a.value("efficiency") {
        Some(v) => v.parse::<f64>().ok().filter(|x| *x > 0.0 && *x <= 1.0).ok_or_else(|| a.err("efficiency", &v, "a number in (0, 1]"))?,
        None => 0.75,
    };
    let server_ports = match a.value("server-ports") {
        Some(v) => parse_ports(&v).ok_or_else(|| a.err("server-ports", &v, "ports or ranges 1..65535, like 80,443,5201-5210"))?,
        None => Vec::new(),
    };
    let port = a.uint("port", 1, 65535)?.unwrap_or(19528) as u16;
    let relay_buffer = a.uint("relay-buffer", 65536, 1 << 30)?.unwrap_or(4 << 20) as usize;
    let sndbuf = a.uint("sndbuf", 4096, 1 << 28)?.unwrap_or(256 << 10);
    let window_clamp = a.uint("window-clamp", 4096, relay_buffer as u64)?.map(|c| c as u32);
    let max_flows = a.uint("max-flows", 1, 1024)?.unwrap_or(256) as usize;
    let max_conns = a.uint("max-conns", 1, 1_000_000)?.unwrap_or(10_000) as usize;
    let nl_path = a.value("nl80211");
    let stats_every = daemon::stats_option(&mut a, 2.0)?;
    let metrics = a.value("metrics");
    let record = a.value("record");
    let duration = daemon::duration_option(&mut a)?;
    let drain = a.duration("drain", Duration::from_secs(5), Duration::ZERO, Duration::from_secs(3600))?;
    a.finish(0)?;
    for (k, cc) in [("wired-cc", &wired_cc), ("wifi-cc", &wifi_cc)] {
        if cc.is_empty() || cc.len() > 15 || !cc.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_') {
            return Err(UsageError(format!("vwire: --{k} = {}: a congestion control name like cubic or bbr", super::args::show(cc))));
        }
    }
    Ok(Some(Opts { wifi_iface, wired_cc, wifi_cc, policy, period, efficiency, enabled, server_ports, port, relay_buffer, sndbuf, window_clamp, max_flows, max_conns, nl_path, stats_every, metrics, record, duration, drain, quiet }))
}

fn parse_ports(s: &str) -> Option<Vec<(u16, u16)>> {
    let mut out = Vec::new();
    for part in s.split(',') {
        let p = |x: &str| x.trim().parse::<u16>().ok().filter(|&p| p > 0);
        let r = match part.split_once('-') {
            Some((a, b)) => (p(a)?, p(b)?),
            None => (p(part)?, p(part)?),
        };
        if r.0 > r.1 {
            return None;
        }
        out.push(r);
    }
    Some(out)
}

pub fn main(argv: &[String]) -> i32 {
    match run(argv) {
        Ok(code) => code,
        Err(e) => {
            eprintln!("lasthop {e}");
            2
        }
    }
}

/// Per connection, the figures the host keeps for features and the record.
#[derive(Default)]
struct Track {
    segs: u32,
    bytes: u64,
    /// Station-acknowledged bytes at the last period.
    acked_mark: u64,
    last_rate: f64,
    last_goodput: f64,
    last_alloc: f64,
    class: &'static str,
}

fn run(argv: &[String]) -> Result<i32, UsageError> {
    let Some(o) = parse(argv)? else { return Ok(0) };
    let (ifindex, nl) = check(&o)?;
    let exporter = daemon::start_metrics(o.metrics.as_deref()).map_err(usage)?;
    let record = o.record.as_deref().map(daemon::open_record).transpose().map_err(usage)?;
    let listener = relay::listener(o.port, o.window_clamp).map_err(|e| usage(format!("--port = {}: {e}", o.port)))?;
    let spec = rules::Spec { wifi_iface: o.wifi_iface.clone(), port: o.port, server_ports: o.server_ports.clone() };
    let state = install(&o, &spec)?;
    let mut d = Daemon::start("vwire", o.quiet, Parts { run_for: o.duration, exporter, record, state: Some(state) }).map_err(usage)?;
    let code = match Proxy::new(&o, &spec, listener, nl, ifindex) {
        Ok(mut p) => {
            let _ = d.run(&mut p);
            p.finish();
            0
        }
        Err(e) => {
            eprintln!("lasthop vwire: epoll: {e}");
            1
        }
    };
    Ok(if d.finish() { code } else { 1 })
}

/// Checks that change nothing, in the order a user would fix them; the WiFi interface's index
/// and, where station rates come from, nl80211.
fn check(o: &Opts) -> Result<(u32, Option<Nl80211>), UsageError> {
    if !crate::sys::process::is_root() {
        return Err(usage("needs root (CAP_NET_ADMIN) to install TPROXY rules; run it with sudo"));
    }
    if let Some(e) = rules::tools_missing() {
        return Err(usage(e));
    }
    let Some(ifindex) = host::ifindex(&o.wifi_iface) else {
        return Err(usage(format!("--wifi-iface = {:?}: no such interface", o.wifi_iface)));
    };
    for cc in [&o.wired_cc, &o.wifi_cc] {
        if !relay::cc_available(cc) {
            return Err(usage(format!("congestion control {cc:?} is not available in this kernel (net.ipv4.tcp_available_congestion_control)")));
        }
    }
    let endpoint = host::nl80211_endpoint(o.nl_path.as_deref().map(std::path::Path::new));
    if let (Some(p), crate::nl::socket::Endpoint::Unix(_)) = (&o.nl_path, &endpoint) {
        if !std::path::Path::new(p).exists() {
            return Err(usage(format!("--nl80211 = {p:?}: no such socket")));
        }
    }
    let mut nl = Nl80211::open(&endpoint).map_err(usage)?;
    if let Some(x) = nl.as_mut() {
        if x.interface(ifindex).is_err() {
            nl = None;
        }
    }
    if nl.is_none() && o.enabled {
        return Err(usage(format!("no station rates for {}: it is not wireless (no nl80211) and no emulator telemetry answers for it; --no-vwire splits without allocating", o.wifi_iface)));
    }
    Ok((ifindex, nl))
}

/// Claim the restore record, record the rules and routes, then install them.
fn install(o: &Opts, spec: &rules::Spec) -> Result<StateFile, UsageError> {
    let (mut sf, _) = daemon::claim("vwire", &o.wifi_iface).map_err(usage)?;
    if rules::table_present() {
        sf.release();
        return Err(usage(format!("the nftables table ip {} is already there and no vwire owns it; remove it (nft delete table ip {}) if nothing uses it", rules::TABLE, rules::TABLE)));
    }
    for c in rules::changes() {
        sf.add(c).map_err(usage)?;
    }
    if let Err(e) = rules::install(spec) {
        let _ = sf.restore_all();
        return Err(usage(e));
    }
    Ok(sf)
}

const SAMPLE: Duration = Duration::from_millis(10);
const PUMP_EVERY: Duration = Duration::from_millis(1);

/// The running proxy: the relay, the deciders, the station rates, and per connection what
/// the host keeps.
struct Proxy<'a> {
    o: &'a Opts,
    spec: &'a rules::Spec,
    relay: Relay,
    split: SplitProxy,
    stations: Stations,
    track: BTreeMap<u64, Track>,
    t0: Instant,
    next_sample: Instant,
    next_period: Instant,
    next_pump: Instant,
    next_stats: Option<Instant>,
    periods: u64,
    managed_periods: u64,
    /// Since when open connections may finish (a stop came).
    draining: Option<Instant>,
}

impl<'a> Proxy<'a> {
    fn new(o: &'a Opts, spec: &'a rules::Spec, listener: std::os::fd::OwnedFd, nl: Option<Nl80211>, ifindex: u32) -> std::io::Result<Proxy<'a>> {
        let cfg = RelayConfig { wired_cc: o.wired_cc.clone(), wifi_cc: o.wifi_cc.clone(), relay_buffer: o.relay_buffer, sndbuf: o.sndbuf, max_conns: o.max_conns };
        let relay = Relay::new(cfg, listener)?;
        let pcfg = ProxyConfig { slots: o.max_flows, enabled: o.enabled, controller: ControllerConfig { period: SimDuration(o.period.as_nanos() as u64), ..ControllerConfig::default() }, ..ProxyConfig::default() };
        let split = SplitProxy::new(pcfg, Forest::shipped()).expect("valid proxy parameters");
        let mut stations = Stations { nl, ifindex, rt: Rtnl::open().ok(), rate_of: BTreeMap::new(), mean_rate: 0 };
        if let Err(e) = stations.refresh() {
            eprintln!("vwire: reading the stations failed: {e}");
        }
        if !o.quiet {
            eprintln!(
                "vwire: splitting TCP through {} (wired {}, WiFi {}){}; period {}, {} station(s) known; Ctrl-C stops and removes the rules",
                o.wifi_iface,
                o.wired_cc,
                o.wifi_cc,
                if o.enabled { "" } else { ", split only" },
                fmt_duration(o.period),
                stations.rate_of.len().max(usize::from(stations.mean_rate > 0))
            );
        }
        let t0 = Instant::now();
        Ok(Proxy {
            o, spec, relay, split, stations, track: BTreeMap::new(), t0,
            next_sample: t0 + SAMPLE, next_period: t0 + o.period, next_pump: t0, next_stats: o.stats_every.map(|d| t0 + d),
            periods: 0, managed_periods: 0, draining: None,
        })
    }

    fn now_of(&self, t: Instant) -> SimInstant {
        SimInstant(t.duration_since(self.t0).as_nanos() as u64)
    }

    /// Wait for the relay's sockets (until the next thing due), then take in new and closed
    /// connections: a new one gets its policy and a slot (the allocator's class).
    fn poll(&mut self) {
        let busy = self.relay.conns.values().any(|c| c.unread() > 0);
        let until = [self.next_sample, self.next_period, if busy { self.next_pump } else { self.next_sample }].into_iter().min().expect("three instants");
        let timeout = until.saturating_duration_since(Instant::now()).as_millis().min(10) as i32;
        let now = self.now_of(Instant::now());
        self.relay.poll(timeout, now);
        for id in std::mem::take(&mut self.relay.new_conns) {
            let Some(c) = self.relay.conns.get_mut(&id) else { continue };
            let p = self.o.policy.lookup(*c.client.ip(), *c.server.ip(), c.server.port());
            c.slot = self.split.open(p.device, p.class, p.utility);
            self.track.insert(id, Track::default());
        }
        for s in std::mem::take(&mut self.relay.closed_slots) {
            self.split.close(s);
        }
        let conns = &self.relay.conns;
        self.track.retain(|id, _| conns.contains_key(id));
    }

    /// Every 10 ms: the WiFi-side backlog to the bottleneck detector, and the segments each
    /// WiFi-side sender transmitted since the last sample (TCP_INFO), spread over the
    /// interval: the classifier's packets.
    fn on_sample(&mut self, now: SimInstant, wall: Instant) {
        let outq = self.relay.refresh();
        self.split.on_sample(now, outq);
        let span = SAMPLE.as_nanos() as u64;
        for c in self.relay.conns.values() {
            let (Some(slot), Some(t)) = (c.slot, self.track.get_mut(&c.id)) else { continue };
            let dsegs = c.data_segs_out.wrapping_sub(t.segs);
            let dbytes = c.bytes_sent.saturating_sub(t.bytes);
            t.segs = c.data_segs_out;
            t.bytes = c.bytes_sent;
            if dsegs == 0 || dsegs > 100_000 {
                continue;
            }
            let size = (dbytes / dsegs as u64) as u32 + relay::HEADERS;
            for k in 0..dsegs as u64 {
                let at = now.as_nanos().saturating_sub(span) + span * (k + 1) / dsegs as u64;
                self.split.on_segment(slot, SimInstant(at), size);
            }
        }
        self.next_sample += SAMPLE;
        if self.next_sample < wall {
            self.next_sample = wall + SAMPLE;
        }
    }

    /// Every period: station rates, then the allocation over the flows that compete for
    /// airtime — those that moved bytes to their station or still have bytes to move (an idle
    /// connection — a control channel, a finished page — takes no share; it gets one in the
    /// period after it turns busy); one record line.
    fn on_period(&mut self, now: SimInstant, wall: Instant, d: &mut Daemon) {
        if let Err(e) = self.stations.refresh() {
            eprintln!("vwire: reading the stations failed: {e}");
        }
        self.relay.refresh();
        let mut inputs = Vec::new();
        let mut ids = Vec::new();
        for c in self.relay.conns.values() {
            let (Some(s), Some(t)) = (c.slot, self.track.get_mut(&c.id)) else { continue };
            let active = c.acked > t.acked_mark || c.unread() > 0 || c.outq() > 0;
            t.acked_mark = c.acked;
            if !active {
                t.class = "";
                continue;
            }
            let l = self.stations.rate(*c.client.ip()) as f64 * self.o.efficiency;
            inputs.push((s, l, c.acked));
            ids.push(c.id);
        }
        let rec = self.split.on_period(now, self.o.period.as_secs_f64(), &inputs);
        self.periods += 1;
        self.managed_periods += u64::from(rec.managed);
        let mut flows = Vec::new();
        for (id, r) in ids.iter().zip(&rec.slots) {
            let c = &self.relay.conns[id];
            if let Some(t) = self.track.get_mut(id) {
                (t.last_rate, t.last_goodput, t.last_alloc, t.class) = (r.link_rate_bps, r.goodput_bps, r.alloc_rate_bps, r.class.name());
            }
            flows.push(serde_json::json!({
                "client": c.client.to_string(), "server": c.server.to_string(), "class": r.class.name(),
                "predicted": r.predicted.map(|k| k.name()), "link_rate_bps": r.link_rate_bps, "goodput_bps": r.goodput_bps,
                "alloc_rate_bps": r.alloc_rate_bps, "alloc_airtime": r.alloc_airtime, "relay_bytes": c.unread(),
                "outq_bytes": c.outq(), "srtt_us": c.srtt_us,
            }));
        }
        d.write_record(&serde_json::json!({
            "t_s": now.as_nanos() as f64 / 1e9, "managed": rec.managed, "airtime_budget": rec.airtime_budget,
            "utility": rec.utility, "connections": self.relay.conns.len(), "flows": flows,
        }));
        self.next_period += self.o.period;
        if self.next_period < wall {
            self.next_period = wall + self.o.period;
        }
    }

    /// What is still open after the drain is reset on both sides (end to end it would break
    /// the same way when a middlebox goes away).
    fn finish(self) {
        let left = self.relay.conns.len();
        drop(self.relay);
        if !self.o.quiet {
            eprintln!("vwire: {} periods ({} managed); {left} connection(s) still open at exit were reset", self.periods, self.managed_periods);
        }
    }
}

impl Service for Proxy<'_> {
    fn round(&mut self, d: &mut Daemon) -> Result<bool, String> {
        if let Some(t) = self.draining {
            if self.relay.conns.is_empty() || Instant::now().duration_since(t) >= self.o.drain {
                return Ok(false);
            }
        }
        self.poll();
        let wall = Instant::now();
        let now = self.now_of(wall);
        if wall >= self.next_pump || self.relay.conns.values().any(|c| c.unread() > 0) {
            self.relay.refresh();
            self.relay.pump(now, &mut self.split);
            self.next_pump = wall + PUMP_EVERY;
        }
        if wall >= self.next_sample {
            self.on_sample(now, wall);
        }
        if wall >= self.next_period {
            self.on_period(now, wall, d);
        }
        if let Some(t) = self.next_stats.filter(|&t| wall >= t) {
            if !self.o.quiet {
                status_line(now, &self.relay, &self.track, self.split.is_managed());
            }
            self.next_stats = Some(t + self.o.stats_every.expect("stats on"));
        }
        if wall >= self.next_sample - SAMPLE {
            d.publish(|| metrics_text(&self.relay, &self.split, &self.track, self.periods, self.managed_periods));
        }
        Ok(true)
    }

    /// New connections go end to end from now on; open ones may finish (`--drain`).
    fn on_stop(&mut self, _d: &mut Daemon) -> bool {
        let _ = rules::stop_intercepting(self.spec);
        self.draining = Some(Instant::now());
        true
    }
}

fn status_line(now: SimInstant, relay: &Relay, track: &BTreeMap<u64, Track>, managed: bool) {
    let s = &relay.stats;
    let mut line = format!(
        "vwire t={:.1}s {} conns {} (accepted {}, resets {}) down {:.1} MB up {:.1} MB",
        now.as_nanos() as f64 / 1e9,
        if managed { "MANAGED" } else { "fifo" },
        relay.conns.len(),
        s.accepted,
        s.resets,
        s.down_bytes as f64 / 1e6,
        s.up_bytes as f64 / 1e6
    );
    let mut flows: Vec<_> = relay.conns.values().filter_map(|c| track.get(&c.id).map(|t| (c, t))).filter(|(_, t)| !t.class.is_empty()).collect();
    flows.sort_by(|a, b| b.1.last_goodput.total_cmp(&a.1.last_goodput));
    for (c, t) in flows.iter().take(6) {
        line += &format!(
            " | {}>{} {} L {:.0} b {:.1} alloc {:.1} Mb/s",
            c.client,
            c.server,
            t.class,
            t.last_rate / 1e6,
            t.last_goodput / 1e6,
            t.last_alloc / 1e6
        );
    }
    if flows.len() > 6 {
        line += &format!(" | +{} more", flows.len() - 6);
    }
    eprintln!("{line}");
}

fn metrics_text(relay: &Relay, proxy: &SplitProxy, track: &BTreeMap<u64, Track>, periods: u64, managed: u64) -> String {
    let s = &relay.stats;
    let one = |v: f64| vec![(String::new(), v)];
    let per = |f: &dyn Fn(&Track) -> f64| -> Vec<(String, f64)> {
        relay.conns.values().filter_map(|c| track.get(&c.id).filter(|t| !t.class.is_empty()).map(|t| (format!("flow=\"{}>{}\",class=\"{}\"", c.client, c.server, t.class), f(t)))).collect()
    };
    render(&[
        Family { name: "lasthop_vwire_connections", help: "Split connections open.", kind: "gauge", samples: one(relay.conns.len() as f64) },
        Family { name: "lasthop_vwire_accepted_total", help: "Connections accepted.", kind: "counter", samples: one(s.accepted as f64) },
        Family { name: "lasthop_vwire_resets_total", help: "Connections ended by a reset or error.", kind: "counter", samples: one(s.resets as f64) },
        Family { name: "lasthop_vwire_connect_failures_total", help: "Connections to servers that failed.", kind: "counter", samples: one(s.connect_failures as f64) },
        Family { name: "lasthop_vwire_down_bytes_total", help: "Bytes relayed server to station.", kind: "counter", samples: one(s.down_bytes as f64) },
        Family { name: "lasthop_vwire_up_bytes_total", help: "Bytes relayed station to server.", kind: "counter", samples: one(s.up_bytes as f64) },
        Family { name: "lasthop_vwire_managed", help: "1 while the WiFi side is the bottleneck (token scheduler on).", kind: "gauge", samples: one(f64::from(u8::from(proxy.is_managed()))) },
        Family { name: "lasthop_vwire_periods_total", help: "Feedback periods.", kind: "counter", samples: one(periods as f64) },
        Family { name: "lasthop_vwire_managed_periods_total", help: "Feedback periods while managed.", kind: "counter", samples: one(managed as f64) },
        Family { name: "lasthop_vwire_flow_alloc_rate_bps", help: "b_i, the rate allocated to a flow.", kind: "gauge", samples: per(&|t| t.last_alloc) },
        Family { name: "lasthop_vwire_flow_goodput_bps", help: "A flow's goodput over the last period.", kind: "gauge", samples: per(&|t| t.last_goodput) },
        Family { name: "lasthop_vwire_flow_link_rate_bps", help: "L_i, the flow's station rate times the efficiency.", kind: "gauge", samples: per(&|t| t.last_rate) },
    ])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ports_parse() {
        assert_eq!(parse_ports("80,443,5201-5210"), Some(vec![(80, 80), (443, 443), (5201, 5210)]));
        assert_eq!(parse_ports("0"), None);
        assert_eq!(parse_ports("9-3"), None);
        assert_eq!(parse_ports("http"), None);
    }

    #[test]
    fn ruleset_text() {
        let r = rules::ruleset(&rules::Spec { wifi_iface: "wlan0".into(), port: 19528, server_ports: vec![(80, 80), (5201, 5210)] });
        assert!(r.contains("iifname \"wlan0\" meta l4proto tcp tcp dport { 80, 5201-5210 } tproxy ip to 127.0.0.1:19528 meta mark set 19528 accept"), "{r}");
        assert!(r.contains("socket transparent 1 meta mark set 19528 accept"));
    }
}
