//! The write-path seam, below both the buffer pool and the stores: the pool does all page I/O
//! through [`PageStore`], and DB GC sees the pool only through [`GcPageCache`]. Stores: in place
//! ([`InPlaceStore`]), in place through a doublewrite area (`buffer::DoublewriteStore`), out of
//! place (`oop::OutOfPlaceStore`: zones, a page map, DB GC). A whole eviction batch arrives in
//! one call so a store can compress, group and append it at once. This module names no store's
//! internals: the buffer pool depends on it, never on `oop`.
use crate::device::{Device, WriteOp, WritePurpose, BLOCK_BYTES};
use crate::page::{PageBuf, PageId, PAGE_SIZE};
use crate::space::SpaceCounters;
use crate::Result;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Weak};

pub trait PageStore: Send + Sync + std::fmt::Debug {
    /// Page ids valid in this store are `0..page_capacity()`.
    fn page_capacity(&self) -> u64;
    /// Extends the page ids to `0..pages` (durably: a reopen finds them) and returns the new
    /// page capacity. A store or device that cannot grow refuses with
    /// [`Error::OutOfSpace`](crate::Error::OutOfSpace), changing nothing.
    fn grow_to(&self, pages: u64) -> Result<u64> {
        let held_pages = self.page_capacity();
        Err(crate::OutOfSpaceError::FixedSize { needed_pages: pages, held_pages }.into())
    }
    /// Out of place with a file that grows: the device size its layout was made for, which
    /// the superblock records (`Meta::layout_bytes`); 0 otherwise.
    fn layout_bytes(&self) -> u64 {
        0
    }
    /// The most page ids [`PageStore::grow_to`] can reach (its own bound; the device may stop
    /// it sooner). A store that does not grow: its page capacity.
    fn page_capacity_max(&self) -> u64 {
        self.page_capacity()
    }
    /// Reads page `pid` as stored (unchecked; the pool verifies it).
    fn read_page(&self, pid: PageId, buf: &mut PageBuf) -> Result<()>;
    /// Reads page `pid` as [`PageStore::read_page`] does, for a page the buffer pool does not
    /// hold (a blob page): a store may keep its stored bytes in a cache of at most
    /// `cache_bytes_max` bytes. Returns true when the cache answered (no device read).
    fn read_page_cached(
        &self,
        pid: PageId,
        buf: &mut PageBuf,
        cache_bytes_max: u64,
    ) -> Result<bool> {
        let _ = cache_bytes_max;
        self.read_page(pid, buf).map(|()| false)
    }
    /// Writes sealed page images; not durable until [`PageStore::sync`].
    fn write_batch(&self, pages: &[(PageId, &PageBuf)], purpose: WritePurpose) -> Result<()>;
    /// As [`PageStore::write_batch`], where `survivors[i]` marks page `i` as a DB GC survivor
    /// the pool held for GC ([`GcPageCache::gc_hand_over`]) and writes unchanged: it counts as
    /// a GC copy, not a user write-back. Stores without DB GC never hand pages over.
    fn write_batch_with_survivors(
        &self,
        pages: &[(PageId, &PageBuf)],
        purpose: WritePurpose,
        survivors: &[bool],
    ) -> Result<()> {
        assert_eq!(pages.len(), survivors.len());
        self.write_batch(pages, purpose)
    }
    fn sync(&self) -> Result<()>;
    /// Writes blob pages (`crate::blob`) at their page ids and returns once they, and whatever
    /// the store needs to find them after a crash, are durable. Blob pages bypass the buffer
    /// pool and any doublewrite: no committed state names them before this returns.
    fn write_blobs(&self, pages: &[(PageId, &PageBuf)]) -> Result<()> {
        self.write_batch(pages, WritePurpose::Blob)?;
        self.sync()
    }
    /// Forgets the pages of `runs` that the store holds (out of place: unmapped, so GC no
    /// longer copies them; they read as never written). Only for pages no committed state
    /// names. Nothing to do in place.
    fn discard(&self, _runs: &[std::ops::Range<PageId>]) -> Result<()> {
        Ok(())
    }
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
    fn out_of_place_stats(&self) -> Option<OutOfPlaceStats> {
        None
    }
    /// Out of place: the buffer pool DB GC reads through (set once, right after the pool is
    /// built; a `Weak` because the pool owns the store). In-place stores have no GC.
    fn attach_gc_cache(&self, _cache: Weak<dyn GcPageCache>) {}
    /// Page bytes handed to this store so far, by purpose, before any transformation.
    fn logical_bytes(&self) -> LogicalBytes;
    /// Checks the store's own metadata and returns every inconsistency found (out of place: the
    /// page map, zones and free pages); `Db::check` reports them. Nothing to check by default.
    /// Stops background work (out of place: the GC thread) and waits for what is in flight, so
    /// nothing reaches the device after it returns; foreground calls keep working. Nothing to
    /// do by default.
    fn stop_background(&self) {}
    fn check_space(&self) -> Vec<String> {
        Vec::new()
    }
    /// Called once at open, before anything is read: repairs what a crash left half written
    /// (the doublewrite store restores torn pages). Nothing to do by default.
    fn recover(&self) -> Result<StoreRecovery> {
        Ok(StoreRecovery::default())
    }
}

/// The buffer pool as DB GC's page cache (000 sec. 6.2, "sharing the buffer pool as a cache
/// for GC"): the store sits below the pool, so it sees the pool only through this narrow seam.
/// GC calls it under the store's `writer` mutex, possibly from inside an eviction that holds its
/// victims' latches: an implementation may only `try_` latch frames and must never wait for
/// anything a latch holder may wait for (docs/internals/gc.md).
pub trait GcPageCache: Send + Sync + std::fmt::Debug {
    /// Copies the valid pages `pages` (one GC chunk, in slot order) to the GC zone: each page
    /// comes from its frame when resident, else from the device through `io.read`; pages read
    /// from the device are kept in clean frames when one is free for the taking. Every copy is
    /// verified, then all go out in one `io.append`.
    fn gc_copy(&self, pages: &[GcPage], io: &mut dyn GcIo) -> Result<GcCopyCounts>;
    /// Hands the valid pages `pages` to the pool as dirty frames, for normal eviction to write
    /// out (the artifact's `gc_in_pool`): a page resident and dirty needs nothing, a resident
    /// clean one becomes dirty, any other is read through `io.read` into a frame and marked
    /// dirty. Never calls `io.append`. Returns, by page, whether the pool holds it now; the
    /// caller copies the others directly. The pool takes at most its own bound of such frames.
    fn gc_hand_over(&self, pages: &[GcPage], io: &mut dyn GcIo) -> Result<Vec<bool>>;
}

/// A valid page of a GC victim (`index`: its position in the chunk, which [`GcIo::read`] takes
/// back; where it lies on the device is the store's business).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct GcPage {
    pub pid: PageId,
    pub index: usize,
}

/// The store's side of a GC chunk, lent to [`GcPageCache::gc_copy`].
pub trait GcIo {
    /// Reads the valid versions of the chunk's pages `pages` (by [`GcPage::index`]) from the
    /// device, decoded as the pool holds them (one batch): `out[i]` receives `pages[i]`.
    fn read(&mut self, pages: &[GcPage], out: &mut [&mut PageBuf]) -> Result<()>;
    /// Appends the copies (sealed pages, in the chunk's order) and commits their map entries.
    /// `new_versions[i]` (empty: none): copy `i` is the page's dirty in-memory version, counted
    /// as the user write-back it replaces; the other copies count as `GcCopy`. Ok(true): every copy is now
    /// the page's mapped version.
    fn append(&mut self, pages: &[(PageId, &PageBuf)], new_versions: &[bool]) -> Result<bool>;
}

/// Where the pages of one GC chunk came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct GcCopyCounts {
    /// Copied from a clean resident frame: no device read.
    pub from_pool: u64,
    /// Resident and dirty: the in-memory version was written as the GC copy and its frame
    /// marked clean (saves its eviction write).
    pub dirty_from_pool: u64,
    /// Read from the device and left in a pool frame (GC as prefetcher).
    pub loaded: u64,
    /// Read from the device into GC's own buffer only (resident but latched, dirty but not
    /// writable yet, or no clean frame to take).
    pub private_reads: u64,
    /// Of all the copies: blob pages (`crate::blob`), which always come from the device.
    pub blob_pages: u64,
    /// Not copied: handed to the pool as dirty pages, for eviction to write out (`gc_in_pool`;
    /// apart from the sources above, which count copies).
    pub to_pool: u64,
}

impl GcCopyCounts {
    pub fn add(&mut self, o: GcCopyCounts) {
        self.from_pool += o.from_pool;
        self.dirty_from_pool += o.dirty_from_pool;
        self.loaded += o.loaded;
        self.private_reads += o.private_reads;
        self.blob_pages += o.blob_pages;
        self.to_pool += o.to_pool;
    }
}

/// Page bytes handed to a store, by purpose, counted at the store boundary before the store
/// transforms them (compression, packing): the logical side of DB WAF, which device counters
/// cannot give once stored bytes differ from page bytes.
#[derive(Debug, Default)]
pub struct LogicalCounter {
    bytes: [AtomicU64; WritePurpose::COUNT],
}

impl LogicalCounter {
    pub fn add_pages(&self, purpose: WritePurpose, pages: usize) {
        self.bytes[purpose as usize].fetch_add((pages * PAGE_SIZE) as u64, Ordering::Relaxed);
    }
    pub fn snapshot(&self) -> LogicalBytes {
        LogicalBytes { by_purpose: std::array::from_fn(|i| self.bytes[i].load(Ordering::Relaxed)) }
    }
}

/// A reading of a [`LogicalCounter`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, serde::Serialize)]
pub struct LogicalBytes {
    #[serde(serialize_with = "crate::device::serialize_by_purpose")]
    pub by_purpose: [u64; WritePurpose::COUNT],
}

impl LogicalBytes {
    /// User write-back: eviction and checkpoint.
    pub fn user(&self) -> u64 {
        self.by_purpose[WritePurpose::UserEviction as usize]
            + self.by_purpose[WritePurpose::UserCheckpoint as usize]
            + self.by_purpose[WritePurpose::Blob as usize]
    }
}

/// What [`PageStore::recover`] did.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, serde::Serialize)]
pub struct StoreRecovery {
    /// Valid page copies found in the doublewrite area.
    pub doublewrite_copies: u64,
    /// Pages rewritten in place from their doublewrite copy (they differed).
    pub pages_restored: u64,
    /// Of those, pages whose in-place bytes failed their checksum (torn writes repaired).
    pub torn_pages_repaired: u64,
}

/// Page `pid` at `data_offset_bytes + pid * PAGE_SIZE`, overwritten in place, no doublewrite.
/// A device's refusal to grow to `bytes` as the store reports it: a full filesystem or a
/// fixed size is `OutOfSpace` (the write that needed the room fails cleanly); anything else
/// is the device's error.
pub(crate) fn growth_refused(bytes: u64, e: crate::device::DeviceError) -> crate::Error {
    use crate::device::DeviceError;
    match e {
        DeviceError::NoSpace | DeviceError::Unsupported(_) => {
            crate::OutOfSpaceError::FileGrowth { bytes, source: e }.into()
        }
        other => other.into(),
    }
}

#[derive(Debug)]
pub struct InPlaceStore {
    device: Arc<dyn Device>,
    data_offset_bytes: u64,
    /// Grows with the device (`grow_to`), never shrinks.
    page_capacity: AtomicU64,
    logical: LogicalCounter,
}

const _: () = assert!(PAGE_SIZE as u64 == BLOCK_BYTES);

impl InPlaceStore {
    pub fn new(device: Arc<dyn Device>, data_offset_bytes: u64) -> InPlaceStore {
        assert!(data_offset_bytes.is_multiple_of(BLOCK_BYTES));
        let data_bytes = device.capacity_bytes().saturating_sub(data_offset_bytes);
        let page_capacity = data_bytes / PAGE_SIZE as u64;
        InPlaceStore {
            device,
            data_offset_bytes,
            page_capacity: AtomicU64::new(page_capacity),
            logical: LogicalCounter::default(),
        }
    }
    /// Counts `pages` pages handed to the store for `purpose` (the logical side of DB WAF).
    pub(crate) fn count_logical(&self, purpose: WritePurpose, pages: usize) {
        self.logical.add_pages(purpose, pages);
    }

    /// Device byte offset of page `pid`'s home location.
    pub(crate) fn offset(&self, pid: PageId) -> u64 {
        let capacity = self.page_capacity.load(Ordering::Acquire);
        assert!(pid < capacity, "page {pid} beyond capacity {capacity}");
        self.data_offset_bytes + pid * PAGE_SIZE as u64
    }

    /// Writes each page at its home location (one batch, no sync), uncounted: the caller
    /// counts the pages it was handed (the doublewrite store writes its batch in chunks).
    pub(crate) fn write_home(
        &self,
        pages: &[(PageId, &PageBuf)],
        purpose: WritePurpose,
    ) -> Result<()> {
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
}

impl PageStore for InPlaceStore {
    fn page_capacity(&self) -> u64 {
        self.page_capacity.load(Ordering::Acquire)
    }
    fn grow_to(&self, pages: u64) -> Result<u64> {
        let held = self.page_capacity();
        assert!(pages > held, "growing to {pages} pages from {held}");
        let bytes = pages
            .checked_mul(PAGE_SIZE as u64)
            .and_then(|b| b.checked_add(self.data_offset_bytes))
            .ok_or(crate::OutOfSpaceError::FileOverflow { pages })?;
        self.device.grow_to(bytes).map_err(|e| growth_refused(bytes, e))?;
        self.page_capacity.fetch_max(pages, Ordering::AcqRel);
        Ok(self.page_capacity())
    }
    fn read_page(&self, pid: PageId, buf: &mut PageBuf) -> Result<()> {
        Ok(self.device.read_at(self.offset(pid), buf)?)
    }
    fn write_batch(&self, pages: &[(PageId, &PageBuf)], purpose: WritePurpose) -> Result<()> {
        self.count_logical(purpose, pages.len());
        self.write_home(pages, purpose)
    }
    fn sync(&self) -> Result<()> {
        Ok(self.device.sync()?)
    }
    fn logical_bytes(&self) -> LogicalBytes {
        self.logical.snapshot()
    }
}

/// What the out-of-place store reports (`Db::stats().out_of_place`).
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize)]
pub struct OutOfPlaceStats {
    /// Slots issued by purpose, GC victims and their valid slots (DB WAF by slots).
    pub space: SpaceCounters,
    pub zone_count: u32,
    pub slots_per_zone: u32,
    pub zones_empty: u32,
    pub zones_pending_reset: u32,
    pub zones_open: u32,
    /// Zones holding data: neither empty nor waiting for reset.
    pub zones_used: u32,
    pub mapped_pages: u64,
    /// Free pages kept as headers only (no slot).
    pub free_pages: u64,
    pub gc_cycles: u64,
    pub gc_moved_pages: u64,
    /// Of the moved pages: copied from a clean pool frame (no device read).
    pub gc_pool_pages: u64,
    /// Copied from a dirty pool frame, written in its newer version (frame cleaned).
    pub gc_pool_dirty_pages: u64,
    /// Read from the device and loaded into the pool (GC as prefetcher).
    pub gc_loaded_pages: u64,
    /// Read from the device into GC's own buffer only (no clean frame free, resident but
    /// latched, or no pool bound).
    pub gc_private_reads: u64,
    /// Of the moved pages: blob pages (`crate::blob`).
    pub gc_blob_pages: u64,
    /// Survivors handed to the buffer pool as dirty pages instead of moved (`gc_in_pool`);
    /// eviction writes them out.
    pub gc_pool_survivors: u64,
    /// Victims draining through the pool now (`gc_in_pool`).
    pub zones_draining: u32,
    pub zones_reset: u64,
    pub snapshots: u64,
    /// Journal flushes made to release zones (outside checkpoints and snapshots).
    pub journal_flushes: u64,
    pub snapshot_bytes: u64,
    /// LSN of the last map change and of the last durable snapshot.
    pub map_lsn: u64,
    pub durable_lsn: u64,
    /// Data device bytes the store's metadata takes (superblock, snapshot areas, the map
    /// journal when it is on this device), and bytes neither metadata nor zones.
    pub metadata_device_bytes: u64,
    pub unused_device_bytes: u64,
    /// Compression and packing: pages in, bytes stored, CPU time, slack, reads per page read.
    pub codec: crate::oop::codec::CodecStats,
}
