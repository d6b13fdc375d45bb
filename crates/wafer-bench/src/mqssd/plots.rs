//! Charts like 001 Figures 1, 3 and 4. The chart library has linear axes only, so r and k are
//! drawn as log10 r and log2 k, and costs as log10 microseconds. Every chart goes through
//! [`save`], the one call into the plot module.
use std::path::{Path, PathBuf};

use super::{DeviceProfile, MqssdError, Op};
use crate::plot::{LineChart, Series};

const WIDTH_PX: u32 = 900;
const HEIGHT_PX: u32 = 560;
/// Points per model line.
const LINE_POINTS: usize = 40;

fn save(path: &Path, chart: &LineChart) -> Result<(), MqssdError> {
    let chart = crate::plot::Chart::from(chart.clone());
    let bytes = crate::plot::render_for_path(&chart, path, (WIDTH_PX, HEIGHT_PX)).map_err(|e| {
        MqssdError::Io { path: path.display().to_string(), source: std::io::Error::other(e) }
    })?;
    std::fs::write(path, bytes)
        .map_err(|source| MqssdError::Io { path: path.display().to_string(), source })
}

fn op_name(op: Op) -> &'static str {
    match op {
        Op::Read => "read",
        Op::Write => "write",
    }
}

/// Measured throughput against log10 r, one line per k; with `model`, eq. 7-8's line beside
/// each (Figure 4), else the measurements alone (Figure 1).
fn throughput_chart(profile: &DeviceProfile, op: Op, model: bool) -> LineChart {
    let mut series = Vec::new();
    let r_min = profile.points.iter().map(|p| p.r).fold(1.0, f64::min);
    for fit in &profile.fits {
        let measured: Vec<(f64, f64)> = profile
            .points
            .iter()
            .filter(|p| p.op == op && p.k == fit.k)
            .map(|p| (p.r.log10(), p.bytes_per_s / 1e6))
            .collect();
        series.push(Series::new(format!("k={} measured", fit.k), measured));
        if model {
            let line = (0..=LINE_POINTS)
                .map(|i| {
                    let log_r = r_min.log10() * (1.0 - i as f64 / LINE_POINTS as f64);
                    let r = 10f64.powf(log_r);
                    let bytes_per_s = match op {
                        Op::Write => profile.write_bytes_per_s(r, fit.k),
                        Op::Read => profile.read_bytes_per_s(r, fit.k),
                    };
                    (log_r, bytes_per_s / 1e6)
                })
                .collect();
            series.push(Series::new(format!("k={} MQSSD", fit.k), line));
        }
    }
    let figure = if model { "Fig. 4: MQSSD eq. 7-8 vs measured" } else { "Fig. 1: file I/O" };
    LineChart {
        title: format!("{figure}, {} throughput", op_name(op)),
        x_label: "log10 r (fraction of pages accessed at random)".into(),
        y_label: "MB/s".into(),
        series,
        y_range: None,
        x_from_zero: false,
    }
}

/// Figure 3: the per-k fitted costs and the rational functions through them.
fn cost_chart(profile: &DeviceProfile) -> LineChart {
    let k_max = profile.fits.iter().map(|f| f.k).max().unwrap_or(1);
    let mut series = Vec::new();
    type Getters = (&'static str, fn(&super::KFit) -> f64, fn(&super::Costs) -> f64);
    let names: [Getters; 4] = [
        ("s", |f| f.s, |c| c.s_us),
        ("beta", |f| f.beta, |c| c.beta_us),
        ("t", |f| f.t, |c| c.t_us),
        ("alpha", |f| f.alpha, |c| c.alpha_us),
    ];
    for (name, fitted, function) in names {
        let points =
            profile.fits.iter().map(|f| (f64::from(f.k).log2(), fitted(f).log10())).collect();
        series.push(Series::new(format!("{name} fitted"), points));
        let line = (0..=LINE_POINTS)
            .map(|i| {
                let log_k = f64::from(k_max).log2() * i as f64 / LINE_POINTS as f64;
                let costs = profile.functions.at(2f64.powf(log_k));
                (log_k, function(&costs).max(1e-9).log10())
            })
            .collect();
        series.push(Series::new(format!("{name}(k) eq. 5-6"), line));
    }
    LineChart {
        title: "Fig. 3: cost functions".into(),
        x_label: "log2 k".into(),
        y_label: "log10 us".into(),
        series,
        y_range: None,
        x_from_zero: false,
    }
}

/// Writes Figures 1, 3 and 4 next to `stem` (`stem-fig1-write.png`, ...); returns the paths.
pub fn write_figures(
    profile: &DeviceProfile,
    stem: &Path,
    extension: &str,
) -> Result<Vec<PathBuf>, MqssdError> {
    let named = |suffix: &str| {
        let mut name = stem.as_os_str().to_os_string();
        name.push(format!("-{suffix}.{extension}"));
        PathBuf::from(name)
    };
    let charts = [
        ("fig1-write", throughput_chart(profile, Op::Write, false)),
        ("fig1-read", throughput_chart(profile, Op::Read, false)),
        ("fig3-costs", cost_chart(profile)),
        ("fig4-write", throughput_chart(profile, Op::Write, true)),
        ("fig4-read", throughput_chart(profile, Op::Read, true)),
    ];
    let mut paths = Vec::with_capacity(charts.len());
    for (suffix, chart) in &charts {
        let path = named(suffix);
        save(&path, chart)?;
        paths.push(path);
    }
    Ok(paths)
}
