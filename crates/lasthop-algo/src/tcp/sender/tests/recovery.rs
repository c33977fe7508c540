//! Scripted tests of the loss-recovery refinements in `recovery.rs`: Tail Loss Probe
//! (RFC 8985 §7), Proportional Rate Reduction (RFC 6937) and the window restart after idle.

use super::*;
use crate::cc::{AnyCc, BbrConfig, CcConfig, CubicConfig};
use crate::tcp::sender::recovery::Prr;

fn newreno_loss_events(s: &TcpSender) -> u64 {
    match s.cc() {
        AnyCc::NewReno(c) => c.stats().loss_events,
        _ => unreachable!(),
    }
}

/// Time of the last ACK before the first retransmission.
fn last_ack_before_first_rtx(net: &Net) -> (Instant, SenderStats) {
    let rtx = net.log.iter().position(|l| matches!(l, Log::Sent { seg, .. } if seg.retransmit)).unwrap();
    net.log[..rtx]
        .iter()
        .rev()
        .find_map(|l| match l {
            Log::AckRx { t, stats, .. } => Some((*t, *stats)),
            _ => None,
        })
        .unwrap()
}

// ---------------------------------------------------------------- TLP (RFC 8985 §7)

/// The last three segments of a transfer are lost: no ACK will come. The probe (a
/// retransmission of the last segment: there is no new data) leaves PTO = 2·SRTT after the
/// last ACK (FlightSize is three segments), its SACK lets RACK mark the other two lost, and
/// fast recovery repairs them: no RTO. Without TLP the RTO does it.
#[test]
fn tlp_repairs_tail_loss_before_rto() {
    let n = 200;
    for tlp in [true, false] {
        let mut net = Net::new(TcpSenderConfig { tlp, ..Net::newreno() }, 100_000_000, 10);
        net.s.app_write(segs(n));
        for k in n - 3..n {
            net.drop_seg(k, 1);
        }
        net.run_until_done(Duration::from_secs(10));
        let st = net.s.stats();
        assert_eq!(net.r.delivered(), segs(n));
        let (t_ack, at_ack) = last_ack_before_first_rtx(&net);
        let (t_rtx, first) = net.sent().find(|x| x.1.retransmit).unwrap();
        if !tlp {
            assert_eq!(st.rto_count, 1, "{st:?}");
            assert_eq!(st.tlp_probes, 0);
            assert_eq!(t_rtx - t_ack, at_ack.rto);
            continue;
        }
        assert_eq!(st.rto_count, 0, "{st:?}");
        assert_eq!(st.tlp_probes, 1);
        assert_eq!(first.seq, segs(n - 1), "the probe retransmits the highest segment");
        assert_eq!(t_rtx - t_ack, at_ack.srtt * 2, "PTO = 2·SRTT");
        assert!(t_rtx - t_ack < at_ack.rto / 2, "well before the RTO");
        // The probe's SACK let RACK find the other two: one fast recovery, three retransmissions.
        assert_eq!(st.fast_recovery_count, 1);
        assert_eq!(st.retransmits, 3);
        assert!(st.rack_lost >= 2, "{st:?}");
        assert_eq!(st.tlp_loss_repairs, 0, "a recovery episode, not a §7.4.2 repair");
    }
}

/// Only the last segment is lost. With one segment in flight the PTO is 2·SRTT +
/// TLP.max_ack_delay, capped at the RTO expiry: with the default 200 ms that is the RTO
/// instant, but a probe is sent instead of the timeout, so cwnd is not collapsed. With a
/// smaller max_ack_delay the probe leaves earlier. Without TLP, the RTO fires (cwnd = 1 MSS).
#[test]
fn tlp_single_tail_loss() {
    let n = 200;
    for (tlp, mad) in [(true, 200), (true, 10), (false, 200)] {
        let cfg = TcpSenderConfig { tlp, tlp_max_ack_delay: Duration::from_millis(mad), ..Net::newreno() };
        let mut net = Net::new(cfg, 100_000_000, 10);
        net.s.app_write(segs(n));
        net.drop_seg(n - 1, 1);
        net.run_until_done(Duration::from_secs(10));
        let st = net.s.stats();
        let (t_ack, at_ack) = last_ack_before_first_rtx(&net);
        let (t_rtx, first) = net.sent().find(|x| x.1.retransmit).unwrap();
        assert_eq!(first.seq, segs(n - 1));
        assert_eq!(st.retransmits, 1);
        let pto = at_ack.srtt * 2 + Duration::from_millis(mad);
        if tlp {
            assert_eq!(st.rto_count, 0, "mad {mad}: {st:?}");
            assert_eq!(st.tlp_probes, 1);
            assert_eq!(t_rtx - t_ack, pto.min(at_ack.rto), "mad {mad}");
            assert!(st.cwnd >= at_ack.cwnd, "no window collapse");
        } else {
            assert_eq!(st.rto_count, 1);
            assert_eq!(t_rtx - t_ack, at_ack.rto);
            assert!(st.cwnd < at_ack.cwnd / 4, "RTO: cwnd restarts from one segment: {st:?}");
        }
        if mad == 10 {
            assert!(t_rtx - t_ack < at_ack.rto / 2, "well before the RTO");
        }
    }
}

/// RFC 8985 §7.4.2: a retransmitted probe that repaired a loss (the cumulative ACK later
/// passes TLP.end_seq without a duplicate ACK in between) costs one window reduction, told to
/// the controller as a loss event. If both the original and the probe arrive (the original
/// was only late), the pure duplicate ACK of the second copy clears the probe: no reduction.
#[test]
fn tlp_probe_that_repaired_a_loss_reduces_cwnd_once() {
    for lost in [true, false] {
        // (No restart after the pause below, to compare windows.)
        let cfg = TcpSenderConfig { slow_start_after_idle: false, ..Net::newreno() };
        let mut net = Net::new(cfg, 10_000_000, 10);
        let n = 100;
        net.s.app_write(segs(n));
        if lost {
            net.drop_seg(n - 1, 1);
        } else {
            // The original arrives after the probe and after the ACK of the probe, so that its
            // duplicate ACK is a separate, pure duplicate ACK.
            net.delays.push((segs(n - 1), Duration::from_millis(500)));
        }
        net.run_until_done(Duration::from_secs(10));
        net.run_for(Duration::from_secs(1)); // the late copy and its ACK
        let st = net.s.stats();
        assert_eq!((st.tlp_probes, st.rto_count, st.fast_recovery_count), (1, 0, 0), "{st:?}");
        assert_eq!(newreno_loss_events(&net.s), 0, "no reduction before the ACK passes TLP.end_seq");
        assert_eq!(net.s.tlp.end_seq.is_some(), lost, "spurious probe cleared by the pure dupACK");
        let cwnd_before = st.cwnd;
        // More data: its ACK passes TLP.end_seq. Without the loss, enough to fill cwnd, which
        // grows only while it is used (`AckInfo::cwnd_limited`).
        net.s.app_write(segs(if lost { 50 } else { 300 }));
        net.run_until_done(Duration::from_secs(20));
        let st = net.s.stats();
        assert_eq!(st.rto_count + st.fast_recovery_count, 0, "{st:?}");
        if !lost {
            assert_eq!(st.tlp_loss_repairs, 0);
            assert_eq!(newreno_loss_events(&net.s), 0);
            assert!(st.cwnd > cwnd_before);
            continue;
        }
        assert_eq!(st.tlp_loss_repairs, 1);
        assert_eq!(newreno_loss_events(&net.s), 1, "exactly one reduction");
        let (cwnd_before_ack, at) = net
            .log
            .iter()
            .find_map(|l| match l {
                Log::AckRx { cwnd_before, stats, .. } if stats.tlp_loss_repairs == 1 => Some((*cwnd_before, *stats)),
                _ => None,
            })
            .unwrap();
        assert!(at.app_bytes_acked > segs(n), "the reduction comes with the first ACK beyond the probe");
        assert_eq!(cwnd_before_ack, cwnd_before);
        // NewReno: ssthresh = max(FlightSize/2, 2·SMSS), cwnd = ssthresh, recovery over at once.
        assert_eq!(at.cwnd, at.ssthresh);
        assert!(at.ssthresh >= 2 * MSS as u64 && at.ssthresh < cwnd_before, "{at:?}");
        assert!(!at.in_recovery);
    }
}

/// At most one probe is outstanding: when the probe is lost too, the RTO repairs the tail.
#[test]
fn tlp_one_probe_then_rto() {
    let mut net = Net::new(Net::newreno(), 10_000_000, 10);
    let n = 100;
    net.s.app_write(segs(n));
    net.drop_seg(n - 1, 2);
    net.run_until_done(Duration::from_secs(10));
    let st = net.s.stats();
    assert_eq!((st.tlp_probes, st.rto_count, st.retransmits), (1, 1, 2), "{st:?}");
    // The RTO was re-armed when the probe left (RFC 8985 §7.3).
    let probe = net.sent().find(|x| x.1.retransmit).unwrap().0;
    let rto_at = net.log.iter().find_map(|l| if let Log::Rto { t } = l { Some(*t) } else { None }).unwrap();
    let at_probe = net
        .log
        .iter()
        .rev()
        .find_map(|l| match l {
            Log::AckRx { t, stats, .. } if *t <= probe => Some(*stats),
            _ => None,
        })
        .unwrap();
    assert_eq!(rto_at - probe, at_probe.rto);
}

// ---------------------------------------------------------------- PRR (RFC 6937)

/// The two situations of RFC 6937 §3.1 (cwnd = FlightSize = pipe = 20 segments, ssthresh 10,
/// RecoverFS 20, limited transmit), fed to the §3 algorithm in units of one segment (MSS = 1),
/// pipe evolving as RFC 6675 counts it (−1 per ACK, +1 per segment sent).
#[test]
fn prr_follows_rfc6937_section3() {
    // Single loss (segment 0): recovery starts on the ACK of segment 3 with pipe 18 (22
    // outstanding − 3 SACKed − 1 lost). sndcnt on the ACKs of segments 3..19, by hand:
    // pipe > ssthresh: ⌈pd·10/20⌉ − out = 1,0,1,0,...; on the last ACK pipe = 10 = ssthresh:
    // min(ssthresh − pipe, ...) = 0. Pipe ends at ssthresh.
    let expect: [u64; 17] = [1, 0, 1, 0, 1, 0, 1, 0, 1, 0, 1, 0, 1, 0, 1, 0, 0];
    let mut prr = Prr::start(20);
    let mut pipe = 18;
    let mut got = Vec::new();
    for k in 3..20 {
        if k > 3 {
            pipe -= 1;
        }
        let n = prr.on_ack(1, pipe, 10, 1, false);
        got.push(n);
        prr.on_sent(n);
        pipe += n;
    }
    assert_eq!(got, expect);
    assert_eq!(pipe, 10);
    assert_eq!(prr.out, 8);

    // Burst of 15 losses (segments 0..14): recovery on the ACK of segment 17 with pipe 4
    // (22 − 3 SACKed − 15 lost). The RFC's tables: PRR-CRB sends 1 per ACK (pipe 4, 4, 4),
    // PRR-SSRB 2 per ACK (pipe 4, 5, 6).
    for (conservative, each, pipes) in [(true, 1, [4, 4, 4]), (false, 2, [4, 5, 6])] {
        let mut prr = Prr::start(20);
        let mut pipe = 4;
        for (i, want_pipe) in pipes.into_iter().enumerate() {
            if i > 0 {
                pipe -= 1;
            }
            assert_eq!(pipe, want_pipe, "crb {conservative}, ACK {}", 17 + i);
            let n = prr.on_ack(1, pipe, 10, 1, conservative);
            assert_eq!(n, each, "crb {conservative}, ACK {}", 17 + i);
            prr.on_sent(n);
            pipe += n;
        }
    }
}

/// Scripted ACK stream on the sender itself: 20 segments in flight (IW 20), segment 0 lost,
/// one ACK per arriving segment, each SACKing one more. Limited transmit sends one new segment
/// on each of the first two dupACKs; the third starts recovery with FlightSize = RecoverFS =
/// 22 segments, NewReno's ssthresh = 11 segments, pipe 18. The segments sent per ACK on the
/// ACKs of segments 3..19, by hand from RFC 6937 §3 (pd = prr_delivered, out = prr_out,
/// pipe before sending):
///
/// ```text
/// ACK of   3  4  5  6  7  8  9 10 11 12 13 14 15 16 17 18 19 | 20 21
/// pipe    18 18 17 17 16 16 15 15 14 14 13 13 12 12 11 10 10 | 10 10
/// pd       1  2  3  4  5  6  7  8  9 10 11 12 13 14 15 16 17 | 18 19
/// sent     1  0  1  0  1  0  1  0  1  0  1  0  1  0  0  1  1 |  1  1
/// ```
/// (pipe > 11: ⌈pd·11/22⌉ − out; from the ACK of 17 on pipe ≤ ssthresh: min(11 − pipe,
/// max(pd − out, 1) + 1)). This is the "sent" row of the RFC's own §3.1 table. Then the ACK
/// of the retransmission ends recovery with cwnd = ssthresh and pipe = ssthresh. With PRR
/// off, RFC 6675 (C) keeps pipe ≤ cwnd = 11: silence until pipe falls to 10 (ACK of 12).
#[test]
fn prr_scripted_single_loss() {
    for prr in [true, false] {
        let cfg = TcpSenderConfig { initial_cwnd_segments: 20, prr, ..Net::newreno() };
        let mut s = TcpSender::new(cfg, Instant::ZERO);
        s.app_write(u64::MAX);
        let mut n = 0;
        while s.poll_transmit(Instant::ZERO, 0).is_some() {
            n += 1;
        }
        assert_eq!(n, 20);
        let ack = |k: u64| {
            // Segment k arrived: everything in [1, k] received, segment 0 missing.
            let mut a = AckSegment { cum_ack: 0, rwnd: 1 << 30, ..AckSegment::default() };
            a.sack[0] = (segs(1), segs(k + 1));
            a.n_sack = 1;
            a
        };
        let mut t = Instant::ZERO + Duration::from_millis(50);
        let mut sent = Vec::new();
        for k in 1..22u64 {
            s.handle_ack(t, &ack(k));
            let mut c = 0;
            while let Some(seg) = s.poll_transmit(t, 0) {
                if k == 3 {
                    assert!(seg.retransmit && seg.seq == 0, "fast retransmit first");
                }
                c += 1;
            }
            sent.push(c);
            assert_eq!(s.pipe(), s.set_pipe_slow());
            t += Duration::from_micros(200);
        }
        let st = s.stats();
        assert_eq!(st.ssthresh, segs(11));
        assert!(st.in_recovery);
        if prr {
            assert_eq!(sent, [1, 1, 1, 0, 1, 0, 1, 0, 1, 0, 1, 0, 1, 0, 1, 0, 0, 1, 1, 1, 1]);
            assert_eq!(s.prr.recover_fs, segs(22));
        } else {
            assert_eq!(sent, [1, 1, 1, 0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1]);
        }
        assert_eq!(st.bytes_in_flight, segs(11));
        // The retransmission arrives: cumulative ACK of everything up to segment 21.
        s.handle_ack(t, &AckSegment { cum_ack: segs(22), rwnd: 1 << 30, ..AckSegment::default() });
        while s.poll_transmit(t, 0).is_some() {}
        let st = s.stats();
        assert!(!st.in_recovery);
        assert_eq!((st.cwnd, st.ssthresh), (segs(11), segs(11)));
        assert_eq!(st.bytes_in_flight, segs(11));
        assert_eq!(st.retransmits, 1);
    }
}

/// One loss at a large window, NewReno and CUBIC, through the link: recovery ends with
/// cwnd = ssthresh, and at its end the flight is the window.
#[test]
fn prr_recovery_ends_at_ssthresh() {
    for cc in [Net::newreno().cc, CcConfig::Cubic(CubicConfig::default())] {
        let mut net = Net::new(TcpSenderConfig { cc, ..Net::newreno() }, 20_000_000, 20);
        net.s.app_write(segs(3000));
        net.drop_seg(300, 1);
        net.run_until_done(Duration::from_secs(20));
        assert_eq!(net.s.stats().fast_recovery_count, 1);
        let acks: Vec<SenderStats> = net
            .log
            .iter()
            .filter_map(|l| match l {
                Log::AckRx { stats, .. } => Some(*stats),
                _ => None,
            })
            .collect();
        let exit = acks.iter().position(|a| !a.in_recovery && a.fast_recovery_count == 1).unwrap();
        let (last, exit) = (acks[exit - 1], acks[exit]);
        // Through recovery the controller's window is ssthresh; the exiting ACK may already
        // grow it (CUBIC in congestion avoidance), by less than a segment.
        assert!(last.in_recovery);
        assert_eq!(last.cwnd, last.ssthresh, "{cc:?}");
        assert!(exit.cwnd >= exit.ssthresh && exit.cwnd < exit.ssthresh + MSS as u64, "{cc:?}: {exit:?}");
        // PRR brought the flight down to ssthresh: within a segment of it at the last ACK of
        // recovery (after its transmissions), and the exiting ACK removes one delivered segment.
        let bif = exit.bytes_in_flight;
        assert!(bif <= exit.ssthresh && bif + 2 * MSS as u64 >= exit.ssthresh, "{cc:?}: {exit:?}");
    }
}

/// BBR keeps its own recovery rule: the `prr` switch changes nothing.
#[test]
fn prr_leaves_bbr_alone() {
    let run = |prr: bool| {
        let cc = CcConfig::Bbr(BbrConfig::default());
        let mut net = Net::new(TcpSenderConfig { cc, prr, ..Net::newreno() }, 20_000_000, 10);
        net.s.app_write(segs(1500));
        for k in [200, 203, 206, 700] {
            net.drop_seg(k, 1);
        }
        net.run_until_done(Duration::from_secs(20));
        assert!(net.s.stats().fast_recovery_count >= 1);
        net.sent().collect::<Vec<_>>()
    };
    assert_eq!(run(true), run(false));
}

// ---------------------------------------------------------------- restart after idle

/// A finished transfer, then the same sender idle for `idle` and given more data: the first
/// `poll_transmit` applies the restart. Returns (stats before, stats after, segments sent).
fn idle_then_send(cfg: TcpSenderConfig, idle: impl Fn(Duration) -> Duration) -> (SenderStats, SenderStats, usize) {
    let mut net = Net::new(cfg, 100_000_000, 5);
    net.s.app_write(segs(2000));
    net.run_until_done(Duration::from_secs(10));
    let before = net.s.stats();
    let last_send = net.sent().last().unwrap().0;
    let t = last_send + idle(before.rto);
    net.s.app_write(segs(1000));
    let mut burst = 0;
    while net.s.poll_transmit(t, 0).is_some() {
        burst += 1;
    }
    (before, net.s.stats(), burst)
}

/// Linux's decay: idle for more than one RTO → cwnd halves once per RTO beyond the first
/// (k·RTO < idle ≤ (k+1)·RTO: k halvings), not below the restart window min(IW, cwnd);
/// ssthresh ≥ ¾ of the window before. Not for idle ≤ RTO, not with the switch off.
#[test]
fn idle_restart_decays_cwnd() {
    let iw = segs(10);
    for cc in [Net::newreno().cc, CcConfig::Cubic(CubicConfig::default())] {
        let cfg = TcpSenderConfig { cc, ..Net::newreno() };
        for (idle_rtos_x2, halvings) in [(1u64, None), (2, None), (3, Some(1u32)), (4, Some(1)), (5, Some(2)), (7, Some(3)), (40, Some(30))] {
            let (before, after, burst) = idle_then_send(cfg, |rto| rto * idle_rtos_x2 / 2);
            let w = before.cwnd;
            assert!(w > 16 * iw, "{cc:?}: the transfer grew cwnd to {w}");
            let Some(h) = halvings else {
                assert_eq!(after.cwnd, w, "{cc:?}: idle {}·RTO/2 is no restart", idle_rtos_x2);
                assert_eq!(after.idle_restarts, 0);
                continue;
            };
            let expect = match h {
                1 => w / 2,
                2 => w / 4,
                3 => w / 8,
                _ => iw, // halved down to the restart window
            };
            let expect = expect.max(iw);
            assert_eq!(after.cwnd, expect, "{cc:?}: idle {}·RTO/2", idle_rtos_x2);
            assert_eq!(after.idle_restarts, 1);
            assert_eq!(after.ssthresh, before.ssthresh.max(w / 2 + w / 4), "{cc:?}");
            assert_eq!(burst as u64, (expect / MSS as u64).min(1000), "{cc:?}: the first flight after idle");
        }
        // Switch off: nothing changes however long the pause.
        let off = TcpSenderConfig { slow_start_after_idle: false, ..cfg };
        let (before, after, _) = idle_then_send(off, |rto| rto * 10);
        assert_eq!((after.cwnd, after.ssthresh, after.idle_restarts), (before.cwnd, before.ssthresh, 0));
    }
}

/// BBR handles idle periods itself: the restart does not apply.
#[test]
fn idle_restart_leaves_bbr_alone() {
    let cc = CcConfig::Bbr(BbrConfig::default());
    for on in [true, false] {
        let cfg = TcpSenderConfig { cc, slow_start_after_idle: on, ..Net::newreno() };
        let (before, after, _) = idle_then_send(cfg, |rto| rto * 10);
        assert_eq!(after.cwnd, before.cwnd);
        assert_eq!(after.idle_restarts, 0);
    }
}

