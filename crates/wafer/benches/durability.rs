//! Durability bench at the `Db` level: commits per second with `Sync` for 1 and 4 writer
//! threads (group commit at work: the writers apply under the writer mutex and share syncs),
//! and recovery time per GiB of log (crash after writing a log of `--log-mib`, then `Db::open`).
//!
//! Run: `cargo bench -p wafer --bench durability -- [--dir DIR] [--seconds 3] [--log-mib 256]`
//! Files go to DIR (default: the temp dir) and are removed afterwards. The machine is shared and
//! noisy: each commit run prints the raw 4 KiB write + fdatasync rate measured just before it.
#![allow(clippy::unwrap_used)] // A bench binary: failing loudly is what we want.
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Instant;
use wafer::device::{AlignedBuf, Device, FileDevice, FileOptions, WritePurpose, BLOCK_BYTES};
use wafer::{Db, Durability, Options, WriteBatch};

struct Args {
    dir: std::path::PathBuf,
    seconds: f64,
    log_mib: u64,
}

fn parse_args() -> Args {
    let mut args = Args { dir: std::env::temp_dir(), seconds: 3.0, log_mib: 256 };
    let mut it = std::env::args().skip(1);
    // Bounded by the argument count; unknown flags (cargo's --bench) are ignored.
    while let Some(flag) = it.next() {
        match flag.as_str() {
            "--dir" => args.dir = it.next().map(Into::into).unwrap_or(args.dir),
            "--seconds" => args.seconds = it.next().and_then(|v| v.parse().ok()).unwrap_or(3.0),
            "--log-mib" => args.log_mib = it.next().and_then(|v| v.parse().ok()).unwrap_or(256),
            _ => {}
        }
    }
    args
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

fn raw_sync_rate(path: &std::path::Path, seconds: f64) -> f64 {
    let device = FileDevice::open(path, 4 << 20, FileOptions::BUFFERED).unwrap();
    let block = AlignedBuf::zeroed(BLOCK_BYTES as usize);
    let start = Instant::now();
    let mut n = 0u64;
    // Bounded by the time budget.
    while start.elapsed().as_secs_f64() < seconds {
        device.write_at((n % 1024) * BLOCK_BYTES, &block, WritePurpose::Wal).unwrap();
        device.sync().unwrap();
        n += 1;
    }
    n as f64 / start.elapsed().as_secs_f64()
}

fn remove(path: &std::path::Path) {
    let _ = std::fs::remove_file(path);
    let _ = std::fs::remove_file(wafer::db::wal_path(path));
}

fn commit_run(args: &Args, threads: usize) {
    let path = args.dir.join(format!("wafer-durability-bench-{}.db", std::process::id()));
    remove(&path);
    let mut options = Options::production().with_buffer_pool_bytes(64 << 20);
    options.file_capacity_bytes = 256 << 20;
    options.wal_capacity_bytes = 256 << 20;
    options.checkpoint_log_bytes = 128 << 20;
    prefill(&wafer::db::wal_path(&path), options.wal_capacity_bytes);
    let raw = raw_sync_rate(&args.dir.join("wafer-durability-raw.tmp"), 1.0);
    let _ = std::fs::remove_file(args.dir.join("wafer-durability-raw.tmp"));
    let db = Db::open(&path, options).unwrap();
    let tree = db.tree("bench").unwrap();
    let stop = Arc::new(AtomicBool::new(false));
    let commits = Arc::new(AtomicU64::new(0));
    let start = Instant::now();
    let handles: Vec<_> = (0..threads)
        .map(|t| {
            let (tree, stop, commits) = (tree.clone(), stop.clone(), commits.clone());
            std::thread::spawn(move || {
                let value = [t as u8; 100];
                let mut i = 0u64;
                // Bounded by the stop flag set after the time budget.
                while !stop.load(Ordering::Relaxed) {
                    let key = (i.wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ t as u64).to_be_bytes();
                    tree.put_with(&key, &value, Durability::Sync).unwrap();
                    commits.fetch_add(1, Ordering::Relaxed);
                    i += 1;
                }
            })
        })
        .collect();
    std::thread::sleep(std::time::Duration::from_secs_f64(args.seconds));
    stop.store(true, Ordering::Relaxed);
    for h in handles {
        h.join().unwrap();
    }
    let elapsed = start.elapsed().as_secs_f64();
    let n = commits.load(Ordering::Relaxed);
    let stats = db.stats();
    let wal = stats.wal.unwrap();
    let wal_io = stats.wal_io.unwrap();
    println!(
        "Sync commits, {threads} writer(s): {:.0} commits/s ({n} in {elapsed:.1} s), {} WAL syncs \
         = {:.2} commits/sync, WAL {:.1} MiB written ({} B/commit); raw write+fdatasync \
         {raw:.0}/s before",
        n as f64 / elapsed,
        wal.syncs,
        n as f64 / wal.syncs.max(1) as f64,
        wal_io.bytes(WritePurpose::Wal) as f64 / (1 << 20) as f64,
        wal_io.bytes(WritePurpose::Wal) / n.max(1),
    );
    db.close().unwrap();
    remove(&path);
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

fn main() {
    let args = parse_args();
    commit_run(&args, 1);
    commit_run(&args, 4);
    recovery_run(&args);
}
