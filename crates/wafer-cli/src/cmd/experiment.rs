//! `wafer experiment table1`: the first rows of Table 1 of 000 on one emulated 90%-full SSD.
use std::path::{Path, PathBuf};

use clap::{Args, Subcommand};
use wafer_bench::experiment::{
    cczns, fig13, fig14, fig15, fig16, infer_gc_unit, plan, table1, Scale,
};
use wafer_bench::metrics::RunReport;
use wafer_bench::progress::ProgressBar;
use wafer_bench::report::{Document, PaperTable};
use wafer_bench::runner::table;

use super::error::CliError;

#[derive(Debug, Args)]
pub struct ExperimentArgs {
    #[command(subcommand)]
    command: ExperimentCommand,
}

#[derive(Debug, Subcommand)]
enum ExperimentCommand {
    /// YCSB-A zipf 0.8, dataset at 90% of the emulated SSD, buffer 10% of the dataset: one row
    /// per write mode / optimization this build has; the others are listed as not implemented.
    Table1(Table1Args),
    /// 000 Table 2: a conventional SSD (OP 6%) against a ZNS SSD of the same flash, YCSB-A
    /// zipf 0.8: Table 1's dataset, a 1.875x larger one on both, and ZNS at the CNS's relative
    /// fill (DB, SSD and total WAF; 000 reports throughput). --json-dir:
    /// DIR/table2-<row number>.json; --plot FILE: DB, SSD and total WAF per configuration.
    Table2(FigureArgs),
    /// NoWA's two modes in Table 1's geometry: the "+ NoWA" and "+ aligning GC unit" rows with
    /// `nowa_mode=unit` (whole estimated SSD units compensated in cycles of their own) and
    /// `nowa_mode=group` (000's artifact: zones opened together balanced when GC runs anyway),
    /// and "+ GDT" as the reference. --json-dir: DIR/nowa-modes-<run number>.json; --markdown:
    /// the table beside 000's figures; --plot FILE: DB WAF against SSD WAF per run.
    NowaModes(FigureArgs),
    /// 000 Table 3: on an emulated FDP SSD, in place against out of place with every
    /// optimization, keeping SSD WAF at 1 with NoWA or with FDP placement hints (with and
    /// without compression). --json-dir: DIR/table3-<row number>.json; --plot FILE: DB, SSD
    /// and total WAF per configuration.
    Table3(FigureArgs),
    /// 004 (PLAN): the FIO mix (4 jobs, 50/50 read/write, uniform 4 KiB random, files
    /// 1:10:30:64, 90% full) for plain, partial GC, multi-stream, AutoStream and PLAN-NoPred /
    /// PLAN-Pred at 1/4 and 1/8, and Figure 1 (WAF and throughput vs superblock width).
    /// --json: `schemes` with `name` and `waf`; --plots STEM: STEM-fig1-waf, -fig1-throughput,
    /// -fig3-waf.
    Plan(PlanArgs),
    /// 002 (CCZNS): none / host LZ4 / host ZSTD / device compression (CW/DR) on YCSB load and
    /// A with Table III's Amazon- and Reddit-like value sizes: flash write volume (Figure 8),
    /// host CPU seconds, throughput with the timing model. Runs the engine out of place on the
    /// emulated ZNS SSD, its `compression` option none / lz4 / zstd / device (CW/DR).
    /// --json: `schemes` with `name`, `flash_write_bytes`, `host_cpu_seconds`; --plots STEM:
    /// STEM-write-volume, -host-cpu, -throughput.
    Cczns(CcznsArgs),
    /// 000 Figure 16: TPC-C flash writes per transaction per configuration (Table 1's rows;
    /// those not implemented are listed as such), consistency-checked after each run.
    Fig16(FigureArgs),
    /// 000 Figure 15: total WAF of YCSB-A against dataset size (20% to 90% of the device) for
    /// in place and the out-of-place configurations this build has; the rest listed as not
    /// implemented.
    Fig15(FigureArgs),
    /// 000 sec. 5.3: infer the SSD's GC unit with the ZNS-like pattern (one active zone,
    /// zone sizes doubling, zones rewritten in random order) and report SSD WAF and write
    /// MB/s per zone size and the smallest size at WAF 1 (on a file: the throughput knee).
    /// --json: `gc_unit_bytes` and `points`; use it with `--engine gc_unit_bytes=N`.
    /// --plots STEM: STEM-waf, STEM-throughput.
    InferGcUnit(InferArgs),
    /// 000 Figure 13: write drilldown per configuration with compression (13b) and without
    /// (13c), bytes per user page byte by purpose (DB: user pages, doublewrite, DB GC,
    /// compensation, padding, metadata; then SSD GC), and the DB GC victims' valid-ratio CDF, at
    /// 90% full; --sizes adds 13a (total WAF at 20-90% of the device). --plot FILE writes
    /// FILE-drilldown-comp, -drilldown-nocomp, -victims-cdf (and -sizes).
    Fig13(Fig13Args),
    /// 000 Figure 14: in place vs the furthest optimized Table 1 row this build runs on five
    /// emulated SSDs (capacity 1x-4x the scale's device, OP, superblock width), 90% full, one
    /// buffer pool size for all; the improvement in total WAF per device. The 4x device takes
    /// 4x the scale's flash in memory (2 GiB at demo). --plot FILE writes FILE-waf and
    /// FILE-improvement.
    Fig14(Fig14Args),
    /// 001 sec. 5.3 (Tables 3-4, Figure 5): Debian's db_bench (rocksdb-tools) runs
    /// filluniquerandom, readrandom and seekrandom for fanout F = 2-32 and the single-level
    /// layout, at k = 1-16 compaction threads (fill) or user threads (reads), on the disk of
    /// --dir; the measured times are printed beside eq. 9-12 costed with an MQSSD profile.
    /// --json: `fills`, `reads`, `predictions`, `constants`; --plots STEM: STEM-queries,
    /// -scans, -inserts.
    MqssdLsm(MqssdLsmArgs),
}

#[derive(Debug, Args)]
struct MqssdLsmArgs {
    /// full (about 800 MB per database, 30 fills and 60 read runs: about half an hour here) or
    /// tiny (8 MB, two layouts at k = 1 and 2: about half a minute; also `quick`).
    #[arg(long, default_value = "full")]
    scale: String,
    /// The device profile of the disk under --dir (`wafer profile --out`).
    #[arg(long, value_name = "FILE.toml", default_value = "docs/results/data/mqssd-profile.toml")]
    mqssd_profile: PathBuf,
    /// Directory for the databases: on the profiled disk, not tmpfs (db_bench uses direct I/O)
    /// [default: the system's temporary directory].
    #[arg(long, value_name = "DIR")]
    dir: Option<PathBuf>,
    /// The db_bench program.
    #[arg(long, value_name = "PATH", default_value = "db_bench")]
    db_bench: PathBuf,
    /// Keep the databases (by default each layout's is removed after its reads).
    #[arg(long)]
    keep: bool,
    /// Render a sweep's --json report again (markdown, charts) instead of running one.
    #[arg(long, value_name = "REPORT.json")]
    from: Option<PathBuf>,
    #[command(flatten)]
    out: super::output::ReportFiles,
}

#[derive(Debug, Args)]
struct Fig14Args {
    #[command(flatten)]
    figure: FigureArgs,
    /// The optimized configuration: a Table 1 row's label (default: the furthest row of 000's
    /// chain this build runs: "+ aligning GC unit").
    #[arg(long, value_name = "LABEL")]
    row: Option<String>,
}

#[derive(Debug, Args)]
struct Fig13Args {
    #[command(flatten)]
    figure: FigureArgs,
    /// Also run 13b's configurations at 20, 40, 60 and 80% of the device (Figure 13a).
    #[arg(long)]
    sizes: bool,
}

#[derive(Debug, Args)]
struct InferArgs {
    /// emu:PRESET (cns, ent, fdp, tiny, plan; not zns), emu:FILE.toml or file:PATH (a file or block
    /// device: TRIMmed and overwritten whole).
    #[arg(long, default_value = "emu:cns")]
    device: String,
    /// tiny (emulator flash at most 128 MiB, sizes from 16 KiB), demo (512 MiB, from 256 KiB),
    /// small (2 GiB, from 1 MiB), full (the preset, from 1 MiB).
    #[arg(long, default_value = "demo")]
    scale: String,
    /// Emulator overrides after the scale (flashemu config keys), e.g. --emu channels=4.
    #[arg(long, value_name = "KEY=VALUE")]
    emu: Vec<String>,
    /// Bytes of a file target the pattern writes over (required for file:).
    #[arg(long, value_name = "SIZE")]
    capacity: Option<String>,
    /// Write a file target through the page cache (synced per zone) instead of O_DIRECT.
    #[arg(long)]
    buffered: bool,
    /// Allow a file target that holds data, or a block device: its contents are destroyed.
    #[arg(long)]
    overwrite: bool,
    /// Smallest zone size tried (a power of two) [default: the scale's].
    #[arg(long, value_name = "SIZE")]
    min_zone: Option<String>,
    /// Largest zone size tried [default: 32 GiB, 000's safe bound].
    #[arg(long, value_name = "SIZE")]
    max_zone: Option<String>,
    /// Share of the device the zones fill [default: 0.9].
    #[arg(long)]
    fill: Option<f64>,
    /// Rewrite zones without TRIMming them first (and no TRIM of the device before each size).
    #[arg(long)]
    no_trim: bool,
    /// Measure every size up to the bound instead of stopping one size above the unit.
    #[arg(long)]
    sweep_all: bool,
    #[command(flatten)]
    out: super::output::ReportFiles,
}

#[derive(Debug, Args)]
struct CcznsArgs {
    /// tiny (20k records + 20k ops, seconds), demo (200k + 100k), small (500k + 250k), full (2M + 500k).
    #[arg(long, default_value = "demo")]
    scale: String,
    #[command(flatten)]
    out: super::output::ReportFiles,
}

#[derive(Debug, Args)]
struct FigureArgs {
    /// tiny (8 MiB emulator, seconds), demo (512 MiB), small (2 GiB), full (4 GiB), as for
    /// table1; fig16 loads 2, 2, 8 and 16 warehouses (the mini cardinality at tiny).
    #[arg(long, default_value = "demo")]
    scale: String,
    /// Write each run's report as DIR/<figure>-<run number>.json (fig13 and fig14 also write
    /// their figures as DIR/<figure>.json).
    #[arg(long, value_name = "DIR")]
    json_dir: Option<PathBuf>,
    /// Write the table as markdown.
    #[arg(long, value_name = "FILE")]
    markdown: Option<PathBuf>,
    /// Write the chart (.png, or .svg); a figure with several charts writes FILE-<chart>.png.
    #[arg(long, value_name = "FILE")]
    plot: Option<PathBuf>,
    /// No per-row lines on stderr.
    #[arg(long, short)]
    quiet: bool,
}

#[derive(Debug, Args)]
struct PlanArgs {
    /// tiny (256 MiB of flash, seconds), demo (2 GiB), small (4 GiB), full (the 8 GiB `plan` preset).
    #[arg(long, default_value = "demo")]
    scale: String,
    #[command(flatten)]
    out: super::output::ReportFiles,
    /// When GC runs: per-chip (004's FEMU: background below 25% free per chip, victims with
    /// at least 1/8 stale; foreground below 5%) or on-demand (only when a write finds too few
    /// free blocks).
    #[arg(long, default_value = "per-chip")]
    gc_trigger: String,
    /// Aging: cold data written first, as a fraction of the logical space.
    #[arg(long, default_value_t = plan::COLD_FRACTION)]
    cold: f64,
    /// Aging: the four files' total, as a fraction of the logical space.
    #[arg(long, default_value_t = plan::FILES_FRACTION)]
    files: f64,
    /// What a map entry covers: page (004's FEMU: a 4 KiB write programs its 16 KiB page
    /// whole) or slot (4 KiB).
    #[arg(long, default_value = "page")]
    map_unit: String,
    /// 004's FEMU max_streams: every scheme keeps that many streams' superblocks (18, PLAN 19)
    /// open from the start; 0 opens only those a scheme writes.
    #[arg(long, default_value_t = 16)]
    device_streams: u32,
    /// 004 Table 1's geometry unscaled (8 channels x 8 chips x 1024 blocks x 256 pages of
    /// 16 KiB, 256 GiB) instead of the scale's; the scale still names the run. Tens of minutes.
    #[arg(long)]
    table1_geometry: bool,
    /// Draw each job's offsets independently (FIO's norandommap) instead of FIO's default
    /// random map, which covers every block of a file once a pass.
    #[arg(long)]
    norandommap: bool,
    /// Skip the sweep of map unit (slot, page) and fill that looks for Figure 1's width
    /// effect (plain at full and 1/8 width and PLAN-Pred-1/4 per setting, the reference
    /// schemes where the effect is largest).
    #[arg(long)]
    no_sweep: bool,
}

#[derive(Debug, Args)]
struct Table1Args {
    /// tiny (8 MiB emulator, seconds), demo (512 MiB, tens of seconds), small (2 GiB, minutes), full (4 GiB cns preset).
    #[arg(long, default_value = "small")]
    scale: String,
    /// Write each run's report as DIR/table1-<row>.json.
    #[arg(long, value_name = "DIR")]
    json_dir: Option<PathBuf>,
    /// Also write the whole result as one self-contained HTML report: the measured table beside
    /// 000's published one, charts, each run's configuration and the machine.
    #[arg(long, value_name = "FILE")]
    html: Option<PathBuf>,
    /// No live status line.
    #[arg(long, short)]
    quiet: bool,
    /// Only the rows whose label contains one of these (case-insensitive), e.g.
    /// `--rows nowa --rows "- comp"`.
    #[arg(long, value_name = "TEXT")]
    rows: Vec<String>,
    /// paper: 000's Table 1 rows. artifact: the out-of-place rows, with and without GDT, on
    /// the artifact's YCSB (ordered keys, rank as key, 120-byte values, live pages on about 88% of the zone slots) with each of
    /// its GC and placement choices alone, all together, and all but GC through the buffer
    /// pool, and GDT's DB WAF gain per choice in both metrics beside 000 Figure 13c's.
    #[arg(long, default_value = "paper", value_parser = ["paper", "artifact"])]
    variant: String,
}

pub fn run(args: ExperimentArgs) -> Result<(), CliError> {
    match args.command {
        ExperimentCommand::Table1(a) => run_table1(&a),
        ExperimentCommand::Table2(a) => run_table2(&a),
        ExperimentCommand::Table3(a) => run_table3(&a),
        ExperimentCommand::NowaModes(a) => run_nowa_modes(&a),
        ExperimentCommand::Plan(a) => run_plan(&a),
        ExperimentCommand::Cczns(a) => run_cczns(&a),
        ExperimentCommand::Fig16(a) => run_fig16(&a),
        ExperimentCommand::Fig15(a) => run_fig15(&a),
        ExperimentCommand::InferGcUnit(a) => run_infer(&a),
        ExperimentCommand::Fig13(a) => run_fig13(&a),
        ExperimentCommand::Fig14(a) => run_fig14(&a),
        ExperimentCommand::MqssdLsm(a) => run_mqssd_lsm(&a),
    }
}

fn run_mqssd_lsm(args: &MqssdLsmArgs) -> Result<(), CliError> {
    use wafer_bench::experiment::mqssd_lsm::{self, report, LsmReport, Request, Sweep};
    args.out.check()?;
    if let Some(path) = &args.from {
        let text = std::fs::read_to_string(path)
            .map_err(|e| CliError(format!("{}: {e}", path.display())))?;
        let stored: LsmReport = serde_json::from_str(&text)
            .map_err(|e| CliError(format!("{}: {e}", path.display())))?;
        return emit_report(&args.out, &stored, report::render_markdown, report::write_figures);
    }
    let path = &args.mqssd_profile;
    let text =
        std::fs::read_to_string(path).map_err(|e| CliError(format!("{}: {e}", path.display())))?;
    let profile = wafer_bench::mqssd::DeviceProfile::from_toml(&text)?;
    let sweep = Sweep::parse(&args.scale)?;
    let dir = args.dir.clone().unwrap_or_else(|| {
        std::env::temp_dir().join(format!("wafer-mqssd-lsm-{}", std::process::id()))
    });
    let request = Request {
        sweep,
        db_bench: args.db_bench.clone(),
        dir: dir.clone(),
        keep: args.keep,
        profile_source: path.display().to_string(),
    };
    let quiet = args.out.quiet;
    let result = mqssd_lsm::run(&request, &profile, &mut |line| {
        if !quiet {
            eprintln!("mqssd-lsm [{}] {line}", args.scale);
        }
    });
    // A directory this run made is removed even when a db_bench run failed.
    if args.dir.is_none() && !args.keep {
        let _ = std::fs::remove_dir_all(&dir);
    }
    emit_report(&args.out, &result?, report::render_markdown, report::write_figures)
}

fn run_cczns(args: &CcznsArgs) -> Result<(), CliError> {
    run_paper(
        "cczns",
        &args.scale,
        &args.out,
        |scale, on_line| Ok(cczns::run(scale, on_line)?),
        cczns::render_markdown,
        cczns::write_figures,
    )
}

fn run_fig15(args: &FigureArgs) -> Result<(), CliError> {
    let scale = check_outputs(args)?;
    let quiet = args.quiet;
    let mut live = ProgressBar::without_totals(!quiet);
    let points = fig15::run(scale, &mut live, &mut |p| {
        if !quiet {
            let status = match &p.result {
                Ok(r) => format!(
                    "total WAF {}",
                    r.summary.total_waf.map_or("-".into(), |w| format!("{w:.2}"))
                ),
                Err(reason) => reason.clone(),
            };
            eprintln!("fig15 [{}] {} at {:.0}%: {status}", scale.name(), p.label, p.fill * 100.0);
        }
    })?;
    let markdown = fig15::render_markdown(scale, &points);
    print!("{markdown}");
    let mut reports = Vec::new();
    for p in &points {
        reports.push(p.result.as_ref().ok().map(|r| r.to_json()).transpose()?);
    }
    let chart = wafer_bench::plot::Chart::Line(fig15::chart(&points));
    write_outputs(args, "fig15", &reports, None, &markdown, &[("", chart)])
}

/// The scale the flags name, after checking the output paths (before any run).
fn check_outputs(args: &FigureArgs) -> Result<Scale, CliError> {
    let scale = Scale::parse(&args.scale).map_err(CliError)?;
    for path in [&args.markdown, &args.plot] {
        super::output::check_output_path(path.as_deref())?;
    }
    if let Some(dir) = &args.json_dir {
        std::fs::create_dir_all(dir).map_err(|e| CliError(format!("{}: {e}", dir.display())))?;
    }
    Ok(scale)
}

/// Each run's report (JSON, None for runs that did not happen) as DIR/<figure>-<i>.json, the
/// figure's own JSON as DIR/<figure>.json, the markdown and the charts, where the flags say. A
/// chart with an empty suffix goes to the --plot path itself, the others beside it as
/// PATH-<suffix>.<ext>.
fn write_outputs(
    args: &FigureArgs,
    figure: &str,
    reports: &[Option<String>],
    summary: Option<String>,
    markdown: &str,
    charts: &[(&str, wafer_bench::plot::Chart)],
) -> Result<(), CliError> {
    if let Some(dir) = &args.json_dir {
        for (i, json) in reports.iter().enumerate() {
            if let Some(json) = json {
                super::output::write_file(
                    &dir.join(format!("{figure}-{i}.json")),
                    json.as_bytes(),
                )?;
            }
        }
        if let Some(json) = summary {
            super::output::write_file(&dir.join(format!("{figure}.json")), json.as_bytes())?;
        }
    }
    if let Some(path) = &args.markdown {
        super::output::write_file(path, markdown.as_bytes())?;
    }
    if let Some(path) = &args.plot {
        for (suffix, chart) in charts {
            let path = chart_path(path, suffix);
            let bytes = wafer_bench::plot::render_for_path(chart, &path, (1000, 600))
                .map_err(|e| CliError(format!("{}: {e}", path.display())))?;
            super::output::write_file(&path, &bytes)?;
        }
    }
    Ok(())
}

/// `PATH` for an empty suffix, else `PATH` without its extension + `-suffix` + the extension.
fn chart_path(path: &Path, suffix: &str) -> PathBuf {
    if suffix.is_empty() {
        return path.to_path_buf();
    }
    let mut name = path.with_extension("").into_os_string();
    name.push(format!("-{suffix}"));
    if let Some(ext) = path.extension() {
        name.push(".");
        name.push(ext);
    }
    PathBuf::from(name)
}

/// The figure's own JSON (what its tables and charts show).
fn summary_json(value: &impl serde::Serialize) -> Result<String, CliError> {
    serde_json::to_string_pretty(value).map_err(|e| CliError(format!("JSON: {e}")))
}

fn run_fig13(args: &Fig13Args) -> Result<(), CliError> {
    let out = &args.figure;
    let scale = check_outputs(out)?;
    let quiet = out.quiet;
    let mut live = ProgressBar::without_totals(!quiet);
    let report = fig13::run(scale, args.sizes, &mut live, &mut |label, fill, result| {
        if !quiet {
            let status = match result {
                Ok(r) => format!(
                    "DB WAF {}, total WAF {}",
                    r.summary.db_waf.map_or("-".into(), |w| format!("{w:.2}")),
                    r.summary.total_waf.map_or("-".into(), |w| format!("{w:.2}"))
                ),
                Err(reason) => reason.clone(),
            };
            eprintln!("fig13 [{}] {label} at {:.0}%: {status}", scale.name(), fill * 100.0);
        }
    })?;
    let markdown = fig13::render_markdown(&report);
    print!("{markdown}");
    let mut reports = Vec::new();
    for run in &report.runs {
        reports.push(run.result.as_ref().ok().map(|r| r.to_json()).transpose()?);
    }
    // The sweep's points at the drilldown's size are the runs above.
    for p in report.sizes.iter().filter(|p| p.fill != report.fill) {
        reports.push(p.result.as_ref().ok().map(|r| r.to_json()).transpose()?);
    }
    let summary = summary_json(&fig13_summary(&report))?;
    write_outputs(out, "fig13", &reports, Some(summary), &markdown, &fig13::charts(&report))
}

/// Figure 13's figures without the runs' interval series (those are in the per-run files).
fn fig13_summary(report: &fig13::Fig13Report) -> serde_json::Value {
    let runs: Vec<serde_json::Value> = report
        .runs
        .iter()
        .map(|r| {
            let s = r.result.as_ref().ok().map(|x| &x.summary);
            serde_json::json!({
                "label": r.label,
                "panels": r.panels,
                "not_run": r.result.as_ref().err(),
                "drilldown": r.drilldown(),
                "db_waf": s.and_then(|s| s.db_waf),
                "ssd_waf": s.and_then(|s| s.ssd_waf),
                "total_waf": s.and_then(|s| s.total_waf),
                "gc_victim_valid_ratio": s.and_then(|s| s.gc_victim_valid_ratio),
                "gc_victim_valid_cdf": s.and_then(|s| s.gc_victim_valid_cdf),
            })
        })
        .collect();
    let sizes: Vec<serde_json::Value> = report
        .sizes
        .iter()
        .map(|p| {
            serde_json::json!({
                "label": p.label,
                "fill": p.fill,
                "total_waf": p.result.as_ref().ok().and_then(|r| r.summary.total_waf),
                "not_run": p.result.as_ref().err(),
            })
        })
        .collect();
    serde_json::json!({ "figure": "000 Figure 13", "scale": report.scale, "runs": runs, "sizes": sizes })
}

fn run_fig14(a: &Fig14Args) -> Result<(), CliError> {
    let args = &a.figure;
    let scale = check_outputs(args)?;
    // A bad label fails before any run.
    fig14::optimized_row(a.row.as_deref()).map_err(|e| CliError(e.to_string()))?;
    let quiet = args.quiet;
    let mut live = ProgressBar::without_totals(!quiet);
    let report = fig14::run(scale, a.row.as_deref(), &mut live, &mut |geometry, config, r| {
        if !quiet {
            let total = r.summary.total_waf.map_or("-".into(), |w| format!("{w:.2}"));
            eprintln!("fig14 [{}] {config} on {geometry}: total WAF {total}", scale.name());
        }
    })
    .map_err(|e| CliError(e.to_string()))?;
    let markdown = fig14::render_markdown(&report);
    print!("{markdown}");
    let mut reports = Vec::new();
    for row in &report.rows {
        reports.push(Some(row.in_place.to_json()?));
        reports.push(Some(row.optimized.to_json()?));
    }
    let summary: Vec<serde_json::Value> = report
        .rows
        .iter()
        .map(|r| {
            serde_json::json!({
                "geometry": r.geometry,
                "stands_for": r.stands_for,
                "device": r.device,
                "in_place": {"db_waf": r.in_place.summary.db_waf, "ssd_waf": r.in_place.summary.ssd_waf, "total_waf": r.in_place.summary.total_waf},
                "optimized": {"db_waf": r.optimized.summary.db_waf, "ssd_waf": r.optimized.summary.ssd_waf, "total_waf": r.optimized.summary.total_waf},
                "improvement": r.improvement(),
            })
        })
        .collect();
    let summary = summary_json(&serde_json::json!({
        "figure": "000 Figure 14",
        "scale": report.scale,
        "optimized": report.optimized,
        "pool_bytes": report.pool_bytes,
        "devices": summary,
    }))?;
    write_outputs(args, "fig14", &reports, Some(summary), &markdown, &fig14::charts(&report))
}

fn run_fig16(args: &FigureArgs) -> Result<(), CliError> {
    let scale = check_outputs(args)?;
    let quiet = args.quiet;
    let rows = fig16::run(scale, &mut |row| {
        if !quiet {
            let status = match &row.result {
                Ok(r) => format!(
                    "{} transactions, {} flash B/txn",
                    r.counts.total(),
                    r.flash_bytes_per_transaction.map_or("-".into(), |b| format!("{b:.0}"))
                ),
                Err(reason) => reason.clone(),
            };
            eprintln!("fig16 [{}] {}: {status}", scale.name(), row.label);
        }
    })?;
    let markdown = fig16::render_markdown(scale, &rows);
    print!("{markdown}");
    let mut reports = Vec::new();
    for row in &rows {
        reports.push(row.result.as_ref().ok().map(|r| r.to_json()).transpose()?);
    }
    let chart = wafer_bench::plot::Chart::Line(fig16::chart(&rows));
    write_outputs(args, "fig16", &reports, None, &markdown, &[("", chart)])
}

fn run_plan(args: &PlanArgs) -> Result<(), CliError> {
    let trigger = flashemu::PlanGcTrigger::parse(&args.gc_trigger).ok_or_else(|| {
        CliError(format!("--gc-trigger {}: not per-chip or on-demand", args.gc_trigger))
    })?;
    let fill = plan::Fill { cold_fraction: args.cold, files_fraction: args.files };
    let mix = plan::FioMix { fill, random_map: !args.norandommap };
    let map_unit = flashemu::PlanMapUnit::parse(&args.map_unit)
        .ok_or_else(|| CliError(format!("--map-unit {}: not page or slot", args.map_unit)))?;
    let model = plan::DeviceModel {
        map_unit,
        device_streams: args.device_streams,
        table1_geometry: args.table1_geometry,
    };
    run_paper(
        "plan",
        &args.scale,
        &args.out,
        |scale, on_line| {
            let mut report = plan::run(scale, trigger, model, mix, on_line)?;
            if !args.no_sweep {
                report.sweep = Some(plan::sweep(scale, trigger, model, mix.random_map, on_line)?);
            }
            Ok(report)
        },
        plan::render_markdown,
        plan::write_figures,
    )
}

fn run_infer(args: &InferArgs) -> Result<(), CliError> {
    let bytes = |flag: &str, text: &Option<String>| -> Result<Option<u64>, CliError> {
        text.as_deref()
            .map(|t| {
                wafer_bench::jobs::parse_bytes(t).map_err(|e| CliError(format!("{flag}: {e}")))
            })
            .transpose()
    };
    let scale = Scale::parse(&args.scale).map_err(CliError)?;
    let mut emu = Vec::with_capacity(args.emu.len());
    for pair in &args.emu {
        let (k, v) = pair
            .split_once('=')
            .ok_or_else(|| CliError(format!("--emu `{pair}`: expected KEY=VALUE")))?;
        emu.push((k.trim().to_string(), v.trim().to_string()));
    }
    let request = infer_gc_unit::Request {
        device: args.device.clone(),
        scale,
        emu,
        capacity_bytes: bytes("--capacity", &args.capacity)?,
        direct: !args.buffered,
        overwrite: args.overwrite,
    };
    let mut options = infer_gc_unit::options_for(scale);
    if let Some(min) = bytes("--min-zone", &args.min_zone)? {
        options.min_zone_bytes = min;
    }
    if let Some(max) = bytes("--max-zone", &args.max_zone)? {
        options.max_zone_bytes = max;
    }
    if let Some(fill) = args.fill {
        options.fill = fill;
    }
    options.trim = !args.no_trim;
    if args.sweep_all {
        options.confirm_sizes = u32::MAX;
    }
    run_paper(
        "infer-gc-unit",
        &args.scale,
        &args.out,
        |_, on_line| Ok(infer_gc_unit::run(&request, &options, on_line)?),
        infer_gc_unit::render_markdown,
        infer_gc_unit::write_figures,
    )
}

type Figures<R> = fn(&R, &Path) -> std::io::Result<Vec<PathBuf>>;

/// Runs a paper's experiment at the named scale, prints its markdown and writes the outputs
/// asked for.
fn run_paper<R: serde::Serialize>(
    name: &str,
    scale: &str,
    out: &super::output::ReportFiles,
    run: impl FnOnce(Scale, &mut dyn FnMut(&str)) -> Result<R, CliError>,
    render_markdown: fn(&R) -> String,
    write_figures: Figures<R>,
) -> Result<(), CliError> {
    let scale = Scale::parse(scale).map_err(CliError)?;
    out.check()?;
    let quiet = out.quiet;
    let report = run(scale, &mut |line| {
        if !quiet {
            eprintln!("{name} [{}] {line}", scale.name());
        }
    })?;
    emit_report(out, &report, render_markdown, write_figures)
}

/// Prints a report's markdown and writes the JSON, markdown and charts the flags ask for.
fn emit_report<R: serde::Serialize>(
    out: &super::output::ReportFiles,
    report: &R,
    render_markdown: fn(&R) -> String,
    write_figures: Figures<R>,
) -> Result<(), CliError> {
    let markdown = render_markdown(report);
    print!("{markdown}");
    if let Some(path) = &out.json {
        super::output::write_file(path, summary_json(report)?.as_bytes())?;
    }
    if let Some(path) = &out.markdown {
        super::output::write_file(path, markdown.as_bytes())?;
    }
    if let Some(stem) = &out.plots {
        let paths = write_figures(report, stem)
            .map_err(|e| CliError(format!("{}: {e}", stem.display())))?;
        for path in paths {
            eprintln!("wrote {}", path.display());
        }
    }
    Ok(())
}

/// A table's rows, each with its run's report (None: a row that did not run).
type RowRun = (table::Row, Option<RunReport>);
type TableRun = Vec<RowRun>;
type TableRunFn = fn(
    Scale,
    &mut dyn wafer_bench::progress::Progress,
    &mut dyn FnMut(&table::Row),
) -> Result<TableRun, wafer_bench::experiment::table1::ExperimentError>;

/// The parts of Tables 2 and 3 that differ: their rows, heading, markdown and chart.
struct WafTable {
    name: &'static str,
    run: TableRunFn,
    heading: fn(Scale) -> String,
    markdown: fn(Scale, &[RowRun]) -> String,
    chart: fn(Scale, &[table::Row]) -> wafer_bench::plot::BarChart,
}

/// Runs a table of WAF rows: live progress, the text table, markdown, JSON and the chart.
fn run_waf_table(args: &FigureArgs, t: &WafTable) -> Result<(), CliError> {
    let scale = check_outputs(args)?;
    let mut live = ProgressBar::without_totals(!args.quiet);
    let quiet = args.quiet;
    let rows = (t.run)(scale, &mut live, &mut |row| {
        if !quiet {
            eprintln!("{} [{}] {}: done", t.name, scale.name(), row.label);
        }
    })?;
    let table_rows: Vec<table::Row> = rows.iter().map(|(r, _)| r.clone()).collect();
    println!("{}", (t.heading)(scale));
    print!("{}", table::render(&table_rows));
    let markdown = (t.markdown)(scale, &rows);
    println!();
    print!("{markdown}");
    let mut reports = Vec::new();
    for (_, report) in &rows {
        reports.push(report.as_ref().map(|r| r.to_json()).transpose()?);
    }
    let chart = wafer_bench::plot::Chart::Bar((t.chart)(scale, &table_rows));
    write_outputs(args, t.name, &reports, None, &markdown, &[("", chart)])
}

fn run_table2(args: &FigureArgs) -> Result<(), CliError> {
    use wafer_bench::experiment::table2;
    let heading = |scale: Scale| {
        format!(
            "Table 2 of 000: CNS (OP {:.1}%) vs ZNS on the same emulated flash (YCSB-A zipf \
             0.8), scale {}",
            table2::CNS_OP * 100.0,
            scale.name()
        )
    };
    let t = WafTable {
        name: "table2",
        run: table2::run,
        heading,
        markdown: table2::render_markdown,
        chart: table2::chart,
    };
    run_waf_table(args, &t)
}

fn run_table3(args: &FigureArgs) -> Result<(), CliError> {
    use wafer_bench::experiment::table3;
    let heading = |scale: Scale| {
        format!(
            "Table 3 of 000 on an emulated FDP SSD (YCSB-A zipf 0.8, 85% full), scale {}",
            scale.name()
        )
    };
    let t = WafTable {
        name: "table3",
        run: table3::run,
        heading,
        markdown: table3::render_markdown,
        chart: table3::chart,
    };
    run_waf_table(args, &t)
}

fn run_nowa_modes(args: &FigureArgs) -> Result<(), CliError> {
    use wafer_bench::experiment::nowa_modes;
    let scale = check_outputs(args)?;
    let mut live = ProgressBar::without_totals(!args.quiet);
    let quiet = args.quiet;
    let rows = nowa_modes::run(scale, &mut live, &mut |row| {
        if !quiet {
            eprintln!("nowa-modes [{}] {}: done", scale.name(), row.label);
        }
    })?;
    let table_rows: Vec<table::Row> = rows.iter().map(|(r, _)| r.clone()).collect();
    println!(
        "NoWA unit against group balancing in Table 1's geometry (YCSB-A zipf 0.8), scale {}",
        scale.name()
    );
    print!("{}", table::render(&table_rows));
    let markdown = nowa_modes::render_markdown(scale, &rows);
    println!();
    print!("{markdown}");
    let mut reports = Vec::with_capacity(rows.len());
    for (_, report) in &rows {
        reports.push(report.as_ref().map(|r| r.to_json()).transpose()?);
    }
    let chart = wafer_bench::plot::Chart::Line(nowa_modes::chart(scale, &table_rows));
    write_outputs(args, "nowa-modes", &reports, None, &markdown, &[("", chart)])
}

fn run_table1(args: &Table1Args) -> Result<(), CliError> {
    let outputs = Outputs {
        json_dir: args.json_dir.as_deref(),
        html: args.html.as_deref(),
        quiet: args.quiet,
    };
    if args.variant == "artifact" {
        return table1_artifact_at(&args.scale, &args.rows, &outputs);
    }
    let rows = table1::select_rows(&args.rows).map_err(CliError)?;
    table1_rows_at(&args.scale, &rows, &outputs)
}

/// `table1 --variant artifact`: the rows whose label contains one of `patterns` (all when
/// none), then GDT's gain per option set.
fn table1_artifact_at(
    scale: &str,
    patterns: &[String],
    outputs: &Outputs<'_>,
) -> Result<(), CliError> {
    use wafer_bench::experiment::table1_artifact as artifact;
    let scale = Scale::parse(scale).map_err(CliError)?;
    let matches = |r: &artifact::ArtifactRow| {
        let label = r.label().to_lowercase();
        patterns.is_empty() || patterns.iter().any(|p| label.contains(&p.to_lowercase()))
    };
    let plans: Vec<artifact::ArtifactRow> = artifact::rows().into_iter().filter(matches).collect();
    if plans.is_empty() {
        return Err(CliError("no row of the artifact variant matches --rows".into()));
    }
    if let Some(dir) = outputs.json_dir {
        std::fs::create_dir_all(dir).map_err(|e| CliError(format!("{}: {e}", dir.display())))?;
    }
    let mut live = ProgressBar::without_totals(!outputs.quiet);
    let quiet = outputs.quiet;
    let results = artifact::run(scale, &plans, &mut live, &mut |row| {
        if !quiet {
            eprintln!("table1 artifact [{}] {}: done", scale.name(), row.label);
        }
    })?;
    println!(
        "Table 1, the artifact's variant (its YCSB at fill {}, no compression), scale {}",
        artifact::ARTIFACT_FILL,
        scale.name()
    );
    let table_rows: Vec<table::Row> = results.iter().map(|(_, r, _)| r.clone()).collect();
    print!("{}", table::render(&table_rows));
    println!();
    println!("GDT's DB WAF gain per option set:");
    print!("{}", artifact::render_gains(&artifact::gains(&results)));
    if let Some(dir) = outputs.json_dir {
        for (i, (_, _, report)) in results.iter().enumerate() {
            let path = dir.join(format!("table1-artifact-{i}.json"));
            super::output::write_file(&path, report.to_json()?.as_bytes())?;
        }
    }
    Ok(())
}

/// Where an experiment's results go besides the printed table.
#[derive(Debug, Clone, Copy)]
pub struct Outputs<'a> {
    /// Each run's report as DIR/table1-<row>.json.
    pub json_dir: Option<&'a Path>,
    /// One HTML report of the whole experiment.
    pub html: Option<&'a Path>,
    /// No live status line.
    pub quiet: bool,
}

/// Runs Table 1 at the named scale; `wafer demo` is this at the `demo` (or `tiny`) scale.
pub fn table1_at(scale: &str, outputs: &Outputs<'_>) -> Result<(), CliError> {
    table1_rows_at(scale, &table1::ROWS, outputs)
}

/// Runs the given rows of Table 1 at the named scale.
fn table1_rows_at(
    scale: &str,
    plans: &[table1::RowPlan],
    outputs: &Outputs<'_>,
) -> Result<(), CliError> {
    let scale = Scale::parse(scale).map_err(CliError)?;
    super::output::check_output_path(outputs.html)?;
    if let Some(dir) = outputs.json_dir {
        std::fs::create_dir_all(dir).map_err(|e| CliError(format!("{}: {e}", dir.display())))?;
    }
    let mut live = ProgressBar::without_totals(!outputs.quiet);
    let quiet = outputs.quiet;
    let rows = table1::run_rows(scale, plans, &mut live, &mut |row| {
        if !quiet {
            let status = match &row.figures {
                Ok(f) => format!(
                    "done, total WAF {}",
                    f.total_waf.map_or("-".into(), |w| format!("{w:.2}"))
                ),
                Err(reason) => reason.clone(),
            };
            eprintln!("table1 [{}] {}: {status}", scale.name(), row.label);
        }
    })?;
    let fill_percent = scale.base_config().fill.unwrap_or(0.9) * 100.0;
    println!(
        "Table 1 of 000 (YCSB-A zipf 0.8, {fill_percent:.0}% full emulated SSD, buffer 10% of the \
         dataset), scale {}",
        scale.name()
    );
    let table_rows: Vec<table::Row> = rows.iter().map(|(r, _)| r.clone()).collect();
    print!("{}", table::render(&table_rows));
    println!();
    println!("{}", table1::render_paper_rows().trim_end());
    if let Some(path) = outputs.html {
        let runs: Vec<RunReport> = rows.iter().filter_map(|(_, r)| r.clone()).collect();
        write_table1_html(path, scale, &table_rows, runs)?;
    }
    if let Some(dir) = outputs.json_dir {
        for (i, (_, report)) in rows.iter().enumerate() {
            if let Some(report) = report {
                let path = dir.join(format!("table1-{i}.json"));
                super::output::write_file(&path, report.to_json()?.as_bytes())?;
            }
        }
    }
    Ok(())
}

/// The experiment as one HTML page: every row (those this build cannot run say why), 000's
/// published rows beside them, the charts of the rows that ran.
fn write_table1_html(
    path: &Path,
    scale: Scale,
    rows: &[table::Row],
    runs: Vec<RunReport>,
) -> Result<(), CliError> {
    let fill_percent = scale.base_config().fill.unwrap_or(0.9) * 100.0;
    let mut doc = Document::of_runs(&format!("Table 1 of 000, scale {}", scale.name()), &runs);
    doc.rows = rows.to_vec();
    doc.paper = Some(PaperTable::table1_000());
    doc.notes = vec![format!(
        "YCSB-A with zipf 0.8 on an emulated SSD whose dataset fills {fill_percent:.0}% of it, \
         buffer pool 10% of the dataset; every row on a fresh device with the same workload and \
         seed. Rows whose write mode or optimization this build lacks are listed, not faked."
    )];
    let page = wafer_bench::report::html::render(&doc)?;
    super::output::write_file(path, page.as_bytes())?;
    println!("HTML report: {}", path.display());
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn charts_beside_the_plot_path_keep_its_extension() {
        let path = Path::new("out/f13.svg");
        assert_eq!(chart_path(path, ""), PathBuf::from("out/f13.svg"));
        assert_eq!(chart_path(path, "sizes"), PathBuf::from("out/f13-sizes.svg"));
        assert_eq!(chart_path(Path::new("f14"), "waf"), PathBuf::from("f14-waf"));
    }
}
