//! lasthop-algo: decision-makers that run unchanged in the simulator, the emulator and the live
//! daemons. Everything here is sans-IO (see `lasthop_core::controller`) and `no_std + alloc`.
//!
//! * [`aqm`]: queue disciplines behind one `Qdisc` trait (FIFO tail drop, CoDel, PIE, FQ-CoDel,
//!   the DualQ Coupled AQM DualPI2 for L4S).
//! * [`control`]: receiver ACK policies, the history-based initial congestion window, and
//!   aggctl (aggregation estimator, rate allocator).
//! * [`cc`]: congestion controllers (NewReno, CUBIC with HyStart++, BBR, and the L4S
//!   scalable controllers DCTCP and TCP Prague).
//! * [`tcp`]: TCP sender and receiver endpoints.
//! * [`ecn`]: the IP ECN field and TCP's Accurate ECN counters (RFC 3168, RFC 9768).
//! * [`quic`]: a QUIC endpoint model (RFC 9000/9002 timing, Chromium's congestion control,
//!   pacing and ACK policies; no cryptography, realistic packet sizes).
#![no_std]
#![forbid(unsafe_code)]
extern crate alloc;

pub mod aqm;
pub mod cc;
pub mod control;
pub mod ecn;
pub mod quic;
pub mod tcp;
