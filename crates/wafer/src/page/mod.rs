//! The 4 KiB page format: a common header (checksum, version, kind, LSN, page id, tree id, write
//! history) followed by a slotted body. Byte diagram: docs/internals/btree.md.
//!
//! Every accessor decodes explicit little-endian fields at fixed offsets. Pages read from the
//! store are checked by [`verify`] (checksum, version, identity, structure) before any other code
//! looks at them, so node code can index cells without re-checking bounds against disk bytes.
pub mod change;
mod check;
pub mod meta;
pub mod node;
pub mod racy;

pub use change::{NoopLogger, PageChange, PageLogger};
pub use check::verify;

/// Page identifier: page `pid` lives at `data_offset + pid * PAGE_SIZE` in the in-place store.
pub type PageId = u64;
/// Log sequence number stamped into a page by every modification.
pub type Lsn = u64;

pub const PAGE_SIZE: usize = 4096;
pub type PageBuf = [u8; PAGE_SIZE];

/// Bumped on any incompatible change of the page or superblock layout.
pub const FORMAT_VERSION: u8 = 1;

/// Write timestamps kept per page (000 sec. 4.2 deathtime estimation).
pub const HISTORY_LEN: usize = 4;

// Header field offsets (bytes from the page start). See docs/internals/btree.md.
pub const OFF_CHECKSUM: usize = 0; // u32 crc32c of bytes 4..4096
pub const OFF_VERSION: usize = 4; // u8
pub const OFF_KIND: usize = 5; // u8 PageKind
pub const OFF_SLOT_COUNT: usize = 6; // u16
pub const OFF_LSN: usize = 8; // u64
pub const OFF_PAGE_ID: usize = 16; // u64, detects misdirected reads/writes
pub const OFF_TREE_ID: usize = 24; // u32
pub const OFF_HEAP_START: usize = 28; // u16, lowest byte of the cell heap
pub const OFF_FRAG_BYTES: usize = 30; // u16, dead bytes inside the heap
pub const OFF_AUX: usize = 32; // u64, inner: leftmost child; free: next free page
pub const OFF_HISTORY_NEXT: usize = 40; // u8, ring index of the next history slot
pub const OFF_RESERVED: usize = 41; // 7 bytes, zero
pub const OFF_HISTORY: usize = 48; // [u64; 4] write timestamps
pub const HEADER_BYTES: usize = 80; // slot array starts here

const _: () = assert!(OFF_VERSION == OFF_CHECKSUM + 4);
const _: () = assert!(
    OFF_LSN.is_multiple_of(8) && OFF_PAGE_ID.is_multiple_of(8) && OFF_AUX.is_multiple_of(8)
);
const _: () = assert!(OFF_RESERVED + 7 == OFF_HISTORY);
const _: () = assert!(OFF_HISTORY + HISTORY_LEN * 8 == HEADER_BYTES);
const _: () = assert!(HEADER_BYTES == 80);
const _: () = assert!(PAGE_SIZE <= u16::MAX as usize + 1, "u16 offsets must address the page");

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
pub enum PageKind {
    Meta = 1,
    Leaf = 2,
    Inner = 3,
    Free = 4,
    /// A chunk of a value stored out of line (`crate::blob`).
    Blob = 5,
}

impl PageKind {
    pub fn from_u8(b: u8) -> Option<PageKind> {
        match b {
            1 => Some(PageKind::Meta),
            2 => Some(PageKind::Leaf),
            3 => Some(PageKind::Inner),
            4 => Some(PageKind::Free),
            5 => Some(PageKind::Blob),
            _ => None,
        }
    }
}

pub use crate::le::{get_u16, get_u32, get_u64, put_u16, put_u32, put_u64};

pub fn kind(p: &PageBuf) -> Option<PageKind> {
    PageKind::from_u8(p[OFF_KIND])
}
pub fn lsn(p: &PageBuf) -> Lsn {
    get_u64(p, OFF_LSN)
}
pub fn set_lsn(p: &mut PageBuf, lsn: Lsn) {
    put_u64(p, OFF_LSN, lsn)
}
pub fn page_id(p: &PageBuf) -> PageId {
    get_u64(p, OFF_PAGE_ID)
}
pub fn tree_id(p: &PageBuf) -> u32 {
    get_u32(p, OFF_TREE_ID)
}
pub fn aux(p: &PageBuf) -> u64 {
    get_u64(p, OFF_AUX)
}
pub fn set_aux(p: &mut PageBuf, v: u64) {
    put_u64(p, OFF_AUX, v)
}

/// The write timestamps, oldest first (zeros for slots never written).
pub fn write_history(p: &PageBuf) -> [u64; HISTORY_LEN] {
    let next = p[OFF_HISTORY_NEXT] as usize % HISTORY_LEN;
    let mut out = [0u64; HISTORY_LEN];
    for (i, o) in out.iter_mut().enumerate() {
        *o = get_u64(p, OFF_HISTORY + ((next + i) % HISTORY_LEN) * 8);
    }
    out
}

/// Records one write-back at logical time `timestamp` in the history ring.
pub fn push_write_history(p: &mut PageBuf, timestamp: u64) {
    let next = p[OFF_HISTORY_NEXT] as usize % HISTORY_LEN;
    put_u64(p, OFF_HISTORY + next * 8, timestamp);
    p[OFF_HISTORY_NEXT] = ((next + 1) % HISTORY_LEN) as u8;
}

pub fn compute_checksum(p: &PageBuf) -> u32 {
    crc32c::crc32c(&p[OFF_CHECKSUM + 4..])
}

/// Seals a page for writing: the checksum covers every byte after the checksum field.
pub fn seal(p: &mut PageBuf) {
    let c = compute_checksum(p);
    put_u32(p, OFF_CHECKSUM, c);
}

/// Writes a fresh header for page `pid`. Keeps the write history: it belongs to the page slot,
/// not to its contents, and deathtime estimation wants it across reuse.
pub fn format(p: &mut PageBuf, pid: PageId, kind: PageKind, tree_id: u32, aux: u64) {
    let lsn = lsn(p);
    let mut history = [0u8; HISTORY_LEN * 8 + 1];
    history[0] = p[OFF_HISTORY_NEXT];
    history[1..].copy_from_slice(&p[OFF_HISTORY..HEADER_BYTES]);
    p.fill(0);
    p[OFF_VERSION] = FORMAT_VERSION;
    p[OFF_KIND] = kind as u8;
    set_lsn(p, lsn);
    put_u64(p, OFF_PAGE_ID, pid);
    put_u32(p, OFF_TREE_ID, tree_id);
    put_u16(p, OFF_HEAP_START, PAGE_SIZE as u16);
    set_aux(p, aux);
    p[OFF_HISTORY_NEXT] = history[0] % HISTORY_LEN as u8;
    p[OFF_HISTORY..HEADER_BYTES].copy_from_slice(&history[1..]);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn history_ring_keeps_last_four_oldest_first() {
        let mut p = [0u8; PAGE_SIZE];
        format(&mut p, 7, PageKind::Leaf, 1, 0);
        for t in 1..=6 {
            push_write_history(&mut p, t);
        }
        assert_eq!(write_history(&p), [3, 4, 5, 6]);
        format(&mut p, 7, PageKind::Free, 0, 0);
        assert_eq!(write_history(&p), [3, 4, 5, 6], "history survives reformatting");
    }

    #[test]
    fn verify_detects_flipped_byte_and_wrong_pid() {
        let mut p = [0u8; PAGE_SIZE];
        format(&mut p, 9, PageKind::Leaf, 1, 0);
        seal(&mut p);
        assert_eq!(verify(&p, 9), Ok(PageKind::Leaf));
        assert!(verify(&p, 10).is_err());
        p[2000] ^= 0x40;
        assert!(verify(&p, 9).unwrap_err().contains("checksum"));
    }
}
