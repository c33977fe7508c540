//! Trace events: a compact, copyable record of what a model did, for hosts that keep a trace
//! (pcap export, debugging, scripted tests). Models push them into a `TraceSink` the host
//! provides; the default sink drops everything at zero cost.

use crate::time::Instant;

/// What happened.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TraceKind {
    /// A packet entered a queue.
    Enqueue,
    /// A packet was dropped by a queue (limit or AQM).
    Drop,
    /// A packet left a queue toward the MAC.
    Dequeue,
    /// A PPDU started on the medium; `a` = MPDUs in it, `b` = PSDU bytes.
    TxStart,
    /// Several transmissions started in the same slot; `a` = number of colliders.
    Collision,
    /// A Block Ack or Ack was received; `a` = MPDUs acknowledged, `b` = MPDUs missing.
    Ack,
    /// A packet was delivered to its destination application.
    Deliver,
}

/// One trace record. `node` and `flow` are host-assigned ids; `a`/`b` depend on `kind`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TraceEvent {
    pub time: Instant,
    pub kind: TraceKind,
    pub node: u32,
    pub flow: u32,
    pub a: u64,
    pub b: u64,
}

/// Where trace events go.
pub trait TraceSink {
    fn record(&mut self, ev: TraceEvent);
    /// Whether recording is on; models may skip building events when it is not.
    fn enabled(&self) -> bool {
        true
    }
}

/// A sink that discards everything.
#[derive(Default, Clone, Copy, Debug)]
pub struct NullSink;

impl TraceSink for NullSink {
    #[inline]
    fn record(&mut self, _ev: TraceEvent) {}
    #[inline]
    fn enabled(&self) -> bool {
        false
    }
}
