//! A worker thread's wake-up (the background write-back and checkpoint threads): requests
//! coalesce, and a flag read without the mutex means callers that ask while a request is pending
//! pay one atomic operation. A stop ends the wait for good.
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Condvar, Mutex, MutexGuard};

#[derive(Debug, Default)]
pub(crate) struct Wakeup {
    /// A thread waits on it: requests are only worth making then.
    enabled: AtomicBool,
    requested: AtomicBool,
    state: Mutex<State>,
    wake: Condvar,
}

#[derive(Debug, Default)]
struct State {
    pending: bool,
    stop: bool,
}

impl Wakeup {
    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    pub fn set_enabled(&self, on: bool) {
        self.enabled.store(on, Ordering::Release);
    }
    pub fn enabled(&self) -> bool {
        self.enabled.load(Ordering::Acquire)
    }

    /// Asks the thread to run once more (nothing when a request is pending already).
    pub fn request(&self) {
        // Load first: a swap on every call would bounce the line between the askers.
        if self.requested.load(Ordering::Acquire) || self.requested.swap(true, Ordering::AcqRel) {
            return;
        }
        self.lock().pending = true;
        self.wake.notify_one();
    }

    /// Blocks until a request or a stop; true to stop. The request is cleared before the work,
    /// so one made during it runs the work again.
    pub fn wait(&self) -> bool {
        let mut s = self.lock();
        while !s.pending && !s.stop {
            s = self.wake.wait(s).unwrap_or_else(|e| e.into_inner());
        }
        s.pending = false;
        self.requested.store(false, Ordering::Release);
        s.stop
    }

    pub fn stop(&self) {
        self.lock().stop = true;
        self.wake.notify_one();
    }
}
