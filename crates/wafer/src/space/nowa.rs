//! NoWA (000 sec. 5.4): SSD WAF 1 on a conventional SSD by keeping the SSD's own GC from ever
//! finding a superblock that still holds valid data.
//!
//! A conventional SSD appends host writes to one open superblock after another (its GC unit),
//! whatever LBA they carry. So the engine can estimate where each zone landed: it numbers its
//! own writes (data and metadata) in issue order - the *stream* - and unit `u` is stream slots
//! `u * unit_slots .. (u + 1) * unit_slots`. Each zone's current incarnation spans the units
//! between its first and its last append. A unit is *live* while some zone spanning it holds
//! data (not yet reset, i.e. trimmed); once every such zone is reset, the SSD sees the unit
//! fully invalid and erases it without copying.
//!
//! The SSD must copy only when it needs a free superblock and none is fully invalid, that is
//! when live units exceed its physical units less its own free reserve (the *budget*). Two
//! rules keep live units under it:
//! 1. Zones open in groups: a new zone opens only while the active group has fewer than
//!    `max_open_zones` zones or once all its zones are full, so a group's zones share a
//!    contiguous stretch of the stream (000 rule 1; the routing in `alloc.rs`).
//! 2. Imbalance is corrected before the SSD collects: when live units exceed the budget, GC
//!    takes every remaining zone of the cheapest partly dead unit (a *compensation*: 000's
//!    compensation write) so the unit dies whole. [`SsdModel::compensation`]
//!
//! Victim choice also avoids creating imbalance: among near-equal victims it prefers the zone
//! whose units have the fewest other live zones ([`SsdModel::sharing`]).
use std::collections::BTreeMap;

use super::nowa_groups::GroupBook;
use super::zone::{ZoneId, ZoneState, ZoneTable};

/// Units the model tracks at most: bounds its map (a unit older than the SSD's physical units
/// has been collected by the SSD whatever the model says).
pub const TRACKED_UNITS_MAX: u64 = 1 << 20;

/// How NoWA corrects imbalance (see the module doc and `nowa_groups.rs`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum NoWaMode {
    /// Rule 2 as above: when live units exceed the budget, GC takes every remaining zone of
    /// the cheapest partly dead unit, in cycles of its own.
    #[default]
    Unit,
    /// 000's artifact: no SSD unit estimate and no cycles of its own; when GC runs anyway and
    /// a group of zones opened together was partly collected, GC takes the rest of the
    /// cheapest such group instead of its policy's victim, and greedy avoids starting groups.
    Group,
}

impl NoWaMode {
    pub fn parse(text: &str) -> Result<NoWaMode, String> {
        let text = text.trim().to_ascii_lowercase();
        let mode = match text.as_str() {
            "unit" => Ok(NoWaMode::Unit),
            "group" => Ok(NoWaMode::Group),
            other => Err(format!("unknown NoWA mode `{other}` (expected unit or group)")),
        };
        // Reports print `name`: a mode must parse only from the name it is reported by.
        debug_assert!(mode.as_ref().ok().is_none_or(|m| m.name() == text), "{text}");
        mode
    }

    pub fn name(self) -> &'static str {
        let name = match self {
            NoWaMode::Unit => "unit",
            NoWaMode::Group => "group",
        };
        // `parse` lowercases what it reads: a name with a capital could never be parsed back.
        debug_assert!(name.bytes().all(|b| b.is_ascii_lowercase()), "mode {self:?} as {name}");
        name
    }
}

/// What NoWA needs to know of the SSD.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct NoWaOptions {
    /// The SSD's GC unit (superblock) in 4 KiB slots.
    pub unit_slots: u64,
    /// Units that may hold valid data before the SSD must collect one: its physical units
    /// less the free superblocks it keeps.
    pub budget_units: u32,
    /// How imbalance is corrected.
    pub mode: NoWaMode,
}

/// The units a zone's current incarnation spans, first and last inclusive.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Span {
    first_unit: u64,
    last_unit: u64,
}

/// The engine's estimate of the SSD's layout (see the module doc).
#[derive(Debug, Clone)]
pub struct SsdModel {
    options: NoWaOptions,
    /// Slots issued so far, data and metadata, in issue order.
    stream_slots: u64,
    spans: Vec<Option<Span>>,
    /// Live zones per unit; only units with at least one.
    unit_live: BTreeMap<u64, u32>,
    /// Zones the active group may still open before every one of them is full.
    group_zones_left: u32,
    /// Slots of valid data compensations chose to move.
    compensation_slots: u64,
    compensations: u64,
    /// No compensation was worth it; cleared by the next reset (what frees candidates).
    blocked: bool,
    /// The zones opened together (group mode's balancing; kept in unit mode too, unused).
    groups: GroupBook,
}

impl SsdModel {
    pub fn new(options: NoWaOptions, zone_count: u32) -> SsdModel {
        assert!(options.unit_slots > 0 && options.budget_units > 0, "{options:?}");
        SsdModel {
            options,
            stream_slots: 0,
            spans: vec![None; zone_count as usize],
            unit_live: BTreeMap::new(),
            group_zones_left: 0,
            compensation_slots: 0,
            compensations: 0,
            blocked: false,
            groups: GroupBook::new(zone_count),
        }
    }

    pub fn options(&self) -> NoWaOptions {
        // Checked at creation: units of no slots divide by zero, a budget of none compensates
        // forever.
        debug_assert!(self.options.unit_slots > 0 && self.options.budget_units > 0);
        self.options
    }

    /// Zones the model tracks (the space's zone table's size).
    pub fn zone_count(&self) -> u32 {
        // The group book is indexed by the same zone ids as the spans.
        debug_assert_eq!(self.groups.zone_count() as usize, self.spans.len(), "group book size");
        self.spans.len() as u32
    }

    /// Units holding data of a zone that is not reset.
    pub fn live_units(&self) -> u64 {
        let live = self.unit_live.len() as u64;
        // Units are numbered along the stream: none tracked lies past the stream's end.
        debug_assert!(
            self.unit_live.last_key_value().is_none_or(|(&u, _)| u <= self.stream_units()),
            "a live unit past the stream's {} units",
            self.stream_units()
        );
        live
    }

    /// The unit the stream's next slot falls in.
    fn stream_units(&self) -> u64 {
        debug_assert!(self.options.unit_slots > 0, "{:?}", self.options);
        self.stream_slots / self.options.unit_slots
    }

    /// More units are live than the SSD can hold without collecting one that holds data.
    pub fn over_budget(&self) -> bool {
        let over = self.live_units() > u64::from(self.options.budget_units);
        // A live unit holds data of some zone not reset: over budget, some zone has a span.
        debug_assert!(!over || self.spans.iter().any(Option::is_some), "units live, no span");
        over
    }

    /// Whether the live units would fit the budget once `zones` (emptied by GC, waiting for
    /// the log) are reset: then a log flush, not another compensation, is what the SSD needs.
    pub fn within_budget_after_resets(&self, zones: &[ZoneId]) -> bool {
        let mut leaving: BTreeMap<u64, u32> = BTreeMap::new();
        for zone in zones {
            let Some(span) = self.spans[*zone as usize] else { continue };
            for u in span.first_unit..=span.last_unit {
                *leaving.entry(u).or_insert(0) += 1;
            }
        }
        let mut dying = 0u64;
        for (u, n) in &leaving {
            let Some(&live) = self.unit_live.get(u) else { continue };
            // A unit counts each zone spanning it once, and each zone leaves it once.
            assert!(*n <= live, "unit {u}: {n} zones leave, {live} live");
            dying += u64::from(*n == live);
        }
        assert!(dying <= self.live_units());
        self.live_units() - dying <= u64::from(self.options.budget_units)
    }

    /// (compensations, slots they chose to move) since creation.
    pub fn compensation_counts(&self) -> (u64, u64) {
        // Slots are recorded only with a compensation (`compensated`).
        debug_assert!(
            self.compensations > 0 || self.compensation_slots == 0,
            "{} slots in no compensation",
            self.compensation_slots
        );
        (self.compensations, self.compensation_slots)
    }

    /// Rule 1 (see [`super::alloc`]'s routing): zones the active group may still open before
    /// every one of them is full.
    pub fn group_zones_left(&self) -> u32 {
        // A group is at most every zone: more left would let rule 1 open zones that are not.
        debug_assert!(self.group_zones_left as usize <= self.spans.len(), "{self:?}");
        self.group_zones_left
    }

    pub fn set_group_zones_left(&mut self, zones: u32) {
        // From the routing, which counts zones of this space.
        debug_assert!(zones as usize <= self.spans.len(), "{zones} of {} zones", self.spans.len());
        self.group_zones_left = zones;
    }

    /// The zones opened together and group mode's throttle.
    pub fn groups(&self) -> &GroupBook {
        debug_assert_eq!(self.groups.zone_count() as usize, self.spans.len(), "group book size");
        &self.groups
    }

    pub fn groups_mut(&mut self) -> &mut GroupBook {
        // Only group mode's throttle is noted through this (unit mode never compensates so).
        debug_assert_eq!(self.options.mode, NoWaMode::Group, "group book changed in unit mode");
        &mut self.groups
    }

    /// `zone` opened; `starts_group`: as the first zone of a new group (rule 1).
    pub fn zone_opened(&mut self, zone: ZoneId, starts_group: bool) {
        assert!((zone as usize) < self.spans.len(), "zone {zone}");
        self.groups.zone_opened(zone, starts_group);
    }

    /// `slots` appended to `zone` next in the stream.
    pub fn append(&mut self, zone: ZoneId, slots: u32) {
        assert!(slots > 0);
        let unit = self.options.unit_slots;
        let first = self.stream_slots / unit;
        let last = (self.stream_slots + u64::from(slots) - 1) / unit;
        self.stream_slots += u64::from(slots);
        let span = &mut self.spans[zone as usize];
        let from = match span {
            None => {
                *span = Some(Span { first_unit: first, last_unit: last });
                first
            }
            Some(s) => {
                assert!(s.last_unit <= last, "the stream only grows");
                let from = s.last_unit + 1;
                s.last_unit = last;
                from
            }
        };
        for u in from..=last {
            *self.unit_live.entry(u).or_insert(0) += 1;
        }
        self.forget_ancient();
    }

    /// `slots` written outside the zones (snapshots, superblock): they take stream room only.
    pub fn metadata(&mut self, slots: u64) {
        // A metadata write takes at least a slot; none would be a caller counting bytes wrong.
        debug_assert!(slots > 0, "a metadata write of no slots");
        self.stream_slots += slots;
    }

    /// `zone` was reset (trimmed): the units it spanned lose it.
    pub fn reset(&mut self, zone: ZoneId) {
        self.blocked = false;
        self.groups.reset(zone);
        let Some(span) = self.spans[zone as usize].take() else { return };
        assert!(span.first_unit <= span.last_unit);
        for u in span.first_unit..=span.last_unit {
            if let Some(live) = self.unit_live.get_mut(&u) {
                *live -= 1;
                if *live == 0 {
                    self.unit_live.remove(&u);
                }
            }
        }
    }

    /// The fewest live zones among the units `zone` spans (itself included): 1 means
    /// resetting it frees a unit; u32::MAX for a zone the model does not know.
    pub fn sharing(&self, zone: ZoneId) -> u32 {
        let Some(span) = self.spans[zone as usize] else { return u32::MAX };
        let fewest = (span.first_unit..=span.last_unit)
            .filter_map(|u| self.unit_live.get(&u).copied())
            .min()
            .unwrap_or(u32::MAX);
        // A tracked unit holds data of some zone not reset, this one included: never 0 live.
        debug_assert!(fewest > 0, "zone {zone} spans a unit with no live zone");
        fewest
    }

    /// Rule 2: the zones whose reset frees the cheapest partly dead unit, if one is worth it
    /// (all its zones Full and idle, their live bytes below a unit's worth less one zone, else
    /// moving them would use about the space it frees). A unit of more zones than one cycle
    /// may take, or whose copies exceed `room_slots`, goes over several cycles: the fewest
    /// valid first, at most [`super::gc::VICTIMS_PER_CYCLE_MAX`] and `room_slots` (at least one zone).
    pub fn compensation(&self, zones: &ZoneTable, room_slots: u64) -> Option<Vec<ZoneId>> {
        let spz = u64::from(zones.slots_per_zone());
        let mut by_unit: BTreeMap<u64, Vec<ZoneId>> = BTreeMap::new();
        for (zone, span) in self.spans.iter().enumerate() {
            let Some(span) = span else { continue };
            for u in span.first_unit..=span.last_unit {
                by_unit.entry(u).or_default().push(zone as ZoneId);
            }
        }
        let idle = |z: &ZoneId| {
            let zone = zones.get(*z);
            zone.state() == ZoneState::Full && zone.pending_slots() == 0
        };
        // Room is checked in valid slots (an upper bound of the copies); cost is what GC
        // repacks, the live bytes in slots (per page: a packed slot's dead pages cost nothing).
        let valid = |z: &ZoneId| u64::from(zones.get(*z).valid_slots());
        let live = |z: &ZoneId| u64::from(zones.get(*z).live_slots());
        let worth = self.options.unit_slots.saturating_sub(spz);
        let best = by_unit
            .values()
            .filter(|members| members.iter().all(idle))
            .map(|members| (members.iter().map(live).sum::<u64>(), members))
            .filter(|(cost, _)| *cost < worth)
            .min_by_key(|(cost, _)| *cost);
        let (cost, members) = best?;
        assert!(!members.is_empty() && cost < self.options.unit_slots);
        super::nowa_groups::cheapest_within_room(members, live, valid, room_slots)
    }

    /// No compensation is worth it now: GC stops asking until a zone is reset.
    pub fn block_compensation(&mut self) {
        // GC asks for a compensation only over budget, in unit mode (`nowa_compensation`).
        debug_assert!(self.over_budget(), "compensation blocked within budget");
        debug_assert_eq!(self.options.mode, NoWaMode::Unit, "group mode never blocks");
        self.blocked = true;
    }

    pub fn compensation_blocked(&self) -> bool {
        // Only unit mode blocks; a blocked group-mode model would never be cleared by reason.
        debug_assert!(!self.blocked || self.options.mode == NoWaMode::Unit, "{self:?}");
        self.blocked
    }

    /// Records a compensation of `slots` valid slots.
    pub fn compensated(&mut self, slots: u64) {
        // A compensation moves valid slots the stream issued: more than it ever issued is a
        // caller counting something else (bytes, or the zones' whole size).
        debug_assert!(
            slots <= self.stream_slots,
            "{slots} slots of a {} stream",
            self.stream_slots
        );
        self.compensations += 1;
        self.compensation_slots += slots;
    }

    /// Drops units so old that the SSD has certainly collected them (bounds the map).
    fn forget_ancient(&mut self) {
        let now = self.stream_slots / self.options.unit_slots;
        let Some((&oldest, _)) = self.unit_live.first_key_value() else { return };
        // Units are numbered along the stream: none tracked lies ahead of where it is now.
        debug_assert!(oldest <= now, "unit {oldest} ahead of the stream's {now}");
        if now - oldest > TRACKED_UNITS_MAX {
            self.unit_live.remove(&oldest);
        }
    }

    /// Per zone, the units its current incarnation spans (for the snapshot), and the stream.
    pub fn spans(&self) -> impl Iterator<Item = (ZoneId, u64, u64)> + '_ {
        self.spans.iter().enumerate().filter_map(|(z, s)| {
            let s = (*s)?;
            // `restore` drops a span whose units are out of order: the snapshot must not hold one.
            debug_assert!(s.first_unit <= s.last_unit, "zone {z}: {s:?}");
            Some((z as ZoneId, s.first_unit, s.last_unit))
        })
    }

    pub fn stream_slots(&self) -> u64 {
        // Saved with the spans: a span past the stream would come back as units never written.
        debug_assert!(
            self.spans.iter().flatten().all(|s| s.last_unit <= self.stream_units()),
            "a span past the stream's {} units",
            self.stream_units()
        );
        self.stream_slots
    }

    /// Rebuilds the model from saved spans (recovery); zones the caller knows are empty are
    /// left out.
    pub fn restore(&mut self, stream_slots: u64, spans: &[(ZoneId, u64, u64)]) {
        assert!(self.unit_live.is_empty() && self.stream_slots == 0, "restore into a new model");
        self.stream_slots = stream_slots;
        for &(zone, first_unit, last_unit) in spans {
            if (zone as usize) >= self.spans.len() || first_unit > last_unit {
                continue;
            }
            self.spans[zone as usize] = Some(Span { first_unit, last_unit });
            for u in first_unit..=last_unit {
                *self.unit_live.entry(u).or_insert(0) += 1;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn model(unit_slots: u64, budget_units: u32, zones: u32) -> SsdModel {
        SsdModel::new(NoWaOptions { unit_slots, budget_units, mode: NoWaMode::Unit }, zones)
    }

    /// 000 Figure 9: two zones multiplexed into two units die together, freeing both; Figure 8:
    /// one of them alone frees nothing.
    #[test]
    fn a_unit_dies_only_with_its_last_zone() {
        let mut m = model(4, 8, 4);
        for _ in 0..4 {
            m.append(0, 1);
            m.append(1, 1);
        }
        assert_eq!(m.live_units(), 2);
        assert_eq!((m.sharing(0), m.sharing(1)), (2, 2));
        m.reset(0);
        assert_eq!(m.live_units(), 2, "zone 1 keeps both units live");
        assert_eq!(m.sharing(1), 1);
        m.reset(1);
        assert_eq!(m.live_units(), 0);
    }

    /// Zones waiting for their reset free a unit only if every zone spanning it waits.
    #[test]
    fn waiting_zones_bring_the_model_within_budget_only_with_whole_units() {
        let mut m = model(4, 1, 4);
        for zone in 0..3 {
            m.append(zone, 4); // units 0, 1, 2
        }
        m.append(3, 2); // unit 3, shared with zone 0's next incarnation below
        assert!(m.over_budget());
        assert!(!m.within_budget_after_resets(&[0]), "3 units stay live");
        assert!(m.within_budget_after_resets(&[0, 1, 2]), "unit 3 alone stays live");
        m.reset(0);
        m.append(0, 2); // unit 3 again
        assert!(!m.within_budget_after_resets(&[2, 3]), "zone 0 keeps unit 3 live");
        assert!(m.within_budget_after_resets(&[0, 1, 3]), "unit 2 alone stays live");
    }

    #[test]
    fn metadata_shifts_the_stream_and_zones_straddle_units() {
        let mut m = model(4, 8, 4);
        m.metadata(2);
        m.append(0, 4); // stream 2..6: units 0 and 1
        assert_eq!(m.spans().collect::<Vec<_>>(), vec![(0, 0, 1)]);
        m.append(1, 2); // 6..8: unit 1
        m.reset(0);
        assert_eq!(m.live_units(), 1);
        assert_eq!(m.stream_slots(), 8);
    }

    #[test]
    fn restore_rebuilds_the_live_units() {
        let mut m = model(4, 8, 4);
        for z in 0..3 {
            m.append(z, 3);
        }
        let spans: Vec<_> = m.spans().collect();
        let mut r = model(4, 8, 4);
        r.restore(m.stream_slots(), &spans);
        assert_eq!((r.live_units(), r.sharing(1)), (m.live_units(), m.sharing(1)));
    }

    use crate::device::WritePurpose;
    use crate::space::{SlotRun, Space, SpaceOptions};

    const USER: WritePurpose = WritePurpose::UserEviction;

    fn nowa_space(unit_slots: u64, budget_units: u32) -> Space {
        let nowa = Some(NoWaOptions { unit_slots, budget_units, mode: NoWaMode::Unit });
        Space::new(SpaceOptions { nowa, ..SpaceOptions::test_min() }).unwrap()
    }

    use crate::space::tests::commit_runs as commit_all;

    /// Rule 1 on test_min (zones of 4 slots, 2 open): once the active group opened its two
    /// zones, a group whose zone filled continues in the other's; a new group opens only when
    /// both are full.
    #[test]
    fn a_complete_group_routes_into_its_open_zones_until_all_are_full() {
        let mut space = nowa_space(8, 100);
        let b = space.reserve_batch(1, 1, USER).unwrap();
        let a = space.reserve_batch(4, 0, USER).unwrap();
        assert_ne!(a[0].zone, b[0].zone);
        assert_eq!(space.open_zone_count(), 1, "group 0's zone is full");
        // What the concatenated layout lays blob pages out by: group 1's zone's room (3
        // slots), then a zone of the next group; after a stretch of group 1 took two of those
        // slots, one.
        assert_eq!(space.stretch_rooms(&[], 0, 5), vec![3, 2]);
        let group_1 = crate::space::GroupRun { group: 1, pages: 2 };
        assert_eq!(space.stretch_rooms(&[group_1], 0, 3), vec![1, 2]);
        let redirected = space.reserve_batch(2, 0, USER).unwrap();
        assert_eq!(redirected, vec![SlotRun { zone: b[0].zone, first_slot: 1, slots: 2 }]);
        let next = space.reserve_batch(2, 0, USER).unwrap();
        assert_eq!(next[0], SlotRun { zone: b[0].zone, first_slot: 3, slots: 1 });
        assert_eq!(next.len(), 2, "the rest opens the next group's first zone");
        assert_eq!(space.nowa().map(|m| m.stream_slots()), Some(9));
        let mut pid = 0;
        for runs in [&b, &a, &redirected, &next] {
            pid = commit_all(&mut space, runs, pid, 1);
        }
        space.check_invariants().unwrap();
    }

    /// Four zones share a unit (unit 0); overwriting two of them makes a second unit live and
    /// the first partly dead. Over a budget of one unit, GC compensates: it takes all four
    /// zones of unit 0, moving the two still valid, where plain greedy takes one empty zone.
    #[test]
    fn over_budget_gc_takes_the_rest_of_the_cheapest_partly_dead_unit() {
        for (budget, expect_zones) in [(1u32, 4usize), (100, 1)] {
            let mut space = nowa_space(16, budget);
            let mut pid = 0;
            for group in [0, 1, 0, 1] {
                let runs = space.reserve_batch(4, group, USER).unwrap();
                pid = commit_all(&mut space, &runs, pid, 1);
            }
            assert_eq!(pid, 16);
            for group in [0, 1] {
                let runs = space.reserve_batch(4, group, USER).unwrap();
                commit_all(&mut space, &runs, u64::from(group) * 4, 2);
            }
            let live = space.nowa().map(|m| m.live_units());
            assert_eq!(live, Some(2), "unit 0 partly dead, unit 1 holds the rewrites");
            let plan = space.plan_gc().unwrap();
            assert_eq!(plan.zones.len(), expect_zones, "budget {budget}: {plan:?}");
            let compensations = space.counters().nowa_compensations;
            assert_eq!(compensations, u64::from(expect_zones == 4));
            if expect_zones == 4 {
                let moved: Vec<u64> = plan.valid.iter().map(|(p, _)| *p).collect();
                assert_eq!(moved.len(), 8, "zones 2 and 3 hold pages 8..16: {moved:?}");
            }
        }
    }

    /// A snapshot of the model and a rebuild from the map: zones still holding pages keep
    /// their spans exactly; a zone emptied meanwhile drops out; a zone the snapshot does not
    /// know (opened after it) is placed after the saved stream.
    #[test]
    fn restore_after_rebuild_keeps_the_spans_of_zones_with_data() {
        let mut space = nowa_space(8, 100);
        let mut pid = 0;
        for group in [0, 1, 0, 1] {
            let runs = space.reserve_batch(4, group, USER).unwrap();
            pid = commit_all(&mut space, &runs, pid, 1);
        }
        let saved = space.nowa_snapshot().unwrap();
        assert_eq!(saved.spans.len(), 4);
        // Zone 0's pages all move into a new zone after the snapshot.
        let runs = space.reserve_batch(4, 0, USER).unwrap();
        let new_zone = runs[0].zone;
        commit_all(&mut space, &runs, 0, 2);
        let (mut rebuilt, to_reset) =
            Space::rebuild_from_map(*space.options(), space.map().clone()).unwrap();
        assert!(to_reset.contains(&0));
        rebuilt.restore_nowa(&saved);
        let model = rebuilt.nowa().unwrap();
        let spans: Vec<_> = model.spans().collect();
        let kept: Vec<_> = saved.spans.iter().copied().filter(|s| s.0 != 0).collect();
        assert_eq!(&spans[..3], &kept[..], "saved spans of zones with data");
        let unit0 = saved.stream_slots / 8;
        assert_eq!(spans[3], (new_zone, unit0, (saved.stream_slots + 3) / 8));
        // Unit 0 lost zone 0 (partly dead: zone 1 alone keeps it); zones 2 and 3 share unit 1.
        assert_eq!((model.sharing(1), model.sharing(2)), (1, 2), "{spans:?}");
        assert_eq!(pid, 16);
    }
}
