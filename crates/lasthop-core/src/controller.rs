//! The sans-IO controller shape (after quinn-proto's `Connection`).
//!
//! A controller never reads a clock, sleeps or performs IO. A host drives it:
//!
//! 1. `handle_input(now, input)` — something happened (a packet, a report, a measurement);
//! 2. `poll_output()` — drain the decisions it produced, until `None`;
//! 3. `poll_timeout()` — when it next wants to be woken, if ever;
//! 4. `handle_timeout(now)` — the host's clock reached that time. A spurious or early call is a
//!    no-op, so hosts may wake controllers freely.
//!
//! The simulator drives controllers from virtual time, the live daemons from the wall clock;
//! the controller cannot tell the difference, which is what makes simulated results carry over.

use crate::time::Instant;

pub trait Controller {
    type Input;
    type Output;

    fn handle_input(&mut self, now: Instant, input: Self::Input);
    fn poll_output(&mut self) -> Option<Self::Output>;
    fn poll_timeout(&self) -> Option<Instant>;
    fn handle_timeout(&mut self, now: Instant);
}
