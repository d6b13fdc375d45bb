//! Multi-stream and FDP placement: separating hot from cold data lowers WAF; FDP with one
//! handle is the plain device.
#![allow(clippy::unwrap_used)]
use flashemu::rng::SplitMix64;
use flashemu::{Config, Counters, FdpIsolation, Placement, Ssd, StoreKind};

const SEED: u64 = 0x0407_C01D;

/// 4 channels x 1 chip x 128 blocks x 64 pages of 4 KiB: 128 superblocks of 256 slots, OP 14%.
fn config(interface: &str) -> Config {
    let mut config = Config::preset("tiny").unwrap();
    for (key, value) in [
        ("channels", "4"),
        ("chips-per-channel", "1"),
        ("blocks-per-chip", "128"),
        ("pages-per-block", "64"),
        ("op", "0.14"),
        ("interface", interface),
    ] {
        config.set(key, value).unwrap();
    }
    config.store = StoreKind::None;
    config
}

/// 80% of writes to the first 20% of the LBAs (hot), the rest to the other 80% (cold); the
/// hint says which. Fill, 4 capacities of warm-up, measure over 4 capacities.
fn hot_cold(ssd: &mut Ssd, hint: impl Fn(bool) -> Placement) -> Counters {
    let logical = ssd.logical_blocks();
    let hot_blocks = logical / 5;
    for lba in 0..logical {
        ssd.write(lba, 1, None, hint(lba < hot_blocks)).unwrap();
    }
    let mut rng = SplitMix64::new(SEED);
    let mut step = |ssd: &mut Ssd| {
        let hot = rng.below(10) < 8;
        let lba =
            if hot { rng.below(hot_blocks) } else { hot_blocks + rng.below(logical - hot_blocks) };
        ssd.write(lba, 1, None, hint(hot)).unwrap();
    };
    for _ in 0..4 * logical {
        step(ssd);
    }
    let before = ssd.counters();
    for _ in 0..4 * logical {
        step(ssd);
    }
    ssd.check_consistency().unwrap();
    ssd.counters().since(&before)
}

struct HotCold {
    one: f64,
    streams: f64,
    fdp_initially: f64,
    fdp_persistently: f64,
}

fn hot_cold_matrix(policy: &str) -> HotCold {
    let device = |interface: &str, extra: &[(&str, &str)]| {
        let mut config = config(interface);
        config.set("gc-policy", policy).unwrap();
        for (key, value) in extra {
            config.set(key, value).unwrap();
        }
        Ssd::new(config).unwrap()
    };
    let one = hot_cold(&mut device("conventional", &[]), |_| Placement::None).waf().unwrap();
    let mut streams = device("conventional", &[("streams", "2")]);
    let streams_counters = hot_cold(&mut streams, |hot| Placement::Stream(if hot { 0 } else { 1 }));
    // Per-stream host bytes: 80/20 by construction.
    let hot_share =
        streams_counters.stream_host_bytes[0] as f64 / streams_counters.host_write_bytes as f64;
    assert!((hot_share - 0.8).abs() < 0.01, "{hot_share}");
    let mut fdp = Vec::new();
    for isolation in ["initially-isolated", "persistently-isolated"] {
        let mut ssd = device("fdp", &[("ruh-count", "2"), ("isolation", isolation)]);
        let waf = hot_cold(&mut ssd, |hot| Placement::Fdp(if hot { 0 } else { 1 })).waf().unwrap();
        let stats = ssd.fdp_stats().unwrap();
        assert_eq!(stats.host_bytes_written, ssd.counters().host_write_bytes);
        assert_eq!(stats.media_bytes_written, ssd.counters().flash_bytes());
        fdp.push(waf);
    }
    let result = HotCold {
        one,
        streams: streams_counters.waf().unwrap(),
        fdp_initially: fdp[0],
        fdp_persistently: fdp[1],
    };
    println!(
        "{policy}: one stream {:.3}, two streams {:.3}, FDP initially {:.3}, persistently {:.3}",
        result.one, result.streams, result.fdp_initially, result.fdp_persistently
    );
    result
}

// Measured (seed above): greedy: one 5.072, streams 5.033, FDP initially 5.033, persistently
// 4.746; cost-benefit: 4.407, 4.227, 4.227, 3.630.
//
// Why greedy gains so little: it takes the globally emptiest superblock, which drives hot and
// cold victims to the same valid ratio. Per-pool LRU models (a = 1.13 split between a pool
// of 20% of the data taking 80% of writes and the rest) give WAF 4.51 at equal valid ratios,
// against 4.53 unseparated and 3.16 at the best split of the spare space. With one shared GC
// destination (streams, initially isolated FDP) GC copies mix hot and cold again; persistent
// isolation keeps them apart. Cost-benefit, being age-aware, moves towards the better split.

#[test]
fn separating_hot_and_cold_lowers_waf_greedy() {
    let r = hot_cold_matrix("greedy");
    assert!(r.streams < r.one, "streams {:.3} vs one {:.3}", r.streams, r.one);
    assert!(r.fdp_initially < r.one, "FDP initially {:.3} vs one {:.3}", r.fdp_initially, r.one);
    assert!(
        r.fdp_persistently < r.one * 0.95,
        "FDP persistently {:.3} vs one {:.3}",
        r.fdp_persistently,
        r.one
    );
}

#[test]
fn separating_hot_and_cold_lowers_waf_cost_benefit() {
    let r = hot_cold_matrix("cost-benefit");
    assert!(r.streams < r.one * 0.97, "streams {:.3} vs one {:.3}", r.streams, r.one);
    assert!(
        r.fdp_initially < r.one * 0.97,
        "FDP initially {:.3} vs one {:.3}",
        r.fdp_initially,
        r.one
    );
    assert!(
        r.fdp_persistently < r.one * 0.9,
        "FDP persistently {:.3} vs one {:.3}",
        r.fdp_persistently,
        r.one
    );
}

#[test]
fn fdp_with_one_handle_is_the_plain_device() {
    let mut plain = Ssd::new(config("conventional")).unwrap();
    let mut fdp = config("fdp");
    fdp.set("ruh-count", "1").unwrap();
    let mut fdp = Ssd::new(fdp).unwrap();
    let plain_counters = hot_cold(&mut plain, |_| Placement::None);
    let fdp_counters = hot_cold(&mut fdp, |_| Placement::Fdp(0));
    assert_eq!(plain_counters, fdp_counters);
    assert_eq!(plain.block_erase_counts(), fdp.block_erase_counts());
}

#[test]
fn fdp_report_and_bad_placements() {
    let mut config = config("fdp");
    config.set("ruh-count", "4").unwrap();
    config.set("isolation", "persistent").unwrap();
    let mut ssd = Ssd::new(config).unwrap();
    let report = ssd.fdp_report().unwrap();
    assert_eq!(report.reclaim_unit_bytes, 256 * 4096);
    assert_eq!(report.ruh_count, 4);
    assert_eq!(report.isolation, FdpIsolation::PersistentlyIsolated);
    assert!(matches!(
        ssd.write(0, 1, None, Placement::Fdp(4)),
        Err(flashemu::EmuError::BadPlacement(_))
    ));
    assert_eq!(ssd.counters().host_write_bytes, 0);
    ssd.write(0, 1, None, Placement::Fdp(3)).unwrap();
    assert_eq!(ssd.counters().stream_host_bytes, vec![0, 0, 0, 4096]);
    assert!(Ssd::new(self::config("conventional")).unwrap().fdp_report().is_none());
}

#[test]
fn persistently_isolated_gc_keeps_handles_apart() {
    // Two handles, each overwriting its own half uniformly: with persistent isolation GC
    // copies stay per handle, so every handle's WAF is that of its own half of the device.
    let mut config = config("fdp");
    config.set("ruh-count", "2").unwrap();
    config.set("isolation", "persistently-isolated").unwrap();
    let mut ssd = Ssd::new(config).unwrap();
    let logical = ssd.logical_blocks();
    let half = logical / 2;
    let mut rng = SplitMix64::new(SEED);
    for lba in 0..logical {
        ssd.write(lba, 1, None, Placement::Fdp(u16::from(lba >= half))).unwrap();
    }
    for _ in 0..4 * logical {
        let handle = rng.below(2);
        let lba = handle * half + rng.below(half);
        ssd.write(lba, 1, None, Placement::Fdp(handle as u16)).unwrap();
    }
    ssd.check_consistency().unwrap();
    assert!(ssd.counters().gc_victims > 0);
}

/// A reclaim unit handle update seals the handle's half-filled unit where it stands, so the
/// handle's next write opens a fresh one. The writer here fills one reclaim unit per "zone" (a
/// region of LBAs the size of a unit), trims and rewrites zones in random order and now and then
/// abandons a zone half written (as a database does after a restart). With the update every unit holds one
/// zone's data, so a trimmed zone frees a whole unit and GC never copies; without it every
/// later unit holds the tail of one zone and the head of the next, and GC copies.
#[test]
fn handle_update_starts_a_fresh_reclaim_unit() {
    let run = |update: bool| {
        let mut config = config("fdp");
        config.set("ruh-count", "2").unwrap();
        let mut ssd = Ssd::new(config).unwrap();
        let unit = ssd.fdp_report().unwrap().reclaim_unit_bytes / 4096;
        let zones = ssd.logical_blocks() / unit - 2;
        let mut rng = SplitMix64::new(SEED);
        for round in 0..6 * zones {
            let zone = if round < zones { round } else { rng.next_u64() % zones };
            let start = zone * unit;
            if round >= zones {
                ssd.trim(start, unit).unwrap();
            }
            if round % 7 == 3 {
                ssd.write(start, (unit / 2) as u32, None, Placement::Fdp(0)).unwrap();
                if update {
                    ssd.fdp_update_handles(&[0]).unwrap();
                }
            } else {
                ssd.write(start, unit as u32, None, Placement::Fdp(0)).unwrap();
            }
        }
        ssd.check_consistency().unwrap();
        ssd.counters()
    };
    let (with, without) = (run(true), run(false));
    assert!(with.superblock_erases > 0, "units were reclaimed");
    assert_eq!(with.flash_gc_bytes, 0, "{with:?}");
    assert!(without.flash_gc_bytes > 0, "{without:?}");
    // 4 KiB flash pages: a half unit is programmed whole, nothing to pad.
    assert_eq!(with.flash_pad_bytes, 0);

    let mut ssd = Ssd::new(config("fdp")).unwrap();
    assert!(ssd.fdp_update_handles(&[200]).is_err(), "a handle beyond the device's");
    let mut conventional = Ssd::new(config("conventional")).unwrap();
    assert!(conventional.fdp_update_handles(&[0]).is_err());
    // Updating a handle with no open unit changes nothing.
    let c = ssd.counters();
    ssd.fdp_update_handles(&[1]).unwrap();
    assert_eq!(ssd.counters(), c);
}
