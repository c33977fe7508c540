//! The frame exchange, driven on the event loop, in the order a frame meets it: a contender
//! wins the medium and builds its PPDU from its link's queues through
//! `lasthop_wifi::mac::ampdu` (`access.rs`); the recipient's error model decides which MPDUs
//! arrive and whether the response gets back (`receive.rs`); at the exchange's end each
//! transmitter's outcome goes to rate control, its EDCA function, the Block Ack scoreboard
//! (`lasthop_wifi::mac::scoreboard`) and its queue scheduler (`settle.rs`); a holder whose
//! TXOP limit allows it sends further exchanges in the same TXOP (`txop.rs`); a sender that
//! protects its PPDU opens the exchange with an RTS/CTS (`protect.rs`). The timing rules of the
//! exchange are `lasthop_wifi::mac::exchange`'s.

use super::*;

mod access;
mod protect;
pub(super) use protect::Rts;
mod receive;
mod settle;
mod txop;
