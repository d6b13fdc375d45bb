//! The run phase: worker threads draw operations from their own generators; this thread
//! watches the counters, ends the warm-up, samples every interval and stops the run.

use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

use super::exec::{acknowledge, execute, prepare_value, Shared};
use super::sample::{live_note, Snapshotter};
use super::spec::{RunSpec, Stop, Warmup, RUN_DURATION_MAX};
use super::target::KvTarget;
use super::RunError;
use crate::dist::Rng;
use crate::metrics::{CounterSnapshot, Figures, IntervalSampler, OpHistograms, RunReport};
use crate::progress::Progress;
use crate::values::ValueGenerator;
use crate::ycsb::{InsertSequence, WorkloadGenerator};

/// How often the coordinator wakes to check stop conditions and the live line.
const POLL: Duration = Duration::from_millis(50);
/// Operations one worker may run: a bound far above any run (a week at 10 M ops/s).
const OPS_PER_THREAD_MAX: u64 = 10_000_000 * 7 * 24 * 3600;

/// Runs the phase, appending interval records to `report`; returns the merged latency
/// histograms of the measured (post-warm-up) operations.
pub fn run_phase(
    target: &dyn KvTarget,
    spec: &RunSpec,
    snapshots: &Snapshotter,
    report: &mut RunReport,
    progress: &mut dyn Progress,
) -> Result<OpHistograms, RunError> {
    let inserts = Arc::new(InsertSequence::new(spec.workload.record_count));
    let values = ValueGenerator::new(spec.workload.value_compression_ratio)
        .map_err(|e| RunError::Spec(e.to_string()))?;
    let shared = Shared::default();
    shared.running.store(u64::from(spec.threads), Ordering::Relaxed);
    shared.measuring.store(spec.warmup == Warmup::None, Ordering::Release);
    let ops_limit = match spec.stop {
        Stop::Ops(n) => Some(n),
        Stop::Duration(_) | Stop::DbWrites { .. } => None,
    };
    let capacity_bytes = target.data_device_capacity_bytes();
    assert!(capacity_bytes > 0, "target without capacity");

    let run_start = snapshots.take(&shared)?;
    let (label, total) = match spec.stop {
        Stop::Duration(d) => ("run", d.as_millis() as u64),
        Stop::DbWrites { capacities } => ("run", (capacities * capacity_bytes as f64) as u64),
        Stop::Ops(n) => ("run", n),
    };
    progress.start(if spec.warmup == Warmup::None { label } else { "warm-up" }, total);

    let histograms = std::thread::scope(|scope| -> Result<OpHistograms, RunError> {
        let mut handles = Vec::with_capacity(spec.threads as usize);
        for thread_id in 0..spec.threads {
            let mut generator = WorkloadGenerator::new(&spec.workload, inserts.clone())
                .map_err(|e| RunError::Spec(e.to_string()))?;
            let (shared, inserts, values) = (&shared, &inserts, &values);
            handles.push(scope.spawn(move || {
                let mut rng = Rng::for_thread(spec.seed, u64::from(thread_id));
                let mut histograms = OpHistograms::new();
                let mut buf = Vec::new();
                for _ in 0..OPS_PER_THREAD_MAX {
                    if shared.stopped() || !shared.take_ticket(ops_limit) {
                        break;
                    }
                    let op = generator.next_op(&mut rng);
                    prepare_value(values, &op, &mut buf);
                    let started = std::time::Instant::now();
                    let result = execute(target, &op, &buf);
                    let latency_ns = started.elapsed().as_nanos() as u64;
                    if let Err(e) = result.and_then(|()| acknowledge(inserts, &op)) {
                        shared.fail(e);
                        break;
                    }
                    // The flag and the count are not one atomic step: around the end of the
                    // warm-up an operation may be timed but counted before the origin, or the
                    // reverse; at most one per thread, the runner's tests check that bound.
                    let measuring = shared.measuring.load(Ordering::Acquire);
                    shared.completed.fetch_add(1, Ordering::Relaxed);
                    if measuring {
                        histograms.record(op.kind(), latency_ns);
                    }
                }
                shared.running.fetch_sub(1, Ordering::Release);
                histograms
            }));
        }
        let coordinated = coordinate(target, spec, snapshots, &shared, run_start, report, progress);
        // Whatever happened, stop the workers before leaving the scope.
        shared.stop.store(true, Ordering::Release);
        let mut merged = OpHistograms::new();
        for handle in handles {
            match handle.join() {
                Ok(h) => merged.merge(&h),
                Err(_) => return Err(RunError::WorkerPanicked),
            }
        }
        coordinated?;
        Ok(merged)
    })?;
    progress.finish();
    if let Some(e) = shared.take_error() {
        return Err(RunError::Worker { phase: "run", source: e });
    }
    target.finish().map_err(|e| RunError::Worker { phase: "finish", source: e.into() })?;
    Ok(histograms)
}

/// The measuring state once the warm-up is over.
struct Measuring {
    sampler: IntervalSampler,
    next_sample_ns: u64,
}

/// Watches the run until a stop condition holds; pushes every interval sample and the last one.
fn coordinate(
    target: &dyn KvTarget,
    spec: &RunSpec,
    snapshots: &Snapshotter,
    shared: &Shared,
    run_start: CounterSnapshot,
    report: &mut RunReport,
    progress: &mut dyn Progress,
) -> Result<(), RunError> {
    let capacity = target.data_device_capacity_bytes() as f64;
    let interval_ns = spec.interval.as_nanos() as u64;
    let mut measuring = (spec.warmup == Warmup::None).then(|| Measuring {
        sampler: IntervalSampler::new(run_start),
        next_sample_ns: run_start.time_ns + interval_ns,
    });
    let polls_max = RUN_DURATION_MAX.as_millis() / POLL.as_millis() + 1;
    for _ in 0..polls_max {
        let finished = shared.running.load(Ordering::Acquire) == 0;
        if shared.stopped() || finished {
            break;
        }
        std::thread::sleep(POLL);
        let mut now = snapshots.take(shared)?;
        let since_start = now.since(&run_start);
        let db_capacities = since_start.db_issued_bytes() as f64 / capacity;

        if measuring.is_none() {
            let warm = match spec.warmup {
                Warmup::None => true,
                Warmup::Duration(d) => since_start.time_ns >= d.as_nanos() as u64,
                Warmup::DbWrites { capacities } => db_capacities >= capacities,
            };
            if warm {
                // Flag first, snapshot second: every operation the origin's count misses was
                // still in flight and will be measured (at most one per thread extra).
                shared.measuring.store(true, Ordering::Release);
                let origin = snapshots.take(shared)?;
                measuring = Some(Measuring {
                    sampler: IntervalSampler::new(origin),
                    next_sample_ns: origin.time_ns + interval_ns,
                });
                progress.finish();
                let total = match spec.stop {
                    Stop::Duration(d) => d.as_millis() as u64,
                    Stop::DbWrites { capacities } => (capacities * capacity) as u64,
                    Stop::Ops(n) => n,
                };
                progress.start("run", total);
                now = origin;
            }
        }
        let measured_ns =
            measuring.as_ref().map_or(0, |m| now.time_ns - m.sampler.origin().time_ns);
        if let Some(m) = measuring.as_mut() {
            if now.time_ns >= m.next_sample_ns {
                let record = m.sampler.sample(now);
                report.push_interval(record)?;
                // Skip missed periods rather than sample in a burst after a stall.
                while m.next_sample_ns <= now.time_ns {
                    m.next_sample_ns += interval_ns;
                }
            }
        }
        let stop = match spec.stop {
            Stop::Duration(d) => measuring.is_some() && measured_ns >= d.as_nanos() as u64,
            Stop::DbWrites { capacities } => db_capacities >= capacities,
            Stop::Ops(_) => false, // The workers stop themselves at the ticket limit.
        };
        let done = match spec.stop {
            Stop::Duration(_) => measured_ns / 1_000_000,
            Stop::DbWrites { .. } => since_start.db_issued_bytes(),
            Stop::Ops(_) => since_start.ops,
        };
        let figures = Figures::from_delta(&since_start);
        progress.update(done, &|| live_note(&figures));
        if stop {
            break;
        }
    }
    shared.stop.store(true, Ordering::Release);
    // Wait for the workers' last operations so the final sample counts them.
    for _ in 0..polls_max {
        if shared.running.load(Ordering::Acquire) == 0 {
            break;
        }
        std::thread::sleep(Duration::from_millis(1));
    }
    let Some(mut m) = measuring else {
        return Err(RunError::Spec(format!(
            "the run stopped ({}) before the warm-up ({}) ended: nothing was measured",
            spec.stop.describe(),
            spec.warmup.describe()
        )));
    };
    // The tail since the last sample (never empty: time has moved since it was taken).
    let last = snapshots.take(shared)?;
    report.push_interval(m.sampler.sample(last))?;
    Ok(())
}
