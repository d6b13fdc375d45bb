//! The result table printed at the end of a run: plain aligned text, one figure per line.
use std::fmt::Write as _;

use super::RunReport;

/// Bytes in the largest binary unit that keeps the number at 1 or more: `3.738 GiB`, `6.4 MiB`.
pub fn human_bytes(bytes: u64) -> String {
    const UNITS: [&str; 5] = ["B", "KiB", "MiB", "GiB", "TiB"];
    let mut value = bytes as f64;
    let mut unit = 0;
    while value >= 1024.0 && unit + 1 < UNITS.len() {
        value /= 1024.0;
        unit += 1;
    }
    if unit == 0 {
        format!("{bytes} B")
    } else {
        format!("{value:.3} {}", UNITS[unit])
    }
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
        ("logical capacity", human_bytes(d.logical_bytes)),
        ("physical capacity", human_bytes(d.physical_bytes)),
        ("over-provisioning", format!("{:.1}%", d.op * 100.0)),
        ("GC policy", d.gc_policy.clone()),
        (
            "fill",
            format!(
                "{:.0}% ({} written)",
                report.fill_fraction * 100.0,
                human_bytes(report.fill.host_bytes)
            ),
        ),
    ];
    for job in &report.jobs {
        let line = format!(
            "{} {} bs {} on [{}, +{}), {}",
            job.workload,
            job.dist,
            human_bytes(job.bs_bytes),
            human_bytes(job.region_start_bytes),
            human_bytes(job.region_bytes),
            job.placement
        );
        rows.push(("job", format!("{}: {line}", job.name)));
    }
    rows.extend([
        ("host writes", human_bytes(report.host_bytes)),
        ("host reads", human_bytes(report.host_read_bytes)),
        ("host trims", human_bytes(report.host_trim_bytes)),
        (
            "flash writes",
            format!(
                "{} (host {}, GC {}, pad {})",
                human_bytes(report.flash_bytes),
                human_bytes(report.flash_host_bytes),
                human_bytes(report.flash_gc_bytes),
                human_bytes(report.flash_pad_bytes)
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
        assert_eq!(human_bytes(512), "512 B");
        assert_eq!(human_bytes(6 << 20), "6.000 MiB");
        assert_eq!(human_bytes(3 << 30), "3.000 GiB");
    }
}
