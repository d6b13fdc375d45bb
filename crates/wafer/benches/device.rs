//! Device bench on criterion: 4 KiB random writes and reads in batches of 64 on a 1 GiB file,
//! pread/pwrite vs io_uring, buffered vs O_DIRECT, and a write batch followed by fdatasync.
//! Wall-clock time (the work is I/O, not CPU); criterion prints bytes per second.
//!
//! Run: `cargo bench -p wafer --bench device` (WAFER_BENCH_DIR for the file's directory,
//! WAFER_BENCH_FILE_MIB for its size). The machine is shared and noisy: the figures are what
//! one run saw, not a promise.
use std::time::Instant;

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use flashemu::rng::SplitMix64;
use wafer::device::{
    AlignedBuf, Device, FileDevice, FileOptions, Placement, ReadOp, WriteOp, WritePurpose,
    BLOCK_BYTES,
};

const BATCH_OPS: usize = 64;
const BATCH_BYTES: u64 = BATCH_OPS as u64 * BLOCK_BYTES;

/// Writes the whole file once so later runs overwrite allocated blocks (no extent allocation).
fn prefill(path: &std::path::Path, capacity_bytes: u64) {
    let dev =
        FileDevice::open(path, capacity_bytes, FileOptions::BUFFERED).expect("open for prefill");
    let chunk = AlignedBuf::zeroed(1 << 20);
    let start = Instant::now();
    for i in 0..capacity_bytes / chunk.len() as u64 {
        dev.write_at(i * chunk.len() as u64, &chunk, WritePurpose::Metadata)
            .expect("prefill write");
    }
    dev.sync().expect("prefill sync");
    println!(
        "prefill {} MiB sequential (buffered + fdatasync): {:.0} MB/s",
        capacity_bytes >> 20,
        capacity_bytes as f64 / start.elapsed().as_secs_f64() / 1e6
    );
}

/// Random block-aligned offsets for one batch.
fn offsets(rng: &mut SplitMix64, blocks: u64) -> Vec<u64> {
    (0..BATCH_OPS).map(|_| (rng.next_u64() % blocks) * BLOCK_BYTES).collect()
}

fn write_batch(dev: &FileDevice, rng: &mut SplitMix64, blocks: u64, bufs: &[AlignedBuf]) {
    let offsets = offsets(rng, blocks);
    let ops: Vec<WriteOp<'_>> = offsets
        .iter()
        .zip(bufs)
        .map(|(o, b)| WriteOp {
            offset: *o,
            data: b,
            purpose: WritePurpose::UserEviction,
            placement: Placement::None,
        })
        .collect();
    dev.write_batch(&ops).expect("write batch");
}

fn read_batch(dev: &FileDevice, rng: &mut SplitMix64, blocks: u64, bufs: &mut [AlignedBuf]) {
    let offsets = offsets(rng, blocks);
    let mut ops: Vec<ReadOp<'_>> = offsets
        .iter()
        .zip(bufs.iter_mut())
        .map(|(o, b)| ReadOp { offset: *o, buf: &mut b[..] })
        .collect();
    dev.read_batch(&mut ops).expect("read batch");
}

fn configuration(c: &mut Criterion, label: &str, path: &std::path::Path, options: FileOptions) {
    let capacity_bytes = std::fs::metadata(path).map(|m| m.len()).unwrap_or(0);
    let dev = match FileDevice::open(path, capacity_bytes, options) {
        Ok(dev) => dev,
        Err(e) => {
            println!("{label}: skipped: {e}");
            return;
        }
    };
    if let Some(reason) = dev.io_uring_unavailable_reason() {
        println!("{label}: io_uring unavailable, using pread/pwrite: {reason}");
    }
    let engine = if dev.uses_io_uring() { "io_uring" } else { "pread/pwrite" };
    let blocks = capacity_bytes / BLOCK_BYTES;
    let bufs: Vec<AlignedBuf> =
        (0..BATCH_OPS).map(|i| AlignedBuf::copy_of(&[i as u8 + 1; BLOCK_BYTES as usize])).collect();
    let mut rbufs: Vec<AlignedBuf> =
        (0..BATCH_OPS).map(|_| AlignedBuf::zeroed(BLOCK_BYTES as usize)).collect();
    // The same offsets for every configuration.
    let mut rng = SplitMix64::new(42);

    let mut group = c.benchmark_group(format!("{label} ({engine})"));
    group.throughput(Throughput::Bytes(BATCH_BYTES));
    group.bench_function("write 64 x 4 KiB random", |b| {
        b.iter(|| write_batch(&dev, &mut rng, blocks, &bufs))
    });
    group.bench_function("write 64 x 4 KiB random + fdatasync", |b| {
        b.iter(|| {
            write_batch(&dev, &mut rng, blocks, &bufs);
            dev.sync().expect("sync");
        })
    });
    group.bench_function("read 64 x 4 KiB random", |b| {
        b.iter(|| read_batch(&dev, &mut rng, blocks, &mut rbufs))
    });
    group.finish();
}

fn env_u64(name: &str, default: u64) -> u64 {
    std::env::var(name).ok().and_then(|s| s.parse().ok()).unwrap_or(default)
}

fn device(c: &mut Criterion) {
    let dir = std::env::var_os("WAFER_BENCH_DIR").map_or_else(std::env::temp_dir, Into::into);
    let capacity_bytes = env_u64("WAFER_BENCH_FILE_MIB", 1024) << 20;
    let path = dir.join(format!("wafer-device-bench-{}.img", std::process::id()));
    println!("file {} ({} MiB)", path.display(), capacity_bytes >> 20);
    prefill(&path, capacity_bytes);
    configuration(c, "buffered pwrite", &path, FileOptions::BUFFERED);
    configuration(c, "buffered io_uring", &path, FileOptions::URING);
    configuration(c, "O_DIRECT pwrite", &path, FileOptions::DIRECT);
    configuration(c, "O_DIRECT io_uring", &path, FileOptions::DIRECT_URING);
    let _ = std::fs::remove_file(&path);
}

criterion_group!(benches, device);
criterion_main!(benches);
