//! A log-linear latency histogram: 16 buckets per power of two (at most 1/16 = 6% wide), fixed
//! size, nothing allocated per record.
use serde::Serialize;

const SUB_BITS: u32 = 4;
const SUB_BUCKETS: usize = 1 << SUB_BITS;
const BUCKETS: usize = SUB_BUCKETS + (64 - SUB_BITS as usize) * SUB_BUCKETS;

#[derive(Debug, Clone)]
pub(crate) struct Histogram {
    counts: Vec<u64>,
    total: u64,
    sum_ns: u128,
    max_ns: u64,
}

/// Latency percentiles of one kind of command, nanoseconds of device time.
#[derive(Debug, Clone, Copy, PartialEq, Default, Serialize)]
pub struct LatencySummary {
    pub count: u64,
    pub mean_ns: f64,
    pub p50_ns: u64,
    pub p99_ns: u64,
    pub p999_ns: u64,
    pub max_ns: u64,
}

fn bucket_of(value: u64) -> usize {
    if value < SUB_BUCKETS as u64 {
        return value as usize;
    }
    let exp = 63 - value.leading_zeros();
    let sub = (value >> (exp - SUB_BITS)) as usize & (SUB_BUCKETS - 1);
    SUB_BUCKETS + (exp - SUB_BITS) as usize * SUB_BUCKETS + sub
}

/// The smallest value of a bucket.
fn floor_of(bucket: usize) -> u64 {
    if bucket < SUB_BUCKETS {
        return bucket as u64;
    }
    let exp = (bucket - SUB_BUCKETS) / SUB_BUCKETS + SUB_BITS as usize;
    let sub = ((bucket - SUB_BUCKETS) % SUB_BUCKETS) as u64;
    (1u64 << exp) | (sub << (exp - SUB_BITS as usize))
}

impl Histogram {
    pub(crate) fn new() -> Histogram {
        Histogram { counts: vec![0; BUCKETS], total: 0, sum_ns: 0, max_ns: 0 }
    }

    pub(crate) fn record(&mut self, value_ns: u64) {
        self.counts[bucket_of(value_ns)] += 1;
        self.total += 1;
        self.sum_ns += u128::from(value_ns);
        self.max_ns = self.max_ns.max(value_ns);
    }

    fn quantile(&self, q: f64) -> u64 {
        let rank = ((self.total as f64 * q).ceil() as u64).clamp(1, self.total.max(1));
        let mut seen = 0u64;
        for (bucket, &count) in self.counts.iter().enumerate() {
            seen += count;
            if seen >= rank {
                return floor_of(bucket).min(self.max_ns);
            }
        }
        self.max_ns
    }

    pub(crate) fn summary(&self) -> LatencySummary {
        if self.total == 0 {
            return LatencySummary::default();
        }
        LatencySummary {
            count: self.total,
            mean_ns: self.sum_ns as f64 / self.total as f64,
            p50_ns: self.quantile(0.50),
            p99_ns: self.quantile(0.99),
            p999_ns: self.quantile(0.999),
            max_ns: self.max_ns,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn buckets_round_trip_within_six_percent() {
        for value in [0u64, 1, 15, 16, 17, 90_000, 700_000, 5_000_000, u64::MAX / 3] {
            let floor = floor_of(bucket_of(value));
            assert!(floor <= value && value - floor <= value / 16, "{value} -> {floor}");
        }
        assert!(bucket_of(u64::MAX) < BUCKETS);
    }

    #[test]
    fn percentiles_of_a_known_spread() {
        let mut h = Histogram::new();
        for v in 1..=1000u64 {
            h.record(v * 1000);
        }
        let s = h.summary();
        assert_eq!(s.count, 1000);
        assert!(s.p50_ns >= 470_000 && s.p50_ns <= 500_000, "{}", s.p50_ns);
        assert!(s.p99_ns >= 930_000 && s.p99_ns <= 990_000, "{}", s.p99_ns);
        assert_eq!(s.max_ns, 1_000_000);
    }
}
