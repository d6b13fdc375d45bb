//! Detached subtrees waiting to be freed. A range delete, clear or tree drop unlinks the
//! subtrees wholly inside its range in one small batch and records their roots here; their
//! pages are then freed in batches bounded by the log and the buffer pool (a batch's dirty
//! pages stay in the pool until its commit, so one batch could never free a tree larger than
//! the pool). The record is a catalog tree of the engine's own, [`GARBAGE_TREE_NAME`]:
//!
//! ```text
//! key   [page id u64 big-endian]       a detached page, the root of what is left of a subtree
//! value [version u8 = 1][tree_id u32]  little-endian: the tree it was cut from (pages are
//!                                      checked against it before they are freed)
//! ```
//!
//! Freeing an inner page records its children in the same batch, so every page is reachable
//! from here until it is on the free list, and `Db::check` finds no leak at any point. The
//! database frees what is recorded right after each cut and, after a crash, at open.
use super::inner::{Db, DbInner};
use crate::btree::{reclaim_page, Env, Exclusive, TreeCore, FREE_RECORD_BYTES_MAX};
use crate::page::PageId;
use crate::Result;
use std::cell::Cell;
use std::sync::Arc;

pub(crate) const GARBAGE_TREE_NAME: &str = "\0garbage";
const ENTRY_VERSION: u8 = 1;
const ENTRY_BYTES: usize = 5;
/// Log bytes of one entry put or deleted, with its share of the garbage tree's splits.
const ENTRY_LOG_BYTES: u64 = 64 + 64;
/// Log room a reclaim batch asks for: enough to free many leaves, far below any log's size.
const RECLAIM_LOG_BYTES_MAX: u64 = 2 << 20;
/// Pages a reclaim batch frees at most (fewer with a small pool: they stay dirty in it).
const RECLAIM_PAGES_MAX: usize = 256;

pub(crate) fn encode(tree_id: u32) -> [u8; ENTRY_BYTES] {
    let mut v = [0u8; ENTRY_BYTES];
    v[0] = ENTRY_VERSION;
    v[1..].copy_from_slice(&tree_id.to_le_bytes());
    // Reclaim (and `Db::check`) read the entry back through `decode`.
    debug_assert!(matches!(decode(&[0; 8], &v), Ok((0, id)) if id == tree_id));
    v
}

/// The (page, tree id) of an entry, or why it is not one.
pub(crate) fn decode(k: &[u8], v: &[u8]) -> Result<(PageId, u32), crate::Corruption> {
    let (Ok(k), true) = (<[u8; 8]>::try_from(k), v.len() == ENTRY_BYTES && v[0] == ENTRY_VERSION)
    else {
        return Err(crate::Corruption::GarbageEntry { key_bytes: k.len(), value_bytes: v.len() });
    };
    // The value is its version byte and the tree id, nothing more (`copy_from_slice` below).
    const { assert!(ENTRY_BYTES == 1 + 4) };
    let mut id = [0u8; 4];
    id.copy_from_slice(&v[1..]);
    Ok((u64::from_be_bytes(k), u32::from_le_bytes(id)))
}

/// Records detached subtree roots of tree `tree_id` through the batch's hold of the tree.
pub(super) fn record(
    g: &Exclusive<'_>,
    env: Env<'_>,
    tree_id: u32,
    roots: impl Iterator<Item = PageId>,
) -> Result<()> {
    // The catalog is never cut: a detached subtree belongs to a tree of its own.
    assert_ne!(tree_id, super::catalog::CATALOG_TREE_ID, "catalog pages recorded as garbage");
    for pid in roots {
        // Reclaim frees what is recorded here: the superblock or catalog root would be lost.
        assert!(pid > super::catalog::CATALOG_ROOT, "page {pid} recorded as garbage");
        g.put(env, &pid.to_be_bytes(), &encode(tree_id))?;
    }
    Ok(())
}

/// Log bytes recording `entries` detached roots takes at most.
pub(super) fn record_log_bytes(entries: usize) -> u64 {
    // One batch's garbage entries: far below a count whose log bytes wrap.
    debug_assert!((entries as u64) < u64::MAX / (2 * ENTRY_LOG_BYTES), "{entries} entries");
    entries as u64 * ENTRY_LOG_BYTES + 4 * crate::btree::IMAGE_RECORD_BYTES_MAX
}

impl Db {
    /// The garbage tree, created on first use (before any batch that needs it: creating a
    /// tree is a batch of its own).
    pub(super) fn garbage_tree(&self) -> Result<Arc<TreeCore>> {
        let core = self.tree_unchecked(GARBAGE_TREE_NAME)?.core;
        // Records go through this tree's own latch, never the catalog's.
        debug_assert_ne!(core.id, super::catalog::CATALOG_TREE_ID, "garbage in the catalog");
        Ok(core)
    }

    /// Frees every recorded detached page, a bounded batch at a time.
    pub(super) fn reclaim_garbage(&self) -> Result<()> {
        let Some(garbage) = self.existing_tree(GARBAGE_TREE_NAME)? else { return Ok(()) };
        // The pages freed below are the garbage tree's entries, not the catalog's.
        debug_assert_ne!(garbage.core.id, super::catalog::CATALOG_TREE_ID);
        // Each batch frees at least one page, so the page ids bound the batches.
        for _ in 0..=self.inner.pool.page_capacity() {
            if !self.inner.reclaim_batch(&garbage.core)? {
                return Ok(());
            }
        }
        Err(crate::Corruption::GarbageCycle.into())
    }
}

impl DbInner {
    /// One batch of freeing: pages from the garbage tree's first leaf, as many as the log room
    /// and the pool allow. Ok(false) when nothing was left.
    fn reclaim_batch(&self, garbage: &TreeCore) -> Result<bool> {
        self.check_writable()?;
        let pages_max = RECLAIM_PAGES_MAX.min(self.pool.frame_count() / 4).max(1);
        let log_max = match self.wal_logger() {
            Some(wl) => RECLAIM_LOG_BYTES_MAX.min(wl.wal()?.capacity_bytes() / 8),
            None => u64::MAX,
        };
        let durability = crate::wal::Durability::None;
        let any = Cell::new(false);
        self.write_txn(durability, log_max, |env| {
            let g = garbage.exclusive();
            let entries = g.first_leaf_entries(env)?;
            let (mut used, mut freed) = (0u64, 0usize);
            for (k, v) in entries.iter().take(pages_max) {
                let (pid, tree_id) = decode(k, v)?;
                let cost = self.reclaim_cost(env, pid)?;
                if any.get() && used + cost > log_max {
                    break;
                }
                used += cost;
                let r = self.reclaim_one(&g, env, pid, tree_id);
                if r.is_err() {
                    self.poisoned.store(true, std::sync::atomic::Ordering::Relaxed);
                }
                r?;
                any.set(true);
                freed += 1;
            }
            // The batch keeps to the log room it asked for, but for a first page (the one
            // that guarantees progress), and to the pool share its dirty pages may take.
            assert!(freed <= pages_max && (freed <= 1 || used <= log_max), "{freed}, {used}");
            Ok(())
        })?;
        Ok(any.get())
    }

    /// The most log bytes freeing `pid` takes: its record, its children's entries (an inner
    /// page) or its out-of-line values (a leaf). Reads the page, changes nothing.
    fn reclaim_cost(&self, env: Env<'_>, pid: PageId) -> Result<u64> {
        let g = env.pool.read(pid)?;
        let p = g.bytes();
        let n = crate::page::node::slot_count(p);
        // Reclaim reads pages only inside its batch: the page cannot change under the count.
        debug_assert!(self.writer_held(), "a reclaim cost counted outside its batch");
        let own = FREE_RECORD_BYTES_MAX + ENTRY_LOG_BYTES;
        Ok(match crate::page::kind(p) {
            Some(crate::page::PageKind::Inner) => own + record_log_bytes(n + 1),
            _ if self.blobs.get().is_some() => own + super::blob_state::release_log_bytes(n),
            _ => own,
        })
    }

    /// Frees `pid` (of tree `tree_id`): its entry goes, its children's come in.
    fn reclaim_one(
        &self,
        g: &Exclusive<'_>,
        env: Env<'_>,
        pid: PageId,
        tree_id: u32,
    ) -> Result<()> {
        debug_assert!(self.writer_held(), "pages freed outside a batch");
        let tagged = self.blobs.get().is_some();
        let mut blobs = Vec::new();
        let children = reclaim_page(env, pid, tree_id, &mut |v| {
            if tagged {
                blobs.extend(super::blob_state::blob_of(v)?);
            }
            Ok(())
        })?;
        for r in &blobs {
            self.release_blob(r)?;
        }
        if !g.delete(env, &pid.to_be_bytes())? {
            return Err(crate::Corruption::DetachedPageLeft { page_id: pid }.into());
        }
        record(g, env, tree_id, children.into_iter())
    }
}
