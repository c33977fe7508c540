//! ECN in the QUIC model (RFC 9000 §13.4, RFC 9002 §7.1): counts in ACK frames, validation, and
//! the congestion event of an increased CE count.

use super::*;
use crate::cc::{CcConfig, PragueConfig};
use crate::ecn::{Ecn, EcnMode};

fn download(mode: EcnMode, cc: Option<CcConfig>, mark_ms: u64, bytes: u64) -> Harness {
    let mut sc = QuicConfig { ecn: mode, ..QuicConfig::server() };
    if let Some(c) = cc {
        sc.cc = c;
    }
    let cc_ = QuicConfig { ecn: mode, ..QuicConfig::client() };
    let mut h = Harness::established(cc_, sc, ms(10));
    h.s2c.rate_bps = Some(20_000_000);
    h.s2c.mark_above = Some(ms(mark_ms));
    let id = h.s.open_stream();
    h.s.stream_write(id, bytes, true).unwrap();
    assert!(h.run_until(at_ms(60_000), |h| h.c_bytes >= bytes), "{:?}", h.s.stats());
    h
}

/// Classic ECN through a step-marking bottleneck: every datagram is ECT(0), the client's ACK
/// frames carry the counts, the server reads every mark back, reacts with congestion events
/// and loses nothing; validation holds.
#[test]
fn classic_ecn_counts_and_congestion_events() {
    let h = download(EcnMode::Classic, None, 5, 4_000_000);
    let st = h.s.stats();
    assert!(!st.ecn_failed, "{st:?}");
    assert!(h.s2c.marks > 5, "{}", h.s2c.marks);
    assert_eq!(st.ecn_ce_reported, h.s2c.marks, "every mark is reported once");
    assert!(st.ecn_congestion_events >= 2 && st.ecn_congestion_events <= st.ecn_ce_reported, "{st:?}");
    assert_eq!(st.packets_lost, 0, "{st:?}");
    assert!(h.log.iter().filter(|s| s.dir == Dir::S2C).all(|s| s.dg.ecn == Ecn::Ect0));
    let acks: Vec<AckFrame> = h.log.iter().filter(|s| s.dir == Dir::C2S).flat_map(|s| acks_in(core::slice::from_ref(&s.dg))).collect();
    assert!(!acks.is_empty() && acks.iter().all(|a| a.ecn.is_some()));
    // An ACK frame with counts is longer by the three varints (§19.3.2).
    let a = acks.last().unwrap();
    let mut plain = *a;
    plain.ecn = None;
    assert!(a.wire_len() >= plain.wire_len() + 3);
}

/// A path that clears the ECN field: the first ACK that newly acknowledges ECT packets without
/// matching counts fails validation (§13.4.2.1), and the sender stops marking.
#[test]
fn bleached_path_fails_validation_and_stops_marking() {
    let mut sc = QuicConfig { ecn: EcnMode::Classic, ..QuicConfig::server() };
    sc.pacing = false;
    let mut h = Harness::established(QuicConfig { ecn: EcnMode::Classic, ..QuicConfig::client() }, sc, ms(10));
    h.s2c.bleach = true;
    let id = h.s.open_stream();
    h.s.stream_write(id, 500_000, true).unwrap();
    assert!(h.run_until(at_ms(10_000), |h| h.c_bytes >= 500_000));
    assert!(h.s.stats().ecn_failed);
    let sent: Vec<&Sent> = h.log.iter().filter(|s| s.dir == Dir::S2C).collect();
    assert_eq!(sent[0].dg.ecn, Ecn::Ect0);
    assert_eq!(sent.last().unwrap().dg.ecn, Ecn::NotEct, "marking stops after the failure");
    assert_eq!(h.s.stats().ecn_congestion_events, 0);
}

/// L4S: a Prague sender with ECT(1) hears every mark as newly CE-marked bytes and keeps the
/// bottleneck's queue near the 1 ms step where classic ECN with CUBIC halves towards it.
#[test]
fn prague_over_quic_tracks_the_step() {
    let h = download(EcnMode::L4s, Some(CcConfig::Prague(PragueConfig::default())), 1, 4_000_000);
    let st = h.s.stats();
    assert!(!st.ecn_failed && st.ecn_ce_reported == h.s2c.marks && st.packets_lost == 0, "{st:?}");
    assert!(h.log.iter().filter(|s| s.dir == Dir::S2C).all(|s| s.dg.ecn == Ecn::Ect1));
    assert!(st.ecn_congestion_events > 10, "{st:?}");
}
