//! `--spec FILE`: a live tool takes its settings from the scenario spec the simulator runs
//! (docs/spec.md), read by the same validator (`lasthop_sim::spec_in`, no Python), so a live
//! run and a simulated one of the same spec use the same parameters. Options given on the
//! command line win over the spec.

use super::args::{Args, UsageError};
use lasthop_sim::spec_in;
use serde_json::Value;

/// Read, validate and normalize the spec at `path` (with the simulator's 802.11 rules); every
/// problem is one line.
pub fn load(tool: &str, path: &str) -> Result<Value, UsageError> {
    let text = std::fs::read_to_string(path).map_err(|e| UsageError(format!("{tool}: --spec {path}: cannot read: {e}")))?;
    let doc = spec_in::parse_toml(&text)
        .map_err(|e| UsageError(format!("{tool}: --spec {path}: invalid TOML: {}", e.replace('\n', " "))))?;
    let n = spec_in::normalize::normalize_all_or_lines(&doc, tool, path).map_err(UsageError)?;
    serde_json::from_str(&n).map_err(|e| UsageError(format!("{tool}: --spec {path}: {e}")))
}

fn ns(v: &Value) -> Option<String> {
    v.as_u64().map(|x| format!("{x}ns"))
}

fn bps(v: &Value) -> Option<String> {
    v.as_u64().map(|x| format!("{x}bps"))
}

fn plain(v: &Value) -> Option<String> {
    match v {
        Value::String(s) => Some(s.clone()),
        Value::Null => None,
        v => Some(v.to_string()),
    }
}

/// Set the options `map` lists — (option, spec key path, how to write the value) — from the
/// normalized spec `n` as fallbacks of `a`.
/// An option, the spec key it comes from, and how its value is written on the command line.
type OptFromSpec<'a> = (&'a str, &'a str, fn(&Value) -> Option<String>);

fn apply(a: &mut Args, n: &Value, path: &str, map: &[OptFromSpec]) {
    for (opt, key, conv) in map {
        let mut v = n;
        for part in key.split('.') {
            v = &v[part];
        }
        if let Some(text) = conv(v) {
            a.fallback(opt, Some(text), &format!("{path}: {key}"));
        }
    }
}

/// The first normalized flow of `pattern` (with `split` if asked).
/// The first flow of this pattern (and split, when asked), with its index in `flows`.
fn first_flow<'a>(n: &'a Value, pattern: &str, split: bool) -> Option<(usize, &'a Value)> {
    n["flows"].as_array()?.iter().enumerate().find(|(_, f)| f["pattern"] == pattern && (!split || f["split"] == true))
}

/// `lasthop wqm --spec`: the buffer sizer's limit, interval and variant ([ap]), the PPDU time
/// limit ([mac]).
pub fn wqm(a: &mut Args, path: &str) -> Result<(), UsageError> {
    let n = load("wqm", path)?;
    apply(
        a,
        &n,
        path,
        &[
            ("limit", "ap.wqm_limit_ns", ns),
            ("interval", "ap.wqm_interval_ns", ns),
            ("variant", "ap.wqm_variant", plain),
            ("max-ampdu-time", "mac.max_ppdu_time_ns", ns),
        ],
    );
    Ok(())
}

/// `lasthop aggctl send|recv --spec`: [aggctl] (N_e, K0, Δ, rates, gap), N_max from [mac] and
/// the packet size of the spec's aggctl flows.
pub fn aggctl(a: &mut Args, sub: &str, path: &str) -> Result<(), UsageError> {
    let n = load(&format!("aggctl {sub}"), path)?;
    apply(a, &n, path, &[("interval", "aggctl.interval_ns", ns)]);
    if sub == "recv" {
        apply(a, &n, path, &[("gap", "aggctl.gap_threshold_ns", ns)]);
        return Ok(());
    }
    apply(
        a,
        &n,
        path,
        &[
            ("target", "aggctl.target_aggregation", plain),
            ("k0", "aggctl.k0", plain),
            ("initial-rate", "aggctl.initial_rate_bps", bps),
            ("max-rate", "aggctl.max_rate_bps", bps),
        ],
    );
    if n["mac"]["aggregation"] == true {
        apply(a, &n, path, &[("ba-window", "mac.max_ampdu_mpdus", plain)]);
    }
    if let Some((i, f)) = first_flow(&n, "aggctl", false) {
        a.fallback("size", plain(&f["packet_size"]), &format!("{path}: flows[{i}].packet_size"));
    }
    Ok(())
}

/// `lasthop vwire --spec`: [vwire] (period, efficiency, buffers, on/off) and the wired-side
/// congestion control of the spec's split flows.
pub fn vwire(a: &mut Args, path: &str) -> Result<(), UsageError> {
    let n = load("vwire", path)?;
    if n.get("vwire").is_some() {
        apply(
            a,
            &n,
            path,
            &[
                ("period", "vwire.period_ns", ns),
                ("efficiency", "vwire.efficiency", plain),
                ("relay-buffer", "vwire.relay_buffer_bytes", plain),
                ("sndbuf", "vwire.sndbuf_bytes", plain),
                ("window-clamp", "vwire.window_clamp_bytes", plain),
            ],
        );
        if n["vwire"]["enabled"] == false {
            a.fallback("no-vwire", None, &format!("{path}: vwire.enabled"));
        }
    }
    if let Some((i, f)) = first_flow(&n, "tcp", true) {
        a.fallback("wired-cc", plain(&f["split_wired_cc"]), &format!("{path}: flows[{i}].split_wired_cc"));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A spec file in a directory of its own (the tests run in parallel), removed with the
    /// directory when dropped, also when an assertion fails.
    struct SpecFile(std::path::PathBuf);

    impl SpecFile {
        fn path(&self) -> String {
            self.0.to_string_lossy().into_owned()
        }
    }

    impl Drop for SpecFile {
        fn drop(&mut self) {
            if let Some(dir) = self.0.parent() {
                let _ = std::fs::remove_dir_all(dir);
            }
        }
    }

    fn spec_file(name: &str, text: &str) -> SpecFile {
        let dir = std::env::temp_dir().join(format!("lasthop-spec-opts-{}-{name}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("temp dir");
        let p = dir.join(name);
        std::fs::write(&p, text).expect("write");
        SpecFile(p)
    }

    fn args(tool: &str, argv: &[&str], valued: &[&str]) -> Args {
        let v: Vec<String> = argv.iter().map(|s| s.to_string()).collect();
        Args::parse(tool, &v, &["no-vwire"], valued).expect("parse")
    }

    const CELL: &str = "[sim]\nduration = \"1s\"\n[[stations]]\nmcs = 7\n";

    #[test]
    fn wqm_takes_the_spec_and_the_command_line_wins() {
        let f = spec_file("wqm.toml", &format!("{CELL}[ap]\nbuffer_sizer = \"wqm\"\nwqm_limit = \"4ms\"\nwqm_variant = \"mimd\"\n"));
        let p = f.path();
        let mut a = args("wqm", &["--spec", &p, "--variant", "aiad"], &["spec", "limit", "interval", "variant", "max-ampdu-time"]);
        wqm(&mut a, &p).expect("valid spec");
        assert_eq!(a.value("limit").as_deref(), Some("4000000ns"));
        assert_eq!(a.value("interval").as_deref(), Some("100000000ns"), "the spec's default");
        assert_eq!(a.value("variant").as_deref(), Some("aiad"), "the command line wins");
        assert_eq!(a.value("max-ampdu-time").as_deref(), Some("5484000ns"));
    }

    #[test]
    fn aggctl_send_reads_aggctl_mac_and_the_flow_size() {
        let f = spec_file(
            "aggctl.toml",
            &format!("{CELL}[aggctl]\ntarget_aggregation = 24\nk0 = 2.5\n[[flows]]\npattern = \"aggctl\"\npacket_size = 1200\n"),
        );
        let p = f.path();
        let mut a = args("aggctl send", &[], &["target", "k0", "ba-window", "size", "interval", "gap"]);
        aggctl(&mut a, "send", &p).expect("valid spec");
        assert_eq!(a.value("target").as_deref(), Some("24"));
        assert_eq!(a.value("k0").as_deref(), Some("2.5"));
        assert_eq!(a.value("ba-window").as_deref(), Some("64"));
        assert_eq!(a.value("size").as_deref(), Some("1200"));
        assert_eq!(a.value("interval").as_deref(), Some("500000000ns"));
        assert_eq!(a.value("gap"), None, "the receiver's option");
        // A spec value the tool cannot take is named by its spec key.
        let e = a.uint("size", 100, 1000).expect_err("out of range");
        assert!(e.0.contains("flows[0].packet_size = \"1200\" (for --size)"), "{}", e.0);
    }

    #[test]
    fn vwire_reads_vwire_and_split_flows() {
        let f = spec_file(
            "vwire.toml",
            &format!("{CELL}[vwire]\nenabled = false\nperiod = \"1s\"\n[[flows]]\npattern = \"tcp\"\nsplit = true\nsplit_wired_cc = \"cubic\"\n"),
        );
        let p = f.path();
        let mut a = args("vwire", &[], &["period", "efficiency", "relay-buffer", "sndbuf", "wired-cc"]);
        vwire(&mut a, &p).expect("valid spec");
        assert_eq!(a.value("period").as_deref(), Some("1000000000ns"));
        assert_eq!(a.value("efficiency").as_deref(), Some("0.75"));
        assert_eq!(a.value("wired-cc").as_deref(), Some("cubic"));
        assert!(a.flag("no-vwire"));
    }

    #[test]
    fn a_bad_spec_is_one_line_per_problem() {
        let f = spec_file("bad.toml", "[sim]\nduration = \"1s\"\nwarmup = \"5s\"\n[mac]\nretry_limt = 1\n[[stations]]\nmcs = 7\n");
        let p = f.path();
        let e = load("wqm", &p).expect_err("two problems");
        let lines: Vec<&str> = e.0.lines().collect();
        assert_eq!(lines.len(), 2, "{}", e.0);
        assert!(lines[0].ends_with("spec error: sim.warmup = \"5s\": must be < sim.duration"), "{}", lines[0]);
        assert!(lines[1].contains("mac.retry_limt = 1: unknown key; did you mean \"retry_limit\"?"), "{}", lines[1]);
        let f = spec_file("syntax.toml", "[sim\n");
        let p = f.path();
        let e = load("wqm", &p).expect_err("TOML");
        assert!(e.0.contains("invalid TOML") && !e.0.contains('\n'), "{}", e.0);
        let e = load("wqm", "/nonexistent/spec.toml").expect_err("no file");
        assert!(e.0.starts_with("wqm: --spec /nonexistent/spec.toml: cannot read"), "{}", e.0);
    }
}
