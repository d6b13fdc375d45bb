//! 000's ZNS-like pattern for one zone size: fill the zone space one zone at a time, then
//! rewrite zones picked uniformly at random, each TRIMmed first and written whole and in order
//! (one active zone throughout), and measure the window after a warm-up.
use flashemu::rng::SplitMix64;
use wafer::device::{AlignedBuf, DeviceError, Placement, WriteOp, WritePurpose};

use super::options::InferOptions;
use super::point::SizePoint;
use super::target::Opened;

/// Writes zones whole, sequentially, in batches of requests from one buffer of random bytes
/// (incompressible, in case the device compresses).
struct ZoneWriter {
    buf: AlignedBuf,
    io_bytes: u64,
    batch_requests: u64,
    written_bytes: u64,
}

impl ZoneWriter {
    fn new(io_bytes: u64, batch_requests: u32, seed: u64) -> ZoneWriter {
        let len = (io_bytes * u64::from(batch_requests)) as usize;
        let mut buf = AlignedBuf::zeroed(len);
        let mut rng = SplitMix64::new(seed);
        for word in buf.chunks_exact_mut(8) {
            word.copy_from_slice(&rng.next_u64().to_le_bytes());
        }
        ZoneWriter { buf, io_bytes, batch_requests: u64::from(batch_requests), written_bytes: 0 }
    }

    fn write_zone(
        &mut self,
        dev: &Opened,
        offset: u64,
        zone_bytes: u64,
    ) -> Result<(), DeviceError> {
        let io = self.io_bytes.min(zone_bytes);
        debug_assert!(zone_bytes.is_multiple_of(io), "zone and request sizes are powers of two");
        let mut at = offset;
        let end = offset + zone_bytes;
        // Bound: zone_bytes / io requests, batch_requests per pass.
        while at < end {
            let requests = ((end - at) / io).min(self.batch_requests);
            let ops: Vec<WriteOp<'_>> = (0..requests)
                .map(|i| {
                    let from = (i * io) as usize;
                    WriteOp {
                        offset: at + i * io,
                        data: &self.buf[from..from + io as usize],
                        purpose: WritePurpose::UserEviction,
                        placement: Placement::None,
                    }
                })
                .collect();
            dev.device().write_batch(&ops)?;
            at += requests * io;
        }
        self.written_bytes += zone_bytes;
        Ok(())
    }
}

/// Rewrites `count` zones picked uniformly at random among `zones`.
fn overwrite(
    dev: &Opened,
    writer: &mut ZoneWriter,
    rng: &mut SplitMix64,
    (zones, zone_bytes): (u64, u64),
    count: u64,
    trim: bool,
) -> Result<(), DeviceError> {
    for _ in 0..count {
        let offset = rng.below(zones) * zone_bytes;
        if trim {
            dev.device().trim(offset, zone_bytes)?;
        }
        writer.write_zone(dev, offset, zone_bytes)?;
    }
    Ok(())
}

/// Zone rewrites that make `multiple` times the zone space (at least one).
fn rewrites(span_bytes: u64, zone_bytes: u64, multiple: f64) -> u64 {
    ((span_bytes as f64 * multiple / zone_bytes as f64).ceil() as u64).max(1)
}

/// Runs the pattern for one zone size on a fresh device and measures the window.
pub(super) fn run(
    dev: &mut Opened,
    zone_bytes: u64,
    o: &InferOptions,
) -> Result<SizePoint, DeviceError> {
    let capacity = dev.capacity_bytes();
    let zones = (capacity as f64 * o.fill) as u64 / zone_bytes;
    assert!(zones >= u64::from(o.zones_min), "InferOptions::zone_sizes keeps enough zones");
    let span_bytes = zones * zone_bytes;
    if o.trim {
        // 000 sec. 7.1: blkdiscard before each run (a fresh emulator is already empty).
        dev.device().trim(0, capacity / wafer::device::BLOCK_BYTES * wafer::device::BLOCK_BYTES)?;
    }
    let mut writer = ZoneWriter::new(o.io_bytes, o.batch_requests, o.seed);
    for zone in 0..zones {
        writer.write_zone(dev, zone * zone_bytes, zone_bytes)?;
    }
    let mut rng = SplitMix64::new(o.seed ^ zone_bytes);
    let geometry = (zones, zone_bytes);
    if o.warmup_writes > 0.0 {
        let count = rewrites(span_bytes, zone_bytes, o.warmup_writes);
        overwrite(dev, &mut writer, &mut rng, geometry, count, o.trim)?;
    }
    let start = dev.start_window();
    let before = writer.written_bytes;
    let count = rewrites(span_bytes, zone_bytes, o.measured_writes);
    overwrite(dev, &mut writer, &mut rng, geometry, count, o.trim)?;
    let host_write_bytes = writer.written_bytes - before;
    let window = dev.end_window(start)?;
    let flash_write_bytes = window.flash.as_ref().map(|c| c.flash_bytes());
    let waf = window.flash.as_ref().and_then(|c| c.waf());
    let write_mb_s =
        if window.seconds > 0.0 { host_write_bytes as f64 / window.seconds / 1e6 } else { 0.0 };
    Ok(SizePoint {
        zone_bytes,
        zones,
        host_write_bytes,
        flash_write_bytes,
        waf,
        gc_copy_bytes: window.flash.as_ref().map(|c| c.flash_gc_bytes),
        seconds: window.seconds,
        clock: window.clock,
        write_mb_s,
    })
}
