//! Turns a series of counter snapshots into interval and cumulative records.

use super::counters::CounterSnapshot;
use super::figures::Figures;

/// One sample: the figures of the interval since the previous sample and of the whole run.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct IntervalRecord {
    /// 0 for the first interval.
    pub index: u64,
    /// Interval bounds, seconds since the run's origin snapshot.
    pub start_s: f64,
    pub end_s: f64,
    pub interval: Figures,
    pub cumulative: Figures,
}

/// Holds the origin and the previous snapshot. The runner calls [`IntervalSampler::sample`]
/// every interval (e.g. once a second) and once at the end.
#[derive(Debug, Clone)]
pub struct IntervalSampler {
    origin: CounterSnapshot,
    previous: CounterSnapshot,
    next_index: u64,
}

impl IntervalSampler {
    pub fn new(origin: CounterSnapshot) -> Self {
        IntervalSampler { origin, previous: origin, next_index: 0 }
    }

    pub fn origin(&self) -> &CounterSnapshot {
        &self.origin
    }

    pub fn sample(&mut self, now: CounterSnapshot) -> IntervalRecord {
        assert!(now.time_ns >= self.previous.time_ns, "snapshot older than the previous one");
        let record = IntervalRecord {
            index: self.next_index,
            start_s: (self.previous.time_ns - self.origin.time_ns) as f64 / 1e9,
            end_s: (now.time_ns - self.origin.time_ns) as f64 / 1e9,
            interval: Figures::from_delta(&now.since(&self.previous)),
            cumulative: Figures::from_delta(&now.since(&self.origin)),
        };
        self.previous = now;
        self.next_index += 1;
        record
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn intervals_sum_to_cumulative() {
        let origin = CounterSnapshot {
            time_ns: 5_000,
            ops: 100,
            user_bytes: 4096,
            flash_measured: true,
            flash_host_bytes: 4096,
            ..CounterSnapshot::default()
        };
        let mut s = IntervalSampler::new(origin);
        let mut now = origin;
        let mut ops_sum = 0;
        let mut flash_sum = 0;
        let mut last = None;
        for i in 1..=10u64 {
            now.time_ns += 1_000_000_000;
            now.ops += 1000 * i;
            now.user_bytes += 4096 * 10 * i;
            now.gc_copy_bytes += 4096 * i;
            now.flash_host_bytes += 4096 * 11 * i;
            now.ssd_gc_bytes += 4096 * 2 * i;
            let r = s.sample(now);
            assert_eq!(r.index, i - 1);
            assert!((r.end_s - r.start_s - 1.0).abs() < 1e-9);
            ops_sum += r.interval.ops;
            flash_sum += r.interval.bytes.flash;
            assert_eq!(r.cumulative.ops, ops_sum);
            assert_eq!(r.cumulative.bytes.flash, flash_sum);
            // This workload's WAFs are the same in every interval: 1.1 * (13/11) = 1.3.
            let total = r.interval.total_waf.unwrap();
            assert!((total - 1.3).abs() < 1e-12, "{total}");
            last = Some(r);
        }
        let last = last.unwrap();
        assert!((last.cumulative.total_waf.unwrap() - 1.3).abs() < 1e-12);
        assert!((last.cumulative.elapsed_s - 10.0).abs() < 1e-9);
    }
}
