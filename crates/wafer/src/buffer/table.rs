//! The page table (page id -> frame and version, `latch.rs`) as a segmented array that grows
//! with the data file without moving an entry: readers hold `&Entry` across a page access, so
//! the entries of page ids already covered must never be reallocated.
//!
//! Segment 0 covers ids `0..BASE`, segment k >= 1 covers `BASE * 2^(k-1)..BASE * 2^k`: a
//! lookup is a shift, a `leading_zeros` and two loads, with no lock. Growth allocates whole
//! segments under a mutex and then publishes the new length, so a reader that sees an id below
//! the length also sees its segment.
use super::latch::Entry;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, OnceLock};

/// Entries of segment 0 (and the unit of every later one): 32 KiB of entries, so a small
/// database's table stays small.
const BASE_ENTRIES: u64 = 1 << 12;
const BASE_SHIFT: u32 = BASE_ENTRIES.trailing_zeros();
/// Segments cover every id below `BASE * 2^(SEGMENTS-1)`: 2^50 pages, past any file.
const SEGMENTS: usize = 39;
/// The most ids the table can cover.
pub(super) const PAGE_IDS_MAX: u64 = BASE_ENTRIES << (SEGMENTS - 1);
const _: () = assert!(std::mem::size_of::<Entry>() == 8);

#[derive(Debug)]
pub(super) struct PageTable {
    segments: [OnceLock<Box<[Entry]>>; SEGMENTS],
    /// Ids `0..len` have entries; only grows.
    len: AtomicU64,
    grow: Mutex<()>,
}

/// Which segment holds `id`, and its index there.
fn locate(id: u64) -> (usize, usize) {
    let unit = id >> BASE_SHIFT;
    if unit == 0 {
        return (0, id as usize);
    }
    let k = (u64::BITS - unit.leading_zeros()) as usize;
    let start = BASE_ENTRIES << (k - 1);
    let i = (id - start) as usize;
    debug_assert!(k < SEGMENTS && i < segment_len(k), "id {id} at {i} of segment {k}");
    (k, i)
}

/// Entries in segment `k`.
fn segment_len(k: usize) -> usize {
    // Past the last segment the shift below would overflow to a length of nothing.
    debug_assert!(k < SEGMENTS, "segment {k} of {SEGMENTS}");
    if k == 0 {
        BASE_ENTRIES as usize
    } else {
        (BASE_ENTRIES << (k - 1)) as usize
    }
}

impl PageTable {
    pub fn new(len: u64) -> PageTable {
        let table = PageTable {
            segments: std::array::from_fn(|_| OnceLock::new()),
            len: AtomicU64::new(0),
            grow: Mutex::new(()),
        };
        table.grow_to(len);
        assert_eq!(table.len(), len);
        table
    }

    pub fn len(&self) -> u64 {
        let len = self.len.load(Ordering::Acquire);
        // Paired with `grow_to`'s bound: `locate` finds a segment for every id below it.
        debug_assert!(len <= PAGE_IDS_MAX, "a page table of {len} ids");
        len
    }

    /// Covers ids `0..len` (a shorter `len` is a no-op).
    pub fn grow_to(&self, len: u64) {
        assert!(len <= PAGE_IDS_MAX, "a page table of {len} ids");
        let _g = self.grow.lock().unwrap_or_else(|e| e.into_inner());
        if len <= self.len() {
            return;
        }
        let last = locate(len - 1).0;
        for (k, segment) in self.segments.iter().enumerate().take(last + 1) {
            segment.get_or_init(|| (0..segment_len(k)).map(|_| Entry::new()).collect());
        }
        // Published after the segments: a reader that loads this length finds them set.
        self.len.store(len, Ordering::Release);
    }

    /// The entry of `id`, or None past the length.
    #[inline]
    pub fn get(&self, id: u64) -> Option<&Entry> {
        if id >= self.len() {
            return None;
        }
        let (k, i) = locate(id);
        let entry = self.segments[k].get().map(|s| &s[i]);
        debug_assert!(entry.is_some(), "segment {k} is published with the length");
        entry
    }
}

impl std::ops::Index<usize> for PageTable {
    type Output = Entry;
    /// Callers index ids they checked against the length (`BufferPool::check_pid`), or ids of
    /// pages they hold latched, so a miss is a bug.
    fn index(&self, id: usize) -> &Entry {
        match self.get(id as u64) {
            Some(e) => {
                // `get` finds entries only below the published length (paired with `grow_to`).
                debug_assert!((id as u64) < self.len(), "entry {id} past length {}", self.len());
                e
            }
            None => panic!("page id {id} beyond the page table's {} ids", self.len()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn segments_tile_the_ids_without_gaps() {
        let mut expected = (0usize, 0usize);
        for id in 0..(BASE_ENTRIES * 9) {
            let got = locate(id);
            if got.0 != expected.0 {
                assert_eq!(expected.1, segment_len(expected.0), "segment {} full", expected.0);
                expected = (got.0, 0);
                assert_eq!(got.1, 0);
            }
            assert_eq!(got, expected);
            expected.1 += 1;
        }
        assert_eq!(locate(PAGE_IDS_MAX - 1).0, SEGMENTS - 1);
    }

    #[test]
    fn growth_keeps_entries_in_place() {
        let t = PageTable::new(10);
        let before: *const Entry = &t[9];
        assert!(t.get(10).is_none());
        t.grow_to(BASE_ENTRIES * 5 + 3);
        assert_eq!(t.len(), BASE_ENTRIES * 5 + 3);
        assert!(std::ptr::eq(before, &t[9]), "an entry moved");
        assert!(t.get(BASE_ENTRIES * 5 + 2).is_some());
        assert!(t.get(BASE_ENTRIES * 5 + 3).is_none());
        t.grow_to(5);
        assert_eq!(t.len(), BASE_ENTRIES * 5 + 3, "never shrinks");
    }
}
