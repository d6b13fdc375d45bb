//! One error enum per kind of operation, so a caller matches only on what that operation can
//! return. Each converts into [`Error`] losslessly (the same variant, the same message), so code
//! that propagates with `?` into `wafer::Result` keeps working. Failures of the storage below
//! (device, WAL, corruption, the buffer pool) are shared by every operation: they live in one
//! [`StorageError`] embedded in each enum instead of being repeated.
use super::{
    Corruption, DeviceError, Error, OpenError, OptionsError, OutOfSpaceError, RedoFailure, WalError,
};

/// `impl From<CommitError>`, `From<ReadError>`, `From<MaintenanceError>` and `From<DbOpenError>`
/// for a caller's
/// error type that holds a [`Error`] in one tuple variant:
/// `wafer::from_operation_errors!(MyError, MyError::Engine);`. Each goes through `Error` whole,
/// so `?` works on opens, writes, reads and maintenance calls alike.
#[macro_export]
macro_rules! from_operation_errors {
    ($target:ty, $variant:path) => {
        impl From<$crate::CommitError> for $target {
            fn from(e: $crate::CommitError) -> Self {
                $variant(e.into())
            }
        }
        impl From<$crate::ReadError> for $target {
            fn from(e: $crate::ReadError) -> Self {
                $variant(e.into())
            }
        }
        impl From<$crate::MaintenanceError> for $target {
            fn from(e: $crate::MaintenanceError) -> Self {
                $variant(e.into())
            }
        }
        impl From<$crate::DbOpenError> for $target {
            fn from(e: $crate::DbOpenError) -> Self {
                $variant(e.into())
            }
        }
    };
}

/// The storage beneath an operation failed: the device, the log, a corrupt structure, or a
/// buffer pool too small for the work. Messages are those of the matching [`Error`] variants.
#[derive(Debug, thiserror::Error)]
pub enum StorageError {
    #[error(transparent)]
    Device(#[from] DeviceError),
    #[error(transparent)]
    Wal(#[from] WalError),
    /// A stored page failed its checksum or structural checks.
    #[error("page {page_id} is corrupt: {reason}")]
    CorruptPage { page_id: u64, reason: String },
    /// A structure on the device (or in memory, read from it) is not as it must be.
    #[error("corrupt database: {0}")]
    Corruption(#[from] Corruption),
    /// Every buffer pool frame is latched or pinned: the pool is too small for the workload.
    #[error("buffer pool exhausted: no frame for page {page_id} after {attempts} attempts ({frames} frames, all latched or pinned)")]
    PoolExhausted { page_id: u64, frames: usize, attempts: u32 },
    /// An error this operation is not expected to return, kept whole rather than flattened
    /// into a message, so converting back into [`Error`] loses nothing.
    #[error(transparent)]
    Other(Box<Error>),
}

impl From<Error> for StorageError {
    fn from(e: Error) -> Self {
        match e {
            Error::Device(e) => Self::Device(e),
            Error::Wal(e) => Self::Wal(e),
            Error::CorruptPage { page_id, reason } => Self::CorruptPage { page_id, reason },
            Error::Corruption(c) => Self::Corruption(c),
            Error::PoolExhausted { page_id, frames, attempts } => {
                Self::PoolExhausted { page_id, frames, attempts }
            }
            other => Self::Other(Box::new(other)),
        }
    }
}

impl From<StorageError> for Error {
    fn from(e: StorageError) -> Self {
        match e {
            StorageError::Device(e) => Error::Device(e),
            StorageError::Wal(e) => Error::Wal(e),
            StorageError::CorruptPage { page_id, reason } => Error::CorruptPage { page_id, reason },
            StorageError::Corruption(c) => Error::Corruption(c),
            StorageError::PoolExhausted { page_id, frames, attempts } => {
                Error::PoolExhausted { page_id, frames, attempts }
            }
            StorageError::Other(e) => *e,
        }
    }
}

/// Why a write did not commit: `Tree::put`/`delete`, `Db::write`, and a transaction's writes
/// and commit. Every variant but `Storage` is a clean refusal: nothing was written.
#[derive(Debug, thiserror::Error)]
pub enum CommitError {
    /// The database was opened with `Options::read_only`.
    #[error("database is open read-only")]
    ReadOnly,
    /// An earlier failed write poisoned the database: reopen it.
    #[error("database is poisoned by an earlier failed write (an I/O error, or a buffer pool too small for a batch) and refuses writes until reopened")]
    Poisoned,
    #[error("database is closed")]
    Closed,
    #[error("key of {len} bytes exceeds the limit of {max} bytes")]
    KeyTooLarge { len: usize, max: usize },
    #[error("value of {len} bytes exceeds the limit of {max} bytes")]
    ValueTooLarge { len: usize, max: usize },
    #[error("tree name `{0}` is invalid: {1}")]
    InvalidTreeName(String, &'static str),
    /// The tree behind this handle was dropped; `Db::tree` makes a new one.
    #[error("tree {0} was dropped")]
    TreeDropped(String),
    /// The device holds no more pages: the database stays usable.
    #[error("out of space: {0}")]
    OutOfSpace(#[from] OutOfSpaceError),
    /// A transaction waited its lock timeout: abort it and retry.
    #[error("lock on a key of tree `{tree}` not granted within {waited_ms} ms")]
    LockTimeout { tree: String, waited_ms: u64 },
    /// A transaction asked for more key locks than one may hold.
    #[error("a transaction holds at most {max} locks")]
    TooManyLocks { max: usize },
    #[error(transparent)]
    Storage(#[from] StorageError),
}

impl From<Error> for CommitError {
    fn from(e: Error) -> Self {
        match e {
            Error::ReadOnly => Self::ReadOnly,
            Error::Poisoned => Self::Poisoned,
            Error::Closed => Self::Closed,
            Error::KeyTooLarge { len, max } => Self::KeyTooLarge { len, max },
            Error::ValueTooLarge { len, max } => Self::ValueTooLarge { len, max },
            Error::InvalidTreeName(name, why) => Self::InvalidTreeName(name, why),
            Error::TreeDropped(name) => Self::TreeDropped(name),
            Error::OutOfSpace(e) => Self::OutOfSpace(e),
            Error::LockTimeout { tree, waited_ms } => Self::LockTimeout { tree, waited_ms },
            Error::TooManyLocks { max } => Self::TooManyLocks { max },
            other => Self::Storage(other.into()),
        }
    }
}

impl From<CommitError> for Error {
    fn from(e: CommitError) -> Self {
        match e {
            CommitError::ReadOnly => Error::ReadOnly,
            CommitError::Poisoned => Error::Poisoned,
            CommitError::Closed => Error::Closed,
            CommitError::KeyTooLarge { len, max } => Error::KeyTooLarge { len, max },
            CommitError::ValueTooLarge { len, max } => Error::ValueTooLarge { len, max },
            CommitError::InvalidTreeName(name, why) => Error::InvalidTreeName(name, why),
            CommitError::TreeDropped(name) => Error::TreeDropped(name),
            CommitError::OutOfSpace(e) => Error::OutOfSpace(e),
            CommitError::LockTimeout { tree, waited_ms } => Error::LockTimeout { tree, waited_ms },
            CommitError::TooManyLocks { max } => Error::TooManyLocks { max },
            CommitError::Storage(e) => e.into(),
        }
    }
}

impl From<Corruption> for CommitError {
    fn from(c: Corruption) -> Self {
        Self::Storage(StorageError::Corruption(c))
    }
}

/// Why a read failed: `Tree::get` and its variants, and `SnapshotTree::get`.
#[derive(Debug, thiserror::Error)]
pub enum ReadError {
    #[error("database is closed")]
    Closed,
    /// The tree behind this handle was dropped; `Db::tree` makes a new one.
    #[error("tree {0} was dropped")]
    TreeDropped(String),
    /// The snapshot outlived the versions kept for it (`Options::snapshot_bytes_max`): take a
    /// new one.
    #[error("snapshot expired: writers since it began changed more pages than the database keeps for snapshots (Options::snapshot_bytes_max)")]
    SnapshotExpired,
    /// No key this long can be stored, so none is looked up.
    #[error("key of {len} bytes exceeds the limit of {max} bytes")]
    KeyTooLarge { len: usize, max: usize },
    #[error(transparent)]
    Storage(#[from] StorageError),
}

impl From<Error> for ReadError {
    fn from(e: Error) -> Self {
        match e {
            Error::Closed => Self::Closed,
            Error::TreeDropped(name) => Self::TreeDropped(name),
            Error::SnapshotExpired => Self::SnapshotExpired,
            Error::KeyTooLarge { len, max } => Self::KeyTooLarge { len, max },
            other => Self::Storage(other.into()),
        }
    }
}

impl From<ReadError> for Error {
    fn from(e: ReadError) -> Self {
        match e {
            ReadError::Closed => Error::Closed,
            ReadError::TreeDropped(name) => Error::TreeDropped(name),
            ReadError::SnapshotExpired => Error::SnapshotExpired,
            ReadError::KeyTooLarge { len, max } => Error::KeyTooLarge { len, max },
            ReadError::Storage(e) => e.into(),
        }
    }
}

impl From<Corruption> for ReadError {
    fn from(c: Corruption) -> Self {
        Self::Storage(StorageError::Corruption(c))
    }
}

/// Why `Db::check` could not walk the database. Violations it finds are no error: they are in
/// the `CheckReport` it returns.
#[derive(Debug, thiserror::Error)]
pub enum CheckError {
    #[error("database is closed")]
    Closed,
    /// Reading a page or the space metadata failed beneath the walk.
    #[error(transparent)]
    Storage(#[from] StorageError),
}

impl From<Error> for CheckError {
    fn from(e: Error) -> Self {
        match e {
            Error::Closed => Self::Closed,
            other => Self::Storage(other.into()),
        }
    }
}

impl From<CheckError> for Error {
    fn from(e: CheckError) -> Self {
        match e {
            CheckError::Closed => Error::Closed,
            CheckError::Storage(e) => e.into(),
        }
    }
}

/// Why a maintenance call failed: `Db::flush`, `sync`, `checkpoint`, `collect_garbage`,
/// `close`, `backup_to` and `Snapshot::copy_to`. Every variant but `Storage` is a clean
/// refusal the caller acts on.
#[derive(Debug, thiserror::Error)]
pub enum MaintenanceError {
    /// The database was closed (for `close`: closed already).
    #[error("database is closed")]
    Closed,
    /// An earlier failed write poisoned the database: reopen it.
    #[error("database is poisoned by an earlier failed write (an I/O error, or a buffer pool too small for a batch) and refuses writes until reopened")]
    Poisoned,
    /// The database was opened with `Options::read_only`: it writes nothing.
    #[error("database is open read-only")]
    ReadOnly,
    /// The device holds no more pages (a checkpoint, a GC cycle, or a backup's copy).
    #[error("out of space: {0}")]
    OutOfSpace(#[from] OutOfSpaceError),
    /// A backup's snapshot outlived the versions kept for it: back up again.
    #[error("snapshot expired: writers since it began changed more pages than the database keeps for snapshots (Options::snapshot_bytes_max)")]
    SnapshotExpired,
    /// A backup's target refused: `OpenError::NotAFilePath` for a directory,
    /// `OpenError::AlreadyExists` for an existing file, or the open of the copy refused.
    #[error(transparent)]
    Open(#[from] OpenError),
    /// `Snapshot::copy_to` into a database that already holds these trees.
    #[error("copy of a snapshot into a database with trees {trees:?}")]
    NotEmpty { trees: Vec<String> },
    #[error(transparent)]
    Storage(#[from] StorageError),
}

impl From<Error> for MaintenanceError {
    fn from(e: Error) -> Self {
        match e {
            Error::Closed => Self::Closed,
            Error::Poisoned => Self::Poisoned,
            Error::ReadOnly => Self::ReadOnly,
            Error::OutOfSpace(e) => Self::OutOfSpace(e),
            Error::SnapshotExpired => Self::SnapshotExpired,
            Error::Open(e) => Self::Open(e),
            Error::NotEmpty { trees } => Self::NotEmpty { trees },
            other => Self::Storage(other.into()),
        }
    }
}

impl From<MaintenanceError> for Error {
    fn from(e: MaintenanceError) -> Self {
        match e {
            MaintenanceError::Closed => Error::Closed,
            MaintenanceError::Poisoned => Error::Poisoned,
            MaintenanceError::ReadOnly => Error::ReadOnly,
            MaintenanceError::OutOfSpace(e) => Error::OutOfSpace(e),
            MaintenanceError::SnapshotExpired => Error::SnapshotExpired,
            MaintenanceError::Open(e) => Error::Open(e),
            MaintenanceError::NotEmpty { trees } => Error::NotEmpty { trees },
            MaintenanceError::Storage(e) => e.into(),
        }
    }
}

impl From<Corruption> for MaintenanceError {
    fn from(c: Corruption) -> Self {
        Self::Storage(StorageError::Corruption(c))
    }
}

impl From<ReadError> for MaintenanceError {
    fn from(e: ReadError) -> Self {
        Error::from(e).into()
    }
}

impl From<CommitError> for MaintenanceError {
    fn from(e: CommitError) -> Self {
        Error::from(e).into()
    }
}

/// A backup opens its copy: the copy's refusals are the backup's.
impl From<DbOpenError> for MaintenanceError {
    fn from(e: DbOpenError) -> Self {
        Error::from(e).into()
    }
}

/// Why `Db::open` (and `open_on`, `open_on_devices`, `open_with_logger`) returned no database.
/// `Refused` and `InvalidOptions` come before anything is written; the others may interrupt a
/// creation or a recovery, which the next open repeats.
#[derive(Debug, thiserror::Error)]
pub enum DbOpenError {
    /// The files or devices given are no database this open may use (missing, already there,
    /// locked by another open, truncated, foreign): see [`OpenError`].
    #[error(transparent)]
    Refused(#[from] OpenError),
    /// The options are refused, or disagree with the database's own (its write mode, its WAL).
    #[error("invalid options: {0}")]
    InvalidOptions(#[from] OptionsError),
    /// The data file exists but its WAL file does not: opening without the log would lose
    /// acknowledged commits.
    #[error("WAL file {path} of an existing database is missing")]
    WalFileMissing { path: std::path::PathBuf },
    /// Creating, repairing or recovering the database needed pages the device does not hold.
    #[error("out of space: {0}")]
    OutOfSpace(#[from] OutOfSpaceError),
    /// A background thread the options ask for could not be started.
    #[error("{thread}: no thread: {source}")]
    Spawn { thread: &'static str, source: std::io::Error },
    /// Recovery found a log record its page disagrees with: the database is corrupt.
    #[error("recovery failed at WAL lsn {lsn} (page {page_id}): {reason}")]
    Recovery { lsn: u64, page_id: u64, reason: RedoFailure },
    /// The storage failed beneath the open: the device, the log, or corruption found while
    /// reading the superblock or replaying the log.
    #[error(transparent)]
    Storage(#[from] StorageError),
}

impl From<Error> for DbOpenError {
    fn from(e: Error) -> Self {
        match e {
            Error::Open(e) => Self::Refused(e),
            Error::InvalidOptions(e) => Self::InvalidOptions(e),
            Error::WalFileMissing { path } => Self::WalFileMissing { path },
            Error::OutOfSpace(e) => Self::OutOfSpace(e),
            Error::Spawn { thread, source } => Self::Spawn { thread, source },
            Error::Redo { lsn, page_id, reason } => Self::Recovery { lsn, page_id, reason },
            other => Self::Storage(other.into()),
        }
    }
}

impl From<DbOpenError> for Error {
    fn from(e: DbOpenError) -> Self {
        match e {
            DbOpenError::Refused(e) => Error::Open(e),
            DbOpenError::InvalidOptions(e) => Error::InvalidOptions(e),
            DbOpenError::WalFileMissing { path } => Error::WalFileMissing { path },
            DbOpenError::OutOfSpace(e) => Error::OutOfSpace(e),
            DbOpenError::Spawn { thread, source } => Error::Spawn { thread, source },
            DbOpenError::Recovery { lsn, page_id, reason } => Error::Redo { lsn, page_id, reason },
            DbOpenError::Storage(e) => e.into(),
        }
    }
}

impl From<Corruption> for DbOpenError {
    fn from(c: Corruption) -> Self {
        Self::Storage(StorageError::Corruption(c))
    }
}

impl From<DeviceError> for DbOpenError {
    fn from(e: DeviceError) -> Self {
        Self::Storage(StorageError::Device(e))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Errors whose variant both enums carry, built afresh for each check (they are not Clone).
    fn samples() -> Vec<fn() -> Error> {
        vec![
            || Error::ReadOnly,
            || Error::Poisoned,
            || Error::Closed,
            || Error::KeyTooLarge { len: 9, max: 8 },
            || Error::ValueTooLarge { len: 9, max: 8 },
            || Error::InvalidTreeName("\0x".into(), "starts with NUL"),
            || Error::TreeDropped("t".into()),
            || Error::LockTimeout { tree: "t".into(), waited_ms: 5 },
            || Error::TooManyLocks { max: 3 },
            || Error::SnapshotExpired,
            || Error::CorruptPage { page_id: 7, reason: "bad crc".into() },
            || Error::Corruption(Corruption::ReadingWriteDeclined),
            || Error::PoolExhausted { page_id: 1, frames: 2, attempts: 3 },
            || Error::NotEmpty { trees: vec!["a".into()] },
            || Error::OutOfSpace(OutOfSpaceError::NoGrowth),
            || Error::Open(OpenError::NotAFilePath { what: "d/".into() }),
            || Error::WalFileMissing { path: "db.wal".into() },
            || Error::InvalidOptions(OptionsError::WalDeviceMissing),
            || Error::Spawn { thread: "t", source: std::io::ErrorKind::OutOfMemory.into() },
        ]
    }

    /// Through a per-operation enum and back, an error keeps its message and its variant: the
    /// `?` into `wafer::Result` that callers already write loses nothing.
    #[test]
    fn per_operation_errors_convert_back_unchanged() {
        for make in samples() {
            let before = make().to_string();
            let commit = CommitError::from(make());
            assert_eq!(commit.to_string(), before);
            assert_eq!(Error::from(commit).to_string(), before);
            let read = ReadError::from(make());
            assert_eq!(read.to_string(), before);
            assert_eq!(Error::from(read).to_string(), before);
            let check = CheckError::from(make());
            assert_eq!(check.to_string(), before);
            assert_eq!(Error::from(check).to_string(), before);
            let maintenance = MaintenanceError::from(make());
            assert_eq!(maintenance.to_string(), before);
            assert_eq!(Error::from(maintenance).to_string(), before);
            let open = DbOpenError::from(make());
            assert_eq!(open.to_string(), before);
            assert_eq!(Error::from(open).to_string(), before);
            let storage = StorageError::from(make());
            assert_eq!(storage.to_string(), before);
            assert_eq!(Error::from(storage).to_string(), before);
        }
        let back = Error::from(CommitError::from(Error::NotEmpty { trees: vec!["a".into()] }));
        assert!(matches!(back, Error::NotEmpty { .. }), "{back}");
    }

    /// The variants a caller acts on come out typed, the storage's failures under `Storage`.
    #[test]
    fn refusals_are_typed_and_storage_failures_shared() {
        assert!(matches!(CommitError::from(Error::ReadOnly), CommitError::ReadOnly));
        assert!(matches!(
            CommitError::from(Error::LockTimeout { tree: "t".into(), waited_ms: 1 }),
            CommitError::LockTimeout { waited_ms: 1, .. }
        ));
        assert!(matches!(ReadError::from(Error::Closed), ReadError::Closed));
        assert!(matches!(ReadError::from(Error::SnapshotExpired), ReadError::SnapshotExpired));
        let torn = ReadError::from(Corruption::ReadingWriteDeclined);
        assert!(matches!(torn, ReadError::Storage(StorageError::Corruption(_))), "{torn}");
        let page = CommitError::from(Error::CorruptPage { page_id: 4, reason: "crc".into() });
        assert!(matches!(page, CommitError::Storage(StorageError::CorruptPage { .. })));
        assert!(matches!(MaintenanceError::from(Error::Closed), MaintenanceError::Closed));
        assert!(matches!(MaintenanceError::from(Error::Poisoned), MaintenanceError::Poisoned));
        assert!(matches!(MaintenanceError::from(Error::ReadOnly), MaintenanceError::ReadOnly));
        let not_a_file = Error::Open(OpenError::NotAFilePath { what: "d/".into() });
        assert!(matches!(
            MaintenanceError::from(not_a_file),
            MaintenanceError::Open(OpenError::NotAFilePath { .. })
        ));
        let not_empty = MaintenanceError::from(Error::NotEmpty { trees: vec!["a".into()] });
        assert!(matches!(not_empty, MaintenanceError::NotEmpty { .. }), "{not_empty}");
        let reason = RedoFailure::DeletedKeyMissing;
        let redo = MaintenanceError::from(Error::Redo { lsn: 1, page_id: 2, reason });
        assert!(matches!(redo, MaintenanceError::Storage(StorageError::Other(_))), "{redo}");
        let back = Error::from(MaintenanceError::from(Error::Redo {
            lsn: 1,
            page_id: 2,
            reason: RedoFailure::DeletedKeyMissing,
        }));
        assert!(matches!(back, Error::Redo { lsn: 1, page_id: 2, .. }), "{back}");
    }

    /// What an open can fail with comes out typed: the refusal, the options, the missing WAL,
    /// a failed redo; each converts back unchanged.
    #[test]
    fn open_errors_are_typed() {
        let locked = Error::Open(OpenError::Locked { path: "db".into() });
        assert!(matches!(
            DbOpenError::from(locked),
            DbOpenError::Refused(OpenError::Locked { .. })
        ));
        let options = DbOpenError::from(Error::InvalidOptions(OptionsError::WalDeviceMissing));
        assert!(matches!(options, DbOpenError::InvalidOptions(_)), "{options}");
        let wal = DbOpenError::from(Error::WalFileMissing { path: "db.wal".into() });
        assert!(matches!(wal, DbOpenError::WalFileMissing { .. }), "{wal}");
        let torn = DbOpenError::from(Corruption::ReadingWriteDeclined);
        assert!(matches!(torn, DbOpenError::Storage(StorageError::Corruption(_))), "{torn}");
        let redo = Error::Redo { lsn: 1, page_id: 2, reason: RedoFailure::NotANode { tree_id: 3 } };
        let open = DbOpenError::from(redo);
        assert!(matches!(open, DbOpenError::Recovery { lsn: 1, .. }), "{open}");
        assert_eq!(
            open.to_string(),
            "recovery failed at WAL lsn 1 (page 2): rebuild of a page that is no node of tree 3"
        );
        let back = Error::from(open);
        assert!(matches!(back, Error::Redo { lsn: 1, page_id: 2, .. }), "{back}");
    }
}
