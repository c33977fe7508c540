//! The spec reader end to end: checked-in specs, the bad-spec corpus, every-error listing,
//! the reads `lasthop schema` is built from.

use super::*;
use std::path::{Path, PathBuf};

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn toml_files(dir: &str) -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(root().join(dir))
        .expect("the directory")
        .map(|e| e.expect("an entry").path())
        .filter(|p| p.extension().is_some_and(|e| e == "toml"))
        .collect();
    v.sort();
    v
}

fn read(text: &str) -> Result<Normalized, Vec<SpecError>> {
    normalize_all(&parse_toml(text).expect("TOML"), "scenario")
}

#[test]
fn checked_in_specs_normalize_and_pass_the_802_11_rules() {
    let files: Vec<PathBuf> = toml_files("experiments").into_iter().chain(toml_files("python/lasthop/templates")).collect();
    assert!(files.len() >= 10, "{files:?}");
    for f in files {
        let n = read(&std::fs::read_to_string(&f).expect("read")).unwrap_or_else(|e| panic!("{f:?}: {e:?}"));
        let spec = crate::Spec::from_json(&n.json).unwrap_or_else(|e| panic!("{f:?}: {e}"));
        assert!(spec.json_problems().is_empty(), "{f:?}: {:?}", spec.json_problems());
        assert_eq!(n.station_group.len(), spec.stations.len());
        assert_eq!(n.flow_table.len(), spec.flows.len());
        // The typed spec writes the same canonical JSON back, table by table or one by one.
        assert_eq!(normalize::spec_json(&spec, &n.station_group, &n.flow_table), n.json, "{f:?}");
        let one_by_one: Vec<usize> = (0..spec.stations.len().max(spec.flows.len())).collect();
        assert_eq!(normalize::spec_json(&spec, &one_by_one, &one_by_one), n.json, "{f:?}");
    }
}

#[test]
fn bad_specs_fail_at_the_key_they_name() {
    let files = toml_files("tests/python/bad_specs");
    assert!(files.len() >= 15);
    for f in files {
        let text = std::fs::read_to_string(&f).expect("read");
        let expect = text.lines().next().and_then(|l| l.split("expect:").nth(1)).expect("# expect: line").trim();
        let Ok(doc) = parse_toml(&text) else { continue }; // the TOML syntax error
        let first = match normalize_all(&doc, "scenario") {
            Err(es) => es[0].to_string(),
            Ok(n) => {
                let p = crate::Spec::from_json(&n.json).expect("normalized JSON reads").problems();
                assert!(!p.is_empty(), "{f:?} passed");
                format!("{} = {}: {}", p[0].0, p[0].1, p[0].2)
            }
        };
        assert!(first.contains(expect), "{f:?}: {first}");
    }
}

#[test]
fn defaults_are_filled_and_quantities_converted() {
    let n = read("[sim]\nduration = \"2s\"\n[ap]\nqdisc = \"fq_codel\"\n[[stations]]\nmcs = 7\ncount = 3\n[[flows]]\nrate = \"1.5Mbps\"\nstations = [0, 2]\n")
        .expect("valid");
    let v: Value = serde_json::from_str(&n.json).expect("JSON");
    assert_eq!(v["sim"]["duration_ns"], 2_000_000_000u64);
    assert_eq!(v["sim"]["bin_ns"], 100_000_000u64);
    assert_eq!(v["ap"]["queue_limit"], 8192, "mac80211's flow queue limit under fq_codel");
    assert_eq!(v["phy"]["channel_width"], 80);
    assert_eq!(v["flows"][1]["station"], 2);
    assert_eq!(v["flows"][0]["rate_bps"], 1_500_000u64);
    assert_eq!(n.station_group, vec![0, 0, 0]);
    assert_eq!(n.flow_table, vec![0, 0]);
    // Canonical: what Python's json.dumps(sort_keys=True, separators=(",", ":")) writes.
    assert!(n.json.starts_with("{\"aggctl\":{\"allocation\":\"equal_airtime\","), "{}", &n.json[..60]);
}

#[test]
fn every_problem_is_listed_until_a_required_key() {
    let es = read("[sim]\nduration = \"1s\"\nwarmup = \"2s\"\n[mac]\nretry_limt = 3\n[[stations]]\nmcs = 3\nnss = 99\n[[flows]]\nrate = \"5 parsecs\"\n")
        .expect_err("four problems");
    let paths: Vec<&str> = es.iter().map(|e| e.path.as_str()).collect();
    assert_eq!(paths, ["sim.warmup", "mac.retry_limt", "stations[0].nss", "flows[0].rate"]);
    // A bad required value cannot be stood in for: the listing stops there.
    let es = read("[sim]\nduration = \"0s\"\n[mac]\nretry_limt = 3\n[[stations]]\nmcs = 3\n").expect_err("bad");
    assert_eq!(es.len(), 1, "{es:?}");
    assert_eq!(es[0].to_string(), "sim.duration = \"0s\": must be > 0, e.g. \"10s\"");
}

#[test]
fn unknown_keys_are_reported_in_document_order() {
    let es = read("zeta = 1\nalpha = 2\n[sim]\nduration = \"1s\"\n[[stations]]\nmcs = 1\n").expect_err("unknown");
    assert_eq!(es[0].path, "zeta");
    assert_eq!(es[1].path, "alpha");
}

#[test]
fn keys_that_are_not_bare_are_quoted_in_the_path_and_still_listed() {
    // (An empty key gave the path "" — a line naming no key; found by the spec_toml fuzz target.)
    let es = read("\"\" = \"\"\n\"a.b\" = 1\n\"x\\\"y\" = 2\n[sim]\nduration = \"1s\"\n\"\\n\" = 3\n[[stations]]\nmcs = 1\n")
        .expect_err("unknown keys");
    let lines: Vec<String> = es.iter().map(|e| e.to_string()).collect();
    assert_eq!(lines.len(), 4, "{lines:?}");
    assert!(lines[0].starts_with("\"\" = \"\": unknown key; allowed: name, "), "{lines:?}");
    assert!(lines[1].starts_with("\"a.b\" = 1: unknown key"), "{lines:?}");
    assert!(lines[2].starts_with("\"x\\\"y\" = 2: unknown key"), "{lines:?}");
    assert!(lines[3].starts_with("sim.\"\\n\" = 3: unknown key"), "{lines:?}");
    assert!(lines.iter().all(|l| !l.contains('\n')));
    assert_eq!(path_steps("flows[2].\"a.b\"").unwrap(), [("flows".to_owned(), Some(2)), ("a.b".to_owned(), None)]);
    assert_eq!(path_steps("a.\"unterminated"), None);
}

#[test]
fn counts_beyond_u64_name_their_key() {
    let doc = Raw::Table(vec![
        ("sim".into(), Raw::Table(vec![("duration".into(), Raw::Str("1s".into()))])),
        ("stations".into(), Raw::List(vec![Raw::Table(vec![("mcs".into(), Raw::Int(3))])])),
        (
            "flows".into(),
            Raw::List(vec![Raw::Table(vec![
                ("pattern".into(), Raw::Str("tcp".into())),
                ("bytes".into(), Raw::Int(1 << 64)),
            ])]),
        ),
    ]);
    let e = normalize(&doc, "x").expect_err("too large");
    assert_eq!(e.to_string(), "flows[0].bytes = 18446744073709551616: an integer in 0..=18446744073709551615");
}

#[test]
fn reads_are_recorded_with_their_defaults_and_schemas() {
    let doc = parse_toml("[sim]\nduration = \"1s\"\n[[stations]]\nmcs = 1\n").expect("TOML");
    let (out, recs) = record(|| normalize(&doc, "s"));
    assert!(out.is_ok());
    let find = |p: &str| recs.iter().find(|r| r.path == p && r.schema.is_some()).unwrap_or_else(|| panic!("{p}"));
    assert_eq!(find("sim.duration").default, Default::Required);
    assert_eq!(find("mac.max_ppdu_time").default, Default::Is(serde_json::json!(5_484_000)));
    assert_eq!(find("stations[0].mcs").schema, Some(serde_json::json!({"type": "integer", "minimum": 0, "maximum": 9})));
    assert_eq!(find("wired.loss_up").default, Default::Null);
    // Outside `record`, nothing is kept.
    let (_, again) = record(|| ());
    assert!(again.is_empty());
}

/// A key whose own range the reader checks, out of range: (the TOML document with `@` where the
/// key goes, the key as written, as written within range, the normalized key as a JSON
/// pointer and the out-of-range value there, the reader's problem).
type RangeCase = (&'static str, &'static str, &'static str, &'static str, Value, &'static str);

const SIM: &str = "[sim]\n@\n[[stations]]\nmcs = 3\n";
const MAC: &str = "[sim]\nduration = \"1s\"\n[mac]\n@\n[[stations]]\nmcs = 3\n";
const AP: &str = "[sim]\nduration = \"1s\"\n[ap]\n@\n[[stations]]\nmcs = 3\n";
const STA: &str = "[sim]\nduration = \"1s\"\n[[stations]]\nmcs = 3\n@\n";
const FLOW: &str = "[sim]\nduration = \"1s\"\n[[stations]]\nmcs = 3\n[[flows]]\n@\n";
const QUIC: &str = "[sim]\nduration = \"1s\"\n[[stations]]\nmcs = 3\n[[flows]]\npattern = \"quic\"\nbytes = 100000\n@\n";
const PHY: &str = "[sim]\nduration = \"1s\"\n[phy]\n@\n[[stations]]\nmcs = 3\n";
const WIRED: &str = "[sim]\nduration = \"1s\"\n[wired]\n@\n[[stations]]\nmcs = 3\n";
const CHANNEL: &str = "[sim]\nduration = \"1s\"\n[channel]\n@\n[[stations]]\nmcs = 3\n";
const VWIRE: &str = "[sim]\nduration = \"1s\"\n[vwire]\n@\n[[stations]]\nmcs = 3\n";
const INTERFERENCE: &str = "[sim]\nduration = \"1s\"\n[channel.interference]\n@\n[[stations]]\nmcs = 3\nerror_model = \"snr\"\n";
const AGGCTL: &str = "[sim]\nduration = \"1s\"\n[aggctl]\n@\n[[stations]]\nmcs = 3\n";
const FADING: &str = "[sim]\nduration = \"1s\"\n[channel.fading]\n@\n[[stations]]\nmcs = 3\nerror_model = \"snr\"\n";

fn range_cases() -> Vec<RangeCase> {
    vec![
        (SIM, "duration = \"0s\"", "duration = \"1s\"", "/sim/duration_ns", json!(0), "sim.duration = \"0s\": must be > 0, e.g. \"10s\""),
        (PHY, "control_rate = \"11Mbps\"", "control_rate = \"12Mbps\"", "/phy/control_rate_bps", json!(11_000_000), "phy.control_rate = \"11Mbps\": a legacy OFDM rate: 6Mbps|9Mbps|12Mbps|18Mbps|24Mbps|36Mbps|48Mbps|54Mbps"),
        (MAC, "retry_limit = 0", "retry_limit = 4", "/mac/retry_limit", json!(0), "mac.retry_limit = 0: an integer in 1..=64"),
        (MAC, "beacon_interval = \"1ms\"", "beacon_interval = \"0s\"", "/mac/beacon_interval_ns", json!(1_000_000), "mac.beacon_interval = \"1ms\": \"0s\" (off) or 1 TU (1.024ms) ..= 65535 TU (67.10784s), IEEE 802.11-2020 §9.4.1.3"),
        (MAC, "aifsn = 1", "aifsn = 2", "/mac/aifsn", json!(1), "mac.aifsn = 1: an integer in 2..=15"),
        (MAC, "txop_limit = \"1ms\"", "txop_limit = \"1024us\"", "/mac/txop_limit_ns", json!(1_000_000), "mac.txop_limit = \"1ms\": a multiple of 32us up to 8.16ms (the TXOP Limit field, IEEE 802.11-2020 §9.4.2.28)"),
        (AP, "cw_min = 8", "cw_min = 7", "/ap/cw_min", json!(8), "ap.cw_min = 8: 2^k - 1 for k in 0..=15 (0, 1, 3, 7, ..., 32767)"),
        (AP, "queue_limit = 0", "queue_limit = 10", "/ap/queue_limit", json!(0), "ap.queue_limit = 0: an integer in 1..=1048576"),
        (AP, "driver = \"firmware\"\nhw_queue_limit = 0", "driver = \"firmware\"\nhw_queue_limit = 10", "/ap/hw_queue_limit", json!(0), "ap.hw_queue_limit = 0: an integer in 1..=1048576"),
        (AP, "driver = \"ath9k\"\nath9k_qdepth = 0", "driver = \"ath9k\"\nath9k_qdepth = 500", "/ap/ath9k_qdepth", json!(0), "ap.ath9k_qdepth = 0: an integer in 1..=1048576"),
        (AP, "buffer_sizer = \"wqm\"\nwqm_limit = \"0s\"", "buffer_sizer = \"wqm\"\nwqm_limit = \"1ms\"", "/ap/wqm_limit_ns", json!(0), "ap.wqm_limit = \"0s\": must be > 0, e.g. \"10s\""),
        (AP, "buffer_sizer = \"wqm\"\nwqm_interval = \"0s\"", "buffer_sizer = \"wqm\"\nwqm_interval = \"1s\"", "/ap/wqm_interval_ns", json!(0), "ap.wqm_interval = \"0s\": must be > 0, e.g. \"10s\""),
        (AP, "qdisc = \"pie\"\npie_estimator = \"median\"", "qdisc = \"pie\"\npie_estimator = \"timestamp\"", "/ap/pie_estimator", json!("median"), "ap.pie_estimator = \"median\": one of \"timestamp\"|\"dequeue_rate\""),
        (AP, "driver = \"ath9k\"\nqdisc_scope = \"host\"", "driver = \"ath9k\"\nqdisc_scope = \"interface\"", "/ap/qdisc_scope", json!("host"), "ap.qdisc_scope = \"host\": one of \"station\"|\"interface\""),
        (AP, "dequeue_cost = \"1ms\"", "dequeue_cost = \"1us\"", "/ap/dequeue_cost_ns", json!(1_000_000), "ap.dequeue_cost = \"1ms\": at most 100us (a host's per-packet transmit path)"),
        (WIRED, "rate = \"0bps\"", "rate = \"1Gbps\"", "/wired/rate_bps", json!(0), "wired.rate = \"0bps\": must be > 0, e.g. \"100Mbps\""),
        (WIRED, "server_nic = \"0bps\"", "server_nic = \"1Gbps\"", "/wired/server_nic_bps", json!(0), "wired.server_nic = \"0bps\": must be > 0, e.g. \"10Gbps\""),
        (WIRED, "loss = 1.0", "loss = 0.5", "/wired/loss", json!(1.0), "wired.loss = 1.0: a number in [0, 1)"),
        (WIRED, "loss_up = 1.0", "loss_up = 0.5", "/wired/loss_up", json!(1.0), "wired.loss_up = 1.0: a number in [0, 1)"),
        (WIRED, "queue_limit = 0", "queue_limit = 10", "/wired/queue_limit", json!(0), "wired.queue_limit = 0: an integer in 1..=1048576"),
        (CHANNEL, "exponent = 9", "exponent = 3", "/channel/exponent", json!(9.0), "channel.exponent = 9: a number in [1, 8]"),
        (CHANNEL, "tx_power_dbm = 41", "tx_power_dbm = 10", "/channel/tx_power_dbm", json!(41.0), "channel.tx_power_dbm = 41: a number in [-30, 40]"),
        (CHANNEL, "noise_figure_db = 31", "noise_figure_db = 5", "/channel/noise_figure_db", json!(31.0), "channel.noise_figure_db = 31: a number in [0, 30]"),
        (INTERFERENCE, "on = \"0s\"\noff = \"1s\"\ninr_db = 10", "on = \"1ms\"\noff = \"1s\"\ninr_db = 10", "/channel/interference/on_ns", json!(0), "channel.interference.on = \"0s\": must be > 0, e.g. \"10s\""),
        (INTERFERENCE, "on = \"1ms\"\noff = \"0s\"\ninr_db = 10", "on = \"1ms\"\noff = \"1s\"\ninr_db = 10", "/channel/interference/off_ns", json!(0), "channel.interference.off = \"0s\": must be > 0, e.g. \"10s\""),
        (INTERFERENCE, "on = \"1ms\"\noff = \"1s\"\ninr_db = 61", "on = \"1ms\"\noff = \"1s\"\ninr_db = 60", "/channel/interference/inr_db", json!(61.0), "channel.interference.inr_db = 61: a number in [-20, 60]"),
        (FADING, "doppler_hz = 2001", "doppler_hz = 5", "/channel/fading/doppler_hz", json!(2001.0), "channel.fading.doppler_hz = 2001: a number in [0, 2000]"),
        (FADING, "model = \"rician\"\ndoppler_hz = 5\nk_db = 41", "model = \"rician\"\ndoppler_hz = 5\nk_db = 10", "/channel/fading/k_db", json!(41.0), "channel.fading.k_db = 41: a number in [-20, 40]"),
        ("@\n[sim]\nduration = \"1s\"\n", "stations = []", "stations = [{mcs = 3}]", "/stations", json!([]), "stations = []: at least one [[stations]] table is required"),
        (STA, "error_model = \"fixed\"\nper = 1.0", "error_model = \"fixed\"\nper = 0.5", "/stations/0/per", json!(1.0), "stations[0].per = 1.0: a number in [0, 1)"),
        (STA, "error_model = \"snr\"\nsnr_db = 101", "error_model = \"snr\"\nsnr_db = 10", "/stations/0/snr_db", json!(101.0), "stations[0].snr_db = 101: a number in [-20, 100]"),
        (STA, "queue_limit = 0", "queue_limit = 10", "/stations/0/queue_limit", json!(0), "stations[0].queue_limit = 0: an integer in 1..=1048576"),
        (STA, "hop_channel = 64", "hop_channel = 0", "/stations/0/hop_channel", json!(64), "stations[0].hop_channel = 64: an integer in 0..=63"),
        (STA, "distance_m = 200000", "distance_m = 20", "/stations/0/waypoints/0/1", json!(200_000.0), "stations[0].distance_m = 200000: a distance in metres, 0 < d <= 100000"),
        (STA, "device = \"toaster\"", "device = \"tv\"", "/stations/0/device", json!("toaster"), "stations[0].device = \"toaster\": one of \"unknown\"|\"phone\"|\"laptop\"|\"tv\""),
        (STA, "ampdu_mpdus_tx = 257", "ampdu_mpdus_tx = 8", "/stations/0/ampdu_mpdus_tx", json!(257), "stations[0].ampdu_mpdus_tx = 257: 0 (the cell's mac.max_ampdu_mpdus) or an integer in 1..=256"),
        (STA, "ba_window_rx = 257", "ba_window_rx = 32", "/stations/0/ba_window_rx", json!(257), "stations[0].ba_window_rx = 257: 0 (the cell's mac.max_ampdu_mpdus) or an integer in 1..=256"),
        (STA, "airtime_weight = 0", "airtime_weight = 1024", "/stations/0/airtime_weight", json!(0), "stations[0].airtime_weight = 0: an integer in 1..=65535"),
        (FLOW, "rate = \"0bps\"", "rate = \"1Mbps\"", "/flows/0/rate_bps", json!(0), "flows[0].rate = \"0bps\": must be > 0, e.g. \"100Mbps\""),
        (FLOW, "pattern = \"ping\"\ninterval = \"0s\"", "pattern = \"ping\"\ninterval = \"1s\"", "/flows/0/rate_bps", json!(0), "flows[0].interval = \"0s\": must be > 0, e.g. \"10s\""),
        (FLOW, "rate = \"1Mbps\"\npacket_size = 3000", "rate = \"1Mbps\"\npacket_size = 1000", "/flows/0/packet_size", json!(3000), "flows[0].packet_size = 3000: an integer in 20..=2304"),
        (QUIC, "ack_policy = \"none\"", "ack_policy = \"ack_frequency\"", "/flows/0/ack_policy", json!("none"), "flows[0].ack_policy = \"none\": one of \"tcp_acking\"|\"ack_decimation\"|\"ack_frequency\""),
        (QUIC, "initial_cwnd = 0", "initial_cwnd = 20", "/flows/0/initial_cwnd", json!(0), "flows[0].initial_cwnd = 0: an integer in 1..=10000"),
        (QUIC, "connections = 0", "connections = 2", "/flows/0/connections", json!(0), "flows[0].connections = 0: an integer in 1..=10000"),
        (QUIC, "idle_timeout = \"0s\"", "idle_timeout = \"1s\"", "/flows/0/idle_timeout_ns", json!(0), "flows[0].idle_timeout = \"0s\": must be > 0, e.g. \"10s\""),
        (FLOW, "pattern = \"tcp\"\nsplit = true\napp_class = \"movie\"", "pattern = \"tcp\"\nsplit = true\napp_class = \"web\"", "/flows/0/app_class", json!("movie"), "flows[0].app_class = \"movie\": one of \"video_sd\"|\"video_hd\"|\"video_4k\"|\"bulk\"|\"web\"|\"voip\""),
        (FLOW, "pattern = \"tcp\"\nsplit = true\nutility = \"log:0\"", "pattern = \"tcp\"\nsplit = true\nutility = \"log:1\"", "/flows/0/utility", json!({"log": 0.0}), "flows[0].utility = \"log:0\": \"step:RATE:U[,RATE:U...]\" (rates increasing, utilities >= 0 non-decreasing), e.g. \"step:32Mbps:10\", or \"log:W\" with W > 0, e.g. \"log:0.1\""),
        (VWIRE, "period = \"0s\"", "period = \"1s\"", "/vwire/period_ns", json!(0), "vwire.period = \"0s\": must be > 0, e.g. \"10s\""),
        (VWIRE, "sample = \"0s\"", "sample = \"1s\"", "/vwire/sample_ns", json!(0), "vwire.sample = \"0s\": must be > 0, e.g. \"10s\""),
        (VWIRE, "efficiency = 0", "efficiency = 0.5", "/vwire/efficiency", json!(0.0), "vwire.efficiency = 0: 0 < efficiency <= 1"),
        (VWIRE, "tsq = 100", "tsq = 10000", "/vwire/tsq_bytes", json!(100), "vwire.tsq = 100: an integer in 3000..=1073741824"),
        (AGGCTL, "allocation = \"fair\"", "allocation = \"per_station\"", "/aggctl/allocation", json!("fair"), "aggctl.allocation = \"fair\": one of \"equal_airtime\"|\"per_station\""),
        (AGGCTL, "clock_resolution = \"2s\"", "clock_resolution = \"1ms\"", "/aggctl/clock_resolution_ns", json!(2_000_000_000u64), "aggctl.clock_resolution = \"2s\": at most 1s"),
        (AGGCTL, "clock_jitter = \"2s\"", "clock_jitter = \"1ms\"", "/aggctl/clock_jitter_ns", json!(2_000_000_000u64), "aggctl.clock_jitter = \"2s\": at most 1s"),
        (AGGCTL, "report_loss = 1.0", "report_loss = 0.5", "/aggctl/report_loss", json!(1.0), "aggctl.report_loss = 1.0: a number in [0, 1)"),
        (AGGCTL, "report_blackout = [\"0.6s\", \"0.5s\"]", "report_blackout = [\"0.5s\", \"0.6s\"]", "/aggctl/report_blackout_ns", json!([600_000_000u64, 500_000_000u64]), "aggctl.report_blackout = [\"0.6s\", \"0.5s\"]: [from, until]: two durations with from < until, e.g. [\"25s\", \"30s\"]"),
    ]
}

/// Each key's own range is checked once per path: the reader refuses the value as written, at
/// its key; a normalized spec from elsewhere gets it from `Spec::key_problems`; the rules across
/// keys (`Spec::problems`) do not repeat it.
#[test]
fn a_key_out_of_range_is_the_readers_problem_and_the_json_paths() {
    for (doc, bad, good, pointer, value, line) in range_cases() {
        let es = read(&doc.replace('@', bad)).expect_err(bad);
        assert_eq!(es[0].to_string(), line, "{bad}");
        let n = read(&doc.replace('@', good)).unwrap_or_else(|e| panic!("{good}: {e:?}"));
        let mut v: Value = serde_json::from_str(&n.json).expect("JSON");
        *v.pointer_mut(pointer).unwrap_or_else(|| panic!("{pointer}")) = value;
        let spec = crate::Spec::from_json(&v.to_string()).expect("reads");
        // A placed station's distance is its first waypoint in the normalized spec.
        let key = match es[0].path.as_str() {
            "stations[0].distance_m" => "stations[0].waypoints[0]",
            k => k,
        };
        assert!(spec.key_problems().iter().any(|p| p.0 == key), "{pointer}: {:?}", spec.key_problems());
        assert!(spec.problems().iter().all(|p| p.0 != key || key == "stations[0].hop_channel"), "{pointer}: {:?}", spec.problems());
    }
}

/// The typed spec the reader builds and the one its JSON reads back into write the same JSON:
/// every key written only when given (`[vwire]`, `[emu]`, `mac.ofdma`, a station's `device`
/// and `gro`, a flow's `ac`), a non-TCP flow without the split keys, utilities of both forms.
#[test]
fn the_typed_spec_writes_what_it_reads() {
    let rich = r#"
[sim]
duration = "2s"
[phy]
standard = "he"
[mac.ofdma]
ul = true
[emu]
ap_host = false
[vwire]
enabled = false
[[stations]]
count = 3
mcs = 7
device = "phone"
gro = true
[[stations]]
mcs = 5
[[flows]]
pattern = "tcp"
stations = [0, 1]
split = true
utility = "step:10Mbps:1,32Mbps:10"
ac = "VI"
[[flows]]
pattern = "tcp"
stations = 2
split = true
utility = "log:0.5"
app_class = "bulk"
[[flows]]
pattern = "tcp"
stations = 3
app = "request_response"
response_bytes = 1000
[[flows]]
pattern = "quic"
stations = [0, 3]
page = "amazon"
[[flows]]
pattern = "ping"
direction = "up"
"#;
    let n = read(rich).expect("reads");
    for part in ["\"device\":\"phone\"", "\"gro\":true", "\"ofdma\":{", "\"emu\":{", "\"vwire\":{", "\"ac\":\"VI\"", "\"step\":[[10000000.0,1.0]"] {
        assert!(n.json.contains(part), "{part}");
    }
    let v: Value = serde_json::from_str(&n.json).expect("JSON");
    let ping = v["flows"].as_array().expect("flows").last().expect("the ping");
    assert!(ping.get("split").is_none() && ping.get("ac").is_none() && v["stations"][3].get("device").is_none());
    let docs = std::iter::once(rich.to_owned()).chain(range_cases().into_iter().map(|c| c.0.replace('@', c.2)));
    for doc in docs {
        let n = read(&doc).unwrap_or_else(|e| panic!("{doc}: {e:?}"));
        let back = crate::Spec::from_json(&n.json).expect("reads");
        for spec in [&n.spec, &back] {
            assert_eq!(normalize::spec_json(spec, &n.station_group, &n.flow_table), n.json, "{doc}");
        }
        let one_by_one: Vec<usize> = (0..1 << 12).collect();
        assert_eq!(normalize::spec_json(&back, &one_by_one, &one_by_one), n.json, "{doc}");
    }
}

#[test]
fn a_toml_syntax_error_is_one_line_with_its_position() {
    let e = parse_toml("name = \"x\"\n[sim\n").expect_err("refused");
    assert!(!e.contains('\n'), "{e}");
    assert!(e.starts_with("invalid table header"), "{e}");
    assert!(e.ends_with("(at line 2, column 5)"), "{e}");
    // Columns count characters, not bytes: the newline that ends the unterminated string.
    let e = parse_toml("a = \"ü\n").expect_err("refused");
    assert!(e.ends_with("(at line 1, column 7)"), "{e}");
}
