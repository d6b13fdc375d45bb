//! A zoned volume: a conventional device in front of a zoned one, as one address space with
//! leading conventional zones. This is how file systems run on ZNS SSDs, which have no
//! conventional zones of their own (f2fs keeps its metadata on a second, conventional device;
//! dm-linear concatenates the two the same way): the out-of-place store puts its superblock,
//! map snapshots and (without a log device) its map journal in the conventional zones, which
//! it rewrites in place, and its DB zones in the sequential ones.
//!
//! ```text
//! volume offset 0                 conventional_bytes              + zoned capacity
//! | metadata device (rounded up to whole zones) | zone 0 of the zoned device | zone 1 | ...
//!   volume zones 0..conventional_zones            volume zone conventional_zones + 0, ...
//! ```
//!
//! The hole between the metadata device's end and the first sequential zone is outside both
//! devices: any I/O there is `OutOfRange`. An I/O may not span the two devices.
use super::{
    Device, DeviceCapabilities, DeviceError, ReadOp, WriteOp, WritePurpose, ZoneAppend, Zoned,
};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

#[derive(Debug)]
pub struct ZonedVolume {
    meta: Arc<dyn Device>,
    zones: Arc<dyn Device>,
    /// Start of the first sequential zone: the metadata device rounded up to whole zones.
    conventional_bytes: u64,
    conventional_zones: u32,
    /// Bytes written to the metadata device, for the flash counters.
    meta_written_bytes: AtomicU64,
}

impl ZonedVolume {
    /// The volume of `meta` (any conventional device) and `zones` (a zoned device). Refuses a
    /// `zones` device without zones, or a `meta` device that is itself zoned.
    pub fn new(meta: Arc<dyn Device>, zones: Arc<dyn Device>) -> Result<ZonedVolume, DeviceError> {
        if meta.zoned().is_some() {
            return Err(DeviceError::Unsupported("a zoned volume's metadata device is zoned"));
        }
        let Some(zoned) = zones.zoned() else {
            return Err(DeviceError::Unsupported("a zoned volume needs a zoned device"));
        };
        let stride_bytes = zoned.zone_bytes();
        assert!(stride_bytes > 0 && zoned.conventional_zones() == 0);
        let conventional_zones = meta.capacity_bytes().div_ceil(stride_bytes).max(1);
        let conventional_zones = u32::try_from(conventional_zones)
            .map_err(|_| DeviceError::Unsupported("metadata device of more than 2^32 zones"))?;
        let conventional_bytes = u64::from(conventional_zones) * stride_bytes;
        assert!(conventional_bytes >= meta.capacity_bytes());
        Ok(ZonedVolume {
            meta,
            zones,
            conventional_bytes,
            conventional_zones,
            meta_written_bytes: AtomicU64::new(0),
        })
    }

    /// The zoned device (its flash counters and zone report are the volume's).
    pub fn zoned_device(&self) -> &Arc<dyn Device> {
        &self.zones
    }

    pub fn metadata_device(&self) -> &Arc<dyn Device> {
        &self.meta
    }

    fn inner_zoned(&self) -> &dyn Zoned {
        // Checked in `new`; a device does not stop being zoned.
        self.zones.zoned().expect("the zoned device reports zones")
    }

    /// Which device an I/O of `len` bytes at volume `offset` goes to (true: the metadata
    /// device), and its offset there.
    fn side(&self, offset: u64, len: u64) -> Result<(bool, u64), DeviceError> {
        let end = offset.checked_add(len).ok_or(DeviceError::OutOfRange {
            offset,
            len,
            capacity_bytes: self.capacity_bytes(),
        })?;
        if end <= self.conventional_bytes {
            return Ok((true, offset));
        }
        if offset >= self.conventional_bytes {
            return Ok((false, offset - self.conventional_bytes));
        }
        Err(DeviceError::OutOfRange { offset, len, capacity_bytes: self.conventional_bytes })
    }

    /// The zoned device's offset of volume byte `offset` (compressed commands address bytes of
    /// sequential zones only).
    fn sequential_offset(&self, offset: u64) -> Result<u64, DeviceError> {
        offset.checked_sub(self.conventional_bytes).ok_or(DeviceError::Unsupported(
            "compressed command on the conventional (metadata) device",
        ))
    }

    /// The zoned device's zone that volume zone `zone` is; conventional zones have none.
    fn sequential(&self, zone: u32) -> Result<u32, DeviceError> {
        zone.checked_sub(self.conventional_zones)
            .ok_or(DeviceError::Unsupported("zone operation on a conventional zone"))
    }
}

impl Device for ZonedVolume {
    fn capacity_bytes(&self) -> u64 {
        self.conventional_bytes + self.zones.capacity_bytes()
    }

    fn read_batch(&self, ops: &mut [ReadOp<'_>]) -> Result<(), DeviceError> {
        // One batch per device, as writes go: GC reads a victim's slots in one batch.
        let (mut meta, mut zones) = (Vec::new(), Vec::new());
        for op in ops.iter_mut() {
            let (to_meta, offset) = self.side(op.offset, op.buf.len() as u64)?;
            let routed = ReadOp { offset, buf: &mut *op.buf };
            if to_meta {
                meta.push(routed);
            } else {
                zones.push(routed);
            }
        }
        if !meta.is_empty() {
            self.meta.read_batch(&mut meta)?;
        }
        if !zones.is_empty() {
            self.zones.read_batch(&mut zones)?;
        }
        Ok(())
    }

    fn write_batch(&self, ops: &[WriteOp<'_>]) -> Result<(), DeviceError> {
        let (mut meta, mut zones) = (Vec::new(), Vec::new());
        for op in ops {
            let (to_meta, offset) = self.side(op.offset, op.data.len() as u64)?;
            let routed = WriteOp { offset, ..*op };
            if to_meta {
                meta.push(routed);
            } else {
                zones.push(routed);
            }
        }
        assert_eq!(meta.len() + zones.len(), ops.len());
        if !meta.is_empty() {
            self.meta.write_batch(&meta)?;
            let bytes: usize = meta.iter().map(|op| op.data.len()).sum();
            self.meta_written_bytes.fetch_add(bytes as u64, Ordering::Relaxed);
        }
        if !zones.is_empty() {
            self.zones.write_batch(&zones)?;
        }
        Ok(())
    }

    fn sync(&self) -> Result<(), DeviceError> {
        self.zones.sync()?;
        self.meta.sync()
    }

    fn trim(&self, offset: u64, len: u64) -> Result<(), DeviceError> {
        match self.side(offset, len)? {
            (true, at) => self.meta.trim(at, len),
            (false, at) => self.zones.trim(at, len),
        }
    }

    fn zoned(&self) -> Option<&dyn Zoned> {
        Some(self)
    }

    /// The zoned SSD's counters, with the metadata device's writes added as written to flash
    /// once: that device's own write amplification is not modelled (an SSD WAF of 1 for it, a
    /// lower bound), so total WAF still accounts for every byte the store issued.
    #[cfg(feature = "emulator")]
    fn flash_counters(&self) -> Option<flashemu::Counters> {
        let mut c = self.zones.flash_counters()?;
        let meta = self.meta_written_bytes.load(Ordering::Relaxed);
        c.host_write_bytes += meta;
        c.flash_host_bytes += meta;
        Some(c)
    }

    /// The zoned SSD's device time; the metadata device (memory) takes none.
    #[cfg(feature = "emulator")]
    fn flash_timing(&self) -> Option<flashemu::TimingReport> {
        self.zones.flash_timing()
    }

    fn capabilities(&self) -> DeviceCapabilities {
        let inner = self.zones.capabilities();
        let z = self.inner_zoned();
        DeviceCapabilities {
            zones: inner.zones.map(|g| super::ZoneGeometry {
                zone_count: g.zone_count + self.conventional_zones,
                conventional_zones: self.conventional_zones,
                ..g
            }),
            gc_unit_bytes: inner.gc_unit_bytes.or(Some(z.zone_bytes())),
            ..inner
        }
    }
}

impl Zoned for ZonedVolume {
    fn zone_bytes(&self) -> u64 {
        self.inner_zoned().zone_bytes()
    }
    fn zone_capacity_bytes(&self) -> u64 {
        self.inner_zoned().zone_capacity_bytes()
    }
    fn zone_count(&self) -> u32 {
        self.conventional_zones + self.inner_zoned().zone_count()
    }
    fn conventional_zones(&self) -> u32 {
        self.conventional_zones
    }
    fn zone_append(
        &self,
        zone: u32,
        data: &[u8],
        purpose: WritePurpose,
    ) -> Result<u64, DeviceError> {
        let at = self.inner_zoned().zone_append(self.sequential(zone)?, data, purpose)?;
        Ok(self.conventional_bytes + at)
    }
    fn zone_append_batch(&self, ops: &[ZoneAppend<'_>]) -> Result<Vec<u64>, DeviceError> {
        let mut inner = Vec::with_capacity(ops.len());
        for op in ops {
            inner.push(ZoneAppend { zone: self.sequential(op.zone)?, ..*op });
        }
        let offsets = self.inner_zoned().zone_append_batch(&inner)?;
        assert_eq!(offsets.len(), ops.len());
        Ok(offsets.into_iter().map(|at| self.conventional_bytes + at).collect())
    }
    fn zone_reset(&self, zone: u32) -> Result<(), DeviceError> {
        self.inner_zoned().zone_reset(self.sequential(zone)?)
    }
    fn zone_finish(&self, zone: u32) -> Result<(), DeviceError> {
        self.inner_zoned().zone_finish(self.sequential(zone)?)
    }
    /// The sequential zones only, numbered and addressed as in the volume.
    fn report_zones(&self) -> Result<Vec<super::ZoneInfo>, DeviceError> {
        let mut zones = self.inner_zoned().report_zones()?;
        for z in &mut zones {
            z.zone += self.conventional_zones;
            z.start += self.conventional_bytes;
            z.write_pointer += self.conventional_bytes;
        }
        Ok(zones)
    }
    fn compressed_write(
        &self,
        offset: u64,
        chunks: &[super::CwChunk<'_>],
    ) -> Result<super::CwDone, DeviceError> {
        let at = self.sequential_offset(offset)?;
        let mut done = self.inner_zoned().compressed_write(at, chunks)?;
        for c in &mut done.chunks {
            c.offset += self.conventional_bytes;
        }
        done.write_pointer += self.conventional_bytes;
        Ok(done)
    }
    fn decompressed_read(
        &self,
        offset: u64,
        feedback_bytes: u32,
        buf: &mut [u8],
    ) -> Result<usize, DeviceError> {
        let at = self.sequential_offset(offset)?;
        self.inner_zoned().decompressed_read(at, feedback_bytes, buf)
    }
    fn zone_open_padding(&self, zone: u32) -> Result<(), DeviceError> {
        self.inner_zoned().zone_open_padding(self.sequential(zone)?)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::device::{MemoryDevice, BLOCK_BYTES};

    fn zns() -> Arc<dyn Device> {
        Arc::new(crate::device::tiny_zns())
    }

    #[test]
    fn metadata_goes_to_the_conventional_device_and_zones_follow_it() {
        let zones = zns();
        let stride = zones.zoned().unwrap().zone_bytes();
        let meta: Arc<dyn Device> = Arc::new(MemoryDevice::new(stride + 8 * BLOCK_BYTES));
        let v = ZonedVolume::new(meta.clone(), zones.clone()).unwrap();
        assert_eq!(v.conventional_zones(), 2, "the metadata device rounds up to whole zones");
        assert_eq!(v.capacity_bytes(), 2 * stride + zones.capacity_bytes());
        let caps = v.capabilities().zones.unwrap();
        assert_eq!(
            (caps.conventional_zones, caps.zone_count),
            (2, 2 + zones.zoned().unwrap().zone_count())
        );

        // Rewritten in place on the conventional device.
        let page = vec![5u8; BLOCK_BYTES as usize];
        v.write_at(BLOCK_BYTES, &page, WritePurpose::Metadata).unwrap();
        v.write_at(BLOCK_BYTES, &page, WritePurpose::Metadata).unwrap();
        let mut back = vec![0u8; BLOCK_BYTES as usize];
        meta.read_at(BLOCK_BYTES, &mut back).unwrap();
        assert_eq!(back, page);
        // The hole past the metadata device and a span over both devices are refused.
        let hole = meta.capacity_bytes();
        assert!(v.write_at(hole, &page, WritePurpose::Metadata).is_err());
        assert!(v
            .read_at(2 * stride - BLOCK_BYTES, &mut vec![0; 2 * BLOCK_BYTES as usize])
            .is_err());

        // Zone appends land in the zoned device, at volume offsets.
        let z = v.zoned().unwrap();
        let at = z.zone_append(3, &page, WritePurpose::UserEviction).unwrap();
        assert_eq!(at, 3 * stride);
        let batch = [
            ZoneAppend { zone: 3, data: &page, purpose: WritePurpose::GcCopy },
            ZoneAppend { zone: 2, data: &page, purpose: WritePurpose::UserEviction },
        ];
        assert_eq!(
            z.zone_append_batch(&batch).unwrap(),
            vec![3 * stride + BLOCK_BYTES, 2 * stride]
        );
        v.read_at(3 * stride + BLOCK_BYTES, &mut back).unwrap();
        assert_eq!(back, page);
        let report = z.report_zones().unwrap();
        assert_eq!((report[1].zone, report[1].start), (3, 3 * stride));
        assert_eq!(report[1].write_pointer, 3 * stride + 2 * BLOCK_BYTES);
        // Conventional zones take no zone commands.
        assert!(z.zone_append(1, &page, WritePurpose::UserEviction).is_err());
        assert!(z.zone_reset(0).is_err());
        z.zone_reset(3).unwrap();
        assert_eq!(z.zone_append(3, &page, WritePurpose::UserEviction).unwrap(), 3 * stride);
    }

    #[test]
    fn a_volume_needs_a_zoned_device_behind_a_conventional_one() {
        let memory: Arc<dyn Device> = Arc::new(MemoryDevice::new(1 << 20));
        assert!(ZonedVolume::new(memory.clone(), memory.clone()).is_err());
        assert!(ZonedVolume::new(zns(), zns()).is_err());
    }
}
