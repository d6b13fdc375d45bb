#![no_main]
//! See fuzz/README.md; the check is `wafer::fuzzing::catalog_entry`.
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| wafer::fuzzing::catalog_entry(data));
