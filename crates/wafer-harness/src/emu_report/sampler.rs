//! Counter samples taken every N host bytes, and the WAF figures derived from them.
use std::time::Instant;

use flashemu::Ssd;
use serde::Serialize;

/// Which step of a run a sample belongs to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Phase {
    Start,
    Fill,
    Run,
}

/// One point of the series: device counters (cumulative since the device was built).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Sample {
    pub phase: Phase,
    /// Host bytes issued by the run so far (writes, reads and trims; the stop-condition clock).
    pub issued_bytes: u64,
    pub host_write_bytes: u64,
    pub host_read_bytes: u64,
    pub host_trim_bytes: u64,
    pub flash_host_bytes: u64,
    pub flash_gc_bytes: u64,
    pub flash_pad_bytes: u64,
    /// flash_host + flash_gc + flash_pad.
    pub flash_bytes: u64,
    pub block_erases: u64,
    /// Flash bytes / host write bytes since the previous sample; `None` without host writes.
    pub interval_waf: Option<f64>,
    /// Flash bytes / host write bytes since the device was built.
    pub cumulative_waf: Option<f64>,
    pub elapsed_seconds: f64,
}

/// flash / host, or `None` when nothing was written (a WAF of 0/0 means nothing).
pub fn ratio(flash: u64, host: u64) -> Option<f64> {
    if host == 0 {
        None
    } else {
        Some(flash as f64 / host as f64)
    }
}

/// Bound on stored samples: a run of a million sample periods is a mistake, so beyond this the
/// sampler keeps every other sample (halving resolution, never memory-unbounded).
pub const SAMPLES_MAX: usize = 1 << 16;

#[derive(Debug)]
pub struct Sampler {
    every_bytes: u64,
    next_at_bytes: u64,
    started: Instant,
    samples: Vec<Sample>,
}

impl Sampler {
    /// Takes the first sample (the device as it is before anything runs).
    pub fn new(ssd: &Ssd, every_bytes: u64) -> Sampler {
        assert!(every_bytes > 0, "sample period must be positive");
        let mut sampler = Sampler {
            every_bytes,
            next_at_bytes: every_bytes,
            started: Instant::now(),
            samples: Vec::with_capacity(1024),
        };
        sampler.take(ssd, Phase::Start, 0);
        sampler
    }

    pub fn every_bytes(&self) -> u64 {
        self.every_bytes
    }

    /// Samples when the clock (host bytes issued, fill included) passed the next sample point.
    #[inline]
    /// Host bytes from `clock_bytes` until the next sample is due (0 when already due): a
    /// batch of I/Os no larger than this ends on or before the sample point.
    pub fn bytes_until_due(&self, clock_bytes: u64) -> u64 {
        self.next_at_bytes.saturating_sub(clock_bytes)
    }

    pub fn maybe_take(&mut self, ssd: &Ssd, phase: Phase, clock_bytes: u64) {
        if clock_bytes >= self.next_at_bytes {
            self.take(ssd, phase, clock_bytes);
            // Skip points a large I/O jumped over: one sample per crossing.
            let periods = clock_bytes / self.every_bytes + 1;
            self.next_at_bytes = periods * self.every_bytes;
        }
    }

    /// Samples now, whatever the clock (phase boundaries, the end of a run).
    pub fn take(&mut self, ssd: &Ssd, phase: Phase, clock_bytes: u64) {
        let c = ssd.counters();
        let flash = c.flash_bytes();
        let interval_waf = match self.samples.last() {
            Some(prev) => {
                ratio(flash - prev.flash_bytes, c.host_write_bytes - prev.host_write_bytes)
            }
            None => None,
        };
        if self.samples.len() >= SAMPLES_MAX {
            let mut keep = 0;
            self.samples.retain(|_| {
                keep += 1;
                keep % 2 == 1
            });
            self.every_bytes = self.every_bytes.saturating_mul(2);
        }
        self.samples.push(Sample {
            phase,
            issued_bytes: clock_bytes,
            host_write_bytes: c.host_write_bytes,
            host_read_bytes: c.host_read_bytes,
            host_trim_bytes: c.host_trim_bytes,
            flash_host_bytes: c.flash_host_bytes,
            flash_gc_bytes: c.flash_gc_bytes,
            flash_pad_bytes: c.flash_pad_bytes,
            flash_bytes: flash,
            block_erases: c.block_erases,
            interval_waf,
            cumulative_waf: ratio(flash, c.host_write_bytes),
            elapsed_seconds: self.started.elapsed().as_secs_f64(),
        });
    }

    pub fn samples(&self) -> &[Sample] {
        &self.samples
    }

    pub fn into_samples(self) -> Vec<Sample> {
        self.samples
    }
}

/// Steady-state WAF: flash bytes / host write bytes over the last `window_bytes` of host writes,
/// from the latest sample at least one window before the end. The window may not start before
/// `not_before_host_bytes` (the end of the fill: a window reaching into the fill would mix in
/// its WAF of 1); `None` if the measured history is shorter than a window.
pub fn steady_state_waf(
    samples: &[Sample],
    window_bytes: u64,
    not_before_host_bytes: u64,
) -> Option<f64> {
    let end = samples.last()?;
    let target = end.host_write_bytes.checked_sub(window_bytes)?;
    if target < not_before_host_bytes {
        return None;
    }
    let start = samples.iter().rev().find(|s| s.host_write_bytes <= target)?;
    ratio(end.flash_bytes - start.flash_bytes, end.host_write_bytes - start.host_write_bytes)
}

/// Mean valid ratio of GC victims from a histogram of 5%-wide buckets (last = exactly 100%),
/// each bucket counted at its midpoint.
pub fn mean_valid_ratio(histogram: &[u64]) -> Option<f64> {
    let total: u64 = histogram.iter().sum();
    if total == 0 {
        return None;
    }
    let last = histogram.len().saturating_sub(1);
    let weighted: f64 = histogram
        .iter()
        .enumerate()
        .map(|(i, &n)| {
            let mid = if i == last { 1.0 } else { (i as f64 * 5.0 + 2.5) / 100.0 };
            mid * n as f64
        })
        .sum();
    Some(weighted / total as f64)
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn sample(host: u64, flash: u64) -> Sample {
        Sample {
            phase: Phase::Run,
            issued_bytes: host,
            host_write_bytes: host,
            host_read_bytes: 0,
            host_trim_bytes: 0,
            flash_host_bytes: host,
            flash_gc_bytes: flash - host,
            flash_pad_bytes: 0,
            flash_bytes: flash,
            block_erases: 0,
            interval_waf: None,
            cumulative_waf: None,
            elapsed_seconds: 0.0,
        }
    }

    #[test]
    fn steady_state_uses_the_last_window_only() {
        // WAF 1 for the first 100 bytes, then 3 for the next 100.
        let samples = vec![
            sample(0, 0),
            sample(50, 50),
            sample(100, 100),
            sample(150, 250),
            sample(200, 400),
        ];
        assert_eq!(steady_state_waf(&samples, 100, 0), Some(3.0));
        assert_eq!(steady_state_waf(&samples, 200, 0), Some(2.0));
        assert_eq!(steady_state_waf(&samples, 201, 0), None);
        assert_eq!(steady_state_waf(&samples, 100, 100), Some(3.0));
        assert_eq!(steady_state_waf(&samples, 150, 100), None, "window reaches into the fill");
    }

    #[test]
    fn valid_ratio_mean_uses_bucket_midpoints() {
        let mut hist = [0u64; 21];
        hist[0] = 1; // 2.5%
        hist[20] = 1; // 100%
        assert!((mean_valid_ratio(&hist).unwrap() - 0.5125).abs() < 1e-12);
        assert_eq!(mean_valid_ratio(&[0; 21]), None);
    }
}
