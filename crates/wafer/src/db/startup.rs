//! Opening a database after its files are checked (`open.rs`) and its store is built
//! (`mode.rs`), in the order recovery needs: the superblock read and checked against the
//! options, the buffer pool built over the store, the log replayed into the pool, and the
//! database assembled and its threads started. Each step hands the next what it checked, and
//! says so with assertions where it hands over.
use super::catalog;
use super::checkpoint::{CheckpointThread, Checkpointer};
use super::inner::{Db, DbInner};
use crate::alloc::{stamp_image, AllocState, Allocator};
use crate::btree::TreeCore;
use crate::buffer::{BufferPool, DoublewriteStore, PageStore, StoreRecovery};
use crate::device::Device;
use crate::durable::{redo, EngineState, RecoveryStats, WalLogger};
use crate::error::{OpenError, SizeMismatch};
use crate::options::{Options, WriteMode};
use crate::page::meta::{Meta, META_PAGE_ID};
use crate::page::{PageKind, PageLogger, PAGE_SIZE};
use crate::stats::IoStats;
use crate::wal::{Durability, Lsn, Wal, WalError, WalOptions};
use crate::{Corruption, Error, OptionsError, Result};
use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU32};
use std::sync::{Arc, Mutex, OnceLock, RwLock};
use std::time::Instant;

/// The superblock the store holds, checked against the device and the options, or a new one
/// when page 0 is blank and `create` allows it; true when new. `logs`: the open has a WAL.
pub(super) fn read_meta(
    store: &dyn PageStore,
    options: &Options,
    create: bool,
    logs: bool,
    names: &super::open::Names,
) -> Result<(Meta, bool)> {
    let page_capacity = store.page_capacity();
    if page_capacity < 4 {
        return Err(OptionsError::DeviceTooSmall { pages: page_capacity, min: 4 }.into());
    }
    let mut buf = Box::new([0u8; PAGE_SIZE]);
    store.read_page(META_PAGE_ID, &mut buf)?;
    let fresh = buf.iter().all(|b| *b == 0);
    if fresh && !create {
        // The raw superblock carried the magic; only a repair could have blanked it.
        return Err(Corruption::BlankSuperblock.into());
    }
    let meta = match fresh {
        true => new_meta(store, options, logs),
        false => {
            let meta = Meta::decode(&buf).map_err(Corruption::Superblock)?;
            check_meta(&meta, page_capacity, options, logs, names)?;
            meta
        }
    };
    // What every later step relies on: the superblock names pages the store holds.
    assert!(meta.high_water <= page_capacity && meta.catalog_root < meta.high_water.max(2));
    Ok((meta, fresh))
}

/// The superblock of a new database: the catalog root is its first page.
fn new_meta(store: &dyn PageStore, options: &Options, logs: bool) -> Meta {
    let meta = Meta {
        write_mode: options.write_mode as u8,
        catalog_root: catalog::CATALOG_ROOT,
        high_water: 1, // The superblock itself.
        free_head: 0,
        free_count: 0,
        last_lsn: 0,
        next_tree_id: catalog::CATALOG_TREE_ID + 1,
        page_capacity: store.page_capacity(),
        write_clock: 0,
        wal: logs,
        checkpoint_lsn: 0,
        blobs: options.blob_threshold_bytes.is_some(),
        layout_bytes: store.layout_bytes(),
    };
    // Paired with `finish`, which allocates the catalog root next: the first superblock
    // written is one the next open accepts.
    debug_assert!(Meta { high_water: catalog::CATALOG_ROOT + 1, ..meta }.is_sane(), "{meta:?}");
    meta
}

/// Refuses a superblock the device cannot hold (a truncated file) or the options contradict.
fn check_meta(
    meta: &Meta,
    page_capacity: u64,
    options: &Options,
    logs: bool,
    names: &super::open::Names,
) -> Result<()> {
    // `Meta::decode` refused a superblock whose fields contradict each other: what is left
    // to check here is the superblock against the device and the options.
    debug_assert!(meta.is_sane(), "an insane superblock decoded: {meta:?}");
    if meta.page_capacity > page_capacity || meta.high_water > page_capacity {
        return Err(OpenError::SizeMismatch {
            what: names.data.clone(),
            detail: SizeMismatch::Truncated {
                superblock_pages: meta.page_capacity,
                in_use_pages: meta.high_water,
                device_pages: page_capacity,
            },
        }
        .into());
    }
    if meta.write_mode != options.write_mode as u8 {
        let (stored, wanted) = (meta.write_mode, options.write_mode);
        return Err(OptionsError::StoredWriteMode { stored, wanted }.into());
    }
    if meta.wal != logs {
        return Err(match meta.wal {
            true => OptionsError::WalDeviceMissing,
            false => OptionsError::WalDeviceUnexpected,
        }
        .into());
    }
    Ok(())
}

/// The buffer pool over `store`, bound to it as DB GC's page cache before redo (whose
/// evictions may already run GC).
pub(super) fn build_pool(
    store: &Arc<dyn PageStore>,
    options: &Options,
    meta: &Meta,
    logger: Arc<dyn PageLogger>,
) -> Result<Arc<BufferPool>> {
    // In place there is no GC to keep clean frames for.
    let reserve_percent = match options.write_mode {
        WriteMode::InPlace => 0,
        WriteMode::OutOfPlace => options.clean_reserve_percent,
    };
    let pool = BufferPool::new(
        store.clone(),
        options.buffer_pool_bytes,
        options.eviction_batch_pages,
        meta.write_clock,
        logger,
    )?
    .with_clean_reserve_percent(reserve_percent)?
    .with_snapshot_bytes_max(options.snapshot_bytes_max);
    let pool = Arc::new(pool);
    let cache: std::sync::Weak<BufferPool> = Arc::downgrade(&pool);
    store.attach_gc_cache(cache);
    assert_eq!(pool.page_capacity(), store.page_capacity(), "the pool covers the store");
    Ok(pool)
}

/// The engine state an open starts from: the superblock's, advanced by redo when there is
/// a log to replay.
#[derive(Debug)]
pub(super) struct Replayed {
    pub state: EngineState,
    pub recovery: Option<RecoveryStats>,
    /// Blob extent changes the log held beyond the free-extent tree (`blobs.rs`).
    pub extents: Vec<crate::durable::ExtentOp>,
}

impl Replayed {
    pub fn from_meta(meta: &Meta) -> Replayed {
        // The allocator starts from these: free pages are pages it handed out once.
        debug_assert!(meta.free_count <= meta.high_water, "{meta:?}");
        let alloc = AllocState {
            high_water: meta.high_water,
            free_head: meta.free_head,
            free_count: meta.free_count,
        };
        let state =
            EngineState { alloc, next_tree_id: meta.next_tree_id, write_clock: meta.write_clock };
        Replayed { state, recovery: None, extents: Vec::new() }
    }
}

/// The log an open replays and then appends to.
pub(super) struct Log<'a> {
    pub device: &'a Arc<dyn Device>,
    pub logger: &'a Arc<WalLogger>,
    pub options: &'a WalOptions,
}

/// A new database formats its log; an existing one replays it from the superblock's
/// checkpoint into `pool` and reopens it for appends after the last whole commit.
pub(super) fn recover(
    log: Log<'_>,
    pool: &BufferPool,
    meta: &Meta,
    fresh: bool,
    store: StoreRecovery,
    started: Instant,
) -> Result<Replayed> {
    let mut out = Replayed::from_meta(meta);
    if fresh {
        log.logger.attach(Wal::create(log.device.clone(), log.options.clone())?);
        return Ok(out);
    }
    // What the crashed process read from the log may sit unsynced in a page cache: make it
    // durable before pages that depend on it go out.
    log.device.sync()?;
    let mut rec = match meta.checkpoint_lsn {
        0 => Wal::open(log.device.clone(), log.options.clone())?,
        lsn => Wal::open_from(log.device.clone(), log.options.clone(), Lsn(lsn))?,
    };
    let replayed = {
        let _span = tracing::info_span!("wafer.recovery").entered();
        redo::replay(&mut rec, pool, log.logger, out.state)?
    };
    out.state = replayed.state;
    out.extents = replayed.extents;
    // Write-backs after the last commit may have stamped a little beyond its clock;
    // timestamps stay monotonic up to that slack.
    pool.raise_write_clock(out.state.write_clock);
    let (wal, report) = rec.finish()?;
    if meta.checkpoint_lsn != 0 && report.end_lsn.0 <= meta.checkpoint_lsn {
        return Err(Error::Wal(WalError::CorruptRecord {
            lsn: Lsn(meta.checkpoint_lsn),
            reason: "the log ends before the checkpoint the superblock names".into(),
        }));
    }
    log.logger.attach(wal);
    log.logger.append_abort()?;
    let duration_micros = started.elapsed().as_micros() as u64;
    out.recovery =
        Some(RecoveryStats { store, redo: replayed.counts, wal: report, duration_micros });
    // Redo allocates only page ids the store holds.
    assert!(out.state.alloc.high_water <= pool.page_capacity());
    Ok(out)
}

/// What the earlier steps built, handed to [`assemble`].
pub(super) struct Parts {
    pub pool: Arc<BufferPool>,
    pub logger: Arc<dyn PageLogger>,
    pub wal_logger: Option<Arc<WalLogger>>,
    pub doublewrite: Option<Arc<DoublewriteStore>>,
    pub data_device: Arc<dyn Device>,
    pub io_stats: Option<(Arc<IoStats>, Arc<IoStats>)>,
}

/// The database over the recovered state: the allocator (with room to grow), the background
/// write-back (after recovery, so redo's write order stays deterministic) and the checkpointer.
pub(super) fn assemble(
    parts: Parts,
    options: Options,
    meta: &Meta,
    replayed: &Replayed,
) -> Result<Db> {
    let Parts { pool, logger, wal_logger, doublewrite, data_device, io_stats } = parts;
    let alloc = Allocator::new(replayed.state.alloc, pool.page_capacity());
    let alloc = Arc::new(match growth_max_pages(&options, pool.store().as_ref()) {
        Some(max_pages) => alloc.with_growth(pool.clone(), max_pages),
        None => alloc,
    });
    let cleaner = match options.background_write_back {
        true => Some(
            BufferPool::start_cleaner(&pool)
                .map_err(|source| Error::Spawn { thread: "background_write_back", source })?,
        ),
        false => None,
    };
    let next_tree_id = Arc::new(AtomicU32::new(replayed.state.next_tree_id));
    let poisoned = Arc::new(AtomicBool::new(false));
    let writer = Arc::new(Mutex::new(()));
    let checkpointer = wal_logger.as_ref().map(|wl| {
        Arc::new(Checkpointer::new(
            pool.clone(),
            wl.clone(),
            alloc.clone(),
            next_tree_id.clone(),
            poisoned.clone(),
            writer.clone(),
            &options,
            meta.checkpoint_lsn,
            meta.blobs,
        ))
    });
    let (io_stats, wal_io_stats) = io_stats.map_or((None, None), |(d, w)| (Some(d), Some(w)));
    let inner = DbInner {
        options,
        pool,
        logger,
        alloc,
        catalog: TreeCore::new(catalog::CATALOG_TREE_ID, meta.catalog_root),
        trees: RwLock::new(HashMap::new()),
        next_tree_id,
        closed: AtomicBool::new(false),
        poisoned,
        io_stats,
        wal_io_stats,
        wal: wal_logger,
        writer,
        checkpointer,
        checkpoint_thread: Mutex::new(None),
        recovery: replayed.recovery,
        doublewrite,
        data_device,
        locks: Arc::default(),
        cleaner: Mutex::new(cleaner),
        blobs: OnceLock::new(),
        file_locks: Mutex::new(None),
    };
    assert_eq!(inner.alloc.state(), replayed.state.alloc, "the allocator starts where redo ended");
    Ok(Db { inner: Arc::new(inner) })
}

/// The last steps, on a database that works: a new one gets its catalog root (and, with a
/// log, its first checkpoint: it exists once its superblock does), the catalog and blob space
/// are loaded, what a crash left detached is freed, a long replay is checkpointed, and the
/// background checkpoint thread starts.
pub(super) fn finish(
    db: &Db,
    meta: &Meta,
    fresh: bool,
    extents: Vec<crate::durable::ExtentOp>,
) -> Result<()> {
    let inner = &db.inner;
    if fresh {
        inner.write_txn(Durability::None, 0, |env| {
            let mut g =
                env.alloc.allocate_one(env.pool, PageKind::Leaf, catalog::CATALOG_TREE_ID)?;
            assert_eq!(g.pid(), catalog::CATALOG_ROOT);
            stamp_image(env.logger, &mut g);
            Ok(())
        })?;
        if inner.wal.is_some() {
            inner.checkpoint()?;
        }
    }
    db.load_catalog()?;
    if meta.blobs {
        db.open_blobs(extents)?;
    }
    if inner.options.read_only {
        return Ok(());
    }
    db.reclaim_garbage()?;
    if !fresh && inner.recovery.is_some_and(|r| r.redo.records > 1) {
        // Bounds the next recovery and frees the replayed log (its checkpoint record carries
        // the blob extent changes the free-extent tree still lacks).
        inner.checkpoint()?;
    }
    if let (Some(cp), true) = (&inner.checkpointer, inner.options.background_checkpoint) {
        let thread = CheckpointThread::start(cp)
            .map_err(|source| Error::Spawn { thread: "background_checkpoint", source })?;
        *inner.lock_checkpoint_thread() = Some(thread);
    }
    Ok(())
}

/// How many page ids the store may grow to, or None: in place what `max_file_bytes` holds
/// past the data offset (no limit but the filesystem's by default); out of place what the
/// layout made at creation reaches, when it was made for a file that grows. Read-only opens
/// write nothing, and a limit the store already holds is no growth.
fn growth_max_pages(options: &Options, store: &dyn PageStore) -> Option<u64> {
    if options.read_only {
        return None;
    }
    let pages = match options.write_mode {
        crate::options::WriteMode::InPlace => {
            let max_bytes = options.max_file_bytes.unwrap_or(u64::MAX);
            max_bytes.saturating_sub(options.data_offset_bytes) / PAGE_SIZE as u64
        }
        crate::options::WriteMode::OutOfPlace if store.layout_bytes() > 0 => {
            store.page_capacity_max()
        }
        crate::options::WriteMode::OutOfPlace => return None,
    };
    // A layout made for growth reaches at least as far as the store holds now.
    debug_assert!(store.layout_bytes() == 0 || store.page_capacity_max() >= store.page_capacity());
    (pages > store.page_capacity()).then_some(pages)
}
