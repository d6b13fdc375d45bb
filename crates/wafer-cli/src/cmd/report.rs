//! `wafer report plot`: charts of benchmark run reports (JSON from `wafer bench --json`),
//! several runs side by side; `wafer report table`: their Table-1-like rows; `wafer report
//! html`: both in one self-contained HTML file.
use std::path::{Path, PathBuf};

use clap::{Args, Subcommand};
use wafer_bench::metrics::RunReport;
use wafer_bench::plot::{self, Chart};
use wafer_bench::report::{charts, html};
use wafer_bench::runner::{plots, table};

use super::error::CliError;

#[derive(Debug, Args)]
pub struct ReportArgs {
    #[command(subcommand)]
    command: ReportCommand,
}

#[derive(Debug, Subcommand)]
enum ReportCommand {
    /// Draw WAF and throughput over written capacity, the write drilldown, throughput over time
    /// and latency percentiles of the runs.
    Plot(PlotArgs),
    /// Print the runs as rows of a Table-1-like table.
    Table(TableArgs),
    /// Write one self-contained HTML report of the runs: tables (with 000's published figures
    /// beside runs named after its rows), charts, configurations and the machine.
    Html(HtmlArgs),
}

#[derive(Debug, Args)]
struct HtmlArgs {
    /// Run reports (JSON of `wafer bench --json` or `wafer experiment ... --json-dir`).
    files: Vec<PathBuf>,
    /// An emulator run's JSON (`wafer emu run --json`): its GC victims' valid ratio is drawn
    /// as a CDF. Repeatable.
    #[arg(long = "emu", value_name = "EMU_JSON")]
    emu: Vec<PathBuf>,
    /// The HTML file to write.
    #[arg(long, value_name = "FILE")]
    out: PathBuf,
    /// The page's title.
    #[arg(long, default_value = "Wafer benchmark report")]
    title: String,
}

#[derive(Debug, Args)]
struct PlotArgs {
    /// Run reports (JSON).
    #[arg(required = true)]
    files: Vec<PathBuf>,
    /// A directory (gets waf.png, waf-total.png, throughput.png, drilldown.png,
    /// throughput-time.png, latency.png) or a file name whose stem prefixes the charts (`out.svg` gives out-waf.svg,
    /// ...); .svg for SVG.
    #[arg(long, value_name = "DIR_OR_FILE")]
    out: PathBuf,
    /// Image size in pixels.
    #[arg(long, default_value_t = 960)]
    width: u32,
    #[arg(long, default_value_t = 600)]
    height: u32,
}

#[derive(Debug, Args)]
struct TableArgs {
    /// Run reports (JSON).
    #[arg(required = true)]
    files: Vec<PathBuf>,
}

pub fn run(args: ReportArgs) -> Result<(), CliError> {
    match args.command {
        ReportCommand::Plot(a) => plot_reports(&a),
        ReportCommand::Html(a) => html_report(&a),
        ReportCommand::Table(a) => {
            let rows: Vec<table::Row> = read_reports(&a.files)?
                .into_iter()
                .map(|r| table::Row { label: r.label, figures: Ok(r.summary) })
                .collect();
            print!("{}", table::render(&rows));
            Ok(())
        }
    }
}

fn html_report(args: &HtmlArgs) -> Result<(), CliError> {
    if args.files.is_empty() && args.emu.is_empty() {
        return Err(CliError("nothing to report: give run reports or --emu files".into()));
    }
    super::output::check_output_path(Some(&args.out))?;
    let reports = read_reports(&args.files)?;
    let mut doc = html::Document::of_runs(&args.title, &reports);
    for path in &args.emu {
        let text = std::fs::read_to_string(path)
            .map_err(|e| CliError(format!("{}: {e}", path.display())))?;
        let json: serde_json::Value = serde_json::from_str(&text)
            .map_err(|e| CliError(format!("{}: {e}", path.display())))?;
        let histogram = charts::VictimHistogram::of_emu_json(None, &json).ok_or_else(|| {
            CliError(format!("{}: no GC victims in this emulator report", path.display()))
        })?;
        doc.victim_histograms.push(histogram);
    }
    let page = html::render(&doc)?;
    super::output::write_file(&args.out, page.as_bytes())?;
    println!("{}", args.out.display());
    Ok(())
}

fn read_reports(files: &[PathBuf]) -> Result<Vec<RunReport>, CliError> {
    files
        .iter()
        .map(|path| {
            let text = std::fs::read_to_string(path)
                .map_err(|e| CliError(format!("{}: {e}", path.display())))?;
            RunReport::from_json(&text).map_err(|e| CliError(format!("{}: {e}", path.display())))
        })
        .collect()
}

/// Where chart `name` goes: `DIR/name.png`, or `STEM-name.EXT` next to the given file.
fn chart_path(out: &Path, name: &str) -> PathBuf {
    let is_file = out.extension().is_some_and(|e| e == "png" || e == "svg");
    if !is_file {
        return out.join(format!("{name}.png"));
    }
    let stem = out.file_stem().map_or_else(|| "chart".into(), |s| s.to_string_lossy().into_owned());
    let ext = out.extension().map_or_else(|| "png".into(), |e| e.to_string_lossy().into_owned());
    out.with_file_name(format!("{stem}-{name}.{ext}"))
}

fn plot_reports(args: &PlotArgs) -> Result<(), CliError> {
    let reports = read_reports(&args.files)?;
    let is_file = args.out.extension().is_some_and(|e| e == "png" || e == "svg");
    if !is_file {
        std::fs::create_dir_all(&args.out)
            .map_err(|e| CliError(format!("{}: {e}", args.out.display())))?;
    }
    let size_px = (args.width.clamp(200, 8000), args.height.clamp(150, 8000));
    let charts: [(&str, Chart); 6] = [
        ("waf", Chart::Line(plots::waf_chart(&reports))),
        ("waf-total", charts::waf_per_configuration(&reports)),
        ("throughput", Chart::Line(plots::throughput_chart(&reports))),
        ("drilldown", charts::write_drilldown(&reports)),
        ("throughput-time", charts::throughput_over_time(&reports)),
        ("latency", charts::latency_percentiles(&reports)),
    ];
    for (name, chart) in &charts {
        let path = chart_path(&args.out, name);
        super::output::write_file(&path, &plot::render_for_path(chart, &path, size_px)?)?;
        println!("{}", path.display());
    }
    Ok(())
}
