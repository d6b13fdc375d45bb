//! The engines the harness knows, by name. Opening one is the crate root's (`EngineKind::open`):
//! the engines' modules name the kind, so it cannot open them from here.
use crate::raw_row::{RawRow, BLOB_THRESHOLD_OPTION};

/// The engines the harness knows (serialized by name).
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(try_from = "String", into = "String")]
pub enum EngineKind {
    WaferInPlace,
    WaferOutOfPlace,
    /// Out of place with LZ4 page compression and packing: the best the engine has now.
    WaferBest,
    /// As `WaferBest`, with values of [`PeersConfig::blob_threshold_bytes`](crate::PeersConfig::blob_threshold_bytes) or more out of line
    /// (blobs), on a file as the other engines are.
    WaferBlobs,
    /// Wafer on the emulated SSD's served file, no filesystem: each of
    /// [`PeersConfig::raw_rows`](crate::PeersConfig::raw_rows) (skipped on `file`, which has no device under it).
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
    /// in its B+tree's leaves, at most [`wafer::options::MAX_INLINE_VALUE_BYTES`] each, unless a
    /// raw row gives it a blob threshold (then the engine itself says whether it can).
    pub fn value_size_refusal(&self, value_bytes: u32, raw: Option<&RawRow>) -> Option<String> {
        let max = wafer::options::MAX_INLINE_VALUE_BYTES as u32;
        let wafer = self.is_wafer();
        let blobs = *self == EngineKind::WaferBlobs
            || raw.is_some_and(|r| r.engine.iter().any(|o| o.starts_with(BLOB_THRESHOLD_OPTION)));
        (wafer && !blobs && value_bytes > max).then(|| {
            format!(
                "values of {value_bytes} bytes: this Wafer row keeps values in its leaves, at \
                 most {max} bytes each (out-of-line values: a raw row with blob_threshold)"
            )
        })
    }
}
