//! GC's bounds, apart from the policies so that lower files can read them.

/// Victims one GC cycle may take at most (bounds the choice and the pages it lists).
pub const VICTIMS_PER_CYCLE_MAX: usize = 16;

/// Victims whose survivors the buffer pool holds at once, at most (`gc_in_pool`): bounds the
/// draining queue and the device space waiting for write-backs; a cycle that would pass it
/// copies the oldest draining victim directly instead.
pub const DRAINING_ZONES_MAX: usize = 64;

/// With `gc_in_pool`, GC's free-zone targets are raised by up to this many zones (1/64 of
/// the zones, at least 1): the room the survivors' write-backs fill before their victims are
/// released, so GC hands victims to the pool before the zones run out, not at exhaustion.
pub const DRAIN_ROOM_ZONES_MAX: u32 = 8;

/// The zones GC's targets are raised by with `gc_in_pool`, for `zone_count` zones.
pub fn drain_room_zones(zone_count: u32) -> u32 {
    let room = (zone_count / 64).clamp(1, DRAIN_ROOM_ZONES_MAX);
    // The raise takes room from the data: past the floor of one zone, never more than 1/64.
    debug_assert!(
        room == 1 || u64::from(room) * 64 <= u64::from(zone_count),
        "drain room {room} of {zone_count} zones"
    );
    room
}
