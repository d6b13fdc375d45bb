//! The engine's error type. Layered: device errors are wrapped, never flattened into strings;
//! refused options, corruption and lack of space each have their own enum, so a caller matches
//! on what went wrong instead of parsing a message.
use thiserror::Error;

mod corruption;
mod limit;
mod ops;
mod options;
mod out_of_space;

pub use crate::device::DeviceError;
pub use crate::space::{SnapshotError, SpaceError};
pub use crate::wal::WalError;
pub use corruption::Corruption;
pub use limit::Limit;
pub use ops::{CheckError, CommitError, DbOpenError, MaintenanceError, ReadError, StorageError};
pub use options::OptionsError;
pub use out_of_space::OutOfSpaceError;

pub type Result<T, E = Error> = std::result::Result<T, E>;

#[derive(Debug, Error)]
pub enum Error {
    #[error(transparent)]
    Device(#[from] DeviceError),
    #[error(transparent)]
    Wal(#[from] crate::wal::WalError),
    /// A stored page failed its checksum or structural checks.
    #[error("page {page_id} is corrupt: {reason}")]
    CorruptPage { page_id: u64, reason: String },
    #[error("key of {len} bytes exceeds the limit of {max} bytes")]
    KeyTooLarge { len: usize, max: usize },
    #[error("value of {len} bytes exceeds the limit of {max} bytes")]
    ValueTooLarge { len: usize, max: usize },
    /// The device (or the page-id cap out of place) holds no more pages: a clean refusal, the
    /// database stays usable.
    #[error("out of space: {0}")]
    OutOfSpace(#[from] OutOfSpaceError),
    /// Every buffer pool frame is latched or pinned by the batch in progress: the pool is too
    /// small for the workload (a batch larger than the pool, too many concurrent latches), not
    /// the device full. Leaves the database poisoned when it interrupts a write.
    #[error("buffer pool exhausted: no frame for page {page_id} after {attempts} attempts ({frames} frames, all latched or pinned)")]
    PoolExhausted { page_id: u64, frames: usize, attempts: u32 },
    /// Opening refused before anything was written: see [`OpenError`].
    #[error(transparent)]
    Open(#[from] OpenError),
    #[error("invalid options: {0}")]
    InvalidOptions(#[from] OptionsError),
    #[error("tree name `{0}` is invalid: {1}")]
    InvalidTreeName(String, &'static str),
    #[error("database is poisoned by an earlier failed write (an I/O error, or a buffer pool too small for a batch) and refuses writes until reopened")]
    Poisoned,
    #[error("database is closed")]
    Closed,
    /// The database was opened with `Options::read_only`.
    #[error("database is open read-only")]
    ReadOnly,
    /// The tree behind this handle was dropped (`Db::drop_tree`); `Db::tree` makes a new one.
    #[error("tree {0} was dropped")]
    TreeDropped(String),
    /// The snapshot outlived the versions kept for it (`Options::snapshot_bytes_max`): take a
    /// new one.
    #[error("snapshot expired: writers since it began changed more pages than the database keeps for snapshots (Options::snapshot_bytes_max)")]
    SnapshotExpired,
    /// A transaction waited its lock timeout for a key lock another transaction holds (a
    /// clean refusal: abort the transaction and retry it).
    #[error("lock on a key of tree `{tree}` not granted within {waited_ms} ms")]
    LockTimeout { tree: String, waited_ms: u64 },
    /// A structure on the device (or in memory, read from it) is not as it must be.
    #[error("corrupt database: {0}")]
    Corruption(#[from] Corruption),
    /// The data file exists but its WAL file does not: opening without the log would lose
    /// acknowledged commits, so the database refuses.
    #[error("WAL file {path} of an existing database is missing")]
    WalFileMissing { path: std::path::PathBuf },
    /// A background thread the options ask for could not be started.
    #[error("{thread}: no thread: {source}")]
    Spawn { thread: &'static str, source: std::io::Error },
    /// A transaction asked for more key locks than one may hold.
    #[error("a transaction holds at most {max} locks")]
    TooManyLocks { max: usize },
    /// A snapshot is copied only into a database without trees.
    #[error("copy of a snapshot into a database with trees {trees:?}")]
    NotEmpty { trees: Vec<String> },
    /// Redo could not apply a record to its page.
    #[error("recovery failed at WAL lsn {lsn} (page {page_id}): {reason}")]
    Redo { lsn: u64, page_id: u64, reason: RedoFailure },
}

/// Why redo could not apply a log record to its page: the page and the log disagree.
#[derive(Debug, Error)]
pub enum RedoFailure {
    /// The page could not be read (and the record is no full image that would replace it).
    #[error("cannot load the page: {0}")]
    LoadPage(Box<Error>),
    /// A put or delete of tree `tree_id` found a page that is no leaf of that tree.
    #[error("{op} a page that is no leaf of tree {tree_id}")]
    NotALeaf { op: &'static str, tree_id: u32 },
    /// A logged delete of a key the page does not hold.
    #[error("deleted key is not in the page")]
    DeletedKeyMissing,
    /// A node rebuild of tree `tree_id` found a page of another tree.
    #[error("rebuild of a page that is no node of tree {tree_id}")]
    NotANode { tree_id: u32 },
    /// A full page image that names another page.
    #[error("image names page {named}")]
    ImageOfAnotherPage { named: u64 },
    /// The change did not apply to the page (see the page error inside).
    #[error("{0}")]
    Apply(Box<Error>),
}

/// The space manager's errors sorted by what they mean to the engine: bad options, no room
/// (including "run GC" and "wait for the log", which callers that can act on them catch before
/// converting), or a corrupt map.
impl From<SpaceError> for Error {
    fn from(e: SpaceError) -> Error {
        match e {
            SpaceError::InvalidOptions { .. } => Error::InvalidOptions(OptionsError::Space(e)),
            SpaceError::OutOfSpace { .. }
            | SpaceError::NeedsGc { .. }
            | SpaceError::AwaitingDurability { .. } => Error::OutOfSpace(OutOfSpaceError::Space(e)),
            SpaceError::Snapshot(_) | SpaceError::CorruptMap { .. } => {
                Error::Corruption(Corruption::Space(e))
            }
        }
    }
}

impl From<SnapshotError> for Error {
    fn from(e: SnapshotError) -> Error {
        SpaceError::Snapshot(e).into()
    }
}

/// Why an open refused the files or devices it was given. Raised before anything is written, so
/// the files are left exactly as they were. `what` names the file (its path) or, for
/// `Db::open_on*`, the device ("data device", "WAL device").
#[derive(Debug, Error)]
pub enum OpenError {
    #[error("{what}: no database there and the create mode is Never")]
    Missing { what: String },
    #[error("{what}: a database already exists and the create mode is New")]
    AlreadyExists { what: String },
    /// A database is a data file and its WAL beside it: a path that names a directory (or
    /// ends in a separator) is no file to create.
    #[error("{what}: names a directory; give the path of the data file to create")]
    NotAFilePath { what: String },
    /// The data file has zero bytes: never a database Wafer wrote (a new file spans its whole
    /// capacity from the start), so something truncated it.
    #[error("{what}: data file is empty (0 bytes) but its WAL {wal} exists; refusing to format over a truncated database")]
    EmptyDataFile { what: String, wal: String },
    #[error("{what}: data file is missing but its WAL {wal} exists; refusing to create a database beside another's log")]
    DataFileMissing { what: String, wal: String },
    #[error("{what}: not a Wafer database: {reason}")]
    NotWaferDatabase { what: String, reason: NotWafer },
    /// Page 0 reads as zeros while the WAL shows the database existed (a checkpoint truncated
    /// it, or it holds commits beyond the creation's own): formatting would discard them.
    #[error("{what}: superblock is blank (all zeros) but the WAL holds a database ({evidence}); refusing to format")]
    BlankSuperblock { what: String, evidence: WalEvidence },
    #[error("{what}: sizes disagree: {detail}")]
    SizeMismatch { what: String, detail: SizeMismatch },
    /// Another open holds the database (a live process, or another `Db` in this one): one
    /// writer per database. The lock goes with its holder, a crashed process's included.
    #[error("{}: locked by another open of this database (one writer at a time)", path.display())]
    Locked { path: std::path::PathBuf },
}

/// Why bytes that are not blank are not a Wafer database.
#[derive(Debug, Error, Clone, PartialEq, Eq)]
pub enum NotWafer {
    #[error("no superblock magic at byte {offset} and the page there is not blank")]
    NoSuperblockMagic { offset: u64 },
    #[error("the header blocks do not carry the WAL magic")]
    NoWalMagic,
}

/// What in a WAL shows that a database existed beside a blank superblock.
#[derive(Debug, Error, Clone, PartialEq, Eq)]
pub enum WalEvidence {
    #[error("a checkpoint truncated it to lsn {start_lsn}")]
    Checkpointed { start_lsn: u64 },
    #[error("commit records beyond the creation's, the second at lsn {lsn}")]
    Commits { lsn: u64 },
}

/// How a device's size and a database's disagree.
#[derive(Debug, Error, Clone, PartialEq, Eq)]
pub enum SizeMismatch {
    #[error(
        "{capacity_bytes} bytes cannot hold a database starting at byte {offset} (4 pages at least)"
    )]
    TooSmall { capacity_bytes: u64, offset: u64 },
    /// The superblock names pages the device no longer holds.
    #[error(
        "truncated: the superblock says {superblock_pages} pages ({in_use_pages} in use), the \
         device holds {device_pages}"
    )]
    Truncated { superblock_pages: u64, in_use_pages: u64, device_pages: u64 },
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The space manager's errors land in the variant a caller acts on: options refused, no
    /// room (a clean refusal), or a corrupt map, never a message to parse.
    #[test]
    fn space_errors_sort_by_meaning() {
        let options = SpaceError::InvalidOptions {
            field: "gc_reserve_zones",
            value: 0,
            limit: Limit::AtLeast(1),
            why: Some("GC needs a zone to copy into"),
        };
        let e = Error::from(options);
        assert!(matches!(e, Error::InvalidOptions(OptionsError::Space(_))), "{e}");
        assert_eq!(
            e.to_string(),
            "invalid options: invalid space option `gc_reserve_zones`: 0 must be at least 1: GC \
             needs a zone to copy into"
        );
        let full = Error::from(SpaceError::NeedsGc { zones_short: 2 });
        assert!(matches!(full, Error::OutOfSpace(OutOfSpaceError::Space(_))), "{full}");
        let torn = Error::from(SnapshotError::BadMagic { block: 3 });
        assert!(matches!(torn, Error::Corruption(Corruption::Space(_))), "{torn}");
        assert_eq!(torn.to_string(), "corrupt database: snapshot block 3: bad magic");
    }

    #[test]
    fn option_limits_say_what_is_accepted() {
        let e = OptionsError::OutOfRange {
            option: "checkpoint_log_bytes",
            value: 9,
            limit: Limit::Below { option: "wal_capacity_bytes", value: 8 },
        };
        assert_eq!(
            e.to_string(),
            "checkpoint_log_bytes is 9; it must be below wal_capacity_bytes (8)"
        );
        assert_eq!(Limit::Within { min: 1, max: 100 }.to_string(), "in 1..=100");
        assert_eq!(Limit::MultipleOf(4096).to_string(), "a positive multiple of 4096");
    }
}
