//! The papers' experiments ([`experiment`]), the MQSim-style SSD models ([`mqssd`]) and GC-unit
//! inference ([`gc_unit`]), over the crates below, re-exported here under their module names so
//! that one dependency gives the `wafer` command everything:
//!
//! - `wafer_workloads`: [`dist`], [`ycsb`], [`values`] (generators, no engine);
//! - `wafer_plot`: [`plot`] (charts);
//! - `wafer_harness`: [`runner`], [`jobs`], [`trace`], [`tpcc`], [`metrics`], [`emu_report`],
//!   [`progress`];
//! - `wafer_peers`: [`peers`] (RocksDB, LMDB, WiredTiger, PostgreSQL through their C libraries);
//! - `wafer_report`: [`report`] (HTML reports).

pub mod experiment;
pub mod gc_unit;
pub mod mqssd;

pub use wafer_harness::{emu_report, jobs, metrics, progress, runner, tpcc, trace};
pub use wafer_peers as peers;
pub use wafer_plot as plot;
pub use wafer_report as report;
pub use wafer_workloads::{dist, values, ycsb};

#[doc(hidden)]
pub mod fuzzing;
