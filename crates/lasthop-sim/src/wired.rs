//! The wired link between the server and the AP, one instance per direction: a queue of
//! `queue_limit` packets in front of a serialiser of rate R, then a propagation delay, with
//! optional random loss on entry (the behaviour of Linux `tbf` + `netem delay/loss`, with the
//! queue discipline of `tc qdisc` in front of the shaper).
//!
//! Two ways to run the queue:
//!
//! * **FIFO tail drop** (`qdisc = "fifo"`), no event per queue step: a FIFO with a
//!   deterministic service time has each packet's departure fixed at arrival, so the link keeps
//!   the departure instants of the packets it holds and answers "when does this one arrive at
//!   the far end" at once ([`WiredOutcome::Arrives`]).
//! * **Any other discipline** (CoDel RFC 8289, PIE RFC 8033, FQ-CoDel RFC 8290 via
//!   `lasthop_algo::aqm::AnyQdisc`): these decide at dequeue, so the link is discipline →
//!   serialiser → delay with one step per departure. Sans-clock: the host offers packets with
//!   [`WiredLink::send`], asks [`WiredLink::start_tx`] to start the serialiser when it may be
//!   idle (the discipline may drop packets on the way out) and schedules the returned
//!   serialisation end; at that instant [`WiredLink::tx_done`] hands back the packet and its
//!   arrival at the far end, and the host starts the next one.

use lasthop_algo::aqm::{AnyQdisc, Qdisc, QueuedPacket};
use lasthop_core::{BitRate, Bytes, Duration, Instant, Rng};
use std::collections::VecDeque;

pub enum WiredOutcome<P> {
    /// FIFO: the packet reaches the far end at this instant.
    Arrives(Instant),
    /// A discipline holds the packet; the serialiser may need starting ([`WiredLink::start_tx`]).
    Queued,
    /// The queue dropped this packet on entry: the arriving one, or (FQ-CoDel's overflow rule,
    /// RFC 8290 §4.1) a queued one of the fattest flow while the arriving one was queued.
    DroppedQueue(P),
    /// Random loss on entry.
    Lost,
}

enum Queue<P> {
    Fifo {
        limit: usize,
        busy_until: Instant,
        /// Serialisation end of every packet still in the queue or being sent.
        departures: VecDeque<Instant>,
    },
    Qdisc {
        q: Box<AnyQdisc<P>>,
        /// The serialiser is busy until this instant (the last serialisation end).
        free_at: Instant,
        /// The packet being serialised and its serialisation end.
        in_service: Option<(P, Instant)>,
    },
}

pub struct WiredLink<P> {
    rate: BitRate,
    delay: Duration,
    loss: f64,
    queue: Queue<P>,
    rng: Rng,
    /// The last serialisation time computed, with its packet's length: a run of equal packets
    /// divides once.
    last_tx: (u64, Duration),
}

/// Time to serialise `len` bytes at `rate`, through `last`, the last length asked and its time.
#[inline]
fn tx_time(last: &mut (u64, Duration), rate: BitRate, len: u64) -> Duration {
    if last.0 != len {
        *last = (len, rate.tx_time(Bytes(len)));
    }
    last.1
}

impl<P: QueuedPacket> WiredLink<P> {
    /// A tail-drop FIFO link: `limit` packets may wait behind the one being serialised.
    pub fn new(rate_bps: u64, delay_ns: u64, limit: usize, loss: f64, rng: Rng) -> Self {
        WiredLink {
            rate: BitRate(rate_bps),
            delay: Duration(delay_ns),
            loss,
            queue: Queue::Fifo { limit, busy_until: Instant::ZERO, departures: VecDeque::new() },
            rng,
            last_tx: (u64::MAX, Duration::ZERO),
        }
    }

    /// A link whose waiting packets are held by discipline `q` (its packet limit is the
    /// number that may wait behind the one being serialised).
    pub fn with_qdisc(rate_bps: u64, delay_ns: u64, q: AnyQdisc<P>, loss: f64, rng: Rng) -> Self {
        WiredLink {
            rate: BitRate(rate_bps),
            delay: Duration(delay_ns),
            loss,
            queue: Queue::Qdisc { q: Box::new(q), free_at: Instant::ZERO, in_service: None },
            rng,
            last_tx: (u64::MAX, Duration::ZERO),
        }
    }

    /// The FIFO fast path: outcomes are [`WiredOutcome::Arrives`], never `Queued`.
    pub fn is_fifo(&self) -> bool {
        matches!(self.queue, Queue::Fifo { .. })
    }

    /// Packet `p` enters the link at `now` (calls must come in time order).
    pub fn send(&mut self, now: Instant, p: P) -> WiredOutcome<P> {
        if self.loss > 0.0 && self.rng.bernoulli(self.loss) {
            return WiredOutcome::Lost;
        }
        match &mut self.queue {
            Queue::Fifo { limit, busy_until, departures } => {
                while departures.front().is_some_and(|&d| d <= now) {
                    departures.pop_front();
                }
                // `limit` packets may wait behind the one being serialised.
                if departures.len() > *limit {
                    return WiredOutcome::DroppedQueue(p);
                }
                let start = if *busy_until > now { *busy_until } else { now };
                let end = start + tx_time(&mut self.last_tx, self.rate, p.len_bytes() as u64);
                *busy_until = end;
                departures.push_back(end);
                WiredOutcome::Arrives(end + self.delay)
            }
            Queue::Qdisc { q, .. } => match q.enqueue(now, p) {
                Ok(()) => WiredOutcome::Queued,
                Err(d) => WiredOutcome::DroppedQueue(d),
            },
        }
    }

    /// If the serialiser is idle and a packet waits, take the next one from the discipline
    /// (packets it drops on the way out go to `on_drop`) and start sending it, no earlier than
    /// `now`; returns the serialisation end, at which the host calls [`WiredLink::tx_done`].
    /// `None`: busy, nothing queued, or the FIFO fast path.
    pub fn start_tx(&mut self, now: Instant, on_drop: impl FnMut(P)) -> Option<Instant> {
        let Queue::Qdisc { q, free_at, in_service } = &mut self.queue else { return None };
        if in_service.is_some() {
            return None;
        }
        let t = now.max(*free_at);
        let p = q.dequeue(t, on_drop)?;
        let end = t + tx_time(&mut self.last_tx, self.rate, p.len_bytes() as u64);
        *free_at = end;
        *in_service = Some((p, end));
        Some(end)
    }

    /// The serialisation started by [`WiredLink::start_tx`] ended: the packet, and when it
    /// reaches the far end. The serialiser is idle again.
    pub fn tx_done(&mut self) -> Option<(P, Instant)> {
        let Queue::Qdisc { in_service, .. } = &mut self.queue else { return None };
        let (p, end) = in_service.take()?;
        Some((p, end + self.delay))
    }

    /// Packets held: waiting or being serialised (FIFO: not yet departed at the last `send`).
    pub fn queued(&self) -> usize {
        match &self.queue {
            Queue::Fifo { departures, .. } => departures.len(),
            Queue::Qdisc { q, in_service, .. } => q.len_packets() + in_service.is_some() as usize,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use lasthop_algo::aqm::{AqmConfig, CodelConfig, FifoConfig};

    #[derive(Clone, Copy, Debug, PartialEq, Eq)]
    struct P(u32, u32);
    impl QueuedPacket for P {
        fn len_bytes(&self) -> u32 {
            self.1
        }
    }

    fn arrival(o: WiredOutcome<P>) -> Option<Instant> {
        match o {
            WiredOutcome::Arrives(t) => Some(t),
            _ => None,
        }
    }

    #[test]
    fn serialises_queues_and_drops() {
        let mut l = WiredLink::new(12_000_000, 1_000_000, 1, 0.0, Rng::from_seed(1));
        // 1500 B at 12 Mb/s = 1 ms
        assert_eq!(arrival(l.send(Instant::ZERO, P(0, 1500))), Some(Instant(2_000_000)));
        assert_eq!(arrival(l.send(Instant::ZERO, P(1, 1500))), Some(Instant(3_000_000)));
        assert!(matches!(l.send(Instant::ZERO, P(2, 1500)), WiredOutcome::DroppedQueue(P(2, _))));
        assert_eq!(arrival(l.send(Instant(1_000_000), P(3, 1500))), Some(Instant(4_000_000)));
    }

    /// A minimal host: offers packets at given instants and drives the serialiser with its
    /// own (time, kind) agenda; returns each delivered packet's id and arrival instant, and the
    /// ids dropped.
    fn drive(l: &mut WiredLink<P>, offers: &[(u64, P)]) -> (Vec<(u32, Instant)>, Vec<u32>) {
        let mut done = Vec::new();
        let mut dropped = Vec::new();
        let mut tx_end: Option<Instant> = None;
        let mut i = 0;
        loop {
            // Next event: an offer, or the serialisation end (the end first at the same instant:
            // the fast path counts a packet departing at `now` as gone).
            let next_offer = offers.get(i).map(|&(t, _)| Instant(t));
            match (next_offer, tx_end) {
                (Some(t), e) if e.is_none_or(|e| t < e) => {
                    let p = offers[i].1;
                    i += 1;
                    match l.send(t, p) {
                        WiredOutcome::Queued => {}
                        WiredOutcome::DroppedQueue(d) => dropped.push(d.0),
                        _ => panic!("queued link"),
                    }
                    if tx_end.is_none() {
                        tx_end = l.start_tx(t, |d| dropped.push(d.0));
                    }
                }
                (_, Some(e)) => {
                    let (p, at) = l.tx_done().expect("in service");
                    done.push((p.0, at));
                    tx_end = l.start_tx(e, |d| dropped.push(d.0));
                }
                (None, None) => break,
                _ => unreachable!(),
            }
        }
        (done, dropped)
    }

    /// The event-driven path with a FIFO discipline gives the fast path's arrivals and drops.
    #[test]
    fn queued_fifo_matches_the_fast_path() {
        let mut rng = Rng::from_seed(5);
        let mut t = 0u64;
        let offers: Vec<(u64, P)> = (0..3000)
            .map(|k| {
                t += (rng.exponential(0.0009) * 1e9) as u64;
                (t, P(k, 40 + (rng.next_u64() % 1461) as u32))
            })
            .collect();
        let limit = 7;
        let mut fast = WiredLink::new(10_000_000, 3_000_000, limit, 0.0, Rng::from_seed(1));
        let mut want = Vec::new();
        let mut want_drop = Vec::new();
        for &(t, p) in &offers {
            match fast.send(Instant(t), p) {
                WiredOutcome::Arrives(a) => want.push((p.0, a)),
                WiredOutcome::DroppedQueue(d) => want_drop.push(d.0),
                _ => unreachable!(),
            }
        }
        let fifo = AqmConfig::Fifo(FifoConfig { limit_packets: limit, limit_bytes: 0 }).build(0);
        let mut slow = WiredLink::with_qdisc(10_000_000, 3_000_000, fifo, 0.0, Rng::from_seed(1));
        let (got, got_drop) = drive(&mut slow, &offers);
        assert!(!want_drop.is_empty() && want.len() > 1000);
        assert_eq!(got, want);
        assert_eq!(got_drop, want_drop);
    }

    /// CoDel on the link: a sustained overload keeps the sojourn near the target instead of
    /// filling the buffer; every packet is delivered or dropped exactly once.
    #[test]
    fn codel_bounds_the_standing_queue() {
        // 1500 B every 0.9 ms into a 12 Mb/s (1 ms per packet) link for 5 s.
        let offers: Vec<(u64, P)> = (0..5556).map(|k| (k as u64 * 900_000, P(k, 1500))).collect();
        let q = AqmConfig::Codel(CodelConfig { limit_packets: 1000, ..Default::default() }).build(0);
        let mut l = WiredLink::with_qdisc(12_000_000, 0, q, 0.0, Rng::from_seed(1));
        let (done, dropped) = drive(&mut l, &offers);
        assert_eq!(done.len() + dropped.len(), offers.len());
        assert_eq!(l.queued(), 0);
        // Delay of the last second's packets: sojourn + 1 ms serialisation.
        let late: Vec<f64> = done
            .iter()
            .filter(|(id, _)| *id >= 4444)
            .map(|&(id, at)| (at.as_nanos() - offers[id as usize].0) as f64 / 1e6)
            .collect();
        let mean = late.iter().sum::<f64>() / late.len() as f64;
        assert!(mean < 20.0, "mean delay {mean} ms");
        assert!(!dropped.is_empty());
        // A tail-drop FIFO of 1000 would sit near its limit: ~100 ms of excess arrivals by then.
    }

    #[test]
    fn loss_on_entry_uses_the_stream_in_both_modes() {
        let q = AqmConfig::Fifo(FifoConfig::default()).build(0);
        let mut a = WiredLink::with_qdisc(1_000_000_000, 0, q, 0.3, Rng::from_seed(9));
        let mut b = WiredLink::new(1_000_000_000, 0, 1000, 0.3, Rng::from_seed(9));
        for k in 0..200 {
            let t = Instant(k * 1_000_000);
            let la = matches!(a.send(t, P(k as u32, 100)), WiredOutcome::Lost);
            let lb = matches!(b.send(t, P(k as u32, 100)), WiredOutcome::Lost);
            assert_eq!(la, lb);
            a.start_tx(t, |_| {});
            a.tx_done();
        }
    }
}
