//! The flows' own sources: a CBR or Poisson flow's next packet, and saturated flows kept
//! backlogged at their first queue.

use super::*;

impl World {
    /// Flow `f`'s source is due: its next packet, and the one after it scheduled.
    pub(super) fn on_flow_next(&mut self, f: u32) {
        let now = self.q.now();
        let fl = &self.flows[f as usize];
        if fl.pattern == Pattern::Aggctl {
            self.aggctl_on_send(f);
            return;
        }
        if now >= fl.stop {
            return;
        }
        if fl.pattern == Pattern::Saturated {
            self.fill_saturated(f, now);
            return;
        }
        if fl.pattern == Pattern::Tcp {
            self.tcp_start(f);
            return;
        }
        if fl.pattern == Pattern::Quic {
            self.quic_start(f);
            return;
        }
        let (size, dir, sta, ping) = (fl.size, fl.dir, fl.station, fl.pattern == Pattern::Ping);
        let p = self.alloc(f, size, now);
        if ping {
            self.pkts[p.id as usize].echo = Echo::Request;
        }
        match dir {
            Dir::Down => self.wired_send(p, Dir::Down, now),
            Dir::Up => self.station_enqueue(sta, p, now),
        }
        // Next departure: CBR on an exact schedule (no drift), Poisson exponential gaps.
        let fl = &mut self.flows[f as usize];
        fl.k += 1;
        let next = match fl.pattern {
            Pattern::Cbr | Pattern::Ping => {
                let ns = (fl.k as u128 * fl.size as u128 * 8 * 1_000_000_000 / fl.rate_bps as u128) as u64;
                fl.start + Duration(ns)
            }
            _ => {
                let mean = fl.size as f64 * 8.0 / fl.rate_bps as f64;
                now + Duration::from_secs_f64(fl.rng.exponential(mean)).max(Duration(1))
            }
        };
        if next < fl.stop {
            self.q.schedule(next, Ev::FlowNext(f));
        }
    }

    /// A saturated flow keeps its entry queue filled to its target.
    pub(super) fn fill_saturated(&mut self, f: u32, now: Instant) {
        let (sta, dir, size, target, k) = {
            let fl = &self.flows[f as usize];
            (fl.station, fl.dir, fl.size, fl.sat_target, fl.ac as usize)
        };
        for _ in 0..target {
            let full = match dir {
                Dir::Down => self.txqs[k].room() == 0,
                Dir::Up => match self.stations[sta as usize].relay {
                    Some(r) => self.relays[r as usize].txqs.room() == 0,
                    None => {
                        let a = &self.stations[sta as usize].ac[k];
                        a.queue.len_packets() + a.stash.is_some() as usize >= self.spec.stations[sta as usize].queue_limit as usize
                    }
                },
            };
            if full {
                break;
            }
            let p = self.alloc(f, size, now);
            match dir {
                Dir::Down => self.ap_enqueue(sta, p, now),
                Dir::Up => self.station_enqueue(sta, p, now),
            }
        }
    }

    /// One packet of a saturated flow left its queue: put a fresh one behind it. (Inlined to
    /// its test, which every packet of a queue without a saturated source takes.)
    #[inline]
    pub(super) fn refill(&mut self, flow: Option<u32>, now: Instant) {
        if let Some(f) = flow {
            self.refill_flow(f, now);
        }
    }

    /// Whether flow `f` is a saturated source whose entry queue is the AP's (`at` = None) or
    /// station `at`'s own: a packet of it that this queue's discipline drops on its way out
    /// leaves the queue as a sent one does, and the source puts a fresh one behind it, so the
    /// queue stays filled (`refill_dropped`). A drop on arrival at a full queue is not
    /// replaced: the queue is full.
    pub(super) fn feeds(&self, f: u32, at: Option<u32>) -> bool {
        let fl = &self.flows[f as usize];
        fl.pattern == Pattern::Saturated
            && match at {
                None => fl.dir == Dir::Down,
                Some(sta) => fl.dir == Dir::Up && fl.station == sta,
            }
    }

    /// Packet `d` left station `sta`'s own queue, dropped by its discipline: a saturated source
    /// behind that queue puts a fresh one in its place (`feeds`).
    pub(super) fn refill_dropped(&mut self, d: PktRef, sta: u32, now: Instant) {
        if self.feeds(d.flow, Some(sta)) {
            self.refill_flow(d.flow, now);
        }
    }

    /// The refills owed for the AP's queue drops of saturated sources' packets (`ap_pull`), in
    /// the order of the drops; the enqueues they make may wake the driver and owe more, which
    /// this loop takes in turn.
    pub(super) fn refill_owed(&mut self, now: Instant) {
        if self.scratch.refilling {
            return;
        }
        self.scratch.refilling = true;
        let mut i = 0;
        while i < self.scratch.sat_owed.len() {
            let f = self.scratch.sat_owed[i];
            i += 1;
            self.refill_flow(f, now);
        }
        self.scratch.sat_owed.clear();
        self.scratch.refilling = false;
    }

    fn refill_flow(&mut self, f: u32, now: Instant) {
        let fl = &self.flows[f as usize];
        if now < fl.stop && now >= fl.start {
            let (sta, dir, size) = (fl.station, fl.dir, fl.size);
            let p = self.alloc(f, size, now);
            match dir {
                Dir::Down => self.ap_enqueue(sta, p, now),
                Dir::Up => self.station_enqueue(sta, p, now),
            }
        }
    }
}
