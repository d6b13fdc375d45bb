//! Workloads whose WAF is exactly 1: nothing valid is ever left in a GC victim.
#![allow(clippy::unwrap_used)]
use flashemu::rng::SplitMix64;
use flashemu::{Config, GcPolicy, Placement, Ssd, StoreKind};

/// The cns flash (16 KiB pages, 8-block superblocks) shrunk to 16 superblocks of 4 MiB.
fn small_cns(policy: GcPolicy) -> Ssd {
    let mut config = Config::preset("cns").unwrap();
    config.set("blocks-per-chip", "4").unwrap();
    config.set("pages-per-block", "32").unwrap();
    config.set("op", "0.5").unwrap();
    config.set("gc.free-superblocks-low", "1").unwrap();
    config.set("gc.free-superblocks-high", "2").unwrap();
    config.gc.policy = policy;
    config.store = StoreKind::None;
    Ssd::new(config).unwrap()
}

#[test]
fn sequential_fill_then_sequential_overwrites() {
    // Random-d is left out on purpose: it may draw d superblocks that all still hold valid
    // data although empty ones exist, so its WAF here is above 1 by design.
    for policy in [GcPolicy::Greedy, GcPolicy::CostBenefit, GcPolicy::Fifo] {
        let mut ssd = small_cns(policy);
        let n = ssd.logical_blocks();
        assert_eq!(n % 4, 0, "logical capacity is whole 16 KiB pages");
        for _ in 0..6 {
            for lba in (0..n).step_by(8) {
                ssd.write(lba, 8.min((n - lba) as u32), None, Placement::None).unwrap();
            }
        }
        ssd.check_consistency().unwrap();
        let c = ssd.counters();
        assert!(c.gc_victims > 0, "{policy:?}: GC must have run");
        assert_eq!(
            (c.gc_copied_blocks, c.flash_gc_bytes, c.flash_pad_bytes),
            (0, 0, 0),
            "{policy:?}"
        );
        assert_eq!(c.waf(), Some(1.0), "{policy:?}");
        assert_eq!(c.victim_valid_hist[0], c.gc_victims, "every victim was empty");
    }
}

#[test]
fn trim_everything_then_rewrite() {
    let mut ssd = small_cns(GcPolicy::Greedy);
    let n = ssd.logical_blocks();
    let mut rng = SplitMix64::new(3);
    for lba in 0..n {
        ssd.write(lba, 1, None, Placement::None).unwrap();
    }
    for _ in 0..2 * n {
        ssd.write(rng.below(n), 1, None, Placement::None).unwrap();
    }
    assert!(ssd.counters().waf().unwrap() > 1.0, "random overwrites must have cost copies");
    // Fill the open flash page so the interval starts on a page boundary (16 KiB pages).
    let partial = (ssd.counters().host_write_bytes / 4096) % 4;
    for lba in 0..(4 - partial) % 4 {
        ssd.write(lba, 1, None, Placement::None).unwrap();
    }
    ssd.trim(0, n).unwrap();
    let before = ssd.counters();
    for _ in 0..3 {
        // Random order too: with everything trimmed no victim holds valid data.
        for _ in 0..n {
            ssd.write(rng.below(n), 1, None, Placement::None).unwrap();
        }
        ssd.trim(0, n).unwrap();
    }
    let interval = ssd.counters().since(&before);
    assert!(interval.gc_victims > 0);
    assert_eq!(interval.gc_copied_blocks, 0);
    assert_eq!(interval.waf(), Some(1.0));
    assert_eq!(interval.host_trim_bytes, 3 * n * 4096);
}

#[test]
fn counters_snapshot_and_diff() {
    let mut ssd = small_cns(GcPolicy::Greedy);
    assert_eq!(ssd.counters().waf(), None);
    ssd.write(0, 4, None, Placement::None).unwrap();
    let a = ssd.counters();
    ssd.write(4, 8, None, Placement::None).unwrap();
    let b = ssd.counters();
    let d = b.since(&a);
    assert_eq!(d.host_write_bytes, 8 * 4096);
    assert_eq!(d.flash_host_bytes, 2 * 16384);
    assert_eq!(d.waf(), Some(1.0));
    assert_eq!(
        b.since(&b),
        flashemu::Counters { stream_host_bytes: vec![0], ..Default::default() }
    );
}

#[test]
fn erase_counts_cover_every_block() {
    let mut ssd = small_cns(GcPolicy::Greedy);
    let n = ssd.logical_blocks();
    for _ in 0..5 {
        for lba in 0..n {
            ssd.write(lba, 1, None, Placement::None).unwrap();
        }
    }
    let counts = ssd.block_erase_counts();
    let g = ssd.config().geometry;
    assert_eq!(counts.len(), (g.channels * g.chips_per_channel * g.blocks_per_chip) as usize);
    let total: u64 = counts.iter().map(|&c| u64::from(c)).sum();
    assert_eq!(total, ssd.counters().block_erases);
    // Free superblocks are reused FIFO, so wear spreads: no block is erased twice as often
    // as the average plus one.
    let mean = total as f64 / counts.len() as f64;
    assert!(counts.iter().all(|&c| f64::from(c) <= 2.0 * mean + 1.0), "{counts:?}");
}
