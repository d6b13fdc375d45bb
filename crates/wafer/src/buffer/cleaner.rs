//! Background write-back: a thread that keeps a stock of free frames, so a miss in the
//! foreground pops a frame instead of evicting a batch itself (sealing, the log made durable, the
//! batch written and, in place, the doublewrite area synced twice - milliseconds on a file,
//! during which the foreground thread held its latches, often a tree's structure latch).
//!
//! The thread runs the foreground eviction itself ([`BufferPool::evict_batch`]: clock sweep,
//! write-ahead rule, write-back limit, one store call), only at another time: a miss that leaves
//! fewer than `low_frames` free frames wakes it, and it evicts batches until `high_frames` are
//! free. A miss that finds no free frame still evicts in the foreground (the thread fell behind),
//! so nothing ever waits on the thread. It holds the pool by a `Weak` and stops when asked
//! ([`CleanerHandle`] drop: stop, then join, so a dropped database writes nothing after) or when
//! the pool is gone. A write error poisons the pool, as a foreground eviction's does, and the
//! thread stops: foreground operations then fail with `Poisoned`.
use super::BufferPool;
use crate::device::WritePurpose;
use std::sync::{Arc, Weak};

/// Batches one wake-up evicts at most before it checks for a stop again.
const BATCHES_PER_WAKE_MAX: usize = 64;
/// The thread's name: batches counted as background ones run on it alone.
use super::counters::CLEANER_THREAD_NAME as THREAD_NAME;

impl BufferPool {
    /// Called by a miss that left `free` free frames: wakes the thread below the low mark.
    pub(super) fn on_take(&self, free: usize) {
        debug_assert!(free < self.frames.len(), "{free} frames free after a take");
        if free < self.low_frames() && self.cleaner.enabled() {
            self.cleaner.request();
        }
    }
}

/// The running thread; dropping the handle stops and joins it.
#[derive(Debug)]
pub struct CleanerHandle {
    pool: Arc<BufferPool>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Drop for CleanerHandle {
    fn drop(&mut self) {
        // One handle per pool (`start_cleaner`): enabled until this drop, or another handle's
        // drop disabled the wake-ups this thread still relies on.
        debug_assert!(self.pool.cleaner.enabled(), "a cleaner disabled under its handle");
        self.pool.cleaner.stop();
        if let Some(t) = self.thread.take() {
            // A panic in the thread was already reported on stderr; the pool stays usable.
            let _ = t.join();
        }
        self.pool.cleaner.set_enabled(false);
    }
}

impl BufferPool {
    /// Free frames below which a miss wakes the thread: a sixteenth of the pool, at most four
    /// batches (so a pool of 10,000 frames keeps 2.5% of itself free), at least one frame.
    pub(super) fn low_frames(&self) -> usize {
        let low = (self.frames.len() / 16).min(4 * self.batch_pages).max(1);
        // `on_take` compares free frames to it: a mark past the pool would wake the thread on
        // every miss.
        debug_assert!(low <= self.frames.len(), "low mark {low} of {} frames", self.frames.len());
        low
    }

    /// Starts the background write-back thread of `pool`.
    pub fn start_cleaner(pool: &Arc<BufferPool>) -> std::io::Result<CleanerHandle> {
        // Paired with the handle's drop, which disables the wake-ups: two threads would share
        // one signal, and the first handle dropped would silence the other.
        debug_assert!(!pool.cleaner.enabled(), "a second cleaner for one pool");
        let weak = Arc::downgrade(pool);
        pool.cleaner.set_enabled(true);
        let thread = std::thread::Builder::new()
            .name(THREAD_NAME.into())
            .spawn(move || run(weak))
            .inspect_err(|_| pool.cleaner.set_enabled(false))?;
        Ok(CleanerHandle { pool: pool.clone(), thread: Some(thread) })
    }

    /// One wake-up's work: batches until twice the low mark is free, the sweep finds nothing
    /// to evict, or a write fails.
    fn clean(&self) {
        let high_frames = 2 * self.low_frames();
        // Runs on the thread only, which the handle's drop joins before disabling it.
        debug_assert!(self.cleaner.enabled(), "a clean after the cleaner stopped");
        for _ in 0..BATCHES_PER_WAKE_MAX {
            if self.is_poisoned() {
                return;
            }
            let st = self.lock_miss();
            let before = st.free.len();
            if before >= high_frames {
                return;
            }
            match self.evict_batch(st, WritePurpose::UserEviction) {
                Ok(st) if st.free.len() > before => self.counters.background_batch(),
                // Everything was latched or referenced: the foreground is busy with it.
                Ok(_) => return,
                Err(_) => return, // The pool is poisoned; foreground operations report it.
            }
        }
    }
}

fn run(weak: Weak<BufferPool>) {
    loop {
        let Some(pool) = weak.upgrade() else { return };
        // The handle holds the pool until it has joined this thread: ours is a second owner.
        debug_assert!(Arc::strong_count(&pool) >= 2, "the pool outlived its cleaner handle");
        // The signal lives in the pool: wait while holding it, so a stop is never missed.
        if pool.cleaner.wait() {
            return;
        }
        pool.clean();
    }
}
