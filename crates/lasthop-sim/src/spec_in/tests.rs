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
        assert!(spec.problems().is_empty(), "{f:?}: {:?}", spec.problems());
        assert_eq!(n.station_group.len(), spec.stations.len());
        assert_eq!(n.flow_table.len(), spec.flows.len());
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
