//! The cell's side of the wired link (`crate::wired`): a packet sent into the link of its
//! direction, the link pumped as it serialises, and what reaches its far end.

use super::*;

impl World {
    /// `p` reaches the far end of the wired link of direction `dir` at `t`. A link delivers in
    /// the order it was sent, so its arrivals wait in an event lane of their own (`engine.rs`).
    #[inline]
    pub(super) fn schedule_wired_arrival(&mut self, p: PktRef, dir: Dir, t: Instant) {
        let lane = match dir {
            Dir::Down => 0,
            Dir::Up => 1,
        };
        self.q.schedule_in_lane(lane, t, Ev::WiredArrive(p, dir));
    }

    /// `p` enters the wired link of direction `dir` at `at` (its queue, then its serialiser).
    /// Downstream it comes from the server, whose NIC sends it first: `server_nic_free` is then
    /// when that NIC is done with it. The NIC is not a hop of its own (the packet enters the
    /// wired link at `at`): it only times when the server's TCP senders get their bytes back for
    /// TCP small queues (Linux frees an skb at the NIC's transmit completion), so that the wired
    /// link's queue, a router's on the path, does not count as the server's own.
    pub(super) fn wired_send(&mut self, p: PktRef, dir: Dir, at: Instant) {
        if dir == Dir::Down {
            self.server_nic_free = self.server_nic_free.max(at) + self.server_nic.tx_time(Bytes(p.len as u64));
        }
        let link = match dir {
            Dir::Down => &mut self.wired_down,
            Dir::Up => &mut self.wired_up,
        };
        match link.send(at, p) {
            WiredOutcome::Arrives(t) => self.schedule_wired_arrival(p, dir, t.max(self.q.now())),
            WiredOutcome::Queued => self.wired_pump(dir, at),
            WiredOutcome::DroppedQueue(d) => {
                self.wired_dropped(d);
                if d != p {
                    // FQ-CoDel queued the arrival and dropped from the fattest flow.
                    self.wired_pump(dir, at);
                }
            }
            WiredOutcome::Lost => self.wired_dropped(p),
        }
    }

    /// A wired link with a queue discipline: start its serialiser if idle and a packet waits.
    pub(super) fn wired_pump(&mut self, dir: Dir, at: Instant) {
        let link = match dir {
            Dir::Down => &mut self.wired_down,
            Dir::Up => &mut self.wired_up,
        };
        let mut drops = Vec::new();
        let end = link.start_tx(at, |d| drops.push(d));
        for d in drops {
            self.wired_dropped(d);
        }
        if let Some(end) = end {
            self.q.schedule(end.max(self.q.now()), Ev::WiredTxDone(dir));
        }
    }

    /// A wired link with a queue discipline finished serialising a packet: it propagates, and
    /// the next one starts.
    pub(super) fn on_wired_tx_done(&mut self, dir: Dir) {
        let now = self.q.now();
        let link = match dir {
            Dir::Down => &mut self.wired_down,
            Dir::Up => &mut self.wired_up,
        };
        let Some((p, arrive)) = link.tx_done() else { return };
        self.ecn_left_queue(p);
        self.schedule_wired_arrival(p, dir, arrive.max(now));
        self.wired_pump(dir, now);
        self.tcp_pump_dirty(now);
    }

    /// The wired link dropped `p` (queue or random loss).
    pub(super) fn wired_dropped(&mut self, p: PktRef) {
        self.drop_pkt(p, DropWhy::Wired);
    }

    pub(super) fn on_wired_arrive(&mut self, p: PktRef, dir: Dir) {
        let now = self.q.now();
        match dir {
            Dir::Down => {
                let fl = &self.flows[self.pkts[p.id as usize].flow as usize];
                if self.ext_ends_at_ap(p, Dir::Down) {
                    self.ext_arrive(p, now);
                } else if self.is_split(p.flow) {
                    self.vwire_wired_data(p, now);
                } else if fl.cross {
                    self.deliver(p, now);
                } else {
                    let sta = fl.station;
                    self.ap_enqueue(sta, p, now);
                }
            }
            Dir::Up => self.arrive(p, now),
        }
    }
}
