//! Host CPU time of the experiment's driver thread, split by what it was spent on.
//!
//! The engine runs on the driver's thread (background write-back and GC off), and so do the
//! emulator and a CCZNS device's compression (the real ZSTD, to get real sizes): that is the
//! device's work, which the timing model charges at the engine's rate. So the host's CPU time
//! is the thread's CPU time minus the time inside device calls ([`DeviceClock`] wraps the
//! engine's device and adds it up), and minus the time spent checking what reads return (the
//! experiment's own verification, not the store's work).
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;
use wafer::device::{
    CwChunk, CwDone, Device, DeviceCapabilities, DeviceError, ReadOp, WriteOp, WritePurpose,
    ZoneAppend, ZoneInfo, Zoned,
};

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

#[derive(Debug, Clone)]
pub struct CpuClock {
    started: Duration,
    /// Nanoseconds of thread CPU inside device calls, shared with the [`DeviceClock`].
    device_ns: Arc<AtomicU64>,
    check: Duration,
}

impl CpuClock {
    pub fn start() -> CpuClock {
        CpuClock { started: thread_cpu(), device_ns: Arc::default(), check: Duration::ZERO }
    }

    /// `device` with its calls' CPU time counted as the device's.
    pub fn clocked<D: Device>(&self, device: D) -> DeviceClock<D> {
        DeviceClock { inner: device, ns: self.device_ns.clone() }
    }

    fn device(&self) -> Duration {
        Duration::from_nanos(self.device_ns.load(Ordering::Relaxed))
    }

    fn timed<T>(slot: &mut Duration, f: impl FnOnce() -> T) -> T {
        let before = thread_cpu();
        let out = f();
        *slot += thread_cpu().saturating_sub(before);
        out
    }

    /// Checking read results (excluded from the host's time).
    pub fn check<T>(&mut self, f: impl FnOnce() -> T) -> T {
        Self::timed(&mut self.check, f)
    }

    /// Host CPU seconds so far: the thread's, less device calls and checks.
    pub fn host_seconds(&self) -> f64 {
        let total = thread_cpu().saturating_sub(self.started);
        total.saturating_sub(self.device()).saturating_sub(self.check).as_secs_f64()
    }

    /// CPU seconds the emulator took (its own cost, not a device-time figure).
    pub fn emulator_seconds(&self) -> f64 {
        self.device().as_secs_f64()
    }
}

/// A device whose calls' thread CPU time is added to a [`CpuClock`]'s device time. Calls come
/// from the driver's thread only (the engine runs there), so thread CPU is the call's.
#[derive(Debug)]
pub struct DeviceClock<D> {
    inner: D,
    ns: Arc<AtomicU64>,
}

impl<D> DeviceClock<D> {
    fn timed<T>(&self, f: impl FnOnce() -> T) -> T {
        let before = thread_cpu();
        let out = f();
        let spent = thread_cpu().saturating_sub(before);
        self.ns.fetch_add(spent.as_nanos() as u64, Ordering::Relaxed);
        out
    }
}

impl<D: Device> DeviceClock<D> {
    fn zoned_inner(&self) -> Result<&dyn Zoned, DeviceError> {
        self.inner.zoned().ok_or(DeviceError::Unsupported("zone command on a conventional device"))
    }
}

impl<D: Device> Device for DeviceClock<D> {
    fn capacity_bytes(&self) -> u64 {
        self.inner.capacity_bytes()
    }
    fn read_batch(&self, ops: &mut [ReadOp<'_>]) -> Result<(), DeviceError> {
        self.timed(|| self.inner.read_batch(ops))
    }
    fn write_batch(&self, ops: &[WriteOp<'_>]) -> Result<(), DeviceError> {
        self.timed(|| self.inner.write_batch(ops))
    }
    fn sync(&self) -> Result<(), DeviceError> {
        self.timed(|| self.inner.sync())
    }
    fn trim(&self, offset: u64, len: u64) -> Result<(), DeviceError> {
        self.timed(|| self.inner.trim(offset, len))
    }
    fn zoned(&self) -> Option<&dyn Zoned> {
        self.inner.zoned().map(|_| self as &dyn Zoned)
    }
    fn flash_counters(&self) -> Option<flashemu::Counters> {
        self.inner.flash_counters()
    }
    fn capabilities(&self) -> DeviceCapabilities {
        self.inner.capabilities()
    }
}

impl<D: Device> Zoned for DeviceClock<D> {
    fn zone_bytes(&self) -> u64 {
        self.inner.zoned().map_or(0, |z| z.zone_bytes())
    }
    fn zone_capacity_bytes(&self) -> u64 {
        self.inner.zoned().map_or(0, |z| z.zone_capacity_bytes())
    }
    fn zone_count(&self) -> u32 {
        self.inner.zoned().map_or(0, |z| z.zone_count())
    }
    fn conventional_zones(&self) -> u32 {
        self.inner.zoned().map_or(0, |z| z.conventional_zones())
    }
    fn zone_append(&self, zone: u32, data: &[u8], p: WritePurpose) -> Result<u64, DeviceError> {
        self.timed(|| self.zoned_inner()?.zone_append(zone, data, p))
    }
    fn zone_append_batch(&self, ops: &[ZoneAppend<'_>]) -> Result<Vec<u64>, DeviceError> {
        self.timed(|| self.zoned_inner()?.zone_append_batch(ops))
    }
    fn zone_reset(&self, zone: u32) -> Result<(), DeviceError> {
        self.timed(|| self.zoned_inner()?.zone_reset(zone))
    }
    fn zone_finish(&self, zone: u32) -> Result<(), DeviceError> {
        self.timed(|| self.zoned_inner()?.zone_finish(zone))
    }
    fn report_zones(&self) -> Result<Vec<ZoneInfo>, DeviceError> {
        self.timed(|| self.zoned_inner()?.report_zones())
    }
    fn compressed_write(&self, offset: u64, chunks: &[CwChunk<'_>]) -> Result<CwDone, DeviceError> {
        self.timed(|| self.zoned_inner()?.compressed_write(offset, chunks))
    }
    fn decompressed_read(
        &self,
        offset: u64,
        feedback_bytes: u32,
        buf: &mut [u8],
    ) -> Result<usize, DeviceError> {
        self.timed(|| self.zoned_inner()?.decompressed_read(offset, feedback_bytes, buf))
    }
    fn zone_open_padding(&self, zone: u32) -> Result<(), DeviceError> {
        self.timed(|| self.zoned_inner()?.zone_open_padding(zone))
    }
}
