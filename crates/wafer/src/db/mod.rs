//! The public API: a database of named trees on one device.
//!
//! `Db` is `Send + Sync` and cheap to share (`Arc` inside); `Tree` handles are clonable.
//! With a WAL ([`Db::open`], [`Db::open_on_devices`]) every batch is atomic and durable as its
//! [`Durability`] says, and a reopen after a crash recovers. Without one ([`Db::open_on`]) data
//! is durable only after [`Db::flush`] / [`Db::close`]. Dropping a `Db` without closing it
//! behaves like a crash either way.
mod backup;
mod batch;
mod blob_state;
mod blobs;
mod bounds;
pub(crate) mod catalog;
mod check;
mod checkpoint;
mod durability;
mod exclusive;
mod export;
pub(crate) mod garbage;
mod inner;
mod iter;
mod locks;
mod manage;
mod mode;
mod open;
mod snapshot;
mod startup;
mod txn;
mod view;

pub use backup::BackupTotals;
pub use batch::{BatchOp, WriteBatch};
pub use blob_state::BlobStats;
pub use blobs::ValueReader;
pub use check::{CheckReport, Violation};
pub use export::{Sample, METRIC_PREFIX};
pub use inner::{Db, Tree};
pub use iter::Iter;
pub use locks::TXN_LOCKS_MAX;
pub use snapshot::{Snapshot, SnapshotTree};
pub use txn::{Direction, Txn, DEFAULT_LOCK_TIMEOUT};

use crate::alloc::stamp_image;
use crate::btree::{Env, Exclusive, TreeCore};
use crate::buffer::PoolStats;
use crate::device::{Counted, Device, FileDevice};
use crate::durable::{RecoveryStats, WalLogger};
use crate::error::{DbOpenError, OpenError};
use crate::options::{CreateMode, Options};
use crate::page::{NoopLogger, PageKind, PageLogger, PAGE_SIZE};
use crate::stats::{IoSnapshot, IoStats};
use crate::wal::{Durability, WalStatsSnapshot};
use crate::{
    CheckError, CommitError, Corruption, Limit, MaintenanceError, OptionsError, ReadError,
};
use crate::{Error, Result};
use batch::log_estimate_bytes;
use bounds::{bounds_of, prefix_bounds};
use inner::{check_key, DbInner};
use std::collections::HashMap;
use std::ops::{Bound, RangeBounds};
use std::path::{Path, PathBuf};
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Instant;

/// Serialises (serde) as nested JSON objects; [`DbStats::prometheus_text`] and
/// [`DbStats::publish_metrics`] export the same numbers flat.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct DbStats {
    pub pool: PoolStats,
    /// Pages in use, superblock and catalog included.
    pub allocated_pages: u64,
    pub free_pages: u64,
    pub high_water_pages: u64,
    pub page_capacity: u64,
    pub trees: usize,
    pub last_lsn: u64,
    /// Device I/O by purpose, for databases opened with [`Db::open`] (which wraps its data file
    /// in [`Counted`]; the WAL file is counted apart, see `wal_io`); callers of `open_on` wrap and
    /// read their own devices.
    pub io: Option<IoSnapshot>,
    /// Zones, page map and GC figures in the out-of-place write mode.
    pub out_of_place: Option<crate::oop::OutOfPlaceStats>,
    /// Page bytes handed to the page store by purpose, before any transformation (the
    /// logical side of DB WAF).
    pub logical: crate::pagestore::LogicalBytes,
    /// WAL file I/O for databases opened with [`Db::open`].
    pub wal_io: Option<IoSnapshot>,
    /// WAL counters (appends, flushes, syncs, group sizes), when the database keeps a WAL.
    pub wal: Option<WalStatsSnapshot>,
    /// Checkpoints completed since open.
    pub checkpoints: u64,
    /// What the open recovered (WAL databases).
    pub recovery: Option<RecoveryStats>,
    /// Pages written through the doublewrite area since open.
    pub doublewrite_pages: u64,
    /// What the flash programmed, when the data device is the flash emulator (DB-issued bytes
    /// are in `io` or the caller's `Counted`; SSD WAF = flash / DB-issued).
    #[cfg(feature = "emulator")]
    pub flash: Option<flashemu::Counters>,
    /// Out-of-line values, for databases created with `Options::blob_threshold_bytes`.
    pub blobs: Option<BlobStats>,
    /// Live snapshots and the page copies kept for them (`Db::snapshot`).
    pub snapshots: crate::buffer::versions::SnapshotStats,
}

type SharedDevice = Arc<dyn Device>;

/// Attempts of a single write under the writer mutex (`Tree::write_cached_first`): the ones
/// before the last decline on a page outside the pool, the last reads it there.
const CACHED_WRITE_ATTEMPTS: u32 = 3;

/// Threads that read a batch's leaves at once: a random batch misses on most of its leaves,
/// and one thread reads them one device round trip at a time (a file on this project's
/// machines serves 4 KiB direct reads 2.9x faster 8 deep than 1 deep; 16 threads per batch
/// loaded slower than 8, their stacks mapped and unmapped each time).
const PREFETCH_THREADS_MAX: usize = 8;
/// Below this many keys per thread a batch's leaves are read by the caller alone: spawning a
/// thread costs about as much as a page-cache hit.
const PREFETCH_KEYS_PER_THREAD_MIN: usize = 4;

/// Brings the pages down to each `(tree, key)` leaf into the pool, several device reads in
/// flight at once. Hits cost a descent; errors are left for the write itself to meet.
fn prefetch_parallel(inner: &DbInner, reads: &[(&TreeCore, &[u8])]) {
    let threads = (reads.len() / PREFETCH_KEYS_PER_THREAD_MIN).min(PREFETCH_THREADS_MAX);
    if threads <= 1 {
        for (core, key) in reads {
            core.prefetch(inner.env(), key);
        }
        return;
    }
    let next = std::sync::atomic::AtomicUsize::new(0);
    let work = || {
        // Bounded: each turn takes a distinct index below `reads.len()`.
        while let Some((core, key)) = reads.get(next.fetch_add(1, Ordering::Relaxed)) {
            core.prefetch(inner.env(), key);
        }
    };
    std::thread::scope(|scope| {
        for _ in 1..threads {
            scope.spawn(work);
        }
        work();
    });
    debug_assert!(next.load(Ordering::Relaxed) >= reads.len());
}

/// How an open may create, and what to call its files in errors.
#[derive(Debug)]
struct How {
    create: crate::options::CreateMode,
    names: open::Names,
    io_stats: Option<(Arc<IoStats>, Arc<IoStats>)>,
}

impl How {
    fn devices(options: &Options) -> How {
        let how = How { create: options.create, names: open::Names::devices(), io_stats: None };
        // Errors tell the two devices apart by these names.
        debug_assert_ne!(how.names.data, how.names.wal);
        how
    }
}

/// Out of place with a log device, the map journal takes the log device's tail (map changes are
/// logged beside the WAL, outside the data device and its WAF figures, as 000 sec. 6.2 logs
/// them in the WAL): returns the WAL's part and the journal's. Otherwise the log device as it is.
/// A file that grows sizes its journal for the size its layout was made for, so every open
/// splits the log device the same way.
fn split_log_device(
    data: &Arc<dyn Device>,
    wal: Option<Arc<dyn Device>>,
    options: &Options,
) -> Result<(Option<SharedDevice>, Option<SharedDevice>)> {
    let Some(wal) = wal else { return Ok((None, None)) };
    if options.write_mode != crate::options::WriteMode::OutOfPlace {
        return Ok((Some(wal), None));
    }
    let log_bytes = wal.capacity_bytes() / PAGE_SIZE as u64 * PAGE_SIZE as u64;
    let layout_bytes = crate::oop::layout_bytes_on(
        data.as_ref(),
        options.data_offset_bytes,
        options.max_file_bytes,
    )?;
    let data_bytes = if layout_bytes == 0 { data.capacity_bytes() } else { layout_bytes };
    let journal_bytes = crate::oop::journal_bytes_on_log(data_bytes, log_bytes);
    // The journal takes at most a quarter: the WAL keeps the rest of the device.
    assert!(journal_bytes <= log_bytes / 4, "a journal of {journal_bytes} in a log of {log_bytes}");
    let wal_bytes = log_bytes - journal_bytes;
    let journal: Arc<dyn Device> =
        Arc::new(crate::oop::journal::SliceDevice::new(wal.clone(), wal_bytes, journal_bytes));
    let wal: Arc<dyn Device> = Arc::new(crate::oop::journal::SliceDevice::new(wal, 0, wal_bytes));
    Ok((Some(wal), Some(journal)))
}

impl Db {
    /// Opens or creates a database in the file at `path` with its WAL in `<path>.wal` (both
    /// [`FileDevice`]s driven as `options.file` says, each counted by its own [`Counted`]
    /// wrapper: `DbStats::io` and `DbStats::wal_io`). Creates the database only when neither
    /// file exists (and `options.create` is not `Never`): a new data file spans
    /// `options.file_capacity_bytes`, a new WAL `options.wal_capacity_bytes`. Existing files keep
    /// their sizes (so a truncated file is reported, not silently re-extended), and any state
    /// that is not a database (an empty data file, a zeroed superblock beside a WAL with
    /// commits, a foreign file) is a [`DbOpenError::Refused`] naming the file, before anything
    /// is written (docs/internals/recovery.md, "Creation"). Its other variants say what else
    /// stopped the open: options refused, a missing WAL, no space, the storage beneath.
    ///
    /// Both files stay locked (`flock`, exclusive) until the last handle of this `Db` is
    /// dropped: another open of them, in any process or this one, fails with
    /// [`OpenError::Locked`](crate::OpenError::Locked) before it reads a byte.
    pub fn open(path: impl AsRef<Path>, options: Options) -> Result<Db, DbOpenError> {
        let path = path.as_ref();
        let wal_path = wal_path(path);
        if options.read_only {
            return Db::open_read_only(path, &wal_path, options);
        }
        // The lock before anything else is read; creation takes the files with it.
        let acquired = exclusive::acquire(path, &wal_path, options.create != CreateMode::Never)?;
        let (sizes, acquired) = match acquired {
            Some(a) if a.created => (open::new_file_sizes(&options), a),
            Some(a) => (open::file_sizes(path, &wal_path, &options)?, a),
            None => {
                // Refuses every state acquire declines to lock; files that appeared since are
                // another open's creation, holding their lock.
                open::file_sizes(path, &wal_path, &options)?;
                return Err(OpenError::Locked { path: path.to_path_buf() }.into());
            }
        };
        let opened = Db::open_files(path, &wal_path, sizes, &options).and_then(
            |(device, wal_device, how)| {
                Db::open_inner(device, Some(wal_device), options, None, how)
            },
        );
        match opened {
            Ok(db) => {
                let mut held = db.inner.file_locks.lock().unwrap_or_else(|e| e.into_inner());
                debug_assert!(held.is_none(), "a new Db holds no locks yet");
                *held = Some(acquired.locks);
                drop(held);
                Ok(db)
            }
            Err(e) => {
                // The devices are dropped; files this open created go, while still locked.
                acquired.remove_if_created(path, &wal_path);
                Err(e.into())
            }
        }
    }

    /// [`Db::open`] with `Options::read_only`: shared locks, and both files behind an
    /// [`crate::device::Overlay`], so recovery runs in memory and nothing reaches the files.
    fn open_read_only(path: &Path, wal_path: &Path, options: Options) -> Result<Db, DbOpenError> {
        let Some(locks) = exclusive::acquire_shared(path, wal_path)? else {
            return Err(OpenError::Missing { what: path.display().to_string() }.into());
        };
        let sizes = open::file_sizes(path, wal_path, &options)?;
        let (device, wal_device, how) = Db::open_files(path, wal_path, sizes, &options)?;
        let device: SharedDevice = Arc::new(crate::device::Overlay::new(device));
        let wal_device: SharedDevice = Arc::new(crate::device::Overlay::new(wal_device));
        let db = Db::open_inner(device, Some(wal_device), options, None, how)?;
        // `open_inner`'s hand-over: no thread of a read-only open writes back or checkpoints.
        let o = &db.inner.options;
        assert!(o.read_only && !o.background_write_back && !o.background_checkpoint);
        *db.inner.file_locks.lock().unwrap_or_else(|e| e.into_inner()) = Some(locks);
        Ok(db)
    }

    /// The two `FileDevice`s of `Db::open`, each counted by its own [`Counted`].
    fn open_files(
        path: &Path,
        wal_path: &Path,
        sizes: open::FileSizes,
        options: &Options,
    ) -> Result<(SharedDevice, SharedDevice, How)> {
        let file = FileDevice::open(path, sizes.data_bytes, options.file)?;
        let stats = Arc::new(IoStats::default());
        let device = Arc::new(Counted::new(file, stats.clone()));
        let wal_file = FileDevice::open(wal_path, sizes.wal_bytes, options.file)?;
        let wal_stats = Arc::new(IoStats::default());
        let wal_device = Arc::new(Counted::new(wal_file, wal_stats.clone()));
        // The sizes `file_sizes` decided are the ones the superblock is checked against.
        debug_assert_eq!(device.capacity_bytes(), sizes.data_bytes, "{}", path.display());
        debug_assert_eq!(wal_device.capacity_bytes(), sizes.wal_bytes, "{}", wal_path.display());
        let how = How {
            create: sizes.create,
            names: open::Names {
                data: path.display().to_string(),
                wal: wal_path.display().to_string(),
            },
            io_stats: Some((stats, wal_stats)),
        };
        Ok((device, wal_device, how))
    }

    /// Opens the database on `device` WITHOUT a WAL, formatting a blank device (page 0 all
    /// zeros) as `options.create` allows (`IfMissing` by default, `Never` refuses it): data is
    /// durable only after [`Db::flush`] or [`Db::close`], and a crash loses everything since.
    /// For benchmarks of the data path alone. A database created with a WAL is refused (its log
    /// holds commits).
    pub fn open_on(device: Arc<dyn Device>, options: Options) -> Result<Db, DbOpenError> {
        let db = Db::open_with_logger(device, options, None)?;
        // What `flush` and `close` take this Db for: no log, so no fuzzy checkpoints.
        debug_assert!(db.inner.wal.is_none(), "open_on came back with a log");
        Ok(db)
    }

    /// Opens (recovering) or creates a durable database: pages on `data`, the WAL on `wal` (a
    /// separate device, so log bytes are counted apart from the data device's). Formats only a
    /// blank `data` (as `options.create` allows) beside a `wal` that is blank or holds no more
    /// than an interrupted creation; a blank superblock beside a log that held a database is
    /// refused ([`crate::OpenError::BlankSuperblock`]).
    pub fn open_on_devices(
        data: Arc<dyn Device>,
        wal: Arc<dyn Device>,
        options: Options,
    ) -> Result<Db, DbOpenError> {
        let how = How::devices(&options);
        let db = Db::open_inner(data, Some(wal), options, None, how)?;
        // The log device given is the log used: every batch from here on is logged.
        debug_assert!(db.inner.wal.is_some(), "a log device opened without a log");
        Ok(db)
    }

    /// As [`Db::open_on`], with a page logger instead of the no-op one (tests of the seam).
    pub fn open_with_logger(
        device: Arc<dyn Device>,
        options: Options,
        logger: Option<Arc<dyn PageLogger>>,
    ) -> Result<Db, DbOpenError> {
        let how = How::devices(&options);
        let db = Db::open_inner(device, None, options, logger, how)?;
        // No log device, no log: data is durable only through `flush`.
        debug_assert!(db.inner.wal.is_none(), "a log without a log device");
        Ok(db)
    }

    /// Opens in four steps (`startup.rs`): the superblock read and checked, the buffer pool
    /// built on the store, the log replayed, and the threads started once the catalog is
    /// loaded.
    fn open_inner(
        device: Arc<dyn Device>,
        wal_device: Option<Arc<dyn Device>>,
        mut options: Options,
        logger: Option<Arc<dyn PageLogger>>,
        mut how: How,
    ) -> Result<Db> {
        let started = Instant::now();
        if options.read_only {
            // Nothing to write back or checkpoint but what recovery did, in memory.
            options.background_write_back = false;
            options.background_checkpoint = false;
            options.create = CreateMode::Never;
        }
        let _span = tracing::info_span!("wafer.open", names = ?how.names).entered();
        check_options(&options)?;
        // Read-only checks before any store is built: building one may format or repair.
        let superblock = open::read_superblock(device.as_ref(), &options, &how.names)?;
        let create =
            open::decide_create(superblock, wal_device.as_ref(), &options, how.create, &how.names)?;
        let io_stats = how.io_stats.take();
        let data_device = device.clone();
        let (wal_device, journal_device) = split_log_device(&data_device, wal_device, &options)?;
        let (store, doublewrite) = mode::open_store(device, &options, journal_device)?;
        // Torn page writes first: the superblock itself may be one.
        let store_recovery = store.recover()?;
        let logs = wal_device.is_some();
        let (meta, fresh) = startup::read_meta(store.as_ref(), &options, create, logs, &how.names)?;
        let wal_logger = wal_device.as_ref().map(|_| Arc::new(WalLogger::new()));
        let logger: Arc<dyn PageLogger> = match (&wal_logger, logger) {
            (Some(w), _) => w.clone(),
            (None, Some(l)) => l,
            (None, None) => Arc::new(NoopLogger::new(meta.last_lsn)),
        };
        let pool = startup::build_pool(&store, &options, &meta, logger.clone())?;
        let mut replayed = startup::Replayed::from_meta(&meta);
        if let (Some(wal_dev), Some(wl)) = (&wal_device, &wal_logger) {
            let log = startup::Log { device: wal_dev, logger: wl, options: &options.wal };
            replayed = startup::recover(log, &pool, &meta, fresh, store_recovery, started)?;
        }
        let parts = startup::Parts { pool, logger, wal_logger, doublewrite, data_device, io_stats };
        let db = startup::assemble(parts, options, &meta, &replayed)?;
        startup::finish(&db, &meta, fresh, replayed.extents)?;
        // What every later operation takes for granted: a log comes with its checkpointer,
        // and values are tagged exactly when the superblock says so.
        assert_eq!(db.inner.wal.is_some(), db.inner.checkpointer.is_some());
        assert_eq!(db.inner.blobs.get().is_some(), meta.blobs, "blob space as the superblock says");
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
                .map_err(|source| Corruption::CatalogEntry { tree: name.clone(), source })?;
            let name = String::from_utf8(name).map_err(|_| Corruption::CatalogName)?;
            let prev = map.insert(name, Arc::new(TreeCore::new(id, root)));
            // The iterator yields strictly ascending keys: each name once.
            debug_assert!(prev.is_none(), "a catalog name yielded twice");
        }
        *inner.trees.write().unwrap_or_else(|e| e.into_inner()) = map;
        Ok(())
    }

    pub fn options(&self) -> &Options {
        // `check_options` ran at open: the checkpoint trigger lies inside the log.
        debug_assert!(
            self.inner.options.checkpoint_log_bytes < self.inner.options.wal_capacity_bytes
        );
        &self.inner.options
    }

    /// The tree called `name`, created (and recorded in the catalog) on first use: a commit
    /// when it is new, so its errors are a [`CommitError`]'s (`InvalidTreeName`, `ReadOnly`
    /// for a new tree of a read-only database, `Closed`, `Storage`).
    pub fn tree(&self, name: &str) -> Result<Tree, CommitError> {
        catalog::check_name(name)?;
        let tree = self.tree_unchecked(name)?;
        // A user's tree is never the catalog: writes to it must not reach tree 0.
        debug_assert!(tree.core.id > catalog::CATALOG_TREE_ID, "{name} has the catalog's id");
        Ok(tree)
    }

    /// Sets up the blob space of a database whose values are tagged: its free-extent tree
    /// (created on first open) with the extent changes the log held since its last fold
    /// (`since_fold`), and what a crash left behind dropped.
    fn open_blobs(&self, since_fold: Vec<crate::durable::ExtentOp>) -> Result<()> {
        let inner = &self.inner;
        let tree = self.tree_unchecked(crate::blob::FREE_TREE_NAME)?;
        inner.trees.write().unwrap_or_else(|e| e.into_inner()).remove(crate::blob::FREE_TREE_NAME);
        let mut extents = Vec::new();
        let mut it = tree.raw_iter();
        // Bounded by the page ids: every extent holds at least one.
        for _ in 0..=inner.pool.page_capacity() {
            let Some(entry) = it.next_entry() else { break };
            let (k, v) = entry?;
            let e = crate::blob::decode_extent(&k, &v).ok_or(Corruption::BlobExtent)?;
            extents.push(e);
        }
        let stager = match &inner.wal {
            Some(wl) => {
                let stager = Arc::new(crate::blob::Stager::new(
                    inner.pool.store().clone(),
                    crate::blob::STAGE_PAGES_MAX,
                ));
                let s = stager.clone();
                wl.wal()?.set_before_write(crate::wal::BeforeWrite(Box::new(move || {
                    s.flush().map_err(|e| crate::device::DeviceError::Io {
                        op: "blob write before the log",
                        offset: 0,
                        source: std::io::Error::other(e.to_string()),
                    })
                })))?;
                Some(stager)
            }
            None => None,
        };
        let space = crate::blob::BlobSpace::recovered(extents, since_fold)
            .map_err(|reason| Corruption::BlobExtentsDisagree { reason })?;
        let log_bytes = match &inner.wal {
            Some(wl) => wl.wal()?.capacity_bytes(),
            None => 0,
        };
        let fold = blob_state::FoldBounds::new(
            &inner.options.wal,
            log_bytes,
            inner.options.checkpoint_log_bytes,
        );
        let state = Arc::new(blob_state::BlobState::new(
            inner.options.blob_threshold_bytes,
            tree.core,
            space,
            stager,
            fold,
        ));
        if let Some(cp) = &inner.checkpointer {
            let set = cp.blob_state.set(state.clone()).is_ok();
            assert!(set, "the checkpointer's blob space set twice");
        }
        if let (Some(s), true) = (&state.stager, inner.options.background_write_back) {
            let handle = crate::blob::Stager::start_flusher(s)
                .map_err(|source| Error::Spawn { thread: "blob flusher", source })?;
            *state.flusher.lock().unwrap_or_else(|e| e.into_inner()) = Some(handle);
        }
        inner.blobs.set(state).map_err(|_| Corruption::BlobSpaceTwice)?;
        inner.drop_uncommitted_blobs()
    }

    fn tree_unchecked(&self, name: &str) -> Result<Tree> {
        let inner = &self.inner;
        inner.check_open()?;
        let found = inner.trees.read().unwrap_or_else(|e| e.into_inner()).get(name).cloned();
        if let Some(core) = found {
            return Ok(Tree { db: inner.clone(), core, name: name.into() });
        }
        let mut map = inner.trees.write().unwrap_or_else(|e| e.into_inner());
        if let Some(core) = map.get(name) {
            return Ok(Tree { db: inner.clone(), core: core.clone(), name: name.into() });
        }
        inner.check_writable()?;
        let durability = inner.options.durability;
        let estimate = log_estimate_bytes(name.len() as u64 + 16, 2);
        let (id, root) = inner.write_txn(durability, estimate, |env| {
            let id = inner.next_tree_id.load(Ordering::Relaxed);
            let root = {
                let mut g = env.alloc.allocate_one(env.pool, PageKind::Leaf, id)?;
                stamp_image(env.logger, &mut g);
                g.pid()
            };
            // The allocator's hand-over: a page of the tree's own, under a fresh id.
            assert!(id > catalog::CATALOG_TREE_ID, "tree id {id} taken by the catalog");
            assert!(root != crate::page::meta::META_PAGE_ID && root != catalog::CATALOG_ROOT);
            let r = inner.catalog.put(env, name.as_bytes(), &catalog::encode(id, root));
            if let Err(e) = inner.poison_unless_clean(r) {
                // The catalog did not take the tree (device full): give its root page back.
                if let Ok(g) = env.pool.write(root) {
                    env.alloc.free(env.logger, g);
                }
                return Err(e);
            }
            // Inside the batch, so the commit record carries it.
            inner.next_tree_id.store(id + 1, Ordering::Relaxed);
            Ok((id, root))
        })?;
        let core = Arc::new(TreeCore::new(id, root));
        map.insert(name.to_string(), core.clone());
        Ok(Tree { db: inner.clone(), core, name: name.into() })
    }

    /// The tree called `name` if it exists (a read must not create one).
    pub(crate) fn existing_tree(&self, name: &str) -> Result<Option<Tree>> {
        let inner = &self.inner;
        inner.check_open()?;
        let map = inner.trees.read().unwrap_or_else(|e| e.into_inner());
        // The catalog is not among the named trees: a read through it would see raw entries.
        debug_assert!(map.get(name).is_none_or(|c| c.id != catalog::CATALOG_TREE_ID), "{name}");
        Ok(map.get(name).map(|core| Tree {
            db: inner.clone(),
            core: core.clone(),
            name: name.into(),
        }))
    }

    /// Names of all trees, sorted. Fails only when closed ([`ReadError::Closed`]).
    pub fn tree_names(&self) -> Result<Vec<String>, ReadError> {
        self.inner.check_open()?;
        let map = self.inner.trees.read().unwrap_or_else(|e| e.into_inner());
        let mut names: Vec<String> = map.keys().cloned().collect();
        names.retain(|n| !n.starts_with('\0'));
        names.sort();
        // Map keys are unique: sorted, the names ascend strictly.
        debug_assert!(names.windows(2).all(|w| w[0] < w[1]), "tree names listed twice");
        Ok(names)
    }

    /// Applies every operation of `batch` atomically, durable as `options.durability` says;
    /// readers see none or all of them. Sizes and names are checked before anything changes.
    /// A failure while applying (I/O, device full) poisons the database.
    pub fn write(&self, batch: &WriteBatch) -> Result<(), CommitError> {
        // Open's hand-over: a log comes with its checkpointer (it makes log room for batches).
        debug_assert_eq!(self.inner.wal.is_some(), self.inner.checkpointer.is_some());
        self.write_with(batch, self.inner.options.durability)
    }

    /// As [`Db::write`], waiting for durability as `durability` says: `Sync` returns once the
    /// batch is durable, `GroupCommit` may wait a bounded delay to share a sync, `None` returns
    /// at once (a later sync, a checkpoint or close makes it durable; a crash may lose it, but
    /// never half of it).
    pub fn write_with(
        &self,
        batch: &WriteBatch,
        durability: Durability,
    ) -> Result<(), CommitError> {
        if self.inner.blobs.get().is_some() {
            return self.write_tagged(batch, durability).map(|_| ()).map_err(CommitError::from);
        }
        let inner = &self.inner;
        inner.check_writable()?;
        let mut payload_bytes = 0u64;
        for op in &batch.ops {
            catalog::check_name(op.tree())?;
            match op {
                BatchOp::Put { key, value, .. } => {
                    check_key(key)?;
                    inner.check_value(value)?;
                    payload_bytes += (key.len() + value.len()) as u64;
                }
                BatchOp::Delete { key, .. } => {
                    check_key(key)?;
                    payload_bytes += key.len() as u64;
                }
            }
        }
        let (trees, index) = self.batch_trees(batch)?;
        let estimate = log_estimate_bytes(payload_bytes, batch.ops.len() as u64);
        if inner.wal.is_some() {
            // Batches apply all or nothing and cannot decline half-way (as single writes do):
            // their pages are read before the writer mutex instead.
            let reads: Vec<(&TreeCore, &[u8])> = batch
                .ops
                .iter()
                .filter_map(|op| index.get(op.tree()).map(|i| (&*trees[*i].core, op.key())))
                .collect();
            prefetch_parallel(inner, &reads);
        }
        inner
            .write_txn(durability, estimate, |env| {
                // Latch in tree-id order so two batches cannot deadlock.
                let mut order: Vec<usize> = (0..trees.len()).collect();
                order.sort_by_key(|i| trees[*i].core.id);
                let mut guards: Vec<Option<Exclusive<'_>>> =
                    (0..trees.len()).map(|_| None).collect();
                for i in order {
                    guards[i] = Some(trees[i].core.exclusive());
                }
                // Every tree the batch names is latched before its first operation applies.
                debug_assert!(guards.iter().all(Option::is_some), "a batch tree left unlatched");
                inner.check_writable()?;
                // A tree dropped since `batch_trees` refuses the batch before it changes anything.
                trees.iter().try_for_each(|t| t.core.check_live())?;
                for (i, op) in batch.ops.iter().enumerate() {
                    let Some(g) = index.get(op.tree()).and_then(|i| guards[*i].as_ref()) else {
                        return Err(Corruption::BatchTreeVanished.into());
                    };
                    let r = match op {
                        BatchOp::Put { key, value, .. } => g.put(env, key, value),
                        BatchOp::Delete { key, .. } => g.delete(env, key).map(|_| ()),
                    };
                    if let Err(e) = r {
                        return Err(inner.fail_batch_op(i, e));
                    }
                }
                Ok(())
            })
            .map_err(CommitError::from)
    }

    /// The trees a batch names (created on first use), and each name's index among them.
    fn batch_trees<'b>(
        &self,
        batch: &'b WriteBatch,
    ) -> Result<(Vec<Tree>, HashMap<&'b str, usize>)> {
        let mut trees: Vec<Tree> = Vec::new();
        let mut index: HashMap<&str, usize> = HashMap::new();
        for op in &batch.ops {
            if !index.contains_key(op.tree()) {
                index.insert(op.tree(), trees.len());
                trees.push(self.tree(op.tree())?);
            }
        }
        assert_eq!(trees.len(), index.len(), "one tree per name");
        Ok((trees, index))
    }

    /// [`Db::write_with`] for a database whose values are tagged: blobs written first, then
    /// the batch of stored values (references and inline values), each freeing the blob its
    /// key named. Returns how many deletes found their key.
    fn write_tagged(&self, batch: &WriteBatch, durability: Durability) -> Result<u64> {
        let inner = &self.inner;
        inner.check_writable()?;
        let mut payload_bytes = 0u64;
        for op in &batch.ops {
            catalog::check_name(op.tree())?;
            check_key(op.key())?;
            if let BatchOp::Put { value, .. } = op {
                inner.check_value(value)?;
            }
            payload_bytes += op.key().len() as u64 + crate::blob::REF_BYTES_MAX as u64;
        }
        let (trees, index) = self.batch_trees(batch)?;
        let stored = inner.store_batch(batch)?;
        for op in &stored {
            if let blobs::StoredOp::Put { stored, .. } = op {
                payload_bytes += stored.len() as u64;
            }
        }
        let estimate = log_estimate_bytes(payload_bytes, 3 * batch.ops.len() as u64);
        if inner.wal.is_some() {
            let reads: Vec<(&TreeCore, &[u8])> = stored
                .iter()
                .filter_map(|op| index.get(op.tree()).map(|i| (&*trees[*i].core, op.key())))
                .collect();
            prefetch_parallel(inner, &reads);
        }
        let applied = inner.write_txn(durability, estimate, |env| {
            let mut order: Vec<usize> = (0..trees.len()).collect();
            order.sort_by_key(|i| trees[*i].core.id);
            let mut guards: Vec<Option<Exclusive<'_>>> = (0..trees.len()).map(|_| None).collect();
            for i in order {
                guards[i] = Some(trees[i].core.exclusive());
            }
            // Every tree the batch names is latched before its first operation applies.
            debug_assert!(guards.iter().all(Option::is_some), "a batch tree left unlatched");
            inner.check_writable()?;
            trees.iter().try_for_each(|t| t.core.check_live())?;
            let mut deleted = 0u64;
            for (i, op) in stored.iter().enumerate() {
                let Some(g) = index.get(op.tree()).and_then(|i| guards[*i].as_ref()) else {
                    return Err(Corruption::BatchTreeVanished.into());
                };
                match inner.apply_stored(env, g, op) {
                    Ok(found) => {
                        deleted += u64::from(found && matches!(op, blobs::StoredOp::Delete { .. }))
                    }
                    Err(e) => return Err(inner.fail_batch_op(i, e)),
                }
            }
            Ok(deleted)
        });
        // A poisoned database is recovered by a reopen; otherwise nothing was claimed.
        if applied.is_err() && !inner.poisoned.load(Ordering::Relaxed) {
            inner.abandon_runs(&stored);
        }
        applied
    }

    /// Runs a checkpoint now: with a WAL a fuzzy one (writes run on meanwhile) that bounds
    /// recovery and truncates the log; without one, as [`Db::flush`].
    pub fn checkpoint(&self) -> Result<(), MaintenanceError> {
        if self.inner.wal.is_none() {
            return self.flush();
        }
        // With a log the checkpoint is the fuzzy one: a stop-the-world flush would need the
        // tree latches `flush` takes, which this does not.
        debug_assert!(self.inner.checkpointer.is_some(), "a log without its checkpointer");
        self.inner.check_writable()?;
        Ok(self.inner.checkpoint()?)
    }

    pub fn stats(&self) -> DbStats {
        let inner = &self.inner;
        let a = inner.alloc.state();
        // The allocator's free pages are pages it handed out once: below the high-water mark.
        debug_assert!(a.free_count <= a.high_water, "{} free of {}", a.free_count, a.high_water);
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
            logical: inner.pool.store().logical_bytes(),
            wal_io: inner.wal_io_stats.as_ref().map(|s| s.snapshot()),
            wal: inner.wal.as_ref().and_then(|w| w.wal().ok()).map(|w| w.stats().snapshot()),
            checkpoints: inner.checkpoint_count(),
            recovery: inner.recovery,
            doublewrite_pages: inner.doublewrite.as_ref().map_or(0, |d| d.pages_doublewritten()),
            #[cfg(feature = "emulator")]
            flash: inner.data_device.flash_counters(),
            blobs: inner.blobs.get().map(|b| b.stats()),
            snapshots: inner.pool.versions().stats(),
        }
    }

    /// Walks every tree and the space metadata and reports each violation found: key order
    /// within and across leaves, keys within their parent's fences, page checksums (of pages
    /// read from the device), node structure, leaves at one depth, catalog against the open
    /// trees, the free list against the allocator, no page leaked or owned twice, and the
    /// store's own consistency (out of place: page map, zones, free pages). Writers wait while
    /// it runs; readers go on. Returns `CheckError`: `CheckError::Closed` when the database is
    /// closed, `CheckError::Storage` when reading beneath the walk failed; violations are in the
    /// report, not errors.
    pub fn check(&self) -> Result<CheckReport, CheckError> {
        let inner = &self.inner;
        inner.check_open()?;
        // Lock order: trees -> writer -> tree latches (as writers take them).
        let map = inner.trees.read().unwrap_or_else(|e| e.into_inner());
        let _writer = inner.writer.lock().unwrap_or_else(|e| e.into_inner());
        let _catalog = inner.catalog.exclusive();
        let _trees: Vec<Exclusive<'_>> = map.values().map(|t| t.exclusive()).collect();
        let report = inner.check_quiesced(&map)?;
        // The catalog is walked whatever else is found: a report of no trees walked nothing.
        debug_assert!(report.trees >= 1, "a check that walked no tree");
        Ok(report)
    }

    /// Out-of-place mode: runs DB GC now - until the free-zone target is met, or with
    /// `every_zone` on every zone holding an invalid page - and returns the cycles run. In place
    /// there is nothing to collect (0).
    pub fn collect_garbage(&self, every_zone: bool) -> Result<u32, MaintenanceError> {
        self.inner.check_writable()?;
        let cycles = self.inner.pool.store().collect_garbage(every_zone)?;
        // In place there are no zones to collect: any cycle there is a store mixup.
        debug_assert!(cycles == 0 || self.inner.pool.store().out_of_place_stats().is_some());
        Ok(cycles)
    }

    /// Writes every dirty page and the superblock, and syncs: after `flush` returns, a reopen
    /// finds everything written so far. With a WAL this is a fuzzy checkpoint (writers go on);
    /// without one it waits for operations in flight and holds writers off meanwhile.
    pub fn flush(&self) -> Result<(), MaintenanceError> {
        let inner = &self.inner;
        inner.check_writable()?;
        if inner.wal.is_some() {
            return Ok(inner.checkpoint()?);
        }
        let map = inner.trees.read().unwrap_or_else(|e| e.into_inner());
        let _catalog = inner.catalog.exclusive();
        let _trees: Vec<Exclusive<'_>> = map.values().map(|t| t.exclusive()).collect();
        // Without a log the checkpoint is the stop-the-world flush these latches are held for.
        debug_assert!(inner.checkpointer.is_none(), "a checkpointer without a log");
        Ok(inner.checkpoint()?)
    }

    /// Makes every batch committed so far durable with one log flush (blobs they name first),
    /// without a checkpoint: what a writer using `Durability::None` calls now and then to bound
    /// what a crash may lose. Without a log, as [`Db::flush`].
    pub fn sync(&self) -> Result<(), MaintenanceError> {
        let inner = &self.inner;
        inner.check_writable()?;
        match &inner.wal {
            Some(logger) => {
                let committed = logger.committed();
                let wal = logger.wal()?;
                wal.flush().map_err(Error::from)?;
                // What writers using `Durability::None` count on: every commit so far is durable.
                debug_assert!(committed == 0 || wal.durable_lsn().0 > committed, "{committed}");
                Ok(())
            }
            None => self.flush(),
        }
    }

    /// Flushes as [`Db::flush`] and closes. Tree handles still around fail with `Closed`
    /// afterwards ([`CommitError::Closed`], [`ReadError::Closed`]). Dropping a `Db` without
    /// closing it writes nothing more.
    pub fn close(self) -> Result<(), MaintenanceError> {
        let inner = &self.inner;
        if inner.closed.swap(true, Ordering::AcqRel) {
            return Err(MaintenanceError::Closed);
        }
        let map = inner.trees.write().unwrap_or_else(|e| e.into_inner());
        if inner.poisoned.load(Ordering::Relaxed) || inner.pool.is_poisoned() {
            return Err(MaintenanceError::Poisoned);
        }
        if inner.options.read_only {
            // Nothing of a read-only open may reach the files.
        } else if let Some(logger) = &inner.wal {
            // No checkpoint after close's own: the thread stops first (finishing one it runs).
            inner.lock_checkpoint_thread().take();
            // Writers that got past their `closed` check finish first (checkpoint takes the
            // writer mutex); later ones see `closed`.
            inner.checkpoint()?;
            logger.wal()?.flush().map_err(Error::from)?;
        } else {
            let _catalog = inner.catalog.exclusive();
            let _trees: Vec<Exclusive<'_>> = map.values().map(|t| t.exclusive()).collect();
            inner.checkpoint()?;
        }
        // Tree handles may outlive the close: the files are free for the next open now, so
        // nothing of this one may write again.
        inner.stop_background();
        // Released below, the files are the next open's: no checkpoint of this one may follow.
        debug_assert!(inner.lock_checkpoint_thread().is_none(), "a checkpoint thread after close");
        inner.file_locks.lock().unwrap_or_else(|e| e.into_inner()).take();
        Ok(())
    }
}

/// The WAL file of the database in `path`: `<path>.wal`.
pub fn wal_path(path: &Path) -> PathBuf {
    let mut name = path.as_os_str().to_owned();
    name.push(".wal");
    let wal = PathBuf::from(name);
    // The log never names the data file: creating one would truncate the other.
    debug_assert_ne!(wal.as_path(), path);
    wal
}

fn check_options(options: &Options) -> Result<()> {
    if !options.data_offset_bytes.is_multiple_of(PAGE_SIZE as u64) {
        let value = options.data_offset_bytes;
        let limit = Limit::MultipleOf(PAGE_SIZE as u64);
        return Err(OptionsError::OutOfRange { option: "data_offset_bytes", value, limit }.into());
    }
    // Out of place never doublewrites (db/mode.rs).
    if options.doublewrite && options.write_mode == crate::options::WriteMode::InPlace {
        let slots = (options.data_offset_bytes / PAGE_SIZE as u64).saturating_sub(1);
        if slots < options.eviction_batch_pages as u64 {
            return Err(OptionsError::DoublewriteArea {
                slots,
                data_offset_bytes: options.data_offset_bytes,
                eviction_batch_pages: options.eviction_batch_pages as u64,
            }
            .into());
        }
    }
    if options.clean_reserve_percent > crate::buffer::CLEAN_RESERVE_PERCENT_MAX {
        return Err(OptionsError::OutOfRange {
            option: "clean_reserve_percent",
            value: options.clean_reserve_percent.into(),
            limit: Limit::AtMost(crate::buffer::CLEAN_RESERVE_PERCENT_MAX.into()),
        }
        .into());
    }
    let log_bytes = options.checkpoint_log_bytes;
    if log_bytes == 0 || log_bytes >= options.wal_capacity_bytes {
        let limit = match log_bytes {
            0 => Limit::AtLeast(1),
            _ => Limit::Below { option: "wal_capacity_bytes", value: options.wal_capacity_bytes },
        };
        return Err(OptionsError::OutOfRange {
            option: "checkpoint_log_bytes",
            value: log_bytes,
            limit,
        }
        .into());
    }
    options.wal.validate()?;
    // What the doublewrite store takes for granted: its area holds a header block and a
    // whole eviction batch before the data.
    debug_assert!(
        !options.doublewrite
            || options.write_mode != crate::options::WriteMode::InPlace
            || options.data_offset_bytes
                >= (1 + options.eviction_batch_pages as u64) * PAGE_SIZE as u64
    );
    Ok(())
}

impl Tree {
    pub fn name(&self) -> &str {
        // Handles are made from checked names (or the engine's own, NUL-led): never empty.
        debug_assert!(!self.name.is_empty(), "a tree handle without a name");
        &self.name
    }

    pub fn get(&self, key: &[u8]) -> Result<Option<Vec<u8>>, ReadError> {
        // A handle never names the catalog (tree 0): its entries are the tree names.
        debug_assert_ne!(self.core.id, 0, "tree {} is the catalog", self.name);
        self.get_with(key, <[u8]>::to_vec)
    }

    /// Calls `f` on the value of `key` without copying it out (None: no such key). `f` runs
    /// with the value's page latched shared: it must not call back into this database.
    pub fn get_with<R>(
        &self,
        key: &[u8],
        f: impl FnOnce(&[u8]) -> R,
    ) -> Result<Option<R>, ReadError> {
        // A user's handle: its values are decoded as stored values, which the catalog's are not.
        debug_assert_ne!(self.core.id, catalog::CATALOG_TREE_ID, "a read of the catalog");
        self.db.check_open()?;
        self.check_live()?;
        check_key(key)?;
        let found = if self.db.blobs.get().is_none() {
            self.core.get_with(self.db.env(), key, f)
        } else {
            self.get_tagged(key, f)
        };
        // A drop racing the read freed the pages it read: say that, not "corrupt".
        found.map_err(|e| self.check_live().err().unwrap_or(e)).map_err(ReadError::from)
    }

    /// Err([`Error::TreeDropped`]) once the tree behind this handle is dropped.
    fn check_live(&self) -> Result<()> {
        // `TreeDropped` names the tree: every handle has a name (user trees pass check_name).
        debug_assert!(!self.name.is_empty(), "a handle of tree {} without a name", self.core.id);
        self.core.check_live().map_err(|_| Error::TreeDropped(self.name.to_string()))
    }

    /// A lookup in a tagged database: an inline value goes to `f` from the leaf, a blob is
    /// read after it (looking again if it was replaced meanwhile).
    fn get_tagged<R>(&self, key: &[u8], f: impl FnOnce(&[u8]) -> R) -> Result<Option<R>> {
        // Only a database with a blob space tags its values: untagged bytes would misdecode.
        debug_assert!(self.db.blobs.get().is_some(), "a tagged read without blobs");
        let mut f = Some(f);
        let mut last_ref = None;
        for _ in 0..crate::blob::READ_ATTEMPTS {
            let found =
                self.core.get_with(self.db.env(), key, |v| {
                    match crate::blob::decode_stored(v) {
                        Ok(crate::blob::Stored::Inline(v)) => Ok(f.take().map(|f| f(v))),
                        Ok(crate::blob::Stored::Blob(r)) => Err(Ok(r)),
                        Err(e) => Err(Err(e)),
                    }
                })?;
            let r = match found {
                None => return Ok(None),
                Some(Ok(done)) => return Ok(done),
                Some(Err(Err(e))) => return Err(Corruption::StoredValue(e).into()),
                Some(Err(Ok(r))) => r,
            };
            // `decode_stored` refuses a reference past the page ids: the read walks its run.
            debug_assert!(r.first.checked_add(r.pages()).is_some(), "blob {r:?}");
            if let Some(v) = self.db.read_blob(&r)? {
                return Ok(f.take().map(|f| f(&v)));
            }
            if last_ref == Some(r) {
                // The key still names this blob: its pages are damaged, not replaced.
                break;
            }
            last_ref = Some(r);
            self.db.count_read_retry();
        }
        Err(Corruption::TreeBlob { tree: self.name.to_string() }.into())
    }

    /// The value of `key` as a stream (`std::io::Read`), without holding it all in memory:
    /// a blob is read one 4 KiB page at a time, each page checked, and the whole value's
    /// checksum at the end. A blob replaced while it is read ends the stream with an error.
    pub fn get_reader(&self, key: &[u8]) -> Result<Option<ValueReader>, ReadError> {
        // As in `get_with`: the catalog's values are no stored values to stream.
        debug_assert_ne!(self.core.id, catalog::CATALOG_TREE_ID, "a read of the catalog");
        self.db.check_open()?;
        self.check_live()?;
        check_key(key)?;
        if self.db.blobs.get().is_none() {
            return Ok(self.get(key)?.map(ValueReader::inline));
        }
        let found =
            self.core.get_with(self.db.env(), key, |v| match crate::blob::decode_stored(v) {
                Ok(crate::blob::Stored::Inline(v)) => Ok(ValueReader::inline(v.to_vec())),
                Ok(crate::blob::Stored::Blob(r)) => Ok(ValueReader::blob(self.db.clone(), r)),
                Err(e) => Err(Corruption::StoredValue(e).into()),
            });
        // As in `get_with`: a drop racing the read freed the pages it read, which is no
        // corruption.
        found
            .and_then(|f| f.transpose())
            .map_err(|e| ReadError::from(self.check_live().err().unwrap_or(e)))
    }

    /// Copies the value of `key` into `out` (cleared first, its capacity reused): a lookup
    /// that allocates only when `out` is too small. Ok(false): no such key (`out` empty).
    pub fn get_into(&self, key: &[u8], out: &mut Vec<u8>) -> Result<bool, ReadError> {
        out.clear();
        let found = self.get_with(key, |v| out.extend_from_slice(v))?.is_some();
        // What callers that reuse `out` rely on: no key, no bytes.
        debug_assert!(found || out.is_empty(), "a missing key left {} bytes", out.len());
        Ok(found)
    }

    /// Inserts or replaces; durable as the database's `options.durability` says.
    pub fn put(&self, key: &[u8], value: &[u8]) -> Result<(), CommitError> {
        // A handle never names the catalog (tree 0): its entries are the tree names.
        debug_assert_ne!(self.core.id, 0, "tree {} is the catalog", self.name);
        self.put_with(key, value, self.db.options.durability)
    }

    pub fn put_with(
        &self,
        key: &[u8],
        value: &[u8],
        durability: Durability,
    ) -> Result<(), CommitError> {
        self.db.check_writable()?;
        self.check_live()?;
        check_key(key)?;
        self.db.check_value(value)?;
        if self.db.blobs.get().is_some() {
            return self.put_tagged(key, value, durability).map_err(CommitError::from);
        }
        let estimate = log_estimate_bytes((key.len() + value.len()) as u64, 1);
        // Checked above: the value goes inline, in a leaf.
        debug_assert!(value.len() <= crate::page::node::MAX_VALUE_BYTES, "{}", value.len());
        self.write_cached_first(durability, estimate, key, |env, cached_only| {
            if cached_only {
                self.core.put_cached(env, key, value).map(|done| done.then_some(()))
            } else {
                self.core.put(env, key, value).map(Some)
            }
        })
        .map_err(CommitError::from)
    }

    /// A put in a tagged database: the value stored first (a blob written, or the value tagged
    /// inline), then the key changed under the shared structure latch and its leaf's latch, as
    /// untagged puts are, so that lookups elsewhere in the tree go on meanwhile. Only a full
    /// leaf takes the tree's exclusive latch (a batch takes it always).
    fn put_tagged(&self, key: &[u8], value: &[u8], durability: Durability) -> Result<()> {
        // `put_with` sends only tagged databases here: values are stored through blob space.
        debug_assert!(self.db.blobs.get().is_some(), "a tagged put without blob space");
        let mut batch = WriteBatch::new();
        batch.put(&self.name, key, value);
        let stored = self.db.store_batch(&batch)?;
        let [op @ blobs::StoredOp::Put { stored: bytes, .. }] = stored.as_slice() else {
            // One put in, one stored put out (`store_batch` maps op to op).
            unreachable!("a put stored as {} ops", stored.len());
        };
        let estimate = log_estimate_bytes((key.len() + bytes.len()) as u64, 3);
        let applied = self.write_cached_first(durability, estimate, key, |env, cached_only| {
            match self.core.replace_shared(env, key, bytes, cached_only)? {
                crate::btree::Replaced::NotCached => Ok(None),
                crate::btree::Replaced::Done(old) => {
                    self.db.settle_stored(op, old.as_deref()).map(Some)
                }
                crate::btree::Replaced::Full => {
                    let g = self.core.exclusive();
                    self.core.check_live()?;
                    self.db.apply_stored(env, &g, op).map(|_| Some(()))
                }
            }
        });
        // As in a batch: a poisoned database is recovered by a reopen; otherwise nothing
        // claimed the run, which goes back.
        if applied.is_err() && !self.db.poisoned.load(Ordering::Relaxed) {
            self.db.abandon_runs(&stored);
        }
        applied
    }

    /// With a WAL, writes apply one batch at a time under the writer mutex, so a device read
    /// there would stall every writer. `apply(env, cached_only)` first runs cached only; when it
    /// declines (a page on the way is not in the pool), the pages are read after the mutex
    /// (`TreeCore::prefetch`) and it runs again. A hit costs one descent, a miss about two. The
    /// last attempt reads under the mutex, so a pool thrashing faster than the reads cannot
    /// starve a writer.
    fn write_cached_first<T>(
        &self,
        durability: Durability,
        estimate_bytes: u64,
        key: &[u8],
        apply: impl Fn(Env<'_>, bool) -> Result<Option<T>>,
    ) -> Result<T> {
        // Callers checked the key: the B+tree takes it as it comes.
        debug_assert!(key.len() <= crate::page::node::MAX_KEY_BYTES, "key of {}", key.len());
        let wal = self.db.wal.is_some();
        for attempt in 1..=CACHED_WRITE_ATTEMPTS {
            let cached_only = wal && attempt < CACHED_WRITE_ATTEMPTS;
            let done = self.db.write_txn_step(durability, estimate_bytes, |env| {
                let r = apply(env, cached_only);
                self.db.poison_unless_clean(r)
            })?;
            if let Some(v) = done {
                return Ok(v);
            }
            self.core.prefetch(self.db.env(), key);
        }
        Err(Corruption::ReadingWriteDeclined.into())
    }

    /// Removes `key`; Ok(true) when it was present.
    pub fn delete(&self, key: &[u8]) -> Result<bool, CommitError> {
        // A handle never names the catalog (tree 0): its entries are the tree names.
        debug_assert_ne!(self.core.id, 0, "tree {} is the catalog", self.name);
        self.delete_with(key, self.db.options.durability)
    }

    pub fn delete_with(&self, key: &[u8], durability: Durability) -> Result<bool, CommitError> {
        self.db.check_writable()?;
        self.check_live()?;
        check_key(key)?;
        if self.db.blobs.get().is_some() {
            let mut b = WriteBatch::new();
            b.delete(&self.name, key);
            let found = Db { inner: self.db.clone() }
                .write_tagged(&b, durability)
                .map_err(CommitError::from)?;
            // One delete in the batch: it finds its key once at most.
            debug_assert!(found <= 1, "one delete found {found} keys");
            return Ok(found == 1);
        }
        let estimate = log_estimate_bytes(key.len() as u64, 1);
        self.write_cached_first(durability, estimate, key, |env, cached_only| {
            if cached_only {
                self.core.delete_cached(env, key)
            } else {
                self.core.delete(env, key).map(Some)
            }
        })
        .map_err(CommitError::from)
    }

    /// Entries with keys in `range`, ascending; `.rev()` for descending.
    pub fn range<K: AsRef<[u8]>, R: RangeBounds<K>>(&self, range: R) -> Iter {
        // A handle never names the catalog (tree 0): its entries are the tree names.
        debug_assert_ne!(self.core.id, 0, "tree {} is the catalog", self.name);
        Iter::new(self.clone(), bounds_of(range))
    }

    /// Entries as stored (tagged values undecoded): the engine's own trees.
    fn raw_iter(&self) -> Iter {
        // Undecoded values are for the engine's own trees (named from NUL on), never a user's.
        debug_assert!(self.name.starts_with('\0'), "raw iteration of {:?}", self.name);
        let all = crate::btree::Bounds { lo: Bound::Unbounded, hi: Bound::Unbounded };
        Iter::new_core_of(self.db.clone(), self.core.clone(), all)
    }

    /// Every entry, ascending.
    pub fn iter(&self) -> Iter {
        // A handle never names the catalog (tree 0): its entries are the tree names.
        debug_assert_ne!(self.core.id, 0, "tree {} is the catalog", self.name);
        let all = crate::btree::Bounds { lo: Bound::Unbounded, hi: Bound::Unbounded };
        Iter::new(self.clone(), all)
    }

    /// Entries whose key starts with `prefix`, ascending; `.rev()` for descending.
    pub fn prefix(&self, prefix: &[u8]) -> Iter {
        let bounds = prefix_bounds(prefix);
        // The hand-over: the iterator starts at the prefix itself, included.
        debug_assert!(matches!(&bounds.lo, Bound::Included(p) if p.as_slice() == prefix));
        Iter::new(self.clone(), bounds)
    }
}
