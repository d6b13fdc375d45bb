//! Recovery: the zone table and reverse map are derived state, rebuilt from the final page map
//! (snapshot + replayed log records), never persisted themselves.
use super::map::{Location, PageId, PageMap, SharedSlot, SlotEntry};
use super::zone::{ZoneId, ZoneState};
use super::{Space, SpaceError, SpaceOptions};

impl Space {
    /// Rebuilds a space from the recovered map. Returns it with the zones the caller must reset
    /// on the device before use (`io::reset_zones`).
    ///
    /// What each zone becomes:
    /// - holds at least one mapped page: **Full**, write pointer at the end, every slot without
    ///   a mapped page dead. A zone that was open at the crash may have data past its last
    ///   logged page (written, maybe synced, never committed); treating the rest of the zone as
    ///   written-and-invalid means nothing is ever appended twice at a slot (which ZNS would
    ///   refuse anyway), and GC reclaims the tail like any invalid slot.
    /// - holds no mapped page: **Empty**, listed for reset. Every record that moved its pages out
    ///   is in the recovered log, hence durable, so it may be reused at once; the reset clears
    ///   whatever it held (partial writes, old versions; ZNS needs it before any append).
    ///
    /// - a slot several mapped pages name (packed), or one a page crosses into or out of
    ///   (packing off): **Shared**, each page listed; pages whose byte ranges overlap make the
    ///   map corrupt.
    ///
    /// Lost on purpose (statistics only): erase counts, write clocks, GC history.
    pub fn rebuild_from_map(
        options: SpaceOptions,
        map: PageMap,
    ) -> Result<(Space, Vec<ZoneId>), SpaceError> {
        let mut space = Space::new(options)?;
        let zone_count = space.zone_count();
        let slots_per_zone = space.slots_per_zone();
        for (pid, loc) in map.iter() {
            if loc.zone >= zone_count || loc.slots().end > slots_per_zone {
                return Err(SpaceError::CorruptMap {
                    pid,
                    reason: format!(
                        "{loc:?} is outside {zone_count} zones x {slots_per_zone} slots"
                    ),
                });
            }
            for slot in loc.slots() {
                space.place_recovered(&map, pid, loc, slot)?;
            }
            space.zones.add_live(loc.zone, loc.footprint_bytes());
        }
        space.empty.clear();
        let mut to_reset = Vec::new();
        for zone in 0..zone_count {
            if space.zones.get(zone).valid_slots() == 0 {
                space.empty.push_back(zone);
                to_reset.push(zone);
                continue;
            }
            for slot in 0..slots_per_zone {
                if space.reverse.get(zone, slot) == SlotEntry::Free {
                    space.reverse.set(zone, slot, SlotEntry::Dead);
                }
            }
            let z = space.zones.get_mut(zone);
            z.state = ZoneState::Full;
            z.write_ptr_slots = slots_per_zone;
        }
        space.map = map;
        // Recovery hands the store a space as consistent as one kept incrementally.
        debug_assert_eq!(space.check_invariants(), Ok(()), "a rebuilt space");
        Ok((space, to_reset))
    }
}

impl Space {
    /// Enters `pid` (mapped at `loc`) into `slot`, one of the slots it touches. A slot whole
    /// pages share, or one a page crosses into or out of, becomes Shared; its valid count
    /// rises once, for the first page.
    fn place_recovered(
        &mut self,
        map: &PageMap,
        pid: PageId,
        loc: Location,
        slot: u32,
    ) -> Result<(), SpaceError> {
        assert!(loc.slots().contains(&slot));
        match self.reverse.get(loc.zone, slot) {
            SlotEntry::Free if loc.crosses() => {
                let shared = SharedSlot { pages: smallvec::smallvec![pid], pending: 0 };
                self.reverse.set_shared(loc.zone, slot, shared);
                self.zones.get_mut(loc.zone).valid_slots += 1;
            }
            SlotEntry::Free => {
                self.reverse.set(loc.zone, slot, SlotEntry::Page(pid));
                self.zones.get_mut(loc.zone).valid_slots += 1;
            }
            // A packed slot: its pages arrive one by one, none may overlap another.
            SlotEntry::Page(first) => {
                overlap_check(map, pid, loc, slot, &[first])?;
                let shared = SharedSlot { pages: smallvec::smallvec![first, pid], pending: 0 };
                self.reverse.set_shared(loc.zone, slot, shared);
            }
            SlotEntry::Shared => {
                let pages = self.reverse.shared_mut(loc.zone, slot);
                overlap_check(map, pid, loc, slot, &pages.pages)?;
                pages.pages.push(pid);
            }
            other => {
                return Err(SpaceError::CorruptMap {
                    pid,
                    reason: format!("{loc:?} already holds {other:?}"),
                })
            }
        }
        Ok(())
    }
}

/// `pid`'s bytes in `slot` must not overlap those of any of `others` (pages already placed in
/// the same slot).
fn overlap_check(
    map: &PageMap,
    pid: PageId,
    loc: Location,
    slot: u32,
    others: &[PageId],
) -> Result<(), SpaceError> {
    // Both come from `place_recovered`, not from the map's bytes: the slot is one `pid`
    // touches, and a slot already holding a page lists it.
    debug_assert!(
        loc.slots().contains(&slot) && !others.is_empty(),
        "overlap check of page {pid} at {loc:?} in slot {slot} against {others:?}"
    );
    let Some(mine) = loc.range_in_slot(slot) else { return Ok(()) };
    for other in others {
        let Some(o) = map.get(*other) else { continue };
        let Some(theirs) = o.range_in_slot(slot) else { continue };
        if mine.start < theirs.end && theirs.start < mine.end {
            return Err(SpaceError::CorruptMap {
                pid,
                reason: format!("{loc:?} overlaps page {other} at {o:?}"),
            });
        }
    }
    Ok(())
}
