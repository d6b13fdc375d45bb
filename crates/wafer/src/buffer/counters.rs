//! Buffer pool counters. Hits are counted on every page access, so they are sharded by thread
//! to keep readers on different cores from bouncing one cache line.
use std::sync::atomic::{AtomicU64, Ordering};

/// The background write-back thread's name (`cleaner.rs`), which its counters check.
pub(super) const CLEANER_THREAD_NAME: &str = "wafer-write-back";

const SHARDS: usize = 16;

#[derive(Debug, Default)]
#[repr(align(64))]
struct Padded(AtomicU64);

#[derive(Debug, Default)]
pub(super) struct PoolCounters {
    hits: [Padded; SHARDS],
    misses: AtomicU64,
    page_writes: AtomicU64,
    write_calls: AtomicU64,
    evictions: AtomicU64,
    reserve_writes: AtomicU64,
    background_batches: AtomicU64,
}

#[derive(Debug, Clone, Copy, PartialEq, Default, serde::Serialize)]
pub struct PoolStats {
    pub frames: usize,
    pub hits: u64,
    /// Misses = page reads from the store.
    pub misses: u64,
    /// Pages written back (eviction and flushes).
    pub page_writes: u64,
    /// `PageStore::write_batch` calls; page_writes / write_calls = mean batch size.
    pub write_calls: u64,
    pub evictions: u64,
    /// Frames holding a dirty page now.
    pub dirty_frames: usize,
    /// Dirty pages an eviction wrote back (and kept cached) because clean-or-free frames were
    /// below the reserve GC reads into (included in `page_writes`).
    pub reserve_writes: u64,
    /// Eviction batches the background write-back thread ran (`cleaner.rs`); the others ran
    /// in a foreground miss.
    pub background_batches: u64,
}

impl PoolStats {
    pub fn hit_ratio(&self) -> f64 {
        // As `PoolCounters::snapshot` builds it: the dirty frames are some of the frames.
        debug_assert!(self.dirty_frames <= self.frames, "{self:?}");
        let total = self.hits + self.misses;
        if total == 0 {
            1.0
        } else {
            self.hits as f64 / total as f64
        }
    }
}

impl PoolCounters {
    pub fn hits(&self, n: u64) {
        use std::cell::Cell;
        use std::sync::atomic::AtomicUsize;
        static NEXT: AtomicUsize = AtomicUsize::new(0);
        thread_local!(static SHARD: Cell<usize> = const { Cell::new(usize::MAX) });
        // A lookup that counts no page is one that read nothing: not a hit.
        debug_assert!(n > 0, "a hit of no pages");
        let shard = SHARD.with(|s| {
            if s.get() == usize::MAX {
                s.set(NEXT.fetch_add(1, Ordering::Relaxed) % SHARDS);
            }
            s.get()
        });
        self.hits[shard].0.fetch_add(n, Ordering::Relaxed);
    }
    pub fn miss(&self) {
        let before = self.misses.fetch_add(1, Ordering::Relaxed);
        // `hit_ratio` divides by hits + misses: a wrapped count would report a cold pool warm.
        debug_assert_ne!(before, u64::MAX, "the miss count wrapped");
    }
    pub fn written(&self, pages: u64) {
        debug_assert!(pages > 0, "a write call of no pages");
        self.page_writes.fetch_add(pages, Ordering::Relaxed);
        self.write_calls.fetch_add(1, Ordering::Relaxed);
    }
    pub fn background_batch(&self) {
        // Foreground evictions count as misses' work; only the thread's batches count here.
        debug_assert_eq!(std::thread::current().name(), Some(CLEANER_THREAD_NAME));
        self.background_batches.fetch_add(1, Ordering::Relaxed);
    }
    pub fn evicted(&self, frames: u64) {
        // A batch evicts frames of the pool, whose count the page table's frame field bounds.
        debug_assert!(frames <= super::latch::FRAMES_MAX, "{frames} frames evicted at once");
        self.evictions.fetch_add(frames, Ordering::Relaxed);
    }
    pub fn reserve_cleaned(&self, pages: u64) {
        // As in `evicted`: the pages cleaned are frames of one pool.
        debug_assert!(pages <= super::latch::FRAMES_MAX, "{pages} pages cleaned at once");
        self.reserve_writes.fetch_add(pages, Ordering::Relaxed);
    }
    pub fn snapshot(&self, frames: usize, dirty_frames: usize) -> PoolStats {
        debug_assert!(dirty_frames <= frames, "{dirty_frames} dirty of {frames} frames");
        PoolStats {
            frames,
            hits: self.hits.iter().map(|h| h.0.load(Ordering::Relaxed)).sum(),
            misses: self.misses.load(Ordering::Relaxed),
            page_writes: self.page_writes.load(Ordering::Relaxed),
            write_calls: self.write_calls.load(Ordering::Relaxed),
            evictions: self.evictions.load(Ordering::Relaxed),
            dirty_frames,
            reserve_writes: self.reserve_writes.load(Ordering::Relaxed),
            background_batches: self.background_batches.load(Ordering::Relaxed),
        }
    }
}
