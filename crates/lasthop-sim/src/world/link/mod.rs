//! One link's frames as the MAC components of `lasthop_wifi::mac` see them: the A-MPDU builder
//! pulls from it (`pull.rs`: the link's PSDU limit, and its next new frame from wherever the
//! link's packets wait — a relay's port, the AP's driver, the station's queue) and the Block Ack
//! scoreboard tells it what became of each MPDU (`fate.rs`); a sender that forms A-MPDUs ahead of
//! the air, as ath9k, fixes their new frames earlier (`formation.rs`). The world keeps the packets, queues
//! and endpoints; these adapters only route the components' questions and verdicts to them.

use super::*;

mod fate;
mod formation;
mod pull;

pub(in crate::world) use pull::full_size_mpdu;

/// Station `sta`'s link in `dir`, access category slot `k` (through relay port `port` when a
/// relay forwards it), at `now`.
pub(super) struct LinkIo<'a> {
    pub w: &'a mut World,
    pub sta: u32,
    pub dir: Dir,
    pub k: usize,
    pub port: Option<(u32, u32)>,
    pub now: Instant,
}
