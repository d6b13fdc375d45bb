//! Checkpoint write-back that holds no page while its copy is written. A flush visits every
//! frame; for a dirty page it latches the frame, stamps and seals the page, copies it into the
//! batch buffer, marks the frame `writing` and lets it go; a full batch goes to the store in one
//! call, and each page is marked clean afterwards only if nobody changed it since its copy (its
//! table entry still holds the word it had when the flush let it go). Before, the pages of a
//! batch stayed latched for the batch's I/O (milliseconds, doubled in place by the doublewrite
//! area), and any writer or reader that met one (the root above all) waited: in an in-memory
//! YCSB-A the writers sat in futex waits on `latch_shared` and, behind them, on the writer mutex
//! while the checkpoint thread wrote.
//!
//! A page being written stays dirty, so it is never dropped and read back from a device that
//! does not hold it yet; and `writing` keeps every other write-back (eviction, reserve
//! cleaning, GC's copy of a dirty page) off it until the write is done, so two versions of one
//! page are never in flight at once (out of place, the later append would have to be the newer).
use super::{BufferPool, FrameMut, NO_PAGE};
use crate::device::{AlignedBuf, WritePurpose};
use crate::page::{self, PageBuf, PageId, PAGE_SIZE};
use crate::Result;
use std::sync::atomic::Ordering;

/// Copies waiting for one store call.
struct CopyBatch {
    buf: AlignedBuf,
    /// Frame, page and the entry word the page had when the flush let it go.
    pages: Vec<(u32, PageId, u64)>,
    /// By copy: a GC survivor, written unchanged (`FrameMeta::survivor`).
    survivors: Vec<bool>,
    max_lsn: page::Lsn,
}

impl CopyBatch {
    fn new(capacity_pages: usize) -> CopyBatch {
        assert!(capacity_pages > 0, "a flush batch holds at least one page");
        CopyBatch {
            buf: AlignedBuf::zeroed(capacity_pages * PAGE_SIZE),
            pages: Vec::with_capacity(capacity_pages),
            survivors: Vec::with_capacity(capacity_pages),
            max_lsn: 0,
        }
    }

    fn is_full(&self) -> bool {
        // Callers stop adding at full: a page past the buffer would be copied over nothing.
        debug_assert!(self.pages.len() * PAGE_SIZE <= self.buf.len(), "{} pages", self.pages.len());
        debug_assert_eq!(self.pages.len(), self.survivors.len(), "one survivor flag per page");
        self.pages.len() * PAGE_SIZE >= self.buf.len()
    }
}

impl BufferPool {
    /// Writes back every dirty page the logger allows (`page_lsn <= write_back_limit()`), in
    /// batches of copies; returns how many dirty pages it had to skip (a batch in progress holds
    /// them). The flusher holds at most one page latch at a time, never across I/O, so it may
    /// block on any latch (no holder of one waits for anything the flusher holds).
    pub fn flush_dirty(&self, purpose: WritePurpose) -> Result<u64> {
        let limit = self.logger.write_back_limit();
        let mut skipped = 0u64;
        let mut batch = CopyBatch::new(self.batch_pages);
        for i in 0..self.frames.len() as u32 {
            let g = self.latch_exclusive(i);
            if g.pid() == NO_PAGE || !g.g.dirty || g.g.writing {
                continue;
            }
            if page::lsn(g.bytes()) > limit {
                skipped += 1;
                continue;
            }
            self.copy_out(&mut batch, g);
            if batch.is_full() {
                self.write_copies(&mut batch, purpose)?;
            }
        }
        self.write_copies(&mut batch, purpose)?;
        // Every copy was written and its frame let go (`end_writing`).
        debug_assert!(batch.pages.is_empty() && batch.survivors.is_empty());
        Ok(skipped)
    }

    /// Stamps and seals the page, copies it into `batch` and lets the frame go, `writing`.
    fn copy_out(&self, batch: &mut CopyBatch, mut g: FrameMut<'_>) {
        assert!(!batch.is_full() && g.g.dirty);
        if g.g.survivor {
            // Unchanged (the mapped version): only the entry is locked, so the word taken below
            // tells whether anyone changed the page meanwhile.
            let _ = g.bytes_mut();
        } else {
            let lsn = self.stamp_and_seal(&mut g);
            batch.max_lsn = batch.max_lsn.max(lsn);
        }
        batch.survivors.push(g.g.survivor);
        let at = batch.pages.len() * PAGE_SIZE;
        batch.buf[at..at + PAGE_SIZE].copy_from_slice(g.bytes());
        g.g.writing = true;
        // Stamping locked the entry: the word it holds once `g` drops.
        let word = self.table[g.pid() as usize].word_after_unlock();
        batch.pages.push((g.frame, g.pid(), word));
    }

    /// Writes the batch's copies in one store call (the log durable first, as for any
    /// write-back), then marks clean each page nobody changed since its copy.
    fn write_copies(&self, batch: &mut CopyBatch, purpose: WritePurpose) -> Result<()> {
        if batch.pages.is_empty() {
            return Ok(());
        }
        debug_assert_eq!(batch.pages.len(), batch.survivors.len(), "a survivor flag per copy");
        debug_assert!(batch.pages.len() * PAGE_SIZE <= batch.buf.len());
        let written = self.logger.make_durable(batch.max_lsn).and_then(|()| {
            let pages = batch_pages(batch)?;
            self.store_write(&pages, purpose, &batch.survivors)
        });
        if let Err(e) = written {
            // As a failed eviction: the pages stay dirty, the pool refuses writes from now on.
            self.poisoned.store(true, Ordering::Relaxed);
            self.end_writing(batch, false);
            return Err(e);
        }
        self.counters.written(batch.pages.len() as u64);
        self.end_writing(batch, true);
        Ok(())
    }

    /// Clears `writing` on the batch's frames and, when `written`, `dirty` on those whose
    /// entry still holds its word.
    fn end_writing(&self, batch: &mut CopyBatch, written: bool) {
        for (frame, pid, word) in batch.pages.drain(..) {
            let mut g = self.latch_exclusive(frame);
            assert!(g.pid() == pid && g.g.writing, "a frame being written changed hands");
            g.g.writing = false;
            if written && g.g.dirty && self.table[pid as usize].holds(word) {
                g.mark_written();
            }
        }
        batch.survivors.clear();
        assert!(batch.pages.is_empty());
        batch.max_lsn = 0;
    }
}

/// The batch's copies as the store takes them.
fn batch_pages(batch: &CopyBatch) -> Result<Vec<(PageId, &PageBuf)>> {
    let chunks = batch.buf.chunks(PAGE_SIZE);
    let mut pages = Vec::with_capacity(batch.pages.len());
    for (&(_, pid, _), bytes) in batch.pages.iter().zip(chunks) {
        let bytes: &PageBuf = bytes
            .try_into()
            .map_err(|_| crate::Corruption::BufferNotPageSized { buffer: "flush" })?;
        pages.push((pid, bytes));
    }
    // The buffer holds a copy for every page listed: zip dropped none.
    debug_assert_eq!(pages.len(), batch.pages.len());
    Ok(pages)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::buffer::{InPlaceStore, PageStore};
    use crate::device::MemoryDevice;
    use crate::page::{NoopLogger, PageKind};
    use crate::pagestore::LogicalBytes;
    use std::sync::mpsc::{channel, Receiver, Sender};
    use std::sync::{Arc, Mutex};

    /// An in-place store whose writes wait for a go after saying they started.
    #[derive(Debug)]
    struct Gated {
        inner: InPlaceStore,
        started: Mutex<Sender<()>>,
        go: Mutex<Receiver<()>>,
    }

    impl PageStore for Gated {
        fn page_capacity(&self) -> u64 {
            self.inner.page_capacity()
        }
        fn read_page(&self, pid: PageId, buf: &mut PageBuf) -> Result<()> {
            self.inner.read_page(pid, buf)
        }
        fn write_batch(&self, pages: &[(PageId, &PageBuf)], purpose: WritePurpose) -> Result<()> {
            let _ = self.started.lock().unwrap().send(());
            let _ = self.go.lock().unwrap().recv();
            self.inner.write_batch(pages, purpose)
        }
        fn sync(&self) -> Result<()> {
            self.inner.sync()
        }
        fn logical_bytes(&self) -> LogicalBytes {
            self.inner.logical_bytes()
        }
    }

    /// While a flush writes its copies, a writer latches and changes a page of the batch (it
    /// would wait for the whole write if the flush held the page). The page stays dirty, and
    /// the next flush writes the new version.
    #[test]
    fn a_page_changed_during_its_write_stays_dirty_and_goes_out_next_time() {
        let dev = Arc::new(MemoryDevice::new(64 * PAGE_SIZE as u64));
        let (started_tx, started) = channel();
        let (go, go_rx) = channel();
        let inner = InPlaceStore::new(dev.clone(), 0);
        let store =
            Arc::new(Gated { inner, started: Mutex::new(started_tx), go: Mutex::new(go_rx) });
        let pool =
            BufferPool::new(store, 16 * PAGE_SIZE as u64, 4, 0, Arc::new(NoopLogger::new(0)))
                .unwrap();
        for pid in 0..3 {
            let mut g = pool.create(pid).unwrap();
            page::format(g.bytes_mut(), pid, PageKind::Leaf, 1, 10);
        }
        std::thread::scope(|s| {
            let flusher = s.spawn(|| pool.flush_dirty(WritePurpose::UserCheckpoint));
            started.recv().unwrap();
            {
                let mut g = pool.write(1).unwrap();
                page::set_aux(g.bytes_mut(), 11);
            }
            go.send(()).unwrap();
            assert_eq!(flusher.join().unwrap().unwrap(), 0);
        });
        assert_eq!(pool.stats().dirty_frames, 1, "only the changed page stays dirty");
        let on_device = |pid: u64| {
            let mut b = [0u8; PAGE_SIZE];
            InPlaceStore::new(dev.clone(), 0).read_page(pid, &mut b).unwrap();
            page::aux(&b)
        };
        assert_eq!((on_device(0), on_device(1)), (10, 10));
        let flusher = std::thread::spawn(move || {
            started.recv().unwrap();
            go.send(()).unwrap();
        });
        pool.flush_all(WritePurpose::UserCheckpoint).unwrap();
        flusher.join().unwrap();
        assert_eq!(on_device(1), 11);
        assert_eq!(pool.stats().dirty_frames, 0);
    }
}
