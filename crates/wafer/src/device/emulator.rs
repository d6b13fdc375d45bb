//! The flash emulator as a device: the engine writes to it like to a file, and the emulator's
//! counters say what the flash really programmed and erased (reachable through `Db::stats()` via
//! [`Device::flash_counters`]).
//!
//! Byte offsets become 4 KiB LBAs; the placement hint of each write is passed through (stream or
//! FDP handle); on a ZNS configuration the device also offers the zoned operations.
use super::{check_range, Device, DeviceError, ReadOp, WriteOp, WritePurpose, Zoned};
use flashemu::{Config, Interface, Ssd, StoreKind, LBA_BYTES};
use std::sync::{Mutex, MutexGuard};

/// Blocks per emulator call: the emulator takes a `u32` block count.
const BLOCKS_PER_CALL_MAX: u64 = 1 << 16;

#[derive(Debug)]
pub struct EmuDevice {
    ssd: Mutex<Ssd>,
    capacity_bytes: u64,
    /// Zone geometry, read once at construction; None on conventional and FDP devices.
    zones: Option<ZoneGeometry>,
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
        EmuDevice::from_ssd(Ssd::new(config)?)
    }

    /// Wraps an emulator already built (e.g. by the bench runner), with the same store check.
    pub fn from_ssd(ssd: Ssd) -> Result<EmuDevice, DeviceError> {
        Self::check_store(&ssd.config().store)?;
        let capacity_bytes = ssd.logical_blocks() * LBA_BYTES;
        let zones = if matches!(ssd.config().interface, Interface::Zns { .. }) {
            let report = ssd.report_zones()?;
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
        Ok(EmuDevice { ssd: Mutex::new(ssd), capacity_bytes, zones })
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
                ssd.read(lba, chunk)?;
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
                ssd.write(lba, blocks, Some(chunk), op.placement)?;
            }
        }
        Ok(())
    }

    fn sync(&self) -> Result<(), DeviceError> {
        Ok(self.ssd().flush()?)
    }

    fn trim(&self, offset: u64, len: u64) -> Result<(), DeviceError> {
        check_range(offset, len, self.capacity_bytes)?;
        if len == 0 {
            return Ok(());
        }
        Ok(self.ssd().trim(offset / LBA_BYTES, len / LBA_BYTES)?)
    }

    fn zoned(&self) -> Option<&dyn Zoned> {
        self.zones.map(|_| self as &dyn Zoned)
    }

    fn flash_counters(&self) -> Option<flashemu::Counters> {
        Some(self.ssd().counters())
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
        let lba = self.ssd().zone_append(zone, blocks, Some(data))?;
        Ok(lba * LBA_BYTES)
    }
    fn zone_reset(&self, zone: u32) -> Result<(), DeviceError> {
        Ok(self.ssd().zone_reset(zone)?)
    }
    fn zone_finish(&self, zone: u32) -> Result<(), DeviceError> {
        Ok(self.ssd().zone_finish(zone)?)
    }
    fn report_zones(&self) -> Result<Vec<flashemu::ZoneInfo>, DeviceError> {
        Ok(self.ssd().report_zones()?)
    }
}
