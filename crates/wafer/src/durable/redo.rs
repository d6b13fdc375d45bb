//! Redo: replays the log from the checkpoint's record, physiologically (ARIES): a record applies
//! to its page only when `page_lsn < record_lsn`, and the page then carries the record's LSN.
//!
//! A batch's page records are held back until its commit record is read: a batch whose commit
//! never reached the log (the crash cut it, or an ABORT written at a later open says it died)
//! is dropped whole. Pages on the device never hold such changes (the write-back rule), so
//! nothing needs undoing.
use super::logger::WalLogger;
use super::record::{self, EngineState, ExtentOp, Record};
use crate::buffer::{BufferPool, PageMut, StoreRecovery};
use crate::error::RedoFailure;
use crate::page::{self, node, PageChange, PageId, PageKind};
use crate::wal::{RecoveryReport, WalError, WalRecovery};
use crate::{Error, Result};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, serde::Serialize)]
pub struct RedoCounts {
    /// Records read from the redo start on.
    pub records: u64,
    /// Page records applied (page LSN was older).
    pub applied: u64,
    /// Page records skipped because the page already had them.
    pub skipped: u64,
    /// Committed batches replayed.
    pub batches: u64,
    /// Page records of batches without a commit (dropped).
    pub discarded: u64,
}

/// What opening a WAL database did.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
pub struct RecoveryStats {
    pub store: StoreRecovery,
    pub redo: RedoCounts,
    pub wal: RecoveryReport,
    /// Wall time of doublewrite repair + log scan + redo (not the checkpoint after it).
    pub duration_micros: u64,
}

/// What redo recovered beside the pages.
#[derive(Debug)]
pub struct Replayed {
    /// The engine state after the last committed batch (the checkpoint's when none follows).
    pub state: EngineState,
    pub counts: RedoCounts,
    /// The free-extent changes committed after the free-extent tree's last fold, in log order:
    /// what the tree as redone still lacks.
    pub extents: Vec<ExtentOp>,
}

/// Replays every record `rec` yields onto the pool's pages, from the checkpoint's `state`.
pub fn replay(
    rec: &mut WalRecovery,
    pool: &BufferPool,
    logger: &WalLogger,
    mut state: EngineState,
) -> Result<Replayed> {
    let mut extents: Vec<ExtentOp> = Vec::new();
    let mut counts = RedoCounts::default();
    let mut pending: Vec<(u64, Record)> = Vec::new();
    // Bounded by the log: each round consumes one record of it.
    while let Some(r) = rec.next_record()? {
        counts.records += 1;
        let decoded = record::decode(r.kind, &r.payload)
            .map_err(|reason| Error::Wal(WalError::CorruptRecord { lsn: r.lsn, reason }))?;
        match decoded {
            Record::Put { .. }
            | Record::Delete { .. }
            | Record::Image { .. }
            | Record::Rebuild { .. } => pending.push((r.lsn.0, decoded)),
            Record::Commit(body) => {
                logger.set_committed(r.lsn.0);
                if body.folded {
                    // The tree holds everything committed before (the fold's page records
                    // are this batch's, redone below).
                    extents.clear();
                }
                extents.extend(body.extents);
                for (lsn, rec) in pending.drain(..) {
                    if apply(pool, lsn, rec)? {
                        counts.applied += 1;
                    } else {
                        counts.skipped += 1;
                    }
                }
                counts.batches += 1;
                state = body
                    .fields
                    .apply(&state)
                    .map_err(|reason| Error::Wal(WalError::CorruptRecord { lsn: r.lsn, reason }))?;
            }
            Record::Checkpoint(body) => {
                if !pending.is_empty() {
                    return Err(Error::Wal(WalError::CorruptRecord {
                        lsn: r.lsn,
                        reason: "checkpoint record inside an uncommitted batch".into(),
                    }));
                }
                logger.set_committed(r.lsn.0);
                state = body.state;
                // Every change since the last fold, whether or not redo saw them before.
                extents = body.extents;
            }
            Record::Abort => {
                counts.discarded += pending.len() as u64;
                pending.clear();
            }
        }
    }
    counts.discarded += pending.len() as u64;
    Ok(Replayed { state, counts, extents })
}

fn pid_of(r: &Record) -> PageId {
    match r {
        Record::Put { pid, .. }
        | Record::Delete { pid, .. }
        | Record::Image { pid, .. }
        | Record::Rebuild { pid, .. } => *pid,
        Record::Commit(_) | Record::Checkpoint(_) | Record::Abort => unreachable!("not a page"),
    }
}

/// Applies one page record if the page does not have it yet; Ok(true) when applied.
fn apply(pool: &BufferPool, lsn: u64, r: Record) -> Result<bool> {
    let pid = pid_of(&r);
    let fail = |reason: RedoFailure| Error::Redo { lsn, page_id: pid, reason };
    let mut g: PageMut<'_> = match pool.write(pid) {
        Ok(g) => g,
        // A page allocated after the checkpoint may never have been written: its first record
        // is always its full image, which needs nothing from the device.
        Err(Error::CorruptPage { .. }) if matches!(r, Record::Image { .. }) => pool.create(pid)?,
        Err(e) => return Err(fail(RedoFailure::LoadPage(Box::new(e)))),
    };
    if page::lsn(g.bytes()) >= lsn {
        return Ok(false);
    }
    // Checks beyond the page-level replay: the record's tree owns the leaf, an image is of its
    // own page, and a deleted key is there (a mismatch means page and log disagree).
    let leaf_of = |g: &PageMut<'_>, tree_id: u32| {
        page::kind(g.bytes()) == Some(PageKind::Leaf) && page::tree_id(g.bytes()) == tree_id
    };
    let change = match &r {
        Record::Put { tree_id, key, value, .. } => {
            if !leaf_of(&g, *tree_id) {
                return Err(fail(RedoFailure::NotALeaf { op: "put into", tree_id: *tree_id }));
            }
            PageChange::LeafPut { tree_id: *tree_id, key, value }
        }
        Record::Delete { tree_id, key, .. } => {
            if !leaf_of(&g, *tree_id) {
                return Err(fail(RedoFailure::NotALeaf { op: "delete from", tree_id: *tree_id }));
            }
            if node::search(g.bytes(), key).is_err() {
                return Err(fail(RedoFailure::DeletedKeyMissing));
            }
            PageChange::LeafDelete { tree_id: *tree_id, key }
        }
        Record::Rebuild { tree_id, insert, keep, .. } => {
            if page::tree_id(g.bytes()) != *tree_id {
                return Err(fail(RedoFailure::NotANode { tree_id: *tree_id }));
            }
            PageChange::NodeRebuild { tree_id: *tree_id, insert, keep: *keep }
        }
        Record::Image { page: image, .. } => {
            if page::page_id(image) != pid {
                let named = page::page_id(image);
                return Err(fail(RedoFailure::ImageOfAnotherPage { named }));
            }
            PageChange::Image { page: &image[..] }
        }
        Record::Commit(_) | Record::Checkpoint(_) | Record::Abort => unreachable!("not a page"),
    };
    page::change::redo(g.bytes_mut(), pid, &change, lsn)
        .map_err(|e| fail(RedoFailure::Apply(Box::new(e))))
}
