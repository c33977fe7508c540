//! The 802.11 MAC, split along the seams of the standard (and of ns-3's documented design),
//! as plain structs the simulator keeps in arenas:
//!
//! * [`edca`]: EDCA parameters per access category and one EDCA function's backoff state
//!   (IEEE 802.11-2020 §10.23.2).
//! * [`medium`]: the shared channel seen by every EDCA function: slot-boundary backoff counting,
//!   freezing while busy, collisions when backoffs end together, EIFS after errored frames.
//! * [`frame`]: frame and A-MPDU subframe sizes (§9.2, §9.7).
//! * [`blockack`]: the originator's transmit window and the recipient's reorder buffer for
//!   HT-immediate Block Ack (§10.25).
//! * [`ampdu`]: what one PPDU carries, built from a pull source (retransmissions, new MPDUs
//!   within the Block Ack window, A-MSDU packing, length limits), and when its subframes end.
//! * [`formation`]: when a driver that forms A-MPDUs ahead of the air (ath9k, two in its
//!   hardware queue) fixes an A-MPDU's new frames.
//! * [`scoreboard`]: completion of a PPDU under Block Ack: reorder buffer, retries, the retry
//!   limit.
//! * [`exchange`]: the timing of a PPDU and its response (response end, EIFS, backoff
//!   reference after a failure).
//! * [`driver`]: the AP's driver between mac80211's queues and the air, as the frame exchange
//!   pulls from it (`ApDriver`: the pull driver, the firmware-queue driver), and mac80211's
//!   side of that interface (`Mac80211`).
//! * [`any_driver`]: the drivers as one type the exchange holds (`AnyDriver`), dispatched by match.
//! * [`mt76`]: mt76's transmit path (the tx worker's rounds and bursts) over the same
//!   hardware per-station queues as the firmware model.
//! * [`firmware`]: a firmware-queue driver's transmit path below mac80211 (ath10k-like push
//!   on wake and on transmit status, the firmware's per-station queues, the airtime queue
//!   limit).
//! * [`txq`]: per-station transmit queues at the AP behind a total limit, served through
//!   mac80211's pull interface (`next_txq`, `tx_dequeue`, `return_txq`, `register_airtime`).
//! * [`mu`]: 802.11ax DL OFDMA decisions: the RU plans, ns-3's round-robin credits, and the
//!   acknowledgment of a DL MU PPDU.
//! * [`qdisc_run`]: the host's dequeue clock, one packet per transmit-path time (Linux's
//!   `__qdisc_run`), as the queue disciplines see it.

pub mod ampdu;
pub mod any_driver;
pub mod blockack;
pub mod edca;
pub mod driver;
pub mod exchange;
pub mod firmware;
pub mod formation;
pub mod frame;
pub mod medium;
pub mod mt76;
pub mod mu;
pub mod qdisc_run;
pub mod rate;
pub mod scoreboard;
#[cfg(test)]
mod test_host;
pub mod txq;
