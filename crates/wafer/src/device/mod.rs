//! The device layer: one small trait every write path uses, and its backends.
//!
//! Calls are positional and batched, synchronous to the caller. A batch is handed over whole so a
//! backend can submit it at once (io_uring) and so the out-of-place write path can append a whole
//! eviction batch with one sequential write. Every write carries a [`WritePurpose`], counted where
//! the write is issued (see [`crate::stats::IoStats`]), and a placement hint for multi-stream/FDP.
//!
//! The trait speaks only the engine's own types ([`Placement`], [`ZoneInfo`], [`DeviceError`]);
//! each backend converts to and from its own. The flash emulator's telemetry (flash counters,
//! device time, the FDP log) is the exception, present with the `emulator` feature only.
use thiserror::Error;

/// Where a write should go on a device that separates data by lifetime: a multi-stream id or an
/// FDP placement id. Devices without streams or FDP ignore it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum Placement {
    #[default]
    None,
    /// Multi-stream id, `0..streams`.
    Stream(u16),
    /// FDP placement id, mapped by the device to a reclaim unit handle.
    Fdp(u16),
}

/// Device I/O unit: every offset and length the engine issues is a multiple of this.
pub const BLOCK_BYTES: u64 = 4096;

/// Why a write was issued. The accounting of every report is built on this tag.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[repr(u8)]
pub enum WritePurpose {
    /// Dirty page written back by eviction.
    UserEviction = 0,
    /// Dirty page written back by a checkpoint.
    UserCheckpoint = 1,
    /// Doublewrite-area copy (in-place mode).
    Doublewrite = 2,
    /// DB GC copyback (out-of-place mode).
    GcCopy = 3,
    /// NoWA compensation writes.
    Compensation = 4,
    /// Padding to fill a zone or a 4 KiB slot.
    Padding = 5,
    /// Write-ahead log.
    Wal = 6,
    /// Engine metadata: superblock, catalog, map snapshots.
    Metadata = 7,
    /// A value stored out of line (`crate::blob`), written once per version.
    Blob = 8,
}

impl WritePurpose {
    pub const COUNT: usize = 9;
    pub const ALL: [WritePurpose; Self::COUNT] = [
        WritePurpose::UserEviction,
        WritePurpose::UserCheckpoint,
        WritePurpose::Doublewrite,
        WritePurpose::GcCopy,
        WritePurpose::Compensation,
        WritePurpose::Padding,
        WritePurpose::Wal,
        WritePurpose::Metadata,
        WritePurpose::Blob,
    ];
    pub fn name(self) -> &'static str {
        match self {
            WritePurpose::UserEviction => "user_eviction",
            WritePurpose::UserCheckpoint => "user_checkpoint",
            WritePurpose::Doublewrite => "doublewrite",
            WritePurpose::GcCopy => "gc_copy",
            WritePurpose::Compensation => "compensation",
            WritePurpose::Padding => "padding",
            WritePurpose::Wal => "wal",
            WritePurpose::Metadata => "metadata",
            WritePurpose::Blob => "blob",
        }
    }
}

/// Serialises a per-purpose array as a map keyed by [`WritePurpose::name`] (stats in JSON).
pub(crate) fn serialize_by_purpose<S: serde::Serializer>(
    by_purpose: &[u64; WritePurpose::COUNT],
    s: S,
) -> Result<S::Ok, S::Error> {
    use serde::ser::SerializeMap;
    let mut map = s.serialize_map(Some(WritePurpose::COUNT))?;
    for p in WritePurpose::ALL {
        map.serialize_entry(p.name(), &by_purpose[p as usize])?;
    }
    map.end()
}

/// One positional write of a batch.
#[derive(Debug, Clone, Copy)]
pub struct WriteOp<'a> {
    pub offset: u64,
    pub data: &'a [u8],
    pub purpose: WritePurpose,
    pub placement: Placement,
}

/// One positional read of a batch.
#[derive(Debug)]
pub struct ReadOp<'a> {
    pub offset: u64,
    pub buf: &'a mut [u8],
}

#[derive(Debug, Error)]
pub enum DeviceError {
    #[error("I/O error {op} at offset {offset}: {source}")]
    Io { op: &'static str, offset: u64, source: std::io::Error },
    #[error(
        "request at offset {offset} length {len} is outside the device ({capacity_bytes} bytes)"
    )]
    OutOfRange { offset: u64, len: u64, capacity_bytes: u64 },
    #[error("request at offset {offset} length {len} is not aligned to {align} bytes")]
    Misaligned { offset: u64, len: u64, align: u64 },
    #[error("device is full")]
    NoSpace,
    #[error("injected fault: {0}")]
    Injected(String),
    #[error("device lost power (simulated crash); reopen to continue")]
    PowerLost,
    #[error(
        "zone append landed at offset {landed}, the host expected {expected}: host and device \
         disagree about the zone's write pointer"
    )]
    AppendMisplaced { expected: u64, landed: u64 },
    #[error("operation not supported by this device: {0}")]
    Unsupported(&'static str),
    #[error("decompressed read at offset {offset} refused: {reason}")]
    IllegalRead { offset: u64, reason: String },
    #[error("compressed write at offset {offset}: the device's placement disagrees with the host: {reason}")]
    CompressedWriteMismatch { offset: u64, reason: String },
    /// The backend refused or failed a command for a reason of its own (a zone command its
    /// zone's state does not allow, a placement it does not offer, a configuration it cannot
    /// build), in its own words; `source` is its error, for a caller that knows the backend.
    #[error("device {op}: {source}")]
    Backend { op: &'static str, source: Box<dyn std::error::Error + Send + Sync> },
}

/// One zone of a zone report: where it is, where its next write goes, and its condition.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ZoneInfo {
    /// The zone's number, as the zone commands name it.
    pub zone: u32,
    /// Byte offset of the zone's first block.
    pub start: u64,
    /// Byte offset of the zone's write pointer: `start` when empty; byte-granular after
    /// compressed writes, block-aligned otherwise.
    pub write_pointer: u64,
    pub condition: ZoneCondition,
}

/// A zone's condition in a zone report (the block layer's word for the ZNS zone state).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ZoneCondition {
    /// Nothing written since the last reset.
    Empty,
    /// Written and still writable: open or closed in ZNS terms, counting against the device's
    /// active zones.
    Active,
    /// Written to capacity or finished: no write lands until a reset.
    Full,
}

/// Zoned operations, present on zoned backends only.
pub trait Zoned: Send + Sync {
    /// Address stride of a zone: zone `z` starts at byte `z * zone_bytes()`.
    fn zone_bytes(&self) -> u64;
    /// Writable bytes of a zone (ZNS zone capacity, at most `zone_bytes`).
    fn zone_capacity_bytes(&self) -> u64 {
        self.zone_bytes()
    }
    fn zone_count(&self) -> u32;
    /// Leading zones that are conventional (written anywhere, never appended to or reset).
    fn conventional_zones(&self) -> u32 {
        0
    }
    /// Appends at the zone's write pointer, returns the byte offset written.
    fn zone_append(
        &self,
        zone: u32,
        data: &[u8],
        purpose: WritePurpose,
    ) -> Result<u64, DeviceError>;
    /// Appends several buffers, each to its zone, submitted together: the device may carry them
    /// out concurrently, and appends to one zone land in submission order. Returns each one's
    /// byte offset. Backends without a queue carry them out one after the other.
    fn zone_append_batch(&self, ops: &[ZoneAppend<'_>]) -> Result<Vec<u64>, DeviceError> {
        ops.iter().map(|op| self.zone_append(op.zone, op.data, op.purpose)).collect()
    }
    fn zone_reset(&self, zone: u32) -> Result<(), DeviceError>;
    fn zone_finish(&self, zone: u32) -> Result<(), DeviceError>;
    /// Every sequential zone (a volume's conventional zones are not reported).
    fn report_zones(&self) -> Result<Vec<ZoneInfo>, DeviceError>;
    /// CCZNS compressed write (002 sec. III-B, C): the device compresses each chunk and packs
    /// the results from byte `offset`, which must be its zone's byte write pointer; see
    /// [`CwDone`] for a zone that fills. Only devices reporting
    /// [`DeviceCapabilities::in_storage_compression`] have it.
    fn compressed_write(
        &self,
        _offset: u64,
        _chunks: &[CwChunk<'_>],
    ) -> Result<CwDone, DeviceError> {
        Err(DeviceError::Unsupported("compressed write (no in-storage compression)"))
    }
    /// CCZNS single-chunk decompressed read: the chunk starting at byte `offset` whose write
    /// reported `feedback_bytes`, decompressed into the front of `buf`; returns its length.
    /// A read that names no chunk or another size is refused (`IllegalRead` or the device's
    /// own error) and reads nothing.
    fn decompressed_read(
        &self,
        _offset: u64,
        _feedback_bytes: u32,
        _buf: &mut [u8],
    ) -> Result<usize, DeviceError> {
        Err(DeviceError::Unsupported("decompressed read (no in-storage compression)"))
    }
    /// Opens an empty zone as a padding zone (002 sec. III-E): the last chunk of every
    /// compressed write ends on a block boundary, its feedback size covering the padding.
    fn zone_open_padding(&self, _zone: u32) -> Result<(), DeviceError> {
        Err(DeviceError::Unsupported("padding zones (no in-storage compression)"))
    }
}

/// One chunk of a [`Zoned::compressed_write`], tagged for the accounting like any write.
#[derive(Debug, Clone, Copy)]
pub struct CwChunk<'a> {
    pub data: &'a [u8],
    pub purpose: WritePurpose,
}

/// Where a compressed write put one chunk.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CwPlaced {
    /// Byte offset of the chunk's first byte.
    pub offset: u64,
    /// Bytes it occupies (compressed, or raw when compression did not shrink it).
    pub stored_bytes: u32,
    /// The size a decompressed read must name: the stored size rounded up to the device's
    /// placement unit, and for a write's last chunk in a padding zone up to the next block.
    pub feedback_bytes: u32,
}

/// What a compressed write did: the chunks written, a prefix of those sent. Fewer than sent
/// when the next one did not fit the rest of the zone: the device then padded the zone to its
/// end and finished it (`zone_finished`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CwDone {
    pub chunks: Vec<CwPlaced>,
    /// The zone's byte write pointer afterwards.
    pub write_pointer: u64,
    pub zone_finished: bool,
}

/// A device that compresses what it stores (CCZNS): the commands of [`Zoned`] it offers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct InStorageCompression {
    /// Chunks start at multiples of this (1: byte-granular, as 002).
    pub chunk_align_bytes: u32,
}

/// One append of a [`Zoned::zone_append_batch`].
#[derive(Debug, Clone, Copy)]
pub struct ZoneAppend<'a> {
    pub zone: u32,
    pub data: &'a [u8],
    pub purpose: WritePurpose,
}

/// What a device tells the engine about itself (000 sec. 5): the unit its GC reclaims, FDP and
/// zone geometry, in-storage compression. Unknown facts are None; the engine falls back to its
/// options (or, for the GC unit, to inference).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct DeviceCapabilities {
    /// Bytes the device's own GC reclaims as one unit (an SSD superblock), when known.
    pub gc_unit_bytes: Option<u64>,
    pub fdp: Option<FdpGeometry>,
    pub zones: Option<ZoneGeometry>,
    /// The device compresses what it stores (CCZNS compressed writes), and how it places chunks.
    pub in_storage_compression: Option<InStorageCompression>,
    /// Flash held beyond the logical capacity (over-provisioning), when known.
    pub spare_bytes: Option<u64>,
}

/// Flexible data placement: reclaim unit size and the handles a write may name.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FdpGeometry {
    pub reclaim_unit_bytes: u64,
    pub handles: u16,
}

/// A zoned device's zones and limits.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ZoneGeometry {
    /// Address stride of a zone.
    pub zone_bytes: u64,
    /// Writable bytes per zone (at most `zone_bytes`).
    pub zone_capacity_bytes: u64,
    /// Zones counted in `zone_count`, including the leading conventional ones.
    pub zone_count: u32,
    /// Leading zones that take writes anywhere (a [`ZonedVolume`]'s metadata device): zones
    /// `0..conventional_zones`. A bare ZNS SSD has none.
    pub conventional_zones: u32,
    pub max_open_zones: u32,
    pub max_active_zones: u32,
}

/// The storage trait. Implementations are shared between threads.
pub trait Device: Send + Sync + std::fmt::Debug {
    fn capacity_bytes(&self) -> u64;
    /// Reads every op; offsets and lengths are multiples of [`BLOCK_BYTES`].
    fn read_batch(&self, ops: &mut [ReadOp<'_>]) -> Result<(), DeviceError>;
    /// Writes every op; not durable until [`Device::sync`] returns.
    fn write_batch(&self, ops: &[WriteOp<'_>]) -> Result<(), DeviceError>;
    fn sync(&self) -> Result<(), DeviceError>;
    fn trim(&self, offset: u64, len: u64) -> Result<(), DeviceError>;
    fn zoned(&self) -> Option<&dyn Zoned> {
        None
    }
    /// Physical flash counters when the device is the emulator.
    #[cfg(feature = "emulator")]
    fn flash_counters(&self) -> Option<flashemu::Counters> {
        None
    }
    /// The emulator's device time (throughput over device seconds, flushes) when the device is
    /// the emulator with timing on; None elsewhere.
    #[cfg(feature = "emulator")]
    fn flash_timing(&self) -> Option<flashemu::TimingReport> {
        None
    }
    /// What the device reports of its GC unit, FDP, zones and compression (nothing by
    /// default: a plain file or memory knows none of it).
    fn capabilities(&self) -> DeviceCapabilities {
        DeviceCapabilities::default()
    }
    /// An FDP device's statistics log (host and media bytes written, media bytes erased): how
    /// a real FDP SSD reports its own write amplification. None elsewhere.
    #[cfg(feature = "emulator")]
    fn fdp_stats(&self) -> Option<flashemu::FdpStats> {
        None
    }

    /// Extends the device to `capacity_bytes` (a multiple of [`BLOCK_BYTES`], above today's
    /// capacity), durably: when it returns, a crash keeps the new size, so data written past
    /// the old end later is found after a reopen. Devices of a fixed size refuse
    /// ([`DeviceError::Unsupported`]); a full filesystem is [`DeviceError::NoSpace`].
    fn grow_to(&self, _capacity_bytes: u64) -> Result<(), DeviceError> {
        Err(DeviceError::Unsupported("growing: the device has a fixed size"))
    }

    fn read_at(&self, offset: u64, buf: &mut [u8]) -> Result<(), DeviceError> {
        self.read_batch(&mut [ReadOp { offset, buf }])
    }
    fn write_at(&self, offset: u64, data: &[u8], purpose: WritePurpose) -> Result<(), DeviceError> {
        self.write_batch(&[WriteOp { offset, data, purpose, placement: Placement::None }])
    }
}

/// A shared or boxed device is a device: tests keep a handle to a fault device the database
/// also owns, and `Counted<Arc<dyn Device>>` / `Counted<Box<dyn Device>>` wrap a backend chosen
/// at run time. Every method forwards.
macro_rules! forward_device {
    ($pointer:ident) => {
        impl<D: Device + ?Sized> Device for $pointer<D> {
            fn capacity_bytes(&self) -> u64 {
                (**self).capacity_bytes()
            }
            fn read_batch(&self, ops: &mut [ReadOp<'_>]) -> Result<(), DeviceError> {
                (**self).read_batch(ops)
            }
            fn write_batch(&self, ops: &[WriteOp<'_>]) -> Result<(), DeviceError> {
                (**self).write_batch(ops)
            }
            fn sync(&self) -> Result<(), DeviceError> {
                (**self).sync()
            }
            fn trim(&self, offset: u64, len: u64) -> Result<(), DeviceError> {
                (**self).trim(offset, len)
            }
            fn zoned(&self) -> Option<&dyn Zoned> {
                (**self).zoned()
            }
            #[cfg(feature = "emulator")]
            fn flash_counters(&self) -> Option<flashemu::Counters> {
                (**self).flash_counters()
            }
            #[cfg(feature = "emulator")]
            fn flash_timing(&self) -> Option<flashemu::TimingReport> {
                (**self).flash_timing()
            }
            fn capabilities(&self) -> DeviceCapabilities {
                (**self).capabilities()
            }
            #[cfg(feature = "emulator")]
            fn fdp_stats(&self) -> Option<flashemu::FdpStats> {
                (**self).fdp_stats()
            }
            fn grow_to(&self, capacity_bytes: u64) -> Result<(), DeviceError> {
                (**self).grow_to(capacity_bytes)
            }
        }
    };
}
use std::sync::Arc;
forward_device!(Arc);
forward_device!(Box);

mod aligned;
mod capacity;
mod coalesce;
#[cfg(test)]
mod conformance;
mod counting;
#[cfg(feature = "emulator")]
mod emulator;
mod fault;
mod file;
mod memory;
mod overlay;
mod uring;
/// Follows the emulator's zone rules and compressed-write layout, so it comes with it.
#[cfg(feature = "emulator")]
mod zoned_fault;
mod zoned_volume;

pub use aligned::{is_aligned, AlignedBuf, ALIGN_BYTES};
pub use counting::Counted;
#[cfg(all(test, feature = "emulator"))]
pub(crate) use emulator::tiny_zns;
#[cfg(feature = "emulator")]
pub use emulator::EmuDevice;
pub use fault::{CrashSummary, FaultDevice, IoKind};
pub use file::{FileDevice, FileOptions};
pub use memory::MemoryDevice;
pub use overlay::Overlay;
/// Operations a file device keeps in flight through io_uring (what `wafer tune` reports).
pub use uring::QUEUE_DEPTH as URING_QUEUE_DEPTH;
#[cfg(feature = "emulator")]
pub use zoned_fault::{ZonedFaultDevice, ZonedFaultGeometry};
pub use zoned_volume::ZonedVolume;

/// Checks that `offset..offset+len` is block-aligned and inside `capacity_bytes`.
pub fn check_range(offset: u64, len: u64, capacity_bytes: u64) -> Result<(), DeviceError> {
    if !offset.is_multiple_of(BLOCK_BYTES) || !len.is_multiple_of(BLOCK_BYTES) {
        return Err(DeviceError::Misaligned { offset, len, align: BLOCK_BYTES });
    }
    match offset.checked_add(len) {
        Some(end) if end <= capacity_bytes => Ok(()),
        _ => Err(DeviceError::OutOfRange { offset, len, capacity_bytes }),
    }
}
