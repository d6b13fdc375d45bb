//! The CCZNS commands (002 sec. III-B to III-E) on a ZNS device with `[cczns]`: compressed
//! write (single or multi-chunk), decompressed read (single-chunk by address and reported
//! size, multi-chunk by byte range) and the padding-zone open.
//!
//! As every command here, each is checked completely before it changes anything: a refused
//! command leaves zone, OOB, store and counters as they were. The one exception is by design:
//! a CW whose next chunk would straddle the zone end pads and finishes the zone and reports
//! the chunks it wrote (a completion, not a refusal).
use super::{zns_slot, Backend, Ssd};
use crate::cczns::oob::ChunkEntry;
use crate::cczns::{
    lay_out, ChunkPlacement, Compressed, CwOutcome, DrChunk, DrOutcome, Engine, Layout,
    CW_CHUNKS_MAX,
};
use crate::timing::{EngineWork, Io};
use crate::zns::Zns;
use crate::{EmuError, LBA_BYTES};

const NEEDS_CCZNS: &str = "ZNS with [cczns]";

impl Ssd {
    fn engine_and_zns(&mut self) -> Result<(&mut Engine, &mut Zns), EmuError> {
        match (self.cczns.as_deref_mut(), &mut self.backend) {
            (Some(engine), Backend::Zns(zns)) => Ok((engine, zns)),
            _ => Err(EmuError::WrongInterface { needed: NEEDS_CCZNS }),
        }
    }

    /// Opens `zone` explicitly as a padding zone (002 sec. III-E): the last chunk of every
    /// compressed write ends on a block boundary, so block writes may follow in the same zone.
    /// Only an empty zone can become one; the mode lasts until its reset.
    pub fn zone_open_padding(&mut self, zone: u32) -> Result<(), EmuError> {
        let (_, zns) = self.engine_and_zns()?;
        zns.open(zone, true)
    }

    /// Compressed write: `chunks` (one = single-chunk CW, several = multi-chunk) go to the
    /// zone whose write pointer is `at_byte`; the device compresses each, packs the results
    /// byte-granular and reports where each went. See [`CwOutcome`] for a zone that fills.
    pub fn compressed_write(
        &mut self,
        at_byte: u64,
        chunks: &[&[u8]],
    ) -> Result<CwOutcome, EmuError> {
        let zone = self.check_cw(at_byte, chunks)?;
        let (engine, _) = self.engine_and_zns()?;
        let mut frames = std::mem::take(&mut engine.frames);
        frames.clear();
        let done = self.compress_and_apply(zone, chunks, &mut frames);
        if let Some(engine) = self.cczns.as_deref_mut() {
            engine.frames = frames;
        }
        done
    }

    /// The CW after its checks: compresses `chunks` into `frames`, lays them out, stores them.
    fn compress_and_apply(
        &mut self,
        zone: u32,
        chunks: &[&[u8]],
        frames: &mut Vec<u8>,
    ) -> Result<CwOutcome, EmuError> {
        let (engine, zns) = self.engine_and_zns()?;
        let mut compressed = Vec::with_capacity(chunks.len());
        let mut stored = Vec::with_capacity(chunks.len());
        for chunk in chunks {
            let one = engine.compress_onto(chunk, frames)?;
            stored.push(one.range.len() as u64);
            compressed.push(one);
            // The device compresses no further than the first chunk that does not fit.
            let used: u64 = stored.iter().sum();
            if zns.write_bytes(zone) + used > zns.capacity_bytes() {
                break;
            }
        }
        let align_bytes = u64::from(engine.config.chunk_align_bytes);
        let padding = zns.is_padding(zone);
        let layout =
            lay_out(zns.write_bytes(zone), zns.capacity_bytes(), padding, align_bytes, &stored);
        let zone_start_byte = u64::from(zone) * zns.zone_bytes();
        let page_bytes = zns.flash_page_bytes();
        check_oob_room(engine, zone_start_byte, page_bytes, &layout)?;
        self.apply_cw(zone, zone_start_byte, (frames, &compressed), &layout)
    }

    /// Everything about a CW that can be refused without compressing; returns the zone.
    fn check_cw(&mut self, at_byte: u64, chunks: &[&[u8]]) -> Result<u32, EmuError> {
        let device_bytes = self.layout.logical_blocks * LBA_BYTES;
        let (_, zns) = self.engine_and_zns()?;
        if chunks.is_empty() || chunks.len() > CW_CHUNKS_MAX {
            let n = chunks.len();
            return Err(EmuError::BadChunks(format!("{n} chunks (1..={CW_CHUNKS_MAX} allowed)")));
        }
        for chunk in chunks {
            if chunk.is_empty() {
                return Err(EmuError::BadChunks("an empty chunk".into()));
            }
            let bytes = chunk.len() as u64;
            if bytes > zns.capacity_bytes() || bytes > u64::from(u32::MAX) {
                return Err(EmuError::ChunkTooLarge {
                    bytes,
                    zone_capacity_bytes: zns.capacity_bytes(),
                });
            }
        }
        if at_byte >= device_bytes {
            return Err(EmuError::OutOfRange {
                lba: at_byte / LBA_BYTES,
                blocks: 1,
                capacity_blocks: device_bytes / LBA_BYTES,
            });
        }
        let zone = (at_byte / zns.zone_bytes()) as u32;
        zns.check_opens(zone)?;
        let write_pointer = u64::from(zone) * zns.zone_bytes() + zns.write_bytes(zone);
        if at_byte != write_pointer {
            return Err(EmuError::NotAtByteWritePointer {
                zone,
                byte: at_byte,
                write_pointer_bytes: write_pointer,
            });
        }
        Ok(zone)
    }

    /// Stores the placed chunks, records their OOB entries, moves the pointer, counts and
    /// times the command.
    fn apply_cw(
        &mut self,
        zone: u32,
        zone_start_byte: u64,
        (frames, compressed): (&[u8], &[Compressed]),
        layout: &Layout,
    ) -> Result<CwOutcome, EmuError> {
        let page_bytes = u64::from(self.layout.flash_page_bytes);
        let before = zone_start_byte + layout.placed.first().map_or(0, |p| p.0);
        let mut chunks = Vec::with_capacity(layout.placed.len());
        for (one, &(offset, stored_bytes, feedback_bytes)) in compressed.iter().zip(&layout.placed)
        {
            let byte_address = zone_start_byte + offset;
            self.store.write_bytes(byte_address, &frames[one.range.clone()])?;
            let entry = ChunkEntry {
                offset_in_page: (byte_address % page_bytes) as u16,
                raw: !one.compressed,
                stored_bytes: stored_bytes as u32,
                feedback_bytes: feedback_bytes as u32,
            };
            let (engine, _) = self.engine_and_zns()?;
            engine.oob.push(byte_address / page_bytes, entry)?;
            chunks.push(ChunkPlacement {
                byte_address,
                raw_bytes: one.raw_bytes,
                stored_bytes: entry.stored_bytes,
                feedback_bytes: entry.feedback_bytes,
                compressed: one.compressed,
            });
        }
        self.count_cw(&chunks);
        let data_bytes: u64 = chunks.iter().map(|c| u64::from(c.stored_bytes)).sum();
        let compressed_raw: u64 = compressed.iter().map(|c| u64::from(c.raw_bytes)).sum();
        let Backend::Zns(zns) = &mut self.backend else { unreachable!("checked in check_cw") };
        if !chunks.is_empty() {
            zns.apply_bytes(zone, data_bytes, layout.pad_bytes, &mut self.counters);
        }
        if layout.finish {
            zns.finish(zone, &mut self.counters)?;
        }
        let write_pointer_bytes = zone_start_byte + zns.write_bytes(zone);
        let after = before + data_bytes + layout.pad_bytes;
        self.time_cw(before, after, &chunks, compressed_raw);
        Ok(CwOutcome { chunks, write_pointer_bytes, zone_finished: layout.finish })
    }

    fn count_cw(&mut self, chunks: &[ChunkPlacement]) {
        for chunk in chunks {
            let raw = u64::from(chunk.raw_bytes);
            self.counters.host_write_bytes += raw;
            self.counters.stream_host_bytes[0] += raw;
            self.counters.cw_raw_bytes += raw;
            self.counters.cw_stored_bytes += u64::from(chunk.stored_bytes);
            self.counters.cw_passthrough_chunks += u64::from(!chunk.compressed);
        }
    }

    /// Device time of a CW: the compressor takes every chunk it compressed, then the blocks
    /// the write completed (`before..after` bytes) go to flash.
    fn time_cw(&mut self, before: u64, after: u64, chunks: &[ChunkPlacement], compressed_raw: u64) {
        let (Some(timing), Some(engine)) = (self.timing.as_deref_mut(), self.cczns.as_deref())
        else {
            return;
        };
        let work = EngineWork {
            busy_ns: engine.busy_ns(compressed_raw, true),
            latency_ns: engine.config.compress_latency_ns,
        };
        let host_bytes: u64 = chunks.iter().map(|c| u64::from(c.raw_bytes)).sum();
        let first = before / LBA_BYTES;
        let blocks = after / LBA_BYTES - first;
        let io = Io { lba: first, blocks, host_bytes, engine: Some(work) };
        timing.write_through(io, &zns_slot, &self.counters);
    }

    /// The OOB entry of the chunk starting at `byte`, or why a read there is illegal.
    fn chunk_at(&mut self, byte: u64) -> Result<ChunkEntry, EmuError> {
        let device_bytes = self.layout.logical_blocks * LBA_BYTES;
        let page_bytes = u64::from(self.layout.flash_page_bytes);
        let (engine, _) = self.engine_and_zns()?;
        if byte >= device_bytes {
            return Err(illegal(byte, "beyond the device"));
        }
        let within = (byte % page_bytes) as u16;
        engine
            .oob
            .find(byte / page_bytes, within)?
            .ok_or_else(|| illegal(byte, "no chunk starts here"))
    }

    /// Single-chunk decompressed read: the chunk at `at_byte` whose CW reported
    /// `feedback_bytes`, decompressed into the front of `buf`; returns its original length.
    pub fn decompressed_read(
        &mut self,
        at_byte: u64,
        feedback_bytes: u32,
        buf: &mut [u8],
    ) -> Result<usize, EmuError> {
        if !self.store.keeps_data() {
            return Err(EmuError::NoStoredData);
        }
        let entry = self.chunk_at(at_byte)?;
        if entry.feedback_bytes != feedback_bytes {
            let reason = format!(
                "size {feedback_bytes} is not the chunk's ({} reported by its write)",
                entry.feedback_bytes
            );
            return Err(EmuError::IllegalRead { byte: at_byte, reason });
        }
        let (engine, _) = self.engine_and_zns()?;
        let mut stored = std::mem::take(&mut engine.read_buf);
        stored.clear();
        stored.resize(entry.stored_bytes as usize, 0);
        let read = self.decompress_stored(at_byte, entry, &mut stored, buf);
        if let Some(engine) = self.cczns.as_deref_mut() {
            engine.read_buf = stored;
        }
        let raw_len = read?;
        self.count_and_time_dr(at_byte, u64::from(entry.feedback_bytes), raw_len);
        Ok(raw_len as usize)
    }

    /// Reads the chunk `entry` at `at_byte` into `stored` (its stored size) and decompresses
    /// it into the front of `buf`; returns its raw length.
    fn decompress_stored(
        &mut self,
        at_byte: u64,
        entry: ChunkEntry,
        stored: &mut [u8],
        buf: &mut [u8],
    ) -> Result<u64, EmuError> {
        self.store.read_bytes(at_byte, stored)?;
        let raw_len = Engine::raw_len(&entry, stored, at_byte)?;
        if (buf.len() as u64) < raw_len {
            return Err(EmuError::BufferTooSmall { needed: raw_len, len: buf.len() });
        }
        let (engine, _) = self.engine_and_zns()?;
        engine.decompress(&entry, stored, &mut buf[..raw_len as usize], at_byte)?;
        Ok(raw_len)
    }

    /// Multi-chunk decompressed read: the `len_bytes` from `at_byte` must be whole chunks of
    /// one zone (found through the OOB; a range that starts or ends inside a chunk is
    /// refused). Decompresses them in order into `buf`, as many as it holds.
    pub fn decompressed_read_multi(
        &mut self,
        at_byte: u64,
        len_bytes: u64,
        buf: &mut [u8],
    ) -> Result<DrOutcome, EmuError> {
        if !self.store.keeps_data() {
            return Err(EmuError::NoStoredData);
        }
        let in_range = self.chunks_in(at_byte, len_bytes)?;
        let mut stored = vec![0u8; len_bytes as usize];
        self.store.read_bytes(at_byte, &mut stored)?;
        let mut chunks = Vec::new();
        let mut filled = 0usize;
        for &(address, entry) in &in_range {
            let from = (address - at_byte) as usize;
            let frame = &stored[from..from + entry.stored_bytes as usize];
            let raw_len = Engine::raw_len(&entry, frame, address)? as usize;
            if filled + raw_len > buf.len() {
                break;
            }
            let (engine, _) = self.engine_and_zns()?;
            engine.decompress(&entry, frame, &mut buf[filled..filled + raw_len], address)?;
            filled += raw_len;
            chunks.push(DrChunk {
                byte_address: address,
                raw_bytes: raw_len as u32,
                feedback_bytes: entry.feedback_bytes,
            });
        }
        let read_end =
            chunks.last().map_or(at_byte, |c| c.byte_address + u64::from(c.feedback_bytes));
        self.count_and_time_dr(at_byte, read_end - at_byte, filled as u64);
        Ok(DrOutcome { chunks, chunks_in_range: in_range.len(), filled_bytes: filled })
    }

    /// The chunks that exactly tile `len_bytes` from `at_byte` inside one zone.
    fn chunks_in(
        &mut self,
        at_byte: u64,
        len_bytes: u64,
    ) -> Result<Vec<(u64, ChunkEntry)>, EmuError> {
        let (_, zns) = self.engine_and_zns()?;
        let zone_bytes = zns.zone_bytes();
        if len_bytes == 0 {
            return Err(illegal(at_byte, "empty range"));
        }
        let end =
            at_byte.checked_add(len_bytes).ok_or_else(|| illegal(at_byte, "range overflows"))?;
        if at_byte / zone_bytes != (end - 1) / zone_bytes {
            return Err(illegal(at_byte, "range crosses a zone boundary"));
        }
        let mut found = Vec::new();
        let mut at = at_byte;
        // Bound: every chunk takes at least one byte of the range.
        for _ in 0..len_bytes {
            if at == end {
                return Ok(found);
            }
            let entry = self.chunk_at(at)?;
            let next = at + u64::from(entry.feedback_bytes);
            if next > end {
                return Err(illegal(end, "range ends inside a chunk"));
            }
            found.push((at, entry));
            at = next;
        }
        debug_assert_eq!(at, end);
        Ok(found)
    }

    fn count_and_time_dr(&mut self, at_byte: u64, range_bytes: u64, raw_bytes: u64) {
        self.counters.host_read_bytes += raw_bytes;
        self.counters.dr_raw_bytes += raw_bytes;
        let (Some(timing), Some(engine)) = (self.timing.as_deref_mut(), self.cczns.as_deref())
        else {
            return;
        };
        let work = EngineWork {
            busy_ns: engine.busy_ns(raw_bytes, false),
            latency_ns: engine.config.decompress_latency_ns,
        };
        let first = at_byte / LBA_BYTES;
        let blocks = (at_byte + range_bytes).div_ceil(LBA_BYTES) - first;
        let io = Io { lba: first, blocks, host_bytes: raw_bytes, engine: Some(work) };
        timing.read_through(io, &zns_slot);
    }
}

/// Checks that every flash page a chunk starts in has OOB room for its entry.
fn check_oob_room(
    engine: &Engine,
    zone_start_byte: u64,
    page_bytes: u64,
    layout: &Layout,
) -> Result<(), EmuError> {
    let mut page = u64::MAX;
    let mut count = 0u32;
    for &(offset, _, _) in &layout.placed {
        let this = (zone_start_byte + offset) / page_bytes;
        if this != page {
            page = this;
            count = engine.oob.count(page);
        }
        count += 1;
        if count > engine.oob.entries_per_page() {
            return Err(EmuError::OobFull { page, entries: engine.oob.entries_per_page() });
        }
    }
    Ok(())
}

fn illegal(byte: u64, reason: &str) -> EmuError {
    EmuError::IllegalRead { byte, reason: reason.to_string() }
}
