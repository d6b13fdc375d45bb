//! One measured candidate zone size: a leaf, so the pattern that measures it and the knee that
//! reads it do not name the sweep that calls them.
use serde::Serialize;

/// Where a point's seconds come from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Clock {
    /// The emulator's device-time model (GC steals chip time from host writes).
    Device,
    /// Wall-clock time of the writes (on the emulator: simulation speed, not a device's).
    Wall,
}

/// One candidate zone size, measured over the window after the warm-up.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SizePoint {
    pub zone_bytes: u64,
    pub zones: u64,
    /// Host bytes written in the window.
    pub host_write_bytes: u64,
    /// Flash bytes programmed in the window (host data, GC copies, padding), when readable.
    pub flash_write_bytes: Option<u64>,
    /// SSD WAF of the window, when readable.
    pub waf: Option<f64>,
    /// Flash bytes the device's GC copied in the window, when readable (WAF - 1 of them per
    /// host byte: 0 once every victim superblock dies whole).
    pub gc_copy_bytes: Option<u64>,
    pub seconds: f64,
    pub clock: Clock,
    /// Host write throughput of the window, MB/s (10^6 bytes).
    pub write_mb_s: f64,
}
