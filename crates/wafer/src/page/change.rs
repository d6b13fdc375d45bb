//! The logging seam. Every page modification is one of a few deterministic page-level operations;
//! after applying it, the caller hands it to a [`PageLogger`] and stamps the returned LSN into the
//! page header. A WAL implements the logger; redo replays a record on a page only when
//! `page_lsn < record_lsn` (ARIES-style physiological redo).
use super::{Lsn, PageId};
use std::sync::atomic::{AtomicU64, Ordering};

#[derive(Debug, Clone, Copy)]
pub enum PageChange<'a> {
    /// `node::leaf_put(page, key, value)` on a leaf of `tree_id`.
    LeafPut { tree_id: u32, key: &'a [u8], value: &'a [u8] },
    /// `node::leaf_delete(page, key)` on a leaf of `tree_id`.
    LeafDelete { tree_id: u32, key: &'a [u8] },
    /// The whole page after the change (splits, merges, root changes, frees, catalog updates).
    /// The header's LSN and checksum fields are not meaningful in the image.
    Image { page: &'a [u8] },
}

/// Receives every page modification, in per-page order (called under the page's exclusive latch).
pub trait PageLogger: Send + Sync + std::fmt::Debug {
    /// Logs `change` to page `pid` and returns its LSN; LSNs returned for one page increase.
    fn log(&self, pid: PageId, change: &PageChange<'_>) -> Lsn;
    /// The highest LSN handed out so far (persisted in the superblock at close).
    fn last_lsn(&self) -> Lsn;
    /// The write-ahead rule: the buffer pool calls this before writing back pages whose
    /// `page_lsn <= lsn`, and writes nothing until it returns Ok (the log is durable to `lsn`).
    fn make_durable(&self, _lsn: Lsn) -> crate::Result<()> {
        Ok(())
    }
    /// Pages whose `page_lsn` is above this hold changes of a batch still being applied and
    /// must not be written back yet (the pool skips them). No limit by default.
    fn write_back_limit(&self) -> Lsn {
        Lsn::MAX
    }
}

/// Logs nothing; hands out increasing LSNs from a counter (no durability beyond `close()`).
#[derive(Debug)]
pub struct NoopLogger {
    next: AtomicU64,
}

impl NoopLogger {
    /// Starts after `last_lsn` so LSNs keep increasing across reopen.
    pub fn new(last_lsn: Lsn) -> NoopLogger {
        NoopLogger { next: AtomicU64::new(last_lsn + 1) }
    }
}

impl PageLogger for NoopLogger {
    fn log(&self, _pid: PageId, _change: &PageChange<'_>) -> Lsn {
        self.next.fetch_add(1, Ordering::Relaxed)
    }
    fn last_lsn(&self) -> Lsn {
        self.next.load(Ordering::Relaxed) - 1
    }
}
