//! A sorted set of disjoint half-open `u64` ranges, for received packet numbers, received and
//! acknowledged stream bytes and bytes awaiting retransmission. Small (a handful of ranges in
//! practice), kept in one `Vec` that is never shrunk.

use alloc::vec::Vec;

#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RangeSet {
    /// Disjoint, non-adjacent [start, end) ranges in increasing order.
    r: Vec<(u64, u64)>,
}

impl RangeSet {
    pub const fn new() -> Self {
        RangeSet { r: Vec::new() }
    }

    pub fn is_empty(&self) -> bool {
        self.r.is_empty()
    }

    pub fn len(&self) -> usize {
        self.r.len()
    }

    pub fn clear(&mut self) {
        self.r.clear();
    }

    /// The ranges, lowest first.
    pub fn iter(&self) -> impl DoubleEndedIterator<Item = (u64, u64)> + '_ {
        self.r.iter().copied()
    }

    pub fn first(&self) -> Option<(u64, u64)> {
        self.r.first().copied()
    }

    pub fn last(&self) -> Option<(u64, u64)> {
        self.r.last().copied()
    }

    /// Index of the first range whose end is ≥ `x` (the one that may contain or follow `x`).
    fn idx(&self, x: u64) -> usize {
        self.r.partition_point(|&(_, e)| e < x)
    }

    pub fn contains(&self, x: u64) -> bool {
        let i = self.r.partition_point(|&(_, e)| e <= x);
        i < self.r.len() && self.r[i].0 <= x
    }

    /// [a, b) is entirely inside the set.
    pub fn covers(&self, a: u64, b: u64) -> bool {
        if a >= b {
            return true;
        }
        let i = self.r.partition_point(|&(_, e)| e <= a);
        i < self.r.len() && self.r[i].0 <= a && self.r[i].1 >= b
    }

    /// Add [a, b); returns the number of values that were not yet in the set.
    pub fn insert(&mut self, a: u64, b: u64) -> u64 {
        if a >= b {
            return 0;
        }
        let i = self.idx(a);
        // Ranges i..j touch or overlap [a, b).
        let mut j = i;
        let (mut lo, mut hi) = (a, b);
        let mut covered = 0;
        while j < self.r.len() && self.r[j].0 <= b {
            let (s, e) = self.r[j];
            covered += e.min(b).saturating_sub(s.max(a));
            lo = lo.min(s);
            hi = hi.max(e);
            j += 1;
        }
        if i == j {
            self.r.insert(i, (lo, hi));
        } else {
            self.r[i] = (lo, hi);
            self.r.drain(i + 1..j);
        }
        (b - a) - covered
    }

    /// Remove [a, b).
    pub fn remove(&mut self, a: u64, b: u64) {
        if a >= b {
            return;
        }
        let mut i = self.r.partition_point(|&(_, e)| e <= a);
        while i < self.r.len() && self.r[i].0 < b {
            let (s, e) = self.r[i];
            if s < a && e > b {
                self.r[i] = (s, a);
                self.r.insert(i + 1, (b, e));
                return;
            } else if s < a {
                self.r[i].1 = a;
                i += 1;
            } else if e > b {
                self.r[i].0 = b;
                return;
            } else {
                self.r.remove(i);
            }
        }
    }

    /// Drop the lowest ranges until at most `n` remain.
    pub fn truncate_low(&mut self, n: usize) {
        if self.r.len() > n {
            let k = self.r.len() - n;
            self.r.drain(..k);
        }
    }

    /// Remove every value below `x`.
    pub fn remove_below(&mut self, x: u64) {
        self.remove(0, x);
    }

    /// Sum of range lengths.
    pub fn total(&self) -> u64 {
        self.r.iter().map(|&(s, e)| e - s).sum()
    }

    pub fn invariants(&self) -> Result<(), &'static str> {
        for w in self.r.windows(2) {
            if w[0].1 >= w[1].0 {
                return Err("range set: ranges overlap, touch or are unsorted");
            }
        }
        if self.r.iter().any(|&(s, e)| s >= e) {
            return Err("range set: empty range");
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use alloc::vec;

    #[test]
    fn insert_merge_remove() {
        let mut s = RangeSet::new();
        assert_eq!(s.insert(10, 20), 10);
        assert_eq!(s.insert(30, 40), 10);
        assert_eq!(s.insert(15, 35), 10);
        assert_eq!(s.iter().collect::<Vec<_>>(), vec![(10, 40)]);
        assert_eq!(s.insert(40, 41), 1);
        assert_eq!(s.insert(5, 6), 1);
        assert_eq!(s.iter().collect::<Vec<_>>(), vec![(5, 6), (10, 41)]);
        s.remove(12, 14);
        assert_eq!(s.iter().collect::<Vec<_>>(), vec![(5, 6), (10, 12), (14, 41)]);
        assert!(s.contains(5) && !s.contains(6) && s.contains(11) && !s.contains(12));
        assert!(s.covers(14, 41) && !s.covers(11, 15));
        s.remove(0, 13);
        assert_eq!(s.iter().collect::<Vec<_>>(), vec![(14, 41)]);
        s.invariants().unwrap();
    }
}
