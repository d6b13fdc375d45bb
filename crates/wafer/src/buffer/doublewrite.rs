//! In-place pages behind a doublewrite area, so a torn page write can always be repaired.
//!
//! Layout: the doublewrite (DW) area is the device's first `data_offset_bytes`: one header block
//! then `slots` page slots; page `pid` lives at `data_offset_bytes + pid * 4096`.
//!
//! ```text
//! DW header block (4096 bytes, little-endian)
//!   0  u32  crc32c of bytes 4..4096
//!   4  u64  magic "WAFERDW\0"
//!  12  u32  version (1)
//!  16  u64  batch sequence (increments per DW batch; informational)
//!  24  u32  count of pages in this batch
//!  28  u32  reserved (0)
//!  32  count x [pid u64][crc32c of the slot's 4096 bytes u32]   (entry i describes slot i)
//! ```
//!
//! `write_batch`: (1) header + page copies into the DW area, sync; (2) the pages in place, sync.
//! The second sync comes before the DW area is reused by the next batch, so at any moment the
//! DW area holds a complete, synced copy of every in-place write that might be torn. Batches are
//! serialised (one DW area). `recover` rewrites in place every page whose valid DW copy differs
//! from what is in place: the latest DW batch holds the newest version of each of its pages
//! (any later write of the page would have gone through a later DW batch), so this never goes
//! back in time. A slot whose crc does not match its entry was torn while the DW area itself was
//! written: the in-place writes had not started, so it is skipped.
use crate::device::{Device, Placement, WriteOp, WritePurpose, BLOCK_BYTES};
use crate::page::{self, get_u32, get_u64, put_u32, put_u64, PageBuf, PageId, PAGE_SIZE};
use crate::pagestore::{InPlaceStore, LogicalBytes, PageStore, StoreRecovery};
use crate::{Corruption, Result};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

/// Also read by the open path (db/open.rs) to tell a torn superblock from a foreign file.
pub(crate) const MAGIC: u64 = u64::from_le_bytes(*b"WAFERDW\0");
const VERSION: u32 = 1;
const OFF_MAGIC: usize = 4;
const OFF_VERSION: usize = 12;
const OFF_SEQ: usize = 16;
const OFF_COUNT: usize = 24;
const OFF_ENTRIES: usize = 32;
const ENTRY_BYTES: usize = 12;
/// Most slots one header block can describe.
pub const MAX_SLOTS: u64 = ((PAGE_SIZE - OFF_ENTRIES) / ENTRY_BYTES) as u64;

#[derive(Debug)]
pub struct DoublewriteStore {
    device: Arc<dyn Device>,
    /// The pages' home locations after the DW area: reads, in-place writes, counting.
    home: InPlaceStore,
    slots: u64,
    /// One DW area: batches go through it one at a time. Holds the batch sequence.
    serial: Mutex<u64>,
    /// Pages copied through the DW area (for tests and stats).
    pages_doublewritten: AtomicU64,
}

impl DoublewriteStore {
    /// The DW area is `[0, data_offset_bytes)`: one header block and the rest slots.
    pub fn new(device: Arc<dyn Device>, data_offset_bytes: u64) -> Result<DoublewriteStore> {
        if !data_offset_bytes.is_multiple_of(BLOCK_BYTES) || data_offset_bytes < 2 * BLOCK_BYTES {
            return Err(crate::OptionsError::DoublewriteOffset { data_offset_bytes }.into());
        }
        let slots = (data_offset_bytes / BLOCK_BYTES - 1).min(MAX_SLOTS);
        // The header lists every slot's page: it must fit one block.
        assert!(slots >= 1 && OFF_ENTRIES + slots as usize * ENTRY_BYTES <= PAGE_SIZE);
        Ok(DoublewriteStore {
            home: InPlaceStore::new(device.clone(), data_offset_bytes),
            device,
            slots,
            serial: Mutex::new(0),
            pages_doublewritten: AtomicU64::new(0),
        })
    }

    pub fn pages_doublewritten(&self) -> u64 {
        // As `new` sized it: the header lists every slot's page in one block.
        debug_assert!((1..=MAX_SLOTS).contains(&self.slots), "{} slots", self.slots);
        self.pages_doublewritten.load(Ordering::Relaxed)
    }

    fn write_chunk(
        &self,
        seq: u64,
        pages: &[(PageId, &PageBuf)],
        purpose: WritePurpose,
    ) -> Result<()> {
        assert!(!pages.is_empty() && pages.len() as u64 <= self.slots);
        let mut header = vec![0u8; PAGE_SIZE];
        put_u64(&mut header, OFF_MAGIC, MAGIC);
        put_u32(&mut header, OFF_VERSION, VERSION);
        put_u64(&mut header, OFF_SEQ, seq);
        put_u32(&mut header, OFF_COUNT, pages.len() as u32);
        for (i, (pid, data)) in pages.iter().enumerate() {
            let at = OFF_ENTRIES + i * ENTRY_BYTES;
            put_u64(&mut header, at, *pid);
            put_u32(&mut header, at + 8, crc32c::crc32c(&data[..]));
        }
        let crc = crc32c::crc32c(&header[4..]);
        put_u32(&mut header, 0, crc);
        fn op(offset: u64, data: &[u8], purpose: WritePurpose) -> WriteOp<'_> {
            WriteOp { offset, data, purpose, placement: Placement::None }
        }
        let mut ops = Vec::with_capacity(pages.len() + 1);
        ops.push(op(0, &header, WritePurpose::Doublewrite));
        for (i, (_, data)) in pages.iter().enumerate() {
            ops.push(op((1 + i as u64) * BLOCK_BYTES, &data[..], WritePurpose::Doublewrite));
        }
        self.device.write_batch(&ops)?;
        self.device.sync()?;
        self.home.write_home(pages, purpose)?;
        // Before the DW area may be overwritten by the next batch.
        self.device.sync()?;
        self.pages_doublewritten.fetch_add(pages.len() as u64, Ordering::Relaxed);
        Ok(())
    }
}

impl PageStore for DoublewriteStore {
    fn page_capacity(&self) -> u64 {
        // Batches go through the DW area in chunks of `slots`: at least one per chunk.
        debug_assert!((1..=MAX_SLOTS).contains(&self.slots), "{} slots", self.slots);
        self.home.page_capacity()
    }
    fn grow_to(&self, pages: u64) -> Result<u64> {
        let grown = self.home.grow_to(pages)?;
        // Paired with `BufferPool::grow_to`, which sizes the page table by what this returns.
        debug_assert!(grown >= pages, "grew to {grown} of {pages} pages");
        Ok(grown)
    }
    fn read_page(&self, pid: PageId, buf: &mut PageBuf) -> Result<()> {
        // The pool reads only ids its table covers, and the table never outgrows the store.
        debug_assert!(pid < self.page_capacity(), "page {pid} past the device");
        self.home.read_page(pid, buf)
    }
    fn write_batch(&self, pages: &[(PageId, &PageBuf)], purpose: WritePurpose) -> Result<()> {
        // Counted once for the whole batch, as the in-place store counts it.
        self.home.count_logical(purpose, pages.len());
        let capacity = self.page_capacity();
        debug_assert!(pages.iter().all(|(pid, _)| *pid < capacity), "a page past the device");
        let mut seq = self.serial.lock().unwrap_or_else(|e| e.into_inner());
        for chunk in pages.chunks(self.slots as usize) {
            *seq += 1;
            self.write_chunk(*seq, chunk, purpose)?;
        }
        Ok(())
    }
    fn sync(&self) -> Result<()> {
        // Every batch syncs before it lets `serial` go; at least one slot made each progress.
        debug_assert!((1..=MAX_SLOTS).contains(&self.slots), "{} slots", self.slots);
        Ok(self.device.sync()?)
    }
    /// Straight home, no doublewrite: a torn blob page is never named by a commit.
    fn write_blobs(&self, pages: &[(PageId, &PageBuf)]) -> Result<()> {
        let capacity = self.page_capacity();
        debug_assert!(pages.iter().all(|(pid, _)| *pid < capacity), "a page past the device");
        self.home.count_logical(WritePurpose::Blob, pages.len());
        self.home.write_home(pages, WritePurpose::Blob)?;
        Ok(self.device.sync()?)
    }
    fn logical_bytes(&self) -> LogicalBytes {
        // Counted by the home store alone (`write_batch`), once per page, whatever the slots.
        debug_assert!((1..=MAX_SLOTS).contains(&self.slots), "{} slots", self.slots);
        self.home.logical_bytes()
    }

    fn recover(&self) -> Result<StoreRecovery> {
        let _serial = self.serial.lock().unwrap_or_else(|e| e.into_inner());
        let mut report = StoreRecovery::default();
        let mut header = vec![0u8; PAGE_SIZE];
        self.device.read_at(0, &mut header)?;
        // A header that is empty, torn or foreign means no DW batch reached its sync: the
        // in-place writes of that batch never started.
        let valid = get_u32(&header, 0) == crc32c::crc32c(&header[4..])
            && get_u64(&header, OFF_MAGIC) == MAGIC
            && get_u32(&header, OFF_VERSION) == VERSION;
        if !valid {
            return Ok(report);
        }
        let count = get_u32(&header, OFF_COUNT) as u64;
        if count > self.slots {
            return Err(Corruption::DoublewriteHeader { count, slots: self.slots }.into());
        }
        let mut copy = Box::new([0u8; PAGE_SIZE]);
        let mut in_place = Box::new([0u8; PAGE_SIZE]);
        for i in 0..count as usize {
            let at = OFF_ENTRIES + i * ENTRY_BYTES;
            let pid = get_u64(&header, at);
            let crc = get_u32(&header, at + 8);
            if pid >= self.home.page_capacity() {
                let pages = self.home.page_capacity();
                return Err(
                    Corruption::DoublewriteSlot { slot: i as u64, page_id: pid, pages }.into()
                );
            }
            self.device.read_at((1 + i as u64) * BLOCK_BYTES, &mut copy[..])?;
            if crc32c::crc32c(&copy[..]) != crc {
                continue; // Torn while the DW area was written; in place is untouched.
            }
            report.doublewrite_copies += 1;
            self.device.read_at(self.home.offset(pid), &mut in_place[..])?;
            if in_place[..] == copy[..] {
                continue;
            }
            if get_u32(&in_place[..], 0) != page::compute_checksum(&in_place) {
                report.torn_pages_repaired += 1;
            }
            self.device.write_at(self.home.offset(pid), &copy[..], WritePurpose::Doublewrite)?;
            report.pages_restored += 1;
        }
        if report.pages_restored > 0 {
            self.device.sync()?;
        }
        // Only a copy whose checksum held is restored.
        debug_assert!(report.pages_restored <= report.doublewrite_copies);
        Ok(report)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::device::FaultDevice;
    use crate::page::PageKind;

    fn page(pid: PageId, fill: u64) -> Box<PageBuf> {
        let mut p = Box::new([0u8; PAGE_SIZE]);
        page::format(&mut p, pid, PageKind::Free, 0, fill);
        // Differ in every sector, so a tear shows as a checksum failure.
        p[512..].fill(fill as u8);
        page::seal(&mut p);
        p
    }

    #[test]
    fn torn_in_place_writes_are_repaired_from_the_doublewrite_area() {
        let mut repaired_any = false;
        // Crash at every I/O of the second batch (header+4 copies, sync, 4 in place, sync).
        for crash_at in 0..12u64 {
            for seed in 0..8u64 {
                let dev = Arc::new(FaultDevice::new(64 * BLOCK_BYTES));
                let store = DoublewriteStore::new(dev.clone(), 8 * BLOCK_BYTES).unwrap();
                let old: Vec<_> = (0..4).map(|pid| page(pid, 1)).collect();
                let new: Vec<_> = (0..4).map(|pid| page(pid, 2)).collect();
                let refs: Vec<_> = old.iter().enumerate().map(|(i, p)| (i as u64, &**p)).collect();
                store.write_batch(&refs, WritePurpose::UserEviction).unwrap();
                dev.crash_at_io(dev.io_count() + crash_at);
                let refs: Vec<_> = new.iter().enumerate().map(|(i, p)| (i as u64, &**p)).collect();
                let done = store.write_batch(&refs, WritePurpose::UserEviction).is_ok();
                let after = Arc::new(dev.power_cut(seed));
                let store = DoublewriteStore::new(after.clone(), 8 * BLOCK_BYTES).unwrap();
                let report = store.recover().unwrap();
                repaired_any |= report.torn_pages_repaired > 0;
                for pid in 0..4u64 {
                    let mut buf = Box::new([0u8; PAGE_SIZE]);
                    store.read_page(pid, &mut buf).unwrap();
                    let ok = buf[..] == old[pid as usize][..] || buf[..] == new[pid as usize][..];
                    assert!(ok, "crash_at {crash_at} seed {seed}: page {pid} is neither version");
                    if done {
                        assert_eq!(buf[..], new[pid as usize][..], "completed batch lost");
                    }
                }
            }
        }
        assert!(repaired_any, "no crash point tore an in-place page: the test proves nothing");
    }
}
