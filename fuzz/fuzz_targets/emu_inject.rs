//! Packets injected into the emulator's real-time world: each meets exactly one fate.
//! The body is `lasthop_live::fuzzing::emu_inject` (also replayed over the corpus by `cargo test`).
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| lasthop_live::fuzzing::emu_inject(data));
