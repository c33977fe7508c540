//! Deterministic random streams.
//!
//! Every random entity (a station's backoff, a link's error process, a traffic source) owns its
//! own stream, derived from `(seed, entity id)` by SplitMix64 mixing, so that adding an entity
//! or reordering events never perturbs another entity's draws. The generator is xoshiro256**
//! (Blackman & Vigna, "Scrambled linear pseudorandom number generators", 2018), seeded from
//! SplitMix64 as its authors recommend.

/// SplitMix64 step (Steele, Lea, Flood 2014): used for seeding and id mixing.
#[inline]
pub const fn splitmix64(state: &mut u64) -> u64 {
    *state = state.wrapping_add(0x9E37_79B9_7F4A_7C15);
    let mut z = *state;
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// Names the kind of entity a stream belongs to, so ids of different kinds never collide.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u64)]
pub enum StreamKind {
    Backoff = 1,
    Channel = 2,
    Traffic = 3,
    Wired = 4,
    RateControl = 5,
    Other = 15,
}

/// xoshiro256** generator.
#[derive(Clone, Debug)]
pub struct Rng {
    s: [u64; 4],
}

impl Rng {
    /// A stream from a raw 64-bit seed.
    pub fn from_seed(seed: u64) -> Self {
        let mut sm = seed;
        let s = [
            splitmix64(&mut sm),
            splitmix64(&mut sm),
            splitmix64(&mut sm),
            splitmix64(&mut sm),
        ];
        Rng { s }
    }

    /// The stream of entity `(kind, id)` under experiment seed `seed`.
    pub fn stream(seed: u64, kind: StreamKind, id: u64) -> Self {
        let mut sm = seed ^ 0x6C61_7374_686F_7000; // "lasthop\0"
        let a = splitmix64(&mut sm);
        let mut sm2 = a ^ ((kind as u64) << 56) ^ id.wrapping_mul(0xD1B5_4A32_D192_ED03);
        let b = splitmix64(&mut sm2);
        Rng::from_seed(b)
    }

    #[inline]
    pub fn next_u64(&mut self) -> u64 {
        let result = self.s[1].wrapping_mul(5).rotate_left(7).wrapping_mul(9);
        let t = self.s[1] << 17;
        self.s[2] ^= self.s[0];
        self.s[3] ^= self.s[1];
        self.s[1] ^= self.s[2];
        self.s[0] ^= self.s[3];
        self.s[2] ^= t;
        self.s[3] = self.s[3].rotate_left(45);
        result
    }

    /// Uniform integer in `0..=max` without modulo bias (Lemire's method with rejection).
    #[inline]
    pub fn gen_range_inclusive(&mut self, max: u64) -> u64 {
        if max == u64::MAX {
            return self.next_u64();
        }
        let range = max + 1;
        loop {
            let x = self.next_u64();
            let m = (x as u128) * (range as u128);
            let low = m as u64;
            if low >= range || low >= range.wrapping_neg() % range {
                return (m >> 64) as u64;
            }
        }
    }

    /// Uniform float in [0, 1) with 53 bits of precision.
    #[inline]
    pub fn next_f64(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 * (1.0 / (1u64 << 53) as f64)
    }

    /// True with probability `p`.
    #[inline]
    pub fn bernoulli(&mut self, p: f64) -> bool {
        if p <= 0.0 {
            false
        } else if p >= 1.0 {
            true
        } else {
            self.next_f64() < p
        }
    }

    /// Exponential variate with the given mean (inverse transform; `ln` via a no_std series).
    pub fn exponential(&mut self, mean: f64) -> f64 {
        // 1 - U in (0, 1]
        let u = 1.0 - self.next_f64();
        -crate::rng::ln(u) * mean
    }
}

/// Natural logarithm for `x > 0`, accurate to ~1e-15 relative, usable without std.
/// Range reduction x = m·2^e with m in [1/√2, √2), then atanh series on (m-1)/(m+1).
pub fn ln(x: f64) -> f64 {
    if x.is_nan() || x <= 0.0 {
        return f64::NEG_INFINITY;
    }
    let bits = x.to_bits();
    let mut e = ((bits >> 52) & 0x7ff) as i64 - 1023;
    let mut m = f64::from_bits((bits & 0x000F_FFFF_FFFF_FFFF) | 0x3FF0_0000_0000_0000);
    if e == -1023 {
        // subnormal: renormalise
        let y = x * (1u64 << 54) as f64;
        return ln(y) - 54.0 * core::f64::consts::LN_2;
    }
    if m > core::f64::consts::SQRT_2 {
        m *= 0.5;
        e += 1;
    }
    let s = (m - 1.0) / (m + 1.0);
    let s2 = s * s;
    let mut term = s;
    let mut sum = 0.0;
    let mut k = 1.0;
    while k < 60.0 {
        sum += term / k;
        term *= s2;
        k += 2.0;
        if term.abs() < 1e-18 {
            break;
        }
    }
    2.0 * sum + e as f64 * core::f64::consts::LN_2
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn streams_are_deterministic_and_distinct() {
        let mut a = Rng::stream(1, StreamKind::Backoff, 3);
        let mut b = Rng::stream(1, StreamKind::Backoff, 3);
        let mut c = Rng::stream(1, StreamKind::Backoff, 4);
        let mut d = Rng::stream(2, StreamKind::Backoff, 3);
        let xa: [u64; 4] = core::array::from_fn(|_| a.next_u64());
        let xb: [u64; 4] = core::array::from_fn(|_| b.next_u64());
        let xc: [u64; 4] = core::array::from_fn(|_| c.next_u64());
        let xd: [u64; 4] = core::array::from_fn(|_| d.next_u64());
        assert_eq!(xa, xb);
        assert_ne!(xa, xc);
        assert_ne!(xa, xd);
    }

    #[test]
    fn range_is_uniform_enough() {
        let mut r = Rng::from_seed(7);
        let mut counts = [0u32; 16];
        for _ in 0..160_000 {
            counts[r.gen_range_inclusive(15) as usize] += 1;
        }
        for c in counts {
            assert!((9_400..10_600).contains(&c), "{counts:?}");
        }
    }

    #[test]
    fn ln_matches_known_values() {
        for &(x, y) in &[(1.0, 0.0), (core::f64::consts::E, 1.0), (0.5, -core::f64::consts::LN_2), (1e-300, -690.7755278982137)] {
            assert!((ln(x) - y).abs() < 1e-12 * (1.0 + y.abs()), "ln({x})={}", ln(x));
        }
    }

    #[test]
    fn exponential_mean() {
        let mut r = Rng::from_seed(11);
        let n = 200_000;
        let m: f64 = (0..n).map(|_| r.exponential(2.0)).sum::<f64>() / n as f64;
        assert!((m - 2.0).abs() < 0.03, "{m}");
    }
}
