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
//! * [`txq`]: per-station transmit queues at the AP behind a total limit, served through
//!   mac80211's pull interface (`next_txq`, `tx_dequeue`, `return_txq`, `register_airtime`).

pub mod blockack;
pub mod edca;
pub mod frame;
pub mod medium;
pub mod rate;
pub mod txq;
