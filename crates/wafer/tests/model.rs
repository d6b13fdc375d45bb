#![allow(clippy::unwrap_used)] // Tests may unwrap.
//! Model tests: random operation sequences across several trees, with a tiny buffer pool that
//! evicts and reloads constantly, checked against BTreeMap models. Seeds are printed; rerun one
//! with WAFER_SEED=<seed>. The long variant: `cargo test -p wafer --test model -- --ignored`.
use std::collections::{BTreeMap, HashMap};
use std::ops::Bound;
use std::sync::Arc;
use wafer::device::MemoryDevice;
use wafer::{Db, Options, WriteBatch};
use wafer_testkit::Rng;

type Model = HashMap<String, BTreeMap<Vec<u8>, Vec<u8>>>;
/// A staged batch operation: tree, key, new value (None = delete).
type Staged = (&'static str, Vec<u8>, Option<Vec<u8>>);

const TREES: [&str; 3] = ["alpha", "beta", "gamma"];

fn seeds(default: u64) -> u64 {
    std::env::var("WAFER_SEED").ok().and_then(|s| s.parse().ok()).unwrap_or(default)
}

fn key(rng: &mut Rng, space: u64) -> Vec<u8> {
    let n = rng.below(space);
    let mut k = format!("k{n:06}").into_bytes();
    // Mostly short keys, some long ones so splits see big separators.
    match rng.below(20) {
        0 => k.resize(100 + (n as usize * 7) % 900, b'x'),
        1 => k.resize(1024, b'y'),
        _ => {}
    }
    k
}

fn value(rng: &mut Rng) -> Vec<u8> {
    let len = match rng.below(10) {
        0 => rng.below(2049) as usize,
        1..=3 => rng.below(300) as usize,
        _ => rng.below(40) as usize,
    };
    let b = rng.next() as u8;
    (0..len).map(|i| b.wrapping_add(i as u8)).collect()
}

fn bound(rng: &mut Rng, space: u64) -> Bound<Vec<u8>> {
    match rng.below(3) {
        0 => Bound::Unbounded,
        1 => Bound::Included(key(rng, space)),
        _ => Bound::Excluded(key(rng, space)),
    }
}

fn check_all(db: &Db, model: &Model, seed: u64) {
    for name in TREES {
        let tree = db.tree(name).unwrap();
        let got: Vec<(Vec<u8>, Vec<u8>)> = tree.iter().map(|r| r.unwrap()).collect();
        let want: Vec<(Vec<u8>, Vec<u8>)> =
            model[name].iter().map(|(k, v)| (k.clone(), v.clone())).collect();
        assert_eq!(got.len(), want.len(), "seed {seed} tree {name}: entry count");
        assert!(got == want, "seed {seed} tree {name}: contents differ");
        let back: Vec<(Vec<u8>, Vec<u8>)> = tree.iter().rev().map(|r| r.unwrap()).collect();
        assert!(back.into_iter().rev().eq(want), "seed {seed} tree {name}: reverse scan");
    }
}

/// Runs `steps` random operations; returns the model.
fn run(db: &Db, model: &mut Model, seed: u64, steps: u64, space: u64) {
    let mut rng = Rng(seed | 1);
    // Snapshots taken between operations, each with the model as it was then.
    let mut snaps: Vec<(wafer::Snapshot, Model)> = Vec::new();
    for step in 0..steps {
        if rng.below(100) == 0 {
            snapshots(db, model, &mut snaps, &mut rng, &format!("seed {seed} step {step}"));
        }
        let name = TREES[rng.below(3) as usize];
        let tree = db.tree(name).unwrap();
        let m = model.get_mut(name).unwrap();
        let ctx = || format!("seed {seed} step {step} tree {name}");
        match rng.below(100) {
            0..=44 => {
                let (k, v) = (key(&mut rng, space), value(&mut rng));
                tree.put(&k, &v).unwrap_or_else(|e| panic!("{}: put: {e}", ctx()));
                m.insert(k, v);
            }
            45..=64 => {
                let k = key(&mut rng, space);
                let found = tree.delete(&k).unwrap_or_else(|e| panic!("{}: delete: {e}", ctx()));
                assert_eq!(found, m.remove(&k).is_some(), "{}: delete result", ctx());
            }
            65..=82 => {
                let k = key(&mut rng, space);
                let got = tree.get(&k).unwrap_or_else(|e| panic!("{}: get: {e}", ctx()));
                assert_eq!(got.as_ref(), m.get(&k), "{}: get", ctx());
            }
            83..=84 => cut(db, &tree, m, &mut rng, space, &ctx()),
            85..=92 => {
                let (lo, hi) = (bound(&mut rng, space), bound(&mut rng, space));
                let empty = match (&lo, &hi) {
                    (
                        Bound::Included(l) | Bound::Excluded(l),
                        Bound::Included(h) | Bound::Excluded(h),
                    ) => {
                        l > h
                            || (l == h
                                && !matches!((&lo, &hi), (Bound::Included(_), Bound::Included(_))))
                    }
                    _ => false,
                };
                let want: Vec<_> = if empty {
                    Vec::new()
                } else {
                    m.range((lo.clone(), hi.clone())).map(|(k, v)| (k.clone(), v.clone())).collect()
                };
                let take = rng.below(50) as usize;
                let reverse = rng.below(2) == 0;
                let it = tree.range((lo.clone(), hi.clone()));
                let got: Vec<_> = if reverse {
                    it.rev().take(take).map(|r| r.unwrap()).collect()
                } else {
                    it.take(take).map(|r| r.unwrap()).collect()
                };
                let want: Vec<_> = if reverse {
                    want.into_iter().rev().take(take).collect()
                } else {
                    want.into_iter().take(take).collect()
                };
                assert!(got == want, "{}: range {lo:?}..{hi:?} rev {reverse}", ctx());
            }
            93..=95 => {
                // Prefix scan, meeting in the middle from both ends.
                let p = format!("k{:04}", rng.below(space / 100 + 1)).into_bytes();
                let want: Vec<_> = m
                    .range(p.clone()..)
                    .take_while(|(k, _)| k.starts_with(&p))
                    .map(|(k, v)| (k.clone(), v.clone()))
                    .collect();
                let mut it = tree.prefix(&p);
                let (mut front, mut back) = (Vec::new(), Vec::new());
                for _ in 0..=want.len() {
                    let (item, side) = if rng.below(2) == 0 {
                        (it.next(), &mut front)
                    } else {
                        (it.next_back(), &mut back)
                    };
                    match item {
                        None => break,
                        Some(r) => {
                            side.push(r.unwrap_or_else(|e| panic!("{}: prefix: {e}", ctx())))
                        }
                    }
                }
                back.reverse();
                front.extend(back);
                assert!(front == want, "{}: prefix {p:?}", ctx());
            }
            _ => {
                let mut batch = WriteBatch::new();
                let mut staged: Vec<Staged> = Vec::new();
                for _ in 0..rng.below(8) + 1 {
                    let t = TREES[rng.below(3) as usize];
                    let k = key(&mut rng, space);
                    if rng.below(3) == 0 {
                        batch.delete(t, &k);
                        staged.push((t, k, None));
                    } else {
                        let v = value(&mut rng);
                        batch.put(t, &k, &v);
                        staged.push((t, k, Some(v)));
                    }
                }
                db.write(&batch).unwrap_or_else(|e| panic!("{}: batch: {e}", ctx()));
                for (t, k, v) in staged {
                    let m = model.get_mut(t).unwrap();
                    match v {
                        Some(v) => m.insert(k, v),
                        None => m.remove(&k),
                    };
                }
            }
        }
    }
}

/// Takes a snapshot, checks one against its model copy (whole, both directions, and lookups),
/// or drops one.
fn snapshots(
    db: &Db,
    model: &Model,
    snaps: &mut Vec<(wafer::Snapshot, Model)>,
    rng: &mut Rng,
    ctx: &str,
) {
    match rng.below(3) {
        0 if snaps.len() < 4 => snaps.push((
            db.snapshot().unwrap_or_else(|e| panic!("{ctx}: snapshot: {e}")),
            model.clone(),
        )),
        1 if !snaps.is_empty() => {
            let (snap, then) = &snaps[rng.below(snaps.len() as u64) as usize];
            for name in TREES {
                let tree = snap.tree(name);
                let want: Vec<(Vec<u8>, Vec<u8>)> =
                    then[name].iter().map(|(k, v)| (k.clone(), v.clone())).collect();
                let got: Vec<_> = tree.iter().map(|r| r.unwrap()).collect();
                assert!(got == want, "{ctx}: snapshot of {name} differs from its time");
                let back: Vec<_> = tree.iter().rev().map(|r| r.unwrap()).collect();
                assert!(back.into_iter().rev().eq(want.iter().cloned()), "{ctx}: reverse");
                for (k, v) in want.iter().step_by(7) {
                    assert_eq!(tree.get(k).unwrap().as_ref(), Some(v), "{ctx}: snapshot get");
                }
            }
        }
        _ if !snaps.is_empty() => {
            snaps.swap_remove(rng.below(snaps.len() as u64) as usize);
        }
        _ => {}
    }
}

/// Removes many entries at once: a range (mostly narrow), the whole tree, or the tree itself.
fn cut(
    db: &Db,
    tree: &wafer::Tree,
    m: &mut BTreeMap<Vec<u8>, Vec<u8>>,
    rng: &mut Rng,
    space: u64,
    ctx: &str,
) {
    match rng.below(10) {
        0 => {
            tree.clear().unwrap_or_else(|e| panic!("{ctx}: clear: {e}"));
            m.clear();
        }
        1 => {
            let found = db.drop_tree(tree.name()).unwrap_or_else(|e| panic!("{ctx}: drop: {e}"));
            assert!(found, "{ctx}: drop_tree found no tree");
            let stale = tree.put(b"k", b"v");
            assert!(matches!(stale, Err(wafer::CommitError::TreeDropped(_))), "{ctx}: {stale:?}");
            m.clear();
        }
        _ => {
            let n = rng.below(space);
            let width = 1 + rng.below(space / 10 + 1);
            let lo = format!("k{n:06}").into_bytes();
            let hi = format!("k{:06}", n + width).into_bytes();
            let (lo, hi) = match rng.below(3) {
                0 => (Bound::Included(lo), Bound::Excluded(hi)),
                1 => (Bound::Excluded(lo), Bound::Included(hi)),
                _ => (Bound::Included(lo), Bound::Unbounded),
            };
            let range = (lo.clone(), hi.clone());
            tree.delete_range(range.clone()).unwrap_or_else(|e| panic!("{ctx}: cut: {e}"));
            let gone: Vec<Vec<u8>> = m.range(range).map(|(k, _)| k.clone()).collect();
            for k in &gone {
                m.remove(k);
            }
        }
    }
}

fn model_run(seed: u64, steps: u64, space: u64) {
    model_run_with(seed, steps, space, Options::test_min(), 64 << 20);
}

/// The same model run on a small device in the out-of-place mode: 4-page zones, so zones
/// fill, GC moves pages and the journal and snapshots turn over throughout.
fn model_run_out_of_place(seed: u64, steps: u64, space: u64) {
    let device_bytes = if space > 5_000 { 32 << 20 } else { 6 << 20 };
    model_run_with(seed, steps, space, Options::test_min().out_of_place(), device_bytes);
}

/// Out of place with LZ4 pages packed several to a slot.
fn model_run_compressed(seed: u64, steps: u64, space: u64) {
    let mut options = Options::test_min().out_of_place();
    options.out_of_place.compression = wafer::options::Compression::Lz4;
    model_run_with(seed, steps, space, options, 6 << 20);
}

#[test]
fn model_out_of_place_compressed_and_packed() {
    model_run_compressed(seeds(0xC0DE), 20_000, 3_000);
}

/// Grouping by deathtime with compression: batches split over several open zones, GC cycles
/// taking several victims and sorting their pages by deathtime.
#[test]
fn model_out_of_place_gdt() {
    let mut options = Options::test_min().out_of_place();
    options.out_of_place.compression = wafer::options::Compression::Lz4;
    options.out_of_place.placement = wafer::options::PlacementKind::Gdt;
    options.out_of_place.policy = wafer::options::VictimPolicyKind::CostBenefitUntilZone;
    options.out_of_place.open_zones = 6;
    model_run_with(seeds(0x6D7), 20_000, 3_000, options, 6 << 20);
}

/// NoWA on the GDT configuration: batches routed into other groups' zones once a group is
/// complete, compensations taking the remaining zones of partly dead units (a GC unit of 4
/// zones keeps the small device over NoWA's budget).
#[test]
fn model_out_of_place_nowa() {
    let mut options = Options::test_min().out_of_place();
    options.out_of_place.compression = wafer::options::Compression::Lz4;
    options.out_of_place.placement = wafer::options::PlacementKind::Gdt;
    options.out_of_place.policy = wafer::options::VictimPolicyKind::GreedyUntilZone;
    options.out_of_place.open_zones = 6;
    options.out_of_place.nowa = true;
    options.out_of_place.gc_unit_bytes = 4 * options.out_of_place.zone_bytes;
    // An SSD without spare flash: NoWA's budget is the data area less its headroom, which
    // the run's live units exceed.
    options.out_of_place.ssd_spare_bytes = 1;
    model_run_with(seeds(0x40A), 20_000, 3_000, options.clone(), 6 << 20);
    // The same options on a fresh run: compensations did happen.
    let dev = Arc::new(MemoryDevice::new(6 << 20));
    let db = Db::open_on(dev, options).unwrap();
    let mut model: Model = TREES.iter().map(|t| (t.to_string(), BTreeMap::new())).collect();
    run(&db, &mut model, 0x40A, 20_000, 3_000);
    let space = db.stats().out_of_place.map(|s| s.space).unwrap_or_default();
    assert!(space.nowa_compensations > 0, "no compensation ran: {space:?}");
    check_all(&db, &model, 0x40A);
}

/// GC through the buffer pool (`gc_in_pool`, with the rest of the artifact's choices on GDT
/// and LZ4): victims' survivors handed to the pool as dirty pages, written out by evictions
/// among the user pages, victims reset once drained; a second run checks that the pool took
/// survivors and victims drained.
#[test]
fn model_out_of_place_gc_in_pool() {
    // A small device (about 60 zones of 4 pages), so GC runs throughout.
    const DEVICE_BYTES: u64 = 1 << 20;
    let mut options = Options::test_min().out_of_place();
    options.out_of_place.compression = wafer::options::Compression::Lz4;
    options.out_of_place.placement = wafer::options::PlacementKind::Gdt;
    options.out_of_place.open_zones = 6;
    options.out_of_place.artifact = wafer::options::ArtifactOptions::all();
    model_run_with(seeds(0x9C1), 20_000, 1_000, options, DEVICE_BYTES);
    // Uncompressed: more pages, more GC.
    let mut plain = Options::test_min().out_of_place();
    plain.out_of_place.placement = wafer::options::PlacementKind::Gdt;
    plain.out_of_place.open_zones = 6;
    plain.out_of_place.artifact = wafer::options::ArtifactOptions::all();
    model_run_with(seeds(0x9C2), 20_000, 1_000, plain.clone(), DEVICE_BYTES);
    let dev = Arc::new(MemoryDevice::new(DEVICE_BYTES));
    let db = Db::open_on(dev, plain).unwrap();
    let mut model: Model = TREES.iter().map(|t| (t.to_string(), BTreeMap::new())).collect();
    run(&db, &mut model, 0x9C2, 20_000, 1_000);
    let oop = db.stats().out_of_place.unwrap();
    assert!(oop.gc_pool_survivors > 0, "no survivor went to the pool: {oop:?}");
    assert!(oop.gc_moved_pages > 0 && oop.zones_reset > 0, "GC must run: {oop:?}");
    check_all(&db, &model, 0x9C2);
}

/// Packing off: compressed pages concatenated, crossing slot boundaries.
#[test]
fn model_out_of_place_compressed_and_concatenated() {
    // Batches of more than a slot of compressed pages (a sweep takes at most a quarter of the
    // pool), so pages cross slot ends.
    let mut options = Options::test_min().with_buffer_pool_bytes(64 * 4096).out_of_place();
    options.eviction_batch_pages = 16;
    options.out_of_place.gc_batch_pages = 16;
    options.out_of_place.compression = wafer::options::Compression::Lz4;
    options.out_of_place.packing = false;
    model_run_with(seeds(0xCA7), 20_000, 3_000, options, 6 << 20);
}

fn model_run_with(seed: u64, steps: u64, space: u64, mut options: Options, device_bytes: u64) {
    // Evictions race the workload from the write-back thread, as in production.
    options.background_write_back = true;
    options.background_checkpoint = true;
    eprintln!("model seed {seed} (rerun with WAFER_SEED={seed}), {:?}", options.write_mode);
    let dev = Arc::new(MemoryDevice::new(device_bytes));
    let db = Db::open_on(dev.clone(), options.clone()).unwrap();
    let mut model: Model = TREES.iter().map(|t| (t.to_string(), BTreeMap::new())).collect();
    for t in TREES {
        db.tree(t).unwrap();
    }
    let baseline = db.stats().allocated_pages;
    let baseline_trees = db.stats().trees;
    run(&db, &mut model, seed, steps, space);
    check_all(&db, &model, seed);
    let report = db.check().unwrap();
    assert!(report.is_clean(), "seed {seed}: {report}");
    let stats = db.stats();
    assert!(stats.pool.misses > 100, "the tiny pool must evict: {:?}", stats.pool);
    db.close().unwrap();

    let db = Db::open_on(dev, options).unwrap();
    assert_eq!(db.tree_names().unwrap(), TREES.to_vec());
    check_all(&db, &model, seed);
    run(&db, &mut model, seed.wrapping_add(1), steps / 4, space);
    check_all(&db, &model, seed);
    for t in TREES {
        let tree = db.tree(t).unwrap();
        for k in model[t].keys() {
            assert!(tree.delete(k).unwrap(), "seed {seed}: delete {k:?}");
        }
    }
    // The engine's own trees made since (the garbage tree of range deletes) keep a root each.
    let system_trees = db.stats().trees - baseline_trees;
    assert_eq!(
        db.stats().allocated_pages,
        baseline + system_trees as u64,
        "seed {seed}: pages leaked"
    );
    let report = db.check().unwrap();
    assert!(report.is_clean(), "seed {seed}: after deleting everything: {report}");
    db.close().unwrap();
}

#[test]
fn model_single_thread_tiny_pool() {
    model_run(seeds(0xC0FFEE), 20_000, 3_000);
}

#[test]
fn model_single_thread_small_key_space() {
    model_run(seeds(42), 4_000, 300);
}

#[test]
fn model_out_of_place_tiny_pool() {
    model_run_out_of_place(seeds(0xC0FFEE), 20_000, 3_000);
}

#[test]
fn model_out_of_place_small_key_space() {
    model_run_out_of_place(seeds(42), 4_000, 300);
}

#[test]
#[ignore = "long: cargo test -p wafer --release --test model -- --ignored"]
fn model_long() {
    for seed in 1..=20 {
        model_run(seeds(seed), 100_000, 20_000);
        model_run_out_of_place(seeds(seed), 100_000, 20_000);
    }
}
