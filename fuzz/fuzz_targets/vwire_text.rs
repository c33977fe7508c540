//! Virtual Wires text inputs: flow policy TOML, forest model, utility, duration and rate syntax.
//! The body is `lasthop_live::fuzzing::vwire_text` (also replayed over the corpus by `cargo test`).
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| lasthop_live::fuzzing::vwire_text(data));
