//! What a comparison runs: its engines, devices, sizes, phases and rounds (also the job a worker
//! is sent), and the presets of it. A leaf below the harness, its workers and its phases, which
//! all read it.
use std::path::PathBuf;
use std::time::Duration;

use crate::durability::Durability;
use crate::emu_device::EmuDevice;
use crate::engine::EngineKind;
use crate::error::PeerError;
use crate::fault::WorkerFault;
use crate::raw_row::{RawRow, RAW_BASE};
use crate::setup::PeerSetup;
use wafer_harness::runner::Stop;
use wafer_workloads::dist::Distribution;
use wafer_workloads::ycsb::{KeyFormat, Workload, WorkloadSpec};

pub const PEERS_SCHEMA: &str = "wafer-bench/peers";
pub const PEERS_VERSION: u32 = 3;
/// Bound on rounds: each runs every engine through every phase.
pub const ROUNDS_MAX: u32 = 100;
/// Values of at least this many bytes go to blob files where an engine has them: RocksDB's
/// `min_blob_size` in `rocksdb-blob` and Wafer's `blob_threshold` in a raw blob row, one
/// figure for both. 512: YCSB's 1000-byte values (and 4000-byte ones) go out of line, as a
/// user picking BlobDB to cut write amplification at 1 KB values would set it; 100-byte
/// values stay inline, where separating them would cost an extra read for little gain.
pub const BLOB_THRESHOLD_BYTES_DEFAULT: u32 = 512;
/// The largest value any run asks for: each engine then says whether it can hold it.
pub const VALUE_BYTES_MAX: u32 = 1 << 20;

/// Preset sizes of a comparison.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scale {
    /// CI's smoke test: every engine starts, loads, runs and reports, in seconds.
    Tiny,
    /// Dataset 8x the cache, 15 s per phase: a few minutes per engine.
    Small,
    /// 4 GiB-class dataset... see `config`: 1 GiB of records, 8x the cache, 60 s per phase.
    Full,
}

impl Scale {
    pub fn parse(text: &str) -> Result<Scale, String> {
        match text.trim() {
            "tiny" => Ok(Scale::Tiny),
            "small" => Ok(Scale::Small),
            "full" => Ok(Scale::Full),
            other => Err(format!("scale `{other}`: expected tiny, small or full")),
        }
    }

    pub fn name(&self) -> &'static str {
        match self {
            Scale::Tiny => "tiny",
            Scale::Small => "small",
            Scale::Full => "full",
        }
    }

    /// How long an engine may go without finishing a phase (opening and the load count as
    /// one) before it is killed: the load on the emulated SSD's FUSE round trips, with room
    /// for a slow shared machine.
    pub fn phase_timeout(&self) -> Duration {
        Duration::from_secs(match self {
            Scale::Tiny => 5 * 60,
            Scale::Small => 10 * 60,
            Scale::Full => 40 * 60,
        })
    }

    /// The preset: records of 1000-byte values (YCSB's record), the cache an eighth of the
    /// data (a quarter at tiny scale, where the engines' fixed overheads dominate anyway).
    pub fn config(&self, dir: PathBuf) -> PeersConfig {
        let (records, cache_bytes, stop) = match self {
            Scale::Tiny => (4_000, 1 << 20, Stop::Ops(2_000)),
            Scale::Small => (200_000, 24 << 20, Stop::Duration(Duration::from_secs(15))),
            Scale::Full => (1_000_000, 128 << 20, Stop::Duration(Duration::from_secs(60))),
        };
        // Two capacities per write phase: the device's GC has turned every block over at
        // least once before the phase's second half, the steady state rows report.
        let volume = |limit_s| WriteVolume { capacities: 2.0, limit: Duration::from_secs(limit_s) };
        let emu_write_phases = match self {
            Scale::Tiny => None,
            Scale::Small => Some(volume(45)),
            Scale::Full => Some(volume(300)),
        };
        PeersConfig {
            scale: self.name().to_string(),
            engines: EngineKind::ALL.to_vec(),
            devices: vec![PeerDevice::File],
            record_count: records,
            value_size_bytes: wafer_workloads::ycsb::YCSB_RECORD_BYTES,
            cache_bytes,
            threads: 2,
            durability: Durability::Lazy,
            stop,
            emu_write_phases,
            distributions: vec![Distribution::YCSB_ZIPFIAN, Distribution::Uniform],
            workloads: vec![Workload::A, Workload::B, Workload::C, Workload::F],
            rounds: 1,
            dir,
            seed: 0x5EED,
            keep: false,
            key_format: KeyFormat::default(),
            direct_io: false,
            load_batch: 1,
            wafer_exe: None,
            phase_timeout: self.phase_timeout(),
            fault: None,
            raw_rows: RawRow::defaults(),
            blob_threshold_bytes: BLOB_THRESHOLD_BYTES_DEFAULT,
        }
    }
}

/// When a write phase (A, F: half their operations write) ends on an emulated SSD: once the
/// device has received `capacities` times its logical bytes of host writes, counted by the
/// device itself (000 runs until 4x; the four write phases make 4x), or after `limit`,
/// whichever comes first. Not the engine's host writes from `/proc`: they overstate buffered
/// writers (whole folios, pages rewritten before writeback), so phases counted there put
/// unequal multiples of their capacities on the devices (see `watch`).
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct WriteVolume {
    pub capacities: f64,
    pub limit: Duration,
}

impl WriteVolume {
    pub fn stop(&self) -> Stop {
        Stop::DbWritesWithin { capacities: self.capacities, limit: self.limit }
    }
}

/// Where the engines' files live.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub enum PeerDevice {
    /// A directory on the host's own filesystem.
    File,
    /// A fresh emulated SSD per engine, under ext4 with discard (see `emu_device`).
    Emu(Box<EmuDevice>),
}

impl PeerDevice {
    pub fn name(&self) -> &str {
        match self {
            PeerDevice::File => "file",
            PeerDevice::Emu(d) => &d.name,
        }
    }

    fn describe(&self, dataset_bytes: u64) -> serde_json::Value {
        match self {
            PeerDevice::File => serde_json::json!({ "name": "file" }),
            PeerDevice::Emu(d) => d.describe(dataset_bytes),
        }
    }
}

/// One comparison: what every engine gets (also the job a worker is sent).
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct PeersConfig {
    pub scale: String,
    pub engines: Vec<EngineKind>,
    /// Every engine runs on each of these in turn.
    pub devices: Vec<PeerDevice>,
    pub record_count: u64,
    pub value_size_bytes: u32,
    pub cache_bytes: u64,
    pub threads: u32,
    pub durability: Durability,
    /// When each run phase (A, B, C, F) ends, except the write phases on an emulated SSD when
    /// `emu_write_phases` is set.
    pub stop: Stop,
    /// On an emulated SSD: write phases end at a volume of writes (see [`WriteVolume`]).
    #[serde(default)]
    pub emu_write_phases: Option<WriteVolume>,
    pub distributions: Vec<Distribution>,
    pub workloads: Vec<Workload>,
    pub rounds: u32,
    /// Engines' directories go under it (`round-R/ENGINE`), removed after each engine unless
    /// `keep`.
    pub dir: PathBuf,
    pub seed: u64,
    pub keep: bool,
    /// How key numbers become keys: hashed (random insert order) or ordered (sorted load),
    /// and their width.
    pub key_format: KeyFormat,
    /// Engines that can bypass the page cache do (Wafer: O_DIRECT; RocksDB: direct reads and
    /// direct flush/compaction); LMDB maps its file and cannot.
    pub direct_io: bool,
    /// Records per atomic batch in the load (Wafer and RocksDB: a `WriteBatch`; LMDB: one
    /// transaction; WiredTiger and PostgreSQL have no batch path here and insert singly); 1
    /// loads by single inserts.
    #[serde(default = "one")]
    pub load_batch: u32,
    /// The `wafer` binary, required: each engine runs in a worker process of its own (`wafer
    /// bench peers-worker`) and each emulated SSD is served by a child `wafer emu serve`. So
    /// an engine that aborts or hangs is an error in its rows, and its host bytes
    /// (`/proc/PID/io` of its process) are its own: in the caller's process they would be
    /// every thread's, and another thread's deleted dirty files would cancel them (a test
    /// beside the smoke tests once made a load report 0 bytes). None is refused by
    /// [`PeersConfig::validate`]; it is an Option because a preset cannot know the binary.
    pub wafer_exe: Option<PathBuf>,
    /// How long an engine may go without finishing a phase (worker processes only) before it
    /// is killed and reported as failed: a panicked library that stops making progress ends
    /// its run, not the comparison.
    pub phase_timeout: Duration,
    /// Tests of the harness only: every worker stages this failure.
    pub fault: Option<WorkerFault>,
    /// The Wafer rows on the raw served device (engine `wafer-raw`), each its own row.
    #[serde(default = "RawRow::defaults")]
    pub raw_rows: Vec<RawRow>,
    /// See [`BLOB_THRESHOLD_BYTES_DEFAULT`].
    #[serde(default = "blob_threshold_default")]
    pub blob_threshold_bytes: u32,
}

impl PeersConfig {
    pub fn validate(&self) -> Result<(), PeerError> {
        let bad = |m: String| Err(PeerError::Config(m));
        // No workload: the load alone is measured.
        if self.engines.is_empty()
            || self.devices.is_empty()
            || (!self.workloads.is_empty() && self.distributions.is_empty())
        {
            return bad(
                "give at least one engine and device, and a distribution for the workloads".into(),
            );
        }
        if !(1..=ROUNDS_MAX).contains(&self.rounds) {
            return bad(format!("rounds must be in 1..={ROUNDS_MAX}"));
        }
        let batch_max = wafer_harness::runner::LOAD_BATCH_MAX;
        if !(1..=batch_max).contains(&self.load_batch) {
            return bad(format!("load batch must be in 1..={batch_max} records"));
        }
        if self.record_count < 2 || self.cache_bytes < (64 << 10) {
            return bad("need at least 2 records and a 64 KiB cache".into());
        }
        // Per engine beyond this: an engine that cannot hold the values is a named failure
        // in its rows (`EngineKind::value_size_refusal`), the others run.
        if !(1..=VALUE_BYTES_MAX).contains(&self.value_size_bytes) {
            return bad(format!("value size must be in 1..={VALUE_BYTES_MAX} bytes"));
        }
        if let Some(dup) = self.raw_rows.iter().enumerate().find_map(|(i, r)| {
            self.raw_rows[..i].iter().any(|o| o.name == r.name).then_some(&r.name)
        }) {
            return bad(format!("raw row {dup} given twice"));
        }
        if self.wafer_exe.is_none() {
            return bad("each engine runs in a worker process (`wafer bench peers-worker`, so \
                        its host bytes are its own) and each emulated SSD is served by a child \
                        `wafer emu serve`: give the wafer binary (wafer_exe)"
                .into());
        }
        if let Some(e) = self.devices.iter().find_map(|d| match d {
            PeerDevice::Emu(emu) => emu.sized_config(self.dataset_bytes(), None).err(),
            PeerDevice::File => None,
        }) {
            return Err(e);
        }
        if let Some(v) = self.emu_write_phases {
            if !(v.capacities.is_finite() && v.capacities > 0.0) || v.limit.is_zero() {
                return bad(format!(
                    "write phases until {}x or {:?}: both must be positive",
                    v.capacities, v.limit
                ));
            }
        }
        if self.workloads.iter().any(|w| matches!(w, Workload::D | Workload::E)) {
            return bad("the comparison runs A, B, C and F (D and E insert or scan)".into());
        }
        Ok(())
    }

    /// Keys plus values of the loaded records.
    pub fn dataset_bytes(&self) -> u64 {
        self.setup(PathBuf::new()).dataset_bytes()
    }

    pub(crate) fn setup(&self, dir: PathBuf) -> PeerSetup {
        PeerSetup {
            dir,
            cache_bytes: self.cache_bytes,
            threads: self.threads,
            durability: self.durability,
            record_count: self.record_count,
            value_size_bytes: self.value_size_bytes,
            key_bytes: self.key_bytes(),
            direct_io: self.direct_io,
            blob_threshold_bytes: self.blob_threshold_bytes,
            raw: None,
        }
    }

    /// Bytes of one key: ordered keys are as wide as the largest key number needs (at least
    /// the padding), hashed ones the format's fixed width.
    fn key_bytes(&self) -> u32 {
        if self.key_format.hashed {
            self.key_format.nominal_len_bytes() as u32
        } else {
            self.key_format.key(self.record_count.saturating_sub(1)).as_bytes().len() as u32
        }
    }

    pub(crate) fn workload(&self, workload: Workload, distribution: Distribution) -> WorkloadSpec {
        let mut spec = workload.spec(self.record_count);
        spec.value_size_bytes = self.value_size_bytes;
        spec.request_distribution = distribution;
        spec.key_format = self.key_format;
        spec
    }

    pub fn describe(&self) -> serde_json::Value {
        serde_json::json!({
            "scale": self.scale,
            "engines": self.engines.iter().map(|e| e.name()).collect::<Vec<_>>(),
            "devices": self.devices.iter().map(|d| d.describe(self.dataset_bytes())).collect::<Vec<_>>(),
            "record_count": self.record_count,
            "value_size_bytes": self.value_size_bytes,
            "dataset_bytes": self.setup(PathBuf::new()).dataset_bytes(),
            "cache_bytes": self.cache_bytes,
            "threads": self.threads,
            "durability": self.durability,
            "phase_stop": self.stop.describe(),
            "emu_write_phase_stop": self.emu_write_phases.map(|v| v.stop().describe()),
            "distributions": self.distributions.iter().map(|d| d.to_string()).collect::<Vec<_>>(),
            "workloads": self.workloads.iter().map(|w| w.name()).collect::<Vec<_>>(),
            "rounds": self.rounds,
            "dir": self.dir,
            "seed": self.seed,
            "key_format": self.key_format,
            "direct_io": self.direct_io,
            "load_batch": self.load_batch,
            "isolation": "a worker process per engine",
            "phase_timeout_s": self.phase_timeout.as_secs(),
            "raw_rows": self.raw_rows,
            "raw_base_options": RAW_BASE,
            "blob_threshold_bytes": self.blob_threshold_bytes,
        })
    }
}

fn one() -> u32 {
    1
}

fn blob_threshold_default() -> u32 {
    BLOB_THRESHOLD_BYTES_DEFAULT
}
