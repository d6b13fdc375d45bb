//! Peers side by side: the same YCSB phases (load, A, B, C, F; zipf and uniform) against Wafer
//! and the engines a user would pick instead (RocksDB, LMDB, WiredTiger, PostgreSQL), with
//! value size, record count, cache, threads and durability matched and stated.
//!
//! ```text
//!  PeersConfig --> for each round, each engine (order rotated per round):
//!                    open in a fresh directory --> load --> A B C F (zipf) --> A B C F (uniform)
//!                    each phase: the runner's workers + host bytes from /proc/PID/io
//!                  --> rows (JSON), markdown table, bar charts
//! ```
//!
//! Every peer is driven through its C library (opened at run time, so the build needs none
//! installed) behind the runner's [`KvTarget`], in a worker process of its own (`wafer bench
//! peers-worker`; see `worker`); PostgreSQL runs as a server the worker starts, and its host
//! bytes are those of its whole process tree. Host bytes are what each process caused to be
//! read from or written to storage, so they include each engine's log, compaction,
//! checkpoints and background writeback, whatever its own counters call them.

mod dl;
pub mod emu_device;
pub mod harness;
mod lmdb;
mod phases;
mod postgres;
pub mod procio;
pub mod raw;
mod rocksdb;
pub mod speed;
pub mod table;
mod wafer_peer;
mod watch;
mod wiredtiger;
pub mod worker;

#[cfg(test)]
mod tests;

use std::path::{Path, PathBuf};

pub use emu_device::EmuDevice;
pub use harness::{run, PeerDevice, PeersConfig, PeersReport, Row, Scale, WriteVolume};

use procio::{HostIo, ProcIoError};
use wafer_harness::runner::{KvTarget, TargetError};

/// A peer that cannot be set up or driven.
#[derive(Debug, thiserror::Error)]
pub enum PeerError {
    #[error("{library} could not be loaded ({reason}); install the Debian package {package}")]
    Missing { library: String, package: String, reason: String },
    #[error("{engine} {op}: {message}")]
    Engine { engine: &'static str, op: &'static str, message: String },
    #[error("{path}: {reason}")]
    Io { path: PathBuf, reason: String },
    #[error("{0}")]
    Config(String),
    #[error(transparent)]
    Target(#[from] TargetError),
    #[error(transparent)]
    ProcIo(#[from] ProcIoError),
    #[error("wafer setup: {0}")]
    Wafer(String),
    #[error("{phase} of {engine}: {message}")]
    Run { engine: String, phase: String, message: String },
}

impl PeerError {
    pub(crate) fn io(path: &Path, e: std::io::Error) -> PeerError {
        PeerError::Io { path: path.to_path_buf(), reason: e.to_string() }
    }
}

/// When a commit is on stable storage.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Durability {
    /// Each commit syncs its log (LMDB: its pages and meta page) before it returns.
    Sync,
    /// Each commit writes its log record; the engine syncs later (background flush,
    /// checkpoint, or the OS). A crash may lose the last commits, never consistency.
    Lazy,
}

impl Durability {
    pub fn parse(text: &str) -> Result<Durability, String> {
        match text.trim() {
            "sync" => Ok(Durability::Sync),
            "lazy" | "none" => Ok(Durability::Lazy),
            other => Err(format!("durability `{other}`: expected sync or lazy")),
        }
    }

    pub fn name(&self) -> &'static str {
        match self {
            Durability::Sync => "sync",
            Durability::Lazy => "lazy",
        }
    }
}

/// What every engine is given: the same directory kind, cache, threads and durability.
#[derive(Debug, Clone, PartialEq)]
pub struct PeerSetup {
    /// A fresh directory of the engine's own.
    pub dir: PathBuf,
    /// The engine's own cache (buffer pool, block cache, shared_buffers).
    pub cache_bytes: u64,
    pub threads: u32,
    pub durability: Durability,
    pub record_count: u64,
    pub value_size_bytes: u32,
    /// Bytes of one key as the workload formats them.
    pub key_bytes: u32,
    /// Bypass the page cache where the engine can (see [`PeersConfig::direct_io`]).
    pub direct_io: bool,
    /// Values at least this long go to blob files (RocksDB's `min_blob_size`; Wafer's blob
    /// rows' `blob_threshold`), see [`PeersConfig::blob_threshold_bytes`].
    pub blob_threshold_bytes: u32,
    /// A Wafer raw row: the served device files it opens instead of `dir`.
    pub raw: Option<raw::RawJob>,
}

impl PeerSetup {
    /// Keys plus values of the loaded records.
    pub fn dataset_bytes(&self) -> u64 {
        self.record_count * u64::from(self.value_size_bytes + self.key_bytes)
    }
}

/// The engines the harness knows (serialized by name).
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(try_from = "String", into = "String")]
pub enum EngineKind {
    WaferInPlace,
    WaferOutOfPlace,
    /// Out of place with LZ4 page compression and packing: the best the engine has now.
    WaferBest,
    /// As `WaferBest`, with values of [`PeersConfig::blob_threshold_bytes`] or more out of line
    /// (blobs), on a file as the other engines are.
    WaferBlobs,
    /// Wafer on the emulated SSD's served file, no filesystem: each of
    /// [`PeersConfig::raw_rows`] (skipped on `file`, which has no device under it).
    WaferRaw,
    RocksDb,
    /// RocksDB with integrated blob files (BlobDB): values of `min_blob_size` or more in blob
    /// files, LZ4, blob GC on.
    RocksDbBlob,
    Lmdb,
    WiredTiger,
    Postgres,
}

impl TryFrom<String> for EngineKind {
    type Error = String;
    fn try_from(text: String) -> Result<EngineKind, String> {
        EngineKind::parse(&text)
    }
}

impl From<EngineKind> for String {
    fn from(e: EngineKind) -> String {
        e.name().to_string()
    }
}

impl EngineKind {
    pub const ALL: [EngineKind; 10] = [
        EngineKind::WaferInPlace,
        EngineKind::WaferOutOfPlace,
        EngineKind::WaferBest,
        EngineKind::WaferBlobs,
        EngineKind::WaferRaw,
        EngineKind::RocksDb,
        EngineKind::RocksDbBlob,
        EngineKind::Lmdb,
        EngineKind::WiredTiger,
        EngineKind::Postgres,
    ];

    pub fn name(&self) -> &'static str {
        match self {
            EngineKind::WaferInPlace => "wafer-in-place",
            EngineKind::WaferOutOfPlace => "wafer-out-of-place",
            EngineKind::WaferBest => "wafer-oop-lz4",
            EngineKind::WaferBlobs => "wafer-oop-blobs",
            EngineKind::WaferRaw => "wafer-raw",
            EngineKind::RocksDb => "rocksdb",
            EngineKind::RocksDbBlob => "rocksdb-blob",
            EngineKind::Lmdb => "lmdb",
            EngineKind::WiredTiger => "wiredtiger",
            EngineKind::Postgres => "postgres",
        }
    }

    pub fn parse(text: &str) -> Result<EngineKind, String> {
        let t = text.trim();
        EngineKind::ALL.into_iter().find(|e| e.name() == t).ok_or_else(|| {
            let names: Vec<_> = EngineKind::ALL.iter().map(|e| e.name()).collect();
            format!("unknown engine `{t}` (known: {})", names.join(", "))
        })
    }

    /// One of Wafer's configurations.
    pub fn is_wafer(&self) -> bool {
        matches!(
            self,
            EngineKind::WaferInPlace
                | EngineKind::WaferOutOfPlace
                | EngineKind::WaferBest
                | EngineKind::WaferBlobs
                | EngineKind::WaferRaw
        )
    }

    /// Why this engine cannot store values of `value_bytes` (None: it can). Wafer keeps values
    /// in its B+tree's leaves, at most [`wafer::page::node::MAX_VALUE_BYTES`] each, unless a
    /// raw row gives it a blob threshold (then the engine itself says whether it can).
    pub fn value_size_refusal(
        &self,
        value_bytes: u32,
        raw: Option<&raw::RawRow>,
    ) -> Option<String> {
        let max = wafer::page::node::MAX_VALUE_BYTES as u32;
        let wafer = self.is_wafer();
        let blobs = *self == EngineKind::WaferBlobs
            || raw.is_some_and(|r| {
                r.engine.iter().any(|o| o.starts_with(raw::BLOB_THRESHOLD_OPTION))
            });
        (wafer && !blobs && value_bytes > max).then(|| {
            format!(
                "values of {value_bytes} bytes: this Wafer row keeps values in its leaves, at \
                 most {max} bytes each (out-of-line values: a raw row with blob_threshold)"
            )
        })
    }

    /// Opens the engine on `setup.dir` (created empty by the caller).
    pub(crate) fn open(&self, setup: &PeerSetup) -> Result<Box<dyn Peer>, PeerError> {
        Ok(match self {
            EngineKind::WaferInPlace
            | EngineKind::WaferOutOfPlace
            | EngineKind::WaferBest
            | EngineKind::WaferBlobs => Box::new(wafer_peer::WaferPeer::open(*self, setup)?),
            EngineKind::WaferRaw => match &setup.raw {
                Some(job) => Box::new(wafer_peer::WaferPeer::open_raw(job, setup)?),
                None => {
                    return Err(PeerError::Config(
                        "wafer-raw runs on an emulated SSD's served file only".into(),
                    ))
                }
            },
            EngineKind::RocksDb => Box::new(rocksdb::RocksPeer::open(setup, false)?),
            EngineKind::RocksDbBlob => Box::new(rocksdb::RocksPeer::open(setup, true)?),
            EngineKind::Lmdb => Box::new(lmdb::LmdbPeer::open(setup)?),
            EngineKind::WiredTiger => Box::new(wiredtiger::WtPeer::open(setup)?),
            EngineKind::Postgres => Box::new(postgres::PgPeer::open(setup)?),
        })
    }
}

/// An engine under comparison: the runner's target plus where its host bytes are counted.
pub(crate) trait Peer: Send + Sync {
    fn target(&self) -> &dyn KvTarget;
    /// Cumulative host I/O of every process doing this engine's work (by default this one: the
    /// engine's worker, where nothing else does I/O).
    fn host_io(&self) -> Result<HostIo, ProcIoError> {
        procio::of_pid(std::process::id())
    }
    /// Under lazy durability, called every [`LAZY_SYNC_INTERVAL`] while the engine runs: its
    /// own call that puts what it has committed on stable storage (a log sync, an environment
    /// sync), so that no engine's writes wait in the page cache for the phase's end. Engines
    /// whose own background work already bounds that (PostgreSQL's WAL writer) leave it be.
    fn sync(&self) -> Result<(), TargetError> {
        Ok(())
    }
    /// Cumulative bytes the engine wrote, by the kind of file, as its own counters tell
    /// (empty: it does not tell). Only kinds that are files: what reached the device of them is
    /// the device's count.
    fn written_by_kind(&self) -> Vec<(&'static str, u64)> {
        Vec::new()
    }
}

/// How often lazy durability syncs each engine: the bound on how long a commit may sit in
/// the page cache, the same for every engine.
pub const LAZY_SYNC_INTERVAL: std::time::Duration = std::time::Duration::from_secs(1);
