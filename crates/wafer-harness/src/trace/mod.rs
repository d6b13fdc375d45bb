//! Block traces: the parsers (`wafer_workloads::trace`, re-exported here) and a replayer that
//! drives the emulator through the same counters and report as the jobs.
pub mod replay;

pub use replay::{replay, ReplayOptions, TraceFootprint};
pub use wafer_workloads::trace::*;
