//! The medium's lazy countdown against the rule it replaces: every contender frozen at every
//! busy period (IEEE 802.11-2020 §10.23.2.4, `Edcaf::freeze`), every reference set at every
//! idle period. Random cells (AIFSN 1, 2, 3, 7; owners with several ACs; contenders added
//! mid-run), random readiness, collisions, internal collisions, EIFS deferral with the
//! transmitters' siblings exempt, Ack timeouts: the access instants, the outcomes and every
//! contender's counter and reference must be the same at every step.

use lasthop_core::{Duration, Instant, Rng};
use lasthop_wifi::mac::edca::{EdcaParams, Edcaf, SlotTiming};
use lasthop_wifi::mac::medium::{AccessOutcome, ContenderId, Medium};
use proptest::prelude::*;

/// The eager medium: what `Medium` did before it was lazy, written out plainly.
struct Naive {
    timing: SlotTiming,
    cca: Duration,
    c: Vec<(Edcaf, u32, u8, bool, Instant)>, // edcaf, owner, priority, ready, ready_since
}

impl Naive {
    fn next_access(&self) -> Option<Instant> {
        self.c.iter().filter(|c| c.3).map(|c| c.0.access_time(&self.timing, c.4)).min()
    }
    fn start_access(&mut self, now: Instant) -> AccessOutcome {
        let horizon = now + self.cca;
        let mut out = AccessOutcome::default();
        for (i, c) in self.c.iter().enumerate() {
            if c.3 && c.0.access_time(&self.timing, c.4) < horizon {
                out.transmitters.push(ContenderId(i as u32));
            }
        }
        if out.transmitters.len() > 1 {
            let mut keep = vec![];
            for &id in &out.transmitters {
                let c = &self.c[id.0 as usize];
                let beaten = out.transmitters.iter().any(|&o| {
                    let oc = &self.c[o.0 as usize];
                    o != id && oc.1 == c.1 && (oc.2 > c.2 || (oc.2 == c.2 && o < id))
                });
                if beaten {
                    out.internal_losers.push(id)
                } else {
                    keep.push(id)
                }
            }
            out.transmitters = keep;
        }
        for (i, c) in self.c.iter_mut().enumerate() {
            let id = ContenderId(i as u32);
            if !out.transmitters.contains(&id) && !out.internal_losers.contains(&id) {
                c.0.freeze(&self.timing, now);
            }
        }
        out
    }
}

#[derive(Clone, Debug)]
enum Op {
    Ready(usize),
    NotReady(usize),
    /// Let the medium run one access (if anyone is ready): exchange length in µs, whether the
    /// bystanders defer EIFS, per transmitter success, whether it stays ready, Ack timeout.
    Access { len_us: u64, eifs: bool, success: Vec<bool>, stay: Vec<bool>, ack_timeout: bool },
    /// Time passes with nobody ready (µs).
    Idle(u64),
    /// A contender joins now, counting from now (a flow in a new AC).
    Join { aifsn: u32, owner: u32 },
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        4 => (0usize..64).prop_map(Op::Ready),
        2 => (0usize..64).prop_map(Op::NotReady),
        6 => (1u64..6000, any::<bool>(), prop::collection::vec(any::<bool>(), 4), prop::collection::vec(any::<bool>(), 4), any::<bool>())
            .prop_map(|(len_us, eifs, success, stay, ack_timeout)| Op::Access { len_us, eifs, success, stay, ack_timeout }),
        1 => (1u64..2000).prop_map(Op::Idle),
        1 => (prop::sample::select(vec![1u32, 2, 3, 7]), 0u32..6).prop_map(|(aifsn, owner)| Op::Join { aifsn, owner }),
    ]
}

fn check(m: &Medium, n: &Naive) -> Result<(), TestCaseError> {
    prop_assert_eq!(m.next_access(), n.next_access());
    for (i, c) in n.c.iter().enumerate() {
        let id = ContenderId(i as u32);
        prop_assert_eq!(m.backoff(id), c.0.backoff(), "backoff of {}", i);
        prop_assert_eq!(m.ref_time(id), c.0.ref_time(), "reference of {}", i);
        prop_assert_eq!(m.get(id).cw(), c.0.cw(), "cw of {}", i);
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 400, ..ProptestConfig::default() })]

    #[test]
    fn lazy_countdown_equals_freezing_everyone(
        cell in prop::collection::vec((prop::sample::select(vec![1u32, 2, 3, 7]), 0u32..6, 0u8..4, 0u32..64), 1..24),
        ops in prop::collection::vec(op(), 1..200),
        seed in any::<u64>(),
    ) {
        let timing = SlotTiming { slot: Duration::from_micros(9), sifs: Duration::from_micros(16) };
        let cca = Duration::from_micros(4);
        let eifs_extra = Duration::from_micros(60);
        let mut m = Medium::new(timing, cca);
        let mut n = Naive { timing, cca, c: vec![] };
        let mut k = 0u64;
        let mut mk = |aifsn: u32, cw: u32| {
            k += 1;
            Edcaf::new(EdcaParams { cw_min: cw.min(15), cw_max: cw.max(15), aifsn }, Rng::from_seed(seed ^ k))
        };
        for &(aifsn, owner, prio, cw) in &cell {
            let e = mk(aifsn, cw);
            m.add(e.clone(), owner, prio);
            n.c.push((e, owner, prio, false, Instant::ZERO));
        }
        m.set_idle(Instant::ZERO);
        for c in &mut n.c { c.0.set_ref(Instant::ZERO); }
        let mut now = Instant::ZERO;
        for o in ops {
            let len = n.c.len();
            match o {
                Op::Ready(i) => {
                    let i = i % len;
                    let id = ContenderId(i as u32);
                    let was = n.c[i].3;
                    prop_assert_eq!(m.set_ready(id, now), !was);
                    if !was { n.c[i].3 = true; n.c[i].4 = now; }
                    prop_assert_eq!(m.access_time_of(id), Some(n.c[i].0.access_time(&timing, n.c[i].4)));
                }
                Op::NotReady(i) => {
                    let i = i % len;
                    m.set_not_ready(ContenderId(i as u32));
                    n.c[i].3 = false;
                }
                Op::Idle(us) => {
                    if n.next_access().is_none() { now += Duration::from_micros(us); }
                }
                Op::Join { aifsn, owner } => {
                    let mut e = mk(aifsn, 15);
                    e.set_ref(now);
                    m.add(e.clone(), owner, 1);
                    n.c.push((e, owner, 1, false, Instant::ZERO));
                }
                Op::Access { len_us, eifs, success, stay, ack_timeout } => {
                    let Some(t) = n.next_access() else { continue };
                    prop_assert_eq!(m.next_access(), Some(t));
                    now = t;
                    let out = m.start_access(now);
                    let out_n = n.start_access(now);
                    prop_assert_eq!(&out, &out_n);
                    for &c in &out.internal_losers {
                        m.edcaf_mut(c).on_failure(7);
                        n.c[c.0 as usize].0.on_failure(7);
                    }
                    let end = now + Duration::from_micros(len_us);
                    m.set_idle(end);
                    for c in &mut n.c { c.0.set_ref(end); }
                    if eifs {
                        // The transmitters and their owners' other contenders are exempt.
                        let owners: Vec<u32> = out.transmitters.iter().map(|&t| n.c[t.0 as usize].1).collect();
                        let exempt: Vec<ContenderId> = (0..n.c.len() as u32).map(ContenderId)
                            .filter(|&id| out.transmitters.contains(&id) || owners.contains(&n.c[id.0 as usize].1)).collect();
                        m.defer_bystanders(end + eifs_extra, &exempt);
                        for (i, c) in n.c.iter_mut().enumerate() {
                            if !exempt.contains(&ContenderId(i as u32)) { c.0.set_ref(end + eifs_extra); }
                        }
                    }
                    for (j, &tx) in out.transmitters.iter().enumerate() {
                        let ok = success[j % 4] && out.transmitters.len() == 1;
                        let i = tx.0 as usize;
                        if ok { m.edcaf_mut(tx).on_success(); n.c[i].0.on_success(); }
                        else { m.edcaf_mut(tx).on_failure(7); n.c[i].0.on_failure(7); }
                        if !stay[j % 4] { m.set_not_ready(tx); n.c[i].3 = false; }
                        if !ok && ack_timeout {
                            let r = end + Duration::from_micros(25);
                            m.set_ref(tx, r);
                            n.c[i].0.set_ref(r);
                        }
                    }
                    now = end;
                }
            }
            check(&m, &n)?;
        }
    }
}
