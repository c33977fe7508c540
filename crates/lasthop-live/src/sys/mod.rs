//! The OS layer the emulator and the live tools share: stop signals, processes and their
//! liveness, network namespaces by inode, a thread's CPU and scheduler, the kernel's clocks,
//! sleeping on descriptors, atomic files. Plain wrappers over libc and /proc; what the emulator
//! alone needs (namespaces by name, TUN devices, the reaper) stays beside it.
//!
//! * [`signals`]: SIGINT/SIGTERM/SIGHUP as a stop flag for a real-time loop.
//! * [`process`]: whether a pid still runs and since when; whether we are root.
//! * [`nsfs`]: a network namespace's inode.
//! * [`sched`]: CPU affinity, timer slack, SCHED_FIFO of the calling thread.
//! * [`clock`], [`poll`], [`fs`]: the kernel's clocks in ns, ppoll with ns timeouts, atomic
//!   writes.
//! * [`uring`]: readiness and batched writes through one io_uring (the emulator's packet I/O).

pub mod clock;
pub mod fs;
pub mod nsfs;
pub mod poll;
pub mod process;
pub mod sched;
pub mod signals;
pub mod uring;
