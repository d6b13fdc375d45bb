#![allow(clippy::unwrap_used)] // Tests may unwrap.
//! Several threads at once, with a tiny buffer pool: disjoint key ranges (each thread checks its
//! own BTreeMap model exactly) and shared key ranges (values name their key, so every read can be
//! validated; a final single-threaded pass compares against a model). Seeds are printed.
use std::collections::BTreeMap;
use std::sync::Arc;
use wafer::device::MemoryDevice;
use wafer::{Db, Options, WriteBatch};
use wafer_testkit::Rng;

const TREES: [&str; 2] = ["one", "two"];

/// In place on 128 MiB, or out of place on a small device with the background GC thread on,
/// so GC cycles run concurrently with the writers' evictions and reads.
fn options(out_of_place: bool) -> Options {
    if out_of_place {
        let mut o = Options::test_min().out_of_place();
        o.out_of_place.background_gc = true;
        o
    } else {
        Options::test_min()
    }
}

fn open(frames: u64, out_of_place: bool) -> (Arc<MemoryDevice>, Db) {
    let device_bytes = if out_of_place { 12 << 20 } else { 128 << 20 };
    let dev = Arc::new(MemoryDevice::new(device_bytes));
    let o = options(out_of_place).with_buffer_pool_bytes(frames * 4096);
    let db = Db::open_on(dev.clone(), o).unwrap();
    (dev, db)
}

fn disjoint(seed: u64, threads: u64, steps: u64, out_of_place: bool) {
    eprintln!("disjoint seed {seed}, out of place: {out_of_place}");
    let (dev, db) = open(24, out_of_place);
    let handles: Vec<_> = (0..threads)
        .map(|t| {
            let db = db.clone();
            std::thread::spawn(move || {
                let mut rng = Rng((seed + t) | 1);
                let mut model: Vec<BTreeMap<Vec<u8>, Vec<u8>>> = vec![BTreeMap::new(); 2];
                for step in 0..steps {
                    let ti = rng.below(2) as usize;
                    let tree = db.tree(TREES[ti]).unwrap();
                    let k = format!("t{t}-{:05}", rng.below(2000)).into_bytes();
                    let ctx = format!("seed {seed} thread {t} step {step}");
                    match rng.below(10) {
                        0..=4 => {
                            let v = vec![step as u8; rng.below(200) as usize];
                            tree.put(&k, &v).unwrap();
                            model[ti].insert(k, v);
                        }
                        5..=6 => {
                            let found = tree.delete(&k).unwrap();
                            assert_eq!(found, model[ti].remove(&k).is_some(), "{ctx}");
                        }
                        7..=8 => {
                            assert_eq!(tree.get(&k).unwrap().as_ref(), model[ti].get(&k), "{ctx}")
                        }
                        _ => {
                            let p = format!("t{t}-").into_bytes();
                            let got: Vec<_> = tree.prefix(&p).map(|r| r.unwrap()).collect();
                            let want: Vec<_> =
                                model[ti].iter().map(|(k, v)| (k.clone(), v.clone())).collect();
                            assert!(got == want, "{ctx}: prefix scan");
                        }
                    }
                }
                model
            })
        })
        .collect();
    let models: Vec<_> = handles.into_iter().map(|h| h.join().unwrap()).collect();
    let check = |db: &Db| {
        for (ti, name) in TREES.iter().enumerate() {
            let tree = db.tree(name).unwrap();
            let mut want = BTreeMap::new();
            for m in &models {
                want.extend(m[ti].clone());
            }
            let got: BTreeMap<_, _> = tree.iter().map(|r| r.unwrap()).collect();
            assert!(got == want, "seed {seed}: tree {name} after all threads");
        }
    };
    check(&db);
    if let Some(o) = db.stats().out_of_place {
        eprintln!("{o:?}");
        assert!(o.zones_reset > 0, "zones must turn over: {o:?}");
    }
    db.close().unwrap();
    let db = Db::open_on(dev, options(out_of_place)).unwrap();
    check(&db);
}

fn valid(k: &[u8], v: &[u8]) -> bool {
    v.len() >= k.len() && &v[..k.len()] == k
}

fn shared(seed: u64, threads: u64, steps: u64, out_of_place: bool) {
    eprintln!("shared seed {seed}, out of place: {out_of_place}");
    let (_dev, db) = open(24, out_of_place);
    shared_on(&db, seed, threads, steps, 300);
    db.close().unwrap();
}

/// Out of place with a WAL and values from 200 bytes stored out of line: single puts change
/// their leaf under the shared structure latch and free the blob the key named, while other
/// threads read, scan and batch over the same keys. Values up to `value_max` long (some span
/// blob pages); every one starts with its key, so a read of a freed or reused blob shows.
fn shared_blobs(seed: u64, threads: u64, steps: u64) {
    eprintln!("shared with blobs seed {seed}");
    let dev = Arc::new(MemoryDevice::new(48 << 20));
    let wal = Arc::new(MemoryDevice::new(8 << 20));
    let mut o = options(true).with_buffer_pool_bytes(48 * 4096);
    o.blob_threshold_bytes = Some(200);
    let db = Db::open_on_devices(dev, wal, o).unwrap();
    shared_on(&db, seed, threads, steps, 6000);
    let report = db.check().unwrap();
    assert!(report.is_clean(), "seed {seed}: {report:?}");
    db.close().unwrap();
}

fn shared_on(db: &Db, seed: u64, threads: u64, steps: u64, value_max: u64) {
    let handles: Vec<_> = (0..threads)
        .map(|t| {
            let db = db.clone();
            std::thread::spawn(move || {
                let mut rng = Rng((seed * 31 + t) | 1);
                for step in 0..steps {
                    let tree = db.tree(TREES[rng.below(2) as usize]).unwrap();
                    let k = format!("s{:04}", rng.below(1500)).into_bytes();
                    let ctx = format!("seed {seed} thread {t} step {step}");
                    match rng.below(10) {
                        0..=3 => {
                            let mut v = k.clone();
                            v.resize(k.len() + rng.below(value_max) as usize, t as u8);
                            tree.put(&k, &v).unwrap();
                        }
                        4..=5 => {
                            tree.delete(&k).unwrap();
                        }
                        6 => {
                            let mut b = WriteBatch::new();
                            for i in 0..4u8 {
                                let mut kk = k.clone();
                                kk.push(b'a' + i);
                                b.put(TREES[i as usize % 2], &kk, &kk);
                            }
                            db.write(&b).unwrap();
                        }
                        7..=8 => {
                            if let Some(v) = tree.get(&k).unwrap() {
                                assert!(valid(&k, &v), "{ctx}: value of {k:?} is not its own");
                            }
                        }
                        _ => {
                            let rev = rng.below(2) == 0;
                            let it = tree.range(k.clone()..);
                            let got: Vec<_> = if rev {
                                it.rev().take(60).map(|r| r.unwrap()).collect()
                            } else {
                                it.take(60).map(|r| r.unwrap()).collect()
                            };
                            for w in got.windows(2) {
                                let ordered = if rev { w[0].0 > w[1].0 } else { w[0].0 < w[1].0 };
                                assert!(ordered, "{ctx}: scan out of order or repeated");
                            }
                            for (k, v) in &got {
                                assert!(
                                    valid(k, v),
                                    "{ctx}: scan gave {} the value {:?} of {} bytes",
                                    String::from_utf8_lossy(k),
                                    String::from_utf8_lossy(&v[..v.len().min(8)]),
                                    v.len()
                                );
                            }
                        }
                    }
                }
            })
        })
        .collect();
    for h in handles {
        h.join().unwrap();
    }
    // Whatever the interleaving, the trees must now be well-formed: check against a model
    // built from the trees' own contents after a single-threaded round of changes.
    for name in TREES {
        let tree = db.tree(name).unwrap();
        let mut model: BTreeMap<_, _> = tree.iter().map(|r| r.unwrap()).collect();
        assert!(model.iter().all(|(k, v)| valid(k, v)), "seed {seed}");
        for (k, v) in &model {
            assert_eq!(tree.get(k).unwrap().as_ref(), Some(v), "seed {seed}: point read");
        }
        let keys: Vec<_> = model.keys().cloned().collect();
        for k in keys.iter().step_by(2) {
            assert!(tree.delete(k).unwrap());
            model.remove(k);
        }
        let got: BTreeMap<_, _> = tree.iter().map(|r| r.unwrap()).collect();
        assert!(got == model, "seed {seed}: tree {name} after shared run");
    }
}

#[test]
fn threads_on_disjoint_ranges_match_their_models() {
    disjoint(7, 4, 3_000, false);
}

#[test]
fn out_of_place_threads_on_disjoint_ranges_match_their_models() {
    disjoint(7, 4, 3_000, true);
}

#[test]
fn threads_on_shared_ranges_keep_trees_well_formed() {
    shared(11, 4, 3_000, false);
}

#[test]
fn out_of_place_threads_on_shared_ranges_keep_trees_well_formed() {
    shared(11, 4, 3_000, true);
}

#[test]
fn threads_sharing_keys_stored_out_of_line_keep_every_blob_theirs() {
    shared_blobs(13, 4, 3_000);
}

/// GC through the pool under contention: a small device kept about three quarters full, a small
/// pool, a WAL (so dirty pages wait for the write-back limit), the background GC thread and
/// foreground GC inside evictions, while writer threads update keys. Any latch or mutex cycle
/// between GC (under the store's writer mutex) and writers (holding latches) would hang here.
fn gc_through_the_pool(seed: u64, threads: u64, steps: u64) {
    const KEYS: u64 = 2400;
    eprintln!("gc through the pool seed {seed}");
    let o = options(true).with_buffer_pool_bytes(32 * 4096);
    let dev = Arc::new(MemoryDevice::new(2 << 20));
    let wal = Arc::new(MemoryDevice::new(o.wal_capacity_bytes));
    let db = Db::open_on_devices(dev, wal, o).unwrap();
    let tree = db.tree("one").unwrap();
    let value = |k: u64, step: u64| vec![(k ^ step) as u8; 300];
    for k in 0..KEYS {
        tree.put(format!("{k:06}").as_bytes(), &value(k, 0)).unwrap();
    }
    let handles: Vec<_> = (0..threads)
        .map(|t| {
            let db = db.clone();
            std::thread::spawn(move || {
                let tree = db.tree("one").unwrap();
                let mut rng = Rng((seed + t) | 1);
                let mut last = BTreeMap::new();
                for step in 1..steps {
                    // Disjoint keys per thread, so each knows its own last values.
                    let k = rng.below(KEYS / threads) * threads + t;
                    if rng.below(4) == 0 {
                        let got = tree.get(format!("{k:06}").as_bytes()).unwrap();
                        let want = last.get(&k).map_or(value(k, 0), |s| value(k, *s));
                        assert_eq!(got, Some(want), "seed {seed} thread {t} key {k}");
                    } else {
                        tree.put(format!("{k:06}").as_bytes(), &value(k, step)).unwrap();
                        last.insert(k, step);
                    }
                }
                last
            })
        })
        .collect();
    let lasts: Vec<_> = handles.into_iter().map(|h| h.join().unwrap()).collect();
    let stats = db.stats();
    let o = stats.out_of_place.unwrap();
    eprintln!("{:?}\n{o:?}", stats.pool);
    assert!(o.gc_moved_pages > 0, "GC ran: {o:?}");
    assert_eq!(
        o.gc_pool_pages + o.gc_pool_dirty_pages + o.gc_loaded_pages + o.gc_private_reads,
        o.gc_moved_pages
    );
    for last in &lasts {
        for (k, s) in last {
            assert_eq!(tree.get(format!("{k:06}").as_bytes()).unwrap(), Some(value(*k, *s)));
        }
    }
    db.close().unwrap();
}

#[test]
fn out_of_place_gc_through_the_pool_under_contention() {
    gc_through_the_pool(3, 4, 3_000);
}

#[test]
#[ignore = "long: cargo test -p wafer --release --test concurrency -- --ignored"]
fn threads_long() {
    for seed in 100..110 {
        disjoint(seed, 6, 20_000, false);
        shared(seed, 6, 50_000, false);
        disjoint(seed, 6, 20_000, true);
        shared(seed, 6, 50_000, true);
        gc_through_the_pool(seed, 6, 30_000);
    }
}
