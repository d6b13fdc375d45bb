//! A minimal GC mechanism for tests: what the out-of-place store will do through the buffer pool,
//! minus the page bytes (the device is not involved; durability is an LSN the test controls).
use crate::device::WritePurpose;
use crate::space::{Lsn, PageId, Space, SpaceError, ZoneId};

/// Group GC copyback writes into, apart from user groups.
pub const GC_GROUP: u32 = 1;

/// Runs one GC cycle if a victim exists: moves every valid page of the victim (one reserve per
/// plan), logs the moves at `*lsn + 1..`, finishes the victim. Returns the victim, or None when
/// no zone would free anything.
pub fn gc_cycle(space: &mut Space, lsn: &mut Lsn) -> Result<Option<ZoneId>, SpaceError> {
    let Some(plan) = space.plan_gc() else { return Ok(None) };
    if !plan.valid.is_empty() {
        let runs =
            match space.reserve_batch(plan.valid.len() as u32, GC_GROUP, WritePurpose::GcCopy) {
                Ok(runs) => runs,
                Err(e) => {
                    space.abort_victim(plan.zone);
                    return Err(e);
                }
            };
        let targets = runs.iter().flat_map(|r| (0..r.slots).map(move |i| r.location(i, 4096)));
        for ((pid, from), to) in plan.valid.iter().zip(targets) {
            *lsn += 1;
            assert!(space.commit_gc_move(*pid, *from, to, *lsn));
        }
    }
    space.finish_victim(plan.zone, *lsn);
    Ok(Some(plan.zone))
}

/// GC until satisfied, the log durable after every cycle (`durable` follows `lsn`).
pub fn gc_until_satisfied(space: &mut Space, lsn: &mut Lsn) -> Result<u32, SpaceError> {
    let mut cycles = 0;
    // Bound: each cycle frees a zone or stops; more cycles than zones means no progress.
    for _ in 0..space.zone_count() {
        if space.gc_satisfied() {
            break;
        }
        match gc_cycle(space, lsn)? {
            Some(_) => cycles += 1,
            None => break,
        }
        space.release_ready(*lsn);
    }
    Ok(cycles)
}

/// Group user write-back goes to.
pub const USER_GROUP: u32 = 0;

/// Writes one user batch the way the integrator will: GC first when free zones run short, then
/// reserve, retrying after GC (`NeedsGc`) or after making the log durable
/// (`AwaitingDurability`); commit every page at a fresh LSN. `OutOfSpace` is final.
pub fn write_batch(space: &mut Space, pids: &[PageId], lsn: &mut Lsn) -> Result<(), SpaceError> {
    if space.needs_gc() {
        gc_until_satisfied(space, lsn)?;
    }
    // Bound: every retry follows a GC cycle that freed a zone, or a release.
    for _ in 0..=2 * space.zone_count() {
        match space.reserve_batch(pids.len() as u32, USER_GROUP, WritePurpose::UserEviction) {
            Ok(runs) => {
                let targets =
                    runs.iter().flat_map(|r| (0..r.slots).map(move |i| r.location(i, 4096)));
                for (pid, to) in pids.iter().zip(targets) {
                    *lsn += 1;
                    space.commit(*pid, to, *lsn);
                }
                return Ok(());
            }
            Err(SpaceError::NeedsGc { .. }) => {
                if gc_cycle(space, lsn)?.is_none() {
                    break;
                }
                space.release_ready(*lsn);
            }
            Err(SpaceError::AwaitingDurability { lsn_needed }) => {
                assert!(lsn_needed <= *lsn);
                space.release_ready(*lsn);
            }
            Err(e) => return Err(e),
        }
    }
    Err(SpaceError::OutOfSpace {
        needed_slots: pids.len() as u64,
        free_slots: u64::from(space.empty_zone_count()) * u64::from(space.slots_per_zone()),
        live_slots: space.live_slots(),
        capacity_slots: space.capacity_slots(),
    })
}
