//! Value bytes with a tunable compressibility.
//!
//! A value of `len` bytes is cut into segments of [`SEGMENT_BYTES`]; each segment starts with
//! random bytes (full 8-bit entropy, incompressible) and ends with a run of one fill byte
//! (compresses to almost nothing). The random share of every segment is the target ratio, so
//! any 4 KiB page of values compresses about the same, and so does a value's prefix.
//!
//! Mapping to LZ4 (the compressor 000 uses, sec. 3.1: ratios 14-49% across TPC-C, YCSB and
//! real data sets, 41.2% for YCSB). The target is the *fraction of random bytes*; LZ4 stores
//! those as literals (ratio ~1.004) and each fill run as one match, but its fast mode skips
//! ahead over incompressible input and so swallows the first bytes of each run as literals.
//! Measured with the `lz4` CLI (v1.9, default level) on 4 KiB pages of 1000-byte values, frame
//! overhead removed (`ycsb::tests::dump_value_pages`):
//!
//! | random fraction | LZ4 ratio, values only | LZ4 ratio, 23-byte key + value records |
//! |---|---|---|
//! | 0.00 | 0.007 | 0.031 |
//! | 0.12 | 0.152 | 0.151 |
//! | 0.39 | 0.417 | 0.416 |
//! | 0.47 | 0.494 | 0.493 |
//! | 1.00 | 1.001 | 1.001 |
//!
//! So LZ4 lands about [`LZ4_OVERHEAD_ESTIMATE`] above the random fraction in between;
//! [`fraction_for_lz4_ratio`] inverts that. The engine's own compression counters, not this
//! estimate, are what reports use.
//!
//! Values are described by a [`ValueSpec`] (seed + length) and materialized on demand, so the
//! same value can be regenerated (for verification) without storing it.

use crate::dist::Rng;

/// Segment length: small enough that every 4 KiB page sees several segments (even
/// compression across pages), large enough that LZ4's per-run overhead stays near 2.5%
/// (256-byte segments measured +0.04 above target, 1024-byte ones +0.027).
pub const SEGMENT_BYTES: usize = 1024;
/// How far above the random fraction LZ4 lands for fractions strictly inside (0, 1)
/// (measured, see the module docs).
pub const LZ4_OVERHEAD_ESTIMATE: f64 = 0.027;

/// Random fraction whose values LZ4 compresses to about `lz4_ratio` (clamped to [0, 1]).
pub fn fraction_for_lz4_ratio(lz4_ratio: f64) -> f64 {
    if lz4_ratio >= 1.0 {
        return 1.0;
    }
    (lz4_ratio - LZ4_OVERHEAD_ESTIMATE).clamp(0.0, 1.0)
}
/// Byte of the compressible runs.
pub const FILL_BYTE: u8 = 0;
/// Largest value the generator produces (bounds per-value work).
pub const VALUE_LEN_MAX_BYTES: u32 = 1 << 24;

/// A value to write: generated from `seed`, `len_bytes` long.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct ValueSpec {
    pub seed: u64,
    pub len_bytes: u32,
}

#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ValueError {
    #[error("compression ratio {0} must be in [0, 1]")]
    Ratio(f64),
}

impl From<ValueError> for crate::ycsb::SpecError {
    fn from(e: ValueError) -> Self {
        match e {
            ValueError::Ratio(r) => crate::ycsb::SpecError::CompressionRatio(r),
        }
    }
}

/// Fills value buffers with a target fraction of random bytes.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ValueGenerator {
    compression_ratio: f64,
}

impl ValueGenerator {
    /// `compression_ratio` = the fraction of random bytes, i.e. the ideal compressed /
    /// original: 1.0 is incompressible, 0.5 compresses to about half, 0.0 is all fill bytes.
    /// For a target LZ4 ratio pass [`fraction_for_lz4_ratio`]`(target)`.
    pub fn new(compression_ratio: f64) -> Result<Self, ValueError> {
        if !(0.0..=1.0).contains(&compression_ratio) {
            return Err(ValueError::Ratio(compression_ratio));
        }
        Ok(ValueGenerator { compression_ratio })
    }

    pub fn compression_ratio(&self) -> f64 {
        self.compression_ratio
    }

    /// Random bytes at the start of a segment of `segment_len` bytes: the target share,
    /// rounded to the nearest byte.
    pub fn random_bytes_in_segment(&self, segment_len: usize) -> usize {
        ((segment_len as f64 * self.compression_ratio).round() as usize).min(segment_len)
    }

    /// Random bytes in a whole value of `len` bytes.
    pub fn random_bytes_in_value(&self, len: usize) -> usize {
        let full = len / SEGMENT_BYTES;
        full * self.random_bytes_in_segment(SEGMENT_BYTES)
            + self.random_bytes_in_segment(len % SEGMENT_BYTES)
    }

    /// Materialize `spec` into `buf` (which must be `spec.len_bytes` long).
    pub fn fill(&self, spec: &ValueSpec, buf: &mut [u8]) {
        assert_eq!(buf.len(), spec.len_bytes as usize);
        assert!(spec.len_bytes <= VALUE_LEN_MAX_BYTES);
        let mut rng = Rng::new(spec.seed);
        for segment in buf.chunks_mut(SEGMENT_BYTES) {
            let random = self.random_bytes_in_segment(segment.len());
            let (head, tail) = segment.split_at_mut(random);
            rng.fill_bytes(head);
            tail.fill(FILL_BYTE);
        }
    }

    /// Allocate and fill.
    pub fn value(&self, spec: &ValueSpec) -> Vec<u8> {
        let mut v = vec![0u8; spec.len_bytes as usize];
        self.fill(spec, &mut v);
        v
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Bytes outside the random heads must be fill; inside, random (about 1/256 are zero).
    #[test]
    fn random_fraction_matches_target() {
        for (ratio, len) in [(0.5, 4096usize), (0.412, 1000), (0.14, 8192), (1.0, 300), (0.0, 300)]
        {
            let g = ValueGenerator::new(ratio).unwrap();
            let seed = 77;
            let v = g.value(&ValueSpec { seed, len_bytes: len as u32 });
            let mut random_positions = 0usize;
            let mut zero_in_random = 0usize;
            for seg in v.chunks(SEGMENT_BYTES) {
                let r = g.random_bytes_in_segment(seg.len());
                assert!(seg[r..].iter().all(|b| *b == FILL_BYTE), "ratio {ratio}: fill");
                random_positions += r;
                zero_in_random += seg[..r].iter().filter(|b| **b == 0).count();
            }
            assert_eq!(random_positions, g.random_bytes_in_value(len));
            let frac = random_positions as f64 / len as f64;
            // Per-segment rounding: at most half a byte per segment off.
            let segments = len.div_ceil(SEGMENT_BYTES) as f64;
            assert!(
                (frac - ratio).abs() <= 0.5 * segments / len as f64 + 1e-12,
                "seed {seed} ratio {ratio} len {len}: random fraction {frac}"
            );
            // The heads really are random: zeros about 1/256 of them, not runs.
            if random_positions > 1000 {
                let zf = zero_in_random as f64 / random_positions as f64;
                assert!(zf < 0.02, "seed {seed}: zero fraction in random part {zf}");
            }
        }
    }

    #[test]
    fn lz4_inverse_mapping() {
        assert_eq!(fraction_for_lz4_ratio(1.0), 1.0);
        assert_eq!(fraction_for_lz4_ratio(0.01), 0.0);
        assert!((fraction_for_lz4_ratio(0.416) - 0.389).abs() < 1e-9);
    }

    #[test]
    fn deterministic_and_distinct() {
        let g = ValueGenerator::new(0.5).unwrap();
        let a = ValueSpec { seed: 1, len_bytes: 1000 };
        let b = ValueSpec { seed: 2, ..a };
        assert_eq!(g.value(&a), g.value(&a));
        assert_ne!(g.value(&a), g.value(&b));
        assert!(ValueGenerator::new(1.5).is_err());
        assert!(ValueGenerator::new(f64::NAN).is_err());
    }
}
