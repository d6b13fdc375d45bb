//! The comparison as a markdown table (medians over rounds) and bar charts.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use super::harness::{PeersReport, Row};
use super::phases::BREAKDOWN_PARTS;
use wafer_plot::{BarChart, Chart};

/// One cell group: an engine in one phase, medians over the rounds.
#[derive(Debug, Clone, PartialEq)]
pub struct Summary {
    pub engine: String,
    pub device: String,
    pub phase: String,
    pub distribution: String,
    pub rounds: usize,
    pub ops_per_sec: f64,
    pub p50_us: Option<f64>,
    pub p99_us: Option<f64>,
    pub host_write_bytes_per_op: f64,
    pub host_read_bytes_per_op: f64,
    pub device_write_bytes_per_op: Option<f64>,
    pub flash_bytes_per_op: Option<f64>,
    pub db_waf: Option<f64>,
    pub ssd_waf: Option<f64>,
    pub total_waf: Option<f64>,
    pub steady_flash_bytes_per_op: Option<f64>,
    pub steady_ssd_waf: Option<f64>,
}

pub(crate) fn median(mut values: Vec<f64>) -> f64 {
    assert!(!values.is_empty(), "median of nothing");
    values.sort_by(f64::total_cmp);
    let mid = values.len() / 2;
    if values.len() % 2 == 1 {
        values[mid]
    } else {
        (values[mid - 1] + values[mid]) / 2.0
    }
}

fn median_of(rows: &[&Row], f: impl Fn(&Row) -> Option<f64>) -> Option<f64> {
    let v: Vec<f64> = rows.iter().filter_map(|r| f(r)).collect();
    (!v.is_empty()).then(|| median(v))
}

/// Rows grouped by (phase, distribution, device, engine) in measurement order of first sight.
pub fn summarize(rows: &[Row]) -> Vec<Summary> {
    let mut order: Vec<(String, String, String, String)> = Vec::new();
    let mut groups: BTreeMap<(String, String, String, String), Vec<&Row>> = BTreeMap::new();
    for r in rows {
        let key = (r.phase.clone(), r.distribution.clone(), r.device.clone(), r.engine.clone());
        if !groups.contains_key(&key) {
            order.push(key.clone());
        }
        groups.entry(key).or_default().push(r);
    }
    // Phases in the order first measured, then engines in the order first measured.
    let phases: Vec<(String, String)> = order.iter().map(|k| (k.0.clone(), k.1.clone())).collect();
    // Stable: engines keep their order within a phase.
    order.sort_by_key(|k| phases.iter().position(|p| (&p.0, &p.1) == (&k.0, &k.1)));
    order
        .iter()
        .map(|key| {
            let g = &groups[key];
            Summary {
                phase: key.0.clone(),
                distribution: key.1.clone(),
                device: key.2.clone(),
                engine: key.3.clone(),
                rounds: g.len(),
                ops_per_sec: median_of(g, |r| Some(r.ops_per_sec)).unwrap_or(0.0),
                p50_us: median_of(g, |r| r.p50_us),
                p99_us: median_of(g, |r| r.p99_us),
                host_write_bytes_per_op: median_of(g, |r| Some(r.host_write_bytes_per_op))
                    .unwrap_or(0.0),
                host_read_bytes_per_op: median_of(g, |r| Some(r.host_read_bytes_per_op))
                    .unwrap_or(0.0),
                device_write_bytes_per_op: median_of(g, |r| r.device_write_bytes_per_op),
                flash_bytes_per_op: median_of(g, |r| r.flash_bytes_per_op),
                db_waf: median_of(g, |r| r.db_waf),
                ssd_waf: median_of(g, |r| r.ssd_waf),
                total_waf: median_of(g, |r| r.total_waf),
                steady_flash_bytes_per_op: median_of(g, |r| r.steady_flash_bytes_per_op),
                steady_ssd_waf: median_of(g, |r| r.steady_ssd_waf),
            }
        })
        .collect()
}

fn opt(v: Option<f64>, decimals: usize) -> String {
    v.map_or_else(|| "-".into(), |x| format!("{x:.decimals$}"))
}

/// The markdown table: one line per engine and phase.
pub fn markdown(report: &PeersReport) -> String {
    let summaries = summarize(&report.rows);
    let flash = summaries.iter().any(|s| s.total_waf.is_some());
    let mut out = String::from(
        "| phase | dist | device | engine | ops/s | p50 µs | p99 µs | host write B/op | host read B/op |",
    );
    out.push_str(if flash {
        " device write B/op | flash B/op | DB WAF | SSD WAF | total WAF | flash B/op, last half \
         | SSD WAF, last half |\n"
    } else {
        "\n"
    });
    out.push_str("|---|---|---|---|--:|--:|--:|--:|--:|");
    out.push_str(if flash { "--:|--:|--:|--:|--:|--:|--:|\n" } else { "\n" });
    for s in &summaries {
        out.push_str(&format!(
            "| {} | {} | {} | {} | {:.0} | {} | {} | {:.0} | {:.0} |",
            s.phase,
            s.distribution,
            s.device,
            s.engine,
            s.ops_per_sec,
            opt(s.p50_us, 0),
            opt(s.p99_us, 0),
            s.host_write_bytes_per_op,
            s.host_read_bytes_per_op,
        ));
        if flash {
            out.push_str(&format!(
                " {} | {} | {} | {} | {} | {} | {} |",
                opt(s.device_write_bytes_per_op, 0),
                opt(s.flash_bytes_per_op, 0),
                opt(s.db_waf, 2),
                opt(s.ssd_waf, 2),
                opt(s.total_waf, 2),
                opt(s.steady_flash_bytes_per_op, 0),
                opt(s.steady_ssd_waf, 2),
            ));
        }
        out.push('\n');
    }
    out.push_str(&device_table(report));
    out.push_str(&breakdown_table(report));
    if !report.failures.is_empty() {
        // A failure is a result too (an engine out of space on its device): said, not dropped.
        out.push_str("\nFailed (the rows each measured before are above):\n\n");
        for f in &report.failures {
            out.push_str(&format!("- {f}\n"));
        }
    }
    out
}

/// The rows that have a flash breakdown, in measurement order (the first round's).
fn breakdown_rows(report: &PeersReport) -> Vec<&Row> {
    report.rows.iter().filter(|r| r.round == 0 && r.flash_breakdown.is_some()).collect()
}

/// The parts present in any of `rows`' breakdowns, in stacking order.
fn breakdown_parts(rows: &[&Row]) -> Vec<&'static str> {
    BREAKDOWN_PARTS
        .into_iter()
        .filter(|p| {
            rows.iter().any(|r| r.flash_breakdown.as_ref().is_some_and(|b| b.contains_key(*p)))
        })
        .collect()
}

/// Flash bytes per operation by what wrote them, for the write phases (load, A, F) on an
/// emulated SSD (empty without one).
fn breakdown_table(report: &PeersReport) -> String {
    let rows: Vec<&Row> = breakdown_rows(report)
        .into_iter()
        .filter(|r| matches!(r.phase.as_str(), "load" | "ycsb-a" | "ycsb-f"))
        .collect();
    if rows.is_empty() {
        return String::new();
    }
    let parts = breakdown_parts(&rows);
    let mut out = format!(
        "\nFlash bytes per operation by writer (round 0; Wafer by its own purposes; RocksDB, \
         WiredTiger and PostgreSQL by file kind from their own statistics, PostgreSQL's views \
         trailing its processes by up to seconds, so a short phase's split is approximate; the \
         device counts every total; LMDB's files as one):\n\n| phase | dist | device | engine | {} |\n|---|---|---|---|{}\n",
        parts.join(" | "),
        "--:|".repeat(parts.len())
    );
    for r in rows {
        let b = r.flash_breakdown.as_ref();
        let cells: Vec<String> =
            parts.iter().map(|p| opt(b.and_then(|b| b.get(*p).copied()), 0)).collect();
        out.push_str(&format!(
            "| {} | {} | {} | {} | {} |\n",
            r.phase,
            r.distribution,
            r.device,
            r.engine,
            cells.join(" | ")
        ));
    }
    out
}

/// The stacked drilldown of one phase: a bar per engine (and emulated device), its flash
/// bytes per operation by writer. None when no row of that phase has a breakdown.
pub fn breakdown_chart(report: &PeersReport, phase: &str, distribution: &str) -> Option<Chart> {
    let rows: Vec<&Row> = breakdown_rows(report)
        .into_iter()
        .filter(|r| r.phase == phase && r.distribution == distribution)
        .collect();
    if rows.is_empty() {
        return None;
    }
    let parts = breakdown_parts(&rows);
    let values = rows
        .iter()
        .map(|r| {
            let b = r.flash_breakdown.as_ref();
            parts.iter().map(|p| b.and_then(|b| b.get(*p).copied()).unwrap_or(0.0)).collect()
        })
        .collect();
    let scale = report.config["scale"].as_str().unwrap_or("?");
    let value = report.config["value_size_bytes"].as_u64().unwrap_or(0);
    Some(Chart::Bar(BarChart {
        title: format!(
            "Flash bytes per operation by writer, {phase} {distribution} ({scale}, {value} B values)"
        ),
        y_label: "flash bytes/op".into(),
        groups: rows.iter().map(|r| format!("{} ({})", r.engine, r.device)).collect(),
        series_labels: parts.iter().map(|p| p.to_string()).collect(),
        values,
        stacked: true,
    }))
}

/// One chart over several runs that differ in value size: flash bytes per operation of
/// `phase` `distribution`, a group per value size and a bar per engine (and device).
pub fn value_size_chart(
    runs: &[(u32, PeersReport)],
    phase: &str,
    distribution: &str,
) -> Option<Chart> {
    let mut series: Vec<String> = Vec::new();
    let mut cells: Vec<(u32, String, f64)> = Vec::new();
    for (size, report) in runs {
        for s in summarize(&report.rows) {
            if s.phase != phase || s.distribution != distribution {
                continue;
            }
            let Some(flash) = s.flash_bytes_per_op else { continue };
            let name = series_name(&s);
            if !series.contains(&name) {
                series.push(name.clone());
            }
            cells.push((*size, name, flash));
        }
    }
    if cells.is_empty() {
        return None;
    }
    let values = runs
        .iter()
        .map(|(size, _)| {
            series
                .iter()
                .map(|e| cells.iter().find(|c| c.0 == *size && &c.1 == e).map_or(0.0, |c| c.2))
                .collect()
        })
        .collect();
    Some(Chart::Bar(BarChart {
        title: format!("Flash bytes per operation by value size, {phase} {distribution}"),
        y_label: "flash bytes/op".into(),
        groups: runs.iter().map(|(size, _)| format!("{size} B values")).collect(),
        series_labels: series,
        values,
        stacked: false,
    }))
}

/// Writes `chart` beside `stem` as `STEM-SUFFIX.png` and `.svg`.
pub fn write_png_and_svg(
    chart: &Chart,
    stem: &Path,
    suffix: &str,
) -> std::io::Result<Vec<PathBuf>> {
    let mut paths = Vec::new();
    for ext in ["png", "svg"] {
        let mut name = stem.with_extension("").into_os_string();
        name.push(format!("-{suffix}.{ext}"));
        let path = PathBuf::from(name);
        let bytes = wafer_plot::render_for_path(chart, &path, (1200, 560))
            .map_err(std::io::Error::other)?;
        std::fs::write(&path, bytes)?;
        paths.push(path);
    }
    Ok(paths)
}

/// Each emulated SSD's size and how full its engine kept it (empty without one): the sizing
/// pass's peak, the files after the load and at their peak in the run as shares of the
/// filesystem, and the device's host writes over the whole run in device capacities.
fn device_table(report: &PeersReport) -> String {
    let mib = |v: &serde_json::Value| v.as_u64().map(|b| b as f64 / f64::from(1u32 << 20));
    let mut out = String::new();
    for (key, s) in &report.engines {
        let Some(device) = s.get("emu_device") else { continue };
        if out.is_empty() {
            out.push_str(
                "\n| engine on device | fill | superblock MiB | flash / logical MiB | filesystem MiB | \
                 sizing peak MiB | files after load MiB (% of fs) | files at peak MiB (% of fs) \
                 | written, device capacities |\n|---|---|--:|--:|--:|--:|--:|--:|--:|\n",
            );
        }
        let fs = mib(&s["emu_fs_bytes"]);
        let share = |v: Option<f64>| match (v, fs) {
            (Some(v), Some(fs)) if fs > 0.0 => format!("{v:.0} ({:.0}%)", 100.0 * v / fs),
            _ => "-".into(),
        };
        let written = match (
            s["emu_device_totals"]["counters"]["host_write_bytes"].as_u64(),
            device["logical_bytes"].as_u64(),
        ) {
            (Some(w), Some(l)) if l > 0 => format!("{:.1}", w as f64 / l as f64),
            _ => "-".into(),
        };
        // The share the engine ran at: of its filesystem at its files' peak, or (raw rows) its
        // records' pages of its zone space.
        let fill = match (s["raw_fill_of_zone_space"].as_f64(), s["emu_share"].as_f64()) {
            (Some(f), _) => format!("{f:.2} of zone space"),
            (None, Some(share)) => format!("{share:.2} of fs at peak"),
            _ => "-".into(),
        };
        out.push_str(&format!(
            "| {key} | {fill} | {} | {} / {} | {} | {} | {} | {} | {written} |\n",
            opt(mib(&device["superblock_bytes"]), 1),
            opt(mib(&device["physical_bytes"]), 0),
            opt(mib(&device["logical_bytes"]), 0),
            opt(fs, 0),
            opt(mib(&s["emu_sizing_footprint_bytes"]), 0),
            share(mib(&s["dir_used_after_load_bytes"])),
            share(mib(&s["dir_used_peak_bytes"])),
        ));
    }
    out
}

/// Bar charts beside `stem`: ops/s and host write bytes per operation, a group per phase and a
/// bar per engine (and device). Returns the files written.
pub fn write_charts(report: &PeersReport, stem: &Path) -> std::io::Result<Vec<PathBuf>> {
    let summaries = summarize(&report.rows);
    let mut groups: Vec<String> = Vec::new();
    let mut series: Vec<String> = Vec::new();
    for s in &summaries {
        let g = group_name(s);
        if !groups.contains(&g) {
            groups.push(g);
        }
        let e = series_name(s);
        if !series.contains(&e) {
            series.push(e);
        }
    }
    let values = |f: &dyn Fn(&Summary) -> f64| -> Vec<Vec<f64>> {
        groups
            .iter()
            .map(|g| {
                series
                    .iter()
                    .map(|e| {
                        summaries
                            .iter()
                            .find(|s| &group_name(s) == g && &series_name(s) == e)
                            .map_or(0.0, f)
                    })
                    .collect()
            })
            .collect()
    };
    let chart = |title: &str, y: &str, v: Vec<Vec<f64>>| {
        Chart::Bar(BarChart {
            title: title.into(),
            y_label: y.into(),
            groups: groups.clone(),
            series_labels: series.clone(),
            values: v,
            stacked: false,
        })
    };
    let scale = report.config["scale"].as_str().unwrap_or("?");
    let mut charts = vec![
        ("ops", chart(&format!("Throughput ({scale} scale)"), "ops/s", values(&|s| s.ops_per_sec))),
        (
            "host-write",
            chart(
                &format!("Host bytes written per operation ({scale} scale)"),
                "bytes/op",
                values(&|s| s.host_write_bytes_per_op),
            ),
        ),
    ];
    if summaries.iter().any(|s| s.total_waf.is_some()) {
        let waf = values(&|s| s.total_waf.unwrap_or(0.0));
        charts.push(("total-waf", chart(&format!("Total WAF ({scale} scale)"), "WAF", waf)));
        let flash = values(&|s| s.flash_bytes_per_op.unwrap_or(0.0));
        let title = format!("Flash bytes per operation ({scale} scale)");
        charts.push(("flash", chart(&title, "bytes/op", flash)));
    }
    let svg = wafer_plot::is_svg_path(stem);
    let mut paths = Vec::new();
    for (suffix, c) in &charts {
        let mut name = stem.with_extension("").into_os_string();
        name.push(format!("-{suffix}.{}", if svg { "svg" } else { "png" }));
        let path = PathBuf::from(name);
        let bytes =
            wafer_plot::render_for_path(c, &path, (1200, 560)).map_err(std::io::Error::other)?;
        std::fs::write(&path, bytes)?;
        paths.push(path);
    }
    for (phase, dist) in [("ycsb-a", "zipf"), ("ycsb-a", "uniform")] {
        if let Some(c) = breakdown_chart(report, phase, dist) {
            let suffix = format!("breakdown-{}-{dist}", phase.trim_start_matches("ycsb-"));
            paths.extend(write_png_and_svg(&c, stem, &suffix)?);
        }
    }
    Ok(paths)
}

fn group_name(s: &Summary) -> String {
    match s.phase.strip_prefix("ycsb-") {
        Some(w) => format!("{} {}", w.to_ascii_uppercase(), s.distribution),
        None => s.phase.clone(),
    }
}

fn series_name(s: &Summary) -> String {
    if s.device == "file" {
        s.engine.clone()
    } else {
        format!("{} ({})", s.engine, s.device)
    }
}
