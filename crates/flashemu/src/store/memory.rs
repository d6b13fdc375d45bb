//! Sparse in-memory store: devices are GiBs, so chunks are allocated on first write and
//! dropped when wholly zeroed.
use crate::LBA_BYTES;

/// LBAs per chunk: 64 x 4 KiB = 256 KiB, small enough that a sparse fill wastes little,
/// large enough that the chunk table of a 4 GiB device is 16 Ki pointers.
const CHUNK_BLOCKS: u64 = 64;
const CHUNK_BYTES: usize = (CHUNK_BLOCKS * LBA_BYTES) as usize;

#[derive(Debug)]
pub(crate) struct MemoryStore {
    chunks: Vec<Option<Box<[u8]>>>,
    logical_blocks: u64,
}

impl MemoryStore {
    pub(crate) fn new(logical_blocks: u64) -> MemoryStore {
        let chunk_count = logical_blocks.div_ceil(CHUNK_BLOCKS) as usize;
        MemoryStore { chunks: (0..chunk_count).map(|_| None).collect(), logical_blocks }
    }

    pub(crate) fn write(&mut self, lba: u64, data: &[u8]) {
        let blocks = data.len() as u64 / LBA_BYTES;
        assert!(
            (data.len() as u64).is_multiple_of(LBA_BYTES) && lba + blocks <= self.logical_blocks
        );
        let mut done = 0usize;
        while done < data.len() {
            let byte = lba * LBA_BYTES + done as u64;
            let chunk = (byte / CHUNK_BYTES as u64) as usize;
            let within = (byte % CHUNK_BYTES as u64) as usize;
            let n = (CHUNK_BYTES - within).min(data.len() - done);
            let slot =
                self.chunks[chunk].get_or_insert_with(|| vec![0u8; CHUNK_BYTES].into_boxed_slice());
            slot[within..within + n].copy_from_slice(&data[done..done + n]);
            done += n;
        }
    }

    pub(crate) fn zero(&mut self, lba: u64, blocks: u64) {
        assert!(lba + blocks <= self.logical_blocks);
        let total = (blocks * LBA_BYTES) as usize;
        let mut done = 0usize;
        while done < total {
            let byte = lba * LBA_BYTES + done as u64;
            let chunk = (byte / CHUNK_BYTES as u64) as usize;
            let within = (byte % CHUNK_BYTES as u64) as usize;
            let n = (CHUNK_BYTES - within).min(total - done);
            if n == CHUNK_BYTES {
                // A wholly zeroed chunk is freed: TRIM of a large range gives memory back.
                self.chunks[chunk] = None;
            } else if let Some(slot) = self.chunks[chunk].as_mut() {
                slot[within..within + n].fill(0);
            }
            done += n;
        }
    }

    pub(crate) fn read(&self, lba: u64, buf: &mut [u8]) {
        let blocks = buf.len() as u64 / LBA_BYTES;
        assert!(
            (buf.len() as u64).is_multiple_of(LBA_BYTES) && lba + blocks <= self.logical_blocks
        );
        let mut done = 0usize;
        while done < buf.len() {
            let byte = lba * LBA_BYTES + done as u64;
            let chunk = (byte / CHUNK_BYTES as u64) as usize;
            let within = (byte % CHUNK_BYTES as u64) as usize;
            let n = (CHUNK_BYTES - within).min(buf.len() - done);
            match &self.chunks[chunk] {
                Some(slot) => buf[done..done + n].copy_from_slice(&slot[within..within + n]),
                None => buf[done..done + n].fill(0),
            }
            done += n;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sparse_chunks_are_allocated_lazily_and_freed_by_whole_zeroing() {
        let blocks = 10 * CHUNK_BLOCKS;
        let mut store = MemoryStore::new(blocks);
        assert!(store.chunks.iter().all(Option::is_none));
        // A write straddling a chunk boundary touches exactly two chunks.
        let data = vec![5u8; 2 * LBA_BYTES as usize];
        store.write(CHUNK_BLOCKS - 1, &data);
        assert_eq!(store.chunks.iter().filter(|c| c.is_some()).count(), 2);
        let mut buf = vec![0u8; 3 * LBA_BYTES as usize];
        store.read(CHUNK_BLOCKS - 1, &mut buf);
        assert!(buf[..2 * LBA_BYTES as usize].iter().all(|&b| b == 5));
        assert!(buf[2 * LBA_BYTES as usize..].iter().all(|&b| b == 0));
        // Zeroing a whole chunk frees it; a partial zero keeps the chunk with zeros in it.
        store.zero(CHUNK_BLOCKS, CHUNK_BLOCKS);
        assert!(store.chunks[1].is_none());
        store.zero(CHUNK_BLOCKS - 1, 1);
        assert!(store.chunks[0].is_some());
        store.read(CHUNK_BLOCKS - 1, &mut buf);
        assert!(buf.iter().all(|&b| b == 0));
    }
}
