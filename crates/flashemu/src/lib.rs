//! flashemu: a flash SSD emulator that counts every physical program and erase.
//!
//! The emulator is Wafer's measuring instrument: host writes go in, and the counters say how many
//! bytes the flash really programmed (host and GC separately), how many blocks were erased and
//! why. It models a conventional page-mapping FTL with superblocks and GC, multi-stream and FDP
//! placement, and ZNS zones, over a data store that keeps the bytes (memory or file) or only the
//! metadata (for fast simulation).
//!
//! Addresses are logical blocks (LBAs) of [`LBA_BYTES`] = 4 KiB, whatever the flash page size.

mod cczns;
pub mod config;
pub mod counters;
pub mod error;
mod ftl;
#[doc(hidden)]
pub mod fuzzing;
pub mod layout;
pub mod rng;
pub mod ssd;
mod store;
pub mod timing;
mod zns;

pub use cczns::{lay_out, ChunkPlacement, CwLayout, CwOutcome, DrChunk, DrOutcome, CW_CHUNKS_MAX};
pub use config::{
    CcznsConfig, Config, FdpIsolation, GcConfig, GcPolicy, Geometry, Interface, PlanConfig,
    PlanGcTrigger, PlanMapUnit, PlanScheme, StoreKind, PRESET_NAMES,
};
pub use counters::Counters;
pub use error::{ConfigError, EmuError};
pub use layout::Layout;
pub use ssd::Ssd;
pub use timing::{TimingConfig, TimingMode, TimingReport};

/// Logical block size in bytes. Every host address and length is in these units.
pub const LBA_BYTES: u64 = 4096;

/// Placement hint carried by a write: a stream id (multi-stream) or an FDP placement id.
/// Ignored by a conventional device without streams; rejected by ZNS (zones place data).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Placement {
    #[default]
    None,
    /// Multi-stream id, `0..streams`.
    Stream(u16),
    /// FDP placement id, mapped to a reclaim unit handle, `0..ruh_count`.
    Fdp(u16),
}

/// ZNS zone state (NVMe ZNS terms).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ZoneState {
    Empty,
    ImplicitlyOpen,
    ExplicitlyOpen,
    Closed,
    Full,
}

/// What a host reads from a zone report.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ZoneInfo {
    pub zone_id: u32,
    pub start_lba: u64,
    pub size_blocks: u64,
    pub capacity_blocks: u64,
    /// The block holding the write pointer (equal to it while the pointer is block-aligned).
    pub write_pointer_lba: u64,
    /// The byte-granular write pointer, bytes from the device start (002 sec. III-D).
    pub write_pointer_bytes: u64,
    /// Opened in padding mode (002 sec. III-E): compressed writes end block-aligned.
    pub padding: bool,
    pub state: ZoneState,
}

/// FDP configuration as a host reads it from the FDP configurations log page.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FdpReport {
    pub reclaim_unit_bytes: u64,
    pub ruh_count: u32,
    pub isolation: FdpIsolation,
}

/// FDP statistics log page: host bytes written and media bytes written.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct FdpStats {
    pub host_bytes_written: u64,
    pub media_bytes_written: u64,
    pub media_bytes_erased: u64,
}
