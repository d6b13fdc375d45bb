//! Instruction counts of the FTL's write path under valgrind's callgrind (iai-callgrind): the
//! same binary and inputs give the same counts whatever else the machine runs, so a change in
//! the FTL's cost shows here even when wall-clock benches drown in noise. The device is the
//! `tiny` preset (store None) at steady state, filled and overwritten 4x in the setup, which is
//! not counted; the benchmark is 10,000 uniform random 4 KiB writes, queued 64 at a time or one
//! per call.
//!
//! Run: `cargo bench -p flashemu --bench instructions` with valgrind and the runner of the same
//! version as the library: `cargo install iai-callgrind-runner --version 0.16.1`.
#![allow(clippy::unwrap_used)]
use std::hint::black_box;

use flashemu::rng::SplitMix64;
use flashemu::{Config, Placement, Ssd, StoreKind};
use iai_callgrind::{library_benchmark, library_benchmark_group, main};

const WRITES: u64 = 10_000;
const QUEUE_DEPTH: usize = 64;

/// The `tiny` device at steady state and the random source that continues its workload.
fn steady_tiny() -> (Ssd, SplitMix64) {
    let mut config = Config::preset("tiny").unwrap();
    config.store = StoreKind::None;
    let mut ssd = Ssd::new(config).unwrap();
    let logical = ssd.logical_blocks();
    for lba in 0..logical {
        ssd.write(lba, 1, None, Placement::None).unwrap();
    }
    let mut rng = SplitMix64::new(42);
    for _ in 0..4 * logical {
        ssd.write(rng.below(logical), 1, None, Placement::None).unwrap();
    }
    (ssd, rng)
}

#[library_benchmark]
#[bench::tiny_steady_state(steady_tiny())]
fn random_writes_queued((mut ssd, mut rng): (Ssd, SplitMix64)) -> Ssd {
    let logical = ssd.logical_blocks();
    let mut queue = [0u64; QUEUE_DEPTH];
    for _ in 0..WRITES / QUEUE_DEPTH as u64 {
        queue.fill_with(|| rng.below(logical));
        ssd.write_scattered(black_box(&queue), Placement::None).unwrap();
    }
    ssd
}

#[library_benchmark]
#[bench::tiny_steady_state(steady_tiny())]
fn random_writes_one_per_call((mut ssd, mut rng): (Ssd, SplitMix64)) -> Ssd {
    let logical = ssd.logical_blocks();
    for _ in 0..WRITES {
        ssd.write(black_box(rng.below(logical)), 1, None, Placement::None).unwrap();
    }
    ssd
}

library_benchmark_group!(
    name = ftl_writes;
    benchmarks = random_writes_queued, random_writes_one_per_call
);

main!(library_benchmark_groups = ftl_writes);
