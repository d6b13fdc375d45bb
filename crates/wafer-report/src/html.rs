//! One self-contained HTML file: inline CSS, charts as inline SVG, no script and no external
//! resource, so it reads the same offline, from a mail attachment or a CI artifact.
use std::fmt::Write as _;

use html_escape::encode_text;

use super::charts::{self, LatencyTimeline, VictimHistogram};
use super::machine::MachineInfo;
use wafer_harness::metrics::{Figures, RunReport};
use wafer_harness::runner::table::{self, Row};
use wafer_plot::{render_svg, Chart, PlotError};

/// Chart size in the page, pixels (the SVG scales down with the window).
const CHART_PX: (u32, u32) = (960, 540);

/// 000 Table 1 as published (Samsung PM9A3, 800 GB dataset, 64 threads): label, K OPS, DB WAF,
/// SSD WAF, logical and physical bytes per operation, hit ratio. For side-by-side reading only;
/// absolute OPS do not compare across machines.
pub const TABLE1_PAPER_ROWS: [(&str, u32, f64, f64, u32, u32, f64); 7] = [
    ("in-place", 229, 2.00, 2.36, 1858, 4378, 0.932),
    ("-> out-of-place", 230, 4.06, 1.94, 3745, 7274, 0.918),
    ("+ comp. + pagepack", 380, 0.62, 1.95, 566, 566, 0.929),
    ("+ GDT", 458, 0.59, 1.96, 566, 1110, 0.931),
    ("+ NoWA", 510, 0.60, 1.07, 567, 606, 0.931),
    ("+ aligning GC unit", 535, 0.60, 1.00, 567, 567, 0.931),
    ("- comp.", 328, 3.58, 1.00, 3364, 3364, 0.927),
];

/// The columns a published table and a measured one share: name and decimals.
pub(crate) const COMPARED: [(&str, usize); 7] = [
    ("K OPS", 0),
    // 000 printed its artifact's victim formula, so that is the DB WAF compared with it.
    ("DB WAF vict.", 2),
    ("SSD WAF", 2),
    ("total WAF", 2),
    ("logical B/op", 0),
    ("physical B/op", 0),
    ("hit ratio", 3),
];

/// The [`COMPARED`] figures of a measured row.
pub(crate) fn compared_figures(f: &Figures) -> [Option<f64>; 7] {
    let per_op = |bytes: u64| (f.ops > 0).then(|| bytes as f64 / f.ops as f64);
    let physical = f.physical_bytes_per_op.and(per_op(f.bytes.flash));
    [
        f.ops_per_sec.map(|o| o / 1000.0),
        f.db_waf_victim,
        f.ssd_waf,
        f.total_waf,
        per_op(f.bytes.db_issued),
        physical,
        f.buffer_hit_ratio,
    ]
}

/// A published table: a caption and, per row label, its [`COMPARED`] figures.
#[derive(Debug, Clone, PartialEq)]
pub struct PaperTable {
    pub caption: String,
    pub rows: Vec<(String, [Option<f64>; 7])>,
}

impl PaperTable {
    /// 000 Table 1 as published.
    pub fn table1_000() -> PaperTable {
        let rows = TABLE1_PAPER_ROWS
            .iter()
            .map(|&(label, ops, db, ssd, logical, physical, hit)| {
                let figures = [
                    Some(f64::from(ops)),
                    Some(db),
                    Some(ssd),
                    Some(db * ssd),
                    Some(f64::from(logical)),
                    Some(f64::from(physical)),
                    Some(hit),
                ];
                (label.to_string(), figures)
            })
            .collect();
        PaperTable {
            caption:
                "000 Table 1 as published: Samsung PM9A3, 800 GB dataset, 64 threads (absolute \
                      OPS do not compare across machines; the physical column is as printed)"
                    .into(),
            rows,
        }
    }

    /// The published figures of a row; a run label's ` [scale]` suffix is ignored.
    pub fn row(&self, label: &str) -> Option<&[Option<f64>; 7]> {
        let base = label.rsplit_once(" [").map_or(label, |(head, _)| head);
        self.rows.iter().find(|(l, _)| l == base).map(|(_, f)| f)
    }
}

/// Everything one report shows.
#[derive(Debug, Clone)]
pub struct Document {
    pub title: String,
    /// Paragraphs of plain text under the title.
    pub notes: Vec<String>,
    pub runs: Vec<RunReport>,
    /// The measured table, including rows that could not run and why.
    pub rows: Vec<Row>,
    pub paper: Option<PaperTable>,
    pub victim_histograms: Vec<VictimHistogram>,
    pub latency_timelines: Vec<LatencyTimeline>,
    pub machine: MachineInfo,
}

impl Document {
    /// A report of run reports, one table row per run; 000's published Table 1 goes beside the
    /// rows when a run's label names one of its rows.
    pub fn of_runs(title: &str, runs: &[RunReport]) -> Document {
        let rows = runs
            .iter()
            .zip(charts::run_labels(runs))
            .map(|(r, label)| Row { label, figures: Ok(r.summary) })
            .collect::<Vec<_>>();
        let paper = PaperTable::table1_000();
        let matches = rows.iter().any(|r| paper.row(&r.label).is_some());
        let victim_histograms = runs
            .iter()
            .zip(charts::run_labels(runs))
            .filter_map(|(r, label)| VictimHistogram::of_run(&label, r))
            .collect();
        Document {
            title: title.to_string(),
            notes: Vec::new(),
            runs: runs.to_vec(),
            rows,
            paper: matches.then_some(paper),
            victim_histograms,
            latency_timelines: Vec::new(),
            machine: MachineInfo::current(),
        }
    }

    /// The charts in page order; kinds without data are left out.
    pub fn charts(&self) -> Vec<Chart> {
        let mut out = Vec::new();
        if let Some(paper) = &self.paper {
            out.extend(self.paper_charts(paper));
        }
        if !self.runs.is_empty() {
            out.push(charts::waf_per_configuration(&self.runs));
            out.push(charts::write_drilldown(&self.runs));
            out.push(charts::throughput_over_time(&self.runs));
            out.push(charts::latency_percentiles(&self.runs));
            out.extend(charts::db_victim_valid_cdf(&self.runs));
        }
        if !self.latency_timelines.is_empty() {
            out.push(charts::latency_over_time(&self.latency_timelines));
        }
        if !self.victim_histograms.is_empty() {
            out.push(charts::victim_valid_cdf(&self.victim_histograms));
        }
        out
    }

    /// Total WAF and physical bytes per operation, measured beside published, per row.
    fn paper_charts(&self, paper: &PaperTable) -> Vec<Chart> {
        let column = |index: usize| -> Vec<(String, Option<f64>, Option<f64>)> {
            self.rows
                .iter()
                .filter_map(|row| {
                    let measured =
                        row.figures.as_ref().ok().and_then(|f| compared_figures(f)[index]);
                    let published = paper.row(&row.label).and_then(|p| p[index]);
                    (measured.is_some() || published.is_some())
                        .then(|| (row.label.clone(), measured, published))
                })
                .collect()
        };
        vec![
            charts::measured_beside_paper(
                "Total WAF, measured beside 000 Table 1",
                "total WAF (flash bytes / user bytes)",
                &column(3),
            ),
            charts::measured_beside_paper(
                "Flash bytes per operation, measured beside 000 Table 1",
                "physical bytes per operation (B/op)",
                &column(5),
            ),
        ]
    }
}

const STYLE: &str = "body{font-family:system-ui,-apple-system,'Segoe UI',sans-serif;max-width:1180px;\
margin:24px auto;padding:0 16px;color:#1e1e1e;line-height:1.45}\
h1{font-size:1.6em}h2{font-size:1.25em;margin-top:2em;border-bottom:1px solid #ddd}\
table{border-collapse:collapse;margin:12px 0;font-size:.9em}\
th,td{border:1px solid #d6d6d6;padding:3px 8px}th{background:#f3f3f3}\
td.num{text-align:right;font-variant-numeric:tabular-nums}td.paper{color:#555;background:#fafafa}\
.note{color:#8a4b00;font-size:.85em}div.wide{overflow-x:auto}figure{margin:16px 0}figure svg{max-width:100%;height:auto}\
pre{background:#f6f6f6;padding:8px;overflow:auto;font-size:.85em}";

/// The whole page.
pub fn render(doc: &Document) -> Result<String, PlotError> {
    let mut out = String::with_capacity(256 << 10);
    let title = encode_text(&doc.title);
    let _ = write!(
        out,
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\
         <link rel=\"icon\" href=\"data:,\"><title>{title}</title><style>{STYLE}</style></head>\
         <body>\n<h1>{title}</h1>\n"
    );
    for note in &doc.notes {
        let _ = writeln!(out, "<p>{}</p>", encode_text(note));
    }
    if let Some(paper) = &doc.paper {
        comparison_table(&mut out, doc, paper);
    }
    charts_section(&mut out, &doc.charts())?;
    measured_table(&mut out, &doc.rows);
    latency_table(&mut out, &doc.runs);
    configurations(&mut out, &doc.runs);
    machine_table(&mut out, &doc.machine);
    out.push_str("</body></html>\n");
    Ok(out)
}

fn num_cell(out: &mut String, value: Option<f64>, digits: usize, class: &str) {
    let text = value.map_or_else(|| "–".to_string(), |v| format!("{v:.digits$}"));
    let _ = write!(out, "<td class=\"num{class}\">{text}</td>");
}

/// Per row and column: the measured figure, then the published one.
fn comparison_table(out: &mut String, doc: &Document, paper: &PaperTable) {
    let _ =
        writeln!(out, "<h2>Measured beside published</h2>\n<p>{}</p>", encode_text(&paper.caption));
    out.push_str("<div class=\"wide\"><table><tr><th rowspan=\"2\">configuration</th>");
    for (name, _) in COMPARED {
        let _ = write!(out, "<th colspan=\"2\">{}</th>", encode_text(name));
    }
    out.push_str("</tr>\n<tr>");
    for _ in COMPARED {
        out.push_str("<th>measured</th><th>000</th>");
    }
    out.push_str("</tr>\n");
    for row in &doc.rows {
        let _ = write!(out, "<tr><td>{}", encode_text(&row.label));
        // Why a row has no measurement, under its name (a column of its own would not fit).
        if let Err(reason) = &row.figures {
            let _ = write!(out, "<br><span class=\"note\">{}</span>", encode_text(reason));
        }
        out.push_str("</td>");
        let measured = row.figures.as_ref().ok().map(compared_figures);
        let published = paper.row(&row.label);
        for (i, (_, digits)) in COMPARED.iter().enumerate() {
            num_cell(out, measured.and_then(|m| m[i]), *digits, "");
            num_cell(out, published.and_then(|p| p[i]), *digits, " paper");
        }
        out.push_str("</tr>\n");
    }
    out.push_str("</table></div>\n");
}

fn charts_section(out: &mut String, charts: &[Chart]) -> Result<(), PlotError> {
    if charts.is_empty() {
        return Ok(());
    }
    out.push_str("<h2>Charts</h2>\n");
    for chart in charts {
        let svg = render_svg(chart, CHART_PX)?;
        // The chart draws its own title; the figure needs no caption.
        let _ = writeln!(out, "<figure>{svg}</figure>");
    }
    Ok(())
}

fn measured_table(out: &mut String, rows: &[Row]) {
    if rows.is_empty() {
        return;
    }
    out.push_str(
        "<h2>Measured</h2>\n<p>Cumulative figures of the measured phase; the drilldown columns \
         (user to WAL) are bytes per operation, and WAL is outside the WAF figures.</p>\n\
         <div class=\"wide\"><table><tr>",
    );
    for header in table::HEADERS {
        let _ = write!(out, "<th>{}</th>", encode_text(header));
    }
    out.push_str("</tr>\n");
    for row in rows {
        let _ = write!(out, "<tr><td>{}</td>", encode_text(&row.label));
        match &row.figures {
            Ok(f) => {
                for cell in table::cells(f) {
                    let _ = write!(out, "<td class=\"num\">{}</td>", encode_text(&cell));
                }
            }
            Err(reason) => {
                let span = table::HEADERS.len() - 1;
                let _ = write!(
                    out,
                    "<td class=\"note\" colspan=\"{span}\">{}</td>",
                    encode_text(reason)
                );
            }
        }
        out.push_str("</tr>\n");
    }
    out.push_str("</table></div>\n");
}

fn latency_table(out: &mut String, runs: &[RunReport]) {
    if runs.iter().all(|r| r.latency.is_empty()) {
        return;
    }
    out.push_str(
        "<h2>Latency</h2>\n<table><tr><th>run</th><th>operation</th><th>count</th><th>p50 (µs)</th>\
         <th>p90 (µs)</th><th>p99 (µs)</th><th>p99.9 (µs)</th><th>max (µs)</th></tr>\n",
    );
    for (run, label) in runs.iter().zip(charts::run_labels(runs)) {
        for (kind, s) in &run.latency {
            let _ =
                write!(out, "<tr><td>{}</td><td>{}</td>", encode_text(&label), encode_text(kind));
            let _ = write!(out, "<td class=\"num\">{}</td>", s.count);
            for ns in [s.p50_ns, s.p90_ns, s.p99_ns, s.p999_ns, s.max_ns] {
                num_cell(out, Some(ns as f64 / 1000.0), 1, "");
            }
            out.push_str("</tr>\n");
        }
    }
    out.push_str("</table>\n");
}

fn configurations(out: &mut String, runs: &[RunReport]) {
    if runs.is_empty() {
        return;
    }
    out.push_str("<h2>Configurations</h2>\n");
    for (run, label) in runs.iter().zip(charts::run_labels(runs)) {
        let pretty = |v: &serde_json::Value| serde_json::to_string_pretty(v).unwrap_or_default();
        let _ = writeln!(
            out,
            "<details><summary>{} (config {}, seed {}, {} threads)</summary>\
             <pre>{}</pre><p>Observed by the runner:</p><pre>{}</pre></details>",
            encode_text(&label),
            encode_text(&run.config_hash),
            run.seed,
            run.threads,
            encode_text(&pretty(&run.config)),
            encode_text(&pretty(&run.observed)),
        );
    }
}

fn machine_table(out: &mut String, machine: &MachineInfo) {
    out.push_str("<h2>Machine</h2>\n<table>");
    for (name, value) in machine.rows() {
        let _ = writeln!(out, "<tr><th>{name}</th><td>{}</td></tr>", encode_text(&value));
    }
    out.push_str("</table>\n");
}
