//! The runner on the in-memory target: the mix is respected, stop conditions hold, the
//! warm-up is excluded, and the report's figures agree with each other.

use std::time::Duration;

use super::*;
use crate::metrics::{Figures, RunReport};
use crate::progress::Silent;
use wafer_workloads::ycsb::Workload;

fn spec(workload: Workload, records: u64, stop: Stop) -> RunSpec {
    RunSpec {
        label: "test".into(),
        workload: workload.spec(records),
        threads: 2,
        seed: 7,
        load: true,
        fill_target_bytes: None,
        load_batch: 1,
        stop,
        warmup: Warmup::None,
        interval: Duration::from_millis(20),
    }
}

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() <= 1e-9 * a.abs().max(b.abs()).max(1.0)
}

/// The consistency every report must have (SCHEMA.md "Figures").
fn assert_consistent(f: &Figures) {
    let b = &f.bytes;
    assert_eq!(
        b.user + b.doublewrite + b.gc_copy + b.compensation + b.padding + b.metadata,
        b.db_issued
    );
    assert_eq!(b.flash_host + b.ssd_gc + b.flash_padding, b.flash);
    if let (Some(db), Some(ssd), Some(total)) = (f.db_waf, f.ssd_waf, f.total_waf) {
        assert!(close(total, db * ssd), "{total} vs {db} x {ssd}");
        assert!(close(total, b.flash as f64 / b.user as f64));
    }
    if let Some(l) = f.logical_bytes_per_op {
        assert!(close(l * f.ops as f64, b.db_issued as f64));
    }
    if let Some(p) = f.physical_bytes_per_op {
        assert!(close(p * f.ops as f64, b.flash as f64));
    }
    if let Some(r) = f.ops_per_sec {
        assert!(close(r * f.elapsed_s, f.ops as f64));
    }
}

fn check_report(report: &RunReport) {
    assert_consistent(&report.summary);
    let mut ops = 0;
    for (i, r) in report.intervals.iter().enumerate() {
        assert_eq!(r.index, i as u64);
        assert_consistent(&r.interval);
        assert_consistent(&r.cumulative);
        ops += r.interval.ops;
        assert_eq!(r.cumulative.ops, ops);
    }
    assert_eq!(report.summary, report.intervals.last().unwrap().cumulative);
    // The JSON round-trips and names its figures plainly.
    let json = report.to_json().unwrap();
    for field in [
        "ops_per_sec",
        "db_waf",
        "ssd_waf",
        "total_waf",
        "logical_bytes_per_op",
        "physical_bytes_per_op",
        "doublewrite",
        "gc_copy",
        "compensation",
        "ssd_gc",
        "wal",
        "buffer_hit_ratio",
        "cpu_cores",
        "rss_bytes",
        "config_hash",
        "intervals",
    ] {
        assert!(json.contains(&format!("\"{field}\"")), "missing {field}");
    }
    // Floats may differ in the last bit after a text round trip; counts may not.
    let back = RunReport::from_json(&json).unwrap();
    assert_eq!(back.summary.bytes, report.summary.bytes);
    assert_eq!(back.summary.ops, report.summary.ops);
    assert_eq!(back.intervals.len(), report.intervals.len());
    for (kind, summary) in &report.latency {
        assert_eq!(back.latency[kind].count, summary.count);
        assert_eq!(back.latency[kind].p99_ns, summary.p99_ns);
    }
    assert_eq!(report.config_hash, crate::metrics::config_hash(&report.config));
}

#[test]
fn ops_stop_is_exact_and_mix_is_respected() {
    let target = MemTarget::new(64 << 20);
    let s = spec(Workload::A, 2000, Stop::Ops(20_000));
    let report = run(&target, &s, serde_json::json!({}), &mut Silent).unwrap();
    check_report(&report);
    assert_eq!(target.len(), 2000, "workload A never inserts");
    assert_eq!(report.load.unwrap().ops, 2000);
    assert_eq!(report.summary.ops, 20_000);
    let reads = report.latency["read"].count;
    let updates = report.latency["update"].count;
    assert_eq!(reads + updates, 20_000);
    assert_eq!(report.latency["all"].count, 20_000);
    // 50/50 with 20k draws: 5 standard deviations is 354.
    assert!((reads as i64 - 10_000).abs() < 400, "seed 7: {reads} reads");
    // The model counts key + value bytes of each write as user bytes: DB WAF 1, no flash.
    let f = &report.summary;
    assert_eq!(f.db_waf, Some(1.0));
    assert_eq!(f.ssd_waf, None);
    assert_eq!(f.total_waf, None);
    assert_eq!(f.bytes.user, updates * (23 + 1000));
}

#[test]
fn inserts_grow_the_dataset_and_scans_run() {
    let target = MemTarget::new(64 << 20);
    let s = spec(Workload::E, 1000, Stop::Ops(4000));
    let report = run(&target, &s, serde_json::json!({}), &mut Silent).unwrap();
    check_report(&report);
    let inserts = report.latency["insert"].count;
    assert_eq!(inserts + report.latency["scan"].count, 4000);
    assert_eq!(target.len() as u64, 1000 + inserts, "every insert a new key");
    let mut d = spec(Workload::D, 1000, Stop::Ops(4000));
    d.threads = 3;
    let target = MemTarget::new(64 << 20);
    let report = run(&target, &d, serde_json::json!({}), &mut Silent).unwrap();
    // Reads of workload D choose only acknowledged keys: a miss would have failed the run.
    assert!(report.latency["read"].count > 3000);
}

#[test]
fn until_stops_after_n_capacities_of_db_writes() {
    // Capacity 2 MB, so 1.5x is 3 MB of writes, about 3,000 updates: a few polls.
    let capacity = 2_000_000u64;
    let target = MemTarget::new(capacity);
    let mut s = spec(Workload::A, 500, Stop::DbWrites { capacities: 1.5 });
    s.load = false;
    // No load: updates of keys never inserted are fine for a map, reads would miss.
    s.workload.mix = wafer_workloads::ycsb::OperationMix {
        update: 1.0,
        ..wafer_workloads::ycsb::OperationMix::ZERO
    };
    let report = run(&target, &s, serde_json::json!({}), &mut Silent).unwrap();
    check_report(&report);
    let written = report.summary.bytes.db_issued;
    assert!(written >= capacity * 3 / 2, "{written}");
    assert!(report.load.is_none());
    assert!(written_capacities(&report).unwrap() >= 1.5);
}

/// A volume target with a time limit ends at whichever comes first: the volume on a fast
/// writer, the limit on a read-only mix that never writes.
#[test]
fn a_volume_target_within_a_limit_ends_at_the_first() {
    let capacity = 2_000_000u64;
    let target = MemTarget::new(capacity);
    let within = Stop::DbWritesWithin { capacities: 1.0, limit: Duration::from_secs(600) };
    let mut s = spec(Workload::A, 500, within);
    s.workload.mix = wafer_workloads::ycsb::OperationMix {
        update: 1.0,
        ..wafer_workloads::ycsb::OperationMix::ZERO
    };
    let report = run(&target, &s, serde_json::json!({}), &mut Silent).unwrap();
    check_report(&report);
    assert!(report.summary.bytes.db_issued >= capacity, "{:?}", report.summary.bytes);
    let target = MemTarget::new(capacity);
    let limit = Duration::from_millis(200);
    let mut s = spec(Workload::C, 500, Stop::DbWritesWithin { capacities: 1.0, limit });
    s.load = true;
    let report = run(&target, &s, serde_json::json!({}), &mut Silent).unwrap();
    check_report(&report);
    assert_eq!(report.summary.bytes.db_issued, 0);
    assert!(report.summary.elapsed_s >= limit.as_secs_f64(), "{}", report.summary.elapsed_s);
    let bad = spec(Workload::A, 500, Stop::DbWritesWithin { capacities: 0.0, limit });
    assert!(bad.validate().is_err());
}

/// Writes that take a while, so a warm-up and a run span several of the runner's polls.
#[derive(Debug)]
struct Slow(MemTarget);

impl KvTarget for Slow {
    fn read(&self, key: &[u8]) -> Result<bool, TargetError> {
        self.0.read(key)
    }
    fn update(&self, key: &[u8], value: &[u8]) -> Result<(), TargetError> {
        std::thread::sleep(Duration::from_micros(100));
        self.0.update(key, value)
    }
    fn insert(&self, key: &[u8], value: &[u8]) -> Result<(), TargetError> {
        self.0.insert(key, value)
    }
    fn scan(&self, start: &[u8], n: usize) -> Result<usize, TargetError> {
        self.0.scan(start, n)
    }
    fn counters(&self) -> crate::metrics::CounterSnapshot {
        self.0.counters()
    }
    fn data_device_capacity_bytes(&self) -> u64 {
        self.0.data_device_capacity_bytes()
    }
    fn describe(&self) -> serde_json::Value {
        serde_json::json!("slow")
    }
}

#[test]
fn warmup_is_excluded() {
    // At most ~20k updates/s of 1023 bytes: the warm-up takes 50 ms or more, two polls or more.
    let capacity = 1_000_000u64;
    let target = Slow(MemTarget::new(capacity));
    let mut s = spec(Workload::A, 500, Stop::DbWrites { capacities: 2.0 });
    s.workload.mix = wafer_workloads::ycsb::OperationMix {
        update: 1.0,
        ..wafer_workloads::ycsb::OperationMix::ZERO
    };
    s.warmup = Warmup::DbWrites { capacities: 1.0 };
    let report = run(&target, &s, serde_json::json!({}), &mut Silent).unwrap();
    check_report(&report);
    let total_written = target.counters().user_bytes - 500 * 1023;
    assert!(report.summary.ops > 0);
    let measured = report.summary.bytes.user;
    // The measured part excludes at least the warm-up's capacity of writes.
    assert!(measured + capacity <= total_written, "{measured} of {total_written}");
    assert!(measured > 0);
    // Timed operations and counted ones differ by at most one per thread at the boundary.
    let timed = report.latency["all"].count as i64;
    assert!((timed - report.summary.ops as i64).abs() <= 2 * i64::from(s.threads), "{timed}");
    // The first interval starts at the end of the warm-up: its bounds start at 0.
    assert_eq!(report.intervals[0].start_s, 0.0);
}

#[test]
fn duration_stop_samples_intervals() {
    let target = MemTarget::new(64 << 20);
    let mut s = spec(Workload::B, 1000, Stop::Duration(Duration::from_millis(200)));
    s.interval = Duration::from_millis(50);
    let report = run(&target, &s, serde_json::json!({"x": 1}), &mut Silent).unwrap();
    check_report(&report);
    // Timing is noisy on a shared machine: only that time ran out and was sampled.
    assert!(report.summary.elapsed_s >= 0.2);
    assert!(!report.intervals.is_empty());
    assert_eq!(report.config["setup"]["x"], 1);
    assert!(report.config["run"]["workload"]["record_count"] == 1000);
}

#[test]
fn warmup_longer_than_the_run_is_an_error() {
    let target = MemTarget::new(64 << 20);
    let mut s = spec(Workload::A, 100, Stop::Ops(50));
    s.warmup = Warmup::Duration(Duration::from_secs(3600));
    let e = run(&target, &s, serde_json::json!({}), &mut Silent).unwrap_err();
    assert!(e.to_string().contains("warm-up"), "{e}");
}

/// A target whose writes fail after a while: the run ends with that error, not a hang.
#[derive(Debug)]
struct Failing {
    inner: MemTarget,
    writes_left: std::sync::atomic::AtomicI64,
    /// Panic instead of returning an error once the writes run out (an engine bug).
    panics: bool,
}

impl KvTarget for Failing {
    fn read(&self, key: &[u8]) -> Result<bool, TargetError> {
        self.inner.read(key)
    }
    fn update(&self, key: &[u8], value: &[u8]) -> Result<(), TargetError> {
        if self.writes_left.fetch_sub(1, std::sync::atomic::Ordering::Relaxed) <= 0 {
            assert!(!self.panics, "the engine under test panicked");
            return Err(TargetError::new("update", "device full"));
        }
        self.inner.update(key, value)
    }
    fn insert(&self, key: &[u8], value: &[u8]) -> Result<(), TargetError> {
        self.inner.insert(key, value)
    }
    fn scan(&self, start: &[u8], n: usize) -> Result<usize, TargetError> {
        self.inner.scan(start, n)
    }
    fn counters(&self) -> crate::metrics::CounterSnapshot {
        self.inner.counters()
    }
    fn data_device_capacity_bytes(&self) -> u64 {
        self.inner.data_device_capacity_bytes()
    }
    fn describe(&self) -> serde_json::Value {
        serde_json::json!("failing")
    }
}

#[test]
fn target_errors_end_the_run() {
    let target = Failing {
        inner: MemTarget::new(1 << 20),
        writes_left: std::sync::atomic::AtomicI64::new(100),
        panics: false,
    };
    let s = spec(Workload::A, 100, Stop::Duration(Duration::from_secs(3600)));
    let e = run(&target, &s, serde_json::json!({}), &mut Silent).unwrap_err();
    assert!(e.to_string().contains("device full"), "{e}");
}

/// A target that panics under every worker ends the phase at once with `WorkerPanicked`; the
/// coordinator used to wait for the phase's time limit (here an hour) for workers long gone.
#[test]
fn a_target_that_panics_ends_the_run() {
    let target = Failing {
        inner: MemTarget::new(1 << 20),
        writes_left: std::sync::atomic::AtomicI64::new(100),
        panics: true,
    };
    let s = spec(Workload::A, 100, Stop::Duration(Duration::from_secs(3600)));
    let e = run(&target, &s, serde_json::json!({}), &mut Silent).unwrap_err();
    assert!(matches!(e, crate::runner::RunError::WorkerPanicked), "{e}");
}

/// Counts the batches a load hands over and their records, and remembers every record.
#[derive(Debug, Default)]
struct Batches {
    records: std::sync::Mutex<std::collections::BTreeMap<Vec<u8>, Vec<u8>>>,
    batches: std::sync::atomic::AtomicU64,
    largest: std::sync::atomic::AtomicU64,
}

impl KvTarget for Batches {
    fn read(&self, key: &[u8]) -> Result<bool, TargetError> {
        Ok(self.records.lock().unwrap().contains_key(key))
    }
    fn update(&self, key: &[u8], value: &[u8]) -> Result<(), TargetError> {
        self.insert(key, value)
    }
    fn insert(&self, key: &[u8], value: &[u8]) -> Result<(), TargetError> {
        self.records.lock().unwrap().insert(key.to_vec(), value.to_vec());
        Ok(())
    }
    fn insert_batch(&self, records: &[(&[u8], &[u8])]) -> Result<(), TargetError> {
        use std::sync::atomic::Ordering::Relaxed;
        self.batches.fetch_add(1, Relaxed);
        self.largest.fetch_max(records.len() as u64, Relaxed);
        for (k, v) in records {
            self.insert(k, v)?;
        }
        Ok(())
    }
    fn scan(&self, _: &[u8], _: usize) -> Result<usize, TargetError> {
        Ok(0)
    }
    fn counters(&self) -> crate::metrics::CounterSnapshot {
        crate::metrics::CounterSnapshot::default()
    }
    fn data_device_capacity_bytes(&self) -> u64 {
        1 << 30
    }
    fn describe(&self) -> serde_json::Value {
        serde_json::json!("batches")
    }
}

#[test]
fn a_batched_load_inserts_the_same_records_in_batches_of_the_given_size() {
    use std::sync::atomic::Ordering::Relaxed;
    let single = Batches::default();
    let mut s = spec(Workload::C, 1001, Stop::Ops(10));
    s.threads = 3;
    run(&single, &s, serde_json::json!({}), &mut Silent).unwrap();
    assert_eq!(single.batches.load(Relaxed), 0, "load_batch 1 inserts one by one");
    let batched = Batches::default();
    s.load_batch = 64;
    let report = run(&batched, &s, serde_json::json!({}), &mut Silent).unwrap();
    assert_eq!(report.load.unwrap().ops, 1001);
    // Three threads of 333-334 records: 6 batches each, the last one short.
    assert_eq!(batched.batches.load(Relaxed), 18);
    assert_eq!(batched.largest.load(Relaxed), 64);
    let (a, b) = (single.records.lock().unwrap(), batched.records.lock().unwrap());
    assert_eq!(a.len(), 1001);
    assert!(*a == *b, "the same keys and values either way");
    s.load_batch = 0;
    assert!(s.validate().is_err(), "a batch of no records is refused");
}
