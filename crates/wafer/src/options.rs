//! Database options: a value with named presets, never global state.
use crate::device::FileOptions;

/// How pages reach the device. Only in-place exists yet; the superblock records the mode.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[repr(u8)]
pub enum WriteMode {
    /// Page `pid` overwritten at `data_offset + pid * 4096` (no doublewrite yet).
    #[default]
    InPlace = 0,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Options {
    /// Buffer pool size; 4 KiB frames.
    pub buffer_pool_bytes: u64,
    /// Dirty pages written back per eviction batch (one store call per batch).
    pub eviction_batch_pages: usize,
    /// Size of the data file when `Db::open(path)` creates a database (the page table is sized
    /// for it); an existing larger file keeps its size.
    pub file_capacity_bytes: u64,
    /// How `Db::open(path)` drives its file (buffered, O_DIRECT, io_uring).
    pub file: FileOptions,
    /// Where page 0 starts on the device (room for areas a later write path puts in front).
    pub data_offset_bytes: u64,
    pub write_mode: WriteMode,
}

impl Options {
    /// Sized for benchmarks on these machines: 256 MiB pool, 64-page batches, 4 GiB files.
    pub fn production() -> Options {
        Options {
            buffer_pool_bytes: 256 << 20,
            eviction_batch_pages: 64,
            file_capacity_bytes: 4 << 30,
            file: FileOptions::BUFFERED,
            data_offset_bytes: 0,
            write_mode: WriteMode::InPlace,
        }
    }

    /// Tiny pool (16 frames) and small batches so tests evict and reload constantly.
    pub fn test_min() -> Options {
        Options {
            buffer_pool_bytes: 16 * 4096,
            eviction_batch_pages: 4,
            file_capacity_bytes: 64 << 20,
            file: FileOptions::BUFFERED,
            data_offset_bytes: 0,
            write_mode: WriteMode::InPlace,
        }
    }

    pub fn with_buffer_pool_bytes(mut self, bytes: u64) -> Options {
        self.buffer_pool_bytes = bytes;
        self
    }
}

impl Default for Options {
    fn default() -> Options {
        Options::production()
    }
}
