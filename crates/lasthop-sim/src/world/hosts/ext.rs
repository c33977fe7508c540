//! Traffic from outside the model: the hook that lets a real-time host (the emulator in
//! `lasthop-live`) push real packets through the simulated cell.
//!
//! The world stays the owner of its event queue but not of time: the host calls
//! [`World::step_to`] with the wall-clock instant (nanoseconds since the emulation began),
//! which handles every event up to it and moves `now` there; it then hands each packet read
//! from a TUN device to [`World::inject`] with a `tag` naming the packet's bytes in the host's
//! buffer. The packet crosses the model exactly like a simulated one of the same length (the
//! wired link for downlink, the AP's queue discipline, EDCA, A-MPDU aggregation, Block Ack and
//! per-MPDU loss, relays; uplink from the station's queue the other way), and the world
//! reports its fate through [`World::drain_external`]: delivered at an instant (when the host
//! should write it to the destination TUN) or dropped (the host frees its buffer). Real
//! programs' ACKs are packets like any other, so they contend for the medium.
//!
//! The packet's ECN field goes in with it ([`World::inject_ecn`]): the model's disciplines
//! mark ECN-capable packets as they mark simulated ones, and the fate says whether the packet
//! left CE-marked, for the host to write the mark into the real packet.
//!
//! Each external flow (a 5-tuple, chosen by the host) is a flow of the run with pattern
//! "external": FQ-CoDel hashes it on its own, and its counters, delay histogram and time
//! series appear in the result file like a simulated flow's.
//!
//! A flow crosses one [`ExtLeg`] of the path: the whole of it (server ↔ station, the model
//! forwards at the AP itself), or, when the host runs real AP software between the wired link
//! and the cell (the emulator's AP host), only the wired leg (server ↔ AP) or only the WiFi
//! leg (AP ↔ station). A wired-leg packet is delivered at the AP end of the wired link instead
//! of entering the AP's queues; a WiFi-leg packet enters the AP's queues directly (downlink)
//! or is delivered when the AP receives it (uplink).
//!
//! A packet the air delivers is reported when its subframe ends, not when the exchange does
//! ([`World::ext_announce`]): a receiver holds each MPDU of an A-MPDU as its subframe ends and
//! its reorder buffer releases what is in order then, while the model settles the PPDU
//! (Block Ack, retries) only after the response, up to a PPDU's duration later. What the
//! recipient releases is known when the PPDU starts (which MPDUs arrive is drawn then, and no
//! other PPDU of the link can come between), so the fate is pushed then with its subframe's
//! instant (`Received`), the host writes the packet when that instant comes, and the
//! exchange's end says when the model is done with it (`Released`).

use crate::world::*;
use std::collections::BTreeMap;

/// What became of an external packet.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ExtFate {
    /// It reached its destination node at `at`: write it out, then free it.
    Delivered,
    /// Its recipient holds it at `at`, the end of its subframe in a PPDU under way: write it out
    /// then, but keep its buffer, which stays the model's until `Released`.
    Received,
    /// The model is done with a packet reported `Received` (its exchange ended): free it.
    Released,
    /// Tail drop, AQM drop, retry limit or wired loss at `at`: free it.
    Dropped,
}

/// The part of the path an external flow crosses (see the module doc).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ExtLeg {
    /// Server ↔ station through the wired link, the AP's queues and the cell.
    Through,
    /// Server ↔ AP: the wired link only.
    Wired,
    /// AP ↔ station: the AP's queues (downlink) or the station's (uplink) and the cell.
    Wifi,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ExtEvent {
    pub tag: u32,
    pub flow: u32,
    pub at: Instant,
    pub fate: ExtFate,
    /// A queue or the air marked the packet CE on its way: the host writes CE into the
    /// packet's IP header before it writes the packet out.
    pub ce: bool,
}

pub(in crate::world) struct ExtHost {
    /// Host-given description of each external flow, by flow index.
    labels: BTreeMap<u32, String>,
    /// The leg of each flow, by flow index (`Through` for simulated flows).
    legs: Vec<ExtLeg>,
    out: Vec<ExtEvent>,
    /// The TCP header of the packet of each tag, as the AP's ACK filter reads it
    /// ([`World::inject_tcp`]); None for a packet injected without one.
    tcp: Vec<Option<AckView>>,
    /// By tag: the packet's delivery was reported at the start of its PPDU
    /// ([`World::ext_announce`]), so its release at the exchange's end reports nothing.
    announced: Vec<bool>,
}

impl ExtHost {
    /// The TCP header the packet of `tag` was injected with.
    pub(in crate::world) fn tcp_view(&self, tag: u32) -> Option<AckView> {
        self.tcp.get(tag as usize).copied().flatten()
    }
}

impl World {
    /// A world for a real-time host: the run has no fixed end (the host stops stepping it and
    /// calls [`World::finish_at`]), and its time series grow as long as it runs.
    pub fn new_realtime(spec: Spec, seed: u64) -> World {
        let mut w = World::new(spec, seed);
        w.end = Instant(u64::MAX / 2);
        w.progress_step = Duration(u64::MAX / 4);
        w.ext = Some(Box::new(ExtHost { labels: BTreeMap::new(), legs: Vec::new(), out: Vec::with_capacity(1024), tcp: Vec::new(), announced: Vec::new() }));
        for s in w.ts.all_mut() {
            s.set_growable();
        }
        w.start();
        w
    }

    /// Flows of the run so far (simulated ones first, then external ones as they appeared).
    pub fn n_flows(&self) -> usize {
        self.flows.len()
    }

    /// The station a flow runs to or from, and its direction.
    pub fn flow_route(&self, f: u32) -> (u32, Dir) {
        let fl = &self.flows[f as usize];
        (fl.station, fl.dir)
    }

    /// The current instant of the world.
    pub fn now(&self) -> Instant {
        self.q.now()
    }

    /// The instant of the next pending event (the host sleeps until then or until a packet
    /// arrives).
    pub fn next_event_at(&self) -> Option<Instant> {
        self.q.peek_time()
    }

    /// Handle every event up to `t` and move `now` to `t`.
    pub fn step_to(&mut self, t: Instant) {
        self.step_until(t, &mut |_| {});
        self.q.advance_to(t);
    }

    /// A new flow of packets from outside between the server and station `station` (`dir`
    /// down: the server sends), described by `label` in the results. Returns its index.
    pub fn add_external_flow(&mut self, station: u32, dir: Dir, label: String) -> u32 {
        self.add_external_flow_on(station, dir, ExtLeg::Through, label)
    }

    /// [`World::add_external_flow`] on one leg of the path: `Wired` flows run between the
    /// server and the AP (`station` only attributes them in the results), `Wifi` flows
    /// between the AP and `station`.
    pub fn add_external_flow_on(&mut self, station: u32, dir: Dir, leg: ExtLeg, label: String) -> u32 {
        assert!((station as usize) < self.stations.len(), "station {station} out of range");
        let f = self.flows.len() as u32;
        let direction = if dir == Dir::Down { "down" } else { "up" };
        // The required keys; every other one takes its documented default.
        let fs: crate::spec::FlowSpec = serde_json::from_value(serde_json::json!({
            "station": station, "direction": direction, "pattern": "external", "rate_bps": 0,
            "packet_size": 0, "start_ns": 0, "stop_ns": self.end.as_nanos(),
        }))
        .expect("a complete flow spec");
        self.spec.flows.push(fs);
        self.flows.push(Flow {
            station,
            cross: false,
            dir,
            pattern: Pattern::External,
            size: 0,
            rate_bps: 0,
            start: Instant::ZERO,
            stop: self.end,
            k: 0,
            rng: Rng::stream(0, StreamKind::Traffic, f as u64),
            sat_target: 0,
            // In `mac.access_category`, like a simulated flow without `ac`.
            ac: self.ac_plan.main,
        });
        self.ensure_edcaf(station, self.ac_plan.main as usize);
        self.tcp.push(None);
        self.quic.push(None);
        self.counters.push(FlowCounters::default());
        self.ce_marked.push(0);
        if let Some(v) = self.vwire.as_deref_mut() {
            v.split.push(crate::world::hosts::vwire::Split::No);
        }
        if let Some(a) = self.aggctl.as_deref_mut() {
            a.push_other_flow();
        }
        for s in self.ts.all_mut().into_iter().take(BinnedSeries::PER_FLOW) {
            s.push_entity();
        }
        let h = self.ext.as_deref_mut().expect("a real-time world");
        h.labels.insert(f, label);
        h.legs.resize(f as usize, ExtLeg::Through);
        h.legs.push(leg);
        f
    }

    /// The leg external flow `f` crosses (`Through` for any other flow).
    pub fn external_leg(&self, f: u32) -> ExtLeg {
        self.ext.as_deref().and_then(|h| h.legs.get(f as usize).copied()).unwrap_or(ExtLeg::Through)
    }

    /// Whether `p` is an external packet whose path ends at the AP: a wired-leg packet at the
    /// AP end of the wired link (downlink), a WiFi-leg packet received by the AP (uplink).
    #[inline]
    pub(in crate::world) fn ext_ends_at_ap(&self, p: PktRef, dir: Dir) -> bool {
        let Some(h) = self.ext.as_deref() else { return false };
        if !matches!(self.pkts[p.id as usize].tcp, TcpMeta::External { .. }) {
            return false;
        }
        let leg = h.legs.get(p.flow as usize).copied().unwrap_or(ExtLeg::Through);
        matches!((leg, dir), (ExtLeg::Wired, Dir::Down) | (ExtLeg::Wifi, Dir::Up))
    }

    /// A packet of external flow `flow`, `len` octets of IP packet, enters the model now: at
    /// the server's end of the wired link (downlink) or the station's queue (uplink); on a
    /// wired leg uplink at the AP's end of the wired link, on a WiFi leg downlink in the AP's
    /// queue for the station.
    pub fn inject(&mut self, flow: u32, len: u32, tag: u32) {
        self.inject_ecn(flow, len, tag, Ecn::NotEct);
    }

    /// [`World::inject`] for a packet whose IP header carries ECN field `ecn`: the model's
    /// queues may mark it, and its [`ExtEvent`] says so.
    pub fn inject_ecn(&mut self, flow: u32, len: u32, tag: u32, ecn: Ecn) {
        self.inject_tcp(flow, len, tag, ecn, None);
    }

    /// [`World::inject_ecn`] for a packet whose TCP header the host has read
    /// ([`AckView::parse`]): the AP's ACK filter (`ap.ack_filter`) reads real ACKs through it,
    /// as it reads the model's own.
    pub fn inject_tcp(&mut self, flow: u32, len: u32, tag: u32, ecn: Ecn, tcp: Option<AckView>) {
        // Only the AP's ACK filter reads the headers.
        if let Some(h) = self.ext.as_deref_mut().filter(|_| self.ack_filter != crate::world::ack_filter::AckFilter::Off) {
            let i = tag as usize;
            if h.tcp.len() <= i {
                h.tcp.resize(i + 1, None);
            }
            h.tcp[i] = tcp;
        }
        debug_assert!(!self.ext.as_deref().is_some_and(|h| h.announced.get(tag as usize).is_some_and(|&a| a)), "tag {tag} reused before its release");
        let now = self.q.now();
        let (sta, dir) = {
            let fl = &self.flows[flow as usize];
            debug_assert!(fl.pattern == Pattern::External, "flow {flow} is not external");
            (fl.station, fl.dir)
        };
        let mut p = self.alloc(flow, len, now);
        self.set_ecn(&mut p, ecn);
        self.pkts[p.id as usize].tcp = TcpMeta::External { tag };
        match (dir, self.external_leg(flow)) {
            (Dir::Down, ExtLeg::Wifi) => self.ap_enqueue(sta, p, now),
            (Dir::Down, _) => self.wired_send(p, Dir::Down, now),
            (Dir::Up, ExtLeg::Wired) => self.wired_send(p, Dir::Up, now),
            (Dir::Up, _) => self.station_enqueue(sta, p, now),
        }
    }

    /// Move the fates decided since the last call into `out` (in the order they happened).
    pub fn drain_external(&mut self, out: &mut Vec<ExtEvent>) {
        if let Some(h) = self.ext.as_deref_mut() {
            out.append(&mut h.out);
        }
    }

    /// The host-given label of flow `f` if it is external.
    pub fn external_label(&self, f: usize) -> Option<&str> {
        let h = self.ext.as_deref()?;
        h.labels.get(&(f as u32)).map(String::as_str)
    }

    /// The run ends at `end` (the host stopped): results cover [0, end].
    pub fn finish_at(&mut self, end: Instant) {
        let end = end.max(Instant(1));
        self.spec.sim.duration_ns = end.as_nanos();
        self.spec.sim.warmup_ns = self.spec.sim.warmup_ns.min(end.as_nanos() - 1);
        let bins = end.as_nanos().div_ceil(self.spec.sim.bin_ns) as usize;
        for s in self.ts.all_mut() {
            s.resize_bins(bins);
        }
    }

    /// An external packet reached its destination node at `t`.
    pub(in crate::world) fn ext_arrive(&mut self, p: PktRef, t: Instant) {
        let pk = self.pkts[p.id as usize];
        let TcpMeta::External { tag } = pk.tcp else { unreachable!("not an external packet") };
        if !pk.ghost {
            if let Some(h) = self.ext.as_deref_mut() {
                let early = h.announced.get_mut(tag as usize).is_some_and(std::mem::take);
                let now = self.q.now();
                h.out.push(match early {
                    false => ExtEvent { tag, flow: pk.flow, at: t, fate: ExtFate::Delivered, ce: pk.ecn == Ecn::Ce },
                    true => ExtEvent { tag, flow: pk.flow, at: now.max(t), fate: ExtFate::Released, ce: false },
                });
            }
        }
        // Counters, delay and goodput like any delivered packet (a ghost is only released).
        if pk.ghost {
            self.release(p);
        } else {
            self.deliver(p, t);
        }
    }

    /// An external packet is being dropped (its copy for a retransmission is not the packet).
    pub(in crate::world) fn ext_drop(&mut self, p: PktRef) {
        let pk = self.pkts[p.id as usize];
        if let (TcpMeta::External { tag }, false) = (pk.tcp, pk.ghost) {
            let at = self.q.now();
            if let Some(h) = self.ext.as_deref_mut() {
                debug_assert!(!h.announced.get(tag as usize).is_some_and(|&a| a), "an announced packet dropped");
                h.out.push(ExtEvent { tag, flow: pk.flow, at, fate: ExtFate::Dropped, ce: false });
            }
        }
    }

    /// Report now the external packets user `u` of a PPDU ending at `ppdu_end` delivers at the
    /// end of its subframes: those its recipient releases in order (on a copy of its reorder
    /// buffer, so the exchange's end finds it as it would have) whose journey ends on this link
    /// (a station's download; an upload to the AP host), as `Received`; their release at the
    /// exchange's end counts them and reports `Released`. Only for a real-time host.
    pub(in crate::world) fn ext_announce(&mut self, u: &PpduUser, ppdu_end: Instant) {
        if self.ext.is_none() || !u.mpdus.iter().any(|m| m.2) {
            return;
        }
        let mut times = std::mem::take(&mut self.scratch.times);
        self.subframe_times(&u.txv, u.mu, &u.mpdus, ppdu_end, &mut times);
        let mut rcpt = self.stations[u.sta as usize].ac[u.ac as usize].agreement(u.dir).1.clone();
        let mut released = std::mem::take(&mut self.scratch.rx);
        for (&(seq, p, ok), &t) in u.mpdus.iter().zip(&times) {
            if ok {
                rcpt.receive(seq, p, |x| released.push((x, t)), |_| {});
            }
        }
        self.scratch.times = times;
        let mut chain = std::mem::take(&mut self.scratch.chain);
        for (p, t) in released.drain(..) {
            self.pkts.msdus_into(p, &mut chain);
            for &q in &chain {
                let pk = self.pkts[q.id as usize];
                let TcpMeta::External { tag } = pk.tcp else { continue };
                let here = match u.dir {
                    Dir::Down => self.flows[q.flow as usize].station == u.sta,
                    Dir::Up => self.stations[u.sta as usize].parent.is_none() && self.ext_ends_at_ap(q, Dir::Up),
                };
                if pk.ghost || !here {
                    continue;
                }
                let h = self.ext.as_deref_mut().expect("a real-time host");
                if h.announced.len() <= tag as usize {
                    h.announced.resize(tag as usize + 1, false);
                }
                h.announced[tag as usize] = true;
                h.out.push(ExtEvent { tag, flow: pk.flow, at: t, fate: ExtFate::Received, ce: pk.ecn == Ecn::Ce });
            }
        }
        chain.clear();
        self.scratch.chain = chain;
        self.scratch.rx = released;
    }
}
