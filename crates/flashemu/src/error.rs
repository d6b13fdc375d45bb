//! Typed errors. Every violation changes nothing on the device.
use thiserror::Error;

/// A configuration that cannot describe a device. Names the offending field.
#[derive(Debug, Error, Clone, PartialEq)]
pub enum ConfigError {
    #[error("invalid value for `{field}`: {reason}")]
    Invalid { field: &'static str, reason: String },
    #[error("unknown configuration key `{0}`")]
    UnknownKey(String),
    #[error("unknown preset `{0}` (known: cns, ent, zns, fdp, tiny, plan)")]
    UnknownPreset(String),
    #[error("cannot parse configuration: {0}")]
    Parse(String),
}

/// A command the device refuses, or a failure of its data store.
#[derive(Debug, Error)]
pub enum EmuError {
    #[error("LBA range {lba}+{blocks} is outside the device's {capacity_blocks} logical blocks")]
    OutOfRange { lba: u64, blocks: u64, capacity_blocks: u64 },
    #[error("buffer of {len} bytes is not a whole number of 4 KiB blocks matching the request")]
    BadBuffer { len: usize },
    #[error("placement {0} is not configured on this device")]
    BadPlacement(String),
    #[error("device is full: no free flash to write to (live data exceeds physical capacity)")]
    NoSpace,
    #[error("operation needs a {needed} device")]
    WrongInterface { needed: &'static str },
    #[error("zone {zone} does not exist (device has {zone_count} zones)")]
    NoSuchZone { zone: u32, zone_count: u32 },
    #[error("write to zone {zone} at LBA {lba} is not at the write pointer {write_pointer}")]
    NotAtWritePointer { zone: u32, lba: u64, write_pointer: u64 },
    #[error("write crosses the boundary of zone {zone}")]
    ZoneBoundary { zone: u32 },
    #[error("zone {zone} is full")]
    ZoneFull { zone: u32 },
    #[error("zone {zone} is in state {state}, which does not allow {op}")]
    InvalidZoneState { zone: u32, state: &'static str, op: &'static str },
    #[error("too many open zones (limit {limit})")]
    TooManyOpenZones { limit: u32 },
    #[error("too many active zones (limit {limit})")]
    TooManyActiveZones { limit: u32 },
    #[error("read of LBA {lba} in zone {zone} is beyond the write pointer")]
    ReadBeyondWritePointer { zone: u32, lba: u64 },
    #[error("compressed write to zone {zone} at byte {byte} is not at the write pointer (byte {write_pointer_bytes})")]
    NotAtByteWritePointer { zone: u32, byte: u64, write_pointer_bytes: u64 },
    #[error("chunk of {bytes} bytes cannot fit in a zone of {zone_capacity_bytes} bytes")]
    ChunkTooLarge { bytes: u64, zone_capacity_bytes: u64 },
    #[error("bad chunk list: {0}")]
    BadChunks(String),
    #[error("out-of-band area of flash page {page} is full ({entries} chunk entries)")]
    OobFull { page: u64, entries: u32 },
    #[error("illegal decompressed read at byte {byte}: {reason}")]
    IllegalRead { byte: u64, reason: String },
    #[error(
        "read buffer of {len} bytes is smaller than the {needed} bytes the chunk decompresses to"
    )]
    BufferTooSmall { needed: u64, len: usize },
    #[error("decompressed read needs a store that keeps bytes (memory or file), not `none`")]
    NoStoredData,
    #[error("chunk at byte {byte} is corrupt: {reason}")]
    CorruptChunk { byte: u64, reason: String },
    #[error("data store I/O error: {0}")]
    Store(#[from] std::io::Error),
    #[error(transparent)]
    Config(#[from] ConfigError),
}
