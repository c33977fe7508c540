//! The timing rules of one frame exchange (a PPDU and its immediate response) that decide how
//! long the medium stays busy and from when each party counts again (IEEE 802.11-2020
//! §10.3.2.3.7, §10.23.2.4). Pure functions of instants: the caller owns the clock.

use crate::phy::{self, Band};
use lasthop_core::{Duration, Instant};

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
