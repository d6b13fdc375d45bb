#![no_main]
//! See fuzz/README.md; the check is `wafer::fuzzing::oop_journal`.
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| wafer::fuzzing::oop_journal(data));
