#![allow(clippy::unwrap_used)] // Tests may unwrap.
//! Damaged logs and files each give their own clear error through `Db::open`: a corrupt record
//! in the middle of the WAL, a truncated WAL file, a missing WAL file, a truncated data file;
//! and a torn tail is cut silently while a Sync-acknowledged write survives.
use std::os::unix::fs::FileExt;
use std::path::PathBuf;
use wafer::wal::WalError;
use wafer::{Db, Durability, Error, Options};

fn options() -> Options {
    let mut o = Options::test_min();
    // No checkpoint during the test: the whole log stays after the redo start.
    o.checkpoint_log_bytes = 3 << 20;
    o
}

/// A database whose log holds ~150 Sync commits (one log block each), left as after a crash.
fn crashed_db(tag: &str) -> (PathBuf, PathBuf) {
    let path = std::env::temp_dir().join(format!("wafer-err-{tag}-{}.db", std::process::id()));
    let wal = wafer::db::wal_path(&path);
    let _ = std::fs::remove_file(&path);
    let _ = std::fs::remove_file(&wal);
    let db = Db::open(&path, options()).unwrap();
    let t = db.tree("t").unwrap();
    for i in 0..150u32 {
        t.put_with(&i.to_be_bytes(), &[7u8; 100], Durability::Sync).unwrap();
    }
    drop(db); // Crash: no close.
    (path, wal)
}

fn cleanup(path: &PathBuf, wal: &PathBuf) {
    let _ = std::fs::remove_file(path);
    let _ = std::fs::remove_file(wal);
}

#[test]
fn crash_without_damage_recovers_every_sync_write() {
    let (path, wal) = crashed_db("clean");
    let db = Db::open(&path, options()).unwrap();
    let r = db.stats().recovery.unwrap();
    assert!(r.redo.batches >= 150, "{r:?}");
    let t = db.tree("t").unwrap();
    for i in 0..150u32 {
        assert_eq!(t.get(&i.to_be_bytes()).unwrap(), Some(vec![7u8; 100]), "key {i}");
    }
    db.close().unwrap();
    cleanup(&path, &wal);
}

#[test]
fn corrupt_record_in_the_middle_of_the_log_is_an_error() {
    let (path, wal) = crashed_db("mid");
    let f = std::fs::OpenOptions::new().write(true).open(&wal).unwrap();
    // Log block slot 60 (after the two header blocks): inside the durable log, with later
    // synced blocks after it, so it cannot pass for a torn tail.
    f.write_all_at(&[0xA5; 16], (2 + 60) * 4096 + 200).unwrap();
    drop(f);
    let err = Db::open(&path, options()).unwrap_err();
    assert!(matches!(err, Error::Wal(WalError::CorruptRecord { .. })), "{err}");
    assert!(err.to_string().contains("corrupt WAL at lsn"), "{err}");
    cleanup(&path, &wal);
}

#[test]
fn torn_tail_is_cut_and_acknowledged_writes_stay() {
    let (path, wal) = crashed_db("tail");
    // Garbage in the block after the last written one (as a torn, never-synced flush).
    let len = std::fs::metadata(&wal).unwrap().len();
    let f = std::fs::OpenOptions::new().write(true).open(&wal).unwrap();
    let rf = std::fs::File::open(&wal).unwrap();
    let mut buf = vec![0u8; 4096];
    let mut last = 0;
    for slot in 0..(len / 4096 - 2) {
        rf.read_exact_at(&mut buf, (2 + slot) * 4096).unwrap();
        if buf.iter().any(|b| *b != 0) {
            last = slot;
        }
    }
    f.write_all_at(&[0x5A; 1000], (2 + last + 1) * 4096).unwrap();
    drop(f);
    let db = Db::open(&path, options()).unwrap();
    let t = db.tree("t").unwrap();
    assert_eq!(t.get(&149u32.to_be_bytes()).unwrap(), Some(vec![7u8; 100]));
    db.close().unwrap();
    cleanup(&path, &wal);
}

#[test]
fn truncated_wal_file_is_an_error() {
    let (path, wal) = crashed_db("trunc");
    let f = std::fs::OpenOptions::new().write(true).open(&wal).unwrap();
    f.set_len(64 * 4096).unwrap();
    drop(f);
    let err = Db::open(&path, options()).unwrap_err();
    assert!(matches!(err, Error::Wal(WalError::Truncated { .. })), "{err}");
    let f = std::fs::OpenOptions::new().write(true).open(&wal).unwrap();
    f.set_len(100).unwrap();
    drop(f);
    let err = Db::open(&path, options()).unwrap_err();
    assert!(matches!(err, Error::Wal(WalError::Truncated { actual_bytes: 100, .. })), "{err}");
    cleanup(&path, &wal);
}

#[test]
fn missing_wal_file_is_an_error() {
    let (path, wal) = crashed_db("missing");
    std::fs::remove_file(&wal).unwrap();
    let err = Db::open(&path, options()).unwrap_err();
    assert!(matches!(err, Error::WalFileMissing { .. }), "{err}");
    assert!(err.to_string().contains("missing"), "{err}");
    assert!(!wal.exists(), "opening must not create an empty log in its place");
    cleanup(&path, &wal);
}

#[test]
fn truncated_data_file_is_an_error() {
    let (path, wal) = crashed_db("data");
    let f = std::fs::OpenOptions::new().write(true).open(&path).unwrap();
    f.set_len(1 << 20).unwrap();
    drop(f);
    let err = Db::open(&path, options()).unwrap_err();
    assert!(matches!(&err, Error::Corrupt(m) if m.contains("truncated")), "{err}");
    cleanup(&path, &wal);
}
