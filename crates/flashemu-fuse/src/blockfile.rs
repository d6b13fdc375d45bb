//! The emulator as a byte-addressed file of fixed size: reads and writes at any offset become
//! whole 4 KiB LBA commands (a partial block is read, patched and written back, as a drive
//! with 4 KiB sectors does for a 512-byte write), hole punches become TRIM of the whole blocks
//! they cover (the partial edges are zeroed by a read-modify-write).

use std::sync::{Mutex, MutexGuard};

use flashemu::{Counters, EmuError, Placement, Ssd, LBA_BYTES};

/// Largest single command: bounds the buffer one FUSE request can make us allocate (the kernel
/// sends at most 1 MiB per request; a direct caller is cut into pieces of this size).
const COMMAND_BYTES_MAX: u64 = 4 << 20;

#[derive(Debug, thiserror::Error)]
pub enum BlockFileError {
    #[error("bytes {offset}..{end} are past the end of the {size_bytes}-byte device")]
    PastEnd { offset: u64, end: u64, size_bytes: u64 },
    #[error(transparent)]
    Emu(#[from] EmuError),
    #[error("the emulator's lock is poisoned (a command panicked); the device is unusable")]
    Poisoned,
}

impl BlockFileError {
    /// The errno a file operation reports for this error.
    pub fn errno(&self) -> i32 {
        match self {
            BlockFileError::PastEnd { .. } => libc::ENOSPC,
            BlockFileError::Emu(EmuError::NoSpace) => libc::ENOSPC,
            BlockFileError::Emu(_) | BlockFileError::Poisoned => libc::EIO,
        }
    }
}

/// One emulated SSD behind a lock, addressed in bytes.
#[derive(Debug)]
pub struct BlockFile {
    ssd: Mutex<Ssd>,
    size_bytes: u64,
}

/// The LBAs a byte range touches.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Span {
    first_lba: u64,
    blocks: u64,
    /// Bytes of the first block before the range.
    head_bytes: u64,
}

impl Span {
    fn of(offset: u64, len: u64) -> Span {
        debug_assert!(len > 0);
        let first_lba = offset / LBA_BYTES;
        let end_lba = (offset + len).div_ceil(LBA_BYTES);
        Span { first_lba, blocks: end_lba - first_lba, head_bytes: offset % LBA_BYTES }
    }

    fn bytes(&self) -> usize {
        (self.blocks * LBA_BYTES) as usize
    }
}

impl BlockFile {
    pub fn new(ssd: Ssd) -> BlockFile {
        let size_bytes = ssd.logical_blocks() * LBA_BYTES;
        BlockFile { ssd: Mutex::new(ssd), size_bytes }
    }

    /// The device's logical capacity: the file's size.
    pub fn size_bytes(&self) -> u64 {
        self.size_bytes
    }

    fn lock(&self) -> Result<MutexGuard<'_, Ssd>, BlockFileError> {
        self.ssd.lock().map_err(|_| BlockFileError::Poisoned)
    }

    /// Runs `f` on the device under the lock (counters, timing reports, configuration).
    pub fn with_ssd<T>(&self, f: impl FnOnce(&mut Ssd) -> T) -> Result<T, BlockFileError> {
        Ok(f(&mut *self.lock()?))
    }

    pub fn counters(&self) -> Result<Counters, BlockFileError> {
        Ok(self.lock()?.counters())
    }

    fn check(&self, offset: u64, len: u64) -> Result<(), BlockFileError> {
        match offset.checked_add(len) {
            Some(end) if end <= self.size_bytes => Ok(()),
            end => Err(BlockFileError::PastEnd {
                offset,
                end: end.unwrap_or(u64::MAX),
                size_bytes: self.size_bytes,
            }),
        }
    }

    /// Reads up to `len` bytes at `offset`; fewer (down to none) at the end of the device, as
    /// a file read does.
    pub fn read(&self, offset: u64, len: u64) -> Result<Vec<u8>, BlockFileError> {
        let len = len.min(self.size_bytes.saturating_sub(offset));
        let mut out = Vec::with_capacity(len as usize);
        let mut done = 0;
        while done < len {
            let piece = (len - done).min(COMMAND_BYTES_MAX);
            let span = Span::of(offset + done, piece);
            let mut buf = vec![0u8; span.bytes()];
            self.lock()?.read(span.first_lba, &mut buf)?;
            let start = span.head_bytes as usize;
            out.extend_from_slice(&buf[start..start + piece as usize]);
            done += piece;
        }
        Ok(out)
    }

    /// Writes all of `data` at `offset`; a write past the end is refused whole (a block device
    /// does not grow).
    pub fn write(&self, offset: u64, data: &[u8]) -> Result<(), BlockFileError> {
        self.check(offset, data.len() as u64)?;
        let mut done = 0usize;
        while done < data.len() {
            let piece = (data.len() - done).min(COMMAND_BYTES_MAX as usize);
            self.write_piece(offset + done as u64, &data[done..done + piece])?;
            done += piece;
        }
        Ok(())
    }

    /// One command: the blocks the piece touches, partial ones read first under the same lock
    /// (so a concurrent writer of the other half of a block cannot be lost).
    fn write_piece(&self, offset: u64, data: &[u8]) -> Result<(), BlockFileError> {
        let span = Span::of(offset, data.len() as u64);
        let mut ssd = self.lock()?;
        let start = span.head_bytes as usize;
        let aligned = start == 0 && data.len() == span.bytes();
        if aligned {
            ssd.write(span.first_lba, span.blocks as u32, Some(data), Placement::None)?;
            return Ok(());
        }
        let mut buf = vec![0u8; span.bytes()];
        let last = span.first_lba + span.blocks - 1;
        let block = LBA_BYTES as usize;
        if start != 0 {
            ssd.read(span.first_lba, &mut buf[..block])?;
        }
        let tail_partial = !(offset + data.len() as u64).is_multiple_of(LBA_BYTES);
        if tail_partial && (last != span.first_lba || start == 0) {
            let at = buf.len() - block;
            ssd.read(last, &mut buf[at..])?;
        }
        buf[start..start + data.len()].copy_from_slice(data);
        ssd.write(span.first_lba, span.blocks as u32, Some(&buf), Placement::None)?;
        Ok(())
    }

    /// Deallocates the range (hole punch, discard, zero range): whole blocks are trimmed, so
    /// the flash sees them invalid; partial blocks at the edges are zeroed in place.
    pub fn discard(&self, offset: u64, len: u64) -> Result<(), BlockFileError> {
        if len == 0 {
            return Ok(());
        }
        self.check(offset, len)?;
        let end = offset + len;
        let first_whole = offset.div_ceil(LBA_BYTES);
        let end_whole = end / LBA_BYTES;
        if first_whole >= end_whole {
            // Within one block, or across one boundary with no whole block: zero the bytes.
            return self.write(offset, &vec![0u8; len as usize]);
        }
        if offset < first_whole * LBA_BYTES {
            let head = first_whole * LBA_BYTES - offset;
            self.write(offset, &vec![0u8; head as usize])?;
        }
        if end > end_whole * LBA_BYTES {
            let tail = end - end_whole * LBA_BYTES;
            self.write(end_whole * LBA_BYTES, &vec![0u8; tail as usize])?;
        }
        self.lock()?.trim(first_whole, end_whole - first_whole)?;
        Ok(())
    }

    /// Makes what was written durable in the emulator's store (fsync of a file store).
    pub fn flush(&self) -> Result<(), BlockFileError> {
        self.lock()?.flush()?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn device() -> BlockFile {
        let ssd = Ssd::new(flashemu::Config::preset("tiny").expect("preset")).expect("ssd");
        BlockFile::new(ssd)
    }

    #[test]
    fn unaligned_writes_patch_whole_blocks_and_read_back() {
        let dev = device();
        let data: Vec<u8> = (0..10_000u32).map(|i| (i % 251) as u8 + 1).collect();
        dev.write(1000, &data).expect("write");
        assert_eq!(dev.read(1000, 10_000).expect("read"), data);
        // Bytes 0..1000 and the rest of the last block were zero and stay zero.
        assert_eq!(dev.read(0, 1000).expect("read"), vec![0u8; 1000]);
        assert_eq!(dev.read(11_000, 1288).expect("read"), vec![0u8; 1288]);
        // Blocks 0..=2 were written whole: 12 KiB of host writes for 10,000 bytes.
        assert_eq!(dev.counters().expect("counters").host_write_bytes, 3 * LBA_BYTES);
        // A write inside one block keeps the bytes around it.
        dev.write(1500, &[0xAB; 10]).expect("write");
        let back = dev.read(1490, 30).expect("read");
        assert_eq!(&back[..10], &data[490..500]);
        assert_eq!(&back[10..20], &[0xAB; 10]);
        assert_eq!(&back[20..], &data[510..520]);
    }

    #[test]
    fn discard_trims_whole_blocks_and_zeroes_the_edges() {
        let dev = device();
        dev.write(0, &vec![7u8; 5 * LBA_BYTES as usize]).expect("write");
        let before = dev.counters().expect("counters");
        // 100 bytes into block 0 .. 100 bytes into block 4: blocks 1..=3 trimmed.
        dev.discard(100, 4 * LBA_BYTES).expect("discard");
        let after = dev.counters().expect("counters").since(&before);
        assert_eq!(after.host_trim_bytes, 3 * LBA_BYTES);
        assert_eq!(after.host_write_bytes, 2 * LBA_BYTES, "the two partial edge blocks");
        let back = dev.read(0, 5 * LBA_BYTES).expect("read");
        assert!(back[..100].iter().all(|&b| b == 7));
        assert!(back[100..(4 * LBA_BYTES + 100) as usize].iter().all(|&b| b == 0));
        assert!(back[(4 * LBA_BYTES + 100) as usize..].iter().all(|&b| b == 7));
    }

    #[test]
    fn the_end_of_the_device_is_a_short_read_and_a_refused_write() {
        let dev = device();
        let size = dev.size_bytes();
        assert_eq!(dev.read(size - 10, 100).expect("read").len(), 10);
        assert!(dev.read(size + 5, 100).expect("read").is_empty());
        let err = dev.write(size - 10, &[1u8; 100]).unwrap_err();
        assert_eq!(err.errno(), libc::ENOSPC, "{err}");
        assert!(dev.discard(size, 1).is_err());
        assert_eq!(dev.counters().expect("counters").host_write_bytes, 0);
    }

    #[test]
    fn large_requests_are_cut_into_bounded_commands() {
        let dev = device();
        let len = (COMMAND_BYTES_MAX + 3 * LBA_BYTES) as usize;
        let data: Vec<u8> = (0..len).map(|i| (i / 4096) as u8).collect();
        dev.write(0, &data).expect("write");
        assert_eq!(dev.read(0, len as u64).expect("read"), data);
    }
}
