//! The engine as a benchmark target: `wafer::Db` on a device wrapped in `Counted`, so every
//! byte the engine issues is counted by purpose, and the emulator's flash counters (when the
//! device is the emulator) say what the flash programmed.
//!
//! Write modes are named here as the experiments name them; a mode the engine of this build
//! lacks is refused with a clear error rather than approximated by another mode.

use std::sync::Arc;

use std::time::Duration;
use wafer::device::{Counted, Device, MemoryDevice};
use wafer::stats::IoStats;

use wafer::options::Compression;
use wafer::options::GcZones;
use wafer::options::NoWaMode;
use wafer::options::{PlacementKind, VictimPolicyKind};

// The space's victim histogram is copied bin for bin.
const _: () =
    assert!(crate::metrics::VICTIM_VALID_BINS == wafer::internals::space::VALID_RATIO_BINS);
use wafer::{Db, Durability, Options, Tree, WriteMode};

use super::target::{KvTarget, TargetError};
use crate::metrics::sources::{apply_flash_counters, apply_flash_timing, apply_io_snapshot};
use crate::metrics::CounterSnapshot;
use wafer_workloads::values::{ValueGenerator, ValueSpec};
use wafer_workloads::ycsb::WorkloadSpec;

/// The tree every YCSB record goes to.
pub const TABLE_NAME: &str = "usertable";

/// Write modes as 000 Table 1 names its rows.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum WriteModeChoice {
    /// In-place page writes behind a doublewrite buffer: 000's baseline (DB WAF 2).
    InPlace,
    /// In-place page writes without a doublewrite buffer (not crash-safe against torn pages).
    InPlaceNoDwb,
    /// Out-of-place writes into zones with DB GC (000 sec. 2-6).
    OutOfPlace,
}

impl WriteModeChoice {
    pub const ALL: [WriteModeChoice; 3] =
        [WriteModeChoice::InPlace, WriteModeChoice::InPlaceNoDwb, WriteModeChoice::OutOfPlace];

    pub fn parse(text: &str) -> Result<WriteModeChoice, String> {
        match text.trim().to_ascii_lowercase().as_str() {
            "in-place" | "inplace" | "in-place-dwb" => Ok(WriteModeChoice::InPlace),
            "in-place-no-dwb" | "in-place-nodwb" => Ok(WriteModeChoice::InPlaceNoDwb),
            "out-of-place" | "oop" => Ok(WriteModeChoice::OutOfPlace),
            _ => Err(format!(
                "unknown write mode `{text}` (expected in-place, in-place-no-dwb, out-of-place)"
            )),
        }
    }

    pub fn name(&self) -> &'static str {
        match self {
            WriteModeChoice::InPlace => "in-place",
            WriteModeChoice::InPlaceNoDwb => "in-place-no-dwb",
            WriteModeChoice::OutOfPlace => "out-of-place",
        }
    }

    /// Puts the engine in this mode. The one place that maps experiment names to engine
    /// settings.
    pub fn apply(&self, options: &mut Options) {
        match self {
            WriteModeChoice::InPlace => {
                options.write_mode = WriteMode::InPlace;
                options.doublewrite = true;
            }
            WriteModeChoice::InPlaceNoDwb => {
                options.write_mode = WriteMode::InPlace;
                options.doublewrite = false;
            }
            WriteModeChoice::OutOfPlace => *options = options.clone().out_of_place(),
        }
    }

    /// The choice that names what the engine does with `options`.
    pub fn of_engine(options: &Options) -> WriteModeChoice {
        match (options.write_mode, options.doublewrite) {
            (WriteMode::InPlace, true) => WriteModeChoice::InPlace,
            (WriteMode::InPlace, false) => WriteModeChoice::InPlaceNoDwb,
            (WriteMode::OutOfPlace, _) => WriteModeChoice::OutOfPlace,
        }
    }
}

/// Sets one engine option by name (`--engine KEY=VALUE`, `[engine]` in the TOML file).
pub fn set_engine_option(options: &mut Options, key: &str, value: &str) -> Result<(), String> {
    let bytes = |v: &str| crate::jobs::parse_bytes(v).map_err(|e| format!("{key}: {e}"));
    let count = |v: &str| count_of(key, v);
    let flag = |v: &str| match v.trim() {
        "true" | "1" | "yes" | "on" => Ok(true),
        "false" | "0" | "no" | "off" => Ok(false),
        _ => Err(format!("{key}: `{v}` is not true or false")),
    };
    match key.trim() {
        "buffer_pool_bytes" => options.buffer_pool_bytes = bytes(value)?,
        "eviction_batch_pages" => {
            options.eviction_batch_pages = value
                .trim()
                .parse()
                .map_err(|_| format!("eviction_batch_pages: `{value}` is not a count"))?
        }
        "file_capacity_bytes" => options.file_capacity_bytes = bytes(value)?,
        "max_file_bytes" => options.max_file_bytes = Some(bytes(value)?),
        "data_offset_bytes" => options.data_offset_bytes = bytes(value)?,
        "file_direct" => options.file.direct = flag(value)?,
        "file_io_uring" => options.file.io_uring = flag(value)?,
        "write_mode" => WriteModeChoice::parse(value)?.apply(options),
        "doublewrite" => options.doublewrite = flag(value)?,
        "append_split" => options.append_split = flag(value)?,
        "background_write_back" => options.background_write_back = flag(value)?,
        "background_checkpoint" => options.background_checkpoint = flag(value)?,
        "background_gc" => options.out_of_place.background_gc = flag(value)?,
        "durability" => options.durability = parse_durability(value)?,
        "wal_capacity_bytes" => options.wal_capacity_bytes = bytes(value)?,
        "checkpoint_log_bytes" => options.checkpoint_log_bytes = bytes(value)?,
        "snapshot_bytes_max" => options.snapshot_bytes_max = bytes(value)?,
        "zone_bytes" => options.out_of_place.zone_bytes = bytes(value)?,
        "zones_per_gc_unit" => options.out_of_place.zones_per_gc_unit = count(value)?,
        "open_zones" => options.out_of_place.open_zones = count(value)?,
        "gc_batch_pages" => options.out_of_place.gc_batch_pages = count(value)?,
        "max_fill_percent" => options.out_of_place.max_fill_percent = count(value)?,
        "placement" => {
            let placement = parse_placement(value)?;
            options.out_of_place.placement = placement;
            // 000's GDT is placement and GC together (greedy victims until a zone's worth);
            // a later `gc_policy` overrides (cost-benefit-until-zone: docs/internals/gc.md, GDT).
            if placement == PlacementKind::Gdt {
                options.out_of_place.policy = VictimPolicyKind::GreedyUntilZone;
            }
        }
        "gc_policy" => options.out_of_place.policy = parse_gc_policy(value)?,
        "gc_zones" => options.out_of_place.gc_zones = parse_gc_zones(value)?,
        "compression" => options.out_of_place.compression = Compression::parse(value)?,
        "packing" => options.out_of_place.packing = flag(value)?,
        "nowa" => options.out_of_place.nowa = flag(value)?,
        "nowa_mode" => {
            options.out_of_place.nowa_mode =
                NoWaMode::parse(value).map_err(|e| format!("nowa_mode: {e}"))?
        }
        "fdp" => options.out_of_place.fdp = flag(value)?,
        "gc_burst" => options.out_of_place.artifact.gc_burst = flag(value)?,
        "trim_off" => options.out_of_place.artifact.trim_off = flag(value)?,
        "gc_with_user" => options.out_of_place.artifact.gc_with_user = flag(value)?,
        "batch_one_zone" => options.out_of_place.artifact.batch_one_zone = flag(value)?,
        "lsn_history" => options.out_of_place.artifact.lsn_history = flag(value)?,
        "gc_in_pool" => options.out_of_place.artifact.gc_in_pool = flag(value)?,
        "artifact" => {
            options.out_of_place.artifact = match flag(value)? {
                true => wafer::options::ArtifactOptions::all(),
                false => wafer::options::ArtifactOptions::default(),
            }
        }
        "gc_unit_bytes" => options.out_of_place.gc_unit_bytes = bytes(value)?,
        "ssd_spare_bytes" => options.out_of_place.ssd_spare_bytes = bytes(value)?,
        "blob_threshold" => {
            options.blob_threshold_bytes = match value.trim() {
                "off" | "none" => None,
                v => Some(u32::try_from(bytes(v)?).map_err(|_| format!("{key}: `{v}` too large"))?),
            }
        }
        other => {
            return Err(format!(
                "unknown engine option `{other}` (known: buffer_pool_bytes, eviction_batch_pages, \
                 file_capacity_bytes, max_file_bytes, file_direct, file_io_uring, \
                 data_offset_bytes, write_mode, doublewrite, append_split, \
                 background_write_back, background_checkpoint, background_gc, durability, \
                 wal_capacity_bytes, checkpoint_log_bytes, \
                 zone_bytes, zones_per_gc_unit, open_zones, gc_batch_pages, max_fill_percent, \
                 placement, gc_policy, gc_zones, compression, packing, nowa, nowa_mode, fdp, \
                 gc_burst, trim_off, gc_with_user, batch_one_zone, lsn_history, gc_in_pool, \
                 artifact, \
                 gc_unit_bytes, ssd_spare_bytes, blob_threshold)"
            ))
        }
    }
    Ok(())
}

/// A positive count.
fn count_of(key: &str, value: &str) -> Result<u32, String> {
    match value.trim().parse::<u32>() {
        Ok(n) if n >= 1 => Ok(n),
        _ => Err(format!("{key}: `{value}` is not a count of at least 1")),
    }
}

/// `separate` (user and GC zones apart) or `random[:SEED]` (000's naive placement).
fn parse_placement(value: &str) -> Result<PlacementKind, String> {
    match value.trim() {
        "separate" => Ok(PlacementKind::Separate),
        "random" => Ok(PlacementKind::Random { seed: 42 }),
        "gdt" => Ok(PlacementKind::Gdt),
        other => match other.strip_prefix("random:").map(str::parse::<u64>) {
            Some(Ok(seed)) => Ok(PlacementKind::Random { seed }),
            _ => Err(format!("placement: `{value}` is not separate, random, random:SEED or gdt")),
        },
    }
}

/// GC victim policy by name.
fn parse_gc_policy(value: &str) -> Result<VictimPolicyKind, String> {
    [
        VictimPolicyKind::Greedy,
        VictimPolicyKind::CostBenefit,
        VictimPolicyKind::GreedyUntilZone,
        VictimPolicyKind::CostBenefitUntilZone,
    ]
    .into_iter()
    .find(|k| k.name() == value.trim())
    .ok_or_else(|| {
        format!(
            "gc_policy: `{value}` is not greedy, cost-benefit, greedy-until-zone or \
             cost-benefit-until-zone"
        )
    })
}

/// `exhaustion` (000's trigger), `scaled`, or `LOW/HIGH/RESERVE` free zones.
fn parse_gc_zones(value: &str) -> Result<GcZones, String> {
    match value.trim() {
        "exhaustion" => Ok(GcZones::OnExhaustion),
        "scaled" => Ok(GcZones::Scaled),
        other => {
            let n: Vec<Option<u32>> = other.split('/').map(|p| p.trim().parse().ok()).collect();
            match n.as_slice() {
                [Some(free_low), Some(free_high), Some(reserve)] => Ok(GcZones::Fixed {
                    free_low: *free_low,
                    free_high: *free_high,
                    reserve: *reserve,
                }),
                _ => Err(format!(
                    "gc_zones: `{value}` is not exhaustion, scaled or LOW/HIGH/RESERVE"
                )),
            }
        }
    }
}

/// `sync`, `none`, or `group:MICROS` (group commit waiting at most that long).
fn parse_durability(value: &str) -> Result<Durability, String> {
    match value.trim() {
        "sync" => Ok(Durability::Sync),
        "none" => Ok(Durability::None),
        other => match other.strip_prefix("group:").map(str::parse::<u64>) {
            Some(Ok(us)) => Ok(Durability::GroupCommit { max_delay: Duration::from_micros(us) }),
            _ => Err(format!("durability: `{value}` is not sync, none or group:MICROS")),
        },
    }
}

/// The options as the report records them.
pub fn describe_options(options: &Options) -> serde_json::Value {
    serde_json::json!({
        "buffer_pool_bytes": options.buffer_pool_bytes,
        "eviction_batch_pages": options.eviction_batch_pages,
        "file_capacity_bytes": options.file_capacity_bytes,
        "file_direct": options.file.direct,
        "file_io_uring": options.file.io_uring,
        "data_offset_bytes": options.data_offset_bytes,
        "write_mode": WriteModeChoice::of_engine(options).name(),
        "doublewrite": options.doublewrite,
        "append_split": options.append_split,
        "background_write_back": options.background_write_back,
        "background_checkpoint": options.background_checkpoint,
        "background_gc": options.out_of_place.background_gc,
        "max_fill_percent": options.out_of_place.max_fill_percent,
        "durability": format!("{:?}", options.durability),
        "wal": "memory",
        "wal_capacity_bytes": options.wal_capacity_bytes,
        "checkpoint_log_bytes": options.checkpoint_log_bytes,
        "zone_bytes": options.out_of_place.zone_bytes,
        "zones_per_gc_unit": options.out_of_place.zones_per_gc_unit,
        "open_zones": options.out_of_place.open_zones,
        "gc_batch_pages": options.out_of_place.gc_batch_pages,
        "placement": format!("{:?}", options.out_of_place.placement),
        "gc_zones": format!("{:?}", options.out_of_place.gc_zones),
        "gc_policy": format!("{:?}", options.out_of_place.policy),
        "compression": options.out_of_place.compression.name(),
        "packing": options.out_of_place.packing,
        "nowa": options.out_of_place.nowa,
        "nowa_mode": options.out_of_place.nowa_mode.name(),
        "fdp": options.out_of_place.fdp,
        "artifact": {
            "gc_burst": options.out_of_place.artifact.gc_burst,
            "trim_off": options.out_of_place.artifact.trim_off,
            "gc_with_user": options.out_of_place.artifact.gc_with_user,
            "batch_one_zone": options.out_of_place.artifact.batch_one_zone,
            "lsn_history": options.out_of_place.artifact.lsn_history,
            "gc_in_pool": options.out_of_place.artifact.gc_in_pool,
        },
        "placement_handles": options.out_of_place.placement_handles,
        "gc_unit_bytes": options.out_of_place.gc_unit_bytes,
        "ssd_spare_bytes": options.out_of_place.ssd_spare_bytes,
        "blob_threshold_bytes": options.blob_threshold_bytes,
    })
}

/// `wafer::Db` with one tree, on a counted device.
#[derive(Debug)]
pub struct EngineTarget {
    db: Db,
    tree: Tree,
    device: Arc<Counted<Box<dyn Device>>>,
    description: serde_json::Value,
}

fn engine_error<E: Into<wafer::Error>>(op: &'static str) -> impl Fn(E) -> TargetError {
    move |e| TargetError::new(op, e.into())
}

impl EngineTarget {
    /// Opens (formatting if blank, as `options.create` allows) a database on `device`, with its
    /// WAL on a device of its own: `wal` (a file beside a file device, so a later run can reopen
    /// what a load left) or, when None, one in memory sized by `options.wal_capacity_bytes`.
    /// Log bytes never reach the data device's flash counters; both are counted into the same
    /// [`IoStats`], the WAL under its own purpose. `device_description` goes into the report
    /// next to the options.
    pub fn open(
        device: Box<dyn Device>,
        wal: Option<Box<dyn Device>>,
        options: Options,
        device_description: serde_json::Value,
    ) -> Result<EngineTarget, TargetError> {
        let counted = Arc::new(Counted::new(device, Arc::new(IoStats::default())));
        let mut description = serde_json::json!({
            "kind": "wafer",
            "options": describe_options(&options),
            "device": device_description,
            "device_capacity_bytes": counted.capacity_bytes(),
        });
        if wal.is_some() {
            description["options"]["wal"] = "device (a file beside a file device)".into();
        }
        let wal = wal.unwrap_or_else(|| Box::new(MemoryDevice::new(options.wal_capacity_bytes)));
        let wal: Arc<dyn Device> = Arc::new(Counted::new(wal, counted.stats().clone()));
        let db =
            Db::open_on_devices(counted.clone(), wal, options).map_err(engine_error("open"))?;
        let tree = db.tree(TABLE_NAME).map_err(engine_error("open tree"))?;
        Ok(EngineTarget { db, tree, device: counted, description })
    }

    pub fn db(&self) -> &Db {
        &self.db
    }

    /// Pages the database holds (superblock and catalog included), in bytes.
    pub fn allocated_page_bytes(&self) -> u64 {
        self.db.stats().allocated_pages * wafer::device::BLOCK_BYTES
    }
}

impl KvTarget for EngineTarget {
    fn sync_committed(&self) -> Option<Result<(), TargetError>> {
        Some(self.db.sync().map_err(engine_error("sync")))
    }

    fn read(&self, key: &[u8]) -> Result<bool, TargetError> {
        // The value is looked at in place, as LMDB's and RocksDB's pinned reads can.
        Ok(self.tree.get_with(key, |v| v.len()).map_err(engine_error("read"))?.is_some())
    }

    fn update(&self, key: &[u8], value: &[u8]) -> Result<(), TargetError> {
        self.tree.put(key, value).map_err(engine_error("update"))
    }

    fn insert(&self, key: &[u8], value: &[u8]) -> Result<(), TargetError> {
        self.tree.put(key, value).map_err(engine_error("insert"))
    }

    fn insert_batch(&self, records: &[(&[u8], &[u8])]) -> Result<(), TargetError> {
        let mut batch = wafer::WriteBatch::new();
        for (key, value) in records {
            batch.put(TABLE_NAME, key, value);
        }
        self.db.write(&batch).map_err(engine_error("insert batch"))
    }

    fn scan(&self, start: &[u8], count: usize) -> Result<usize, TargetError> {
        let mut seen = 0;
        for entry in self.tree.range::<&[u8], _>(start..).take(count) {
            entry.map_err(engine_error("scan"))?;
            seen += 1;
        }
        Ok(seen)
    }

    fn counters(&self) -> CounterSnapshot {
        let mut s = CounterSnapshot::default();
        apply_io_snapshot(&self.device.stats().snapshot(), &mut s);
        if let Some(flash) = self.device.flash_counters() {
            apply_flash_counters(&flash, &mut s);
        }
        if let Some(timing) = self.device.flash_timing() {
            apply_flash_timing(&timing, &mut s);
        }
        let stats = self.db.stats();
        // Logical user bytes: what the pool handed to the page store, before any transformation.
        s.logical_user_bytes = stats.logical.user();
        s.buffer_hits = stats.pool.hits;
        s.buffer_misses = stats.pool.misses;
        if let Some(w) = stats.wal {
            s.wal_records = w.records_appended;
            s.wal_payload_bytes = w.payload_bytes_appended;
            s.wal_padding_bytes = w.padding_bytes;
        }
        if let Some(b) = stats.blobs {
            s.blob_pages_read = b.pages_read;
            s.blob_cache_hits = b.cache_hits;
        }
        if let Some(o) = stats.out_of_place {
            s.blob_gc_pages = o.gc_blob_pages;
            s.gc_victims = o.space.gc_victims;
            s.gc_victim_valid_slots = o.space.gc_victim_valid_slots;
            s.gc_victim_slots = o.space.gc_victim_slots;
            s.gc_victim_live_bytes = o.space.gc_victim_live_bytes;
            s.gc_victim_valid_hist = o.space.gc_victim_valid_hist;
            s.edt_predictions = o.space.edt.predictions;
            s.edt_within_2x = o.space.edt.within_2x;
            s.edt_abs_error_sum = o.space.edt.abs_error_sum;
            s.edt_observed_lifetime_sum = o.space.edt.observed_lifetime_sum;
            s.live_pages = o.mapped_pages;
            s.zone_slots = u64::from(o.zone_count) * u64::from(o.slots_per_zone);
            s.metadata_device_bytes = o.metadata_device_bytes;
            s.device_capacity_bytes = self.device.capacity_bytes();
            let c = o.codec;
            s.codec_pages_in = c.pages_in;
            s.codec_bytes_stored = c.bytes_stored;
            s.compress_ns = c.compress_ns;
            s.decompress_ns = c.decompress_ns;
            s.store_page_reads = c.page_reads;
            s.store_device_reads = c.device_reads;
            s.slot_bytes = c.slot_bytes;
            s.packed_bytes = c.packed_bytes;
        }
        s
    }

    fn allocated_bytes(&self) -> Option<u64> {
        Some(self.allocated_page_bytes())
    }

    fn db_issued_bytes(&self) -> u64 {
        self.device.stats().snapshot().db_issued_bytes()
    }

    fn data_device_capacity_bytes(&self) -> u64 {
        self.device.capacity_bytes()
    }

    fn close(&self) -> Result<(), TargetError> {
        // `Db` is a handle: closing a clone closes the database for every handle.
        self.db.clone().close().map_err(engine_error("close"))
    }

    fn describe(&self) -> serde_json::Value {
        let mut d = self.description.clone();
        let allocated = self.allocated_page_bytes();
        d["allocated_bytes"] = allocated.into();
        d["fill"] = (allocated as f64 / self.data_device_capacity_bytes() as f64).into();
        if let Some(log) = self.device.fdp_stats() {
            // As an FDP SSD reports itself: its statistics log page.
            d["fdp_stats"] = serde_json::json!({
                "host_bytes_written": log.host_bytes_written,
                "media_bytes_written": log.media_bytes_written,
                "media_bytes_erased": log.media_bytes_erased,
            });
        }
        d
    }
}

/// Records inserted by the sizing pilot: enough for the B+tree's page fill to settle.
pub const PILOT_RECORDS: u64 = 32_768;
const PILOT_DEVICE_BYTES: u64 = 256 << 20;

/// Bytes of device space one record takes in the engine: allocated pages after inserting
/// [`PILOT_RECORDS`] records of `spec`'s key format and value size, in the load order
/// (hashed keys, so random), into a scratch database in memory with `options`' page layout.
/// `--fill` sizes the dataset with it (the B+tree's page fill depends on key and value sizes,
/// not on the device).
pub fn bytes_per_record(options: &Options, spec: &WorkloadSpec) -> Result<f64, TargetError> {
    let mut pilot_options = options.clone();
    pilot_options.buffer_pool_bytes = PILOT_DEVICE_BYTES / 4;
    pilot_options.write_mode = WriteMode::InPlace;
    // Values that fit inline are sized as inline records, so a run with blobs gets the same
    // dataset as one without (a blob takes a page id of its own, its bytes far less).
    if spec.value_size_bytes < wafer::options::MAX_INLINE_VALUE_BYTES as u32 {
        pilot_options.blob_threshold_bytes = None;
    }
    // A scratch database of its own, whatever the run's create mode (no_load opens with Never).
    pilot_options.create = wafer::CreateMode::New;
    let device: Box<dyn Device> = Box::new(MemoryDevice::new(PILOT_DEVICE_BYTES));
    let target = EngineTarget::open(device, None, pilot_options, serde_json::json!("pilot"))?;
    let before = target.allocated_page_bytes();
    let values = ValueGenerator::new(spec.value_compression_ratio)
        .map_err(|e| TargetError::new("pilot", e))?;
    let mut buf = vec![0u8; spec.value_size_bytes as usize];
    for keynum in 0..PILOT_RECORDS {
        values.fill(&ValueSpec { seed: keynum, len_bytes: spec.value_size_bytes }, &mut buf);
        target.insert(spec.key_format.key(keynum).as_bytes(), &buf)?;
    }
    let grown = target.allocated_page_bytes().saturating_sub(before);
    assert!(grown > 0, "the pilot inserted records without allocating pages");
    Ok(grown as f64 / PILOT_RECORDS as f64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn write_modes_parse_and_round_trip_through_options() {
        for m in WriteModeChoice::ALL {
            assert_eq!(WriteModeChoice::parse(m.name()), Ok(m));
            let mut o = Options::production();
            m.apply(&mut o);
            assert_eq!(WriteModeChoice::of_engine(&o), m);
        }
        assert!(WriteModeChoice::parse("sideways").is_err());
        let mut o = Options::test_min();
        set_engine_option(&mut o, "eviction_batch_pages", "8").unwrap();
        set_engine_option(&mut o, "buffer_pool_bytes", "1MiB").unwrap();
        assert_eq!((o.eviction_batch_pages, o.buffer_pool_bytes), (8, 1 << 20));
        assert!(set_engine_option(&mut o, "nonsense", "1").is_err());
        set_engine_option(&mut o, "file_direct", "true").unwrap();
        assert!(o.file.direct);
        assert!(set_engine_option(&mut o, "file_direct", "maybe").is_err());
        set_engine_option(&mut o, "write_mode", "out-of-place").unwrap();
        assert_eq!((o.write_mode, o.doublewrite), (WriteMode::OutOfPlace, false));
        set_engine_option(&mut o, "durability", "group:200").unwrap();
        assert!(matches!(o.durability, Durability::GroupCommit { .. }));
        assert!(set_engine_option(&mut o, "durability", "maybe").is_err());
    }

    #[test]
    fn engine_target_counts_user_writes_and_reads_back() {
        let device: Box<dyn Device> = Box::new(MemoryDevice::new(16 << 20));
        let t = EngineTarget::open(device, None, Options::test_min(), serde_json::json!("mem"))
            .unwrap();
        let value = vec![7u8; 1000];
        for i in 0..500u32 {
            t.insert(format!("key{i:05}").as_bytes(), &value).unwrap();
        }
        assert!(t.read(b"key00042").unwrap());
        assert!(!t.read(b"nope").unwrap());
        assert_eq!(t.scan(b"key00490", 100).unwrap(), 10);
        let c = t.counters();
        // A 16-frame pool holding ~500 KB of records must have evicted pages.
        assert!(c.user_bytes > 0, "{c:?}");
        assert_eq!(c.user_bytes % 4096, 0);
        assert!(!c.flash_measured);
        assert!(c.buffer_hits + c.buffer_misses > 0);
        assert_eq!(t.data_device_capacity_bytes(), 16 << 20);
    }

    #[test]
    fn pilot_measures_plausible_record_footprint() {
        let spec = wafer_workloads::ycsb::Workload::A.spec(1000);
        let bpr = bytes_per_record(&Options::test_min(), &spec).unwrap();
        // 23 + 1000 bytes per record, at most 4 per 4 KiB leaf, at least ~1 per leaf.
        assert!((1023.0..4096.0).contains(&bpr), "{bpr}");
    }

    #[test]
    fn out_of_place_options_parse_and_bad_values_say_why() {
        let mut o = Options::production();
        set_engine_option(&mut o, "placement", "random:7").unwrap();
        assert_eq!(o.out_of_place.placement, PlacementKind::Random { seed: 7 });
        set_engine_option(&mut o, "placement", "separate").unwrap();
        assert_eq!(o.out_of_place.placement, PlacementKind::Separate);
        set_engine_option(&mut o, "placement", "gdt").unwrap();
        assert_eq!(o.out_of_place.placement, PlacementKind::Gdt);
        assert_eq!(o.out_of_place.policy, VictimPolicyKind::GreedyUntilZone);
        set_engine_option(&mut o, "gc_policy", "cost-benefit-until-zone").unwrap();
        assert_eq!(o.out_of_place.policy, VictimPolicyKind::CostBenefitUntilZone);
        set_engine_option(&mut o, "open_zones", "16").unwrap();
        set_engine_option(&mut o, "zones_per_gc_unit", "32").unwrap();
        assert_eq!((o.out_of_place.open_zones, o.out_of_place.zones_per_gc_unit), (16, 32));
        set_engine_option(&mut o, "gc_zones", "3/6/2").unwrap();
        assert_eq!(
            o.out_of_place.gc_zones,
            GcZones::Fixed { free_low: 3, free_high: 6, reserve: 2 }
        );
        set_engine_option(&mut o, "gc_zones", "exhaustion").unwrap();
        assert_eq!(o.out_of_place.gc_zones, GcZones::OnExhaustion);
        assert_eq!(o.out_of_place.nowa_mode, NoWaMode::Unit, "unit by default");
        set_engine_option(&mut o, "nowa_mode", "group").unwrap();
        assert_eq!(o.out_of_place.nowa_mode, NoWaMode::Group);
        set_engine_option(&mut o, "nowa_mode", "unit").unwrap();
        assert_eq!(o.out_of_place.nowa_mode, NoWaMode::Unit);
        // The artifact's choices, each on its own and all together.
        assert_eq!(o.out_of_place.artifact, wafer::options::ArtifactOptions::default());
        set_engine_option(&mut o, "gc_with_user", "on").unwrap();
        assert!(o.out_of_place.artifact.gc_with_user && !o.out_of_place.artifact.gc_burst);
        set_engine_option(&mut o, "gc_in_pool", "on").unwrap();
        assert!(o.out_of_place.artifact.gc_in_pool && o.out_of_place.artifact.gc_with_user);
        set_engine_option(&mut o, "artifact", "on").unwrap();
        assert_eq!(o.out_of_place.artifact, wafer::options::ArtifactOptions::all());
        assert!(set_engine_option(&mut o, "trim_off", "maybe").is_err());
        for (key, bad) in [
            ("placement", "x"),
            ("open_zones", "0"),
            ("gc_zones", "1/2"),
            ("gc_policy", "lru"),
            ("nowa_mode", "zone"),
        ] {
            let e = set_engine_option(&mut o, key, bad).unwrap_err();
            assert!(e.starts_with(key), "{e}");
        }
    }
}
