//! Receiver-side aggregation estimator: how many packets each received frame carried, averaged
//! over slots of Δ, from "Regulating Aggregation Level For Low Latency in 802.11ac".
//!
//! What follows the paper:
//! * §II.B: packets of one aggregated frame are received with the same timestamp, so equal
//!   timestamps identify the frame. We cluster consecutive packets whose receive timestamps are
//!   less than [`EstimatorConfig::gap_threshold`] apart into one frame.
//! * §III.B, §IV.C: the frame aggregation level N_{i,f} and the MCS rate R_{i,f} "can be observed
//!   in userspace by packet sniffing" (the radio header). When the host has the radiotap A-MPDU
//!   status reference number it passes it in [`RxPacket::ampdu_ref`], and packets with the same
//!   reference form one frame; the host's PHY rate and MCS, if any, go in [`RxPacket::rate`] /
//!   [`RxPacket::mcs`].
//! * §III.A: time is cut into slots of Δ (default 500 ms); for slot k the report carries
//!   |T_{i,k}| and Σ N_{i,f}, whose ratio is μ_{N_i}(k), and the mean of R_{i,f}, μ_{R_i}(k).
//!
//! Our choices, which the paper leaves open:
//! * "Same timestamp" becomes "gap below a threshold", so that clock resolution and the few
//!   microseconds a host spends handing up each packet of a burst do not split a frame. A gap
//!   exactly equal to the threshold starts a new frame (the comparison is strict).
//! * With both references present, packets join a frame only if the references are equal
//!   (and the gap rule holds); a packet with a reference never joins one without.
//! * A frame belongs to the slot of its first packet. A slot is reported once it has ended and
//!   the frame open at its end is complete (its gap has run out), so a frame straddling the
//!   boundary is counted whole, once.
//! * A frame is closed after [`EstimatorConfig::max_aggregate`] packets, which bounds how long
//!   a report can wait. Slots in which nothing arrived are reported with zero frames; of an idle
//!   stretch of several slots only the first and the last are reported (`seq` jumps).
//!
//! Sans-IO: `now` passed to [`AggregationEstimator::handle_input`] is the packet's receive
//! timestamp, on the same timeline as the host's timer. Timestamps that go backwards are
//! treated as equal to the latest one (and counted).

use super::report::AggReport;
use super::ConfigError;
use alloc::collections::VecDeque;
use lasthop_core::{BitRate, Controller, Duration, Instant};

/// Estimator parameters.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct EstimatorConfig {
    /// Report interval Δ (§III.A: "Typical values are Δ = 500ms"). Default 500 ms.
    pub interval: Duration,
    /// Largest gap between consecutive receive timestamps inside one frame (exclusive).
    ///
    /// Default 50 µs. Two different PPDUs to the same receiver are never closer than about
    /// 100 µs whatever the MCS: a PPDU is followed by SIFS (16 µs), the (Block) Ack at a legacy
    /// rate (≥ 28 µs), at least another SIFS (16 µs; AIFS, 43 µs for best effort, outside a TXOP
    /// burst) and the next PPDU's preamble and first symbol (VHT: 44 µs) — IEEE 802.11-2020
    /// Clause 10 interframe spaces and Clause 21 VHT PPDU format. Packets of one PPDU are handed
    /// up together: identical NIC/radiotap timestamps, or a few µs apart with kernel software
    /// timestamps. 50 µs is half the smallest PPDU spacing and 50 times the 1 µs resolution of
    /// radiotap TSFT and `SO_TIMESTAMP`. A host whose timestamps mark the end of each MPDU
    /// (packets of one A-MPDU one MPDU airtime apart, up to milliseconds at low MCS) cannot be
    /// served by timestamps and must pass [`RxPacket::ampdu_ref`].
    pub gap_threshold: Duration,
    /// Most packets counted in one frame; the next packet starts a new frame. Default 256, the
    /// 802.11ax Block Ack window (≥ 64 for HT/VHT and ≥ the 128 packets of 64 two-packet
    /// A-MSDUs mentioned in §IV.A).
    pub max_aggregate: u32,
}

impl Default for EstimatorConfig {
    fn default() -> Self {
        EstimatorConfig {
            interval: Duration::from_millis(500),
            gap_threshold: Duration::from_micros(50),
            max_aggregate: 256,
        }
    }
}

impl EstimatorConfig {
    /// Check every field; the error names the first field out of range.
    pub fn validate(&self) -> Result<(), ConfigError> {
        let in_range = |d: Duration, lo: Duration, hi: Duration| d >= lo && d <= hi;
        if !in_range(
            self.interval,
            Duration::from_millis(1),
            Duration::from_secs(60),
        ) {
            return Err(ConfigError::new("interval", self.interval, "1 ms ..= 60 s"));
        }
        if !in_range(
            self.gap_threshold,
            Duration::from_nanos(1),
            Duration::from_millis(1),
        ) {
            return Err(ConfigError::new(
                "gap_threshold",
                self.gap_threshold,
                "1 ns ..= 1 ms",
            ));
        }
        if !(1..=1024).contains(&self.max_aggregate) {
            return Err(ConfigError::new(
                "max_aggregate",
                self.max_aggregate,
                "1 ..= 1024",
            ));
        }
        // A frame must end well inside the slot after its own, so a report waits at most one
        // frame's length.
        let longest = self.gap_threshold.saturating_mul(self.max_aggregate as u64);
        if longest >= self.interval {
            return Err(ConfigError::new(
                "gap_threshold",
                self.gap_threshold,
                alloc::format!(
                    "below interval / max_aggregate ({:?})",
                    self.interval / self.max_aggregate as u64
                ),
            ));
        }
        Ok(())
    }
}

/// What the host knows about one received packet besides its timestamp (`now`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct RxPacket {
    /// Radiotap A-MPDU status reference number, when the host captures radio headers.
    pub ampdu_ref: Option<u32>,
    /// PHY data rate of the frame that carried the packet (R_{i,f}); zero means unknown.
    pub rate: Option<BitRate>,
    /// MCS index of that frame.
    pub mcs: Option<u8>,
}

/// Monotone counters.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct EstimatorStats {
    /// Packets handed in.
    pub packets: u64,
    /// Frames closed.
    pub aggregates: u64,
    /// Reports produced.
    pub reports: u64,
    /// Packets whose timestamp was earlier than the previous packet's.
    pub reordered: u64,
    /// Frames closed because they reached `max_aggregate` packets.
    pub capped: u64,
    /// Empty slots not reported because a later empty slot was (idle stretches).
    pub skipped_slots: u64,
}

/// Sums for one slot.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
struct Slot {
    k: u64,
    aggregates: u32,
    packets: u32,
    rate_sum: u128,
    rate_frames: u32,
    mcs: Option<u8>,
}

impl Slot {
    fn new(k: u64) -> Self {
        Slot {
            k,
            ..Slot::default()
        }
    }
    fn report(&self) -> AggReport {
        AggReport {
            seq: self.k as u32,
            aggregates: self.aggregates,
            packets: self.packets,
            mean_rate: (self.rate_frames > 0)
                .then(|| BitRate((self.rate_sum / self.rate_frames as u128) as u64)),
            mcs: self.mcs,
        }
    }
}

/// The frame being received.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Open {
    slot: u64,
    last: Instant,
    packets: u32,
    ampdu_ref: Option<u32>,
    rate: Option<BitRate>,
    mcs: Option<u8>,
}

/// Infers packets per frame at a receiver and reports every Δ (see the module doc).
#[derive(Clone, Debug)]
pub struct AggregationEstimator {
    params: EstimatorConfig,
    /// Start of slot 0.
    origin: Instant,
    /// The slot `now` is in (or, while `pending` waits, the one after it).
    current: Slot,
    /// A slot that has ended but whose last frame is still open.
    pending: Option<Slot>,
    open: Option<Open>,
    last_rx: Option<Instant>,
    out: VecDeque<AggReport>,
    stats: EstimatorStats,
    /// Packets in reports already produced (for the conservation invariant).
    reported_packets: u64,
}

impl AggregationEstimator {
    /// A new estimator whose slot 0 starts at `now`.
    pub fn new(params: EstimatorConfig, now: Instant) -> Result<Self, ConfigError> {
        params.validate()?;
        Ok(AggregationEstimator {
            params,
            origin: now,
            current: Slot::new(0),
            pending: None,
            open: None,
            last_rx: None,
            out: VecDeque::new(),
            stats: EstimatorStats::default(),
            reported_packets: 0,
        })
    }

    pub fn params(&self) -> &EstimatorConfig {
        &self.params
    }
    pub fn stats(&self) -> EstimatorStats {
        self.stats
    }

    /// End of slot `k` (exclusive).
    fn slot_end(&self, k: u64) -> Instant {
        self.origin + self.params.interval.saturating_mul(k.saturating_add(1))
    }

    /// Whether a packet at `now` with `pkt` continues the open frame `a`.
    fn joins(&self, a: &Open, now: Instant, pkt: &RxPacket) -> bool {
        now.saturating_since(a.last) < self.params.gap_threshold
            && a.packets < self.params.max_aggregate
            && a.ampdu_ref == pkt.ampdu_ref
    }

    /// Count the open frame into the slot it belongs to.
    fn close_open(&mut self) {
        let Some(a) = self.open.take() else { return };
        let slot = match &mut self.pending {
            Some(p) if p.k == a.slot => p,
            _ => &mut self.current,
        };
        debug_assert_eq!(slot.k, a.slot);
        slot.aggregates = slot.aggregates.saturating_add(1);
        slot.packets = slot.packets.saturating_add(a.packets);
        if let Some(r) = a.rate {
            slot.rate_sum += r.bps() as u128;
            slot.rate_frames = slot.rate_frames.saturating_add(1);
        }
        if a.mcs.is_some() {
            slot.mcs = a.mcs;
        }
        self.stats.aggregates += 1;
        if a.packets >= self.params.max_aggregate {
            self.stats.capped += 1;
        }
    }

    fn emit(&mut self, s: Slot) {
        self.reported_packets += s.packets as u64;
        self.stats.reports += 1;
        self.out.push_back(s.report());
    }

    /// Close what `now` completes: the open frame once its gap has run out, ended slots once
    /// their last frame is closed.
    fn advance(&mut self, now: Instant) {
        loop {
            if let Some(a) = self.open {
                if now.saturating_since(a.last) >= self.params.gap_threshold {
                    self.close_open();
                }
            }
            if let Some(p) = self.pending {
                if self.open.is_some_and(|a| a.slot == p.k) {
                    return; // wait for the straddling frame
                }
                self.pending = None;
                self.emit(p);
            }
            if now < self.slot_end(self.current.k) {
                return;
            }
            let done = self.current;
            let mut next = done.k + 1;
            // An idle stretch: slots done.k+1 .. now's slot - 1 are empty; keep only the last.
            if now >= self.slot_end(next) {
                let now_slot =
                    now.saturating_since(self.origin).as_nanos() / self.params.interval.as_nanos();
                self.stats.skipped_slots += now_slot - 1 - next;
                next = now_slot - 1;
            }
            self.current = Slot::new(next);
            self.pending = Some(done);
        }
    }

    /// Take the next report, oldest first.
    pub fn poll_report(&mut self) -> Option<AggReport> {
        self.out.pop_front()
    }

    /// Check internal consistency: packets are conserved, slot sums are sane, the open frame
    /// is within its cap and belongs to a live slot.
    pub fn invariants(&self) -> Result<(), &'static str> {
        let open = self.open.map_or(0, |a| a.packets as u64);
        let pending = self.pending.map_or(0, |p| p.packets as u64);
        if self.stats.packets
            != self.reported_packets + pending + self.current.packets as u64 + open
        {
            return Err("packets not conserved: in != reported + pending + current + open");
        }
        for s in self.pending.iter().chain(core::iter::once(&self.current)) {
            if s.packets < s.aggregates || s.rate_frames > s.aggregates {
                return Err("slot sums inconsistent");
            }
        }
        if let Some(a) = self.open {
            if a.packets == 0 || a.packets > self.params.max_aggregate {
                return Err("open frame size outside 1 ..= max_aggregate");
            }
            let live = a.slot == self.current.k || self.pending.is_some_and(|p| p.k == a.slot);
            if !live {
                return Err("open frame belongs to no live slot");
            }
        }
        if let Some(p) = self.pending {
            if p.k >= self.current.k {
                return Err("pending slot not before the current one");
            }
        }
        Ok(())
    }
}

impl Controller for AggregationEstimator {
    type Input = RxPacket;
    type Output = AggReport;

    /// One received packet; `now` is its receive timestamp.
    fn handle_input(&mut self, now: Instant, pkt: RxPacket) {
        let now = match self.last_rx {
            Some(t) if now < t => {
                self.stats.reordered += 1;
                t
            }
            _ => now,
        };
        self.last_rx = Some(now);
        self.stats.packets += 1;
        let pkt = RxPacket {
            rate: pkt.rate.filter(|r| r.bps() > 0),
            ..pkt
        };
        self.advance(now);
        if let Some(a) = self.open {
            if self.joins(&a, now, &pkt) {
                let a = self.open.as_mut().expect("open frame");
                a.packets += 1;
                a.last = now;
                a.rate = a.rate.or(pkt.rate);
                a.mcs = a.mcs.or(pkt.mcs);
                return;
            }
            self.close_open();
            self.advance(now);
        }
        self.open = Some(Open {
            slot: self.current.k,
            last: now,
            packets: 1,
            ampdu_ref: pkt.ampdu_ref,
            rate: pkt.rate,
            mcs: pkt.mcs,
        });
        debug_assert!(self.invariants().is_ok(), "{:?}", self.invariants());
    }

    fn poll_output(&mut self) -> Option<AggReport> {
        self.poll_report()
    }

    /// The end of the current slot, or, while an ended slot waits for its last frame, the
    /// instant that frame's gap runs out.
    fn poll_timeout(&self) -> Option<Instant> {
        match (self.pending, self.open) {
            (Some(_), Some(a)) => Some(a.last + self.params.gap_threshold),
            _ => Some(self.slot_end(self.current.k)),
        }
    }

    fn handle_timeout(&mut self, now: Instant) {
        self.advance(now);
        debug_assert!(self.invariants().is_ok(), "{:?}", self.invariants());
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use alloc::vec::Vec;

    const US: u64 = 1_000;
    const MS: u64 = 1_000_000;

    fn est() -> AggregationEstimator {
        AggregationEstimator::new(EstimatorConfig::default(), Instant::ZERO).unwrap()
    }

    fn t(ns: u64) -> Instant {
        Instant(ns)
    }

    /// `n` packets starting at `start`, `spacing` apart.
    fn burst(e: &mut AggregationEstimator, start: u64, n: u32, spacing: u64) {
        for j in 0..n as u64 {
            e.handle_input(t(start + j * spacing), RxPacket::default());
        }
    }

    fn drain(e: &mut AggregationEstimator) -> Vec<AggReport> {
        core::iter::from_fn(|| e.poll_output()).collect()
    }

    #[test]
    fn three_bursts_mean_19() {
        let mut e = est();
        burst(&mut e, 10 * MS, 32, 0);
        burst(&mut e, 20 * MS, 20, 0);
        burst(&mut e, 30 * MS, 5, 0);
        assert_eq!(e.poll_timeout(), Some(t(500 * MS)));
        e.handle_timeout(t(499 * MS)); // early: nothing
        assert!(e.poll_output().is_none());
        e.handle_timeout(t(500 * MS));
        let r = drain(&mut e);
        assert_eq!(r.len(), 1);
        assert_eq!((r[0].seq, r[0].aggregates, r[0].packets), (0, 3, 57));
        assert_eq!(r[0].mean_mpdus(), Some(19.0));
        assert_eq!(r[0].mean_rate, None);
        e.invariants().unwrap();
    }

    #[test]
    fn jitter_below_threshold_still_clusters() {
        let mut e = est();
        // 64 packets, each 0..3 µs after the previous (software timestamp spread).
        let mut now = 5 * MS;
        for j in 0..64u64 {
            now += (j * 7 % 4) * US;
            e.handle_input(t(now), RxPacket::default());
        }
        // next frame 120 µs later (the shortest PPDU spacing), 10 packets with 1 µs jitter
        now += 120 * US;
        for j in 0..10u64 {
            e.handle_input(t(now + j * US + (j % 3) * 300), RxPacket::default());
        }
        // a timestamp going backwards by a few ns stays in the frame
        e.handle_input(t(now + 4_000), RxPacket::default());
        e.handle_timeout(t(500 * MS));
        let r = drain(&mut e);
        assert_eq!((r[0].aggregates, r[0].packets), (2, 75));
        assert_eq!(e.stats().reordered, 1);
    }

    #[test]
    fn single_packet_frames() {
        let mut e = est();
        // paced, non-aggregated: one packet every 1 ms
        burst(&mut e, 0, 100, MS);
        e.handle_timeout(t(500 * MS));
        let r = drain(&mut e);
        assert_eq!((r[0].aggregates, r[0].packets), (100, 100));
        assert_eq!(r[0].mean_mpdus(), Some(1.0));
    }

    #[test]
    fn gap_equal_to_threshold_starts_a_new_frame() {
        let mut e = est();
        let g = EstimatorConfig::default().gap_threshold.as_nanos();
        burst(&mut e, MS, 2, g - 1); // joined: gap below threshold
        burst(&mut e, 2 * MS, 2, g); // split: gap equal to threshold
        e.handle_timeout(t(500 * MS));
        let r = drain(&mut e);
        assert_eq!((r[0].aggregates, r[0].packets), (3, 4));
    }

    #[test]
    fn frame_straddling_a_boundary_counts_in_its_first_slot() {
        let mut e = est();
        burst(&mut e, 100 * MS, 10, 0);
        // 20 packets starting 20 µs before the boundary, 2 µs apart: 18 of them after it.
        burst(&mut e, 500 * MS - 20 * US, 20, 2 * US);
        let last = 500 * MS - 20 * US + 19 * 2 * US;
        // the boundary passed, but the frame is still open: no report yet
        e.handle_timeout(t(500 * MS + 30 * US));
        assert!(e.poll_output().is_none());
        assert_eq!(e.poll_timeout(), Some(t(last + 50 * US)));
        e.handle_timeout(t(last + 50 * US));
        let r = drain(&mut e);
        assert_eq!(r.len(), 1);
        assert_eq!((r[0].seq, r[0].aggregates, r[0].packets), (0, 2, 30));
        // a frame starting just after the boundary is in slot 1
        burst(&mut e, 500 * MS + 200 * US, 7, 0);
        e.handle_timeout(t(1000 * MS));
        let r = drain(&mut e);
        assert_eq!((r[0].seq, r[0].aggregates, r[0].packets), (1, 1, 7));
        e.invariants().unwrap();
    }

    #[test]
    fn report_without_timer_calls_comes_with_the_next_packet() {
        let mut e = est();
        burst(&mut e, MS, 4, 0);
        burst(&mut e, 600 * MS, 3, 0);
        let r = drain(&mut e);
        assert_eq!(r.len(), 1);
        assert_eq!((r[0].seq, r[0].packets), (0, 4));
    }

    #[test]
    fn idle_slots_and_empty_reports() {
        let mut e = est();
        e.handle_timeout(t(500 * MS));
        let r = drain(&mut e);
        assert_eq!((r[0].seq, r[0].aggregates, r[0].packets), (0, 0, 0));
        assert_eq!(r[0].mean_mpdus(), None);
        // a packet after 10 s of silence: slots 1..=18 were empty, only 18 is reported
        burst(&mut e, 10_000 * MS + MS, 2, 0);
        let r = drain(&mut e);
        assert_eq!(r.len(), 2, "{r:?}");
        assert_eq!((r[0].seq, r[0].packets), (1, 0));
        assert_eq!((r[1].seq, r[1].packets), (19, 0));
        assert_eq!(e.stats().skipped_slots, 17);
        e.handle_timeout(t(10_500 * MS));
        let r = drain(&mut e);
        assert_eq!((r[0].seq, r[0].packets), (20, 2));
        e.invariants().unwrap();
    }

    #[test]
    fn ampdu_reference_groups_exactly() {
        let mut e = est();
        let p = |r: u32| RxPacket {
            ampdu_ref: Some(r),
            rate: Some(BitRate(400_000_000)),
            mcs: Some(9),
        };
        // two A-MPDUs back to back with identical timestamps: the reference splits them
        for _ in 0..8 {
            e.handle_input(t(MS), p(1));
        }
        for _ in 0..4 {
            e.handle_input(t(MS), p(2));
        }
        // a third at a lower rate and MCS
        for _ in 0..6 {
            e.handle_input(
                t(2 * MS),
                RxPacket {
                    ampdu_ref: Some(3),
                    rate: Some(BitRate(200_000_000)),
                    mcs: Some(4),
                },
            );
        }
        e.handle_timeout(t(500 * MS));
        let r = drain(&mut e);
        assert_eq!((r[0].aggregates, r[0].packets), (3, 18));
        assert_eq!(r[0].mean_mpdus(), Some(6.0));
        assert_eq!(r[0].mean_rate, Some(BitRate(333_333_333)));
        assert_eq!(r[0].mcs, Some(4));
    }

    #[test]
    fn frames_are_capped() {
        let cfg = EstimatorConfig {
            max_aggregate: 64,
            ..EstimatorConfig::default()
        };
        let mut e = AggregationEstimator::new(cfg, Instant::ZERO).unwrap();
        burst(&mut e, MS, 100, 0);
        e.handle_timeout(t(500 * MS));
        let r = drain(&mut e);
        assert_eq!((r[0].aggregates, r[0].packets), (2, 100));
        assert_eq!(e.stats().capped, 1);
    }

    #[test]
    fn validation_names_the_field() {
        let bad = |c: EstimatorConfig| c.validate().unwrap_err().field;
        let d = EstimatorConfig::default();
        assert!(d.validate().is_ok());
        assert_eq!(
            bad(EstimatorConfig {
                interval: Duration::ZERO,
                ..d
            }),
            "interval"
        );
        assert_eq!(
            bad(EstimatorConfig {
                gap_threshold: Duration::ZERO,
                ..d
            }),
            "gap_threshold"
        );
        assert_eq!(
            bad(EstimatorConfig {
                max_aggregate: 0,
                ..d
            }),
            "max_aggregate"
        );
        let e = EstimatorConfig {
            interval: Duration::from_millis(10),
            gap_threshold: Duration::from_micros(100),
            ..d
        }
        .validate()
        .unwrap_err();
        assert_eq!(e.field, "gap_threshold");
        assert!(alloc::format!("{e}").contains("below interval / max_aggregate"));
    }

    /// Random packet sequences keep packets conserved and every report consistent.
    #[test]
    fn random_sequences_conserve_packets() {
        let mut rng = lasthop_core::Rng::from_seed(7);
        for _case in 0..20 {
            let mut e = est();
            let mut now = 0u64;
            let mut total = 0u64;
            for _ in 0..3000 {
                now += match rng.gen_range_inclusive(3) {
                    0 => 0,
                    1 => rng.gen_range_inclusive(60 * US),
                    2 => rng.gen_range_inclusive(5 * MS),
                    _ => rng.gen_range_inclusive(700 * MS),
                };
                if rng.gen_range_inclusive(9) == 0 {
                    e.handle_timeout(t(now));
                } else {
                    e.handle_input(
                        t(now),
                        RxPacket {
                            ampdu_ref: None,
                            rate: None,
                            mcs: None,
                        },
                    );
                    total += 1;
                }
                e.invariants().unwrap();
            }
            e.handle_timeout(t(now + 10_000 * MS));
            let reported: u64 = drain(&mut e).iter().map(|r| r.packets as u64).sum();
            assert_eq!(reported, total);
        }
    }
}
