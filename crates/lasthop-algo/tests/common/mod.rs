//! Shared by the property tests: their case counts and a packet handle with a length, a flow
//! and a unique id. (Each test file uses what it needs.)
#![allow(dead_code)]

use lasthop_algo::ecn::Ecn;
use lasthop_algo::aqm::QueuedPacket;
use proptest::test_runner::Config as ProptestConfig;

/// `n` cases, unless `PROPTEST_CASES` asks for another number (longer local campaigns).
pub fn cases(n: u32) -> ProptestConfig {
    let mut c = ProptestConfig::default();
    if std::env::var_os("PROPTEST_CASES").is_none() {
        c.cases = n;
    }
    // Filtered strategies (valid configurations) reject some draws: allow for as many as a long
    // campaign needs, not the fixed default of 65,536 (which 50,000 cases exceed).
    c.max_local_rejects = c.max_local_rejects.max(c.cases.saturating_mul(8));
    c
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TP {
    pub len: u32,
    pub flow: u32,
    pub id: u64,
    pub ecn: Ecn,
}

impl QueuedPacket for TP {
    fn len_bytes(&self) -> u32 {
        self.len
    }
    fn flow_hash(&self) -> u32 {
        self.flow
    }
    fn ecn(&self) -> Ecn {
        self.ecn
    }
    fn set_ecn(&mut self, ecn: Ecn) {
        self.ecn = ecn;
    }
}
