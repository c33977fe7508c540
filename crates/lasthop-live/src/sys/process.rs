//! Processes as /proc shows them (proc(5)): whether a pid still runs, when it started (so a
//! reused pid is told apart), its command line; and who we run as. The emulator's state file
//! and reaper and the live tools' restore records name their owners with these.

use std::fs;
use std::io;

/// Whether this process runs as root (effective uid 0).
pub fn is_root() -> bool {
    // SAFETY: geteuid(2) has no arguments and cannot fail.
    unsafe { libc::geteuid() == 0 }
}

/// Whether `pid` is a running process: its /proc entry exists and it is not a zombie (an exited
/// child its parent has not waited for yet is gone for our purposes).
pub fn pid_alive(pid: u32) -> bool {
    if pid == 0 {
        return false;
    }
    match fs::read_to_string(format!("/proc/{pid}/stat")) {
        // The state letter follows the parenthesized command name, which may contain spaces.
        Ok(stat) => {
            let st = stat
                .rfind(')')
                .and_then(|i| stat[i + 1..].trim_start().chars().next());
            !matches!(st, Some('Z') | Some('X'))
        }
        Err(e) if e.kind() == io::ErrorKind::NotFound => false,
        // /proc unreadable for another reason: fall back to kill(pid, 0).
        Err(_) => {
            let Ok(p) = libc::pid_t::try_from(pid) else {
                return false;
            };
            // SAFETY: signal 0 only checks that the process exists.
            let rc = unsafe { libc::kill(p, 0) };
            rc == 0 || io::Error::last_os_error().raw_os_error() == Some(libc::EPERM)
        }
    }
}

/// When `pid` started, in clock ticks since boot (proc(5): field 22 of /proc/<pid>/stat).
pub fn start_time(pid: u32) -> Option<u64> {
    let stat = fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // Fields after the parenthesized command name start with field 3 (the state).
    let rest = &stat[stat.rfind(')')? + 1..];
    rest.split_whitespace().nth(22 - 3)?.parse().ok()
}

/// The command line of `pid` with NULs as spaces.
pub fn cmdline(pid: u32) -> Option<String> {
    let raw = fs::read(format!("/proc/{pid}/cmdline")).ok()?;
    Some(String::from_utf8_lossy(&raw).replace('\0', " "))
}

/// Seconds since the Unix epoch (0 if the clock is before it).
pub fn now_unix_s() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn liveness() {
        assert!(pid_alive(std::process::id()));
        assert!(start_time(std::process::id()).is_some());
        assert!(!pid_alive(0));
        let mut child = std::process::Command::new("true").spawn().unwrap();
        let pid = child.id();
        child.wait().unwrap();
        assert!(!pid_alive(pid) || cmdline(pid).is_some_and(|c| !c.starts_with("true")));
    }
}
