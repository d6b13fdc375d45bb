#![no_main]
//! See fuzz/README.md; the check is `wafer_bench::fuzzing::bench_config`.
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| wafer_bench::fuzzing::bench_config(data));
