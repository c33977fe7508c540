//! The event engine: a priority queue of events ordered by `(time, seq)`, where `seq` is the
//! order of scheduling. Two events at the same instant therefore run in the order they were
//! scheduled, on every machine, which is half of the determinism contract (the other half is
//! per-entity random streams).

use lasthop_core::Instant;
use std::cmp::Ordering;
use std::collections::BinaryHeap;

struct Entry<E> {
    time: Instant,
    seq: u64,
    ev: E,
}

impl<E> PartialEq for Entry<E> {
    fn eq(&self, o: &Self) -> bool {
        self.time == o.time && self.seq == o.seq
    }
}
impl<E> Eq for Entry<E> {}
impl<E> PartialOrd for Entry<E> {
    fn partial_cmp(&self, o: &Self) -> Option<Ordering> {
        Some(self.cmp(o))
    }
}
impl<E> Ord for Entry<E> {
    // Reversed: BinaryHeap is a max-heap and we want the earliest first.
    fn cmp(&self, o: &Self) -> Ordering {
        o.time.cmp(&self.time).then(o.seq.cmp(&self.seq))
    }
}

pub struct EventQueue<E> {
    heap: BinaryHeap<Entry<E>>,
    seq: u64,
    now: Instant,
    processed: u64,
}

impl<E> Default for EventQueue<E> {
    fn default() -> Self {
        Self::new()
    }
}

impl<E> EventQueue<E> {
    pub fn new() -> Self {
        EventQueue { heap: BinaryHeap::with_capacity(1024), seq: 0, now: Instant::ZERO, processed: 0 }
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
        self.heap.push(Entry { time, seq: self.seq, ev });
        self.seq += 1;
    }

    /// The next event at or before `until`, advancing `now` to its time.
    #[inline]
    pub fn pop_until(&mut self, until: Instant) -> Option<E> {
        if self.heap.peek()?.time > until {
            return None;
        }
        let e = self.heap.pop()?;
        self.now = e.time;
        self.processed += 1;
        Some(e.ev)
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
    pub fn pending(&self) -> usize {
        self.heap.len()
    }
    pub fn peek_time(&self) -> Option<Instant> {
        self.heap.peek().map(|e| e.time)
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
}
