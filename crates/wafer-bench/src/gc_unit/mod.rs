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
mod knee;
mod pattern;
mod target;

use serde::Serialize;
use wafer::device::DeviceError;

pub use target::{InferTarget, MetricSource};

/// 000's recommended zone size when nothing can be measured (sec. 5.3: "32 GB ... as a safe
/// upper bound"), and the default upper bound of the sweep.
pub const SAFE_UPPER_BOUND_BYTES: u64 = 32 << 30;

/// Zone sizes a sweep may try at most (4 KiB to 2^63 doublings are far fewer).
const SIZES_MAX: usize = 64;

#[derive(Debug, thiserror::Error)]
pub enum InferError {
    #[error("invalid inference options: {0}")]
    Options(String),
    #[error("opening the device: {0}")]
    Open(#[source] DeviceError),
    #[error("zone size {zone_bytes} bytes: {source}")]
    Pattern { zone_bytes: u64, source: DeviceError },
    #[error(
        "the device's {capacity_bytes} bytes hold fewer than {zones_min} zones of the smallest \
         candidate size ({min_zone_bytes} bytes) at fill {fill}"
    )]
    TooSmall { capacity_bytes: u64, zones_min: u32, min_zone_bytes: u64, fill: f64 },
}

/// How the sweep runs. A value with a default (000's method at this project's scales) and a
/// quick preset for tests.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct InferOptions {
    /// Smallest candidate zone size: a power of two, at least 4 KiB.
    pub min_zone_bytes: u64,
    /// Largest candidate (the bound of the sweep); sizes above it, or leaving fewer than
    /// `zones_min` zones on the device, are not tried.
    pub max_zone_bytes: u64,
    /// Share of the device's capacity the zones take (000's databases fill about 90%).
    pub fill: f64,
    /// A zone size needs at least this many zones on the device for random overwrites to mean
    /// anything.
    pub zones_min: u32,
    /// Random zone rewrites before the measured window, in multiples of the zone space.
    pub warmup_writes: f64,
    /// Random zone rewrites measured, in multiples of the zone space.
    pub measured_writes: f64,
    /// WAF at most 1 + this counts as 1 (see docs/internals/bench.md for why 0.02).
    pub waf_tolerance: f64,
    /// Throughput within this fraction of the best measured counts as no GC (throughput knee).
    pub throughput_tolerance: f64,
    /// Sizes above the first one at WAF 1 that must be at 1 too before the sweep stops.
    pub confirm_sizes: u32,
    /// TRIM a zone before rewriting it (the engine's zone reset on a conventional device), and
    /// the whole device before each size (000's blkdiscard before each run).
    pub trim: bool,
    /// Bytes per write request (a zone is written in requests of this size, or its own).
    pub io_bytes: u64,
    /// Requests handed to the device per batch (queue depth with io_uring).
    pub batch_requests: u32,
    /// Seed of the random zone choice.
    pub seed: u64,
}

impl Default for InferOptions {
    fn default() -> InferOptions {
        InferOptions {
            min_zone_bytes: 1 << 20,
            max_zone_bytes: SAFE_UPPER_BOUND_BYTES,
            fill: 0.9,
            zones_min: 4,
            warmup_writes: 1.0,
            measured_writes: 2.0,
            waf_tolerance: 0.02,
            throughput_tolerance: 0.15,
            confirm_sizes: 1,
            trim: true,
            io_bytes: 1 << 20,
            batch_requests: 8,
            seed: 0x5EED_0053,
        }
    }
}

impl InferOptions {
    /// For tests and smoke runs: sizes from 16 KiB, one zone space of warm-up and one measured.
    pub fn quick() -> InferOptions {
        InferOptions {
            min_zone_bytes: 16 << 10,
            measured_writes: 1.0,
            io_bytes: 256 << 10,
            ..InferOptions::default()
        }
    }

    pub fn validate(&self) -> Result<(), InferError> {
        let bad = |m: String| Err(InferError::Options(m));
        let block = wafer::device::BLOCK_BYTES;
        if self.min_zone_bytes < block || !self.min_zone_bytes.is_power_of_two() {
            return bad(format!(
                "min zone {} bytes: must be a power of two of at least 4 KiB",
                self.min_zone_bytes
            ));
        }
        if self.max_zone_bytes < self.min_zone_bytes {
            return bad(format!(
                "max zone {} bytes is below min zone {}",
                self.max_zone_bytes, self.min_zone_bytes
            ));
        }
        if !(self.fill > 0.0 && self.fill <= 1.0) {
            return bad(format!("fill {} must be in (0, 1]", self.fill));
        }
        if self.zones_min < 2 {
            return bad(format!("zones_min {} must be at least 2", self.zones_min));
        }
        let writes_ok = |w: f64| w.is_finite() && (0.0..=64.0).contains(&w);
        if !writes_ok(self.warmup_writes) || !writes_ok(self.measured_writes) {
            return bad("warm-up and measured writes must be in 0..=64 zone spaces".into());
        }
        if self.measured_writes <= 0.0 {
            return bad("measured writes must be above 0".into());
        }
        let tolerance_ok = |t: f64| t > 0.0 && t < 1.0;
        if !tolerance_ok(self.waf_tolerance) || !tolerance_ok(self.throughput_tolerance) {
            return bad("tolerances must be in (0, 1)".into());
        }
        if self.io_bytes == 0 || !self.io_bytes.is_multiple_of(block) || self.io_bytes > 64 << 20 {
            return bad(format!("io size {}: a multiple of 4 KiB up to 64 MiB", self.io_bytes));
        }
        if !(1..=256).contains(&self.batch_requests) {
            return bad(format!("batch of {} requests: 1..=256", self.batch_requests));
        }
        Ok(())
    }

    /// The candidate sizes for a device of `capacity_bytes`: powers of two from the minimum,
    /// while at most the maximum and at least `zones_min` zones fit in the fill.
    pub fn zone_sizes(&self, capacity_bytes: u64) -> Vec<u64> {
        let span = (capacity_bytes as f64 * self.fill) as u64;
        let mut sizes = Vec::new();
        let mut size = self.min_zone_bytes;
        while sizes.len() < SIZES_MAX
            && size <= self.max_zone_bytes
            && span / size >= u64::from(self.zones_min)
        {
            sizes.push(size);
            match size.checked_mul(2) {
                Some(next) => size = next,
                None => break,
            }
        }
        sizes
    }
}

/// Where a point's seconds come from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Clock {
    /// The emulator's device-time model (GC steals chip time from host writes).
    Device,
    /// Wall-clock time of the writes (on the emulator: simulation speed, not a device's).
    Wall,
}

/// One candidate zone size, measured over the window after the warm-up.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SizePoint {
    pub zone_bytes: u64,
    pub zones: u64,
    /// Host bytes written in the window.
    pub host_write_bytes: u64,
    /// Flash bytes programmed in the window (host data, GC copies, padding), when readable.
    pub flash_write_bytes: Option<u64>,
    /// SSD WAF of the window, when readable.
    pub waf: Option<f64>,
    /// Flash bytes the device's GC copied in the window, when readable (WAF - 1 of them per
    /// host byte: 0 once every victim superblock dies whole).
    pub gc_copy_bytes: Option<u64>,
    pub seconds: f64,
    pub clock: Clock,
    /// Host write throughput of the window, MB/s (10^6 bytes).
    pub write_mb_s: f64,
}

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
    pub fn apply(&self, options: &mut wafer::oop::OutOfPlaceOptions) -> bool {
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
