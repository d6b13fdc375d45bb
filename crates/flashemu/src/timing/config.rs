//! The timing section of a device config. Off by default: WAF runs pay nothing for it.
use serde::{Deserialize, Serialize};

/// How device time is modelled.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum TimingMode {
    /// No device time: the FTL alone, at full simulation speed.
    #[default]
    Off,
    /// Per-chip and per-channel busy time for every read, program and erase, GC included.
    Chips,
    /// 001's MQSSD costs at the queue depth (fitted by `wafer profile`): a setup per random
    /// access plus a transfer per page, device-wide.
    Mqssd,
}

/// MQSSD costs at one concurrency k (= the queue depth), device-wide nanoseconds.
#[derive(Debug, Clone, Copy, PartialEq, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct MqssdCosts {
    /// Write setup per random access, s(k).
    pub s_ns: f64,
    /// Write transfer per 4 KiB page, beta(k).
    pub beta_ns: f64,
    /// Read setup per random access, t(k).
    pub t_ns: f64,
    /// Read transfer per 4 KiB page, alpha(k).
    pub alpha_ns: f64,
}

/// Flash latencies (common TLC figures, as 002 uses) and the host's queue depth.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct TimingConfig {
    pub mode: TimingMode,
    /// Array read of one flash page (tR).
    pub read_ns: u64,
    /// Program of one flash page (tPROG).
    pub program_ns: u64,
    /// Erase of one block (tBERS).
    pub erase_ns: u64,
    /// Channel transfer of one 4 KiB slot (a 16 KiB page moves in four).
    pub transfer_ns: u64,
    /// Host commands in flight (closed loop): 001's k.
    pub queue_depth: u32,
    pub mqssd: MqssdCosts,
}

/// Queue depths beyond any NVMe queue's useful size; bounds the in-flight table.
pub const QUEUE_DEPTH_MAX: u32 = 65_536;

impl Default for TimingConfig {
    fn default() -> TimingConfig {
        TimingConfig {
            mode: TimingMode::Off,
            read_ns: 90_000,
            program_ns: 700_000,
            erase_ns: 5_000_000,
            // 4 KiB over an 800 MB/s ONFI channel.
            transfer_ns: 5_000,
            queue_depth: 1,
            mqssd: MqssdCosts::default(),
        }
    }
}

impl TimingConfig {
    pub fn is_off(&self) -> bool {
        self.mode == TimingMode::Off
    }

    /// The reason this section is invalid, with its field, or None.
    pub(crate) fn problem(&self) -> Option<(&'static str, String)> {
        if self.queue_depth == 0 || self.queue_depth > QUEUE_DEPTH_MAX {
            return Some((
                "timing.queue_depth",
                format!("{} is not in 1..={QUEUE_DEPTH_MAX}", self.queue_depth),
            ));
        }
        if self.mode == TimingMode::Chips && (self.read_ns == 0 || self.program_ns == 0) {
            return Some(("timing.read_ns", "chip timing needs read and program times".into()));
        }
        let m = &self.mqssd;
        let costs = [m.s_ns, m.beta_ns, m.t_ns, m.alpha_ns];
        if costs.iter().any(|c| !c.is_finite() || *c < 0.0) {
            return Some(("timing.mqssd", "costs must be finite and >= 0".into()));
        }
        if self.mode == TimingMode::Mqssd && (m.beta_ns <= 0.0 || m.alpha_ns <= 0.0) {
            return Some(("timing.mqssd", "MQSSD mode needs beta_ns and alpha_ns > 0".into()));
        }
        None
    }
}
