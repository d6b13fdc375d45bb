//! NoWA's group balancing (`NoWaMode::Group`), the way 000's artifact does it: instead of
//! estimating which SSD superblock each zone landed in, it remembers which zones were opened
//! together - a *group*, at most `max_open_zones` zones filling one stretch of the stream under
//! rule 1 (`alloc.rs` routing) - and keeps the zones of a group collected alike. Once GC has
//! taken one zone of a group, the others are *behind*; when GC next needs victims it takes the
//! zones behind of the cheapest such group (a compensation), so the stretch they share dies
//! whole. It never adds a GC cycle of its own: compensation replaces the victims GC was about to
//! take anyway, which is why it costs little DB WAF and leaves some SSD copies (a group's
//! stretch need not match a superblock, and groups wait for GC to be needed).
//!
//! The artifact keeps, per zone, how often it was collected and, per group, its members; a group
//! is imbalanced while those counts differ (ZLeanStore `space_manager.cc`
//! `AddWriteGroupHistory`, `garbage_collector.cc` `ShouldSelectImbalancedBlock`,
//! `GreedyAmongImbalancedGroups`, `WillTriggerImbalance`). Here a zone's membership ends with its
//! incarnation, so "imbalanced" is "some member was reset and some still holds its data".
use std::collections::BTreeMap;

use super::gc::limits::VICTIMS_PER_CYCLE_MAX;
use super::zone::{ZoneId, ZoneState, ZoneTable};

/// One group: its members still in the incarnation that joined it, and how many left (reset).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
struct Group {
    remaining: Vec<ZoneId>,
    reset: u32,
}

/// The groups of zones opened together, and the artifact's throttle on compensations.
#[derive(Debug, Clone)]
pub struct GroupBook {
    /// Per zone, the group its current incarnation opened in.
    group_of: Vec<Option<u64>>,
    /// Groups with at least one member still holding its data (at most one per zone).
    groups: BTreeMap<u64, Group>,
    next_group: u64,
    /// The artifact's `not_compensation_write`: groups completed since one completed while GC
    /// was compensating. With k imbalanced groups, a compensation is due only once k - 1
    /// groups were written without one, so imbalance may build up a little before GC acts.
    groups_since_compensation: u32,
    /// The artifact's `compensation_write`: GC's last choice was a compensation.
    last_choice_compensated: bool,
}

impl GroupBook {
    pub fn new(zone_count: u32) -> GroupBook {
        assert!(zone_count > 0);
        GroupBook {
            group_of: vec![None; zone_count as usize],
            groups: BTreeMap::new(),
            next_group: 0,
            groups_since_compensation: 0,
            last_choice_compensated: false,
        }
    }

    /// `zone` opened; `starts_group`: it is the first zone of a new group (every open zone
    /// was full), so the previous group is complete.
    pub fn zone_opened(&mut self, zone: ZoneId, starts_group: bool) {
        assert!((zone as usize) < self.group_of.len(), "zone {zone}");
        if starts_group || self.next_group == 0 {
            if self.next_group > 0 {
                self.group_completed();
            }
            self.next_group += 1;
        }
        let id = self.next_group - 1;
        // A zone reopened without a reset (never happens: reset ends every incarnation)
        // would count twice; leaving its old group first keeps the book consistent.
        self.leave(zone, false);
        self.group_of[zone as usize] = Some(id);
        self.groups.entry(id).or_default().remaining.push(zone);
        assert!(self.groups.len() <= self.group_of.len(), "a group per zone at most");
    }

    /// The artifact's `AddWriteGroupHistory` throttle bookkeeping.
    fn group_completed(&mut self) {
        assert!(self.next_group > 0, "a group completes only after one started");
        if self.last_choice_compensated {
            self.groups_since_compensation = 0;
        } else {
            self.groups_since_compensation = self.groups_since_compensation.saturating_add(1);
        }
    }

    /// `zone` was reset: its group has one member fewer left and one more collected.
    pub fn reset(&mut self, zone: ZoneId) {
        assert!((zone as usize) < self.group_of.len(), "zone {zone}");
        self.leave(zone, true);
        assert!(self.group_of[zone as usize].is_none());
    }

    fn leave(&mut self, zone: ZoneId, collected: bool) {
        assert!((zone as usize) < self.group_of.len(), "zone {zone}");
        let Some(id) = self.group_of[zone as usize].take() else { return };
        let Some(group) = self.groups.get_mut(&id) else { return };
        group.remaining.retain(|z| *z != zone);
        group.reset += u32::from(collected);
        // The active group stays even when empty, so later zones still join it.
        if group.remaining.is_empty() && id + 1 != self.next_group {
            self.groups.remove(&id);
        }
    }

    /// The members of `zone`'s group that still hold their data, `zone` among them: taking
    /// `zone` while others are left leaves its group imbalanced (the artifact's
    /// `WillTriggerImbalance`).
    pub fn members_left(&self, zone: ZoneId) -> &[ZoneId] {
        let group = self.group_of.get(zone as usize).copied().flatten();
        let remaining = group.and_then(|id| self.groups.get(&id)).map(|g| &g.remaining[..]);
        let remaining = remaining.unwrap_or(&[]);
        assert!(remaining.is_empty() || remaining.contains(&zone), "zone {zone} not in its group");
        remaining
    }

    /// Groups some of whose members were collected while others still hold data.
    pub fn imbalanced_count(&self) -> u32 {
        let count = self.groups.values().filter(|g| g.reset > 0 && !g.remaining.is_empty());
        let count = count.count() as u32;
        assert!(count as usize <= self.groups.len());
        count
    }

    /// The artifact's `ShouldSelectImbalancedBlock`: some group is imbalanced and at least
    /// (imbalanced groups - 1) groups were written since the last compensating one.
    pub fn compensation_due(&self) -> bool {
        let imbalanced = self.imbalanced_count();
        assert!(imbalanced as usize <= self.groups.len());
        imbalanced > 0 && self.groups_since_compensation + 1 >= imbalanced
    }

    /// GC chose a compensation (true) or its policy's victims (false).
    pub fn note_choice(&mut self, compensated: bool) {
        assert!(!compensated || self.imbalanced_count() > 0, "compensated a balanced book");
        self.last_choice_compensated = compensated;
    }

    /// The artifact's `GreedyAmongImbalancedGroups`: among imbalanced groups whose members
    /// left are all Full and idle and none entirely valid (moving a whole zone frees nothing
    /// of it), the one whose members left hold the fewest live slots on average; its members
    /// left, fewest live first, at most [`VICTIMS_PER_CYCLE_MAX`] and as many as the copies'
    /// `room_slots` allow (at least one).
    pub fn compensation(&self, zones: &ZoneTable, room_slots: u64) -> Option<Vec<ZoneId>> {
        let live = |z: &ZoneId| u64::from(zones.get(*z).live_slots());
        let valid = |z: &ZoneId| u64::from(zones.get(*z).valid_slots());
        let eligible = |z: &ZoneId| {
            let zone = zones.get(*z);
            zone.state() == ZoneState::Full && zone.pending_slots() == 0 && zone.invalid_slots() > 0
        };
        let best = self
            .groups
            .iter()
            .filter(|(_, g)| g.reset > 0 && !g.remaining.is_empty())
            .filter(|(_, g)| g.remaining.iter().all(eligible))
            .map(|(id, g)| {
                let mean = g.remaining.iter().map(live).sum::<u64>() / g.remaining.len() as u64;
                (mean, *id, &g.remaining)
            })
            .min_by_key(|(mean, id, _)| (*mean, *id));
        let (_, _, members) = best?;
        let chosen = cheapest_within_room(members, live, valid, room_slots);
        // GC takes these as victims: members of the one group, each Full, idle, not all valid.
        debug_assert!(
            chosen.as_ref().is_none_or(|c| c.iter().all(|z| members.contains(z) && eligible(z))),
            "compensation {chosen:?} outside group {members:?}"
        );
        chosen
    }

    /// Zones the book covers (the space's zone table's size).
    pub fn zone_count(&self) -> u32 {
        // Each group holds at least one zone's incarnation or is the active one.
        debug_assert!(self.groups.len() <= self.group_of.len(), "more groups than zones");
        self.group_of.len() as u32
    }

    /// The group `zone`'s current incarnation opened in.
    pub fn group_of(&self, zone: ZoneId) -> Option<u64> {
        assert!((zone as usize) < self.group_of.len(), "zone {zone}");
        self.group_of[zone as usize]
    }
}

/// Per group: live slots of its members left not yet taken, how many those are, and how many
/// members were left before any was taken.
type GroupTally = (u64, u32, u32);

/// The artifact's victim costs over one GC choice, tallied once per group: rescanning each
/// candidate's group for every candidate and pick costs zones x group size per pick, which
/// with 4,096 zones of 128 KiB (Table 1's "+ NoWA" at demo scale) slowed the run 20-fold.
#[derive(Debug, Clone)]
pub struct GroupCosts {
    by_group: BTreeMap<u64, GroupTally>,
}

impl GroupCosts {
    /// Tallies the groups of `candidates`.
    pub fn new(book: &GroupBook, zones: &ZoneTable, candidates: &[ZoneId]) -> GroupCosts {
        let mut by_group = BTreeMap::new();
        for &zone in candidates {
            let Some(id) = book.group_of(zone) else { continue };
            by_group.entry(id).or_insert_with(|| {
                let left = book.members_left(zone);
                let live: u64 = left.iter().map(|z| u64::from(zones.get(*z).live_slots())).sum();
                (live, left.len() as u32, left.len() as u32)
            });
        }
        assert!(by_group.len() <= candidates.len());
        GroupCosts { by_group }
    }

    /// Taking `zone` leaves other members of its group holding data (the artifact's
    /// `WillTriggerImbalance`; victims already taken still count, as there).
    pub fn leaves_members(&self, book: &GroupBook, zone: ZoneId) -> bool {
        let tally = book.group_of(zone).and_then(|id| self.by_group.get(&id));
        // Tallied from this book during the same choice: the book has not changed since.
        debug_assert!(
            tally.is_none_or(|t| t.2 as usize == book.members_left(zone).len()),
            "group costs of zone {zone} from another book"
        );
        tally.is_some_and(|(_, _, left)| *left > 1)
    }

    /// The artifact's cost of a victim that leaves members behind (`AvgGroupValidPages`): the
    /// mean live slots of its group's other members not yet taken; its own live slots when
    /// none is left, or when it leaves no member behind.
    pub fn cost(&self, book: &GroupBook, zones: &ZoneTable, zone: ZoneId) -> u64 {
        let own = u64::from(zones.get(zone).live_slots());
        if !self.leaves_members(book, zone) {
            return own;
        }
        let tally = book.group_of(zone).and_then(|id| self.by_group.get(&id));
        let Some(&(live, count, _)) = tally else { return own };
        assert!(count >= 1 && live >= own, "zone {zone} counts in its group's tally");
        match count - 1 {
            0 => own,
            others => (live - own) / u64::from(others),
        }
    }

    /// `zone` was taken as a victim: its group's mean leaves it out.
    pub fn take(&mut self, book: &GroupBook, zones: &ZoneTable, zone: ZoneId) {
        let Some(id) = book.group_of(zone) else { return };
        let Some(tally) = self.by_group.get_mut(&id) else { return };
        assert!(tally.1 > 0, "zone {zone} taken twice");
        tally.0 = tally.0.saturating_sub(u64::from(zones.get(zone).live_slots()));
        tally.1 -= 1;
    }
}

/// Of `members`, the fewest live first: at most [`VICTIMS_PER_CYCLE_MAX`] zones whose valid
/// slots fit `room_slots` (the first always taken); None when even that one does not fit.
/// Both NoWA modes pick their compensated zones so.
pub(super) fn cheapest_within_room(
    members: &[ZoneId],
    live: impl Fn(&ZoneId) -> u64,
    valid: impl Fn(&ZoneId) -> u64,
    room_slots: u64,
) -> Option<Vec<ZoneId>> {
    let mut members = members.to_vec();
    members.sort_by_key(|z| (live(z), *z));
    let mut taken = Vec::with_capacity(members.len().min(VICTIMS_PER_CYCLE_MAX));
    let mut copies = 0u64;
    for zone in members.into_iter().take(VICTIMS_PER_CYCLE_MAX) {
        if !taken.is_empty() && copies + valid(&zone) > room_slots {
            break;
        }
        copies += valid(&zone);
        taken.push(zone);
    }
    assert!(taken.len() <= VICTIMS_PER_CYCLE_MAX);
    (!taken.is_empty() && copies <= room_slots).then_some(taken)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::device::WritePurpose;
    use crate::space::nowa::{NoWaMode, NoWaOptions};
    use crate::space::tests::commit_runs;
    use crate::space::{Space, SpaceOptions};

    /// Groups form as rule 1 opens zones; a reset makes its group imbalanced; the artifact's
    /// throttle lets k imbalanced groups wait until k - 1 groups were written without a
    /// compensation.
    #[test]
    fn resets_imbalance_groups_and_the_throttle_lets_imbalance_build() {
        let mut book = GroupBook::new(8);
        for (zone, starts) in [(0, true), (1, false), (2, true), (3, false)] {
            book.zone_opened(zone, starts);
        }
        assert_eq!((book.members_left(0), book.members_left(3)), (&[0, 1][..], &[2, 3][..]));
        assert_eq!((book.imbalanced_count(), book.compensation_due()), (0, false));
        book.reset(0);
        assert_eq!(book.members_left(1), &[1]);
        assert_eq!(book.members_left(0), &[] as &[ZoneId], "a reset zone belongs to no group");
        assert_eq!((book.imbalanced_count(), book.compensation_due()), (1, true));
        book.reset(2);
        // Two imbalanced groups and one group (the first) written without compensation.
        assert_eq!((book.imbalanced_count(), book.compensation_due()), (2, true));
        book.note_choice(true);
        book.zone_opened(4, true); // the second group completes while GC compensates
        assert_eq!((book.imbalanced_count(), book.compensation_due()), (2, false));
        book.reset(1);
        assert_eq!((book.imbalanced_count(), book.compensation_due()), (1, true));
    }

    fn space(mode: NoWaMode, budget_units: u32) -> Space {
        let nowa = Some(NoWaOptions { unit_slots: 8, budget_units, mode });
        Space::new(SpaceOptions { nowa, ..SpaceOptions::test_min() }).unwrap()
    }

    /// Three groups of two zones on test_min (zones of 4 slots, 2 open): batches of 2 slots
    /// alternating between the write groups fill zones 2k and 2k + 1 together. Zone 0 keeps no
    /// page, zone 1 three, zone 2 one, zones 3 to 5 all four.
    fn three_groups(space: &mut Space) {
        let mut pid = 0;
        for _ in 0..3 {
            for group in [0, 1, 0, 1] {
                let runs = space.reserve_batch(2, group, WritePurpose::UserEviction).unwrap();
                pid = commit_runs(space, &runs, pid, 1);
            }
        }
        for pid in [0, 1, 4, 5, 2, 8, 9, 12] {
            space.free_pid(pid, 2);
        }
        let valid: Vec<u32> = (0..6).map(|z| space.zones().get(z).valid_slots()).collect();
        assert_eq!(valid, [0, 3, 1, 4, 4, 4]);
    }

    /// One GC cycle carried out: (victims, what their copies count as).
    fn gc_cycle(space: &mut Space, lsn: u64) -> (Vec<ZoneId>, WritePurpose) {
        let plan = space.plan_gc().unwrap();
        for (pid, from) in plan.valid.clone() {
            let to = space.reserve_batch(1, 1, WritePurpose::GcCopy).unwrap()[0].location(0, 4096);
            assert!(space.commit_gc_move(pid, from, to, lsn));
        }
        for &zone in &plan.zones {
            space.finish_victim(zone, lsn);
        }
        assert_eq!(space.release_ready(lsn).len(), plan.zones.len());
        (plan.zones, plan.purpose)
    }

    /// Over the budget, unit mode asks for GC at once; group mode never adds a cycle.
    #[test]
    fn group_mode_adds_no_gc_cycle_of_its_own() {
        for (mode, wants) in [(NoWaMode::Unit, true), (NoWaMode::Group, false)] {
            let mut s = space(mode, 1);
            three_groups(&mut s);
            assert!(s.nowa().is_some_and(|m| m.over_budget()));
            assert!(s.free_zone_count() >= s.options().gc_free_zones_high);
            assert_eq!(s.needs_gc(), wants, "{mode:?}");
        }
    }

    /// Unit mode under a large budget is plain greedy: zone 0, then zone 2 (one valid page),
    /// leaving zone 1 alone in its group. Group mode takes zone 1 first, as the greedy pick
    /// (zone 0) would leave it behind and zone 1's own mate costs nothing (the artifact's
    /// `SearchForOtherCandidate`), then compensates zone 0: the first group dies whole.
    #[test]
    fn group_mode_finishes_the_groups_gc_started() {
        let mut unit = space(NoWaMode::Unit, 100);
        three_groups(&mut unit);
        assert_eq!(gc_cycle(&mut unit, 5), (vec![0], WritePurpose::GcCopy));
        assert_eq!(gc_cycle(&mut unit, 6), (vec![2], WritePurpose::GcCopy));
        assert_eq!(unit.counters().nowa_compensations, 0);
        let mut group = space(NoWaMode::Group, 100);
        three_groups(&mut group);
        assert_eq!(gc_cycle(&mut group, 5), (vec![1], WritePurpose::GcCopy));
        assert_eq!(group.nowa().map(|m| m.groups().imbalanced_count()), Some(1));
        assert_eq!(gc_cycle(&mut group, 6), (vec![0], WritePurpose::Compensation));
        assert_eq!(group.nowa().map(|m| m.groups().imbalanced_count()), Some(0));
        assert_eq!(group.counters().nowa_compensations, 1);
        group.check_invariants().unwrap();
        unit.check_invariants().unwrap();
    }
}
