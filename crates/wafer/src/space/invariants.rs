//! A full consistency check of the space metadata, O(page ids + slots): for tests, debug
//! builds of the integrator, and after recovery.
use std::collections::HashSet;

use super::map::{Location, SlotEntry};
use super::zone::{ZoneId, ZoneState};
use super::Space;

/// The zone lists as sets, built once so each zone's membership is an O(1) lookup.
struct ZoneLists {
    empty: HashSet<ZoneId>,
    pending: HashSet<ZoneId>,
    open: HashSet<ZoneId>,
}

/// What the reverse map says about one zone's slots, to compare with the zone's own counts.
#[derive(Default)]
struct SlotTally {
    /// Slots holding current data (a settled packed slot counts once).
    pages: u32,
    /// Slots reserved for writes not yet settled.
    reserved: u32,
    dead: u32,
    /// Current page versions in the zone (a packed slot holds several).
    page_count: u64,
}

impl Space {
    /// Checks that map, reverse map, zone counts, states and queues agree. The error says what
    /// disagrees first.
    pub fn check_invariants(&self) -> Result<(), String> {
        let lists = self.check_zone_lists()?;
        let mut valid_total = 0u64;
        for (z, _) in self.zones.iter() {
            valid_total += self.check_zone(z, &lists)?;
        }
        if self.zones.count(|z| z.state() == ZoneState::Empty) as usize != lists.empty.len()
            || self.zones.count(|z| matches!(z.state(), ZoneState::PendingReset { .. })) as usize
                != lists.pending.len()
            || self.zones.count(|z| z.state() == ZoneState::Open) as usize != lists.open.len()
        {
            return Err("zone states and zone lists disagree".into());
        }
        if valid_total != self.map.mapped_count() {
            return Err(format!(
                "{valid_total} current pages in the zones, {} mapped pages",
                self.map.mapped_count()
            ));
        }
        self.check_map_against_reverse()?;
        // Each zone has one state and each list's length matched its state's count, so the
        // lists hold distinct zones: a checker that passed anything else is itself wrong.
        debug_assert!(
            lists.empty.len() + lists.pending.len() + lists.open.len() <= self.zones.len() as usize,
            "zone lists longer than the zone table passed the check"
        );
        Ok(())
    }

    /// The queues and lists hold each zone at most once, draining zones are victims with data
    /// left, and the open zones are within the limit. Returns the lists as sets for the
    /// per-zone checks.
    fn check_zone_lists(&self) -> Result<ZoneLists, String> {
        // Groups index their open zone by `group % max_open_zones`: one entry per index.
        debug_assert_eq!(
            self.open_by_group.len(),
            self.options.max_open_zones as usize,
            "open zones by group sized apart from the options"
        );
        let empty: HashSet<ZoneId> = self.empty.iter().copied().collect();
        let pending: HashSet<ZoneId> = self.pending_reset.iter().copied().collect();
        let open: HashSet<ZoneId> = self.open_by_group.iter().flatten().copied().collect();
        if empty.len() != self.empty.len() {
            return Err("a zone is twice in the empty queue".into());
        }
        if pending.len() != self.pending_reset.len() {
            return Err("a zone is twice in the pending-reset list".into());
        }
        let draining: HashSet<ZoneId> = self.draining_zones().collect();
        if draining.len() != self.draining_zone_count() as usize {
            return Err("a zone drains twice".into());
        }
        if let Some(z) = draining.iter().find(|z| self.zones.get(**z).state() != ZoneState::Victim)
        {
            return Err(format!("draining zone {z} is not a victim"));
        }
        if let Some(z) = draining.iter().find(|z| self.zones.get(**z).valid_slots() == 0) {
            return Err(format!("draining zone {z} holds no valid page and did not finish"));
        }
        if open.len() != self.open_zone_count() as usize {
            return Err("a zone is open for two groups".into());
        }
        if self.open_zone_count() > self.options.max_open_zones {
            return Err(format!(
                "{} zones open, limit {}",
                self.open_zone_count(),
                self.options.max_open_zones
            ));
        }
        Ok(ZoneLists { empty, pending, open })
    }

    /// One zone: its counts match its reverse map, its live bytes match its pages, and its
    /// state matches its write pointer and the lists it is on. Returns its current page count.
    fn check_zone(&self, z: ZoneId, lists: &ZoneLists) -> Result<u64, String> {
        debug_assert!(z < self.zones.len(), "zone {z} beyond {} zones", self.zones.len());
        let zone = self.zones.get(z);
        let SlotTally { pages, reserved, dead, page_count } = self.tally_slots(z)?;
        if zone.valid_slots() != pages || zone.pending_slots() != reserved {
            return Err(format!(
                "zone {z}: counts valid {} pending {}, reverse map has {pages} pages {reserved} reserved",
                zone.valid_slots(),
                zone.pending_slots()
            ));
        }
        if zone.invalid_slots() != dead {
            return Err(format!(
                "zone {z}: {} invalid slots counted, {dead} dead",
                zone.invalid_slots()
            ));
        }
        let live: u64 = self.current_pages(z).iter().map(|(_, l)| l.footprint_bytes()).sum();
        if zone.live_bytes() != live {
            return Err(format!(
                "zone {z}: {} live bytes counted, its pages take {live}",
                zone.live_bytes()
            ));
        }
        let full = zone.write_ptr_slots() == self.slots_per_zone();
        let ok = match zone.state() {
            ZoneState::Empty => zone.write_ptr_slots() == 0 && lists.empty.contains(&z),
            ZoneState::Open => !full && lists.open.contains(&z),
            ZoneState::Full => full,
            ZoneState::Victim => full && reserved == 0,
            ZoneState::PendingReset { .. } => {
                pages == 0 && reserved == 0 && lists.pending.contains(&z)
            }
        };
        let listed =
            [lists.empty.contains(&z), lists.open.contains(&z), lists.pending.contains(&z)];
        if !ok || listed.iter().filter(|l| **l).count() > 1 {
            return Err(format!(
                "zone {z}: state {:?} with write pointer {} and lists {listed:?}",
                zone.state(),
                zone.write_ptr_slots()
            ));
        }
        // The pages counted are some of those whose footprints (32 bytes at least) made up the
        // live bytes just matched: more of them would mean the tally counted a page twice.
        debug_assert!(
            page_count * u64::from(super::map::PACK_ALIGN_BYTES) <= zone.live_bytes(),
            "zone {z}: {page_count} pages in {} live bytes",
            zone.live_bytes()
        );
        Ok(page_count)
    }

    /// Walks one zone's reverse map: slots below the write pointer are used, slots past it are
    /// free, and every page a slot names is mapped back to it.
    fn tally_slots(&self, z: ZoneId) -> Result<SlotTally, String> {
        let write_ptr = self.zones.get(z).write_ptr_slots();
        let mut t = SlotTally::default();
        for (slot, entry) in self.reverse.zone(z).enumerate() {
            let slot = slot as u32;
            let written = slot < write_ptr;
            match entry {
                SlotEntry::Free if written => {
                    return Err(format!("zone {z} slot {slot} below the write pointer is free"))
                }
                SlotEntry::Free => {}
                _ if !written => {
                    return Err(format!("zone {z} slot {slot} past the write pointer is {entry:?}"))
                }
                SlotEntry::Reserved => t.reserved += 1,
                SlotEntry::Dead => t.dead += 1,
                SlotEntry::Page(pid) => {
                    let loc = self.map.get(pid);
                    let here = loc.map(|l: Location| (l.zone, l.slot));
                    if here != Some((z, slot)) || loc.is_some_and(|l| l.crosses()) {
                        return Err(format!(
                            "zone {z} slot {slot} names page {pid}, mapped at {here:?}"
                        ));
                    }
                    t.pages += 1;
                    t.page_count += 1;
                }
                SlotEntry::Shared => {
                    t.page_count += self.check_shared(z, slot)?;
                    match self.reverse.shared(z, slot) {
                        Some(s) if s.pending > 0 => t.reserved += 1,
                        _ => t.pages += 1,
                    }
                }
            }
        }
        // Only slots below the write pointer were counted, each once.
        debug_assert!(
            t.pages + t.reserved + t.dead <= write_ptr,
            "zone {z}: {} slots tallied below write pointer {write_ptr}",
            t.pages + t.reserved + t.dead
        );
        Ok(t)
    }

    /// Every mapped page lies inside its zone and the reverse map names it at each slot it
    /// covers.
    fn check_map_against_reverse(&self) -> Result<(), String> {
        let spz = self.slots_per_zone();
        let mut visited = 0u64;
        for (pid, loc) in self.map.iter() {
            visited += 1;
            let agrees = loc.slots().end <= spz
                && loc.slots().all(|slot| match self.reverse.get(loc.zone, slot) {
                    SlotEntry::Page(p) => p == pid,
                    SlotEntry::Shared => {
                        self.reverse.shared(loc.zone, slot).is_some_and(|s| s.pages.contains(&pid))
                    }
                    _ => false,
                });
            if !agrees {
                return Err(format!("page {pid} mapped at {loc:?}, reverse map disagrees"));
            }
        }
        // `check_invariants` compared the zones with the map's count: the walk must have seen
        // the same pages, or a mapped page went unchecked.
        debug_assert_eq!(visited, self.map.mapped_count(), "map walk missed mapped pages");
        Ok(())
    }

    /// A packed slot: every page it names is mapped into it (starting there, or crossing in
    /// from the slot before), their byte ranges do not overlap, and a settled slot holds at
    /// least one page. Returns its current pages that start in it (each page counts once).
    fn check_shared(&self, z: ZoneId, slot: u32) -> Result<u64, String> {
        let Some(shared) = self.reverse.shared(z, slot) else {
            return Err(format!("zone {z} slot {slot} is shared without a page list"));
        };
        if shared.pending == 0 && shared.pages.is_empty() {
            return Err(format!("zone {z} slot {slot} is shared, settled and empty"));
        }
        let mut ranges = Vec::with_capacity(shared.pages.len());
        let mut starting = 0u64;
        for pid in &shared.pages {
            let loc = self.map.get(*pid).filter(|l| l.zone == z);
            match loc.and_then(|l| l.range_in_slot(slot).map(|r| (l, r))) {
                Some((l, range)) => {
                    starting += u64::from(l.slot == slot);
                    ranges.push((range.start, range.end));
                }
                None => {
                    let other = self.map.get(*pid);
                    return Err(format!(
                        "zone {z} slot {slot} holds page {pid}, mapped at {other:?}"
                    ));
                }
            }
        }
        ranges.sort_unstable();
        if ranges.windows(2).any(|w| w[0].1 > w[1].0) {
            return Err(format!("zone {z} slot {slot}: packed pages overlap: {ranges:?}"));
        }
        // Disjoint ranges inside one slot: together they fit in it.
        let bytes: u64 = ranges.iter().map(|(start, end)| end - start).sum();
        debug_assert!(bytes <= super::map::SLOT_BYTES, "zone {z} slot {slot}: {bytes} bytes");
        Ok(starting)
    }
}
