//! Why options were refused, by option and limit: a caller (or a test) matches on which option
//! was wrong instead of parsing a message, and the message still says what would be accepted.
use thiserror::Error;

use super::limit::Limit;
use crate::options::WriteMode;
use crate::space::SpaceError;

/// Options a database (or one of its layers) refused, before anything was written.
#[derive(Debug, Error)]
pub enum OptionsError {
    /// One option outside the values it may take.
    #[error("{option} is {value}; it must be {limit}")]
    OutOfRange { option: &'static str, value: u64, limit: Limit },
    #[error(
        "doublewrite area of {slots} slots (data_offset_bytes {data_offset_bytes}) is smaller \
         than an eviction batch of {eviction_batch_pages} pages"
    )]
    DoublewriteArea { slots: u64, data_offset_bytes: u64, eviction_batch_pages: u64 },
    #[error(
        "doublewrite needs data_offset_bytes of at least two 4 KiB blocks, got {data_offset_bytes}"
    )]
    DoublewriteOffset { data_offset_bytes: u64 },
    #[error(
        "buffer pool of {capacity_bytes} bytes: need {frames_min} to {frames_max} frames of \
         {frame_bytes}"
    )]
    PoolFrames { capacity_bytes: u64, frames_min: u64, frames_max: u64, frame_bytes: usize },
    /// The machine would not map memory for the pool's frames.
    #[error("buffer pool of {capacity_bytes} bytes: no memory for its frames: {source}")]
    PoolMemory { capacity_bytes: u64, source: std::io::Error },
    #[error("device of {pages} pages exceeds the page table's {max}")]
    PageTable { pages: u64, max: u64 },
    #[error("device holds {pages} pages; a database needs at least {min}")]
    DeviceTooSmall { pages: u64, min: u64 },
    #[error("device of {capacity_bytes} bytes ends before the superblock at {offset}")]
    SuperblockBeyondDevice { capacity_bytes: u64, offset: u64 },
    #[error(
        "out-of-place mode on a zoned device needs a conventional region for its superblock and \
         map snapshots: open it as a `ZonedVolume` behind a conventional metadata device"
    )]
    ZonedWithoutVolume,
    #[error(
        "in-place mode overwrites pages where they are, which a zoned device refuses (a zone is \
         written only at its write pointer); use a conventional or FDP device"
    )]
    ZonedInPlace,
    #[error(
        "the database was created in write mode {stored:?} and cannot be opened in {wanted:?}; \
         open it with `write_mode: WriteMode::{stored:?}`"
    )]
    WriteMode { stored: WriteMode, wanted: WriteMode },
    /// The superblock's write-mode byte disagrees with the options (checked again at startup).
    #[error("database uses write mode {stored}, options ask for {wanted:?}")]
    StoredWriteMode { stored: u8, wanted: WriteMode },
    #[error("database keeps a WAL: open it with its WAL device (Db::open_on_devices)")]
    WalDeviceMissing,
    #[error("database was created without a WAL: open it with Db::open_on")]
    WalDeviceUnexpected,
    #[error(
        "out-of-place: max_fill_percent {value} not in 1..={max} (above 99 only with compression)"
    )]
    FillPercent { value: u32, max: u32 },
    #[error("out-of-place: fdp placement needs a device that reports FDP handles")]
    FdpWithoutHandles,
    #[error("out-of-place: device of {capacity_bytes} bytes has no data area")]
    NoDataArea { capacity_bytes: u64 },
    #[error(
        "out-of-place: device of {capacity_bytes} bytes has more page ids than the free-page \
         section's 32-bit ids hold"
    )]
    TooManyPageIds { capacity_bytes: u64 },
    #[error(
        "out-of-place: device of {capacity_bytes} bytes has no room for zones of {zone_bytes} \
         after {metadata_bytes} bytes of metadata"
    )]
    NoRoomForZones { capacity_bytes: u64, zone_bytes: u64, metadata_bytes: u64 },
    #[error(
        "out-of-place: a file that grows cannot model an SSD's GC units (NoWA) or placement \
         handles (FDP); leave max_file_bytes unset"
    )]
    GrowableWithDeviceUnits,
    #[error("out-of-place: {layout_bytes} bytes hold no data zone")]
    NoDataZone { layout_bytes: u64 },
    #[error("out-of-place: a map journal of {bytes} bytes is too small (4 blocks at least)")]
    JournalTooSmall { bytes: u64 },
    #[error(
        "out-of-place on ZNS: the superblock and map snapshots are rewritten in place, which a \
         sequential zone refuses: open the zoned device as a ZonedVolume behind a conventional \
         metadata device"
    )]
    ZnsWithoutConventional,
    #[error("out-of-place on ZNS: NoWA and FDP are for conventional SSDs; a ZNS SSD never copies")]
    ZnsDeviceUnits,
    #[error(
        "out-of-place on ZNS: {open_zones} open zones exceed the device's limit of {limit} \
         open/active zones"
    )]
    ZnsOpenZones { open_zones: u32, limit: u32 },
    #[error(
        "out-of-place on ZNS: zone_bytes {zone_bytes} ({zones_per_gc_unit} per GC unit) is not \
         the device's zone capacity {zone_capacity_bytes}"
    )]
    ZnsZoneBytes { zone_bytes: u64, zones_per_gc_unit: u32, zone_capacity_bytes: u64 },
    #[error(
        "out-of-place on ZNS: the metadata takes {metadata_bytes} bytes, the conventional region \
         {conventional_bytes}; give the volume a larger metadata device"
    )]
    ZnsMetadata { metadata_bytes: u64, conventional_bytes: u64 },
    #[error("out-of-place on ZNS: no sequential zones")]
    ZnsNoSequentialZones,
    #[error("out-of-place on ZNS: no layout")]
    ZnsNoLayout,
    #[error(
        "compression = device: the device does not compress (it reports no in-storage \
         compression); use a CCZNS ZNS SSD (emulator: interface = zns, cczns = on, \
         cczns.chunk_align_bytes = 32) or compress on the host (lz4, zstd)"
    )]
    DeviceDoesNotCompress,
    #[error("compression = device: compressed writes are zone commands; the device is not zoned")]
    CompressionNotZoned,
    #[error(
        "compression = device: the device places chunks at multiples of {chunk_align_bytes} \
         bytes; the page map addresses them in {unit_bytes}-byte units \
         (cczns.chunk_align_bytes = {unit_bytes})"
    )]
    ChunkAlign { chunk_align_bytes: u32, unit_bytes: u32 },
    /// The space manager's own check of its options (`SpaceError::InvalidOptions`).
    #[error(transparent)]
    Space(SpaceError),
}
