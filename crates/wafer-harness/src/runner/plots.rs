//! Charts of run reports, several runs side by side: WAF and throughput over written capacity
//! (x = DB-issued bytes since the measurement began / data device capacity, per interval), and
//! the write drilldown in bytes per operation as grouped bars (one group per run).

use crate::metrics::{Figures, RunReport};
use wafer_plot::{BarChart, LineChart, Series};

/// Unique labels: a repeated label gets ` #2`, ` #3`...
pub fn labels(reports: &[RunReport]) -> Vec<String> {
    let mut out: Vec<String> = Vec::with_capacity(reports.len());
    for r in reports {
        let mut label = r.label.clone();
        let mut n = 1;
        while out.contains(&label) {
            n += 1;
            label = format!("{} #{n}", r.label);
        }
        out.push(label);
    }
    out
}

/// The data device's capacity a run recorded (None if it recorded none).
pub fn capacity_bytes(report: &RunReport) -> Option<f64> {
    let c = report.config.get("data_device_capacity_bytes")?.as_u64()?;
    (c > 0).then_some(c as f64)
}

/// Points (written capacities, y) of every interval with a y value.
fn series_of(report: &RunReport, y: impl Fn(&Figures) -> Option<f64>) -> Vec<(f64, f64)> {
    let Some(capacity) = capacity_bytes(report) else {
        return Vec::new();
    };
    report
        .intervals
        .iter()
        .filter_map(|r| {
            let x = r.cumulative.bytes.db_issued as f64 / capacity;
            y(&r.interval).filter(|v| v.is_finite()).map(|v| (x, v))
        })
        .collect()
}

/// Picks one figure of an interval.
type Pick = fn(&Figures) -> Option<f64>;

/// Total, DB and SSD WAF per interval; one set of lines per run.
pub fn waf_chart(reports: &[RunReport]) -> LineChart {
    let mut series = Vec::new();
    for (report, label) in reports.iter().zip(labels(reports)) {
        let sets: [(&str, Pick); 3] =
            [("total", |f| f.total_waf), ("DB", |f| f.db_waf), ("SSD", |f| f.ssd_waf)];
        for (name, pick) in sets {
            let points = series_of(report, pick);
            if !points.is_empty() {
                series.push(Series::new(format!("{label}: {name} WAF"), points));
            }
        }
    }
    LineChart {
        title: "WAF over written capacity (per interval)".into(),
        x_label: "DB writes / device capacity".into(),
        y_label: "WAF".into(),
        series,
        y_range: None,
        x_from_zero: true,
    }
}

/// Operations per second (thousands) per interval, one line per run.
pub fn throughput_chart(reports: &[RunReport]) -> LineChart {
    let series = reports
        .iter()
        .zip(labels(reports))
        .map(|(r, label)| Series::new(label, series_of(r, |f| f.ops_per_sec.map(|o| o / 1000.0))))
        .filter(|s| !s.points.is_empty())
        .collect();
    LineChart {
        title: "Throughput over written capacity".into(),
        x_label: "DB writes / device capacity".into(),
        y_label: "throughput (K ops/s)".into(),
        series,
        y_range: None,
        x_from_zero: true,
    }
}

/// Names of the drilldown bars, in the order of [`drilldown`].
pub const DRILLDOWN: [&str; 8] =
    ["user", "doublewrite", "DB GC", "compensation", "padding", "metadata", "SSD GC", "WAL"];

/// Bytes per operation of each write purpose over the whole measurement.
pub fn drilldown(f: &Figures) -> [f64; 8] {
    let b = &f.bytes;
    let per_op = |bytes: u64| if f.ops == 0 { 0.0 } else { bytes as f64 / f.ops as f64 };
    [
        per_op(b.user),
        per_op(b.doublewrite),
        per_op(b.gc_copy),
        per_op(b.compensation),
        per_op(b.padding),
        per_op(b.metadata),
        per_op(b.ssd_gc),
        per_op(b.wal),
    ]
}

pub fn drilldown_chart(reports: &[RunReport]) -> BarChart {
    BarChart {
        title: "Write drilldown (bytes per operation)".into(),
        y_label: "bytes per operation (B/op)".into(),
        groups: labels(reports),
        series_labels: DRILLDOWN.iter().map(|s| s.to_string()).collect(),
        values: reports.iter().map(|r| drilldown(&r.summary).to_vec()).collect(),
        stacked: true,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::metrics::{CounterSnapshot, IntervalSampler};

    fn report(label: &str) -> RunReport {
        let mut r =
            RunReport::new(label, serde_json::json!({"data_device_capacity_bytes": 1000}), 1, 1);
        let mut s =
            IntervalSampler::new(CounterSnapshot { flash_measured: true, ..Default::default() });
        let mut now = CounterSnapshot { flash_measured: true, ..Default::default() };
        for _ in 0..4 {
            now.time_ns += 1_000_000_000;
            now.ops += 10;
            now.user_bytes += 250;
            now.doublewrite_bytes += 250;
            now.flash_host_bytes += 500;
            now.ssd_gc_bytes += 100;
            r.push_interval(s.sample(now)).unwrap();
        }
        r
    }

    #[test]
    fn series_and_bars_from_reports() {
        let reports = vec![report("a"), report("a")];
        let waf = waf_chart(&reports);
        assert_eq!(waf.series.len(), 6);
        assert_eq!(waf.series[3].label, "a #2: total WAF");
        // x: 500 DB bytes per interval over a 1000-byte device.
        assert_eq!(waf.series[0].points[0], (0.5, 2.4));
        assert_eq!(waf.series[0].points[3].0, 2.0);
        let t = throughput_chart(&reports);
        assert_eq!(t.series[0].points[0].1, 0.01);
        let bars = drilldown_chart(&reports);
        assert_eq!(bars.values[0][0], 25.0);
        assert_eq!(bars.values[0][1], 25.0);
        assert_eq!(bars.values[0][6], 10.0);
        assert_eq!(bars.groups, vec!["a".to_string(), "a #2".to_string()]);
    }
}
