//! Why a benchmark, fit or profile failed: a leaf, so the model returns it without naming the
//! module root that re-exports the model.

use super::op::Op;
use thiserror::Error;

#[derive(Debug, Error)]
pub enum MqssdError {
    #[error("too few {op:?} points at k = {k} to fit a line (need two r values)")]
    TooFewPoints { op: Op, k: u32 },
    #[error("the rational fit of {0}(k) failed")]
    FitFailed(&'static str),
    #[error("profile TOML: {0}")]
    Toml(String),
    #[error("invalid profile: {0}")]
    Invalid(String),
    #[error("benchmark options: {0}")]
    Options(String),
    #[error("{path}: {reason}; pass --force to overwrite it")]
    Refused { path: String, reason: String },
    #[error("device: {0}")]
    Device(#[from] wafer::device::DeviceError),
    #[error("emulator: {0}")]
    Emu(#[from] flashemu::EmuError),
    #[error("{path}: {source}")]
    Io { path: String, source: std::io::Error },
}
