//! Out-of-place write mode configuration: zone size, GC thresholds and policy, how full the
//! page-id space may get, and whether GC also runs in a background thread. A plain value with
//! named presets; `Options::out_of_place` carries it.
use crate::device::DeviceCapabilities;
use crate::space::{PlacementKind, VictimPolicyKind, ZONE_BYTES_DEFAULT};

/// How many free zones GC keeps, as counts of zones.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum GcZones {
    /// Scaled with the zone count `n` the layout leaves (`resolve`): `reserve` 1 below 256 zones,
    /// else 2; `free_low` = n/64 in `reserve+1..=4`; `free_high` = n/32 in `free_low+1..=8`. So
    /// from 256 zones on (the paper's devices) it is the fixed 2 / 4 / 8 the production preset
    /// always had, and a device of 128 zones keeps 1 / 2 / 4 instead of giving 8% of its
    /// zones to the GC target (the page-id cap subtracts `free_high` + the open zones).
    Scaled,
    /// Fixed counts (tests pin them so byte counts do not depend on the device size).
    Fixed { free_low: u32, free_high: u32, reserve: u32 },
    /// As 000 and its artifact do: GC starts only when no empty zone is left beyond the one
    /// zone reserved for GC's copies, and each cycle frees about one zone (reserve 1, low 2,
    /// high 2). So the space GC holds idle is the reserve and the open zones' tails, not a
    /// free-zone target (000 sec. 7.3: DB GC works with the 10.5% the dataset leaves).
    OnExhaustion,
}

/// Resolved thresholds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct GcZoneCounts {
    /// GC runs when free zones (empty or awaiting durability) fall below this ...
    pub free_low: u32,
    /// ... and stops when they reach this.
    pub free_high: u32,
    /// Empty zones only GC copyback may open.
    pub reserve: u32,
}

impl GcZoneCounts {
    /// The thresholds raised by `zones`: with NoWA, GC keeps a GC unit's worth of zones free
    /// beyond its own target, so a compensation always has room to move what is left of the
    /// unit it takes (without it, a dense database such as Table 1's "- comp." row has one
    /// or two empty zones, compensation finds no room most of the time, and the SSD copies).
    pub fn with_room(self, zones: u32) -> GcZoneCounts {
        let counts = GcZoneCounts {
            free_low: self.free_low.saturating_add(zones),
            free_high: self.free_high.saturating_add(zones),
            reserve: self.reserve,
        };
        // Both thresholds move together: GC still stops at or above where it starts.
        debug_assert!(self.free_low > self.free_high || counts.free_low <= counts.free_high);
        counts
    }
}

impl GcZones {
    pub fn resolve(self, zone_count: u32) -> GcZoneCounts {
        match self {
            GcZones::Fixed { free_low, free_high, reserve } => {
                GcZoneCounts { free_low, free_high, reserve }
            }
            GcZones::OnExhaustion => GcZoneCounts { free_low: 2, free_high: 2, reserve: 1 },
            GcZones::Scaled => {
                let reserve = if zone_count < 256 { 1 } else { 2 };
                let free_low = (zone_count / 64).clamp(reserve + 1, 4);
                let free_high = (zone_count / 32).clamp(free_low + 1, 8);
                // The order `SpaceOptions::validate` demands of every setting.
                debug_assert!(reserve < free_low && free_low <= free_high);
                GcZoneCounts { free_low, free_high, reserve }
            }
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct OutOfPlaceOptions {
    /// DB zone size, the DB GC unit; a multiple of 4096. 0: the device's GC unit (its
    /// superblock or reclaim unit), or its zone size on a zoned device, as the device reports
    /// them ([`OutOfPlaceOptions::for_device`]); `ZONE_BYTES_DEFAULT` when it reports neither.
    pub zone_bytes: u64,
    /// With `zone_bytes` 0: DB zones per device GC unit (1 aligns a zone to the unit; 000's
    /// naive row has 32: 250 MB zones on an 8 GB GC unit).
    pub zones_per_gc_unit: u32,
    /// Page ids are capped at this share of the data area's slots, so live data can never
    /// exceed what GC can keep up with; the allocator refuses beyond it with `OutOfSpace`
    /// before anything changes (000 runs at 90%). At most 99, or with compression up to
    /// [`MAX_FILL_PERCENT_COMPRESSED`]: more pages than slots (thin provisioning, as 000 keeps a
    /// 1,500 GB database on an 894 GB SSD, Table 2), which fit only while they compress; when
    /// they do not, writes fail with `OutOfSpace` and lose nothing.
    pub max_fill_percent: u32,
    /// GC's free-zone thresholds and reserve (`Layout::space` holds the resolved counts).
    pub gc_zones: GcZones,
    pub policy: VictimPolicyKind,
    /// Where write-back batches go (the placement policy).
    pub placement: PlacementKind,
    /// Zones open for appends at once, GC's included (000: up to 16). At least 2.
    pub open_zones: u32,
    /// FDP reclaim unit handles zones are spread over (each open zone its own); 0 = no hint.
    /// Set from the device's report by `fdp`.
    pub placement_handles: u16,
    /// FDP placement (000 sec. 5.5): zones of the reclaim unit's size, each open zone writing
    /// under its own reclaim unit handle (`placement_handles` = the device's handle count), so
    /// the SSD never mixes two zones in a reclaim unit. Needs a device that reports FDP, and at
    /// most as many open zones as it has handles.
    pub fdp: bool,
    /// Free pages kept as headers only (no slot, persisted in the snapshots' free-page
    /// section), as a percent of the page ids: the section is sized for this many, so it costs
    /// 16 bytes per page id at 100 and 0.8 at 5. Pages freed beyond it are written like any
    /// page (a free page is a header and zeros) until the tree reuses them.
    pub free_pages_max_percent: u32,
    /// Page compression (000 sec. 3.1): each page on its own; GC moves stored pages as they are.
    pub compression: super::codec::Compression,
    /// Pack compressed pages several to a 4 KiB slot by best-fit decreasing (000 sec. 3.2);
    /// off: concatenate them in write order, so some cross into the next slot and take two
    /// reads (000's comparison).
    pub packing: bool,
    /// Pages GC reads and rewrites per device batch (bounds its buffer: this x 4 KiB).
    pub gc_batch_pages: u32,
    /// A background thread starts GC once free zones fall below the high mark, so
    /// writers rarely wait for foreground GC. Off in `test_min` so byte counts are
    /// deterministic.
    pub background_gc: bool,
    /// NoWA (000 sec. 5.4): zones open in groups and GC compensates imbalance, so a
    /// conventional SSD's own GC finds fully invalid superblocks (SSD WAF 1).
    pub nowa: bool,
    /// How NoWA corrects imbalance: `Unit` (the default) compensates whole estimated SSD
    /// units when they exceed the SSD's budget, in GC cycles of their own (SSD WAF near 1, more
    /// DB copies); `Group` balances the zones opened together the way 000's artifact does,
    /// only when GC runs anyway (fewer DB copies, some SSD copies). See
    /// docs/internals/gc.md, NoWA. Ignored without `nowa`.
    pub nowa_mode: crate::space::nowa::NoWaMode,
    /// The SSD's GC unit, for NoWA's model of it; 0: the device's report (superblock, reclaim
    /// unit), else the unit zones are cut from (`ZONE_BYTES_DEFAULT`).
    pub gc_unit_bytes: u64,
    /// Flash the SSD holds beyond its logical capacity (its OP), for NoWA's budget; 0: the
    /// device's report, else `SSD_SPARE_PERCENT_DEFAULT` of the capacity.
    pub ssd_spare_bytes: u64,
    /// The artifact's GC and placement choices, each on its own (docs/internals/gc.md,
    /// "The artifact's choices"); all off by default.
    pub artifact: crate::space::ArtifactOptions,
}

/// OP assumed for an SSD that does not report its physical capacity (a common consumer
/// figure; enterprise drives have more, so the estimate errs towards compensating early).
pub const SSD_SPARE_PERCENT_DEFAULT: u64 = 7;

/// The largest `max_fill_percent` with compression on: page ids for 4x the slots.
pub const MAX_FILL_PERCENT_COMPRESSED: u32 = 400;

impl OutOfPlaceOptions {
    /// Zones of the device's GC unit (one DB zone = one SSD GC unit, 000 sec. 5.3), GC on
    /// exhaustion (one zone per cycle), 95% fill cap, background GC, free-page headers for at
    /// most 5% of the page ids.
    pub fn production() -> OutOfPlaceOptions {
        let o = OutOfPlaceOptions {
            zone_bytes: 0,
            zones_per_gc_unit: 1,
            max_fill_percent: 95,
            gc_zones: GcZones::OnExhaustion,
            policy: VictimPolicyKind::Greedy,
            placement: PlacementKind::Separate,
            open_zones: 2,
            placement_handles: 0,
            free_pages_max_percent: 5,
            compression: super::codec::Compression::None,
            packing: true,
            gc_batch_pages: 256,
            background_gc: true,
            fdp: false,
            nowa: false,
            nowa_mode: crate::space::nowa::NoWaMode::Unit,
            gc_unit_bytes: 0,
            ssd_spare_bytes: 0,
            artifact: crate::space::ArtifactOptions::default(),
        };
        // Defaults the option checks accept: zones left free to write into, GC batches of
        // pages, and room for one open zone per stream at least.
        debug_assert!(o.max_fill_percent < 100 && o.gc_batch_pages > 0 && o.open_zones > 0);
        o
    }

    /// Zones of 4 pages, GC between 3 and 5 free zones, small GC batches, no background
    /// thread: tests hit zone boundaries, GC and its edge cases within a few hundred writes.
    pub fn test_min() -> OutOfPlaceOptions {
        let o = OutOfPlaceOptions {
            zone_bytes: 4 * 4096,
            zones_per_gc_unit: 1,
            max_fill_percent: 90,
            gc_zones: GcZones::Fixed { free_low: 3, free_high: 5, reserve: 1 },
            policy: VictimPolicyKind::Greedy,
            placement: PlacementKind::Separate,
            open_zones: 2,
            placement_handles: 0,
            free_pages_max_percent: 100,
            compression: super::codec::Compression::None,
            packing: true,
            gc_batch_pages: 3,
            background_gc: false,
            fdp: false,
            nowa: false,
            nowa_mode: crate::space::nowa::NoWaMode::Unit,
            gc_unit_bytes: 0,
            ssd_spare_bytes: 0,
            artifact: crate::space::ArtifactOptions::default(),
        };
        // Zones of whole 4 KiB slots, and GC that stops above where it starts.
        debug_assert!(o.zone_bytes.is_multiple_of(4096) && o.zone_bytes > 0);
        debug_assert!(matches!(o.gc_zones, GcZones::Fixed { free_low, free_high, .. }
            if free_low < free_high));
        o
    }
}

impl OutOfPlaceOptions {
    /// The options with every "ask the device" field settled from what `device` reports.
    pub fn for_device(self, device: &DeviceCapabilities) -> OutOfPlaceOptions {
        let reported = device.zones.map(|z| z.zone_bytes).or(device.gc_unit_bytes);
        let gc_unit_bytes = match self.gc_unit_bytes {
            0 => reported.unwrap_or(ZONE_BYTES_DEFAULT),
            fixed => fixed,
        };
        let zone_bytes = match (self.zone_bytes, device.zones) {
            // On ZNS a DB zone is a device zone: its writable part.
            (0, Some(zones)) => zones.zone_capacity_bytes,
            // A whole number of 4 KiB slots; never below one slot.
            (0, None) => {
                (gc_unit_bytes / u64::from(self.zones_per_gc_unit.max(1)) / 4096).max(1) * 4096
            }
            (fixed, _) => fixed,
        };
        let ssd_spare_bytes = match self.ssd_spare_bytes {
            0 => device.spare_bytes.unwrap_or(0),
            fixed => fixed,
        };
        let placement_handles = match (self.fdp, device.fdp) {
            (true, Some(fdp)) => fdp.handles,
            _ => self.placement_handles,
        };
        // Settled: no "ask the device" zero is left in the sizes the layout divides by.
        debug_assert!(zone_bytes > 0 && gc_unit_bytes > 0, "{zone_bytes} {gc_unit_bytes}");
        OutOfPlaceOptions { zone_bytes, gc_unit_bytes, ssd_spare_bytes, placement_handles, ..self }
    }
}

impl Default for OutOfPlaceOptions {
    fn default() -> OutOfPlaceOptions {
        let o = OutOfPlaceOptions::production();
        // The default asks the device for its zone size: `for_device` settles it.
        debug_assert_eq!(o.zone_bytes, 0);
        o
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scaled_thresholds_grow_with_the_zone_count_to_the_fixed_production_values() {
        let counts = |n| {
            let c = GcZones::Scaled.resolve(n);
            (c.reserve, c.free_low, c.free_high)
        };
        assert_eq!(counts(20), (1, 2, 3));
        assert_eq!(counts(48), (1, 2, 3));
        assert_eq!(counts(116), (1, 2, 3));
        assert_eq!(counts(128), (1, 2, 4));
        assert_eq!(counts(233), (1, 3, 7));
        assert_eq!(counts(256), (2, 4, 8));
        assert_eq!(counts(60_000), (2, 4, 8));
        // The space manager's own rules hold for every count.
        for n in 1..2000 {
            let c = GcZones::Scaled.resolve(n);
            assert!(c.reserve >= 1 && c.free_low > c.reserve && c.free_high >= c.free_low, "{n}");
        }
    }
}
