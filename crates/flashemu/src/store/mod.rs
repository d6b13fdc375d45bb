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

    /// Read-modify-write of the (at most two) blocks `data` partly covers from `byte`, one
    /// block at a time through a stack buffer (the emulator shares the host's heap: a CW's
    /// store work allocates nothing).
    fn merge_blocks(&mut self, byte: u64, data: &[u8]) -> Result<(), EmuError> {
        if data.is_empty() {
            return Ok(());
        }
        let first = byte / LBA_BYTES;
        let blocks = (byte + data.len() as u64).div_ceil(LBA_BYTES) - first;
        assert!(blocks <= 2, "merge is for the partial blocks at a write's ends");
        let mut block = [0u8; LBA_BYTES as usize];
        let mut done = 0usize;
        for lba in first..first + blocks {
            self.read(lba, &mut block)?;
            let at = if lba == first { (byte - first * LBA_BYTES) as usize } else { 0 };
            let take = (block.len() - at).min(data.len() - done);
            block[at..at + take].copy_from_slice(&data[done..done + take]);
            self.write(lba, 1, Some(&block))?;
            done += take;
        }
        debug_assert_eq!(done, data.len());
        Ok(())
    }

    /// Reads `out.len()` bytes from device byte address `byte` (any alignment): whole blocks
    /// straight into `out`, a partly wanted block at either end through a stack buffer.
    pub(crate) fn read_bytes(&mut self, byte: u64, out: &mut [u8]) -> Result<(), EmuError> {
        let end = byte + out.len() as u64;
        let mut block = [0u8; LBA_BYTES as usize];
        let mut at = byte;
        // Bound: each step reads one block or a run of whole ones.
        while at < end {
            let lba = at / LBA_BYTES;
            let within = (at % LBA_BYTES) as usize;
            let filled = (at - byte) as usize;
            let whole = ((end - at) / LBA_BYTES) as usize * LBA_BYTES as usize;
            if within == 0 && whole > 0 {
                self.read(lba, &mut out[filled..filled + whole])?;
                at += whole as u64;
                continue;
            }
            self.read(lba, &mut block)?;
            let take = (block.len() - within).min((end - at) as usize);
            out[filled..filled + take].copy_from_slice(&block[within..within + take]);
            at += take as u64;
        }
        debug_assert_eq!(at, end);
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rng::SplitMix64;

    /// Byte-granular writes and reads at any alignment and length agree with a flat model.
    #[test]
    fn byte_writes_and_reads_match_a_flat_model() {
        const BLOCKS: u64 = 16;
        let mut store = Store::Memory(MemoryStore::new(BLOCKS));
        let mut model = vec![0u8; (BLOCKS * LBA_BYTES) as usize];
        let mut rng = SplitMix64::new(17);
        for round in 0..2000u64 {
            let at = rng.below(model.len() as u64 - 1);
            let len = 1 + rng.below((model.len() as u64 - at).min(3 * LBA_BYTES));
            let (at, len) = (at as usize, len as usize);
            if round % 2 == 0 {
                let data: Vec<u8> = (0..len).map(|i| (round as usize + i) as u8).collect();
                store.write_bytes(at as u64, &data).unwrap();
                model[at..at + len].copy_from_slice(&data);
            } else {
                let mut out = vec![0xAA; len];
                store.read_bytes(at as u64, &mut out).unwrap();
                assert_eq!(out, model[at..at + len], "read of {len} at {at}");
            }
        }
    }
}
