//! The MQSSD model of 001 sec. 4.2: per-k affine fits of the cost per page against the fraction
//! of random accesses, rational functions of k across them (eq. 5-6), and the throughput they
//! predict (eq. 7-8).
//!
//! Units and the reading of eq. 7-8 used here: `r` is the fraction of pages that begin a random
//! access (001 varies it from 0.1% to 100% of pages), costs are device-wide microseconds (all k
//! threads together), and the time of N bytes is `(N / B) * (r * s(k) + beta(k))`, so the
//! write throughput is `B / (r * s(k) + beta(k))` (eq. 7) and the read throughput
//! `B / (r * t(k) + alpha(k))` (eq. 8). The printed eq. 7-8 show the two terms as a sum of
//! reciprocals; the harmonic form is the one the affine cost of eq. 3 implies.
use serde::{Deserialize, Serialize};

use super::error::MqssdError;
use super::fit::{affine_fit, affine_fit_weighted, Rational};
use super::op::Op;

/// Degrees of 001 eq. 5 (s, t, alpha) and eq. 6 (beta: garbage collection needs one more).
const SETUP_DEGREE: usize = 2;
const BETA_DEGREE: usize = 3;
const US_PER_S: f64 = 1e6;

/// One measured point of the file benchmark (001 Figure 1): aggregate throughput of k threads.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Point {
    pub op: Op,
    pub k: u32,
    pub r: f64,
    pub bytes_per_s: f64,
}

/// The fitted costs of one k, microseconds (001 Table 2), with each fit's R^2.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct KFit {
    pub k: u32,
    pub s: f64,
    pub beta: f64,
    pub t: f64,
    pub alpha: f64,
    pub r2_write: f64,
    pub r2_read: f64,
}

/// Costs at one concurrency, microseconds.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Costs {
    pub s_us: f64,
    pub beta_us: f64,
    pub t_us: f64,
    pub alpha_us: f64,
}

impl Costs {
    /// Eq. 7: write bytes per second at random fraction `r`.
    pub fn write_bytes_per_s(&self, r: f64, page_bytes: u64) -> f64 {
        page_bytes as f64 * US_PER_S / (r * self.s_us + self.beta_us)
    }
    /// Eq. 8: read bytes per second at random fraction `r`.
    pub fn read_bytes_per_s(&self, r: f64, page_bytes: u64) -> f64 {
        page_bytes as f64 * US_PER_S / (r * self.t_us + self.alpha_us)
    }
}

/// Eq. 5-6 for each cost.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CostFunctions {
    pub s: Rational,
    pub beta: Rational,
    pub t: Rational,
    pub alpha: Rational,
}

impl CostFunctions {
    pub fn at(&self, k: f64) -> Costs {
        Costs {
            s_us: self.s.eval(k),
            beta_us: self.beta.eval(k),
            t_us: self.t.eval(k),
            alpha_us: self.alpha.eval(k),
        }
    }
}

/// What was measured and how: written into the profile so a reader knows its provenance.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DeviceInfo {
    pub device: String,
    pub page_bytes: u64,
    pub file_bytes: u64,
    pub direct: bool,
    pub seconds_per_point: f64,
}

/// Timed fdatasyncs: the mean latency over repeats of writing `pages` pages as one sequential
/// run and then syncing.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct SyncPoint {
    pub pages: u64,
    pub us: f64,
}

/// What one fdatasync after a batch costs: `fixed_us + per_page_us * pages` written since the
/// last sync. 001's costs are of unsynced throughput; the engine syncs once per out-of-place
/// batch and twice per in-place one, a cost per batch that only a larger batch spreads.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SyncCost {
    pub fixed_us: f64,
    pub per_page_us: f64,
    pub points: Vec<SyncPoint>,
}

impl SyncCost {
    /// The affine fit of latency on pages. A slope the noise makes negative is taken as none
    /// (a sync never gets cheaper for more data), and then the fixed cost is the points' mean.
    pub fn fit(points: Vec<SyncPoint>) -> Result<SyncCost, MqssdError> {
        let valid = !points.is_empty() && points.iter().all(|p| p.us.is_finite() && p.us >= 0.0);
        if !valid {
            return Err(MqssdError::Invalid("sync points must be finite and not negative".into()));
        }
        let (xs, ys): (Vec<f64>, Vec<f64>) = points.iter().map(|p| (p.pages as f64, p.us)).unzip();
        let mean_us = ys.iter().sum::<f64>() / ys.len() as f64;
        let (fixed_us, per_page_us) = match affine_fit(&xs, &ys) {
            Some(fit) if fit.slope > 0.0 && fit.intercept >= 0.0 => (fit.intercept, fit.slope),
            _ => (mean_us, 0.0),
        };
        Ok(SyncCost { fixed_us, per_page_us, points })
    }

    /// Microseconds of one fdatasync after `pages` pages were written.
    pub fn at(&self, pages: u64) -> f64 {
        self.fixed_us + self.per_page_us * pages as f64
    }
}

/// A device profile: the TOML `wafer profile` writes and the emulator's MQSSD mode reads.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DeviceProfile {
    pub info: DeviceInfo,
    pub fits: Vec<KFit>,
    pub functions: CostFunctions,
    pub points: Vec<Point>,
    /// Absent in profiles measured before syncs were: then a sync is priced at nothing.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sync: Option<SyncCost>,
}

/// One measured point beside its prediction by eq. 7-8 from the fitted functions.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct PredictionError {
    pub op: Op,
    pub k: u32,
    pub r: f64,
    pub measured_bytes_per_s: f64,
    pub predicted_bytes_per_s: f64,
    /// (predicted - measured) / measured.
    pub relative_error: f64,
    /// The same by the affine fit of the point's own k (Table 2's row), not eq. 5-6.
    pub per_k_bytes_per_s: f64,
    pub per_k_relative_error: f64,
}

impl DeviceProfile {
    /// Fits every k of `points` (each k needs at least two r values per op) and the functions
    /// across k.
    pub fn fit(info: DeviceInfo, points: Vec<Point>) -> Result<DeviceProfile, MqssdError> {
        if info.page_bytes == 0 {
            return Err(MqssdError::Invalid("page_bytes is 0".into()));
        }
        let mut ks: Vec<u32> = points.iter().map(|p| p.k).collect();
        ks.sort_unstable();
        ks.dedup();
        let mut fits = Vec::with_capacity(ks.len());
        for &k in &ks {
            let (beta, s, r2_write) = fit_op(&points, Op::Write, k, info.page_bytes)?;
            let (alpha, t, r2_read) = fit_op(&points, Op::Read, k, info.page_bytes)?;
            fits.push(KFit { k, s, beta, t, alpha, r2_write, r2_read });
        }
        let functions = fit_functions(&fits)?;
        Ok(DeviceProfile { info, fits, functions, points, sync: None })
    }

    /// Microseconds of one fdatasync after `pages` pages; 0 when the profile has no sync term.
    pub fn sync_us(&self, pages: u64) -> f64 {
        self.sync.as_ref().map_or(0.0, |s| s.at(pages))
    }

    pub fn costs_at(&self, k: u32) -> Costs {
        self.functions.at(f64::from(k.max(1)))
    }

    pub fn write_bytes_per_s(&self, r: f64, k: u32) -> f64 {
        self.costs_at(k).write_bytes_per_s(r, self.info.page_bytes)
    }

    pub fn read_bytes_per_s(&self, r: f64, k: u32) -> f64 {
        self.costs_at(k).read_bytes_per_s(r, self.info.page_bytes)
    }

    /// Every measured point against eq. 7-8.
    pub fn prediction_errors(&self) -> Vec<PredictionError> {
        self.points
            .iter()
            .map(|p| {
                let predicted = match p.op {
                    Op::Write => self.write_bytes_per_s(p.r, p.k),
                    Op::Read => self.read_bytes_per_s(p.r, p.k),
                };
                let row = self.fits.iter().find(|f| f.k == p.k).map(|f| Costs {
                    s_us: f.s,
                    beta_us: f.beta,
                    t_us: f.t,
                    alpha_us: f.alpha,
                });
                let per_k = row.map_or(f64::NAN, |c| match p.op {
                    Op::Write => c.write_bytes_per_s(p.r, self.info.page_bytes),
                    Op::Read => c.read_bytes_per_s(p.r, self.info.page_bytes),
                });
                PredictionError {
                    per_k_bytes_per_s: per_k,
                    per_k_relative_error: (per_k - p.bytes_per_s) / p.bytes_per_s,
                    op: p.op,
                    k: p.k,
                    r: p.r,
                    measured_bytes_per_s: p.bytes_per_s,
                    predicted_bytes_per_s: predicted,
                    relative_error: (predicted - p.bytes_per_s) / p.bytes_per_s,
                }
            })
            .collect()
    }

    pub fn to_toml(&self) -> Result<String, MqssdError> {
        toml::to_string(self).map_err(|e| MqssdError::Toml(e.to_string()))
    }

    pub fn from_toml(text: &str) -> Result<DeviceProfile, MqssdError> {
        let profile: DeviceProfile =
            toml::from_str(text).map_err(|e| MqssdError::Toml(e.to_string()))?;
        if profile.fits.is_empty() || profile.info.page_bytes == 0 {
            return Err(MqssdError::Invalid("a profile needs fits and a page size".into()));
        }
        if let Some(sync) = &profile.sync {
            let ok = |v: f64| v.is_finite() && v >= 0.0;
            if !ok(sync.fixed_us) || !ok(sync.per_page_us) {
                return Err(MqssdError::Invalid(
                    "sync costs must be finite and not negative".into(),
                ));
            }
        }
        Ok(profile)
    }
}

/// The affine fit of one op at one k: (transfer, setup, R^2) in microseconds per page.
fn fit_op(
    points: &[Point],
    op: Op,
    k: u32,
    page_bytes: u64,
) -> Result<(f64, f64, f64), MqssdError> {
    let (rs, us): (Vec<f64>, Vec<f64>) = points
        .iter()
        .filter(|p| p.op == op && p.k == k && p.bytes_per_s > 0.0)
        .map(|p| (p.r, page_bytes as f64 * US_PER_S / p.bytes_per_s))
        .unzip();
    // Relative weights: throughput noise is a fraction of the value, and r spans 1000x.
    let ws: Vec<f64> = us.iter().map(|u| 1.0 / (u * u)).collect();
    let fit = affine_fit_weighted(&rs, &us, &ws).ok_or(MqssdError::TooFewPoints { op, k })?;
    // A noisy fit can dip below zero; a cost below a nanosecond is the same as none, and a
    // positive floor keeps eq. 5-6 fittable in relative error.
    const FLOOR_US: f64 = 1e-3;
    Ok((fit.intercept.max(FLOOR_US), fit.slope.max(FLOOR_US), fit.r2))
}

fn fit_functions(fits: &[KFit]) -> Result<CostFunctions, MqssdError> {
    let ks: Vec<f64> = fits.iter().map(|f| f64::from(f.k)).collect();
    let one = |name: &'static str, degree: usize, get: fn(&KFit) -> f64| {
        let ys: Vec<f64> = fits.iter().map(get).collect();
        Rational::fit(&ks, &ys, degree).ok_or(MqssdError::FitFailed(name))
    };
    Ok(CostFunctions {
        s: one("s", SETUP_DEGREE, |f| f.s)?,
        beta: one("beta", BETA_DEGREE, |f| f.beta)?,
        t: one("t", SETUP_DEGREE, |f| f.t)?,
        alpha: one("alpha", SETUP_DEGREE, |f| f.alpha)?,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// 001 Table 2 (Samsung 990 Pro), with setups rescaled to per-random-access microseconds.
    fn truth(k: u32) -> Costs {
        let table = [
            (1, 105.0, 2.79, 55.0, 3.53),
            (2, 86.0, 3.01, 15.0, 1.71),
            (4, 52.0, 2.59, 4.0, 0.659),
            (8, 27.0, 1.93, 1.1, 0.265),
            (16, 14.0, 1.27, 0.35, 0.157),
            (32, 7.3, 0.891, 0.15, 0.121),
            (64, 4.5, 0.745, 0.10, 0.105),
            (128, 3.4, 0.697, 0.077, 0.0974),
        ];
        let row = table.iter().find(|row| row.0 == k).expect("k in table");
        Costs { s_us: row.1, beta_us: row.2, t_us: row.3, alpha_us: row.4 }
    }

    fn synthetic(noise: f64) -> Vec<Point> {
        let rs = [0.001, 0.01, 0.1, 0.25, 0.5, 1.0];
        let mut points = Vec::new();
        for k in [1u32, 2, 4, 8, 16, 32, 64, 128] {
            for (i, &r) in rs.iter().enumerate() {
                // Deterministic +-noise alternating by point.
                let wobble =
                    if (i + k as usize).is_multiple_of(2) { 1.0 + noise } else { 1.0 - noise };
                let c = truth(k);
                points.push(Point {
                    op: Op::Write,
                    k,
                    r,
                    bytes_per_s: c.write_bytes_per_s(r, 4096) * wobble,
                });
                points.push(Point {
                    op: Op::Read,
                    k,
                    r,
                    bytes_per_s: c.read_bytes_per_s(r, 4096) / wobble,
                });
            }
        }
        points
    }

    fn info() -> DeviceInfo {
        DeviceInfo {
            device: "synthetic".into(),
            page_bytes: 4096,
            file_bytes: 0,
            direct: true,
            seconds_per_point: 0.0,
        }
    }

    #[test]
    fn per_k_fits_recover_known_constants_within_5_percent() {
        let profile = DeviceProfile::fit(info(), synthetic(0.01)).expect("fit");
        for fit in &profile.fits {
            let c = truth(fit.k);
            for (got, want, name) in [
                (fit.s, c.s_us, "s"),
                (fit.beta, c.beta_us, "beta"),
                (fit.t, c.t_us, "t"),
                (fit.alpha, c.alpha_us, "alpha"),
            ] {
                assert!((got / want - 1.0).abs() < 0.05, "k {} {name}: {got} vs {want}", fit.k);
            }
            assert!(fit.r2_write > 0.99 && fit.r2_read > 0.99);
        }
    }

    #[test]
    fn rational_functions_track_the_table_and_predict_throughput() {
        let profile = DeviceProfile::fit(info(), synthetic(0.0)).expect("fit");
        for fit in &profile.fits {
            let c = profile.costs_at(fit.k);
            for (got, want, name) in [
                (c.s_us, fit.s, "s"),
                (c.beta_us, fit.beta, "beta"),
                (c.t_us, fit.t, "t"),
                (c.alpha_us, fit.alpha, "alpha"),
            ] {
                assert!((got / want - 1.0).abs() < 0.2, "k {} {name}: {got} vs {want}", fit.k);
            }
        }
        let worst =
            profile.prediction_errors().iter().map(|e| e.relative_error.abs()).fold(0.0, f64::max);
        assert!(worst < 0.2, "worst eq. 7-8 error {worst}");
        let text = profile.to_toml().expect("toml");
        assert_eq!(DeviceProfile::from_toml(&text).expect("parse"), profile);
    }

    #[test]
    fn a_k_with_one_r_is_refused() {
        let points = vec![Point { op: Op::Write, k: 1, r: 0.5, bytes_per_s: 1e6 }];
        assert!(matches!(DeviceProfile::fit(info(), points), Err(MqssdError::TooFewPoints { .. })));
    }

    #[test]
    fn sync_cost_is_the_affine_fit_of_its_points() {
        // 1000 us + 2 us per page, exactly: the fit returns both.
        let points = [1u64, 16, 64, 256]
            .iter()
            .map(|&pages| SyncPoint { pages, us: 1000.0 + 2.0 * pages as f64 })
            .collect();
        let sync = SyncCost::fit(points).expect("fit");
        assert!((sync.fixed_us - 1000.0).abs() < 1e-6 && (sync.per_page_us - 2.0).abs() < 1e-9);
        assert!((sync.at(100) - 1200.0).abs() < 1e-6);
        // Falling with pages (noise): no slope, the mean (3000 + 2000) / 2.
        let falling =
            vec![SyncPoint { pages: 1, us: 3000.0 }, SyncPoint { pages: 256, us: 2000.0 }];
        let sync = SyncCost::fit(falling).expect("fit");
        assert_eq!((sync.fixed_us, sync.per_page_us), (2500.0, 0.0));
        assert!(SyncCost::fit(vec![]).is_err());
        assert!(SyncCost::fit(vec![SyncPoint { pages: 1, us: f64::NAN }]).is_err());
    }

    #[test]
    fn a_profile_without_a_sync_term_loads_and_prices_syncs_at_nothing() {
        let mut profile = DeviceProfile::fit(info(), synthetic(0.0)).expect("fit");
        let text = profile.to_toml().expect("toml");
        assert!(!text.contains("[sync]"));
        let old = DeviceProfile::from_toml(&text).expect("parse");
        assert_eq!(old.sync, None);
        assert_eq!(old.sync_us(64), 0.0);
        profile.sync = Some(SyncCost::fit(vec![SyncPoint { pages: 1, us: 3500.0 }]).expect("fit"));
        let text = profile.to_toml().expect("toml");
        let back = DeviceProfile::from_toml(&text).expect("parse");
        assert_eq!(back, profile);
        assert_eq!(back.sync_us(64), 3500.0);
        let bad = text.replace("fixed_us = 3500.0", "fixed_us = -1.0");
        assert!(matches!(DeviceProfile::from_toml(&bad), Err(MqssdError::Invalid(_))));
    }
}
