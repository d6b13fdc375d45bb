//! The state every handle shares (`DbInner`), the handles themselves (`Db`, `Tree`), and the
//! checks each operation runs first. A leaf of `db/`: the files that add behaviour to these types
//! name them here, not through their parent, so no file of `db/` imports its own importer.
use super::blob_state::BlobState;
use super::checkpoint::{CheckpointThread, Checkpointer};
use super::exclusive::FileLocks;
use super::locks::LockTable;
use crate::alloc::Allocator;
use crate::btree::{Env, TreeCore};
use crate::buffer::{BufferPool, DoublewriteStore};
use crate::device::Device;
use crate::durable::{RecoveryStats, WalLogger};
use crate::options::Options;
use crate::page::node::{MAX_KEY_BYTES, MAX_VALUE_BYTES};
use crate::page::PageLogger;
use crate::stats::IoStats;
use crate::{Error, Result};
use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::sync::{Arc, Mutex, OnceLock, RwLock};

#[derive(Debug)]
pub(super) struct DbInner {
    pub(super) options: Options,
    /// In an `Arc` so the out-of-place store can hold it weakly as GC's page cache.
    pub(super) pool: Arc<BufferPool>,
    pub(super) logger: Arc<dyn PageLogger>,
    /// Shared with the checkpointer (as are `next_tree_id`, `poisoned` and `writer`).
    pub(super) alloc: Arc<Allocator>,
    pub(super) catalog: TreeCore,
    pub(super) trees: RwLock<HashMap<String, Arc<TreeCore>>>,
    /// Changed only under the `trees` write lock.
    pub(super) next_tree_id: Arc<AtomicU32>,
    pub(super) closed: AtomicBool,
    pub(super) poisoned: Arc<AtomicBool>,
    /// Per-purpose I/O counters when the database counted its own device (`Db::open(path)`).
    pub(super) io_stats: Option<Arc<IoStats>>,
    pub(super) wal_io_stats: Option<Arc<IoStats>>,
    /// The WAL-backed logger (same object as `logger`), when the database keeps a WAL.
    pub(super) wal: Option<Arc<WalLogger>>,
    /// Batches apply one at a time under this mutex (WAL mode only), so the log is a sequence
    /// of whole batches each ended by a commit record. Lock order: `trees` -> `writer` ->
    /// tree structure latches -> page latches.
    pub(super) writer: Arc<Mutex<()>>,
    /// Fuzzy checkpoints (WAL mode; `checkpoint.rs`).
    pub(super) checkpointer: Option<Arc<Checkpointer>>,
    /// The checkpoint thread (`Options::background_checkpoint`); stopped at close and drop.
    pub(super) checkpoint_thread: Mutex<Option<CheckpointThread>>,
    pub(super) recovery: Option<RecoveryStats>,
    pub(super) doublewrite: Option<Arc<DoublewriteStore>>,
    /// The data device as given, for the emulator's flash counters in `stats()`.
    #[cfg_attr(not(feature = "emulator"), allow(dead_code))]
    pub(super) data_device: Arc<dyn Device>,
    /// Key locks of transactions (`Txn::lock`).
    pub(super) locks: Arc<LockTable>,
    /// The background write-back thread (`Options::background_write_back`).
    pub(super) cleaner: Mutex<Option<crate::buffer::CleanerHandle>>,
    /// Out-of-line values, when the database's values are tagged (set once, at open).
    pub(super) blobs: OnceLock<Arc<BlobState>>,
    /// `Db::open(path)`'s locks on its files, released at close or with the last handle, after
    /// every background thread has written its last byte.
    pub(super) file_locks: Mutex<Option<FileLocks>>,
}

#[derive(Debug, Clone)]
pub struct Db {
    pub(super) inner: Arc<DbInner>,
}

/// A named tree. Operations on a closed database return `Closed` ([`crate::CommitError::Closed`],
/// [`crate::ReadError::Closed`]).
#[derive(Debug, Clone)]
pub struct Tree {
    pub(super) db: Arc<DbInner>,
    pub(super) core: Arc<TreeCore>,
    pub(super) name: Arc<str>,
}

pub(super) fn check_key(key: &[u8]) -> Result<()> {
    // A key that passes fits a leaf cell beside the largest inline value.
    const { assert!(MAX_KEY_BYTES + MAX_VALUE_BYTES < crate::page::PAGE_SIZE) };
    if key.len() > MAX_KEY_BYTES {
        return Err(Error::KeyTooLarge { len: key.len(), max: MAX_KEY_BYTES });
    }
    Ok(())
}
impl DbInner {
    /// Whether the database can store `value` (inline, or out of line with blobs).
    pub(super) fn check_value(&self, value: &[u8]) -> Result<()> {
        if let Some(b) = self.blobs.get() {
            let out_of_line = b.goes_out_of_line(value.len())?;
            // A value that passes is stored inline (a leaf takes it) or as a blob (its length
            // fits the blob format's length field).
            debug_assert!(
                value.len() <= MAX_VALUE_BYTES
                    || (out_of_line && value.len() as u64 <= crate::blob::format::BLOB_MAX_BYTES),
                "{} bytes accepted",
                value.len()
            );
            return Ok(());
        }
        if value.len() > MAX_VALUE_BYTES {
            return Err(Error::ValueTooLarge { len: value.len(), max: MAX_VALUE_BYTES });
        }
        Ok(())
    }
}

impl DbInner {
    pub(super) fn env(&self) -> Env<'_> {
        // Every operation's pages come from this pool: one without frames holds none.
        debug_assert!(self.pool.page_capacity() > 0, "an environment over an empty pool");
        Env {
            pool: &self.pool,
            logger: &*self.logger,
            alloc: &self.alloc,
            poisoned: &self.poisoned,
            append_split: self.options.append_split,
        }
    }
    pub(super) fn lock_checkpoint_thread(
        &self,
    ) -> std::sync::MutexGuard<'_, Option<CheckpointThread>> {
        let thread = self.checkpoint_thread.lock().unwrap_or_else(|e| e.into_inner());
        // The thread checkpoints through the log's checkpointer: none without a log.
        debug_assert!(
            self.checkpointer.is_some() || thread.is_none(),
            "a checkpoint thread sans log"
        );
        thread
    }
    pub(super) fn check_open(&self) -> Result<()> {
        // `open_inner` turned off a read-only open's writing threads: they stay off.
        debug_assert!(
            !self.options.read_only
                || !(self.options.background_write_back || self.options.background_checkpoint)
        );
        if self.closed.load(Ordering::Acquire) {
            return Err(Error::Closed);
        }
        Ok(())
    }
    pub(super) fn check_writable(&self) -> Result<()> {
        self.check_open()?;
        if self.options.read_only {
            return Err(Error::ReadOnly);
        }
        // Open's hand-over for a writable database: a log comes with its checkpointer.
        debug_assert_eq!(self.wal.is_some(), self.checkpointer.is_some());
        if self.poisoned.load(Ordering::Relaxed) || self.pool.is_poisoned() {
            return Err(Error::Poisoned);
        }
        Ok(())
    }
    /// Operation `index` of a batch failed with `e`. Once an earlier operation is applied the
    /// batch is no longer all or nothing, so the database is poisoned (a reopen recovers the
    /// last commit); a clean refusal of the first (a full device, a dropped tree) changed
    /// nothing and poisons nothing.
    pub(super) fn fail_batch_op(&self, index: usize, e: Error) -> Error {
        // Only the batch in progress decides what its failure leaves behind.
        debug_assert!(self.writer_held(), "batch operation {index} failed outside its batch");
        if index > 0 {
            self.poisoned.store(true, Ordering::Relaxed);
            return e;
        }
        match self.poison_unless_clean::<()>(Err(e)) {
            Err(e) => e,
            Ok(()) => unreachable!("an error stays an error"),
        }
    }

    /// Marks the DB poisoned when an error leaves state unknown (not for clean refusals).
    pub(super) fn poison_unless_clean<T>(&self, r: Result<T>) -> Result<T> {
        // Its callers judge a write of the batch in progress (whose state nobody else changes).
        debug_assert!(self.writer_held(), "a write judged outside its batch");
        if let Err(e) = &r {
            let clean = matches!(
                e,
                Error::KeyTooLarge { .. }
                    | Error::ValueTooLarge { .. }
                    | Error::OutOfSpace(_)
                    | Error::TreeDropped(_)
                    | Error::ReadOnly
            );
            if !clean {
                self.poisoned.store(true, Ordering::Relaxed);
            }
        }
        r
    }
}

impl Drop for DbInner {
    /// The last handle is gone: background GC stops before this returns, so a database reopened
    /// right after (same process) sees no write from the old one. GC's thread may hold the pool,
    /// and with it the store, a little longer.
    fn drop(&mut self) {
        // Stopped and joined first: they write through the store, and nothing may be written
        // once the last handle is gone (a checkpoint in progress finishes).
        self.stop_background();
        // Nothing of this database writes once the last handle is gone.
        debug_assert!(self.lock_checkpoint_thread().is_none(), "checkpoint thread outlived Db");
    }
}

impl DbInner {
    /// Stops and joins the checkpoint and write-back threads and the store's GC (a checkpoint
    /// or GC cycle in progress finishes first).
    pub(super) fn stop_background(&self) {
        // The checkpointer only runs with a log: no thread to stop otherwise.
        debug_assert!(self.checkpointer.is_some() || self.lock_checkpoint_thread().is_none());
        self.lock_checkpoint_thread().take();
        self.cleaner.lock().unwrap_or_else(|e| e.into_inner()).take();
        if let Some(b) = self.blobs.get() {
            // Before the store: the flusher writes through it.
            b.flusher.lock().unwrap_or_else(|e| e.into_inner()).take();
        }
        self.pool.store().stop_background();
    }
}
