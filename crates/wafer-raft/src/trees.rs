//! Tree names, key encodings and the chunked writes both stores share.
use crate::error::{Error, Result};
use wafer::{Db, Durability, WriteBatch};

/// Log entries: key = index as 8 bytes big-endian (so key order is index order), value = the
/// entry as JSON.
pub(crate) const LOG: &str = "raft.log";
/// The log's own records: `vote`, `purged`, `committed`.
pub(crate) const LOG_META: &str = "raft.log.meta";
pub(crate) const VOTE_KEY: &[u8] = b"vote";
pub(crate) const PURGED_KEY: &[u8] = b"purged";
pub(crate) const COMMITTED_KEY: &[u8] = b"committed";
/// The state machine's applied state: one record under `applied`.
pub(crate) const SM_META: &str = "raft.sm.meta";
pub(crate) const APPLIED_KEY: &[u8] = b"applied";
/// The last snapshot built or installed: `meta` (JSON) and `data` (the snapshot bytes).
pub(crate) const SNAPSHOT: &str = "raft.snapshot";
pub(crate) const SNAPSHOT_META_KEY: &[u8] = b"meta";
pub(crate) const SNAPSHOT_DATA_KEY: &[u8] = b"data";

/// The two trees that take turns holding the user's key-value data: an installed snapshot is
/// written into the one not in use, then a single batch switches to it.
pub(crate) fn data_tree(generation: u8) -> &'static str {
    if generation == 0 {
        "raft.sm.data.0"
    } else {
        "raft.sm.data.1"
    }
}

pub(crate) fn log_key(index: u64) -> [u8; 8] {
    index.to_be_bytes()
}

pub(crate) fn log_index(key: &[u8]) -> Result<u64> {
    let bytes: [u8; 8] = key.try_into().map_err(|_| Error::LogKey(key.len()))?;
    Ok(u64::from_be_bytes(bytes))
}

/// Bytes one batch may carry. With a WAL, every page a batch dirties stays in the buffer pool
/// until it commits, so a batch must stay well below the pool; an eighth leaves room for the
/// tree's inner pages and for other writers.
pub(crate) fn batch_budget(db: &Db) -> usize {
    let pool = db.options().buffer_pool_bytes / 8;
    pool.clamp(16 << 10, 4 << 20) as usize
}

/// Per-operation overhead counted against the budget (slot, page headers, log record).
pub(crate) const OP_OVERHEAD: usize = 64;

/// Deletes `keys` of `tree` in batches within the budget, in the order given, each batch
/// atomic; the last one waits as `last` says. Order matters to callers: a log cut from the end
/// (or from the front) stays contiguous whichever batch a crash stops at.
pub(crate) fn delete_keys(
    db: &Db,
    tree: &str,
    keys: impl Iterator<Item = Vec<u8>>,
    last: Durability,
) -> Result<()> {
    let budget = batch_budget(db);
    let mut batch = WriteBatch::new();
    let mut bytes = 0;
    for key in keys {
        bytes += key.len() + OP_OVERHEAD;
        batch.delete(tree, &key);
        if bytes >= budget {
            db.write_with(&batch, Durability::None)?;
            batch = WriteBatch::new();
            bytes = 0;
        }
    }
    if !batch.is_empty() {
        db.write_with(&batch, last)?;
    } else if last != Durability::None {
        db.sync()?;
    }
    Ok(())
}

/// Empties `tree` in one small batch (`Tree::clear` detaches its leaves whole; their pages
/// are freed in bounded batches before it returns).
pub(crate) fn clear_tree(db: &Db, tree: &str) -> Result<()> {
    Ok(db.tree(tree)?.clear()?)
}
