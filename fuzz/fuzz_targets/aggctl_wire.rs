//! aggctl's datagrams (data header, feedback report, aggregation report) and key syntax.
//! The body is `lasthop_live::fuzzing::aggctl_wire` (also replayed over the corpus by `cargo test`).
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| lasthop_live::fuzzing::aggctl_wire(data));
