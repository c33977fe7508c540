//! Shared by the property tests: a packet handle with a length, a flow and a unique id.

use lasthop_algo::aqm::QueuedPacket;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TP {
    pub len: u32,
    pub flow: u32,
    pub id: u64,
}

impl QueuedPacket for TP {
    fn len_bytes(&self) -> u32 {
        self.len
    }
    fn flow_hash(&self) -> u32 {
        self.flow
    }
}
