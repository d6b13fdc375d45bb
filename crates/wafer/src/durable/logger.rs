//! [`WalLogger`]: the [`PageLogger`] that writes every page change to the WAL as a redo record.
//!
//! The write-back rule lives here: a dirty page may go to the device only when (a) it carries no
//! change of the batch in progress (`page_lsn <= committed`, the LSN of the last commit record
//! appended) and (b) the log is durable up to that commit record. So no page on the device ever
//! holds a change recovery would not redo, and recovery needs no undo.
use super::record::{self, CommitBody, EngineState, ExtentOp};
use crate::page::{Lsn, PageChange, PageId, PageLogger};
use crate::wal::{Durability, Lsn as WalLsn, Wal, WalError};
use crate::{Corruption, Error, Result};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Mutex, OnceLock};

/// LSN handed out when an append failed: above every real LSN, so the page it is stamped on is
/// never written back (the database is poisoned by then anyway).
const FAILED_LSN: Lsn = u64::MAX;

#[derive(Debug)]
pub struct WalLogger {
    /// Set once recovery has read the log to its end; until then only redo touches pages and
    /// every LSN they carry came from the durable log.
    wal: OnceLock<Wal>,
    /// LSN of the last commit record appended: pages with a higher LSN hold a batch in progress.
    committed: AtomicU64,
    /// An append failed: pages in memory are ahead of the log; nothing may be written back.
    failed: AtomicBool,
    /// Payload scratch buffer (appends happen under the writer mutex, so this rarely contends).
    scratch: Mutex<Vec<u8>>,
    /// The highest commit record seen durable (by a commit or `make_durable` that waited).
    durable_commit: AtomicU64,
    /// The state the last COMMIT or CKPT record appended says (None: none since the log was
    /// opened): the next COMMIT carries only the fields that differ, as redo reads them in
    /// the same order.
    last_state: Mutex<Option<EngineState>>,
}

impl WalLogger {
    pub fn new() -> WalLogger {
        WalLogger {
            wal: OnceLock::new(),
            committed: AtomicU64::new(0),
            failed: AtomicBool::new(false),
            scratch: Mutex::new(Vec::with_capacity(8192)),
            durable_commit: AtomicU64::new(0),
            last_state: Mutex::new(None),
        }
    }

    /// Hands over the recovered (or new) log; appends go to it from now on.
    pub fn attach(&self, wal: Wal) {
        let ok = self.wal.set(wal).is_ok();
        assert!(ok, "WAL attached twice");
    }

    pub fn wal(&self) -> Result<&Wal> {
        self.wal.get().ok_or(Error::Corruption(Corruption::WalBeforeRecovery))
    }

    pub fn failed(&self) -> bool {
        self.failed.load(Ordering::Acquire)
    }

    pub fn committed(&self) -> Lsn {
        self.committed.load(Ordering::Acquire)
    }

    /// Redo: pages up to `lsn` hold committed changes only.
    pub fn set_committed(&self, lsn: Lsn) {
        self.committed.fetch_max(lsn, Ordering::AcqRel);
    }

    fn fail(&self) {
        self.failed.store(true, Ordering::Release);
    }

    fn append(&self, kind: u8, payload: &[u8]) -> Result<Lsn> {
        let wal = self.wal()?;
        match wal.append(kind, payload) {
            Ok(lsn) => Ok(lsn.0),
            Err(e) => {
                self.fail();
                Err(e.into())
            }
        }
    }

    /// Ends a batch: appends its commit record (the allocator state after it and the free
    /// extent changes it made) and makes its pages eligible for write-back. Caller holds the
    /// writer mutex.
    pub fn append_commit(&self, body: &CommitBody) -> Result<Lsn> {
        let lsn = {
            let mut last = self.last_state.lock().unwrap_or_else(|e| e.into_inner());
            let mut buf = self.scratch.lock().unwrap_or_else(|e| e.into_inner());
            record::encode_commit(body, last.as_ref(), &mut buf);
            let lsn = self.append(record::KIND_COMMIT, &buf)?;
            // Only an appended record moves the base: a failed append poisons the log anyway.
            *last = Some(body.state);
            lsn
        };
        assert!(lsn > self.committed(), "commit records ascend");
        self.set_committed(lsn);
        Ok(lsn)
    }

    /// A checkpoint's redo start, carrying the state redo begins with and the blob extent
    /// changes committed since the last fold. Caller holds the writer mutex (no batch in
    /// progress).
    pub fn append_checkpoint(&self, state: &EngineState, extents: &[ExtentOp]) -> Result<Lsn> {
        let mut last = self.last_state.lock().unwrap_or_else(|e| e.into_inner());
        let mut buf = self.scratch.lock().unwrap_or_else(|e| e.into_inner());
        record::encode_checkpoint(state, extents, &mut buf);
        let lsn = self.append(record::KIND_CHECKPOINT, &buf)?;
        *last = Some(*state);
        Ok(lsn)
    }

    /// Written right after recovery: any page records after the last commit belong to a batch
    /// that died with the crash, and later commits must not adopt them.
    pub fn append_abort(&self) -> Result<Lsn> {
        self.append(record::KIND_ABORT, &[record::RECORD_VERSION])
    }

    pub fn commit(&self, lsn: Lsn, durability: Durability) -> Result<()> {
        let r = self.wal()?.commit(WalLsn(lsn), durability);
        r.inspect_err(|_| self.fail()).map_err(Error::from)?;
        if durability != Durability::None {
            self.durable_commit.fetch_max(lsn, Ordering::AcqRel);
        }
        Ok(())
    }
}

impl Default for WalLogger {
    fn default() -> Self {
        WalLogger::new()
    }
}

impl PageLogger for WalLogger {
    fn log(&self, pid: PageId, change: &PageChange<'_>) -> Lsn {
        let mut buf = self.scratch.lock().unwrap_or_else(|e| e.into_inner());
        let kind = record::encode_change(pid, change, &mut buf);
        let mut packed = Vec::new();
        let (kind, payload) = match record::compress(kind, &buf, &mut packed) {
            Some(k) => (k, &packed[..]),
            None => (kind, &buf[..]),
        };
        // The trait cannot fail: a failed append marks the logger failed, the writer sees it
        // before committing and poisons the database.
        self.append(kind, payload).unwrap_or(FAILED_LSN)
    }

    fn last_lsn(&self) -> Lsn {
        match self.wal.get() {
            Some(w) => w.next_lsn().0.saturating_sub(1),
            None => self.committed(),
        }
    }

    fn make_durable(&self, lsn: Lsn) -> Result<()> {
        if self.failed() {
            return Err(Error::Poisoned);
        }
        let Some(wal) = self.wal.get() else {
            // Recovery: every page LSN came from a record read back from the device.
            return Ok(());
        };
        // Durable up to the commit record that covers `lsn`, not just to `lsn`: a page written
        // with part of a batch whose commit record then gets lost would never be undone. (The
        // log may well be durable past `lsn` but not past the commit: a full buffer flushes
        // mid-batch.) The last commit appended is at or after the covering one.
        let committed = self.committed();
        if committed < wal.durable_lsn().0 {
            return Ok(());
        }
        if lsn > committed {
            return Err(Error::Wal(WalError::BadLsn {
                lsn: WalLsn(lsn),
                start: wal.start_lsn(),
                end: WalLsn(committed),
                reason: "page carries an uncommitted change",
            }));
        }
        self.commit(committed, Durability::Sync)
    }

    fn write_back_limit(&self) -> Lsn {
        if self.failed() {
            return 0;
        }
        self.committed()
    }

    fn gc_durable_limit(&self) -> Option<Lsn> {
        let hooked = self.wal.get().is_some_and(|w| w.has_before_write());
        hooked.then(|| if self.failed() { 0 } else { self.durable_commit.load(Ordering::Acquire) })
    }
}
