//! Chromium's pacing sender (`quic/core/congestion_control/pacing_sender.cc` as described in
//! "Improving Performance of QUIC in WiFi", §II-B.2, and the design of Chromium's
//! `PacingSender`): after quiescence an unpaced burst of up to `initial_burst_packets`
//! (10) packets, then one packet every len / rate, with no credit for a late send. The rate
//! is the congestion controller's own (BBR) or Chromium's for CUBIC: cwnd / srtt × 2 in slow
//! start, × 1 in recovery, × 1.25 otherwise ([`chromium_rate`]).
//!
//! Sans-IO; the QUIC model (`conn.rs`) and the live HTTP/3 server (lasthop-live `quic serve`,
//! whose QUIC library does not pace CUBIC) both drive it.

use lasthop_core::{Duration, Instant};

/// Chromium's pacing rate for a window-based controller, bytes/s (0 without an RTT).
pub fn chromium_rate(cwnd: u64, srtt: Duration, slow_start: bool, recovery: bool) -> u64 {
    if srtt.is_zero() {
        return 0;
    }
    let base = cwnd as u128 * 1_000_000_000 / srtt.as_nanos().max(1) as u128;
    let r = if recovery {
        base
    } else if slow_start {
        base * 2
    } else {
        base * 5 / 4
    };
    r.min(u64::MAX as u128) as u64
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PacingSender {
    initial_burst_packets: u32,
    mss: u64,
    burst_tokens: u32,
    next_send_time: Instant,
}

impl PacingSender {
    /// A pacer whose first `initial_burst_packets` packets go unpaced; a burst after
    /// quiescence is capped at cwnd / `mss` packets.
    pub fn new(initial_burst_packets: u32, mss: u64, now: Instant) -> Self {
        PacingSender { initial_burst_packets, mss: mss.max(1), burst_tokens: initial_burst_packets, next_send_time: now }
    }

    /// May a packet leave at `now`? (`rate` 0: unpaced.)
    pub fn ready(&self, now: Instant, bytes_in_flight: u64, rate: u64) -> bool {
        self.burst_tokens > 0 || bytes_in_flight == 0 || rate == 0 || now >= self.next_send_time
    }

    /// When the next paced packet may leave.
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
            return;
        }
        if rate == 0 {
            self.next_send_time = now;
            return;
        }
        let gap = Duration::from_nanos((len as u128 * 1_000_000_000 / rate as u128) as u64);
        self.next_send_time = self.next_send_time.max(now) + gap;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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

    #[test]
    fn chromium_rates() {
        let srtt = Duration::from_millis(10);
        assert_eq!(chromium_rate(100_000, srtt, true, false), 20_000_000);
        assert_eq!(chromium_rate(100_000, srtt, false, false), 12_500_000);
        assert_eq!(chromium_rate(100_000, srtt, false, true), 10_000_000);
        assert_eq!(chromium_rate(100_000, Duration::ZERO, true, false), 0);
    }
}
