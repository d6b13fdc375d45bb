//! The write-path seam: the buffer pool does all page I/O through [`PageStore`]. One store now
//! (in place, plain); durability adds a doublewrite store, out-of-place a zoned store with a
//! page-id-to-offset map. A whole eviction batch arrives in one call so a store can compress,
//! group and append it at once.
use crate::device::{Device, WriteOp, WritePurpose, BLOCK_BYTES};
use crate::page::{PageBuf, PageId, PAGE_SIZE};
use crate::Result;
use std::sync::Arc;

pub trait PageStore: Send + Sync + std::fmt::Debug {
    /// Page ids valid in this store are `0..page_capacity()`.
    fn page_capacity(&self) -> u64;
    /// Reads page `pid` as stored (unchecked; the pool verifies it).
    fn read_page(&self, pid: PageId, buf: &mut PageBuf) -> Result<()>;
    /// Writes sealed page images; not durable until [`PageStore::sync`].
    fn write_batch(&self, pages: &[(PageId, &PageBuf)], purpose: WritePurpose) -> Result<()>;
    fn sync(&self) -> Result<()>;
    /// Persists the store's own metadata (the out-of-place page map). A checkpoint calls it
    /// after every dirty page is written and synced, before the superblock.
    fn checkpoint(&self) -> Result<()> {
        Ok(())
    }
    /// Out of place: runs DB GC now, until the free-zone target is met or, with `every_zone`,
    /// on every zone holding an invalid slot; returns the cycles run. In place: nothing to do.
    fn collect_garbage(&self, _every_zone: bool) -> Result<u32> {
        Ok(0)
    }
    /// Zones, map and GC figures of the out-of-place store; None for in-place stores.
    fn out_of_place_stats(&self) -> Option<crate::oop::OutOfPlaceStats> {
        None
    }
    /// Called once at open, before anything is read: repairs what a crash left half written
    /// (the doublewrite store restores torn pages). Nothing to do by default.
    fn recover(&self) -> Result<StoreRecovery> {
        Ok(StoreRecovery::default())
    }
}

/// What [`PageStore::recover`] did.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct StoreRecovery {
    /// Valid page copies found in the doublewrite area.
    pub doublewrite_copies: u64,
    /// Pages rewritten in place from their doublewrite copy (they differed).
    pub pages_restored: u64,
    /// Of those, pages whose in-place bytes failed their checksum (torn writes repaired).
    pub torn_pages_repaired: u64,
}

/// Page `pid` at `data_offset_bytes + pid * PAGE_SIZE`, overwritten in place, no doublewrite.
#[derive(Debug)]
pub struct InPlaceStore {
    device: Arc<dyn Device>,
    data_offset_bytes: u64,
    page_capacity: u64,
}

const _: () = assert!(PAGE_SIZE as u64 == BLOCK_BYTES);

impl InPlaceStore {
    pub fn new(device: Arc<dyn Device>, data_offset_bytes: u64) -> InPlaceStore {
        assert!(data_offset_bytes.is_multiple_of(BLOCK_BYTES));
        let data_bytes = device.capacity_bytes().saturating_sub(data_offset_bytes);
        let page_capacity = data_bytes / PAGE_SIZE as u64;
        InPlaceStore { device, data_offset_bytes, page_capacity }
    }
    fn offset(&self, pid: PageId) -> u64 {
        assert!(pid < self.page_capacity, "page {pid} beyond capacity {}", self.page_capacity);
        self.data_offset_bytes + pid * PAGE_SIZE as u64
    }
}

impl PageStore for InPlaceStore {
    fn page_capacity(&self) -> u64 {
        self.page_capacity
    }
    fn read_page(&self, pid: PageId, buf: &mut PageBuf) -> Result<()> {
        Ok(self.device.read_at(self.offset(pid), buf)?)
    }
    fn write_batch(&self, pages: &[(PageId, &PageBuf)], purpose: WritePurpose) -> Result<()> {
        let ops: Vec<WriteOp<'_>> = pages
            .iter()
            .map(|(pid, data)| WriteOp {
                offset: self.offset(*pid),
                data: &data[..],
                purpose,
                placement: crate::device::Placement::None,
            })
            .collect();
        Ok(self.device.write_batch(&ops)?)
    }
    fn sync(&self) -> Result<()> {
        Ok(self.device.sync()?)
    }
}
