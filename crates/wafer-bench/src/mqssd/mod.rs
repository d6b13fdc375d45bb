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

mod error;
mod op;

pub use error::MqssdError;
pub use model::{
    Costs, DeviceInfo, DeviceProfile, KFit, Point, PredictionError, SyncCost, SyncPoint,
};
pub use op::Op;
