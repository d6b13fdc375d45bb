//! Out-of-place write mode (000 sec. 2, 4.1, 6): the page store that appends write-back batches
//! to zones through the space manager (`space/`), the DB GC mechanism, and the page map's
//! persistence. Protocols and invariants: docs/design.md §9.
pub(crate) mod free;
mod gc;
pub(crate) mod journal;
mod layout;
mod options;
mod store;

pub use layout::{Layout, GC_GROUP, USER_GROUP};
pub use options::{GcZoneCounts, GcZones, OutOfPlaceOptions};
pub use store::OutOfPlaceStore;

use crate::space::SpaceCounters;

/// What the out-of-place store reports (`Db::stats().out_of_place`).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct OutOfPlaceStats {
    /// Slots issued by purpose, GC victims and their valid slots (DB WAF by slots).
    pub space: SpaceCounters,
    pub zone_count: u32,
    pub slots_per_zone: u32,
    pub zones_empty: u32,
    pub zones_pending_reset: u32,
    pub zones_open: u32,
    /// Zones holding data: neither empty nor waiting for reset.
    pub zones_used: u32,
    pub mapped_pages: u64,
    /// Free pages kept as headers only (no slot).
    pub free_pages: u64,
    pub gc_cycles: u64,
    pub gc_moved_pages: u64,
    /// Of the moved pages: copied from a clean pool frame (no device read).
    pub gc_pool_pages: u64,
    /// Copied from a dirty pool frame, written in its newer version (frame cleaned).
    pub gc_pool_dirty_pages: u64,
    /// Read from the device and loaded into the pool (GC as prefetcher).
    pub gc_loaded_pages: u64,
    /// Read from the device into GC's own buffer only (no clean frame free, resident but
    /// latched, or no pool bound).
    pub gc_private_reads: u64,
    pub zones_reset: u64,
    pub snapshots: u64,
    /// Journal flushes made to release zones (outside checkpoints and snapshots).
    pub journal_flushes: u64,
    pub snapshot_bytes: u64,
    /// LSN of the last map change and of the last durable snapshot.
    pub map_lsn: u64,
    pub durable_lsn: u64,
}

impl OutOfPlaceStats {
    fn of(st: &store::State) -> OutOfPlaceStats {
        let s = &st.space;
        let empty = s.empty_zone_count();
        let pending = s.pending_reset_zone_count();
        OutOfPlaceStats {
            space: s.counters(),
            zone_count: s.zone_count(),
            slots_per_zone: s.slots_per_zone(),
            zones_empty: empty,
            zones_pending_reset: pending,
            zones_open: s.open_zone_count(),
            zones_used: s.zone_count() - empty - pending,
            mapped_pages: s.live_slots(),
            free_pages: st.free.count() as u64,
            gc_cycles: st.gc_cycles,
            gc_moved_pages: st.gc_moved_pages,
            gc_pool_pages: st.gc_sources.from_pool,
            gc_pool_dirty_pages: st.gc_sources.dirty_from_pool,
            gc_loaded_pages: st.gc_sources.loaded,
            gc_private_reads: st.gc_sources.private_reads,
            zones_reset: st.zones_reset,
            snapshots: st.snapshots,
            journal_flushes: st.journal_flushes,
            snapshot_bytes: st.snapshot_bytes,
            map_lsn: st.map_lsn,
            durable_lsn: st.durable_lsn,
        }
    }
}
