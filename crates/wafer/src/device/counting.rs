//! Write accounting: the one place where I/O is counted by purpose.
//!
//! Every backend is wrapped in a [`Counted`] by whoever opens the database, so each byte the
//! engine issues is counted exactly once, at the point of issue, by the purpose the caller tagged
//! it with; no backend counts on its own (that would count twice when wrappers stack).
//! Counts are taken when the backend reports success: a failed batch counts nothing, and the
//! engine stops writing after an I/O error anyway, so the figures describe what reached the device.
use super::{Device, DeviceError, ReadOp, WriteOp, WritePurpose, Zoned};
use crate::stats::IoStats;
use std::sync::Arc;

/// A device that records its reads, writes (by [`WritePurpose`]), syncs and trims in [`IoStats`].
#[derive(Debug)]
pub struct Counted<D> {
    inner: D,
    stats: Arc<IoStats>,
}

impl<D: Device> Counted<D> {
    pub fn new(inner: D, stats: Arc<IoStats>) -> Counted<D> {
        Counted { inner, stats }
    }
    pub fn stats(&self) -> &Arc<IoStats> {
        &self.stats
    }
    pub fn inner(&self) -> &D {
        &self.inner
    }
    pub fn into_inner(self) -> D {
        self.inner
    }
}

impl<D: Device> Device for Counted<D> {
    fn capacity_bytes(&self) -> u64 {
        self.inner.capacity_bytes()
    }
    fn read_batch(&self, ops: &mut [ReadOp<'_>]) -> Result<(), DeviceError> {
        self.inner.read_batch(ops)?;
        for op in ops.iter() {
            self.stats.record_read(op.buf.len() as u64);
        }
        Ok(())
    }
    fn write_batch(&self, ops: &[WriteOp<'_>]) -> Result<(), DeviceError> {
        self.inner.write_batch(ops)?;
        for op in ops {
            self.stats.record_write(op.purpose, op.data.len() as u64);
        }
        Ok(())
    }
    fn grow_to(&self, capacity_bytes: u64) -> Result<(), DeviceError> {
        self.inner.grow_to(capacity_bytes)
    }
    fn sync(&self) -> Result<(), DeviceError> {
        self.inner.sync()?;
        self.stats.record_sync();
        Ok(())
    }
    fn trim(&self, offset: u64, len: u64) -> Result<(), DeviceError> {
        self.inner.trim(offset, len)?;
        self.stats.record_trim(len);
        Ok(())
    }
    fn zoned(&self) -> Option<&dyn Zoned> {
        // Hand out the wrapper itself so zone appends are counted too.
        self.inner.zoned().map(|_| self as &dyn Zoned)
    }
    #[cfg(feature = "emulator")]
    fn flash_counters(&self) -> Option<flashemu::Counters> {
        self.inner.flash_counters()
    }
    #[cfg(feature = "emulator")]
    fn flash_timing(&self) -> Option<flashemu::TimingReport> {
        self.inner.flash_timing()
    }
    fn capabilities(&self) -> super::DeviceCapabilities {
        self.inner.capabilities()
    }
    #[cfg(feature = "emulator")]
    fn fdp_stats(&self) -> Option<flashemu::FdpStats> {
        self.inner.fdp_stats()
    }
}

impl<D: Device> Counted<D> {
    fn inner_zoned(&self) -> Result<&dyn Zoned, DeviceError> {
        self.inner.zoned().ok_or(DeviceError::Unsupported("zoned operations on a non-zoned device"))
    }
}

impl<D: Device> Zoned for Counted<D> {
    fn zone_bytes(&self) -> u64 {
        self.inner.zoned().map_or(0, |z| z.zone_bytes())
    }
    fn zone_capacity_bytes(&self) -> u64 {
        self.inner.zoned().map_or(0, |z| z.zone_capacity_bytes())
    }
    fn zone_count(&self) -> u32 {
        self.inner.zoned().map_or(0, |z| z.zone_count())
    }
    fn conventional_zones(&self) -> u32 {
        self.inner.zoned().map_or(0, |z| z.conventional_zones())
    }
    fn zone_append_batch(&self, ops: &[super::ZoneAppend<'_>]) -> Result<Vec<u64>, DeviceError> {
        let offsets = self.inner_zoned()?.zone_append_batch(ops)?;
        for op in ops {
            self.stats.record_write(op.purpose, op.data.len() as u64);
        }
        Ok(offsets)
    }
    fn zone_append(
        &self,
        zone: u32,
        data: &[u8],
        purpose: WritePurpose,
    ) -> Result<u64, DeviceError> {
        let offset = self.inner_zoned()?.zone_append(zone, data, purpose)?;
        self.stats.record_write(purpose, data.len() as u64);
        Ok(offset)
    }
    fn zone_reset(&self, zone: u32) -> Result<(), DeviceError> {
        self.inner_zoned()?.zone_reset(zone)
    }
    fn zone_finish(&self, zone: u32) -> Result<(), DeviceError> {
        self.inner_zoned()?.zone_finish(zone)
    }
    fn report_zones(&self) -> Result<Vec<super::ZoneInfo>, DeviceError> {
        self.inner_zoned()?.report_zones()
    }
    /// Each chunk counts the bytes it took in its zone (its feedback size) under its purpose:
    /// what the store issued to the device, as the slots of host-compressed pages count.
    fn compressed_write(
        &self,
        offset: u64,
        chunks: &[super::CwChunk<'_>],
    ) -> Result<super::CwDone, DeviceError> {
        let done = self.inner_zoned()?.compressed_write(offset, chunks)?;
        for (chunk, placed) in chunks.iter().zip(&done.chunks) {
            self.stats.record_write(chunk.purpose, u64::from(placed.feedback_bytes));
        }
        Ok(done)
    }
    fn decompressed_read(
        &self,
        offset: u64,
        feedback_bytes: u32,
        buf: &mut [u8],
    ) -> Result<usize, DeviceError> {
        let n = self.inner_zoned()?.decompressed_read(offset, feedback_bytes, buf)?;
        self.stats.record_read(u64::from(feedback_bytes));
        Ok(n)
    }
    fn zone_open_padding(&self, zone: u32) -> Result<(), DeviceError> {
        self.inner_zoned()?.zone_open_padding(zone)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::device::{MemoryDevice, Placement, BLOCK_BYTES};

    #[test]
    fn counts_every_purpose_once() {
        let stats = Arc::new(IoStats::default());
        let dev = Counted::new(MemoryDevice::new(128 * BLOCK_BYTES), stats.clone());
        let page = vec![1u8; BLOCK_BYTES as usize];
        for (i, purpose) in WritePurpose::ALL.iter().enumerate() {
            // Purpose i gets i + 1 writes so a swapped index would show.
            let ops: Vec<WriteOp<'_>> = (0..=i)
                .map(|j| WriteOp {
                    offset: (i * 8 + j) as u64 * BLOCK_BYTES,
                    data: &page,
                    purpose: *purpose,
                    placement: Placement::None,
                })
                .collect();
            dev.write_batch(&ops).unwrap();
        }
        let mut buf = vec![0u8; 2 * BLOCK_BYTES as usize];
        dev.read_at(0, &mut buf).unwrap();
        dev.sync().unwrap();
        dev.trim(0, 4 * BLOCK_BYTES).unwrap();
        let s = stats.snapshot();
        for (i, purpose) in WritePurpose::ALL.iter().enumerate() {
            assert_eq!(s.bytes(*purpose), (i as u64 + 1) * BLOCK_BYTES, "{}", purpose.name());
            assert_eq!(s.write_ops[i], i as u64 + 1);
        }
        assert_eq!((s.read_bytes, s.read_ops, s.syncs), (2 * BLOCK_BYTES, 1, 1));
        assert_eq!(s.trim_bytes, 4 * BLOCK_BYTES);
    }

    #[test]
    fn failed_batch_counts_nothing() {
        let stats = Arc::new(IoStats::default());
        let dev = Counted::new(MemoryDevice::new(4 * BLOCK_BYTES), stats.clone());
        let page = vec![1u8; BLOCK_BYTES as usize];
        let ops = [
            WriteOp {
                offset: 0,
                data: &page,
                purpose: WritePurpose::Wal,
                placement: Placement::None,
            },
            WriteOp {
                offset: 4 * BLOCK_BYTES,
                data: &page,
                purpose: WritePurpose::Wal,
                placement: Placement::None,
            },
        ];
        assert!(dev.write_batch(&ops).is_err());
        assert_eq!(stats.snapshot(), crate::stats::IoSnapshot::default());
    }

    #[test]
    fn wraps_a_backend_chosen_at_run_time() {
        let stats = Arc::new(IoStats::default());
        let backend: Box<dyn Device> = Box::new(crate::device::FaultDevice::new(8 * BLOCK_BYTES));
        let dev = Counted::new(backend, stats.clone());
        dev.write_at(0, &[9u8; BLOCK_BYTES as usize], WritePurpose::Doublewrite).unwrap();
        dev.sync().unwrap();
        let s = stats.snapshot();
        assert_eq!((s.bytes(WritePurpose::Doublewrite), s.syncs), (BLOCK_BYTES, 1));
        assert!(dev.zoned().is_none());
    }
}
