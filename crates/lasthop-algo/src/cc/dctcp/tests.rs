use super::*;
use lasthop_core::Duration;

const MSS: u32 = 1000;
const M: u64 = MSS as u64;

/// A sender's view for driving the controller ACK by ACK: `delivered`, in flight, time.
struct Feed {
    now: Instant,
    delivered: u64,
    in_flight: u64,
}

impl Feed {
    fn new(in_flight: u64) -> Self {
        Feed { now: Instant::ZERO, delivered: 0, in_flight }
    }

    /// One ACK of one MSS, `marked` or not; the sender keeps `in_flight` constant (it sends one
    /// segment per segment acknowledged).
    fn ack(&mut self, cc: &mut Dctcp, marked: bool) {
        self.now += Duration::from_micros(100);
        self.delivered += M;
        cc.on_ack(&AckInfo {
            cwnd_limited: true,
            now: self.now,
            newly_acked: M,
            cum_acked: M,
            bytes_in_flight: self.in_flight - M,
            prior_in_flight: self.in_flight,
            rtt: Some(Duration::from_millis(10)),
            min_rtt: Duration::from_millis(10),
            srtt: Duration::from_millis(10),
            delivered: self.delivered,
            mss: MSS,
            ce_acked: if marked { M } else { 0 },
            ..AckInfo::default()
        });
    }

    /// ACKs until the controller closes an observation window; `mark(i)` says whether the i-th
    /// ACK of the window is marked. Returns the number of ACKs.
    fn window(&mut self, cc: &mut Dctcp, mark: impl Fn(u64) -> bool) -> u64 {
        let before = cc.stats().windows;
        let mut i = 0;
        while cc.stats().windows == before {
            self.ack(cc, mark(i));
            i += 1;
            assert!(i < 10_000, "the window never closed");
        }
        i
    }
}

fn dctcp(cwnd_mss: u64) -> Dctcp {
    Dctcp::new(DctcpConfig::default(), Instant::ZERO, MSS, cwnd_mss * M)
}

/// Under a constant marking fraction F the estimate converges to F: from α = 1 the error
/// shrinks by (1 − g) per window, 0.75·(15/16)^100 ≈ 0.0012 after 100 windows.
#[test]
fn alpha_converges_to_marked_fraction() {
    let mut cc = dctcp(40);
    let mut feed = Feed::new(40 * M);
    feed.window(&mut cc, |_| false); // the first window closes at the first ACK
    let mut lens = 0;
    for _ in 0..100 {
        // Every fourth ACK marked: F = 0.25 exactly when a window spans a multiple of 4 ACKs.
        lens += feed.window(&mut cc, |i| i % 4 == 3);
    }
    assert_eq!(lens, 100 * 40, "a window is one round trip: 40 ACKs of 40 in flight");
    let a = cc.alpha();
    assert!((a - 0.25).abs() < 0.02, "α = {a}");
    assert!((a - 0.25).abs() < 0.002, "α = {a}: the residual should be ≈ 0.0012");
    assert_eq!(cc.stats().last_fraction, 0.25);
}

/// Without marks α decays by exactly (1 − g) per observation window.
#[test]
fn alpha_decays_by_one_minus_g_without_marks() {
    let mut cc = dctcp(20);
    let mut feed = Feed::new(20 * M);
    let mut expect = 1.0f64;
    assert_eq!(cc.alpha(), 1.0);
    for k in 1..=30 {
        feed.window(&mut cc, |_| false);
        expect *= 1.0 - 1.0 / 16.0;
        assert!((cc.alpha() - expect).abs() < 1e-12, "window {k}: α {} expected {expect}", cc.alpha());
    }
}

/// A fresh connection (α = 1) halves on its first mark, exits slow start, and does not grow
/// during the episode; growth resumes after it.
#[test]
fn alpha_one_halves_and_no_growth_in_cwr() {
    let mut cc = dctcp(40);
    assert!(cc.in_slow_start());
    cc.on_ecn_mark(Instant::ZERO, 40 * M, MSS);
    assert_eq!(cc.cwnd(), 20 * M);
    assert_eq!(cc.ssthresh(), 20 * M);
    assert_eq!(cc.state(), "cwr");
    assert!(!cc.in_slow_start());
    let mut feed = Feed::new(20 * M);
    for _ in 0..100 {
        feed.ack(&mut cc, true);
    }
    assert_eq!(cc.cwnd(), 20 * M, "no growth and no further reduction inside the episode");
    cc.on_recovery_exit(feed.now);
    assert_eq!(cc.state(), "avoidance");
    for _ in 0..20 {
        feed.ack(&mut cc, false);
    }
    assert_eq!(cc.cwnd(), 21 * M, "congestion avoidance: +1 MSS per window of ACKs");
    // Floor of 2 MSS.
    let mut small = dctcp(3);
    small.on_ecn_mark(Instant::ZERO, 3 * M, MSS);
    assert_eq!(small.cwnd(), 2 * M);
}

/// The reduction is cwnd·(1 − α/2) with the current α, once per `on_ecn_mark`.
#[test]
fn reduction_is_alpha_over_two_once_per_signal() {
    let mut cc = Dctcp::new(DctcpConfig { initial_alpha: 0.0, ..DctcpConfig::default() }, Instant::ZERO, MSS, 100 * M);
    cc.exit_slow_start(Instant::ZERO);
    let mut feed = Feed::new(100 * M);
    feed.window(&mut cc, |_| false);
    for _ in 0..60 {
        feed.window(&mut cc, |i| i % 5 == 0); // F = 0.2
    }
    let a = cc.alpha();
    assert!((a - 0.2).abs() < 0.01, "α = {a}");
    let before = cc.cwnd();
    cc.on_ecn_mark(feed.now, before, MSS);
    let expect = (before as f64 * (1.0 - a / 2.0)) as u64;
    assert_eq!(cc.cwnd(), expect);
    assert!(cc.cwnd() < before * 91 / 100 && cc.cwnd() > before * 89 / 100, "≈ 10 % reduction");
    assert_eq!(cc.stats().ecn_reductions, 1);
    // Marked ACKs alone reduce nothing: only the sender's signal does.
    let after = cc.cwnd();
    for _ in 0..50 {
        feed.ack(&mut cc, true);
    }
    assert_eq!(cc.cwnd(), after);
    // A second signal, a second reduction (with α as updated meanwhile).
    let a2 = cc.alpha();
    cc.on_ecn_mark(feed.now, after, MSS);
    assert_eq!(cc.cwnd(), (after as f64 * (1.0 - a2 / 2.0)) as u64);
    assert_eq!(cc.stats().ecn_reductions, 2);
}

/// Loss: NewReno's halving of the flight size (RFC 8257 §3.5), whatever α is.
#[test]
fn loss_halves_as_newreno() {
    let mut cc = Dctcp::new(DctcpConfig { initial_alpha: 0.1, ..DctcpConfig::default() }, Instant::ZERO, MSS, 40 * M);
    cc.on_loss_event(Instant::ZERO, 40 * M, MSS);
    assert_eq!(cc.cwnd(), 20 * M);
    assert_eq!(cc.ssthresh(), 20 * M);
    assert_eq!(cc.state(), "recovery");
    cc.on_rto(Instant::ZERO, 30 * M, MSS);
    assert_eq!(cc.cwnd(), M);
    assert_eq!(cc.ssthresh(), 15 * M);
}

/// Without marks DCTCP's window follows NewReno's exactly, ACK for ACK.
#[test]
fn growth_is_newreno() {
    let mut d = dctcp(10);
    let mut r = NewReno::new(NewRenoConfig::default(), Instant::ZERO, MSS, 10 * M);
    let mut feed = Feed::new(10 * M);
    for i in 0..2_000u64 {
        let stretch = 1 + i % 3;
        feed.now += Duration::from_micros(50);
        feed.delivered += stretch * M;
        let a = AckInfo {
            cwnd_limited: true,
            now: feed.now,
            newly_acked: stretch * M,
            cum_acked: if i % 7 == 0 { 0 } else { stretch * M },
            delivered: feed.delivered,
            prior_in_flight: 50 * M,
            mss: MSS,
            ..AckInfo::default()
        };
        d.on_ack(&a);
        r.on_ack(&a);
        if i == 300 {
            d.on_loss_event(feed.now, 60 * M, MSS);
            r.on_loss_event(feed.now, 60 * M, MSS);
        }
        if i == 400 {
            d.on_recovery_exit(feed.now);
            r.on_recovery_exit(feed.now);
        }
        assert_eq!((d.cwnd(), d.ssthresh(), d.state()), (r.cwnd(), r.ssthresh(), r.state()), "ACK {i}");
    }
}

#[test]
fn deterministic() {
    let run = || {
        let mut cc = dctcp(10);
        let mut feed = Feed::new(30 * M);
        let mut out = alloc::vec::Vec::new();
        for i in 0..3_000u64 {
            feed.ack(&mut cc, (i * 7919) % 13 == 0);
            if i % 97 == 0 {
                cc.on_ecn_mark(feed.now, 30 * M, MSS);
            }
            if i % 97 == 50 {
                cc.on_recovery_exit(feed.now);
            }
            out.push((cc.cwnd(), cc.alpha().to_bits()));
        }
        out
    };
    assert_eq!(run(), run());
}

/// `AnyCc` forwards the ECN signal (the trait's default would answer it as a loss), and only
/// L4S feedback suits DCTCP and Prague.
#[test]
fn any_cc_dispatch_and_reacts_to() {
    use crate::cc::{BbrConfig, CcConfig, CubicConfig, PragueConfig};
    use crate::ecn::EcnMode;
    let mut cc = CcConfig::Dctcp(DctcpConfig { initial_alpha: 0.0, ..DctcpConfig::default() }).build(Instant::ZERO, MSS, 40 * M);
    cc.on_ecn_mark(Instant::ZERO, 40 * M, MSS);
    assert_eq!(cc.cwnd(), 40 * M, "α = 0 reduces nothing; a loss response would halve");
    assert_eq!(cc.state(), "cwr");
    let cases = [
        (CcConfig::NewReno(NewRenoConfig::default()), [true, true, false]),
        (CcConfig::Cubic(CubicConfig::default()), [true, true, false]),
        (CcConfig::Bbr(BbrConfig::default()), [true, false, false]),
        (CcConfig::Dctcp(DctcpConfig::default()), [false, false, true]),
        (CcConfig::Prague(PragueConfig::default()), [false, false, true]),
    ];
    for (cfg, expect) in cases {
        for (mode, e) in [EcnMode::Off, EcnMode::Classic, EcnMode::L4s].into_iter().zip(expect) {
            assert_eq!(cfg.reacts_to(mode), e, "{cfg:?} {mode:?}");
        }
    }
}
