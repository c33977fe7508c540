//! Named network namespaces as iproute2 manages them (ip-netns(8)): creating, listing and
//! deleting them with `ip`, entering one with setns(2), and finding the processes inside one
//! by comparing /proc/<pid>/ns/net with the namespace's bind mount (namespaces(7)).
//!
//! Creation and deletion go through `ip -batch` so N namespaces cost one `ip` process, not N
//! (the emulator allows 4000 stations).

use std::collections::BTreeSet;
use std::fs;
use std::io::{self, Write};
use std::os::fd::AsRawFd;
use std::os::unix::fs::MetadataExt;
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

/// Where `ip netns add` bind-mounts namespaces (iproute2's NETNS_RUN_DIR).
pub(crate) const NETNS_DIR: &str = "/var/run/netns";

/// The first non-empty line of `bytes`, for one-line error messages.
pub(crate) fn first_line(bytes: &[u8]) -> String {
    let text = String::from_utf8_lossy(bytes);
    text.lines()
        .map(str::trim)
        .find(|l| !l.is_empty())
        .unwrap_or("failed")
        .to_string()
}

/// Run `ip ARGS`; Err is `ip ARGS: <first stderr line>`.
pub(crate) fn ip(args: &[&str]) -> Result<String, String> {
    let what = format!("ip {}", args.join(" "));
    let out = Command::new("ip")
        .args(args)
        .stdin(Stdio::null())
        .output()
        .map_err(|e| format!("{what}: {e}"))?;
    if out.status.success() {
        Ok(String::from_utf8_lossy(&out.stdout).into_owned())
    } else {
        Err(format!("{what}: {}", first_line(&out.stderr)))
    }
}

/// Err(one line) unless iproute2's `ip` can be run.
pub(crate) fn check_ip() -> Result<(), String> {
    match Command::new("ip").arg("-V").stdin(Stdio::null()).output() {
        Ok(out) if out.status.success() => Ok(()),
        Ok(out) => Err(format!("ip -V: {}", first_line(&out.stderr))),
        Err(e) if e.kind() == io::ErrorKind::NotFound => {
            Err("`ip` (iproute2) not found in PATH; install iproute2".to_string())
        }
        Err(e) => Err(format!("ip -V: {e}")),
    }
}

/// `ip [-force] -batch -` with `lines` on stdin. The lines are written from a separate thread so
/// a large batch cannot deadlock against `ip` filling its stderr pipe.
fn ip_batch(lines: &[String], force: bool) -> io::Result<Output> {
    let mut cmd = Command::new("ip");
    if force {
        cmd.arg("-force");
    }
    let mut child = cmd
        .args(["-batch", "-"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()?;
    let mut stdin = child.stdin.take().expect("stdin is piped");
    let text: String = lines.iter().map(|l| format!("{l}\n")).collect();
    let writer = std::thread::spawn(move || stdin.write_all(text.as_bytes()));
    let out = child.wait_with_output()?;
    // A write error only means `ip` stopped reading early (it failed); its status says so.
    let _ = writer.join();
    Ok(out)
}

/// Create the namespaces with one `ip -batch`. Err is `ip netns add NS: <reason>` for the first
/// one that failed (`ip` stops there; the caller removes the ones made before it).
pub(crate) fn add_namespaces(names: &[String]) -> Result<(), String> {
    let lines: Vec<String> = names.iter().map(|n| format!("netns add {n}")).collect();
    let out = ip_batch(&lines, false).map_err(|e| format!("ip -batch (netns add): {e}"))?;
    if out.status.success() {
        return Ok(());
    }
    // `ip` reports the failing batch line as "Command failed -:N" after the reason.
    let stderr = String::from_utf8_lossy(&out.stderr);
    let failed = stderr
        .lines()
        .find_map(|l| l.trim().strip_prefix("Command failed -:"))
        .and_then(|n| n.trim().parse::<usize>().ok())
        .and_then(|n| names.get(n.saturating_sub(1)))
        .or(names.first());
    Err(format!(
        "ip netns add {}: {}",
        failed.map(String::as_str).unwrap_or("?"),
        first_line(&out.stderr)
    ))
}

/// Delete the namespaces, best effort (missing ones are skipped). Returns those still present
/// afterwards.
pub(crate) fn delete_namespaces(names: &[String]) -> Vec<String> {
    let present: Vec<&String> = names.iter().filter(|n| exists(n)).collect();
    if !present.is_empty() {
        let lines: Vec<String> = present.iter().map(|n| format!("netns del {n}")).collect();
        let _ = ip_batch(&lines, true);
    }
    names.iter().filter(|n| exists(n)).cloned().collect()
}

/// Whether namespace `name` exists (its bind mount is in NETNS_DIR).
pub(crate) fn exists(name: &str) -> bool {
    fs::symlink_metadata(format!("{NETNS_DIR}/{name}")).is_ok()
}

/// Named namespaces whose names start with `prefix`, from `ip netns list` (whose lines read
/// `NAME` or `NAME (id: N)`).
pub(crate) fn list_namespaces(prefix: &str) -> Result<Vec<String>, String> {
    let out = ip(&["netns", "list"])?;
    Ok(out
        .lines()
        .filter_map(|l| l.split_whitespace().next())
        .filter(|n| n.starts_with(prefix))
        .map(str::to_string)
        .collect())
}

/// Move the calling thread into namespace `name`. Only for threads that end afterwards (or
/// move back): the rest of the process stays where it was.
pub(crate) fn enter(name: &str) -> io::Result<()> {
    let f = fs::File::open(format!("{NETNS_DIR}/{name}"))?;
    // SAFETY: `f` is an open namespace file for the duration of the call.
    let rc = unsafe { libc::setns(f.as_raw_fd(), libc::CLONE_NEWNET) };
    if rc < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(())
    }
}

/// Pids of the processes (other than this one) whose network namespace is one of `names`.
/// Zombies have released their namespaces and do not count.
pub(crate) fn pids_in(names: &[String]) -> Vec<u32> {
    let ids: BTreeSet<(u64, u64)> = names
        .iter()
        .filter_map(|n| fs::metadata(format!("{NETNS_DIR}/{n}")).ok())
        .map(|m| (m.dev(), m.ino()))
        .collect();
    if ids.is_empty() {
        return Vec::new();
    }
    let me = std::process::id();
    let Ok(dir) = fs::read_dir("/proc") else {
        return Vec::new();
    };
    dir.filter_map(|e| e.ok()?.file_name().to_str()?.parse::<u32>().ok())
        .filter(|&pid| pid != me)
        .filter(|pid| {
            fs::metadata(format!("/proc/{pid}/ns/net"))
                .is_ok_and(|m| ids.contains(&(m.dev(), m.ino())))
        })
        .collect()
}

/// kill(pid, sig), ignoring processes that are already gone.
pub(crate) fn signal(pid: u32, sig: libc::c_int) {
    if let Ok(p) = libc::pid_t::try_from(pid) {
        if p > 0 {
            // SAFETY: plain kill(2); no pointers.
            unsafe { libc::kill(p, sig) };
        }
    }
}

/// SIGTERM every process inside `names`, give them `grace` to exit, SIGKILL the rest, and wait
/// (briefly) until the kernel has moved them all out.
pub(crate) fn stop_processes(names: &[String], grace: Duration) {
    let pids = pids_in(names);
    if pids.is_empty() {
        return;
    }
    for &p in &pids {
        signal(p, libc::SIGTERM);
    }
    if wait_until(grace, || pids_in(names).is_empty()) {
        return;
    }
    for p in pids_in(names) {
        signal(p, libc::SIGKILL);
    }
    wait_until(Duration::from_secs(1), || pids_in(names).is_empty());
}

/// Poll `done` every 10 ms for up to `limit`; whether it became true.
pub(crate) fn wait_until(limit: Duration, mut done: impl FnMut() -> bool) -> bool {
    let start = Instant::now();
    loop {
        if done() {
            return true;
        }
        if start.elapsed() >= limit {
            return false;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
}
