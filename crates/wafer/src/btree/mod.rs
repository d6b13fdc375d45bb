//! B+tree over buffer-pool pages. Root page ids never change (a root split moves the root's
//! contents into new children), so the catalog records a root once.
//!
//! Concurrency: each tree has a structure latch (`smo`). Writes hold it shared: inner nodes
//! cannot change then, so a descent latches one node at a time (shared) and a leaf write
//! latches the leaf exclusive; leaf writers of a tree run in parallel. A structure
//! modification (split, removal of an empty node) drops everything and redoes the operation
//! holding the structure latch exclusive. Batches hold the latches of all their trees exclusive.
//! Point lookups take no latch (`lookup.rs`): they validate page versions and the tree's
//! structure version (odd while an `Exclusive` lives) instead, and latch only when that keeps
//! failing or a page must be read.
mod lookup;
mod range;
mod scan;
mod smo;
mod structure;
mod types;

pub use range::{reclaim_page, CutPlan, FREE_RECORD_BYTES_MAX, IMAGE_RECORD_BYTES_MAX};
pub use scan::{AtEpoch, Bounds};
pub use types::{Env, Exclusive, TreeCore, DEPTH_MAX};
/// Bound checks shared with the iterators.
pub mod scan_bounds {
    pub use super::scan::{above_lo, below_hi};
}

use crate::alloc::stamp;
use crate::buffer::PageRef;
use crate::page::{self, node, PageChange, PageId, PageKind};
use crate::{Error, Result};
use std::sync::{RwLock, RwLockReadGuard};

impl TreeCore {
    pub fn new(id: u32, root: PageId) -> TreeCore {
        // Page 0 is the superblock: a root there would format it over.
        assert_ne!(root, page::meta::META_PAGE_ID, "tree {id} rooted at the superblock");
        TreeCore {
            id,
            root,
            smo: RwLock::new(()),
            structure: Default::default(),
            dropped: Default::default(),
        }
    }

    /// Err([`Error::TreeDropped`]) once the tree is dropped. Writers check it under the
    /// structure latch, which the drop held exclusive, so none writes into freed pages.
    pub fn check_live(&self) -> Result<()> {
        // `root` is a public field: a handle re-rooted at the superblock would write over it.
        debug_assert_ne!(self.root, page::meta::META_PAGE_ID, "tree {} at the superblock", self.id);
        if self.dropped.load(std::sync::atomic::Ordering::Acquire) {
            return Err(Error::TreeDropped(format!("#{}", self.id)));
        }
        Ok(())
    }

    pub fn shared(&self) -> RwLockReadGuard<'_, ()> {
        let g = self.smo.read().unwrap_or_else(|e| e.into_inner());
        // Paired with `Exclusive`'s field order: its structure change ends before its latch
        // goes, so no change is open once the latch is ours.
        assert!(self.structure.begin().is_some(), "a structure change outlived its latch");
        g
    }
    pub fn exclusive(&self) -> Exclusive<'_> {
        let g = self.smo.write().unwrap_or_else(|e| e.into_inner());
        let x = Exclusive { core: self, _change: self.structure.change(), _g: g };
        // Paired with `lookup_optimistic`: no optimistic lookup validates while `x` lives.
        debug_assert!(self.structure.begin().is_none(), "an exclusive latch lookups ignore");
        x
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
        // Paired with the pool, whose reads verify the page's header names the page asked for.
        assert_eq!(page::page_id(p), pid, "tree {} was handed another page", self.id);
        Ok(kind.unwrap_or(PageKind::Leaf))
    }

    /// The leaf covering `key`, latched shared.
    fn leaf_read<'p>(&self, env: Env<'p>, key: &[u8]) -> Result<PageRef<'p>> {
        let leaf = self.descend_key(key, |pid| env.pool.read(pid).map(Some))?;
        let leaf = leaf.ok_or(crate::Corruption::NoPage { op: "descent" })?;
        // Callers search and write it as a leaf (`descend_key` returns only at one).
        assert_eq!(page::kind(leaf.bytes()), Some(PageKind::Leaf), "a descent ended at a non-leaf");
        Ok(leaf)
    }

    /// The leaf covering `key`, latched shared, if every page on the way is in the pool
    /// (Ok(None) otherwise, without any device read).
    fn leaf_cached<'p>(&self, env: Env<'p>, key: &[u8]) -> Result<Option<PageRef<'p>>> {
        let leaf = self.descend_key(key, |pid| env.pool.read_cached(pid))?;
        if let Some(g) = &leaf {
            assert_eq!(
                page::kind(g.bytes()),
                Some(PageKind::Leaf),
                "a descent ended at a non-leaf"
            );
        }
        Ok(leaf)
    }

    /// Root-to-leaf descent latching one node at a time with `fetch` (None: stop there).
    fn descend_key<'p>(
        &self,
        key: &[u8],
        fetch: impl Fn(PageId) -> Result<Option<PageRef<'p>>>,
    ) -> Result<Option<PageRef<'p>>> {
        let mut pid = self.root;
        for _ in 0..DEPTH_MAX {
            let Some(g) = fetch(pid)? else { return Ok(None) };
            if self.check_page(pid, g.bytes())? == PageKind::Leaf {
                return Ok(Some(g));
            }
            let child = node::child_at_pos(g.bytes(), node::child_pos_for(g.bytes(), key));
            // No state of the tree, not even a stale page's, has a node name itself (a split
            // gives its parts new pages): a self-loop is a bug, not a cycle DEPTH_MAX catches.
            assert_ne!(child, pid, "inner node {pid} names itself as a child");
            pid = child;
        }
        Err(self.too_deep())
    }

    /// The leaf for a write: read from the device if need be, or (`cached_only`) only if every
    /// page on the way is in the pool.
    fn leaf_for_write<'p>(
        &self,
        env: Env<'p>,
        key: &[u8],
        cached_only: bool,
    ) -> Result<Option<PageRef<'p>>> {
        // The caller holds the structure latch (shared), so the leaf stays the key's leaf
        // between this descent and its write latch. `try_write` fails while anyone holds it.
        debug_assert!(self.smo.try_write().is_err(), "a leaf write without the structure latch");
        if cached_only {
            self.leaf_cached(env, key)
        } else {
            self.leaf_read(env, key).map(Some)
        }
    }

    fn too_deep(&self) -> Error {
        // Every descent starts at `root`; one rooted at the superblock reads no tree at all.
        debug_assert_ne!(self.root, page::meta::META_PAGE_ID, "tree {} at the superblock", self.id);
        crate::Corruption::TreeTooDeep { tree: self.id, max: DEPTH_MAX }.into()
    }

    pub fn get(&self, env: Env<'_>, key: &[u8]) -> Result<Option<Vec<u8>>> {
        let value = self.get_with(env, key, <[u8]>::to_vec)?;
        // Paired with `leaf_put`'s bound: a longer value was copied out of something else.
        assert!(value.as_ref().is_none_or(|v| v.len() <= node::MAX_VALUE_BYTES), "value length");
        Ok(value)
    }

    /// Brings the pages on the way to `key`'s leaf into the pool, holding each latch only for
    /// its read. Writers call it outside the writer mutex (WAL mode applies batches one at a
    /// time under it) after a write under the mutex found a page missing (`put_cached`): the
    /// device read of a leaf outside the pool then overlaps with other writers' work instead of
    /// stalling all of them, and the retry finds its leaf cached. Best effort: an error is left
    /// to the write, which meets it again.
    ///
    /// Without the structure latch: a split of the writer holding the mutex would wait for
    /// this read otherwise. Each node is still read under its frame latch, so the descent sees
    /// whole nodes; a concurrent split can only send it to a neighbour of the leaf, or to a
    /// freed page (an error, ignored), which costs a useless read, never a wrong result.
    pub fn prefetch(&self, env: Env<'_>, key: &[u8]) {
        // Callers prefetch for a key they write, which `leaf_put` bounds: a longer one is not a
        // key but bytes taken from somewhere else.
        debug_assert!(key.len() <= node::MAX_KEY_BYTES, "prefetch of a {}-byte key", key.len());
        let _ = self.leaf_read(env, key);
    }

    /// Fast path under the shared structure latch. `keep_old`: `Done` carries the value the
    /// key held, read under the same leaf latch as the put.
    fn try_put_shared(
        &self,
        env: Env<'_>,
        key: &[u8],
        value: &[u8],
        cached_only: bool,
        keep_old: bool,
    ) -> Result<PutShared> {
        let _s = self.shared();
        self.check_live()?;
        let Some(leaf) = self.leaf_for_write(env, key, cached_only)? else {
            return Ok(PutShared::NotCached);
        };
        let pid = leaf.pid();
        drop(leaf);
        // Inner nodes are frozen while we hold the structure latch, so `pid` is still the leaf.
        let mut g = env.pool.write(pid)?;
        let kind = self.check_page(pid, g.bytes())?;
        // Only a root split turns a leaf inner, and it runs under the exclusive latch.
        assert_eq!(kind, PageKind::Leaf, "leaf {pid} changed kind under the shared latch");
        let needed = node::entry_bytes(PageKind::Leaf, key.len(), value.len());
        if node::free_bytes(g.bytes()) < needed && node::search(g.bytes(), key).is_err() {
            return Ok(PutShared::Full);
        }
        // Searched only when asked for: a plain put (the hot path) searches in `leaf_put` alone.
        let old = keep_old
            .then(|| node::search(g.bytes(), key).ok())
            .flatten()
            .map(|i| node::value(g.bytes(), i).to_vec());
        if !node::leaf_put(g.bytes_mut(), key, value) {
            return Ok(PutShared::Full);
        }
        debug_assert!(node::search(g.bytes(), key).is_ok(), "a put that fit left no entry");
        let change = PageChange::LeafPut { tree_id: self.id, key, value };
        stamp(env.logger, &mut g, &change);
        Ok(PutShared::Done(old))
    }

    /// As [`TreeCore::put_cached`], but never splitting and handing back the value the key
    /// held: the caller frees what that value named (a blob), and only the leaf latch that
    /// changed the key can say what it replaced. A full leaf is `Full`, nothing changed: the
    /// caller replaces under the exclusive latch.
    pub fn replace_shared(
        &self,
        env: Env<'_>,
        key: &[u8],
        value: &[u8],
        cached_only: bool,
    ) -> Result<Replaced> {
        // As in `put`: sizes are checked, with typed errors, before any tree sees them.
        assert!(key.len() <= node::MAX_KEY_BYTES && value.len() <= node::MAX_VALUE_BYTES);
        Ok(match self.try_put_shared(env, key, value, cached_only, true)? {
            PutShared::Done(old) => Replaced::Done(old),
            PutShared::Full => Replaced::Full,
            PutShared::NotCached => Replaced::NotCached,
        })
    }

    pub fn put(&self, env: Env<'_>, key: &[u8], value: &[u8]) -> Result<()> {
        // The database refuses larger ones with typed errors before any tree sees them.
        assert!(key.len() <= node::MAX_KEY_BYTES && value.len() <= node::MAX_VALUE_BYTES);
        match self.try_put_shared(env, key, value, false, false)? {
            PutShared::Done(_) => Ok(()),
            PutShared::Full | PutShared::NotCached => self.exclusive().put(env, key, value),
        }
    }

    /// As [`TreeCore::put`] when the pages down to `key`'s leaf are in the pool; Ok(false),
    /// with nothing changed and nothing read, when one is not (the caller reads it with
    /// [`TreeCore::prefetch`] outside its mutex and retries). A split may still read.
    pub fn put_cached(&self, env: Env<'_>, key: &[u8], value: &[u8]) -> Result<bool> {
        // As in `put`: sizes are checked, with typed errors, before any tree sees them.
        assert!(key.len() <= node::MAX_KEY_BYTES && value.len() <= node::MAX_VALUE_BYTES);
        match self.try_put_shared(env, key, value, true, false)? {
            PutShared::Done(_) => Ok(true),
            PutShared::NotCached => Ok(false),
            PutShared::Full => self.exclusive().put(env, key, value).map(|()| true),
        }
    }

    /// Ok(Some((found, leaf_now_underfull))); Ok(None) when `cached_only` and a page on the way
    /// is not in the pool.
    fn delete_shared(
        &self,
        env: Env<'_>,
        key: &[u8],
        cached_only: bool,
    ) -> Result<Option<(bool, bool)>> {
        let _s = self.shared();
        self.check_live()?;
        let Some(leaf) = self.leaf_for_write(env, key, cached_only)? else {
            return Ok(None);
        };
        let pid = leaf.pid();
        drop(leaf);
        let mut g = env.pool.write(pid)?;
        let kind = self.check_page(pid, g.bytes())?;
        assert_eq!(kind, PageKind::Leaf, "leaf {pid} changed kind under the shared latch");
        if node::search(g.bytes(), key).is_err() {
            return Ok(Some((false, false)));
        }
        let removed = node::leaf_delete(g.bytes_mut(), key);
        assert!(removed);
        stamp(env.logger, &mut g, &PageChange::LeafDelete { tree_id: self.id, key });
        let underfull = pid != self.root && node::used_bytes(g.bytes()) < smo::UNDERFULL_BYTES;
        Ok(Some((true, underfull)))
    }

    pub fn delete(&self, env: Env<'_>, key: &[u8]) -> Result<bool> {
        // The database refuses longer keys with a typed error first (no leaf holds one).
        assert!(key.len() <= node::MAX_KEY_BYTES, "a delete of a {}-byte key", key.len());
        self.delete_maybe_cached(env, key, false)?
            .ok_or_else(|| crate::Corruption::NoPage { op: "delete" }.into())
    }

    /// As [`TreeCore::delete`] when the pages down to `key`'s leaf are in the pool; Ok(None),
    /// with nothing changed and nothing read, when one is not (as [`TreeCore::put_cached`]).
    pub fn delete_cached(&self, env: Env<'_>, key: &[u8]) -> Result<Option<bool>> {
        // As in `delete`: the database refuses longer keys with a typed error first.
        assert!(key.len() <= node::MAX_KEY_BYTES, "a delete of a {}-byte key", key.len());
        self.delete_maybe_cached(env, key, true)
    }

    fn delete_maybe_cached(
        &self,
        env: Env<'_>,
        key: &[u8],
        cached_only: bool,
    ) -> Result<Option<bool>> {
        let Some((found, underfull)) = self.delete_shared(env, key, cached_only)? else {
            return Ok(None);
        };
        // Paired with `delete_shared`: only a delete that removed an entry can underfill a leaf.
        assert!(found || !underfull, "an underfull leaf from a delete that found nothing");
        if underfull {
            // Another thread may refill the leaf before we get here; the exclusive path rechecks.
            self.exclusive().rebalance_leaf(env, key)?;
        }
        Ok(Some(found))
    }
}

/// What [`TreeCore::replace_shared`] did.
#[derive(Debug)]
pub enum Replaced {
    /// The key holds the new value; the value it held before, if any.
    Done(Option<Vec<u8>>),
    /// The leaf has no room: nothing changed, the exclusive path follows.
    Full,
    /// `cached_only` and a page on the way is not in the pool: nothing changed.
    NotCached,
}

/// What the shared-latch put did.
enum PutShared {
    /// Done; the old value when asked for.
    Done(Option<Vec<u8>>),
    /// The leaf has no room: a split under the exclusive latch follows.
    Full,
    /// `cached_only` and a page on the way is not in the pool: nothing changed.
    NotCached,
}

impl Exclusive<'_> {
    /// The entries of the tree's first leaf (all of them: at most a page's worth).
    pub fn first_leaf_entries(&self, env: Env<'_>) -> Result<Vec<node::Entry>> {
        let (_, leaf) = self.path_to_leaf(env, b"")?;
        let g = env.pool.read(leaf)?;
        // The exclusive latch keeps the leaf `path_to_leaf` found a leaf until we read it.
        assert_eq!(page::kind(g.bytes()), Some(PageKind::Leaf), "page {leaf} is no longer a leaf");
        Ok(node::entries(g.bytes()))
    }

    /// Marks the tree dropped (its pages freed by the caller's batch): see
    /// [`TreeCore::check_live`].
    pub fn mark_dropped(&self) {
        let was = self.core.dropped.swap(true, std::sync::atomic::Ordering::Release);
        // The drop checked `check_live` under this same latch: a second drop frees pages twice.
        assert!(!was, "tree {} dropped twice", self.core.id);
    }

    pub fn get(&self, env: Env<'_>, key: &[u8]) -> Result<Option<Vec<u8>>> {
        let g = self.core.leaf_read(env, key)?;
        assert_eq!(page::kind(g.bytes()), Some(PageKind::Leaf), "a lookup searched an inner node");
        Ok(node::search(g.bytes(), key).ok().map(|i| node::value(g.bytes(), i).to_vec()))
    }

    pub fn delete(&self, env: Env<'_>, key: &[u8]) -> Result<bool> {
        self.core.check_live()?;
        let pid = self.core.leaf_read(env, key)?.pid();
        let mut g = env.pool.write(pid)?;
        if node::search(g.bytes(), key).is_err() {
            return Ok(false);
        }
        let removed = node::leaf_delete(g.bytes_mut(), key);
        // The search above found it, under the write latch: a delete that misses logs a lie.
        assert!(removed, "a found key was not deleted");
        stamp(env.logger, &mut g, &PageChange::LeafDelete { tree_id: self.core.id, key });
        let underfull = pid != self.core.root && node::used_bytes(g.bytes()) < smo::UNDERFULL_BYTES;
        drop(g);
        if underfull {
            self.rebalance_leaf(env, key)?;
        }
        Ok(true)
    }
}
