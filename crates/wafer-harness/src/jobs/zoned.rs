//! Jobs on a ZNS device: zones take only sequential writes at the write pointer, so a job
//! writes its region zone by zone and resets each zone just before rewriting it (the host
//! cleaning a zone whose data it overwrites; no data moves, so the WAF stays 1).
use flashemu::{Interface, Ssd};

use super::error::JobError;
use super::spec::{JobSpec, Pattern};

/// The zone layout: `size_blocks` of address space per zone, the first `capacity_blocks`
/// writable.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ZoneShape {
    pub size_blocks: u64,
    pub capacity_blocks: u64,
}

/// The zone shape of a ZNS device, `None` for a conventional or FDP one.
pub fn zone_shape(ssd: &Ssd) -> Result<Option<ZoneShape>, JobError> {
    if !matches!(ssd.config().interface, Interface::Zns { .. }) {
        return Ok(None);
    }
    let zones = ssd.report_zones()?;
    let first = zones.first().ok_or_else(|| JobError::spec("the ZNS device reports no zones"))?;
    assert!(first.capacity_blocks > 0 && first.capacity_blocks <= first.size_blocks);
    Ok(Some(ZoneShape { size_blocks: first.size_blocks, capacity_blocks: first.capacity_blocks }))
}

/// Checks that a job can run on zones and returns the number of `bs` units per zone.
pub fn check_job(
    job: &JobSpec,
    shape: ZoneShape,
    start_block: u64,
    region_blocks: u64,
    bs_blocks: u64,
) -> Result<u64, JobError> {
    let name = &job.name;
    let w = job.workload;
    let sequential_write_or_read = w.pattern == Pattern::Sequential
        && w.trim_percent == 0
        && matches!(w.read_percent, 0 | 100);
    if !sequential_write_or_read {
        return Err(JobError::spec(format!(
            "job {name}: a ZNS device takes only sequential `write` or `read` jobs \
             (`{w}` needs a conventional or FDP device: --preset cns or fdp)"
        )));
    }
    if !start_block.is_multiple_of(shape.size_blocks)
        || !region_blocks.is_multiple_of(shape.size_blocks)
        || region_blocks == 0
    {
        return Err(JobError::spec(format!(
            "job {name}: on ZNS a region must be whole zones of {} blocks (got {start_block}+{region_blocks})",
            shape.size_blocks
        )));
    }
    if !shape.capacity_blocks.is_multiple_of(bs_blocks) {
        return Err(JobError::spec(format!(
            "job {name}: bs of {bs_blocks} blocks does not divide the zone capacity of {} blocks",
            shape.capacity_blocks
        )));
    }
    Ok(shape.capacity_blocks / bs_blocks)
}

/// The block of the `unit`-th `bs` unit of a region of whole zones.
#[inline]
pub fn unit_block(
    shape: ZoneShape,
    start_block: u64,
    units_per_zone: u64,
    bs_blocks: u64,
    unit: u64,
) -> u64 {
    let zone = unit / units_per_zone;
    let within = unit % units_per_zone;
    start_block + zone * shape.size_blocks + within * bs_blocks
}
