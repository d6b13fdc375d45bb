#![no_main]
//! See fuzz/README.md; the check is `wafer::fuzzing::dump_stream`.
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| wafer::fuzzing::dump_stream(data));
