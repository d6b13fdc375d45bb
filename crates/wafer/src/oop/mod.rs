//! Out-of-place write mode (000 sec. 2, 4.1, 6): the page store that appends write-back batches
//! to zones through the space manager (`space/`), the DB GC mechanism, and the page map's
//! persistence. Protocols and invariants: docs/internals/oop.md.
mod append;
mod append_steps;
mod cached_read;
pub mod codec;
mod device_append;
pub(crate) mod free;
mod gc;
mod grow;
pub(crate) mod journal;
mod layout;
mod options;
mod orchestrate;
mod state;
mod store;
mod stored_cache;

#[cfg(test)]
mod gdt_bound_tests;
#[cfg(test)]
mod model_device;
#[cfg(test)]
mod sim_tests;

pub use layout::{journal_bytes_on_log, layout_bytes_on, metadata_device_bytes, Layout};
pub use options::{GcZoneCounts, GcZones, OutOfPlaceOptions};
pub use store::OutOfPlaceStore;

pub use crate::pagestore::OutOfPlaceStats;

/// The stats of a store state.
pub(crate) fn stats_of(inner: &state::Inner, st: &state::State) -> OutOfPlaceStats {
    let (layout, capacity_bytes) = (&inner.layout, inner.device.capacity_bytes());
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
        gc_blob_pages: st.gc_sources.blob_pages,
        gc_pool_survivors: st.gc_sources.to_pool,
        zones_draining: st.space.draining_zone_count(),
        zones_reset: st.zones_reset,
        snapshots: st.snapshots,
        journal_flushes: st.journal_flushes,
        snapshot_bytes: st.snapshot_bytes,
        map_lsn: st.map_lsn,
        durable_lsn: st.durable_lsn,
        metadata_device_bytes: layout.metadata_bytes(),
        // The zones the store has now: a growing file adds them after the layout at open.
        unused_device_bytes: capacity_bytes.saturating_sub(
            layout.superblock_offset_bytes + layout.metadata_bytes() + s.options().data_bytes,
        ),
        codec: inner.codec.snapshot(),
    }
}
