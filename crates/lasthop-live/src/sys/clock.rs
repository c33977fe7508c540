//! The kernel's clocks in nanoseconds (clock_gettime(2)), for hosts that schedule on them
//! directly rather than through `std::time::Instant`.

/// CLOCK_REALTIME in ns (what SO_TIMESTAMPNS stamps packets with).
pub fn realtime_ns() -> u64 {
    clock(libc::CLOCK_REALTIME)
}

/// CLOCK_MONOTONIC in ns (what a pacer schedules on).
pub fn mono_ns() -> u64 {
    clock(libc::CLOCK_MONOTONIC)
}

fn clock(id: libc::clockid_t) -> u64 {
    let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: clock_gettime writes one timespec.
    unsafe { libc::clock_gettime(id, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}
