//! Run-time choice of queue discipline: [`AqmConfig`] names a discipline and its parameters,
//! [`AqmConfig::build`] makes an [`AnyQdisc`], which implements [`Qdisc`] by dispatching to
//! FIFO tail drop, CoDel (RFC 8289), PIE (RFC 8033), FQ-CoDel (RFC 8290) or DualPI2 (RFC 9332).
//!
//! PIE and DualPI2 have a periodic timer; [`AnyQdisc::poll_timeout`] /
//! [`AnyQdisc::handle_timeout`] forward to it and are no-ops for the others.

use super::{
    Codel, CodelConfig, DualPi2, DualPi2Config, Fifo, FifoConfig, FqCodel, FqCodelConfig, Pie,
    PieConfig,
};
use super::{Qdisc, QdiscStats, QueuedPacket};
use lasthop_core::Instant;

/// Which discipline to build, with its parameters.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum AqmConfig {
    Fifo(FifoConfig),
    Codel(CodelConfig),
    Pie(PieConfig),
    FqCodel(FqCodelConfig),
    DualPi2(DualPi2Config),
}

impl Default for AqmConfig {
    fn default() -> Self {
        AqmConfig::Fifo(FifoConfig::default())
    }
}

impl AqmConfig {
    /// Build the discipline. `seed` replaces the `seed` field of PIE's, FQ-CoDel's and DualPI2's
    /// configs (PIE's random-drop stream, FQ-CoDel's hash perturbation, DualPI2's mark/drop
    /// stream); FIFO and CoDel use no randomness.
    pub fn build<P: QueuedPacket>(&self, seed: u64) -> AnyQdisc<P> {
        match *self {
            AqmConfig::Fifo(c) => AnyQdisc::Fifo(Fifo::new(c)),
            AqmConfig::Codel(c) => AnyQdisc::Codel(Codel::new(c)),
            AqmConfig::Pie(c) => AnyQdisc::Pie(Pie::new(PieConfig { seed, ..c })),
            AqmConfig::FqCodel(c) => AnyQdisc::FqCodel(FqCodel::new(FqCodelConfig { seed, ..c })),
            AqmConfig::DualPi2(c) => AnyQdisc::DualPi2(DualPi2::new(DualPi2Config { seed, ..c })),
        }
    }
    /// Short name for logs and configs.
    pub fn name(&self) -> &'static str {
        match self {
            AqmConfig::Fifo(_) => "fifo",
            AqmConfig::Codel(_) => "codel",
            AqmConfig::Pie(_) => "pie",
            AqmConfig::FqCodel(_) => "fq_codel",
            AqmConfig::DualPi2(_) => "dualpi2",
        }
    }
}

/// One of the disciplines, chosen at run time.
#[derive(Clone, Debug)]
pub enum AnyQdisc<P> {
    Fifo(Fifo<P>),
    Codel(Codel<P>),
    Pie(Pie<P>),
    FqCodel(FqCodel<P>),
    DualPi2(DualPi2<P>),
}

macro_rules! each {
    ($self:expr, $q:ident => $e:expr) => {
        match $self {
            AnyQdisc::Fifo($q) => $e,
            AnyQdisc::Codel($q) => $e,
            AnyQdisc::Pie($q) => $e,
            AnyQdisc::FqCodel($q) => $e,
            AnyQdisc::DualPi2($q) => $e,
        }
    };
}

impl<P: QueuedPacket> AnyQdisc<P> {
    /// Next timer deadline (PIE's or DualPI2's periodic update), if any.
    pub fn poll_timeout(&self) -> Option<Instant> {
        match self {
            AnyQdisc::Pie(q) => q.poll_timeout(),
            AnyQdisc::DualPi2(q) => q.poll_timeout(),
            _ => None,
        }
    }
    /// Run timers due at `now`.
    pub fn handle_timeout(&mut self, now: Instant) {
        match self {
            AnyQdisc::Pie(q) => q.handle_timeout(now),
            AnyQdisc::DualPi2(q) => q.handle_timeout(now),
            _ => {}
        }
    }
    pub fn name(&self) -> &'static str {
        match self {
            AnyQdisc::Fifo(_) => "fifo",
            AnyQdisc::Codel(_) => "codel",
            AnyQdisc::Pie(_) => "pie",
            AnyQdisc::FqCodel(_) => "fq_codel",
            AnyQdisc::DualPi2(_) => "dualpi2",
        }
    }
}

impl<P: QueuedPacket> Qdisc<P> for AnyQdisc<P> {
    fn enqueue(&mut self, now: Instant, pkt: P) -> Result<(), P> {
        each!(self, q => q.enqueue(now, pkt))
    }
    fn dequeue<F: FnMut(P)>(&mut self, now: Instant, on_drop: F) -> Option<P> {
        each!(self, q => q.dequeue(now, on_drop))
    }
    fn peek(&self) -> Option<P> {
        each!(self, q => q.peek())
    }
    fn len_packets(&self) -> usize {
        each!(self, q => q.len_packets())
    }
    fn len_bytes(&self) -> u64 {
        each!(self, q => q.len_bytes())
    }
    fn stats(&self) -> QdiscStats {
        each!(self, q => q.stats())
    }
    fn invariants(&self) -> Result<(), &'static str> {
        each!(self, q => q.invariants())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::aqm::test_util::{random_ops, TP};
    use lasthop_core::{Duration, Rng};

    fn configs(case: u64) -> [AqmConfig; 5] {
        let small = 1 + (case as usize * 11) % 150;
        [
            AqmConfig::Fifo(FifoConfig {
                limit_packets: small,
                limit_bytes: 0,
            }),
            AqmConfig::Codel(CodelConfig {
                limit_packets: small,
                interval: Duration::from_millis(2 + case % 50),
                ..Default::default()
            }),
            AqmConfig::Pie(PieConfig {
                limit_packets: small,
                max_burst: Duration::from_millis(case % 4 * 40),
                ..Default::default()
            }),
            AqmConfig::FqCodel(FqCodelConfig {
                limit_packets: small,
                flows: 1 + case as usize % 16,
                ..Default::default()
            }),
            AqmConfig::DualPi2(DualPi2Config {
                limit_packets: small,
                target: Duration::from_millis(1 + case % 20),
                ..Default::default()
            }),
        ]
    }

    /// Random operations through the enum keep conservation for every discipline, with and
    /// without the host driving the timer.
    #[test]
    fn random_ops_conserve_all() {
        let mut rng = Rng::from_seed(0xA11);
        for case in 0..40u64 {
            for cfg in configs(case) {
                let mut q: AnyQdisc<TP> = cfg.build(case);
                assert_eq!(q.name(), cfg.name());
                let drive = case % 2 == 0;
                random_ops(&mut q, &mut rng, 2000, |q, now| {
                    if drive {
                        while let Some(t) = q.poll_timeout().filter(|&t| t <= now) {
                            q.handle_timeout(t);
                        }
                    }
                });
            }
        }
    }

    #[test]
    fn build_is_deterministic() {
        for cfg in configs(3) {
            let mut a: AnyQdisc<TP> = cfg.build(42);
            let mut b: AnyQdisc<TP> = cfg.build(42);
            random_ops(&mut a, &mut Rng::from_seed(1), 3000, |_, _| {});
            random_ops(&mut b, &mut Rng::from_seed(1), 3000, |_, _| {});
            assert_eq!(a.stats(), b.stats());
        }
    }
}
