//! lasthop-core: the vocabulary every other lasthop crate speaks.
//!
//! * [`time`]: `Instant` and `Duration` in integer nanoseconds from an arbitrary zero. Model code
//!   never reads a clock; it is handed `now` by the host (simulator or live daemon).
//! * [`units`]: newtypes for bytes and bit rates, with integer conversions to airtime.
//! * [`rng`]: deterministic per-entity random streams derived from `(seed, entity id)`.
//! * [`controller`]: the sans-IO shape (`handle_*` → `poll_*` → `poll_timeout` → `handle_timeout`).
//! * [`trace`]: compact trace events a host may record.
//!
//! `no_std`: this crate has no dependencies and never touches the OS.
#![no_std]
#![forbid(unsafe_code)]

pub mod controller;
pub mod rng;
pub mod time;
pub mod trace;
pub mod units;

pub use controller::Controller;
pub use rng::Rng;
pub use time::{Duration, Instant};
pub use units::{mul_div, BitRate, Bytes};
