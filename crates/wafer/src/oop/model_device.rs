//! The orchestrator (orchestrate.rs) over a model device, for the space's GC simulations: the
//! space alone, page bytes dropped, a log whose records are durable as soon as a cycle ends or
//! the orchestrator asks for a flush. The loops that decide when GC runs and when the log is
//! flushed are the store's own; only the steps are models.
use super::orchestrate::{self, Collect, Durable, Outcome};
use crate::device::WritePurpose;
use crate::space::{Lsn, PageId, SlotRun, Space, SpaceError, WritePlan};

/// One batch on the model device: where it goes, what it counts as, and (GC) where each page
/// was when the victim was planned.
struct ModelBatch<'a> {
    space: &'a mut Space,
    lsn: &'a mut Lsn,
    pids: &'a [PageId],
    plan: WritePlan,
    purpose: WritePurpose,
    gc_from: Option<&'a [crate::space::Location]>,
}

impl ModelBatch<'_> {
    fn commit(&mut self, runs: &[SlotRun]) -> bool {
        let targets = runs.iter().flat_map(|r| (0..r.slots).map(move |i| r.location(i, 4096)));
        let mut all = true;
        let mut placed = 0;
        for (k, to) in targets.enumerate() {
            placed += 1;
            let index = self.plan.order[k] as usize;
            *self.lsn += 1;
            let pid = self.pids[index];
            match self.gc_from {
                Some(from) => all &= self.space.commit_gc_move(pid, from[index], to, *self.lsn),
                None => {
                    self.space.commit(pid, to, *self.lsn);
                }
            }
        }
        // The reserved runs are the plan's slots: each page of the batch lands once.
        assert_eq!(placed, self.pids.len(), "runs of {placed} slots for {} pages", self.pids.len());
        all
    }
}

impl Durable for ModelBatch<'_> {
    type Error = SpaceError;
    fn try_append(&mut self) -> Result<Outcome, SpaceError> {
        match self.space.reserve_plan(&self.plan, self.purpose) {
            Ok(runs) => Ok(Outcome::Done { all_committed: self.commit(&runs) }),
            Err(SpaceError::NeedsGc { .. }) => Ok(Outcome::NeedsGc),
            Err(SpaceError::AwaitingDurability { lsn_needed }) => {
                assert!(lsn_needed <= *self.lsn);
                Ok(Outcome::AwaitingDurability)
            }
            Err(e) => Err(e),
        }
    }
    fn make_durable(&mut self) -> Result<(), SpaceError> {
        // `commit` indexes the pages by the plan's order: the plan covers the batch.
        debug_assert_eq!(self.plan.page_count() as usize, self.pids.len(), "plan and batch");
        self.space.release_ready(*self.lsn);
        Ok(())
    }
    fn out_of_space(&self) -> SpaceError {
        // As the store's executor: running out of space needs pages to place.
        debug_assert!(!self.pids.is_empty(), "out of space for an empty batch");
        self.space.out_of_space(self.pids.len() as u64)
    }
}

/// GC on the model device: the victims' valid pages copied in one batch, each to its group.
struct ModelGc<'a> {
    space: &'a mut Space,
    lsn: &'a mut Lsn,
}

impl Collect for ModelGc<'_> {
    type Error = SpaceError;
    fn gc_cycle(&mut self) -> Result<bool, SpaceError> {
        let Some(plan) = self.space.plan_gc() else { return Ok(false) };
        // The zones finished below are the cycle's progress: a plan must name a victim.
        debug_assert!(!plan.zones.is_empty(), "a GC plan without a victim zone");
        if !plan.valid.is_empty() {
            let pids: Vec<PageId> = plan.valid.iter().map(|(p, _)| *p).collect();
            let froms: Vec<_> = plan.valid.iter().map(|(_, l)| *l).collect();
            let mut batch = ModelBatch {
                space: self.space,
                lsn: self.lsn,
                pids: &pids,
                plan: plan.chunk_plan(0..pids.len()),
                purpose: plan.purpose,
                gc_from: Some(&froms),
            };
            if let Err(e) = orchestrate::write_copies(&mut batch) {
                for zone in &plan.zones {
                    self.space.abort_victim(*zone);
                }
                return Err(e);
            }
        }
        for zone in &plan.zones {
            self.space.finish_victim(*zone, *self.lsn);
        }
        // The model's log is durable at the end of every cycle.
        self.space.release_ready(*self.lsn);
        Ok(true)
    }
    fn needs_gc(&self) -> bool {
        let needs = self.space.needs_gc();
        // As the store's GC loop: "needed" and "satisfied" never hold at once, or a write
        // would skip GC it needs.
        debug_assert!(!needs || !self.space.gc_satisfied(), "GC both needed and satisfied");
        needs
    }
    fn gc_satisfied(&self) -> bool {
        let satisfied = self.space.gc_satisfied();
        debug_assert!(!satisfied || !self.space.needs_gc(), "GC both satisfied and needed");
        satisfied
    }
    fn zone_count(&self) -> u32 {
        let zones = self.space.zone_count();
        // The orchestrator bounds its loops by this (and asserts it nonzero on its side).
        debug_assert!(zones > 0, "a model space of no zones");
        zones
    }
}

/// GC until satisfied on the model device.
pub fn gc_until_satisfied(space: &mut Space, lsn: &mut Lsn) -> Result<u32, SpaceError> {
    let r = orchestrate::gc_until_satisfied(&mut ModelGc { space: &mut *space, lsn });
    // The orchestrator's bound: a cycle per zone at most.
    debug_assert!(r.as_ref().map_or(true, |c| *c <= space.zone_count()), "{r:?} cycles");
    r
}

/// A user batch on the model device, through the store's orchestration: GC first when free
/// zones run short, then the placement policy's plan, retried after GC or a flush.
pub fn write_batch(space: &mut Space, pids: &[PageId], lsn: &mut Lsn) -> Result<(), SpaceError> {
    let descs: Vec<_> = pids
        .iter()
        .map(|p| crate::space::PageDesc::plain(*p, WritePurpose::UserEviction))
        .collect();
    // The hand-over: one description per page, in the caller's order.
    debug_assert!(descs.iter().map(|d| d.pid).eq(pids.iter().copied()));
    write_described(space, &descs, lsn)
}

/// [`write_batch`] with the pages described as the store describes them (write history,
/// tree), for placement policies that read more than the page id.
pub fn write_described(
    space: &mut Space,
    descs: &[crate::space::PageDesc],
    lsn: &mut Lsn,
) -> Result<(), SpaceError> {
    let pids: Vec<PageId> = descs.iter().map(|d| d.pid).collect();
    let plan = space.plan_write(descs);
    // `ModelBatch::commit` indexes the pages by the plan's order: it must cover every page.
    debug_assert_eq!(plan.page_count() as usize, pids.len(), "a plan of another batch");
    let pids = &pids[..];
    let mut both = Both { gc: ModelGc { space, lsn }, pids, plan };
    orchestrate::write(&mut both).map(|_| ())
}

/// The write entry point's steps on the model device (a batch and GC over one space).
struct Both<'a> {
    gc: ModelGc<'a>,
    pids: &'a [PageId],
    plan: WritePlan,
}

impl Both<'_> {
    fn batch(&mut self) -> ModelBatch<'_> {
        // `commit` indexes the pages by the plan's order: the plan must cover the batch.
        debug_assert_eq!(self.plan.page_count() as usize, self.pids.len(), "plan and batch");
        ModelBatch {
            space: self.gc.space,
            lsn: self.gc.lsn,
            pids: self.pids,
            plan: self.plan.clone(),
            purpose: WritePurpose::UserEviction,
            gc_from: None,
        }
    }
}

impl Durable for Both<'_> {
    type Error = SpaceError;
    fn try_append(&mut self) -> Result<Outcome, SpaceError> {
        // `commit` indexes the pages by the plan's order: the plan covers the batch.
        debug_assert_eq!(self.plan.page_count() as usize, self.pids.len(), "plan and batch");
        self.batch().try_append()
    }
    fn make_durable(&mut self) -> Result<(), SpaceError> {
        // `commit` indexes the pages by the plan's order: the plan covers the batch.
        debug_assert_eq!(self.plan.page_count() as usize, self.pids.len(), "plan and batch");
        self.batch().make_durable()
    }
    fn out_of_space(&self) -> SpaceError {
        // The user batch the orchestrator gave up on: it had pages to place.
        debug_assert!(!self.pids.is_empty(), "out of space for an empty user batch");
        self.gc.space.out_of_space(self.pids.len() as u64)
    }
}

impl Collect for Both<'_> {
    type Error = SpaceError;
    fn gc_cycle(&mut self) -> Result<bool, SpaceError> {
        // GC between a batch's attempts moves other pages: the batch's plan is unchanged.
        debug_assert_eq!(self.plan.page_count() as usize, self.pids.len(), "plan and batch");
        self.gc.gc_cycle()
    }
    fn needs_gc(&self) -> bool {
        // Thresholds are counts of zones: a space without any would always need GC.
        debug_assert!(self.gc.zone_count() > 0, "a model space without zones");
        self.gc.needs_gc()
    }
    fn gc_satisfied(&self) -> bool {
        // Thresholds are counts of zones: a space without any could never be satisfied.
        debug_assert!(self.gc.zone_count() > 0, "a model space without zones");
        self.gc.gc_satisfied()
    }
    fn zone_count(&self) -> u32 {
        let zones = self.gc.zone_count();
        // GC thresholds and victims are zones: a model space has some.
        debug_assert!(zones > 0, "a model space without zones");
        zones
    }
}
