//! The calling thread's scheduling (sched_setaffinity(2), sched_setscheduler(2), prctl(2)
//! PR_SET_TIMERSLACK): a thread that keeps wall-clock deadlines (the emulator's model loop, a
//! pacer) pins itself to a CPU, makes its timers exact, and may ask for SCHED_FIFO.

/// The calling thread's CPU affinity, to restore after the run.
pub fn affinity() -> Option<libc::cpu_set_t> {
    // SAFETY: cpu_set_t is plain data filled by sched_getaffinity for this thread.
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        (libc::sched_getaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &mut set) == 0).then_some(set)
    }
}

/// A CPU set of `cpus` (each below CPU_SETSIZE).
pub fn cpu_set(cpus: &[usize]) -> libc::cpu_set_t {
    // SAFETY: cpu_set_t is plain data; CPU_SET indexes within it for indices below CPU_SETSIZE.
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        for &c in cpus.iter().filter(|&&c| c < libc::CPU_SETSIZE as usize) {
            libc::CPU_SET(c, &mut set);
        }
        set
    }
}

/// Set the calling thread's CPU affinity (back to what [`affinity`] returned).
pub fn set_affinity(set: &libc::cpu_set_t) {
    // SAFETY: a valid cpu_set_t for the calling thread.
    unsafe {
        libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), set);
    }
}

/// Pin the calling thread to `cpu` and make its timers exact; returns whether pinning worked.
pub fn pin_and_tighten(cpu: Option<usize>) -> bool {
    // SAFETY: prctl(PR_SET_TIMERSLACK) takes plain integers and only affects this thread.
    unsafe {
        libc::prctl(libc::PR_SET_TIMERSLACK, 1u64, 0u64, 0u64, 0u64);
    }
    let Some(cpu) = cpu else { return false };
    // SAFETY: cpu_set_t is plain data; CPU_SET indexes within it; sched_setaffinity(0) acts
    // on the calling thread.
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        libc::CPU_SET(cpu, &mut set);
        libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set) == 0
    }
}

/// Put the calling thread under SCHED_FIFO at `priority`; returns its previous policy and
/// priority to restore, or the error's text.
pub fn set_realtime(priority: i32) -> Result<(i32, i32), String> {
    // SAFETY: sched_getscheduler/sched_getparam/sched_setscheduler(0, …) act on the calling
    // thread and read or write a plain sched_param.
    unsafe {
        let old = libc::sched_getscheduler(0);
        let mut p = libc::sched_param { sched_priority: 0 };
        libc::sched_getparam(0, &mut p);
        let new = libc::sched_param { sched_priority: priority };
        if libc::sched_setscheduler(0, libc::SCHED_FIFO, &new) != 0 {
            return Err(std::io::Error::last_os_error().to_string());
        }
        Ok((old, p.sched_priority))
    }
}
