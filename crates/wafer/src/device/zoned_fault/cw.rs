//! The crash-test device as a CCZNS SSD (002 sec. III): compressed writes, decompressed reads,
//! padding zones. Chunks are compressed with ZSTD level 1 (as 002 and the emulator) and placed
//! by the emulator's own rule (`flashemu::lay_out`); each zone keeps its chunks' metadata as the
//! emulator keeps it in the OOB. A power cut keeps a prefix of whole blocks of each zone
//! (zoned_fault.rs) and with it exactly the chunks lying wholly inside it.
use super::{zone_mut, Chunk, State, Zone, ZonedFaultDevice};
use crate::device::{CwChunk, CwDone, CwPlaced, DeviceError, BLOCK_BYTES};

/// ZSTD level of the modelled engine (002 sec. V-A).
const ZSTD_LEVEL: i32 = 1;

impl Chunk {
    /// Zone offset just past the chunk and its padding.
    pub(super) fn end(&self) -> u64 {
        self.at + u64::from(self.feedback_bytes)
    }
}

impl Zone {
    /// Explicitly opened as a padding zone and still writable.
    pub(super) fn open_padding(&self) -> bool {
        self.visible.padding && !self.visible.full
    }
}

impl ZonedFaultDevice {
    /// The same device with the CCZNS commands, placing chunks at multiples of
    /// `chunk_align_bytes` (a power of two up to 4096).
    pub fn with_compression(self, chunk_align_bytes: u32) -> ZonedFaultDevice {
        assert!(chunk_align_bytes.is_power_of_two() && u64::from(chunk_align_bytes) <= BLOCK_BYTES);
        ZonedFaultDevice { chunk_align_bytes: Some(chunk_align_bytes), ..self }
    }

    fn align(&self) -> Result<u64, DeviceError> {
        self.chunk_align_bytes
            .map(u64::from)
            .ok_or(DeviceError::Unsupported("compressed commands (no in-storage compression)"))
    }

    pub(super) fn open_padding(&self, zone: u32) -> Result<(), DeviceError> {
        self.align()?;
        let mut st = self.state();
        Self::begin(&mut st)?;
        let opening = Self::open_zones(&st) >= self.geometry.max_open_zones;
        let z = zone_mut(&mut st, zone)?;
        if !z.visible.data.is_empty() || z.visible.full || z.visible.padding {
            return Err(DeviceError::Unsupported("only an empty zone opens as a padding zone"));
        }
        if opening {
            return Err(DeviceError::Unsupported("too many open zones"));
        }
        z.visible.padding = true;
        Ok(())
    }

    /// Compressed write at `offset`, the zone's write pointer: checked whole before anything
    /// changes, then compressed, laid out, stored.
    pub(super) fn cw(&self, offset: u64, chunks: &[CwChunk<'_>]) -> Result<CwDone, DeviceError> {
        let align = self.align()?;
        let capacity = self.geometry.zone_capacity_bytes;
        if chunks.is_empty()
            || chunks.len() > flashemu::CW_CHUNKS_MAX
            || chunks.iter().any(|c| c.data.is_empty() || c.data.len() as u64 > capacity)
        {
            return Err(DeviceError::Unsupported("compressed write of bad chunks"));
        }
        let mut st = self.state();
        Self::begin(&mut st)?;
        let (zone, at) = self.locate(offset);
        let opening = st.zones.get(zone as usize).is_some_and(|z| z.visible.data.is_empty());
        let opening = opening && !st.zones[zone as usize].open_padding();
        if opening && Self::open_zones(&st) >= self.geometry.max_open_zones {
            return Err(DeviceError::Unsupported("too many open zones"));
        }
        let z = zone_mut(&mut st, zone)?;
        if z.visible.full || z.visible.data.len() as u64 != at {
            return Err(DeviceError::Unsupported("compressed write off a zone's write pointer"));
        }
        let frames = compress_all(chunks)?;
        let stored: Vec<u64> = frames.iter().map(|(f, _)| f.len() as u64).collect();
        let layout = flashemu::lay_out(at, capacity, z.visible.padding, align, &stored);
        let zone_start = u64::from(zone) * self.geometry.zone_bytes;
        Ok(store(&mut st, zone, zone_start, capacity, &frames, &layout))
    }

    /// Single-chunk decompressed read: the chunk must start at `offset` and have reported
    /// `feedback_bytes`.
    pub(super) fn dr(
        &self,
        offset: u64,
        feedback_bytes: u32,
        buf: &mut [u8],
    ) -> Result<usize, DeviceError> {
        self.align()?;
        let mut st = self.state();
        Self::begin(&mut st)?;
        let (zone, at) = self.locate(offset);
        let illegal = |reason: &str| DeviceError::IllegalRead { offset, reason: reason.into() };
        let z = zone_mut(&mut st, zone)?;
        let found = z.visible.chunks.binary_search_by_key(&at, |c| c.at);
        let chunk =
            found.map(|i| z.visible.chunks[i]).map_err(|_| illegal("no chunk starts here"))?;
        if chunk.feedback_bytes != feedback_bytes {
            return Err(illegal("size is not the one its write reported"));
        }
        let stored = &z.visible.data[at as usize..(at + u64::from(chunk.stored_bytes)) as usize];
        if chunk.raw {
            let out = buf.get_mut(..stored.len()).ok_or_else(|| illegal("buffer too small"))?;
            out.copy_from_slice(stored);
            return Ok(stored.len());
        }
        zstd::bulk::decompress_to_buffer(stored, buf)
            .map_err(|e| illegal(&format!("chunk does not decompress: {e}")))
    }
}

/// Each chunk's stored form (ZSTD frame, or the raw bytes when that is not smaller) and
/// whether it is raw.
fn compress_all(chunks: &[CwChunk<'_>]) -> Result<Vec<(Vec<u8>, bool)>, DeviceError> {
    let mut z = zstd::bulk::Compressor::new(ZSTD_LEVEL).map_err(|e| DeviceError::Io {
        op: "zstd",
        offset: 0,
        source: e,
    })?;
    let mut out = Vec::with_capacity(chunks.len());
    for c in chunks {
        let frame =
            z.compress(c.data).map_err(|e| DeviceError::Io { op: "zstd", offset: 0, source: e })?;
        out.push(if frame.len() < c.data.len() { (frame, false) } else { (c.data.to_vec(), true) });
    }
    Ok(out)
}

/// Stores the placed chunks of `layout` (zero padding between and after them), records their
/// metadata, pads and finishes the zone when a chunk did not fit.
fn store(
    st: &mut State,
    zone: u32,
    zone_start: u64,
    capacity: u64,
    frames: &[(Vec<u8>, bool)],
    layout: &flashemu::CwLayout,
) -> CwDone {
    let z = &mut st.zones[zone as usize];
    let mut placed = Vec::with_capacity(layout.placed.len());
    for ((bytes, raw), &(at, stored, feedback)) in frames.iter().zip(&layout.placed) {
        assert_eq!(z.visible.data.len() as u64, at);
        z.visible.data.extend_from_slice(bytes);
        z.visible.data.resize((at + feedback) as usize, 0);
        let chunk =
            Chunk { at, stored_bytes: stored as u32, feedback_bytes: feedback as u32, raw: *raw };
        z.visible.chunks.push(chunk);
        placed.push(CwPlaced {
            offset: zone_start + at,
            stored_bytes: chunk.stored_bytes,
            feedback_bytes: chunk.feedback_bytes,
        });
    }
    if layout.finish {
        z.visible.data.resize(capacity as usize, 0);
    }
    z.visible.full = z.visible.data.len() as u64 == capacity;
    let write_pointer = zone_start + z.visible.data.len() as u64;
    CwDone { chunks: placed, write_pointer, zone_finished: layout.finish }
}
