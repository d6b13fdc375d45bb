//! YCSB's ScrambledZipfianGenerator and its FNV hash (`site.ycsb.Utils.fnvhash64`).
//!
//! YCSB draws from a zipfian over a fixed, huge item space (10^10 + 1 items, because it
//! builds `ZipfianGenerator(0, ITEM_COUNT)` with an inclusive max) and maps the drawn rank to
//! `min + fnvhash64(rank) % item_count`. The popular items are thus scattered over the key
//! space instead of clustered at its start, and the hot set does not move when the item count
//! is fixed. For theta = 0.99 YCSB uses its precomputed zeta(10^10) = 26.46902820178302; for
//! other thetas we compute zeta(10^10) with the Euler-Maclaurin tail (milliseconds), where
//! YCSB sums 10^10 terms.

use super::rng::Rng;
use super::zipfian::{zeta, Zipfian};

/// YCSB `ScrambledZipfianGenerator.ITEM_COUNT`.
pub const SCRAMBLED_ITEM_COUNT: u64 = 10_000_000_000;
/// YCSB `ScrambledZipfianGenerator.ZETAN`: zeta(ITEM_COUNT, 0.99).
pub const SCRAMBLED_ZETAN: f64 = 26.469_028_201_783_02;
/// YCSB `ZipfianGenerator.ZIPFIAN_CONSTANT` (also `USED_ZIPFIAN_CONSTANT`).
pub const YCSB_ZIPFIAN_CONSTANT: f64 = 0.99;

pub const FNV_OFFSET_BASIS_64: u64 = 0xCBF2_9CE4_8422_2325;
pub const FNV_PRIME_64: u64 = 1_099_511_628_211;

/// FNV-1a 64 over the 8 bytes of `val`, least significant byte first, then the absolute value
/// as a signed long: YCSB's `Utils.fnvhash64`. (YCSB's `Math.abs(Long.MIN_VALUE)` stays
/// negative; here that one input gives 2^63. No input in YCSB's ranges is known to hit it.)
#[inline]
pub fn fnvhash64(val: u64) -> u64 {
    let mut hash = FNV_OFFSET_BASIS_64;
    let mut v = val;
    for _ in 0..8 {
        hash ^= v & 0xff;
        hash = hash.wrapping_mul(FNV_PRIME_64);
        v >>= 8;
    }
    (hash as i64).wrapping_abs() as u64
}

/// Zipfian with the popular items scattered by [`fnvhash64`], over [0, item_count).
#[derive(Debug, Clone)]
pub struct ScrambledZipfian {
    zipfian: Zipfian,
    item_count: u64,
}

impl ScrambledZipfian {
    /// Scrambled zipfian over `item_count` items (YCSB: `new ScrambledZipfianGenerator(0,
    /// item_count - 1, theta)`).
    pub fn new(item_count: u64, theta: f64) -> Self {
        assert!(item_count > 0);
        // YCSB compares with `==`; the constant is exact in f64, so do we.
        #[allow(clippy::float_cmp)]
        let zetan = if theta == YCSB_ZIPFIAN_CONSTANT {
            SCRAMBLED_ZETAN
        } else {
            zeta(SCRAMBLED_ITEM_COUNT, theta)
        };
        ScrambledZipfian {
            zipfian: Zipfian::with_zetan(SCRAMBLED_ITEM_COUNT + 1, theta, zetan),
            item_count,
        }
    }

    pub fn item_count(&self) -> u64 {
        self.item_count
    }

    /// Next item in [0, item_count).
    #[inline]
    pub fn next(&self, rng: &mut Rng) -> u64 {
        fnvhash64(self.zipfian.next(rng)) % self.item_count
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Plain FNV-1a 64 over bytes, to pin the loop against the published test vectors.
    fn fnv1a64(bytes: &[u8]) -> u64 {
        let mut h = FNV_OFFSET_BASIS_64;
        for b in bytes {
            h ^= u64::from(*b);
            h = h.wrapping_mul(FNV_PRIME_64);
        }
        h
    }

    #[test]
    fn fnv1a_published_vectors() {
        assert_eq!(fnv1a64(b""), 0xcbf2_9ce4_8422_2325);
        assert_eq!(fnv1a64(b"a"), 0xaf63_dc4c_8601_ec8c);
        assert_eq!(fnv1a64(b"foobar"), 0x8594_4171_f739_67e8);
    }

    #[test]
    fn fnvhash64_matches_ycsb_definition() {
        // Reference values computed independently (Python big integers) from YCSB's loop:
        // h = basis; 8 times { h ^= val & 0xff; h *= prime; val >>= 8 }; Math.abs(h as long).
        let cases: [(u64, u64); 7] = [
            (0, 6_284_781_860_667_377_211),
            (1, 8_517_097_267_634_966_620),
            (2, 1_820_151_046_732_198_393),
            (42, 55_488_592_825_689_361),
            (1000, 5_952_875_239_596_136_740),
            (123_456_789, 2_350_796_791_908_741_607),
            (u64::MAX, 8_289_690_350_564_177_859), // Java long -1
        ];
        for (input, want) in cases {
            assert_eq!(fnvhash64(input), want, "fnvhash64({input})");
            // Same as FNV-1a over the little-endian bytes, then abs.
            let raw = fnv1a64(&input.to_le_bytes());
            assert_eq!((raw as i64).wrapping_abs() as u64, want);
        }
    }

    #[test]
    fn scrambled_spreads_popular_items() {
        let seed = 21;
        let mut rng = Rng::new(seed);
        let n = 10_000u64;
        let g = ScrambledZipfian::new(n, YCSB_ZIPFIAN_CONSTANT);
        let draws = 400_000u64;
        let mut counts = vec![0u64; n as usize];
        for _ in 0..draws {
            let v = g.next(&mut rng);
            assert!(v < n);
            counts[v as usize] += 1;
        }
        // The hottest item is fnvhash64(0) % n, with probability about 1/zeta(10^10) = 3.8%.
        let hottest = (fnvhash64(0) % n) as usize;
        let p0 = counts[hottest] as f64 / draws as f64;
        assert!((p0 - 1.0 / SCRAMBLED_ZETAN).abs() < 0.004, "seed {seed}: p0 {p0}");
        // Skewed but not clustered: the first 10% of the id space gets about 10% of draws
        // (a plain zipfian would give it most of them).
        let head: u64 = counts[..(n / 10) as usize].iter().sum();
        let frac = head as f64 / draws as f64;
        assert!(frac > 0.03 && frac < 0.25, "seed {seed}: head fraction {frac}");
    }

    #[test]
    fn other_theta_computes_zeta() {
        let g = ScrambledZipfian::new(100, 0.8);
        let mut rng = Rng::new(4);
        for _ in 0..1000 {
            assert!(g.next(&mut rng) < 100);
        }
    }
}
