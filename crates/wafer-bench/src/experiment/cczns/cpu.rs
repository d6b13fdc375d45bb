//! Host CPU time of the experiment's driver thread, split by what it was spent on.
//!
//! The emulator runs in the driver's thread, and a CCZNS device's compression runs there too
//! (the real ZSTD, to get real sizes): that is the device's work, which the timing model
//! charges at the engine's rate. So the host's CPU time is the thread's CPU time minus the time
//! inside device calls, and minus the time spent checking what reads return (the experiment's
//! own verification, not the store's work).
use std::time::Duration;

/// CPU time of the calling thread.
fn thread_cpu() -> Duration {
    let mut now = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: clock_gettime writes one timespec into the valid, exclusively borrowed `now`.
    let rc = unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut now) };
    if rc != 0 {
        return Duration::ZERO;
    }
    Duration::new(now.tv_sec as u64, now.tv_nsec as u32)
}

#[derive(Debug, Clone, Copy)]
pub struct CpuClock {
    started: Duration,
    device: Duration,
    codec: Duration,
    check: Duration,
}

impl CpuClock {
    pub fn start() -> CpuClock {
        CpuClock {
            started: thread_cpu(),
            device: Duration::ZERO,
            codec: Duration::ZERO,
            check: Duration::ZERO,
        }
    }

    fn timed<T>(slot: &mut Duration, f: impl FnOnce() -> T) -> T {
        let before = thread_cpu();
        let out = f();
        *slot += thread_cpu().saturating_sub(before);
        out
    }

    /// A call into the emulated device.
    pub fn device<T>(&mut self, f: impl FnOnce() -> T) -> T {
        Self::timed(&mut self.device, f)
    }

    /// Host compression or decompression (part of the host's time).
    pub fn codec<T>(&mut self, f: impl FnOnce() -> T) -> T {
        Self::timed(&mut self.codec, f)
    }

    /// Checking read results (excluded from the host's time).
    pub fn check<T>(&mut self, f: impl FnOnce() -> T) -> T {
        Self::timed(&mut self.check, f)
    }

    /// Host CPU seconds so far: the thread's, less device calls and checks.
    pub fn host_seconds(&self) -> f64 {
        let total = thread_cpu().saturating_sub(self.started);
        total.saturating_sub(self.device).saturating_sub(self.check).as_secs_f64()
    }

    pub fn codec_seconds(&self) -> f64 {
        self.codec.as_secs_f64()
    }

    /// CPU seconds the emulator took (its own cost, not a device-time figure).
    pub fn emulator_seconds(&self) -> f64 {
        self.device.as_secs_f64()
    }
}
