//! Chromium's pacing sender (`PacingSender`, `net/quic/core/congestion_control/pacing_sender.cc`
//! as Chromium carried it in the QUIC version 39 era, and "Improving Performance of QUIC in WiFi",
//! §II-B.2): after quiescence an unpaced burst of up to `initial_burst_packets` (10) packets,
//! then one packet every len / rate. The rate is the congestion controller's own (BBR) or
//! Chromium's for CUBIC (`TcpCubicSenderBase::PacingRate`, [`chromium_rate`]).
//!
//! Two schedules ([`PacerMode`]):
//! * [`PacerMode::PerPacket`] (the default): each packet at its own time, with no credit for a
//!   late send. This is the schedule the paper measured at its server (Fig. 5: QUIC's
//!   inter-packet times peak around 100 and 500 µs, 18 % of them below 100 µs).
//! * [`PacerMode::ChromiumV39`]: the code's own schedule. `TimeUntilSend` lets a packet leave
//!   when its ideal time is at most `kAlarmGranularity` (1 ms) ahead, so packets leave in lumps
//!   of about a millisecond at the pacing rate; after a send that came late (the alarm, or the
//!   window, held it past its time) `OnPacketSent` lets the sender make up the lost time
//!   (`was_last_send_delayed_`) until it is back on schedule or the application limits it.
//!   `PacingRate` is 1.25 × cwnd/srtt in recovery as outside it (PRR, Chromium's default; × 1
//!   only under the NPRR connection option), and before the first RTT sample it uses
//!   `kInitialRttMs` (100 ms, `rtt_stats.cc`) where the model otherwise sends unpaced.
//!
//! Sans-IO; the QUIC model (`conn.rs`) and the live HTTP/3 server (lasthop-live `quic serve`,
//! whose QUIC library does not pace CUBIC) both drive it.

use lasthop_core::{mul_div, Duration, Instant};

/// Chromium's `kAlarmGranularity`: a packet due within it leaves now.
pub const ALARM_GRANULARITY: Duration = Duration::from_millis(1);
/// Chromium's `kInitialRttMs`: the RTT `PacingRate` assumes before the first sample.
pub const INITIAL_RTT: Duration = Duration::from_millis(100);

/// Which schedule a [`PacingSender`] keeps (see the module's documentation).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum PacerMode {
    /// One packet per len/rate, no credit for a late send.
    #[default]
    PerPacket,
    /// Chromium's code of the QUIC v39 era: 1 ms alarm granularity and making up lost time.
    ChromiumV39,
}

/// Chromium's pacing rate for a window-based controller, bytes/s (0 without an RTT).
pub fn chromium_rate(cwnd: u64, srtt: Duration, slow_start: bool, recovery: bool) -> u64 {
    if srtt.is_zero() {
        return 0;
    }
    let base = mul_div(cwnd, 1_000_000_000, srtt.as_nanos().max(1));
    let r = if recovery {
        base
    } else if slow_start {
        base * 2
    } else {
        base * 5 / 4
    };
    r.min(u64::MAX as u128) as u64
}

impl PacerMode {
    /// The modes by name (`flows[].pacer`, `lasthop quic serve --pacer`), the default first.
    pub const NAMES: [&'static str; 2] = ["per-packet", "chromium-v39"];

    pub fn from_name(name: &str) -> Option<Self> {
        match name {
            "per-packet" => Some(PacerMode::PerPacket),
            "chromium-v39" => Some(PacerMode::ChromiumV39),
            _ => None,
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            PacerMode::PerPacket => Self::NAMES[0],
            PacerMode::ChromiumV39 => Self::NAMES[1],
        }
    }

    /// The pacing rate (bytes/s, 0: unpaced) this mode's Chromium gives a window-based
    /// controller: `srtt` None before the first RTT sample.
    pub fn rate(self, cwnd: u64, srtt: Option<Duration>, slow_start: bool, recovery: bool) -> u64 {
        match self {
            PacerMode::PerPacket => srtt.map_or(0, |s| chromium_rate(cwnd, s, slow_start, recovery)),
            // PRR in recovery (no_prr_ false): 1.25 ×, as in congestion avoidance.
            PacerMode::ChromiumV39 => chromium_rate(cwnd, srtt.unwrap_or(INITIAL_RTT), slow_start, false),
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PacingSender {
    initial_burst_packets: u32,
    mss: u64,
    burst_tokens: u32,
    /// Chromium's `ideal_next_packet_send_time_`.
    next_send_time: Instant,
    mode: PacerMode,
    /// `was_last_send_delayed_` (ChromiumV39 only).
    last_send_delayed: bool,
    /// `last_delayed_packet_sent_time_` (ChromiumV39 only).
    last_delayed_sent: Option<Instant>,
}

impl PacingSender {
    /// A pacer whose first `initial_burst_packets` packets go unpaced; a burst after
    /// quiescence is capped at cwnd / `mss` packets. Per-packet schedule.
    pub fn new(initial_burst_packets: u32, mss: u64, now: Instant) -> Self {
        PacingSender {
            initial_burst_packets,
            mss: mss.max(1),
            burst_tokens: initial_burst_packets,
            next_send_time: now,
            mode: PacerMode::PerPacket,
            last_send_delayed: false,
            last_delayed_sent: None,
        }
    }

    /// The same pacer keeping `mode`'s schedule.
    pub fn with_mode(self, mode: PacerMode) -> Self {
        PacingSender { mode, ..self }
    }

    pub fn mode(&self) -> PacerMode {
        self.mode
    }

    /// May a packet leave at `now`? (`rate` 0: unpaced.) Ask only when the congestion window
    /// lets the packet go (Chromium asks the controller first): in [`PacerMode::ChromiumV39`] a
    /// "no" marks the send as delayed (`TimeUntilSend`).
    pub fn ready(&mut self, now: Instant, bytes_in_flight: u64, rate: u64) -> bool {
        if self.burst_tokens > 0 || bytes_in_flight == 0 || rate == 0 {
            return true;
        }
        match self.mode {
            PacerMode::PerPacket => now >= self.next_send_time,
            PacerMode::ChromiumV39 => {
                if self.next_send_time > now + ALARM_GRANULARITY {
                    self.last_send_delayed = true;
                    false
                } else {
                    true
                }
            }
        }
    }

    /// When the next paced packet may leave (the alarm's time when [`PacingSender::ready`]
    /// says no).
    pub fn next_send_time(&self) -> Instant {
        self.next_send_time
    }

    /// A packet of `len` bytes left at `now`; `bytes_in_flight` before it, the controller's
    /// state and the pacing `rate` (bytes/s, as [`PacingSender::ready`] saw them).
    pub fn on_sent(&mut self, now: Instant, len: u32, bytes_in_flight: u64, recovery: bool, cwnd: u64, rate: u64) {
        if bytes_in_flight == 0 && !recovery {
            self.burst_tokens = (self.initial_burst_packets as u64).min(cwnd / self.mss) as u32;
        }
        if self.burst_tokens > 0 {
            self.burst_tokens -= 1;
            self.next_send_time = now;
            self.last_send_delayed = false;
            self.last_delayed_sent = None;
            return;
        }
        if rate == 0 {
            self.next_send_time = now;
            return;
        }
        let gap = Duration::from_nanos((len as u128 * 1_000_000_000 / rate as u128) as u64);
        if self.mode == PacerMode::ChromiumV39 && self.last_send_delayed {
            // The last send was delayed: the schedule stays where it was, and while the sender
            // is behind it (and sending without a pause longer than a gap) packets leave at once.
            self.next_send_time += gap;
            let app_limited = self.last_delayed_sent.is_some_and(|t| now > t + gap);
            if self.next_send_time <= now && !app_limited {
                self.last_delayed_sent = Some(now);
            } else {
                self.last_send_delayed = false;
                self.last_delayed_sent = None;
            }
            return;
        }
        self.next_send_time = self.next_send_time.max(now) + gap;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use alloc::vec::Vec;

    #[test]
    fn burst_then_one_packet_per_gap_without_credit() {
        let t0 = Instant::from_nanos(0);
        let mut p = PacingSender::new(10, 1200, t0);
        let rate = 1_200_000; // bytes/s: 1200-byte packets 1 ms apart
        for _ in 0..10 {
            assert!(p.ready(t0, 5000, rate));
            p.on_sent(t0, 1200, 5000, false, 100_000, rate);
        }
        // The burst is spent: the next packet may leave now, the one after 1 ms later.
        assert!(p.ready(t0, 5000, rate));
        p.on_sent(t0, 1200, 5000, false, 100_000, rate);
        assert_eq!(p.next_send_time(), Instant::from_nanos(1_000_000));
        assert!(!p.ready(t0, 5000, rate));
        // Late by 5 ms: the next gap counts from now, no burst to catch up.
        let late = Instant::from_nanos(6_000_000);
        assert!(p.ready(late, 5000, rate));
        p.on_sent(late, 1200, 5000, false, 100_000, rate);
        assert_eq!(p.next_send_time(), Instant::from_nanos(7_000_000));
        // Quiescence (nothing in flight) gives a new burst, capped by the window.
        p.on_sent(late, 1200, 0, false, 3 * 1200, rate);
        assert!(p.ready(late, 1200, rate));
    }

    /// A sender with data always ready and the window always open: it sends while the pacer
    /// lets it and otherwise waits for the pacer's time (the alarm). The instants it sent at.
    fn drive(p: &mut PacingSender, rate: u64, from: Instant, until: Instant) -> Vec<Instant> {
        let mut now = from;
        let mut sent = Vec::new();
        while now < until {
            if p.ready(now, 50_000, rate) {
                p.on_sent(now, 1200, 50_000, false, 100_000, rate);
                sent.push(now);
            } else {
                now = p.next_send_time();
            }
        }
        sent
    }

    #[test]
    fn chromium_v39_sends_millisecond_lumps_at_the_same_rate() {
        let t0 = Instant::from_nanos(0);
        let rate = 6_000_000; // bytes/s: 1200-byte packets 200 µs apart
        let end = Instant::from_nanos(100_000_000);
        let mut per = PacingSender::new(0, 1200, t0);
        let mut v39 = PacingSender::new(0, 1200, t0).with_mode(PacerMode::ChromiumV39);
        let a = drive(&mut per, rate, t0, end);
        let b = drive(&mut v39, rate, t0, end);
        // The same rate: 500 packets in 100 ms either way (the lumps run up to 1 ms ahead).
        assert_eq!(a.len(), 500);
        assert!((500..=506).contains(&b.len()), "{}", b.len());
        let instants = |v: &[Instant]| {
            let mut d = v.to_vec();
            d.dedup();
            d.len()
        };
        // One packet per instant against lumps of 1 ms / 200 µs + 1 = 6.
        assert_eq!(instants(&a), 500);
        let lumps = instants(&b);
        assert!((80..=90).contains(&lumps), "{lumps} lumps");
        assert_eq!(b.iter().filter(|&&t| t == t0).count(), 6);
    }

    #[test]
    fn chromium_v39_makes_up_time_lost_to_a_closed_window() {
        let t0 = Instant::from_nanos(0);
        let rate = 6_000_000;
        for (mode, burst) in [(PacerMode::PerPacket, 1), (PacerMode::ChromiumV39, 31)] {
            let mut p = PacingSender::new(0, 1200, t0).with_mode(mode);
            // A lump at t0, then the pacer holds the next packet (the alarm is set)...
            let first = drive(&mut p, rate, t0, Instant::from_nanos(1));
            assert!(!first.is_empty());
            // ...but the window stays closed until 6.2 ms, when an ACK opens it wide.
            let late = Instant::from_nanos(6_200_000);
            let mut n = 0;
            while p.ready(late, 50_000, rate) && n < 100 {
                p.on_sent(late, 1200, 50_000, false, 100_000, rate);
                n += 1;
            }
            // Chromium lets the sender catch up with its schedule (the 25 packets due from 1.2 to
            // 6 ms, then the one due now) and run 1 ms ahead of it (5 more); the per-packet
            // schedule starts afresh from now.
            assert_eq!(n, burst, "{mode:?}");
        }
    }

    #[test]
    fn chromium_v39_rate_before_a_sample_and_in_recovery() {
        let srtt = Some(Duration::from_millis(10));
        // kInitialRttMs before the first sample: 2 × 43.2 kB / 100 ms in slow start.
        assert_eq!(PacerMode::ChromiumV39.rate(43_200, None, true, false), 864_000);
        assert_eq!(PacerMode::PerPacket.rate(43_200, None, true, false), 0);
        // PRR in recovery: 1.25 × cwnd/srtt, where the per-packet model paces at 1 ×.
        assert_eq!(PacerMode::ChromiumV39.rate(100_000, srtt, false, true), 12_500_000);
        assert_eq!(PacerMode::PerPacket.rate(100_000, srtt, false, true), 10_000_000);
    }

    #[test]
    fn modes_by_name() {
        for n in PacerMode::NAMES {
            assert_eq!(PacerMode::from_name(n).map(PacerMode::as_str), Some(n));
        }
        assert_eq!(PacerMode::from_name(PacerMode::NAMES[0]), Some(PacerMode::default()));
        assert_eq!(PacerMode::from_name("lumpy"), None);
    }

    #[test]
    fn chromium_rates() {
        let srtt = Duration::from_millis(10);
        assert_eq!(chromium_rate(100_000, srtt, true, false), 20_000_000);
        assert_eq!(chromium_rate(100_000, srtt, false, false), 12_500_000);
        assert_eq!(chromium_rate(100_000, srtt, false, true), 10_000_000);
        assert_eq!(chromium_rate(100_000, Duration::ZERO, true, false), 0);
    }
}
