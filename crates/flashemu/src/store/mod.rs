//! Data stores: where the bytes of written LBAs are kept, indexed by LBA.
//!
//! The FTL moves only metadata (GC relocates mappings, not bytes), so keeping data by LBA is
//! exact: a read returns the bytes last written to that LBA, zeros after TRIM or zone reset.
use crate::config::StoreKind;
use crate::{EmuError, LBA_BYTES};

mod file;
mod memory;

pub(crate) use file::FileStore;
pub(crate) use memory::MemoryStore;

#[derive(Debug)]
pub(crate) enum Store {
    /// Metadata only: writes are dropped, reads return zeros.
    None,
    Memory(MemoryStore),
    File(FileStore),
}

impl Store {
    pub(crate) fn open(kind: &StoreKind, logical_blocks: u64) -> Result<Store, EmuError> {
        Ok(match kind {
            StoreKind::None => Store::None,
            StoreKind::Memory => Store::Memory(MemoryStore::new(logical_blocks)),
            StoreKind::File(path) => Store::File(FileStore::create(path, logical_blocks)?),
        })
    }

    /// Stores `data` (whole 4 KiB blocks) at `lba`, or zeros when `data` is None. Inline: the
    /// metadata-only store makes this a no-op in the batch loop, which should cost nothing.
    #[inline]
    pub(crate) fn write(
        &mut self,
        lba: u64,
        blocks: u64,
        data: Option<&[u8]>,
    ) -> Result<(), EmuError> {
        match self {
            Store::None => Ok(()),
            Store::Memory(memory) => {
                match data {
                    Some(bytes) => memory.write(lba, bytes),
                    None => memory.zero(lba, blocks),
                }
                Ok(())
            }
            Store::File(file) => match data {
                Some(bytes) => file.write(lba, bytes),
                None => file.zero(lba, blocks),
            },
        }
    }

    pub(crate) fn read(&mut self, lba: u64, buf: &mut [u8]) -> Result<(), EmuError> {
        match self {
            Store::None => {
                buf.fill(0);
                Ok(())
            }
            Store::Memory(memory) => {
                memory.read(lba, buf);
                Ok(())
            }
            Store::File(file) => file.read(lba, buf),
        }
    }

    /// Keeps the bytes of a byte-granular write (a compressed write) at device byte address
    /// `byte`: whole blocks go straight in; a partly covered block at either end is read,
    /// merged and written back. A no-op for the metadata-only store.
    pub(crate) fn write_bytes(&mut self, byte: u64, data: &[u8]) -> Result<(), EmuError> {
        if matches!(self, Store::None) || data.is_empty() {
            return Ok(());
        }
        let end = byte + data.len() as u64;
        let whole_start = byte.next_multiple_of(LBA_BYTES);
        let whole_end = (end / LBA_BYTES) * LBA_BYTES;
        if whole_start >= whole_end {
            // Inside one block, or across one boundary with no whole block between.
            return self.merge_blocks(byte, data);
        }
        let head = (whole_start - byte) as usize;
        let body = (whole_end - whole_start) as usize;
        self.merge_blocks(byte, &data[..head])?;
        let blocks = body as u64 / LBA_BYTES;
        self.write(whole_start / LBA_BYTES, blocks, Some(&data[head..head + body]))?;
        self.merge_blocks(whole_end, &data[head + body..])
    }

    /// Read-modify-write of the (at most two) blocks `data` partly covers from `byte`.
    fn merge_blocks(&mut self, byte: u64, data: &[u8]) -> Result<(), EmuError> {
        if data.is_empty() {
            return Ok(());
        }
        let first = byte / LBA_BYTES;
        let blocks = (byte + data.len() as u64).div_ceil(LBA_BYTES) - first;
        assert!(blocks <= 2, "merge is for the partial blocks at a write's ends");
        let mut buf = vec![0u8; (blocks * LBA_BYTES) as usize];
        self.read(first, &mut buf)?;
        let at = (byte - first * LBA_BYTES) as usize;
        buf[at..at + data.len()].copy_from_slice(data);
        self.write(first, blocks, Some(&buf))
    }

    /// Reads `out.len()` bytes from device byte address `byte` (any alignment).
    pub(crate) fn read_bytes(&mut self, byte: u64, out: &mut [u8]) -> Result<(), EmuError> {
        let first = byte / LBA_BYTES;
        let end_block = (byte + out.len() as u64).div_ceil(LBA_BYTES);
        let mut buf = vec![0u8; ((end_block - first) * LBA_BYTES) as usize];
        self.read(first, &mut buf)?;
        let at = (byte - first * LBA_BYTES) as usize;
        out.copy_from_slice(&buf[at..at + out.len()]);
        Ok(())
    }

    pub(crate) fn keeps_data(&self) -> bool {
        !matches!(self, Store::None)
    }

    /// Makes `blocks` LBAs at `lba` read as zeros (TRIM, zone reset).
    pub(crate) fn zero(&mut self, lba: u64, blocks: u64) -> Result<(), EmuError> {
        self.write(lba, blocks, None)
    }

    pub(crate) fn flush(&mut self) -> Result<(), EmuError> {
        match self {
            Store::None | Store::Memory(_) => Ok(()),
            Store::File(file) => file.flush(),
        }
    }
}
