//! Wafer as a peer: the bench runner's engine target on a file, its WAL on a file beside it
//! (`F.wal`, synced per commit when durability is sync), set up as `wafer bench ycsb` does.

use super::durability::Durability;
use super::emu_device::fs_space;
use super::engine::EngineKind;
use super::error::PeerError;
use super::peer::Peer;
use super::raw::{self, RawJob};
use super::setup::PeerSetup;
use wafer::device::FileDevice;
use wafer_harness::runner::engine::EngineTarget;
use wafer_harness::runner::{setup, BenchConfig, KvTarget, TargetError};

/// The data file holds the dataset three times over: the B+tree's page fill (a sorted load
/// with middle splits leaves every leaf half full: twice the dataset, which did not fit in a
/// file of twice the dataset) and, out of place, the free zones DB GC works in. Sparse: space
/// never written costs nothing.
const FILE_CAPACITY_PER_DATASET: u64 = 3;
/// The share of the filesystem's free space (less the WAL) the data file may take at most:
/// the rest is for the filesystem's metadata and what else lives there.
const FILE_SHARE_OF_ROOM_PERCENT: u64 = 95;
/// Out of place, the file is cut into this many zones.
const ZONES_PER_FILE: u64 = 64;

pub(crate) struct WaferPeer {
    target: Box<dyn KvTarget>,
    /// The data file and WAL, synced (fdatasync) under lazy durability after the engine's own
    /// `Db::sync` made its log (and the blobs it names) durable.
    files: Vec<std::path::PathBuf>,
}

impl std::fmt::Debug for WaferPeer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WaferPeer").finish_non_exhaustive()
    }
}

/// The `wafer bench ycsb` configuration of `kind` on `setup`.
pub(crate) fn bench_config(kind: EngineKind, setup: &PeerSetup) -> BenchConfig {
    let block = wafer::device::BLOCK_BYTES;
    // Half the dataset, within 16 MiB ..= 1 GiB (the production size).
    let wal_bytes = (setup.dataset_bytes() / 2).clamp(16 << 20, 1 << 30) / block * block;
    let mut capacity = (setup.dataset_bytes() * FILE_CAPACITY_PER_DATASET).max(64 << 20);
    // On a filesystem smaller than that (an emulated SSD sized to the engine), the file is
    // what the filesystem has room for beside the WAL, as a user would size it: out of
    // place, DB GC then works in the space there is instead of failing on a full disk.
    if let Ok(space) = fs_space(&setup.dir) {
        let room = space.avail_bytes.saturating_sub(wal_bytes) / 100 * FILE_SHARE_OF_ROOM_PERCENT;
        capacity = capacity.min(room).max(64 << 20);
    }
    let mut engine = vec![
        format!("file_capacity_bytes={}", capacity.div_ceil(block) * block),
        format!(
            "durability={}",
            if setup.durability == Durability::Sync { "sync" } else { "none" }
        ),
        format!("wal_capacity_bytes={wal_bytes}"),
        // Checkpointed at a quarter of the log, as the production options do (1 GiB, 256 MiB).
        format!("checkpoint_log_bytes={}", wal_bytes / 4),
    ];
    if setup.direct_io {
        engine.push("file_direct=true".to_string());
    }
    let mode = match kind {
        EngineKind::WaferInPlace => "in-place",
        _ => "out-of-place",
    };
    if kind != EngineKind::WaferInPlace {
        // A file reports no zones: 64 zones of the file (GC's unit), 1 MiB ..= 64 MiB each.
        let zone = (capacity / ZONES_PER_FILE).clamp(1 << 20, 64 << 20) / block * block;
        engine.push(format!("zone_bytes={zone}"));
    }
    if matches!(kind, EngineKind::WaferBest | EngineKind::WaferBlobs) {
        engine.extend(["compression=lz4".to_string(), "packing=true".to_string()]);
    }
    if kind == EngineKind::WaferBlobs {
        engine.push(format!("{}={}", raw::BLOB_THRESHOLD_OPTION, setup.blob_threshold_bytes));
        engine.push(raw::BLOB_ID_CAP_OPTION.into());
    }
    BenchConfig {
        device: Some(format!("file:{}", setup.dir.join("wafer.db").display())),
        records: Some(setup.record_count),
        value_size: Some(setup.value_size_bytes),
        buffer: Some(format!("{}B", setup.cache_bytes)),
        threads: Some(setup.threads),
        write_mode: Some(mode.to_string()),
        engine: BenchConfig::settings(&engine).unwrap_or_default(),
        ..BenchConfig::default()
    }
}

impl WaferPeer {
    pub(crate) fn open(kind: EngineKind, setup: &PeerSetup) -> Result<WaferPeer, PeerError> {
        let config = bench_config(kind, setup);
        let prepared = setup::prepare(&config).map_err(|e| PeerError::Wafer(e.to_string()))?;
        let data = setup.dir.join("wafer.db");
        let files = vec![wafer::db::wal_path(&data), data];
        Ok(WaferPeer { target: prepared.target, files })
    }
}

impl WaferPeer {
    /// A raw row: the engine on the served device files themselves (see `raw`).
    pub(crate) fn open_raw(job: &RawJob, setup: &PeerSetup) -> Result<WaferPeer, PeerError> {
        let mut options =
            setup::engine_options(&raw::bench_config(&job.engine)?).map_err(raw::wafer_error)?;
        options.buffer_pool_bytes = setup.cache_bytes;
        options.file_capacity_bytes = job.data_capacity_bytes;
        // Out of place the data starts after one block (what `bench ycsb` gives it).
        options.data_offset_bytes = wafer::device::BLOCK_BYTES;
        options.create = wafer::CreateMode::New;
        let open = |path: &std::path::Path, bytes: u64| {
            FileDevice::open(path, bytes, options.file)
                .map_err(|e| PeerError::Io { path: path.to_path_buf(), reason: e.to_string() })
        };
        let data = open(&job.data_path, job.data_capacity_bytes)?;
        let wal = open(&job.wal_path, job.wal_capacity_bytes)?;
        let description = serde_json::json!({
            "kind": "served device file (no filesystem)",
            "data": job.data_path,
            "wal": job.wal_path,
            "row": job.row,
        });
        let target = EngineTarget::open(Box::new(data), Some(Box::new(wal)), options, description)
            .map_err(raw::wafer_error)?;
        let files = vec![job.wal_path.clone(), job.data_path.clone()];
        Ok(WaferPeer { target: Box::new(target), files })
    }
}

impl Peer for WaferPeer {
    fn target(&self) -> &dyn KvTarget {
        self.target.as_ref()
    }

    fn sync(&self) -> Result<(), TargetError> {
        if let Some(r) = self.target.sync_committed() {
            r?;
        }
        for path in &self.files {
            std::fs::File::open(path)
                .and_then(|f| f.sync_data())
                .map_err(|e| TargetError::new("sync", format!("{}: {e}", path.display())))?;
        }
        Ok(())
    }
}
