//! The comparison run: every engine through the same phases, one after another, rounds
//! interleaved (round r starts at engine r), each engine in a fresh directory it is the only
//! user of; rows of figures per engine, phase and distribution.

use super::emu_device::{describe_config, logical_bytes, EmuDevice, EmuSpace, Staged};
use super::engine::EngineKind;
use super::error::PeerError;
use super::raw::{self, RawJob, RawRow};
use super::worker::{self, WorkerJob};
use wafer_harness::progress::Progress;
use wafer_harness::runner::Stop;
use wafer_workloads::dist::Distribution;
use wafer_workloads::ycsb::Workload;

pub use super::config::{
    PeerDevice, PeersConfig, Scale, WriteVolume, BLOB_THRESHOLD_BYTES_DEFAULT, PEERS_SCHEMA,
    PEERS_VERSION, ROUNDS_MAX, VALUE_BYTES_MAX,
};
pub use super::report::{PeersReport, Row};

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
    // One device size for every engine: the raw row's two devices share it.
    let same_bytes = match emu.space {
        EmuSpace::PerDataset(factor) => Some((config.dataset_bytes() as f64 * factor) as u64),
        _ => None,
    };
    let mut plan = raw::plan(emu, config, row, fill, same_bytes)?;
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
