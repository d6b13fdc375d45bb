//! The Multi-Queue SSD model of 001: a file benchmark over k threads and random fraction r
//! ([`bench`]), least-squares fits of the per-k costs and their rational functions of k
//! ([`model`], [`fit`]), and what the model predicts for Wafer's B-tree ([`cost`]).
pub mod bench;
pub mod cost;
pub mod emu_bench;
pub mod fit;
pub mod model;
pub mod plots;
pub mod tune;

pub use model::{
    Costs, DeviceInfo, DeviceProfile, KFit, Op, Point, PredictionError, SyncCost, SyncPoint,
};

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
