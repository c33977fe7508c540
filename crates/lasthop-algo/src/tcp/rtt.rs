//! The smoothed RTT and the retransmission timeout as Linux computes them
//! (net/ipv4/tcp_input.c: `tcp_rtt_estimator`, `tcp_set_rto`, `__tcp_set_rto`).
//!
//! SRTT follows RFC 6298 (2.3) (gain ⅛). The deviation differs from RFC 6298's RTTVAR in three
//! ways that matter behind a deep queue:
//! * `mdev` (gain ¼) grows with an RTT sample above SRTT as in the RFC, but a sample *below*
//!   SRTT counts with an eighth of its weight (`m >>= 3`, Eifel's observation that a falling
//!   RTT must not inflate the RTO);
//! * `rttvar`, the term added to SRTT, is the largest `mdev` seen in the current window of
//!   data (`mdev_max`, reset to `rto_min` once `snd_una` passes the `snd_nxt` of the previous
//!   reset), and decays towards it by a quarter per window;
//! * RTO = SRTT + `rttvar`, so it is at least SRTT + `rto_min` (200 ms), where RFC 6298 (2.4)
//!   gives max(SRTT + 4·RTTVAR, RTO_min). A sender whose RTT is a deep queue's 230 ms waits
//!   ~430 ms, not ~250 ms, before an RTO: a fast retransmission queued behind the same
//!   backlog is acknowledged first.
//!
//! Linux keeps SRTT ×8 and `mdev` ×4 in microseconds; here the same scaled integers are
//! nanoseconds.

use lasthop_core::Duration;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RttEstimator {
    /// 8 × SRTT (ns); 0 before the first sample (`srtt_us`).
    srtt8: u64,
    /// 4 × the mean deviation (ns) (`mdev_us`).
    mdev4: u64,
    /// The largest `mdev4` of the current window of data (`mdev_max_us`).
    mdev_max: u64,
    /// What RTO adds to SRTT (`rttvar_us`).
    rttvar: u64,
    /// `snd_nxt` when the window of `mdev_max` began (`rtt_seq`).
    rtt_seq: u64,
    rto_min: u64,
}

impl RttEstimator {
    pub fn new(rto_min: Duration) -> Self {
        RttEstimator { srtt8: 0, mdev4: 0, mdev_max: 0, rttvar: 0, rtt_seq: 0, rto_min: rto_min.as_nanos() }
    }

    /// An RTT sample `m`, taken on an ACK that moved `snd_una` to `snd_una` (data sent up to
    /// `snd_nxt`).
    pub fn on_sample(&mut self, m: Duration, snd_una: u64, snd_nxt: u64) {
        let m = m.as_nanos().max(1) as i64;
        if self.srtt8 == 0 {
            // No previous measure: RTO = 3·RTT (at least RTT + rto_min).
            self.srtt8 = (m as u64) << 3;
            self.mdev4 = (m as u64) << 1;
            self.rttvar = self.mdev4.max(self.rto_min);
            self.mdev_max = self.rttvar;
            self.rtt_seq = snd_nxt;
            return;
        }
        let mut err = m - (self.srtt8 >> 3) as i64;
        self.srtt8 = (self.srtt8 as i64 + err).max(1) as u64;
        let quarter = (self.mdev4 >> 2) as i64;
        if err < 0 {
            err = -err - quarter;
            if err > 0 {
                err >>= 3;
            }
        } else {
            err -= quarter;
        }
        self.mdev4 = (self.mdev4 as i64 + err).max(0) as u64;
        if self.mdev4 > self.mdev_max {
            self.mdev_max = self.mdev4;
            if self.mdev_max > self.rttvar {
                self.rttvar = self.mdev_max;
            }
        }
        if snd_una > self.rtt_seq {
            if self.mdev_max < self.rttvar {
                self.rttvar -= (self.rttvar - self.mdev_max) >> 2;
            }
            self.rtt_seq = snd_nxt;
            self.mdev_max = self.rto_min;
        }
    }

    /// SRTT, `None` before the first sample.
    pub fn srtt(&self) -> Option<Duration> {
        (self.srtt8 != 0).then(|| Duration::from_nanos(self.srtt8 >> 3))
    }

    /// The mean deviation (`tcpi_rttvar`: `mdev_us >> 2`).
    pub fn mdev(&self) -> Duration {
        Duration::from_nanos(self.mdev4 >> 2)
    }

    /// RTO without backoff (`__tcp_set_rto`): SRTT + `rttvar`; `None` before the first sample.
    pub fn rto(&self) -> Option<Duration> {
        (self.srtt8 != 0).then(|| Duration::from_nanos((self.srtt8 >> 3) + self.rttvar))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: u64 = 1_000_000;

    #[test]
    fn first_sample_gives_three_rtts_or_rtt_plus_rto_min() {
        let mut e = RttEstimator::new(Duration::from_millis(200));
        e.on_sample(Duration::from_millis(10), 0, 100);
        assert_eq!(e.srtt(), Some(Duration::from_millis(10)));
        assert_eq!(e.rto(), Some(Duration::from_millis(210)));
        let mut e = RttEstimator::new(Duration::from_millis(200));
        e.on_sample(Duration::from_millis(300), 0, 100);
        assert_eq!(e.rto(), Some(Duration::from_millis(900)));
    }

    #[test]
    fn a_steady_rtt_keeps_rto_at_srtt_plus_rto_min() {
        // RFC 6298 would give max(SRTT + 4·RTTVAR, 200 ms) = 230 ms for a steady 230 ms RTT.
        let mut e = RttEstimator::new(Duration::from_millis(200));
        let (mut una, mut nxt) = (0, 100);
        for _ in 0..200 {
            e.on_sample(Duration::from_millis(230), una, nxt);
            una += 10;
            nxt += 10;
        }
        assert_eq!(e.srtt(), Some(Duration::from_millis(230)));
        let rto = e.rto().unwrap().as_nanos();
        // rttvar decays from its first 460 ms towards rto_min by a quarter per window of data.
        assert!((430 * MS..=433 * MS).contains(&rto), "{rto}");
    }

    #[test]
    fn a_falling_rtt_counts_an_eighth_a_rising_one_in_full() {
        let mut up = RttEstimator::new(Duration::from_millis(1));
        let mut down = up;
        up.on_sample(Duration::from_millis(100), 0, 1);
        down.on_sample(Duration::from_millis(100), 0, 1);
        // mdev4 starts at 200 ms; an error of +80 ms adds 80 − 50 = 30 ms, −80 ms adds
        // (80 − 50) / 8 = 3.75 ms.
        up.on_sample(Duration::from_millis(180), 0, 1);
        down.on_sample(Duration::from_millis(20), 0, 1);
        assert_eq!(up.mdev().as_nanos(), 230 * MS / 4);
        assert_eq!(down.mdev().as_nanos(), (200 * MS + 3_750_000) / 4);
        // And the RTO keeps the window's largest deviation.
        assert!(up.rto().unwrap() > down.rto().unwrap());
    }
}
