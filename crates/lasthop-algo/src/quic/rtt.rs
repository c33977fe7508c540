//! RTT estimation, RFC 9002 §5.

use lasthop_core::Duration;

/// kInitialRtt (RFC 9002 §6.2.2).
pub const INITIAL_RTT: Duration = Duration::from_millis(333);
/// kGranularity (RFC 9002 §6.1.2).
pub const GRANULARITY: Duration = Duration::from_millis(1);

/// latest_rtt, min_rtt, smoothed_rtt and rttvar (RFC 9002 §5).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RttEstimator {
    latest: Duration,
    latest_adjusted: Duration,
    min: Duration,
    smoothed: Duration,
    var: Duration,
    samples: u64,
}

impl Default for RttEstimator {
    fn default() -> Self {
        Self::new()
    }
}

impl RttEstimator {
    /// §5.3 / §6.2.2: before any sample, smoothed_rtt = kInitialRtt, rttvar = kInitialRtt/2.
    pub const fn new() -> Self {
        RttEstimator {
            latest: Duration::ZERO,
            latest_adjusted: Duration::ZERO,
            min: Duration::ZERO,
            smoothed: INITIAL_RTT,
            var: Duration::from_nanos(INITIAL_RTT.as_nanos() / 2),
            samples: 0,
        }
    }

    /// One RTT sample (§5.1: `latest` = ack time − send time of the newly acknowledged largest
    /// packet) with the peer's ACK Delay, already capped by the caller at the peer's
    /// max_ack_delay once the handshake is confirmed and set to 0 for Initial packets (§5.3).
    pub fn update(&mut self, latest: Duration, ack_delay: Duration) {
        self.latest = latest;
        if self.samples == 0 {
            // Chromium's `RttStats::UpdateRtt` sets min_rtt first, so the first sample is
            // corrected only by a zero ACK delay.
            self.latest_adjusted = latest;
            // §5.3 first sample: min_rtt = smoothed_rtt = latest_rtt, rttvar = latest_rtt/2.
            self.min = latest;
            self.smoothed = latest;
            self.var = latest / 2;
            self.samples = 1;
            return;
        }
        self.samples += 1;
        // §5.2: min_rtt ignores the ACK delay.
        self.min = self.min.min(latest);
        // §5.3: subtract the ACK delay unless that would go below min_rtt.
        let adjusted = if latest >= self.min + ack_delay { latest - ack_delay } else { latest };
        self.latest_adjusted = adjusted;
        let diff = if self.smoothed > adjusted { self.smoothed - adjusted } else { adjusted - self.smoothed };
        self.var = Duration::from_nanos((3 * self.var.as_nanos() + diff.as_nanos()) / 4);
        self.smoothed = Duration::from_nanos((7 * self.smoothed.as_nanos() + adjusted.as_nanos()) / 8);
    }

    pub fn latest(&self) -> Duration {
        self.latest
    }
    /// The latest sample less the peer's ACK delay when that leaves it at or above min_rtt
    /// (RFC 9002 §5.3's adjusted_rtt): what Chromium's `RttStats` keeps as `latest_rtt` and
    /// its `HybridSlowStart` compares with min_rtt.
    pub fn latest_adjusted(&self) -> Duration {
        self.latest_adjusted
    }
    /// min_rtt (zero before the first sample).
    pub fn min(&self) -> Duration {
        self.min
    }
    pub fn smoothed(&self) -> Duration {
        self.smoothed
    }
    pub fn var(&self) -> Duration {
        self.var
    }
    pub fn samples(&self) -> u64 {
        self.samples
    }
    pub fn has_sample(&self) -> bool {
        self.samples > 0
    }

    /// smoothed_rtt + max(4·rttvar, kGranularity) (§6.2.1, without max_ack_delay or backoff).
    pub fn pto_base(&self) -> Duration {
        self.smoothed + (self.var * 4).max(GRANULARITY)
    }

    /// §6.1.2: max(kTimeThreshold·max(smoothed_rtt, latest_rtt), kGranularity), kTimeThreshold = 9/8.
    pub fn loss_delay(&self) -> Duration {
        let r = self.smoothed.max(self.latest);
        (r + r / 8).max(GRANULARITY)
    }
}
