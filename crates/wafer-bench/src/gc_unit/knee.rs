//! Which candidate size is the GC unit: the smallest from which every larger measured size is
//! at the no-GC level, so one noisy point above the knee cannot make it look smaller.
use super::options::InferOptions;
use super::point::SizePoint;
use super::target::MetricSource;

/// Whether `point` is at the no-GC level: WAF at most 1 + tolerance, or throughput within the
/// tolerance of the best of `points`.
fn at_one(point: &SizePoint, points: &[SizePoint], by: MetricSource, o: &InferOptions) -> bool {
    match by {
        MetricSource::FlashCounters => point.waf.is_some_and(|w| w <= 1.0 + o.waf_tolerance),
        MetricSource::Throughput => {
            let best = points.iter().map(|p| p.write_mb_s).fold(0.0, f64::max);
            best > 0.0 && point.write_mb_s >= (1.0 - o.throughput_tolerance) * best
        }
    }
}

/// Index of the first point of the suffix that is at the no-GC level throughout.
fn knee_index(points: &[SizePoint], by: MetricSource, o: &InferOptions) -> Option<usize> {
    let below = points.iter().rposition(|p| !at_one(p, points, by, o));
    let first = below.map_or(0, |i| i + 1);
    (first < points.len()).then_some(first)
}

/// The inferred GC unit: the zone size at the knee; None when the largest size is not at 1.
pub(super) fn infer(points: &[SizePoint], by: MetricSource, o: &InferOptions) -> Option<u64> {
    knee_index(points, by, o).map(|i| points[i].zone_bytes)
}

/// Whether the sweep can stop: a knee with `confirm_sizes` sizes above it.
pub(super) fn settled(points: &[SizePoint], by: MetricSource, o: &InferOptions) -> bool {
    knee_index(points, by, o).is_some_and(|i| points.len() - 1 - i >= o.confirm_sizes as usize)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::gc_unit::Clock;

    fn point(zone_bytes: u64, waf: f64, write_mb_s: f64) -> SizePoint {
        SizePoint {
            zone_bytes,
            zones: 8,
            host_write_bytes: 1,
            flash_write_bytes: None,
            waf: Some(waf),
            gc_copy_bytes: None,
            seconds: 1.0,
            clock: Clock::Device,
            write_mb_s,
        }
    }

    #[test]
    fn the_knee_is_the_first_size_of_the_suffix_at_one() {
        let o = InferOptions::default();
        let wafs = [(1, 3.0, 300.0), (2, 1.8, 500.0), (4, 1.0, 900.0), (8, 1.01, 880.0)];
        let points: Vec<SizePoint> = wafs.iter().map(|&(z, w, t)| point(z, w, t)).collect();
        assert_eq!(infer(&points, MetricSource::FlashCounters, &o), Some(4));
        assert_eq!(infer(&points, MetricSource::Throughput, &o), Some(4));
        assert!(settled(&points, MetricSource::FlashCounters, &o));
        assert!(!settled(&points[..3], MetricSource::FlashCounters, &o));
        // A size back above 1 after a dip moves the knee up: a dip is not the unit.
        let mut bumpy = points.clone();
        bumpy[2].waf = Some(1.0);
        bumpy[1].waf = Some(1.0);
        bumpy[2].waf = Some(1.3);
        assert_eq!(infer(&bumpy, MetricSource::FlashCounters, &o), Some(8));
        assert!(!settled(&bumpy, MetricSource::FlashCounters, &o));
        // Nothing at 1: no answer.
        assert_eq!(infer(&points[..2], MetricSource::FlashCounters, &o), None);
        // No WAF readable: never at 1 by counters.
        let mut blind = points.clone();
        blind.iter_mut().for_each(|p| p.waf = None);
        assert_eq!(infer(&blind, MetricSource::FlashCounters, &o), None);
        assert_eq!(infer(&blind, MetricSource::Throughput, &o), Some(4));
    }
}
