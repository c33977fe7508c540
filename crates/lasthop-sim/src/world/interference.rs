//! Interference from outside the cell (`[channel.interference]`): a transmitter the cell's
//! nodes do not sense — a hidden station of a neighbouring network, or a non-802.11 device on
//! the band — that is on for bursts and off between them, each duration drawn from an
//! exponential distribution with its mean (an on/off renewal process, the two-state model of
//! bursty interference). It takes no part in contention: nobody defers to it. While it is on,
//! every receiver of the cell sees it `inr_db` above its noise floor, so a frame whose airtime
//! overlaps a burst is received at SINR = SNR − 10·log10(1 + 10^(INR/10)) instead of its SNR
//! (`exchange/receive.rs`), through the same per-MPDU error model (`lasthop_wifi::phy::error`).
//! An MPDU is judged whole at the lower SINR if any part of its subframe overlaps a burst (the
//! first also over the PPDU's preamble); a Block Ack likewise over its own airtime.
//!
//! The bursts come from their own random stream, drawn in time order as far as the latest
//! reception asked about, so they are the same whatever else the run does.

use lasthop_core::{Duration, Instant, Rng};
use std::collections::VecDeque;

use crate::spec::InterferenceSpec;

/// Bursts older than this before the latest reception asked about are forgotten: a reception
/// is judged when its PPDU ends, and no PPDU or response lasts this long.
const KEEP_NS: u64 = 50_000_000;

pub(super) struct Interference {
    on_mean_ns: f64,
    off_mean_ns: f64,
    /// What a burst takes off a receiver's SNR, dB.
    pub(super) loss_db: f64,
    rng: Rng,
    /// Bursts drawn so far and not forgotten, [start, end), in time order.
    bursts: VecDeque<(Instant, Instant)>,
    /// The start of the next burst not yet drawn.
    next_start: Instant,
}

impl Interference {
    pub(super) fn new(spec: &InterferenceSpec, mut rng: Rng) -> Self {
        let (on_mean_ns, off_mean_ns) = (spec.on_ns as f64, spec.off_ns as f64);
        // The run starts at a random point of the process: off, as long as a gap.
        let next_start = Instant(draw_ns(&mut rng, off_mean_ns));
        let loss_db = 10.0 * (1.0 + 10f64.powf(spec.inr_db / 10.0)).log10();
        Interference { on_mean_ns, off_mean_ns, loss_db, rng, bursts: VecDeque::new(), next_start }
    }

    /// Some burst is on during part of [from, to].
    pub(super) fn overlaps(&mut self, from: Instant, to: Instant) -> bool {
        while self.next_start <= to {
            let start = self.next_start;
            let end = start + Duration(draw_ns(&mut self.rng, self.on_mean_ns).max(1));
            self.bursts.push_back((start, end));
            self.next_start = end + Duration(draw_ns(&mut self.rng, self.off_mean_ns));
        }
        let horizon = Instant(to.as_nanos().saturating_sub(KEEP_NS));
        while self.bursts.front().is_some_and(|&(_, e)| e < horizon) {
            self.bursts.pop_front();
        }
        // Bursts are in time order and do not overlap: the last starting at or before `to` is
        // the only one that can reach `from`.
        self.bursts.iter().rev().find(|&&(s, _)| s <= to).is_some_and(|&(_, e)| e > from)
    }
}

/// An exponential duration of mean `mean_ns`, whole nanoseconds.
fn draw_ns(rng: &mut Rng, mean_ns: f64) -> u64 {
    rng.exponential(mean_ns).round().min(u64::MAX as f64 / 4.0) as u64
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(on_ms: u64, off_ms: u64) -> InterferenceSpec {
        InterferenceSpec { on_ns: on_ms * 1_000_000, off_ns: off_ms * 1_000_000, inr_db: 20.0 }
    }

    #[test]
    fn the_bursts_cover_the_share_of_time_their_means_give() {
        let mut i = Interference::new(&spec(2, 8), Rng::from_seed(7));
        let (step, n) = (100_000u64, 200_000u64);
        let on = (0..n).filter(|k| i.overlaps(Instant(k * step), Instant(k * step))).count();
        let share = on as f64 / n as f64;
        assert!((share - 0.2).abs() < 0.02, "on {share}, expected 2 / (2 + 8)");
    }

    #[test]
    fn the_bursts_do_not_depend_on_what_was_asked() {
        let mut a = Interference::new(&spec(1, 5), Rng::from_seed(3));
        let mut b = Interference::new(&spec(1, 5), Rng::from_seed(3));
        // `b` is asked only now and then, far ahead; both then agree on every interval.
        b.overlaps(Instant(900_000_000), Instant(900_000_000));
        for k in 0..1000u64 {
            let (from, to) = (Instant(900_000_000 + k * 37_000), Instant(900_000_000 + k * 37_000 + 500_000));
            assert_eq!(a.overlaps(from, to), b.overlaps(from, to), "interval {k}");
        }
    }

    #[test]
    fn an_interval_between_two_bursts_sees_none() {
        let mut i = Interference::new(&spec(1, 10), Rng::from_seed(11));
        i.overlaps(Instant(0), Instant(2_000_000_000));
        let b: Vec<_> = i.bursts.iter().copied().collect();
        let w = b.windows(2).find(|w| w[1].0.as_nanos() > w[0].1.as_nanos() + 10).expect("a gap");
        let (gap_from, gap_to) = (w[0].1 + Duration(1), w[1].0 - Duration(1));
        assert!(!i.overlaps(gap_from, gap_to));
        assert!(i.overlaps(gap_from, w[1].0));
        assert!(i.overlaps(w[0].0, w[0].0));
    }

    #[test]
    fn the_sinr_loss_follows_the_inr() {
        let i = Interference::new(&InterferenceSpec { on_ns: 1, off_ns: 1, inr_db: 0.0 }, Rng::from_seed(1));
        assert!((i.loss_db - 3.0103).abs() < 1e-3);
        let j = Interference::new(&InterferenceSpec { on_ns: 1, off_ns: 1, inr_db: 20.0 }, Rng::from_seed(1));
        assert!((j.loss_db - 20.0432).abs() < 1e-3);
    }
}
