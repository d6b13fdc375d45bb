//! What a background thread watches while an engine runs: the bytes its processes have
//! written (so a phase can end at a write volume, [`Stop::DbWritesWithin`]) and the most space
//! its files took at any time (its peak footprint, by which an emulated SSD is sized and its
//! fill stated). Peers' own counters say nothing of their writes, so the runner sees them
//! through [`Gauged`], a target whose DB-issued bytes are the engine's host writes.
//!
//! ```text
//!  watcher thread, every POLL: host writes of the engine's processes -> written_bytes
//!                  every DIR_EVERY polls: du of its directory -> peak_dir_bytes
//!  runner workers: Gauged::db_issued_bytes() = written_bytes (an atomic: cheap every 16 ops)
//! ```
//!
//! [`Stop::DbWritesWithin`]: crate::runner::Stop::DbWritesWithin

use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Duration;

use super::{phases, Peer};
use crate::metrics::CounterSnapshot;
use crate::runner::{KvTarget, TargetError};

/// How often host writes are read: a volume stop overshoots by at most this much writing.
const POLL: Duration = Duration::from_millis(100);
/// Directory walks every this many polls (a PostgreSQL directory holds ~1,000 files).
const DIR_EVERY: u32 = 5;
/// Bound on polls: a week.
const POLLS_MAX: u64 = 7 * 24 * 36_000;

/// The watcher's readings.
#[derive(Debug, Default)]
pub(crate) struct Watch {
    /// The most host bytes the engine's processes had written (net of cancelled) at any reading.
    written_bytes: AtomicU64,
    /// The most bytes the engine's directory took at any reading.
    peak_dir_bytes: AtomicU64,
    stop: AtomicBool,
}

impl Watch {
    pub(crate) fn written_bytes(&self) -> u64 {
        self.written_bytes.load(Ordering::Acquire)
    }

    pub(crate) fn peak_dir_bytes(&self) -> u64 {
        self.peak_dir_bytes.load(Ordering::Acquire)
    }

    /// Takes a reading now (also at phase ends, so a peak between polls is not all lost).
    pub(crate) fn read(&self, peer: &dyn Peer, dir: &Path) {
        if let Ok(io) = peer.host_io() {
            self.written_bytes.fetch_max(io.net_write_bytes(), Ordering::AcqRel);
        }
        // A walk racing the engine's renames may fail; the next one counts.
        if let Ok(bytes) = phases::dir_usage(dir) {
            self.peak_dir_bytes.fetch_max(bytes, Ordering::AcqRel);
        }
    }

    /// Reads the host writes now: a phase that ends at a volume of writes starts from this
    /// reading, not from the last poll's (up to [`POLL`] old: a fast engine writes more than a
    /// small volume in that time, and the phase would end at once).
    pub(crate) fn read_writes(&self, peer: &dyn Peer) {
        if let Ok(io) = peer.host_io() {
            self.written_bytes.fetch_max(io.net_write_bytes(), Ordering::AcqRel);
        }
    }
}

/// Runs `body` with a thread watching `peer` and its directory `dir`; the thread ends with it.
pub(crate) fn watching<T>(peer: &dyn Peer, dir: &Path, body: impl FnOnce(&Watch) -> T) -> T {
    let watch = Watch::default();
    watch.read(peer, dir);
    std::thread::scope(|scope| {
        let w = &watch;
        scope.spawn(move || {
            for n in 0..POLLS_MAX {
                if w.stop.load(Ordering::Acquire) {
                    break;
                }
                std::thread::sleep(POLL);
                if n % u64::from(DIR_EVERY) == 0 {
                    w.read(peer, dir);
                } else {
                    w.read_writes(peer);
                }
            }
        });
        let out = body(w);
        w.stop.store(true, Ordering::Release);
        out
    })
}

/// A peer's target whose DB-issued bytes are its processes' host writes (as the watcher last
/// read them) and whose capacity is its device's: what `Stop::DbWritesWithin` counts.
pub(crate) struct Gauged<'a> {
    pub inner: &'a dyn KvTarget,
    pub watch: &'a Watch,
    pub capacity_bytes: u64,
}

impl KvTarget for Gauged<'_> {
    fn read(&self, key: &[u8]) -> Result<bool, TargetError> {
        self.inner.read(key)
    }
    fn update(&self, key: &[u8], value: &[u8]) -> Result<(), TargetError> {
        self.inner.update(key, value)
    }
    fn insert(&self, key: &[u8], value: &[u8]) -> Result<(), TargetError> {
        self.inner.insert(key, value)
    }
    fn scan(&self, start: &[u8], count: usize) -> Result<usize, TargetError> {
        self.inner.scan(start, count)
    }
    fn read_modify_write(&self, key: &[u8], value: &[u8]) -> Result<(), TargetError> {
        self.inner.read_modify_write(key, value)
    }
    /// Its host writes as the user bytes, nothing else: the runner's figures of a peer are
    /// its operations and latencies; its bytes are the rows' own.
    fn counters(&self) -> CounterSnapshot {
        CounterSnapshot { user_bytes: self.watch.written_bytes(), ..CounterSnapshot::default() }
    }
    fn db_issued_bytes(&self) -> u64 {
        self.watch.written_bytes()
    }
    fn data_device_capacity_bytes(&self) -> u64 {
        self.capacity_bytes
    }
    fn describe(&self) -> serde_json::Value {
        self.inner.describe()
    }
    fn close(&self) -> Result<(), TargetError> {
        self.inner.close()
    }
}
