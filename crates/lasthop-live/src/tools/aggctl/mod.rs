//! `lasthop aggctl send|recv|key`: aggregation-level rate control ("Regulating Aggregation
//! Level For Low Latency in 802.11ac", Hassani, Gringoli, Leith) over real UDP sockets. The
//! receivers run the simulator's `AggregationEstimator` on kernel receive timestamps
//! (`recv.rs`); the sender runs the simulator's `RateAllocator` and paces each receiver's
//! stream at the rate it gives (`send.rs`); reports are authenticated (`wire.rs`).

pub mod net;
pub mod recv;
pub mod send;
pub mod wire;

use super::args::{Args, UsageError};
use super::daemon;
use lasthop_algo::control::aggctl::AggctlConfig;
use lasthop_core::{BitRate, Bytes, Duration as SimDuration};
use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

pub const HELP: &str = "\
lasthop aggctl: sender rate control from the receivers' aggregation level (UDP)

usage: lasthop aggctl recv [options]     on each client
       lasthop aggctl send --to ADDR:PORT [--to ...] [options]     at the edge
       lasthop aggctl key --master FILE --for ADDR:PORT | --new

recv:
  --listen ADDR:PORT    where the paced stream arrives (default 0.0.0.0:7450)
  --key FILE            this receiver's key (hex; `aggctl key --for` prints it)
  --deliver ADDR:PORT   relay mode: hand each relayed datagram's payload to this address
  --gap DUR             packets closer than this are one aggregate (default 50us)
send:
  --to ADDR:PORT        a receiver (repeat, or comma-separated); at least one
  --bind ADDR:PORT      the sender's socket (default 0.0.0.0:7451); reports come back here
  --key FILE            the master key (hex, 16 to 64 bytes); receivers hold derived keys
  --target N            N_e, the target MPDUs per aggregate (default 32)
  --k0 X                K0 in Mb/s per MPDU of error; K = K0/n (default 1)
  --ba-window N         N_max, the Block Ack window (default 64)
  --size BYTES          IP packet size L (default 1500)
  --initial-rate RATE   a receiver's rate when it joins (default 10Mbps)
  --max-rate RATE       cap of any receiver's rate (default 2Gbps)
  --rate RATE           no control: every receiver at this fixed rate (the baseline)
  --drop-after DUR      a receiver silent this long leaves the allocation (default 5s)
  --spin DUR            busy-poll this long before a departure (default 100us)
  --cpu N               pin the sending thread to CPU N
  --relay-port P        relay mode: datagrams for receiver i arrive on UDP port P + i
  --relay-queue N       relay queue per receiver, packets (default 1000)
  --metrics ADDR:PORT   serve Prometheus metrics at http://ADDR:PORT/metrics
both:
  --spec FILE           take the settings from a scenario spec: [aggctl] (target_aggregation,
                        k0, interval, initial_rate, max_rate, gap_threshold), N_max from
                        [mac] max_ampdu_mpdus, --size from its aggctl flows (options given
                        here win)
  --interval DUR        report interval Δ (default 500ms)
  --out FILE            write the result (JSON) there on exit
  --stats SECONDS       live view on stderr every SECONDS (default 1; 0 off)
  --duration DUR        stop after DUR
  -q, --quiet           no live view
";

/// Options both halves share.
pub struct Common {
    pub interval: Duration,
    pub out: Option<PathBuf>,
    pub stats_every: Option<Duration>,
    pub duration: Option<Duration>,
    pub quiet: bool,
}

fn usage(s: impl Into<String>) -> UsageError {
    UsageError(format!("aggctl: {}", s.into()))
}

pub fn main(argv: &[String]) -> i32 {
    let Some(sub) = argv.first() else {
        eprint!("{HELP}");
        return 2;
    };
    let r = match sub.as_str() {
        "send" | "recv" | "key" => run(sub, &argv[1..]),
        "-h" | "--help" | "help" => {
            print!("{HELP}");
            return 0;
        }
        other => Err(usage(format!("unknown command {} (commands: send, recv, key)", super::args::show(other)))),
    };
    match r {
        Ok(c) => c,
        Err(e) => {
            eprintln!("lasthop {e}");
            2
        }
    }
}

fn read_key(a: &mut Args, name: &str) -> Result<Option<Vec<u8>>, UsageError> {
    let Some(f) = a.value(name) else { return Ok(None) };
    let text = std::fs::read_to_string(&f).map_err(|e| a.err(name, &f, &format!("cannot read it: {e}")))?;
    wire::parse_key(&text).map(Some).map_err(|e| a.err(name, &f, &e))
}

fn addr(a: &mut Args, name: &str, v: &str) -> Result<SocketAddr, UsageError> {
    net::parse_addr(v).filter(|s| s.port() != 0 || name == "bind").ok_or_else(|| a.err(name, v, "an IPv4 address and port, like 10.0.0.2:7450"))
}

fn run(sub: &str, argv: &[String]) -> Result<i32, UsageError> {
    let tool = format!("aggctl {sub}");
    let (flags, valued): (&[&str], &[&str]) = match sub {
        "recv" => (&["quiet"], &["spec", "listen", "key", "deliver", "gap", "interval", "out", "stats", "duration"]),
        "send" => (&["quiet"], &["spec", "to", "bind", "key", "target", "k0", "ba-window", "size", "initial-rate", "max-rate", "rate", "drop-after", "spin", "cpu", "relay-port", "relay-queue", "metrics", "interval", "out", "stats", "duration"]),
        _ => (&["new"], &["master", "for"]),
    };
    let mut a = Args::parse(&tool, argv, flags, valued)?;
    if a.help() {
        print!("{HELP}");
        return Ok(0);
    }
    if sub == "key" {
        return key(&mut a);
    }
    if let Some(path) = a.value("spec") {
        crate::tools::spec_opts::aggctl(&mut a, sub, &path)?;
    }
    let common = common(&mut a)?;
    let code = if sub == "recv" {
        let o = recv_opts(&mut a, common.interval)?;
        recv::run(&common, &o)
    } else {
        let o = send_opts(&mut a, common.interval)?;
        send::run(&common, &o)
    };
    code.map_err(|e| UsageError(format!("{tool}: {e}")))
}

/// `aggctl key`: a new master key, or a receiver's key derived from one.
fn key(a: &mut Args) -> Result<i32, UsageError> {
    let new = a.flag("new");
    let master = read_key(a, "master")?;
    let target = a.value("for");
    a.finish(0)?;
    if new {
        let mut b = [0u8; 32];
        // SAFETY: getrandom writes up to 32 bytes into `b`.
        let n = unsafe { libc::getrandom(b.as_mut_ptr() as *mut libc::c_void, 32, 0) };
        if n != 32 {
            return Err(usage("key: the kernel gave no random bytes"));
        }
        println!("{}", wire::to_hex(&b));
        return Ok(0);
    }
    let (Some(m), Some(t)) = (master, target) else {
        return Err(usage("key: give --new, or --master FILE and --for ADDR:PORT"));
    };
    addr(a, "for", &t)?;
    println!("{}", wire::to_hex(&wire::receiver_key(&m, t.trim())));
    Ok(0)
}

/// The options both halves take.
fn common(a: &mut Args) -> Result<Common, UsageError> {
    let interval = a.duration("interval", Duration::from_millis(500), Duration::from_millis(10), Duration::from_secs(60))?;
    let out = a.value("out").map(PathBuf::from);
    let stats_every = daemon::stats_option(a, 1.0)?;
    let duration = daemon::duration_option(a)?;
    let quiet = a.flag("quiet");
    if let Some(p) = &out {
        let dir = p.parent().filter(|d| !d.as_os_str().is_empty()).unwrap_or(std::path::Path::new("."));
        if !dir.is_dir() {
            return Err(a.err("out", &p.display().to_string(), "a file in an existing directory"));
        }
    }
    Ok(Common { interval, out, stats_every, duration, quiet })
}

fn recv_opts(a: &mut Args, interval: Duration) -> Result<recv::RecvOpts, UsageError> {
    let listen = match a.value("listen") {
        Some(v) => addr(a, "listen", &v)?,
        None => SocketAddr::from(([0, 0, 0, 0], 7450)),
    };
    let key = read_key(a, "key")?.unwrap_or_default();
    let deliver = match a.value("deliver") {
        Some(v) => Some(addr(a, "deliver", &v)?),
        None => None,
    };
    let gap = a.duration("gap", Duration::from_micros(50), Duration::from_micros(1), Duration::from_millis(1))?;
    a.finish(0)?;
    if gap.as_nanos() as u64 * 256 >= interval.as_nanos() as u64 {
        return Err(a.err("gap", &format!("{gap:?}"), "below interval / 256"));
    }
    Ok(recv::RecvOpts { listen, key, deliver, gap })
}

fn send_opts(a: &mut Args, interval: Duration) -> Result<send::SendOpts, UsageError> {
    let mut to = Vec::new();
    for v in a.values("to") {
        for part in v.split(',').filter(|p| !p.trim().is_empty()) {
            let s = addr(a, "to", part)?;
            if to.iter().any(|(_, x)| *x == s) {
                return Err(a.err("to", part, "each receiver once"));
            }
            to.push((part.trim().to_string(), s));
        }
    }
    if to.is_empty() {
        return Err(usage("send: --to: at least one receiver ADDR:PORT is needed"));
    }
    if to.len() > 1024 {
        return Err(usage("send: --to: at most 1024 receivers"));
    }
    let bind = match a.value("bind") {
        Some(v) => addr(a, "bind", &v)?,
        None => SocketAddr::from(([0, 0, 0, 0], 7451)),
    };
    let master = read_key(a, "key")?;
    let ba = a.uint("ba-window", 1, 1024)?.unwrap_or(64) as u32;
    let target = a.uint("target", 1, 1024)?.unwrap_or(32) as u32;
    if target > ba {
        return Err(a.err("target", &target.to_string(), &format!("1 to the Block Ack window ({ba})")));
    }
    let k0 = match a.value("k0") {
        None => 1.0,
        Some(v) => v.parse::<f64>().ok().filter(|x| x.is_finite() && *x > 0.0 && *x <= 1000.0).ok_or_else(|| a.err("k0", &v, "a number in (0, 1000] (Mb/s per MPDU)"))?,
    };
    let size = a.uint("size", 100, 1500)?.unwrap_or(1500) as usize;
    let initial = a.rate_bps("initial-rate", 100_000, 100_000_000_000)?.unwrap_or(10_000_000);
    let max_rate = a.rate_bps("max-rate", 100_000, 100_000_000_000)?.unwrap_or(2_000_000_000);
    let fixed_rate = a.rate_bps("rate", 10_000, 100_000_000_000)?;
    let drop_after = a.duration("drop-after", Duration::from_secs(5), Duration::from_millis(100), Duration::from_secs(3600))?;
    let spin = a.duration("spin", Duration::from_micros(100), Duration::ZERO, Duration::from_millis(10))?;
    let cpu = a.uint("cpu", 0, 1023)?.map(|c| c as usize);
    let relay_port = a.uint("relay-port", 1, 65535)?.map(|p| p as u16);
    let relay_queue = a.uint("relay-queue", 1, 1_000_000)?.unwrap_or(1000) as usize;
    let metrics = a.value("metrics");
    a.finish(0)?;
    let min_rate = 1_000_000.min(initial);
    let cfg = AggctlConfig {
        target_aggregation: target,
        block_ack_window: ba,
        interval: SimDuration::from_nanos(interval.as_nanos() as u64),
        k0: k0 * 1e6,
        packet_size: Bytes(size as u64),
        initial_rate: BitRate(initial.min(max_rate)),
        min_rate: BitRate(min_rate.min(max_rate)),
        max_rate: BitRate(max_rate),
        hold_time: SimDuration::from_nanos(2 * interval.as_nanos() as u64),
        decay_after: SimDuration::from_nanos(4 * interval.as_nanos() as u64),
        ..AggctlConfig::default()
    };
    cfg.validate().map_err(|e| usage(format!("send: {e}")))?;
    if drop_after < 2 * interval {
        return Err(a.err("drop-after", &format!("{drop_after:?}"), "at least twice --interval"));
    }
    Ok(send::SendOpts { to, bind, master, cfg, fixed_rate, size: size - 28, drop_after, spin, cpu, relay_port, relay_queue, metrics })
}
