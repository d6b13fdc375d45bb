//! Database options: a value with named presets, never global state.
use std::time::Duration;

pub use crate::device::FileOptions;
pub use crate::oop::codec::Compression;
pub use crate::oop::{GcZoneCounts, GcZones, OutOfPlaceOptions};
pub use crate::page::node::{MAX_KEY_BYTES, MAX_VALUE_BYTES as MAX_INLINE_VALUE_BYTES};
pub use crate::space::nowa::NoWaMode;
pub use crate::space::{ArtifactOptions, PlacementKind, VictimPolicyKind};
pub use crate::wal::{Durability, WalOptions};

/// How pages reach the device. Chosen at creation; the superblock records it and an open in the
/// other mode is refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[repr(u8)]
pub enum WriteMode {
    /// Page `pid` overwritten at `data_offset + pid * 4096`, through the doublewrite area in
    /// front of it unless `Options::doublewrite` is off.
    #[default]
    InPlace = 0,
    /// Write-back batches appended to zones, a page-id-to-offset map, DB GC (000 sec. 2, 4, 6).
    OutOfPlace = 1,
}

impl WriteMode {
    pub fn from_u8(b: u8) -> Option<WriteMode> {
        match b {
            0 => Some(WriteMode::InPlace),
            1 => Some(WriteMode::OutOfPlace),
            _ => None,
        }
    }
}

/// When an open may format a new database. Nothing is formatted over data in any mode: a file or
/// device that holds something other than a blank or a Wafer database is refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum CreateMode {
    /// `Db::open(path)`: create when neither the data file nor its WAL exists. `Db::open_on*`:
    /// format a blank device (superblock all zeros, WAL blank or holding only an interrupted
    /// creation).
    #[default]
    IfMissing,
    /// Open an existing database only; a missing file or a blank device is
    /// `OpenError::Missing`.
    Never,
    /// Create only: an existing database is `OpenError::AlreadyExists`.
    New,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Options {
    /// Whether the open may create the database (default: only if it does not exist).
    pub create: CreateMode,
    /// Buffer pool size; 4 KiB frames. With a WAL, every page a batch dirties stays in the pool
    /// until the batch commits, so the largest batch must fit in it.
    pub buffer_pool_bytes: u64,
    /// Dirty pages written back per eviction batch (one store call per batch).
    pub eviction_batch_pages: usize,
    /// Out of place: share of the pool's frames (percent, rounded up, at most 50) that
    /// evictions keep clean or free, so DB GC can load pages into the pool without writing a
    /// dirty page back (000 sec. 6.2). 0: no reserve. In place nothing uses it (no GC).
    pub clean_reserve_percent: u32,
    /// Size of the data file when `Db::open(path)` creates a database; an existing file keeps
    /// its size.
    pub file_capacity_bytes: u64,
    /// The data file grows when its pages run out, by a quarter of its size at a time, up to
    /// this size or until the filesystem is full; only then is a write
    /// [`Error::OutOfSpace`](crate::Error::OutOfSpace). `None`: in place no limit but the
    /// filesystem's; out of place no growth, since its map areas are reserved at creation for
    /// the largest size the file may reach (about 0.5% of it, sparse until used): set a size to
    /// let it grow. A device of a fixed size (the emulator, a block device) never grows.
    pub max_file_bytes: Option<u64>,
    /// How `Db::open(path)` drives its files (buffered, O_DIRECT, io_uring).
    pub file: FileOptions,
    /// Where page 0 starts on the device. With `doublewrite`, the doublewrite area is the space
    /// in front: one header block and `data_offset_bytes / 4096 - 1` page slots (at least
    /// `eviction_batch_pages`).
    pub data_offset_bytes: u64,
    pub write_mode: WriteMode,
    /// Zones and GC of the out-of-place mode (ignored in place).
    pub out_of_place: OutOfPlaceOptions,
    /// Every write-back batch goes to the doublewrite area and is synced before it is written
    /// in place, so a torn page write is repaired at open. Off only for experiments: without it
    /// a power cut during a page write can leave a page that fails its checksum, and neither
    /// redo nor anything else can repair it.
    pub doublewrite: bool,
    /// A full leaf that receives a key past all of its keys (an ascending load) splits off
    /// the new key alone instead of in the middle, so a sorted load leaves its leaves full
    /// (InnoDB's sequential-insert split). Off: every split is in the middle (half-full leaves
    /// after a sorted load).
    pub append_split: bool,
    /// A background thread evicts batches (writes them back) before the pool runs out of free
    /// frames, so a miss rarely waits for a write-back (`buffer/cleaner.rs`). Off: every
    /// eviction runs in the miss that needs a frame (deterministic I/O order, for tests that
    /// pin it).
    pub background_write_back: bool,
    /// With a WAL, a background thread runs the checkpoints that writers find due (it flushes
    /// the pool while they go on: `db/checkpoint.rs`). Off: the writer whose commit finds one
    /// due runs it (deterministic, for tests that pin the order of writes).
    pub background_checkpoint: bool,
    /// How long a commit waits when the caller does not say (`Tree::put`, `Db::write`).
    pub durability: Durability,
    /// WAL buffer, group commit and recovery settings.
    pub wal: WalOptions,
    /// Size of the WAL file `Db::open(path)` creates (`<path>.wal`); the log is circular.
    pub wal_capacity_bytes: u64,
    /// A checkpoint starts once this much log was written since the last one (bounds recovery
    /// time and log space). Must be well below the WAL's capacity.
    pub checkpoint_log_bytes: u64,
    /// A checkpoint also starts when this long has passed since the last one (checked on
    /// writes); None: by log size only.
    pub checkpoint_interval: Option<Duration>,
    /// Values of at least this many bytes are stored out of line, written once (`crate::blob`);
    /// values above 2047 bytes always are. Some(0): every value. Chosen at creation: a database
    /// created with None keeps values inline only (at most 2048 bytes), and its format is the
    /// one without blobs; one created with Some(_) may be reopened with None (no new blobs).
    ///
    /// Out of place with compression, every blob page takes a page id of its own but is stored
    /// in a fraction of a slot, so the page-id cap (`out_of_place.max_fill_percent`, 95% of the
    /// zone space by default) can be reached before the zones fill: a load of 250,000 values of
    /// 1000 bytes into a file three times their size stopped with `OutOfSpace` at its cap of
    /// 172,635 page ids. Raise the cap (up to
    /// `oop::options::MAX_FILL_PERCENT_COMPRESSED`; the benchmarks use 250) to use the file;
    /// writes that would not fit are then refused with `OutOfSpace`, losing nothing.
    pub blob_threshold_bytes: Option<u32>,
    /// Page copies snapshots may keep in memory (`Db::snapshot`): the first change to a page
    /// while a snapshot lives saves its bytes. Past this bound the oldest snapshot expires
    /// (its reads fail with `Error::SnapshotExpired`) rather than the memory growing.
    pub snapshot_bytes_max: u64,
    /// Opens for reading only: `Db::open` shares the files with other read-only opens (a
    /// shared `flock`, refused while a writer holds them, and refusing writers while held),
    /// and nothing is ever written to them. A database a crash left is recovered in memory
    /// (`device::Overlay`), so its files stay byte for byte as they were. Every write returns
    /// `CommitError::ReadOnly`; `Db::flush`, `sync`, `checkpoint` and `collect_garbage` return
    /// `MaintenanceError::ReadOnly`.
    pub read_only: bool,
}

/// Default bound of snapshot page copies (`Options::snapshot_bytes_max`): 16,384 pages.
pub const SNAPSHOT_BYTES_MAX_DEFAULT: u64 = 64 << 20;

impl Options {
    /// Sized for benchmarks on these machines: 256 MiB pool, 64-page batches, 4 GiB files,
    /// a 1 MiB doublewrite area (255 slots), io_uring, a 1 GiB WAL checkpointed every 256 MiB, Sync
    /// commits.
    pub fn production() -> Options {
        Options {
            create: CreateMode::IfMissing,
            buffer_pool_bytes: 256 << 20,
            eviction_batch_pages: 64,
            clean_reserve_percent: 5,
            file_capacity_bytes: 4 << 30,
            max_file_bytes: None,
            // Batches through io_uring where the kernel allows it (the device falls back to
            // pwritev/pread and says why otherwise).
            file: FileOptions::URING,
            data_offset_bytes: 1 << 20,
            write_mode: WriteMode::InPlace,
            out_of_place: OutOfPlaceOptions::production(),
            doublewrite: true,
            append_split: true,
            background_write_back: true,
            background_checkpoint: true,
            durability: Durability::Sync,
            // No trim: the log file stays allocated, so commits never allocate extents.
            wal: WalOptions { trim: false, ..WalOptions::production() },
            wal_capacity_bytes: 1 << 30,
            checkpoint_log_bytes: 256 << 20,
            checkpoint_interval: None,
            blob_threshold_bytes: None,
            snapshot_bytes_max: SNAPSHOT_BYTES_MAX_DEFAULT,
            read_only: false,
        }
    }

    /// Tiny pool (16 frames) and small batches so tests evict and reload constantly; a 4 MiB
    /// WAL checkpointed every 512 KiB; `None` durability so file tests stay fast (crash tests
    /// choose their own).
    pub fn test_min() -> Options {
        Options {
            create: CreateMode::IfMissing,
            buffer_pool_bytes: 16 * 4096,
            eviction_batch_pages: 4,
            clean_reserve_percent: 5,
            file_capacity_bytes: 64 << 20,
            max_file_bytes: None,
            file: FileOptions::BUFFERED,
            data_offset_bytes: 16 * 4096,
            write_mode: WriteMode::InPlace,
            out_of_place: OutOfPlaceOptions::test_min(),
            doublewrite: true,
            // The tests' tree shapes (and the byte counts some pin) assume middle splits.
            append_split: false,
            // Unit tests count evictions and writes; the crash, model and kill tests turn it on.
            background_write_back: false,
            // As background write-back: the crash, model and kill tests turn it on.
            background_checkpoint: false,
            durability: Durability::None,
            wal: WalOptions::test_min(),
            wal_capacity_bytes: 4 << 20,
            checkpoint_log_bytes: 512 << 10,
            checkpoint_interval: None,
            blob_threshold_bytes: None,
            snapshot_bytes_max: SNAPSHOT_BYTES_MAX_DEFAULT,
            read_only: false,
        }
    }

    /// The same options in the out-of-place write mode (which never doublewrites).
    pub fn out_of_place(mut self) -> Options {
        self.write_mode = WriteMode::OutOfPlace;
        self.doublewrite = false;
        self
    }

    pub fn with_buffer_pool_bytes(mut self, bytes: u64) -> Options {
        self.buffer_pool_bytes = bytes;
        self
    }

    pub fn with_create(mut self, create: CreateMode) -> Options {
        self.create = create;
        self
    }

    /// For reading only (`Options::read_only`): never creates, never writes.
    pub fn read_only(mut self) -> Options {
        self.read_only = true;
        self.create = CreateMode::Never;
        self
    }

    /// Values of at least `threshold_bytes` out of line (`Options::blob_threshold_bytes`).
    pub fn with_blobs(mut self, threshold_bytes: u32) -> Options {
        self.blob_threshold_bytes = Some(threshold_bytes);
        self
    }

    pub fn with_durability(mut self, durability: Durability) -> Options {
        self.durability = durability;
        self
    }
}

impl Default for Options {
    fn default() -> Options {
        Options::production()
    }
}
