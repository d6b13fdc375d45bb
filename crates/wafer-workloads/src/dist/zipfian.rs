//! YCSB's ZipfianGenerator: Gray et al., "Quickly Generating Billion-Record Synthetic Databases"
//! (SIGMOD 1994), with YCSB's conventions (item 0 is the most popular; the item count may grow,
//! and zeta is then extended incrementally instead of recomputed).
//!
//! Draw: u uniform in [0,1), uz = u * zeta(n); uz < 1 gives item 0, uz < 1 + 0.5^theta gives
//! item 1, otherwise item floor(n * (eta*u - eta + 1)^alpha) with alpha = 1/(1-theta) and
//! eta = (1 - (2/n)^(1-theta)) / (1 - zeta(2)/zeta(n)).
//!
//! Divergence from YCSB, on purpose: when the item count grows, YCSB recomputes eta with the
//! *construction-time* item count (`2.0 / items`), which is a slip in its code; we use the
//! current count, as Gray's formula says. The effect is below 1e-3 on any probability for the
//! growth YCSB workloads see (a few percent of the loaded items).

/// Terms summed one by one in [`zeta_range`]; beyond this the Euler-Maclaurin tail is used.
/// 2^20 terms keep zeta exact to ~1e-15 relative while 10^10 items cost milliseconds, not the
/// minutes YCSB's plain loop takes (YCSB precomputes that one constant for this reason).
const ZETA_EXACT_TERMS_MAX: u64 = 1 << 20;

/// Sum of 1/i^theta for i in (first, last], added to `initial`.
///
/// Summed exactly for up to [`ZETA_EXACT_TERMS_MAX`] terms; the rest by Euler-Maclaurin
/// (integral + endpoint and first-derivative corrections), whose next term is of order
/// a^-(theta+3) for a >= 2^20, far below f64 resolution of the sum.
pub fn zeta_range(first: u64, last: u64, theta: f64, initial: f64) -> f64 {
    assert!(first <= last);
    assert!(theta > 0.0 && theta < 1.0, "theta {theta} outside (0, 1)");
    let exact_last = last.min(first.saturating_add(ZETA_EXACT_TERMS_MAX));
    let mut sum = initial;
    for i in (first + 1)..=exact_last {
        sum += 1.0 / (i as f64).powf(theta);
    }
    if exact_last < last {
        // sum_{i=a+1}^{b} f(i) = integral_a^b f + (f(b) - f(a))/2 + (f'(b) - f'(a))/12 - ...
        // with f(x) = x^-theta, f'(x) = -theta x^-(theta+1).
        let a = exact_last as f64;
        let b = last as f64;
        let f = |x: f64| x.powf(-theta);
        let df = |x: f64| -theta * x.powf(-theta - 1.0);
        let integral = (b.powf(1.0 - theta) - a.powf(1.0 - theta)) / (1.0 - theta);
        sum += integral + (f(b) - f(a)) / 2.0 + (df(b) - df(a)) / 12.0;
    }
    sum
}

/// zeta(n, theta) = sum_{i=1}^{n} 1/i^theta.
pub fn zeta(n: u64, theta: f64) -> f64 {
    zeta_range(0, n, theta, 0.0)
}

/// Zipfian over [0, item_count), item 0 most popular. Randomness comes from the caller's
/// [`super::Rng`], so one generator per thread gives deterministic streams.
#[derive(Debug, Clone)]
pub struct Zipfian {
    item_count: u64,
    theta: f64,
    alpha: f64,
    zetan: f64,
    zeta2theta: f64,
    eta: f64,
    /// 0.5^theta, the width of item 1's band (hoisted out of `sample`).
    half_pow_theta: f64,
}

impl Zipfian {
    /// Zipfian over `item_count` items with constant `theta` in (0, 1).
    pub fn new(item_count: u64, theta: f64) -> Self {
        Self::with_zetan(item_count, theta, zeta(item_count, theta))
    }

    /// As [`Zipfian::new`] with a precomputed zeta(item_count, theta) (YCSB's scrambled
    /// generator passes its 10^10-item constant this way).
    pub fn with_zetan(item_count: u64, theta: f64, zetan: f64) -> Self {
        assert!(item_count > 0, "zipfian over zero items");
        assert!(theta > 0.0 && theta < 1.0, "theta {theta} outside (0, 1)");
        assert!(zetan >= 1.0);
        let zeta2theta = zeta(2, theta);
        let mut z = Zipfian {
            item_count,
            theta,
            alpha: 1.0 / (1.0 - theta),
            zetan,
            zeta2theta,
            eta: 0.0,
            half_pow_theta: 0.5f64.powf(theta),
        };
        z.eta = z.compute_eta();
        z
    }

    fn compute_eta(&self) -> f64 {
        // With one or two items every draw is resolved by the first two branches of `next`,
        // and the formula would divide by zero (zeta(2) == zeta(n)).
        if self.item_count <= 2 {
            return 0.0;
        }
        (1.0 - (2.0 / self.item_count as f64).powf(1.0 - self.theta))
            / (1.0 - self.zeta2theta / self.zetan)
    }

    pub fn item_count(&self) -> u64 {
        self.item_count
    }

    pub fn theta(&self) -> f64 {
        self.theta
    }

    pub fn zetan(&self) -> f64 {
        self.zetan
    }

    /// Grow the item space (YCSB: inserts add items). Zeta is extended incrementally over the
    /// new terms only. Shrinking is ignored, as YCSB does by default
    /// (`allowitemcountdecrease=false`), because recomputing from scratch is costly and usually
    /// a race between threads rather than intent.
    pub fn grow(&mut self, item_count: u64) {
        if item_count <= self.item_count {
            return;
        }
        self.zetan = zeta_range(self.item_count, item_count, self.theta, self.zetan);
        self.item_count = item_count;
        self.eta = self.compute_eta();
    }

    /// Next item in [0, item_count).
    #[inline]
    pub fn next(&self, rng: &mut super::rng::Rng) -> u64 {
        let u = rng.next_f64();
        self.sample(u)
    }

    /// The item for uniform draw `u` in [0, 1): the inverse-CDF approximation of Gray et al.
    #[inline]
    pub fn sample(&self, u: f64) -> u64 {
        debug_assert!((0.0..1.0).contains(&u));
        let uz = u * self.zetan;
        if uz < 1.0 {
            return 0;
        }
        if uz < 1.0 + self.half_pow_theta {
            return 1.min(self.item_count - 1);
        }
        let x = self.item_count as f64 * (self.eta * u - self.eta + 1.0).powf(self.alpha);
        // `as u64` saturates; the clamp covers u within an ulp of 1, where the power rounds
        // to exactly 1.0 and x == item_count.
        (x as u64).min(self.item_count - 1)
    }
}

#[cfg(test)]
mod tests {
    use super::super::Rng;
    use super::*;

    #[test]
    fn zeta_matches_ycsb_precomputed_constant() {
        // YCSB ScrambledZipfianGenerator.ZETAN = zeta(10^10, 0.99), computed by brute force.
        let z = zeta(10_000_000_000, 0.99);
        let want = 26.469_028_201_783_02;
        assert!((z - want).abs() / want < 1e-9, "zeta {z} want {want}");
    }

    #[test]
    fn zeta_tail_agrees_with_exact_sum() {
        // Force the Euler-Maclaurin path over a range that is also cheap to sum exactly.
        let n = ZETA_EXACT_TERMS_MAX * 3;
        let mut exact = 0.0;
        for i in 1..=n {
            exact += 1.0 / (i as f64).powf(0.8);
        }
        let approx = zeta(n, 0.8);
        assert!((exact - approx).abs() / exact < 1e-10, "{exact} vs {approx}");
        // Incremental growth gives the same as from scratch.
        let grown = zeta_range(1000, n, 0.8, zeta(1000, 0.8));
        assert!((grown - approx).abs() / approx < 1e-12);
    }

    /// Probability Gray's closed form gives item `k` (0-based, k >= 2): the width of the band
    /// of u that maps to it, from inverting floor(n * (eta*u - eta + 1)^alpha) = k.
    fn gray_mass(z: &Zipfian, k: u64) -> f64 {
        let n = z.item_count() as f64;
        let u2 = (1.0 + 0.5f64.powf(z.theta)) / z.zetan;
        let cut = |k: f64| ((k / n).powf(1.0 - z.theta) - 1.0 + z.eta) / z.eta;
        cut(k as f64 + 1.0).max(u2) - cut(k as f64).max(u2)
    }

    fn check_top_ranks(item_count: u64, theta: f64, seed: u64) {
        let zipf = Zipfian::new(item_count, theta);
        let mut rng = Rng::new(seed);
        let draws = 1_000_000u64;
        let mut counts = [0u64; 100];
        for _ in 0..draws {
            let v = zipf.next(&mut rng);
            assert!(v < item_count);
            if (v as usize) < counts.len() {
                counts[v as usize] += 1;
            }
        }
        let zetan = zeta(item_count, theta);
        let analytic = |rank0: usize| 1.0 / ((rank0 as f64 + 1.0).powf(theta) * zetan);
        let observed = |rank0: usize| counts[rank0] as f64 / draws as f64;
        let ctx = format!("seed {seed} n {item_count} theta {theta}");
        // Ranks 1 and 2 are exact in Gray's method: within sampling noise (~0.5%).
        for r in 0..2 {
            let (o, p) = (observed(r), analytic(r));
            assert!((o - p).abs() / p < 0.02, "{ctx}: rank {} {o} vs {p}", r + 1);
        }
        // Ranks >= 3 come from a continuous approximation that YCSB inherits: it overstates
        // rank 3 by ~17-19% and converges to the analytic value (<5% by rank 10). Check the
        // sampler against the closed form's own mass tightly, and the closed form against
        // the analytic zipf law within the approximation's documented bound.
        for r in 2..10 {
            let (o, p, g) = (observed(r), analytic(r), gray_mass(&zipf, r as u64));
            assert!((o - g).abs() / g < 0.03, "{ctx}: rank {} {o} vs closed form {g}", r + 1);
            let bound = if r < 4 { 0.20 } else { 0.10 };
            assert!((o - p).abs() / p < bound, "{ctx}: rank {} {o} vs analytic {p}", r + 1);
        }
        // Cumulative mass of the top 100 ranks within 3% of the analytic law.
        let o: f64 = (0..100).map(observed).sum();
        let p: f64 = (0..100.min(item_count as usize)).map(analytic).sum();
        assert!((o - p).abs() / p < 0.03, "{ctx}: top-100 mass {o} vs analytic {p}");
    }

    #[test]
    fn top_rank_frequencies_match_analytic() {
        check_top_ranks(1000, 0.99, 1);
        check_top_ranks(100_000, 0.99, 2);
        check_top_ranks(100_000, 0.8, 3);
    }

    #[test]
    fn growth_extends_zeta_and_range() {
        let mut z = Zipfian::new(1000, 0.99);
        z.grow(2000);
        let fresh = Zipfian::new(2000, 0.99);
        assert!((z.zetan() - fresh.zetan()).abs() < 1e-12);
        assert_eq!(z.item_count(), 2000);
        z.grow(10); // shrink is ignored
        assert_eq!(z.item_count(), 2000);
        let mut rng = Rng::new(5);
        let max = (0..100_000).map(|_| z.next(&mut rng)).max().unwrap_or(0);
        assert!((1000..2000).contains(&max), "max {max}");
    }

    #[test]
    fn tiny_item_counts() {
        let mut rng = Rng::new(11);
        let one = Zipfian::new(1, 0.99);
        let two = Zipfian::new(2, 0.99);
        for _ in 0..1000 {
            assert_eq!(one.next(&mut rng), 0);
            assert!(two.next(&mut rng) < 2);
        }
        assert_eq!(Zipfian::new(10, 0.5).sample(0.999_999_999_999_999_9), 9);
    }
}
