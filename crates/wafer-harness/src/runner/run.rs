//! The run phase: worker threads draw operations from their own generators; this thread
//! watches the counters, ends the warm-up, samples every interval and stops the run.

use std::sync::atomic::AtomicBool;
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use super::error::RunError;
use super::exec::{acknowledge, execute, prepare_value, Shared, WorkerError};
use super::sample::{live_note, Snapshotter};
use super::spec::{RunSpec, Stop, Warmup, RUN_DURATION_MAX};
use super::target::KvTarget;
use crate::metrics::{CounterSnapshot, Figures, IntervalSampler, OpHistograms, RunReport};
use crate::progress::Progress;
use wafer_workloads::dist::Rng;
use wafer_workloads::values::ValueGenerator;
use wafer_workloads::ycsb::{InsertSequence, WorkloadGenerator};

/// How often the coordinator checks time-based conditions, samples and redraws. Conditions on
/// written bytes are checked by the workers (see [`Gates`]), so this need not be short.
const POLL: Duration = Duration::from_millis(10);
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
        Stop::Duration(_) | Stop::DbWrites { .. } | Stop::DbWritesWithin { .. } => None,
    };
    let capacity_bytes = target.data_device_capacity_bytes();
    assert!(capacity_bytes > 0, "target without capacity");

    let run_start = snapshots.take(&shared)?;
    let bytes_at = |capacities: f64| {
        run_start.db_issued_bytes() + (capacities * capacity_bytes as f64).ceil() as u64
    };
    let gates = Gates {
        warmup_at_bytes: match spec.warmup {
            Warmup::DbWrites { capacities } => Some(bytes_at(capacities)),
            Warmup::None | Warmup::Duration(_) => None,
        },
        stop_at_bytes: match spec.stop {
            Stop::DbWrites { capacities } | Stop::DbWritesWithin { capacities, .. } => {
                Some(bytes_at(capacities))
            }
            Stop::Duration(_) | Stop::Ops(_) => None,
        },
        warm_claimed: AtomicBool::new(false),
        origin: Mutex::new(None),
    };
    let (label, total) = match spec.stop {
        Stop::Duration(d) => ("run", d.as_millis() as u64),
        Stop::DbWrites { capacities } | Stop::DbWritesWithin { capacities, .. } => {
            ("run", (capacities * capacity_bytes as f64) as u64)
        }
        Stop::Ops(n) => ("run", n),
    };
    progress.start(if spec.warmup == Warmup::None { label } else { "warm-up" }, total);

    let histograms = std::thread::scope(|scope| -> Result<OpHistograms, RunError> {
        let mut handles = Vec::with_capacity(spec.threads as usize);
        // Every generator before any thread: a failure must not leave workers running.
        let generators = (0..spec.threads)
            .map(|_| WorkloadGenerator::new(&spec.workload, inserts.clone()))
            .collect::<Result<Vec<_>, _>>()
            .map_err(|e| RunError::Spec(e.to_string()))?;
        for (thread_id, mut generator) in (0..spec.threads).zip(generators) {
            let (shared, inserts, values, gates) = (&shared, &inserts, &values, &gates);
            handles.push(scope.spawn(move || {
                let _running = shared.running_guard();
                let mut rng = Rng::for_thread(spec.seed, u64::from(thread_id));
                let mut histograms = OpHistograms::new();
                let mut buf = Vec::new();
                for done in 0..OPS_PER_THREAD_MAX {
                    if done % GATE_CHECK_EVERY_OPS == 0 {
                        gates.check(target, snapshots, shared);
                    }
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
                histograms
            }));
        }
        let coordinated = coordinate(spec, snapshots, &shared, &gates, run_start, report, progress);
        // Whatever happened, stop the workers before leaving the scope.
        shared.stop.store(true, Ordering::Release);
        let mut merged = OpHistograms::new();
        // Every handle joined, panicked or not: the scope panics over any left unjoined.
        let mut panicked = false;
        for handle in handles {
            match handle.join() {
                Ok(h) => merged.merge(&h),
                Err(_) => panicked = true,
            }
        }
        if panicked {
            return Err(RunError::WorkerPanicked);
        }
        coordinated?;
        Ok(merged)
    })?;
    progress.finish();
    if let Some(e) = shared.take_error() {
        return Err(RunError::Worker { phase: "run", source: e });
    }
    Ok(histograms)
}

/// Operations between two checks of the byte gates by a worker.
const GATE_CHECK_EVERY_OPS: u64 = 16;

/// The conditions on DB-issued bytes (warm-up end, stop), checked by the workers themselves
/// every few operations: a coordinator that polls can be descheduled on a busy machine while
/// a small, fast device writes its whole capacity, and the run would overshoot.
struct Gates {
    /// Absolute DB-issued byte counts (the run's start plus N capacities).
    warmup_at_bytes: Option<u64>,
    stop_at_bytes: Option<u64>,
    /// Set by the one worker that ends the warm-up.
    warm_claimed: AtomicBool,
    /// The origin snapshot that worker took, for the coordinator to pick up.
    origin: Mutex<Option<CounterSnapshot>>,
}

impl Gates {
    fn check(&self, target: &dyn KvTarget, snapshots: &Snapshotter, shared: &Shared) {
        if self.warmup_at_bytes.is_none() && self.stop_at_bytes.is_none() {
            return;
        }
        let db = target.db_issued_bytes();
        if let Some(at) = self.warmup_at_bytes {
            if db >= at && !self.warm_claimed.swap(true, Ordering::AcqRel) {
                shared.measuring.store(true, Ordering::Release);
                match snapshots.take(shared) {
                    Ok(origin) => {
                        *self.origin.lock().unwrap_or_else(|e| e.into_inner()) = Some(origin)
                    }
                    Err(e) => shared.fail(WorkerError::Process(e.to_string())),
                }
            }
        }
        if self.stop_at_bytes.is_some_and(|at| db >= at) {
            shared.stop.store(true, Ordering::Release);
        }
    }

    fn take_origin(&self) -> Option<CounterSnapshot> {
        self.origin.lock().unwrap_or_else(|e| e.into_inner()).take()
    }
}

/// The measuring state once the warm-up is over.
struct Measuring {
    sampler: IntervalSampler,
    next_sample_ns: u64,
}

/// Watches the run until a stop condition holds; pushes every interval sample and the last one.
fn coordinate(
    spec: &RunSpec,
    snapshots: &Snapshotter,
    shared: &Shared,
    gates: &Gates,
    run_start: CounterSnapshot,
    report: &mut RunReport,
    progress: &mut dyn Progress,
) -> Result<(), RunError> {
    let capacity = snapshots.target.data_device_capacity_bytes() as f64;
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
        let mut now = snapshots.take_light(shared);
        let since_start = now.since(&run_start);
        let db_capacities = since_start.db_issued_bytes() as f64 / capacity;

        if measuring.is_none() {
            let origin = match spec.warmup {
                Warmup::None => Some(run_start),
                // Flag first, snapshot second: every operation the origin's count misses was
                // still in flight and will be measured (at most one per thread extra).
                Warmup::Duration(d) if since_start.time_ns >= d.as_nanos() as u64 => {
                    shared.measuring.store(true, Ordering::Release);
                    Some(snapshots.take(shared)?)
                }
                Warmup::Duration(_) => None,
                Warmup::DbWrites { .. } => gates.take_origin(),
            };
            if let Some(origin) = origin {
                measuring = Some(Measuring {
                    sampler: IntervalSampler::new(origin),
                    next_sample_ns: origin.time_ns + interval_ns,
                });
                progress.finish();
                let total = match spec.stop {
                    Stop::Duration(d) => d.as_millis() as u64,
                    Stop::DbWrites { capacities } | Stop::DbWritesWithin { capacities, .. } => {
                        (capacities * capacity) as u64
                    }
                    Stop::Ops(n) => n,
                };
                progress.start("run", total);
                // A worker's origin may be newer than this poll's snapshot.
                if origin.time_ns > now.time_ns {
                    now = origin;
                }
            }
        }
        let measured_ns =
            measuring.as_ref().map_or(0, |m| now.time_ns - m.sampler.origin().time_ns);
        if let Some(m) = measuring.as_mut() {
            if now.time_ns >= m.next_sample_ns {
                now = snapshots.take(shared)?;
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
            Stop::DbWritesWithin { capacities, limit } => {
                db_capacities >= capacities
                    || (measuring.is_some() && measured_ns >= limit.as_nanos() as u64)
            }
            Stop::Ops(_) => false, // The workers stop themselves at the ticket limit.
        };
        let done = match spec.stop {
            Stop::Duration(_) => measured_ns / 1_000_000,
            Stop::DbWrites { .. } | Stop::DbWritesWithin { .. } => since_start.db_issued_bytes(),
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
    // A worker may have ended the warm-up after the last poll.
    let measuring = measuring.or_else(|| {
        gates.take_origin().map(|origin| Measuring {
            sampler: IntervalSampler::new(origin),
            next_sample_ns: origin.time_ns + interval_ns,
        })
    });
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
