//! `wafer bench ycsb`: YCSB on the engine (or a model), over the emulator or a file; prints a
//! Table-1-like row with latencies and writes the run report as JSON.
use std::path::PathBuf;

use clap::{Args, Subcommand};
use wafer_bench::progress::ProgressBar;
use wafer_bench::runner::spec::parse_duration;
use wafer_bench::runner::{self, setup, BenchConfig};
use wafer_bench::tpcc::{Cardinality, TpccSpec, TpccStop};

use super::error::CliError;

#[derive(Debug, Args)]
pub struct BenchArgs {
    #[command(subcommand)]
    command: BenchCommand,
}

// Parsed once per process: the size of the larger variant costs nothing worth a box.
#[allow(clippy::large_enum_variant)]
#[derive(Debug, Subcommand)]
enum BenchCommand {
    /// YCSB core workloads A-F: load, then run until a duration or N device capacities of DB
    /// writes; report OPS, DB / SSD / total WAF, bytes per operation and the write drilldown.
    Ycsb(YcsbArgs),
    /// TPC-C: the nine tables as trees, the five transactions in the spec's mix on several
    /// terminals; report tpmC, flash bytes per transaction and the write drilldown; --check
    /// verifies consistency conditions 3.3.2.1-3.3.2.4 after the run.
    Tpcc(TpccArgs),
    /// Wafer beside RocksDB, LMDB, WiredTiger and PostgreSQL: the same YCSB phases (load, A,
    /// B, C, F; zipf and uniform), matched sizes, cache, threads and durability; ops/s,
    /// latency and host bytes per operation; --plots STEM writes STEM-ops and STEM-host-write.
    Peers(super::peers::PeersArgs),
    /// The speed comparison: Wafer in place and out of place beside RocksDB and LMDB on
    /// a random and a sorted load, YCSB-A on a file (O_DIRECT) and in-memory lookups; rounds
    /// interleaved, ops/s min and median, ratios to RocksDB and LMDB.
    Speed(super::peers::SpeedArgs),
    /// One engine of `bench peers` in a process of its own: reads the job (JSON) on stdin,
    /// writes a JSON message a line on stdout. Started by `bench peers`, not by hand.
    #[command(hide = true)]
    PeersWorker,
}

/// Device and engine flags as `bench ycsb` has them.
#[derive(Debug, Args)]
pub struct TpccArgs {
    /// Warehouses to load.
    #[arg(long, default_value_t = 1)]
    warehouses: u32,
    /// Table sizes per warehouse: spec (100,000 items, 3,000 customers per district) or mini
    /// (1/100 of them, for quick runs).
    #[arg(long, default_value = "spec")]
    cardinality: String,
    #[command(flatten)]
    store: StoreFlags,
    /// Buffer pool: a fraction of the estimated loaded dataset (0.1, 10%) or a size (64MiB)
    /// [default: 10%].
    #[arg(long)]
    buffer: Option<String>,
    /// Terminals (threads) [default: cores].
    #[arg(long)]
    threads: Option<u32>,
    /// Stop after this time (60s, 5m) [default: 60s].
    #[arg(long)]
    duration: Option<String>,
    /// Stop after this many transactions (all types), instead of --duration.
    #[arg(long)]
    transactions: Option<u64>,
    /// Delivery deletes delivered orders and their lines: the dataset keeps its size.
    #[arg(long)]
    steady: bool,
    /// Check consistency conditions 3.3.2.1-3.3.2.4 after the run (fails when one breaks).
    #[arg(long)]
    check: bool,
    /// Sample period of the flash-writes curve [default: 1s].
    #[arg(long)]
    interval: Option<String>,
    #[arg(long, default_value_t = 42)]
    seed: u64,
    #[arg(long)]
    label: Option<String>,
    /// Write the report (setup, counts, figures, samples, check) as JSON.
    #[arg(long, value_name = "FILE")]
    json: Option<PathBuf>,
}

impl TpccArgs {
    fn config(&self) -> Result<BenchConfig, CliError> {
        Ok(BenchConfig {
            label: self.label.clone(),
            device: self.store.device.clone(),
            buffer: self.buffer.clone(),
            write_mode: self.store.write_mode.clone(),
            engine: self.store.engine_settings()?,
            emu: BenchConfig::settings(&self.store.emu)?,
            ..BenchConfig::default()
        })
    }

    fn spec(&self) -> Result<TpccSpec, CliError> {
        let invalid = CliError;
        let stop = match (&self.duration, self.transactions) {
            (Some(_), Some(_)) => {
                return Err(invalid("give --duration or --transactions, not both".into()))
            }
            (_, Some(n)) => TpccStop::Transactions(n),
            (d, None) => TpccStop::Duration(
                parse_duration(d.as_deref().unwrap_or("60s")).map_err(|e| invalid(e.0))?,
            ),
        };
        Ok(TpccSpec {
            warehouses: self.warehouses,
            cardinality: Cardinality::parse(&self.cardinality).map_err(invalid)?,
            threads: self.threads.unwrap_or_else(|| {
                std::thread::available_parallelism().map_or(1, |n| n.get() as u32)
            }),
            steady: self.steady,
            stop,
            interval: parse_duration(self.interval.as_deref().unwrap_or("1s"))
                .map_err(|e| invalid(e.0))?,
            seed: self.seed,
            remote_item_percent: 1,
        })
    }
}

/// Where the data lives and how the engine writes it: the flags `bench ycsb` and `bench tpcc`
/// share.
#[derive(Debug, Args)]
pub struct StoreFlags {
    /// emu:PRESET (cns, ent, fdp, zns, tiny, plan) or emu:FILE.toml, file:PATH, memory:SIZE,
    /// model:SIZE (ycsb only) [default: emu:cns].
    #[arg(long)]
    device: Option<String>,
    /// in-place (doublewrite), in-place-no-dwb, out-of-place.
    #[arg(long)]
    write_mode: Option<String>,
    /// Page compression out of place: lz4, zstd[:LEVEL] or none (the engine option
    /// `compression`).
    #[arg(long, value_name = "CODEC")]
    compression: Option<String>,
    /// Pack compressed pages several to a 4 KiB slot by best-fit decreasing: on (default), or
    /// off: concatenate them, some crossing into the next slot (two reads each).
    #[arg(long, value_name = "on|off")]
    packing: Option<String>,
    /// Engine option KEY=VALUE (buffer_pool_bytes, eviction_batch_pages, open_zones,
    /// placement=separate|random|gdt, gc_policy=greedy|cost-benefit|greedy-until-zone|
    /// cost-benefit-until-zone, zones_per_gc_unit, gc_zones=exhaustion|scaled|L/H/R, ...),
    /// repeatable.
    #[arg(long = "engine", value_name = "KEY=VALUE")]
    engine: Vec<String>,
    /// Emulator configuration override KEY=VALUE (op=0.28, blocks-per-chip=16), repeatable.
    #[arg(long = "emu", value_name = "KEY=VALUE")]
    emu: Vec<String>,
}

impl StoreFlags {
    /// `--engine` settings, with `--compression` and `--packing` as the engine options they
    /// name (after the `--engine` ones, so the flags win).
    fn engine_settings(&self) -> Result<wafer_bench::runner::EngineSettings, CliError> {
        let mut pairs = self.engine.clone();
        pairs.extend(self.compression.iter().map(|c| format!("compression={c}")));
        pairs.extend(self.packing.iter().map(|p| format!("packing={p}")));
        Ok(BenchConfig::settings(&pairs)?)
    }
}

/// Every flag overrides the same-named key of --config (a TOML file).
#[derive(Debug, Args)]
pub struct YcsbArgs {
    /// Settings file (TOML, keys as these flags with `_`; [engine] and [emu] tables).
    #[arg(long, value_name = "FILE.toml")]
    config: Option<PathBuf>,
    /// Workload a..f [default: a].
    #[arg(long)]
    workload: Option<String>,
    #[command(flatten)]
    store: StoreFlags,
    /// Dataset size as the engine stores it: a fraction of the device's logical capacity in
    /// place, of the zone space DB GC manages out of place (as 000 sizes it) [default: 0.9].
    #[arg(long)]
    fill: Option<f64>,
    /// Dataset size in records (instead of --fill).
    #[arg(long)]
    records: Option<u64>,
    /// Dataset size as keys + values, e.g. 1GiB (instead of --fill).
    #[arg(long, value_name = "BYTES")]
    dataset_bytes: Option<String>,
    /// Bytes per value [default: 1000].
    #[arg(long, value_name = "BYTES")]
    value_size: Option<u32>,
    /// Fraction of random bytes per value (compressibility) [default: 0.39].
    #[arg(long)]
    compression_ratio: Option<f64>,
    /// Request distribution: uniform, zipf:T, scrambled:T, latest:T, hotcold:X:Y.
    #[arg(long)]
    distribution: Option<String>,
    /// Shorthand for --distribution zipf:THETA.
    #[arg(long, value_name = "THETA")]
    zipf_theta: Option<f64>,
    /// YCSB insertorder: hashed (default; hot keys scatter over the tree) or ordered (key
    /// numbers in key order, so a zipfian's hot keys share leaves, as ZLeanStore's YCSB).
    #[arg(long, value_name = "ORDER")]
    insert_order: Option<String>,
    /// Workload settings under the flags: zleanstore (000's artifact's YCSB: ordered keys, the
    /// zipf rank as key, 120-byte values, zipf 0.8).
    #[arg(long)]
    preset: Option<String>,
    /// The emulated SSD drops the engine's trims (TRIM off, 000's artifact's default).
    #[arg(long)]
    no_trim: bool,
    /// Worker threads [default: cores].
    #[arg(long)]
    threads: Option<u32>,
    /// Buffer pool: a fraction of the dataset (0.1, 10%) or a size (64MiB) [default: 10%].
    #[arg(long)]
    buffer: Option<String>,
    /// Stop after this measured time (60s, 5m) [default: 60s].
    #[arg(long)]
    duration: Option<String>,
    /// Stop when DB writes since the run began reach N device capacities (4x).
    #[arg(long, value_name = "Nx")]
    until: Option<String>,
    /// Stop after this many operations.
    #[arg(long)]
    ops: Option<u64>,
    /// Exclude the start of the run: a time (30s) or DB writes in capacities (1x).
    #[arg(long)]
    warmup: Option<String>,
    /// Sample period [default: 1s].
    #[arg(long)]
    interval: Option<String>,
    #[arg(long)]
    seed: Option<u64>,
    /// Skip the load phase (the file device already holds the dataset).
    #[arg(long)]
    no_load: bool,
    /// Records per atomic batch while loading (a `WriteBatch`) [default: 1].
    #[arg(long, value_name = "N")]
    load_batch: Option<u32>,
    /// Label of the run in tables and plots.
    #[arg(long)]
    label: Option<String>,
    /// Write the run report (config, hash, intervals, summary, latencies) as JSON.
    #[arg(long, value_name = "FILE")]
    json: Option<PathBuf>,
    /// No live status line.
    #[arg(long, short)]
    quiet: bool,
}

impl YcsbArgs {
    /// The file's settings with the flags over them.
    pub fn bench_config(&self) -> Result<BenchConfig, CliError> {
        let file = match &self.config {
            Some(path) => BenchConfig::load(path)?,
            None => BenchConfig::default(),
        };
        let flags = BenchConfig {
            label: self.label.clone(),
            workload: self.workload.clone(),
            device: self.store.device.clone(),
            fill: self.fill,
            records: self.records,
            dataset_bytes: self.dataset_bytes.clone(),
            value_size: self.value_size,
            compression_ratio: self.compression_ratio,
            distribution: self.distribution.clone(),
            zipf_theta: self.zipf_theta,
            insert_order: self.insert_order.clone(),
            preset: self.preset.clone(),
            trim: self.no_trim.then_some(false),
            threads: self.threads,
            buffer: self.buffer.clone(),
            duration: self.duration.clone(),
            until: self.until.clone(),
            ops: self.ops,
            warmup: self.warmup.clone(),
            interval: self.interval.clone(),
            seed: self.seed,
            write_mode: self.store.write_mode.clone(),
            no_load: self.no_load.then_some(true),
            load_batch: self.load_batch,
            engine: self.store.engine_settings()?,
            emu: BenchConfig::settings(&self.store.emu)?,
        };
        Ok(file.overridden_by(&flags))
    }
}

pub fn run(args: BenchArgs) -> Result<(), CliError> {
    match args.command {
        BenchCommand::Ycsb(a) => ycsb(&a),
        BenchCommand::Tpcc(a) => tpcc(&a),
        BenchCommand::Peers(a) => super::peers::run(&a),
        BenchCommand::Speed(a) => super::peers::speed(&a),
        BenchCommand::PeersWorker => super::peers::worker(),
    }
}

fn tpcc(args: &TpccArgs) -> Result<(), CliError> {
    super::output::check_output_path(args.json.as_deref())?;
    let report = wafer_bench::tpcc::bench::run(&args.config()?, &args.spec()?, args.check)?;
    print!("{}", wafer_bench::tpcc::bench::render(&report));
    if let Some(path) = &args.json {
        super::output::write_file(path, report.to_json()?.as_bytes())?;
    }
    Ok(())
}

fn ycsb(args: &YcsbArgs) -> Result<(), CliError> {
    super::output::check_output_path(args.json.as_deref())?;
    let config = args.bench_config()?;
    let prepared = setup::prepare(&config)?;
    let mut live = ProgressBar::without_totals(!args.quiet);
    let report = runner::run(prepared.target.as_ref(), &prepared.spec, prepared.setup, &mut live)?;
    print!("{}", runner::table::render_report(&report));
    if let Some(path) = &args.json {
        super::output::write_file(path, report.to_json()?.as_bytes())?;
    }
    Ok(())
}
