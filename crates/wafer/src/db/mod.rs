//! The public API: a database of named trees on one device.
//!
//! `Db` is `Send + Sync` and cheap to share (`Arc` inside); `Tree` handles are clonable.
//! Without a WAL (next issue) data is durable only after [`Db::close`]; dropping a `Db` without
//! closing it behaves like a crash.
mod batch;
mod catalog;
mod iter;
mod mode;

pub use batch::{BatchOp, WriteBatch};
pub use iter::Iter;

use crate::alloc::{stamp_image, AllocState, Allocator};
use crate::btree::{Env, Exclusive, TreeCore};
use crate::buffer::{BufferPool, PoolStats};
use crate::device::{Counted, Device, FileDevice, WritePurpose};
use crate::options::Options;
use crate::page::meta::{Meta, META_PAGE_ID};
use crate::page::node::{MAX_KEY_BYTES, MAX_VALUE_BYTES};
use crate::page::{NoopLogger, PageKind, PageLogger, PAGE_SIZE};
use crate::stats::{IoSnapshot, IoStats};
use crate::{Error, Result};
use std::collections::HashMap;
use std::ops::{Bound, RangeBounds};
use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::sync::{Arc, RwLock};

#[derive(Debug)]
struct DbInner {
    options: Options,
    pool: BufferPool,
    logger: Arc<dyn PageLogger>,
    alloc: Allocator,
    catalog: TreeCore,
    trees: RwLock<HashMap<String, Arc<TreeCore>>>,
    /// Changed only under the `trees` write lock.
    next_tree_id: AtomicU32,
    closed: AtomicBool,
    poisoned: AtomicBool,
    /// Per-purpose I/O counters when the database counted its own device (`Db::open(path)`).
    io_stats: Option<Arc<IoStats>>,
}

#[derive(Debug, Clone)]
pub struct Db {
    inner: Arc<DbInner>,
}

/// A named tree. Operations on a closed database return [`Error::Closed`].
#[derive(Debug, Clone)]
pub struct Tree {
    db: Arc<DbInner>,
    core: Arc<TreeCore>,
    name: Arc<str>,
}

#[derive(Debug, Clone, Copy, PartialEq)]
pub struct DbStats {
    pub pool: PoolStats,
    /// Pages in use, superblock and catalog included.
    pub allocated_pages: u64,
    pub free_pages: u64,
    pub high_water_pages: u64,
    pub page_capacity: u64,
    pub trees: usize,
    pub last_lsn: u64,
    /// Device I/O by purpose, for databases opened with [`Db::open`] (which wraps its file in
    /// [`Counted`]); callers of `open_on` wrap and read their own device.
    pub io: Option<IoSnapshot>,
    /// Zones, page map and GC figures in the out-of-place write mode.
    pub out_of_place: Option<crate::oop::OutOfPlaceStats>,
}

fn check_key(key: &[u8]) -> Result<()> {
    if key.len() > MAX_KEY_BYTES {
        return Err(Error::KeyTooLarge { len: key.len(), max: MAX_KEY_BYTES });
    }
    Ok(())
}
fn check_value(value: &[u8]) -> Result<()> {
    if value.len() > MAX_VALUE_BYTES {
        return Err(Error::ValueTooLarge { len: value.len(), max: MAX_VALUE_BYTES });
    }
    Ok(())
}

impl DbInner {
    fn env(&self) -> Env<'_> {
        Env {
            pool: &self.pool,
            logger: &*self.logger,
            alloc: &self.alloc,
            poisoned: &self.poisoned,
        }
    }
    fn check_open(&self) -> Result<()> {
        if self.closed.load(Ordering::Acquire) {
            return Err(Error::Closed);
        }
        Ok(())
    }
    fn check_writable(&self) -> Result<()> {
        self.check_open()?;
        if self.poisoned.load(Ordering::Relaxed) || self.pool.is_poisoned() {
            return Err(Error::Poisoned);
        }
        Ok(())
    }
    /// Marks the DB poisoned when an error leaves state unknown (not for clean refusals).
    fn poison_unless_clean<T>(&self, r: Result<T>) -> Result<T> {
        if let Err(e) = &r {
            let clean = matches!(
                e,
                Error::KeyTooLarge { .. } | Error::ValueTooLarge { .. } | Error::OutOfSpace(_)
            );
            if !clean {
                self.poisoned.store(true, Ordering::Relaxed);
            }
        }
        r
    }
}

impl Db {
    /// Opens or creates a database in the file at `path` (a [`FileDevice`] driven as
    /// `options.file` says, counted by a [`Counted`] wrapper). The device spans the larger of the
    /// file's size and `options.file_capacity_bytes`.
    pub fn open(path: impl AsRef<Path>, options: Options) -> Result<Db> {
        let path = path.as_ref();
        let existing_bytes = std::fs::metadata(path).map(|m| m.len()).unwrap_or(0);
        let block = PAGE_SIZE as u64;
        let capacity_bytes =
            (existing_bytes / block).max(options.file_capacity_bytes / block) * block;
        let file = FileDevice::open(path, capacity_bytes, options.file)?;
        let stats = Arc::new(IoStats::default());
        let device = Arc::new(Counted::new(file, stats.clone()));
        Db::open_inner(device, options, None, Some(stats))
    }

    /// Opens the database on `device`, formatting it if page 0 has never been written.
    pub fn open_on(device: Arc<dyn Device>, options: Options) -> Result<Db> {
        Db::open_with_logger(device, options, None)
    }

    /// As [`Db::open_on`], with a page logger (the WAL) instead of the no-op one.
    pub fn open_with_logger(
        device: Arc<dyn Device>,
        options: Options,
        logger: Option<Arc<dyn PageLogger>>,
    ) -> Result<Db> {
        Db::open_inner(device, options, logger, None)
    }

    fn open_inner(
        device: Arc<dyn Device>,
        options: Options,
        logger: Option<Arc<dyn PageLogger>>,
        io_stats: Option<Arc<IoStats>>,
    ) -> Result<Db> {
        if !options.data_offset_bytes.is_multiple_of(PAGE_SIZE as u64) {
            return Err(Error::InvalidOptions("data_offset_bytes must be 4 KiB aligned".into()));
        }
        let store = mode::open_store(device, &options)?;
        let page_capacity = store.page_capacity();
        if page_capacity < 4 {
            return Err(Error::InvalidOptions(format!(
                "device holds {page_capacity} pages; a database needs at least 4"
            )));
        }
        let mut buf = Box::new([0u8; PAGE_SIZE]);
        store.read_page(META_PAGE_ID, &mut buf)?;
        let fresh = buf.iter().all(|b| *b == 0);
        let meta = if fresh {
            Meta {
                write_mode: options.write_mode as u8,
                catalog_root: catalog::CATALOG_ROOT,
                high_water: 1, // The superblock itself.
                free_head: 0,
                free_count: 0,
                last_lsn: 0,
                next_tree_id: catalog::CATALOG_TREE_ID + 1,
                page_capacity,
                write_clock: 0,
            }
        } else {
            let meta = Meta::decode(&buf)
                .map_err(|e| Error::Corrupt(format!("superblock (page 0): {e}")))?;
            if meta.high_water > page_capacity {
                return Err(Error::Corrupt(format!(
                    "superblock says {} pages are in use but the device holds {page_capacity}",
                    meta.high_water
                )));
            }
            if meta.write_mode != options.write_mode as u8 {
                return Err(Error::InvalidOptions(format!(
                    "database uses write mode {}, options ask for {:?}",
                    meta.write_mode, options.write_mode
                )));
            }
            meta
        };
        let logger = logger.unwrap_or_else(|| Arc::new(NoopLogger::new(meta.last_lsn)));
        let pool = BufferPool::new(
            store,
            options.buffer_pool_bytes,
            options.eviction_batch_pages,
            meta.write_clock,
            logger.clone(),
        )?;
        let alloc = Allocator::new(
            AllocState {
                high_water: meta.high_water,
                free_head: meta.free_head,
                free_count: meta.free_count,
            },
            page_capacity,
        );
        let inner = DbInner {
            options,
            pool,
            logger,
            alloc,
            catalog: TreeCore::new(catalog::CATALOG_TREE_ID, meta.catalog_root),
            trees: RwLock::new(HashMap::new()),
            next_tree_id: AtomicU32::new(meta.next_tree_id),
            closed: AtomicBool::new(false),
            poisoned: AtomicBool::new(false),
            io_stats,
        };
        if fresh {
            let env = inner.env();
            let mut g =
                env.alloc.allocate_one(env.pool, PageKind::Leaf, catalog::CATALOG_TREE_ID)?;
            assert_eq!(g.pid(), catalog::CATALOG_ROOT);
            stamp_image(env.logger, &mut g);
        }
        let db = Db { inner: Arc::new(inner) };
        db.load_catalog()?;
        Ok(db)
    }

    fn load_catalog(&self) -> Result<()> {
        let inner = &self.inner;
        let mut map = HashMap::new();
        let all = crate::btree::Bounds { lo: Bound::Unbounded, hi: Bound::Unbounded };
        let mut it = Iter::new_core(inner.clone(), &inner.catalog, all);
        for _ in 0..=inner.pool.page_capacity() * 64 {
            let Some(entry) = it.next_entry() else { break };
            let (name, value) = entry?;
            let (id, root) = catalog::decode(&value)
                .map_err(|e| Error::Corrupt(format!("catalog entry {name:?}: {e}")))?;
            let name = String::from_utf8(name)
                .map_err(|_| Error::Corrupt("catalog holds a non-UTF-8 tree name".into()))?;
            map.insert(name, Arc::new(TreeCore::new(id, root)));
        }
        *inner.trees.write().unwrap_or_else(|e| e.into_inner()) = map;
        Ok(())
    }

    pub fn options(&self) -> &Options {
        &self.inner.options
    }

    /// The tree called `name`, created (and recorded in the catalog) on first use.
    pub fn tree(&self, name: &str) -> Result<Tree> {
        let inner = &self.inner;
        inner.check_open()?;
        catalog::check_name(name)?;
        let found = inner.trees.read().unwrap_or_else(|e| e.into_inner()).get(name).cloned();
        if let Some(core) = found {
            return Ok(Tree { db: inner.clone(), core, name: name.into() });
        }
        let mut map = inner.trees.write().unwrap_or_else(|e| e.into_inner());
        if let Some(core) = map.get(name) {
            return Ok(Tree { db: inner.clone(), core: core.clone(), name: name.into() });
        }
        inner.check_writable()?;
        let env = inner.env();
        let id = inner.next_tree_id.load(Ordering::Relaxed);
        let root = {
            let mut g = env.alloc.allocate_one(env.pool, PageKind::Leaf, id)?;
            stamp_image(env.logger, &mut g);
            g.pid()
        };
        let r = inner.catalog.put(env, name.as_bytes(), &catalog::encode(id, root));
        if let Err(e) = inner.poison_unless_clean(r) {
            // The catalog did not take the tree (device full): give its root page back.
            if let Ok(g) = env.pool.write(root) {
                env.alloc.free(env.logger, g);
            }
            return Err(e);
        }
        inner.next_tree_id.store(id + 1, Ordering::Relaxed);
        let core = Arc::new(TreeCore::new(id, root));
        map.insert(name.to_string(), core.clone());
        Ok(Tree { db: inner.clone(), core, name: name.into() })
    }

    /// Names of all trees, sorted.
    pub fn tree_names(&self) -> Result<Vec<String>> {
        self.inner.check_open()?;
        let map = self.inner.trees.read().unwrap_or_else(|e| e.into_inner());
        let mut names: Vec<String> = map.keys().cloned().collect();
        names.sort();
        Ok(names)
    }

    /// Applies every operation of `batch`; readers see none or all of them. Sizes and names are
    /// checked before anything changes. A failure while applying (I/O, device full) poisons
    /// the database.
    pub fn write(&self, batch: &WriteBatch) -> Result<()> {
        let inner = &self.inner;
        inner.check_writable()?;
        for op in &batch.ops {
            catalog::check_name(op.tree())?;
            match op {
                BatchOp::Put { key, value, .. } => {
                    check_key(key)?;
                    check_value(value)?;
                }
                BatchOp::Delete { key, .. } => check_key(key)?,
            }
        }
        let mut trees: Vec<Tree> = Vec::new();
        let mut index: HashMap<&str, usize> = HashMap::new();
        for op in &batch.ops {
            if !index.contains_key(op.tree()) {
                index.insert(op.tree(), trees.len());
                trees.push(self.tree(op.tree())?);
            }
        }
        // Latch in tree-id order so two batches cannot deadlock.
        let mut order: Vec<usize> = (0..trees.len()).collect();
        order.sort_by_key(|i| trees[*i].core.id);
        let mut guards: Vec<Option<Exclusive<'_>>> = (0..trees.len()).map(|_| None).collect();
        for i in order {
            guards[i] = Some(trees[i].core.exclusive());
        }
        inner.check_writable()?;
        let env = inner.env();
        for op in &batch.ops {
            let Some(g) = index.get(op.tree()).and_then(|i| guards[*i].as_ref()) else {
                return Err(Error::Corrupt("batch tree vanished".into()));
            };
            let r = match op {
                BatchOp::Put { key, value, .. } => g.put(env, key, value),
                BatchOp::Delete { key, .. } => g.delete(env, key).map(|_| ()),
            };
            if let Err(e) = r {
                // Earlier operations of the batch are applied: state is no longer all-or-none.
                inner.poisoned.store(true, Ordering::Relaxed);
                return Err(e);
            }
        }
        Ok(())
    }

    pub fn stats(&self) -> DbStats {
        let inner = &self.inner;
        let a = inner.alloc.state();
        DbStats {
            pool: inner.pool.stats(),
            allocated_pages: a.high_water - a.free_count,
            free_pages: a.free_count,
            high_water_pages: a.high_water,
            page_capacity: inner.pool.page_capacity(),
            trees: inner.trees.read().unwrap_or_else(|e| e.into_inner()).len(),
            last_lsn: inner.logger.last_lsn(),
            io: inner.io_stats.as_ref().map(|s| s.snapshot()),
            out_of_place: inner.pool.store().out_of_place_stats(),
        }
    }

    /// Out-of-place mode: runs DB GC now - until the free-zone target is met, or with
    /// `every_zone` on every zone holding an invalid page - and returns the cycles run. In place
    /// there is nothing to collect (0).
    pub fn collect_garbage(&self, every_zone: bool) -> Result<u32> {
        self.inner.check_writable()?;
        self.inner.pool.store().collect_garbage(every_zone)
    }

    /// Writes every dirty page and the superblock, and syncs: after `flush` returns, a reopen
    /// finds everything written so far. Waits for operations in flight and holds writers off
    /// meanwhile (a stop-the-world checkpoint; the WAL issue brings fuzzy checkpoints).
    pub fn flush(&self) -> Result<()> {
        let inner = &self.inner;
        inner.check_writable()?;
        let map = inner.trees.read().unwrap_or_else(|e| e.into_inner());
        let _catalog = inner.catalog.exclusive();
        let _trees: Vec<Exclusive<'_>> = map.values().map(|t| t.exclusive()).collect();
        inner.checkpoint()
    }

    /// Flushes as [`Db::flush`] and closes. Tree handles still around fail with
    /// [`Error::Closed`] afterwards. Dropping a `Db` without closing it writes nothing.
    pub fn close(self) -> Result<()> {
        let inner = &self.inner;
        if inner.closed.swap(true, Ordering::AcqRel) {
            return Err(Error::Closed);
        }
        let map = inner.trees.write().unwrap_or_else(|e| e.into_inner());
        let _catalog = inner.catalog.exclusive();
        let _trees: Vec<Exclusive<'_>> = map.values().map(|t| t.exclusive()).collect();
        if inner.poisoned.load(Ordering::Relaxed) || inner.pool.is_poisoned() {
            return Err(Error::Poisoned);
        }
        inner.checkpoint()
    }
}

impl DbInner {
    /// Dirty pages, sync, superblock, sync. Callers hold every tree's structure latch.
    fn checkpoint(&self) -> Result<()> {
        self.pool.flush_all(WritePurpose::UserCheckpoint)?;
        let store = self.pool.store();
        store.sync()?;
        store.checkpoint()?;
        let a = self.alloc.state();
        let meta = Meta {
            write_mode: self.options.write_mode as u8,
            catalog_root: self.catalog.root,
            high_water: a.high_water,
            free_head: a.free_head,
            free_count: a.free_count,
            last_lsn: self.logger.last_lsn(),
            next_tree_id: self.next_tree_id.load(Ordering::Relaxed),
            page_capacity: self.pool.page_capacity(),
            write_clock: self.pool.write_clock(),
        };
        let mut buf = Box::new([0u8; PAGE_SIZE]);
        meta.encode(&mut buf);
        store.write_batch(&[(META_PAGE_ID, &buf)], WritePurpose::Metadata)?;
        store.sync()
    }
}

fn owned_bound<K: AsRef<[u8]>>(b: Bound<&K>) -> Bound<Vec<u8>> {
    match b {
        Bound::Included(k) => Bound::Included(k.as_ref().to_vec()),
        Bound::Excluded(k) => Bound::Excluded(k.as_ref().to_vec()),
        Bound::Unbounded => Bound::Unbounded,
    }
}

/// The smallest key greater than every key starting with `prefix` (None: no such key).
fn prefix_end(prefix: &[u8]) -> Option<Vec<u8>> {
    let mut end = prefix.to_vec();
    while let Some(last) = end.pop() {
        if last < 0xff {
            end.push(last + 1);
            return Some(end);
        }
    }
    None
}

impl Tree {
    pub fn name(&self) -> &str {
        &self.name
    }

    pub fn get(&self, key: &[u8]) -> Result<Option<Vec<u8>>> {
        self.db.check_open()?;
        check_key(key)?;
        self.core.get(self.db.env(), key)
    }

    pub fn put(&self, key: &[u8], value: &[u8]) -> Result<()> {
        self.db.check_writable()?;
        check_key(key)?;
        check_value(value)?;
        let r = self.core.put(self.db.env(), key, value);
        self.db.poison_unless_clean(r)
    }

    /// Removes `key`; Ok(true) when it was present.
    pub fn delete(&self, key: &[u8]) -> Result<bool> {
        self.db.check_writable()?;
        check_key(key)?;
        let r = self.core.delete(self.db.env(), key);
        self.db.poison_unless_clean(r)
    }

    /// Entries with keys in `range`, ascending; `.rev()` for descending.
    pub fn range<K: AsRef<[u8]>, R: RangeBounds<K>>(&self, range: R) -> Iter {
        let bounds = crate::btree::Bounds {
            lo: owned_bound(range.start_bound()),
            hi: owned_bound(range.end_bound()),
        };
        Iter::new(self.clone(), bounds)
    }

    /// Every entry, ascending.
    pub fn iter(&self) -> Iter {
        let all = crate::btree::Bounds { lo: Bound::Unbounded, hi: Bound::Unbounded };
        Iter::new(self.clone(), all)
    }

    /// Entries whose key starts with `prefix`, ascending; `.rev()` for descending.
    pub fn prefix(&self, prefix: &[u8]) -> Iter {
        let hi = match prefix_end(prefix) {
            Some(end) => Bound::Excluded(end),
            None => Bound::Unbounded,
        };
        let bounds = crate::btree::Bounds { lo: Bound::Included(prefix.to_vec()), hi };
        Iter::new(self.clone(), bounds)
    }
}

#[cfg(test)]
mod tests {
    use super::prefix_end;

    #[test]
    fn prefix_end_carries_over_0xff() {
        assert_eq!(prefix_end(b"ab"), Some(b"ac".to_vec()));
        assert_eq!(prefix_end(&[1, 0xff]), Some(vec![2]));
        assert_eq!(prefix_end(&[0xff, 0xff]), None);
        assert_eq!(prefix_end(b""), None);
    }
}
