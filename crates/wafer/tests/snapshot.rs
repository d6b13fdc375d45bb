#![allow(clippy::unwrap_used)] // Tests may unwrap.
//! Snapshots beside writers: a consistent view across trees while batches run in another
//! thread, blobs kept from reuse while a snapshot may read them (GC turning zones over, out of
//! place), what a snapshot keeps reported and freed, and expiry at the bound. Random
//! interleavings with every other operation are in `model.rs`.
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use wafer::device::MemoryDevice;
use wafer::{Db, Options, WriteBatch};

fn open(out_of_place: bool, data_bytes: u64, options: Options) -> Db {
    let mut o = options;
    o.wal_capacity_bytes = 8 << 20;
    o.checkpoint_log_bytes = 2 << 20;
    if out_of_place {
        o = o.out_of_place();
    }
    let data = Arc::new(MemoryDevice::new(data_bytes));
    let wal = Arc::new(MemoryDevice::new(8 << 20));
    Db::open_on_devices(data, wal, o).unwrap()
}

fn key(i: u64) -> Vec<u8> {
    format!("k{i:06}").into_bytes()
}

/// A writer moves a counter through two trees in one batch per step; every snapshot taken
/// meanwhile sees both trees at the same step, and keeps seeing it.
fn consistent_across_trees(out_of_place: bool) {
    let db = open(out_of_place, 32 << 20, Options::test_min().with_buffer_pool_bytes(64 * 4096));
    let stop = Arc::new(AtomicBool::new(false));
    let written = Arc::new(std::sync::atomic::AtomicU64::new(0));
    let writer = {
        let (db, stop, written) = (db.clone(), stop.clone(), written.clone());
        std::thread::spawn(move || {
            let mut step = 0u64;
            while !stop.load(Ordering::Relaxed) && step < 200_000 {
                let mut b = WriteBatch::new();
                let v = step.to_le_bytes();
                for i in 0..20 {
                    b.put("left", &key(i * 37 % 500), &v).put("right", &key(i * 53 % 500), &v);
                }
                b.put("left", b"step", &v).put("right", b"step", &v);
                db.write(&b).unwrap();
                step += 1;
                written.store(step, Ordering::Relaxed);
            }
            step
        })
    };
    // The snapshots below are taken while the writer writes: wait for its first batch, so a
    // loaded machine that has not scheduled it yet does not leave them nothing to race
    // (bounded: 10 s).
    for _ in 0..10_000 {
        if written.load(Ordering::Relaxed) > 0 {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(1));
    }
    for _ in 0..50 {
        let snap = db.snapshot().unwrap();
        let left = snap.tree("left").get(b"step").unwrap();
        let right = snap.tree("right").get(b"step").unwrap();
        assert_eq!(left, right, "a snapshot saw half a batch");
        let entries: Vec<_> = snap.tree("left").iter().map(|r| r.unwrap()).collect();
        std::thread::sleep(std::time::Duration::from_millis(2));
        // Writers went on; the view did not.
        assert_eq!(snap.tree("left").get(b"step").unwrap(), left);
        let again: Vec<_> = snap.tree("left").iter().map(|r| r.unwrap()).collect();
        assert!(entries == again, "a snapshot's scan changed while writers ran");
    }
    stop.store(true, Ordering::Relaxed);
    let steps = writer.join().unwrap();
    assert!(steps > 0);
    assert_eq!(db.stats().snapshots.live, 0);
    assert_eq!(db.stats().snapshots.pages_kept, 0, "dropped snapshots keep nothing");
    let report = db.check().unwrap();
    assert!(report.is_clean(), "{report}");
}

#[test]
fn a_snapshot_sees_whole_batches_across_trees_in_place() {
    consistent_across_trees(false);
}

#[test]
fn a_snapshot_sees_whole_batches_across_trees_out_of_place() {
    consistent_across_trees(true);
}

/// Blobs overwritten many times under a snapshot stay readable through it (their runs are not
/// reused, and out of place GC keeps their pages while zones turn over); once it is dropped the
/// space is reused and the database checks clean.
fn blobs_kept_while_read(out_of_place: bool) {
    let mut o = Options::test_min().with_buffer_pool_bytes(64 * 4096).with_blobs(512);
    o.out_of_place.max_fill_percent = 99;
    let db = open(out_of_place, 24 << 20, o);
    let t = db.tree("blobs").unwrap();
    let value = |round: u64, i: u64| -> Vec<u8> {
        let unit = format!("{round}:{i};");
        unit.repeat(6000 / unit.len()).into_bytes()
    };
    for i in 0..100 {
        t.put(&key(i), &value(0, i)).unwrap();
    }
    let snap = db.snapshot().unwrap();
    for round in 1..=8 {
        for i in 0..100 {
            t.put(&key(i), &value(round, i)).unwrap();
        }
        db.checkpoint().unwrap();
    }
    let view = snap.tree("blobs");
    for i in (0..100).step_by(3) {
        assert_eq!(
            view.get(&key(i)).unwrap(),
            Some(value(0, i)),
            "blob {i} as the snapshot saw it"
        );
    }
    assert_eq!(view.iter().count(), 100);
    assert_eq!(t.get(&key(5)).unwrap(), Some(value(8, 5)));
    let gated = db.stats().blobs.unwrap();
    drop((view, snap));
    // More rounds reuse the runs the snapshot held (the space does not grow without bound).
    for round in 9..=20 {
        for i in 0..100 {
            t.put(&key(i), &value(round, i)).unwrap();
        }
        db.checkpoint().unwrap();
    }
    assert_eq!(t.get(&key(99)).unwrap(), Some(value(20, 99)));
    let report = db.check().unwrap();
    assert!(report.is_clean(), "{report}");
    assert!(gated.blobs_freed >= 800, "{gated:?}");
}

#[test]
fn blobs_a_snapshot_reads_are_kept_in_place() {
    blobs_kept_while_read(false);
}

#[test]
fn blobs_a_snapshot_reads_are_kept_out_of_place() {
    blobs_kept_while_read(true);
}

/// Past `snapshot_bytes_max` the oldest snapshot expires: its reads fail cleanly, a newer one
/// still reads, writers never fail, and the kept pages stay under the bound.
#[test]
fn a_snapshot_refuses_a_key_too_long_as_the_tree_does() {
    let db = open(false, 32 << 20, Options::test_min());
    let t = db.tree("t").unwrap();
    t.put(&key(1), b"v").unwrap();
    let snap = db.snapshot().unwrap();
    let long = vec![b'k'; 5_000];
    assert!(matches!(t.get(&long), Err(wafer::ReadError::KeyTooLarge { len: 5_000, .. })));
    let got = snap.tree("t").get(&long);
    assert!(matches!(got, Err(wafer::ReadError::KeyTooLarge { len: 5_000, .. })), "{got:?}");
    assert_eq!(snap.tree("t").get(&key(1)).unwrap(), Some(b"v".to_vec()));
}

#[test]
fn the_oldest_snapshot_expires_at_the_bound() {
    let mut o = Options::test_min().with_buffer_pool_bytes(64 * 4096);
    o.snapshot_bytes_max = 40 * 4096;
    let db = open(false, 32 << 20, o);
    let t = db.tree("t").unwrap();
    for i in 0..5_000 {
        t.put(&key(i), &[1u8; 100]).unwrap();
    }
    let old = db.snapshot().unwrap();
    for i in 0..5 {
        t.put(&key(i * 1000), &[2u8; 100]).unwrap();
    }
    let new = db.snapshot().unwrap();
    assert!(db.stats().snapshots.pages_kept > 0);
    // Updates all over the tree: far more pages than the bound.
    for i in (0..5_000).step_by(10) {
        t.put(&key(i), &[3u8; 100]).unwrap();
    }
    let stats = db.stats().snapshots;
    assert!(stats.bytes_kept <= 40 * 4096, "{stats:?}");
    assert!(stats.expired >= 1, "{stats:?}");
    assert!(matches!(old.tree("t").get(&key(1)), Err(wafer::ReadError::SnapshotExpired)));
    let scan: Result<Vec<_>, _> = old.tree("t").iter().collect();
    assert!(matches!(scan, Err(wafer::ReadError::SnapshotExpired)));
    match new.tree("t").get(&key(1000)) {
        Ok(v) => assert_eq!(v, Some(vec![2u8; 100])),
        Err(e) => assert!(matches!(e, wafer::ReadError::SnapshotExpired), "{e}"),
    }
    drop((old, new));
    assert_eq!(db.stats().snapshots.pages_kept, 0);
    assert_eq!(db.snapshot().unwrap().tree("t").get(&key(10)).unwrap(), Some(vec![3u8; 100]));
}

/// A tree dropped, cleared or created after a snapshot: the snapshot still sees it as it was.
#[test]
fn a_snapshot_outlives_drops_clears_and_new_trees() {
    let db = open(true, 32 << 20, Options::test_min().with_buffer_pool_bytes(64 * 4096));
    for name in ["a", "b"] {
        let t = db.tree(name).unwrap();
        for i in 0..3_000 {
            t.put(&key(i), name.as_bytes()).unwrap();
        }
    }
    let snap = db.snapshot().unwrap();
    assert!(db.drop_tree("a").unwrap());
    db.tree("b").unwrap().delete_range(key(100)..key(2_900)).unwrap();
    db.tree("c").unwrap().put(b"x", b"y").unwrap();
    assert_eq!(snap.tree_names(), vec!["a".to_string(), "b".to_string()]);
    assert_eq!(snap.tree("a").iter().count(), 3_000);
    assert_eq!(snap.tree("b").range(key(50)..key(150)).count(), 100);
    assert_eq!(snap.tree("c").iter().count(), 0);
    assert_eq!(snap.tree("b").prefix(b"k0029").rev().count(), 100);
    drop(snap);
    let report = db.check().unwrap();
    assert!(report.is_clean(), "{report}");
}

/// A backup taken while a writer runs is a database of its own, consistent as of one batch,
/// that checks clean; a second backup to the same path is refused.
#[test]
fn a_backup_beside_a_writer_opens_on_its_own_and_checks_clean() {
    let dir = std::env::temp_dir().join(format!("wafer-backup-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let mut o = Options::test_min().with_buffer_pool_bytes(64 * 4096).with_blobs(700);
    o.file_capacity_bytes = 32 << 20;
    o.wal_capacity_bytes = 8 << 20;
    o.checkpoint_log_bytes = 2 << 20;
    let db = Db::open(dir.join("src.db"), o.clone()).unwrap();
    let stop = Arc::new(AtomicBool::new(false));
    let writer = {
        let (db, stop) = (db.clone(), stop.clone());
        std::thread::spawn(move || {
            for step in 0u64..100_000 {
                if stop.load(Ordering::Relaxed) {
                    break;
                }
                let v = step.to_le_bytes().repeat(1 + step as usize % 200);
                let mut b = WriteBatch::new();
                b.put("left", &key(step % 300), &v).put("right", &key(step % 300), &v);
                b.put("left", b"step", &v).put("right", b"step", &v);
                db.write(&b).unwrap();
            }
        })
    };
    std::thread::sleep(std::time::Duration::from_millis(30));
    let target = dir.join("backup.db");
    let totals = db.backup_to(&target).unwrap();
    stop.store(true, Ordering::Relaxed);
    writer.join().unwrap();
    assert_eq!(totals.trees, 2);
    let err = db.backup_to(&target).unwrap_err();
    assert!(
        matches!(err, wafer::MaintenanceError::Open(wafer::OpenError::AlreadyExists { .. })),
        "{err}"
    );
    for not_a_file in [format!("{}/", dir.join("new").display()), dir.display().to_string()] {
        let err = db.backup_to(&not_a_file).unwrap_err();
        assert!(
            matches!(err, wafer::MaintenanceError::Open(wafer::OpenError::NotAFilePath { .. })),
            "{err}"
        );
    }
    db.close().unwrap();
    let copy = Db::open(&target, o.with_create(wafer::CreateMode::Never)).unwrap();
    let (left, right) = (copy.tree("left").unwrap(), copy.tree("right").unwrap());
    assert_eq!(left.get(b"step").unwrap(), right.get(b"step").unwrap(), "half a batch");
    let l: Vec<_> = left.iter().map(|r| r.unwrap()).collect();
    let r: Vec<_> = right.iter().map(|r| r.unwrap()).collect();
    assert!(l == r, "the two trees of one batch differ in the backup");
    assert_eq!(l.len() as u64 * 2, totals.entries);
    let report = copy.check().unwrap();
    assert!(report.is_clean(), "{report}");
    let leftovers: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.contains(".backup-"))
        .collect();
    assert!(leftovers.is_empty(), "temporary files left: {leftovers:?}");
    drop(copy);
    let _ = std::fs::remove_dir_all(&dir);
}
