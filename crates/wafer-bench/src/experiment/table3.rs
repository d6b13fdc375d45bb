//! Table 3 of 000 (sec. 7.5): on an FDP SSD, in place against out of place with every
//! optimization, once keeping the SSD's WAF at 1 with NoWA and once with FDP placement hints
//! instead (000: FDP SSD A, 1.6 TB, YCSB-A zipf 0.8, 32 threads). Here the scale's emulated SSD
//! gets an FDP interface (`table1::fdp_handles` handles, reclaim unit = superblock) and the
//! workload is Table 1's at 85% fill (zones of a whole reclaim unit leave no room for 90%); the
//! rows without compression are this project's addition (000 gives them for NoWA only, Table
//! 1's "- comp.").
use super::table1::{self, ExperimentError, RowPlan, RowSetup, Scale};
use crate::metrics::RunReport;
use crate::plot::BarChart;
use crate::progress::Progress;
use crate::runner::engine::WriteModeChoice;
use crate::runner::table::Row;
use std::fmt::Write as _;

const fn fdp_row(label: &'static str, write_mode: WriteModeChoice, setup: RowSetup) -> RowPlan {
    RowPlan { fdp_device: true, ..table1::row(label, write_mode, setup) }
}

/// The rows, labelled by configuration.
pub const ROWS: [RowPlan; 5] = [
    fdp_row("in-place", WriteModeChoice::InPlace, RowSetup::Mode),
    fdp_row("nowa", WriteModeChoice::OutOfPlace, RowSetup::NowaAligned),
    fdp_row("fdp", WriteModeChoice::OutOfPlace, RowSetup::Fdp),
    fdp_row("nowa (no comp.)", WriteModeChoice::OutOfPlace, RowSetup::NowaAlignedUncompressed),
    fdp_row("fdp (no comp.)", WriteModeChoice::OutOfPlace, RowSetup::FdpUncompressed),
];

/// 000 Table 3 as published: configuration, DB WAF, SSD WAF, total WAF, K OPS.
pub const PAPER_ROWS: [(&str, f64, f64, f64, u32); 3] = [
    ("in-place", 2.00, 1.98, 3.96, 437),
    ("nowa", 0.57, 1.00, 0.57, 541),
    ("fdp", 0.54, 1.00, 0.54, 553),
];

/// Runs every row on a fresh FDP device of the scale.
pub fn run(
    scale: Scale,
    progress: &mut dyn Progress,
    on_row: &mut dyn FnMut(&Row),
) -> Result<Vec<(Row, Option<RunReport>)>, ExperimentError> {
    table1::run_rows(scale, &ROWS, progress, on_row)
}

/// The SSD WAF the device's FDP statistics log gives over the measured run (media over host
/// bytes written between the states before and after it), as a real FDP SSD reports it.
pub fn fdp_log_waf(report: &RunReport) -> Option<f64> {
    let stat =
        |state: &str, key: &str| report.observed.get(state)?.get("fdp_stats")?.get(key)?.as_u64();
    let delta =
        |key: &str| stat("target_after_run", key)?.checked_sub(stat("target_before_run", key)?);
    let (host, media) = (delta("host_bytes_written")?, delta("media_bytes_written")?);
    (host > 0).then(|| media as f64 / host as f64)
}

/// The measured rows beside 000's as a markdown table, with the SSD WAF of the FDP log.
pub fn render_markdown(scale: Scale, rows: &[(Row, Option<RunReport>)]) -> String {
    let mut out = format!(
        "| config ({} scale) | DB WAF | DB WAF vict. | SSD WAF | total WAF | FDP log: media/host | 000 (DB x SSD = total) |\n\
         |---|---|---|---|---|---|---|\n",
        scale.name()
    );
    for (row, report) in rows {
        let paper = PAPER_ROWS
            .iter()
            .find(|p| p.0 == row.label)
            .map_or(String::new(), |p| format!("{:.2} x {:.2} = {:.2}", p.1, p.2, p.3));
        let figure = |v: Option<f64>| v.map_or("-".to_string(), |v| format!("{v:.2}"));
        let log = figure(report.as_ref().and_then(fdp_log_waf));
        match &row.figures {
            Ok(f) => {
                let _ = writeln!(
                    out,
                    "| {} | {} | {} | {} | {} | {log} | {paper} |",
                    row.label,
                    figure(f.db_waf),
                    figure(f.db_waf_victim),
                    figure(f.ssd_waf),
                    figure(f.total_waf)
                );
            }
            Err(why) => {
                let _ = writeln!(out, "| {} | {why} | | | | | {paper} |", row.label);
            }
        }
    }
    out
}

/// DB, SSD and total WAF per configuration that ran.
pub fn chart(scale: Scale, rows: &[Row]) -> BarChart {
    waf_chart(format!("000 Table 3 on an emulated FDP SSD ({} scale)", scale.name()), rows)
}

/// A bar chart of DB, SSD and total WAF per row that ran (Tables 2 and 3).
pub fn waf_chart(title: String, rows: &[Row]) -> BarChart {
    let ran: Vec<(&str, &crate::metrics::Figures)> = rows
        .iter()
        .filter_map(|r| r.figures.as_ref().ok().map(|f| (r.label.as_str(), f)))
        .collect();
    let waf = |v: Option<f64>| v.unwrap_or(0.0);
    BarChart {
        title,
        y_label: "WAF".into(),
        groups: ran.iter().map(|(label, _)| label.to_string()).collect(),
        series_labels: vec!["DB WAF".into(), "SSD WAF".into(), "total WAF".into()],
        values: ran
            .iter()
            .map(|(_, f)| vec![waf(f.db_waf), waf(f.ssd_waf), waf(f.total_waf)])
            .collect(),
        stacked: false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every row runs on the tiny FDP device; FDP keeps the SSD's own GC from copying at
    /// least as well as NoWA, and both write far less flash than in place.
    #[test]
    fn tiny_table3_orders_in_place_above_nowa_and_fdp() {
        let rows = run(Scale::Tiny, &mut crate::progress::Silent, &mut |_| {}).unwrap();
        assert_eq!(rows.len(), ROWS.len());
        let fig = |i: usize| rows[i].1.as_ref().map(|r| r.summary).unwrap();
        let (in_place, nowa, fdp) = (fig(0), fig(1), fig(2));
        let total = |f: &crate::metrics::Figures| f.total_waf.unwrap_or(f64::NAN);
        assert!(total(&nowa) < total(&in_place) && total(&fdp) < total(&in_place));
        let ssd = |f: &crate::metrics::Figures| f.ssd_waf.unwrap_or(f64::NAN);
        assert!(ssd(&fdp) < 1.05, "FDP SSD WAF {}", ssd(&fdp));
        // The device's FDP log agrees with the emulator's flash counters.
        let log = fdp_log_waf(rows[2].1.as_ref().unwrap()).unwrap();
        assert!((log - ssd(&fdp)).abs() < 0.02, "FDP log {log} vs counters {}", ssd(&fdp));
        let text = render_markdown(Scale::Tiny, &rows);
        assert!(text.contains("| fdp |") && text.contains("0.54"), "{text}");
    }
}
