//! GC-unit inference (000 sec. 5.3): the largest region an SSD places and collects together,
//! for devices that do not report it (no FDP reclaim unit, no zones).
//!
//! For each candidate zone size, growing in powers of two, a fresh (or wholly trimmed) device
//! gets 000's ZNS-like pattern: zones of that size fill it one at a time (one active zone),
//! then zones picked at random are TRIMmed and rewritten whole, sequentially. Once the zone
//! size reaches the SSD's GC unit, every superblock holds one zone only and dies whole when the
//! zone is rewritten, so SSD WAF is 1; below it, superblocks mix zones that die at different
//! times and GC copies (docs/internals/bench.md, "GC-unit inference", has the analytic bound). The
//! smallest size from which WAF stays at 1 is the inferred unit; 000 calls it an upper bound,
//! since a unit between two candidate sizes is reported as the larger.
//!
//! WAF comes from the emulator's flash counters. A file or block device has none this build
//! can read (no NVMe OCP / FDP log reader), so there the inference is the throughput knee 000
//! points to: the smallest size from which write throughput stays within a tolerance of the
//! best measured.
mod error;
mod knee;
mod options;
mod pattern;
mod point;
mod target;

use serde::Serialize;

pub use error::InferError;
pub use options::{InferOptions, SAFE_UPPER_BOUND_BYTES};
pub use point::{Clock, SizePoint};
pub use target::{InferTarget, MetricSource};

/// What the sweep found.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Inference {
    /// The smallest zone size from which SSD WAF (or, without WAF, throughput) stays at its
    /// no-GC level; None when no size of the sweep got there.
    pub gc_unit_bytes: Option<u64>,
    /// What decided it.
    pub method: MetricSource,
    /// Why WAF was or was not measured.
    pub method_note: String,
    /// The throughput knee too (the same rule over MB/s), for comparison with the WAF answer.
    pub throughput_knee_bytes: Option<u64>,
    /// The GC unit the device itself reports (the emulator's superblock), for comparison.
    pub reported_gc_unit_bytes: Option<u64>,
    pub capacity_bytes: u64,
    pub options: InferOptions,
    pub points: Vec<SizePoint>,
}

impl Inference {
    /// The zone size to configure: the inferred unit, else 000's safe upper bound.
    pub fn gc_unit_or_safe_bound(&self) -> u64 {
        self.gc_unit_bytes.unwrap_or(SAFE_UPPER_BOUND_BYTES)
    }

    /// Makes the engine use the inferred unit as the device's GC unit (its zones are then
    /// sized from it, `OutOfPlaceOptions::for_device`). False, and nothing changed, when
    /// nothing was inferred.
    pub fn apply(&self, options: &mut wafer::options::OutOfPlaceOptions) -> bool {
        match self.gc_unit_bytes {
            Some(bytes) => {
                options.gc_unit_bytes = bytes;
                true
            }
            None => false,
        }
    }
}

/// Runs the sweep on `target`: one fresh (or wholly trimmed) device per candidate size, until
/// `confirm_sizes` sizes above the first at WAF 1 are at 1 too, or the sizes run out.
/// `on_point` sees each size as it is measured.
pub fn infer_gc_unit(
    target: &InferTarget,
    options: &InferOptions,
    on_point: &mut dyn FnMut(&SizePoint),
) -> Result<Inference, InferError> {
    options.validate()?;
    let probe = target.open()?;
    let capacity_bytes = probe.capacity_bytes();
    let reported_gc_unit_bytes = probe.reported_gc_unit_bytes();
    let method = probe.metric_source();
    drop(probe);
    let sizes = options.zone_sizes(capacity_bytes);
    if sizes.is_empty() {
        return Err(InferError::TooSmall {
            capacity_bytes,
            zones_min: options.zones_min,
            min_zone_bytes: options.min_zone_bytes,
            fill: options.fill,
        });
    }
    let mut points = Vec::with_capacity(sizes.len());
    for zone_bytes in sizes {
        let mut device = target.open()?;
        let point = pattern::run(&mut device, zone_bytes, options)
            .map_err(|source| InferError::Pattern { zone_bytes, source })?;
        on_point(&point);
        points.push(point);
        if knee::settled(&points, method, options) {
            break;
        }
    }
    Ok(Inference {
        gc_unit_bytes: knee::infer(&points, method, options),
        method,
        method_note: target.method_note(method),
        throughput_knee_bytes: knee::infer(&points, MetricSource::Throughput, options),
        reported_gc_unit_bytes,
        capacity_bytes,
        options: *options,
        points,
    })
}

#[cfg(test)]
mod tests;
