//! `lasthop quic serve|get`: an HTTP/3 file server and client on quiche (Cloudflare's QUIC
//! library), with the two QUIC mechanisms the simulator models, driven by the same sans-IO
//! code:
//!
//! * Bursty QUIC ("Improving Performance of QUIC in WiFi", Manzoor et al., WCNC 2019): the
//!   `quic` profile paces the server's packets with the simulator's Chromium pacing sender
//!   (`lasthop_algo::quic::pacer`; quiche paces only its BBR ports); the `bquic` profile
//!   does not pace (each window leaves as it opens) and makes
//!   the client acknowledge with Chromium's ACK decimation
//!   (`lasthop_algo::control::ack_policy::AckDecimation`); the `quic` profile paces and
//!   acknowledges every second packet or after max_ack_delay (`TcpAcking`). The client's ACKs
//!   leave only when the policy says so: quiche writes ACK frames only when `send()` is called.
//! * History-based initial windows ("Access Latency Reduction in the QUIC Protocol Based on
//!   Communication History", Electronics 2019): the server keeps
//!   `lasthop_algo::control::cwnd_history::CwndHistory` keyed by the client's /32 or /24,
//!   records each connection's cwnd when it closes (and, with `--history-events
//!   close_every_hello`, when its handshake completes), gives a new connection
//!   max(default, average) (`serve.rs`), keeps it in a file across restarts, and with
//!   `--guard rtt` applies `rtt_guard` to an RTT measured with a stateless Retry before the
//!   connection is accepted.

pub mod get;
pub mod history;
pub mod pages;
pub mod serve;

use super::args::{Args, UsageError};
use lasthop_algo::quic::pacer::PacerMode;
use super::daemon;
use std::net::SocketAddr;
use std::time::Duration;

pub const HELP: &str = "\
lasthop quic: an HTTP/3 server and client with Bursty QUIC and history-based initial windows

usage: lasthop quic serve DIR [options]
       lasthop quic get URL... [options]

serve:
  --listen ADDR:PORT     UDP address (default 0.0.0.0:4433)
  --profile quic|bquic   quic: paced; bquic: no pacing, each window sent as it opens
                         (default quic)
  --pacer per-packet|chromium-v39
                         quic's schedule: each packet at its own time, or as Chromium's
                         PacingSender of the QUIC v39 era (packets due within 1 ms leave
                         together, lost time made up) (default per-packet)
  --history FILE         history-based initial windows, kept in FILE across restarts
  --history-key /32|/24  whose history a client gets: its address or its /24 (default /32)
  --history-mode mean|ewma   the average used (default mean)
  --history-size N       clients remembered, least recently used forgotten (default 1024)
  --history-lifetime DUR an entry expires this long after its last update (default 1h)
  --history-events close_0rtt|close_every_hello
                         where a connection's window is recorded: at close, or also
                         when its handshake completes (Algorithm 1's every complete
                         client hello: the connection's initial window) (default
                         close_0rtt; this server keeps no state for a 0-RTT hello)
  --guard none|rtt       rtt: measure the RTT with a stateless Retry first and use the
                         default window if it grew > 25 % over the recorded min RTT
                         (default none)
  --initial-window N     the default initial window, packets (default 10)
  --pages                first write the eleven Table II pages under DIR/pages/
  --follow-symlinks      also serve files that a symbolic link in DIR leads to outside
                         it (by default only what resolves inside DIR is served)
  --cert FILE --key FILE certificate chain and private key (PEM); without them a
                         self-signed certificate is made at start
  --record FILE          append one JSON line per closed connection
  --metrics ADDR:PORT    serve Prometheus metrics at http://ADDR:PORT/metrics
get:
  --profile quic|bquic   the client's ACK policy (default quic)
  --page NAME            load a Table II page from the one URL given (a server run with
                         --pages): its HTML, then its objects over parallel streams;
                         `--page list` prints the pages
  -o, --out-dir DIR      save each body there (by the URL's file name)
  --result FILE          write the result (JSON)
  --timeout DUR          give up after DUR (default 60s)
  --ca FILE              verify the server's certificate against the CA certificates in
                         FILE (PEM) instead of the system's
  --insecure             do not verify the server's certificate (a lab server with a
                         self-signed one); by default it is verified, chain and name
both:
  --stats SECONDS        live view on stderr every SECONDS (default 1 for serve, 0 for get)
  --duration DUR         (serve) stop after DUR
  -q, --quiet            no live view
";

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Profile {
    Quic,
    Bquic,
}

impl Profile {
    pub fn name(self) -> &'static str {
        match self {
            Profile::Quic => "quic",
            Profile::Bquic => "bquic",
        }
    }
}

/// The largest UDP payload we send (fits a 1500-byte MTU with IPv4/IPv6 and UDP headers).
pub const MAX_DATAGRAM: usize = 1350;

fn usage(s: impl Into<String>) -> UsageError {
    UsageError(format!("quic: {}", s.into()))
}

pub fn main(argv: &[String]) -> i32 {
    let Some(sub) = argv.first() else {
        eprint!("{HELP}");
        return 2;
    };
    let r = match sub.as_str() {
        "serve" | "get" => run(sub, &argv[1..]),
        "-h" | "--help" | "help" => {
            print!("{HELP}");
            return 0;
        }
        other => Err(usage(format!("unknown command {} (commands: serve, get)", super::args::show(other)))),
    };
    match r {
        Ok(c) => c,
        Err(e) => {
            eprintln!("lasthop {e}");
            2
        }
    }
}

fn profile(a: &mut Args) -> Result<Profile, UsageError> {
    Ok(match a.choice("profile", "quic", &["quic", "bquic"])?.as_str() {
        "bquic" => Profile::Bquic,
        _ => Profile::Quic,
    })
}

fn run(sub: &str, argv: &[String]) -> Result<i32, UsageError> {
    let tool = format!("quic {sub}");
    let code = if sub == "serve" {
        let Some(o) = serve_opts(&tool, argv)? else { return Ok(0) };
        serve::run(&o)
    } else {
        let Some(o) = get_opts(&tool, argv)? else { return Ok(0) };
        get::run(&o)
    };
    code.map_err(|e| UsageError(format!("{tool}: {e}")))
}

/// `quic serve`'s options (None: `--help` was printed).
fn serve_opts(tool: &str, argv: &[String]) -> Result<Option<serve::ServeOpts>, UsageError> {
    let mut a = Args::parse(tool, argv, &["quiet", "pages", "follow-symlinks"], &["listen", "profile", "pacer", "history", "history-key", "history-mode", "history-size", "history-lifetime", "history-events", "guard", "initial-window", "cert", "key", "record", "metrics", "stats", "duration"])?;
    if a.help() {
        print!("{HELP}");
        return Ok(None);
    }
    let quiet = a.flag("quiet");
    let write_pages = a.flag("pages");
    let follow_symlinks = a.flag("follow-symlinks");
    let listen = match a.value("listen") {
        Some(v) => v.trim().parse::<SocketAddr>().map_err(|_| a.err("listen", &v, "an address and port, like 0.0.0.0:4433"))?,
        None => SocketAddr::from(([0, 0, 0, 0], 4433)),
    };
    let profile = profile(&mut a)?;
    let pacer = a.choice("pacer", PacerMode::NAMES[0], &PacerMode::NAMES)?;
    if pacer != PacerMode::NAMES[0] && profile == Profile::Bquic {
        return Err(a.err("pacer", &pacer, "only with --profile quic (bquic does not pace)"));
    }
    let pacer = PacerMode::from_name(&pacer).expect("a listed pacer");
    let history = a.value("history").map(std::path::PathBuf::from);
    let prefix = match a.choice("history-key", "/32", &["/32", "/24"])?.as_str() {
        "/24" => 24,
        _ => 32,
    };
    let mode = a.choice("history-mode", "mean", &["mean", "ewma"])?;
    let size = a.uint("history-size", 1, 10_000_000)?.unwrap_or(1024) as usize;
    let lifetime = a.duration("history-lifetime", Duration::from_secs(3600), Duration::from_secs(1), Duration::from_secs(365 * 86_400))?;
    use lasthop_sim::spec::HistoryEvents;
    let every_hello = a.choice("history-events", HistoryEvents::Close0Rtt.as_str(), HistoryEvents::NAMES)?
        == HistoryEvents::EveryHello.as_str();
    let guard = a.choice("guard", "none", &["none", "rtt"])? == "rtt";
    let iw = a.uint("initial-window", 2, 10_000)?.unwrap_or(10) as usize;
    let cert = a.value("cert");
    let key = a.value("key");
    let record = a.value("record").map(std::path::PathBuf::from);
    let metrics = a.value("metrics");
    let stats_every = daemon::stats_option(&mut a, 1.0)?;
    let duration = daemon::duration_option(&mut a)?;
    a.finish(1)?;
    let Some(dir) = a.positional.first().cloned() else {
        return Err(usage("serve: the directory to serve is needed (quic serve DIR)"));
    };
    let dir = std::path::PathBuf::from(&dir);
    if std::fs::read_dir(&dir).is_err() {
        return Err(usage(format!("serve: {}: not a readable directory", dir.display())));
    }
    if write_pages {
        pages::write_all(&dir).map_err(|e| usage(format!("serve: --pages: cannot write {}/pages: {e}", dir.display())))?;
    }
    if cert.is_some() != key.is_some() {
        return Err(usage("serve: --cert and --key go together"));
    }
    let o = serve::ServeOpts {
        dir, follow_symlinks, listen, profile, pacer, history, prefix, ewma: mode == "ewma", size, lifetime, every_hello, guard, iw,
        cert: cert.zip(key), record, metrics, stats_every, duration, quiet,
    };
    Ok(Some(o))
}

/// `quic get`'s options (None: `--help` or `--page list` was printed).
fn get_opts(tool: &str, argv: &[String]) -> Result<Option<get::GetOpts>, UsageError> {
    let argv: Vec<String> = argv.iter().map(|x| if x == "-o" { "--out-dir".to_string() } else { x.clone() }).collect();
    let mut a = Args::parse(tool, &argv, &["quiet", "insecure"], &["profile", "page", "out-dir", "result", "timeout", "stats", "ca"])?;
    if a.help() {
        print!("{HELP}");
        return Ok(None);
    }
    let quiet = a.flag("quiet");
    let profile = profile(&mut a)?;
    let page = a.value("page");
    if page.as_deref() == Some("list") {
        for (name, _, kb) in pages::TABLE_II {
            let o = pages::objects(name).expect("a table page");
            println!("{name} {} objects {kb} kB {}", o.len(), o.iter().map(|x| x.1.to_string()).collect::<Vec<_>>().join(","));
        }
        return Ok(None);
    }
    if let Some(p) = &page {
        if pages::objects(p).is_none() {
            let names: Vec<&str> = pages::TABLE_II.iter().map(|x| x.0).collect();
            return Err(a.err("page", p, &format!("one of {}", names.join(", "))));
        }
    }
    let out_dir = a.value("out-dir").map(std::path::PathBuf::from);
    let result = a.value("result").map(std::path::PathBuf::from);
    let timeout = a.duration("timeout", Duration::from_secs(60), Duration::from_millis(100), Duration::from_secs(86_400))?;
    let stats_every = daemon::stats_option(&mut a, 0.0)?;
    let trust = match (a.value("ca"), a.flag("insecure")) {
        (Some(_), true) => return Err(usage("get: --ca and --insecure exclude each other")),
        (Some(f), false) => {
            let p = std::path::PathBuf::from(&f);
            if !p.is_file() {
                return Err(a.err("ca", &f, "a readable file of CA certificates (PEM)"));
            }
            get::Trust::CaFile(p)
        }
        (None, true) => get::Trust::Insecure,
        (None, false) => get::Trust::System,
    };
    a.finish(usize::MAX)?;
    if a.positional.is_empty() {
        return Err(usage("get: at least one URL is needed (https://HOST:PORT/PATH)"));
    }
    let mut urls = Vec::new();
    for u in &a.positional {
        urls.push(get::Url::parse(u).map_err(|e| usage(format!("get: {}: {e}", super::args::show(u))))?);
    }
    let mut later = Vec::new();
    if let Some(p) = &page {
        if urls.len() != 1 {
            return Err(usage("get: --page takes one URL, the server's (https://HOST:PORT/)"));
        }
        let base = format!("https://{}", urls[0].text.trim_start_matches("https://").split('/').next().unwrap_or(""));
        let objs = pages::objects(p).expect("checked");
        let mk = |i: usize, k: usize| get::Url::parse(&format!("{base}{}", pages::object_path(p, i, k))).map_err(|e| usage(format!("get: {e}")));
        urls = vec![mk(0, 0)?];
        for (i, &(k, _)) in objs.iter().enumerate().skip(1) {
            later.push(mk(i, k)?);
        }
    }
    if urls.iter().any(|u| u.addr != urls[0].addr) && page.is_none() {
        return Err(usage("get: every URL must name the same server (one connection)"));
    }
    if let Some(d) = &out_dir {
        if !d.is_dir() {
            return Err(usage(format!("get: --out-dir = {}: not a directory", super::args::show(&d.display().to_string()))));
        }
    }
    let o = get::GetOpts { urls, later, page, profile, out_dir, result, timeout, stats_every, quiet, trust };
    Ok(Some(o))
}
