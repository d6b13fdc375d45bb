//! The timing model's shapes (001 Fig. 1, 004): throughput grows with the queue depth and
//! flattens at the chips' parallel limit, GC-heavy writing loses throughput in proportion to
//! the SSD WAF, and timing changes no counter. All on device time, which is deterministic.
#![allow(clippy::unwrap_used)]
use flashemu::rng::SplitMix64;
use flashemu::{Config, Counters, Placement, Ssd, StoreKind, TimingReport, LBA_BYTES};

const PROGRAM_NS: f64 = 700_000.0;
const READ_NS: f64 = 90_000.0;

/// 4 channels x 4 chips, 16 KiB pages, 256 MiB: small enough for a test.
fn config(timing: &str, queue_depth: u32) -> Config {
    sized(timing, queue_depth, 16, 64)
}

/// With `pages_per_block` pages per block and `blocks_per_chip` blocks.
fn sized(timing: &str, queue_depth: u32, pages_per_block: u32, blocks_per_chip: u32) -> Config {
    let mut config = Config::preset("cns").unwrap();
    for (key, value) in [
        ("channels", "4"),
        ("chips-per-channel", "4"),
        ("superblock-chips-per-channel", "4"),
        ("blocks-per-chip", &blocks_per_chip.to_string()),
        ("pages-per-block", &pages_per_block.to_string()),
        ("op", "0.15"),
        ("timing", timing),
        ("queue-depth", &queue_depth.to_string()),
    ] {
        config.set(key, value).unwrap();
    }
    config.store = StoreKind::None;
    config.validate().unwrap();
    config
}

fn chips_and_page(ssd: &Ssd) -> (f64, f64) {
    let g = ssd.config().geometry;
    (f64::from(g.channels * g.chips_per_channel), f64::from(g.flash_page_bytes))
}

fn fill(ssd: &mut Ssd) {
    for lba in 0..ssd.logical_blocks() {
        ssd.write(lba, 1, None, Placement::None).unwrap();
    }
}

fn fill_throughput(queue_depth: u32) -> (f64, f64) {
    fill_throughput_of(config("chips", queue_depth))
}

fn fill_throughput_of(config: Config) -> (f64, f64) {
    let mut ssd = Ssd::new(config).unwrap();
    fill(&mut ssd);
    let (chips, page_bytes) = chips_and_page(&ssd);
    let limit = chips * page_bytes * 1e9 / PROGRAM_NS;
    (ssd.timing_report().unwrap().bytes_per_s, limit)
}

fn random_read_throughput(queue_depth: u32) -> (f64, f64) {
    let mut ssd = Ssd::new(config("chips", queue_depth)).unwrap();
    fill(&mut ssd);
    ssd.restart_timing_window();
    let mut rng = SplitMix64::new(7);
    let mut buf = vec![0u8; 4096];
    for _ in 0..20_000 {
        ssd.read(rng.below(ssd.logical_blocks()), &mut buf).unwrap();
    }
    let (chips, _) = chips_and_page(&ssd);
    let limit = chips * 4096.0 * 1e9 / READ_NS;
    (ssd.timing_report().unwrap().bytes_per_s, limit)
}

#[test]
fn throughput_grows_with_queue_depth_and_flattens_at_the_chip_limit() {
    for measure in [fill_throughput, random_read_throughput] {
        let depths = [1u32, 2, 4, 8, 16, 32, 64, 128, 256];
        let rates: Vec<(f64, f64)> = depths.iter().map(|&qd| measure(qd)).collect();
        let limit = rates[0].1;
        let mb: Vec<String> = rates.iter().map(|r| format!("{:.0}", r.0 / 1e6)).collect();
        println!("MB/s at depths {depths:?}: {mb:?}; chip limit {:.0}", limit / 1e6);
        for pair in rates.windows(2) {
            assert!(pair[1].0 >= pair[0].0 * 0.99, "throughput fell with depth: {rates:?}");
        }
        // Grows: depth 16 (one per chip) is several times depth 1.
        assert!(rates[4].0 > 4.0 * rates[0].0, "{rates:?}");
        // Flattens near the parallel limit and never beyond it.
        let last = rates[depths.len() - 1].0;
        assert!(last <= limit * 1.001 && last >= 0.8 * limit, "{last} vs limit {limit}");
        assert!(last < rates[depths.len() - 2].0 * 1.1, "still growing: {rates:?}");
    }
}

/// Blocks of 128 pages, as real flash has: an erase (5 ms) then costs 39 us per page
/// programmed, where 16-page blocks would charge 312 us and swamp the comparison.
fn gc_config(queue_depth: u32) -> Config {
    sized("chips", queue_depth, 128, 32)
}

/// Random overwrites in steady state: (device-time report, SSD WAF of the same window).
fn steady_random_writes(queue_depth: u32) -> (TimingReport, f64) {
    let mut ssd = Ssd::new(gc_config(queue_depth)).unwrap();
    fill(&mut ssd);
    let logical = ssd.logical_blocks();
    let mut rng = SplitMix64::new(3);
    let mut queue = [0u64; 32];
    let batches = 2 * logical / queue.len() as u64;
    for round in 0..2 {
        let before = ssd.counters();
        ssd.restart_timing_window();
        for _ in 0..batches {
            queue.fill_with(|| rng.below(logical));
            ssd.write_scattered(&queue, Placement::None).unwrap();
        }
        if round == 1 {
            let waf = ssd.counters().since(&before).waf().unwrap();
            return (ssd.timing_report().unwrap(), waf);
        }
    }
    unreachable!()
}

#[test]
fn gc_steals_chip_time_in_proportion_to_ssd_waf() {
    let (seq_rate, _) = fill_throughput_of(gc_config(64));
    let (report, waf) = steady_random_writes(64);
    assert!(waf > 2.0, "the test needs GC-heavy writing, WAF {waf}");
    let slowdown = seq_rate / report.bytes_per_s;
    // Per host page: WAF programs (700 us) and erases (39 us a page), WAF - 1 GC reads (90 us),
    // against 700 us in the fill: the slowdown is WAF times 1.06 to 1.2.
    let ratio = slowdown / waf;
    println!(
        "fill {:.0} MB/s, steady random {:.0} MB/s: slowdown {slowdown:.2}, SSD WAF {waf:.2}, \
         ratio {ratio:.3}; write p50 {} us p99 {} us",
        seq_rate / 1e6,
        report.bytes_per_s / 1e6,
        report.write_latency.p50_ns / 1000,
        report.write_latency.p99_ns / 1000
    );
    assert!((1.0..1.3).contains(&ratio), "slowdown {slowdown} vs WAF {waf}");
    assert!(report.gc_busy_ns > report.chip_busy_ns / 2);
    assert!(report.write_latency.p99_ns >= report.write_latency.p50_ns);
}

fn run_counters(config: Config) -> Counters {
    let mut ssd = Ssd::new(config).unwrap();
    fill(&mut ssd);
    let mut rng = SplitMix64::new(11);
    let logical = ssd.logical_blocks();
    for _ in 0..logical {
        ssd.write(rng.below(logical), 1, None, Placement::None).unwrap();
    }
    ssd.write_scattered(&[1, 5, 9, 2], Placement::None).unwrap();
    ssd.counters()
}

#[test]
fn timing_changes_no_counter() {
    let off = run_counters(config("off", 8));
    assert_eq!(off, run_counters(config("chips", 8)));
    let mut mqssd = config("off", 8);
    for (key, value) in
        [("timing", "mqssd"), ("timing.mqssd.beta-ns", "1"), ("timing.mqssd.alpha-ns", "1")]
    {
        mqssd.set(key, value).unwrap();
    }
    assert_eq!(off, run_counters(mqssd));
}

#[test]
fn mqssd_mode_charges_setup_per_random_command() {
    let mut config = config("off", 4);
    for (key, value) in [
        ("timing", "mqssd"),
        ("timing.mqssd.s-ns", "10000"),
        ("timing.mqssd.beta-ns", "1000"),
        ("timing.mqssd.t-ns", "5000"),
        ("timing.mqssd.alpha-ns", "500"),
    ] {
        config.set(key, value).unwrap();
    }
    let mut ssd = Ssd::new(config).unwrap();
    // Sequential: one setup, then transfers only.
    for lba in 0..1000 {
        ssd.write(lba, 1, None, Placement::None).unwrap();
    }
    let sequential_ns = ssd.timing_report().unwrap().device_ns;
    assert_eq!(sequential_ns, 10_000 + 1000 * 1000);
    ssd.restart_timing_window();
    let mut rng = SplitMix64::new(5);
    for _ in 0..1000 {
        ssd.write(rng.below(ssd.logical_blocks()), 1, None, Placement::None).unwrap();
    }
    let random_ns = ssd.timing_report().unwrap().device_ns;
    // 001 eq. 7 at r = 1: setup plus transfer per page.
    assert!((random_ns as f64 / 11_000_000.0 - 1.0).abs() < 0.01, "{random_ns}");
}

#[test]
fn timing_is_left_out_of_the_toml_while_off() {
    let off = config("off", 1);
    assert!(!off.to_toml().unwrap().contains("timing"));
    let on = config("chips", 16);
    let text = on.to_toml().unwrap();
    assert!(text.contains("[timing]"));
    assert_eq!(Config::from_toml(&text).unwrap(), on);
    let mut bad = config("chips", 1);
    assert!(bad.set("queue-depth", "0").is_ok() && bad.validate().is_err());
}

const TRANSFER_NS: u64 = 5_000;

/// `config`'s geometry with `channels` x `chips` (every superblock spans them all) as ZNS, so
/// an LBA is its physical slot and page p of a zone sits on block p % (channels x chips),
/// channel fastest. Zone 0 holds `pages` full 16 KiB flash pages (4 slots each), written at
/// queue depth 1, so every program has ended when the first read is issued.
fn zns_written(channels: u32, chips: u32, pages: u32) -> Ssd {
    let mut ssd = zns(channels, chips, 1);
    ssd.write(0, 4 * pages, None, Placement::None).unwrap();
    ssd
}

/// The ZNS device of [`zns_written`], empty, at `queue_depth`.
fn zns(channels: u32, chips: u32, queue_depth: u32) -> Ssd {
    let mut config = config("chips", queue_depth);
    for (key, value) in [
        ("channels", channels.to_string()),
        ("chips-per-channel", chips.to_string()),
        ("superblock-chips-per-channel", chips.to_string()),
        ("interface", "zns".into()),
        ("max-open-zones", "2".into()),
        ("max-active-zones", "2".into()),
    ] {
        config.set(key, &value).unwrap();
    }
    config.validate().unwrap();
    let ssd = Ssd::new(config).unwrap();
    assert_eq!(ssd.layout().slots_per_page, 4);
    ssd
}

/// `blocks` single-block writes from LBA 0 on one channel and one chip, all in flight at once
/// (queue depth 64), then a flush: (the device after it, its timing report).
fn written_then_flushed(blocks: u64) -> (Ssd, TimingReport) {
    let mut ssd = zns(1, 1, 64);
    for lba in 0..blocks {
        ssd.write(lba, 1, None, Placement::None).unwrap();
    }
    ssd.flush().unwrap();
    let report = ssd.timing_report().unwrap();
    (ssd, report)
}

/// A flush completes when the last program of the writes before it finishes, and nothing
/// after it starts earlier. Analytically, on one channel and one chip with every write issued
/// at 0: slot i is in the page register at (i + 1) transfers; page j's program starts when
/// its 4th slot is in and the chip is free, so (tPROG > 4 transfers) it ends at 4 transfers +
/// (j + 1) tPROG. A partly filled page stays in the write buffer: the flush does not wait to
/// program it.
#[test]
fn a_flush_completes_when_the_last_program_of_the_writes_before_it_ends() {
    let t = TRANSFER_NS;
    let prog = PROGRAM_NS as u64;
    let (mut ssd, report) = written_then_flushed(32);
    let last_program_ns = 4 * t + 8 * prog;
    assert_eq!(report.device_ns, last_program_ns);
    assert_eq!((report.flushes, report.flush_wait_ns), (1, last_program_ns));
    // The next write starts at the flush: one transfer later (it fills no page).
    ssd.write(32, 1, None, Placement::None).unwrap();
    assert_eq!(ssd.timing_report().unwrap().device_ns, last_program_ns + t);
    // Without the flush the same write overlaps the programs: it ends long before them.
    let mut unflushed = zns(1, 1, 64);
    for lba in 0..33 {
        unflushed.write(lba, 1, None, Placement::None).unwrap();
    }
    let report = unflushed.timing_report().unwrap();
    assert_eq!((report.device_ns, report.flushes), (last_program_ns, 0));
    // 30 slots: 7 full pages programmed, the 8th holds 2 slots in the buffer.
    let (_, report) = written_then_flushed(30);
    assert_eq!(report.device_ns, 4 * t + 7 * prog);
    // A flush with nothing in flight waits nothing; counters never see a flush.
    let (mut ssd, _) = written_then_flushed(4);
    let before = ssd.counters();
    ssd.flush().unwrap();
    let report = ssd.timing_report().unwrap();
    assert_eq!((report.flushes, report.flush_wait_ns), (2, 4 * t + prog));
    assert_eq!(ssd.counters(), before);
}

/// Device time of one read of `blocks` at `lba`, alone on idle chips.
fn read_ns(ssd: &mut Ssd, lba: u64, blocks: u64) -> u64 {
    ssd.restart_timing_window();
    let mut buf = vec![0u8; (blocks * LBA_BYTES) as usize];
    ssd.read(lba, &mut buf).unwrap();
    let report = ssd.timing_report().unwrap();
    assert_eq!(report.read_latency.count, 1);
    assert_eq!(report.read_latency.max_ns, report.device_ns);
    report.device_ns
}

/// A sense loads the whole flash page into the page register: the slots of one page cost one
/// tR and a transfer each; different pages on one chip are sensed one after the other, pages
/// on different chips at once, and a channel moves one slot at a time.
#[test]
fn a_read_senses_each_flash_page_once_and_transfers_the_slots_asked_for() {
    let tr = READ_NS as u64;
    let t = TRANSFER_NS;
    let mut ssd = zns_written(4, 4, 17);
    assert_eq!(read_ns(&mut ssd, 0, 1), tr + t);
    assert_eq!(read_ns(&mut ssd, 0, 4), tr + 4 * t, "one page: one sense");
    assert_eq!(read_ns(&mut ssd, 1, 2), tr + 2 * t);
    // Slots 2-5 straddle pages 0 and 1, on different chips and channels: in parallel.
    assert_eq!(read_ns(&mut ssd, 2, 4), tr + 2 * t);
    // 17 pages on 16 chips: channel 0 moves pages 0, 4, 8, 12 (16 slots) after the first
    // sense; page 16 shares page 0's chip, so its sense ends at 2 tR, then 4 transfers.
    assert_eq!(read_ns(&mut ssd, 0, 68), (2 * tr + 4 * t).max(tr + 16 * t));
    // One chip: pages 0 and 1 are sensed in turn, each moving its slots when sensed.
    let mut one = zns_written(1, 1, 2);
    assert_eq!(read_ns(&mut one, 2, 4), 2 * tr + 2 * t);
    assert_eq!(read_ns(&mut one, 0, 8), 2 * tr + 4 * t);
}
