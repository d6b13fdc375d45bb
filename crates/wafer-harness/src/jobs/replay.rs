//! Replays a block trace on the emulator, with the same fill, samples and report as the jobs.
//!
//! Mapping to 4 KiB logical blocks:
//! - Writes and reads cover every block they touch: a partial-block write is the device's
//!   read-modify-write, which programs the whole block, so it counts as a whole-block write.
//! - Trims deallocate only the blocks they cover entirely (a partial block cannot be dropped).
//! - Addresses beyond the device wrap modulo its capacity, so a trace from a larger disk still
//!   replays (its footprint folds onto the emulated space); a range crossing the end continues
//!   at block 0. The report counts those folded requests and gives the trace's highest address
//!   against the device (`TraceFootprint`); with `strict` the first one ends the replay with
//!   an error instead.
//! - Syncs flush the device (which may pad a partly written flash page).
use std::io::BufRead;
use std::time::Instant;

use flashemu::{Placement, Ssd, LBA_BYTES};

use super::fill::{fill, fill_blocks};
use super::runner::SAMPLES_PER_CAPACITY;
use super::JobError;
use crate::emu_report::{JobTotals, Phase, ReportInputs, RunReport, Sampler, TraceFootprint};
use crate::progress::Progress;
use crate::trace::{TraceEvent, TraceOp, TraceReader};

/// Largest device call the replayer issues; longer records are split.
pub const CHUNK_MAX_BLOCKS: u64 = 1024;

#[derive(Debug, Clone, PartialEq)]
pub struct ReplayOptions {
    pub fill_fraction: f64,
    pub sample_every_bytes: Option<u64>,
    /// Size of the trace input, for the progress bar (0 if unknown).
    pub input_bytes: u64,
    /// Refuse a request reaching beyond the device instead of folding it into range.
    pub strict: bool,
}

/// Counts `first..first + blocks` in `fp`; Err with the reason when it reaches beyond the
/// device and `strict` refuses that.
fn note(fp: &mut TraceFootprint, first: u64, blocks: u64, strict: bool) -> Result<(), JobError> {
    let end_bytes = first.saturating_add(blocks).saturating_mul(LBA_BYTES);
    fp.requests += 1;
    fp.end_bytes = fp.end_bytes.max(end_bytes);
    if end_bytes > fp.device_bytes {
        fp.folded_requests += 1;
        if strict {
            return Err(JobError::spec(format!(
                "request {} reaches byte {end_bytes}, beyond the device's {} bytes \
                 (--strict; without it addresses fold modulo the capacity)",
                fp.requests, fp.device_bytes
            )));
        }
    }
    Ok(())
}

/// The blocks an event touches (writes, reads) or covers (trims), before wrapping.
pub fn block_span(event: &TraceEvent) -> Option<(u64, u64)> {
    let end_bytes = event.offset_bytes.checked_add(event.length_bytes)?;
    let (first, end) = match event.op {
        TraceOp::Write | TraceOp::Read => {
            (event.offset_bytes / LBA_BYTES, end_bytes.div_ceil(LBA_BYTES))
        }
        TraceOp::Trim => (event.offset_bytes.div_ceil(LBA_BYTES), end_bytes / LBA_BYTES),
        TraceOp::Sync => return None,
    };
    if end > first {
        Some((first, end - first))
    } else {
        None
    }
}

/// Splits `blocks` starting at `first` into device calls: wrapped modulo the capacity, none
/// longer than [`CHUNK_MAX_BLOCKS`], none crossing the end of the device.
pub fn wrapped_chunks(first: u64, blocks: u64, capacity_blocks: u64) -> Vec<(u64, u64)> {
    assert!(capacity_blocks > 0);
    let mut chunks = Vec::with_capacity((blocks / CHUNK_MAX_BLOCKS + 2) as usize);
    let mut lba = first % capacity_blocks;
    let mut left = blocks;
    // Bounded: each iteration consumes at least one block.
    while left > 0 {
        let count = left.min(CHUNK_MAX_BLOCKS).min(capacity_blocks - lba);
        chunks.push((lba, count));
        left -= count;
        lba = (lba + count) % capacity_blocks;
    }
    chunks
}

pub fn replay<R: BufRead>(
    ssd: &mut Ssd,
    reader: &mut TraceReader<R>,
    options: &ReplayOptions,
    progress: &mut dyn Progress,
) -> Result<RunReport, JobError> {
    if !(0.0..=1.0).contains(&options.fill_fraction) {
        return Err(JobError::spec("--fill must be between 0 and 1"));
    }
    if options.sample_every_bytes == Some(0) {
        return Err(JobError::spec("--sample-every must be above zero"));
    }
    let started = Instant::now();
    let capacity_blocks = ssd.logical_blocks();
    let capacity_bytes = capacity_blocks * LBA_BYTES;
    let sample_every = options
        .sample_every_bytes
        .unwrap_or((capacity_bytes / SAMPLES_PER_CAPACITY).max(LBA_BYTES));
    let at_start = ssd.counters();
    let mut sampler = Sampler::new(ssd, sample_every);
    let filled = fill_blocks(capacity_blocks, options.fill_fraction);
    let zones = crate::jobs::zoned::zone_shape(ssd)?;
    let fill_bytes = fill(ssd, filled, zones, &mut sampler, progress)?;
    sampler.take(ssd, Phase::Fill, fill_bytes);
    let after_fill = ssd.counters();

    let mut totals = JobTotals {
        name: "trace".to_string(),
        workload: format!("{:?}", reader.format()),
        dist: "trace".to_string(),
        bs_bytes: LBA_BYTES,
        region_start_bytes: 0,
        region_bytes: capacity_bytes,
        placement: crate::jobs::runner::placement_name(Placement::None),
        ..JobTotals::default()
    };
    let mut read_buf = vec![0u8; (CHUNK_MAX_BLOCKS * LBA_BYTES) as usize];
    let mut issued_bytes = 0u64;
    let mut events = 0u64;
    let mut footprint =
        TraceFootprint { device_bytes: capacity_bytes, ..TraceFootprint::default() };
    progress.start("replay", options.input_bytes);
    // Bounded by the trace length: each iteration consumes one record.
    while let Some(event) = reader.next_event()? {
        events += 1;
        if event.op == TraceOp::Sync {
            ssd.flush()?;
            continue;
        }
        let Some((first, blocks)) = block_span(&event) else { continue };
        note(&mut footprint, first, blocks, options.strict)?;
        for (lba, count) in wrapped_chunks(first, blocks, capacity_blocks) {
            let bytes = count * LBA_BYTES;
            match event.op {
                TraceOp::Write => {
                    ssd.write(lba, count as u32, None, Placement::None)?;
                    totals.write_bytes += bytes;
                }
                TraceOp::Read => {
                    ssd.read(lba, &mut read_buf[..bytes as usize])?;
                    totals.read_bytes += bytes;
                }
                TraceOp::Trim => {
                    ssd.trim(lba, count)?;
                    totals.trim_bytes += bytes;
                }
                TraceOp::Sync => {}
            }
            issued_bytes += bytes;
        }
        match event.op {
            TraceOp::Write => totals.write_ios += 1,
            TraceOp::Read => totals.read_ios += 1,
            TraceOp::Trim => totals.trim_ios += 1,
            TraceOp::Sync => {}
        }
        sampler.maybe_take(ssd, Phase::Run, fill_bytes + issued_bytes);
        if events.is_multiple_of(512) {
            progress.update(reader.consumed_bytes(), &|| String::new());
        }
    }
    progress.finish();
    sampler.take(ssd, Phase::Run, fill_bytes + issued_bytes);
    let at_end = ssd.counters();
    let inputs = ReportInputs {
        kind: "replay",
        fill_fraction: options.fill_fraction,
        seed: 0,
        until_bytes: 0,
        jobs: vec![totals],
        at_start,
        after_fill,
        at_end,
        wall_seconds: started.elapsed().as_secs_f64(),
    };
    let mut report = RunReport::build(ssd, sampler, inputs);
    report.trace = Some(footprint);
    Ok(report)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn event(op: TraceOp, offset_bytes: u64, length_bytes: u64) -> TraceEvent {
        TraceEvent { op, offset_bytes, length_bytes }
    }

    #[test]
    fn partial_blocks_round_out_for_writes_and_in_for_trims() {
        assert_eq!(block_span(&event(TraceOp::Write, 0, 4096)), Some((0, 1)));
        assert_eq!(block_span(&event(TraceOp::Write, 512, 512)), Some((0, 1)));
        assert_eq!(block_span(&event(TraceOp::Write, 4000, 200)), Some((0, 2)));
        assert_eq!(block_span(&event(TraceOp::Read, 8192, 1)), Some((2, 1)));
        assert_eq!(block_span(&event(TraceOp::Trim, 512, 8192)), Some((1, 1)));
        assert_eq!(block_span(&event(TraceOp::Trim, 512, 1024)), None);
        assert_eq!(block_span(&event(TraceOp::Write, 0, 0)), None);
        assert_eq!(block_span(&event(TraceOp::Write, u64::MAX, 2)), None);
    }

    #[test]
    fn addresses_wrap_modulo_capacity_and_split() {
        assert_eq!(wrapped_chunks(5, 2, 100), vec![(5, 2)]);
        assert_eq!(wrapped_chunks(105, 2, 100), vec![(5, 2)]);
        assert_eq!(wrapped_chunks(98, 5, 100), vec![(98, 2), (0, 3)]);
        let chunks = wrapped_chunks(0, 2500, 10_000);
        assert_eq!(chunks, vec![(0, 1024), (1024, 1024), (2048, 452)]);
        let total: u64 = wrapped_chunks(7, 250, 100).iter().map(|c| c.1).sum();
        assert_eq!(total, 250);
    }
}
