//! A page-table entry is the page's optimistic version latch (LeanStore's and vmcache's hybrid
//! latch, kept beside the page-table slot so a lookup misses once for both): one 64-bit word
//! holding the frame that caches the page and a version whose low bit says a writer is changing
//! the page.
//!
//! ```text
//!  bits 0..28   frame index (FRAME_NONE: not cached)
//!  bit  28      locked: the frame's bytes are being changed (or loaded)
//!  bits 29..64  version, bumped by every lock, unlock, map and unmap
//! ```
//!
//! Readers ([`Entry::optimistic`]) take no latch and write nothing: they read the word, read the
//! page bytes, and [`Entry::validate`] that the word is unchanged before they use anything they
//! read (a seqlock). Writers hold the frame's exclusive `RwLock` first, so the entry has one
//! writer at a time; those who change the mapping of an uncached page hold the pool's miss mutex.
//! The word never returns to a value it had (the version only grows, 35 bits: a reader would have
//! to stall across 2^34 changes of one page to be fooled), so a reader that validates saw bytes
//! no writer touched meanwhile.
#[cfg(loom)]
use loom::sync::atomic::{fence, AtomicU64, Ordering};
#[cfg(not(loom))]
use std::sync::atomic::{fence, AtomicU64, Ordering};

/// Bits of the frame index: pools of up to 2^28 - 1 frames (1 TiB of 4 KiB pages).
const FRAME_BITS: u32 = 28;
const FRAME_MASK: u64 = (1 << FRAME_BITS) - 1;
/// The frame field of a page that is not cached.
pub(super) const FRAME_NONE: u32 = FRAME_MASK as u32;
/// The lowest version bit: set while a writer holds the entry locked.
pub(super) const LOCKED: u64 = 1 << FRAME_BITS;
const _: () = assert!(LOCKED > FRAME_MASK && LOCKED & FRAME_MASK == 0);

/// What an optimistic reader finds in an entry.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Probe {
    /// Cached in `frame`, no writer: read its bytes, then validate `seen`.
    Cached { frame: u32, seen: u64 },
    /// A writer changes or loads the page now.
    Locked,
    /// Not cached.
    Missing,
}

#[derive(Debug)]
pub(super) struct Entry(AtomicU64);

pub(super) fn frame_of(word: u64) -> u32 {
    // Every word an entry holds keeps this: `map_locked` locks only as it maps, and `unmap`
    // leaves the word unlocked. A locked word without a frame has no holder to unlock it.
    debug_assert!(word & LOCKED == 0 || word & FRAME_MASK != FRAME_MASK, "word {word:#x}");
    (word & FRAME_MASK) as u32
}

impl Entry {
    pub fn new() -> Entry {
        let e = Entry(AtomicU64::new(FRAME_MASK));
        // A page table's fresh entries are pages not cached: a different first word would
        // send lookups to frame bytes nobody loaded.
        debug_assert_eq!(e.optimistic(), Probe::Missing);
        e
    }

    /// The frame caching the page, for latching paths (they check the frame's page id after
    /// latching: a hint, not a promise).
    pub fn frame(&self) -> Option<u32> {
        let word = self.0.load(Ordering::Acquire);
        // As in `frame_of`: a word without a frame is never locked.
        debug_assert!(word & LOCKED == 0 || word & FRAME_MASK != FRAME_MASK, "word {word:#x}");
        let f = frame_of(word);
        (f != FRAME_NONE).then_some(f)
    }

    /// Starts an optimistic read.
    pub fn optimistic(&self) -> Probe {
        let word = self.0.load(Ordering::Acquire);
        let frame = frame_of(word);
        // The version bits above the lock bit only grow; readers take a locked word for a
        // writer at work, so no other bit may stand for it.
        debug_assert!(word & LOCKED == 0 || frame != FRAME_NONE, "locked unmapped word {word:#x}");
        if word & LOCKED != 0 {
            Probe::Locked
        } else if frame == FRAME_NONE {
            Probe::Missing
        } else {
            Probe::Cached { frame, seen: word }
        }
    }

    /// Whether no writer touched the page since `seen` was read: everything read in between
    /// is a consistent page state. The fence orders those reads before the check.
    pub fn validate(&self, seen: u64) -> bool {
        // `seen` is what `optimistic` found cached and unlocked.
        debug_assert!(seen & LOCKED == 0 && frame_of(seen) != FRAME_NONE, "word {seen:#x}");
        fence(Ordering::Acquire);
        self.0.load(Ordering::Relaxed) == seen
    }

    /// Locks the entry of a cached page before its bytes change. The caller holds `frame`'s
    /// exclusive latch and the entry names that frame.
    pub fn lock(&self, frame: u32) {
        let old = self.0.fetch_add(LOCKED, Ordering::Relaxed);
        // The version's odd value is visible before any byte the writer changes after this.
        fence(Ordering::Release);
        assert_eq!(frame_of(old), frame, "locking the entry of another frame");
        assert_eq!(old & LOCKED, 0, "entry locked twice");
    }

    /// The word the entry will hold once its holder unlocks it (the holder has it locked).
    pub fn word_after_unlock(&self) -> u64 {
        let word = self.0.load(Ordering::Acquire);
        assert_ne!(word & LOCKED, 0, "the entry is not locked");
        word.wrapping_add(LOCKED)
    }

    /// Whether the entry holds `word`: no writer locked it since (caller holds the frame).
    pub fn holds(&self, word: u64) -> bool {
        // `word` is one `word_after_unlock` gave: unlocked, naming a frame.
        debug_assert!(word & LOCKED == 0 && frame_of(word) != FRAME_NONE, "word {word:#x}");
        self.0.load(Ordering::Acquire) == word
    }

    /// Ends a change begun by [`Entry::lock`] or [`Entry::map_locked`].
    pub fn unlock(&self) {
        let old = self.0.fetch_add(LOCKED, Ordering::Release);
        debug_assert_ne!(old & LOCKED, 0, "unlocking an unlocked entry");
        debug_assert_ne!(frame_of(old), FRAME_NONE, "unlocking an unmapped entry");
    }

    /// Maps an uncached page to `frame`, locked (its bytes are about to be loaded or formatted).
    /// The caller holds the miss mutex and `frame`'s exclusive latch.
    pub fn map_locked(&self, frame: u32) {
        assert!(frame < FRAME_NONE);
        let old = self.0.load(Ordering::Relaxed);
        assert!(frame_of(old) == FRAME_NONE && old & LOCKED == 0, "mapping a mapped entry");
        self.0
            .store((old & !FRAME_MASK).wrapping_add(LOCKED) | u64::from(frame), Ordering::Relaxed);
        fence(Ordering::Release);
    }

    /// Unmaps a page from `frame` (locked or not): readers holding the old word fail to validate.
    pub fn unmap(&self, frame: u32) {
        let old = self.0.load(Ordering::Relaxed);
        assert_eq!(frame_of(old), frame, "unmapping the entry of another frame");
        // To the next unlocked version: past `old`, so a stale reader's word never comes back.
        let step = if old & LOCKED != 0 { LOCKED } else { 2 * LOCKED };
        let version = (old & !FRAME_MASK).wrapping_add(step);
        self.0.store(version | FRAME_MASK, Ordering::Release);
        // As in `lock`: the new word is visible before whatever the frame receives next (loom
        // found a reader validating the next page's bytes without this fence).
        fence(Ordering::Release);
        debug_assert_eq!(version & LOCKED, 0);
    }
}

/// Pools larger than this many frames are refused (the entry's frame field is 28 bits).
pub(super) const FRAMES_MAX: u64 = FRAME_NONE as u64;

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    #[test]
    fn versions_never_repeat_across_lock_unmap_and_map() {
        let e = Entry::new();
        assert_eq!(e.optimistic(), Probe::Missing);
        let mut seen_words = std::collections::HashSet::new();
        for round in 0..100u32 {
            let f = round % 7;
            e.map_locked(f);
            assert_eq!(e.optimistic(), Probe::Locked);
            e.unlock();
            let Probe::Cached { frame, seen } = e.optimistic() else { panic!("not cached") };
            assert_eq!(frame, f);
            assert!(seen_words.insert(seen), "word {seen:#x} came back");
            e.lock(f);
            assert!(!e.validate(seen));
            e.unlock();
            let Probe::Cached { seen: after, .. } = e.optimistic() else { panic!("not cached") };
            assert!(seen_words.insert(after));
            assert!(e.validate(after));
            e.unmap(f);
            assert!(!e.validate(after));
            assert_eq!(e.frame(), None);
        }
    }

    #[test]
    fn unmap_of_a_locked_entry_unlocks_it() {
        let e = Entry::new();
        e.map_locked(3);
        e.unmap(3);
        assert_eq!(e.optimistic(), Probe::Missing);
        e.map_locked(4);
        e.unlock();
        assert_eq!(e.frame(), Some(4));
    }
}

/// Model-checked (`RUSTFLAGS="--cfg loom" cargo test -p wafer --release --lib latch::loom`):
/// every interleaving, and every value a relaxed load may return, of a writer changing a page of
/// two words under the latch and a reader validating what it read.
#[cfg(all(test, loom))]
mod loom_tests {
    use super::*;
    use loom::sync::atomic::AtomicU64 as Word;
    use loom::sync::Arc;

    /// A page of two words that a writer keeps equal: a reader that validates saw them equal.
    struct Page {
        entry: Entry,
        words: [Word; 2],
    }

    fn read(p: &Page) -> Option<(u64, u64)> {
        let Probe::Cached { seen, .. } = p.entry.optimistic() else { return None };
        let a = p.words[0].load(Ordering::Relaxed);
        let b = p.words[1].load(Ordering::Relaxed);
        p.entry.validate(seen).then_some((a, b))
    }

    #[test]
    fn loom_a_validated_read_never_sees_half_a_change() {
        loom::model(|| {
            let p = Arc::new(Page { entry: Entry::new(), words: [Word::new(0), Word::new(0)] });
            p.entry.map_locked(1);
            p.entry.unlock();
            let w = p.clone();
            let writer = loom::thread::spawn(move || {
                for v in 1..=2 {
                    w.entry.lock(1);
                    w.words[0].store(v, Ordering::Relaxed);
                    w.words[1].store(v, Ordering::Relaxed);
                    w.entry.unlock();
                }
            });
            if let Some((a, b)) = read(&p) {
                assert_eq!(a, b, "validated a torn read");
            }
            writer.join().unwrap();
        });
    }

    #[test]
    fn loom_a_reader_of_an_evicted_page_fails_to_validate() {
        loom::model(|| {
            let p = Arc::new(Page { entry: Entry::new(), words: [Word::new(7), Word::new(7)] });
            p.entry.map_locked(1);
            p.entry.unlock();
            let w = p.clone();
            // Eviction, then the frame's bytes reused by another page before this one returns.
            let evictor = loom::thread::spawn(move || {
                w.entry.unmap(1);
                w.words[0].store(9, Ordering::Relaxed);
                w.words[1].store(9, Ordering::Relaxed);
                w.entry.map_locked(1);
                w.words[0].store(7, Ordering::Relaxed);
                w.words[1].store(7, Ordering::Relaxed);
                w.entry.unlock();
            });
            if let Some((a, b)) = read(&p) {
                assert_eq!((a, b), (7, 7), "validated bytes of another page");
            }
            evictor.join().unwrap();
        });
    }
}
