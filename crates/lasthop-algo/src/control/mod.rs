//! Controllers that turn measurements into sending decisions (rates, pacing), sans-IO: each is
//! driven as `handle_input(now, input)` → `poll_output()` → `poll_timeout()` →
//! `handle_timeout(now)` (the [`lasthop_core::Controller`] shape), keeps params / vars / stats
//! and checks its state with `invariants()`.

pub mod aggctl;
