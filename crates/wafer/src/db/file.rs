//! A plain file device (pread/pwrite through `std::os::unix::fs::FileExt`), so `Db::open(path)`
//! works before the device branch's FileDevice/io_uring backends land. Reads past the end of the
//! file return zeros, like a fresh device.
use crate::device::{check_range, Device, DeviceError, ReadOp, WriteOp};
use crate::stats::IoStats;
use std::fs::{File, OpenOptions};
use std::os::unix::fs::FileExt;
use std::path::Path;
use std::sync::Arc;

#[derive(Debug)]
pub struct StdFileDevice {
    file: File,
    capacity_bytes: u64,
    stats: Arc<IoStats>,
}

fn io(op: &'static str, offset: u64) -> impl FnOnce(std::io::Error) -> DeviceError {
    move |source| DeviceError::Io { op, offset, source }
}

impl StdFileDevice {
    /// Opens or creates `path`; capacity is the larger of the file size and `capacity_bytes`.
    pub fn open(path: &Path, capacity_bytes: u64) -> Result<StdFileDevice, DeviceError> {
        let file = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .open(path)
            .map_err(io("open", 0))?;
        let len = file.metadata().map_err(io("stat", 0))?.len();
        let block = crate::device::BLOCK_BYTES;
        let capacity_bytes = len.div_ceil(block).max(capacity_bytes / block) * block;
        Ok(StdFileDevice { file, capacity_bytes, stats: Arc::new(IoStats::default()) })
    }
    pub fn stats(&self) -> &Arc<IoStats> {
        &self.stats
    }
}

impl Device for StdFileDevice {
    fn capacity_bytes(&self) -> u64 {
        self.capacity_bytes
    }
    fn read_batch(&self, ops: &mut [ReadOp<'_>]) -> Result<(), DeviceError> {
        for op in ops.iter_mut() {
            check_range(op.offset, op.buf.len() as u64, self.capacity_bytes)?;
            let mut done = 0usize;
            // Bounded: every iteration reads at least one byte or stops at end of file.
            while done < op.buf.len() {
                let at = op.offset + done as u64;
                match self.file.read_at(&mut op.buf[done..], at) {
                    Ok(0) => break,
                    Ok(n) => done += n,
                    Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                    Err(e) => return Err(io("read", at)(e)),
                }
            }
            op.buf[done..].fill(0);
            self.stats.record_read(op.buf.len() as u64);
        }
        Ok(())
    }
    fn write_batch(&self, ops: &[WriteOp<'_>]) -> Result<(), DeviceError> {
        for op in ops {
            check_range(op.offset, op.data.len() as u64, self.capacity_bytes)?;
            self.file.write_all_at(op.data, op.offset).map_err(io("write", op.offset))?;
            self.stats.record_write(op.purpose, op.data.len() as u64);
        }
        Ok(())
    }
    fn sync(&self) -> Result<(), DeviceError> {
        self.file.sync_data().map_err(io("fsync", 0))?;
        self.stats.record_sync();
        Ok(())
    }
    fn trim(&self, offset: u64, len: u64) -> Result<(), DeviceError> {
        check_range(offset, len, self.capacity_bytes)?;
        self.stats.record_trim(len);
        Ok(())
    }
}
