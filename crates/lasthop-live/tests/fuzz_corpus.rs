//! A short pass of every fuzz target on the stable toolchain: every kept input of
//! `fuzz/corpus/<target>` (the seed corpus) and `fuzz/regressions/<target>` (inputs that once
//! failed, kept after the fix) goes through the target's body, `lasthop_live::fuzzing::<target>`,
//! exactly as libFuzzer would feed it. Longer, coverage-guided campaigns: `make fuzz`.

use std::path::{Path, PathBuf};

fn fuzz_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fuzz")
}

fn inputs(dir: &Path) -> Vec<PathBuf> {
    let Ok(rd) = std::fs::read_dir(dir) else { return Vec::new() };
    let mut v: Vec<PathBuf> = rd.filter_map(|e| e.ok().map(|e| e.path())).filter(|p| p.is_file()).collect();
    v.sort();
    v
}

fn replay(target: &str) {
    let f = lasthop_live::fuzzing::TARGETS
        .iter()
        .find(|(n, _)| *n == target)
        .map(|(_, f)| *f)
        .expect("a known target");
    let corpus = inputs(&fuzz_dir().join("corpus").join(target));
    assert!(!corpus.is_empty(), "no seed corpus for {target} in fuzz/corpus/{target}");
    let regressions = inputs(&fuzz_dir().join("regressions").join(target));
    for p in corpus.iter().chain(&regressions) {
        let data = std::fs::read(p).unwrap_or_else(|e| panic!("{}: {e}", p.display()));
        let r = std::panic::catch_unwind(|| f(&data));
        assert!(r.is_ok(), "{target}: input {} fails (replay: cd fuzz && cargo +nightly fuzz run {target} {})",
            p.display(), p.strip_prefix(fuzz_dir()).unwrap_or(p).display());
    }
    // Trivial inputs every parser must survive.
    for data in [&b""[..], &[0u8], &[0xff; 64], b"{}", b"[]", b"null"] {
        f(data);
    }
}

#[test]
fn every_target_has_a_test() {
    let names: Vec<&str> = lasthop_live::fuzzing::TARGETS.iter().map(|(n, _)| *n).collect();
    assert_eq!(names, ["spec_run", "aggctl_wire", "netlink", "vwire_text", "emu_inject", "spec_toml"]);
    for n in names {
        let src = fuzz_dir().join("fuzz_targets").join(format!("{n}.rs"));
        let text = std::fs::read_to_string(&src).unwrap_or_else(|e| panic!("{}: {e}", src.display()));
        assert!(text.contains(&format!("lasthop_live::fuzzing::{n}(data)")), "{} does not call its body", src.display());
    }
}

#[test]
fn spec_run_corpus() {
    replay("spec_run");
}

#[test]
fn aggctl_wire_corpus() {
    replay("aggctl_wire");
}

#[test]
fn netlink_corpus() {
    replay("netlink");
}

#[test]
fn vwire_text_corpus() {
    replay("vwire_text");
}

#[test]
fn emu_inject_corpus() {
    replay("emu_inject");
}

#[test]
fn spec_toml_corpus() {
    replay("spec_toml");
}
