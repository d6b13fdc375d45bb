//! The engine's error type. Layered: device errors are wrapped, never flattened into strings.
use thiserror::Error;

pub use crate::device::DeviceError;

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
    #[error("out of space: {0}")]
    OutOfSpace(String),
    #[error("invalid options: {0}")]
    InvalidOptions(String),
    #[error("tree name `{0}` is invalid: {1}")]
    InvalidTreeName(String, &'static str),
    #[error("database is poisoned by an earlier I/O error and refuses writes until reopened")]
    Poisoned,
    #[error("database is closed")]
    Closed,
    #[error("corrupt database: {0}")]
    Corrupt(String),
    /// The data file exists but its WAL file does not: opening without the log would lose
    /// acknowledged commits, so the database refuses.
    #[error("WAL file {path} of an existing database is missing")]
    WalFileMissing { path: std::path::PathBuf },
    /// Redo could not apply a record to its page.
    #[error("recovery failed at WAL lsn {lsn} (page {page_id}): {reason}")]
    Redo { lsn: u64, page_id: u64, reason: String },
}
