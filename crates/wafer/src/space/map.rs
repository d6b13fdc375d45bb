//! The page map (page id -> location on the device) and its reverse (slot -> page id).
//!
//! Both are flat vectors so a lookup is one index: the forward map is indexed by page id (8 bytes
//! per page id, grown on demand), the reverse map by global slot number `zone * slots_per_zone +
//! slot` (8 bytes per 4 KiB slot, allocated once for the whole data area: 0.2% of the device).
use super::zone::ZoneId;

/// Page identifier, as the tree and the buffer pool use it.
pub type PageId = u64;

// Defined with the zones (a zone is a run of slots), so the zone table need not name the map.
pub use super::zone::SLOT_BYTES;

/// Page ids must stay below this: it keeps the reverse map's sentinels apart from page ids and
/// bounds the forward map (a map of 2^48 ids would be 2 PiB anyway).
pub const PAGE_ID_LIMIT: PageId = 1 << 48;

// Packed location, one u64 (little-endian bit numbering, bit 0 = least significant):
//
//   bits  0..13  stored_bytes      1..=4096, or up to 8192 - offset for a chunk a CCZNS device
//                                  placed (its feedback size; 13 bits hold 0..8191)
//   bits 13..20  sub-slot offset   where a packed page starts in its slot, in 32-byte units
//   bits 20..43  slot in zone      23 bits: zones up to 2^23 slots = 32 GiB
//   bits 43..64  zone              21 bits: up to 2^21 - 1 zones
//
// `UNMAPPED` = u64::MAX has offset 4064 and size 8191, which end past two slots, so it can
// never be a valid location.
const SIZE_BITS: u32 = 13;
const SUB_BITS: u32 = 7;
const SLOT_BITS: u32 = 23;
const ZONE_BITS: u32 = 21;
const SUB_SHIFT: u32 = SIZE_BITS;
const SLOT_SHIFT: u32 = SUB_SHIFT + SUB_BITS;
const ZONE_SHIFT: u32 = SLOT_SHIFT + SLOT_BITS;
const _: () = assert!(ZONE_SHIFT + ZONE_BITS == 64);

/// Forward-map value of a page id that has no location.
pub const UNMAPPED: u64 = u64::MAX;
/// Largest number of slots in one zone the packed location can address.
pub const SLOTS_PER_ZONE_LIMIT: u32 = 1 << SLOT_BITS;
/// Largest zone count the packed location can address.
pub const ZONE_COUNT_LIMIT: u32 = (1 << ZONE_BITS) - 1;

/// Where a page version lives: a slot of a zone, where in the slot it starts, and how many
/// bytes it takes. A packed page never crosses its slot's end (000 sec. 3.2): it is read with
/// one aligned 4 KiB read. With packing off compressed pages are concatenated, and blob pages
/// always are (`oop/append.rs`): such a page may continue into the next slot of the same zone
/// (never further: a page is at most 4 KiB) and is read with one two-slot read.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Location {
    pub zone: ZoneId,
    pub slot: u32,
    /// Start within the slot: a multiple of [`PACK_ALIGN_BYTES`], 0 for a whole slot.
    pub offset_bytes: u16,
    /// Stored size: 4096 for an uncompressed page, less for a compressed one. For a page the
    /// device compressed ([`Location::chunk`]) the chunk's feedback size, which may exceed 4096.
    pub stored_bytes: u16,
}

/// Packed pages start at multiples of this within their slot (the sub-slot field's unit).
pub const PACK_ALIGN_BYTES: u16 = 32;

impl Location {
    pub fn new(zone: ZoneId, slot: u32, stored_bytes: u16) -> Location {
        assert!(zone < ZONE_COUNT_LIMIT, "zone {zone} beyond the packable limit");
        assert!(slot < SLOTS_PER_ZONE_LIMIT, "slot {slot} beyond the packable limit");
        assert!(
            stored_bytes >= 1 && u64::from(stored_bytes) <= SLOT_BYTES,
            "stored size {stored_bytes} not in 1..=4096"
        );
        Location { zone, slot, offset_bytes: 0, stored_bytes }
    }

    /// A page packed at `offset_bytes` of its slot (a multiple of 32, ending within the slot).
    pub fn packed(zone: ZoneId, slot: u32, offset_bytes: u16, stored_bytes: u16) -> Location {
        let loc = Location::concatenated(zone, slot, offset_bytes, stored_bytes);
        assert!(!loc.crosses(), "page of {stored_bytes} bytes at {offset_bytes} crosses its slot");
        loc
    }

    /// A page concatenated at `offset_bytes` of its slot (a multiple of 32, below 4096): it may
    /// run on into the next slot.
    pub fn concatenated(zone: ZoneId, slot: u32, offset_bytes: u16, stored_bytes: u16) -> Location {
        let loc = Location::new(zone, slot, stored_bytes);
        assert!(offset_bytes.is_multiple_of(PACK_ALIGN_BYTES), "offset {offset_bytes}");
        assert!(u64::from(offset_bytes) < SLOT_BYTES, "offset {offset_bytes} past its slot");
        let loc = Location { offset_bytes, ..loc };
        assert!(loc.crosses() || loc.end_bytes() <= SLOT_BYTES);
        loc
    }

    /// A page a CCZNS device compressed and placed (`compression = device`): it starts at
    /// `offset_bytes` of its slot (a multiple of 32: the device's placement unit) and takes
    /// `feedback_bytes`, the size its compressed write reported and a decompressed read must
    /// name: the stored size rounded up to the unit, and for a write's last chunk the padding
    /// to the next 4 KiB boundary, so up to 8192 - offset. It may run on into the next slot,
    /// never further.
    pub fn chunk(zone: ZoneId, slot: u32, offset_bytes: u16, feedback_bytes: u16) -> Location {
        let loc = Location::checked_chunk(zone, slot, offset_bytes, feedback_bytes);
        assert!(loc.is_some(), "chunk of {feedback_bytes} bytes at {zone}/{slot}+{offset_bytes}");
        loc.unwrap_or(Location { zone, slot, offset_bytes, stored_bytes: feedback_bytes })
    }

    /// [`Location::chunk`], or None where it would not be one (what a device reported is
    /// checked, never trusted).
    pub fn checked_chunk(
        zone: ZoneId,
        slot: u32,
        offset_bytes: u16,
        feedback_bytes: u16,
    ) -> Option<Location> {
        let (offset, size) = (u64::from(offset_bytes), u64::from(feedback_bytes));
        let valid = zone < ZONE_COUNT_LIMIT
            && slot < SLOTS_PER_ZONE_LIMIT
            && offset_bytes.is_multiple_of(PACK_ALIGN_BYTES)
            && offset < SLOT_BYTES
            && size >= 1
            && chunk_size_fits(offset, size)
            // As `unpack`: the map cannot hold a chunk crossing out of the last packable slot.
            && !(offset + size > SLOT_BYTES && slot == SLOTS_PER_ZONE_LIMIT - 1);
        let loc =
            valid.then_some(Location { zone, slot, offset_bytes, stored_bytes: feedback_bytes });
        // What passes is a location the map stores and reads back unchanged.
        debug_assert!(loc.is_none_or(|l| Location::unpack(l.pack()) == Some(l)), "{loc:?}");
        loc
    }

    /// Byte just past the page, counted from its slot's start (above 4096 when it crosses).
    /// Bytes the page takes in its zone: its size rounded up to the packing unit (a whole
    /// slot for an uncompressed page). Zone live-byte counts sum these.
    pub fn footprint_bytes(&self) -> u64 {
        // Every constructor (and `unpack`) refuses a size of 0: a page takes some room.
        debug_assert!(self.stored_bytes > 0, "a location of no bytes");
        u64::from(self.stored_bytes.div_ceil(PACK_ALIGN_BYTES) * PACK_ALIGN_BYTES)
    }

    pub fn end_bytes(&self) -> u64 {
        let end = u64::from(self.offset_bytes) + u64::from(self.stored_bytes);
        // `chunk_size_fits`: a page ends in its own slot or the next, never past it.
        debug_assert!(end <= 2 * SLOT_BYTES, "a page ending at {end}");
        end
    }

    /// The page runs on into the next slot (concatenated pages only).
    pub fn crosses(&self) -> bool {
        let crosses = self.end_bytes() > SLOT_BYTES;
        // Only a page starting inside its slot runs on (a stored page is at most a slot).
        debug_assert!(!crosses || self.offset_bytes > 0, "a page from offset 0 crosses");
        crosses
    }

    /// The slots the page touches: its own, and the next one when it crosses.
    pub fn slots(&self) -> std::ops::Range<u32> {
        let crosses = self.crosses();
        // `unpack` and the constructors refuse a crossing page in the last packable slot: the
        // slot it runs on into is addressable.
        debug_assert!(
            self.slot + u32::from(crosses) < SLOTS_PER_ZONE_LIMIT,
            "{self:?} runs past the last addressable slot"
        );
        self.slot..self.slot + 1 + u32::from(crosses)
    }

    /// The page's bytes inside `slot` (offsets within that slot), or None if it does not
    /// touch it.
    pub fn range_in_slot(&self, slot: u32) -> Option<std::ops::Range<u64>> {
        let range = if slot == self.slot {
            Some(u64::from(self.offset_bytes)..self.end_bytes().min(SLOT_BYTES))
        } else if slot == self.slot + 1 && self.crosses() {
            Some(0..self.end_bytes() - SLOT_BYTES)
        } else {
            None
        };
        // Readers copy these bytes out of a slot's buffer: some, and inside it.
        debug_assert!(range.as_ref().is_none_or(|r| r.start < r.end && r.end <= SLOT_BYTES));
        range
    }

    pub fn pack(self) -> u64 {
        let raw = (u64::from(self.zone) << ZONE_SHIFT)
            | (u64::from(self.slot) << SLOT_SHIFT)
            | (u64::from(self.offset_bytes / PACK_ALIGN_BYTES) << SUB_SHIFT)
            | u64::from(self.stored_bytes);
        // The map stores only this: a location it cannot read back would lose its page.
        debug_assert_eq!(Location::unpack(raw), Some(self), "{self:?} does not round-trip");
        raw
    }

    /// The location a packed value names, or None for `UNMAPPED` and any malformed value
    /// (size 0, a page ending past the slot after its own, zone at the limit, a crossing page
    /// in the zone's last possible slot). Never panics: snapshot decoding feeds it untrusted bytes. (Whether the next slot
    /// exists in a zone of the space's size is the space's check: [`Location::slots`].)
    pub fn unpack(raw: u64) -> Option<Location> {
        let size = raw & ((1 << SIZE_BITS) - 1);
        let sub = (raw >> SUB_SHIFT) & ((1 << SUB_BITS) - 1);
        let slot = (raw >> SLOT_SHIFT) & ((1 << SLOT_BITS) - 1);
        let zone = raw >> ZONE_SHIFT;
        let offset = sub * u64::from(PACK_ALIGN_BYTES);
        let crosses = offset + size > SLOT_BYTES;
        let last_slot = u64::from(SLOTS_PER_ZONE_LIMIT - 1);
        if size == 0
            || !chunk_size_fits(offset, size)
            || zone >= u64::from(ZONE_COUNT_LIMIT)
            || (crosses && slot == last_slot)
        {
            return None;
        }
        let loc = Location {
            zone: zone as u32,
            slot: slot as u32,
            offset_bytes: offset as u16,
            stored_bytes: size as u16,
        };
        // The field widths keep an offset inside its slot (7 bits of 32-byte units), which
        // `slots` and `range_in_slot` rely on; no input can place it past.
        debug_assert!(u64::from(loc.offset_bytes) < SLOT_BYTES, "{raw:#x}");
        Some(loc)
    }
}

/// Whether a page of `size` bytes may start at `offset` of its slot: at most a slot, or for a
/// chunk's feedback (padding to the next slot boundary included) past the slot's end but not
/// past the next one's, which only a chunk starting inside its slot can do (a stored chunk is
/// at most 4096 bytes, so from offset 0 its padded end is the slot's end).
fn chunk_size_fits(offset: u64, size: u64) -> bool {
    // Both callers pass an offset inside the slot (`unpack`'s 7-bit field, `checked_chunk`'s
    // check before this one), so what fits ends by the next slot's end.
    debug_assert!(offset < SLOT_BYTES, "page offset {offset} past its slot");
    size <= SLOT_BYTES || (offset > 0 && offset + size <= 2 * SLOT_BYTES)
}

/// Page id -> packed location, indexed by page id.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PageMap {
    entries: Vec<u64>,
    mapped: u64,
}

impl PageMap {
    pub fn new() -> PageMap {
        // Grown entries are UNMAPPED: it must never read back as a location.
        debug_assert_eq!(Location::unpack(UNMAPPED), None, "UNMAPPED decodes as a location");
        PageMap::default()
    }

    /// Page ids `0..pid_span()` have an entry (mapped or not).
    pub fn pid_span(&self) -> u64 {
        // `set` refuses ids from PAGE_ID_LIMIT on, and the snapshot decoder the same.
        debug_assert!(
            self.entries.len() as u64 <= PAGE_ID_LIMIT,
            "{} entries beyond the page id limit",
            self.entries.len()
        );
        self.entries.len() as u64
    }

    /// Page ids that have a location.
    pub fn mapped_count(&self) -> u64 {
        // Counted in `set` and `clear`: never more than the ids that have an entry.
        debug_assert!(
            self.mapped <= self.pid_span(),
            "{} mapped of {}",
            self.mapped,
            self.pid_span()
        );
        self.mapped
    }

    pub fn get(&self, pid: PageId) -> Option<Location> {
        let raw = *self.entries.get(usize::try_from(pid).ok()?)?;
        if raw == UNMAPPED {
            return None;
        }
        let loc = Location::unpack(raw);
        assert!(loc.is_some(), "map entry of page {pid} is malformed: {raw:#x}");
        loc
    }

    /// Maps `pid` to `loc`, growing the map; returns the location it replaced.
    pub fn set(&mut self, pid: PageId, loc: Location) -> Option<Location> {
        assert!(pid < PAGE_ID_LIMIT, "page id {pid} beyond {PAGE_ID_LIMIT}");
        let index = pid as usize;
        if index >= self.entries.len() {
            self.entries.resize(index + 1, UNMAPPED);
        }
        let old = self.get(pid);
        self.entries[index] = loc.pack();
        if old.is_none() {
            self.mapped += 1;
        }
        old
    }

    /// Unmaps `pid`; returns the location it had.
    pub fn clear(&mut self, pid: PageId) -> Option<Location> {
        let old = self.get(pid)?;
        self.entries[pid as usize] = UNMAPPED;
        // `pid` was mapped, so counted: the count drops by one and stays below the span.
        debug_assert!(self.mapped > 0 && self.mapped <= self.pid_span(), "{}", self.mapped);
        self.mapped -= 1;
        Some(old)
    }

    /// Every mapped page, in page id order.
    pub fn iter(&self) -> impl Iterator<Item = (PageId, Location)> + '_ {
        self.entries.iter().enumerate().filter_map(|(pid, raw)| {
            let loc = Location::unpack(*raw);
            // Skipping a malformed entry would drop its page from the snapshot and recovery.
            debug_assert!(*raw == UNMAPPED || loc.is_some(), "page {pid}: entry {raw:#x}");
            loc.map(|loc| (pid as PageId, loc))
        })
    }

    /// The packed entries, for the snapshot encoder.
    pub(super) fn raw_entries(&self) -> &[u64] {
        // The encoder writes the mapped count beside these entries; they must hold it.
        debug_assert!(
            self.mapped <= self.entries.len() as u64,
            "{} mapped in {} entries",
            self.mapped,
            self.entries.len()
        );
        &self.entries
    }

    /// A map from packed entries the snapshot decoder has already validated.
    pub(super) fn from_raw_entries(entries: Vec<u64>) -> PageMap {
        let mapped = entries.iter().filter(|raw| **raw != UNMAPPED).count() as u64;
        debug_assert!(entries
            .iter()
            .all(|raw| *raw == UNMAPPED || Location::unpack(*raw).is_some()));
        PageMap { entries, mapped }
    }
}

/// What one slot of the reverse map holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SlotEntry {
    /// At or past the zone's write pointer: never written since the zone's last reset.
    Free,
    /// Handed out by `reserve_batch`, not yet committed or abandoned.
    Reserved,
    /// Written once, its page version no longer current (overwritten, freed, or abandoned).
    Dead,
    /// Holds the current version of this page.
    Page(PageId),
    /// Packed: two or more pages (current or not yet committed) share it, or part of a page
    /// that crosses into or out of it (packing off); which ones is in [`ReverseMap::shared`].
    Shared,
}

/// The pages of a packed slot: the current versions it holds, and how many of the pages the
/// append packed into it are not yet committed or abandoned.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SharedSlot {
    pub pages: SlotPages,
    pub pending: u16,
}

/// A packed slot's pages, inline up to a few (3:1 compression puts three or four pages in a
/// slot). A heap allocation per packed slot, made and freed as slots fill and die, scattered
/// long-lived small chunks through the heap and slowed every other allocation of the engine
/// (in the CCZNS experiment the B-tree's splits took twice the CPU beside them).
pub type SlotPages = smallvec::SmallVec<[PageId; 6]>;

const SLOT_FREE: u64 = u64::MAX;
const SLOT_RESERVED: u64 = u64::MAX - 1;
const SLOT_DEAD: u64 = u64::MAX - 2;
const SLOT_SHARED: u64 = u64::MAX - 3;
const _: () = assert!(PAGE_ID_LIMIT < SLOT_SHARED);

/// Global slot -> page id (or a sentinel). Extension for page packing: a slot would hold the
/// first page id, and a side table (slot -> further ids) the rare extra ones.
#[derive(Debug, Clone)]
pub struct ReverseMap {
    slots: Vec<u64>,
    slots_per_zone: u32,
    /// Per zone: its packed slots' pages (most slots hold one page and need no entry here).
    shared: Vec<std::collections::HashMap<u32, SharedSlot>>,
}

impl ReverseMap {
    pub fn new(zone_count: u32, slots_per_zone: u32) -> ReverseMap {
        assert!(zone_count >= 1 && slots_per_zone >= 1);
        let total = zone_count as usize * slots_per_zone as usize;
        let shared = vec![std::collections::HashMap::new(); zone_count as usize];
        ReverseMap { slots: vec![SLOT_FREE; total], slots_per_zone, shared }
    }

    /// Adds free slots for zones up to `zone_count` (the data area grew).
    pub fn grow(&mut self, zone_count: u32) {
        assert!(zone_count as usize >= self.shared.len(), "zones never shrink");
        let total = zone_count as usize * self.slots_per_zone as usize;
        self.slots.resize(total, SLOT_FREE);
        self.shared.resize(zone_count as usize, std::collections::HashMap::new());
        assert_eq!(self.slots.len(), total);
    }

    fn index(&self, zone: ZoneId, slot: u32) -> usize {
        assert!(slot < self.slots_per_zone, "slot {slot} beyond zone of {}", self.slots_per_zone);
        zone as usize * self.slots_per_zone as usize + slot as usize
    }

    pub fn get(&self, zone: ZoneId, slot: u32) -> SlotEntry {
        let entry = decode_slot(self.slots[self.index(zone, slot)]);
        // `set_shared` writes the entry with its side table's pages; callers read them next.
        debug_assert!(
            entry != SlotEntry::Shared || self.shared[zone as usize].contains_key(&slot),
            "zone {zone} slot {slot} shared without its pages"
        );
        entry
    }

    pub fn set(&mut self, zone: ZoneId, slot: u32, entry: SlotEntry) {
        let index = self.index(zone, slot);
        self.slots[index] = match entry {
            SlotEntry::Free => SLOT_FREE,
            SlotEntry::Reserved => SLOT_RESERVED,
            SlotEntry::Dead => SLOT_DEAD,
            SlotEntry::Shared => SLOT_SHARED,
            SlotEntry::Page(pid) => {
                assert!(pid < PAGE_ID_LIMIT);
                pid
            }
        };
    }

    /// The entries of one zone, slot 0 first.
    pub fn zone(&self, zone: ZoneId) -> impl Iterator<Item = SlotEntry> + '_ {
        let start = self.index(zone, 0);
        debug_assert!(
            start + self.slots_per_zone as usize <= self.slots.len(),
            "zone {zone} beyond the reverse map's {} slots",
            self.slots.len()
        );
        self.slots[start..start + self.slots_per_zone as usize].iter().map(|raw| decode_slot(*raw))
    }

    /// Forgets a zone's contents: every slot is free again (after a reset).
    pub fn reset_zone(&mut self, zone: ZoneId) {
        // GC moved every page out before the reset (its slots went Dead): none is forgotten.
        debug_assert!(
            self.zone(zone).all(|e| !matches!(e, SlotEntry::Page(_) | SlotEntry::Shared)),
            "zone {zone} reset with a page in it"
        );
        let start = self.index(zone, 0);
        self.slots[start..start + self.slots_per_zone as usize].fill(SLOT_FREE);
        self.shared[zone as usize].clear();
    }

    /// The pages of a packed slot (None unless the entry is `Shared`).
    pub fn shared(&self, zone: ZoneId, slot: u32) -> Option<&SharedSlot> {
        let shared = self.shared.get(zone as usize)?.get(&slot);
        // `unshare` and `reset_zone` drop the side entry with the Shared mark.
        debug_assert!(
            shared.is_none()
                || decode_slot(self.slots[self.index(zone, slot)]) == SlotEntry::Shared,
            "zone {zone} slot {slot} has pages but is not shared"
        );
        shared
    }

    pub(super) fn shared_mut(&mut self, zone: ZoneId, slot: u32) -> &mut SharedSlot {
        assert_eq!(self.get(zone, slot), SlotEntry::Shared, "zone {zone} slot {slot} not shared");
        self.shared[zone as usize].entry(slot).or_default()
    }

    /// Makes a slot shared (its side entry starts as `entry`).
    pub(super) fn set_shared(&mut self, zone: ZoneId, slot: u32, entry: SharedSlot) {
        // A slot becomes shared once (reserved, or in recovery free or one page so far), never
        // over a pack whose side entry this would replace, nor a dead slot before its reset.
        let was = self.get(zone, slot);
        debug_assert!(
            !matches!(was, SlotEntry::Shared | SlotEntry::Dead),
            "{zone}/{slot}: {was:?}"
        );
        self.set(zone, slot, SlotEntry::Shared);
        self.shared[zone as usize].insert(slot, entry);
    }

    /// A shared slot becomes `entry` (Dead, or a single page) and loses its side entry.
    pub(super) fn unshare(&mut self, zone: ZoneId, slot: u32, entry: SlotEntry) {
        assert!(!matches!(entry, SlotEntry::Shared));
        self.shared[zone as usize].remove(&slot);
        self.set(zone, slot, entry);
    }
}

fn decode_slot(raw: u64) -> SlotEntry {
    match raw {
        SLOT_FREE => SlotEntry::Free,
        SLOT_RESERVED => SlotEntry::Reserved,
        SLOT_DEAD => SlotEntry::Dead,
        SLOT_SHARED => SlotEntry::Shared,
        pid => {
            // `set` stores only ids below the limit; the values between it and the
            // sentinels are never written.
            debug_assert!(pid < PAGE_ID_LIMIT, "reverse entry {pid:#x} is no page id");
            SlotEntry::Page(pid)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn location_round_trips_at_the_field_limits() {
        for loc in [
            Location::new(0, 0, 1),
            Location::new(0, 0, 4096),
            Location::new(ZONE_COUNT_LIMIT - 1, SLOTS_PER_ZONE_LIMIT - 1, 4096),
            Location::new(12345, 678, 2000),
        ] {
            assert_eq!(Location::unpack(loc.pack()), Some(loc));
            assert_ne!(loc.pack(), UNMAPPED);
        }
    }

    #[test]
    fn malformed_packed_locations_are_refused() {
        assert_eq!(Location::unpack(UNMAPPED), None);
        assert_eq!(Location::unpack(0), None, "size 0");
        assert_eq!(Location::unpack(4097), None, "size above 4096");
        let crossing = Location::unpack(4065 | (1 << 13));
        assert_eq!(crossing, Some(Location::concatenated(0, 0, 32, 4065)));
        assert_eq!(crossing.map(|l| l.slots()), Some(0..2));
        assert_eq!(crossing.and_then(|l| l.range_in_slot(1)), Some(0..1));
        let last = u64::from(SLOTS_PER_ZONE_LIMIT - 1) << SLOT_SHIFT;
        assert_eq!(Location::unpack(last | 4065 | (1 << 13)), None, "crosses past any zone");
        let packed = Location::packed(3, 9, 4064, 32);
        assert!(!packed.crosses() && packed.slots() == (9..10));
        assert_eq!(Location::unpack(packed.pack()), Some(packed));
        assert_eq!(Location::unpack(4064 | (1 << 13)).map(|l| l.offset_bytes), Some(32));
        // A device-placed chunk's feedback may pass 4096 up to the next slot's end.
        let chunk = Location::chunk(3, 9, 32, 8160);
        assert_eq!((chunk.slots(), Location::unpack(chunk.pack())), (9..11, Some(chunk)));
        assert_eq!(chunk.range_in_slot(10), Some(0..4096));
        assert_eq!(Location::unpack(8161 | (1 << 13)), None, "ends past the next slot");
    }

    #[test]
    fn map_counts_mapped_pages_and_grows() {
        let mut map = PageMap::new();
        assert_eq!(map.get(10), None);
        assert_eq!(map.set(10, Location::new(1, 2, 4096)), None);
        assert_eq!(map.pid_span(), 11);
        assert_eq!(map.mapped_count(), 1);
        assert_eq!(map.set(10, Location::new(1, 3, 4096)), Some(Location::new(1, 2, 4096)));
        assert_eq!(map.mapped_count(), 1);
        assert_eq!(map.clear(10), Some(Location::new(1, 3, 4096)));
        assert_eq!(map.clear(10), None);
        assert_eq!(map.mapped_count(), 0);
        assert_eq!(map.get(u64::MAX), None);
    }

    #[test]
    fn reverse_map_keeps_sentinels_apart_from_pages() {
        let mut rev = ReverseMap::new(2, 4);
        assert_eq!(rev.get(1, 3), SlotEntry::Free);
        // Dead last: a zone is reset once GC moved its pages out (`reset_zone` asserts it).
        for e in [SlotEntry::Reserved, SlotEntry::Page(PAGE_ID_LIMIT - 1), SlotEntry::Dead] {
            rev.set(1, 3, e);
            assert_eq!(rev.get(1, 3), e);
        }
        rev.reset_zone(1);
        assert!(rev.zone(1).all(|e| e == SlotEntry::Free));
    }
}
