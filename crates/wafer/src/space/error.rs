//! Typed errors of the space manager. Out of space is a value the caller can act on (run GC,
//! flush the log, or give up), never a panic; snapshot corruption names what was wrong.
use thiserror::Error;

use super::map::PageId;
use super::zone::Lsn;
use crate::Limit;

#[derive(Debug, Error)]
pub enum SpaceError {
    /// `field` holds `value`, outside `limit`; `why` says what the limit protects when the
    /// limit alone does not.
    #[error("invalid space option `{field}`: {value} must be {limit}{}", because(.why))]
    InvalidOptions { field: &'static str, value: u64, limit: Limit, why: Option<&'static str> },
    /// No empty zone can take the batch, none is waiting for the log, and no full zone holds an
    /// invalid slot for GC to reclaim: live data (plus the zones GC keeps in reserve and the
    /// open zones' tails) fills the data area. Final: fail the write.
    #[error(
        "out of space: a batch of {needed_slots} slots does not fit; {free_slots} slots free, \
         {live_slots} of {capacity_slots} slots hold live pages"
    )]
    OutOfSpace { needed_slots: u64, free_slots: u64, live_slots: u64, capacity_slots: u64 },
    /// The batch needs `zones_short` more empty zones than are free, and GC can make them: some
    /// full zone holds invalid slots. Run GC cycles (`plan_gc` ...) and retry.
    #[error("{zones_short} more free zones needed; GC can reclaim them")]
    NeedsGc { zones_short: u32 },
    /// Enough zones were freed by GC, but they may be reused only once the log is durable up to
    /// `lsn_needed` (the records that moved their pages out). Flush the log, call
    /// `release_ready`, retry.
    #[error("free zones wait for the log to be durable up to lsn {lsn_needed}")]
    AwaitingDurability { lsn_needed: Lsn },
    #[error(transparent)]
    Snapshot(#[from] SnapshotError),
    /// The map recovered from snapshot + log is not a valid placement.
    #[error("recovered map is inconsistent at page {pid}: {reason}")]
    CorruptMap { pid: PageId, reason: String },
}

/// Every way a map snapshot's bytes can be wrong. Decoding never panics.
#[derive(Debug, Error, PartialEq, Eq)]
pub enum SnapshotError {
    #[error("snapshot of {len} bytes is not a positive multiple of 4096")]
    BadLength { len: usize },
    #[error("snapshot block {block}: bad magic")]
    BadMagic { block: u32 },
    #[error("snapshot block {block}: unsupported version {version}")]
    BadVersion { block: u32, version: u16 },
    #[error("snapshot block {block}: checksum mismatch")]
    BadChecksum { block: u32 },
    #[error("snapshot block {block}: {reason}")]
    BadBlock { block: u32, reason: &'static str },
    #[error(
        "snapshot block {block} belongs to the snapshot at LSN {lsn}, not {expected}: the \
         snapshot was torn"
    )]
    ForeignBlock { block: u32, lsn: u64, expected: u64 },
    #[error("snapshot header: {reason}")]
    BadHeader { reason: &'static str },
    #[error(
        "snapshot geometry {found_zone_count} zones x {found_slots_per_zone} slots does not match \
         the configured {zone_count} x {slots_per_zone}: open the database with the zone size it \
         was created with (zone_bytes = {} on a file)",
        u64::from(*found_slots_per_zone) * crate::page::PAGE_SIZE as u64
    )]
    GeometryMismatch {
        found_zone_count: u32,
        found_slots_per_zone: u32,
        zone_count: u32,
        slots_per_zone: u32,
    },
    #[error("snapshot entry for page {pid}: invalid location {raw:#018x}")]
    BadLocation { pid: PageId, raw: u64 },
    #[error("snapshot says {expected} mapped pages, found {found}")]
    MappedCountMismatch { expected: u64, found: u64 },
}

/// Convenience for building option errors.
pub(super) fn invalid(
    field: &'static str,
    value: u64,
    limit: Limit,
    why: Option<&'static str>,
) -> SpaceError {
    // An error must show a value its limit refuses, or it tells the user nothing to change.
    debug_assert!(
        match limit {
            Limit::AtLeast(min) | Limit::NotBelow { value: min, .. } => value < min,
            Limit::AtMost(max) => value > max,
            Limit::MultipleOf(unit) => unit > 0 && (value == 0 || !value.is_multiple_of(unit)),
            Limit::Within { min, max } => min <= max && !(min..=max).contains(&value),
            Limit::Below { value: bound, .. } => value >= bound,
            Limit::Above { value: bound, .. } => value <= bound,
            Limit::NotAbove { value: max, .. } => value > max,
        },
        "option `{field}` = {value} reported against {limit}, which it meets"
    );
    SpaceError::InvalidOptions { field, value, limit, why }
}

fn because(why: &Option<&'static str>) -> String {
    // Shown after a colon: an empty reason would leave the message dangling.
    debug_assert!(why.is_none_or(|w| !w.is_empty()), "an empty reason");
    why.map(|w| format!(": {w}")).unwrap_or_default()
}
