//! `wafer experiment table1`: the first rows of Table 1 of 000 on one emulated 90%-full SSD.
use std::path::{Path, PathBuf};

use clap::{Args, Subcommand};
use wafer_bench::experiment::{plan, table1, Scale};
use wafer_bench::metrics::RunReport;
use wafer_bench::progress::ProgressBar;
use wafer_bench::report::{Document, PaperTable};
use wafer_bench::runner::table;

use super::CliError;

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
    /// 004 (PLAN): the FIO mix (4 jobs, 50/50 read/write, uniform 4 KiB random, files
    /// 1:10:30:64, 90% full) for plain, partial GC, multi-stream, AutoStream and PLAN-NoPred /
    /// PLAN-Pred at 1/4 and 1/8, and Figure 1 (WAF and throughput vs superblock width).
    Plan(PlanArgs),
}

#[derive(Debug, Args)]
struct PlanArgs {
    /// tiny (256 MiB of flash, seconds), demo (2 GiB), small (4 GiB), full (the 8 GiB `plan` preset).
    #[arg(long, default_value = "demo")]
    scale: String,
    /// Write the report as JSON (`schemes`: name and waf of each).
    #[arg(long, value_name = "FILE")]
    json: Option<PathBuf>,
    /// Write the report as markdown.
    #[arg(long, value_name = "FILE")]
    markdown: Option<PathBuf>,
    /// Write Figures 1 and 3 as STEM-fig1-waf.png, STEM-fig1-throughput.png, STEM-fig3-waf.png
    /// (.svg for SVG).
    #[arg(long, value_name = "STEM")]
    plots: Option<PathBuf>,
    /// No per-scheme lines on stderr.
    #[arg(long, short)]
    quiet: bool,
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
}

pub fn run(args: ExperimentArgs) -> Result<(), CliError> {
    match args.command {
        ExperimentCommand::Table1(a) => run_table1(&a),
        ExperimentCommand::Plan(a) => run_plan(&a),
    }
}

fn run_plan(args: &PlanArgs) -> Result<(), CliError> {
    let scale = Scale::parse(&args.scale).map_err(CliError)?;
    for path in [&args.json, &args.markdown, &args.plots] {
        super::check_output_path(path.as_deref())?;
    }
    let quiet = args.quiet;
    let report = plan::run(scale, &mut |line| {
        if !quiet {
            eprintln!("plan [{}] {line}", scale.name());
        }
    })?;
    let markdown = plan::render_markdown(&report);
    print!("{markdown}");
    if let Some(path) = &args.json {
        let json = serde_json::to_string_pretty(&report)
            .map_err(|e| CliError(format!("{}: {e}", path.display())))?;
        super::write_file(path, json.as_bytes())?;
    }
    if let Some(path) = &args.markdown {
        super::write_file(path, markdown.as_bytes())?;
    }
    if let Some(stem) = &args.plots {
        let paths = plan::write_figures(&report, stem)
            .map_err(|e| CliError(format!("{}: {e}", stem.display())))?;
        for path in paths {
            eprintln!("wrote {}", path.display());
        }
    }
    Ok(())
}

fn run_table1(args: &Table1Args) -> Result<(), CliError> {
    let outputs = Outputs {
        json_dir: args.json_dir.as_deref(),
        html: args.html.as_deref(),
        quiet: args.quiet,
    };
    table1_at(&args.scale, &outputs)
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
    let scale = Scale::parse(scale).map_err(CliError)?;
    super::check_output_path(outputs.html)?;
    if let Some(dir) = outputs.json_dir {
        std::fs::create_dir_all(dir).map_err(|e| CliError(format!("{}: {e}", dir.display())))?;
    }
    let mut live = ProgressBar::without_totals(!outputs.quiet);
    let quiet = outputs.quiet;
    let rows = table1::run(scale, &mut live, &mut |row| {
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
                super::write_file(&path, report.to_json()?.as_bytes())?;
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
    super::write_file(path, page.as_bytes())?;
    println!("HTML report: {}", path.display());
    Ok(())
}
