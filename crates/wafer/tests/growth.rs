#![allow(clippy::unwrap_used)] // Tests may unwrap.
//! A data file that grows, in both write modes: created small, it grows under concurrent load
//! to many times its size with `Db::check` clean, and at `max_file_bytes` a write fails with
//! `OutOfSpace` while everything committed before stays readable after a reopen. Power cuts
//! among growths are in `crash.rs` (GROWTH).
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use wafer::{Db, Options, OutOfSpaceError, WriteBatch};

const START_BYTES: u64 = 256 << 10;

fn dir(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("wafer-growth-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

fn options(out_of_place: bool, max_file_bytes: Option<u64>) -> Options {
    let mut o = Options::test_min().with_buffer_pool_bytes(64 * 4096).with_blobs(1500);
    if out_of_place {
        o = o.out_of_place();
        // Pages fill zones more slowly than page ids run out when blobs take ids of their own.
        o.out_of_place.max_fill_percent = 80;
    }
    o.file_capacity_bytes = START_BYTES;
    o.max_file_bytes = max_file_bytes;
    o.wal_capacity_bytes = 4 << 20;
    o.checkpoint_log_bytes = 1 << 20;
    o.background_write_back = true;
    o.background_checkpoint = true;
    o
}

fn key(t: u32, i: u32) -> Vec<u8> {
    format!("k{t}-{i:08}").into_bytes()
}

/// Some values inline, some out of line as blobs of several pages.
fn value(t: u32, i: u32) -> Vec<u8> {
    let len = if i.is_multiple_of(7) { 9000 } else { 200 + (i as usize * 31) % 600 };
    format!("{t}:{i};").repeat(len / 8 + 1).into_bytes()
}

fn file_bytes(path: &Path) -> u64 {
    std::fs::metadata(path).unwrap().len()
}

/// Four writers fill a database created at 256 KiB until its file is 20x that; every batch
/// is read back after a reopen and the check is clean.
fn a_small_file_grows_twentyfold_under_load(out_of_place: bool) {
    let d = dir(&format!("twenty-{out_of_place}"));
    let path = d.join("db");
    // Out of place the layout is made at creation for the largest size: say which.
    let max = out_of_place.then_some(32 * START_BYTES);
    let db = Db::open(&path, options(out_of_place, max)).unwrap();
    // Out of place a file smaller than the fewest zones its layout needs starts at those.
    let created = file_bytes(&path);
    assert!(created == START_BYTES || out_of_place && created < 2 * START_BYTES, "{created}");
    let target = 20 * START_BYTES;
    std::thread::scope(|s| {
        for t in 0..4u32 {
            let db = &db;
            let path = &path;
            s.spawn(move || {
                let mut i = 0u32;
                // Bounded: each batch adds about 4 KiB; the file reaches its target long before.
                while file_bytes(path) < target && i < 200_000 {
                    let mut b = WriteBatch::new();
                    for j in i..i + 8 {
                        b.put("grow", &key(t, j), &value(t, j));
                    }
                    db.write(&b).unwrap();
                    i += 8;
                }
                i
            });
        }
    });
    let pages = db.stats().page_capacity;
    assert!(file_bytes(&path) >= target, "grew to {} bytes", file_bytes(&path));
    assert!(db.check().unwrap().is_clean());
    db.close().unwrap();
    let db = Db::open(&path, options(out_of_place, max)).unwrap();
    assert!(db.stats().page_capacity >= pages, "a reopen keeps the grown size");
    let report = db.check().unwrap();
    assert!(report.is_clean(), "{report}");
    let tree = db.tree("grow").unwrap();
    let mut n = 0u32;
    for item in tree.iter() {
        let (k, v) = item.unwrap();
        let name = String::from_utf8(k.clone()).unwrap();
        let (t, i) = name[1..].split_once('-').unwrap();
        assert_eq!(v, value(t.parse().unwrap(), i.parse().unwrap()), "{name}");
        n += 1;
    }
    assert!(n > 0);
    db.close().unwrap();
}

#[test]
fn a_small_file_grows_twentyfold_under_load_in_place() {
    a_small_file_grows_twentyfold_under_load(false);
}

#[test]
fn a_small_file_grows_twentyfold_under_load_out_of_place() {
    a_small_file_grows_twentyfold_under_load(true);
}

/// At `max_file_bytes` a write fails with `OutOfSpace`, changes nothing (the database is not
/// poisoned and checks clean), and every write committed before is readable after a reopen;
/// deleting makes room again.
fn at_its_limit_a_write_is_out_of_space_and_nothing_committed_is_lost(out_of_place: bool) {
    let d = dir(&format!("limit-{out_of_place}"));
    let path = d.join("db");
    let max_bytes = 4 * START_BYTES;
    let db = Db::open(&path, options(out_of_place, Some(max_bytes))).unwrap();
    let mut model = BTreeMap::new();
    let mut refused = None;
    // Bounded: the file holds about 1 MiB, every seventh write adds 9 KiB.
    for i in 0..20_000u32 {
        let mut b = WriteBatch::new();
        b.put("full", &key(0, i), &value(0, i));
        match db.write(&b) {
            Ok(()) => {
                model.insert(key(0, i), value(0, i));
            }
            Err(e) => {
                refused = Some(e);
                break;
            }
        }
    }
    let err = refused.expect("a 1 MiB file filled without an error");
    // The allocator ran out of pages; `cause` says why the store did not grow.
    let cause = match &err {
        wafer::CommitError::OutOfSpace(OutOfSpaceError::DeviceFull { cause, .. }) => &**cause,
        _ => panic!("{err}"),
    };
    assert!(matches!(cause, OutOfSpaceError::FileLimit { .. }), "{err}");
    assert!(file_bytes(&path) <= max_bytes, "{} bytes", file_bytes(&path));
    let report = db.check().unwrap();
    assert!(report.is_clean(), "{report}");
    db.close().unwrap();

    let db = Db::open(&path, options(out_of_place, Some(max_bytes))).unwrap();
    let tree = db.tree("full").unwrap();
    let got: BTreeMap<Vec<u8>, Vec<u8>> = tree.iter().map(|r| r.unwrap()).collect();
    assert_eq!(got.len(), model.len());
    assert!(got == model, "the committed batches read back as written");
    // Freed pages are reused: after deleting half, writes succeed again within the limit.
    let doomed: Vec<Vec<u8>> = model.keys().step_by(2).cloned().collect();
    for k in &doomed {
        tree.delete(k).unwrap();
    }
    tree.put(b"after", b"room again").unwrap();
    assert_eq!(tree.get(b"after").unwrap(), Some(b"room again".to_vec()));
    assert!(file_bytes(&path) <= max_bytes);
    assert!(db.check().unwrap().is_clean());
    db.close().unwrap();
}

#[test]
fn at_its_limit_a_write_is_out_of_space_and_nothing_committed_is_lost_in_place() {
    at_its_limit_a_write_is_out_of_space_and_nothing_committed_is_lost(false);
}

#[test]
fn at_its_limit_a_write_is_out_of_space_and_nothing_committed_is_lost_out_of_place() {
    at_its_limit_a_write_is_out_of_space_and_nothing_committed_is_lost(true);
}

/// A device of fixed size (here a memory device) never grows: `OutOfSpace` at its capacity,
/// as before growth existed.
#[test]
fn a_fixed_device_does_not_grow() {
    let data = std::sync::Arc::new(wafer::device::MemoryDevice::new(START_BYTES));
    let wal = std::sync::Arc::new(wafer::device::MemoryDevice::new(4 << 20));
    let db = Db::open_on_devices(data.clone(), wal, options(false, None)).unwrap();
    let tree = db.tree("fixed").unwrap();
    let mut err = None;
    for i in 0..1_000u32 {
        if let Err(e) = tree.put(&key(0, i), &value(1, i)) {
            err = Some(e);
            break;
        }
    }
    let err = err.expect("a fixed device filled without an error");
    // The allocator ran out of pages; `cause` says why the store did not grow.
    let cause = match &err {
        wafer::CommitError::OutOfSpace(OutOfSpaceError::DeviceFull { cause, .. }) => &**cause,
        _ => panic!("{err}"),
    };
    assert!(matches!(cause, OutOfSpaceError::FileGrowth { .. }), "{err}");
    use wafer::device::Device;
    assert_eq!(data.capacity_bytes(), START_BYTES);
}
