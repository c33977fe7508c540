//! Spec JSON → validation → world construction and a bounded run, twice (determinism).
//! The body is `lasthop_live::fuzzing::spec_run` (also replayed over the corpus by `cargo test`).
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| lasthop_live::fuzzing::spec_run(data));
