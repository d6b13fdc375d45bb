//! The database's durable write path: batches under the writer mutex ending in a commit record,
//! the durability wait after the mutex (so group commit gathers writers), room in the log, and
//! the stop-the-world flush of a database without a WAL (fuzzy checkpoints: `checkpoint.rs`).
//! Protocols: docs/internals/recovery.md.
use super::batch::log_estimate_bytes;
use super::checkpoint::write_meta;
use super::inner::DbInner;
use crate::btree::Env;
use crate::device::WritePurpose;
use crate::durable::{CommitBody, WalLogger};
use crate::page::meta::Meta;
use crate::page::PAGE_SIZE;
use crate::wal::{Durability, WalError};
use crate::{Error, Result};
use std::sync::atomic::Ordering;
use std::sync::MutexGuard;

impl DbInner {
    pub(super) fn wal_logger(&self) -> Option<&WalLogger> {
        // Open's hand-over: a log always comes with the checkpointer that truncates it.
        debug_assert_eq!(
            self.wal.is_some(),
            self.checkpointer.is_some(),
            "log without checkpoints"
        );
        self.wal.as_deref()
    }

    pub(super) fn lock_writer(&self) -> MutexGuard<'_, ()> {
        // The mutex orders batches in the log; without one, writers hold tree latches instead.
        debug_assert!(self.wal.is_some(), "the writer mutex taken without a log");
        self.writer.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn poison(&self) {
        // Poison means memory ran ahead of the log; without a log there is nothing to be ahead of.
        debug_assert!(self.wal.is_some(), "poisoned without a log");
        self.poisoned.store(true, Ordering::Relaxed);
    }

    /// Runs `apply` as one atomic, durable batch. Without a WAL it just runs it. With one:
    /// under the writer mutex (apply is in memory; readers stay concurrent), then a commit
    /// record; the wait for durability happens after the mutex is released. An error after
    /// any record was logged poisons the database (no undo: memory is ahead of the log).
    pub(super) fn write_txn<T>(
        &self,
        durability: Durability,
        estimate_bytes: u64,
        apply: impl FnOnce(Env<'_>) -> Result<T>,
    ) -> Result<T> {
        let done = self.write_txn_step(durability, estimate_bytes, |env| apply(env).map(Some))?;
        // `apply` is wrapped never to decline, and the step declines only when it does.
        debug_assert!(done.is_some(), "a batch that cannot decline declined");
        done.ok_or_else(|| crate::Corruption::UnaskedDecline.into())
    }

    /// As [`DbInner::write_txn`], where `apply` may decline (Ok(None)) before it changes
    /// anything: no commit then, no durability wait, and Ok(None) back. A write that finds a
    /// page outside the pool declines so that it reads it after the mutex, not under it.
    pub(super) fn write_txn_step<T>(
        &self,
        durability: Durability,
        estimate_bytes: u64,
        apply: impl FnOnce(Env<'_>) -> Result<Option<T>>,
    ) -> Result<Option<T>> {
        let _span = tracing::debug_span!("wafer.commit", ?durability, estimate_bytes).entered();
        let (Some(logger), Some(cp)) = (self.wal_logger(), self.checkpointer.as_deref()) else {
            let r = apply(self.env());
            // Without a log, what a batch freed may be reused after the next flush.
            self.seal_blobs(r.is_ok().then_some(crate::blob::Gate::Flush));
            return r;
        };
        let wal = logger.wal()?;
        // The room check before the mutex may checkpoint; the one under it makes sure writers
        // that passed the first check together did not use the room up meanwhile.
        // Room for the fold this batch may end with.
        let reserve_bytes = super::blob_state::fold_reserve_bytes(self.blobs.get().map(|b| &**b));
        let estimate_bytes = estimate_bytes + reserve_bytes;
        let mut attempt = 0;
        let guard = loop {
            self.ensure_log_room(logger, estimate_bytes)?;
            let guard = self.lock_writer();
            attempt += 1;
            if self.log_free_bytes(logger)? >= estimate_bytes || attempt >= LOG_ROOM_ATTEMPTS {
                break guard;
            }
        };
        self.check_writable()?;
        let before = wal.next_lsn();
        // A batch that declined changed nothing, and folds nothing either.
        let result = apply(self.env()).and_then(|v| match v {
            Some(v) => self.fold_blobs_if_full(self.env()).map(|()| Some(v)),
            None => Ok(None),
        });
        // The log only grows under a batch: the commit's "records since `before`" relies on it.
        debug_assert!(wal.next_lsn().0 >= before.0, "the log moved back under a batch");
        let value = match result {
            // Not `logged`: a concurrent flush pads the log's block, moving `next_lsn` with
            // no record of ours. `apply` declines only before it changes anything.
            Ok(None) if !logger.failed() => return Ok(None),
            Ok(Some(v)) if !logger.failed() => v,
            Ok(_) => {
                self.poison();
                self.seal_blobs(None);
                return Err(Error::Poisoned);
            }
            Err(e) => {
                if wal.next_lsn() != before || logger.failed() {
                    self.poison();
                }
                self.seal_blobs(None);
                return Err(e);
            }
        };
        let lsn = self.append_batch_commit(logger, wal, || cp.engine_state(), before)?;
        if lsn == 0 {
            return Ok(Some(value));
        }
        drop(guard);
        logger.commit(lsn, durability).inspect_err(|_| self.poison())?;
        // A synchronous commit returns once its record is durable (the acknowledgement).
        debug_assert!(
            durability != Durability::Sync || wal.durable_lsn().0 > lsn,
            "commit {lsn} acknowledged before it was durable"
        );
        cp.after_commit();
        Ok(Some(value))
    }

    /// Under the writer mutex, the batch applied from `before` on: its commit record (when it
    /// logged anything); returns the LSN its durability wait covers (0: none).
    fn append_batch_commit(
        &self,
        logger: &WalLogger,
        wal: &crate::wal::Wal,
        engine_state: impl FnOnce() -> crate::durable::record::EngineState,
        before: crate::wal::Lsn,
    ) -> Result<u64> {
        debug_assert!(self.writer_held(), "a commit record goes in between batches only");
        // Blob extent changes log no page record of their own: they ride in the commit.
        let (extents, folded) = self.commit_extents();
        let logged = wal.next_lsn() != before || !extents.is_empty() || folded;
        if !logged {
            // Nothing changed, but a Sync caller still expects every batch before its own to be
            // durable when it returns (acknowledgement covers the log prefix).
            return Ok(logger.committed());
        }
        let body = CommitBody { state: engine_state(), folded, extents };
        let lsn = logger.append_commit(&body).inspect_err(|_| {
            self.poison();
            self.seal_blobs(None);
        })?;
        // The batch's records lie between `before` and its commit record: the log ascends,
        // and the logger's commit point (which lets pages go out) covers the record.
        assert!(lsn >= before.0, "commit record at {lsn}, the batch began at {}", before.0);
        assert!(logger.committed() >= lsn, "the commit point lags its record");
        // Under the writer mutex still: nobody takes what the batch freed before this.
        self.seal_blobs(Some(crate::blob::Gate::Lsn(lsn)));
        Ok(lsn)
    }

    /// Whether the writer mutex is held, by this thread or another (std's mutex names no
    /// owner, so a necessary condition only); always true without a log, which has no mutex.
    pub(super) fn writer_held(&self) -> bool {
        // Open's hand-over: a log comes with its checkpointer, whose writer mutex this is.
        debug_assert_eq!(self.wal.is_some(), self.checkpointer.is_some());
        self.wal.is_none() || self.writer.try_lock().is_err()
    }

    /// Makes room in the log for a batch of about `estimate_bytes`: checkpoints (which truncates
    /// the log) when the free space is short; `LogFull` only when even that does not help.
    fn ensure_log_room(&self, logger: &WalLogger, estimate_bytes: u64) -> Result<()> {
        // `write_txn_step`'s hand-over: the estimate carries the fold room every batch keeps.
        let reserve_bytes = super::blob_state::fold_reserve_bytes(self.blobs.get().map(|b| &**b));
        debug_assert!(estimate_bytes >= reserve_bytes, "{estimate_bytes} without the fold room");
        let wal = logger.wal()?;
        let slack = log_slack_bytes(wal);
        let free = |_: &crate::wal::Wal| self.log_free_bytes(logger).unwrap_or(0);
        let needed = estimate_bytes;
        let usable = wal.capacity_bytes().saturating_sub(slack);
        if needed > usable {
            // Could never fit, even in an empty log: refuse before anything changes.
            return Err(Error::Wal(WalError::LogFull {
                needed_bytes: needed - usable,
                start_lsn: wal.start_lsn(),
            }));
        }
        if free(wal) >= needed {
            return Ok(());
        }
        // Waits for a checkpoint in progress, which may free enough; runs one otherwise.
        match &self.checkpointer {
            Some(cp) => cp.run_unless(|| free(wal) >= needed)?,
            None => self.checkpoint()?,
        }
        let room = free(wal);
        if room < needed {
            return Err(Error::Wal(WalError::LogFull {
                needed_bytes: needed - room,
                start_lsn: wal.start_lsn(),
            }));
        }
        Ok(())
    }

    /// Log bytes a batch may still use before the circular area is full (minus slack for the
    /// padding of partial blocks closed by flushes).
    fn log_free_bytes(&self, logger: &WalLogger) -> Result<u64> {
        let wal = logger.wal()?;
        let used = wal.retained_bytes();
        // The log's hand-over: what it retains lies in its circular area.
        debug_assert!(used <= wal.capacity_bytes(), "{used} bytes retained in a smaller log");
        Ok(wal.capacity_bytes().saturating_sub(used + log_slack_bytes(wal)))
    }

    /// A fuzzy checkpoint (WAL: `checkpoint.rs`, after the one in progress if any) or a
    /// stop-the-world flush (no WAL; callers hold every tree's structure latch then).
    pub(super) fn checkpoint(&self) -> Result<()> {
        match &self.checkpointer {
            Some(cp) => {
                let before = cp.count();
                cp.run()?;
                // Gates open below on the strength of a completed checkpoint, not a skipped one.
                debug_assert!(cp.count() > before, "a checkpoint returned without completing");
                // Everything before the checkpoint is durable: freed blob runs may go.
                match self.blobs.get() {
                    Some(b) => self.open_blob_gates(b),
                    None => Ok(()),
                }
            }
            None => self.flush_stop_the_world(),
        }
    }

    /// Dirty pages, sync, superblock, sync (no WAL). Callers hold every tree's structure latch.
    fn flush_stop_the_world(&self) -> Result<()> {
        // The superblock below says "no WAL": with a log this would cut recovery off from it.
        assert!(self.checkpointer.is_none() && self.wal.is_none(), "a flush without a log");
        if let Some(b) = self.blobs.get() {
            // No log carries extent changes: the tree takes them before its pages go out.
            super::blob_state::fold_free_tree(b, self.env())?;
            b.lock_space().discard_batch();
        }
        self.pool.flush_all(WritePurpose::UserCheckpoint)?;
        let store = self.pool.store();
        store.sync()?;
        // Out of place: the page map, after the pages it points to are durable.
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
            wal: false,
            checkpoint_lsn: 0,
            blobs: self.blobs.get().is_some(),
            layout_bytes: store.layout_bytes(),
        };
        write_meta(store.as_ref(), &meta)?;
        self.blobs_flushed()
    }

    pub(super) fn checkpoint_count(&self) -> u64 {
        // Checkpoints run only where a log is, so counts without one stay 0.
        debug_assert_eq!(self.checkpointer.is_some(), self.wal.is_some(), "checkpoints sans log");
        self.checkpointer.as_ref().map_or(0, |cp| cp.count())
    }
}

/// Rounds of "make room, take the writer mutex, check again" before a batch goes ahead anyway
/// (it then fails with `LogFull` mid-way only if other writers keep filling the log).
const LOG_ROOM_ATTEMPTS: u32 = 4;

impl DbInner {
    /// Whether a batch of `ops` operations with `payload_bytes` of keys and values fits in a
    /// quarter of the log as its room check estimates it (a writer sizing its own batches,
    /// as a copy does, keeps each well inside any log). Always true without a log.
    pub(super) fn batch_fits_log(&self, payload_bytes: u64, ops: u64) -> Result<bool> {
        // Callers count the operation they are about to add: a batch of none fits trivially.
        debug_assert!(ops > 0, "{payload_bytes} bytes in no operations");
        let Some(logger) = self.wal_logger() else { return Ok(true) };
        let wal = logger.wal()?;
        let usable = wal.capacity_bytes().saturating_sub(log_slack_bytes(wal));
        // Tagged batches estimate three records an operation (`Db::write_tagged`).
        let estimate = log_estimate_bytes(payload_bytes, 3 * ops)
            + super::blob_state::fold_reserve_bytes(self.blobs.get().map(|b| &**b));
        Ok(estimate <= usable / 4)
    }
}

fn log_slack_bytes(wal: &crate::wal::Wal) -> u64 {
    // Validated at open (`WalOptions::validate`): at least four blocks buffer the log.
    debug_assert!(
        wal.options().buffer_blocks >= 4,
        "{} buffer blocks",
        wal.options().buffer_blocks
    );
    2 * wal.options().buffer_blocks as u64 * PAGE_SIZE as u64
}
