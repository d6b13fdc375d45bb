//! The devices a sweep runs on, and what each can measure: the emulator (flash counters and,
//! with its timing model on, device time) or a file / block device (wall-clock time only).
use std::path::PathBuf;
use std::time::Instant;

use serde::Serialize;
use wafer::device::{Device, DeviceError, EmuDevice, FileDevice, FileOptions};

use super::error::InferError;
use super::point::Clock;

/// What decides whether a zone size is at the no-GC level.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum MetricSource {
    /// SSD WAF from flash-side counters (the emulator's; on real SSDs OCP / FDP logs).
    FlashCounters,
    /// The write-throughput knee (000 sec. 5.3, after its ref. 35).
    Throughput,
}

/// Where the pattern is written.
#[derive(Debug, Clone)]
pub enum InferTarget {
    /// A fresh emulator of this configuration for every zone size (a new SSD each run: its
    /// open superblock starts empty, as after a secure erase). Any store: `none` is fastest.
    Emulator(Box<flashemu::Config>),
    /// A file or block device, its first `capacity_bytes` wholly TRIMmed before each size
    /// (000: blkdiscard before each run) unless the options say not to trim.
    File { path: PathBuf, capacity_bytes: u64, file: FileOptions },
}

impl InferTarget {
    pub(super) fn open(&self) -> Result<Opened, InferError> {
        match self {
            InferTarget::Emulator(config) => {
                let device = EmuDevice::write_only((**config).clone()).map_err(InferError::Open)?;
                Ok(Opened::Emu(Box::new(device)))
            }
            InferTarget::File { path, capacity_bytes, file } => {
                if *capacity_bytes == 0 {
                    return Err(InferError::Options("a file target needs a capacity".into()));
                }
                let device =
                    FileDevice::open(path, *capacity_bytes, *file).map_err(InferError::Open)?;
                Ok(Opened::File(Box::new(device)))
            }
        }
    }

    /// One line on where WAF came from, or why it did not.
    pub(super) fn method_note(&self, method: MetricSource) -> String {
        match (self, method) {
            (InferTarget::Emulator(c), _) => format!(
                "SSD WAF from the emulator's flash counters; MB/s from {}",
                if c.timing.is_off() {
                    "wall-clock time (timing model off: simulation speed, not a device's)"
                } else {
                    "the emulator's device-time model"
                }
            ),
            (InferTarget::File { .. }, _) => "flash-side counters are not readable here: this \
                build has no NVMe OCP (log 0xC0) or FDP statistics (log 0x22) reader, so SSD \
                WAF is not measured and the GC unit is the write-throughput knee (wall clock)"
                .into(),
        }
    }
}

/// A device opened for one zone size, with its measuring window.
#[derive(Debug)]
pub(super) enum Opened {
    Emu(Box<EmuDevice>),
    File(Box<FileDevice>),
}

/// Where a window started.
pub(super) struct WindowStart {
    flash: Option<flashemu::Counters>,
    wall: Instant,
}

/// A window's readings.
pub(super) struct Window {
    pub flash: Option<flashemu::Counters>,
    pub seconds: f64,
    pub clock: Clock,
}

impl Opened {
    pub fn device(&self) -> &dyn Device {
        match self {
            Opened::Emu(d) => d.as_ref(),
            Opened::File(d) => d.as_ref(),
        }
    }

    pub fn capacity_bytes(&self) -> u64 {
        self.device().capacity_bytes()
    }

    pub fn reported_gc_unit_bytes(&self) -> Option<u64> {
        self.device().capabilities().gc_unit_bytes
    }

    pub fn metric_source(&self) -> MetricSource {
        match self.device().flash_counters() {
            Some(_) => MetricSource::FlashCounters,
            None => MetricSource::Throughput,
        }
    }

    pub fn start_window(&self) -> WindowStart {
        if let Opened::Emu(d) = self {
            d.ssd().restart_timing_window();
        }
        WindowStart { flash: self.device().flash_counters(), wall: Instant::now() }
    }

    /// Ends the window. A file is synced first, so what the page cache holds is paid for in
    /// the window (once: a sync per zone would charge small zones for flushes, not for GC); the
    /// emulator is not (a flush would pad its open flash pages).
    pub fn end_window(&self, start: WindowStart) -> Result<Window, DeviceError> {
        if let Opened::File(d) = self {
            d.sync()?;
        }
        let wall_seconds = start.wall.elapsed().as_secs_f64();
        let flash = match (self.device().flash_counters(), &start.flash) {
            (Some(now), Some(then)) => Some(now.since(then)),
            _ => None,
        };
        let device_seconds = match self {
            Opened::Emu(d) => d.ssd().timing_report().map(|t| t.device_ns as f64 / 1e9),
            Opened::File(_) => None,
        };
        Ok(match device_seconds {
            Some(seconds) => Window { flash, seconds, clock: Clock::Device },
            None => Window { flash, seconds: wall_seconds, clock: Clock::Wall },
        })
    }
}
