//! Terminals: one thread each, home warehouse `t % warehouses + 1`, drawing transactions in
//! the spec's mix (New-Order 45%, Payment 43%, Order-Status, Delivery and Stock-Level 4% each;
//! spec 5.2.3) with no keying or think time. A transaction refused a lock within the lock
//! timeout is retried with fresh inputs (counted in `lock_retries`). The coordinating thread
//! samples the counters every interval: the cumulative flash-writes-per-transaction curve of
//! 000 Figure 16.
use super::random::{Draw, NuRandC};
use super::txns::{self, Outcome, Terminal};
use super::{load, TpccError, TpccSpec, TpccStop};
use crate::metrics::CounterSnapshot;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};
use wafer::Db;
use wafer_workloads::dist::Rng;

/// Retries of one transaction refused its locks before the run fails.
const LOCK_RETRIES_MAX: u32 = 1000;

/// The transaction types, in report order.
pub const KINDS: [&str; 5] = ["new_order", "payment", "order_status", "delivery", "stock_level"];

/// Counts over the measured run.
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct TxnCounts {
    /// Completed per type (KINDS order); New-Order includes the rolled back ones.
    pub completed: [u64; 5],
    pub new_order_rollbacks: u64,
    /// Delivery: districts delivered and skipped (empty NEW-ORDER).
    pub deliveries: u64,
    pub lock_retries: u64,
}

impl TxnCounts {
    pub fn total(&self) -> u64 {
        self.completed.iter().sum()
    }
    fn add(&mut self, o: &TxnCounts) {
        for (a, b) in self.completed.iter_mut().zip(o.completed) {
            *a += b;
        }
        self.new_order_rollbacks += o.new_order_rollbacks;
        self.deliveries += o.deliveries;
        self.lock_retries += o.lock_retries;
    }
}

/// One point of the run: cumulative since the run began.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Sample {
    pub elapsed_s: f64,
    pub transactions: u64,
    pub new_orders: u64,
    pub counters: CounterSnapshot,
}

/// What a run did.
#[derive(Debug, Clone)]
pub struct RunOutcome {
    pub counts: TxnCounts,
    pub elapsed: Duration,
    pub samples: Vec<Sample>,
}

/// Loads the population: items on the calling thread, warehouses over `spec.threads`.
pub fn load_all(db: &Db, spec: &TpccSpec) -> Result<(), TpccError> {
    load::load_items(db, &spec.cardinality, spec.seed)?;
    let draw = Draw { c: NuRandC::for_load(spec.seed), card: spec.cardinality };
    let next = AtomicU64::new(1);
    let failed: Mutex<Option<TpccError>> = Mutex::new(None);
    std::thread::scope(|s| {
        for _ in 0..spec.threads.min(spec.warehouses).max(1) {
            s.spawn(|| loop {
                let w = next.fetch_add(1, Ordering::Relaxed) as u32;
                if w > spec.warehouses || failed.lock().map_or(true, |f| f.is_some()) {
                    break;
                }
                if let Err(e) = load::load_warehouse(db, &draw, w, spec.seed) {
                    if let Ok(mut f) = failed.lock() {
                        *f = Some(e);
                    }
                }
            });
        }
    });
    if let Some(e) = failed.into_inner().ok().flatten() {
        return Err(e);
    }
    db.checkpoint()?;
    Ok(())
}

struct Shared {
    stop: AtomicBool,
    tickets: AtomicU64,
    done: AtomicU64,
    new_orders: AtomicU64,
    failed: Mutex<Option<TpccError>>,
}

/// Runs the terminals until `spec.stop`; `counters` snapshots the store (flash, bytes).
pub fn run(
    db: &Db,
    spec: &TpccSpec,
    counters: &(dyn Fn() -> CounterSnapshot + Sync),
) -> Result<RunOutcome, TpccError> {
    let draw = Draw {
        c: NuRandC::for_run(NuRandC::for_load(spec.seed), spec.seed),
        card: spec.cardinality,
    };
    let shared = Shared {
        stop: AtomicBool::new(false),
        tickets: AtomicU64::new(0),
        done: AtomicU64::new(0),
        new_orders: AtomicU64::new(0),
        failed: Mutex::new(None),
    };
    let origin = counters();
    let started = Instant::now();
    let sample = |shared: &Shared| {
        let mut c = counters().since(&origin);
        let transactions = shared.done.load(Ordering::Relaxed);
        c.ops = transactions;
        c.time_ns = started.elapsed().as_nanos() as u64;
        Sample {
            elapsed_s: started.elapsed().as_secs_f64(),
            transactions,
            new_orders: shared.new_orders.load(Ordering::Relaxed),
            counters: c,
        }
    };
    let mut samples = Vec::new();
    let mut totals = TxnCounts::default();
    std::thread::scope(|s| {
        let workers: Vec<_> = (0..spec.threads)
            .map(|t| {
                let (shared, draw) = (&shared, &draw);
                s.spawn(move || terminal(db, spec, draw, t, shared))
            })
            .collect();
        let mut next_sample = spec.interval;
        while !shared.stop.load(Ordering::Relaxed) && !workers.iter().all(|w| w.is_finished()) {
            std::thread::sleep(Duration::from_millis(10));
            if let TpccStop::Duration(d) = spec.stop {
                if started.elapsed() >= d {
                    shared.stop.store(true, Ordering::Relaxed);
                }
            }
            if started.elapsed() >= next_sample {
                samples.push(sample(&shared));
                next_sample += spec.interval;
            }
        }
        shared.stop.store(true, Ordering::Relaxed);
        for w in workers {
            match w.join() {
                Ok(c) => totals.add(&c),
                Err(_) => fail(&shared, TpccError::Panicked),
            }
        }
    });
    let elapsed = started.elapsed();
    if let Some(e) = shared.failed.lock().ok().and_then(|mut f| f.take()) {
        return Err(e);
    }
    samples.push(sample(&shared));
    Ok(RunOutcome { counts: totals, elapsed, samples })
}

fn fail(shared: &Shared, e: TpccError) {
    if let Ok(mut f) = shared.failed.lock() {
        f.get_or_insert(e);
    }
    shared.stop.store(true, Ordering::Relaxed);
}

/// One terminal's loop; returns its counts.
fn terminal(db: &Db, spec: &TpccSpec, draw: &Draw, t: u32, shared: &Shared) -> TxnCounts {
    let mut rng = Rng::for_thread(spec.seed ^ 0x7bcc, u64::from(t));
    let mut term = Terminal {
        id: t + 1,
        w: t % spec.warehouses + 1,
        stock_level_d: (t / spec.warehouses) % super::DISTRICTS + 1,
        warehouses: spec.warehouses,
        steady: spec.steady,
        history_seq: 0,
        remote_item_percent: spec.remote_item_percent,
    };
    let mut counts = TxnCounts::default();
    while !shared.stop.load(Ordering::Relaxed) {
        if let TpccStop::Transactions(n) = spec.stop {
            if shared.tickets.fetch_add(1, Ordering::Relaxed) >= n {
                break;
            }
        }
        let roll = rng.below(100);
        let kind = match roll {
            0..=44 => 0,
            45..=87 => 1,
            88..=91 => 2,
            92..=95 => 3,
            _ => 4,
        };
        match one(db, &mut rng, draw, &mut term, kind, &mut counts) {
            Ok(()) => {
                counts.completed[kind] += 1;
                shared.done.fetch_add(1, Ordering::Relaxed);
                if kind == 0 {
                    shared.new_orders.fetch_add(1, Ordering::Relaxed);
                }
            }
            Err(e) => {
                fail(shared, e);
                break;
            }
        }
    }
    counts
}

/// Runs one transaction of `kind`, retrying it while a lock times out.
fn one(
    db: &Db,
    rng: &mut Rng,
    draw: &Draw,
    t: &mut Terminal,
    kind: usize,
    counts: &mut TxnCounts,
) -> Result<(), TpccError> {
    for _ in 0..LOCK_RETRIES_MAX {
        let r = match kind {
            0 => txns::new_order(db, rng, draw, t).map(|o| {
                counts.new_order_rollbacks += u64::from(o == Outcome::RolledBack);
            }),
            1 => txns::payment(db, rng, draw, t).map(|_| ()),
            2 => txns::order_status(db, rng, draw, t).map(|_| ()),
            3 => txns::delivery(db, rng, t).map(|n| counts.deliveries += u64::from(n)),
            _ => txns::stock_level(db, rng, t).map(|_| ()),
        };
        match r {
            Err(TpccError::Engine(wafer::Error::LockTimeout { .. })) => counts.lock_retries += 1,
            other => return other,
        }
    }
    Err(TpccError::Starved { retries: LOCK_RETRIES_MAX })
}
