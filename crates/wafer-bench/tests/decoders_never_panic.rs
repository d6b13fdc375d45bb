//! Every decoder of user files in the bench (job files, bench configs, traces, run reports) fed
//! deterministic random and mutated-valid inputs: the stable-toolchain counterpart of `fuzz/`
//! (same checks, `wafer_bench::fuzzing`). A failure prints the check, the seed and the input
//! length; rerun one seed with `WAFER_DECODER_SEED=<seed>`.
#![allow(clippy::unwrap_used)]
use wafer_bench::fuzzing::{valid_inputs, CHECKS};
use wafer_testkit::decoders::{mutate, run, Rng};

/// Random bytes rarely make TOML or JSON; tokens of the formats make the mutations reach the
/// checks behind the parser.
const TOKENS: &[&str] = &[
    "=",
    "\"",
    "[[job]]\n",
    "\n",
    "-1",
    "1e308",
    "NaN",
    "0",
    "4k",
    "x",
    "%",
    ":",
    "{",
    "}",
    ",",
    "18446744073709551615",
    "inf",
    "emu:",
    "memory:",
    "zipf:",
    "hotcold:",
];

fn token_mutate(rng: &mut Rng, valid: &[u8]) -> Vec<u8> {
    let mut v = mutate(rng, valid);
    for _ in 0..rng.index(3) {
        let at = rng.index(v.len() + 1);
        let t = TOKENS[rng.index(TOKENS.len())].as_bytes();
        v.splice(at..at, t.iter().copied());
    }
    v
}

#[test]
fn every_bench_decoder_survives_random_and_mutated_inputs() {
    for (name, check) in CHECKS {
        let valid = valid_inputs(name);
        run(name, *check, 3000, &valid);
        let mut rng = Rng(0x5eed);
        for seed in 0..1000u64 {
            let Some(base) = valid.get(seed as usize % valid.len().max(1)) else { break };
            let input = token_mutate(&mut rng, base);
            if std::panic::catch_unwind(|| check(&input)).is_err() {
                panic!(
                    "decoder check {name} failed on token mutation {seed}: {:?}",
                    String::from_utf8_lossy(&input)
                );
            }
        }
    }
}
