//! The blob space a database with tagged values keeps (`BlobState`), its counters, and the
//! log-size arithmetic of folding the free-extent tree: what the checkpointer, the write path and
//! the shared state (`inner.rs`) name, apart from the batch-level blob code in `blobs.rs`.
use crate::blob::{self, decode_stored, BlobRef, BlobSpace, Stored, TreeOp};
use crate::btree::{Env, Exclusive, TreeCore};
use crate::page::PAGE_SIZE;
use crate::{Corruption, Error, Result};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

/// Blob figures since open (`DbStats::blobs`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize)]
pub struct BlobStats {
    /// Values written out of line, and their bytes (before compression).
    pub blobs_written: u64,
    pub value_bytes_written: u64,
    /// Blob pages handed to the store.
    pub pages_written: u64,
    /// Blob pages read back (lookups, iterators, streams).
    pub pages_read: u64,
    /// Of the pages read: those the store's cache of stored bytes answered (no device read).
    pub cache_hits: u64,
    /// Blobs no key names any more (replaced or deleted), freed by their batch.
    pub blobs_freed: u64,
    /// Page ids the blob space holds free, and those waiting for their commit to be durable.
    pub free_pages: u64,
    pub gated_pages: u64,
    /// Lookups that found their blob replaced under them and looked again.
    pub read_retries: u64,
    /// Batches that brought the free-extent tree up to date (folds).
    pub folds: u64,
}

#[derive(Debug, Default)]
pub(super) struct Counters {
    pub(super) blobs_written: AtomicU64,
    pub(super) value_bytes_written: AtomicU64,
    pub(super) pages_written: AtomicU64,
    pub(super) pages_read: AtomicU64,
    pub(super) cache_hits: AtomicU64,
    pub(super) blobs_freed: AtomicU64,
    pub(super) read_retries: AtomicU64,
    pub(super) folds: AtomicU64,
}

/// The blob space of a database whose values are tagged.
#[derive(Debug)]
pub(crate) struct BlobState {
    /// Values at or above this many bytes go out of line (None: none do; existing blobs are
    /// still read and freed).
    pub threshold: Option<u32>,
    pub space: Mutex<BlobSpace>,
    /// The free-extent tree (catalog name `blob::FREE_TREE_NAME`).
    pub tree: Arc<TreeCore>,
    pub(super) seq: AtomicU64,
    pub(super) counters: Counters,
    /// With a log: small blobs wait here for the log's next write.
    pub stager: Option<Arc<blob::Stager>>,
    /// The stager's flusher thread, with `Options::background_write_back`; stopped with the
    /// database's other threads.
    pub flusher: Mutex<Option<blob::stage::FlusherHandle>>,
    /// When a batch folds (a checkpoint record carries the changes since the last fold, and
    /// a fold must fit the room every batch keeps for it).
    pub fold: FoldBounds,
}

fn seq_seed() -> u64 {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos() as u64);
    // Distinct per process and per open, so a blob id reused across a crash names another seq.
    let seed = nanos ^ (u64::from(std::process::id()) << 40);
    // The process id lands in the top bits, the clock's nanoseconds below: a pid of 0 (none
    // runs as such) would leave the seed to the clock alone.
    debug_assert!(std::process::id() != 0, "no process runs with id 0");
    seed
}

impl BlobState {
    pub fn new(
        threshold: Option<u32>,
        tree: Arc<TreeCore>,
        space: BlobSpace,
        stager: Option<Arc<blob::Stager>>,
        fold: FoldBounds,
    ) -> Self {
        // The free-extent tree is one of the engine's own, never the catalog it is named in.
        assert_ne!(tree.id, super::catalog::CATALOG_TREE_ID);
        BlobState {
            threshold,
            space: Mutex::new(space),
            fold,
            tree,
            seq: AtomicU64::new(seq_seed()),
            counters: Counters::default(),
            stager,
            flusher: Mutex::new(None),
        }
    }

    pub fn lock_space(&self) -> std::sync::MutexGuard<'_, BlobSpace> {
        let space = self.space.lock().unwrap_or_else(|e| e.into_inner());
        // What the log room of a fold is sized by (`fold_bytes`): at most three tree changes
        // per extent change pending, whatever the last holder left.
        debug_assert!(
            space.fold_ops_bound() <= 3 * (space.since_fold().len() + space.batch_changes())
        );
        space
    }

    /// Whether a value of `len` bytes is stored out of line; Err when it cannot be stored.
    pub fn goes_out_of_line(&self, len: usize) -> Result<bool> {
        let inline_max = crate::page::node::MAX_VALUE_BYTES - 1;
        let out = match self.threshold {
            Some(t) if len >= t as usize || len > inline_max => {
                if len as u64 > blob::format::BLOB_MAX_BYTES {
                    let max = blob::format::BLOB_MAX_BYTES as usize;
                    return Err(Error::ValueTooLarge { len, max });
                }
                Ok(true)
            }
            None if len > inline_max => Err(Error::ValueTooLarge { len, max: inline_max }),
            _ => Ok(false),
        };
        // What the write path hands a leaf: an inline value always fits one, tag byte and all.
        debug_assert!(!matches!(out, Ok(false)) || len <= inline_max, "{len} bytes inline");
        out
    }

    pub fn stats(&self) -> BlobStats {
        let c = &self.counters;
        let space = self.lock_space();
        let stats = BlobStats {
            blobs_written: c.blobs_written.load(Ordering::Relaxed),
            value_bytes_written: c.value_bytes_written.load(Ordering::Relaxed),
            pages_written: c.pages_written.load(Ordering::Relaxed),
            pages_read: c.pages_read.load(Ordering::Relaxed),
            cache_hits: c.cache_hits.load(Ordering::Relaxed),
            blobs_freed: c.blobs_freed.load(Ordering::Relaxed),
            free_pages: space.free_pages(),
            gated_pages: space.gated_pages(),
            read_retries: c.read_retries.load(Ordering::Relaxed),
            folds: c.folds.load(Ordering::Relaxed),
        };
        // Free and gated pages are page ids of one device: their sum is a page count.
        debug_assert!(stats.free_pages.checked_add(stats.gated_pages).is_some(), "{stats:?}");
        stats
    }
}

/// Log bytes a fold of at most `ops` tree changes takes, with slack for the splits' images.
fn fold_ops_bytes(ops: usize) -> u64 {
    // A fold's records come from one batch's changes: far below a count whose bytes wrap.
    debug_assert!((ops as u64) < u64::MAX / (2 * FOLD_RECORD_BYTES), "{ops} fold ops");
    ops as u64 * FOLD_RECORD_BYTES + 4 * (PAGE_SIZE as u64 + 64)
}

/// Log bytes a fold of `changes` extent changes may take at most: each moves at most three
/// extents, each a tree record of at most [`FOLD_RECORD_BYTES`] (its share of leaf splits in).
fn fold_bytes(changes: usize) -> u64 {
    // Three ops per change (free-tree delete, insert, and the extent's record) must not wrap.
    debug_assert!(changes <= usize::MAX / 3, "{changes} extent changes");
    fold_ops_bytes(3 * changes)
}
/// The blob a stored value names (None: an inline value), for code that frees values it
/// removes without looking each up.
pub(super) fn blob_of(stored: &[u8]) -> Result<Option<BlobRef>> {
    match decode_stored(stored) {
        Ok(Stored::Blob(r)) => {
            // `decode_stored` refuses a run past the page ids: callers free `page_range()`.
            debug_assert!(r.first.checked_add(r.pages()).is_some(), "blob {r:?} overflows");
            Ok(Some(r))
        }
        Ok(Stored::Inline(_)) => Ok(None),
        Err(e) => Err(Corruption::StoredValue(e).into()),
    }
}

/// Log bytes freeing `blobs` blobs in one batch adds: an extent change each in the commit
/// record, and a fold of them all (a batch that frees many folds).
pub(super) fn release_log_bytes(blobs: usize) -> u64 {
    let ops = blobs as u64 * crate::durable::record::EXTENT_OP_BYTES_MAX as u64;
    // Releasing no blob needs no extent record, only the fold's fixed room.
    debug_assert!(blobs > 0 || ops == 0);
    ops + fold_bytes(blobs)
}

/// A free-extent tree change in the log: the record (a 16-byte entry put or deleted, about
/// 55 bytes framed) and its share of the splits (a leaf holds over 100 entries).
const FOLD_RECORD_BYTES: u64 = 64 + 128;

/// When a batch ends with a fold of the free-extent tree. Folds are what the tree costs in the
/// log: each rewrites every extent that changed since the last one, so they come as rarely as
/// the two bounds allow.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct FoldBounds {
    /// Extent changes since the last fold that a checkpoint record carries: within the log's
    /// largest record and a 32nd of the log between checkpoints, and at most
    /// [`blob::RECORD_CHANGES_MAX`].
    pub record_changes_max: usize,
    /// Tree changes a fold may make: the room every batch keeps for one, as many as fit in a
    /// sixteenth of the log, at most three for each of [`blob::FOLD_CHANGES_MAX`] changes.
    pub fold_ops_max: usize,
}

impl FoldBounds {
    pub(super) fn new(
        wal: &crate::wal::WalOptions,
        log_capacity_bytes: u64,
        checkpoint_log_bytes: u64,
    ) -> FoldBounds {
        let blocks = wal.buffer_blocks.saturating_sub(2) as usize;
        let room = (blocks * crate::wal::format::BLOCK_DATA_BYTES).saturating_sub(128);
        let by_record = room / crate::durable::record::EXTENT_OP_BYTES_MAX;
        let by_log = (log_capacity_bytes / 16 / (3 * FOLD_RECORD_BYTES)) as usize;
        let changes_max = by_record.min(by_log).clamp(1, blob::FOLD_CHANGES_MAX);
        // The checkpoint record is appended without a room check: keep it to a 32nd of the
        // log between two checkpoints.
        let op_bytes = crate::durable::record::EXTENT_OP_BYTES_MAX as u64;
        let by_log_record = (checkpoint_log_bytes.min(log_capacity_bytes) / 32 / op_bytes) as usize;
        let bounds = FoldBounds {
            record_changes_max: by_record
                .min(by_log_record)
                .clamp(changes_max, blob::RECORD_CHANGES_MAX),
            fold_ops_max: 3 * changes_max,
        };
        // A checkpoint record carries at least the changes the fold reserve alone would allow.
        assert!(bounds.fold_ops_max > 0 && bounds.fold_ops_max <= 3 * bounds.record_changes_max);
        bounds
    }

    /// Whether `pending` extent changes since the last fold, whose fold would make at most
    /// `fold_ops` tree changes, call for a fold now.
    pub(super) fn needs_fold(&self, pending: usize, fold_ops: usize) -> bool {
        // `BlobSpace::fold_ops_bound`'s hand-over: each pending change moves at most three
        // extents, so a larger bound means the two counts came from different states.
        debug_assert!(fold_ops <= 3 * pending, "{fold_ops} fold ops for {pending} changes");
        pending > self.record_changes_max || fold_ops > self.fold_ops_max
    }
}

/// What every batch of a database with blobs and a log keeps free in the log beyond its own
/// records, so that the batch may fold (0 without blobs).
pub(super) fn fold_reserve_bytes(b: Option<&BlobState>) -> u64 {
    // `FoldBounds::new`'s hand-over: a reserve of nothing would let a batch fold into a full log.
    debug_assert!(b.is_none_or(|b| b.fold.fold_ops_max > 0), "a fold reserve of no ops");
    b.map_or(0, |b| fold_ops_bytes(b.fold.fold_ops_max))
}

/// Applies free-extent tree changes through the batch's hold of the tree.
fn apply_tree_ops(g: &Exclusive<'_>, env: Env<'_>, ops: &[TreeOp]) -> Result<()> {
    for op in ops {
        match *op {
            TreeOp::Put { start, len } => {
                let (k, v) = blob::extent_entry(start, len);
                g.put(env, &k, &v)?;
            }
            TreeOp::Delete { start } => {
                let found = g.delete(env, &start.to_be_bytes())?;
                assert!(found, "free extent at {start} missing from the tree");
            }
        }
    }
    Ok(())
}

/// Inside a batch of its own (the writer mutex held, or writers held off without a log): the
/// free-extent tree takes the committed free extents. Returns the tree changes made.
pub(super) fn fold_free_tree(b: &BlobState, env: Env<'_>) -> Result<usize> {
    let g = b.tree.exclusive();
    let ops = b.lock_space().fold();
    // The fold took this batch's extent changes along: none may be left to log apart.
    debug_assert_eq!(b.lock_space().batch_changes(), 0, "extent changes left after a fold");
    apply_tree_ops(&g, env, &ops)?;
    Ok(ops.len())
}
