#![allow(clippy::unwrap_used)] // Tests may unwrap.
//! Range deletes, clears and tree drops: what they free, what they log, and that a reopen
//! and `Db::check` agree. Random interleavings with other writes are in `model.rs`; power cuts
//! during them in `crash.rs`.
use std::sync::Arc;
use wafer::device::MemoryDevice;
use wafer::{Db, Options};

const KEYS: u32 = 20_000;
/// Values of 1,500 bytes take a page each out of line.
const BLOB_KEYS: u32 = 4_000;

fn key(i: u32) -> Vec<u8> {
    format!("key{i:08}").into_bytes()
}

fn value(i: u32, len: usize) -> Vec<u8> {
    (0..len).map(|j| (i as usize * 31 + j) as u8).collect()
}

struct Devices {
    data: Arc<MemoryDevice>,
    wal: Arc<MemoryDevice>,
}

impl Devices {
    fn new() -> Devices {
        Devices {
            data: Arc::new(MemoryDevice::new(64 << 20)),
            wal: Arc::new(MemoryDevice::new(16 << 20)),
        }
    }
    fn open(&self, options: &Options) -> Db {
        Db::open_on_devices(self.data.clone(), self.wal.clone(), options.clone()).unwrap()
    }
}

fn options(out_of_place: bool, blobs: bool) -> Options {
    let mut o = Options::test_min().with_buffer_pool_bytes(256 * 4096);
    o.wal_capacity_bytes = 16 << 20;
    o.checkpoint_log_bytes = 4 << 20;
    if out_of_place {
        o = o.out_of_place();
    }
    if blobs {
        o = o.with_blobs(1000);
    }
    o
}

fn load(db: &Db, name: &str, value_len: usize) {
    load_n(db, name, value_len, KEYS);
}

fn load_n(db: &Db, name: &str, value_len: usize, keys: u32) {
    let t = db.tree(name).unwrap();
    for chunk in (0..keys).collect::<Vec<_>>().chunks(500) {
        let mut b = wafer::WriteBatch::new();
        for i in chunk {
            b.put(name, &key(*i), &value(*i, value_len));
        }
        db.write(&b).unwrap();
    }
    assert_eq!(t.get(&key(7)).unwrap(), Some(value(7, value_len)));
}

fn wal_payload_bytes(db: &Db) -> u64 {
    db.stats().wal.map(|w| w.payload_bytes_appended).unwrap_or(0)
}

/// Most of a tree removed by one range delete: whole leaves go to the free list for a small
/// record each (far below a delete record per key), the pages are reused by the next load,
/// and the removal survives a reopen.
fn range_delete_frees_and_reuses(out_of_place: bool) {
    let devs = Devices::new();
    let o = options(out_of_place, false);
    let db = devs.open(&o);
    load(&db, "t", 100);
    let t = db.tree("t").unwrap();
    let loaded_pages = db.stats().allocated_pages;
    let wal_before = wal_payload_bytes(&db);
    t.delete_range(key(1_000)..key(19_000)).unwrap();
    let logged = wal_payload_bytes(&db) - wal_before;
    // The same 18,000 entries of a twin tree deleted key by key, for comparison.
    load(&db, "twin", 100);
    let twin = db.tree("twin").unwrap();
    let wal_before = wal_payload_bytes(&db);
    for i in 1_000..19_000 {
        assert!(twin.delete(&key(i)).unwrap());
    }
    let per_key = wal_payload_bytes(&db) - wal_before;
    eprintln!("18,000 entries removed: range delete {logged} log bytes, key by key {per_key}");
    // A freed leaf of 22 entries logs about 200 bytes (its free page's image, compressed, and
    // its garbage entry in and out); a delete record takes the key and 35 bytes.
    assert!(logged * 3 < per_key, "the cut logged {logged} bytes, deletes {per_key}");
    db.drop_tree("twin").unwrap();
    let after_pages = db.stats().allocated_pages;
    assert!(
        after_pages * 5 < loaded_pages,
        "pages {loaded_pages} -> {after_pages}: the cut freed too little"
    );
    assert_eq!(t.get(&key(999)).unwrap(), Some(value(999, 100)));
    assert_eq!(t.get(&key(1_000)).unwrap(), None);
    assert_eq!(t.get(&key(19_000)).unwrap(), Some(value(19_000, 100)));
    assert_eq!(t.iter().count(), 2_000);
    let report = db.check().unwrap();
    assert!(report.is_clean(), "{report}");
    // A crash right after the cut (no close): redo brings it back.
    drop(db);
    let db = devs.open(&o);
    let t = db.tree("t").unwrap();
    assert_eq!(t.iter().count(), 2_000);
    assert_eq!(t.range(key(0)..key(1_000)).count(), 1_000);
    let high_water = db.stats().high_water_pages;
    load(&db, "t", 100);
    if !out_of_place {
        // The freed pages came back from the free list: the file did not grow for them.
        let grown = db.stats().high_water_pages - high_water;
        assert!(grown * 10 < loaded_pages, "high water grew by {grown} pages on the reload");
    }
    let report = db.check().unwrap();
    assert!(report.is_clean(), "{report}");
    db.close().unwrap();
}

#[test]
fn range_delete_frees_whole_leaves_and_reuses_them_in_place() {
    range_delete_frees_and_reuses(false);
}

#[test]
fn range_delete_frees_whole_leaves_and_reuses_them_out_of_place() {
    range_delete_frees_and_reuses(true);
}

/// Dropping a tree with out-of-line values frees its pages and its blobs; its handles fail,
/// its name starts an empty tree, and the other trees are untouched, across a reopen.
fn drop_tree(out_of_place: bool) {
    let devs = Devices::new();
    let o = options(out_of_place, true);
    let db = devs.open(&o);
    load(&db, "keep", 40);
    let kept_pages = db.check().unwrap().tree_pages;
    load_n(&db, "gone", 1_500, BLOB_KEYS);
    let gone = db.tree("gone").unwrap();
    let blobs_before = db.stats().blobs.unwrap();
    assert!(db.drop_tree("gone").unwrap());
    assert!(!db.drop_tree("gone").unwrap(), "a second drop finds nothing");
    assert!(matches!(gone.get(&key(1)), Err(wafer::ReadError::TreeDropped(_))));
    assert!(matches!(gone.get_reader(&key(1)), Err(wafer::ReadError::TreeDropped(_))));
    assert!(matches!(gone.put(b"a", b"b"), Err(wafer::CommitError::TreeDropped(_))));
    assert!(matches!(gone.delete_range(..key(5)), Err(wafer::CommitError::TreeDropped(_))));
    let blobs_after = db.stats().blobs.unwrap();
    assert_eq!(blobs_after.blobs_freed - blobs_before.blobs_freed, u64::from(BLOB_KEYS));
    assert_eq!(db.tree_names().unwrap(), vec!["keep".to_string()]);
    // The garbage tree's root is the one page more.
    let tree_pages = db.check().unwrap().tree_pages;
    assert_eq!(tree_pages, kept_pages + 1, "the dropped tree's pages stay in use");
    assert_eq!(db.tree("gone").unwrap().iter().count(), 0);
    let report = db.check().unwrap();
    assert!(report.is_clean(), "{report}");
    drop(db);
    let db = devs.open(&o);
    assert_eq!(db.tree_names().unwrap(), vec!["gone".to_string(), "keep".to_string()]);
    assert_eq!(db.tree("gone").unwrap().iter().count(), 0);
    assert_eq!(db.tree("keep").unwrap().iter().count(), KEYS as usize);
    // The blob space took the dropped values back: a reload fits.
    load_n(&db, "gone", 1_500, BLOB_KEYS);
    let report = db.check().unwrap();
    assert!(report.is_clean(), "{report}");
    db.close().unwrap();
}

#[test]
fn dropping_a_tree_frees_its_pages_and_blobs_in_place() {
    drop_tree(false);
}

#[test]
fn dropping_a_tree_frees_its_pages_and_blobs_out_of_place() {
    drop_tree(true);
}

/// `clear` keeps the tree and its name; a range outside every key and an empty range change
/// nothing.
#[test]
fn clear_and_empty_ranges() {
    let devs = Devices::new();
    let o = options(false, false);
    let db = devs.open(&o);
    load(&db, "t", 60);
    let t = db.tree("t").unwrap();
    t.delete_range(b"zzz".as_slice()..).unwrap();
    t.delete_range(key(5)..key(5)).unwrap();
    assert_eq!(t.iter().count(), KEYS as usize);
    t.delete_range(key(5)..=key(5)).unwrap();
    assert_eq!(t.iter().count(), KEYS as usize - 1);
    assert_eq!(t.get(&key(5)).unwrap(), None);
    t.clear().unwrap();
    assert_eq!(t.iter().count(), 0);
    assert_eq!(db.tree_names().unwrap(), vec!["t".to_string()]);
    t.put(b"again", b"1").unwrap();
    let report = db.check().unwrap();
    assert!(report.is_clean(), "{report}");
    drop(db);
    let db = devs.open(&o);
    let t = db.tree("t").unwrap();
    assert_eq!(t.iter().map(|r| r.unwrap().0).collect::<Vec<_>>(), vec![b"again".to_vec()]);
}
