//! B+tree over buffer-pool pages. Root page ids never change (a root split moves the root's
//! contents into new children), so the catalog records a root once.
//!
//! Concurrency: each tree has a structure latch (`smo`). Point operations hold it shared: inner
//! nodes cannot change then, so a descent latches one node at a time (shared) and a leaf write
//! latches the leaf exclusive; readers and leaf writers of a tree run in parallel. A structure
//! modification (split, removal of an empty node) drops everything and redoes the operation
//! holding the structure latch exclusive. Batches hold the latches of all their trees exclusive.
mod scan;
mod smo;

pub use scan::{Bounds, ScanBatch};
/// Bound checks shared with the iterators.
pub mod scan_bounds {
    pub use super::scan::{above_lo, below_hi};
}

use crate::alloc::{stamp, Allocator};
use crate::buffer::{BufferPool, PageRef};
use crate::page::{self, node, PageChange, PageId, PageKind, PageLogger};
use crate::{Error, Result};
use std::sync::{RwLock, RwLockReadGuard, RwLockWriteGuard};

/// Deeper than any real tree (a corrupt pointer cycle ends here instead of looping forever).
pub const DEPTH_MAX: usize = 64;

/// What tree operations need from the database.
#[derive(Debug, Clone, Copy)]
pub struct Env<'a> {
    pub pool: &'a BufferPool,
    pub logger: &'a dyn PageLogger,
    pub alloc: &'a Allocator,
    /// Set when a failed structure change leaves a tree in an unknown state.
    pub poisoned: &'a std::sync::atomic::AtomicBool,
    /// `Options::append_split`: a key appended to a full leaf splits off alone.
    pub append_split: bool,
}

#[derive(Debug)]
pub struct TreeCore {
    pub id: u32,
    pub root: PageId,
    smo: RwLock<()>,
}

/// Proof that the caller holds a tree's structure latch exclusive.
#[derive(Debug)]
pub struct Exclusive<'a> {
    core: &'a TreeCore,
    _g: RwLockWriteGuard<'a, ()>,
}

impl TreeCore {
    pub fn new(id: u32, root: PageId) -> TreeCore {
        TreeCore { id, root, smo: RwLock::new(()) }
    }

    pub fn shared(&self) -> RwLockReadGuard<'_, ()> {
        self.smo.read().unwrap_or_else(|e| e.into_inner())
    }
    pub fn exclusive(&self) -> Exclusive<'_> {
        Exclusive { core: self, _g: self.smo.write().unwrap_or_else(|e| e.into_inner()) }
    }

    fn check_page(&self, pid: PageId, p: &page::PageBuf) -> Result<PageKind> {
        let kind = page::kind(p);
        if page::tree_id(p) != self.id
            || !matches!(kind, Some(PageKind::Leaf) | Some(PageKind::Inner))
        {
            return Err(Error::CorruptPage {
                page_id: pid,
                reason: format!(
                    "tree {} reached a page of tree {} kind {:?}",
                    self.id,
                    page::tree_id(p),
                    kind
                ),
            });
        }
        Ok(kind.unwrap_or(PageKind::Leaf))
    }

    /// The leaf covering `key`, latched shared.
    fn leaf_read<'p>(&self, env: Env<'p>, key: &[u8]) -> Result<PageRef<'p>> {
        let mut pid = self.root;
        for _ in 0..DEPTH_MAX {
            let g = env.pool.read(pid)?;
            if self.check_page(pid, g.bytes())? == PageKind::Leaf {
                return Ok(g);
            }
            pid = node::child_at_pos(g.bytes(), node::child_pos_for(g.bytes(), key));
        }
        Err(self.too_deep())
    }

    fn too_deep(&self) -> Error {
        Error::Corrupt(format!("tree {} is deeper than {DEPTH_MAX} levels (cycle?)", self.id))
    }

    pub fn get(&self, env: Env<'_>, key: &[u8]) -> Result<Option<Vec<u8>>> {
        self.get_with(env, key, <[u8]>::to_vec)
    }

    /// Calls `f` on the value of `key` in place (the leaf latched shared meanwhile): a lookup
    /// that allocates nothing.
    pub fn get_with<R>(
        &self,
        env: Env<'_>,
        key: &[u8],
        f: impl FnOnce(&[u8]) -> R,
    ) -> Result<Option<R>> {
        let _s = self.shared();
        let g = self.leaf_read(env, key)?;
        Ok(node::search(g.bytes(), key).ok().map(|i| f(node::value(g.bytes(), i))))
    }

    /// Brings the pages on the way to `key`'s leaf into the pool, holding each latch only for
    /// its read. Writers call it before the writer mutex (WAL mode applies batches one at a time
    /// under it): the device read of a leaf outside the pool then overlaps with other writers'
    /// work instead of stalling all of them, and the write under the mutex finds its leaf
    /// cached. Best effort: an error is left to the write, which meets it again.
    ///
    /// Without the structure latch: a split of the writer holding the mutex would wait for
    /// this read otherwise. Each node is still read under its frame latch, so the descent sees
    /// whole nodes; a concurrent split can only send it to a neighbour of the leaf, or to a
    /// freed page (an error, ignored), which costs a useless read, never a wrong result.
    pub fn prefetch(&self, env: Env<'_>, key: &[u8]) {
        let _ = self.leaf_read(env, key);
    }

    /// Fast path under the shared structure latch; Ok(false) when the leaf is full.
    fn try_put_shared(&self, env: Env<'_>, key: &[u8], value: &[u8]) -> Result<bool> {
        let _s = self.shared();
        let pid = self.leaf_read(env, key)?.pid();
        // Inner nodes are frozen while we hold the structure latch, so `pid` is still the leaf.
        let mut g = env.pool.write(pid)?;
        self.check_page(pid, g.bytes())?;
        let needed = node::entry_bytes(PageKind::Leaf, key.len(), value.len());
        if node::free_bytes(g.bytes()) < needed && node::search(g.bytes(), key).is_err() {
            return Ok(false);
        }
        if !node::leaf_put(g.bytes_mut(), key, value) {
            return Ok(false);
        }
        let change = PageChange::LeafPut { tree_id: self.id, key, value };
        stamp(env.logger, &mut g, &change);
        Ok(true)
    }

    pub fn put(&self, env: Env<'_>, key: &[u8], value: &[u8]) -> Result<()> {
        if self.try_put_shared(env, key, value)? {
            return Ok(());
        }
        let x = self.exclusive();
        x.put(env, key, value)
    }

    /// Ok((found, leaf_now_underfull)).
    fn delete_shared(&self, env: Env<'_>, key: &[u8]) -> Result<(bool, bool)> {
        let _s = self.shared();
        let pid = self.leaf_read(env, key)?.pid();
        let mut g = env.pool.write(pid)?;
        self.check_page(pid, g.bytes())?;
        if node::search(g.bytes(), key).is_err() {
            return Ok((false, false));
        }
        let removed = node::leaf_delete(g.bytes_mut(), key);
        assert!(removed);
        stamp(env.logger, &mut g, &PageChange::LeafDelete { tree_id: self.id, key });
        Ok((true, pid != self.root && node::used_bytes(g.bytes()) < smo::UNDERFULL_BYTES))
    }

    pub fn delete(&self, env: Env<'_>, key: &[u8]) -> Result<bool> {
        let (found, underfull) = self.delete_shared(env, key)?;
        if underfull {
            // Another thread may refill the leaf before we get here; the exclusive path rechecks.
            self.exclusive().rebalance_leaf(env, key)?;
        }
        Ok(found)
    }
}

impl Exclusive<'_> {
    pub fn core(&self) -> &TreeCore {
        self.core
    }

    pub fn get(&self, env: Env<'_>, key: &[u8]) -> Result<Option<Vec<u8>>> {
        let g = self.core.leaf_read(env, key)?;
        Ok(node::search(g.bytes(), key).ok().map(|i| node::value(g.bytes(), i).to_vec()))
    }

    pub fn delete(&self, env: Env<'_>, key: &[u8]) -> Result<bool> {
        let pid = self.core.leaf_read(env, key)?.pid();
        let mut g = env.pool.write(pid)?;
        if node::search(g.bytes(), key).is_err() {
            return Ok(false);
        }
        node::leaf_delete(g.bytes_mut(), key);
        stamp(env.logger, &mut g, &PageChange::LeafDelete { tree_id: self.core.id, key });
        let underfull = pid != self.core.root && node::used_bytes(g.bytes()) < smo::UNDERFULL_BYTES;
        drop(g);
        if underfull {
            self.rebalance_leaf(env, key)?;
        }
        Ok(true)
    }
}
