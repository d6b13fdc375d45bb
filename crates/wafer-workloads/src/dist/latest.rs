//! YCSB's SkewedLatestGenerator ("latest"): a zipfian over recency, so the most recently
//! inserted items are the most popular (YCSB workload D).
//!
//! YCSB: `max = basis.lastValue(); next = max - zipfian.nextLong(max)`, where the basis is
//! the insert counter and `lastValue()` the highest acknowledged key. With `item_count` items
//! [0, item_count), max = item_count - 1.

use super::rng::Rng;
use super::zipfian::Zipfian;

#[derive(Debug, Clone)]
pub struct SkewedLatest {
    zipfian: Zipfian,
}

impl SkewedLatest {
    /// `item_count` is the number of items that exist (ids [0, item_count)); needs at least 2,
    /// since YCSB's zipfian runs over `item_count - 1` ranks.
    pub fn new(item_count: u64, theta: f64) -> Self {
        assert!(item_count >= 2, "latest needs at least two items");
        SkewedLatest { zipfian: Zipfian::new(item_count - 1, theta) }
    }

    /// Next item in [0, item_count): item_count - 1 is the most popular.
    /// `item_count` may grow between calls (zeta is then extended incrementally).
    #[inline]
    pub fn next(&mut self, rng: &mut Rng, item_count: u64) -> u64 {
        assert!(item_count >= 2);
        let max = item_count - 1;
        self.zipfian.grow(max);
        // The zipfian may have grown past `max` if the caller's count went down (threads
        // racing on the acknowledged counter); YCSB draws over `max` items then, and so do we.
        let rank = if self.zipfian.item_count() == max {
            self.zipfian.next(rng)
        } else {
            self.zipfian.next(rng).min(max - 1)
        };
        max - rank
    }
}

#[cfg(test)]
mod tests {
    use super::super::zeta;
    use super::*;

    #[test]
    fn favours_recent_items_and_follows_growth() {
        let seed = 8;
        let mut rng = Rng::new(seed);
        let mut g = SkewedLatest::new(1000, 0.99);
        let mut count = 1000u64;
        for _ in 0..50 {
            let draws = 2000;
            let mut recent = 0;
            for _ in 0..draws {
                let v = g.next(&mut rng, count);
                assert!(v < count, "seed {seed}: {v} >= {count}");
                if v >= count - 10 {
                    recent += 1;
                }
            }
            // The 10 newest items should get about zeta(10)/zeta(count - 1) of the draws
            // (0.39 at 1000 items): far above their uniform share of 10/count.
            let frac = f64::from(recent) / f64::from(draws);
            let want = zeta(10, 0.99) / zeta(count - 1, 0.99);
            assert!(frac > 0.8 * want, "seed {seed}: newest-10 {frac} want ~{want} at {count}");
            count += 100;
        }
    }
}
