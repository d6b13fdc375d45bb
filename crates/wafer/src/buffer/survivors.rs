//! GC survivors held in the pool (the artifact's `gc_in_pool`: 000's ZLeanStore reads a
//! victim's valid pages into its buffer pool as dirty pages, and eviction writes them out
//! among the user pages). [`BufferPool::hand_over_survivors`] makes each valid page of a GC
//! chunk a dirty frame:
//!
//! - resident and dirty: nothing to do, its write-back moves it out of the victim;
//! - resident and clean: marked dirty, a survivor (`FrameMeta::survivor`);
//! - not resident: read from the device (one batch) and loaded dirty into a free or clean
//!   frame as `gc_load` loads GC's prefetches (just ahead of the clock hand, unreferenced), so
//!   the next evictions write it out;
//! - latched by someone, a stale table entry, a blob page, no frame to claim, or the bound
//!   below reached: not taken; GC copies it directly, as without the option.
//!
//! Bound: survivor frames at most [`SURVIVOR_FRAMES_PERCENT`] of the pool, so user pages keep
//! the rest and a pool too small for a victim's survivors makes GC copy them instead of
//! waiting for room. Locks as in `gc.rs`: frames are only `try_` latched, the miss mutex only
//! as `gc_load` takes it. A survivor is written back unchanged (no write-history stamp, no log
//! force: it is on the device already) and counted as a GC copy
//! (`PageStore::write_batch_with_survivors`); a change before then makes it an ordinary dirty
//! page, whose write-back is the user's and moves it all the same.
use super::BufferPool;
use crate::device::AlignedBuf;
use crate::page::{self, PageBuf, PageId, PageKind, PAGE_SIZE};
use crate::pagestore::{GcIo, GcPage};
use crate::{Error, Result};
use std::sync::atomic::Ordering;

/// Frames that may hold GC survivors at once, as a percent of the pool.
pub const SURVIVOR_FRAMES_PERCENT: usize = 25;

/// What a resident page's hand-over found.
enum Resident {
    /// The pool holds the page dirty now; `added`: it became a survivor here.
    Taken { added: bool },
    /// Latched by someone, stale, or no room left: copied directly.
    Busy,
    /// Not in the pool.
    Missing,
}

impl BufferPool {
    /// The pages of `pages` the pool holds dirty after this (by index); see the module comment.
    pub(super) fn hand_over_survivors(
        &self,
        pages: &[GcPage],
        io: &mut dyn GcIo,
    ) -> Result<Vec<bool>> {
        assert!(!pages.is_empty());
        let bound = self.frames.len() * SURVIVOR_FRAMES_PERCENT / 100;
        let mut room = bound.saturating_sub(self.survivor_frames.load(Ordering::Relaxed));
        let mut taken = vec![false; pages.len()];
        let mut missing: Vec<usize> = Vec::new();
        for (i, p) in pages.iter().enumerate() {
            match self.hand_over_resident(p.pid, room > 0)? {
                Resident::Taken { added } => {
                    taken[i] = true;
                    room -= usize::from(added);
                }
                Resident::Busy => {}
                Resident::Missing => missing.push(i),
            }
        }
        // Reads only for what the bound still takes: the rest GC reads for its copy.
        missing.truncate(room);
        if !missing.is_empty() {
            self.load_survivors(pages, &missing, io, &mut taken)?;
        }
        assert_eq!(taken.len(), pages.len());
        Ok(taken)
    }

    /// Page `pid` if resident: taken when dirty, made a survivor when clean and `may_add`.
    fn hand_over_resident(&self, pid: PageId, may_add: bool) -> Result<Resident> {
        let idx = self.check_pid(pid)?;
        let Some(f) = self.table[idx].frame() else { return Ok(Resident::Missing) };
        let Some(mut g) = self.try_latch_exclusive(f) else { return Ok(Resident::Busy) };
        if g.pid() != pid {
            return Ok(Resident::Busy);
        }
        if g.g.dirty {
            // Its own write-back (or a flush already writing it) moves it out of the victim.
            return Ok(Resident::Taken { added: false });
        }
        if !may_add {
            return Ok(Resident::Busy);
        }
        g.mark_survivor();
        assert!(g.g.dirty && g.pid() == pid);
        Ok(Resident::Taken { added: true })
    }

    /// Reads `pages[missing]` in one batch and loads each into a frame as a survivor; marks
    /// the ones loaded in `taken`.
    fn load_survivors(
        &self,
        pages: &[GcPage],
        missing: &[usize],
        io: &mut dyn GcIo,
        taken: &mut [bool],
    ) -> Result<()> {
        let wanted: Vec<GcPage> = missing.iter().map(|&i| pages[i]).collect();
        let mut buf = AlignedBuf::zeroed(wanted.len() * PAGE_SIZE);
        {
            let mut outs: Vec<&mut PageBuf> = Vec::with_capacity(wanted.len());
            for b in buf.chunks_mut(PAGE_SIZE) {
                outs.push(
                    b.try_into()
                        .map_err(|_| crate::Corruption::BufferNotPageSized { buffer: "GC" })?,
                );
            }
            io.read(&wanted, &mut outs)?;
        }
        // Frames ahead of the hand already given to this chunk's loads.
        let mut ahead = 0usize;
        let mut loaded = 0usize;
        for (&i, bytes) in missing.iter().zip(buf.chunks(PAGE_SIZE)) {
            let b: &PageBuf = bytes
                .try_into()
                .map_err(|_| crate::Corruption::BufferNotPageSized { buffer: "GC" })?;
            let pid = pages[i].pid;
            // A corrupt page must not enter the pool to be written out under a new location.
            let kind = page::verify(b, pid)
                .map_err(|reason| Error::CorruptPage { page_id: pid, reason })?;
            // Blob pages never live in the pool (their ids are rewritten around it).
            if kind != PageKind::Blob && self.gc_load_as(pid, b, &mut ahead, true) {
                taken[i] = true;
                loaded += 1;
            }
        }
        assert!(loaded <= missing.len());
        Ok(())
    }
}

#[cfg(test)]
impl BufferPool {
    /// [`BufferPool::hand_over_survivors`], unwrapped, for tests.
    fn gc_hand_over_for_test(&self, pages: &[GcPage], io: &mut dyn GcIo) -> Vec<bool> {
        let taken = self.hand_over_survivors(pages, io);
        assert!(taken.is_ok(), "{taken:?}");
        taken.unwrap_or_default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::buffer::{InPlaceStore, PageStore};
    use crate::device::{MemoryDevice, WritePurpose};
    use crate::page::NoopLogger;
    use crate::pagestore::LogicalBytes;
    use std::sync::{Arc, Mutex};

    /// An in-place store that records, per page written, whether it came as a GC survivor.
    #[derive(Debug)]
    struct Recording {
        inner: InPlaceStore,
        seen: Mutex<Vec<(PageId, bool)>>,
    }

    impl PageStore for Recording {
        fn page_capacity(&self) -> u64 {
            self.inner.page_capacity()
        }
        fn read_page(&self, pid: PageId, buf: &mut PageBuf) -> Result<()> {
            self.inner.read_page(pid, buf)
        }
        fn write_batch(&self, pages: &[(PageId, &PageBuf)], purpose: WritePurpose) -> Result<()> {
            self.seen.lock().unwrap().extend(pages.iter().map(|(p, _)| (*p, false)));
            self.inner.write_batch(pages, purpose)
        }
        fn write_batch_with_survivors(
            &self,
            pages: &[(PageId, &PageBuf)],
            purpose: WritePurpose,
            survivors: &[bool],
        ) -> Result<()> {
            let seen = pages.iter().zip(survivors).map(|((p, _), s)| (*p, *s));
            self.seen.lock().unwrap().extend(seen);
            self.inner.write_batch(pages, purpose)
        }
        fn sync(&self) -> Result<()> {
            self.inner.sync()
        }
        fn logical_bytes(&self) -> LogicalBytes {
            self.inner.logical_bytes()
        }
    }

    /// GC's reads from the store; a hand-over never appends.
    struct StoreIo<'a>(&'a Recording);

    impl GcIo for StoreIo<'_> {
        fn read(&mut self, pages: &[GcPage], out: &mut [&mut PageBuf]) -> Result<()> {
            for (p, o) in pages.iter().zip(out.iter_mut()) {
                self.0.read_page(p.pid, o)?;
            }
            Ok(())
        }
        fn append(&mut self, _: &[(PageId, &PageBuf)], _: &[bool]) -> Result<bool> {
            panic!("a hand-over appended")
        }
    }

    /// A pool of 8 frames over a recording store, with pages 0..16 created and written back
    /// (so some are resident and clean, the others missing).
    fn pool_of_16_written_pages() -> (Arc<Recording>, BufferPool) {
        let dev = Arc::new(MemoryDevice::new(32 * PAGE_SIZE as u64));
        let inner = InPlaceStore::new(dev, 0);
        let store = Arc::new(Recording { inner, seen: Mutex::new(Vec::new()) });
        let logger = Arc::new(NoopLogger::new(0));
        let pool = BufferPool::new(store.clone(), 8 * PAGE_SIZE as u64, 4, 0, logger).unwrap();
        for pid in 0..16 {
            let mut g = pool.create(pid).unwrap();
            page::format(g.bytes_mut(), pid, PageKind::Leaf, 1, pid);
        }
        pool.flush_all(WritePurpose::UserCheckpoint).unwrap();
        (store, pool)
    }

    /// Resident clean and dirty pages are taken, within the bound of 2 survivor frames in a
    /// pool of 8 (a missing page beyond it is not); a survivor goes out unchanged (its write
    /// history not stamped) and marked as one, the dirty page as an ordinary write-back.
    #[test]
    fn survivors_become_dirty_frames_within_the_bound_and_go_out_unchanged() {
        let (store, pool) = pool_of_16_written_pages();
        let resident: Vec<PageId> =
            (0..16).filter(|p| pool.table[*p as usize].frame().is_some()).collect();
        let missing = (0..16).find(|p| !resident.contains(p)).unwrap();
        let (clean, dirty, spare) = (resident[0], resident[1], resident[2]);
        page::set_aux(pool.write(dirty).unwrap().bytes_mut(), 99);
        let history = |pid| page::write_history(pool.read(pid).unwrap().bytes());
        let clean_history = history(clean);
        let pages: Vec<GcPage> = [clean, dirty, missing, spare]
            .iter()
            .enumerate()
            .map(|(index, &pid)| GcPage { pid, index })
            .collect();
        store.seen.lock().unwrap().clear();
        let taken = pool.gc_hand_over_for_test(&pages, &mut StoreIo(&store));
        // Resident pages first (no read): the missing one finds the bound reached.
        assert_eq!(taken, vec![true, true, false, true]);
        assert_eq!(pool.survivor_frames.load(Ordering::Relaxed), 2);
        pool.flush_all(WritePurpose::UserCheckpoint).unwrap();
        let seen = store.seen.lock().unwrap().clone();
        for (pid, survivor) in [(clean, true), (spare, true), (dirty, false)] {
            assert!(seen.contains(&(pid, survivor)), "{pid} {survivor}: {seen:?}");
        }
        assert_eq!(seen.len(), 3);
        assert_eq!(history(clean), clean_history, "a survivor is written unchanged");
        assert_eq!(pool.survivor_frames.load(Ordering::Relaxed), 0);
        assert_eq!(pool.stats().dirty_frames, 0);
    }

    /// A page not in the pool is read and loaded dirty, a survivor.
    #[test]
    fn a_missing_page_is_loaded_as_a_survivor() {
        let (store, pool) = pool_of_16_written_pages();
        let missing = (0..16).find(|p| pool.table[*p as usize].frame().is_none()).unwrap();
        // As after a sweep of the clock: a clean frame nobody used since is free for the taking.
        pool.referenced.iter().for_each(|r| r.store(false, Ordering::Relaxed));
        let pages = [GcPage { pid: missing, index: 0 }];
        assert_eq!(pool.gc_hand_over_for_test(&pages, &mut StoreIo(&store)), vec![true]);
        assert!(pool.table[missing as usize].frame().is_some());
        assert_eq!(
            (pool.survivor_frames.load(Ordering::Relaxed), pool.stats().dirty_frames),
            (1, 1)
        );
        assert_eq!(page::aux(pool.read(missing).unwrap().bytes()), missing);
        store.seen.lock().unwrap().clear();
        pool.flush_all(WritePurpose::UserCheckpoint).unwrap();
        assert_eq!(*store.seen.lock().unwrap(), vec![(missing, true)]);
    }

    /// A change before its write-back makes a survivor an ordinary dirty page.
    #[test]
    fn a_changed_survivor_is_a_user_write_back() {
        let dev = Arc::new(MemoryDevice::new(32 * PAGE_SIZE as u64));
        let inner = InPlaceStore::new(dev, 0);
        let store = Arc::new(Recording { inner, seen: Mutex::new(Vec::new()) });
        let logger = Arc::new(NoopLogger::new(0));
        let pool = BufferPool::new(store.clone(), 8 * PAGE_SIZE as u64, 4, 0, logger).unwrap();
        let mut g = pool.create(3).unwrap();
        page::format(g.bytes_mut(), 3, PageKind::Leaf, 1, 0);
        drop(g);
        pool.flush_all(WritePurpose::UserCheckpoint).unwrap();
        let pages = [GcPage { pid: 3, index: 0 }];
        assert_eq!(pool.gc_hand_over_for_test(&pages, &mut StoreIo(&store)), vec![true]);
        page::set_aux(pool.write(3).unwrap().bytes_mut(), 7);
        assert_eq!(pool.survivor_frames.load(Ordering::Relaxed), 0);
        store.seen.lock().unwrap().clear();
        pool.flush_all(WritePurpose::UserCheckpoint).unwrap();
        assert_eq!(*store.seen.lock().unwrap(), vec![(3, false)]);
    }
}
