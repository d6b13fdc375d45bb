//! Workloads, runners, metrics and reports for Wafer and flashemu.

pub mod experiment;
pub mod gc_unit;
pub mod mqssd;
pub use wafer_harness::{emu_report, jobs, metrics, progress, runner, tpcc, trace};
pub use wafer_peers as peers;
pub use wafer_plot as plot;
pub use wafer_report as report;
pub use wafer_workloads::{dist, op_kind, values, ycsb};

#[doc(hidden)]
pub mod fuzzing;
