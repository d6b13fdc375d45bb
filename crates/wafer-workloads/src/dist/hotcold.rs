//! Hot-cold ("hotspot" in YCSB's HotspotIntegerGenerator): a fraction of the draws goes
//! uniformly to a fraction of the space, the rest uniformly to the remainder. The hot set is
//! the low end of the id space, as in YCSB.

use super::rng::Rng;

#[derive(Debug, Clone)]
pub struct HotCold {
    item_count: u64,
    hot_ops_fraction: f64,
    hot_data_fraction: f64,
    hot_count: u64,
}

impl HotCold {
    /// `hot_ops_fraction` of draws go to the first `hot_data_fraction` of [0, item_count).
    pub fn new(item_count: u64, hot_ops_fraction: f64, hot_data_fraction: f64) -> Self {
        assert!(item_count > 0);
        assert!((0.0..=1.0).contains(&hot_ops_fraction));
        assert!((0.0..=1.0).contains(&hot_data_fraction));
        let mut h = HotCold { item_count: 0, hot_ops_fraction, hot_data_fraction, hot_count: 0 };
        h.grow(item_count);
        h
    }

    pub fn item_count(&self) -> u64 {
        self.item_count
    }

    pub fn hot_count(&self) -> u64 {
        self.hot_count
    }

    /// Resize the space (the hot set keeps its fraction).
    pub fn grow(&mut self, item_count: u64) {
        if item_count <= self.item_count {
            return;
        }
        self.item_count = item_count;
        self.hot_count = ((item_count as f64 * self.hot_data_fraction) as u64).min(item_count);
    }

    #[inline]
    pub fn next(&self, rng: &mut Rng) -> u64 {
        let cold_count = self.item_count - self.hot_count;
        // An empty side sends every draw to the other one, so a degenerate split never fails.
        let hot = if self.hot_count == 0 {
            false
        } else if cold_count == 0 {
            true
        } else {
            rng.next_f64() < self.hot_ops_fraction
        };
        if hot {
            rng.below(self.hot_count)
        } else {
            self.hot_count + rng.below(cold_count)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hot_fraction_of_draws_lands_in_hot_fraction_of_space() {
        let seed = 17;
        let mut rng = Rng::new(seed);
        let g = HotCold::new(10_000, 0.8, 0.2);
        assert_eq!(g.hot_count(), 2000);
        let draws = 200_000;
        let mut hot = 0u64;
        for _ in 0..draws {
            let v = g.next(&mut rng);
            assert!(v < 10_000);
            if v < 2000 {
                hot += 1;
            }
        }
        let frac = hot as f64 / draws as f64;
        assert!((frac - 0.8).abs() < 0.005, "seed {seed}: hot fraction {frac}");
    }

    #[test]
    fn degenerate_splits() {
        let mut rng = Rng::new(1);
        let all_cold = HotCold::new(10, 0.9, 0.0);
        let all_hot = HotCold::new(10, 0.1, 1.0);
        for _ in 0..100 {
            assert!(all_cold.next(&mut rng) < 10);
            assert!(all_hot.next(&mut rng) < 10);
        }
    }
}
