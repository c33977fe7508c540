//! What a live tool changed on the host, kept on disk until it has put it back:
//! `/run/lasthop/<tool>/<netns>-<target>.json` (`<netns>`: the inode of the network namespace
//! the tool runs in, so tools in different namespaces never share a record; /run is a tmpfs,
//! so a reboot forgets the record along with the changes).
//!
//! Before changing anything a tool claims the record: if one is there and its owner (pid and
//! start time) still runs, the target is taken and the tool stops with one line; if its owner
//! is dead (a crash, SIGKILL), the tool first puts back what the record lists. It then writes
//! its own record at once (created exclusively), lists each change in it before making it
//! (rewritten atomically: a temporary file renamed over), and removes it after restoring on
//! exit.

use super::host::Change;
use crate::sys::{nsfs, process};
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};

pub const STATE_ROOT: &str = "/run/lasthop";

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Record {
    pub tool: String,
    pub pid: u32,
    pub pid_start: Option<u64>,
    pub target: String,
    pub started_unix_s: u64,
    /// In the order they were made; restored in reverse.
    pub changes: Vec<Change>,
}

impl Record {
    fn owner_alive(&self) -> bool {
        process::pid_alive(self.pid) && (self.pid_start.is_none() || process::start_time(self.pid) == self.pid_start)
    }
}

/// A claimed record file.
pub struct StateFile {
    path: PathBuf,
    record: Record,
}

/// What was found where the record goes.
pub enum Found {
    Nothing,
    /// A dead owner's changes, put back (the lines say what was done).
    Restored(Vec<String>),
}

fn key_text(s: &str) -> String {
    s.chars().map(|c| if c.is_ascii_alphanumeric() || c == '-' || c == '_' { c } else { '_' }).collect()
}

/// The record path of `tool` for `target` in this network namespace.
pub fn path_for(tool: &str, target: &str) -> PathBuf {
    let ns = nsfs::own_netns_inode().unwrap_or(0);
    Path::new(STATE_ROOT).join(tool).join(format!("{ns}-{}.json", key_text(target)))
}

impl StateFile {
    /// Claim the record of `tool` for `target` (see the module doc). `Err` (one line) if a
    /// live process holds it or the directory cannot be written.
    pub fn claim(tool: &str, target: &str) -> Result<(StateFile, Found), String> {
        let path = path_for(tool, target);
        let mut found = Found::Nothing;
        match std::fs::read_to_string(&path) {
            Ok(text) => match serde_json::from_str::<Record>(&text) {
                Ok(old) if old.owner_alive() && old.pid != std::process::id() => {
                    return Err(format!("{target} is already managed by {} (pid {}); stop it first", old.tool, old.pid));
                }
                Ok(old) => {
                    let mut lines = Vec::new();
                    for c in old.changes.iter().rev() {
                        let verb = if matches!(c, Change::Commands { .. }) { "removed" } else { "restored" };
                        match c.restore() {
                            Ok(()) => lines.push(format!("{verb} {} left by a {} that did not exit cleanly (pid {})", c.describe(), old.tool, old.pid)),
                            Err(e) => lines.push(format!("could not restore {} left by pid {}: {e}", c.describe(), old.pid)),
                        }
                    }
                    let _ = std::fs::remove_file(&path);
                    found = Found::Restored(lines);
                }
                Err(_) => {
                    // Not ours to interpret (a foreign or truncated file): refuse to guess.
                    return Err(format!("{} is not a lasthop state record; remove it if nothing runs", path.display()));
                }
            },
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => return Err(format!("read {}: {e}", path.display())),
        }
        let dir = path.parent().expect("a directory");
        std::fs::create_dir_all(dir).map_err(|e| format!("create {}: {e}", dir.display()))?;
        let pid = std::process::id();
        let record = Record { tool: tool.into(), pid, pid_start: process::start_time(pid), target: target.into(), started_unix_s: process::now_unix_s(), changes: Vec::new() };
        let sf = StateFile { path, record };
        // Created exclusively (link(2) of a complete temporary file): of two tools starting at
        // once for one target, one gets EEXIST.
        let tmp = sf.tmp_path();
        sf.write_to(&tmp)?;
        let linked = std::fs::hard_link(&tmp, &sf.path);
        let _ = std::fs::remove_file(&tmp);
        match linked {
            Ok(()) => Ok((sf, found)),
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => Err(format!("{target} is being claimed by another process at this moment; try again")),
            Err(e) => Err(format!("create {}: {e}", sf.path.display())),
        }
    }

    fn tmp_path(&self) -> PathBuf {
        self.path.with_extension(format!("json.{}.tmp", std::process::id()))
    }

    fn write_to(&self, p: &Path) -> Result<(), String> {
        let text = serde_json::to_string_pretty(&self.record).map_err(|e| e.to_string())?;
        std::fs::write(p, text + "\n").map_err(|e| format!("write {}: {e}", p.display()))
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Record `c` (before making it).
    pub fn add(&mut self, c: Change) -> Result<(), String> {
        if !self.record.changes.contains(&c) {
            self.record.changes.push(c);
        }
        self.write()
    }

    fn write(&self) -> Result<(), String> {
        let tmp = self.tmp_path();
        self.write_to(&tmp)?;
        std::fs::rename(&tmp, &self.path).map_err(|e| {
            let _ = std::fs::remove_file(&tmp);
            format!("write {}: {e}", self.path.display())
        })
    }

    /// Put everything back (newest first) and remove the record. Returns a line per change.
    /// The record goes even if something could not be restored (the thing it named is gone,
    /// or the failure is reported now); a crash, not a failed restore, is what it is for.
    pub fn restore_all(self) -> Vec<Result<String, String>> {
        let mut out = Vec::new();
        for c in self.record.changes.iter().rev() {
            let verb = if matches!(c, Change::Commands { .. }) { "removed" } else { "restored" };
            match c.restore() {
                Ok(()) => out.push(Ok(format!("{verb} {}", c.describe()))),
                Err(e) => out.push(Err(format!("could not restore {}: {e}", c.describe()))),
            }
        }
        let _ = std::fs::remove_file(&self.path);
        out
    }

    /// Drop the claim without restoring (nothing was changed).
    pub fn release(self) {
        let _ = std::fs::remove_file(&self.path);
    }
}
