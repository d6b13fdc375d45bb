//! The load phase: `record_count` inserts split across the threads by key range (YCSB's
//! `insertstart`/`insertcount`), values from the same generator as the run phase.

use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use super::exec::{execute, prepare_value, Shared};
use super::sample::Snapshotter;
use super::spec::RunSpec;
use super::target::KvTarget;
use super::RunError;
use crate::dist::Rng;
use crate::metrics::Figures;
use crate::progress::Progress;
use crate::values::ValueGenerator;
use crate::ycsb::LoadGenerator;

/// Load threads draw values from seeds apart from the run phase's.
const LOAD_SEED_SALT: u64 = 0x10AD_10AD_10AD_10AD;
/// How often the coordinating thread looks at the load's progress.
const POLL: Duration = Duration::from_millis(50);

/// Inserts every record; returns the load phase's figures (ops = records inserted).
pub fn load(
    target: &dyn KvTarget,
    spec: &RunSpec,
    snapshots: &Snapshotter,
    progress: &mut dyn Progress,
) -> Result<Figures, RunError> {
    let record_count = spec.workload.record_count;
    let values = ValueGenerator::new(spec.workload.value_compression_ratio)
        .map_err(|e| RunError::Spec(e.to_string()))?;
    let shared = Shared::default();
    shared.running.store(u64::from(spec.threads), Ordering::Relaxed);
    let start = snapshots.take(&shared)?;
    progress.start("load", record_count);
    std::thread::scope(|scope| -> Result<(), RunError> {
        for thread_id in 0..spec.threads {
            let mut generator = LoadGenerator::new(&spec.workload, thread_id, spec.threads)
                .map_err(|e| RunError::Spec(e.to_string()))?;
            let shared = &shared;
            scope.spawn(move || {
                let mut rng = Rng::for_thread(spec.seed ^ LOAD_SEED_SALT, u64::from(thread_id));
                let mut buf = Vec::new();
                // Bounded by the generator's key range.
                while let Some(op) = generator.next_op(&mut rng) {
                    if shared.stopped() {
                        break;
                    }
                    prepare_value(&values, &op, &mut buf);
                    if let Err(e) = execute(target, &op, &buf) {
                        shared.fail(e);
                        break;
                    }
                    shared.completed.fetch_add(1, Ordering::Relaxed);
                }
                shared.running.fetch_sub(1, Ordering::Release);
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
    let end = snapshots.take(&shared)?;
    let inserted = shared.completed.load(Ordering::Relaxed);
    assert_eq!(inserted, record_count, "load finished without error but inserted too few");
    Ok(Figures::from_delta(&end.since(&start)))
}
