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
        for piece in self.pieces(lba, data.len()) {
            let slot = self.chunks[piece.chunk]
                .get_or_insert_with(|| vec![0u8; CHUNK_BYTES].into_boxed_slice());
            slot[piece.within()].copy_from_slice(&data[piece.done()]);
        }
    }

    pub(crate) fn zero(&mut self, lba: u64, blocks: u64) {
        for piece in self.pieces(lba, (blocks * LBA_BYTES) as usize) {
            if piece.len == CHUNK_BYTES {
                // A wholly zeroed chunk is freed: TRIM of a large range gives memory back.
                self.chunks[piece.chunk] = None;
            } else if let Some(slot) = self.chunks[piece.chunk].as_mut() {
                slot[piece.within()].fill(0);
            }
        }
    }

    pub(crate) fn read(&self, lba: u64, buf: &mut [u8]) {
        for piece in self.pieces(lba, buf.len()) {
            match &self.chunks[piece.chunk] {
                Some(slot) => buf[piece.done()].copy_from_slice(&slot[piece.within()]),
                None => buf[piece.done()].fill(0),
            }
        }
    }

    /// The per-chunk pieces of `len_bytes` (whole blocks, inside the device) from `lba`.
    fn pieces(&self, lba: u64, len_bytes: usize) -> impl Iterator<Item = Piece> {
        let blocks = len_bytes as u64 / LBA_BYTES;
        assert!(
            (len_bytes as u64).is_multiple_of(LBA_BYTES) && lba + blocks <= self.logical_blocks
        );
        let start_byte = lba * LBA_BYTES;
        let mut done = 0usize;
        // Bound: each piece advances `done` by at least one byte up to `len_bytes`.
        std::iter::from_fn(move || {
            if done >= len_bytes {
                return None;
            }
            let byte = start_byte + done as u64;
            let within = (byte % CHUNK_BYTES as u64) as usize;
            let len = (CHUNK_BYTES - within).min(len_bytes - done);
            let piece = Piece { chunk: (byte / CHUNK_BYTES as u64) as usize, within, done, len };
            done += len;
            Some(piece)
        })
    }
}

/// One chunk's share of a range: `len` bytes at `within` in the chunk, `done` bytes into the
/// caller's buffer.
struct Piece {
    chunk: usize,
    within: usize,
    done: usize,
    len: usize,
}

impl Piece {
    fn within(&self) -> std::ops::Range<usize> {
        self.within..self.within + self.len
    }
    fn done(&self) -> std::ops::Range<usize> {
        self.done..self.done + self.len
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
