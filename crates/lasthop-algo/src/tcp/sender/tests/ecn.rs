//! ECN through the sender and receiver: classic ECE/CWR (RFC 3168 §6.1), Accurate ECN counters
//! (RFC 9768), the CWR episode (one reduction per round trip, no retransmission) and a loss
//! inside it.

use super::*;

fn ecn_net(mode: EcnMode, mark_ms: u64) -> Net {
    let mut net = Net::new(TcpSenderConfig { ecn: mode, ..Net::newreno() }, 20_000_000, 10);
    net.r = TcpReceiver::new(TcpReceiverConfig { mss: MSS, ecn: mode, ..TcpReceiverConfig::default() });
    net.mark_above = Some(Duration::from_millis(mark_ms));
    net
}

/// Classic ECN: step marking keeps the queue short without a single loss; every reduction is
/// answered by one CWR, the receiver stops echoing once it sees it, and reductions are at most
/// one per round trip.
#[test]
fn classic_ecn_reduces_without_loss() {
    let mut net = ecn_net(EcnMode::Classic, 5);
    let n = 3000;
    net.s.app_write(segs(n));
    net.run_until_done(Duration::from_secs(30));
    let st = net.s.stats();
    assert_eq!(net.delivered, segs(n));
    assert!(net.marks > 5, "the link marked: {}", net.marks);
    assert_eq!(st.retransmits, 0, "ECN replaces drops: nothing is retransmitted");
    assert_eq!(st.fast_recovery_count, 0);
    assert!(st.ecn_reductions >= 3, "{st:?}");
    let cwrs = net.sent().filter(|(_, s)| s.cwr).count() as u64;
    assert_eq!(cwrs + net.s.cwr_pending as u64, st.ecn_reductions, "one CWR per reduction (the last may await new data)");
    // New data is ECT(0) (or CE after the link); the receiver saw every mark.
    assert!(net.sent().all(|(_, s)| s.ecn == Ecn::Ect0 && !s.retransmit));
    assert_eq!(net.r.ce_segments(), net.marks);
    // At most one reduction per round trip (~21.2 ms min RTT).
    let rtts = net.now.saturating_since(Instant::ZERO).as_nanos() / st.min_rtt.as_nanos();
    assert!(st.ecn_reductions <= rtts, "{} reductions in {rtts} RTTs", st.ecn_reductions);
    // ECE is set on ACKs after a mark and cleared after the CWR reaches the receiver.
    let eces = net.log.iter().filter(|l| matches!(l, Log::AckRx { ack, .. } if ack.ece)).count();
    assert!(eces > 0 && eces < net.log.len() / 4, "{eces}");
}

/// Each reduction halves the window as a loss would (NewReno's reaction, RFC 3168 §6.1.2).
#[test]
fn classic_reduction_halves_newreno() {
    let mut net = ecn_net(EcnMode::Classic, 5);
    net.s.app_write(u64::MAX);
    let mut seen = 0;
    let mut last_cwnd = 0;
    let mut checked = 0;
    while net.now < Instant::ZERO + Duration::from_secs(5) && net.step() {
        let st = net.s.stats();
        if st.ecn_reductions > seen {
            seen = st.ecn_reductions;
            // ssthresh = max(FlightSize / 2, 2·MSS) (RFC 5681 (4)).
            assert!(st.ssthresh <= last_cwnd / 2 + MSS as u64 && st.ssthresh >= 2 * MSS as u64, "{st:?} {last_cwnd}");
            checked += 1;
        }
        last_cwnd = st.cwnd;
    }
    assert!(checked >= 3);
}

/// L4S feedback: the CE-marked bytes the sender learns from the AccECN counters are exactly
/// the bytes of the segments the link marked, through the 3-bit ACE field's wraps.
#[test]
fn accecn_reports_every_marked_byte() {
    // NewReno's loss-like reaction to every round trip with a mark (the default of
    // `on_ecn_mark`) keeps its window at a few segments under a 1 ms step: slow, but every
    // segment is counted.
    let mut net = ecn_net(EcnMode::L4s, 1);
    let n = 1000;
    net.s.app_write(segs(n));
    net.run_until_done(Duration::from_secs(60));
    let st = net.s.stats();
    assert!(net.marks > 50, "{}", net.marks);
    assert_eq!(net.r.ce_segments(), net.marks);
    assert_eq!(st.ce_bytes_acked, net.marks * MSS as u64);
    assert!(net.sent().all(|(_, s)| s.ecn == Ecn::Ect1), "L4S data is ECT(1), retransmissions too");
    assert!(net.log.iter().all(|l| !matches!(l, Log::AckRx { ack, .. } if ack.accecn.is_none() || ack.n_sack as usize > crate::tcp::MAX_SACK_BLOCKS_ACCECN)));
}

/// A loss during a CWR episode is repaired by fast retransmission, without a second
/// reduction for the same round trip.
#[test]
fn loss_inside_cwr_is_retransmitted_once_reduced() {
    let mut net = ecn_net(EcnMode::Classic, 5);
    let n = 600;
    net.s.app_write(segs(n));
    // Run until the first reduction, then lose the next segment to be sent.
    while net.s.stats().ecn_reductions == 0 && net.step() {}
    assert!(net.s.ecn_cwr, "in the CWR episode");
    let cwnd = net.s.stats().cwnd;
    let k = net.s.snd_nxt / MSS as u64;
    net.drop_seg(k, 1);
    net.run_until_done(Duration::from_secs(30));
    let st = net.s.stats();
    assert_eq!(st.fast_recovery_count, 1, "{st:?}");
    assert!(st.retransmits >= 1 && st.rto_count == 0, "{st:?}");
    // The loss came within the reduction's round trip: the window was not cut twice then.
    let first_loss_cut = net.log.iter().find_map(|l| match l {
        Log::AckRx { stats, .. } if stats.fast_recovery_count == 1 => Some(stats.ssthresh),
        _ => None,
    });
    assert!(first_loss_cut.is_some_and(|ss| ss * 2 >= cwnd.saturating_sub(2 * MSS as u64)), "{first_loss_cut:?} vs {cwnd}");
}

/// The ECE the receiver keeps echoing until the CWR segment reaches it starts no second
/// reduction: the episode lasts until data above its point is acknowledged (Linux
/// `tcp_fastretrans_alert`, state CWR), and an ECE after that is a new mark.
#[test]
fn ece_until_the_cwr_arrives_is_one_reduction() {
    let mut s = TcpSender::new(TcpSenderConfig { ecn: EcnMode::Classic, ..Net::newreno() }, Instant::ZERO);
    s.app_write(segs(1000));
    let mut t = Instant::ZERO;
    let mut sent: Vec<DataSegment> = Vec::new();
    let send = |s: &mut TcpSender, t: Instant, sent: &mut Vec<DataSegment>| {
        while let Some(seg) = s.poll_transmit(t, 0) {
            sent.push(seg);
        }
    };
    send(&mut s, t, &mut sent);
    let point = s.snd_nxt;
    assert_eq!(point, segs(10));
    let ack = |k: u64, ece: bool| AckSegment { cum_ack: segs(k), rwnd: 1 << 30, ece, ..AckSegment::default() };
    // A mark on segment 0: ECE from its ACK on, one reduction; the CWR rides the next new segment.
    for k in 1..=10 {
        t += Duration::from_millis(1);
        s.handle_ack(t, &ack(k, true));
        send(&mut s, t, &mut sent);
    }
    assert_eq!(s.stats().ecn_reductions, 1);
    let cwr = sent.iter().find(|g| g.cwr).expect("a CWR segment");
    assert_eq!(cwr.seq, point, "the first new segment after the reduction carries CWR");
    // The ACK of everything before the CWR segment still carries ECE: the same episode.
    assert_eq!(s.snd_una, point);
    // Once the CWR segment is acknowledged without ECE, the episode is over ...
    t += Duration::from_millis(1);
    s.handle_ack(t, &ack(11, false));
    send(&mut s, t, &mut sent);
    assert_eq!(s.stats().ecn_reductions, 1);
    // ... and a later ECE is a new mark: a second reduction.
    t += Duration::from_millis(1);
    s.handle_ack(t, &ack(12, true));
    assert_eq!(s.stats().ecn_reductions, 2);
}
