//! The result table printed at the end of a run: plain aligned text, one figure per line.
use std::fmt::Write as _;

use super::RunReport;

const GIB: f64 = (1u64 << 30) as f64;

pub fn gib(bytes: u64) -> String {
    format!("{:.3} GiB", bytes as f64 / GIB)
}

fn waf(value: Option<f64>) -> String {
    value.map(|w| format!("{w:.3}")).unwrap_or_else(|| "-".to_string())
}

/// Groups digits by thousands: 1234567 -> 1,234,567.
pub fn thousands(value: u64) -> String {
    let digits = value.to_string();
    let mut out = String::with_capacity(digits.len() + digits.len() / 3);
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// Renders the report as `label  value` rows, labels padded to one column.
pub fn render(report: &RunReport) -> String {
    let d = &report.device;
    let mut rows: Vec<(&str, String)> = vec![
        ("device", format!("{}, {} flash pages", d.interface, d.geometry.flash_page_bytes)),
        ("logical capacity", gib(d.logical_bytes)),
        ("physical capacity", gib(d.physical_bytes)),
        ("over-provisioning", format!("{:.1}%", d.op * 100.0)),
        ("GC policy", d.gc_policy.clone()),
        (
            "fill",
            format!(
                "{:.0}% ({} written)",
                report.fill_fraction * 100.0,
                gib(report.fill.host_bytes)
            ),
        ),
    ];
    for job in &report.jobs {
        let line = format!(
            "{} {} bs {} on {}+{} ({})",
            job.workload,
            job.dist,
            job.bs_bytes,
            gib(job.region_start_bytes),
            gib(job.region_bytes),
            job.placement
        );
        rows.push(("job", format!("{}: {line}", job.name)));
    }
    rows.extend([
        ("host writes", gib(report.host_bytes)),
        ("host reads", gib(report.host_read_bytes)),
        ("host trims", gib(report.host_trim_bytes)),
        (
            "flash writes",
            format!(
                "{} (host {}, GC {}, pad {})",
                gib(report.flash_bytes),
                gib(report.flash_host_bytes),
                gib(report.flash_gc_bytes),
                gib(report.flash_pad_bytes)
            ),
        ),
        ("WAF (cumulative)", waf(report.waf)),
        ("WAF (steady state)", waf(report.steady_state_waf)),
        ("GC victims", thousands(report.gc_victims)),
        (
            "victim valid ratio",
            report
                .gc_victim_mean_valid_ratio
                .map(|r| format!("{:.1}%", r * 100.0))
                .unwrap_or_else(|| "-".into()),
        ),
        ("block erases", thousands(report.erases)),
        (
            "sim rate",
            format!("{} host 4K writes/s", thousands(report.sim_host_writes_per_second as u64)),
        ),
        ("wall time", format!("{:.2} s", report.wall_seconds)),
    ]);
    let width = rows.iter().map(|(label, _)| label.len()).max().unwrap_or(0);
    let mut out = String::new();
    for (label, value) in rows {
        let _ = writeln!(out, "{label:<width$}  {value}");
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn thousands_groups_digits() {
        assert_eq!(thousands(0), "0");
        assert_eq!(thousands(999), "999");
        assert_eq!(thousands(1000), "1,000");
        assert_eq!(thousands(1234567), "1,234,567");
    }
}
