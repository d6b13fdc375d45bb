//! Blob pages waiting to be written. A put with a log does not write its blob at once: the pages
//! wait here until the log is about to write the record that names them (the log's
//! before-write hook calls [`Stager::flush`]), or until enough wait to fill slots. So blobs of
//! many single puts reach the store as one batch, compressed and packed together, and the
//! order "blob durable before any record naming it" holds. Readers look here before the store.
//!
//! With a flusher thread ([`Stager::start_flusher`]) a full stage is written by the thread, so
//! the put that filled it does not wait for compression, the write and two syncs (milliseconds
//! on a file, once per [`crate::blob::STAGE_PAGES_MAX`] puts). The foreground flushes itself
//! only when twice that many wait (the thread fell behind: memory stays bounded), and the log's
//! hook always flushes in its own thread, so the order above never depends on the thread.
use crate::device::AlignedBuf;
use crate::page::{PageBuf, PageId, PAGE_SIZE};
use crate::pagestore::PageStore;
use crate::wakeup::Wakeup;
use crate::Result;
use std::collections::HashMap;
use std::ops::Range;
use std::sync::{Arc, Mutex, RwLock, Weak};

/// One staged page: sealed, 4 KiB.
pub type StagedPage = Arc<PageBuf>;

#[derive(Debug)]
pub struct Stager {
    store: Arc<dyn PageStore>,
    /// Every page not yet durable in the store, by id (readers look here first).
    pending: RwLock<HashMap<PageId, StagedPage>>,
    /// Staged ids in the order they came, not yet taken by a flush.
    queue: Mutex<Vec<PageId>>,
    /// One flush at a time, so the hook waits for a flush in progress to finish.
    flushing: Mutex<()>,
    /// A flush starts once this many pages wait.
    max_pages: usize,
    /// Wakes the flusher thread, when one runs.
    flusher: Wakeup,
}

impl Stager {
    pub fn new(store: Arc<dyn PageStore>, max_pages: usize) -> Stager {
        assert!(max_pages > 0);
        Stager {
            store,
            pending: RwLock::new(HashMap::new()),
            queue: Mutex::new(Vec::new()),
            flushing: Mutex::new(()),
            max_pages,
            flusher: Wakeup::default(),
        }
    }

    fn lock_queue(&self) -> std::sync::MutexGuard<'_, Vec<PageId>> {
        self.queue.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Stages sealed pages; flushes when enough wait.
    pub fn stage(&self, pages: Vec<(PageId, StagedPage)>) -> Result<()> {
        let n = pages.len();
        {
            let mut pending = self.pending.write().unwrap_or_else(|e| e.into_inner());
            let mut queue = self.lock_queue();
            for (pid, p) in pages {
                let had = pending.insert(pid, p);
                assert!(had.is_none(), "blob page {pid} staged twice");
                queue.push(pid);
            }
            assert!(queue.len() >= n, "every staged page is queued");
        }
        let queued = self.lock_queue().len();
        if queued >= self.max_pages {
            if self.flusher.enabled() && queued < 2 * self.max_pages {
                self.flusher.request();
            } else {
                self.flush()?;
            }
        }
        Ok(())
    }

    /// The staged version of `pid`, if it waits here.
    pub fn get(&self, pid: PageId) -> Option<StagedPage> {
        self.pending.read().unwrap_or_else(|e| e.into_inner()).get(&pid).cloned()
    }

    /// Drops the staged pages of `run` (their blob will not be committed).
    pub fn unstage(&self, run: &Range<PageId>) {
        let mut pending = self.pending.write().unwrap_or_else(|e| e.into_inner());
        let mut queue = self.lock_queue();
        queue.retain(|p| !run.contains(p));
        for pid in run.clone() {
            pending.remove(&pid);
        }
    }

    /// Writes every staged page and returns once they are durable in the store.
    pub fn flush(&self) -> Result<()> {
        let _one = self.flushing.lock().unwrap_or_else(|e| e.into_inner());
        let taken: Vec<PageId> = std::mem::take(&mut *self.lock_queue());
        if taken.is_empty() {
            return Ok(());
        }
        // Until the pages are durable they go back to the queue's head however this flush
        // ends, a panic in the store included: a page left pending but queued nowhere would
        // never be written, while records naming it reach the log.
        let mut requeue = Requeue { stager: self, pids: Some(taken) };
        let pids = requeue.pids.as_deref().unwrap_or_default();
        let pages: Vec<(PageId, StagedPage)> = {
            let pending = self.pending.read().unwrap_or_else(|e| e.into_inner());
            pids.iter().filter_map(|p| pending.get(p).map(|b| (*p, b.clone()))).collect()
        };
        let mut buf = AlignedBuf::zeroed(pages.len() * PAGE_SIZE);
        for ((_, p), out) in pages.iter().zip(buf.chunks_mut(PAGE_SIZE)) {
            out.copy_from_slice(&p[..]);
        }
        let batch: Vec<(PageId, &PageBuf)> = pages
            .iter()
            .zip(buf.chunks(PAGE_SIZE))
            .filter_map(|((pid, _), b)| b.try_into().ok().map(|b: &PageBuf| (*pid, b)))
            .collect();
        assert_eq!(batch.len(), pages.len(), "every staged page goes to the store");
        // On failure `requeue` puts them back: the next flush (the log's hook) tries them
        // again and fails as well, so no record naming them is written while they are not
        // durable.
        self.store.write_blobs(&batch)?;
        let pids = requeue.pids.take().unwrap_or_default();
        let mut pending = self.pending.write().unwrap_or_else(|e| e.into_inner());
        for pid in &pids {
            pending.remove(pid);
        }
        debug_assert!(pids.iter().all(|p| !pending.contains_key(p)), "a durable page stays staged");
        Ok(())
    }
}

/// Staged ids a flush took from the queue: put back at its head when dropped still holding
/// them (the write failed or panicked), so the next flush writes them first.
struct Requeue<'a> {
    stager: &'a Stager,
    pids: Option<Vec<PageId>>,
}

impl Drop for Requeue<'_> {
    fn drop(&mut self) {
        let Some(pids) = self.pids.take() else { return };
        // Taken under the flush lock, and only a flush takes from the queue: none of them
        // can have been queued again meanwhile.
        let mut queue = self.stager.lock_queue();
        debug_assert!(!queue.iter().any(|p| pids.contains(p)), "a page queued twice");
        let later = std::mem::replace(&mut *queue, pids);
        queue.extend(later);
    }
}

/// The running flusher thread; dropping the handle stops and joins it.
#[derive(Debug)]
pub struct FlusherHandle {
    stager: Arc<Stager>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Stager {
    /// Starts the thread that writes a full stage while puts go on.
    pub fn start_flusher(stager: &Arc<Stager>) -> std::io::Result<FlusherHandle> {
        let weak = Arc::downgrade(stager);
        stager.flusher.set_enabled(true);
        let thread = std::thread::Builder::new()
            .name("wafer-blob-flush".into())
            .spawn(move || run_flusher(weak))
            .inspect_err(|_| stager.flusher.set_enabled(false))?;
        Ok(FlusherHandle { stager: stager.clone(), thread: Some(thread) })
    }
}

impl Drop for FlusherHandle {
    fn drop(&mut self) {
        // Disabled first: a put from now on flushes itself instead of asking a stopped thread.
        self.stager.flusher.set_enabled(false);
        self.stager.flusher.stop();
        if let Some(t) = self.thread.take() {
            // A panic in the thread was already reported on stderr; puts flush themselves.
            let _ = t.join();
        }
        debug_assert!(!self.stager.flusher.enabled(), "a stopped flusher is asked no more");
    }
}

fn run_flusher(weak: Weak<Stager>) {
    loop {
        let Some(stager) = weak.upgrade() else { return };
        if stager.flusher.wait() {
            return;
        }
        // A failed write poisons the store and leaves the pages queued: the next foreground
        // flush (a put's or the log's hook) reports the error.
        let _ = stager.flush();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::device::{DeviceError, WritePurpose};
    use crate::pagestore::LogicalBytes;
    use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

    /// Counts the pages written; fails every write while `failing`.
    #[derive(Debug, Default)]
    struct Store {
        written: AtomicUsize,
        failing: AtomicBool,
    }

    impl PageStore for Store {
        fn page_capacity(&self) -> u64 {
            1 << 20
        }
        fn read_page(&self, _pid: PageId, buf: &mut PageBuf) -> Result<()> {
            buf.fill(0);
            Ok(())
        }
        fn write_batch(&self, pages: &[(PageId, &PageBuf)], _: WritePurpose) -> Result<()> {
            if self.failing.load(Ordering::SeqCst) {
                let source = std::io::Error::other("injected");
                return Err(DeviceError::Io { op: "write", offset: 0, source }.into());
            }
            self.written.fetch_add(pages.len(), Ordering::SeqCst);
            Ok(())
        }
        fn sync(&self) -> Result<()> {
            Ok(())
        }
        fn logical_bytes(&self) -> LogicalBytes {
            LogicalBytes::default()
        }
    }

    fn pages(ids: std::ops::Range<PageId>) -> Vec<(PageId, StagedPage)> {
        ids.map(|p| (p, Arc::new([p as u8; PAGE_SIZE]))).collect()
    }

    #[test]
    fn the_flusher_writes_a_full_stage_and_the_foreground_past_twice_that() {
        let store = Arc::new(Store::default());
        let s = Arc::new(Stager::new(store.clone(), 4));
        let handle = Stager::start_flusher(&s).unwrap();
        s.stage(pages(1..5)).unwrap();
        // Bounded wait for the thread: it has a full stage to write.
        for _ in 0..10_000 {
            if store.written.load(Ordering::SeqCst) == 4 {
                break;
            }
            std::thread::sleep(std::time::Duration::from_millis(1));
        }
        assert_eq!(store.written.load(Ordering::SeqCst), 4, "the thread wrote the stage");
        assert!(s.get(1).is_none(), "written pages leave the stage");
        drop(handle);
        // Without the thread the put that fills the stage writes it.
        s.stage(pages(5..9)).unwrap();
        assert_eq!(store.written.load(Ordering::SeqCst), 8);
    }

    /// A store that panics in a write (a bug below the stager) leaves the pages queued as a
    /// failed write does: the next flush writes them, and a page is never staged twice.
    #[test]
    fn a_panicking_write_keeps_the_pages_for_the_next_flush() {
        #[derive(Debug, Default)]
        struct Panicking {
            inner: Store,
            panics: AtomicUsize,
        }
        impl PageStore for Panicking {
            fn page_capacity(&self) -> u64 {
                self.inner.page_capacity()
            }
            fn read_page(&self, pid: PageId, buf: &mut PageBuf) -> Result<()> {
                self.inner.read_page(pid, buf)
            }
            fn write_batch(&self, pages: &[(PageId, &PageBuf)], p: WritePurpose) -> Result<()> {
                if self.panics.swap(0, Ordering::SeqCst) > 0 {
                    panic!("injected panic in the store");
                }
                self.inner.write_batch(pages, p)
            }
            fn sync(&self) -> Result<()> {
                Ok(())
            }
            fn logical_bytes(&self) -> LogicalBytes {
                LogicalBytes::default()
            }
        }
        let store = Arc::new(Panicking { panics: AtomicUsize::new(1), ..Default::default() });
        let s = Stager::new(store.clone(), 100);
        s.stage(pages(1..4)).unwrap();
        let caught = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| s.flush()));
        assert!(caught.is_err(), "the store's panic reaches the caller");
        assert!(s.get(2).is_some(), "the pages still wait");
        s.stage(pages(4..6)).unwrap();
        s.flush().unwrap();
        assert_eq!(store.inner.written.load(Ordering::SeqCst), 5, "every page written once");
        assert!((1..6).all(|p| s.get(p).is_none()), "written pages leave the stage");
    }

    #[test]
    fn a_failed_write_keeps_the_pages_for_the_next_flush() {
        let store = Arc::new(Store::default());
        let s = Stager::new(store.clone(), 100);
        s.stage(pages(1..4)).unwrap();
        store.failing.store(true, Ordering::SeqCst);
        s.stage(pages(4..6)).unwrap();
        assert!(s.flush().is_err());
        // Still readable, still queued: a later flush must write them before any record
        // naming them goes to the log.
        assert!(s.get(2).is_some());
        store.failing.store(false, Ordering::SeqCst);
        s.flush().unwrap();
        assert_eq!(store.written.load(Ordering::SeqCst), 5);
        assert!(s.get(2).is_none() && s.get(5).is_none());
    }
}
