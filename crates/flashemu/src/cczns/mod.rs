//! CCZNS (002, sec. III): the device compresses. The host sends uncompressed chunks with a
//! compressed write (CW); the device's engine compresses each chunk (ZSTD, real, so sizes are
//! real), packs the results byte-granular at the zone's write pointer and reports every chunk's
//! post-compression size and address. A decompressed read (DR) names a chunk by address and
//! the size the CW reported (single-chunk) or a byte range of whole chunks (multi-chunk); the
//! device finds the chunks from their out-of-band metadata, refuses a range that cuts a chunk,
//! decompresses and returns the original bytes.
//!
//! This module holds the engine and the pure layout rule; the commands themselves are
//! `Ssd::compressed_write` and friends (ssd/compressed.rs).
pub(crate) mod oob;

use crate::config::CcznsConfig;
use crate::EmuError;
use oob::{ChunkEntry, OobArea};

/// Most chunks one CW may carry (002's metadata field lists every pre-compression size; a
/// 1 MiB write of 256-byte chunks is 4096).
pub const CW_CHUNKS_MAX: usize = 4096;

/// Where one chunk of a compressed write went.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ChunkPlacement {
    /// Byte address of the chunk's first byte (device-wide).
    pub byte_address: u64,
    /// The chunk's size as the host sent it.
    pub raw_bytes: u32,
    /// Bytes it occupies in the zone (compressed, or raw when compression did not shrink it).
    pub stored_bytes: u32,
    /// The size reported to the host, which a DR must name: stored bytes, plus the padding
    /// that aligns the last chunk of a CW in a padding zone.
    pub feedback_bytes: u32,
    /// False for an incompressible chunk stored as it came (pass-through).
    pub compressed: bool,
}

/// What a compressed write did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CwOutcome {
    /// The chunks written, in order: a prefix of those sent. Fewer than sent when the next
    /// chunk did not fit in the rest of the zone: the device then padded the zone to its end
    /// and finished it, and the host sends the remaining chunks to another zone.
    pub chunks: Vec<ChunkPlacement>,
    /// The zone's write pointer afterwards, bytes from the device start.
    pub write_pointer_bytes: u64,
    /// The zone was padded and finished because a chunk would have straddled its end.
    pub zone_finished: bool,
}

/// One chunk a decompressed read returned.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DrChunk {
    pub byte_address: u64,
    /// Bytes it decompressed to (its place in the read buffer follows the previous chunk's).
    pub raw_bytes: u32,
    pub feedback_bytes: u32,
}

/// What a multi-chunk decompressed read returned.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DrOutcome {
    /// The chunks decompressed into the buffer, in address order. Fewer than the range holds
    /// when the buffer could not take the next one (002's prefetch: as many as fit).
    pub chunks: Vec<DrChunk>,
    /// The chunks in the requested range, decompressed or not.
    pub chunks_in_range: usize,
    /// Buffer bytes filled.
    pub filled_bytes: usize,
}

/// One chunk after the engine: where its stored bytes sit in the CW's frame buffer and whether
/// they are compressed.
#[derive(Debug)]
pub(crate) struct Compressed {
    pub(crate) range: std::ops::Range<usize>,
    pub(crate) raw_bytes: u32,
    pub(crate) compressed: bool,
}

/// The device's compression engine, with the chunk metadata it keeps in the OOB.
pub(crate) struct Engine {
    pub(crate) config: CcznsConfig,
    compressor: zstd::bulk::Compressor<'static>,
    decompressor: zstd::bulk::Decompressor<'static>,
    pub(crate) oob: OobArea,
    /// Scratch kept between commands: a CW's stored chunks back to back, and a DR's stored
    /// bytes. The emulator shares the host's heap; allocating these per command would churn
    /// it, which a real device's buffers never do.
    pub(crate) frames: Vec<u8>,
    pub(crate) read_buf: Vec<u8>,
}

impl std::fmt::Debug for Engine {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Engine").field("config", &self.config).field("oob", &self.oob).finish()
    }
}

impl Engine {
    pub(crate) fn new(config: CcznsConfig, flash_page_bytes: u64) -> Result<Engine, EmuError> {
        let blocks_per_page = flash_page_bytes / crate::LBA_BYTES;
        let oob_bytes = u64::from(config.oob_bytes_per_block) * blocks_per_page;
        Ok(Engine {
            config,
            compressor: zstd::bulk::Compressor::new(config.zstd_level)?,
            decompressor: zstd::bulk::Decompressor::new()?,
            oob: OobArea::new(oob_bytes),
            frames: Vec::new(),
            read_buf: Vec::new(),
        })
    }

    /// Compresses one chunk onto the end of `frames`; keeps it raw when the frame would not be
    /// smaller (pass-through).
    pub(crate) fn compress_onto(
        &mut self,
        raw: &[u8],
        frames: &mut Vec<u8>,
    ) -> Result<Compressed, EmuError> {
        let start = frames.len();
        let raw_bytes = raw.len() as u32;
        frames.resize(start + zstd::zstd_safe::compress_bound(raw.len()), 0);
        let frame_bytes = self.compressor.compress_to_buffer(raw, &mut frames[start..])?;
        let compressed = frame_bytes < raw.len();
        if compressed {
            frames.truncate(start + frame_bytes);
        } else {
            frames.truncate(start);
            frames.extend_from_slice(raw);
        }
        debug_assert!(frames.len() > start);
        Ok(Compressed { range: start..frames.len(), raw_bytes, compressed })
    }

    /// Bytes a stored chunk decompresses to, from its frame header.
    pub(crate) fn raw_len(entry: &ChunkEntry, stored: &[u8], byte: u64) -> Result<u64, EmuError> {
        if entry.raw {
            return Ok(stored.len() as u64);
        }
        match zstd::zstd_safe::get_frame_content_size(stored) {
            Ok(Some(len)) => Ok(len),
            _ => Err(EmuError::CorruptChunk { byte, reason: "no ZSTD frame content size".into() }),
        }
    }

    /// Decompresses (or copies) a stored chunk into `out`, which is exactly its raw length.
    pub(crate) fn decompress(
        &mut self,
        entry: &ChunkEntry,
        stored: &[u8],
        out: &mut [u8],
        byte: u64,
    ) -> Result<(), EmuError> {
        if entry.raw {
            out.copy_from_slice(stored);
            return Ok(());
        }
        match self.decompressor.decompress_to_buffer(stored, out) {
            Ok(n) if n == out.len() => Ok(()),
            Ok(n) => Err(EmuError::CorruptChunk {
                byte,
                reason: format!("decompressed to {n} bytes, expected {}", out.len()),
            }),
            Err(e) => Err(EmuError::CorruptChunk { byte, reason: e.to_string() }),
        }
    }

    /// Engine time for `bytes` through the compressor or decompressor, nanoseconds.
    pub(crate) fn busy_ns(&self, bytes: u64, compress: bool) -> u64 {
        let rate = if compress {
            self.config.compress_bytes_per_s
        } else {
            self.config.decompress_bytes_per_s
        };
        (bytes as f64 * 1e9 / rate).ceil() as u64
    }
}

/// Where a CW's chunks land, decided before anything changes. Public so a host-side model of
/// a CCZNS device (the engine's crash-test device) places chunks by the same rule.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CwLayout {
    /// (offset from zone start, stored bytes, feedback bytes) of each chunk that fits.
    pub placed: Vec<(u64, u64, u64)>,
    /// Padding among and after the placed chunks (placement granularity, padding zone), bytes.
    pub pad_bytes: u64,
    /// A chunk did not fit: the zone is to be padded to its end and finished.
    pub finish: bool,
}

pub(crate) type Layout = CwLayout;

/// Places chunks of `stored` sizes from `write_bytes` in a zone of `capacity_bytes`: packed one
/// after another, each taking its size rounded up to `align_bytes` (1: byte after byte); the
/// first that would straddle the capacity ends the command (finish); in a padding zone the last
/// placed chunk's feedback reaches the next block boundary.
pub fn lay_out(
    write_bytes: u64,
    capacity_bytes: u64,
    padding: bool,
    align_bytes: u64,
    stored: &[u64],
) -> Layout {
    debug_assert!(write_bytes <= capacity_bytes);
    assert!(align_bytes.is_power_of_two() && align_bytes <= crate::LBA_BYTES);
    // The pointer only ever moves by whole units (or to a block boundary).
    assert!(write_bytes.is_multiple_of(align_bytes), "pointer {write_bytes} off the unit");
    let mut placed = Vec::with_capacity(stored.len());
    let mut at = write_bytes;
    let mut finish = false;
    let mut pad_bytes = 0;
    for &bytes in stored {
        assert!(bytes >= 1, "chunks are never empty");
        if at + bytes > capacity_bytes {
            finish = true;
            break;
        }
        let taken = bytes.next_multiple_of(align_bytes);
        placed.push((at, bytes, taken));
        pad_bytes += taken - bytes;
        at += taken;
    }
    if padding {
        if let Some(last) = placed.last_mut() {
            let pad = at.next_multiple_of(crate::LBA_BYTES) - at;
            pad_bytes += pad;
            at += pad;
            last.2 += pad;
        }
    }
    // Capacity is whole blocks, a multiple of the unit: the padded end never passes it.
    debug_assert!(at <= capacity_bytes);
    Layout { placed, pad_bytes, finish }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn chunks_pack_byte_after_byte() {
        let layout = lay_out(100, 1 << 20, false, 1, &[10, 20, 30]);
        assert_eq!(layout.placed, vec![(100, 10, 10), (110, 20, 20), (130, 30, 30)]);
        assert_eq!((layout.pad_bytes, layout.finish), (0, false));
    }

    #[test]
    fn padding_zone_aligns_the_last_chunk_only() {
        let layout = lay_out(4000, 1 << 20, true, 1, &[50, 60]);
        assert_eq!(layout.placed, vec![(4000, 50, 50), (4050, 60, 8192 - 4050)]);
        assert_eq!(layout.pad_bytes, 8192 - 4110);
    }

    #[test]
    fn a_chunk_that_would_straddle_the_end_finishes_the_zone() {
        let layout = lay_out(8000, 8192, false, 1, &[100, 93, 1]);
        assert_eq!(layout.placed, vec![(8000, 100, 100)]);
        assert!(layout.finish);
        let exact = lay_out(8000, 8192, false, 1, &[100, 92]);
        assert!(!exact.finish, "a chunk ending exactly at the capacity fits");
    }

    /// With a placement unit every chunk takes whole units (the rounding is padding and part of
    /// its feedback), so every chunk starts on a unit; a padding zone still ends the last chunk
    /// on a block boundary.
    #[test]
    fn chunks_take_whole_units_with_an_alignment() {
        let layout = lay_out(64, 1 << 20, false, 32, &[10, 32, 33]);
        assert_eq!(layout.placed, vec![(64, 10, 32), (96, 32, 32), (128, 33, 64)]);
        assert_eq!(layout.pad_bytes, 22 + 31);
        let padded = lay_out(4032, 1 << 20, true, 32, &[40, 7]);
        assert_eq!(padded.placed, vec![(4032, 40, 64), (4096, 7, 4096)]);
        assert_eq!(padded.pad_bytes, 24 + 4089);
        // Straddling is judged on the stored size: the unit's rounding may end at the capacity.
        let end = lay_out(8160, 8192, false, 32, &[31]);
        assert_eq!((end.placed, end.finish), (vec![(8160, 31, 32)], false));
    }
}
