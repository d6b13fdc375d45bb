//! Running workloads and measuring them: the engine runner ([`runner`]), fio-like emulator jobs
//! ([`jobs`]) and trace replay ([`trace`]), TPC-C on the engine ([`tpcc`]), the metrics and run
//! report ([`metrics`]), the emulator's report ([`emu_report`]) and progress bars
//! ([`progress`]). The generators come from `wafer_workloads`, the charts from `wafer_plot`.

pub mod emu_report;
pub mod jobs;
pub mod metrics;
pub mod progress;
pub mod runner;
pub mod tpcc;
pub mod trace;
