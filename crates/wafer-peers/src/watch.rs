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
//! [`Stop::DbWritesWithin`]: wafer_harness::runner::Stop::DbWritesWithin

use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Mutex;

use flashemu::Counters;
use std::time::Duration;

use super::emu_device::EmuView;
use super::error::PeerError;
use super::peer::{Peer, LAZY_SYNC_INTERVAL};
use wafer_harness::metrics::CounterSnapshot;
use wafer_harness::runner::{KvTarget, TargetError};

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
    /// Lazy durability: the engine is synced every this many polls (see `Peer::sync`).
    sync_every: Option<u64>,
    syncs: AtomicU64,
    sync_failures: AtomicU64,
    /// Operations through [`Gauged`] (a write phase's), for the steady-state mark.
    ops: AtomicU64,
    /// The device's written bytes at which the mark is taken (u64::MAX: none armed).
    mark_at: AtomicU64,
    /// The operations and the device's counters when the written bytes passed `mark_at`.
    mark: Mutex<Option<(u64, Counters)>>,
}

impl Watch<'_> {
    pub(crate) fn written_bytes(&self) -> u64 {
        self.written_bytes.load(Ordering::Acquire)
    }

    pub(crate) fn peak_dir_bytes(&self) -> u64 {
        self.peak_dir_bytes.load(Ordering::Acquire)
    }

    /// (syncs made, syncs that failed) under lazy durability.
    pub(crate) fn syncs(&self) -> (u64, u64) {
        (self.syncs.load(Ordering::Acquire), self.sync_failures.load(Ordering::Acquire))
    }

    fn sync_engine(&self) {
        self.syncs.fetch_add(1, Ordering::AcqRel);
        if self.peer.sync().is_err() {
            // Counted, not fatal: the engine's next operation reports a broken device.
            self.sync_failures.fetch_add(1, Ordering::AcqRel);
        }
    }

    /// Takes a reading now (also at phase ends, so a peak between polls is not all lost).
    pub(crate) fn read(&self) {
        self.read_writes();
        // A walk racing the engine's renames may fail; the next one counts.
        if let Ok(bytes) = dir_usage(self.dir) {
            self.peak_dir_bytes.fetch_max(bytes, Ordering::AcqRel);
        }
    }

    /// Reads the written bytes now: a phase that ends at a volume of writes starts from this
    /// reading, not from the last poll's (up to [`POLL`] old: a fast engine writes more than a
    /// small volume in that time, and the phase would end at once). A failed reading (a
    /// PostgreSQL child exiting mid-listing, the stats file busy) leaves the last one.
    pub(crate) fn read_writes(&self) {
        let written = match self.device {
            Some(view) => view.counters_unsynced().ok().map(|c| {
                self.take_mark(&c);
                c.host_write_bytes
            }),
            None => self.peer.host_io().ok().map(|io| io.net_write_bytes()),
        };
        if let Some(bytes) = written {
            self.written_bytes.fetch_max(bytes, Ordering::AcqRel);
        }
    }

    /// Arms the steady-state mark: taken once the device has received `at_bytes` of writes.
    pub(crate) fn arm_mark(&self, at_bytes: u64) {
        *self.mark.lock().unwrap_or_else(|e| e.into_inner()) = None;
        self.ops.store(0, Ordering::Release);
        self.mark_at.store(at_bytes, Ordering::Release);
    }

    /// The mark taken since [`Watch::arm_mark`] (operations since arming, counters), if the
    /// writes got that far; disarms it.
    pub(crate) fn take_armed(&self) -> Option<(u64, Counters)> {
        self.mark_at.store(u64::MAX, Ordering::Release);
        self.mark.lock().unwrap_or_else(|e| e.into_inner()).take()
    }

    fn take_mark(&self, counters: &Counters) {
        if counters.host_write_bytes < self.mark_at.load(Ordering::Acquire) {
            return;
        }
        let mut mark = self.mark.lock().unwrap_or_else(|e| e.into_inner());
        if mark.is_none() {
            *mark = Some((self.ops.load(Ordering::Acquire), counters.clone()));
        }
    }

    fn count_op(&self) {
        self.ops.fetch_add(1, Ordering::Relaxed);
    }
}

/// Runs `body` with a thread watching `peer`, its directory `dir` and the emulated SSD it is
/// on (if any), and, when `lazy`, syncing the engine every [`LAZY_SYNC_INTERVAL`]; the thread
/// ends with it.
pub(crate) fn watching<T>(
    peer: &dyn Peer,
    dir: &Path,
    device: Option<&EmuView>,
    lazy: bool,
    body: impl FnOnce(&Watch) -> T,
) -> T {
    let every = (LAZY_SYNC_INTERVAL.as_millis() / POLL.as_millis()).max(1) as u64;
    let watch = Watch {
        peer,
        dir,
        device,
        written_bytes: AtomicU64::new(0),
        peak_dir_bytes: AtomicU64::new(0),
        stop: AtomicBool::new(false),
        sync_every: lazy.then_some(every),
        syncs: AtomicU64::new(0),
        sync_failures: AtomicU64::new(0),
        ops: AtomicU64::new(0),
        mark_at: AtomicU64::new(u64::MAX),
        mark: Mutex::new(None),
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
                if w.sync_every.is_some_and(|e| (n + 1) % e == 0) {
                    w.sync_engine();
                }
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
        self.watch.count_op();
        self.inner.read(key)
    }
    fn update(&self, key: &[u8], value: &[u8]) -> Result<(), TargetError> {
        self.watch.count_op();
        self.inner.update(key, value)
    }
    fn insert(&self, key: &[u8], value: &[u8]) -> Result<(), TargetError> {
        self.watch.count_op();
        self.inner.insert(key, value)
    }
    fn insert_batch(&self, records: &[(&[u8], &[u8])]) -> Result<(), TargetError> {
        self.inner.insert_batch(records)
    }
    fn scan(&self, start: &[u8], count: usize) -> Result<usize, TargetError> {
        self.watch.count_op();
        self.inner.scan(start, count)
    }
    fn read_modify_write(&self, key: &[u8], value: &[u8]) -> Result<(), TargetError> {
        self.watch.count_op();
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

/// Bound on the entries `dir_usage` visits (an engine's directory holds a few hundred).
const DIR_ENTRIES_MAX: usize = 1 << 20;

/// Bytes allocated to the files under `dir` (as `du` counts them: sparse parts are free).
pub(crate) fn dir_usage(dir: &std::path::Path) -> Result<u64, PeerError> {
    use std::os::unix::fs::MetadataExt;
    let (mut stack, mut bytes) = (vec![dir.to_path_buf()], 0u64);
    for _ in 0..DIR_ENTRIES_MAX {
        let Some(path) = stack.pop() else { return Ok(bytes) };
        let meta = match std::fs::symlink_metadata(&path) {
            Ok(m) => m,
            // A file the engine removed meanwhile (a socket, a finished temporary).
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => continue,
            Err(e) => return Err(PeerError::io(&path, e)),
        };
        bytes += meta.blocks() * 512;
        if meta.is_dir() {
            let entries = std::fs::read_dir(&path).map_err(|e| PeerError::io(&path, e))?;
            stack.extend(entries.filter_map(|e| e.ok()).map(|e| e.path()));
        }
    }
    Err(PeerError::Config(format!("{}: more than {DIR_ENTRIES_MAX} entries", dir.display())))
}
