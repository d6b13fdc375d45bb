//! What every engine is given when it opens: a leaf below the engines and the harness.
use std::path::PathBuf;

use crate::durability::Durability;
use crate::raw_row::RawJob;

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
    /// Bypass the page cache where the engine can (see [`PeersConfig::direct_io`](crate::PeersConfig::direct_io)).
    pub direct_io: bool,
    /// Values at least this long go to blob files (RocksDB's `min_blob_size`; Wafer's blob
    /// rows' `blob_threshold`), see [`PeersConfig::blob_threshold_bytes`](crate::PeersConfig::blob_threshold_bytes).
    pub blob_threshold_bytes: u32,
    /// A Wafer raw row: the served device files it opens instead of `dir`.
    pub raw: Option<RawJob>,
}

impl PeerSetup {
    /// Keys plus values of the loaded records.
    pub fn dataset_bytes(&self) -> u64 {
        self.record_count * u64::from(self.value_size_bytes + self.key_bytes)
    }
}
