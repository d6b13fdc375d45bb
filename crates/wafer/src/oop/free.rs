//! Free pages cost no slot. The allocator links free pages through their own headers (`aux` =
//! next free page), which in place means one 4 KiB page each; out of place a freed page is
//! unmapped instead (its slot becomes invalid, GC reclaims it) and only its 80-byte header is
//! kept here, from which `read_page` rebuilds the exact page image (a free page is a header and
//! zeros). So after deleting everything, mapped pages and used zones return to their baseline.
//!
//! Persisted with every map snapshot, in a section after it (same area, tied to it by the
//! snapshot's LSN), as (page id, next free page, page LSN) triples: all `read_page` needs to
//! rebuild the page (`synthesize`); the rest of the header (write history) is dropped there.
//! Page ids take 32 bits (the layout refuses devices with more page ids, 16 TiB of pages), so
//! an entry is 16 bytes and a section sized for every page id is 1/254 of the pages' bytes.
//!
//! ```text
//! every block (4096 bytes), all little-endian:
//!   0 u32 magic "WFRE"   4 u16 version (2)   6 u16 reserved (0)   8 u32 block_index
//!  12 u32 block_count   16 u32 entries in this block   20 u32 crc32c (block, this field zeroed)
//!  24 u64 snapshot LSN (equals the map snapshot's header LSN)
//!  32 entries: u32 page id, u32 next free page (aux), u64 page LSN; 254 per block, zero tail
//! ```
//!
//! Version 1 had u64 page ids (24-byte entries, 169 per block).
use crate::le::{get_u32, get_u64};
use crate::page::{self, PageBuf, PageId, PageKind, HEADER_BYTES, OFF_AUX, OFF_LSN, PAGE_SIZE};
use std::collections::HashMap;

const MAGIC: u32 = u32::from_le_bytes(*b"WFRE");
const VERSION: u16 = 2;
const BLOCK_BYTES: usize = PAGE_SIZE;
const HEAD_BYTES: usize = 32;
const ENTRY_BYTES: usize = 16;
/// Page ids (and next-free links) the section can hold: they are stored in 32 bits.
pub const PAGE_ID_LIMIT: u64 = 1 << 32;
/// Free-page entries per section block.
pub const ENTRIES_PER_BLOCK: usize = (BLOCK_BYTES - HEAD_BYTES) / ENTRY_BYTES;
const CRC_AT: usize = 20;

/// Blocks the section takes for `count` free pages (at least one, even when empty).
pub fn section_blocks(count: u64) -> u64 {
    let blocks = count.div_ceil(ENTRIES_PER_BLOCK as u64).max(1);
    // The snapshot area is sized by this: every free page must find an entry.
    debug_assert!(blocks * ENTRIES_PER_BLOCK as u64 >= count, "{blocks} blocks for {count}");
    blocks
}

fn block_crc(block: &[u8]) -> u32 {
    // One whole block: encode and decode must checksum exactly the same bytes.
    debug_assert_eq!(block.len(), BLOCK_BYTES, "a free-page block of {} bytes", block.len());
    let c = crc32c::crc32c(&block[..CRC_AT]);
    let c = crc32c::crc32c_append(c, &[0u8; 4]);
    crc32c::crc32c_append(c, &block[CRC_AT + 4..])
}

/// Why a free-page section does not decode. A snapshot area whose section fails is not used.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum FreePagesError {
    #[error("free-page section ends before block {index}")]
    Short { index: usize },
    #[error("free-page block {index}: {what}")]
    Block { index: usize, what: BlockFault },
    #[error("free-page section claims {count} blocks")]
    BlockCount { count: usize },
    #[error("free-page entry for page {pid} out of range")]
    PageOutOfRange { pid: PageId },
}

/// What is wrong with one block of a free-page section.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum BlockFault {
    #[error("bad magic")]
    Magic,
    #[error("checksum mismatch")]
    Checksum,
    #[error("unsupported version")]
    Version,
    /// Its index or snapshot LSN is another block's or another snapshot's.
    #[error("index or snapshot LSN mismatch")]
    Foreign,
    #[error("block count changed")]
    CountChanged,
    #[error("{0} entries")]
    Entries(usize),
}

#[derive(Debug, Default)]
pub struct FreePages {
    headers: HashMap<PageId, [u8; HEADER_BYTES]>,
}

/// The header of a sealed free page whose body is all zeros, or None if `p` is anything else.
pub fn free_header(p: &PageBuf) -> Option<[u8; HEADER_BYTES]> {
    // A free page is its header and a body of zeros: the body is not empty.
    const { assert!(HEADER_BYTES < PAGE_SIZE) };
    if page::kind(p) != Some(PageKind::Free) || p[HEADER_BYTES..].iter().any(|b| *b != 0) {
        return None;
    }
    let mut h = [0u8; HEADER_BYTES];
    h.copy_from_slice(&p[..HEADER_BYTES]);
    Some(h)
}

impl FreePages {
    pub fn count(&self) -> usize {
        // The superblock is never freed: freeing it would unmap the database's root.
        debug_assert!(!self.headers.contains_key(&page::meta::META_PAGE_ID));
        self.headers.len()
    }
    pub fn pids(&self) -> impl Iterator<Item = PageId> + '_ {
        // The superblock is never freed: freeing it would unmap the database's root.
        debug_assert!(!self.headers.contains_key(&page::meta::META_PAGE_ID));
        self.headers.keys().copied()
    }
    pub fn insert(&mut self, pid: PageId, header: [u8; HEADER_BYTES]) {
        // Page 0 is the superblock, never free: the section decoder refuses it, so a section
        // holding it could not be read back.
        assert_ne!(pid, 0, "the superblock page kept as a free page");
        self.headers.insert(pid, header);
    }
    pub fn remove(&mut self, pid: PageId) {
        // Paired with `insert`: journal replay refuses page 0 and the store writes the
        // superblock outside any batch, so a removal of it took the superblock for a data page.
        debug_assert_ne!(pid, 0, "the superblock page removed from the free pages");
        self.headers.remove(&pid);
    }

    /// The page image of free page `pid`, if it is one.
    pub fn read(&self, pid: PageId, buf: &mut PageBuf) -> bool {
        // The store reads the superblock from its own slot before asking the free pages.
        debug_assert_ne!(pid, 0, "the superblock read as a free page");
        let Some(h) = self.headers.get(&pid) else { return false };
        buf.fill(0);
        buf[..HEADER_BYTES].copy_from_slice(h);
        true
    }

    /// The section for snapshot `lsn`, page ids ascending (deterministic bytes).
    pub fn encode(&self, lsn: u64) -> Vec<u8> {
        let mut pids: Vec<PageId> = self.headers.keys().copied().collect();
        pids.sort_unstable();
        let blocks = section_blocks(pids.len() as u64) as usize;
        let mut out = vec![0u8; blocks * BLOCK_BYTES];
        let mut written = 0usize;
        for (index, block) in out.chunks_mut(BLOCK_BYTES).enumerate() {
            let chunk = pids.chunks(ENTRIES_PER_BLOCK).nth(index).unwrap_or(&[]);
            written += chunk.len();
            block[0..4].copy_from_slice(&MAGIC.to_le_bytes());
            block[4..6].copy_from_slice(&VERSION.to_le_bytes());
            block[8..12].copy_from_slice(&(index as u32).to_le_bytes());
            block[12..16].copy_from_slice(&(blocks as u32).to_le_bytes());
            block[16..20].copy_from_slice(&(chunk.len() as u32).to_le_bytes());
            block[24..32].copy_from_slice(&lsn.to_le_bytes());
            for (i, pid) in chunk.iter().enumerate() {
                let h = &self.headers[pid];
                let aux = get_u64(h, OFF_AUX);
                // The layout caps page ids below PAGE_ID_LIMIT, and a free page links only to
                // a page id the allocator handed out.
                let (Ok(pid32), Ok(aux32)) = (u32::try_from(*pid), u32::try_from(aux)) else {
                    panic!("free page {pid} -> {aux} beyond the section's 32-bit page ids");
                };
                let at = HEAD_BYTES + i * ENTRY_BYTES;
                block[at..at + 4].copy_from_slice(&pid32.to_le_bytes());
                block[at + 4..at + 8].copy_from_slice(&aux32.to_le_bytes());
                block[at + 8..at + 16].copy_from_slice(&h[OFF_LSN..OFF_LSN + 8]);
            }
            let crc = block_crc(block);
            block[CRC_AT..CRC_AT + 4].copy_from_slice(&crc.to_le_bytes());
        }
        // The blocks hold every free page: none dropped past the last block.
        assert_eq!(written, pids.len(), "{blocks} blocks for {} free pages", pids.len());
        out
    }

    /// Reads a section written for snapshot `lsn` from `bytes` (which may run longer than the
    /// section). Every page id must be below `pid_limit`. Never panics on bytes.
    pub fn decode(bytes: &[u8], lsn: u64, pid_limit: u64) -> Result<FreePages, FreePagesError> {
        let mut free = FreePages::default();
        let mut blocks = 1usize;
        let mut index = 0usize;
        // Bound: `blocks` comes from the first block and is checked against the bytes given.
        while index < blocks {
            let Some(block) = bytes.get(index * BLOCK_BYTES..(index + 1) * BLOCK_BYTES) else {
                return Err(FreePagesError::Short { index });
            };
            if get_u32(block, 0) != MAGIC {
                return Err(FreePagesError::Block { index, what: BlockFault::Magic });
            }
            if get_u32(block, CRC_AT) != block_crc(block) {
                return Err(FreePagesError::Block { index, what: BlockFault::Checksum });
            }
            if u16::from_le_bytes([block[4], block[5]]) != VERSION {
                return Err(FreePagesError::Block { index, what: BlockFault::Version });
            }
            if get_u32(block, 8) as usize != index || get_u64(block, 24) != lsn {
                return Err(FreePagesError::Block { index, what: BlockFault::Foreign });
            }
            let count = get_u32(block, 12) as usize;
            if index == 0 {
                if count == 0 || count.saturating_mul(BLOCK_BYTES) > bytes.len() {
                    return Err(FreePagesError::BlockCount { count });
                }
                blocks = count;
            } else if count != blocks {
                return Err(FreePagesError::Block { index, what: BlockFault::CountChanged });
            }
            let entries = get_u32(block, 16) as usize;
            if entries > ENTRIES_PER_BLOCK {
                return Err(FreePagesError::Block { index, what: BlockFault::Entries(entries) });
            }
            for i in 0..entries {
                let at = HEAD_BYTES + i * ENTRY_BYTES;
                let (pid, aux, page_lsn) = (
                    u64::from(get_u32(block, at)),
                    u64::from(get_u32(block, at + 4)),
                    get_u64(block, at + 8),
                );
                if pid == 0 || pid >= pid_limit || aux >= pid_limit {
                    return Err(FreePagesError::PageOutOfRange { pid });
                }
                free.insert(pid, synthesize(pid, aux, page_lsn));
            }
            index += 1;
        }
        // What the store's reads and the next encode rely on: ids the layout holds, never 0.
        debug_assert!(free.pids().all(|p| p > 0 && p < pid_limit), "free ids past {pid_limit}");
        Ok(free)
    }
}

/// The header of a sealed free page `pid` -> `aux` stamped `lsn`.
pub fn synthesize(pid: PageId, aux: u64, lsn: u64) -> [u8; HEADER_BYTES] {
    let mut p = [0u8; PAGE_SIZE];
    page::format(&mut p, pid, PageKind::Free, 0, aux);
    page::set_lsn(&mut p, lsn);
    page::seal(&mut p);
    // `read` rebuilds the page from this header and zeros: that image must verify as the free
    // page `pid` (a full-page checksum, so debug builds only).
    debug_assert_eq!(page::verify(&p, pid), Ok(PageKind::Free));
    let mut h = [0u8; HEADER_BYTES];
    h.copy_from_slice(&p[..HEADER_BYTES]);
    h
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn free_page_round_trips_through_its_header() {
        let mut p = [0u8; PAGE_SIZE];
        page::format(&mut p, 9, PageKind::Free, 0, 4);
        page::push_write_history(&mut p, 77);
        page::seal(&mut p);
        let mut f = FreePages::default();
        f.insert(9, free_header(&p).unwrap());
        let mut q = [1u8; PAGE_SIZE];
        assert!(f.read(9, &mut q));
        assert_eq!(p, q);
        assert_eq!(page::verify(&q, 9), Ok(PageKind::Free));
        page::format(&mut p, 9, PageKind::Leaf, 1, 0);
        assert!(free_header(&p).is_none());
    }

    #[test]
    fn section_round_trips_and_refuses_damage() {
        let mut f = FreePages::default();
        for pid in 1..400u64 {
            f.insert(pid * 3, synthesize(pid * 3, pid * 3 + 3, pid + 100));
        }
        let bytes = f.encode(42);
        assert_eq!(bytes.len(), 2 * 4096);
        let g = FreePages::decode(&bytes, 42, 2000).unwrap();
        assert_eq!(g.headers, f.headers);
        assert!(FreePages::decode(&bytes, 43, 2000).is_err(), "other snapshot");
        assert!(FreePages::decode(&bytes, 42, 100).is_err(), "page ids out of range");
        for at in [0, 4, 13, 4096 + 40, 4096 + 4000] {
            let mut bad = bytes.clone();
            bad[at] ^= 0x10;
            assert!(FreePages::decode(&bad, 42, 2000).is_err(), "flip at {at}");
        }
        // A version-1 section (24-byte entries) is refused by its version, not misread.
        let mut old = bytes.clone();
        old[4..6].copy_from_slice(&1u16.to_le_bytes());
        let crc = block_crc(&old[..BLOCK_BYTES]);
        old[CRC_AT..CRC_AT + 4].copy_from_slice(&crc.to_le_bytes());
        let e = FreePages::decode(&old, 42, 2000).unwrap_err();
        assert!(matches!(e, FreePagesError::Block { what: BlockFault::Version, .. }), "{e}");
        let empty = FreePages::default().encode(7);
        assert_eq!(FreePages::decode(&empty, 7, 10).unwrap().count(), 0);
        assert!(FreePages::decode(&[0u8; 4096], 7, 10).is_err());
    }
}
