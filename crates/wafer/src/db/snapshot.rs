//! Snapshots: a read view of every tree as the last commit before it left them, while writers
//! go on. Taking one holds writers off for an instant (the writer mutex with a log, and every
//! tree's structure latch) and starts an epoch in the buffer pool's page versions
//! (`buffer/versions.rs`): from then on the first change to each page saves its bytes first.
//! Reads descend from the trees' roots through those versions (`btree::AtEpoch`).
//!
//! What a snapshot keeps is bounded: the saved pages (`Options::snapshot_bytes_max`, reported in
//! `DbStats::snapshots`), and the blobs that batches free while it lives, which stay unused (and
//! out of place, mapped) until it is dropped. A long-lived snapshot under heavy writes costs a
//! page copy in memory for every page written since it began; when the bound is reached, the
//! oldest snapshot expires and its reads fail with [`Error::SnapshotExpired`].
use super::bounds::{bounds_of, prefix_bounds};
use super::inner::Db;
use super::iter::Iter;
use super::view::At;
use crate::btree::{Bounds, Exclusive, TreeCore};
use crate::{ReadError, Result};
use std::collections::HashMap;
use std::ops::RangeBounds;
use std::sync::Arc;

/// A consistent read view over every tree ([`Db::snapshot`]). Cheap to clone; the view
/// (and what it keeps) lives until the last clone, tree and iterator of it is dropped.
#[derive(Debug, Clone)]
pub struct Snapshot {
    at: Arc<At>,
}

/// One tree as a snapshot sees it (empty if the tree did not exist then).
#[derive(Debug, Clone)]
pub struct SnapshotTree {
    at: Arc<At>,
    core: Option<Arc<TreeCore>>,
}

impl Db {
    /// A read view of every tree as the last commit left them; writes go on beside it. See
    /// the module docs for what a long-lived snapshot costs.
    pub fn snapshot(&self) -> Result<Snapshot, ReadError> {
        let inner = &self.inner;
        inner.check_open()?;
        // Lock order: `trees`, the writer mutex, then tree latches in id order.
        let map = inner.trees.read().unwrap_or_else(|e| e.into_inner());
        let _writer = inner.wal.as_ref().map(|_| inner.lock_writer());
        let mut cores: Vec<&Arc<TreeCore>> = map.values().collect();
        cores.sort_by_key(|c| c.id);
        let latches: Vec<Exclusive<'_>> = cores.iter().map(|c| c.exclusive()).collect();
        let epoch = inner.pool.versions().begin();
        let blob_pin = inner.blobs.get().map(|b| b.lock_space().pin());
        drop(latches);
        let trees: HashMap<String, Arc<TreeCore>> = map
            .iter()
            .filter(|(name, _)| !name.starts_with('\0'))
            .map(|(name, core)| (name.clone(), core.clone()))
            .collect();
        assert!(trees.len() <= map.len());
        Ok(Snapshot { at: Arc::new(At { db: inner.clone(), epoch, trees, blob_pin }) })
    }
}

impl Snapshot {
    /// The tree called `name` as it was (an empty view if it did not exist).
    pub fn tree(&self, name: &str) -> SnapshotTree {
        // `Db::snapshot` left the engine's own trees out: no NUL-led name finds a view.
        debug_assert!(!name.starts_with('\0') || !self.at.trees.contains_key(name), "{name:?}");
        SnapshotTree { at: self.at.clone(), core: self.at.trees.get(name).cloned() }
    }

    /// Names of the trees that existed, sorted.
    pub fn tree_names(&self) -> Vec<String> {
        let mut names: Vec<String> = self.at.trees.keys().cloned().collect();
        // `Db::snapshot` left the engine's own trees out: users never see their names.
        debug_assert!(names.iter().all(|n| !n.starts_with('\0')), "an engine tree named");
        names.sort();
        names
    }
}

impl SnapshotTree {
    pub fn get(&self, key: &[u8]) -> Result<Option<Vec<u8>>, ReadError> {
        self.at.db.check_open()?;
        // As `Tree::get`: a key no tree can hold is the caller's mistake, not an absent key.
        super::inner::check_key(key)?;
        let Some(core) = &self.core else { return Ok(None) };
        // Views are of named trees: the catalog's raw entries are no user's values.
        debug_assert_ne!(core.id, super::catalog::CATALOG_TREE_ID, "a snapshot of the catalog");
        match core.get_in(&self.at.nodes(), key)? {
            Some(stored) => self.at.resolve(stored).map(Some).map_err(ReadError::from),
            None => Ok(None),
        }
    }

    /// Entries with keys in `range`, ascending; `.rev()` for descending.
    pub fn range<K: AsRef<[u8]>, R: RangeBounds<K>>(&self, range: R) -> Iter {
        // A snapshot's trees come from its catalog: never the catalog itself (tree 0).
        debug_assert!(self.core.as_ref().is_none_or(|c| c.id != 0));
        self.iter_in(bounds_of(range))
    }

    pub fn iter(&self) -> Iter {
        // A snapshot's trees come from its catalog: never the catalog itself (tree 0).
        debug_assert!(self.core.as_ref().is_none_or(|c| c.id != 0));
        self.range::<&[u8], _>(..)
    }

    /// Entries whose key starts with `prefix`, ascending; `.rev()` for descending.
    pub fn prefix(&self, prefix: &[u8]) -> Iter {
        let bounds = prefix_bounds(prefix);
        // The hand-over: the iterator starts at the prefix itself, included.
        debug_assert!(matches!(&bounds.lo, std::ops::Bound::Included(p) if p.as_slice() == prefix));
        self.iter_in(bounds)
    }

    fn iter_in(&self, bounds: Bounds) -> Iter {
        // The view's tree is one the snapshot saw: its pages are kept at the snapshot's epoch.
        debug_assert!(self.core.as_ref().is_none_or(|c| self
            .at
            .trees
            .values()
            .any(|t| Arc::ptr_eq(t, c))));
        Iter::at(self.at.clone(), self.core.clone(), bounds)
    }
}
