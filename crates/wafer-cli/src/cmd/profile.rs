//! `wafer profile`: 001 sec. 3.3's file benchmark on a file or block device, the MQSSD fits per
//! k and across k, a TOML device profile, JSON, and Figures 1, 3 and 4. With `--from` it reads a
//! profile instead of measuring, and `--compare` costs `wafer bench ycsb` reports with it.
use std::path::{Path, PathBuf};

use clap::Args;
use wafer_bench::metrics::RunReport;
use wafer_bench::mqssd::bench::{self, BenchOptions};
use wafer_bench::mqssd::cost::compare_run;
use wafer_bench::mqssd::emu_bench::{self, EmuBenchOptions};
use wafer_bench::mqssd::{plots, DeviceProfile, Op, PredictionError, SyncCost, SyncPoint};
use wafer_bench::progress::ProgressBar;

use super::error::CliError;

#[derive(Debug, Args)]
pub struct ProfileArgs {
    /// file:PATH or a block device path (/dev/...). Refused if it holds data, unless --force.
    /// Or emu:PRESET / emu:FILE.toml with its timing on (`--emu timing=chips`): the points and
    /// syncs are then timed in the emulator's device time, the threads being its queue depth.
    #[arg(long)]
    device: Option<String>,
    /// Emulator setting for an emu: device (`flashemu::Config::set` keys), e.g. timing=chips.
    #[arg(long = "emu", value_name = "KEY=VALUE")]
    emu: Vec<String>,
    /// Pages each point moves on an emu: device [default: 65536; quick 8192].
    #[arg(long, value_name = "PAGES")]
    pages_per_point: Option<u64>,
    /// Read this profile (TOML) instead of measuring.
    #[arg(long, value_name = "FILE.toml")]
    from: Option<PathBuf>,
    /// With --from and --device: measure only the fdatasync latencies on the device and add
    /// them to the profile read (a profile measured before the sync term existed).
    #[arg(long, requires_all = ["from", "device"])]
    add_sync: bool,
    /// With --from: fit the profile's measured points again (after a change to the fitting).
    #[arg(long, requires = "from")]
    refit: bool,
    /// N: the file size shared out between the threads, e.g. 1GiB [default: 1GiB; quick 256MiB].
    #[arg(long, value_name = "BYTES")]
    size: Option<String>,
    /// Largest thread count; k runs 1, 2, 4, ... up to it [default: 16; quick 4].
    #[arg(long)]
    k_max: Option<u32>,
    /// Random fractions r, comma-separated [default: 0.001,0.01,0.1,0.5,1; quick 0.01,0.1,1].
    #[arg(long, value_delimiter = ',')]
    r: Option<Vec<f64>>,
    /// Seconds of each (op, k, r) point [default: 1; quick 0.4].
    #[arg(long)]
    seconds: Option<f64>,
    /// Small and short: finishes within a minute.
    #[arg(long)]
    quick: bool,
    /// Overwrite an existing non-empty file or a block device.
    #[arg(long)]
    force: bool,
    /// Without O_DIRECT (for filesystems that refuse it; measures the page cache too).
    #[arg(long)]
    buffered: bool,
    /// Keep the benchmark file (by default a file the run created is removed at the end).
    #[arg(long)]
    keep: bool,
    /// Write the device profile (TOML).
    #[arg(long, value_name = "FILE.toml")]
    out: Option<PathBuf>,
    /// Write fits, cost functions, points and prediction errors as JSON.
    #[arg(long, value_name = "FILE")]
    json: Option<PathBuf>,
    /// Write Figures 1, 3 and 4 as STEM-fig1-write.png, ... (.svg stem for SVG).
    #[arg(long, value_name = "STEM")]
    plots: Option<PathBuf>,
    /// `wafer bench ycsb --json` reports to cost with the profile.
    #[arg(long, value_name = "REPORT.json")]
    compare: Vec<PathBuf>,
    #[arg(long, short)]
    quiet: bool,
}

pub fn run(args: ProfileArgs) -> Result<(), CliError> {
    for path in [&args.out, &args.json, &args.plots] {
        super::output::check_output_path(path.as_deref())?;
    }
    let profile = obtain(&args)?;
    print_table(&profile);
    if let Some(path) = &args.out {
        super::output::write_file(path, profile.to_toml()?.as_bytes())?;
    }
    if let Some(path) = &args.json {
        let json = serde_json::json!({
            "info": profile.info,
            "fits": profile.fits,
            "functions": profile.functions,
            "points": profile.points,
            "sync": profile.sync,
            "prediction_errors": profile.prediction_errors(),
        });
        super::output::write_file(path, serde_json::to_string_pretty(&json)?.as_bytes())?;
    }
    if let Some(stem) = &args.plots {
        let extension = if wafer_bench::plot::is_svg_path(stem) { "svg" } else { "png" };
        let stem = stem.with_extension("");
        for path in plots::write_figures(&profile, &stem, extension)? {
            println!("wrote {}", path.display());
        }
    }
    compare(&profile, &args.compare)
}

/// The profile: read (`--from`, refitted or with syncs added as asked) or measured.
fn obtain(args: &ProfileArgs) -> Result<DeviceProfile, CliError> {
    let profile = match (&args.from, &args.device) {
        (Some(path), device) => {
            let text = std::fs::read_to_string(path)
                .map_err(|e| CliError(format!("{}: {e}", path.display())))?;
            let stored = DeviceProfile::from_toml(&text)?;
            let mut profile = if args.refit {
                let sync = stored.sync.clone();
                DeviceProfile { sync, ..DeviceProfile::fit(stored.info, stored.points)? }
            } else {
                stored
            };
            match device {
                Some(device) if args.add_sync => {
                    profile.sync = Some(SyncCost::fit(measure_syncs(args, device)?)?);
                }
                Some(_) => return Err(CliError("--from with --device needs --add-sync".into())),
                None => {}
            }
            profile
        }
        (None, Some(device)) if device.starts_with("emu:") => measure_emu(args, device)?,
        (None, Some(device)) => measure(args, device)?,
        (None, None) => {
            return Err(CliError("give --device file:PATH or --from PROFILE.toml".into()))
        }
    };
    Ok(profile)
}

fn options_of(args: &ProfileArgs, path: PathBuf) -> Result<BenchOptions, CliError> {
    let mut options =
        if args.quick { BenchOptions::quick(path) } else { BenchOptions::standard(path) };
    if let Some(size) = &args.size {
        options.file_bytes = wafer_bench::jobs::parse_bytes(size)?;
    }
    if let Some(k_max) = args.k_max {
        if k_max == 0 || k_max > bench::THREADS_MAX {
            return Err(CliError(format!("--k-max must be in 1..={}", bench::THREADS_MAX)));
        }
        // 1, 2, 4, ... and k_max itself when it is not a power of two.
        let mut ks: Vec<u32> = (0..32).map(|i| 1u32 << i).take_while(|&k| k <= k_max).collect();
        if ks.last() != Some(&k_max) {
            ks.push(k_max);
        }
        options.ks = ks;
    }
    if let Some(rs) = &args.r {
        options.rs = rs.clone();
    }
    if let Some(seconds) = args.seconds {
        options.seconds_per_point = seconds;
    }
    options.direct = !args.buffered;
    options.force = args.force;
    options.validate()?;
    Ok(options)
}

fn device_path(device: &str) -> Result<PathBuf, CliError> {
    match device.strip_prefix("file:") {
        Some(path) => Ok(PathBuf::from(path)),
        None if device.starts_with("/dev/") => Ok(PathBuf::from(device)),
        None => Err(CliError(format!("--device {device}: expected file:PATH or /dev/..."))),
    }
}

/// Only the timed syncs, on a filled file of the run's size (removed after, as `measure`'s).
fn measure_syncs(args: &ProfileArgs, device: &str) -> Result<Vec<SyncPoint>, CliError> {
    let path = device_path(device)?;
    let options = options_of(args, path.clone())?;
    bench::check_target(&path, options.force)?;
    let created = !path.exists();
    eprintln!("timing fdatasync on {} after runs of {:?} pages", path.display(), bench::SYNC_PAGES);
    let mut progress = ProgressBar::without_totals(!args.quiet);
    let measured = bench::run_syncs(&options, &mut progress);
    if created && !args.keep {
        let _ = std::fs::remove_file(&path);
    }
    Ok(measured?)
}

/// The emulator `device` names (`emu:PRESET` or `emu:FILE.toml`) with the `--emu` settings.
fn emu_config(args: &ProfileArgs, device: &str) -> Result<flashemu::Config, CliError> {
    let source = device.strip_prefix("emu:").unwrap_or(device);
    let mut config = if source.ends_with(".toml") {
        let text =
            std::fs::read_to_string(source).map_err(|e| CliError(format!("{source}: {e}")))?;
        flashemu::Config::from_toml(&text).map_err(|e| CliError(format!("{source}: {e}")))?
    } else {
        flashemu::Config::preset(source).map_err(|e| CliError(format!("{device}: {e}")))?
    };
    for setting in &args.emu {
        let (key, value) = setting
            .split_once('=')
            .ok_or_else(|| CliError(format!("--emu {setting}: expected KEY=VALUE")))?;
        config
            .set(key.trim(), value.trim())
            .map_err(|e| CliError(format!("--emu {setting}: {e}")))?;
    }
    Ok(config)
}

/// The benchmark on the emulator in device time (`mqssd::emu_bench`), the file's k and r.
fn measure_emu(args: &ProfileArgs, device: &str) -> Result<DeviceProfile, CliError> {
    let config = emu_config(args, device)?;
    let file = options_of(args, PathBuf::from(device))?;
    let pages_default = if args.quick { 8192 } else { 65_536 };
    let mut name = device.to_string();
    for setting in &args.emu {
        name.push(' ');
        name.push_str(setting);
    }
    let options = EmuBenchOptions {
        config,
        name,
        region_bytes: file.file_bytes,
        ks: file.ks,
        rs: file.rs,
        pages_per_point: args.pages_per_point.unwrap_or(pages_default),
        seed: file.seed,
    };
    eprintln!(
        "profiling {device} in device time: {} bytes, k {:?}, r {:?}, {} pages a point",
        options.region_bytes, options.ks, options.rs, options.pages_per_point
    );
    let mut progress = ProgressBar::without_totals(!args.quiet);
    let (points, syncs) = emu_bench::run(&options, &mut progress)?;
    let profile = DeviceProfile::fit(options.info(), points)?;
    Ok(DeviceProfile { sync: Some(SyncCost::fit(syncs)?), ..profile })
}

fn measure(args: &ProfileArgs, device: &str) -> Result<DeviceProfile, CliError> {
    let path = device_path(device)?;
    let options = options_of(args, path.clone())?;
    // Refuse before announcing a run (bench::run checks again, for library callers).
    bench::check_target(&path, options.force)?;
    let created = !path.exists();
    let plan = options.plan().len();
    eprintln!(
        "profiling {}: {} bytes, k {:?}, r {:?}, {plan} points of {} s",
        path.display(),
        options.file_bytes,
        options.ks,
        options.rs,
        options.seconds_per_point
    );
    let mut progress = ProgressBar::without_totals(!args.quiet);
    let measured = bench::run(&options, &mut progress);
    if created && !args.keep {
        // Only a file this run created: anything else was the user's (and --force said so).
        let _ = std::fs::remove_file(&path);
    }
    let measured = measured?;
    let profile = DeviceProfile::fit(options.info(), measured.points)?;
    Ok(DeviceProfile { sync: Some(SyncCost::fit(measured.syncs)?), ..profile })
}

fn print_table(profile: &DeviceProfile) {
    println!(
        "MQSSD costs per k (us; s, t per random access, beta, alpha per {} B page)",
        profile.info.page_bytes
    );
    println!(
        "{:>5} {:>10} {:>9} {:>7} {:>10} {:>9} {:>7}",
        "k", "s", "beta", "R2", "t", "alpha", "R2"
    );
    for f in &profile.fits {
        println!(
            "{:>5} {:>10.3} {:>9.4} {:>7.3} {:>10.3} {:>9.4} {:>7.3}",
            f.k, f.s, f.beta, f.r2_write, f.t, f.alpha, f.r2_read
        );
    }
    match &profile.sync {
        Some(sync) => println!(
            "fdatasync after a run of n pages: {:.0} us + {:.3} us x n (means: {})",
            sync.fixed_us,
            sync.per_page_us,
            sync.points
                .iter()
                .map(|p| format!("{} -> {:.0}", p.pages, p.us))
                .collect::<Vec<_>>()
                .join(", ")
        ),
        None => println!("fdatasync: not measured (priced at nothing)"),
    }
    let errors = profile.prediction_errors();
    for op in [Op::Write, Op::Read] {
        let mine: Vec<_> = errors.iter().filter(|e| e.op == op).collect();
        if mine.is_empty() {
            continue;
        }
        let stats = |get: fn(&&PredictionError) -> f64| {
            let e: Vec<f64> = mine.iter().map(get).map(f64::abs).collect();
            let mean = e.iter().sum::<f64>() / e.len() as f64;
            (mean, e.iter().copied().fold(0.0, f64::max), e.len())
        };
        let (mean, max, count) = stats(|e| e.relative_error);
        let (mean_k, max_k, _) = stats(|e| e.per_k_relative_error);
        println!(
            "eq. {} ({op:?}) vs measured, {count} points: with eq. 5-6 mean |error| {:.1}% \
             (max {:.1}%); with each k's own fit mean {:.1}% (max {:.1}%)",
            if op == Op::Write { 7 } else { 8 },
            mean * 100.0,
            max * 100.0,
            mean_k * 100.0,
            max_k * 100.0,
        );
    }
}

fn compare(profile: &DeviceProfile, reports: &[PathBuf]) -> Result<(), CliError> {
    for path in reports {
        let report = load_report(path)?;
        let Some(c) = compare_run(profile, &report) else {
            println!("{}: no operations to compare", path.display());
            continue;
        };
        println!(
            "{}: {} k={} read {:.3} + write {:.3} pages/op: measured {:.0} ops/s, MQSSD {:.0} \
             ops/s ({:+.1}%); at k=1 {:.0} ops/s",
            c.label,
            c.write_mode,
            c.k,
            c.read_pages_per_op,
            c.write_pages_per_op,
            c.measured_ops_per_s,
            c.predicted_ops_per_s,
            c.relative_error * 100.0,
            c.predicted_k1_ops_per_s,
        );
    }
    Ok(())
}

fn load_report(path: &Path) -> Result<RunReport, CliError> {
    let text =
        std::fs::read_to_string(path).map_err(|e| CliError(format!("{}: {e}", path.display())))?;
    RunReport::from_json(&text).map_err(|e| CliError(format!("{}: {e}", path.display())))
}
