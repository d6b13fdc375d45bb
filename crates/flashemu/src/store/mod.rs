//! Data stores: where the bytes of written LBAs are kept, indexed by LBA.
//!
//! The FTL moves only metadata (GC relocates mappings, not bytes), so keeping data by LBA is
//! exact: a read returns the bytes last written to that LBA, zeros after TRIM or zone reset.
use crate::config::StoreKind;
use crate::EmuError;

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
