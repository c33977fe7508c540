//! Netlink datagrams through every rtnetlink and nl80211 decoder and the emulator's request parser.
//! The body is `lasthop_live::fuzzing::netlink` (also replayed over the corpus by `cargo test`).
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| lasthop_live::fuzzing::netlink(data));
