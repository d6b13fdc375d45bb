//! A device whose writes stay in memory: reads see them over the inner device, which is never
//! written. A read-only open (`Options::read_only`) runs recovery on it, so a database a crash
//! left needing redo opens for reading with its files untouched; what recovery wrote is
//! dropped with the database.
use super::{check_range, Device, DeviceError, ReadOp, WriteOp, BLOCK_BYTES};
use std::collections::HashMap;
use std::sync::{Arc, RwLock};

const BLOCK: usize = BLOCK_BYTES as usize;

#[derive(Debug)]
pub struct Overlay {
    inner: Arc<dyn Device>,
    /// Written blocks by block index.
    blocks: RwLock<HashMap<u64, Box<[u8; BLOCK]>>>,
}

impl Overlay {
    pub fn new(inner: Arc<dyn Device>) -> Overlay {
        Overlay { inner, blocks: RwLock::default() }
    }

    /// Blocks written so far (held in memory).
    pub fn written_blocks(&self) -> usize {
        self.blocks.read().unwrap_or_else(|e| e.into_inner()).len()
    }

    fn store(&self, offset: u64, data: &[u8]) -> Result<(), DeviceError> {
        check_range(offset, data.len() as u64, self.inner.capacity_bytes())?;
        let mut blocks = self.blocks.write().unwrap_or_else(|e| e.into_inner());
        for (i, chunk) in data.chunks_exact(BLOCK).enumerate() {
            let mut b = Box::new([0u8; BLOCK]);
            b.copy_from_slice(chunk);
            blocks.insert(offset / BLOCK_BYTES + i as u64, b);
        }
        Ok(())
    }
}

impl Device for Overlay {
    fn capacity_bytes(&self) -> u64 {
        self.inner.capacity_bytes()
    }
    fn read_batch(&self, ops: &mut [ReadOp<'_>]) -> Result<(), DeviceError> {
        self.inner.read_batch(ops)?;
        let blocks = self.blocks.read().unwrap_or_else(|e| e.into_inner());
        if blocks.is_empty() {
            return Ok(());
        }
        for op in ops.iter_mut() {
            let first = op.offset / BLOCK_BYTES;
            for (i, chunk) in op.buf.chunks_exact_mut(BLOCK).enumerate() {
                if let Some(b) = blocks.get(&(first + i as u64)) {
                    chunk.copy_from_slice(&b[..]);
                }
            }
        }
        Ok(())
    }
    fn write_batch(&self, ops: &[WriteOp<'_>]) -> Result<(), DeviceError> {
        for op in ops {
            self.store(op.offset, op.data)?;
        }
        Ok(())
    }
    fn sync(&self) -> Result<(), DeviceError> {
        Ok(())
    }
    fn trim(&self, offset: u64, len: u64) -> Result<(), DeviceError> {
        // Trimmed blocks read as zeros here, as on a device that zeroes them.
        check_range(offset, len, self.inner.capacity_bytes())?;
        let zeros = vec![0u8; len as usize];
        self.store(offset, &zeros)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::device::{MemoryDevice, WritePurpose};

    #[test]
    fn writes_stay_in_memory_and_reads_see_them() {
        let inner = Arc::new(MemoryDevice::new(16 * BLOCK_BYTES));
        inner.write_at(0, &[1u8; 2 * BLOCK], WritePurpose::UserEviction).unwrap();
        let o = Overlay::new(inner.clone());
        o.write_at(BLOCK_BYTES, &[2u8; BLOCK], WritePurpose::UserEviction).unwrap();
        let mut buf = vec![0u8; 3 * BLOCK];
        o.read_at(0, &mut buf).unwrap();
        assert!(buf[..BLOCK].iter().all(|b| *b == 1));
        assert!(buf[BLOCK..2 * BLOCK].iter().all(|b| *b == 2));
        assert!(buf[2 * BLOCK..].iter().all(|b| *b == 0));
        inner.read_at(0, &mut buf).unwrap();
        assert!(buf[BLOCK..2 * BLOCK].iter().all(|b| *b == 1), "the inner device is untouched");
        o.trim(0, BLOCK_BYTES).unwrap();
        o.read_at(0, &mut buf[..BLOCK]).unwrap();
        assert!(buf[..BLOCK].iter().all(|b| *b == 0));
        assert_eq!(o.written_blocks(), 2);
        assert!(o.write_at(16 * BLOCK_BYTES, &[0u8; BLOCK], WritePurpose::UserEviction).is_err());
    }
}
