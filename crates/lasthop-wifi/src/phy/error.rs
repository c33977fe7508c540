//! AWGN error model: bit error rate of the 802.11 OFDM MCSs and MPDU success probability.
//!
//! The model (textbook, e.g. Proakis, *Digital Communications*, 4th ed., §5.2 and §8.2):
//!
//! 1. `snr_db` is the per-subcarrier signal-to-noise ratio per modulation symbol (Es/N0).
//! 2. Uncoded bit error probability of the constellation (IEEE 802.11-2020 §17.3.5.8 Gray-coded
//!    BPSK/QPSK/16/64/256/1024-QAM): BPSK Pb = Q(√(2γ)), QPSK Pb = Q(√γ) (exact);
//!    square M-QAM Pb ≈ (4/log₂M)(1 − 1/√M) Q(√(3γ/(M−1))) (nearest-neighbour Gray
//!    approximation), clamped to 0.5.
//! 3. Coded bit error probability of the K = 7 (133, 171)₈ convolutional code (§17.3.5.6) and
//!    its punctured rates 2/3, 3/4 (§17.3.5.6) and 5/6 (§19.3.11.6), with **hard-decision**
//!    Viterbi decoding, by the union bound Pb ≤ (1/P) Σ_d c_d P_d over the first five
//!    non-zero terms of the distance spectrum, where P_d is the probability of choosing a path
//!    at Hamming distance d given the channel bit error probability p (Proakis Eq. 8.2-28/29),
//!    P is the puncturing period and c_d the total information-bit weight of weight-d paths.
//!    Spectra: rate 1/2 from Odenwalder (1970) / Frenger, Orten & Ottosson, "Convolutional
//!    codes with optimum distance spectrum", IEEE Commun. Lett. 3(11), 1999
//!    (d_free 10: 36, 211, 1404, 11633, 77433 at d = 10, 12, 14, 16, 18);
//!    punctured rates from Haccoun & Bégin, "High-rate punctured convolutional codes for
//!    Viterbi and sequential decoding", IEEE Trans. Commun. 37(11), 1989
//!    (2/3: d_free 6, c = 3, 70, 285, 1276, 6160; 3/4: d_free 5, c = 42, 201, 1492, 10469, 62935;
//!    5/6: d_free 4, c = 92, 528, 8694, 79453, 792114). Clamped to [0, 0.5].
//! 4. MPDU success = (1 − BER)^(8·bytes) (independent bit errors after decoding; the PHY
//!    preamble/header is assumed received).
//!
//! Simplifications (documented choices):
//! * LDPC (HE, and optional in HT/VHT) is treated as the BCC of the same rate. Real LDPC is
//!   ~1.5–2 dB better, hard-decision BCC is ~2 dB worse than soft-decision; the model is
//!   therefore conservative, but monotone and with sensible thresholds (50 % success for a
//!   1500-byte MPDU at about 3 dB for MCS 0, 23 dB for MCS 7, 29 dB for MCS 9, 34.5 dB for
//!   MCS 11).
//! * For NSS > 1 every spatial stream sees the given SNR (no MIMO diversity gain or
//!   inter-stream loss); the BER is then the same as for one stream.
//! * Channel width does not enter: `snr_db` is already per subcarrier.
//!
//! `Q(x)` is computed from `erfc` implemented here (power series for |x| < 2, Lentz continued
//! fraction beyond), relative accuracy ≈ 1e-12, so tiny error rates are not rounded to zero.

use super::rates::{mcs_params, CodeRate, LEGACY_RATES};
use super::TxVector;

const FRAC_2_SQRT_PI: f64 = core::f64::consts::FRAC_2_SQRT_PI;

/// Complementary error function.
pub fn erfc(x: f64) -> f64 {
    if x.is_nan() {
        return f64::NAN;
    }
    if x < 0.0 {
        return 2.0 - erfc(-x);
    }
    if x < 2.0 {
        // erf(x) = 2/√π Σ (−1)^n x^(2n+1) / (n! (2n+1))
        let x2 = x * x;
        let mut term = x; // (−1)^n x^(2n+1) / n!
        let mut sum = x;
        for n in 1..200 {
            let n = n as f64;
            term *= -x2 / n;
            let add = term / (2.0 * n + 1.0);
            sum += add;
            if add.abs() <= 1e-17 * sum.abs() {
                break;
            }
        }
        return 1.0 - FRAC_2_SQRT_PI * sum;
    }
    if x > 27.0 {
        return 0.0;
    }
    // erfc(x) = exp(−x²)/√π · 1/(x + (1/2)/(x + 1/(x + (3/2)/(x + 2/(x + …)))))
    // evaluated with the modified Lentz algorithm: b_0 = x, a_k = k/2, b_k = x.
    let tiny = 1e-300;
    let mut f = x;
    let mut c = x;
    let mut d = 0.0;
    for k in 1..300 {
        let a = k as f64 / 2.0;
        d = x + a * d;
        if d.abs() < tiny {
            d = tiny;
        }
        c = x + a / c;
        if c.abs() < tiny {
            c = tiny;
        }
        d = 1.0 / d;
        let delta = c * d;
        f *= delta;
        if (delta - 1.0).abs() < 1e-15 {
            break;
        }
    }
    (-x * x).exp() * (FRAC_2_SQRT_PI / 2.0) / f
}

/// Gaussian tail function Q(x) = ½ erfc(x/√2).
pub fn q_function(x: f64) -> f64 {
    0.5 * erfc(x / core::f64::consts::SQRT_2)
}

/// Uncoded bit error probability of Gray-coded BPSK (1), QPSK (2) or square M-QAM
/// (`bits_per_symbol` = log₂M, even) at symbol SNR `snr_linear` (Es/N0).
pub fn uncoded_ber(bits_per_symbol: u32, snr_linear: f64) -> f64 {
    let g = snr_linear.max(0.0);
    let p = match bits_per_symbol {
        0 | 1 => q_function((2.0 * g).sqrt()),
        2 => q_function(g.sqrt()),
        b => {
            let m = (1u64 << b) as f64;
            (4.0 / b as f64) * (1.0 - 1.0 / m.sqrt()) * q_function((3.0 * g / (m - 1.0)).sqrt())
        }
    };
    p.clamp(0.0, 0.5)
}

/// (d_free, puncturing period, information weights c_d for d = d_free, d_free+step, …, step).
fn spectrum(rate: CodeRate) -> (u32, f64, &'static [f64], u32) {
    match rate {
        CodeRate::R1_2 => (10, 1.0, &[36.0, 211.0, 1404.0, 11633.0, 77433.0], 2),
        CodeRate::R2_3 => (6, 2.0, &[3.0, 70.0, 285.0, 1276.0, 6160.0], 1),
        CodeRate::R3_4 => (5, 3.0, &[42.0, 201.0, 1492.0, 10469.0, 62935.0], 1),
        CodeRate::R5_6 => (4, 5.0, &[92.0, 528.0, 8694.0, 79453.0, 792114.0], 1),
    }
}

fn binom(n: u32, k: u32) -> f64 {
    let mut r = 1.0;
    for i in 0..k {
        r = r * (n - i) as f64 / (i + 1) as f64;
    }
    r
}

/// Pairwise error probability of a weight-`d` path with hard decisions (Proakis 8.2).
fn pairwise_hard(d: u32, p: f64) -> f64 {
    let q = 1.0 - p;
    let mut s = 0.0;
    let k0 = if d & 1 == 0 {
        s += 0.5 * binom(d, d / 2) * p.powi((d / 2) as i32) * q.powi((d / 2) as i32);
        d / 2 + 1
    } else {
        d.div_ceil(2)
    };
    for k in k0..=d {
        s += binom(d, k) * p.powi(k as i32) * q.powi((d - k) as i32);
    }
    s
}

/// Decoded bit error probability of the 802.11 convolutional code at `rate` given the channel
/// (uncoded) bit error probability `p`, union bound, clamped to [0, 0.5].
pub fn coded_ber(rate: CodeRate, p: f64) -> f64 {
    let p = p.clamp(0.0, 0.5);
    if p == 0.0 {
        return 0.0;
    }
    let (dfree, period, weights, step) = spectrum(rate);
    let mut sum = 0.0;
    for (i, c) in weights.iter().enumerate() {
        sum += c * pairwise_hard(dfree + step * i as u32, p);
    }
    (sum / period).clamp(0.0, 0.5)
}

fn success(bits_per_symbol: u32, rate: CodeRate, snr_db: f64, bytes: u32) -> f64 {
    if snr_db.is_nan() {
        return 0.0;
    }
    let snr = 10f64.powf(snr_db / 10.0);
    let ber = coded_ber(rate, uncoded_ber(bits_per_symbol, snr));
    if ber <= 0.0 {
        return 1.0;
    }
    let bits = 8.0 * bytes as f64;
    (bits * (-ber).ln_1p()).exp().clamp(0.0, 1.0)
}

/// Probability that an MPDU of `mpdu_bytes` sent with `tx` is received without error at
/// per-subcarrier SNR `snr_db` over AWGN (see the module documentation).
pub fn mpdu_success_prob(tx: &TxVector, snr_db: f64, mpdu_bytes: u32) -> f64 {
    match mcs_params(tx.standard, tx.mcs) {
        Some((bpscs, rate)) => success(bpscs, rate, snr_db, mpdu_bytes),
        None => 0.0,
    }
}

/// Success probability of a non-HT OFDM frame of `bytes` at `rate_bps` (6..54 Mb/s).
/// Returns 0 for a rate that is not one of the eight non-HT rates.
pub fn legacy_success_prob(rate_bps: u64, snr_db: f64, bytes: u32) -> f64 {
    match LEGACY_RATES.iter().position(|&r| r == rate_bps) {
        Some(i) => mpdu_success_prob(&TxVector::ofdm(i as u8), snr_db, bytes),
        None => 0.0,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::phy::{Standard, TxVector};

    #[test]
    fn erfc_matches_known_values() {
        // Reference values (Abramowitz & Stegun Table 7.1 / high-precision tables).
        let cases = [
            (0.0, 1.0),
            (0.5, 0.479_500_122_186_953_5),
            (1.0, 0.157_299_207_050_285_1),
            (1.5, 0.033_894_853_524_689_27),
            (2.0, 0.004_677_734_981_047_266),
            (3.0, 2.209_049_699_858_544e-5),
            (5.0, 1.537_459_794_428_035e-12),
            (-1.0, 1.842_700_792_949_715),
        ];
        for (x, want) in cases {
            let got = erfc(x);
            assert!(
                ((got - want) / want).abs() < 1e-10,
                "erfc({x}) = {got}, want {want}"
            );
        }
        // Continuity at the series / continued-fraction switch.
        let a = erfc(2.0 - 1e-12);
        let b = erfc(2.0 + 1e-12);
        assert!(((a - b) / a).abs() < 1e-9);
        assert!((q_function(0.0) - 0.5).abs() < 1e-15);
    }

    #[test]
    fn monotone_in_snr_mcs_and_length() {
        for (std, max) in [(Standard::Ht, 7u8), (Standard::Vht, 9), (Standard::He, 11)] {
            for i in -40..=200 {
                let snr = i as f64 * 0.25;
                let mut prev = f64::INFINITY;
                for mcs in 0..=max {
                    let tx = TxVector::new(std, mcs, 1, 40, 800);
                    let p = mpdu_success_prob(&tx, snr, 1500);
                    assert!((0.0..=1.0).contains(&p));
                    assert!(
                        p <= prev + 1e-12,
                        "{std:?} mcs {mcs} at {snr} dB: {p} > {prev}"
                    );
                    prev = p;
                    // rises with SNR
                    let hi = mpdu_success_prob(&tx, snr + 0.25, 1500);
                    assert!(
                        hi >= p - 1e-12,
                        "{std:?} mcs {mcs}: not monotone in SNR at {snr}"
                    );
                    // falls with length
                    let long = mpdu_success_prob(&tx, snr, 3000);
                    assert!(long <= p + 1e-12);
                }
            }
        }
    }

    #[test]
    fn thresholds() {
        let vht9 = TxVector::new(Standard::Vht, 9, 1, 80, 400);
        assert!(mpdu_success_prob(&vht9, 35.0, 1500) > 0.999);
        assert!(mpdu_success_prob(&vht9, 15.0, 1500) < 1e-6);
        let vht0 = TxVector::new(Standard::Vht, 0, 1, 80, 800);
        assert!(mpdu_success_prob(&vht0, 10.0, 1500) > 0.999);
        assert!(mpdu_success_prob(&vht0, -5.0, 1500) < 1e-6);
        let he11 = TxVector::new(Standard::He, 11, 2, 80, 800);
        assert!(mpdu_success_prob(&he11, 45.0, 1500) > 0.999);
        assert!(mpdu_success_prob(&he11, 25.0, 1500) < 1e-6);
        assert!(legacy_success_prob(6_000_000, 10.0, 1500) > 0.999);
        assert!(legacy_success_prob(54_000_000, 10.0, 1500) < 1e-6);
        assert!(legacy_success_prob(54_000_000, 30.0, 1500) > 0.999);
        assert_eq!(legacy_success_prob(5_500_000, 30.0, 1500), 0.0);
        // Zero bytes always succeed; NaN SNR never does.
        assert_eq!(mpdu_success_prob(&vht9, 0.0, 0), 1.0);
        assert_eq!(mpdu_success_prob(&vht9, f64::NAN, 100), 0.0);
    }

    #[test]
    fn coded_ber_bounds() {
        for rate in [
            CodeRate::R1_2,
            CodeRate::R2_3,
            CodeRate::R3_4,
            CodeRate::R5_6,
        ] {
            assert_eq!(coded_ber(rate, 0.0), 0.0);
            assert_eq!(coded_ber(rate, 0.5), 0.5);
            let mut prev = 0.0;
            for i in 1..=100 {
                let p = i as f64 * 0.005;
                let b = coded_ber(rate, p);
                assert!(b >= prev && b <= 0.5);
                prev = b;
            }
        }
        // Stronger codes are better at the same channel BER.
        let p = 1e-3;
        assert!(coded_ber(CodeRate::R1_2, p) < coded_ber(CodeRate::R2_3, p));
        assert!(coded_ber(CodeRate::R2_3, p) < coded_ber(CodeRate::R3_4, p));
        assert!(coded_ber(CodeRate::R3_4, p) < coded_ber(CodeRate::R5_6, p));
    }
}
