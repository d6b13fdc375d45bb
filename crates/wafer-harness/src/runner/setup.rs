//! From a benchmark configuration (a TOML file, command-line flags over it) to a target and a
//! [`RunSpec`]: build the device, size the dataset, size the buffer pool, open the engine.
//!
//! Sizing with `fill` (the default, 0.9): the dataset takes that fraction of the data device's
//! logical capacity *as the engine stores it*. The record count is `fill * capacity /
//! bytes_per_record`, where bytes per record is measured by a pilot load of
//! [`super::engine::PILOT_RECORDS`] records into a scratch in-memory database with the same key
//! and value sizes (B+tree page fill after random inserts, about 2/3, settles well before that).
//! The pilot is a few percent off (B+tree fill after random inserts wavers with the tree's
//! size), so after the load the runner tops up: it inserts further records (key numbers after
//! the loaded ones, one thread) until the engine's allocated pages reach `fill * capacity`, at
//! most 25% more. The report records the estimate (`config.setup.sizing`), the final record
//! count and the fill actually reached (`observed`).

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use wafer::device::{Device, EmuDevice, FileDevice, MemoryDevice};
use wafer::Options;

use super::engine::{self, EngineTarget, WriteModeChoice};
use super::spec::{parse_capacities, parse_duration, RunSpec, Stop, Warmup};
use super::target::{KvTarget, MemTarget};
use crate::jobs::{parse_bytes, Amount};
use wafer_workloads::dist::Distribution;
use wafer_workloads::ycsb::{Workload, WorkloadSpec};

#[derive(Debug, thiserror::Error)]
pub enum SetupError {
    #[error("{0}")]
    Invalid(String),
    #[error("config file {path}: {reason}")]
    File { path: String, reason: String },
    #[error("{0}")]
    Target(#[from] super::target::TargetError),
    #[error("device: {0}")]
    Device(#[from] wafer::device::DeviceError),
    #[error("emulator configuration: {0}")]
    Emu(#[from] flashemu::ConfigError),
}

fn invalid(message: impl Into<String>) -> SetupError {
    SetupError::Invalid(message.into())
}

/// Settings by name (`[engine]` and `[emu]` tables, `--engine`/`--emu` flags).
pub type EngineSettings = BTreeMap<String, toml::Value>;

/// Every knob of `wafer bench ycsb`, all optional: a TOML file fills some, flags override.
/// Field names are the flags' names with `_` for `-`.
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BenchConfig {
    pub label: Option<String>,
    /// a..f or ycsb-a..ycsb-f.
    pub workload: Option<String>,
    /// `emu:PRESET` (cns, ent, fdp, zns, tiny) or `emu:FILE.toml`, `file:PATH`, `memory:SIZE`
    /// (the engine on RAM, no flash counters), `model:SIZE` (a BTreeMap, no engine).
    pub device: Option<String>,
    /// Fraction the dataset takes: of the device's logical capacity in place, of the zone
    /// space DB GC manages out of place (as 000 sizes it).
    pub fill: Option<f64>,
    pub records: Option<u64>,
    /// Logical dataset size (keys + values), e.g. "1GiB".
    pub dataset_bytes: Option<String>,
    pub value_size: Option<u32>,
    /// Fraction of random bytes in values (values::ValueGenerator).
    pub compression_ratio: Option<f64>,
    /// Request distribution (`zipf:0.8`, `uniform`, ...); default the workload's.
    pub distribution: Option<String>,
    /// Shorthand for `distribution = "zipf:THETA"` (keys are hashed, so hot keys scatter).
    pub zipf_theta: Option<f64>,
    /// YCSB `insertorder`: `hashed` (the default: key numbers pass through fnvhash64, so keys
    /// close in rank scatter over the key space) or `ordered` (key number = key, so the hot
    /// ranks of a zipfian sit side by side in the tree, as in ZLeanStore's YCSB).
    pub insert_order: Option<String>,
    /// A named set of workload settings under the explicit ones: `zleanstore` is the YCSB of
    /// 000's artifact (ZLeanStore): ordered keys with the zipf rank as the key (unscrambled),
    /// 120-byte values, and zipf 0.8 (000 Table 1's) unless a distribution is given.
    pub preset: Option<String>,
    /// false: the emulated device drops the engine's trims, as a host with TRIM off (000's
    /// artifact's default) never sends them; freed zones then stay valid in the SSD until
    /// overwritten. Default true.
    pub trim: Option<bool>,
    pub threads: Option<u32>,
    /// Buffer pool: `0.1` or `10%` of the dataset (on-device size), or `64MiB`.
    pub buffer: Option<String>,
    pub duration: Option<String>,
    /// `4x`: stop when DB writes reach 4 device capacities.
    pub until: Option<String>,
    pub ops: Option<u64>,
    pub warmup: Option<String>,
    pub interval: Option<String>,
    pub seed: Option<u64>,
    pub write_mode: Option<String>,
    /// Skip the load phase (the device already holds the dataset; file devices only).
    pub no_load: Option<bool>,
    /// Records per atomic batch in the load phase (1: one insert each, the default).
    pub load_batch: Option<u32>,
    /// Engine options by name (see `engine::set_engine_option`).
    #[serde(default)]
    pub engine: BTreeMap<String, toml::Value>,
    /// Emulator configuration overrides (`flashemu::Config::set` keys, e.g. op = 0.28).
    #[serde(default)]
    pub emu: BTreeMap<String, toml::Value>,
}

macro_rules! over {
    ($base:expr, $top:expr, $($field:ident),*) => {
        $( if $top.$field.is_some() { $base.$field = $top.$field.clone(); } )*
    };
}

impl BenchConfig {
    pub fn from_toml(text: &str, path: &str) -> Result<BenchConfig, SetupError> {
        toml::from_str(text)
            .map_err(|e| SetupError::File { path: path.into(), reason: e.to_string() })
    }

    pub fn load(path: &std::path::Path) -> Result<BenchConfig, SetupError> {
        let name = path.display().to_string();
        let text = std::fs::read_to_string(path)
            .map_err(|e| SetupError::File { path: name.clone(), reason: e.to_string() })?;
        BenchConfig::from_toml(&text, &name)
    }

    /// `self` with every field `top` sets replaced (maps: `top`'s keys win).
    pub fn overridden_by(mut self, top: &BenchConfig) -> BenchConfig {
        over!(
            self,
            top,
            label,
            workload,
            device,
            fill,
            records,
            dataset_bytes,
            value_size,
            compression_ratio,
            distribution,
            zipf_theta,
            insert_order,
            preset,
            trim,
            threads,
            buffer,
            duration,
            until,
            ops,
            warmup,
            interval,
            seed,
            write_mode,
            no_load,
            load_batch
        );
        self.engine.extend(top.engine.iter().map(|(k, v)| (k.clone(), v.clone())));
        self.emu.extend(top.emu.iter().map(|(k, v)| (k.clone(), v.clone())));
        self
    }

    /// Parses `KEY=VALUE` pairs (flags) into a settings map.
    pub fn settings(pairs: &[String]) -> Result<EngineSettings, SetupError> {
        let mut map = BTreeMap::new();
        for pair in pairs {
            let (k, v) = pair
                .split_once('=')
                .ok_or_else(|| invalid(format!("`{pair}`: expected KEY=VALUE")))?;
            map.insert(k.trim().to_string(), toml::Value::String(v.trim().to_string()));
        }
        Ok(map)
    }
}

/// A TOML value as the text `set` functions parse.
fn setting_text(value: &toml::Value) -> String {
    match value {
        toml::Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

/// Where the data lives.
#[derive(Debug, Clone, PartialEq)]
pub enum DeviceChoice {
    Emu(String),
    File(PathBuf),
    Memory(u64),
    Model(u64),
}

impl DeviceChoice {
    pub fn parse(text: &str) -> Result<DeviceChoice, SetupError> {
        let (kind, arg) = text.split_once(':').ok_or_else(|| {
            invalid(format!(
                "device `{text}`: expected emu:PRESET, file:PATH, memory:SIZE or model:SIZE"
            ))
        })?;
        // Sizes are user input: checked here, since the devices assert on them.
        let size = |a: &str| match parse_bytes(a) {
            Ok(b) if b > 0 && b.is_multiple_of(wafer::device::BLOCK_BYTES) => Ok(b),
            Ok(b) => Err(invalid(format!(
                "device `{text}`: {b} bytes is not a positive multiple of 4 KiB"
            ))),
            Err(e) => Err(invalid(format!("device `{text}`: {e}"))),
        };
        match kind {
            "emu" => Ok(DeviceChoice::Emu(arg.to_string())),
            "file" if !arg.is_empty() => Ok(DeviceChoice::File(PathBuf::from(arg))),
            "memory" | "mem" => Ok(DeviceChoice::Memory(size(arg)?)),
            "model" => Ok(DeviceChoice::Model(size(arg)?)),
            _ => Err(invalid(format!("device `{text}`: unknown kind `{kind}`"))),
        }
    }
}

/// A ready benchmark: the target and the run.
pub struct Prepared {
    pub target: Box<dyn KvTarget>,
    pub spec: RunSpec,
    /// Device, sizing and engine options as resolved (the report's `config.setup`).
    pub setup: serde_json::Value,
}

impl std::fmt::Debug for Prepared {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Prepared").field("spec", &self.spec).field("setup", &self.setup).finish()
    }
}

/// The emulator configuration `arg` names (a preset or a TOML file) with `c`'s overrides,
/// keeping data, validated.
pub fn emu_config(arg: &str, c: &BenchConfig) -> Result<flashemu::Config, SetupError> {
    let mut config = if arg.ends_with(".toml") {
        let text = std::fs::read_to_string(arg)
            .map_err(|e| SetupError::File { path: arg.into(), reason: e.to_string() })?;
        flashemu::Config::from_toml(&text)?
    } else {
        flashemu::Config::preset(arg)?
    };
    for (key, value) in &c.emu {
        config.set(key, &setting_text(value))?;
    }
    // The engine reads back what it wrote: the emulator must keep data.
    config.store = flashemu::StoreKind::Memory;
    config.validate()?;
    Ok(config)
}

/// Where page 0 goes when the configuration does not say: in place with a doublewrite
/// area, room for one eviction batch and at most 1 MiB or 1/256 of the device beyond it (an
/// area only bounds the batch it holds, so a small device keeps its pages); otherwise one
/// block (out of place writes no doublewrite area).
fn data_offset_for(capacity_bytes: u64, options: &Options) -> u64 {
    let block = wafer::device::BLOCK_BYTES;
    if options.write_mode == wafer::WriteMode::OutOfPlace || !options.doublewrite {
        return block;
    }
    let batch = (options.eviction_batch_pages as u64 + 1) * block;
    let share = (capacity_bytes / 256 / block * block).min(1 << 20);
    share.max(batch)
}

/// The zone space of an out-of-place database on a data device of `capacity_bytes` that
/// reports nothing of itself (a file: the GC unit and spare flash come from `options`), which
/// a `fill` is a fraction of. `bench peers` sizes its raw-device rows by it.
pub fn zone_space_bytes(capacity_bytes: u64, options: &Options) -> Result<u64, SetupError> {
    let caps = wafer::device::DeviceCapabilities::default();
    let oop = options.out_of_place.for_device(&caps);
    let offset = data_offset_for(capacity_bytes, options);
    let layout =
        wafer::internals::oop::Layout::compute_for(capacity_bytes, offset, &oop, false, None)
            .map_err(|e| invalid(format!("out-of-place layout: {e}")))?;
    Ok(u64::from(layout.space.zone_count()) * layout.space.zone_bytes)
}

/// What `fill` is a fraction of.
struct FillBasis {
    bytes: u64,
    what: &'static str,
}

/// In place: the device's logical capacity. Out of place: the space DB GC manages (the zones),
/// as 000 sizes its dataset (800 GB on an 894 GB device whose whole capacity is zone space,
/// sec. 7.3): the on-device metadata is not part of it. A fill the engine cannot hold (its
/// page-id cap, or the device) is refused here with the largest that fits.
fn fill_basis(device: &dyn Device, options: &Options, fill: f64) -> Result<FillBasis, SetupError> {
    let capacity = device.capacity_bytes();
    let page_bytes = wafer::device::BLOCK_BYTES;
    let (basis, page_cap) = match options.write_mode {
        wafer::WriteMode::OutOfPlace => {
            let caps = device.capabilities();
            let oop = options.out_of_place.for_device(&caps);
            // The runner's database keeps a WAL device, which takes the map journal.
            let offset = options.data_offset_bytes;
            let layout = wafer::internals::oop::Layout::compute_for(
                capacity, offset, &oop, false, caps.zones,
            )
            .map_err(|e| invalid(format!("out-of-place layout: {e}")))?;
            // Writable zone bytes (on ZNS a zone's capacity, not its stride).
            let zone_space = u64::from(layout.space.zone_count()) * layout.space.zone_bytes;
            (FillBasis { bytes: zone_space, what: "zone space" }, layout.page_capacity)
        }
        wafer::WriteMode::InPlace => {
            let pages = capacity.saturating_sub(options.data_offset_bytes) / page_bytes;
            (FillBasis { bytes: capacity, what: "device capacity" }, pages)
        }
    };
    // Room for the top-up's overshoot and the tree's growth under updates: 2% of the pages.
    let usable = page_cap.saturating_sub(page_cap / 50) * page_bytes;
    let largest = usable as f64 / basis.bytes.max(1) as f64;
    if fill > largest {
        return Err(invalid(format!(
            "fill {fill} does not fit: the {} is {} bytes and the engine holds at most {} pages \
             there; the largest fill that fits is {:.3}",
            basis.what,
            basis.bytes,
            page_cap,
            (largest * 1000.0).floor() / 1000.0
        )));
    }
    Ok(basis)
}

pub fn engine_options(c: &BenchConfig) -> Result<Options, SetupError> {
    let mut options = Options::production();
    for (key, value) in &c.engine {
        engine::set_engine_option(&mut options, key, &setting_text(value)).map_err(invalid)?;
    }
    if let Some(mode) = &c.write_mode {
        let choice = WriteModeChoice::parse(mode).map_err(invalid)?;
        choice.apply(&mut options);
    }
    Ok(options)
}

fn workload_spec(c: &BenchConfig, record_count: u64) -> Result<WorkloadSpec, SetupError> {
    let name = c.workload.as_deref().unwrap_or("a");
    let workload = Workload::parse(name)
        .ok_or_else(|| invalid(format!("unknown workload `{name}` (expected a..f)")))?;
    let mut spec = workload.spec(record_count);
    if let Some(v) = c.value_size {
        spec.value_size_bytes = v;
    }
    if let Some(r) = c.compression_ratio {
        spec.value_compression_ratio = r;
    }
    match c.insert_order.as_deref() {
        None | Some("hashed") => {}
        Some("ordered") => spec.key_format.hashed = false,
        Some(other) => {
            return Err(invalid(format!("insert order `{other}` (expected hashed or ordered)")))
        }
    }
    match (&c.distribution, c.zipf_theta) {
        (Some(_), Some(_)) => return Err(invalid("give distribution or zipf_theta, not both")),
        (Some(d), None) => {
            spec.request_distribution =
                d.parse::<Distribution>().map_err(|e| invalid(e.to_string()))?
        }
        (None, Some(theta)) => spec.request_distribution = Distribution::Zipfian { theta },
        (None, None) => {}
    }
    // Larger values go out of line (`--engine blob_threshold=N`): the engine checks them.
    let blobs = c.engine.contains_key("blob_threshold");
    let max =
        if blobs { VALUE_SIZE_MAX_BYTES } else { wafer::options::MAX_INLINE_VALUE_BYTES as u32 };
    if !(1..=max).contains(&spec.value_size_bytes) {
        return Err(invalid(format!(
            "value size {} outside 1..={max} bytes (the engine's largest value{})",
            spec.value_size_bytes,
            if blobs {
                " in a benchmark"
            } else {
                " inline; larger ones need --engine blob_threshold=N"
            }
        )));
    }
    Ok(spec)
}

/// The largest value a benchmark generates (each value is held in memory per operation).
const VALUE_SIZE_MAX_BYTES: u32 = 64 << 20;

fn stop_and_warmup(c: &BenchConfig) -> Result<(Stop, Warmup), SetupError> {
    let e = |s: super::spec::SpecError| invalid(s.0);
    let stop = match (&c.duration, &c.until, c.ops) {
        (Some(d), None, None) => Stop::Duration(parse_duration(d).map_err(e)?),
        (None, Some(u), None) => Stop::DbWrites { capacities: parse_capacities(u).map_err(e)? },
        (None, None, Some(n)) => Stop::Ops(n),
        (None, None, None) => Stop::Duration(Duration::from_secs(60)),
        _ => return Err(invalid("give one of duration, until and ops")),
    };
    let warmup = c.warmup.as_deref().map(Warmup::parse).transpose().map_err(e)?;
    Ok((stop, warmup.unwrap_or(Warmup::None)))
}

/// Everything [`prepare`] checks before it builds a device or reads a file, for the decoder
/// fuzz checks (`wafer_bench::fuzzing`): a bench config from a user must fail here with an error,
/// never panic.
#[doc(hidden)]
pub fn check_without_device(c: &BenchConfig) -> Result<(), SetupError> {
    let device = DeviceChoice::parse(c.device.as_deref().unwrap_or("emu:cns"))?;
    engine_options(c)?;
    workload_spec(c, 1)?;
    stop_and_warmup(c)?;
    if let DeviceChoice::Emu(arg) = &device {
        if !arg.ends_with(".toml") {
            emu_config(arg, c)?;
        }
    }
    Ok(())
}

/// The data file and its WAL (`<path>.wal`) of a file device. A load writes a fresh dataset:
/// the data file must be absent or empty, and a WAL left beside it is refused, not reformatted.
/// `no_load` runs on what a load left: both files must exist, keep their sizes, and the open
/// refuses (before writing) a data file that is not a Wafer database. Block devices report
/// length 0 and are the user's explicit choice.
fn open_file_devices(
    path: &std::path::Path,
    options: &mut Options,
    no_load: bool,
) -> Result<(FileDevice, FileDevice, Option<Created>), SetupError> {
    let wal_path = wafer::db::wal_path(path);
    let meta = std::fs::metadata(path).ok();
    let used = meta.as_ref().is_some_and(|m| m.is_file() && m.len() > 0);
    let wal_len = std::fs::metadata(&wal_path).ok().map(|m| m.len());
    if !no_load {
        if used {
            return Err(invalid(format!(
                "{}: file exists and is not empty; remove it (the load writes a fresh \
                 dataset) or pass no_load to run on the database it holds",
                path.display()
            )));
        }
        if wal_len.is_some() {
            return Err(invalid(format!(
                "{}: a WAL is there without a database beside it; remove it (the load writes \
                 a fresh dataset)",
                wal_path.display()
            )));
        }
        options.create = wafer::CreateMode::New;
        let created = Created {
            data: path.to_path_buf(),
            data_existed: meta.is_some(),
            wal: wal_path.clone(),
            armed: true,
        };
        let dev = FileDevice::open(path, options.file_capacity_bytes, options.file)?;
        let wal = FileDevice::open(&wal_path, options.wal_capacity_bytes, options.file)?;
        return Ok((dev, wal, Some(created)));
    }
    let block = wafer::device::BLOCK_BYTES;
    let is_block_device = meta.as_ref().is_some_and(|m| !m.is_file());
    let data_bytes = match meta.map(|m| m.len()) {
        Some(len) if len >= block => len / block * block,
        _ if is_block_device => options.file_capacity_bytes,
        _ => {
            return Err(invalid(format!(
                "{}: no_load needs the database a load left there; the file is missing or empty",
                path.display()
            )))
        }
    };
    let Some(wal_bytes) = wal_len.filter(|len| *len >= 2 * block) else {
        return Err(invalid(format!(
            "{}: no_load needs the WAL the load left beside the database; it is missing or \
             truncated",
            wal_path.display()
        )));
    };
    options.create = wafer::CreateMode::Never;
    // Existing sizes: opening with them neither extends nor writes.
    let dev = FileDevice::open(path, data_bytes, options.file)?;
    let wal = FileDevice::open(&wal_path, wal_bytes / block * block, options.file)?;
    Ok((dev, wal, None))
}

/// Files a load created: put back as they were (removed, or the data file emptied) unless the
/// database opened on them, so a refused setup leaves no blank "database" that a rerun would
/// then refuse to load over.
#[derive(Debug)]
struct Created {
    data: PathBuf,
    data_existed: bool,
    wal: PathBuf,
    armed: bool,
}

impl Drop for Created {
    fn drop(&mut self) {
        if !self.armed {
            return;
        }
        // Best effort: the setup error is what the user needs to see.
        if self.data_existed {
            let _ = std::fs::OpenOptions::new().write(true).open(&self.data).map(|f| f.set_len(0));
        } else {
            let _ = std::fs::remove_file(&self.data);
        }
        let _ = std::fs::remove_file(&self.wal);
    }
}

/// A data device as the configuration names it (with its WAL device beside a file), and the
/// engine options adjusted to it (`data_offset_bytes` unless given).
pub(crate) struct OpenedDevice {
    /// None for the model (no device, only a nominal capacity).
    pub backend: Option<Box<dyn Device>>,
    pub wal: Option<Box<dyn Device>>,
    pub capacity_bytes: u64,
    pub json: serde_json::Value,
    created: Option<Created>,
}

impl OpenedDevice {
    /// The database opened on the files: a later setup error leaves them in place.
    pub(crate) fn keep_files(&mut self) {
        if let Some(c) = self.created.as_mut() {
            c.armed = false;
        }
    }
}

pub(crate) fn open_device(
    c: &BenchConfig,
    device: &DeviceChoice,
    options: &mut Options,
) -> Result<OpenedDevice, SetupError> {
    let opened = match device {
        DeviceChoice::Emu(arg) => {
            let config = emu_config(arg, c)?;
            let json = serde_json::json!({"kind": "emu", "source": arg,
                "config": serde_json::to_value(&config).unwrap_or_default()});
            let mut dev = EmuDevice::new(config)?;
            if c.trim == Some(false) {
                dev = dev.without_trim();
            }
            let dev = zoned_volume_if_zns(dev, options)?;
            let capacity_bytes = dev.capacity_bytes();
            OpenedDevice { backend: Some(dev), wal: None, capacity_bytes, json, created: None }
        }
        DeviceChoice::File(path) => {
            let (dev, wal, created) = open_file_devices(path, options, c.no_load.unwrap_or(false))?;
            OpenedDevice {
                capacity_bytes: dev.capacity_bytes(),
                backend: Some(Box::new(dev)),
                wal: Some(Box::new(wal)),
                json: serde_json::json!({"kind": "file", "path": path}),
                created,
            }
        }
        DeviceChoice::Memory(bytes) => OpenedDevice {
            backend: Some(Box::new(MemoryDevice::new(*bytes))),
            wal: None,
            capacity_bytes: *bytes,
            json: serde_json::json!({"kind": "memory", "capacity_bytes": bytes}),
            created: None,
        },
        DeviceChoice::Model(bytes) => OpenedDevice {
            backend: None,
            wal: None,
            capacity_bytes: *bytes,
            json: serde_json::json!({"kind": "model"}),
            created: None,
        },
    };
    if let Some(dev) = &opened.backend {
        if !c.engine.contains_key("data_offset_bytes") {
            options.data_offset_bytes = data_offset_for(dev.capacity_bytes(), options);
        }
    }
    Ok(opened)
}

/// Out of place on an emulated ZNS SSD: the SSD behind a metadata device in memory (a
/// `ZonedVolume`, docs/internals/oop.md "ZNS"), sized for the store's superblock and snapshots
/// (the runner's WAL device takes the map journal). Its writes count in the data device's
/// I/O (metadata, as on a conventional SSD) but never reach the flash counters. Anything else
/// as it is.
fn zoned_volume_if_zns(
    dev: EmuDevice,
    options: &mut Options,
) -> Result<Box<dyn Device>, SetupError> {
    let zones = match dev.capabilities().zones {
        Some(z) if options.write_mode == wafer::WriteMode::OutOfPlace => z,
        _ => return Ok(Box::new(dev)),
    };
    options.data_offset_bytes = wafer::device::BLOCK_BYTES;
    let meta_bytes = wafer::internals::oop::metadata_device_bytes(
        &zones,
        options.data_offset_bytes,
        &options.out_of_place,
        false,
    )
    .map_err(|e| invalid(format!("out-of-place on ZNS: {e}")))?;
    let meta = Arc::new(MemoryDevice::new(meta_bytes.next_multiple_of(wafer::device::BLOCK_BYTES)));
    let volume = wafer::device::ZonedVolume::new(meta, Arc::new(dev))
        .map_err(|e| invalid(format!("zoned volume: {e}")))?;
    Ok(Box::new(volume))
}

/// The workload settings `preset` names (see [`BenchConfig::preset`]).
fn preset_config(preset: &str) -> Result<BenchConfig, SetupError> {
    match preset.trim() {
        "zleanstore" => Ok(BenchConfig {
            insert_order: Some("ordered".into()),
            value_size: Some(120),
            zipf_theta: Some(0.8),
            ..BenchConfig::default()
        }),
        other => Err(invalid(format!("preset `{other}` (expected zleanstore)"))),
    }
}

/// `c` over its preset's settings; a distribution of `c`'s own replaces the preset's zipf.
fn with_preset(c: &BenchConfig) -> Result<BenchConfig, SetupError> {
    let Some(name) = &c.preset else { return Ok(c.clone()) };
    let mut base = preset_config(name)?;
    if c.distribution.is_some() {
        base.zipf_theta = None;
    }
    Ok(base.overridden_by(c))
}

/// Builds the target and the run from `c`. Slow only by the pilot (a second or so).
pub fn prepare(c: &BenchConfig) -> Result<Prepared, SetupError> {
    let c = &with_preset(c)?;
    let device_text = c.device.clone().unwrap_or_else(|| "emu:cns".to_string());
    let device = DeviceChoice::parse(&device_text)?;
    let mut options = engine_options(c)?;
    let nominal = workload_spec(c, 1)?;

    // The device first: its capacity sizes the dataset.
    let mut opened = open_device(c, &device, &mut options)?;
    let capacity_bytes = opened.capacity_bytes;
    let device_json = opened.json.clone();
    let wal_device = opened.wal.take();
    let backend = opened.backend.take();
    let nominal_record_bytes =
        nominal.key_format.nominal_len_bytes() as f64 + f64::from(nominal.value_size_bytes);
    let bytes_per_record = match backend {
        Some(_) => engine::bytes_per_record(&options, &nominal)?,
        None => nominal_record_bytes,
    };
    let mut fill_target_bytes = None;
    let (record_count, sizing) = match (c.records, &c.dataset_bytes, c.fill) {
        (Some(n), None, None) => (n, "records".to_string()),
        (None, Some(b), None) => {
            let bytes = parse_bytes(b).map_err(|e| invalid(e.to_string()))?;
            ((bytes as f64 / nominal_record_bytes) as u64, format!("dataset_bytes {bytes}"))
        }
        (None, None, fill) => {
            let fill = fill.unwrap_or(0.9);
            // Above 1: more logical pages than zone space, out of place with compression and
            // `max_fill_percent` above 100 (fill_basis refuses what the engine cannot hold).
            if !(fill > 0.0 && fill <= 4.0) {
                return Err(invalid(format!("fill {fill} must be in (0, 4]")));
            }
            let basis = match &backend {
                Some(dev) => fill_basis(dev.as_ref(), &options, fill)?,
                None => FillBasis { bytes: capacity_bytes, what: "device capacity" },
            };
            if backend.is_some() {
                fill_target_bytes = Some((fill * basis.bytes as f64) as u64);
            }
            (
                (fill * basis.bytes as f64 / bytes_per_record) as u64,
                format!("fill {fill} of the {} ({} bytes)", basis.what, basis.bytes),
            )
        }
        _ => return Err(invalid("give one of records, dataset_bytes and fill")),
    };
    if record_count < 2 {
        return Err(invalid(format!("the dataset holds {record_count} records; need at least 2")));
    }
    let dataset_on_device_bytes = (record_count as f64 * bytes_per_record) as u64;
    let buffer = Amount::parse(c.buffer.as_deref().unwrap_or("10%"))
        .map_err(|e| invalid(format!("buffer: {e}")))?;
    let buffer_bytes = buffer.bytes(dataset_on_device_bytes).max(wafer::device::BLOCK_BYTES * 16);
    options.buffer_pool_bytes = buffer_bytes;

    let target: Box<dyn KvTarget> = match backend {
        Some(b) => {
            let t = EngineTarget::open(b, wal_device, options.clone(), device_json.clone())?;
            opened.keep_files(); // The database exists now.
            Box::new(t)
        }
        None => Box::new(MemTarget::new(capacity_bytes)),
    };
    let workload = workload_spec(c, record_count)?;
    let (stop, warmup) = stop_and_warmup(c)?;
    let interval =
        parse_duration(c.interval.as_deref().unwrap_or("1s")).map_err(|e| invalid(e.0))?;
    let threads = c
        .threads
        .unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get() as u32));
    let write_mode = match &device {
        DeviceChoice::Model(_) => "none".to_string(),
        _ => WriteModeChoice::of_engine(&options).name().to_string(),
    };
    let label = c.label.clone().unwrap_or_else(|| {
        format!(
            "{} {} {} {}",
            workload.name, workload.request_distribution, device_text, write_mode
        )
    });
    let spec = RunSpec {
        label,
        workload,
        threads,
        seed: c.seed.unwrap_or(42),
        load: !c.no_load.unwrap_or(false),
        fill_target_bytes,
        load_batch: c.load_batch.unwrap_or(1),
        stop,
        warmup,
        interval,
    };
    spec.validate().map_err(|e| invalid(e.0))?;
    let setup = serde_json::json!({
        "bench_config": c,
        "device": device_text,
        "data_device_capacity_bytes": capacity_bytes,
        "write_mode": write_mode,
        "sizing": {
            "by": sizing,
            "record_count": record_count,
            "bytes_per_record_estimate": bytes_per_record,
            "fill_target_bytes": fill_target_bytes,
            "dataset_on_device_bytes_estimate": dataset_on_device_bytes,
            "dataset_logical_bytes": spec.workload.dataset_bytes(),
        },
        "buffer_pool_bytes": buffer_bytes,
    });
    Ok(Prepared { target, spec, setup })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn toml_and_flags_merge() {
        let file = BenchConfig::from_toml(
            "workload = \"b\"\ndevice = \"model:1MiB\"\nthreads = 3\n[engine]\neviction_batch_pages = 8\n",
            "t.toml",
        )
        .unwrap();
        assert_eq!(file.engine["eviction_batch_pages"], toml::Value::Integer(8));
        let flags = BenchConfig { threads: Some(1), ..BenchConfig::default() };
        let merged = file.overridden_by(&flags);
        assert_eq!(merged.threads, Some(1));
        assert_eq!(merged.workload.as_deref(), Some("b"));
        assert!(BenchConfig::from_toml("bogus = 1", "t.toml").is_err());
        let s = BenchConfig::settings(&["a=1".into(), " b = x ".into()]).unwrap();
        assert_eq!(s["b"], toml::Value::String("x".into()));
        assert!(BenchConfig::settings(&["nokey".into()]).is_err());
    }

    #[test]
    fn model_target_sizing_by_fill() {
        let c = BenchConfig {
            device: Some("model:1024000".into()),
            fill: Some(0.5),
            ops: Some(10),
            threads: Some(1),
            ..BenchConfig::default()
        };
        let p = prepare(&c).unwrap();
        // 23-byte keys + 1000-byte values: half of 1,024,000 bytes holds 500 records.
        assert_eq!(p.spec.workload.record_count, 500);
        assert_eq!(p.target.data_device_capacity_bytes(), 1_024_000);
        for bad in ["model:0", "memory:1000", "model:x"] {
            let c = BenchConfig { device: Some(bad.into()), ..c.clone() };
            assert!(prepare(&c).is_err(), "{bad}");
        }
        let bad = BenchConfig { duration: Some("1s".into()), ..c.clone() };
        assert!(prepare(&bad).is_err(), "ops and duration together");
        let bad = BenchConfig { device: Some("tape:1".into()), ..c };
        assert!(prepare(&bad).is_err());
    }

    #[test]
    fn a_used_file_is_not_loaded_over() {
        let path = std::env::temp_dir().join(format!("wafer-setup-{}.db", std::process::id()));
        std::fs::write(&path, b"old database").unwrap();
        let c = BenchConfig {
            device: Some(format!("file:{}", path.display())),
            records: Some(10),
            ..BenchConfig::default()
        };
        let e = prepare(&c).map(|_| ()).unwrap_err().to_string();
        let _ = std::fs::remove_file(&path);
        assert!(e.contains("not empty"), "{e}");
    }

    #[test]
    fn a_refused_load_leaves_no_files_and_a_stray_wal_is_not_reformatted() {
        let path = std::env::temp_dir().join(format!("wafer-setup-new-{}.db", std::process::id()));
        let wal = wafer::db::wal_path(&path);
        let _ = std::fs::remove_file(&path);
        let _ = std::fs::remove_file(&wal);
        let mut c = BenchConfig {
            device: Some(format!("file:{}", path.display())),
            records: Some(10),
            ..BenchConfig::default()
        };
        // Too small for a database: the engine refuses after the files were created.
        c.engine.insert("file_capacity_bytes".into(), toml::Value::String("16KiB".into()));
        c.engine.insert("data_offset_bytes".into(), toml::Value::String("8KiB".into()));
        c.engine.insert("eviction_batch_pages".into(), toml::Value::Integer(1));
        assert!(prepare(&c).is_err());
        assert!(!path.exists() && !wal.exists(), "the refused load removed what it created");
        std::fs::write(&wal, b"someone's log").unwrap();
        let e = prepare(&c).map(|_| ()).unwrap_err().to_string();
        assert!(e.contains("WAL is there without a database"), "{e}");
        assert_eq!(std::fs::read(&wal).unwrap(), b"someone's log");
        let _ = std::fs::remove_file(&wal);
    }

    #[test]
    fn unknown_write_mode_is_refused_before_running() {
        let c = BenchConfig {
            device: Some("memory:16MiB".into()),
            write_mode: Some("sideways".into()),
            ..BenchConfig::default()
        };
        let e = prepare(&c).unwrap_err().to_string();
        assert!(e.contains("unknown write mode"), "{e}");
    }

    #[test]
    fn insert_order_picks_the_key_format_and_refuses_others() {
        let with = |order: &str| BenchConfig {
            insert_order: Some(order.into()),
            ..BenchConfig::default()
        };
        assert!(!workload_spec(&with("ordered"), 10).unwrap().key_format.hashed);
        assert!(workload_spec(&with("hashed"), 10).unwrap().key_format.hashed);
        assert!(workload_spec(&BenchConfig::default(), 10).unwrap().key_format.hashed);
        let e = workload_spec(&with("sideways"), 10).unwrap_err().to_string();
        assert!(e.contains("insert order `sideways`"), "{e}");
    }

    #[test]
    fn zleanstore_preset_sits_under_explicit_settings() {
        let preset = |extra: BenchConfig| {
            with_preset(&BenchConfig { preset: Some("zleanstore".into()), ..extra })
        };
        let c = preset(BenchConfig::default()).unwrap();
        let spec = workload_spec(&c, 10).unwrap();
        assert!(!spec.key_format.hashed);
        assert_eq!(spec.value_size_bytes, 120);
        assert_eq!(spec.request_distribution, Distribution::Zipfian { theta: 0.8 });
        // An explicit value size or distribution wins.
        let own = BenchConfig {
            value_size: Some(1000),
            distribution: Some("uniform".into()),
            ..BenchConfig::default()
        };
        let spec = workload_spec(&preset(own).unwrap(), 10).unwrap();
        assert_eq!(spec.value_size_bytes, 1000);
        assert_eq!(spec.request_distribution, Distribution::Uniform);
        let e = with_preset(&BenchConfig { preset: Some("tpc".into()), ..BenchConfig::default() });
        assert!(e.is_err());
    }
}
