//! The precondition step: write the first `fraction` of the logical space once, sequentially,
//! so the jobs start on a device that is that full (000 sec. 7.1: 90% full before measuring).
use flashemu::{Placement, Ssd, LBA_BYTES};

use super::error::JobError;
use super::zoned::ZoneShape;
use crate::emu_report::{Phase, Sampler};
use crate::progress::Progress;

/// Blocks per fill write: large sequential writes, as a loader would issue them.
pub const FILL_CHUNK_BLOCKS: u64 = 256;

/// Number of blocks a fill of `fraction` writes on a device of `capacity_blocks`.
pub fn fill_blocks(capacity_blocks: u64, fraction: f64) -> u64 {
    assert!((0.0..=1.0).contains(&fraction), "fill fraction {fraction} outside [0, 1]");
    ((capacity_blocks as f64 * fraction).floor() as u64).min(capacity_blocks)
}

/// Writes blocks `[0, blocks)` in order (on ZNS, only the writable part of each zone, and no
/// write crosses a zone). Returns the host bytes written (the sampler clock).
pub fn fill(
    ssd: &mut Ssd,
    blocks: u64,
    zones: Option<ZoneShape>,
    sampler: &mut Sampler,
    progress: &mut dyn Progress,
) -> Result<u64, JobError> {
    assert!(blocks <= ssd.logical_blocks());
    progress.start("fill", blocks * LBA_BYTES);
    let mut lba = 0u64;
    let mut written = 0u64;
    // Bounded: each iteration advances lba by at least one block.
    while lba < blocks {
        let mut count = FILL_CHUNK_BLOCKS.min(blocks - lba);
        if let Some(shape) = zones {
            let offset = lba % shape.size_blocks;
            if offset >= shape.capacity_blocks {
                lba += shape.size_blocks - offset;
                continue;
            }
            count = count.min(shape.capacity_blocks - offset);
        }
        ssd.write(lba, count as u32, None, Placement::None)?;
        lba += count;
        written += count;
        let clock = written * LBA_BYTES;
        sampler.maybe_take(ssd, Phase::Fill, clock);
        progress.update(clock, &|| String::new());
    }
    progress.finish();
    Ok(written * LBA_BYTES)
}
