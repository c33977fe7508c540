//! Per-flow features for the classifier (§III-C), the application classes and their utilities.
//!
//! The paper uses "the same statistic feature as [9]" (Shbair et al., packet-size and timing
//! statistics of a connection) plus the device type, identified from the MAC address [11], and
//! updates statistics and predicts "every 2 seconds". It does not list the features or the
//! window; ours, computed over the packets of one flow (one direction, the downlink the proxy
//! forwards) seen in the last `window` (default 10 s) before `now`, are below. The Python trainer
//! (`python/lasthop/vwire_train.py`) computes the same numbers the same way; keep the two in step.
//!
//! With packets k = 1..n in arrival order, sizes s_k (bytes, IP length), times t_k (ns), in the
//! window (now − W, now]:
//!
//! | # | field | definition (0 when undefined) |
//! |---|---|---|
//! | 0 | `size_mean` | Σ s_k / n |
//! | 1 | `size_std` | √(Σ (s_k − mean)² / n) (population) |
//! | 2 | `iat_mean` | mean of d_k = (t_{k+1} − t_k)/10⁹ s, k = 1..n−1 (needs n ≥ 2) |
//! | 3 | `iat_std` | population std of the d_k |
//! | 4 | `rate_bps` | 8 Σ s_k / W (W in seconds; the whole window, not the span) |
//! | 5 | `burstiness` | coefficient of variation (population std / mean) of bytes per bin; the window is cut into W/B bins of B = 100 ms, packet k in bin ⌊(t_k − (now − W)) / B⌋ (capped at the last) |
//! | 6 | `idle_fraction` | fraction of those bins with no bytes |
//! | 7 | `small_fraction` | fraction of packets with s_k < 256 |
//! | 8 | `large_fraction` | fraction of packets with s_k ≥ 1200 |
//! | 9 | `device` | [`DeviceType`] code, from the host |
//!
//! All sums run in arrival order in f64; times and bins are integer nanoseconds. The forest reads
//! the features as f32 ([`FlowFeatures::to_array`]), as scikit-learn does.

use super::utility::Utility;
use crate::control::FieldError;
use alloc::collections::VecDeque;
use alloc::vec;
use lasthop_core::{Duration, Instant};

/// Number of features.
pub const N_FEATURES: usize = 10;

/// Feature names, in vector order (also the header of the trainer's fixture).
pub const FEATURE_NAMES: [&str; N_FEATURES] = [
    "size_mean",
    "size_std",
    "iat_mean",
    "iat_std",
    "rate_bps",
    "burstiness",
    "idle_fraction",
    "small_fraction",
    "large_fraction",
    "device",
];

/// Device type of the flow's receiver (from its MAC address, §III-C / [11]); the host decides.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[repr(u8)]
pub enum DeviceType {
    #[default]
    Unknown = 0,
    Phone = 1,
    Laptop = 2,
    Tv = 3,
}

/// The application classes the shipped model tells apart.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
#[repr(u8)]
pub enum AppClass {
    /// Video around 1.5–3 Mb/s.
    VideoSd = 0,
    /// Video around 4–8 Mb/s.
    VideoHd = 1,
    /// Video around 15–35 Mb/s.
    Video4k = 2,
    /// Saturating transfer (backup, download).
    Bulk = 3,
    /// Web browsing: page bursts and think times.
    Web = 4,
    /// Interactive / VoIP: small periodic packets.
    Voip = 5,
}

impl AppClass {
    pub const ALL: [AppClass; 6] = [
        AppClass::VideoSd,
        AppClass::VideoHd,
        AppClass::Video4k,
        AppClass::Bulk,
        AppClass::Web,
        AppClass::Voip,
    ];

    /// The class with model label `k`.
    pub fn from_index(k: usize) -> Option<AppClass> {
        AppClass::ALL.get(k).copied()
    }

    /// The name used in model files.
    pub fn name(self) -> &'static str {
        match self {
            AppClass::VideoSd => "video_sd",
            AppClass::VideoHd => "video_hd",
            AppClass::Video4k => "video_4k",
            AppClass::Bulk => "bulk",
            AppClass::Web => "web",
            AppClass::Voip => "voip",
        }
    }

    /// A default utility per class (our choice of numbers; the shapes are the paper's, §III-D,
    /// §IV). Video: a ladder up to the class's quality — 2.5 Mb/s worth 4, 8 Mb/s worth 7,
    /// 32 Mb/s worth 10 (the paper's 4K step, §IV-1). Bulk: 0.1·log b (the paper's Dropbox flow,
    /// §IV-1). Web: 0.5·log b (greedy, weighted above bulk). VoIP: a fixed-rate step at 128 kb/s
    /// worth 5 (§IV-2's "slightly more than its send rate" for a ~100 kb/s call).
    pub fn default_utility(self) -> Utility {
        const LADDER: [(f64, f64); 3] = [(2.5e6, 4.0), (8.0e6, 7.0), (32.0e6, 10.0)];
        match self {
            AppClass::VideoSd => Utility::ladder(&LADDER[..1]),
            AppClass::VideoHd => Utility::ladder(&LADDER[..2]),
            AppClass::Video4k => Utility::ladder(&LADDER),
            AppClass::Bulk => Utility::log(0.1),
            AppClass::Web => Utility::log(0.5),
            AppClass::Voip => Utility::step(128e3, 5.0),
        }
    }
}

/// The feature vector of one flow; see the module documentation for the definitions.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct FlowFeatures {
    pub size_mean: f64,
    pub size_std: f64,
    pub iat_mean: f64,
    pub iat_std: f64,
    pub rate_bps: f64,
    pub burstiness: f64,
    pub idle_fraction: f64,
    pub small_fraction: f64,
    pub large_fraction: f64,
    pub device: DeviceType,
}

impl FlowFeatures {
    /// The vector the forest reads, in [`FEATURE_NAMES`] order, as f32.
    pub fn to_array(&self) -> [f32; N_FEATURES] {
        [
            self.size_mean as f32,
            self.size_std as f32,
            self.iat_mean as f32,
            self.iat_std as f32,
            self.rate_bps as f32,
            self.burstiness as f32,
            self.idle_fraction as f32,
            self.small_fraction as f32,
            self.large_fraction as f32,
            self.device as u8 as f32,
        ]
    }
}

/// Parameters of a [`FeatureWindow`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FeatureConfig {
    /// W. Default 10 s (the shipped model was trained with it).
    pub window: Duration,
    /// B, the burstiness bin. Default 100 ms; W must be a multiple of it.
    pub bin: Duration,
    /// Most packets kept; the oldest are dropped beyond it. Default 65 536.
    pub max_packets: usize,
}

impl Default for FeatureConfig {
    fn default() -> Self {
        FeatureConfig {
            window: Duration::from_secs(10),
            bin: Duration::from_millis(100),
            max_packets: 65_536,
        }
    }
}

impl FeatureConfig {
    pub fn validate(&self) -> Result<(), FieldError> {
        let err = |field, allowed| Err(FieldError { field, allowed });
        if self.bin.is_zero() {
            return err("bin", "> 0");
        }
        let (w, b) = (self.window.as_nanos(), self.bin.as_nanos());
        if w < b || w / b * b != w {
            return err("window", "a positive multiple of bin");
        }
        if self.window.as_nanos() / self.bin.as_nanos() > 100_000 {
            return err("window", "at most 100000 bins");
        }
        if self.max_packets == 0 {
            return err("max_packets", ">= 1");
        }
        Ok(())
    }
}

/// Packets of one flow over the last window; sans-IO (handed `now`).
#[derive(Clone, Debug)]
pub struct FeatureWindow {
    cfg: FeatureConfig,
    pkts: VecDeque<(u64, u32)>,
    /// Packets dropped because `max_packets` was reached.
    overflow: u64,
}

impl FeatureWindow {
    pub fn new(cfg: FeatureConfig) -> Result<Self, FieldError> {
        cfg.validate()?;
        Ok(FeatureWindow {
            cfg,
            pkts: VecDeque::new(),
            overflow: 0,
        })
    }

    /// Packets dropped at the `max_packets` cap so far.
    pub fn overflow(&self) -> u64 {
        self.overflow
    }

    /// Packets currently held.
    pub fn len(&self) -> usize {
        self.pkts.len()
    }

    pub fn is_empty(&self) -> bool {
        self.pkts.is_empty()
    }

    /// A packet of `size` bytes at `t` (times must not go backwards; an earlier one is taken as
    /// arriving at the latest time seen).
    pub fn on_packet(&mut self, t: Instant, size: u32) {
        let t = match self.pkts.back() {
            Some(&(last, _)) => t.as_nanos().max(last),
            None => t.as_nanos(),
        };
        if self.pkts.len() == self.cfg.max_packets {
            self.pkts.pop_front();
            self.overflow += 1;
        }
        self.pkts.push_back((t, size));
    }

    /// Forget packets at or before `now − W`.
    pub fn expire(&mut self, now: Instant) {
        let start = now.as_nanos().saturating_sub(self.cfg.window.as_nanos());
        while self.pkts.front().is_some_and(|&(t, _)| t <= start) {
            self.pkts.pop_front();
        }
    }

    /// The features of the packets in (now − W, now] (later packets are ignored).
    pub fn features(&mut self, now: Instant, device: DeviceType) -> FlowFeatures {
        self.expire(now);
        let w = self.cfg.window.as_nanos();
        let start = now.as_nanos().saturating_sub(w);
        let pk = || self.pkts.iter().filter(|&&(t, _)| t <= now.as_nanos());
        let n = pk().count();
        let mut f = FlowFeatures {
            device,
            ..FlowFeatures::default()
        };
        if n == 0 {
            f.idle_fraction = 1.0;
            return f;
        }
        let nf = n as f64;
        let mut sum = 0.0;
        let (mut small, mut large) = (0usize, 0usize);
        for &(_, s) in pk() {
            sum += s as f64;
            small += (s < 256) as usize;
            large += (s >= 1200) as usize;
        }
        let mean = sum / nf;
        let mut var = 0.0;
        for &(_, s) in pk() {
            let d = s as f64 - mean;
            var += d * d;
        }
        f.size_mean = mean;
        f.size_std = libm::sqrt(var / nf);
        f.small_fraction = small as f64 / nf;
        f.large_fraction = large as f64 / nf;
        f.rate_bps = sum * 8.0 / (w as f64 / 1e9);
        if n >= 2 {
            let m = (n - 1) as f64;
            let iat = || {
                pk().zip(pk().skip(1))
                    .map(|(a, b)| (b.0 - a.0) as f64 / 1e9)
            };
            let mut s = 0.0;
            for d in iat() {
                s += d;
            }
            let im = s / m;
            let mut v = 0.0;
            for d in iat() {
                v += (d - im) * (d - im);
            }
            f.iat_mean = im;
            f.iat_std = libm::sqrt(v / m);
        }
        let bin = self.cfg.bin.as_nanos();
        let nb = (w / bin) as usize;
        let mut bins = vec![0.0f64; nb];
        for &(t, s) in pk() {
            let k = (((t - start) / bin) as usize).min(nb - 1);
            bins[k] += s as f64;
        }
        let nbf = nb as f64;
        let mut bs = 0.0;
        let mut idle = 0usize;
        for &b in &bins {
            bs += b;
            idle += (b == 0.0) as usize;
        }
        let bm = bs / nbf;
        let mut bv = 0.0;
        for &b in &bins {
            bv += (b - bm) * (b - bm);
        }
        f.burstiness = if bm > 0.0 {
            libm::sqrt(bv / nbf) / bm
        } else {
            0.0
        };
        f.idle_fraction = idle as f64 / nbf;
        f
    }
}
