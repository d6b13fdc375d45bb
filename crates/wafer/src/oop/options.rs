//! Out-of-place write mode configuration: zone size, GC thresholds and policy, how full the
//! page-id space may get, and whether GC also runs in a background thread. A plain value with
//! named presets; `Options::out_of_place` carries it.
use crate::space::VictimPolicyKind;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct OutOfPlaceOptions {
    /// GC unit; a multiple of 4096. On a zoned device it must equal the device zone size.
    pub zone_bytes: u64,
    /// Page ids are capped at this share of the data area's slots, so live data can never
    /// exceed what GC can keep up with; the allocator refuses beyond it with `OutOfSpace`
    /// before anything changes (000 runs at 90%).
    pub max_fill_percent: u32,
    /// GC runs when free zones (empty or awaiting durability) fall below this ...
    pub gc_free_zones_low: u32,
    /// ... and stops when they reach this.
    pub gc_free_zones_high: u32,
    /// Empty zones only GC copyback may open.
    pub gc_reserve_zones: u32,
    pub policy: VictimPolicyKind,
    /// FDP reclaim unit handles: zone z writes with placement `Fdp(z % n)`; 0 = no hint.
    pub placement_handles: u16,
    /// Pages GC reads and rewrites per device batch (bounds its buffer: this x 4 KiB).
    pub gc_batch_pages: u32,
    /// A background thread starts GC once free zones fall below `gc_free_zones_high`, so
    /// writers rarely wait for foreground GC. Off in `test_min` so byte counts are
    /// deterministic.
    pub background_gc: bool,
}

impl OutOfPlaceOptions {
    /// 16 MiB zones (the emulator's `cns` superblock: one DB zone = one SSD GC unit, 000 sec.
    /// 5.3), GC between 4 and 8 free zones, 95% fill cap, background GC.
    pub fn production() -> OutOfPlaceOptions {
        OutOfPlaceOptions {
            zone_bytes: crate::space::CNS_SUPERBLOCK_BYTES,
            max_fill_percent: 95,
            gc_free_zones_low: 4,
            gc_free_zones_high: 8,
            gc_reserve_zones: 2,
            policy: VictimPolicyKind::Greedy,
            placement_handles: 0,
            gc_batch_pages: 256,
            background_gc: true,
        }
    }

    /// Zones of 4 pages, GC between 3 and 5 free zones, small GC batches, no background
    /// thread: tests hit zone boundaries, GC and its edge cases within a few hundred writes.
    pub fn test_min() -> OutOfPlaceOptions {
        OutOfPlaceOptions {
            zone_bytes: 4 * 4096,
            max_fill_percent: 90,
            gc_free_zones_low: 3,
            gc_free_zones_high: 5,
            gc_reserve_zones: 1,
            policy: VictimPolicyKind::Greedy,
            placement_handles: 0,
            gc_batch_pages: 3,
            background_gc: false,
        }
    }
}

impl Default for OutOfPlaceOptions {
    fn default() -> OutOfPlaceOptions {
        OutOfPlaceOptions::production()
    }
}
