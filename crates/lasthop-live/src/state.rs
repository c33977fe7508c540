//! The running emulator's state file, /run/lasthop/emu/<name>.json (its owner's liveness from
//! `sys::process`).
//!
//! The state file is both the record `emu down`, `emu exec` and the reaper read, and the lock
//! that keeps two emulators of one name apart: it is created with link(2) from a fully written
//! temporary file, which is atomic (readers never see a partial file) and exclusive (EEXIST if
//! another emulator holds the name). /run is a tmpfs, so a reboot forgets it along with the
//! namespaces it describes.

use std::fs;
use std::io::{self, Write};
use std::net::Ipv4Addr;
use std::path::{Path, PathBuf};

use crate::sys::process::{pid_alive, start_time};
use serde::{Deserialize, Serialize};

/// Where state files live.
pub(crate) const STATE_DIR: &str = "/run/lasthop/emu";

/// One node as recorded in the state file.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub(crate) struct StateNode {
    pub node: String,
    pub netns: String,
    pub ifname: String,
    pub addr: Ipv4Addr,
}

/// The state file's content. Field order matters to the reaper: serialized compactly, `pid`
/// always appears as `"pid":N,` (see reaper.rs).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub(crate) struct State {
    pub name: String,
    pub pid: u32,
    pub namespaces: Vec<String>,
    pub nodes: Vec<StateNode>,
    pub started_unix_s: u64,
    /// The emulator's start time (clock ticks since boot, /proc/<pid>/stat field 22): with
    /// `pid` it names the process even after the pid has been reused.
    #[serde(default)]
    pub pid_start: Option<u64>,
    /// The reaper's pid (also its process group): a later `emu up`/`emu down` stops a stale
    /// reaper before cleaning so the two never race.
    #[serde(default)]
    pub reaper_pid: Option<u32>,
}

impl State {
    /// Whether the recorded emulator is still running (same pid, same start time).
    pub(crate) fn owner_alive(&self) -> bool {
        pid_alive(self.pid) && (self.pid_start.is_none() || start_time(self.pid) == self.pid_start)
    }
}

/// The state file of emu `name`.
pub(crate) fn path(name: &str) -> PathBuf {
    Path::new(STATE_DIR).join(format!("{name}.json"))
}

/// Outcome of [`claim`].
pub(crate) enum Claim {
    /// The file now records us.
    Claimed,
    /// A live emulator holds the name.
    Busy(u32),
    /// A file is there but its owner is dead, or it cannot be parsed.
    Stale(Option<State>),
}

/// Create the state file exclusively with `state`.
pub(crate) fn claim(file: &Path, state: &State) -> Result<Claim, String> {
    let dir = file.parent().unwrap_or(Path::new("/"));
    fs::create_dir_all(dir).map_err(|e| format!("create {}: {e}", dir.display()))?;
    let tmp = file.with_extension(format!("json.{}.tmp", std::process::id()));
    write_file(&tmp, state)?;
    let linked = fs::hard_link(&tmp, file);
    let _ = fs::remove_file(&tmp);
    match linked {
        Ok(()) => Ok(Claim::Claimed),
        Err(e) if e.kind() == io::ErrorKind::AlreadyExists => match read(file) {
            Ok(Some(old)) if old.owner_alive() => Ok(Claim::Busy(old.pid)),
            Ok(old) => Ok(Claim::Stale(old)),
            // It vanished between link and read: its owner just cleaned up; try again.
            Err(_) => Ok(Claim::Stale(None)),
        },
        Err(e) => Err(format!("create {}: {e}", file.display())),
    }
}

/// The state in `file`: Ok(None) when it cannot be parsed, Err when it cannot be read (for
/// instance because there is none).
pub(crate) fn read(file: &Path) -> io::Result<Option<State>> {
    let text = fs::read_to_string(file)?;
    Ok(serde_json::from_str(&text).ok())
}

/// Remove `file` if it still records `pid` (a newer emulator's file is left alone).
pub(crate) fn remove_if_owned(file: &Path, pid: u32) {
    if let Ok(Some(s)) = read(file) {
        if s.pid == pid {
            let _ = fs::remove_file(file);
        }
    }
}

fn write_file(tmp: &Path, state: &State) -> Result<(), String> {
    let json = serde_json::to_string(state).map_err(|e| format!("state file: {e}"))?;
    let mut f = fs::File::create(tmp).map_err(|e| format!("create {}: {e}", tmp.display()))?;
    f.write_all(json.as_bytes())
        .and_then(|()| f.write_all(b"\n"))
        .map_err(|e| format!("write {}: {e}", tmp.display()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pid_field_is_compact_for_the_reaper() {
        let s = State {
            name: "lh".into(),
            pid: 4242,
            namespaces: vec!["lh-lh-server".into()],
            nodes: vec![StateNode {
                node: "server".into(),
                netns: "lh-lh-server".into(),
                ifname: "eth0".into(),
                addr: Ipv4Addr::new(10, 77, 0, 1),
            }],
            started_unix_s: 1,
            pid_start: Some(99),
            reaper_pid: Some(7),
        };
        let json = serde_json::to_string(&s).unwrap();
        assert!(json.contains("\"pid\":4242,"), "{json}");
        assert!(json.contains("\"addr\":\"10.77.0.1\""), "{json}");
        assert_eq!(serde_json::from_str::<State>(&json).unwrap(), s);
    }
}
