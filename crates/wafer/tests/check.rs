#![allow(clippy::unwrap_used)] // Tests may unwrap.
//! `Db::check` finds nothing on healthy databases in both write modes and reports damage it is
//! shown; a batch larger than the buffer pool is `PoolExhausted`, not a full device.
use std::sync::Arc;
use wafer::device::{Device, MemoryDevice, WritePurpose};
use wafer::{Db, Durability, Options, WriteBatch};

fn key(i: u64) -> Vec<u8> {
    format!("key{:06}", (i * 7919) % 100_000).into_bytes()
}

fn fill(db: &Db, n: u64) {
    let t = db.tree("t").unwrap();
    let u = db.tree("u").unwrap();
    for i in 0..n {
        t.put(&key(i), &[i as u8; 90]).unwrap();
        if i % 3 == 0 {
            u.put(&key(i), b"small").unwrap();
        }
        if i % 5 == 0 {
            t.delete(&key(i / 2)).unwrap();
        }
    }
}

#[test]
fn a_healthy_database_checks_clean_in_both_modes() {
    for options in [Options::test_min(), Options::test_min().out_of_place()] {
        let dev = Arc::new(MemoryDevice::new(8 << 20));
        let wal = Arc::new(MemoryDevice::new(4 << 20));
        let db = Db::open_on_devices(dev.clone(), wal.clone(), options.clone()).unwrap();
        fill(&db, 3000);
        let report = db.check().unwrap();
        assert!(report.is_clean(), "{report}");
        assert_eq!(report.trees, 3, "catalog, t and u: {report}");
        assert!(report.tree_pages > 20 && report.entries > 2000, "{report}");
        let s = db.stats();
        assert_eq!(report.free_pages, s.free_pages, "{report}");
        drop(db); // Crash, then recover and check again.
        let db = Db::open_on_devices(dev, wal, options).unwrap();
        let report = db.check().unwrap();
        assert!(report.is_clean(), "after recovery: {report}");
    }
}

#[test]
fn a_corrupt_page_is_reported_not_panicked_on() {
    let options = Options::test_min();
    let dev = Arc::new(MemoryDevice::new(8 << 20));
    let db = Db::open_on(dev.clone(), options.clone()).unwrap();
    fill(&db, 2000);
    let pages = db.stats().high_water_pages;
    db.close().unwrap();
    // Flip a byte in the middle of every 7th page: each fails its checksum.
    let mut damaged = 0;
    for pid in (2..pages).step_by(7) {
        let offset = options.data_offset_bytes + pid * 4096;
        let mut b = vec![0u8; 4096];
        dev.read_at(offset, &mut b).unwrap();
        b[2000] ^= 0x5A;
        dev.write_at(offset, &b, WritePurpose::Metadata).unwrap();
        damaged += 1;
    }
    let db = Db::open_on(dev, options).unwrap();
    let report = db.check().unwrap();
    assert!(!report.is_clean());
    let unreadable = report.violations.iter().filter(|v| v.message.contains("checksum")).count();
    // Damaged free pages and pages under a damaged parent are not reached as such; the pages
    // below an unreadable node show up as leaked.
    assert!(unreadable >= 1 && unreadable <= damaged, "{report}");
    assert!(report
        .violations
        .iter()
        .all(|v| v.page_id.is_some_and(|p| p < pages) || v.page_id.is_none()));
}

#[test]
fn a_batch_larger_than_the_pool_is_pool_exhausted_not_out_of_space() {
    let options =
        Options::test_min().with_buffer_pool_bytes(16 * 4096).with_durability(Durability::None);
    let dev = Arc::new(MemoryDevice::new(16 << 20));
    let wal = Arc::new(MemoryDevice::new(4 << 20));
    let db = Db::open_on_devices(dev, wal, options).unwrap();
    let mut batch = WriteBatch::new();
    // About 60 pages of values in one batch: every dirtied page stays pinned until commit.
    for i in 0..120u64 {
        batch.put("t", &key(i), &[1u8; 2000]);
    }
    let err = db.write(&batch).unwrap_err();
    assert!(
        matches!(
            err,
            wafer::CommitError::Storage(wafer::StorageError::PoolExhausted { frames: 16, .. })
        ),
        "{err}"
    );
    assert!(!matches!(err, wafer::CommitError::OutOfSpace(_)));
}
