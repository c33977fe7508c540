//! Shared test helpers: a packet handle with a length, a flow and a unique id, and a random
//! operation driver that checks conservation, invariants, packet identity and the ECN field's
//! rules (never ECT → Not-ECT, CE never cleared, Not-ECT never marked) for any qdisc.

use crate::ecn::Ecn;
use super::{Qdisc, QueuedPacket};
use alloc::collections::{BTreeMap, BTreeSet};
use lasthop_core::{Instant, Rng};

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TP {
    pub len: u32,
    pub flow: u32,
    pub id: u64,
    pub ecn: Ecn,
}

/// A test packet of flow `flow`, `len` bytes, unique `id`.
pub fn p(flow: u32, len: u32, id: u64) -> TP {
    TP { len, flow, id, ecn: Ecn::NotEct }
}

impl QueuedPacket for TP {
    fn len_bytes(&self) -> u32 {
        self.len
    }
    fn flow_hash(&self) -> u32 {
        self.flow
    }
    fn ecn(&self) -> Ecn {
        self.ecn
    }
    fn set_ecn(&mut self, ecn: Ecn) {
        self.ecn = ecn;
    }
}

/// Drives `q` through `steps` random enqueue / dequeue / time-advance operations. Every packet
/// handed back (rejected, dropped at dequeue, or dequeued) must be one that is currently queued
/// (or the arriving one), exactly once; at the end the queue is drained and every packet is
/// accounted for. `tick` is called after every time advance (hosts' timer hook).
pub fn random_ops<Q: Qdisc<TP>>(
    q: &mut Q,
    rng: &mut Rng,
    steps: usize,
    mut tick: impl FnMut(&mut Q, Instant),
) {
    let mut now = Instant::ZERO;
    let mut inside: BTreeSet<u64> = BTreeSet::new();
    let mut sent_ecn: BTreeMap<u64, Ecn> = BTreeMap::new();
    let mut next_id = 0u64;
    let p_enq = 0.3 + 0.5 * rng.next_f64();
    let nflows = 1 + rng.gen_range_inclusive(12) as u32;
    for _ in 0..steps {
        let r = rng.next_f64();
        if r < 0.15 {
            // Advance time: mostly small steps, sometimes a long idle gap.
            let dt = if rng.bernoulli(0.02) {
                rng.gen_range_inclusive(3_000_000_000)
            } else {
                rng.gen_range_inclusive(2_000_000)
            };
            now = Instant(now.0 + dt);
            tick(q, now);
        } else if r < 0.15 + 0.85 * p_enq {
            let pkt = TP {
                len: 40 + rng.gen_range_inclusive(1460) as u32,
                flow: rng.gen_range_inclusive(nflows as u64) as u32,
                id: next_id,
                ecn: Ecn::from_bits(rng.gen_range_inclusive(3) as u8),
            };
            next_id += 1;
            inside.insert(pkt.id);
            sent_ecn.insert(pkt.id, pkt.ecn);
            if let Err(victim) = q.enqueue(now, pkt) {
                assert!(inside.remove(&victim.id), "rejected unknown packet");
            }
        } else {
            let mut dropped = alloc::vec::Vec::new();
            let out = q.dequeue(now, |p| dropped.push(p));
            for d in dropped {
                assert!(inside.remove(&d.id), "dropped unknown packet");
            }
            if let Some(p) = out {
                assert!(inside.remove(&p.id), "dequeued unknown packet");
                check_ecn(sent_ecn[&p.id], p.ecn);
            }
        }
        q.invariants().unwrap();
        assert_eq!(q.len_packets(), inside.len());
        if let Some(h) = q.peek() {
            assert!(inside.contains(&h.id));
        }
    }
    // Drain.
    let mut guard = 0;
    while !q.is_empty() {
        guard += 1;
        assert!(guard < 1_000_000, "drain does not terminate");
        let mut dropped = alloc::vec::Vec::new();
        let out = q.dequeue(now, |p| dropped.push(p));
        for d in dropped {
            assert!(inside.remove(&d.id));
        }
        if let Some(p) = out {
            assert!(inside.remove(&p.id));
            check_ecn(sent_ecn[&p.id], p.ecn);
        }
        q.invariants().unwrap();
    }
    assert!(inside.is_empty());
    assert_eq!(q.len_bytes(), 0);
    let s = q.stats();
    assert_eq!(s.arrived, next_id);
}

/// A queue may only turn an ECN-capable packet into CE.
pub fn check_ecn(sent: Ecn, out: Ecn) {
    assert!(out == sent || (sent.is_capable() && out == Ecn::Ce), "ECN field {sent:?} came out as {out:?}");
}
