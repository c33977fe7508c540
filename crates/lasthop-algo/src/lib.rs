//! lasthop-algo: decision-makers that run unchanged in the simulator, the emulator and the live
//! daemons. Everything here is sans-IO (see `lasthop_core::controller`) and `no_std + alloc`.
//!
//! * [`aqm`]: queue disciplines behind one `Qdisc` trait (FIFO tail drop, CoDel, PIE, FQ-CoDel).
//! * [`control`]: receiver ACK policies, the history-based initial congestion window, and
//!   aggctl (aggregation estimator, rate allocator).
#![no_std]
#![forbid(unsafe_code)]
extern crate alloc;

pub mod aqm;
pub mod cc;
pub mod control;
pub mod tcp;
