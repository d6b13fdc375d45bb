//! `wafer emu`: run fio-like jobs or replay a block trace on the flash emulator, list and show
//! device presets.
use std::fs::File;
use std::io::BufReader;
use std::path::{Path, PathBuf};

use clap::{Args, Subcommand};
use flashemu::{Config, Ssd};
use wafer_bench::emu_report::{table, RunReport};
use wafer_bench::jobs::replay::{self, ReplayOptions};
use wafer_bench::jobs::{self, device, JobFile, JobSpec, RunSpec, Until, Workload};
use wafer_bench::plot;
use wafer_bench::progress::ProgressBar;
use wafer_bench::trace::{TraceFormat, TraceReader};

use super::emu_device::DeviceArgs;
use super::error::CliError;

#[derive(Debug, Args)]
pub struct EmuArgs {
    #[command(subcommand)]
    command: EmuCommand,
}

#[derive(Debug, Subcommand)]
enum EmuCommand {
    /// Run fio-like jobs: fill, then writes/reads/trims until a stop condition; report WAF.
    Run(RunArgs),
    /// Replay a block trace (fio iolog v2/v3, MQSim/DiskSim ASCII) and report WAF.
    Replay(ReplayArgs),
    /// List the device presets.
    Presets,
    /// Print a device configuration (preset or file plus overrides) as TOML.
    Show(DeviceArgs),
    /// Serve the emulated SSD as one file over FUSE (DIR/ssd, counters in DIR/stats) until
    /// SIGINT/SIGTERM: put a loop device and a filesystem on it, or open it directly.
    Serve(super::emu_serve::ServeArgs),
    /// Print the counters of a device `wafer emu serve` is serving.
    Stats(super::emu_serve::StatsArgs),
}

#[derive(Debug, Args)]
struct OutputArgs {
    /// Write the full result (device, counters, samples, steady-state WAF) as JSON.
    #[arg(long, value_name = "FILE")]
    json: Option<PathBuf>,
    /// Plot WAF over written capacity (.png, or .svg for SVG).
    #[arg(long, value_name = "FILE.png")]
    plot: Option<PathBuf>,
    /// Sample period in host bytes [default: 1/64 of the logical capacity].
    #[arg(long, value_name = "BYTES")]
    sample_every: Option<String>,
    /// No progress bar.
    #[arg(long, short)]
    quiet: bool,
}

impl OutputArgs {
    /// Fails before a long simulation rather than after it if an output cannot be written.
    fn check_paths(&self) -> Result<(), CliError> {
        for path in [&self.json, &self.plot].into_iter().flatten() {
            let parent = path.parent().filter(|p| !p.as_os_str().is_empty());
            if let Some(dir) = parent {
                if !dir.is_dir() {
                    return Err(CliError(format!("{}: directory does not exist", path.display())));
                }
            }
        }
        Ok(())
    }

    fn sample_every(&self) -> Result<Option<u64>, jobs::JobError> {
        self.sample_every.as_deref().map(jobs::parse_bytes).transpose()
    }

    fn emit(&self, report: &RunReport) -> Result<(), CliError> {
        print!("{}", table::render(report));
        if let Some(path) = &self.json {
            write_file(path, report.to_json().as_bytes())?;
        }
        if let Some(path) = &self.plot {
            let chart = plot::Chart::Line(report.waf_chart());
            write_file(path, &plot::render_for_path(&chart, path, (900, 540))?)?;
        }
        Ok(())
    }
}

/// One line of device-time results when the device was timed.
fn print_timing(ssd: &Ssd) {
    let Some(t) = ssd.timing_report() else { return };
    let us = |ns: u64| ns as f64 / 1000.0;
    println!(
        "device time ({:?}, queue depth {}): {:.3} s, {:.1} MB/s; write latency p50 {:.0} us \
         p99 {:.0} us p99.9 {:.0} us; read p50 {:.0} us p99 {:.0} us; GC {:.1}% of chip time",
        t.mode,
        t.queue_depth,
        t.device_ns as f64 / 1e9,
        t.bytes_per_s / 1e6,
        us(t.write_latency.p50_ns),
        us(t.write_latency.p99_ns),
        us(t.write_latency.p999_ns),
        us(t.read_latency.p50_ns),
        us(t.read_latency.p99_ns),
        100.0 * t.gc_busy_ns as f64 / t.chip_busy_ns.max(1) as f64,
    );
}

/// Prefixes an error with the flag it came from: `--until: ...`.
fn flag(name: &'static str) -> impl Fn(jobs::JobError) -> CliError {
    move |e| CliError(format!("--{name}: {e}"))
}

fn write_file(path: &Path, bytes: &[u8]) -> Result<(), CliError> {
    std::fs::write(path, bytes).map_err(|e| CliError(format!("{}: {e}", path.display())))
}

#[derive(Debug, Args)]
struct RunArgs {
    #[command(flatten)]
    device: DeviceArgs,
    /// Precondition: write this fraction of the device sequentially first (0.9 = 90% full)
    /// [default: 0].
    #[arg(long, value_name = "FRACTION")]
    fill: Option<f64>,
    /// write, randwrite, read, randread, trim, randtrim, rw[:READ%], randrw[:READ%].
    #[arg(long, default_value = "randwrite")]
    workload: String,
    /// Address distribution: uniform, zipf:THETA, scrambled:THETA, hotcold:X:Y (X% of I/Os to
    /// Y% of the region).
    #[arg(long, default_value = "uniform")]
    dist: String,
    /// I/O size (multiple of 4k).
    #[arg(long, default_value = "4k")]
    bs: String,
    /// Read percentage of rw / randrw.
    #[arg(long, value_name = "PERCENT")]
    rwmixread: Option<u8>,
    /// Stop after this many host bytes issued after the fill: bytes (16GiB) or capacities (4x)
    /// [default: 4x].
    #[arg(long)]
    until: Option<String>,
    /// Number of identical jobs, each on its own slice of the region and its own stream.
    #[arg(long, default_value_t = 1)]
    jobs: usize,
    /// Job file (TOML, [[job]] tables); replaces --workload/--dist/--bs/--jobs.
    #[arg(
        long,
        value_name = "FILE.toml",
        conflicts_with_all = ["workload", "dist", "bs", "rwmixread", "jobs"]
    )]
    job_file: Option<PathBuf>,
    /// Seed of every random choice of the jobs [default: 1].
    #[arg(long)]
    seed: Option<u64>,
    #[command(flatten)]
    output: OutputArgs,
}

impl RunArgs {
    fn spec(&self) -> Result<RunSpec, CliError> {
        let file = self.job_file.as_deref().map(JobFile::load).transpose()?;
        let jobs = match &file {
            Some(file) => file.jobs.clone(),
            None => {
                if self.jobs == 0 || self.jobs > wafer_bench::jobs::spec::JOBS_MAX {
                    return Err(CliError(format!(
                        "--jobs {} must be between 1 and {}",
                        self.jobs,
                        wafer_bench::jobs::spec::JOBS_MAX
                    )));
                }
                let workload =
                    Workload::parse(&self.workload, self.rwmixread).map_err(flag("workload"))?;
                let dist = jobs::parse_distribution(&self.dist).map_err(flag("dist"))?;
                let bs_bytes = jobs::parse_block_size(&self.bs).map_err(flag("bs"))?;
                (0..self.jobs)
                    .map(|i| JobSpec {
                        bs_bytes,
                        ..JobSpec::new(format!("job{i}"), workload, dist)
                    })
                    .collect()
            }
        };
        let until = match (&self.until, file.as_ref().and_then(|f| f.until)) {
            (Some(text), _) => Until::parse(text).map_err(flag("until"))?,
            (None, Some(until)) => until,
            (None, None) => Until::Capacities(4.0),
        };
        let fill_fraction =
            self.fill.or(file.as_ref().and_then(|f| f.fill_fraction)).unwrap_or(0.0);
        let seed = self.seed.or(file.as_ref().and_then(|f| f.seed)).unwrap_or(1);
        let spec = RunSpec {
            fill_fraction,
            jobs,
            until,
            seed,
            sample_every_bytes: self.output.sample_every().map_err(flag("sample-every"))?,
        };
        spec.validate()?;
        Ok(spec)
    }
}

#[derive(Debug, Args)]
struct ReplayArgs {
    /// The trace file.
    trace: PathBuf,
    #[command(flatten)]
    device: DeviceArgs,
    /// auto (from the first line), fio2, fio3, mqsim (also DiskSim ASCII).
    #[arg(long, default_value = "auto")]
    format: String,
    /// Precondition: write this fraction of the device sequentially before the trace.
    #[arg(long, default_value_t = 0.0, value_name = "FRACTION")]
    fill: f64,
    /// Refuse requests beyond the device instead of folding them modulo its capacity.
    #[arg(long)]
    strict: bool,
    #[command(flatten)]
    output: OutputArgs,
}

pub fn run(args: EmuArgs) -> Result<(), CliError> {
    match args.command {
        EmuCommand::Run(args) => run_jobs(&args),
        EmuCommand::Replay(args) => replay(&args),
        EmuCommand::Presets => presets(),
        EmuCommand::Show(device) => {
            print!("{}", device::to_toml(&device.config()?)?);
            Ok(())
        }
        EmuCommand::Serve(args) => super::emu_serve::serve_cmd(&args),
        EmuCommand::Stats(args) => super::emu_serve::stats_cmd(&args),
    }
}

fn build_ssd(device: &DeviceArgs) -> Result<Ssd, CliError> {
    Ok(Ssd::new(device::for_simulation(device.config()?))?)
}

fn run_jobs(args: &RunArgs) -> Result<(), CliError> {
    let spec = args.spec()?;
    args.output.check_paths()?;
    let mut ssd = build_ssd(&args.device)?;
    let mut progress = ProgressBar::new(!args.output.quiet);
    let report = jobs::run(&mut ssd, &spec, &mut progress)?;
    args.output.emit(&report)?;
    print_timing(&ssd);
    Ok(())
}

fn replay(args: &ReplayArgs) -> Result<(), CliError> {
    let format = TraceFormat::parse(&args.format)?;
    args.output.check_paths()?;
    let sample_every_bytes = args.output.sample_every().map_err(flag("sample-every"))?;
    let mut ssd = build_ssd(&args.device)?;
    let open_error = |e: std::io::Error| CliError(format!("{}: {e}", args.trace.display()));
    let file = File::open(&args.trace).map_err(open_error)?;
    let input_bytes = file.metadata().map(|m| m.len()).unwrap_or(0);
    let mut reader = TraceReader::new(BufReader::new(file), format);
    let options = ReplayOptions {
        fill_fraction: args.fill,
        sample_every_bytes,
        input_bytes,
        strict: args.strict,
    };
    let mut progress = ProgressBar::new(!args.output.quiet);
    let report = replay::replay(&mut ssd, &mut reader, &options, &mut progress)
        .map_err(|e| CliError(format!("{}: {e}", args.trace.display())))?;
    args.output.emit(&report)?;
    if let Some(f) = report.trace {
        // On stderr with the timing, so stdout stays the table.
        eprintln!(
            "trace footprint: {} requests, highest address {} of a {} device ({:.2}x); {} \
             requests beyond the device folded modulo its capacity{}",
            f.requests,
            table::human_bytes(f.end_bytes),
            table::human_bytes(f.device_bytes),
            f.span_ratio(),
            f.folded_requests,
            if f.folded_requests > 0 { " (--strict refuses them)" } else { "" }
        );
    }
    print_timing(&ssd);
    Ok(())
}

fn presets() -> Result<(), CliError> {
    println!(
        "{:<6}  {:>12}  {:>12}  {:>6}  {:<12}  interface",
        "preset", "logical", "physical", "OP", "GC"
    );
    for name in flashemu::PRESET_NAMES {
        let ssd = Ssd::new(device::for_simulation(Config::preset(name)?))?;
        let summary = wafer_bench::emu_report::DeviceSummary::of(&ssd);
        println!(
            "{name:<6}  {:>12}  {:>12}  {:>5.1}%  {:<12}  {}",
            table::human_bytes(summary.logical_bytes),
            table::human_bytes(summary.physical_bytes),
            summary.op * 100.0,
            summary.gc_policy,
            summary.interface
        );
    }
    Ok(())
}
