//! The sweep as 001's Tables 3-4 (markdown, measured beside eq. 9-12) and Figure 5 (charts).
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use super::model::{measured, Measure, Prediction};
use super::{Layout, LsmReport};
use crate::plot::{Chart, LineChart, Series};

/// 001 Tables 3 and 4 (Samsung 990 Pro, 128 GB) for k = 1, 2, 4, 8, 16, 32; columns F = 2, 4,
/// 8, 16, 32 and the single level. Seconds.
pub const PAPER_KS: [u32; 6] = [1, 2, 4, 8, 16, 32];
pub const PAPER_QUERY_S: [[f64; 6]; 6] = [
    [1870.0, 1490.0, 1150.0, 978.0, 1060.0, 627.0],
    [938.0, 745.0, 576.0, 490.0, 531.0, 314.0],
    [468.0, 372.0, 287.0, 245.0, 265.0, 157.0],
    [240.0, 191.0, 148.0, 125.0, 136.0, 80.6],
    [129.0, 102.0, 79.1, 67.2, 73.0, 43.2],
    [75.2, 59.8, 46.2, 39.3, 42.6, 25.2],
];
pub const PAPER_SCAN_S: [[f64; 6]; 6] = [
    [6700.0, 5920.0, 4700.0, 4070.0, 3940.0, 3050.0],
    [3420.0, 3030.0, 2410.0, 2100.0, 2020.0, 1570.0],
    [1780.0, 1590.0, 1270.0, 1100.0, 1070.0, 835.0],
    [994.0, 892.0, 719.0, 628.0, 606.0, 481.0],
    [624.0, 568.0, 462.0, 406.0, 391.0, 317.0],
    [462.0, 425.0, 350.0, 308.0, 297.0, 249.0],
];
pub const PAPER_INSERT_S: [[f64; 6]; 6] = [
    [3.69e4, 3.60e4, 3.72e4, 3.81e4, 3.87e4, 3.48e5],
    [1.91e4, 1.68e4, 1.71e4, 1.71e4, 1.85e4, 2.70e4],
    [1.15e4, 1.05e4, 1.04e4, 1.11e4, 1.24e4, 1.46e4],
    [8.47e3, 7.55e3, 7.65e3, 8.16e3, 9.48e3, 9.21e3],
    [5.93e3, 5.50e3, 5.67e3, 6.71e3, 7.86e3, 7.40e3],
    [4.00e3, 4.48e3, 4.95e3, 5.62e3, 7.02e3, 6.21e3],
];
const PAPER_COLUMNS: [&str; 6] = ["F=2", "F=4", "F=8", "F=16", "F=32", "S.L."];

const MEASURES: [(Measure, &str, &str); 3] = [
    (Measure::Query, "Total query times (s), readrandom", "eq. 10 / 12"),
    (Measure::Scan, "Total scan times (s), seekrandom", "eq. 10 / 12 + X(t/T + alpha/B)"),
    (
        Measure::Insert,
        "Total insert times (s), filluniquerandom until compaction ends",
        "eq. 9 / 11",
    ),
];

fn prediction(report: &LsmReport, layout: Layout, k: u32) -> Option<&Prediction> {
    report.predictions.iter().find(|p| p.layout == layout && p.k == k)
}

/// A cell's measured seconds and the model's (times its constant).
type Cell = (Option<f64>, Option<f64>);

fn cell(report: &LsmReport, layout: Layout, k: u32, m: Measure) -> Cell {
    let got = measured(&report.fills, &report.reads, layout, k, m);
    let model = prediction(report, layout, k).map(|p| p.get(m) * report.constants.get(m));
    (got, model)
}

fn seconds(v: f64) -> String {
    if v < 1.0 {
        format!("{v:.3}")
    } else if v >= 100.0 {
        format!("{v:.0}")
    } else if v >= 10.0 {
        format!("{v:.1}")
    } else {
        format!("{v:.2}")
    }
}

/// Everything the command prints: the scale, the three tables, the per-layout figures, the
/// orderings, and 001's tables.
pub fn render_markdown(report: &LsmReport) -> String {
    let sweep = &report.sweep;
    let mut out = format!(
        "### 001 Tables 3-4 on this disk: RocksDB fanout against concurrency (scale {})\n\n{}\n\n\
         {}; profile {}; the sweep took {:.0} s. Each cell: measured (model), the model being \
         eq. 9-12 costed with the profile at k, times one constant per table (001 does the same: \
         only shapes compare).\n",
        sweep.name,
        report.scale_note,
        report.db_bench_version,
        report.profile_source,
        report.elapsed_s
    );
    for (m, title, eq) in MEASURES {
        let _ = write!(out, "\n#### {title}: measured ({eq} x {:.3})\n\n", report.constants.get(m));
        out.push_str(&header(sweep.layouts.iter().map(Layout::label)));
        for &k in &sweep.ks {
            let _ = write!(out, "| k = {k} |");
            for &layout in &sweep.layouts {
                let text = match cell(report, layout, k, m) {
                    (Some(got), Some(model)) => format!(" {} ({}) |", seconds(got), seconds(model)),
                    (Some(got), None) => format!(" {} |", seconds(got)),
                    _ => " - |".into(),
                };
                out.push_str(&text);
            }
            out.push('\n');
        }
    }
    out.push_str(&tail_table(report));
    out.push_str(&layout_table(report));
    out.push_str(&orderings(report));
    out.push_str(&paper_tables());
    out
}

fn header(columns: impl Iterator<Item = String>) -> String {
    let columns: Vec<String> = columns.collect();
    format!("| | {} |\n|---|{}\n", columns.join(" | "), "---|".repeat(columns.len()))
}

/// Seconds compaction went on after the load ended: the part of the insert time that is
/// compaction alone (the rest ran beside the load).
fn tail_table(report: &LsmReport) -> String {
    let sweep = &report.sweep;
    let mut out = String::from(
        "\n#### Compaction after the load (s): insert time minus db_bench's load time\n\n",
    );
    out.push_str(&header(sweep.layouts.iter().map(Layout::label)));
    for &k in &sweep.ks {
        let _ = write!(out, "| k = {k} |");
        for &layout in &sweep.layouts {
            let fill = report.fills.iter().find(|f| f.layout == layout && f.k == k);
            let text = fill.map_or("-".into(), |f| seconds(f.insert_s - f.load_s));
            let _ = write!(out, " {text} |");
        }
        out.push('\n');
    }
    out
}

/// Per layout: sorted runs and bytes written per byte loaded, against the model's counts.
fn layout_table(report: &LsmReport) -> String {
    let n = report.sweep.data_bytes() as f64;
    let mut out = String::from(
        "\n#### Per layout: sorted runs after the load, and bytes written by flushes and \
         compactions per byte loaded (write amplification), at each k\n\n\
         | layout | sorted runs (model C + levels) | files touched per flushed file (model) | \
         write amp. by k |\n|---|---|---|---|\n",
    );
    for &layout in &report.sweep.layouts {
        let fills: Vec<_> = report.fills.iter().filter(|f| f.layout == layout).collect();
        let runs = fills.last().map_or("-".into(), |f| f.sorted_runs.to_string());
        let amps: Vec<String> = fills
            .iter()
            .map(|f| {
                let written = (f.flush_bytes + f.compaction_write_bytes) as f64;
                format!("{}: {:.1}", f.k, written / n)
            })
            .collect();
        let model = report.predictions.iter().find(|p| p.layout == layout);
        let _ = writeln!(
            out,
            "| {} | {runs} ({}) | {} | {} |",
            layout.label(),
            model.map_or("-".into(), |p| format!("{:.1}", p.sorted_runs)),
            model.map_or("-".into(), |p| format!("{:.1}", p.files_touched)),
            amps.join(", ")
        );
    }
    out
}

/// The fastest layout of each k per measure, measured and by the model (its constant does not
/// change an ordering), and each layout's insert time at the smallest k over the largest.
fn orderings(report: &LsmReport) -> String {
    let sweep = &report.sweep;
    let mut out = String::from(
        "\n#### Orderings: the fastest layout at each k, measured (model)\n\n\
         | k | queries | scans | inserts |\n|---|---|---|---|\n",
    );
    for &k in &sweep.ks {
        let best = |m: Measure, pick: fn(Cell) -> Option<f64>| {
            sweep
                .layouts
                .iter()
                .filter_map(|&l| pick(cell(report, l, k, m)).map(|v| (l, v)))
                .min_by(|a, b| a.1.total_cmp(&b.1))
                .map_or("-".into(), |(l, _)| l.label())
        };
        let _ = write!(out, "| {k} |");
        for m in [Measure::Query, Measure::Scan, Measure::Insert] {
            let _ = write!(out, " {} ({}) |", best(m, |c| c.0), best(m, |c| c.1));
        }
        out.push('\n');
    }
    let (Some(&k_lo), Some(&k_hi)) = (sweep.ks.first(), sweep.ks.last()) else { return out };
    let _ = write!(out, "\nInsert time at k = {k_lo} over k = {k_hi}, measured (model): ");
    let ratios: Vec<String> = sweep
        .layouts
        .iter()
        .map(|&l| {
            let (lo, hi) =
                (cell(report, l, k_lo, Measure::Insert), cell(report, l, k_hi, Measure::Insert));
            let ratio = |a: Option<f64>, b: Option<f64>| match (a, b) {
                (Some(a), Some(b)) if b > 0.0 => format!("{:.2}", a / b),
                _ => "-".into(),
            };
            format!("{} {} ({})", l.label(), ratio(lo.0, hi.0), ratio(lo.1, hi.1))
        })
        .collect();
    let _ = writeln!(out, "{}.", ratios.join("; "));
    out
}

/// 001's published Tables 3 and 4, for the rows of k = 1-32.
fn paper_tables() -> String {
    let mut out = String::from(
        "\n#### 001 (Samsung 990 Pro, 6.4e7 keys, 128 GB, RocksDB 8.6.7), Tables 3-4, seconds\n",
    );
    for (title, table) in [
        ("queries", &PAPER_QUERY_S),
        ("scans", &PAPER_SCAN_S),
        ("inserts (compaction)", &PAPER_INSERT_S),
    ] {
        let _ = write!(out, "\n{title}:\n\n");
        out.push_str(&header(PAPER_COLUMNS.iter().map(|c| c.to_string())));
        for (k, row) in PAPER_KS.iter().zip(table.iter()) {
            let cells: Vec<String> = row.iter().map(|&v| seconds(v)).collect();
            let _ = writeln!(out, "| k = {k} | {} |", cells.join(" | "));
        }
    }
    out
}

/// 001 Figure 5: seconds against log2 F for the leveled layouts, one measured line and one
/// model line (times its constant) per k.
pub fn chart(report: &LsmReport, m: Measure) -> LineChart {
    let (_, title, _) = MEASURES.iter().find(|x| x.0 == m).copied().unwrap_or(MEASURES[0]);
    let mut series = Vec::new();
    for &k in &report.sweep.ks {
        let (mut got, mut model) = (Vec::new(), Vec::new());
        for &layout in &report.sweep.layouts {
            let Layout::Leveled { fanout } = layout else { continue };
            let x = f64::from(fanout).log2();
            let (g, p) = cell(report, layout, k, m);
            got.extend(g.map(|v| (x, v)));
            model.extend(p.map(|v| (x, v)));
        }
        series.push(Series::new(format!("k={k} measured"), got));
        series.push(Series::new(format!("k={k} model"), model));
    }
    let mut chart = LineChart::of_series(
        &format!("001 Fig. 5 on this disk: {title}"),
        "log2 F (fanout)",
        "seconds",
        series,
    );
    chart.x_from_zero = false;
    chart
}

/// Writes STEM-queries, STEM-scans and STEM-inserts (.png, or .svg for an .svg stem).
pub fn write_figures(report: &LsmReport, stem: &Path) -> std::io::Result<Vec<PathBuf>> {
    let svg = crate::plot::is_svg_path(stem);
    let mut paths = Vec::new();
    for (suffix, m) in
        [("queries", Measure::Query), ("scans", Measure::Scan), ("inserts", Measure::Insert)]
    {
        let path = super::super::figure_path(stem, suffix, svg);
        std::fs::write(&path, super::super::render_chart(Chart::Line(chart(report, m)), svg)?)?;
        paths.push(path);
    }
    Ok(paths)
}
