//! Space configuration: where the data area is, how it is cut into zones, how many zones may be
//! open, when GC runs and which victim policy it uses. A plain value with named presets.
use super::error::{invalid, SpaceError};
use super::gc::VictimPolicyKind;
use super::map::{SLOTS_PER_ZONE_LIMIT, SLOT_BYTES, ZONE_COUNT_LIMIT};
use super::nowa::NoWaOptions;
use super::placement::PlacementKind;
use crate::Limit;

/// 000's artifact's GC and placement choices, each on its own (all off: this engine's own, so
/// byte counts pinned by tests do not move). Each reproduces one behaviour of ZLeanStore, the
/// code 000 measured with, so a run can show which of them moves a result.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ArtifactOptions {
    /// GC only when the free zones are exhausted (reserve 1, low 2, high 2) and then in a
    /// burst: up to `VICTIMS_PER_CYCLE_MAX` (16) greedy victims in one cycle, as many as the
    /// empty zones can take the copies of. (The artifact holds a burst's survivors in its
    /// buffer pool; here they need device room, so the burst is bounded by it.)
    pub gc_burst: bool,
    /// Freed zones are not trimmed on a conventional device (the artifact's default); a ZNS
    /// zone is still reset, which appending again needs.
    pub trim_off: bool,
    /// GC's survivors go to the user write groups, mixed into the user write stream, instead
    /// of to GC zones of their own; with GDT coldest first, each to the user group whose
    /// deathtime range is closest.
    pub gc_with_user: bool,
    /// GDT only: a write-back batch goes whole to one zone, the one whose mean expected
    /// deathtime is closest to the batch's mean, instead of being split page by page.
    pub batch_one_zone: bool,
    /// GDT only: deathtimes predicted from 8 write times per page, stamped with the page's
    /// LSN at write-back, instead of the page header's 4 write-clock times. Kept in memory by
    /// the policy (8 bytes x 8 per page id); after a reopen the histories refill.
    pub lsn_history: bool,
    /// GC hands its victims' survivors to the buffer pool as dirty pages (the artifact's
    /// `buffer_manager` reads them in), and normal eviction writes them out among the user
    /// pages. A victim is reset only once every survivor's new copy is committed and the log
    /// is durable past it; survivors the pool cannot take are copied directly, as without it.
    pub gc_in_pool: bool,
}

impl ArtifactOptions {
    /// Every artifact behaviour on.
    pub fn all() -> ArtifactOptions {
        let all = ArtifactOptions {
            gc_burst: true,
            trim_off: true,
            gc_with_user: true,
            batch_one_zone: true,
            lsn_history: true,
            gc_in_pool: true,
        };
        // The harness's `artifact=off` is the default: `on` must differ from it, or the
        // experiment compares a configuration with itself.
        debug_assert_ne!(all, ArtifactOptions::default(), "every artifact behaviour off");
        all
    }
}

/// Zone size when neither the options nor the device say better: 16 MiB. The out-of-place
/// store asks the device for its GC unit first (`DeviceCapabilities`).
pub const ZONE_BYTES_DEFAULT: u64 = 16 << 20;

#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SpaceOptions {
    /// Start of the data area on the device (after the superblock / metadata area).
    pub data_offset_bytes: u64,
    /// Length of the data area. Zones are `data_bytes / zone_stride_bytes`; a remainder is
    /// unused.
    pub data_bytes: u64,
    /// Writable bytes of a zone, the GC unit; a multiple of 4096.
    pub zone_bytes: u64,
    /// Address distance between zone starts: `zone_bytes` on a conventional device, the device
    /// zone size on ZNS, whose zone capacity (`zone_bytes`) may be smaller (the tail of each
    /// zone is not writable).
    pub zone_stride_bytes: u64,
    /// Zones open for appends at once: one per write group (stream / GDT group), at most this.
    pub max_open_zones: u32,
    /// GC is needed when free zones (empty or awaiting the log) fall below this.
    pub gc_free_zones_low: u32,
    /// GC stops once free zones reach this.
    pub gc_free_zones_high: u32,
    /// Empty zones only GC copyback may open, so GC can always move a victim's valid pages.
    pub gc_reserve_zones: u32,
    /// FDP reclaim unit handles the placement policy may hint with; 0 = no hint.
    pub placement_handles: u16,
    /// Where write-back batches go (which group, hence which open zone).
    pub placement: PlacementKind,
    pub policy: VictimPolicyKind,
    /// NoWA (000 sec. 5.4): zones open in groups and GC compensates imbalance before the
    /// SSD's GC would copy; None = off.
    pub nowa: Option<NoWaOptions>,
    /// The artifact's GC and placement choices (all off by default).
    pub artifact: ArtifactOptions,
}

impl SpaceOptions {
    /// 16 MiB zones, 16 open zones as in 000 sec. 7.2, GC between 4 and 8 free zones.
    pub fn production(data_offset_bytes: u64, data_bytes: u64) -> SpaceOptions {
        let o = SpaceOptions {
            data_offset_bytes,
            data_bytes,
            zone_bytes: ZONE_BYTES_DEFAULT,
            zone_stride_bytes: ZONE_BYTES_DEFAULT,
            max_open_zones: 16,
            gc_free_zones_low: 4,
            gc_free_zones_high: 8,
            gc_reserve_zones: 2,
            placement_handles: 0,
            placement: PlacementKind::Separate,
            policy: VictimPolicyKind::Greedy,
            nowa: None,
            artifact: ArtifactOptions::default(),
        };
        // The preset's own fields pass `validate` whatever the caller's area: only its size
        // may be refused (too small for the zones GC keeps free).
        debug_assert!(
            o.gc_reserve_zones < o.gc_free_zones_low
                && o.gc_free_zones_low <= o.gc_free_zones_high
                && o.zone_bytes.is_multiple_of(SLOT_BYTES)
                && o.zone_bytes / SLOT_BYTES <= u64::from(SLOTS_PER_ZONE_LIMIT)
                && o.max_open_zones >= o.placement.min_open_zones(),
            "production preset inconsistent: {o:?}"
        );
        o
    }

    /// Tiny zones (4 slots), 32 of them, 2 open: tests reach zone boundaries, GC and
    /// out-of-space within a few hundred writes.
    pub fn test_min() -> SpaceOptions {
        let o = SpaceOptions {
            data_offset_bytes: 0,
            data_bytes: 32 * 4 * SLOT_BYTES,
            zone_bytes: 4 * SLOT_BYTES,
            zone_stride_bytes: 4 * SLOT_BYTES,
            max_open_zones: 2,
            gc_free_zones_low: 3,
            gc_free_zones_high: 5,
            gc_reserve_zones: 1,
            placement_handles: 0,
            placement: PlacementKind::Separate,
            policy: VictimPolicyKind::Greedy,
            nowa: None,
            artifact: ArtifactOptions::default(),
        };
        // Tests build on it unchecked: it must be a space `Space::new` accepts.
        debug_assert!(o.validate().is_ok(), "test_min preset invalid: {:?}", o.validate());
        o
    }

    pub fn slots_per_zone(&self) -> u32 {
        let slots = self.zone_bytes / SLOT_BYTES;
        // `validate` bounds it far below u32; unchecked options must not truncate silently.
        debug_assert!(u32::try_from(slots).is_ok(), "{slots} slots per zone");
        slots as u32
    }

    pub fn zone_count(&self) -> u32 {
        let zones = self.data_bytes / self.zone_stride_bytes.max(1);
        // `validate` bounds it by ZONE_COUNT_LIMIT; unchecked options must not truncate.
        debug_assert!(u32::try_from(zones).is_ok(), "{zones} zones");
        zones as u32
    }

    /// The same options with zones of `zone_bytes` packed back to back (stride = size), as on
    /// every conventional device.
    pub fn with_zone_bytes(self, zone_bytes: u64) -> SpaceOptions {
        // Callers pass a device's zone size: whole slots, or every slot offset is misaligned.
        debug_assert!(
            zone_bytes > 0 && zone_bytes.is_multiple_of(SLOT_BYTES),
            "zone of {zone_bytes} bytes is not whole slots"
        );
        SpaceOptions { zone_bytes, zone_stride_bytes: zone_bytes, ..self }
    }

    /// Checks every field; the error names the first bad one.
    pub fn validate(&self) -> Result<(), SpaceError> {
        let zones = self.validate_geometry()?;
        self.validate_zone_roles()?;
        // Room for data: the free target and every open zone must leave at least one zone.
        // Zones are whole strides, so the least data area is one more stride than them.
        let overhead = u64::from(self.gc_free_zones_high) + u64::from(self.max_open_zones);
        if zones <= overhead {
            let limit = Limit::AtLeast((overhead + 1).saturating_mul(self.zone_stride_bytes));
            let why = Some("room for data: gc_free_zones_high + max_open_zones + 1 whole zones");
            return Err(invalid("data_bytes", self.data_bytes, limit, why));
        }
        // What `Space::new` sizes its tables by is the count checked here.
        debug_assert_eq!(u64::from(self.zone_count()), zones, "zone count of {self:?}");
        Ok(())
    }

    /// Offsets, zone size and stride, and the data area: aligned, and within what a location
    /// can name. Returns the number of zones.
    fn validate_geometry(&self) -> Result<u64, SpaceError> {
        if !self.data_offset_bytes.is_multiple_of(SLOT_BYTES) {
            let limit = Limit::MultipleOf(SLOT_BYTES);
            return Err(invalid("data_offset_bytes", self.data_offset_bytes, limit, None));
        }
        if self.zone_bytes == 0 || !self.zone_bytes.is_multiple_of(SLOT_BYTES) {
            let limit = Limit::MultipleOf(SLOT_BYTES);
            return Err(invalid("zone_bytes", self.zone_bytes, limit, None));
        }
        if self.zone_bytes / SLOT_BYTES > u64::from(SLOTS_PER_ZONE_LIMIT) {
            let limit = Limit::AtMost(u64::from(SLOTS_PER_ZONE_LIMIT) * SLOT_BYTES);
            return Err(invalid("zone_bytes", self.zone_bytes, limit, Some("the largest zone")));
        }
        if self.zone_stride_bytes < self.zone_bytes {
            let limit = Limit::NotBelow { option: "zone_bytes", value: self.zone_bytes };
            return Err(invalid("zone_stride_bytes", self.zone_stride_bytes, limit, None));
        }
        if !self.zone_stride_bytes.is_multiple_of(SLOT_BYTES) {
            let limit = Limit::MultipleOf(SLOT_BYTES);
            return Err(invalid("zone_stride_bytes", self.zone_stride_bytes, limit, None));
        }
        if self.data_offset_bytes.checked_add(self.data_bytes).is_none() {
            let limit = Limit::AtMost(u64::MAX - self.data_offset_bytes);
            return Err(invalid(
                "data_bytes",
                self.data_bytes,
                limit,
                Some("the data area's end must fit in u64"),
            ));
        }
        let zones = self.data_bytes / self.zone_stride_bytes;
        if zones > u64::from(ZONE_COUNT_LIMIT) {
            let limit = Limit::AtMost(u64::from(ZONE_COUNT_LIMIT) * self.zone_stride_bytes);
            let why = Some("more zones than a location holds; use larger zones");
            return Err(invalid("data_bytes", self.data_bytes, limit, why));
        }
        // Every zone (and so every slot) starts 4 KiB aligned: direct I/O needs it.
        debug_assert!(
            (self.data_offset_bytes + self.zone_stride_bytes).is_multiple_of(SLOT_BYTES),
            "zones of {self:?} misaligned"
        );
        Ok(zones)
    }

    /// Open zones, GC thresholds and NoWA's units: enough zones for each role, in an order
    /// GC can keep.
    fn validate_zone_roles(&self) -> Result<(), SpaceError> {
        if self.max_open_zones < self.placement.min_open_zones() {
            let limit = Limit::AtLeast(self.placement.min_open_zones().into());
            let why = Some(self.placement.name());
            return Err(invalid("max_open_zones", self.max_open_zones.into(), limit, why));
        }
        if self.placement_handles > 0 && self.max_open_zones > u32::from(self.placement_handles) {
            let limit = Limit::NotAbove {
                option: "placement_handles",
                value: self.placement_handles.into(),
            };
            let why = Some("two zones would share an FDP handle");
            return Err(invalid("max_open_zones", self.max_open_zones.into(), limit, why));
        }
        if self.gc_reserve_zones == 0 {
            let why = Some("GC needs a zone to copy into");
            return Err(invalid("gc_reserve_zones", 0, Limit::AtLeast(1), why));
        }
        if self.gc_free_zones_low <= self.gc_reserve_zones {
            let limit =
                Limit::Above { option: "gc_reserve_zones", value: self.gc_reserve_zones.into() };
            let why = Some("or user writes exhaust the zones before GC starts");
            return Err(invalid("gc_free_zones_low", self.gc_free_zones_low.into(), limit, why));
        }
        if self.gc_free_zones_high < self.gc_free_zones_low {
            let value = self.gc_free_zones_low.into();
            let limit = Limit::NotBelow { option: "gc_free_zones_low", value };
            return Err(invalid("gc_free_zones_high", self.gc_free_zones_high.into(), limit, None));
        }
        if let Some(n) = self.nowa {
            let zero =
                [("nowa.unit_slots", n.unit_slots), ("nowa.budget_units", n.budget_units.into())]
                    .into_iter()
                    .find(|(_, v)| *v == 0);
            if let Some((field, _)) = zero {
                return Err(invalid(field, 0, Limit::AtLeast(1), None));
            }
        }
        // The order GC relies on: a reserve below the low mark, the low mark not above the high.
        debug_assert!(
            0 < self.gc_reserve_zones
                && self.gc_reserve_zones < self.gc_free_zones_low
                && self.gc_free_zones_low <= self.gc_free_zones_high,
            "GC thresholds out of order: {self:?}"
        );
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn field_of(o: SpaceOptions) -> &'static str {
        match o.validate() {
            Err(SpaceError::InvalidOptions { field, .. }) => field,
            other => panic!("expected an option error, got {other:?}"),
        }
    }

    #[test]
    fn presets_are_valid() {
        SpaceOptions::test_min().validate().unwrap();
        SpaceOptions::production(1 << 20, 3 << 30).validate().unwrap();
    }

    /// docs/internals/space.md "Memory" quotes these sizes.
    #[test]
    fn production_on_the_cns_emulator_has_239_zones() {
        let cns = flashemu::Config::preset("cns").unwrap();
        let o = SpaceOptions::production(0, cns.layout().logical_blocks * SLOT_BYTES);
        o.validate().unwrap();
        assert_eq!((o.zone_count(), o.slots_per_zone()), (239, 4096));
    }

    #[test]
    fn errors_name_the_field() {
        let base = SpaceOptions::test_min();
        assert_eq!(field_of(SpaceOptions { data_offset_bytes: 100, ..base }), "data_offset_bytes");
        assert_eq!(field_of(SpaceOptions { zone_bytes: 5000, ..base }), "zone_bytes");
        assert_eq!(field_of(SpaceOptions { zone_bytes: 0, ..base }), "zone_bytes");
        assert_eq!(field_of(SpaceOptions { zone_bytes: 64 << 30, ..base }), "zone_bytes");
        assert_eq!(field_of(SpaceOptions { max_open_zones: 0, ..base }), "max_open_zones");
        assert_eq!(field_of(SpaceOptions { gc_reserve_zones: 0, ..base }), "gc_reserve_zones");
        assert_eq!(field_of(SpaceOptions { gc_free_zones_low: 1, ..base }), "gc_free_zones_low");
        assert_eq!(field_of(SpaceOptions { gc_free_zones_high: 2, ..base }), "gc_free_zones_high");
        assert_eq!(field_of(SpaceOptions { data_bytes: 4 * 16384, ..base }), "data_bytes");
        assert_eq!(
            field_of(SpaceOptions { data_offset_bytes: u64::MAX - 4095, ..base }),
            "data_bytes"
        );
    }

    /// A data area of whole zones too few, plus part of one, is refused with the least size
    /// that has room: a size above it, not one the area already exceeds.
    #[test]
    fn too_little_room_names_a_size_the_area_is_below() {
        let base = SpaceOptions::test_min();
        let overhead = u64::from(base.gc_free_zones_high + base.max_open_zones);
        let data_bytes = overhead * base.zone_stride_bytes + base.zone_stride_bytes / 2;
        let Err(SpaceError::InvalidOptions { field, value, limit, .. }) =
            SpaceOptions { data_bytes, ..base }.validate()
        else {
            panic!("a data area of {overhead} zones and a half was accepted");
        };
        assert_eq!((field, value), ("data_bytes", data_bytes));
        assert_eq!(limit, Limit::AtLeast((overhead + 1) * base.zone_stride_bytes));
        let stride = SpaceOptions { zone_stride_bytes: base.zone_bytes + 100, ..base };
        let Err(SpaceError::InvalidOptions { limit, .. }) = stride.validate() else {
            panic!("a stride of whole zones and 100 bytes was accepted");
        };
        assert_eq!(limit, Limit::MultipleOf(SLOT_BYTES));
    }
}
