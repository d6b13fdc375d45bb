#![no_main]
//! See fuzz/README.md; the check is `flashemu::fuzzing::config`.
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| flashemu::fuzzing::config(data));
