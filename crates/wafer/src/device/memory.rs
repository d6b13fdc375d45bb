//! A device in memory: the reference backend for tests and in-memory databases.
use super::capacity::Capacity;
use super::{check_range, Device, DeviceError, ReadOp, WriteOp};
use std::sync::RwLock;

/// Bytes in a `Vec`, behind a lock. Writes are durable at once (there is no power to lose).
/// It counts nothing: wrap it in [`super::Counted`] for accounting.
#[derive(Debug)]
pub struct MemoryDevice {
    bytes: RwLock<Vec<u8>>,
    capacity: Capacity,
}

impl MemoryDevice {
    pub fn new(capacity_bytes: u64) -> MemoryDevice {
        assert!(capacity_bytes.is_multiple_of(super::BLOCK_BYTES), "capacity must be whole blocks");
        MemoryDevice { bytes: RwLock::new(Vec::new()), capacity: Capacity::fixed(capacity_bytes) }
    }

    /// A device of `capacity_bytes` that `grow_to` extends up to `max_bytes`, as a file on a
    /// filesystem of that size would grow.
    pub fn growable(capacity_bytes: u64, max_bytes: u64) -> MemoryDevice {
        assert!(capacity_bytes.is_multiple_of(super::BLOCK_BYTES), "capacity must be whole blocks");
        let capacity = Capacity::growable(capacity_bytes, max_bytes);
        MemoryDevice { bytes: RwLock::new(Vec::new()), capacity }
    }

    fn capacity(&self) -> u64 {
        self.capacity.bytes()
    }
}

impl Device for MemoryDevice {
    fn capacity_bytes(&self) -> u64 {
        self.capacity()
    }
    fn grow_to(&self, capacity_bytes: u64) -> Result<(), DeviceError> {
        self.capacity.check_growth(capacity_bytes)?;
        self.capacity.raise(capacity_bytes);
        Ok(())
    }
    fn read_batch(&self, ops: &mut [ReadOp<'_>]) -> Result<(), DeviceError> {
        let bytes = self.bytes.read().unwrap_or_else(|e| e.into_inner());
        for op in ops.iter_mut() {
            check_range(op.offset, op.buf.len() as u64, self.capacity())?;
            let start = op.offset as usize;
            let end = start + op.buf.len();
            // The backing Vec grows lazily: bytes past its end were never written (zeros).
            let have = bytes.len().clamp(start, end);
            if have > start {
                op.buf[..have - start].copy_from_slice(&bytes[start..have]);
            }
            op.buf[have - start..].fill(0);
        }
        Ok(())
    }
    fn write_batch(&self, ops: &[WriteOp<'_>]) -> Result<(), DeviceError> {
        for op in ops {
            check_range(op.offset, op.data.len() as u64, self.capacity())?;
        }
        let mut bytes = self.bytes.write().unwrap_or_else(|e| e.into_inner());
        for op in ops {
            let start = op.offset as usize;
            let end = start + op.data.len();
            if bytes.len() < end {
                bytes.resize(end, 0);
            }
            bytes[start..end].copy_from_slice(op.data);
        }
        Ok(())
    }
    fn sync(&self) -> Result<(), DeviceError> {
        Ok(())
    }
    fn trim(&self, offset: u64, len: u64) -> Result<(), DeviceError> {
        check_range(offset, len, self.capacity())?;
        let mut bytes = self.bytes.write().unwrap_or_else(|e| e.into_inner());
        let start = (offset as usize).min(bytes.len());
        let end = ((offset + len) as usize).min(bytes.len());
        bytes[start..end].fill(0);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::device::{WritePurpose, BLOCK_BYTES};

    #[test]
    fn reads_back_writes_and_zeros_elsewhere() {
        let dev = MemoryDevice::new(16 * BLOCK_BYTES);
        let data = vec![7u8; 4096];
        dev.write_at(4096, &data, WritePurpose::UserEviction).unwrap();
        let mut buf = vec![1u8; 8192];
        dev.read_at(0, &mut buf).unwrap();
        assert!(buf[..4096].iter().all(|b| *b == 0));
        assert!(buf[4096..].iter().all(|b| *b == 7));
        let mut far = vec![1u8; 4096];
        dev.read_at(15 * BLOCK_BYTES, &mut far).unwrap();
        assert!(far.iter().all(|b| *b == 0));
    }

    #[test]
    fn rejects_out_of_range_and_misaligned() {
        let dev = MemoryDevice::new(4 * BLOCK_BYTES);
        let data = vec![0u8; 4096];
        assert!(matches!(
            dev.write_at(4 * BLOCK_BYTES, &data, WritePurpose::Metadata),
            Err(DeviceError::OutOfRange { .. })
        ));
        assert!(matches!(
            dev.write_at(100, &data, WritePurpose::Metadata),
            Err(DeviceError::Misaligned { .. })
        ));
    }
}
