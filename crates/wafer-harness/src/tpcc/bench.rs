//! `wafer bench tpcc`: the engine on a device chosen as for YCSB (emulator presets, files,
//! memory; every write mode), the population loaded, the terminals run, and a report with
//! tpmC-like throughput (New-Order transactions per minute, rolled back ones included as
//! spec 5.4.2 counts them), flash bytes per transaction and the same WAF drilldown as YCSB
//! (`runner::table`, with transactions as the operations).
use super::check::{self, ConsistencyReport};
use super::driver::{self, Sample, TxnCounts};
use super::{TpccError, TpccSpec};
use crate::jobs::Amount;
use crate::metrics::Figures;
use crate::runner::engine::{describe_options, EngineTarget};
use crate::runner::setup::{engine_options, open_device, BenchConfig, DeviceChoice};
use crate::runner::table::{self, Row};
use crate::runner::KvTarget;
use std::fmt::Write as _;
use std::time::Instant;

pub const TPCC_REPORT_SCHEMA: &str = "wafer-bench/tpcc";
pub const TPCC_REPORT_VERSION: u32 = 1;

/// The smallest pool the bench gives the engine: a New-Order batch dirties up to ~40 pages
/// and the pool must find unlatched frames for the batch in progress (`Error::PoolExhausted`).
const POOL_MIN_BYTES: u64 = 1 << 20;

/// B+tree pages hold about this share of row bytes after the load (measured: 2 warehouses of
/// the spec cardinality took 345 MB of pages for 155 MB of rows).
const PAGE_FILL_ESTIMATE: f64 = 0.45;

/// One run, as `--json` writes it.
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
pub struct TpccReport {
    pub schema: String,
    pub version: u32,
    pub label: String,
    pub setup: serde_json::Value,
    pub load_elapsed_s: f64,
    /// The load's writes (eviction, checkpoint), not part of `summary`.
    pub load: Figures,
    pub counts: TxnCounts,
    pub elapsed_s: f64,
    /// New-Order transactions per minute.
    pub tpmc: f64,
    pub transactions_per_sec: f64,
    /// Over the measured run; operations are transactions (all five types).
    pub summary: Figures,
    pub flash_bytes_per_transaction: Option<f64>,
    pub flash_bytes_per_new_order: Option<f64>,
    /// Device bytes the database's pages take after the load and after the run.
    pub allocated_bytes_loaded: u64,
    pub allocated_bytes_end: u64,
    pub samples: Vec<Sample>,
    pub check: Option<ConsistencyReport>,
}

impl TpccReport {
    pub fn to_json(&self) -> Result<String, serde_json::Error> {
        serde_json::to_string_pretty(self)
    }
}

/// Device and engine settings come from `config` (device, write_mode, engine, emu, buffer,
/// label); the run from `spec`. `check`: run the consistency conditions after the run (an
/// inconsistent database is an error).
pub fn run(config: &BenchConfig, spec: &TpccSpec, check: bool) -> Result<TpccReport, TpccError> {
    spec.validate()?;
    let device_text = config.device.clone().unwrap_or_else(|| "emu:cns".to_string());
    let device = DeviceChoice::parse(&device_text)?;
    if matches!(device, DeviceChoice::Model(_)) {
        return Err(TpccError::Invalid("TPC-C runs on the engine: model devices have none".into()));
    }
    if config.no_load == Some(true) {
        return Err(TpccError::Invalid(
            "TPC-C loads its population; no_load is not supported".into(),
        ));
    }
    let (target, options, device_json, capacity_bytes, dataset_estimate) =
        open_target(config, &device, spec)?;
    let db = target.db().clone();
    let before_load = target.counters();
    let started = Instant::now();
    driver::load_all(&db, spec)?;
    let load_elapsed = started.elapsed();
    let loaded = target.counters();
    let allocated_bytes_loaded = target.allocated_page_bytes();
    let outcome = driver::run(&db, spec, &|| target.counters())?;
    let consistency = if check {
        let r = check::check(&db, spec.warehouses, spec.steady)?;
        if !r.passed() {
            return Err(TpccError::Inconsistent(r.violations.join("; ")));
        }
        Some(r)
    } else {
        None
    };
    let allocated_bytes_end = target.allocated_page_bytes();
    target.close()?;
    let last = outcome.samples.last().map(|s| s.counters).unwrap_or_default();
    let summary = Figures::from_delta(&last);
    let mut load_delta = loaded.since(&before_load);
    load_delta.time_ns = load_elapsed.as_nanos() as u64;
    let c = &outcome.counts;
    let minutes = outcome.elapsed.as_secs_f64() / 60.0;
    let per = |bytes: u64, n: u64| (n > 0 && last.flash_measured).then(|| bytes as f64 / n as f64);
    let label = config.label.clone().unwrap_or_else(|| {
        format!(
            "tpcc {}w {} {}",
            spec.warehouses,
            device_text,
            crate::runner::engine::WriteModeChoice::of_engine(&options).name()
        )
    });
    Ok(TpccReport {
        schema: TPCC_REPORT_SCHEMA.into(),
        version: TPCC_REPORT_VERSION,
        label,
        setup: serde_json::json!({
            "device": device_text,
            "device_detail": device_json,
            "data_device_capacity_bytes": capacity_bytes,
            "options": describe_options(&options),
            "warehouses": spec.warehouses,
            "cardinality": spec.cardinality,
            "threads": spec.threads,
            "steady": spec.steady,
            "stop": format!("{:?}", spec.stop),
            "seed": spec.seed,
            "remote_item_percent": spec.remote_item_percent,
            "dataset_estimate_bytes": dataset_estimate,
            "buffer_pool_bytes": options.buffer_pool_bytes,
        }),
        load_elapsed_s: load_elapsed.as_secs_f64(),
        load: Figures::from_delta(&load_delta),
        counts: c.clone(),
        elapsed_s: outcome.elapsed.as_secs_f64(),
        tpmc: if minutes > 0.0 { c.completed[0] as f64 / minutes } else { 0.0 },
        transactions_per_sec: c.total() as f64 / outcome.elapsed.as_secs_f64().max(1e-9),
        summary,
        flash_bytes_per_transaction: per(last.flash_bytes(), c.total()),
        flash_bytes_per_new_order: per(last.flash_bytes(), c.completed[0]),
        allocated_bytes_loaded,
        allocated_bytes_end,
        samples: outcome.samples,
        check: consistency,
    })
}

/// The engine on the configured device, its pool sized to `config.buffer` of the dataset
/// estimate: (target, options, device description, capacity, dataset estimate).
fn open_target(
    config: &BenchConfig,
    device: &DeviceChoice,
    spec: &TpccSpec,
) -> Result<(EngineTarget, wafer::Options, serde_json::Value, u64, u64), TpccError> {
    let mut options = engine_options(config)?;
    let mut opened = open_device(config, device, &mut options)?;
    let dataset_estimate = (f64::from(spec.warehouses) * spec.cardinality.warehouse_bytes() as f64
        / PAGE_FILL_ESTIMATE) as u64;
    if dataset_estimate > opened.capacity_bytes {
        return Err(TpccError::Invalid(format!(
            "{} warehouses take about {dataset_estimate} bytes; the device holds {}",
            spec.warehouses, opened.capacity_bytes
        )));
    }
    let buffer = Amount::parse(config.buffer.as_deref().unwrap_or("10%"))
        .map_err(|e| TpccError::Invalid(format!("buffer: {e}")))?;
    options.buffer_pool_bytes = buffer.bytes(dataset_estimate).max(POOL_MIN_BYTES);
    let (Some(backend), wal) = (opened.backend.take(), opened.wal.take()) else {
        return Err(TpccError::Invalid("no device".into()));
    };
    let target = EngineTarget::open(backend, wal, options.clone(), opened.json.clone())?;
    opened.keep_files();
    Ok((target, options, opened.json, opened.capacity_bytes, dataset_estimate))
}

/// The text `wafer bench tpcc` prints: the YCSB table (operations = transactions), then
/// TPC-C's own figures.
pub fn render(report: &TpccReport) -> String {
    let mut out =
        table::render(&[Row { label: report.label.clone(), figures: Ok(report.summary) }]);
    let c = &report.counts;
    let fmt = |v: Option<f64>| v.map_or("-".to_string(), |x| format!("{x:.0}"));
    let _ = writeln!(
        out,
        "tpmC {:.0}  transactions/s {:.1}  over {:.1} s  (load {:.1} s)",
        report.tpmc, report.transactions_per_sec, report.elapsed_s, report.load_elapsed_s
    );
    let _ = writeln!(
        out,
        "flash bytes per transaction {}  per New-Order {}",
        fmt(report.flash_bytes_per_transaction),
        fmt(report.flash_bytes_per_new_order)
    );
    let kinds: Vec<String> =
        driver::KINDS.iter().zip(c.completed).map(|(k, n)| format!("{k} {n}")).collect();
    let _ = writeln!(
        out,
        "transactions: {}; New-Order rollbacks {}, orders delivered {}, lock retries {}",
        kinds.join(", "),
        c.new_order_rollbacks,
        c.deliveries,
        c.lock_retries
    );
    let _ = writeln!(
        out,
        "dataset: {} bytes of pages after the load, {} after the run",
        report.allocated_bytes_loaded, report.allocated_bytes_end
    );
    if let Some(r) = &report.check {
        let _ = writeln!(
            out,
            "consistency 3.3.2.1-3.3.2.4: passed ({} warehouses, {} districts, {} district checks skipped)",
            r.warehouses, r.districts, r.skipped
        );
    }
    out
}
