//! Speed of the metadata-only FTL (store None) on the `cns` preset at steady state: filled
//! sequentially, then overwritten 4x its capacity with uniform random 4 KiB writes; criterion
//! then measures random 4 KiB writes submitted in queues of 64 (like fio's iodepth) and one
//! write per call, in host writes per CPU-second of this thread (the machine is shared, so
//! wall-clock rates swing with other processes' load). The WAF of the measured writes is printed
//! after them.
//!
//! Run: `cargo bench -p flashemu`. Extra overrides as `key=value` in the environment variable
//! FLASHEMU_BENCH, e.g. `FLASHEMU_BENCH="gc-policy=fifo op=0.28"`.
#![allow(clippy::unwrap_used)]
use std::time::Instant;

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use flashemu::rng::SplitMix64;
use flashemu::{Config, Placement, Ssd, StoreKind};
use wafer_testkit::bench::ThreadCpuTime;

/// Overwrite volume before measuring, in device capacities: steady state needs >= 4x (000
/// sec. 7.1).
const OVERWRITE_CAPACITIES: u64 = 4;
/// Writes per `write_scattered` call, like fio's iodepth.
const QUEUE_DEPTH: usize = 64;

fn config() -> Config {
    let mut config = Config::preset("cns").unwrap();
    config.store = StoreKind::None;
    if let Ok(overrides) = std::env::var("FLASHEMU_BENCH") {
        for pair in overrides.split_whitespace() {
            let (key, value) = pair.split_once('=').expect("override is key=value");
            config.set(key, value).unwrap();
        }
    }
    config
}

/// The device at steady state: filled, then overwritten [`OVERWRITE_CAPACITIES`] times.
fn steady_device(rng: &mut SplitMix64) -> Ssd {
    let mut ssd = Ssd::new(config()).unwrap();
    let layout = *ssd.layout();
    let logical = ssd.logical_blocks();
    println!(
        "cns: {} superblocks x {} MiB, logical {:.2} GiB, physical {:.2} GiB, policy {:?}",
        layout.superblock_count,
        layout.superblock_bytes() >> 20,
        (logical * 4096) as f64 / (1u64 << 30) as f64,
        ssd.physical_bytes() as f64 / (1u64 << 30) as f64,
        ssd.config().gc.policy,
    );
    let start = Instant::now();
    for lba in 0..logical {
        ssd.write(lba, 1, None, Placement::None).unwrap();
    }
    let mut queue = [0u64; QUEUE_DEPTH];
    for _ in 0..OVERWRITE_CAPACITIES * logical / QUEUE_DEPTH as u64 {
        queue.fill_with(|| rng.below(logical));
        ssd.write_scattered(&queue, Placement::None).unwrap();
    }
    println!(
        "fill and {OVERWRITE_CAPACITIES}x overwrite: {:.2} s wall, cumulative WAF {:.4}",
        start.elapsed().as_secs_f64(),
        ssd.counters().waf().unwrap()
    );
    ssd
}

fn overwrite(c: &mut Criterion<ThreadCpuTime>) {
    let mut rng = SplitMix64::new(42);
    let mut ssd = steady_device(&mut rng);
    let logical = ssd.logical_blocks();
    let slots_per_superblock = u64::from(ssd.layout().slots_per_superblock);
    let before = ssd.counters();

    let mut group = c.benchmark_group("cns steady state, CPU time");
    group.throughput(Throughput::Elements(QUEUE_DEPTH as u64));
    let mut queue = [0u64; QUEUE_DEPTH];
    group.bench_function("random 4 KiB writes, queues of 64", |b| {
        b.iter(|| {
            queue.fill_with(|| rng.below(logical));
            ssd.write_scattered(&queue, Placement::None).unwrap();
        })
    });
    group.throughput(Throughput::Elements(1));
    group.bench_function("random 4 KiB writes, one per call", |b| {
        b.iter(|| ssd.write(rng.below(logical), 1, None, Placement::None).unwrap())
    });
    group.finish();

    let measured = ssd.counters().since(&before);
    println!(
        "WAF of the {} measured writes ({:.1} capacities): {:.4}; GC victims {}, mean victim \
         valid {:.3}",
        measured.host_write_bytes / 4096,
        measured.host_write_bytes as f64 / (logical * 4096) as f64,
        measured.waf().unwrap_or(f64::NAN),
        measured.gc_victims,
        measured.gc_copied_blocks as f64
            / (measured.gc_victims.max(1) * slots_per_superblock) as f64,
    );
}

criterion_group! {
    name = benches;
    config = Criterion::default().with_measurement(ThreadCpuTime);
    targets = overwrite
}
criterion_main!(benches);
