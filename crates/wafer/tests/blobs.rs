#![allow(clippy::unwrap_used)] // Tests may unwrap.
//! Out-of-line values: a model test with values from 0 bytes to 64 MiB in both write modes
//! across reopens, streaming reads, space reuse, and power cuts that tear and drop blob writes.
//! Seeds are printed; rerun one with WAFER_SEED=<seed>.
use std::collections::BTreeMap;
use std::io::Read;
use std::sync::Arc;
use wafer::device::{Device, MemoryDevice};
use wafer::{Db, Options, WriteBatch};
use wafer_testkit::Rng;

fn seed(default: u64) -> u64 {
    std::env::var("WAFER_SEED").ok().and_then(|s| s.parse().ok()).unwrap_or(default)
}

fn options(out_of_place: bool, threshold: u32) -> Options {
    let mut o = Options::test_min().with_buffer_pool_bytes(64 * 4096).with_blobs(threshold);
    o.wal_capacity_bytes = 16 << 20;
    o.checkpoint_log_bytes = 4 << 20;
    if out_of_place {
        o = o.out_of_place();
        o.out_of_place.compression = wafer::options::Compression::Lz4;
    }
    o
}

/// Value bytes that compress a little and tell their key and version apart.
fn value(len: usize, tag: u64) -> Vec<u8> {
    let mut x = tag.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1;
    (0..len)
        .map(|i| {
            if i % 64 == 0 {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
            }
            (x >> ((i % 8) * 8)) as u8 & 0x3f
        })
        .collect()
}

fn value_len(rng: &mut Rng, big: bool) -> usize {
    match rng.below(12) {
        0 => 0,
        1..=4 => rng.below(300) as usize,
        5..=8 => 300 + rng.below(4000) as usize,
        9 | 10 => rng.below(64 << 10) as usize,
        _ if big => rng.below(1 << 20) as usize,
        _ => rng.below(20 << 10) as usize,
    }
}

fn open(data: &Arc<MemoryDevice>, wal: &Arc<MemoryDevice>, o: &Options) -> Db {
    let (d, w): (Arc<dyn Device>, Arc<dyn Device>) = (data.clone(), wal.clone());
    Db::open_on_devices(d, w, o.clone()).unwrap()
}

fn compare(db: &Db, model: &BTreeMap<Vec<u8>, Vec<u8>>, seed: u64) {
    let t = db.tree("t").unwrap();
    let all: Vec<(Vec<u8>, Vec<u8>)> = t.iter().map(|e| e.unwrap()).collect();
    let want: Vec<(Vec<u8>, Vec<u8>)> = model.iter().map(|(k, v)| (k.clone(), v.clone())).collect();
    assert!(all == want, "seed {seed}: iteration differs from the model");
    let back: Vec<Vec<u8>> = t.iter().rev().map(|e| e.unwrap().0).collect();
    assert_eq!(back.len(), model.len(), "seed {seed}");
    for (k, v) in model {
        assert_eq!(t.get(k).unwrap().as_ref(), Some(v), "seed {seed}: key {k:?}");
    }
    let report = db.check().unwrap();
    assert!(report.is_clean(), "seed {seed}: {report}");
}

fn model_run(out_of_place: bool, seed: u64, steps: u32) {
    eprintln!("blob model: out_of_place {out_of_place} seed {seed}");
    let mut rng = Rng(seed);
    let threshold = [0, 100, 1000][rng.below(3) as usize];
    let mut o = options(out_of_place, threshold);
    if rng.below(2) == 0 {
        // A small log: the free-extent tree folds every few dozen blob changes, inside the
        // batches, so reopens find folds, checkpoints and the changes since in every order.
        o.wal_capacity_bytes = 1 << 20;
        o.checkpoint_log_bytes = 256 << 10;
    }
    // The background threads (write-back, and the stager's flusher with it) on or off.
    o.background_write_back = rng.below(2) == 0;
    if out_of_place && rng.below(2) == 0 {
        // NoWA with four groups: a group whose zone filled while NoWA opens no zone continues
        // in another group's, and blob pages laid end to end must follow that route.
        let oop = &mut o.out_of_place;
        (oop.nowa, oop.open_zones, oop.placement) = (true, 4, wafer::options::PlacementKind::Gdt);
        oop.gc_unit_bytes = 4 * oop.zone_bytes;
        oop.packing = rng.below(2) == 0;
        eprintln!("blob model: NoWA, packing {}", oop.packing);
    }
    eprintln!(
        "blob model: log of {} bytes, background write-back {}",
        o.wal_capacity_bytes, o.background_write_back
    );
    let data = Arc::new(MemoryDevice::new(96 << 20));
    let wal = Arc::new(MemoryDevice::new(o.wal_capacity_bytes));
    let mut db = open(&data, &wal, &o);
    let mut model: BTreeMap<Vec<u8>, Vec<u8>> = BTreeMap::new();
    for step in 0..steps {
        let t = db.tree("t").unwrap();
        let k = format!("k{:03}", rng.below(60)).into_bytes();
        match rng.below(10) {
            0..=5 => {
                let v = value(value_len(&mut rng, false), u64::from(step));
                t.put(&k, &v).unwrap();
                model.insert(k, v);
            }
            6 => {
                assert_eq!(t.delete(&k).unwrap(), model.remove(&k).is_some(), "seed {seed}");
            }
            7 => {
                let mut b = WriteBatch::new();
                for j in 0..1 + rng.below(6) {
                    let k = format!("k{:03}", rng.below(60)).into_bytes();
                    if rng.below(4) == 0 {
                        b.delete("t", &k);
                        model.remove(&k);
                    } else {
                        let v = value(value_len(&mut rng, false), u64::from(step) << 8 | j);
                        b.put("t", &k, &v);
                        model.insert(k, v);
                    }
                }
                db.write(&b).unwrap();
            }
            8 => {
                let mut r = t.get_reader(&k).unwrap();
                match (model.get(&k), r.as_mut()) {
                    (Some(v), Some(r)) => {
                        let mut got = Vec::new();
                        let mut buf = vec![0u8; 1 + rng.below(9000) as usize];
                        // Bounded by the value's length: each read returns at least a byte.
                        loop {
                            let n = r.read(&mut buf).unwrap();
                            if n == 0 {
                                break;
                            }
                            got.extend_from_slice(&buf[..n]);
                        }
                        assert!(got == *v, "seed {seed}: streamed value of {k:?}");
                    }
                    (None, None) => {}
                    _ => panic!("seed {seed}: reader presence of {k:?}"),
                }
            }
            _ => {
                match rng.below(3) {
                    0 => db.close().unwrap(),
                    1 => {
                        db.checkpoint().unwrap();
                        drop(db);
                    }
                    _ => {
                        // Recovery replays the log: the blob extent changes since the last
                        // fold come back from commit and checkpoint records.
                        db.sync().unwrap();
                        drop(db);
                    }
                }
                db = open(&data, &wal, &o);
                compare(&db, &model, seed);
            }
        }
    }
    compare(&db, &model, seed);
    // Deleting everything gives the blob space back: nothing leaks.
    let t = db.tree("t").unwrap();
    for k in model.keys() {
        t.delete(k).unwrap();
    }
    db.checkpoint().unwrap();
    let s = db.stats().blobs.unwrap();
    assert_eq!(s.free_pages + s.gated_pages, s.free_pages, "gates open after a checkpoint");
    compare(&db, &BTreeMap::new(), seed);
}

#[test]
fn blob_model_in_place() {
    for s in 0..3 {
        model_run(false, seed(s), 300);
    }
}

#[test]
fn blob_model_out_of_place() {
    for s in 10..13 {
        model_run(true, seed(s), 300);
    }
}

/// Values of 0 bytes to 64 MiB, written, read whole and streamed, after a reopen, both modes.
#[test]
fn large_values_up_to_64_mib_in_both_modes() {
    for out_of_place in [false, true] {
        let o = Options { buffer_pool_bytes: 64 * 4096, ..options(out_of_place, 4096) };
        let data = Arc::new(MemoryDevice::new(200 << 20));
        let wal = Arc::new(MemoryDevice::new(o.wal_capacity_bytes));
        let sizes = [0usize, 1, 4015, 4016, 4017, 1 << 20, 64 << 20];
        {
            let db = open(&data, &wal, &o);
            let t = db.tree("big").unwrap();
            for (i, len) in sizes.iter().enumerate() {
                t.put(&[i as u8], &value(*len, i as u64)).unwrap();
            }
            db.close().unwrap();
        }
        let db = open(&data, &wal, &o);
        let t = db.tree("big").unwrap();
        for (i, len) in sizes.iter().enumerate() {
            let want = value(*len, i as u64);
            assert!(t.get(&[i as u8]).unwrap().unwrap() == want, "size {len}");
            let mut r = t.get_reader(&[i as u8]).unwrap().unwrap();
            assert_eq!(r.len_bytes(), *len as u64);
            let mut got = Vec::new();
            r.read_to_end(&mut got).unwrap();
            assert!(got == want, "streamed size {len}");
        }
        let report = db.check().unwrap();
        assert!(report.is_clean(), "{report}");
        // Overwrites reuse the freed pages once their commits are durable.
        let before = db.stats().high_water_pages;
        for round in 0..3u64 {
            t.put(&[6], &value(64 << 20, 100 + round)).unwrap();
            db.checkpoint().unwrap();
        }
        // One more 64 MiB run while the old one is live; the third version reuses the first's.
        assert!(db.stats().high_water_pages <= before + 17_000, "freed runs reused");
    }
}

#[test]
fn values_over_the_inline_limit_need_blobs() {
    let data: Arc<dyn Device> = Arc::new(MemoryDevice::new(8 << 20));
    let wal: Arc<dyn Device> = Arc::new(MemoryDevice::new(4 << 20));
    let db = Db::open_on_devices(data, wal, Options::test_min()).unwrap();
    let t = db.tree("t").unwrap();
    assert!(matches!(t.put(b"k", &[0u8; 3000]), Err(wafer::CommitError::ValueTooLarge { .. })));
    assert!(db.tree("\0blobs").is_err(), "engine tree names are refused");
}

/// Out of place, values read back through the store's cache of stored bytes while GC moves
/// blob pages and resets their zones, and new blobs land where old ones lay: every read, cache
/// hit or not, matches the model, before and after a reopen.
#[test]
fn cached_values_stay_right_across_gc_moves_and_zone_resets() {
    let s = seed(0xCAC4E);
    eprintln!("blob cache churn: seed {s}");
    let mut rng = Rng(s | 1);
    // A pool far larger than the tree: most of its budget goes to cached values.
    let mut o = options(true, 100).with_buffer_pool_bytes(1 << 20);
    o.wal_capacity_bytes = 1 << 20;
    o.checkpoint_log_bytes = 256 << 10;
    // Each blob page takes a page id for a fraction of a slot: ids past the zone space.
    o.out_of_place.max_fill_percent = 300;
    // Small enough that GC reclaims zones of blobs all the time.
    let data = Arc::new(MemoryDevice::new(2 << 20));
    let wal = Arc::new(MemoryDevice::new(o.wal_capacity_bytes));
    let mut db = open(&data, &wal, &o);
    let mut model: BTreeMap<Vec<u8>, Vec<u8>> = BTreeMap::new();
    let mut totals = [0u64; 5];
    for step in 0..20_000u64 {
        let t = db.tree("t").unwrap();
        let k = format!("k{:04}", rng.below(400)).into_bytes();
        if rng.below(2) == 0 {
            let v = value(200 + rng.below(1300) as usize, step);
            t.put(&k, &v).unwrap();
            model.insert(k, v);
        } else {
            assert_eq!(t.get(&k).unwrap().as_ref(), model.get(&k), "seed {s}: step {step}");
        }
        if step % 4_000 == 3_999 {
            // The counters start over with each open: add up this open's.
            let stats = db.stats();
            let (b, oop) = (stats.blobs.unwrap(), stats.out_of_place.unwrap());
            eprintln!("step {step}: {b:?}\nzones reset {}", oop.zones_reset);
            totals = [
                totals[0] + b.cache_hits,
                totals[1] + b.pages_read,
                totals[2] + oop.zones_reset,
                totals[3] + oop.gc_blob_pages,
                // Blob pages run end to end: those crossing a slot's end read two slots.
                totals[4] + (oop.codec.device_reads - oop.codec.page_reads),
            ];
            db.close().unwrap();
            db = open(&data, &wal, &o);
            compare(&db, &model, s);
        }
    }
    let [hits, reads, resets, moved, crossing] = totals;
    assert!(hits > 0 && hits < reads, "seed {s}: {hits} cache hits of {reads} page reads");
    assert!(crossing > 0, "seed {s}: no blob page read crossed a slot's end");
    assert!(resets > 0 && moved > 0, "seed {s}: {resets} zone resets, {moved} blob pages moved");
    compare(&db, &model, s);
}
