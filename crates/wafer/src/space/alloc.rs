//! Where a write-back batch goes, and the map updates once it is durable.
//!
//! A batch is appended at the write pointer of its group's open zone; what does not fit continues
//! in a freshly opened zone, so one batch becomes a few contiguous runs (one sequential device
//! write each). Reservation and commit are apart because the page data must be durable before
//! the map record that points at it (000 sec. 6.2): reserve, write, sync, log, commit.
use super::map::{Location, PageId, SharedSlot, SlotEntry, SlotPages};
use super::placement::{GroupRun, WritePlan};
use super::zone::{Lsn, ZoneId, ZoneState};
use super::{Space, SpaceError};
use crate::device::WritePurpose;

/// Largest batch one `reserve_batch` call may ask for: bounds the runs loop and the Vec.
pub const BATCH_SLOTS_MAX: u32 = 1 << 20;

/// Contiguous reserved slots `first_slot..first_slot + slots` of one zone.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SlotRun {
    pub zone: ZoneId,
    pub first_slot: u32,
    pub slots: u32,
}

impl SlotRun {
    #[cfg(test)]
    /// Location of the run's `index`-th slot for a page stored in `stored_bytes`.
    pub fn location(&self, index: u32, stored_bytes: u16) -> Location {
        assert!(index < self.slots, "index {index} outside a run of {}", self.slots);
        Location::new(self.zone, self.first_slot + index, stored_bytes)
    }
}

/// One step of a reservation: `take` slots in the open zone of group index `owner`, opened
/// first when `opens` (for `group`, whose placement hint it takes).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Route {
    /// Index of the plan's stretch it belongs to.
    stretch: u32,
    owner: u32,
    group: u32,
    take: u32,
    opens: bool,
    /// With NoWA: the zone it opens starts a new group of zones opened together (rule 1).
    starts_group: bool,
}

impl Space {
    /// Counts `slots` slots reserved for `from` as written for `to` instead (a GC chunk whose
    /// pages include dirty versions: those are the user write-backs they replace).
    pub fn reclassify_issue(&mut self, from: WritePurpose, to: WritePurpose, slots: u32) {
        // Slots that change purpose: the same purpose, or none, would be a miscounted chunk.
        debug_assert!(from != to && slots > 0, "{slots} slots from {from:?} to {to:?}");
        self.stats.reclassify_issue(from, to, u64::from(slots));
    }

    #[cfg(test)]
    /// Reserves `slots` slots for a batch of `group`'s pages written for `purpose` (a plan of
    /// one stretch: [`Space::reserve_plan`]).
    pub fn reserve_batch(
        &mut self,
        slots: u32,
        group: u32,
        purpose: WritePurpose,
    ) -> Result<Vec<SlotRun>, SpaceError> {
        let runs = self.reserve_plan(&WritePlan::single(slots, group), purpose)?;
        // Tests write at these runs: each must lie inside its zone.
        debug_assert!(
            runs.iter().all(|r| r.slots > 0 && r.first_slot + r.slots <= self.slots_per_zone()),
            "runs {runs:?} leave zones of {} slots",
            self.slots_per_zone()
        );
        Ok(runs)
    }

    /// Reserves slots for every stretch of `plan`, written for `purpose`: the returned runs
    /// cover `plan.order` in order (run k takes the next `slots` pages). Only GC copies (`GcCopy`,
    /// `Compensation`) may open
    /// the last `gc_reserve_zones` empty zones. All or nothing: on error nothing changed;
    /// `NeedsGc` -> run a GC cycle and retry; `AwaitingDurability` -> flush the log, call
    /// `release_ready`, retry; `OutOfSpace` -> final.
    pub fn reserve_plan(
        &mut self,
        plan: &WritePlan,
        purpose: WritePurpose,
    ) -> Result<Vec<SlotRun>, SpaceError> {
        let slots = plan.page_count();
        // Routed once: the routes say how many zones the plan opens, then are applied.
        let (routes, group_zones_left) = self.route(plan);
        self.check_room(plan, purpose, &routes)?;
        let mut runs = Vec::with_capacity(routes.len());
        for route in routes {
            self.apply_route(route, &mut runs);
        }
        if let Some(model) = self.nowa.as_mut() {
            model.set_group_zones_left(group_zones_left);
        }
        assert_eq!(runs.iter().map(|r| u64::from(r.slots)).sum::<u64>(), u64::from(slots));
        assert!(self.open_zone_count() <= self.options.max_open_zones);
        self.stats.record_issue(purpose, u64::from(slots));
        Ok(runs)
    }

    /// Whether [`Space::reserve_plan`] would reserve `plan` now: the same errors, nothing
    /// changed. The device-compression executor checks a batch's worst case (a slot per page)
    /// with it before reserving stretch by stretch.
    pub fn can_reserve(&self, plan: &WritePlan, purpose: WritePurpose) -> Result<(), SpaceError> {
        let (routes, _) = self.route(plan);
        // The dry run must route every page `reserve_plan` would: a plan whose stretches do
        // not cover its pages would pass here and fail there.
        debug_assert_eq!(
            routes.iter().map(|r| u64::from(r.take)).sum::<u64>(),
            u64::from(plan.page_count()),
            "routes of {plan:?}"
        );
        self.check_room(plan, purpose, &routes)
    }

    /// Room for `plan` routed as `routes`: the empty zones it opens, beyond the GC reserve
    /// unless GC writes it.
    fn check_room(
        &self,
        plan: &WritePlan,
        purpose: WritePurpose,
        routes: &[Route],
    ) -> Result<(), SpaceError> {
        let slots = plan.page_count();
        assert!((1..=BATCH_SLOTS_MAX).contains(&slots), "batch of {slots} slots");
        assert!(
            !matches!(
                purpose,
                WritePurpose::Wal | WritePurpose::Doublewrite | WritePurpose::Metadata
            ),
            "{purpose:?} writes do not go to the data zones"
        );
        let zones_needed = routes.iter().filter(|r| r.opens).count() as u32;
        let reserve =
            // Compensation is GC too: its victims are chosen, so its copies must find room.
            if matches!(purpose, WritePurpose::GcCopy | WritePurpose::Compensation) {
                0
            } else {
                self.options.gc_reserve_zones
            };
        let usable = self.empty_zone_count().saturating_sub(reserve);
        if zones_needed > usable {
            return Err(self.no_room_error(slots, zones_needed - usable));
        }
        Ok(())
    }

    /// Returns the unused tail of `run`, just reserved for `group`'s pages written for
    /// `purpose`, of which the write used only the first `used_slots` (a compressed write sized
    /// by the device: the run was the worst case, a slot per page). Valid only while the run is
    /// its zone's last reservation (the caller holds the store's writer lock from reservation to
    /// here); the zone is open again if the run had filled it. The slots are free, as if never
    /// reserved, but for the write clock.
    pub fn give_back(&mut self, run: SlotRun, used_slots: u32, group: u32, purpose: WritePurpose) {
        assert!(used_slots >= 1 && used_slots <= run.slots, "{used_slots} of {run:?} used");
        assert!(self.nowa.is_none(), "NoWA models every reserved slot as written");
        let end = run.first_slot + run.slots;
        assert_eq!(self.zones.get(run.zone).write_ptr_slots(), end, "{run:?} is not the last");
        let back = run.slots - used_slots;
        if back == 0 {
            return;
        }
        for slot in run.first_slot + used_slots..end {
            assert_eq!(self.reverse.get(run.zone, slot), SlotEntry::Reserved, "slot {slot}");
            self.reverse.set(run.zone, slot, SlotEntry::Free);
        }
        let owner = (group % self.options.max_open_zones) as usize;
        if self.zones.get(run.zone).state() == ZoneState::Full {
            assert!(self.open_by_group[owner].is_none(), "group {group} opened another zone");
            self.open_by_group[owner] = Some(run.zone);
        }
        assert_eq!(self.open_by_group[owner], Some(run.zone), "{run:?} is not {group}'s zone");
        self.zones.give_back(run.zone, back);
        self.stats.unissue(purpose, u64::from(back));
    }

    /// Slots left in `group`'s open zone: where its next stretch starts (0: none is open, the
    /// stretch opens an empty zone). The executor lays concatenated pages out by it.
    pub fn room_slots(&self, group: u32) -> u32 {
        let index = (group % self.options.max_open_zones) as usize;
        let room = self.open_by_group[index]
            .map_or(0, |z| self.slots_per_zone() - self.zones.get(z).write_ptr_slots());
        assert!(room <= self.slots_per_zone());
        room
    }

    /// The runs a stretch of `group` placed after `earlier` would be cut into, in slots, if it
    /// took `slots_max` slots: the room of each zone the route goes through (the last cut to
    /// what is left). A stretch of fewer slots takes a prefix of the same runs, since the route
    /// leaves a zone only once it is full. The concatenated layout lays pages out by them, so
    /// that no page crosses a run's end wherever NoWA sends the group.
    pub fn stretch_rooms(&self, earlier: &[GroupRun], group: u32, slots_max: u32) -> Vec<u32> {
        assert!((1..=BATCH_SLOTS_MAX).contains(&slots_max), "a stretch of {slots_max} slots");
        let mut groups = earlier.to_vec();
        groups.push(GroupRun { group, pages: slots_max });
        // Routing reads only the stretches, never the order; earlier stretches route as they
        // would alone, since routing never looks ahead.
        let (routes, _) = self.route(&WritePlan { order: Vec::new(), groups });
        let last = earlier.len() as u32;
        let rooms: Vec<u32> = routes.iter().filter(|r| r.stretch == last).map(|r| r.take).collect();
        assert_eq!(rooms.iter().map(|r| u64::from(*r)).sum::<u64>(), u64::from(slots_max));
        rooms
    }

    /// Empty zones the plan would open (its routes that open one).
    pub(super) fn zones_needed(&self, plan: &WritePlan) -> u32 {
        let (routes, _) = self.route(plan);
        let zones = routes.iter().filter(|r| r.opens).count() as u32;
        // Each zone a route opens takes at least one of the plan's pages.
        debug_assert!(zones <= plan.page_count(), "{zones} zones for {plan:?}");
        zones
    }

    /// Where each stretch of `plan` goes, without changing anything: the group's open zone,
    /// then fresh zones as it fills. With NoWA, a group whose zone is full while the active
    /// group may open no more zones continues in the open zone with the most room (000 rule 1:
    /// a new group opens once all its zones are full). Returns the routes and the NoWA group's
    /// zones left afterwards.
    fn route(&self, plan: &WritePlan) -> (Vec<Route>, u32) {
        let max_open = self.options.max_open_zones;
        let spz = self.slots_per_zone();
        let mut room: Vec<u32> = (0..max_open).map(|g| self.room_slots(g)).collect();
        let mut group_left = self.nowa.as_ref().map(|m| m.group_zones_left());
        let mut routes = Vec::with_capacity(plan.groups.len() + 1);
        for (index, stretch) in plan.groups.iter().enumerate() {
            let group = (stretch.group % max_open) as usize;
            let mut left = stretch.pages;
            // Each pass fills one zone's room or opens one zone: bounded by the zones the
            // stretch could touch.
            for _ in 0..=(stretch.pages.div_ceil(spz) + max_open + 1) {
                if left == 0 {
                    break;
                }
                let mut starts_group = false;
                let (owner, opens) = match (room[group], group_left.as_mut()) {
                    (r, _) if r > 0 => (group, false),
                    (_, None) => (group, true),
                    (_, Some(zones_left)) => {
                        if room.iter().all(|r| *r == 0) {
                            *zones_left = max_open;
                            starts_group = true;
                        }
                        if *zones_left > 0 {
                            *zones_left -= 1;
                            (group, true)
                        } else {
                            let fullest =
                                (0..room.len()).max_by_key(|&h| (room[h], usize::MAX - h));
                            (fullest.unwrap_or(group), false)
                        }
                    }
                };
                if opens {
                    room[owner] = spz;
                }
                assert!(room[owner] > 0, "route to a zone without room");
                let take = left.min(room[owner]);
                room[owner] -= take;
                left -= take;
                assert!(opens || !starts_group, "a group starts with a zone it opens");
                let owner = owner as u32;
                let index = index as u32;
                routes.push(Route {
                    stretch: index,
                    owner,
                    group: stretch.group,
                    take,
                    opens,
                    starts_group,
                });
            }
            assert_eq!(left, 0, "a stretch was not routed");
        }
        (routes, group_left.unwrap_or(0))
    }

    /// Appends one route: opens its zone if it says so, takes its slots and pushes the run.
    fn apply_route(&mut self, route: Route, runs: &mut Vec<SlotRun>) {
        let owner = route.owner as usize;
        if route.opens {
            assert!(self.open_by_group[owner].is_none(), "route opens over an open zone");
            let zone = self.empty.pop_front();
            assert!(zone.is_some(), "free zones were counted before reserving");
            let zone = zone.unwrap_or_default();
            self.placement.zone_opened(route.group, zone);
            let hint = self.fdp_hint(route.owner);
            self.zones.open(zone, hint);
            self.open_by_group[owner] = Some(zone);
            if let Some(model) = self.nowa.as_mut() {
                model.zone_opened(zone, route.starts_group);
            }
        }
        let zone = self.open_by_group[owner];
        assert!(zone.is_some(), "route to group {owner} without an open zone");
        let zone = zone.unwrap_or_default();
        self.clock += u64::from(route.take);
        let first_slot = self.zones.append(zone, route.take, self.clock);
        for slot in first_slot..first_slot + route.take {
            assert_eq!(self.reverse.get(zone, slot), SlotEntry::Free, "slot written twice");
            self.reverse.set(zone, slot, SlotEntry::Reserved);
        }
        if let Some(model) = self.nowa.as_mut() {
            model.append(zone, route.take);
        }
        if self.zones.get(zone).state() == ZoneState::Full {
            self.open_by_group[owner] = None;
        }
        runs.push(SlotRun { zone, first_slot, slots: route.take });
    }

    /// Why `zones_short` more empty zones are missing: the log (zones wait for durability), GC
    /// not run yet (a full zone has invalid slots), or live data (out of space).
    fn no_room_error(&self, slots: u32, zones_short: u32) -> SpaceError {
        // `check_room` found the plan short of zones: the reasons below explain a shortfall.
        debug_assert!(zones_short > 0, "no room for {slots} slots, yet no zone short");
        if self.pending_reset.len() as u32 >= zones_short {
            let lsn_needed = self
                .pending_reset
                .iter()
                .map(|z| match self.zones.get(*z).state() {
                    ZoneState::PendingReset { lsn_needed } => lsn_needed,
                    _ => 0,
                })
                .max()
                .unwrap_or(0);
            return SpaceError::AwaitingDurability { lsn_needed };
        }
        // A draining victim is room too: a cycle copies it directly (`gc/drain.rs`).
        let draining = self.draining_zone_count() > 0;
        let reclaimable =
            |z: &super::zone::Zone| super::gc::is_candidate(z) || super::gc::is_sparse(z);
        if draining || self.zones.iter().any(|(_, z)| reclaimable(z)) {
            return SpaceError::NeedsGc { zones_short };
        }
        self.out_of_space(u64::from(slots))
    }

    /// The final error for a batch of `needed_slots` that no GC or flush can make room for.
    pub fn out_of_space(&self, needed_slots: u64) -> SpaceError {
        // The executors' side asserts it too: running out of space needs slots to place.
        debug_assert!(needed_slots > 0, "out of space for no slots");
        SpaceError::OutOfSpace {
            needed_slots,
            free_slots: u64::from(self.empty_zone_count()) * u64::from(self.slots_per_zone()),
            live_slots: self.live_slots(),
            capacity_slots: self.capacity_slots(),
        }
    }

    /// Declares that the packer put `pages` pages into the reserved slot (at least 2, or 1
    /// when a page crosses into or out of it): it is shared from now on, and counts as written
    /// (valid or dead) once every one of them is committed or abandoned. A slot holding one
    /// whole page needs no declaration.
    pub fn share_slot(&mut self, zone: ZoneId, slot: u32, pages: u16) {
        assert!(pages >= 1, "a shared slot holds a page");
        assert_eq!(self.reverse.get(zone, slot), SlotEntry::Reserved, "share of {zone}/{slot}");
        self.reverse.set_shared(zone, slot, SharedSlot { pages: SlotPages::new(), pending: pages });
    }

    /// Points `pid` at the reserved slot(s) of `loc` (its data is durable and the map record at
    /// `lsn` is logged); returns the location it replaced, now invalid.
    pub fn commit(&mut self, pid: PageId, loc: Location, lsn: Lsn) -> Option<Location> {
        assert!(loc.slots().end <= self.slots_per_zone(), "{loc:?} crosses its zone's end");
        for slot in loc.slots() {
            match self.reverse.get(loc.zone, slot) {
                SlotEntry::Reserved if !loc.crosses() => {
                    self.zones.commit_slot(loc.zone);
                    self.reverse.set(loc.zone, slot, SlotEntry::Page(pid));
                }
                SlotEntry::Shared => {
                    let shared = self.reverse.shared_mut(loc.zone, slot);
                    assert!(shared.pending >= 1, "commit of page {pid} to {loc:?}: none pending");
                    shared.pending -= 1;
                    shared.pages.push(pid);
                    self.settle_shared(loc.zone, slot);
                }
                other => panic!("commit of page {pid} to {loc:?}: slot not reserved ({other:?})"),
            }
        }
        self.zones.add_live(loc.zone, loc.footprint_bytes());
        let old = self.map.set(pid, loc);
        if let Some(old) = old {
            self.invalidate(pid, old, lsn);
        }
        old
    }

    #[cfg(test)]
    /// Commits a GC move of `pid` from `from` to the reserved `to`, unless the page moved or was
    /// freed since the plan was made: then `to` is abandoned and the result is false.
    pub fn commit_gc_move(&mut self, pid: PageId, from: Location, to: Location, lsn: Lsn) -> bool {
        if self.map.get(pid) != Some(from) {
            self.abandon(to);
            return false;
        }
        let old = self.commit(pid, to, lsn);
        assert_eq!(old, Some(from));
        true
    }

    /// A reserved page that will never be committed (write failed, page dropped): its slot is
    /// dead, or for a packed slot one fewer page is pending.
    pub fn abandon(&mut self, loc: Location) {
        for slot in loc.slots() {
            match self.reverse.get(loc.zone, slot) {
                SlotEntry::Reserved if !loc.crosses() => {
                    self.zones.abandon_slot(loc.zone);
                    self.reverse.set(loc.zone, slot, SlotEntry::Dead);
                }
                SlotEntry::Shared => {
                    let shared = self.reverse.shared_mut(loc.zone, slot);
                    assert!(shared.pending >= 1, "abandon {loc:?}: nothing pending");
                    shared.pending -= 1;
                    self.settle_shared(loc.zone, slot);
                }
                other => panic!("abandon {loc:?}: slot not reserved ({other:?})"),
            }
        }
    }

    /// A packed slot whose last pending page just resolved: valid if a page of it is current,
    /// else dead. Nothing while pages are pending.
    fn settle_shared(&mut self, zone: ZoneId, slot: u32) {
        // Callers just updated the slot's pages through `shared_mut`: it is still shared.
        debug_assert_eq!(self.reverse.get(zone, slot), SlotEntry::Shared, "{zone}/{slot}");
        let Some(shared) = self.reverse.shared(zone, slot) else { return };
        if shared.pending > 0 {
            return;
        }
        if shared.pages.is_empty() {
            self.zones.abandon_slot(zone);
            self.reverse.unshare(zone, slot, SlotEntry::Dead);
        } else {
            self.zones.commit_slot(zone);
        }
    }

    /// The tree deallocated `pid` (record at `lsn`): its slot becomes invalid.
    pub fn free_pid(&mut self, pid: PageId, lsn: Lsn) -> Option<Location> {
        let old = self.map.clear(pid)?;
        // The map and the zone table describe one space: the page's zone is one of its zones.
        debug_assert!(old.zone < self.zones.len(), "page {pid} mapped to zone {}", old.zone);
        self.invalidate(pid, old, lsn);
        Some(old)
    }

    /// The version of `pid` at `old` is no longer current: each slot it touches loses it, and
    /// a slot left with no current page and none pending is dead.
    fn invalidate(&mut self, pid: PageId, old: Location, lsn: Lsn) {
        self.zones.remove_live(old.zone, old.footprint_bytes());
        for slot in old.slots() {
            match self.reverse.get(old.zone, slot) {
                SlotEntry::Page(p) if p == pid && !old.crosses() => {
                    self.reverse.set(old.zone, slot, SlotEntry::Dead);
                    self.zones.invalidate_slot(old.zone, lsn);
                }
                SlotEntry::Shared => {
                    let shared = self.reverse.shared_mut(old.zone, slot);
                    let at = shared.pages.iter().position(|p| *p == pid);
                    assert!(at.is_some(), "packed slot {slot} of {old:?} lacks page {pid}");
                    shared.pages.swap_remove(at.unwrap_or_default());
                    let (empty, pending) = (shared.pages.is_empty(), shared.pending);
                    if empty && pending == 0 {
                        self.reverse.unshare(old.zone, slot, SlotEntry::Dead);
                        self.zones.invalidate_slot(old.zone, lsn);
                    } else {
                        self.zones.note_invalidation(old.zone, lsn);
                    }
                }
                other => panic!("reverse map disagrees for page {pid} at {old:?}: {other:?}"),
            }
        }
        // A victim draining through the buffer pool finishes with its last valid page.
        self.finish_drained(old.zone, lsn);
    }

    /// Device byte offset of a run's first slot.
    pub fn run_offset_bytes(&self, run: &SlotRun) -> u64 {
        // The device write at this offset covers the run: some slots, all inside its zone.
        debug_assert!(
            run.slots > 0 && run.first_slot + run.slots <= self.slots_per_zone(),
            "{run:?} in zones of {} slots",
            self.slots_per_zone()
        );
        self.offset_bytes(Location::new(run.zone, run.first_slot, 1))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::space::SpaceOptions;

    const USER: WritePurpose = WritePurpose::UserEviction;

    use crate::space::tests::commit_runs;

    #[test]
    fn a_batch_that_overflows_its_zone_continues_in_a_new_one() {
        let mut space = Space::new(SpaceOptions::test_min()).unwrap();
        let runs = space.reserve_batch(3, 0, USER).unwrap();
        assert_eq!(runs, vec![SlotRun { zone: 0, first_slot: 0, slots: 3 }]);
        commit_runs(&mut space, &runs, 0, 1);
        let runs = space.reserve_batch(6, 0, USER).unwrap();
        assert_eq!(
            runs,
            vec![
                SlotRun { zone: 0, first_slot: 3, slots: 1 },
                SlotRun { zone: 1, first_slot: 0, slots: 4 },
                SlotRun { zone: 2, first_slot: 0, slots: 1 },
            ]
        );
        assert_eq!(space.zones().get(0).state(), ZoneState::Full);
        assert_eq!(space.zones().get(1).state(), ZoneState::Full);
        assert_eq!(space.zones().get(2).state(), ZoneState::Open);
        assert_eq!(space.open_zone_count(), 1);
        commit_runs(&mut space, &runs, 3, 2);
        space.check_invariants().unwrap();
        assert_eq!(space.run_offset_bytes(&runs[1]), 4 * 4096);
    }

    /// A worst-case reservation of which the write used less gives its tail back: the zone it
    /// had filled is open again at the used end, the slots are free (reserved again by the next
    /// batch), the issued count drops, and chunks crossing a slot commit as shared slots.
    #[test]
    fn an_unused_tail_goes_back_to_its_zone() {
        let mut space = Space::new(SpaceOptions::test_min()).unwrap();
        let run = space.reserve_batch(4, 0, USER).unwrap()[0];
        assert_eq!((run.zone, space.zones().get(0).state()), (0, ZoneState::Full));
        space.give_back(run, 2, 0, USER);
        assert_eq!(space.zones().get(0).state(), ZoneState::Open);
        assert_eq!((space.zones().get(0).write_ptr_slots(), space.room_slots(0)), (2, 2));
        assert_eq!(space.counters().issued_slots[USER as usize], 2);
        // Two chunks in the two used slots: 4000 bytes at 0, then one at 4000 whose feedback
        // (the write's last chunk, padded) reaches slot 1's end.
        let a = Location::chunk(0, 0, 0, 4000);
        let b = Location::chunk(0, 0, 4000, 8192 - 4000);
        space.share_slot(0, 0, 2);
        space.share_slot(0, 1, 1);
        space.commit(1, a, 1);
        space.commit(2, b, 1);
        space.check_invariants().unwrap();
        assert_eq!(space.zones().get(0).live_bytes(), 8192);
        let next = space.reserve_batch(2, 0, USER).unwrap();
        assert_eq!(next, vec![SlotRun { zone: 0, first_slot: 2, slots: 2 }]);
    }

    #[test]
    fn groups_get_their_own_open_zones_up_to_the_limit() {
        let mut space = Space::new(SpaceOptions::test_min()).unwrap();
        let a = space.reserve_batch(1, 0, USER).unwrap();
        let b = space.reserve_batch(1, 1, USER).unwrap();
        let c = space.reserve_batch(1, 2, USER).unwrap(); // 2 % max_open_zones(2) = group 0
        assert_ne!(a[0].zone, b[0].zone);
        assert_eq!(a[0].zone, c[0].zone);
        assert_eq!(space.open_zone_count(), 2);
    }

    /// FDP: zones open at the same time carry distinct handles (their open-zone slots), and
    /// more open zones than handles is refused.
    #[test]
    fn open_zones_get_distinct_fdp_handles() {
        use crate::device::Placement;
        let options = SpaceOptions { placement_handles: 2, ..SpaceOptions::test_min() };
        let mut space = Space::new(options).unwrap();
        let a = space.reserve_batch(1, 0, USER).unwrap();
        let b = space.reserve_batch(1, 1, USER).unwrap();
        assert_eq!(space.placement(a[0].zone), Placement::Fdp(0));
        assert_eq!(space.placement(b[0].zone), Placement::Fdp(1));
        let too_many = SpaceOptions { placement_handles: 1, ..SpaceOptions::test_min() };
        assert!(Space::new(too_many).is_err());
    }

    #[test]
    fn overwrite_invalidates_the_old_slot_and_records_the_lsn() {
        let mut space = Space::new(SpaceOptions::test_min()).unwrap();
        let runs = space.reserve_batch(1, 0, USER).unwrap();
        assert_eq!(space.commit(7, runs[0].location(0, 4096), 10), None);
        let runs2 = space.reserve_batch(1, 0, USER).unwrap();
        let old = space.commit(7, runs2[0].location(0, 4096), 11);
        assert_eq!(old, Some(runs[0].location(0, 4096)));
        assert_eq!(space.reverse().get(0, 0), SlotEntry::Dead);
        assert_eq!(space.zones().get(0).invalidation_lsn_max(), 11);
        assert_eq!(space.free_pid(7, 12), Some(runs2[0].location(0, 4096)));
        assert_eq!(space.free_pid(7, 13), None);
        space.check_invariants().unwrap();
    }

    #[test]
    fn gc_move_of_a_page_that_moved_meanwhile_is_dropped() {
        let mut space = Space::new(SpaceOptions::test_min()).unwrap();
        let r = space.reserve_batch(1, 0, USER).unwrap();
        let from = r[0].location(0, 4096);
        space.commit(1, from, 1);
        let user = space.reserve_batch(1, 0, USER).unwrap();
        space.commit(1, user[0].location(0, 4096), 2);
        let gc = space.reserve_batch(1, 1, WritePurpose::GcCopy).unwrap();
        assert!(!space.commit_gc_move(1, from, gc[0].location(0, 4096), 3));
        assert_eq!(space.location(1), Some(user[0].location(0, 4096)));
        space.check_invariants().unwrap();
    }

    #[test]
    #[should_panic(expected = "slot not reserved")]
    fn committing_a_slot_twice_is_a_bug() {
        let mut space = Space::new(SpaceOptions::test_min()).unwrap();
        let r = space.reserve_batch(1, 0, USER).unwrap();
        space.commit(1, r[0].location(0, 4096), 1);
        space.commit(2, r[0].location(0, 4096), 2);
    }

    #[test]
    fn user_writes_leave_the_gc_reserve_and_fail_typed_without_changes() {
        let options = SpaceOptions::test_min();
        let mut space = Space::new(options).unwrap();
        let zones = space.zone_count();
        let user_zones = zones - options.gc_reserve_zones;
        let mut pid = 0;
        for _ in 0..user_zones {
            let runs = space.reserve_batch(4, 0, USER).unwrap();
            pid = commit_runs(&mut space, &runs, pid, 1);
        }
        let before = space.counters();
        match space.reserve_batch(1, 0, USER) {
            Err(SpaceError::OutOfSpace { needed_slots: 1, live_slots, .. }) => {
                assert_eq!(live_slots, u64::from(user_zones) * 4)
            }
            other => panic!("expected out of space, got {other:?}"),
        }
        assert_eq!(space.counters(), before, "a refused batch changes nothing");
        assert_eq!(space.empty_zone_count(), options.gc_reserve_zones);
        // GC copyback may still use the reserve.
        space.reserve_batch(1, 1, WritePurpose::GcCopy).unwrap();
        space.check_invariants().unwrap();
    }

    /// Three pages packed into one slot: the slot counts as valid once every page resolved,
    /// stays valid while one page of it is current, and dies with the last; GC lists every
    /// current page; a rebuild from the map finds the same packed slot.
    #[test]
    fn packed_slot_lives_until_its_last_page_dies() {
        let mut space = Space::new(SpaceOptions::test_min()).unwrap();
        let runs = space.reserve_batch(1, 0, USER).unwrap();
        let (zone, slot) = (runs[0].zone, runs[0].first_slot);
        space.share_slot(zone, slot, 3);
        let at = |off: u16, size: u16| Location::packed(zone, slot, off, size);
        assert_eq!(space.zones().get(zone).pending_slots(), 1);
        space.commit(1, at(0, 1000), 5);
        space.abandon(at(1024, 100));
        assert_eq!(space.zones().get(zone).valid_slots(), 0, "one page still pending");
        space.commit(2, at(2048, 2000), 6);
        let z = space.zones().get(zone);
        assert_eq!((z.valid_slots(), z.pending_slots()), (1, 0));
        space.check_invariants().unwrap();
        let rebuilt = Space::rebuild_from_map(SpaceOptions::test_min(), space.map().clone());
        let (rebuilt, _) = rebuilt.unwrap();
        rebuilt.check_invariants().unwrap();
        assert_eq!(rebuilt.reverse().shared(zone, slot).map(|s| s.pages.len()), Some(2));
        assert_eq!(space.free_pid(1, 7), Some(at(0, 1000)));
        assert_eq!(space.zones().get(zone).valid_slots(), 1, "page 2 is still current");
        assert_eq!(space.zones().get(zone).invalidation_lsn_max(), 7);
        space.check_invariants().unwrap();
        assert_eq!(space.free_pid(2, 8), Some(at(2048, 2000)));
        assert_eq!(space.reverse().get(zone, slot), SlotEntry::Dead);
        assert_eq!(space.zones().get(zone).valid_slots(), 0);
        space.check_invariants().unwrap();
    }

    /// Concatenated pages A (slot 0), B (crossing 0 -> 1) and C (crossing 1 -> 2): every slot
    /// stays valid while a page touching it is current, in any order of deaths, and a rebuild
    /// from the map finds the same counts; an abandoned crossing page frees nothing it shares.
    #[test]
    fn crossing_pages_keep_both_slots_valid_until_they_die() {
        let mut space = Space::new(SpaceOptions::test_min()).unwrap();
        let runs = space.reserve_batch(3, 0, USER).unwrap();
        assert_eq!(runs.len(), 1);
        let (zone, s0) = (runs[0].zone, runs[0].first_slot);
        let a = Location::concatenated(zone, s0, 0, 3000);
        let b = Location::concatenated(zone, s0, 3008, 3000);
        let c = Location::concatenated(zone, s0 + 1, 1920, 3000);
        assert!(!a.crosses() && b.crosses() && c.crosses());
        for (slot, pages) in [(s0, 2), (s0 + 1, 2), (s0 + 2, 1)] {
            space.share_slot(zone, slot, pages);
        }
        space.commit(1, a, 5);
        space.abandon(b);
        space.commit(3, c, 6);
        let z = space.zones().get(zone);
        assert_eq!((z.valid_slots(), z.pending_slots(), z.invalid_slots()), (3, 0, 0));
        space.check_invariants().unwrap();
        let (rebuilt, _) =
            Space::rebuild_from_map(SpaceOptions::test_min(), space.map().clone()).unwrap();
        rebuilt.check_invariants().unwrap();
        assert_eq!(rebuilt.zones().get(zone).valid_slots(), 3);
        assert_eq!(rebuilt.current_pages(zone).len(), 2, "each page listed once");
        // C dies: slot 2 is dead, slot 1 (C's head, B abandoned) too; A keeps slot 0.
        space.free_pid(3, 7);
        assert_eq!(space.zones().get(zone).valid_slots(), 1);
        assert_eq!(space.reverse().get(zone, s0 + 2), SlotEntry::Dead);
        space.check_invariants().unwrap();
        space.free_pid(1, 8);
        assert_eq!(space.zones().get(zone).valid_slots(), 0);
        space.check_invariants().unwrap();
    }

    #[test]
    fn overlapping_packed_pages_make_a_map_corrupt() {
        let mut map = crate::space::PageMap::new();
        map.set(1, Location::packed(0, 0, 0, 2000));
        map.set(2, Location::packed(0, 0, 1024, 2000));
        let r = Space::rebuild_from_map(SpaceOptions::test_min(), map);
        assert!(matches!(r, Err(SpaceError::CorruptMap { .. })), "{r:?}");
    }
}
