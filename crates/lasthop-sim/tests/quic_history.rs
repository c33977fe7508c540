//! QUIC connection lifecycles and the history-based initial window ("Access Latency Reduction
//! in the QUIC Protocol Based on Communication History"): a flow of several connections, the
//! server recording its cwnd at close and at a 0-RTT client hello, and a new 1-RTT connection
//! starting with max(default, average). The path is the paper's simple topology: a 100 Mb/s
//! wired bottleneck to a station behind a fast 802.11ac AP.
mod common;
use common::*;
use serde_json::{json, Value};

const MB: u64 = 1_000_000;

/// 802.11ac 80 MHz, MCS 9 × 2 streams (866.7 Mb/s PHY: the 100 Mb/s wire is the bottleneck),
/// `one_way_ms` on the wire, random `loss` on it, a 300-packet wired queue.
fn path(secs: u64, one_way_ms: u64, loss: f64) -> Value {
    let mut s = base("vht", 80, 400);
    s["sim"]["duration_ns"] = json!(secs * 1_000_000_000);
    s["wired"] = json!({"rate_bps": 100_000_000u64, "delay_ns": one_way_ms * 1_000_000, "queue_limit": 300, "loss": loss});
    s["stations"] = json!([station(9, 2)]);
    s
}

fn flows(bytes: u64, connections: u32, history: &str, extra: Value, secs: u64) -> Value {
    let mut f = flow(0, "down", "quic", 0, 1378, secs * 1_000_000_000);
    f["bytes"] = json!(bytes);
    f["connections"] = json!(connections);
    f["idle_ns"] = json!(200_000_000u64);
    f["history"] = json!(history);
    for (k, v) in extra.as_object().unwrap() {
        f[k] = v.clone();
    }
    json!([f])
}

fn quic(out: &Value) -> &Value {
    &out["flows"][0]["quic"]
}

fn transfers(out: &Value) -> Vec<Value> {
    quic(out)["transfers"].as_array().expect("transfers with connections > 1").clone()
}

fn completion_ms(t: &Value) -> f64 {
    t["completion_ns"].as_u64().expect("transfer completed") as f64 / 1e6
}

const DEFAULT_IW: u64 = 10 * 1350;

#[test]
fn second_connection_starts_with_the_recorded_average_and_finishes_sooner() {
    let secs = 6;
    let mut s = path(secs, 19, 0.0);
    s["flows"] = flows(MB, 3, "mean", json!({}), secs);
    let with = run(&s, 1);
    let tr = transfers(&with);
    assert_eq!(tr.len(), 3, "{tr:?}");
    // The first connection knows no history: the default window.
    assert_eq!(tr[0]["initial_cwnd_bytes"], json!(DEFAULT_IW));
    // Idle (200 ms) is below the 30 s idle timeout: the client closed, the server recorded
    // its window then; the next 1-RTT connection starts with exactly that (one sample).
    assert_eq!(tr[0]["end"], json!("close"));
    let w0 = tr[0]["end_cwnd_bytes"].as_u64().unwrap();
    assert!(w0 > DEFAULT_IW, "{tr:?}");
    assert_eq!(tr[1]["initial_cwnd_bytes"].as_u64().unwrap(), w0);
    // The third uses the mean of the two recorded windows (rounded down).
    let w1 = tr[1]["end_cwnd_bytes"].as_u64().unwrap();
    assert_eq!(tr[2]["initial_cwnd_bytes"].as_u64().unwrap(), ((w0 + w1) / 2).max(DEFAULT_IW));
    let h = &quic(&with)["history"];
    assert_eq!((h["records_close"].as_u64(), h["hits"].as_u64()), (Some(3), Some(2)), "{h}");
    assert_eq!(h["records_zero_rtt"], json!(0));

    s["flows"] = flows(MB, 3, "none", json!({}), secs);
    let without = run(&s, 1);
    let tn = transfers(&without);
    assert!(tn.iter().all(|t| t["initial_cwnd_bytes"] == json!(DEFAULT_IW)), "{tn:?}");
    assert!(quic(&without).get("history").is_none());
    // The first transfers are identical (same start, no history yet); the second is faster
    // with history.
    assert_eq!(tr[0]["completion_ns"], tn[0]["completion_ns"]);
    let (a, b) = (completion_ms(&tr[1]), completion_ms(&tn[1]));
    eprintln!("1 MB, 38 ms RTT: second transfer {b:.0} ms without history, {a:.0} ms with");
    assert!(a < 0.85 * b, "with history {a} ms, without {b} ms");
    // The flow's completion_ns is still the first transfer's.
    assert_eq!(quic(&with)["completion_ns"], tr[0]["completion_ns"]);
}

#[test]
fn idle_timeout_close_is_recorded_as_such() {
    let secs = 8;
    let mut s = path(secs, 10, 0.0);
    s["flows"] = flows(MB, 2, "mean", json!({"idle_ns": 2_000_000_000u64, "idle_timeout_ns": 1_000_000_000u64}), secs);
    let out = run(&s, 1);
    let tr = transfers(&out);
    assert_eq!(tr[0]["end"], json!("idle_timeout"), "{tr:?}");
    assert_eq!(tr[1]["initial_cwnd_bytes"], tr[0]["end_cwnd_bytes"]);
    let h = &quic(&out)["history"];
    assert_eq!(h["records_idle_timeout"], json!(2), "{h}");
}

#[test]
fn on_a_bad_path_the_default_window_wins() {
    // 188 ms RTT and 8 % random loss: the window at close stays below the default.
    let secs = 40;
    let mut s = path(secs, 94, 0.08);
    s["flows"] = flows(MB, 3, "mean", json!({}), secs);
    let out = run(&s, 3);
    let tr = transfers(&out);
    let h = &quic(&out)["history"];
    eprintln!("{tr:?}\n{h}");
    let avg = h["average_bytes"].as_u64().unwrap();
    assert!(avg < DEFAULT_IW, "average {avg}");
    assert_eq!(h["raised"], json!(0));
    assert!(tr.iter().all(|t| t["initial_cwnd_bytes"] == json!(DEFAULT_IW)), "{tr:?}");
}

#[test]
fn zero_rtt_reconnect_records_at_the_client_hello_and_keeps_the_window() {
    let secs = 6;
    let mut s = path(secs, 19, 0.0);
    s["flows"] = flows(MB, 3, "mean", json!({"reconnect": "0rtt"}), secs);
    let out = run(&s, 1);
    let tr = transfers(&out);
    let h = &quic(&out)["history"];
    // The client does not close: each later connection resumes in 0-RTT while the server
    // still holds the previous one, records its window at the client hello and continues
    // with it.
    assert_eq!(h["records_zero_rtt"], json!(2), "{h}");
    assert_eq!(h["records_close"], json!(0), "{h}");
    for k in 1..3 {
        assert_eq!(tr[k]["zero_rtt"], json!(true));
        assert_eq!(tr[k - 1]["end"], json!("replaced"));
        assert_eq!(tr[k]["initial_cwnd_bytes"], tr[k - 1]["end_cwnd_bytes"], "{tr:?}");
    }
    // 0-RTT: the response starts half a round trip earlier than after a full handshake.
    let first = completion_ms(&tr[0]);
    assert!(completion_ms(&tr[1]) < first, "{tr:?}");
}

#[test]
fn rtt_guard_reverts_when_a_competing_flow_has_filled_the_queue() {
    // History from an empty path; then a TCP CUBIC bulk flow to another station starts and
    // keeps the 300-packet queue (up to 36 ms) standing when the second connection opens. Its
    // slow start runs to the first loss (no HyStart): Linux's HyStart would leave it early and
    // fill the queue only seconds later.
    let secs = 6;
    let mut s = path(secs, 19, 0.0);
    s["stations"] = json!([station(9, 2), station(9, 2)]);
    let mut run_with = |guard: &str| {
        let mut fl = flows(MB, 2, "mean", json!({"idle_ns": 2_000_000_000u64, "history_guard": guard}), secs);
        let mut tcp = flow(1, "down", "tcp", 0, 1500, secs * 1_000_000_000);
        tcp["cc"] = json!("cubic");
        tcp["hystart"] = json!("off");
        tcp["start_ns"] = json!(1_000_000_000u64);
        fl.as_array_mut().unwrap().push(tcp);
        s["flows"] = fl;
        run(&s, 1)
    };
    let open = run_with("none");
    let guarded = run_with("rtt");
    let (to, tg) = (transfers(&open), transfers(&guarded));
    eprintln!("unguarded {to:?}\nguarded {tg:?}");
    assert!(to[1]["initial_cwnd_bytes"].as_u64().unwrap() > DEFAULT_IW);
    assert_eq!(tg[1]["initial_cwnd_bytes"], json!(DEFAULT_IW));
    assert_eq!(tg[1]["guard_reverted_from"], to[1]["initial_cwnd_bytes"]);
    assert_eq!(quic(&guarded)["history"]["guard_reverted"], json!(1));
}

#[test]
fn several_connections_repeat_exactly_and_one_connection_is_unchanged() {
    let secs = 4;
    let mut s = path(secs, 19, 0.01);
    s["flows"] = flows(MB, 3, "ewma", json!({}), secs);
    let a = lasthop_sim::run_json(&s.to_string(), 7, &mut |_| {}).unwrap();
    let b = lasthop_sim::run_json(&s.to_string(), 7, &mut |_| {}).unwrap();
    assert_eq!(a, b);
    // One connection (the default): no per-connection records, no history block.
    s["flows"] = flows(MB, 1, "none", json!({}), secs);
    let one = run(&s, 7);
    assert!(quic(&one).get("transfers").is_none() && quic(&one).get("history").is_none());
    assert_eq!(quic(&one)["app_bytes_delivered"], json!(MB));
}

#[test]
fn bad_lifecycle_keys_are_named_by_the_native_checks() {
    let mut s = path(1, 1, 0.0);
    let mut f = flow(0, "down", "quic", 0, 1378, 1_000_000_000);
    f["connections"] = json!(3); // with bytes = 0 (endless)
    f["idle_timeout_ns"] = json!(0);
    let mut g = flow(0, "down", "quic", 0, 1378, 1_000_000_000);
    g["bytes"] = json!(MB);
    g["history_guard"] = json!("rtt"); // without history
    s["flows"] = json!([f.clone(), g]);
    let paths: Vec<String> = lasthop_sim::validate_json(&s.to_string()).into_iter().map(|p| p.0).collect();
    for k in ["flows[0].connections", "flows[0].idle_timeout", "flows[1].history_guard"] {
        assert!(paths.iter().any(|p| p == k), "{k} missing from {paths:?}");
    }
    // A name outside a value list does not read as a spec at all.
    for (key, name) in [("reconnect", "2rtt"), ("history", "median")] {
        let mut bad = f.clone();
        bad[key] = json!(name);
        s["flows"] = json!([bad]);
        let p = lasthop_sim::validate_json(&s.to_string());
        assert!(p.len() == 1 && p[0].0 == "spec" && p[0].2.contains(name), "{p:?}");
    }
}

#[test]
fn every_hello_also_records_the_initial_window_at_each_full_handshake() {
    // Algorithm 1 observes the window at every complete client hello: with
    // `history_events = "close_every_hello"` a 1-RTT connection's handshake adds its initial
    // window, so the second connection starts with the mean of the first's initial and closing
    // windows instead of the closing one alone.
    let secs = 6;
    let mut s = path(secs, 19, 0.0);
    s["flows"] = flows(MB, 3, "mean", json!({"history_events": "close_every_hello"}), secs);
    let out = run(&s, 1);
    let tr = transfers(&out);
    let h = &quic(&out)["history"];
    assert_eq!((h["records_full_handshake"].as_u64(), h["records_close"].as_u64()), (Some(3), Some(3)), "{h}");
    let w0 = tr[0]["end_cwnd_bytes"].as_u64().unwrap();
    // Nothing of the response is sent before the handshake completes at the server: the
    // window it observes there is the connection's initial one.
    assert_eq!(tr[1]["initial_cwnd_bytes"].as_u64().unwrap(), ((DEFAULT_IW + w0) / 2).max(DEFAULT_IW));
    let (i1, w1) = (tr[1]["initial_cwnd_bytes"].as_u64().unwrap(), tr[1]["end_cwnd_bytes"].as_u64().unwrap());
    assert_eq!(tr[2]["initial_cwnd_bytes"].as_u64().unwrap(), ((DEFAULT_IW + w0 + i1 + w1) / 4).max(DEFAULT_IW));

    // The default ("close_0rtt") writes no such counter and starts the second connection
    // with the first's closing window.
    s["flows"] = flows(MB, 3, "mean", json!({}), secs);
    let out = run(&s, 1);
    assert!(quic(&out)["history"].get("records_full_handshake").is_none());
    assert_eq!(transfers(&out)[1]["initial_cwnd_bytes"].as_u64().unwrap(), w0);
}
