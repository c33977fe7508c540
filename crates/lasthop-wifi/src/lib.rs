//! lasthop-wifi: the IEEE 802.11 model.
//!
//! * [`phy`]: rate tables and PPDU durations for OFDM (Clause 17), HT (Clause 19), VHT
//!   (Clause 21) and HE (Clause 27); legacy rates for control frames; the error model.
//! * [`mac`]: EDCA channel access, frame exchanges, A-MPDU building, Block Ack scoreboards,
//!   per-station transmit queues with mac80211's pull interface.
#![forbid(unsafe_code)]

pub mod mac;
pub mod phy;
