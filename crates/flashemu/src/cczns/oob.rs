//! Per-chunk metadata in the flash pages' out-of-band area (002 sec. III-D).
//!
//! Each flash page in which at least one compressed-write chunk *starts* carries, in its OOB,
//! one entry per such chunk. The format (little-endian, documented in docs/design.md §CCZNS):
//!
//! ```text
//! header (8 B): version u8 = 1 | count u8 | reserved u16 = 0 | crc32c u32 of the entries
//! entry (12 B): offset_in_page u16 | flags u8 | reserved u8 | stored_bytes u32
//!               | feedback_bytes u32
//! flags: bit 0 = stored raw (incompressible pass-through), bit 1 = feedback includes padding
//! ```
//!
//! The device keeps the encoded bytes (not a decoded copy) and decodes them, checksum first,
//! on every read that needs them, as firmware reading the OOB would.
use std::collections::BTreeMap;

use crate::EmuError;

pub(crate) const OOB_VERSION: u8 = 1;
pub(crate) const HEADER_BYTES: usize = 8;
pub(crate) const ENTRY_BYTES: usize = 12;
const FLAG_RAW: u8 = 1;
const FLAG_PADDED: u8 = 2;

/// One chunk's metadata as the OOB holds it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct ChunkEntry {
    /// Where the chunk starts inside its flash page.
    pub(crate) offset_in_page: u16,
    /// Stored without compression (it would not shrink).
    pub(crate) raw: bool,
    /// Bytes the chunk occupies (compressed frame, or raw bytes).
    pub(crate) stored_bytes: u32,
    /// Bytes the compressed write reported to the host: stored bytes plus any padding.
    pub(crate) feedback_bytes: u32,
}

impl ChunkEntry {
    fn encode(&self, out: &mut Vec<u8>) {
        let mut flags = 0u8;
        if self.raw {
            flags |= FLAG_RAW;
        }
        if self.feedback_bytes != self.stored_bytes {
            flags |= FLAG_PADDED;
        }
        out.extend_from_slice(&self.offset_in_page.to_le_bytes());
        out.push(flags);
        out.push(0);
        out.extend_from_slice(&self.stored_bytes.to_le_bytes());
        out.extend_from_slice(&self.feedback_bytes.to_le_bytes());
    }

    fn decode(bytes: &[u8]) -> Result<ChunkEntry, String> {
        debug_assert_eq!(bytes.len(), ENTRY_BYTES);
        let u32_at = |at: usize| {
            u32::from_le_bytes([bytes[at], bytes[at + 1], bytes[at + 2], bytes[at + 3]])
        };
        let flags = bytes[2];
        if flags & !(FLAG_RAW | FLAG_PADDED) != 0 || bytes[3] != 0 {
            return Err(format!("unknown flags {flags:#x}"));
        }
        let entry = ChunkEntry {
            offset_in_page: u16::from_le_bytes([bytes[0], bytes[1]]),
            raw: flags & FLAG_RAW != 0,
            stored_bytes: u32_at(4),
            feedback_bytes: u32_at(8),
        };
        let padded = entry.feedback_bytes != entry.stored_bytes;
        if entry.feedback_bytes < entry.stored_bytes || padded != (flags & FLAG_PADDED != 0) {
            return Err("feedback size disagrees with stored size and flags".into());
        }
        Ok(entry)
    }
}

/// Decodes one page's OOB bytes.
pub(crate) fn decode_page(bytes: &[u8]) -> Result<Vec<ChunkEntry>, String> {
    if bytes.len() < HEADER_BYTES {
        return Err(format!("{} bytes is shorter than the header", bytes.len()));
    }
    if bytes[0] != OOB_VERSION {
        return Err(format!("version {} (expected {OOB_VERSION})", bytes[0]));
    }
    if bytes[2] != 0 || bytes[3] != 0 {
        return Err("reserved header bytes are not zero".into());
    }
    let count = usize::from(bytes[1]);
    let body = &bytes[HEADER_BYTES..];
    if body.len() != count * ENTRY_BYTES {
        return Err(format!("{} entry bytes for {count} entries", body.len()));
    }
    let crc = u32::from_le_bytes([bytes[4], bytes[5], bytes[6], bytes[7]]);
    if crc32c::crc32c(body) != crc {
        return Err("checksum mismatch".into());
    }
    body.chunks_exact(ENTRY_BYTES).map(ChunkEntry::decode).collect()
}

fn encode_page(entries: &[ChunkEntry]) -> Vec<u8> {
    assert!(entries.len() <= usize::from(u8::MAX));
    let mut body = Vec::with_capacity(entries.len() * ENTRY_BYTES);
    for entry in entries {
        entry.encode(&mut body);
    }
    let mut out = Vec::with_capacity(HEADER_BYTES + body.len());
    out.push(OOB_VERSION);
    out.push(entries.len() as u8);
    out.extend_from_slice(&0u16.to_le_bytes());
    out.extend_from_slice(&crc32c::crc32c(&body).to_le_bytes());
    out.extend_from_slice(&body);
    out
}

/// The OOB of every flash page that holds chunk starts, by device-wide flash page index.
#[derive(Debug)]
pub(crate) struct OobArea {
    pages: BTreeMap<u64, Vec<u8>>,
    /// Entries one page's OOB can hold.
    entries_per_page: u32,
}

impl OobArea {
    /// `oob_bytes` per flash page.
    pub(crate) fn new(oob_bytes: u64) -> OobArea {
        let fit = (oob_bytes as usize).saturating_sub(HEADER_BYTES) / ENTRY_BYTES;
        let entries_per_page = fit.min(usize::from(u8::MAX)) as u32;
        assert!(entries_per_page >= 1, "OOB too small for one chunk entry");
        OobArea { pages: BTreeMap::new(), entries_per_page }
    }

    pub(crate) fn entries_per_page(&self) -> u32 {
        self.entries_per_page
    }

    /// Entries already in `page`'s OOB.
    pub(crate) fn count(&self, page: u64) -> u32 {
        self.pages.get(&page).map_or(0, |bytes| u32::from(bytes[1]))
    }

    /// The decoded entries of `page` (empty if it holds no chunk start).
    pub(crate) fn entries(&self, page: u64) -> Result<Vec<ChunkEntry>, EmuError> {
        match self.pages.get(&page) {
            None => Ok(Vec::new()),
            Some(bytes) => decode_page(bytes).map_err(|reason| EmuError::CorruptChunk {
                byte: page,
                reason: format!("OOB of flash page {page}: {reason}"),
            }),
        }
    }

    /// Appends an entry to `page` (the caller checked the room with `count`).
    pub(crate) fn push(&mut self, page: u64, entry: ChunkEntry) -> Result<(), EmuError> {
        let mut entries = self.entries(page)?;
        assert!((entries.len() as u32) < self.entries_per_page, "OOB room checked before");
        debug_assert!(entries.iter().all(|e| e.offset_in_page < entry.offset_in_page));
        entries.push(entry);
        self.pages.insert(page, encode_page(&entries));
        Ok(())
    }

    /// Forgets the OOB of pages `first..end` (a zone reset erases them).
    pub(crate) fn erase(&mut self, first: u64, end: u64) {
        let doomed: Vec<u64> = self.pages.range(first..end).map(|(&page, _)| page).collect();
        for page in doomed {
            self.pages.remove(&page);
        }
    }

    /// For tests: overwrites one byte of a page's OOB (bit rot).
    #[cfg(test)]
    pub(crate) fn corrupt(&mut self, page: u64, at: usize) {
        if let Some(bytes) = self.pages.get_mut(&page) {
            bytes[at] ^= 0xff;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(offset: u16, stored: u32, feedback: u32, raw: bool) -> ChunkEntry {
        ChunkEntry { offset_in_page: offset, raw, stored_bytes: stored, feedback_bytes: feedback }
    }

    #[test]
    fn page_round_trips_and_checks_its_checksum() {
        let entries = vec![
            entry(0, 700, 700, false),
            entry(700, 4096, 4096, true),
            entry(4796, 10, 300, false),
        ];
        let bytes = encode_page(&entries);
        assert_eq!(bytes.len(), HEADER_BYTES + 3 * ENTRY_BYTES);
        assert_eq!(decode_page(&bytes).unwrap(), entries);
        for at in 0..bytes.len() {
            let mut bad = bytes.clone();
            bad[at] ^= 0x40;
            assert!(decode_page(&bad).is_err(), "flip at byte {at} went unnoticed");
        }
    }

    #[test]
    fn room_is_what_the_oob_holds() {
        // 128 B per 4 KiB on a 16 KiB page: 512 B = 8 B header + 42 entries of 12 B.
        let mut area = OobArea::new(512);
        assert_eq!(area.entries_per_page(), 42);
        for i in 0..42u16 {
            area.push(7, entry(i * 10, 10, 10, false)).unwrap();
        }
        assert_eq!(area.count(7), 42);
        assert_eq!(area.entries(7).unwrap().len(), 42);
        area.corrupt(7, 20);
        assert!(matches!(area.entries(7), Err(EmuError::CorruptChunk { .. })));
        area.erase(0, 8);
        assert_eq!(area.count(7), 0);
    }
}
