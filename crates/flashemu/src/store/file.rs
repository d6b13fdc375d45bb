//! Backing-file store: LBA `n` lives at byte `n * 4096` of a sparse file. Created empty (the
//! FTL's metadata is not persisted, so old contents would contradict it); TRIM punches holes.
use std::fs::{File, OpenOptions};
use std::os::unix::fs::FileExt;
use std::os::unix::io::AsRawFd;
use std::path::Path;

use crate::{EmuError, LBA_BYTES};

/// Zeros are written in pieces of this size when the file system cannot punch holes.
const ZERO_PIECE_BYTES: u64 = 1 << 20;

#[derive(Debug)]
pub(crate) struct FileStore {
    file: File,
    logical_blocks: u64,
}

impl FileStore {
    pub(crate) fn create(path: &Path, logical_blocks: u64) -> Result<FileStore, EmuError> {
        let file =
            OpenOptions::new().read(true).write(true).create(true).truncate(true).open(path)?;
        // A sparse file of the logical size: unwritten ranges read as zeros and cost no disk.
        file.set_len(logical_blocks * LBA_BYTES)?;
        Ok(FileStore { file, logical_blocks })
    }

    pub(crate) fn write(&mut self, lba: u64, data: &[u8]) -> Result<(), EmuError> {
        assert!(lba + data.len() as u64 / LBA_BYTES <= self.logical_blocks);
        self.file.write_all_at(data, lba * LBA_BYTES)?;
        Ok(())
    }

    pub(crate) fn read(&mut self, lba: u64, buf: &mut [u8]) -> Result<(), EmuError> {
        assert!(lba + buf.len() as u64 / LBA_BYTES <= self.logical_blocks);
        self.file.read_exact_at(buf, lba * LBA_BYTES)?;
        Ok(())
    }

    pub(crate) fn zero(&mut self, lba: u64, blocks: u64) -> Result<(), EmuError> {
        assert!(lba + blocks <= self.logical_blocks);
        let offset = lba * LBA_BYTES;
        let len = blocks * LBA_BYTES;
        if len == 0 || self.punch_hole(offset, len) {
            return Ok(());
        }
        let zeros = vec![0u8; ZERO_PIECE_BYTES as usize];
        let mut done = 0u64;
        while done < len {
            let n = ZERO_PIECE_BYTES.min(len - done);
            self.file.write_all_at(&zeros[..n as usize], offset + done)?;
            done += n;
        }
        Ok(())
    }

    /// Deallocates the range so it reads as zeros; false if the file system refuses.
    fn punch_hole(&mut self, offset: u64, len: u64) -> bool {
        let (Ok(off), Ok(length)) = (libc::off_t::try_from(offset), libc::off_t::try_from(len))
        else {
            return false;
        };
        // SAFETY: fallocate takes a file descriptor we own (kept open by `self.file` for the
        // duration of the call) and plain integers; it touches no memory of ours.
        let rc = unsafe {
            libc::fallocate(
                self.file.as_raw_fd(),
                libc::FALLOC_FL_PUNCH_HOLE | libc::FALLOC_FL_KEEP_SIZE,
                off,
                length,
            )
        };
        rc == 0
    }

    pub(crate) fn flush(&mut self) -> Result<(), EmuError> {
        self.file.sync_data()?;
        Ok(())
    }
}
