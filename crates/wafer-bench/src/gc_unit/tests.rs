use super::*;
use flashemu::{Config, GcConfig, GcPolicy, Geometry, Interface, StoreKind};

/// A small conventional emulator: `channels` x `chips` chips, superblocks of `sb_chips` chips
/// per channel, `pages` pages of `page_kib` KiB per block, 64 superblocks, OP 15%, greedy GC.
fn emulator(channels: u32, chips: u32, sb_chips: u32, pages: u32, page_kib: u32) -> Config {
    let config = Config {
        geometry: Geometry {
            channels,
            chips_per_channel: chips,
            blocks_per_chip: 64 * sb_chips / chips,
            pages_per_block: pages,
            flash_page_bytes: page_kib * 1024,
            superblock_chips_per_channel: sb_chips,
        },
        op: 0.15,
        gc: GcConfig {
            policy: GcPolicy::Greedy,
            free_superblocks_low: 1,
            free_superblocks_high: 2,
            random_d: 4,
        },
        interface: Interface::Conventional { streams: 1 },
        store: StoreKind::None,
        seed: 3,
        timing: flashemu::TimingConfig::default(),
        plan: None,
        cczns: None,
    };
    config.validate().unwrap_or_else(|e| panic!("{e}"));
    config
}

fn infer(config: &Config) -> Inference {
    let target = InferTarget::Emulator(Box::new(config.clone()));
    infer_gc_unit(&target, &InferOptions::quick(), &mut |_| {}).unwrap_or_else(|e| panic!("{e}"))
}

/// Three geometries whose superblocks are 128 KiB, 512 KiB and 256 KiB (by channels, chips a
/// superblock spans, pages per block and page size): the inference finds each within one
/// doubling (exactly, as these units are powers of two and each run starts on a fresh device).
#[test]
fn finds_the_superblock_of_three_geometries() {
    for config in [emulator(2, 2, 1, 16, 4), emulator(4, 2, 2, 16, 4), emulator(2, 1, 1, 8, 16)] {
        let superblock_bytes = config.layout().superblock_bytes();
        let found = infer(&config);
        let unit = found.gc_unit_bytes.unwrap_or_else(|| panic!("none found: {found:?}"));
        assert!(
            unit >= superblock_bytes && unit < 2 * superblock_bytes,
            "superblock {superblock_bytes}, inferred {unit}: {:?}",
            found.points
        );
        assert_eq!(found.reported_gc_unit_bytes, Some(superblock_bytes));
        assert_eq!(found.method, MetricSource::FlashCounters);
        // The sweep stopped one size above the unit (confirm_sizes = 1).
        assert_eq!(found.points.last().map(|p| p.zone_bytes), Some(2 * unit));
    }
}

/// The LRU model of uniform random overwrites (docs/internals/emulator.md): a victim's valid share
/// X solves X = exp(-a (1 - X)); WAF = 1 / (1 - X). Greedy is at or below it.
fn lru_model_waf(a: f64) -> f64 {
    let mut x = 0.5;
    for _ in 0..10_000 {
        x = (-a * (1.0 - x)).exp();
    }
    1.0 / (1.0 - x)
}

/// Analytic sanity (docs/internals/bench.md). Zones of Z = S / k rewritten uniformly at random
/// are uniform random overwrites of k-unit superblocks, so: (1) WAF = 1 would need
/// a >= 2 - 1/k (a = flash the data may use / live data), and here a is about 1.24 < 1.5, so
/// every size below the superblock must copy; (2) greedy stays at or below the LRU model's WAF
/// for that a; (3) sizes at or above the superblock copy nothing.
#[test]
fn zones_below_the_superblock_copy_and_zones_at_it_do_not() {
    let config = emulator(2, 2, 1, 16, 4);
    let superblock_bytes = config.layout().superblock_bytes();
    let layout = config.layout();
    let o = InferOptions::quick();
    // The log the model sees: every superblock but the free one and the two half-full open
    // ones (docs/internals/emulator.md, "The analytic-model check").
    let log_slots = u64::from(layout.superblock_count - 2) * u64::from(layout.slots_per_superblock);
    let found = infer(&config);
    for p in &found.points {
        let waf = p.waf.unwrap_or(0.0);
        if p.zone_bytes < superblock_bytes {
            let k = (superblock_bytes / p.zone_bytes) as f64;
            let a = log_slots as f64 * 4096.0 / (p.zones * p.zone_bytes) as f64;
            assert!(a < 2.0 - 1.0 / k, "a {a}: the bound would not apply");
            assert!(waf > 1.0 + o.waf_tolerance, "zone {} WAF {waf}", p.zone_bytes);
            assert!(waf <= lru_model_waf(a), "zone {} WAF {waf} above the model", p.zone_bytes);
            assert!(p.gc_copy_bytes.is_some_and(|b| b > 0));
        } else {
            assert!((waf - 1.0).abs() < 1e-9, "zone {} WAF {waf}", p.zone_bytes);
            assert_eq!(p.gc_copy_bytes, Some(0));
        }
    }
    // Smaller zones mix more deathtimes into a superblock: WAF grows as zones shrink.
    let wafs: Vec<f64> = found.points.iter().map(|p| p.waf.unwrap_or(0.0)).collect();
    assert!(wafs.windows(2).all(|w| w[0] >= w[1]), "{wafs:?}");
}

#[test]
fn the_inference_sizes_the_engine_zones() {
    let config = emulator(2, 2, 1, 16, 4);
    let found = infer(&config);
    let mut oop = wafer::options::OutOfPlaceOptions::production();
    assert!(found.apply(&mut oop));
    let unit = found.gc_unit_bytes.unwrap_or(0);
    assert_eq!(oop.gc_unit_bytes, unit);
    // On a device that reports nothing (a file), the zones follow the inferred unit.
    let none = wafer::device::DeviceCapabilities::default();
    assert_eq!(oop.for_device(&none).zone_bytes, unit);
    let nothing = Inference { gc_unit_bytes: None, ..found };
    let mut untouched = wafer::options::OutOfPlaceOptions::production();
    assert!(!nothing.apply(&mut untouched));
    assert_eq!(untouched.gc_unit_bytes, 0);
    assert_eq!(nothing.gc_unit_or_safe_bound(), SAFE_UPPER_BOUND_BYTES);
}

#[test]
fn bad_options_and_small_devices_are_errors() {
    let target = InferTarget::Emulator(Box::new(emulator(2, 2, 1, 16, 4)));
    let run = |o: InferOptions| infer_gc_unit(&target, &o, &mut |_| {});
    let bad = [
        InferOptions { min_zone_bytes: 3 << 12, ..InferOptions::quick() },
        InferOptions { min_zone_bytes: 1024, ..InferOptions::quick() },
        InferOptions { max_zone_bytes: 4096, ..InferOptions::quick() },
        InferOptions { fill: 0.0, ..InferOptions::quick() },
        InferOptions { fill: f64::NAN, ..InferOptions::quick() },
        InferOptions { zones_min: 1, ..InferOptions::quick() },
        InferOptions { measured_writes: 0.0, ..InferOptions::quick() },
        InferOptions { warmup_writes: f64::INFINITY, ..InferOptions::quick() },
        InferOptions { waf_tolerance: 0.0, ..InferOptions::quick() },
        InferOptions { io_bytes: 100, ..InferOptions::quick() },
        InferOptions { batch_requests: 0, ..InferOptions::quick() },
    ];
    for o in bad {
        assert!(matches!(run(o), Err(InferError::Options(_))), "{o:?}");
    }
    // 8 MiB of zones cannot hold 4 zones of 4 MiB.
    let huge = InferOptions { min_zone_bytes: 4 << 20, ..InferOptions::quick() };
    assert!(matches!(run(huge), Err(InferError::TooSmall { .. })));
    let missing = InferTarget::File {
        path: std::path::PathBuf::from("/nonexistent-dir/x"),
        capacity_bytes: 1 << 20,
        file: wafer::device::FileOptions::BUFFERED,
    };
    assert!(matches!(
        infer_gc_unit(&missing, &InferOptions::quick(), &mut |_| {}),
        Err(InferError::Open(_))
    ));
}

#[test]
fn zone_sizes_double_up_to_the_bound() {
    let o = InferOptions { min_zone_bytes: 1 << 20, max_zone_bytes: 8 << 20, ..Default::default() };
    let mib = 1u64 << 20;
    assert_eq!(o.zone_sizes(1 << 30), vec![mib, 2 * mib, 4 * mib, 8 * mib]);
    // 90% of 20 MiB holds 4 zones of 4 MiB, not of 8.
    assert_eq!(o.zone_sizes(20 * mib), vec![mib, 2 * mib, 4 * mib]);
    assert!(o.zone_sizes(mib).is_empty());
}

/// A file target runs the same pattern and, having no flash counters, decides by throughput.
#[test]
fn a_file_is_measured_by_throughput() {
    let path = std::env::temp_dir().join(format!("wafer-infer-{}", std::process::id()));
    let target = InferTarget::File {
        path: path.clone(),
        capacity_bytes: 4 << 20,
        file: wafer::device::FileOptions::BUFFERED,
    };
    let o = InferOptions {
        min_zone_bytes: 256 << 10,
        max_zone_bytes: 512 << 10,
        ..InferOptions::quick()
    };
    let found = infer_gc_unit(&target, &o, &mut |_| {});
    let _ = std::fs::remove_file(&path);
    let found = found.unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(found.method, MetricSource::Throughput);
    assert!(found.method_note.contains("not readable"));
    assert_eq!(found.points.len(), 2);
    assert!(found.points.iter().all(|p| p.waf.is_none() && p.clock == Clock::Wall));
    assert!(found.points.iter().all(|p| p.host_write_bytes > 0));
}
