//! 000 Figure 13 (sec. 7.2): where the writes of each configuration come from, at the dataset
//! size (90% of the device) of Table 1, with compression (13b) and without (13c); the valid
//! ratio of the DB GC victims as a CDF (000: 75% for the naive out-of-place row, 14% once
//! compression frees space); and, with `sizes`, total WAF per dataset size (13a, the sweep
//! [`super::fig15`] runs).
//!
//! Every configuration is a Table 1 row ([`super::table1::ROWS`]) run as `table1` runs it.
//! 000's Figure 13c rows without compression that Table 1 does not list ("+ NoWA" without
//! compression) are the row's configuration with compression turned off; rows whose
//! optimization the engine lacks are listed as not implemented, never faked.
use super::fig15::{self, Fig15Point};
use super::table1::{self, ExperimentError, RowPlan, RowSetup, Scale};
use crate::metrics::{Figures, RunReport};
use crate::plot::{BarChart, Chart};
use crate::progress::Progress;
use crate::runner::engine::WriteModeChoice;
use std::fmt::Write as _;

/// The panels of 000 Figure 13 a configuration appears in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub enum Panel {
    /// 13b: the optimizations in turn, compression and page packing from the third on.
    Compressed,
    /// 13c: the same without compression and page packing.
    Uncompressed,
}

/// One configuration: a Table 1 row, possibly with compression turned off.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Fig13Plan {
    pub plan: RowPlan,
    /// The row's configuration with compression off (a 13c row Table 1 does not list).
    pub without_compression: bool,
    pub panels: &'static [Panel],
}

const BOTH: &[Panel] = &[Panel::Compressed, Panel::Uncompressed];
const COMPRESSED: &[Panel] = &[Panel::Compressed];
const UNCOMPRESSED: &[Panel] = &[Panel::Uncompressed];

/// Table 1's row of that label (not an OP-sensitivity row), or a row that says it is missing
/// there (the row list changes as the engine grows).
fn table1_row(label: &'static str) -> RowPlan {
    table1::ROWS.iter().find(|r| r.label == label && r.preset.is_none()).copied().unwrap_or(
        RowPlan {
            label,
            write_mode: WriteModeChoice::OutOfPlace,
            setup: RowSetup::Mode,
            preset: None,
            missing: Some("not a row of table1"),
            fdp_device: false,
        },
    )
}

/// The configurations of Figures 13b and 13c in 000's order; in place and naive out of place
/// (no compression in either) appear in both.
pub fn plans() -> Vec<Fig13Plan> {
    let of =
        |label, panels| Fig13Plan { plan: table1_row(label), without_compression: false, panels };
    vec![
        of("in-place", BOTH),
        of("-> out-of-place", BOTH),
        of("+ comp. + pagepack", COMPRESSED),
        of("+ GDT", COMPRESSED),
        of("+ NoWA", COMPRESSED),
        of("+ aligning GC unit", COMPRESSED),
        of("+ GDT (no comp.)", UNCOMPRESSED),
        Fig13Plan {
            plan: RowPlan { label: "+ NoWA (no comp.)", ..table1_row("+ NoWA") },
            without_compression: true,
            panels: UNCOMPRESSED,
        },
        of("- comp.", UNCOMPRESSED),
    ]
}

impl Fig13Plan {
    /// The row's configuration at `scale` (compression off when the plan says so), labelled
    /// with the row's name.
    pub fn config(&self, scale: Scale) -> crate::runner::setup::BenchConfig {
        let mut config = self.plan.config(scale);
        if self.without_compression {
            config.engine.insert("compression".into(), toml::Value::String("none".into()));
            config.engine.remove("packing");
        }
        config.label = Some(self.plan.label.to_string());
        config
    }
}

/// Bytes written per logical user byte, by purpose (000 Figure 13b/c's bars): the DB's parts
/// sum to its DB WAF, and with the SSD's parts to total WAF. The WAL is outside both (000 sec.
/// 7.1) and kept apart.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Drilldown {
    /// User page writes as the device received them (below 1 when compressed).
    pub user: f64,
    pub doublewrite: f64,
    /// DB GC copies.
    pub db_gc: f64,
    /// NoWA compensation writes.
    pub compensation: f64,
    pub padding: f64,
    pub metadata: f64,
    /// SSD GC copies.
    pub ssd_gc: f64,
    /// Flash the SSD programmed as padding, and host bytes it programmed beyond those the DB
    /// counted (negative when some are still buffered).
    pub ssd_other: f64,
    pub wal: f64,
}

/// Names of the stacked parts, in [`Drilldown::parts`]' order.
pub const PARTS: [&str; 8] = [
    "user pages",
    "doublewrite",
    "DB GC copies",
    "NoWA compensation",
    "DB padding",
    "metadata",
    "SSD GC copies",
    "SSD padding / other",
];

impl Drilldown {
    /// The drilldown of a run's figures; None without user writes or flash counters.
    pub fn of(f: &Figures) -> Option<Drilldown> {
        let b = &f.bytes;
        f.ssd_waf?;
        let per_user = |bytes: u64| bytes as f64 / b.logical_user as f64;
        (b.logical_user > 0).then(|| Drilldown {
            user: per_user(b.user),
            doublewrite: per_user(b.doublewrite),
            db_gc: per_user(b.gc_copy),
            compensation: per_user(b.compensation),
            padding: per_user(b.padding),
            metadata: per_user(b.metadata),
            ssd_gc: per_user(b.ssd_gc),
            ssd_other: (b.flash_padding as f64 + b.flash_host as f64 - b.db_issued as f64)
                / b.logical_user as f64,
            wal: per_user(b.wal),
        })
    }

    pub fn parts(&self) -> [f64; 8] {
        [
            self.user,
            self.doublewrite,
            self.db_gc,
            self.compensation,
            self.padding,
            self.metadata,
            self.ssd_gc,
            self.ssd_other,
        ]
    }

    /// The DB's parts: DB WAF.
    pub fn db_waf(&self) -> f64 {
        self.parts()[..6].iter().sum()
    }

    /// Every part: total WAF.
    pub fn total_waf(&self) -> f64 {
        self.parts().iter().sum()
    }
}

/// One configuration's outcome.
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
pub struct Fig13Run {
    pub label: String,
    pub panels: Vec<Panel>,
    /// The report, or why the configuration did not run.
    pub result: Result<RunReport, String>,
}

impl Fig13Run {
    pub fn drilldown(&self) -> Option<Drilldown> {
        Drilldown::of(&self.result.as_ref().ok()?.summary)
    }
}

/// Everything Figure 13 measured.
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
pub struct Fig13Report {
    pub scale: String,
    /// The dataset size of the drilldown runs, as a fraction of the device.
    pub fill: f64,
    pub runs: Vec<Fig13Run>,
    /// 13a: total WAF per dataset size (empty unless asked for).
    pub sizes: Vec<Fig15Point>,
}

/// Dataset sizes of 13a below Table 1's 90% (whose runs the drilldown already has).
pub const SWEEP_FILLS: [f64; 4] = [0.2, 0.4, 0.6, 0.8];

/// What sees each run as it finishes: the configuration's label, the dataset's fill, the report
/// or why the configuration did not run.
pub type OnRun<'a> = dyn FnMut(&str, f64, &Result<RunReport, String>) + 'a;

/// Runs every configuration at 90% and, with `sizes`, 13b's at the smaller sizes too;
/// `on_run` sees each run (label, fill) as it finishes.
pub fn run(
    scale: Scale,
    sizes: bool,
    progress: &mut dyn Progress,
    on_run: &mut OnRun<'_>,
) -> Result<Fig13Report, ExperimentError> {
    let fill = scale.base_config().fill.unwrap_or(0.9);
    let mut runs = Vec::new();
    for p in plans() {
        let result = match p.plan.unavailable() {
            Some(reason) => Err(reason),
            None => Ok(super::run_config(p.plan.label, &p.config(scale), progress)?),
        };
        on_run(p.plan.label, fill, &result);
        runs.push(Fig13Run { label: p.plan.label.into(), panels: p.panels.to_vec(), result });
    }
    let mut points = Vec::new();
    if sizes {
        let sweep = sweep_plans();
        points = fig15::sweep(scale, &sweep, &SWEEP_FILLS, progress, &mut |p| {
            on_run(&p.label, p.fill, &p.result)
        })?;
        // The 90% points are the drilldown's runs.
        for plan in &sweep {
            if let Some(run) = runs.iter().find(|r| r.label == plan.label) {
                let result = run.result.clone();
                points.push(Fig15Point { label: run.label.clone(), fill, result });
            }
        }
    }
    Ok(Fig13Report { scale: scale.name().into(), fill, runs, sizes: points })
}

/// 13a's configurations: 13b's, as 000 plots them per dataset size.
pub fn sweep_plans() -> Vec<RowPlan> {
    plans().iter().filter(|p| p.panels.contains(&Panel::Compressed)).map(|p| p.plan).collect()
}

/// 000's DB WAF and total WAF of 13b's configurations (Table 1: "the 800 GB experiments in
/// Figure 13").
fn paper_compressed(label: &str) -> (Option<f64>, Option<f64>) {
    table1::PAPER_ROWS
        .iter()
        .find(|r| r.0 == label)
        .map_or((None, None), |r| (Some(r.2), Some(r.2 * r.3)))
}

/// 000's figures for 13c (sec. 7.2 text; Table 1's in-place and "- comp." rows): naive DB WAF
/// 4.02 (Table 1: 4.06), GDT 3.36, NoWA 3.58; all optimizations 3.58 total.
fn paper_uncompressed(label: &str) -> (Option<f64>, Option<f64>) {
    match label {
        "in-place" => (Some(2.00), Some(4.72)),
        "-> out-of-place" => (Some(4.02), None),
        "+ GDT (no comp.)" => (Some(3.36), None),
        "+ NoWA (no comp.)" => (Some(3.58), None),
        "- comp." => (Some(3.58), Some(3.58)),
        _ => (None, None),
    }
}

fn fixed(v: Option<f64>) -> String {
    v.map_or_else(|| "-".into(), two_places)
}

/// Two decimals, a value that rounds to zero as `0.00` (never `-0.00`).
fn two_places(v: f64) -> String {
    let v = if v.abs() < 0.005 { 0.0 } else { v };
    format!("{v:.2}")
}

/// One panel's drilldown table, 000's figures beside.
fn render_panel(out: &mut String, runs: &[Fig13Run], panel: Panel) {
    out.push_str(
        "| configuration | user | doublewrite | DB GC | NoWA comp. | padding | metadata | **DB WAF** | DB WAF vict. | SSD GC | SSD other | **total WAF** | WAL (outside WAF) | 000 DB WAF (vict.) | 000 total WAF |\n",
    );
    out.push_str("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n");
    for run in runs.iter().filter(|r| r.panels.contains(&panel)) {
        let (paper_db, paper_total) = match panel {
            Panel::Compressed => paper_compressed(&run.label),
            Panel::Uncompressed => paper_uncompressed(&run.label),
        };
        let _ = write!(out, "| {} |", run.label);
        match (&run.result, run.drilldown()) {
            (Ok(r), Some(d)) => {
                // The DB's parts, **DB WAF** and 000's metric of it, then the SSD's parts.
                let mut cells: Vec<String> =
                    d.parts()[..6].iter().map(|v| two_places(*v)).collect();
                cells.push(format!("**{}**", two_places(d.db_waf())));
                cells.push(fixed(r.summary.db_waf_victim));
                cells.extend([d.ssd_gc, d.ssd_other].map(two_places));
                for cell in &cells {
                    let _ = write!(out, " {cell} |");
                }
                let _ = write!(out, " **{}** | {} |", two_places(d.total_waf()), two_places(d.wal));
            }
            (Ok(_), None) => out.push_str(&" - |".repeat(12)),
            (Err(reason), _) => {
                let _ = write!(out, " {reason} |{}", " |".repeat(11));
            }
        }
        let _ = writeln!(out, " {} | {} |", fixed(paper_db), fixed(paper_total));
    }
}

/// Bins of the victims' CDF the table shows: share of victims at or below 10, 25, 50, 75, 90%.
const CDF_COLUMNS: [(usize, &str); 5] =
    [(1, "≤ 10%"), (4, "≤ 25%"), (9, "≤ 50%"), (14, "≤ 75%"), (17, "≤ 90%")];

fn render_victims(out: &mut String, runs: &[Fig13Run]) {
    out.push_str("| configuration | victims | mean valid ratio |");
    for (_, name) in CDF_COLUMNS {
        let _ = write!(out, " {name} |");
    }
    out.push_str("\n|---|---:|---:|");
    out.push_str(&"---:|".repeat(CDF_COLUMNS.len()));
    out.push('\n');
    for run in runs {
        let Ok(r) = &run.result else { continue };
        let (Some(cdf), Some(mean)) =
            (r.summary.gc_victim_valid_cdf, r.summary.gc_victim_valid_ratio)
        else {
            continue;
        };
        let _ = write!(out, "| {} | {} | {:.1}% |", run.label, r.summary.gc_victims, mean * 100.0);
        for (bin, _) in CDF_COLUMNS {
            let _ = write!(out, " {:.2} |", cdf[bin]);
        }
        out.push('\n');
    }
}

/// The three tables (and 13a's with `sizes`), comparable to 000's figures.
pub fn render_markdown(report: &Fig13Report) -> String {
    let runs = &report.runs[..];
    type Render = fn(&mut String, &[Fig13Run]);
    let sections: [(&str, &str, Render, &str); 3] = [
        (
            "13b",
            "write drilldown with compression (bytes written per user page byte; YCSB-A zipf 0.8, 90% full)",
            |out, runs| render_panel(out, runs, Panel::Compressed),
            "000 (PM9A3, 800 GB): the doublewrite buffer is half of in-place DB writes; out of place raises total WAF 1.66x (4.72 -> 7.88); compression and GDT cut DB GC; NoWA with aligned GC units removes SSD GC (total 0.60).",
        ),
        (
            "13c",
            "write drilldown without compression",
            |out, runs| render_panel(out, runs, Panel::Uncompressed),
            "000: all optimizations 1.31x below in place (\"31%\") and 2.18x below naive out of place; GDT DB WAF 4.02 -> 3.36, NoWA 3.58.",
        ),
        (
            "13",
            "DB GC victims' valid ratio (share of victims at or below)",
            render_victims,
            "000 sec. 7.2: victims' valid ratio 75% out of place, 14% with compression.",
        ),
    ];
    let mut out = String::new();
    for (figure, what, render, paper) in sections {
        let _ = write!(out, "### 000 Figure {figure} at the {} scale: {what}\n\n", report.scale);
        render(&mut out, runs);
        let _ = write!(out, "\n{paper}\n\n");
    }
    if !report.sizes.is_empty() {
        let fills: Vec<f64> = {
            let mut f: Vec<f64> = report.sizes.iter().map(|p| p.fill).collect();
            f.sort_by(f64::total_cmp);
            f.dedup();
            f
        };
        let _ = write!(
            out,
            "### 000 Figure 13a at the {} scale: total WAF per dataset size (% of the device)\n\n",
            report.scale
        );
        out.push_str(&fig15::render_sweep(&sweep_plans(), &fills, &report.sizes));
        out.push_str(
            "\n000 (PM9A3): 160 GB 2.33 -> 0.53 (4.4x), 800 GB 4.72 -> 0.60 (7.8x) from in place to all optimizations.\n\n",
        );
    }
    out
}

/// One panel as stacked bars, one per configuration that ran.
pub fn drilldown_chart(report: &Fig13Report, panel: Panel) -> BarChart {
    let ran: Vec<(&Fig13Run, Drilldown)> = report
        .runs
        .iter()
        .filter(|r| r.panels.contains(&panel))
        .filter_map(|r| Some((r, r.drilldown()?)))
        .collect();
    let what = match panel {
        Panel::Compressed => "13b: write drilldown with compression",
        Panel::Uncompressed => "13c: write drilldown without compression",
    };
    BarChart {
        title: format!("000 Fig. {what} ({} scale)", report.scale),
        y_label: "bytes written per user page byte (WAF)".into(),
        groups: ran.iter().map(|(r, _)| r.label.clone()).collect(),
        series_labels: PARTS.iter().map(|s| s.to_string()).collect(),
        // A negative "other" (bytes still buffered in the SSD) would draw below the axis.
        values: ran.iter().map(|(_, d)| d.parts().map(|v| v.max(0.0)).to_vec()).collect(),
        stacked: true,
    }
}

/// The figure's charts with the file suffix each goes under.
pub fn charts(report: &Fig13Report) -> Vec<(&'static str, Chart)> {
    let mut out = vec![
        ("drilldown-comp", Chart::Bar(drilldown_chart(report, Panel::Compressed))),
        ("drilldown-nocomp", Chart::Bar(drilldown_chart(report, Panel::Uncompressed))),
    ];
    let runs: Vec<RunReport> =
        report.runs.iter().filter_map(|r| r.result.as_ref().ok().cloned()).collect();
    if let Some(cdf) = crate::report::charts::db_victim_valid_cdf(&runs) {
        out.push(("victims-cdf", cdf));
    }
    if !report.sizes.is_empty() {
        let title = "000 Fig. 13a: total WAF per dataset size (YCSB-A)";
        out.push(("sizes", Chart::Line(fig15::sweep_chart(title, &sweep_plans(), &report.sizes))));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plans_follow_000_and_name_what_is_missing() {
        let p = plans();
        let in_panel = |panel| p.iter().filter(move |x| x.panels.contains(&panel)).count();
        assert_eq!((in_panel(Panel::Compressed), in_panel(Panel::Uncompressed)), (6, 5));
        for x in &p {
            if let Some(reason) = x.plan.unavailable() {
                assert!(reason.starts_with("not yet implemented"), "{}: {reason}", x.plan.label);
            }
        }
        // The derived 13c row is its compressed row with compression off.
        let nowa = p.iter().find(|x| x.without_compression).unwrap();
        let config = nowa.config(Scale::Tiny);
        assert_eq!(config.engine.get("compression").and_then(|v| v.as_str()), Some("none"));
    }

    #[test]
    fn tiny_fig13_drilldown_sums_to_the_run_figures() {
        let report =
            run(Scale::Tiny, false, &mut crate::progress::Silent, &mut |_, _, _| {}).unwrap();
        assert_eq!(report.runs.len(), plans().len());
        let runnable = plans().iter().filter(|p| p.plan.unavailable().is_none()).count();
        let ran: Vec<&Fig13Run> = report.runs.iter().filter(|r| r.result.is_ok()).collect();
        assert_eq!(ran.len(), runnable);
        for run in &ran {
            let f = &run.result.as_ref().unwrap().summary;
            let d = run.drilldown().unwrap();
            let close = |a: f64, b: f64| (a - b).abs() <= 1e-9 * b.max(1.0);
            assert!(close(d.db_waf(), f.db_waf.unwrap()), "{}: {d:?} vs {:?}", run.label, f.db_waf);
            assert!(close(d.total_waf(), f.total_waf.unwrap()), "{}: {d:?}", run.label);
        }
        let by = |label: &str| report.runs.iter().find(|r| r.label == label).unwrap();
        let (dwb, oop) =
            (by("in-place").drilldown().unwrap(), by("-> out-of-place").drilldown().unwrap());
        // In place: a doublewrite copy per page written; out of place: DB GC copies instead.
        assert!(dwb.doublewrite >= dwb.user && dwb.db_gc == 0.0, "{dwb:?}");
        assert!(oop.doublewrite == 0.0 && oop.db_gc > 0.0, "{oop:?}");
        let comp = by("+ comp. + pagepack").drilldown().unwrap();
        assert!(comp.user < 0.8 && comp.db_gc < oop.db_gc, "{comp:?} vs {oop:?}");
        let text = render_markdown(&report);
        assert!(text.contains("Figure 13c") && !text.contains("not yet implemented"), "{text}");
        let charts = charts(&report);
        assert!(charts.iter().any(|(name, _)| *name == "victims-cdf"));
        let Chart::Bar(b) = &charts[0].1 else { panic!("13b is a bar chart") };
        assert_eq!(b.groups.len(), 6, "in place .. aligned NoWA: {:?}", b.groups);
        // NoWA with aligned zones: the SSD's GC copies next to nothing.
        let aligned = by("+ aligning GC unit").drilldown().unwrap();
        assert!(aligned.ssd_gc < 0.25 * comp.ssd_gc.max(1e-9), "{aligned:?} vs {comp:?}");
    }
}
