//! The aggregation report a receiver sends to the sender once per slot of Δ seconds.
//!
//! The paper (§III.A, §IV.B) has station i report the slot average
//! μ_{N_i}(k) = (1/|T_{i,k}|) Σ_{f∈T_{i,k}} N_{i,f} "as the payload of a UDP packet", and the MCS
//! rate μ_{R_i} it observes (§III.B, Fig. 5); it does not give a packet format. Ours carries
//! the two sums the mean is made of — the number of aggregates |T_{i,k}| and the number of
//! packets Σ N_{i,f} — so the wire stays integer and the mean is exact, plus the mean PHY rate
//! and the last MCS index when the receiver can see them.
//!
//! Layout, [`REPORT_LEN`] = 28 bytes, integers little-endian:
//!
//! | offset | size | field |
//! |---|---|---|
//! | 0 | 2 | magic `"AG"` |
//! | 2 | 1 | version, [`REPORT_VERSION`] |
//! | 3 | 1 | flags: bit 0 = mean rate present, bit 1 = MCS present; other bits zero |
//! | 4 | 4 | `seq`: slot index k (wraps) |
//! | 8 | 4 | `aggregates`: \|T_{i,k}\| |
//! | 12 | 4 | `packets`: Σ N_{i,f} |
//! | 16 | 8 | `mean_rate`: μ_{R_i}(k) in bit/s, 0 when absent |
//! | 24 | 1 | `mcs`: MCS index of the last frame with a known MCS, 0 when absent |
//! | 25 | 3 | reserved, zero |

use core::fmt;
use lasthop_core::BitRate;

/// First two bytes of every report.
pub const REPORT_MAGIC: [u8; 2] = *b"AG";
/// Layout version written by [`AggReport::encode`]; the only one [`AggReport::decode`] accepts.
pub const REPORT_VERSION: u8 = 1;
/// Encoded length in bytes.
pub const REPORT_LEN: usize = 28;

const FLAG_RATE: u8 = 0x01;
const FLAG_MCS: u8 = 0x02;

/// One slot's aggregation measurement at a receiver (§III.A).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct AggReport {
    /// Slot index k since the estimator started (wraps at 2^32).
    pub seq: u32,
    /// Frames (A-MPDUs, or single MPDUs) received in the slot: |T_{i,k}|.
    pub aggregates: u32,
    /// Packets in those frames: Σ_{f∈T_{i,k}} N_{i,f}. Never below `aggregates`.
    pub packets: u32,
    /// Mean PHY rate over the frames whose rate was known: μ_{R_i}(k) (§III.B).
    pub mean_rate: Option<BitRate>,
    /// MCS index of the last frame in the slot whose MCS was known (informational).
    pub mcs: Option<u8>,
}

/// Why a byte buffer is not a valid report.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DecodeError {
    /// Fewer than [`REPORT_LEN`] bytes.
    Short { len: usize },
    /// More than [`REPORT_LEN`] bytes (version 1 has no extensions).
    Trailing { len: usize },
    /// The first two bytes are not [`REPORT_MAGIC`].
    BadMagic,
    /// A version other than [`REPORT_VERSION`].
    Version(u8),
    /// Unknown flag bits or non-zero reserved bytes.
    Reserved,
    /// Fields that cannot come from one slot: fewer packets than aggregates, rate or MCS
    /// without a frame, a zero rate flagged present, or a value present without its flag.
    Inconsistent(&'static str),
}

impl fmt::Display for DecodeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            DecodeError::Short { len } => {
                write!(f, "report too short: {len} bytes, need {REPORT_LEN}")
            }
            DecodeError::Trailing { len } => {
                write!(f, "report too long: {len} bytes, expected {REPORT_LEN}")
            }
            DecodeError::BadMagic => write!(f, "not an aggregation report (bad magic)"),
            DecodeError::Version(v) => write!(
                f,
                "unsupported report version {v}, expected {REPORT_VERSION}"
            ),
            DecodeError::Reserved => write!(f, "unknown flags or non-zero reserved bytes"),
            DecodeError::Inconsistent(why) => write!(f, "inconsistent report: {why}"),
        }
    }
}

impl AggReport {
    /// μ_{N_i}(k), the mean number of packets per frame in the slot (§III.A); `None` for a slot
    /// in which nothing was received (the mean is undefined).
    pub fn mean_mpdus(&self) -> Option<f64> {
        if self.aggregates == 0 {
            None
        } else {
            Some(self.packets as f64 / self.aggregates as f64)
        }
    }

    /// Serialise to the fixed layout in the module doc. A `mean_rate` of zero is written as
    /// absent.
    pub fn encode(&self) -> [u8; REPORT_LEN] {
        let mut b = [0u8; REPORT_LEN];
        b[0..2].copy_from_slice(&REPORT_MAGIC);
        b[2] = REPORT_VERSION;
        let rate = self.mean_rate.map_or(0, |r| r.bps());
        let mut flags = 0;
        if rate != 0 {
            flags |= FLAG_RATE;
        }
        if self.mcs.is_some() {
            flags |= FLAG_MCS;
        }
        b[3] = flags;
        b[4..8].copy_from_slice(&self.seq.to_le_bytes());
        b[8..12].copy_from_slice(&self.aggregates.to_le_bytes());
        b[12..16].copy_from_slice(&self.packets.to_le_bytes());
        b[16..24].copy_from_slice(&rate.to_le_bytes());
        b[24] = self.mcs.unwrap_or(0);
        b
    }

    /// Parse a report, rejecting anything that is not exactly one well-formed version-1
    /// report (see [`DecodeError`]).
    pub fn decode(b: &[u8]) -> Result<AggReport, DecodeError> {
        if b.len() < REPORT_LEN {
            return Err(DecodeError::Short { len: b.len() });
        }
        if b.len() > REPORT_LEN {
            return Err(DecodeError::Trailing { len: b.len() });
        }
        if b[0..2] != REPORT_MAGIC {
            return Err(DecodeError::BadMagic);
        }
        if b[2] != REPORT_VERSION {
            return Err(DecodeError::Version(b[2]));
        }
        let flags = b[3];
        if flags & !(FLAG_RATE | FLAG_MCS) != 0 || b[25..28] != [0, 0, 0] {
            return Err(DecodeError::Reserved);
        }
        let u32_at = |o: usize| u32::from_le_bytes([b[o], b[o + 1], b[o + 2], b[o + 3]]);
        let seq = u32_at(4);
        let aggregates = u32_at(8);
        let packets = u32_at(12);
        let mut rate = [0u8; 8];
        rate.copy_from_slice(&b[16..24]);
        let rate = u64::from_le_bytes(rate);
        let mcs = b[24];
        if packets < aggregates {
            return Err(DecodeError::Inconsistent("fewer packets than aggregates"));
        }
        if aggregates == 0 && (packets != 0 || flags != 0) {
            return Err(DecodeError::Inconsistent(
                "packets, rate or MCS in an empty slot",
            ));
        }
        if (flags & FLAG_RATE != 0) != (rate != 0) {
            return Err(DecodeError::Inconsistent(
                "rate flag does not match the rate field",
            ));
        }
        if flags & FLAG_MCS == 0 && mcs != 0 {
            return Err(DecodeError::Inconsistent("MCS byte set without its flag"));
        }
        Ok(AggReport {
            seq,
            aggregates,
            packets,
            mean_rate: (rate != 0).then_some(BitRate(rate)),
            mcs: (flags & FLAG_MCS != 0).then_some(mcs),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> AggReport {
        AggReport {
            seq: 0x0102_0304,
            aggregates: 3,
            packets: 57,
            mean_rate: Some(BitRate(866_666_666)),
            mcs: Some(9),
        }
    }

    #[test]
    fn round_trip_and_layout() {
        let r = sample();
        let b = r.encode();
        assert_eq!(&b[0..4], &[b'A', b'G', 1, 0x03]);
        assert_eq!(&b[4..8], &[0x04, 0x03, 0x02, 0x01], "seq little-endian");
        assert_eq!(u32::from_le_bytes([b[12], b[13], b[14], b[15]]), 57);
        assert_eq!(b[24], 9);
        assert_eq!(AggReport::decode(&b), Ok(r));
        assert_eq!(AggReport::decode(&b).unwrap().mean_mpdus(), Some(19.0));

        let bare = AggReport {
            seq: 7,
            aggregates: 1,
            packets: 1,
            mean_rate: None,
            mcs: None,
        };
        let b = bare.encode();
        assert_eq!(b[3], 0);
        assert_eq!(AggReport::decode(&b), Ok(bare));

        let empty = AggReport {
            seq: 8,
            ..AggReport::default()
        };
        assert_eq!(AggReport::decode(&empty.encode()), Ok(empty));
        assert_eq!(empty.mean_mpdus(), None);
    }

    #[test]
    fn zero_rate_is_written_as_absent() {
        let r = AggReport {
            mean_rate: Some(BitRate(0)),
            ..sample()
        };
        assert_eq!(AggReport::decode(&r.encode()).unwrap().mean_rate, None);
    }

    #[test]
    fn rejects_short_long_and_garbled() {
        let b = sample().encode();
        for len in 0..REPORT_LEN {
            assert_eq!(
                AggReport::decode(&b[..len]),
                Err(DecodeError::Short { len })
            );
        }
        let mut long = [0u8; REPORT_LEN + 1];
        long[..REPORT_LEN].copy_from_slice(&b);
        assert_eq!(
            AggReport::decode(&long),
            Err(DecodeError::Trailing {
                len: REPORT_LEN + 1
            })
        );

        let with = |i: usize, v: u8| {
            let mut x = b;
            x[i] = v;
            AggReport::decode(&x)
        };
        assert_eq!(with(0, b'X'), Err(DecodeError::BadMagic));
        assert_eq!(with(2, 2), Err(DecodeError::Version(2)));
        assert_eq!(with(3, 0x83), Err(DecodeError::Reserved));
        assert_eq!(with(27, 1), Err(DecodeError::Reserved));
        // packets (57) below aggregates (0xff..)
        assert!(matches!(with(11, 0xff), Err(DecodeError::Inconsistent(_))));
        // rate flag cleared but the rate field still set
        assert!(matches!(
            with(3, FLAG_MCS),
            Err(DecodeError::Inconsistent(_))
        ));
        // MCS byte without its flag
        assert!(matches!(
            with(3, FLAG_RATE),
            Err(DecodeError::Inconsistent(_))
        ));
        // an empty slot may not carry a rate
        let mut x = AggReport {
            seq: 1,
            ..AggReport::default()
        }
        .encode();
        x[3] = FLAG_RATE;
        x[16] = 1;
        assert!(matches!(
            AggReport::decode(&x),
            Err(DecodeError::Inconsistent(_))
        ));
    }
}
