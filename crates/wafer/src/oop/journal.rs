//! The map journal: every page-map change is logged as a small record in a log of its own (a
//! `wal::Wal` on the tail of the log device when the database has one, else on a slice of the
//! data device), so making map changes durable costs a log flush
//! of a few dozen bytes per page instead of a whole map snapshot. Snapshots (at checkpoints and
//! when the journal fills) bound replay and let the journal be truncated.
//!
//! ```text
//! record kind 1 SET:  u64 page id, u64 packed location (space/map.rs)   page written at loc
//! record kind 2 FREE: u64 page id, u64 next free page, u64 page LSN      page freed (unmapped)
//! record kind 3 MARK: u64 snapshot counter                               a snapshot starts here
//! record kind 4 DROP: u64 page id                                        page dropped (unmapped,
//!                                                                        reads as never written)
//! record kind 5 SETS:  [count v] count x ([page id v][packed location v]) SET for each, in
//!                                                                        order (one flush's pages)
//! record kind 6 DROPS: [count v] count x ([first page id v][pages v])     DROP for every page of
//!                                                                        each run
//! ```
//! (v: unsigned LEB128, `crate::varint`.) Writers log SETS and DROPS, at most [`BATCH_MAX`]
//! entries a record; SET and DROP, which earlier builds wrote, still replay. A batched record
//! saves a record header (`wal::format`) per page: a blob page's map entry costs about 10 bytes.
//! Replay applies records in LSN order from the snapshot's LSN; a record appears only after
//! the page data it points to was synced (store.rs `append`), and the journal's own framing
//! (checksums, torn-tail rule) decides where the durable log ends.
use super::free::FreePages;
use crate::device::{Device, DeviceError, ReadOp, WriteOp};
use crate::le::try_u64 as u64_at;
use crate::page::PageId;
use crate::space::{Location, PageMap};
use crate::wal::{Lsn, Wal, WalOptions, WalRecord};
use crate::{Corruption, Error, Result};
use std::sync::Arc;

pub const KIND_SET: u8 = 1;
pub const KIND_FREE: u8 = 2;
/// Written when a snapshot is taken; its LSN is the snapshot's (a record boundary, where replay
/// starts and before which the journal may be truncated). Replay skips it.
pub const KIND_MARK: u8 = 3;
/// A blob page no committed state names any more (`crate::blob`): unmapped, not free.
pub const KIND_DROP: u8 = 4;
pub const KIND_SETS: u8 = 5;
pub const KIND_DROPS: u8 = 6;
/// Entries of one SETS or DROPS record at most: 256 of at most 20 bytes fit the smallest
/// journal buffer's largest record (two 4 KiB blocks).
pub const BATCH_MAX: usize = 256;

/// Journal options: a log buffer of a sixteenth of the journal (4..=256 blocks), no trim (the
/// region stays allocated, as for a log file).
pub fn wal_options(journal_bytes: u64, on_data: bool) -> WalOptions {
    let blocks = (journal_bytes / 4096 / 16).clamp(4, 256) as u32;
    // On the data device its blocks are DB-issued metadata; on the log device they are log
    // bytes like the WAL's, outside the WAF figures (000 sec. 6.2 logs map changes in the WAL).
    let purpose = if on_data {
        crate::device::WritePurpose::Metadata
    } else {
        crate::device::WritePurpose::Wal
    };
    let options =
        WalOptions { buffer_blocks: blocks, trim: false, purpose, ..WalOptions::test_min() };
    // The journal opens as any WAL does: options it would refuse would fail every open.
    debug_assert!(options.validate().is_ok(), "journal options {options:?}");
    options
}

pub fn set_payload(pid: PageId, loc: Location) -> [u8; 16] {
    // Replay refuses page 0 (the superblock, never mapped): such a record would fail recovery.
    assert_ne!(pid, 0, "a map record for the superblock page");
    let mut p = [0u8; 16];
    p[..8].copy_from_slice(&pid.to_le_bytes());
    p[8..].copy_from_slice(&loc.pack().to_le_bytes());
    p
}

/// A SETS record's payload: `entries` (at most [`BATCH_MAX`]) in order.
pub fn sets_payload(entries: &[(PageId, Location)]) -> Vec<u8> {
    assert!(!entries.is_empty() && entries.len() <= BATCH_MAX, "{} entries", entries.len());
    let mut out = Vec::with_capacity(2 + entries.len() * 10);
    crate::varint::put(&mut out, entries.len() as u64);
    for (pid, loc) in entries {
        // Replay refuses page 0 and locations that do not unpack: either would fail recovery.
        assert_ne!(*pid, 0, "a map record for the superblock page");
        debug_assert_eq!(Location::unpack(loc.pack()), Some(*loc));
        crate::varint::put(&mut out, *pid);
        crate::varint::put(&mut out, loc.pack());
    }
    out
}

/// A DROPS record's payload: `runs` (at most [`BATCH_MAX`], none empty).
pub fn drops_payload(runs: &[std::ops::Range<PageId>]) -> Vec<u8> {
    assert!(!runs.is_empty() && runs.len() <= BATCH_MAX, "{} runs", runs.len());
    let mut out = Vec::with_capacity(2 + runs.len() * 6);
    crate::varint::put(&mut out, runs.len() as u64);
    for r in runs {
        // Replay refuses empty runs and page 0 (the superblock).
        assert!(r.start > 0 && r.start < r.end, "a run {r:?} replay would refuse");
        crate::varint::put(&mut out, r.start);
        crate::varint::put(&mut out, r.end - r.start);
    }
    out
}

pub fn free_payload(pid: PageId, aux: u64, page_lsn: u64) -> [u8; 24] {
    // Replay refuses page 0 (the superblock is never free); the caller checks `aux`.
    assert_ne!(pid, 0, "the superblock page logged as free");
    let mut p = [0u8; 24];
    p[..8].copy_from_slice(&pid.to_le_bytes());
    p[8..16].copy_from_slice(&aux.to_le_bytes());
    p[16..].copy_from_slice(&page_lsn.to_le_bytes());
    p
}

/// Applies one journal record to the recovered map and free pages. Never panics on bytes.
pub fn apply(r: &WalRecord, map: &mut PageMap, free: &mut FreePages, pid_limit: u64) -> Result<()> {
    let bad = |why: &str| {
        Error::Corruption(Corruption::MapJournalRecord { lsn: r.lsn.0, reason: why.to_string() })
    };
    if r.kind == KIND_MARK {
        return Ok(());
    }
    // The layout's page ids: the superblock's and at least the catalog root's.
    debug_assert!(pid_limit > 1, "a journal replayed onto {pid_limit} page ids");
    if matches!(r.kind, KIND_SETS | KIND_DROPS) {
        return apply_batch(r, map, free, pid_limit).map_err(|why| bad(&why));
    }
    let pid = u64_at(&r.payload, 0).ok_or_else(|| bad("short"))?;
    if pid == 0 || pid >= pid_limit {
        return Err(bad("page id out of range"));
    }
    match r.kind {
        KIND_SET if r.payload.len() == 16 => {
            let raw = u64_at(&r.payload, 8).ok_or_else(|| bad("short"))?;
            let loc = Location::unpack(raw).ok_or_else(|| bad("invalid location"))?;
            map.set(pid, loc);
            free.remove(pid);
        }
        KIND_FREE if r.payload.len() == 24 => {
            let aux = u64_at(&r.payload, 8).ok_or_else(|| bad("short"))?;
            let page_lsn = u64_at(&r.payload, 16).ok_or_else(|| bad("short"))?;
            if aux >= pid_limit {
                return Err(bad("next free page out of range"));
            }
            map.clear(pid);
            free.insert(pid, super::free::synthesize(pid, aux, page_lsn));
        }
        KIND_DROP if r.payload.len() == 8 => {
            map.clear(pid);
            free.remove(pid);
        }
        _ => return Err(bad("unknown kind or length")),
    }
    Ok(())
}

/// A SETS or DROPS record; Err says what is wrong with its bytes.
fn apply_batch(
    r: &WalRecord,
    map: &mut PageMap,
    free: &mut FreePages,
    pid_limit: u64,
) -> Result<(), String> {
    // `apply` dispatches only the batched kinds here: the loop below reads entry pairs.
    debug_assert!(matches!(r.kind, KIND_SETS | KIND_DROPS), "kind {} as a batch", r.kind);
    let mut b = &r.payload[..];
    let count = crate::varint::take(&mut b)?;
    // Each entry takes at least two bytes.
    if count == 0 || count > BATCH_MAX as u64 || count * 2 > b.len() as u64 {
        return Err(format!("{count} entries in {} bytes", b.len()));
    }
    for _ in 0..count {
        let (first, second) = (crate::varint::take(&mut b)?, crate::varint::take(&mut b)?);
        if first == 0 || first >= pid_limit {
            return Err(format!("page id {first} out of range"));
        }
        if r.kind == KIND_SETS {
            let loc = Location::unpack(second).ok_or("invalid location")?;
            map.set(first, loc);
            free.remove(first);
            continue;
        }
        let end = first.checked_add(second).filter(|e| second > 0 && *e <= pid_limit);
        let end = end.ok_or_else(|| format!("run {first}+{second} out of range"))?;
        for pid in first..end {
            map.clear(pid);
            free.remove(pid);
        }
    }
    if !b.is_empty() {
        return Err(format!("{} trailing bytes", b.len()));
    }
    Ok(())
}

/// Opens the journal and replays it from `from` onto `map` and `free`; returns the log ready
/// to append after its last valid record.
pub fn replay(
    device: Arc<dyn Device>,
    options: WalOptions,
    from: u64,
    map: &mut PageMap,
    free: &mut FreePages,
    pid_limit: u64,
) -> Result<Wal> {
    let mut rec = Wal::open_from(device, options, Lsn(from))?;
    let mut last = None;
    // Bound: the journal holds at most capacity / (smallest record) records.
    while let Some(r) = rec.next_record()? {
        // The log hands records over in order: replay applies them in the order written.
        assert!(last < Some(r.lsn) && r.lsn.0 >= from, "journal record {} out of order", r.lsn);
        last = Some(r.lsn);
        apply(&r, map, free, pid_limit)?;
    }
    let (wal, _report) = rec.finish()?;
    assert!(last.is_none_or(|l| wal.next_lsn() > l), "the journal resumes after its records");
    Ok(wal)
}

/// `len` bytes of `inner` starting at `offset`, as a device of its own (the journal's region).
#[derive(Debug)]
pub struct SliceDevice {
    inner: Arc<dyn Device>,
    offset: u64,
    len: u64,
}

impl SliceDevice {
    pub fn new(inner: Arc<dyn Device>, offset: u64, len: u64) -> SliceDevice {
        assert!(offset.is_multiple_of(4096) && len.is_multiple_of(4096));
        assert!(offset + len <= inner.capacity_bytes());
        SliceDevice { inner, offset, len }
    }
    fn check(&self, offset: u64, len: u64) -> Result<u64, DeviceError> {
        if offset.checked_add(len).is_none_or(|end| end > self.len) {
            return Err(DeviceError::OutOfRange { offset, len, capacity_bytes: self.len });
        }
        let at = self.offset + offset;
        // The inner device sees the access inside the slice `new` checked it holds.
        debug_assert!(at >= self.offset && at + len <= self.offset + self.len, "{at}+{len}");
        Ok(at)
    }
}

impl Device for SliceDevice {
    fn capacity_bytes(&self) -> u64 {
        // `new`'s hand-over: whole 4 KiB blocks, as the WAL's direct I/O needs.
        debug_assert!(self.len.is_multiple_of(4096), "a slice of {} bytes", self.len);
        self.len
    }
    fn read_batch(&self, ops: &mut [ReadOp<'_>]) -> Result<(), DeviceError> {
        for op in ops.iter_mut() {
            op.offset = self.check(op.offset, op.buf.len() as u64)?;
        }
        assert!(ops.iter().all(|op| op.offset >= self.offset), "a read left the slice");
        self.inner.read_batch(ops)
    }
    fn write_batch(&self, ops: &[WriteOp<'_>]) -> Result<(), DeviceError> {
        let mut shifted = Vec::with_capacity(ops.len());
        for op in ops {
            shifted.push(WriteOp { offset: self.check(op.offset, op.data.len() as u64)?, ..*op });
        }
        assert!(shifted.iter().all(|op| op.offset >= self.offset), "a write left the slice");
        self.inner.write_batch(&shifted)
    }
    fn sync(&self) -> Result<(), DeviceError> {
        // The slice lies inside its device: syncing the device covers every byte of it.
        debug_assert!(self.offset + self.len <= self.inner.capacity_bytes());
        self.inner.sync()
    }
    fn trim(&self, offset: u64, len: u64) -> Result<(), DeviceError> {
        let at = self.check(offset, len)?;
        // As reads and writes: a trim outside the slice would discard the neighbour's bytes.
        assert!(at >= self.offset && at + len <= self.offset + self.len, "a trim left the slice");
        self.inner.trim(at, len)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::device::MemoryDevice;

    fn record(kind: u8, payload: &[u8]) -> WalRecord {
        WalRecord { lsn: Lsn(100), kind, payload: payload.to_vec() }
    }

    #[test]
    fn records_replay_onto_the_map_and_refuse_garbage() {
        let (mut map, mut free) = (PageMap::new(), FreePages::default());
        let loc = Location::new(3, 2, 4096);
        apply(&record(KIND_SET, &set_payload(7, loc)), &mut map, &mut free, 100).unwrap();
        assert_eq!(map.get(7), Some(loc));
        apply(&record(KIND_FREE, &free_payload(7, 9, 55)), &mut map, &mut free, 100).unwrap();
        assert_eq!((map.get(7), free.count()), (None, 1));
        apply(&record(KIND_SET, &set_payload(7, loc)), &mut map, &mut free, 100).unwrap();
        assert_eq!((map.get(7), free.count()), (Some(loc), 0));
        apply(&record(KIND_MARK, &[1; 8]), &mut map, &mut free, 100).unwrap();
        for bad in [
            record(KIND_SET, &set_payload(700, loc)),
            // Page 0, which `set_payload` refuses to write.
            record(KIND_SET, &[0u64.to_le_bytes(), loc.pack().to_le_bytes()].concat()),
            record(KIND_SET, &[1, 2, 3]),
            record(KIND_SET, &[0xff; 16]),
            record(KIND_FREE, &free_payload(7, 700, 1)),
            record(9, &set_payload(7, loc)),
        ] {
            assert!(apply(&bad, &mut map, &mut free, 100).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn batched_records_replay_like_their_single_records_and_refuse_garbage() {
        let (mut map, mut free) = (PageMap::new(), FreePages::default());
        let (a, b) = (Location::new(3, 2, 4096), Location::packed(4, 9, 64, 700));
        let sets = sets_payload(&[(7, a), (8, b), (7, b)]);
        assert!(sets.len() < 3 * 12, "{} bytes for three map entries", sets.len());
        apply(&record(KIND_SETS, &sets), &mut map, &mut free, 100).unwrap();
        assert_eq!((map.get(7), map.get(8)), (Some(b), Some(b)), "entries apply in order");
        apply(&record(KIND_SET, &set_payload(9, a)), &mut map, &mut free, 100).unwrap();
        apply(&record(KIND_DROPS, &drops_payload(&[7..9, 20..22])), &mut map, &mut free, 100)
            .unwrap();
        assert_eq!((map.get(7), map.get(8), map.get(9)), (None, None, Some(a)));
        let mut long = vec![0u8];
        crate::varint::put(&mut long, 300);
        // Page 0, which `sets_payload` refuses to write.
        let mut page_zero = Vec::new();
        for v in [1, 0, a.pack()] {
            crate::varint::put(&mut page_zero, v);
        }
        let mut big_run = Vec::new();
        crate::varint::put(&mut big_run, 1);
        crate::varint::put(&mut big_run, 95);
        crate::varint::put(&mut big_run, 10);
        for bad in [
            record(KIND_SETS, &sets[..sets.len() - 1]),
            record(KIND_SETS, &[sets.clone(), vec![0]].concat()),
            record(KIND_SETS, &sets_payload(&[(700, a)])),
            record(KIND_SETS, &page_zero),
            record(KIND_SETS, &long),
            record(KIND_SETS, &[0]),
            record(KIND_DROPS, &big_run),
            record(KIND_DROPS, &[1, 5, 0]),
        ] {
            assert!(apply(&bad, &mut map, &mut free, 100).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn slice_device_shifts_and_bounds_requests() {
        let inner: Arc<dyn Device> = Arc::new(MemoryDevice::new(64 << 10));
        let slice = SliceDevice::new(inner.clone(), 16 << 10, 8 << 10);
        slice.write_at(4096, &[7u8; 4096], crate::device::WritePurpose::Wal).unwrap();
        let mut buf = vec![0u8; 4096];
        inner.read_at(20 << 10, &mut buf).unwrap();
        assert_eq!(buf, vec![7u8; 4096]);
        assert!(slice.write_at(8 << 10, &buf, crate::device::WritePurpose::Wal).is_err());
        assert!(slice.read_at(4097 + 4096, &mut buf).is_err());
    }
}
