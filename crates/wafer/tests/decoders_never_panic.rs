//! Every on-disk decoder of the engine fed deterministic random and mutated-valid inputs: the
//! stable-toolchain counterpart of `fuzz/` (same checks, `wafer::fuzzing`). A failure prints the
//! check, the seed and the input length; rerun one seed with `WAFER_DECODER_SEED=<seed>`.
#![allow(clippy::unwrap_used)]
use wafer::fuzzing::{valid_inputs, CHECKS};
use wafer_testkit::decoders::run;

fn cases_for(name: &str) -> u64 {
    match name {
        // Each case formats and recovers a whole (small) log.
        "wal_model" | "wal_raw" => 400,
        "doublewrite" => 1000,
        _ => 3000,
    }
}

#[test]
fn every_engine_decoder_survives_random_and_mutated_inputs() {
    for (name, check) in CHECKS {
        run(name, *check, cases_for(name), &valid_inputs(name));
    }
}

#[test]
fn valid_inputs_pass_their_checks() {
    for (name, check) in CHECKS {
        let valid = valid_inputs(name);
        assert!(!valid.is_empty(), "{name} has valid inputs");
        for v in valid {
            check(&v);
        }
    }
}
