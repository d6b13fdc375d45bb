//! What a background thread watches while an engine runs: the bytes written towards its
//! device (so a phase can end at a write volume, [`Stop::DbWritesWithin`]) and the most space
//! its files took at any time (its peak footprint, by which an emulated SSD is sized and its
//! fill stated). Peers' own counters say nothing of their writes, so the runner sees them
//! through [`Gauged`], a target whose DB-issued bytes are the watcher's written bytes.
//!
//! ```text
//!  watcher thread, every POLL: written bytes -> written_bytes
//!                    on a file: the engine's processes' host writes (/proc)
//!                    on the emulated SSD: the device's host writes (its stats file)
//!                  every DIR_EVERY polls: du of its directory -> peak_dir_bytes
//!  runner workers: Gauged::db_issued_bytes() = written_bytes (an atomic: cheap every 16 ops)
//! ```
//!
//! On the emulated SSD the volume is what the device received, not what `/proc` says the
//! engine wrote: `/proc` counts a dirtied page-cache folio at its whole size (up to 13x a
//! small buffered writer's device writes) and pages rewritten before writeback as often as
//! they were dirtied, so a phase counted there put 0.30-0.74x the capacity on Wafer's devices
//! and about 1x on the others'. The device's count is read without a `syncfs` (one per poll
//! would change when the engines' writes go out): dirty pages reach it by the kernel's
//! writeback, late, and the phase's end flushes them into its row, so a phase puts at least
//! the volume on its device.
//!
//! [`Stop::DbWritesWithin`]: crate::runner::Stop::DbWritesWithin

use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Duration;

use super::emu_device::EmuView;
use super::{phases, Peer};
use crate::metrics::CounterSnapshot;
use crate::runner::{KvTarget, TargetError};

/// How often written bytes are read: a volume stop overshoots by at most this much writing
/// (plus, on the emulated SSD, what the page cache holds dirty when it stops).
const POLL: Duration = Duration::from_millis(100);
/// Directory walks every this many polls (a PostgreSQL directory holds ~1,000 files).
const DIR_EVERY: u32 = 5;
/// Bound on polls: a week.
const POLLS_MAX: u64 = 7 * 24 * 36_000;

/// What the watcher watches and its readings.
pub(crate) struct Watch<'a> {
    peer: &'a dyn Peer,
    dir: &'a Path,
    /// The emulated SSD the engine's files are on: its writes are counted there.
    device: Option<&'a EmuView>,
    /// The most bytes written towards the device at any reading (on a file the engine's
    /// processes' host writes net of cancelled, on the emulated SSD the device's host writes).
    written_bytes: AtomicU64,
    /// The most bytes the engine's directory took at any reading.
    peak_dir_bytes: AtomicU64,
    stop: AtomicBool,
}

impl Watch<'_> {
    pub(crate) fn written_bytes(&self) -> u64 {
        self.written_bytes.load(Ordering::Acquire)
    }

    pub(crate) fn peak_dir_bytes(&self) -> u64 {
        self.peak_dir_bytes.load(Ordering::Acquire)
    }

    /// Takes a reading now (also at phase ends, so a peak between polls is not all lost).
    pub(crate) fn read(&self) {
        self.read_writes();
        // A walk racing the engine's renames may fail; the next one counts.
        if let Ok(bytes) = phases::dir_usage(self.dir) {
            self.peak_dir_bytes.fetch_max(bytes, Ordering::AcqRel);
        }
    }

    /// Reads the written bytes now: a phase that ends at a volume of writes starts from this
    /// reading, not from the last poll's (up to [`POLL`] old: a fast engine writes more than a
    /// small volume in that time, and the phase would end at once). A failed reading (a
    /// PostgreSQL child exiting mid-listing, the stats file busy) leaves the last one.
    pub(crate) fn read_writes(&self) {
        let written = match self.device {
            Some(view) => view.device_write_bytes().ok(),
            None => self.peer.host_io().ok().map(|io| io.net_write_bytes()),
        };
        if let Some(bytes) = written {
            self.written_bytes.fetch_max(bytes, Ordering::AcqRel);
        }
    }
}

/// Runs `body` with a thread watching `peer`, its directory `dir` and the emulated SSD it is
/// on (if any); the thread ends with it.
pub(crate) fn watching<T>(
    peer: &dyn Peer,
    dir: &Path,
    device: Option<&EmuView>,
    body: impl FnOnce(&Watch) -> T,
) -> T {
    let watch = Watch {
        peer,
        dir,
        device,
        written_bytes: AtomicU64::new(0),
        peak_dir_bytes: AtomicU64::new(0),
        stop: AtomicBool::new(false),
    };
    watch.read();
    std::thread::scope(|scope| {
        let w = &watch;
        scope.spawn(move || {
            for n in 0..POLLS_MAX {
                if w.stop.load(Ordering::Acquire) {
                    break;
                }
                std::thread::sleep(POLL);
                if n % u64::from(DIR_EVERY) == 0 {
                    w.read();
                } else {
                    w.read_writes();
                }
            }
        });
        let out = body(w);
        w.stop.store(true, Ordering::Release);
        out
    })
}

/// A peer's target whose DB-issued bytes are the bytes written towards its device (as the
/// watcher last read them) and whose capacity is its device's: what `Stop::DbWritesWithin`
/// counts.
pub(crate) struct Gauged<'a> {
    pub inner: &'a dyn KvTarget,
    pub watch: &'a Watch<'a>,
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
    fn insert_batch(&self, records: &[(&[u8], &[u8])]) -> Result<(), TargetError> {
        self.inner.insert_batch(records)
    }
    fn scan(&self, start: &[u8], count: usize) -> Result<usize, TargetError> {
        self.inner.scan(start, count)
    }
    fn read_modify_write(&self, key: &[u8], value: &[u8]) -> Result<(), TargetError> {
        self.inner.read_modify_write(key, value)
    }
    /// The written bytes as the user bytes, nothing else: the runner's figures of a peer are
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
