//! B+tree throughput: point lookups and updates of 8-byte keys, 1 and 2 threads, first with
//! everything in memory, then on a file with a buffer pool of 10% of the data.
//! Run: `cargo bench -p wafer --bench btree` (WAFER_BENCH_KEYS, WAFER_BENCH_SECS to scale).
#![allow(clippy::unwrap_used)] // A bench binary: failing loudly is the right response.
use std::sync::Arc;
use std::time::{Duration, Instant};
use wafer::device::{FileOptions, MemoryDevice, WritePurpose};
use wafer::{Db, Options, Tree};

struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }
}

/// CPU time of the calling thread: rates per CPU-second do not depend on how many other
/// processes share the machine.
fn thread_cpu_secs() -> f64 {
    let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: `ts` is a valid, writable timespec; the call only writes into it.
    let rc = unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    assert_eq!(rc, 0);
    ts.tv_sec as f64 + ts.tv_nsec as f64 * 1e-9
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

/// Runs `threads` threads for `secs`; returns ops/s per thread (wall clock).
fn run(db: &Db, tree: &Tree, op: Op, threads: u64, keys: u64, secs: f64) -> f64 {
    let before = db.stats().pool;
    let deadline = Duration::from_secs_f64(secs);
    let handles: Vec<_> = (0..threads)
        .map(|t| {
            let tree = tree.clone();
            std::thread::spawn(move || {
                let mut rng = Rng(0x1234_5678 + t * 7919);
                let start = Instant::now();
                let cpu_start = thread_cpu_secs();
                let mut done = 0u64;
                let mut found = 0u64;
                while start.elapsed() < deadline {
                    // Check the clock every 1024 operations only.
                    for _ in 0..1024 {
                        let k = rng.next() % keys;
                        match op {
                            Op::Lookup => {
                                found += tree.get(&k.to_be_bytes()).unwrap().is_some() as u64
                            }
                            Op::Update => tree.put(&k.to_be_bytes(), &done.to_le_bytes()).unwrap(),
                        }
                        done += 1;
                    }
                }
                assert!(op == Op::Update || found == done, "every key must be found");
                let cpu = thread_cpu_secs() - cpu_start;
                (done as f64 / start.elapsed().as_secs_f64(), done as f64 / cpu)
            })
        })
        .collect();
    let both: Vec<(f64, f64)> = handles.into_iter().map(|h| h.join().unwrap()).collect();
    let rates: Vec<f64> = both.iter().map(|r| r.0).collect();
    let per_cpu = both.iter().map(|r| r.1).sum::<f64>() / threads as f64;
    let after = db.stats().pool;
    let (hits, misses) = (after.hits - before.hits, after.misses - before.misses);
    let ratio = hits as f64 / (hits + misses).max(1) as f64;
    let per_thread = rates.iter().sum::<f64>() / threads as f64;
    let name = if op == Op::Lookup { "lookups" } else { "updates" };
    println!(
        "  {name:8} {threads} thread(s): {:>9.0} ops/s per thread ({:>9.0} per CPU-second), {:>9.0} total, hit ratio {:.4}, page reads {}, page writes {}",
        per_thread,
        per_cpu,
        rates.iter().sum::<f64>(),
        ratio,
        misses,
        after.page_writes - before.page_writes,
    );
    per_thread
}

fn phases(db: &Db, tree: &Tree, keys: u64, secs: f64) {
    for threads in [1, 2] {
        run(db, tree, Op::Lookup, threads, keys, secs);
    }
    for threads in [1, 2] {
        run(db, tree, Op::Update, threads, keys, secs);
    }
}

fn main() {
    // `cargo bench` passes --bench; ignore arguments.
    let keys = env_u64("WAFER_BENCH_KEYS", 1_000_000);
    let secs = env_u64("WAFER_BENCH_SECS", 2) as f64;

    println!("in memory: MemoryDevice, pool holds all data");
    let dev = Arc::new(MemoryDevice::new(4 << 30));
    let options = Options::production().with_buffer_pool_bytes(1 << 30);
    let db = Db::open_on(dev, options).unwrap();
    let tree = db.tree("bench").unwrap();
    load(&tree, keys);
    let data_pages = db.stats().allocated_pages;
    println!("  data: {data_pages} pages ({:.1} MiB)", data_pages as f64 * 4096.0 / 1048576.0);
    phases(&db, &tree, keys, secs);
    db.close().unwrap();

    let pool_bytes = (data_pages / 10).max(64) * 4096;
    // O_DIRECT as in the paper's setup, so misses reach the device instead of the page cache;
    // WAFER_BENCH_BUFFERED=1 uses the page cache instead.
    let file = if env_u64("WAFER_BENCH_BUFFERED", 0) == 1 {
        FileOptions::BUFFERED
    } else {
        FileOptions::DIRECT
    };
    println!(
        "on a file ({}): pool {:.1} MiB = 10% of the data",
        if file.direct { "O_DIRECT" } else { "buffered" },
        pool_bytes as f64 / 1048576.0
    );
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
    phases(&db, &tree, keys, secs);
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
