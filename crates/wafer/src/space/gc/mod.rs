//! DB garbage collection: the policy half. A [`VictimPolicy`] picks a zone from the zone table;
//! [`Space::plan_gc`] turns the pick into a [`GcPlan`] (the victim's valid pages, from the
//! reverse map) that the mechanism - the out-of-place store, through the buffer pool - carries
//! out; [`Space::finish_victim`] and [`Space::release_ready`] close the cycle under the rule
//! "a zone is reused only after the records that moved its pages out are durable".
//!
//! This file holds the policies' side only; the space's side of a cycle (`impl Space`) is in
//! `victims.rs`, above both: the space builds and holds its policy, so the policy's types must
//! not name the space back.
//!
//! [`Space::plan_gc`]: crate::space::Space::plan_gc
//! [`Space::finish_victim`]: crate::space::Space::finish_victim
//! [`Space::release_ready`]: crate::space::Space::release_ready
use super::map::{Location, PageId};
use super::nowa::NoWaMode;
use super::zone::{Zone, ZoneId, ZoneState, ZoneTable};
use crate::device::WritePurpose;

mod build;
mod cost_benefit;
mod drain;
mod greedy;
mod victims;
// Its own file so that `nowa_groups.rs`, which GC builds on, can read the bound without naming GC.
pub(super) mod limits;

pub use cost_benefit::CostBenefit;
pub use greedy::{Burst, Greedy, UntilZone, VictimOrder};

pub use limits::{drain_room_zones, VICTIMS_PER_CYCLE_MAX};

/// What a victim policy may read of the space.
#[derive(Debug, Clone, Copy)]
pub struct SpaceView<'a> {
    pub zones: &'a ZoneTable,
    /// The space clock (slots reserved so far), for age-aware policies.
    pub clock: u64,
    /// The group the placement policy gives GC copyback.
    pub gc_group: u32,
    /// NoWA's model of the SSD, when NoWA is on: policies prefer victims that do not leave
    /// units partly dead ([`nowa::SsdModel::sharing`]).
    pub nowa: Option<&'a super::nowa::SsdModel>,
}

impl SpaceView<'_> {
    /// How many live zones the victim `zone` leaves in its units (0 without NoWA or in group
    /// mode): greedy orders break near-ties by it.
    pub fn sharing(&self, zone: ZoneId) -> u32 {
        // The model indexes its spans by zone: a victim beyond the table would panic there.
        debug_assert!(zone < self.zones.len(), "zone {zone} beyond {} zones", self.zones.len());
        self.unit_model().map_or(0, |m| m.sharing(zone))
    }

    /// NoWA's model when it balances whole units.
    fn unit_model(&self) -> Option<&super::nowa::SsdModel> {
        let model = self.nowa.filter(|m| m.options().mode == NoWaMode::Unit);
        // The model's spans and the view's zones are indexed alike: one table, one size.
        debug_assert!(
            model.is_none_or(|m| m.zone_count() == self.zones.len()),
            "NoWA model of another zone table"
        );
        model
    }

    /// NoWA's zones opened together, when it balances groups.
    pub fn groups(&self) -> Option<&super::nowa_groups::GroupBook> {
        let book = self.nowa.filter(|m| m.options().mode == NoWaMode::Group).map(|m| m.groups());
        // Group costs look each candidate's group up by zone id: the book covers the table.
        debug_assert!(
            book.is_none_or(|b| b.zone_count() == self.zones.len()),
            "group book of another zone table"
        );
        book
    }

    /// Victims in group mode's order (the artifact's `GreedyGC` with
    /// `SearchForOtherCandidate`), at most `limit`, from `greedy` (candidates in greedy
    /// order): each next greedy pick that would leave members of its group behind gives way
    /// to the candidate of strictly least cost, a candidate's cost being its own live slots
    /// or, if it too would leave members behind, their mean live slots
    /// ([`GroupCosts::cost`](super::nowa_groups::GroupCosts::cost)). Without group mode,
    /// `greedy`'s first `limit`.
    pub fn balanced_order(&self, greedy: &[ZoneId], limit: usize) -> Vec<ZoneId> {
        let Some(groups) = self.groups() else {
            return greedy.iter().take(limit).copied().collect();
        };
        let mut costs = super::nowa_groups::GroupCosts::new(groups, self.zones, greedy);
        let mut order: Vec<ZoneId> = Vec::with_capacity(limit.min(greedy.len()));
        for _ in 0..limit.min(greedy.len()) {
            let Some(&pick) = greedy.iter().find(|z| !order.contains(z)) else { break };
            let mut best = (costs.cost(groups, self.zones, pick), pick);
            if costs.leaves_members(groups, pick) {
                for &zone in greedy.iter().filter(|z| **z != pick && !order.contains(z)) {
                    let cost = costs.cost(groups, self.zones, zone);
                    if cost < best.0 {
                        best = (cost, zone);
                    }
                }
            }
            costs.take(groups, self.zones, best.1);
            order.push(best.1);
        }
        assert!(order.len() <= limit);
        order
    }

    /// What greedy compares: the victim's live bytes, what GC would copy (per page: a packed
    /// slot with one live page costs that page, not the slot); with unit-mode NoWA in steps of
    /// 1/32 of a zone, so near-equal victims are told apart by [`SpaceView::sharing`].
    pub fn valid_rank(&self, zone: &Zone) -> u64 {
        let zone_bytes = u64::from(self.zones.slots_per_zone()) * super::map::SLOT_BYTES;
        // Live bytes fit the zone; else the steps below would pass 32 and rank past any zone.
        debug_assert!(zone.live_bytes() <= zone_bytes, "{zone:?} over {zone_bytes} bytes");
        match self.unit_model() {
            None => zone.live_bytes(),
            Some(_) => zone.live_bytes() / (zone_bytes / 32).max(1),
        }
    }
}

/// A whole GC decision: the victims, and where and as what their valid pages are written.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VictimChoice {
    /// One zone, or several whose invalid slots together free a zone (GDT-aware GC).
    pub zones: Vec<ZoneId>,
    /// What the copies count as (GC copyback, or NoWA compensation).
    pub purpose: WritePurpose,
    /// Where the copies go, unless the placement policy groups them itself (GDT).
    pub dest_group: u32,
}

impl VictimChoice {
    /// `zone`'s valid pages copied back to the view's GC group.
    pub fn copyback(zone: ZoneId, view: &SpaceView<'_>) -> VictimChoice {
        // GC takes a full zone with no reservation in flight: a candidate, or a sparse one.
        let z = view.zones.get(zone);
        debug_assert!(is_candidate(z) || is_sparse(z), "victim {zone}: {z:?}");
        VictimChoice { zones: vec![zone], purpose: WritePurpose::GcCopy, dest_group: view.gc_group }
    }
}

/// Chooses GC victims. Policies read a view of the space only; they never change state, so
/// they can be swapped by configuration and tested alone (GDT- and NoWA-aware ones will
/// follow).
pub trait VictimPolicy: std::fmt::Debug + Send + Sync {
    fn name(&self) -> &'static str;
    /// A choice whose zone satisfies [`is_candidate`], or None when no zone would free anything.
    fn choose(&self, view: &SpaceView<'_>) -> Option<VictimChoice>;
}

/// A zone GC may take: Full, no reservation in flight, at least one invalid slot (taking a zone
/// of only valid pages would copy a whole zone to free nothing).
pub fn is_candidate(zone: &Zone) -> bool {
    let candidate =
        zone.state() == ZoneState::Full && zone.pending_slots() == 0 && zone.invalid_slots() > 0;
    // Taking a candidate frees something: fewer of its written slots are valid than written.
    debug_assert!(!candidate || zone.valid_slots() < zone.write_ptr_slots(), "{zone:?}");
    candidate
}

/// A zone of only valid slots whose live bytes fit in at most half of them: values committed
/// one by one (Sync commits of blobs) each fill a slot only partly, and while every one lives
/// the zone has no invalid slot, yet holds room only GC can give back by repacking. Half, not
/// any slot's worth: repacking leaves each slot's tail short of a page, and GC's own copies,
/// written in small chunks, may be no denser than their victim.
pub fn is_sparse(zone: &Zone) -> bool {
    let sparse = zone.state() == ZoneState::Full
        && zone.pending_slots() == 0
        && zone.invalid_slots() == 0
        && 2 * u64::from(zone.live_slots()) <= u64::from(zone.write_ptr_slots());
    // Repacking a sparse zone must give slots back, or compaction would loop on it.
    debug_assert!(!sparse || zone.reclaimable_slots() > 0, "{zone:?}");
    sparse
}

/// The last resort when no zone holds an invalid slot and free zones run short: the sparse
/// zone with the fewest live bytes (the oldest, then the lowest id, on a tie), repacked. Apart
/// from the victim policies, which never take a zone of only valid slots, so that GC does not
/// feed on its own copies while invalid slots remain anywhere.
pub fn compaction_choice(view: &SpaceView<'_>) -> Option<VictimChoice> {
    let pick = view
        .zones
        .iter()
        .filter(|(_, z)| is_sparse(z))
        .min_by_key(|(id, z)| (z.live_bytes(), z.last_write_clock(), *id))
        .map(|(id, _)| id)?;
    assert!(is_sparse(view.zones.get(pick)) && !is_candidate(view.zones.get(pick)));
    Some(VictimChoice::copyback(pick, view))
}

/// Victim policies by name, as configuration picks them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum VictimPolicyKind {
    /// Fewest valid slots (optimal for uniform random overwrites).
    Greedy,
    /// Age-aware: maximise age * (1 - u) / (2u) (Rosenblum & Ousterhout's LFS cleaner).
    CostBenefit,
    /// GDT-aware (000 sec. 4.2): greedy victims until their invalid slots free one zone, so
    /// one cycle sorts the valid pages of several victims by deathtime together.
    GreedyUntilZone,
    /// The same in cost-benefit order: with deathtime grouping, zones of short-lived pages
    /// are left to die on their own (see docs/internals/gc.md, GDT).
    CostBenefitUntilZone,
}

impl VictimPolicyKind {
    pub fn name(self) -> &'static str {
        let name = match self {
            VictimPolicyKind::Greedy => "greedy",
            VictimPolicyKind::CostBenefit => "cost-benefit",
            VictimPolicyKind::GreedyUntilZone => "greedy-until-zone",
            VictimPolicyKind::CostBenefitUntilZone => "cost-benefit-until-zone",
        };
        // Configuration matches names as typed, lowercased: one with a capital never matches.
        debug_assert!(name.bytes().all(|b| b.is_ascii_lowercase() || b == b'-'), "{name}");
        name
    }
}

/// What the GC mechanism must do for one cycle: move every listed page out, then call
/// [`Space::finish_victim`] for each victim.
///
/// [`Space::finish_victim`]: crate::space::Space::finish_victim
#[derive(Debug, Clone, PartialEq)]
pub struct GcPlan {
    /// The victims (one, or several with GDT-aware GC).
    pub zones: Vec<ZoneId>,
    /// What the copies count as.
    pub purpose: WritePurpose,
    /// The victims' valid pages and where they are now, in copy order: slot order for one
    /// victim and plain placement, coldest first with GDT.
    pub valid: Vec<(PageId, Location)>,
    /// The write group of each page of `valid`.
    pub groups: Vec<u32>,
    /// valid slots / zone slots at the time of choice, over all victims.
    pub valid_ratio: f64,
}

impl GcPlan {
    #[cfg(test)]
    /// The write plan for copying `valid[range]`: one stretch per group.
    pub fn chunk_plan(&self, range: std::ops::Range<usize>) -> super::placement::WritePlan {
        assert!(!range.is_empty() && range.end <= self.groups.len());
        super::placement::WritePlan::by_group(&self.groups[range])
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::space::{Space, SpaceError, SpaceOptions};

    fn chosen(policy: &dyn VictimPolicy, space: &Space) -> Option<ZoneId> {
        let view =
            SpaceView { zones: space.zones(), clock: space.clock(), gc_group: 1, nowa: None };
        policy.choose(&view).map(|c| c.zones[0])
    }

    /// test_min space with zones 0..n Full; zone z keeps `valid[z]` of its 4 pages.
    fn space_with_valid(valid: &[u32]) -> Space {
        let mut space = Space::new(SpaceOptions::test_min()).unwrap();
        let mut pid = 0;
        for (z, keep) in valid.iter().enumerate() {
            let runs = space.reserve_batch(4, 0, WritePurpose::UserEviction).unwrap();
            assert_eq!(runs[0].zone, z as u32);
            for i in 0..4 {
                space.commit(pid, runs[0].location(i, 4096), 1);
                if i >= *keep {
                    space.free_pid(pid, 2);
                }
                pid += 1;
            }
        }
        space
    }

    #[test]
    fn greedy_takes_the_fewest_valid_and_skips_all_valid_zones() {
        let space = space_with_valid(&[3, 1, 4, 2]);
        assert_eq!(chosen(&Greedy, &space), Some(1));
        let space = space_with_valid(&[4, 4]);
        assert_eq!(chosen(&Greedy, &space), None);
    }

    /// Per page, not per slot: zone 0 packs two 2000-byte pages per slot and keeps one page
    /// in each of three slots (3 valid slots, 3 x 2016 live bytes); zone 1 keeps two whole
    /// pages (2 valid slots, 8192 live bytes). GC would copy less from zone 0.
    #[test]
    fn greedy_ranks_by_live_bytes_not_valid_slots() {
        let mut space = Space::new(SpaceOptions::test_min()).unwrap();
        let runs = space.reserve_batch(4, 0, WritePurpose::UserEviction).unwrap();
        assert_eq!((runs[0].zone, runs[0].slots), (0, 4));
        for slot in 0..4 {
            space.share_slot(0, slot, 2);
            for (k, offset) in [0u16, 2016].into_iter().enumerate() {
                let pid = u64::from(slot) * 2 + k as u64;
                space.commit(pid, Location::packed(0, slot, offset, 2000), 1);
            }
        }
        let runs = space.reserve_batch(4, 0, WritePurpose::UserEviction).unwrap();
        assert_eq!(runs[0].zone, 1);
        crate::space::tests::commit_runs(&mut space, &runs, 100, 1);
        for pid in [0, 2, 4, 6, 7, 100, 101] {
            space.free_pid(pid, 2);
        }
        let (z0, z1) = (space.zones().get(0), space.zones().get(1));
        assert_eq!((z0.valid_slots(), z0.live_bytes(), z0.live_slots()), (3, 3 * 2016, 2));
        assert_eq!((z1.valid_slots(), z1.live_bytes(), z1.reclaimable_slots()), (2, 8192, 2));
        assert_eq!(z0.reclaimable_slots(), 2);
        space.check_invariants().unwrap();
        assert_eq!(chosen(&Greedy, &space), Some(0));
        let plan = space.plan_gc().unwrap();
        assert_eq!(plan.zones, vec![0]);
        assert_eq!(plan.valid.len(), 3, "the live pages, each once");
        let c = space.counters();
        assert_eq!(c.mean_victim_live_ratio(), Some(3.0 * 2016.0 / (4.0 * 4096.0)));
        assert_eq!(c.mean_victim_valid_ratio(), Some(0.75));
    }

    /// Values committed one at a time: each of zone 0's 4 slots holds one live 1000-byte
    /// page and nothing else, so no slot is invalid, yet GC would pack the 4 pages into one
    /// slot and free 3. Zones of whole live pages free nothing. The policies never take zone
    /// 0; once free zones run short and no zone holds an invalid slot, the plan repacks it.
    #[test]
    fn a_sparse_zone_is_repacked_only_when_zones_run_short() {
        let mut space = Space::new(SpaceOptions::test_min()).unwrap();
        for slot in 0..4u32 {
            let runs = space.reserve_batch(1, 0, WritePurpose::UserEviction).unwrap();
            assert_eq!((runs[0].zone, runs[0].first_slot), (0, slot));
            space.share_slot(0, slot, 1);
            space.commit(u64::from(slot), Location::packed(0, slot, 0, 1000), 1);
        }
        let mut pid = 100;
        let mut fill_zone = |space: &mut Space| {
            let runs = space.reserve_batch(4, 0, WritePurpose::UserEviction).unwrap();
            crate::space::tests::commit_runs(space, &runs, pid, 1);
            pid += 4;
        };
        fill_zone(&mut space);
        let (z0, z1) = (space.zones().get(0), space.zones().get(1));
        assert_eq!(
            (z0.state(), z0.invalid_slots(), z0.reclaimable_slots()),
            (ZoneState::Full, 0, 3)
        );
        assert_eq!(
            (z1.state(), z1.invalid_slots(), z1.reclaimable_slots()),
            (ZoneState::Full, 0, 0)
        );
        assert!(is_sparse(z0) && !is_sparse(z1) && !is_candidate(z0) && !is_candidate(z1));
        space.check_invariants().unwrap();
        assert_eq!(chosen(&Greedy, &space), None, "policies take only invalid slots");
        let view =
            SpaceView { zones: space.zones(), clock: space.clock(), gc_group: 1, nowa: None };
        assert_eq!(compaction_choice(&view).map(|c| c.zones), Some(vec![0]));
        assert!(space.plan_gc().is_none(), "no repacking while free zones are plenty");
        // Bound: the zone count; each round fills one zone.
        for _ in 0..space.zone_count() {
            if space.free_zone_count() < space.options.gc_free_zones_low {
                break;
            }
            fill_zone(&mut space);
        }
        assert!(space.free_zone_count() < space.options.gc_free_zones_low);
        let plan = space.plan_gc().unwrap();
        assert_eq!((plan.zones.as_slice(), plan.valid.len()), (&[0][..], 4));
    }

    /// The artifact's burst: up to 16 greedy victims in one cycle, as many as the empty zones
    /// take the copies of (less one zone, kept for user writes), best first.
    #[test]
    fn burst_takes_up_to_16_greedy_victims_within_the_room() {
        let burst = |valid: &[u32]| {
            let space = space_with_valid(valid);
            let view =
                SpaceView { zones: space.zones(), clock: space.clock(), gc_group: 1, nowa: None };
            Burst.choose(&view).map(|c| c.zones)
        };
        // 20 full zones of 32: 12 empty, room 11 x 4 slots; one valid page each: 16 victims.
        let taken = burst(&[1; 20]).unwrap();
        assert_eq!(taken, (0..16).collect::<Vec<ZoneId>>());
        // 28 full: 4 empty, room 12 slots; 3 valid each fit 4 victims, fewest valid first.
        let mut valid = [3u32; 28];
        valid[5] = 4;
        valid[9] = 2;
        let taken = burst(&valid).unwrap();
        assert_eq!(taken, vec![9, 0, 1, 2], "12 slots: 2 + 3 + 3 + 3");
        // No room at all: still the best victim, which the GC reserve has room for.
        assert_eq!(burst(&[3; 31]).unwrap().len(), 1);
        assert_eq!(burst(&[4, 4]), None);
    }

    /// With `gc_burst` the space uses the burst whatever `policy` says.
    #[test]
    fn gc_burst_option_replaces_the_victim_policy() {
        let artifact = crate::space::ArtifactOptions { gc_burst: true, ..Default::default() };
        let space = Space::new(SpaceOptions { artifact, ..SpaceOptions::test_min() }).unwrap();
        assert_eq!(space.policy.name(), "greedy-burst");
        let plain = Space::new(SpaceOptions::test_min()).unwrap();
        assert_eq!(plain.policy.name(), "greedy");
    }

    /// With `gc_with_user` the survivors are planned into the user group (random placement:
    /// one of the user groups), never into the GC group of their own.
    #[test]
    fn gc_with_user_sends_survivors_to_user_groups() {
        let run = |gc_with_user: bool| {
            let artifact = crate::space::ArtifactOptions { gc_with_user, ..Default::default() };
            let options = SpaceOptions {
                artifact,
                max_open_zones: 3,
                placement: crate::space::PlacementKind::Random { seed: 5 },
                ..SpaceOptions::test_min()
            };
            let mut space = Space::new(options).unwrap();
            let mut pid = 0;
            for _ in 0..6 {
                let runs = space.reserve_batch(4, 0, WritePurpose::UserEviction).unwrap();
                crate::space::tests::commit_runs(&mut space, &runs, pid, 1);
                for k in 0..3 {
                    space.free_pid(pid + k, 2);
                }
                pid += 4;
            }
            let plan = space.plan_gc().unwrap();
            assert_eq!(plan.valid.len(), plan.groups.len());
            assert!(!plan.groups.is_empty());
            plan.groups
        };
        assert!(run(false).iter().all(|&g| g == 2), "the GC group of random placement");
        assert!(run(true).iter().all(|&g| g < 2), "a user group");
    }

    /// `gc_in_pool`: a victim handed to the pool drains; the write-back of its last page
    /// finishes it, and its zone still waits for the log before reuse.
    #[test]
    fn a_handed_over_victim_finishes_with_its_last_page_and_waits_for_the_log() {
        let mut space = space_with_valid(&[3, 1, 4]);
        let cycle = space.plan_cycle(true).unwrap();
        assert!(cycle.hand_over);
        assert_eq!((cycle.plan.zones.clone(), cycle.plan.valid.len()), (vec![1], 1));
        assert_eq!(space.hand_over_victims(&cycle.plan.zones, 3), 1);
        assert_eq!(space.zones().get(1).state(), ZoneState::Victim);
        assert!(space.gc_target_zone_count() > space.free_zone_count(), "counted as free");
        space.check_invariants().unwrap();
        // The survivor (page 4) written back among user pages: the victim is done.
        let to =
            space.reserve_batch(1, 0, WritePurpose::UserEviction).unwrap()[0].location(0, 4096);
        assert_eq!(space.commit(4, to, 7), Some(Location::new(1, 0, 4096)));
        assert_eq!(space.draining_zone_count(), 0);
        assert_eq!(space.zones().get(1).state(), ZoneState::PendingReset { lsn_needed: 7 });
        assert_eq!(space.release_ready(6), Vec::<ZoneId>::new());
        assert_eq!(space.release_ready(7), vec![1]);
        space.check_invariants().unwrap();
    }

    /// A victim with no valid page left finishes at once; one that drains is copied directly
    /// by the next cycle that may not use the pool (its remaining pages planned again).
    #[test]
    fn a_draining_victim_is_copied_directly_when_the_pool_is_not_used() {
        let mut space = space_with_valid(&[3, 0, 1]);
        let cycle = space.plan_cycle(true).unwrap();
        assert_eq!(cycle.plan.zones, vec![1]);
        assert_eq!(space.hand_over_victims(&cycle.plan.zones, 3), 0, "nothing to drain");
        assert!(matches!(space.zones().get(1).state(), ZoneState::PendingReset { .. }));
        let cycle = space.plan_cycle(true).unwrap();
        assert_eq!(cycle.plan.zones, vec![2]);
        assert_eq!(space.hand_over_victims(&cycle.plan.zones, 4), 1);
        let direct = space.plan_cycle(false).unwrap();
        assert!(!direct.hand_over);
        assert_eq!(direct.plan.zones, vec![2]);
        assert_eq!(direct.plan.valid, vec![(8, Location::new(2, 0, 4096))]);
        assert_eq!(space.draining_zone_count(), 0, "taken off the queue");
        let to = space.reserve_batch(1, 1, WritePurpose::GcCopy).unwrap()[0].location(0, 4096);
        assert!(space.commit_gc_move(8, direct.plan.valid[0].1, to, 9));
        space.finish_victim(2, 9);
        assert_eq!(space.zones().get(2).state(), ZoneState::PendingReset { lsn_needed: 9 });
        space.check_invariants().unwrap();
    }

    #[test]
    fn cost_benefit_prefers_old_zones_at_equal_utilisation() {
        let space = space_with_valid(&[2, 2, 3]);
        // Zones 0 and 1 have the same u; zone 0 was written earlier, so it is older.
        assert_eq!(chosen(&CostBenefit, &space), Some(0));
        let space = space_with_valid(&[3, 0]);
        assert_eq!(chosen(&CostBenefit, &space), Some(1), "u = 0 wins");
    }

    #[test]
    fn gc_cycle_waits_for_the_log_before_reuse() {
        let mut space = space_with_valid(&[3, 1]);
        let plan = space.plan_gc().unwrap();
        assert_eq!(plan.zones[0], 1);
        assert_eq!(plan.valid, vec![(4, Location::new(1, 0, 4096))]);
        assert_eq!(plan.valid_ratio, 0.25);
        assert_eq!(space.plan_gc().unwrap().zones[0], 0, "a victim is never chosen twice");
        space.abort_victim(0);
        for (pid, from) in plan.valid.clone() {
            let to = space.reserve_batch(1, 1, WritePurpose::GcCopy).unwrap()[0].location(0, 4096);
            assert!(space.commit_gc_move(pid, from, to, 5));
        }
        space.finish_victim(plan.zones[0], 5);
        assert_eq!(space.zones().get(1).state(), ZoneState::PendingReset { lsn_needed: 5 });
        assert_eq!(space.release_ready(4), Vec::<ZoneId>::new());
        assert_eq!(space.release_ready(5), vec![1]);
        let z = space.zones().get(1);
        assert_eq!((z.state(), z.erase_count(), z.write_ptr_slots()), (ZoneState::Empty, 1, 0));
        space.check_invariants().unwrap();
    }

    #[test]
    fn reuse_also_waits_for_earlier_invalidations() {
        // Zone 0's pages were freed at lsn 2 (space_with_valid); a later overwrite at lsn 9.
        let mut space = space_with_valid(&[1, 4]);
        let to =
            space.reserve_batch(1, 0, WritePurpose::UserEviction).unwrap()[0].location(0, 4096);
        space.commit(0, to, 9);
        let plan = space.plan_gc().unwrap();
        assert_eq!((plan.zones[0], plan.valid.len()), (0, 0));
        space.finish_victim(0, 3);
        assert_eq!(space.zones().get(0).state(), ZoneState::PendingReset { lsn_needed: 9 });
    }

    #[test]
    fn pending_zones_turn_out_of_space_into_awaiting_durability() {
        let options = SpaceOptions::test_min();
        let mut space = Space::new(options).unwrap();
        let zones = space.zone_count() - options.gc_reserve_zones;
        let mut pid = 0;
        for _ in 0..zones {
            let runs = space.reserve_batch(4, 0, WritePurpose::UserEviction).unwrap();
            for i in 0..4 {
                space.commit(pid % 8, runs[0].location(i, 4096), pid + 1);
                pid += 1;
            }
        }
        assert!(space.needs_gc());
        let plan = space.plan_gc().unwrap();
        assert!(plan.valid.is_empty());
        space.finish_victim(plan.zones[0], 100);
        match space.reserve_batch(4, 0, WritePurpose::UserEviction) {
            Err(SpaceError::AwaitingDurability { lsn_needed: 100 }) => {}
            other => panic!("expected awaiting durability, got {other:?}"),
        }
        assert_eq!(space.release_ready(100), vec![plan.zones[0]]);
        space.reserve_batch(4, 0, WritePurpose::UserEviction).unwrap();
    }
}
