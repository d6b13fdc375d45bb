#![no_main]
//! See fuzz/README.md; the check is `wafer::fuzzing::blob_ref`.
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| wafer::fuzzing::blob_ref(data));
