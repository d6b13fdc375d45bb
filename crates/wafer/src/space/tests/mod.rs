//! Whole-module tests: a model-based test against a HashMap model and recovery rebuild against
//! incremental state. The GC simulations drive the out-of-place orchestrator and live in
//! `oop::sim_tests`.
mod model;

/// Commits every slot of `runs` in order to page ids from `first_pid` (one whole page per
/// slot) at `lsn`; returns the next page id.
pub(crate) fn commit_runs(
    space: &mut super::Space,
    runs: &[super::SlotRun],
    first_pid: super::PageId,
    lsn: super::Lsn,
) -> super::PageId {
    let mut pid = first_pid;
    for run in runs {
        for i in 0..run.slots {
            let loc = run.location(i, 4096);
            space.commit(pid, loc, lsn);
            // Tests then read pages back where they committed them.
            assert_eq!(space.location(pid), Some(loc), "page {pid} not mapped where committed");
            pid += 1;
        }
    }
    pid
}
