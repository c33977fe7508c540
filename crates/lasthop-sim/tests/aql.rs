//! Latency under load at a mac80211-style AP (Høiland-Jørgensen et al., "Ending the Anomaly",
//! USENIX ATC 2017, and the airtime queue limit that followed it in Linux 5.5): a bulk TCP
//! CUBIC download to one station and pings to it and to an idle second station, over 802.11n.
//! With a firmware queue below mac80211 and no AQL, frames wait in the firmware whatever the
//! scheduler above it does; AQL keeps that queue to a few milliseconds of airtime so FQ-CoDel
//! and airtime fairness act again.

mod common;
use common::*;
use serde_json::{json, Value};

const SECS: u64 = 8;

fn cell(driver: &str, qdisc: &str, sched: &str, aql: bool) -> Value {
    let mut s = base("ht", 40, 400);
    s["sim"]["duration_ns"] = json!(SECS * 1_000_000_000);
    s["sim"]["warmup_ns"] = json!(2_000_000_000u64);
    s["wired"]["delay_ns"] = json!(5_000_000u64);
    s["ap"] = json!({"queue_limit": 1000, "scheduler": sched, "qdisc": qdisc, "driver": driver,
                     "hw_queue_limit": 1024, "aql": aql, "aql_limit_low_ns": 5_000_000u64,
                     "aql_limit_high_ns": 12_000_000u64, "aql_threshold_ns": 24_000_000u64});
    s["stations"] = json!([station(7, 2), station(7, 2)]);
    let stop = SECS * 1_000_000_000;
    let ping = |sta: u32| json!({"station": sta, "direction": "down", "pattern": "ping", "rate_bps": 84 * 8 * 10,
                                 "packet_size": 84, "start_ns": 0, "stop_ns": stop});
    s["flows"] = json!([
        {"station": 0, "direction": "down", "pattern": "tcp", "rate_bps": 0, "packet_size": 1500,
         "start_ns": 0, "stop_ns": stop, "cc": "cubic", "bytes": 0, "pacing": null, "hystart": true, "extra_acked": true},
        ping(0),
        ping(1),
    ]);
    s
}

fn ms(d: &Value, f: usize, q: &str) -> f64 {
    d["flows"][f]["delay_ns"][q].as_f64().unwrap() / 1e6
}

#[test]
fn aql_restores_low_latency_under_a_firmware_queue() {
    let cases = [
        ("pull", "fifo", "round_robin", false),
        ("pull", "fq_codel", "airtime", false),
        ("firmware", "fifo", "round_robin", false),
        ("firmware", "fq_codel", "airtime", false),
        ("firmware", "fq_codel", "airtime", true),
    ];
    let mut r = Vec::new();
    for (driver, qdisc, sched, aql) in cases {
        let d = run(&cell(driver, qdisc, sched, aql), 1);
        let g = d["flows"][0]["goodput_bps"].as_f64().unwrap() / 1e6;
        eprintln!("{driver:8} {qdisc:8} {sched:11} aql={aql:5}: bulk {g:6.1} Mb/s; ping same station p50/p95 {:7.1}/{:7.1} ms, \
                   other station {:7.1}/{:7.1} ms", ms(&d, 1, "p50"), ms(&d, 1, "p95"), ms(&d, 2, "p50"), ms(&d, 2, "p95"));
        r.push((g, ms(&d, 1, "p95"), ms(&d, 2, "p95")));
    }
    let (fifo_pull, fq_pull, fifo_fw, fq_fw, fq_aql) = (r[0], r[1], r[2], r[3], r[4]);
    // Queueing delay: the RTT above the 10 ms wired base.
    let q = |x: f64| x - 10.0;
    // Without AQL the firmware queue holds the latency whatever runs above it.
    assert!(q(fq_fw.1) > 3.0 * q(fq_pull.1), "{r:?}");
    // AQL brings FQ-CoDel's latency back to tens of ms, well below FIFO's.
    assert!(fq_aql.1 < 50.0 && fq_aql.2 < 50.0, "{r:?}");
    assert!(q(fq_aql.1) * 2.0 < q(fq_fw.1), "{r:?}");
    assert!(q(fq_aql.1) * 4.0 < q(fifo_fw.1), "{r:?}");
    assert!(q(fq_aql.1) < q(fifo_pull.1), "{r:?}");
    // A station with no backlog of its own waits for little more than the 10 ms wired RTT, an
    // exchange or two and its own backoff (p95 < 30 ms), except over a full
    // firmware FIFO without AQL: there its ping waits for room, which ath10k's push path hands
    // to whichever station heads mac80211's list at the next wake (the latency AQL was made to
    // remove).
    assert!(r.iter().enumerate().all(|(i, x)| i == 2 || x.2 < 30.0), "{r:?}");
    assert!(fifo_fw.2 > fq_aql.2, "{r:?}");
    // At little cost in goodput.
    assert!(fq_aql.0 > 0.9 * fifo_pull.0, "{r:?}");
}
