//! A small, fast, deterministic PRNG: xoshiro256** seeded through SplitMix64.
//!
//! Why our own: benchmark runs must be reproducible from a printed seed across machines and
//! crate versions, and the workload generators only need `u64`, `f64` in [0, 1) and unbiased
//! bounded integers. xoshiro256** (Blackman & Vigna) passes BigCrush and costs a few ns per draw;
//! SplitMix64 expands a single `u64` seed into the 256-bit state, as its authors recommend, so
//! that nearby seeds (thread 0, thread 1, ...) give unrelated streams.

use flashemu::rng::SplitMix64;

/// xoshiro256** generator. Not cryptographic; deterministic for a given seed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rng {
    s: [u64; 4],
}

/// Bound on rejection rounds in [`Rng::below`]. Each round rejects with probability < 1/2
/// (in practice < n / 2^64), so reaching this bound means the generator is broken.
const BELOW_ROUNDS_MAX: u32 = 128;

impl Rng {
    /// A generator whose whole stream is determined by `seed`.
    pub fn new(seed: u64) -> Self {
        let mut sm = SplitMix64::new(seed);
        let s = [sm.next_u64(), sm.next_u64(), sm.next_u64(), sm.next_u64()];
        // SplitMix64 is a bijection on its counter, so four consecutive outputs are never all
        // zero (the one state xoshiro cannot leave).
        debug_assert!(s.iter().any(|w| *w != 0));
        Rng { s }
    }

    /// A per-thread stream derived from a run seed and a thread id: the same (seed, thread)
    /// pair always gives the same stream, and different threads get unrelated streams.
    pub fn for_thread(seed: u64, thread_id: u64) -> Self {
        Rng::new(SplitMix64::new(seed ^ thread_id.wrapping_mul(0xD1B5_4A32_D192_ED03)).next_u64())
    }

    /// Next 64 uniformly distributed bits.
    #[inline]
    pub fn next_u64(&mut self) -> u64 {
        let result = self.s[1].wrapping_mul(5).rotate_left(7).wrapping_mul(9);
        let t = self.s[1] << 17;
        self.s[2] ^= self.s[0];
        self.s[3] ^= self.s[1];
        self.s[1] ^= self.s[2];
        self.s[0] ^= self.s[3];
        self.s[2] ^= t;
        self.s[3] = self.s[3].rotate_left(45);
        result
    }

    /// Uniform in [0, 1) with 53 bits of precision; never returns 1.0.
    #[inline]
    pub fn next_f64(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 * (1.0 / (1u64 << 53) as f64)
    }

    /// Uniform in [0, n), unbiased (Lemire's multiply-shift with rejection). `n` must be > 0.
    #[inline]
    pub fn below(&mut self, n: u64) -> u64 {
        assert!(n > 0, "below(0) has no valid result");
        // The low half of the 128-bit product is biased only when it falls under 2^64 mod n;
        // those draws are rejected.
        let threshold = n.wrapping_neg() % n;
        for _ in 0..BELOW_ROUNDS_MAX {
            let m = u128::from(self.next_u64()) * u128::from(n);
            if (m as u64) >= threshold {
                return (m >> 64) as u64;
            }
        }
        unreachable!("xoshiro256** rejected {BELOW_ROUNDS_MAX} draws in a row");
    }

    /// Uniform in [lo, hi] inclusive.
    #[inline]
    pub fn range_inclusive(&mut self, lo: u64, hi: u64) -> u64 {
        assert!(lo <= hi, "empty range {lo}..={hi}");
        match (hi - lo).checked_add(1) {
            Some(span) => lo + self.below(span),
            None => self.next_u64(), // the full u64 range
        }
    }

    /// Fill `buf` with random bytes.
    pub fn fill_bytes(&mut self, buf: &mut [u8]) {
        let mut chunks = buf.chunks_exact_mut(8);
        for chunk in &mut chunks {
            chunk.copy_from_slice(&self.next_u64().to_le_bytes());
        }
        let tail = chunks.into_remainder();
        if !tail.is_empty() {
            let word = self.next_u64().to_le_bytes();
            tail.copy_from_slice(&word[..tail.len()]);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn deterministic_and_thread_streams_differ() {
        let mut a = Rng::new(42);
        let mut b = Rng::new(42);
        for _ in 0..100 {
            assert_eq!(a.next_u64(), b.next_u64());
        }
        let mut t0 = Rng::for_thread(42, 0);
        let mut t1 = Rng::for_thread(42, 1);
        let same = (0..100).filter(|_| t0.next_u64() == t1.next_u64()).count();
        assert_eq!(same, 0);
    }

    #[test]
    fn f64_in_unit_interval_with_right_mean() {
        let seed = 7;
        let mut rng = Rng::new(seed);
        let n = 200_000;
        let mut sum = 0.0;
        for _ in 0..n {
            let x = rng.next_f64();
            assert!((0.0..1.0).contains(&x), "seed {seed}: {x}");
            sum += x;
        }
        let mean = sum / n as f64;
        assert!((mean - 0.5).abs() < 0.005, "seed {seed}: mean {mean}");
    }

    #[test]
    fn below_is_unbiased_for_small_n() {
        let seed = 99;
        let mut rng = Rng::new(seed);
        let n = 6u64;
        let draws = 600_000u64;
        let mut counts = [0u64; 6];
        for _ in 0..draws {
            counts[rng.below(n) as usize] += 1;
        }
        let expected = draws as f64 / n as f64;
        for (i, c) in counts.iter().enumerate() {
            let rel = (*c as f64 - expected).abs() / expected;
            assert!(rel < 0.01, "seed {seed}: bucket {i} count {c} expected {expected}");
        }
        assert_eq!(rng.below(1), 0);
        assert_eq!(rng.range_inclusive(5, 5), 5);
    }

    #[test]
    fn fill_bytes_covers_tail() {
        let mut rng = Rng::new(3);
        let mut buf = [0u8; 13];
        rng.fill_bytes(&mut buf);
        assert!(buf[8..].iter().any(|b| *b != 0));
    }
}
