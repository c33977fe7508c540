//! PIE's departure-rate estimate of the queueing delay: RFC 8033 §5.2 (Little's law,
//! `qdelay = backlog / average departure rate`), measured as Linux 3.x net/sched/sch_pie.c
//! does it (`pie_process_dequeue`, `calculate_probability`, as merged in Linux 3.14 and
//! unchanged through 4.x; sch_pie's only estimator until Linux 5.5 made timestamps the default
//! and kept this one as the `dq_rate_estimator` option). RFC 8033 §5.2 describes the same
//! cycle with a 16 KB threshold; Linux 3.x used 10 000 bytes.
//!
//! * A measurement cycle opens at a departure that leaves at least [`QUEUE_THRESHOLD`] bytes
//!   queued (that departure already counts), and closes at the first departure that brings its
//!   count to the threshold at a later clock tick than it opened: departures within the tick it
//!   opened in go on counting. Its rate sample is `count / (close − open)`.
//! * The average rate starts at the first sample and then moves by 1/8 of each sample:
//!   `avg = avg − avg/8 + sample/8`.
//! * A closing cycle reopens at once while the backlog is still at least the threshold, else
//!   the estimator holds its average until the backlog builds up again.
//! * `qdelay = backlog / avg`, zero while there is no estimate.
//!
//! The arithmetic is Linux's: the packet scheduler's clock counts ticks of 64 ns
//! (`PSCHED_SHIFT` = 6), a rate is bytes per tick scaled by 2^8 (`PIE_SCALE`) and truncated,
//! and the 1/8 steps are shifts. So the estimate has Linux's resolution (about 0.5 Mb/s per
//! unit of the scaled rate; no estimate at all below it) but not its 32-bit wrap-arounds (a
//! cycle over 275 s, a backlog over 16 MB): those are computed in 64 bits here.

use lasthop_core::{Duration, Instant};

/// Linux's `QUEUE_THRESHOLD`: the backlog a cycle needs to open, and the bytes it measures.
pub const QUEUE_THRESHOLD: u64 = 10_000;
/// `PSCHED_SHIFT`: the packet scheduler's clock ticks every 2^6 ns.
const TICK_SHIFT: u32 = 6;
/// `PIE_SCALE`: rates are kept in bytes per tick × 2^8.
const RATE_SHIFT: u32 = 8;

/// The estimator's state (Linux's `dq_count`, `dq_tstamp`, `avg_dq_rate`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct DqRate {
    /// Bytes counted in the open cycle; `None` when no cycle is open (`DQCOUNT_INVALID`).
    count: Option<u64>,
    /// The tick the open cycle started at.
    start: u64,
    /// Average departure rate, bytes per tick × 2^8; 0 until the first sample.
    avg: u64,
}

fn tick(t: Instant) -> u64 {
    t.as_nanos() >> TICK_SHIFT
}

impl DqRate {
    /// A packet of `len` bytes left at `now`, leaving `backlog` bytes queued. Returns the length
    /// of the cycle this departure closed, if it closed one (Linux spends it from the burst
    /// allowance).
    pub fn on_dequeue(&mut self, now: Instant, len: u32, backlog: u64) -> Option<Duration> {
        let now = tick(now);
        if backlog >= QUEUE_THRESHOLD && self.count.is_none() {
            self.count = Some(0);
            self.start = now;
        }
        let count = self.count.as_mut()?;
        *count += u64::from(len);
        if *count < QUEUE_THRESHOLD {
            return None;
        }
        let dtime = now.saturating_sub(self.start);
        if dtime == 0 {
            return None;
        }
        let sample = (*count << RATE_SHIFT) / dtime;
        self.avg = if self.avg == 0 { sample } else { self.avg - (self.avg >> 3) + (sample >> 3) };
        if backlog < QUEUE_THRESHOLD {
            self.count = None;
        } else {
            self.count = Some(0);
            self.start = now;
        }
        Some(Duration(dtime << TICK_SHIFT))
    }

    /// `backlog / avg`, truncated to the clock's tick; zero without an estimate.
    pub fn qdelay(&self, backlog: u64) -> Duration {
        if self.avg == 0 {
            return Duration::ZERO;
        }
        let ticks = (u128::from(backlog) << RATE_SHIFT) / u128::from(self.avg);
        Duration(u64::try_from(ticks << TICK_SHIFT).unwrap_or(u64::MAX))
    }

    /// Whether a rate has been measured since the start or the last [`DqRate::reset`].
    pub fn has_estimate(&self) -> bool {
        self.avg > 0
    }

    /// The average departure rate in bytes per second (0 without an estimate).
    pub fn rate_bytes_per_sec(&self) -> f64 {
        self.avg as f64 * (1e9 / (1u64 << TICK_SHIFT) as f64) / (1u64 << RATE_SHIFT) as f64
    }

    /// Forget the estimate and any open cycle (Linux's `pie_vars_init`).
    pub fn reset(&mut self) {
        *self = DqRate::default();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use alloc::vec;
    use alloc::vec::Vec;

    /// 64 ns ticks: 1000-byte packets every 125 ticks (8 µs) leave at 125 MB/s, 8 bytes per
    /// tick, 2048 in the scaled unit.
    const GAP: u64 = 125 << TICK_SHIFT;
    const LEN: u32 = 1000;
    const RATE: u64 = 8 << RATE_SHIFT;

    fn at(k: u64) -> Instant {
        Instant(k * GAP)
    }

    /// Drain `n` packets one every GAP from `k0`, the backlog starting at `backlog` bytes.
    fn drain(e: &mut DqRate, k0: u64, n: u64, backlog: &mut u64) -> Vec<(u64, Duration)> {
        let mut closed = Vec::new();
        for k in k0..k0 + n {
            *backlog -= u64::from(LEN);
            if let Some(d) = e.on_dequeue(at(k), LEN, *backlog) {
                closed.push((k, d));
            }
        }
        closed
    }

    /// The first cycle counts the departure that opened it: 10 packets over 9 gaps. Each
    /// cycle after it reopens at the departure that closed the last, so it counts 10 packets
    /// over 10 gaps: the true rate. The average moves by 1/8 of each sample (with Linux's
    /// truncating shifts) and qdelay is backlog / average.
    #[test]
    fn a_queue_drained_at_a_known_rate() {
        let mut e = DqRate::default();
        let mut backlog = 1_000_000;
        let closed = drain(&mut e, 0, 10, &mut backlog);
        assert_eq!(closed, vec![(9, Duration(9 * GAP))]);
        let first = (10_000u64 << RATE_SHIFT) / (9 * 125);
        assert_eq!(first, 2275);
        assert_eq!(e.avg, first);
        // The next cycle: packets 10..=19, closed by packet 19, 10 gaps.
        let closed = drain(&mut e, 10, 10, &mut backlog);
        assert_eq!(closed, vec![(19, Duration(10 * GAP))]);
        assert_eq!(e.avg, 2275 - (2275 >> 3) + (RATE >> 3));
        // Many cycles later the average sits where a 1/8 step no longer moves it: within 8
        // units (0.4 %) above the true rate.
        drain(&mut e, 20, 900, &mut backlog);
        assert!((RATE..RATE + 8).contains(&e.avg), "{}", e.avg);
        let want = 125_000_000.0;
        assert!((e.rate_bytes_per_sec() / want - 1.0).abs() < 0.004, "{}", e.rate_bytes_per_sec());
        // Little's law: 125 000 bytes at 125 MB/s is 1 ms.
        let q = e.qdelay(125_000).as_nanos() as f64;
        assert!((q / 1e6 - 1.0).abs() < 0.004, "{q}");
        // Exact arithmetic: (backlog << 8) / avg ticks of 64 ns.
        assert_eq!(e.qdelay(125_000), Duration(((125_000u64 << RATE_SHIFT) / e.avg) << TICK_SHIFT));
    }

    /// A backlog that never reaches QUEUE_THRESHOLD bytes opens no cycle: no estimate, and
    /// qdelay reads zero however long the packets wait.
    #[test]
    fn no_estimate_below_the_threshold() {
        let mut e = DqRate::default();
        let mut backlog = QUEUE_THRESHOLD - 1;
        for k in 0..1000 {
            backlog -= u64::from(LEN);
            assert_eq!(e.on_dequeue(at(k), LEN, backlog), None);
            backlog += u64::from(LEN); // a packet arrives for each that leaves
        }
        assert!(!e.has_estimate());
        assert_eq!(e.qdelay(backlog), Duration::ZERO);
        // One departure leaving exactly the threshold opens a cycle.
        e.on_dequeue(at(2000), LEN, QUEUE_THRESHOLD);
        assert_eq!(e.count, Some(u64::from(LEN)));
    }

    /// A cycle that closes with less than the threshold left does not reopen: the average is
    /// held (later departures change nothing) until the backlog builds up again, and the next
    /// cycle opens at that departure.
    #[test]
    fn the_cycle_restarts_as_linux_does() {
        let mut e = DqRate::default();
        // 12 packets queued: the first departure leaves 11 000 bytes and opens a cycle.
        let mut backlog = 12_000;
        let closed = drain(&mut e, 0, 10, &mut backlog);
        assert_eq!(closed.len(), 1);
        assert_eq!(backlog, 2_000);
        assert_eq!(e.count, None, "closed below the threshold: no new cycle");
        let held = e.avg;
        drain(&mut e, 10, 2, &mut backlog);
        assert_eq!((e.avg, e.count), (held, None));
        // The queue builds up again; the departure at k = 100 leaves 20 000 bytes.
        assert_eq!(e.on_dequeue(at(100), LEN, 20_000), None);
        assert_eq!((e.count, e.start), (Some(u64::from(LEN)), at(100).as_nanos() >> TICK_SHIFT));
        // Closing while the backlog stays above the threshold reopens at once, counting from 0.
        let mut backlog = 20_000;
        let closed = drain(&mut e, 101, 9, &mut backlog);
        assert_eq!(closed, vec![(109, Duration(9 * GAP))]);
        assert_eq!((e.count, e.start), (Some(0), at(109).as_nanos() >> TICK_SHIFT));
        // reset forgets everything.
        e.reset();
        assert_eq!(e, DqRate::default());
        assert_eq!(e.qdelay(backlog), Duration::ZERO);
    }

    /// Departures within the tick a cycle opened in cannot close it (no time has passed): a
    /// burst taken at one instant is counted whole and measured to the next departure.
    #[test]
    fn a_burst_at_one_instant_is_measured_to_the_next_departure() {
        let mut e = DqRate::default();
        let mut backlog = 100_000;
        for _ in 0..30 {
            backlog -= u64::from(LEN);
            assert_eq!(e.on_dequeue(Instant(1_000_000), LEN, backlog), None);
        }
        assert_eq!(e.count, Some(30_000));
        // Still the same 64 ns tick.
        assert_eq!(e.on_dequeue(Instant(1_000_000 + 63), LEN, backlog - 1000), None);
        // The next burst, 1 ms later: 32 000 bytes over 15 625 ticks.
        let d = e.on_dequeue(Instant(2_000_000), LEN, backlog - 2000);
        assert_eq!(d, Some(Duration(15_625 << TICK_SHIFT)));
        assert_eq!(e.avg, (32_000u64 << RATE_SHIFT) / 15_625);
    }

    /// Below about 0.5 Mb/s a sample truncates to zero: Linux never gets an estimate.
    #[test]
    fn too_slow_to_measure() {
        let mut e = DqRate::default();
        // 1000 bytes every 20 ms: 50 kB/s, 0.2 scaled units.
        let mut backlog = 100_000;
        for k in 0..50u64 {
            backlog -= 1000;
            e.on_dequeue(Instant(k * 20_000_000), 1000, backlog);
        }
        assert!(!e.has_estimate());
        assert_eq!(e.qdelay(backlog), Duration::ZERO);
    }
}
