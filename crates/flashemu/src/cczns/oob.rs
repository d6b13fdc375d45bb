//! Per-chunk metadata in the flash pages' out-of-band area (002 sec. III-D).
//!
//! Each flash page in which at least one compressed-write chunk *starts* carries, in its OOB,
//! one entry per such chunk. The format (little-endian; docs/internals/emulator.md, CCZNS):
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
    fn encode(&self, out: &mut [u8]) {
        debug_assert_eq!(out.len(), ENTRY_BYTES);
        let mut flags = 0u8;
        if self.raw {
            flags |= FLAG_RAW;
        }
        if self.feedback_bytes != self.stored_bytes {
            flags |= FLAG_PADDED;
        }
        out[0..2].copy_from_slice(&self.offset_in_page.to_le_bytes());
        out[2] = flags;
        out[3] = 0;
        out[4..8].copy_from_slice(&self.stored_bytes.to_le_bytes());
        out[8..12].copy_from_slice(&self.feedback_bytes.to_le_bytes());
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
#[cfg(test)]
pub(crate) fn decode_page(bytes: &[u8]) -> Result<Vec<ChunkEntry>, String> {
    checked_body(bytes)?.chunks_exact(ENTRY_BYTES).map(ChunkEntry::decode).collect()
}

/// The entry bytes of one page's OOB once its header and checksum hold.
fn checked_body(bytes: &[u8]) -> Result<&[u8], String> {
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
    Ok(body)
}

/// Seals a page's OOB after its entries changed: version, count and the entries' checksum.
fn seal_page(page: &mut [u8], count: usize) {
    assert!(count <= usize::from(u8::MAX) && page.len() >= HEADER_BYTES + count * ENTRY_BYTES);
    page[0] = OOB_VERSION;
    page[1] = count as u8;
    page[2..4].copy_from_slice(&0u16.to_le_bytes());
    let crc = crc32c::crc32c(&page[HEADER_BYTES..HEADER_BYTES + count * ENTRY_BYTES]);
    page[4..8].copy_from_slice(&crc.to_le_bytes());
}

#[cfg(test)]
fn encode_page(entries: &[ChunkEntry]) -> Vec<u8> {
    let mut out = vec![0u8; HEADER_BYTES + entries.len() * ENTRY_BYTES];
    for (entry, at) in entries.iter().zip(out[HEADER_BYTES..].chunks_exact_mut(ENTRY_BYTES)) {
        entry.encode(at);
    }
    seal_page(&mut out, entries.len());
    out
}

/// Flash pages whose OOB one allocation holds (a 16 MiB zone of 16 KiB pages). The emulator
/// runs in the host's process: a small allocation per page, reallocated at every entry, would
/// scatter long-lived chunks through the heap the engine allocates from and slow the host's
/// allocator (measured: the CCZNS experiment's host CPU), which a real device's
/// metadata never does. One zeroed block per group, OOB areas at a fixed stride, keeps them
/// out of the way.
const GROUP_PAGES: u64 = 1024;

/// The OOB of every flash page that holds chunk starts, by device-wide flash page index.
pub(crate) struct OobArea {
    /// Group index -> the OOB of its `GROUP_PAGES` pages, `stride` bytes each (zero: none).
    groups: BTreeMap<u64, Box<[u8]>>,
    stride: usize,
    /// Entries one page's OOB can hold.
    entries_per_page: u32,
}

impl std::fmt::Debug for OobArea {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OobArea")
            .field("groups", &self.groups.len())
            .field("stride", &self.stride)
            .field("entries_per_page", &self.entries_per_page)
            .finish()
    }
}

impl OobArea {
    /// `oob_bytes` per flash page.
    pub(crate) fn new(oob_bytes: u64) -> OobArea {
        let fit = (oob_bytes as usize).saturating_sub(HEADER_BYTES) / ENTRY_BYTES;
        let entries_per_page = fit.min(usize::from(u8::MAX)) as u32;
        assert!(entries_per_page >= 1, "OOB too small for one chunk entry");
        let stride = HEADER_BYTES + entries_per_page as usize * ENTRY_BYTES;
        OobArea { groups: BTreeMap::new(), stride, entries_per_page }
    }

    pub(crate) fn entries_per_page(&self) -> u32 {
        self.entries_per_page
    }

    /// `page`'s OOB bytes, if its group was ever written.
    fn page(&self, page: u64) -> Option<&[u8]> {
        let group = self.groups.get(&(page / GROUP_PAGES))?;
        let at = (page % GROUP_PAGES) as usize * self.stride;
        Some(&group[at..at + self.stride])
    }

    fn page_mut(&mut self, page: u64) -> &mut [u8] {
        let bytes = GROUP_PAGES as usize * self.stride;
        let group =
            self.groups.entry(page / GROUP_PAGES).or_insert_with(|| vec![0u8; bytes].into());
        let at = (page % GROUP_PAGES) as usize * self.stride;
        &mut group[at..at + self.stride]
    }

    /// Entries already in `page`'s OOB.
    pub(crate) fn count(&self, page: u64) -> u32 {
        self.page(page).map_or(0, |bytes| u32::from(bytes[1]))
    }

    /// The checked entry bytes of `page` (empty if it holds no chunk start).
    fn body(&self, page: u64) -> Result<&[u8], EmuError> {
        let Some(bytes) = self.page(page) else { return Ok(&[]) };
        if bytes[..HEADER_BYTES].iter().all(|&b| b == 0) {
            return Ok(&[]);
        }
        let used = HEADER_BYTES + usize::from(bytes[1]) * ENTRY_BYTES;
        checked_body(&bytes[..used.min(bytes.len())]).map_err(|reason| corrupt(page, reason))
    }

    /// The decoded entries of `page` (empty if it holds no chunk start).
    #[cfg(test)]
    pub(crate) fn entries(&self, page: u64) -> Result<Vec<ChunkEntry>, EmuError> {
        let body = self.body(page)?;
        body.chunks_exact(ENTRY_BYTES)
            .map(ChunkEntry::decode)
            .collect::<Result<_, _>>()
            .map_err(|reason| corrupt(page, reason))
    }

    /// The entry of the chunk starting `offset_in_page` into `page`, if one does (decoded
    /// where it lies: a DR's lookup allocates nothing).
    pub(crate) fn find(
        &self,
        page: u64,
        offset_in_page: u16,
    ) -> Result<Option<ChunkEntry>, EmuError> {
        for bytes in self.body(page)?.chunks_exact(ENTRY_BYTES) {
            let entry = ChunkEntry::decode(bytes).map_err(|reason| corrupt(page, reason))?;
            if entry.offset_in_page == offset_in_page {
                return Ok(Some(entry));
            }
        }
        Ok(None)
    }

    /// Appends an entry to `page` (the caller checked the room with `count`).
    pub(crate) fn push(&mut self, page: u64, entry: ChunkEntry) -> Result<(), EmuError> {
        // What is there must check out (checksum included) before it is extended.
        let body = self.body(page)?;
        let count = body.len() / ENTRY_BYTES;
        assert!((count as u32) < self.entries_per_page, "OOB room checked before");
        debug_assert!(body.chunks_exact(ENTRY_BYTES).all(|e| {
            ChunkEntry::decode(e).is_ok_and(|e| e.offset_in_page < entry.offset_in_page)
        }));
        let bytes = self.page_mut(page);
        let at = HEADER_BYTES + count * ENTRY_BYTES;
        entry.encode(&mut bytes[at..at + ENTRY_BYTES]);
        seal_page(bytes, count + 1);
        Ok(())
    }

    /// Forgets the OOB of pages `first..end` (a zone reset erases them).
    pub(crate) fn erase(&mut self, first: u64, end: u64) {
        let groups: Vec<u64> = self
            .groups
            .range(first / GROUP_PAGES..end.div_ceil(GROUP_PAGES))
            .map(|(&g, _)| g)
            .collect();
        for group in groups {
            let (start, stop) = (group * GROUP_PAGES, (group + 1) * GROUP_PAGES);
            if first <= start && stop <= end {
                self.groups.remove(&group);
                continue;
            }
            for page in first.max(start)..end.min(stop) {
                self.page_mut(page).fill(0);
            }
        }
        debug_assert!((first..end).all(|page| self.count(page) == 0));
    }

    /// For tests: overwrites one byte of a page's OOB (bit rot).
    #[cfg(test)]
    pub(crate) fn corrupt(&mut self, page: u64, at: usize) {
        if self.page(page).is_some() {
            self.page_mut(page)[at] ^= 0xff;
        }
    }
}

fn corrupt(page: u64, reason: String) -> EmuError {
    EmuError::CorruptChunk { byte: page, reason: format!("OOB of flash page {page}: {reason}") }
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
        assert_eq!(area.find(7, 50).unwrap(), Some(entry(50, 10, 10, false)));
        assert_eq!(area.find(7, 51).unwrap(), None);
        assert_eq!(area.find(8, 0).unwrap(), None);
        area.corrupt(7, 20);
        assert!(matches!(area.entries(7), Err(EmuError::CorruptChunk { .. })));
        area.erase(0, 8);
        assert_eq!(area.count(7), 0);
    }
}
