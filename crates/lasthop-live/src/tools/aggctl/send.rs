//! `lasthop aggctl send`: the sender half, at the edge. One process paces a UDP stream to each
//! of N receivers at the rate the simulator's `RateAllocator` gives it (Algorithm 1 / eqs.
//! (1)–(2) of the paper, K = K0/n), from the receivers' authenticated reports.
//!
//! Pacing: one thread (pinned with `--cpu`, timer slack 1 ns) keeps each receiver's next
//! departure on CLOCK_MONOTONIC, one packet every L/x; it sleeps in ppoll until `--spin` before
//! the earliest departure and busy-polls the rest. A departure more than 1 ms late restarts
//! that receiver's schedule from now (no burst to catch up). Each departure's error (the
//! instant sendto was called minus the scheduled instant) goes into a histogram. SO_TXTIME
//! with a departure-time qdisc (fq, etf) is not used: where neither exists (this project's
//! test kernel) it cannot be checked.
//!
//! Watchdog: the allocator holds and then decays a silent receiver (its module doc); after
//! `--drop-after` without a report the receiver leaves the allocation (n and K follow, and its
//! airtime goes to the others through the regulated station's aggregation) and gets only a
//! probe packet every 100 ms; its next valid report makes it join again.
//!
//! Reports: accepted only from a receiver's address, with that receiver's key (wire.rs),
//! the current session and a counter above the last accepted one; the rest are counted as
//! unknown, malformed, forged, stale (another session) or replayed.
//!
//! Modes: a generator (always backlogged; `--rate` fixes the rate instead of the control loop,
//! the constant-rate baseline) or a relay: the application's datagrams for receiver i arrive on
//! UDP port `--relay-port` + i and leave paced, in order, behind the data header; a full queue
//! (`--relay-queue`) drops at the tail.

use super::net::{self, RxBatch};
use crate::sys::{clock, fs, poll, sched};
use super::wire::{self, DataHdr, Reject, ReportPkt, DATA_HDR, FLAG_RELAY};
use super::Common;
use crate::tools::daemon::{self, Daemon, Parts, Service};
use crate::tools::metrics::{render, Family};
use lasthop_algo::control::aggctl::{AggctlConfig, AllocatorInput, Feedback, RateAllocator};
use lasthop_core::{Controller, Instant as SimInstant};
use lasthop_sim::metrics::LogHistogram;
use std::collections::VecDeque;
use std::net::{SocketAddr, UdpSocket};
use std::time::Duration;

pub struct SendOpts {
    pub to: Vec<(String, SocketAddr)>,
    pub bind: SocketAddr,
    pub master: Option<Vec<u8>>,
    pub cfg: AggctlConfig,
    pub fixed_rate: Option<u64>,
    pub size: usize,
    pub drop_after: Duration,
    pub spin: Duration,
    pub cpu: Option<usize>,
    pub relay_port: Option<u16>,
    pub relay_queue: usize,
    pub metrics: Option<String>,
}

#[derive(Default, serde::Serialize, Clone, Copy)]
struct Rejected {
    malformed: u64,
    forged: u64,
    stale: u64,
    replayed: u64,
}

#[derive(serde::Serialize)]
struct Sample {
    t_s: f64,
    rate_bps: u64,
    mean_mpdus: Option<f64>,
    feedback: &'static str,
    received: u64,
    lost: u64,
    owd_mean_ns: i64,
}

struct Rcv {
    label: String,
    addr: SocketAddr,
    key: Vec<u8>,
    seq: u64,
    next_ns: u64,
    rate: u64,
    joined: bool,
    last_counter: u64,
    last_report_ns: u64,
    sent: u64,
    sent_bytes: u64,
    accepted: u64,
    rejected: Rejected,
    joins: u64,
    leaves: u64,
    received: u64,
    lost: u64,
    owd_mean_ns: i64,
    mean_mpdus: Option<f64>,
    relay: Option<(UdpSocket, VecDeque<Vec<u8>>)>,
    relay_dropped: u64,
    series: Vec<Sample>,
}

fn feedback_name(f: Feedback) -> &'static str {
    match f {
        Feedback::Fresh => "fresh",
        Feedback::Held => "held",
        Feedback::Decaying => "decaying",
    }
}

const PROBE_NS: u64 = 100_000_000;
const MAX_LATE_NS: u64 = 1_000_000;

/// The receivers of `--to`, each with its key and, in relay mode, its input socket.
fn receivers(o: &SendOpts) -> Result<Vec<Rcv>, String> {
    let mut rcv: Vec<Rcv> = Vec::with_capacity(o.to.len());
    for (i, (label, a)) in o.to.iter().enumerate() {
        let relay = match o.relay_port {
            Some(p) => {
                let port = p.checked_add(i as u16).ok_or_else(|| format!("--relay-port = {p}: port {p} + {i} is above 65535"))?;
                let s = net::bind("relay-port", SocketAddr::new(o.bind.ip(), port))?;
                Some((s, VecDeque::new()))
            }
            None => None,
        };
        rcv.push(Rcv {
            label: label.clone(), addr: *a,
            key: o.master.as_ref().map_or_else(Vec::new, |m| wire::receiver_key(m, label)),
            seq: 0, next_ns: 0, rate: 0, joined: false, last_counter: 0, last_report_ns: 0, sent: 0, sent_bytes: 0,
            accepted: 0, rejected: Rejected::default(), joins: 0, leaves: 0, received: 0, lost: 0, owd_mean_ns: 0,
            mean_mpdus: None, relay, relay_dropped: 0, series: Vec::new(),
        });
    }
    Ok(rcv)
}

/// The running sender.
struct Sender<'a> {
    c: &'a Common,
    o: &'a SendOpts,
    sock: UdpSocket,
    batch: RxBatch,
    rcv: Vec<Rcv>,
    alloc: RateAllocator,
    session: u32,
    /// CLOCK_MONOTONIC and CLOCK_REALTIME at the start.
    t0: u64,
    rt0: u64,
    pkt: Vec<u8>,
    dep_err: LogHistogram,
    late_resets: u64,
    unknown: u64,
    next_metrics: u64,
    next_stats: Option<u64>,
    next_check: u64,
}

pub fn run(c: &Common, o: &SendOpts) -> Result<i32, String> {
    let sock = net::bind("bind", o.bind)?;
    let _ = net::set_int(&sock, libc::SOL_SOCKET, libc::SO_SNDBUF, 4 << 20);
    // Every receiver must be routable from here before anything is sent.
    for (label, a) in &o.to {
        let probe = UdpSocket::bind(SocketAddr::from(([0, 0, 0, 0], 0))).map_err(|e| e.to_string())?;
        probe.connect(a).map_err(|e| format!("--to = {label:?}: {e}"))?;
    }
    let rcv = receivers(o)?;
    let exporter = daemon::start_metrics(o.metrics.as_deref())?;
    let mut d = Daemon::start("aggctl send", c.quiet, Parts { run_for: c.duration, exporter, ..Parts::default() })?;
    let saved_affinity = sched::affinity();
    let pinned = sched::pin_and_tighten(o.cpu);
    let session: u32 = {
        let mut b = [0u8; 4];
        // SAFETY: getrandom writes up to 4 bytes into `b`.
        let n = unsafe { libc::getrandom(b.as_mut_ptr() as *mut libc::c_void, 4, 0) };
        if n == 4 { u32::from_le_bytes(b) } else { (clock::realtime_ns() as u32) ^ std::process::id() }
    };
    let alloc = RateAllocator::new(o.cfg).map_err(|e| format!("aggctl send: {e}"))?;
    let t0 = clock::mono_ns();
    let rt0 = clock::realtime_ns();
    let mut s = Sender {
        c, o, sock, batch: RxBatch::new(), rcv, alloc, session, t0, rt0, pkt: vec![0u8; o.size.max(DATA_HDR)],
        dep_err: LogHistogram::new(), late_resets: 0, unknown: 0, next_metrics: t0, next_stats: c.stats_every.map(|d| t0 + d.as_nanos() as u64), next_check: t0,
    };
    for i in 0..s.rcv.len() {
        if o.fixed_rate.is_none() {
            s.alloc.handle_input(s.sim(t0), AllocatorInput::Join { station: i as u32, phy_rate: None });
        }
        let r = &mut s.rcv[i];
        r.joined = true;
        r.joins = 1;
        r.next_ns = t0;
        r.last_report_ns = t0;
        r.rate = o.fixed_rate.unwrap_or(o.cfg.initial_rate.0);
    }
    if !c.quiet {
        eprintln!("aggctl send: session {session:08x}, {} receiver(s), {} (target {} MPDUs, Δ {} ms, K0 {} Mb/s per MPDU){}{}",
            s.rcv.len(), o.fixed_rate.map_or("aggregation control".to_string(), |r| format!("fixed {:.1} Mb/s", r as f64 / 1e6)),
            o.cfg.target_aggregation, o.cfg.interval.as_nanos() / 1_000_000, o.cfg.k0 / 1e6,
            if o.master.is_some() { "" } else { "; reports NOT authenticated (no --key)" }, if pinned { ", pinned" } else { "" });
    }
    d.run(&mut s)?;
    if let Some(a) = saved_affinity {
        sched::set_affinity(&a);
    }
    let elapsed = (clock::mono_ns() - t0) as f64 / 1e9;
    if let Some(path) = &c.out {
        s.write_result(path, elapsed, pinned)?;
    }
    if !c.quiet {
        let sent: u64 = s.rcv.iter().map(|r| r.sent).sum();
        eprintln!("aggctl send: stopped after {elapsed:.1} s: {sent} packets sent; departure error p50 {:.1} µs p99 {:.1} µs",
                  s.dep_err.quantile(0.5) as f64 / 1e3, s.dep_err.quantile(0.99) as f64 / 1e3);
    }
    d.finish();
    Ok(0)
}

impl Sender<'_> {
    fn sim(&self, t: u64) -> SimInstant {
        SimInstant(t - self.t0)
    }

    fn feedback(&self, i: usize) -> &'static str {
        if self.o.fixed_rate.is_some() { "fixed" } else { self.alloc.station(i as u32).map_or("left", |v| feedback_name(v.feedback)) }
    }

    /// The reports waiting on the socket.
    fn take_reports(&mut self, now: u64) {
        let mut got: Vec<(SocketAddr, Vec<u8>)> = Vec::new();
        while self.batch.recv(&self.sock, |rx| got.push((rx.from, rx.data.to_vec()))) == net::BATCH {}
        for (from, data) in got {
            self.on_report(now, from, &data);
        }
    }

    /// One report: accepted only from a receiver's address, with its key, this session and a
    /// counter above the last; then to the allocator (a receiver that had left joins again).
    fn on_report(&mut self, now: u64, from: SocketAddr, data: &[u8]) {
        let Some(i) = self.rcv.iter().position(|r| r.addr == from) else {
            self.unknown += 1;
            return;
        };
        let sim_now = self.sim(now);
        let r = &mut self.rcv[i];
        let p = match ReportPkt::decode(data, &r.key) {
            Ok(p) => p,
            Err(Reject::Malformed) => return r.rejected.malformed += 1,
            Err(Reject::Forged) => return r.rejected.forged += 1,
        };
        if p.session != self.session {
            return r.rejected.stale += 1;
        }
        if p.counter <= r.last_counter {
            return r.rejected.replayed += 1;
        }
        r.last_counter = p.counter;
        r.accepted += 1;
        r.last_report_ns = now;
        r.received = p.received;
        r.lost = p.lost;
        r.owd_mean_ns = p.owd_mean_ns;
        if let Some(m) = p.report.mean_mpdus() {
            r.mean_mpdus = Some(m);
        }
        if self.o.fixed_rate.is_none() {
            if !r.joined {
                r.joined = true;
                r.joins += 1;
                r.next_ns = now;
                self.alloc.handle_input(sim_now, AllocatorInput::Join { station: i as u32, phy_rate: None });
            }
            self.alloc.handle_input(sim_now, AllocatorInput::Report { station: i as u32, report: p.report });
        }
        let fb = self.feedback(i);
        let r = &mut self.rcv[i];
        let rate = r.rate;
        r.series.push(Sample { t_s: (now - self.t0) as f64 / 1e9, rate_bps: rate, mean_mpdus: p.report.mean_mpdus(), feedback: fb, received: p.received, lost: p.lost, owd_mean_ns: p.owd_mean_ns });
    }

    /// The allocator's clock, its new rates, and the watchdog's drop.
    fn control(&mut self, now: u64) {
        if self.alloc.poll_timeout().is_some_and(|t| t <= self.sim(now)) {
            self.alloc.handle_timeout(self.sim(now));
        }
        while let Some(u) = self.alloc.poll_output() {
            self.rcv[u.station as usize].rate = u.rate.0;
        }
        if now >= self.next_check {
            self.next_check = now + 50_000_000;
            let sim_now = self.sim(now);
            for (i, r) in self.rcv.iter_mut().enumerate() {
                if r.joined && now - r.last_report_ns >= self.o.drop_after.as_nanos() as u64 {
                    self.alloc.handle_input(sim_now, AllocatorInput::Leave { station: i as u32 });
                    r.joined = false;
                    r.leaves += 1;
                }
            }
            while let Some(u) = self.alloc.poll_output() {
                self.rcv[u.station as usize].rate = u.rate.0;
            }
        }
    }

    /// Relay mode: the application's datagrams, queued per receiver (tail drop).
    fn relay_input(&mut self) {
        for r in self.rcv.iter_mut() {
            if let Some((s, q)) = r.relay.as_mut() {
                let mut buf = [0u8; 2048];
                while let Ok((n, _)) = s.recv_from(&mut buf) {
                    if q.len() >= self.o.relay_queue {
                        r.relay_dropped += 1;
                    } else {
                        q.push_back(buf[..n].to_vec());
                    }
                }
            }
        }
    }

    /// Every departure due by `now`, one packet per receiver.
    fn depart(&mut self, now: u64) {
        let bits = |n: usize| n as u64 * 8;
        let pkt = &mut self.pkt;
        for r in self.rcv.iter_mut() {
            if r.next_ns > now {
                continue;
            }
            let late = now - r.next_ns;
            let interval = |len: usize, rate: u64| bits(len + 28) * 1_000_000_000 / rate.max(1);
            let (len, flags) = match r.relay.as_mut() {
                Some((_, q)) => match q.pop_front() {
                    Some(p) if r.joined => {
                        let n = DATA_HDR + p.len();
                        if pkt.len() < n {
                            pkt.resize(n, 0);
                        }
                        pkt[DATA_HDR..n].copy_from_slice(&p);
                        (n, FLAG_RELAY)
                    }
                    Some(_) | None => {
                        // Nothing to send (or the receiver left): no credit builds up.
                        r.next_ns = now + if r.joined { 50_000 } else { PROBE_NS };
                        continue;
                    }
                },
                None => (self.o.size, 0),
            };
            let rt = self.rt0 + (now - self.t0);
            DataHdr { flags, session: self.session, seq: r.seq, departure_ns: rt }.write(pkt);
            match self.sock.send_to(&pkt[..len], r.addr) {
                Ok(_) => {
                    r.seq += 1;
                    r.sent += 1;
                    r.sent_bytes += len as u64;
                    self.dep_err.record(late);
                }
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {}
                Err(_) => {}
            }
            let step = if r.joined { interval(len, r.rate) } else { PROBE_NS };
            r.next_ns += step;
            if now > r.next_ns + MAX_LATE_NS {
                r.next_ns = now;
                self.late_resets += 1;
            }
        }
    }

    /// The live view and the metrics, when due.
    fn status(&mut self, d: &Daemon, now: u64) {
        if let Some(t) = self.next_stats.filter(|&t| now >= t) {
            let line = self.rcv.iter().enumerate().map(|(i, r)| {
                let fb = self.feedback(i);
                format!("{} {:.1} Mb/s agg {} {fb} owd {:.2} ms lost {}", r.label, r.rate as f64 / 1e6,
                        r.mean_mpdus.map_or("-".into(), |m| format!("{m:.1}")), r.owd_mean_ns as f64 / 1e6, r.lost)
            }).collect::<Vec<_>>().join(" | ");
            if !self.c.quiet {
                let rej: u64 = self.rcv.iter().map(|r| r.rejected.forged + r.rejected.replayed + r.rejected.stale + r.rejected.malformed).sum::<u64>() + self.unknown;
                eprintln!("aggctl send: {:.1} s | {line} | rejected {rej} | late p99 {:.0} µs", (now - self.t0) as f64 / 1e9, self.dep_err.quantile(0.99) as f64 / 1e3);
            }
            self.next_stats = Some(t + self.c.stats_every.map_or(0, |d| d.as_nanos() as u64));
        }
        if d.has_metrics() && now >= self.next_metrics {
            d.publish(|| metrics_text(&self.rcv, &self.alloc, self.o.fixed_rate.is_some(), &self.dep_err, self.unknown));
            self.next_metrics = now + 1_000_000_000;
        }
    }

    fn write_result(&self, path: &std::path::Path, elapsed: f64, pinned: bool) -> Result<(), String> {
        let (o, dep_err) = (self.o, &self.dep_err);
        let stats = self.alloc.stats();
        let doc = serde_json::json!({
            "tool": "aggctl send", "version": env!("CARGO_PKG_VERSION"), "session": self.session,
            "start_ns": self.rt0, "seconds": elapsed,
            "config": {"target": o.cfg.target_aggregation, "interval_ns": o.cfg.interval.as_nanos(), "k0_bps": o.cfg.k0,
                       "packet_bytes": o.size + 28, "fixed_rate_bps": o.fixed_rate, "drop_after_ns": o.drop_after.as_nanos() as u64,
                       "authenticated": o.master.is_some(), "relay": o.relay_port.is_some()},
            "receivers": self.rcv.iter().map(|r| serde_json::json!({
                "to": r.label, "sent_packets": r.sent, "sent_bytes": r.sent_bytes,
                "goodput_bps": r.sent_bytes as f64 * 8.0 / elapsed.max(1e-9),
                "reports_accepted": r.accepted, "rejected": r.rejected, "joins": r.joins, "leaves": r.leaves,
                "received": r.received, "lost": r.lost, "relay_dropped": r.relay_dropped, "series": r.series,
            })).collect::<Vec<_>>(),
            "rejected_unknown_source": self.unknown,
            "allocator": {"reports": stats.reports, "applied": stats.reports_applied, "holds": stats.holds, "decay_steps": stats.decay_steps,
                          "joins": stats.joins, "leaves": stats.leaves},
            "pacing": {"departure_error_ns": {"p50": dep_err.quantile(0.5), "p99": dep_err.quantile(0.99), "max": dep_err.max(), "mean": dep_err.mean(), "count": dep_err.count()},
                       "late_resets": self.late_resets, "pinned": pinned},
        });
        fs::write_atomic(path, &(serde_json::to_string_pretty(&doc).map_err(|e| e.to_string())? + "\n"))
    }
}

impl Service for Sender<'_> {
    fn round(&mut self, d: &mut Daemon) -> Result<bool, String> {
        let now = clock::mono_ns();
        self.take_reports(now);
        if self.o.fixed_rate.is_none() {
            self.control(now);
        }
        self.relay_input();
        let now = clock::mono_ns();
        self.depart(now);
        self.status(d, now);
        // Wait: sleep until `spin` before the next departure, then busy-poll.
        let end = d.until_end().map_or(u64::MAX, |r| now + r.as_nanos() as u64);
        let next = self.rcv.iter().map(|r| r.next_ns).min().unwrap_or(u64::MAX)
            .min(self.next_stats.unwrap_or(u64::MAX)).min(end)
            .min(if self.o.fixed_rate.is_none() { self.alloc.poll_timeout().map_or(u64::MAX, |t| self.t0 + t.as_nanos()) } else { u64::MAX })
            .min(now + 100_000_000);
        let now = clock::mono_ns();
        let spin = self.o.spin.as_nanos() as u64;
        if next > now + spin {
            let mut fds: Vec<&UdpSocket> = vec![&self.sock];
            fds.extend(self.rcv.iter().filter_map(|r| r.relay.as_ref().map(|(s, _)| s)));
            poll::wait_readable(&fds, Duration::from_nanos(next - now - spin));
        }
        Ok(true)
    }
}

fn metrics_text(rcv: &[Rcv], alloc: &RateAllocator, fixed: bool, dep: &LogHistogram, unknown: u64) -> String {
    let per = |f: &dyn Fn(usize, &Rcv) -> f64| rcv.iter().enumerate().map(|(i, r)| (format!("receiver=\"{}\"", r.label), f(i, r))).collect::<Vec<_>>();
    let mut rej = Vec::new();
    for r in rcv {
        for (why, n) in [("forged", r.rejected.forged), ("replayed", r.rejected.replayed), ("stale", r.rejected.stale), ("malformed", r.rejected.malformed)] {
            rej.push((format!("receiver=\"{}\",reason=\"{why}\"", r.label), n as f64));
        }
    }
    rej.push(("reason=\"unknown_source\"".into(), unknown as f64));
    render(&[
        Family { name: "lasthop_aggctl_rate_bps", help: "allocated send rate", kind: "gauge", samples: per(&|_, r| r.rate as f64) },
        Family { name: "lasthop_aggctl_mean_mpdus", help: "last reported mean MPDUs per aggregate", kind: "gauge", samples: per(&|_, r| r.mean_mpdus.unwrap_or(f64::NAN)) },
        Family { name: "lasthop_aggctl_fresh", help: "1 if the receiver's feedback is fresh", kind: "gauge",
                 samples: per(&|i, _| if fixed { 1.0 } else { alloc.station(i as u32).map_or(0.0, |v| (v.feedback == Feedback::Fresh) as u8 as f64) }) },
        Family { name: "lasthop_aggctl_sent_packets_total", help: "data packets sent", kind: "counter", samples: per(&|_, r| r.sent as f64) },
        Family { name: "lasthop_aggctl_reports_accepted_total", help: "reports accepted", kind: "counter", samples: per(&|_, r| r.accepted as f64) },
        Family { name: "lasthop_aggctl_reports_rejected_total", help: "reports refused, by reason", kind: "counter", samples: rej },
        Family { name: "lasthop_aggctl_lost_packets", help: "packets the receiver found missing", kind: "gauge", samples: per(&|_, r| r.lost as f64) },
        Family { name: "lasthop_aggctl_departure_error_p99_seconds", help: "pacing: departure error p99", kind: "gauge", samples: vec![(String::new(), dep.quantile(0.99) as f64 / 1e9)] },
    ])
}
