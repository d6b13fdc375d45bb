//! Speed of the metadata-only FTL: fill the `cns` preset sequentially, then overwrite 4x its
//! capacity with uniform random 4 KiB writes (store None) submitted in queues of 64, then one
//! more capacity one write per call; print host writes/s of both and WAF.
//!
//! Run: `cargo bench -p flashemu` (release profile). Extra overrides as `key=value` in the
//! environment variable FLASHEMU_BENCH, e.g. `FLASHEMU_BENCH="gc-policy=fifo op=0.28"`.
#![allow(clippy::unwrap_used)]
use std::time::Instant;

use flashemu::rng::SplitMix64;
use flashemu::{Config, Placement, Ssd, StoreKind};

/// Overwrite volume in device capacities: steady state needs >= 4x (000 sec. 7.1).
const OVERWRITE_CAPACITIES: u64 = 4;
/// Writes per `write_scattered` call, like fio's iodepth.
const QUEUE_DEPTH: usize = 64;

/// CPU time of this thread in seconds. The machine is shared, so wall-clock rates swing with
/// other processes' load; the CPU-time rate is what one core running this code achieves.
fn thread_cpu_seconds() -> f64 {
    let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: clock_gettime writes one timespec through a pointer to a live local of that type.
    let rc = unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    assert_eq!(rc, 0, "clock_gettime(CLOCK_THREAD_CPUTIME_ID)");
    ts.tv_sec as f64 + ts.tv_nsec as f64 * 1e-9
}

fn main() {
    let mut config = Config::preset("cns").unwrap();
    config.store = StoreKind::None;
    if let Ok(overrides) = std::env::var("FLASHEMU_BENCH") {
        for pair in overrides.split_whitespace() {
            let (key, value) = pair.split_once('=').expect("override is key=value");
            config.set(key, value).unwrap();
        }
    }
    let mut ssd = Ssd::new(config).unwrap();
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
    let fill_seconds = start.elapsed().as_secs_f64();
    println!(
        "fill:   {logical} writes in {fill_seconds:.3} s = {:.1} M writes/s",
        logical as f64 / fill_seconds / 1e6
    );

    let after_fill = ssd.counters();
    let mut rng = SplitMix64::new(42);
    let writes = OVERWRITE_CAPACITIES * logical;
    let start = Instant::now();
    let start_cpu = thread_cpu_seconds();
    let mut queue = [0u64; QUEUE_DEPTH];
    for _ in 0..writes / QUEUE_DEPTH as u64 {
        queue.fill_with(|| rng.below(logical));
        ssd.write_scattered(&queue, Placement::None).unwrap();
    }
    for _ in 0..writes % QUEUE_DEPTH as u64 {
        ssd.write(rng.below(logical), 1, None, Placement::None).unwrap();
    }
    let seconds = start.elapsed().as_secs_f64();
    let cpu_seconds = thread_cpu_seconds() - start_cpu;
    let total = ssd.counters();
    let interval = total.since(&after_fill);
    let (last_capacity, single_cpu_seconds) = {
        // WAF of the last capacity's worth of writes: the steady state. Issued one `write`
        // call at a time, to show the rate without a queue.
        let before = ssd.counters();
        let start_cpu = thread_cpu_seconds();
        for _ in 0..logical {
            ssd.write(rng.below(logical), 1, None, Placement::None).unwrap();
        }
        (ssd.counters().since(&before), thread_cpu_seconds() - start_cpu)
    };
    println!(
        "random, queues of {QUEUE_DEPTH}: {writes} writes in {seconds:.3} s wall = {:.1} M host \
         writes/s; {cpu_seconds:.3} s CPU = {:.1} M host writes/s per core",
        writes as f64 / seconds / 1e6,
        writes as f64 / cpu_seconds / 1e6
    );
    println!(
        "random, one write per call: {logical} writes in {single_cpu_seconds:.3} s CPU = {:.1} M \
         host writes/s per core",
        logical as f64 / single_cpu_seconds / 1e6
    );
    println!(
        "WAF: overwrite phase {:.4}, steady state (5th capacity) {:.4}, cumulative {:.4}; \
         GC victims {}, mean victim valid {:.3}",
        interval.waf().unwrap(),
        last_capacity.waf().unwrap(),
        ssd.counters().waf().unwrap(),
        total.gc_victims,
        last_capacity.gc_copied_blocks as f64
            / (last_capacity.gc_victims.max(1) * u64::from(layout.slots_per_superblock)) as f64,
    );
}
