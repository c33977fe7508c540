//! Mesh relays in the cell: which node sends on a link, the next hop of a packet, a relay's
//! ports and queues, arrivals down and up a chain, and the forwarding nodes' interface queues
//! (their WQM sizers' measurement ticks).

use super::*;

impl World {
    /// The node sending on the downlink of `link`: 0 = the AP, 1 + s = relay station s.
    #[inline]
    pub(super) fn parent_node(&self, link: u32) -> u32 {
        self.stations[link as usize].parent.map_or(0, |p| p + 1)
    }

    /// The node transmitting on `link` in `dir`.
    #[inline]
    pub(super) fn tx_node(&self, link: u32, dir: Dir) -> u32 {
        match dir {
            Dir::Down => self.parent_node(link),
            Dir::Up => link + 1,
        }
    }

    /// The link by which `node` reaches station `dest` (which must be below it).
    pub(super) fn next_hop(&self, node: u32, dest: u32) -> u32 {
        let mut s = dest;
        loop {
            let par = self.parent_node(s);
            if par == node {
                return s;
            }
            assert!(par != 0, "station {dest} is not below node {node}");
            s = par - 1;
        }
    }

    /// The relay queue set and entry that feed `link` in `dir`; None where the AP's queues
    /// (downlink from the AP) or a leaf station's own queue (its uplink) do.
    #[inline]
    pub(super) fn relay_port(&self, link: u32, dir: Dir) -> Option<(u32, u32)> {
        let s = &self.stations[link as usize];
        match dir {
            Dir::Down => {
                let par = s.parent?;
                Some((self.stations[par as usize].relay.expect("parent is a relay"), s.entry))
            }
            Dir::Up => s.relay.map(|r| (r, 0)),
        }
    }

    /// Whether a two-radio relay's children side (`down`) or parent side has frames queued or
    /// awaiting retransmission.
    pub(super) fn relay_has_work(&self, r: u32, down: bool) -> bool {
        let rl = &self.relays[r as usize];
        let m = self.ac_plan.main as usize;
        if !down {
            return rl.txqs.len(0) > 0 || self.stations[rl.sta as usize].ac[m].up_orig.has_retx();
        }
        rl.children
            .iter()
            .enumerate()
            .any(|(k, &c)| rl.txqs.len(1 + k as u32) > 0 || self.stations[c as usize].ac[m].down_orig.has_retx())
    }

    pub(super) fn relay_enqueue(&mut self, r: u32, entry: u32, p: PktRef, now: Instant) {
        let rl = &mut self.relays[r as usize];
        let sta = rl.sta;
        let mut drops = std::mem::take(&mut self.scratch.dup);
        let kept = rl.txqs.enqueue(now, entry, p, |d| drops.push(d));
        let down = rl.down;
        for d in drops.drain(..) {
            self.tcp_sent_from(sta, d);
            self.drop_pkt(d, DropWhy::Queue);
        }
        self.scratch.dup = drops;
        if kept {
            let (link, dir) = self.node_entry_link(sta + 1, entry);
            self.formation_enqueued(link, dir, self.ac_plan.main as usize);
            // The radio that serves this entry.
            let c = match down {
                Some(d) if entry != 0 => d,
                _ => self.sta_ctd(sta, self.ac_plan.main as usize),
            };
            self.make_ready(c, now);
        }
    }

    /// The next frame relay `r` forwards through port `e`, if it `fits`; one that does not
    /// waits first in line.
    pub(super) fn relay_take(&mut self, r: u32, e: u32, now: Instant, fits: &dyn Fn(u32) -> bool) -> Take<PktRef> {
        let Some(p) = self.relay_pull(r, e, now) else { return Take::Empty };
        if !fits(p.len) {
            self.relays[r as usize].txqs.stash(e, p);
            return Take::NoFit;
        }
        Take::Got(p)
    }

    /// The next frame of a relay's queue entry (drops of its discipline accounted).
    pub(super) fn relay_pull(&mut self, r: u32, entry: u32, now: Instant) -> Option<PktRef> {
        let mut drops = std::mem::take(&mut self.scratch.dup);
        let sta = self.relays[r as usize].sta;
        let p = self.relays[r as usize].txqs.tx_dequeue(now, entry, |d| drops.push(d));
        for d in drops.drain(..) {
            self.tcp_sent_from(sta, d);
            self.drop_pkt(d, DropWhy::Queue);
            // The relay's own uplink (its queue is the entry of its own saturated sources).
            self.refill_dropped(d, sta, now);
        }
        self.scratch.dup = drops;
        if let Some(p) = p {
            self.ecn_left_queue(p);
        }
        p
    }

    /// A packet left station `sta` for good (delivered to the next hop or dropped): if the
    /// station's own TCP sender queued it, its bytes below the socket shrink. Packets a relay
    /// forwards for others do not count.
    #[inline]
    pub(super) fn tcp_sent_from(&mut self, sta: u32, p: PktRef) {
        if self.flows[p.flow as usize].station == sta {
            self.tcp_station_sent(p);
        }
    }

    /// Station `link` received `p` on its downlink: its own, or forwarded towards its
    /// destination.
    pub(super) fn down_arrive(&mut self, link: u32, p: PktRef, t: Instant) {
        let dest = self.flows[p.flow as usize].station;
        if dest == link {
            self.arrive(p, t);
            return;
        }
        let r = self.stations[link as usize].relay.expect("a packet for a station below a relay");
        let hop = self.next_hop(link + 1, dest);
        let entry = self.stations[hop as usize].entry;
        let now = self.q.now();
        // A new hop: its own transmission attempts.
        self.pkts[p.id as usize].retries = 0;
        self.relay_enqueue(r, entry, p, now);
    }

    /// The parent of station `link` received `p` on the uplink: the AP sends it on the wired
    /// link, a relay forwards it to its own parent.
    pub(super) fn up_arrive(&mut self, link: u32, p: PktRef, t: Instant) {
        match self.stations[link as usize].parent {
            None if self.ext_ends_at_ap(p, Dir::Up) => self.ext_arrive(p, t),
            None if self.is_split(p.flow) => self.vwire_wifi_ack(p, t),
            None => self.wired_send(p, Dir::Up, t),
            Some(par) => {
                let r = self.stations[par as usize].relay.expect("parent is a relay");
                let now = self.q.now();
                self.pkts[p.id as usize].retries = 0;
                self.relay_enqueue(r, 0, p, now);
            }
        }
    }

    /// The queue set of forwarding node `n` (the AP's of the main AC, or a relay's).
    pub(super) fn node_txqs(&self, n: u32) -> &TxqSet<PktRef> {
        if n == 0 {
            &self.txqs[self.ac_plan.main as usize]
        } else {
            &self.relays[self.stations[n as usize - 1].relay.expect("a forwarding node") as usize].txqs
        }
    }

    pub(super) fn node_txqs_mut(&mut self, n: u32) -> &mut TxqSet<PktRef> {
        if n == 0 {
            &mut self.txqs[self.ac_plan.main as usize]
        } else {
            let r = self.stations[n as usize - 1].relay.expect("a forwarding node") as usize;
            &mut self.relays[r].txqs
        }
    }

    /// The (link, direction) of entry `e` of node `n`'s queue set.
    pub(super) fn node_entry_link(&self, n: u32, e: u32) -> (u32, Dir) {
        if n == 0 {
            (e, Dir::Down)
        } else if e == 0 {
            (n - 1, Dir::Up)
        } else {
            let r = self.stations[n as usize - 1].relay.expect("a forwarding node") as usize;
            (self.relays[r].children[e as usize - 1], Dir::Down)
        }
    }

    /// Most MPDUs one A-MPDU of full-size (1500-octet) packets can hold at `txv` on `link`.
    pub(super) fn ampdu_capacity(&mut self, link: u32, txv: &TxVector) -> u32 {
        if !self.air.aggregation || txv.data_rate_bps() <= self.air.aggregation_min_rate {
            return 1;
        }
        let k = self.ac_plan.main as usize;
        // Within the downlink agreement's window and the sender's own limit.
        let win = self.stations[link as usize].ac[k].down_orig.win_size();
        let n = self.air.max_mpdus.min(win).min(self.sender_ampdu_limit(link, Dir::Down));
        frame::full_size_mpdus(self.max_psdu(link, Dir::Down, k, txv), self.air.qos, n)
    }

    /// A forwarding node's measurement instant: sample its interface queue and, with WQM, hand
    /// the buffer sizer what a Linux node exposes — the current tx rate and the A-MPDU length
    /// it allows (of the next hop with the longest queue), the backlog, and channel busy and
    /// transmit time (a survey) — then apply the limit it asks for.
    pub(super) fn on_node_tick(&mut self, n: u32) {
        let now = self.q.now();
        self.q.schedule(now + self.node_tick, Ev::NodeTick(n));
        if self.wqm[n as usize].is_some() {
            let (entries, backlog) = {
                let t = self.node_txqs(n);
                (t.entries(), t.backlog_bytes())
            };
            let e = (0..entries as u32).max_by_key(|&e| (self.node_txqs(n).len(e), std::cmp::Reverse(e))).unwrap_or(0);
            let (link, dir) = self.node_entry_link(n, e);
            let txv = self.stations[link as usize].rc[dir as usize].current();
            let k = self.ampdu_capacity(link, &txv);
            // The survey of the channel that next hop is on.
            let n_ch = self.chans.len();
            let ch = self.stations[link as usize].ch as usize;
            let h = self.wqm[n as usize].as_deref_mut().expect("WQM host");
            let (mut d_busy, mut d_tx) = (0, 0);
            for c in 0..n_ch {
                let (busy, tx) = (self.chans[c].busy_ns, self.node_tx_ns[n as usize * n_ch + c]);
                if c == ch {
                    d_tx = tx - h.last_tx_ns[c];
                    // Busy time is booked when an exchange starts, own airtime when it ends.
                    d_busy = (busy - h.last_busy_ns[c]).max(d_tx);
                }
                h.last_busy_ns[c] = busy;
                h.last_tx_ns[c] = tx;
            }
            let times = ChannelTimes { active: self.node_tick, busy: Duration(d_busy), tx: Duration(d_tx) };
            h.ctl.handle_input(now, WqmInput::TxRate(BitRate(txv.data_rate_bps())));
            h.ctl.handle_input(now, WqmInput::BacklogBytes(Bytes(backlog)));
            h.ctl.handle_input(now, WqmInput::AggregateLength(k));
            h.ctl.handle_input(now, WqmInput::ChannelInterval(times));
            h.ctl.handle_timeout(now);
            if let Some(WqmOutput::SetLimit(b)) = h.ctl.poll_output() {
                self.node_txqs_mut(n).set_total_limit(b as usize);
            }
        }
        // Sampled from the start, warm-up included, so the sizer's initial stage shows. The AP's
        // backlog is over all its ACs' queue sets.
        let t = self.node_txqs(n);
        let limit = t.total_limit() as f64;
        let len = if n == 0 { self.txqs.iter().map(|t| t.total_len()).sum::<usize>() } else { t.total_len() } as f64;
        self.ts.node_limit.add(n as usize, now.as_nanos(), limit);
        self.ts.node_backlog.add(n as usize, now.as_nanos(), len);
        self.ts.node_n.add(n as usize, now.as_nanos(), 1.0);
    }
}
