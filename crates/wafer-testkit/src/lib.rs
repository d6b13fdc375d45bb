//! Test support shared by the workspace's crates. A dev-dependency only: nothing here ships.
//!
//! `decoders`: the stable-toolchain counterpart of `fuzz/`. Each crate exposes its decoder checks
//! (`fuzzing` modules, one `fn(&[u8])` per decoder, each panicking only on a real bug); its
//! `tests/decoders_never_panic.rs` runs them here on deterministic random and mutated-valid
//! inputs. Rerun one seed with `WAFER_DECODER_SEED=<seed>`; `WAFER_FUZZ_SEEDS=<dir>` writes the
//! valid inputs out as fuzz corpus seeds.
//!
//! `bench`: a criterion measurement of thread CPU time, for the benches.
#![allow(clippy::unwrap_used, clippy::expect_used)] // Test support: a failure is a test failure.

pub mod bench;
pub mod file_cycles;

/// xorshift64*: deterministic, no dependency; the engine's model tests and the decoder harness
/// draw from it, so a printed seed replays the same sequence everywhere.
#[derive(Debug)]
pub struct Rng(pub u64);

impl Rng {
    #[allow(clippy::should_implement_trait)] // A generator, not an iterator: it never ends.
    pub fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }
    /// Uniform-ish in `0..n` (modulo bias is irrelevant for tests); `n` must be positive.
    pub fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
    /// An index into a collection of `len` items (0 when it is empty).
    pub fn index(&mut self, len: usize) -> usize {
        (self.next() % len.max(1) as u64) as usize
    }
    /// Uniform in `[0, 1)`.
    pub fn unit(&mut self) -> f64 {
        (self.next() >> 11) as f64 / (1u64 << 53) as f64
    }
}

pub mod decoders {
    pub use super::Rng;

    /// A random input: mostly small, sometimes a few pages long.
    pub fn random_input(rng: &mut Rng) -> Vec<u8> {
        let len = match rng.index(4) {
            0 => rng.index(64),
            1 => rng.index(4200),
            _ => rng.index(5 * 4096),
        };
        (0..len).map(|_| rng.next() as u8).collect()
    }

    /// A valid input with a few bytes flipped, a cut or an extension.
    pub fn mutate(rng: &mut Rng, valid: &[u8]) -> Vec<u8> {
        let mut v = valid.to_vec();
        for _ in 0..1 + rng.index(4) {
            match rng.index(6) {
                0 if !v.is_empty() => {
                    let at = rng.index(v.len());
                    v.truncate(at);
                }
                1 => v.extend((0..rng.index(64)).map(|_| rng.next() as u8)),
                2 if !v.is_empty() => {
                    // Header region: where lengths and counts live.
                    let at = rng.index(v.len().min(128));
                    v[at] = rng.next() as u8;
                }
                _ if !v.is_empty() => {
                    let at = rng.index(v.len());
                    v[at] ^= 1 << rng.index(8);
                }
                _ => {}
            }
        }
        v
    }

    /// Feeds `check` its valid inputs, then `cases` seeded inputs: random bytes, or a valid input
    /// mutated. A panic fails with the check's name, the seed and the input length.
    pub fn run(name: &str, check: fn(&[u8]), cases: u64, valid: &[Vec<u8>]) {
        let seeds: Vec<u64> = match std::env::var("WAFER_DECODER_SEED") {
            Ok(s) => {
                vec![s.parse().unwrap_or_else(|_| panic!("WAFER_DECODER_SEED={s} is not a number"))]
            }
            Err(_) => (1..=cases).collect(),
        };
        for valid_input in valid {
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
            let input = if valid.is_empty() || rng.index(3) == 0 {
                random_input(&mut rng)
            } else {
                let base = &valid[rng.index(valid.len())];
                mutate(&mut rng, base)
            };
            let outcome = std::panic::catch_unwind(|| check(&input));
            if outcome.is_err() {
                panic!("decoder check {name} failed: seed {seed}, input of {} bytes", input.len());
            }
        }
    }
}
