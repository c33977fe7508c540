use super::*;

#[derive(Clone, Copy, Debug, PartialEq)]
struct P(u32);
impl QueuedPacket for P {
    fn len_bytes(&self) -> u32 {
        1500
    }
}

fn put(t: &mut TxqSet<P>, now: Instant, sta: u32, p: P) {
    assert!(t.enqueue(now, sta, p, |d| panic!("{d:?} dropped")));
}

#[test]
fn round_robin_and_total_limit() {
    let mut t = TxqSet::new(3, 4, AqmConfig::default(), 1, TxqSchedule::RoundRobin);
    let now = Instant::ZERO;
    put(&mut t, now, 2, P(20));
    put(&mut t, now, 0, P(0));
    put(&mut t, now, 0, P(1));
    put(&mut t, now, 1, P(10));
    let mut d = Vec::new();
    assert!(!t.enqueue(now, 1, P(11), |x| d.push(x)));
    assert_eq!(d, [P(11)], "FIFO: the arrival is refused at the total limit");
    let mut order = Vec::new();
    while let Some(s) = t.next_txq() {
        let p = t.tx_dequeue(now, s, |_| unreachable!("FIFO drops on arrival only"));
        order.push((s, p));
        t.return_txq(s, false);
        t.invariants().unwrap();
    }
    assert_eq!(order, vec![(2, Some(P(20))), (0, Some(P(0))), (1, Some(P(10))), (0, Some(P(1)))]);
    assert_eq!(t.total_len(), 0);
}

/// Airtime DRR: a station that used more airtime waits until the others caught up.
#[test]
fn ineligible_stations_are_passed_over() {
    for schedule in [TxqSchedule::RoundRobin, TxqSchedule::Airtime { quantum: TxqSchedule::AIRTIME_QUANTUM }] {
        let mut t = TxqSet::new(3, 100, AqmConfig::default(), 1, schedule);
        let now = Instant::ZERO;
        for s in 0..3 {
            put(&mut t, now, s, P(s));
        }
        // Station 0 is blocked (say by its airtime queue limit): 1 is served, and 0 moves back.
        assert_eq!(t.next_txq_where(|s| s != 0), Some(1));
        assert_eq!(t.next_txq_where(|s| s != 0), Some(1), "the served station keeps the head");
        t.register_airtime(1, Duration::from_millis(1));
        // Nobody eligible: a full pass, then None (not a loop).
        assert_eq!(t.next_txq_where(|_| false), None);
        // 2 is next among the eligible; 1 is in deficit under airtime scheduling.
        let n = t.next_txq_where(|s| s != 0);
        match schedule {
            TxqSchedule::RoundRobin => assert_eq!(n, Some(1)),
            TxqSchedule::Airtime { .. } => assert_eq!(n, Some(2)),
        }
        assert_eq!(t.next_txq_where(|_| true).map(|s| s < 3), Some(true));
    }
}

#[test]
fn airtime_deficit_round_robin() {
    let q = TxqSchedule::AIRTIME_QUANTUM;
    let mut t = TxqSet::new(2, 1000, AqmConfig::default(), 1, TxqSchedule::Airtime { quantum: q });
    let now = Instant::ZERO;
    for i in 0..400 {
        put(&mut t, now, 0, P(i));
        put(&mut t, now, 1, P(100 + i));
    }
    // Station 0 sends long frames (4 quanta each), station 1 short ones (1/4 quantum).
    let mut air = [Duration::ZERO; 2];
    for _ in 0..400 {
        let s = t.next_txq().unwrap();
        t.tx_dequeue(now, s, |_| {});
        let used = if s == 0 { q * 4 } else { q / 4 };
        t.register_airtime(s, used);
        air[s as usize] += used;
        t.return_txq(s, false);
        t.invariants().unwrap();
    }
    let (a, b) = (air[0].as_nanos() as f64, air[1].as_nanos() as f64);
    // Equal airtime within one long frame, although station 1 needed 16 turns per turn of
    // station 0 (round-robin would give station 0 16 times the airtime).
    assert!((a - b).abs() <= (q * 4).as_nanos() as f64, "airtime {air:?}");
}

/// mac80211's per-station airtime weight: backlogged stations share the airtime in proportion to
/// their weights (station 1 at 3 × 256 µs gets three times station 0's airtime), whatever their
/// frames' lengths; round robin ignores the weights.
#[test]
fn airtime_weights_set_the_stations_shares() {
    let q = TxqSchedule::AIRTIME_QUANTUM;
    for schedule in [TxqSchedule::Airtime { quantum: q }, TxqSchedule::RoundRobin] {
        let mut t = TxqSet::new(2, 1000, AqmConfig::default(), 1, schedule);
        t.set_airtime_weight(1, q * 3);
        let now = Instant::ZERO;
        for i in 0..490 {
            put(&mut t, now, 0, P(i));
            put(&mut t, now, 1, P(1000 + i));
        }
        let mut air = [Duration::ZERO; 2];
        let mut turns = [0u32; 2];
        for _ in 0..300 {
            let s = t.next_txq().unwrap();
            t.tx_dequeue(now, s, |_| {});
            // Station 0's frames take 2 quanta, station 1's half of one.
            let used = if s == 0 { q * 2 } else { q / 2 };
            t.register_airtime(s, used);
            air[s as usize] += used;
            turns[s as usize] += 1;
            t.return_txq(s, false);
            t.invariants().unwrap();
        }
        let (a, b) = (air[0].as_nanos() as f64, air[1].as_nanos() as f64);
        match schedule {
            // Three times within a long frame of station 0's turn.
            TxqSchedule::Airtime { .. } => assert!(a > 0.0 && (b - 3.0 * a).abs() <= 3.0 * (q * 2).as_nanos() as f64, "airtime {air:?}"),
            TxqSchedule::RoundRobin => assert_eq!(turns[0], turns[1]),
        }
    }
}

/// A packet handle of a given size and flow, for the shared-limit property.
#[derive(Clone, Copy, Debug, PartialEq)]
struct Q {
    id: u64,
    len: u32,
    flow: u32,
}
impl QueuedPacket for Q {
    fn len_bytes(&self) -> u32 {
        self.len
    }
    fn flow_hash(&self) -> u32 {
        self.flow
    }
}

/// Access categories over one radio's flow queue (mac80211's `local->fq`): one limit for
/// all of them, the fattest flow of any AC dropped, and a queue emptied that way reported
/// so the caller can take its station off the other AC's service list.
#[test]
fn access_categories_share_one_flow_queue() {
    let now = Instant::ZERO;
    let fq = TxqSet::<Q>::shared_fq(2, 2, 10, 7, MacFqConfig::default());
    let mut be = TxqSet::on_shared_fq(2, 0, &fq, TxqSchedule::RoundRobin);
    let mut vi = TxqSet::on_shared_fq(2, 1, &fq, TxqSchedule::RoundRobin);
    // VI: one 1500-byte frame for station 1; BE: small frames of many flows for station 0.
    assert!(vi.enqueue(now, 1, Q { id: 0, len: 1500, flow: 99 }, |d| panic!("{d:?}")));
    assert!(vi.has_active() && vi.len(1) == 1 && vi.total_len() == 1);
    let mut drops = Vec::new();
    for i in 1..=10 {
        assert!(be.enqueue(now, 0, Q { id: i, len: 100, flow: 1000 + i as u32 * 7919 }, |d| drops.push(d.id)));
        if i < 10 {
            assert!(be.emptied().next().is_none());
        }
    }
    // The eleventh packet is over the shared limit of 10: the fattest flow is VI's.
    assert_eq!(drops, [0], "the fattest flow of any AC is dropped");
    assert_eq!(be.emptied().collect::<Vec<_>>(), [(1, 1)], "VI's station 1 is now empty");
    assert_eq!((be.total_len(), vi.total_len(), vi.len(1)), (10, 0, 0));
    assert_eq!((be.room(), vi.room()), (0, 0), "one limit for both");
    assert_eq!((be.dropped_total_limit(), vi.dropped_total_limit()), (0, 1), "counted in the dropped flow's set");
    assert_eq!(vi.sta_drops(1), 1);
    be.invariants().unwrap();
    vi.invariants().unwrap();
    // mac80211 finds nothing at VI's next turn and unschedules the txq.
    vi.return_txq(1, false);
    assert!(!vi.has_active());
    // One set alone over a table of its own is the same as before.
    let mut own = TxqSet::<Q>::new(2, 10, AqmConfig::FqCodel(Default::default()), 7, TxqSchedule::RoundRobin);
    for i in 0..12 {
        own.enqueue(now, 0, Q { id: i, len: 100, flow: i as u32 }, |_| {});
    }
    assert_eq!(own.total_len(), 10);
    own.invariants().unwrap();
}

/// Under mac80211's FQ-CoDel, a station sending below its fair share loses nothing to the
/// AP-wide limit while another station overloads it: the overflow is taken from the
/// fattest flow. Random station counts, limits, packet sizes, offered loads and service
/// orders; a FIFO `txqueuelen` (the same limit, tail drop) fails the same property.
#[test]
fn light_stations_lose_nothing_to_the_shared_limit() {
    let mut rng = lasthop_core::Rng::from_seed(0x24);
    let mut fifo_light_losses = 0u64;
    for case in 0..200u64 {
        let n = 2 + rng.gen_range_inclusive(10) as usize;
        let light = n - 1;
        let limit = light + 2 + rng.gen_range_inclusive(200) as usize;
        let burst = 2 + rng.gen_range_inclusive(40);
        let sched = if case % 2 == 0 { TxqSchedule::RoundRobin } else { TxqSchedule::Airtime { quantum: TxqSchedule::AIRTIME_QUANTUM } };
        for fq in [true, false] {
            let aqm = if fq { AqmConfig::FqCodel(Default::default()) } else { AqmConfig::default() };
            let mut t: TxqSet<Q> = TxqSet::new(n, limit, aqm, case, sched);
            let mut id = 0;
            let mut light_lost = 0;
            let mut heavy_lost = 0;
            let now = Instant::ZERO; // CoDel never drops: only the limit can
            for _ in 0..400 {
                // The heavy station (0) offers a burst of full-size packets per turn.
                for _ in 0..burst {
                    id += 1;
                    t.enqueue(now, 0, Q { id, len: 1500, flow: 1 }, |d| if d.flow == 1 { heavy_lost += 1 } else { light_lost += 1 });
                }
                // Each light station offers at most one packet when its queue is empty:
                // below its share of one aggregate per turn.
                for s in 1..n as u32 {
                    if t.len(s) == 0 && rng.bernoulli(0.7) {
                        id += 1;
                        let len = 60 + rng.gen_range_inclusive(1440) as u32;
                        t.enqueue(now, s, Q { id, len, flow: 100 + s }, |d| if d.flow == 1 { heavy_lost += 1 } else { light_lost += 1 });
                    }
                }
                // One station turn of service, up to 4 frames.
                if let Some(s) = t.next_txq() {
                    for _ in 0..4 {
                        if t.tx_dequeue(now, s, |_| {}).is_none() {
                            break;
                        }
                    }
                    t.register_airtime(s, Duration::from_micros(100 + rng.gen_range_inclusive(900)));
                    t.return_txq(s, false);
                }
                t.invariants().unwrap();
            }
            assert!(heavy_lost > 0, "case {case}: the heavy station must overload the limit");
            if fq {
                assert_eq!(light_lost, 0, "case {case}: n={n} limit={limit} burst={burst}");
            } else {
                fifo_light_losses += light_lost;
            }
        }
    }
    assert!(fifo_light_losses > 0, "the old tail-drop limit would fail this property");
}

/// The pre-4.10 ath9k stage: the queues above hold what the driver has no room for (123
/// frames), so a txqueuelen of 1 still leaves 123 frames queued; frames keep their order
/// per station and every arrival is accounted.
#[test]
fn ath9k_stage_holds_max_qdepth_frames_below_the_queues() {
    let now = Instant::ZERO;
    let mut t: TxqSet<P> = TxqSet::new(2, 1000, AqmConfig::default(), 1, TxqSchedule::RoundRobin).with_ath9k_stage();
    for i in 0..300 {
        put(&mut t, now, i % 2, P(i));
    }
    assert_eq!(t.stage_len(), 123);
    assert_eq!(t.total_len(), 300 - 123, "the qdisc holds the rest");
    assert_eq!(t.backlog(0) + t.backlog(1), 300);
    t.invariants().unwrap();
    // A buffer sizer shrinks the qdisc to one packet: the driver still holds 123 frames.
    t.set_total_limit(1);
    let mut out = Vec::new();
    while let Some(s) = t.next_txq() {
        while let Some(p) = t.tx_dequeue(now, s, |_| unreachable!("FIFO")) {
            out.push(p.0);
            if out.len() % 7 == 0 {
                break;
            }
        }
        t.return_txq(s, false);
        t.invariants().unwrap();
        if out.len() >= 300 {
            break;
        }
    }
    assert_eq!(out.len(), 300);
    for sta in 0..2 {
        let mine: Vec<u32> = out.iter().copied().filter(|x| x % 2 == sta).collect();
        assert!(mine.windows(2).all(|w| w[0] < w[1]), "per-station order kept");
    }
    assert_eq!(t.stage_len() + t.total_len(), 0);
    // Arrivals are refused at the qdisc's limit, never at the stage's.
    let mut t: TxqSet<P> = TxqSet::new(1, 1, AqmConfig::default(), 1, TxqSchedule::RoundRobin).with_ath9k_stage();
    for i in 0..124 {
        put(&mut t, now, 0, P(i));
    }
    assert_eq!((t.stage_len(), t.total_len()), (123, 1));
    let mut d = Vec::new();
    assert!(!t.enqueue(now, 0, P(999), |x| d.push(x)));
    assert_eq!(d, [P(999)]);
}

/// A stage of another depth (`ap.ath9k_qdepth`) holds that many frames, taken as the default's
/// are: 500 below a qdisc of 1000 leaves the qdisc 300 of 800 arrivals.
#[test]
fn ath9k_stage_of_another_depth_holds_that_many() {
    let now = Instant::ZERO;
    let mut t: TxqSet<P> = TxqSet::new(3, 1000, AqmConfig::default(), 1, TxqSchedule::RoundRobin);
    t.add_ath9k_stage(500);
    for i in 0..800 {
        put(&mut t, now, i % 3, P(i));
    }
    assert_eq!((t.stage_len(), t.total_len()), (500, 300));
    t.invariants().unwrap();
}

/// PIE's departure-rate state after the ath9k stage's refill burst: 300 frames arrive at 0
/// (the stage takes 123, one dequeue per arrival), then an aggregate takes 40 frames from
/// the stage at 1 ms and the stage refills 40 from the qdisc.
fn pie_after_refill_burst(cost: Duration) -> lasthop_algo::aqm::pie::dq_rate::DqRate {
    use lasthop_algo::aqm::{PieConfig, PieEstimator};
    let pie = AqmConfig::Pie(PieConfig { estimator: PieEstimator::DequeueRate, ..Default::default() });
    let mut t: TxqSet<P> = TxqSet::new(1, 1000, pie, 1, TxqSchedule::RoundRobin).with_ath9k_stage();
    t.set_dequeue_cost(cost);
    for i in 0..300 {
        put(&mut t, Instant::ZERO, 0, P(i));
    }
    let now = Instant::ZERO + Duration::from_millis(1);
    for i in 0..40 {
        assert_eq!(t.tx_dequeue(now, 0, |_| unreachable!("no early drop at dequeue")), Some(P(i)));
    }
    t.invariants().unwrap();
    let Queues::PerStation(q) = &t.queues else { unreachable!() };
    let AnyQdisc::Pie(p) = &q[0] else { unreachable!() };
    p.vars().dq_rate
}

/// The host's transmit path: the frames a burst takes from a discipline leave it `cost`
/// apart — PIE's departure-rate estimator saw exactly the instants 1 ms + k · 2 µs, so its
/// 10 000-byte cycles close inside the burst and measure the host's pace — while
/// without a cost the whole burst leaves at 1 ms and no cycle can close.
#[test]
fn a_refill_burst_is_dequeued_a_transmit_path_time_apart() {
    use lasthop_algo::aqm::pie::dq_rate::DqRate;
    let d = Duration::from_micros(2);
    let at_1ms = Instant::ZERO + Duration::from_millis(1);
    // The arrivals at 0 were dequeued 0, 2, …, 244 µs, with at most one frame queued (no
    // cycle opens); 177 frames stayed queued, and the burst takes 40 of them.
    let expect = |gap: Duration| {
        let mut e = DqRate::default();
        for k in 0..40u64 {
            e.on_dequeue(at_1ms + gap * k, 1500, (176 - k) * 1500);
        }
        e
    };
    let spaced = pie_after_refill_burst(d);
    assert_eq!(spaced, expect(d));
    // 1500 bytes per 2 µs is 750 MB/s; the first cycle counts the departure that opened it
    // (7 frames over 6 gaps, 875 MB/s), and the average has moved 1/8 of the way per cycle
    // since.
    let rate = spaced.rate_bytes_per_sec();
    assert!((740e6..880e6).contains(&rate), "measured {rate:.3e} B/s");
    let at_once = pie_after_refill_burst(Duration::ZERO);
    assert_eq!(at_once, expect(Duration::ZERO));
    assert!(!at_once.has_estimate(), "a burst at one instant closes no cycle");
}

/// A zero transmit-path time changes nothing: random arrivals, aggregates and limits over
/// CoDel and PIE (both estimates), with and without the ath9k stage, give the same frames,
/// drops and discipline state as a set that was never given a cost.
#[test]
fn zero_dequeue_cost_changes_nothing() {
    use lasthop_algo::aqm::{CodelConfig, PieConfig, PieEstimator};
    let mut rng = lasthop_core::Rng::from_seed(0xdc);
    let aqms = [
        AqmConfig::Codel(CodelConfig::default()),
        AqmConfig::Pie(PieConfig::default()),
        AqmConfig::Pie(PieConfig { estimator: PieEstimator::DequeueRate, ..Default::default() }),
    ];
    for case in 0..24u64 {
        let aqm = aqms[case as usize % 3];
        let stage = case % 2 == 0;
        let make = |zero: bool| {
            let mut t: TxqSet<Q> = TxqSet::new(3, 200, aqm, case, TxqSchedule::RoundRobin);
            if stage {
                t.add_ath9k_stage(ATH_MAX_QDEPTH);
            }
            if zero {
                t.set_dequeue_cost(Duration::ZERO);
            }
            t
        };
        let (mut a, mut b) = (make(false), make(true));
        let (mut log_a, mut log_b) = (Vec::new(), Vec::new());
        let mut now = Instant::ZERO;
        let mut id = 0;
        for _ in 0..3000 {
            now += Duration::from_micros(rng.gen_range_inclusive(400));
            if rng.bernoulli(0.6) {
                id += 1;
                let p = Q { id, len: 1500, flow: id as u32 % 3 };
                let sta = rng.gen_range_inclusive(2) as u32;
                let ka = a.enqueue(now, sta, p, |d| log_a.push(d.id));
                let kb = b.enqueue(now, sta, p, |d| log_b.push(d.id));
                assert_eq!(ka, kb);
            } else {
                let sta = a.next_txq();
                assert_eq!(sta, b.next_txq());
                let Some(sta) = sta else { continue };
                for _ in 0..rng.gen_range_inclusive(40) {
                    let pa = a.tx_dequeue(now, sta, |d| log_a.push(d.id));
                    let pb = b.tx_dequeue(now, sta, |d| log_b.push(d.id));
                    assert_eq!(pa, pb);
                    log_a.extend(pa.map(|p| p.id));
                    log_b.extend(pb.map(|p| p.id));
                }
                a.return_txq(sta, false);
                b.return_txq(sta, false);
            }
        }
        assert_eq!(log_a, log_b, "case {case}");
        let (Queues::PerStation(qa), Queues::PerStation(qb)) = (&a.queues, &b.queues) else { unreachable!() };
        for (x, y) in qa.iter().zip(qb) {
            match (x, y) {
                (AnyQdisc::Pie(x), AnyQdisc::Pie(y)) => assert_eq!(x.vars(), y.vars()),
                (AnyQdisc::Codel(x), AnyQdisc::Codel(y)) => assert_eq!(x.vars(), y.vars()),
                _ => unreachable!(),
            }
            assert_eq!(x.stats(), y.stats());
        }
    }
}

/// One qdisc for the interface (`ap.qdisc_scope = "interface"`, Linux before mac80211's
/// per-station queues): the driver stage takes frames in the qdisc's arrival order, whatever
/// their next hop, so a light station's frame waits behind the heavy one's queued before it;
/// with one qdisc per station the stage takes the stations in turn and it goes first.
#[test]
fn an_interface_qdisc_hands_frames_down_in_arrival_order() {
    let now = Instant::ZERO;
    let run = |interface: bool| {
        let mut t: TxqSet<P> = TxqSet::new(2, 100, AqmConfig::default(), 1, TxqSchedule::RoundRobin);
        t.add_ath9k_stage(2);
        if interface {
            t.one_qdisc_per_interface();
        }
        // Station 0's bulk (0..6), then station 1's one frame (100).
        for i in 0..6 {
            put(&mut t, now, 0, P(i));
        }
        put(&mut t, now, 1, P(100));
        t.invariants().unwrap();
        assert_eq!((t.stage_len(), t.total_len(), t.backlog(1)), (2, 5, 1));
        // Queued above the stage: four of station 0's, and station 1's.
        assert_eq!((t.sta_backlog_bytes(0), t.sta_backlog_bytes(1)), (6000, 1500));
        // The driver sends station 0's frames one by one; when does station 1's reach the stage?
        let mut sent = 0;
        while t.len(1) == 0 {
            assert!(t.tx_dequeue(now, 0, |_| unreachable!("FIFO drops on arrival only")).is_some());
            sent += 1;
            t.invariants().unwrap();
        }
        sent
    };
    assert_eq!(run(false), 1, "per station: the stage takes station 1's frame at its next turn");
    assert_eq!(run(true), 5, "per interface: after the four of station 0's queued before it");
}

/// CoDel over the interface qdisc drops at its head whatever the next hop: every drop is
/// charged to its own station, and the per-station counts stay those of what is queued.
#[test]
fn an_interface_codel_charges_each_drop_to_its_station() {
    let mut t: TxqSet<P> = TxqSet::new(2, 1000, AqmConfig::Codel(Default::default()), 1, TxqSchedule::RoundRobin);
    t.add_ath9k_stage(4);
    t.one_qdisc_per_interface();
    let mut dropped = Vec::new();
    // 400 frames alternate between the stations at t = 0; the stage drains one frame a
    // millisecond, so the sojourn stays far above CoDel's 5 ms target for seconds.
    for i in 0..400 {
        assert!(t.enqueue(Instant::ZERO, i % 2, P(i), |d| dropped.push(d)));
    }
    let mut sent = Vec::new();
    for ms in 1..=300u64 {
        let now = Instant::ZERO + Duration::from_millis(ms);
        let sta = (ms % 2) as u32;
        if let Some(p) = t.tx_dequeue(now, sta, |d| dropped.push(d)) {
            sent.push(p);
        }
        t.invariants().unwrap();
    }
    assert!(!dropped.is_empty(), "CoDel dropped");
    for sta in 0..2 {
        let mine = dropped.iter().filter(|p| p.0 % 2 == sta).count() as u64;
        assert_eq!(t.sta_drops(sta), mine, "station {sta}'s drops are its own packets");
    }
    assert_eq!(sent.len() + dropped.len() + t.stage_len() + t.total_len(), 400);
}
