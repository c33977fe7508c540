//! Sleeping until a descriptor is readable or a timeout passes, with nanosecond timeouts
//! (ppoll(2)). A stop signal ends the sleep early: the handlers are installed without
//! SA_RESTART (`signals.rs`), so ppoll returns EINTR at once.

use std::net::UdpSocket;
use std::os::fd::AsRawFd;
use std::time::Duration;

/// Sleep until one of `fds` is readable or `timeout` passes.
pub fn wait(fds: &mut [libc::pollfd], timeout: Duration) {
    let ts = libc::timespec { tv_sec: timeout.as_secs() as libc::time_t, tv_nsec: timeout.subsec_nanos() as libc::c_long };
    // SAFETY: `fds` is a valid slice of pollfd for its length; the timespec outlives the call.
    unsafe {
        libc::ppoll(fds.as_mut_ptr(), fds.len() as libc::nfds_t, &ts, std::ptr::null());
    }
}

/// Sleep until one of the sockets is readable or `timeout` passes.
pub fn wait_readable(socks: &[&UdpSocket], timeout: Duration) {
    let mut p: Vec<libc::pollfd> = socks.iter().map(|s| libc::pollfd { fd: s.as_raw_fd(), events: libc::POLLIN, revents: 0 }).collect();
    wait(&mut p, timeout);
}
