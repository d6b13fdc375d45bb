#![allow(clippy::unwrap_used)] // Tests may unwrap.
//! API behaviour: reopen from a file, corruption, oversize entries, a full device, I/O errors,
//! freed pages coming back, write history.
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use wafer::device::{Device, DeviceError, MemoryDevice, ReadOp, WriteOp, WritePurpose};
use wafer::internals::page::{self, PAGE_SIZE};
use wafer::{Db, Options, OutOfSpaceError, WriteBatch};

const _: () = {
    const fn send_sync<T: Send + Sync>() {}
    send_sync::<Db>();
    send_sync::<wafer::Tree>();
};

/// Test options with page `pid` at `pid * 4096` (no doublewrite area in front), for tests that
/// poke at pages on the device.
fn plain() -> Options {
    Options { doublewrite: false, data_offset_bytes: 0, ..Options::test_min() }
}

fn key(i: u32) -> Vec<u8> {
    format!("key{i:08}").into_bytes()
}

#[test]
fn file_database_survives_close_and_reopen() {
    file_reopen(wafer::device::FileOptions::BUFFERED, "buffered");
}

#[test]
fn direct_io_file_database_survives_close_and_reopen() {
    file_reopen(wafer::device::FileOptions::DIRECT, "direct");
}

fn file_reopen(file: wafer::device::FileOptions, tag: &str) {
    let path = std::env::temp_dir().join(format!("wafer-api-{tag}-{}.db", std::process::id()));
    let _ = std::fs::remove_file(&path);
    let _ = std::fs::remove_file(wafer::db::wal_path(&path));
    let options = Options { file, ..Options::test_min() };
    {
        let db = Db::open(&path, options.clone()).unwrap();
        let (a, b) = (db.tree("a").unwrap(), db.tree("b").unwrap());
        for i in 0..5_000 {
            a.put(&key(i), &i.to_le_bytes()).unwrap();
            if i % 3 == 0 {
                b.put(&key(i), b"b").unwrap();
            }
        }
        for i in (0..5_000).step_by(7) {
            a.delete(&key(i)).unwrap();
        }
        db.close().unwrap();
    }
    let db = Db::open(&path, options).unwrap();
    assert_eq!(db.tree_names().unwrap(), vec!["a".to_string(), "b".to_string()]);
    let io = db.stats().io.unwrap();
    assert!(io.read_ops > 0, "a reopened database reads through its counted device");
    let (a, b) = (db.tree("a").unwrap(), db.tree("b").unwrap());
    for i in 0..5_000u32 {
        let want = (i % 7 != 0).then(|| i.to_le_bytes().to_vec());
        assert_eq!(a.get(&key(i)).unwrap(), want, "key {i}");
    }
    assert_eq!(b.iter().count(), 1667);
    db.close().unwrap();
    std::fs::remove_file(&path).unwrap();
    std::fs::remove_file(wafer::db::wal_path(&path)).unwrap();
}

#[test]
fn flipped_byte_is_reported_as_corrupt_page() {
    let dev = Arc::new(MemoryDevice::new(4 << 20));
    let db = Db::open_on(dev.clone(), plain()).unwrap();
    let t = db.tree("t").unwrap();
    for i in 0..10 {
        t.put(&key(i), b"v").unwrap();
    }
    db.close().unwrap();
    // Page 0 superblock, 1 catalog root, 2 the root leaf of tree "t".
    let mut buf = vec![0u8; PAGE_SIZE];
    dev.read_at(2 * PAGE_SIZE as u64, &mut buf).unwrap();
    buf[PAGE_SIZE - 5] ^= 0x10;
    dev.write_at(2 * PAGE_SIZE as u64, &buf, WritePurpose::Metadata).unwrap();
    let db = Db::open_on(dev, plain()).unwrap();
    let err = db.tree("t").unwrap().get(&key(3)).unwrap_err();
    match &err {
        wafer::ReadError::Storage(wafer::StorageError::CorruptPage { page_id: 2, reason }) => {
            assert!(reason.contains("checksum"))
        }
        other => panic!("expected CorruptPage for page 2, got {other:?}"),
    }
    assert!(err.to_string().contains("page 2"), "message says where: {err}");
}

#[test]
fn oversize_keys_and_values_are_refused_whole() {
    let db = Db::open_on(Arc::new(MemoryDevice::new(4 << 20)), Options::test_min()).unwrap();
    let t = db.tree("t").unwrap();
    t.put(&[1u8; 1024], &[2u8; 2048]).unwrap();
    assert_eq!(t.get(&[1u8; 1024]).unwrap(), Some(vec![2u8; 2048]));
    assert!(matches!(
        t.put(&[1u8; 1025], b"v"),
        Err(wafer::CommitError::KeyTooLarge { len: 1025, max: 1024 })
    ));
    assert!(matches!(
        t.put(b"k", &[0u8; 2049]),
        Err(wafer::CommitError::ValueTooLarge { len: 2049, .. })
    ));
    assert!(matches!(t.get(&[0u8; 5000]), Err(wafer::ReadError::KeyTooLarge { .. })));
    let mut batch = WriteBatch::new();
    batch.put("t", b"fine", b"v").put("t", b"bad", &[0u8; 4000]);
    assert!(matches!(db.write(&batch), Err(wafer::CommitError::ValueTooLarge { .. })));
    assert_eq!(t.get(b"fine").unwrap(), None, "a refused batch applies nothing");
    t.put(b"after", b"ok").unwrap();
}

#[test]
fn full_device_is_a_clean_error() {
    let dev = Arc::new(MemoryDevice::new(40 * PAGE_SIZE as u64));
    let db = Db::open_on(dev, plain()).unwrap();
    let t = db.tree("t").unwrap();
    let mut stored = 0;
    let err = loop {
        match t.put(&key(stored), &[7u8; 500]) {
            Ok(()) => stored += 1,
            Err(e) => break e,
        }
        assert!(stored < 100_000);
    };
    // The allocator ran out of pages; `cause` says why the store did not grow.
    let cause = match &err {
        wafer::CommitError::OutOfSpace(OutOfSpaceError::DeviceFull { cause, .. }) => &**cause,
        _ => panic!("{err}"),
    };
    assert!(matches!(cause, OutOfSpaceError::FileGrowth { .. }), "{err}");
    assert!(stored > 100, "stored {stored}");
    // Not poisoned: reads and deletes work, and space freed by deletes is usable again.
    assert_eq!(t.get(&key(0)).unwrap(), Some(vec![7u8; 500]));
    for i in 0..stored {
        t.delete(&key(i)).unwrap();
    }
    t.put(b"again", b"fits").unwrap();
    db.close().unwrap();
}

#[test]
fn deleting_everything_returns_pages_and_reuses_them() {
    let db = Db::open_on(Arc::new(MemoryDevice::new(64 << 20)), Options::test_min()).unwrap();
    let t = db.tree("t").unwrap();
    let baseline = db.stats().allocated_pages;
    for i in 0..20_000 {
        t.put(&key(i), &[1u8; 100]).unwrap();
    }
    let high_water = db.stats().high_water_pages;
    assert!(db.stats().allocated_pages > baseline + 500);
    for i in 0..20_000 {
        assert!(t.delete(&key(i)).unwrap());
    }
    assert_eq!(db.stats().allocated_pages, baseline);
    for i in 0..20_000 {
        t.put(&key(i), &[2u8; 100]).unwrap();
    }
    assert_eq!(db.stats().high_water_pages, high_water, "freed pages are reused");
}

#[test]
fn write_back_stamps_history_and_lsn() {
    let dev = Arc::new(MemoryDevice::new(4 << 20));
    let db = Db::open_on(dev.clone(), plain()).unwrap();
    let t = db.tree("t").unwrap();
    t.put(b"k", b"v").unwrap();
    db.close().unwrap();
    let mut buf = [0u8; PAGE_SIZE];
    dev.read_at(2 * PAGE_SIZE as u64, &mut buf).unwrap();
    assert!(page::lsn(&buf) > 0);
    let first = page::write_history(&buf)[3];
    assert!(first > 0);
    let db = Db::open_on(dev.clone(), plain()).unwrap();
    db.tree("t").unwrap().put(b"k", b"w").unwrap();
    db.close().unwrap();
    dev.read_at(2 * PAGE_SIZE as u64, &mut buf).unwrap();
    let h = page::write_history(&buf);
    assert_eq!(h[2], first);
    assert!(h[3] > first, "write clock continues across reopen: {h:?}");
}

/// Fails every write once `fail` is set.
#[derive(Debug)]
struct FailingDevice {
    inner: MemoryDevice,
    fail: AtomicBool,
}
impl Device for FailingDevice {
    fn capacity_bytes(&self) -> u64 {
        self.inner.capacity_bytes()
    }
    fn read_batch(&self, ops: &mut [ReadOp<'_>]) -> Result<(), DeviceError> {
        self.inner.read_batch(ops)
    }
    fn write_batch(&self, ops: &[WriteOp<'_>]) -> Result<(), DeviceError> {
        if self.fail.load(Ordering::Relaxed) {
            return Err(DeviceError::Injected(format!("write at {}", ops[0].offset)));
        }
        self.inner.write_batch(ops)
    }
    fn sync(&self) -> Result<(), DeviceError> {
        self.inner.sync()
    }
    fn trim(&self, offset: u64, len: u64) -> Result<(), DeviceError> {
        self.inner.trim(offset, len)
    }
}

#[test]
fn write_error_is_typed_and_poisons_writes() {
    let dev = Arc::new(FailingDevice { inner: MemoryDevice::new(16 << 20), fail: false.into() });
    let db = Db::open_on(dev.clone(), Options::test_min()).unwrap();
    let t = db.tree("t").unwrap();
    for i in 0..100 {
        t.put(&key(i), &[1u8; 200]).unwrap();
    }
    dev.fail.store(true, Ordering::Relaxed);
    let err = (100..100_000).find_map(|i| t.put(&key(i), &[1u8; 200]).err()).unwrap();
    assert!(
        matches!(
            err,
            wafer::CommitError::Storage(wafer::StorageError::Device(DeviceError::Injected(_)))
        ),
        "{err}"
    );
    assert!(matches!(t.put(b"x", b"y"), Err(wafer::CommitError::Poisoned)));
    assert!(matches!(db.close(), Err(wafer::MaintenanceError::Poisoned)));
}

#[test]
fn closed_database_refuses_work() {
    let db = Db::open_on(Arc::new(MemoryDevice::new(4 << 20)), Options::test_min()).unwrap();
    let t = db.tree("t").unwrap();
    db.close().unwrap();
    assert!(matches!(t.get(b"k"), Err(wafer::ReadError::Closed)));
    assert!(matches!(t.put(b"k", b"v"), Err(wafer::CommitError::Closed)));
}

#[test]
fn garbage_superblock_is_refused() {
    let dev = Arc::new(MemoryDevice::new(4 << 20));
    dev.write_at(0, &[0xabu8; PAGE_SIZE], WritePurpose::Metadata).unwrap();
    let err = Db::open_on(dev, plain()).unwrap_err();
    // Not a database at all (no magic): refused as such before anything is written.
    assert!(
        matches!(err, wafer::DbOpenError::Refused(wafer::OpenError::NotWaferDatabase { .. })),
        "{err}"
    );
}

#[test]
fn sparse_leaves_merge_after_deletes() {
    let db = Db::open_on(Arc::new(MemoryDevice::new(64 << 20)), Options::test_min()).unwrap();
    let t = db.tree("t").unwrap();
    for i in 0..20_000 {
        t.put(&key(i), &[1u8; 100]).unwrap();
    }
    let peak = db.stats().allocated_pages;
    for i in (0..20_000).filter(|i| i % 10 != 0) {
        assert!(t.delete(&key(i)).unwrap());
    }
    let after = db.stats().allocated_pages;
    // Without merges every leaf would keep a tenth of its entries and all its pages.
    assert!(after * 3 < peak, "pages: {peak} at peak, {after} after deleting 90%");
    let got: Vec<Vec<u8>> = t.iter().map(|r| r.unwrap().0).collect();
    let want: Vec<Vec<u8>> = (0..20_000).filter(|i| i % 10 == 0).map(key).collect();
    assert_eq!(got, want);
}

#[test]
fn flush_makes_a_reopenable_image_without_closing() {
    let dev = Arc::new(MemoryDevice::new(16 << 20));
    let db = Db::open_on(dev.clone(), Options::test_min()).unwrap();
    let t = db.tree("t").unwrap();
    for i in 0..3_000 {
        t.put(&key(i), b"flushed").unwrap();
    }
    db.flush().unwrap();
    t.put(b"after-flush", b"lost").unwrap();
    drop(t);
    drop(db); // No close: like a crash after the flush.
    let db = Db::open_on(dev, Options::test_min()).unwrap();
    let t = db.tree("t").unwrap();
    assert_eq!(t.iter().count(), 3_000);
    assert_eq!(t.get(&key(2_999)).unwrap(), Some(b"flushed".to_vec()));
}

/// Hands out LSNs and records how far the "log" was made durable.
#[derive(Debug, Default)]
struct RecordingLogger {
    next: std::sync::atomic::AtomicU64,
    durable: Arc<std::sync::atomic::AtomicU64>,
}
impl wafer::internals::page::PageLogger for RecordingLogger {
    fn log(&self, _pid: u64, _change: &wafer::internals::page::PageChange<'_>) -> u64 {
        self.next.fetch_add(1, Ordering::Relaxed) + 1
    }
    fn last_lsn(&self) -> u64 {
        self.next.load(Ordering::Relaxed)
    }
    fn make_durable(&self, lsn: u64) -> wafer::Result<()> {
        self.durable.fetch_max(lsn, Ordering::Relaxed);
        Ok(())
    }
}

/// Checks every page write against the durable LSN: the write-ahead rule.
#[derive(Debug)]
struct WalRuleDevice {
    inner: MemoryDevice,
    durable: Arc<std::sync::atomic::AtomicU64>,
}
impl Device for WalRuleDevice {
    fn capacity_bytes(&self) -> u64 {
        self.inner.capacity_bytes()
    }
    fn read_batch(&self, ops: &mut [ReadOp<'_>]) -> Result<(), DeviceError> {
        self.inner.read_batch(ops)
    }
    fn write_batch(&self, ops: &[WriteOp<'_>]) -> Result<(), DeviceError> {
        for op in ops.iter().filter(|op| op.offset != 0) {
            let mut page_buf = [0u8; PAGE_SIZE];
            page_buf.copy_from_slice(op.data);
            let lsn = page::lsn(&page_buf);
            assert!(lsn <= self.durable.load(Ordering::Relaxed), "page LSN {lsn} not durable");
        }
        self.inner.write_batch(ops)
    }
    fn sync(&self) -> Result<(), DeviceError> {
        self.inner.sync()
    }
    fn trim(&self, offset: u64, len: u64) -> Result<(), DeviceError> {
        self.inner.trim(offset, len)
    }
}

#[test]
fn pages_go_out_only_after_the_log_is_durable_to_their_lsn() {
    let logger = Arc::new(RecordingLogger::default());
    let device = Arc::new(WalRuleDevice {
        inner: MemoryDevice::new(16 << 20),
        durable: logger.durable.clone(),
    });
    let db = Db::open_with_logger(device, plain(), Some(logger.clone())).unwrap();
    let t = db.tree("t").unwrap();
    for i in 0..5_000 {
        t.put(&key(i), &[3u8; 64]).unwrap();
    }
    assert!(db.stats().pool.page_writes > 100, "the tiny pool must write back");
    db.close().unwrap();
    assert!(logger.durable.load(Ordering::Relaxed) > 0);
}

#[test]
fn free_list_survives_reopen() {
    let dev = Arc::new(MemoryDevice::new(64 << 20));
    let db = Db::open_on(dev.clone(), Options::test_min()).unwrap();
    let t = db.tree("t").unwrap();
    for i in 0..10_000 {
        t.put(&key(i), &[1u8; 100]).unwrap();
    }
    for i in 0..10_000 {
        t.delete(&key(i)).unwrap();
    }
    let before = db.stats();
    assert!(before.free_pages > 100);
    db.close().unwrap();
    let db = Db::open_on(dev, Options::test_min()).unwrap();
    let after = db.stats();
    assert_eq!(
        (after.free_pages, after.allocated_pages, after.high_water_pages),
        (before.free_pages, before.allocated_pages, before.high_water_pages)
    );
    let t = db.tree("t").unwrap();
    for i in 0..10_000 {
        t.put(&key(i), &[2u8; 100]).unwrap();
    }
    assert_eq!(db.stats().high_water_pages, before.high_water_pages, "reused, not grown");
    assert_eq!(t.get(&key(9_999)).unwrap(), Some(vec![2u8; 100]));
}

/// On the emulator, `Db::stats()` carries the flash counters, and they agree
/// with what the engine issued: every DB-issued byte reaches the flash as a host write.
#[test]
fn emulator_flash_counters_are_reachable_through_stats() {
    use wafer::device::{Counted, EmuDevice};
    let mut cfg = flashemu::Config::preset("tiny").unwrap();
    cfg.store = flashemu::StoreKind::Memory;
    let stats = Arc::new(wafer::stats::IoStats::default());
    let dev = Arc::new(Counted::new(EmuDevice::new(cfg).unwrap(), stats.clone()));
    let db = Db::open_on(dev, Options::test_min()).unwrap();
    let t = db.tree("t").unwrap();
    for i in 0..2000 {
        t.put(&key(i), &[7u8; 100]).unwrap();
    }
    db.flush().unwrap();
    let s = db.stats();
    let flash = s.flash.expect("the emulator reports flash counters");
    let issued = stats.snapshot();
    let issued_bytes: u64 = issued.write_bytes.iter().sum();
    assert!(issued_bytes > 0);
    assert_eq!(flash.host_write_bytes, issued_bytes, "every issued byte is a host write");
    assert!(flash.flash_host_bytes + flash.flash_gc_bytes > 0);
    let plain = Db::open_on(Arc::new(MemoryDevice::new(16 << 20)), plain()).unwrap();
    assert!(plain.stats().flash.is_none(), "a memory device has no flash");
}

/// An ascending load with append splits leaves its leaves full: far fewer pages than middle
/// splits (which leave every leaf half full), the same contents, and random inserts after it
/// still split in the middle and stay correct; the tree passes its structural check.
#[test]
fn append_splits_pack_an_ascending_load() {
    let load = |append_split: bool| {
        let options =
            Options { append_split, ..Options::test_min().with_buffer_pool_bytes(64 * 4096) };
        let db = Db::open_on(Arc::new(MemoryDevice::new(64 << 20)), options).unwrap();
        let t = db.tree("t").unwrap();
        for i in 0..3000u32 {
            t.put(&key(i), &[i as u8; 100]).unwrap();
        }
        let pages = db.stats().allocated_pages;
        // Scattered inserts into the packed leaves.
        for i in (0..3000u32).step_by(7) {
            t.put(&key(i * 2 + 1_000_000), &[7; 100]).unwrap();
        }
        for i in 0..3000u32 {
            assert_eq!(t.get(&key(i)).unwrap(), Some(vec![i as u8; 100]), "key {i}");
        }
        let report = db.check().unwrap();
        assert!(report.violations.is_empty(), "append_split {append_split}: {report:?}");
        db.close().unwrap();
        pages
    };
    let (middle, append) = (load(false), load(true));
    // ~112-byte entries: 36 per full leaf, 18 per half-full one.
    assert!(append * 10 < middle * 7, "append splits {append} pages, middle splits {middle}");
}

/// `get_with` looks at the value in place and `get_into` reuses the caller's buffer; both agree
/// with `get`, also for a missing key.
#[test]
fn get_with_and_get_into_agree_with_get() {
    let db = Db::open_on(Arc::new(MemoryDevice::new(16 << 20)), Options::test_min()).unwrap();
    let t = db.tree("t").unwrap();
    for i in 0..500u32 {
        t.put(&key(i), &vec![i as u8; (i % 300) as usize]).unwrap();
    }
    let mut out = Vec::with_capacity(512);
    let capacity = out.capacity();
    for i in 0..510u32 {
        let want = t.get(&key(i)).unwrap();
        assert_eq!(t.get_with(&key(i), |v| v.to_vec()).unwrap(), want);
        assert_eq!(t.get_into(&key(i), &mut out).unwrap(), want.is_some());
        assert_eq!(out, want.unwrap_or_default());
    }
    assert_eq!(out.capacity(), capacity, "get_into reallocated a large enough buffer");
    let long = vec![b'k'; 2000];
    assert!(matches!(t.get_with(&long, |v| v.len()), Err(wafer::ReadError::KeyTooLarge { .. })));
}

/// Batches larger than the pool's reach read their leaves from several threads before the
/// writer mutex (`prefetch_parallel`); what they apply must be exactly the batch, in order, in
/// both write modes, and survive a reopen.
#[test]
fn large_batches_over_a_small_pool_apply_whole_and_survive_reopen() {
    use std::collections::BTreeMap;
    for options in [Options::test_min(), Options::test_min().out_of_place()] {
        let dev = Arc::new(MemoryDevice::new(64 << 20));
        let db = Db::open_on(dev.clone(), options.clone()).unwrap();
        let t = db.tree("t").unwrap();
        let mut model = BTreeMap::new();
        // Keys spread over far more leaves than the 16-page pool holds.
        let scatter = |i: u32| key(i.wrapping_mul(2_654_435_761) % 50_000);
        for round in 0..12u32 {
            let mut batch = WriteBatch::new();
            for j in 0..150u32 {
                let k = scatter(round * 150 + j);
                if j % 7 == 3 && round > 0 {
                    let gone = scatter((round - 1) * 150 + j);
                    batch.delete("t", &gone);
                    model.remove(&gone);
                }
                let v = vec![(round + j) as u8; 200 + (j as usize % 90)];
                batch.put("t", &k, &v);
                model.insert(k, v);
            }
            db.write(&batch).unwrap();
        }
        let got: BTreeMap<Vec<u8>, Vec<u8>> = t.iter().map(|e| e.unwrap()).collect();
        assert_eq!(got, model, "after the batches");
        db.close().unwrap();
        let db = Db::open_on(dev, options).unwrap();
        let got: BTreeMap<Vec<u8>, Vec<u8>> =
            db.tree("t").unwrap().iter().map(|e| e.unwrap()).collect();
        assert_eq!(got, model, "after reopening");
        assert!(db.check().unwrap().is_clean());
    }
}
