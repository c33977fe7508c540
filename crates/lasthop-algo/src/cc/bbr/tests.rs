//! BBR's unit tests.

use crate::cc::RateSample;
use super::*;
use alloc::vec::Vec;

const MSS: u32 = 1000;
const M: u64 = MSS as u64;

struct Seg {
    sent: Instant,
    ack_at: Instant,
    delivered: u64,
    delivered_time: Instant,
    first_sent_time: Instant,
    app_limited: bool,
}

/// A bulk sender (cwnd- and pacing-limited; app-limited only when the controller asks the
/// sender to mark it, as in ProbeRTT) over a single FIFO
/// bottleneck of `rate` bytes/s with infinite buffer, `base` two-way propagation delay, and
/// ACKs optionally released only at multiples of `ack_batch` (aggregation). Delivery-rate
/// samples per draft-cheng-iccrg-delivery-rate-estimation.
struct Path {
    rate: u64,
    base: Duration,
    ack_batch: Option<Duration>,
    now: Instant,
    link_free: Instant,
    next_send: Instant,
    flight: VecDeque<Seg>,
    delivered: u64,
    delivered_time: Instant,
    first_sent_time: Instant,
    srtt: Duration,
    min_rtt: Duration,
    /// C.app_limited: 0, or the `delivered` mark until which samples are app-limited.
    app_limited_until: u64,
}

#[derive(Default)]
struct Trace {
    /// (time, state) at each change.
    states: Vec<(Instant, &'static str)>,
    /// (time, pacing gain) at each ProbeBW phase change.
    phases: Vec<(Instant, f64)>,
    /// max cwnd seen while in ProbeRTT.
    probe_rtt_max_cwnd: u64,
}

impl Path {
    fn new(rate: u64, base: Duration) -> Self {
        Path {
            rate,
            base,
            ack_batch: None,
            now: Instant::ZERO,
            link_free: Instant::ZERO,
            next_send: Instant::ZERO,
            flight: VecDeque::new(),
            delivered: 0,
            delivered_time: Instant::ZERO,
            first_sent_time: Instant::ZERO,
            srtt: Duration::ZERO,
            min_rtt: Duration::MAX,
            app_limited_until: 0,
        }
    }

    fn in_flight(&self) -> u64 {
        self.flight.len() as u64 * M
    }

    fn run(&mut self, cc: &mut Bbr, until: Instant, tr: &mut Trace) {
        let ser = Duration::from_nanos(M * 1_000_000_000 / self.rate);
        loop {
            let can_send = self.in_flight() + M <= cc.cwnd();
            let next_ack = self.flight.front().map(|s| s.ack_at);
            let send_at = can_send.then_some(self.next_send.max(self.now));
            let t = match (next_ack, send_at) {
                (Some(a), Some(s)) => a.min(s),
                (Some(a), None) => a,
                (None, Some(s)) => s,
                (None, None) => unreachable!(),
            };
            if t > until {
                return;
            }
            self.now = t;
            if next_ack == Some(t) {
                self.ack(cc, tr);
            } else {
                self.send(cc, ser);
            }
        }
    }

    fn send(&mut self, cc: &mut Bbr, ser: Duration) {
        if self.flight.is_empty() {
            self.first_sent_time = self.now;
            self.delivered_time = self.now;
        }
        let depart = (self.now + self.base / 2).max(self.link_free) + ser;
        self.link_free = depart;
        let mut ack_at = depart + self.base / 2;
        if let Some(b) = self.ack_batch {
            let b = b.as_nanos();
            ack_at = Instant::from_nanos(ack_at.as_nanos().div_ceil(b) * b);
        }
        self.flight.push_back(Seg {
            sent: self.now,
            ack_at,
            delivered: self.delivered,
            delivered_time: self.delivered_time,
            first_sent_time: self.first_sent_time,
            app_limited: self.app_limited_until != 0,
        });
        let bif = self.in_flight();
        cc.on_sent(self.now, MSS, bif);
        let pr = cc.pacing_rate().unwrap().max(1);
        self.next_send = self.now + Duration::from_nanos(M * 1_000_000_000 / pr);
    }

    fn ack(&mut self, cc: &mut Bbr, tr: &mut Trace) {
        let prior_in_flight = self.in_flight();
        let s = self.flight.pop_front().unwrap();
        self.delivered += M;
        self.delivered_time = self.now;
        if self.app_limited_until != 0 && self.delivered > self.app_limited_until {
            self.app_limited_until = 0;
        }
        let send_elapsed = s.sent - s.first_sent_time;
        let ack_elapsed = self.now - s.delivered_time;
        self.first_sent_time = s.sent;
        let interval = send_elapsed.max(ack_elapsed);
        let d = self.delivered - s.delivered;
        let rate = if interval.is_zero() {
            0
        } else {
            (d as u128 * 1_000_000_000 / interval.as_nanos() as u128) as u64
        };
        let rtt = self.now - s.sent;
        self.min_rtt = self.min_rtt.min(rtt);
        self.srtt = if self.srtt.is_zero() {
            rtt
        } else {
            (self.srtt * 7 + rtt) / 8
        };
        let a = AckInfo {
            cwnd_limited: true,
            now: self.now,
            newly_acked: M,
            cum_acked: M,
            bytes_in_flight: self.in_flight(),
            prior_in_flight,
            rtt: Some(rtt),
            min_rtt: self.min_rtt,
            srtt: self.srtt,
            delivered: self.delivered,
            rate: Some(RateSample {
                delivery_rate: rate,
                interval,
                delivered: d,
                prior_delivered: s.delivered,
                is_app_limited: s.app_limited,
                rtt,
                tx_in_flight: 0,
                newly_lost: 0,
            }),
            in_recovery: false,
            mss: MSS,
            ce_acked: 0,
        };
        let before_idx = cc.stats().cycle_index;
        let before_state = cc.state();
        cc.on_ack(&a);
        if cc.mark_app_limited() {
            self.app_limited_until = (self.delivered + self.in_flight()).max(1);
        }
        if tr.states.last().map(|x| x.1) != Some(cc.state()) {
            tr.states.push((self.now, cc.state()));
        }
        if cc.state() == "probe_bw"
            && (before_idx != cc.stats().cycle_index || before_state != "probe_bw")
        {
            tr.phases.push((self.now, cc.stats().pacing_gain));
        }
        if cc.state() == "probe_rtt" {
            tr.probe_rtt_max_cwnd = tr.probe_rtt_max_cwnd.max(cc.cwnd());
        }
    }
}

const RATE: u64 = 1_250_000; // 10 Mbit/s
fn base() -> Duration {
    Duration::from_millis(40)
}

fn start(cfg: BbrConfig) -> (Bbr, Path, Trace) {
    let cc = Bbr::new(cfg, Instant::ZERO, MSS, 10 * M);
    let mut tr = Trace::default();
    tr.states.push((Instant::ZERO, cc.state()));
    (cc, Path::new(RATE, base()), tr)
}

#[test]
fn startup_drain_probe_bw_and_btlbw_converges() {
    let (mut cc, mut p, mut tr) = start(BbrConfig::default());
    p.run(&mut cc, Instant::ZERO + Duration::from_secs(3), &mut tr);
    let names: Vec<_> = tr.states.iter().map(|x| x.1).collect();
    assert_eq!(names, ["startup", "drain", "probe_bw"]);
    let st = cc.stats();
    assert!(st.filled_pipe);
    let err = (st.btlbw as f64 - RATE as f64).abs() / RATE as f64;
    assert!(err < 0.01, "btlbw {} vs {RATE}", st.btlbw);
    // RTprop = propagation + one serialization time.
    assert_eq!(st.rtprop, Some(base() + Duration::from_micros(800)));
    assert_eq!(st.cwnd_gain, 2.0);
    // cwnd = 2·BDP + 3 MSS (+ aggregation allowance, tiny on a smooth path).
    let bdp = RATE as f64 * st.rtprop.unwrap().as_secs_f64();
    let want = 2.0 * bdp + 3.0 * M as f64;
    assert!(
        cc.cwnd() as f64 >= want - 1.0 && (cc.cwnd() as f64) < want + 2.0 * M as f64,
        "cwnd {}",
        cc.cwnd()
    );
    // Pacing at gain·BtlBw minus 1 %.
    let pr = cc.pacing_rate().unwrap() as f64;
    assert!((pr - st.pacing_gain * st.btlbw as f64 * 0.99).abs() <= 1.0);
}

#[test]
fn startup_gains() {
    let cc = Bbr::new(BbrConfig::default(), Instant::ZERO, MSS, 10 * M);
    let st = cc.stats();
    assert!((st.pacing_gain - 2.885).abs() < 1e-3 && (st.cwnd_gain - 2.885).abs() < 1e-3);
    // Initial pacing rate: high_gain · 10 MSS / 1 ms, minus 1 %.
    assert_eq!(
        cc.pacing_rate(),
        Some((BBR_HIGH_GAIN * 10_000.0 * 1000.0 * 0.99) as u64)
    );
    assert!(cc.in_slow_start());
}

#[test]
fn probe_bw_cycles_gains_once_per_rtprop() {
    let (mut cc, mut p, mut tr) = start(BbrConfig::default());
    p.run(&mut cc, Instant::ZERO + Duration::from_secs(6), &mut tr);
    let rtprop = cc.stats().rtprop.unwrap();
    // The first phase is never 3/4.
    assert_ne!(tr.phases[0].1, 0.75);
    // From the first 5/4 phase on, the gains follow the cycle.
    let i0 = tr.phases.iter().position(|x| x.1 == 1.25).unwrap();
    let ph = &tr.phases[i0..];
    assert!(ph.len() >= 24, "{} phases", ph.len());
    for (j, w) in ph.windows(2).enumerate().take(24) {
        assert_eq!(w[0].1, PACING_GAIN_CYCLE[j % 8], "phase {j}");
        let dur = w[1].0 - w[0].0;
        if w[0].1 == 1.0 {
            // Full phases: one RTprop, ended by the first ACK after it.
            assert!(
                dur > rtprop && dur < rtprop + Duration::from_millis(2),
                "phase {j}: {dur:?}"
            );
        } else if w[0].1 > 1.0 {
            // At least one RTprop, and until in-flight reaches 5/4·BDP + 3 MSS: pacing at
            // 1.25·0.99·BtlBw needs a little more than one RTprop for that.
            assert!(dur > rtprop && dur < rtprop * 3 / 2, "phase {j}: {dur:?}");
        } else {
            assert!(
                dur <= rtprop + Duration::from_millis(2),
                "phase {j}: {dur:?}"
            );
        }
    }
    // A whole cycle takes about 8 RTprop.
    let cyc = ph[8].0 - ph[0].0;
    assert!(cyc > rtprop * 7 && cyc < rtprop * 17 / 2, "{cyc:?}");
}

#[test]
fn random_start_phase_is_never_three_quarters() {
    let mut seen = [false; 8];
    for seed in 0..64 {
        let mut cc = Bbr::new(
            BbrConfig {
                seed,
                ..BbrConfig::default()
            },
            Instant::ZERO,
            MSS,
            10 * M,
        );
        cc.enter_probe_bw(Instant::ZERO);
        seen[cc.cycle_index] = true;
    }
    assert!(!seen[1]);
    assert!(seen.iter().enumerate().all(|(i, &s)| s == (i != 1)));
}

#[test]
fn probe_rtt_after_ten_seconds_and_back() {
    let (mut cc, mut p, mut tr) = start(BbrConfig::default());
    p.run(&mut cc, Instant::ZERO + Duration::from_secs(13), &mut tr);
    let enter = tr
        .states
        .iter()
        .find(|x| x.1 == "probe_rtt")
        .expect("no ProbeRTT")
        .0;
    // RTprop was last lowered by the very first ACK (t = 40.8 ms), so it expires 10 s later.
    let first = Instant::ZERO + base() + Duration::from_micros(800);
    assert!(enter > first + Duration::from_secs(10));
    assert!(
        enter < first + Duration::from_secs(10) + Duration::from_millis(5),
        "{enter:?}"
    );
    assert_eq!(tr.probe_rtt_max_cwnd, 4 * M);
    let i = tr.states.iter().position(|x| x.1 == "probe_rtt").unwrap();
    let (exit, next) = tr.states[i + 1];
    assert_eq!(next, "probe_bw");
    let dur = exit - enter;
    assert!(
        dur >= Duration::from_millis(200) && dur < Duration::from_millis(300),
        "{dur:?}"
    );
    assert_eq!(cc.stats().probe_rtt_entries, 1);
    // cwnd restored and the model unchanged.
    assert!(cc.cwnd() > 20 * M);
    assert!((cc.btlbw() as f64 - RATE as f64).abs() / (RATE as f64) < 0.01);
}

/// With a 5 ms round trip, ProbeRTT's 200 ms span ~40 rounds, four times the bandwidth
/// filter's window. Its low samples are app-limited (draft §4.3.5) and do not age the
/// filter, so the estimate holds through ProbeRTT and BBR leaves it with its window
/// restored (before, the estimate fell to the ProbeRTT rate while still in ProbeRTT, and
/// in the cell a split connection's relay ran dry for ~0.5 s every 10 s). What the draft
/// does not prevent is shown too: the first unmarked sample after the exit still spans the
/// ProbeRTT round, and with the old maximum expired it may lower the estimate once.
#[test]
fn probe_rtt_keeps_the_bandwidth_estimate_at_short_rtt() {
    // 200 Mbit/s, 5 ms: BDP ~125 segments, so ProbeRTT's 4 segments per round are 1/30 of it.
    let rate = 20 * RATE;
    let cc = Bbr::new(BbrConfig::default(), Instant::ZERO, MSS, 10 * M);
    let (mut cc, mut p, mut tr) = (cc, Path::new(rate, Duration::from_millis(5)), Trace::default());
    tr.states.push((Instant::ZERO, cc.state()));
    // Step 0.1 ms at a time through the first ProbeRTT (RTprop expires ~10 s in).
    let mut t = Instant::ZERO + Duration::from_millis(9_900);
    p.run(&mut cc, t, &mut tr);
    let mut min_bw = u64::MAX;
    let mut exit_cwnd = None;
    while exit_cwnd.is_none() {
        assert!(t < Instant::ZERO + Duration::from_secs(12), "no ProbeRTT exit: {:?}", tr.states);
        t += Duration::from_micros(100);
        p.run(&mut cc, t, &mut tr);
        if cc.state() == "probe_rtt" {
            min_bw = min_bw.min(cc.btlbw());
        } else if tr.states.iter().any(|x| x.1 == "probe_rtt") {
            exit_cwnd = Some(cc.cwnd());
        }
    }
    assert_eq!(cc.stats().probe_rtt_entries, 1);
    assert!((min_bw as f64 - rate as f64).abs() / (rate as f64) < 0.05, "btlbw fell to {min_bw} in ProbeRTT (link {rate})");
    let bdp = rate * 5 / 1000;
    assert!(exit_cwnd.unwrap() >= 2 * bdp, "cwnd {exit_cwnd:?} at the ProbeRTT exit (BDP {bdp})");
}

#[test]
fn extra_acked_grows_with_ack_aggregation_and_is_zero_when_off() {
    let batch = Duration::from_millis(10);
    let (mut cc, mut p, mut tr) = start(BbrConfig::default());
    p.ack_batch = Some(batch);
    p.run(&mut cc, Instant::ZERO + Duration::from_secs(4), &mut tr);
    let st = cc.stats();
    // A 10 ms burst carries ~ BtlBw·10 ms = 12.5 kB.
    assert!(
        st.extra_acked as f64 > 0.6 * RATE as f64 * 0.010,
        "extra_acked {}",
        st.extra_acked
    );
    assert!(st.aggregation_cwnd > 0);
    assert!(st.target_cwnd >= cc.inflight(st.cwnd_gain) + st.aggregation_cwnd);

    let (mut off, mut p2, mut tr2) = start(BbrConfig {
        extra_acked: false,
        ..BbrConfig::default()
    });
    p2.ack_batch = Some(batch);
    p2.run(&mut off, Instant::ZERO + Duration::from_secs(4), &mut tr2);
    assert_eq!(off.stats().extra_acked, 0);
    assert_eq!(off.stats().aggregation_cwnd, 0);

    // On a smooth path the estimate stays small (about one segment).
    let (mut smooth, mut p3, mut tr3) = start(BbrConfig::default());
    p3.run(
        &mut smooth,
        Instant::ZERO + Duration::from_secs(4),
        &mut tr3,
    );
    assert!(
        smooth.stats().extra_acked <= 3 * M,
        "{}",
        smooth.stats().extra_acked
    );
}

#[test]
fn packet_conservation_then_restore() {
    let (mut cc, mut p, mut tr) = start(BbrConfig::default());
    p.run(&mut cc, Instant::ZERO + Duration::from_secs(2), &mut tr);
    let before = cc.cwnd();
    let bif = p.in_flight();
    cc.on_loss_event(p.now, bif / 2, MSS);
    assert_eq!(cc.cwnd(), bif / 2 + M);
    assert!(cc.stats().packet_conservation);
    assert_eq!(cc.stats().prior_cwnd, before);
    cc.on_recovery_exit(p.now);
    assert!(!cc.stats().packet_conservation);
    assert_eq!(cc.cwnd(), before);
}

#[test]
fn rto_one_mss_then_growth_and_restore() {
    let (mut cc, mut p, mut tr) = start(BbrConfig::default());
    p.run(&mut cc, Instant::ZERO + Duration::from_secs(2), &mut tr);
    let before = cc.cwnd();
    cc.on_rto(p.now, p.in_flight(), MSS);
    assert_eq!(cc.cwnd(), M);
    // The ACKs already on their way grow cwnd by the acked bytes (capped at target), and
    // recovery ends (cwnd restored) once everything outstanding is delivered.
    p.run(&mut cc, p.now + Duration::from_millis(200), &mut tr);
    assert!(!cc.stats().in_recovery);
    assert!(cc.cwnd() >= before.min(cc.stats().target_cwnd));
}
