//! Removing many entries at once: [`Tree::delete_range`], [`Tree::clear`] and
//! [`Db::drop_tree`]. Each is one small batch, atomic and crash-safe as any batch: the nodes
//! that straddle the range are rewritten, and the subtrees wholly inside it are unlinked
//! without being read and recorded as garbage (`garbage.rs`), whose pages (and out-of-line
//! values) later batches free before the call returns.
//!
//! The batch's log need is known only after a walk of the straddling nodes, so the walk runs
//! first under the writer mutex and the tree's exclusive latch, changing nothing; when the log
//! room held for the batch is too small, the batch declines and runs again with room for what
//! the walk found.
use super::inner::{Db, DbInner, Tree};
use super::{catalog, garbage};
use crate::blob::BlobRef;
use crate::btree::{Bounds, CutPlan, Exclusive, TreeCore};
use crate::{CommitError, Result};
use std::cell::Cell;
use std::ops::{Bound, RangeBounds};
use std::sync::atomic::Ordering;

/// Log room the first attempt asks for: enough for a cut of a few levels.
const CUT_LOG_FIRST_BYTES: u64 = 64 << 10;
/// Attempts of a cut: the first may find too little log room held, the next holds what the
/// walk found; more are needed only when writers change the range between attempts.
const CUT_ATTEMPTS_MAX: u32 = 4;
/// Log bytes of a dropped tree's catalog entry removal beyond the name: a delete record, or
/// the images of a catalog leaf merge and the inner nodes it changes.
const CATALOG_DELETE_BYTES: u64 = 4 * crate::btree::IMAGE_RECORD_BYTES_MAX;

/// What a cut removes beyond its range: nothing more, or the tree itself (root and name).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Then {
    Keep,
    DropTree,
}

impl Tree {
    /// Removes every entry with a key in `range`, atomically, durable as the database's
    /// `options.durability` says. Subtrees inside the range are unlinked whole, not entry by
    /// entry; their pages are free when this returns.
    pub fn delete_range<K: AsRef<[u8]>, R: RangeBounds<K>>(
        &self,
        range: R,
    ) -> Result<(), CommitError> {
        // A handle names a tree of the catalog, never the catalog: its cut would detach the
        // pages that name every other tree.
        debug_assert_ne!(self.core.id, super::catalog::CATALOG_TREE_ID, "a cut of the catalog");
        let db = Db { inner: self.db.clone() };
        Ok(db.cut(self, &super::bounds::bounds_of(range), Then::Keep)?)
    }

    /// Removes every entry of the tree, atomically; the tree stays, empty.
    pub fn clear(&self) -> Result<(), CommitError> {
        // A handle never names the catalog (tree 0): clearing it would forget every tree.
        debug_assert_ne!(self.core.id, 0, "clear of the catalog through {}", self.name);
        self.delete_range::<&[u8], _>(..)
    }
}

impl Db {
    /// Removes the tree called `name` with all its entries, atomically: its pages and its
    /// out-of-line values are freed and its name leaves the catalog. Handles to it fail with
    /// `TreeDropped` ([`ReadError`], [`CommitError`]) from then on; [`Db::tree`] with the name
    /// makes a new, empty tree. Ok(false) when there is no such tree.
    pub fn drop_tree(&self, name: &str) -> Result<bool, CommitError> {
        catalog::check_name(name)?;
        self.inner.check_writable()?;
        // Before the map's lock below: creating it takes that lock itself.
        let garbage = self.garbage_tree()?;
        {
            // Held across the batch: nobody gets a handle to the tree while it goes (lock
            // order: `trees` before the writer mutex).
            let mut map = self.inner.trees.write().unwrap_or_else(|e| e.into_inner());
            let Some(core) = map.get(name).cloned() else { return Ok(false) };
            let tree = Tree { db: self.inner.clone(), core, name: name.into() };
            let all = Bounds { lo: Bound::Unbounded, hi: Bound::Unbounded };
            self.cut_batch(&tree, &garbage, &all, Then::DropTree)?;
            let removed = map.remove(name);
            assert!(removed.is_some(), "a dropped tree left the map meanwhile");
        }
        self.reclaim_garbage()?;
        Ok(true)
    }

    /// Removes the entries of `tree` in `range`, then frees what the cut detached.
    fn cut(&self, tree: &Tree, range: &Bounds, then: Then) -> Result<()> {
        self.inner.check_writable()?;
        tree.check_live()?;
        let garbage = self.garbage_tree()?;
        // The garbage tree is never cut: its pages would be recorded into itself.
        debug_assert!(!std::sync::Arc::ptr_eq(&tree.core, &garbage), "a cut of the garbage tree");
        self.cut_batch(tree, &garbage, range, then)?;
        self.reclaim_garbage()
    }

    /// The cut's one batch (run again with more log room when the first is too small).
    fn cut_batch(&self, tree: &Tree, garbage: &TreeCore, range: &Bounds, then: Then) -> Result<()> {
        let inner = &*self.inner;
        let mut estimate_bytes = CUT_LOG_FIRST_BYTES;
        for _ in 0..CUT_ATTEMPTS_MAX {
            let need_bytes = Cell::new(0u64);
            let done = inner.write_txn_step(inner.options.durability, estimate_bytes, |env| {
                // Latched in tree-id order, as batches do.
                let (g, gg) = latch_both(&tree.core, garbage);
                inner.check_writable()?;
                tree.check_live()?;
                let mut blobs = Vec::new();
                let plan = inner.plan_cut(&g, env, range, &mut blobs)?;
                let need = inner.cut_log_bytes(&plan, blobs.len(), tree, then);
                // Without a log there is no room to hold: nothing declines.
                if need > estimate_bytes && inner.wal.is_some() {
                    need_bytes.set(need);
                    return Ok(None); // Nothing changed: run again with room for it.
                }
                let r = inner.execute_cut(&g, &gg, env, plan, &blobs, tree, then);
                if r.is_err() {
                    // Part of the cut may be applied: state is no longer all-or-none.
                    inner.poisoned.store(true, Ordering::Relaxed);
                }
                r.map(Some)
            })?;
            if done.is_some() {
                return Ok(());
            }
            assert!(need_bytes.get() > estimate_bytes, "a cut declined with room enough");
            estimate_bytes = need_bytes.get();
        }
        let attempts = CUT_ATTEMPTS_MAX;
        Err(crate::Corruption::RangeKeptChanging { tree: tree.name.to_string(), attempts }.into())
    }
}

/// Both trees' structure latches, taken in tree-id order (returned as (tree, garbage)).
fn latch_both<'a>(tree: &'a TreeCore, garbage: &'a TreeCore) -> (Exclusive<'a>, Exclusive<'a>) {
    assert_ne!(tree.id, garbage.id, "the garbage tree is never cut");
    if tree.id < garbage.id {
        let g = tree.exclusive();
        (g, garbage.exclusive())
    } else {
        let gg = garbage.exclusive();
        (tree.exclusive(), gg)
    }
}

impl DbInner {
    /// The cut's plan, and the out-of-line values of the entries it removes from the nodes
    /// it rewrites (those of detached subtrees are freed with their pages).
    fn plan_cut(
        &self,
        g: &Exclusive<'_>,
        env: crate::btree::Env<'_>,
        range: &Bounds,
        blobs: &mut Vec<BlobRef>,
    ) -> Result<CutPlan> {
        // The walk reads what the cut then changes: nothing else may change it in between.
        debug_assert!(self.writer_held(), "a cut planned outside its batch");
        let tagged = self.blobs.get().is_some();
        g.plan_cut(env, range, &mut |v| {
            if tagged {
                blobs.extend(super::blob_state::blob_of(v)?);
            }
            Ok(())
        })
    }

    /// The most log bytes carrying out `plan` takes, with `blobs` freed and `then` done.
    fn cut_log_bytes(&self, plan: &CutPlan, blobs: usize, tree: &Tree, then: Then) -> u64 {
        // `plan_cut`'s hand-over: untagged values name no blobs to free.
        debug_assert!(blobs == 0 || self.blobs.get().is_some(), "{blobs} blobs without a space");
        let extents = match self.blobs.get() {
            Some(_) => super::blob_state::release_log_bytes(blobs),
            None => 0,
        };
        let drop = match then {
            Then::Keep => 0,
            Then::DropTree => {
                crate::btree::FREE_RECORD_BYTES_MAX + CATALOG_DELETE_BYTES + tree.name.len() as u64
            }
        };
        plan.log_bytes_max() + garbage::record_log_bytes(plan.detached().count()) + extents + drop
    }

    #[allow(clippy::too_many_arguments)]
    fn execute_cut(
        &self,
        g: &Exclusive<'_>,
        garbage: &Exclusive<'_>,
        env: crate::btree::Env<'_>,
        plan: CutPlan,
        blobs: &[BlobRef],
        tree: &Tree,
        then: Then,
    ) -> Result<()> {
        debug_assert!(self.writer_held(), "a cut outside its batch");
        // `latch_both`'s hand-over: the cut tree and the garbage tree, each latched once.
        assert_ne!(tree.core.id, super::catalog::CATALOG_TREE_ID, "the catalog is never cut");
        let detached: Vec<_> = plan.detached().collect();
        g.execute_cut(env, plan)?;
        garbage::record(garbage, env, tree.core.id, detached.into_iter())?;
        for r in blobs {
            self.release_blob(r)?;
        }
        if then == Then::DropTree {
            // The cut left the root an empty leaf: it goes as well, then the name.
            let root = env.pool.write(tree.core.root)?;
            env.alloc.free(env.logger, root);
            let found = self.catalog.delete(env, tree.name.as_bytes())?;
            if !found {
                let tree = tree.name.to_string();
                return Err(crate::Corruption::NotInCatalog { tree }.into());
            }
            g.mark_dropped();
        }
        Ok(())
    }
}
