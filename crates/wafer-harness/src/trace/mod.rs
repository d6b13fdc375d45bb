//! Block traces: the parsers (`wafer_workloads::trace`, re-exported here). The replayer that
//! drives the emulator with them through the same counters and report as the jobs is
//! [`crate::jobs::replay`].
pub use wafer_workloads::trace::*;
