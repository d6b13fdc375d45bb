//! The comparison as a markdown table (medians over rounds) and bar charts.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use super::harness::{PeersReport, Row};

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
        " device write B/op | flash B/op | DB WAF | SSD WAF | total WAF |\n"
    } else {
        "\n"
    });
    out.push_str("|---|---|---|---|--:|--:|--:|--:|--:|");
    out.push_str(if flash { "--:|--:|--:|--:|--:|\n" } else { "\n" });
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
                " {} | {} | {} | {} | {} |",
                opt(s.device_write_bytes_per_op, 0),
                opt(s.flash_bytes_per_op, 0),
                opt(s.db_waf, 2),
                opt(s.ssd_waf, 2),
                opt(s.total_waf, 2)
            ));
        }
        out.push('\n');
    }
    out.push_str(&device_table(report));
    if !report.failures.is_empty() {
        // A failure is a result too (an engine out of space on its device): said, not dropped.
        out.push_str("\nFailed (the rows each measured before are above):\n\n");
        for f in &report.failures {
            out.push_str(&format!("- {f}\n"));
        }
    }
    out
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
                "\n| engine on device | superblock MiB | flash / logical MiB | filesystem MiB | \
                 sizing peak MiB | files after load MiB (% of fs) | files at peak MiB (% of fs) \
                 | written, device capacities |\n|---|--:|--:|--:|--:|--:|--:|--:|\n",
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
        out.push_str(&format!(
            "| {key} | {} | {} / {} | {} | {} | {} | {} | {written} |\n",
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
    use crate::plot::{BarChart, Chart};
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
    let svg = crate::plot::is_svg_path(stem);
    let mut paths = Vec::new();
    for (suffix, c) in &charts {
        let mut name = stem.with_extension("").into_os_string();
        name.push(format!("-{suffix}.{}", if svg { "svg" } else { "png" }));
        let path = PathBuf::from(name);
        let bytes =
            crate::plot::render_for_path(c, &path, (1200, 560)).map_err(std::io::Error::other)?;
        std::fs::write(&path, bytes)?;
        paths.push(path);
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
