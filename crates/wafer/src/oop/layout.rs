//! Where the out-of-place store puts things on the device:
//!
//! ```text
//! data_offset_bytes
//! | superblock (page 0, 4 KiB, in place) | snapshot area A | area B | map journal | pad | zone 0 | ...
//!                                                                                     ^ aligned to zone_bytes
//! ```
//!
//! Zones start at a multiple of `zone_bytes` from device offset 0, so DB zones coincide with the
//! SSD's GC units (emulator superblocks) and, on ZNS, with device zones. Two snapshot areas
//! alternate so a crash while one is written leaves the other intact. Page ids are capped so
//! live data always leaves GC room (`max_fill_percent`, and never more than the zones left
//! after the GC free target and the open zones).
use super::options::{GcZones, OutOfPlaceOptions};
use crate::device::ZoneGeometry;
use crate::space::nowa::NoWaOptions;
use crate::space::{snapshot, SpaceOptions, SLOT_BYTES};
use crate::{Error, Result};
use crate::{Limit, OptionsError};

/// Superblocks a conventional SSD keeps out of reach of host data: its free pool (the
/// emulator tops it up to two) and its open host and GC superblocks.
pub const SSD_RESERVED_UNITS: u64 = 4;

/// Units NoWA keeps in hand for its own lag: a compensation is decided at a GC cycle while
/// the other writers keep appending, so live units may pass the budget by a batch or two
/// before it completes. Measured on Table 1's NoWA rows at demo scale, one thread, foreground
/// GC, seeds 1-3 (docs/internals/gc.md "NoWA"): with the GC unit's worth of free zones that
/// compensation needs (`GcZoneCounts::with_room`), one unit keeps SSD WAF at 1.00-1.01; the
/// 5 units an earlier version kept (without that room) cost DB WAF (aligned row 0.70 against
/// 0.61 on seed 1) by compensating 5 units early.
pub const NOWA_HEADROOM_UNITS: u64 = 1;

/// NoWA's view of the SSD: its GC unit, and how many units may hold valid data before its GC
/// must copy (physical units less [`SSD_RESERVED_UNITS`] and [`NOWA_HEADROOM_UNITS`]).
fn nowa_options(device_capacity_bytes: u64, o: &OutOfPlaceOptions) -> NoWaOptions {
    let unit_bytes = o.gc_unit_bytes.max(SLOT_BYTES);
    let spare_bytes = match o.ssd_spare_bytes {
        0 => device_capacity_bytes / 100 * super::options::SSD_SPARE_PERCENT_DEFAULT,
        fixed => fixed,
    };
    let physical_units = (device_capacity_bytes + spare_bytes) / unit_bytes;
    let budget = physical_units.saturating_sub(SSD_RESERVED_UNITS + NOWA_HEADROOM_UNITS).max(1);
    let nowa = NoWaOptions {
        unit_slots: unit_bytes / SLOT_BYTES,
        budget_units: u32::try_from(budget).unwrap_or(u32::MAX),
        mode: o.nowa_mode,
    };
    // NoWA counts zones per unit and units against the budget: neither may be zero.
    debug_assert!(nowa.unit_slots > 0 && nowa.budget_units > 0, "{nowa:?}");
    nowa
}

/// Refuses option values no layout can be built from (the device size is checked later).
fn check_layout_options(o: &OutOfPlaceOptions) -> Result<()> {
    let fill_max = match o.compression {
        super::codec::Compression::None => 99,
        _ => super::options::MAX_FILL_PERCENT_COMPRESSED,
    };
    if !(1..=fill_max).contains(&o.max_fill_percent) {
        let value = o.max_fill_percent;
        return Err(OptionsError::FillPercent { value, max: fill_max }.into());
    }
    if !(1..=100).contains(&o.free_pages_max_percent) {
        let (option, limit) =
            ("out_of_place.free_pages_max_percent", Limit::Within { min: 1, max: 100 });
        let value = o.free_pages_max_percent.into();
        return Err(OptionsError::OutOfRange { option, value, limit }.into());
    }
    if o.fdp && o.placement_handles == 0 {
        return Err(OptionsError::FdpWithoutHandles.into());
    }
    if o.gc_batch_pages == 0 {
        let (option, limit) = ("out_of_place.gc_batch_pages", Limit::AtLeast(1));
        return Err(OptionsError::OutOfRange { option, value: 0, limit }.into());
    }
    if o.zone_bytes == 0 || !o.zone_bytes.is_multiple_of(SLOT_BYTES) {
        let (option, limit) = ("out_of_place.zone_bytes", Limit::MultipleOf(SLOT_BYTES));
        return Err(OptionsError::OutOfRange { option, value: o.zone_bytes, limit }.into());
    }
    // What the layout divides by and sizes with: a whole number of slots per zone, a share of
    // slots for page ids, a GC batch.
    debug_assert!(
        o.zone_bytes / SLOT_BYTES >= 1 && o.max_fill_percent >= 1 && o.gc_batch_pages >= 1
    );
    Ok(())
}

/// The sizes of one snapshot area, decided before the zones are placed.
struct SnapshotAreas {
    /// Upper bound of page ids the area is sized for.
    pid_bound: u64,
    map_section_bytes: u64,
    free_pages_max: u64,
    free_section_bytes: u64,
}

impl SnapshotAreas {
    /// Upper bound of page ids: `max_fill_percent` of every slot after the superblock (the
    /// zones are a subset of those slots, and the cap `size_zones` sets never exceeds that
    /// share of them). The snapshot areas are sized for it, so any map and any set of free
    /// pages the store can hold fits; sizing for the cap itself would be circular (the areas
    /// decide how many zones remain).
    fn size(
        device_capacity_bytes: u64,
        areas_start: u64,
        o: &OutOfPlaceOptions,
    ) -> Result<SnapshotAreas> {
        let slots_bound = (device_capacity_bytes - areas_start) / SLOT_BYTES;
        let pid_bound = 1 + slots_bound * u64::from(o.max_fill_percent) / 100;
        if pid_bound > super::free::PAGE_ID_LIMIT {
            let capacity_bytes = device_capacity_bytes;
            return Err(OptionsError::TooManyPageIds { capacity_bytes }.into());
        }
        // NoWA's spans follow the map's entries: one per zone at most.
        let zones_bound = (device_capacity_bytes - areas_start) / o.zone_bytes;
        let map_section_bytes = (snapshot::block_count(pid_bound)
            + snapshot::nowa_block_count(zones_bound))
            * SLOT_BYTES;
        // Page 0 (the superblock) is never free.
        let free_pages_max = (pid_bound - 1) * u64::from(o.free_pages_max_percent) / 100;
        let free_section_bytes = super::free::section_blocks(free_pages_max) * SLOT_BYTES;
        // Page 0 is never free: the free-page section never needs an entry for every page id.
        debug_assert!(free_pages_max < pid_bound, "{free_pages_max} free of {pid_bound}");
        Ok(SnapshotAreas { pid_bound, map_section_bytes, free_pages_max, free_section_bytes })
    }

    /// One area: the map section, then the free-page section.
    fn area_bytes(&self) -> u64 {
        // Both sections exist even when empty: the decoder reads at least a block of each.
        debug_assert!(
            self.map_section_bytes >= SLOT_BYTES && self.free_section_bytes >= SLOT_BYTES
        );
        self.map_section_bytes + self.free_section_bytes
    }
}

/// Zones on a device without zones of its own: from the first multiple of `zone_bytes` past
/// the metadata, so they coincide with the SSD's GC units. Returns (start, count, stride).
fn plain_area(
    device_capacity_bytes: u64,
    metadata_end_bytes: u64,
    zone_bytes: u64,
) -> Result<(u64, u64, u64)> {
    let start = metadata_end_bytes.next_multiple_of(zone_bytes);
    if start >= device_capacity_bytes {
        return Err(OptionsError::NoRoomForZones {
            capacity_bytes: device_capacity_bytes,
            zone_bytes,
            metadata_bytes: start,
        }
        .into());
    }
    let count = (device_capacity_bytes - start) / zone_bytes;
    // The zones start past the metadata and end within the device: none overlaps either.
    debug_assert!(
        start >= metadata_end_bytes && start + count * zone_bytes <= device_capacity_bytes
    );
    Ok((start, count, zone_bytes))
}

const JOURNAL_BYTES_MIN: u64 = 64 << 10;
const JOURNAL_BYTES_MAX: u64 = 64 << 20;

#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Layout {
    pub superblock_offset_bytes: u64,
    pub snapshot_offsets_bytes: [u64; 2],
    /// One area: the map snapshot section, then the free-page section at
    /// `free_section_offset_bytes` from the area's start.
    pub snapshot_area_bytes: u64,
    pub free_section_offset_bytes: u64,
    /// The map journal's region (after the snapshot areas) when it lives on the data device;
    /// with a log device it is a slice of that device instead (`journal_on_data` false) and
    /// takes nothing here.
    pub journal_offset_bytes: u64,
    pub journal_bytes: u64,
    pub journal_on_data: bool,
    pub space: SpaceOptions,
    /// Page ids `0..page_capacity` (page 0 is the superblock, outside the zones).
    pub page_capacity: u64,
    /// Free pages the free-page section holds (`free_pages_max_percent` of the page ids).
    pub free_pages_max: u64,
    /// The device size the metadata (snapshot areas, journal, page-id bound) is sized for: the
    /// device's capacity, or more when the file may grow (`Layout::compute_growable`).
    pub layout_bytes: u64,
    /// Zones the layout reaches at `layout_bytes`; `space` holds those the device has now.
    pub zone_count_max: u32,
    /// The options resolved for the device, to size the zones again as the file grows.
    options: OutOfPlaceOptions,
}

impl Layout {
    /// `journal_on_data`: the map journal takes a region of this device (no log device);
    /// otherwise it is on the log device ([`journal_bytes_on_log`]).
    pub fn compute(
        device_capacity_bytes: u64,
        data_offset_bytes: u64,
        o: &OutOfPlaceOptions,
        journal_on_data: bool,
    ) -> Result<Layout> {
        let layout = Layout::compute_for(
            device_capacity_bytes,
            data_offset_bytes,
            o,
            journal_on_data,
            None,
        )?;
        // Everything it places lies on the device, after the offset it was given.
        debug_assert!(layout.superblock_offset_bytes >= data_offset_bytes, "{layout:?}");
        debug_assert!(layout.unused_bytes(device_capacity_bytes) <= device_capacity_bytes);
        Ok(layout)
    }

    /// As [`Layout::compute`] on a device that reports `zones`: a zoned volume (docs/internals/oop.md
    /// "ZNS"), whose conventional zones take the metadata and whose sequential zones are
    /// the DB zones one to one (zone size = the device's zone capacity, the stride its zone
    /// size).
    pub fn compute_for(
        device_capacity_bytes: u64,
        data_offset_bytes: u64,
        o: &OutOfPlaceOptions,
        journal_on_data: bool,
        zones: Option<ZoneGeometry>,
    ) -> Result<Layout> {
        // Nothing reported by a device but its zones: the default zone size.
        let caps = crate::device::DeviceCapabilities { zones, ..Default::default() };
        let o = &o.for_device(&caps);
        let o = &match zones {
            Some(g) => zoned_options(o, &g)?,
            None => *o,
        };
        check_layout_options(o)?;
        let areas_start = data_offset_bytes + SLOT_BYTES;
        if device_capacity_bytes <= areas_start {
            let capacity_bytes = device_capacity_bytes;
            return Err(OptionsError::NoDataArea { capacity_bytes }.into());
        }
        let areas = SnapshotAreas::size(device_capacity_bytes, areas_start, o)?;
        let journal_offset_bytes = areas_start + 2 * areas.area_bytes();
        let journal_bytes = journal_bytes_for(device_capacity_bytes);
        let journal_here = if journal_on_data { journal_bytes } else { 0 };
        let metadata_end_bytes = journal_offset_bytes + journal_here;
        let (zones_start, zone_count, stride_bytes) = match zones {
            Some(g) => zoned_area(device_capacity_bytes, metadata_end_bytes, &g)?,
            None => plain_area(device_capacity_bytes, metadata_end_bytes, o.zone_bytes)?,
        };
        // The zones follow the metadata and end inside the device: no byte is both.
        assert!(metadata_end_bytes <= zones_start, "zones at {zones_start} overlap metadata");
        assert!(zones_start + zone_count * stride_bytes <= device_capacity_bytes);
        let zone_count = u32::try_from(zone_count).unwrap_or(u32::MAX);
        let zones = ZonesAt { start_bytes: zones_start, stride_bytes, device_capacity_bytes };
        let (space, page_capacity) = size_zones(o, &zones, zone_count)?;
        // The areas were sized for an upper bound of page ids before the zones were placed;
        // the page ids the zones allow must fit in them.
        assert!(page_capacity <= areas.pid_bound);
        assert!(snapshot::block_count(page_capacity) * SLOT_BYTES <= areas.map_section_bytes);
        assert!(
            super::free::section_blocks(areas.free_pages_max) * SLOT_BYTES
                <= areas.free_section_bytes
        );
        Ok(Layout {
            superblock_offset_bytes: data_offset_bytes,
            snapshot_offsets_bytes: [areas_start, areas_start + areas.area_bytes()],
            snapshot_area_bytes: areas.area_bytes(),
            free_section_offset_bytes: areas.map_section_bytes,
            journal_offset_bytes,
            journal_bytes,
            journal_on_data,
            space,
            page_capacity,
            free_pages_max: areas.free_pages_max,
            layout_bytes: device_capacity_bytes,
            zone_count_max: zone_count,
            options: *o,
        })
    }

    /// A layout sized for a file that may grow to `layout_bytes` (snapshot areas, map journal
    /// and page-id bound for that size, zones from the same start) on a device that holds
    /// `device_capacity_bytes` now: `space` has the whole zones that fit today. Not on zoned
    /// devices or with NoWA, whose zones and units the device fixes.
    pub fn compute_growable(
        device_capacity_bytes: u64,
        layout_bytes: u64,
        data_offset_bytes: u64,
        o: &OutOfPlaceOptions,
        journal_on_data: bool,
    ) -> Result<Layout> {
        if o.nowa || o.fdp {
            return Err(OptionsError::GrowableWithDeviceUnits.into());
        }
        let full = Layout::compute(layout_bytes, data_offset_bytes, o, journal_on_data)?;
        // A file created smaller than the fewest zones GC needs starts at those: the store
        // extends it before the first write.
        let fewest = full.zones_for_pages(2).ok_or(OptionsError::NoDataZone { layout_bytes })?;
        let layout = full.with_zone_count(full.zones_within(device_capacity_bytes).max(fewest))?;
        // At least the fewest zones: room for the two page ids a store starts from.
        debug_assert!(layout.page_capacity >= 2, "{} page ids", layout.page_capacity);
        Ok(layout)
    }

    /// Whole zones of this layout inside a device of `device_capacity_bytes`.
    pub fn zones_within(&self, device_capacity_bytes: u64) -> u32 {
        // Zones are laid out a stride apart: a layout of no stride has no zones to count.
        debug_assert!(self.space.zone_stride_bytes > 0, "a layout with a zone stride of 0");
        let start = self.space.data_offset_bytes;
        let fit = device_capacity_bytes.saturating_sub(start) / self.space.zone_stride_bytes;
        u32::try_from(fit).unwrap_or(u32::MAX).min(self.zone_count_max)
    }

    /// The device bytes that hold `zones` zones of this layout.
    pub fn device_bytes_for(&self, zones: u32) -> u64 {
        // Metadata is sized for `zone_count_max`: more zones would outgrow the page-id bound.
        debug_assert!(zones <= self.zone_count_max, "{zones} of {} zones", self.zone_count_max);
        self.space.data_offset_bytes + u64::from(zones) * self.space.zone_stride_bytes
    }

    /// The same layout with `zones` zones (at most `zone_count_max`): GC targets and the
    /// page-id cap follow the zone count; metadata stays where it is.
    pub fn with_zone_count(&self, zones: u32) -> Result<Layout> {
        assert!(zones <= self.zone_count_max);
        let at = ZonesAt {
            start_bytes: self.space.data_offset_bytes,
            stride_bytes: self.space.zone_stride_bytes,
            device_capacity_bytes: self.layout_bytes,
        };
        let (space, page_capacity) = size_zones(&self.options, &at, zones)?;
        // The snapshot areas were sized once, for the largest zone count: any count up to it
        // must fit its map in them.
        assert!(
            snapshot::block_count(page_capacity) * SLOT_BYTES <= self.free_section_offset_bytes,
            "{zones} zones hold {page_capacity} page ids, more than the map section"
        );
        Ok(Layout { space, page_capacity, ..*self })
    }

    /// The fewest zones (at most `zone_count_max`) whose page cap reaches `pages`.
    pub fn zones_for_pages(&self, pages: u64) -> Option<u32> {
        let fits = |z: u32| self.with_zone_count(z).is_ok_and(|l| l.page_capacity >= pages);
        if !fits(self.zone_count_max) {
            return None;
        }
        // The cap grows with the zone count: bisect (bounded by 32 halvings of a u32).
        let (mut lo, mut hi) = (1, self.zone_count_max);
        while lo < hi {
            let mid = lo + (hi - lo) / 2;
            if fits(mid) {
                hi = mid;
            } else {
                lo = mid + 1;
            }
        }
        // The bisection assumes the cap grows with the zones: `hi` fits and one fewer does not.
        debug_assert!(fits(hi) && (hi == 1 || !fits(hi - 1)), "{hi} zones for {pages} pages");
        Some(hi)
    }
}

/// Where a layout's zones lie: their start, stride, and the device size NoWA models.
struct ZonesAt {
    start_bytes: u64,
    stride_bytes: u64,
    device_capacity_bytes: u64,
}

/// The space options and page-id cap of `zone_count` zones at `at`.
fn size_zones(o: &OutOfPlaceOptions, at: &ZonesAt, zone_count: u32) -> Result<(SpaceOptions, u64)> {
    // The artifact's bursts start only when the zones are exhausted, whatever `gc_zones`.
    let gc_zones = if o.artifact.gc_burst { GcZones::OnExhaustion } else { o.gc_zones };
    let mut gc = gc_zones.resolve(zone_count);
    if o.artifact.gc_in_pool {
        // Room for the survivors' write-backs before their victims come back.
        gc = gc.with_room(crate::space::gc::drain_room_zones(zone_count));
    }
    let nowa = o.nowa.then(|| nowa_options(at.device_capacity_bytes, o));
    if let Some(nowa) = nowa {
        let unit_zones = nowa.unit_slots.div_ceil(o.zone_bytes / SLOT_BYTES);
        gc = gc.with_room(u32::try_from(unit_zones).unwrap_or(u32::MAX));
    }
    let space = SpaceOptions {
        data_offset_bytes: at.start_bytes,
        data_bytes: u64::from(zone_count) * at.stride_bytes,
        zone_bytes: o.zone_bytes,
        zone_stride_bytes: at.stride_bytes,
        max_open_zones: o.open_zones,
        gc_free_zones_low: gc.free_low,
        gc_free_zones_high: gc.free_high,
        gc_reserve_zones: gc.reserve,
        placement_handles: o.placement_handles,
        placement: o.placement,
        policy: o.policy,
        nowa,
        artifact: o.artifact,
    };
    space.validate().map_err(Error::from)?;
    let slots_per_zone = space.slots_per_zone() as u64;
    let slots = u64::from(space.zone_count()) * slots_per_zone;
    let by_fill = slots * u64::from(o.max_fill_percent) / 100;
    // Live pages must leave the GC free target and the open zones' room, or GC could find
    // no victim with an invalid slot while writers still need zones.
    let overhead_zones = u64::from(gc.free_high) + u64::from(o.open_zones);
    // `validate` refused fewer zones than the overhead: the difference below is at least one.
    assert!(u64::from(space.zone_count()) > overhead_zones);
    // Over 100% (compressed pages, thin provisioned) the zones' cap scales the same way.
    let over = u64::from(o.max_fill_percent.max(100));
    let by_zones = (u64::from(space.zone_count()) - overhead_zones) * slots_per_zone * over / 100;
    Ok((space, 1 + by_fill.min(by_zones)))
}

/// The options on a zoned volume: DB zones are the device's zones (their capacity), no NoWA
/// (the device never copies) and no FDP, and no more zones open than the device allows.
fn zoned_options(o: &OutOfPlaceOptions, g: &ZoneGeometry) -> Result<OutOfPlaceOptions> {
    if g.conventional_zones == 0 {
        return Err(OptionsError::ZnsWithoutConventional.into());
    }
    if o.nowa || o.fdp {
        return Err(OptionsError::ZnsDeviceUnits.into());
    }
    let limit = g.max_open_zones.min(g.max_active_zones);
    if o.open_zones > limit {
        return Err(OptionsError::ZnsOpenZones { open_zones: o.open_zones, limit }.into());
    }
    // A DB zone is a device zone: `for_device` took its capacity unless the caller fixed one.
    if o.zone_bytes != g.zone_capacity_bytes || o.zones_per_gc_unit != 1 {
        return Err(OptionsError::ZnsZoneBytes {
            zone_bytes: o.zone_bytes,
            zones_per_gc_unit: o.zones_per_gc_unit,
            zone_capacity_bytes: g.zone_capacity_bytes,
        }
        .into());
    }
    assert!(g.zone_capacity_bytes <= g.zone_bytes);
    Ok(*o)
}

/// Where a zoned volume's DB zones are: every sequential zone, from the first one after the
/// conventional zones (which must hold the metadata ending at `metadata_end_bytes`).
fn zoned_area(
    device_capacity_bytes: u64,
    metadata_end_bytes: u64,
    g: &ZoneGeometry,
) -> Result<(u64, u64, u64)> {
    let zones_start = u64::from(g.conventional_zones) * g.zone_bytes;
    if metadata_end_bytes > zones_start {
        let (metadata_bytes, conventional_bytes) = (metadata_end_bytes, zones_start);
        return Err(OptionsError::ZnsMetadata { metadata_bytes, conventional_bytes }.into());
    }
    let sequential = u64::from(g.zone_count.saturating_sub(g.conventional_zones));
    assert!(zones_start + sequential * g.zone_bytes <= device_capacity_bytes);
    if sequential == 0 {
        return Err(OptionsError::ZnsNoSequentialZones.into());
    }
    Ok((zones_start, sequential, g.zone_bytes))
}

impl Layout {
    /// On-device metadata: the store's superblock, both snapshot areas, and the map journal
    /// when it lives on the data device.
    pub fn metadata_bytes(&self) -> u64 {
        let journal = if self.journal_on_data { self.journal_bytes } else { 0 };
        let bytes = SLOT_BYTES + 2 * self.snapshot_area_bytes + journal;
        // The zones start past the metadata: a snapshot written there would overwrite pages.
        debug_assert!(self.superblock_offset_bytes + bytes <= self.space.data_offset_bytes);
        bytes
    }

    /// Device bytes neither metadata nor zones: the padding that aligns the first zone to the
    /// zone size, and the tail after the last whole zone.
    pub fn unused_bytes(&self, device_capacity_bytes: u64) -> u64 {
        let used = self.superblock_offset_bytes + self.metadata_bytes() + self.space.data_bytes;
        assert!(used <= device_capacity_bytes);
        device_capacity_bytes - used
    }
}

/// The size a store's layout is made for on `device`, 0 meaning the device's own: what the
/// superblock at `data_offset_bytes` records, or on a fresh device `max_file_bytes` when that
/// is more than the device holds (a file that will grow). Zoned devices never grow.
pub fn layout_bytes_on(
    device: &dyn crate::device::Device,
    data_offset_bytes: u64,
    max_file_bytes: Option<u64>,
) -> Result<u64> {
    if device.capabilities().zones.is_some() {
        return Ok(0);
    }
    let mut sb = crate::device::AlignedBuf::zeroed(SLOT_BYTES as usize);
    device.read_at(data_offset_bytes, &mut sb)?;
    if sb.iter().all(|b| *b == 0) {
        let capacity = device.capacity_bytes();
        let grows = max_file_bytes.filter(|max| *max > capacity);
        let bytes = grows.map_or(0, |max| max / SLOT_BYTES * SLOT_BYTES);
        // A file that grows is laid out for more than it holds now, in whole slots.
        debug_assert!(
            bytes == 0
                || (bytes >= capacity - capacity % SLOT_BYTES && bytes.is_multiple_of(SLOT_BYTES))
        );
        return Ok(bytes);
    }
    let mut page = [0u8; crate::page::PAGE_SIZE];
    page.copy_from_slice(&sb);
    // A superblock that does not decode is the database's to report, with its reason; the
    // layout a store would read it with then changes nothing.
    Ok(crate::page::meta::Meta::decode(&page).map_or(0, |m| m.layout_bytes))
}

/// Conventional zones tried when sizing a metadata device; a layout needing more has
/// metadata larger than 64 zones, which no sane zone size gives.
const METADATA_ZONES_MAX: u32 = 64;

/// The metadata device a [`crate::device::ZonedVolume`] needs in front of a ZNS SSD with
/// `zones` (no conventional zones of its own): the bytes from the volume's start to the end of
/// the store's metadata (superblock at `data_offset_bytes`, both snapshot areas, and the map
/// journal when `journal_on_data`).
pub fn metadata_device_bytes(
    zones: &ZoneGeometry,
    data_offset_bytes: u64,
    o: &OutOfPlaceOptions,
    journal_on_data: bool,
) -> Result<u64> {
    assert_eq!(zones.conventional_zones, 0, "a bare ZNS SSD");
    let zoned_bytes = u64::from(zones.zone_count) * zones.zone_bytes;
    let mut last = None;
    // The areas grow a little with the volume's capacity, so more conventional zones may be
    // needed than the first guess.
    for conventional_zones in 1..=METADATA_ZONES_MAX {
        let g = ZoneGeometry {
            conventional_zones,
            zone_count: zones.zone_count + conventional_zones,
            ..*zones
        };
        let capacity = u64::from(conventional_zones) * zones.zone_bytes + zoned_bytes;
        match Layout::compute_for(capacity, data_offset_bytes, o, journal_on_data, Some(g)) {
            Ok(l) => {
                let end = l.superblock_offset_bytes + l.metadata_bytes();
                assert!(end <= l.space.data_offset_bytes);
                return Ok(end);
            }
            Err(e) => last = Some(e),
        }
    }
    Err(last.unwrap_or_else(|| OptionsError::ZnsNoLayout.into()))
}

/// The map journal for a data device of `device_capacity_bytes`: a 128th of it, 64 KiB to
/// 64 MiB (a snapshot is taken every quarter of it, so this sets the snapshot cadence).
pub fn journal_bytes_for(device_capacity_bytes: u64) -> u64 {
    let bytes = (device_capacity_bytes / 128 / SLOT_BYTES * SLOT_BYTES)
        .clamp(JOURNAL_BYTES_MIN, JOURNAL_BYTES_MAX);
    // The journal is a slice of whole blocks (`SliceDevice::new` refuses anything else).
    debug_assert!(bytes.is_multiple_of(SLOT_BYTES), "a journal of {bytes} bytes");
    bytes
}

/// The slice of a log device of `log_capacity_bytes` the map journal takes (its tail), for a
/// data device of `data_capacity_bytes`: the usual journal, but never more than a quarter of
/// the log device, so the WAL keeps most of it.
pub fn journal_bytes_on_log(data_capacity_bytes: u64, log_capacity_bytes: u64) -> u64 {
    let quarter = log_capacity_bytes / 4 / SLOT_BYTES * SLOT_BYTES;
    let bytes = journal_bytes_for(data_capacity_bytes).min(quarter);
    // Paired with `split_log_device`, which slices the log device there: whole blocks only.
    debug_assert!(bytes.is_multiple_of(SLOT_BYTES), "a journal of {bytes} bytes");
    bytes
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn zones_are_aligned_and_areas_do_not_overlap() {
        let o = OutOfPlaceOptions::production();
        for journal_on_data in [true, false] {
            let l = Layout::compute(4 << 30, 0, &o, journal_on_data).unwrap();
            assert_eq!(l.space.data_offset_bytes % l.space.zone_bytes, 0);
            assert_eq!(l.space.zone_bytes, crate::space::ZONE_BYTES_DEFAULT);
            let areas_end = l.snapshot_offsets_bytes[1] + l.snapshot_area_bytes;
            assert!(areas_end <= l.space.data_offset_bytes);
            assert!(l.free_section_offset_bytes < l.snapshot_area_bytes);
            // Map sections of 1962 blocks (95% of the slots) and 2 of NoWA spans (256 zones),
            // free-page sections for 5% of those page ids (197 blocks).
            assert_eq!(l.free_section_offset_bytes, (1962 + 2) * 4096);
            assert_eq!(l.snapshot_area_bytes, (1962 + 2 + 197) * 4096);
            if journal_on_data {
                assert!(l.journal_offset_bytes + l.journal_bytes <= l.space.data_offset_bytes);
            }
            let slots = u64::from(l.space.zone_count()) * 4096;
            assert_eq!(l.page_capacity, 1 + slots * 95 / 100);
            assert_eq!(
                l.superblock_offset_bytes
                    + l.metadata_bytes()
                    + l.space.data_bytes
                    + l.unused_bytes(4 << 30),
                4 << 30
            );
        }
        let on_log = Layout::compute(4 << 30, 0, &o, false).unwrap();
        assert_eq!(on_log.space.zone_count(), 254, "the 32 MiB journal leaves the device");
    }

    /// A layout made for 64x the file keeps its metadata where the full-size layout has it,
    /// holds the zones that fit today, and reaches the full layout's zones and page cap by
    /// adding zones; the cap grows with every zone added.
    #[test]
    fn a_growable_layout_is_a_prefix_of_its_full_size() {
        let o = OutOfPlaceOptions::test_min();
        let (now, max) = (4 << 20, 64 << 20);
        let full = Layout::compute(max, 4096, &o, true).unwrap();
        let l = Layout::compute_growable(now, max, 4096, &o, true).unwrap();
        assert_eq!(l.snapshot_offsets_bytes, full.snapshot_offsets_bytes);
        assert_eq!(l.journal_offset_bytes, full.journal_offset_bytes);
        assert_eq!(l.space.data_offset_bytes, full.space.data_offset_bytes);
        assert_eq!(l.zone_count_max, full.space.zone_count());
        assert_eq!(l.space.zone_count(), l.zones_within(now));
        assert!(l.device_bytes_for(l.space.zone_count()) <= now);
        assert!(l.page_capacity < full.page_capacity);
        let grown = l.with_zone_count(l.zone_count_max).unwrap();
        assert_eq!((grown.space, grown.page_capacity), (full.space, full.page_capacity));
        let z = l.zones_for_pages(l.page_capacity + 1).unwrap();
        assert_eq!(z, l.space.zone_count() + 1, "one more zone covers one more page");
        let fewer = l.with_zone_count(z - 1).unwrap();
        assert!(fewer.page_capacity <= l.page_capacity);
        assert_eq!(l.zones_for_pages(full.page_capacity + 1), None, "past the layout");
        // A file created below the fewest zones GC needs starts at those.
        let tiny = Layout::compute_growable(64 << 10, max, 4096, &o, true).unwrap();
        assert!(tiny.device_bytes_for(tiny.space.zone_count()) > 64 << 10);
        assert!(tiny.page_capacity >= 2);
        assert!(Layout::compute_growable(
            now,
            max,
            4096,
            &OutOfPlaceOptions { nowa: true, ..o },
            true
        )
        .is_err());
    }

    /// 000 keeps its metadata in memory and checkpoints; here it is on the device, and with the
    /// journal on the log device it stays under 0.5% of every experiment device.
    /// Before the free-page section was bounded and the journal could move: 2.2% on cns.
    #[test]
    fn metadata_takes_under_half_a_percent_of_the_experiment_devices() {
        for (l, capacity) in experiment_layouts() {
            let share = l.metadata_bytes() as f64 / capacity as f64;
            assert!(share <= 0.005, "{share} of {capacity}");
        }
    }

    /// The production layout, journal on the log device, one zone per superblock, on `demo`
    /// (`ent` with 32 blocks of 32 pages: 512 MiB, 4 MiB zones), full `cns` and `ent` (4 GiB,
    /// 16 MiB zones); with each device's capacity.
    fn experiment_layouts() -> Vec<(Layout, u64)> {
        let mut demo = flashemu::Config::preset("ent").unwrap();
        demo.geometry.pages_per_block = 32;
        demo.geometry.blocks_per_chip = 32;
        let devices = [
            flashemu::Config::preset("cns").unwrap(),
            flashemu::Config::preset("ent").unwrap(),
            demo,
        ];
        devices
            .into_iter()
            .map(|cfg| {
                let capacity = cfg.layout().logical_blocks * SLOT_BYTES;
                let o = OutOfPlaceOptions {
                    zone_bytes: cfg.layout().superblock_bytes(),
                    ..OutOfPlaceOptions::production()
                };
                (Layout::compute(capacity, 1 << 20, &o, false).unwrap(), capacity)
            })
            .collect()
    }

    /// The page-id cap as a share of the zone space: 95% (`max_fill_percent`) on every
    /// experiment device, above the 90% fill of 000's Table 1 plus the top-up's slack.
    #[test]
    fn page_capacity_is_the_fill_cap_of_the_zone_space() {
        for (l, _) in experiment_layouts() {
            let slots = u64::from(l.space.zone_count()) * u64::from(l.space.slots_per_zone());
            assert_eq!(l.page_capacity, 1 + slots * 95 / 100);
        }
    }

    #[test]
    fn tiny_devices_are_refused_with_a_reason() {
        let o = OutOfPlaceOptions::production();
        let e = Layout::compute(16 << 20, 0, &o, true).unwrap_err();
        assert!(matches!(e, Error::InvalidOptions(_)), "{e}");
        let t = OutOfPlaceOptions::test_min();
        assert!(Layout::compute(4096, 0, &t, true).is_err());
        assert!(Layout::compute(1 << 20, 0, &t, true).is_ok());
    }

    /// With NoWA, GC keeps a GC unit's worth of zones free beyond its own target (room for a
    /// compensation to move what is left of a unit), and the budget is the SSD's physical
    /// units less its reserve and one unit of lag.
    #[test]
    fn nowa_keeps_a_unit_of_room_and_an_exact_budget() {
        let (capacity, unit_bytes) = (512u64 << 20, 4u64 << 20);
        let o = OutOfPlaceOptions {
            zone_bytes: unit_bytes / 16,
            gc_unit_bytes: unit_bytes,
            ssd_spare_bytes: 64 << 20,
            open_zones: 16,
            placement: crate::space::PlacementKind::Gdt,
            policy: crate::space::VictimPolicyKind::GreedyUntilZone,
            ..OutOfPlaceOptions::production()
        };
        let plain = Layout::compute(capacity, 1 << 20, &o, false).unwrap();
        let nowa =
            Layout::compute(capacity, 1 << 20, &OutOfPlaceOptions { nowa: true, ..o }, false)
                .unwrap();
        assert!(plain.space.nowa.is_none());
        assert_eq!(nowa.space.gc_free_zones_low, plain.space.gc_free_zones_low + 16);
        assert_eq!(nowa.space.gc_free_zones_high, plain.space.gc_free_zones_high + 16);
        assert_eq!(nowa.space.gc_reserve_zones, plain.space.gc_reserve_zones);
        let n = nowa.space.nowa.unwrap();
        assert_eq!(n.unit_slots, unit_bytes / SLOT_BYTES);
        // (512 + 64) MiB / 4 MiB = 144 physical units, less 4 reserved and 1 of lag.
        assert_eq!(u64::from(n.budget_units), 144 - SSD_RESERVED_UNITS - NOWA_HEADROOM_UNITS);
    }
}
