//! Durability bench at the `Db` level, on criterion: commits per second with `Sync` for 1 and 4
//! writer threads (group commit at work: the writers apply under the writer mutex and share
//! syncs), beside the file's own 4 KiB write + fdatasync rate; then recovery time per GiB of log
//! (crash after writing a log of WAFER_BENCH_LOG_MIB, 256 by default, then `Db::open`), measured
//! once and printed: recovery consumes the crashed state, so it cannot be sampled.
//!
//! Run: `cargo bench -p wafer --bench durability` (WAFER_BENCH_DIR for the files, removed
//! afterwards). The machine is shared and noisy: the raw sync rate is the yardstick.
#![allow(clippy::unwrap_used)] // A bench binary: failing loudly is what we want.
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use criterion::{criterion_group, criterion_main, Criterion, SamplingMode, Throughput};
use wafer::device::{AlignedBuf, Device, FileDevice, FileOptions, WritePurpose, BLOCK_BYTES};
use wafer::{Db, Durability, Options, Tree, WriteBatch};

struct Args {
    dir: std::path::PathBuf,
    log_mib: u64,
}

fn args() -> Args {
    Args {
        dir: std::env::var_os("WAFER_BENCH_DIR").map_or_else(std::env::temp_dir, Into::into),
        log_mib: std::env::var("WAFER_BENCH_LOG_MIB")
            .ok()
            .and_then(|v| v.parse().ok())
            .unwrap_or(256),
    }
}

/// Writes the whole file once, so the log overwrites allocated blocks (a recycled log) and
/// fdatasync has no extent metadata to write.
fn prefill(path: &std::path::Path, capacity_bytes: u64) {
    let dev = FileDevice::open(path, capacity_bytes, FileOptions::BUFFERED).unwrap();
    let chunk = AlignedBuf::zeroed(1 << 20);
    for i in 0..capacity_bytes / chunk.len() as u64 {
        dev.write_at(i * chunk.len() as u64, &chunk, WritePurpose::Metadata).unwrap();
    }
    dev.sync().unwrap();
}

fn remove(path: &std::path::Path) {
    let _ = std::fs::remove_file(path);
    let _ = std::fs::remove_file(wafer::db::wal_path(path));
}

/// `commits` Sync puts split over `threads` writers; returns the wall time they took.
fn puts_on_threads(tree: &Tree, threads: u64, commits: u64, round: u64) -> Duration {
    let start = Instant::now();
    std::thread::scope(|scope| {
        for t in 0..threads {
            // The first writer takes the remainder.
            let share = commits / threads + if t == 0 { commits % threads } else { 0 };
            scope.spawn(move || {
                let value = [t as u8; 100];
                for i in 0..share {
                    let seq = round.wrapping_add(i);
                    let key = (seq.wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ t).to_be_bytes();
                    tree.put_with(&key, &value, Durability::Sync).unwrap();
                }
            });
        }
    });
    start.elapsed()
}

fn commits(c: &mut Criterion, args: &Args) {
    let mut group = c.benchmark_group("Db Sync commits");
    group.sample_size(10).sampling_mode(SamplingMode::Flat).throughput(Throughput::Elements(1));
    group.measurement_time(Duration::from_secs(3));
    let raw_path = args.dir.join(format!("wafer-durability-raw-{}.tmp", std::process::id()));
    let device = FileDevice::open(&raw_path, 4 << 20, FileOptions::BUFFERED).unwrap();
    let block = AlignedBuf::zeroed(BLOCK_BYTES as usize);
    let mut n = 0u64;
    group.bench_function("raw 4 KiB write + fdatasync", |b| {
        b.iter(|| {
            device.write_at((n % 1024) * BLOCK_BYTES, &block, WritePurpose::Wal).unwrap();
            device.sync().unwrap();
            n += 1;
        })
    });
    drop(device);
    let _ = std::fs::remove_file(&raw_path);

    let path = args.dir.join(format!("wafer-durability-bench-{}.db", std::process::id()));
    for threads in [1u64, 4] {
        remove(&path);
        let mut options = Options::production().with_buffer_pool_bytes(64 << 20);
        options.file_capacity_bytes = 256 << 20;
        options.wal_capacity_bytes = 256 << 20;
        options.checkpoint_log_bytes = 128 << 20;
        prefill(&wafer::db::wal_path(&path), options.wal_capacity_bytes);
        let db = Db::open(&path, options).unwrap();
        let tree = db.tree("bench").unwrap();
        let total = AtomicU64::new(0);
        group.bench_function(format!("{threads} writer(s)"), |b| {
            b.iter_custom(|iters| {
                let round = total.fetch_add(iters, Ordering::Relaxed);
                puts_on_threads(&tree, threads, iters, round)
            })
        });
        let n = total.into_inner();
        let stats = db.stats();
        let (wal, wal_io) = (stats.wal.unwrap(), stats.wal_io.unwrap());
        println!(
            "  {threads} writer(s): {n} commits, {} WAL syncs = {:.2} commits/sync, WAL {:.1} MiB \
             written ({} B/commit)",
            wal.syncs,
            n as f64 / wal.syncs.max(1) as f64,
            wal_io.bytes(WritePurpose::Wal) as f64 / (1 << 20) as f64,
            wal_io.bytes(WritePurpose::Wal) / n.max(1),
        );
        drop(tree);
        db.close().unwrap();
        remove(&path);
    }
    group.finish();
}

fn recovery_run(args: &Args) {
    let path = args.dir.join(format!("wafer-recovery-bench-{}.db", std::process::id()));
    remove(&path);
    let log_bytes = args.log_mib << 20;
    let mut options = Options::production().with_buffer_pool_bytes(256 << 20);
    options.file_capacity_bytes = 1 << 30;
    options.wal_capacity_bytes = log_bytes + (log_bytes / 2).max(64 << 20);
    // No checkpoint while the log grows: recovery replays all of it.
    options.checkpoint_log_bytes = options.wal_capacity_bytes - (16 << 20);
    options.durability = Durability::None;
    let db = Db::open(&path, options.clone()).unwrap();
    let tree = db.tree("bench").unwrap();
    let fill = Instant::now();
    let mut i = 0u64;
    // Bounded: each round appends at least one record; ends when the log reached its size.
    loop {
        let wal = db.stats().wal.unwrap();
        if wal.device_bytes_written >= log_bytes {
            break;
        }
        let mut batch = WriteBatch::new();
        for _ in 0..100 {
            // 2M distinct keys, then overwrites: leaves get reused and the pool holds them.
            let key = ((i % 2_000_000).wrapping_mul(0x9E37_79B9_7F4A_7C15)).to_be_bytes();
            let len = 40 + (i % 200) as usize;
            batch.put("bench", &key, &vec![i as u8; len]);
            i += 1;
        }
        db.write(&batch).unwrap();
        if i.is_multiple_of(100_000) {
            // Every so often a Sync commit, as a real workload would have.
            tree.put_with(b"sync", &i.to_le_bytes(), Durability::Sync).unwrap();
        }
    }
    let fill_s = fill.elapsed().as_secs_f64();
    // Make the log durable (the bench measures replay, not loss), then crash: drop, no close.
    tree.put_with(b"end", b"end", Durability::Sync).unwrap();
    let written = db.stats().wal.unwrap().device_bytes_written;
    drop(tree);
    drop(db);
    // Drop the data file's cached pages? We cannot without root; recovery reads through the
    // page cache as a restart after a process crash would.
    let start = Instant::now();
    let db = Db::open(&path, options).unwrap();
    let open_s = start.elapsed().as_secs_f64();
    let r = db.stats().recovery.unwrap();
    let replay_s = r.duration_micros as f64 / 1e6;
    let gib = written as f64 / (1u64 << 30) as f64;
    println!(
        "Recovery: {:.0} MiB of log ({} records, {} batches, {} page records applied, {} \
         skipped) replayed in {replay_s:.2} s = {:.2} s/GiB; open incl. the checkpoint after \
         redo {open_s:.2} s; (filling took {fill_s:.1} s, {i} puts)",
        written as f64 / (1 << 20) as f64,
        r.redo.records,
        r.redo.batches,
        r.redo.applied,
        r.redo.skipped,
        replay_s / gib,
    );
    assert_eq!(db.tree("bench").unwrap().get(b"end").unwrap(), Some(b"end".to_vec()));
    assert_eq!(db.tree("bench").unwrap().get(b"sync").unwrap().map(|v| v.len()), Some(8));
    db.close().unwrap();
    remove(&path);
}

fn durability(c: &mut Criterion) {
    let args = args();
    commits(c, &args);
    recovery_run(&args);
}

criterion_group!(benches, durability);
criterion_main!(benches);
