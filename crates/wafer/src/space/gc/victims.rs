//! The space's side of a GC cycle: when GC runs, which victims it takes (through the policy
//! and NoWA's compensation), the pages they hold, and closing them once their moves are
//! durable. Apart from `mod.rs` because it is `impl Space`, while the space names the policy
//! types `mod.rs` holds.
use super::limits::VICTIMS_PER_CYCLE_MAX;
use super::{compaction_choice, is_candidate, is_sparse, GcPlan, SpaceView, VictimChoice};
use crate::device::WritePurpose;
use crate::space::map::{Location, PageId, SlotEntry};
use crate::space::nowa::NoWaMode;
use crate::space::zone::{Lsn, ZoneId, ZoneState};
use crate::space::Space;

impl Space {
    /// Free zones for GC's purpose: empty ones plus those only waiting for the log.
    pub fn free_zone_count(&self) -> u32 {
        let free = self.empty_zone_count() + self.pending_reset_zone_count();
        // Empty and pending-reset zones are two disjoint sets of this space's zones.
        debug_assert!(free <= self.zones.len(), "{free} free of {} zones", self.zones.len());
        free
    }

    /// Free zones as GC's targets count them: with victims draining through the buffer pool
    /// (`gc_in_pool`) those too, as the artifact resets them at once (`drain.rs`).
    pub(super) fn gc_target_zone_count(&self) -> u32 {
        let target = self.free_zone_count() + self.draining_zone_count();
        // Draining victims are neither empty nor waiting for a reset: still within the zones.
        debug_assert!(target <= self.zones.len(), "{target} of {} zones", self.zones.len());
        target
    }

    /// GC should run: free zones fell below `gc_free_zones_low`, or NoWA must compensate.
    pub fn needs_gc(&self) -> bool {
        // Validated with the options: GC runs from below `low` until `high`, so low <= high.
        debug_assert!(self.options.gc_free_zones_low <= self.options.gc_free_zones_high);
        self.gc_target_zone_count() < self.options.gc_free_zones_low
            || self.nowa_wants_compensation()
    }

    /// GC may stop: free zones reached `gc_free_zones_high` and NoWA needs no compensation.
    pub fn gc_satisfied(&self) -> bool {
        let satisfied = self.gc_target_zone_count() >= self.options.gc_free_zones_high
            && !self.nowa_wants_compensation();
        // GC loops `while !gc_satisfied` after `needs_gc`: both at once would stop it at once.
        debug_assert!(!satisfied || !self.needs_gc(), "GC both needed and satisfied");
        satisfied
    }

    /// Unit mode only (group mode never adds a cycle): NoWA's model has more live units than
    /// the SSD holds and a compensation was not found impossible since the last zone reset.
    fn nowa_wants_compensation(&self) -> bool {
        // The model's spans are indexed by this space's zone ids.
        debug_assert!(
            self.nowa.as_ref().is_none_or(|m| m.zone_count() == self.zones.len()),
            "NoWA model of another zone table"
        );
        self.nowa.as_ref().is_some_and(|m| {
            m.options().mode == NoWaMode::Unit && m.over_budget() && !m.compensation_blocked()
        })
    }

    /// NoWA wants to compensate, but resetting the zones GC already emptied would bring it
    /// within budget. The model counts a unit live until every zone spanning it is reset, and a
    /// zone is reset only once its moves are durable: until a log flush, GC would compensate
    /// the next unit for one that is already dead.
    pub fn nowa_awaits_resets(&self) -> bool {
        let waiting = &self.pending_reset;
        // The model counts the zones it is told leave: each must be waiting for its reset.
        debug_assert!(
            waiting
                .iter()
                .all(|z| { matches!(self.zones.get(*z).state(), ZoneState::PendingReset { .. }) }),
            "pending-reset list out of step with the zone table: {waiting:?}"
        );
        self.nowa_wants_compensation()
            && !waiting.is_empty()
            && self.nowa.as_ref().is_some_and(|m| m.within_budget_after_resets(waiting))
    }

    /// NoWA's compensation when it is due, copied back to the GC group: in unit mode every
    /// remaining zone of the cheapest partly dead unit (`nowa.rs`), in group mode the members
    /// left of the cheapest partly collected group (`nowa_groups.rs`).
    fn nowa_compensation(&mut self, gc_group: u32) -> Option<VictimChoice> {
        let spz = u64::from(self.slots_per_zone());
        // Room for the copies: the empty zones less one, kept for the user writes that wait.
        let room_slots = u64::from(self.empty_zone_count().saturating_sub(1)) * spz;
        let model = self.nowa.as_ref()?;
        if model.options().mode == NoWaMode::Group {
            return self.nowa_group_compensation(gc_group, room_slots);
        }
        if !model.over_budget() {
            return None;
        }
        let zones = model.compensation(&self.zones, room_slots);
        let model = self.nowa.as_mut()?;
        let Some(zones) = zones else {
            model.block_compensation();
            return None;
        };
        // GC takes these as victims: full zones, none with a reservation in flight.
        let takeable = |z: &ZoneId| {
            let zone = self.zones.get(*z);
            zone.state() == ZoneState::Full && zone.pending_slots() == 0
        };
        debug_assert!(zones.iter().all(takeable), "compensation victims {zones:?}");
        let valid: u64 = zones.iter().map(|z| u64::from(self.zones.get(*z).valid_slots())).sum();
        model.compensated(valid);
        Some(VictimChoice { zones, purpose: WritePurpose::Compensation, dest_group: gc_group })
    }

    /// Group mode: when the artifact's throttle allows, the members left of the cheapest
    /// imbalanced group; records whether GC compensated (the throttle's other half).
    fn nowa_group_compensation(&mut self, gc_group: u32, room_slots: u64) -> Option<VictimChoice> {
        let model = self.nowa.as_mut()?;
        assert_eq!(model.options().mode, NoWaMode::Group);
        let groups = model.groups();
        let zones = groups.compensation_due().then(|| groups.compensation(&self.zones, room_slots));
        let zones = zones.flatten();
        model.groups_mut().note_choice(zones.is_some());
        let zones = zones?;
        let valid: u64 = zones.iter().map(|z| u64::from(self.zones.get(*z).valid_slots())).sum();
        model.compensated(valid);
        assert!(!zones.is_empty() && zones.len() <= VICTIMS_PER_CYCLE_MAX);
        Some(VictimChoice { zones, purpose: WritePurpose::Compensation, dest_group: gc_group })
    }

    /// Chooses a victim with the configured policy, marks it Victim and lists its valid pages.
    /// None: no zone would free anything (every Full zone is entirely valid) - if writes still
    /// need room, live data fills the device and `reserve_batch` reports out of space.
    pub fn plan_gc(&mut self) -> Option<GcPlan> {
        let gc_group = self.gc_group();
        let compensation = self.nowa_compensation(gc_group);
        let compensating = compensation.is_some();
        let choice = match compensation {
            Some(choice) => choice,
            // Nothing worth compensating (now blocked until a reset) or none due: the policy's
            // victim, as the writes waiting for room need one.
            None => {
                let view = SpaceView {
                    zones: &self.zones,
                    clock: self.clock,
                    gc_group,
                    nowa: self.nowa.as_ref(),
                };
                match self.policy.choose(&view) {
                    Some(choice) => choice,
                    // Short of zones with no invalid slot anywhere: repack a sparse zone.
                    None if self.free_zone_count() < self.options.gc_free_zones_low => {
                        compaction_choice(&view)?
                    }
                    None => return None,
                }
            }
        };
        assert!(!choice.zones.is_empty() && choice.zones.len() <= VICTIMS_PER_CYCLE_MAX);
        assert!(choice.dest_group < self.options.max_open_zones);
        let mut valid = Vec::new();
        let (mut valid_slots_sum, spz) = (0u64, self.slots_per_zone());
        for &zone in &choice.zones {
            let z = self.zones.get(zone);
            // A compensation may take a zone with no invalid slot: it frees its unit.
            let idle_full = z.state() == ZoneState::Full && z.pending_slots() == 0;
            assert!(
                is_candidate(z) || (compensating && idle_full) || is_sparse(z),
                "policy {} chose zone {zone}",
                self.policy.name()
            );
            self.zones.get_mut(zone).state = ZoneState::Victim;
            let pages = self.current_pages(zone);
            let (valid_slots, live_bytes) =
                (self.zones.get(zone).valid_slots(), self.zones.get(zone).live_bytes());
            // A valid slot holds a page or part of one, and a page touches at most two slots.
            assert!(2 * pages.len() >= valid_slots as usize, "too few current pages for the slots");
            self.stats.record_gc(zone, valid_slots, live_bytes, spz, self.clock);
            valid_slots_sum += u64::from(valid_slots);
            valid.extend(pages);
        }
        let valid_ratio = valid_slots_sum as f64 / (choice.zones.len() as f64 * f64::from(spz));
        let (valid, groups) = self.order_copies(valid, choice.dest_group);
        Some(GcPlan { zones: choice.zones, purpose: choice.purpose, valid, groups, valid_ratio })
    }

    /// The copies in the placement policy's order, with the group of each.
    pub(super) fn order_copies(
        &mut self,
        valid: Vec<(PageId, Location)>,
        dest_group: u32,
    ) -> (Vec<(PageId, Location)>, Vec<u32>) {
        if valid.is_empty() {
            return (valid, Vec::new());
        }
        let pids: Vec<PageId> = valid.iter().map(|(p, _)| *p).collect();
        let plan = self.plan_gc_copies(&pids, dest_group);
        let mut groups = Vec::with_capacity(valid.len());
        for stretch in &plan.groups {
            groups.extend(std::iter::repeat_n(stretch.group, stretch.pages as usize));
        }
        let ordered: Vec<(PageId, Location)> =
            plan.order.iter().map(|&i| valid[i as usize]).collect();
        assert_eq!((ordered.len(), groups.len()), (valid.len(), valid.len()));
        (ordered, groups)
    }

    /// The current pages of `zone` and their locations, in slot order (packed slots by
    /// offset), each once: a victim's pages, read in one sequential pass.
    pub(in crate::space) fn current_pages(&self, zone: ZoneId) -> Vec<(PageId, Location)> {
        let mut valid = Vec::with_capacity(self.zones.get(zone).valid_slots() as usize);
        for (slot, entry) in self.reverse.zone(zone).enumerate() {
            let first = valid.len();
            match entry {
                SlotEntry::Page(pid) => valid.push(pid),
                SlotEntry::Shared => {
                    // A page crossing in from the previous slot was listed there already.
                    let shared = self.reverse.shared(zone, slot as u32);
                    let starts_here =
                        |pid: &&PageId| self.map.get(**pid).is_some_and(|l| l.slot == slot as u32);
                    let pages = shared.map_or(&[][..], |s| &s.pages[..]);
                    valid.extend(pages.iter().filter(starts_here).copied());
                }
                _ => continue,
            }
            let here = &mut valid[first..];
            here.sort_unstable_by_key(|pid| self.map.get(*pid).map(|l| l.offset_bytes));
        }
        valid
            .into_iter()
            .filter_map(|pid| {
                let loc = self.map.get(pid);
                assert!(loc.is_some_and(|l| l.zone == zone), "page {pid} listed in zone {zone}");
                loc.map(|l| (pid, l))
            })
            .collect()
    }

    /// The mechanism gave up on a victim (e.g. out of space mid-copy): it is an ordinary Full
    /// zone again; pages already moved out stay moved.
    pub fn abort_victim(&mut self, zone: ZoneId) {
        let z = self.zones.get_mut(zone);
        assert_eq!(z.state, ZoneState::Victim, "abort of zone {zone} in {:?}", z.state);
        z.state = ZoneState::Full;
    }

    /// Every valid page of the victim has moved out, the last move logged at `lsn`. The zone
    /// waits in PendingReset until the log is durable up to the largest LSN that invalidated
    /// any of its slots - GC moves and earlier user overwrites and frees alike, since a crash
    /// losing any of them would recover a map pointing into the zone.
    pub fn finish_victim(&mut self, zone: ZoneId, lsn: Lsn) {
        let z = self.zones.get_mut(zone);
        assert_eq!(z.state, ZoneState::Victim, "finish of zone {zone} in {:?}", z.state);
        assert_eq!(z.valid_slots, 0, "zone {zone} still holds valid pages");
        assert_eq!(z.pending_slots, 0);
        let lsn_needed = lsn.max(z.invalidation_lsn_max);
        z.state = ZoneState::PendingReset { lsn_needed };
        assert!(self.pending_reset.len() < self.zones.len() as usize);
        self.pending_reset.push(zone);
    }

    /// Zones whose moves are durable (`lsn_needed <= durable_lsn`) become Empty (erase count + 1)
    /// and are returned: the caller trims / resets them on the device before they are written
    /// again (`io::reset_zones`).
    pub fn release_ready(&mut self, durable_lsn: Lsn) -> Vec<ZoneId> {
        let mut released = Vec::new();
        let zones = &self.zones;
        self.pending_reset.retain(|z| match zones.get(*z).state() {
            ZoneState::PendingReset { lsn_needed } if lsn_needed <= durable_lsn => {
                released.push(*z);
                false
            }
            _ => true,
        });
        for zone in &released {
            self.reverse.reset_zone(*zone);
            self.zones.reset(*zone);
            self.empty.push_back(*zone);
            if let Some(model) = self.nowa.as_mut() {
                model.reset(*zone);
            }
        }
        // The caller trims these before writing them again: each is empty now, and queued once.
        debug_assert!(released.iter().all(|z| self.zones.get(*z).state() == ZoneState::Empty));
        released
    }
}
