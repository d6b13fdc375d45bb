//! WAL bench on criterion: commits per second with `Sync`, group commit and `None` for 1 and 4
//! writer threads on a real file (fdatasync is the sync), beside the file's own rate of one 4 KiB
//! write + fdatasync (the yardstick for one writer with `Sync`; the machine's I/O is shared and
//! drifts); then recovery (read + verify) of a 1 GiB log. Wall time. After each commit bench
//! the log's flushes, commits per flush, bytes per commit and group sizes are printed.
//!
//! Run: `cargo bench -p wafer --bench wal`. Environment: WAFER_BENCH_DIR (the file's
//! directory), WAFER_BENCH_PAYLOAD (bytes per record, 128), WAFER_BENCH_LOG_MIB (recovery log,
//! 1024), WAFER_BENCH_DIRECT=1 (O_DIRECT for the commit runs).
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use criterion::{criterion_group, criterion_main, Criterion, SamplingMode, Throughput};
use wafer::device::{
    AlignedBuf, Counted, Device, FileDevice, FileOptions, WritePurpose, BLOCK_BYTES,
};
use wafer::internals::wal::{Wal, WalError, WalOptions, WalStatsSnapshot, GROUP_SIZE_BUCKETS};
use wafer::stats::IoStats;
use wafer::Durability;

const COMMIT_LOG_BYTES: u64 = 256 << 20;

struct Args {
    dir: std::path::PathBuf,
    payload_bytes: usize,
    log_mib: u64,
    direct: bool,
}

fn env_u64(name: &str, default: u64) -> u64 {
    std::env::var(name).ok().and_then(|s| s.parse().ok()).unwrap_or(default)
}

fn args() -> Args {
    Args {
        dir: std::env::var_os("WAFER_BENCH_DIR").map_or_else(std::env::temp_dir, Into::into),
        payload_bytes: env_u64("WAFER_BENCH_PAYLOAD", 128) as usize,
        log_mib: env_u64("WAFER_BENCH_LOG_MIB", 1024),
        direct: env_u64("WAFER_BENCH_DIRECT", 0) == 1,
    }
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

/// `commits` commits split over `threads` writers; returns the wall time they took.
fn commit_on_threads(
    wal: &Wal,
    threads: u64,
    commits: u64,
    durability: Durability,
    payload_bytes: usize,
) -> Duration {
    let start = Instant::now();
    std::thread::scope(|scope| {
        for t in 0..threads {
            // The first writer takes the remainder.
            let share = commits / threads + if t == 0 { commits % threads } else { 0 };
            let payload = vec![t as u8; payload_bytes];
            scope.spawn(move || {
                let mut done = 0;
                // Bounded: every pass either commits or frees the log for the next one.
                while done < share {
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
                    done += 1;
                }
            });
        }
    });
    start.elapsed()
}

/// What the log did during one bench: flushes, group sizes, bytes per commit.
fn print_log_figures(name: &str, before: &WalStatsSnapshot, after: &WalStatsSnapshot, n: u64) {
    let flushes = after.flushes - before.flushes;
    let bytes = after.device_bytes_written - before.device_bytes_written;
    let padding = after.padding_bytes - before.padding_bytes;
    let groups: Vec<String> = GROUP_SIZE_BUCKETS
        .iter()
        .zip(after.group_sizes.iter().zip(before.group_sizes.iter()))
        .map(|(b, (a, s))| (b, a - s))
        .filter(|(_, c)| *c > 0)
        .map(|(b, c)| if *b == u64::MAX { format!(">128:{c}") } else { format!("<={b}:{c}") })
        .collect();
    println!(
        "  {name}: {n} commits, {flushes} flushes = {:.2} commits/flush, {:.0} WAL bytes/commit \
         ({:.0}% padding), groups [{}]",
        n as f64 / flushes.max(1) as f64,
        bytes as f64 / n.max(1) as f64,
        100.0 * padding as f64 / bytes.max(1) as f64,
        groups.join(" ")
    );
}

fn commits(c: &mut Criterion, args: &Args, path: &std::path::Path) {
    prefill(path, COMMIT_LOG_BYTES);
    let mut group = c.benchmark_group(if args.direct { "WAL, O_DIRECT" } else { "WAL, buffered" });
    group.sample_size(10).sampling_mode(SamplingMode::Flat).throughput(Throughput::Elements(1));
    group.measurement_time(Duration::from_secs(3));
    let device = open_device(path, 256 << 20, args.direct);
    let block = AlignedBuf::zeroed(BLOCK_BYTES as usize);
    let mut n = 0u64;
    group.bench_function("raw 4 KiB write + fdatasync", |b| {
        b.iter(|| {
            device.write_at((n % 1024) * BLOCK_BYTES, &block, WritePurpose::Wal).expect("write");
            device.sync().expect("sync");
            n += 1;
        })
    });
    drop(device);
    let group_commit = Durability::GroupCommit { max_delay: Duration::from_micros(500) };
    for (threads, durability, max_waiters) in [
        (1, Durability::Sync, 0),
        (4, Durability::Sync, 0),
        (1, group_commit, 0),
        (4, group_commit, 0),
        (4, group_commit, 4),
        (4, Durability::None, 0),
    ] {
        let device = open_device(path, COMMIT_LOG_BYTES, args.direct);
        let wal_options = WalOptions { group_commit_max_waiters: max_waiters, ..options() };
        let wal = Wal::create(device, wal_options).expect("create wal");
        let name = format!("{durability:?}, waiters<={max_waiters}, {threads} thread(s)");
        let before = wal.stats().snapshot();
        let total = AtomicU64::new(0);
        group.bench_function(&name, |b| {
            b.iter_custom(|iters| {
                total.fetch_add(iters, Ordering::Relaxed);
                commit_on_threads(&wal, threads, iters, durability, args.payload_bytes)
            })
        });
        print_log_figures(&name, &before, &wal.stats().snapshot(), total.into_inner());
    }
    group.finish();
}

/// Writes a log of about `log_mib` of page-level redo sizes (mostly small deltas, some
/// full-page images) and closes it.
fn write_log(path: &std::path::Path, capacity_bytes: u64, fill_bytes: u64) {
    prefill(path, capacity_bytes);
    let wal = Wal::create(open_device(path, capacity_bytes, false), options()).expect("create");
    let mut payload = vec![0u8; 4000];
    let mut i = 0u64;
    // Bounded by the fill target: every append advances the log.
    while wal.next_lsn().0 < fill_bytes {
        let len = if i.is_multiple_of(16) { 4000 } else { 64 + (i as usize * 37) % 400 };
        payload[..8].copy_from_slice(&i.to_le_bytes());
        let lsn = wal.append((i % 7) as u8, &payload[..len]).expect("append");
        wal.commit(lsn, Durability::None).expect("commit");
        i += 1;
    }
    wal.close().expect("close");
}

fn recovery(c: &mut Criterion, args: &Args, path: &std::path::Path) {
    let capacity_bytes = (args.log_mib << 20) + 2 * BLOCK_BYTES;
    let fill_bytes = (args.log_mib << 20) * 95 / 100;
    write_log(path, capacity_bytes, fill_bytes);
    let mut group = c.benchmark_group("WAL recovery (read + verify)");
    // Each iteration reads the whole log: few, equal samples.
    group.sample_size(10).sampling_mode(SamplingMode::Flat);
    group.throughput(Throughput::Bytes(fill_bytes));
    for (direct, name) in [(false, "buffered, page cache warm"), (true, "O_DIRECT, cold")] {
        group.bench_function(name, |b| {
            b.iter(|| {
                let device = open_device(path, capacity_bytes, direct);
                let mut recovery = Wal::open(device, options()).expect("open");
                // Bounded by the log: the iterator ends at its end.
                for r in recovery.by_ref() {
                    r.expect("record");
                }
                recovery.finish().expect("finish")
            })
        });
    }
    group.finish();
}

fn wal(c: &mut Criterion) {
    let args = args();
    let path = args.dir.join(format!("wafer-wal-bench-{}.log", std::process::id()));
    if args.direct {
        if let Err(e) = FileDevice::open(&path, 1 << 20, FileOptions::DIRECT) {
            println!("O_DIRECT unavailable in {}: {e}", args.dir.display());
            return;
        }
    }
    println!("WAL bench: file {}, payload {} B", path.display(), args.payload_bytes);
    commits(c, &args, &path);
    recovery(c, &args, &path);
    let _ = std::fs::remove_file(&path);
}

criterion_group!(benches, wal);
criterion_main!(benches);
