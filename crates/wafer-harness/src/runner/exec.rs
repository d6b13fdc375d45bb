//! Executing one YCSB operation against a target, and the state the worker threads share.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Mutex;

use super::target::{KvTarget, TargetError};
use wafer_workloads::values::ValueGenerator;
use wafer_workloads::ycsb::{InsertSequence, Operation, SequenceError};

/// Why a worker stopped early.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum WorkerError {
    #[error(transparent)]
    Target(#[from] TargetError),
    #[error("insert sequence: {0}")]
    Sequence(#[from] SequenceError),
    #[error("process counters: {0}")]
    Process(String),
    #[error("read of a loaded key {key:?} found nothing: the load phase lost data")]
    MissingKey { key: String },
}

/// Runs `op`. `value_buf` is the thread's value buffer, refilled for writes before the call
/// (the caller times only this function, so value generation is outside the latency).
pub fn execute(target: &dyn KvTarget, op: &Operation, value_buf: &[u8]) -> Result<(), WorkerError> {
    match op {
        Operation::Read { key } => {
            // YCSB reads only keys that were inserted and acknowledged, so a miss is data loss.
            if !target.read(key.as_bytes())? {
                return Err(WorkerError::MissingKey {
                    key: String::from_utf8_lossy(key.as_bytes()).into_owned(),
                });
            }
        }
        Operation::Update { key, .. } => target.update(key.as_bytes(), value_buf)?,
        Operation::Insert { key, .. } => target.insert(key.as_bytes(), value_buf)?,
        Operation::Scan { start, len } => {
            target.scan(start.as_bytes(), *len as usize)?;
        }
        Operation::ReadModifyWrite { key, .. } => {
            target.read_modify_write(key.as_bytes(), value_buf)?
        }
    }
    Ok(())
}

/// Fills `buf` with the value a write operation describes; reads leave it alone.
pub fn prepare_value(values: &ValueGenerator, op: &Operation, buf: &mut Vec<u8>) {
    let spec = match op {
        Operation::Update { value, .. }
        | Operation::Insert { value, .. }
        | Operation::ReadModifyWrite { value, .. } => value,
        Operation::Read { .. } | Operation::Scan { .. } => return,
    };
    buf.resize(spec.len_bytes as usize, 0);
    values.fill(spec, buf);
}

/// Acknowledges a finished insert so readers may choose its key.
pub fn acknowledge(inserts: &InsertSequence, op: &Operation) -> Result<(), WorkerError> {
    if let Operation::Insert { keynum, .. } = op {
        inserts.acknowledge(*keynum)?;
    }
    Ok(())
}

/// What the workers and the coordinating thread share during a phase.
#[derive(Debug, Default)]
pub struct Shared {
    /// Set by the coordinator (stop condition) or by a failing worker.
    pub stop: AtomicBool,
    /// Latencies are recorded only while set: warm-up operations are excluded.
    pub measuring: AtomicBool,
    /// Operations completed in this phase.
    pub completed: AtomicU64,
    /// Operations handed out, for an exact operation limit.
    pub tickets: AtomicU64,
    /// Workers still running.
    pub running: AtomicU64,
    /// The first worker error.
    pub error: Mutex<Option<WorkerError>>,
}

impl Shared {
    /// Takes an operation ticket; false once `limit` tickets are out.
    pub fn take_ticket(&self, limit: Option<u64>) -> bool {
        match limit {
            None => true,
            Some(limit) => self.tickets.fetch_add(1, Ordering::Relaxed) < limit,
        }
    }

    /// Counts the calling worker out of `running` when the guard drops, however the worker
    /// ends: the coordinator waits for the count to reach zero, and a worker the target
    /// panicked in would otherwise keep it up until the phase's time limit.
    pub fn running_guard(&self) -> RunningGuard<'_> {
        // Paired with the drop: a guard for a worker the phase never counted in would wrap.
        debug_assert!(self.running.load(Ordering::Acquire) > 0, "a worker nobody counted");
        RunningGuard(self)
    }

    pub fn fail(&self, error: WorkerError) {
        let mut slot = self.error.lock().unwrap_or_else(|e| e.into_inner());
        if slot.is_none() {
            *slot = Some(error);
        }
        self.stop.store(true, Ordering::Release);
    }

    pub fn take_error(&self) -> Option<WorkerError> {
        self.error.lock().unwrap_or_else(|e| e.into_inner()).take()
    }

    pub fn stopped(&self) -> bool {
        self.stop.load(Ordering::Acquire)
    }
}

/// See [`Shared::running_guard`]. A panicking worker also stops the others.
#[derive(Debug)]
pub struct RunningGuard<'a>(&'a Shared);

impl Drop for RunningGuard<'_> {
    fn drop(&mut self) {
        if std::thread::panicking() {
            self.0.stop.store(true, Ordering::Release);
        }
        self.0.running.fetch_sub(1, Ordering::Release);
    }
}
