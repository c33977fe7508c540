//! Large-scale channel: log-distance path loss, thermal noise, SNR, and a distance schedule
//! (mobility).
//!
//! Sources and choices:
//!
//! * **Log-distance path loss** (Rappaport, *Wireless Communications: Principles and Practice*,
//!   2nd ed., §4.9.1, Eq. 4.68): `PL(d) = PL(d0) + 10·n·log10(d/d0)` with reference distance
//!   `d0 = 1 m`. `PL(d0)` is the free-space (Friis) loss at 1 m, `20·log10(4π·d0·f/c)`
//!   (Rappaport §4.2, Eq. 4.5), evaluated at the first 20 MHz channel of each band:
//!   2412 MHz (channel 1) → 40.1 dB, 5180 MHz (channel 36) → 46.7 dB, 5955 MHz (6 GHz
//!   channel 1) → 47.9 dB. The default exponent is `n = 3.5`, an obstructed-indoor value
//!   inside the 2–6 span Rappaport's Table 4.2 gives for obstructed environments (a choice,
//!   not a measurement), and equal to the post-breakpoint slope of the TGn models below.
//! * **Dual-slope (breakpoint) model** of the IEEE 802.11 TGn channel models (V. Erceg et
//!   al., "TGn Channel Models", IEEE 802.11-03/940r4, 2004, §3.2): free-space slope 2 up to
//!   the breakpoint distance `d_BP`, slope 3.5 beyond; `d_BP` = 5 m (models A, B, C), 10 m (D),
//!   20 m (E), 30 m (F). Small-scale fading is `fading.rs` (`[channel.fading]`); shadowing is
//!   not modelled.
//! * **Noise**: thermal noise density −174 dBm/Hz (kT at 290 K) integrated over the channel
//!   width, plus the receiver noise figure: `N = −174 + 10·log10(BW_Hz) + NF`. Defaults: transmit
//!   power 20 dBm (the usual 100 mW consumer-AP level), NF 7 dB (ns-3's documented default
//!   `RxNoiseFigure`).
//! * The SNR returned is signal power over noise in the whole channel; since signal and noise are
//!   both spread evenly over the occupied subcarriers it is used directly as the per-subcarrier
//!   Es/N0 that [`super::error`] expects (pilot/guard-band power split ignored).
//!
//! [`Mobility`] is a distance schedule, piecewise-linear between waypoints `(Instant, metres)`,
//! optionally repeating; it carries no clock: the host asks `distance_at(now)`.

use lasthop_core::{Duration, Instant};

use super::Band;

/// Thermal noise power spectral density at 290 K, dBm/Hz.
pub const THERMAL_NOISE_DBM_PER_HZ: f64 = -174.0;
/// Default transmit power, dBm.
pub const DEFAULT_TX_POWER_DBM: f64 = 20.0;
/// Default receiver noise figure, dB.
pub const DEFAULT_NOISE_FIGURE_DB: f64 = 7.0;
/// Default log-distance exponent (obstructed indoor).
pub const DEFAULT_EXPONENT: f64 = 3.5;
/// Speed of light in vacuum, m/s.
pub const SPEED_OF_LIGHT_MPS: f64 = 299_792_458.0;
/// Reference distance `d0` of the log-distance model; shorter distances are clamped to it.
pub const REFERENCE_DISTANCE_M: f64 = 1.0;

/// Free-space (Friis) path loss in dB at `freq_hz` over `distance_m`.
pub fn free_space_loss_db(freq_hz: f64, distance_m: f64) -> f64 {
    20.0 * (4.0 * core::f64::consts::PI * distance_m * freq_hz / SPEED_OF_LIGHT_MPS).log10()
}

/// Centre frequency (Hz) of the band's first 20 MHz channel, used for the reference loss.
pub const fn reference_freq_hz(band: Band) -> f64 {
    match band {
        Band::Ghz2_4 => 2.412e9,
        Band::Ghz5 => 5.180e9,
        Band::Ghz6 => 5.955e9,
    }
}

/// Noise floor in dBm over `channel_width_mhz` with the receiver noise figure `noise_figure_db`.
pub fn noise_floor_dbm(channel_width_mhz: u16, noise_figure_db: f64) -> f64 {
    THERMAL_NOISE_DBM_PER_HZ + 10.0 * (channel_width_mhz as f64 * 1e6).log10() + noise_figure_db
}

/// A TGn channel model (Erceg et al., IEEE 802.11-03/940r4): only its breakpoint distance is
/// used here.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TgnModel {
    A,
    B,
    C,
    D,
    E,
    F,
}

impl TgnModel {
    /// Breakpoint distance `d_BP` in metres.
    pub const fn breakpoint_m(self) -> f64 {
        match self {
            TgnModel::A | TgnModel::B | TgnModel::C => 5.0,
            TgnModel::D => 10.0,
            TgnModel::E => 20.0,
            TgnModel::F => 30.0,
        }
    }
}

/// Log-distance path loss, optionally dual-slope.
///
/// `loss(d) = ref + 10·exponent·log10(d)` for `d ≤ breakpoint` (or always, if `None`);
/// beyond the breakpoint `loss(bp) + 10·exponent_after·log10(d/bp)`. Distances below 1 m are
/// clamped to 1 m.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct PathLoss {
    /// Loss at the 1 m reference distance, dB.
    pub ref_loss_db_at_1m: f64,
    /// Path-loss exponent up to the breakpoint.
    pub exponent: f64,
    /// Breakpoint distance, metres; `None` = single slope.
    pub breakpoint_m: Option<f64>,
    /// Path-loss exponent beyond the breakpoint (unused without one).
    pub exponent_after: f64,
}

impl PathLoss {
    /// Single-slope log-distance model: free-space loss at 1 m, exponent 3.5.
    pub fn log_distance(band: Band) -> PathLoss {
        PathLoss {
            ref_loss_db_at_1m: free_space_loss_db(reference_freq_hz(band), REFERENCE_DISTANCE_M),
            exponent: DEFAULT_EXPONENT,
            breakpoint_m: None,
            exponent_after: DEFAULT_EXPONENT,
        }
    }

    /// TGn dual-slope model: slope 2 (free space) up to `d_BP`, 3.5 beyond.
    pub fn tgn(band: Band, model: TgnModel) -> PathLoss {
        PathLoss {
            ref_loss_db_at_1m: free_space_loss_db(reference_freq_hz(band), REFERENCE_DISTANCE_M),
            exponent: 2.0,
            breakpoint_m: Some(model.breakpoint_m()),
            exponent_after: 3.5,
        }
    }

    /// The band's default: [`PathLoss::log_distance`].
    pub fn default_for(band: Band) -> PathLoss {
        PathLoss::log_distance(band)
    }

    /// Path loss in dB at `distance_m`.
    pub fn loss_db(&self, distance_m: f64) -> f64 {
        let d = distance_m.max(REFERENCE_DISTANCE_M);
        match self.breakpoint_m {
            Some(bp) if d > bp => {
                let bp = bp.max(REFERENCE_DISTANCE_M);
                self.ref_loss_db_at_1m
                    + 10.0 * self.exponent * bp.log10()
                    + 10.0 * self.exponent_after * (d / bp).log10()
            }
            _ => self.ref_loss_db_at_1m + 10.0 * self.exponent * d.log10(),
        }
    }

    /// Inverse of [`PathLoss::loss_db`]: the distance at which the loss reaches `loss_db`
    /// (1 m if it is below the reference loss).
    pub fn distance_for_loss(&self, loss_db: f64) -> f64 {
        let excess = loss_db - self.ref_loss_db_at_1m;
        if excess <= 0.0 {
            return REFERENCE_DISTANCE_M;
        }
        let single = |n: f64, e: f64| 10f64.powf(e / (10.0 * n));
        match self.breakpoint_m {
            Some(bp) => {
                let bp = bp.max(REFERENCE_DISTANCE_M);
                let at_bp = 10.0 * self.exponent * bp.log10();
                if excess <= at_bp {
                    single(self.exponent, excess)
                } else {
                    bp * single(self.exponent_after, excess - at_bp)
                }
            }
            None => single(self.exponent, excess),
        }
    }

    /// Received SNR in dB: `tx_power − loss(d) − (−174 + 10·log10(BW) + NF)`.
    pub fn snr_db(
        &self,
        tx_power_dbm: f64,
        distance_m: f64,
        noise_figure_db: f64,
        channel_width_mhz: u16,
    ) -> f64 {
        tx_power_dbm
            - self.loss_db(distance_m)
            - noise_floor_dbm(channel_width_mhz, noise_figure_db)
    }

    /// Inverse of [`PathLoss::snr_db`]: the distance at which the SNR is `snr_db`.
    pub fn distance_for_snr(
        &self,
        snr_db: f64,
        tx_power_dbm: f64,
        noise_figure_db: f64,
        channel_width_mhz: u16,
    ) -> f64 {
        let loss = tx_power_dbm - snr_db - noise_floor_dbm(channel_width_mhz, noise_figure_db);
        self.distance_for_loss(loss)
    }
}

/// A complete link budget: path loss plus transmitter and receiver parameters.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct LinkBudget {
    pub path_loss: PathLoss,
    pub tx_power_dbm: f64,
    pub noise_figure_db: f64,
    pub channel_width_mhz: u16,
}

impl LinkBudget {
    /// Default path loss for `band`, 20 dBm, NF 7 dB.
    pub fn default_for(band: Band, channel_width_mhz: u16) -> LinkBudget {
        LinkBudget {
            path_loss: PathLoss::default_for(band),
            tx_power_dbm: DEFAULT_TX_POWER_DBM,
            noise_figure_db: DEFAULT_NOISE_FIGURE_DB,
            channel_width_mhz,
        }
    }
    /// SNR in dB at `distance_m`.
    pub fn snr_db(&self, distance_m: f64) -> f64 {
        self.path_loss.snr_db(
            self.tx_power_dbm,
            distance_m,
            self.noise_figure_db,
            self.channel_width_mhz,
        )
    }
    /// Distance (m) at which the SNR is `snr_db`.
    pub fn distance_for_snr(&self, snr_db: f64) -> f64 {
        self.path_loss.distance_for_snr(
            snr_db,
            self.tx_power_dbm,
            self.noise_figure_db,
            self.channel_width_mhz,
        )
    }
}

/// A distance schedule: piecewise-linear between waypoints, held constant before the first
/// and (unless repeating) after the last. A repeating schedule has period
/// `last.time − first.time` and restarts from the first waypoint. Two waypoints at the same
/// instant make a step.
#[derive(Clone, Debug, PartialEq)]
pub struct Mobility {
    waypoints: Vec<(Instant, f64)>,
    repeat: bool,
}

impl Mobility {
    /// A station that stays at `distance_m`.
    pub fn fixed(distance_m: f64) -> Mobility {
        Mobility {
            waypoints: vec![(Instant::ZERO, distance_m)],
            repeat: false,
        }
    }

    /// A one-shot schedule. Panics if `waypoints` is empty or its times decrease.
    pub fn new(waypoints: Vec<(Instant, f64)>) -> Mobility {
        assert!(
            !waypoints.is_empty(),
            "Mobility needs at least one waypoint"
        );
        assert!(
            waypoints.windows(2).all(|w| w[0].0 <= w[1].0),
            "Mobility waypoints must be in time order"
        );
        Mobility {
            waypoints,
            repeat: false,
        }
    }

    /// A schedule that repeats with period `last.time − first.time`. Panics as [`Mobility::new`]
    /// and if the period is zero.
    pub fn repeating(waypoints: Vec<(Instant, f64)>) -> Mobility {
        let mut m = Mobility::new(waypoints);
        let first = m.waypoints[0].0;
        let last = m.waypoints[m.waypoints.len() - 1].0;
        assert!(last > first, "a repeating Mobility needs a positive period");
        m.repeat = true;
        m
    }

    /// Walk back and forth between `d1` and `d2` metres at `speed_mps`, starting at `d1` at
    /// `start`, forever (e.g. 1 m ↔ 23 m at 1 m/s: period 44 s).
    pub fn back_and_forth(start: Instant, d1: f64, d2: f64, speed_mps: f64) -> Mobility {
        assert!(speed_mps > 0.0, "speed must be positive");
        let leg = Duration::from_secs_f64((d2 - d1).abs() / speed_mps);
        Mobility::repeating(vec![
            (start, d1),
            (start + leg, d2),
            (start + leg + leg, d1),
        ])
    }

    /// The waypoints.
    pub fn waypoints(&self) -> &[(Instant, f64)] {
        &self.waypoints
    }

    /// Whether the schedule repeats.
    pub fn is_repeating(&self) -> bool {
        self.repeat
    }

    /// Distance in metres at `now`.
    pub fn distance_at(&self, now: Instant) -> f64 {
        let w = &self.waypoints;
        let first = w[0].0;
        let last = w[w.len() - 1].0;
        let t = if self.repeat && now > last {
            let period = (last - first).as_nanos();
            Instant(first.0 + (now - first).as_nanos() % period)
        } else {
            now
        };
        // Index of the first waypoint strictly after t.
        let i = w.partition_point(|&(wt, _)| wt <= t);
        if i == 0 {
            return w[0].1;
        }
        if i == w.len() {
            return w[w.len() - 1].1;
        }
        let (t0, d0) = w[i - 1];
        let (t1, d1) = w[i];
        // t0 <= t < t1, so t1 > t0.
        let frac = (t - t0).as_nanos() as f64 / (t1 - t0).as_nanos() as f64;
        d0 + (d1 - d0) * frac
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn close(a: f64, b: f64, tol: f64) -> bool {
        (a - b).abs() <= tol
    }

    #[test]
    fn reference_losses_are_free_space_at_1m() {
        let l5 = PathLoss::default_for(Band::Ghz5).ref_loss_db_at_1m;
        let l24 = PathLoss::default_for(Band::Ghz2_4).ref_loss_db_at_1m;
        assert!(close(l5, 46.73, 0.02), "{l5}");
        assert!(close(l24, 40.09, 0.02), "{l24}");
        // Loss at 1 m and below is the reference loss.
        let pl = PathLoss::default_for(Band::Ghz5);
        assert!(close(pl.loss_db(1.0), l5, 1e-12));
        assert!(close(pl.loss_db(0.2), l5, 1e-12));
        assert!(close(pl.loss_db(10.0), l5 + 35.0, 1e-9));
    }

    #[test]
    fn snr_known_value_and_monotone() {
        let pl = PathLoss::default_for(Band::Ghz5);
        // Noise over 80 MHz with NF 7: −174 + 79.03 + 7 = −87.97 dBm.
        let n = noise_floor_dbm(80, 7.0);
        assert!(close(n, -87.969, 0.001), "{n}");
        let s1 = pl.snr_db(20.0, 1.0, 7.0, 80);
        assert!(close(s1, 20.0 - 46.73 + 87.97, 0.03), "{s1}");
        let mut prev = f64::INFINITY;
        let mut d = 1.0;
        while d < 100.0 {
            let s = pl.snr_db(20.0, d, 7.0, 80);
            assert!(s < prev, "SNR not decreasing at {d} m");
            prev = s;
            d += 0.5;
        }
        // Wider channel → more noise → lower SNR.
        assert!(pl.snr_db(20.0, 5.0, 7.0, 20) > pl.snr_db(20.0, 5.0, 7.0, 80));
    }

    #[test]
    fn breakpoint_model() {
        let pl = PathLoss::tgn(Band::Ghz5, TgnModel::D);
        let r = pl.ref_loss_db_at_1m;
        // At the 10 m breakpoint: free space, 20 dB per decade.
        assert!(close(pl.loss_db(10.0), r + 20.0, 1e-9));
        // One decade past the breakpoint: +35 dB.
        assert!(close(pl.loss_db(100.0), r + 20.0 + 35.0, 1e-9));
        // Continuous and monotone through the breakpoint.
        assert!(close(pl.loss_db(10.0 + 1e-9), pl.loss_db(10.0), 1e-6));
        assert!(pl.loss_db(10.5) > pl.loss_db(10.0));
        // Inverse.
        for d in [1.5, 7.0, 10.0, 33.0] {
            assert!(close(pl.distance_for_loss(pl.loss_db(d)), d, 1e-9), "{d}");
            let lb = LinkBudget::default_for(Band::Ghz5, 80);
            assert!(close(lb.distance_for_snr(lb.snr_db(d)), d, 1e-9), "{d}");
        }
    }

    #[test]
    fn mobility_interpolates_and_holds() {
        let s = |x: u64| Instant(x * 1_000_000_000);
        let m = Mobility::new(vec![(s(1), 2.0), (s(3), 6.0), (s(3), 10.0)]);
        assert_eq!(m.distance_at(Instant::ZERO), 2.0);
        assert_eq!(m.distance_at(s(1)), 2.0);
        assert!(close(m.distance_at(s(2)), 4.0, 1e-12));
        assert_eq!(m.distance_at(s(3)), 10.0); // step
        assert_eq!(m.distance_at(s(100)), 10.0);
        assert_eq!(Mobility::fixed(7.0).distance_at(s(5)), 7.0);
    }

    #[test]
    fn back_and_forth_repeats() {
        let s = |x: f64| Instant((x * 1e9) as u64);
        let m = Mobility::back_and_forth(Instant::ZERO, 1.0, 23.0, 1.0);
        assert!(m.is_repeating());
        assert!(close(m.distance_at(s(0.0)), 1.0, 1e-9));
        assert!(close(m.distance_at(s(11.0)), 12.0, 1e-9));
        assert!(close(m.distance_at(s(22.0)), 23.0, 1e-9));
        assert!(close(m.distance_at(s(33.0)), 12.0, 1e-9));
        // Period 44 s.
        for t in [0.5, 10.0, 21.3, 30.0, 43.9] {
            let a = m.distance_at(s(t));
            let b = m.distance_at(s(t + 44.0));
            let c = m.distance_at(s(t + 440.0));
            assert!(close(a, b, 1e-6) && close(a, c, 1e-6), "{t}: {a} {b} {c}");
        }
        // The walk spans a useful SNR range at 5 GHz / 80 MHz.
        let lb = LinkBudget::default_for(Band::Ghz5, 80);
        assert!(lb.snr_db(1.0) > 55.0 && lb.snr_db(23.0) < 15.0);
    }
}
