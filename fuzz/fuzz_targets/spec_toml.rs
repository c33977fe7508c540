//! A spec file's TOML → the validator (every problem listed) → the simulator's types and rules.
//! The body is `lasthop_live::fuzzing::spec_toml` (also replayed over the corpus by `cargo test`).
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| lasthop_live::fuzzing::spec_toml(data));
