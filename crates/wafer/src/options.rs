//! Database options: a value with named presets, never global state.
use crate::device::FileOptions;
use crate::oop::OutOfPlaceOptions;

/// How pages reach the device. Chosen at creation; the superblock records it and an open in the
/// other mode is refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[repr(u8)]
pub enum WriteMode {
    /// Page `pid` overwritten at `data_offset + pid * 4096` (no doublewrite yet).
    #[default]
    InPlace = 0,
    /// Write-back batches appended to zones, a page-id-to-offset map, DB GC (000 sec. 2, 4, 6).
    OutOfPlace = 1,
}

impl WriteMode {
    pub fn from_u8(b: u8) -> Option<WriteMode> {
        match b {
            0 => Some(WriteMode::InPlace),
            1 => Some(WriteMode::OutOfPlace),
            _ => None,
        }
    }
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
    /// Zones and GC of the out-of-place mode (ignored in place).
    pub out_of_place: OutOfPlaceOptions,
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
            out_of_place: OutOfPlaceOptions::production(),
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
            out_of_place: OutOfPlaceOptions::test_min(),
        }
    }

    /// The same options in the out-of-place write mode.
    pub fn out_of_place(mut self) -> Options {
        self.write_mode = WriteMode::OutOfPlace;
        self
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
