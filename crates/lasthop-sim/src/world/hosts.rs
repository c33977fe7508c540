//! The mechanism hosts of the world: the transport endpoints (TCP, QUIC), the split proxy
//! (Virtual Wires), the aggregation controller (aggctl) and the external packets of the
//! emulator, each driving its sans-IO component from `lasthop-algo` inside the cell.

pub(super) mod aggctl;
pub(super) mod ext;
pub(super) mod quic;
pub(super) mod tcp;
pub(super) mod vwire;
