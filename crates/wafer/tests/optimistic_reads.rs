#![allow(clippy::unwrap_used)] // Tests may unwrap.
//! Lookups without latches (btree/lookup.rs) under concurrent writers, splits, merges, eviction
//! and (out of place) GC moving pages, checked against what the writers had finished.
//!
//! Each writer owns a key range and records, per key, its writes in two atomic arrays: the write
//! it starts (before the call) and the write it finished (after the call returns), each as a
//! count of the key's writes, the version and whether it was a put. A reader reads the finished
//! state, looks the key up, then reads the started state: the lookup must return a value of a
//! version between the two (inclusive), or nothing only if the key was absent at one of them or
//! may have been absent in between (two writes or more started since). A lookup that reaches the
//! left half of a leaf split under it, or a page evicted and reused under it, returns an older
//! value or nothing and fails here. Values
//! name their key and version and vary in length, so leaves split and merge all along. At the
//! end every tree must equal the writers' BTreeMap models. Seeds are printed.
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use wafer::device::MemoryDevice;
use wafer::{Db, Options};
use wafer_testkit::Rng;

const WRITERS: u64 = 2;
const READERS: u64 = 2;
const KEYS_PER_WRITER: u64 = 600;

fn key(writer: u64, i: u64) -> Vec<u8> {
    // A shared prefix as the speed bench's keys have; the writer in the middle so ranges interleave.
    format!("user{:06}w{writer}", i).into_bytes()
}

/// Key, version, then padding of a length drawn by the writer.
fn value(k: &[u8], version: u64, pad: usize) -> Vec<u8> {
    let mut v = k.to_vec();
    v.extend_from_slice(&version.to_le_bytes());
    v.resize(v.len() + pad, 0xa5);
    v
}

fn version_of(k: &[u8], v: &[u8]) -> u64 {
    assert!(v.len() >= k.len() + 8 && &v[..k.len()] == k, "value of another key: {v:?}");
    u64::from_le_bytes(v[k.len()..k.len() + 8].try_into().unwrap())
}

/// A key's state: its write count << 32 | version << 1 | present.
fn state(count: u64, version: u64, present: bool) -> u64 {
    assert!(version < 1 << 31);
    count << 32 | version << 1 | u64::from(present)
}
fn count(s: u64) -> u64 {
    s >> 32
}
fn version(s: u64) -> u64 {
    (s & 0xffff_ffff) >> 1
}
fn present(s: u64) -> bool {
    s & 1 == 1
}

fn run(seed: u64, out_of_place: bool, frames: u64, writes_per_writer: u64) {
    eprintln!("optimistic reads: seed {seed}, out of place {out_of_place}, {frames} frames");
    let (device_bytes, mut options) = if out_of_place {
        let mut o = Options::test_min().out_of_place();
        o.out_of_place.background_gc = true;
        (12 << 20, o)
    } else {
        (128 << 20, Options::test_min())
    };
    options.background_write_back = true;
    let dev = Arc::new(MemoryDevice::new(device_bytes));
    let db = Db::open_on(dev, options.with_buffer_pool_bytes(frames * 4096)).unwrap();
    let slots = WRITERS * KEYS_PER_WRITER;
    let array = || Arc::new((0..slots).map(|_| AtomicU64::new(0)).collect::<Vec<_>>());
    let (started, finished) = (array(), array());
    let done = Arc::new(AtomicBool::new(false));
    let writers: Vec<_> = (0..WRITERS)
        .map(|w| {
            let (db, started, finished) = (db.clone(), started.clone(), finished.clone());
            std::thread::spawn(move || {
                let tree = db.tree("t").unwrap();
                let mut rng = Rng(seed * 97 + w + 1);
                let mut model = BTreeMap::new();
                // A load first (every key once, in a random order: splits all along), then
                // updates and deletes (merges, and splits again).
                let mut order: Vec<u64> = (0..KEYS_PER_WRITER).collect();
                for j in (1..order.len()).rev() {
                    order.swap(j, rng.below(j as u64 + 1) as usize);
                }
                for version in 1..=writes_per_writer {
                    let loading = version <= KEYS_PER_WRITER;
                    let i = match loading {
                        true => order[version as usize - 1],
                        false => rng.below(KEYS_PER_WRITER),
                    };
                    let slot = (w * KEYS_PER_WRITER + i) as usize;
                    let k = key(w, i);
                    let present = loading || rng.below(4) != 0;
                    let s =
                        state(count(started[slot].load(Ordering::SeqCst)) + 1, version, present);
                    started[slot].store(s, Ordering::SeqCst);
                    if present {
                        let v = value(&k, version, rng.below(400) as usize);
                        tree.put(&k, &v).unwrap();
                        model.insert(k, v);
                    } else {
                        tree.delete(&k).unwrap();
                        model.remove(&k);
                    }
                    finished[slot].store(s, Ordering::SeqCst);
                }
                model
            })
        })
        .collect();
    let readers: Vec<_> = (0..READERS)
        .map(|r| {
            let (db, done) = (db.clone(), done.clone());
            let (started, finished) = (started.clone(), finished.clone());
            std::thread::spawn(move || {
                let tree = db.tree("t").unwrap();
                let mut rng = Rng(seed * 131 + r + 7);
                let mut checked = 0u64;
                while !done.load(Ordering::Relaxed) {
                    let slot = rng.below(slots);
                    let k = key(slot / KEYS_PER_WRITER, slot % KEYS_PER_WRITER);
                    let before = finished[slot as usize].load(Ordering::SeqCst);
                    let got = tree.get(&k).unwrap();
                    let after = started[slot as usize].load(Ordering::SeqCst);
                    let ctx = format!(
                        "seed {seed} key {}: finished before v{} (put {}), started after v{} \
                         (put {}, {} writes later)",
                        String::from_utf8_lossy(&k),
                        version(before),
                        present(before),
                        version(after),
                        present(after),
                        count(after) - count(before)
                    );
                    match got {
                        Some(v) => {
                            let seen = version_of(&k, &v);
                            let range = version(before)..=version(after);
                            assert!(range.contains(&seen), "{ctx}: read v{seen}");
                        }
                        None => {
                            // Absent at one end, or maybe in between (two writes or more).
                            let maybe_absent = !present(before)
                                || !present(after)
                                || count(after) >= count(before) + 2;
                            assert!(maybe_absent, "{ctx}: read nothing");
                        }
                    }
                    checked += 1;
                }
                checked
            })
        })
        .collect();
    let models: Vec<BTreeMap<Vec<u8>, Vec<u8>>> =
        writers.into_iter().map(|h| h.join().unwrap()).collect();
    done.store(true, Ordering::Relaxed);
    let checked: u64 = readers.into_iter().map(|h| h.join().unwrap()).sum();
    assert!(checked > 0, "seed {seed}: readers checked nothing");
    let want: BTreeMap<_, _> = models.into_iter().flatten().collect();
    let tree = db.tree("t").unwrap();
    let got: BTreeMap<_, _> = tree.iter().map(|e| e.unwrap()).collect();
    assert!(got == want, "seed {seed}: tree differs from the writers' models");
    for (k, v) in &want {
        assert_eq!(tree.get(k).unwrap().as_ref(), Some(v), "seed {seed}: point read");
    }
    let stats = db.stats();
    eprintln!("  {checked} reads checked, {} evictions", stats.pool.evictions);
    db.close().unwrap();
}

fn seeds() -> u64 {
    std::env::var("WAFER_OPTIMISTIC_SEEDS").ok().and_then(|s| s.parse().ok()).unwrap_or(2)
}

#[test]
fn lookups_under_splits_and_eviction_see_every_finished_write() {
    for seed in 1..=seeds() {
        run(seed, false, 48, 6_000);
    }
}

#[test]
fn lookups_in_a_pool_holding_everything_see_every_finished_write() {
    for seed in 1..=seeds() {
        run(seed, false, 4096, 6_000);
    }
}

#[test]
fn out_of_place_lookups_under_gc_see_every_finished_write() {
    for seed in 1..=seeds() {
        run(seed, true, 48, 6_000);
    }
}

/// A batch is seen whole: it writes version v to every key of a group, so a reader that finds
/// v in one key then finds at least v in every key it reads after (a batch half applied would
/// show an older version). Leaves split meanwhile (values grow with the version).
#[test]
fn lookups_see_a_batch_whole_or_not_at_all() {
    const GROUP: u64 = 8;
    const BATCHES: u64 = 10_000;
    let dev = Arc::new(MemoryDevice::new(64 << 20));
    let db = Db::open_on(dev, Options::test_min().with_buffer_pool_bytes(256 * 4096)).unwrap();
    let k = |i: u64| format!("user{:06}", i * 37).into_bytes();
    let done = Arc::new(AtomicBool::new(false));
    let reader = {
        let (db, done) = (db.clone(), done.clone());
        std::thread::spawn(move || {
            let tree = db.tree("t").unwrap();
            let (mut rng, mut checked) = (Rng(5), 0u64);
            while !done.load(Ordering::Relaxed) {
                let first = rng.below(GROUP);
                let Some(v) = tree.get(&k(first)).unwrap() else { continue };
                let seen = version_of(&k(first), &v);
                for i in (0..GROUP).filter(|i| *i != first) {
                    let later = tree.get(&k(i)).unwrap().map(|v| version_of(&k(i), &v));
                    assert!(
                        later >= Some(seen),
                        "key {i} at {later:?} after key {first} at {seen}"
                    );
                }
                checked += 1;
            }
            checked
        })
    };
    let tree = db.tree("t").unwrap();
    for version in 1..=BATCHES {
        let mut b = wafer::WriteBatch::new();
        for i in 0..GROUP {
            b.put("t", &k(i), &value(&k(i), version, (version % 300) as usize));
        }
        db.write(&b).unwrap();
        // Unrelated keys grow the tree, so the group's leaves split and move.
        tree.put(&k(GROUP + version), &[1u8; 200]).unwrap();
    }
    done.store(true, Ordering::Relaxed);
    assert!(reader.join().unwrap() > 0, "the reader checked nothing");
    db.close().unwrap();
}
