//! What a comparison measured: a row per engine, phase and round, and the whole report. A leaf,
//! so the phases and workers that make rows do not name the harness that runs them.

/// One engine in one phase of one round.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Row {
    pub round: u32,
    pub engine: String,
    /// `file` (a directory on the host's filesystem) or `emu:PRESET`.
    pub device: String,
    /// `load` or the workload (`ycsb-a`).
    pub phase: String,
    /// The request distribution (`-` for the load).
    pub distribution: String,
    pub ops: u64,
    pub elapsed_s: f64,
    pub ops_per_sec: f64,
    pub p50_us: Option<f64>,
    pub p99_us: Option<f64>,
    pub p999_us: Option<f64>,
    pub host_write_bytes: u64,
    pub host_read_bytes: u64,
    pub host_write_bytes_per_op: f64,
    pub host_read_bytes_per_op: f64,
    /// Emulated SSD only: bytes the filesystem sent to the device per operation (the
    /// engine's writes plus ext4's journal and metadata, after the page cache).
    pub device_write_bytes_per_op: Option<f64>,
    /// Emulated SSD only: flash bytes programmed (host data, GC copies, padding) per operation.
    pub flash_bytes_per_op: Option<f64>,
    /// Emulated SSD only: device write bytes / the record bytes the workload wrote (see
    /// `total_waf`): what the engine and the filesystem made of the user's bytes.
    #[serde(default)]
    pub db_waf: Option<f64>,
    /// Emulated SSD only: flash bytes / device write bytes.
    pub ssd_waf: Option<f64>,
    /// Emulated SSD only: flash bytes / the record bytes the workload wrote (key plus value
    /// per insert, update or read-modify-write): everything between the user's bytes and the
    /// flash, the engine, filesystem and SSD together. None in a phase that writes no record.
    pub total_waf: Option<f64>,
    /// Emulated SSD, write phases ended by volume: flash bytes per operation over the last
    /// half of the phase's writes (from when the device had received half the volume): the
    /// steady state, beside the whole phase's `flash_bytes_per_op`.
    #[serde(default)]
    pub steady_flash_bytes_per_op: Option<f64>,
    /// SSD WAF over the same last half.
    #[serde(default)]
    pub steady_ssd_waf: Option<f64>,
    /// Emulated SSD only: the row's flash B/op by what wrote it (see
    /// `phases::BREAKDOWN_PARTS`).
    #[serde(default)]
    pub flash_breakdown: Option<std::collections::BTreeMap<String, f64>>,
}

/// The whole comparison.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct PeersReport {
    pub schema: String,
    pub version: u32,
    pub config: serde_json::Value,
    /// Each engine's settings as it reported them after opening, by [`settings_key`](crate::harness::settings_key).
    pub engines: serde_json::Map<String, serde_json::Value>,
    pub rows: Vec<Row>,
    /// Engines that failed part way (`ENGINE on DEVICE, round R: error`): the run goes on
    /// with the next engine and keeps the rows measured before the failure. A missing
    /// library is not among them: it stops the run before anything is measured.
    pub failures: Vec<String>,
}
