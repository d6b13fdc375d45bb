//! The comparison run: every engine through the same phases, one after another, rounds
//! interleaved (round r starts at engine r), each engine in a fresh directory it is the only
//! user of; rows of figures per engine, phase and distribution.

use std::path::PathBuf;
use std::time::Duration;

use super::emu_device::{describe_config, logical_bytes, EmuDevice, EmuSpace, Staged};
use super::raw::{self, RawJob, RawRow};
use super::worker::{self, WorkerJob};
use super::{Durability, EngineKind, PeerError, PeerSetup};
use wafer_harness::progress::Progress;
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
    pub fault: Option<super::worker::WorkerFault>,
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
            "raw_base_options": raw::RAW_BASE,
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

/// One engine in one phase of one round.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Row {
    pub round: u32,
    pub engine: String,
    /// `file` (a directory on the host's filesystem) or `emu:PRESET`.
    pub device: String,
    /// `load` or the workload (`ycsb-a`).
    pub phase: String,
    /// The request distribution (`-` for the load).
    pub distribution: String,
    pub ops: u64,
    pub elapsed_s: f64,
    pub ops_per_sec: f64,
    pub p50_us: Option<f64>,
    pub p99_us: Option<f64>,
    pub p999_us: Option<f64>,
    pub host_write_bytes: u64,
    pub host_read_bytes: u64,
    pub host_write_bytes_per_op: f64,
    pub host_read_bytes_per_op: f64,
    /// Emulated SSD only: bytes the filesystem sent to the device per operation (the
    /// engine's writes plus ext4's journal and metadata, after the page cache).
    pub device_write_bytes_per_op: Option<f64>,
    /// Emulated SSD only: flash bytes programmed (host data, GC copies, padding) per operation.
    pub flash_bytes_per_op: Option<f64>,
    /// Emulated SSD only: device write bytes / the record bytes the workload wrote (see
    /// `total_waf`): what the engine and the filesystem made of the user's bytes.
    #[serde(default)]
    pub db_waf: Option<f64>,
    /// Emulated SSD only: flash bytes / device write bytes.
    pub ssd_waf: Option<f64>,
    /// Emulated SSD only: flash bytes / the record bytes the workload wrote (key plus value
    /// per insert, update or read-modify-write): everything between the user's bytes and the
    /// flash, the engine, filesystem and SSD together. None in a phase that writes no record.
    pub total_waf: Option<f64>,
    /// Emulated SSD, write phases ended by volume: flash bytes per operation over the last
    /// half of the phase's writes (from when the device had received half the volume): the
    /// steady state, beside the whole phase's `flash_bytes_per_op`.
    #[serde(default)]
    pub steady_flash_bytes_per_op: Option<f64>,
    /// SSD WAF over the same last half.
    #[serde(default)]
    pub steady_ssd_waf: Option<f64>,
    /// Emulated SSD only: the row's flash B/op by what wrote it (see
    /// `phases::BREAKDOWN_PARTS`).
    #[serde(default)]
    pub flash_breakdown: Option<std::collections::BTreeMap<String, f64>>,
}

/// The whole comparison.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct PeersReport {
    pub schema: String,
    pub version: u32,
    pub config: serde_json::Value,
    /// Each engine's settings as it reported them after opening, by [`settings_key`].
    pub engines: serde_json::Map<String, serde_json::Value>,
    pub rows: Vec<Row>,
    /// Engines that failed part way (`ENGINE on DEVICE, round R: error`): the run goes on
    /// with the next engine and keeps the rows measured before the failure. A missing
    /// library is not among them: it stops the run before anything is measured.
    pub failures: Vec<String>,
}

/// Runs the comparison; `on_row` sees each row as it is measured (for a live table).
pub fn run(
    config: &PeersConfig,
    progress: &mut dyn Progress,
    on_row: &mut dyn FnMut(&Row),
) -> Result<PeersReport, PeerError> {
    config.validate()?;
    let mut report = PeersReport {
        schema: PEERS_SCHEMA.into(),
        version: PEERS_VERSION,
        config: config.describe(),
        engines: serde_json::Map::new(),
        rows: Vec::new(),
        failures: Vec::new(),
    };
    // Only what this run creates is removed afterwards: never a directory the user had.
    let dir_existed = config.dir.exists();
    let outcome = run_rounds(config, &mut report, progress, on_row);
    if !config.keep {
        for round in 0..config.rounds {
            let _ = std::fs::remove_dir(config.dir.join(format!("round-{round}")));
        }
        if !dir_existed {
            let _ = std::fs::remove_dir(&config.dir);
        }
    }
    outcome.map(|()| report)
}

/// What makes one engine's rows on a device: an engine, or one of the raw rows
/// (`wafer-raw`, on an emulated SSD only).
#[derive(Debug, Clone)]
struct Entrant {
    engine: EngineKind,
    raw: Option<RawRow>,
}

impl Entrant {
    fn name(&self) -> &str {
        self.raw.as_ref().map_or(self.engine.name(), |r| &r.name)
    }
}

fn entrants(config: &PeersConfig, device: &PeerDevice) -> Vec<Entrant> {
    let mut out = Vec::new();
    for &engine in &config.engines {
        match (engine, device) {
            // A file has no device under it to run raw on.
            (EngineKind::WaferRaw, PeerDevice::File) => {}
            (EngineKind::WaferRaw, PeerDevice::Emu(_)) => {
                out.extend(config.raw_rows.iter().map(|r| Entrant { engine, raw: Some(r.clone()) }))
            }
            _ => out.push(Entrant { engine, raw: None }),
        }
    }
    out
}

/// Every round: each device, each engine in its own fresh directory (and, on an emulated
/// SSD, its own fresh device), removed after it unless `keep`. An engine that cannot hold
/// the run's values is a failure named without running it.
fn run_rounds(
    config: &PeersConfig,
    report: &mut PeersReport,
    progress: &mut dyn Progress,
    on_row: &mut dyn FnMut(&Row),
) -> Result<(), PeerError> {
    for round in 0..config.rounds {
        for (d, device) in config.devices.iter().enumerate() {
            let list = entrants(config, device);
            let n = list.len();
            for i in 0..n {
                let entrant = &list[(i + round as usize) % n];
                let failure = |e: &dyn std::fmt::Display| {
                    format!("{} on {}, round {round}: {e}", entrant.name(), device.name())
                };
                let refusal = entrant
                    .engine
                    .value_size_refusal(config.value_size_bytes, entrant.raw.as_ref());
                if let Some(why) = refusal {
                    report.failures.push(failure(&why));
                    continue;
                }
                let dir = config
                    .dir
                    .join(format!("round-{round}"))
                    .join(format!("{d}-{}", device.name().replace(':', "-")))
                    .join(entrant.name());
                if dir.exists() {
                    return Err(PeerError::Config(format!(
                        "{} exists; the harness needs fresh directories (remove it)",
                        dir.display()
                    )));
                }
                std::fs::create_dir_all(&dir).map_err(|e| PeerError::io(&dir, e))?;
                let (rows, outcome) =
                    run_at_highest_share(config, device, entrant, round, &dir, progress, on_row);
                report.rows.extend(rows);
                if !config.keep {
                    // Best effort: a leftover directory costs disk, not correctness.
                    let _ = std::fs::remove_dir_all(&dir);
                    if let Some(parent) = dir.parent() {
                        let _ = std::fs::remove_dir(parent);
                    }
                }
                match outcome {
                    Ok(settings) => {
                        report.engines.insert(settings_key(entrant.name(), device), settings);
                    }
                    Err(e @ PeerError::Missing { .. }) => return Err(e),
                    Err(e) => report.failures.push(failure(&e)),
                }
            }
        }
    }
    Ok(())
}

/// Under `own:SHARE`, an engine that runs out of space on its device is run again on a fresh
/// device at a share this much lower, down to [`SHARE_MIN`]: the highest share it survives is
/// its result (its settings state it and the shares that failed).
const SHARE_STEP: f64 = 0.1;
const SHARE_MIN: f64 = 0.5;

/// The shares an engine's device is tried at (None: the device as configured, once).
pub(crate) fn shares(device: &PeerDevice) -> Vec<Option<f64>> {
    match device {
        PeerDevice::Emu(emu) => match emu.space {
            EmuSpace::Own(share) => {
                let steps = ((share - SHARE_MIN) / SHARE_STEP + 1e-9).floor().max(0.0) as u32;
                (0..=steps).map(|i| Some(share - f64::from(i) * SHARE_STEP)).collect()
            }
            _ => vec![None],
        },
        PeerDevice::File => vec![None],
    }
}

/// An engine's error that says its device was full (the kernel's ENOSPC text, Wafer's own).
pub(crate) fn out_of_space(e: &PeerError) -> bool {
    let text = e.to_string();
    ["No space left", "out of space", "ENOSPC"].iter().any(|m| text.contains(m))
}

/// [`run_on_device`] at the highest share of [`shares`] the engine survives; the rows of the
/// attempt that counts (every attempt's are shown live).
fn run_at_highest_share(
    config: &PeersConfig,
    device: &PeerDevice,
    entrant: &Entrant,
    round: u32,
    dir: &std::path::Path,
    progress: &mut dyn Progress,
    on_row: &mut dyn FnMut(&Row),
) -> (Vec<Row>, Result<serde_json::Value, PeerError>) {
    let tries = shares(device);
    let mut failed: Vec<String> = Vec::new();
    for (i, share) in tries.iter().enumerate() {
        let at = match (device, share) {
            (PeerDevice::Emu(emu), Some(s)) => {
                PeerDevice::Emu(Box::new(EmuDevice { space: EmuSpace::Own(*s), ..(**emu).clone() }))
            }
            _ => device.clone(),
        };
        if i > 0 {
            // A fresh directory for the attempt (the failed one's files and mounts are gone).
            let _ = std::fs::remove_dir_all(dir);
            if let Err(e) = std::fs::create_dir_all(dir) {
                return (Vec::new(), Err(PeerError::io(dir, e)));
            }
        }
        let mut rows = Vec::new();
        let outcome = run_on_device(config, &at, entrant, round, dir, progress, &mut |r| {
            on_row(r);
            rows.push(r.clone());
        });
        let share_text = share.map_or_else(String::new, |s| format!("{s:.2}"));
        match outcome {
            Err(e) if i + 1 < tries.len() && out_of_space(&e) => {
                failed.push(format!("own:{share_text}: {e}"));
            }
            Ok(mut settings) => {
                if let (Some(map), Some(s)) = (settings.as_object_mut(), share) {
                    map.insert("emu_share".into(), (*s).into());
                    map.insert("emu_shares_out_of_space".into(), failed.clone().into());
                }
                return (rows, Ok(settings));
            }
            Err(e @ PeerError::Missing { .. }) => return (rows, Err(e)),
            Err(e) if failed.is_empty() => return (rows, Err(e)),
            Err(e) => {
                let before = failed.join("; ");
                let e = PeerError::Config(format!("at own:{share_text}: {e} (before: {before})"));
                return (rows, Err(e));
            }
        }
    }
    (Vec::new(), Err(PeerError::Config("no share to run the engine at".into())))
}

/// Where an engine's settings go in [`PeersReport::engines`]: its name on a file, `ENGINE on
/// DEVICE` on an emulated SSD (whose settings add the device's size and fill).
pub fn settings_key(engine: &str, device: &PeerDevice) -> String {
    match device {
        PeerDevice::File => engine.to_string(),
        PeerDevice::Emu(d) => format!("{engine} on {}", d.name),
    }
}

/// One engine on one device: on an emulated SSD, the device is set up first and torn down
/// after (also when the engine fails, aborts or hangs), and its final counters go into the
/// engine's settings.
fn run_on_device(
    config: &PeersConfig,
    device: &PeerDevice,
    entrant: &Entrant,
    round: u32,
    dir: &std::path::Path,
    progress: &mut dyn Progress,
    on_row: &mut dyn FnMut(&Row),
) -> Result<serde_json::Value, PeerError> {
    let Some(exe) = &config.wafer_exe else {
        return Err(PeerError::Config("no wafer binary to run the engine's worker".into()));
    };
    // The worker draws no progress bar: rows are reported as they come.
    let _ = progress;
    let engine = entrant.engine;
    let log = dir.join("worker.log");
    let emu = match (device, &entrant.raw) {
        (PeerDevice::File, _) => {
            let engine_dir = dir.join("db");
            std::fs::create_dir_all(&engine_dir).map_err(|e| PeerError::io(&engine_dir, e))?;
            let job = WorkerJob::new(config, engine, device.name(), round, &engine_dir, None);
            return worker::run_isolated(exe, &job, config.phase_timeout, &log, None, on_row);
        }
        (PeerDevice::Emu(emu), Some(row)) => {
            return run_raw(config, emu, row, round, dir, exe, on_row);
        }
        (PeerDevice::Emu(emu), None) => emu,
    };
    let footprint = match emu.space {
        EmuSpace::Own(_) => Some(footprint(config, engine, round, exe, dir)?),
        _ => None,
    };
    let sized = emu.sized_config(config.dataset_bytes(), footprint)?;
    let mut staged = Staged::create(emu, &sized, exe, dir)?;
    let view = staged.view().clone();
    let engine_dir = view.engine_dir();
    let made = std::fs::create_dir_all(&engine_dir).map_err(|e| PeerError::io(&engine_dir, e));
    let outcome = made.and_then(|()| {
        let job = WorkerJob::new(config, engine, device.name(), round, &engine_dir, Some(view));
        worker::run_isolated(exe, &job, config.phase_timeout, &log, Some(&mut staged), on_row)
    });
    let torn_down = staged.destroy();
    let mut settings = outcome?;
    let (stats, _) = torn_down?;
    if let Some(map) = settings.as_object_mut() {
        map.insert("emu_device".into(), describe_config(&sized, config.dataset_bytes()));
        map.insert("emu_sizing_footprint_bytes".into(), footprint.into());
        map.insert("emu_device_totals".into(), serde_json::to_value(&stats).unwrap_or_default());
    }
    Ok(settings)
}

/// A raw row: two served devices of the preset (data sized by [`raw::plan`], WAL), no
/// filesystem; the worker opens the served files.
fn run_raw(
    config: &PeersConfig,
    emu: &EmuDevice,
    row: &RawRow,
    round: u32,
    dir: &std::path::Path,
    exe: &std::path::Path,
    on_row: &mut dyn FnMut(&Row),
) -> Result<serde_json::Value, PeerError> {
    let fill = match emu.space {
        EmuSpace::Own(share) => share,
        _ => raw::FILL_DEFAULT,
    };
    let mut plan = raw::plan(emu, config, row, fill)?;
    let mut staged = Staged::create_raw(&plan.data, &plan.wal, exe, dir)?;
    let view = staged.view().clone();
    // The zones align to the unit the served device reports, not to the one planned for it.
    let reported = staged.reported_gc_unit_bytes();
    let unit_source = raw::use_reported_gc_unit(&mut plan.engine, reported);
    let engine_dir = dir.join("db");
    let made = std::fs::create_dir_all(&engine_dir).map_err(|e| PeerError::io(&engine_dir, e));
    let outcome = made.and_then(|()| {
        let mut job = WorkerJob::new(
            config,
            EngineKind::WaferRaw,
            &emu.name,
            round,
            &engine_dir,
            Some(view.clone()),
        );
        job.raw = Some(RawJob {
            row: row.clone(),
            data_path: staged.device_path(),
            wal_path: staged.wal_device_path().unwrap_or_default(),
            data_capacity_bytes: logical_bytes(&plan.data),
            wal_capacity_bytes: plan.wal_capacity_bytes,
            engine: plan.engine.clone(),
        });
        let log = dir.join("worker.log");
        worker::run_isolated(exe, &job, config.phase_timeout, &log, Some(&mut staged), on_row)
    });
    let torn_down = staged.destroy();
    let mut settings = outcome?;
    let (stats, wal_stats) = torn_down?;
    if let Some(map) = settings.as_object_mut() {
        let mut described = describe_config(&plan.data, config.dataset_bytes());
        described["path"] = "Wafer -> served file (FUSE, no filesystem) -> `wafer emu serve` -> \
                             flashemu; its WAL on a second served device of the preset"
            .into();
        map.insert("emu_device".into(), described);
        map.insert("emu_wal_device".into(), describe_config(&plan.wal, config.dataset_bytes()));
        map.insert("raw_fill_of_zone_space".into(), plan.fill.into());
        map.insert("raw_engine_options".into(), plan.engine.clone().into());
        map.insert("raw_gc_unit_source".into(), unit_source.into());
        map.insert("emu_device_totals".into(), serde_json::to_value(&stats).unwrap_or_default());
        map.insert(
            "emu_wal_device_totals".into(),
            serde_json::to_value(&wal_stats).unwrap_or_default(),
        );
    }
    Ok(settings)
}

/// Updates of each record in the sizing pass. With one, the pass's peak fell 17-28% short of
/// what WiredTiger's and RocksDB's files reached in the run (WiredTiger 513 and 546 MiB in two
/// passes, 651 on the file and 696 on the emulator in runs; it then ran out of space on its
/// device); with three, 665 and 248 MiB, the runs' peaks within a few percent.
const SIZING_UPDATES_PER_RECORD: u64 = 3;

/// The most bytes `engine`'s files took on the host's filesystem in a sizing pass: the load,
/// then YCSB-A uniform (half updates) until about [`SIZING_UPDATES_PER_RECORD`] updates of
/// every record (enough for its logs to reach their bound, its checkpoints, compactions and
/// vacuums to cycle), in a worker, in `dir/sizing`, removed after. What its emulated SSD is
/// sized by under [`EmuSpace::Own`]: the run phase's growth (logs, checkpoints keeping old
/// pages, dead tuples, compaction outputs) is in it, not only the loaded data.
fn footprint(
    config: &PeersConfig,
    engine: EngineKind,
    round: u32,
    exe: &std::path::Path,
    dir: &std::path::Path,
) -> Result<u64, PeerError> {
    let sizing = dir.join("sizing");
    std::fs::create_dir_all(&sizing).map_err(|e| PeerError::io(&sizing, e))?;
    let mut job = WorkerJob::new(config, engine, "file", round, &sizing, None);
    job.config.workloads = vec![Workload::A];
    job.config.distributions = vec![Distribution::Uniform];
    job.config.stop = Stop::Ops(config.record_count.saturating_mul(2 * SIZING_UPDATES_PER_RECORD));
    job.config.fault = None;
    let log = dir.join("sizing.log");
    let outcome = worker::run_isolated(exe, &job, config.phase_timeout, &log, None, &mut |_| {});
    let _ = std::fs::remove_dir_all(&sizing);
    let settings = outcome.map_err(|e| PeerError::Run {
        engine: engine.name().into(),
        phase: "sizing pass on the host".into(),
        message: e.to_string(),
    })?;
    settings["dir_used_peak_bytes"].as_u64().ok_or_else(|| {
        PeerError::Config(format!("{}: the sizing pass reported no footprint", engine.name()))
    })
}
