//! Searching a node: one binary search serves latched pages (`&PageBuf`) and optimistic
//! readers' views (`super::racy::RacyPage`) through [`NodeRead`].
//!
//! Slot heads are taken after the node's prefix (the bytes every key of the node shares, its
//! length in the header; 0 on pages written before it existed, whose heads are then the keys'
//! first bytes as before). Keys such as `user000001234567` share their first 8 bytes across a
//! whole tree, so heads of the first 8 bytes never decided a comparison and every probe read a
//! cell; after the prefix they do, and a search touches the slot array and two cells (the first
//! key's, for the prefix, and the one it finds).
use super::{get_u16, get_u64, PageBuf, PageId, PageKind, HEADER_BYTES, OFF_PREFIX_LEN};
use super::{OFF_AUX, OFF_KIND, OFF_SLOT_COUNT};
use crate::page::node::{INNER_CELL_OVERHEAD, LEAF_CELL_OVERHEAD, SLOT_BYTES};
use std::cmp::Ordering;

/// Reads of a node's bytes: a latched page (`&PageBuf`: verified when read from the store, so
/// plain indexing cannot fail) or an optimistic reader's view (`RacyPage`: every read clamped
/// into the page, trusted only after validation).
pub trait NodeRead: Copy {
    fn u8_at(self, off: usize) -> u8;
    fn u16_at(self, off: usize) -> u16;
    fn u64_at(self, off: usize) -> u64;
    /// Compares the `len` bytes at `off` with `k`.
    fn cmp_bytes(self, off: usize, len: usize, k: &[u8]) -> Ordering;
}

impl NodeRead for &PageBuf {
    fn u8_at(self, off: usize) -> u8 {
        self[off]
    }
    fn u16_at(self, off: usize) -> u16 {
        get_u16(self, off)
    }
    fn u64_at(self, off: usize) -> u64 {
        get_u64(self, off)
    }
    fn cmp_bytes(self, off: usize, len: usize, k: &[u8]) -> Ordering {
        self[off..off + len].cmp(k)
    }
}

/// The first 8 bytes of `k` as a big-endian number, zero-padded: head order agrees with key
/// order whenever heads differ (8 bytes, not 4: integer keys share their high bytes).
pub fn key_head(k: &[u8]) -> u64 {
    if let Some(first) = k.first_chunk::<8>() {
        return u64::from_be_bytes(*first);
    }
    let mut b = [0u8; 8];
    b[..k.len()].copy_from_slice(k);
    u64::from_be_bytes(b)
}

/// Bytes every key of the node begins with; slot heads are taken after them.
pub fn prefix_len(p: &PageBuf) -> usize {
    get_u16(p, OFF_PREFIX_LEN) as usize
}

/// Binary search: Ok(slot) when found, Err(insertion slot) otherwise. At most 17 probes (slot
/// counts are u16), whatever the bytes.
pub fn search_in<P: NodeRead>(p: P, k: &[u8]) -> Result<usize, usize> {
    let n = p.u16_at(OFF_SLOT_COUNT) as usize;
    let overhead = match p.u8_at(OFF_KIND) == PageKind::Leaf as u8 {
        true => LEAF_CELL_OVERHEAD,
        false => INNER_CELL_OVERHEAD,
    };
    let plen = p.u16_at(OFF_PREFIX_LEN) as usize;
    let rest = match plen == 0 || n == 0 {
        true => k,
        false => {
            // The prefix is the first key's first `plen` bytes.
            let first = p.u16_at(HEADER_BYTES) as usize + overhead;
            let common = plen.min(k.len());
            match p.cmp_bytes(first, common, &k[..common]) {
                Ordering::Less => return Err(n),
                Ordering::Greater => return Err(0),
                // `k` is a proper prefix of the prefix: below every key.
                Ordering::Equal if k.len() < plen => return Err(0),
                Ordering::Equal => &k[plen..],
            }
        }
    };
    let head = key_head(rest);
    let (mut lo, mut hi) = (0usize, n);
    while lo < hi {
        let mid = lo + (hi - lo) / 2;
        let slot_at = HEADER_BYTES + SLOT_BYTES * mid;
        let order = match p.u64_at(slot_at + 2).cmp(&head) {
            Ordering::Equal => {
                let off = p.u16_at(slot_at) as usize;
                let len = (p.u16_at(off) as usize).saturating_sub(plen);
                p.cmp_bytes(off + overhead + plen, len, rest)
            }
            decided => decided,
        };
        match order {
            Ordering::Less => lo = mid + 1,
            Ordering::Greater => hi = mid,
            Ordering::Equal => return Ok(mid),
        }
    }
    Err(lo)
}

/// Inner node: child position for `k` (0 = aux, i + 1 = slot i): number of separators <= k.
pub fn child_pos_for_in<P: NodeRead>(p: P, k: &[u8]) -> usize {
    match search_in(p, k) {
        Ok(i) => i + 1,
        Err(i) => i,
    }
}

/// Inner node: child page at position `pos` (0 = aux).
pub fn child_at_pos_in<P: NodeRead>(p: P, pos: usize) -> PageId {
    if pos == 0 {
        p.u64_at(OFF_AUX)
    } else {
        let off = p.u16_at(HEADER_BYTES + SLOT_BYTES * (pos - 1)) as usize;
        p.u64_at(off + 2)
    }
}

/// Leaf: where slot `i`'s value lies, as (offset, length).
pub fn value_span<P: NodeRead>(p: P, i: usize) -> (usize, usize) {
    let off = p.u16_at(HEADER_BYTES + SLOT_BYTES * i) as usize;
    let klen = p.u16_at(off) as usize;
    (off + LEAF_CELL_OVERHEAD + klen, p.u16_at(off + 2) as usize)
}
