//! The reaper: a small shell process that removes the emulator's namespaces if the emulator
//! dies without tearing down (SIGKILL, abort, OOM). It follows pipe(7): when every write end of
//! a pipe is closed, read(2) on the read end returns end-of-file, and the kernel closes the
//! emulator's write end whatever way it dies.
//!
//! The reaper's stdin is the read end; only this process holds the write end (O_CLOEXEC, so
//! programs the emulator starts later do not inherit it and keep the reaper waiting). An orderly
//! teardown writes `clean` first; anything else (EOF) means the emulator is gone. The reaper has
//! its own process group, so a terminal's Ctrl-C (sent to the foreground group) does not reach
//! it, and it ignores INT/TERM/HUP besides. It only cleans while the state file still records
//! this emulator's pid, so a reaper that wakes late never tears down a newer emulator of the
//! same name.

use std::fs::File;
use std::io::{self, Write};
use std::os::fd::{FromRawFd, OwnedFd};
use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::{Child, Command, Stdio};

use crate::sys::process;

/// Marks the reaper's command line so a later `emu up`/`emu down` can recognise it before
/// signalling a recorded reaper pid.
pub(crate) const ARGV0: &str = "lasthop-emu-reaper";

/// Arguments: $1 state file, $2 emulator pid, then the namespaces. The pid check matches the
/// compact JSON written by state.rs (`"pid":N,`). Processes are killed before the namespaces
/// are deleted because deleting a namespace's name does not stop the programs inside it.
const SCRIPT: &str = r#"trap '' INT TERM HUP
IFS= read -r line
[ "$line" = clean ] && exit 0
state=$1; pid=$2; shift 2
owned() { case "$(cat "$state" 2>/dev/null)" in *"\"pid\":$pid,"*) return 0;; esac; return 1; }
owned || exit 0
pids=$(printf 'netns pids %s\n' "$@" | ip -force -batch - 2>/dev/null)
[ -n "$pids" ] && kill -9 $pids 2>/dev/null
printf 'netns del %s\n' "$@" | ip -force -batch - >/dev/null 2>&1
owned && rm -f "$state"
exit 0
"#;

/// The running reaper and the write end of its pipe.
pub(crate) struct Reaper {
    child: Child,
    pipe: Option<File>,
}

impl Reaper {
    /// Start the reaper for emulator `pid`, its state file and namespaces.
    pub(crate) fn spawn(
        state_file: &Path,
        pid: u32,
        namespaces: &[String],
    ) -> Result<Reaper, String> {
        let (read_end, write_end) = pipe_cloexec().map_err(|e| format!("reaper pipe: {e}"))?;
        let child = Command::new("sh")
            .arg("-c")
            .arg(SCRIPT)
            .arg(ARGV0)
            .arg(state_file)
            .arg(pid.to_string())
            .args(namespaces)
            // The read end becomes the reaper's fd 0 (dup2 drops O_CLOEXEC on the copy).
            .stdin(Stdio::from(read_end))
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .process_group(0)
            .spawn()
            .map_err(|e| format!("start the reaper (sh): {e}"))?;
        Ok(Reaper {
            child,
            pipe: Some(File::from(write_end)),
        })
    }

    /// The reaper's pid (and process group id).
    pub(crate) fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Tell the reaper everything is clean, close the pipe and wait for it to exit.
    pub(crate) fn finish_clean(&mut self) {
        if let Some(mut pipe) = self.pipe.take() {
            // EPIPE if the reaper was killed: nothing left to tell it.
            let _ = pipe.write_all(b"clean\n");
        }
        let _ = self.child.wait();
    }
}

/// Stop a stale reaper of an earlier emulator (recorded in its state file) before cleaning up
/// after that emulator, so the two never race. The pid is only signalled if its command line
/// is a reaper's for `state_file`, in case the pid was reused.
pub(crate) fn kill_stale(reaper_pid: Option<u32>, state_file: &Path) {
    let Some(pid) = reaper_pid else { return };
    let ours = process::cmdline(pid)
        .is_some_and(|c| c.contains(ARGV0) && c.contains(state_file.to_string_lossy().as_ref()));
    if ours && process::pid_alive(pid) {
        crate::nsops::signal(pid, libc::SIGKILL);
    }
}

/// pipe2(O_CLOEXEC): (read end, write end).
fn pipe_cloexec() -> io::Result<(OwnedFd, OwnedFd)> {
    let mut fds = [0 as libc::c_int; 2];
    // SAFETY: `fds` has room for the two descriptors pipe2 writes.
    let rc = unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) };
    if rc < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: both descriptors were just created by pipe2 and are owned by nobody else.
    Ok(unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) })
}
