//! Wafer as it is meant to run: on the served device file itself, no filesystem between it and
//! the emulated SSD, its zones cut from the SSD's GC unit and NoWA on (Table 1's "+ aligning
//! GC unit" row), its WAL on a second served device whose bytes count in the row.
//!
//! ```text
//!  harness: DIR/emu/ssd  <- `wafer emu serve` (data device, sized below)
//!           DIR/wal/emu/ssd <- `wafer emu serve` (WAL device, the same preset)
//!  worker:  FileDevice(DIR/emu/ssd) + FileDevice(DIR/wal/emu/ssd) -> EngineTarget
//! ```
//!
//! Rows are a list ([`RawRow`]): each names itself and adds engine options (`key=value`, as
//! `wafer bench ycsb --engine` takes them) to [`RAW_BASE`]. A row the engine does not support
//! yet (an option it does not know) fails with that option named, in its own row.

use flashemu::Config;

use super::config::PeersConfig;
use super::durability::Durability;
use super::emu_device::EmuDevice;
use super::error::PeerError;
use wafer_harness::runner::{engine, setup, BenchConfig};
use wafer_workloads::dist::Distribution;
use wafer_workloads::ycsb::Workload;

pub use super::raw_row::{RawJob, RawRow, BLOB_ID_CAP_OPTION, BLOB_THRESHOLD_OPTION, RAW_BASE};

/// Two devices of one preset and the options the engine gets on them.
pub(crate) struct RawPlan {
    pub data: Config,
    pub wal: Config,
    pub engine: Vec<String>,
    pub wal_capacity_bytes: u64,
    /// Records' page bytes / the zone space (Table 1's `fill`).
    pub fill: f64,
}

/// The emulator's GC unit (a superblock) and its flash beyond the logical bytes, as the
/// server's device reports them: the preset as sized, which is what the server is given.
fn device_facts(config: &Config) -> (u64, u64) {
    let layout = config.layout();
    let unit = u64::from(layout.slots_per_superblock) * flashemu::LBA_BYTES;
    let logical = layout.logical_blocks * flashemu::LBA_BYTES;
    let physical = layout.physical_slots * flashemu::LBA_BYTES;
    (unit, physical.saturating_sub(logical))
}

/// Sets the engine's `gc_unit_bytes` to the unit the served device reported, when it did;
/// returns where the unit came from (for the row's settings).
pub(crate) fn use_reported_gc_unit(engine: &mut [String], reported: Option<u64>) -> &'static str {
    let Some(unit) = reported else {
        return "the preset as sized (the server reported no GC unit)";
    };
    for option in engine.iter_mut().filter(|o| o.starts_with("gc_unit_bytes=")) {
        *option = format!("gc_unit_bytes={unit}");
    }
    debug_assert!(engine.iter().any(|o| *o == format!("gc_unit_bytes={unit}")));
    "the served device's report (gc_unit_bytes in MOUNT/stats)"
}

/// WAL bytes: half the dataset within 16 MiB ..= 1 GiB, as the ext4 Wafer rows have.
pub(crate) fn wal_bytes(dataset_bytes: u64) -> u64 {
    let block = wafer::device::BLOCK_BYTES;
    (dataset_bytes / 2).clamp(16 << 20, 1 << 30) / block * block
}

/// The fill of a raw row's zone space when the device's space is not `own:SHARE`: Table 1's.
pub const FILL_DEFAULT: f64 = 0.9;

/// Bound on the sizing steps (each grows the device by at least 2%).
const SIZING_STEPS_MAX: u32 = 64;

/// Sizes the data device so the records' page bytes take `fill` of the engine's zone space
/// (the fill `wafer experiment table1` gives its rows: `fill 0.9`), with the GC unit and
/// spare flash of the device sized so; the WAL device holds the WAL. With `same_bytes` (every
/// engine's device one size: `dataset:FACTOR`) the data and WAL devices together hold that
/// many bytes instead, as the other engines' one device holds their log too.
pub(crate) fn plan(
    emu: &EmuDevice,
    config: &PeersConfig,
    row: &RawRow,
    fill: f64,
    same_bytes: Option<u64>,
) -> Result<RawPlan, PeerError> {
    let wal = wal_bytes(config.dataset_bytes());
    let mut engine = row.options(config.blob_threshold_bytes);
    engine.extend([
        format!("durability={}", durability(config)),
        format!("wal_capacity_bytes={wal}"),
        format!("checkpoint_log_bytes={}", wal / 4),
    ]);
    if config.direct_io {
        engine.push("file_direct=true".into());
    }
    let bench = bench_config(&engine)?;
    let options = setup::engine_options(&bench).map_err(wafer_error)?;
    let spec = config.workload(Workload::A, Distribution::Uniform);
    let per_record = engine::bytes_per_record(&options, &spec).map_err(wafer_error)?;
    let need = per_record * config.record_count as f64;
    // Bound: each step grows the device by at least 2%; a fixed size takes one step.
    let steps = if same_bytes.is_some() { 1 } else { SIZING_STEPS_MAX };
    let mut want = same_bytes.map_or(need / fill, |total| total.saturating_sub(wal) as f64);
    for _ in 0..steps {
        let data = emu.config_holding(want as u64)?;
        let (unit, spare) = device_facts(&data);
        let capacity = data.layout().logical_blocks * flashemu::LBA_BYTES;
        let mut o = options.clone();
        o.out_of_place.gc_unit_bytes = unit;
        o.out_of_place.ssd_spare_bytes = spare;
        let zone_space = setup::zone_space_bytes(capacity, &o).map_err(wafer_error)?;
        let reached = need / zone_space.max(1) as f64;
        if reached <= fill || same_bytes.is_some() {
            engine.push(format!("gc_unit_bytes={unit}"));
            engine.push(format!("ssd_spare_bytes={spare}"));
            let wal_device = emu.config_holding(wal)?;
            return Ok(RawPlan {
                data,
                wal: wal_device,
                engine,
                wal_capacity_bytes: wal,
                fill: reached,
            });
        }
        want = (want * (reached / fill)).max(want * 1.02);
    }
    Err(PeerError::Config(format!(
        "{}: no device of this preset holds {need:.0} page bytes at fill {fill}",
        emu.name
    )))
}

fn durability(config: &PeersConfig) -> &'static str {
    match config.durability {
        Durability::Sync => "sync",
        Durability::Lazy => "none",
    }
}

/// The bench configuration whose engine options a raw row uses (sizes come from the job).
pub(crate) fn bench_config(engine: &[String]) -> Result<BenchConfig, PeerError> {
    Ok(BenchConfig {
        write_mode: Some("out-of-place".into()),
        engine: BenchConfig::settings(engine).map_err(wafer_error)?,
        ..BenchConfig::default()
    })
}

pub(crate) fn wafer_error(e: impl std::fmt::Display) -> PeerError {
    PeerError::Wafer(e.to_string())
}
