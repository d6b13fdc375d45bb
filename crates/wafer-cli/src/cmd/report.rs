//! `wafer report plot`: charts of benchmark run reports (JSON from `wafer bench --json`),
//! several runs side by side; `wafer report table`: their Table-1-like rows.
use std::path::{Path, PathBuf};

use clap::{Args, Subcommand};
use wafer_bench::metrics::RunReport;
use wafer_bench::plot;
use wafer_bench::runner::{plots, table};

use super::CliError;

#[derive(Debug, Args)]
pub struct ReportArgs {
    #[command(subcommand)]
    command: ReportCommand,
}

#[derive(Debug, Subcommand)]
enum ReportCommand {
    /// Draw WAF and throughput over written capacity and the write drilldown per run.
    Plot(PlotArgs),
    /// Print the runs as rows of a Table-1-like table.
    Table(TableArgs),
}

#[derive(Debug, Args)]
struct PlotArgs {
    /// Run reports (JSON).
    #[arg(required = true)]
    files: Vec<PathBuf>,
    /// A directory (gets waf.png, throughput.png, drilldown.png) or a file name whose stem
    /// prefixes the three charts (`out.svg` gives out-waf.svg, ...); .svg for SVG.
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
    let (w, h) = (args.width.clamp(200, 8000), args.height.clamp(150, 8000));
    let lines =
        [("waf", plots::waf_chart(&reports)), ("throughput", plots::throughput_chart(&reports))];
    for (name, chart) in &lines {
        let path = chart_path(&args.out, name);
        let bytes = if plot::is_svg_path(&path) {
            plot::line_chart_svg(chart, w, h).into_bytes()
        } else {
            plot::line_chart_png(chart, w, h)
        };
        super::write_file(&path, &bytes)?;
        println!("{}", path.display());
    }
    let bars = plots::drilldown_chart(&reports);
    let path = chart_path(&args.out, "drilldown");
    let bytes = if plot::is_svg_path(&path) {
        plot::bar_chart_svg(&bars, w, h).into_bytes()
    } else {
        plot::bar_chart_png(&bars, w, h)
    };
    super::write_file(&path, &bytes)?;
    println!("{}", path.display());
    Ok(())
}
