#![allow(clippy::unwrap_used)] // Tests may unwrap.
//! Damaged logs and files each give their own clear error through `Db::open`: a corrupt record
//! in the middle of the WAL, a truncated WAL file, a missing WAL file, a truncated data file;
//! and a torn tail is cut silently while a Sync-acknowledged write survives.
use std::os::unix::fs::FileExt;
use std::path::PathBuf;
use wafer::error::SizeMismatch;
use wafer::error::WalError;
use wafer::{CreateMode, Db, DbOpenError, Durability, OpenError, Options, StorageError};

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
    assert!(
        matches!(err, DbOpenError::Storage(StorageError::Wal(WalError::CorruptRecord { .. }))),
        "{err}"
    );
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
    assert!(
        matches!(err, DbOpenError::Storage(StorageError::Wal(WalError::Truncated { .. }))),
        "{err}"
    );
    let f = std::fs::OpenOptions::new().write(true).open(&wal).unwrap();
    f.set_len(100).unwrap();
    drop(f);
    let err = Db::open(&path, options()).unwrap_err();
    assert!(
        matches!(
            err,
            DbOpenError::Storage(StorageError::Wal(WalError::Truncated { actual_bytes: 100, .. }))
        ),
        "{err}"
    );
    cleanup(&path, &wal);
}

#[test]
fn missing_wal_file_is_an_error() {
    let (path, wal) = crashed_db("missing");
    std::fs::remove_file(&wal).unwrap();
    let err = Db::open(&path, options()).unwrap_err();
    assert!(matches!(err, DbOpenError::WalFileMissing { .. }), "{err}");
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
    assert!(
        matches!(&err, DbOpenError::Refused(OpenError::SizeMismatch { what, detail: SizeMismatch::Truncated { .. } })
            if what.contains("wafer-err-data")),
        "{err}"
    );
    cleanup(&path, &wal);
}

/// Bytes of a file, to show a refused open left it alone.
fn contents(path: &PathBuf) -> Vec<u8> {
    std::fs::read(path).unwrap()
}

/// The repro: 1,500 Sync writes, a crash, the data file cut to zero bytes. The open
/// used to take the empty file as "create" and return an empty database.
#[test]
fn empty_data_file_beside_a_wal_is_refused_and_left_alone() {
    let path = std::env::temp_dir().join(format!("wafer-err-empty-{}.db", std::process::id()));
    let wal = wafer::db::wal_path(&path);
    cleanup(&path, &wal);
    let db = Db::open(&path, Options::test_min().with_durability(Durability::Sync)).unwrap();
    let t = db.tree("t").unwrap();
    for i in 0..1500u32 {
        t.put(&i.to_be_bytes(), &[3u8; 40]).unwrap();
    }
    drop((t, db)); // Crash: the tree handle held the database (and its file locks) too.
    std::fs::OpenOptions::new().write(true).open(&path).unwrap().set_len(0).unwrap();
    let wal_before = contents(&wal);
    let err = Db::open(&path, options()).unwrap_err();
    assert!(
        matches!(&err, DbOpenError::Refused(OpenError::EmptyDataFile { what, .. }) if what.contains("wafer-err-empty")),
        "{err}"
    );
    assert_eq!(std::fs::metadata(&path).unwrap().len(), 0, "nothing written to the data file");
    assert!(contents(&wal) == wal_before, "nothing written to the WAL");
    cleanup(&path, &wal);
}

/// Page 0 zeroed (after a crash, and after a clean close whose checkpoint truncated the log):
/// refused both ways, naming the file, with nothing written.
#[test]
fn zeroed_superblock_beside_a_wal_with_commits_is_refused() {
    for clean_close in [false, true] {
        let (path, wal) = crashed_db(if clean_close { "zero-closed" } else { "zero-crashed" });
        if clean_close {
            Db::open(&path, options()).unwrap().close().unwrap();
        }
        let f = std::fs::OpenOptions::new().write(true).open(&path).unwrap();
        f.write_all_at(&[0u8; 4096], options().data_offset_bytes).unwrap();
        drop(f);
        let (data_before, wal_before) = (contents(&path), contents(&wal));
        let err = Db::open(&path, options()).unwrap_err();
        assert!(
            matches!(&err, DbOpenError::Refused(OpenError::BlankSuperblock { what, .. }) if what.contains("wafer-err-zero")),
            "clean_close {clean_close}: {err}"
        );
        assert!(contents(&path) == data_before && contents(&wal) == wal_before, "files untouched");
        cleanup(&path, &wal);
    }
}

/// A file that is not a database, beside a WAL or not: refused before any byte changes (the
/// open used to extend it and write its superblock region).
#[test]
fn a_file_that_is_not_a_database_is_refused_untouched() {
    let path = std::env::temp_dir().join(format!("wafer-err-foreign-{}.db", std::process::id()));
    let wal = wafer::db::wal_path(&path);
    cleanup(&path, &wal);
    let text: Vec<u8> = (0..300_000u32).flat_map(|i| (i % 251).to_le_bytes()).collect();
    std::fs::write(&path, &text).unwrap();
    std::fs::write(&wal, &text).unwrap();
    let err = Db::open(&path, options()).unwrap_err();
    assert!(matches!(&err, DbOpenError::Refused(OpenError::NotWaferDatabase { .. })), "{err}");
    assert!(contents(&path) == text && contents(&wal) == text, "files untouched");
    // The same bytes on a device without a WAL.
    let dev =
        std::sync::Arc::new(wafer::device::MemoryDevice::new(text.len() as u64 / 4096 * 4096));
    use wafer::device::Device;
    dev.write_at(0, &text[..text.len() / 4096 * 4096], wafer::device::WritePurpose::Metadata)
        .unwrap();
    let err = Db::open_on(dev, options()).unwrap_err();
    assert!(
        matches!(&err, DbOpenError::Refused(OpenError::NotWaferDatabase { what, .. }) if what == "data device"),
        "{err}"
    );
    cleanup(&path, &wal);
}

#[test]
fn create_modes_are_explicit() {
    let path = std::env::temp_dir().join(format!("wafer-err-create-{}.db", std::process::id()));
    let wal = wafer::db::wal_path(&path);
    cleanup(&path, &wal);
    let err = Db::open(&path, options().with_create(CreateMode::Never)).unwrap_err();
    assert!(matches!(&err, DbOpenError::Refused(OpenError::Missing { .. })), "{err}");
    assert!(!path.exists() && !wal.exists(), "Never creates nothing");
    let db = Db::open(&path, options().with_create(CreateMode::New)).unwrap();
    db.tree("t").unwrap().put(b"k", b"v").unwrap();
    db.close().unwrap();
    let err = Db::open(&path, options().with_create(CreateMode::New)).unwrap_err();
    assert!(matches!(&err, DbOpenError::Refused(OpenError::AlreadyExists { .. })), "{err}");
    let db = Db::open(&path, options().with_create(CreateMode::Never)).unwrap();
    assert_eq!(db.tree("t").unwrap().get(b"k").unwrap(), Some(b"v".to_vec()));
    assert!(db.check().unwrap().is_clean());
    db.close().unwrap();
    // The WAL without its data file: not a creation.
    std::fs::remove_file(&path).unwrap();
    let err = Db::open(&path, options()).unwrap_err();
    assert!(matches!(&err, DbOpenError::Refused(OpenError::DataFileMissing { .. })), "{err}");
    assert!(!path.exists(), "no data file created beside a foreign log");
    cleanup(&path, &wal);
    // Devices: a blank one is formatted only when the options allow creation.
    let dev = std::sync::Arc::new(wafer::device::MemoryDevice::new(4 << 20));
    let err = Db::open_on(dev.clone(), options().with_create(CreateMode::Never)).unwrap_err();
    assert!(matches!(&err, DbOpenError::Refused(OpenError::Missing { .. })), "{err}");
    Db::open_on(dev.clone(), options()).unwrap().close().unwrap();
    let err = Db::open_on(dev, options().with_create(CreateMode::New)).unwrap_err();
    assert!(matches!(&err, DbOpenError::Refused(OpenError::AlreadyExists { .. })), "{err}");
}
