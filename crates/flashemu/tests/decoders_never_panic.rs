//! The emulator's configuration decoders (TOML files, `--set KEY=VALUE`) fed deterministic random
//! and mutated-valid inputs: the stable-toolchain counterpart of `fuzz/` (same check,
//! `flashemu::fuzzing`). A failure prints the seed; rerun it with `WAFER_DECODER_SEED=<seed>`.
#![allow(clippy::unwrap_used)]
use flashemu::fuzzing;
use wafer_testkit::decoders::run;

#[test]
fn config_decoders_survive_random_and_mutated_inputs() {
    run("flashemu_config", fuzzing::config, 3000, &fuzzing::valid_inputs());
}
