//! Runs fio-like jobs against an emulated SSD: fill, then the jobs round-robin until the stop
//! condition, sampling the counters every N host bytes. Each turn a job issues one I/O, or, a
//! random 4 KiB write-only job, a queue of up to `QUEUE_DEPTH` writes in one
//! `Ssd::write_scattered` call (the FTL overlaps their map misses).
use std::time::Instant;

use flashemu::{Interface, Placement, Ssd, LBA_BYTES};

use super::error::JobError;
use super::fill::{fill, fill_blocks};
use super::spec::{JobSpec, Pattern, RunSpec};
use super::zoned::{self, ZoneShape};
use crate::emu_report::{JobTotals, Phase, ReportInputs, RunReport, Sampler};
use crate::progress::Progress;
use wafer_workloads::dist::{Chooser, Rng};

/// Default sample period: 1/64 of the logical capacity, so a 4x run has ~256 points.
pub const SAMPLES_PER_CAPACITY: u64 = 64;
/// I/Os between progress updates (the bar itself throttles redraws by time).
const PROGRESS_EVERY_IOS: u64 = 512;
/// Writes a queued job submits per turn, like fio's iodepth. Small next to the sample period
/// (1/64 of the capacity), so samples still land where they are due.
const QUEUE_DEPTH: u64 = 32;

/// A job resolved against the device: blocks, placement and its random state.
#[derive(Debug)]
struct ActiveJob {
    start_block: u64,
    bs_blocks: u64,
    /// Number of `bs`-sized units in the region.
    units: u64,
    read_percent: u64,
    trim_percent: u64,
    pattern: Pattern,
    cursor_unit: u64,
    chooser: Chooser,
    rng: Rng,
    placement: Placement,
    /// Set on ZNS: units map onto the writable part of whole zones, and a write at a zone's
    /// start resets the zone first.
    zones: Option<(ZoneShape, u64)>,
    /// LBAs of the next queued submission (empty unless the job is `queued`).
    queue: Vec<u64>,
    totals: JobTotals,
}

/// Placement for job `index`: its explicit stream, else its index modulo what the device has.
fn placement_for(interface: Interface, job: &JobSpec, index: usize) -> Placement {
    let id = job.stream.unwrap_or((index % usize::from(u16::MAX)) as u16);
    match interface {
        Interface::Conventional { streams } => match job.stream {
            Some(id) => Placement::Stream(id),
            None if streams <= 1 => Placement::None,
            None => Placement::Stream((u32::from(id) % streams) as u16),
        },
        Interface::Fdp { ruh_count, .. } => match job.stream {
            Some(id) => Placement::Fdp(id),
            None => Placement::Fdp((u32::from(id) % ruh_count.max(1)) as u16),
        },
        Interface::Zns { .. } => Placement::None,
    }
}

pub fn placement_name(placement: Placement) -> String {
    match placement {
        Placement::None => "no placement".to_string(),
        Placement::Stream(id) => format!("stream {id}"),
        Placement::Fdp(id) => format!("FDP handle {id}"),
    }
}

fn resolve_jobs(
    ssd: &Ssd,
    spec: &RunSpec,
    filled_blocks: u64,
    shape: Option<ZoneShape>,
) -> Result<Vec<ActiveJob>, JobError> {
    let capacity_blocks = ssd.logical_blocks();
    let capacity_bytes = capacity_blocks * LBA_BYTES;
    let interface = ssd.config().interface;
    // Jobs without a region share the filled span (what a preconditioned device holds), or the
    // whole device without a fill.
    let shared_blocks = if filled_blocks > 0 { filled_blocks } else { capacity_blocks };
    let auto_jobs = spec.jobs.iter().filter(|j| j.region.is_none()).count() as u64;
    let mut auto_index = 0u64;
    let mut jobs = Vec::with_capacity(spec.jobs.len());
    for (index, job) in spec.jobs.iter().enumerate() {
        let bs_blocks = job.bs_bytes / LBA_BYTES;
        let (start_block, region_blocks) = match job.region {
            Some(region) => {
                let start = region.offset.bytes(capacity_bytes) / LBA_BYTES;
                let blocks = region.size.bytes(capacity_bytes) / LBA_BYTES;
                if start + blocks > capacity_blocks {
                    return Err(JobError::spec(format!(
                        "job {}: region {}+{} blocks is beyond the device's {capacity_blocks} blocks",
                        job.name, start, blocks
                    )));
                }
                (start, blocks)
            }
            None => {
                let mut share = shared_blocks / auto_jobs;
                if let Some(shape) = shape {
                    // Zoned jobs own whole zones; a partly filled zone is left out.
                    share -= share % shape.size_blocks;
                }
                let start = share * auto_index;
                auto_index += 1;
                (start, share)
            }
        };
        let zones = match shape {
            Some(shape) => {
                let units_per_zone =
                    zoned::check_job(job, shape, start_block, region_blocks, bs_blocks)?;
                Some((shape, units_per_zone))
            }
            None => None,
        };
        let units = match zones {
            Some((shape, units_per_zone)) => region_blocks / shape.size_blocks * units_per_zone,
            None => region_blocks / bs_blocks,
        };
        if units == 0 {
            return Err(JobError::spec(format!(
                "job {}: its region ({} KiB) is smaller than one block of {} KiB",
                job.name,
                region_blocks * LBA_BYTES / 1024,
                job.bs_bytes / 1024
            )));
        }
        let chooser = job
            .dist
            .chooser(units)
            .map_err(|e| JobError::spec(format!("job {}: {e}", job.name)))?;
        let placement = placement_for(interface, job, index);
        jobs.push(ActiveJob {
            start_block,
            bs_blocks,
            units,
            read_percent: u64::from(job.workload.read_percent),
            trim_percent: u64::from(job.workload.trim_percent),
            pattern: job.workload.pattern,
            cursor_unit: 0,
            chooser,
            rng: Rng::for_thread(spec.seed, index as u64),
            placement,
            zones,
            queue: Vec::new(),
            totals: JobTotals {
                name: job.name.clone(),
                workload: job.workload.to_string(),
                // A sequential job draws no addresses: its distribution would mislead.
                dist: match job.workload.pattern {
                    Pattern::Sequential => "sequential".to_string(),
                    Pattern::Random => job.dist.to_string(),
                },
                bs_bytes: job.bs_bytes,
                region_start_bytes: start_block * LBA_BYTES,
                region_bytes: units * bs_blocks * LBA_BYTES,
                placement: placement_name(placement),
                ..JobTotals::default()
            },
        });
    }
    Ok(jobs)
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Op {
    Write,
    Read,
    Trim,
}

impl ActiveJob {
    /// Random single-block writes on a conventional or FDP device: nothing between two writes
    /// depends on the first, so they can be submitted as a queue.
    fn queued(&self) -> bool {
        self.read_percent == 0
            && self.trim_percent == 0
            && self.bs_blocks == 1
            && self.pattern == Pattern::Random
            && self.zones.is_none()
    }

    /// Issues up to `ios_max` (>= 1) random single-block writes in one submission; returns the
    /// I/Os and bytes. The LBAs are drawn in the order `step` would draw them.
    fn step_queue(&mut self, ssd: &mut Ssd, ios_max: u64) -> Result<(u64, u64), JobError> {
        debug_assert!(self.queued() && ios_max >= 1);
        let ios = ios_max.min(QUEUE_DEPTH);
        self.queue.clear();
        for _ in 0..ios {
            let unit = self.chooser.next(&mut self.rng);
            debug_assert!(unit < self.units);
            self.queue.push(self.start_block + unit);
        }
        ssd.write_scattered(&self.queue, self.placement)?;
        let bytes = ios * LBA_BYTES;
        self.totals.write_ios += ios;
        self.totals.write_bytes += bytes;
        Ok((ios, bytes))
    }

    /// Issues one I/O; returns the bytes it covered.
    #[inline]
    fn step(&mut self, ssd: &mut Ssd, read_buf: &mut [u8]) -> Result<u64, JobError> {
        let op = if self.read_percent == 0 && self.trim_percent == 0 {
            Op::Write
        } else {
            let roll = self.rng.below(100);
            if roll < self.read_percent {
                Op::Read
            } else if roll < self.read_percent + self.trim_percent {
                Op::Trim
            } else {
                Op::Write
            }
        };
        let unit = match self.pattern {
            Pattern::Sequential => {
                let unit = self.cursor_unit;
                self.cursor_unit = (self.cursor_unit + 1) % self.units;
                unit
            }
            Pattern::Random => self.chooser.next(&mut self.rng),
        };
        debug_assert!(unit < self.units);
        let lba = match self.zones {
            Some((shape, units_per_zone)) => {
                let lba = zoned::unit_block(
                    shape,
                    self.start_block,
                    units_per_zone,
                    self.bs_blocks,
                    unit,
                );
                if op == Op::Write && lba.is_multiple_of(shape.size_blocks) {
                    // Rewriting a zone from its start: everything in it is overwritten, so
                    // the host resets it (a no-op on an empty zone).
                    ssd.zone_reset((lba / shape.size_blocks) as u32)?;
                }
                lba
            }
            None => self.start_block + unit * self.bs_blocks,
        };
        let bytes = self.bs_blocks * LBA_BYTES;
        match op {
            Op::Write => {
                ssd.write(lba, self.bs_blocks as u32, None, self.placement)?;
                self.totals.write_ios += 1;
                self.totals.write_bytes += bytes;
            }
            Op::Read => {
                ssd.read(lba, &mut read_buf[..bytes as usize])?;
                self.totals.read_ios += 1;
                self.totals.read_bytes += bytes;
            }
            Op::Trim => {
                ssd.trim(lba, self.bs_blocks)?;
                self.totals.trim_ios += 1;
                self.totals.trim_bytes += bytes;
            }
        }
        Ok(bytes)
    }
}

/// Runs `spec` on `ssd` (a fresh device: the fill assumes nothing was written before).
pub fn run(
    ssd: &mut Ssd,
    spec: &RunSpec,
    progress: &mut dyn Progress,
) -> Result<RunReport, JobError> {
    spec.validate()?;
    let started = Instant::now();
    let capacity_blocks = ssd.logical_blocks();
    let capacity_bytes = capacity_blocks * LBA_BYTES;
    let filled_blocks = fill_blocks(capacity_blocks, spec.fill_fraction);
    let shape = zoned::zone_shape(ssd)?;
    let mut jobs = resolve_jobs(ssd, spec, filled_blocks, shape)?;
    let sample_every =
        spec.sample_every_bytes.unwrap_or((capacity_bytes / SAMPLES_PER_CAPACITY).max(LBA_BYTES));
    let until_bytes = spec.until.host_bytes(capacity_bytes);

    let at_start = ssd.counters();
    let mut sampler = Sampler::new(ssd, sample_every);
    let fill_bytes = fill(ssd, filled_blocks, shape, &mut sampler, progress)?;
    sampler.take(ssd, Phase::Fill, fill_bytes);
    let after_fill = ssd.counters();
    // Device time (when the config turns it on) counts the jobs, not the precondition.
    ssd.restart_timing_window();

    let max_bs = jobs.iter().map(|j| j.bs_blocks * LBA_BYTES).max().unwrap_or(LBA_BYTES);
    let needs_read = jobs.iter().any(|j| j.read_percent > 0);
    let mut read_buf = vec![0u8; if needs_read { max_bs as usize } else { 0 }];

    progress.start("run", until_bytes);
    let mut issued_bytes = 0u64;
    let mut ios = 0u64;
    let mut progress_at_ios = PROGRESS_EVERY_IOS;
    // Bounded: every turn issues at least 4 KiB, so the loop ends after until/4096 rounds.
    'run: while issued_bytes < until_bytes {
        for job in jobs.iter_mut() {
            if job.queued() {
                // End the queue at the stop condition and at the next sample point, so both
                // land exactly where single I/Os would put them.
                let due = sampler.bytes_until_due(fill_bytes + issued_bytes);
                let left = (until_bytes - issued_bytes).min(due).max(1);
                let (count, bytes) = job.step_queue(ssd, left.div_ceil(LBA_BYTES))?;
                issued_bytes += bytes;
                ios += count;
            } else {
                issued_bytes += job.step(ssd, &mut read_buf)?;
                ios += 1;
            }
            sampler.maybe_take(ssd, Phase::Run, fill_bytes + issued_bytes);
            if ios >= progress_at_ios {
                progress_at_ios = ios + PROGRESS_EVERY_IOS;
                progress.update(issued_bytes, &|| {
                    sampler
                        .samples()
                        .last()
                        .and_then(|s| s.interval_waf)
                        .map(|w| format!("WAF {w:.3}"))
                        .unwrap_or_default()
                });
            }
            if issued_bytes >= until_bytes {
                break 'run;
            }
        }
    }
    progress.finish();
    sampler.take(ssd, Phase::Run, fill_bytes + issued_bytes);
    let at_end = ssd.counters();

    let inputs = ReportInputs {
        kind: "jobs",
        fill_fraction: spec.fill_fraction,
        seed: spec.seed,
        until_bytes,
        jobs: jobs.into_iter().map(|j| j.totals).collect(),
        at_start,
        after_fill,
        at_end,
        wall_seconds: started.elapsed().as_secs_f64(),
    };
    Ok(RunReport::build(ssd, sampler, inputs))
}
