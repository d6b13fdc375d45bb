//! The append executor: carries out one write plan. Reserve the plan's slots (all or nothing),
//! write each slot run as one sequential device write (split only where the pages' purpose
//! changes), sync, log one map record per page, commit. It never runs GC and never flushes the
//! journal: when the space has no room it reports why ([`Outcome`]) and changes nothing, and
//! the orchestrator (orchestrate.rs) decides what to do. Caller holds `writer`.
use super::journal;
use super::orchestrate::{Durable, Outcome};
use super::state::Inner;
use crate::device::{AlignedBuf, WriteOp, WritePurpose};
use crate::page::{PageBuf, PageId, PAGE_SIZE};
use crate::space::{Location, SlotRun, SpaceError, WritePlan};
use crate::{Error, Result};

/// One batch to append: sealed pages, where the plan puts them, and what they count as.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Append<'a> {
    pub pages: &'a [(PageId, &'a PageBuf)],
    pub plan: &'a WritePlan,
    pub purpose: WritePurpose,
    /// GC only: each page's location when the victim was planned (by batch index). A page
    /// that moved meanwhile is not moved again: its new slot is abandoned, nothing logged.
    pub gc_from: Option<&'a [Location]>,
    /// GC only (else empty): the pages whose copy is their dirty in-memory version; their bytes
    /// count as `UserEviction`, the write-back they replace.
    pub new_versions: &'a [bool],
}

impl Append<'_> {
    fn page_purpose(&self, index: usize) -> WritePurpose {
        match self.new_versions.get(index) {
            Some(true) => WritePurpose::UserEviction,
            _ => self.purpose,
        }
    }
}

/// Carries out `a`: see the module comment. `Done { all_committed: false }`: a GC copy was
/// dropped because its page moved.
pub(crate) fn execute(inner: &Inner, a: &Append<'_>) -> Result<Outcome> {
    assert!(!a.pages.is_empty());
    assert!(a.gc_from.is_none_or(|f| f.len() == a.pages.len()));
    assert!(
        a.new_versions.is_empty() || (a.new_versions.len() == a.pages.len() && a.gc_from.is_some())
    );
    let runs = match reserve(inner, a) {
        Ok(runs) => runs,
        Err(SpaceError::NeedsGc { .. }) => return Ok(Outcome::NeedsGc),
        Err(SpaceError::AwaitingDurability { .. }) => return Ok(Outcome::AwaitingDurability),
        Err(e) => return Err(e.into()),
    };
    let (bufs, targets) = fill_runs(a, &runs);
    let written = write_runs(inner, a, &runs, &bufs);
    let all_committed = commit(inner, a, targets, written)?;
    Ok(Outcome::Done { all_committed })
}

/// Reserves the plan's slots; dirty versions in a GC chunk are counted as the user write-back
/// they replace.
fn reserve(inner: &Inner, a: &Append<'_>) -> std::result::Result<Vec<SlotRun>, SpaceError> {
    let mut st = inner.lock_state();
    let runs = st.space.reserve_plan(a.plan, a.purpose)?;
    let user_versions = a.new_versions.iter().filter(|&&n| n).count() as u32;
    if user_versions > 0 {
        st.space.reclassify_issue(a.purpose, WritePurpose::UserEviction, user_versions);
    }
    Ok(runs)
}

/// The runs' buffers and, in slot order, each slot's batch index and location.
fn fill_runs(a: &Append<'_>, runs: &[SlotRun]) -> (Vec<AlignedBuf>, Vec<(usize, Location)>) {
    let mut bufs = Vec::with_capacity(runs.len());
    let mut targets = Vec::with_capacity(a.pages.len());
    let mut next = 0usize;
    for run in runs {
        let mut buf = AlignedBuf::zeroed(run.slots as usize * PAGE_SIZE);
        for i in 0..run.slots as usize {
            let index = a.plan.order[next + i] as usize;
            let data = a.pages[index].1;
            buf[i * PAGE_SIZE..(i + 1) * PAGE_SIZE].copy_from_slice(&data[..]);
            targets.push((index, run.location(i as u32, PAGE_SIZE as u16)));
        }
        next += run.slots as usize;
        bufs.push(buf);
    }
    assert_eq!(next, a.pages.len());
    assert_eq!(targets.len(), a.pages.len());
    (bufs, targets)
}

/// One sequential write per stretch of equal purpose of each run, then a sync: page data is
/// durable before the map points at it (000 sec. 6.2).
fn write_runs(inner: &Inner, a: &Append<'_>, runs: &[SlotRun], bufs: &[AlignedBuf]) -> Result<()> {
    let st = inner.lock_state();
    let mut ops: Vec<WriteOp<'_>> = Vec::with_capacity(runs.len());
    let mut first_page = 0usize;
    for (run, buf) in runs.iter().zip(bufs) {
        let offset = st.space.run_offset_bytes(run);
        let placement = st.space.placement(run.zone);
        let purpose_at = |i: usize| a.page_purpose(a.plan.order[first_page + i] as usize);
        let mut start = 0usize;
        // Bound: one op per stretch of equal purpose, at most one per page of the run.
        for end in 1..=run.slots as usize {
            let here = purpose_at(start);
            if end < run.slots as usize && purpose_at(end) == here {
                continue;
            }
            ops.push(WriteOp {
                offset: offset + (start * PAGE_SIZE) as u64,
                data: &buf[start * PAGE_SIZE..end * PAGE_SIZE],
                purpose: here,
                placement,
            });
            start = end;
        }
        first_page += run.slots as usize;
    }
    drop(st);
    assert!(ops.len() >= runs.len());
    Ok(inner.device.write_batch(&ops).and_then(|()| inner.device.sync())?)
}

/// Logs and commits every written slot (abandons them all if the write failed). Ok(false): a
/// GC copy whose page moved meanwhile was dropped.
fn commit(
    inner: &Inner,
    a: &Append<'_>,
    targets: Vec<(usize, Location)>,
    written: Result<()>,
) -> Result<bool> {
    let mut st = inner.lock_state();
    if let Err(e) = written {
        for (_, loc) in &targets {
            st.space.abandon(*loc);
        }
        return Err(e);
    }
    let mut logged: Result<bool> = Ok(true);
    for (index, loc) in targets {
        let pid = a.pages[index].0;
        let moved = a.gc_from.is_some_and(|f| st.space.location(pid) != Some(f[index]));
        if moved || logged.is_err() {
            st.space.abandon(loc);
            if moved {
                logged = logged.map(|_| false);
            }
            continue;
        }
        // The data is synced: now the record may become durable at any time.
        match inner.journal.append(journal::KIND_SET, &journal::set_payload(pid, loc)) {
            Ok(lsn) => {
                st.map_lsn = lsn.0;
                st.space.commit(pid, loc, lsn.0);
                st.free.remove(pid);
            }
            Err(e) => {
                st.space.abandon(loc);
                logged = Err(e.into());
            }
        }
    }
    logged
}

/// The executor as the orchestrator's [`Durable`] steps for one batch.
#[derive(Debug)]
pub(crate) struct AppendSteps<'a> {
    pub inner: &'a Inner,
    pub append: Append<'a>,
}

impl Durable for AppendSteps<'_> {
    type Error = Error;
    fn try_append(&mut self) -> Result<Outcome> {
        execute(self.inner, &self.append)
    }
    fn make_durable(&mut self) -> Result<()> {
        self.inner.make_durable()
    }
    fn out_of_space(&self) -> SpaceError {
        let needed = u64::from(self.append.plan.page_count());
        self.inner.lock_state().space.out_of_space(needed)
    }
}
