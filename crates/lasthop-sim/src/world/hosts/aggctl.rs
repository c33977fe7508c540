//! aggctl in the cell: the simulator as host of the sans-IO halves of
//! `lasthop_algo::control::aggctl` (Hassani, Gringoli, Leith, "Regulating Aggregation Level For
//! Low Latency in 802.11ac").
//!
//! * The server runs ONE [`RateAllocator`] for every `pattern = "aggctl"` flow of the run; a
//!   flow joins it at its start and leaves at its stop (n, and K = K0/n, follow). Each flow is
//!   a paced UDP sender at the rate the allocator gives it (one packet every L / x).
//! * Each receiving station runs an [`AggregationEstimator`] fed only with what a real receiver
//!   sees: the receive timestamp of each packet — the end of the PPDU that delivered it (all
//!   MPDUs of one A-MPDU share it), plus a uniform random delay in [0, `clock_jitter`] and
//!   floored to `clock_resolution` — and, with `report_rate`, the PHY rate of that PPDU (what
//!   a radiotap header shows). Every Δ it sends an [`AggReport`] (28 bytes + UDP/IP headers) as
//!   a real uplink packet: through the station's queue, the contended channel and the wired
//!   link, so feedback costs airtime and can be lost; the allocator's watchdog handles loss.
//! * The truth: the number of MPDUs in each downlink A-MPDU that reached the station, per slot
//!   of Δ from the flow's start, compared with the estimator's report for the same slot.
//!
//! Also here: `stations[].nss_change`, the change of spatial streams the paper's Fig. 9 uses.
//!
//! Report payloads live in a slab while they cross the network (`Pkt::tcp` holds
//! `TcpMeta::Aggctl` with the slot); the slot is freed when the original arrives or is dropped.

use crate::engine::{EventQueue, TimerId};
use crate::world::{Dir, Ev, PktRef, TcpMeta, TxVector, World};
use crate::metrics::Series;
use crate::spec::{Pattern, Spec};
use lasthop_algo::control::aggctl::{
    AggReport, AggregationEstimator, AllocatorInput, Feedback, RateAllocator, RxPacket, REPORT_LEN,
};
use lasthop_core::controller::Controller;
use lasthop_core::rng::StreamKind;
use lasthop_core::units::{BitRate, Bytes};
use lasthop_core::{Duration, Instant, Rng};
use lasthop_wifi::mac::rate::{rate_table, IdealRate, MinstrelHt, MinstrelParams, RateControl};

/// IP (20) + UDP (8) headers around a report.
const REPORT_IP_LEN: u32 = REPORT_LEN as u32 + 28;
/// The flow index `Ev::AggctlTimer` uses for the allocator's own timer.
const ALLOCATOR: u32 = u32::MAX;

/// The aggctl side of the world: the allocator, the flows' senders and receivers.
pub(in crate::world) struct AggctlHost {
    alloc: RateAllocator,
    alloc_timer: TimerId,
    /// By flow index (None for other flows).
    flows: Vec<Option<AggFlow>>,
    /// The aggctl flow received by each station.
    sta_flow: Vec<Option<u32>>,
    /// Report payloads in flight, and free slots.
    reports: Vec<Option<[u8; REPORT_LEN]>>,
    free: Vec<u32>,
    interval: Duration,
    clock_res: u64,
    clock_jitter: u64,
    report_rate: bool,
    report_loss: f64,
    report_blackout: Option<(Instant, Instant)>,
    /// Draws the loss of reports on the feedback path.
    loss_rng: Rng,
    /// Per station: PHY rate of the last downlink PPDU it received something from.
    last_rx_rate: Vec<u64>,
    seed: u64,
    /// Per flow: send rate (last value per bin) and estimated aggregation (last report per bin).
    ts_rate: Series,
    ts_est: Series,
    ts_est_set: Series,
}

/// One aggctl flow: its sender's rate and its receiver's estimator, with the host's counters.
struct AggFlow {
    est: AggregationEstimator,
    timer: TimerId,
    jitter: Rng,
    rate: BitRate,
    joined: bool,
    left: bool,
    /// Start of the estimator's slot 0.
    origin: Instant,
    reports_sent: u64,
    reports_received: u64,
    reports_lost: u64,
    /// Reports of slots starting after warm-up: estimated packets and frames, and the truth
    /// (MPDUs and A-MPDUs) of the same slots.
    est_packets: u64,
    est_frames: u64,
    true_mpdus: u64,
    true_frames: u64,
    /// |estimated − true| mean aggregation, summed over slots with both.
    slot_err_sum: f64,
    slot_err_max: f64,
    slots_compared: u64,
    /// Truth per slot: (A-MPDUs, MPDUs).
    truth: Vec<(u32, u32)>,
}

/// The host if the spec has aggctl flows or stream changes.
pub(in crate::world) fn new_host(spec: &Spec, seed: u64, bins: usize, bin: u64, q: &mut EventQueue<Ev>) -> Option<Box<AggctlHost>> {
    let any_flow = spec.flows.iter().any(|f| f.pattern == Pattern::Aggctl);
    if !any_flow && spec.stations.iter().all(|s| s.nss_change.is_none()) {
        return None;
    }
    let a = &spec.aggctl;
    let packet = spec.flows.iter().find(|f| f.pattern == Pattern::Aggctl).map_or(1500, |f| f.packet_size);
    // Without aggctl flows the allocator is idle (the host only changes streams).
    let n_max = if any_flow { spec.aggctl_n_max() } else { spec.aggctl_n_max().max(a.target_aggregation) };
    let alloc = RateAllocator::new(a.allocator_config(n_max, packet)).expect("aggctl parameters validated with the spec");
    let mut sta_flow = vec![None; spec.stations.len()];
    let flows = spec
        .flows
        .iter()
        .enumerate()
        .map(|(i, f)| {
            (f.pattern == Pattern::Aggctl).then(|| {
                sta_flow[f.station as usize] = Some(i as u32);
                let origin = Instant(f.start_ns);
                AggFlow {
                    est: AggregationEstimator::new(a.estimator_config(), origin).expect("estimator parameters validated with the spec"),
                    timer: q.add_timer(Ev::AggctlTimer(i as u32)),
                    jitter: Rng::stream(seed, StreamKind::Other, (5 << 32) + i as u64),
                    rate: BitRate(0),
                    joined: false,
                    left: false,
                    origin,
                    reports_sent: 0,
                    reports_received: 0,
                    reports_lost: 0,
                    est_packets: 0,
                    est_frames: 0,
                    true_mpdus: 0,
                    true_frames: 0,
                    slot_err_sum: 0.0,
                    slot_err_max: 0.0,
                    slots_compared: 0,
                    truth: Vec::new(),
                }
            })
        })
        .collect();
    let n_flows = spec.flows.len();
    Some(Box::new(AggctlHost {
        alloc,
        alloc_timer: q.add_timer(Ev::AggctlTimer(ALLOCATOR)),
        flows,
        sta_flow,
        reports: Vec::new(),
        free: Vec::new(),
        interval: Duration(a.interval_ns),
        clock_res: a.clock_resolution_ns.max(1),
        clock_jitter: a.clock_jitter_ns,
        report_rate: a.report_rate,
        report_loss: a.report_loss,
        report_blackout: a.report_blackout_ns.map(|(x, y)| (Instant(x), Instant(y))),
        loss_rng: Rng::stream(seed, StreamKind::Other, (5 << 32) + (1 << 31)),
        last_rx_rate: vec![0; spec.stations.len()],
        seed,
        ts_rate: Series::new(n_flows, bins, bin),
        ts_est: Series::new(n_flows, bins, bin),
        ts_est_set: Series::new(n_flows, bins, bin),
    }))
}

impl World {
    pub fn is_aggctl(&self, f: usize) -> bool {
        self.aggctl.as_deref().is_some_and(|h| h.flows[f].is_some())
    }

    /// End-of-run summary of flow `f` if it is an aggctl flow.
    pub fn aggctl_out(&self, f: usize) -> Option<crate::output::AggctlOut> {
        let h = self.aggctl.as_deref()?;
        let a = h.flows[f].as_ref()?;
        let st = h.alloc.stats();
        let ratio = |x: u64, n: u64| if n == 0 { 0.0 } else { x as f64 / n as f64 };
        let view = h.alloc.station(f as u32);
        Some(crate::output::AggctlOut {
            final_rate_bps: a.rate.0,
            target_aggregation: self.spec.aggctl.target_aggregation,
            est_mean_ampdu: ratio(a.est_packets, a.est_frames),
            true_mean_ampdu: ratio(a.true_mpdus, a.true_frames),
            slot_abs_error_mean: if a.slots_compared == 0 { 0.0 } else { a.slot_err_sum / a.slots_compared as f64 },
            slot_abs_error_max: a.slot_err_max,
            slots_compared: a.slots_compared,
            reports_sent: a.reports_sent,
            reports_received: a.reports_received,
            reports_lost: a.reports_lost,
            feedback: match view.map(|v| v.feedback) {
                None => "left",
                Some(Feedback::Fresh) => "fresh",
                Some(Feedback::Held) => "held",
                Some(Feedback::Decaying) => "decaying",
            }
            .to_string(),
            allocator_reports_applied: st.reports_applied,
            allocator_holds: st.holds,
            allocator_decay_steps: st.decay_steps,
        })
    }

    /// Per-bin send rate and estimated aggregation of flow `f` (held from the last value set,
    /// 0 before the first and after the flow's stop); empty lists for other flows.
    pub fn aggctl_rows(&self, f: usize) -> (Vec<f64>, Vec<f64>) {
        let Some(h) = self.aggctl.as_deref().filter(|h| h.flows[f].is_some()) else { return (Vec::new(), Vec::new()) };
        let bin = self.spec.sim.bin_ns;
        let stop_bin = (self.flows[f].stop.as_nanos().saturating_sub(1) / bin) as usize;
        let fill = |row: &[f64], set: Option<&[f64]>| {
            let mut last = 0.0;
            row.iter()
                .enumerate()
                .map(|(b, &v)| {
                    if set.map_or(v > 0.0, |s| s[b] > 0.0) {
                        last = v;
                    }
                    if b > stop_bin {
                        0.0
                    } else {
                        last
                    }
                })
                .collect::<Vec<f64>>()
        };
        (fill(h.ts_rate.row(f), None), fill(h.ts_est.row(f), Some(h.ts_est_set.row(f))))
    }

    /// The sender of aggctl flow `f`: join at the start, one packet per pacing interval, leave
    /// at the stop.
    pub(in crate::world) fn aggctl_on_send(&mut self, f: u32) {
        let now = self.q.now();
        let fi = f as usize;
        let (stop, size, sta) = (self.flows[fi].stop, self.flows[fi].size, self.flows[fi].station);
        let h = self.aggctl.as_deref_mut().expect("aggctl host");
        let a = h.flows[fi].as_mut().expect("aggctl flow");
        if now >= stop {
            if a.joined && !a.left {
                a.left = true;
                h.alloc.handle_input(now, AllocatorInput::Leave { station: f });
                self.aggctl_apply(now);
            }
            return;
        }
        if !a.joined {
            a.joined = true;
            h.alloc.handle_input(now, AllocatorInput::Join { station: f, phy_rate: None });
            self.aggctl_apply(now);
            self.aggctl_arm_estimator(f, now);
        }
        let h = self.aggctl.as_deref_mut().expect("aggctl host");
        let rate = h.flows[fi].as_ref().expect("aggctl flow").rate;
        h.ts_rate.set(fi, now.as_nanos(), rate.0 as f64);
        let p = self.alloc(f, size, now);
        self.wired_send(p, Dir::Down, now);
        let _ = sta;
        let next = (now + rate.max(BitRate(1)).tx_time(Bytes(size as u64)).max(Duration(1))).min(stop);
        self.q.schedule(next, Ev::FlowNext(f));
    }

    /// Hand the senders every rate the allocator changed, and re-arm its watchdog timer.
    fn aggctl_apply(&mut self, now: Instant) {
        let h = self.aggctl.as_deref_mut().expect("aggctl host");
        while let Some(u) = h.alloc.poll_update() {
            if let Some(a) = h.flows.get_mut(u.station as usize).and_then(|a| a.as_mut()) {
                a.rate = u.rate;
                h.ts_rate.set(u.station as usize, now.as_nanos(), u.rate.0 as f64);
            }
        }
        if let Some(t) = h.alloc.poll_timeout() {
            let timer = h.alloc_timer;
            self.q.set_timer(timer, t.max(now));
        }
    }

    fn aggctl_arm_estimator(&mut self, f: u32, now: Instant) {
        let stop = self.flows[f as usize].stop;
        let h = self.aggctl.as_deref_mut().expect("aggctl host");
        let interval = h.interval;
        let a = h.flows[f as usize].as_mut().expect("aggctl flow");
        // Reports continue for two slots after the stop (the last packets in flight).
        if now > stop + interval * 2 {
            return;
        }
        let Some(t) = a.est.poll_timeout() else { return };
        let timer = a.timer;
        self.q.set_timer(timer, t.max(now));
    }

    pub(in crate::world) fn on_aggctl_timer(&mut self, f: u32) {
        let now = self.q.now();
        let h = self.aggctl.as_deref_mut().expect("aggctl host");
        if f == ALLOCATOR {
            h.alloc.handle_timeout(now);
            self.aggctl_apply(now);
            return;
        }
        let a = h.flows[f as usize].as_mut().expect("aggctl flow");
        a.est.handle_timeout(now);
        self.aggctl_send_reports(f, now);
        self.aggctl_arm_estimator(f, now);
    }

    /// A data packet reached its station at `t` (called for every UDP packet; only aggctl
    /// flows' go to the estimator).
    pub(in crate::world) fn aggctl_rx(&mut self, p: PktRef, t: Instant) {
        let Some(h) = self.aggctl.as_deref_mut() else { return };
        let f = p.flow;
        let sta = self.flows[f as usize].station;
        let Some(a) = h.flows[f as usize].as_mut() else { return };
        // What the receiver's clock says.
        let jitter = if h.clock_jitter > 0 { a.jitter.gen_range_inclusive(h.clock_jitter) } else { 0 };
        let ts = (t.as_nanos() + jitter) / h.clock_res * h.clock_res;
        let rate = h.last_rx_rate[sta as usize];
        let pkt = RxPacket {
            ampdu_ref: None,
            rate: (h.report_rate && rate > 0).then_some(BitRate(rate)),
            mcs: None,
        };
        a.est.handle_input(Instant(ts), pkt);
        self.aggctl_send_reports(f, t);
        self.aggctl_arm_estimator(f, t);
    }

    /// Send the reports the estimator of flow `f` produced as uplink packets from its station.
    fn aggctl_send_reports(&mut self, f: u32, now: Instant) {
        let fi = f as usize;
        let sta = self.flows[fi].station;
        let warmup = self.warmup;
        loop {
            let h = self.aggctl.as_deref_mut().expect("aggctl host");
            let interval = h.interval;
            let a = h.flows[fi].as_mut().expect("aggctl flow");
            let Some(rep) = a.est.poll_report() else { break };
            a.reports_sent += 1;
            let slot_start = a.origin + interval.saturating_mul(rep.seq as u64);
            if let Some(mu) = rep.mean_mpdus() {
                h.ts_est.set(fi, now.as_nanos(), mu);
                h.ts_est_set.set(fi, now.as_nanos(), 1.0);
                if slot_start >= warmup {
                    a.est_packets += rep.packets as u64;
                    a.est_frames += rep.aggregates as u64;
                    if let Some(&(frames, mpdus)) = a.truth.get(rep.seq as usize).filter(|t| t.0 > 0) {
                        a.true_frames += frames as u64;
                        a.true_mpdus += mpdus as u64;
                        let e = (mu - mpdus as f64 / frames as f64).abs();
                        a.slot_err_sum += e;
                        a.slot_err_max = a.slot_err_max.max(e);
                        a.slots_compared += 1;
                    }
                }
            }
            let payload = rep.encode();
            let slot = match h.free.pop() {
                Some(s) => {
                    h.reports[s as usize] = Some(payload);
                    s
                }
                None => {
                    h.reports.push(Some(payload));
                    h.reports.len() as u32 - 1
                }
            };
            let p = self.alloc_control(f, REPORT_IP_LEN, now);
            self.pkts[p.id as usize].tcp = TcpMeta::Aggctl { slot };
            self.station_enqueue(sta, p, now);
        }
    }

    /// A report reached the server at `t`: decode it and hand it to the allocator.
    pub(in crate::world) fn aggctl_report_arrive(&mut self, p: PktRef, t: Instant) {
        let TcpMeta::Aggctl { slot } = self.pkts[p.id as usize].tcp else { unreachable!("not an aggctl report") };
        let h = self.aggctl.as_deref_mut().expect("aggctl host");
        let payload = h.reports[slot as usize].take().expect("report in flight");
        h.free.push(slot);
        let blackout = h.report_blackout.is_some_and(|(x, y)| t >= x && t < y);
        let lost = blackout || (h.report_loss > 0.0 && h.loss_rng.bernoulli(h.report_loss));
        if let Some(a) = h.flows[p.flow as usize].as_mut() {
            if lost {
                a.reports_lost += 1;
            } else {
                a.reports_received += 1;
            }
        }
        if lost {
            self.release(p);
            return;
        }
        if let Ok(report) = AggReport::decode(&payload) {
            h.alloc.handle_input(t, AllocatorInput::Report { station: p.flow, report });
        }
        self.release(p);
        self.aggctl_apply(t);
    }

    /// Free the payload of a report dropped for good (not a retransmission copy) and count it.
    pub(in crate::world) fn aggctl_drop(&mut self, p: PktRef) {
        let pk = self.pkts[p.id as usize];
        let TcpMeta::Aggctl { slot } = pk.tcp else { return };
        if pk.ghost {
            return;
        }
        let h = self.aggctl.as_deref_mut().expect("aggctl host");
        if h.reports[slot as usize].take().is_some() {
            h.free.push(slot);
            if let Some(a) = h.flows[pk.flow as usize].as_mut() {
                a.reports_lost += 1;
            }
        }
    }

    /// A data PPDU ended: for a downlink A-MPDU to a station receiving an aggctl flow, note its
    /// PHY rate (what the receiver's radio header shows) and count it in the truth of its slot.
    pub(in crate::world) fn aggctl_on_ppdu(&mut self, sta: u32, dir: Dir, txv: TxVector, mpdus: &[(u32, PktRef, bool)], end: Instant) {
        let Some(h) = self.aggctl.as_deref_mut() else { return };
        if dir != Dir::Down || !mpdus.iter().any(|m| m.2) {
            return;
        }
        h.last_rx_rate[sta as usize] = txv.data_rate_bps();
        let Some(f) = h.sta_flow[sta as usize] else { return };
        let interval = h.interval.as_nanos();
        let a = h.flows[f as usize].as_mut().expect("aggctl flow");
        if end < a.origin {
            return;
        }
        let k = ((end - a.origin).as_nanos() / interval) as usize;
        if a.truth.len() <= k {
            a.truth.resize(k + 1, (0, 0));
        }
        a.truth[k].0 += 1;
        a.truth[k].1 += mpdus.len() as u32;
    }

    /// Schedule the stream changes of `stations[].nss_change`.
    pub(in crate::world) fn schedule_nss_changes(&mut self) {
        for i in 0..self.spec.stations.len() {
            if let Some((t, _)) = self.spec.stations[i].nss_change {
                self.q.schedule(Instant(t), Ev::NssChange(i as u32));
            }
        }
    }

    /// Station `i` now uses at most `n` spatial streams, both directions: a fixed rate keeps
    /// its MCS with `n` streams; rate control restarts over the rates with at most `n` streams
    /// (Minstrel-HT with fresh statistics, as when a driver's rate set changes).
    pub(in crate::world) fn on_nss_change(&mut self, i: u32) {
        let now = self.q.now();
        let iu = i as usize;
        let st = &self.spec.stations[iu];
        let Some((_, n)) = st.nss_change else { return };
        let (std, width, gi) = (self.air.standard, self.spec.phy.channel_width, self.spec.phy.guard_interval);
        let seed = self.aggctl.as_deref().map_or(0, |h| h.seed);
        let snr = self.stations[iu].snr.at(now);
        let rc_kind = st.rate_control;
        let s = &mut self.stations[iu];
        s.tx.nss = s.tx.nss.min(n);
        let tx = s.tx;
        for dir in 0..2u64 {
            s.rc[dir as usize] = match rc_kind {
                crate::spec::RateControl::Ideal => RateControl::Ideal(IdealRate::new(rate_table(std, width, gi, n), snr)),
                crate::spec::RateControl::Minstrel => {
                    let rng = Rng::stream(seed, StreamKind::RateControl, (1 << 32) + 2 * i as u64 + dir);
                    RateControl::MinstrelHt(Box::new(MinstrelHt::new(rate_table(std, width, gi, n), MinstrelParams::default(), rng, now)))
                }
                crate::spec::RateControl::Fixed => RateControl::Fixed(tx),
            };
        }
    }
}

impl AggctlHost {
    /// A flow appeared during the run (an emulator's external flow): it is not aggctl.
    pub(in crate::world) fn push_other_flow(&mut self) {
        self.flows.push(None);
    }
}
