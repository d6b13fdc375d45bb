//! The job runner and the trace replayer end to end on the `tiny` emulator preset.
#![allow(clippy::unwrap_used)]

use flashemu::{Config, Ssd, LBA_BYTES};
use wafer_harness::jobs::replay::{self, ReplayOptions};
use wafer_harness::jobs::{self, device, JobSpec, RunSpec, Until, Workload};
use wafer_harness::progress::Silent;
use wafer_harness::trace::{TraceFormat, TraceReader};
use wafer_workloads::dist::Distribution;

fn tiny() -> Ssd {
    Ssd::new(device::for_simulation(Config::preset("tiny").unwrap())).unwrap()
}

fn spec(workload: &str, dist: Distribution, fill: f64, until: Until, seed: u64) -> RunSpec {
    RunSpec {
        fill_fraction: fill,
        jobs: vec![JobSpec::new("job0", Workload::parse(workload, None).unwrap(), dist)],
        until,
        seed,
        sample_every_bytes: None,
    }
}

#[test]
fn fill_then_sequential_overwrite_has_waf_exactly_one() {
    let mut ssd = tiny();
    let run = spec("write", Distribution::Uniform, 1.0, Until::Capacities(3.0), 1);
    let report = jobs::run(&mut ssd, &run, &mut Silent).unwrap();
    let capacity = ssd.logical_blocks() * LBA_BYTES;
    assert_eq!(report.host_bytes, 3 * capacity);
    assert_eq!(report.flash_bytes, report.host_bytes, "sequential overwrite must not copy");
    assert_eq!(report.waf, Some(1.0));
    assert_eq!(report.steady_state_waf, Some(1.0));
    assert_eq!(report.flash_gc_bytes, 0);
    assert!(report.erases > 0, "overwrites must reclaim superblocks");
    assert_eq!(report.fill.host_bytes, capacity);
}

#[test]
fn random_overwrite_has_gc_and_the_json_has_the_top_level_keys() {
    let mut ssd = tiny();
    let seed = 42;
    let run = spec("randwrite", Distribution::Uniform, 0.9, Until::Capacities(4.0), seed);
    let report =
        jobs::run(&mut ssd, &run, &mut Silent).unwrap_or_else(|e| panic!("seed {seed}: {e}"));
    let waf = report.waf.unwrap();
    assert!(waf > 1.0, "seed {seed}: random overwrites at 90% full need GC, WAF {waf}");
    let steady = report.steady_state_waf.unwrap();
    assert!(steady >= 1.0);
    assert!(report.gc_victim_mean_valid_ratio.is_some());
    // 4x of the capacity at 1/64 per sample, plus the fill: a few hundred samples, monotone.
    assert!(report.samples.len() > 256, "{}", report.samples.len());
    assert!(report.samples.windows(2).all(|w| w[0].host_write_bytes <= w[1].host_write_bytes));

    let json: serde_json::Value = serde_json::from_str(&report.to_json()).unwrap();
    for key in [
        "host_bytes",
        "flash_bytes",
        "waf",
        "erases",
        "steady_state_waf",
        "counters",
        "samples",
        "device",
    ] {
        assert!(json.get(key).is_some(), "missing key {key}");
    }
    assert_eq!(json["host_bytes"].as_u64(), Some(report.host_bytes));
    assert!(json["device"]["geometry"]["channels"].as_u64().is_some());
    assert!(json["samples"][1]["flash_bytes"].as_u64().is_some());
}

#[test]
fn runs_are_deterministic_for_a_seed() {
    let run = |seed| {
        let mut ssd = tiny();
        let dist = Distribution::Zipfian { theta: 0.9 };
        let spec = spec("randrw:30", dist, 0.5, Until::Capacities(1.0), seed);
        jobs::run(&mut ssd, &spec, &mut Silent).unwrap()
    };
    let (a, b) = (run(7), run(7));
    assert_eq!(a.counters, b.counters);
    assert!(a.host_read_bytes > 0);
    assert!(a.host_bytes < a.until_bytes, "reads count toward the stop condition");
}

#[test]
fn several_jobs_get_their_own_regions() {
    let mut ssd = tiny();
    let mut run = spec("randwrite", Distribution::Uniform, 0.8, Until::Capacities(1.0), 3);
    let seq = Workload::parse("write", None).unwrap();
    run.jobs.push(JobSpec::new("b", seq, Distribution::Uniform));
    let report = jobs::run(&mut ssd, &run, &mut Silent).unwrap();
    let (a, b) = (&report.jobs[0], &report.jobs[1]);
    assert_eq!(a.region_start_bytes, 0);
    assert_eq!(b.region_start_bytes, a.region_bytes);
    assert!(a.write_bytes > 0 && b.write_bytes > 0);
    assert_eq!(a.write_bytes + b.write_bytes, report.host_bytes);
}

#[test]
fn trims_lower_the_waf_of_random_writes() {
    let waf_of = |with_trim: bool| {
        let mut ssd = tiny();
        let mut run = spec("randwrite", Distribution::Uniform, 0.9, Until::Capacities(3.0), 5);
        if with_trim {
            // A second job trims its half at random: its data stops being live.
            let trim = Workload::parse("randtrim", None).unwrap();
            run.jobs.push(JobSpec::new("trim", trim, Distribution::Uniform));
        }
        jobs::run(&mut ssd, &run, &mut Silent).unwrap().steady_state_waf.unwrap()
    };
    let plain = waf_of(false);
    let trimmed = waf_of(true);
    assert!(trimmed < plain, "trim {trimmed} vs plain {plain}");
}

#[test]
fn bad_regions_are_reported_not_panicked() {
    let mut ssd = tiny();
    let mut run = spec("randwrite", Distribution::Uniform, 0.0, Until::Bytes(1 << 20), 1);
    run.jobs[0].region = Some(jobs::Region {
        offset: jobs::Amount::Fraction(0.9),
        size: jobs::Amount::Fraction(0.5),
    });
    let err = jobs::run(&mut ssd, &run, &mut Silent).unwrap_err();
    assert!(err.to_string().contains("beyond the device"), "{err}");
}

#[test]
fn trace_replay_counts_through_the_same_report() {
    let mut ssd = tiny();
    let capacity = ssd.logical_blocks() * LBA_BYTES;
    // Writes twice over the first 64 blocks, one read, a partial write, a wrapped write.
    let mut text = String::from("fio version 2 iolog\n/dev/x add\n/dev/x open\n");
    for _pass in 0..2 {
        for block in 0..64u64 {
            text.push_str(&format!("/dev/x write {} 4096\n", block * 4096));
        }
    }
    text.push_str("/dev/x read 0 8192\n/dev/x write 100 10\n");
    text.push_str(&format!(
        "/dev/x write {} 4096\n/dev/x sync 0 0\n/dev/x close\n",
        capacity + 4096
    ));
    let mut reader = TraceReader::new(text.as_bytes(), TraceFormat::Auto);
    let options = ReplayOptions {
        fill_fraction: 0.0,
        sample_every_bytes: None,
        input_bytes: 0,
        strict: false,
    };
    let report = replay::replay(&mut ssd, &mut reader, &options, &mut Silent).unwrap();
    let footprint = report.trace.unwrap();
    assert_eq!(footprint.folded_requests, 1, "{footprint:?}");
    assert_eq!(footprint.end_bytes, capacity + 2 * 4096);
    assert!(footprint.span_ratio() > 1.0);
    let mut reader = TraceReader::new(text.as_bytes(), TraceFormat::Auto);
    let strict = ReplayOptions { strict: true, ..options.clone() };
    let err = replay::replay(&mut tiny(), &mut reader, &strict, &mut Silent).unwrap_err();
    assert!(err.to_string().contains("beyond the device"), "{err}");
    assert_eq!(report.host_bytes, (128 + 1 + 1) * LBA_BYTES);
    assert_eq!(report.host_read_bytes, 2 * LBA_BYTES);
    assert_eq!(report.jobs[0].write_ios, 130);
    assert!(report.flash_bytes >= report.host_bytes);

    let ascii = "0 0 0 8 0\n1 0 8 8 0\n2 0 0 16 1\n";
    let mut reader = TraceReader::new(ascii.as_bytes(), TraceFormat::Auto);
    let report = replay::replay(&mut tiny(), &mut reader, &options, &mut Silent).unwrap();
    assert_eq!(report.host_bytes, 2 * LBA_BYTES);
    assert_eq!(report.host_read_bytes, 2 * LBA_BYTES);

    let mut reader = TraceReader::new("0 0 0 8\n".as_bytes(), TraceFormat::Auto);
    let err = replay::replay(&mut tiny(), &mut reader, &options, &mut Silent).unwrap_err();
    assert!(err.to_string().contains("trace line 1"), "{err}");
}

#[test]
fn zns_takes_sequential_zone_writes_with_resets_and_refuses_random_ones() {
    let zns = || {
        let mut config = Config::preset("tiny").unwrap();
        config.set("interface", "zns").unwrap();
        Ssd::new(device::for_simulation(config)).unwrap()
    };
    let mut ssd = zns();
    let mut run = spec("write", Distribution::Uniform, 0.9, Until::Capacities(2.0), 1);
    run.jobs.push(JobSpec::new(
        "b",
        Workload::parse("write", None).unwrap(),
        Distribution::Uniform,
    ));
    let report = jobs::run(&mut ssd, &run, &mut Silent).unwrap();
    assert_eq!(report.waf, Some(1.0), "zone rewrites move no data");
    assert!(report.erases > 0, "rewritten zones were reset");
    let zone_bytes = ssd.report_zones().unwrap()[0].size_blocks * LBA_BYTES;
    assert!(report.jobs.iter().all(|j| j.region_start_bytes % zone_bytes == 0));

    let run = spec("randwrite", Distribution::Uniform, 0.9, Until::Capacities(1.0), 1);
    let err = jobs::run(&mut zns(), &run, &mut Silent).unwrap_err();
    assert!(err.to_string().contains("ZNS"), "{err}");
}
