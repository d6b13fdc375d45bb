//! Workloads, runners, metrics and reports for Wafer and flashemu.

pub mod emu_report;
pub mod experiment;
pub mod gc_unit;
pub mod jobs;
pub mod metrics;
pub mod mqssd;
pub mod peers;
pub mod progress;
pub mod report;
pub mod runner;
pub mod tpcc;
pub mod trace;
pub use wafer_plot as plot;
pub use wafer_workloads::{dist, op_kind, values, ycsb};

#[doc(hidden)]
pub mod fuzzing;
