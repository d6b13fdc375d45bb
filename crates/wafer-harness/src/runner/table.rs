//! The final table, laid out like Table 1 of 000 (sec. 7.3): one row per configuration with
//! OPS, DB WAF, SSD WAF, total WAF, logical and physical bytes per operation and the buffer hit
//! ratio, then the write drilldown in bytes per operation (user, doublewrite, DB GC,
//! compensation, padding, metadata, SSD GC, WAL), so each write's origin is visible.

use std::fmt::Write as _;

use crate::metrics::{Figures, HistogramSummary, RunReport};

/// One row: a configuration and its cumulative figures, or why it has none.
#[derive(Debug, Clone, PartialEq)]
pub struct Row {
    pub label: String,
    pub figures: Result<Figures, String>,
}

pub const HEADERS: [&str; 17] = [
    "config",
    "OPS (K)",
    "DB WAF",
    "DB WAF vict.",
    "SSD WAF",
    "total WAF",
    "logical B/op",
    "physical B/op",
    "hit ratio",
    "user",
    "dwb",
    "DB GC",
    "comp",
    "pad",
    "meta",
    "SSD GC",
    "WAL",
];

fn fixed(v: Option<f64>, digits: usize) -> String {
    v.map_or_else(|| "-".to_string(), |x| format!("{x:.digits$}"))
}

/// Bytes per operation with thousands separators, as 000 prints them (`1,858`).
fn per_op(bytes: u64, ops: u64) -> String {
    if ops == 0 {
        return "-".to_string();
    }
    crate::emu_report::table::thousands((bytes as f64 / ops as f64).round() as u64)
}

pub fn cells(f: &Figures) -> Vec<String> {
    let b = &f.bytes;
    let physical =
        if f.physical_bytes_per_op.is_some() { per_op(b.flash, f.ops) } else { "-".into() };
    let ssd_gc = if f.ssd_waf.is_some() { per_op(b.ssd_gc, f.ops) } else { "-".into() };
    vec![
        fixed(f.ops_per_sec.map(|o| o / 1000.0), 1),
        fixed(f.db_waf, 2),
        fixed(f.db_waf_victim, 2),
        fixed(f.ssd_waf, 2),
        fixed(f.total_waf, 2),
        per_op(b.db_issued, f.ops),
        physical,
        fixed(f.buffer_hit_ratio, 3),
        per_op(b.user, f.ops),
        per_op(b.doublewrite, f.ops),
        per_op(b.gc_copy, f.ops),
        per_op(b.compensation, f.ops),
        per_op(b.padding, f.ops),
        per_op(b.metadata, f.ops),
        ssd_gc,
        per_op(b.wal, f.ops),
    ]
}

/// Renders the rows as an aligned text table. Rows without figures print their reason.
pub fn render(rows: &[Row]) -> String {
    let mut lines: Vec<Vec<String>> = vec![HEADERS.iter().map(|h| h.to_string()).collect()];
    for row in rows {
        let mut line = vec![row.label.clone()];
        match &row.figures {
            Ok(f) => line.extend(cells(f)),
            Err(reason) => line.push(reason.clone()),
        }
        lines.push(line);
    }
    // Widths from the full rows only: a reason spans the figure columns.
    let mut widths = vec![0usize; HEADERS.len()];
    for line in lines.iter().filter(|l| l.len() == HEADERS.len()) {
        for (w, cell) in widths.iter_mut().zip(line) {
            *w = (*w).max(cell.chars().count());
        }
    }
    widths[0] = lines.iter().map(|l| l[0].chars().count()).max().unwrap_or(0);
    let mut out = String::new();
    for line in &lines {
        let mut text = String::new();
        for (i, cell) in line.iter().enumerate() {
            if i == 0 {
                let _ = write!(text, "{cell:<w$}", w = widths[0]);
            } else if line.len() == HEADERS.len() {
                let _ = write!(text, "  {cell:>w$}", w = widths[i]);
            } else {
                let _ = write!(text, "  {cell}");
            }
        }
        out.push_str(text.trim_end());
        out.push('\n');
    }
    out.push_str(
        "drilldown columns (user .. WAL) are bytes per operation; WAL is outside the WAF figures\n\
         DB WAF: issued bytes / user bytes; DB WAF vict.: 000's printed metric, \
         1 / (1 - victims' live share) x compression (in place: 2 with doublewrite, else 1)\n",
    );
    out
}

fn latency_line(kind: &str, s: &HistogramSummary) -> String {
    let us = |ns: u64| ns as f64 / 1000.0;
    format!(
        "  {kind:<18} {:>10}  p50 {:>9.1}  p90 {:>9.1}  p99 {:>9.1}  p99.9 {:>9.1}  max {:>10.1}",
        s.count,
        us(s.p50_ns),
        us(s.p90_ns),
        us(s.p99_ns),
        us(s.p999_ns),
        us(s.max_ns)
    )
}

/// The emulator's device time of a phase, when it was measured.
fn device_time_line(f: &Figures) -> Option<String> {
    let device_s = f.device_s?;
    Some(format!(
        "{device_s:.3} s, {} ops/s; {} flushes waited {} s",
        fixed(f.device_ops_per_sec, 0),
        f.device_flushes.unwrap_or(0),
        fixed(f.device_flush_wait_s, 3)
    ))
}

/// The table of one run plus its latencies, CPU and memory: what `wafer bench` prints.
pub fn render_report(report: &RunReport) -> String {
    let mut out = render(&[Row { label: report.label.clone(), figures: Ok(report.summary) }]);
    let s = &report.summary;
    let _ = writeln!(
        out,
        "measured {:.1} s, {} ops, {} threads; CPU {} cores; RSS {:.1} MiB; config {}",
        s.elapsed_s,
        s.ops,
        report.threads,
        fixed(s.cpu_cores, 2),
        s.rss_bytes as f64 / f64::from(1u32 << 20),
        report.config_hash
    );
    if let Some(load) = &report.load {
        let _ = writeln!(
            out,
            "load: {} records in {:.1} s ({} inserts/s), {:.1} MiB written",
            load.ops,
            load.elapsed_s,
            fixed(load.ops_per_sec, 0),
            load.bytes.db_issued as f64 / f64::from(1u32 << 20)
        );
    }
    for (phase, figures) in [("load", report.load.as_ref()), ("run", Some(s))] {
        if let Some(line) = figures.and_then(device_time_line) {
            let _ = writeln!(out, "{phase} in device time: {line}");
        }
    }
    let fill = report.observed.get("target_before_run").and_then(|t| t.get("fill"));
    if let Some(fill) = fill.and_then(|f| f.as_f64()) {
        let _ =
            writeln!(out, "dataset after load: {:.1}% of the data device allocated", fill * 100.0);
    }
    if !report.latency.is_empty() {
        out.push_str("latency (us)          count\n");
        for (kind, summary) in &report.latency {
            out.push_str(&latency_line(kind, summary));
            out.push('\n');
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::metrics::CounterSnapshot;

    #[test]
    fn rows_align_and_reasons_print() {
        let d = CounterSnapshot {
            time_ns: 2_000_000_000,
            ops: 1000,
            user_bytes: 929_000,
            doublewrite_bytes: 929_000,
            flash_measured: true,
            flash_host_bytes: 1_858_000,
            ssd_gc_bytes: 2_520_000,
            buffer_hits: 932,
            buffer_misses: 68,
            ..CounterSnapshot::default()
        };
        let rows = vec![
            Row { label: "in-place".into(), figures: Ok(Figures::from_delta(&d)) },
            Row { label: "out-of-place".into(), figures: Err("not yet implemented".into()) },
        ];
        let text = render(&rows);
        let lines: Vec<&str> = text.lines().collect();
        assert!(lines[0].starts_with("config"), "{text}");
        assert!(lines[1].contains("1,858"), "{text}");
        assert!(lines[1].contains("4,378"), "{text}");
        assert!(lines[1].contains("2.00"), "{text}");
        assert!(lines[1].contains("0.932"), "{text}");
        assert!(lines[2].contains("not yet implemented"), "{text}");
        assert_eq!(lines[0].find("OPS"), lines[0].find("OPS"));
    }
}
