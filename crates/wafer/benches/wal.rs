//! WAL bench: commits per second with `Sync` (and group commit) for 1 and 4 writer threads on a
//! real file (fdatasync is the sync), then recovery (read + verify) time per GiB of log.
//!
//! Run: `cargo bench -p wafer --bench wal -- [--dir DIR] [--seconds 3] [--payload 128]
//!       [--log-mib 1024] [--direct]`
//! The machine is shared and noisy: the figures are what one run saw, not a promise.
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};
use wafer::device::{
    AlignedBuf, Counted, Device, FileDevice, FileOptions, WritePurpose, BLOCK_BYTES,
};
use wafer::stats::IoStats;
use wafer::wal::{Durability, Wal, WalError, WalOptions, GROUP_SIZE_BUCKETS};

struct Args {
    dir: std::path::PathBuf,
    seconds: f64,
    payload_bytes: usize,
    log_mib: u64,
    direct: bool,
}

fn parse_args() -> Args {
    let mut args = Args {
        dir: std::env::temp_dir(),
        seconds: 3.0,
        payload_bytes: 128,
        log_mib: 1024,
        direct: false,
    };
    let mut it = std::env::args().skip(1);
    // Bounded by the argument count; unknown flags (e.g. cargo's --bench) are ignored.
    while let Some(flag) = it.next() {
        match flag.as_str() {
            "--dir" => args.dir = it.next().map(Into::into).unwrap_or(args.dir),
            "--seconds" => args.seconds = it.next().and_then(|v| v.parse().ok()).unwrap_or(3.0),
            "--payload" => {
                args.payload_bytes = it.next().and_then(|v| v.parse().ok()).unwrap_or(128)
            }
            "--log-mib" => args.log_mib = it.next().and_then(|v| v.parse().ok()).unwrap_or(1024),
            "--direct" => args.direct = true,
            _ => {}
        }
    }
    args
}

fn options() -> WalOptions {
    // The log file is prefilled and never trimmed, as a recycled log after its first lap: the
    // commit path then overwrites allocated blocks and fdatasync has no metadata to write.
    WalOptions { trim: false, ..WalOptions::production() }
}

/// Writes the whole file once so the log overwrites allocated blocks.
fn prefill(path: &std::path::Path, capacity_bytes: u64) {
    let dev = FileDevice::open(path, capacity_bytes, FileOptions::BUFFERED).expect("open");
    let chunk = AlignedBuf::zeroed(1 << 20);
    for i in 0..capacity_bytes / chunk.len() as u64 {
        dev.write_at(i * chunk.len() as u64, &chunk, WritePurpose::Metadata).expect("prefill");
    }
    dev.sync().expect("prefill sync");
}

fn open_device(path: &std::path::Path, capacity_bytes: u64, direct: bool) -> Arc<dyn Device> {
    let file_options = if direct { FileOptions::DIRECT } else { FileOptions::BUFFERED };
    let file = FileDevice::open(path, capacity_bytes, file_options).expect("open log file");
    Arc::new(Counted::new(file, Arc::new(IoStats::default())))
}

/// The device's own rate of 4 KiB write + fdatasync, one at a time, measured right before a
/// run: the yardstick for one writer with `Sync` (the machine's I/O is shared and drifts).
fn raw_sync_rate(path: &std::path::Path, direct: bool, seconds: f64) -> f64 {
    let device = open_device(path, 256 << 20, direct);
    let block = AlignedBuf::zeroed(BLOCK_BYTES as usize);
    let start = Instant::now();
    let mut n = 0u64;
    // Bounded by the time budget.
    while start.elapsed().as_secs_f64() < seconds {
        device.write_at((n % 1024) * BLOCK_BYTES, &block, WritePurpose::Wal).expect("write");
        device.sync().expect("sync");
        n += 1;
    }
    n as f64 / start.elapsed().as_secs_f64()
}

fn commit_run(
    args: &Args,
    path: &std::path::Path,
    threads: usize,
    durability: Durability,
    max_waiters: u32,
) {
    let raw_sync_per_s = raw_sync_rate(path, args.direct, 1.0);
    let capacity_bytes = 256 << 20;
    let device = open_device(path, capacity_bytes, args.direct);
    let wal_options = WalOptions { group_commit_max_waiters: max_waiters, ..options() };
    let wal = Arc::new(Wal::create(device, wal_options).expect("create wal"));
    let stop = Arc::new(AtomicBool::new(false));
    let commits = Arc::new(AtomicU64::new(0));
    let latency_ns = Arc::new(AtomicU64::new(0));
    let start = Instant::now();
    let workers: Vec<_> = (0..threads)
        .map(|t| {
            let (wal, stop, commits, latency_ns) =
                (wal.clone(), stop.clone(), commits.clone(), latency_ns.clone());
            let payload = vec![t as u8; args.payload_bytes];
            std::thread::spawn(move || {
                while !stop.load(Ordering::Relaxed) {
                    let began = Instant::now();
                    let lsn = match wal.append(1, &payload) {
                        Ok(lsn) => lsn,
                        Err(WalError::LogFull { .. }) => {
                            // Stand-in for a checkpoint: keep nothing.
                            wal.truncate_before(wal.durable_lsn()).expect("truncate");
                            continue;
                        }
                        Err(e) => panic!("append: {e}"),
                    };
                    wal.commit(lsn, durability).expect("commit");
                    latency_ns.fetch_add(began.elapsed().as_nanos() as u64, Ordering::Relaxed);
                    commits.fetch_add(1, Ordering::Relaxed);
                }
            })
        })
        .collect();
    std::thread::sleep(Duration::from_secs_f64(args.seconds));
    stop.store(true, Ordering::Relaxed);
    for w in workers {
        w.join().expect("worker");
    }
    let secs = start.elapsed().as_secs_f64();
    let s = wal.stats().snapshot();
    let n = commits.load(Ordering::Relaxed);
    let hist: Vec<String> = GROUP_SIZE_BUCKETS
        .iter()
        .zip(s.group_sizes.iter())
        .filter(|(_, c)| **c > 0)
        .map(|(b, c)| if *b == u64::MAX { format!(">128:{c}") } else { format!("<={b}:{c}") })
        .collect();
    println!(
        "{:<32} waiters<={max_waiters} threads {threads}: {:>8.0} commits/s (raw sync {:>5.0}/s), mean latency {:>7.1} us, {:>6} flushes, \
         {:.2} commits/flush, {:.0} WAL bytes/commit ({:.0}% padding), groups [{}]",
        format!("{durability:?}"),
        n as f64 / secs,
        raw_sync_per_s,
        latency_ns.load(Ordering::Relaxed) as f64 / n.max(1) as f64 / 1e3,
        s.flushes,
        n as f64 / s.flushes.max(1) as f64,
        s.device_bytes_written as f64 / n.max(1) as f64,
        100.0 * s.padding_bytes as f64 / s.device_bytes_written.max(1) as f64,
        hist.join(" ")
    );
}

fn recovery_run(args: &Args, path: &std::path::Path) {
    let capacity_bytes = (args.log_mib << 20) + 2 * BLOCK_BYTES;
    prefill(path, capacity_bytes);
    let device = open_device(path, capacity_bytes, false);
    let wal = Wal::create(device, options()).expect("create wal");
    let fill_bytes = (args.log_mib << 20) * 95 / 100;
    let mut payload = vec![0u8; 4000];
    let mut i = 0u64;
    let started = Instant::now();
    // Bounded by the fill target: every append advances the log.
    while wal.next_lsn().0 < fill_bytes {
        // Page-level redo sizes: mostly small deltas, some full-page images.
        let len = if i.is_multiple_of(16) { 4000 } else { 64 + (i as usize * 37) % 400 };
        payload[..8].copy_from_slice(&i.to_le_bytes());
        let lsn = wal.append((i % 7) as u8, &payload[..len]).expect("append");
        wal.commit(lsn, Durability::None).expect("commit");
        i += 1;
    }
    wal.close().expect("close");
    println!(
        "wrote {:.0} MiB of log ({i} records) in {:.2} s",
        fill_bytes as f64 / (1 << 20) as f64,
        started.elapsed().as_secs_f64()
    );
    for direct in [false, true] {
        let device = open_device(path, capacity_bytes, direct);
        let started = Instant::now();
        let mut recovery = match Wal::open(device, options()) {
            Ok(r) => r,
            Err(e) => {
                println!("recovery (direct {direct}): open failed: {e}");
                continue;
            }
        };
        let mut records = 0u64;
        // Bounded by the log: the iterator ends at its end.
        for r in recovery.by_ref() {
            r.expect("record");
            records += 1;
        }
        let (_wal, report) = recovery.finish().expect("finish");
        let secs = started.elapsed().as_secs_f64();
        let gib = (report.blocks_read * BLOCK_BYTES) as f64 / (1u64 << 30) as f64;
        println!(
            "recovery {:<26}: {records} records, {:.2} GiB read in {:.2} s = {:.2} s/GiB ({:.0} MB/s)",
            if direct { "(O_DIRECT, cold)" } else { "(buffered, page cache warm)" },
            gib,
            secs,
            secs / gib,
            gib * (1u64 << 30) as f64 / secs / 1e6
        );
    }
}

fn main() {
    let args = parse_args();
    let path = args.dir.join(format!("wafer-wal-bench-{}.log", std::process::id()));
    if args.direct {
        if let Err(e) = FileDevice::open(&path, 1 << 20, FileOptions::DIRECT) {
            println!("O_DIRECT unavailable in {}: {e}", args.dir.display());
            return;
        }
    }
    println!(
        "WAL bench: file {} ({}), payload {} B, {} s per run",
        path.display(),
        if args.direct { "O_DIRECT" } else { "buffered" },
        args.payload_bytes,
        args.seconds
    );
    prefill(&path, 256 << 20);
    // Let the host absorb the prefill before timing syncs.
    std::thread::sleep(Duration::from_secs(2));
    let group = Durability::GroupCommit { max_delay: Duration::from_micros(500) };
    for (threads, durability, max_waiters) in [
        (1, Durability::Sync, 0),
        (4, Durability::Sync, 0),
        (1, Durability::Sync, 0),
        (4, Durability::Sync, 0),
        (1, group, 0),
        (4, group, 0),
        (4, group, 4),
        (4, Durability::None, 0),
    ] {
        commit_run(&args, &path, threads, durability, max_waiters);
    }
    recovery_run(&args, &path);
    let _ = std::fs::remove_file(&path);
}
