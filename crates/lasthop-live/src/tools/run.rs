//! `lasthop-live run SPEC`: one simulation and its result file, byte for byte what `lasthop run`
//! writes for the same spec and seed (docs/results.md), without starting Python: the simulator's
//! own TOML reader and rules (`spec_in::parse_toml`, `normalize_checked`, the reader behind
//! `_native.normalize_text`), the run (`lasthop_sim::run_json`), the envelope sealed with its
//! SHA-256 checksum, written atomically. What needs Python (`--pcap`, the summary table) stays
//! with `lasthop run`; `lasthop table -i FILE` reads the file afterwards.
//!
//! The code version is the build's (`<crate version>+<git hash>`); a build from a tree with
//! changes, or without git, appends 12 hex digits of SHA-256 over this executable's GNU build
//! id, as `lasthop.version.identify` does over the extension module's (Python adds its own
//! sources there, which this binary does not run).

use std::fs;
use std::path::{Path, PathBuf};
use std::time::Instant;

use lasthop_sim::spec_in::normalize::normalize_checked;
use lasthop_sim::spec_in::raw::format_duration;
use sha2::{Digest, Sha256};

use super::args::{Args, UsageError};
use crate::sys::fs::{temp_beside, write_atomic_parts};

const PROG: &str = "lasthop-live";
/// The result file's format and its version (`lasthop.results.FORMAT`, `FORMAT_VERSION`).
const FORMAT: &str = "lasthop.result";
const FORMAT_VERSION: u32 = 1;

const HELP: &str = "usage: lasthop-live run SPEC [--seed N] [-o DIR] [-q]

Run one simulation of SPEC (TOML, docs/spec.md) and write DIR/<name>-s<seed>.json, the file
`lasthop run` writes, without Python. Options:
  --seed N      random seed (default: sim.seed of the spec), an integer in 0..=2^64-1
  -o, --out DIR output directory (default: results)
  -q, --quiet   no progress; print only the result path
`lasthop table -i FILE` prints a table of its flows; `lasthop run` also captures pcaps.
";

/// Why the command failed: a user error (exit 2) or the simulator's (exit 1).
enum Fail {
    Usage(Vec<String>),
    Run(String),
}

impl From<UsageError> for Fail {
    fn from(e: UsageError) -> Fail {
        Fail::Usage(vec![e.0])
    }
}

pub fn main(argv: &[String]) -> i32 {
    match run(argv) {
        Ok(()) => 0,
        Err(Fail::Usage(lines)) => {
            for l in lines {
                eprintln!("{PROG}: {l}");
            }
            2
        }
        Err(Fail::Run(e)) => {
            eprintln!("{PROG}: simulation failed: {e}");
            1
        }
    }
}

fn run(argv: &[String]) -> Result<(), Fail> {
    let mut a = Args::parse("run", argv, &["quiet"], &["seed", "out"])?;
    if a.help() {
        print!("{HELP}");
        return Ok(());
    }
    let quiet = a.flag("quiet");
    let seed = match a.value("seed") {
        None => None,
        Some(v) => Some(v.parse::<u64>().map_err(|_| a.err("seed", &v, "an integer in 0..=2^64-1"))?),
    };
    let out = PathBuf::from(a.value("out").unwrap_or_else(|| "results".to_owned()));
    if out.as_os_str().to_string_lossy().trim().is_empty() {
        return Err(UsageError("run: -o: the output directory is empty: name a directory (\".\" for this one)".into()).into());
    }
    a.finish(1)?;
    let Some(spec_path) = a.positional.first().cloned() else {
        return Err(UsageError("run: name the spec file (lasthop-live run SPEC)".into()).into());
    };

    let (text, default_name) = read_spec_file(Path::new(&spec_path))?;
    let raw = lasthop_sim::spec_in::parse_toml(&text)
        .map_err(|e| Fail::Usage(vec![format!("error: {spec_path}: invalid TOML: {e}")]))?;
    let n = normalize_checked(&raw, &default_name).map_err(|es| {
        Fail::Usage(es.into_iter().map(|e| format!("spec error: {} = {}: {}", e.path, e.value, e.allowed)).collect())
    })?;
    let seed = seed.unwrap_or(n.seed);
    if let Some(problem) = unwritable_dir(&out) {
        return Err(UsageError(problem).into());
    }
    let path = out.join(format!("{}-s{seed}.json", n.name));
    if path.is_dir() {
        return Err(UsageError(format!("result path {:?} is a directory", path.display().to_string())).into());
    }

    let mut bar = Bar::new(&n.name, n.duration_ns, quiet);
    let data = lasthop_sim::run_json(&n.json, seed, &mut |f| bar.update(f));
    let data = match data {
        Ok(d) => d,
        Err(e) => {
            bar.finish(false);
            return Err(Fail::Run(e));
        }
    };
    bar.finish(true);

    let parts = result_parts(&n.json, seed, &data, &code_version());
    fs::create_dir_all(&out).map_err(|e| UsageError(format!("cannot create {:?}: {}; nothing was kept", out.display().to_string(), io_why(&e))))?;
    write_atomic_parts(&path, &parts)
        .map_err(|e| UsageError(format!("cannot write {:?}: {}; nothing was kept", path.display().to_string(), io_why(&e))))?;
    if quiet {
        println!("{}", path.display());
    } else {
        println!("result: {}", path.display());
    }
    Ok(())
}

/// The spec file's text and the run name its file name suggests (`lasthop.spec.read_spec_file`).
fn read_spec_file(path: &Path) -> Result<(String, String), Fail> {
    let p = path.display();
    let bytes = fs::read(path).map_err(|e| {
        let why = match e.kind() {
            std::io::ErrorKind::NotFound => "no such file".to_owned(),
            std::io::ErrorKind::IsADirectory => "is a directory, not a spec file".to_owned(),
            _ if path.is_dir() => "is a directory, not a spec file".to_owned(),
            _ => format!("cannot read: {}", io_why(&e)),
        };
        Fail::Usage(vec![format!("error: {p}: {why}")])
    })?;
    let text = String::from_utf8(bytes).map_err(|e| {
        Fail::Usage(vec![format!("error: {p}: not UTF-8 text (invalid byte at {})", e.utf8_error().valid_up_to())])
    })?;
    let stem = path.file_stem().map(|s| s.to_string_lossy().into_owned()).unwrap_or_default();
    Ok((text, default_name(&stem)))
}

/// An OS error as its text alone ("Permission denied"), without Rust's " (os error 13)".
fn io_why(e: &std::io::Error) -> String {
    let s = e.to_string();
    match s.rfind(" (os error ") {
        Some(i) => s[..i].to_owned(),
        None => s,
    }
}

/// `re.sub(r"[^A-Za-z0-9._-]", "_", stem).lstrip("._-") or "scenario"`.
fn default_name(stem: &str) -> String {
    let name: String = stem.chars().map(|c| if c.is_ascii_alphanumeric() || "._-".contains(c) { c } else { '_' }).collect();
    let name = name.trim_start_matches(['.', '_', '-']);
    if name.is_empty() { "scenario".to_owned() } else { name.to_owned() }
}

/// Why results could not be written into `dir` (created if missing, then removed again), or
/// None (`lasthop.results.unwritable_dir`): checked before the run, so that a run's work is
/// not lost to a directory it cannot write.
fn unwritable_dir(dir: &Path) -> Option<String> {
    let shown = format!("{:?}", dir.display().to_string());
    if dir.exists() && !dir.is_dir() {
        return Some(format!("output directory {shown} exists and is not a directory"));
    }
    let mut missing = Vec::new();
    let mut p = dir.to_path_buf();
    while !p.as_os_str().is_empty() && !p.exists() {
        missing.push(p.clone());
        if !p.pop() {
            break;
        }
    }
    let mut created = Vec::new();
    let probe = (|| -> std::io::Result<()> {
        for m in missing.iter().rev() {
            fs::create_dir(m)?;
            created.push(m.clone());
        }
        let (f, tmp) = temp_beside(&dir.join(".lasthop-probe"))?;
        drop(f);
        fs::remove_file(tmp)
    })();
    for m in created.iter().rev() {
        let _ = fs::remove_dir(m);
    }
    probe.err().map(|e| format!("cannot write into output directory {shown}: {}", io_why(&e)))
}

/// The result file's text in pieces (`lasthop.results.result_text`): the envelope's content in
/// canonical JSON (keys sorted) with the checksum of that content inserted first.
fn result_parts(spec_json: &str, seed: u64, data_json: &str, version: &str) -> Vec<String> {
    let head = format!("{{\"code_version\":{},\"data\":", serde_json::Value::from(version));
    let tail = format!(",\"format\":{},\"format_version\":{FORMAT_VERSION},\"seed\":{seed},\"spec\":", serde_json::Value::from(FORMAT));
    let hex = sha256_hex(&[head.as_str(), data_json, tail.as_str(), spec_json, "}"]);
    vec![
        format!("{{\"checksum\":\"sha256:{hex}\",{}", &head[1..]),
        data_json.to_owned(),
        tail,
        spec_json.to_owned(),
        "}\n".to_owned(),
    ]
}

/// The SHA-256 of the concatenated bytes of `parts`, as lowercase hex: a result file's checksum
/// (also `_native.sha256_hex`, which Python's writer calls).
pub fn sha256_hex<S: AsRef<[u8]>>(parts: &[S]) -> String {
    let mut h = Sha256::new();
    for p in parts {
        h.update(p.as_ref());
    }
    h.finalize().iter().map(|b| format!("{b:02x}")).collect()
}

/// How this build was optimized: `"profile-guided"` when it was built again from the counts
/// of its training run (`make build` sets `LASTHOP_PGO` for that build, of the binary and of the
/// Python module alike), `"debug"` without optimization, else `"release"`. `lasthop bench`
/// names the builds it timed.
pub fn build_kind() -> &'static str {
    match option_env!("LASTHOP_PGO") {
        Some("1") => "profile-guided",
        _ if cfg!(debug_assertions) => "debug",
        _ => "release",
    }
}

/// The code version written into the result (see the module's documentation).
pub fn code_version() -> String {
    let native = concat!(env!("CARGO_PKG_VERSION"), "+", env!("LASTHOP_GIT"));
    let git = env!("LASTHOP_GIT");
    if (7..=40).contains(&git.len()) && git.bytes().all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b)) {
        return native.to_owned();
    }
    let id = std::env::current_exe().ok().and_then(|p| elf_build_id(&p));
    let hex = match id {
        Some(id) => sha256_hex(&[b"build-id\0".as_slice(), &id]),
        None => sha256_hex(&[b"native\0"]),
    };
    format!("{native}.{}", &hex[..12])
}

/// The GNU build id of a 64-bit little-endian ELF file (its NT_GNU_BUILD_ID note), or None.
fn elf_build_id(path: &Path) -> Option<Vec<u8>> {
    use std::io::{Read, Seek, SeekFrom};
    let mut f = fs::File::open(path).ok()?;
    let mut hdr = [0u8; 64];
    f.read_exact(&mut hdr).ok()?;
    if &hdr[..4] != b"\x7fELF" || hdr[4] != 2 || hdr[5] != 1 {
        return None;
    }
    let u16_at = |b: &[u8], o: usize| u16::from_le_bytes([b[o], b[o + 1]]) as u64;
    let u32_at = |b: &[u8], o: usize| u32::from_le_bytes(b[o..o + 4].try_into().unwrap_or_default()) as u64;
    let u64_at = |b: &[u8], o: usize| u64::from_le_bytes(b[o..o + 8].try_into().unwrap_or_default());
    let (shoff, shentsize, shnum) = (u64_at(&hdr, 0x28), u16_at(&hdr, 0x3A), u16_at(&hdr, 0x3C));
    if shentsize < 64 || shnum > 4096 {
        return None;
    }
    let mut table = vec![0u8; (shentsize * shnum) as usize];
    f.seek(SeekFrom::Start(shoff)).ok()?;
    f.read_exact(&mut table).ok()?;
    for sh in table.chunks(shentsize as usize) {
        if u32_at(sh, 4) != 7 {
            continue; // SHT_NOTE
        }
        let (off, size) = (u64_at(sh, 24), u64_at(sh, 32));
        if size > 1 << 20 {
            continue;
        }
        let mut notes = vec![0u8; size as usize];
        f.seek(SeekFrom::Start(off)).ok()?;
        f.read_exact(&mut notes).ok()?;
        let mut pos = 0usize;
        while pos + 12 <= notes.len() {
            let (namesz, descsz, kind) = (u32_at(&notes, pos) as usize, u32_at(&notes, pos + 4) as usize, u32_at(&notes, pos + 8));
            let name_at = pos + 12;
            let desc_at = name_at + namesz.div_ceil(4) * 4;
            let end = desc_at + descsz.div_ceil(4) * 4;
            if desc_at + descsz > notes.len() {
                break;
            }
            if kind == 3 && notes.get(name_at..name_at + namesz) == Some(b"GNU\0".as_slice()) {
                return Some(notes[desc_at..desc_at + descsz].to_vec());
            }
            pos = end;
        }
    }
    None
}

/// The progress of one run on stderr (`lasthop.progress.Progress`): on a terminal a bar redrawn
/// at most ten times a second; elsewhere one line at the end; nothing when quiet.
struct Bar {
    label: String,
    duration_ns: u64,
    quiet: bool,
    tty: bool,
    start: Instant,
    last_draw: Option<Instant>,
    fraction: f64,
}

impl Bar {
    fn new(label: &str, duration_ns: u64, quiet: bool) -> Bar {
        // SAFETY: isatty only reads the descriptor's state.
        let tty = unsafe { libc::isatty(2) } == 1;
        Bar { label: label.to_owned(), duration_ns, quiet, tty, start: Instant::now(), last_draw: None, fraction: 0.0 }
    }

    fn update(&mut self, f: f64) {
        self.fraction = f.clamp(0.0, 1.0);
        if self.quiet || !self.tty {
            return;
        }
        let now = Instant::now();
        if self.last_draw.is_some_and(|t| now - t < std::time::Duration::from_millis(100)) && self.fraction < 1.0 {
            return;
        }
        self.last_draw = Some(now);
        self.draw(now);
    }

    fn draw(&self, now: Instant) {
        const WIDTH: usize = 30;
        let f = self.fraction;
        let filled = ((f * WIDTH as f64) as usize).min(WIDTH);
        let elapsed = (now - self.start).as_secs_f64();
        let eta = if f > 0.0 { clock(elapsed * (1.0 - f) / f) } else { "?".to_owned() };
        eprint!(
            "\r{} [{}{}] {:5.1}%  sim {:.2}s/{}  elapsed {}  ETA {eta}\x1b[K",
            self.label,
            "#".repeat(filled),
            ".".repeat(WIDTH - filled),
            f * 100.0,
            f * self.duration_ns as f64 / 1e9,
            format_duration(self.duration_ns),
            clock(elapsed)
        );
    }

    fn finish(&mut self, ok: bool) {
        if self.quiet {
            return;
        }
        if self.tty && self.last_draw.is_some() {
            if ok {
                self.fraction = 1.0;
                self.draw(Instant::now());
            }
            eprintln!();
        } else if ok {
            eprintln!("{}: simulated {} in {:.2}s wall", self.label, format_duration(self.duration_ns), self.start.elapsed().as_secs_f64());
        }
    }
}

fn clock(seconds: f64) -> String {
    let s = seconds.max(0.0).round() as u64;
    let (h, m, s) = (s / 3600, s % 3600 / 60, s % 60);
    if h > 0 { format!("{h}:{m:02}:{s:02}") } else { format!("{m}:{s:02}") }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn default_name_is_the_file_stem_made_safe() {
        assert_eq!(default_name("demo"), "demo");
        assert_eq!(default_name("my spec (2)"), "my_spec__2_");
        assert_eq!(default_name("..hidden"), "hidden");
        assert_eq!(default_name("___"), "scenario");
        assert_eq!(default_name(""), "scenario");
    }

    #[test]
    fn the_checksum_covers_the_content_and_comes_first() {
        let parts = result_parts("{\"name\":\"x\"}", 7, "{\"flows\":[]}", "0.1.0+abcdef0");
        let text = parts.concat();
        let body = "{\"code_version\":\"0.1.0+abcdef0\",\"data\":{\"flows\":[]},\"format\":\"lasthop.result\",\"format_version\":1,\"seed\":7,\"spec\":{\"name\":\"x\"}}";
        let hex = sha256_hex(&[body]);
        assert_eq!(text, format!("{{\"checksum\":\"sha256:{hex}\",{}\n", &body[1..]));
    }

    #[test]
    fn this_executable_has_a_build_id() {
        let exe = std::env::current_exe().unwrap();
        assert!(elf_build_id(&exe).is_some_and(|id| !id.is_empty()));
        assert_eq!(elf_build_id(Path::new("/dev/null")), None);
    }
}
