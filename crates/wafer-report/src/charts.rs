//! Chart builders over run reports. Each returns a [`Chart`] description; [`wafer_plot`] draws
//! it. Series that need data a run report does not carry yet (latency per interval, the valid
//! ratio of GC victims) take that data as arguments, so a runner that records it later only
//! has to pass it in.
use wafer_harness::metrics::{HistogramSummary, RunReport};
use wafer_harness::runner::plots;
use wafer_plot::{cdf_points, BarChart, Chart, LineChart, Series};

pub(crate) use plots::{capacity_bytes, labels as run_labels};

/// Total WAF per interval over written capacity, one line per configuration (000 Figures 13
/// and 15); a run without flash counters shows its DB WAF and says so in its label.
pub fn waf_per_configuration(reports: &[RunReport]) -> Chart {
    let mut series = Vec::with_capacity(reports.len());
    for (report, label) in reports.iter().zip(run_labels(reports)) {
        let Some(capacity) = capacity_bytes(report) else { continue };
        let has_total = report.intervals.iter().any(|r| r.interval.total_waf.is_some());
        let points = report
            .intervals
            .iter()
            .filter_map(|r| {
                let waf = if has_total { r.interval.total_waf } else { r.interval.db_waf };
                Some((r.cumulative.bytes.db_issued as f64 / capacity, waf?))
            })
            .collect();
        let label = if has_total { label } else { format!("{label} (DB WAF)") };
        series.push(Series::new(label, points));
    }
    Chart::Line(LineChart {
        title: "Total WAF over written capacity (per interval)".into(),
        x_label: "DB writes since the measurement began / device capacity (x)".into(),
        y_label: "total WAF (flash bytes / user bytes)".into(),
        series,
        y_range: None,
        x_from_zero: true,
    })
}

/// Total, DB and SSD WAF of each run (several lines per run): where the WAF comes from.
pub fn waf_components(reports: &[RunReport]) -> Chart {
    Chart::Line(plots::waf_chart(reports))
}

/// Bytes written per operation by purpose, one stacked bar per run (000 Figure 13b).
pub fn write_drilldown(reports: &[RunReport]) -> Chart {
    let mut chart = plots::drilldown_chart(reports);
    chart.groups = run_labels(reports);
    Chart::Bar(chart)
}

/// Operations per second per interval over the run's time, one line per run.
pub fn throughput_over_time(reports: &[RunReport]) -> Chart {
    let series = reports
        .iter()
        .zip(run_labels(reports))
        .map(|(r, label)| {
            let points = r
                .intervals
                .iter()
                .filter_map(|i| Some((i.end_s, i.interval.ops_per_sec? / 1000.0)))
                .collect();
            Series::new(label, points)
        })
        .collect();
    Chart::Line(LineChart {
        title: "Throughput over time (per interval)".into(),
        x_label: "time since the measurement began (s)".into(),
        y_label: "throughput (K ops/s)".into(),
        series,
        y_range: None,
        x_from_zero: true,
    })
}

/// Picks one percentile of a latency summary.
type Pick = fn(&HistogramSummary) -> u64;

const PERCENTILES: [(&str, Pick); 4] =
    [("p50", |s| s.p50_ns), ("p90", |s| s.p90_ns), ("p99", |s| s.p99_ns), ("p99.9", |s| s.p999_ns)];

/// Latency percentiles of all operations over the whole measurement, grouped per run.
pub fn latency_percentiles(reports: &[RunReport]) -> Chart {
    let values = reports
        .iter()
        .map(|r| {
            let all = r.latency.get("all").copied().unwrap_or_default();
            PERCENTILES.iter().map(|(_, pick)| pick(&all) as f64 / 1000.0).collect()
        })
        .collect();
    Chart::Bar(BarChart {
        title: "Latency percentiles, all operations".into(),
        y_label: "latency (µs)".into(),
        groups: run_labels(reports),
        series_labels: PERCENTILES.iter().map(|(name, _)| name.to_string()).collect(),
        values,
        stacked: false,
    })
}

/// Latency percentiles of one run over time: (interval end in seconds, the interval's
/// latency summary). Run reports do not record per-interval latency yet; a runner that does
/// passes it here.
#[derive(Debug, Clone, PartialEq)]
pub struct LatencyTimeline {
    pub label: String,
    pub points: Vec<(f64, HistogramSummary)>,
}

/// p50, p99 and p99.9 over time, three lines per run.
pub fn latency_over_time(timelines: &[LatencyTimeline]) -> Chart {
    let mut series = Vec::with_capacity(timelines.len() * 3);
    for timeline in timelines {
        for (name, pick) in [PERCENTILES[0], PERCENTILES[2], PERCENTILES[3]] {
            let points =
                timeline.points.iter().map(|(t, s)| (*t, pick(s) as f64 / 1000.0)).collect();
            series.push(Series::new(format!("{}: {name}", timeline.label), points));
        }
    }
    Chart::Line(LineChart {
        title: "Latency percentiles over time (per interval)".into(),
        x_label: "time since the measurement began (s)".into(),
        y_label: "latency (µs)".into(),
        series,
        y_range: None,
        x_from_zero: true,
    })
}

/// The valid ratio of GC victims as a histogram of equal-width buckets over [0, 100%], the last
/// bucket holding exactly 100% (flashemu's `victim_valid_hist` layout).
#[derive(Debug, Clone, PartialEq)]
pub struct VictimHistogram {
    pub label: String,
    pub counts: Vec<u64>,
}

impl VictimHistogram {
    /// The histogram a run's report carries, if its target recorded one: looked up under
    /// `observed.target_after_run`, as `victim_valid_hist` or `counters.victim_valid_hist`.
    pub fn of_run(label: &str, report: &RunReport) -> Option<VictimHistogram> {
        let target = report.observed.get("target_after_run")?;
        let hist = target
            .get("victim_valid_hist")
            .or_else(|| target.get("counters")?.get("victim_valid_hist"))?;
        let counts: Vec<u64> =
            hist.as_array()?.iter().map(|v| v.as_u64()).collect::<Option<_>>()?;
        (counts.iter().sum::<u64>() > 0).then(|| VictimHistogram { label: label.into(), counts })
    }

    /// The histogram of an emulator run's JSON (`wafer emu run --json`, `counters.
    /// victim_valid_hist`), labelled with the device's interface, OP and GC policy unless a label
    /// is given.
    pub fn of_emu_json(label: Option<&str>, report: &serde_json::Value) -> Option<VictimHistogram> {
        let hist = report.get("counters")?.get("victim_valid_hist")?.as_array()?;
        let counts: Vec<u64> = hist.iter().map(|v| v.as_u64()).collect::<Option<_>>()?;
        let device = report.get("device");
        let field = |key: &str| device.and_then(|d| d.get(key));
        let label = label.map_or_else(
            || {
                let interface = field("interface").and_then(|v| v.as_str()).unwrap_or("emulator");
                let policy = field("gc_policy").and_then(|v| v.as_str()).unwrap_or("?");
                let op = field("op").and_then(|v| v.as_f64()).unwrap_or(f64::NAN) * 100.0;
                format!("{interface}, OP {op:.0}%, {policy}")
            },
            str::to_string,
        );
        (counts.iter().sum::<u64>() > 0).then_some(VictimHistogram { label, counts })
    }

    /// (valid ratio in percent at the bucket's upper edge, victims in the bucket).
    fn weighted_percent(&self) -> Vec<(f64, f64)> {
        let buckets = self.counts.len().saturating_sub(1).max(1) as f64;
        self.counts
            .iter()
            .enumerate()
            .map(|(i, &c)| ((((i + 1) as f64) * 100.0 / buckets).min(100.0), c as f64))
            .collect()
    }
}

/// CDF of the valid ratio of GC victims, one line per histogram (the cheaper a victim, the
/// further left its curve rises).
pub fn victim_valid_cdf(histograms: &[VictimHistogram]) -> Chart {
    let series = histograms
        .iter()
        .map(|h| Series::new(h.label.clone(), cdf_points(&h.weighted_percent())))
        .collect();
    Chart::Line(LineChart {
        title: "GC victims: CDF of the valid ratio".into(),
        x_label: "valid pages in the victim (%)".into(),
        y_label: "fraction of victims at or below".into(),
        series,
        y_range: Some((0.0, 1.0)),
        x_from_zero: true,
    })
}

/// CDF of the DB GC victims' valid ratio per run (000 Figure 13a), from the runs' summaries;
/// None when no run collected a victim.
pub fn db_victim_valid_cdf(runs: &[RunReport]) -> Option<Chart> {
    let series: Vec<Series> = runs
        .iter()
        .zip(run_labels(runs))
        .filter_map(|(r, label)| {
            let cdf = r.summary.gc_victim_valid_cdf?;
            let bins = cdf.len() as f64;
            // From (0, 0): the share at or below each bin's upper edge, in percent.
            let points = std::iter::once((0.0, 0.0))
                .chain(cdf.iter().enumerate().map(|(i, c)| ((i + 1) as f64 * 100.0 / bins, *c)))
                .collect();
            Some(Series::new(label, points))
        })
        .collect();
    (!series.is_empty()).then(|| {
        Chart::Line(LineChart {
            title: "DB GC victims: CDF of the valid ratio (000 Figure 13a)".into(),
            x_label: "valid slots in the victim zone (%)".into(),
            y_label: "fraction of victims at or below".into(),
            series,
            y_range: Some((0.0, 1.0)),
            x_from_zero: true,
        })
    })
}

/// A table column as grouped bars: per row, the measured value beside the paper's (a missing
/// value leaves a gap).
pub fn measured_beside_paper(
    title: &str,
    y_label: &str,
    rows: &[(String, Option<f64>, Option<f64>)],
) -> Chart {
    Chart::Bar(BarChart {
        title: title.into(),
        y_label: y_label.into(),
        groups: rows.iter().map(|r| r.0.clone()).collect(),
        series_labels: vec!["measured".into(), "000 (published)".into()],
        values: rows
            .iter()
            .map(|(_, m, p)| vec![m.unwrap_or(f64::NAN), p.unwrap_or(f64::NAN)])
            .collect(),
        stacked: false,
    })
}
