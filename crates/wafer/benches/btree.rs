//! B+tree point lookups and updates of 8-byte keys, 1 and 2 threads, on criterion: first with
//! everything in memory (without, then with a WAL), then on a file (O_DIRECT) with a buffer
//! pool of 10% of the data.
//! Measured in CPU time summed over the threads, so the rates are operations per CPU-second and
//! do not depend on how many other processes share the machine; after each setup the pool's hit
//! ratio and page traffic are printed.
//! Run: `cargo bench -p wafer --bench btree` (WAFER_BENCH_KEYS to scale, WAFER_BENCH_BUFFERED=1
//! for the page cache instead of O_DIRECT).
#![allow(clippy::unwrap_used)] // A bench binary: failing loudly is the right response.
use std::sync::Arc;
use std::time::{Duration, Instant};

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use wafer::device::{FileOptions, MemoryDevice, WritePurpose};
use wafer::{Db, Options, Tree};
use wafer_testkit::bench::{thread_cpu_time, ThreadCpuTime};

struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }
}

fn env_u64(name: &str, default: u64) -> u64 {
    std::env::var(name).ok().and_then(|s| s.parse().ok()).unwrap_or(default)
}

fn load(tree: &Tree, keys: u64) {
    let start = Instant::now();
    // Insert in a scrambled order so leaves fill like random inserts do.
    let mut rng = Rng(7);
    let mut order: Vec<u64> = (0..keys).collect();
    for i in (1..order.len()).rev() {
        order.swap(i, (rng.next() % (i as u64 + 1)) as usize);
    }
    for k in order {
        tree.put(&k.to_be_bytes(), &k.to_le_bytes()).unwrap();
    }
    let secs = start.elapsed().as_secs_f64();
    println!("  load {keys} keys: {:.2} s ({:.0} inserts/s)", secs, keys as f64 / secs);
}

#[derive(Clone, Copy, PartialEq)]
enum Op {
    Lookup,
    Update,
}

/// `ops` random operations on one thread; returns the thread's CPU time.
fn ops_on_this_thread(tree: &Tree, op: Op, keys: u64, ops: u64, seed: u64) -> Duration {
    let mut rng = Rng(0x1234_5678 + seed * 7919);
    let start = thread_cpu_time();
    for i in 0..ops {
        let k = rng.next() % keys;
        match op {
            Op::Lookup => assert!(tree.get(&k.to_be_bytes()).unwrap().is_some(), "key {k}"),
            Op::Update => tree.put(&k.to_be_bytes(), &i.to_le_bytes()).unwrap(),
        }
    }
    thread_cpu_time().saturating_sub(start)
}

/// `ops` operations split over `threads` threads; returns their CPU time summed.
fn ops_on_threads(tree: &Tree, op: Op, keys: u64, ops: u64, threads: u64) -> Duration {
    if threads == 1 {
        return ops_on_this_thread(tree, op, keys, ops, 0);
    }
    std::thread::scope(|scope| {
        let handles: Vec<_> = (0..threads)
            .map(|t| {
                // The first thread takes the remainder.
                let share = ops / threads + if t == 0 { ops % threads } else { 0 };
                scope.spawn(move || ops_on_this_thread(tree, op, keys, share, t))
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).sum()
    })
}

fn phases(c: &mut Criterion<ThreadCpuTime>, setup: &str, db: &Db, tree: &Tree, keys: u64) {
    let before = db.stats().pool;
    let mut group = c.benchmark_group(format!("btree {setup}, CPU time"));
    group.throughput(Throughput::Elements(1));
    for (op, name) in [(Op::Lookup, "lookups"), (Op::Update, "updates")] {
        for threads in [1, 2] {
            group.bench_function(format!("{name}, {threads} thread(s)"), |b| {
                b.iter_custom(|iters| ops_on_threads(tree, op, keys, iters, threads))
            });
        }
    }
    group.finish();
    let after = db.stats().pool;
    let (hits, misses) = (after.hits - before.hits, after.misses - before.misses);
    println!(
        "  {setup}: hit ratio {:.4}, page reads {misses}, page writes {}",
        hits as f64 / (hits + misses).max(1) as f64,
        after.page_writes - before.page_writes,
    );
}

fn btree(c: &mut Criterion<ThreadCpuTime>) {
    let keys = env_u64("WAFER_BENCH_KEYS", 1_000_000);

    println!("in memory: MemoryDevice, pool holds all data");
    let dev = Arc::new(MemoryDevice::new(4 << 30));
    let options = Options::production().with_buffer_pool_bytes(1 << 30);
    let db = Db::open_on(dev, options).unwrap();
    let tree = db.tree("bench").unwrap();
    load(&tree, keys);
    let data_pages = db.stats().allocated_pages;
    println!("  data: {data_pages} pages ({:.1} MiB)", data_pages as f64 * 4096.0 / 1048576.0);
    phases(c, "in memory", &db, &tree, keys);
    db.close().unwrap();

    // The same with a WAL (on a second memory device, commits not waiting for it): the write
    // path a durable database takes, writer mutex and log records included.
    println!("in memory with a WAL: MemoryDevice data and log, Durability::None");
    let options = Options::production()
        .with_buffer_pool_bytes(1 << 30)
        .with_durability(wafer::Durability::None);
    let wal_dev = Arc::new(MemoryDevice::new(options.wal_capacity_bytes));
    let db = Db::open_on_devices(Arc::new(MemoryDevice::new(4 << 30)), wal_dev, options).unwrap();
    let tree = db.tree("bench").unwrap();
    load(&tree, keys);
    phases(c, "in memory with a WAL", &db, &tree, keys);
    db.close().unwrap();

    let pool_bytes = (data_pages / 10).max(64) * 4096;
    // O_DIRECT as in the paper's setup, so misses reach the device instead of the page cache.
    let file = if env_u64("WAFER_BENCH_BUFFERED", 0) == 1 {
        FileOptions::BUFFERED
    } else {
        FileOptions::DIRECT
    };
    let setup = if file.direct { "on a file (O_DIRECT)" } else { "on a file (buffered)" };
    println!("{setup}: pool {:.1} MiB = 10% of the data", pool_bytes as f64 / 1048576.0);
    let path = std::env::temp_dir().join(format!("wafer-bench-{}.db", std::process::id()));
    let _ = std::fs::remove_file(&path);
    // A data-path bench: commits do not wait for the WAL (Durability::None); the log is still
    // written (Db::open keeps one in `<path>.wal`).
    let options = Options {
        file_capacity_bytes: (data_pages * 4 + 1024) * 4096,
        durability: wafer::Durability::None,
        ..Options::production()
    };
    {
        // Build the file with a big pool, then reopen with the small one.
        let db = Db::open(&path, options.clone().with_buffer_pool_bytes(1 << 30)).unwrap();
        load(&db.tree("bench").unwrap(), keys);
        db.close().unwrap();
    }
    let db = Db::open(&path, options.with_buffer_pool_bytes(pool_bytes)).unwrap();
    let tree = db.tree("bench").unwrap();
    phases(c, setup, &db, &tree, keys);
    if let Some(io) = db.stats().io {
        println!(
            "  device I/O: {} page reads, {} eviction page writes",
            io.read_ops,
            io.write_ops[WritePurpose::UserEviction as usize]
        );
    }
    db.close().unwrap();
    std::fs::remove_file(&path).unwrap();
    let _ = std::fs::remove_file(wafer::db::wal_path(&path));
}

criterion_group! {
    name = benches;
    config = Criterion::default().with_measurement(ThreadCpuTime);
    targets = btree
}
criterion_main!(benches);
