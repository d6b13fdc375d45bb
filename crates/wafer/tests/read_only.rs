#![allow(clippy::unwrap_used)] // Tests may unwrap.
//! Read-only opens: shared with each other, never beside a writer, and never writing a byte,
//! even when the database needs recovery (it runs in memory).
use std::path::{Path, PathBuf};
use wafer::{Db, DbOpenError, OpenError, Options, WriteBatch};

fn dir(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("wafer-read-only-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

fn options(out_of_place: bool) -> Options {
    let mut o = Options::test_min().with_buffer_pool_bytes(64 * 4096).with_blobs(600);
    o.file_capacity_bytes = 16 << 20;
    o.wal_capacity_bytes = 4 << 20;
    o.checkpoint_log_bytes = 1 << 20;
    if out_of_place {
        o = o.out_of_place();
    }
    o
}

fn digest(path: &Path) -> (u32, u32) {
    let wal = wafer::db::wal_path(path);
    (crc32c::crc32c(&std::fs::read(path).unwrap()), crc32c::crc32c(&std::fs::read(wal).unwrap()))
}

fn value(i: u32) -> Vec<u8> {
    format!("{i};").repeat(1 + (i as usize * 13) % 400).into_bytes()
}

/// A database left by a crash (dropped without close, commits only in the log) opens
/// read-only with every commit readable, refuses writes, and its files stay byte for byte as
/// they were; a writer then recovers it as usual.
fn crashed_database_reads_without_writing(out_of_place: bool) {
    let d = dir(&format!("crash-{out_of_place}"));
    let path = d.join("db");
    let db = Db::open(&path, options(out_of_place)).unwrap();
    for chunk in 0..20u32 {
        let mut b = WriteBatch::new();
        for i in chunk * 50..(chunk + 1) * 50 {
            b.put("t", format!("k{i:05}").as_bytes(), &value(i));
        }
        db.write_with(&b, wafer::Durability::Sync).unwrap();
    }
    drop(db); // A crash: no checkpoint, the last commits are only in the log.
    let before = digest(&path);
    let ro = Db::open(&path, options(out_of_place).read_only()).unwrap();
    let again = Db::open(&path, options(out_of_place).read_only()).unwrap();
    let t = ro.tree("t").unwrap();
    assert_eq!(t.iter().count(), 1000);
    assert_eq!(t.get(b"k00999").unwrap(), Some(value(999)));
    assert_eq!(again.tree("t").unwrap().get(b"k00007").unwrap(), Some(value(7)));
    assert!(ro.stats().recovery.is_some_and(|r| r.redo.records > 0), "recovery ran");
    assert!(matches!(t.put(b"x", b"y"), Err(wafer::CommitError::ReadOnly)));
    assert!(matches!(ro.tree("new"), Err(wafer::CommitError::ReadOnly)));
    assert!(matches!(ro.drop_tree("t"), Err(wafer::CommitError::ReadOnly)));
    assert!(matches!(ro.checkpoint(), Err(wafer::MaintenanceError::ReadOnly)));
    let snap = ro.snapshot().unwrap();
    assert_eq!(snap.tree("t").iter().count(), 1000);
    let writer = Db::open(&path, options(out_of_place));
    assert!(matches!(writer, Err(DbOpenError::Refused(OpenError::Locked { .. }))), "{writer:?}");
    drop(snap);
    ro.close().unwrap();
    drop(again);
    assert_eq!(digest(&path), before, "a read-only open wrote to the files");
    let db = Db::open(&path, options(out_of_place)).unwrap();
    let reader = Db::open(&path, options(out_of_place).read_only());
    assert!(matches!(reader, Err(DbOpenError::Refused(OpenError::Locked { .. }))), "{reader:?}");
    assert_eq!(db.tree("t").unwrap().iter().count(), 1000);
    assert!(db.check().unwrap().is_clean());
    db.close().unwrap();
    let _ = std::fs::remove_dir_all(&d);
}

#[test]
fn a_crashed_database_opens_read_only_without_a_write_in_place() {
    crashed_database_reads_without_writing(false);
}

#[test]
fn a_crashed_database_opens_read_only_without_a_write_out_of_place() {
    crashed_database_reads_without_writing(true);
}

#[test]
fn a_read_only_open_never_creates() {
    let d = dir("missing");
    let r = Db::open(d.join("none"), options(false).read_only());
    assert!(matches!(r, Err(DbOpenError::Refused(OpenError::Missing { .. }))), "{r:?}");
    assert!(!d.join("none").exists() && !wafer::db::wal_path(&d.join("none")).exists());
    let _ = std::fs::remove_dir_all(&d);
}
