//! How a sweep runs, and the candidate zone sizes that follow from it: a leaf below the sweep
//! and its steps, which all read it.
use serde::Serialize;

use super::error::InferError;

/// 000's recommended zone size when nothing can be measured (sec. 5.3: "32 GB ... as a safe
/// upper bound"), and the default upper bound of the sweep.
pub const SAFE_UPPER_BOUND_BYTES: u64 = 32 << 30;

/// Zone sizes a sweep may try at most (4 KiB to 2^63 doublings are far fewer).
const SIZES_MAX: usize = 64;

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
