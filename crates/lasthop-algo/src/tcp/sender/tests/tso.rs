//! TSO/GSO sending as Linux 3.12–3.18 did it (`sender/tso.rs`) through the sender: bursts of
//! whole skbs instead of a segment or two per ACK, the same bytes delivered, and no deferral
//! while loss recovery runs.

use super::*;
use crate::cc::CubicConfig;

fn tso_net(tso_defer: bool, loss_ppm: u32) -> Net {
    let cfg = TcpSenderConfig { cc: CcConfig::Cubic(CubicConfig::default()), tso_defer, ..Net::newreno() };
    let mut net = Net::new(cfg, 100_000_000, 10);
    net.loss_ppm = loss_ppm;
    net
}

/// Segments put on the wire at one instant, per instant (a burst), after the first second.
fn bursts(net: &Net) -> Vec<u64> {
    let mut out: Vec<(Instant, u64)> = Vec::new();
    for (t, _) in net.sent().filter(|(t, _)| *t >= Instant::from_nanos(1_000_000_000)) {
        match out.last_mut() {
            Some((u, n)) if *u == t => *n += 1,
            _ => out.push((t, 1)),
        }
    }
    out.into_iter().map(|(_, n)| n).collect()
}

#[test]
fn tso_sends_whole_skbs_in_bursts_and_delivers_the_same_bytes() {
    let n = 20_000;
    let mut sizes = Vec::new();
    for tso in [false, true] {
        let mut net = tso_net(tso, 0);
        net.s.app_write(segs(n));
        net.run_until_done(Duration::from_secs(60));
        assert_eq!(net.delivered, segs(n));
        let b = bursts(&net);
        sizes.push(b.iter().sum::<u64>() as f64 / b.len() as f64);
        if tso {
            assert!(net.s.tso.deferrals > 100, "the sender deferred: {}", net.s.tso.deferrals);
        } else {
            assert_eq!(net.s.tso.deferrals, 0);
        }
    }
    // Without TSO the ACK clock releases a segment or two at a time; with it, the sender waits
    // for room for an skb (half a millisecond of 2·cwnd/SRTT, 2 to 45 segments).
    assert!(sizes[0] < 3.0, "segments per burst without TSO: {sizes:?}");
    assert!(sizes[1] > 3.0 * sizes[0], "segments per burst with TSO: {sizes:?}");
}

#[test]
fn tso_does_not_defer_in_recovery() {
    let mut net = tso_net(true, 2_000);
    net.s.app_write(segs(20_000));
    net.run_until_done(Duration::from_secs(120));
    assert_eq!(net.delivered, segs(20_000));
    assert!(net.s.stats().fast_recovery_count > 0);
    // Every retransmission leaves as soon as NextSeg picks it: none waits on the deferral (the
    // loss probes and the recovery's sends are never held).
    let mut probe = tso_net(true, 0);
    probe.s.app_write(segs(100));
    probe.s.in_recovery = true;
    assert!(!probe.s.tso_hold(Instant::ZERO), "not Open: send");
    assert_eq!(probe.s.tso.deferrals, 0);
}
