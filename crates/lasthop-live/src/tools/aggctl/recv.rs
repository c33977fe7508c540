//! `lasthop aggctl recv`: the receiver half. Every data packet's kernel receive timestamp
//! (SO_TIMESTAMPNS, read in batches with recvmmsg) goes to the simulator's
//! `AggregationEstimator`, which groups packets handed up together into one aggregate (§II.B
//! of the paper) and yields an `AggReport` every Δ; each goes back to the sender as an
//! authenticated report (wire.rs). Slots are aligned to multiples of Δ on CLOCK_REALTIME, so
//! every receiver's slots (and a capture's timestamps) share one grid.

use super::net::{self, RxBatch};
use crate::sys::{clock, fs, poll};
use super::wire::{DataHdr, ReportPkt, FLAG_RELAY};
use super::Common;
use crate::tools::daemon::{Daemon, Parts, Service};
use lasthop_algo::control::aggctl::{AggregationEstimator, EstimatorConfig, RxPacket};
use lasthop_core::{Controller, Duration as SimDuration, Instant as SimInstant};
use lasthop_sim::metrics::LogHistogram;
use std::net::{SocketAddr, UdpSocket};
use std::time::Duration;

pub struct RecvOpts {
    pub listen: SocketAddr,
    pub key: Vec<u8>,
    pub deliver: Option<SocketAddr>,
    pub gap: Duration,
}

/// One slot as the receiver reported it.
#[derive(serde::Serialize)]
struct SlotRec {
    k: u32,
    /// Start of the slot, CLOCK_REALTIME ns.
    start_ns: u64,
    aggregates: u32,
    packets: u32,
    mean_mpdus: Option<f64>,
    received: u64,
    lost: u64,
    owd_mean_ns: i64,
    owd_max_ns: i64,
}

#[derive(Default)]
struct SlotOwd {
    sum: i128,
    n: u64,
    max: i64,
}

/// The stream as it arrives: sequence, loss, one-way delays, and the estimator's input.
struct Stream {
    origin: u64,
    delta: u64,
    est: AggregationEstimator,
    session: Option<u32>,
    expect: u64,
    sender: Option<SocketAddr>,
    received: u64,
    lost: u64,
    reordered: u64,
    junk: u64,
    no_ts: u64,
    relayed: u64,
    owd_all: LogHistogram,
    owd_slot: std::collections::BTreeMap<u64, SlotOwd>,
}

impl Stream {
    fn on_packet(&mut self, rx: net::Rx, deliver: Option<&UdpSocket>) {
        let Some(h) = DataHdr::read(rx.data) else {
            self.junk += 1;
            return;
        };
        let Some(ts) = rx.ts_ns else {
            self.no_ts += 1;
            return;
        };
        if self.session != Some(h.session) {
            self.session = Some(h.session);
            self.expect = 0;
        }
        self.sender = Some(rx.from);
        self.received += 1;
        if h.seq >= self.expect {
            self.lost += h.seq - self.expect;
            self.expect = h.seq + 1;
        } else {
            self.reordered += 1;
            self.lost = self.lost.saturating_sub(1);
        }
        let owd = ts as i64 - h.departure_ns as i64;
        self.owd_all.record(owd.max(0) as u64);
        let s = self.owd_slot.entry(ts.saturating_sub(self.origin) / self.delta).or_default();
        s.sum += owd as i128;
        s.n += 1;
        s.max = s.max.max(owd);
        self.est.handle_input(SimInstant(ts.saturating_sub(self.origin)), RxPacket::default());
        if h.flags & FLAG_RELAY != 0 {
            if let Some(d) = deliver {
                if d.send(&rx.data[super::wire::DATA_HDR..]).is_ok() {
                    self.relayed += 1;
                }
            }
        }
    }
}

/// The running receiver.
struct Receiver<'a> {
    c: &'a Common,
    o: &'a RecvOpts,
    sock: UdpSocket,
    deliver: Option<UdpSocket>,
    batch: RxBatch,
    st: Stream,
    t_start: u64,
    counter: u64,
    slots: Vec<SlotRec>,
    next_stats: Option<u64>,
    last_line: (u64, u64),
}

pub fn run(c: &Common, o: &RecvOpts) -> Result<i32, String> {
    let sock = net::bind("listen", o.listen)?;
    net::set_int(&sock, libc::SOL_SOCKET, libc::SO_TIMESTAMPNS, 1).map_err(|e| format!("SO_TIMESTAMPNS: {e}"))?;
    let _ = net::set_int(&sock, libc::SOL_SOCKET, libc::SO_RCVBUF, 8 << 20);
    let deliver = match o.deliver {
        Some(a) => {
            let s = UdpSocket::bind("0.0.0.0:0").map_err(|e| e.to_string())?;
            s.connect(a).map_err(|e| format!("--deliver = {a}: {e}"))?;
            Some(s)
        }
        None => None,
    };
    let mut d = Daemon::start("aggctl recv", c.quiet, Parts { run_for: c.duration, ..Parts::default() })?;
    let delta = c.interval.as_nanos() as u64;
    // Slot 0 starts at the last multiple of Δ on CLOCK_REALTIME; estimator time is ns since then.
    let t_start = clock::realtime_ns();
    let origin = t_start / delta * delta;
    let cfg = EstimatorConfig { interval: SimDuration::from_nanos(delta), gap_threshold: SimDuration::from_nanos(o.gap.as_nanos() as u64), ..EstimatorConfig::default() };
    let est = AggregationEstimator::new(cfg, SimInstant::ZERO).map_err(|e| format!("estimator: {e}"))?;
    let st = Stream {
        origin, delta, est, session: None, expect: 0, sender: None, received: 0, lost: 0, reordered: 0, junk: 0, no_ts: 0, relayed: 0,
        owd_all: LogHistogram::new(), owd_slot: Default::default(),
    };
    let next_stats = c.stats_every.map(|d| t_start + d.as_nanos() as u64);
    if !c.quiet {
        eprintln!("aggctl recv: listening on {} (Δ {} ms, gap {} µs)", sock.local_addr().map_err(|e| e.to_string())?, delta / 1_000_000, o.gap.as_micros());
    }
    let mut r = Receiver { c, o, sock, deliver, batch: RxBatch::new(), st, t_start, counter: 0, slots: Vec::new(), next_stats, last_line: (0, 0) };
    d.run(&mut r)?;
    if let Some(path) = &c.out {
        r.write_result(path)?;
    }
    if !c.quiet {
        eprintln!("aggctl recv: stopped: {} packets, lost {}, {} reports sent", r.st.received, r.st.lost, r.counter);
    }
    d.finish();
    Ok(0)
}

impl Receiver<'_> {
    /// The estimator's reports due by `now`: kept for the result, each sent to the sender.
    fn report(&mut self, now: u64) {
        let st = &mut self.st;
        st.est.handle_timeout(SimInstant(now.saturating_sub(st.origin)));
        while let Some(r) = st.est.poll_report() {
            let k = r.seq as u64;
            let so = st.owd_slot.remove(&k).unwrap_or_default();
            st.owd_slot.retain(|&j, _| j > k);
            let owd_mean = if so.n > 0 { (so.sum / so.n as i128) as i64 } else { 0 };
            let (received, lost) = (st.received, st.lost);
            self.slots.push(SlotRec { k: r.seq, start_ns: st.origin + k * st.delta, aggregates: r.aggregates, packets: r.packets, mean_mpdus: r.mean_mpdus(), received, lost, owd_mean_ns: owd_mean, owd_max_ns: so.max });
            if let (Some(to), Some(sess)) = (st.sender, st.session) {
                self.counter += 1;
                let p = ReportPkt { session: sess, counter: self.counter, report: r, received, lost, owd_mean_ns: owd_mean };
                let _ = self.sock.send_to(&p.encode(&self.o.key), to);
            }
        }
    }

    fn status(&mut self, now: u64) {
        let Some(t) = self.next_stats.filter(|&t| now >= t) else { return };
        let st = &self.st;
        if !self.c.quiet {
            let m = self.slots.last().and_then(|s| s.mean_mpdus).map_or("-".into(), |m| format!("{m:.1}"));
            let rate = (st.received - self.last_line.0) as f64 / ((now - self.last_line.1.max(self.t_start)) as f64 / 1e9);
            eprintln!("aggctl recv: {:.1} s | {} packets ({rate:.0}/s), lost {}, reordered {} | aggregation {m} | owd p50 {:.2} ms | reports {}",
                (now - self.t_start) as f64 / 1e9, st.received, st.lost, st.reordered, st.owd_all.quantile(0.5) as f64 / 1e6, self.counter);
        }
        self.last_line = (st.received, now);
        self.next_stats = Some(t + self.c.stats_every.map_or(0, |d| d.as_nanos() as u64));
    }

    fn write_result(&self, path: &std::path::Path) -> Result<(), String> {
        let st = &self.st;
        let est_stats = st.est.stats();
        let owd = &st.owd_all;
        let doc = serde_json::json!({
            "tool": "aggctl recv", "version": env!("CARGO_PKG_VERSION"),
            "listen": self.o.listen.to_string(), "interval_ns": st.delta, "gap_ns": self.o.gap.as_nanos() as u64,
            "origin_ns": st.origin, "start_ns": self.t_start, "end_ns": clock::realtime_ns(),
            "received": st.received, "lost": st.lost, "reordered": st.reordered, "junk": st.junk, "no_timestamp": st.no_ts,
            "relayed": st.relayed, "reports_sent": self.counter,
            "aggregates": est_stats.aggregates, "capped": est_stats.capped,
            "owd_ns": {"p50": owd.quantile(0.5), "p99": owd.quantile(0.99), "max": owd.max(), "mean": owd.mean()},
            "slots": self.slots,
        });
        fs::write_atomic(path, &(serde_json::to_string_pretty(&doc).map_err(|e| e.to_string())? + "\n"))
    }
}

impl Service for Receiver<'_> {
    fn round(&mut self, d: &mut Daemon) -> Result<bool, String> {
        let now = clock::realtime_ns();
        // Everything that arrived before `now` is read before the estimator is told the time.
        let (st, deliver) = (&mut self.st, self.deliver.as_ref());
        while self.batch.recv(&self.sock, |rx| st.on_packet(rx, deliver)) == net::BATCH {}
        self.report(now);
        self.status(now);
        let due = self.st.est.poll_timeout().map_or(u64::MAX, |t| self.st.origin + t.as_nanos());
        let end = d.until_end().map_or(u64::MAX, |r| now + r.as_nanos() as u64);
        let wake = due.min(self.next_stats.unwrap_or(u64::MAX)).min(end).min(now + 200_000_000);
        poll::wait_readable(&[&self.sock], Duration::from_nanos(wake.saturating_sub(clock::realtime_ns()).max(1)));
        Ok(true)
    }
}
