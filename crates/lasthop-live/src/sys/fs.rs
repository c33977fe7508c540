//! Files a reader (or a crash) never sees half written.

use std::io::Write;
use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};

/// Write `text` to `path` through a temporary file and a rename (rename(2) is atomic).
pub fn write_atomic(path: &Path, text: &str) -> Result<(), String> {
    write_atomic_parts(path, &[text]).map_err(|e| format!("{}: {e}", path.display()))
}

/// Write the concatenation of `parts` to `path` so that the file is either complete or absent: a
/// new temporary file beside it, flushed to disk, made world-readable, then renamed over `path`.
/// SIGINT and SIGTERM wait until the rename is done (a stop during the write ends the process
/// after it, with the file whole).
pub fn write_atomic_parts<S: AsRef<str>>(path: &Path, parts: &[S]) -> std::io::Result<()> {
    let _held = HeldSignals::new();
    let (mut f, tmp) = temp_beside(path)?;
    let written = (|| -> std::io::Result<()> {
        for p in parts {
            f.write_all(p.as_ref().as_bytes())?;
        }
        f.sync_all()?;
        std::fs::set_permissions(&tmp, std::fs::Permissions::from_mode(0o644))?;
        std::fs::rename(&tmp, path)
    })();
    if written.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    written
}

/// A new file `.<name>.<12 hex>.tmp` next to `path`, owner-only, opened for writing.
pub fn temp_beside(path: &Path) -> std::io::Result<(std::fs::File, PathBuf)> {
    let name = path.file_name().map(|s| s.to_string_lossy().into_owned()).unwrap_or_default();
    let dir = path.parent().filter(|p| !p.as_os_str().is_empty()).unwrap_or(Path::new("."));
    for _ in 0..100 {
        let mut b = [0u8; 6];
        // SAFETY: getrandom writes at most 6 bytes into `b`.
        if unsafe { libc::getrandom(b.as_mut_ptr() as *mut libc::c_void, b.len(), 0) } != b.len() as isize {
            return Err(std::io::Error::last_os_error());
        }
        let hex: String = b.iter().map(|x| format!("{x:02x}")).collect();
        let tmp = dir.join(format!(".{name}.{hex}.tmp"));
        match std::fs::OpenOptions::new().write(true).create_new(true).mode(0o600).open(&tmp) {
            Ok(f) => return Ok((f, tmp)),
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => continue,
            Err(e) => return Err(e),
        }
    }
    Err(std::io::Error::other("no free temporary name"))
}

/// SIGINT and SIGTERM blocked for this thread while it lives; a signal that came meanwhile is
/// delivered when it ends.
struct HeldSignals(libc::sigset_t);

impl HeldSignals {
    fn new() -> HeldSignals {
        // SAFETY: sigset_t is plain data, initialised by sigemptyset before use; the masks are
        // this thread's own.
        unsafe {
            let mut set: libc::sigset_t = std::mem::zeroed();
            let mut old: libc::sigset_t = std::mem::zeroed();
            libc::sigemptyset(&mut set);
            libc::sigaddset(&mut set, libc::SIGINT);
            libc::sigaddset(&mut set, libc::SIGTERM);
            libc::pthread_sigmask(libc::SIG_BLOCK, &set, &mut old);
            HeldSignals(old)
        }
    }
}

impl Drop for HeldSignals {
    fn drop(&mut self) {
        // SAFETY: restores the mask saved in `new`.
        unsafe {
            libc::pthread_sigmask(libc::SIG_SETMASK, &self.0, std::ptr::null_mut());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_file_appears_whole_with_nothing_beside_it() {
        let dir = std::env::temp_dir().join(format!("lasthop-fs-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let p = dir.join("out.json");
        write_atomic_parts(&p, &["{\"a\":", "1}\n"]).unwrap();
        write_atomic(&p, "{\"a\":2}\n").unwrap();
        assert_eq!(std::fs::read_to_string(&p).unwrap(), "{\"a\":2}\n");
        assert_eq!(std::fs::metadata(&p).unwrap().permissions().mode() & 0o777, 0o644);
        assert_eq!(std::fs::read_dir(&dir).unwrap().count(), 1);
        assert!(write_atomic(&dir.join("no/such/dir.json"), "x").is_err());
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
