//! A full consistency check of the space metadata, O(page ids + slots): for tests, debug
//! builds of the integrator, and after recovery.
use std::collections::HashSet;

use super::map::{Location, SlotEntry};
use super::zone::{ZoneId, ZoneState};
use super::Space;

impl Space {
    /// Checks that map, reverse map, zone counts, states and queues agree. The error says what
    /// disagrees first.
    pub fn check_invariants(&self) -> Result<(), String> {
        let spz = self.slots_per_zone();
        let empty: HashSet<ZoneId> = self.empty.iter().copied().collect();
        let pending: HashSet<ZoneId> = self.pending_reset.iter().copied().collect();
        let open: HashSet<ZoneId> = self.open_by_group.iter().flatten().copied().collect();
        if empty.len() != self.empty.len() {
            return Err("a zone is twice in the empty queue".into());
        }
        if pending.len() != self.pending_reset.len() {
            return Err("a zone is twice in the pending-reset list".into());
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
        let mut valid_total = 0u64;
        for (z, zone) in self.zones.iter() {
            let (mut pages, mut reserved, mut dead) = (0u32, 0u32, 0u32);
            for (slot, entry) in self.reverse.zone(z).enumerate() {
                let slot = slot as u32;
                let written = slot < zone.write_ptr_slots();
                match entry {
                    SlotEntry::Free if written => {
                        return Err(format!("zone {z} slot {slot} below the write pointer is free"))
                    }
                    SlotEntry::Free => {}
                    _ if !written => {
                        return Err(format!(
                            "zone {z} slot {slot} past the write pointer is {entry:?}"
                        ))
                    }
                    SlotEntry::Reserved => reserved += 1,
                    SlotEntry::Dead => dead += 1,
                    SlotEntry::Page(pid) => {
                        let here = self.map.get(pid).map(|l: Location| (l.zone, l.slot));
                        if here != Some((z, slot)) {
                            return Err(format!(
                                "zone {z} slot {slot} names page {pid}, mapped at {here:?}"
                            ));
                        }
                        pages += 1;
                    }
                }
            }
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
            valid_total += u64::from(pages);
            let full = zone.write_ptr_slots() == spz;
            let ok = match zone.state() {
                ZoneState::Empty => zone.write_ptr_slots() == 0 && empty.contains(&z),
                ZoneState::Open => !full && open.contains(&z),
                ZoneState::Full => full,
                ZoneState::Victim => full && reserved == 0,
                ZoneState::PendingReset { .. } => {
                    pages == 0 && reserved == 0 && pending.contains(&z)
                }
            };
            let listed = [empty.contains(&z), open.contains(&z), pending.contains(&z)];
            if !ok || listed.iter().filter(|l| **l).count() > 1 {
                return Err(format!(
                    "zone {z}: state {:?} with write pointer {} and lists {listed:?}",
                    zone.state(),
                    zone.write_ptr_slots()
                ));
            }
        }
        if self.zones.count(|z| z.state() == ZoneState::Empty) as usize != empty.len()
            || self.zones.count(|z| matches!(z.state(), ZoneState::PendingReset { .. })) as usize
                != pending.len()
            || self.zones.count(|z| z.state() == ZoneState::Open) as usize != open.len()
        {
            return Err("zone states and zone lists disagree".into());
        }
        if valid_total != self.map.mapped_count() {
            return Err(format!(
                "{valid_total} valid slots, {} mapped pages",
                self.map.mapped_count()
            ));
        }
        for (pid, loc) in self.map.iter() {
            if self.reverse.get(loc.zone, loc.slot) != SlotEntry::Page(pid) {
                return Err(format!("page {pid} mapped at {loc:?}, reverse map disagrees"));
            }
        }
        Ok(())
    }
}
