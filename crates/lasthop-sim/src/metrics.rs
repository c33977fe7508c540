//! Metrics: a log-linear latency histogram with bounded memory, per-flow and per-station
//! counters, and fixed-bin time series; serialised into the `data` part of a result file
//! (docs/results.md).

use serde::Serialize;

/// Log-linear histogram of u64 values (nanoseconds): values below 2^SUB_BITS are exact; above,
/// each power of two is split into 2^SUB_BITS buckets, so a bucket's width is at most 1/128 of
/// its value. Only the buckets between the smallest and the largest value seen are stored
/// (`counts[i]` is bucket `first + i`): a flow's delays span a few powers of two, not the 64 a
/// u64 has, so a histogram costs ~100–300 counters, never more than 64 × 128.
#[derive(Clone, Debug)]
pub struct LogHistogram {
    counts: Vec<u64>,
    first: usize,
    n: u64,
    sum: u128,
    max: u64,
}

const SUB_BITS: u32 = 7;
const SUB: u64 = 1 << SUB_BITS;

impl Default for LogHistogram {
    fn default() -> Self {
        Self::new()
    }
}

impl LogHistogram {
    pub fn new() -> Self {
        LogHistogram { counts: Vec::new(), first: 0, n: 0, sum: 0, max: 0 }
    }

    #[inline]
    fn index(v: u64) -> usize {
        if v < SUB {
            v as usize
        } else {
            let e = 63 - v.leading_zeros(); // >= SUB_BITS
            let shift = e - SUB_BITS;
            let sub = (v >> shift) & (SUB - 1);
            ((e - SUB_BITS + 1) as u64 * SUB + sub) as usize
        }
    }

    /// Lower bound and width of bucket `i`.
    fn bucket(i: usize) -> (u64, u64) {
        let i = i as u64;
        if i < SUB {
            (i, 1)
        } else {
            let e = i / SUB - 1 + SUB_BITS as u64;
            let sub = i % SUB;
            let shift = e - SUB_BITS as u64;
            (((SUB + sub) << shift), 1u64 << shift)
        }
    }

    /// Forget every value, keeping the buckets' memory (no allocation when refilled).
    pub fn clear(&mut self) {
        self.counts.iter_mut().for_each(|c| *c = 0);
        self.n = 0;
        self.sum = 0;
        self.max = 0;
    }

    #[inline(always)]
    pub fn record(&mut self, v: u64) {
        let i = Self::index(v);
        let j = i.wrapping_sub(self.first);
        if j < self.counts.len() {
            self.counts[j] += 1;
        } else {
            self.grow_to(i);
            self.counts[i - self.first] += 1;
        }
        self.n += 1;
        self.sum += v as u128;
        if v > self.max {
            self.max = v;
        }
    }

    /// Make room for bucket `i` (outside the stored range).
    #[cold]
    #[inline(never)]
    fn grow_to(&mut self, i: usize) {
        if self.counts.is_empty() {
            self.first = i;
            self.counts.push(0);
        } else if i < self.first {
            // A value below every one so far: grow downwards.
            let grow = self.first - i;
            self.counts.splice(0..0, core::iter::repeat_n(0, grow));
            self.first = i;
        } else {
            self.counts.resize(i - self.first + 1, 0);
        }
    }

    pub fn count(&self) -> u64 {
        self.n
    }
    pub fn mean(&self) -> f64 {
        if self.n == 0 {
            0.0
        } else {
            self.sum as f64 / self.n as f64
        }
    }
    pub fn max(&self) -> u64 {
        self.max
    }

    /// The q-quantile (0..=1): the middle of the bucket holding the ⌈q·n⌉-th smallest sample,
    /// capped at the maximum seen.
    pub fn quantile(&self, q: f64) -> u64 {
        let mut out = [0];
        self.quantiles(&[q], &mut out);
        out[0]
    }

    /// Several quantiles (`qs` in increasing order) in one pass over the buckets.
    pub fn quantiles(&self, qs: &[f64], out: &mut [u64]) {
        debug_assert!(qs.windows(2).all(|w| w[0] <= w[1]), "quantiles in increasing order");
        if self.n == 0 || qs.is_empty() {
            out.iter_mut().for_each(|o| *o = 0);
            return;
        }
        let rank = |q: f64| ((q * self.n as f64).ceil() as u64).clamp(1, self.n);
        let mut k = 0;
        let mut acc = 0;
        let mut next = rank(qs[0]);
        for (j, &c) in self.counts.iter().enumerate() {
            acc += c;
            if acc < next {
                continue;
            }
            while k < qs.len() && acc >= next {
                let (lo, w) = Self::bucket(self.first + j);
                out[k] = (lo + w / 2).min(self.max);
                k += 1;
                if k < qs.len() {
                    next = rank(qs[k]);
                }
            }
            if k == qs.len() {
                return;
            }
        }
        out[k..].iter_mut().for_each(|o| *o = self.max);
    }

    pub fn summary(&self) -> DelaySummary {
        let mut cdf = [0u64; CDF_QUANTILES.len()];
        self.quantiles(&CDF_QUANTILES, &mut cdf);
        // The median, p95 and p99 are points of the CDF (the same q, so the same rank).
        let at = |q: f64| cdf[CDF_QUANTILES.iter().position(|&c| c == q).expect("a CDF point")];
        DelaySummary {
            mean: self.mean(),
            p50: at(0.50),
            p95: at(0.95),
            p99: at(0.99),
            max: self.max,
            samples: self.n,
            cdf_ns: cdf.to_vec(),
        }
    }
}

#[derive(Clone, Debug, Serialize)]
pub struct DelaySummary {
    pub mean: f64,
    pub p50: u64,
    pub p95: u64,
    pub p99: u64,
    pub max: u64,
    pub samples: u64,
    /// The delay at each of [`CDF_QUANTILES`] (an empirical CDF for plots).
    pub cdf_ns: Vec<u64>,
}

/// Quantiles reported in `DelaySummary::cdf_ns`: 1 %, 5 %, 10 %, …, 95 %, 99 %.
pub const CDF_QUANTILES: [f64; 21] = [
    0.01, 0.05, 0.10, 0.15, 0.20, 0.25, 0.30, 0.35, 0.40, 0.45, 0.50, 0.55, 0.60, 0.65, 0.70, 0.75, 0.80, 0.85,
    0.90, 0.95, 0.99,
];

/// Counters of one flow (packets created at or after warmup only).
#[derive(Clone, Debug, Default)]
pub struct FlowCounters {
    pub offered_packets: u64,
    pub offered_bytes: u64,
    pub delivered_packets: u64,
    pub delivered_bytes: u64,
    pub dropped_queue: u64,
    pub dropped_retry: u64,
    pub dropped_wired: u64,
    pub delay: LogHistogram,
}

/// Fixed-width time bins of per-entity sums. A simulation knows its duration, so values past
/// the last bin land in it; an open-ended host (the emulator) makes the series growable
/// instead. The bins are one zeroed allocation (calloc): the pages of entities never written
/// (an idle station, a flow that cannot produce the series) are never touched, so they cost
/// address space, not memory. (Rows allocated on first write were tried: the extra lookup on
/// every write cost 5–8 % of a small cell's run time for no resident memory saved.)
#[derive(Clone, Debug)]
pub struct Series {
    bins: usize,
    width_ns: u64,
    data: Vec<f64>, // entity-major: entity * bins + bin
    growable: bool,
    /// The last bin written and its span [lo, hi) in ns: writes come in time order, so most
    /// land in it without a division.
    last: (u64, u64, usize),
}

impl Series {
    pub fn new(entities: usize, bins: usize, width_ns: u64) -> Self {
        Series { bins, width_ns, data: vec![0.0; entities * bins], growable: false, last: (0, 0, 0) }
    }
    #[inline]
    fn bin(&mut self, t_ns: u64) -> usize {
        let (lo, hi, b) = self.last;
        if lo <= t_ns && t_ns < hi {
            return b;
        }
        self.bin_slow(t_ns)
    }
    fn bin_slow(&mut self, t_ns: u64) -> usize {
        let b = (t_ns / self.width_ns) as usize;
        if b < self.bins {
            let lo = b as u64 * self.width_ns;
            self.last = (lo, lo.saturating_add(self.width_ns), b);
            b
        } else if self.growable {
            self.resize_bins((b + 1).max(self.bins * 2));
            b
        } else {
            self.bins - 1
        }
    }
    #[inline]
    pub fn add(&mut self, entity: usize, t_ns: u64, v: f64) {
        let b = self.bin(t_ns);
        self.data[entity * self.bins + b] += v;
    }
    /// Overwrite: the bin keeps the last value set in it (for sampled state such as cwnd).
    #[inline]
    pub fn set(&mut self, entity: usize, t_ns: u64, v: f64) {
        let b = self.bin(t_ns);
        self.data[entity * self.bins + b] = v;
    }
    /// Let the series grow past its last bin (doubling) instead of clamping into it.
    pub fn set_growable(&mut self) {
        self.growable = true;
    }
    /// Keep `bins` bins per entity: truncate, or extend with zeros.
    pub fn resize_bins(&mut self, bins: usize) {
        let entities = self.entities();
        let mut data = vec![0.0; entities * bins];
        let keep = bins.min(self.bins);
        for e in 0..entities {
            data[e * bins..e * bins + keep].copy_from_slice(&self.data[e * self.bins..e * self.bins + keep]);
        }
        (self.data, self.bins) = (data, bins);
        self.last = (0, 0, 0);
    }
    /// One more entity (a flow that appeared during the run), all zeros.
    pub fn push_entity(&mut self) {
        self.data.resize(self.data.len() + self.bins, 0.0);
    }
    pub fn entities(&self) -> usize {
        self.data.len().checked_div(self.bins).unwrap_or(0)
    }
    pub fn row(&self, entity: usize) -> &[f64] {
        &self.data[entity * self.bins..(entity + 1) * self.bins]
    }
    pub fn bins(&self) -> usize {
        self.bins
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn histogram_quantiles_are_within_one_percent() {
        let mut h = LogHistogram::new();
        for v in 1..=100_000u64 {
            h.record(v * 1000);
        }
        for &(q, exact) in &[(0.5, 50_000_000u64), (0.95, 95_000_000), (0.99, 99_000_000)] {
            let got = h.quantile(q) as f64;
            assert!((got / exact as f64 - 1.0).abs() < 0.008, "q{q}: {got} vs {exact}");
        }
        assert_eq!(h.max(), 100_000_000);
        assert!((h.mean() - 50_000_500.0).abs() < 1.0);
    }

    /// The offset storage and the one-pass quantiles against a dense histogram scanned from
    /// bucket 0 for each quantile (the rule they replace), values arriving in any order and
    /// spanning up to 40 powers of two, refilled after `clear`.
    #[test]
    fn offset_buckets_and_one_pass_quantiles_match_a_dense_scan() {
        let mut rng = lasthop_core::Rng::from_seed(7);
        for case in 0..200u64 {
            let mut h = LogHistogram::new();
            for round in 0..2 {
                let mut dense = vec![0u64; 64 * SUB as usize];
                let (mut n, mut max) = (0u64, 0u64);
                let count = 1 + rng.gen_range_inclusive(300);
                for _ in 0..count {
                    let bits = rng.gen_range_inclusive(40 + case % 3);
                    let v = rng.gen_range_inclusive((1u64 << bits) - 1);
                    h.record(v);
                    dense[LogHistogram::index(v)] += 1;
                    n += 1;
                    max = max.max(v);
                }
                let qs = [0.0, 0.01, 0.2, 0.5, 0.5, 0.95, 0.99, 1.0];
                let mut got = [0u64; 8];
                h.quantiles(&qs, &mut got);
                for (k, &q) in qs.iter().enumerate() {
                    let rank = ((q * n as f64).ceil() as u64).clamp(1, n);
                    let mut acc = 0;
                    let want = dense.iter().enumerate().find_map(|(i, &c)| {
                        acc += c;
                        (acc >= rank).then(|| {
                            let (lo, w) = LogHistogram::bucket(i);
                            (lo + w / 2).min(max)
                        })
                    });
                    assert_eq!(Some(got[k]), want, "case {case} round {round} q {q}");
                    assert_eq!(h.quantile(q), got[k]);
                }
                h.clear();
            }
        }
    }

    #[test]
    fn small_values_are_exact_and_buckets_tile() {
        let mut h = LogHistogram::new();
        h.record(5);
        assert_eq!(h.quantile(0.5), 5);
        // buckets are contiguous and non-overlapping
        let mut next = 0;
        for i in 0..(40 * SUB as usize) {
            let (lo, w) = LogHistogram::bucket(i);
            assert_eq!(lo, next, "bucket {i}");
            assert_eq!(LogHistogram::index(lo), i);
            assert_eq!(LogHistogram::index(lo + w - 1), i);
            next = lo + w;
        }
    }
}
