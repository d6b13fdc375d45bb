//! One counter snapshot of a running benchmark: the target's byte, flash and buffer counters,
//! the phase's completed operations, process CPU and memory, and the time.

use std::sync::atomic::Ordering;
use std::time::Instant;

use super::error::RunError;
use super::exec::Shared;
use super::target::KvTarget;
use crate::metrics::{CounterSnapshot, Figures, ProcessSample};

#[derive(Clone, Copy)]
pub struct Snapshotter<'a> {
    pub target: &'a dyn KvTarget,
    /// Time origin of every snapshot of the run.
    pub base: Instant,
}

impl std::fmt::Debug for Snapshotter<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Snapshotter").field("base", &self.base).finish()
    }
}

impl Snapshotter<'_> {
    /// Everything, process CPU and memory included: for samples that go into the report.
    pub fn take(&self, shared: &Shared) -> Result<CounterSnapshot, RunError> {
        let mut s = self.take_light(shared);
        ProcessSample::now().map_err(RunError::Process)?.apply(&mut s);
        Ok(s)
    }

    /// The target's counters, operations and time, without the process figures (a file read
    /// and a syscall): cheap enough to poll stop conditions every few milliseconds.
    pub fn take_light(&self, shared: &Shared) -> CounterSnapshot {
        let mut s = self.target.counters();
        s.time_ns = self.base.elapsed().as_nanos() as u64;
        s.ops = shared.completed.load(Ordering::Relaxed);
        s
    }
}

/// The live figures shown while running: `ops/s 12.3k  DB 2.00  SSD 2.31  total 4.62  hit 0.93`.
pub fn live_note(f: &Figures) -> String {
    let opt = |v: Option<f64>| v.map_or_else(|| "-".to_string(), |x| format!("{x:.2}"));
    format!(
        "ops/s {:.1}k  DB WAF {}  SSD WAF {}  total {}  hit {}",
        f.ops_per_sec.unwrap_or(0.0) / 1000.0,
        opt(f.db_waf),
        opt(f.ssd_waf),
        opt(f.total_waf),
        opt(f.buffer_hit_ratio),
    )
}
