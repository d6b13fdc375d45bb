//! The `[cczns]` section: in-storage compression on a ZNS device (002, sec. III).
//!
//! Present only on a ZNS device that offers the compressed-write / decompressed-read commands;
//! absent by default (and then left out of the TOML and JSON, so older configs read as before).
use serde::{Deserialize, Serialize};

/// The device's compression engine and out-of-band area.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct CcznsConfig {
    /// ZSTD level the engine compresses at (002 runs level 1, sec. V-A).
    pub zstd_level: i32,
    /// Out-of-band bytes per 4 KiB of flash page for chunk metadata (002 sec. III-D: modern
    /// SSDs have 128 to 256 B per 4 KiB). Bounds how many chunks may start in one flash page.
    pub oob_bytes_per_block: u32,
    /// Engine compression throughput, bytes of input per second (002 sec. I: up to 11 GB/s).
    pub compress_bytes_per_s: f64,
    /// Engine decompression throughput, bytes of output per second (002: up to 14 GB/s).
    pub decompress_bytes_per_s: f64,
    /// Fixed latency of one chunk through the compressor. 002 gives no figure; 2 us is an
    /// assumption of this project (a pipelined ASIC's fill time), configurable.
    pub compress_latency_ns: u64,
    /// Fixed latency of one chunk through the decompressor (assumed as above).
    pub decompress_latency_ns: u64,
    /// Granularity of chunk placement, bytes (a power of two up to 4096). 1 (the default) is
    /// 002's byte-granular packing. Larger: every chunk occupies its stored size rounded up to
    /// this, so chunks start and the byte write pointer stays at multiples of it; the rounding
    /// is padding (`flash_pad_bytes`) and is part of each chunk's feedback size, the decoupled
    /// size 002 sec. III-D introduces for such placement rules. A host whose index addresses
    /// chunks in coarser units (the engine's map: 32 B) needs it.
    pub chunk_align_bytes: u32,
}

impl Default for CcznsConfig {
    fn default() -> CcznsConfig {
        CcznsConfig {
            zstd_level: 1,
            oob_bytes_per_block: 128,
            compress_bytes_per_s: 11e9,
            decompress_bytes_per_s: 14e9,
            compress_latency_ns: 2_000,
            decompress_latency_ns: 2_000,
            chunk_align_bytes: 1,
        }
    }
}

/// Smallest OOB that holds a page header and one chunk entry.
pub(crate) const OOB_BYTES_PER_BLOCK_MIN: u32 = 32;
/// Largest OOB per 4 KiB a device plausibly has (keeps entry counts in a u8).
pub(crate) const OOB_BYTES_PER_BLOCK_MAX: u32 = 1024;

/// Coarsest chunk placement: one logical block.
pub(crate) const CHUNK_ALIGN_BYTES_MAX: u32 = 4096;

impl CcznsConfig {
    /// The reason this section is invalid, with its field, or None.
    pub(crate) fn problem(&self) -> Option<(&'static str, String)> {
        if !(1..=19).contains(&self.zstd_level) {
            return Some(("cczns.zstd_level", format!("{} is not in 1..=19", self.zstd_level)));
        }
        if !(OOB_BYTES_PER_BLOCK_MIN..=OOB_BYTES_PER_BLOCK_MAX).contains(&self.oob_bytes_per_block)
        {
            return Some((
                "cczns.oob_bytes_per_block",
                format!(
                    "{} is not in {OOB_BYTES_PER_BLOCK_MIN}..={OOB_BYTES_PER_BLOCK_MAX}",
                    self.oob_bytes_per_block
                ),
            ));
        }
        let align = self.chunk_align_bytes;
        if !align.is_power_of_two() || align > CHUNK_ALIGN_BYTES_MAX {
            return Some((
                "cczns.chunk_align_bytes",
                format!("{align} is not a power of two in 1..={CHUNK_ALIGN_BYTES_MAX}"),
            ));
        }
        let rates = [self.compress_bytes_per_s, self.decompress_bytes_per_s];
        if rates.iter().any(|r| !r.is_finite() || *r <= 0.0) {
            return Some((
                "cczns.compress_bytes_per_s",
                "engine rates must be finite and > 0".into(),
            ));
        }
        None
    }
}
