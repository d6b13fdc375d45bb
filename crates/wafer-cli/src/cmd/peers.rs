//! `wafer bench peers`: Wafer beside RocksDB, LMDB, WiredTiger and PostgreSQL on the same YCSB
//! phases, with matched record count, value size, cache, threads and durability.
use std::path::PathBuf;

use clap::Args;
use wafer_bench::peers::emu_device::EmuSpace;
use wafer_bench::peers::{
    self, harness, Durability, EmuDevice, EngineKind, PeerDevice, PeersConfig, Scale, WriteVolume,
};
use wafer_bench::progress::ProgressBar;
use wafer_bench::runner::spec::{parse_duration, Stop};

use super::error::CliError;

/// Flags override the scale's preset.
#[derive(Debug, Args)]
pub struct PeersArgs {
    /// tiny (CI's smoke test), small (dataset 8x the cache, 15 s per phase; on the emulated
    /// SSD A and F until 2x its capacity is written, at most 45 s) or full (1 GB of records,
    /// 8x the cache, 60 s per phase; on the emulated SSD A and F until 2x, at most 5 min).
    #[arg(long, default_value = "tiny")]
    scale: String,
    /// Engines, comma-separated [default: all]: wafer-in-place, wafer-out-of-place,
    /// wafer-oop-lz4, wafer-raw (the raw-device rows, emulated SSD only), rocksdb,
    /// rocksdb-blob, lmdb, wiredtiger, postgres.
    #[arg(long, value_delimiter = ',')]
    engines: Vec<String>,
    /// Devices, comma-separated [default: file]: `file` (a directory on this machine's
    /// filesystem) and `emu:PRESET` (a fresh emulated SSD per engine, served over FUSE, ext4
    /// with discard on a loop device over it; needs root, /dev/fuse and loop devices).
    #[arg(long, value_delimiter = ',')]
    device: Vec<String>,
    /// Emulated SSD overrides of the preset, e.g. --emu-set op=0.28 --emu-set
    /// gc-policy=cost-benefit.
    #[arg(long = "emu-set", value_name = "KEY=VALUE")]
    emu_set: Vec<String>,
    /// Emulated SSD size: `own:SHARE`, per engine, its files at their peak (measured by a
    /// sizing pass on the host first: the load, then three updates of each record) take SHARE of
    /// the filesystem; `dataset:FACTOR`, every engine's
    /// device FACTOR x the records' bytes; `preset`, the preset's geometry (with --emu-set).
    /// Rounded up to whole blocks per chip, at least 128 MiB. A raw Wafer row's device is
    /// sized so its records' pages, estimated as inline pages, take SHARE of its zone space
    /// (Table 1's fill; 0.9 with `preset`); with `dataset:FACTOR` its data and WAL devices
    /// together hold FACTOR x the records' bytes [default: own:0.9].
    #[arg(long, value_name = "own:SHARE|dataset:FACTOR|preset")]
    emu_space: Option<String>,
    /// Emulated SSD: fraction of the filesystem in use once each engine has loaded, made up
    /// by a filler file [default: 0, none: the engine's own files fill the device].
    #[arg(long, value_name = "FRACTION")]
    fill: Option<f64>,
    /// Emulated SSD: the write phases (A, F) end once the device has received this many
    /// times its logical bytes of host writes (its own counter), e.g. 1x [default: small and
    /// full 2x; tiny: by --ops].
    #[arg(long, value_name = "Nx")]
    emu_phase_writes: Option<String>,
    /// Emulated SSD: the longest a write phase may run before its volume is reached, e.g. 45s
    /// [default: small 45s, full 5m].
    #[arg(long, value_name = "DURATION")]
    emu_phase_limit: Option<String>,
    /// How long an engine may go without finishing a phase (the load included) before its
    /// process is killed and the failure reported, e.g. 20m [default: tiny 5m, small 10m,
    /// full 40m].
    #[arg(long)]
    phase_timeout: Option<String>,
    /// Records loaded.
    #[arg(long)]
    records: Option<u64>,
    /// Bytes per value, or several comma-separated (e.g. 100,1000,4000): the whole comparison
    /// runs once per size, and one chart shows flash bytes per operation per engine per size.
    /// An engine that cannot hold a size (Wafer without out-of-line values: above 2048 bytes)
    /// is a named failure at that size [default: 1000].
    #[arg(long, value_name = "BYTES", value_delimiter = ',')]
    value_size: Vec<u32>,
    /// Values of at least this many bytes go to blob files: RocksDB's min_blob_size in the
    /// rocksdb-blob engine, Wafer's in wafer-oop-blobs and in a raw Wafer row given a bare
    /// `blob_threshold` [default: 512].
    #[arg(long, value_name = "BYTES")]
    blob_threshold: Option<u32>,
    /// The Wafer rows on the raw served device (engine wafer-raw), replacing the default
    /// `wafer-raw-nowa` (aligned NoWA, LZ4, packing): NAME[:KEY=VALUE;...] adds engine options,
    /// e.g. --raw-row wafer-raw-nowa --raw-row 'wafer-raw-blobs:blob_threshold' (repeatable).
    #[arg(long, value_name = "NAME[:KEY=VALUE;...]")]
    raw_row: Vec<String>,
    /// Each engine's own cache (buffer pool, block cache, shared_buffers), e.g. 128MiB.
    #[arg(long, value_name = "BYTES")]
    cache: Option<String>,
    /// Worker threads [default: 2].
    #[arg(long)]
    threads: Option<u32>,
    /// sync (every commit synced before it returns) or lazy (logged, synced by the engine
    /// later) [default: lazy].
    #[arg(long)]
    durability: Option<String>,
    /// Measured time of each run phase (A, B, C, F), e.g. 30s.
    #[arg(long, conflicts_with = "ops")]
    duration: Option<String>,
    /// Operations of each run phase.
    #[arg(long)]
    ops: Option<u64>,
    /// Rounds: each runs every engine through every phase, round r starting at engine r.
    #[arg(long)]
    rounds: Option<u32>,
    /// Directory for the engines' files [default: a new one under the temp directory].
    #[arg(long)]
    dir: Option<PathBuf>,
    /// Keep the engines' files.
    #[arg(long)]
    keep: bool,
    /// Run nothing: read the JSON of earlier runs (a report, or several value sizes' reports;
    /// repeatable, e.g. one file per value size) and write their tables and charts, the chart
    /// over value sizes included when they differ.
    #[arg(long, value_name = "FILE")]
    replot: Vec<PathBuf>,
    /// JSON: every row, the configuration and each engine's settings; charts: STEM-ops,
    /// STEM-host-write.
    #[command(flatten)]
    out: super::output::ReportFiles,
}

impl PeersArgs {
    /// The first value size (the run sets each in turn), the blob threshold and the raw rows.
    fn set_values_and_rows(&self, c: &mut PeersConfig) -> Result<(), CliError> {
        if let Some(v) = self.value_size.first() {
            c.value_size_bytes = *v;
        }
        if let Some(t) = self.blob_threshold {
            c.blob_threshold_bytes = t;
        }
        if !self.raw_row.is_empty() {
            c.raw_rows = self
                .raw_row
                .iter()
                .map(|r| peers::raw::RawRow::parse(r))
                .collect::<Result<_, _>>()?;
        }
        Ok(())
    }

    fn config(&self) -> Result<PeersConfig, CliError> {
        let scale = Scale::parse(&self.scale).map_err(CliError)?;
        let dir = self.dir.clone().unwrap_or_else(|| {
            std::env::temp_dir().join(format!("wafer-peers-{}", std::process::id()))
        });
        let mut c = scale.config(dir);
        if !self.engines.is_empty() {
            c.engines = self
                .engines
                .iter()
                .map(|e| EngineKind::parse(e))
                .collect::<Result<_, _>>()
                .map_err(CliError)?;
        }
        if !self.device.is_empty() {
            let space = match &self.emu_space {
                None => EmuSpace::DEFAULT,
                Some(text) => EmuSpace::parse(text)?,
            };
            let fill = self.fill.unwrap_or(0.0);
            c.devices = self
                .device
                .iter()
                .map(|d| match d.trim() {
                    "file" => Ok(PeerDevice::File),
                    spec => EmuDevice::parse(spec, &self.emu_set, space, fill)
                        .map(|d| PeerDevice::Emu(Box::new(d))),
                })
                .collect::<Result<_, _>>()?;
        }
        if let Some(n) = self.records {
            c.record_count = n;
        }
        self.set_values_and_rows(&mut c)?;
        if let Some(cache) = &self.cache {
            c.cache_bytes = wafer_bench::jobs::parse_bytes(cache)?;
        }
        if let Some(t) = self.threads {
            c.threads = t;
        }
        if let Some(d) = &self.durability {
            c.durability = Durability::parse(d).map_err(CliError)?;
        }
        if let Some(d) = &self.duration {
            c.stop = Stop::Duration(parse_duration(d)?);
        }
        if let Some(n) = self.ops {
            c.stop = Stop::Ops(n);
        }
        if self.emu_phase_writes.is_some() || self.emu_phase_limit.is_some() {
            let mut volume = c.emu_write_phases.unwrap_or(WriteVolume {
                capacities: 2.0,
                limit: std::time::Duration::from_secs(45),
            });
            if let Some(w) = &self.emu_phase_writes {
                volume.capacities = wafer_bench::runner::spec::parse_capacities(w)?;
            }
            if let Some(l) = &self.emu_phase_limit {
                volume.limit = parse_duration(l)?;
            }
            c.emu_write_phases = Some(volume);
        }
        if let Some(r) = self.rounds {
            c.rounds = r;
        }
        if let Some(t) = &self.phase_timeout {
            c.phase_timeout = parse_duration(t)?;
        }
        c.keep = self.keep;
        // Each engine in a worker process, each emulated SSD served by a child: this binary.
        c.wafer_exe = Some(
            std::env::current_exe()
                .map_err(|e| CliError(format!("finding the wafer binary to re-run: {e}")))?,
        );
        Ok(c)
    }
}

/// `wafer bench peers-worker`: one engine's job from stdin, its messages on stdout.
pub fn worker() -> Result<(), CliError> {
    let stdin = std::io::stdin().lock();
    let stdout = std::io::stdout().lock();
    // The error was sent to the harness as a message too; the exit status says it failed.
    peers::worker::serve_worker(stdin, stdout)?;
    Ok(())
}

pub fn run(args: &PeersArgs) -> Result<(), CliError> {
    args.out.check()?;
    if !args.replot.is_empty() {
        let runs = read_reports(&args.replot)?;
        return write_outputs(args, &runs, false);
    }
    let base = args.config()?;
    let sizes = if args.value_size.is_empty() {
        vec![base.value_size_bytes]
    } else {
        args.value_size.clone()
    };
    let mut runs = Vec::new();
    for &size in &sizes {
        let mut config = base.clone();
        config.value_size_bytes = size;
        if sizes.len() > 1 {
            // Each size in a directory of its own: the harness wants fresh ones.
            config.dir = base.dir.join(format!("value-{size}"));
        }
        config.validate()?;
        eprintln!("peers: {}", config.describe());
        runs.push((size, run_one(args, &config)?));
    }
    write_outputs(args, &runs, true)
}

/// Reports saved by earlier runs: a report, or a value-size sweep's reports, per file; each
/// with the value size its configuration states.
fn read_reports(paths: &[PathBuf]) -> Result<Vec<(u32, harness::PeersReport)>, CliError> {
    let mut runs = Vec::new();
    for path in paths {
        let text = std::fs::read_to_string(path)
            .map_err(|e| CliError(format!("{}: {e}", path.display())))?;
        let value: serde_json::Value = serde_json::from_str(&text)?;
        let reports = match value.get("runs").and_then(|r| r.as_array()) {
            Some(all) => all.iter().filter_map(|r| r.get("report").cloned()).collect(),
            None => vec![value],
        };
        for r in reports {
            let report: harness::PeersReport = serde_json::from_value(r)?;
            let size = report.config["value_size_bytes"].as_u64().unwrap_or(0);
            runs.push((u32::try_from(size).unwrap_or(u32::MAX), report));
        }
    }
    Ok(runs)
}

/// The tables, JSON (`json`: when the reports were measured now) and charts of `runs`; an
/// error listing every failure, after the outputs are written.
fn write_outputs(
    args: &PeersArgs,
    runs: &[(u32, harness::PeersReport)],
    json: bool,
) -> Result<(), CliError> {
    let several = runs.len() > 1;
    let mut table = String::new();
    for (size, report) in runs {
        if several {
            table.push_str(&format!("\n### {size}-byte values\n\n"));
        }
        table.push_str(&peers::table::markdown(report));
    }
    print!("{table}");
    if let Some(path) = args.out.json.as_ref().filter(|_| json) {
        let text = if several {
            let all: Vec<_> = runs
                .iter()
                .map(|(s, r)| serde_json::json!({"value_size_bytes": s, "report": r}))
                .collect();
            serde_json::to_string_pretty(&serde_json::json!({
                "schema": "wafer-bench/peers-value-sizes",
                "version": 1,
                "runs": all,
            }))?
        } else {
            serde_json::to_string_pretty(&runs[0].1)?
        };
        super::output::write_file(path, text.as_bytes())?;
    }
    if let Some(path) = &args.out.markdown {
        super::output::write_file(path, table.as_bytes())?;
    }
    if let Some(stem) = &args.out.plots {
        write_charts(runs, stem)?;
    }
    let failures: Vec<String> = runs
        .iter()
        .flat_map(|(size, r)| r.failures.iter().map(move |f| format!("{size} B values: {f}")))
        .collect();
    if !failures.is_empty() {
        return Err(CliError(format!(
            "{} engine(s) failed part way or could not run (their rows so far are in the \
             outputs):\n  {}",
            failures.len(),
            failures.join("\n  ")
        )));
    }
    Ok(())
}

/// One value size's comparison, each row printed as it is measured.
fn run_one(args: &PeersArgs, config: &PeersConfig) -> Result<harness::PeersReport, CliError> {
    let mut live = ProgressBar::without_totals(!args.out.quiet);
    let report = harness::run(config, &mut live, &mut |row| {
        eprintln!(
            "  {:<20} {:<8} {:<7} {:<8} {:>9.0} ops/s  host write {:>8.0} B/op  read {:>8.0} B/op{}",
            row.engine,
            row.device,
            row.phase,
            row.distribution,
            row.ops_per_sec,
            row.host_write_bytes_per_op,
            row.host_read_bytes_per_op,
            match (row.flash_bytes_per_op, row.total_waf) {
                (Some(f), Some(w)) => format!("  flash {f:>8.0} B/op  total WAF {w:.2}"),
                (Some(f), None) => format!("  flash {f:>8.0} B/op"),
                _ => String::new(),
            }
        )
    })?;
    Ok(report)
}

/// Each size's charts (with `-vSIZE` in their names when there are several) and, over
/// several sizes, flash bytes per operation per engine per size (A zipf, A uniform).
fn write_charts(
    runs: &[(u32, harness::PeersReport)],
    stem: &std::path::Path,
) -> Result<(), CliError> {
    let several = runs.len() > 1;
    for (size, report) in runs {
        let stem = if several {
            let mut name = stem.with_extension("").into_os_string();
            name.push(format!("-v{size}"));
            let mut p = PathBuf::from(name);
            if let Some(ext) = stem.extension() {
                p.set_extension(ext);
            }
            p
        } else {
            stem.to_path_buf()
        };
        for p in peers::table::write_charts(report, &stem)? {
            eprintln!("wrote {}", p.display());
        }
    }
    if several {
        for dist in ["zipf", "uniform"] {
            if let Some(c) = peers::table::value_size_chart(runs, "ycsb-a", dist) {
                for p in
                    peers::table::write_png_and_svg(&c, stem, &format!("value-sizes-a-{dist}"))?
                {
                    eprintln!("wrote {}", p.display());
                }
            }
        }
    }
    Ok(())
}

/// `wafer bench speed`: the speed comparison (load random and sorted, YCSB-A on a file,
/// in-memory lookups) of Wafer in place and out of place beside RocksDB and LMDB.
#[derive(Debug, Args)]
pub struct SpeedArgs {
    /// tiny (seconds, a smoke test) or issue (the full size: 250k 1000-byte records, 6x the
    /// cache, 20 s phases; in memory 500k records of 16-byte keys and 100-byte values).
    #[arg(long, default_value = "issue")]
    scale: String,
    /// Rounds, interleaved: round r starts every suite at engine r.
    #[arg(long, default_value_t = 3)]
    rounds: u32,
    /// Engines, comma-separated [default: wafer-in-place, wafer-out-of-place, wafer-oop-blobs,
    /// rocksdb, lmdb].
    #[arg(long, value_delimiter = ',')]
    engines: Vec<String>,
    /// Suites, comma-separated [default: random, sorted, memory].
    #[arg(long, value_delimiter = ',')]
    suites: Vec<String>,
    /// Measured time of each run phase, e.g. 20s.
    #[arg(long)]
    duration: Option<String>,
    /// Records per atomic batch while loading, for every engine (a WriteBatch or one
    /// transaction); 1 is single inserts.
    #[arg(long, value_name = "N", default_value_t = 1)]
    load_batch: u32,
    /// Directory for the engines' files [default: a new one under the temp directory].
    #[arg(long)]
    dir: Option<PathBuf>,
    /// JSON: every row; markdown: the ratio table.
    #[command(flatten)]
    out: super::output::ReportFiles,
}

pub fn speed(args: &SpeedArgs) -> Result<(), CliError> {
    use wafer_bench::peers::speed;
    args.out.check()?;
    let scale = speed::SpeedScale::parse(&args.scale).map_err(CliError)?;
    let dir = args.dir.clone().unwrap_or_else(|| {
        std::env::temp_dir().join(format!("wafer-speed-{}", std::process::id()))
    });
    let engines: Vec<EngineKind> = if args.engines.is_empty() {
        speed::ENGINES.to_vec()
    } else {
        args.engines
            .iter()
            .map(|e| EngineKind::parse(e))
            .collect::<Result<_, _>>()
            .map_err(CliError)?
    };
    let mut suites = speed::suites(scale, dir, &engines);
    if !args.suites.is_empty() {
        if let Some(bad) = args.suites.iter().find(|s| !suites.iter().any(|x| x.name == s.as_str()))
        {
            return Err(CliError(format!("unknown suite `{bad}` (known: random, sorted, memory)")));
        }
        suites.retain(|s| args.suites.iter().any(|x| x == s.name));
    }
    if let Some(d) = &args.duration {
        let stop = Stop::Duration(parse_duration(d)?);
        suites.iter_mut().for_each(|s| s.config.stop = stop);
    }
    // Each engine in a worker process, as `bench peers` runs them: this binary.
    let exe = std::env::current_exe()
        .map_err(|e| CliError(format!("finding the wafer binary to re-run: {e}")))?;
    suites.iter_mut().for_each(|s| {
        s.config.wafer_exe = Some(exe.clone());
        s.config.load_batch = args.load_batch;
    });
    for s in &suites {
        s.config.validate()?;
        eprintln!("speed {}: {}", s.name, s.config.describe());
    }
    let mut live = ProgressBar::without_totals(!args.out.quiet);
    let rows = speed::run(&suites, args.rounds, &mut live, &mut |row| {
        eprintln!(
            "  r{} {:<20} {:<16} {:>9.0} ops/s  host write {:>8.0} B/op",
            row.round, row.engine, row.phase, row.ops_per_sec, row.host_write_bytes_per_op
        )
    })?;
    let table = speed::markdown(&rows);
    print!("{table}");
    if let Some(path) = &args.out.json {
        super::output::write_file(path, serde_json::to_string_pretty(&rows)?.as_bytes())?;
    }
    if let Some(path) = &args.out.markdown {
        super::output::write_file(path, table.as_bytes())?;
    }
    Ok(())
}
