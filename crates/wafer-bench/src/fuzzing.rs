//! Checks shared by the cargo-fuzz targets (`fuzz/fuzz_targets/`) and the stable
//! `tests/decoders_never_panic.rs`: every decoder of user files in the bench (job files, bench
//! configs, traces, run reports) fed arbitrary text must return a value or an error, never
//! panic, and what it accepts must be usable downstream (sizes, specs, charts).
//! Not part of the bench's API: hidden from the docs.
#![allow(clippy::unwrap_used)]

use crate::jobs::{JobFile, RunSpec, Until};
use crate::metrics::RunReport;
use crate::runner::setup::{self, BenchConfig};
use crate::runner::table;
use crate::trace::{fio, mqsim, TraceFormat, TraceReader};

/// Bounds the events a check reads from one trace (inputs are small; this bounds the check).
const TRACE_EVENTS_MAX: usize = 100_000;

fn text(data: &[u8]) -> std::borrow::Cow<'_, str> {
    String::from_utf8_lossy(data)
}

/// A fio-style job file: parse, then everything the runner derives from it.
pub fn job_file(data: &[u8]) {
    let Ok(file) = JobFile::parse(&text(data)) else { return };
    let capacity_bytes = 1u64 << 30;
    for job in &file.jobs {
        if let Some(region) = job.region {
            let _ = (region.offset.bytes(capacity_bytes), region.size.bytes(capacity_bytes));
        }
    }
    let until = file.until.unwrap_or(Until::Capacities(1.0));
    let _ = until.host_bytes(capacity_bytes);
    let spec = RunSpec {
        fill_fraction: file.fill_fraction.unwrap_or(0.0),
        jobs: file.jobs,
        until,
        seed: file.seed.unwrap_or(1),
        sample_every_bytes: None,
    };
    let _ = spec.validate();
}

/// A trace file (fio iolog v2/v3 or MQSim ASCII): the streaming reader in every format mode,
/// and the line parsers directly.
pub fn trace(data: &[u8]) {
    for format in [TraceFormat::Auto, TraceFormat::FioV2, TraceFormat::FioV3, TraceFormat::Mqsim] {
        let mut reader = TraceReader::new(data, format);
        for _ in 0..TRACE_EVENTS_MAX {
            match reader.next_event() {
                Ok(Some(_)) => {}
                Ok(None) | Err(_) => break,
            }
        }
    }
    let text = text(data);
    for (number, line) in text.lines().take(1000).enumerate() {
        let _ = fio::parse_line(line, number as u64, 2);
        let _ = fio::parse_line(line, number as u64, 3);
        let _ = mqsim::parse_line(line, number as u64);
    }
    let _ = TraceFormat::parse(&text);
}

/// A bench config TOML: parse, merge with flags, and every check `prepare` makes before it
/// builds a device.
pub fn bench_config(data: &[u8]) {
    let Ok(config) = BenchConfig::from_toml(&text(data), "fuzz.toml") else { return };
    let _ = setup::check_without_device(&config);
    let merged = BenchConfig::default().overridden_by(&config);
    let _ = setup::check_without_device(&merged);
}

/// A run report JSON as `wafer report` reads it: parse, then the table and the charts.
pub fn run_report(data: &[u8]) {
    let Ok(report) = RunReport::from_json(&text(data)) else { return };
    let _ = table::render_report(&report);
    let reports = [report];
    let rows: Vec<table::Row> = reports
        .iter()
        .map(|r| table::Row { label: "fuzz".into(), figures: Ok(r.summary) })
        .collect();
    let _ = table::render(&rows);
    let _ = crate::report::html::render(&crate::report::html::Document::of_runs("fuzz", &reports));
}

/// Valid inputs for each check (by fuzz target name): corpus seeds and mutation bases.
pub fn valid_inputs(target: &str) -> Vec<Vec<u8>> {
    let texts: &[&str] = match target {
        "job_file" => &[
            "fill = 0.9\nuntil = \"4x\"\nseed = 7\n\n[[job]]\nname = \"hot\"\nworkload = \"randwrite\"\ndist = \"zipf:0.9\"\nbs = \"4k\"\noffset = \"0%\"\nsize = \"20%\"\nstream = 1\n\n[[job]]\nworkload = \"randrw:30\"\ndist = \"hotcold:80:20\"\nbs = \"16k\"\n",
        ],
        "trace" => &[
            "fio version 2 iolog\n/dev/x add\n/dev/x open\n/dev/x write 0 4096\n/dev/x read 8192 4096\n/dev/x trim 0 4096\n/dev/x close\n",
            "fio version 3 iolog\n0 /dev/x add\n1 /dev/x open\n2 /dev/x write 0 4096\n3 /dev/x read 4096 512\n",
            "0.0 0 100 8 0\n1.5 0 200 16 1\n",
        ],
        "bench_config" => &[
            "device = \"emu:tiny\"\nworkload = \"a\"\nvalue_size = 100\nduration = \"5s\"\nwarmup = \"1x\"\nwrite_mode = \"in-place\"\n[emu]\nop = 0.2\n[engine]\n",
        ],
        _ => &[],
    };
    let mut out: Vec<Vec<u8>> = texts.iter().map(|t| t.as_bytes().to_vec()).collect();
    if target == "run_report" {
        out.push(sample_report().into_bytes());
    }
    out
}

/// A small valid report from the bench's own serialiser: two intervals and one latency kind.
fn sample_report() -> String {
    use crate::metrics::{CounterSnapshot, IntervalSampler, OpHistograms, OpKind};
    let mut report = RunReport::new("fuzz", serde_json::json!({"workload": "ycsb-a"}), 7, 2);
    let mut sampler = IntervalSampler::new(CounterSnapshot::default());
    for i in 1..=2u64 {
        let now = CounterSnapshot {
            time_ns: i * 1_000_000_000,
            ops: 500 * i,
            user_bytes: 8192 * i,
            ..CounterSnapshot::default()
        };
        report.push_interval(sampler.sample(now)).unwrap();
    }
    let mut h = OpHistograms::new();
    h.record(OpKind::Read, 1234);
    report.latency = h.summaries();
    report.to_json().unwrap()
}

/// One check: it panics only when a property fails.
pub type Check = fn(&[u8]);

/// Every check by its fuzz target's name.
pub const CHECKS: &[(&str, Check)] = &[
    ("job_file", job_file),
    ("trace", trace),
    ("bench_config", bench_config),
    ("run_report", run_report),
];
