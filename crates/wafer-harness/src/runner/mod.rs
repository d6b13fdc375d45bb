//! The engine benchmark runner: YCSB against a key-value target, measured the way 000 sec. 7
//! measures (OPS, DB / SSD / total WAF, logical and physical bytes per operation, the write
//! drilldown, buffer hit ratio, CPU and memory), every interval and cumulatively.
//!
//! ```text
//!  setup (BenchConfig: TOML + flags) --> target (engine on emu/file/memory device, or a model)
//!        |                                  |
//!        v                                  v
//!  RunSpec --> load phase (threads) --> run phase (threads, warm-up, stop) --> RunReport JSON
//!                                           | every interval: IntervalSampler   + table
//! ```
//!
//! The runner knows targets only through [`KvTarget`]; [`engine`] adapts `wafer::Db`.
//!
//! Measurement method (what the numbers mean):
//! - Load: `record_count` inserts split by key range over the threads, then (with `--fill` on
//!   the engine) a single-threaded top-up until the engine's allocated pages reach
//!   `fill * capacity`. Its figures are the report's `load`, never part of `summary`.
//! - Run: each thread draws from its own generator (`Rng::for_thread(seed, t)`). Conditions on
//!   DB-issued bytes (`--until Nx`, `--warmup Nx`) count from the start of the run phase and are
//!   checked by the workers every 16 operations, so a fast small device cannot overshoot while
//!   the coordinating thread sleeps; time conditions are checked by the coordinator every 10 ms.
//! - Warm-up: operations before its end are neither timed nor counted; the interval series and
//!   `summary` start at its end (`start_s` = 0). Around that instant at most one operation per
//!   thread can be timed but not counted, or the reverse.
//! - Samples: every `interval`, plus one at the end; each has the interval's and the
//!   cumulative figures, all from one counter difference (so `total_waf = db_waf * ssd_waf`).
//! - Close: after the final sample the target is closed (the engine writes back its dirty pages
//!   and superblock); those writes are in no figure.

pub mod engine;
mod error;
mod exec;
pub mod load;
pub mod plots;
mod run;
mod sample;
pub mod setup;
pub mod spec;
pub mod table;
pub mod target;

#[cfg(test)]
mod tests;

use std::time::Instant;

pub use error::RunError;
pub use exec::WorkerError;
pub use setup::{BenchConfig, EngineSettings, Prepared, SetupError};
pub use spec::{RunSpec, SpecError, Stop, Warmup, LOAD_BATCH_MAX};
pub use target::{KvTarget, MemTarget, TargetError};

use crate::metrics::RunReport;
use crate::progress::Progress;

/// Runs `spec` against `target`: the load phase (if asked), then the run phase. `setup` is the
/// configuration that built the target (device, sizing, engine options); it goes into the
/// report's `config.setup` and, with everything else in `config`, into its hash.
pub fn run(
    target: &dyn KvTarget,
    spec: &RunSpec,
    setup: serde_json::Value,
    progress: &mut dyn Progress,
) -> Result<RunReport, RunError> {
    let report = run_open(target, spec, setup, progress)?;
    target.close().map_err(|e| RunError::Worker { phase: "close", source: e.into() })?;
    Ok(report)
}

/// As [`run`], the target left open: the peers harness runs several phases on one database.
pub fn run_open(
    target: &dyn KvTarget,
    spec: &RunSpec,
    setup: serde_json::Value,
    progress: &mut dyn Progress,
) -> Result<RunReport, RunError> {
    spec.validate()?;
    let config = serde_json::json!({
        "run": spec.describe(),
        "target": target.describe(),
        "data_device_capacity_bytes": target.data_device_capacity_bytes(),
        "setup": setup,
    });
    let mut report = RunReport::new(spec.label.clone(), config, spec.seed, spec.threads);
    let snapshots = sample::Snapshotter { target, base: Instant::now() };
    let mut spec = spec.clone();
    if spec.load {
        let (figures, extra) = load::load(target, &spec, &snapshots, progress)?;
        report.load = Some(figures);
        spec.workload.record_count += extra;
    }
    report.observed = serde_json::json!({
        "target_before_run": target.describe(),
        "record_count": spec.workload.record_count,
    });
    let histograms = run::run_phase(target, &spec, &snapshots, &mut report, progress)?;
    report.latency = histograms.summaries();
    report.observed["target_after_run"] = target.describe();
    Ok(report)
}

/// The load phase alone (`spec.workload.record_count` inserts over `spec.threads`), the target
/// left open; its figures (ops = records inserted). The stop condition of `spec` is unused.
pub fn load_open(
    target: &dyn KvTarget,
    spec: &RunSpec,
    progress: &mut dyn Progress,
) -> Result<crate::metrics::Figures, RunError> {
    spec.validate()?;
    let snapshots = sample::Snapshotter { target, base: Instant::now() };
    let (figures, _top_up) = load::load(target, spec, &snapshots, progress)?;
    Ok(figures)
}

/// The x axis of the plots: DB-issued bytes since the measurement began, in device capacities.
pub fn written_capacities(report: &RunReport) -> Option<f64> {
    let capacity = report.config.get("data_device_capacity_bytes")?.as_u64()?;
    (capacity > 0).then(|| report.summary.bytes.db_issued as f64 / capacity as f64)
}
