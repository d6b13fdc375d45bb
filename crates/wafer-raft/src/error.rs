//! The crate's error type, and its conversion into openraft's `StorageError` (which openraft
//! treats as fatal: the node stops rather than run on a store it cannot trust).
use crate::types::NodeId;
use openraft::{AnyError, ErrorSubject, ErrorVerb, StorageError, StorageIOError};
use thiserror::Error;

pub type Result<T, E = Error> = std::result::Result<T, E>;

#[derive(Debug, Error)]
pub enum Error {
    /// The engine refused or failed an operation.
    #[error(transparent)]
    Wafer(#[from] wafer::Error),
    /// A stored record (vote, log entry, applied state, snapshot meta) does not decode: the
    /// store was written by something else or is damaged.
    #[error("stored {what} does not decode: {source}")]
    Decode {
        what: &'static str,
        #[source]
        source: serde_json::Error,
    },
    /// A record could not be encoded (never expected for the crate's own types).
    #[error("{what} does not encode: {source}")]
    Encode {
        what: &'static str,
        #[source]
        source: serde_json::Error,
    },
    /// Snapshot bytes fail their format or checksum checks; nothing was installed.
    #[error("snapshot data is invalid: {0}")]
    SnapshotFormat(String),
    /// A log key in the log tree is not an 8-byte index.
    #[error("log tree holds a key of {0} bytes (expected 8)")]
    LogKey(usize),
    /// The database was opened without out-of-line values, so entries and snapshots over
    /// 2 KiB could not be stored.
    #[error("the database must be opened with a blob threshold (Options::with_blobs)")]
    BlobsRequired,
    /// The blocking task that ran the engine call panicked or was cancelled.
    #[error("storage task failed: {0}")]
    Task(String),
}

impl Error {
    /// As openraft's error, naming what failed (`subject`) and how (`verb`).
    pub(crate) fn storage(
        self,
        subject: ErrorSubject<NodeId>,
        verb: ErrorVerb,
    ) -> StorageError<NodeId> {
        StorageIOError::new(subject, verb, AnyError::new(&self)).into()
    }
}

/// JSON encoding of a stored record.
pub(crate) fn encode<T: serde::Serialize>(what: &'static str, value: &T) -> Result<Vec<u8>> {
    serde_json::to_vec(value).map_err(|source| Error::Encode { what, source })
}

/// JSON decoding of a stored record.
pub(crate) fn decode<T: serde::de::DeserializeOwned>(
    what: &'static str,
    bytes: &[u8],
) -> Result<T> {
    serde_json::from_slice(bytes).map_err(|source| Error::Decode { what, source })
}

/// Runs a blocking engine call off the async executor: a Wafer write may wait on an fsync, which
/// would otherwise stall every task sharing the worker thread.
pub(crate) async fn blocking<T, F>(f: F) -> Result<T>
where
    T: Send + 'static,
    F: FnOnce() -> Result<T> + Send + 'static,
{
    match tokio::task::spawn_blocking(f).await {
        Ok(r) => r,
        Err(e) => Err(Error::Task(e.to_string())),
    }
}

// The engine's per-operation errors join the one `Wafer` variant, kept whole.
wafer::from_operation_errors!(Error, Error::Wafer);
