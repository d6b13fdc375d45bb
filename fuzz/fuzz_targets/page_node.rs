#![no_main]
//! See fuzz/README.md; the check is `wafer::fuzzing::page_node`.
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| wafer::fuzzing::page_node(data));
