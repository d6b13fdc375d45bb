//! Benchmark support for the criterion benches: a measurement of the calling thread's CPU time.
//!
//! The machines here are shared: wall-clock rates move by 2x with other processes' load, while
//! the CPU time one thread spends on the work is what one core running this code achieves. The
//! benches report both ways where it matters; this is the CPU-time one. Its values are
//! durations, so criterion prints them (and elements or bytes per second) like wall time.
use std::time::Duration;

use criterion::measurement::{Measurement, ValueFormatter, WallTime};

/// CPU time of the calling thread since it started.
pub fn thread_cpu_time() -> Duration {
    let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: clock_gettime writes one timespec through a pointer to a live local of that type.
    let rc = unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    assert_eq!(rc, 0, "clock_gettime(CLOCK_THREAD_CPUTIME_ID)");
    Duration::new(ts.tv_sec as u64, ts.tv_nsec as u32)
}

/// criterion measurement: the benchmarking thread's CPU time (`CLOCK_THREAD_CPUTIME_ID`).
/// Work on other threads is not counted; `iter_custom` routines that spawn threads return the
/// sum of their threads' [`thread_cpu_time`] instead.
#[derive(Debug, Default, Clone, Copy)]
pub struct ThreadCpuTime;

/// Durations format the same whether they are wall or CPU time.
static DURATION_FORMAT: WallTime = WallTime;

impl Measurement for ThreadCpuTime {
    type Intermediate = Duration;
    type Value = Duration;

    fn start(&self) -> Duration {
        thread_cpu_time()
    }
    fn end(&self, start: Duration) -> Duration {
        thread_cpu_time().saturating_sub(start)
    }
    fn add(&self, a: &Duration, b: &Duration) -> Duration {
        *a + *b
    }
    fn zero(&self) -> Duration {
        Duration::ZERO
    }
    fn to_f64(&self, value: &Duration) -> f64 {
        value.as_nanos() as f64
    }
    fn formatter(&self) -> &dyn ValueFormatter {
        DURATION_FORMAT.formatter()
    }
}
