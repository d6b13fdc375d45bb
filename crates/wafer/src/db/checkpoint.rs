//! Fuzzy checkpoints (docs/internals/recovery.md) and the thread that runs them. A writer whose commit
//! finds a checkpoint due only asks for one ([`Checkpointer::after_commit`]); the checkpoint
//! thread flushes the pool while the writers go on, so no writer pays for it. A writer still
//! waits for a checkpoint when the log lacks room for its batch (`DbInner::ensure_log_room`):
//! then it waits for the running one and runs another only if that did not free enough.
//!
//! A checkpoint's state and everything it touches (pool, log, allocator, the writer mutex, the
//! poison flag) live in [`Checkpointer`], which the database and the thread share. The thread
//! never holds the database itself, so the last handle's drop stops and joins it before the
//! database goes ([`CheckpointThread`]): a dropped database writes nothing afterwards.
use super::blob_state::BlobState;
use crate::alloc::Allocator;
use crate::buffer::BufferPool;
use crate::device::WritePurpose;
use crate::durable::{EngineState, WalLogger};
use crate::options::WriteMode;
use crate::page::meta::{Meta, META_PAGE_ID};
use crate::page::{PageId, PAGE_SIZE};
use crate::wakeup::Wakeup;
use crate::wal::{Durability, Lsn};
use crate::{Error, Result};
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, OnceLock};
use std::time::{Duration, Instant};

/// Bookkeeping of completed checkpoints (under `Checkpointer::state`).
#[derive(Debug)]
pub(super) struct CkptState {
    pub last_at: Instant,
    pub count: u64,
}

/// What a checkpoint needs, shared by the database and its checkpoint thread.
#[derive(Debug)]
pub(super) struct Checkpointer {
    pub pool: Arc<BufferPool>,
    pub logger: Arc<WalLogger>,
    pub alloc: Arc<Allocator>,
    pub next_tree_id: Arc<AtomicU32>,
    pub poisoned: Arc<AtomicBool>,
    /// The database's writer mutex: the checkpoint record goes in between batches.
    pub writer: Arc<Mutex<()>>,
    pub write_mode: WriteMode,
    pub catalog_root: PageId,
    /// The superblock's `blobs` flag (values tagged), kept by every checkpoint.
    pub blobs: bool,
    /// The blob space, once open: every checkpoint record carries its extent changes since
    /// the last fold.
    pub blob_state: OnceLock<Arc<BlobState>>,
    /// `Options::checkpoint_log_bytes` and `checkpoint_interval`.
    pub log_bytes: u64,
    pub interval: Option<Duration>,
    /// Held while a checkpoint runs.
    pub state: Mutex<CkptState>,
    /// Redo start of the last complete checkpoint (read without `state` by the due check).
    pub last_lsn: AtomicU64,
    /// Wakes the checkpoint thread, when one runs.
    signal: Wakeup,
}

impl Checkpointer {
    #[allow(clippy::too_many_arguments)] // The shared parts, each named.
    pub fn new(
        pool: Arc<BufferPool>,
        logger: Arc<WalLogger>,
        alloc: Arc<Allocator>,
        next_tree_id: Arc<AtomicU32>,
        poisoned: Arc<AtomicBool>,
        writer: Arc<Mutex<()>>,
        options: &crate::Options,
        last_lsn: u64,
        blobs: bool,
    ) -> Checkpointer {
        // Startup's hand-over: the redo start lies in the log as recovered (the due check's
        // subtraction saturates, so a start past the end would stop checkpoints silently).
        if let Ok(wal) = logger.wal() {
            assert!(last_lsn <= wal.next_lsn().0, "redo start {last_lsn} past the log's end");
        }
        Checkpointer {
            pool,
            logger,
            alloc,
            next_tree_id,
            poisoned,
            writer,
            write_mode: options.write_mode,
            catalog_root: super::catalog::CATALOG_ROOT,
            blobs,
            blob_state: OnceLock::new(),
            log_bytes: options.checkpoint_log_bytes,
            interval: options.checkpoint_interval,
            state: Mutex::new(CkptState { last_at: Instant::now(), count: 0 }),
            last_lsn: AtomicU64::new(last_lsn),
            signal: Wakeup::default(),
        }
    }

    fn lock_state(&self) -> MutexGuard<'_, CkptState> {
        let st = self.state.lock().unwrap_or_else(|e| e.into_inner());
        // The interval's due check subtracts from `last_at`: it lies in the past.
        debug_assert!(st.last_at <= Instant::now(), "last checkpoint in the future");
        st
    }

    pub fn lock_writer(&self) -> MutexGuard<'_, ()> {
        // Lock order: the checkpoint's state, then the writer mutex (a necessary condition:
        // std names no owner). The other order would deadlock against a writer's checkpoint.
        debug_assert!(self.state.try_lock().is_err(), "writer mutex taken outside a checkpoint");
        self.writer.lock().unwrap_or_else(|e| e.into_inner())
    }

    pub fn engine_state(&self) -> EngineState {
        let state = EngineState {
            alloc: self.alloc.state(),
            next_tree_id: self.next_tree_id.load(Ordering::Relaxed),
            write_clock: self.pool.write_clock(),
        };
        // Recovery hands this to the next open's catalog: the catalog's own id is never next.
        assert!(state.next_tree_id > super::catalog::CATALOG_TREE_ID);
        state
    }

    /// The log grew past the trigger since the last checkpoint.
    fn grown(&self) -> bool {
        let Ok(wal) = self.logger.wal() else { return false };
        // The trigger: options validated it nonzero, so a checkpoint is never due for nothing.
        debug_assert!(self.log_bytes > 0, "a checkpoint trigger of no bytes");
        let since = wal.next_lsn().0.saturating_sub(self.last_lsn.load(Ordering::Acquire));
        since >= self.log_bytes
    }

    fn due(&self, st: &CkptState) -> bool {
        // `st` is read under the state mutex (a necessary condition: std names no owner), so
        // two callers never both find a checkpoint due and run it twice.
        debug_assert!(self.state.try_lock().is_err(), "due without the state mutex");
        self.grown() || self.interval.is_some_and(|i| st.last_at.elapsed() >= i)
    }

    /// Called by a writer after its commit: a due checkpoint is asked of the thread, or, without
    /// one, run here unless one is running (then this writer just goes on).
    pub fn after_commit(&self) {
        let threaded = self.signal.enabled();
        if threaded && self.interval.is_none() {
            // The usual case costs an atomic load or two, no mutex.
            if self.grown() {
                self.signal.request();
            }
            return;
        }
        // Called after a commit record: the log holds something past the last checkpoint's start.
        debug_assert!(self.logger.committed() > 0, "after_commit before any commit");
        let Ok(mut st) = self.state.try_lock() else { return };
        if !self.due(&st) {
            return;
        }
        if threaded {
            drop(st);
            self.signal.request();
        } else {
            // An error poisons the database (inside); the writer's own batch is already durable
            // as it asked, so it does not fail for the checkpoint's sake.
            let _ = self.checkpoint_locked(&mut st);
        }
    }

    /// Runs a checkpoint now, after the one in progress if any.
    pub fn run(&self) -> Result<()> {
        let mut st = self.lock_state();
        let r = self.checkpoint_locked(&mut st);
        // The superblock now names the last checkpoint LSN as the redo start: the log holds it.
        debug_assert!(r.is_err() || self.checkpoint_lsn_durable(), "checkpoint LSN not durable");
        r
    }

    /// Runs a checkpoint unless `enough()` holds once the one in progress, if any, is done
    /// (a writer short of log room: the running checkpoint may free what it needs).
    pub fn run_unless(&self, enough: impl Fn() -> bool) -> Result<()> {
        let mut st = self.lock_state();
        if enough() {
            // The checkpoint this waited for, if any, left its LSN durable before its superblock.
            debug_assert!(self.checkpoint_lsn_durable(), "checkpoint LSN not durable");
            return Ok(());
        }
        self.checkpoint_locked(&mut st)
    }

    pub fn count(&self) -> u64 {
        let count = self.lock_state().count;
        // Each completed checkpoint logged its record at an LSN above the last: never at 0.
        debug_assert!(count == 0 || self.last_lsn.load(Ordering::Acquire) > 0, "{count}");
        count
    }

    /// Whether the LSN redo would start from is no later than what the log holds durably.
    fn checkpoint_lsn_durable(&self) -> bool {
        let Ok(wal) = self.logger.wal() else { return true };
        let durable = wal.durable_lsn().0;
        // The log makes durable only what it appended.
        debug_assert!(durable <= wal.next_lsn().0, "durable lsn {durable} past the log's end");
        self.last_lsn.load(Ordering::Acquire) <= durable
    }

    fn checkpoint_locked(&self, st: &mut CkptState) -> Result<()> {
        let _span = tracing::debug_span!("wafer.checkpoint", number = st.count + 1).entered();
        let count = st.count;
        let r = self.checkpoint_steps(st);
        // A checkpoint counts once it is complete, and only then.
        assert_eq!(st.count, count + u64::from(r.is_ok()), "checkpoints counted");
        if r.is_err() {
            self.poisoned.store(true, Ordering::Relaxed);
        }
        r
    }

    /// The fuzzy checkpoint: (1) under the writer mutex (between batches) append a CHECKPOINT
    /// record L carrying the engine state (and the blob extent changes since the last fold); (2) write back every dirty page, the workload going
    /// on (pages of a batch in progress are skipped, then written in a second pass under the
    /// writer mutex); (3) sync the store; (4) make the log durable through L; (5) write and sync
    /// the superblock naming L as the redo start; (6) truncate the log before L.
    fn checkpoint_steps(&self, st: &mut CkptState) -> Result<()> {
        let logger = &self.logger;
        if self.poisoned.load(Ordering::Relaxed) || self.pool.is_poisoned() || logger.failed() {
            return Err(Error::Poisoned);
        }
        let wal = logger.wal()?;
        let (l, state) = {
            let _w = self.lock_writer();
            let state = self.engine_state();
            let space = self.blob_state.get().map(|b| b.lock_space());
            let extents = space.as_ref().map_or(&[][..], |s| s.since_fold());
            (logger.append_checkpoint(&state, extents)?, state)
        };
        // Redo starts at the newest checkpoint: each one's record comes after the last's.
        assert!(l > self.last_lsn.load(Ordering::Acquire), "checkpoint LSNs ascend");
        let skipped = self.pool.flush_dirty(WritePurpose::UserCheckpoint)?;
        if skipped > 0 {
            // No batch is in progress under the mutex: every dirty page is committed.
            let _w = self.lock_writer();
            if self.pool.flush_dirty(WritePurpose::UserCheckpoint)? > 0 {
                // Only a failed append leaves such pages (the logger refuses them).
                return Err(Error::Poisoned);
            }
        }
        let store = self.pool.store();
        store.sync()?;
        // Out of place: the page map, after the pages it points to are durable.
        store.checkpoint()?;
        logger.commit(l, Durability::Sync)?;
        // The superblock below names L as the redo start: the log must hold it durably first.
        assert!(wal.durable_lsn().0 > l, "checkpoint record {l} not durable after its sync");
        let meta = Meta {
            write_mode: self.write_mode as u8,
            catalog_root: self.catalog_root,
            high_water: state.alloc.high_water,
            free_head: state.alloc.free_head,
            free_count: state.alloc.free_count,
            last_lsn: l,
            next_tree_id: state.next_tree_id,
            page_capacity: self.pool.page_capacity(),
            write_clock: self.pool.write_clock(),
            wal: true,
            checkpoint_lsn: l,
            blobs: self.blobs,
            layout_bytes: store.layout_bytes(),
        };
        write_meta(store.as_ref(), &meta)?;
        // Tree ids only grow: the state logged at L is no newer than the database's now.
        assert!(state.next_tree_id <= self.next_tree_id.load(Ordering::Relaxed));
        wal.truncate_before(Lsn(l))?;
        self.last_lsn.store(l, Ordering::Release);
        st.last_at = Instant::now();
        st.count += 1;
        Ok(())
    }
}

/// The running checkpoint thread; dropping the handle stops and joins it (a checkpoint in
/// progress finishes first).
#[derive(Debug)]
pub(super) struct CheckpointThread {
    cp: Arc<Checkpointer>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl CheckpointThread {
    pub fn start(cp: &Arc<Checkpointer>) -> std::io::Result<CheckpointThread> {
        let shared = cp.clone();
        let thread = std::thread::Builder::new()
            .name("wafer-checkpoint".into())
            .spawn(move || run(&shared))?;
        // One thread per checkpointer: a second would run checkpoints nobody asked for.
        debug_assert!(!cp.signal.enabled(), "a second checkpoint thread");
        cp.signal.set_enabled(true);
        Ok(CheckpointThread { cp: cp.clone(), thread: Some(thread) })
    }
}

impl Drop for CheckpointThread {
    fn drop(&mut self) {
        // `spawn` enabled the signal and only this drop clears it: one thread, stopped once.
        debug_assert!(self.cp.signal.enabled(), "the checkpoint thread stopped twice");
        self.cp.signal.set_enabled(false);
        self.cp.signal.stop();
        if let Some(t) = self.thread.take() {
            // A panic in the thread was already reported on stderr.
            let _ = t.join();
        }
    }
}

fn run(cp: &Checkpointer) {
    // `check_options` refused a zero trigger: with it, the thread would never find one due.
    debug_assert!(cp.log_bytes > 0, "a checkpoint thread with no log trigger");
    while !cp.signal.wait() {
        let mut st = cp.lock_state();
        // A foreground checkpoint (a writer short of log room, `Db::checkpoint`) may have run
        // since the request.
        if cp.due(&st) {
            // An error poisons the database (inside): writers see it on their next batch.
            let _ = cp.checkpoint_locked(&mut st);
        }
    }
}

/// Writes the superblock through the store (so the doublewrite area protects it) and syncs: at
/// the end of each checkpoint, and of a flush without a log (`durability.rs`).
pub(super) fn write_meta(store: &dyn crate::buffer::PageStore, meta: &Meta) -> Result<()> {
    // Paired with `Meta::decode` at the next open.
    assert!(meta.is_sane(), "a superblock the next open would refuse: {meta:?}");
    assert!(meta.page_capacity <= store.page_capacity(), "the store holds what it names");
    let mut buf = Box::new([0u8; PAGE_SIZE]);
    meta.encode(&mut buf);
    store.write_batch(&[(META_PAGE_ID, &buf)], WritePurpose::Metadata)?;
    store.sync()
}
