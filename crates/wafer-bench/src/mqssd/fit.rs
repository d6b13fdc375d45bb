//! Small least squares: the affine fit of one k (cost per page against r, 001 sec. 4.2) and the
//! rational functions across k (001 eq. 5-6). Hand-written: the systems are at most 7x7.
//!
//! Rational fits minimise the *relative* error, because the costs span orders of magnitude
//! across k (001 Table 2: t(k) falls 700x) and an absolute fit would ignore the large k.

/// Largest system solved; eq. 6 has 4 + 3 unknowns (d0 is fixed to 1).
const UNKNOWNS_MAX: usize = 8;
/// Sanathan-Koerner reweighting rounds: each re-solves the linearised problem with weights from
/// the previous denominator, converging to the true relative least squares in a few rounds.
const REWEIGHT_ROUNDS: usize = 12;
/// Points at which a fitted denominator must stay positive (no pole inside the fitted range).
const POLE_CHECK_POINTS: usize = 1024;
/// How far outside the data's range a fitted function may go between the points.
const OVERSHOOT_FACTOR: f64 = 1.25;

/// y = intercept + slope * x, with the coefficient of determination of the fit.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct AffineFit {
    pub intercept: f64,
    pub slope: f64,
    pub r2: f64,
}

/// Ordinary least squares of y on x. None with fewer than two distinct x or non-finite input.
pub fn affine_fit(xs: &[f64], ys: &[f64]) -> Option<AffineFit> {
    affine_fit_weighted(xs, ys, &vec![1.0; xs.len()])
}

/// Weighted least squares of y on x (weights > 0); R^2 is the weighted one. With weights
/// 1 / y^2 it minimises relative error, which is what a measurement with relative noise needs:
/// an unweighted fit lets the slowest points (r = 1) decide the intercept too.
pub fn affine_fit_weighted(xs: &[f64], ys: &[f64], ws: &[f64]) -> Option<AffineFit> {
    let sizes_ok = xs.len() == ys.len() && ys.len() == ws.len() && xs.len() >= 2;
    if !sizes_ok || !all_finite(xs) || !all_finite(ys) || ws.iter().any(|w| w.is_nan() || *w <= 0.0)
    {
        return None;
    }
    let w_sum: f64 = ws.iter().sum();
    let mean_x = xs.iter().zip(ws).map(|(x, w)| w * x).sum::<f64>() / w_sum;
    let mean_y = ys.iter().zip(ws).map(|(y, w)| w * y).sum::<f64>() / w_sum;
    let points = || xs.iter().zip(ys).zip(ws).map(|((x, y), w)| (*x, *y, *w));
    let sxx: f64 = points().map(|(x, _, w)| w * (x - mean_x).powi(2)).sum();
    let sxy: f64 = points().map(|(x, y, w)| w * (x - mean_x) * (y - mean_y)).sum();
    let spread_x = xs.iter().fold(0.0f64, |m, x| m.max((x - mean_x).abs()));
    if spread_x <= f64::EPSILON * mean_x.abs().max(1.0) || sxx <= 0.0 {
        return None;
    }
    let slope = sxy / sxx;
    let intercept = mean_y - slope * mean_x;
    let ss_res: f64 = points().map(|(x, y, w)| w * (y - intercept - slope * x).powi(2)).sum();
    let ss_tot: f64 = points().map(|(_, y, w)| w * (y - mean_y).powi(2)).sum();
    let r2 = if ss_tot > 0.0 { 1.0 - ss_res / ss_tot } else { 1.0 };
    Some(AffineFit { intercept, slope, r2 })
}

fn all_finite(values: &[f64]) -> bool {
    values.iter().all(|v| v.is_finite())
}

/// f(k) = P(x) / Q(x) with x = k / k_scale; `num` and `den` are the coefficients c_i and d_i
/// from the constant term up (`den[0]` is 1). The scale keeps k^3 terms well conditioned.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Rational {
    pub num: Vec<f64>,
    pub den: Vec<f64>,
    pub k_scale: f64,
}

impl Rational {
    pub fn eval(&self, k: f64) -> f64 {
        let x = k / self.k_scale;
        horner(&self.num, x) / horner(&self.den, x)
    }

    /// The largest-degree rational fit of (ks, ys) up to `degree` (001 uses 2 for s, t, alpha
    /// and 3 for beta) that the points determine (2 * degree + 1 unknowns need as many points)
    /// and whose denominator has no pole in the fitted range. None for empty or bad input.
    pub fn fit(ks: &[f64], ys: &[f64], degree: usize) -> Option<Rational> {
        let ok_input = ks.len() == ys.len()
            && !ks.is_empty()
            && all_finite(ks)
            && all_finite(ys)
            && ks.iter().all(|&k| k > 0.0)
            && ys.iter().all(|&y| y > 0.0);
        if !ok_input {
            return None;
        }
        let k_max = ks.iter().copied().fold(0.0, f64::max);
        let k_min = ks.iter().copied().fold(f64::INFINITY, f64::min);
        let degree_max = degree.min((ks.len() - 1) / 2);
        let y_min = ys.iter().copied().fold(f64::INFINITY, f64::min);
        let y_max = ys.iter().copied().fold(0.0, f64::max);
        let shape =
            Shape { k_min, k_max, bounds: (y_min / OVERSHOOT_FACTOR, y_max * OVERSHOOT_FACTOR) };
        // Every reweighting round of every degree, refined, is a candidate; among the
        // well-behaved ones the least Akaike score wins: relative error, with a price per
        // unknown so noisy points (6 k, 5 unknowns) do not buy a wiggle through every one.
        let mut best: Option<(f64, Rational)> = None;
        for d in 0..=degree_max {
            let mut starts = fit_degree(ks, ys, d, k_max);
            // A flat start is pole free; refined, it walks to the nearest pole-free optimum.
            let mean = ys.iter().sum::<f64>() / ys.len() as f64;
            let mut flat =
                Rational { num: vec![0.0; d + 1], den: vec![0.0; d + 1], k_scale: k_max };
            (flat.num[0], flat.den[0]) = (mean, 1.0);
            starts.push(flat);
            for start in starts {
                if !shape.admits(&start) {
                    continue;
                }
                let fit = refine(start, ks, ys, &shape);
                let error = aic(fit.relative_sse(ks, ys), ks.len(), 2 * d + 1);
                if best.as_ref().is_none_or(|(e, _)| error < *e) {
                    best = Some((error, fit));
                }
            }
        }
        best.map(|(_, fit)| fit)
    }

    fn relative_sse(&self, ks: &[f64], ys: &[f64]) -> f64 {
        ks.iter().zip(ys).map(|(&k, &y)| (self.eval(k) / y - 1.0).powi(2)).sum()
    }

    /// The denominator keeps one sign over the range (P and Q may both be negative: only a
    /// sign change is a pole) and the value stays within `bounds` (a near-double root of Q
    /// makes a spike no sample of the sign test may catch). Sampled evenly in k and in log k,
    /// because the measured k are powers of two.
    fn well_behaved(&self, k_min: f64, k_max: f64, bounds: (f64, f64)) -> bool {
        let q_first = horner(&self.den, k_min / self.k_scale);
        let ratio = k_max / k_min;
        (0..=POLE_CHECK_POINTS).all(|i| {
            let t = i as f64 / POLE_CHECK_POINTS as f64;
            [k_min + (k_max - k_min) * t, k_min * ratio.powf(t)].iter().all(|&k| {
                let q = horner(&self.den, k / self.k_scale);
                let v = self.eval(k);
                q * q_first > 0.0 && v.is_finite() && v >= bounds.0 && v <= bounds.1
            })
        })
    }
}

fn horner(coefficients: &[f64], x: f64) -> f64 {
    coefficients.iter().rev().fold(0.0, |acc, c| acc * x + c)
}

/// Degree-`d` rational fits, relative error, by Sanathan-Koerner reweighting of the linearised
/// problem P(x) - y (Q(x) - 1) = y: every round's solution, first to last.
fn fit_degree(ks: &[f64], ys: &[f64], d: usize, k_scale: f64) -> Vec<Rational> {
    let unknowns = 2 * d + 1;
    assert!(unknowns <= UNKNOWNS_MAX, "degree {d} is beyond the solver's size");
    let mut den = vec![1.0; 1];
    den.resize(d + 1, 0.0);
    let mut fits = Vec::with_capacity(REWEIGHT_ROUNDS);
    for _ in 0..REWEIGHT_ROUNDS {
        let mut rows = Vec::with_capacity(ks.len());
        let mut rhs = Vec::with_capacity(ks.len());
        for (&k, &y) in ks.iter().zip(ys) {
            let x = k / k_scale;
            // Relative residual of the linearised form, with the last denominator's weight.
            let weight = 1.0 / (y * horner(&den, x).abs().max(1e-12));
            let mut row = Vec::with_capacity(unknowns);
            row.extend((0..=d).map(|i| weight * x.powi(i as i32)));
            row.extend((1..=d).map(|i| -weight * y * x.powi(i as i32)));
            rows.push(row);
            rhs.push(weight * y);
        }
        let Some(solution) = solve_least_squares(&rows, &rhs) else { break };
        let num = solution[..=d].to_vec();
        den = std::iter::once(1.0).chain(solution[d + 1..].iter().copied()).collect();
        fits.push(Rational { num, den: den.clone(), k_scale });
    }
    fits
}

/// Akaike's information criterion of a least-squares fit with `unknowns` parameters.
fn aic(sse: f64, points: usize, unknowns: usize) -> f64 {
    let n = points as f64;
    n * (sse / n).max(1e-30).ln() + 2.0 * unknowns as f64
}

/// Where a fitted function must behave: the fitted k range and the values allowed in it.
#[derive(Debug, Clone, Copy)]
struct Shape {
    k_min: f64,
    k_max: f64,
    bounds: (f64, f64),
}

impl Shape {
    fn admits(&self, fit: &Rational) -> bool {
        fit.well_behaved(self.k_min, self.k_max, self.bounds)
    }
}

/// Levenberg-Marquardt rounds refining a rational fit in true relative error.
const REFINE_ROUNDS: usize = 200;

/// Levenberg-Marquardt on r_i = P(x_i) / (Q(x_i) y_i) - 1, taking only steps that lower the
/// error and keep the range pole free, so the result is never worse than `fit`.
fn refine(mut fit: Rational, ks: &[f64], ys: &[f64], shape: &Shape) -> Rational {
    let d = fit.num.len() - 1;
    let unknowns = 2 * d + 1;
    let mut error = fit.relative_sse(ks, ys);
    let mut lambda = 1e-3;
    for _ in 0..REFINE_ROUNDS {
        let mut rows = Vec::with_capacity(ks.len());
        let mut residuals = Vec::with_capacity(ks.len());
        for (&k, &y) in ks.iter().zip(ys) {
            let x = k / fit.k_scale;
            let (p, q) = (horner(&fit.num, x), horner(&fit.den, x));
            let mut row = Vec::with_capacity(unknowns);
            row.extend((0..=d).map(|j| x.powi(j as i32) / (q * y)));
            row.extend((1..=d).map(|j| -p * x.powi(j as i32) / (q * q * y)));
            rows.push(row);
            residuals.push(p / (q * y) - 1.0);
        }
        let Some(step) = damped_step(&rows, &residuals, lambda) else { break };
        let mut trial = fit.clone();
        for (j, delta) in step.iter().enumerate() {
            if j <= d {
                trial.num[j] -= delta;
            } else {
                trial.den[j - d] -= delta;
            }
        }
        let trial_error = trial.relative_sse(ks, ys);
        if trial_error < error && shape.admits(&trial) {
            (fit, error, lambda) = (trial, trial_error, (lambda * 0.3).max(1e-12));
        } else {
            lambda *= 10.0;
            if lambda > 1e12 {
                break;
            }
        }
    }
    fit
}

/// Solves (J'J + lambda diag(J'J)) step = J'r.
fn damped_step(rows: &[Vec<f64>], residuals: &[f64], lambda: f64) -> Option<Vec<f64>> {
    let n = rows.first()?.len();
    let mut a = vec![vec![0.0; n + 1]; n];
    for (row, &r) in rows.iter().zip(residuals) {
        for i in 0..n {
            for j in 0..n {
                a[i][j] += row[i] * row[j];
            }
            a[i][n] += row[i] * r;
        }
    }
    for (i, line) in a.iter_mut().enumerate() {
        line[i] += lambda * line[i].max(1e-300);
    }
    gauss(a)
}

/// Least squares of an overdetermined (or square) system by the normal equations and Gaussian
/// elimination with partial pivoting. None if singular.
fn solve_least_squares(rows: &[Vec<f64>], rhs: &[f64]) -> Option<Vec<f64>> {
    let n = rows.first()?.len();
    if n == 0 || n > UNKNOWNS_MAX || rows.len() < n || rows.len() != rhs.len() {
        return None;
    }
    let mut a = vec![vec![0.0; n + 1]; n];
    for (row, &b) in rows.iter().zip(rhs) {
        if row.len() != n {
            return None;
        }
        for i in 0..n {
            for j in 0..n {
                a[i][j] += row[i] * row[j];
            }
            a[i][n] += row[i] * b;
        }
    }
    gauss(a)
}

fn gauss(mut a: Vec<Vec<f64>>) -> Option<Vec<f64>> {
    let n = a.len();
    let scale = a.iter().flat_map(|r| r.iter()).fold(0.0f64, |m, v| m.max(v.abs()));
    for col in 0..n {
        let pivot = (col..n).max_by(|&i, &j| a[i][col].abs().total_cmp(&a[j][col].abs()))?;
        if a[pivot][col].abs() <= scale * 1e-15 {
            return None;
        }
        a.swap(col, pivot);
        let (top, bottom) = a.split_at_mut(col + 1);
        let pivot_row = &top[col];
        for row in bottom.iter_mut() {
            let factor = row[col] / pivot_row[col];
            for (cell, p) in row[col..].iter_mut().zip(&pivot_row[col..]) {
                *cell -= factor * p;
            }
        }
    }
    let mut x = vec![0.0; n];
    for row in (0..n).rev() {
        let tail: f64 = (row + 1..n).map(|j| a[row][j] * x[j]).sum();
        x[row] = (a[row][n] - tail) / a[row][row];
    }
    x.iter().all(|v| v.is_finite()).then_some(x)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn affine_recovers_line_and_r2() {
        let xs = [0.001, 0.01, 0.1, 0.5, 1.0];
        let ys: Vec<f64> = xs.iter().map(|x| 2.5 + 40.0 * x).collect();
        let fit = affine_fit(&xs, &ys).expect("fit");
        assert!((fit.intercept - 2.5).abs() < 1e-9 && (fit.slope - 40.0).abs() < 1e-9);
        assert!((fit.r2 - 1.0).abs() < 1e-12);
        assert!(affine_fit(&[1.0, 1.0], &[2.0, 3.0]).is_none());
    }

    #[test]
    fn rational_recovers_a_known_function() {
        // 001 Table 2's t(k) shape: a steep fall that flattens.
        let truth =
            Rational { num: vec![150.0, 2.0, 30.0], den: vec![1.0, 60.0, 150.0], k_scale: 128.0 };
        let ks = [1.0, 2.0, 4.0, 8.0, 16.0, 32.0, 64.0, 128.0];
        let ys: Vec<f64> = ks.iter().map(|&k| truth.eval(k)).collect();
        let fit = Rational::fit(&ks, &ys, 2).expect("fit");
        for (&k, &y) in ks.iter().zip(&ys) {
            assert!((fit.eval(k) / y - 1.0).abs() < 0.01, "k {k}: {} vs {y}", fit.eval(k));
        }
    }

    #[test]
    fn a_fit_whose_numerator_and_denominator_are_both_negative_is_kept() {
        // Measured t(k) of this machine's disk: the best degree-1 fit has Q < 0 on [1, 32].
        let ks = [1.0, 2.0, 4.0, 8.0, 16.0, 32.0];
        let ys = [78.093, 38.519, 21.870, 17.370, 13.785, 11.571];
        let fit = Rational::fit(&ks, &ys, 2).expect("fit");
        assert!(fit.num.len() > 1, "fell back to a constant: {fit:?}");
        for (&k, &y) in ks.iter().zip(&ys) {
            assert!((fit.eval(k) / y - 1.0).abs() < 0.1, "k {k}: {} vs {y}", fit.eval(k));
        }
    }

    #[test]
    fn rational_degree_falls_with_few_points() {
        let fit = Rational::fit(&[1.0, 2.0], &[10.0, 6.0], 3).expect("fit");
        assert_eq!(fit.num.len(), 1);
        assert!(Rational::fit(&[], &[], 2).is_none());
        assert!(Rational::fit(&[1.0], &[-1.0], 2).is_none());
    }
}
