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
    let stop = crate::sys::signals::StopSignals::install().map_err(|e| e.to_string())?;
    let delta = c.interval.as_nanos() as u64;
    // Slot 0 starts at the last multiple of Δ on CLOCK_REALTIME; estimator time is ns since then.
    let t_start = clock::realtime_ns();
    let origin = t_start / delta * delta;
    let cfg = EstimatorConfig { interval: SimDuration::from_nanos(delta), gap_threshold: SimDuration::from_nanos(o.gap.as_nanos() as u64), ..EstimatorConfig::default() };
    let mut est = AggregationEstimator::new(cfg, SimInstant::ZERO).map_err(|e| format!("estimator: {e}"))?;
    let mut batch = RxBatch::new();
    let (mut received, mut lost, mut reordered, mut junk, mut no_ts, mut counter) = (0u64, 0u64, 0u64, 0u64, 0u64, 0u64);
    let mut session: Option<u32> = None;
    let mut expect = 0u64;
    let mut sender: Option<SocketAddr> = None;
    let mut owd_all = LogHistogram::new();
    let mut owd_slot: std::collections::BTreeMap<u64, SlotOwd> = Default::default();
    let mut slots: Vec<SlotRec> = Vec::new();
    let mut relayed = 0u64;
    let end = c.duration.map(|d| t_start + d.as_nanos() as u64);
    let mut next_stats = c.stats_every.map(|d| t_start + d.as_nanos() as u64);
    let mut last_line = (0u64, 0u64);
    if !c.quiet {
        eprintln!("aggctl recv: listening on {} (Δ {} ms, gap {} µs)", sock.local_addr().map_err(|e| e.to_string())?, delta / 1_000_000, o.gap.as_micros());
    }
    loop {
        if stop.stop_requested() {
            break;
        }
        let now = clock::realtime_ns();
        if end.is_some_and(|e| now >= e) {
            break;
        }
        // Everything that arrived before `now` is read before the estimator is told the time.
        while batch.recv(&sock, |rx| {
            let Some(h) = DataHdr::read(rx.data) else {
                junk += 1;
                return;
            };
            let Some(ts) = rx.ts_ns else {
                no_ts += 1;
                return;
            };
            if session != Some(h.session) {
                session = Some(h.session);
                expect = 0;
            }
            sender = Some(rx.from);
            received += 1;
            if h.seq >= expect {
                lost += h.seq - expect;
                expect = h.seq + 1;
            } else {
                reordered += 1;
                lost = lost.saturating_sub(1);
            }
            let owd = ts as i64 - h.departure_ns as i64;
            owd_all.record(owd.max(0) as u64);
            let s = owd_slot.entry(ts.saturating_sub(origin) / delta).or_default();
            s.sum += owd as i128;
            s.n += 1;
            s.max = s.max.max(owd);
            est.handle_input(SimInstant(ts.saturating_sub(origin)), RxPacket::default());
            if h.flags & FLAG_RELAY != 0 {
                if let Some(d) = &deliver {
                    if d.send(&rx.data[super::wire::DATA_HDR..]).is_ok() {
                        relayed += 1;
                    }
                }
            }
        }) == net::BATCH
        {}
        est.handle_timeout(SimInstant(now.saturating_sub(origin)));
        while let Some(r) = est.poll_report() {
            let k = r.seq as u64;
            let so = owd_slot.remove(&k).unwrap_or_default();
            owd_slot.retain(|&j, _| j > k);
            let owd_mean = if so.n > 0 { (so.sum / so.n as i128) as i64 } else { 0 };
            slots.push(SlotRec { k: r.seq, start_ns: origin + k * delta, aggregates: r.aggregates, packets: r.packets, mean_mpdus: r.mean_mpdus(), received, lost, owd_mean_ns: owd_mean, owd_max_ns: so.max });
            if let (Some(to), Some(sess)) = (sender, session) {
                counter += 1;
                let p = ReportPkt { session: sess, counter, report: r, received, lost, owd_mean_ns: owd_mean };
                let _ = sock.send_to(&p.encode(&o.key), to);
            }
        }
        if let Some(t) = next_stats.filter(|&t| now >= t) {
            if !c.quiet {
                let m = slots.last().and_then(|s| s.mean_mpdus).map_or("-".into(), |m| format!("{m:.1}"));
                let rate = (received - last_line.0) as f64 / ((now - last_line.1.max(t_start)) as f64 / 1e9);
                eprintln!("aggctl recv: {:.1} s | {received} packets ({rate:.0}/s), lost {lost}, reordered {reordered} | aggregation {m} | owd p50 {:.2} ms | reports {counter}",
                    (now - t_start) as f64 / 1e9, owd_all.quantile(0.5) as f64 / 1e6);
            }
            last_line = (received, now);
            next_stats = Some(t + c.stats_every.map_or(0, |d| d.as_nanos() as u64));
        }
        let due = est.poll_timeout().map_or(u64::MAX, |t| origin + t.as_nanos());
        let wake = due.min(next_stats.unwrap_or(u64::MAX)).min(end.unwrap_or(u64::MAX)).min(now + 200_000_000);
        poll::wait_readable(&[&sock], Duration::from_nanos(wake.saturating_sub(clock::realtime_ns()).max(1)));
    }
    let est_stats = est.stats();
    if let Some(path) = &c.out {
        let doc = serde_json::json!({
            "tool": "aggctl recv", "version": env!("CARGO_PKG_VERSION"),
            "listen": o.listen.to_string(), "interval_ns": delta, "gap_ns": o.gap.as_nanos() as u64,
            "origin_ns": origin, "start_ns": t_start, "end_ns": clock::realtime_ns(),
            "received": received, "lost": lost, "reordered": reordered, "junk": junk, "no_timestamp": no_ts,
            "relayed": relayed, "reports_sent": counter,
            "aggregates": est_stats.aggregates, "capped": est_stats.capped,
            "owd_ns": {"p50": owd_all.quantile(0.5), "p99": owd_all.quantile(0.99), "max": owd_all.max(), "mean": owd_all.mean()},
            "slots": slots,
        });
        fs::write_atomic(path, &(serde_json::to_string_pretty(&doc).map_err(|e| e.to_string())? + "\n"))?;
    }
    if !c.quiet {
        eprintln!("aggctl recv: stopped: {received} packets, lost {lost}, {counter} reports sent");
    }
    Ok(0)
}
