//! Every decoder of user files in the bench (job files, bench configs, traces, run reports) fed
//! deterministic random and mutated-valid inputs: the stable-toolchain counterpart of `fuzz/`
//! (same checks, `wafer_bench::fuzzing`). A failure prints the check, the seed and the input
//! length; rerun one seed with `WAFER_DECODER_SEED=<seed>`.
#![allow(clippy::unwrap_used)]
use wafer_bench::fuzzing::{valid_inputs, CHECKS};

/// xorshift64*: deterministic, no dependency.
struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n.max(1) as u64) as usize
    }
}

/// A random input: mostly small, sometimes a few pages long.
fn random_input(rng: &mut Rng) -> Vec<u8> {
    let len = match rng.below(4) {
        0 => rng.below(64),
        1 => rng.below(4200),
        _ => rng.below(5 * 4096),
    };
    (0..len).map(|_| rng.next() as u8).collect()
}

/// A valid input with a few bytes flipped, a cut or an extension.
fn mutate(rng: &mut Rng, valid: &[u8]) -> Vec<u8> {
    let mut v = valid.to_vec();
    for _ in 0..1 + rng.below(4) {
        match rng.below(6) {
            0 if !v.is_empty() => {
                let at = rng.below(v.len());
                v.truncate(at);
            }
            1 => v.extend((0..rng.below(64)).map(|_| rng.next() as u8)),
            2 if !v.is_empty() => {
                // Header region: where lengths and counts live.
                let at = rng.below(v.len().min(128));
                v[at] = rng.next() as u8;
            }
            _ if !v.is_empty() => {
                let at = rng.below(v.len());
                v[at] ^= 1 << rng.below(8);
            }
            _ => {}
        }
    }
    v
}

fn run(name: &str, check: fn(&[u8]), cases: u64) {
    let valid = valid_inputs(name);
    let seeds: Vec<u64> = match std::env::var("WAFER_DECODER_SEED") {
        Ok(s) => vec![s.parse().expect("WAFER_DECODER_SEED is a number")],
        Err(_) => (1..=cases).collect(),
    };
    for valid_input in &valid {
        check(valid_input);
    }
    // `WAFER_FUZZ_SEEDS=fuzz/corpus cargo test ...` writes the valid inputs as fuzz corpus seeds.
    if let Ok(dir) = std::env::var("WAFER_FUZZ_SEEDS") {
        let dir = std::path::Path::new(&dir).join(name);
        std::fs::create_dir_all(&dir).unwrap();
        for (i, v) in valid.iter().enumerate() {
            std::fs::write(dir.join(format!("seed-{i}")), v).unwrap();
        }
    }
    for seed in seeds {
        let mut rng = Rng(seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1);
        let input = if valid.is_empty() || rng.below(3) == 0 {
            random_input(&mut rng)
        } else {
            let base = &valid[rng.below(valid.len())];
            mutate(&mut rng, base)
        };
        let outcome = std::panic::catch_unwind(|| check(&input));
        if outcome.is_err() {
            panic!("decoder check {name} failed: seed {seed}, input of {} bytes", input.len());
        }
    }
}

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
    for _ in 0..rng.below(3) {
        let at = rng.below(v.len() + 1);
        let t = TOKENS[rng.below(TOKENS.len())].as_bytes();
        v.splice(at..at, t.iter().copied());
    }
    v
}

#[test]
fn every_bench_decoder_survives_random_and_mutated_inputs() {
    for (name, check) in CHECKS {
        run(name, *check, 3000);
        let valid = valid_inputs(name);
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
