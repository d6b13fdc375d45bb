//! Shared by the tests that compare uniform random overwrites with the analytic cleaning
//! models (gc_models.rs, plan_gc_models.rs).
use flashemu::rng::SplitMix64;
use flashemu::{Counters, Placement, Ssd};

/// Writes LBAs `0..data` once, then `warmup` and `measure` times `data` overwrites uniformly
/// at random among them; the measured window's counters (the maps checked after).
pub fn steady_state(ssd: &mut Ssd, data: u64, warmup: u64, measure: u64, seed: u64) -> Counters {
    for lba in 0..data {
        ssd.write(lba, 1, None, Placement::None).unwrap();
    }
    let mut rng = SplitMix64::new(seed);
    for _ in 0..warmup * data {
        ssd.write(rng.below(data), 1, None, Placement::None).unwrap();
    }
    let before = ssd.counters();
    for _ in 0..measure * data {
        ssd.write(rng.below(data), 1, None, Placement::None).unwrap();
    }
    ssd.check_consistency().unwrap();
    ssd.counters().since(&before)
}

/// The LRU/FIFO model's victim valid fraction: the root below 1 of X = exp(-a (1 - X)), by
/// Newton's method on f(X) = X - exp(-a (1 - X)) started at 0 (f is convex, so Newton from
/// the left converges monotonically to the smaller root).
pub fn lru_valid_fraction(a: f64) -> f64 {
    assert!(a > 1.0);
    let mut x = 0.0f64;
    for _ in 0..100 {
        let e = (-a * (1.0 - x)).exp();
        let next = x - (x - e) / (1.0 - a * e);
        if (next - x).abs() < 1e-15 {
            return next;
        }
        x = next;
    }
    x
}
