//! Small-scale fading: a link's power gain around its large-scale SNR (`channel.rs`), varying
//! in time with the Doppler spread of the environment.
//!
//! Sources and choices:
//!
//! * **Rayleigh** fading is Clarke's model (a ring of scatterers, uniform angles of arrival):
//!   a complex Gaussian gain with the autocorrelation `J0(2π·f_d·τ)` of the Doppler spread
//!   `f_d`. It is drawn as the sum of sinusoids of Y. R. Zheng and C. Xiao, "Simulation models
//!   with correct statistical properties for Rayleigh fading channels", IEEE Trans. Commun.
//!   51(6), 2003, Eqs. (6)–(8):
//!   `X_c(t) = 2/√M · Σ_n cos ψ_n · cos(ω_d·t·cos α_n + φ)`,
//!   `X_s(t) = 2/√M · Σ_n sin ψ_n · cos(ω_d·t·sin α_n + φ)`,
//!   `α_n = (2πn − π + θ) / (4M)`, `n = 1 … M`, with θ, φ and every ψ_n uniform on [−π, π),
//!   drawn once per link. `M = 16` sinusoids (the paper's figures use 8 and show the
//!   statistics already close to the reference). The gain is normalised to unit mean power
//!   (`|X|² / 2`), so the large-scale SNR stays the link's mean.
//! * **Rician** fading adds a line-of-sight component with K-factor `K` (its power over the
//!   scattered power), as the same paper's Rician model (Eq. (16)):
//!   `Y(t) = (X(t)/√2 + √K · e^{j(ω_d·t·cos θ_0 + φ_0)}) / √(1 + K)`, θ_0 and φ_0 uniform.
//! * The gain is a function of time alone: the same at every query of the same instant,
//!   whatever else the run does, and reciprocal (one process per link, both directions).
//! * The channel's coherence time is about `0.423 / f_d` (Rappaport, *Wireless
//!   Communications*, 2nd ed., Eq. 5.40.c): 85 ms at f_d = 5 Hz; a receiver walking at 1 m/s
//!   at 5.2 GHz has f_d = v·f/c ≈ 17 Hz (25 ms).
//! * A deep fade is floored at −60 dB (a gain of 10⁻⁶) so the SNR stays finite.

/// Sinusoids per quadrature component.
pub const SINUSOIDS: usize = 16;
/// The lowest gain returned, dB.
pub const FLOOR_DB: f64 = -60.0;

/// The fading model of `[channel.fading]`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum FadingModel {
    Rayleigh,
    /// Rician with K-factor `k` (linear: line-of-sight power over scattered power).
    Rician { k: f64 },
}

/// One link's fading process.
#[derive(Clone, Debug)]
pub struct Fading {
    /// ω_d = 2π·f_d, rad/s.
    wd: f64,
    phi: f64,
    /// cos α_n and sin α_n.
    cos_a: [f64; SINUSOIDS],
    sin_a: [f64; SINUSOIDS],
    /// cos ψ_n and sin ψ_n.
    cos_psi: [f64; SINUSOIDS],
    sin_psi: [f64; SINUSOIDS],
    /// Rician: (K, ω_d·cos θ_0, φ_0).
    los: Option<(f64, f64, f64)>,
}

impl Fading {
    /// A link's process at Doppler spread `doppler_hz`, its phases and angles from `uniform`
    /// (draws in [0, 1)), taken in a fixed order.
    pub fn new(model: FadingModel, doppler_hz: f64, mut uniform: impl FnMut() -> f64) -> Fading {
        use core::f64::consts::PI;
        let mut angle = || (2.0 * uniform() - 1.0) * PI;
        let wd = 2.0 * PI * doppler_hz;
        let theta = angle();
        let phi = angle();
        let m = SINUSOIDS as f64;
        let mut f = Fading {
            wd,
            phi,
            cos_a: [0.0; SINUSOIDS],
            sin_a: [0.0; SINUSOIDS],
            cos_psi: [0.0; SINUSOIDS],
            sin_psi: [0.0; SINUSOIDS],
            los: None,
        };
        for n in 0..SINUSOIDS {
            let a = (2.0 * PI * (n + 1) as f64 - PI + theta) / (4.0 * m);
            f.cos_a[n] = a.cos();
            f.sin_a[n] = a.sin();
            let psi = angle();
            f.cos_psi[n] = psi.cos();
            f.sin_psi[n] = psi.sin();
        }
        if let FadingModel::Rician { k } = model {
            let theta0 = angle();
            let phi0 = angle();
            f.los = Some((k, wd * theta0.cos(), phi0));
        }
        f
    }

    /// The power gain at `t_secs` (linear, mean 1).
    pub fn gain(&self, t_secs: f64) -> f64 {
        let w = self.wd * t_secs;
        let (mut xc, mut xs) = (0.0, 0.0);
        for n in 0..SINUSOIDS {
            xc += self.cos_psi[n] * (w * self.cos_a[n] + self.phi).cos();
            xs += self.sin_psi[n] * (w * self.sin_a[n] + self.phi).cos();
        }
        // 2/√M each; |X|² has mean 2, so X/√2 has unit mean power.
        let s = 2.0 / (SINUSOIDS as f64).sqrt() / core::f64::consts::SQRT_2;
        let (xc, xs) = (xc * s, xs * s);
        match self.los {
            None => xc * xc + xs * xs,
            Some((k, wl, phi0)) => {
                let a = k.sqrt();
                let (re, im) = (xc + a * (wl * t_secs + phi0).cos(), xs + a * (wl * t_secs + phi0).sin());
                (re * re + im * im) / (1.0 + k)
            }
        }
    }

    /// The gain at `t_secs` in dB, floored at [`FLOOR_DB`].
    pub fn gain_db(&self, t_secs: f64) -> f64 {
        (10.0 * self.gain(t_secs).log10()).max(FLOOR_DB)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A small deterministic uniform source (a 64-bit LCG's top bits) for the tests.
    fn lcg(seed: u64) -> impl FnMut() -> f64 {
        let mut s = seed;
        move || {
            s = s.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            (s >> 11) as f64 / (1u64 << 53) as f64
        }
    }

    /// Gains of `links` independent processes sampled every `dt` for `n` steps.
    fn samples(model: FadingModel, fd: f64, links: u64, dt: f64, n: usize) -> Vec<Vec<f64>> {
        (0..links)
            .map(|l| {
                let f = Fading::new(model, fd, lcg(l + 1));
                (0..n).map(|i| f.gain(i as f64 * dt)).collect()
            })
            .collect()
    }

    #[test]
    fn rayleigh_power_has_unit_mean_and_an_exponential_distribution() {
        // 200 links × 2000 samples 50 ms apart at 5 Hz: far beyond the coherence time.
        let s: Vec<f64> = samples(FadingModel::Rayleigh, 5.0, 200, 0.05, 2000).concat();
        let mean = s.iter().sum::<f64>() / s.len() as f64;
        assert!((mean - 1.0).abs() < 0.03, "mean power {mean}");
        // Exponential: P(g < x) = 1 − e^(−x); 10 dB down, 9.5 %; 20 dB down, 1 %.
        for (x, p) in [(0.1, 1.0 - (-0.1f64).exp()), (0.01, 1.0 - (-0.01f64).exp()), (1.0, 1.0 - (-1.0f64).exp())] {
            let q = s.iter().filter(|&&g| g < x).count() as f64 / s.len() as f64;
            assert!((q - p).abs() < 0.25 * p + 0.005, "P(g < {x}) = {q}, Rayleigh {p}");
        }
    }

    #[test]
    fn the_gain_decorrelates_over_the_doppler_spreads_time_scale() {
        // The envelope's correlation follows J0(2π f_d τ)²: at τ = 0.1/f_d about 0.9, past
        // 0.383/f_d (J0's first zero over 2π) near zero.
        let fd = 10.0;
        let corr = |tau: f64| {
            let (mut sxy, mut sx, mut sy, mut sxx, mut syy, mut n) = (0.0, 0.0, 0.0, 0.0, 0.0, 0.0);
            for l in 0..300u64 {
                let f = Fading::new(FadingModel::Rayleigh, fd, lcg(1000 + l));
                for i in 0..200 {
                    let t = i as f64 * 1.3;
                    let (x, y) = (f.gain(t), f.gain(t + tau));
                    sxy += x * y;
                    sx += x;
                    sy += y;
                    sxx += x * x;
                    syy += y * y;
                    n += 1.0;
                }
            }
            (sxy / n - sx / n * sy / n) / ((sxx / n - (sx / n).powi(2)).sqrt() * (syy / n - (sy / n).powi(2)).sqrt())
        };
        let near = corr(0.1 / fd);
        let far = corr(0.383 / fd);
        assert!(near > 0.8, "correlation at 0.1/f_d: {near}");
        assert!(far.abs() < 0.1, "correlation at 0.383/f_d: {far}");
    }

    #[test]
    fn rician_with_a_strong_line_of_sight_fades_less_and_keeps_unit_mean() {
        let k = 10f64.powf(10.0 / 10.0); // K = 10 dB
        let ri: Vec<f64> = samples(FadingModel::Rician { k }, 5.0, 200, 0.05, 1000).concat();
        let ra: Vec<f64> = samples(FadingModel::Rayleigh, 5.0, 200, 0.05, 1000).concat();
        let mean = ri.iter().sum::<f64>() / ri.len() as f64;
        assert!((mean - 1.0).abs() < 0.03, "mean power {mean}");
        let deep = |s: &[f64]| s.iter().filter(|&&g| g < 0.1).count() as f64 / s.len() as f64;
        assert!(deep(&ri) < deep(&ra) / 10.0, "10 dB fades: Rician {} Rayleigh {}", deep(&ri), deep(&ra));
    }

    #[test]
    fn the_gain_is_a_function_of_time_and_floored() {
        let f = Fading::new(FadingModel::Rayleigh, 5.0, lcg(9));
        let a: Vec<f64> = (0..100).map(|i| f.gain_db(i as f64 * 0.01)).collect();
        let b: Vec<f64> = (0..100).rev().map(|i| f.gain_db(i as f64 * 0.01)).collect();
        assert!(a.iter().zip(b.iter().rev()).all(|(x, y)| x == y));
        assert!(a.iter().all(|&g| (FLOOR_DB..10.0).contains(&g)));
    }
}
