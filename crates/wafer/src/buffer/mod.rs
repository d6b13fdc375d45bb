//! The buffer pool: 4 KiB frames, a direct page table (page id -> frame), clock eviction, dirty
//! pages written back in batches through one [`PageStore::write_batch`] call.
//!
//! Latching: each frame is a `RwLock` (shared/exclusive), so readers of a page never block each
//! other. A page-table entry is only a hint: after latching a frame the caller checks that the
//! frame still holds the page it wanted (eviction may have reused it) and restarts otherwise.
//! Frame assignment is serialized by one mutex; device reads and eviction write-backs happen
//! outside it (a loading frame is published latched and waiters block on its latch; victims stay
//! latched while they are written). The evictor only ever `try_write`s frames, so a thread
//! holding frame latches while it waits for that mutex cannot deadlock with it.
//! This is the pessimistic design the brief allows instead of optimistic version latches.
//!
//! The pool is also DB GC's page cache (`gc.rs`) and keeps a reserve of clean frames for it
//! (`reserve.rs`): docs/design.md §9, GC.
mod cleaner;
mod counters;
pub mod doublewrite;
mod gc;
mod reserve;

pub use crate::pagestore::{InPlaceStore, PageStore, StoreRecovery};
pub use cleaner::CleanerHandle;
pub use counters::PoolStats;
pub use doublewrite::DoublewriteStore;
pub use reserve::CLEAN_RESERVE_PERCENT_MAX;

use crate::device::WritePurpose;
use crate::page::{self, PageBuf, PageId, PageLogger, PAGE_SIZE};
use crate::{Error, Result};
use counters::PoolCounters;
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Mutex, MutexGuard, RwLock, RwLockReadGuard, RwLockWriteGuard, TryLockError};

const NO_FRAME: u32 = u32::MAX;
const NO_PAGE: PageId = PageId::MAX;
/// Restarts of one fetch before giving up; each restart means eviction raced us or every frame
/// was latched, both transient unless the pool is far too small for the thread count.
const FETCH_ATTEMPTS_MAX: usize = 100_000;

/// A page buffer aligned to 4 KiB, so O_DIRECT devices can use it without a bounce copy.
#[derive(Debug)]
#[repr(C, align(4096))]
struct AlignedPage(PageBuf);
const _: () = assert!(std::mem::size_of::<AlignedPage>() == PAGE_SIZE);
const _: () = assert!(std::mem::align_of::<AlignedPage>() == PAGE_SIZE);
const _: () = assert!(std::mem::size_of::<Frame>() == 64);

#[derive(Debug)]
struct FrameData {
    pid: PageId,
    dirty: bool,
    bytes: Box<AlignedPage>,
}

/// One cache line per frame: the latch word, the page id checked after latching, the pointer
/// to the page bytes and the clock bit are read together on every hit, and neighbouring frames
/// never share (and bounce) a line between threads latching them.
#[derive(Debug)]
#[repr(align(64))]
struct Frame {
    latch: RwLock<FrameData>,
    /// Clock reference bit: set on access, cleared by the sweeping hand.
    referenced: AtomicBool,
}

#[derive(Debug)]
struct MissState {
    free: Vec<u32>,
    hand: usize,
}

#[derive(Debug)]
pub struct BufferPool {
    store: std::sync::Arc<dyn PageStore>,
    frames: Box<[Frame]>,
    table: Box<[AtomicU32]>,
    miss: Mutex<MissState>,
    batch_pages: usize,
    /// Logical write-back clock stamped into each page's write history.
    write_clock: AtomicU64,
    counters: PoolCounters,
    poisoned: AtomicBool,
    /// Asked to make the log durable before pages go out (write-ahead rule).
    logger: std::sync::Arc<dyn PageLogger>,
    /// Frames holding a dirty page: counted at each clean -> dirty and dirty -> clean change,
    /// so `frames - dirty_frames` is the clean-or-free count the reserve watches.
    dirty_frames: AtomicUsize,
    /// Clean-or-free frames an eviction keeps (it cleans more when fewer remain): the frames
    /// GC may load pages into without writing anything back. 0: no reserve.
    reserve_frames: usize,
    /// Wakes the background write-back thread, when one runs (`cleaner.rs`).
    cleaner: cleaner::Signal,
}

/// A page latched shared.
#[derive(Debug)]
pub struct PageRef<'a> {
    g: RwLockReadGuard<'a, FrameData>,
}
/// A page latched exclusive. Any mutable access marks it dirty.
#[derive(Debug)]
pub struct PageMut<'a> {
    g: RwLockWriteGuard<'a, FrameData>,
    dirty_frames: &'a AtomicUsize,
}

impl PageRef<'_> {
    pub fn pid(&self) -> PageId {
        self.g.pid
    }
    pub fn bytes(&self) -> &PageBuf {
        &self.g.bytes.0
    }
}
impl PageMut<'_> {
    pub fn pid(&self) -> PageId {
        self.g.pid
    }
    pub fn bytes(&self) -> &PageBuf {
        &self.g.bytes.0
    }
    pub fn bytes_mut(&mut self) -> &mut PageBuf {
        if !self.g.dirty {
            self.g.dirty = true;
            self.dirty_frames.fetch_add(1, Ordering::Relaxed);
        }
        &mut self.g.bytes.0
    }
}

fn read_latch(l: &RwLock<FrameData>) -> RwLockReadGuard<'_, FrameData> {
    l.read().unwrap_or_else(|e| e.into_inner())
}
fn write_latch(l: &RwLock<FrameData>) -> RwLockWriteGuard<'_, FrameData> {
    l.write().unwrap_or_else(|e| e.into_inner())
}
fn try_write_latch(l: &RwLock<FrameData>) -> Option<RwLockWriteGuard<'_, FrameData>> {
    match l.try_write() {
        Ok(g) => Some(g),
        Err(TryLockError::Poisoned(e)) => Some(e.into_inner()),
        Err(TryLockError::WouldBlock) => None,
    }
}
fn try_read_latch(l: &RwLock<FrameData>) -> Option<RwLockReadGuard<'_, FrameData>> {
    match l.try_read() {
        Ok(g) => Some(g),
        Err(TryLockError::Poisoned(e)) => Some(e.into_inner()),
        Err(TryLockError::WouldBlock) => None,
    }
}

impl BufferPool {
    pub fn new(
        store: std::sync::Arc<dyn PageStore>,
        capacity_bytes: u64,
        batch_pages: usize,
        write_clock: u64,
        logger: std::sync::Arc<dyn PageLogger>,
    ) -> Result<BufferPool> {
        let frame_count = capacity_bytes / PAGE_SIZE as u64;
        if frame_count < 8 || frame_count >= NO_FRAME as u64 {
            return Err(Error::InvalidOptions(format!(
                "buffer pool of {capacity_bytes} bytes: need 8 to 2^32-1 frames of {PAGE_SIZE}"
            )));
        }
        if batch_pages == 0 {
            return Err(Error::InvalidOptions("eviction batch of 0 pages".into()));
        }
        let page_capacity = store.page_capacity();
        let table_len = usize::try_from(page_capacity)
            .map_err(|_| Error::InvalidOptions(format!("{page_capacity} pages")))?;
        let frames: Box<[Frame]> = (0..frame_count)
            .map(|_| Frame {
                latch: RwLock::new(FrameData {
                    pid: NO_PAGE,
                    dirty: false,
                    bytes: Box::new(AlignedPage([0u8; PAGE_SIZE])),
                }),
                referenced: AtomicBool::new(false),
            })
            .collect();
        let table: Box<[AtomicU32]> = (0..table_len).map(|_| AtomicU32::new(NO_FRAME)).collect();
        // Pop order hands out low frames first (only cosmetic).
        let free: Vec<u32> = (0..frame_count as u32).rev().collect();
        Ok(BufferPool {
            store,
            frames,
            table,
            miss: Mutex::new(MissState { free, hand: 0 }),
            batch_pages,
            write_clock: AtomicU64::new(write_clock),
            counters: PoolCounters::default(),
            poisoned: AtomicBool::new(false),
            logger,
            dirty_frames: AtomicUsize::new(0),
            reserve_frames: 0,
            cleaner: cleaner::Signal::default(),
        })
    }

    /// Keeps `percent` of the frames (rounded up) clean or free for GC reads (`reserve.rs`).
    pub fn with_clean_reserve_percent(mut self, percent: u32) -> Result<BufferPool> {
        if percent > CLEAN_RESERVE_PERCENT_MAX {
            return Err(Error::InvalidOptions(format!(
                "clean frame reserve of {percent}% (at most {}%)",
                CLEAN_RESERVE_PERCENT_MAX
            )));
        }
        self.reserve_frames = (self.frames.len() * percent as usize).div_ceil(100);
        assert!(self.reserve_frames <= self.frames.len() / 2);
        Ok(self)
    }

    pub fn page_capacity(&self) -> u64 {
        self.table.len() as u64
    }
    pub fn frame_count(&self) -> usize {
        self.frames.len()
    }
    pub fn write_clock(&self) -> u64 {
        self.write_clock.load(Ordering::Relaxed)
    }
    /// Recovery: the clock continues at least from `clock` (the last commit's).
    pub fn raise_write_clock(&self, clock: u64) {
        self.write_clock.fetch_max(clock, Ordering::Relaxed);
    }
    pub fn is_poisoned(&self) -> bool {
        self.poisoned.load(Ordering::Relaxed)
    }
    pub fn store(&self) -> &std::sync::Arc<dyn PageStore> {
        &self.store
    }
    pub fn stats(&self) -> PoolStats {
        self.counters.snapshot(self.frames.len(), self.dirty_frames.load(Ordering::Relaxed))
    }

    fn check_pid(&self, pid: PageId) -> Result<usize> {
        match usize::try_from(pid) {
            Ok(i) if i < self.table.len() => Ok(i),
            _ => Err(Error::Corrupt(format!(
                "page id {pid} is beyond the device's {} pages",
                self.table.len()
            ))),
        }
    }

    fn touch(&self, frame: &Frame) {
        // Load first: a store on every hit would bounce the cache line between readers.
        if !frame.referenced.load(Ordering::Relaxed) {
            frame.referenced.store(true, Ordering::Relaxed);
        }
    }

    /// Latches page `pid` shared, loading it on a miss.
    pub fn read(&self, pid: PageId) -> Result<PageRef<'_>> {
        self.fix(pid, read_latch).map(|g| PageRef { g })
    }

    /// Latches page `pid` shared if it is in the pool; Ok(None) without any device read when it
    /// is not. A frame being loaded by another thread counts as cached (the latch waits for
    /// that read). Writers under the WAL's writer mutex use it so a miss costs them no read
    /// there (they read outside the mutex and retry).
    pub fn read_cached(&self, pid: PageId) -> Result<Option<PageRef<'_>>> {
        let idx = self.check_pid(pid)?;
        let f = self.table[idx].load(Ordering::Acquire);
        if f == NO_FRAME {
            return Ok(None);
        }
        let frame = &self.frames[f as usize];
        let g = read_latch(&frame.latch);
        if g.pid != pid {
            return Ok(None); // Evicted between the table lookup and the latch.
        }
        self.touch(frame);
        self.counters.hit();
        Ok(Some(PageRef { g }))
    }

    /// Latches page `pid` exclusive, loading it on a miss.
    pub fn write(&self, pid: PageId) -> Result<PageMut<'_>> {
        self.fix(pid, write_latch).map(|g| PageMut { g, dirty_frames: &self.dirty_frames })
    }

    /// Finds page `pid`'s frame (loading it on a miss) and latches it with `latch`: the one
    /// lookup both latch modes share.
    fn fix<'a, G: std::ops::Deref<Target = FrameData>>(
        &'a self,
        pid: PageId,
        latch: fn(&'a RwLock<FrameData>) -> G,
    ) -> Result<G> {
        let idx = self.check_pid(pid)?;
        let mut missed = false;
        for _ in 0..FETCH_ATTEMPTS_MAX {
            let f = self.table[idx].load(Ordering::Acquire);
            if f != NO_FRAME {
                let frame = &self.frames[f as usize];
                let g = latch(&frame.latch);
                if g.pid == pid {
                    self.touch(frame);
                    if !missed {
                        self.counters.hit();
                    }
                    return Ok(g);
                }
                continue; // The frame was reused between the table lookup and the latch.
            }
            missed = true;
            self.miss_load(pid, idx)?;
        }
        Err(self.exhausted(pid))
    }

    fn exhausted(&self, pid: PageId) -> Error {
        Error::PoolExhausted {
            page_id: pid,
            frames: self.frames.len(),
            attempts: FETCH_ATTEMPTS_MAX as u32,
        }
    }

    fn miss_load(&self, pid: PageId, idx: usize) -> Result<()> {
        let st = self.lock_miss();
        if self.table[idx].load(Ordering::Acquire) != NO_FRAME {
            return Ok(()); // Another thread loaded it while we waited.
        }
        let (st, f) = self.take_frame(st)?;
        let Some(f) = f else {
            drop(st);
            std::thread::yield_now();
            return Ok(());
        };
        if self.table[idx].load(Ordering::Acquire) != NO_FRAME {
            // Loaded by another thread while our eviction ran unlocked.
            let mut st = st;
            st.free.push(f);
            return Ok(());
        }
        let frame = &self.frames[f as usize];
        let mut g = write_latch(&frame.latch);
        debug_assert_eq!(g.pid, NO_PAGE);
        // Publish the frame before reading: other threads wanting this page find it and wait on
        // its latch instead of loading it twice, and the read happens outside the miss mutex.
        g.pid = pid;
        g.dirty = false;
        self.table[idx].store(f, Ordering::Release);
        drop(st);
        self.counters.miss();
        let loaded = self.store.read_page(pid, &mut g.bytes.0).and_then(|()| {
            page::verify(&g.bytes.0, pid)
                .map_err(|reason| Error::CorruptPage { page_id: pid, reason })
        });
        if let Err(e) = loaded {
            // Waiters see the pid change and retry (and meet the same error themselves).
            g.pid = NO_PAGE;
            self.table[idx].store(NO_FRAME, Ordering::Release);
            drop(g);
            self.lock_miss().free.push(f);
            return Err(e);
        }
        frame.referenced.store(true, Ordering::Relaxed);
        Ok(())
    }

    /// A frame for a page that was never written (fresh allocation): zeroed, latched exclusive,
    /// no device read.
    ///
    /// The page may be cached clean already: GC loads the valid pages of its victims, and after
    /// a crash without a WAL a page beyond the recovered high water can still be mapped (an
    /// orphan GC keeps copying). Its frame is then reused; a dirty one would be a bug.
    pub fn create(&self, pid: PageId) -> Result<PageMut<'_>> {
        let idx = self.check_pid(pid)?;
        for _ in 0..FETCH_ATTEMPTS_MAX {
            let cached = self.table[idx].load(Ordering::Acquire);
            if cached != NO_FRAME {
                // A blocking latch, without the miss mutex: nobody uses an orphan, so only GC
                // (which waits for no latch, nor for the allocator) or a reader with a stale
                // table entry can hold it.
                let frame = &self.frames[cached as usize];
                let g = write_latch(&frame.latch);
                if g.pid != pid {
                    continue; // Evicted meanwhile.
                }
                assert!(!g.dirty, "create: page {pid} is cached dirty");
                return Ok(self.created(frame, g));
            }
            let st = self.lock_miss();
            let (mut st, f) = self.take_frame(st)?;
            let Some(f) = f else {
                drop(st);
                std::thread::yield_now();
                continue;
            };
            if self.table[idx].load(Ordering::Acquire) != NO_FRAME {
                // GC loaded it while our eviction ran unlocked.
                st.free.push(f);
                continue;
            }
            let frame = &self.frames[f as usize];
            let mut g = write_latch(&frame.latch);
            g.pid = pid;
            self.table[idx].store(f, Ordering::Release);
            return Ok(self.created(frame, g));
        }
        Err(self.exhausted(pid))
    }

    /// Zeroes page `g.pid` (clean) in `frame` and hands it out dirty.
    fn created<'a>(&'a self, frame: &Frame, mut g: RwLockWriteGuard<'a, FrameData>) -> PageMut<'a> {
        debug_assert!(!g.dirty);
        g.bytes.0.fill(0);
        g.dirty = true;
        self.dirty_frames.fetch_add(1, Ordering::Relaxed);
        frame.referenced.store(true, Ordering::Relaxed);
        PageMut { g, dirty_frames: &self.dirty_frames }
    }

    fn lock_miss(&self) -> MutexGuard<'_, MissState> {
        self.miss.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// A free frame, evicting a batch when there is none (and waking the background thread,
    /// if one runs, when few are left).
    fn take_frame<'a>(
        &'a self,
        st: MutexGuard<'a, MissState>,
    ) -> Result<(MutexGuard<'a, MissState>, Option<u32>)> {
        let mut st = if st.free.is_empty() {
            self.cleaner.on_take(0, self.low_frames());
            self.evict_batch(st, WritePurpose::UserEviction)?
        } else {
            st
        };
        let f = st.free.pop();
        self.cleaner.on_take(st.free.len(), self.low_frames());
        Ok((st, f))
    }

    /// Evicts one batch of victims onto the free list. The write-back runs with the miss mutex
    /// released: the victims stay latched, so nobody uses or picks them meanwhile. Returns the
    /// mutex locked again.
    fn evict_batch<'a>(
        &'a self,
        mut st: MutexGuard<'a, MissState>,
        purpose: WritePurpose,
    ) -> Result<MutexGuard<'a, MissState>> {
        let mut victims = self.pick_victims(&mut st);
        let evicted = victims.len();
        // Frames below the reserve are cleaned in the same store call (they stay cached).
        let cleaning = self.pick_to_clean(&st, &victims);
        victims.extend(cleaning);
        drop(st);
        self.write_back(&mut victims, purpose)?;
        self.counters.reserve_cleaned((victims.len() - evicted) as u64);
        // Cleaned frames are released here; the evicted ones are freed below.
        victims.truncate(evicted);
        self.counters.evicted(victims.len() as u64);
        for (_, g) in victims.iter_mut() {
            // Waiters holding a stale table entry see the pid change and retry.
            self.table[g.pid as usize].store(NO_FRAME, Ordering::Release);
            g.pid = NO_PAGE;
            g.dirty = false;
        }
        let mut st = self.lock_miss();
        st.free.extend(victims.iter().map(|(f, _)| *f));
        drop(victims);
        Ok(st)
    }

    /// Clock sweep: up to `batch_pages` unreferenced frames that nobody has latched.
    fn pick_victims(&self, st: &mut MissState) -> Vec<(u32, RwLockWriteGuard<'_, FrameData>)> {
        let n = self.frames.len();
        let want = self.batch_pages.min(n / 4).max(1);
        let mut victims = Vec::with_capacity(want);
        // Dirty pages of a batch still being applied stay put (write-ahead rule, no undo).
        let limit = self.logger.write_back_limit();
        // Two full turns: the first may only clear reference bits.
        for _ in 0..2 * n {
            if victims.len() >= want {
                break;
            }
            let i = st.hand;
            st.hand = (st.hand + 1) % n;
            let frame = &self.frames[i];
            if frame.referenced.swap(false, Ordering::Relaxed) {
                continue;
            }
            if let Some(g) = try_write_latch(&frame.latch) {
                if g.pid != NO_PAGE && !(g.dirty && page::lsn(&g.bytes.0) > limit) {
                    victims.push((i as u32, g));
                }
            }
        }
        victims
    }

    /// Stamps the write history, seals, and writes the dirty pages among `frames` in one batch.
    fn write_back(
        &self,
        frames: &mut [(u32, RwLockWriteGuard<'_, FrameData>)],
        purpose: WritePurpose,
    ) -> Result<()> {
        let mut count = 0u64;
        let mut max_lsn = 0;
        for (_, g) in frames.iter_mut().filter(|(_, g)| g.dirty) {
            max_lsn = max_lsn.max(self.stamp_and_seal(g));
            count += 1;
        }
        if count == 0 {
            return Ok(());
        }
        if let Err(e) = self.logger.make_durable(max_lsn) {
            self.poisoned.store(true, Ordering::Relaxed);
            return Err(e);
        }
        let pages: Vec<(PageId, &PageBuf)> =
            frames.iter().filter(|(_, g)| g.dirty).map(|(_, g)| (g.pid, &g.bytes.0)).collect();
        if let Err(e) = self.store.write_batch(&pages, purpose) {
            // The pages stay cached and dirty; the caller sees the error and the DB refuses
            // writes from now on (state after a failed write is unknown).
            self.poisoned.store(true, Ordering::Relaxed);
            return Err(e);
        }
        self.counters.written(count);
        for (_, g) in frames.iter_mut() {
            g.dirty = false;
        }
        self.dirty_frames.fetch_sub(count as usize, Ordering::Relaxed);
        Ok(())
    }

    /// Stamps the next write-clock tick into a dirty page's write history and seals it for the
    /// store; returns its LSN (what the log must be durable to before it goes out).
    fn stamp_and_seal(&self, g: &mut FrameData) -> page::Lsn {
        let ts = self.write_clock.fetch_add(1, Ordering::Relaxed) + 1;
        page::push_write_history(&mut g.bytes.0, ts);
        page::seal(&mut g.bytes.0);
        page::lsn(&g.bytes.0)
    }

    /// Writes every dirty page back (batches of `batch_pages`); pages stay cached.
    pub fn flush_all(&self, purpose: WritePurpose) -> Result<()> {
        let skipped = self.flush_dirty(purpose)?;
        if skipped > 0 {
            return Err(Error::Corrupt(format!(
                "{skipped} dirty pages hold uncommitted changes and cannot be flushed"
            )));
        }
        Ok(())
    }

    /// Writes back every dirty page the logger allows (`page_lsn <= write_back_limit()`), in
    /// batches; returns how many dirty pages it had to skip (a batch in progress holds them).
    pub fn flush_dirty(&self, purpose: WritePurpose) -> Result<u64> {
        let limit = self.logger.write_back_limit();
        let mut skipped = 0u64;
        let mut batch: Vec<(u32, RwLockWriteGuard<'_, FrameData>)> = Vec::new();
        for (i, frame) in self.frames.iter().enumerate() {
            // Block only while holding nothing, so a flusher never waits in a latch cycle.
            let g = match try_write_latch(&frame.latch) {
                Some(g) => g,
                None => {
                    self.write_back(&mut batch, purpose)?;
                    batch.clear();
                    write_latch(&frame.latch)
                }
            };
            if g.pid != NO_PAGE && g.dirty {
                if page::lsn(&g.bytes.0) > limit {
                    skipped += 1;
                } else {
                    batch.push((i as u32, g));
                }
            }
            if batch.len() >= self.batch_pages {
                self.write_back(&mut batch, purpose)?;
                batch.clear();
            }
        }
        self.write_back(&mut batch, purpose)?;
        Ok(skipped)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::device::{Counted, Device, MemoryDevice};
    use crate::page::{NoopLogger, PageKind, PAGE_SIZE};
    use crate::stats::IoStats;
    use std::sync::Arc;

    fn pool(frames: u64, pages: u64) -> (Arc<Counted<MemoryDevice>>, BufferPool) {
        let stats = Arc::new(IoStats::default());
        let dev = Arc::new(Counted::new(MemoryDevice::new(pages * PAGE_SIZE as u64), stats));
        let store = Arc::new(InPlaceStore::new(dev.clone(), 0));
        (
            dev,
            BufferPool::new(store, frames * PAGE_SIZE as u64, 4, 0, Arc::new(NoopLogger::new(0)))
                .unwrap(),
        )
    }

    #[test]
    fn evicts_in_batches_and_reloads() {
        let (dev, pool) = pool(8, 64);
        for pid in 0..64 {
            let mut g = pool.create(pid).unwrap();
            page::format(g.bytes_mut(), pid, PageKind::Leaf, 1, pid * 10);
        }
        for pid in 0..64 {
            let g = pool.read(pid).unwrap();
            assert_eq!(page::aux(g.bytes()), pid * 10);
            assert_eq!(page::write_history(g.bytes())[3], page::write_history(g.bytes())[3]);
        }
        let s = pool.stats();
        assert!(s.misses > 0 && s.page_writes >= 56, "{s:?}");
        assert!(s.write_calls * 2 <= s.page_writes, "pages must go out in batches: {s:?}");
        let written = dev.stats().snapshot().bytes(WritePurpose::UserEviction);
        assert_eq!(written, s.page_writes * PAGE_SIZE as u64);
    }

    #[test]
    fn corrupt_page_is_reported_with_its_id() {
        let (dev, pool) = pool(8, 64);
        for pid in 0..20 {
            let mut g = pool.create(pid).unwrap();
            page::format(g.bytes_mut(), pid, PageKind::Leaf, 1, 0);
        }
        pool.flush_all(WritePurpose::UserCheckpoint).unwrap();
        drop(pool);
        let mut buf = vec![0u8; PAGE_SIZE];
        dev.read_at(5 * PAGE_SIZE as u64, &mut buf).unwrap();
        buf[1234] ^= 1;
        dev.write_at(5 * PAGE_SIZE as u64, &buf, WritePurpose::Metadata).unwrap();
        let store = Arc::new(InPlaceStore::new(dev, 0));
        let pool = BufferPool::new(store, 8 * PAGE_SIZE as u64, 4, 0, Arc::new(NoopLogger::new(0)))
            .unwrap();
        assert!(pool.read(4).is_ok());
        let r = pool.read(5).map(|g| g.pid());
        match r {
            Err(Error::CorruptPage { page_id: 5, reason }) => assert!(reason.contains("checksum")),
            other => panic!("expected CorruptPage, got {other:?}"),
        }
    }
}
