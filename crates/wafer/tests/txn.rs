#![allow(clippy::unwrap_used)]
//! Transactions: read-your-writes, merged scans, abort, atomic commit across trees, and key
//! locks that make read-modify-write transactions from several threads serializable.
use std::ops::Bound;
use std::sync::Arc;
use std::time::Duration;
use wafer::device::MemoryDevice;
use wafer::{Db, Direction, Options};

fn db() -> Db {
    let data = Arc::new(MemoryDevice::new(8 << 20));
    let wal = Arc::new(MemoryDevice::new(4 << 20));
    Db::open_on_devices(data, wal, Options::test_min()).unwrap()
}

#[test]
fn reads_see_own_writes_and_others_see_them_only_after_commit() {
    let db = db();
    let t = db.tree("a").unwrap();
    t.put(b"k1", b"old").unwrap();
    t.put(b"k3", b"three").unwrap();
    let mut txn = db.begin();
    txn.put("a", b"k1", b"new").unwrap();
    txn.put("a", b"k2", b"two").unwrap();
    txn.delete("a", b"k3").unwrap();
    txn.put("fresh", b"x", b"y").unwrap();
    assert_eq!(txn.get("a", b"k1").unwrap().as_deref(), Some(&b"new"[..]));
    assert_eq!(txn.get("a", b"k3").unwrap(), None);
    assert_eq!(txn.get("fresh", b"x").unwrap().as_deref(), Some(&b"y"[..]));
    // Not yet visible outside, and a read did not create the tree.
    assert_eq!(t.get(b"k1").unwrap().as_deref(), Some(&b"old"[..]));
    assert!(!db.tree_names().unwrap().contains(&"fresh".to_string()));
    let all = txn.scan("a", Bound::Unbounded, Bound::Unbounded, Direction::Ascending, 10).unwrap();
    let keys: Vec<&[u8]> = all.iter().map(|(k, _)| k.as_slice()).collect();
    assert_eq!(keys, vec![&b"k1"[..], b"k2"]);
    assert_eq!(all[0].1, b"new");
    let back = txn.scan_prefix("a", b"k", Direction::Descending, 1).unwrap();
    assert_eq!(back, vec![(b"k2".to_vec(), b"two".to_vec())]);
    txn.commit().unwrap();
    assert_eq!(t.get(b"k1").unwrap().as_deref(), Some(&b"new"[..]));
    assert_eq!(t.get(b"k3").unwrap(), None);
    assert_eq!(db.tree("fresh").unwrap().get(b"x").unwrap().as_deref(), Some(&b"y"[..]));
}

#[test]
fn scans_merge_writes_between_committed_keys_both_ways() {
    let db = db();
    let t = db.tree("s").unwrap();
    for i in (0..40u8).step_by(2) {
        t.put(&[i], &[i]).unwrap();
    }
    let mut txn = db.begin();
    for i in (1..40u8).step_by(4) {
        txn.put("s", &[i], b"odd").unwrap();
    }
    for i in (0..40u8).step_by(8) {
        txn.delete("s", &[i]).unwrap();
    }
    let mut model: std::collections::BTreeMap<u8, bool> =
        (0..40u8).step_by(2).map(|i| (i, false)).collect();
    (1..40u8).step_by(4).for_each(|i| {
        model.insert(i, true);
    });
    (0..40u8).step_by(8).for_each(|i| {
        model.remove(&i);
    });
    let (lo, hi) = ([5u8], [30u8]);
    let asc = txn
        .scan("s", Bound::Included(&lo[..]), Bound::Excluded(&hi[..]), Direction::Ascending, 100)
        .unwrap();
    let want: Vec<u8> = model.range(5..30).map(|(k, _)| *k).collect();
    assert_eq!(asc.iter().map(|(k, _)| k[0]).collect::<Vec<_>>(), want);
    let desc = txn
        .scan("s", Bound::Included(&lo[..]), Bound::Excluded(&hi[..]), Direction::Descending, 3)
        .unwrap();
    let want: Vec<u8> = model.range(5..30).rev().take(3).map(|(k, _)| *k).collect();
    assert_eq!(desc.iter().map(|(k, _)| k[0]).collect::<Vec<_>>(), want);
}

#[test]
fn abort_discards_writes_and_releases_locks() {
    let db = db();
    let mut txn = db.begin();
    txn.lock("a", b"k").unwrap();
    txn.put("a", b"k", b"v").unwrap();
    let mut other = db.begin();
    other.set_lock_timeout(Duration::from_millis(1));
    assert!(matches!(other.lock("a", b"k"), Err(wafer::CommitError::LockTimeout { .. })));
    txn.abort();
    other.lock("a", b"k").unwrap();
    assert_eq!(other.get("a", b"k").unwrap(), None);
    assert!(other.is_read_only());
    other.commit().unwrap();
}

#[test]
fn locked_read_modify_writes_from_threads_lose_no_update() {
    let db = db();
    let threads = 4;
    let rounds = 50u64;
    let workers: Vec<_> = (0..threads)
        .map(|t| {
            let db = db.clone();
            std::thread::spawn(move || {
                for _ in 0..rounds {
                    let mut txn = db.begin();
                    txn.set_lock_timeout(Duration::from_secs(30));
                    // Two counters changed together: each transaction keeps their sum even.
                    let a = read_u64(&txn.get_for_update("c", b"a").unwrap());
                    let b = read_u64(&txn.get_for_update("c", b"b").unwrap());
                    txn.put("c", b"a", &(a + 1).to_le_bytes()).unwrap();
                    txn.put("c", b"b", &(b + 1).to_le_bytes()).unwrap();
                    txn.put("log", &[t as u8, 0], b"").unwrap();
                    txn.commit().unwrap();
                }
            })
        })
        .collect();
    for w in workers {
        w.join().unwrap();
    }
    let c = db.tree("c").unwrap();
    let total = threads as u64 * rounds;
    assert_eq!(read_u64(&c.get(b"a").unwrap()), total);
    assert_eq!(read_u64(&c.get(b"b").unwrap()), total);
}

fn read_u64(v: &Option<Vec<u8>>) -> u64 {
    v.as_ref().map_or(0, |b| u64::from_le_bytes(b.as_slice().try_into().unwrap()))
}
