//! Blob pages waiting to be written. A put with a log does not write its blob at once: the pages
//! wait here until the log is about to write the record that names them (the log's
//! before-write hook calls [`Stager::flush`]), or until enough wait to fill slots. So blobs of
//! many single puts reach the store as one batch, compressed and packed together, and the
//! order "blob durable before any record naming it" holds. Readers look here before the store.
use crate::device::AlignedBuf;
use crate::page::{PageBuf, PageId, PAGE_SIZE};
use crate::pagestore::PageStore;
use crate::Result;
use std::collections::HashMap;
use std::ops::Range;
use std::sync::{Arc, Mutex, RwLock};

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
        if self.lock_queue().len() >= self.max_pages {
            self.flush()?;
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
        let pids: Vec<PageId> = std::mem::take(&mut *self.lock_queue());
        if pids.is_empty() {
            return Ok(());
        }
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
        self.store.write_blobs(&batch)?;
        let mut pending = self.pending.write().unwrap_or_else(|e| e.into_inner());
        for pid in &pids {
            pending.remove(pid);
        }
        Ok(())
    }
}
