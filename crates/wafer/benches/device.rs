//! Device bench: 4 KiB random writes in batches of 64 to a 1 GiB file, pread/pwrite vs io_uring,
//! buffered vs O_DIRECT; then random 4 KiB read batches. Prints MB/s (1 MB = 10^6 bytes).
//!
//! Run: `cargo bench -p wafer --bench device -- [--dir DIR] [--file-mib 1024] [--batches 2048]`
//! The machine is shared and noisy: the figures are what one run saw, not a promise.
use flashemu::rng::SplitMix64;
use std::time::Instant;
use wafer::device::{
    AlignedBuf, Device, FileDevice, FileOptions, Placement, ReadOp, WriteOp, WritePurpose,
    BLOCK_BYTES,
};

const BATCH_OPS: usize = 64;

struct Args {
    dir: std::path::PathBuf,
    file_mib: u64,
    batches: u64,
}

fn parse_args() -> Args {
    let mut args = Args { dir: std::env::temp_dir(), file_mib: 1024, batches: 2048 };
    let mut it = std::env::args().skip(1);
    // Bounded by the argument count; unknown flags (e.g. cargo's --bench) are ignored.
    while let Some(flag) = it.next() {
        match flag.as_str() {
            "--dir" => args.dir = it.next().map(Into::into).unwrap_or(args.dir),
            "--file-mib" => {
                args.file_mib = it.next().and_then(|v| v.parse().ok()).unwrap_or(args.file_mib)
            }
            "--batches" => {
                args.batches = it.next().and_then(|v| v.parse().ok()).unwrap_or(args.batches)
            }
            _ => {}
        }
    }
    args
}

fn mb_per_s(bytes: u64, secs: f64) -> f64 {
    bytes as f64 / secs / 1e6
}

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
    let secs = start.elapsed().as_secs_f64();
    println!(
        "prefill {} MiB sequential (buffered + fdatasync): {:.0} MB/s",
        capacity_bytes >> 20,
        mb_per_s(capacity_bytes, secs)
    );
}

fn run(
    label: &str,
    path: &std::path::Path,
    capacity_bytes: u64,
    options: FileOptions,
    batches: u64,
) {
    let dev = match FileDevice::open(path, capacity_bytes, options) {
        Ok(dev) => dev,
        Err(e) => {
            println!("{label:<22} skipped: {e}");
            return;
        }
    };
    let engine = if dev.uses_io_uring() { "io_uring" } else { "pread/pwrite" };
    if let Some(reason) = dev.io_uring_unavailable_reason() {
        println!("{label:<22} io_uring unavailable, using pread/pwrite: {reason}");
    }
    let blocks = capacity_bytes / BLOCK_BYTES;
    let bufs: Vec<AlignedBuf> =
        (0..BATCH_OPS).map(|i| AlignedBuf::copy_of(&[i as u8 + 1; BLOCK_BYTES as usize])).collect();
    // The same offsets for every configuration.
    let mut rng = SplitMix64::new(42);
    let bytes = batches * BATCH_OPS as u64 * BLOCK_BYTES;

    let start = Instant::now();
    for _ in 0..batches {
        let offsets: Vec<u64> =
            (0..BATCH_OPS).map(|_| (rng.next_u64() % blocks) * BLOCK_BYTES).collect();
        let ops: Vec<WriteOp<'_>> = offsets
            .iter()
            .zip(&bufs)
            .map(|(o, b)| WriteOp {
                offset: *o,
                data: b,
                purpose: WritePurpose::UserEviction,
                placement: Placement::None,
            })
            .collect();
        dev.write_batch(&ops).expect("write batch");
    }
    let write_secs = start.elapsed().as_secs_f64();
    dev.sync().expect("sync");
    let synced_secs = start.elapsed().as_secs_f64();

    let mut rbufs: Vec<AlignedBuf> =
        (0..BATCH_OPS).map(|_| AlignedBuf::zeroed(BLOCK_BYTES as usize)).collect();
    let read_batches = batches / 2;
    let start = Instant::now();
    for _ in 0..read_batches {
        let offsets: Vec<u64> =
            (0..BATCH_OPS).map(|_| (rng.next_u64() % blocks) * BLOCK_BYTES).collect();
        let mut ops: Vec<ReadOp<'_>> = offsets
            .iter()
            .zip(rbufs.iter_mut())
            .map(|(o, b)| ReadOp { offset: *o, buf: &mut b[..] })
            .collect();
        dev.read_batch(&mut ops).expect("read batch");
    }
    let read_secs = start.elapsed().as_secs_f64();
    let read_bytes = read_batches * BATCH_OPS as u64 * BLOCK_BYTES;
    println!(
        "{label:<22} {engine:<12} write {:>7.1} MB/s, write+fdatasync {:>7.1} MB/s, random read {:>7.1} MB/s  ({} MiB written)",
        mb_per_s(bytes, write_secs),
        mb_per_s(bytes, synced_secs),
        mb_per_s(read_bytes, read_secs),
        bytes >> 20
    );
}

fn main() {
    let args = parse_args();
    let capacity_bytes = args.file_mib << 20;
    let path = args.dir.join(format!("wafer-device-bench-{}.img", std::process::id()));
    println!(
        "file {} ({} MiB), {} batches of {BATCH_OPS} x 4 KiB random writes",
        path.display(),
        args.file_mib,
        args.batches
    );
    prefill(&path, capacity_bytes);
    run("buffered pwrite", &path, capacity_bytes, FileOptions::BUFFERED, args.batches);
    run("buffered io_uring", &path, capacity_bytes, FileOptions::URING, args.batches);
    run("O_DIRECT pwrite", &path, capacity_bytes, FileOptions::DIRECT, args.batches);
    run("O_DIRECT io_uring", &path, capacity_bytes, FileOptions::DIRECT_URING, args.batches);
    let _ = std::fs::remove_file(&path);
}
