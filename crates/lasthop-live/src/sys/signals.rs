//! SIGINT, SIGTERM and SIGHUP as a stop flag for the real-time loop, following signal(7) and
//! sigaction(2).
//!
//! The handler only stores the signal number in an atomic (async-signal-safe). It is installed
//! without SA_RESTART so a blocking ppoll/poll returns EINTR at once and the loop sees the flag
//! without waiting for its next timeout.

use std::io;
use std::sync::atomic::{AtomicBool, AtomicI32, Ordering};

/// The stop signals, in the order their previous actions are saved.
const STOP_SIGNALS: [libc::c_int; 3] = [libc::SIGINT, libc::SIGTERM, libc::SIGHUP];

/// The last stop signal received since [`StopSignals::install`]; 0 for none.
static RECEIVED: AtomicI32 = AtomicI32::new(0);
/// One guard at a time: a second one would save the first one's handler as "previous".
static INSTALLED: AtomicBool = AtomicBool::new(false);

extern "C" fn on_stop_signal(sig: libc::c_int) {
    RECEIVED.store(sig, Ordering::SeqCst);
}

/// Install handlers for SIGINT, SIGTERM and SIGHUP that set a flag (async-signal-safe: only an
/// atomic store). The guard restores the previous handlers on drop.
pub struct StopSignals {
    saved: Vec<(libc::c_int, libc::sigaction)>,
}

impl StopSignals {
    /// Install the handlers and clear the flag. Fails (AlreadyExists) while another guard is
    /// alive in this process.
    pub fn install() -> io::Result<StopSignals> {
        if INSTALLED.swap(true, Ordering::SeqCst) {
            return Err(io::Error::new(
                io::ErrorKind::AlreadyExists,
                "stop-signal handlers are already installed",
            ));
        }
        RECEIVED.store(0, Ordering::SeqCst);
        let mut guard = StopSignals {
            saved: Vec::with_capacity(STOP_SIGNALS.len()),
        };
        for sig in STOP_SIGNALS {
            // SAFETY: sigaction is plain old data; all-zero is a valid value (empty mask, no
            // flags) that the fields below complete.
            let mut action: libc::sigaction = unsafe { std::mem::zeroed() };
            action.sa_sigaction = on_stop_signal as *const () as libc::sighandler_t;
            // No SA_RESTART: interrupted system calls fail with EINTR (see the module doc).
            action.sa_flags = 0;
            // SAFETY: as above; `old` is overwritten by the call below.
            let mut old: libc::sigaction = unsafe { std::mem::zeroed() };
            // SAFETY: both pointers are to live sigaction values; `old` is written by the call.
            let rc = unsafe { libc::sigaction(sig, &action, &mut old) };
            if rc < 0 {
                let e = io::Error::last_os_error();
                drop(guard); // restores the ones already replaced
                return Err(e);
            }
            guard.saved.push((sig, old));
        }
        Ok(guard)
    }

    /// Whether a stop signal arrived since [`StopSignals::install`].
    pub fn stop_requested(&self) -> bool {
        RECEIVED.load(Ordering::SeqCst) != 0
    }

    /// The last stop signal that arrived (SIGINT, SIGTERM or SIGHUP), if any.
    pub fn which(&self) -> Option<i32> {
        match RECEIVED.load(Ordering::SeqCst) {
            0 => None,
            sig => Some(sig),
        }
    }
}

impl Drop for StopSignals {
    fn drop(&mut self) {
        for (sig, old) in self.saved.drain(..).rev() {
            // SAFETY: `old` is the action sigaction(2) returned for `sig`; the old-action
            // pointer may be null.
            unsafe {
                libc::sigaction(sig, &old, std::ptr::null_mut());
            }
        }
        INSTALLED.store(false, Ordering::SeqCst);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn flag_set_by_signal_and_handlers_restored() {
        let before = current_action(libc::SIGHUP);
        let guard = StopSignals::install().unwrap();
        assert!(
            StopSignals::install().is_err(),
            "a second guard must be refused"
        );
        assert!(!guard.stop_requested());
        assert_eq!(guard.which(), None);
        // SAFETY: raise(3) sends SIGHUP to this thread; our handler is installed.
        assert_eq!(unsafe { libc::raise(libc::SIGHUP) }, 0);
        assert!(guard.stop_requested());
        assert_eq!(guard.which(), Some(libc::SIGHUP));
        assert_ne!(current_action(libc::SIGHUP), before);
        drop(guard);
        assert_eq!(
            current_action(libc::SIGHUP),
            before,
            "the previous action is back"
        );
        let again = StopSignals::install().unwrap();
        assert!(!again.stop_requested(), "install clears the flag");
    }

    fn current_action(sig: libc::c_int) -> libc::sighandler_t {
        // SAFETY: sigaction is plain old data; all-zero is valid and is overwritten below.
        let mut cur: libc::sigaction = unsafe { std::mem::zeroed() };
        // SAFETY: query only: a null new action, `cur` is written by the call.
        assert_eq!(
            unsafe { libc::sigaction(sig, std::ptr::null(), &mut cur) },
            0
        );
        cur.sa_sigaction
    }
}
