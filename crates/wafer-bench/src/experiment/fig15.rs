//! 000 Figure 15: total WAF against dataset size (YCSB-A zipf 0.8, buffer pool 10% of the
//! dataset; 000: 160 to 800 GB on the 894 GB PM9A3). In place, total WAF grows with the
//! dataset (2.33 -> 4.72); out of place with all optimizations it stays low (0.53-0.60); without
//! compression it rises from 1.08 to 3.58.
//!
//! Each configuration is a Table 1 row ([`super::table1::ROWS`]) run at every fill of
//! [`FILLS`], on a fresh device each time, as `table1` runs it at the scale. 000's "all
//! optimizations" is Table 1's "+ aligning GC unit" (GDT, compression, NoWA, aligned zones) and
//! "without compression" its "- comp."; the intermediate configurations (compression and page
//! packing, then GDT, with and without compression) run beside them, labelled as what they are.
use super::table1::{self, RowPlan, Scale};
use crate::metrics::RunReport;
use crate::plot::{LineChart, Series};
use crate::progress::Progress;
use std::fmt::Write as _;

/// Dataset sizes as fractions of the device (000: 160-800 GB of 894 GB, 18%-90%).
pub const FILLS: [f64; 5] = [0.2, 0.4, 0.6, 0.8, 0.9];

/// 000's published end points: (configuration, total WAF at 160 GB, at 800 GB).
pub const PAPER: [(&str, f64, f64); 3] = [
    ("in-place", 2.33, 4.72),
    ("all optimizations", 0.53, 0.60),
    ("without compression", 1.08, 3.58),
];

/// The rows: Table 1's in-place, naive out-of-place and compressed rows, then 000's two
/// Figure 15 configurations (all optimizations, and without compression).
pub fn rows() -> Vec<RowPlan> {
    let pick =
        |label: &str| table1::ROWS.iter().find(|r| r.label == label && r.preset.is_none()).copied();
    let mut out: Vec<RowPlan> =
        ["in-place", "-> out-of-place", "+ comp. + pagepack", "+ GDT", "+ GDT (no comp.)"]
            .iter()
            .filter_map(|l| pick(l))
            .collect();
    let all = pick("+ aligning GC unit").map(|r| RowPlan { label: "all optimizations", ..r });
    let plain = pick("- comp.").map(|r| RowPlan { label: "without compression", ..r });
    out.extend(all);
    out.extend(plain);
    out
}

/// One configuration at one fill.
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
pub struct Fig15Point {
    pub label: String,
    pub fill: f64,
    pub result: Result<RunReport, String>,
}

/// Runs every row at every fill; `on_point` sees each as it finishes.
pub fn run(
    scale: Scale,
    progress: &mut dyn Progress,
    on_point: &mut dyn FnMut(&Fig15Point),
) -> Result<Vec<Fig15Point>, table1::ExperimentError> {
    sweep(scale, &rows(), &FILLS, progress, on_point)
}

/// Runs each of `plans` at each of `fills` (a plan this build cannot run gives its reason at
/// every fill); `on_point` sees each point as it finishes. Figure 13a's sweep is this too.
pub fn sweep(
    scale: Scale,
    plans: &[RowPlan],
    fills: &[f64],
    progress: &mut dyn Progress,
    on_point: &mut dyn FnMut(&Fig15Point),
) -> Result<Vec<Fig15Point>, table1::ExperimentError> {
    let mut out = Vec::with_capacity(plans.len() * fills.len());
    for plan in plans {
        for &fill in fills {
            let result = match plan.unavailable() {
                Some(reason) => Err(reason),
                None => {
                    let mut config = plan.config(scale);
                    config.fill = Some(fill);
                    config.label = Some(format!("{} fill {fill}", plan.label));
                    Ok(super::run_config(plan.label, &config, progress)?)
                }
            };
            let point = Fig15Point { label: plan.label.to_string(), fill, result };
            on_point(&point);
            out.push(point);
        }
    }
    Ok(out)
}

/// Total WAF per configuration (rows) and fill (columns), markdown, with 000's end points.
pub fn render_markdown(scale: Scale, points: &[Fig15Point]) -> String {
    let mut out = format!(
        "### 000 Figure 15 at the {} scale: total WAF (DB x SSD) against dataset size, YCSB-A zipf 0.8\n\n",
        scale.name()
    );
    out.push_str(&render_sweep(&rows(), &FILLS, points));
    out.push_str("\n000 (PM9A3, 160 -> 800 GB):");
    for (label, small, large) in PAPER {
        let _ = write!(out, " {label} {small:.2} -> {large:.2};");
    }
    out.push('\n');
    out
}

/// The sweep's markdown table: total WAF per plan (rows) and fill (columns); a plan this build
/// cannot run says why once.
pub fn render_sweep(plans: &[RowPlan], fills: &[f64], points: &[Fig15Point]) -> String {
    let mut out = String::from("| configuration |");
    for f in fills {
        let _ = write!(out, " {:.0}% |", f * 100.0);
    }
    out.push_str("\n|---|");
    out.push_str(&"---:|".repeat(fills.len()));
    out.push('\n');
    for plan in plans {
        let _ = write!(out, "| {} |", plan.label);
        if let Some(reason) = plan.unavailable() {
            // Once, not in every column.
            let _ = write!(out, " {reason} |{}", " |".repeat(fills.len().saturating_sub(1)));
            out.push('\n');
            continue;
        }
        for &fill in fills {
            let p = points.iter().find(|p| p.label == plan.label && p.fill == fill);
            let cell = match p.map(|p| &p.result) {
                Some(Ok(r)) => r.summary.total_waf.map_or("-".into(), |w| format!("{w:.2}")),
                Some(Err(reason)) => reason.clone(),
                None => "-".into(),
            };
            let _ = write!(out, " {cell} |");
        }
        out.push('\n');
    }
    out
}

/// Total WAF against fill, one line per configuration that ran.
pub fn chart(points: &[Fig15Point]) -> LineChart {
    sweep_chart("000 Fig. 15: total WAF vs dataset size (YCSB-A)", &rows(), points)
}

/// Total WAF against fill, one line per plan that ran.
pub fn sweep_chart(title: &str, plans: &[RowPlan], points: &[Fig15Point]) -> LineChart {
    let series = plans
        .iter()
        .map(|plan| {
            let pts = points
                .iter()
                .filter(|p| p.label == plan.label)
                .filter_map(|p| Some((p.fill * 100.0, p.result.as_ref().ok()?.summary.total_waf?)))
                .collect();
            Series::new(plan.label, pts)
        })
        .collect();
    LineChart::of_series(title, "dataset size (% of the device)", "total WAF", series)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rows_name_what_runs_and_what_does_not() {
        let r = rows();
        let labels: Vec<&str> = r.iter().map(|p| p.label).collect();
        assert_eq!(
            labels,
            [
                "in-place",
                "-> out-of-place",
                "+ comp. + pagepack",
                "+ GDT",
                "+ GDT (no comp.)",
                "all optimizations",
                "without compression"
            ]
        );
        assert_eq!(r.iter().filter(|p| p.unavailable().is_none()).count(), 7, "every row runs");
    }

    #[test]
    #[ignore = "25 YCSB runs on the tiny emulator, minutes in debug builds: `wafer experiment fig15 --scale tiny`"]
    fn tiny_fig15_in_place_grows_with_the_dataset() {
        let points = run(Scale::Tiny, &mut crate::progress::Silent, &mut |_| {}).unwrap();
        let waf = |label: &str, fill: f64| {
            let p = points.iter().find(|p| p.label == label && p.fill == fill).unwrap();
            p.result.as_ref().unwrap().summary.total_waf.unwrap()
        };
        assert!(waf("in-place", 0.9) > waf("in-place", 0.2));
        // All optimizations (NoWA, aligned zones) stay below in place at the full fill.
        assert!(waf("all optimizations", 0.9) < waf("in-place", 0.9));
        assert!(!render_markdown(Scale::Tiny, &points).contains("not yet implemented"));
    }
}
