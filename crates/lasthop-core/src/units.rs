//! Unit newtypes. Bytes are counts of octets; bit rates are bits per second (integer).
//! Conversions to airtime are integer arithmetic rounded up, so a frame never takes less time
//! than the standard says.

use crate::time::Duration;
use core::ops::{Add, AddAssign, Sub};

/// A count of octets.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default, Debug)]
pub struct Bytes(pub u64);

/// A bit rate in bits per second.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default, Debug)]
pub struct BitRate(pub u64);

impl Bytes {
    #[inline]
    pub const fn bits(self) -> u64 {
        self.0 * 8
    }
}
impl Add for Bytes {
    type Output = Bytes;
    #[inline]
    fn add(self, o: Bytes) -> Bytes {
        Bytes(self.0 + o.0)
    }
}
impl AddAssign for Bytes {
    #[inline]
    fn add_assign(&mut self, o: Bytes) {
        self.0 += o.0;
    }
}
impl Sub for Bytes {
    type Output = Bytes;
    #[inline]
    fn sub(self, o: Bytes) -> Bytes {
        Bytes(self.0.saturating_sub(o.0))
    }
}

/// ⌊a·b / d⌋, exact: in 64 bits where the product fits (the common case, without a call to the
/// 128-bit division of `compiler-builtins`), else in 128. The quotient is the same either way.
/// `d` must not be zero.
#[inline]
pub fn mul_div(a: u64, b: u64, d: u64) -> u128 {
    match a.checked_mul(b) {
        Some(n) => (n / d) as u128,
        None => a as u128 * b as u128 / d as u128,
    }
}

impl BitRate {
    #[inline]
    pub const fn from_mbps(m: u64) -> Self {
        BitRate(m * 1_000_000)
    }
    #[inline]
    pub const fn bps(self) -> u64 {
        self.0
    }
    /// Time to serialise `bytes` at this rate, rounded up to the next nanosecond.
    /// A zero rate means "infinitely fast" (zero time).
    #[inline]
    pub fn tx_time(self, bytes: Bytes) -> Duration {
        if self.0 == 0 {
            return Duration::ZERO;
        }
        // The u64 division where the product fits (every packet, below ~2.3 GB); the same
        // quotient, without the 128-bit division's call.
        if let Some(num) = bytes.0.checked_mul(8_000_000_000) {
            return Duration(num.div_ceil(self.0));
        }
        let num = (bytes.0 as u128) * 8 * 1_000_000_000;
        let d = self.0 as u128;
        Duration(num.div_ceil(d) as u64)
    }
    /// Bytes that fit in `d` at this rate (rounded down).
    #[inline]
    pub fn bytes_in(self, d: Duration) -> Bytes {
        Bytes(((self.0 as u128 * d.0 as u128) / 8_000_000_000) as u64)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    #[test]
    fn tx_time_rounds_up() {
        assert_eq!(BitRate::from_mbps(1000).tx_time(Bytes(1500)), Duration(12_000));
        assert_eq!(BitRate(3).tx_time(Bytes(1)), Duration(2_666_666_667));
        assert_eq!(BitRate(0).tx_time(Bytes(1)), Duration::ZERO);
        assert_eq!(BitRate::from_mbps(8).bytes_in(Duration::from_secs(1)), Bytes(1_000_000));
    }

    #[test]
    fn mul_div_is_the_exact_floor_on_both_sides_of_the_u64_path() {
        let edge = u64::MAX / 1_000_000_000;
        for d in [1, 3, 7, 999_999_999, 4_294_967_296, u64::MAX] {
            for a in [0, 1, 1448, edge - 1, edge, edge + 1, 1 << 40, u64::MAX] {
                for b in [1, 1_000_000_000, 2_000_000_000, u64::MAX] {
                    let exact = a as u128 * b as u128 / d as u128;
                    assert_eq!(mul_div(a, b, d), exact, "{a}·{b}/{d}");
                }
            }
        }
    }

    #[test]
    fn tx_time_is_the_exact_ceiling_on_both_sides_of_the_u64_path() {
        let exact = |r: u64, b: u64| ((b as u128 * 8_000_000_000).div_ceil(r as u128)) as u64;
        let edge = u64::MAX / 8_000_000_000;
        for r in [1, 3, 7, 999_999_999, 6_500_000, 866_700_000, 10_000_000_000, u64::MAX] {
            for b in [0, 1, 40, 1499, 1500, 65_535, edge - 1, edge, edge + 1, 1 << 40] {
                assert_eq!(BitRate(r).tx_time(Bytes(b)).0, exact(r, b), "rate {r}, bytes {b}");
            }
        }
    }
}
