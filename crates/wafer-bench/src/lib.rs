//! Workloads, runners, metrics and reports for Wafer and flashemu.

pub mod dist;
pub mod emu_report;
pub mod jobs;
pub mod metrics;
pub mod plot;
pub mod progress;
pub mod trace;
pub mod values;
pub mod ycsb;

pub fn placeholder() {}
