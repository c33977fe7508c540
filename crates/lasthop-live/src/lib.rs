//! lasthop-live: the only owner of the wall clock and the OS: the emulator's TUN devices and
//! namespaces, and the live tools.
//!
//! * [`tun`]: one TUN device (IPv4 packets in and out of a kernel network stack).
//! * [`netns`]: the emulator's topology: one network namespace per node, each holding a TUN
//!   device whose file descriptor stays in this process; building, tearing down, `emu down`,
//!   and the reaper that cleans up after a killed emulator.
//! * [`sys`]: the OS layer the emulator and the tools share (stop signals, processes, a
//!   thread's CPU and scheduler, clocks, namespaces by inode).
//! * [`fuzzing`]: the bodies of the fuzz targets (`fuzz/`), also replayed over the kept corpus
//!   by `cargo test`.
//! * [`tools`]: the live tools (`lasthop-live TOOL`), each in the daemon skeleton of
//!   `tools/daemon.rs`.
//! * [`emu`]: the real-time loop: the simulator's cell (`lasthop_sim::world::World`) stepped
//!   on the wall clock, real packets read from and written to the TUN devices.
//!
//! Everything here needs root (CAP_NET_ADMIN, CAP_SYS_ADMIN) except [`netns::plan`].

// lasthop-live is the wall-clock owner: it may read the clock and sleep (docs/architecture.md).
#![allow(clippy::disallowed_methods)]

pub mod emu;
pub mod emu_nl;
pub mod fuzzing;
mod ifreq;
pub mod ip_ecn;
pub mod netns;
pub mod nl;
mod nsops;
mod reaper;
mod state;
pub mod sys;
pub mod tools;
pub mod tun;
