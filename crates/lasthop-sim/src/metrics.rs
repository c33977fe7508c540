//! Metrics: a log-linear latency histogram with bounded memory, per-flow and per-station
//! counters, and fixed-bin time series; serialised into the `data` part of a result file
//! (docs/results.md).

use serde::Serialize;

/// Log-linear histogram of u64 values (nanoseconds): values below 2^SUB_BITS are exact; above,
/// each power of two is split into 2^SUB_BITS buckets, so a bucket's width is at most 1/128 of
/// its value. Memory is fixed (64 × 128 counters) whatever the number of samples.
#[derive(Clone, Debug)]
pub struct LogHistogram {
    counts: Vec<u64>,
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
        LogHistogram { counts: Vec::new(), n: 0, sum: 0, max: 0 }
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

    #[inline]
    pub fn record(&mut self, v: u64) {
        let i = Self::index(v);
        if i >= self.counts.len() {
            self.counts.resize(i + 1, 0);
        }
        self.counts[i] += 1;
        self.n += 1;
        self.sum += v as u128;
        if v > self.max {
            self.max = v;
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
        if self.n == 0 {
            return 0;
        }
        let rank = ((q * self.n as f64).ceil() as u64).clamp(1, self.n);
        let mut acc = 0;
        for (i, &c) in self.counts.iter().enumerate() {
            acc += c;
            if acc >= rank {
                let (lo, w) = Self::bucket(i);
                return (lo + w / 2).min(self.max);
            }
        }
        self.max
    }

    pub fn summary(&self) -> DelaySummary {
        DelaySummary {
            mean: self.mean(),
            p50: self.quantile(0.50),
            p95: self.quantile(0.95),
            p99: self.quantile(0.99),
            max: self.max,
            samples: self.n,
            cdf_ns: CDF_QUANTILES.iter().map(|&q| self.quantile(q)).collect(),
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
/// instead.
#[derive(Clone, Debug)]
pub struct Series {
    bins: usize,
    width_ns: u64,
    data: Vec<f64>, // entity-major: entity * bins + bin
    growable: bool,
}

impl Series {
    pub fn new(entities: usize, bins: usize, width_ns: u64) -> Self {
        Series { bins, width_ns, data: vec![0.0; entities * bins], growable: false }
    }
    #[inline]
    fn bin(&mut self, t_ns: u64) -> usize {
        let b = (t_ns / self.width_ns) as usize;
        if b < self.bins {
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
