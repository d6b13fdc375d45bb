//! The flash emulator as a device: the engine writes to it like to a file, and the emulator's
//! counters say what the flash really programmed and erased (reachable through `Db::stats()` via
//! [`Device::flash_counters`]).
//!
//! Byte offsets become 4 KiB LBAs; the placement hint of each write is passed through (stream or
//! FDP handle); on a ZNS configuration the device also offers the zoned operations. The engine's
//! device types are converted here, both ways: placements, zone reports, errors.
use super::{
    check_range, Device, DeviceError, Placement, ReadOp, WriteOp, WritePurpose, ZoneCondition,
    ZoneInfo, Zoned,
};
use flashemu::{Config, EmuError, Interface, Ssd, StoreKind, LBA_BYTES};
use std::sync::{Mutex, MutexGuard};

/// Blocks per emulator call: the emulator takes a `u32` block count.
const BLOCKS_PER_CALL_MAX: u64 = 1 << 16;

#[derive(Debug)]
pub struct EmuDevice {
    ssd: Mutex<Ssd>,
    capacity_bytes: u64,
    /// Zone geometry, read once at construction; None on conventional and FDP devices.
    zones: Option<ZoneGeometry>,
    /// Whether trims reach the SSD (see [`EmuDevice::without_trim`]).
    trims_reach_ssd: bool,
}

#[derive(Debug, Clone, Copy)]
struct ZoneGeometry {
    zone_bytes: u64,
    zone_capacity_bytes: u64,
    zone_count: u32,
}

impl EmuDevice {
    /// Builds an emulator from `config`. Its store must keep data: an engine reads back what it
    /// wrote, and a metadata-only store (`StoreKind::None`) would hand it zeros.
    pub fn new(config: Config) -> Result<EmuDevice, DeviceError> {
        Self::check_store(&config.store)?;
        EmuDevice::from_ssd(Ssd::new(config).map_err(emu_error("configure"))?)
    }

    /// Wraps an emulator already built (e.g. by the bench runner), with the same store check.
    pub fn from_ssd(ssd: Ssd) -> Result<EmuDevice, DeviceError> {
        Self::check_store(&ssd.config().store)?;
        EmuDevice::wrap(ssd)
    }

    /// An emulator for write patterns that never read back what they wrote (GC-unit
    /// inference): any store, `none` included, so a sweep over a device of GiBs costs the
    /// FTL's work and no memory for data. Reads from a `none` store return zeros.
    pub fn write_only(config: Config) -> Result<EmuDevice, DeviceError> {
        EmuDevice::wrap(Ssd::new(config).map_err(emu_error("configure"))?)
    }

    fn wrap(ssd: Ssd) -> Result<EmuDevice, DeviceError> {
        let capacity_bytes = ssd.logical_blocks() * LBA_BYTES;
        let zones = if matches!(ssd.config().interface, Interface::Zns { .. }) {
            let report = ssd.report_zones().map_err(emu_error("zone report"))?;
            let first =
                report.first().ok_or(DeviceError::Unsupported("ZNS device without zones"))?;
            Some(ZoneGeometry {
                zone_bytes: first.size_blocks * LBA_BYTES,
                zone_capacity_bytes: first.capacity_blocks * LBA_BYTES,
                zone_count: ssd.zone_count(),
            })
        } else {
            None
        };
        Ok(EmuDevice { ssd: Mutex::new(ssd), capacity_bytes, zones, trims_reach_ssd: true })
    }

    /// The device with TRIM off: trims are accepted and dropped, as if the host never sent
    /// them, so the SSD keeps freed data valid until it is overwritten.
    pub fn without_trim(self) -> EmuDevice {
        EmuDevice { trims_reach_ssd: false, ..self }
    }

    fn check_store(store: &StoreKind) -> Result<(), DeviceError> {
        match store {
            StoreKind::None => Err(DeviceError::Unsupported(
                "emulator store `none` keeps no data; an engine needs store `memory` or `file`",
            )),
            StoreKind::Memory | StoreKind::File(_) => Ok(()),
        }
    }

    /// The emulator itself, for reports that need more than the counters (FDP logs, wear).
    pub fn ssd(&self) -> MutexGuard<'_, Ssd> {
        self.ssd.lock().unwrap_or_else(|e| e.into_inner())
    }
}

impl Device for EmuDevice {
    fn capacity_bytes(&self) -> u64 {
        self.capacity_bytes
    }

    fn read_batch(&self, ops: &mut [ReadOp<'_>]) -> Result<(), DeviceError> {
        for op in ops.iter() {
            check_range(op.offset, op.buf.len() as u64, self.capacity_bytes)?;
        }
        let mut ssd = self.ssd();
        for op in ops.iter_mut() {
            for (lba, chunk) in chunks_mut(op.offset, op.buf) {
                ssd.read(lba, chunk).map_err(emu_error("read"))?;
            }
        }
        Ok(())
    }

    fn write_batch(&self, ops: &[WriteOp<'_>]) -> Result<(), DeviceError> {
        for op in ops {
            check_range(op.offset, op.data.len() as u64, self.capacity_bytes)?;
        }
        let mut ssd = self.ssd();
        for op in ops {
            let step = (BLOCKS_PER_CALL_MAX * LBA_BYTES) as usize;
            for (i, chunk) in op.data.chunks(step).enumerate() {
                let lba = op.offset / LBA_BYTES + i as u64 * BLOCKS_PER_CALL_MAX;
                let blocks = (chunk.len() as u64 / LBA_BYTES) as u32;
                let placement = emu_placement(op.placement);
                ssd.write(lba, blocks, Some(chunk), placement).map_err(emu_error("write"))?;
            }
        }
        Ok(())
    }

    /// A FLUSH: with timing on, the emulator charges it in device time (it waits for the
    /// writes in flight, `flashemu::Ssd::flush`).
    fn sync(&self) -> Result<(), DeviceError> {
        self.ssd().flush().map_err(emu_error("flush"))
    }

    fn trim(&self, offset: u64, len: u64) -> Result<(), DeviceError> {
        check_range(offset, len, self.capacity_bytes)?;
        if len == 0 || !self.trims_reach_ssd {
            return Ok(());
        }
        self.ssd().trim(offset / LBA_BYTES, len / LBA_BYTES).map_err(emu_error("trim"))
    }

    fn zoned(&self) -> Option<&dyn Zoned> {
        self.zones.map(|_| self as &dyn Zoned)
    }

    fn flash_counters(&self) -> Option<flashemu::Counters> {
        Some(self.ssd().counters())
    }

    fn flash_timing(&self) -> Option<flashemu::TimingReport> {
        self.ssd().timing_report()
    }

    fn fdp_stats(&self) -> Option<flashemu::FdpStats> {
        self.ssd().fdp_stats()
    }

    fn capabilities(&self) -> super::DeviceCapabilities {
        let ssd = self.ssd();
        let config = ssd.config();
        let superblock_bytes = config.layout().superblock_bytes();
        let (gc_unit_bytes, fdp, zones) = match config.interface {
            Interface::Conventional { .. } => (Some(superblock_bytes), None, None),
            Interface::Fdp { ruh_count, .. } => (
                Some(superblock_bytes),
                Some(super::FdpGeometry {
                    reclaim_unit_bytes: superblock_bytes,
                    handles: u16::try_from(ruh_count).unwrap_or(u16::MAX),
                }),
                None,
            ),
            Interface::Zns { max_open_zones, max_active_zones, .. } => (
                None,
                None,
                self.zones.map(|z| super::ZoneGeometry {
                    zone_bytes: z.zone_bytes,
                    zone_capacity_bytes: z.zone_capacity_bytes,
                    zone_count: z.zone_count,
                    conventional_zones: 0,
                    max_open_zones,
                    max_active_zones,
                }),
            ),
        };
        let layout = config.layout();
        // Slots are 4 KiB, the logical block size.
        let spare_blocks = layout.physical_slots.saturating_sub(layout.logical_blocks);
        super::DeviceCapabilities {
            gc_unit_bytes,
            fdp,
            zones,
            in_storage_compression: config
                .cczns
                .map(|c| super::InStorageCompression { chunk_align_bytes: c.chunk_align_bytes }),
            spare_bytes: Some(spare_blocks * super::BLOCK_BYTES),
        }
    }
}

/// The emulator's error as the engine's, for command `op`. A full device is
/// `DeviceError::NoSpace` whatever the backend, so the engine's out-of-space path matches one
/// variant; an illegal decompressed read is `IllegalRead`, as on every CCZNS backend; every
/// other refusal keeps the emulator's error as its source.
fn emu_error(op: &'static str) -> impl Fn(EmuError) -> DeviceError {
    move |e| match e {
        EmuError::NoSpace => DeviceError::NoSpace,
        EmuError::IllegalRead { byte, reason } => DeviceError::IllegalRead { offset: byte, reason },
        e => DeviceError::Backend { op, source: Box::new(e) },
    }
}

/// The engine's placement hint as the emulator's.
fn emu_placement(placement: Placement) -> flashemu::Placement {
    match placement {
        Placement::None => flashemu::Placement::None,
        Placement::Stream(id) => flashemu::Placement::Stream(id),
        Placement::Fdp(id) => flashemu::Placement::Fdp(id),
    }
}

/// One zone of the emulator's report in the engine's terms (bytes, not LBAs).
fn zone_info(z: &flashemu::ZoneInfo) -> ZoneInfo {
    use flashemu::ZoneState;
    let condition = match z.state {
        ZoneState::Empty => ZoneCondition::Empty,
        ZoneState::ImplicitlyOpen | ZoneState::ExplicitlyOpen | ZoneState::Closed => {
            ZoneCondition::Active
        }
        ZoneState::Full => ZoneCondition::Full,
    };
    ZoneInfo {
        zone: z.zone_id,
        start: z.start_lba * LBA_BYTES,
        write_pointer: z.write_pointer_bytes,
        condition,
    }
}

/// Splits a read buffer into emulator-sized calls: (first LBA, bytes).
fn chunks_mut(offset: u64, buf: &mut [u8]) -> impl Iterator<Item = (u64, &mut [u8])> {
    let step = (BLOCKS_PER_CALL_MAX * LBA_BYTES) as usize;
    buf.chunks_mut(step)
        .enumerate()
        .map(move |(i, chunk)| (offset / LBA_BYTES + i as u64 * BLOCKS_PER_CALL_MAX, chunk))
}

impl Zoned for EmuDevice {
    fn zone_bytes(&self) -> u64 {
        self.zones.map_or(0, |z| z.zone_bytes)
    }
    fn zone_capacity_bytes(&self) -> u64 {
        self.zones.map_or(0, |z| z.zone_capacity_bytes)
    }
    fn zone_count(&self) -> u32 {
        self.zones.map_or(0, |z| z.zone_count)
    }
    fn zone_append(
        &self,
        zone: u32,
        data: &[u8],
        _purpose: WritePurpose,
    ) -> Result<u64, DeviceError> {
        let len = data.len() as u64;
        // An append lands wherever the write pointer is, so only its length can be checked here.
        check_range(0, len, self.zone_capacity_bytes())?;
        if len == 0 {
            return Err(DeviceError::Misaligned { offset: 0, len, align: LBA_BYTES });
        }
        let blocks = (len / LBA_BYTES) as u32;
        let lba =
            self.ssd().zone_append(zone, blocks, Some(data)).map_err(emu_error("zone append"))?;
        Ok(lba * LBA_BYTES)
    }
    fn zone_reset(&self, zone: u32) -> Result<(), DeviceError> {
        self.ssd().zone_reset(zone).map_err(emu_error("zone reset"))
    }
    fn zone_finish(&self, zone: u32) -> Result<(), DeviceError> {
        self.ssd().zone_finish(zone).map_err(emu_error("zone finish"))
    }
    fn report_zones(&self) -> Result<Vec<ZoneInfo>, DeviceError> {
        let report = self.ssd().report_zones().map_err(emu_error("zone report"))?;
        Ok(report.iter().map(zone_info).collect())
    }
    fn compressed_write(
        &self,
        offset: u64,
        chunks: &[super::CwChunk<'_>],
    ) -> Result<super::CwDone, DeviceError> {
        let data: Vec<&[u8]> = chunks.iter().map(|c| c.data).collect();
        let out =
            self.ssd().compressed_write(offset, &data).map_err(emu_error("compressed write"))?;
        let placed = out.chunks.iter().map(|c| super::CwPlaced {
            offset: c.byte_address,
            stored_bytes: c.stored_bytes,
            feedback_bytes: c.feedback_bytes,
        });
        Ok(super::CwDone {
            chunks: placed.collect(),
            write_pointer: out.write_pointer_bytes,
            zone_finished: out.zone_finished,
        })
    }
    fn decompressed_read(
        &self,
        offset: u64,
        feedback_bytes: u32,
        buf: &mut [u8],
    ) -> Result<usize, DeviceError> {
        let read = self.ssd().decompressed_read(offset, feedback_bytes, buf);
        read.map_err(emu_error("decompressed read"))
    }
    fn zone_open_padding(&self, zone: u32) -> Result<(), DeviceError> {
        self.ssd().zone_open_padding(zone).map_err(emu_error("padding zone open"))
    }
}

/// The `tiny` preset as a ZNS SSD (no OP, whole zones, 4 open): for the crate's unit tests.
#[cfg(test)]
pub(crate) fn tiny_zns() -> EmuDevice {
    let mut cfg = Config::preset("tiny").expect("the tiny preset");
    cfg.op = 0.0;
    cfg.interface =
        Interface::Zns { zone_capacity_blocks: 0, max_open_zones: 4, max_active_zones: 4 };
    EmuDevice::new(cfg).expect("tiny as ZNS")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::device::conformance::{run, same};
    use crate::device::{Counted, Placement, WriteOp, BLOCK_BYTES};
    use flashemu::{GcConfig, GcPolicy, Geometry};

    /// 2 channels x 2 chips x 32 blocks x 64 pages of 4 KiB = 32 MiB of flash; a superblock
    /// (and a ZNS zone) is 256 pages. Spelled out rather than taken from a preset so the test
    /// does not move when presets are tuned.
    fn config(interface: Interface) -> Config {
        Config {
            geometry: Geometry {
                channels: 2,
                chips_per_channel: 2,
                blocks_per_chip: 32,
                pages_per_block: 64,
                flash_page_bytes: 4096,
                superblock_chips_per_channel: 2,
            },
            op: 0.28,
            gc: GcConfig {
                policy: GcPolicy::Greedy,
                free_superblocks_low: 2,
                free_superblocks_high: 3,
                random_d: 4,
            },
            interface,
            store: StoreKind::Memory,
            seed: 1,
            timing: flashemu::TimingConfig::default(),
            plan: None,
            cczns: None,
        }
    }

    fn zns() -> Interface {
        Interface::Zns { zone_capacity_blocks: 256, max_open_zones: 4, max_active_zones: 4 }
    }

    #[test]
    fn conventional_passes_the_conformance_suite() {
        let dev = EmuDevice::new(config(Interface::Conventional { streams: 1 })).unwrap();
        assert!(dev.zoned().is_none());
        run(&dev, "emulator");
    }

    /// The device's sync is the emulator's FLUSH: with timing on it waits, in device time, for
    /// the writes in flight (the programs of the pages they filled), and a device without
    /// timing reports none.
    #[test]
    fn sync_is_a_flush_in_device_time() {
        let plain = EmuDevice::new(config(Interface::Conventional { streams: 1 })).unwrap();
        assert!(plain.flash_timing().is_none());
        let mut cfg = config(Interface::Conventional { streams: 1 });
        cfg.timing.mode = flashemu::TimingMode::Chips;
        cfg.timing.queue_depth = 8;
        let program_ns = cfg.timing.program_ns;
        let dev = EmuDevice::new(cfg).unwrap();
        let page = [3u8; BLOCK_BYTES as usize];
        let ops: Vec<WriteOp<'_>> = (0..4u64)
            .map(|i| WriteOp {
                offset: i * BLOCK_BYTES,
                data: &page,
                purpose: WritePurpose::UserEviction,
                placement: Placement::None,
            })
            .collect();
        dev.write_batch(&ops).unwrap();
        let before = dev.flash_timing().unwrap();
        dev.sync().unwrap();
        let after = dev.flash_timing().unwrap();
        assert_eq!((before.flushes, after.flushes), (0, 1));
        // 4 KiB flash pages: every write filled a page and completed after its program, so the
        // flush waited for the last of them and the clock did not move past it.
        assert!(after.flush_wait_ns >= program_ns, "{after:?}");
        assert_eq!(after.device_ns, before.device_ns);
    }

    #[test]
    fn without_trim_drops_trims_before_the_ssd() {
        let cfg = config(Interface::Conventional { streams: 1 });
        let dev = EmuDevice::new(cfg).unwrap().without_trim();
        dev.write_at(0, &[7u8; BLOCK_BYTES as usize], WritePurpose::Padding).unwrap();
        dev.trim(0, BLOCK_BYTES).unwrap();
        assert_eq!(dev.ssd().counters().host_trim_bytes, 0);
        let mut back = [0u8; BLOCK_BYTES as usize];
        dev.read_at(0, &mut back).unwrap();
        assert_eq!(back, [7u8; BLOCK_BYTES as usize], "the SSD still holds the data");
        // Out-of-range trims are still refused.
        assert!(dev.trim(dev.capacity_bytes(), BLOCK_BYTES).is_err());
    }

    #[test]
    fn refuses_a_store_that_keeps_no_data() {
        let mut cfg = config(Interface::Conventional { streams: 1 });
        cfg.store = StoreKind::None;
        let err = EmuDevice::new(cfg.clone()).unwrap_err();
        assert!(matches!(err, DeviceError::Unsupported(_)), "{err}");
        assert!(err.to_string().contains("keeps no data"), "{err}");
        // A write-only device takes it: writes are counted, reads see zeros.
        let dev = EmuDevice::write_only(cfg).unwrap();
        dev.write_at(0, &[7u8; BLOCK_BYTES as usize], WritePurpose::Padding).unwrap();
        let mut back = [1u8; BLOCK_BYTES as usize];
        dev.read_at(0, &mut back).unwrap();
        assert!(back.iter().all(|b| *b == 0));
        assert_eq!(dev.flash_counters().unwrap().host_write_bytes, BLOCK_BYTES);
    }

    #[test]
    fn flash_counters_see_every_host_byte_and_placement() {
        let stats = std::sync::Arc::new(crate::stats::IoStats::default());
        let emu = EmuDevice::new(config(Interface::Conventional { streams: 2 })).unwrap();
        let dev = Counted::new(emu, stats.clone());
        let data = vec![3u8; 4 * BLOCK_BYTES as usize];
        let ops = [
            WriteOp {
                offset: 0,
                data: &data,
                purpose: WritePurpose::UserEviction,
                placement: Placement::Stream(1),
            },
            WriteOp {
                offset: 8 * BLOCK_BYTES,
                data: &data[..BLOCK_BYTES as usize],
                purpose: WritePurpose::Padding,
                placement: Placement::Stream(0),
            },
        ];
        dev.write_batch(&ops).unwrap();
        dev.sync().unwrap();
        let flash = dev.flash_counters().unwrap();
        assert_eq!(flash.host_write_bytes, 5 * BLOCK_BYTES);
        assert_eq!(flash.stream_host_bytes.get(1), Some(&(4 * BLOCK_BYTES)));
        let s = stats.snapshot();
        assert_eq!(s.bytes(WritePurpose::UserEviction), 4 * BLOCK_BYTES);
        assert_eq!(s.bytes(WritePurpose::Padding), BLOCK_BYTES);
        let mut back = vec![0u8; data.len()];
        dev.read_at(0, &mut back).unwrap();
        same(&back, &data, "emulator", "read back");
    }

    #[test]
    fn zns_appends_resets_and_reports() {
        let stats = std::sync::Arc::new(crate::stats::IoStats::default());
        let dev = Counted::new(EmuDevice::new(config(zns())).unwrap(), stats.clone());
        let zoned = dev.zoned().unwrap();
        assert_eq!(zoned.zone_bytes(), 256 * BLOCK_BYTES);
        assert_eq!(zoned.zone_capacity_bytes(), 256 * BLOCK_BYTES);
        assert!(zoned.zone_count() >= 2);
        assert_eq!(dev.capacity_bytes(), zoned.zone_count() as u64 * zoned.zone_bytes());
        let a = vec![0xA1u8; 2 * BLOCK_BYTES as usize];
        let b = vec![0xB2u8; BLOCK_BYTES as usize];
        let first = zoned.zone_append(1, &a, WritePurpose::UserEviction).unwrap();
        let second = zoned.zone_append(1, &b, WritePurpose::GcCopy).unwrap();
        assert_eq!(first, zoned.zone_bytes());
        assert_eq!(second, first + a.len() as u64);
        let mut back = vec![0u8; 3 * BLOCK_BYTES as usize];
        dev.read_at(first, &mut back).unwrap();
        same(&back[..a.len()], &a, "zns", "first append");
        same(&back[a.len()..], &b, "zns", "second append");
        let s = stats.snapshot();
        assert_eq!(
            (s.bytes(WritePurpose::UserEviction), s.bytes(WritePurpose::GcCopy)),
            (8192, 4096)
        );

        let report = zoned.report_zones().unwrap();
        assert_eq!(report.len(), zoned.zone_count() as usize);
        assert_eq!(report[1].zone, 1);
        assert_eq!(report[1].condition, ZoneCondition::Active);
        assert_eq!(report[1].write_pointer, report[1].start + 3 * BLOCK_BYTES);
        zoned.zone_finish(1).unwrap();
        assert_eq!(zoned.report_zones().unwrap()[1].condition, ZoneCondition::Full);
        zoned.zone_reset(1).unwrap();
        let zone = zoned.report_zones().unwrap()[1];
        assert_eq!((zone.condition, zone.write_pointer), (ZoneCondition::Empty, zone.start));
        // ZNS has no TRIM: zones are reset instead.
        assert!(dev.trim(0, BLOCK_BYTES).is_err());
        assert!(zoned.zone_append(zoned.zone_count(), &b, WritePurpose::Wal).is_err());
    }

    /// Model test through GC: random overwrites of 90% of the logical space, four times over,
    /// must read back exactly what the model says, while the emulator reports GC copies.
    #[test]
    fn overwrites_through_gc_read_back_the_model() {
        let dev = EmuDevice::new(config(Interface::Conventional { streams: 1 })).unwrap();
        let blocks = dev.capacity_bytes() / BLOCK_BYTES * 9 / 10;
        let mut model = vec![0u64; blocks as usize];
        let mut rng = crate::rng::SplitMix64::new(7);
        let page = |block: u64, generation: u64| {
            let mut p = vec![generation as u8; BLOCK_BYTES as usize];
            p[..8].copy_from_slice(&block.to_le_bytes());
            p[8..16].copy_from_slice(&generation.to_le_bytes());
            p
        };
        let rounds = blocks * 4 / 64;
        for round in 1..=rounds {
            // One block at most once per batch: ops of a batch may run in any order.
            let mut targets: Vec<u64> = (0..64).map(|_| rng.next_u64() % blocks).collect();
            targets.sort_unstable();
            targets.dedup();
            let datas: Vec<Vec<u8>> = targets.iter().map(|b| page(*b, round)).collect();
            let ops: Vec<WriteOp<'_>> = targets
                .iter()
                .zip(&datas)
                .map(|(b, d)| WriteOp {
                    offset: b * BLOCK_BYTES,
                    data: d,
                    purpose: WritePurpose::UserEviction,
                    placement: Placement::None,
                })
                .collect();
            dev.write_batch(&ops).unwrap();
            for b in &targets {
                model[*b as usize] = round;
            }
        }
        let mut buf = vec![0u8; BLOCK_BYTES as usize];
        for (b, generation) in model.iter().enumerate() {
            dev.read_at(b as u64 * BLOCK_BYTES, &mut buf).unwrap();
            let want =
                if *generation == 0 { vec![0u8; buf.len()] } else { page(b as u64, *generation) };
            same(&buf, &want, "emulator", &format!("block {b} generation {generation}"));
        }
        let flash = dev.flash_counters().unwrap();
        assert!(flash.flash_gc_bytes > 0, "four device-fulls of overwrites must trigger GC");
        assert!(flash.flash_host_bytes + flash.flash_gc_bytes >= flash.host_write_bytes);
    }

    #[test]
    fn capabilities_report_the_superblock_reclaim_unit_and_zones() {
        let cns = Config::preset("cns").unwrap();
        let superblock_bytes = cns.layout().superblock_bytes();
        let caps = EmuDevice::new(cns).unwrap().capabilities();
        assert_eq!(caps.gc_unit_bytes, Some(superblock_bytes));
        assert_eq!((caps.fdp, caps.zones, caps.in_storage_compression), (None, None, None));
        let fdp = EmuDevice::new(Config::preset("fdp").unwrap()).unwrap().capabilities();
        let ru = fdp.fdp.unwrap();
        assert_eq!((ru.reclaim_unit_bytes, ru.handles), (superblock_bytes, 8));
        let zns = EmuDevice::new(Config::preset("zns").unwrap()).unwrap().capabilities();
        let z = zns.zones.unwrap();
        assert_eq!((z.zone_bytes, z.max_open_zones), (superblock_bytes, 14));
        assert_eq!(zns.gc_unit_bytes, None, "ZNS has no device GC");
        let tiny = Config::preset("tiny").unwrap();
        let tiny_superblock = tiny.layout().superblock_bytes();
        let caps = EmuDevice::new(tiny).unwrap().capabilities();
        assert_eq!(caps.gc_unit_bytes, Some(tiny_superblock));
    }
}
