//! The zone table: per zone its state, write pointer, valid / pending slot counts, wear, age and
//! placement. Zones are the GC unit; each is append-only between resets.
use crate::device::Placement;

/// The unit of placement: one 4 KiB device block. Today one page per slot; page packing after
/// compression (000 sec. 3.2) may put several pages in one slot (see docs/internals/space.md).
pub const SLOT_BYTES: u64 = 4096;

/// Index of a zone in the data area: zone `z` starts at `data_offset_bytes + z * zone_bytes`.
pub type ZoneId = u32;
/// Log sequence number (the WAL's). Zone reuse waits for the log to be durable up to an LSN.
pub type Lsn = u64;

/// Life cycle: Empty -> Open -> Full -> Victim -> PendingReset -> Empty (erase count + 1).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ZoneState {
    /// Reset (or never written): in the free queue, write pointer 0.
    Empty,
    /// Receiving appends for one write group.
    Open,
    /// Write pointer at the end; only invalidations change it now.
    Full,
    /// Chosen by GC; its valid pages are being moved out. Never chosen twice, never written.
    Victim,
    /// Holds no valid page, but may be reused only once the log is durable up to `lsn_needed`:
    /// otherwise a crash could recover a map that still points into it after it was rewritten.
    PendingReset { lsn_needed: Lsn },
}

/// Metadata of one zone (64 bytes; see docs/internals/space.md "Memory").
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Zone {
    pub(super) state: ZoneState,
    pub(super) write_ptr_slots: u32,
    /// Slots holding a current page version.
    pub(super) valid_slots: u32,
    /// Bytes the zone's current page versions take in their slots (each page's packing
    /// footprint, 4 KiB for an uncompressed one): what GC copies when it takes the zone. A
    /// packed slot stays valid while any of its pages lives, so valid slots overstate it.
    pub(super) live_bytes: u64,
    /// Slots reserved by `reserve_batch` and not yet committed or abandoned.
    pub(super) pending_slots: u32,
    pub(super) erase_count: u32,
    /// Space clock (slots reserved so far, all zones) at the zone's last append.
    pub(super) last_write_clock: u64,
    /// Largest LSN of a record that invalidated one of this zone's slots since its last reset.
    pub(super) invalidation_lsn_max: Lsn,
    pub(super) placement: Placement,
}

impl Zone {
    pub fn state(&self) -> ZoneState {
        // GC finishes a victim only once it holds nothing; nothing lands in it until its reset.
        debug_assert!(
            !matches!(self.state, ZoneState::PendingReset { .. })
                || (self.valid_slots == 0 && self.pending_slots == 0 && self.live_bytes == 0),
            "zone awaiting reset still holds pages: {self:?}"
        );
        self.state
    }
    pub fn write_ptr_slots(&self) -> u32 {
        // Reset (or never written): appends start at slot 0.
        debug_assert!(
            self.state != ZoneState::Empty || self.write_ptr_slots == 0,
            "empty zone with its write pointer at {}",
            self.write_ptr_slots
        );
        self.write_ptr_slots
    }
    pub fn valid_slots(&self) -> u32 {
        // Valid slots were written: below the write pointer, beside the pending ones. Recovery
        // counts pages into a zone while it is still Empty, before it marks the zone Full.
        debug_assert!(
            self.state == ZoneState::Empty
                || self.valid_slots + self.pending_slots <= self.write_ptr_slots,
            "more valid and pending slots than written: {self:?}"
        );
        self.valid_slots
    }
    pub fn pending_slots(&self) -> u32 {
        // Only `append` makes slots pending, and it moves the write pointer past them.
        debug_assert!(
            self.pending_slots <= self.write_ptr_slots,
            "{} pending slots past the write pointer {}",
            self.pending_slots,
            self.write_ptr_slots
        );
        self.pending_slots
    }
    pub fn live_bytes(&self) -> u64 {
        // Live pages sit in valid slots, or in shared ones still waiting for their last page.
        debug_assert!(
            self.live_bytes <= u64::from(self.valid_slots + self.pending_slots) * SLOT_BYTES,
            "live bytes beyond the zone's valid and pending slots: {self:?}"
        );
        self.live_bytes
    }
    /// Live bytes in slots, rounded up: what greedy compares (the copies GC would pack).
    pub fn live_slots(&self) -> u32 {
        let slots = self.live_bytes.div_ceil(SLOT_BYTES) as u32;
        // Live bytes sit in valid slots, or in shared ones still waiting for their last page.
        debug_assert!(slots <= self.valid_slots + self.pending_slots, "{self:?}");
        slots
    }
    /// What GC taking the zone frees, in slots: the written ones less its live bytes' worth
    /// (at least its invalid slots, as live bytes never exceed the valid slots).
    pub fn reclaimable_slots(&self) -> u32 {
        // Victim policies rank zones by this: it must not wrap for a zone whose accounting
        // drifted (pending and live slots are written slots).
        debug_assert!(self.pending_slots + self.live_slots() <= self.write_ptr_slots, "{self:?}");
        self.write_ptr_slots - self.pending_slots - self.live_slots()
    }
    /// Written slots that hold no current page: overwritten, freed or abandoned.
    pub fn invalid_slots(&self) -> u32 {
        // Valid and pending slots are written ones: the write pointer covers them.
        debug_assert!(self.valid_slots + self.pending_slots <= self.write_ptr_slots, "{self:?}");
        self.write_ptr_slots - self.valid_slots - self.pending_slots
    }
    pub fn erase_count(&self) -> u32 {
        // A reset clears the zone's LSN with its contents; wear is all that survives it.
        debug_assert!(
            self.state != ZoneState::Empty || self.invalidation_lsn_max == 0,
            "empty zone remembers an invalidation at lsn {}",
            self.invalidation_lsn_max
        );
        self.erase_count
    }
    pub fn last_write_clock(&self) -> u64 {
        // The clock counts every slot reserved, this zone's appends included, and is stamped
        // after it advances. (Recovery loses clocks, but leaves no zone Open.)
        debug_assert!(
            self.state != ZoneState::Open
                || self.last_write_clock >= u64::from(self.write_ptr_slots),
            "open zone written at clock {} holds {} slots",
            self.last_write_clock,
            self.write_ptr_slots
        );
        self.last_write_clock
    }
    pub fn invalidation_lsn_max(&self) -> Lsn {
        // `finish_victim` waits for the latest invalidation; none can follow in PendingReset.
        if let ZoneState::PendingReset { lsn_needed } = self.state {
            debug_assert!(
                lsn_needed >= self.invalidation_lsn_max,
                "reset waits for lsn {lsn_needed}, before invalidation {}",
                self.invalidation_lsn_max
            );
        }
        self.invalidation_lsn_max
    }
    /// The placement hint every write to this zone carries, chosen by the placement policy
    /// when the zone opened.
    pub fn placement(&self) -> Placement {
        // The hint is chosen at open; a zone that was never opened carries none.
        debug_assert!(
            self.state != ZoneState::Empty
                || self.erase_count > 0
                || self.placement == Placement::None,
            "never-opened zone with hint {:?}",
            self.placement
        );
        self.placement
    }
}

/// All zones of the data area.
#[derive(Debug, Clone)]
pub struct ZoneTable {
    zones: Vec<Zone>,
    slots_per_zone: u32,
}

impl ZoneTable {
    /// Every zone Empty, no placement hint (a zone gets its hint when it opens).
    pub fn new(zone_count: u32, slots_per_zone: u32) -> ZoneTable {
        assert!(zone_count >= 1 && slots_per_zone >= 1);
        let mut table = ZoneTable { zones: Vec::new(), slots_per_zone };
        table.grow(zone_count);
        table
    }

    /// Adds Empty zones up to `zone_count` (the data area grew).
    pub fn grow(&mut self, zone_count: u32) {
        assert!(zone_count as usize >= self.zones.len(), "zones never shrink");
        let added = zone_count as usize - self.zones.len();
        self.zones.extend((0..added).map(|_| Zone {
            state: ZoneState::Empty,
            write_ptr_slots: 0,
            valid_slots: 0,
            live_bytes: 0,
            pending_slots: 0,
            erase_count: 0,
            last_write_clock: 0,
            invalidation_lsn_max: 0,
            placement: Placement::None,
        }));
        assert_eq!(self.zones.len(), zone_count as usize);
    }

    pub fn len(&self) -> u32 {
        // The options bound the zone count far below u32 (map entries name zones in 21 bits,
        // space/options.rs checks it): the cast keeps every zone.
        debug_assert!(u32::try_from(self.zones.len()).is_ok(), "{} zones", self.zones.len());
        self.zones.len() as u32
    }
    pub fn is_empty(&self) -> bool {
        // `new` makes at least one zone and `grow` never shrinks: callers may index zone 0.
        debug_assert!(!self.zones.is_empty(), "a zone table without zones");
        self.zones.is_empty()
    }
    pub fn slots_per_zone(&self) -> u32 {
        // Validated options give at least one slot (their upper bound, what a location can
        // address, is the map's to check): callers divide by this and index slot 0.
        debug_assert!(self.slots_per_zone > 0, "a zone table of zones without slots");
        self.slots_per_zone
    }
    pub fn get(&self, zone: ZoneId) -> &Zone {
        let z = &self.zones[zone as usize];
        // `append` stops at the zone's end: a pointer past it would write into the next zone.
        debug_assert!(
            z.write_ptr_slots <= self.slots_per_zone,
            "zone {zone}: write pointer {} past its {} slots",
            z.write_ptr_slots,
            self.slots_per_zone
        );
        z
    }
    pub fn iter(&self) -> impl Iterator<Item = (ZoneId, &Zone)> + '_ {
        // Ids are the indices cast down: every index must fit a zone id.
        debug_assert!(ZoneId::try_from(self.zones.len()).is_ok(), "{} zones", self.zones.len());
        self.zones.iter().enumerate().map(|(z, zone)| (z as ZoneId, zone))
    }
    pub fn count(&self, pred: impl Fn(&Zone) -> bool) -> u32 {
        let n = self.zones.iter().filter(|z| pred(z)).count();
        // The cast keeps the count: the table's zones fit a u32 (`len`).
        debug_assert!(u32::try_from(n).is_ok(), "{n} zones counted");
        n as u32
    }

    pub(super) fn get_mut(&mut self, zone: ZoneId) -> &mut Zone {
        debug_assert!(
            (zone as usize) < self.zones.len(),
            "zone {zone} beyond the table's {} zones",
            self.zones.len()
        );
        &mut self.zones[zone as usize]
    }

    /// Empty -> Open; every write to the zone carries `hint` until it is reset.
    pub(super) fn open(&mut self, zone: ZoneId, hint: Placement) {
        let z = self.get_mut(zone);
        assert_eq!(z.state, ZoneState::Empty, "zone {zone} opened while not empty");
        assert_eq!(z.write_ptr_slots, 0);
        z.state = ZoneState::Open;
        z.placement = hint;
    }

    /// Appends `slots` pending slots at the write pointer; returns the first. A zone whose write
    /// pointer reaches the end becomes Full.
    pub(super) fn append(&mut self, zone: ZoneId, slots: u32, clock: u64) -> u32 {
        let slots_per_zone = self.slots_per_zone;
        let z = self.get_mut(zone);
        assert_eq!(z.state, ZoneState::Open, "zone {zone} appended while not open");
        assert!(slots >= 1 && slots <= slots_per_zone - z.write_ptr_slots);
        let first = z.write_ptr_slots;
        z.write_ptr_slots += slots;
        z.pending_slots += slots;
        z.last_write_clock = clock;
        if z.write_ptr_slots == slots_per_zone {
            z.state = ZoneState::Full;
        }
        first
    }

    /// The last `slots` pending slots at the write pointer were never written: the pointer
    /// moves back over them, and a zone they had filled is open again.
    pub(super) fn give_back(&mut self, zone: ZoneId, slots: u32) {
        let z = self.get_mut(zone);
        assert!(matches!(z.state, ZoneState::Open | ZoneState::Full), "zone {zone}: {:?}", z.state);
        assert!(slots <= z.pending_slots && slots < z.write_ptr_slots, "zone {zone}: {slots}");
        z.write_ptr_slots -= slots;
        z.pending_slots -= slots;
        z.state = ZoneState::Open;
    }

    /// A pending slot now holds a current page.
    pub(super) fn commit_slot(&mut self, zone: ZoneId) {
        let z = self.get_mut(zone);
        assert!(z.pending_slots >= 1, "zone {zone}: commit without a pending slot");
        z.pending_slots -= 1;
        z.valid_slots += 1;
    }

    /// A pending slot will never be committed: it becomes invalid.
    pub(super) fn abandon_slot(&mut self, zone: ZoneId) {
        let z = self.get_mut(zone);
        assert!(z.pending_slots >= 1, "zone {zone}: abandon without a pending slot");
        z.pending_slots -= 1;
    }

    /// A valid slot's page moved or was freed by the record at `lsn`.
    pub(super) fn invalidate_slot(&mut self, zone: ZoneId, lsn: Lsn) {
        let z = self.get_mut(zone);
        assert!(z.valid_slots >= 1, "zone {zone}: invalidation without a valid slot");
        assert!(
            !matches!(z.state, ZoneState::Empty | ZoneState::PendingReset { .. }),
            "zone {zone}: invalidation in state {:?}",
            z.state
        );
        z.valid_slots -= 1;
        z.invalidation_lsn_max = z.invalidation_lsn_max.max(lsn);
    }

    /// A page version of `bytes` (its packing footprint) became current in the zone.
    pub(super) fn add_live(&mut self, zone: ZoneId, bytes: u64) {
        let spz = u64::from(self.slots_per_zone);
        let z = self.get_mut(zone);
        z.live_bytes += bytes;
        assert!(z.live_bytes <= spz * SLOT_BYTES, "zone {zone}: live bytes overflow");
    }

    /// A page version of `bytes` in the zone is no longer current.
    pub(super) fn remove_live(&mut self, zone: ZoneId, bytes: u64) {
        let z = self.get_mut(zone);
        assert!(
            z.live_bytes >= bytes,
            "zone {zone}: {bytes} live bytes removed of {}",
            z.live_bytes
        );
        z.live_bytes -= bytes;
    }

    /// One of the pages of a packed slot that stays live was overwritten or freed at `lsn`:
    /// the zone's slot counts do not change, but its reuse must still wait for that record.
    pub(super) fn note_invalidation(&mut self, zone: ZoneId, lsn: Lsn) {
        let z = self.get_mut(zone);
        assert!(
            !matches!(z.state, ZoneState::Empty | ZoneState::PendingReset { .. }),
            "zone {zone}: invalidation in state {:?}",
            z.state
        );
        z.invalidation_lsn_max = z.invalidation_lsn_max.max(lsn);
    }

    /// PendingReset -> Empty: the zone's old contents are forgotten; wear + 1.
    pub(super) fn reset(&mut self, zone: ZoneId) {
        let z = self.get_mut(zone);
        assert!(
            matches!(z.state, ZoneState::PendingReset { .. }),
            "zone {zone}: reset in {:?}",
            z.state
        );
        assert_eq!(z.valid_slots, 0);
        assert_eq!(z.pending_slots, 0);
        assert_eq!(z.live_bytes, 0);
        z.state = ZoneState::Empty;
        z.write_ptr_slots = 0;
        z.erase_count += 1;
        z.invalidation_lsn_max = 0;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn zone_life_cycle_counts() {
        let mut t = ZoneTable::new(3, 4);
        assert_eq!(t.get(1).placement(), Placement::None);
        t.open(1, Placement::Fdp(1));
        assert_eq!(t.get(1).placement(), Placement::Fdp(1));
        assert_eq!(t.append(1, 3, 7), 0);
        assert_eq!(t.get(1).state(), ZoneState::Open);
        t.commit_slot(1);
        t.commit_slot(1);
        t.abandon_slot(1);
        assert_eq!((t.get(1).valid_slots(), t.get(1).invalid_slots()), (2, 1));
        assert_eq!(t.append(1, 1, 8), 3);
        assert_eq!(t.get(1).state(), ZoneState::Full);
        t.commit_slot(1);
        t.invalidate_slot(1, 42);
        assert_eq!(t.get(1).invalidation_lsn_max(), 42);
        t.invalidate_slot(1, 40);
        assert_eq!(t.get(1).invalidation_lsn_max(), 42, "the max is kept");
        t.invalidate_slot(1, 43);
        assert_eq!((t.get(1).valid_slots(), t.get(1).invalid_slots()), (0, 4));
        t.get_mut(1).state = ZoneState::PendingReset { lsn_needed: 43 };
        t.reset(1);
        assert_eq!(t.get(1).state(), ZoneState::Empty);
        assert_eq!((t.get(1).write_ptr_slots(), t.get(1).erase_count()), (0, 1));
    }

    #[test]
    #[should_panic(expected = "appended while not open")]
    fn appending_to_an_empty_zone_is_a_bug() {
        let mut t = ZoneTable::new(1, 4);
        t.append(0, 1, 0);
    }
}

#[cfg(test)]
mod size_tests {
    /// docs/internals/space.md "Memory" quotes this size.
    #[test]
    fn zone_metadata_size() {
        assert_eq!(std::mem::size_of::<super::Zone>(), 64);
    }
}
