//! Random geometries, interfaces and policies under random writes and TRIMs: the maps stay
//! consistent, GC never runs out of space on a valid config, and flash programs account for
//! every host byte (at most one buffered partial flash page per open superblock behind).
#![allow(clippy::unwrap_used)]
use flashemu::rng::SplitMix64;
use flashemu::{Config, Placement, Ssd, StoreKind};

const CONFIGS: u64 = 200;

fn random_config(rng: &mut SplitMix64) -> Config {
    let mut config = Config::preset("tiny").unwrap();
    let chips = 1 + rng.below(4) as u32;
    let span = [1, chips][rng.below(2) as usize];
    let pairs = [
        ("channels", (1 + rng.below(3)).to_string()),
        ("chips-per-channel", chips.to_string()),
        ("superblock-chips-per-channel", span.to_string()),
        ("blocks-per-chip", (8 + rng.below(24)).to_string()),
        ("pages-per-block", (3 + rng.below(14)).to_string()),
        ("flash-page-bytes", ["4096", "16384"][rng.below(2) as usize].to_string()),
        ("op", format!("{:.2}", 0.3 + rng.unit())),
        (
            "gc-policy",
            ["greedy", "cost-benefit", "fifo", "random-d"][rng.below(4) as usize].to_string(),
        ),
        ("gc.free-superblocks-low", (1 + rng.below(2)).to_string()),
        ("gc.free-superblocks-high", "3".to_string()),
        ("random-d", "2".to_string()),
        ("seed", rng.below(1000).to_string()),
    ];
    for (key, value) in &pairs {
        config.set(key, value).unwrap();
    }
    match rng.below(3) {
        0 => config.set("streams", &(1 + rng.below(3)).to_string()).unwrap(),
        1 => {
            config.set("interface", "fdp").unwrap();
            config.set("ruh-count", &(1 + rng.below(3)).to_string()).unwrap();
            config.set("isolation", ["initial", "persistent"][rng.below(2) as usize]).unwrap();
        }
        _ => config.set("interface", "conventional").unwrap(),
    }
    config.store = StoreKind::None;
    config
}

#[test]
fn random_configs_stay_consistent() {
    let mut rng = SplitMix64::new(0x00C0_FFEE);
    let mut run = 0;
    for attempt in 0..CONFIGS * 4 {
        if run == CONFIGS {
            break;
        }
        let config = random_config(&mut rng);
        // Small random geometries may leave too little room beside the GC reserve; those are
        // refused (naming `op`) and skipped.
        let Ok(mut ssd) = Ssd::new(config.clone()) else {
            continue;
        };
        run += 1;
        let context = format!("attempt {attempt}: {config:?}");
        let n = ssd.logical_blocks();
        let handles = ssd.counters().stream_host_bytes.len() as u64;
        let page_bytes = u64::from(config.geometry.flash_page_bytes);
        for op in 0..12 * n {
            let lba = rng.below(n);
            let handle = rng.below(handles) as u16;
            let placement =
                if rng.below(2) == 0 { Placement::Stream(handle) } else { Placement::Fdp(handle) };
            if rng.below(50) == 0 {
                ssd.trim(lba, (1 + rng.below(16)).min(n - lba)).unwrap();
            } else {
                let blocks = (1 + rng.below(4)).min(n - lba) as u32;
                ssd.write(lba, blocks, None, placement)
                    .unwrap_or_else(|e| panic!("{context}: op {op}: {e}"));
            }
        }
        ssd.check_consistency().unwrap_or_else(|e| panic!("{context}: {e}"));
        let c = ssd.counters();
        assert!(c.flash_host_bytes <= c.host_write_bytes, "{context}");
        // Host handles hold at most one partial page each, GC destinations likewise.
        let layout = ssd.layout();
        let open = u64::from(layout.host_open_superblocks);
        assert!(c.flash_host_bytes + open * page_bytes >= c.host_write_bytes, "{context}: {c:?}");
        let gc_programmed = c.gc_copied_blocks * 4096;
        assert!(c.flash_gc_bytes <= gc_programmed, "{context}");
        assert!(
            c.flash_gc_bytes + u64::from(layout.gc_open_superblocks) * page_bytes >= gc_programmed,
            "{context}"
        );
        let erased: u64 = ssd.block_erase_counts().iter().map(|&e| u64::from(e)).sum();
        assert_eq!(erased, c.block_erases, "{context}");
    }
    assert_eq!(run, CONFIGS, "too many random configs were refused");
}
