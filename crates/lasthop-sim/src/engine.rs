//! The event engine: a priority queue of events ordered by `(time, seq)`, where `seq` is the
//! order of scheduling. Two events at the same instant therefore run in the order they were
//! scheduled, on every machine, which is half of the determinism contract (the other half is
//! per-entity random streams).
//!
//! Beside the one-shot events, the queue holds **timers**: one pending instant per timer, re-armed
//! in place ([`EventQueue::set_timer`]). An endpoint whose deadline moves on every packet (a TCP
//! sender's RTO and pacing, a QUIC connection's loss timer) re-arms its timer instead of
//! scheduling a new event and leaving the old one to be skipped when it comes up. A re-armed
//! timer takes the next `seq`, as a newly scheduled event would, so the order of everything
//! that runs is the same as with one event per arming; only the skipped events are gone. A
//! timer that fires is re-armed by its handler more often than not (a TCP connection held back
//! by TCP small queues wakes at each of its NIC's departures and re-arms for the next), so it
//! stays at the root of the timers' heap until the next event is asked for, and a re-arming
//! moves it down from there once (`Timers::fired`) instead of refilling the root from the
//! bottom and climbing back: 4–5 % of the 10- and 20-station TCP cells' instructions.
//!
//! Events that their source schedules in time order (a FIFO link's arrivals) may go into a
//! **lane** instead of the heap: a plain queue, appended to while its events come in order
//! (else the event goes into the heap). The next event is the earliest of the heap's, the
//! timers' and the lanes' first ones; keys are unique, so the order is the one the heap alone
//! would give, at the cost of an append and a pop instead of the heap's.

use lasthop_core::Instant;
use std::cmp::Ordering;
use std::collections::{BinaryHeap, VecDeque};

struct Entry<E> {
    /// `(time, seq)` packed for one comparison: time in the high 64 bits.
    key: u128,
    ev: E,
}

// Reversed: BinaryHeap is a max-heap and we want the earliest first. (A 4-ary heap was tried
// for dense cells: no faster with thousands of events pending, 10 % slower for a TCP cell.)
impl<E> PartialEq for Entry<E> {
    fn eq(&self, o: &Self) -> bool {
        self.key == o.key
    }
}
impl<E> Eq for Entry<E> {}
impl<E> PartialOrd for Entry<E> {
    fn partial_cmp(&self, o: &Self) -> Option<Ordering> {
        Some(self.cmp(o))
    }
}
impl<E> Ord for Entry<E> {
    fn cmp(&self, o: &Self) -> Ordering {
        o.key.cmp(&self.key)
    }
}

/// A timer of an [`EventQueue`]: the index of its slot.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TimerId(u32);

/// The key of a timer that is not armed (above every real key: times are below 2⁶⁴ − 1 ns).
const UNARMED: u128 = u128::MAX;

/// No timer (`Timers::fired`).
const NO_TIMER: u32 = u32::MAX;

/// The timers: an indexed binary min-heap of timer ids by key, with each timer's position in it
/// (so a re-armed timer moves up or down in place). Each heap slot holds its timer's key beside
/// its id, so that a sift compares keys without reading them through the ids.
///
/// A timer that fires is disarmed at once but stays at the heap's root (`fired`) until the
/// queue is next asked for an event: a handler that re-arms it (a connection's timer, re-armed
/// on every pump) then moves it down from the root once, instead of the root being refilled
/// from the bottom and the timer climbing back from there. Its old key is below every other
/// pending key, so the heap stays in order meanwhile; `top_key` looks past it.
struct Timers<E> {
    /// Per timer: its key (`UNARMED` when not pending), its event, its position in `heap`.
    key: Vec<u128>,
    ev: Vec<E>,
    pos: Vec<u32>,
    /// Armed timers' keys and ids, a min-heap on the key (with `fired` at its root, if any).
    heap: Vec<(u128, u32)>,
    /// The timer that fired last, disarmed but still at the root of `heap` (`NO_TIMER`: none).
    fired: u32,
}

impl<E> Timers<E> {
    fn new() -> Self {
        Timers { key: Vec::new(), ev: Vec::new(), pos: Vec::new(), heap: Vec::new(), fired: NO_TIMER }
    }

    /// The earliest armed timer's key (past a fired timer still at the root).
    #[inline]
    fn top_key(&self) -> u128 {
        if self.fired == NO_TIMER {
            return self.heap.first().map_or(UNARMED, |e| e.0);
        }
        let child = |i: usize| self.heap.get(i).map_or(UNARMED, |e| e.0);
        child(1).min(child(2))
    }

    /// Armed timers.
    fn armed(&self) -> usize {
        self.heap.len() - usize::from(self.fired != NO_TIMER)
    }

    /// The earliest timer fires: it is disarmed and stays at the root (`fired`) until `settle`.
    /// The heap must have no fired timer at its root (`settle` first).
    #[inline]
    fn fire_top(&mut self) -> u32 {
        let id = self.heap[0].1;
        self.key[id as usize] = UNARMED;
        self.fired = id;
        id
    }

    /// Take a fired timer that was not re-armed out of the heap.
    #[inline]
    fn settle(&mut self) {
        if self.fired != NO_TIMER {
            let id = std::mem::replace(&mut self.fired, NO_TIMER);
            self.take_out(id);
        }
    }

    #[inline]
    fn place(&mut self, i: usize, e: (u128, u32)) {
        self.heap[i] = e;
        self.pos[e.1 as usize] = i as u32;
    }

    fn sift_up(&mut self, mut i: usize) {
        let e = self.heap[i];
        while i > 0 {
            let parent = (i - 1) / 2;
            let p = self.heap[parent];
            if p.0 <= e.0 {
                break;
            }
            self.place(i, p);
            i = parent;
        }
        self.place(i, e);
    }

    fn sift_down(&mut self, mut i: usize) {
        let e = self.heap[i];
        let n = self.heap.len();
        loop {
            let l = 2 * i + 1;
            if l >= n {
                break;
            }
            let r = l + 1;
            let c = if r < n && self.heap[r].0 < self.heap[l].0 { r } else { l };
            let ce = self.heap[c];
            if ce.0 >= e.0 {
                break;
            }
            self.place(i, ce);
            i = c;
        }
        self.place(i, e);
    }

    /// Set timer `id`'s key (armed or not), keeping the heap in order.
    fn set(&mut self, id: u32, key: u128) {
        let old = self.key[id as usize];
        self.key[id as usize] = key;
        if id == self.fired {
            // Re-armed by its handler: a later key than the one it fired at, from the root down.
            debug_assert_eq!(self.heap[0].1, id, "a fired timer stays at the root");
            self.fired = NO_TIMER;
            self.heap[0].0 = key;
            self.sift_down(0);
        } else if old == UNARMED {
            self.heap.push((key, id));
            let last = self.heap.len() - 1;
            self.pos[id as usize] = last as u32;
            self.sift_up(last);
        } else {
            let i = self.pos[id as usize] as usize;
            self.heap[i].0 = key;
            if key < old {
                self.sift_up(i);
            } else {
                self.sift_down(i);
            }
        }
    }

    /// Take timer `id` (in the heap) out of it, keeping the heap in order.
    fn take_out(&mut self, id: u32) {
        let i = self.pos[id as usize] as usize;
        let last = self.heap.pop().expect("the timer is in the heap");
        if last.1 != id {
            self.place(i, last);
            // The moved timer came from the bottom: it may belong above or below `i`.
            self.sift_up(i);
            let j = self.pos[last.1 as usize] as usize;
            self.sift_down(j);
        }
    }
}

pub struct EventQueue<E> {
    heap: BinaryHeap<Entry<E>>,
    timers: Timers<E>,
    /// Events scheduled in time order, per lane (keys increasing along each).
    lanes: Vec<VecDeque<Entry<E>>>,
    seq: u64,
    now: Instant,
    processed: u64,
}

impl<E: Copy> Default for EventQueue<E> {
    fn default() -> Self {
        Self::new()
    }
}

impl<E: Copy> EventQueue<E> {
    pub fn new() -> Self {
        EventQueue {
            heap: BinaryHeap::with_capacity(1024),
            timers: Timers::new(),
            lanes: Vec::new(),
            seq: 0,
            now: Instant::ZERO,
            processed: 0,
        }
    }

    /// A new timer, not armed, that delivers `ev` when it fires.
    pub fn add_timer(&mut self, ev: E) -> TimerId {
        let id = self.timers.key.len() as u32;
        self.timers.key.push(UNARMED);
        self.timers.ev.push(ev);
        self.timers.pos.push(0);
        TimerId(id)
    }

    /// Arm timer `id` at `time` (never before now), replacing its pending instant if it has one.
    /// Armed at that very instant already, it keeps its place (as one pending event would);
    /// otherwise it takes the next `seq`, as scheduling a new event does.
    #[inline]
    pub fn set_timer(&mut self, id: TimerId, time: Instant) {
        debug_assert!(time >= self.now, "timer armed in the past");
        let time = if time < self.now { self.now } else { time };
        let old = self.timers.key[id.0 as usize];
        if old != UNARMED && (old >> 64) as u64 == time.as_nanos() {
            return;
        }
        self.timers.set(id.0, ((time.as_nanos() as u128) << 64) | self.seq as u128);
        self.seq += 1;
    }

    /// Timer `id`'s pending instant, if it is armed.
    pub fn timer_at(&self, id: TimerId) -> Option<Instant> {
        let k = self.timers.key[id.0 as usize];
        (k != UNARMED).then_some(Instant((k >> 64) as u64))
    }

    #[inline]
    pub fn now(&self) -> Instant {
        self.now
    }

    /// Schedule `ev` at `time` (never before now).
    #[inline]
    pub fn schedule(&mut self, time: Instant, ev: E) {
        debug_assert!(time >= self.now, "event scheduled in the past");
        let time = if time < self.now { self.now } else { time };
        self.heap.push(Entry { key: ((time.as_nanos() as u128) << 64) | self.seq as u128, ev });
        self.seq += 1;
    }

    /// Schedule `ev` at `time` (never before now) in lane `lane` (numbered from 0 by the
    /// caller, one per source whose events come in time order). Same order as `schedule`.
    #[inline]
    pub fn schedule_in_lane(&mut self, lane: usize, time: Instant, ev: E) {
        debug_assert!(time >= self.now, "event scheduled in the past");
        let time = if time < self.now { self.now } else { time };
        let key = ((time.as_nanos() as u128) << 64) | self.seq as u128;
        self.seq += 1;
        if lane >= self.lanes.len() {
            self.lanes.resize_with(lane + 1, VecDeque::new);
        }
        let q = &mut self.lanes[lane];
        if q.back().is_none_or(|b| b.key < key) {
            q.push_back(Entry { key, ev });
        } else {
            self.heap.push(Entry { key, ev });
        }
    }

    /// The lane whose first event is the earliest of all lanes', and its key.
    #[inline]
    fn lanes_top(&self) -> (usize, u128) {
        let mut best = (usize::MAX, UNARMED);
        for (i, q) in self.lanes.iter().enumerate() {
            if let Some(e) = q.front() {
                if e.key < best.1 {
                    best = (i, e.key);
                }
            }
        }
        best
    }

    /// The next event at or before `until`, advancing `now` to its time.
    #[inline]
    pub fn pop_until(&mut self, until: Instant) -> Option<E> {
        self.timers.settle();
        let tk = self.timers.top_key();
        let hk = self.heap.peek().map_or(UNARMED, |e| e.key);
        let (lane, lk) = self.lanes_top();
        let key = tk.min(hk).min(lk);
        if key == UNARMED || ((key >> 64) as u64) > until.as_nanos() {
            return None;
        }
        self.now = Instant((key >> 64) as u64);
        self.processed += 1;
        if key == lk {
            self.lanes[lane].pop_front().map(|e| e.ev)
        } else if tk < hk {
            let id = self.timers.fire_top();
            Some(self.timers.ev[id as usize])
        } else {
            self.heap.pop().map(|e| e.ev)
        }
    }

    /// Move `now` forward to `t` (a real-time host: nothing happened between the last event
    /// and `t`). No event may be pending before `t`.
    pub fn advance_to(&mut self, t: Instant) {
        debug_assert!(self.peek_time().is_none_or(|e| e >= t), "events pending before {t:?}");
        if t > self.now {
            self.now = t;
        }
    }

    pub fn processed(&self) -> u64 {
        self.processed
    }
    /// Events and armed timers pending.
    pub fn pending(&self) -> usize {
        self.heap.len() + self.timers.armed() + self.lanes.iter().map(VecDeque::len).sum::<usize>()
    }
    pub fn peek_time(&self) -> Option<Instant> {
        let key = self.timers.top_key().min(self.heap.peek().map_or(UNARMED, |e| e.key)).min(self.lanes_top().1);
        (key != UNARMED).then_some(Instant((key >> 64) as u64))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    #[test]
    fn orders_by_time_then_schedule_order() {
        let mut q = EventQueue::new();
        q.schedule(Instant(5), 'a');
        q.schedule(Instant(3), 'b');
        q.schedule(Instant(5), 'c');
        q.schedule(Instant(3), 'd');
        let mut out = Vec::new();
        while let Some(e) = q.pop_until(Instant(10)) {
            out.push(e);
        }
        assert_eq!(out, vec!['b', 'd', 'a', 'c']);
        assert_eq!(q.now(), Instant(5));
    }

    /// Interleaved scheduling and popping (many events at one instant, far-future ones,
    /// thousands pending) against a sorted reference: the same order, always.
    #[test]
    fn heap_order_matches_a_sorted_reference() {
        let mut rng = lasthop_core::Rng::from_seed(3);
        for _ in 0..50 {
            let mut q = EventQueue::new();
            let mut reference = std::collections::BTreeMap::new();
            let mut seq = 0u64;
            for _ in 0..4000 {
                if rng.gen_range_inclusive(2) > 0 {
                    let span = if rng.gen_range_inclusive(1) == 0 { 3 } else { 1_000_000 };
                    let t = q.now().as_nanos() + rng.gen_range_inclusive(span);
                    // Some into lanes: mostly in order there, the others fall back to the heap.
                    match rng.gen_range_inclusive(3) {
                        0 => q.schedule_in_lane(0, Instant(t), seq),
                        1 => q.schedule_in_lane(2, Instant(t), seq),
                        _ => q.schedule(Instant(t), seq),
                    }
                    reference.insert((t, seq), seq);
                    seq += 1;
                } else if let Some(e) = q.pop_until(Instant(u64::MAX)) {
                    let (&k, &v) = reference.iter().next().expect("reference has it");
                    reference.remove(&k);
                    assert_eq!((e, q.now().as_nanos()), (v, k.0));
                }
            }
            assert_eq!(q.pending(), reference.len());
        }
    }

    /// Timers re-armed in place against the way they replace: one event per arming, a
    /// generation per timer, stale events skipped when they come up. Interleaved with one-shot
    /// events, the same events run in the same order at the same instants, and only the stale
    /// ones are gone from the count.
    #[test]
    fn timers_run_as_one_event_per_arming_with_stale_ones_skipped() {
        #[derive(Clone, Copy, Debug, PartialEq)]
        enum Ev {
            Once(u64),
            Timer(usize, u64),
        }
        let mut rng = lasthop_core::Rng::from_seed(7);
        for _ in 0..40 {
            let n_timers = 1 + rng.gen_range_inclusive(6) as usize;
            let mut q = EventQueue::new();
            let ids: Vec<TimerId> = (0..n_timers).map(|t| q.add_timer(Ev::Timer(t, 0))).collect();
            // The reference: a plain queue, timers as generation-stamped events.
            let mut r: EventQueue<Ev> = EventQueue::new();
            let mut gen = vec![0u64; n_timers];
            let mut at: Vec<Option<u64>> = vec![None; n_timers];
            let (mut ran, mut ran_ref, mut stale) = (Vec::new(), Vec::new(), 0u64);
            let mut once = 0u64;
            for _ in 0..3000 {
                match rng.gen_range_inclusive(3) {
                    0 => {
                        let span = if rng.gen_range_inclusive(1) == 0 { 3 } else { 5000 };
                        let t = q.now().as_nanos() + rng.gen_range_inclusive(span);
                        q.schedule(Instant(t), Ev::Once(once));
                        r.schedule(Instant(t), Ev::Once(once));
                        once += 1;
                    }
                    1 => {
                        let k = rng.gen_range_inclusive(n_timers as u64 - 1) as usize;
                        let span = if rng.gen_range_inclusive(1) == 0 { 2 } else { 4000 };
                        let t = q.now().as_nanos() + rng.gen_range_inclusive(span);
                        q.set_timer(ids[k], Instant(t));
                        if at[k] != Some(t) {
                            at[k] = Some(t);
                            gen[k] += 1;
                            r.schedule(Instant(t), Ev::Timer(k, gen[k]));
                        }
                        assert_eq!(q.timer_at(ids[k]), Some(Instant(t)));
                    }
                    _ => {
                        if let Some(e) = q.pop_until(Instant(u64::MAX)) {
                            if let Ev::Timer(k, _) = e {
                                assert_eq!(q.timer_at(ids[k]), None);
                            }
                            ran.push((q.now().as_nanos(), e));
                        }
                        // The reference runs up to the same instant and event.
                        while ran_ref.len() < ran.len() {
                            let e = r.pop_until(Instant(u64::MAX)).expect("the reference has it");
                            match e {
                                Ev::Timer(k, g) if g != gen[k] => stale += 1,
                                Ev::Timer(k, _) => {
                                    at[k] = None;
                                    ran_ref.push((r.now().as_nanos(), Ev::Timer(k, 0)));
                                }
                                once => ran_ref.push((r.now().as_nanos(), once)),
                            }
                        }
                        assert_eq!(ran, ran_ref);
                    }
                }
            }
            assert_eq!(q.processed() + stale, r.processed());
            assert_eq!(q.peek_time().is_some(), q.pending() > 0);
        }
    }

    /// A timer that fired stays at the heap's root until the next event is asked for: while
    /// its handler runs it is not armed (`timer_at`, `peek_time`, `pending` look past it);
    /// re-armed at that very instant it runs after the events already due then; not re-armed,
    /// it is gone.
    #[test]
    fn a_fired_timer_is_disarmed_while_its_handler_runs() {
        #[derive(Clone, Copy, Debug, PartialEq)]
        enum Ev {
            T(u32),
            Once,
        }
        let mut q = EventQueue::new();
        let a = q.add_timer(Ev::T(0));
        let b = q.add_timer(Ev::T(1));
        q.set_timer(a, Instant(10));
        q.set_timer(b, Instant(30));
        q.schedule(Instant(10), Ev::Once);
        assert_eq!(q.pop_until(Instant(100)), Some(Ev::T(0)));
        // In the handler: `a` is no longer armed, the next event is the one-shot at 10.
        assert_eq!(q.timer_at(a), None);
        assert_eq!(q.peek_time(), Some(Instant(10)));
        assert_eq!(q.pending(), 2);
        // Re-armed at the same instant: after the one-shot scheduled before it.
        q.set_timer(a, Instant(10));
        assert_eq!(q.timer_at(a), Some(Instant(10)));
        assert_eq!(q.pop_until(Instant(100)), Some(Ev::Once));
        assert_eq!(q.pop_until(Instant(100)), Some(Ev::T(0)));
        // Not re-armed this time: `b` is next, and `a` is gone.
        assert_eq!(q.peek_time(), Some(Instant(30)));
        assert_eq!(q.pop_until(Instant(100)), Some(Ev::T(1)));
        assert_eq!(q.pop_until(Instant(100)), None);
        assert_eq!(q.pending(), 0);
        assert_eq!(q.timer_at(a), None);
        // A fired timer re-armed later than the others moves below them.
        q.set_timer(a, Instant(50));
        q.set_timer(b, Instant(40));
        assert_eq!(q.pop_until(Instant(100)), Some(Ev::T(1)));
        q.set_timer(b, Instant(60));
        assert_eq!(q.pop_until(Instant(100)), Some(Ev::T(0)));
        assert_eq!(q.pop_until(Instant(100)), Some(Ev::T(1)));
        assert_eq!(q.now(), Instant(60));
    }
}
