#![no_main]
//! See fuzz/README.md; the check is `wafer::fuzzing::redo_record`.
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| wafer::fuzzing::redo_record(data));
