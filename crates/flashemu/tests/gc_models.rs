//! Uniform random overwrites at steady state against the analytic models of cleaning.
//!
//! The LRU/FIFO model (Desnoyers 2012; Hu et al. 2009): with uniform random writes and a FIFO
//! cleaner, the valid fraction X of a victim solves X = exp(-a (1 - X)), a = physical / logical
//! data space (1 + OP), and WAF = 1 / (1 - X). FIFO reaches it; greedy (fewest valid) does better
//! with a finite number of superblocks and approaches it as pages per superblock grow.
//!
//! Effective a. Not all flash holds data at steady state: with `free_superblocks_low = 1`,
//! `high = 2`, GC tops the pool up to 2 just before the host takes one, so 1 superblock is free
//! while the host writes; the host's open superblock and GC's open superblock are each half
//! empty on average, one superblock between them. So the log the model describes holds
//! (superblocks - 2) * slots_per_superblock, and a = (superblocks - 2) * S / logical_blocks.
//!
//! Geometry: 4 channels x 1 chip, 256 blocks per chip, 64 pages of 4 KiB per block, superblocks
//! of 4 blocks: S = 256 slots, 256 superblocks, 65536 physical slots.
#![allow(clippy::unwrap_used)]
mod common;

use common::lru_valid_fraction;
use flashemu::{Config, Counters, GcPolicy, Ssd, StoreKind};

const SEED: u64 = 0x6C_5EED;

fn device(op: f64, policy: GcPolicy) -> Ssd {
    let mut config = Config::preset("tiny").unwrap();
    for (key, value) in [
        ("channels", "4"),
        ("chips-per-channel", "1"),
        ("blocks-per-chip", "256"),
        ("pages-per-block", "64"),
        ("flash-page-bytes", "4096"),
        ("gc.free-superblocks-low", "1"),
        ("gc.free-superblocks-high", "2"),
    ] {
        config.set(key, value).unwrap();
    }
    config.op = op;
    config.gc.policy = policy;
    config.store = StoreKind::None;
    config.seed = SEED;
    Ssd::new(config).unwrap()
}

/// Fills the device, writes 4 capacities of uniform random overwrites, then measures over 4.
fn steady_state(ssd: &mut Ssd) -> Counters {
    let logical = ssd.logical_blocks();
    common::steady_state(ssd, logical, 4, 4, SEED)
}

fn effective_a(ssd: &Ssd) -> f64 {
    let layout = ssd.layout();
    (f64::from(layout.superblock_count) - 2.0) * f64::from(layout.slots_per_superblock)
        / ssd.logical_blocks() as f64
}

struct Case {
    op: f64,
    fifo_waf: f64,
    greedy_waf: f64,
    model_waf: f64,
}

fn run_case(op: f64) -> (Case, u64, f64) {
    let mut fifo = device(op, GcPolicy::Fifo);
    let mut greedy = device(op, GcPolicy::Greedy);
    let a = effective_a(&fifo);
    let x = lru_valid_fraction(a);
    let model_waf = 1.0 / (1.0 - x);
    let fifo_waf = steady_state(&mut fifo).waf().unwrap();
    let greedy_waf = steady_state(&mut greedy).waf().unwrap();
    println!(
        "op {op}: effective a {a:.4}, model X {x:.4} WAF {model_waf:.3}; measured FIFO {fifo_waf:.3}, greedy {greedy_waf:.3}"
    );
    (Case { op, fifo_waf, greedy_waf, model_waf }, fifo.logical_blocks(), a)
}

/// The `a` for which the model predicts `waf`: X = 1 - 1/WAF, a = -ln(X) / (1 - X).
fn implied_a(waf: f64) -> f64 {
    let x = 1.0 - 1.0 / waf;
    -x.ln() / (1.0 - x)
}

fn check(ssd_logical_blocks: u64, case: &Case, a: f64) {
    let Case { op, fifo_waf, greedy_waf, model_waf } = *case;
    // FIFO is the model's cleaner. Near a = 1 the model is very steep (at a = 1.06, a tenth
    // of a percent of a moves WAF by ~1.5%), so compare in the model's own input: the space
    // that reproduces FIFO's WAF must be within one superblock (256 slots) of the space counted
    // above. Measured: +0.3, +0.1 and +0.5 superblocks at OP 28%, 14% and 7%.
    let gap_superblocks = (implied_a(fifo_waf) - a) * ssd_logical_blocks as f64 / 256.0;
    assert!(
        gap_superblocks.abs() < 1.0,
        "op {op}: FIFO WAF {fifo_waf:.3} implies {gap_superblocks:+.2} superblocks vs the model's {model_waf:.3}"
    );
    // Greedy is never worse than the FIFO model and, with 256 superblocks of 256 slots, comes
    // in a few percent below it (measured 1%, 3%, 6% below at OP 28%, 14%, 7%).
    assert!(
        greedy_waf < model_waf,
        "op {op}: greedy {greedy_waf:.3} above the model {model_waf:.3}"
    );
    assert!(
        greedy_waf > model_waf * 0.9,
        "op {op}: greedy {greedy_waf:.3} implausibly far below {model_waf:.3}"
    );
    assert!(
        greedy_waf <= fifo_waf,
        "op {op}: greedy {greedy_waf:.3} worse than FIFO {fifo_waf:.3}"
    );
}

// Expected values (effective a as derived in the header; X by Newton; WAF = 1/(1 - X)):
//   OP 28%: logical 51200, a = 254*256/51200 = 1.2700, X = 0.6073, WAF 2.547
//           (measured: FIFO 2.539, greedy 2.521)
//   OP 14%: logical 57487, a = 1.1311, X = 0.7775, WAF 4.494 (FIFO 4.448, greedy 4.370)
//   OP  7%: logical 61248, a = 1.0617, X = 0.8862, WAF 8.784 (FIFO 8.544, greedy 8.295)
// For contrast, the nominal a = 1 + OP would predict 2.481, 4.253 and 7.817: the reserve and
// open superblocks matter, most at low OP.

#[test]
fn op_28_percent() {
    let (case, logical, a) = run_case(0.28);
    check(logical, &case, a);
}

#[test]
fn op_14_percent() {
    let (case, logical, a) = run_case(0.14);
    check(logical, &case, a);
}

#[test]
fn op_7_percent() {
    let (case, logical, a) = run_case(0.07);
    check(logical, &case, a);
}

#[test]
fn newton_solves_the_fixed_point() {
    for a in [1.05, 1.07, 1.14, 1.28, 2.0] {
        let x = lru_valid_fraction(a);
        assert!((x - (-a * (1.0 - x)).exp()).abs() < 1e-12);
        assert!(x > 0.0 && x < 1.0);
    }
}

/// Greedy's advantage over the model shrinks as superblocks hold more slots (same 65536-slot
/// flash, OP 14%, 4 KiB pages). Measured greedy / model: S = 16 (4096 superblocks) 3.468 /
/// 4.267 = 0.813; S = 64 (1024) 4.048 / 4.310 = 0.939; S = 256 (256) 4.370 / 4.494 = 0.972.
/// (With S = 1024 there are only 64 superblocks and the half-empty-open-superblock estimate of
/// a gets coarse, so the sweep stops at 256.)
#[test]
fn greedy_approaches_the_model_as_superblocks_grow() {
    let mut ratios = Vec::new();
    for (channels, pages) in [(1u32, 16u32), (4, 16), (4, 64)] {
        let blocks_per_chip = 65536 / (channels * pages);
        let mut config = Config::preset("tiny").unwrap();
        for (key, value) in [
            ("channels", channels.to_string()),
            ("chips-per-channel", "1".into()),
            ("blocks-per-chip", blocks_per_chip.to_string()),
            ("pages-per-block", pages.to_string()),
            ("gc.free-superblocks-low", "1".into()),
            ("gc.free-superblocks-high", "2".into()),
            ("op", "0.14".into()),
        ] {
            config.set(key, &value).unwrap();
        }
        config.store = StoreKind::None;
        config.seed = SEED;
        let mut ssd = Ssd::new(config).unwrap();
        let model = 1.0 / (1.0 - lru_valid_fraction(effective_a(&ssd)));
        let waf = steady_state(&mut ssd).waf().unwrap();
        println!("S = {}: model {model:.3}, greedy {waf:.3}", channels * pages);
        ratios.push(waf / model);
    }
    assert!(ratios.windows(2).all(|w| w[0] < w[1]), "{ratios:?}");
    assert!(ratios.iter().all(|&r| r < 1.0), "{ratios:?}");
    assert!(ratios[2] > 0.95, "{ratios:?}");
}
