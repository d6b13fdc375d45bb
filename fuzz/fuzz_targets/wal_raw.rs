#![no_main]
//! See fuzz/README.md; the check is `wafer::fuzzing::wal_raw`.
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| wafer::fuzzing::wal_raw(data));
