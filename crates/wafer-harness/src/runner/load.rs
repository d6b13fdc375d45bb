//! The load phase: `record_count` inserts split across the threads by key range (YCSB's
//! `insertstart`/`insertcount`), values from the same generator as the run phase.

use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use super::error::RunError;
use super::exec::{execute, prepare_value, Shared};
use super::sample::Snapshotter;
use super::spec::RunSpec;
use super::target::KvTarget;
use crate::metrics::Figures;
use crate::progress::Progress;
use wafer_workloads::dist::Rng;
use wafer_workloads::values::{ValueGenerator, ValueSpec};
use wafer_workloads::ycsb::{LoadGenerator, Operation};

/// Load threads draw values from seeds apart from the run phase's.
const LOAD_SEED_SALT: u64 = 0x10AD_10AD_10AD_10AD;
/// How often the coordinating thread looks at the load's progress.
const POLL: Duration = Duration::from_millis(50);

/// Top-up inserts at most this fraction of the planned records: the pilot's estimate is off by
/// a few percent, never by more.
const TOP_UP_FRACTION_MAX: f64 = 0.25;
/// Inserts between two looks at the target's allocated bytes during the top-up.
const TOP_UP_CHECK_EVERY: u64 = 8;

/// Inserts every record, then tops up to `spec.fill_target_bytes`; returns the load phase's
/// figures (ops = records inserted) and the number of records inserted by the top-up.
pub fn load(
    target: &dyn KvTarget,
    spec: &RunSpec,
    snapshots: &Snapshotter,
    progress: &mut dyn Progress,
) -> Result<(Figures, u64), RunError> {
    let record_count = spec.workload.record_count;
    let values = ValueGenerator::new(spec.workload.value_compression_ratio)
        .map_err(|e| RunError::Spec(e.to_string()))?;
    let shared = Shared::default();
    shared.running.store(u64::from(spec.threads), Ordering::Relaxed);
    let start = snapshots.take(&shared)?;
    progress.start("load", record_count);
    std::thread::scope(|scope| -> Result<(), RunError> {
        // Every generator before any thread: a failure must not leave workers running.
        let generators = (0..spec.threads)
            .map(|t| LoadGenerator::new(&spec.workload, t, spec.threads))
            .collect::<Result<Vec<_>, _>>()
            .map_err(|e| RunError::Spec(e.to_string()))?;
        for (thread_id, mut generator) in (0..spec.threads).zip(generators) {
            let shared = &shared;
            scope.spawn(move || {
                let _running = shared.running_guard();
                let rng = Rng::for_thread(spec.seed ^ LOAD_SEED_SALT, u64::from(thread_id));
                let worker = LoadWorker { target, values: &values, shared };
                if spec.load_batch > 1 {
                    worker.batches(&mut generator, rng, spec.load_batch as usize);
                } else {
                    worker.singles(&mut generator, rng);
                }
            });
        }
        let began = Instant::now();
        // Bounded: ends when the workers do; the poll count bound is a week of polls.
        for _ in 0..(super::spec::RUN_DURATION_MAX.as_millis() / POLL.as_millis()) {
            if shared.running.load(Ordering::Acquire) == 0 {
                break;
            }
            std::thread::sleep(POLL);
            let done = shared.completed.load(Ordering::Relaxed);
            progress.update(done, &|| {
                let rate = done as f64 / began.elapsed().as_secs_f64().max(1e-9);
                format!("{done}/{record_count} records  {:.1}k inserts/s", rate / 1000.0)
            });
        }
        Ok(())
    })?;
    progress.finish();
    if let Some(e) = shared.take_error() {
        return Err(RunError::Worker { phase: "load", source: e });
    }
    let inserted = shared.completed.load(Ordering::Relaxed);
    assert_eq!(inserted, record_count, "load finished without error but inserted too few");
    let extra = match spec.fill_target_bytes {
        Some(fill_bytes) => top_up(target, spec, &values, fill_bytes, &shared)?,
        None => 0,
    };
    let end = snapshots.take(&shared)?;
    Ok((Figures::from_delta(&end.since(&start)), extra))
}

/// One load thread's inserts.
struct LoadWorker<'a> {
    target: &'a dyn KvTarget,
    values: &'a ValueGenerator,
    shared: &'a Shared,
}

impl LoadWorker<'_> {
    /// One `insert` per record.
    fn singles(&self, generator: &mut LoadGenerator, mut rng: Rng) {
        let mut buf = Vec::new();
        // Bounded by the generator's key range.
        while let Some(op) = generator.next_op(&mut rng) {
            if self.shared.stopped() {
                break;
            }
            prepare_value(self.values, &op, &mut buf);
            if let Err(e) = execute(self.target, &op, &buf) {
                self.shared.fail(e);
                break;
            }
            self.shared.completed.fetch_add(1, Ordering::Relaxed);
        }
    }

    /// `insert_batch` per `batch` records (the last batch may be shorter); the same records,
    /// values and order as `singles`.
    fn batches(&self, generator: &mut LoadGenerator, mut rng: Rng, batch: usize) {
        let mut ops: Vec<Operation> = Vec::with_capacity(batch);
        let mut values: Vec<Vec<u8>> = vec![Vec::new(); batch];
        // Bounded by the generator's key range: each turn takes up to `batch` records.
        while !self.shared.stopped() {
            ops.clear();
            ops.extend(std::iter::from_fn(|| generator.next_op(&mut rng)).take(batch));
            if ops.is_empty() {
                break;
            }
            for (op, buf) in ops.iter().zip(&mut values) {
                prepare_value(self.values, op, buf);
            }
            // The load generator makes inserts only; `load` checks the count at the end.
            let records: Vec<(&[u8], &[u8])> = ops
                .iter()
                .zip(&values)
                .filter_map(|(op, value)| match op {
                    Operation::Insert { key, .. } => Some((key.as_bytes(), value.as_slice())),
                    _ => None,
                })
                .collect();
            debug_assert_eq!(records.len(), ops.len(), "a load operation that is not an insert");
            if let Err(e) = self.target.insert_batch(&records) {
                self.shared.fail(e.into());
                break;
            }
            self.shared.completed.fetch_add(records.len() as u64, Ordering::Relaxed);
        }
    }
}

/// Inserts records after the loaded ones (key numbers from `record_count` up, as YCSB's inserts
/// would) until the target has allocated `fill_bytes`. One thread: it adds a few percent.
fn top_up(
    target: &dyn KvTarget,
    spec: &RunSpec,
    values: &ValueGenerator,
    fill_bytes: u64,
    shared: &Shared,
) -> Result<u64, RunError> {
    let Some(mut allocated) = target.allocated_bytes() else {
        return Ok(0);
    };
    let first = spec.workload.record_count;
    let extra_max = (first as f64 * TOP_UP_FRACTION_MAX).ceil() as u64;
    let format = spec.workload.key_format;
    let mut buf = vec![0u8; spec.workload.value_size_bytes as usize];
    let mut extra = 0;
    while allocated < fill_bytes && extra < extra_max {
        for _ in 0..TOP_UP_CHECK_EVERY.min(extra_max - extra) {
            let keynum = first + extra;
            let value = ValueSpec { seed: keynum ^ LOAD_SEED_SALT, len_bytes: buf.len() as u32 };
            values.fill(&value, &mut buf);
            target
                .insert(format.key(keynum).as_bytes(), &buf)
                .map_err(|e| RunError::Worker { phase: "load top-up", source: e.into() })?;
            extra += 1;
        }
        allocated = target.allocated_bytes().unwrap_or(fill_bytes);
    }
    shared.completed.store(first + extra, Ordering::Relaxed);
    Ok(extra)
}
