//! The work-conserving token-bucket scheduler of §III-E, Algorithm 1.
//!
//! When the WiFi link is not the bottleneck the scheduler is unmanaged: "packets are simply
//! forwarded" (§III-E). When it is, each application class a has a token bucket, in **bytes**,
//! filled "at rate b_i" = a_i·L_i (the optimizer's allocation), and a packet of class a goes when
//! `token_a > 0`, after which `token_a -= p_size` (Algorithm 1, lines 4–6 — so a bucket may go
//! negative by up to one packet's worth of debt); otherwise it is stored until `token_a > 0`
//! (line 9). The paper calls the scheduler work-conserving without saying how; here, when no
//! backlogged class has tokens, a backlogged class is served anyway (configurable).
//!
//! Our choices where the paper is silent:
//! * bucket depth: tokens are capped at `max(min_depth_bytes, rate · depth)` (default 50 ms of the
//!   class rate, at least two full frames), and floored at minus that depth, so neither an idle
//!   spell nor a spell of excess service is remembered beyond one depth;
//! * order: among classes allowed to send, and among backlogged classes when serving beyond the
//!   allocation, the class with the smallest weighted virtual time `vt_a` (advanced by
//!   `bytes / b_a` on every send; a class that comes back from idle starts at the smallest `vt` of
//!   the classes then backlogged) — so both the allocated service and any excess are shared in
//!   proportion to the allocated rates;
//! * unmanaged mode: the per-class interface cannot see arrival order, so backlogged classes are
//!   served round-robin (the host keeps FIFO order within a class), and tokens are neither charged
//!   nor drained: they are full when the scheduler becomes managed.
//!
//! Sans-IO: the host asks [`TokenScheduler::next_class`] which class to serve next given the
//! backlog of each, sends one packet of that class, and reports it with
//! [`TokenScheduler::on_sent`]. [`TokenScheduler::may_send`] is Algorithm 1's line-4 test alone,
//! for hosts that forward on arrival.

use crate::control::FieldError;
use alloc::vec;
use alloc::vec::Vec;
use lasthop_core::{Duration, Instant};

/// Parameters of a [`TokenScheduler`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SchedulerConfig {
    /// Number of application classes (queues). Default 4.
    pub classes: usize,
    /// Bucket depth as time at the class's rate. Default 50 ms.
    pub depth: Duration,
    /// Smallest bucket depth, bytes. Default 3028 (two 1514-byte frames).
    pub min_depth_bytes: u64,
    /// Serve a backlogged class when no class with tokens has data. Default true.
    pub work_conserving: bool,
}

impl Default for SchedulerConfig {
    fn default() -> Self {
        SchedulerConfig {
            classes: 4,
            depth: Duration::from_millis(50),
            min_depth_bytes: 3028,
            work_conserving: true,
        }
    }
}

impl SchedulerConfig {
    pub fn validate(&self) -> Result<(), FieldError> {
        let err = |field, allowed| Err(FieldError { field, allowed });
        if self.classes == 0 || self.classes > 1024 {
            return err("classes", "1 ..= 1024");
        }
        if self.depth.is_zero() {
            return err("depth", "> 0");
        }
        if self.min_depth_bytes == 0 {
            return err("min_depth_bytes", ">= 1");
        }
        Ok(())
    }
}

/// Counters of a [`TokenScheduler`].
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SchedulerStats {
    /// Bytes sent per class.
    pub bytes: Vec<u64>,
    /// Packets sent while the class had tokens (managed).
    pub token_sends: u64,
    /// Packets sent without tokens by work conservation (managed).
    pub excess_sends: u64,
    /// Packets sent while unmanaged.
    pub fifo_sends: u64,
}

/// Algorithm 1 with per-class token buckets; see the module documentation.
#[derive(Clone, Debug)]
pub struct TokenScheduler {
    cfg: SchedulerConfig,
    managed: bool,
    rates_bps: Vec<f64>,
    tokens: Vec<f64>,
    vt: Vec<f64>,
    was_backlogged: Vec<bool>,
    last: Instant,
    rr: usize,
    stats: SchedulerStats,
}

impl TokenScheduler {
    /// A scheduler with all rates 0, unmanaged, buckets full.
    pub fn new(cfg: SchedulerConfig) -> Result<Self, FieldError> {
        cfg.validate()?;
        let n = cfg.classes;
        Ok(TokenScheduler {
            cfg,
            managed: false,
            rates_bps: vec![0.0; n],
            tokens: vec![cfg.min_depth_bytes as f64; n],
            vt: vec![0.0; n],
            was_backlogged: vec![false; n],
            last: Instant::ZERO,
            rr: 0,
            stats: SchedulerStats {
                bytes: vec![0; n],
                ..SchedulerStats::default()
            },
        })
    }

    pub fn config(&self) -> &SchedulerConfig {
        &self.cfg
    }

    pub fn stats(&self) -> &SchedulerStats {
        &self.stats
    }

    pub fn is_managed(&self) -> bool {
        self.managed
    }

    /// The latest `now` the scheduler was handed.
    pub fn clock(&self) -> Instant {
        self.last
    }

    /// Tokens of `class`, bytes.
    pub fn tokens(&self, class: usize) -> f64 {
        self.tokens[class]
    }

    /// Allocated rate of `class`, bit/s.
    pub fn rate_bps(&self, class: usize) -> f64 {
        self.rates_bps[class]
    }

    /// Bucket depth of `class`, bytes.
    pub fn depth_bytes(&self, class: usize) -> f64 {
        let by_rate = self.rates_bps[class] / 8.0 * self.cfg.depth.as_secs_f64();
        by_rate.max(self.cfg.min_depth_bytes as f64)
    }

    fn refill(&mut self, now: Instant) {
        let dt = now.saturating_since(self.last).as_secs_f64();
        if now > self.last {
            self.last = now;
        }
        for c in 0..self.cfg.classes {
            let depth = self.depth_bytes(c);
            let t = if self.managed {
                self.tokens[c] + self.rates_bps[c] / 8.0 * dt
            } else {
                depth
            };
            self.tokens[c] = t.clamp(-depth, depth);
        }
    }

    /// New allocated rates b_a (bit/s) per class; tokens accrue at the old rates up to `now`.
    /// Non-finite or negative rates are read as 0; missing classes keep their rate.
    pub fn set_rates(&mut self, now: Instant, rates_bps: &[f64]) {
        self.refill(now);
        for (r, &x) in self.rates_bps.iter_mut().zip(rates_bps) {
            *r = if x.is_finite() && x > 0.0 { x } else { 0.0 };
        }
        for c in 0..self.cfg.classes {
            let d = self.depth_bytes(c);
            self.tokens[c] = self.tokens[c].clamp(-d, d);
        }
    }

    /// Switch between managed (the WiFi link is the bottleneck) and unmanaged FIFO forwarding.
    pub fn set_managed(&mut self, now: Instant, managed: bool) {
        self.refill(now);
        if managed && !self.managed {
            for c in 0..self.cfg.classes {
                self.tokens[c] = self.depth_bytes(c);
            }
        }
        self.managed = managed;
    }

    /// Algorithm 1, line 4: may a packet of `class` be forwarded now (unmanaged, or tokens > 0)?
    pub fn may_send(&mut self, now: Instant, class: usize) -> bool {
        self.refill(now);
        !self.managed || self.tokens[class] > 0.0
    }

    /// The class to serve next given each class's backlog (bytes or packets; only > 0 matters),
    /// or `None` when nothing may be sent now. With work conservation, `None` only when nothing
    /// is backlogged.
    pub fn next_class(&mut self, now: Instant, backlog: &[u64]) -> Option<usize> {
        self.refill(now);
        let n = self.cfg.classes.min(backlog.len());
        // A class back from idle starts at the smallest virtual time of those backlogged.
        let floor = (0..n)
            .filter(|&c| backlog[c] > 0 && self.was_backlogged[c])
            .map(|c| self.vt[c])
            .reduce(f64::min);
        for c in 0..self.cfg.classes {
            let b = backlog.get(c).is_some_and(|&x| x > 0);
            if b && !self.was_backlogged[c] {
                if let Some(f) = floor {
                    self.vt[c] = self.vt[c].max(f);
                }
            }
            self.was_backlogged[c] = b;
        }
        if !self.managed {
            for k in 0..n {
                let c = (self.rr + k) % n;
                if backlog[c] > 0 {
                    self.rr = (c + 1) % n;
                    return Some(c);
                }
            }
            return None;
        }
        let pick = |allowed: &dyn Fn(usize) -> bool| {
            (0..n)
                .filter(|&c| backlog[c] > 0 && allowed(c))
                .min_by(|&x, &y| self.vt[x].total_cmp(&self.vt[y]).then(x.cmp(&y)))
        };
        if let Some(c) = pick(&|c| self.tokens[c] > 0.0) {
            return Some(c);
        }
        if self.cfg.work_conserving {
            return pick(&|_| true);
        }
        None
    }

    /// A packet of `bytes` of `class` was forwarded at `now`.
    pub fn on_sent(&mut self, now: Instant, class: usize, bytes: u64) {
        self.refill(now);
        self.stats.bytes[class] += bytes;
        if !self.managed {
            self.stats.fifo_sends += 1;
            return;
        }
        if self.tokens[class] > 0.0 {
            self.stats.token_sends += 1;
        } else {
            self.stats.excess_sends += 1;
        }
        let d = self.depth_bytes(class);
        self.tokens[class] = (self.tokens[class] - bytes as f64).max(-d);
        self.vt[class] += bytes as f64 * 8.0 / self.rates_bps[class].max(1.0);
    }

    /// When the next class with data but no tokens will have tokens (for a host that is not
    /// work-conserving or forwards on arrival): `None` if it already has them or never will.
    pub fn tokens_at(&self, class: usize) -> Option<Instant> {
        if !self.managed || self.tokens[class] > 0.0 || self.rates_bps[class] <= 0.0 {
            return None;
        }
        let secs = (-self.tokens[class] * 8.0 / self.rates_bps[class]).max(0.0);
        Some(self.last + Duration::from_secs_f64(secs) + Duration::from_nanos(1))
    }

    /// Internal consistency.
    pub fn invariants(&self) -> Result<(), &'static str> {
        let n = self.cfg.classes;
        if self.tokens.len() != n || self.rates_bps.len() != n || self.vt.len() != n {
            return Err("vwire scheduler: per-class vectors of the wrong length");
        }
        for c in 0..n {
            let d = self.depth_bytes(c);
            if !(self.tokens[c] >= -d && self.tokens[c] <= d) {
                return Err("vwire scheduler: tokens outside [-depth, depth]");
            }
            if !(self.rates_bps[c] >= 0.0 && self.rates_bps[c].is_finite()) {
                return Err("vwire scheduler: rate negative or not finite");
            }
            if !self.vt[c].is_finite() {
                return Err("vwire scheduler: virtual time not finite");
            }
        }
        Ok(())
    }
}
