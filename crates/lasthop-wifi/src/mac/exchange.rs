//! The timing rules of one frame exchange (a PPDU and its immediate response, after an RTS/CTS
//! when the sender protects it) that decide how long the medium stays busy and from when each
//! party counts again (IEEE 802.11-2020 §10.3.2.3.7, §10.3.2.9, §10.23.2.4). Pure functions of
//! instants: the caller owns the clock.

use super::frame;
use crate::phy::{self, Band};
use lasthop_core::{Duration, Instant};

/// When a sender precedes its data PPDU with an RTS/CTS exchange (IEEE 802.11-2020 §10.3.2.9).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum RtsPolicy {
    /// Never (Linux's default: `dot11RTSThreshold` off, `wiphy->rts_threshold` = −1).
    #[default]
    Off,
    /// Before every A-MPDU, as Broadcom's firmware does by default (`ampdu_rts`, set TRUE in
    /// `wlc_ampdu_attach`); a single MPDU sent outside an aggregate goes unprotected.
    Ampdu,
    /// Before every data PPDU (a `dot11RTSThreshold` of 0).
    Always,
}

impl RtsPolicy {
    /// The spec's names, in the enum's order.
    pub const NAMES: [&'static str; 3] = ["off", "ampdu", "always"];

    pub fn from_name(name: &str) -> Option<RtsPolicy> {
        Self::NAMES.iter().position(|n| *n == name).map(|i| [RtsPolicy::Off, RtsPolicy::Ampdu, RtsPolicy::Always][i])
    }

    /// Whether a data PPDU goes after an RTS/CTS; `aggregate`: it is an A-MPDU.
    #[inline]
    pub fn protects(self, aggregate: bool) -> bool {
        match self {
            RtsPolicy::Off => false,
            RtsPolicy::Ampdu => aggregate,
            RtsPolicy::Always => true,
        }
    }
}

/// The RTS/CTS exchange before a protected data PPDU (§10.3.2.9), both frames at the control
/// rate: the RTS's own time, and the time from the RTS's start to the data PPDU's (RTS, SIFS,
/// CTS, SIFS).
pub fn rts_cts(sifs: Duration, control_rate: u64, band: Band) -> (Duration, Duration) {
    let rts = phy::legacy_duration(control_rate, frame::RTS, band);
    let cts = phy::legacy_duration(control_rate, frame::CTS, band);
    (rts, rts + sifs + cts + sifs)
}

/// The end of an immediate response (Ack or Block Ack of `response_len` octets at the control
/// rate `control_rate` bit/s) to a PPDU ending at `ppdu_end`: SIFS, then the response.
pub fn response_end(ppdu_end: Instant, sifs: Duration, control_rate: u64, response_len: u32, band: Band) -> Instant {
    ppdu_end + sifs + phy::legacy_duration(control_rate, response_len, band)
}

/// Whether the stations that did not take part defer EIFS after an exchange
/// (§10.3.2.3.7: after a frame received in error): a single data PPDU that no response
/// followed (its payload failed), or — only if `eifs_after_collision` — a collision.
pub fn bystanders_defer_eifs(transmitters: usize, data: bool, response_sent: bool, eifs_after_collision: bool) -> bool {
    if transmitters == 1 {
        data && !response_sent
    } else {
        eifs_after_collision
    }
}

/// From when a transmitter whose exchange failed counts AIFS again: its Ack timeout expires at
/// `ppdu_end + ack_timeout` and it invokes backoff there; if the medium was still busy then
/// (a longer colliding PPDU ended at `busy_end`), from the end of that busy period; and if a
/// response came that it could not decode, EIFS − AIFS (`eifs_extra`) after the busy period.
pub fn failure_reference(ppdu_end: Instant, ack_timeout: Duration, busy_end: Instant, response_sent: bool, eifs_extra: Duration) -> Instant {
    let own = ppdu_end + ack_timeout;
    if response_sent {
        busy_end + eifs_extra
    } else if busy_end > own {
        busy_end
    } else {
        own
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_block_ack_follows_sifs_after_the_ppdu() {
        let end = Instant(1_000_000);
        let sifs = Duration::from_micros(16);
        // A 32-octet Block Ack at 24 Mb/s in 5 GHz: 20 µs preamble + ceil((16 + 256 + 6) / 96)
        // = 3 symbols of 4 µs.
        assert_eq!(response_end(end, sifs, 24_000_000, 32, Band::Ghz5), end + sifs + Duration::from_micros(32));
    }

    #[test]
    fn the_rts_cts_exchange_precedes_the_data_by_two_control_frames_and_two_sifs() {
        let sifs = Duration::from_micros(16);
        // RTS: 20 µs + ceil((16 + 160 + 6) / 96) = 2 symbols; CTS: ceil((16 + 112 + 6) / 96) = 2.
        let (rts, lead) = rts_cts(sifs, 24_000_000, Band::Ghz5);
        assert_eq!(rts, Duration::from_micros(28));
        assert_eq!(lead, Duration::from_micros(28 + 16 + 28 + 16));
        // 2.4 GHz adds ERP-OFDM's 6 µs signal extension to each, with a 10 µs SIFS.
        let (rts, lead) = rts_cts(Duration::from_micros(10), 24_000_000, Band::Ghz2_4);
        assert_eq!(rts, Duration::from_micros(34));
        assert_eq!(lead, Duration::from_micros(34 + 10 + 34 + 10));
    }

    #[test]
    fn the_policies_protect_what_they_name() {
        assert!(!RtsPolicy::Off.protects(true));
        assert!(RtsPolicy::Ampdu.protects(true) && !RtsPolicy::Ampdu.protects(false));
        assert!(RtsPolicy::Always.protects(false));
        for (i, n) in RtsPolicy::NAMES.iter().enumerate() {
            assert_eq!(RtsPolicy::from_name(n).map(|p| p as usize), Some(i));
        }
        assert_eq!(RtsPolicy::from_name("on"), None);
    }

    #[test]
    fn eifs_only_after_an_undecodable_frame() {
        assert!(bystanders_defer_eifs(1, true, false, false));
        assert!(!bystanders_defer_eifs(1, true, true, false));
        assert!(!bystanders_defer_eifs(1, false, false, false), "a beacon is decodable");
        assert!(!bystanders_defer_eifs(2, true, false, false));
        assert!(bystanders_defer_eifs(3, true, false, true));
    }

    #[test]
    fn a_failed_transmitter_counts_from_its_timeout_the_busy_end_or_eifs() {
        let (end, to, eifs) = (Instant(1_000), Duration::from_nanos(100), Duration::from_nanos(50));
        assert_eq!(failure_reference(end, to, end, false, eifs), Instant(1_100));
        assert_eq!(failure_reference(end, to, Instant(5_000), false, eifs), Instant(5_000));
        assert_eq!(failure_reference(end, to, Instant(1_040), true, eifs), Instant(1_090));
    }
}
