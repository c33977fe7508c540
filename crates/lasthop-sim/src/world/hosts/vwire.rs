//! The split proxy at the AP and the Virtual Wires loop ("Virtual Wires: Rethinking WiFi
//! networks", Yang, Jiang, Misra, Rubenstein): the simulator as host of
//! `lasthop_algo::control::vwire` and of the TCP endpoints of a split session.
//!
//! **Session splitting** (§III-B). A TCP download with `split = true` is two connections. The
//! server's sender (`split_wired_cc`, default BBR) talks to a receiver *in the AP* — its ACKs
//! leave the AP on the wired uplink, so that connection sees the wired RTT only — and a sender in
//! the AP (`cc`, the flow's) carries the bytes to the station's receiver; its segments enter the
//! AP's queue for the station directly (no wired hop). The flow's `World::tcp` entry keeps the
//! server's sender and the station's receiver, so the world's TCP host serves both ends as for an
//! end-to-end flow; this module holds the two endpoints in the AP.
//!
//! Between them, the relay buffer: bytes the AP's receiver delivered in order and the station has
//! not acknowledged, at most `vwire.relay_buffer` per flow. Of those, up to `vwire.sndbuf` sit in
//! the WiFi-side socket (written, unacknowledged — what `ioctl(SIOCOUTQ)` reports, §III-F), the
//! rest waits in the proxy ("unread"). The AP's receiver advertises the buffer minus its
//! out-of-order bytes minus the relay backlog, so a full relay buffer closes the server's window
//! (backpressure); when the window has at least doubled (and grown by two segments) since it was
//! last advertised the proxy sends a window update, as Linux does after the application reads.
//! The WiFi-side sender obeys TCP small queues as Linux sizes them for a socket on a mac80211
//! interface: max(2 segments, sk_pacing_rate >> 7), capped at `vwire.tsq`
//! (`tcp_limit_output_bytes`, 1 MiB) unless it paces itself (`TcpSender::tsq_limit_now`), in
//! bytes in the AP's queues and MAC (released when the MAC is done with a frame: Block Ack or
//! drop, or when the queue drops it), so its backlog stays in the socket where the proxy can
//! see it. With `ap.tcp_small_queues = false` (an AP host whose `wlan0` orphans each packet,
//! as the emulator's TUN device does) nothing below the socket holds them.
//!
//! **Virtual Wires** (`vwire.enabled`, §III-C–F), every `vwire.period` (2 s): each split flow's
//! class comes from `app_class` or from the shipped random forest over a `FeatureWindow` of the
//! segments the proxy forwarded (device type from `stations.device`; before the first prediction
//! a flow counts as bulk); its utility from `utility` or the class's default; b̂_i is the WiFi
//! side's goodput (bytes the station acknowledged) over the period; L_i is the station's current
//! downlink PHY rate (what `iwinfo` reports) times `vwire.efficiency` (default 0.75, the share of
//! the PHY rate TCP gets through an aggregating 802.11n link — our number; the optimizer's
//! allocation is invariant to a common scale of the L_i, the efficiency only keeps
//! U = Σ b̂_i/L_i on the scale of the busy fraction). The `VwireController` turns these into
//! per-flow rates b_i = a_i·L_i, which the `TokenScheduler` enforces on what the proxy *writes
//! into the WiFi-side sockets* — each split flow is its own queue (the paper's per-class queues
//! with one flow per class). Writes go in segments of one MSS. The scheduler is managed only
//! while the `BottleneckDetector` says the WiFi side is the bottleneck, from Σ SIOCOUTQ sampled
//! every `vwire.sample` (10 ms); otherwise the proxy forwards everything at once (FIFO).
//! Work conservation (our rule, the paper gives none): a flow without tokens is served only when
//! no flow that holds tokens is held back by the WiFi — more than two segments in its socket
//! that its sender cannot send yet, or relay data and a full socket — since the airtime should
//! then go to that flow.
//!
//! **Paced applications** (`app_rate`, any TCP bulk flow, split or not): the server's
//! application writes `app_rate × 10 ms` every 10 ms (a video at a constant bit rate, no
//! player buffer); TCP sends as fast as it may, so a backlog built during a dip is caught up.
//!
//! **Split uploads** (`upload.rs`): a TCP upload with `split = true` ends at the proxy too, its
//! window bounded by `vwire.window_clamp` (the proxy's `TCP_WINDOW_CLAMP`).
//!
//! The Virtual Wires method is covered by Columbia University patents (US 10,687,341 B2 and
//! US 11,297,634).

use crate::engine::{EventQueue, TimerId};
use crate::world::{DropWhy, Ev, PktRef, TcpMeta, World};
use crate::metrics::LogHistogram;
use crate::output::{SplitOut, SplitPeriods, SplitSide, VwireOut};
use crate::spec::{utility_of, FlowSpec, Spec};
use lasthop_algo::control::vwire::{
    AppClass, ControllerConfig, DeviceType, FlowIo, Forest, ProxyConfig, SplitProxy,
};
use lasthop_algo::tcp::{
    ack_ip_len, data_ip_len, AckSegment, TcpReceiver, TcpReceiverConfig, TcpSender, TcpSenderConfig,
};
use lasthop_core::{Duration, Instant, Rng};
use std::borrow::Cow;

mod upload;

/// `Ev::Vwire` targets: the detector's sampling tick, the feedback period, an application's
/// write tick (flow | `APP`), else a split flow's endpoint timer.
pub(in crate::world) const TICK_SAMPLE: u32 = u32::MAX;
pub(in crate::world) const TICK_PERIOD: u32 = u32::MAX - 1;
const APP: u32 = 1 << 31;
/// Write interval of a paced application.
const APP_TICK: Duration = Duration::from_millis(10);

/// What the proxy does with a flow.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(in crate::world) enum Split {
    /// Not split (also every flow added at run time, `World::add_external_flow`).
    No,
    /// A split download: its index in `Host::conns`.
    Down(u32),
    /// A split upload: its index in `Host::ups`.
    Up(u32),
}

/// The proxy and the paced applications.
pub(in crate::world) struct Host {
    /// Per flow, split or not; a flow added at run time is pushed as `Split::No`.
    pub(in crate::world) split: Vec<Split>,
    conns: Vec<SplitConn>,
    ups: Vec<upload::UpConn>,
    apps: Vec<AppSource>,
    /// The deciders (`lasthop_algo::control::vwire::proxy`): slot c is split flow c.
    proxy: Option<Box<SplitProxy>>,
    relay_buffer: u64,
    sndbuf: u64,
    /// The WiFi-side senders count their bytes in the AP's queues and MAC against TCP small
    /// queues (`ap.tcp_small_queues`); false: nothing below the socket holds them.
    counts_below: bool,
    period: Duration,
    sample: Duration,
    efficiency: f64,
    /// A WiFi-side sender's queued bytes drained: pump at the end of the exchange.
    dirty: bool,
    /// Per period (run-level): start of the next one's measurement.
    t_ns: Vec<u64>,
    managed: Vec<bool>,
    budget: Vec<f64>,
    utility: Vec<f64>,
}

struct AppSource {
    flow: u32,
    rate_bps: f64,
    carry: f64,
    stop: Instant,
}

/// One split flow's endpoints in the AP and its bookkeeping.
struct SplitConn {
    flow: u32,
    sta: u32,
    mss: u64,
    /// Server → AP connection, AP end.
    rx: TcpReceiver,
    /// AP → station connection, AP end.
    tx: TcpSender,
    tx_cc: &'static str,
    /// Bytes written into `tx`.
    written: u64,
    /// `tx`'s bytes in the AP's queues and MAC (TCP small queues).
    queued_below: u64,
    /// What the AP's receiver last advertised to the server.
    adv: Advert,
    timer: TimerId,
    /// Its class was given (`app_class`), not predicted.
    class_fixed: bool,
    /// Largest relay backlog so far.
    backlog_max: u64,
    backlog_sum: f64,
    backlog_n: u64,
    rtt: LogHistogram,
    per: SplitPeriods,
}

/// What a split connection's receiver in the AP last advertised (the right edge and the window
/// of its last ACK) and the window updates it sent.
struct Advert {
    right: u64,
    wnd: u64,
    mss: u64,
    updates: u64,
}

impl Advert {
    fn new(wnd: u64, mss: u64) -> Self {
        Advert { right: wnd, wnd, mss, updates: 0 }
    }

    /// `rx`'s next ACK, carrying `window` (the proxy's, which `poll_ack` does not change); when
    /// none is due, a window update if the window has at least doubled (and its right edge grown
    /// by two segments) since it was last advertised, as Linux sends one after the application
    /// reads.
    fn next_ack(&mut self, rx: &mut TcpReceiver, now: Instant, window: u64) -> Option<AckSegment> {
        let mut ack = match rx.poll_ack(now) {
            Some(a) => a,
            None if window >= 2 * self.wnd && rx.delivered() + window >= self.right + 2 * self.mss => {
                self.updates += 1;
                rx.build_ack()
            }
            None => return None,
        };
        ack.rwnd = window;
        self.wnd = window;
        self.right = ack.cum_ack + window;
        Some(ack)
    }
}

impl SplitConn {
    fn acked(&self) -> u64 {
        self.tx.stats().app_bytes_acked
    }
    /// Bytes delivered in order by the AP's receiver and not yet acknowledged by the station.
    fn backlog(&self) -> u64 {
        self.rx.delivered() - self.acked()
    }
    /// In the proxy, not yet written into the WiFi-side socket.
    fn unread(&self) -> u64 {
        self.rx.delivered() - self.written
    }
    /// Written into the WiFi-side socket and not acknowledged (SIOCOUTQ).
    fn outq(&self) -> u64 {
        self.written - self.acked()
    }
    /// What the proxy's write planner needs to know of it (slot = its index).
    fn io(&self, slot: usize, sndbuf: u64) -> FlowIo {
        FlowIo { slot, unread: self.unread(), outq: self.outq(), in_flight: self.tx.stats().bytes_in_flight, sndbuf, mss: self.mss }
    }
    /// The window the AP's receiver advertises: its buffer minus out-of-order bytes minus the
    /// relay backlog.
    fn window(&self) -> u64 {
        self.rx.rwnd().saturating_sub(self.backlog())
    }
}

fn class_of(name: &str) -> Option<AppClass> {
    AppClass::ALL.into_iter().find(|c| c.name() == name)
}

fn device_of(name: &str) -> DeviceType {
    match name {
        "phone" => DeviceType::Phone,
        "laptop" => DeviceType::Laptop,
        "tv" => DeviceType::Tv,
        _ => DeviceType::Unknown,
    }
}

/// The spec of the server's end of flow `f`: a split flow's server runs `split_wired_cc` with
/// that controller's pacing default.
/// A split upload's station keeps its own `cc` (the AP's wired side runs `split_wired_cc`).
pub(in crate::world) fn server_side(f: &FlowSpec) -> Cow<'_, FlowSpec> {
    if !f.split || f.direction != crate::spec::Direction::Down {
        return Cow::Borrowed(f);
    }
    Cow::Owned(server_side_of(f))
}

/// Flow `f` as its wired-side sender runs it: `split_wired_cc` with that controller's pacing
/// default.
fn server_side_of(f: &FlowSpec) -> FlowSpec {
    let mut s = f.clone();
    s.cc = f.split_wired_cc;
    s.pacing = None;
    s
}

/// A sender for the AP → station side of a split flow (the flow's `cc`, `pacing`, `hystart`,
/// `extra_acked`), with the proxy's TCP small-queues limit.
fn wifi_sender(f: &FlowSpec, tsq: u64, seed: u64) -> (TcpSender, &'static str) {
    let mss = f.packet_size.saturating_sub(lasthop_algo::tcp::IP_TCP_HEADERS).max(64);
    let (cc, name, pace) = crate::world::tcp::cc_config(f, seed);
    let cfg = TcpSenderConfig { mss, cc, pacing: f.pacing.unwrap_or(pace), tsq_limit: tsq, pacing_shift: crate::world::tcp::MAC80211_PACING_SHIFT, ..TcpSenderConfig::default() };
    (TcpSender::new(cfg, Instant(f.start_ns)), name)
}

/// The host for a spec, if any flow is split or paced.
pub(in crate::world) fn new_host(spec: &Spec, seed: u64, q: &mut EventQueue<Ev>) -> Option<Box<Host>> {
    let v = &spec.vwire_or_default();
    let mut split = vec![Split::No; spec.flows.len()];
    let mut conns = Vec::new();
    let mut ups = Vec::new();
    let mut apps = Vec::new();
    for (i, f) in spec.flows.iter().enumerate() {
        if f.app_rate_bps > 0 {
            apps.push(AppSource { flow: i as u32, rate_bps: f.app_rate_bps as f64, carry: 0.0, stop: Instant(f.stop_ns) });
        }
        if !f.split {
            continue;
        }
        // The AP's sender of the flow (towards the station, or the server for an upload).
        let tx_seed = Rng::stream(seed, lasthop_core::rng::StreamKind::Other, (5 << 32) + i as u64).next_u64();
        if f.direction == crate::spec::Direction::Up {
            split[i] = Split::Up(ups.len() as u32);
            ups.push(upload::new_conn(f, i as u32, v, tx_seed, q));
            continue;
        }
        let mss = f.packet_size.saturating_sub(lasthop_algo::tcp::IP_TCP_HEADERS).max(64);
        let (tx, tx_cc) = wifi_sender(f, v.tsq_bytes, tx_seed);
        let rx = TcpReceiver::new(TcpReceiverConfig { mss, rwnd: v.relay_buffer_bytes, ..TcpReceiverConfig::default() });
        let fixed_class = f.app_class.as_deref().and_then(class_of);
        split[i] = Split::Down(conns.len() as u32);
        conns.push(SplitConn {
            flow: i as u32,
            sta: f.station,
            mss: mss as u64,
            rx,
            tx,
            tx_cc,
            written: 0,
            queued_below: 0,
            adv: Advert::new(v.relay_buffer_bytes, mss as u64),
            timer: q.add_timer(Ev::Vwire(i as u32)),
            class_fixed: fixed_class.is_some(),
            backlog_max: 0,
            backlog_sum: 0.0,
            backlog_n: 0,
            rtt: LogHistogram::new(),
            per: SplitPeriods::default(),
        });
    }
    if conns.is_empty() && ups.is_empty() && apps.is_empty() {
        return None;
    }
    let proxy = (!conns.is_empty()).then(|| {
        let cfg = ProxyConfig {
            slots: conns.len(),
            enabled: v.enabled,
            controller: ControllerConfig { period: Duration(v.period_ns), ..ControllerConfig::default() },
            work_conserving: v.work_conserving,
            ..ProxyConfig::default()
        };
        let mut p = SplitProxy::new(cfg, Forest::shipped()).expect("valid proxy parameters");
        for sc in &conns {
            let f = &spec.flows[sc.flow as usize];
            let slot = p.open(device_of(&spec.stations[f.station as usize].device), f.app_class.as_deref().and_then(class_of), f.utility.as_ref().map(utility_of));
            debug_assert_eq!(slot.map(|c| Split::Down(c as u32)), Some(split[sc.flow as usize]));
        }
        Box::new(p)
    });
    Some(Box::new(Host {
        split,
        conns,
        ups,
        apps,
        proxy,
        relay_buffer: v.relay_buffer_bytes,
        sndbuf: v.sndbuf_bytes,
        counts_below: spec.ap.tcp_small_queues,
        period: Duration(v.period_ns),
        sample: Duration(v.sample_ns),
        efficiency: v.efficiency,
        dirty: false,
        t_ns: Vec::new(),
        managed: Vec::new(),
        budget: Vec::new(),
        utility: Vec::new(),
    }))
}

impl World {
    /// Flow `f` is split at the AP (a download or an upload).
    #[inline]
    pub(in crate::world) fn is_split(&self, f: u32) -> bool {
        self.vwire.as_deref().is_some_and(|h| h.split[f as usize] != Split::No)
    }

    /// Flow `f` is a split upload.
    #[inline]
    pub(in crate::world) fn is_split_upload(&self, f: u32) -> bool {
        self.up_of(f).is_some()
    }

    /// Flow `f`'s index among the split uploads, if it is one.
    fn up_of(&self, f: u32) -> Option<usize> {
        match self.vwire.as_deref()?.split[f as usize] {
            Split::Up(c) => Some(c as usize),
            _ => None,
        }
    }

    /// Flow `f`'s index among the split downloads, if it is one.
    fn down_of(&self, f: u32) -> Option<usize> {
        match self.vwire.as_deref()?.split[f as usize] {
            Split::Down(c) => Some(c as usize),
            _ => None,
        }
    }

    fn conn_of(&self, f: u32) -> usize {
        self.down_of(f).expect("a split download")
    }

    fn host(&mut self) -> &mut Host {
        self.vwire.as_deref_mut().expect("vwire host")
    }

    /// Schedule the first ticks (called once from `run`).
    pub(in crate::world) fn vwire_start(&mut self) {
        let Some(h) = self.vwire.as_deref() else { return };
        let starts: Vec<(u32, Instant)> = h.apps.iter().map(|a| (a.flow, self.flows[a.flow as usize].start)).collect();
        let any_split = !h.conns.is_empty();
        let (period, sample) = (h.period, h.sample);
        for (f, t) in starts {
            self.q.schedule(t, Ev::Vwire(f | APP));
        }
        if any_split {
            self.q.schedule(Instant::ZERO + period, Ev::Vwire(TICK_PERIOD));
            self.q.schedule(Instant::ZERO + sample, Ev::Vwire(TICK_SAMPLE));
        }
    }

    pub(in crate::world) fn on_vwire(&mut self, target: u32) {
        let now = self.q.now();
        match target {
            TICK_SAMPLE => self.vwire_sample(now),
            TICK_PERIOD => self.vwire_period(now),
            t if t & APP != 0 => self.vwire_app(t & !APP, now),
            f => {
                if let Some(c) = self.up_of(f) {
                    return self.vwire_up_timer(c, now);
                }
                let c = self.conn_of(f);
                let sc = &mut self.host().conns[c];
                sc.rx.handle_timeout(now);
                sc.tx.handle_timeout(now);
                self.vwire_pump(now);
            }
        }
    }

    /// A paced application writes its next 10 ms.
    fn vwire_app(&mut self, f: u32, now: Instant) {
        let h = self.host();
        let a = h.apps.iter_mut().find(|a| a.flow == f).expect("app source");
        if now >= a.stop {
            return;
        }
        let want = a.rate_bps / 8.0 * APP_TICK.as_secs_f64() + a.carry;
        let bytes = want.floor();
        a.carry = want - bytes;
        self.tcp[f as usize].as_mut().expect("tcp flow").sender.app_write(bytes as u64);
        self.q.schedule(now + APP_TICK, Ev::Vwire(f | APP));
        self.tcp_pump(f, now);
    }

    /// A server segment of split flow `f` reached the AP (an ACK, for a split upload): it ends
    /// at the proxy.
    pub(in crate::world) fn vwire_wired_data(&mut self, p: PktRef, now: Instant) {
        if let Some(c) = self.up_of(p.flow) {
            return self.vwire_up_ack(c, p, now);
        }
        let pk = self.pkts[p.id as usize];
        let TcpMeta::Data { seg, .. } = pk.tcp else { unreachable!("data on the wired downlink of a split flow") };
        let c = self.conn_of(p.flow);
        self.host().conns[c].rx.handle_segment(now, &seg);
        self.release(p);
        self.vwire_pump(now);
    }

    /// A station's ACK of split flow `f` reached the AP (its data, for a split upload): it ends
    /// at the proxy.
    pub(in crate::world) fn vwire_wifi_ack(&mut self, p: PktRef, t: Instant) {
        if let Some(c) = self.up_of(p.flow) {
            return self.vwire_up_data(c, p, t);
        }
        let pk = self.pkts[p.id as usize];
        let TcpMeta::Ack { ack, .. } = pk.tcp else { unreachable!("ACK on the uplink of a split flow") };
        let counted = t >= self.warmup;
        let c = self.conn_of(p.flow);
        let sc = &mut self.host().conns[c];
        sc.tx.handle_ack(t, &ack);
        if counted {
            if let Some(r) = sc.tx.stats().latest_rtt {
                sc.rtt.record(r.as_nanos());
            }
        }
        self.release(p);
        let now = self.q.now().max(t);
        self.vwire_pump(now);
    }

    /// The AP is done with packet `p` (its MAC acknowledged or dropped it, or its queue dropped
    /// it): a WiFi-side segment's bytes leave TCP small queues.
    pub(in crate::world) fn vwire_tx_done(&mut self, p: PktRef) {
        let down = self.down_of(p.flow).is_some();
        if !down || !matches!(self.pkts[p.id as usize].tcp, TcpMeta::Data { .. }) {
            return;
        }
        let c = self.conn_of(p.flow);
        let h = self.host();
        let sc = &mut h.conns[c];
        sc.queued_below = sc.queued_below.saturating_sub(p.len as u64);
        h.dirty = true;
    }

    /// A queue drop at the AP of a split flow's segment (`drop_pkt`).
    pub(in crate::world) fn vwire_dropped(&mut self, p: PktRef, why: DropWhy) {
        if matches!(why, DropWhy::Queue) {
            self.vwire_tx_done(p);
        }
    }

    /// Pump the proxy if a WiFi-side sender's queue drained.
    pub(in crate::world) fn vwire_pump_dirty(&mut self, now: Instant) {
        if self.vwire.as_deref().is_some_and(|h| h.dirty) {
            self.host().dirty = false;
            self.vwire_pump(now);
        }
    }

    /// Move relay bytes into the WiFi-side sockets (through the token scheduler when managed),
    /// send what the WiFi-side senders may, ACK the server, re-arm the timers.
    fn vwire_pump(&mut self, now: Instant) {
        if self.vwire.as_deref().is_none_or(|h| h.conns.is_empty()) {
            return;
        }
        self.vwire_write(now);
        let n = self.host().conns.len();
        let counts_below = self.host().counts_below;
        for c in 0..n {
            // WiFi-side segments into the AP's queue for the station.
            loop {
                let sc = &mut self.host().conns[c];
                let Some(seg) = sc.tx.poll_transmit(now, sc.queued_below) else { break };
                let len = data_ip_len(seg.len);
                if counts_below {
                    sc.queued_below += len as u64;
                }
                let (f, sta) = (sc.flow, sc.sta);
                self.host().proxy.as_deref_mut().expect("a proxy for split flows").on_segment(c, now, len);
                let p = self.alloc_control(f, len, now);
                self.pkts[p.id as usize].tcp = TcpMeta::Data { seg, rev: false };
                self.ap_enqueue(sta, p, now);
            }
            // The AP's ACKs to the server, with the relay buffer's window; a window update
            // when the window has opened.
            loop {
                let sc = &mut self.host().conns[c];
                let w = sc.window();
                let Some(ack) = sc.adv.next_ack(&mut sc.rx, now, w) else { break };
                let f = sc.flow;
                let p = self.alloc_control(f, ack_ip_len(ack.n_sack), now);
                self.pkts[p.id as usize].tcp = TcpMeta::Ack { ack, rev: false };
                self.wired_send(p, crate::world::Dir::Up, now);
            }
            let sc = &mut self.host().conns[c];
            let t = [sc.rx.poll_timeout(), sc.tx.poll_timeout()].into_iter().flatten().min();
            if let Some(t) = t {
                let timer = sc.timer;
                self.q.set_timer(timer, t.max(now));
            }
        }
    }

    /// The proxy writes relay bytes into the WiFi-side sockets as its deciders plan it
    /// (`SplitProxy::plan_writes`): all it may when unmanaged, one MSS at a time in the token
    /// scheduler's order when managed.
    fn vwire_write(&mut self, now: Instant) {
        let h = self.vwire.as_deref_mut().expect("vwire host");
        let sndbuf = h.sndbuf;
        let mut io: Vec<FlowIo> = h.conns.iter().enumerate().map(|(c, sc)| sc.io(c, sndbuf)).collect();
        let mut plan = Vec::new();
        h.proxy.as_deref_mut().expect("a proxy for split flows").plan_writes(now, &mut io, &mut plan);
        for (c, k) in plan {
            let sc = &mut h.conns[c];
            sc.tx.app_write(k);
            sc.written += k;
        }
    }

    /// The bottleneck detector's sample of Σ SIOCOUTQ; relay backlog statistics.
    fn vwire_sample(&mut self, now: Instant) {
        let counted = now >= self.warmup;
        let sample = self.host().sample;
        self.q.schedule(now + sample, Ev::Vwire(TICK_SAMPLE));
        let h = self.vwire.as_deref_mut().expect("vwire host");
        let mut outq = 0;
        for sc in &mut h.conns {
            outq += sc.outq();
            let b = sc.backlog();
            if counted {
                sc.backlog_max = sc.backlog_max.max(b);
                sc.backlog_sum += b as f64;
                sc.backlog_n += 1;
            }
        }
        h.proxy.as_deref_mut().expect("a proxy for split flows").on_sample(now, outq);
        // Tokens accrue with time: give a flow waiting for them its chance.
        self.vwire_pump(now);
    }

    /// The feedback period: classify, measure, allocate, record.
    fn vwire_period(&mut self, now: Instant) {
        let rates: Vec<f64> = {
            let h = self.vwire.as_deref().expect("vwire host");
            h.conns.iter().map(|sc| self.stations[sc.sta as usize].rc[0].current().data_rate_bps() as f64 * h.efficiency).collect()
        };
        let period = self.host().period;
        self.q.schedule(now + period, Ev::Vwire(TICK_PERIOD));
        let h = self.vwire.as_deref_mut().expect("vwire host");
        let secs = h.period.as_secs_f64();
        let inputs: Vec<(usize, f64, u64)> = h.conns.iter().enumerate().map(|(c, sc)| (c, rates[c], sc.acked())).collect();
        let rec = h.proxy.as_deref_mut().expect("a proxy for split flows").on_period(now, secs, &inputs);
        let goodput: Vec<f64> = rec.slots.iter().map(|r| r.goodput_bps).collect();
        let alloc: Vec<(f64, f64)> = rec.slots.iter().map(|r| (r.alloc_rate_bps, r.alloc_airtime)).collect();
        let (managed, budget, utility) = (rec.managed, rec.airtime_budget, rec.utility);
        for (sc, r) in h.conns.iter_mut().zip(&rec.slots) {
            sc.per.class.push(r.class.name().to_string());
            sc.per.predicted.push(r.predicted.map(|k| k.name().to_string()));
        }
        for (c, sc) in h.conns.iter_mut().enumerate() {
            let (backlog, outq) = (sc.backlog(), sc.outq());
            let p = &mut sc.per;
            p.goodput_bps.push(goodput[c]);
            p.link_rate_bps.push(rates[c]);
            p.airtime_used.push(if rates[c] > 0.0 { goodput[c] / rates[c] } else { 0.0 });
            p.alloc_rate_bps.push(alloc[c].0);
            p.alloc_airtime.push(alloc[c].1);
            p.relay_backlog_bytes.push(backlog);
            p.sndbuf_bytes.push(outq);
        }
        h.t_ns.push(now.as_nanos());
        h.managed.push(managed);
        h.budget.push(budget);
        h.utility.push(utility);
        self.vwire_pump(now);
    }

    /// End-of-run record of split flow `f`.
    pub fn split_out(&self, f: usize) -> Option<SplitOut> {
        let h = self.vwire.as_deref()?;
        let Split::Down(c) = h.split[f] else { return None };
        let sc = &h.conns[c as usize];
        let wired = self.tcp[f].as_ref()?;
        let side = |s: lasthop_algo::tcp::SenderStats, cc: &str| SplitSide {
            cc: cc.to_string(),
            bytes_acked: s.app_bytes_acked,
            retransmits: s.retransmits,
            rto_count: s.rto_count,
            fast_recoveries: s.fast_recovery_count,
            cwnd_bytes: s.cwnd,
            srtt_ns: s.srtt.as_nanos(),
            min_rtt_ns: s.min_rtt.as_nanos(),
        };
        Some(SplitOut {
            wired: side(wired.sender.stats(), wired.cc_name),
            wifi: side(sc.tx.stats(), sc.tx_cc),
            class: h.proxy.as_deref().and_then(|p| p.class_of(c as usize)).map_or(AppClass::Bulk, |c| c.0).name().to_string(),
            class_fixed: sc.class_fixed,
            relay_buffer_bytes: h.relay_buffer,
            relay_backlog_max_bytes: sc.backlog_max,
            relay_backlog_mean_bytes: if sc.backlog_n == 0 { 0.0 } else { sc.backlog_sum / sc.backlog_n as f64 },
            relay_backlog_end_bytes: sc.backlog(),
            window_updates: sc.adv.updates,
            wifi_rtt_ns: sc.rtt.summary(),
            periods: sc.per.clone(),
        })
    }

    /// Run-level record of the proxy, if any flow is split.
    pub fn vwire_out(&self) -> Option<VwireOut> {
        let h = self.vwire.as_deref()?;
        if h.conns.is_empty() {
            return None;
        }
        let p = h.proxy.as_deref().filter(|p| p.config().enabled);
        let st = p.map(|p| p.scheduler().stats().clone());
        Some(VwireOut {
            enabled: p.is_some(),
            period_ns: h.period.as_nanos(),
            efficiency: h.efficiency,
            t_ns: h.t_ns.clone(),
            managed: h.managed.clone(),
            airtime_budget: h.budget.clone(),
            utility: h.utility.clone(),
            bottleneck_transitions: p.map_or(0, |p| p.detector().transitions()),
            token_sends: st.as_ref().map_or(0, |s| s.token_sends),
            excess_sends: st.as_ref().map_or(0, |s| s.excess_sends),
            fifo_sends: st.as_ref().map_or(0, |s| s.fifo_sends),
        })
    }
}
