//! NoWA's two ways of correcting imbalance (engine option `nowa_mode`) side by side in Table 1's
//! geometry: `unit` compensates whole estimated SSD units in GC cycles of their own; `group`
//! balances the zones opened together the way 000's artifact does, only when GC runs anyway.
//! Each of Table 1's NoWA rows runs in both modes, with its "+ GDT" row (no NoWA) as the
//! reference, and the chart puts DB WAF against SSD WAF: the trade-off between the two.
use super::table1::{self, ExperimentError, RowPlan, Scale};
use crate::metrics::RunReport;
use crate::plot::{LineChart, Series};
use crate::progress::Progress;
use crate::runner::table::Row;
use std::fmt::Write as _;

/// NoWA's modes, as `nowa_mode` spells them.
pub const MODES: [&str; 2] = ["unit", "group"];

/// Table 1's rows the comparison takes: GDT alone, NoWA with zones 1/32 of the GC unit, NoWA
/// with zones aligned to it.
pub const BASE_ROWS: [&str; 3] = ["+ GDT", "+ NoWA", "+ aligning GC unit"];

/// 000 Table 1's figures for those rows: label, DB WAF, SSD WAF (the PM9A3; 000's DB WAF is
/// its artifact's victim formula).
pub const PAPER_POINTS: [(&str, f64, f64); 3] =
    [("+ GDT", 0.59, 1.96), ("+ NoWA", 0.60, 1.07), ("+ aligning GC unit", 0.60, 1.00)];

/// One run of the comparison: a Table 1 row, and the NoWA mode (None: the row has no NoWA).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ModeRun {
    pub plan: RowPlan,
    pub mode: Option<&'static str>,
}

impl ModeRun {
    pub fn label(&self) -> String {
        match self.mode {
            Some(mode) => format!("{} [{mode}]", self.plan.label),
            None => self.plan.label.to_string(),
        }
    }
}

/// The runs in order: each base row, and the NoWA rows once per mode.
pub fn runs() -> Vec<ModeRun> {
    let mut out = Vec::with_capacity(BASE_ROWS.len() * MODES.len());
    for plan in table1::ROWS.iter().filter(|r| BASE_ROWS.contains(&r.label)) {
        let nowa = plan.config(Scale::Tiny).engine.get("nowa").and_then(|v| v.as_bool());
        match nowa {
            Some(true) => out.extend(MODES.iter().map(|&m| ModeRun { plan: *plan, mode: Some(m) })),
            _ => out.push(ModeRun { plan: *plan, mode: None }),
        }
    }
    assert_eq!(out.len(), 1 + 2 * MODES.len(), "GDT once, each NoWA row per mode");
    out
}

/// Runs every comparison run on a fresh device of the scale; `on_row` sees each as it ends.
pub fn run(
    scale: Scale,
    progress: &mut dyn Progress,
    on_row: &mut dyn FnMut(&Row),
) -> Result<Vec<(Row, Option<RunReport>)>, ExperimentError> {
    let runs = runs();
    let mut out = Vec::with_capacity(runs.len());
    for run in runs {
        let mut config = run.plan.config(scale);
        if let Some(mode) = run.mode {
            config.engine.insert("nowa_mode".into(), toml::Value::String(mode.into()));
        }
        config.label = Some(format!("{} [{}]", run.label(), scale.name()));
        let report = super::run_config(run.plan.label, &config, progress)?;
        let row = Row { label: run.label(), figures: Ok(report.summary) };
        on_row(&row);
        out.push((row, Some(report)));
    }
    Ok(out)
}

/// The base row a run label belongs to (its label without the mode).
fn base_label(label: &str) -> &str {
    label.split(" [").next().unwrap_or(label)
}

/// The measured runs beside 000's figures as a markdown table: both DB WAF metrics, SSD WAF,
/// and the bytes per operation DB GC and compensation wrote.
pub fn render_markdown(scale: Scale, rows: &[(Row, Option<RunReport>)]) -> String {
    let mut out = format!(
        "| run ({} scale) | DB WAF | DB WAF vict. | SSD WAF | total WAF | GC copy B/op | \
         compensation B/op | 000 (DB x SSD) |\n|---|---|---|---|---|---|---|---|\n",
        scale.name()
    );
    let f2 = |v: Option<f64>| v.map_or("-".to_string(), |v| format!("{v:.2}"));
    for (row, _) in rows.iter().take(BASE_ROWS.len() * MODES.len()) {
        let paper = PAPER_POINTS
            .iter()
            .find(|p| p.0 == base_label(&row.label))
            .map_or("-".to_string(), |p| format!("{:.2} x {:.2}", p.1, p.2));
        let Ok(f) = &row.figures else {
            let _ = writeln!(out, "| {} | - | - | - | - | - | - | {paper} |", row.label);
            continue;
        };
        let per_op = |bytes: u64| match f.ops {
            0 => "-".to_string(),
            ops => format!("{:.0}", bytes as f64 / ops as f64),
        };
        let _ = writeln!(
            out,
            "| {} | {} | {} | {} | {} | {} | {} | {paper} |",
            row.label,
            f2(f.db_waf),
            f2(f.db_waf_victim),
            f2(f.ssd_waf),
            f2(f.total_waf),
            per_op(f.bytes.gc_copy),
            per_op(f.bytes.compensation),
        );
    }
    out
}

/// DB WAF (x) against SSD WAF (y) for the NoWA rows: per mode and metric (bytes, and 000's
/// victim metric) one line from the row with zones 1/32 of the GC unit (the upper point, SSD
/// copies) to the aligned row (lower), and 000's two points the same way. "+ GDT" (SSD WAF
/// about 3) stays in the table only, so the axis shows the differences near 1.
pub fn chart(scale: Scale, rows: &[Row]) -> LineChart {
    let mut series = Vec::with_capacity(2 * MODES.len() + 1);
    for victim in [false, true] {
        for mode in MODES {
            let points: Vec<(f64, f64)> = rows
                .iter()
                .filter(|r| r.label.ends_with(&format!("[{mode}]")))
                .filter_map(|r| {
                    let f = r.figures.as_ref().ok()?;
                    let db = if victim { f.db_waf_victim } else { f.db_waf };
                    Some((db?, f.ssd_waf?))
                })
                .collect();
            let metric = if victim { "000's metric" } else { "bytes" };
            series.push(Series::new(format!("{mode}, DB WAF in {metric}"), points));
        }
    }
    let paper: Vec<(f64, f64)> = PAPER_POINTS[1..].iter().map(|p| (p.1, p.2)).collect();
    series.push(Series::new("000 (PM9A3), its metric", paper));
    let ssd_max = series.iter().flat_map(|s| s.points.iter().map(|p| p.1)).fold(1.0, f64::max);
    let title = format!(
        "NoWA unit vs group balancing ({} scale): zones 1/32 of the GC unit (upper) -> aligned",
        scale.name()
    );
    let mut chart = LineChart::of_series(&title, "DB WAF", "SSD WAF", series);
    chart.x_from_zero = false;
    chart.y_range = Some((0.95, ssd_max + 0.05));
    chart
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn runs_cover_each_nowa_row_in_both_modes() {
        let labels: Vec<String> = runs().iter().map(ModeRun::label).collect();
        assert_eq!(
            labels,
            [
                "+ GDT",
                "+ NoWA [unit]",
                "+ NoWA [group]",
                "+ aligning GC unit [unit]",
                "+ aligning GC unit [group]"
            ]
        );
        assert_eq!(base_label("+ NoWA [group]"), "+ NoWA");
    }

    /// At the tiny scale both modes run; group mode compensates only inside GC cycles, so it
    /// writes fewer compensation bytes than unit mode on the unaligned row; the chart has a
    /// two-point line per mode and metric and 000's pair.
    #[test]
    fn tiny_comparison_runs_and_charts() {
        let rows = run(Scale::Tiny, &mut crate::progress::Silent, &mut |_| {}).unwrap();
        assert_eq!(rows.len(), 5);
        let figures: Vec<&crate::metrics::Figures> =
            rows.iter().map(|(r, _)| r.figures.as_ref().unwrap()).collect();
        let (unit, group) = (figures[1], figures[2]);
        assert!(unit.bytes.compensation > 0, "{:?}", unit.bytes);
        assert!(
            group.bytes.compensation < unit.bytes.compensation,
            "group {} unit {}",
            group.bytes.compensation,
            unit.bytes.compensation
        );
        let json = |i: usize| rows[i].1.as_ref().map(|r| r.to_json().unwrap()).unwrap_or_default();
        assert!(json(2).contains("\"nowa_mode\": \"group\""), "{}", json(2));
        assert!(json(1).contains("\"nowa_mode\": \"unit\""), "{}", json(1));
        let table: Vec<Row> = rows.iter().map(|(r, _)| r.clone()).collect();
        let chart = chart(Scale::Tiny, &table);
        assert_eq!(chart.series.len(), 2 * MODES.len() + 1);
        assert!(chart.series.iter().all(|s| s.points.len() == 2), "{:?}", chart.series);
        let md = render_markdown(Scale::Tiny, &rows);
        assert!(md.contains("+ NoWA [group]") && md.contains("0.60 x 1.07"), "{md}");
    }
}
