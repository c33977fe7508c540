//! Capture the git revision at build time for `lasthop._native.version()`.
//!
//! Emits `LASTHOP_GIT` = short hash (`git rev-parse --short HEAD`) plus `-dirty` when
//! `git status --porcelain` is non-empty, or `unknown` when git or the repository is missing
//! (e.g. building from an sdist).
use std::path::PathBuf;
use std::process::Command;

fn git(args: &[&str]) -> Option<String> {
    let out = Command::new("git").args(args).output().ok()?;
    if !out.status.success() {
        return None;
    }
    Some(String::from_utf8_lossy(&out.stdout).trim().to_string())
}

fn main() {
    let manifest = PathBuf::from(std::env::var("CARGO_MANIFEST_DIR").unwrap_or_default());
    let workspace = manifest.join("..").join("..");
    let rev = git(&["rev-parse", "--short", "HEAD"]).filter(|r| !r.is_empty());
    let version = match rev {
        Some(rev) => {
            let dirty = git(&["status", "--porcelain"])
                .is_some_and(|s| !s.is_empty());
            if dirty {
                format!("{rev}-dirty")
            } else {
                rev
            }
        }
        None => "unknown".to_string(),
    };
    println!("cargo:rustc-env=LASTHOP_GIT={version}");

    // Re-run when the revision or the index moves, or when any crate source changes (which
    // may change the dirty flag). Never watch python/: __pycache__ churn would force rebuilds.
    if let Some(git_dir) = git(&["rev-parse", "--absolute-git-dir"]) {
        let git_dir = PathBuf::from(git_dir);
        for f in ["HEAD", "index", "packed-refs"] {
            let p = git_dir.join(f);
            if p.exists() {
                println!("cargo:rerun-if-changed={}", p.display());
            }
        }
        if let Some(head_ref) = git(&["symbolic-ref", "-q", "HEAD"]) {
            let p = git_dir.join(head_ref);
            if p.exists() {
                println!("cargo:rerun-if-changed={}", p.display());
            }
        }
    }
    for p in ["crates", "Cargo.toml", "Cargo.lock"] {
        let p = workspace.join(p);
        if p.exists() {
            println!("cargo:rerun-if-changed={}", p.display());
        }
    }
    println!("cargo:rerun-if-changed=build.rs");
}
